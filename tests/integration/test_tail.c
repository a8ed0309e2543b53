/*
 * Integration: the tail (issue 23) — hedged attempts, rate limits read
 * before they bite, the adaptive concurrency limit — against scripted
 * mock backends: answers, timings, mock request counts, attempts rows,
 * /v1/state and /metrics.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itd.h"

static struct itd T;

#define HEAD "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
#define BACKEND(name, extra)                                                                       \
	"{\"name\":\"" name "\",\"url\":\"@MOCK@/b/" name "/v1/chat/completions\","                \
	"\"model\":\"m\",\"breaker\":{\"failure_threshold\":100000}" extra "}"
#define RULES "\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"}}}"

static void
teardown(void)
{
	itd_stop(&T);
}

/* Poll the database until the count reaches want (the writer commits in the background). */
static long long
count_eventually(const char *sql_tail, long long want)
{
	long long n = -1;
	int i;

	for (i = 0; i < 40; i++) {
		n = itd_count(&T, sql_tail);
		if (n == want)
			break;
		usleep(50 * 1000);
	}
	return n;
}

static cJSON *
call(const char *body, int want_status)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_call(&T, "intent", body, 10000, &r), 0);
	ck_assert_msg((int)r.status == want_status, "status %ld: %s", r.status,
		      r.body ? r.body : "");
	o = itd_json(&r);
	http_resp_free(&r);
	return o;
}

static cJSON *
state_backend(const char *name)
{
	struct http_resp r;
	cJSON *st, *b, *out = NULL;

	ck_assert_int_eq(itd_req(&T, "GET", "/v1/state", NULL, "view-token", 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	st = itd_json(&r);
	http_resp_free(&r);
	cJSON_ArrayForEach(b, cJSON_GetObjectItem(st, "backends"))
	{
		if (strcmp(itd_str(b, "name"), name) == 0)
			out = cJSON_Duplicate(b, 1);
	}
	cJSON_Delete(st);
	ck_assert_ptr_nonnull(out);
	return out;
}

#define HEDGED_ROUTE(hedge)                                                                        \
	"\"routes\":[{\"name\":\"intent\",\"budget_ms\":4000,\"min_attempt_ms\":100,"              \
	"\"retry\":{\"max_retries\":0,\"hedge\":" hedge "}," RULES ","                             \
	"\"targets\":[{\"backend\":\"primary\",\"weight\":100}]}]}"

START_TEST(hedge_answers_before_a_slow_first_attempt)
{
	int64_t t0;
	cJSON *o, *b;
	long elapsed;

	ck_assert_int_eq(
		itd_start(&T, HEAD "\"backends\":[" BACKEND("primary", "") "]," HEDGED_ROUTE(
				      "{\"after_ms\":150,\"targets\":\"same\"}")),
		0);
	/* the first request hangs for 3 s; the next answers at once */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"script\":[{\"delay_ms\":3000},{}]}"), 0);
	t0 = harness_now_ms();
	o = call("{\"input\":\"refund\"}", 200);
	elapsed = (long)(harness_now_ms() - t0);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
	/* the hedge went after 150 ms and answered: far from the 3 s of the first */
	ck_assert_msg(elapsed < 1500, "answered after %ld ms", elapsed);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
	/* the loser is logged as hedge_cancelled, which is no breaker failure */
	ck_assert_int_eq(count_eventually("attempts WHERE outcome = 'hedge_cancelled'", 1), 1);
	ck_assert_int_eq(count_eventually("attempts WHERE outcome = 'ok'", 1), 1);
	b = state_backend("primary");
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(b, "breaker"), "failures"), 0);
	cJSON_Delete(b);
	ck_assert_double_eq(itd_metric(&T, "fusebox_hedges_total{route=\"intent\",result=\"won\"}"),
			    1);
	ck_assert_double_eq(
		itd_metric(&T, "fusebox_hedges_total{route=\"intent\",result=\"lost\"}"), 0);
	ck_assert_double_eq(itd_metric(&T, "fusebox_attempts_total{backend=\"primary\","
					   "outcome=\"hedge_cancelled\"}"),
			    1);
}
END_TEST

