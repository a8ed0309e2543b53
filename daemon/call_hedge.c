/*
 * call_hedge: hedged attempts of a call (route retry.hedge).
 *
 * When a call's one attempt has no first byte after the hedge delay
 * (after_ms, or a quantile of the backend's recent successful first-byte
 * times), and the budget still has min_attempt_ms, a second attempt starts
 * beside it — on another backend of the step when targets is "other" and
 * there is one, else the same. A hedge takes a retry-budget token (hedges
 * can never raise upstream traffic past the retry budget), a bulkhead slot
 * without queueing and a breaker permit; when any is refused the hedge is
 * not sent (counted as denied). The first valid answer wins and the other
 * attempts end at once as hedge_cancelled (no breaker verdict). A stream
 * hedges only before its first byte: the first attempt to send a delta
 * becomes the call's streamer and the others are cancelled on the next
 * turn (never from inside a libcurl callback).
 */
#include <string.h>

#include "attempt.h"
#include "breaker.h"
#include "call_int.h"
#include "clock.h"
#include "engine.h"
#include "gate.h"
#include "log.h"
#include "retry.h"
#include "trace.h"

/* Does any attempt of c in flight have its first byte (a stream: its first delta)? */
static int
hedge_any_first_byte(const struct call *c)
{
	int i;

	for (i = 0; i < c->natt; i++) {
		const struct attempt *a = c->att[i];

		if (a->streaming ? a->committed : a->got_headers)
			return 1;
	}
	return 0;
}

static void
hedge_fire(struct timer *t, void *arg)
{
	struct call *c = arg;
	struct engine *e = c->e;
	const struct hedge_cfg *h = &c->rc->retry.hedge;
	int64_t now_us = clock_mono_us(), now_ms = now_us / 1000;
	struct attempt *first, *a;
	int bidx, picked, is_probe = 0;
	const char *why = NULL;
	struct backend_rt *b;

	if (c->answered || c->natt == 0 || c->natt >= CALL_MAX_INFLIGHT || c->deadline_passed ||
	    c->hedges >= h->max_hedges || hedge_any_first_byte(c))
		return;
	if (budget_attempt_room(&c->budget, now_ms) < c->rc->min_attempt_ms)
		return; /* not worth a request: it could not finish */
	first = c->att[0];
	if (h->targets == HEDGE_OTHER) {
		if (call_pick_target(c, first->bidx, &bidx, &picked, &why) != 0)
			goto denied;
	} else {
		bidx = first->bidx;
		picked = first->target;
	}
	b = &e->backends[bidx];
	if (bulkhead_enter(&b->bulkhead) != 0)
		goto denied; /* a hedge never queues: it is a bet on idle capacity */
	if (breaker_allow(&b->breaker, now_ms, &is_probe) != 0) {
		struct bulkhead_waiter *w = bulkhead_leave(&b->bulkhead);

		if (w)
			call_bulkhead_granted(e, w);
		engine_breaker_events(e, b);
		goto denied;
	}
	engine_breaker_events(e, b);
	/* after the bulkhead and breaker: a token is only spent on a hedge that goes */
	if (retry_budget_try_acquire(&c->rt->rbudget, c->rc->retry.budget_ratio,
				     c->rc->retry.budget_min_per_s, now_ms) != 0) {
		struct bulkhead_waiter *w;

		breaker_record(&b->breaker, now_ms, BREAKER_IGNORE, OUTCOME_HEDGE_CANCELLED, 0,
			       is_probe);
		w = bulkhead_leave(&b->bulkhead);
		if (w)
			call_bulkhead_granted(e, w);
		c->rt->retries_denied++;
		goto denied;
	}
	c->hedges++;
	a = call_attempt_start(
		c, bidx, is_probe,
		h->targets == HEDGE_OTHER && c->force_bidx < 0 && c->step == STEP_PRIMARY
			? c->rc->targets[picked].canary
		: h->targets == HEDGE_OTHER ? 0
					    : first->canary,
		h->targets == HEDGE_OTHER ? call_target_index(c, picked) : first->target, now_us);
	if (a == NULL)
		return;
	a->is_hedge = 1;
	if (c->span.o != NULL) {
		const char *kv[] = {"backend", b->cfg->name};

		trace_event(&c->span, "fusebox.hedge", call_wall_ns(clock_wall_ms()), kv, 1);
	}
	log_ctx(LOG_LEVEL_DEBUG, "call",
		&(struct logline_ctx){c->request_id, c->rc->name, b->cfg->name},
		"%s %s: hedge on %s after %lld ms", c->rc->name, c->request_id, b->cfg->name,
		(long long)((now_us - first->started_us) / 1000));
	/* more hedges: one more delay each */
	if (c->hedges < h->max_hedges) {
		int64_t d = gate_hedge_delay_ms(&e->backends[first->bidx].gate, h, now_ms);

		if (d >= 0)
			engine_timer_arm(e, &c->t_hedge, now_us + d * 1000);
	}
	return;
denied:
	c->rt->hedges[HEDGE_DENIED]++;
}

/* A stream committed: the other attempts are cancelled on this turn, outside curl's callbacks. */
static void
unhedge_fire(struct timer *t, void *arg)
{
	call_hedge_cancel_others(arg);
}

void
call_hedge_init(struct call *c)
{
	timer_init(&c->t_hedge, "hedge", hedge_fire, c);
	timer_init(&c->t_unhedge, "unhedge", unhedge_fire, c);
}

void
call_hedge_arm(struct call *c, int64_t now_us)
{
	const struct hedge_cfg *h = &c->rc->retry.hedge;
	int64_t d;

	if (!h->enabled || c->xcheck || c->hedges >= h->max_hedges || c->natt != 1)
		return;
	d = gate_hedge_delay_ms(&c->att[0]->b->gate, h, now_us / 1000);
	if (d >= 0)
		engine_timer_arm(c->e, &c->t_hedge, now_us + d * 1000);
}

void
call_hedge_cancel_others(struct call *c)
{
	int i;

	engine_timer_cancel(c->e, &c->t_hedge);
	engine_timer_cancel(c->e, &c->t_unhedge);
	/* attempt_stop() runs done(), which takes the attempt out of c->att[] */
	for (i = c->natt - 1; i >= 0; i--)
		if (i < c->natt && c->att[i] != c->streamer)
			attempt_stop(c->att[i], OUTCOME_HEDGE_CANCELLED);
}

int
call_hedge_may_commit(struct attempt *a, void *arg)
{
	struct call *c = arg;

	if (c->streamer == NULL) {
		c->streamer = a;
		engine_timer_cancel(c->e, &c->t_hedge);
		if (c->natt > 1)
			engine_timer_arm(c->e, &c->t_unhedge, clock_mono_us());
	}
	return c->streamer == a;
}
