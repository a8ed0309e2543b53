/*
 * addr: addresses, their classes and the callbacks.allow rules. See addr.h.
 *
 * An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is the IPv4 address it
 * maps: it reaches the same socket, so it must meet the same rules. A rule
 * "ADDR/PREFIX" with host bits set is refused as a likely typo.
 */
#include "addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

int
addr_parse(const char *s, struct addr *out)
{
	char buf[64];
	size_t n = strlen(s);

	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, out->b) == 1) {
		out->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, buf, out->b) != 1)
		return -1;
	out->family = 6;
	if (memcmp(out->b, v4_mapped, sizeof(v4_mapped)) == 0) {
		memmove(out->b, out->b + 12, 4);
		memset(out->b + 4, 0, 12);
		out->family = 4;
	}
	return 0;
}

void
addr_format(const struct addr *a, char *buf, size_t len)
{
	if (inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->b, buf, (socklen_t)len) == NULL &&
	    len > 0)
		buf[0] = '\0';
}

/* Do the first bits of a and b agree? */
static bool
addr_prefix_eq(const uint8_t *a, const uint8_t *b, int bits)
{
	int full = bits / 8, rest = bits % 8;
	uint8_t mask;

	if (memcmp(a, b, (size_t)full) != 0)
		return false;
	if (rest == 0)
		return true;
	mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

/* Is a in the range net/bits, written as four (IPv4) or sixteen bytes? */
static bool
addr_in(const struct addr *a, int family, const uint8_t *net, int bits)
{
	return a->family == family && addr_prefix_eq(a->b, net, bits);
}

#define V4(a, b, c, d) ((const uint8_t[]){a, b, c, d})

enum addr_class
addr_classify(const struct addr *a)
{
	static const uint8_t zero[16] = {0};
	static const uint8_t one[16] = {[15] = 1};

	if (a->family == 4) {
		if (addr_in(a, 4, V4(0, 0, 0, 0), 8))
			return ADDR_UNSPECIFIED;
		if (addr_in(a, 4, V4(127, 0, 0, 0), 8))
			return ADDR_LOOPBACK;
		if (addr_in(a, 4, V4(10, 0, 0, 0), 8) || addr_in(a, 4, V4(172, 16, 0, 0), 12) ||
		    addr_in(a, 4, V4(192, 168, 0, 0), 16) || addr_in(a, 4, V4(100, 64, 0, 0), 10))
			return ADDR_PRIVATE;
		if (addr_in(a, 4, V4(169, 254, 0, 0), 16))
			return ADDR_LINK_LOCAL;
		if (addr_in(a, 4, V4(224, 0, 0, 0), 4) || addr_in(a, 4, V4(255, 255, 255, 255), 32))
			return ADDR_MULTICAST;
		if (addr_in(a, 4, V4(240, 0, 0, 0), 4) || addr_in(a, 4, V4(192, 0, 0, 0), 24) ||
		    addr_in(a, 4, V4(192, 0, 2, 0), 24) || addr_in(a, 4, V4(198, 51, 100, 0), 24) ||
		    addr_in(a, 4, V4(203, 0, 113, 0), 24) || addr_in(a, 4, V4(198, 18, 0, 0), 15))
			return ADDR_RESERVED;
		return ADDR_GLOBAL;
	}
	if (memcmp(a->b, zero, 16) == 0)
		return ADDR_UNSPECIFIED;
	if (memcmp(a->b, one, 16) == 0)
		return ADDR_LOOPBACK;
	if ((a->b[0] & 0xfe) == 0xfc)
		return ADDR_PRIVATE;
	if (a->b[0] == 0xfe && (a->b[1] & 0xc0) == 0x80)
		return ADDR_LINK_LOCAL;
	if (a->b[0] == 0xff)
		return ADDR_MULTICAST;
	/* 2001:db8::/32 documentation, 64:ff9b::/96 NAT64, ::/96 IPv4-compatible */
	if ((a->b[0] == 0x20 && a->b[1] == 0x01 && a->b[2] == 0x0d && a->b[3] == 0xb8) ||
	    addr_prefix_eq(a->b, (const uint8_t[]){0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0},
			   96) ||
	    addr_prefix_eq(a->b, zero, 96))
		return ADDR_RESERVED;
	return ADDR_GLOBAL;
}

const char *
addr_class_name(enum addr_class c)
{
	static const char *const names[] = {
		[ADDR_UNSPECIFIED] = "unspecified", [ADDR_LOOPBACK] = "loopback",
		[ADDR_PRIVATE] = "private",	    [ADDR_LINK_LOCAL] = "link-local",
		[ADDR_MULTICAST] = "multicast",	    [ADDR_RESERVED] = "reserved",
		[ADDR_GLOBAL] = "global",
	};

	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "unknown";
}

/* A decimal number in [lo, hi] spanning all of s. 0 or -1. */
static int
addr_number(const char *s, size_t n, int lo, int hi, int *out)
{
	size_t i;
	int v = 0;

	if (n == 0 || n > 5)
		return -1;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* A DNS name: labels of 1..63 letters, digits and inner '-', joined by '.'. */
static bool
addr_name_ok(const char *s, size_t n)
{
	size_t i, label = 0;

	if (n == 0 || n > 253 || s[0] == '.' || s[n - 1] == '.' || s[n - 1] == '-')
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (s[i] == '-' && label == 0)
			return false;
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
		if (++label > 63)
			return false;
	}
	return true;
}

/* The host part of a rule (an address, a range or a name) into r. */
static int
addr_rule_host(const char *s, size_t n, struct addr_rule *r, const char **why)
{
	char buf[300];
	const char *slash;
	struct addr net;
	int bits, max, i;

	if (n == 0 || n >= sizeof(buf)) {
		*why = "needs a host, an address or a range";
		return -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	slash = strchr(buf, '/');
	if (slash != NULL) {
		buf[slash - buf] = '\0';
		if (addr_parse(buf, &net) != 0) {
			*why = "a range must be ADDRESS/PREFIX";
			return -1;
		}
		max = net.family == 4 ? 32 : 128;
		if (addr_number(slash + 1, strlen(slash + 1), 0, max, &bits) != 0) {
			*why = net.family == 4 ? "the prefix must be 0..32"
					       : "the prefix must be 0..128";
			return -1;
		}
		r->net = net;
		r->prefix = bits;
		for (i = bits; i < max; i++) {
			if (net.b[i / 8] & (0x80 >> (i % 8))) {
				*why = "the address has bits set past the prefix";
				return -1;
			}
		}
		return 0;
	}
	if (addr_parse(buf, &net) == 0) {
		r->net = net;
		r->prefix = net.family == 4 ? 32 : 128;
		return 0;
	}
	if (!addr_name_ok(buf, n)) {
		*why = "must be HOST:PORT, HOST, ADDRESS/PREFIX or ADDRESS/PREFIX:PORT";
		return -1;
	}
	r->is_name = true;
	for (i = 0; i < (int)n; i++)
		r->name[i] = (char)tolower((unsigned char)buf[i]);
	r->name[n] = '\0';
	return 0;
}

int
addr_rule_parse(const char *p, struct addr_rule *out, const char **why)
{
	const char *end, *colon, *host = p;
	size_t hostlen;

	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (strstr(p, "://") != NULL) {
		*why = "a pattern, not a URL: HOST:PORT, HOST, ADDRESS/PREFIX or "
		       "ADDRESS/PREFIX:PORT";
		return -1;
	}
	if (p[0] == '[') {
		end = strchr(p, ']');
		if (end == NULL) {
			*why = "an IPv6 address opened with '[' needs ']'";
			return -1;
		}
		host = p + 1;
		hostlen = (size_t)(end - host);
		colon = end[1] == ':' ? end + 1 : NULL;
		if (colon == NULL && end[1] != '\0') {
			*why = "after ']' only \":PORT\" may follow";
			return -1;
		}
	} else {
		colon = strchr(p, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			colon = NULL; /* a bare IPv6 address or range, no port */
		hostlen = colon != NULL ? (size_t)(colon - p) : strlen(p);
	}
	if (colon != NULL && addr_number(colon + 1, strlen(colon + 1), 1, 65535, &out->port) != 0) {
		*why = "the port must be 1..65535";
		return -1;
	}
	return addr_rule_host(host, hostlen, out, why);
}

/* Does rule r let host:port at address a through (a may be NULL)? */
static bool
addr_rule_match(const struct addr_rule *r, const char *host, const struct addr *a, int port)
{
	if (r->port != 0 && r->port != port)
		return false;
	if (r->is_name)
		return host != NULL && strcasecmp(host, r->name) == 0;
	return a != NULL && a->family == r->net.family && addr_prefix_eq(a->b, r->net.b, r->prefix);
}

bool
addr_allowed(const struct addr_rule *rules, int n, const char *host, const struct addr *a, int port)
{
	enum addr_class c = addr_classify(a);
	int i;

	if (c == ADDR_UNSPECIFIED || c == ADDR_MULTICAST)
		return false;
	for (i = 0; i < n; i++) {
		if (addr_rule_match(&rules[i], host, a, port))
			return true;
	}
	return false;
}

bool
addr_may_allow(const struct addr_rule *rules, int n, const char *host, int port)
{
	struct addr a;
	int i;

	if (addr_parse(host, &a) == 0)
		return addr_allowed(rules, n, NULL, &a, port);
	for (i = 0; i < n; i++) {
		if (rules[i].port != 0 && rules[i].port != port)
			continue;
		if (!rules[i].is_name || strcasecmp(host, rules[i].name) == 0)
			return true;
	}
	return false;
}

int
addr_url_host(const char *url, char *host, size_t hostlen, int *port)
{
	const char *p, *end, *at, *h, *he, *c;
	size_t n, i;

	if (strncasecmp(url, "http://", 7) == 0) {
		p = url + 7;
		*port = 80;
	} else if (strncasecmp(url, "https://", 8) == 0) {
		p = url + 8;
		*port = 443;
	} else {
		return -1;
	}
	end = p + strcspn(p, "/?#");
	for (at = NULL, c = p; c < end; c++) {
		if (*c == '@')
			at = c;
	}
	h = at != NULL ? at + 1 : p;
	if (*h == '[') {
		he = memchr(h, ']', (size_t)(end - h));
		if (he == NULL)
			return -1;
		c = he + 1;
		h++;
	} else {
		he = memchr(h, ':', (size_t)(end - h));
		if (he == NULL)
			he = end;
		c = he;
	}
	if (c < end && *c == ':' && addr_number(c + 1, (size_t)(end - c - 1), 1, 65535, port) != 0)
		return -1;
	if (c < end && *c != ':')
		return -1;
	n = (size_t)(he - h);
	if (n == 0 || n >= hostlen)
		return -1;
	for (i = 0; i < n; i++)
		host[i] = (char)tolower((unsigned char)h[i]);
	host[n] = '\0';
	return 0;
}
