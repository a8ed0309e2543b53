/*
 * test_tui_cause: the console's causes (tui/model_cause.c) and the
 * daemon's history and audit answers (tui/model_hist.c), on literals.
 */
#include <check.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static void
clock_fixed(char *out, size_t outsz, int64_t wall_ms)
{
	snprintf(out, outsz, "T%lld", (long long)(wall_ms / 1000));
}

static struct events_v *
events(const char *json)
{
	struct events_v *e = NULL;
	char *cause = NULL;

	ck_assert_int_eq(model_parse_events(json, strlen(json), &e, &cause), 0);
	return e;
}

START_TEST(test_cause_short)
{
	char out[128];

	cause_short("3 consecutive failures (first_byte_timeout)", 1, out, sizeof out);
	ck_assert_str_eq(out, "3\xc3\x97 first_byte_timeout");
	cause_short("3 consecutive failures (first_byte_timeout)", 0, out, sizeof out);
	ck_assert_str_eq(out, "3x first_byte_timeout");
	cause_short("failure rate 0.53 >= 0.50 over 20 calls", 0, out, sizeof out);
	ck_assert_str_eq(out, "failures 53% of 20 calls");
	cause_short("slow call rate 0.80 >= 0.50 over 10 calls (slow > 900 ms)", 0, out,
		    sizeof out);
	ck_assert_str_eq(out, "slow 80% of 10 calls");
	cause_short("probe failed (http_5xx)", 0, out, sizeof out);
	ck_assert_str_eq(out, "probe failed (http_5xx)");
}
END_TEST

START_TEST(test_cause_window)
{
	int f, n;

	cause_window("3 consecutive failures (total_timeout)", &f, &n);
	ck_assert_int_eq(f, 3);
	ck_assert_int_eq(n, 3);
	cause_window("failure rate 0.55 >= 0.50 over 20 calls", &f, &n);
	ck_assert_int_eq(f, 11);
	ck_assert_int_eq(n, 20);
	cause_window("forced open by operator", &f, &n);
	ck_assert_int_eq(f, -1);
	ck_assert_int_eq(n, -1);
}
END_TEST

/* The first opening's cause stays until the breaker closes; a failed probe does not replace it. */
START_TEST(test_cause_breaker)
{
	struct event_ring ring;
	struct backend_v b;
	struct events_v *e;
	char out[256];
	int64_t at;

	event_ring_init(&ring, 16);
	e = events("{\"events\":["
		   "{\"id\":1,\"at\":1000,\"kind\":\"breaker\",\"subject\":\"p\",\"detail\":"
		   "\"closed -> open (2 consecutive failures (http_5xx))\"},"
		   "{\"id\":2,\"at\":2000,\"kind\":\"breaker\",\"subject\":\"p\",\"detail\":"
		   "\"open -> closed (reset to auto by operator)\"},"
		   "{\"id\":3,\"at\":3000,\"kind\":\"breaker\",\"subject\":\"p\",\"detail\":"
		   "\"closed -> open (3 consecutive failures (first_byte_timeout))\"},"
		   "{\"id\":4,\"at\":4000,\"kind\":\"breaker\",\"subject\":\"q\",\"detail\":"
		   "\"closed -> open (x)\"},"
		   "{\"id\":5,\"at\":5000,\"kind\":\"breaker\",\"subject\":\"p\",\"detail\":"
		   "\"open -> half_open (open time elapsed)\"},"
		   "{\"id\":6,\"at\":6000,\"kind\":\"breaker\",\"subject\":\"p\",\"detail\":"
		   "\"half_open -> open (probe failed (http_5xx))\"}]}");
	event_ring_push(&ring, e);
	events_free(e);
	memset(&b, 0, sizeof b);
	snprintf(b.name, sizeof b.name, "p");
	b.st = BS_OPEN;
	ck_assert_int_eq(cause_breaker(&ring, &b, out, sizeof out, &at), 1);
	ck_assert_str_eq(out, "3 consecutive failures (first_byte_timeout)");
	ck_assert_int_eq(at, 3000);
	b.st = BS_CLOSED;
	ck_assert_int_eq(cause_breaker(&ring, &b, out, sizeof out, &at), 0);
	ck_assert_str_eq(out, "");
	/* Without events: the last transition. */
	b.st = BS_OPEN;
	snprintf(b.name, sizeof b.name, "other");
	b.has_transition = 1;
	b.tr_at = 7000;
	snprintf(b.tr_reason, sizeof b.tr_reason, "failure rate 0.60 >= 0.50 over 10 calls");
	ck_assert_int_eq(cause_breaker(&ring, &b, out, sizeof out, &at), 1);
	ck_assert_str_eq(out, "failure rate 0.60 >= 0.50 over 10 calls");
	ck_assert_int_eq(at, 7000);
	event_ring_free(&ring);
}
END_TEST

