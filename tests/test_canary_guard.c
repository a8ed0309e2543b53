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
		{0, 95, 1000, 10}, /* baseline 1 % */
		{1, 5, 60, 5},	   /* canary 8.3 %: 7.3 points worse */
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
	struct canary_stat t[] = {{0, 95, 1000, 10}, {1, 5, 100, 6}};
	double cr, br;

	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), -1);
	t[1].failures = 7;
	ck_assert_int_eq(canary_pick(&g, t, 2, &cr, &br), 1);
}
END_TEST

START_TEST(both_sides_need_min_calls)
{
	struct canary_guard_cfg g = guard();
	struct canary_stat t[] = {{0, 95, 49, 0}, {1, 5, 100, 50}};
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
		{0, 80, 500, 0}, {0, 10, 500, 50}, /* pooled baseline 5 % */
		{1, 0, 100, 90},		   /* already at weight 0 */
		{1, 5, 100, 20}, {1, 5, 100, 40},
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
