/*
 * gate: the adaptive limit, the rate limits and the hedge window of one
 * backend, applied to its runtime state. The decisions are the pure
 * modules'; this file feeds them an attempt's facts and turns the limit
 * into the bulkhead's cap (over it calls queue for queue_ms, then fall
 * with concurrency_limited).
 */
#include "gate.h"

#include <string.h>
#include <strings.h>

#include "util.h"
#include "wire.h"

static struct limiter_cfg
gate_limiter_cfg(const struct backend_cfg *bc)
{
	struct limiter_cfg lc = bc->adaptive;

	lc.max_limit = bc->max_concurrent;
	return lc;
}

void
gate_init(struct gate *g, const struct backend_cfg *bc, struct bulkhead *bh, int64_t now_ms)
{
	struct limiter_cfg lc = gate_limiter_cfg(bc);

	memset(g, 0, sizeof *g);
	g->cfg = bc;
	limiter_init(&g->limiter, &lc, now_ms);
	ratelimit_init(&g->rl, &g->cfg->rate_limits);
	hedge_window_init(&g->fb_window);
	if (lc.enabled)
		bulkhead_set_max(bh, limiter_limit(&g->limiter));
}

static int
gate_limiter_cfg_eq(const struct limiter_cfg *x, const struct limiter_cfg *y)
{
	return x->enabled == y->enabled && x->min_limit == y->min_limit &&
	       x->initial_limit == y->initial_limit && x->max_limit == y->max_limit &&
	       x->window_ms == y->window_ms && x->smoothing == y->smoothing &&
	       x->tolerance == y->tolerance && x->backoff_ratio == y->backoff_ratio;
}

void
gate_reconfigure(struct gate *g, const struct backend_cfg *bc, struct bulkhead *bh, int64_t now_ms)
{
	struct limiter_cfg lc = gate_limiter_cfg(bc);
	struct limiter fresh;

	/* what was learnt stays while the limiter's settings do not change;
	 * new settings start it again from initial_limit */
	g->cfg = bc;
	limiter_init(&fresh, &lc, now_ms);
	if (!gate_limiter_cfg_eq(&fresh.cfg, &g->limiter.cfg))
		g->limiter = fresh;
	g->rl.cfg = g->cfg->rate_limits;
	bulkhead_set_max(bh, lc.enabled ? limiter_limit(&g->limiter) : g->cfg->max_concurrent);
}

void
gate_header(struct gate *g, int64_t now_ms, const char *name, size_t name_len, const char *value,
	    size_t value_len)
{
	ratelimit_header(&g->rl, now_ms, name, name_len, value, value_len);
}

void
gate_sent(struct gate *g, int64_t now_ms, int64_t est_tokens)
{
	ratelimit_sent(&g->rl, now_ms, (int)MIN(est_tokens, (int64_t)1 << 30));
}

int
gate_rate_admits(const struct gate *g, int64_t now_ms, int64_t est_tokens)
{
	return ratelimit_admits(&g->rl, now_ms, (int)MIN(est_tokens, (int64_t)1 << 30), NULL) == 0
		       ? 0
		       : 1;
}

int
gate_attempt_end(struct gate *g, struct bulkhead *bh, int64_t now_ms, int inflight_start,
		 int64_t first_byte_ms, int64_t total_ms, enum outcome o)
{
	int before = bh->max, drop;

	if (o == OUTCOME_OK && first_byte_ms >= 0)
		hedge_window_add(&g->fb_window, now_ms, first_byte_ms);
	if (!g->limiter.cfg.enabled || o == OUTCOME_HEDGE_CANCELLED)
		return 0;
	/* the upstream pushing back: the limit backs off (AIMD) */
	drop = outcome_is_timeout(o) || o == OUTCOME_HTTP_429 || o == OUTCOME_HTTP_5XX;
	/* a 4xx or a connect error says nothing about the server's queue */
	if (!drop && o != OUTCOME_OK && !outcome_is_validation(o))
		return 0;
	limiter_sample(&g->limiter, now_ms, first_byte_ms >= 0 ? first_byte_ms : total_ms,
		       inflight_start, drop);
	bulkhead_set_max(bh, limiter_limit(&g->limiter));
	return bh->max > before;
}

void
gate_first_byte_censored(struct gate *g, int64_t now_ms, int64_t age_ms)
{
	hedge_window_add(&g->fb_window, now_ms, age_ms);
}

int
gate_tick(struct gate *g, struct bulkhead *bh, int64_t now_ms)
{
	int before = bh->max;

	if (!g->limiter.cfg.enabled)
		return 0;
	limiter_tick(&g->limiter, now_ms);
	bulkhead_set_max(bh, limiter_limit(&g->limiter));
	return bh->max > before;
}

int64_t
gate_hedge_delay_ms(const struct gate *g, const struct hedge_cfg *h, int64_t now_ms)
{
	return hedge_delay_ms(h, &g->fb_window, now_ms);
}

const char *
gate_full_reason(const struct gate *g)
{
	return g->limiter.cfg.enabled ? WIRE_REASON_CONCURRENCY_LIMITED : WIRE_REASON_BULKHEAD_FULL;
}
