#pragma once
/*
 * obs: what the engine observes, for SLOs and metrics. The call engine
 * reports every finished call, attempt, degradation and validation
 * failure here (engine thread); obs keeps the per-route per-minute SLO
 * counters (persisted to slo_minutes, reloaded at start), the Prometheus
 * counters and histograms, and feeds the alert evaluator. Readers (the
 * /v1/slo, /v1/alerts and /metrics handlers) run on the engine thread too.
 */
#include <stdint.h>

#include "config.h"
#include "outcome.h"
#include "store.h"

struct obs;

struct call_obs {
	int route;		/* index into config routes */
	enum source source;	/* SOURCE_NONE when exhausted (503) */
	unsigned http_status;	/* 200, 202, 503, or 4xx for caller errors */
	int level;
	int degraded;
	const char *reason;	/* NULL when not degraded */
	int64_t elapsed_ms;
	int64_t budget_ms;
	int attempts;
	int retries;
	int timeouts;		/* attempts that ended first_byte_timeout / total_timeout */
	int format_violations;	/* attempts that ended validation_format */
	int review;		/* enqueued for review */
	int64_t wall_ms;	/* when the call finished */
};

struct attempt_obs {
	int route;
	int backend;		/* index into config backends */
	enum outcome outcome;
	int64_t duration_ms;
	int canary;		/* the target was a canary */
};

int obs_new(const struct config *cfg, struct store *st, struct store_reader *rd, int64_t now_wall_ms,
	    struct obs **out, char **cause);
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

/* Readers for api_slo.c (engine thread). */
struct metrics;
struct cJSON;
/* The /v1/slo body: route -1 for every route. Caller deletes. */
struct cJSON *obs_slo_json(struct obs *o, int route, int64_t now_wall_ms);
/* The obs-owned /metrics families (calls, attempts, retries, degradations,
 * validation failures, durations, SLO availabilities, alert firing). */
void obs_metrics_write(struct obs *o, struct metrics *m, int64_t now_wall_ms);
/* 1 while rule (of route) fires, 0 when not, -ENOENT for no such rule. */
int obs_alert_firing(struct obs *o, const char *rule, int route);
