/*
 * test_breaker: the breaker state machine with literal clocks.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "breaker.h"

static struct breaker_cfg
cfg_base(enum breaker_mode mode)
{
	struct breaker_cfg c;

	memset(&c, 0, sizeof c);
	c.mode = mode;
	c.failure_threshold = 3;
	c.window = 50;
	c.window_s = 10;
	c.min_calls = 20;
	c.failure_rate = 0.5;
	c.slow_call_ms = 0;
	c.slow_call_rate = 1.0;
	c.open_ms = 60000;
	c.half_open_probes = 1;
	c.open_multiplier = 1.0;
	c.max_open_ms = 600000;
	c.count_validation_failures = true;
	c.count_429 = true;
	return c;
}

/* One permitted attempt with a result; asserts it was admitted. */
static void
attempt(struct breaker *b, int64_t now, enum outcome o, int64_t duration)
{
	int probe = -1;

	ck_assert_int_eq(breaker_allow(b, now, &probe), 0);
	breaker_record(b, now, breaker_classify(&b->cfg, o), o, duration, probe);
}

static void
attempts(struct breaker *b, int64_t now, enum outcome o, int n)
{
	int i;

	for (i = 0; i < n; i++)
		attempt(b, now, o, 10);
}

/* A consecutive-3 breaker opened at now (open_ms from c). */
static void
open_breaker(struct breaker *b, const struct breaker_cfg *c, int64_t now)
{
	ck_assert_int_eq(breaker_init(b, c), 0);
	attempts(b, now, OUTCOME_HTTP_5XX, c->failure_threshold);
	ck_assert_int_eq(breaker_state(b, now), BREAKER_OPEN);
}

START_TEST(test_names)
{
	ck_assert_str_eq(breaker_state_name(BREAKER_CLOSED), "closed");
	ck_assert_str_eq(breaker_state_name(BREAKER_OPEN), "open");
	ck_assert_str_eq(breaker_state_name(BREAKER_HALF_OPEN), "half_open");
	ck_assert_str_eq(breaker_state_name(BREAKER_FORCED_OPEN), "forced_open");
	ck_assert_str_eq(breaker_state_name(BREAKER_FORCED_CLOSED), "forced_closed");
	ck_assert_ptr_null(breaker_state_name(BREAKER__COUNT));
}
END_TEST

START_TEST(test_consecutive_threshold)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 1000, OUTCOME_CONNECT_ERROR, 2);
	ck_assert_int_eq(breaker_state(&b, 1000), BREAKER_CLOSED);
	ck_assert_uint_eq(b.ntransitions, 0);
	attempt(&b, 1001, OUTCOME_TOTAL_TIMEOUT, 3000);
	ck_assert_int_eq(breaker_state(&b, 1001), BREAKER_OPEN);
	ck_assert_uint_eq(b.ntransitions, 1);
	ck_assert_str_eq(b.last.reason, "3 consecutive failures (total_timeout)");
	ck_assert_int_eq(breaker_admits(&b, 1002), BREAKER_E_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_consecutive_success_resets)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker_stats st;
	struct breaker b;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 2);
	attempt(&b, 0, OUTCOME_OK, 10);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 2);
	breaker_get_stats(&b, 0, &st);
	ck_assert_int_eq(st.consecutive_failures, 2);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	/* Ignored outcomes neither count nor reset. */
	attempts(&b, 0, OUTCOME_HTTP_4XX, 5);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	attempt(&b, 0, OUTCOME_RESET, 10);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_count_min_calls)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker b;

	c.failure_rate = 0.4;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 19);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	attempt(&b, 0, OUTCOME_HTTP_5XX, 10);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_OPEN);
	ck_assert_str_eq(b.last.reason, "failure rate 1.00 >= 0.40 over 20 calls");
	breaker_free(&b);
}
END_TEST

