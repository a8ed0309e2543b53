/*
 * Integration: the OpenAI facade complete (issue 26) and the caller-text
 * findings F7/F8 of issue 27, against fusebox-mockllm: tool calls are
 * answers (non-stream and streamed delta.tool_calls), honest finish
 * reasons, the backend's model, system_fingerprint and usage (also in
 * streams with include_usage), every request field passed through or
 * refused with a 400 naming it, /v1/models, real HTTP statuses with
 * Retry-After for streams that cannot start, invalid UTF-8 and C1
 * controls refused, API keys redacted from stored upstream bodies.
 */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itd.h"

static struct itd T;

#define KEY "sk-h11-secret-4711-abcdef"

static const char *config =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":["
	"{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/completions\","
	"\"model\":\"m-primary\",\"api_key_env\":\"FB_FACADE_KEY\","
	"\"timeouts\":{\"connect_ms\":1000,\"first_byte_ms\":400,\"total_ms\":5000},"
	"\"breaker\":{\"failure_threshold\":1000}},"
	"{\"name\":\"flaky\",\"url\":\"@MOCK@/b/flaky/v1/chat/completions\",\"model\":\"m-flaky\","
	"\"timeouts\":{\"connect_ms\":1000,\"first_byte_ms\":400,\"total_ms\":5000},"
	"\"breaker\":{\"failure_threshold\":1,\"open_ms\":7000}}],"
	"\"routes\":["
	"{\"name\":\"agent\",\"budget_ms\":5000,\"targets\":[{\"backend\":\"primary\"}],"
	"\"retry\":{\"max_retries\":0}},"
	"{\"name\":\"intent\",\"budget_ms\":5000,\"targets\":[{\"backend\":\"primary\"}],"
	"\"retry\":{\"max_retries\":0},"
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\"]}},"
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"}}]}},"
	"{\"name\":\"notools\",\"budget_ms\":5000,\"targets\":[{\"backend\":\"primary\"}],"
	"\"retry\":{\"max_retries\":0},\"output\":{\"tool_calls\":\"deny\"}},"
	"{\"name\":\"fragile\",\"budget_ms\":3000,\"targets\":[{\"backend\":\"flaky\"}],"
	"\"retry\":{\"max_retries\":0}}]}";

#define TOOL_CALLS                                                                                 \
	"{\"tool_calls\":[{\"id\":\"call_1\",\"name\":\"get_weather\","                            \
	"\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}]}"

#define TOOLS                                                                                      \
	"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","                \
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]"

#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"weather in Paris? refund\"}]"

static void
setup(void)
{
	setenv("FB_FACADE_KEY", KEY, 1);
	ck_assert_int_eq(itd_start(&T, config), 0);
}

static void
teardown(void)
{
	itd_stop(&T);
	unsetenv("FB_FACADE_KEY");
}

static cJSON *
choice0(const cJSON *o)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
}

static cJSON *
last_body(const char *backend)
{
	cJSON *st = mock_stats(&T.mock), *b;

	b = cJSON_DetachItemFromObject(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), backend),
			"last_request"),
		"body");
	cJSON_Delete(st);
	return b;
}

static double
backend_requests(const char *backend)
{
	cJSON *st = mock_stats(&T.mock);
	double n = itd_num(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), backend),
			   "requests");

	cJSON_Delete(st);
	return n;
}

static char *
header(struct http_resp *r, const char *name)
{
	return http_resp_header(r, name);
}

