/*
 * test_tui_cause: the console's causes (tui/model_cause.c), the daemon's
 * history and audit answers (tui/model_hist.c) and its diagnosis with the
 * Why panel's text (tui/model_diag.c), on literals.
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

/* A diagnosis as the daemon answers it (docs/DIAGNOSE.md), two routes. */
static const char diag_json[] =
	"{\"window\": {\"from\": \"2026-01-02T14:00:00Z\", \"to\": \"2026-01-02T14:15:00Z\"},"
	" \"routes\": [{\"route\": \"intent\", \"service_availability\": 0.99,"
	"  \"smart_availability\": 0.61, \"degraded_calls\": 312, \"calls\": 800,"
	"  \"episode_start\": \"2026-01-02T14:02:11Z\","
	"  \"causes\": [{\"share\": 0.92, \"reason\": \"first_byte_timeout\","
	"    \"backend\": \"primary-v2\", \"phase\": \"first_byte\","
	"    \"since\": \"2026-01-02T14:02:11Z\","
	"    \"text\": \"92 % of degraded calls: first_byte_timeout on primary-v2 (connect p50 2 "
	"ms, first byte > 800 ms in 96 %) \xe2\x80\x94 began 14:02:11\","
	"    \"evidence\": {\"calls\": 287, \"degraded_calls\": 312, \"previous_calls\": 0},"
	"    \"query\": \"SELECT c.id FROM calls c\"},"
	"   {\"share\": 0.08, \"reason\": \"breaker_open\", \"backend\": \"primary-v2\","
	"    \"phase\": \"breaker\", \"since\": \"2026-01-02T14:02:40Z\","
	"    \"text\": \"8 % of degraded calls: breaker primary-v2 OPEN since 14:02:40 (3 "
	"consecutive failures (first_byte_timeout)) \xe2\x80\x94 25 calls answered without it\","
	"    \"evidence\": {\"calls\": 25, \"previous_calls\": 4,"
	"     \"breaker_event\": \"closed -> open (3 consecutive failures (first_byte_timeout))\"},"
	"    \"query\": \"SELECT 2\"}],"
	"  \"contrasts\": [{\"factor\": \"input_tokens\", \"failing\": 412, \"succeeding\": 120,"
	"    \"text\": \"failures had median 412 input tokens vs 120\"}],"
	"  \"changes\": [{\"at\": \"2026-01-02T14:01:50Z\", \"kind\": \"weights\","
	"    \"subject\": \"intent\", \"actor\": \"alice\", \"detail\": \"primary-v2 50 -> 95\"}],"
	"  \"suggestions\": [{\"text\": \"backup small-v1 healthy (99 % valid): force level 1\","
	"    \"action\": \"fusebox level intent 1 --reason 'diagnosis'\"},"
	"   {\"text\": \"lower the traffic\", \"action\": null}]},"
	" {\"route\": \"ticket\", \"service_availability\": null, \"smart_availability\": null,"
	"  \"degraded_calls\": 0, \"calls\": 0, \"episode_start\": null, \"causes\": [],"
	"  \"contrasts\": [], \"changes\": [], \"suggestions\": []}]}";

START_TEST(test_parse_diagnose)
{
	struct diag_v *d = NULL;
	const struct diag_route_v *r;
	char *cause = NULL;

	ck_assert_int_eq(model_parse_diagnose(diag_json, strlen(diag_json), &d, &cause), 0);
	ck_assert_int_eq(d->nroutes, 2);
	ck_assert_int_eq(d->from, 1767362400000LL);
	r = diag_route(d, "intent");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->ncauses, 2);
	ck_assert_int_eq(r->degraded, 312);
	ck_assert_int_eq(r->calls, 800);
	ck_assert(fabs(r->smart - 0.61) < 1e-9);
	ck_assert_int_eq(r->episode_start, 1767362531000LL);
	ck_assert_str_eq(r->causes[0].reason, "first_byte_timeout");
	ck_assert_str_eq(r->causes[0].backend, "primary-v2");
	ck_assert_str_eq(r->causes[0].phase, "first_byte");
	ck_assert_int_eq(r->causes[0].calls, 287);
	ck_assert_int_eq(r->causes[0].previous_calls, 0);
	ck_assert_str_eq(r->causes[0].query, "SELECT c.id FROM calls c");
	ck_assert_str_eq(r->causes[1].breaker_event,
			 "closed -> open (3 consecutive failures (first_byte_timeout))");
	ck_assert_int_eq(r->ncontrasts, 1);
	ck_assert_str_eq(r->changes[0].actor, "alice");
	ck_assert_int_eq(r->nsuggestions, 2);
	ck_assert_str_eq(r->suggestions[1].action, "");
	r = diag_route(d, "ticket");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->episode_start, 0);
	ck_assert(isnan(r->service));
	ck_assert_ptr_null(diag_route(d, "nope"));
	diag_free(d);

	/* Not a diagnosis: an error, never a crash. */
	ck_assert_int_eq(model_parse_diagnose("{\"x\": 1}", 8, &d, &cause), MODEL_E_PARSE);
	free(cause);
	cause = NULL;
	ck_assert_int_eq(model_parse_diagnose("nope", 4, &d, &cause), MODEL_E_PARSE);
	free(cause);
}
END_TEST

