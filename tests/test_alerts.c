/*
 * test_alerts: rule building from a config, threshold and burn-rate
 * conditions, min_calls, and the inactive -> pending -> firing -> resolved
 * state machine with literal clocks.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alerts.h"
#include "config.h"

#define T0 1767225600000LL

static const char *cfg_json =
	"{\"listen\": \"127.0.0.1:0\", \"database\": \"x.db\","
	" \"backends\": [{\"name\": \"b\", \"url\": \"http://127.0.0.1:9/v1/chat/completions\","
	"   \"model\": \"m\"}],"
	" \"routes\": [{\"name\": \"intent\", \"targets\": [{\"backend\": \"b\", \"weight\": 1}],"
	"   \"prompt\": {\"user\": \"{{input}}\"},"
	"   \"slo\": {\"service_availability\": 0.999, \"smart_availability\": 0.9,"
	"     \"latency_ms\": 2000, \"latency_target\": 0.99, \"burn_rate_alerts\": true,"
	"     \"burn_rate_min_calls\": 20,"
	"     \"alerts\": [{\"name\": \"smart-low\", \"metric\": \"smart_availability\", \"op\": "
	"\"<\","
	"       \"value\": 0.9, \"for_s\": 600, \"window\": \"5m\", \"severity\": \"page\"},"
	"       {\"name\": \"retries\", \"metric\": \"retry_rate\", \"op\": \">=\", \"value\": "
	"0.05,"
	"        \"for_s\": 0, \"window\": \"1h\", \"min_calls\": 3}]}},"
	"  {\"name\": \"plain\", \"targets\": [{\"backend\": \"b\", \"weight\": 1}],"
	"   \"prompt\": {\"user\": \"{{input}}\"}}]}";

static struct config *
load_cfg(void)
{
	struct config *c = NULL;
	char *cause = NULL;
	int r = config_load_string(cfg_json, "/tmp", &c, &cause);

	if (r != 0)
		ck_abort_msg("config: %s", cause ? cause : "?");
	return c;
}

static struct alert_rule
threshold_rule(const char *metric, enum alert_op op, double value, int for_s, int min_calls)
{
	struct alert_rule r;

	memset(&r, 0, sizeof r);
	snprintf(r.name, sizeof r.name, "t");
	r.kind = ALERT_KIND_THRESHOLD;
	r.metric = metric;
	r.op = op;
	r.threshold = value;
	r.for_s = for_s;
	r.min_calls = min_calls;
	r.window_min = 5;
	r.reachable = 1;
	return r;
}

static struct slo_counts
counts(uint64_t total, uint64_t service, uint64_t smart)
{
	struct slo_counts c;

	memset(&c, 0, sizeof c);
	c.v[SLO_TOTAL] = total;
	c.v[SLO_SERVICE_GOOD] = service;
	c.v[SLO_SMART_GOOD] = smart;
	return c;
}

static const struct alert_rule *
find_rule(const struct alert_rule *rules, int n, const char *name, int route)
{
	int i;

	for (i = 0; i < n; i++)
		if (rules[i].route == route && strcmp(rules[i].name, name) == 0)
			return &rules[i];
	return NULL;
}

START_TEST(test_rules_build)
{
	struct config *c = load_cfg();
	struct alert_rule *rules = NULL;
	const struct alert_rule *r;
	int n = alert_rules_build(c, &rules);

	/* 2 threshold + 2 x 4 burn for "intent", nothing for "plain". */
	ck_assert_int_eq(n, 10);
	r = find_rule(rules, n, "smart-low", 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->kind, ALERT_KIND_THRESHOLD);
	ck_assert_int_eq(r->for_s, 600);
	ck_assert_int_eq(r->window_min, 5);
	ck_assert_int_eq(r->min_calls, 10); /* the default */
	ck_assert_int_eq(r->severity, SEVERITY_PAGE);
	r = find_rule(rules, n, "retries", 0);
	ck_assert_int_eq(r->min_calls, 3);
	ck_assert_int_eq(r->window_min, 60);

	r = find_rule(rules, n, "service-burn-1h", 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->kind, ALERT_KIND_BURN);
	ck_assert_double_eq(r->threshold, 14.4);
	ck_assert_int_eq(r->window_min, 60);
	ck_assert_int_eq(r->short_min, 5);
	ck_assert_int_eq(r->for_s, 0);
	ck_assert_int_eq(r->min_calls, 20);
	ck_assert_int_eq(r->severity, SEVERITY_PAGE);
	ck_assert_int_eq(r->reachable, 1);
	r = find_rule(rules, n, "service-burn-1d", 0);
	ck_assert_int_eq(r->window_min, 1440);
	ck_assert_int_eq(r->short_min, 120);
	ck_assert_int_eq(r->severity, SEVERITY_TICKET);
	r = find_rule(rules, n, "smart-burn-3d", 0);
	ck_assert_int_eq(r->window_min, 4320);
	ck_assert_int_eq(r->short_min, 360);
	ck_assert_double_eq(r->threshold, 1.0);
	/* Smart target 0.9: 14.4x can never fire (max burn is 10x), 6x can. */
	ck_assert_int_eq(find_rule(rules, n, "smart-burn-1h", 0)->reachable, 0);
	ck_assert_int_eq(find_rule(rules, n, "smart-burn-6h", 0)->reachable, 1);
	ck_assert_ptr_null(find_rule(rules, n, "smart-low", 1));
	free(rules);
	config_free(c);
}
END_TEST

