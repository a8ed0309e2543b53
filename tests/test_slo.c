/*
 * test_slo: minute ring, window sums, call classification, availabilities,
 * burn rates and error budget, with literal clocks.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "slo.h"

/* 2026-01-01T00:00:00Z, a minute boundary. */
#define T0     1767225600000LL
#define MIN_MS 60000LL

static const int all_windows[] = {5, 30, 60, 120, 360, 1440, 4320, 43200};
#define NWIN 8

static void
delta_calls(uint32_t d[SLO_FIELD__COUNT], uint32_t total, uint32_t service, uint32_t smart)
{
	memset(d, 0, sizeof(uint32_t) * SLO_FIELD__COUNT);
	d[SLO_TOTAL] = total;
	d[SLO_SERVICE_GOOD] = service;
	d[SLO_SMART_GOOD] = smart;
}

static struct slo_call
call_base(void)
{
	struct slo_call c;

	memset(&c, 0, sizeof c);
	c.http_status = 200;
	c.source = SOURCE_LLM;
	c.elapsed_ms = 1500;
	c.budget_ms = 6000;
	c.latency_ms = 2000;
	c.attempts = 1;
	return c;
}

START_TEST(test_minute_of)
{
	ck_assert_int_eq(slo_minute_of(T0), T0);
	ck_assert_int_eq(slo_minute_of(T0 + 59999), T0);
	ck_assert_int_eq(slo_minute_of(T0 + 60000), T0 + MIN_MS);
	ck_assert_int_eq(slo_minute_of(-1), -MIN_MS);
}
END_TEST

START_TEST(test_call_delta_service_vs_smart)
{
	struct slo_call c = call_base();
	uint32_t d[SLO_FIELD__COUNT];

	/* llm answer within budget and latency: good on both. */
	ck_assert_int_eq(slo_call_delta(&c, d), 0);
	ck_assert_uint_eq(d[SLO_TOTAL], 1);
	ck_assert_uint_eq(d[SLO_SERVICE_GOOD], 1);
	ck_assert_uint_eq(d[SLO_SMART_GOOD], 1);
	ck_assert_uint_eq(d[SLO_LATENCY_OK], 1);
	ck_assert_uint_eq(d[SLO_SRC_LLM], 1);
	ck_assert_uint_eq(d[SLO_ATTEMPTS], 1);

	/* rules answer: service good, not smart. */
	c.source = SOURCE_RULES;
	ck_assert_int_eq(slo_call_delta(&c, d), 0);
	ck_assert_uint_eq(d[SLO_SERVICE_GOOD], 1);
	ck_assert_uint_eq(d[SLO_SMART_GOOD], 0);
	ck_assert_uint_eq(d[SLO_SRC_RULES], 1);
	ck_assert_uint_eq(d[SLO_SRC_LLM], 0);

	/* backup counts as smart. */
	c.source = SOURCE_BACKUP;
	ck_assert_int_eq(slo_call_delta(&c, d), 0);
	ck_assert_uint_eq(d[SLO_SMART_GOOD], 1);
	ck_assert_uint_eq(d[SLO_SRC_BACKUP], 1);

	/* 202 queued: service good, not smart. */
	c = call_base();
	c.http_status = 202;
	c.source = SOURCE_NONE;
	ck_assert_int_eq(slo_call_delta(&c, d), 0);
	ck_assert_uint_eq(d[SLO_SERVICE_GOOD], 1);
	ck_assert_uint_eq(d[SLO_SMART_GOOD], 0);

	/* exhausted 503: counted, neither good. */
	c.http_status = 503;
	ck_assert_int_eq(slo_call_delta(&c, d), 0);
	ck_assert_uint_eq(d[SLO_TOTAL], 1);
	ck_assert_uint_eq(d[SLO_SERVICE_GOOD], 0);
	ck_assert_uint_eq(d[SLO_SMART_GOOD], 0);
}
END_TEST

