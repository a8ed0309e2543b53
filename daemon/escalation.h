#pragma once
/*
 * escalation: a route's automatic level (DESIGN.md "Route level"). Pure
 * state machine with an injected clock: l1_after consecutive validation
 * failures at L0 → L1; l2_after consecutive failures at L1 → L2; route
 * error rate over window_s ≥ error_rate (with ≥ min_calls) → L2; after
 * recover_after_s at a level the route steps one level back up (and
 * escalates again if it fails). An operator's forced level overrides the
 * auto level elsewhere (engine); this module only knows "auto". Engine
 * thread.
 */
#include <stdint.h>

#include "config.h"

#define ESCALATION_MAX_WINDOW_S 600

/* What one finished call says about the route's model rungs. */
enum escalation_result {
	ESC_OK = 0,	       /* answered by the model step it started at */
	ESC_VALIDATION_FAIL,   /* the model answered but failed validation (then fell) */
	ESC_FAIL,	       /* the model step failed otherwise (transport, breaker, budget) */
	ESC_SKIPPED,	       /* the call never tried a model (L2, allow_llm false) */
};

struct escalation_bucket {
	int64_t sec;
	int calls;
	int errors;
};

struct escalation {
	int level;		/* auto level 0..2 */
	int64_t level_since_ms; /* when the current level began */
	int consecutive_vfail;	/* at L0 */
	int consecutive_fail;	/* at L1 */
	struct escalation_bucket buckets[ESCALATION_MAX_WINDOW_S];
	uint64_t changes;	/* bumped by every level change */
	char last_reason[128];	/* why the last change happened */
};

void escalation_init(struct escalation *x, int64_t now_ms);
/*
 * Record a call that started at auto level `level` (a forced level's calls
 * are not recorded). Returns the new auto level (== x->level).
 */
int escalation_record(struct escalation *x, const struct escalation_cfg *cfg, int64_t now_ms,
		      int level, enum escalation_result r);
/* Recovery by time; call about once a second. Returns the auto level. */
int escalation_tick(struct escalation *x, const struct escalation_cfg *cfg, int64_t now_ms);
/* Error rate and calls over the last window_s seconds. */
double escalation_error_rate(const struct escalation *x, const struct escalation_cfg *cfg,
			     int64_t now_ms, int *calls);
