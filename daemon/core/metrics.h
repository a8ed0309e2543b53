#pragma once
/*
 * metrics: a Prometheus text exposition (format 0.0.4) writer and a
 * fixed-bucket histogram. Pure: builds text in a bounded buffer; the first
 * error (-E2BIG at the ceiling) sticks and is returned by metrics_finish().
 * Not thread-safe; used on the engine thread by /metrics.
 */
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum metrics_type { METRICS_COUNTER = 0, METRICS_GAUGE, METRICS_HISTOGRAM };

struct metrics_label {
	const char *name;
	const char *value; /* escaped when written: \ " and newline */
};

struct metrics {
	struct buf buf;
	int err;
};

/* Upper bounds (seconds) of the duration histograms, +Inf implied. */
#define METRICS_HIST_NBOUNDS 15
extern const double metrics_duration_bounds[METRICS_HIST_NBOUNDS];

/* A histogram with metrics_duration_bounds; counts per bucket, not cumulative. */
struct metrics_hist {
	uint64_t bucket[METRICS_HIST_NBOUNDS + 1]; /* last: above the largest bound */
	uint64_t count;
	double sum;
};

void metrics_hist_observe(struct metrics_hist *h, double v);

void metrics_init(struct metrics *m, size_t max_bytes);
/* # HELP and # TYPE lines of one family (help escaped: \ and newline). */
void metrics_family(struct metrics *m, const char *name, enum metrics_type type, const char *help);
/* One sample line: name{labels} value. */
void metrics_sample(struct metrics *m, const char *name, const struct metrics_label *labels,
		    int nlabels, double value);
/* name_bucket{labels,le=...} (cumulative), name_sum and name_count. */
void metrics_histogram(struct metrics *m, const char *name, const struct metrics_label *labels,
		       int nlabels, const struct metrics_hist *h);
/*
 * Hand over the text (*out caller-frees, *len its length) and reset m.
 * 0, or the first error (then *out is NULL). m must be finished or freed.
 */
int metrics_finish(struct metrics *m, char **out, size_t *len);
void metrics_free(struct metrics *m);
/* Format a sample value as Prometheus does: integers plainly, NaN, +Inf, -Inf. */
void metrics_format_value(double v, char *out, size_t outlen);

/* What /proc/self/stat tells of the process (proc(5)). */
struct metrics_proc {
	uint64_t utime_ticks, stime_ticks; /* CPU time, clock ticks */
	uint64_t start_ticks;		   /* start after boot, clock ticks */
	uint64_t vsize_bytes;
	uint64_t rss_pages;
	uint64_t threads;
};

/* Parse the text of /proc/self/stat (the comm may hold spaces and ')'). 0 or -EINVAL. */
int metrics_proc_parse(const char *stat, struct metrics_proc *out);
