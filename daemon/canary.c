/*
 * canary: the engine glue of the canary guard (the decision is
 * core/canary_guard.c).
 */
#include "canary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "engine.h"
#include "log.h"
#include "util.h"

/* Weight 0 for target `pick` of route i, with the rows that say why. */
static void
canary_rollback(struct engine *e, int i, int pick, double crate, double brate, int64_t now)
{
	struct route_rt *rt = &e->routes[i];
	const struct route_cfg *rc = rt->cfg;
	const struct control_who who = {"canary_guard", "-"};
	int *w = xcalloc((size_t)rc->ntargets, sizeof *w);
	char reason[200], *cause = NULL;

	memcpy(w, rt->weights, (size_t)rc->ntargets * sizeof *w);
	w[pick] = 0;
	snprintf(
		reason, sizeof reason,
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
		struct store_val v[] = {
			SVT(rule),   SVT(rc->name),
			SVT("page"), SVT("firing"),
			SVR(crate),  SVR(brate + rc->canary_guard.max_failure_delta),
			SVI(now)};

		snprintf(rule, sizeof rule, "canary_guard:%s", rc->targets[pick].backend);
		store_put(e->store, STORE_ALERT_INSERT, v, (int)ARRAY_SIZE(v));
	}
out:
	free(cause);
	free(w);
}

void
canary_tick(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
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
			canary_rollback(e, i, pick, crate, brate, now_wall_ms);
	}
}
