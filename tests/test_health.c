/*
 * test_health: the health score and latency percentiles with literal clocks.
 */
#include <check.h>
#include <stdlib.h>

#include "health.h"

static void
record_n(struct health *h, int64_t now, int success, int64_t duration, int n)
{
	int i;

	for (i = 0; i < n; i++)
		health_record(h, now, success, duration);
}

START_TEST(test_fresh)
{
	struct health h;

	health_init(&h);
	ck_assert_double_eq(health_score(&h, 0, 3000, 0, 60), 1.0);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 0.9, 1), -1);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 0.9, 0), -1);
}
END_TEST

START_TEST(test_bounds)
{
	struct health h;
	double s;

	health_init(&h);
	record_n(&h, 1000, 0, 0, 50);
	s = health_score(&h, 1000, 3000, 60, 60);
	ck_assert_double_eq(s, 0.01);
	record_n(&h, 1000, 1, 100000, 1000);
	s = health_score(&h, 1000, 3000, 1000, 60);
	ck_assert(s >= 0.01 && s <= 1.0);
	health_init(&h);
	record_n(&h, 1000, 1, 10, 100);
	ck_assert_double_eq(health_score(&h, 1000, 3000, 0, 60), 1.0);
	ck_assert_double_eq(health_score(&h, 1000, 3000, -5, 0), 1.0);
}
END_TEST

START_TEST(test_failures_lower)
{
	struct health h;

	health_init(&h);
	/* Fewer than 5 calls: no verdict yet. */
	record_n(&h, 0, 0, 0, 4);
	ck_assert_double_eq(health_score(&h, 0, 3000, 0, 60), 1.0);
	record_n(&h, 0, 0, 0, 1);
	ck_assert_double_eq(health_score(&h, 0, 3000, 0, 60), 0.01);
	record_n(&h, 0, 1, 100, 5);
	ck_assert_double_eq_tol(health_score(&h, 0, 3000, 0, 60), 0.5, 1e-12);
	record_n(&h, 500, 1, 100, 10);
	ck_assert_double_eq_tol(health_score(&h, 500, 3000, 0, 60), 0.75, 1e-12);
}
END_TEST

START_TEST(test_slow_p99)
{
	struct health h;

	health_init(&h);
	record_n(&h, 0, 1, 500, 10); /* p99 = budget / 2 */
	ck_assert_double_eq(health_score(&h, 0, 1000, 0, 60), 1.0);
	health_init(&h);
	record_n(&h, 0, 1, 750, 10);
	ck_assert_double_eq_tol(health_score(&h, 0, 1000, 0, 60), 0.55, 1e-12);
	health_init(&h);
	record_n(&h, 0, 1, 1000, 10);
	ck_assert_double_eq_tol(health_score(&h, 0, 1000, 0, 60), 0.1, 1e-12);
	health_init(&h);
	record_n(&h, 0, 1, 99000, 10);
	ck_assert_double_eq_tol(health_score(&h, 0, 1000, 0, 60), 0.1, 1e-12);
	/* One slow call in 200 is under the p99 rank; three are not. */
	health_init(&h);
	record_n(&h, 0, 1, 100, 198);
	record_n(&h, 0, 1, 5000, 2);
	ck_assert_double_eq(health_score(&h, 0, 1000, 0, 60), 1.0);
	record_n(&h, 0, 1, 5000, 1);
	ck_assert_double_eq_tol(health_score(&h, 0, 1000, 0, 60), 0.1, 1e-12);
	/* Combined with failures and load. */
	health_init(&h);
	record_n(&h, 0, 1, 750, 10);
	record_n(&h, 0, 0, 0, 10);
	ck_assert_double_eq_tol(health_score(&h, 0, 1000, 30, 60), 0.5 * 0.55 * 0.75, 1e-12);
}
END_TEST

START_TEST(test_load)
{
	struct health h;

	health_init(&h);
	ck_assert_double_eq_tol(health_score(&h, 0, 3000, 30, 60), 0.75, 1e-12);
	ck_assert_double_eq_tol(health_score(&h, 0, 3000, 60, 60), 0.5, 1e-12);
	ck_assert_double_eq_tol(health_score(&h, 0, 3000, 90, 60), 0.5, 1e-12);
}
END_TEST

