/*
 * reqcheck: header-value checks of the HTTP front. See reqcheck.h.
 */
#include "reqcheck.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

/* "127.0.0.1", "::1" and the like: an address literal of either family. */
static int
ip_literal(const char *h)
{
	unsigned char a[16];

	return inet_pton(AF_INET, h, a) == 1 || inet_pton(AF_INET6, h, a) == 1;
}

void
reqcheck_self_init(struct reqcheck_self *s, const char *listen_host, char *const *names, int nnames)
{
	s->listen_host = listen_host;
	s->loopback = (strncmp(listen_host, "127.", 4) == 0 && ip_literal(listen_host)) ||
		      strcmp(listen_host, "::1") == 0 || strcasecmp(listen_host, "localhost") == 0;
	s->any = strcmp(listen_host, "0.0.0.0") == 0 || strcmp(listen_host, "::") == 0;
	s->names = names;
	s->nnames = nnames;
}

int
reqcheck_content_length(const char *v, int *nseen, uint64_t *len)
{
	uint64_t x;
	int digits;

	for (;;) {
		v += strspn(v, " \t");
		for (x = 0, digits = 0; *v >= '0' && *v <= '9'; v++, digits++) {
			uint64_t d = (uint64_t)(*v - '0');

			if (x > UINT64_MAX / 10 || (x == UINT64_MAX / 10 && d > UINT64_MAX % 10))
				return -1;
			x = x * 10 + d;
		}
		v += strspn(v, " \t");
		if (digits == 0 || (*v != ',' && *v != '\0') || (*nseen > 0 && x != *len))
			return -1;
		*len = x;
		(*nseen)++;
		if (*v == '\0')
			return 0;
		v++;
	}
}

int
reqcheck_host(const struct reqcheck_self *s, const char *h)
{
	char name[256];
	const char *end, *port;
	size_t n, i;
	int k;

	if (*h == '[') {
		end = strchr(h, ']');
		if (end == NULL)
			return 0;
		h++;
		n = (size_t)(end - h);
		port = end + 1;
	} else {
		n = strcspn(h, ":");
		port = h + n;
	}
	if (*port == ':')
		port++;
	else if (*port != '\0')
		return 0;
	if (strspn(port, "0123456789") != strlen(port) || n == 0 || n >= sizeof name)
		return 0;
	for (i = 0; i < n; i++)
		name[i] = (char)tolower((unsigned char)h[i]);
	name[n] = '\0';
	if (strcasecmp(name, s->listen_host) == 0)
		return 1;
	if (s->loopback && (strcmp(name, "localhost") == 0 || strcmp(name, "::1") == 0 ||
			    (strncmp(name, "127.", 4) == 0 && ip_literal(name))))
		return 1;
	if (s->any && ip_literal(name))
		return 1;
	for (k = 0; k < s->nnames; k++)
		if (strcmp(name, s->names[k]) == 0)
			return 1;
	return 0;
}

int
reqcheck_origin(const char *origin, char *const *allowed, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcasecmp(origin, allowed[i]) == 0)
			return 1;
	return 0;
}

int
reqcheck_json_type(const char *ct)
{
	static const char want[] = "application/json";

	if (ct == NULL)
		return 0;
	ct += strspn(ct, " \t");
	if (strncasecmp(ct, want, sizeof want - 1) != 0)
		return 0;
	ct += sizeof want - 1;
	ct += strspn(ct, " \t");
	return *ct == '\0' || *ct == ';';
}
