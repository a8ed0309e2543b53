/*
 * test_schema: the JSON-schema subset with literal schemas and values.
 * Compile errors assert the exact cause; checks assert the exact rule,
 * field path and detail. Values are checked as parsed (normalisation is
 * validate's, see test_validate).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "util.h"

#define CLASSIFY_SCHEMA                                                                            \
	"{\"type\": \"object\", \"required\": [\"intent\", \"confidence\"],"                       \
	" \"properties\": {"                                                                       \
	"  \"intent\": {\"type\": \"string\", \"enum\": [\"refund\", \"complaint\", \"consult\", " \
	"\"other\"]},"                                                                             \
	"  \"confidence\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1},"                \
	"  \"summary\": {\"type\": \"string\", \"minLength\": 4, \"maxLength\": 100}}}"

static cJSON *schema_json;
static struct vschema *vs;
static cJSON *val;
static struct schema_result res;

static void
vs_schema(const char *json)
{
	char *cause = NULL;

	vschema_free(vs);
	vs = NULL;
	cJSON_Delete(schema_json);
	schema_json = cJSON_Parse(json);
	ck_assert_ptr_nonnull(schema_json);
	ck_assert_int_eq(validate_compile(schema_json, &vs, &cause), 0);
	ck_assert_ptr_null(cause);
	ck_assert_ptr_nonnull(vs);
}

static void
setup(void)
{
	memset(&res, 0, sizeof res);
	vs_schema(CLASSIFY_SCHEMA);
}

static void
teardown(void)
{
	cJSON_Delete(val);
	val = NULL;
	vschema_free(vs);
	vs = NULL;
	cJSON_Delete(schema_json);
	schema_json = NULL;
}

/* Parse json into val (kept until the next check) and check it against vs. */
static int
check(const char *json)
{
	cJSON_Delete(val);
	val = cJSON_Parse(json);
	ck_assert_msg(val != NULL, "test value does not parse: %s", json);
	return schema_check(val, vs, &res);
}

static const char *
val_str(const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(val, key);

	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

#define EXPECT_FAIL(json, rule_, field_)                                                           \
	do {                                                                                       \
		int r_ = check(json);                                                              \
		ck_assert_int_eq(r_, SCHEMA_E_MISMATCH);                                           \
		ck_assert_str_eq(res.rule, (rule_));                                               \
		ck_assert_str_eq(res.field, (field_));                                             \
		ck_assert_uint_gt(strlen(res.detail), 0);                                          \
	} while (0)

#define EXPECT_OK(json)                                                                            \
	do {                                                                                       \
		int r_ = check(json);                                                              \
		ck_assert_msg(r_ == 0, "rc %d rule %s field %s: %s", r_, res.rule, res.field,      \
			      res.detail);                                                         \
	} while (0)

/* ---- checks ---------------------------------------------------------------- */

START_TEST(test_enum)
{
	EXPECT_FAIL("{\"intent\": \"banana\", \"confidence\": 0.9}", "enum", "intent");
	ck_assert_str_eq(res.detail, "intent: \"banana\" not in enum");
	EXPECT_FAIL("{\"intent\": \"Refund\", \"confidence\": 0.9}", "enum", "intent");
	/* Scalars compared by value. */
	vs_schema("{\"type\": \"object\", \"properties\": {\"n\": {\"enum\": [1, 2.5, true, null, "
		  "\"x\"]}}}");
	EXPECT_OK("{\"n\": 1.0}");
	EXPECT_OK("{\"n\": 2.5}");
	EXPECT_OK("{\"n\": true}");
	EXPECT_OK("{\"n\": null}");
	EXPECT_FAIL("{\"n\": false}", "enum", "n");
	EXPECT_FAIL("{\"n\": 3}", "enum", "n");
	ck_assert_str_eq(res.detail, "n: 3 not in enum");
}
END_TEST

START_TEST(test_required)
{
	EXPECT_FAIL("{\"intent\": \"refund\"}", "required", "confidence");
	ck_assert_str_eq(res.detail, "confidence: required field missing");
	EXPECT_FAIL("{}", "required", "intent");
}
END_TEST

START_TEST(test_types)
{
	EXPECT_FAIL("{\"intent\": 5, \"confidence\": 0.9}", "type", "intent");
	ck_assert_str_eq(res.detail, "intent: expected string, got number");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": true}", "type", "confidence");
	vs_schema("{\"type\": \"object\", \"properties\": {\"ok\": {\"type\": \"boolean\"}, "
		  "\"v\": {\"type\": [\"string\", \"null\"]}}}");
	EXPECT_OK("{\"ok\": false, \"v\": null}");
	EXPECT_OK("{\"ok\": true, \"v\": \"s\"}");
	EXPECT_FAIL("{\"ok\": \"true\"}", "type", "ok");
	EXPECT_FAIL("{\"v\": 1}", "type", "v");
	ck_assert_str_eq(res.detail, "v: expected string or null, got number");
}
END_TEST

