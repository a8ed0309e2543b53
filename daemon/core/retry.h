#pragma once
/*
 * retry: the retry decision of DESIGN.md step 6 (class, count, deadline,
 * retry budget), exponential backoff with jitter, Retry-After parsing, and
 * the per-route retry budget. Pure: time and chance are arguments.
 * Runs on the engine thread (one struct retry_budget per route).
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "outcome.h"
#include "rng.h"

enum retry_e {
	RETRY_E_CLASS = 1, /* class not in retry_on (never retry invalid output) */
	RETRY_E_EXHAUSTED, /* no retries left */
	RETRY_E_BUDGET,	   /* route retry budget spent */
	RETRY_E_DEADLINE,  /* backoff or Retry-After does not fit the remaining budget */
};

#define RETRY_BUDGET_WINDOW_S 10

struct retry_budget_bucket {
	int64_t sec; /* INT64_MIN: unused */
	int64_t calls;
	int64_t retries;
};

/* Calls and retries per second over the last RETRY_BUDGET_WINDOW_S seconds. */
struct retry_budget {
	struct retry_budget_bucket buckets[RETRY_BUDGET_WINDOW_S];
};

/*
 * Delay before the n-th retry (1-based): 0 for backoff none; exponential:
 * min(base_ms x multiplier^(n-1), max_ms), then +/- jitter (uniform in
 * [d(1-j), d(1+j)]) or, with jitter_full, uniform in [0, d]. rng may be
 * NULL for no jitter.
 */
int64_t retry_backoff_ms(const struct retry_cfg *rc, int n, struct rng *rng);

/*
 * Parse a Retry-After value of len bytes (not NUL-terminated, any bytes):
 * delta-seconds, or an HTTP-date (IMF-fixdate, RFC 850 or asctime) taken
 * relative to now_wall_ms (a date in the past waits 0). 0 and *out_ms >= 0,
 * or -EINVAL for anything else (negative, overflow, junk).
 */
int retry_parse_retry_after(const char *value, size_t len, int64_t now_wall_ms, int64_t *out_ms);

/*
 * Decide whether to retry after an attempt with outcome o. retries_done:
 * retries already made in this step; retry_after_ms: parsed Retry-After or
 * -1; remaining_ms: call budget left now. The wait is the backoff for retry
 * retries_done + 1, or the Retry-After when longer and honor_retry_after.
 * Checks, in order: o in retry_on and not a validation class (RETRY_E_CLASS),
 * retries_done < max_retries (RETRY_E_EXHAUSTED), remaining_ms - wait >=
 * min_attempt_ms (RETRY_E_DEADLINE), and last a token from rb when rb is
 * not NULL (RETRY_E_BUDGET; a token is only taken when the answer is 0).
 * 0 with *delay_ms set, or a RETRY_E_*.
 */
int retry_decide(const struct retry_cfg *rc, enum outcome o, int retries_done,
		 int64_t retry_after_ms, int64_t remaining_ms, int min_attempt_ms,
		 struct retry_budget *rb, int64_t now_ms, struct rng *rng, int64_t *delay_ms);

void retry_budget_init(struct retry_budget *rb);
/* Count one call on the route (every call, retried or not). */
void retry_budget_record_call(struct retry_budget *rb, int64_t now_ms);
/*
 * Take one retry token: allowed while retries in the last 10 s stay <=
 * max(ratio x calls in the last 10 s, min_per_s x 10). 0 (token taken) or
 * RETRY_E_BUDGET.
 */
int retry_budget_try_acquire(struct retry_budget *rb, double ratio, double min_per_s,
			     int64_t now_ms);
/* Calls and retries counted in the last 10 s, for metrics (either may be NULL). */
void retry_budget_counts(const struct retry_budget *rb, int64_t now_ms, int64_t *calls,
			 int64_t *retries);

/* "class", "exhausted", "budget", "deadline"; "ok" for 0; NULL otherwise. */
const char *retry_e_name(int e);