START_TEST(tool_calls_are_answers)
{
	struct http_resp r;
	cJSON *o, *msg, *tc, *body;

	ck_assert_int_eq(mock_set(&T.mock, "primary", TOOL_CALLS), 0);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"fusebox/agent\"," MSGS "," TOOLS
				 ",\"tool_choice\":\"auto\",\"parallel_tool_calls\":false,"
				 "\"seed\":7,\"top_p\":0.5,\"user\":\"u-1\",\"stop\":[\"END\"],"
				 "\"presence_penalty\":0.1,\"frequency_penalty\":0.2,"
				 "\"logit_bias\":{\"50256\":-100},\"metadata\":{\"k\":\"v\"},"
				 "\"logprobs\":false,\"max_completion_tokens\":99,"
				 "\"x_vendor_field\":{\"deep\":[1,2]}}",
				 NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(o, "model"), "m-primary");
	ck_assert_str_eq(itd_str(o, "system_fingerprint"), "fp_mock");
	ck_assert_str_eq(itd_str(choice0(o), "finish_reason"), "tool_calls");
	msg = cJSON_GetObjectItem(choice0(o), "message");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(msg, "content")));
	tc = cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "tool_calls"), 0);
	ck_assert_str_eq(itd_str(tc, "id"), "call_1");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(tc, "function"), "name"), "get_weather");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(tc, "function"), "arguments"),
			 "{\"city\":\"Paris\"}");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "source"), "llm");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "route"), "agent");
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "usage"), "completion_tokens"), 9);
	cJSON_Delete(o);
	http_resp_free(&r);
	/* every field went upstream unchanged */
	body = last_body("primary");
	ck_assert_str_eq(itd_str(cJSON_GetArrayItem(cJSON_GetObjectItem(body, "tools"), 0), "type"),
			 "function");
	ck_assert_str_eq(itd_str(body, "tool_choice"), "auto");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(body, "parallel_tool_calls")));
	ck_assert_int_eq((int)itd_num(body, "seed"), 7);
	ck_assert_double_eq_tol(itd_num(body, "top_p"), 0.5, 1e-9);
	ck_assert_str_eq(itd_str(body, "user"), "u-1");
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(body, "stop"), 0)->valuestring,
			 "END");
	ck_assert_double_eq_tol(itd_num(body, "frequency_penalty"), 0.2, 1e-9);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(body, "logit_bias"), "50256"), -100);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(body, "metadata"), "k"), "v");
	ck_assert_int_eq((int)itd_num(body, "max_completion_tokens"), 99);
	ck_assert_ptr_null(cJSON_GetObjectItem(body, "max_tokens"));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
				 cJSON_GetObjectItem(body, "x_vendor_field"), "deep")),
			 2);
	ck_assert_str_eq(itd_str(body, "model"), "m-primary");
	cJSON_Delete(body);
	itd_settle();
	/* an answer, not a failure; log.inputs (the default): the tool calls in the attempt row */
	ck_assert_int_eq(itd_count(&T, "attempts WHERE outcome='ok' AND raw_output LIKE "
				       "'[{\"id\":\"call_1\",%\"name\":\"get_weather\"%'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "calls WHERE source='llm' AND status='done'"), 1);
}
END_TEST

START_TEST(tool_call_conversation_goes_upstream_verbatim)
{
	struct http_resp r;
	cJSON *body, *msgs;

	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"content\":\"It is sunny.\"}"), 0);
	ck_assert_int_eq(
		itd_req(&T, "POST", "/v1/chat/completions",
			"{\"model\":\"agent\"," TOOLS ",\"messages\":["
			"{\"role\":\"user\",\"content\":\"weather?\"},"
			"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_"
			"1\","
			"\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
			"\"arguments\":\"{}\"}}]},"
			"{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny\"}]}",
			NULL, 5000, &r),
		0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "It is sunny."));
	http_resp_free(&r);
	body = last_body("primary");
	msgs = cJSON_GetObjectItem(body, "messages");
	ck_assert_int_eq(cJSON_GetArraySize(msgs), 3);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "content")));
	ck_assert_str_eq(
		itd_str(cJSON_GetArrayItem(
				cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "tool_calls"), 0),
			"id"),
		"call_1");
	ck_assert_str_eq(itd_str(cJSON_GetArrayItem(msgs, 2), "tool_call_id"), "call_1");
	ck_assert_str_eq(itd_str(cJSON_GetArrayItem(msgs, 2), "role"), "tool");
	cJSON_Delete(body);
}
END_TEST

