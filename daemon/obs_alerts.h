#pragma once
/*
 * obs_alerts: the alert lifecycle of obs. The alert rules of a config,
 * their episodes (resumed from the alerts table at start), and each
 * transition logged, stored and posted to the alert webhook and/or
 * Alertmanager. Engine thread; obs.c drives it and feeds it window sums.
 */
#include <stddef.h>
#include <stdint.h>

#include "alerts.h"
#include "config.h"
#include "slo.h"
#include "store.h"

struct obs_alerts;
struct notify_stats;

/*
 * The alert rules of cfg, all inactive; warns about burn-rate pairs that
 * can never fire. cfg, st and rd are borrowed and outlive the result (st
 * and rd may be NULL: nothing stored or restored).
 */
struct obs_alerts *obs_alerts_new(const struct config *cfg, struct store *st,
				  struct store_reader *rd);
void obs_alerts_free(struct obs_alerts *o);
/*
 * Resume the episodes the previous run left pending/firing; those of rules
 * no longer configured are stored resolved.
 */
void obs_alerts_restore(struct obs_alerts *o, int64_t now_wall_ms);
/*
 * Start the notifier when the config has a webhook or Alertmanager.
 * 0 or -errno with *cause.
 */
int obs_alerts_notify_start(struct obs_alerts *o, char **cause);
/*
 * After a reload, the rules of ncfg (borrowed, outlives o): an episode
 * continues when its rule (name, route) still exists, the others are
 * stored resolved. 0, or -errno with *cause when the notifier cannot be
 * started (then nothing changed).
 */
int obs_alerts_reconfigure(struct obs_alerts *o, const struct config *ncfg, int64_t now_wall_ms,
			   char **cause);
/*
 * Evaluate the rules of route over sums[i], the sums of the last
 * windows[i] minutes (i < n, windows ascending); log, store and post each
 * transition.
 */
void obs_alerts_eval(struct obs_alerts *o, int route, const int *windows,
		     const struct slo_counts *sums, int n, int64_t now_wall_ms);
/* Re-send the firing alerts to Alertmanager, at most once a minute. */
void obs_alerts_resend(struct obs_alerts *o, int64_t now_wall_ms);
/*
 * The rules and their alerts, indexed alike (borrowed until the next
 * obs_alerts_reconfigure); returns how many.
 */
int obs_alerts_list(const struct obs_alerts *o, const struct alert_rule **rules,
		    const struct alert **alerts);
/* The notifier's counters: 0, or -ENOENT when none runs. */
int obs_alerts_notify_stats(const struct obs_alerts *o, struct notify_stats *ns);
/* A window's label: "5m", "2h", "30d". */
void obs_alerts_window_label(int minutes, char *out, size_t n);

/*
 * An alert raised by another module (the canary guard, the review queue):
 * the same lifecycle (for_s 0: firing while cond holds, resolved when it
 * stops), rows, events, delivery and /metrics series as a rule's. Strings
 * borrowed for the call.
 */
struct obs_alert_spec {
	const char *rule;      /* its name in the alerts table: "review_overflow" */
	const char *alertname; /* "fusebox_review_overflow" */
	int route;	       /* index into config routes */
	const char *kind;      /* the kind label: "review", "canary" */
	const char *window;    /* the window label: "5m" */
	enum severity severity;
	double threshold;
	const char *summary; /* what is wrong, one line (kept when NULL) */
	const char *backend; /* an extra backend label, or NULL */
};

/*
 * Feed the condition of the alert sp names (created on first use, resuming
 * an episode the alerts table shows open); a transition is logged, stored
 * and posted.
 */
void obs_alerts_set(struct obs_alerts *o, const struct obs_alert_spec *sp, int cond, double value,
		    int64_t now_wall_ms);
/* Rules' alerts then raised ones: how many, and the i-th (borrowed). */
int obs_alerts_count(const struct obs_alerts *o);
void obs_alerts_get(const struct obs_alerts *o, int i, const struct alert_rule **rule,
		    const struct alert **alert);