START_TEST(hedge_cancelled_when_the_first_attempt_answers)
{
	cJSON *o;

	ck_assert_int_eq(
		itd_start(&T, HEAD "\"backends\":[" BACKEND("primary", "") "]," HEDGED_ROUTE(
				      "{\"after_ms\":100,\"targets\":\"same\"}")),
		0);
	/* the first answers at 400 ms, its hedge would take 3 s */
	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"script\":[{\"delay_ms\":400},{\"delay_ms\":3000}]}"),
			 0);
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	ck_assert_int_lt((int)itd_num(o, "elapsed_ms"), 1500);
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
	ck_assert_int_eq(count_eventually("attempts WHERE outcome = 'hedge_cancelled'", 1), 1);
	ck_assert_double_eq(
		itd_metric(&T, "fusebox_hedges_total{route=\"intent\",result=\"lost\"}"), 1);
	ck_assert_double_eq(itd_metric(&T, "fusebox_hedges_total{route=\"intent\",result=\"won\"}"),
			    0);
}
END_TEST

START_TEST(hedges_are_held_to_the_retry_budget)
{
	cJSON *o;

	/* a retry budget of nothing: the hedge is due but never sent */
	ck_assert_int_eq(
		itd_start(&T,
			  HEAD "\"backends\":[" BACKEND(
				  "primary",
				  "") "],"
				      "\"routes\":[{\"name\":\"intent\",\"budget_ms\":4000,"
				      "\"retry\":{\"max_retries\":0,\"budget_ratio\":0,"
				      "\"budget_min_per_s\":0,\"hedge\":{\"after_ms\":100}}," RULES
				      ","
				      "\"targets\":[{\"backend\":\"primary\",\"weight\":100}]}]}"),
		0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"script\":[{\"delay_ms\":600},{}]}"), 0);
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	ck_assert_int_ge((int)itd_num(o, "elapsed_ms"), 550);
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 1);
	ck_assert_double_eq(
		itd_metric(&T, "fusebox_hedges_total{route=\"intent\",result=\"denied\"}"), 1);
}
END_TEST

START_TEST(hedge_goes_to_the_other_backend)
{
	int i, p0, s0, hedged = 0;
	cJSON *o;

	ck_assert_int_eq(
		itd_start(&T,
			  HEAD "\"backends\":[" BACKEND("primary", "") "," BACKEND(
				  "second",
				  "") "],"
				      "\"routes\":[{\"name\":\"intent\",\"budget_ms\":4000,"
				      "\"health_weighting\":false,"
				      "\"retry\":{\"max_retries\":0,\"hedge\":{\"after_ms\":150,"
				      "\"targets\":\"other\"}}," RULES ","
				      "\"targets\":[{\"backend\":\"primary\",\"weight\":50},"
				      "{\"backend\":\"second\",\"weight\":50}]}]}"),
		0);
	/* primary hangs, second is quick: a call that starts on primary is
	 * hedged on second (one that starts on second just answers) */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":3000}"), 0);
	for (i = 0; i < 16 && !hedged; i++) {
		p0 = mock_requests(&T.mock, "primary");
		s0 = mock_requests(&T.mock, "second");
		o = call("{\"input\":\"refund\"}", 200);
		ck_assert_str_eq(itd_str(o, "source"), "llm");
		ck_assert_int_lt((int)itd_num(o, "elapsed_ms"), 1500);
		cJSON_Delete(o);
		ck_assert_int_eq(mock_requests(&T.mock, "second"), s0 + 1);
		hedged = mock_requests(&T.mock, "primary") == p0 + 1;
	}
	ck_assert_msg(hedged, "no call of 16 started on primary");
	ck_assert_double_eq(itd_metric(&T, "fusebox_hedges_total{route=\"intent\",result=\"won\"}"),
			    1);
}
END_TEST

