/*
 * test_upstream: request bodies, reply parsing and outcome classification,
 * with hand-built route/backend configs and literal bodies.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "budget.h"
#include "config.h"
#include "upstream.h"

static struct message_cfg few_shot[] = {
	{"user", "I want my money back"},
	{"assistant", "{\"intent\":\"refund\"}"},
};

static void
cfg_base(struct route_cfg *rc, struct backend_cfg *bc)
{
	memset(rc, 0, sizeof *rc);
	memset(bc, 0, sizeof *bc);
	rc->name = "intent";
	rc->prompt.system = "You classify intents. Reply with JSON.";
	rc->prompt.user = "Classify: {{input}}";
	rc->prompt.temperature = 0.25;
	rc->prompt.max_tokens = 64;
	rc->prompt.response_format_json = true;
	rc->backup.few_shot = few_shot;
	rc->backup.nfew_shot = 2;
	rc->backup.has_temperature = true;
	rc->backup.temperature = 0.75;
	bc->name = "big";
	bc->model = "big-model-1";
}

/* Build a body and parse it back; the caller deletes the tree. */
static cJSON *
build(const struct route_cfg *rc, const struct backend_cfg *bc, int backup, const char *input,
      const cJSON *messages, int64_t *tokens)
{
	char *s;
	cJSON *o;

	*tokens = -1;
	s = upstream_build_body_ex(rc, bc, backup, input, messages, NULL, tokens);
	ck_assert_ptr_nonnull(s);
	o = cJSON_Parse(s);
	free(s);
	ck_assert_ptr_nonnull(o);
	return o;
}

/* Assert the body's messages are exactly want[0..n-1] (role, content). */
static void
check_msgs(const cJSON *body, const char *const want[][2], int n)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
	int i;

	ck_assert(cJSON_IsArray(msgs));
	ck_assert_int_eq(cJSON_GetArraySize(msgs), n);
	for (i = 0; i < n; i++) {
		const cJSON *m = cJSON_GetArrayItem(msgs, i);
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");

		ck_assert(cJSON_IsString(role));
		ck_assert(cJSON_IsString(content));
		ck_assert_str_eq(role->valuestring, want[i][0]);
		ck_assert_str_eq(content->valuestring, want[i][1]);
	}
}

static int64_t
estimate(const char *const want[][2], int n)
{
	int64_t sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += budget_estimate_tokens(want[i][1], strlen(want[i][1]));
	return sum;
}

static double
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", k);
	return v->valuedouble;
}

