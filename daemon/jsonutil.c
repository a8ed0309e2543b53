/*
 * jsonutil: times and optional strings in API answers.
 */
#include "jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

cJSON *
json_time(int64_t wall_ms)
{
	char ts[40];

	if (wall_ms <= 0)
		return cJSON_CreateNull();
	time_format_rfc3339(wall_ms, ts, sizeof ts);
	return cJSON_CreateString(ts);
}

void
json_add_time(cJSON *o, const char *name, int64_t wall_ms)
{
	cJSON_AddItemToObject(o, name, json_time(wall_ms));
}

void
json_add_string(cJSON *o, const char *name, const char *s)
{
	if (s != NULL)
		cJSON_AddStringToObject(o, name, s);
	else
		cJSON_AddNullToObject(o, name);
}

/*
 * The escape of byte c in a JSON string, or NULL when it stands as it is
 * (cJSON's choice: only the quote, the backslash and controls).
 */
static const char *
json_escape(unsigned char c, char *u, size_t ulen)
{
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\b':
		return "\\b";
	case '\f':
		return "\\f";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	default:
		if (c >= 0x20)
			return NULL;
		snprintf(u, ulen, "\\u%04x", c);
		return u;
	}
}

int
json_buf_string(struct buf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	const unsigned char *run = s;
	const char *esc;
	char u[8];
	int rc;

	rc = buf_append(b, "\"", 1);
	for (; rc == 0 && *s; s++) {
		esc = json_escape(*s, u, sizeof u);
		if (esc == NULL)
			continue;
		if (s > run)
			rc = buf_append(b, run, (size_t)(s - run));
		if (rc == 0)
			rc = buf_puts(b, esc);
		run = s + 1;
	}
	if (rc == 0 && s > run)
		rc = buf_append(b, run, (size_t)(s - run));
	if (rc == 0)
		rc = buf_append(b, "\"", 1);
	return rc;
}

/*
 * The common non-integers (a confidence of 0.85, a temperature of 0.2)
 * without printf and strtod: d is the double nearest to k / 10^n with
 * n <= 6 and k < 10^15, and 1e-4 <= |d| < 1e15. Then "%.15g" prints
 * exactly that decimal (15 digits round-trip, DBL_DIG) with trailing
 * zeros stripped, which is what this writes. 0, or -1: not such a number.
 */
static int
json_short_decimal(double d, char *out, size_t outlen)
{
	static const double p10[] = { 1e1, 1e2, 1e3, 1e4, 1e5, 1e6 };
	double a = fabs(d), x;
	uint64_t k, ip;
	char digits[24];
	int n, i, nd;
	size_t len = 0;

	if (!(a >= 1e-4 && a < 1e15))
		return -1;
	for (n = 0; n < 6; n++) {
		x = a * p10[n];
		if (x >= 1e15 || x != floor(x))
			continue;
		k = (uint64_t)x;
		if ((double)k / p10[n] != a)
			continue;
		/* k has n + 1 decimals after the point; the last is not 0. */
		nd = n + 1;
		ip = k;
		for (i = 0; i < nd; i++)
			ip /= 10;
		{
			char tmp[24], *p = tmp + sizeof tmp;
			size_t m;

			do {
				*--p = (char)('0' + ip % 10);
				ip /= 10;
			} while (ip);
			m = (size_t)(tmp + sizeof tmp - p);
			if ((size_t)(d < 0) + m + (size_t)nd + 2 > outlen)
				return -1;
			if (d < 0)
				out[len++] = '-';
			memcpy(out + len, p, m);
			len += m;
		}
		for (i = nd - 1; i >= 0; i--) {
			digits[i] = (char)('0' + k % 10);
			k /= 10;
		}
		while (nd > 0 && digits[nd - 1] == '0')
			nd--;
		if (nd == 0 || len + (size_t)nd + 2 > outlen)
			return -1;
		out[len++] = '.';
		memcpy(out + len, digits, (size_t)nd);
		out[len + (size_t)nd] = '\0';
		return 0;
	}
	return -1;
}

int
json_buf_number(struct buf *b, double d)
{
	char tmp[32], *p = tmp + sizeof tmp;
	uint64_t u;
	int neg;

	if (!isfinite(d))
		return buf_puts(b, "null");
	/* Integers below 2^53 are exact: digits, no printf. */
	if (d == floor(d) && fabs(d) < 9007199254740992.0) {
		neg = d < 0;
		u = (uint64_t)(neg ? -d : d);
		do {
			*--p = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		if (neg)
			*--p = '-';
		return buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
	}
	if (json_short_decimal(d, tmp, sizeof tmp) == 0)
		return buf_puts(b, tmp);
	snprintf(tmp, sizeof tmp, "%.15g", d);
	if (strtod(tmp, NULL) != d)
		snprintf(tmp, sizeof tmp, "%.17g", d);
	return buf_puts(b, tmp);
}

int
json_buf_item(struct buf *b, const cJSON *item)
{
	const cJSON *c;
	int rc = 0;

	switch (item->type & 0xff) {
	case cJSON_False:
		return buf_puts(b, "false");
	case cJSON_True:
		return buf_puts(b, "true");
	case cJSON_NULL:
		return buf_puts(b, "null");
	case cJSON_Number:
		return json_buf_number(b, item->valuedouble);
	case cJSON_String:
		return json_buf_string(b, item->valuestring);
	case cJSON_Raw:
		return buf_puts(b, item->valuestring ? item->valuestring : "");
	case cJSON_Array:
		rc = buf_append(b, "[", 1);
		for (c = item->child; rc == 0 && c; c = c->next) {
			if (c != item->child)
				rc = buf_append(b, ",", 1);
			if (rc == 0)
				rc = json_buf_item(b, c);
		}
		return rc ? rc : buf_append(b, "]", 1);
	case cJSON_Object:
		rc = buf_append(b, "{", 1);
		for (c = item->child; rc == 0 && c; c = c->next) {
			if (c != item->child)
				rc = buf_append(b, ",", 1);
			if (rc == 0)
				rc = json_buf_string(b, c->string);
			if (rc == 0)
				rc = buf_append(b, ":", 1);
			if (rc == 0)
				rc = json_buf_item(b, c);
		}
		return rc ? rc : buf_append(b, "}", 1);
	default:
		return -1;
	}
}

char *
json_print(const cJSON *item)
{
	struct buf b;

	if (item == NULL)
		return NULL;
	buf_init(&b, SIZE_MAX);
	if (json_buf_item(&b, item) != 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}
