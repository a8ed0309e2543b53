#pragma once
/*
 * limiter: adaptive concurrency of one backend (backends[].adaptive_concurrency),
 * a gradient of the recent minimum latency against the current latency
 * (Netflix's gradient2, Envoy's adaptive concurrency) with AIMD backoff on
 * drops (timeouts, 429, 5xx). The caller admits an attempt while its
 * backend's in-flight count is below limiter_limit() and reports every
 * finished attempt with limiter_sample(). Pure (time is an argument), no
 * allocation; runs on the engine thread.
 */
#include <stdbool.h>
#include <stdint.h>

/* A recheck starts after this many windows in a row with a gradient below 1. */
#define LIMITER_RECHECK_AFTER 30
/* A recheck needs this many attempts started at the halved limit ... */
#define LIMITER_RECHECK_SAMPLES 10
/* ... within this many windows, else it is abandoned. */
#define LIMITER_RECHECK_WINDOWS 10
/* Shedding half the load "helped" when latency fell below this share. */
#define LIMITER_RECHECK_HELPED 0.9

struct limiter_cfg {
	bool enabled;  /* false: limiter_limit() is max_limit, samples are ignored */
	int min_limit; /* floor, >= 1 */
	int initial_limit;
	int max_limit;	      /* ceiling: the backend's max_concurrent */
	int window_ms;	      /* the limit moves at most once per window */
	double smoothing;     /* 0..1: weight of a window's new limit */
	double tolerance;     /* >= 1: latency may grow this much over the baseline */
	double backoff_ratio; /* a drop multiplies the limit by this (once a window) */
};

struct limiter {
	struct limiter_cfg cfg; /* sanitised copy */
	double limit;		/* the estimate, within [min_limit, max_limit] */
	double baseline_ms;	/* recent minimum of window latencies (0: none yet) */
	double latency_ms;	/* the last window's mean latency (0: none yet) */
	/* the open window */
	int64_t win_start_ms;
	int64_t win_sum_ms; /* latencies of the window's successful samples */
	int win_n;
	int win_max_inflight;
	bool win_drop; /* a drop backed off in this window */
	int elevated;  /* windows in a row with a gradient below 1 */
	/* the recheck of the baseline (see limiter.c) */
	bool recheck;
	int64_t recheck_until_ms;
	int recheck_limit;
	double recheck_before_ms; /* latency_ms when it started */
	int64_t recheck_sum_ms;
	int recheck_n;
	/* counters for state and metrics */
	uint64_t windows;  /* windows closed with samples */
	uint64_t backoffs; /* AIMD backoffs */
	uint64_t rechecks; /* rechecks completed */
};

/* Start at cfg->initial_limit (cfg borrowed: copied, sanitised into its bounds). */
void limiter_init(struct limiter *l, const struct limiter_cfg *cfg, int64_t now_ms);
/*
 * One finished attempt: latency_ms (to its first byte), inflight = the
 * backend's attempts in flight when it started, itself included, and drop
 * (a timeout, 429 or 5xx: the limit is multiplied by backoff_ratio, at most
 * once per window; a drop's latency is not a latency sample). A sample at
 * or after the end of the open window first closes that window.
 */
void limiter_sample(struct limiter *l, int64_t now_ms, int64_t latency_ms, int inflight, bool drop);
/* Close the open window when it has ended (and end an overdue recheck) without a sample. */
void limiter_tick(struct limiter *l, int64_t now_ms);
/* The current integer limit, always within [min_limit, max_limit]. */
int limiter_limit(const struct limiter *l);
/* The baseline (recent minimum) latency, 0 before the first window closed. */
double limiter_baseline_ms(const struct limiter *l);
/* The current short-term latency (the last closed window's mean), 0 before. */
double limiter_latency_ms(const struct limiter *l);
/* A recheck of the baseline is running (the limit is halved meanwhile). */
bool limiter_rechecking(const struct limiter *l);
