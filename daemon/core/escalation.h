#pragma once
/*
 * escalation: a route's automatic level (DESIGN.md "Route level"). Pure
 * state machine with an injected clock: l1_after consecutive validation
 * failures at L0 → L1; l2_after consecutive calls no model answered (at L1,
 * or at L0 where the backup failed them too) → L2; route error rate over
 * window_s ≥ error_rate (with ≥ min_calls) → L2; after
 * recover_after_s at a level the route steps one level back up (and
 * escalates again if it fails). An operator's forced level overrides the
 * auto level elsewhere (engine); this module only knows "auto". Engine
 * thread.
 */
#include <stdint.h>

#include "config.h"

#define ESCALATION_MAX_WINDOW_S 600

/*
 * What one finished call says about the route's model rungs (flags):
 * VFAIL — the starting model step answered but failed validation;
 * ERROR — no model answered (the call fell below the model rungs);
 * SKIPPED — the call never tried a model (L2, allow_llm false).
 */
enum escalation_flags {
	ESC_F_VFAIL = 1,
	ESC_F_ERROR = 2,
	ESC_F_SKIPPED = 4,
};
#define ESC_OK		    0				/* a model answered, validated */
#define ESC_VALIDATION_FAIL (ESC_F_VFAIL | ESC_F_ERROR) /* invalid, and nothing better came */
#define ESC_VFAIL_RESCUED   ESC_F_VFAIL /* invalid at the start step, the backup answered */
#define ESC_FAIL	    ESC_F_ERROR /* transport, breaker, budget: no model answered */
#define ESC_SKIPPED	    ESC_F_SKIPPED

struct escalation_bucket {
	int64_t sec;
	int calls;
	int errors;
};

struct escalation {
	int level;		/* auto level 0..2 */
	int64_t level_since_ms; /* when the current level began */
	int consecutive_vfail;	/* at L0 */
	int consecutive_fail;	/* calls no model answered, at L0 or L1 */
	struct escalation_bucket buckets[ESCALATION_MAX_WINDOW_S];
	uint64_t changes;      /* bumped by every level change */
	char last_reason[128]; /* why the last change happened */
};

void escalation_init(struct escalation *x, int64_t now_ms);
/*
 * Record a call that started at auto level `level` (a forced level's calls
 * are not recorded) with its ESC_F_* flags. At L0 a validation failure
 * counts toward l1_after and a clean model answer resets the run; at L0
 * and L1 a call no model answered counts toward l2_after and one a model
 * answered (the backup included) resets that run; when a call completes
 * both runs at L0, L1 wins (the smaller step). The error rate counts the
 * calls no model answered (a backup that answers is not an outage).
 * Returns the new auto level (== x->level).
 */
int escalation_record(struct escalation *x, const struct escalation_cfg *cfg, int64_t now_ms,
		      int level, unsigned flags);
/* Recovery by time; call about once a second. Returns the auto level. */
int escalation_tick(struct escalation *x, const struct escalation_cfg *cfg, int64_t now_ms);
/* Error rate and calls over the last window_s seconds. */
double escalation_error_rate(const struct escalation *x, const struct escalation_cfg *cfg,
			     int64_t now_ms, int *calls);
