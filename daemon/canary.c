/*
 * canary: windows, the pure rollback decision, and the engine glue.
 */
#include "canary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "control.h"
#include "engine.h"
#include "log.h"
#include "util.h"

int
canary_pick(const struct canary_guard_cfg *g, const struct canary_stat *t, int n,
	    double *canary_rate, double *baseline_rate)
{
	int64_t bcalls = 0, bfail = 0;
	double base, worst = -1;
	int i, pick = -1;

	for (i = 0; i < n; i++) {
		if (!t[i].canary) {
			bcalls += t[i].calls;
			bfail += t[i].failures;
		}
	}
	if (bcalls < g->min_calls || bcalls == 0)
		return -1;
	base = (double)bfail / (double)bcalls;
	for (i = 0; i < n; i++) {
		double rate;

		if (!t[i].canary || t[i].weight <= 0 || t[i].calls < g->min_calls || t[i].calls == 0)
			continue;
		rate = (double)t[i].failures / (double)t[i].calls;
		if (rate - base > g->max_failure_delta && rate > worst) {
			worst = rate;
			pick = i;
		}
	}
	if (pick >= 0) {
		*canary_rate = worst;
		*baseline_rate = base;
	}
	return pick;
}

void
canary_record(struct canary_track *tr, int64_t now_ms, int failure)
{
	int64_t sec = now_ms / 1000;
	struct canary_bucket *b = &tr->b[sec % CANARY_MAX_WINDOW_S];

	if (b->sec != sec) {
		b->sec = sec;
		b->calls = 0;
		b->failures = 0;
	}
	b->calls++;
	b->failures += failure != 0;
}

void
canary_sum(const struct canary_track *tr, int window_s, int64_t now_ms, int64_t *calls,
	   int64_t *failures)
{
	int64_t sec = now_ms / 1000;
	int i;

	*calls = *failures = 0;
	window_s = MAX(1, MIN(window_s, CANARY_MAX_WINDOW_S));
	for (i = 0; i < CANARY_MAX_WINDOW_S; i++) {
		const struct canary_bucket *b = &tr->b[i];

		if (b->calls && b->sec > sec - window_s && b->sec <= sec) {
			*calls += b->calls;
			*failures += b->failures;
		}
	}
}

/* Weight 0 for target `pick` of route i, with the rows that say why. */
static void
canary_rollback(struct engine *e, int i, int pick, double crate, double brate)
{
	struct route_rt *rt = &e->routes[i];
	const struct route_cfg *rc = rt->cfg;
	const struct control_who who = { "canary_guard", "-" };
	int *w = xcalloc((size_t)rc->ntargets, sizeof *w);
	char reason[200], *cause = NULL;
	int64_t now = clock_wall_ms();

	memcpy(w, rt->weights, (size_t)rc->ntargets * sizeof *w);
	w[pick] = 0;
	snprintf(reason, sizeof reason,
		 "canary %s failure rate %.2f exceeds the baseline %.2f by more than %.2f over %d s",
		 rc->targets[pick].backend, crate, brate, rc->canary_guard.max_failure_delta,
		 rc->canary_guard.window_s);
	if (control_weights_set(e, i, w, reason, &who, &cause) != 0) {
		log_error("canary", "route %s: rollback of %s failed: %s", rc->name,
			  rc->targets[pick].backend, cause ? cause : "?");
		goto out;
	}
	log_warn("canary", "route %s: %s", rc->name, reason);
	engine_event(e, "canary_rollback", rc->name, reason);
	{
		char rule[96];
		struct store_val v[] = { SVT(rule),	    SVT(rc->name), SVT("page"), SVT("firing"),
					 SVR(crate), SVR(brate + rc->canary_guard.max_failure_delta),
					 SVI(now) };

		snprintf(rule, sizeof rule, "canary_guard:%s", rc->targets[pick].backend);
		store_put(e->store, STORE_ALERT_INSERT, v, (int)ARRAY_SIZE(v));
	}
out:
	free(cause);
	free(w);
}

void
canary_tick(struct engine *e, int64_t now_ms)
{
	struct canary_stat st[64];
	int i, j, n, pick;
	double crate, brate;

	for (i = 0; i < e->nroutes; i++) {
		struct route_rt *rt = &e->routes[i];
		const struct route_cfg *rc = rt->cfg;

		if (!rc->canary_guard.enabled || rt->canary == NULL)
			continue;
		n = MIN(rc->ntargets, (int)ARRAY_SIZE(st));
		for (j = 0; j < n; j++) {
			st[j].canary = rc->targets[j].canary;
			st[j].weight = rt->weights[j];
			canary_sum(&rt->canary[j], rc->canary_guard.window_s, now_ms, &st[j].calls,
				   &st[j].failures);
		}
		pick = canary_pick(&rc->canary_guard, st, n, &crate, &brate);
		if (pick >= 0)
			canary_rollback(e, i, pick, crate, brate);
	}
}
