/*
 * test_retry: backoff, jitter, Retry-After, retry decisions and the retry
 * budget, with literal clocks and seeded random numbers.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "retry.h"

/* "Sun, 06 Nov 1994 08:49:37 GMT" in epoch milliseconds. */
#define NOV94 784111777000LL

static struct retry_cfg
cfg_base(void)
{
	struct retry_cfg c;

	memset(&c, 0, sizeof c);
	c.max_retries = 2;
	c.backoff = BACKOFF_EXPONENTIAL;
	c.base_ms = 500;
	c.multiplier = 2.0;
	c.max_ms = 8000;
	c.jitter = 0.0;
	c.retry_on = OUTCOME_BIT(OUTCOME_CONNECT_ERROR) | OUTCOME_BIT(OUTCOME_RESET) |
		     OUTCOME_BIT(OUTCOME_HTTP_5XX) | OUTCOME_BIT(OUTCOME_HTTP_429);
	c.honor_retry_after = true;
	c.budget_ratio = 0.2;
	c.budget_min_per_s = 3;
	return c;
}

static int
parse(const char *s, int64_t now, int64_t *out)
{
	return retry_parse_retry_after(s, strlen(s), now, out);
}

START_TEST(test_backoff_sequence)
{
	struct retry_cfg c = cfg_base();
	static const int64_t want[] = {500, 1000, 2000, 4000, 8000, 8000};
	int n;

	for (n = 1; n <= 6; n++)
		ck_assert_int_eq(retry_backoff_ms(&c, n, NULL), want[n - 1]);
	ck_assert_int_eq(retry_backoff_ms(&c, 1000, NULL), 8000);
	c.backoff = BACKOFF_NONE;
	ck_assert_int_eq(retry_backoff_ms(&c, 1, NULL), 0);
	ck_assert_int_eq(retry_backoff_ms(&c, 3, NULL), 0);
	c.backoff = BACKOFF_EXPONENTIAL;
	c.base_ms = 1500;
	c.multiplier = 1.5;
	c.max_ms = 30000;
	ck_assert_int_eq(retry_backoff_ms(&c, 1, NULL), 1500);
	ck_assert_int_eq(retry_backoff_ms(&c, 2, NULL), 2250);
	ck_assert_int_eq(retry_backoff_ms(&c, 3, NULL), 3375);
}
END_TEST

START_TEST(test_jitter_bounds)
{
	struct retry_cfg c = cfg_base();
	struct rng r;
	int64_t d, lo = INT64_MAX, hi = 0;
	double sum = 0;
	int i;

	c.jitter = 0.2;
	rng_seed(&r, 42);
	for (i = 0; i < 10000; i++) {
		d = retry_backoff_ms(&c, 3, &r); /* nominal 2000 */
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		sum += (double)d;
	}
	ck_assert_int_ge(lo, 1600);
	ck_assert_int_le(hi, 2400);
	ck_assert_int_lt(lo, 1620); /* the draws cover the range */
	ck_assert_int_gt(hi, 2380);
	ck_assert_double_eq_tol(sum / 10000, 2000.0, 20.0);
}
END_TEST

START_TEST(test_jitter_full)
{
	struct retry_cfg c = cfg_base();
	struct rng r;
	int64_t d, lo = INT64_MAX, hi = 0;
	double sum = 0;
	int i;

	c.jitter = 0.2; /* ignored */
	c.jitter_full = true;
	rng_seed(&r, 7);
	for (i = 0; i < 10000; i++) {
		d = retry_backoff_ms(&c, 2, &r); /* nominal 1000 */
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		sum += (double)d;
	}
	ck_assert_int_ge(lo, 0);
	ck_assert_int_le(hi, 1000);
	ck_assert_int_lt(lo, 10);
	ck_assert_int_gt(hi, 990);
	ck_assert_double_eq_tol(sum / 10000, 500.0, 15.0);
}
END_TEST

