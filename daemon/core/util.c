/*
 * util: allocation that aborts on OOM, bounded buffers, small helpers.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void
oom(size_t n)
{
	fprintf(stderr, "fusebox: out of memory allocating %zu bytes\n", n);
	abort();
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom(n);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (p == NULL)
		oom(nmemb * size);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		oom(n);
	return q;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(0);
	return p;
}

void
buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

/* Room for extra more bytes; may_fail: -ENOMEM when realloc fails, else abort. */
static int
buf_reserve(struct buf *b, size_t extra, int may_fail)
{
	size_t need, ncap;
	char *d;

	if (extra > b->max || b->len > b->max - extra)
		return -E2BIG;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 256;
	while (ncap < need)
		ncap *= 2;
	if (b->max < SIZE_MAX && ncap > b->max + 1) /* max + 1 would wrap for SIZE_MAX */
		ncap = b->max + 1;
	d = may_fail ? realloc(b->data, ncap) : xrealloc(b->data, ncap);
	if (d == NULL)
		return -ENOMEM;
	b->data = d;
	b->cap = ncap;
	return 0;
}

static int
buf_add(struct buf *b, const void *p, size_t n, int may_fail)
{
	int r = buf_reserve(b, n, may_fail);

	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	return buf_add(b, p, n, 0);
}

int
buf_try_append(struct buf *b, const void *p, size_t n)
{
	return buf_add(b, p, n, 1);
}

int
buf_init_fixed(struct buf *b, size_t cap)
{
	buf_init(b, cap > 0 ? cap - 1 : 0);
	if (cap == 0)
		return -EINVAL;
	b->data = malloc(cap);
	if (b->data == NULL)
		return -ENOMEM;
	b->cap = cap;
	b->data[0] = '\0';
	return 0;
}

int
buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[512];
	char *big = NULL;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof small)
		return buf_append(b, small, (size_t)n);
	va_start(ap, fmt);
	n = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(0);
	r = buf_append(b, big, (size_t)n);
	free(big);
	return r;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *
buf_steal(struct buf *b)
{
	char *p = b->data;

	if (p == NULL)
		p = xstrdup("");
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

int
parse_int64(const char *s, int64_t *out)
{
	char *end = NULL;
	long long v;

	/* strtoll would skip leading white space; a whole integer has none. */
	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s || *end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

uint32_t
str_hash(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

int
str_consttime_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i;
	unsigned char d = (unsigned char)(la != lb);

	/* Always walk the candidate's full length: timing depends only on b. */
	for (i = 0; i < lb; i++)
		d |= (unsigned char)(a[i < la ? i : 0] ^ b[i]) & (unsigned char)(i < la ? 0xff : 0);
	if (la == 0 && lb != 0)
		d = 1;
	return d == 0;
}

void
time_format_rfc3339(int64_t wall_ms, char *out, size_t outlen)
{
	time_t secs = (time_t)(wall_ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (int)(wall_ms % 1000));
}

int
time_parse_rfc3339(const char *s, int64_t *wall_ms)
{
	struct tm tm;
	const char *p;
	int64_t ms = 0, off = 0;

	memset(&tm, 0, sizeof tm);
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL)
		return -EINVAL;
	if (*p == '.') {
		int digits = 0;

		p++;
		while (*p >= '0' && *p <= '9') {
			if (digits < 3) {
				ms = ms * 10 + (*p - '0');
				digits++;
			}
			p++;
		}
		while (digits++ < 3)
			ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, hh, mm;

		/* Exactly "+HH:MM": checked byte by byte so p += 6 stays in the string. */
		if (!isdigit((unsigned char)p[1]) || !isdigit((unsigned char)p[2]) || p[3] != ':' ||
		    !isdigit((unsigned char)p[4]) || !isdigit((unsigned char)p[5]))
			return -EINVAL;
		hh = (p[1] - '0') * 10 + (p[2] - '0');
		mm = (p[4] - '0') * 10 + (p[5] - '0');
		off = sign * (hh * 3600 + mm * 60);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	*wall_ms = ((int64_t)timegm(&tm) - off) * 1000 + ms;
	return 0;
}
