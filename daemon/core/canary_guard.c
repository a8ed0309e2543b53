/*
 * canary_guard: windows and the pure rollback decision.
 */
#include "canary_guard.h"

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

		if (!t[i].canary || t[i].weight <= 0 || t[i].calls < g->min_calls ||
		    t[i].calls == 0)
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