/* A streamed facade call of route intent: the whole SSE body. */
static char *
stream_call(long *elapsed_ms)
{
	static const char *const hdrs[] = {"Content-Type: application/json", NULL};
	char url[128];
	struct http_resp r;
	int64_t t0 = harness_now_ms();
	char *body;

	snprintf(url, sizeof url, "%s/v1/chat/completions", T.base);
	ck_assert_int_eq(http_do("POST", url,
				 "{\"model\":\"intent\",\"stream\":true,\"messages\":"
				 "[{\"role\":\"user\",\"content\":\"refund\"}]}",
				 hdrs, 10000, &r),
			 0);
	*elapsed_ms = (long)(harness_now_ms() - t0);
	ck_assert_int_eq(r.status, 200);
	body = r.body;
	r.body = NULL;
	http_resp_free(&r);
	return body;
}

static int
occurrences(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

#define STREAM_ROUTE(after)                                                                        \
	"\"routes\":[{\"name\":\"intent\",\"budget_ms\":5000,"                                     \
	"\"retry\":{\"max_retries\":0,\"hedge\":{\"after_ms\":" after ",\"targets\":\"same\"}},"   \
	"\"targets\":[{\"backend\":\"primary\",\"weight\":100}]}]}"

START_TEST(stream_hedges_before_its_first_byte_only)
{
	long elapsed;
	char *body;

	ck_assert_int_eq(itd_start(&T, HEAD "\"backends\":[" BACKEND("primary",
								     "") "]," STREAM_ROUTE("150")),
			 0);
	/* the first stream's first chunk would take 3 s; the hedge's comes at once */
	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"script\":[{\"stream_first_delay_ms\":3000,"
				  "\"stream_chunk_ms\":20},{\"stream_chunk_ms\":20}]}"),
			 0);
	body = stream_call(&elapsed);
	ck_assert_msg(elapsed < 1500, "streamed in %ld ms", elapsed);
	/* one stream reached the caller: one role chunk, one finish, one [DONE] */
	ck_assert_int_eq(occurrences(body, "[DONE]"), 1);
	ck_assert_int_eq(occurrences(body, "\"finish_reason\":\"stop\""), 1);
	free(body);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
	ck_assert_int_eq(count_eventually("attempts WHERE outcome = 'hedge_cancelled'", 1), 1);
	ck_assert_double_eq(itd_metric(&T, "fusebox_hedges_total{route=\"intent\",result=\"won\"}"),
			    1);
}
END_TEST

START_TEST(two_streams_racing_reach_the_caller_as_one)
{
	long elapsed;
	char *body;
	int i;

	ck_assert_int_eq(itd_start(&T, HEAD "\"backends\":[" BACKEND("primary",
								     "") "]," STREAM_ROUTE("100")),
			 0);
	for (i = 0; i < 3; i++) {
		/* both first chunks land at about 300 ms: the first to arrive streams,
		 * the other is cancelled and nothing of it reaches the caller */
		ck_assert_int_eq(mock_set(&T.mock, "primary",
					  "{\"script\":[{\"stream_first_delay_ms\":300,"
					  "\"stream_chunk_ms\":30},{\"stream_first_delay_ms\":200,"
					  "\"stream_chunk_ms\":30}]}"),
				 0);
		body = stream_call(&elapsed);
		ck_assert_int_eq(occurrences(body, "[DONE]"), 1);
		ck_assert_int_eq(occurrences(body, "\"finish_reason\":\"stop\""), 1);
		/* one stream's text, once: its first and last pieces appear once */
		ck_assert_msg(occurrences(body, "intent\\\":\\\"refund") == 1 &&
				      occurrences(body, "wants a refund") == 1,
			      "two streams reached the caller: %s", body);
		free(body);
	}
	ck_assert_int_eq(count_eventually("attempts WHERE outcome = 'hedge_cancelled'", 3), 3);
}
END_TEST

