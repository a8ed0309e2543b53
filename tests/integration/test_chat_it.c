/*
 * Integration: the OpenAI-compatible facade (/v1/chat/completions), plain
 * and streaming, against fusebox-mockllm: chunk relay timing (the first
 * chunk reaches the caller before the upstream finishes), first-token
 * timeout falling down the ladder, the idle-gap cut-off after the first
 * token, OpenAI-shaped errors.
 */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itd.h"

static struct itd T;

static const char *config =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/completions\","
	"\"model\":\"m\",\"timeouts\":{\"connect_ms\":1000,\"first_byte_ms\":400,\"total_ms\":5000}"
	","
	"\"breaker\":{\"failure_threshold\":1000}}],"
	"\"routes\":[{\"name\":\"intent\",\"budget_ms\":5000,\"targets\":[{\"backend\":\"primary\"}"
	"],"
	"\"retry\":{\"max_retries\":0},"
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"}}]},"
	"\"preset\":{\"text\":\"Sorry, please try again shortly.\"}}]}";

static void
setup(void)
{
	ck_assert_int_eq(itd_start(&T, config), 0);
}

static void
teardown(void)
{
	itd_stop(&T);
}

#define BODY(stream, text)                                                                         \
	"{\"model\":\"fusebox/intent\",\"stream\":" stream                                         \
	",\"temperature\":0.3,\"max_tokens\":64,"                                                  \
	"\"messages\":[{\"role\":\"system\",\"content\":\"be "                                     \
	"brief\"},{\"role\":\"user\",\"content\":\"" text "\"}]}"

START_TEST(plain_completion_passes_messages_through)
{
	struct http_resp r;
	cJSON *o, *st, *body, *msgs;
	char *src;

	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 BODY("false", "I want a refund"), NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	src = http_resp_header(&r, "X-Fusebox-Source");
	ck_assert_str_eq(src, "llm");
	free(src);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(o, "object"), "chat.completion");
	/* the backend's model answered (issue 26); fusebox.route keeps the route */
	ck_assert_str_eq(itd_str(o, "model"), "m");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "route"), "intent");
	ck_assert_ptr_nonnull(
		strstr(itd_str(cJSON_GetObjectItem(
				       cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0),
				       "message"),
			       "content"),
		       "refund"));
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "source"), "llm");
	ck_assert_int_gt((int)itd_num(cJSON_GetObjectItem(o, "usage"), "total_tokens"), 0);
	cJSON_Delete(o);
	http_resp_free(&r);
	/* what the upstream got: the caller's messages and parameters */
	st = mock_stats(&T.mock);
	body = cJSON_GetObjectItem(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), "primary"),
			"last_request"),
		"body");
	msgs = cJSON_GetObjectItem(body, "messages");
	ck_assert_int_eq(cJSON_GetArraySize(msgs), 2);
	ck_assert_str_eq(itd_str(cJSON_GetArrayItem(msgs, 0), "content"), "be brief");
	ck_assert_double_eq_tol(itd_num(body, "temperature"), 0.3, 1e-9);
	ck_assert_int_eq((int)itd_num(body, "max_tokens"), 64);
	ck_assert_str_eq(itd_str(body, "model"), "m");
	cJSON_Delete(st);
}
END_TEST

START_TEST(plain_degraded_is_still_a_completion)
{
	struct http_resp r;
	cJSON *o, *msg;

	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":503}"), 0);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions", BODY("false", "refund now"),
				 NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	o = itd_json(&r);
	msg = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0),
				  "message");
	ck_assert_str_eq(itd_str(msg, "content"), "{\"intent\":\"refund\"}");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "source"), "rules");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "reason"), "http_5xx");
	cJSON_Delete(o);
	http_resp_free(&r);
	/* no rule matches: the preset text */
	ck_assert_int_eq(
		itd_req(&T, "POST", "/v1/chat/completions", BODY("false", "hello"), NULL, 5000, &r),
		0);
	o = itd_json(&r);
	msg = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0),
				  "message");
	ck_assert_str_eq(itd_str(msg, "content"), "Sorry, please try again shortly.");
	cJSON_Delete(o);
	http_resp_free(&r);
}
END_TEST

START_TEST(unknown_model_is_openai_404)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"gpt-9\",\"messages\":[{\"role\":\"user\","
				 "\"content\":\"x\"}]}",
				 NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 404);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "code"), "model_not_found");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "type"), "invalid_request_error");
	ck_assert_ptr_nonnull(strstr(itd_str(cJSON_GetObjectItem(o, "error"), "message"), "gpt-9"));
	cJSON_Delete(o);
	http_resp_free(&r);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions", "{\"model\":\"intent\"}", NULL,
				 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 400);
	ck_assert_ptr_nonnull(strstr(r.body, "messages"));
	http_resp_free(&r);
}
END_TEST

/* A streaming client that records when each SSE event arrived. */
struct sse_rec {
	int64_t start;
	int64_t first_content_ms; /* -1 until a non-empty content delta */
	int64_t done_ms;
	int events;
	struct {
		char *data;
		size_t len;
	} all;
	char line[65536];
	size_t linelen;
	char content[4096]; /* the deltas joined */
};