START_TEST(test_pairs_short_is_twelfth)
{
	int i;

	for (i = 0; i < ALERT_NBURN_PAIRS; i++)
		ck_assert_int_eq(alert_burn_pairs[i].long_min, 12 * alert_burn_pairs[i].short_min);
}
END_TEST

START_TEST(test_threshold_condition_and_min_calls)
{
	struct alert_rule r = threshold_rule("smart_availability", ALERT_OP_LT, 0.9, 0, 10);
	struct slo_counts c = counts(9, 9, 0);
	double v;

	/* 9 calls, all rules answers: below min_calls, never true. */
	ck_assert_int_eq(alert_condition(&r, &c, NULL, &v), 0);
	ck_assert(isnan(v));
	c = counts(10, 10, 8);
	ck_assert_int_eq(alert_condition(&r, &c, NULL, &v), 1);
	ck_assert_double_eq_tol(v, 0.8, 1e-12);
	c = counts(10, 10, 9); /* 0.9 is not < 0.9 */
	ck_assert_int_eq(alert_condition(&r, &c, NULL, &v), 0);
	r.op = ALERT_OP_LE;
	ck_assert_int_eq(alert_condition(&r, &c, NULL, &v), 1);
	r = threshold_rule("retry_rate", ALERT_OP_GT, 0.05, 0, 0);
	c = counts(10, 10, 10);
	c.v[SLO_ATTEMPTS] = 0; /* no attempts: no retry rate, not true */
	ck_assert_int_eq(alert_condition(&r, &c, NULL, &v), 0);
	c.v[SLO_ATTEMPTS] = 20;
	c.v[SLO_RETRIES] = 2;
	ck_assert_int_eq(alert_condition(&r, &c, NULL, &v), 1);
	ck_assert_double_eq_tol(v, 0.1, 1e-12);
	r.op = ALERT_OP_GE;
	r.threshold = 0.1;
	ck_assert_int_eq(alert_condition(&r, &c, NULL, &v), 1);
}
END_TEST

static struct alert_rule
burn_rule(double factor, double target, int min_calls)
{
	struct alert_rule r;

	memset(&r, 0, sizeof r);
	snprintf(r.name, sizeof r.name, "service-burn-1h");
	r.kind = ALERT_KIND_BURN;
	r.metric = "service_burn_rate";
	r.slo = SLO_KIND_SERVICE;
	r.op = ALERT_OP_GT;
	r.threshold = factor;
	r.target = target;
	r.min_calls = min_calls;
	r.window_min = 60;
	r.short_min = 5;
	r.reachable = 1;
	return r;
}

START_TEST(test_burn_condition_needs_both_windows)
{
	struct alert_rule r = burn_rule(14.4, 0.99, 10);
	struct slo_counts lng, shrt;
	double v;

	/* long: 100 calls, 20 bad = 0.2 / 0.01 = 20x; short: 10, 5 bad = 50x. */
	lng = counts(100, 80, 80);
	shrt = counts(10, 5, 5);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 1);
	ck_assert_double_eq_tol(v, 20.0, 1e-9);
	/* The short window recovered (1 bad in 10 = 10x): no page. */
	shrt = counts(10, 9, 9);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 0);
	ck_assert_double_eq_tol(v, 10.0, 1e-9);
	/* Only the short window burns (a blip): no page either. */
	lng = counts(100, 90, 90); /* 10x */
	shrt = counts(10, 0, 0);   /* 100x */
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 0);
	/* No call in the short window: the burn has stopped. */
	lng = counts(100, 0, 0);
	shrt = counts(0, 0, 0);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 0);
	ck_assert(isnan(v));
	/* Below burn_rate_min_calls in the long window. */
	lng = counts(9, 0, 0);
	shrt = counts(9, 0, 0);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 0);
	/* Smart kind reads the smart counter. */
	r.slo = SLO_KIND_SMART;
	lng = counts(100, 100, 50);
	shrt = counts(10, 10, 0);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 1);
}
END_TEST

