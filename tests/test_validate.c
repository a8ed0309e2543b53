/*
 * test_validate: the output contract with literal model outputs. Each case
 * asserts the exact stage, rule and field, and the normalised values. The
 * output_cfg is built by hand (schema compiled here, regexes compiled
 * here) so these tests do not depend on config.c.
 */
#include <check.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "validate.h"

#define CLASSIFY_SCHEMA                                                                            \
	"{\"type\": \"object\", \"required\": [\"intent\", \"confidence\"],"                        \
	" \"properties\": {"                                                                        \
	"  \"intent\": {\"type\": \"string\", \"enum\": [\"refund\", \"complaint\", \"consult\", "  \
	"\"other\"]},"                                                                              \
	"  \"confidence\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1},"                 \
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

/* ---- format ------------------------------------------------------------ */

START_TEST(test_empty)
{
	EXPECT_FAIL("", VALIDATE_E_FORMAT, "empty", "");
	EXPECT_FAIL("   \n\t\r\n ", VALIDATE_E_FORMAT, "empty", "");
	EXPECT_FAIL("\xEF\xBB\xBF  \n", VALIDATE_E_FORMAT, "empty", "");
	ck_assert_int_eq(run_len(NULL, 0), VALIDATE_E_FORMAT);
	ck_assert_str_eq(res.rule, "empty");
}
END_TEST

START_TEST(test_fence_only)
{
	EXPECT_FAIL("```json\n```", VALIDATE_E_FORMAT, "empty", "");
	ck_assert_str_eq(res.detail, "only a code fence, no content");
	EXPECT_FAIL("```\n\n```\n", VALIDATE_E_FORMAT, "empty", "");
	EXPECT_FAIL("```json", VALIDATE_E_FORMAT, "empty", "");
}
END_TEST

START_TEST(test_truncated)
{
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9", VALIDATE_E_FORMAT, "json", "");
	ck_assert_ptr_nonnull(strstr(res.detail, "truncated"));
	EXPECT_FAIL("```json\n{\"intent\": \"refund\",\n", VALIDATE_E_FORMAT, "json", "");
	ck_assert_ptr_nonnull(strstr(res.detail, "truncated"));
	/* A complete nested object inside a truncated one is not the answer. */
	EXPECT_FAIL("{\"intent\": \"refund\", \"meta\": {\"a\": 1}, \"confidence\": 0.",
		    VALIDATE_E_FORMAT, "json", "");
	ck_assert_ptr_nonnull(strstr(res.detail, "truncated"));
}
END_TEST

START_TEST(test_not_json)
{
	EXPECT_FAIL("I am sorry, I cannot classify this ticket.", VALIDATE_E_FORMAT, "json", "");
	ck_assert_str_eq(res.detail, "no JSON object");
	EXPECT_FAIL("{intent: refund, confidence: 0.9}", VALIDATE_E_FORMAT, "json", "");
	ck_assert_str_eq(res.detail, "invalid JSON object");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9,}", VALIDATE_E_FORMAT, "json", "");
	EXPECT_FAIL("\"refund\"", VALIDATE_E_FORMAT, "json", "");
}
END_TEST

START_TEST(test_top_level_array)
{
	EXPECT_FAIL("[{\"intent\": \"refund\", \"confidence\": 0.9}]", VALIDATE_E_FORMAT, "json", "");
	ck_assert_ptr_nonnull(strstr(res.detail, "array"));
	EXPECT_FAIL("```json\n[\n  {\"intent\": \"refund\", \"confidence\": 0.9}\n]\n```",
		    VALIDATE_E_FORMAT, "json", "");
	ck_assert_ptr_nonnull(strstr(res.detail, "array"));
	EXPECT_FAIL("Result:\n[ {\"intent\": \"refund\", \"confidence\": 0.9} ]", VALIDATE_E_FORMAT,
		    "json", "");
	EXPECT_FAIL("[]", VALIDATE_E_FORMAT, "json", "");
	/* A bracketed word is prose, not an array. */
	EXPECT_OK("[Note] classified as: {\"intent\": \"refund\", \"confidence\": 0.9}");
}
END_TEST

START_TEST(test_bom)
{
	EXPECT_OK("\xEF\xBB\xBF{\"intent\": \"refund\", \"confidence\": 0.9}");
	ck_assert_str_eq(res_str("intent"), "refund");
}
END_TEST