START_TEST(test_jitter_seeded_repeatable)
{
	struct retry_cfg c = cfg_base();
	struct rng a, b;
	int i;

	c.jitter = 0.5;
	rng_seed(&a, 99);
	rng_seed(&b, 99);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(retry_backoff_ms(&c, 2, &a), retry_backoff_ms(&c, 2, &b));
}
END_TEST

START_TEST(test_retry_after_delta)
{
	int64_t ms = -5;

	ck_assert_int_eq(parse("2", 0, &ms), 0);
	ck_assert_int_eq(ms, 2000);
	ck_assert_int_eq(parse("0", 0, &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(parse(" 120\t", 0, &ms), 0);
	ck_assert_int_eq(ms, 120000);
	ck_assert_int_eq(parse("007", 0, &ms), 0);
	ck_assert_int_eq(ms, 7000);
	ck_assert_int_eq(parse("9223372036854775", 0, &ms), 0);
	ck_assert_int_eq(ms, 9223372036854775000LL);
	/* The length bounds the value; no NUL needed. */
	ck_assert_int_eq(retry_parse_retry_after("35xyz", 2, 0, &ms), 0);
	ck_assert_int_eq(ms, 35000);
}
END_TEST

START_TEST(test_retry_after_date)
{
	int64_t ms = -5;

	ck_assert_int_eq(parse("Sun, 06 Nov 1994 08:49:39 GMT", NOV94, &ms), 0);
	ck_assert_int_eq(ms, 2000);
	ck_assert_int_eq(parse("Sunday, 06-Nov-94 08:49:40 GMT", NOV94, &ms), 0);
	ck_assert_int_eq(ms, 3000);
	ck_assert_int_eq(parse("Sun Nov  6 08:49:41 1994", NOV94, &ms), 0);
	ck_assert_int_eq(ms, 4000);
	ck_assert_int_eq(parse("Sun, 06 Nov 1994 08:49:37 GMT", NOV94 - 500, &ms), 0);
	ck_assert_int_eq(ms, 500);
	/* In the past: no wait. */
	ck_assert_int_eq(parse("Sun, 06 Nov 1994 08:49:37 GMT", NOV94 + 60000, &ms), 0);
	ck_assert_int_eq(ms, 0);
	/* Across a month end and a leap day. */
	ck_assert_int_eq(parse("Thu, 29 Feb 2024 23:59:59 GMT", 1709251199000LL - 1000, &ms), 0);
	ck_assert_int_eq(ms, 1000);
	ck_assert_int_eq(parse("Fri, 01 Mar 2024 00:00:00 GMT", 1709251199000LL, &ms), 0);
	ck_assert_int_eq(ms, 1000);
	ck_assert_int_eq(parse("Thu, 01 Jan 1970 00:00:00 GMT", 0, &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(parse("Thu, 01 Jan 1970 00:00:10 GMT", 0, &ms), 0);
	ck_assert_int_eq(ms, 10000);
}
END_TEST

START_TEST(test_retry_after_garbage)
{
	static const char *const bad[] = {
		"",
		"   ",
		"-1",
		"+1",
		"1.5",
		"2 s",
		"abc",
		"0x10",
		"1e3",
		"99999999999999999999",
		"9223372036854776",
		"Sun, 06 Nov 1994 08:49:37",
		"Sun, 06 Nov 1994 08:49:37 GMT junk",
		"Sun, 31 Feb 1994 08:49:37 GMT",
		"Sun, 29 Feb 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 1994 08:60:00 GMT",
		"Sun, 06 Foo 1994 08:49:37 GMT",
		"Xyz, 06 Nov 1994 08:49:37 GMT",
		"Sun, 00 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 94 08:49:37 GMT",
		"Sun, 06 Nov 1994 8:49:37 GMT",
		"Sun Nov  6 08:49:41",
		"Sun Nov 6 08:49:41 94",
		"Sunday, 06-Nov-94 08:49:40",
		"Sun,",
		"Sun",
		",",
		"GMT",
	};
	int64_t ms = 12345;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(parse(bad[i], NOV94, &ms) == -EINVAL, "accepted \"%s\"", bad[i]);
		ck_assert_int_eq(ms, 12345);
	}
	ck_assert_int_eq(retry_parse_retry_after("1\0002", 3, 0, &ms), -EINVAL);
	ck_assert_int_eq(retry_parse_retry_after(NULL, 0, 0, &ms), -EINVAL);
	ck_assert_int_eq(retry_parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 20, 0, &ms),
			 -EINVAL);
}
END_TEST

START_TEST(test_retry_after_random_bytes)
{
	static const char alphabet[] = "0123456789 ,:-SunNovGMTday\t\0\xff";
	char buf[40];
	struct rng r;
	int64_t ms;
	size_t len, j;
	int i, rc;

	rng_seed(&r, 1);
	for (i = 0; i < 200000; i++) {
		len = rng_u64(&r) % sizeof buf;
		for (j = 0; j < len; j++) {
			if (i % 2)
				buf[j] = (char)rng_u64(&r);
			else
				buf[j] = alphabet[rng_u64(&r) % (sizeof alphabet - 1)];
		}
		ms = -1;
		rc = retry_parse_retry_after(buf, len, NOV94, &ms);
		ck_assert(rc == 0 || rc == -EINVAL);
		if (rc == 0)
			ck_assert_int_ge(ms, 0);
	}
}
END_TEST

START_TEST(test_decide_class)
{
	struct retry_cfg c = cfg_base();
	int64_t delay;
	int o, want;

	for (o = 0; o < OUTCOME__COUNT; o++) {
		delay = -1;
		want = (c.retry_on & OUTCOME_BIT(o)) ? 0 : RETRY_E_CLASS;
		ck_assert_msg(retry_decide(&c, (enum outcome)o, 0, -1, 10000, 100, NULL, 0, NULL,
					   &delay) == want,
			      "outcome %s", outcome_name((enum outcome)o));
		if (want == 0)
			ck_assert_int_eq(delay, 500);
	}
	/* Invalid output is never retried, even when listed. */
	c.retry_on = ~0u;
	ck_assert_int_eq(retry_decide(&c, OUTCOME_VALIDATION_FORMAT, 0, -1, 10000, 100, NULL, 0,
				      NULL, &delay),
			 RETRY_E_CLASS);
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_LOW_CONFIDENCE, 0, -1, 10000, 100, NULL, 0, NULL, &delay),
		RETRY_E_CLASS);
	ck_assert_int_eq(retry_decide(&c, OUTCOME_OK, 0, -1, 10000, 100, NULL, 0, NULL, &delay),
			 RETRY_E_CLASS);
	ck_assert_int_eq(retry_decide(&c, OUTCOME_FIRST_BYTE_TIMEOUT, 0, -1, 10000, 100, NULL, 0,
				      NULL, &delay),
			 0);
}
END_TEST