START_TEST(test_count_rate_exact)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	c.failure_rate = 0.4;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_OK, 30);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 19);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	attempt(&b, 0, OUTCOME_HTTP_5XX, 10); /* 20 / 50 = 0.40 */
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_OPEN);
	ck_assert_str_eq(b.last.reason, "failure rate 0.40 >= 0.40 over 50 calls");
	breaker_get_stats(&b, 0, &st);
	ck_assert_int_eq(st.calls_in_window, 50);
	ck_assert_double_eq_tol(st.failure_rate, 0.4, 1e-12);
	breaker_free(&b);
}
END_TEST

START_TEST(test_count_below_rate_and_ring)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	c.failure_rate = 0.4;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_OK, 31);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 19); /* 19 / 50 = 0.38 */
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	breaker_get_stats(&b, 0, &st);
	ck_assert_int_eq(st.calls_in_window, 50);
	ck_assert_double_eq_tol(st.failure_rate, 0.38, 1e-12);
	/* Successes roll out of the ring: 20 / 50 opens. */
	attempt(&b, 0, OUTCOME_HTTP_5XX, 10);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_count_ring_evicts_failures)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	c.window = 10;
	c.min_calls = 10;
	c.failure_rate = 0.5;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 4);
	attempts(&b, 0, OUTCOME_OK, 16); /* the 4 failures are gone */
	breaker_get_stats(&b, 0, &st);
	ck_assert_int_eq(st.calls_in_window, 10);
	ck_assert_double_eq(st.failure_rate, 0.0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 4);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	attempt(&b, 0, OUTCOME_HTTP_5XX, 10);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_time_window)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_TIME);
	struct breaker_stats st;
	struct breaker b;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 500, OUTCOME_HTTP_5XX, 15); /* second 0 */
	ck_assert_int_eq(breaker_state(&b, 500), BREAKER_CLOSED);
	/* At 10.0 s second 0 has left the 10 s window. */
	attempts(&b, 10000, OUTCOME_HTTP_5XX, 10);
	breaker_get_stats(&b, 10000, &st);
	ck_assert_int_eq(st.calls_in_window, 10);
	ck_assert_int_eq(breaker_state(&b, 10000), BREAKER_CLOSED);
	attempts(&b, 10500, OUTCOME_OK, 9);
	ck_assert_int_eq(breaker_state(&b, 10500), BREAKER_CLOSED);
	attempt(&b, 10999, OUTCOME_OK, 10); /* 10 / 20 = 0.5 */
	ck_assert_int_eq(breaker_state(&b, 10999), BREAKER_OPEN);
	ck_assert_str_eq(b.last.reason, "failure rate 0.50 >= 0.50 over 20 calls in 10 s");
	breaker_free(&b);
}
END_TEST

START_TEST(test_time_window_edge)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_TIME);
	struct breaker_stats st;
	struct breaker b;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 15);
	/* 9.999 s later second 0 still counts. */
	attempts(&b, 9999, OUTCOME_HTTP_5XX, 4);
	breaker_get_stats(&b, 9999, &st);
	ck_assert_int_eq(st.calls_in_window, 19);
	ck_assert_int_eq(breaker_state(&b, 9999), BREAKER_CLOSED);
	attempt(&b, 9999, OUTCOME_HTTP_5XX, 10);
	ck_assert_int_eq(breaker_state(&b, 9999), BREAKER_OPEN);
	breaker_get_stats(&b, 20000, &st);
	ck_assert_int_eq(st.calls_in_window, 0);
	breaker_free(&b);
}
END_TEST

START_TEST(test_slow_calls)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	c.window = 4;
	c.min_calls = 4;
	c.failure_rate = 1.0;
	c.slow_call_ms = 1000;
	c.slow_call_rate = 0.5;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	/* Exactly slow_call_ms is not slow. */
	attempt(&b, 0, OUTCOME_OK, 1000);
	attempt(&b, 0, OUTCOME_OK, 1000);
	attempt(&b, 0, OUTCOME_OK, 1001);
	attempt(&b, 0, OUTCOME_OK, 5);
	breaker_get_stats(&b, 0, &st);
	ck_assert_double_eq_tol(st.slow_call_rate, 0.25, 1e-12);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	/* 2 slow of 4: the rate threshold is inclusive. */
	attempt(&b, 0, OUTCOME_OK, 1001);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_OPEN);
	ck_assert_str_eq(b.last.reason,
			 "slow call rate 0.50 >= 0.50 over 4 calls (slow > 1000 ms)");
	breaker_free(&b);
}
END_TEST