static void
sse_event(struct sse_rec *s, const char *data)
{
	cJSON *o;
	const cJSON *delta;

	s->events++;
	if (strcmp(data, "[DONE]") == 0) {
		s->done_ms = harness_now_ms() - s->start;
		return;
	}
	o = cJSON_Parse(data);
	delta = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0),
				    "delta");
	if (s->first_content_ms < 0 && delta && strlen(itd_str(delta, "content")) > 0)
		s->first_content_ms = harness_now_ms() - s->start;
	if (delta)
		strncat(s->content, itd_str(delta, "content"),
			sizeof s->content - strlen(s->content) - 1);
	cJSON_Delete(o);
}

static size_t
sse_write(char *p, size_t sz, size_t n, void *arg)
{
	struct sse_rec *s = arg;
	size_t len = sz * n, i;

	s->all.data = realloc(s->all.data, s->all.len + len + 1);
	memcpy(s->all.data + s->all.len, p, len);
	s->all.len += len;
	s->all.data[s->all.len] = '\0';
	for (i = 0; i < len; i++) {
		if (p[i] == '\n') {
			s->line[s->linelen] = '\0';
			if (strncmp(s->line, "data: ", 6) == 0)
				sse_event(s, s->line + 6);
			s->linelen = 0;
		} else if (s->linelen < sizeof s->line - 1) {
			s->line[s->linelen++] = p[i];
		}
	}
	return len;
}

static void
stream_call(const char *body, struct sse_rec *s)
{
	char url[128];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();

	memset(s, 0, sizeof *s);
	s->first_content_ms = -1;
	s->done_ms = -1;
	snprintf(url, sizeof url, "%s/v1/chat/completions", T.base);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	s->start = harness_now_ms();
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

START_TEST(stream_relays_chunks_as_they_come)
{
	struct sse_rec s;

	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"stream_first_delay_ms\":100,\"stream_chunk_ms\":300}"),
			 0);
	stream_call(BODY("true", "refund"), &s);
	/* first content after ~100 ms, the end after ~100 + 3 x 300 ms */
	ck_assert_msg(s.first_content_ms >= 90 && s.first_content_ms < 350, "first %lld",
		      (long long)s.first_content_ms);
	ck_assert_msg(s.done_ms >= 900, "done %lld", (long long)s.done_ms);
	ck_assert_msg(s.first_content_ms < s.done_ms - 500, "first chunk was held back");
	ck_assert_ptr_nonnull(strstr(s.all.data, "\"source\":\"llm\""));
	ck_assert_ptr_nonnull(strstr(s.all.data, "\"finish_reason\":\"stop\""));
	ck_assert_ptr_nonnull(strstr(s.all.data, "chat.completion.chunk"));
	ck_assert_str_eq(s.content, "{\"intent\":\"refund\",\"confidence\":0.92,\"summary\":"
				    "\"customer wants a refund\"}");
	free(s.all.data);
	itd_settle();
	/* time to first token is the attempt's first byte */
	ck_assert_int_eq(itd_count(&T, "attempts WHERE outcome='ok' AND first_byte_ms >= 90 AND "
				       "first_byte_ms < 350"),
			 1);
}
END_TEST

START_TEST(stream_first_token_timeout_falls_down_the_ladder)
{
	struct sse_rec s;

	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"stream_first_delay_ms\":3000}"), 0);
	stream_call(BODY("true", "refund"), &s);
	ck_assert_msg(s.done_ms >= 390 && s.done_ms < 900, "done %lld", (long long)s.done_ms);
	ck_assert_ptr_nonnull(strstr(s.all.data, "\"source\":\"rules\""));
	ck_assert_ptr_nonnull(strstr(s.all.data, "\"reason\":\"first_byte_timeout\""));
	ck_assert_str_eq(s.content, "{\"intent\":\"refund\"}");
	ck_assert_int_ge(s.events, 5); /* role, >= 2 content pieces, stop, [DONE] */
	ck_assert_ptr_nonnull(strstr(s.all.data, "data: [DONE]"));
	free(s.all.data);
}
END_TEST

START_TEST(stream_idle_gap_ends_with_an_error_event)
{
	struct sse_rec s;

	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"stream_first_delay_ms\":50,\"stream_chunk_ms\":2000}"),
			 0);
	stream_call(BODY("true", "refund"), &s);
	/* first token at ~50 ms, then silence: cut 400 ms later, no fallback */
	ck_assert_msg(s.first_content_ms >= 40 && s.first_content_ms < 300, "first %lld",
		      (long long)s.first_content_ms);
	ck_assert_msg(s.done_ms >= 440 && s.done_ms < 1000, "done %lld", (long long)s.done_ms);
	ck_assert_ptr_nonnull(strstr(s.all.data, "\"error\""));
	ck_assert_ptr_nonnull(strstr(s.all.data, "total_timeout"));
	ck_assert_ptr_null(strstr(s.all.data, "\"source\":\"rules\""));
	free(s.all.data);
}
END_TEST

static Suite *
chat_suite(void)
{
	Suite *s = suite_create("chat");

#define ADD(t) ITD_ADD_TEST(s, t, setup, teardown, 60)
	ADD(plain_completion_passes_messages_through);
	ADD(plain_degraded_is_still_a_completion);
	ADD(unknown_model_is_openai_404);
	ADD(stream_relays_chunks_as_they_come);
	ADD(stream_first_token_timeout_falls_down_the_ladder);
	ADD(stream_idle_gap_ends_with_an_error_event);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(chat_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