START_TEST(test_fences)
{
	EXPECT_OK("```json\n{\"intent\": \"refund\", \"confidence\": 0.9}\n```");
	ck_assert_str_eq(res_str("intent"), "refund");
	EXPECT_OK("```\n{\"intent\": \"consult\", \"confidence\": 0.8}\n```\n");
	ck_assert_str_eq(res_str("intent"), "consult");
	EXPECT_OK("```JSON\n{\"intent\": \"other\", \"confidence\": 0.8}```");
	ck_assert_str_eq(res_str("intent"), "other");
	/* A fence inside a string value cuts the fenced block short. */
	EXPECT_OK("```json\n{\"intent\": \"other\", \"confidence\": 0.8, \"summary\": \"a ``` b\"}\n```");
	ck_assert_str_eq(res_str("summary"), "a ``` b");
}
END_TEST

START_TEST(test_prose)
{
	EXPECT_OK("Sure! Here is the classification:\n{\"intent\": \"refund\", \"confidence\": 0.9}\n"
		  "Hope this helps.");
	ck_assert_str_eq(res_str("intent"), "refund");
	EXPECT_OK("Here you go:\n```json\n{\"intent\": \"complaint\", \"confidence\": 0.75}\n```\n"
		  "Let me know if you need anything else.");
	ck_assert_str_eq(res_str("intent"), "complaint");
	/* Braces in the prose before the answer are skipped. */
	EXPECT_OK("The format is {intent, confidence}. Answer: {\"intent\": \"other\", "
		  "\"confidence\": 0.6}");
	ck_assert_str_eq(res_str("intent"), "other");
	/* The fenced block is preferred over an example in the prose. */
	EXPECT_OK("For example {\"intent\": \"x\"}.\n```json\n{\"intent\": \"consult\", "
		  "\"confidence\": 0.7}\n```");
	ck_assert_str_eq(res_str("intent"), "consult");
}
END_TEST

START_TEST(test_braces_in_strings)
{
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.8, \"summary\": \"use {braces} "
		  "and } here {\"}");
	ck_assert_str_eq(res_str("summary"), "use {braces} and } here {");
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.8, \"summary\": \"he said \\\"}\\\" "
		  "loudly\"} trailing }");
	ck_assert_str_eq(res_str("summary"), "he said \"}\" loudly");
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.8, \"summary\": \"C:\\\\dir\\\\\"}");
	ck_assert_str_eq(res_str("summary"), "C:\\dir\\");
}
END_TEST

START_TEST(test_two_objects)
{
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9}\n{\"intent\": \"other\", "
		  "\"confidence\": 0.1}");
	ck_assert_str_eq(res_str("intent"), "refund");
	ck_assert_double_eq(res_num("confidence"), 0.9);
}
END_TEST

