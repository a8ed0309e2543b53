/*
 * escalation: the auto-level state machine with literal clocks.
 */
#include <check.h>
#include <string.h>

#include "escalation.h"

static struct escalation_cfg
cfg(void)
{
	struct escalation_cfg c;

	memset(&c, 0, sizeof c);
	c.enabled = true;
	c.l1_after = 3;
	c.l2_after = 5;
	c.window_s = 60;
	c.error_rate = 0.5;
	c.min_calls = 20;
	c.recover_after_s = 60;
	return c;
}

START_TEST(validation_failures_escalate_to_l1)
{
	struct escalation_cfg c = cfg();
	struct escalation x;

	escalation_init(&x, 0);
	ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL), 0);
	ck_assert_int_eq(escalation_record(&x, &c, 1100, 0, ESC_VALIDATION_FAIL), 0);
	ck_assert_int_eq(escalation_record(&x, &c, 1200, 0, ESC_VALIDATION_FAIL), 1);
	ck_assert_uint_eq(x.changes, 1);
	ck_assert_str_eq(x.last_reason, "auto 0 -> 1 (3 consecutive validation failures at L0)");
	ck_assert_int_eq(x.level_since_ms, 1200);
}
END_TEST

START_TEST(a_success_resets_the_run)
{
	struct escalation_cfg c = cfg();
	struct escalation x;

	escalation_init(&x, 0);
	escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL);
	escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL);
	escalation_record(&x, &c, 1000, 0, ESC_OK);
	escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL);
	ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL), 0);
	/* transport failures neither count nor reset the validation run */
	escalation_record(&x, &c, 1000, 0, ESC_FAIL);
	ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL), 1);
}
END_TEST

START_TEST(failures_at_l1_escalate_to_l2)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i;

	escalation_init(&x, 0);
	for (i = 0; i < 3; i++)
		escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL);
	ck_assert_int_eq(x.level, 1);
	/* a call that started at another level is not this level's evidence */
	escalation_record(&x, &c, 1000, 0, ESC_FAIL);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 2000, 1, ESC_FAIL), 1);
	ck_assert_int_eq(escalation_record(&x, &c, 2000, 1, ESC_VALIDATION_FAIL), 2);
	ck_assert_str_eq(x.last_reason, "auto 1 -> 2 (5 consecutive failures at L1)");
}
END_TEST

START_TEST(error_rate_needs_min_calls)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i;

	c.l2_after = 1000; /* the error rate alone, not the run of failures */
	escalation_init(&x, 0);
	/* 19 calls all failing: below min_calls 20, stays at 0 */
	for (i = 0; i < 19; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 10000 + i * 100, 0, ESC_FAIL), 0);
	/* the 20th: 20/20 >= 0.5 */
	ck_assert_int_eq(escalation_record(&x, &c, 12000, 0, ESC_FAIL), 2);
	ck_assert_ptr_nonnull(strstr(x.last_reason, "error rate 1.00 >= 0.50 over 20 calls"));
}
END_TEST

START_TEST(error_rate_below_threshold_and_window_expiry)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i, calls;

	escalation_init(&x, 0);
	for (i = 0; i < 30; i++)
		escalation_record(&x, &c, 1000 + i, 0, i % 3 == 0 ? ESC_FAIL : ESC_OK);
	ck_assert_int_eq(x.level, 0);
	ck_assert_double_eq_tol(escalation_error_rate(&x, &c, 2000, &calls), 10.0 / 30, 1e-9);
	ck_assert_int_eq(calls, 30);
	/* 61 s later the window is empty */
	ck_assert_double_eq_tol(escalation_error_rate(&x, &c, 62000, &calls), 0, 1e-9);
	ck_assert_int_eq(calls, 0);
}
END_TEST