/* keys of o named name */
static int
key_count(const cJSON *o, const char *name)
{
	const cJSON *c;
	int n = 0;

	for (c = o ? o->child : NULL; c; c = c->next)
		n += c->string && strcmp(c->string, name) == 0;
	return n;
}

START_TEST(duplicate_keys_reach_the_upstream_once)
{
	struct http_resp r;
	cJSON *body, *m0;

	/* the facade reads the first of a duplicated key: the upstream sees only that one */
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"agent\",\"messages\":[{\"role\":\"user\","
				 "\"content\":\"first\",\"content\":\"second\"}],"
				 "\"x_dup\":1,\"x_dup\":2}",
				 NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	body = last_body("primary");
	m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(body, "messages"), 0);
	ck_assert_int_eq(key_count(m0, "content"), 1);
	ck_assert_str_eq(itd_str(m0, "content"), "first");
	ck_assert_int_eq(key_count(body, "x_dup"), 1);
	ck_assert_int_eq((int)itd_num(body, "x_dup"), 1);
	cJSON_Delete(body);
}
END_TEST

START_TEST(tool_calls_on_a_schema_route_are_validation_format)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(mock_set(&T.mock, "primary", TOOL_CALLS), 0);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"intent\"," MSGS "}", NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "source"), "rules");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "fusebox"), "reason"), "validation_format");
	ck_assert_str_eq(itd_str(choice0(o), "finish_reason"), "stop");
	cJSON_Delete(o);
	http_resp_free(&r);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "validation_failures WHERE stage='format' AND "
				       "rule='tool_calls' AND detail LIKE '%output schema%'"),
			 1);
	/* the route cannot honour tools or n > 1: refused, naming the field */
	itd_expect_error(&T, "POST", "/v1/chat/completions",
			 "{\"model\":\"intent\"," MSGS "," TOOLS "}", NULL, 400,
			 "unsupported_parameter", "tools");
	itd_expect_error(&T, "POST", "/v1/chat/completions",
			 "{\"model\":\"intent\"," MSGS ",\"n\":2}", NULL, 400,
			 "unsupported_parameter", "n: route intent");
	itd_expect_error(&T, "POST", "/v1/chat/completions",
			 "{\"model\":\"notools\"," MSGS "," TOOLS "}", NULL, 400,
			 "unsupported_parameter", "output.tool_calls");
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"notools\"," MSGS ",\"n\":\"two\"}", NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 400);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "param"), "n");
	cJSON_Delete(o);
	http_resp_free(&r);
	/* a route with output.tool_calls deny: a tool-call reply is a format failure */
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"notools\"," MSGS "}", NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 503);
	http_resp_free(&r);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "validation_failures WHERE rule='tool_calls' AND detail "
				       "LIKE '%output.tool_calls is deny%'"),
			 1);
}
END_TEST

START_TEST(finish_reason_length_and_n_choices)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(
		mock_set(&T.mock, "primary",
			 "{\"content\":\"a long answer cut\",\"finish_reason\":\"length\"}"),
		0);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"agent\"," MSGS ",\"max_tokens\":3,\"n\":2}", NULL,
				 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	o = itd_json(&r);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "choices")), 2);
	ck_assert_str_eq(itd_str(choice0(o), "finish_reason"), "length");
	ck_assert_str_eq(
		itd_str(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 1), "finish_reason"),
		"length");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(
					 cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 1),
					 "message"),
				 "content"),
			 "a long answer cut");
	cJSON_Delete(o);
	http_resp_free(&r);
	o = last_body("primary");
	ck_assert_int_eq((int)itd_num(o, "n"), 2);
	ck_assert_int_eq((int)itd_num(o, "max_tokens"), 3);
	cJSON_Delete(o);
}
END_TEST

