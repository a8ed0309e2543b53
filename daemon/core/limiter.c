/*
 * limiter: adaptive concurrency (limiter.h).
 *
 * Design: samples are gathered in windows of cfg.window_ms. When a window
 * with successful samples closes, its mean latency s (first byte, at least
 * 1 ms) moves the limit once, gradient2's way:
 *
 *	gradient = clamp(tolerance x baseline / s, 0.5, 1.0)
 *	new      = limit x gradient + sqrt(limit)	(sqrt: the queue allowed)
 *	limit    = (1 - smoothing) x limit + smoothing x new, clamped to the bounds
 *
 * so the limit grows while latency stays within tolerance of the baseline
 * and shrinks, at most halving per window, when it does not. Its fixed
 * point under a steady gradient g < 1 is 1 / (1 - g)^2 (16 at g = 0.75, 4 at
 * the floor 0.5), so latency alone never drives it to min_limit; drops do.
 * A window whose busiest moment used less than half the limit cannot grow
 * it (the backend was not asked for more, so its latency says nothing about
 * more); it can still shrink it. A window with a drop does not move the
 * limit by the gradient: the backoff (limit x backoff_ratio, applied when
 * the drop arrives, once per window) was its move. A window without
 * samples changes nothing.
 *
 * The baseline is the recent minimum of window means: it follows a lower
 * window at once and never creeps upwards by itself — a baseline that
 * drifts towards the current latency (gradient2's long EWMA) lets the
 * limit climb out of an overload it is meant to hold, by several percent a
 * minute. It is corrected by evidence instead: after LIMITER_RECHECK_AFTER
 * windows in a row with a gradient below 1, a recheck halves the limit until
 * LIMITER_RECHECK_SAMPLES attempts started within the halved limit have
 * finished (at most LIMITER_RECHECK_WINDOWS windows). If their mean latency
 * fell below LIMITER_RECHECK_HELPED x the latency before, the load was the
 * cause: the baseline stays (or falls to that mean). If not, the backend
 * got slower whatever its load: their mean becomes the baseline, and the
 * limit grows back. A flat upstream never triggers a recheck.
 *
 * Invariants: min_limit <= limit <= max_limit; baseline_ms is 0 until the
 * first window closes, then >= 1. Pure; runs on the engine thread.
 */
#include "limiter.h"

#include <math.h>
#include <string.h>

static double
clampd(double v, double lo, double hi)
{
	if (!(v >= lo)) /* NaN too */
		return lo;
	return v > hi ? hi : v;
}

static void
window_reset(struct limiter *l, int64_t now_ms)
{
	l->win_start_ms = now_ms;
	l->win_sum_ms = 0;
	l->win_n = 0;
	l->win_max_inflight = 0;
	l->win_drop = false;
}

void
limiter_init(struct limiter *l, const struct limiter_cfg *cfg, int64_t now_ms)
{
	struct limiter_cfg *c;

	memset(l, 0, sizeof *l);
	l->cfg = *cfg;
	c = &l->cfg;
	if (c->max_limit < 1)
		c->max_limit = 1;
	if (c->min_limit < 1)
		c->min_limit = 1;
	if (c->min_limit > c->max_limit)
		c->min_limit = c->max_limit;
	if (c->initial_limit < c->min_limit)
		c->initial_limit = c->min_limit;
	if (c->initial_limit > c->max_limit)
		c->initial_limit = c->max_limit;
	if (c->window_ms < 1)
		c->window_ms = 1;
	c->smoothing = clampd(c->smoothing, 0.01, 1.0);
	c->tolerance = clampd(c->tolerance, 1.0, 100.0);
	c->backoff_ratio = clampd(c->backoff_ratio, 0.01, 1.0);
	l->limit = c->initial_limit;
	window_reset(l, now_ms);
}

static void
limit_set(struct limiter *l, double v)
{
	l->limit = clampd(v, l->cfg.min_limit, l->cfg.max_limit);
}

static void
recheck_start(struct limiter *l, int64_t now_ms)
{
	int half = (int)floor(l->limit / 2);

	l->recheck = true;
	l->recheck_limit = half > l->cfg.min_limit ? half : l->cfg.min_limit;
	l->recheck_until_ms = now_ms + (int64_t)LIMITER_RECHECK_WINDOWS * l->cfg.window_ms;
	l->recheck_before_ms = l->latency_ms;
	l->recheck_sum_ms = 0;
	l->recheck_n = 0;
	l->elevated = 0;
}