START_TEST(test_garbage)
{
	static const char *const units[] = {"{", "{\"", "{a}", "lorem ipsum ", "{{[\"\\", "{]"};
	size_t want = 1024 * 1024, i, n, len;
	struct timespec t0, t1;
	double ms;
	char *g;

	g = xmalloc(want + 1);
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		n = strlen(units[i]);
		for (len = 0; len + n <= want; len += n)
			memcpy(g + len, units[i], n);
		g[len] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ck_assert_int_eq(run_len(g, len), VALIDATE_E_FORMAT);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ck_assert_str_eq(res.rule, "json");
		ck_assert_uint_lt(strlen(res.detail), sizeof res.detail);
		ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		ck_assert_msg(ms < 1000, "garbage \"%s\" took %.1f ms", units[i], ms);
	}
	/* Deep nesting: 500 k '{' then 500 k '}'; the innermost "{}" is an object, not an answer. */
	memset(g, '{', want / 2);
	memset(g + want / 2, '}', want / 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(run_len(g, want), VALIDATE_E_SCHEMA);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_str_eq(res.rule, "required");
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	ck_assert_msg(ms < 1000, "nested garbage took %.1f ms", ms);
	/* Deep and never closed: beyond cJSON's nesting limit, reported as truncated. */
	for (len = 0; len + 5 <= want; len += 5)
		memcpy(g + len, "{\"a\":", 5);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(run_len(g, len), VALIDATE_E_FORMAT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_str_eq(res.rule, "json");
	ck_assert_ptr_nonnull(strstr(res.detail, "truncated"));
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	ck_assert_msg(ms < 1000, "deep truncated garbage took %.1f ms", ms);
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
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": \"0x1p-1\"}", VALIDATE_E_SCHEMA, "type",
		    "confidence");
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

/* ---- schema -------------------------------------------------------------- */

START_TEST(test_enum)
{
	EXPECT_FAIL("{\"intent\": \"banana\", \"confidence\": 0.9}", VALIDATE_E_SCHEMA, "enum",
		    "intent");
	ck_assert_str_eq(res.detail, "intent: \"banana\" not in enum");
	EXPECT_FAIL("{\"intent\": \"Refund\", \"confidence\": 0.9}", VALIDATE_E_SCHEMA, "enum",
		    "intent");
	/* Scalars compared by value. */
	oc_schema("{\"type\": \"object\", \"properties\": {\"n\": {\"enum\": [1, 2.5, true, null, "
		  "\"x\"]}}}");
	EXPECT_OK("{\"n\": 1.0}");
	EXPECT_OK("{\"n\": 2.5}");
	EXPECT_OK("{\"n\": true}");
	EXPECT_OK("{\"n\": null}");
	EXPECT_FAIL("{\"n\": false}", VALIDATE_E_SCHEMA, "enum", "n");
	EXPECT_FAIL("{\"n\": 3}", VALIDATE_E_SCHEMA, "enum", "n");
	ck_assert_str_eq(res.detail, "n: 3 not in enum");
}
END_TEST

START_TEST(test_required)
{
	EXPECT_FAIL("{\"intent\": \"refund\"}", VALIDATE_E_SCHEMA, "required", "confidence");
	ck_assert_str_eq(res.detail, "confidence: required field missing");
	EXPECT_FAIL("{}", VALIDATE_E_SCHEMA, "required", "intent");
}
END_TEST

START_TEST(test_types)
{
	EXPECT_FAIL("{\"intent\": 5, \"confidence\": 0.9}", VALIDATE_E_SCHEMA, "type", "intent");
	ck_assert_str_eq(res.detail, "intent: expected string, got number");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": true}", VALIDATE_E_SCHEMA, "type",
		    "confidence");
	oc_schema("{\"type\": \"object\", \"properties\": {\"ok\": {\"type\": \"boolean\"}, "
		  "\"v\": {\"type\": [\"string\", \"null\"]}}}");
	EXPECT_OK("{\"ok\": false, \"v\": null}");
	EXPECT_OK("{\"ok\": true, \"v\": \"s\"}");
	EXPECT_FAIL("{\"ok\": \"true\"}", VALIDATE_E_SCHEMA, "type", "ok");
	EXPECT_FAIL("{\"v\": 1}", VALIDATE_E_SCHEMA, "type", "v");
	ck_assert_str_eq(res.detail, "v: expected string or null, got number");
}
END_TEST

START_TEST(test_integer)
{
	oc_schema("{\"type\": \"object\", \"properties\": {\"count\": {\"type\": \"integer\", "
		  "\"minimum\": 1, \"maximum\": 10}, \"ratio\": {\"type\": \"number\"}}}");
	EXPECT_OK("{\"count\": 3, \"ratio\": 3}");
	EXPECT_OK("{\"count\": 3.0, \"ratio\": 3.5}");
	EXPECT_OK("{\"count\": \"7\"}");
	ck_assert_double_eq(res_num("count"), 7);
	EXPECT_FAIL("{\"count\": 3.5}", VALIDATE_E_SCHEMA, "type", "count");
	ck_assert_str_eq(res.detail, "count: expected integer, got number");
	EXPECT_FAIL("{\"count\": \"3.5\"}", VALIDATE_E_SCHEMA, "type", "count");
	EXPECT_FAIL("{\"count\": 11}", VALIDATE_E_SCHEMA, "maximum", "count");
	EXPECT_FAIL("{\"count\": 0}", VALIDATE_E_SCHEMA, "minimum", "count");
	EXPECT_OK("{\"count\": 10}");
	EXPECT_OK("{\"count\": 1}");
}
END_TEST

START_TEST(test_length_utf8)
{
	/* "退款申请" is 4 characters and 12 bytes: minLength 4 holds. */
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"退款申请\"}");
	ck_assert_str_eq(res_str("summary"), "退款申请");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"退款\"}",
		    VALIDATE_E_SCHEMA, "minLength", "summary");
	ck_assert_str_eq(res.detail, "summary: 2 characters < minLength 4");
	/* \u escapes count as the characters they decode to. */
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": "
		  "\"\\u9000\\u6b3e\\u7533\\u8bf7\"}");
	ck_assert_str_eq(res_str("summary"), "退款申请");
}
END_TEST