START_TEST(rate_limit_by_config_falls_without_reaching_the_backend)
{
	cJSON *o, *b;
	char *text;
	int i;

	ck_assert_int_eq(
		itd_start(
			&T,
			HEAD "\"backends\":[" BACKEND(
				"primary",
				",\"rate_limits\":{\"rpm\":3}") "],"
								"\"routes\":[{\"name\":\"intent\","
								"\"retry\":{\"max_retries\":0}"
								"," RULES
								",\"targets\":[{\"backend\":"
								"\"primary\",\"weight\":100}]}]}"),
		0);
	for (i = 0; i < 3; i++) {
		o = call("{\"input\":\"refund\"}", 200);
		ck_assert_str_eq(itd_str(o, "source"), "llm");
		cJSON_Delete(o);
	}
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "rules");
	ck_assert_str_eq(itd_str(o, "reason"), "rate_limited_local");
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 3);
	ck_assert_int_eq(count_eventually("degradations WHERE reason = 'rate_limited_local'", 1),
			 1);
	ck_assert_double_eq(itd_metric(&T, "fusebox_rate_limited_local_total{backend=\"primary\"}"),
			    1);
	b = state_backend("primary");
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(b, "rate_limits"), "skipped"), 1);
	cJSON_Delete(b);
	/* the diagnosis names it and says nothing was sent */
	o = itd_expect(&T, "GET", "/v1/diagnose?route=intent&since=10m", NULL, "view-token", 200);
	b = cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0),
				    "causes"),
		0);
	ck_assert_str_eq(itd_str(b, "reason"), "rate_limited_local");
	ck_assert_str_eq(itd_str(b, "phase"), "rate_limit");
	text = cJSON_PrintUnformatted(o);
	ck_assert_ptr_nonnull(strstr(text, "calls were held back"));
	free(text);
	cJSON_Delete(o);
}
END_TEST

START_TEST(rate_limit_headers_steer_to_the_other_backend_until_the_reset)
{
	cJSON *o, *b;
	int i, p0;

	ck_assert_int_eq(
		itd_start(&T, HEAD "\"backends\":[" BACKEND("primary", "") "," BACKEND(
				      "second",
				      "") "],"
					  "\"routes\":[{\"name\":\"intent\",\"retry\":{\"max_"
					  "retries\":0},"
					  "\"health_weighting\":false," RULES ","
					  "\"targets\":[{\"backend\":\"primary\",\"weight\":100}],"
					  "\"backup\":{\"targets\":[{\"backend\":\"second\"}]}}]}"),
		0);
	/* the provider announces 5 requests left and a reset in 2 s */
	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"ratelimit_requests\":5,\"ratelimit_reset_ms\":2000}"),
			 0);
	for (i = 0; i < 5; i++) {
		o = call("{\"input\":\"refund\"}", 200);
		ck_assert_str_eq(itd_str(o, "source"), "llm");
		cJSON_Delete(o);
	}
	b = state_backend("primary");
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(b, "rate_limits"), "remaining_requests"),
			 0);
	cJSON_Delete(b);
	/* the 6th within the window does not reach it: the backup answers */
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "backup");
	ck_assert_str_eq(itd_str(o, "reason"), "rate_limited_local");
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 5);
	ck_assert_int_eq(mock_requests(&T.mock, "second"), 1);
	/* after the reset calls go to it again */
	p0 = mock_requests(&T.mock, "primary");
	usleep(2200 * 1000);
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), p0 + 1);
}
END_TEST