START_TEST(test_render)
{
	struct {
		const char *tmpl, *input, *want;
	} cases[] = {
		{"no placeholder here", "x", "no placeholder here"},
		{"", "x", ""},
		{"Classify: {{input}}", "hello", "Classify: hello"},
		{"{{input}}", "héllo 你好", "héllo 你好"},
		{"<{{input}}> and <{{input}}>", "ab", "<ab> and <ab>"},
		{"{{input}}{{input}}", "z", "zz"},
		{"{{input}", "x", "{{input}"},
		{"[{{input}}]", NULL, "[]"},
		/* The input is not re-scanned. */
		{"{{input}}!", "{{input}}", "{{input}}!"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = upstream_render(cases[i].tmpl, cases[i].input);

		ck_assert_msg(strcmp(s, cases[i].want) == 0, "case %zu: got \"%s\"", i, s);
		free(s);
	}
}
END_TEST

START_TEST(test_body_primary)
{
	struct route_cfg rc;
	struct backend_cfg bc;
	const char *const want[][2] = {
		{"system", "You classify intents. Reply with JSON."},
		{"user", "Classify: where is my parcel"},
	};
	int64_t tokens;
	cJSON *o;

	cfg_base(&rc, &bc);
	o = build(&rc, &bc, 0, "where is my parcel", NULL, &tokens);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "model")->valuestring, "big-model-1");
	check_msgs(o, want, 2);
	ck_assert_double_eq_tol(num(o, "temperature"), 0.25, 1e-9);
	ck_assert_int_eq((int)num(o, "max_tokens"), 64);
	ck_assert_int_gt(tokens, 0);
	ck_assert_int_eq(tokens, estimate(want, 2));
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_body_no_system_no_template)
{
	struct route_cfg rc;
	struct backend_cfg bc;
	const char *const want[][2] = {{"user", "raw input"}};
	int64_t tokens;
	cJSON *o;

	cfg_base(&rc, &bc);
	rc.prompt.system = NULL;
	rc.prompt.user = NULL;
	bc.model = NULL;
	o = build(&rc, &bc, 0, "raw input", NULL, &tokens);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "model")->valuestring, "");
	check_msgs(o, want, 1);
	ck_assert_int_eq(tokens, estimate(want, 1));
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_body_backup)
{
	struct route_cfg rc;
	struct backend_cfg bc;
	const char *const want[][2] = {
		{"system", "You classify intents. Reply with JSON."},
		{"user", "I want my money back"},
		{"assistant", "{\"intent\":\"refund\"}"},
		{"user", "Classify: hi"},
	};
	int64_t tokens;
	cJSON *o;

	cfg_base(&rc, &bc);
	bc.model = "small-model";
	o = build(&rc, &bc, 1, "hi", NULL, &tokens);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "model")->valuestring, "small-model");
	check_msgs(o, want, 4);
	ck_assert_double_eq_tol(num(o, "temperature"), 0.75, 1e-9);
	ck_assert_int_eq(tokens, estimate(want, 4));
	cJSON_Delete(o);

	/* Without a backup temperature the prompt's applies. */
	rc.backup.has_temperature = false;
	o = build(&rc, &bc, 1, "hi", NULL, &tokens);
	check_msgs(o, want, 4);
	ck_assert_double_eq_tol(num(o, "temperature"), 0.25, 1e-9);
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_body_caller_messages)
{
	struct route_cfg rc;
	struct backend_cfg bc;
	const char *const want[][2] = {
		{"system", "You classify intents. Reply with JSON."},
		{"user", "u1"},
		{"assistant", "a1"},
		{"user", "u2"},
	};
	cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"u1\"},"
				  "{\"role\":\"assistant\",\"content\":\"a1\"},"
				  "{\"role\":7,\"content\":\"skipped\"},"
				  "{\"role\":\"user\",\"content\":\"u2\"}]");
	int64_t tokens;
	cJSON *o;

	ck_assert_ptr_nonnull(msgs);
	cfg_base(&rc, &bc);
	o = build(&rc, &bc, 0, "ignored input", msgs, &tokens);
	check_msgs(o, want, 4);
	ck_assert_int_eq(tokens, estimate(want, 4));
	cJSON_Delete(o);
	/* messages is borrowed: still intact. */
	ck_assert_int_eq(cJSON_GetArraySize(msgs), 4);
	cJSON_Delete(msgs);
}
END_TEST

START_TEST(test_body_caller_system_first)
{
	struct route_cfg rc;
	struct backend_cfg bc;
	const char *const want[][2] = {
		{"system", "caller system"},
		{"user", "u1"},
	};
	const char *const want_backup[][2] = {
		{"system", "caller system"},
		{"user", "I want my money back"},
		{"assistant", "{\"intent\":\"refund\"}"},
		{"user", "u1"},
	};
	cJSON *msgs = cJSON_Parse("[{\"role\":\"system\",\"content\":\"caller system\"},"
				  "{\"role\":\"user\",\"content\":\"u1\"}]");
	int64_t tokens;
	cJSON *o;

	ck_assert_ptr_nonnull(msgs);
	cfg_base(&rc, &bc);
	o = build(&rc, &bc, 0, NULL, msgs, &tokens);
	check_msgs(o, want, 2);
	ck_assert_int_eq(tokens, estimate(want, 2));
	cJSON_Delete(o);

	/* At the backup step the few-shot examples follow the system message. */
	o = build(&rc, &bc, 1, NULL, msgs, &tokens);
	check_msgs(o, want_backup, 4);
	ck_assert_int_eq(tokens, estimate(want_backup, 4));
	cJSON_Delete(o);
	cJSON_Delete(msgs);
}
END_TEST

