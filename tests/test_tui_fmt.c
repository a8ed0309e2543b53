/*
 * test_tui_fmt: the console's pure text helpers (tui/fmt.c) — display
 * width of UTF-8 (CJK takes two columns), fitting and wrapping, durations,
 * percentages, sparklines and bars (UTF-8 and the ASCII fallback), and
 * duration / RFC3339 parsing.
 */
#include <check.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "table.h"

static void
utf8_mode(void)
{
	ck_assert_ptr_nonnull(setlocale(LC_ALL, "C.UTF-8"));
	fmt_set_ascii(0);
}

START_TEST(test_width)
{
	utf8_mode();
	ck_assert_int_eq(fmt_width(""), 0);
	ck_assert_int_eq(fmt_width("intent"), 6);
	ck_assert_int_eq(fmt_width("我要退款"), 8);
	ck_assert_int_eq(fmt_width("a退b"), 4);
	ck_assert_int_eq(fmt_width("caf\xc3\xa9"), 4);
	/* controls and invalid bytes are one '?' column each */
	ck_assert_int_eq(fmt_width("a\nb"), 3);
	ck_assert_int_eq(fmt_width("\xff\xfe"), 2);
	fmt_set_ascii(1);
	ck_assert_int_eq(fmt_width("我要"), 2);
	fmt_set_ascii(0);
}
END_TEST

START_TEST(test_fit)
{
	char out[64];

	utf8_mode();
	ck_assert_int_eq(fmt_fit(out, sizeof out, "intent", 10, 0), 6);
	ck_assert_str_eq(out, "intent");
	ck_assert_int_eq(fmt_fit(out, sizeof out, "intent", 10, FMT_PAD), 10);
	ck_assert_str_eq(out, "intent    ");
	ck_assert_int_eq(fmt_fit(out, sizeof out, "42", 5, FMT_RIGHT), 5);
	ck_assert_str_eq(out, "   42");
	/* cut with an ellipsis */
	ck_assert_int_eq(fmt_fit(out, sizeof out, "primary-v2", 6, 0), 6);
	ck_assert_str_eq(out, "prima\xe2\x80\xa6");
	/* CJK: never split a character, never exceed the columns */
	ck_assert_int_eq(fmt_fit(out, sizeof out, "我要退款", 5, 0), 5);
	ck_assert_str_eq(out, "我要\xe2\x80\xa6");
	ck_assert_int_eq(fmt_fit(out, sizeof out, "我要退款", 6, FMT_PAD), 6);
	ck_assert_str_eq(out, "我要\xe2\x80\xa6 ");
	ck_assert_int_eq(fmt_fit(out, sizeof out, "我要退款", 8, 0), 8);
	ck_assert_str_eq(out, "我要退款");
	ck_assert_int_eq(fmt_width(out), 8);
	/* controls never reach the terminal */
	fmt_fit(out, sizeof out, "a\x1b[2Jb", 10, 0);
	ck_assert_str_eq(out, "a?[2Jb");
	/* tiny buffers stay terminated */
	fmt_fit(out, 4, "abcdefgh", 8, 0);
	ck_assert_uint_le(strlen(out), 3);
	ck_assert_int_eq(fmt_fit(out, sizeof out, "x", 0, FMT_PAD), 0);
	ck_assert_str_eq(out, "");
	/* ASCII fallback */
	fmt_set_ascii(1);
	fmt_fit(out, sizeof out, "我要退款", 3, 0);
	ck_assert_str_eq(out, "??~");
	fmt_set_ascii(0);
}
END_TEST

START_TEST(test_wrap)
{
	const char *p = "the quick brown fox\njumps";
	char line[64];

	utf8_mode();
	ck_assert_int_eq(fmt_wrap(&p, 10, line, sizeof line), 1);
	ck_assert_str_eq(line, "the quick");
	ck_assert_int_eq(fmt_wrap(&p, 10, line, sizeof line), 1);
	ck_assert_str_eq(line, "brown fox");
	ck_assert_int_eq(fmt_wrap(&p, 10, line, sizeof line), 1);
	ck_assert_str_eq(line, "jumps");
	ck_assert_int_eq(fmt_wrap(&p, 10, line, sizeof line), 0);

	p = "我要退款订单";
	ck_assert_int_eq(fmt_wrap(&p, 5, line, sizeof line), 1);
	ck_assert_str_eq(line, "我要");
	ck_assert_int_eq(fmt_wrap(&p, 5, line, sizeof line), 1);
	ck_assert_str_eq(line, "退款");
	ck_assert_int_eq(fmt_wrap(&p, 5, line, sizeof line), 1);
	ck_assert_str_eq(line, "订单");
	ck_assert_int_eq(fmt_wrap(&p, 5, line, sizeof line), 0);
}
END_TEST