START_TEST(over_the_adaptive_limit_calls_fall_concurrency_limited)
{
	struct itd_bg bg;
	cJSON *o, *b, *c;

	ck_assert_int_eq(
		itd_start(&T, HEAD "\"backends\":[" BACKEND(
				      "primary",
				      ",\"max_concurrent\":20,\"queue_ms\":0,"
				      "\"adaptive_concurrency\":{\"min_limit\":1,"
				      "\"initial_limit\":1}") "],"
							      "\"routes\":[{\"name\":\"intent\","
							      "\"retry\":{\"max_retries\":0}," RULES
							      ",\"targets\":[{\"backend\":"
							      "\"primary\",\"weight\":100}]}]}"),
		0);
	b = state_backend("primary");
	c = cJSON_GetObjectItem(b, "concurrency");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "adaptive")));
	ck_assert_int_eq((int)itd_num(c, "limit"), 1);
	ck_assert_int_eq((int)itd_num(c, "max"), 20);
	cJSON_Delete(b);
	ck_assert_double_eq(itd_metric(&T, "fusebox_concurrency_limit{backend=\"primary\"}"), 1);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":800}"), 0);
	ck_assert_int_eq(itd_bg_start(&bg, &T, "intent", "{\"input\":\"refund\"}"), 0);
	usleep(200 * 1000);
	/* one in flight is the limit: the second call falls at once */
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "rules");
	ck_assert_str_eq(itd_str(o, "reason"), "concurrency_limited");
	ck_assert_int_lt((int)itd_num(o, "elapsed_ms"), 400);
	cJSON_Delete(o);
	ck_assert_int_eq(itd_bg_join(&bg), 0);
	ck_assert_int_eq(bg.r.status, 200);
	http_resp_free(&bg.r);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 1);
	/* the limiter's window closes on the cron: its baseline is the answer's first byte */
	usleep(1200 * 1000);
	b = state_backend("primary");
	c = cJSON_GetObjectItem(b, "concurrency");
	ck_assert_msg(itd_num(c, "baseline_ms") >= 750 && itd_num(c, "baseline_ms") < 1200,
		      "baseline %f", itd_num(c, "baseline_ms"));
	cJSON_Delete(b);
	ck_assert_double_ge(
		itd_metric(&T, "fusebox_concurrency_baseline_seconds{backend=\"primary\"}"), 0.75);
}
END_TEST

START_TEST(adaptive_limit_backs_off_on_overload_answers)
{
	cJSON *b;
	int i, limit = -1;

	ck_assert_int_eq(itd_start(&T, HEAD "\"backends\":[" BACKEND(
					       "primary", ",\"max_concurrent\":40,"
							  "\"adaptive_concurrency\":{\"min_"
							  "limit\":2,"
							  "\"initial_limit\":20,\"window_ms\":"
							  "100}") "],"
								  "\"routes\":[{\"name\":"
								  "\"intent\",\"retry\":{\"max_"
								  "retries\":0}," RULES
								  ",\"targets\":[{\"backend\":"
								  "\"primary\",\"weight\":100}]"
								  "}]}"),
			 0);
	/* the server sheds load: every answer a 503 */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":503}"), 0);
	for (i = 0; i < 30; i++) {
		cJSON_Delete(call("{\"input\":\"refund\"}", 200));
		usleep(110 * 1000); /* one window each: a backoff per window */
	}
	b = state_backend("primary");
	limit = (int)itd_num(cJSON_GetObjectItem(b, "concurrency"), "limit");
	cJSON_Delete(b);
	/* 20 x 0.9^k falls to the floor of 2 and stays within its bounds */
	ck_assert_msg(limit >= 2 && limit < 10, "limit %d after 30 overloaded windows", limit);
	ck_assert_double_eq(itd_metric(&T, "fusebox_concurrency_limit{backend=\"primary\"}"),
			    limit);
}
END_TEST

static Suite *
tail_suite(void)
{
	Suite *s = suite_create("tail");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)
	ADD(hedge_answers_before_a_slow_first_attempt);
	ADD(hedge_cancelled_when_the_first_attempt_answers);
	ADD(hedges_are_held_to_the_retry_budget);
	ADD(hedge_goes_to_the_other_backend);
	ADD(stream_hedges_before_its_first_byte_only);
	ADD(two_streams_racing_reach_the_caller_as_one);
	ADD(rate_limit_by_config_falls_without_reaching_the_backend);
	ADD(rate_limit_headers_steer_to_the_other_backend_until_the_reset);
	ADD(over_the_adaptive_limit_calls_fall_concurrency_limited);
	ADD(adaptive_limit_backs_off_on_overload_answers);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tail_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
