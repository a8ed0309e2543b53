/*
 * escalation: the auto-level state machine.
 *
 * Invariant: level changes only in escalation_set(), which records the
 * reason, bumps `changes` and resets the consecutive counters and the
 * error window (a new level is judged on its own calls).
 */
#include "escalation.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

static int
window_s(const struct escalation_cfg *cfg)
{
	return MAX(1, MIN(cfg->window_s, ESCALATION_MAX_WINDOW_S));
}

static void
escalation_set(struct escalation *x, int64_t now_ms, int level, const char *reason)
{
	if (level == x->level)
		return;
	snprintf(x->last_reason, sizeof x->last_reason, "auto %d -> %d (%s)", x->level, level,
		 reason);
	x->level = level;
	x->level_since_ms = now_ms;
	x->consecutive_vfail = 0;
	x->consecutive_fail = 0;
	memset(x->buckets, 0, sizeof x->buckets);
	x->changes++;
}

void
escalation_init(struct escalation *x, int64_t now_ms)
{
	memset(x, 0, sizeof *x);
	x->level_since_ms = now_ms;
}

double
escalation_error_rate(const struct escalation *x, const struct escalation_cfg *cfg, int64_t now_ms,
		      int *calls)
{
	int64_t sec = now_ms / 1000;
	int w = window_s(cfg), i, n = 0, err = 0;

	for (i = 0; i < ESCALATION_MAX_WINDOW_S; i++) {
		const struct escalation_bucket *b = &x->buckets[i];

		if (b->calls > 0 && b->sec > sec - w && b->sec <= sec) {
			n += b->calls;
			err += b->errors;
		}
	}
	if (calls)
		*calls = n;
	return n ? (double)err / n : 0.0;
}

int
escalation_record(struct escalation *x, const struct escalation_cfg *cfg, int64_t now_ms, int level,
		  unsigned r)
{
	struct escalation_bucket *b;
	int64_t sec = now_ms / 1000;
	char reason[96];
	double rate;
	int calls;

	if (!cfg->enabled || (r & ESC_F_SKIPPED) || level != x->level)
		return x->level;
	b = &x->buckets[sec % ESCALATION_MAX_WINDOW_S];
	if (b->sec != sec) {
		b->sec = sec;
		b->calls = 0;
		b->errors = 0;
	}
	b->calls++;
	if (r & ESC_F_ERROR)
		b->errors++;
	/* A call no model answered fell through every model rung below its
	 * start, the backup's included: at L0 as at L1 it is evidence against
	 * L1, so the run counts at both levels (a route whose primary and
	 * backup are both down goes to L2 after l2_after calls, not after the
	 * error rate has outweighed the healthy calls still in its window). */
	if (r & ESC_F_ERROR)
		x->consecutive_fail++;
	else
		x->consecutive_fail = 0;
	if (level == 0) {
		if (r & ESC_F_VFAIL)
			x->consecutive_vfail++;
		else if (r == ESC_OK)
			x->consecutive_vfail = 0;
		/* the smaller step first: L1 is judged on its own calls */
		if (cfg->l1_after > 0 && x->consecutive_vfail >= cfg->l1_after) {
			snprintf(reason, sizeof reason, "%d consecutive validation failures at L0",
				 x->consecutive_vfail);
			escalation_set(x, now_ms, 1, reason);
			return x->level;
		}
	}
	if (cfg->l2_after > 0 && x->consecutive_fail >= cfg->l2_after) {
		if (level == 0)
			snprintf(reason, sizeof reason,
				 "%d consecutive failures at L0, backup included",
				 x->consecutive_fail);
		else
			snprintf(reason, sizeof reason, "%d consecutive failures at L1",
				 x->consecutive_fail);
		escalation_set(x, now_ms, 2, reason);
		return x->level;
	}
	if (x->level < 2) {
		rate = escalation_error_rate(x, cfg, now_ms, &calls);
		if (calls >= MAX(cfg->min_calls, 1) && rate >= cfg->error_rate) {
			snprintf(reason, sizeof reason,
				 "error rate %.2f >= %.2f over %d calls in %d s", rate,
				 cfg->error_rate, calls, window_s(cfg));
			escalation_set(x, now_ms, 2, reason);
		}
	}
	return x->level;
}

int
escalation_tick(struct escalation *x, const struct escalation_cfg *cfg, int64_t now_ms)
{
	char reason[64];

	if (!cfg->enabled || x->level == 0)
		return x->level;
	if (now_ms - x->level_since_ms >= (int64_t)cfg->recover_after_s * 1000) {
		snprintf(reason, sizeof reason, "%d s at level %d: trying one level up",
			 cfg->recover_after_s, x->level);
		escalation_set(x, now_ms, x->level - 1, reason);
	}
	return x->level;
}
