/*
 * test_extract: finding the JSON object in literal model outputs. Each case
 * asserts the failure rule and reason, or the object found (and where).
 * Garbage inputs of 1 MiB must stay linear.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extract.h"
#include "util.h"

static struct extract ex;
static const char *rule, *why;

static void
setup(void)
{
	memset(&ex, 0, sizeof ex);
	rule = NULL;
	why = NULL;
}

static void
teardown(void)
{
	cJSON_Delete(ex.obj);
	memset(&ex, 0, sizeof ex);
}

static int
run_len(const char *text, size_t len)
{
	cJSON_Delete(ex.obj);
	memset(&ex, 0, sizeof ex);
	ex.t = text;
	ex.len = text != NULL ? len : 0;
	return extract_run(&ex, &rule, &why);
}

static int
run(const char *text)
{
	return run_len(text, strlen(text));
}

static const cJSON *
obj_get(const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ex.obj, key);

	ck_assert_msg(v != NULL, "object has no \"%s\"", key);
	return v;
}

static const char *
obj_str(const char *key)
{
	const cJSON *v = obj_get(key);

	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

static double
obj_num(const char *key)
{
	const cJSON *v = obj_get(key);

	ck_assert(cJSON_IsNumber(v));
	return v->valuedouble;
}

#define EXPECT_FAIL(text, rule_)                                                                   \
	do {                                                                                       \
		int r_ = run(text);                                                                \
		ck_assert_int_eq(r_, EXTRACT_E_FORMAT);                                            \
		ck_assert_str_eq(rule, (rule_));                                                   \
		ck_assert_ptr_null(ex.obj);                                                        \
		ck_assert_uint_gt(strlen(why), 0);                                                 \
	} while (0)

#define EXPECT_OK(text)                                                                            \
	do {                                                                                       \
		int r_ = run(text);                                                                \
		ck_assert_msg(r_ == 0, "rc %d rule %s: %s", r_, rule, why);                        \
		ck_assert(cJSON_IsObject(ex.obj));                                                 \
	} while (0)

static double
ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

START_TEST(test_empty)
{
	EXPECT_FAIL("", "empty");
	EXPECT_FAIL("   \n\t\r\n ", "empty");
	EXPECT_FAIL("\xEF\xBB\xBF  \n", "empty");
	ck_assert_int_eq(run_len(NULL, 0), EXTRACT_E_FORMAT);
	ck_assert_str_eq(rule, "empty");
	ck_assert_str_eq(why, "empty output");
}
END_TEST

START_TEST(test_fence_only)
{
	EXPECT_FAIL("```json\n```", "empty");
	ck_assert_str_eq(why, "only a code fence, no content");
	EXPECT_FAIL("```\n\n```\n", "empty");
	EXPECT_FAIL("```json", "empty");
}
END_TEST

START_TEST(test_truncated)
{
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9", "json");
	ck_assert_ptr_nonnull(strstr(why, "truncated"));
	EXPECT_FAIL("```json\n{\"intent\": \"refund\",\n", "json");
	ck_assert_ptr_nonnull(strstr(why, "truncated"));
	/* A complete nested object inside a truncated one is not the answer. */
	EXPECT_FAIL("{\"intent\": \"refund\", \"meta\": {\"a\": 1}, \"confidence\": 0.", "json");
	ck_assert_ptr_nonnull(strstr(why, "truncated"));
}
END_TEST

START_TEST(test_not_json)
{
	EXPECT_FAIL("I am sorry, I cannot classify this ticket.", "json");
	ck_assert_str_eq(why, "no JSON object");
	EXPECT_FAIL("{intent: refund, confidence: 0.9}", "json");
	ck_assert_str_eq(why, "invalid JSON object");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9,}", "json");
	EXPECT_FAIL("\"refund\"", "json");
}
END_TEST