START_TEST(test_slow_not_tracked)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	c.window = 4;
	c.min_calls = 4;
	c.slow_call_ms = 0;
	c.slow_call_rate = 0.1;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempt(&b, 0, OUTCOME_OK, 100000);
	attempt(&b, 0, OUTCOME_OK, 100000);
	attempt(&b, 0, OUTCOME_OK, 100000);
	attempt(&b, 0, OUTCOME_OK, 100000);
	breaker_get_stats(&b, 0, &st);
	ck_assert_double_eq(st.slow_call_rate, 0.0);
	ck_assert_int_eq(breaker_state(&b, 0), BREAKER_CLOSED);
	breaker_free(&b);
}
END_TEST

START_TEST(test_slow_time_mode)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_TIME);
	struct breaker b;

	c.min_calls = 2;
	c.failure_rate = 1.0;
	c.slow_call_ms = 200;
	c.slow_call_rate = 1.0;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempt(&b, 0, OUTCOME_OK, 201);
	attempt(&b, 1000, OUTCOME_OK, 200);
	attempt(&b, 11000, OUTCOME_OK, 300); /* the fast call at 1 s has expired */
	ck_assert_int_eq(breaker_state(&b, 11000), BREAKER_CLOSED);
	attempt(&b, 11500, OUTCOME_OK, 300);
	ck_assert_int_eq(breaker_state(&b, 11500), BREAKER_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_half_open_timing)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;

	open_breaker(&b, &c, 1000);
	ck_assert_int_eq(breaker_opened_at(&b), 1000);
	ck_assert_int_eq(breaker_half_open_at(&b), 61000);
	ck_assert_int_eq(breaker_admits(&b, 60999), BREAKER_E_OPEN);
	ck_assert_int_eq(breaker_state(&b, 60999), BREAKER_OPEN);
	ck_assert_uint_eq(b.ntransitions, 1);
	ck_assert_int_eq(breaker_admits(&b, 61000), 0);
	ck_assert_int_eq(b.state, BREAKER_HALF_OPEN);
	ck_assert_uint_eq(b.ntransitions, 2);
	ck_assert_str_eq(b.last.reason, "open time elapsed");
	ck_assert_int_eq(b.last.from, BREAKER_OPEN);
	ck_assert_int_eq(b.last.to, BREAKER_HALF_OPEN);
	ck_assert_int_eq(b.last.at_ms, 61000);
	ck_assert_int_eq(breaker_half_open_at(&b), -1);
	ck_assert_int_eq(breaker_opened_at(&b), 1000);
	breaker_free(&b);
}
END_TEST

