#pragma once
/*
 * health: per-backend sliding window of attempt results -> a score in
 * 0.01..1 for health-weighted routing, and latency percentiles of
 * successful attempts (dynamic timeouts). Pure; runs on the engine thread.
 */
#include <stdint.h>

#define HEALTH_WINDOW_S	 60
#define HEALTH_RING	 512
#define HEALTH_MIN_CALLS 5 /* below this the success rate (and p99) count as perfect */

struct health_bucket {
	int64_t sec; /* INT64_MIN: unused */
	int calls;
	int failures;
};

struct health_sample {
	int64_t at_ms;
	int64_t duration_ms;
};

struct health {
	struct health_bucket buckets[HEALTH_WINDOW_S]; /* indexed by second mod HEALTH_WINDOW_S */
	struct health_sample ring[HEALTH_RING];	       /* the last successful attempts */
	int ring_pos;				       /* next slot to write */
	int ring_n;
};

void health_init(struct health *h);
/* Record one attempt (success: the transport and output were fine). */
void health_record(struct health *h, int64_t now_ms, int success, int64_t duration_ms);
/*
 * Score = success rate over the last HEALTH_WINDOW_S s (1.0 below
 * HEALTH_MIN_CALLS calls) x latency factor (p99 of successful durations in
 * the window vs budget_ms: 1.0 up to budget/2, linear down to 0.1 at budget;
 * 1.0 below HEALTH_MIN_CALLS samples) x load factor (1 - 0.5 x
 * inflight/max_concurrent), floored at 0.01 so a recovered backend gets
 * traffic again.
 */
double health_score(const struct health *h, int64_t now_ms, int budget_ms, int inflight,
		    int max_concurrent);
/*
 * p-quantile (0..1, nearest rank) of successful durations recorded less
 * than window_s seconds before now_ms (among the last HEALTH_RING); -1 when
 * fewer than min_samples (or none).
 */
int64_t health_percentile(const struct health *h, int64_t now_ms, int window_s, double p,
			  int min_samples);
/* Calls and failures in the last HEALTH_WINDOW_S seconds (either may be NULL). */
void health_counts(const struct health *h, int64_t now_ms, int *calls, int *failures);