START_TEST(test_root)
{
	EXPECT_FAIL("[1]", "type", "");
	ck_assert_str_eq(res.detail, "(root): expected object, got array");
	ck_assert_int_eq(schema_check(val, NULL, &res), 0);
}
END_TEST

START_TEST(test_integer)
{
	vs_schema("{\"type\": \"object\", \"properties\": {\"count\": {\"type\": \"integer\", "
		  "\"minimum\": 1, \"maximum\": 10}, \"ratio\": {\"type\": \"number\"}}}");
	EXPECT_OK("{\"count\": 3, \"ratio\": 3}");
	EXPECT_OK("{\"count\": 3.0, \"ratio\": 3.5}");
	EXPECT_FAIL("{\"count\": 3.5}", "type", "count");
	ck_assert_str_eq(res.detail, "count: expected integer, got number");
	EXPECT_FAIL("{\"count\": 11}", "maximum", "count");
	EXPECT_FAIL("{\"count\": 0}", "minimum", "count");
	EXPECT_OK("{\"count\": 10}");
	EXPECT_OK("{\"count\": 1}");
}
END_TEST

START_TEST(test_length_utf8)
{
	/* "退款申请" is 4 characters and 12 bytes: minLength 4 holds. */
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"退款申请\"}");
	ck_assert_str_eq(val_str("summary"), "退款申请");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"退款\"}",
		    "minLength", "summary");
	ck_assert_str_eq(res.detail, "summary: 2 characters < minLength 4");
	/* \u escapes count as the characters they decode to. */
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": "
		  "\"\\u9000\\u6b3e\\u7533\\u8bf7\"}");
	ck_assert_str_eq(val_str("summary"), "退款申请");
}
END_TEST

START_TEST(test_max_length_utf8)
{
	char text[2048], body[1024];
	size_t i;

	/* 100 CJK characters (300 bytes) fit maxLength 100, 101 do not. */
	body[0] = '\0';
	for (i = 0; i < 100; i++)
		memcpy(body + i * 3, "款", 4); /* 3 bytes and the NUL */
	snprintf(text, sizeof text,
		 "{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"%s\"}", body);
	EXPECT_OK(text);
	memcpy(body + 300, "款", 4);
	snprintf(text, sizeof text,
		 "{\"intent\": \"refund\", \"confidence\": 0.9, \"summary\": \"%s\"}", body);
	EXPECT_FAIL(text, "maxLength", "summary");
	ck_assert_str_eq(res.detail, "summary: 101 characters > maxLength 100");
}
END_TEST

START_TEST(test_pattern)
{
	vs_schema("{\"type\": \"object\", \"properties\": {\"zip\": {\"type\": \"string\", "
		  "\"pattern\": \"[0-9]{6}\"}, \"code\": {\"type\": \"string\", \"pattern\": "
		  "\"^[A-Z]{2}$\"}}}");
	EXPECT_OK("{\"zip\": \"zip 100000 Beijing\", \"code\": \"BJ\"}");
	EXPECT_FAIL("{\"zip\": \"10000\"}", "pattern", "zip");
	ck_assert_str_eq(res.detail, "zip: \"10000\" does not match pattern \"[0-9]{6}\"");
	EXPECT_FAIL("{\"zip\": \"100000\", \"code\": \"BJX\"}", "pattern", "code");
}
END_TEST

