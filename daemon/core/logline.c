/*
 * logline: log entries as lines (see logline.h).
 */
#include "logline.h"

#include <stdio.h>
#include <string.h>

static const char *const level_names[] = {"debug", "info", "warn", "error"};

/* Length of the well-formed UTF-8 sequence at s (2-4), or 0. */
static size_t
utf8_seq_len(const unsigned char *s)
{
	size_t n, i;
	unsigned int cp;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1fu;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0fu;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07u;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	if (cp >= 0x80 && cp <= 0x9f) /* C1 controls: CSI and friends */
		return 0;
	return n;
}

void
logline_escape(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;
	size_t n;

	while (*p != '\0') {
		if (*p >= 0x20 && *p < 0x7f) {
			p++;
			continue;
		}
		n = *p >= 0x80 ? utf8_seq_len(p) : 0;
		if (n > 0) {
			p += n;
			continue;
		}
		buf_append(b, run, (size_t)(p - run));
		buf_printf(b, "\\x%02x", *p);
		run = ++p;
	}
	buf_append(b, run, (size_t)(p - run));
}

int
logline_priority(enum log_level level)
{
	static const int prio[] = {7, 6, 4, 3};

	return prio[level];
}

/* A JSON string of s, escaped first (then only '"' and '\\' need JSON's escapes). */
static void
json_string(struct buf *b, const char *s)
{
	struct buf e;
	const char *p, *run;

	buf_init(&e, b->max);
	logline_escape(&e, s);
	buf_puts(b, "\"");
	for (p = run = e.data ? e.data : ""; *p != '\0'; p++) {
		if (*p != '"' && *p != '\\')
			continue;
		buf_append(b, run, (size_t)(p - run));
		buf_append(b, "\\", 1);
		run = p;
	}
	buf_puts(b, run);
	buf_puts(b, "\"");
	buf_free(&e);
}

static void
json_member(struct buf *b, const char *key, const char *value)
{
	if (value == NULL)
		return;
	buf_printf(b, ",\"%s\":", key);
	json_string(b, value);
}

static void
text_member(struct buf *b, const char *key, const char *value)
{
	if (value == NULL)
		return;
	buf_printf(b, " %s=", key);
	logline_escape(b, value);
}

void
logline_render(struct buf *b, enum log_format format, int prefix, int64_t wall_ms,
	       enum log_level level, const char *module, const struct logline_ctx *ctx,
	       const char *msg)
{
	static const struct logline_ctx none;
	char ts[40];

	if (ctx == NULL)
		ctx = &none;
	buf_reset(b);
	time_format_rfc3339(wall_ms, ts, sizeof ts);
	if (prefix)
		buf_printf(b, "<%d>", logline_priority(level));
	if (format == LOG_FORMAT_JSON) {
		buf_printf(b, "{\"time\":\"%s\",\"level\":\"%s\",\"module\":", ts,
			   level_names[level]);
		json_string(b, module);
		buf_puts(b, ",\"msg\":");
		json_string(b, msg);
		json_member(b, "request_id", ctx->request_id);
		json_member(b, "route", ctx->route);
		json_member(b, "backend", ctx->backend);
		buf_puts(b, "}\n");
		return;
	}
	buf_printf(b, "%s %s ", ts, level_names[level]);
	logline_escape(b, module);
	buf_puts(b, ": ");
	logline_escape(b, msg);
	text_member(b, "route", ctx->route);
	text_member(b, "backend", ctx->backend);
	text_member(b, "request_id", ctx->request_id);
	buf_puts(b, "\n");
}
