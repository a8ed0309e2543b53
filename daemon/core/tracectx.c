/*
 * tracectx: W3C Trace Context level 1, version 00 (see tracectx.h).
 */
#include "tracectx.h"

#include <string.h>

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* the spec allows lowercase hex only */
}

static bool
hex_decode(const char *s, size_t n, uint8_t *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static void
hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

bool
tracectx_parse(const char *s, struct tracectx *out)
{
	struct tracectx c;
	size_t n;

	if (s == NULL)
		return false;
	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n < TRACECTX_TRACEPARENT_LEN || hexval(s[0]) < 0 || hexval(s[1]) < 0 ||
	    (s[0] == 'f' && s[1] == 'f'))
		return false;
	/*
	 * Version 00 is exactly 55 characters; a later version may append
	 * fields after a '-', and its first 55 characters read as 00's.
	 */
	if (s[0] == '0' && s[1] == '0'
		    ? n != TRACECTX_TRACEPARENT_LEN
		    : n > TRACECTX_TRACEPARENT_LEN && s[TRACECTX_TRACEPARENT_LEN] != '-')
		return false;
	if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		return false;
	if (!hex_decode(s + 3, 16, c.trace_id) || !hex_decode(s + 36, 8, c.span_id) ||
	    !hex_decode(s + 53, 1, &c.flags))
		return false;
	if (all_zero(c.trace_id, 16) || all_zero(c.span_id, 8))
		return false;
	*out = c;
	return true;
}

void
tracectx_format(const struct tracectx *c, char *buf, size_t size)
{
	char t[TRACECTX_TRACE_HEX + 1], sp[TRACECTX_SPAN_HEX + 1], f[3];

	if (size < TRACECTX_TRACEPARENT_LEN + 1) {
		if (size > 0)
			buf[0] = '\0';
		return;
	}
	hex_encode(c->trace_id, 16, t);
	hex_encode(c->span_id, 8, sp);
	hex_encode(&c->flags, 1, f);
	memcpy(buf, "00-", 3);
	memcpy(buf + 3, t, 32);
	buf[35] = '-';
	memcpy(buf + 36, sp, 16);
	buf[52] = '-';
	memcpy(buf + 53, f, 3);
}

void
tracectx_trace_hex(const uint8_t id[16], char out[TRACECTX_TRACE_HEX + 1])
{
	hex_encode(id, 16, out);
}

void
tracectx_span_hex(const uint8_t id[8], char out[TRACECTX_SPAN_HEX + 1])
{
	hex_encode(id, 8, out);
}

bool
tracectx_sampled(const struct tracectx *c)
{
	return (c->flags & 1) != 0;
}

static void
fill(struct rng *r, uint8_t *p, size_t n)
{
	size_t i;

	do {
		for (i = 0; i < n; i += 8) {
			uint64_t v = rng_u64(r);
			size_t k;

			for (k = 0; k < 8 && i + k < n; k++)
				p[i + k] = (uint8_t)(v >> (56 - 8 * k));
		}
	} while (all_zero(p, n));
}

void
tracectx_new_trace_id(struct rng *r, uint8_t id[16])
{
	fill(r, id, 16);
}

void
tracectx_new_span_id(struct rng *r, uint8_t id[8])
{
	fill(r, id, 8);
}

void
tracectx_child(const struct tracectx *parent, struct rng *r, double sample_rate, double sample_draw,
	       struct tracectx *out, uint8_t parent_span[8])
{
	if (parent != NULL) {
		memcpy(out->trace_id, parent->trace_id, 16);
		memcpy(parent_span, parent->span_id, 8);
		out->flags = parent->flags & 1;
	} else {
		tracectx_new_trace_id(r, out->trace_id);
		memset(parent_span, 0, 8);
		out->flags = sample_draw < sample_rate ? 1 : 0;
	}
	tracectx_new_span_id(r, out->span_id);
}

bool
tracectx_tracestate_ok(const char *s)
{
	size_t n = 0;

	if (s == NULL)
		return false;
	for (; s[n] != '\0'; n++) {
		unsigned char ch = (unsigned char)s[n];

		if (n >= TRACECTX_TRACESTATE_MAX)
			return false;
		if (ch != ' ' && ch != '\t' && (ch < 0x21 || ch > 0x7e))
			return false;
	}
	return n > 0;
}