/* completed: enough samples came; else it is abandoned and nothing is learnt. */
static void
recheck_end(struct limiter *l, int64_t now_ms, bool completed)
{
	double s;

	if (completed) {
		s = (double)l->recheck_sum_ms / l->recheck_n;
		if (s < 1.0)
			s = 1.0;
		if (s < LIMITER_RECHECK_HELPED * l->recheck_before_ms)
			l->baseline_ms = s < l->baseline_ms ? s : l->baseline_ms;
		else
			l->baseline_ms = s;
		l->rechecks++;
	}
	l->recheck = false;
	window_reset(l, now_ms);
}

/* The closing window's move (it has successful samples, no recheck runs). */
static void
window_update(struct limiter *l, int64_t now_ms)
{
	double s = (double)l->win_sum_ms / l->win_n, g, next;

	if (s < 1.0)
		s = 1.0;
	l->latency_ms = s;
	if (l->baseline_ms <= 0 || s < l->baseline_ms)
		l->baseline_ms = s;
	if (l->win_drop)
		return;
	g = clampd(l->cfg.tolerance * l->baseline_ms / s, 0.5, 1.0);
	next = l->limit * g + sqrt(l->limit);
	if ((double)l->win_max_inflight < l->limit / 2 && next > l->limit)
		next = l->limit;
	limit_set(l, (1 - l->cfg.smoothing) * l->limit + l->cfg.smoothing * next);
	l->elevated = g < 1.0 ? l->elevated + 1 : 0;
	if (l->elevated >= LIMITER_RECHECK_AFTER)
		recheck_start(l, now_ms);
}

/* Close the open window if it has ended; end an overdue recheck. */
static void
limiter_advance(struct limiter *l, int64_t now_ms)
{
	if (l->recheck && now_ms >= l->recheck_until_ms)
		recheck_end(l, now_ms, false);
	if (now_ms - l->win_start_ms < l->cfg.window_ms)
		return;
	if (l->win_n > 0) {
		l->windows++;
		if (!l->recheck)
			window_update(l, now_ms);
	}
	window_reset(l, now_ms);
}

void
limiter_sample(struct limiter *l, int64_t now_ms, int64_t latency_ms, int inflight, bool drop)
{
	if (!l->cfg.enabled)
		return;
	limiter_advance(l, now_ms);
	if (latency_ms < 0)
		latency_ms = 0;
	if (inflight > l->win_max_inflight)
		l->win_max_inflight = inflight;
	if (drop) {
		if (!l->win_drop) {
			limit_set(l, l->limit * l->cfg.backoff_ratio);
			l->win_drop = true;
			l->backoffs++;
		}
		return;
	}
	if (!l->recheck) {
		l->win_sum_ms += latency_ms;
		l->win_n++;
		return;
	}
	/* Attempts started above the halved limit tell nothing about it. */
	l->win_n++; /* the window saw a sample (it is not empty), but does not move */
	if (inflight > l->recheck_limit)
		return;
	l->recheck_sum_ms += latency_ms;
	if (++l->recheck_n >= LIMITER_RECHECK_SAMPLES)
		recheck_end(l, now_ms, true);
}

void
limiter_tick(struct limiter *l, int64_t now_ms)
{
	if (l->cfg.enabled)
		limiter_advance(l, now_ms);
}

int
limiter_limit(const struct limiter *l)
{
	int v;

	if (!l->cfg.enabled)
		return l->cfg.max_limit;
	v = (int)floor(l->limit);
	if (l->recheck && l->recheck_limit < v)
		v = l->recheck_limit;
	if (v < l->cfg.min_limit)
		v = l->cfg.min_limit;
	if (v > l->cfg.max_limit)
		v = l->cfg.max_limit;
	return v;
}

double
limiter_baseline_ms(const struct limiter *l)
{
	return l->baseline_ms;
}

double
limiter_latency_ms(const struct limiter *l)
{
	return l->latency_ms;
}

bool
limiter_rechecking(const struct limiter *l)
{
	return l->recheck;
}