START_TEST(test_numbers)
{
	char b[32];

	fmt_duration(b, sizeof b, 850, 1);
	ck_assert_str_eq(b, "850ms");
	fmt_duration(b, sizeof b, 45000, 0);
	ck_assert_str_eq(b, "45s");
	fmt_duration(b, sizeof b, 185000, 0);
	ck_assert_str_eq(b, "3m05s");
	fmt_duration(b, sizeof b, 2 * 3600000 + 7 * 60000, 0);
	ck_assert_str_eq(b, "2h07m");
	fmt_duration(b, sizeof b, 3 * 86400000LL + 4 * 3600000, 0);
	ck_assert_str_eq(b, "3d04h");
	fmt_duration(b, sizeof b, -303000, 0);
	ck_assert_str_eq(b, "-5m03s");
	fmt_pct(b, sizeof b, 0.99951, 2);
	ck_assert_str_eq(b, "99.95%");
	fmt_pct(b, sizeof b, NAN, 2);
	ck_assert_str_eq(b, "-");
	fmt_latency(b, sizeof b, 1400);
	ck_assert_str_eq(b, "1400ms");
	fmt_latency(b, sizeof b, 12345);
	ck_assert_str_eq(b, "12.3s");
	fmt_latency(b, sizeof b, -1);
	ck_assert_str_eq(b, "-");
	fmt_rate(b, sizeof b, 4.25);
	ck_assert_str_eq(b, "4.2");
}
END_TEST

START_TEST(test_spark)
{
	float v[] = {0, 1, 2, 3, 4, 5, 6, 7}, gaps[] = {1, NAN, 1};
	char out[128];

	utf8_mode();
	fmt_spark(out, sizeof out, v, 8, 8, 0, 7);
	ck_assert_str_eq(out, "▁▂▃▄▅▆▇█");
	/* fewer samples than columns: right-aligned */
	fmt_spark(out, sizeof out, v, 2, 4, 0, 1);
	ck_assert_str_eq(out, "  ▁█");
	/* more samples than columns: bucket means 0.5 2.5 4.5 6.5 of 0..7 */
	fmt_spark(out, sizeof out, v, 8, 4, 0, 7);
	ck_assert_str_eq(out, "▂▄▆█");
	/* a missing sample is a gap */
	fmt_spark(out, sizeof out, gaps, 3, 3, 0, 1);
	ck_assert_str_eq(out, "█ █");
	/* auto scale; a flat series of zeros is the lowest glyph */
	fmt_spark(out, sizeof out, v, 8, 8, NAN, NAN);
	ck_assert_str_eq(out, "▁▂▃▄▅▆▇█");
	memset(v, 0, sizeof v);
	fmt_spark(out, sizeof out, v, 8, 3, 0, NAN);
	ck_assert_str_eq(out, "▁▁▁");
	/* ASCII fallback (locale not UTF-8) */
	fmt_set_ascii(1);
	{
		float r[] = {0, 1, 2, 3, 4, 5, 6, 7};

		fmt_spark(out, sizeof out, r, 8, 8, 0, 7);
		ck_assert_str_eq(out, "_.-:=+*#");
	}
	fmt_set_ascii(0);
	/* never past the buffer */
	fmt_spark(out, 5, v, 8, 8, 0, 1);
	ck_assert_uint_le(strlen(out), 4);
}
END_TEST

START_TEST(test_bar)
{
	char out[128];

	utf8_mode();
	fmt_bar(out, sizeof out, 0.5, 4);
	ck_assert_str_eq(out, "██░░");
	fmt_bar(out, sizeof out, -0.2, 3);
	ck_assert_str_eq(out, "░░░");
	fmt_set_ascii(1);
	fmt_bar(out, sizeof out, 1.5, 3);
	ck_assert_str_eq(out, "###");
	fmt_bar(out, sizeof out, 0.34, 3);
	ck_assert_str_eq(out, "#..");
	fmt_set_ascii(0);
}
END_TEST

