#pragma once
/*
 * canary_guard: the canary guard's windows and its rollback decision
 * (CONFIG.md routes[].canary_guard). Per primary target of a route,
 * 1-second buckets of attempts and failures (transport and validation)
 * over window_s; canary_pick() compares each canary target with the
 * pooled non-canary baseline. Pure: time comes in as now_ms. The action
 * (weight 0, rows, alert) is canary.c's, on the engine thread.
 */
#include <stdint.h>

#include "config.h"

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
	int64_t calls; /* in the window */
	int64_t failures;
};

/*
 * The canary to roll back: the index of the canary target (weight > 0,
 * >= min_calls) whose failure rate exceeds the pooled non-canary baseline
 * (>= min_calls) by more than max_failure_delta — the worst one when
 * several do — or -1. *canary_rate / *baseline_rate are set when an index
 * is returned. Pure.
 */
int canary_pick(const struct canary_guard_cfg *g, const struct canary_stat *t, int n,
		double *canary_rate, double *baseline_rate);

/* Count one primary-step attempt on target `target` of its window. */
void canary_record(struct canary_track *tr, int64_t now_ms, int failure);
/* Calls and failures of tr over the last window_s seconds. */
void canary_sum(const struct canary_track *tr, int window_s, int64_t now_ms, int64_t *calls,
		int64_t *failures);
