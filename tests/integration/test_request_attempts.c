/*
 * Integration: GET /v1/requests/{request_id} carries the call's attempts
 * from the attempts table, each with the upstream headers its backend
 * recorded (backends[].record_response_headers), the API key of a backend
 * redacted from them; the fields it had before stay as they were.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itd.h"

#define KEY "sk-fbtest-0123456789abcdef"
#define CONFIG                                                                                     \
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","            \
	"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/completions\","    \
	"\"model\":\"m\",\"api_key_env\":\"FB_TEST_REQ_KEY\",\"record_response_headers\":"         \
	"[\"X-Mock-Backend\",\"Retry-After\",\"X-Not-Sent\"]}],"                                   \
	"\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,\"retry\":{\"max_retries\":1,"        \
	"\"backoff\":\"none\",\"retry_on\":[\"http_5xx\"]},"                                       \
	"\"targets\":[{\"backend\":\"primary\"}],"                                                 \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\"]}},"                 \
	"\"rules\":{\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}}}]}"

static struct itd T;

static void
setup(void)
{
	setenv("FB_TEST_REQ_KEY", KEY, 1);
	ck_assert_int_eq(itd_start(&T, CONFIG), 0);
}

static void
teardown(void)
{
	itd_stop(&T);
}

/* GET /v1/requests/id once its n attempts rows are written (caller deletes). */
static cJSON *
request_with_attempts(const char *id, int n)
{
	char q[160];

	snprintf(q, sizeof q, "attempts WHERE request_id = '%s'", id);
	ck_assert_int_eq(itd_count_wait(&T, q, n, 5000), n);
	snprintf(q, sizeof q, "/v1/requests/%s", id);
	return itd_expect(&T, "GET", q, NULL, "view-token", 200);
}

START_TEST(attempts_carry_recorded_headers)
{
	struct http_resp r;
	cJSON *o, *h;
	const cJSON *arr, *a;
	char *text;

	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"content\":\"{\\\"intent\\\":\\\"refund\\\"}\",\"status\":200,"
				  "\"retry_after\":\"3 " KEY "\"}"),
			 0);
	ck_assert_int_eq(
		itd_call(&T, "intent", "{\"input\":\"x\",\"request_id\":\"ra-1\"}", 10000, &r), 0);
	ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
	http_resp_free(&r);
	o = request_with_attempts("ra-1", 1);
	/* the fields it had stay */
	ck_assert_str_eq(itd_str(o, "request_id"), "ra-1");
	ck_assert_str_eq(itd_str(o, "route"), "intent");
	ck_assert_str_eq(itd_str(o, "status"), "done");
	ck_assert(cJSON_IsObject(cJSON_GetObjectItem(o, "response")));
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "trace_id"));
	arr = cJSON_GetObjectItem(o, "attempts");
	ck_assert(cJSON_IsArray(arr));
	ck_assert_int_eq(cJSON_GetArraySize(arr), 1);
	a = cJSON_GetArrayItem(arr, 0);
	ck_assert_int_eq((int)itd_num(a, "attempt_no"), 1);
	ck_assert_str_eq(itd_str(a, "backend"), "primary");
	ck_assert_str_eq(itd_str(a, "outcome"), "ok");
	ck_assert_int_eq((int)itd_num(a, "http_status"), 200);
	ck_assert(itd_num(a, "connect_ms") >= 0);
	ck_assert(itd_num(a, "first_byte_ms") >= 0);
	ck_assert(itd_num(a, "total_ms") >= itd_num(a, "first_byte_ms"));
	ck_assert_int_eq((int)strlen(itd_str(a, "span_id")), 16);
	h = cJSON_GetObjectItem(a, "upstream_headers");
	ck_assert(cJSON_IsObject(h));
	ck_assert_str_eq(itd_str(h, "x-mock-backend"), "primary");
	ck_assert(strncmp(itd_str(h, "retry-after"), "3 ", 2) == 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(h, "x-not-sent"));
	/* the backend's key never leaves, neither in the store nor in the answer */
	text = cJSON_PrintUnformatted(o);
	ck_assert_ptr_null(strstr(text, KEY));
	free(text);
	ck_assert_int_eq(itd_count(&T, "attempts WHERE upstream_headers LIKE '%" KEY "%'"), 0);
	cJSON_Delete(o);
}
END_TEST

/* A retried call: both attempts in order, each with its own outcome and headers. */
START_TEST(retried_call_lists_every_attempt)
{
	struct http_resp r;
	cJSON *o;
	const cJSON *arr, *a0, *a1;

	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"script\":[{\"status\":503},{\"content\":\"{\\\"intent\\\":"
				  "\\\"refund\\\"}"
				  "\",\"status\":200}]}"),
			 0);
	ck_assert_int_eq(
		itd_call(&T, "intent", "{\"input\":\"x\",\"request_id\":\"ra-2\"}", 10000, &r), 0);
	ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
	http_resp_free(&r);
	o = request_with_attempts("ra-2", 2);
	arr = cJSON_GetObjectItem(o, "attempts");
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
	a0 = cJSON_GetArrayItem(arr, 0);
	a1 = cJSON_GetArrayItem(arr, 1);
	ck_assert_int_eq((int)itd_num(a0, "attempt_no"), 1);
	ck_assert_str_eq(itd_str(a0, "outcome"), "http_5xx");
	ck_assert_int_eq((int)itd_num(a0, "http_status"), 503);
	ck_assert_int_eq((int)itd_num(a1, "attempt_no"), 2);
	ck_assert_str_eq(itd_str(a1, "outcome"), "ok");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(a1, "upstream_headers"), "x-mock-backend"),
			 "primary");
	ck_assert_str_ne(itd_str(a0, "span_id"), itd_str(a1, "span_id"));
	cJSON_Delete(o);
}
END_TEST

/* A request without attempts rows (none yet, or none made) has an empty list. */
START_TEST(no_attempts_empty_list)
{
	cJSON *o;

	itd_expect_error(&T, "GET", "/v1/requests/nope", NULL, "view-token", 404, "unknown_request",
			 "nope");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":200,\"content\":\"x\"}"), 0);
	o = itd_expect(&T, "POST", "/v1/routes/intent/call",
		       "{\"input\":\"x\",\"request_id\":\"ra-3\",\"allow_llm\":false}",
		       "call-token", 200);
	cJSON_Delete(o);
	itd_settle();
	o = itd_expect(&T, "GET", "/v1/requests/ra-3", NULL, "view-token", 200);
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(o, "attempts")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "attempts")), 0);
	cJSON_Delete(o);
}
END_TEST

static Suite *
request_attempts_suite(void)
{
	Suite *s = suite_create("request_attempts");

	ITD_ADD_TEST(s, attempts_carry_recorded_headers, setup, teardown, 60);
	ITD_ADD_TEST(s, retried_call_lists_every_attempt, setup, teardown, 60);
	ITD_ADD_TEST(s, no_attempts_empty_list, setup, teardown, 60);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(request_attempts_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
