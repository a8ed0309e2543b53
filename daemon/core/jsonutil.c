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

void
json_add_number(cJSON *o, const char *name, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddNumberToObject(o, name, v);
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

/* u's decimal digits written backwards, ending just before end; the first. */
static char *
digits_back(char *end, uint64_t u)
{
	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	return end;
}

/*
 * The common non-integers (a confidence of 0.85, a temperature of 0.2)
 * without printf and strtod: d is the double nearest to k / 10^n with
 * n <= 6 and k < 10^15, and 1e-4 <= |d| < 1e15. Then "%.15g" prints
 * exactly that decimal (15 digits round-trip, DBL_DIG) with trailing
 * zeros stripped, which is what this writes, backwards, ending just before
 * end (at most 17 characters). The text's first character, or NULL: not
 * such a number.
 */
static char *
json_short_decimal(double d, char *end)
{
	static const double p10[] = {1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
	double a = fabs(d), x;
	uint64_t k;
	char *p;
	int n, i, trailing;

	if (!(a >= 1e-4 && a < 1e15))
		return NULL;
	for (n = 0; n < 6; n++) {
		x = a * p10[n];
		if (x >= 1e15 || x != floor(x))
			continue;
		k = (uint64_t)x;
		if ((double)k / p10[n] != a)
			continue;
		/* k's last n + 1 digits are the decimals; trailing zeros go */
		p = end;
		for (i = 0, trailing = 1; i <= n; i++, k /= 10) {
			if (trailing && k % 10 == 0)
				continue;
			trailing = 0;
			*--p = (char)('0' + k % 10);
		}
		if (trailing)
			return NULL; /* no decimals: an integer, printed elsewhere */
		*--p = '.';
		p = digits_back(p, k);
		if (d < 0)
			*--p = '-';
		return p;
	}
	return NULL;
}

int
json_buf_number(struct buf *b, double d)
{
	char tmp[32], *end = tmp + sizeof tmp, *p;

	if (!isfinite(d))
		return buf_puts(b, "null");
	/* Integers below 2^53 are exact: digits, no printf. */
	if (d == floor(d) && fabs(d) < 9007199254740992.0) {
		p = digits_back(end, (uint64_t)fabs(d));
		if (d < 0)
			*--p = '-';
		return buf_append(b, p, (size_t)(end - p));
	}
	p = json_short_decimal(d, end);
	if (p != NULL)
		return buf_append(b, p, (size_t)(end - p));
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
