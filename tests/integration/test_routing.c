/*
 * Integration: weighted routing at the mock, live weights, the canary
 * guard rolling back a failing canary, and dynamic timeouts.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itd.h"

static struct itd T;

/*
 * Rows are committed in the background (batched every <= 50 ms): wait for
 * count(*) FROM sql_tail to be want (up to 5 s, where itd_settle slept
 * 150 ms) and assert it.
 */
#define ASSERT_COUNT(sql_tail, want)                                                               \
	ck_assert_int_eq(itd_count_wait(&T, (sql_tail), (want), 5000), (want))

#define HEAD "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
#define TWO_BACKENDS                                                                               \
	"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/completions\","    \
	"\"model\":\"m\",\"max_concurrent\":500,\"breaker\":{\"failure_threshold\":100000}},"      \
	"{\"name\":\"canary\",\"url\":\"@MOCK@/b/canary/v1/chat/completions\",\"model\":\"m\","    \
	"\"max_concurrent\":500,\"breaker\":{\"failure_threshold\":100000}}],"

static void
teardown(void)
{
	itd_stop(&T);
}

/* n calls, 50 at a time; all must answer 200. */
static void
calls(int n)
{
	enum { BATCH = 50 };
	const char *urls[BATCH], *bodies[BATCH];
	struct http_resp rs[BATCH];
	char url[128];
	int done = 0, i, k;

	snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
	for (i = 0; i < BATCH; i++) {
		urls[i] = url;
		bodies[i] = "{\"input\":\"refund\"}";
	}
	while (done < n) {
		k = n - done < BATCH ? n - done : BATCH;
		ck_assert_int_eq(http_do_many(k, "POST", urls, bodies, NULL, 10000, rs), 0);
		for (i = 0; i < k; i++) {
			ck_assert_int_eq(rs[i].status, 200);
			http_resp_free(&rs[i]);
		}
		done += k;
	}
}

START_TEST(weighted_split_within_five_points)
{
	int p, c;

	ck_assert_int_eq(itd_start(&T, HEAD TWO_BACKENDS
				   "\"routes\":[{\"name\":\"intent\",\"health_weighting\":false,"
				   "\"targets\":[{\"backend\":\"primary\",\"weight\":80},"
				   "{\"backend\":\"canary\",\"weight\":20,\"canary\":true}]}]}"),
			 0);
	calls(1000);
	p = mock_requests(&T.mock, "primary");
	c = mock_requests(&T.mock, "canary");
	ck_assert_int_eq(p + c, 1000);
	/* 80/20 within ±5 points (sigma is 1.3 points at n = 1000) */
	ck_assert_msg(c >= 150 && c <= 250, "canary got %d of 1000", c);
	/* weights 100 / 0 through the API move all traffic */
	{
		struct http_resp r;

		ck_assert_int_eq(itd_req(&T, "PUT", "/v1/routes/intent/weights",
					 "{\"weights\":{\"primary\":0,\"canary\":100}}", "op-token",
					 5000, &r),
				 0);
		ck_assert_int_eq(r.status, 200);
		http_resp_free(&r);
	}
	calls(200);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), p);
	ck_assert_int_eq(mock_requests(&T.mock, "canary"), c + 200);
}
END_TEST

