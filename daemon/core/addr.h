#pragma once
/*
 * addr: network addresses and the allow rules of outbound callbacks
 * (callbacks.allow): literal IPv4/IPv6 parsing, classification (loopback,
 * private, ...), and whether a rule list lets a connection to host:port at
 * an address through. Pure functions; any thread.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An IPv4 or IPv6 address; an IPv4-mapped IPv6 address is kept as IPv4. */
struct addr {
	int family; /* 4 or 6 */
	uint8_t b[16];
};

enum addr_class {
	ADDR_UNSPECIFIED = 0, /* 0.0.0.0/8, :: */
	ADDR_LOOPBACK,	      /* 127.0.0.0/8, ::1 */
	ADDR_PRIVATE,	      /* 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT), fc00::/7 */
	ADDR_LINK_LOCAL,      /* 169.254/16 (cloud metadata), fe80::/10 */
	ADDR_MULTICAST,	      /* 224/4, 255.255.255.255, ff00::/8 */
	ADDR_RESERVED,	      /* 240/4, documentation and benchmark ranges */
	ADDR_GLOBAL,
};

/*
 * One allow rule: an address range (net/prefix) or a host name, and a port
 * (0: any port).
 */
struct addr_rule {
	bool is_name;
	struct addr net;
	int prefix;
	char name[256]; /* lower case, when is_name */
	int port;
};

/* Parse a literal address ("127.0.0.1", "::1", "[::1]"). 0 or -1. */
int addr_parse(const char *s, struct addr *out);
/* Write a as text into buf ("127.0.0.1", "::1"). */
void addr_format(const struct addr *a, char *buf, size_t len);
enum addr_class addr_classify(const struct addr *a);
const char *addr_class_name(enum addr_class c);

/*
 * Parse one pattern of callbacks.allow: "HOST:PORT", "HOST" (any port),
 * "ADDR/PREFIX" or "ADDR/PREFIX:PORT", where HOST is an IPv4 address, a
 * bracketed IPv6 address ("[::1]:8080"; bare "::1" without a port) or a
 * DNS name. 0, or -1 with why (a phrase) set.
 */
int addr_rule_parse(const char *pattern, struct addr_rule *out, const char **why);

/*
 * May a callback connect to host (the URL's host, name or literal) on
 * port at the resolved address a? Only when a rule matches: an address
 * rule whose range holds a, or a name rule equal to host (case
 * insensitive); and the rule's port is 0 or port. The unspecified address
 * (which Linux connects to the local host) and multicast are never let
 * through.
 */
bool addr_allowed(const struct addr_rule *rules, int n, const char *host, const struct addr *a,
		  int port);

/*
 * Can any rule match host:port before DNS is asked? False when host is a
 * literal address no rule lets through, or when no rule has that port:
 * the URL can be refused at once. True leaves the verdict to
 * addr_allowed() on the resolved address.
 */
bool addr_may_allow(const struct addr_rule *rules, int n, const char *host, int port);

/*
 * Split an http(s) URL into its host (brackets removed, lower case) and
 * port (the scheme's default when absent). 0 or -1.
 */
int addr_url_host(const char *url, char *host, size_t hostlen, int *port);