START_TEST(test_top_level_array)
{
	EXPECT_FAIL("[{\"intent\": \"refund\", \"confidence\": 0.9}]", "json");
	ck_assert_ptr_nonnull(strstr(why, "array"));
	EXPECT_FAIL("```json\n[\n  {\"intent\": \"refund\", \"confidence\": 0.9}\n]\n```", "json");
	ck_assert_ptr_nonnull(strstr(why, "array"));
	EXPECT_FAIL("Result:\n[ {\"intent\": \"refund\", \"confidence\": 0.9} ]", "json");
	EXPECT_FAIL("[]", "json");
	/* A bracketed word is prose, not an array. */
	EXPECT_OK("[Note] classified as: {\"intent\": \"refund\", \"confidence\": 0.9}");
}
END_TEST

START_TEST(test_bom)
{
	EXPECT_OK("\xEF\xBB\xBF{\"intent\": \"refund\", \"confidence\": 0.9}");
	ck_assert_str_eq(obj_str("intent"), "refund");
}
END_TEST

START_TEST(test_fences)
{
	EXPECT_OK("```json\n{\"intent\": \"refund\", \"confidence\": 0.9}\n```");
	ck_assert_str_eq(obj_str("intent"), "refund");
	EXPECT_OK("```\n{\"intent\": \"consult\", \"confidence\": 0.8}\n```\n");
	ck_assert_str_eq(obj_str("intent"), "consult");
	EXPECT_OK("```JSON\n{\"intent\": \"other\", \"confidence\": 0.8}```");
	ck_assert_str_eq(obj_str("intent"), "other");
	/* A fence inside a string value cuts the fenced block short. */
	EXPECT_OK("```json\n{\"intent\": \"other\", \"confidence\": 0.8, \"summary\": \"a ``` "
		  "b\"}\n```");
	ck_assert_str_eq(obj_str("summary"), "a ``` b");
}
END_TEST

START_TEST(test_prose)
{
	EXPECT_OK(
		"Sure! Here is the classification:\n{\"intent\": \"refund\", \"confidence\": 0.9}\n"
		"Hope this helps.");
	ck_assert_str_eq(obj_str("intent"), "refund");
	EXPECT_OK("Here you go:\n```json\n{\"intent\": \"complaint\", \"confidence\": 0.75}\n```\n"
		  "Let me know if you need anything else.");
	ck_assert_str_eq(obj_str("intent"), "complaint");
	/* Braces in the prose before the answer are skipped. */
	EXPECT_OK("The format is {intent, confidence}. Answer: {\"intent\": \"other\", "
		  "\"confidence\": 0.6}");
	ck_assert_str_eq(obj_str("intent"), "other");
	/* The fenced block is preferred over an example in the prose. */
	EXPECT_OK("For example {\"intent\": \"x\"}.\n```json\n{\"intent\": \"consult\", "
		  "\"confidence\": 0.7}\n```");
	ck_assert_str_eq(obj_str("intent"), "consult");
}
END_TEST

START_TEST(test_braces_in_strings)
{
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.8, \"summary\": \"use {braces} "
		  "and } here {\"}");
	ck_assert_str_eq(obj_str("summary"), "use {braces} and } here {");
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.8, \"summary\": \"he said \\\"}\\\" "
		  "loudly\"} trailing }");
	ck_assert_str_eq(obj_str("summary"), "he said \"}\" loudly");
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.8, \"summary\": \"C:\\\\dir\\\\\"}");
	ck_assert_str_eq(obj_str("summary"), "C:\\dir\\");
}
END_TEST

START_TEST(test_two_objects)
{
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9}\n{\"intent\": \"other\", "
		  "\"confidence\": 0.1}");
	ck_assert_str_eq(obj_str("intent"), "refund");
	ck_assert_double_eq(obj_num("confidence"), 0.9);
}
END_TEST