START_TEST(test_percentile_exact)
{
	struct health h;
	int i;

	health_init(&h);
	/* 1..100 in scrambled order. */
	for (i = 0; i < 100; i++)
		health_record(&h, 1000, 1, (i * 37) % 100 + 1);
	health_record(&h, 1000, 0, 999999); /* failures carry no latency */
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.5, 1), 50);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.9, 1), 90);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.99, 1), 99);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 1.0, 1), 100);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.0, 1), 1);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.001, 1), 1);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.905, 1), 91);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.9, 100), 90);
	ck_assert_int_eq(health_percentile(&h, 1000, 60, 0.9, 101), -1);
}
END_TEST

START_TEST(test_percentile_small)
{
	struct health h;

	health_init(&h);
	health_record(&h, 0, 1, 300);
	health_record(&h, 0, 1, 100);
	health_record(&h, 0, 1, 200);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 0.5, 1), 200);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 0.34, 1), 200);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 0.33, 1), 100);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 0.9, 1), 300);
}
END_TEST

START_TEST(test_percentile_window)
{
	struct health h;

	health_init(&h);
	health_record(&h, 0, 1, 5000);
	health_record(&h, 200000, 1, 100);
	health_record(&h, 290000, 1, 200);
	/* Samples younger than window_s count. */
	ck_assert_int_eq(health_percentile(&h, 299999, 300, 1.0, 1), 5000);
	ck_assert_int_eq(health_percentile(&h, 300000, 300, 1.0, 1), 200);
	ck_assert_int_eq(health_percentile(&h, 300000, 300, 1.0, 3), -1);
	ck_assert_int_eq(health_percentile(&h, 300000, 60, 1.0, 1), 200);
	ck_assert_int_eq(health_percentile(&h, 400000, 60, 1.0, 1), -1);
}
END_TEST

START_TEST(test_ring_wraps)
{
	struct health h;
	int i;

	health_init(&h);
	for (i = 0; i < HEALTH_RING; i++)
		health_record(&h, 0, 1, 100000);
	for (i = 0; i < HEALTH_RING; i++)
		health_record(&h, 0, 1, i + 1);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 1.0, 1), HEALTH_RING);
	ck_assert_int_eq(health_percentile(&h, 0, 60, 0.5, HEALTH_RING), HEALTH_RING / 2);
}
END_TEST

START_TEST(test_window_expiry)
{
	struct health h;
	int calls, failures;

	health_init(&h);
	record_n(&h, 0, 0, 0, 10);
	ck_assert_double_eq(health_score(&h, 59999, 3000, 0, 60), 0.01);
	health_counts(&h, 59999, &calls, &failures);
	ck_assert_int_eq(calls, 10);
	ck_assert_int_eq(failures, 10);
	/* Second 0 leaves the 60 s window at 60.0 s. */
	ck_assert_double_eq(health_score(&h, 60000, 3000, 0, 60), 1.0);
	health_counts(&h, 60000, &calls, NULL);
	ck_assert_int_eq(calls, 0);
	/* A reused bucket starts from zero. */
	record_n(&h, 60500, 1, 10, 10);
	health_counts(&h, 60500, &calls, &failures);
	ck_assert_int_eq(calls, 10);
	ck_assert_int_eq(failures, 0);
	/* Slow successes expire as well. */
	health_init(&h);
	record_n(&h, 0, 1, 5000, 10);
	ck_assert_double_eq_tol(health_score(&h, 0, 1000, 0, 60), 0.1, 1e-12);
	ck_assert_double_eq(health_score(&h, 60000, 1000, 0, 60), 1.0);
}
END_TEST

static Suite *
health_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"fresh", test_fresh},
		{"bounds", test_bounds},
		{"failures_lower", test_failures_lower},
		{"slow_p99", test_slow_p99},
		{"load", test_load},
		{"percentile_exact", test_percentile_exact},
		{"percentile_small", test_percentile_small},
		{"percentile_window", test_percentile_window},
		{"ring_wraps", test_ring_wraps},
		{"window_expiry", test_window_expiry},
	};
	Suite *s = suite_create("health");
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
	SRunner *sr = srunner_create(health_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
