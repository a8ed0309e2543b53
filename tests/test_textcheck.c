/*
 * test_textcheck: UTF-8 validity (overlongs, surrogates, truncation, the
 * raw C1 byte 0x9b), the JSON walk naming the bad field, control
 * characters in identifiers, and secret redaction, on literals.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "textcheck.h"

START_TEST(utf8_valid_and_invalid)
{
	ck_assert(textcheck_utf8("plain", 5));
	ck_assert(textcheck_utf8("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", 14));
	ck_assert(!textcheck_utf8("\x9b", 1));
	ck_assert(!textcheck_utf8("a\xc3", 2));		   /* truncated */
	ck_assert(!textcheck_utf8("\xc0\xaf", 2));	   /* overlong '/' */
	ck_assert(!textcheck_utf8("\xe0\x80\xaf", 3));	   /* overlong */
	ck_assert(!textcheck_utf8("\xed\xa0\x80", 3));	   /* surrogate U+D800 */
	ck_assert(!textcheck_utf8("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
	ck_assert(!textcheck_utf8("\xff", 1));
}
END_TEST

START_TEST(json_walk_names_the_field)
{
	char path[128];
	cJSON *o = cJSON_Parse("{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
			       "\"content\":\"ok\"},{\"role\":\"user\",\"content\":\"x\"}]}");

	ck_assert_int_eq(textcheck_json_utf8(o, path, sizeof path), 0);
	cJSON_SetValuestring(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "messages"), 1),
				    "content"),
		"bad \xff");
	ck_assert_int_eq(textcheck_json_utf8(o, path, sizeof path), 1);
	ck_assert_str_eq(path, "messages[1].content");
	cJSON_Delete(o);
	o = cJSON_CreateString("\x9b");
	ck_assert_int_eq(textcheck_json_utf8(o, path, sizeof path), 1);
	ck_assert_str_eq(path, "body");
	cJSON_Delete(o);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "metadata"), "k\xc3", "v");
	ck_assert_int_eq(textcheck_json_utf8(o, path, sizeof path), 1);
	ck_assert_str_eq(path, "metadata.(key)");
	cJSON_Delete(o);
}
END_TEST

START_TEST(controls_in_identifiers)
{
	ck_assert(!textcheck_has_control("req-1_\xc3\xa9"));
	ck_assert(textcheck_has_control("a\x1b[2J"));
	ck_assert(textcheck_has_control("a\x7f"));
	ck_assert(textcheck_has_control("a\x9b"
					"31m")); /* the raw C1 CSI byte */
	ck_assert(textcheck_has_control("a\xc2\x9b"
					"31m"));	/* U+009B */
	ck_assert(!textcheck_has_control("a\xc2\xa0")); /* U+00A0 is no control */
}
END_TEST

START_TEST(redact_keys_and_bearer)
{
	const char *keys[] = {"sk-live-1234567890", NULL, "abc"};
	char *s;

	s = textcheck_redact("{\"error\":\"bad key sk-live-1234567890 (sk-live-1234567890)\"}",
			     keys, 3);
	ck_assert_str_eq(s, "{\"error\":\"bad key [redacted] ([redacted])\"}");
	free(s);
	s = textcheck_redact("got Authorization: Bearer tok.EN-9/+= rest; bearer x", NULL, 0);
	ck_assert_str_eq(s, "got Authorization: Bearer [redacted] rest; bearer [redacted]");
	free(s);
	/* keys under 4 bytes are not redacted (they would eat ordinary text) */
	s = textcheck_redact("abc Bearer", keys, 3);
	ck_assert_str_eq(s, "abc Bearer");
	free(s);
	s = textcheck_redact("", keys, 3);
	ck_assert_str_eq(s, "");
	free(s);
	ck_assert_ptr_null(textcheck_redact(NULL, keys, 3));
	/* keys and tokens at both ends and side by side; text between kept whole */
	s = textcheck_redact("sk-live-1234567890Bearer abc sk-live-1234567890", keys, 3);
	ck_assert_str_eq(s, "[redacted]Bearer [redacted] [redacted]");
	free(s);
	s = textcheck_redact("BEARER t1 mid bearer: no", keys, 3);
	ck_assert_str_eq(s, "BEARER [redacted] mid bearer: no");
	free(s);
	/* nothing to redact, with and without keys: the text as it was */
	s = textcheck_redact("plain \u00e9 text, no tokens", keys, 3);
	ck_assert_str_eq(s, "plain \u00e9 text, no tokens");
	free(s);
	s = textcheck_redact("plain text", NULL, 0);
	ck_assert_str_eq(s, "plain text");
	free(s);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("textcheck");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, utf8_valid_and_invalid);
	tcase_add_test(tc, json_walk_names_the_field);
	tcase_add_test(tc, controls_in_identifiers);
	tcase_add_test(tc, redact_keys_and_bearer);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
