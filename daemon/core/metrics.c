/*
 * metrics: Prometheus text exposition.
 *
 * The writer appends to one bounded buffer; after the first failed append
 * every call is a no-op and metrics_finish() reports the error, so callers
 * need not check each line. Values print in the shortest form that reads
 * back exactly (integers without a decimal point).
 */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double metrics_duration_bounds[METRICS_HIST_NBOUNDS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120,
};

void
metrics_hist_observe(struct metrics_hist *h, double v)
{
	int i;

	for (i = 0; i < METRICS_HIST_NBOUNDS; i++)
		if (v <= metrics_duration_bounds[i])
			break;
	h->bucket[i]++;
	h->count++;
	h->sum += v;
}

void
metrics_init(struct metrics *m, size_t max_bytes)
{
	buf_init(&m->buf, max_bytes);
	m->err = 0;
}

void
metrics_free(struct metrics *m)
{
	buf_free(&m->buf);
	m->err = 0;
}

static void
put(struct metrics *m, const char *s, size_t n)
{
	int r;

	if (m->err)
		return;
	r = buf_append(&m->buf, s, n);
	if (r != 0)
		m->err = r;
}

static void
puts_(struct metrics *m, const char *s)
{
	put(m, s, strlen(s));
}

/* Escape \ and newline, and " too when quote is set. */
static void
put_escaped(struct metrics *m, const char *s, int quote)
{
	const char *p, *run = s;

	for (p = s; *p; p++) {
		const char *rep = NULL;

		if (*p == '\\')
			rep = "\\\\";
		else if (*p == '\n')
			rep = "\\n";
		else if (*p == '"' && quote)
			rep = "\\\"";
		if (rep == NULL)
			continue;
		put(m, run, (size_t)(p - run));
		puts_(m, rep);
		run = p + 1;
	}
	put(m, run, (size_t)(p - run));
}

void
metrics_format_value(double v, char *out, size_t outlen)
{
	if (isnan(v))
		snprintf(out, outlen, "NaN");
	else if (isinf(v))
		snprintf(out, outlen, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(out, outlen, "%.0f", v);
	else {
		snprintf(out, outlen, "%.15g", v);
		if (strtod(out, NULL) != v)
			snprintf(out, outlen, "%.17g", v);
	}
}

void
metrics_family(struct metrics *m, const char *name, enum metrics_type type, const char *help)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};

	puts_(m, "# HELP ");
	puts_(m, name);
	puts_(m, " ");
	put_escaped(m, help, 0);
	puts_(m, "\n# TYPE ");
	puts_(m, name);
	puts_(m, " ");
	puts_(m, types[type]);
	puts_(m, "\n");
}

static void
put_labels(struct metrics *m, const struct metrics_label *labels, int nlabels, const char *le)
{
	int i;

	if (nlabels <= 0 && le == NULL)
		return;
	puts_(m, "{");
	for (i = 0; i < nlabels; i++) {
		if (i > 0)
			puts_(m, ",");
		puts_(m, labels[i].name);
		puts_(m, "=\"");
		put_escaped(m, labels[i].value ? labels[i].value : "", 1);
		puts_(m, "\"");
	}
	if (le != NULL) {
		if (nlabels > 0)
			puts_(m, ",");
		puts_(m, "le=\"");
		puts_(m, le);
		puts_(m, "\"");
	}
	puts_(m, "}");
}

static void
put_line(struct metrics *m, const char *name, const char *suffix,
	 const struct metrics_label *labels, int nlabels, const char *le, double value)
{
	char num[64];

	puts_(m, name);
	puts_(m, suffix);
	put_labels(m, labels, nlabels, le);
	metrics_format_value(value, num, sizeof num);
	puts_(m, " ");
	puts_(m, num);
	puts_(m, "\n");
}

void
metrics_sample(struct metrics *m, const char *name, const struct metrics_label *labels, int nlabels,
	       double value)
{
	put_line(m, name, "", labels, nlabels, NULL, value);
}

void
metrics_histogram(struct metrics *m, const char *name, const struct metrics_label *labels,
		  int nlabels, const struct metrics_hist *h)
{
	char le[64];
	uint64_t cum = 0;
	int i;

	for (i = 0; i < METRICS_HIST_NBOUNDS; i++) {
		cum += h->bucket[i];
		metrics_format_value(metrics_duration_bounds[i], le, sizeof le);
		put_line(m, name, "_bucket", labels, nlabels, le, (double)cum);
	}
	put_line(m, name, "_bucket", labels, nlabels, "+Inf", (double)h->count);
	put_line(m, name, "_sum", labels, nlabels, NULL, h->sum);
	put_line(m, name, "_count", labels, nlabels, NULL, (double)h->count);
}

int
metrics_finish(struct metrics *m, char **out, size_t *len)
{
	int ret = m->err;

	*out = NULL;
	*len = 0;
	if (ret == 0) {
		*len = m->buf.len;
		*out = buf_steal(&m->buf);
	}
	metrics_free(m);
	return ret;
}

int
metrics_proc_parse(const char *stat, struct metrics_proc *out)
{
	const char *p = strrchr(stat, ')');
	unsigned long long v[22];
	char state;
	int field, n;

	/* Fields after the comm: 3 state, then 4 .. 24; the last ')' ends the comm. */
	if (p == NULL || sscanf(p + 1, " %c%n", &state, &n) != 1)
		return -EINVAL;
	p += 1 + n;
	for (field = 0; field < 21; field++) {
		char *end;

		while (*p == ' ')
			p++;
		if (*p == '-')
			p++; /* a negative field (priority, nice): its magnitude is unused */
		v[field] = strtoull(p, &end, 10);
		if (end == p)
			return -EINVAL;
		p = end;
	}
	/* v[0] is field 4 (ppid): utime 14, stime 15, threads 20, start 22, vsize 23, rss 24. */
	out->utime_ticks = v[10];
	out->stime_ticks = v[11];
	out->threads = v[16];
	out->start_ticks = v[18];
	out->vsize_bytes = v[19];
	out->rss_pages = v[20];
	return 0;
}
