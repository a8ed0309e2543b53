/*
 * test_validate: the output contract with literal model outputs. Each case
 * asserts the exact stage, rule and field, and the normalised values. The
 * output_cfg is built by hand (schema compiled here, regexes compiled
 * here) so these tests do not depend on config.c. Extraction and the
 * schema subset have their own tests (test_extract, test_schema); the
 * format and schema cases here are the driver's side of them.
 */
#include <check.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "validate.h"

#define CLASSIFY_SCHEMA                                                                            \
	"{\"type\": \"object\", \"required\": [\"intent\", \"confidence\"],"                       \
	" \"properties\": {"                                                                       \
	"  \"intent\": {\"type\": \"string\", \"enum\": [\"refund\", \"complaint\", \"consult\", " \
	"\"other\"]},"                                                                             \
	"  \"confidence\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1},"                \
	"  \"summary\": {\"type\": \"string\", \"minLength\": 4, \"maxLength\": 100}}}"

static struct output_cfg oc;
static struct validate_result res;

static void
oc_schema(const char *json)
{
	char *cause = NULL;

	vschema_free(oc.vschema);
	oc.vschema = NULL;
	cJSON_Delete(oc.schema);
	oc.schema = cJSON_Parse(json);
	ck_assert_ptr_nonnull(oc.schema);
	ck_assert_int_eq(validate_compile(oc.schema, &oc.vschema, &cause), 0);
	ck_assert_ptr_null(cause);
	ck_assert_ptr_nonnull(oc.vschema);
}

static void
pattern_init(struct pattern_rule *pr, const char *field, const char *pattern)
{
	pr->field = xstrdup(field);
	pr->pattern = xstrdup(pattern);
	ck_assert_int_eq(regcomp(&pr->re, pattern, REG_EXTENDED | REG_NOSUB), 0);
}

static void
pattern_fini(struct pattern_rule *pr)
{
	free(pr->field);
	free(pr->pattern);
	regfree(&pr->re);
}

static void
oc_deny(const char *field, const char *pattern)
{
	oc.deny = xrealloc(oc.deny, (size_t)(oc.ndeny + 1) * sizeof *oc.deny);
	pattern_init(&oc.deny[oc.ndeny++], field, pattern);
}

static void
oc_rule(const char *when_field, const char *equals_json, const char *field, const char *pattern)
{
	struct cond_rule *cr;

	oc.rules = xrealloc(oc.rules, (size_t)(oc.nrules + 1) * sizeof *oc.rules);
	cr = &oc.rules[oc.nrules++];
	cr->when_field = xstrdup(when_field);
	cr->when_equals = cJSON_Parse(equals_json);
	ck_assert_ptr_nonnull(cr->when_equals);
	pattern_init(&cr->deny, field, pattern);
}

/* The CONFIG.md ticket-classification output section, thresholds off. */
static void
setup(void)
{
	memset(&oc, 0, sizeof oc);
	memset(&res, 0, sizeof res);
	oc.present = true;
	oc.confidence_field = xstrdup("confidence");
	oc.clamp_confidence = true;
	oc.reject_below = 0.0;
	oc.review_below = 0.0;
	oc_schema(CLASSIFY_SCHEMA);
	oc_deny("summary", "未知|无法解析|unknown");
	oc_rule("intent", "\"complaint\"", "summary", "感谢|表扬");
}

static void
teardown(void)
{
	int i;

	validate_result_clear(&res);
	for (i = 0; i < oc.ndeny; i++)
		pattern_fini(&oc.deny[i]);
	free(oc.deny);
	for (i = 0; i < oc.nrules; i++) {
		free(oc.rules[i].when_field);
		cJSON_Delete(oc.rules[i].when_equals);
		pattern_fini(&oc.rules[i].deny);
	}
	free(oc.rules);
	free(oc.confidence_field);
	vschema_free(oc.vschema);
	cJSON_Delete(oc.schema);
	memset(&oc, 0, sizeof oc);
}

static int
run_len(const char *text, size_t len)
{
	validate_result_clear(&res);
	return validate_output(&oc, text, len, &res);
}

static int
run(const char *text)
{
	return run_len(text, strlen(text));
}

static const cJSON *
res_get(const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(res.result, key);

	ck_assert_msg(v != NULL, "result has no \"%s\"", key);
	return v;
}

