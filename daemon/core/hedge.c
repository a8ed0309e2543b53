/*
 * hedge: the hedge delay (hedge.h).
 *
 * Design: a ring of the last HEDGE_RING successful first-byte times; the
 * quantile is computed on demand over those of the last HEDGE_WINDOW_MS
 * (nearest rank, as health.c's percentiles). Until HEDGE_MIN_SAMPLES are in
 * the window the delay is max_ms: a hedge then still cuts a hung attempt
 * short, but a cold start does not guess a tail from a handful of answers.
 * Pure; runs on the engine thread.
 */
#include "hedge.h"

#include <stdlib.h>
#include <string.h>

void
hedge_window_init(struct hedge_window *w)
{
	memset(w, 0, sizeof *w);
}

void
hedge_window_add(struct hedge_window *w, int64_t now_ms, int64_t first_byte_ms)
{
	w->ring[w->pos].at_ms = now_ms;
	w->ring[w->pos].first_byte_ms = first_byte_ms > 0 ? first_byte_ms : 0;
	w->pos = (w->pos + 1) % HEDGE_RING;
	if (w->n < HEDGE_RING)
		w->n++;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t
hedge_window_quantile(const struct hedge_window *w, int64_t now_ms, double q, int min_samples)
{
	int64_t v[HEDGE_RING], since = now_ms - HEDGE_WINDOW_MS;
	double r;
	int i, n = 0, rank;

	for (i = 0; i < w->n; i++) {
		if (w->ring[i].at_ms > since && w->ring[i].at_ms <= now_ms)
			v[n++] = w->ring[i].first_byte_ms;
	}
	if (n == 0 || n < min_samples)
		return -1;
	qsort(v, (size_t)n, sizeof v[0], cmp_i64);
	if (!(q > 0.0))
		q = 0.0;
	if (q > 1.0)
		q = 1.0;
	r = q * n - 1e-9; /* 0.95 x 20 is rank 19, not 20 */
	rank = (int)r;
	if ((double)rank < r)
		rank++;
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

int64_t
hedge_delay_ms(const struct hedge_cfg *h, const struct hedge_window *w, int64_t now_ms)
{
	int64_t d;

	if (h == NULL || !h->enabled)
		return -1;
	if (h->after_ms > 0)
		return h->after_ms;
	d = w != NULL ? hedge_window_quantile(w, now_ms, h->after_quantile, HEDGE_MIN_SAMPLES) : -1;
	if (d < 0)
		return h->max_ms;
	if (d < h->min_ms)
		d = h->min_ms;
	if (d > h->max_ms)
		d = h->max_ms;
	return d;
}

const char *
hedge_targets_name(enum hedge_targets t)
{
	switch (t) {
	case HEDGE_SAME:
		return "same";
	case HEDGE_OTHER:
		return "other";
	}
	return NULL;
}
