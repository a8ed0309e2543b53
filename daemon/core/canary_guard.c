/*
 * canary_guard: windows and the pure rollback decision.
 */
#include "canary_guard.h"

#include <string.h>

#include "util.h"

int
canary_pick(const struct canary_guard_cfg *g, const struct canary_stat *t, int n,
	    double *canary_rate, double *baseline_rate)
{
	int64_t bcalls = 0, bfail = 0;
	double base, worst = -1, wbase = 0;
	int i, pick = -1;

	for (i = 0; i < n; i++) {
		if (!t[i].canary) {
			bcalls += t[i].calls;
			bfail += t[i].failures;
		}
	}
	base = bcalls > 0 ? (double)bfail / (double)bcalls : 0;
	for (i = 0; i < n; i++) {
		double rate, b = base;
		int64_t bc = bcalls;

		if (!t[i].canary || t[i].weight <= 0 || t[i].calls < g->min_calls ||
		    t[i].calls == 0)
			continue;
		if (t[i].aligned) {
			b = t[i].baseline;
			bc = t[i].base_calls;
		}
		if (bc < g->min_calls || bc == 0)
			continue;
		rate = (double)t[i].failures / (double)t[i].calls;
		if (rate - b > g->max_failure_delta && rate > worst) {
			worst = rate;
			wbase = b;
			pick = i;
		}
	}
	if (pick >= 0) {
		*canary_rate = worst;
		*baseline_rate = wbase;
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

int
canary_failure(enum outcome o)
{
	return o != OUTCOME_OK;
}

void
canary_record_outcome(struct canary_track *tr, int64_t now_ms, enum outcome o)
{
	canary_record(tr, now_ms, canary_failure(o));
}

void
canary_reset(struct canary_track *tr)
{
	memset(tr, 0, sizeof *tr);
}

int
canary_slice_s(int window_s)
{
	return MAX(1, MIN(window_s / 10, 60));
}

/* Calls and failures of tr in second sec (0 when its bucket is older). */
static void
bucket_at(const struct canary_track *tr, int64_t sec, int64_t *calls, int64_t *failures)
{
	const struct canary_bucket *b =
		&tr->b[((sec % CANARY_MAX_WINDOW_S) + CANARY_MAX_WINDOW_S) % CANARY_MAX_WINDOW_S];

	if (b->calls && b->sec == sec) {
		*calls += b->calls;
		*failures += b->failures;
	}
}

void
canary_align(const struct canary_track *const *tracks, int n, int window_s, int64_t now_ms,
	     struct canary_stat *t)
{
	int64_t now = now_ms / 1000, first, from, sec;
	int i, j, slice;

	window_s = MAX(1, MIN(window_s, CANARY_MAX_WINDOW_S));
	slice = canary_slice_s(window_s);
	first = now - window_s + 1;
	for (i = 0; i < n; i++) {
		t[i].aligned = 0;
		t[i].baseline = 0;
		t[i].base_calls = 0;
		if (!t[i].canary)
			canary_sum(tracks[i], window_s, now_ms, &t[i].calls, &t[i].failures);
		else
			t[i].calls = t[i].failures = 0;
	}
	for (i = 0; i < n; i++) {
		double expected = 0;

		if (!t[i].canary)
			continue;
		for (from = first; from <= now; from += slice) {
			int64_t cn = 0, cf = 0, bn = 0, bf = 0;

			for (sec = from; sec < from + slice && sec <= now; sec++) {
				bucket_at(tracks[i], sec, &cn, &cf);
				for (j = 0; j < n; j++)
					if (!t[j].canary)
						bucket_at(tracks[j], sec, &bn, &bf);
			}
			if (cn == 0 || bn == 0)
				continue; /* one side had no calls: not comparable */
			t[i].calls += cn;
			t[i].failures += cf;
			t[i].base_calls += bn;
			expected += (double)cn * (double)bf / (double)bn;
		}
		t[i].aligned = 1;
		t[i].baseline = t[i].calls > 0 ? expected / (double)t[i].calls : 0;
	}
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
