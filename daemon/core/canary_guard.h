#pragma once
/*
 * canary_guard: the canary guard's windows and its rollback decision
 * (CONFIG.md routes[].canary_guard). Per primary target of a route,
 * 1-second buckets of attempts and failures over window_s, a failure
 * being any outcome class but ok (canary_failure(): the same measure on
 * both sides, whatever each backend's breaker counts). canary_align()
 * compares each canary with the pooled non-canary baseline over the same
 * time: only slices of the window where both sides had calls, the baseline
 * weighted by the canary's calls in each slice, so an outage both sides
 * share is not the canary's. canary_pick() decides. Pure: time comes in
 * as now_ms. The action (weight 0, rows, alert) is canary.c's, on the
 * engine thread.
 */
#include <stdint.h>

#include "config.h"
#include "outcome.h"

#define CANARY_MAX_WINDOW_S 3600

struct canary_bucket {
	int64_t sec;
	int calls;
	int failures;
};

/* One target's window (allocated per route when the guard is on). */
struct canary_track {
	struct canary_bucket b[CANARY_MAX_WINDOW_S];
};

struct canary_stat {
	int canary;    /* the target is a canary */
	int weight;    /* its live weight */
	int64_t calls; /* in the window (aligned: in the slices both sides had calls) */
	int64_t failures;
	/* canary_align() sets these on canary targets; then the pool is not used */
	int aligned;
	double baseline;    /* the baseline's failure rate at the canary's calls */
	int64_t base_calls; /* baseline calls in the slices counted */
};

/*
 * The canary to roll back: the index of the canary target (weight > 0,
 * >= min_calls) whose failure rate exceeds the pooled non-canary baseline
 * (>= min_calls) by more than max_failure_delta — the worst one when
 * several do — or -1. An aligned canary is compared with its own
 * baseline and base_calls instead of the pool. *canary_rate /
 * *baseline_rate are set when an index is returned. Pure.
 */
int canary_pick(const struct canary_guard_cfg *g, const struct canary_stat *t, int n,
		double *canary_rate, double *baseline_rate);

/* Count one primary-step attempt on target `target` of its window. */
void canary_record(struct canary_track *tr, int64_t now_ms, int failure);
/* 1 when an attempt that ended o counts as a failure for the guard. */
int canary_failure(enum outcome o);
/* canary_record() with canary_failure(o). */
void canary_record_outcome(struct canary_track *tr, int64_t now_ms, enum outcome o);
/* Empty tr: an operator's weight change restarts the target's window. */
void canary_reset(struct canary_track *tr);
/* The slice width for a window: window_s / 10, within 1 .. 60 s. */
int canary_slice_s(int window_s);
/*
 * Fill t[0 .. n) from the tracks of the route's n primary targets (canary
 * flags and weights already set in t): non-canary entries get their window
 * sums; each canary the calls and failures of the slices where both it
 * and the pooled baseline had calls, with baseline and base_calls over
 * the same slices (aligned = 1).
 */
void canary_align(const struct canary_track *const *tracks, int n, int window_s, int64_t now_ms,
		  struct canary_stat *t);
/* Calls and failures of tr over the last window_s seconds. */
void canary_sum(const struct canary_track *tr, int window_s, int64_t now_ms, int64_t *calls,
		int64_t *failures);
