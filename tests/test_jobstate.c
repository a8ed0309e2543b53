/*
 * test_jobstate: every from -> to pair of the async job's state machine,
 * and the names the jobs rows use.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "jobstate.h"

START_TEST(every_pair)
{
	/* ok[from][to]: the only moves a job makes */
	static const int ok[JOB_STATE__COUNT][JOB_STATE__COUNT] = {
		[JOB_ACCEPTING] = {[JOB_QUEUED] = 1},
		[JOB_QUEUED] = {[JOB_RUNNING] = 1},
		[JOB_RUNNING] = {[JOB_DONE] = 1, [JOB_FAILED] = 1},
	};
	int f, t;

	for (f = 0; f < JOB_STATE__COUNT; f++)
		for (t = 0; t < JOB_STATE__COUNT; t++)
			ck_assert_msg(job_state_next_ok(f, t) == ok[f][t], "%s -> %s: %d",
				      job_state_name(f), job_state_name(t),
				      job_state_next_ok(f, t));
	/* out of range */
	ck_assert_int_eq(job_state_next_ok(JOB_STATE__COUNT, JOB_QUEUED), 0);
	ck_assert_int_eq(job_state_next_ok(-1, JOB_QUEUED), 0);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(job_state_name(JOB_QUEUED), "queued");
	ck_assert_str_eq(job_state_name(JOB_RUNNING), "running");
	ck_assert_str_eq(job_state_name(JOB_DONE), "done");
	ck_assert_str_eq(job_state_name(JOB_FAILED), "failed");
	ck_assert_str_eq(job_state_name(JOB_ACCEPTING), "accepting");
	ck_assert_ptr_null(job_state_name(JOB_STATE__COUNT));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("jobstate");
	TCase *tc = tcase_create("machine");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_pair);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