/* A streaming call; the raw SSE text into *out (caller frees); the status. */
static size_t
grow(char *p, size_t sz, size_t n, void *arg)
{
	struct {
		char *d;
		size_t len;
	} *b = arg;

	b->d = realloc(b->d, b->len + sz * n + 1);
	memcpy(b->d + b->len, p, sz * n);
	b->len += sz * n;
	b->d[b->len] = '\0';
	return sz * n;
}

static long
stream_call_h(const char *body, const char *hdr, char **out, char **retry_after)
{
	struct {
		char *d;
		size_t len;
	} b = {NULL, 0}, h = {NULL, 0};
	struct curl_slist *hs = curl_slist_append(NULL, "Content-Type: application/json");
	CURL *c = curl_easy_init();

	if (hdr)
		hs = curl_slist_append(hs, hdr);
	char url[128];
	long status = 0;

	snprintf(url, sizeof url, "%s/v1/chat/completions", T.base);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grow);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, grow);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hs);
	curl_easy_cleanup(c);
	*out = b.d ? b.d : strdup("");
	if (retry_after) {
		const char *p = h.d ? strcasestr(h.d, "\nRetry-After: ") : NULL;

		*retry_after = p ? strndup(p + 14, strcspn(p + 14, "\r\n")) : NULL;
	}
	free(h.d);
	return status;
}

static long
stream_call(const char *body, char **out, char **retry_after)
{
	return stream_call_h(body, NULL, out, retry_after);
}

/* The data: events of an SSE text, parsed (NULL for [DONE]); n of them. */
static int
sse_events(const char *text, cJSON **ev, int max)
{
	const char *p = text;
	int n = 0;

	while (n < max && (p = strstr(p, "data: ")) != NULL) {
		size_t len = strcspn(p + 6, "\n");
		char *d = strndup(p + 6, len);

		ev[n++] = strcmp(d, "[DONE]") == 0 ? NULL : cJSON_Parse(d);
		free(d);
		p += 6 + len;
	}
	return n;
}

START_TEST(stream_relays_tool_calls_and_usage)
{
	cJSON *ev[64], *last = NULL, *usage = NULL;
	char *text, args[256] = "", name[64] = "", finish[32] = "";
	int n, i;

	ck_assert_int_eq(mock_set(&T.mock, "primary", TOOL_CALLS), 0);
	ck_assert_int_eq(stream_call("{\"model\":\"agent\",\"stream\":true,"
				     "\"stream_options\":{\"include_usage\":true}," MSGS "," TOOLS
				     "}",
				     &text, NULL),
			 200);
	n = sse_events(text, ev, 64);
	ck_assert_ptr_null(ev[n - 1]); /* [DONE] */
	for (i = 0; i < n - 1; i++) {
		cJSON *c0 = choice0(ev[i]);
		cJSON *delta = cJSON_GetObjectItem(c0, "delta"), *t;

		ck_assert_msg(ev[i] != NULL, "event %d: %s", i, text);
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(delta, "tool_calls"))
		{
			cJSON *fn = cJSON_GetObjectItem(t, "function");

			if (cJSON_IsString(cJSON_GetObjectItem(fn, "name")))
				snprintf(name, sizeof name, "%s", itd_str(fn, "name"));
			strncat(args, itd_str(fn, "arguments"), sizeof args - strlen(args) - 1);
		}
		if (cJSON_IsString(cJSON_GetObjectItem(c0, "finish_reason"))) {
			snprintf(finish, sizeof finish, "%s", itd_str(c0, "finish_reason"));
			last = ev[i];
		}
		if (cJSON_GetObjectItem(ev[i], "usage"))
			usage = ev[i];
	}
	ck_assert_str_eq(name, "get_weather");
	ck_assert_str_eq(args, "{\"city\":\"Paris\"}");
	ck_assert_str_eq(finish, "tool_calls"); /* once: the upstream's, on the closing chunk */
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(last, "fusebox"), "source"), "llm");
	ck_assert_str_eq(itd_str(last, "model"), "m-primary");
	ck_assert_ptr_nonnull(usage);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(usage, "choices")), 0);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(usage, "usage"), "completion_tokens"), 9);
	ck_assert_ptr_null(cJSON_GetObjectItem(usage, "fusebox")); /* not estimated */
	ck_assert_ptr_nonnull(strstr(text, "\"id\":\"chatcmpl-"));
	for (i = 0; i < n; i++)
		cJSON_Delete(ev[i]);
	free(text);
	/* the upstream was asked for the usage too */
	last = last_body("primary");
	ck_assert(cJSON_IsTrue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(last, "stream_options"), "include_usage")));
	cJSON_Delete(last);
	/* the attempts row holds the streamed tool calls assembled (log.inputs: whole) */
	itd_settle();
	ck_assert_int_eq(itd_count(&T,
				   "attempts WHERE outcome='ok' AND raw_output LIKE "
				   "'[{%\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
				   "\\\"Paris\\\"}\"%' AND raw_output LIKE '%\"id\":\"call_1\"%'"),
			 1);
}
END_TEST