START_TEST(test_burn_min_calls_in_both_windows)
{
	struct alert_rule r = burn_rule(14.4, 0.99, 10);
	struct slo_counts lng, shrt;
	double v;

	/* A fresh start: the long window has enough calls, the short one 9. */
	lng = counts(100, 80, 80);
	shrt = counts(9, 0, 0);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 0);
	ck_assert(isnan(v));
	shrt = counts(10, 0, 0);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 1);
	/* Smart: 100 calls of which 95 said allow_llm: false leave 5 smart calls. */
	r.slo = SLO_KIND_SMART;
	lng = counts(100, 100, 0);
	lng.v[SLO_NO_LLM] = 95;
	shrt = counts(20, 20, 0);
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 0);
	ck_assert(isnan(v));
}
END_TEST

START_TEST(test_smart_burn_leaves_out_no_llm)
{
	struct alert_rule r = burn_rule(3.0, 0.95, 10);
	struct slo_counts lng, shrt;
	double v;

	/* 10 % of the calls said allow_llm: false, every other one is smart-good:
	 * counted in smart_total that is a 2x burn; left out, 0x. */
	r.slo = SLO_KIND_SMART;
	r.threshold = 1.0;
	lng = counts(1000, 1000, 900);
	lng.v[SLO_NO_LLM] = 100;
	shrt = counts(100, 100, 90);
	shrt.v[SLO_NO_LLM] = 10;
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 0);
	ck_assert_double_eq_tol(v, 0.0, 1e-12);
	/* Without the column it would burn at 2x. */
	lng.v[SLO_NO_LLM] = 0;
	shrt.v[SLO_NO_LLM] = 0;
	ck_assert_int_eq(alert_condition(&r, &lng, &shrt, &v), 1);
	ck_assert_double_eq_tol(v, 2.0, 1e-9);
}
END_TEST

START_TEST(test_lifecycle_for_duration)
{
	struct alert_rule r = threshold_rule("smart_availability", ALERT_OP_LT, 0.9, 600, 10);
	struct alert a;

	alert_init(&a, &r);
	ck_assert_int_eq(a.state, ALERT_INACTIVE);
	ck_assert_int_eq(alert_update(&a, 0, 0.95, T0), 0);
	ck_assert_int_eq(alert_update(&a, 1, 0.8, T0 + 1000), 1);
	ck_assert_int_eq(a.state, ALERT_PENDING);
	ck_assert_int_eq(a.last.from, ALERT_INACTIVE);
	ck_assert_int_eq(a.since_ms, T0 + 1000);
	/* 599 s later: still pending. */
	ck_assert_int_eq(alert_update(&a, 1, 0.8, T0 + 600000), 0);
	ck_assert_int_eq(a.state, ALERT_PENDING);
	/* 600 s: fires; the episode keeps its start. */
	ck_assert_int_eq(alert_update(&a, 1, 0.7, T0 + 601000), 1);
	ck_assert_int_eq(a.state, ALERT_FIRING);
	ck_assert_int_eq(a.last.from, ALERT_PENDING);
	ck_assert_double_eq_tol(a.last.value, 0.7, 1e-12);
	ck_assert_int_eq(a.since_ms, T0 + 1000);
	ck_assert_int_eq(alert_update(&a, 1, 0.7, T0 + 700000), 0);
	ck_assert_int_eq(alert_update(&a, 0, 0.95, T0 + 800000), 1);
	ck_assert_int_eq(a.state, ALERT_RESOLVED);
	ck_assert_int_eq(a.state_at_ms, T0 + 800000);
	ck_assert_uint_eq(a.ntransitions, 3);
	/* A new episode starts again from resolved. */
	ck_assert_int_eq(alert_update(&a, 1, 0.5, T0 + 900000), 1);
	ck_assert_int_eq(a.state, ALERT_PENDING);
	ck_assert_int_eq(a.since_ms, T0 + 900000);
}
END_TEST

START_TEST(test_lifecycle_pending_flap_goes_inactive)
{
	struct alert_rule r = threshold_rule("smart_availability", ALERT_OP_LT, 0.9, 60, 10);
	struct alert a;

	alert_init(&a, &r);
	alert_update(&a, 1, 0.8, T0);
	ck_assert_int_eq(alert_update(&a, 0, 0.95, T0 + 30000), 1);
	ck_assert_int_eq(a.state, ALERT_INACTIVE);
	ck_assert_int_eq(a.last.from, ALERT_PENDING);
	/* The for_s clock restarts. */
	alert_update(&a, 1, 0.8, T0 + 40000);
	ck_assert_int_eq(alert_update(&a, 1, 0.8, T0 + 99000), 0);
	ck_assert_int_eq(alert_update(&a, 1, 0.8, T0 + 100000), 1);
	ck_assert_int_eq(a.state, ALERT_FIRING);
}
END_TEST