START_TEST(test_decide_exhausted)
{
	struct retry_cfg c = cfg_base();
	int64_t delay = -1;

	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_5XX, 1, -1, 10000, 100, NULL, 0, NULL, &delay), 0);
	ck_assert_int_eq(delay, 1000); /* the second retry's backoff */
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_5XX, 2, -1, 10000, 100, NULL, 0, NULL, &delay),
		RETRY_E_EXHAUSTED);
	c.max_retries = 0;
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_5XX, 0, -1, 10000, 100, NULL, 0, NULL, &delay),
		RETRY_E_EXHAUSTED);
	/* Class is checked first. */
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_4XX, 5, -1, 10000, 100, NULL, 0, NULL, &delay),
		RETRY_E_CLASS);
}
END_TEST

START_TEST(test_decide_deadline)
{
	struct retry_cfg c = cfg_base();
	int64_t delay = -1;

	/* remaining - backoff >= min_attempt, inclusive. */
	ck_assert_int_eq(retry_decide(&c, OUTCOME_RESET, 0, -1, 600, 100, NULL, 0, NULL, &delay),
			 0);
	ck_assert_int_eq(delay, 500);
	ck_assert_int_eq(retry_decide(&c, OUTCOME_RESET, 0, -1, 599, 100, NULL, 0, NULL, &delay),
			 RETRY_E_DEADLINE);
	ck_assert_int_eq(retry_decide(&c, OUTCOME_RESET, 0, -1, 0, 100, NULL, 0, NULL, &delay),
			 RETRY_E_DEADLINE);
	/* No backoff: only the attempt itself must fit. */
	c.backoff = BACKOFF_NONE;
	ck_assert_int_eq(retry_decide(&c, OUTCOME_RESET, 0, -1, 100, 100, NULL, 0, NULL, &delay),
			 0);
	ck_assert_int_eq(delay, 0);
	ck_assert_int_eq(retry_decide(&c, OUTCOME_RESET, 0, -1, 99, 100, NULL, 0, NULL, &delay),
			 RETRY_E_DEADLINE);
	/* Exhausted is reported before deadline. */
	ck_assert_int_eq(retry_decide(&c, OUTCOME_RESET, 2, -1, 0, 100, NULL, 0, NULL, &delay),
			 RETRY_E_EXHAUSTED);
}
END_TEST

