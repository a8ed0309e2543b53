/*
 * test_jsonutil: json_print() against cJSON's own printer (the same text
 * where cJSON is exact), numbers that must round-trip, escapes, and the
 * times / optional strings / optional numbers of API answers.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "call.h"
#include "jsonutil.h"
#include "util.h"

/* json_print(parse(text)) and cJSON_PrintUnformatted() of the same tree. */
static void
same_as_cjson(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	char *mine, *theirs;

	ck_assert_msg(j != NULL, "bad test JSON %s", text);
	mine = json_print(j);
	theirs = cJSON_PrintUnformatted(j);
	ck_assert_str_eq(mine, theirs);
	free(mine);
	free(theirs);
	cJSON_Delete(j);
}

START_TEST(test_print_matches_cjson)
{
	same_as_cjson("{}");
	same_as_cjson("[]");
	same_as_cjson("{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}");
	same_as_cjson("{\"intent\":\"refund\",\"confidence\":0.92,\"n\":-17,\"z\":0}");
	same_as_cjson("[0.1,0.2,1.5,-2.25,3.14159,1e-07,123456789]");
	/* cJSON prints 0.30000000000000004 as 0.3 (it accepts an approximate
	 * round trip); json_print keeps it exact: see numbers_exact_text. */
	same_as_cjson(
		"{\"s\":\"quote \\\" back \\\\ nl \\n tab \\t cr \\r bs \\b ff \\f ctl \\u0001\"}");
	same_as_cjson("{\"u\":\"caf\\u00e9 \\u4f60\\u597d / slash\"}");
	same_as_cjson("[[[[]]],{\"\":\"\"}]");
}
END_TEST

START_TEST(test_numbers_round_trip)
{
	const double v[] = {0.1,	1.0 / 3.0,	    2.0 / 3.0,		1e300, -1e-300,
			    123456.789, 9007199254740991.0, 9007199254740993.0, -0.5,  4.35,
			    0.6};
	size_t i;

	for (i = 0; i < sizeof v / sizeof v[0]; i++) {
		cJSON *n = cJSON_CreateNumber(v[i]);
		char *s = json_print(n);

		ck_assert_msg(strtod(s, NULL) == v[i], "%s does not read back as %.17g", s, v[i]);
		free(s);
		cJSON_Delete(n);
	}
}
END_TEST

START_TEST(test_numbers_exact_text)
{
	struct {
		double v;
		const char *text;
	} cases[] = {
		{0, "0"},
		{42, "42"},
		{-7, "-7"},
		{1e15, "1000000000000000"},
		{0.6, "0.6"},
		{0.1 + 0.2, "0.30000000000000004"},
		{2.5e-8, "2.5e-08"},
		{NAN, "null"},
		{INFINITY, "null"},
		{-INFINITY, "null"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cJSON *n = cJSON_CreateNumber(cases[i].v);
		char *s = json_print(n);

		ck_assert_str_eq(s, cases[i].text);
		free(s);
		cJSON_Delete(n);
	}
}
END_TEST

/* The writer's short-decimal path prints what "%.15g" (or "%.17g") would. */
START_TEST(test_numbers_match_printf)
{
	static const double scale[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7};
	unsigned long long seed = 88172645463325252ull;
	char want[40];
	struct buf b;
	int i;

	buf_init(&b, 1 << 20);
	for (i = 0; i < 200000; i++) {
		double d;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		/* decimals with 0..7 places, magnitudes 1e-5 .. 1e16, both signs */
		d = (double)(seed % 100000000ull) / scale[(seed >> 32) % 8];
		if ((seed >> 40) % 3 == 0)
			d *= 1e9;
		if ((seed >> 42) % 5 == 0)
			d /= 1e4;
		if ((seed >> 45) & 1)
			d = -d;
		if (d == floor(d))
			continue; /* integers have their own path */
		snprintf(want, sizeof want, "%.15g", d);
		if (strtod(want, NULL) != d)
			snprintf(want, sizeof want, "%.17g", d);
		buf_reset(&b);
		ck_assert_int_eq(json_buf_number(&b, d), 0);
		ck_assert_msg(strcmp(b.data, want) == 0, "%.17g: wrote %s, printf %s", d, b.data,
			      want);
	}
	buf_free(&b);
}
END_TEST

START_TEST(test_raw_and_null)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	cJSON_AddRawToObject(o, "result", "{\"a\":1}");
	cJSON_AddNullToObject(o, "x");
	json_add_string(o, "y", NULL);
	json_add_string(o, "z", "w");
	json_add_time(o, "t0", 0);
	json_add_time(o, "t1", 1000);
	s = json_print(o);
	ck_assert_str_eq(s, "{\"result\":{\"a\":1},\"x\":null,\"y\":null,\"z\":\"w\",\"t0\":null,"
			    "\"t1\":\"1970-01-01T00:00:01.000Z\"}");
	free(s);
	cJSON_Delete(o);
	ck_assert_ptr_null(json_print(NULL));
}
END_TEST

