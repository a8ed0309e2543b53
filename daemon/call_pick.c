/*
 * call_pick: which backend a model step's attempt goes to, and starting
 * it there (the slot and permit held; a slot handed back goes to the
 * oldest waiter). The router's
 * candidates are the step's targets with their live weights (x health
 * when the route weighs it), less those whose breaker refuses, whose
 * bulkhead is full with no queue, or whose known rate limit is spent
 * until its reset; the reason a step is left when none remains. And the
 * gates' cron: their limiters' windows close on time, and a cap that rose
 * starts queued calls. Engine thread.
 */
#include <string.h>

#include "attempt.h"
#include "breaker.h"
#include "call_int.h"
#include "clock.h"
#include "engine.h"
#include "gate.h"
#include "health.h"
#include "log.h"
#include "router.h"
#include "util.h"
#include "wire.h"

#define MAX_TARGETS 64

void
call_bulkhead_granted(struct engine *e, struct bulkhead_waiter *w)
{
	engine_timer_arm(e, &((struct call *)w->arg)->t_queue, clock_mono_us());
}

/* Hand a backend's bulkhead slot back; a waiting call gets it on the next turn. */
void
call_slot_leave(struct engine *e, struct backend_rt *b)
{
	struct bulkhead_waiter *w = bulkhead_leave(&b->bulkhead);

	if (w)
		engine_timer_arm(e, &((struct call *)w->arg)->t_queue, clock_mono_us());
}

struct attempt *
call_attempt_start(struct call *c, int bidx, int is_probe, int canary, int target, int64_t now_us)
{
	struct attempt *a;

	if (c->natt >= CALL_MAX_INFLIGHT) { /* cannot happen: hedges stop below */
		log_ctx(LOG_LEVEL_ERROR, "call", &CALL_LOG_CTX(c), "%s %s: %d attempts in flight",
			c->rc->name, c->request_id, c->natt);
		return NULL;
	}
	a = attempt_start(&c->own, bidx, c->step == STEP_BACKUP, is_probe, canary, target, now_us);
	a->inflight_start = c->e->backends[bidx].bulkhead.inflight;
	c->att[c->natt++] = a;
	return a;
}

int
call_target_index(const struct call *c, int picked)
{
	return c->step == STEP_PRIMARY && c->force_bidx < 0 && c->rt->cfg == c->rc ? picked : -1;
}

int
call_target_backend(const struct call *c, const struct target_cfg *t)
{
	if (c->hold->cfg == c->e->cfg || c->force_bidx >= 0)
		return t->backend_idx;
	return engine_backend_index(c->e, t->backend);
}

int
call_pick_target(struct call *c, int avoid_bidx, int *bidx_out, int *picked, const char **why)
{
	struct engine *e = c->e;
	const struct route_cfg *rc = c->rc;
	const struct target_cfg *targets =
		c->step == STEP_PRIMARY ? rc->targets : rc->backup.targets;
	int n = c->step == STEP_PRIMARY ? rc->ntargets : rc->backup.ntargets;
	struct router_cand cand[MAX_TARGETS];
	struct target_cfg forced;
	int64_t now_ms = clock_mono_ms();
	int i, bidx, avoid = -1, any_open = 0, any_full = 0, any_weight = 0, any_rated = 0;
	const char *full = WIRE_REASON_BULKHEAD_FULL;
	struct backend_rt *b;

	n = MIN(n, MAX_TARGETS);
	if (c->force_bidx >= 0) {
		/* a cross-check: its one backend, whatever the route's targets */
		memset(&forced, 0, sizeof forced);
		forced.backend = e->backends[c->force_bidx].cfg->name;
		forced.backend_idx = c->force_bidx;
		forced.weight = 1;
		targets = &forced;
		n = 1;
	}
	for (i = 0; i < n; i++) {
		double w = c->step == STEP_PRIMARY && c->rt->cfg == rc && c->force_bidx < 0
				   ? c->rt->weights[i]
				   : targets[i].weight;

		bidx = call_target_backend(c, &targets[i]);
		cand[i].id = i;
		cand[i].eligible = 0;
		cand[i].weight = 0;
		if (bidx < 0)
			continue;
		if (bidx == avoid_bidx)
			avoid = i;
		b = &e->backends[bidx];
		cand[i].eligible = 1;
		if (w > 0)
			any_weight = 1;
		if (breaker_admits(&b->breaker, now_ms) != 0) {
			cand[i].eligible = 0;
			if (w > 0)
				any_open = 1;
		} else if (b->bulkhead.inflight >= b->bulkhead.max && b->cfg->queue_ms <= 0) {
			cand[i].eligible = 0;
			if (w > 0) {
				any_full = 1;
				full = gate_full_reason(&b->gate);
			}
		} else if (w > 0 && gate_rate_admits(&b->gate, now_ms, c->est_tokens) != 0) {
			/* its known rate limit is spent until the reset: a request would be refused
			 */
			cand[i].eligible = 0;
			any_rated = 1;
			b->gate.rate_limited_local++;
		}
		engine_breaker_events(e, b);
		/* health only matters when there is a choice (it sorts latencies) */
		if (rc->health_weighting && n > 1)
			w *= health_score(&b->health, now_ms, rc->budget_ms, b->bulkhead.inflight,
					  b->bulkhead.max);
		cand[i].weight = w;
	}
	if (router_pick(cand, n, avoid, &e->rng, picked) != 0) {
		*why = any_open	    ? WIRE_REASON_BREAKER_OPEN
		       : any_rated  ? WIRE_REASON_RATE_LIMITED_LOCAL
		       : any_full   ? full
		       : any_weight ? WIRE_REASON_NO_TARGET
				    : WIRE_REASON_NO_WEIGHT;
		return 1;
	}
	*bidx_out = call_target_backend(c, &targets[*picked]);
	return 0;
}

void
call_gate_tick(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	struct bulkhead_waiter *w;
	int i;

	for (i = 0; i < e->nbackends; i++) {
		struct backend_rt *b = &e->backends[i];

		if (gate_tick(&b->gate, &b->bulkhead, now_ms))
			while ((w = bulkhead_next(&b->bulkhead)) != NULL)
				call_bulkhead_granted(e, w);
	}
}