START_TEST(test_body_response_format)
{
	struct route_cfg rc;
	struct backend_cfg bc;
	int64_t tokens;
	const cJSON *rf;
	cJSON *o;

	cfg_base(&rc, &bc);
	/* json on, no output section: absent. */
	o = build(&rc, &bc, 0, "x", NULL, &tokens);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o, "response_format"));
	cJSON_Delete(o);

	/* Output section, json off: absent. */
	rc.output.present = true;
	rc.prompt.response_format_json = false;
	o = build(&rc, &bc, 0, "x", NULL, &tokens);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o, "response_format"));
	cJSON_Delete(o);

	/* Both: {"type":"json_object"}. */
	rc.prompt.response_format_json = true;
	o = build(&rc, &bc, 0, "x", NULL, &tokens);
	rf = cJSON_GetObjectItemCaseSensitive(o, "response_format");
	ck_assert(cJSON_IsObject(rf));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(rf, "type")->valuestring, "json_object");
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_parse_good)
{
	const char *body =
		"{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
		"\"message\":{\"role\":\"assistant\",\"content\":\"{\\\"intent\\\":\\\"refund\\\"}"
		"\"},"
		"\"finish_reason\":\"stop\"}],"
		"\"usage\":{\"prompt_tokens\":42,\"completion_tokens\":7,\"total_tokens\":49}}";
	struct upstream_reply r;

	ck_assert_int_eq(upstream_parse_reply(body, strlen(body), &r), 0);
	ck_assert_str_eq(r.content, "{\"intent\":\"refund\"}");
	ck_assert_int_eq(r.prompt_tokens, 42);
	ck_assert_int_eq(r.completion_tokens, 7);
	upstream_reply_clear(&r);
	ck_assert_ptr_null(r.content);
	upstream_reply_clear(&r);
}
END_TEST

START_TEST(test_parse_length_bounded)
{
	/* Only the first len bytes count: trailing garbage is outside. */
	const char *body = "{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}GARBAGE";
	struct upstream_reply r;
	size_t len = strlen(body) - strlen("GARBAGE");

	ck_assert_int_eq(upstream_parse_reply(body, len, &r), 0);
	ck_assert_str_eq(r.content, "hi");
	ck_assert_int_eq(r.prompt_tokens, -1);
	ck_assert_int_eq(r.completion_tokens, -1);
	upstream_reply_clear(&r);
	ck_assert_int_eq(upstream_parse_reply(body, len - 1, &r), UPSTREAM_E_INVALID);
	upstream_reply_clear(&r);
}
END_TEST

START_TEST(test_parse_null_content)
{
	const char *bodies[] = {
		"{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null}}],"
		"\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}",
		"{\"choices\":[{\"message\":{\"role\":\"assistant\"}}],"
		"\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}",
	};
	size_t i;

	for (i = 0; i < 2; i++) {
		struct upstream_reply r;

		ck_assert_int_eq(upstream_parse_reply(bodies[i], strlen(bodies[i]), &r), 0);
		ck_assert_ptr_nonnull(r.content);
		ck_assert_str_eq(r.content, "");
		ck_assert_int_eq(r.prompt_tokens, 5);
		ck_assert_int_eq(r.completion_tokens, 0);
		upstream_reply_clear(&r);
	}
}
END_TEST

START_TEST(test_parse_invalid)
{
	const char *bodies[] = {
		"{\"object\":\"chat.completion\",\"usage\":{\"prompt_tokens\":1}}",
		"{\"choices\":[]}",
		"{\"choices\":[{\"text\":\"legacy\"}]}",
		"{\"choices\":[{\"message\":\"hi\"}]}",
		"{\"choices\":[{\"message\":{\"content\":42}}]}",
		"[{\"choices\":[]}]",
		"not json",
		"",
	};
	size_t i;

	for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		struct upstream_reply r;

		ck_assert_msg(upstream_parse_reply(bodies[i], strlen(bodies[i]), &r) ==
				      UPSTREAM_E_INVALID,
			      "body %zu accepted", i);
		ck_assert_ptr_null(r.content);
		upstream_reply_clear(&r);
	}
}
END_TEST