static const char *
res_str(const char *key)
{
	const cJSON *v = res_get(key);

	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

static double
res_num(const char *key)
{
	const cJSON *v = res_get(key);

	ck_assert(cJSON_IsNumber(v));
	return v->valuedouble;
}

#define EXPECT_FAIL(text, stage_, rule_, field_)                                                   \
	do {                                                                                       \
		int r_ = run(text);                                                                \
		ck_assert_int_eq(r_, (stage_));                                                    \
		ck_assert_int_eq(res.stage, (stage_));                                             \
		ck_assert_str_eq(res.rule, (rule_));                                               \
		ck_assert_str_eq(res.field, (field_));                                             \
		ck_assert_ptr_null(res.result);                                                    \
		ck_assert_uint_gt(strlen(res.detail), 0);                                          \
	} while (0)

#define EXPECT_OK(text)                                                                            \
	do {                                                                                       \
		int r_ = run(text);                                                                \
		ck_assert_msg(r_ == 0, "rc %d stage %s rule %s field %s: %s", r_,                  \
			      validate_stage_name(res.stage), res.rule, res.field, res.detail);    \
		ck_assert_int_eq(res.stage, 0);                                                    \
		ck_assert(cJSON_IsObject(res.result));                                             \
	} while (0)

/* ---- format (extract.c; the cases are in test_extract) ------------------ */

START_TEST(test_format)
{
	struct timespec t0, t1;
	size_t want = 1024 * 1024;
	double ms;
	char *g;

	/* The driver reports extraction failures as stage format, no field. */
	EXPECT_FAIL("", VALIDATE_E_FORMAT, "empty", "");
	ck_assert_int_eq(run_len(NULL, 0), VALIDATE_E_FORMAT);
	ck_assert_str_eq(res.rule, "empty");
	EXPECT_FAIL("```json\n```", VALIDATE_E_FORMAT, "empty", "");
	ck_assert_str_eq(res.detail, "only a code fence, no content");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9", VALIDATE_E_FORMAT, "json", "");
	ck_assert_ptr_nonnull(strstr(res.detail, "truncated"));
	EXPECT_FAIL("I am sorry, I cannot classify this ticket.", VALIDATE_E_FORMAT, "json", "");
	ck_assert_str_eq(res.detail, "no JSON object");
	EXPECT_OK("\xEF\xBB\xBFHere you go:\n```json\n{\"intent\": \"complaint\", \"confidence\": "
		  "0.75}\n```");
	ck_assert_str_eq(res_str("intent"), "complaint");
	/* 500 k '{' then 500 k '}': the innermost "{}" is an object, not an answer. */
	g = xmalloc(want);
	memset(g, '{', want / 2);
	memset(g + want / 2, '}', want / 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(run_len(g, want), VALIDATE_E_SCHEMA);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_str_eq(res.rule, "required");
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	ck_assert_msg(ms < 1000, "nested garbage took %.1f ms", ms);
	free(g);
}
END_TEST

/* ---- normalisation ----------------------------------------------------- */

START_TEST(test_key_case)
{
	EXPECT_OK("{\"Intent\": \"refund\", \"CONFIDENCE\": 0.9}");
	ck_assert_str_eq(res_str("intent"), "refund");
	ck_assert_double_eq(res_num("confidence"), 0.9);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(res.result, "Intent"));
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(res.result, "CONFIDENCE"));
	/* Both spellings: the exact one wins, the drifted one is dropped. */
	EXPECT_OK("{\"Intent\": \"other\", \"intent\": \"refund\", \"confidence\": 0.9}");
	ck_assert_str_eq(res_str("intent"), "refund");
	ck_assert_int_eq(cJSON_GetArraySize(res.result), 2);
	/* Unknown keys keep their spelling. */
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9, \"Extra\": 1}");
	ck_assert_double_eq(res_num("Extra"), 1);
}
END_TEST

