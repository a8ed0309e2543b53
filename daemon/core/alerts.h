#pragma once
/*
 * alerts: pure alert rules and their state machine (DESIGN.md "Alert").
 * Threshold-for-duration rules from routes[].slo.alerts and, when
 * slo.burn_rate_alerts, the multi-window multi-burn-rate pairs for the
 * service and smart SLOs. inactive -> pending (condition true) -> firing
 * (true for for_s) -> resolved (false); pending -> inactive when the
 * condition goes away before for_s. Time is an argument; no I/O: the
 * caller (obs.c, engine thread) logs, stores and posts each transition.
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "slo.h"

enum alert_state {
	ALERT_INACTIVE = 0,
	ALERT_PENDING,
	ALERT_FIRING,
	ALERT_RESOLVED, /* behaves as inactive; kept so the last change shows */
	ALERT__COUNT
};

/* "inactive", "pending", "firing", "resolved"; NULL if out of range. */
const char *alert_state_name(enum alert_state s);
/* 0 and *out, or -EINVAL. */
int alert_state_parse(const char *name, enum alert_state *out);
/* "<", "<=", ">", ">=" */
const char *alert_op_name(enum alert_op op);

/*
 * EXTERNAL: raised by another module (the canary guard, the review queue)
 * that hands in its condition; same lifecycle, rows and delivery.
 */
enum alert_kind { ALERT_KIND_THRESHOLD = 0, ALERT_KIND_BURN, ALERT_KIND_EXTERNAL };

/* One multi-window burn-rate pair (the short window is 1/12 of the long). */
struct alert_burn_pair {
	const char *name; /* "1h": the long window names the pair */
	double factor;
	int long_min;
	int short_min;
	enum severity severity;
};

#define ALERT_NBURN_PAIRS 4
/* 14.4x 1h&5m and 6x 6h&30m page; 3x 1d&2h and 1x 3d&6h ticket. */
extern const struct alert_burn_pair alert_burn_pairs[ALERT_NBURN_PAIRS];

/* A rule for one route. Strings borrowed from the config except name. */
struct alert_rule {
	char name[80];
	/*
	 * The labels every alert carries, the daemon's and the fleet rules'
	 * alike (docs/OBSERVABILITY.md): alertname "fusebox_..." (burn pairs:
	 * fusebox_error_budget_burn, threshold rules: fusebox_<name>), kind
	 * (burn: service|smart, threshold: its metric) and window ("1h").
	 */
	char alertname[96];
	char kind_label[40];
	char window_label[16];
	int route; /* index into config routes */
	enum alert_kind kind;
	enum severity severity;
	int for_s;
	int min_calls; /* fewer calls in the window (burn: in either window): false */
	/* threshold rules */
	const char *metric;
	enum alert_op op;
	double threshold; /* burn rules: the factor */
	int window_min;	  /* burn rules: the long window */
	/* burn rules */
	enum slo_kind slo;
	double target;
	int short_min;
	int reachable; /* 0: factor x (1 - target) > 1, can never fire */
};

/*
 * Every rule of cfg: per route, its slo.alerts in order, then (when
 * burn_rate_alerts) service then smart for each pair, named
 * "<kind>-burn-<long>" ("service-burn-1h"). *out is caller-freed (free()).
 * Returns the number of rules (>= 0).
 */
int alert_rules_build(const struct config *cfg, struct alert_rule **out);
/* "fusebox_" + name with every character but [A-Za-z0-9_] made '_'. */
void alert_name_make(const char *name, char *out, size_t n);
/* A window's label: "5m", "2h", "30d". */
void alert_window_label(int minutes, char *out, size_t n);

/*
 * Evaluate r's condition over the window sums: lng is the (long) window,
 * shrt the short window of a burn pair (ignored for threshold rules).
 * Returns 1 (true) or 0; *value gets the metric (burn rules: the smaller of
 * the two burn rates), NAN when there is too little data.
 */
int alert_condition(const struct alert_rule *r, const struct slo_counts *lng,
		    const struct slo_counts *shrt, double *value);

struct alert_transition {
	int64_t at_ms;
	enum alert_state from, to;
	double value;
};

/*
 * The live state of one rule. Only alert_set_state() (alerts.c) writes
 * state; the caller compares ntransitions to emit rows and events.
 */
struct alert {
	const struct alert_rule *rule;
	enum alert_state state;
	int64_t since_ms;    /* start of the episode (first pending/firing) */
	int64_t state_at_ms; /* when state was entered */
	double value;	     /* last evaluated value */
	uint64_t ntransitions;
	struct alert_transition last;
};

void alert_init(struct alert *a, const struct alert_rule *r);
/*
 * Resume an episode found in the alerts table after a restart (pending or
 * firing since since_ms); not a transition. 0 or -EINVAL.
 */
int alert_restore(struct alert *a, enum alert_state state, int64_t since_ms, int64_t state_at_ms);
/* Point a at r, the same rule in a reloaded configuration; state is kept. */
void alert_rebind(struct alert *a, const struct alert_rule *r);
/*
 * Feed the condition at now_ms: at most one transition per call. Returns 1
 * when the state changed (see a->last), else 0.
 */
int alert_update(struct alert *a, int cond, double value, int64_t now_ms);
/* Active means pending or firing. */
int alert_is_active(const struct alert *a);
