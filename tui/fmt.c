/*
 * fmt: pure text helpers (see fmt.h).
 *
 * Every function writes into a caller buffer with a size and never past it:
 * the console formats each visible cell into stack buffers, so rendering
 * allocates nothing. Width rules: a code point takes wcwidth() columns;
 * controls, invalid bytes and (in ASCII mode) anything non-ASCII are
 * rendered as one '?' column; a tab is one space.
 */
#include "fmt.h"

#include <errno.h>
#include <langinfo.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "util.h"

static int fmt_ascii;

static const char *const spark_utf8[8] = {
	"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
	"\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88",
};
static const char spark_ascii[8] = {'_', '.', '-', ':', '=', '+', '*', '#'};

void
fmt_set_ascii(int ascii)
{
	fmt_ascii = ascii != 0;
}

int
fmt_locale_utf8(void)
{
	return strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
}

int
fmt_is_ascii(void)
{
	return fmt_ascii;
}

int
fmt_utf8_next(const char *s, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c, min;
	int n, i;

	if (u[0] == 0) {
		*cp = 0;
		return 0;
	}
	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	if ((u[0] & 0xe0) == 0xc0) {
		n = 2;
		c = u[0] & 0x1f;
		min = 0x80;
	} else if ((u[0] & 0xf0) == 0xe0) {
		n = 3;
		c = u[0] & 0x0f;
		min = 0x800;
	} else if ((u[0] & 0xf8) == 0xf0) {
		n = 4;
		c = u[0] & 0x07;
		min = 0x10000;
	} else {
		*cp = 0xfffd;
		return 1;
	}
	for (i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80) {
			*cp = 0xfffd;
			return i; /* stops at a NUL too */
		}
		c = (c << 6) | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		c = 0xfffd;
	*cp = c;
	return n;
}

int
fmt_utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * How the character at s is shown: its bytes (or a one-byte replacement in
 * rep) and its width. Returns the source bytes consumed (0 at the end).
 */
static int
glyph(const char *s, const char **bytes, int *nbytes, int *width, char *rep)
{
	uint32_t cp;
	int n = fmt_utf8_next(s, &cp), w;

	if (n == 0)
		return 0;
	*bytes = s;
	*nbytes = n;
	if (cp == '\t') {
		rep[0] = ' ';
		*bytes = rep;
		*nbytes = 1;
		*width = 1;
		return n;
	}
	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == 0xfffd ||
	    (fmt_ascii && cp >= 0x80)) {
		rep[0] = '?';
		*bytes = rep;
		*nbytes = 1;
		*width = 1;
		return n;
	}
	if (cp < 0x80) {
		*width = 1;
		return n;
	}
	w = wcwidth((wchar_t)cp);
	if (w < 0) {
		rep[0] = '?';
		*bytes = rep;
		*nbytes = 1;
		w = 1;
	}
	*width = w;
	return n;
}

int
fmt_width(const char *s)
{
	const char *b;
	char rep[1];
	int n, nb, w, total = 0;

	while ((n = glyph(s, &b, &nb, &w, rep)) > 0) {
		total += w;
		s += n;
	}
	return total;
}

static const char *
ellipsis(int *len)
{
	if (fmt_ascii) {
		*len = 1;
		return "~";
	}
	*len = 3;
	return "\xe2\x80\xa6";
}

int
fmt_fit(char *out, size_t outsz, const char *s, int cols, int flags)
{
	const char *b, *ell;
	char rep[1];
	size_t o = 0;
	int n, nb, w, used = 0, ell_len, limit, total, pad;

	if (outsz == 0)
		return 0;
	out[0] = '\0';
	if (cols <= 0)
		return 0;
	if (s == NULL)
		s = "";
	total = fmt_width(s);
	ell = ellipsis(&ell_len);
	limit = total > cols ? cols - 1 : cols;
	while ((n = glyph(s, &b, &nb, &w, rep)) > 0) {
		if (used + w > limit)
			break;
		/* Keep room for the ellipsis and the NUL. */
		if (o + (size_t)nb + (size_t)ell_len + 1 > outsz)
			break;
		memcpy(out + o, b, (size_t)nb);
		o += (size_t)nb;
		used += w;
		s += n;
	}
	if (*s != '\0' && o + (size_t)ell_len + 1 <= outsz) {
		memcpy(out + o, ell, (size_t)ell_len);
		o += (size_t)ell_len;
		used++;
	}
	out[o] = '\0';
	if (!(flags & (FMT_PAD | FMT_RIGHT)) || used >= cols)
		return used;
	pad = cols - used;
	if (o + (size_t)pad + 1 > outsz)
		pad = (int)(outsz - o - 1);
	if (flags & FMT_RIGHT) {
		memmove(out + pad, out, o + 1);
		memset(out, ' ', (size_t)pad);
	} else {
		memset(out + o, ' ', (size_t)pad);
		out[o + (size_t)pad] = '\0';
	}
	return used + pad;
}

