#pragma once
/*
 * gate: what a backend admits besides its breaker, learnt from its own
 * answers — the adaptive concurrency limit (it moves the bulkhead's cap),
 * the provider's rate limits (headers and config), and the recent
 * first-byte times a hedge delay is taken from. The engine's backend_rt
 * holds the state; the pure parts are core/limiter, core/ratelimit and
 * core/hedge. Engine thread.
 */
#include <stddef.h>
#include <stdint.h>

#include "bulkhead.h"
#include "config.h"
#include "hedge.h"
#include "limiter.h"
#include "outcome.h"
#include "ratelimit.h"

/* One backend's gate (in its backend_rt); the adaptive limit is its bulkhead's cap. */
struct gate {
	const struct backend_cfg *cfg; /* the backend's; gate_reconfigure() follows a reload */
	struct limiter limiter;	       /* adaptive_concurrency */
	struct ratelimit rl;	       /* rate_limits and the provider's headers */
	struct hedge_window fb_window; /* recent first-byte times (hedge delays) */
	uint64_t rate_limited_local;   /* times the router skipped it: its rate limits were spent */
};

/* g for backend bc whose bulkhead is bh (engine_backend_rt_init). */
void gate_init(struct gate *g, const struct backend_cfg *bc, struct bulkhead *bh, int64_t now_ms);
/* The backend's configuration is now bc (reload): bounds and caps follow. */
void gate_reconfigure(struct gate *g, const struct backend_cfg *bc, struct bulkhead *bh,
		      int64_t now_ms);
/* One response header of an attempt on g's backend (name and trimmed value): rate-limit headers. */
void gate_header(struct gate *g, int64_t now_ms, const char *name, size_t name_len,
		 const char *value, size_t value_len);
/* A request with est_tokens (input + asked output) went to g's backend. */
void gate_sent(struct gate *g, int64_t now_ms, int64_t est_tokens);
/* 0: the known rate limits admit a request of est_tokens now; 1: it would be refused. */
int gate_rate_admits(const struct gate *g, int64_t now_ms, int64_t est_tokens);
/*
 * An attempt on g's backend ended with outcome o: first_byte_ms (-1: none) and
 * total_ms, inflight_start the backend's attempts in flight as it started.
 * Feeds the hedge window and the limiter and sets the bulkhead's cap to
 * the limit. 1 when the cap rose (waiters may be started), else 0.
 */
int gate_attempt_end(struct gate *g, struct bulkhead *bh, int64_t now_ms, int inflight_start,
		     int64_t first_byte_ms, int64_t total_ms, enum outcome o);
/*
 * An attempt cancelled without a first byte after running for age_ms
 * (it lost to its hedge): its first byte would have come later than that.
 * Kept as a sample of age_ms, so the tail that hedges cut short still
 * counts in the quantile a hedge waits for (else only the fast answers
 * would, and the delay would sink into the fast mode).
 */
void gate_first_byte_censored(struct gate *g, int64_t now_ms, int64_t age_ms);
/* The delay after which a call's attempt on g's backend is hedged; -1: no hedge. */
int64_t gate_hedge_delay_ms(const struct gate *g, const struct hedge_cfg *h, int64_t now_ms);
/*
 * Once a second (the cron): the limiter's ended window closes without
 * waiting for a sample, and the cap follows. 1 when the cap rose.
 */
int gate_tick(struct gate *g, struct bulkhead *bh, int64_t now_ms);
/* The reason a call leaves a step whose backends had no room: concurrency_limited or bulkhead_full.
 */
const char *gate_full_reason(const struct gate *g);