static const char state_json[] =
	"{\"version\":\"0.1.0\",\"uptime_s\":12,\"inflight\":0,\"routes\":["
	"{\"name\":\"intent\",\"level\":2,\"auto_level\":2,\"forced_level\":null,"
	"\"targets\":[{\"backend\":\"primary-v2\",\"weight\":95,\"canary\":false},"
	"{\"backend\":\"canary-v3\",\"weight\":5,\"canary\":true}]},"
	"{\"name\":\"ticket\",\"level\":0,\"auto_level\":0,\"forced_level\":null,"
	"\"targets\":[{\"backend\":\"flaky-v1\",\"weight\":100,\"canary\":false}]},"
	"{\"name\":\"calm\",\"level\":0,\"auto_level\":0,\"forced_level\":null,"
	"\"targets\":[{\"backend\":\"canary-v3\",\"weight\":100,\"canary\":false}]}],"
	"\"backends\":["
	"{\"name\":\"primary-v2\",\"breaker\":{\"state\":\"open\"}},"
	"{\"name\":\"canary-v3\",\"breaker\":{\"state\":\"closed\"}},"
	"{\"name\":\"flaky-v1\",\"breaker\":{\"state\":\"forced_open\",\"last_transition\":"
	"{\"at\":1000,\"from\":\"closed\",\"to\":\"forced_open\",\"reason\":"
	"\"forced open by operator: drill\"}}}]}";

START_TEST(test_cause_route)
{
	struct state_v *s = NULL;
	struct event_ring ring;
	struct events_v *e;
	struct slo_route_v sr;
	char out[1024], *cause = NULL;

	ck_assert_int_eq(model_parse_state(state_json, strlen(state_json), &s, &cause), 0);
	event_ring_init(&ring, 16);
	e = events("{\"events\":["
		   "{\"id\":1,\"at\":10000,\"kind\":\"breaker\",\"subject\":\"primary-v2\","
		   "\"detail\":\"closed -> open (3 consecutive failures (first_byte_timeout))\"},"
		   "{\"id\":2,\"at\":12000,\"kind\":\"level\",\"subject\":\"intent\",\"detail\":"
		   "\"auto 0 -> 2 (error rate 0.60 >= 0.50 over 10 calls in 10 s); actor "
		   "escalation\"}]}");
	event_ring_push(&ring, e);
	events_free(e);
	ck_assert_int_eq(
		cause_route(s, &ring, NULL, &s->routes[0], 0, clock_fixed, out, sizeof out), 1);
	ck_assert_str_eq(out, "L2 auto since T12: primary-v2 OPEN (3x first_byte_timeout)");
	/* L0 while every target is shut: said at once, whatever the counters say. */
	ck_assert_int_eq(
		cause_route(s, &ring, NULL, &s->routes[1], 0, clock_fixed, out, sizeof out), 1);
	ck_assert_str_eq(out, "no model target admits calls: flaky-v1 forced open "
			      "(forced open by operator: drill)");
	/* Healthy: no line; smart below its objective: a line. */
	ck_assert_int_eq(
		cause_route(s, &ring, NULL, &s->routes[2], 0, clock_fixed, out, sizeof out), 0);
	ck_assert_str_eq(out, "");
	memset(&sr, 0, sizeof sr);
	sr.obj_smart = 0.95;
	sr.w[SLO_5M].smart = 0.842;
	ck_assert_int_eq(cause_route(s, &ring, &sr, &s->routes[2], 0, clock_fixed, out, sizeof out),
			 1);
	ck_assert_str_eq(out, "smart 84.2% < 95.0% 5m");
	/* The escalation's own reason when no breaker explains the level. */
	ck_assert_int_eq(cause_auto_level(&ring, "intent", out, sizeof out), 12000);
	ck_assert_str_eq(out, "error rate 0.60 >= 0.50 over 10 calls in 10 s");
	s->backends[0].st = BS_CLOSED;
	cause_route(s, &ring, NULL, &s->routes[0], 0, clock_fixed, out, sizeof out);
	ck_assert_str_eq(out, "L2 auto since T12: error rate 0.60 >= 0.50 over 10 calls in 10 s");
	event_ring_free(&ring);
	state_free(s);
}
END_TEST