int
fmt_wrap(const char **pp, int cols, char *out, size_t outsz)
{
	const char *s = *pp, *b, *brk_src = NULL;
	char rep[1];
	size_t o = 0, brk_out = 0;
	int n, nb, w, used = 0;

	if (outsz == 0)
		return 0;
	out[0] = '\0';
	if (*s == '\0')
		return 0;
	if (cols < 1)
		cols = 1;
	for (;;) {
		if (*s == '\n') {
			s++;
			break;
		}
		n = glyph(s, &b, &nb, &w, rep);
		if (n == 0)
			break;
		if ((used + w > cols && used > 0) || o + (size_t)nb + 1 > outsz) {
			if (brk_src != NULL) {
				o = brk_out;
				s = brk_src;
			}
			break;
		}
		if (*s == ' ' && used > 0) {
			brk_out = o;
			brk_src = s + 1;
		}
		memcpy(out + o, b, (size_t)nb);
		o += (size_t)nb;
		used += w;
		s += n;
	}
	out[o] = '\0';
	*pp = s;
	return 1;
}

void
fmt_duration(char *out, size_t outsz, int64_t ms, int show_ms)
{
	const char *sign = ms < 0 ? "-" : "";
	long long a = ms < 0 ? -(long long)ms : (long long)ms, s = a / 1000;

	if (show_ms && a < 1000)
		snprintf(out, outsz, "%s%lldms", sign, a);
	else if (s < 60)
		snprintf(out, outsz, "%s%llds", sign, s);
	else if (s < 3600)
		snprintf(out, outsz, "%s%lldm%02llds", sign, s / 60, s % 60);
	else if (s < 86400)
		snprintf(out, outsz, "%s%lldh%02lldm", sign, s / 3600, (s % 3600) / 60);
	else
		snprintf(out, outsz, "%s%lldd%02lldh", sign, s / 86400, (s % 86400) / 3600);
}

void
fmt_pct(char *out, size_t outsz, double frac, int decimals)
{
	if (isnan(frac))
		snprintf(out, outsz, "-");
	else if (decimals < 0)
		snprintf(out, outsz, "%.4g%%", frac * 100.0);
	else
		snprintf(out, outsz, "%.*f%%", decimals, frac * 100.0);
}

void
fmt_latency(char *out, size_t outsz, double ms)
{
	if (isnan(ms) || ms < 0)
		snprintf(out, outsz, "-");
	else if (ms < 10000)
		snprintf(out, outsz, "%.0fms", ms);
	else
		snprintf(out, outsz, "%.1fs", ms / 1000.0);
}

void
fmt_rate(char *out, size_t outsz, double v)
{
	if (isnan(v))
		snprintf(out, outsz, "-");
	else
		snprintf(out, outsz, "%.1f", v);
}

static size_t
put_glyph(char *out, size_t outsz, size_t o, int level)
{
	const char *g;
	size_t len;

	if (level < 0) {
		g = " ";
		len = 1;
	} else if (fmt_ascii) {
		g = &spark_ascii[level];
		len = 1;
	} else {
		g = spark_utf8[level];
		len = 3;
	}
	if (o + len + 1 > outsz)
		return o;
	memcpy(out + o, g, len);
	return o + len;
}