START_TEST(test_parse_usage)
{
	const char *body = "{\"choices\":[{\"message\":{\"content\":\"x\"}}],"
			   "\"usage\":{\"prompt_tokens\":1234567}}";
	struct upstream_reply r;

	ck_assert_int_eq(upstream_parse_reply(body, strlen(body), &r), 0);
	ck_assert_int_eq(r.prompt_tokens, 1234567);
	ck_assert_int_eq(r.completion_tokens, -1);
	upstream_reply_clear(&r);
}
END_TEST

START_TEST(test_body_passthrough_verbatim)
{
	/* the facade: messages whole (tool calls, tool results), the caller's other fields after
	 * ours */
	cJSON *msgs = cJSON_Parse(
		"[{\"role\":\"user\",\"content\":\"weather?\"},"
		"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\","
		"\"type\":\"function\",\"function\":{\"name\":\"w\",\"arguments\":\"{}\"}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"sunny\"}]");
	cJSON *extra = cJSON_Parse("{\"tools\":[{\"type\":\"function\"}],\"n\":2,\"x_new\":true}");
	struct upstream_params p = {.passthrough = 1, .max_tokens = 9, .max_completion = 1};
	struct route_cfg rc;
	struct backend_cfg bc;
	int64_t tokens;
	char *s;

	cfg_base(&rc, &bc);
	p.extra = extra;
	s = upstream_build_body_ex(&rc, &bc, 0, NULL, msgs, &p, &tokens);
	ck_assert_str_eq(
		s,
		"{\"model\":\"big-model-1\",\"messages\":[{\"role\":\"user\",\"content\":"
		"\"weather?\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":"
		"\"c1\",\"type\":\"function\",\"function\":{\"name\":\"w\",\"arguments\":\"{}\"}}"
		"]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"sunny\"}],"
		"\"temperature\":0.25,\"max_completion_tokens\":9,\"tools\":[{\"type\":"
		"\"function\"}],\"n\":2,\"x_new\":true}");
	ck_assert_int_eq(tokens, budget_estimate_tokens("weather?", 8) +
					 budget_estimate_tokens("{}", 2) +
					 budget_estimate_tokens("sunny", 5));
	free(s);
	cJSON_Delete(msgs);
	cJSON_Delete(extra);
}
END_TEST

START_TEST(test_parse_tool_calls)
{
	const char *body =
		"{\"model\":\"m\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,"
		"\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
		"{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
		"\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}},"
		"{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"t\","
		"\"arguments\":\"\"}}]},\"finish_reason\":\"tool_calls\"}]}";
	struct upstream_reply r;
	char *sum;

	ck_assert_int_eq(upstream_parse_reply(body, strlen(body), &r), 0);
	ck_assert_int_eq(r.ntool_calls, 2);
	ck_assert_str_eq(r.content, "");
	ck_assert_str_eq(r.finish_reason, "tool_calls");
	ck_assert_ptr_null(r.doc);
	upstream_reply_clear(&r);
	ck_assert_int_eq(upstream_parse_reply_ex(body, strlen(body), 1, &r), 0);
	ck_assert_ptr_nonnull(r.doc);
	sum = upstream_tool_calls_summary(r.doc, 0);
	ck_assert_str_eq(sum, "tool_calls: get_weather(args 16 B), t(args 0 B)");
	free(sum);
	sum = upstream_tool_calls_summary(r.doc, 1);
	ck_assert_ptr_nonnull(strstr(sum, "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\""));
	free(sum);
	upstream_reply_clear(&r);
	ck_assert_ptr_null(r.doc);
	/* tool_calls that are not an array: not a chat.completion */
	body = "{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":{}}}]}";
	ck_assert_int_eq(upstream_parse_reply(body, strlen(body), &r), UPSTREAM_E_INVALID);
	upstream_reply_clear(&r);
	body = "{\"choices\":[{\"message\":{\"content\":\"x\"}}]}";
	ck_assert_int_eq(upstream_parse_reply_ex(body, strlen(body), 1, &r), 0);
	ck_assert_ptr_null(upstream_tool_calls_summary(r.doc, 0));
	ck_assert_ptr_null(r.finish_reason);
	upstream_reply_clear(&r);
}
END_TEST