START_TEST(test_parse)
{
	int64_t ms;

	ck_assert_int_eq(fmt_parse_duration("90", &ms), 0);
	ck_assert_int_eq(ms, 90000);
	ck_assert_int_eq(fmt_parse_duration("1h30m", &ms), 0);
	ck_assert_int_eq(ms, 5400000);
	ck_assert_int_eq(fmt_parse_duration("500ms", &ms), 0);
	ck_assert_int_eq(ms, 500);
	ck_assert_int_eq(fmt_parse_duration("2d", &ms), 0);
	ck_assert_int_eq(ms, 172800000);
	ck_assert_int_eq(fmt_parse_duration("", &ms), -EINVAL);
	ck_assert_int_eq(fmt_parse_duration("1x", &ms), -EINVAL);
	ck_assert_int_eq(fmt_parse_duration("h", &ms), -EINVAL);
	ck_assert_int_eq(fmt_parse_duration("-5", &ms), -EINVAL);
	ck_assert_int_eq(fmt_parse_duration("99999999999999999999", &ms), -ERANGE);

	ck_assert_int_eq(fmt_parse_since("1h", 10000000, &ms), 0);
	ck_assert_int_eq(ms, 10000000 - 3600000);
	ck_assert_int_eq(fmt_parse_since("2026-11-30T12:00:00Z", 0, &ms), 0);
	ck_assert_int_eq(ms, 1796040000000LL);
	ck_assert_int_eq(fmt_parse_since("yesterday", 0, &ms), -EINVAL);
}
END_TEST

START_TEST(test_utf8_codec)
{
	uint32_t cp;
	char out[4];

	ck_assert_int_eq(fmt_utf8_next("\xe9\x80\x80", &cp), 3);
	ck_assert_uint_eq(cp, 0x9000);
	ck_assert_int_eq(fmt_utf8_put(0x9000, out), 3);
	ck_assert_int_eq(memcmp(out, "\xe9\x80\x80", 3), 0);
	/* overlong and truncated sequences are replacement characters */
	ck_assert_int_eq(fmt_utf8_next("\xc0\xaf", &cp), 2);
	ck_assert_uint_eq(cp, 0xfffd);
	ck_assert_int_eq(fmt_utf8_next("\xe9\x80", &cp), 2);
	ck_assert_uint_eq(cp, 0xfffd);
	ck_assert_int_eq(fmt_utf8_next("", &cp), 0);
}
END_TEST

START_TEST(test_table)
{
	static const char *const titles[] = {"ID", "ROUTE", "INPUT"};
	static const char *const r1[] = {"7", "intent", "我要退款"};
	static const char *const r2[] = {"12", "ticket-long", "refund"};
	struct table *t;
	char *text = NULL;
	size_t len = 0;
	FILE *fp;

	utf8_mode();
	fp = open_memstream(&text, &len);
	t = table_new(3, titles, "r  ");
	table_add(t, r1);
	table_add(t, r2);
	table_print(t, fp);
	table_free(t);
	fclose(fp);
	/* columns line up by display width; the last column is not padded */
	ck_assert_str_eq(text, "ID  ROUTE        INPUT\n"
			       " 7  intent       我要退款\n"
			       "12  ticket-long  refund\n");
	free(text);
}
END_TEST

START_TEST(test_paren)
{
	char out[16];

	fmt_paren_inner("(3x first_byte_timeout) tail", out, sizeof out);
	ck_assert_str_eq(out, "3x first_byte_t"); /* cut to 15 bytes */
	fmt_paren_inner("(a (b) c) d", out, sizeof out);
	ck_assert_str_eq(out, "a (b) c");
	fmt_paren_inner("()", out, sizeof out);
	ck_assert_str_eq(out, "");
	fmt_paren_inner("(never closed", out, sizeof out);
	ck_assert_str_eq(out, "never closed");
}
END_TEST

static Suite *
tui_fmt_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"width", test_width},	   {"fit", test_fit},	  {"wrap", test_wrap},
		{"numbers", test_numbers}, {"spark", test_spark}, {"bar", test_bar},
		{"parse", test_parse},	   {"table", test_table}, {"utf8_codec", test_utf8_codec},
		{"paren", test_paren},
	};
	Suite *s = suite_create("tui_fmt");
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
	SRunner *sr = srunner_create(tui_fmt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