START_TEST(test_parse_history)
{
	static const char json[] =
		"{\"minutes\":3,\"from\":\"2026-11-30T12:00:00Z\",\"routes\":[{\"route\":"
		"\"intent\","
		"\"calls\":[0,10,20],\"degraded\":[null,2,20],\"service\":[null,1,0.5],"
		"\"smart\":[null,0.8,0],\"p99_ms\":[null,1200,80]}],"
		"\"backends\":[{\"backend\":\"p\",\"outcomes\":{\"http_5xx\":3,\"ok\":40,"
		"\"first_byte_timeout\":7}}]}";
	struct slo_hist_v *h = NULL;
	const struct hist_route_v *r;
	char *cause = NULL, text[128];

	ck_assert_int_eq(model_parse_history(json, strlen(json), &h, &cause), 0);
	ck_assert_int_eq(h->minutes, 3);
	r = slo_hist_route(h, "intent");
	ck_assert_ptr_nonnull(r);
	ck_assert(isnan(r->degraded[0]));
	ck_assert_float_eq(r->degraded[2], 20);
	ck_assert_float_eq(r->p99_ms[1], 1200);
	ck_assert_ptr_null(slo_hist_route(h, "nope"));
	hist_outcomes_text(slo_hist_backend(h, "p"), text, sizeof text);
	ck_assert_str_eq(text, "ok 40  first_byte_timeout 7  http_5xx 3");
	hist_outcomes_text(NULL, text, sizeof text);
	ck_assert_str_eq(text, "");
	slo_hist_free(h);
	ck_assert_int_eq(model_parse_history("{}", 2, &h, &cause), MODEL_E_PARSE);
	free(cause);
}
END_TEST

START_TEST(test_audit_list)
{
	static const char page[] =
		"{\"audit\":[{\"id\":1,\"at\":1000,\"actor\":\"alice\",\"action\":\"level\","
		"\"target\":\"intent\",\"before\":{\"level\":0},\"after\":{\"level\":2},"
		"\"remote\":\"127.0.0.1\",\"action_id\":null},{\"id\":2,\"actor\":\"bob\","
		"\"action\":\"breaker\",\"target\":\"p\",\"before\":null,\"after\":null}]}";
	struct audit_list l;
	struct audits_v *a = NULL;
	char *cause = NULL;

	memset(&l, 0, sizeof l);
	ck_assert_int_eq(model_parse_audit(page, strlen(page), &a, &cause), 0);
	ck_assert_str_eq(a->v[0].after, "{\"level\":2}");
	ck_assert_ptr_null(a->v[1].before);
	audit_list_push(&l, a, 1);
	audits_free(a);
	/* capped at 1: the newest stays */
	ck_assert_int_eq(l.n, 1);
	ck_assert_str_eq(l.v[0].actor, "bob");
	ck_assert_int_eq(l.last_id, 2);
	audit_list_free(&l);
}
END_TEST

static Suite *
tui_cause_suite(void)
{
	Suite *s = suite_create("tui_cause");
	TCase *tc = tcase_create("cause");

	tcase_add_test(tc, test_cause_short);
	tcase_add_test(tc, test_cause_window);
	tcase_add_test(tc, test_cause_breaker);
	tcase_add_test(tc, test_cause_route);
	tcase_add_test(tc, test_parse_history);
	tcase_add_test(tc, test_audit_list);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tui_cause_suite());
	int failed;

	setlocale(LC_ALL, "C.UTF-8");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