START_TEST(test_chunk_parse)
{
	const char *tc = "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
			 "\"function\":{\"arguments\":\"{\\\"ci\"}}]},\"finish_reason\":null}]}";
	const char *fin = "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}";
	const char *usage = "{\"choices\":[],\"usage\":{\"prompt_tokens\":3}}";
	const char *second = "{\"choices\":[{\"index\":0,\"delta\":{}},{\"index\":1,"
			     "\"delta\":{\"content\":\"b\"}}]}";
	struct upstream_chunk c;

	ck_assert_int_eq(upstream_chunk_parse(tc, strlen(tc), &c), 0);
	ck_assert_int_eq(c.tool_calls, 1);
	ck_assert_int_eq(c.finish, 0);
	ck_assert_str_eq(c.content, "");
	upstream_chunk_clear(&c);
	ck_assert_int_eq(upstream_chunk_parse(fin, strlen(fin), &c), 0);
	ck_assert_int_eq(c.finish, 1);
	ck_assert_int_eq(c.tool_calls, 0);
	upstream_chunk_clear(&c);
	ck_assert_int_eq(upstream_chunk_parse(usage, strlen(usage), &c), 0);
	ck_assert_str_eq(c.content, "");
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(c.doc, "usage"));
	upstream_chunk_clear(&c);
	ck_assert_int_eq(upstream_chunk_parse(second, strlen(second), &c), 0);
	ck_assert_int_eq(c.other_choice, 1);
	upstream_chunk_clear(&c);
	ck_assert_int_eq(upstream_chunk_parse("nope", 4, &c), UPSTREAM_E_INVALID);
	ck_assert_ptr_null(c.doc);
	upstream_chunk_clear(&c);
}
END_TEST