START_TEST(test_smart_total_leaves_out_no_llm)
{
	struct slo_call c = call_base();
	struct slo_counts sum;
	struct slo_stats s;
	uint32_t d[SLO_FIELD__COUNT];
	double v = -1;
	int i;

	/* allow_llm: false answered by the rules: in total and service-good,
	 * out of smart_total. */
	c.source = SOURCE_RULES;
	c.no_llm = 1;
	ck_assert_int_eq(slo_call_delta(&c, d), 0);
	ck_assert_uint_eq(d[SLO_TOTAL], 1);
	ck_assert_uint_eq(d[SLO_NO_LLM], 1);
	ck_assert_uint_eq(d[SLO_SERVICE_GOOD], 1);
	ck_assert_uint_eq(d[SLO_SMART_GOOD], 0);
	ck_assert_str_eq(slo_field_column(SLO_NO_LLM), "no_llm");
	ck_assert_int_eq(slo_reason_no_llm("llm_disallowed"), 1);
	ck_assert_int_eq(slo_reason_no_llm("forced_level"), 0);
	ck_assert_int_eq(slo_reason_no_llm(NULL), 0);
	/* 9 llm answers and 1 allow_llm: false: smart 9/9, service 10/10. */
	memset(&sum, 0, sizeof sum);
	for (i = 0; i < SLO_FIELD__COUNT; i++)
		sum.v[i] = d[i];
	c = call_base();
	ck_assert_int_eq(slo_call_delta(&c, d), 0);
	for (i = 0; i < SLO_FIELD__COUNT; i++)
		sum.v[i] += 9 * (uint64_t)d[i];
	ck_assert_uint_eq(slo_total(&sum, SLO_KIND_SERVICE), 10);
	ck_assert_uint_eq(slo_total(&sum, SLO_KIND_SMART), 9);
	slo_stats_compute(&sum, &s);
	ck_assert_double_eq_tol(s.service_availability, 1.0, 1e-12);
	ck_assert_double_eq_tol(s.smart_availability, 1.0, 1e-12);
	ck_assert_int_eq(slo_metric_value(&sum, "smart_availability", &v), 0);
	ck_assert_double_eq_tol(v, 1.0, 1e-12);
	/* Every call said allow_llm: false: no smart denominator. */
	memset(&sum, 0, sizeof sum);
	sum.v[SLO_TOTAL] = 4;
	sum.v[SLO_NO_LLM] = 4;
	slo_stats_compute(&sum, &s);
	ck_assert(isnan(s.smart_availability));
	ck_assert_int_eq(slo_metric_value(&sum, "smart_availability", &v), -EDOM);
}
END_TEST

START_TEST(test_call_delta_caller_error_not_counted)
{
	struct slo_call c = call_base();
	uint32_t d[SLO_FIELD__COUNT];
	int i;

	c.http_status = 400;
	ck_assert_int_eq(slo_call_delta(&c, d), SLO_E_CALLER_ERROR);
	for (i = 0; i < SLO_FIELD__COUNT; i++)
		ck_assert_uint_eq(d[i], 0);
	c.http_status = 404;
	ck_assert_int_eq(slo_call_delta(&c, d), SLO_E_CALLER_ERROR);
	c.http_status = 429;
	ck_assert_int_eq(slo_call_delta(&c, d), SLO_E_CALLER_ERROR);
}
END_TEST

START_TEST(test_call_delta_budget_grace)
{
	struct slo_call c = call_base();
	uint32_t d[SLO_FIELD__COUNT];

	c.elapsed_ms = 6010; /* budget + 10 ms grace: still good */
	slo_call_delta(&c, d);
	ck_assert_uint_eq(d[SLO_SERVICE_GOOD], 1);
	ck_assert_uint_eq(d[SLO_LATENCY_OK], 0);
	c.elapsed_ms = 6011;
	slo_call_delta(&c, d);
	ck_assert_uint_eq(d[SLO_SERVICE_GOOD], 0);
	/* A late llm answer is still a smart answer. */
	ck_assert_uint_eq(d[SLO_SMART_GOOD], 1);
	c.elapsed_ms = 2000; /* latency_ok is elapsed <= latency_ms */
	slo_call_delta(&c, d);
	ck_assert_uint_eq(d[SLO_LATENCY_OK], 1);
	c.elapsed_ms = 2001;
	slo_call_delta(&c, d);
	ck_assert_uint_eq(d[SLO_LATENCY_OK], 0);
}
END_TEST

