#pragma once
/*
 * obs: what the engine observes, for SLOs and metrics. The call engine
 * reports every finished call, attempt, degradation and validation
 * failure here (engine thread); obs keeps the per-route per-minute SLO
 * counters (persisted to slo_minutes, reloaded at start), the counters
 * and histograms /metrics shows (metrics_page.c writes them), and feeds
 * the alert lifecycle (obs_alerts.c). Readers (the /v1/slo, /v1/alerts and
 * /metrics handlers) run on the engine thread too.
 */
#include <stdint.h>

#include "alerts.h"
#include "config.h"
#include "metrics.h"
#include "obs_alerts.h"
#include "outcome.h"
#include "slo.h"
#include "store.h"

#define OBS_LEVELS    4
#define OBS_MAX_NAMED 32 /* distinct degradation reasons / stages per route */

struct obs;
struct notify_stats;

struct call_obs {
	int route;	      /* index into config routes */
	enum source source;   /* SOURCE_NONE when exhausted (503) */
	unsigned http_status; /* 200, 202, 503, or 4xx for caller errors */
	int level;
	int degraded;
	const char *reason; /* NULL when not degraded */
	int64_t elapsed_ms;
	int64_t budget_ms;
	int attempts;
	int retries;
	int timeouts;	       /* attempts that ended first_byte_timeout / total_timeout */
	int format_violations; /* attempts that ended validation_format */
	int review;	       /* enqueued for review */
	int64_t wall_ms;       /* when the call finished */
};

struct attempt_obs {
	int route;
	int backend; /* index into config backends */
	enum outcome outcome;
	int64_t duration_ms;
	int canary;	      /* the target was a canary */
	int64_t input_tokens; /* usage the backend reported (0: none) */
	int64_t output_tokens;
};

int obs_new(const struct config *cfg, struct store *st, struct store_reader *rd,
	    int64_t now_wall_ms, struct obs **out, char **cause);
void obs_free(struct obs *o);
void obs_call(struct obs *o, const struct call_obs *c);
void obs_attempt(struct obs *o, const struct attempt_obs *a);
void obs_degradation(struct obs *o, int route, const char *reason);
void obs_validation_failure(struct obs *o, int route, const char *stage);
/*
 * After a reload: the same obs for ncfg (borrowed, outlives the obs);
 * routes, backends and alert episodes are matched by name, counters carry
 * over, SLO history is reloaded from slo_minutes. 0 or -errno with *cause
 * (then nothing changed).
 */
int obs_reconfigure(struct obs *o, const struct config *ncfg, int64_t now_wall_ms, char **cause);
/* Once a second from the engine cron: roll minutes, persist, evaluate alerts. */
void obs_tick(struct obs *o, int64_t now_wall_ms);

/*
 * Added by the obs module (engine thread). Counters the call path may
 * report besides calls (each lands in the minute of wall_ms and so in the
 * review_diff_rate / shadow_agreement / cross_check_agreement metrics).
 */
void obs_review_decided(struct obs *o, int route, int corrected, int64_t wall_ms);
void obs_shadow(struct obs *o, int route, int agree, int64_t wall_ms);
void obs_cross_check(struct obs *o, int route, int agree, int64_t wall_ms);

/* Readers for api_slo.c and metrics_page.c (engine thread). */
struct cJSON;
/* The /v1/slo body: route -1 for every route. Caller deletes. */
struct cJSON *obs_slo_json(struct obs *o, int route, int64_t now_wall_ms);
/* 1 while rule (of route) fires, 0 when not, -ENOENT for no such rule. */
int obs_alert_firing(struct obs *o, const char *rule, int route);

struct obs_named {
	char *name;
	uint64_t n;
};

/* What obs has counted of one route since start (kept over a reload). */
struct obs_route_counts {
	uint64_t calls[SOURCE__COUNT][OBS_LEVELS];
	uint64_t retries;
	uint64_t slo_total, slo_good[SLO_KIND__COUNT];
	uint64_t slo_eligible[SLO_KIND__COUNT];	  /* each kind's denominator (slo_total()) */
	struct obs_named degr[OBS_MAX_NAMED + 1]; /* the last one is "other" */
	int ndegr;
	struct obs_named vfail[OBS_MAX_NAMED + 1];
	int nvfail;
	struct metrics_hist duration;
};

/* What obs has counted of one backend since start. */
struct obs_backend_counts {
	uint64_t attempts[OUTCOME__COUNT];
	uint64_t tokens_in, tokens_out;
	struct metrics_hist duration;
};

/*
 * The read side of /metrics. Everything returned is borrowed until the
 * next obs_reconfigure(). Routes and backends are indexed as in the
 * config obs_config() returns (the one obs counts under); the counts are
 * NULL for an index out of range.
 */
const struct config *obs_config(const struct obs *o);
const struct obs_route_counts *obs_route_counts(const struct obs *o, int route);
const struct obs_backend_counts *obs_backend_counts(const struct obs *o, int backend);
/* The SLO sums of route over each window of enum slo_window. */
void obs_window_sums(const struct obs *o, int route, int64_t now_wall_ms,
		     struct slo_counts sums[WIN__COUNT]);
/* The alert rules and their alerts, indexed alike; returns how many. */
int obs_alert_list(const struct obs *o, const struct alert_rule **rules,
		   const struct alert **alerts);
/* The alert notifier's counters: 0, or -ENOENT when none runs. */
int obs_notify_stats(const struct obs *o, struct notify_stats *ns);
/*
 * Count a configuration reload by result (ok: applied; else refused), for
 * fusebox_config_reload_total{result}; o may be NULL.
 */
void obs_reload_counted(struct obs *o, int ok);
/* Reloads applied and refused so far (kept over a reload). */
void obs_reload_counts(const struct obs *o, uint64_t *applied, uint64_t *refused);
/* An alert another module raises (obs_alerts_set()); o may be NULL. */
void obs_alert_set(struct obs *o, const struct obs_alert_spec *sp, int cond, double value,
		   int64_t now_wall_ms);
/* Every alert, the rules' then the raised ones: how many, and the i-th. */
int obs_alert_count(const struct obs *o);
void obs_alert_get(const struct obs *o, int i, const struct alert_rule **rule,
		   const struct alert **alert);
/*
 * The SLO minutes of route from from_minute (epoch ms of a minute's start)
 * on, oldest first, at most max of them copied into out (minutes without
 * traffic have none). Returns how many; 0 for an unknown route.
 */
int obs_route_minutes(const struct obs *o, int route, int64_t from_minute, struct slo_minute *out,
		      int max);