START_TEST(test_classify_table)
{
	struct {
		CURLcode code;
		long status;
		int connected, got_headers, too_big, json;
		enum outcome want;
	} cases[] = {
		{CURLE_COULDNT_CONNECT, 0, 0, 0, 0, 0, OUTCOME_CONNECT_ERROR},
		{CURLE_COULDNT_RESOLVE_HOST, 0, 0, 0, 0, 0, OUTCOME_CONNECT_ERROR},
		{CURLE_COULDNT_RESOLVE_PROXY, 0, 0, 0, 0, 0, OUTCOME_CONNECT_ERROR},
		{CURLE_OPERATION_TIMEDOUT, 0, 0, 0, 0, 1, OUTCOME_CONNECT_ERROR},
		{CURLE_OPERATION_TIMEDOUT, 0, 1, 0, 0, 1, OUTCOME_FIRST_BYTE_TIMEOUT},
		{CURLE_OPERATION_TIMEDOUT, 200, 1, 1, 0, 1, OUTCOME_TOTAL_TIMEOUT},
		{CURLE_WRITE_ERROR, 200, 1, 1, 1, 1, OUTCOME_INVALID_RESPONSE},
		{CURLE_WRITE_ERROR, 200, 1, 1, 0, 1, OUTCOME_RESET},
		{CURLE_RECV_ERROR, 0, 1, 0, 0, 1, OUTCOME_RESET},
		{CURLE_RECV_ERROR, 0, 0, 0, 0, 1, OUTCOME_CONNECT_ERROR},
		{CURLE_SEND_ERROR, 0, 1, 0, 0, 1, OUTCOME_RESET},
		{CURLE_GOT_NOTHING, 0, 1, 0, 0, 1, OUTCOME_RESET},
		{CURLE_GOT_NOTHING, 0, 0, 0, 0, 1, OUTCOME_CONNECT_ERROR},
		{CURLE_PARTIAL_FILE, 200, 1, 1, 0, 1, OUTCOME_RESET},
		{CURLE_SSL_CONNECT_ERROR, 0, 0, 0, 0, 1, OUTCOME_CONNECT_ERROR},
		{CURLE_SSL_CONNECT_ERROR, 0, 1, 0, 0, 1, OUTCOME_RESET},
		{CURLE_WEIRD_SERVER_REPLY, 0, 1, 0, 0, 1, OUTCOME_INVALID_RESPONSE},
		{CURLE_BAD_CONTENT_ENCODING, 200, 1, 1, 0, 1, OUTCOME_INVALID_RESPONSE},
		{CURLE_OK, 429, 1, 1, 0, 1, OUTCOME_HTTP_429},
		{CURLE_OK, 500, 1, 1, 0, 1, OUTCOME_HTTP_5XX},
		{CURLE_OK, 503, 1, 1, 0, 0, OUTCOME_HTTP_5XX},
		{CURLE_OK, 400, 1, 1, 0, 1, OUTCOME_HTTP_4XX},
		{CURLE_OK, 401, 1, 1, 0, 0, OUTCOME_HTTP_4XX},
		{CURLE_OK, 404, 1, 1, 0, 1, OUTCOME_HTTP_4XX},
		{CURLE_OK, 302, 1, 1, 0, 1, OUTCOME_INVALID_RESPONSE},
		{CURLE_OK, 204, 1, 1, 0, 1, OUTCOME_INVALID_RESPONSE},
		{CURLE_OK, 0, 1, 0, 0, 1, OUTCOME_INVALID_RESPONSE},
		{CURLE_OK, 200, 1, 1, 0, 0, OUTCOME_INVALID_RESPONSE},
		{CURLE_OK, 200, 1, 1, 1, 1, OUTCOME_INVALID_RESPONSE},
		{CURLE_OK, 200, 1, 1, 0, 1, OUTCOME_OK},
		{CURLE_OK, 201, 1, 1, 0, 1, OUTCOME_OK},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct upstream_facts f;
		enum outcome got;

		memset(&f, 0, sizeof f);
		f.code = cases[i].code;
		f.http_status = cases[i].status;
		f.connected = cases[i].connected;
		f.got_headers = cases[i].got_headers;
		f.body_too_big = cases[i].too_big;
		f.json_type = cases[i].json;
		got = upstream_classify(&f);
		ck_assert_msg(got == cases[i].want,
			      "case %zu (curl %d, status %ld): got %s, want %s", i,
			      (int)cases[i].code, cases[i].status, outcome_name(got),
			      outcome_name(cases[i].want));
	}
	/* broken chunked framing is an invalid response, not a reset... */
	{
		struct upstream_facts f;

		memset(&f, 0, sizeof f);
		f.code = CURLE_RECV_ERROR;
		f.connected = 1;
		f.got_headers = 1;
		f.http_status = 200;
		f.bad_framing = 1;
		ck_assert_int_eq(upstream_classify(&f), OUTCOME_INVALID_RESPONSE);
		/* ...but a timeout stays a timeout */
		f.code = CURLE_OPERATION_TIMEDOUT;
		ck_assert_int_eq(upstream_classify(&f), OUTCOME_TOTAL_TIMEOUT);
	}
}
END_TEST

static Suite *
upstream_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"render", test_render},
		{"body_primary", test_body_primary},
		{"body_no_system_no_template", test_body_no_system_no_template},
		{"body_backup", test_body_backup},
		{"body_caller_messages", test_body_caller_messages},
		{"body_caller_system_first", test_body_caller_system_first},
		{"body_response_format", test_body_response_format},
		{"parse_good", test_parse_good},
		{"parse_length_bounded", test_parse_length_bounded},
		{"parse_null_content", test_parse_null_content},
		{"parse_invalid", test_parse_invalid},
		{"parse_usage", test_parse_usage},
		{"body_passthrough_verbatim", test_body_passthrough_verbatim},
		{"parse_tool_calls", test_parse_tool_calls},
		{"chunk_parse", test_chunk_parse},
		{"classify_table", test_classify_table},
	};
	Suite *s = suite_create("upstream");
	TCase *tc;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(upstream_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
