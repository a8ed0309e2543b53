/*
 * test_ratelimit: the duration format, the provider's headers, configured
 * rpm / tpm and retry-after, with literal clocks.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ratelimit.h"

static const struct ratelimit_cfg headers_only = {0, 0, true};

static int
hdr(struct ratelimit *r, int64_t now, const char *name, const char *value)
{
	return ratelimit_header(r, now, name, strlen(name), value, strlen(value));
}

static const struct {
	const char *s;
	int64_t ms;
} good_durations[] = {
	{"6m0s", 360000},
	{"20ms", 20},
	{"1s", 1000},
	{"0.5s", 500},
	{"1h2m3.5s", 3723500},
	{"59.999s", 59999},
	{"0s", 0},
	{"0", 0},
	{"2", 2000},
	{"1.5", 1500},
	{"0.3s", 300},
	{".5s", 500},
	{"1m30s", 90000},
	{"2h", 7200000},
	{"1s500ms", 1500},
	{"1.0005s", 1001}, /* rounded up */
	{"1500us", 2},	   /* 1.5 ms, rounded up */
	{"1\xc2\xb5s", 1},
	{"10ns", 1},
	{"17.24m", 1034400},
	{"8760h", 31536000000},
};

START_TEST(test_duration_good)
{
	int64_t ms = -7;
	int rc = ratelimit_parse_duration(good_durations[_i].s, &ms);

	ck_assert_msg(rc == 0, "%s: rc %d", good_durations[_i].s, rc);
	ck_assert_msg(ms == good_durations[_i].ms, "%s: %lld, want %lld", good_durations[_i].s,
		      (long long)ms, (long long)good_durations[_i].ms);
}
END_TEST

static const char *const bad_durations[] = {
	"",	 "s",	     "ms",
	"-1s",	 "+1s",	     " 1s",
	"1s ",	 "1 s",	     "1x",
	"1m30",	 "1s1m",     "1s1s",
	"1m1h",	 "1.2.3s",   ".s",
	"1..5s", "abc",	     "1e3",
	"0x10",	 "inf",	     "nan",
	"1S",	 "1M",	     "1d",
	"1w",	 "9999999h", "99999999999999999999s",
	"1,5s",	 "1s\n",     "10000h",
};

START_TEST(test_duration_bad)
{
	int64_t ms = -7;

	ck_assert_msg(ratelimit_parse_duration(bad_durations[_i], &ms) == RATELIMIT_E_SYNTAX,
		      "\"%s\" accepted", bad_durations[_i]);
	ck_assert_int_eq(ms, -7);
}
END_TEST

START_TEST(test_nothing_known)
{
	struct ratelimit r;
	int64_t until = -1;
	int i;

	ratelimit_init(&r, &headers_only);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 0), -1);
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 0), -1);
	ck_assert_int_eq(ratelimit_blocked_until(&r, 0), 0);
	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(ratelimit_admits(&r, i, 100000, &until), 0);
		ratelimit_sent(&r, i, 100000);
	}
	ck_assert_int_eq(until, -1);
}
END_TEST

/* The case: 5 requests left, reset in 2 s. */
START_TEST(test_remaining_requests)
{
	struct ratelimit r;
	int64_t until = 0;
	int i;

	ratelimit_init(&r, &headers_only);
	ck_assert_int_eq(hdr(&r, 1000, "X-RateLimit-Remaining-Requests", "5"), 1);
	ck_assert_int_eq(hdr(&r, 1000, "x-ratelimit-reset-requests", "2s"), 1);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 1000), 5);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(ratelimit_admits(&r, 1100 + i, 10, NULL), 0);
		ratelimit_sent(&r, 1100 + i, 10);
	}
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 1200), 0);
	ck_assert_int_eq(ratelimit_admits(&r, 1200, 10, &until), RATELIMIT_E_REQUESTS);
	ck_assert_int_eq(until, 3000);
	ck_assert_int_eq(ratelimit_admits(&r, 2999, 10, NULL), RATELIMIT_E_REQUESTS);
	/* At the reset the count is unknown again: refilled. */
	ck_assert_int_eq(ratelimit_admits(&r, 3000, 10, NULL), 0);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 3000), -1);
	/* The next answer tells the new count. */
	hdr(&r, 3100, "x-ratelimit-remaining-requests", "99");
	hdr(&r, 3100, "x-ratelimit-reset-requests", "1m0s");
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 3100), 99);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 63099), 99);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 63100), -1);
}
END_TEST