START_TEST(stream_tool_calls_on_a_refusing_route_fall)
{
	char *text;

	/* notools denies them: the stream never starts, the ladder is exhausted */
	ck_assert_int_eq(mock_set(&T.mock, "primary", TOOL_CALLS), 0);
	ck_assert_int_eq(
		stream_call("{\"model\":\"notools\",\"stream\":true," MSGS "}", &text, NULL), 503);
	ck_assert_ptr_null(strstr(text, "get_weather"));
	free(text);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "attempts WHERE outcome='validation_format'"), 1);
	ck_assert_int_eq(itd_count(&T, "validation_failures WHERE rule='tool_calls'"), 1);
}
END_TEST

START_TEST(stream_fallback_usage_is_estimated)
{
	cJSON *ev[64], *u;
	char *text;
	int n, i;

	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"stream_first_delay_ms\":3000}"), 0);
	ck_assert_int_eq(stream_call("{\"model\":\"intent\",\"stream\":true,"
				     "\"stream_options\":{\"include_usage\":true}," MSGS "}",
				     &text, NULL),
			 200);
	n = sse_events(text, ev, 64);
	ck_assert_int_ge(n, 4);
	ck_assert_ptr_null(ev[n - 1]);
	u = ev[n - 2];
	ck_assert_int_gt((int)itd_num(cJSON_GetObjectItem(u, "usage"), "prompt_tokens"), 0);
	ck_assert(cJSON_IsTrue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(u, "fusebox"), "usage_estimated")));
	ck_assert_str_eq(itd_str(choice0(ev[n - 3]), "finish_reason"), "stop");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(ev[n - 3], "fusebox"), "source"), "rules");
	for (i = 0; i < n; i++)
		cJSON_Delete(ev[i]);
	free(text);
	/* without stream there are no stream_options */
	itd_expect_error(&T, "POST", "/v1/chat/completions",
			 "{\"model\":\"agent\",\"stream_options\":{\"include_usage\":true}," MSGS
			 "}",
			 NULL, 400, "invalid_request", "stream_options");
}
END_TEST

