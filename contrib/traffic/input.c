/*
 * traffic/input: what fusebox-traffic reads before it sends — numbers,
 * the route list, the (loopback) URL, the inputs file and the token —
 * and its small helpers (allocation, clock, the seeded generator).
 */
#include "traffic.h"

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL) {
		fprintf(stderr, "fusebox-traffic: out of memory\n");
		abort();
	}
	return p;
}

static char *
xstrndup(const char *s, size_t n)
{
	char *p = xcalloc(n + 1, 1);

	memcpy(p, s, n);
	return p;
}

int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: deterministic with --seed. */
uint64_t
rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(2685821657736338717);
}

/* Uniform in [0, 1). */
double
rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

int
parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	int rc = -1;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		goto out;
	*out = v;
	rc = 0;
out:
	return rc;
}

int
parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;
	int rc = -1;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
		goto out;
	*out = v;
	rc = 0;
out:
	return rc;
}

static int
name_valid(const char *s, size_t n)
{
	size_t i;
	int ok = n > 0 && n <= ROUTE_NAME_MAX;

	for (i = 0; ok && i < n; i++) {
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		     (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.';
	}
	return ok;
}

/* "intent,ticket" or "intent:3,ticket:1" (weights, default 1). */
int
routes_parse(struct traffic *t, const char *spec)
{
	const char *p = spec, *comma, *colon;
	char wbuf[16];
	size_t len, nlen;
	long w;
	int rc = -1;

	while (*p != '\0') {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		colon = memchr(p, ':', len);
		nlen = colon != NULL ? (size_t)(colon - p) : len;
		w = 1;
		if (colon != NULL) {
			if (len - nlen - 1 >= sizeof wbuf)
				goto bad;
			memcpy(wbuf, colon + 1, len - nlen - 1);
			wbuf[len - nlen - 1] = '\0';
			if (parse_long(wbuf, 0, WEIGHT_MAX, &w) != 0)
				goto bad;
		}
		if (!name_valid(p, nlen) || t->nroutes == ROUTES_MAX)
			goto bad;
		memcpy(t->routes[t->nroutes].name, p, nlen);
		t->routes[t->nroutes].name[nlen] = '\0';
		t->routes[t->nroutes].weight = (unsigned int)w;
		t->wsum += (unsigned int)w;
		t->nroutes++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (t->nroutes == 0 || t->wsum == 0)
		goto bad;
	rc = 0;
	goto out;
bad:
	fprintf(stderr,
		"fusebox-traffic: --routes: want NAME[:WEIGHT],... (at most %d names of "
		"[A-Za-z0-9._-], weights 0..%d, one > 0)\n",
		ROUTES_MAX, WEIGHT_MAX);
out:
	return rc;
}

/*
 * Accept only http:// URLs whose host is a loopback address (127.0.0.0/8,
 * ::1, localhost), and keep "http://HOST:PORT" as the base.
 */
int
url_check(struct traffic *t, const char *url)
{
	CURLU *u = NULL;
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	char v6[64];
	struct in_addr a4;
	struct in6_addr a6;
	size_t hl;
	int ok = 0, n, rc = -1;

	u = curl_url();
	if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		fprintf(stderr, "fusebox-traffic: --url: cannot parse \"%s\"\n", url);
		goto out;
	}
	if (strcasecmp(scheme, "http") != 0) {
		fprintf(stderr, "fusebox-traffic: --url: only http:// is supported\n");
		goto out;
	}
	if (strcmp(path, "/") != 0 && path[0] != '\0') {
		fprintf(stderr, "fusebox-traffic: --url: give the daemon's base URL, "
				"without a path\n");
		goto out;
	}
	hl = strlen(host);
	if (strcasecmp(host, "localhost") == 0) {
		ok = 1;
	} else if (inet_pton(AF_INET, host, &a4) == 1) {
		ok = (ntohl(a4.s_addr) >> 24) == 127;
	} else if (hl > 2 && hl < sizeof v6 && host[0] == '[' && host[hl - 1] == ']') {
		memcpy(v6, host + 1, hl - 2);
		v6[hl - 2] = '\0';
		ok = inet_pton(AF_INET6, v6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	if (!ok) {
		fprintf(stderr,
			"fusebox-traffic: --url: %s is not a loopback address; this "
			"generator only talks to a daemon on this machine\n",
			host);
		goto out;
	}
	n = snprintf(t->base, sizeof t->base, "http://%s:%s", host, port);
	if (n < 0 || (size_t)n >= sizeof t->base) {
		fprintf(stderr, "fusebox-traffic: --url: too long\n");
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}

/* Read at most max bytes of path into a NUL-terminated buffer. */
static int
file_read(const char *path, size_t max, char **textp, size_t *lenp)
{
	FILE *f = NULL;
	char *text = NULL;
	size_t n;
	int rc = -1;

	f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "fusebox-traffic: %s: %s\n", path, strerror(errno));
		goto out;
	}
	text = xcalloc(max + 2, 1);
	n = fread(text, 1, max + 1, f);
	if (ferror(f)) {
		fprintf(stderr, "fusebox-traffic: %s: read error\n", path);
		goto out;
	}
	if (n > max) {
		fprintf(stderr, "fusebox-traffic: %s: over %zu bytes\n", path, max);
		goto out;
	}
	text[n] = '\0';
	*textp = text;
	*lenp = n;
	text = NULL;
	rc = 0;
out:
	free(text);
	if (f != NULL)
		fclose(f);
	return rc;
}

/* One message a line; blank lines and lines starting with '#' are skipped. */
int
inputs_load(struct traffic *t, const char *path)
{
	char *text = NULL, *p, *nl, *end;
	size_t len, n;
	int rc = -1;

	if (file_read(path, INPUTS_FILE_MAX, &text, &len) != 0)
		goto out;
	t->inputs = xcalloc(INPUTS_MAX, sizeof *t->inputs);
	end = text + len;
	for (p = text; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		n = (size_t)(nl - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n == 0 || p[0] == '#')
			continue;
		if (n > INPUT_LINE_MAX) {
			fprintf(stderr, "fusebox-traffic: %s: a line is over %d bytes\n", path,
				INPUT_LINE_MAX);
			goto out;
		}
		if (t->ninputs == INPUTS_MAX) {
			fprintf(stderr, "fusebox-traffic: %s: over %d inputs\n", path, INPUTS_MAX);
			goto out;
		}
		t->inputs[t->ninputs++] = xstrndup(p, n);
	}
	if (t->ninputs == 0) {
		fprintf(stderr, "fusebox-traffic: %s: no inputs\n", path);
		goto out;
	}
	rc = 0;
out:
	free(text);
	return rc;
}

/* The first whitespace-separated field of the first line. */
int
token_load(struct traffic *t, const char *path)
{
	char *text = NULL;
	size_t len, n;
	int rc = -1;

	if (file_read(path, 64 * 1024, &text, &len) != 0)
		goto out;
	n = strcspn(text, " \t\r\n");
	if (n == 0 || n > TOKEN_MAX) {
		fprintf(stderr, "fusebox-traffic: %s: no token on the first line\n", path);
		goto out;
	}
	snprintf(t->auth, sizeof t->auth, "Authorization: Bearer %.*s", (int)n, text);
	rc = 0;
out:
	if (text != NULL)
		explicit_bzero(text, len);
	free(text);
	return rc;
}
