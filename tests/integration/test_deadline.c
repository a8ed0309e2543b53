/*
 * Integration: the deadline promise. Calls against a hanging upstream are
 * answered by their budget plus a few milliseconds, whatever the upstream
 * does (hangs before headers, drips bytes, hangs mid-body).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itd.h"

static struct itd T;

static const char *config =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/completions\","
	"\"model\":\"m\",\"timeouts\":{\"connect_ms\":1000,\"first_byte_ms\":5000,\"total_ms\":"
	"8000},"
	"\"max_concurrent\":200,\"breaker\":{\"failure_threshold\":100000}}],"
	"\"routes\":[{\"name\":\"intent\",\"budget_ms\":6000,\"targets\":[{\"backend\":\"primary\","
	"\"weight\":1}],\"retry\":{\"max_retries\":1,\"retry_on\":[\"first_byte_timeout\","
	"\"total_timeout\",\"reset\"]},\"output\":{\"schema\":{\"type\":\"object\"}},"
	"\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}"
	"}}]}";

/* Extra milliseconds allowed in the sanitizer build (FB_SANITIZED=1). */
static int
sanitizer_slack(int ms)
{
	return itd_sanitized() ? ms : 0;
}

static void
teardown(void)
{
	itd_stop(&T);
}

/* n concurrent calls with budget_ms against behaviour; all must answer by budget + slack. */
static void
deadline_run(const char *behaviour, int n, int budget_ms, int slack_ms, const char *reason)
{
	const char **urls = calloc((size_t)n, sizeof *urls),
		   **bodies = calloc((size_t)n, sizeof *bodies);
	struct http_resp *rs = calloc((size_t)n, sizeof *rs);
	char url[128], body[128];
	double worst = 0, worst_daemon = 0;
	int i;

	slack_ms += sanitizer_slack(50);
	ck_assert_int_eq(itd_start(&T, config), 0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", behaviour), 0);
	snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
	snprintf(body, sizeof body, "{\"input\":\"x\",\"budget_ms\":%d}", budget_ms);
	for (i = 0; i < n; i++) {
		urls[i] = url;
		bodies[i] = body;
	}
	ck_assert_int_eq(http_do_many(n, "POST", urls, bodies, NULL, budget_ms + 5000, rs), 0);
	for (i = 0; i < n; i++) {
		cJSON *o = itd_json(&rs[i]);

		ck_assert_int_eq(rs[i].status, 200);
		ck_assert_str_eq(itd_str(o, "source"), "rules");
		ck_assert_str_eq(itd_str(o, "reason"), reason);
		if (rs[i].elapsed_ms > worst)
			worst = rs[i].elapsed_ms;
		/* the daemon's own clock: from the request read to the answer handed over */
		if (itd_num(o, "elapsed_ms") > worst_daemon)
			worst_daemon = itd_num(o, "elapsed_ms");
		if (getenv("FB_DEBUG"))
			fprintf(stderr, "call %d: client %.1f ms, daemon %.0f ms\n", i,
				rs[i].elapsed_ms, itd_num(o, "elapsed_ms"));
		/* the daemon keeps 10 ms back to answer from the rungs below */
		ck_assert_msg(rs[i].elapsed_ms >= budget_ms - 12, "answered early: %.1f ms",
			      rs[i].elapsed_ms);
		cJSON_Delete(o);
		http_resp_free(&rs[i]);
	}
	fprintf(stderr,
		"deadline %s: %d calls, budget %d ms, slowest answer %.1f ms (daemon %.0f ms)\n",
		behaviour, n, budget_ms, worst, worst_daemon);
	ck_assert_msg(worst_daemon <= budget_ms + 5 + sanitizer_slack(15),
		      "the daemon answered %.0f ms after the request", worst_daemon);
	ck_assert_msg(worst <= budget_ms + slack_ms, "slowest answer %.1f ms > %d + %d", worst,
		      budget_ms, slack_ms);
	free(urls);
	free(bodies);
	free(rs);
}

START_TEST(forty_hanging_calls_answer_by_530ms)
{
	deadline_run("{\"hang\":true}", 40, 500, 30, "first_byte_timeout");
}
END_TEST

START_TEST(drip_feed_is_cut_at_the_deadline)
{
	deadline_run("{\"drip_ms\":100}", 10, 700, 30, "total_timeout");
}
END_TEST

START_TEST(hang_mid_body_is_cut_at_the_deadline)
{
	deadline_run("{\"drip_ms\":100000}", 10, 600, 30, "total_timeout");
}
END_TEST

static Suite *
deadline_suite(void)
{
	Suite *s = suite_create("deadline");
	TCase *tc = tcase_create("deadline");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, forty_hanging_calls_answer_by_530ms);
	tcase_add_test(tc, drip_feed_is_cut_at_the_deadline);
	tcase_add_test(tc, hang_mid_body_is_cut_at_the_deadline);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(deadline_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