START_TEST(test_call_delta_rates_fields)
{
	struct slo_call c = call_base();
	uint32_t d[SLO_FIELD__COUNT];

	c.attempts = 3;
	c.retries = 2;
	c.timeouts = 2; /* two timed-out attempts: one call with a timeout */
	c.format_violations = 1;
	slo_call_delta(&c, d);
	ck_assert_uint_eq(d[SLO_TIMEOUTS], 1);
	ck_assert_uint_eq(d[SLO_RETRIES], 2);
	ck_assert_uint_eq(d[SLO_ATTEMPTS], 3);
	ck_assert_uint_eq(d[SLO_FORMAT_VIOLATIONS], 1);
}
END_TEST

START_TEST(test_windows_exact_boundaries)
{
	struct slo_ring r;
	struct slo_counts s[NWIN];
	uint32_t d[SLO_FIELD__COUNT];
	int64_t now = T0 + 100 * 24 * 60 * MIN_MS + 30000; /* mid-minute */
	int64_t cur = slo_minute_of(now);

	slo_ring_init(&r);
	/* One call in each of: now, 4 min ago, 5 min ago, 29, 30, 59, 60 min ago. */
	delta_calls(d, 1, 1, 1);
	slo_ring_add(&r, cur - 60 * MIN_MS, d);
	slo_ring_add(&r, cur - 59 * MIN_MS, d);
	slo_ring_add(&r, cur - 30 * MIN_MS, d);
	slo_ring_add(&r, cur - 29 * MIN_MS, d);
	slo_ring_add(&r, cur - 5 * MIN_MS, d);
	slo_ring_add(&r, cur - 4 * MIN_MS + 59999, d);
	slo_ring_add(&r, now, d);
	ck_assert_int_eq(r.n, 7);
	slo_ring_sums(&r, now, all_windows, NWIN, s);
	ck_assert_uint_eq(s[0].v[SLO_TOTAL], 2); /* 5m: now and 4 min ago */
	ck_assert_uint_eq(s[1].v[SLO_TOTAL], 4); /* 30m: + 5 and 29 min ago */
	ck_assert_uint_eq(s[2].v[SLO_TOTAL], 6); /* 1h: + 30 and 59 */
	ck_assert_uint_eq(s[3].v[SLO_TOTAL], 7); /* 2h: + 60 */
	ck_assert_uint_eq(s[7].v[SLO_TOTAL], 7);
	slo_ring_free(&r);
}
END_TEST

START_TEST(test_ring_merges_same_minute_and_orders)
{
	struct slo_ring r;
	struct slo_counts s[1];
	uint32_t d[SLO_FIELD__COUNT];
	int win = 10;

	slo_ring_init(&r);
	delta_calls(d, 1, 1, 0);
	slo_ring_add(&r, T0 + 5 * MIN_MS, d);
	slo_ring_add(&r, T0 + 5 * MIN_MS + 1, d);
	/* Late (out of order) minute goes before. */
	slo_ring_add(&r, T0 + 2 * MIN_MS, d);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.m[(r.head) % r.cap].minute, T0 + 2 * MIN_MS);
	ck_assert_uint_eq(r.m[(r.head + 1) % r.cap].v[SLO_TOTAL], 2);
	slo_ring_sums(&r, T0 + 6 * MIN_MS, &win, 1, s);
	ck_assert_uint_eq(s[0].v[SLO_TOTAL], 3);
	ck_assert_uint_eq(s[0].v[SLO_SERVICE_GOOD], 3);
	ck_assert_uint_eq(s[0].v[SLO_SMART_GOOD], 0);
	slo_ring_free(&r);
}
END_TEST