START_TEST(test_burn_fires_at_once)
{
	struct alert_rule r = burn_rule(14.4, 0.99, 10);
	struct alert a;

	alert_init(&a, &r);
	ck_assert_int_eq(alert_update(&a, 1, 20.0, T0), 1);
	ck_assert_int_eq(a.state, ALERT_FIRING);
	ck_assert_int_eq(a.last.from, ALERT_INACTIVE);
	ck_assert_int_eq(a.since_ms, T0);
	ck_assert_int_eq(alert_update(&a, 0, 3.0, T0 + 1000), 1);
	ck_assert_int_eq(a.state, ALERT_RESOLVED);
}
END_TEST

START_TEST(test_restore_is_not_a_transition)
{
	struct alert_rule r = threshold_rule("smart_availability", ALERT_OP_LT, 0.9, 600, 10);
	struct alert a;

	alert_init(&a, &r);
	ck_assert_int_eq(alert_restore(&a, ALERT_RESOLVED, T0, T0), -EINVAL);
	ck_assert_int_eq(alert_restore(&a, ALERT_PENDING, T0, T0), 0);
	ck_assert_uint_eq(a.ntransitions, 0);
	ck_assert_int_eq(a.state, ALERT_PENDING);
	/* The for_s clock counts from the restored start. */
	ck_assert_int_eq(alert_update(&a, 1, 0.5, T0 + 600000), 1);
	ck_assert_int_eq(a.state, ALERT_FIRING);
}
END_TEST

START_TEST(test_labels)
{
	struct config *c = load_cfg();
	struct alert_rule *rules = NULL;
	const struct alert_rule *r;
	char buf[32];
	int n = alert_rules_build(c, &rules);

	r = find_rule(rules, n, "smart-low", 0);
	ck_assert_str_eq(r->alertname, "fusebox_smart_low");
	ck_assert_str_eq(r->kind_label, "smart_availability");
	ck_assert_str_eq(r->window_label, "5m");
	r = find_rule(rules, n, "smart-burn-6h", 0);
	ck_assert_str_eq(r->alertname, "fusebox_error_budget_burn");
	ck_assert_str_eq(r->kind_label, "smart");
	ck_assert_str_eq(r->window_label, "6h");
	r = find_rule(rules, n, "service-burn-3d", 0);
	ck_assert_str_eq(r->kind_label, "service");
	ck_assert_str_eq(r->window_label, "3d");
	alert_name_make("a.b c", buf, sizeof buf);
	ck_assert_str_eq(buf, "fusebox_a_b_c");
	alert_name_make("abcdefghijklmnopqrstuvwxyz", buf, 12);
	ck_assert_str_eq(buf, "fusebox_abc");
	alert_window_label(120, buf, sizeof buf);
	ck_assert_str_eq(buf, "2h");
	alert_window_label(4320, buf, sizeof buf);
	ck_assert_str_eq(buf, "3d");
	alert_window_label(5, buf, sizeof buf);
	ck_assert_str_eq(buf, "5m");
	free(rules);
	config_free(c);
}
END_TEST

START_TEST(test_names)
{
	enum alert_state s;

	ck_assert_str_eq(alert_state_name(ALERT_PENDING), "pending");
	ck_assert_str_eq(alert_state_name(ALERT_RESOLVED), "resolved");
	ck_assert_ptr_null(alert_state_name(ALERT__COUNT));
	ck_assert_int_eq(alert_state_parse("firing", &s), 0);
	ck_assert_int_eq(s, ALERT_FIRING);
	ck_assert_int_eq(alert_state_parse("fire", &s), -EINVAL);
	ck_assert_str_eq(alert_op_name(ALERT_OP_GE), ">=");
}
END_TEST

static Suite *
alerts_suite(void)
{
	Suite *s = suite_create("alerts");
	TCase *tc;

	tc = tcase_create("rules");
	tcase_add_test(tc, test_rules_build);
	tcase_add_test(tc, test_pairs_short_is_twelfth);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_labels);
	suite_add_tcase(s, tc);
	tc = tcase_create("condition");
	tcase_add_test(tc, test_threshold_condition_and_min_calls);
	tcase_add_test(tc, test_burn_condition_needs_both_windows);
	tcase_add_test(tc, test_burn_min_calls_in_both_windows);
	tcase_add_test(tc, test_smart_burn_leaves_out_no_llm);
	suite_add_tcase(s, tc);
	tc = tcase_create("lifecycle");
	tcase_add_test(tc, test_lifecycle_for_duration);
	tcase_add_test(tc, test_lifecycle_pending_flap_goes_inactive);
	tcase_add_test(tc, test_burn_fires_at_once);
	tcase_add_test(tc, test_restore_is_not_a_transition);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(alerts_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
