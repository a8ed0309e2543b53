#pragma once
/*
 * reqcheck: what the HTTP front decides from a request's header values
 * alone (docs/CONFIG-NOTES.md "The HTTP front"): Content-Length framing
 * (RFC 9112 6.3), whether a Host names this server (DNS rebinding),
 * whether a browser Origin is allowed, whether a media type is JSON. Pure;
 * called on the engine thread by http.c.
 */
#include <stdint.h>

/* Who this server is, for reqcheck_host(). */
struct reqcheck_self {
	const char *listen_host; /* "127.0.0.1", "::1", "0.0.0.0", ... (no brackets) */
	int loopback;		 /* listen_host is a loopback address */
	int any;		 /* listen_host is a wildcard (0.0.0.0, ::) */
	char *const *names;	 /* http.allowed_hosts, lower case, no port */
	int nnames;
};

/* Fill loopback and any from listen_host. */
void reqcheck_self_init(struct reqcheck_self *s, const char *listen_host, char *const *names,
			int nnames);

/*
 * One Content-Length header value ("5", or a list of equal values "5, 5")
 * merged with the values seen before on the same request (*nseen of them,
 * equal to *len). 0, or -1 when it does not parse or differs.
 */
int reqcheck_content_length(const char *value, int *nseen, uint64_t *len);

/*
 * 1 when the Host value ("name", "name:port", "[v6]:port") names this
 * server: its listen address; localhost, ::1 or a 127.x literal when it
 * listens on loopback; any address literal when it listens on a wildcard;
 * or one of the configured names. 0 otherwise.
 */
int reqcheck_host(const struct reqcheck_self *s, const char *host);

/* 1 when origin is one of allowed[0..n-1] (ASCII case-insensitive). */
int reqcheck_origin(const char *origin, char *const *allowed, int n);

/* 1 for application/json, with parameters or not, any case. */
int reqcheck_json_type(const char *content_type);