START_TEST(test_ring_30_days_then_expires)
{
	struct slo_ring r;
	struct slo_counts s[NWIN];
	uint32_t d[SLO_FIELD__COUNT];
	int64_t i, last = T0 + (int64_t)(SLO_MAX_MINUTES - 1) * MIN_MS;

	slo_ring_init(&r);
	delta_calls(d, 2, 2, 1);
	for (i = 0; i < SLO_MAX_MINUTES; i++)
		ck_assert_int_eq(slo_ring_add(&r, T0 + i * MIN_MS, d), 0);
	ck_assert_int_eq(r.n, SLO_MAX_MINUTES);
	ck_assert_int_le(r.cap, SLO_MAX_MINUTES + 1);
	slo_ring_sums(&r, last, all_windows, NWIN, s);
	ck_assert_uint_eq(s[0].v[SLO_TOTAL], 10);
	ck_assert_uint_eq(s[5].v[SLO_TOTAL], 2 * 1440);
	ck_assert_uint_eq(s[7].v[SLO_TOTAL], 2 * SLO_MAX_MINUTES);
	ck_assert_uint_eq(s[7].v[SLO_SMART_GOOD], SLO_MAX_MINUTES);
	/* One more minute pushes the oldest out. */
	ck_assert_int_eq(slo_ring_add(&r, last + MIN_MS, d), 0);
	ck_assert_int_eq(r.n, SLO_MAX_MINUTES);
	slo_ring_sums(&r, last + MIN_MS, all_windows, NWIN, s);
	ck_assert_uint_eq(s[7].v[SLO_TOTAL], 2 * SLO_MAX_MINUTES);
	/* Too old to keep. */
	ck_assert_int_eq(slo_ring_add(&r, T0, d), SLO_E_TOO_OLD);
	/* A day later with no traffic: the 5m window is empty, 30d shrinks. */
	slo_ring_expire(&r, last + 1441 * MIN_MS);
	ck_assert_int_eq(r.n, SLO_MAX_MINUTES - 1440);
	slo_ring_sums(&r, last + 1441 * MIN_MS, all_windows, NWIN, s);
	ck_assert_uint_eq(s[0].v[SLO_TOTAL], 0);
	ck_assert_uint_eq(s[7].v[SLO_TOTAL], 2 * (SLO_MAX_MINUTES - 1440));
	slo_ring_free(&r);
}
END_TEST

START_TEST(test_stats_availability_null_when_empty)
{
	struct slo_counts c;
	struct slo_stats s;

	memset(&c, 0, sizeof c);
	slo_stats_compute(&c, &s);
	ck_assert(isnan(s.service_availability));
	ck_assert(isnan(s.smart_availability));
	ck_assert(isnan(s.retry_rate));
	c.v[SLO_TOTAL] = 10;
	c.v[SLO_SERVICE_GOOD] = 10;
	c.v[SLO_SMART_GOOD] = 7;
	c.v[SLO_LATENCY_OK] = 9;
	c.v[SLO_TIMEOUTS] = 1;
	c.v[SLO_ATTEMPTS] = 20;
	c.v[SLO_RETRIES] = 5;
	c.v[SLO_FORMAT_VIOLATIONS] = 2;
	slo_stats_compute(&c, &s);
	ck_assert_double_eq_tol(s.service_availability, 1.0, 1e-12);
	ck_assert_double_eq_tol(s.smart_availability, 0.7, 1e-12);
	ck_assert_double_eq_tol(s.latency_ok, 0.9, 1e-12);
	ck_assert_double_eq_tol(s.timeout_rate, 0.1, 1e-12);
	ck_assert_double_eq_tol(s.retry_rate, 0.25, 1e-12);
	ck_assert_double_eq_tol(s.format_violation_rate, 0.1, 1e-12);
}
END_TEST

START_TEST(test_metric_values)
{
	struct slo_counts c;
	double v = -1;

	memset(&c, 0, sizeof c);
	ck_assert_int_eq(slo_metric_value(&c, "smart_availability", &v), -EDOM);
	ck_assert_int_eq(slo_metric_value(&c, "no_such_metric", &v), -EINVAL);
	c.v[SLO_TOTAL] = 8;
	c.v[SLO_SRC_LLM] = 6;
	c.v[SLO_SRC_RULES] = 2;
	c.v[SLO_SMART_GOOD] = 6;
	ck_assert_int_eq(slo_metric_value(&c, "degraded_rate", &v), 0);
	ck_assert_double_eq_tol(v, 0.25, 1e-12);
	ck_assert_int_eq(slo_metric_value(&c, "rules_rate", &v), 0);
	ck_assert_double_eq_tol(v, 0.25, 1e-12);
	ck_assert_int_eq(slo_metric_value(&c, "smart_availability", &v), 0);
	ck_assert_double_eq_tol(v, 0.75, 1e-12);
	c.v[SLO_REVIEW_DECIDED] = 4;
	c.v[SLO_REVIEW_CORRECTED] = 1;
	ck_assert_int_eq(slo_metric_value(&c, "review_diff_rate", &v), 0);
	ck_assert_double_eq_tol(v, 0.25, 1e-12);
	ck_assert_int_eq(slo_metric_value(&c, "shadow_agreement", &v), -EDOM);
}
END_TEST

