/*
 * test_util: bounded buffers, integer parsing, constant-time compare and
 * RFC3339 time formatting/parsing.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

START_TEST(test_buf_ceiling)
{
	struct buf b;

	buf_init(&b, 8);
	ck_assert_int_eq(buf_append(&b, "12345", 5), 0);
	ck_assert_uint_eq(b.len, 5);
	ck_assert_str_eq(b.data, "12345");

	/* One byte over: refused, nothing changes. */
	ck_assert_int_eq(buf_append(&b, "6789", 4), -E2BIG);
	ck_assert_uint_eq(b.len, 5);
	ck_assert_str_eq(b.data, "12345");
	ck_assert_int_eq(buf_puts(&b, "6789"), -E2BIG);
	ck_assert_str_eq(b.data, "12345");
	ck_assert_int_eq(buf_printf(&b, "%d", 6789), -E2BIG);
	ck_assert_str_eq(b.data, "12345");
	ck_assert_int_eq(buf_append(&b, "x", SIZE_MAX), -E2BIG);
	ck_assert_uint_eq(b.len, 5);

	/* Exactly at the ceiling: fine. */
	ck_assert_int_eq(buf_puts(&b, "678"), 0);
	ck_assert_uint_eq(b.len, 8);
	ck_assert_str_eq(b.data, "12345678");
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_int_eq(buf_puts(&b, "9"), -E2BIG);
	ck_assert_str_eq(b.data, "12345678");

	/* Reset empties but keeps the ceiling. */
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.data, "");
	ck_assert_int_eq(buf_puts(&b, "123456789"), -E2BIG);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
	ck_assert_ptr_null(b.data);

	/* A zero ceiling takes only empty appends. */
	buf_init(&b, 0);
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_str_eq(b.data, "");
	ck_assert_int_eq(buf_puts(&b, "a"), -E2BIG);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_grow)
{
	struct buf b;
	size_t i;

	buf_init(&b, 100000);
	for (i = 0; i < 10000; i++)
		ck_assert_int_eq(buf_append(&b, "0123456789", 10), 0);
	ck_assert_uint_eq(b.len, 100000);
	ck_assert_uint_eq(strlen(b.data), 100000);
	ck_assert_int_eq(memcmp(b.data + 99990, "0123456789", 10), 0);
	ck_assert_int_eq(buf_append(&b, "x", 1), -E2BIG);
	buf_free(&b);
	/* No ceiling: SIZE_MAX (max + 1 must not wrap to a 0-byte buffer). */
	buf_init(&b, SIZE_MAX);
	for (i = 0; i < 1000; i++)
		ck_assert_int_eq(buf_append(&b, "0123456789", 10), 0);
	ck_assert_uint_eq(strlen(b.data), 10000);
	ck_assert_uint_ge(b.cap, 10001);
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_printf_long)
{
	struct buf b;
	char *big = malloc(3001), *want;

	memset(big, 'q', 3000);
	big[3000] = '\0';
	buf_init(&b, 10000);
	ck_assert_int_eq(buf_printf(&b, "<%d:", 42), 0);
	ck_assert_int_eq(buf_printf(&b, "%s>", big), 0);
	ck_assert_uint_eq(b.len, 4 + 3000 + 1);
	want = xasprintf("<42:%s>", big);
	ck_assert_str_eq(b.data, want);
	free(want);

	/* Past the ceiling through the long path: refused, unchanged. */
	ck_assert_int_eq(buf_printf(&b, "%s%s%s", big, big, big), -E2BIG);
	ck_assert_uint_eq(b.len, 3005);
	ck_assert_int_eq(buf_printf(&b, "%s%s", big, big), 0);
	ck_assert_uint_eq(b.len, 9005);
	ck_assert_int_eq(b.data[9004], 'q');
	ck_assert_int_eq(b.data[9005], '\0');
	buf_free(&b);
	free(big);
}
END_TEST

