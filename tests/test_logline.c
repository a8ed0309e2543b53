/*
 * test_logline: log entries as lines — control characters, C1 controls and
 * bytes that are not UTF-8 escaped as \xNN (a CR/LF/ESC in a caller's
 * string cannot forge a line or reach the terminal), valid UTF-8 kept, the
 * text and JSON shapes, and the syslog priority prefix.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "logline.h"

#define T0 1764504000123LL /* 2025-11-30T12:00:00.123Z */

static char *
escaped(const char *s)
{
	static char out[1024];
	struct buf b;

	buf_init(&b, 4096);
	logline_escape(&b, s);
	snprintf(out, sizeof out, "%s", b.data ? b.data : "");
	buf_free(&b);
	return out;
}

static char *
rendered(enum log_format f, int prefix, enum log_level lv, const struct logline_ctx *ctx,
	 const char *msg)
{
	static char out[2048];
	struct buf b;

	buf_init(&b, 1 << 16);
	logline_render(&b, f, prefix, T0, lv, "call", ctx, msg);
	snprintf(out, sizeof out, "%s", b.data);
	buf_free(&b);
	return out;
}

START_TEST(controls_escaped)
{
	ck_assert_str_eq(escaped("plain text, 100% fine"), "plain text, 100% fine");
	ck_assert_str_eq(escaped("http://x/\r\n2026-01-01T00:00:00.000Z error main: forged"),
			 "http://x/\\x0d\\x0a2026-01-01T00:00:00.000Z error main: forged");
	ck_assert_str_eq(escaped("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
	ck_assert_str_eq(escaped("tab\there\x7f"), "tab\\x09here\\x7f");
	ck_assert_str_eq(escaped(""), "");
}
END_TEST

START_TEST(utf8_kept_c1_and_invalid_escaped)
{
	ck_assert_str_eq(escaped("我要退款 café"), "我要退款 café");
	ck_assert_str_eq(escaped("emoji \xf0\x9f\x98\x80"), "emoji \xf0\x9f\x98\x80");
	/* U+009B (CSI as a C1 control), a lone 0x9b, a truncated sequence,
	 * an overlong '/', a surrogate, and a code point past U+10FFFF. */
	ck_assert_str_eq(escaped("a\xc2\x9b"
				 "b"),
			 "a\\xc2\\x9bb");
	ck_assert_str_eq(escaped("a\x9b[2J"), "a\\x9b[2J");
	ck_assert_str_eq(escaped("cut \xe6\x88"), "cut \\xe6\\x88");
	ck_assert_str_eq(escaped("\xc0\xaf"), "\\xc0\\xaf");
	ck_assert_str_eq(escaped("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	ck_assert_str_eq(escaped("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
}
END_TEST

START_TEST(text_line)
{
	struct logline_ctx ctx = {.request_id = "r-1\n", .route = "intent", .backend = NULL};

	ck_assert_str_eq(rendered(LOG_FORMAT_TEXT, 0, LOG_LEVEL_INFO, NULL, "started"),
			 "2025-11-30T12:00:00.123Z info call: started\n");
	ck_assert_str_eq(rendered(LOG_FORMAT_TEXT, 0, LOG_LEVEL_WARN, &ctx, "callback \x1b]0;x"),
			 "2025-11-30T12:00:00.123Z warn call: callback \\x1b]0;x route=intent "
			 "request_id=r-1\\x0a\n");
	/* Several errors joined stay one line. */
	ck_assert_str_eq(rendered(LOG_FORMAT_TEXT, 0, LOG_LEVEL_ERROR, NULL, "refused:\na\nb"),
			 "2025-11-30T12:00:00.123Z error call: refused:\\x0aa\\x0ab\n");
}
END_TEST

START_TEST(json_line)
{
	struct logline_ctx ctx = {.request_id = "r\"1", .route = "intent", .backend = "b\\1"};

	ck_assert_str_eq(rendered(LOG_FORMAT_JSON, 0, LOG_LEVEL_DEBUG, NULL, "x"),
			 "{\"time\":\"2025-11-30T12:00:00.123Z\",\"level\":\"debug\",\"module\":"
			 "\"call\",\"msg\":\"x\"}\n");
	ck_assert_str_eq(rendered(LOG_FORMAT_JSON, 0, LOG_LEVEL_ERROR, &ctx, "say \"hi\"\r\n我"),
			 "{\"time\":\"2025-11-30T12:00:00.123Z\",\"level\":\"error\",\"module\":"
			 "\"call\",\"msg\":\"say \\\"hi\\\"\\\\x0d\\\\x0a我\",\"request_id\":"
			 "\"r\\\"1\",\"route\":\"intent\",\"backend\":\"b\\\\1\"}\n");
}
END_TEST

START_TEST(journal_prefix)
{
	ck_assert_int_eq(logline_priority(LOG_LEVEL_DEBUG), 7);
	ck_assert_int_eq(logline_priority(LOG_LEVEL_INFO), 6);
	ck_assert_int_eq(logline_priority(LOG_LEVEL_WARN), 4);
	ck_assert_int_eq(logline_priority(LOG_LEVEL_ERROR), 3);
	ck_assert_str_eq(rendered(LOG_FORMAT_TEXT, 1, LOG_LEVEL_ERROR, NULL, "down"),
			 "<3>2025-11-30T12:00:00.123Z error call: down\n");
	ck_assert(strncmp(rendered(LOG_FORMAT_JSON, 1, LOG_LEVEL_WARN, NULL, "w"), "<4>{\"time\"",
			  10) == 0);
}
END_TEST

static Suite *
logline_suite(void)
{
	Suite *s = suite_create("logline");
	TCase *tc = tcase_create("render");

	tcase_add_test(tc, controls_escaped);
	tcase_add_test(tc, utf8_kept_c1_and_invalid_escaped);
	tcase_add_test(tc, text_line);
	tcase_add_test(tc, json_line);
	tcase_add_test(tc, journal_prefix);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(logline_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