/* Reset before remaining, in one answer: the order does not matter. */
START_TEST(test_header_order)
{
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &headers_only);
	hdr(&r, 0, "x-ratelimit-reset-requests", "500ms");
	hdr(&r, 0, "x-ratelimit-remaining-requests", "0");
	ck_assert_int_eq(ratelimit_admits(&r, 10, 0, &until), RATELIMIT_E_REQUESTS);
	ck_assert_int_eq(until, 500);
	ck_assert_int_eq(ratelimit_admits(&r, 500, 0, NULL), 0);
}
END_TEST

/* A count without a reset header holds RATELIMIT_DEFAULT_RESET_MS. */
START_TEST(test_remaining_without_reset)
{
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &headers_only);
	hdr(&r, 5000, "x-ratelimit-remaining-requests", "0");
	ck_assert_int_eq(ratelimit_admits(&r, 5000, 0, &until), RATELIMIT_E_REQUESTS);
	ck_assert_int_eq(until, 5000 + RATELIMIT_DEFAULT_RESET_MS);
	ck_assert_int_eq(ratelimit_admits(&r, 5000 + RATELIMIT_DEFAULT_RESET_MS, 0, NULL), 0);
}
END_TEST

START_TEST(test_remaining_tokens)
{
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &headers_only);
	hdr(&r, 0, "x-ratelimit-remaining-tokens", "1000");
	hdr(&r, 0, "x-ratelimit-reset-tokens", "6m0s");
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 0), 1000);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 0), -1);
	ck_assert_int_eq(ratelimit_admits(&r, 10, 600, NULL), 0);
	ratelimit_sent(&r, 10, 600);
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 10), 400);
	ck_assert_int_eq(ratelimit_admits(&r, 20, 400, NULL), 0);
	ck_assert_int_eq(ratelimit_admits(&r, 20, 401, &until), RATELIMIT_E_TOKENS);
	ck_assert_int_eq(until, 360000);
	ratelimit_sent(&r, 20, 500); /* an estimate above what is left: 0, not negative */
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 20), 0);
	ck_assert_int_eq(ratelimit_admits(&r, 30, 0, NULL), RATELIMIT_E_TOKENS);
	ck_assert_int_eq(ratelimit_admits(&r, 360000, 401, NULL), 0);
}
END_TEST

/* Requests and tokens both short: requests win, until is the later reset. */
START_TEST(test_both_short)
{
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &headers_only);
	hdr(&r, 0, "x-ratelimit-remaining-requests", "0");
	hdr(&r, 0, "x-ratelimit-reset-requests", "1s");
	hdr(&r, 0, "x-ratelimit-remaining-tokens", "5");
	hdr(&r, 0, "x-ratelimit-reset-tokens", "20s");
	ck_assert_int_eq(ratelimit_admits(&r, 0, 10, &until), RATELIMIT_E_REQUESTS);
	ck_assert_int_eq(until, 20000);
	ck_assert_int_eq(ratelimit_admits(&r, 1000, 10, &until), RATELIMIT_E_TOKENS);
	ck_assert_int_eq(ratelimit_admits(&r, 1000, 5, NULL), 0);
}
END_TEST