START_TEST(test_coerce)
{
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": \"0.85\"}");
	ck_assert_double_eq(res_num("confidence"), 0.85);
	ck_assert(res.has_confidence);
	ck_assert_double_eq(res.confidence, 0.85);
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": \" 1e-1 \"}");
	ck_assert_double_eq(res_num("confidence"), 0.1);
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": \"abc\"}", VALIDATE_E_SCHEMA, "type",
		    "confidence");
	ck_assert_str_eq(res.detail, "confidence: expected number, got string");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": \"0x1p-1\"}", VALIDATE_E_SCHEMA,
		    "type", "confidence");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": \"nan\"}", VALIDATE_E_SCHEMA, "type",
		    "confidence");
	/* Strings stay strings where the schema says string. */
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"1234\"}");
	ck_assert_str_eq(res_str("summary"), "1234");
}
END_TEST

START_TEST(test_clamp)
{
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 1.7}");
	ck_assert_double_eq(res_num("confidence"), 1.0);
	ck_assert_double_eq(res.confidence, 1.0);
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": -0.2}");
	ck_assert_double_eq(res_num("confidence"), 0.0);
	/* Clamping happens after coercion and before the schema check. */
	EXPECT_OK("{\"intent\": \"refund\", \"Confidence\": \"85\"}");
	ck_assert_double_eq(res_num("confidence"), 1.0);
	oc.clamp_confidence = false;
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 1.7}", VALIDATE_E_SCHEMA, "maximum",
		    "confidence");
	ck_assert_str_eq(res.detail, "confidence: 1.7 > maximum 1");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": -0.2}", VALIDATE_E_SCHEMA, "minimum",
		    "confidence");
}
END_TEST

START_TEST(test_huge_numbers)
{
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 1e400}");
	ck_assert_double_eq(res_num("confidence"), 1.0);
	oc.clamp_confidence = false;
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 1e400}", VALIDATE_E_SCHEMA, "type",
		    "confidence");
	ck_assert_str_eq(res.detail, "confidence: number out of range");
	oc_schema("{\"type\": \"object\", \"properties\": {\"amount\": {\"type\": \"number\"}}}");
	EXPECT_FAIL("{\"amount\": -1e400}", VALIDATE_E_SCHEMA, "type", "amount");
	EXPECT_OK("{\"amount\": 1e300}");
	ck_assert_double_eq(res_num("amount"), 1e300);
}
END_TEST

/* ---- schema (schema.c; the cases are in test_schema) -------------------- */

START_TEST(test_integer)
{
	oc_schema("{\"type\": \"object\", \"properties\": {\"count\": {\"type\": \"integer\", "
		  "\"minimum\": 1, \"maximum\": 10}, \"ratio\": {\"type\": \"number\"}}}");
	EXPECT_OK("{\"count\": \"7\"}");
	ck_assert_double_eq(res_num("count"), 7);
	EXPECT_FAIL("{\"count\": \"3.5\"}", VALIDATE_E_SCHEMA, "type", "count");
	ck_assert_str_eq(res.detail, "count: expected integer, got number");
}
END_TEST

START_TEST(test_nested)
{
	oc_schema("{\"type\": \"object\", \"required\": [\"address\"], \"properties\": {"
		  "\"address\": {\"type\": \"object\", \"required\": [\"city\"], \"properties\": {"
		  "\"city\": {\"type\": \"string\", \"minLength\": 2}, "
		  "\"zip\": {\"type\": \"integer\"}}}}}");
	EXPECT_OK("{\"Address\": {\"CITY\": \"北京\", \"Zip\": \"100000\"}}");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(res_get("address"), "city")->valuestring,
			 "北京");
	ck_assert_double_eq(
		cJSON_GetObjectItemCaseSensitive(res_get("address"), "zip")->valuedouble, 100000);
	EXPECT_FAIL("{\"address\": {\"city\": \"x\"}}", VALIDATE_E_SCHEMA, "minLength",
		    "address.city");
	ck_assert_str_eq(res.detail, "address.city: 1 characters < minLength 2");
}
END_TEST

START_TEST(test_items)
{
	oc_schema("{\"type\": \"object\", \"properties\": {\"tags\": {\"type\": \"array\", "
		  "\"items\": {\"type\": \"string\", \"enum\": [\"a\", \"b\"]}}, "
		  "\"scores\": {\"type\": \"array\", \"items\": {\"type\": \"number\", "
		  "\"maximum\": 1}}}}");
	EXPECT_OK("{\"tags\": [\"a\", \"b\", \"a\"], \"scores\": [\"0.5\", 1]}");
	ck_assert_double_eq(cJSON_GetArrayItem(res_get("scores"), 0)->valuedouble, 0.5);
	EXPECT_FAIL("{\"tags\": [\"a\", \"zzz\"]}", VALIDATE_E_SCHEMA, "enum", "tags[1]");
}
END_TEST

