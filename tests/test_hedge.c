/*
 * test_hedge: the hedge delay from a fixed after_ms or a quantile of recent
 * first-byte times, with literal clocks.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "hedge.h"

static const struct hedge_cfg p95 = {
	.enabled = true,
	.after_ms = 0,
	.after_quantile = 0.95,
	.min_ms = 50,
	.max_ms = 2500,
	.max_hedges = 1,
	.targets = HEDGE_OTHER,
};

/* n samples at now: 95 % at fast ms, the rest at slow ms (n a multiple of 20). */
static void
add_tail(struct hedge_window *w, int64_t now, int n, int64_t fast, int64_t slow)
{
	int i;

	for (i = 0; i < n; i++)
		hedge_window_add(w, now, i % 20 == 19 ? slow : fast);
}

START_TEST(test_off)
{
	struct hedge_cfg h = p95;
	struct hedge_window w;

	hedge_window_init(&w);
	h.enabled = false;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 0), -1);
	ck_assert_int_eq(hedge_delay_ms(NULL, &w, 0), -1);
	h.after_ms = 800;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 0), -1);
}
END_TEST

/* A fixed delay ignores the window (and the clamp). */
START_TEST(test_fixed)
{
	struct hedge_cfg h = p95;
	struct hedge_window w;

	hedge_window_init(&w);
	h.after_ms = 800;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 0), 800);
	add_tail(&w, 1000, 100, 100, 3000);
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 1000), 800);
	h.after_ms = 5000;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 1000), 5000);
	ck_assert_int_eq(hedge_delay_ms(&h, NULL, 1000), 5000);
}
END_TEST

/* Fewer than HEDGE_MIN_SAMPLES in the window: max_ms. */
START_TEST(test_few_samples)
{
	struct hedge_window w;
	int i;

	hedge_window_init(&w);
	ck_assert_int_eq(hedge_delay_ms(&p95, &w, 0), 2500);
	ck_assert_int_eq(hedge_delay_ms(&p95, NULL, 0), 2500);
	for (i = 0; i < HEDGE_MIN_SAMPLES - 1; i++)
		hedge_window_add(&w, 1000, 100);
	ck_assert_int_eq(hedge_delay_ms(&p95, &w, 1000), 2500);
	hedge_window_add(&w, 1000, 100);
	ck_assert_int_eq(hedge_delay_ms(&p95, &w, 1000), 100);
}
END_TEST

/* The tail: 95 % at 100 ms, 5 % at 3 s. p95 is the fast mode's edge. */
START_TEST(test_quantile)
{
	struct hedge_cfg h = p95;
	struct hedge_window w;
	int i;

	hedge_window_init(&w);
	add_tail(&w, 1000, 20, 100, 3000);
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 1000), 100); /* rank 19 of 20 */
	h.after_quantile = 0.99;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 1000), 2500); /* 3000, clamped */
	/* 1..200: p50 = 100, p90 = 180, p99.9 = 200 (nearest rank). */
	hedge_window_init(&w);
	for (i = 1; i <= 200; i++)
		hedge_window_add(&w, 5000, i);
	h.after_quantile = 0.5;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 5000), 100);
	h.after_quantile = 0.9;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 5000), 180);
	h.after_quantile = 0.999;
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 5000), 200);
	ck_assert_int_eq(hedge_window_quantile(&w, 5000, 0.95, 1), 190);
	ck_assert_int_eq(hedge_window_quantile(&w, 5000, 0.0, 1), 1);
	ck_assert_int_eq(hedge_window_quantile(&w, 5000, 1.0, 1), 200);
	ck_assert_int_eq(hedge_window_quantile(&w, 5000, 0.5, 201), -1);
}
END_TEST

START_TEST(test_clamp)
{
	struct hedge_cfg h = p95;
	struct hedge_window w;

	hedge_window_init(&w);
	add_tail(&w, 0, 40, 10, 20);
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 0), 50); /* 10, raised to min_ms */
	hedge_window_init(&w);
	add_tail(&w, 0, 40, 4000, 9000);
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 0), 2500); /* 4000, cut to max_ms */
	h.min_ms = 0;
	hedge_window_init(&w);
	add_tail(&w, 0, 40, 0, 0);
	ck_assert_int_eq(hedge_delay_ms(&h, &w, 0), 0);
}
END_TEST

/* Only the last HEDGE_WINDOW_MS count. */
START_TEST(test_window_ages)
{
	struct hedge_window w;

	hedge_window_init(&w);
	add_tail(&w, 1000, 40, 1000, 1000); /* old and slow */
	add_tail(&w, 50000, 20, 200, 200);  /* recent and fast */
	ck_assert_int_eq(hedge_delay_ms(&p95, &w, 50000), 1000);
	ck_assert_int_eq(hedge_delay_ms(&p95, &w, 1000 + HEDGE_WINDOW_MS - 1), 1000);
	ck_assert_int_eq(hedge_delay_ms(&p95, &w, 1000 + HEDGE_WINDOW_MS), 200);
	ck_assert_int_eq(hedge_delay_ms(&p95, &w, 50000 + HEDGE_WINDOW_MS), 2500); /* none left */
	/* Samples after now (a clock read earlier) do not count. */
	ck_assert_int_eq(hedge_window_quantile(&w, 999, 0.5, 1), -1);
}
END_TEST

/* The ring keeps the last HEDGE_RING. */
START_TEST(test_ring_wraps)
{
	struct hedge_window w;
	int i;

	hedge_window_init(&w);
	for (i = 0; i < HEDGE_RING; i++)
		hedge_window_add(&w, 1000, 3000);
	for (i = 0; i < HEDGE_RING; i++)
		hedge_window_add(&w, 1000, 100);
	ck_assert_int_eq(w.n, HEDGE_RING);
	ck_assert_int_eq(hedge_window_quantile(&w, 1000, 1.0, 1), 100);
	hedge_window_add(&w, 1000, 7000);
	ck_assert_int_eq(hedge_window_quantile(&w, 1000, 1.0, 1), 7000);
	ck_assert_int_eq(w.n, HEDGE_RING);
	hedge_window_add(&w, 1000, -5); /* a negative time is taken as 0 */
	ck_assert_int_eq(hedge_window_quantile(&w, 1000, 0.0, 1), 0);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(hedge_targets_name(HEDGE_SAME), "same");
	ck_assert_str_eq(hedge_targets_name(HEDGE_OTHER), "other");
	ck_assert_ptr_null(hedge_targets_name((enum hedge_targets)7));
}
END_TEST

static Suite *
hedge_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"off", test_off},
		{"fixed", test_fixed},
		{"few_samples", test_few_samples},
		{"quantile", test_quantile},
		{"clamp", test_clamp},
		{"window_ages", test_window_ages},
		{"ring_wraps", test_ring_wraps},
		{"names", test_names},
	};
	Suite *s = suite_create("hedge");
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
	SRunner *sr = srunner_create(hedge_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