START_TEST(test_half_open_state_query)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;

	open_breaker(&b, &c, 0);
	ck_assert_int_eq(breaker_state(&b, 60000), BREAKER_HALF_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_probe_limit)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	int probe, i;

	c.half_open_probes = 3;
	open_breaker(&b, &c, 0);
	for (i = 0; i < 3; i++) {
		probe = 0;
		ck_assert_int_eq(breaker_allow(&b, 60000, &probe), 0);
		ck_assert_int_eq(probe, 1);
	}
	ck_assert_int_eq(breaker_admits(&b, 60000), BREAKER_E_OPEN);
	probe = -1;
	ck_assert_int_eq(breaker_allow(&b, 60000, &probe), BREAKER_E_OPEN);
	ck_assert_int_eq(probe, 0);
	/* An ignored probe result frees its slot and changes nothing else. */
	breaker_record(&b, 60001, BREAKER_IGNORE, OUTCOME_HTTP_4XX, 10, 1);
	ck_assert_int_eq(b.state, BREAKER_HALF_OPEN);
	ck_assert_int_eq(breaker_allow(&b, 60001, &probe), 0);
	ck_assert_int_eq(probe, 1);
	ck_assert_int_eq(breaker_allow(&b, 60001, &probe), BREAKER_E_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_probe_failure_backoff)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	int probe;

	c.open_ms = 1000;
	c.open_multiplier = 2.0;
	c.max_open_ms = 5000;
	open_breaker(&b, &c, 0);
	ck_assert_int_eq(breaker_half_open_at(&b), 1000);

	ck_assert_int_eq(breaker_allow(&b, 1000, &probe), 0);
	breaker_record(&b, 1000, BREAKER_FAILURE, OUTCOME_HTTP_5XX, 10, probe);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_str_eq(b.last.reason, "probe failed (http_5xx)");
	ck_assert_int_eq(breaker_half_open_at(&b), 3000); /* 1000 x 2^1 */
	ck_assert_int_eq(breaker_admits(&b, 2999), BREAKER_E_OPEN);

	ck_assert_int_eq(breaker_allow(&b, 3000, &probe), 0);
	breaker_record(&b, 3000, BREAKER_FAILURE, OUTCOME_CONNECT_ERROR, 10, probe);
	ck_assert_int_eq(breaker_half_open_at(&b), 7000); /* 1000 x 2^2 */

	ck_assert_int_eq(breaker_allow(&b, 7000, &probe), 0);
	breaker_record(&b, 7000, BREAKER_FAILURE, OUTCOME_RESET, 10, probe);
	ck_assert_int_eq(breaker_half_open_at(&b), 12000); /* 8000 capped at 5000 */

	/* Closing resets n: the next open lasts open_ms again. */
	ck_assert_int_eq(breaker_allow(&b, 12000, &probe), 0);
	breaker_record(&b, 12000, BREAKER_SUCCESS, OUTCOME_OK, 10, probe);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	attempts(&b, 13000, OUTCOME_HTTP_5XX, 3);
	ck_assert_int_eq(breaker_half_open_at(&b), 14000);
	breaker_free(&b);
}
END_TEST

START_TEST(test_probes_close)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker_stats st;
	struct breaker b;
	int p1, p2;

	c.half_open_probes = 2;
	open_breaker(&b, &c, 0);
	ck_assert_int_eq(breaker_allow(&b, 60000, &p1), 0);
	ck_assert_int_eq(breaker_allow(&b, 60000, &p2), 0);
	breaker_record(&b, 60100, BREAKER_SUCCESS, OUTCOME_OK, 100, p1);
	ck_assert_int_eq(b.state, BREAKER_HALF_OPEN);
	breaker_record(&b, 60200, BREAKER_SUCCESS, OUTCOME_OK, 200, p2);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	ck_assert_str_eq(b.last.reason, "2 probes succeeded");
	ck_assert_int_eq(breaker_opened_at(&b), -1);
	ck_assert_int_eq(breaker_half_open_at(&b), -1);
	breaker_get_stats(&b, 60200, &st);
	ck_assert_int_eq(st.consecutive_failures, 0);
	ck_assert_int_eq(b.probes_inflight, 0);
	breaker_free(&b);
}
END_TEST

START_TEST(test_one_probe_closes)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;
	int probe;

	c.min_calls = 3;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 3);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_int_eq(breaker_allow(&b, 60000, &probe), 0);
	ck_assert_int_eq(probe, 1);
	breaker_record(&b, 60000, BREAKER_SUCCESS, OUTCOME_OK, 10, probe);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	ck_assert_str_eq(b.last.reason, "1 probe succeeded");
	breaker_get_stats(&b, 60000, &st);
	ck_assert_int_eq(st.calls_in_window, 0);
	breaker_free(&b);
}
END_TEST

START_TEST(test_probe_cancel)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	int probe;

	open_breaker(&b, &c, 0);
	ck_assert_int_eq(breaker_allow(&b, 60000, &probe), 0);
	breaker_cancel(&b, 60010, probe);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_str_eq(b.last.reason, "probe cancelled");
	ck_assert_int_eq(b.probes_inflight, 0);
	ck_assert_int_eq(breaker_half_open_at(&b), 120010);
	breaker_free(&b);
}
END_TEST