START_TEST(recovery_steps_one_level_at_a_time)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i;

	escalation_init(&x, 0);
	for (i = 0; i < 20; i++)
		escalation_record(&x, &c, 1000, 0, ESC_FAIL);
	ck_assert_int_eq(x.level, 2);
	ck_assert_int_eq(escalation_tick(&x, &c, 60999), 2);
	ck_assert_int_eq(escalation_tick(&x, &c, 61000), 1);
	ck_assert_str_eq(x.last_reason, "auto 2 -> 1 (60 s at level 2: trying one level up)");
	ck_assert_int_eq(escalation_tick(&x, &c, 120999), 1);
	ck_assert_int_eq(escalation_tick(&x, &c, 121000), 0);
	ck_assert_int_eq(escalation_tick(&x, &c, 999999), 0);
	ck_assert_uint_eq(x.changes, 3);
}
END_TEST

START_TEST(disabled_never_moves)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i;

	c.enabled = false;
	escalation_init(&x, 0);
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL), 0);
	ck_assert_int_eq(escalation_tick(&x, &c, 1000000), 0);
	ck_assert_uint_eq(x.changes, 0);
}
END_TEST

START_TEST(a_rescuing_backup_is_no_outage)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i, calls;

	escalation_init(&x, 0);
	c.l1_after = 1000;
	/* the primary is invalid every time but the backup answers: the
	 * validation run grows, the error rate stays 0 */
	for (i = 0; i < 40; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_VFAIL_RESCUED), 0);
	ck_assert_int_eq(x.consecutive_vfail, 40);
	ck_assert_double_eq_tol(escalation_error_rate(&x, &c, 1000, &calls), 0, 1e-9);
	ck_assert_int_eq(calls, 40);
	/* at L1 a call the backup answered resets the failure run */
	c.l1_after = 1;
	escalation_record(&x, &c, 2000, 0, ESC_VALIDATION_FAIL);
	ck_assert_int_eq(x.level, 1);
	for (i = 0; i < 4; i++)
		escalation_record(&x, &c, 2000, 1, ESC_FAIL);
	escalation_record(&x, &c, 2000, 1, ESC_OK);
	ck_assert_int_eq(x.consecutive_fail, 0);
	ck_assert_int_eq(escalation_record(&x, &c, 2000, 1, ESC_FAIL), 1);
}
END_TEST

START_TEST(skipped_calls_are_not_evidence)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i;

	escalation_init(&x, 0);
	for (i = 0; i < 50; i++)
		escalation_record(&x, &c, 1000, 0, ESC_SKIPPED);
	ck_assert_int_eq(x.level, 0);
	ck_assert_int_eq(escalation_error_rate(&x, &c, 1000, &i) == 0, 1);
	ck_assert_int_eq(i, 0);
}
END_TEST

START_TEST(an_outage_at_l0_goes_to_l2_after_l2_after_calls)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i;

	escalation_init(&x, 0);
	/* the primary's breaker is open and the backup answers: no outage */
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 1000 + i * 10, 0, ESC_OK), 0);
	/* then the backup fails too: 4 calls no model answered, still L0 */
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 3000 + i * 250, 0, ESC_FAIL), 0);
	ck_assert_int_eq(x.consecutive_fail, 4);
	/* the 5th: L2 at once (the error rate is 5/105, far below 0.5) */
	ck_assert_int_eq(escalation_record(&x, &c, 4000, 0, ESC_FAIL), 2);
	ck_assert_str_eq(x.last_reason,
			 "auto 0 -> 2 (5 consecutive failures at L0, backup included)");
	ck_assert_int_eq(x.level_since_ms, 4000);
	ck_assert_uint_eq(x.changes, 1);
	ck_assert_int_eq(x.consecutive_fail, 0);
}
END_TEST

START_TEST(a_model_answer_at_l0_resets_the_failure_run)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int i;

	escalation_init(&x, 0);
	for (i = 0; i < 4; i++)
		escalation_record(&x, &c, 1000, 0, ESC_FAIL);
	/* the primary was invalid, the backup answered: a model answered */
	escalation_record(&x, &c, 1000, 0, ESC_VFAIL_RESCUED);
	ck_assert_int_eq(x.consecutive_fail, 0);
	for (i = 0; i < 4; i++)
		escalation_record(&x, &c, 1000, 0, ESC_FAIL);
	escalation_record(&x, &c, 1000, 0, ESC_OK);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_FAIL), 0);
	/* skipped calls neither count nor reset */
	escalation_record(&x, &c, 1000, 0, ESC_SKIPPED);
	ck_assert_int_eq(x.consecutive_fail, 4);
	ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_FAIL), 2);
	/* calls of another level are not this level's evidence */
	escalation_init(&x, 0);
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(escalation_record(&x, &c, 1000, 1, ESC_FAIL), 0);
	ck_assert_int_eq(x.consecutive_fail, 0);
}
END_TEST