START_TEST(test_nested)
{
	vs_schema("{\"type\": \"object\", \"required\": [\"address\"], \"properties\": {"
		  "\"address\": {\"type\": \"object\", \"required\": [\"city\"], \"properties\": {"
		  "\"city\": {\"type\": \"string\", \"minLength\": 2}, "
		  "\"zip\": {\"type\": \"integer\"}}}}}");
	EXPECT_OK("{\"address\": {\"city\": \"北京\", \"zip\": 100000}}");
	EXPECT_FAIL("{\"address\": {}}", "required", "address.city");
	EXPECT_FAIL("{\"address\": {\"city\": \"x\"}}", "minLength", "address.city");
	ck_assert_str_eq(res.detail, "address.city: 1 characters < minLength 2");
	EXPECT_FAIL("{\"address\": \"Beijing\"}", "type", "address");
}
END_TEST

START_TEST(test_items)
{
	vs_schema("{\"type\": \"object\", \"properties\": {\"tags\": {\"type\": \"array\", "
		  "\"items\": {\"type\": \"string\", \"enum\": [\"a\", \"b\"]}}, "
		  "\"scores\": {\"type\": \"array\", \"items\": {\"type\": \"number\", "
		  "\"maximum\": 1}}}}");
	EXPECT_OK("{\"tags\": [\"a\", \"b\", \"a\"], \"scores\": [0.5, 1]}");
	EXPECT_FAIL("{\"tags\": [\"a\", \"zzz\"]}", "enum", "tags[1]");
	EXPECT_FAIL("{\"scores\": [0.1, 0.2, 2]}", "maximum", "scores[2]");
	EXPECT_FAIL("{\"tags\": \"a\"}", "type", "tags");
	EXPECT_OK("{\"tags\": []}");
}
END_TEST

START_TEST(test_additional_properties)
{
	vs_schema("{\"type\": \"object\", \"additionalProperties\": false, \"description\": \"d\", "
		  "\"title\": \"t\", \"properties\": {\"intent\": {\"type\": \"string\", "
		  "\"description\": \"the intent\"}, \"confidence\": {\"type\": \"number\"}}}");
	EXPECT_OK("{\"intent\": \"refund\", \"confidence\": 0.9}");
	EXPECT_FAIL("{\"intent\": \"refund\", \"confidence\": 0.9, \"extra\": 1}",
		    "additionalProperties", "extra");
	ck_assert_str_eq(res.detail, "extra: unknown field not allowed");
}
END_TEST

/* ---- what normalisation reads ---------------------------------------------- */

START_TEST(test_lookups)
{
	const struct vprop *vp;
	const struct vschema *items;

	ck_assert(schema_has_props(vs));
	ck_assert(!schema_wants_number(vs));
	ck_assert_ptr_null(schema_items(vs));
	vp = schema_prop_find(vs, "confidence", false);
	ck_assert_ptr_nonnull(vp);
	ck_assert_str_eq(vp->name, "confidence");
	ck_assert(schema_wants_number(vp->schema));
	ck_assert(!schema_has_props(vp->schema));
	ck_assert_ptr_null(schema_prop_find(vs, "Confidence", false));
	vp = schema_prop_find(vs, "CONFIDENCE", true);
	ck_assert_ptr_nonnull(vp);
	ck_assert_str_eq(vp->name, "confidence");
	ck_assert(!schema_wants_number(schema_prop_find(vs, "intent", false)->schema));
	ck_assert_ptr_null(schema_prop_find(vs, "extra", true));

	vs_schema("{\"type\": \"array\", \"items\": {\"type\": [\"integer\", \"null\"]}}");
	ck_assert(!schema_has_props(vs));
	items = schema_items(vs);
	ck_assert_ptr_nonnull(items);
	ck_assert(schema_wants_number(items));
	vs_schema("{\"type\": [\"number\", \"string\"]}");
	ck_assert(!schema_wants_number(vs));
}
END_TEST

/* ---- detail text ------------------------------------------------------------ */

