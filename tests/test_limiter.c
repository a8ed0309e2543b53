/*
 * test_limiter: adaptive concurrency with literal clocks against simulated
 * upstreams. A window of the simulation: `load` callers keep
 * min(load, limit) attempts in flight, each finishing once in the window
 * with the upstream's latency at that concurrency.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "limiter.h"

#define BASE_MS 100
#define KNEE	12

static const struct limiter_cfg defaults = {
	.enabled = true,
	.min_limit = 2,
	.initial_limit = 10,
	.max_limit = 60,
	.window_ms = 1000,
	.smoothing = 0.2,
	.tolerance = 1.5,
	.backoff_ratio = 0.9,
};

/* Latency of an upstream queueing past a knee of 12 in flight. */
static int64_t
lat_knee(int inflight)
{
	return inflight <= KNEE ? BASE_MS : (int64_t)BASE_MS * inflight / KNEE;
}

static int64_t
lat_flat(int inflight)
{
	(void)inflight;
	return BASE_MS;
}

static int64_t
lat_slow(int inflight)
{
	(void)inflight;
	return 2 * BASE_MS;
}

/* Flat, but every other window's answers take 90 or 110 ms. */
static int jitter_phase;

static int64_t
lat_jitter(int inflight)
{
	(void)inflight;
	return jitter_phase ? 110 : 90;
}

struct run {
	int lo, hi; /* limit range seen after each window (from `from` on) */
	int from;
};

static void
drive(struct limiter *l, int64_t *now, int windows, int load, int64_t (*lat)(int), struct run *r)
{
	int w, j, inflight, v;

	for (w = 0; w < windows; w++) {
		limiter_tick(l, *now);
		inflight = limiter_limit(l) < load ? limiter_limit(l) : load;
		for (j = 0; j < inflight; j++)
			limiter_sample(l, *now + 10 + j, lat(inflight), inflight, false);
		jitter_phase = !jitter_phase;
		*now += 1000;
		v = limiter_limit(l);
		if (r != NULL && w >= r->from) {
			if (v < r->lo)
				r->lo = v;
			if (v > r->hi)
				r->hi = v;
		}
	}
	limiter_tick(l, *now);
}

static struct run
run_from(int from)
{
	struct run r = {1 << 30, -1, from};

	return r;
}

START_TEST(test_init_bounds)
{
	struct limiter_cfg c = defaults;
	struct limiter l;

	limiter_init(&l, &c, 0);
	ck_assert_int_eq(limiter_limit(&l), 10);
	ck_assert_double_eq(limiter_baseline_ms(&l), 0);
	ck_assert_double_eq(limiter_latency_ms(&l), 0);
	c.initial_limit = 100;
	limiter_init(&l, &c, 0);
	ck_assert_int_eq(limiter_limit(&l), 60);
	c.initial_limit = 1;
	limiter_init(&l, &c, 0);
	ck_assert_int_eq(limiter_limit(&l), 2);
	c.min_limit = 80; /* above max: the bounds collapse to max */
	limiter_init(&l, &c, 0);
	ck_assert_int_eq(limiter_limit(&l), 60);
}
END_TEST

START_TEST(test_disabled)
{
	struct limiter_cfg c = defaults;
	struct limiter l;
	int64_t now = 0;

	c.enabled = false;
	limiter_init(&l, &c, 0);
	ck_assert_int_eq(limiter_limit(&l), 60);
	drive(&l, &now, 50, 60, lat_knee, NULL);
	limiter_sample(&l, now, 5000, 60, true);
	ck_assert_int_eq(limiter_limit(&l), 60);
	ck_assert_double_eq(limiter_baseline_ms(&l), 0);
}
END_TEST