START_TEST(canary_guard_rolls_back_a_failing_canary)
{
	struct http_resp r;
	char script[4096];
	cJSON *st, *t;
	size_t n = 0;
	int i, w = -1;

	ck_assert_int_eq(
		itd_start(
			&T, HEAD TWO_BACKENDS
			"\"routes\":[{\"name\":\"intent\",\"health_weighting\":false,"
			"\"retry\":{\"max_retries\":0},"
			"\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"}}},"
			"\"canary_guard\":{\"min_calls\":20,\"max_failure_delta\":0.05,\"window_"
			"s\":60},"
			"\"targets\":[{\"backend\":\"primary\",\"weight\":50},"
			"{\"backend\":\"canary\",\"weight\":50,\"canary\":true}]}]}"),
		0);
	/* the canary fails 30 % of its requests (3 in 10), the primary none */
	n += (size_t)snprintf(script + n, sizeof script - n, "{\"script\":[");
	for (i = 0; i < 100; i++)
		n += (size_t)snprintf(script + n, sizeof script - n, "%s%s", i ? "," : "",
				      i % 10 < 3 ? "{\"status\":500}" : "{}");
	snprintf(script + n, sizeof script - n, "]}");
	ck_assert_int_eq(mock_set(&T.mock, "canary", script), 0);
	calls(120);
	/* the guard looks once a second */
	for (i = 0; i < 30 && w != 0; i++) {
		usleep(100 * 1000);
		ck_assert_int_eq(itd_req(&T, "GET", "/v1/state", NULL, "view-token", 5000, &r), 0);
		st = itd_json(&r);
		http_resp_free(&r);
		cJSON_ArrayForEach(
			t, cJSON_GetObjectItem(
				   cJSON_GetArrayItem(cJSON_GetObjectItem(st, "routes"), 0),
				   "targets")) if (strcmp(itd_str(t, "backend"), "canary") == 0) w =
			(int)itd_num(t, "weight");
		cJSON_Delete(st);
	}
	ck_assert_int_eq(w, 0);
	ck_assert_int_eq(itd_count(&T, "audit WHERE actor='canary_guard' AND action='weights.set'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "overrides WHERE kind='weights' AND actor='canary_guard'"),
			 1);
	ASSERT_COUNT("events WHERE kind='canary_rollback' AND subject='intent'", 1);
	ASSERT_COUNT("alerts WHERE rule='canary_guard:canary' AND state='firing'", 1);
	/* no more canary traffic; an operator can put weight back */
	i = mock_requests(&T.mock, "canary");
	calls(50);
	ck_assert_int_eq(mock_requests(&T.mock, "canary"), i);
	ck_assert_int_eq(itd_req(&T, "PUT", "/v1/routes/intent/weights",
				 "{\"weights\":{\"canary\":5}}", "op-token", 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
}
END_TEST

START_TEST(dynamic_timeout_follows_latency_and_input)
{
	char body[8192];
	int i;
	long long small, large;

	ck_assert_int_eq(
		itd_start(&T, HEAD
			  "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
			  "completions\","
			  "\"model\":\"m\",\"max_concurrent\":500}],"
			  "\"routes\":[{\"name\":\"intent\",\"budget_ms\":60000,"
			  "\"timeout\":{\"mode\":\"dynamic\",\"percentile\":0.9,\"window_s\":300,"
			  "\"per_100_tokens\":0.3,\"margin_ms\":500,\"min_ms\":600,\"max_ms\":5000,"
			  "\"default_ms\":8000},"
			  "\"targets\":[{\"backend\":\"primary\"}]}]}"),
		0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":200}"), 0);
	/* before 20 samples: default_ms, clipped by max? no: default stands */
	calls(1);
	ASSERT_COUNT("attempts WHERE timeout_ms = 8000", 1);
	calls(25);
	/* p90 ~ 200 ms: 200 x (1 + 0.3 x tokens/100) + 500 */
	{
		struct http_resp r;
		char url[128];

		snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
		ck_assert_int_eq(http_do("POST", url,
					 "{\"input\":\"short\",\"request_id\":\"dyn-small\"}", NULL,
					 5000, &r),
				 0);
		http_resp_free(&r);
		/* 4000 ASCII characters ~ 1000 tokens: 200 x 4 + 500 = 1300 */
		memset(body, 0, sizeof body);
		i = snprintf(body, sizeof body, "{\"request_id\":\"dyn-large\",\"input\":\"");
		memset(body + i, 'a', 4000);
		memcpy(body + i + 4000, "\"}", 3);
		ck_assert_int_eq(http_do("POST", url, body, NULL, 5000, &r), 0);
		http_resp_free(&r);
	}
	/* their calls rows come after their attempts rows (one queue, in order) */
	ASSERT_COUNT("calls WHERE request_id IN ('dyn-small', 'dyn-large')", 2);
	small = db_scalar_int(T.db, "SELECT timeout_ms FROM attempts WHERE request_id='dyn-small'");
	large = db_scalar_int(T.db, "SELECT timeout_ms FROM attempts WHERE request_id='dyn-large'");
	ck_assert_msg(small >= 600 && small <= 800, "small input: %lld", small);
	ck_assert_msg(large >= 1200 && large <= 1500, "large input: %lld", large);
	/* observed latency grows (600 ms fits the ~700 ms timeout): the
	 * timeout follows, 600 x (1 + 0.3 x tokens/100) + 500, within the clamp */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":600}"), 0);
	calls(10);
	calls(1); /* started after the ten 600 ms samples were recorded */
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "attempts WHERE id = (SELECT max(id) FROM attempts) AND "
				       "timeout_ms >= 1100 AND timeout_ms <= 1300"),
			 1);
}
END_TEST

START_TEST(browning_out_backend_loses_traffic_before_its_breaker)
{
	int b0, b1;

	ck_assert_int_eq(itd_start(&T, HEAD TWO_BACKENDS
				   "\"routes\":[{\"name\":\"intent\",\"budget_ms\":1000,"
				   "\"targets\":[{\"backend\":\"primary\",\"weight\":50},"
				   "{\"backend\":\"canary\",\"weight\":50}]}]}"),
			 0);
	/* the canary browns out: slow (p99 near the budget) but still answering */
	ck_assert_int_eq(mock_set(&T.mock, "canary", "{\"delay_ms\":850}"), 0);
	calls(100);
	b0 = mock_requests(&T.mock, "canary");
	calls(300);
	b1 = mock_requests(&T.mock, "canary") - b0;
	/* health ~0.3: its share falls from 50 % to well under 35 % */
	ck_assert_msg(b1 < 105, "the slow backend still got %d of 300", b1);
	ck_assert_msg(b1 > 0, "a slow backend keeps some traffic (health floor)");
	{
		struct http_resp r;
		cJSON *st, *b;

		ck_assert_int_eq(itd_req(&T, "GET", "/v1/state", NULL, "view-token", 5000, &r), 0);
		st = itd_json(&r);
		http_resp_free(&r);
		cJSON_ArrayForEach(b, cJSON_GetObjectItem(st, "backends"))
		{
			if (strcmp(itd_str(b, "name"), "canary") == 0) {
				ck_assert_str_eq(
					itd_str(cJSON_GetObjectItem(b, "breaker"), "state"),
					"closed");
				ck_assert_double_lt(itd_num(b, "health"), 0.6);
			} else {
				ck_assert_double_gt(itd_num(b, "health"), 0.9);
			}
		}
		cJSON_Delete(st);
	}
}
END_TEST

static Suite *
routing_suite(void)
{
	Suite *s = suite_create("routing");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 90)
	ADD(weighted_split_within_five_points);
	ADD(canary_guard_rolls_back_a_failing_canary);
	ADD(dynamic_timeout_follows_latency_and_input);
	ADD(browning_out_backend_loses_traffic_before_its_breaker);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(routing_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
