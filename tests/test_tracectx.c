/*
 * test_tracectx: W3C Trace Context level 1 traceparent values, valid and
 * malformed, on literals (the spec's own example among them); ids from a
 * seeded rng; parent-based sampling.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tracectx.h"

/* The example of the W3C Trace Context recommendation, section 3.2.2.1. */
#define EXAMPLE "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

START_TEST(parses_spec_example)
{
	struct tracectx c;
	char buf[TRACECTX_TRACEPARENT_LEN + 1], t[33], sp[17];

	ck_assert(tracectx_parse(EXAMPLE, &c));
	ck_assert_uint_eq(c.trace_id[0], 0x0a);
	ck_assert_uint_eq(c.trace_id[15], 0x9c);
	ck_assert_uint_eq(c.span_id[0], 0xb7);
	ck_assert_uint_eq(c.span_id[7], 0x31);
	ck_assert_uint_eq(c.flags, 1);
	ck_assert(tracectx_sampled(&c));
	tracectx_format(&c, buf, sizeof buf);
	ck_assert_str_eq(buf, EXAMPLE);
	tracectx_trace_hex(c.trace_id, t);
	ck_assert_str_eq(t, "0af7651916cd43dd8448eb211c80319c");
	tracectx_span_hex(c.span_id, sp);
	ck_assert_str_eq(sp, "b7ad6b7169203331");

	ck_assert(
		tracectx_parse("  00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00\t", &c));
	ck_assert(!tracectx_sampled(&c));
	/* Unknown flag bits are accepted; only sampled is kept downstream. */
	ck_assert(tracectx_parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09", &c));
	ck_assert_uint_eq(c.flags, 9);
}
END_TEST

START_TEST(rejects_malformed)
{
	static const char *bad[] = {
		"",
		"00",
		/* too short, too long for version 00 */
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
		/* uppercase hex is not allowed */
		"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
		/* all-zero ids */
		"00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
		/* version ff is invalid, non-hex version */
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"0x-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		/* wrong separators, non-hex characters */
		"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0z",
		/* a later version must separate its extra fields with '-' */
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
	};
	struct tracectx c;
	size_t i;

	memset(&c, 0x5a, sizeof c);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!tracectx_parse(bad[i], &c), "accepted %s", bad[i]);
	ck_assert(!tracectx_parse(NULL, &c));
	/* A rejected value leaves the output untouched. */
	ck_assert_uint_eq(c.flags, 0x5a);
}
END_TEST

START_TEST(later_version_read_as_00)
{
	struct tracectx c;

	ck_assert(tracectx_parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", &c));
	ck_assert(
		tracectx_parse("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what", &c));
	ck_assert_uint_eq(c.span_id[7], 0x31);
	ck_assert(tracectx_sampled(&c));
}
END_TEST

START_TEST(ids_from_seeded_rng)
{
	struct rng r;
	uint8_t t[16], s[8];
	char th[33], sh[17];

	rng_seed(&r, 0);
	tracectx_new_trace_id(&r, t);
	tracectx_trace_hex(t, th);
	/* splitmix64-seeded xoshiro256** from 0: 99ec5f36cb75f2b4, bf6e1f784956452a. */
	ck_assert_str_eq(th, "99ec5f36cb75f2b4bf6e1f784956452a");
	tracectx_new_span_id(&r, s);
	tracectx_span_hex(s, sh);
	ck_assert_str_eq(sh, "1a5f849d4933e6e0");
}
END_TEST

START_TEST(child_keeps_parent_trace)
{
	struct tracectx parent, out;
	struct rng r;
	uint8_t ps[8];
	char buf[56];

	ck_assert(tracectx_parse(EXAMPLE, &parent));
	rng_seed(&r, 0);
	/* Parent-based: sampled although the rate says no. */
	tracectx_child(&parent, &r, 0.0, 0.9, &out, ps);
	ck_assert(memcmp(out.trace_id, parent.trace_id, 16) == 0);
	ck_assert(memcmp(ps, parent.span_id, 8) == 0);
	ck_assert(memcmp(out.span_id, parent.span_id, 8) != 0);
	ck_assert(tracectx_sampled(&out));
	tracectx_format(&out, buf, sizeof buf);
	ck_assert_str_eq(buf, "00-0af7651916cd43dd8448eb211c80319c-99ec5f36cb75f2b4-01");

	ck_assert(
		tracectx_parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-08", &parent));
	tracectx_child(&parent, &r, 1.0, 0.0, &out, ps);
	ck_assert_uint_eq(out.flags, 0);
}
END_TEST

START_TEST(new_trace_sampled_by_rate)
{
	struct tracectx out;
	struct rng r;
	uint8_t ps[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	static const uint8_t zero[8];

	rng_seed(&r, 0);
	tracectx_child(NULL, &r, 0.25, 0.2, &out, ps);
	ck_assert(tracectx_sampled(&out));
	ck_assert(memcmp(ps, zero, 8) == 0);
	ck_assert_uint_eq(out.trace_id[0], 0x99);
	tracectx_child(NULL, &r, 0.25, 0.25, &out, ps);
	ck_assert(!tracectx_sampled(&out));
	tracectx_child(NULL, &r, 0.0, 0.0, &out, ps);
	ck_assert(!tracectx_sampled(&out));
}
END_TEST

START_TEST(tracestate_checked)
{
	char big[TRACECTX_TRACESTATE_MAX + 2];

	ck_assert(tracectx_tracestate_ok("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
	ck_assert(tracectx_tracestate_ok("a=1, b=2"));
	ck_assert(!tracectx_tracestate_ok(""));
	ck_assert(!tracectx_tracestate_ok(NULL));
	ck_assert(!tracectx_tracestate_ok("a=1\r\nX-Evil: 1"));
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert(!tracectx_tracestate_ok(big));
	big[TRACECTX_TRACESTATE_MAX] = '\0';
	ck_assert(tracectx_tracestate_ok(big));
}
END_TEST

START_TEST(format_refuses_short_buffer)
{
	struct tracectx c;
	char buf[10] = "xxxxxxxxx";

	ck_assert(tracectx_parse(EXAMPLE, &c));
	tracectx_format(&c, buf, sizeof buf);
	ck_assert_str_eq(buf, "");
}
END_TEST

static Suite *
tracectx_suite(void)
{
	Suite *s = suite_create("tracectx");
	TCase *tc = tcase_create("traceparent");

	tcase_add_test(tc, parses_spec_example);
	tcase_add_test(tc, rejects_malformed);
	tcase_add_test(tc, later_version_read_as_00);
	tcase_add_test(tc, ids_from_seeded_rng);
	tcase_add_test(tc, child_keeps_parent_trace);
	tcase_add_test(tc, new_trace_sampled_by_rate);
	tcase_add_test(tc, tracestate_checked);
	tcase_add_test(tc, format_refuses_short_buffer);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tracectx_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