START_TEST(test_max_length_utf8)
{
	char text[2048], body[1024];
	size_t i;

	/* 100 CJK characters (300 bytes) fit maxLength 100, 101 do not. */
	body[0] = '\0';
	for (i = 0; i < 100; i++)
		strcat(body, "款");
	snprintf(text, sizeof text, "{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"%s\"}",
		 body);
	EXPECT_OK(text);
	strcat(body, "款");
	snprintf(text, sizeof text, "{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"%s\"}",
		 body);
	EXPECT_FAIL(text, VALIDATE_E_SCHEMA, "maxLength", "summary");
	ck_assert_str_eq(res.detail, "summary: 101 characters > maxLength 100");
}
END_TEST

START_TEST(test_pattern)
{
	oc_schema("{\"type\": \"object\", \"properties\": {\"zip\": {\"type\": \"string\", "
		  "\"pattern\": \"[0-9]{6}\"}, \"code\": {\"type\": \"string\", \"pattern\": "
		  "\"^[A-Z]{2}$\"}}}");
	EXPECT_OK("{\"zip\": \"zip 100000 Beijing\", \"code\": \"BJ\"}");
	EXPECT_FAIL("{\"zip\": \"10000\"}", VALIDATE_E_SCHEMA, "pattern", "zip");
	ck_assert_str_eq(res.detail, "zip: \"10000\" does not match pattern \"[0-9]{6}\"");
	EXPECT_FAIL("{\"zip\": \"100000\", \"code\": \"BJX\"}", VALIDATE_E_SCHEMA, "pattern", "code");
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
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(res_get("address"), "zip")->valuedouble,
			    100000);
	EXPECT_FAIL("{\"address\": {}}", VALIDATE_E_SCHEMA, "required", "address.city");
	EXPECT_FAIL("{\"address\": {\"city\": \"x\"}}", VALIDATE_E_SCHEMA, "minLength",
		    "address.city");
	ck_assert_str_eq(res.detail, "address.city: 1 characters < minLength 2");
	EXPECT_FAIL("{\"address\": \"Beijing\"}", VALIDATE_E_SCHEMA, "type", "address");
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
	EXPECT_FAIL("{\"scores\": [0.1, 0.2, 2]}", VALIDATE_E_SCHEMA, "maximum", "scores[2]");
	EXPECT_FAIL("{\"tags\": \"a\"}", VALIDATE_E_SCHEMA, "type", "tags");
	EXPECT_OK("{\"tags\": []}");
}
END_TEST

START_TEST(test_additional_properties)
{
	oc_schema("{\"type\": \"object\", \"additionalProperties\": false, \"description\": \"d\", "
		  "\"title\": \"t\", \"properties\": {\"intent\": {\"type\": \"string\", "
		  "\"description\": \"the intent\"}, \"confidence\": {\"type\": \"number\"}}}");
	EXPECT_OK("{\"INTENT\": \"refund\", \"confidence\": 0.9}");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9, \"extra\": 1}", VALIDATE_E_SCHEMA,
		    "additionalProperties", "extra");
	ck_assert_str_eq(res.detail, "extra: unknown field not allowed");
}
END_TEST

/* ---- semantic ------------------------------------------------------------ */