START_TEST(test_additional_properties)
{
	oc_schema("{\"type\": \"object\", \"additionalProperties\": false, \"description\": \"d\", "
		  "\"title\": \"t\", \"properties\": {\"intent\": {\"type\": \"string\", "
		  "\"description\": \"the intent\"}, \"confidence\": {\"type\": \"number\"}}}");
	EXPECT_OK("{\"INTENT\": \"refund\", \"confidence\": 0.9}");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9, \"extra\": 1}",
		    VALIDATE_E_SCHEMA, "additionalProperties", "extra");
	ck_assert_str_eq(res.detail, "extra: unknown field not allowed");
}
END_TEST

/* ---- semantic ------------------------------------------------------------ */

START_TEST(test_deny)
{
	EXPECT_FAIL("{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \"客户地址未知\"}",
		    VALIDATE_E_SEMANTIC, "deny", "summary");
	ck_assert_str_eq(
		res.detail,
		"summary: \"客户地址未知\" matches deny pattern \"未知|无法解析|unknown\"");
	EXPECT_FAIL(
		"{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \"reason unknown\"}",
		VALIDATE_E_SEMANTIC, "deny", "summary");
	/* Deny runs on the normalised keys. */
	EXPECT_FAIL("{\"intent\": \"consult\", \"confidence\": 0.9, \"SUMMARY\": \"无法解析输入\"}",
		    VALIDATE_E_SEMANTIC, "deny", "summary");
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \"询问发票开具\"}");
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.9}");
}
END_TEST

START_TEST(test_conditional)
{
	EXPECT_FAIL(
		"{\"intent\": \"complaint\", \"confidence\": 0.9, \"summary\": \"感谢客服的帮助\"}",
		VALIDATE_E_SEMANTIC, "rules[0]", "summary");
	ck_assert_ptr_nonnull(strstr(res.detail, "when intent = \"complaint\""));
	EXPECT_OK(
		"{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \"感谢客服的帮助\"}");
	EXPECT_OK("{\"intent\": \"complaint\", \"confidence\": 0.9, \"summary\": \"物流太慢了\"}");
	/* The condition compares JSON values, numbers by value. */
	oc_rule("confidence", "1", "intent", "^other$");
	EXPECT_FAIL("{\"intent\": \"other\", \"confidence\": 1.0}", VALIDATE_E_SEMANTIC, "rules[1]",
		    "intent");
}
END_TEST

START_TEST(test_detail_bounded)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	ck_assert_int_eq(
		buf_puts(&b, "{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \""), 0);
	while (b.len < 10000)
		ck_assert_int_eq(buf_puts(&b, "未知"), 0);
	ck_assert_int_eq(buf_puts(&b, "\"}"), 0);
	oc_schema("{\"type\": \"object\"}");
	EXPECT_FAIL(b.data, VALIDATE_E_SEMANTIC, "deny", "summary");
	ck_assert_uint_lt(strlen(res.detail), 160);
	buf_free(&b);
}
END_TEST

/* ---- confidence ---------------------------------------------------------- */

START_TEST(test_reject_below)
{
	oc.reject_below = 0.3;
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.2}", VALIDATE_E_CONFIDENCE,
		    "reject_below", "confidence");
	ck_assert_str_eq(res.detail, "confidence: 0.2 < reject_below 0.3");
	ck_assert(res.has_confidence);
	ck_assert_double_eq(res.confidence, 0.2);
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.3}");
	ck_assert(!res.review);
}
END_TEST

START_TEST(test_review_below)
{
	oc.review_below = 0.7;
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.5}");
	ck_assert(res.review);
	ck_assert_double_eq(res.confidence, 0.5);
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.7}");
	ck_assert(!res.review);
	/* A custom confidence field, absent from the schema: not present, no review. */
	free(oc.confidence_field);
	oc.confidence_field = xstrdup("score");
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.1}");
	ck_assert(!res.has_confidence);
	ck_assert(!res.review);
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9, \"score\": 0.6}");
	ck_assert(res.has_confidence);
	ck_assert(res.review);
}
END_TEST