START_TEST(test_cancel_non_probe)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	int probe;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	ck_assert_int_eq(breaker_allow(&b, 0, &probe), 0);
	ck_assert_int_eq(probe, 0);
	breaker_cancel(&b, 0, probe);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	ck_assert_uint_eq(b.ntransitions, 0);
	breaker_free(&b);
}
END_TEST

START_TEST(test_late_finishers)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	int probe;

	open_breaker(&b, &c, 0);
	/* Attempts begun before the breaker opened finish while it is open. */
	breaker_record(&b, 10, BREAKER_SUCCESS, OUTCOME_OK, 10, 0);
	breaker_record(&b, 10, BREAKER_FAILURE, OUTCOME_HTTP_5XX, 10, 0);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(b.ntransitions, 1);
	ck_assert_int_eq(breaker_half_open_at(&b), 60000);
	/* ... or while it is half-open: only probes decide. */
	ck_assert_int_eq(breaker_allow(&b, 60000, &probe), 0);
	breaker_record(&b, 60001, BREAKER_FAILURE, OUTCOME_HTTP_5XX, 10, 0);
	ck_assert_int_eq(b.state, BREAKER_HALF_OPEN);
	breaker_record(&b, 60002, BREAKER_SUCCESS, OUTCOME_OK, 10, probe);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	breaker_free(&b);
}
END_TEST

START_TEST(test_forced_open)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	int probe;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	breaker_force(&b, 5, BREAKER_FORCE_OPEN, "maintenance");
	ck_assert_int_eq(breaker_state(&b, 5), BREAKER_FORCED_OPEN);
	ck_assert_str_eq(b.last.reason, "forced open by operator: maintenance");
	ck_assert_int_eq(b.last.from, BREAKER_CLOSED);
	ck_assert_int_eq(breaker_opened_at(&b), 5);
	ck_assert_int_eq(breaker_half_open_at(&b), -1);
	/* Never times out into half-open. */
	ck_assert_int_eq(breaker_allow(&b, 10000000, &probe), BREAKER_E_OPEN);
	ck_assert_int_eq(breaker_state(&b, 10000000), BREAKER_FORCED_OPEN);
	/* Forcing the same state again is no transition. */
	breaker_force(&b, 6, BREAKER_FORCE_OPEN, "again");
	ck_assert_uint_eq(b.ntransitions, 1);
	breaker_force(&b, 7, BREAKER_FORCE_AUTO, NULL);
	ck_assert_int_eq(breaker_state(&b, 7), BREAKER_CLOSED);
	ck_assert_str_eq(b.last.reason, "reset to auto by operator");
	ck_assert_int_eq(breaker_admits(&b, 7), 0);
	breaker_free(&b);
}
END_TEST

START_TEST(test_forced_closed)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker_stats st;
	struct breaker b;

	open_breaker(&b, &c, 0);
	breaker_force(&b, 1, BREAKER_FORCE_CLOSED, "trust me");
	ck_assert_int_eq(breaker_state(&b, 1), BREAKER_FORCED_CLOSED);
	ck_assert_str_eq(b.last.reason, "forced closed by operator: trust me");
	ck_assert_int_eq(breaker_opened_at(&b), -1);
	attempts(&b, 2, OUTCOME_HTTP_5XX, 100);
	ck_assert_int_eq(breaker_state(&b, 2), BREAKER_FORCED_CLOSED);
	breaker_get_stats(&b, 2, &st);
	ck_assert_int_eq(st.consecutive_failures, 103);
	/* Auto: closed with empty windows, not straight back open. */
	breaker_force(&b, 3, BREAKER_FORCE_AUTO, "done");
	ck_assert_int_eq(breaker_state(&b, 3), BREAKER_CLOSED);
	ck_assert_str_eq(b.last.reason, "reset to auto by operator: done");
	breaker_get_stats(&b, 3, &st);
	ck_assert_int_eq(st.consecutive_failures, 0);
	attempts(&b, 4, OUTCOME_HTTP_5XX, 2);
	ck_assert_int_eq(breaker_state(&b, 4), BREAKER_CLOSED);
	breaker_free(&b);
}
END_TEST