START_TEST(test_deny)
{
	EXPECT_FAIL("{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \"客户地址未知\"}",
		    VALIDATE_E_SEMANTIC, "deny", "summary");
	ck_assert_str_eq(res.detail,
			 "summary: \"客户地址未知\" matches deny pattern \"未知|无法解析|unknown\"");
	EXPECT_FAIL("{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \"reason unknown\"}",
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
	EXPECT_FAIL("{\"intent\": \"complaint\", \"confidence\": 0.9, \"summary\": \"感谢客服的帮助\"}",
		    VALIDATE_E_SEMANTIC, "rules[0]", "summary");
	ck_assert_ptr_nonnull(strstr(res.detail, "when intent = \"complaint\""));
	EXPECT_OK("{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \"感谢客服的帮助\"}");
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
	ck_assert_int_eq(buf_puts(&b, "{\"intent\": \"consult\", \"confidence\": 0.9, \"summary\": \""),
			 0);
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

	v = cJSON_Parse("{\"intent\": \"complaint\", \"confidence\": 0.9, \"summary\": \"表扬一下\"}");
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

/* ---- schema compilation ---------------------------------------------------- */

static void
expect_compile_error(const char *schema, const char *cause_want)
{
	struct vschema *vs = NULL;
	char *cause = NULL;
	cJSON *j = cJSON_Parse(schema);

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(validate_compile(j, &vs, &cause), VALIDATE_E_SCHEMA);
	ck_assert_ptr_null(vs);
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strncmp(cause, cause_want, strlen(cause_want)) == 0, "cause \"%s\", want \"%s\"",
		      cause, cause_want);
	free(cause);
	cJSON_Delete(j);
}

START_TEST(test_compile_errors)
{
	expect_compile_error("{\"type\": \"object\", \"properties\": {\"intent\": {\"type\": "
			     "\"string\", \"enun\": [\"a\"]}}}",
			     "properties.intent.enun: unknown schema keyword");
	expect_compile_error("{\"type\": \"strin\"}", "type: unknown type \"strin\"");
	expect_compile_error("{\"type\": [\"string\", 1]}", "type[1]: must be a string");
	expect_compile_error("{\"properties\": {\"summary\": {\"pattern\": \"([\"}}}",
			     "properties.summary.pattern: invalid regex \"([\": ");
	expect_compile_error("{\"required\": [\"a\", 1]}", "required[1]: must be a string");
	expect_compile_error("{\"required\": \"a\"}", "required: must be an array of strings");
	expect_compile_error("{\"minimum\": 2, \"maximum\": 1}",
			     "minimum: greater than maximum (2 > 1)");
	expect_compile_error("{\"minLength\": -1}", "minLength: must be a non-negative integer");
	expect_compile_error("{\"maxLength\": 1.5}", "maxLength: must be a non-negative integer");
	expect_compile_error("{\"minLength\": 3, \"maxLength\": 2}", "minLength: greater than maxLength");
	expect_compile_error("{\"minimum\": \"0\"}", "minimum: must be a number");
	expect_compile_error("{\"items\": {\"typo\": 1}}", "items.typo: unknown schema keyword");
	expect_compile_error("{\"items\": [{\"type\": \"string\"}]}", "items: must be an object");
	expect_compile_error("{\"additionalProperties\": {}}",
			     "additionalProperties: must be a boolean");
	expect_compile_error("{\"enum\": []}", "enum: must be a non-empty array");
	expect_compile_error("{\"properties\": {\"a\": \"string\"}}", "properties.a: must be an object");
	expect_compile_error("{\"type\": \"string\", \"type\": \"number\"}", "type: duplicate keyword");
	expect_compile_error("\"object\"", "must be an object");
}
END_TEST

START_TEST(test_compile_ok)
{
	struct vschema *vs = NULL;
	char *cause = NULL;
	cJSON *j;

	j = cJSON_Parse("{\"$schema\": \"x\", \"title\": \"t\", \"description\": \"d\", \"type\": "
			"[\"object\"], \"additionalProperties\": true, \"properties\": {}, "
			"\"required\": []}");
	ck_assert_int_eq(validate_compile(j, &vs, &cause), 0);
	ck_assert_ptr_nonnull(vs);
	ck_assert_ptr_null(cause);
	vschema_free(vs);
	vschema_free(NULL);
	cJSON_Delete(j);
}
END_TEST

/* ---- the rest ------------------------------------------------------------ */

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
	ck_assert_int_eq(validate_extract_object(t, strlen(t), &s, &e), VALIDATE_E_FORMAT);
	/* Not NUL-terminated: only len bytes are read. */
	ck_assert_int_eq(validate_extract_object("{\"a\":1}}garbage", 7, &s, &e), 0);
	ck_assert_uint_eq(e, 7);
	ck_assert_int_eq(validate_extract_object("{\"a\":1}", 6, &s, &e), VALIDATE_E_FORMAT);
}
END_TEST

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
		{"key_case", test_key_case},
		{"coerce", test_coerce},
		{"clamp", test_clamp},
		{"huge_numbers", test_huge_numbers},
		{"enum", test_enum},
		{"required", test_required},
		{"types", test_types},
		{"integer", test_integer},
		{"length_utf8", test_length_utf8},
		{"max_length_utf8", test_max_length_utf8},
		{"pattern", test_pattern},
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
		{"compile_errors", test_compile_errors},
		{"compile_ok", test_compile_ok},
		{"extract_offsets", test_extract_offsets},
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