/* The answer a caller gets, field by field, in API.md's order. */
START_TEST(test_call_answer_json)
{
	struct call_answer a;
	char *s;

	memset(&a, 0, sizeof a);
	a.http_status = 200;
	a.source = SOURCE_RULES;
	a.level = 2;
	a.degraded = 1;
	snprintf(a.reason, sizeof a.reason, "breaker_open");
	a.result = cJSON_Parse("{\"intent\":\"refund\"}");
	a.has_confidence = 1;
	a.confidence = 0.6;
	a.review = 1;
	a.attempts = 0;
	a.elapsed_ms = 3;
	a.request_id = "r-\"1\"";
	a.route = "intent";
	s = call_answer_json(&a, 1);
	ck_assert_str_eq(
		s, "{\"request_id\":\"r-\\\"1\\\"\",\"route\":\"intent\","
		   "\"result\":{\"intent\":\"refund\"},\"source\":\"rules\",\"backend\":null,"
		   "\"level\":2,\"degraded\":true,\"reason\":\"breaker_open\",\"confidence\":0.6,"
		   "\"review\":\"pending\",\"attempts\":0,\"elapsed_ms\":3,\"replayed\":true}");
	free(s);

	/* the result printed once elsewhere is spliced in as is */
	a.result_json = "{\"intent\":\"other\"}";
	a.source = SOURCE_LLM;
	a.backend = "primary";
	a.level = 0;
	a.degraded = 0;
	a.reason[0] = '\0';
	a.has_confidence = 0;
	a.review = 0;
	a.attempts = 1;
	a.elapsed_ms = 120;
	a.request_id = "r-2";
	s = call_answer_json(&a, 0);
	ck_assert_str_eq(
		s, "{\"request_id\":\"r-2\",\"route\":\"intent\","
		   "\"result\":{\"intent\":\"other\"},\"source\":\"llm\",\"backend\":\"primary\","
		   "\"level\":0,\"degraded\":false,\"reason\":null,\"confidence\":null,"
		   "\"review\":\"none\",\"attempts\":1,\"elapsed_ms\":120,\"replayed\":false}");
	free(s);
	cJSON_Delete(a.result);

	/* exhausted */
	memset(&a, 0, sizeof a);
	a.http_status = 503;
	snprintf(a.reason, sizeof a.reason, "no_fallback");
	a.attempts = 2;
	a.elapsed_ms = 900;
	a.request_id = "r-3";
	a.route = "intent";
	s = call_answer_json(&a, 0);
	ck_assert_str_eq(
		s, "{\"error\":{\"code\":\"exhausted\",\"message\":\"every rung of the "
		   "ladder failed for route intent (no_fallback)\",\"reason\":\"no_fallback\"},"
		   "\"request_id\":\"r-3\",\"attempts\":2,\"elapsed_ms\":900}");
	free(s);
}
END_TEST

START_TEST(test_add_number)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	json_add_number(o, "ratio", 0.25);
	json_add_number(o, "none", NAN);
	json_add_number(o, "zero", 0);
	s = json_print(o);
	ck_assert_str_eq(s, "{\"ratio\":0.25,\"none\":null,\"zero\":0}");
	free(s);
	cJSON_Delete(o);
}
END_TEST

static Suite *
jsonutil_suite(void)
{
	Suite *s = suite_create("jsonutil");
	TCase *tc = tcase_create("print");

	tcase_add_test(tc, test_print_matches_cjson);
	tcase_add_test(tc, test_numbers_round_trip);
	tcase_add_test(tc, test_numbers_exact_text);
	tcase_add_test(tc, test_numbers_match_printf);
	tcase_add_test(tc, test_raw_and_null);
	tcase_add_test(tc, test_call_answer_json);
	tcase_add_test(tc, test_add_number);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(jsonutil_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