START_TEST(test_detail_text)
{
	char buf[SCHEMA_EXCERPT_BYTES + 16], small[8];
	cJSON *v;

	v = cJSON_Parse("[{}, [], \"s\", 2.5, true, false, null]");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(schema_type_name(cJSON_GetArrayItem(v, 0)), "object");
	ck_assert_str_eq(schema_type_name(v), "array");
	ck_assert_str_eq(schema_type_name(cJSON_GetArrayItem(v, 2)), "string");
	ck_assert_str_eq(schema_type_name(cJSON_GetArrayItem(v, 3)), "number");
	ck_assert_str_eq(schema_type_name(cJSON_GetArrayItem(v, 4)), "boolean");
	ck_assert_str_eq(schema_type_name(cJSON_GetArrayItem(v, 6)), "null");
	ck_assert_str_eq(schema_type_name(NULL), "invalid");
	schema_excerpt(cJSON_GetArrayItem(v, 2), buf, sizeof buf);
	ck_assert_str_eq(buf, "\"s\"");
	schema_excerpt(cJSON_GetArrayItem(v, 3), buf, sizeof buf);
	ck_assert_str_eq(buf, "2.5");
	schema_excerpt(cJSON_GetArrayItem(v, 5), buf, sizeof buf);
	ck_assert_str_eq(buf, "false");
	schema_excerpt(cJSON_GetArrayItem(v, 1), buf, sizeof buf);
	ck_assert_str_eq(buf, "array");
	cJSON_Delete(v);

	/* 20 three-byte characters: the excerpt cuts at 48 bytes, on a character boundary. */
	schema_excerpt_str("款款款款款款款款款款款款款款款款款款款款", buf, sizeof buf);
	ck_assert_str_eq(buf, "\"款款款款款款款款款款款款款款款款...\"");
	schema_excerpt_str("short", buf, sizeof buf);
	ck_assert_str_eq(buf, "\"short\"");
	schema_str_copy(small, sizeof small, "ab款款");
	ck_assert_str_eq(small, "ab款");
	schema_str_copy(small, sizeof small, "abc");
	ck_assert_str_eq(small, "abc");
}
END_TEST

/* ---- compilation ------------------------------------------------------------ */

static void
expect_compile_error(const char *schema, const char *cause_want)
{
	struct vschema *cvs = NULL;
	char *cause = NULL;
	cJSON *j = cJSON_Parse(schema);

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(validate_compile(j, &cvs, &cause), SCHEMA_E_COMPILE);
	ck_assert_ptr_null(cvs);
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strncmp(cause, cause_want, strlen(cause_want)) == 0,
		      "cause \"%s\", want \"%s\"", cause, cause_want);
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
	expect_compile_error("{\"minLength\": 3, \"maxLength\": 2}",
			     "minLength: greater than maxLength");
	expect_compile_error("{\"minimum\": \"0\"}", "minimum: must be a number");
	expect_compile_error("{\"items\": {\"typo\": 1}}", "items.typo: unknown schema keyword");
	expect_compile_error("{\"items\": [{\"type\": \"string\"}]}", "items: must be an object");
	expect_compile_error("{\"additionalProperties\": {}}",
			     "additionalProperties: must be a boolean");
	expect_compile_error("{\"enum\": []}", "enum: must be a non-empty array");
	expect_compile_error("{\"properties\": {\"a\": \"string\"}}",
			     "properties.a: must be an object");
	expect_compile_error("{\"type\": \"string\", \"type\": \"number\"}",
			     "type: duplicate keyword");
	expect_compile_error("\"object\"", "must be an object");
}
END_TEST

START_TEST(test_compile_ok)
{
	struct vschema *cvs = NULL;
	char *cause = NULL;
	cJSON *j;

	j = cJSON_Parse("{\"$schema\": \"x\", \"title\": \"t\", \"description\": \"d\", \"type\": "
			"[\"object\"], \"additionalProperties\": true, \"properties\": {}, "
			"\"required\": []}");
	ck_assert_int_eq(validate_compile(j, &cvs, &cause), 0);
	ck_assert_ptr_nonnull(cvs);
	ck_assert_ptr_null(cause);
	vschema_free(cvs);
	vschema_free(NULL);
	cJSON_Delete(j);
}
END_TEST

static Suite *
schema_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"enum", test_enum},
		{"required", test_required},
		{"types", test_types},
		{"root", test_root},
		{"integer", test_integer},
		{"length_utf8", test_length_utf8},
		{"max_length_utf8", test_max_length_utf8},
		{"pattern", test_pattern},
		{"nested", test_nested},
		{"items", test_items},
		{"additional_properties", test_additional_properties},
		{"lookups", test_lookups},
		{"detail_text", test_detail_text},
		{"compile_errors", test_compile_errors},
		{"compile_ok", test_compile_ok},
	};
	Suite *s = suite_create("schema");
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
	SRunner *sr = srunner_create(schema_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