START_TEST(test_burn_rate_and_budget)
{
	/* 1000 calls, 999 good, target 0.999: burning exactly the budget. */
	ck_assert_double_eq_tol(slo_burn_rate(999, 1000, 0.999), 1.0, 1e-9);
	ck_assert_double_eq_tol(slo_budget_remaining(999, 1000, 0.999), 0.0, 1e-9);
	/* 7/10 smart good, target 0.95: error 0.3 / 0.05 = 6x; remaining 1 - 3/0.5 = -5. */
	ck_assert_double_eq_tol(slo_burn_rate(7, 10, 0.95), 6.0, 1e-9);
	ck_assert_double_eq_tol(slo_budget_remaining(7, 10, 0.95), -5.0, 1e-9);
	/* All good: full budget left, no burn. */
	ck_assert_double_eq_tol(slo_burn_rate(10, 10, 0.9), 0.0, 1e-12);
	ck_assert_double_eq_tol(slo_budget_remaining(10, 10, 0.9), 1.0, 1e-12);
	/* No data / a target of 1 have no budget arithmetic. */
	ck_assert(isnan(slo_burn_rate(0, 0, 0.99)));
	ck_assert(isnan(slo_budget_remaining(0, 0, 0.99)));
	ck_assert(isnan(slo_burn_rate(5, 10, 1.0)));
}
END_TEST

START_TEST(test_burn_factor_reachable)
{
	/* 0.999: 14.4 x 0.001 = 0.0144 <= 1 */
	ck_assert_int_eq(slo_burn_factor_reachable(14.4, 0.999), 1);
	/* 0.95: 14.4 x 0.05 = 0.72 */
	ck_assert_int_eq(slo_burn_factor_reachable(14.4, 0.95), 1);
	/* 0.9: 14.4 x 0.1 = 1.44 > 1: even a total outage burns only 10x */
	ck_assert_int_eq(slo_burn_factor_reachable(14.4, 0.9), 0);
	ck_assert_int_eq(slo_burn_factor_reachable(6, 0.9), 1);
	/* 0.8: 6 x 0.2 = 1.2 */
	ck_assert_int_eq(slo_burn_factor_reachable(6, 0.8), 0);
	/* exactly 1: a total outage reaches it */
	ck_assert_int_eq(slo_burn_factor_reachable(10, 0.9), 1);
}
END_TEST

static Suite *
slo_suite(void)
{
	Suite *s = suite_create("slo");
	TCase *tc;

	tc = tcase_create("minute");
	tcase_add_test(tc, test_minute_of);
	suite_add_tcase(s, tc);
	tc = tcase_create("classify");
	tcase_add_test(tc, test_call_delta_service_vs_smart);
	tcase_add_test(tc, test_call_delta_caller_error_not_counted);
	tcase_add_test(tc, test_call_delta_budget_grace);
	tcase_add_test(tc, test_call_delta_rates_fields);
	tcase_add_test(tc, test_smart_total_leaves_out_no_llm);
	suite_add_tcase(s, tc);
	tc = tcase_create("ring");
	tcase_add_test(tc, test_windows_exact_boundaries);
	tcase_add_test(tc, test_ring_merges_same_minute_and_orders);
	tcase_add_test(tc, test_ring_30_days_then_expires);
	suite_add_tcase(s, tc);
	tc = tcase_create("ratios");
	tcase_add_test(tc, test_stats_availability_null_when_empty);
	tcase_add_test(tc, test_metric_values);
	tcase_add_test(tc, test_burn_rate_and_budget);
	tcase_add_test(tc, test_burn_factor_reachable);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(slo_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