START_TEST(test_decide_retry_after)
{
	struct retry_cfg c = cfg_base();
	int64_t delay = -1;

	/* Retry-After longer than the backoff and fitting: waited. */
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_429, 0, 2000, 3000, 100, NULL, 0, NULL, &delay), 0);
	ck_assert_int_eq(delay, 2000);
	/* Shorter than the backoff: the backoff wins. */
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_429, 0, 100, 3000, 100, NULL, 0, NULL, &delay), 0);
	ck_assert_int_eq(delay, 500);
	/* Not fitting: stop at once. */
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_429, 0, 5000, 3000, 100, NULL, 0, NULL, &delay),
		RETRY_E_DEADLINE);
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_429, 0, 2901, 3000, 100, NULL, 0, NULL, &delay),
		RETRY_E_DEADLINE);
	ck_assert_int_eq(retry_decide(&c, OUTCOME_HTTP_429, 0, INT64_MAX / 2, 3000, 100, NULL, 0,
				      NULL, &delay),
			 RETRY_E_DEADLINE);
	/* Not honoured: ignored. */
	c.honor_retry_after = false;
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_429, 0, 5000, 3000, 100, NULL, 0, NULL, &delay), 0);
	ck_assert_int_eq(delay, 500);
}
END_TEST

START_TEST(test_decide_budget)
{
	struct retry_cfg c = cfg_base();
	struct retry_budget rb;
	int64_t delay = -1, calls, retries;
	int i;

	c.budget_min_per_s = 0;
	retry_budget_init(&rb);
	/* No calls, no floor: no token. */
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_5XX, 0, -1, 10000, 100, &rb, 0, NULL, &delay),
		RETRY_E_BUDGET);
	for (i = 0; i < 10; i++)
		retry_budget_record_call(&rb, 0);
	/* Deadline is checked before budget, and does not spend a token. */
	ck_assert_int_eq(retry_decide(&c, OUTCOME_HTTP_5XX, 0, -1, 100, 100, &rb, 0, NULL, &delay),
			 RETRY_E_DEADLINE);
	retry_budget_counts(&rb, 0, &calls, &retries);
	ck_assert_int_eq(calls, 10);
	ck_assert_int_eq(retries, 0);
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_5XX, 0, -1, 10000, 100, &rb, 0, NULL, &delay), 0);
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_5XX, 0, -1, 10000, 100, &rb, 0, NULL, &delay), 0);
	ck_assert_int_eq(
		retry_decide(&c, OUTCOME_HTTP_5XX, 0, -1, 10000, 100, &rb, 0, NULL, &delay),
		RETRY_E_BUDGET);
	retry_budget_counts(&rb, 0, &calls, &retries);
	ck_assert_int_eq(retries, 2);
}
END_TEST