START_TEST(test_buf_steal)
{
	struct buf b;
	char *s;

	buf_init(&b, 64);
	/* An untouched buffer hands over "". */
	s = buf_steal(&b);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	free(s);

	buf_printf(&b, "%s-%d", "abc", 7);
	s = buf_steal(&b);
	ck_assert_str_eq(s, "abc-7");
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);

	/* The buffer is usable again and no longer shares the stolen data. */
	ck_assert_int_eq(buf_puts(&b, "new"), 0);
	ck_assert_str_eq(b.data, "new");
	ck_assert_str_eq(s, "abc-7");
	ck_assert_ptr_ne(s, b.data);
	free(s);
	buf_free(&b);
	buf_free(&b);
}
END_TEST

START_TEST(test_parse_int64)
{
	struct {
		const char *s;
		int r;
		int64_t v;
	} cases[] = {
		{"0", 0, 0},
		{"42", 0, 42},
		{"-42", 0, -42},
		{"007", 0, 7},
		{"9223372036854775807", 0, INT64_MAX},
		{"-9223372036854775808", 0, INT64_MIN},
		{"9223372036854775808", -ERANGE, 0},
		{"-9223372036854775809", -ERANGE, 0},
		{"99999999999999999999999", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"-", -EINVAL, 0},
		{"abc", -EINVAL, 0},
		{"12a", -EINVAL, 0},
		{"1.5", -EINVAL, 0},
		{"0x10", -EINVAL, 0},
		{"12 ", -EINVAL, 0},
		{" 12", -EINVAL, 0},
		{"\t12", -EINVAL, 0},
		{"1e3", -EINVAL, 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t v = 12345;
		int r = parse_int64(cases[i].s, &v);

		ck_assert_msg(r == cases[i].r, "\"%s\": got %d", cases[i].s, r);
		if (r == 0)
			ck_assert_int_eq(v, cases[i].v);
		else
			ck_assert_int_eq(v, 12345);
	}
	{
		int64_t v = 5;

		ck_assert_int_eq(parse_int64(NULL, &v), -EINVAL);
		ck_assert_int_eq(v, 5);
	}
}
END_TEST

START_TEST(test_consttime_eq)
{
	struct {
		const char *a, *b;
		int eq;
	} cases[] = {
		{"", "", 1},
		{"secret-token", "secret-token", 1},
		{"secret-token", "secret-tokeN", 0},
		{"Xecret-token", "secret-token", 0},
		{"secret", "secret-token", 0},
		{"secret-token", "secret", 0},
		{"", "a", 0},
		{"a", "", 0},
		{"abc", "abd", 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(!!str_consttime_eq(cases[i].a, cases[i].b) == cases[i].eq,
			      "\"%s\" vs \"%s\"", cases[i].a, cases[i].b);
}
END_TEST

START_TEST(test_time_format)
{
	char out[32];

	time_format_rfc3339(0, out, sizeof out);
	ck_assert_str_eq(out, "1970-01-01T00:00:00.000Z");
	time_format_rfc3339(1764504000123LL, out, sizeof out);
	ck_assert_str_eq(out, "2025-11-30T12:00:00.123Z");
	time_format_rfc3339(951868799999LL, out, sizeof out);
	ck_assert_str_eq(out, "2000-02-29T23:59:59.999Z");
	time_format_rfc3339(2147483648007LL, out, sizeof out);
	ck_assert_str_eq(out, "2038-01-19T03:14:08.007Z");
	/* A short buffer is truncated, still terminated. */
	time_format_rfc3339(0, out, 5);
	ck_assert_str_eq(out, "1970");
}
END_TEST

START_TEST(test_time_roundtrip)
{
	const int64_t v[] = {0,
			     1,
			     999,
			     1000,
			     951868799999LL,
			     1764504000123LL,
			     1796040000000LL,
			     2147483648007LL,
			     4102444799999LL};
	size_t i;

	for (i = 0; i < sizeof v / sizeof v[0]; i++) {
		char out[32];
		int64_t back = -1;

		time_format_rfc3339(v[i], out, sizeof out);
		ck_assert_int_eq(time_parse_rfc3339(out, &back), 0);
		ck_assert_int_eq(back, v[i]);
	}
}
END_TEST

START_TEST(test_time_parse)
{
	struct {
		const char *s;
		int64_t want;
	} cases[] = {
		{"2026-11-30T12:00:00Z", 1796040000000LL},
		{"2026-11-30T12:00:00z", 1796040000000LL},
		{"2026-11-30T12:00:00.5Z", 1796040000500LL},
		{"2026-11-30T12:00:00.05Z", 1796040000050LL},
		{"2026-11-30T12:00:00.123456Z", 1796040000123LL},
		{"2026-11-30T12:00:00+00:00", 1796040000000LL},
		{"2026-11-30T14:00:00+02:00", 1796040000000LL},
		{"2026-11-30T06:30:00-05:30", 1796040000000LL},
		{"2026-12-01T01:45:00.250+13:45", 1796040000250LL},
		{"1970-01-01T00:00:00Z", 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t got = -1;

		ck_assert_msg(time_parse_rfc3339(cases[i].s, &got) == 0, "%s refused", cases[i].s);
		ck_assert_msg(got == cases[i].want, "%s: got %lld", cases[i].s, (long long)got);
	}
}
END_TEST

START_TEST(test_time_garbage)
{
	const char *bad[] = {
		"",
		"garbage",
		"2026-11-30",
		"2026-11-30T12:00:00",
		"2026-11-30 12:00:00Z",
		"2026-11-30T12:00:00Zjunk",
		"2026-11-30T12:00:00.5",
		"2026-11-30T12:00:00+0200",
		"2026-11-30T12:00:00+02:00x",
		"2026-11-30T12:00:00+02",
		"2026-11-30T12:00:00+2:00",
		"2026-11-30T12:00:00+02:0",
		"2026-11-30T12:00:00+",
		"2026-11-30T12:00:00+ab:cd",
		"2026-13-30T12:00:00Z",
		"2026-11-30T25:00:00Z",
	};
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		/* Heap copies so a read past the end shows under ASan. */
		char *s = strdup(bad[i]);
		int64_t got = 777;

		ck_assert_msg(time_parse_rfc3339(s, &got) == -EINVAL, "\"%s\" accepted", bad[i]);
		ck_assert_int_eq(got, 777);
		free(s);
	}
}
END_TEST

/* FNV-1a 32-bit reference values (the published test vectors). */
START_TEST(test_str_hash)
{
	ck_assert_uint_eq(str_hash(STR_HASH_SEED, ""), 0x811c9dc5u);
	ck_assert_uint_eq(str_hash(STR_HASH_SEED, "a"), 0xe40c292cu);
	ck_assert_uint_eq(str_hash(STR_HASH_SEED, "foobar"), 0xbf9cf968u);
	/* continuing from a prefix's hash is hashing the concatenation */
	ck_assert_uint_eq(str_hash(str_hash(STR_HASH_SEED, "foo"), "bar"), 0xbf9cf968u);
}
END_TEST

static Suite *
util_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"buf_ceiling", test_buf_ceiling},
		{"buf_grow", test_buf_grow},
		{"buf_printf_long", test_buf_printf_long},
		{"buf_steal", test_buf_steal},
		{"parse_int64", test_parse_int64},
		{"consttime_eq", test_consttime_eq},
		{"str_hash", test_str_hash},
		{"time_format", test_time_format},
		{"time_roundtrip", test_time_roundtrip},
		{"time_parse", test_time_parse},
		{"time_garbage", test_time_garbage},
	};
	Suite *s = suite_create("util");
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
	SRunner *sr = srunner_create(util_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