START_TEST(stream_that_cannot_start_answers_a_real_status)
{
	struct http_resp r;
	char *text, *ra = NULL;
	long st;

	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	st = stream_call("{\"model\":\"agent\",\"stream\":true," MSGS "}", &text, &ra);
	ck_assert_int_eq(st, 503);
	ck_assert_ptr_nonnull(strstr(text, "\"code\":\"exhausted\""));
	ck_assert_ptr_null(strstr(text, "data:"));
	ck_assert_ptr_nonnull(ra);
	ck_assert_int_ge((int)strtol(ra, NULL, 10), 1);
	free(ra);
	free(text);
	/* the breaker's time to probe: open for 7 s */
	ck_assert_int_eq(mock_set(&T.mock, "flaky", "{\"status\":500}"), 0);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"fragile\"," MSGS "}", NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 503);
	http_resp_free(&r);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"fragile\"," MSGS "}", NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 503);
	ra = header(&r, "Retry-After");
	ck_assert_ptr_nonnull(ra);
	ck_assert_msg((int)strtol(ra, NULL, 10) >= 5 && (int)strtol(ra, NULL, 10) <= 7,
		      "Retry-After %s", ra);
	ck_assert_ptr_nonnull(strstr(r.body, "breaker_open"));
	free(ra);
	http_resp_free(&r);
	ck_assert_int_eq((int)backend_requests("flaky"), 1);
	/* /call's 503 carries it too */
	ck_assert_int_eq(itd_call(&T, "fragile", "{\"input\":\"x\"}", 5000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	ra = header(&r, "Retry-After");
	ck_assert_ptr_nonnull(ra);
	ck_assert_int_ge((int)strtol(ra, NULL, 10), 5);
	free(ra);
	http_resp_free(&r);
}
END_TEST

START_TEST(models_lists_the_routes)
{
	cJSON *o, *m;
	int found = 0;

	o = itd_expect(&T, "GET", "/v1/models", NULL, NULL, 200);
	ck_assert_str_eq(itd_str(o, "object"), "list");
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(o, "data"))
	{
		ck_assert_str_eq(itd_str(m, "owned_by"), "fusebox");
		ck_assert_str_eq(itd_str(m, "object"), "model");
		if (strcmp(itd_str(m, "id"), "fusebox/agent") == 0 ||
		    strcmp(itd_str(m, "id"), "agent") == 0)
			found++;
	}
	ck_assert_int_eq(found, 2);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "data")), 8);
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/models/fusebox/intent", NULL, NULL, 200);
	ck_assert_str_eq(itd_str(o, "id"), "fusebox/intent");
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/models/intent", NULL, NULL, 200);
	ck_assert_str_eq(itd_str(o, "id"), "intent");
	cJSON_Delete(o);
	itd_expect_error(&T, "GET", "/v1/models/gpt-9", NULL, NULL, 404, "model_not_found",
			 "gpt-9");
}
END_TEST

START_TEST(invalid_utf8_and_c1_controls_are_refused)
{
	struct http_resp r;
	char *text;
	cJSON *o;

	/* F7: a raw 0xff in a message's content */
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"agent\",\"messages\":[{\"role\":\"user\","
				 "\"content\":\"bad \xff byte\"}]}",
				 NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 400);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "param"), "messages[0].content");
	ck_assert_ptr_nonnull(strstr(itd_str(cJSON_GetObjectItem(o, "error"), "message"), "UTF-8"));
	cJSON_Delete(o);
	http_resp_free(&r);
	ck_assert_int_le((int)backend_requests("primary"), 0);
	/* /call: an input with an overlong encoding, a request_id with the C1 byte 0x9b */
	itd_expect_error(&T, "POST", "/v1/routes/agent/call", "{\"input\":\"a\xc0\xaf\"}", NULL,
			 400, "bad_request", "input: must be valid UTF-8");
	itd_expect_error(&T, "POST", "/v1/routes/agent/call",
			 "{\"input\":\"x\",\"request_id\":\"id\x9b"
			 "31m\"}",
			 NULL, 400, "bad_request", "request_id");
	itd_expect_error(&T, "POST", "/v1/routes/agent/call",
			 "{\"input\":\"x\",\"request_id\":\"id\\u009b31m\"}", NULL, 400,
			 "bad_request", "request_id: must be UTF-8 without control characters");
	/* the facade's X-Request-ID header: the raw C1 byte */
	ck_assert_int_eq(stream_call_h("{\"model\":\"agent\"," MSGS "}", "X-Request-ID: ab\x9b[2J",
				       &text, NULL),
			 400);
	o = cJSON_Parse(text);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "param"), "X-Request-ID");
	cJSON_Delete(o);
	free(text);
	ck_assert_int_le((int)backend_requests("primary"), 0);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "calls"), 0);
}
END_TEST

