/*
 * canary_guard: the rollback decision and the windows, with literals.
 */
#include <check.h>
#include <string.h>

#include "canary_guard.h"

static struct canary_guard_cfg
guard(void)
{
	struct canary_guard_cfg g;

	memset(&g, 0, sizeof g);
	g.enabled = true;
	g.min_calls = 50;
	g.max_failure_delta = 0.05;
	g.window_s = 300;
	return g;
}

START_TEST(worse_canary_is_picked)
{
	struct canary_guard_cfg g = guard();
	struct canary_stat t[] = {
		{0, 95, 1000, 10, 0, 0, 0}, /* baseline 1 % */
		{1, 5, 60, 5, 0, 0, 0},	    /* canary 8.3 %: 7.3 points worse */
	};
	double cr, br;

	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), 1);
	ck_assert_double_eq_tol(cr, 5.0 / 60, 1e-12);
	ck_assert_double_eq_tol(br, 0.01, 1e-12);
}
END_TEST

START_TEST(within_delta_is_kept)
{
	struct canary_guard_cfg g = guard();
	/* 6 % vs 1 %: exactly 5 points, not more */
	struct canary_stat t[] = {{0, 95, 1000, 10, 0, 0, 0}, {1, 5, 100, 6, 0, 0, 0}};
	double cr, br;

	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), -1);
	t[1].failures = 7;
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), 1);
}
END_TEST

START_TEST(both_sides_need_min_calls)
{
	struct canary_guard_cfg g = guard();
	struct canary_stat t[] = {{0, 95, 49, 0, 0, 0, 0}, {1, 5, 100, 50, 0, 0, 0}};
	double cr, br;

	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), -1); /* baseline 49 < 50 */
	t[0].calls = 50;
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), 1);
	t[1].calls = 49;
	t[1].failures = 49;
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), -1); /* canary 49 < 50 */
}
END_TEST

START_TEST(weight_zero_and_worst_of_several)
{
	struct canary_guard_cfg g = guard();
	struct canary_stat t[] = {
		{0, 80, 500, 0, 0, 0, 0}, {0, 10, 500, 50, 0, 0, 0}, /* pooled baseline 5 % */
		{1, 0, 100, 90, 0, 0, 0},			     /* already at weight 0 */
		{1, 5, 100, 20, 0, 0, 0}, {1, 5, 100, 40, 0, 0, 0},
	};
	double cr, br;

	ck_assert_int_eq(canary_pick(&g, t, 5, &cr, &br), 4);
	ck_assert_double_eq_tol(br, 0.05, 1e-12);
	ck_assert_double_eq_tol(cr, 0.40, 1e-12);
}
END_TEST

START_TEST(window_counts_and_expiry)
{
	static struct canary_track tr;
	int64_t calls, fails;
	int i;

	memset(&tr, 0, sizeof tr);
	for (i = 0; i < 10; i++)
		canary_record(&tr, 1000000 + i * 100, i % 2);
	canary_sum(&tr, 60, 1001000, &calls, &fails);
	ck_assert_int_eq(calls, 10);
	ck_assert_int_eq(fails, 5);
	canary_sum(&tr, 60, 1000000 + 60000, &calls, &fails);
	ck_assert_int_eq(calls, 0); /* the seconds 1000 and 1001 left the window */
	canary_sum(&tr, 60, 1000000 + 59000, &calls, &fails);
	ck_assert_int_eq(calls, 10);
}
END_TEST