/* Flat upstream: the limit grows to max_limit and stays there. */
START_TEST(test_flat_grows_and_holds)
{
	struct limiter l;
	struct run r = run_from(60);
	int64_t now = 0;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 5, 60, lat_flat, NULL);
	ck_assert_int_gt(limiter_limit(&l), 10);
	drive(&l, &now, 200, 60, lat_flat, &r);
	ck_assert_int_eq(r.lo, 60);
	ck_assert_int_eq(r.hi, 60);
	ck_assert_double_eq(limiter_baseline_ms(&l), BASE_MS);
	ck_assert_double_eq(limiter_latency_ms(&l), BASE_MS);
	ck_assert_uint_eq(l.rechecks, 0);
	ck_assert(!limiter_rechecking(&l));
}
END_TEST

/* A flat upstream with +-10 % noise: no oscillation, no recheck. */
START_TEST(test_flat_jitter_no_oscillation)
{
	struct limiter l;
	struct run r = run_from(100);
	int64_t now = 0;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 300, 60, lat_jitter, &r);
	ck_assert_int_le(r.hi - r.lo, 1);
	ck_assert_int_eq(r.hi, 60);
	ck_assert_uint_eq(l.rechecks, 0);
}
END_TEST

/*
 * Lightly used (30 callers, max 1000): the limit grows only while at least
 * half of it is used, so it stops near 2 x 30 instead of drifting to 1000.
 */
START_TEST(test_app_limited_stops)
{
	struct limiter_cfg c = defaults;
	struct limiter l;
	struct run r = run_from(100);
	int64_t now = 0;

	c.max_limit = 1000;
	limiter_init(&l, &c, 0);
	drive(&l, &now, 300, 30, lat_flat, &r);
	ck_assert_int_ge(r.lo, 60);
	ck_assert_int_le(r.hi, 70);
	ck_assert_int_le(r.hi - r.lo, 1);
}
END_TEST

/* 60 callers against a knee of 12: the limit settles near the knee. */
START_TEST(test_knee_settles)
{
	struct limiter l;
	struct run r = run_from(50);
	int64_t now = 0;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 300, 60, lat_knee, &r);
	ck_assert_int_ge(r.lo, 8);
	ck_assert_int_le(r.hi, 24);
	/* The baseline stays the uncongested latency: rechecks confirm it. */
	ck_assert_double_eq(limiter_baseline_ms(&l), BASE_MS);
	ck_assert_uint_ge(l.rechecks, 1);
	ck_assert_double_gt(limiter_latency_ms(&l), BASE_MS);
	ck_assert_double_le(limiter_latency_ms(&l), 2 * BASE_MS);
}
END_TEST

/* Latency starts rising with concurrency: the limit falls from its ceiling. */
START_TEST(test_falls_when_latency_rises)
{
	struct limiter l;
	struct run r = run_from(40);
	int64_t now = 0;
	int before;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 100, 60, lat_flat, NULL);
	ck_assert_int_eq(limiter_limit(&l), 60);
	drive(&l, &now, 1, 60, lat_knee, NULL); /* 60 in flight: 5x the latency */
	before = limiter_limit(&l);
	ck_assert_int_lt(before, 60);
	ck_assert_int_ge(before, 30); /* at most halved per window */
	drive(&l, &now, 200, 60, lat_knee, &r);
	ck_assert_int_ge(r.lo, 8);
	ck_assert_int_le(r.hi, 24);
}
END_TEST

/* Congestion ends (the upstream scales out): the limit climbs back. */
START_TEST(test_recovers_when_latency_falls)
{
	struct limiter l;
	struct run r = run_from(100);
	int64_t now = 0;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 100, 60, lat_knee, NULL);
	ck_assert_int_le(limiter_limit(&l), 24);
	drive(&l, &now, 200, 60, lat_flat, &r);
	ck_assert_int_eq(r.lo, 60);
	ck_assert_int_eq(limiter_limit(&l), 60);
}
END_TEST