START_TEST(test_budget_ratio)
{
	struct retry_budget rb;
	int i;

	retry_budget_init(&rb);
	for (i = 0; i < 100; i++)
		retry_budget_record_call(&rb, 1000 + i * 50); /* spread over 5 s */
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 0, 6000), 0);
	ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 0, 6000), RETRY_E_BUDGET);
}
END_TEST

START_TEST(test_budget_floor)
{
	struct retry_budget rb;
	int i;

	retry_budget_init(&rb);
	for (i = 0; i < 100; i++)
		retry_budget_record_call(&rb, 0);
	/* max(0.2 x 100, 3 x 10) = 30 */
	for (i = 0; i < 30; i++)
		ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 3, 0), 0);
	ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 3, 0), RETRY_E_BUDGET);
	/* Without calls the floor alone applies. */
	retry_budget_init(&rb);
	for (i = 0; i < 30; i++)
		ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 3, 0), 0);
	ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 3, 0), RETRY_E_BUDGET);
}
END_TEST

START_TEST(test_budget_expiry)
{
	struct retry_budget rb;
	int64_t calls, retries;
	int i;

	retry_budget_init(&rb);
	for (i = 0; i < 30; i++)
		ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 3, 500), 0);
	ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 3, 9999), RETRY_E_BUDGET);
	/* Tokens taken in second 0 are gone 10 s later. */
	ck_assert_int_eq(retry_budget_try_acquire(&rb, 0.2, 3, 10000), 0);
	retry_budget_counts(&rb, 10000, &calls, &retries);
	ck_assert_int_eq(retries, 1);
	/* Calls expire the same way. */
	retry_budget_init(&rb);
	for (i = 0; i < 100; i++)
		retry_budget_record_call(&rb, 0);
	retry_budget_counts(&rb, 9999, &calls, NULL);
	ck_assert_int_eq(calls, 100);
	retry_budget_counts(&rb, 10000, &calls, NULL);
	ck_assert_int_eq(calls, 0);
	/* A wrapped bucket is reset, not added to. */
	retry_budget_record_call(&rb, 20500);
	retry_budget_counts(&rb, 20500, &calls, NULL);
	ck_assert_int_eq(calls, 1);
}
END_TEST

START_TEST(test_e_names)
{
	ck_assert_str_eq(retry_e_name(0), "ok");
	ck_assert_str_eq(retry_e_name(RETRY_E_CLASS), "class");
	ck_assert_str_eq(retry_e_name(RETRY_E_EXHAUSTED), "exhausted");
	ck_assert_str_eq(retry_e_name(RETRY_E_BUDGET), "budget");
	ck_assert_str_eq(retry_e_name(RETRY_E_DEADLINE), "deadline");
	ck_assert_ptr_null(retry_e_name(99));
	ck_assert_ptr_null(retry_e_name(-1));
}
END_TEST

static Suite *
retry_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"backoff_sequence", test_backoff_sequence},
		{"jitter_bounds", test_jitter_bounds},
		{"jitter_full", test_jitter_full},
		{"jitter_seeded_repeatable", test_jitter_seeded_repeatable},
		{"retry_after_delta", test_retry_after_delta},
		{"retry_after_date", test_retry_after_date},
		{"retry_after_garbage", test_retry_after_garbage},
		{"retry_after_random_bytes", test_retry_after_random_bytes},
		{"decide_class", test_decide_class},
		{"decide_exhausted", test_decide_exhausted},
		{"decide_deadline", test_decide_deadline},
		{"decide_retry_after", test_decide_retry_after},
		{"decide_budget", test_decide_budget},
		{"budget_ratio", test_budget_ratio},
		{"budget_floor", test_budget_floor},
		{"budget_expiry", test_budget_expiry},
		{"e_names", test_e_names},
	};
	Suite *s = suite_create("retry");
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
	SRunner *sr = srunner_create(retry_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
