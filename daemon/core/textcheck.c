/*
 * textcheck: UTF-8 and control-character checks, secret redaction.
 */
#include "textcheck.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

#define REDACTED "[redacted]"

bool
textcheck_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	while (p < end) {
		unsigned c = *p;
		size_t k, i;
		unsigned cp, min;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			k = 1;
			cp = c & 0x1f;
			min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			k = 2;
			cp = c & 0x0f;
			min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			k = 3;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return false;
		}
		if ((size_t)(end - p) <= k)
			return false;
		for (i = 1; i <= k; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += k + 1;
	}
	return true;
}

static int
json_walk(const cJSON *v, char *path, size_t pathlen, size_t at)
{
	const cJSON *c;
	int i = 0, n;

	if (cJSON_IsString(v) && v->valuestring &&
	    !textcheck_utf8(v->valuestring, strlen(v->valuestring)))
		return 1;
	if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
		return 0;
	for (c = v->child; c; c = c->next, i++) {
		if (cJSON_IsObject(v)) {
			const char *k = c->string ? c->string : "";
			int bad = !textcheck_utf8(k, strlen(k));

			n = snprintf(path + at, pathlen - at, "%s%s", at ? "." : "",
				     bad ? "(key)" : k);
			if (bad)
				return 1;
		} else {
			n = snprintf(path + at, pathlen - at, "[%d]", i);
		}
		if (n < 0)
			n = 0;
		if (json_walk(c, path, pathlen, MIN(at + (size_t)n, pathlen - 1)))
			return 1;
		path[at] = '\0';
	}
	return 0;
}

int
textcheck_json_utf8(const cJSON *v, char *path, size_t pathlen)
{
	path[0] = '\0';
	if (json_walk(v, path, pathlen, 0)) {
		if (path[0] == '\0')
			snprintf(path, pathlen, "body");
		return 1;
	}
	return 0;
}

bool
textcheck_has_control(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!textcheck_utf8(s, strlen(s)))
		return true;
	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return true;
		/* U+0080..U+009F is 0xc2 0x80..0x9f in UTF-8 */
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return true;
	}
	return false;
}

/* A token character of "Bearer <token>" (RFC 6750 b64token, plus what keys use). */
static int
token_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       strchr("-._~+/=:", c) != NULL;
}

char *
textcheck_redact(const char *text, const char *const *keys, int nkeys)
{
	struct buf b;
	const char *p, *run;
	size_t lens[TEXTCHECK_KEYS_MAX];
	int i, n = 0;

	if (text == NULL)
		return NULL;
	for (i = 0; i < nkeys && n < TEXTCHECK_KEYS_MAX; i++)
		lens[n++] = keys[i] ? strlen(keys[i]) : 0;
	/* the common case, nothing to redact: one scan, one copy */
	if (n == 0 && strcasestr(text, "bearer ") == NULL)
		return xstrdup(text);
	buf_init(&b, SIZE_MAX / 2);
	p = run = text;
	while (*p) {
		unsigned char ch = (unsigned char)*p;
		size_t klen = 0;

		for (i = 0; i < n; i++) {
			if (lens[i] >= 4 && (unsigned char)keys[i][0] == ch &&
			    strncmp(p, keys[i], lens[i]) == 0) {
				klen = lens[i];
				break;
			}
		}
		if (klen) {
			buf_append(&b, run, (size_t)(p - run));
			buf_puts(&b, REDACTED);
			p += klen;
			run = p;
			continue;
		}
		if ((ch == 'b' || ch == 'B') && strncasecmp(p, "bearer ", 7) == 0 &&
		    token_char((unsigned char)p[7])) {
			buf_append(&b, run, (size_t)(p - run) + 7);
			buf_puts(&b, REDACTED);
			p += 7;
			while (*p && token_char((unsigned char)*p))
				p++;
			run = p;
			continue;
		}
		p++;
	}
	buf_append(&b, run, (size_t)(p - run));
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}