START_TEST(test_force_auto_from_open)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	c.min_calls = 5;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 5);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	breaker_force(&b, 1, BREAKER_FORCE_AUTO, "");
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	ck_assert_str_eq(b.last.reason, "reset to auto by operator");
	breaker_get_stats(&b, 1, &st);
	ck_assert_int_eq(st.calls_in_window, 0);
	ck_assert_int_eq(breaker_opened_at(&b), -1);
	breaker_free(&b);
}
END_TEST

START_TEST(test_classify)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	static const enum outcome failures[] = {
		OUTCOME_CONNECT_ERROR, OUTCOME_RESET,	 OUTCOME_FIRST_BYTE_TIMEOUT,
		OUTCOME_TOTAL_TIMEOUT, OUTCOME_HTTP_5XX, OUTCOME_INVALID_RESPONSE,
	};
	static const enum outcome validation[] = {
		OUTCOME_VALIDATION_FORMAT,
		OUTCOME_VALIDATION_SCHEMA,
		OUTCOME_VALIDATION_SEMANTIC,
		OUTCOME_LOW_CONFIDENCE,
	};
	size_t i;
	int on;

	for (on = 0; on <= 1; on++) {
		c.count_429 = on;
		c.count_validation_failures = on;
		ck_assert_int_eq(breaker_classify(&c, OUTCOME_OK), BREAKER_SUCCESS);
		for (i = 0; i < sizeof failures / sizeof failures[0]; i++)
			ck_assert_int_eq(breaker_classify(&c, failures[i]), BREAKER_FAILURE);
		ck_assert_int_eq(breaker_classify(&c, OUTCOME_HTTP_429),
				 on ? BREAKER_FAILURE : BREAKER_IGNORE);
		for (i = 0; i < sizeof validation / sizeof validation[0]; i++)
			ck_assert_int_eq(breaker_classify(&c, validation[i]),
					 on ? BREAKER_FAILURE : BREAKER_SUCCESS);
		ck_assert_int_eq(breaker_classify(&c, OUTCOME_HTTP_4XX), BREAKER_IGNORE);
	}
	/* Mixed flags are independent. */
	c.count_429 = true;
	c.count_validation_failures = false;
	ck_assert_int_eq(breaker_classify(&c, OUTCOME_HTTP_429), BREAKER_FAILURE);
	ck_assert_int_eq(breaker_classify(&c, OUTCOME_LOW_CONFIDENCE), BREAKER_SUCCESS);
}
END_TEST

START_TEST(test_transitions)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	int probe;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	ck_assert_uint_eq(b.ntransitions, 0);
	attempts(&b, 100, OUTCOME_FIRST_BYTE_TIMEOUT, 3);
	ck_assert_uint_eq(b.ntransitions, 1);
	ck_assert_int_eq(b.last.from, BREAKER_CLOSED);
	ck_assert_int_eq(b.last.to, BREAKER_OPEN);
	ck_assert_int_eq(b.last.at_ms, 100);
	ck_assert_str_eq(b.last.reason, "3 consecutive failures (first_byte_timeout)");
	/* Looking at the breaker repeatedly is not a transition. */
	breaker_state(&b, 200);
	breaker_admits(&b, 300);
	ck_assert_uint_eq(b.ntransitions, 1);
	ck_assert_int_eq(breaker_allow(&b, 60100, &probe), 0);
	ck_assert_uint_eq(b.ntransitions, 2);
	breaker_record(&b, 60200, BREAKER_FAILURE, OUTCOME_INVALID_RESPONSE, 10, probe);
	ck_assert_uint_eq(b.ntransitions, 3);
	ck_assert_int_eq(b.last.from, BREAKER_HALF_OPEN);
	ck_assert_int_eq(b.last.to, BREAKER_OPEN);
	ck_assert_str_eq(b.last.reason, "probe failed (invalid_response)");
	breaker_free(&b);
}
END_TEST

START_TEST(test_reason_truncated)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_CONSECUTIVE);
	struct breaker b;
	char reason[400];

	memset(reason, 'x', sizeof reason - 1);
	reason[sizeof reason - 1] = '\0';
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	breaker_force(&b, 0, BREAKER_FORCE_OPEN, reason);
	ck_assert_uint_eq(strlen(b.last.reason), sizeof b.last.reason - 1);
	breaker_free(&b);
}
END_TEST

