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
#include "obs.h"
#include "util.h"

/* The rollback alert of target j of route i (one per canary target). */
static void
canary_alert(struct engine *e, int i, int j, int cond, double value, double threshold,
	     const char *summary, int64_t now_wall)
{
	const struct route_cfg *rc = e->routes[i].cfg;
	char rule[96], window[16];
	struct obs_alert_spec sp;

	snprintf(rule, sizeof rule, "canary_guard:%s", rc->targets[j].backend);
	alert_window_label((rc->canary_guard.window_s + 59) / 60, window, sizeof window);
	sp = (struct obs_alert_spec){
		.rule = rule,
		.alertname = "fusebox_canary_rollback",
		.route = i,
		.kind = "canary",
		.window = window,
		.severity = SEVERITY_PAGE,
		.threshold = threshold,
		.summary = summary,
		.backend = rc->targets[j].backend,
	};
	obs_alert_set(e->obs, &sp, cond, value, now_wall);
}

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
	canary_alert(e, i, pick, 1, crate, brate + rc->canary_guard.max_failure_delta, reason, now);
out:
	free(cause);
	free(w);
}

void
canary_tick(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	struct canary_stat st[64];
	const struct canary_track *tracks[64];
	int i, j, n, pick;
	double crate, brate;

	for (i = 0; i < e->nroutes; i++) {
		struct route_rt *rt = &e->routes[i];
		const struct route_cfg *rc = rt->cfg;

		if (!rc->canary_guard.enabled || rt->canary == NULL)
			continue;
		n = MIN(rc->ntargets, (int)ARRAY_SIZE(st));
		for (j = 0; j < n; j++) {
			memset(&st[j], 0, sizeof st[j]);
			st[j].canary = rc->targets[j].canary;
			st[j].weight = rt->weights[j];
			tracks[j] = &rt->canary[j];
			/* A canary back at a weight resolves its rollback alert. */
			if (st[j].canary && st[j].weight > 0)
				canary_alert(e, i, j, 0, 0, 0, NULL, now_wall_ms);
		}
		canary_align(tracks, n, rc->canary_guard.window_s, now_ms, st);
		pick = canary_pick(&rc->canary_guard, st, n, &crate, &brate);
		if (pick >= 0)
			canary_rollback(e, i, pick, crate, brate, now_wall_ms);
	}
}