START_TEST(api_keys_are_redacted_from_stored_upstream_bodies)
{
	struct http_resp r;

	/* F8: the upstream's error body echoes the key and a bearer header */
	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"status\":401,\"body\":\"{\\\"error\\\":{\\\"message\\\":"
				  "\\\"Incorrect API key provided: " KEY
				  " (sent as Authorization: Bearer " KEY ")\\\"}}\"}"),
			 0);
	ck_assert_int_eq(itd_call(&T, "agent", "{\"input\":\"x\"}", 5000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_null(strstr(r.body, KEY));
	http_resp_free(&r);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "attempts WHERE outcome='http_4xx' AND raw_output LIKE "
				       "'%Incorrect API key provided: [redacted]%' AND raw_output "
				       "LIKE '%Bearer [redacted]%'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "attempts WHERE raw_output LIKE '%sk-h11-secret%'"), 0);
	/* a model answer echoing it: kept from the review item's raw output too */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"content\":\"your key is " KEY "\"}"), 0);
	ck_assert_int_eq(itd_call(&T, "agent", "{\"input\":\"x\"}", 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "attempts WHERE raw_output LIKE '%sk-h11-secret%'"), 0);
	ck_assert_int_eq(itd_count(&T, "attempts WHERE raw_output = 'your key is [redacted]'"), 1);
}
END_TEST

/*
 * Issue 26: a call refused because its backend's bulkhead is full
 * (max_concurrent 1, queue_ms 0, one slow call holding the slot) answers
 * 503 with Retry-After = the bulkhead's estimate, one median answer time
 * of the backend rounded up to seconds (call_retry_after_s), on the chat
 * facade (plain and streamed) and on the native /call path alike.
 */
static const char *narrow_config =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":[{\"name\":\"narrow\",\"url\":\"@MOCK@/b/narrow/v1/chat/completions\","
	"\"model\":\"m-narrow\",\"max_concurrent\":1,\"queue_ms\":0,"
	"\"timeouts\":{\"connect_ms\":1000,\"first_byte_ms\":8000,\"total_ms\":8000},"
	"\"breaker\":{\"failure_threshold\":1000}}],"
	"\"routes\":[{\"name\":\"narrow\",\"budget_ms\":8000,"
	"\"targets\":[{\"backend\":\"narrow\"}],\"retry\":{\"max_retries\":0}}]}";

#define NARROW_DELAY_MS 2500

static void
setup_narrow(void)
{
	ck_assert_int_eq(itd_start(&T, narrow_config), 0);
}

static int
mock_inflight(const char *backend)
{
	cJSON *st = mock_stats(&T.mock);
	int n = (int)itd_num(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), backend),
			     "inflight");

	cJSON_Delete(st);
	return n;
}

/* The Retry-After of a refused answer, checked to be whole seconds in [1, 3600]. */
static long
retry_after_of(const char *ra)
{
	char *end = NULL;
	long v;

	ck_assert_msg(ra != NULL, "no Retry-After on a 503");
	v = strtol(ra, &end, 10);
	ck_assert_msg(end != ra && *end == '\0' && v >= 1 && v <= 3600, "Retry-After \"%s\"", ra);
	return v;
}