START_TEST(test_reconfigure_keeps)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	c.min_calls = 10;
	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 4);
	attempts(&b, 0, OUTCOME_OK, 5);
	/* Same mode and window: counts survive, new thresholds apply. */
	c.failure_rate = 0.4;
	c.open_ms = 1000;
	ck_assert_int_eq(breaker_reconfigure(&b, &c, 0), 0);
	breaker_get_stats(&b, 0, &st);
	ck_assert_int_eq(st.calls_in_window, 9);
	attempt(&b, 0, OUTCOME_OK, 10); /* 4 / 10 */
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_int_eq(breaker_half_open_at(&b), 1000);
	breaker_free(&b);
}
END_TEST

START_TEST(test_reconfigure_resets)
{
	struct breaker_cfg c = cfg_base(BREAKER_MODE_COUNT);
	struct breaker_stats st;
	struct breaker b;

	ck_assert_int_eq(breaker_init(&b, &c), 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 5);
	/* A new window size starts empty. */
	c.window = 20;
	ck_assert_int_eq(breaker_reconfigure(&b, &c, 0), 0);
	breaker_get_stats(&b, 0, &st);
	ck_assert_int_eq(st.calls_in_window, 0);
	ck_assert_int_eq(b.ring_len, 20);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 3);
	/* A new mode starts empty too. */
	c.mode = BREAKER_MODE_TIME;
	ck_assert_int_eq(breaker_reconfigure(&b, &c, 0), 0);
	ck_assert_ptr_null(b.ring);
	ck_assert_int_eq(b.nbuckets, 10);
	breaker_get_stats(&b, 0, &st);
	ck_assert_int_eq(st.calls_in_window, 0);
	ck_assert_int_eq(st.consecutive_failures, 0);
	attempts(&b, 0, OUTCOME_HTTP_5XX, 20);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	/* State survives a reload. */
	c.mode = BREAKER_MODE_CONSECUTIVE;
	ck_assert_int_eq(breaker_reconfigure(&b, &c, 1), 0);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_ptr_null(b.buckets);
	ck_assert_int_eq(breaker_state(&b, 60000), BREAKER_HALF_OPEN);
	breaker_free(&b);
}
END_TEST

START_TEST(test_free_null)
{
	breaker_free(NULL);
}
END_TEST

static Suite *
breaker_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"names", test_names},
		{"consecutive_threshold", test_consecutive_threshold},
		{"consecutive_success_resets", test_consecutive_success_resets},
		{"count_min_calls", test_count_min_calls},
		{"count_rate_exact", test_count_rate_exact},
		{"count_below_rate_and_ring", test_count_below_rate_and_ring},
		{"count_ring_evicts_failures", test_count_ring_evicts_failures},
		{"time_window", test_time_window},
		{"time_window_edge", test_time_window_edge},
		{"slow_calls", test_slow_calls},
		{"slow_not_tracked", test_slow_not_tracked},
		{"slow_time_mode", test_slow_time_mode},
		{"half_open_timing", test_half_open_timing},
		{"half_open_state_query", test_half_open_state_query},
		{"probe_limit", test_probe_limit},
		{"probe_failure_backoff", test_probe_failure_backoff},
		{"probes_close", test_probes_close},
		{"one_probe_closes", test_one_probe_closes},
		{"probe_cancel", test_probe_cancel},
		{"cancel_non_probe", test_cancel_non_probe},
		{"late_finishers", test_late_finishers},
		{"forced_open", test_forced_open},
		{"forced_closed", test_forced_closed},
		{"force_auto_from_open", test_force_auto_from_open},
		{"classify", test_classify},
		{"transitions", test_transitions},
		{"reason_truncated", test_reason_truncated},
		{"reconfigure_keeps", test_reconfigure_keeps},
		{"reconfigure_resets", test_reconfigure_resets},
		{"free_null", test_free_null},
	};
	Suite *s = suite_create("breaker");
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
	SRunner *sr = srunner_create(breaker_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