START_TEST(both_runs_at_once_take_the_smaller_step)
{
	struct escalation_cfg c = cfg();
	struct escalation x;

	c.l1_after = 2;
	c.l2_after = 2;
	escalation_init(&x, 0);
	/* invalid at the primary and nothing better from the backup, twice:
	 * L1 first, which is then judged on its own calls */
	ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL), 0);
	ck_assert_int_eq(escalation_record(&x, &c, 1100, 0, ESC_VALIDATION_FAIL), 1);
	ck_assert_str_eq(x.last_reason, "auto 0 -> 1 (2 consecutive validation failures at L0)");
	ck_assert_int_eq(escalation_record(&x, &c, 1200, 1, ESC_FAIL), 1);
	ck_assert_int_eq(escalation_record(&x, &c, 1300, 1, ESC_FAIL), 2);
	ck_assert_str_eq(x.last_reason, "auto 1 -> 2 (2 consecutive failures at L1)");
	/* l2_after shorter than l1_after: an outage goes straight to L2 */
	c.l1_after = 5;
	escalation_init(&x, 0);
	ck_assert_int_eq(escalation_record(&x, &c, 1000, 0, ESC_VALIDATION_FAIL), 0);
	ck_assert_int_eq(escalation_record(&x, &c, 1100, 0, ESC_VALIDATION_FAIL), 2);
}
END_TEST

/*
 * The demo's incident (contrib/demo-scenario.json with demo.json's intent
 * route): 4 calls/s answered by a model for 35 s, then none. The error rate
 * alone reaches 0.5 over 60 s only when the failures outnumber the 35 s of
 * healthy calls still in the window, about 30 s later; the run of failures
 * moves the route at the 5th.
 */
START_TEST(a_total_outage_after_a_healthy_window)
{
	struct escalation_cfg c = cfg();
	struct escalation x;
	int64_t t, at = -1;

	/* the error rate alone (the run is out of reach) */
	c.l2_after = 100000;
	escalation_init(&x, 0);
	for (t = 0; t < 35000; t += 250)
		escalation_record(&x, &c, t, 0, ESC_OK);
	for (t = 35000; t < 120000 && at < 0; t += 250)
		if (escalation_record(&x, &c, t, 0, ESC_FAIL) == 2)
			at = t;
	ck_assert(at >= 64000 && at <= 66000);
	/* with the run: the 5th call no model answered */
	c.l2_after = 5;
	escalation_init(&x, 0);
	for (t = 0; t < 35000; t += 250)
		escalation_record(&x, &c, t, 0, ESC_OK);
	at = -1;
	for (t = 35000; t < 120000 && at < 0; t += 250)
		if (escalation_record(&x, &c, t, 0, ESC_FAIL) == 2)
			at = t;
	ck_assert_int_eq(at, 36000);
}
END_TEST

static Suite *
escalation_suite(void)
{
	Suite *s = suite_create("escalation");
	TCase *tc;

#define ADD(t)                                                                                     \
	tc = tcase_create(#t);                                                                     \
	tcase_add_test(tc, t);                                                                     \
	suite_add_tcase(s, tc)
	ADD(validation_failures_escalate_to_l1);
	ADD(a_success_resets_the_run);
	ADD(failures_at_l1_escalate_to_l2);
	ADD(error_rate_needs_min_calls);
	ADD(error_rate_below_threshold_and_window_expiry);
	ADD(recovery_steps_one_level_at_a_time);
	ADD(disabled_never_moves);
	ADD(a_rescuing_backup_is_no_outage);
	ADD(skipped_calls_are_not_evidence);
	ADD(an_outage_at_l0_goes_to_l2_after_l2_after_calls);
	ADD(a_model_answer_at_l0_resets_the_failure_run);
	ADD(both_runs_at_once_take_the_smaller_step);
	ADD(a_total_outage_after_a_healthy_window);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(escalation_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
