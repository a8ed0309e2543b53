/*
 * test_api_chat: the facade's request parser on literals: every field not
 * consumed goes upstream verbatim (unknown ones too, duplicates once),
 * documented fields of the wrong type are 400s naming the field, messages
 * keep their tool calls, invalid UTF-8 and C1 controls are refused.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "api_chat.h"
#include "jsonutil.h"

/* Parse body; the status, msg filled. */
static int
parse(const char *body, struct call_req *cr, struct chat_opts *o, char *msg, size_t n)
{
	char *model = NULL;
	int r;

	memset(cr, 0, sizeof *cr);
	r = api_chat_parse(body, strlen(body), NULL, NULL, cr, o, &model, msg, n);
	free(model);
	return r;
}

START_TEST(extra_fields_pass_verbatim)
{
	struct call_req cr;
	struct chat_opts o;
	char msg[256], *s;

	ck_assert_int_eq(parse("{\"model\":\"agent\",\"messages\":[{\"role\":\"user\",\"content\":"
			       "\"x\"}],\"temperature\":1,\"stream\":true,\"n\":3,\"stop\":\"E\","
			       "\"stream_options\":{\"include_usage\":true},\"tools\":[{\"type\":"
			       "\"function\",\"function\":{\"name\":\"f\"}}],\"z\":1,\"z\":2}",
			       &cr, &o, msg, sizeof msg),
			 0);
	ck_assert_int_eq(o.stream, 1);
	ck_assert_int_eq(o.n, 3);
	ck_assert_int_eq(o.include_usage, 1);
	ck_assert_int_eq(o.tools, 1);
	s = json_print(cr.params.extra);
	ck_assert_str_eq(s, "{\"n\":3,\"stop\":\"E\",\"stream_options\":{\"include_usage\":true},"
			    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
			    "\"z\":1}");
	free(s);
	call_req_clear(&cr);
}
END_TEST

START_TEST(wrong_types_name_the_field)
{
	static const struct {
		const char *fields, *want;
	} cases[] = {
		{"\"n\":0", "n: "},
		{"\"n\":1.5", "n: "},
		{"\"seed\":\"7\"", "seed: "},
		{"\"top_p\":2", "top_p: "},
		{"\"logprobs\":1", "logprobs: "},
		{"\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop: "},
		{"\"stop\":[1]", "stop: "},
		{"\"tools\":{}", "tools: "},
		{"\"tools\":[{\"function\":{}}]", "tools[0]: "},
		{"\"tool_choice\":3", "tool_choice: "},
		{"\"stream_options\":{\"include_usage\":true}", "stream_options: "},
		{"\"max_tokens\":5,\"max_completion_tokens\":5", "max_completion_tokens: "},
		{"\"max_completion_tokens\":0", "max_completion_tokens: "},
		{"\"response_format\":{}", "response_format: "},
		{"\"user\":\"\xff\"", "user: must be valid UTF-8"},
	};
	struct call_req cr;
	struct chat_opts o;
	char body[512], msg[256];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(
			body, sizeof body,
			"{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],%s}",
			cases[i].fields);
		ck_assert_msg(parse(body, &cr, &o, msg, sizeof msg) == 400, "%s accepted",
			      cases[i].fields);
		ck_assert_msg(strncmp(msg, cases[i].want, strlen(cases[i].want)) == 0, "%s: \"%s\"",
			      cases[i].fields, msg);
		call_req_clear(&cr);
	}
}
END_TEST

START_TEST(messages_keep_tool_calls)
{
	struct call_req cr;
	struct chat_opts o;
	char msg[256], *s;

	ck_assert_int_eq(
		parse("{\"model\":\"a\",\"messages\":[{\"role\":\"assistant\",\"content\":null,"
		      "\"tool_calls\":[{\"id\":\"c\"}]},{\"role\":\"tool\",\"tool_call_id\":\"c\","
		      "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":"
		      "\"b\"}]},{\"role\":\"user\"}]}",
		      &cr, &o, msg, sizeof msg),
		0);
	s = json_print(cr.messages);
	ck_assert_str_eq(s,
			 "[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":"
			 "\"c\"}]},{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"ab\"},"
			 "{\"role\":\"user\",\"content\":\"\"}]");
	free(s);
	ck_assert_ptr_null(cr.params.extra);
	call_req_clear(&cr);
	ck_assert_int_eq(parse("{\"model\":\"a\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":"
			       "5,\"content\":\"x\"}]}",
			       &cr, &o, msg, sizeof msg),
			 400);
	ck_assert_str_eq(msg, "messages[0].tool_call_id: must be a string");
	call_req_clear(&cr);
}
END_TEST

START_TEST(request_id_header_refuses_c1)
{
	struct call_req cr;
	struct chat_opts o;
	char msg[256], *model = NULL;
	const char *body = "{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";

	memset(&cr, 0, sizeof cr);
	ck_assert_int_eq(api_chat_parse(body, strlen(body), "id\x9b[2J", NULL, &cr, &o, &model, msg,
					sizeof msg),
			 400);
	ck_assert_ptr_nonnull(strstr(msg, "X-Request-ID"));
	free(model);
	model = NULL;
	call_req_clear(&cr);
	ck_assert_int_eq(api_chat_parse(body, strlen(body), "id-\xc3\xa9", NULL, &cr, &o, &model,
					msg, sizeof msg),
			 0);
	ck_assert_str_eq(cr.request_id, "id-\xc3\xa9");
	free(model);
	call_req_clear(&cr);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("api_chat");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, extra_fields_pass_verbatim);
	tcase_add_test(tc, wrong_types_name_the_field);
	tcase_add_test(tc, messages_keep_tool_calls);
	tcase_add_test(tc, request_id_header_refuses_c1);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