/* The upstream gets 2x slower at any load: a recheck learns the new baseline. */
START_TEST(test_slowdown_learnt)
{
	struct limiter l;
	int64_t now = 0;
	int i, lowest = 60;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 100, 60, lat_flat, NULL);
	ck_assert_int_eq(limiter_limit(&l), 60);
	for (i = 0; i < 40; i++) {
		drive(&l, &now, 1, 60, lat_slow, NULL);
		if (limiter_limit(&l) < lowest)
			lowest = limiter_limit(&l);
	}
	ck_assert_int_lt(lowest, 60);
	ck_assert_int_ge(lowest, 16); /* the gradient's floor at 0.75 is 16 */
	ck_assert_uint_eq(l.rechecks, 1);
	ck_assert_double_eq(limiter_baseline_ms(&l), 2 * BASE_MS);
	drive(&l, &now, 200, 60, lat_slow, NULL);
	ck_assert_int_eq(limiter_limit(&l), 60);
	ck_assert_uint_eq(l.rechecks, 1);
}
END_TEST

/* A recheck that cannot get its samples is abandoned: nothing learnt. */
START_TEST(test_recheck_abandoned)
{
	struct limiter l;
	int64_t now = 0;
	int i;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 100, 60, lat_flat, NULL);
	for (i = 0; i < 100 && !limiter_rechecking(&l); i++)
		drive(&l, &now, 1, 60, lat_slow, NULL);
	ck_assert(limiter_rechecking(&l));
	ck_assert_int_le(limiter_limit(&l), 30);
	/* Only attempts started above the halved limit come back. */
	for (i = 0; i < 5; i++)
		limiter_sample(&l, now + i, 2 * BASE_MS, 60, false);
	limiter_tick(&l, now + (int64_t)LIMITER_RECHECK_WINDOWS * 1000);
	ck_assert(!limiter_rechecking(&l));
	ck_assert_uint_eq(l.rechecks, 0);
	ck_assert_double_eq(limiter_baseline_ms(&l), BASE_MS);
}
END_TEST

START_TEST(test_backoff_once_per_window)
{
	struct limiter_cfg c = defaults;
	struct limiter l;

	c.initial_limit = 50;
	limiter_init(&l, &c, 0);
	limiter_sample(&l, 100, 3000, 50, true);
	ck_assert_int_eq(limiter_limit(&l), 45);
	limiter_sample(&l, 200, 3000, 50, true); /* same window */
	limiter_sample(&l, 999, 10, 50, true);
	ck_assert_int_eq(limiter_limit(&l), 45);
	ck_assert_uint_eq(l.backoffs, 1);
	limiter_sample(&l, 1000, 3000, 50, true); /* the next window */
	ck_assert_int_eq(limiter_limit(&l), 40);  /* 40.5 */
	ck_assert_uint_eq(l.backoffs, 2);
	/* A drop's latency is no sample: nothing was measured yet. */
	ck_assert_double_eq(limiter_baseline_ms(&l), 0);
	ck_assert_double_eq(limiter_latency_ms(&l), 0);
}
END_TEST

START_TEST(test_backoff_floor)
{
	struct limiter l;
	int64_t now = 0;
	int i;

	limiter_init(&l, &defaults, 0);
	for (i = 0; i < 100; i++, now += 1000)
		limiter_sample(&l, now, 30000, 10, true);
	ck_assert_int_eq(limiter_limit(&l), 2);
	ck_assert_double_eq(l.limit, 2.0);
}
END_TEST

/* A window with a drop does not grow by the gradient as well. */
START_TEST(test_drop_window_no_growth)
{
	struct limiter l;

	limiter_init(&l, &defaults, 0);
	limiter_sample(&l, 10, BASE_MS, 10, false);
	limiter_sample(&l, 20, 2500, 10, true); /* 10 -> 9 */
	limiter_sample(&l, 30, BASE_MS, 10, false);
	limiter_tick(&l, 1000);
	ck_assert_double_eq(l.limit, 9.0);
	ck_assert_double_eq(limiter_baseline_ms(&l), BASE_MS);
	/* The next window without drops grows: 9 + 0.2 x sqrt(9). */
	limiter_sample(&l, 1010, BASE_MS, 9, false);
	limiter_tick(&l, 2000);
	ck_assert_double_eq_tol(l.limit, 9.6, 1e-9);
}
END_TEST