START_TEST(full_bulkhead_answers_its_estimate_as_retry_after)
{
	struct http_resp r;
	struct itd_bg held;
	char *ra, *text, cond[160];
	long want, got[3];
	int64_t until;
	int i;

	snprintf(cond, sizeof cond, "{\"delay_ms\":%d}", NARROW_DELAY_MS);
	ck_assert_int_eq(mock_set(&T.mock, "narrow", cond), 0);
	/* one answer in the backend's window: the median the estimate uses */
	ck_assert_int_eq(
		itd_call(&T, "narrow", "{\"input\":\"warm\",\"request_id\":\"warm-1\"}", 10000, &r),
		0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	/* hold the one slot, then knock */
	ck_assert_int_eq(itd_bg_start(&held, &T, "narrow", "{\"input\":\"held\"}"), 0);
	until = harness_now_ms() + 2000;
	while (mock_inflight("narrow") < 1 && harness_now_ms() < until)
		usleep(10 * 1000);
	ck_assert_int_eq(mock_inflight("narrow"), 1);

	ck_assert_int_eq(itd_req(&T, "POST", "/v1/chat/completions",
				 "{\"model\":\"narrow\",\"messages\":[{\"role\":\"user\","
				 "\"content\":\"hi\"}]}",
				 NULL, 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(r.body, "bulkhead_full"));
	ra = header(&r, "Retry-After");
	got[0] = retry_after_of(ra);
	free(ra);
	http_resp_free(&r);

	ck_assert_int_eq(stream_call("{\"model\":\"narrow\",\"stream\":true,\"messages\":[{"
				     "\"role\":\"user\",\"content\":\"hi\"}]}",
				     &text, &ra),
			 503);
	ck_assert_ptr_nonnull(strstr(text, "bulkhead_full"));
	ck_assert_ptr_null(strstr(text, "data:"));
	got[1] = retry_after_of(ra);
	free(ra);
	free(text);

	ck_assert_int_eq(itd_call(&T, "narrow", "{\"input\":\"x\"}", 5000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(r.body, "bulkhead_full"));
	ra = header(&r, "Retry-After");
	got[2] = retry_after_of(ra);
	free(ra);
	http_resp_free(&r);

	/* the held call was still in flight for all three: they were bulkhead refusals */
	ck_assert_int_eq(mock_inflight("narrow"), 1);
	ck_assert_int_eq(itd_bg_join(&held), 0);
	ck_assert_int_eq(held.r.status, 200);
	http_resp_free(&held.r);
	ck_assert_int_eq(mock_requests(&T.mock, "narrow"), 2);

	/* The estimate is the median answer time (the warm call's attempt,
	 * the only one in the window then) in whole seconds, rounded up: not
	 * the 1 s said when nothing is known. */
	want = (NARROW_DELAY_MS + 999) / 1000;
	for (i = 0; i < 3; i++)
		ck_assert_msg(got[i] == got[0], "Retry-After %ld vs %ld", got[i], got[0]);
	ck_assert_int_ge(got[0], want);
	itd_settle();
	snprintf(cond, sizeof cond,
		 "attempts WHERE request_id = 'warm-1' AND outcome = 'ok' AND total_ms > %ld AND "
		 "total_ms <= %ld",
		 (got[0] - 1) * 1000, got[0] * 1000);
	ck_assert_int_eq(itd_count(&T, cond), 1);
}
END_TEST

static Suite *
facade_suite(void)
{
	Suite *s = suite_create("facade");

#define ADD(t) ITD_ADD_TEST(s, t, setup, teardown, 60)
	ADD(tool_calls_are_answers);
	ADD(tool_call_conversation_goes_upstream_verbatim);
	ADD(duplicate_keys_reach_the_upstream_once);
	ADD(tool_calls_on_a_schema_route_are_validation_format);
	ADD(finish_reason_length_and_n_choices);
	ADD(stream_relays_tool_calls_and_usage);
	ADD(stream_tool_calls_on_a_refusing_route_fall);
	ADD(stream_fallback_usage_is_estimated);
	ADD(stream_that_cannot_start_answers_a_real_status);
	ADD(models_lists_the_routes);
	ADD(invalid_utf8_and_c1_controls_are_refused);
	ADD(api_keys_are_redacted_from_stored_upstream_bodies);
	ITD_ADD_TEST(s, full_bulkhead_answers_its_estimate_as_retry_after, setup_narrow, teardown,
		     60);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(facade_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