size_t
fmt_spark(char *out, size_t outsz, const float *v, int n, int width, double lo, double hi)
{
	double mean[512], mn = NAN, mx = NAN, span;
	size_t o = 0;
	int i, j, lead = 0, nb, level;

	if (outsz == 0)
		return 0;
	out[0] = '\0';
	if (width <= 0)
		return 0;
	if (width > (int)ARRAY_SIZE(mean))
		width = (int)ARRAY_SIZE(mean);
	if (n < width) {
		lead = width - n;
		nb = n;
	} else {
		nb = width;
	}
	for (i = 0; i < nb; i++) {
		int from = n < width ? i : (int)((int64_t)i * n / width);
		int to = n < width ? i + 1 : (int)((int64_t)(i + 1) * n / width);
		double sum = 0;
		int cnt = 0;

		for (j = from; j < to; j++) {
			if (!isnan(v[j])) {
				sum += v[j];
				cnt++;
			}
		}
		mean[i] = cnt ? sum / cnt : NAN;
		if (cnt) {
			if (isnan(mn) || mean[i] < mn)
				mn = mean[i];
			if (isnan(mx) || mean[i] > mx)
				mx = mean[i];
		}
	}
	if (isnan(lo))
		lo = mn;
	if (isnan(hi))
		hi = mx;
	span = hi - lo;
	for (i = 0; i < lead; i++)
		o = put_glyph(out, outsz, o, -1);
	for (i = 0; i < nb; i++) {
		if (isnan(mean[i])) {
			level = -1;
		} else if (!(span > 0)) {
			level = mean[i] > 0 ? 7 : 0;
		} else {
			level = (int)lround((mean[i] - lo) / span * 7.0);
			level = level < 0 ? 0 : level > 7 ? 7 : level;
		}
		o = put_glyph(out, outsz, o, level);
	}
	out[o] = '\0';
	return o;
}

void
fmt_bar(char *out, size_t outsz, double frac, int width)
{
	size_t o = 0;
	int i, fill;

	if (outsz == 0)
		return;
	if (isnan(frac) || frac < 0)
		frac = 0;
	if (frac > 1)
		frac = 1;
	fill = (int)lround(frac * width);
	for (i = 0; i < width; i++) {
		const char *g = fmt_ascii ? (i < fill ? "#" : ".")
					  : (i < fill ? "\xe2\x96\x88" : "\xe2\x96\x91");
		size_t len = strlen(g);

		if (o + len + 1 > outsz)
			break;
		memcpy(out + o, g, len);
		o += len;
	}
	out[o] = '\0';
}

int
fmt_parse_duration(const char *s, int64_t *ms)
{
	int64_t total = 0, num, mult;
	const char *p = s;
	int parts = 0;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	while (*p) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		num = 0;
		while (*p >= '0' && *p <= '9') {
			if (num > INT64_MAX / 10 - 10)
				return -ERANGE;
			num = num * 10 + (*p++ - '0');
		}
		if (strncmp(p, "ms", 2) == 0) {
			mult = 1;
			p += 2;
		} else if (*p == 's') {
			mult = 1000;
			p++;
		} else if (*p == 'm') {
			mult = 60000;
			p++;
		} else if (*p == 'h') {
			mult = 3600000;
			p++;
		} else if (*p == 'd') {
			mult = 86400000;
			p++;
		} else if (*p == '\0' && parts == 0) {
			mult = 1000;
		} else {
			return -EINVAL;
		}
		if (num > (INT64_MAX - total) / mult)
			return -ERANGE;
		total += num * mult;
		parts++;
	}
	*ms = total;
	return 0;
}

int
fmt_parse_since(const char *s, int64_t now_ms, int64_t *since_ms)
{
	int64_t d;

	if (s == NULL)
		return -EINVAL;
	if (strchr(s, 'T') != NULL || strchr(s, 't') != NULL)
		return time_parse_rfc3339(s, since_ms) == 0 ? 0 : -EINVAL;
	if (fmt_parse_duration(s, &d) != 0)
		return -EINVAL;
	*since_ms = now_ms - d;
	return 0;
}

void
fmt_clock(char *out, size_t outsz, int64_t wall_ms, int64_t now_ms)
{
	time_t t = (time_t)(wall_ms / 1000), n = (time_t)(now_ms / 1000);
	struct tm tm, tn;

	if (wall_ms <= 0) {
		snprintf(out, outsz, "-");
		return;
	}
	localtime_r(&t, &tm);
	localtime_r(&n, &tn);
	if (tm.tm_year == tn.tm_year && tm.tm_yday == tn.tm_yday)
		strftime(out, outsz, "%H:%M:%S", &tm);
	else
		strftime(out, outsz, "%m-%d %H:%M", &tm);
}

void
fmt_paren_inner(const char *open, char *out, size_t outsz)
{
	const char *q;
	size_t n;
	int depth = 0;

	for (q = open; *q; q++) {
		if (*q == '(')
			depth++;
		else if (*q == ')' && --depth == 0)
			break;
	}
	n = (size_t)(q - open - 1);
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, open + 1, n);
	out[n] = '\0';
}