/* Configured rpm alone, no headers: a sliding minute of 1 s buckets. */
START_TEST(test_config_rpm)
{
	const struct ratelimit_cfg c = {3, 0, true};
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &c);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 0), 3);
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 0), -1);
	ratelimit_sent(&r, 1500, 10);  /* bucket 1 s */
	ratelimit_sent(&r, 10200, 10); /* bucket 10 s */
	ratelimit_sent(&r, 10900, 10);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 11000), 0);
	ck_assert_int_eq(ratelimit_admits(&r, 11000, 10, &until), RATELIMIT_E_REQUESTS);
	ck_assert_int_eq(until, 61000); /* the 1 s bucket leaves */
	ck_assert_int_eq(ratelimit_admits(&r, 60999, 10, NULL), RATELIMIT_E_REQUESTS);
	ck_assert_int_eq(ratelimit_admits(&r, 61000, 10, NULL), 0);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 61000), 1);
	ratelimit_sent(&r, 61000, 10);
	ck_assert_int_eq(ratelimit_admits(&r, 61001, 10, &until), RATELIMIT_E_REQUESTS);
	ck_assert_int_eq(until, 70000); /* the 10 s bucket (two sends) leaves */
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 200000), 3);
}
END_TEST

START_TEST(test_config_tpm)
{
	const struct ratelimit_cfg c = {0, 1000, true};
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &c);
	ck_assert_int_eq(ratelimit_admits(&r, 0, 800, NULL), 0);
	ratelimit_sent(&r, 0, 800);
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 0), 200);
	ck_assert_int_eq(ratelimit_admits(&r, 100, 200, NULL), 0);
	ck_assert_int_eq(ratelimit_admits(&r, 100, 201, &until), RATELIMIT_E_TOKENS);
	ck_assert_int_eq(until, 60000);
	ck_assert_int_eq(ratelimit_admits(&r, 60000, 201, NULL), 0);
	/* Larger than the whole tpm: admitted into an empty window only. */
	ck_assert_int_eq(ratelimit_admits(&r, 60000, 5000, NULL), 0);
	ratelimit_sent(&r, 60000, 5000);
	ck_assert_int_eq(ratelimit_admits(&r, 60001, 1, &until), RATELIMIT_E_TOKENS);
	ck_assert_int_eq(until, 120000);
}
END_TEST

/* Headers and config: the tighter wins. */
START_TEST(test_config_and_headers)
{
	const struct ratelimit_cfg c = {100, 0, true};
	struct ratelimit r;

	ratelimit_init(&r, &c);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 0), 100);
	hdr(&r, 0, "x-ratelimit-remaining-requests", "2");
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 0), 2);
	ratelimit_sent(&r, 0, 0);
	ratelimit_sent(&r, 0, 0);
	ck_assert_int_eq(ratelimit_admits(&r, 1, 0, NULL), RATELIMIT_E_REQUESTS);
	hdr(&r, 2, "x-ratelimit-remaining-requests", "5000");
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 2), 98);
}
END_TEST

START_TEST(test_honor_headers_false)
{
	const struct ratelimit_cfg c = {0, 0, false};
	struct ratelimit r;

	ratelimit_init(&r, &c);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-requests", "0"), 1);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-tokens", "0"), 1);
	ck_assert_int_eq(hdr(&r, 0, "retry-after", "30"), 1);
	ck_assert_int_eq(hdr(&r, 0, "retry-after-ms", "30000"), 1);
	ck_assert_int_eq(ratelimit_admits(&r, 1, 10, NULL), 0);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 1), -1);
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 1), -1);
	ck_assert_int_eq(ratelimit_blocked_until(&r, 1), 0);
}
END_TEST

START_TEST(test_retry_after_ms)
{
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &headers_only);
	ck_assert_int_eq(hdr(&r, 1000, "Retry-After-Ms", "1500"), 1);
	ck_assert_int_eq(ratelimit_admits(&r, 1000, 0, &until), RATELIMIT_E_BLOCKED);
	ck_assert_int_eq(until, 2500);
	ck_assert_int_eq(ratelimit_blocked_until(&r, 2000), 2500);
	ck_assert_int_eq(ratelimit_admits(&r, 2500, 0, NULL), 0);
	ck_assert_int_eq(ratelimit_blocked_until(&r, 2500), 0);
	/* A shorter one does not cut a longer block. */
	hdr(&r, 3000, "retry-after-ms", "5000");
	hdr(&r, 3000, "retry-after-ms", "10");
	ck_assert_int_eq(ratelimit_blocked_until(&r, 3000), 8000);
	/* Blocked beats an empty request count; until is when both have freed. */
	hdr(&r, 3000, "x-ratelimit-remaining-requests", "0");
	hdr(&r, 3000, "x-ratelimit-reset-requests", "20s");
	ck_assert_int_eq(ratelimit_admits(&r, 3000, 0, &until), RATELIMIT_E_BLOCKED);
	ck_assert_int_eq(until, 23000);
}
END_TEST