/* ---- no output section --------------------------------------------------- */

START_TEST(test_text)
{
	oc.present = false;
	ck_assert_int_eq(run("  Sorry, the order ships tomorrow.\n"), 0);
	ck_assert(cJSON_IsString(res.result));
	ck_assert_str_eq(res.result->valuestring, "Sorry, the order ships tomorrow.");
	ck_assert_int_eq(run("{\"intent\": 1}"), 0);
	ck_assert_str_eq(res.result->valuestring, "{\"intent\": 1}");
	EXPECT_FAIL(" \n\t", VALIDATE_E_FORMAT, "empty", "");
	ck_assert_int_eq(validate_output(NULL, "x", 1, &res), 0);
	ck_assert_str_eq(res.result->valuestring, "x");
}
END_TEST

/* ---- validate_value ------------------------------------------------------ */

START_TEST(test_value)
{
	cJSON *v = cJSON_Parse("{\"Intent\": \"refund\", \"confidence\": \"0.1\"}");

	oc.reject_below = 0.5;
	oc.review_below = 0.9;
	ck_assert_int_eq(validate_value(&oc, v, &res), 0);
	ck_assert_str_eq(res_str("intent"), "refund");
	ck_assert_double_eq(res_num("confidence"), 0.1);
	ck_assert(!res.review);
	/* The caller's value is borrowed, not rewritten. */
	ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(v, "Intent"));
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "confidence")));
	validate_result_clear(&res);
	cJSON_Delete(v);

	v = cJSON_Parse("{\"intent\": \"banana\", \"confidence\": 0.9}");
	ck_assert_int_eq(validate_value(&oc, v, &res), VALIDATE_E_SCHEMA);
	ck_assert_str_eq(res.rule, "enum");
	ck_assert_str_eq(res.field, "intent");
	ck_assert_ptr_null(res.result);
	cJSON_Delete(v);

	v = cJSON_Parse(
		"{\"intent\": \"complaint\", \"confidence\": 0.9, \"summary\": \"表扬一下\"}");
	ck_assert_int_eq(validate_value(&oc, v, &res), VALIDATE_E_SEMANTIC);
	ck_assert_str_eq(res.rule, "rules[0]");
	cJSON_Delete(v);

	v = cJSON_Parse("[1]");
	ck_assert_int_eq(validate_value(&oc, v, &res), VALIDATE_E_FORMAT);
	ck_assert_str_eq(res.rule, "json");
	cJSON_Delete(v);

	ck_assert_int_eq(validate_value(&oc, NULL, &res), VALIDATE_E_FORMAT);

	oc.present = false;
	v = cJSON_CreateString(" ok ");
	ck_assert_int_eq(validate_value(&oc, v, &res), 0);
	ck_assert_str_eq(res.result->valuestring, "ok");
	validate_result_clear(&res);
	cJSON_Delete(v);
}
END_TEST

/* ---- the rest ------------------------------------------------------------ */

START_TEST(test_stage_names)
{
	ck_assert_str_eq(validate_stage_name(VALIDATE_E_FORMAT), "format");
	ck_assert_str_eq(validate_stage_name(VALIDATE_E_SCHEMA), "schema");
	ck_assert_str_eq(validate_stage_name(VALIDATE_E_SEMANTIC), "semantic");
	ck_assert_str_eq(validate_stage_name(VALIDATE_E_CONFIDENCE), "confidence");
	ck_assert_str_eq(validate_stage_name(0), "ok");
	ck_assert_str_eq(validate_stage_name(99), "unknown");
}
END_TEST

static Suite *
validate_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"format", test_format},
		{"key_case", test_key_case},
		{"coerce", test_coerce},
		{"clamp", test_clamp},
		{"huge_numbers", test_huge_numbers},
		{"integer", test_integer},
		{"nested", test_nested},
		{"items", test_items},
		{"additional_properties", test_additional_properties},
		{"deny", test_deny},
		{"conditional", test_conditional},
		{"detail_bounded", test_detail_bounded},
		{"reject_below", test_reject_below},
		{"review_below", test_review_below},
		{"text", test_text},
		{"value", test_value},
		{"stage_names", test_stage_names},
	};
	Suite *s = suite_create("validate");
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
	SRunner *sr = srunner_create(validate_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