START_TEST(test_diag_why)
{
	struct diag_v *d = NULL;
	struct diag_cause_v c;
	char *cause = NULL, out[512];

	ck_assert_int_eq(model_parse_diagnose(diag_json, strlen(diag_json), &d, &cause), 0);
	diag_cause_words(&d->routes[0].causes[0], out, sizeof out);
	ck_assert_str_eq(out, "first_byte_timeout on primary-v2 (connect p50 2 ms, first byte > "
			      "800 ms in 96 %)");
	diag_cause_evidence(&d->routes[0].causes[0], out, sizeof out);
	ck_assert_str_eq(out, "connect p50 2 ms, first byte > 800 ms in 96 %");
	diag_cause_evidence(&d->routes[0].causes[1], out, sizeof out);
	ck_assert_str_eq(out, "3 consecutive failures (first_byte_timeout)");
	ck_assert_int_eq(diag_why(&d->routes[0], 1, out, sizeof out), 1);
	ck_assert_str_eq(out, "92% first_byte_timeout on primary-v2 (connect p50 2 ms, first byte "
			      "> 800 ms in 96 %)");
	/* No cause: no line. */
	ck_assert_int_eq(diag_why(&d->routes[1], 1, out, sizeof out), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(diag_why(NULL, 1, out, sizeof out), 0);
	/* A breaker cause: its opening in a few words. */
	free(d->routes[0].causes[0].query);
	d->routes[0].causes[0] = d->routes[0].causes[1];
	d->routes[0].causes[1].query = NULL; /* one owner for the copied pointer */
	ck_assert_int_eq(diag_why(&d->routes[0], 0, out, sizeof out), 1);
	ck_assert_str_eq(out, "8% breaker_open on primary-v2 (3x first_byte_timeout)");
	diag_free(d);

	/* A sentence of another shape: the fields. */
	memset(&c, 0, sizeof c);
	c.share = 0.5;
	snprintf(c.reason, sizeof c.reason, "bulkhead_full");
	snprintf(c.text, sizeof c.text, "half the calls found the bulkhead full");
	diag_cause_words(&c, out, sizeof out);
	ck_assert_str_eq(out, "bulkhead_full");
	diag_cause_evidence(&c, out, sizeof out);
	ck_assert_str_eq(out, "");
}
END_TEST

static int
has_line(const struct diag_lines *l, enum diag_line_kind kind, const char *text)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].kind == kind && strcmp(l->v[i].text, text) == 0)
			return 1;
	return 0;
}

START_TEST(test_diag_lines)
{
	struct diag_v *d = NULL;
	struct diag_lines l = {0};
	char *cause = NULL;

	ck_assert_int_eq(model_parse_diagnose(diag_json, strlen(diag_json), &d, &cause), 0);
	diag_lines_build(&d->routes[0], d->from, d->to, clock_fixed, &l);
	ck_assert(has_line(&l, DL_TEXT, "service 99.0%  smart 61.0%  312 of 800 calls degraded"));
	ck_assert(has_line(&l, DL_TEXT,
			   "episode since T1767362531 (first degraded minute after 5 healthy)"));
	ck_assert(has_line(&l, DL_HEAD, "first cause"));
	ck_assert(has_line(&l, DL_MAIN, "92% first_byte_timeout on primary-v2"));
	ck_assert(has_line(&l, DL_TEXT, "phase first_byte  backend primary-v2  since T1767362531"));
	ck_assert(has_line(&l, DL_TEXT, "evidence: connect p50 2 ms, first byte > 800 ms in 96 %"));
	ck_assert(has_line(&l, DL_TEXT,
			   "287 of 312 degraded calls; none in the window before (new)"));
	ck_assert(has_line(&l, DL_DIM, "proof (sqlite3): SELECT c.id FROM calls c"));
	ck_assert(has_line(&l, DL_HEAD, "other causes"));
	ck_assert(has_line(&l, DL_TEXT,
			   "8% breaker primary-v2 OPEN since 14:02:40 (3 consecutive failures "
			   "(first_byte_timeout))"));
	ck_assert(
		has_line(&l, DL_TEXT, "input_tokens: failures had median 412 input tokens vs 120"));
	ck_assert(has_line(&l, DL_HEAD, "changes before the episode"));
	ck_assert(
		has_line(&l, DL_TEXT, "T1767362510 weights intent by alice: primary-v2 50 -> 95"));
	ck_assert(has_line(&l, DL_TEXT, "backup small-v1 healthy (99 % valid): force level 1"));
	ck_assert(has_line(&l, DL_CMD, "$ fusebox level intent 1 --reason 'diagnosis'"));
	ck_assert(has_line(&l, DL_TEXT, "lower the traffic"));
	/* The order: figures, first cause, other causes, contrasts, changes, advice. */
	ck_assert_str_eq(l.v[2].text, "first cause");
	ck_assert_str_eq(l.v[l.n - 1].text, "lower the traffic");

	/* A healthy route: says so, and that nothing changed. */
	diag_lines_build(&d->routes[1], d->from, d->to, clock_fixed, &l);
	ck_assert(has_line(&l, DL_TEXT, "service -  smart -  0 of 0 calls degraded"));
	ck_assert(has_line(&l, DL_TEXT, "no episode: the last 5 minutes with calls were healthy"));
	ck_assert(has_line(&l, DL_DIM, "no degraded call in the window"));
	ck_assert(has_line(&l, DL_DIM, "none in the window"));
	ck_assert(has_line(&l, DL_DIM, "none the data supports"));
	ck_assert(!has_line(&l, DL_HEAD, "first cause"));
	diag_lines_free(&l);
	ck_assert_int_eq(l.n, 0);
	diag_free(d);
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
	tcase_add_test(tc, test_parse_diagnose);
	tcase_add_test(tc, test_diag_why);
	tcase_add_test(tc, test_diag_lines);
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