START_TEST(test_garbage)
{
	static const char *const units[] = {"{", "{\"", "{a}", "lorem ipsum ", "{{[\"\\", "{]"};
	size_t want = 1024 * 1024, i, n, len;
	struct timespec t0;
	double ms;
	char *g;

	g = xmalloc(want + 1);
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		n = strlen(units[i]);
		for (len = 0; len + n <= want; len += n)
			memcpy(g + len, units[i], n);
		g[len] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ck_assert_int_eq(run_len(g, len), EXTRACT_E_FORMAT);
		ms = ms_since(&t0);
		ck_assert_str_eq(rule, "json");
		/* The reason fits struct validate_result's detail. */
		ck_assert_uint_lt(strlen(why), 256);
		ck_assert_msg(ms < 1000, "garbage \"%s\" took %.1f ms", units[i], ms);
	}
	/* Deep nesting: 500 k '{' then 500 k '}'; the innermost "{}" is the only object. */
	memset(g, '{', want / 2);
	memset(g + want / 2, '}', want / 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(run_len(g, want), 0);
	ms = ms_since(&t0);
	ck_assert(cJSON_IsObject(ex.obj));
	ck_assert_int_eq(cJSON_GetArraySize(ex.obj), 0);
	ck_assert_uint_eq(ex.start, want / 2 - 1);
	ck_assert_uint_eq(ex.end, want / 2 + 1);
	ck_assert_msg(ms < 1000, "nested garbage took %.1f ms", ms);
	/* Deep and never closed: beyond cJSON's nesting limit, reported as truncated. */
	for (len = 0; len + 5 <= want; len += 5)
		memcpy(g + len, "{\"a\":", 5);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(run_len(g, len), EXTRACT_E_FORMAT);
	ms = ms_since(&t0);
	ck_assert_str_eq(rule, "json");
	ck_assert_ptr_nonnull(strstr(why, "truncated"));
	ck_assert_msg(ms < 1000, "deep truncated garbage took %.1f ms", ms);
	free(g);
}
END_TEST

START_TEST(test_extract_offsets)
{
	const char *t = "ab {\"x\": \"}\"} cd {\"y\": 2}";
	size_t s = 0, e = 0;

	ck_assert_int_eq(validate_extract_object(t, strlen(t), &s, &e), 0);
	ck_assert_uint_eq(s, 3);
	ck_assert_uint_eq(e, 13);
	t = "\xEF\xBB\xBF```json\n{}\n```";
	ck_assert_int_eq(validate_extract_object(t, strlen(t), &s, &e), 0);
	ck_assert_uint_eq(s, 11);
	ck_assert_uint_eq(e, 13);
	t = "{\"x\": ";
	ck_assert_int_eq(validate_extract_object(t, strlen(t), &s, &e), EXTRACT_E_FORMAT);
	/* Not NUL-terminated: only len bytes are read. */
	ck_assert_int_eq(validate_extract_object("{\"a\":1}}garbage", 7, &s, &e), 0);
	ck_assert_uint_eq(e, 7);
	ck_assert_int_eq(validate_extract_object("{\"a\":1}", 6, &s, &e), EXTRACT_E_FORMAT);
}
END_TEST

START_TEST(test_whitespace)
{
	ck_assert(extract_is_ws(' '));
	ck_assert(extract_is_ws('\t'));
	ck_assert(extract_is_ws('\n'));
	ck_assert(extract_is_ws('\r'));
	ck_assert(extract_is_ws('\f'));
	ck_assert(extract_is_ws('\v'));
	ck_assert(!extract_is_ws('\0'));
	ck_assert(!extract_is_ws('x'));
	/* A no-break space (U+00A0, "\xC2\xA0") is not whitespace here. */
	ck_assert(!extract_is_ws(0xA0));
	ck_assert_uint_eq(extract_skip_ws(" \t\nab ", 0, 6), 3);
	ck_assert_uint_eq(extract_skip_ws(" \t\nab ", 5, 6), 6);
	ck_assert_uint_eq(extract_skip_ws("   ", 1, 2), 2);
	ck_assert_uint_eq(extract_skip_ws("a  ", 0, 3), 0);
}
END_TEST

static Suite *
extract_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"empty", test_empty},
		{"fence_only", test_fence_only},
		{"truncated", test_truncated},
		{"not_json", test_not_json},
		{"top_level_array", test_top_level_array},
		{"bom", test_bom},
		{"fences", test_fences},
		{"prose", test_prose},
		{"braces_in_strings", test_braces_in_strings},
		{"two_objects", test_two_objects},
		{"garbage", test_garbage},
		{"extract_offsets", test_extract_offsets},
		{"whitespace", test_whitespace},
	};
	Suite *s = suite_create("extract");
	TCase *tc;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(extract_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
