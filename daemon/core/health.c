/*
 * health: one-second buckets (indexed by second mod HEALTH_WINDOW_S; a
 * bucket from an older second counts as empty) and a ring of the last
 * HEALTH_RING successful durations with their times, sorted on demand for
 * percentiles (512 values: cheap enough per call, no allocation).
 */
#include "health.h"

#include <stdlib.h>

static int64_t
health_sec(int64_t ms)
{
	int64_t q = ms / 1000;

	if (ms % 1000 < 0)
		q--;
	return q;
}

void
health_init(struct health *h)
{
	int i;

	for (i = 0; i < HEALTH_WINDOW_S; i++) {
		h->buckets[i].sec = INT64_MIN;
		h->buckets[i].calls = 0;
		h->buckets[i].failures = 0;
	}
	h->ring_pos = 0;
	h->ring_n = 0;
}

void
health_record(struct health *h, int64_t now_ms, int success, int64_t duration_ms)
{
	int64_t sec = health_sec(now_ms);
	int idx = (int)(sec % HEALTH_WINDOW_S);
	struct health_bucket *k;

	if (idx < 0)
		idx += HEALTH_WINDOW_S;
	k = &h->buckets[idx];
	if (k->sec != sec) {
		k->sec = sec;
		k->calls = 0;
		k->failures = 0;
	}
	k->calls++;
	if (!success)
		k->failures++;
	else {
		h->ring[h->ring_pos].at_ms = now_ms;
		h->ring[h->ring_pos].duration_ms = duration_ms > 0 ? duration_ms : 0;
		h->ring_pos = (h->ring_pos + 1) % HEALTH_RING;
		if (h->ring_n < HEALTH_RING)
			h->ring_n++;
	}
}

void
health_counts(const struct health *h, int64_t now_ms, int *calls, int *failures)
{
	int64_t sec = health_sec(now_ms);
	int i, c = 0, f = 0;

	for (i = 0; i < HEALTH_WINDOW_S; i++) {
		if (h->buckets[i].sec > sec - HEALTH_WINDOW_S && h->buckets[i].sec <= sec) {
			c += h->buckets[i].calls;
			f += h->buckets[i].failures;
		}
	}
	if (calls != NULL)
		*calls = c;
	if (failures != NULL)
		*failures = f;
}

static int
health_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t
health_percentile(const struct health *h, int64_t now_ms, int window_s, double p, int min_samples)
{
	int64_t v[HEALTH_RING], since = now_ms - (int64_t)window_s * 1000, q = -1;
	int i, n = 0, rank;
	double r;

	for (i = 0; i < h->ring_n; i++) {
		if (h->ring[i].at_ms > since && h->ring[i].at_ms <= now_ms)
			v[n++] = h->ring[i].duration_ms;
	}
	if (n > 0 && n >= min_samples) {
		qsort(v, (size_t)n, sizeof v[0], health_cmp);
		if (!(p > 0.0))
			p = 0.0;
		if (p > 1.0)
			p = 1.0;
		r = p * n - 1e-9; /* 0.9 x 10 must be rank 9, not 10 */
		rank = (int)r;
		if ((double)rank < r)
			rank++;
		if (rank < 1)
			rank = 1;
		q = v[rank - 1];
	}
	return q;
}

double
health_score(const struct health *h, int64_t now_ms, int budget_ms, int inflight,
	     int max_concurrent)
{
	double rate = 1.0, latency = 1.0, load = 1.0, half, score, u;
	int64_t p99;
	int calls, failures;

	health_counts(h, now_ms, &calls, &failures);
	if (calls >= HEALTH_MIN_CALLS)
		rate = (double)(calls - failures) / calls;

	if (budget_ms > 0) {
		p99 = health_percentile(h, now_ms, HEALTH_WINDOW_S, 0.99, HEALTH_MIN_CALLS);
		half = budget_ms / 2.0;
		if (p99 >= budget_ms)
			latency = 0.1;
		else if (p99 > half)
			latency = 1.0 - 0.9 * ((double)p99 - half) / half;
	}

	if (max_concurrent > 0 && inflight > 0) {
		u = (double)inflight / max_concurrent;
		load = 1.0 - 0.5 * (u < 1.0 ? u : 1.0);
	}

	score = rate * latency * load;
	if (score < 0.01)
		score = 0.01;
	if (score > 1.0)
		score = 1.0;
	return score;
}