START_TEST(shared_outage_is_not_the_canary)
{
	/* Both sides answer 500 for the same 70 s, then recover: the canary
	 * (5 %) is as good as the baseline over the same seconds. */
	static struct canary_track base, can;
	const struct canary_track *tracks[] = {&base, &can};
	struct canary_guard_cfg g = guard();
	struct canary_stat t[2];
	double cr, br;
	int64_t t0 = 1000000000, ms;
	int i;

	memset(&base, 0, sizeof base);
	memset(&can, 0, sizeof can);
	g.min_calls = 20;
	for (ms = 0; ms < 300000; ms += 50) {
		int down = ms >= 10000 && ms < 80000;

		canary_record_outcome(&base, t0 + ms, down ? OUTCOME_HTTP_5XX : OUTCOME_OK);
		if (ms % 1000 == 0) /* the canary: one call a second */
			canary_record_outcome(&can, t0 + ms, down ? OUTCOME_HTTP_5XX : OUTCOME_OK);
	}
	memset(t, 0, sizeof t);
	t[0].canary = 0;
	t[0].weight = 95;
	t[1].canary = 1;
	t[1].weight = 5;
	canary_align(tracks, 2, 300, t0 + 299999, t);
	ck_assert_int_eq(t[1].aligned, 1);
	ck_assert_int_eq(t[1].calls, 300);
	ck_assert_int_eq(t[1].failures, 70);
	ck_assert_double_eq_tol(t[1].baseline, 70.0 / 300, 1e-9);
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), -1);
	/* The same canary failing on its own in the calm minutes is rolled back. */
	for (i = 100; i < 200; i++)
		canary_record_outcome(&can, t0 + i * 1000 + 1, OUTCOME_TOTAL_TIMEOUT);
	canary_align(tracks, 2, 300, t0 + 299999, t);
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), 1);
	ck_assert_double_eq_tol(br, 70.0 / 400, 1e-9);
}
END_TEST

START_TEST(only_slices_both_sides_had_calls)
{
	/* The canary's calls came during an outage the baseline had no calls
	 * in: nothing comparable, no rollback; after a reset, nothing counts. */
	static struct canary_track base, can;
	const struct canary_track *tracks[] = {&base, &can};
	struct canary_guard_cfg g = guard();
	struct canary_stat t[2];
	double cr, br;
	int64_t t0 = 2000000000;
	int i;

	memset(&base, 0, sizeof base);
	memset(&can, 0, sizeof can);
	g.min_calls = 10;
	for (i = 0; i < 60; i++)
		canary_record_outcome(&can, t0 + i * 1000, OUTCOME_HTTP_5XX);
	for (i = 120; i < 300; i++)
		canary_record_outcome(&base, t0 + i * 1000, OUTCOME_OK);
	memset(t, 0, sizeof t);
	t[1].canary = 1;
	t[1].weight = 5;
	t[0].weight = 95;
	ck_assert_int_eq(canary_slice_s(300), 30);
	ck_assert_int_eq(canary_slice_s(5), 1);
	ck_assert_int_eq(canary_slice_s(3600), 60);
	canary_align(tracks, 2, 300, t0 + 299000, t);
	ck_assert_int_eq(t[1].calls, 0);
	ck_assert_int_eq(t[0].calls, 180);
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), -1);
	/* Overlapping failures count... */
	for (i = 120; i < 140; i++)
		canary_record_outcome(&can, t0 + i * 1000, OUTCOME_HTTP_5XX);
	canary_align(tracks, 2, 300, t0 + 299000, t);
	ck_assert_int_eq(t[1].calls, 20);
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), 1);
	/* ...until an operator's weight change restarts the canary's window. */
	canary_reset(&can);
	canary_align(tracks, 2, 300, t0 + 299000, t);
	ck_assert_int_eq(t[1].calls, 0);
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), -1);
	ck_assert_int_eq(canary_failure(OUTCOME_OK), 0);
	ck_assert_int_eq(canary_failure(OUTCOME_VALIDATION_SCHEMA), 1);
	ck_assert_int_eq(canary_failure(OUTCOME_CONNECT_ERROR), 1);
}
END_TEST

static Suite *
canary_suite(void)
{
	Suite *s = suite_create("canary");
	TCase *tc;

#define ADD(t)                                                                                     \
	tc = tcase_create(#t);                                                                     \
	tcase_add_test(tc, t);                                                                     \
	suite_add_tcase(s, tc)
	ADD(worse_canary_is_picked);
	ADD(within_delta_is_kept);
	ADD(both_sides_need_min_calls);
	ADD(weight_zero_and_worst_of_several);
	ADD(window_counts_and_expiry);
	ADD(shared_outage_is_not_the_canary);
	ADD(only_slices_both_sides_had_calls);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(canary_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