START_TEST(test_retry_after)
{
	struct ratelimit r;
	int64_t until = 0;

	ratelimit_init(&r, &headers_only);
	hdr(&r, 0, "retry-after", " 2 ");
	ck_assert_int_eq(ratelimit_admits(&r, 1, 0, &until), RATELIMIT_E_BLOCKED);
	ck_assert_int_eq(until, 2000);
	/* An HTTP-date is ignored, and so is more than a year. */
	ratelimit_init(&r, &headers_only);
	ck_assert_int_eq(hdr(&r, 0, "retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"), 1);
	ck_assert_int_eq(hdr(&r, 0, "retry-after", "99999999"), 1);
	ck_assert_int_eq(ratelimit_admits(&r, 1, 0, NULL), 0);
	/* A day is cut to RATELIMIT_MAX_BLOCK_MS. */
	hdr(&r, 0, "retry-after", "86400");
	ck_assert_int_eq(ratelimit_blocked_until(&r, 0), RATELIMIT_MAX_BLOCK_MS);
}
END_TEST

/* Unknown names are not ours; malformed values of ours are ignored. */
START_TEST(test_header_names_values)
{
	struct ratelimit r;

	ratelimit_init(&r, &headers_only);
	ck_assert_int_eq(hdr(&r, 0, "content-type", "application/json"), 0);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-limit-requests", "60"), 0);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-request", "0"), 0);
	ck_assert_int_eq(ratelimit_header(&r, 0, "retry-after-msX", 14, "10", 2), 1);
	ck_assert_int_eq(ratelimit_blocked_until(&r, 0), 10);
	ratelimit_init(&r, &headers_only);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-requests", "-1"), 1);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-requests", "5 requests"), 1);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-requests", ""), 1);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-tokens", "1.5"), 1);
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-reset-requests", "soon"), 1);
	ck_assert_int_eq(hdr(&r, 0, "retry-after-ms", "-5"), 1);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 0), -1);
	ck_assert_int_eq(ratelimit_remaining_tokens(&r, 0), -1);
	ck_assert_int_eq(ratelimit_blocked_until(&r, 0), 0);
	ck_assert_int_eq(ratelimit_header(&r, 0, "retry-after", 11, NULL, 0), 1);
	/* A value with blanks around it. */
	ck_assert_int_eq(hdr(&r, 0, "x-ratelimit-remaining-requests", "\t7 "), 1);
	ck_assert_int_eq(ratelimit_remaining_requests(&r, 0), 7);
}
END_TEST

static Suite *
ratelimit_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
		int loop;
	} cases[] = {
		{"duration_good", test_duration_good,
		 (int)(sizeof good_durations / sizeof good_durations[0])},
		{"duration_bad", test_duration_bad,
		 (int)(sizeof bad_durations / sizeof bad_durations[0])},
		{"nothing_known", test_nothing_known, 0},
		{"remaining_requests", test_remaining_requests, 0},
		{"header_order", test_header_order, 0},
		{"remaining_without_reset", test_remaining_without_reset, 0},
		{"remaining_tokens", test_remaining_tokens, 0},
		{"both_short", test_both_short, 0},
		{"config_rpm", test_config_rpm, 0},
		{"config_tpm", test_config_tpm, 0},
		{"config_and_headers", test_config_and_headers, 0},
		{"honor_headers_false", test_honor_headers_false, 0},
		{"retry_after_ms", test_retry_after_ms, 0},
		{"retry_after", test_retry_after, 0},
		{"header_names_values", test_header_names_values, 0},
	};
	Suite *s = suite_create("ratelimit");
	TCase *tc;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tc = tcase_create(cases[i].name);
		if (cases[i].loop > 0)
			tcase_add_loop_test(tc, cases[i].test, 0, cases[i].loop);
		else
			tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ratelimit_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