/* Windows without samples change nothing, however many pass. */
START_TEST(test_empty_windows)
{
	struct limiter l;
	int64_t now = 0;
	double limit, base, lat;

	limiter_init(&l, &defaults, 0);
	drive(&l, &now, 30, 60, lat_knee, NULL);
	limit = l.limit;
	base = limiter_baseline_ms(&l);
	lat = limiter_latency_ms(&l);
	limiter_tick(&l, now + 500);
	limiter_tick(&l, now + 10000);
	limiter_tick(&l, now + 3600000);
	ck_assert_double_eq(l.limit, limit);
	ck_assert_double_eq(limiter_baseline_ms(&l), base);
	ck_assert_double_eq(limiter_latency_ms(&l), lat);
}
END_TEST

/* One window's arithmetic, by hand. */
START_TEST(test_gradient_step)
{
	struct limiter l;

	limiter_init(&l, &defaults, 0);
	limiter_sample(&l, 10, 100, 10, false); /* window 1: baseline 100 */
	limiter_tick(&l, 1000);
	ck_assert_double_eq(limiter_baseline_ms(&l), 100);
	ck_assert_double_eq_tol(l.limit, 10 + 0.2 * 3.16227766016838, 1e-9);
	limiter_init(&l, &defaults, 0);
	l.baseline_ms = 100;
	/* mean 300 ms: gradient clamp(1.5 x 100 / 300) = 0.5; new = 5 + sqrt(10) */
	limiter_sample(&l, 10, 200, 10, false);
	limiter_sample(&l, 20, 400, 10, false);
	limiter_tick(&l, 1000);
	ck_assert_double_eq(limiter_latency_ms(&l), 300);
	ck_assert_double_eq(limiter_baseline_ms(&l), 100);
	ck_assert_double_eq_tol(l.limit, 0.8 * 10 + 0.2 * (5 + 3.16227766016838), 1e-9);
	ck_assert_int_eq(l.elevated, 1);
}
END_TEST

/* A small deterministic generator: the test's own, not rng.c. */
static uint32_t
lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* Whatever comes, the limit stays within its bounds. */
START_TEST(test_never_leaves_bounds)
{
	struct limiter_cfg c = defaults;
	struct limiter l;
	uint32_t seed = 42;
	int64_t now = 0;
	int i, v;

	c.min_limit = 3;
	c.max_limit = 17;
	c.smoothing = 1.0;
	c.backoff_ratio = 0.1;
	limiter_init(&l, &c, 0);
	for (i = 0; i < 20000; i++) {
		now += lcg(&seed) % 700;
		limiter_sample(&l, now, lcg(&seed) % 20000, (int)(lcg(&seed) % 40),
			       lcg(&seed) % 7 == 0);
		if (i % 13 == 0)
			limiter_tick(&l, now);
		v = limiter_limit(&l);
		ck_assert_int_ge(v, 3);
		ck_assert_int_le(v, 17);
		ck_assert(l.limit >= 3.0 && l.limit <= 17.0);
	}
	ck_assert_uint_gt(l.backoffs, 0);
	ck_assert_uint_gt(l.windows, 0);
}
END_TEST

static Suite *
limiter_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"init_bounds", test_init_bounds},
		{"disabled", test_disabled},
		{"flat_grows_and_holds", test_flat_grows_and_holds},
		{"flat_jitter_no_oscillation", test_flat_jitter_no_oscillation},
		{"app_limited_stops", test_app_limited_stops},
		{"knee_settles", test_knee_settles},
		{"falls_when_latency_rises", test_falls_when_latency_rises},
		{"recovers_when_latency_falls", test_recovers_when_latency_falls},
		{"slowdown_learnt", test_slowdown_learnt},
		{"recheck_abandoned", test_recheck_abandoned},
		{"backoff_once_per_window", test_backoff_once_per_window},
		{"backoff_floor", test_backoff_floor},
		{"drop_window_no_growth", test_drop_window_no_growth},
		{"empty_windows", test_empty_windows},
		{"gradient_step", test_gradient_step},
		{"never_leaves_bounds", test_never_leaves_bounds},
	};
	Suite *s = suite_create("limiter");
	TCase *tc;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(limiter_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
