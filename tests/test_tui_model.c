/*
 * test_tui_model: the console's model (tui/model.c) — parsing the control
 * API's answers (state, slo, alerts, reviews, events; missing and null
 * fields; issue 23's concurrency, rate limits and hedging), review
 * ordering, the sparkline history, the per-minute hedge rates, the event ring, canary
 * weight steps, filters — and the pure parts of tui/client.c (error bodies,
 * token files, the daemon's address file) and of call -v (the headers).
 */
#include <check.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_int.h"
#include "client.h"
#include "model.h"
#include "tokens.h"

static const char state_json[] =
	"{\"version\":\"0.1.0\",\"started_at\":\"2026-11-30T12:00:00Z\",\"uptime_s\":12,"
	"\"inflight\":3,\"routes\":[{\"name\":\"intent\",\"level\":2,\"auto_level\":0,"
	"\"forced_level\":{\"level\":2,\"actor\":\"alice\",\"reason\":\"厂商故障\","
	"\"until\":\"2026-11-30T13:00:00Z\"},\"budget_ms\":6000,"
	"\"targets\":[{\"backend\":\"primary-v2\",\"weight\":95,\"canary\":false},"
	"{\"backend\":\"canary-v3\",\"weight\":5,\"canary\":true}],"
	"\"rps_1m\":4.2,\"p50_ms_1m\":1400,\"p99_ms_1m\":2100,\"review_pending\":3},"
	"{\"name\":\"ticket\",\"level\":0,\"auto_level\":0,\"forced_level\":null,"
	"\"budget_ms\":2000,\"targets\":[]}],"
	"\"backends\":[{\"name\":\"primary-v2\",\"version\":\"v2\",\"breaker\":{\"state\":"
	"\"open\",\"mode\":\"consecutive\",\"failures\":3,\"calls_in_window\":40,"
	"\"failure_rate\":0.05,\"slow_call_rate\":0.0,\"opened_at\":\"2026-11-30T12:00:01Z\","
	"\"half_open_at\":\"2026-11-30T12:01:01Z\",\"last_transition\":{\"at\":"
	"\"2026-11-30T12:00:01Z\",\"from\":\"closed\",\"to\":\"open\",\"reason\":"
	"\"3 consecutive failures (total_timeout)\"}},\"inflight\":2,\"max_concurrent\":60,"
	"\"health\":0.97,\"p90_ms_5m\":1800}]}";

START_TEST(test_parse_state)
{
	struct state_v *s = NULL;
	char *cause = NULL;
	const struct route_v *r;
	const struct backend_v *b;

	ck_assert_int_eq(model_parse_state(state_json, strlen(state_json), &s, &cause), 0);
	ck_assert_str_eq(s->version, "0.1.0");
	ck_assert_int_eq(s->uptime_s, 12);
	ck_assert_int_eq(s->inflight, 3);
	ck_assert_int_eq(s->nroutes, 2);
	ck_assert_int_eq(s->nbackends, 1);
	r = state_route(s, "intent");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->level, 2);
	ck_assert_int_eq(r->forced, 1);
	ck_assert_int_eq(r->forced_lvl, 2);
	ck_assert_str_eq(r->forced_actor, "alice");
	ck_assert_str_eq(r->forced_reason, "厂商故障");
	ck_assert_int_eq(r->forced_until, 1796043600000LL);
	ck_assert_int_eq(r->ntargets, 2);
	ck_assert_str_eq(r->targets[1].backend, "canary-v3");
	ck_assert_int_eq(r->targets[1].weight, 5);
	ck_assert_int_eq(r->targets[1].canary, 1);
	ck_assert_double_eq_tol(r->rps, 4.2, 1e-9);
	ck_assert_int_eq(r->review_pending, 3);
	/* absent fields: NAN / -1, forced null: not forced */
	r = state_route(s, "ticket");
	ck_assert_int_eq(r->forced, 0);
	ck_assert(isnan(r->rps));
	ck_assert(isnan(r->p99_ms));
	ck_assert_int_eq(r->review_pending, -1);
	ck_assert_int_eq(r->ntargets, 0);
	ck_assert_ptr_null(state_route(s, "nope"));
	b = state_backend(s, "primary-v2");
	ck_assert_int_eq(b->st, BS_OPEN);
	ck_assert_str_eq(b->mode, "consecutive");
	ck_assert_int_eq(b->calls_in_window, 40);
	ck_assert_int_eq(b->half_open_at, 1796040061000LL);
	ck_assert_int_eq(b->has_transition, 1);
	ck_assert_str_eq(b->tr_to, "open");
	ck_assert_int_eq(b->max_concurrent, 60);
	state_free(s);

	/* not the expected shape: an error with a cause, nothing leaked */
	s = NULL;
	ck_assert_int_eq(model_parse_state("{\"routes\":3}", 12, &s, &cause), MODEL_E_PARSE);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(cause, "routes"));
	free(cause);
	cause = NULL;
	ck_assert_int_eq(model_parse_state("not json", 8, &s, &cause), MODEL_E_PARSE);
	free(cause);
}
END_TEST

/*
 * Issue 23: the adaptive concurrency limit, the rate limits and the
 * route's hedging, as GET /v1/state reports them (daemon/api_control.c).
 */
static const char tail_json[] =
	"{\"version\":\"0.1.0\",\"uptime_s\":5,\"inflight\":1,\"routes\":["
	"{\"name\":\"intent\",\"level\":0,\"auto_level\":0,\"forced_level\":null,"
	"\"budget_ms\":3000,\"targets\":[{\"backend\":\"primary-v2\",\"weight\":95,"
	"\"canary\":false},{\"backend\":\"canary-v3\",\"weight\":5,\"canary\":true}],"
	"\"hedge\":{\"delay_ms\":812,\"max_hedges\":2,\"targets\":\"other\",\"won\":%d,"
	"\"lost\":%d,\"failed\":1,\"denied\":4}},"
	"{\"name\":\"ticket\",\"level\":0,\"auto_level\":0,\"forced_level\":null,"
	"\"budget_ms\":2000,\"targets\":[{\"backend\":\"flaky-v1\",\"weight\":100}],"
	"\"hedge\":null},"
	"{\"name\":\"p95\",\"level\":0,\"targets\":[],"
	"\"hedge\":{\"delay_ms\":null,\"max_hedges\":1,\"targets\":\"same\",\"won\":0,"
	"\"lost\":0,\"failed\":0,\"denied\":0}}],"
	"\"backends\":[{\"name\":\"primary-v2\",\"breaker\":{\"state\":\"closed\"},"
	"\"inflight\":3,\"max_concurrent\":12,"
	"\"concurrency\":{\"adaptive\":true,\"limit\":12,\"max\":60,\"inflight\":3,"
	"\"waiting\":2,\"baseline_ms\":95.5,\"latency_ms\":120},"
	"\"rate_limits\":{\"remaining_requests\":5,\"remaining_tokens\":null,\"skipped\":7}},"
	"{\"name\":\"canary-v3\",\"breaker\":{\"state\":\"closed\"},"
	"\"inflight\":0,\"max_concurrent\":60,"
	"\"concurrency\":{\"adaptive\":false,\"limit\":60,\"max\":60,\"inflight\":0,"
	"\"waiting\":0,\"baseline_ms\":null,\"latency_ms\":null},"
	"\"rate_limits\":{\"remaining_requests\":null,\"remaining_tokens\":149985,"
	"\"skipped\":0}},"
	"{\"name\":\"flaky-v1\",\"breaker\":{\"state\":\"closed\"},"
	"\"inflight\":0,\"max_concurrent\":60}]}";

/* The snapshot with intent's won / lost counters set. */
static struct state_v *
tail_state(int won, int lost)
{
	char json[sizeof tail_json + 32];
	struct state_v *s = NULL;
	char *cause = NULL;

	snprintf(json, sizeof json, tail_json, won, lost);
	ck_assert_int_eq(model_parse_state(json, strlen(json), &s, &cause), 0);
	ck_assert_ptr_null(cause);
	return s;
}

START_TEST(test_parse_tail)
{
	struct state_v *s = tail_state(3, 2);
	const struct route_v *r;
	const struct backend_v *b;

	r = state_route(s, "intent");
	ck_assert_int_eq(r->hedge.on, 1);
	ck_assert_int_eq(r->hedge.delay_ms, 812);
	ck_assert_int_eq(r->hedge.max_hedges, 2);
	ck_assert_str_eq(r->hedge.targets, "other");
	ck_assert_int_eq(r->hedge.n[HV_WON], 3);
	ck_assert_int_eq(r->hedge.n[HV_LOST], 2);
	ck_assert_int_eq(r->hedge.n[HV_FAILED], 1);
	ck_assert_int_eq(r->hedge.n[HV_DENIED], 4);
	/* rates are the console's: unknown until rates_update() */
	ck_assert(isnan(r->hedge.per_min[HV_WON]));
	r = state_route(s, "ticket"); /* hedge null: off */
	ck_assert_int_eq(r->hedge.on, 0);
	ck_assert_int_eq(r->hedge.delay_ms, -1);
	ck_assert_int_eq(r->hedge.n[HV_WON], -1);
	r = state_route(s, "p95"); /* hedging, delay not known */
	ck_assert_int_eq(r->hedge.on, 1);
	ck_assert_int_eq(r->hedge.delay_ms, -1);
	ck_assert_str_eq(r->hedge.targets, "same");

	b = state_backend(s, "primary-v2");
	ck_assert_int_eq(b->adaptive, 1);
	ck_assert_int_eq(b->limit, 12);
	ck_assert_int_eq(b->limit_max, 60);
	ck_assert_int_eq(b->conc_inflight, 3);
	ck_assert_int_eq(b->waiting, 2);
	ck_assert_double_eq_tol(b->baseline_ms, 95.5, 1e-9);
	ck_assert_double_eq_tol(b->latency_ms, 120, 1e-9);
	ck_assert_int_eq(b->rl_requests, 5);
	ck_assert_int_eq(b->rl_tokens, -1);
	ck_assert_int_eq(b->rl_skipped, 7);
	ck_assert_int_eq(b->hedged, 1);
	b = state_backend(s, "canary-v3");
	ck_assert_int_eq(b->adaptive, 0);
	ck_assert_int_eq(b->limit, 60);
	ck_assert(isnan(b->baseline_ms));
	ck_assert(isnan(b->latency_ms));
	ck_assert_int_eq(b->rl_requests, -1);
	ck_assert_int_eq(b->rl_tokens, 149985);
	ck_assert_int_eq(b->rl_skipped, 0);
	ck_assert_int_eq(b->hedged, 1); /* a target of intent, which hedges */
	/* an older daemon: no concurrency / rate_limits objects */
	b = state_backend(s, "flaky-v1");
	ck_assert_int_eq(b->adaptive, 0);
	ck_assert_int_eq(b->limit, -1);
	ck_assert_int_eq(b->limit_max, -1);
	ck_assert_int_eq(b->waiting, -1);
	ck_assert(isnan(b->baseline_ms));
	ck_assert_int_eq(b->rl_requests, -1);
	ck_assert_int_eq(b->rl_skipped, -1);
	ck_assert_int_eq(b->hedged, 0); /* ticket does not hedge */
	ck_assert(isnan(b->hedges_per_min));
	state_free(s);
}
END_TEST

/* rates_update on snapshot s at t ms; the route's won / lost per minute. */
static struct state_v *
rates_at(struct rate_track *t, int64_t at, int won, int lost)
{
	struct state_v *s = tail_state(won, lost);

	rates_update(t, s, at);
	return s;
}

START_TEST(test_hedge_rates)
{
	struct rate_track t = {0};
	struct state_v *s;
	const struct route_v *r;

	/* the first snapshot: nothing to compare with */
	s = rates_at(&t, 100000, 0, 0);
	r = state_route(s, "intent");
	ck_assert(isnan(r->hedge.per_min[HV_WON]));
	ck_assert(isnan(state_backend(s, "primary-v2")->hedges_per_min));
	ck_assert(isnan(state_backend(s, "flaky-v1")->hedges_per_min));
	state_free(s);
	/* 30 s later: 3 won, 1 lost -> 6 and 2 a minute; failed stayed at 1 */
	s = rates_at(&t, 130000, 3, 1);
	r = state_route(s, "intent");
	ck_assert_double_eq_tol(r->hedge.per_min[HV_WON], 6.0, 1e-9);
	ck_assert_double_eq_tol(r->hedge.per_min[HV_LOST], 2.0, 1e-9);
	ck_assert_double_eq_tol(r->hedge.per_min[HV_FAILED], 0.0, 1e-9);
	ck_assert_double_eq_tol(r->hedge.per_min[HV_DENIED], 0.0, 1e-9);
	/* the backends of intent: hedges started (won + lost + failed) */
	ck_assert_double_eq_tol(state_backend(s, "primary-v2")->hedges_per_min, 8.0, 1e-9);
	ck_assert_double_eq_tol(state_backend(s, "canary-v3")->hedges_per_min, 8.0, 1e-9);
	ck_assert(isnan(state_backend(s, "flaky-v1")->hedges_per_min));
	/* a route that does not hedge has no rate */
	ck_assert(isnan(state_route(s, "ticket")->hedge.per_min[HV_WON]));
	state_free(s);
	/* 60 s after that, no more hedges: the window is the last minute -> 0 */
	s = rates_at(&t, 190000, 3, 1);
	ck_assert_double_eq_tol(state_route(s, "intent")->hedge.per_min[HV_WON], 0.0, 1e-9);
	state_free(s);
	/* the daemon restarted (the counters went back): unknown again, then from there */
	s = rates_at(&t, 191000, 0, 0);
	ck_assert(isnan(state_route(s, "intent")->hedge.per_min[HV_WON]));
	state_free(s);
	/* one second later one won: over at least RATE_MIN_SPAN_MS, no spike to 60 */
	s = rates_at(&t, 192000, 1, 0);
	ck_assert_double_eq_tol(state_route(s, "intent")->hedge.per_min[HV_WON],
				60000.0 / RATE_MIN_SPAN_MS, 1e-9);
	state_free(s);
	rate_track_free(&t);
	ck_assert_int_eq(t.n, 0);
}
END_TEST

START_TEST(test_breaker_names)
{
	ck_assert_int_eq(breaker_st_parse("closed"), BS_CLOSED);
	ck_assert_int_eq(breaker_st_parse("half_open"), BS_HALF_OPEN);
	ck_assert_int_eq(breaker_st_parse("forced_open"), BS_FORCED_OPEN);
	ck_assert_int_eq(breaker_st_parse("forced_closed"), BS_FORCED_CLOSED);
	ck_assert_int_eq(breaker_st_parse("weird"), BS_UNKNOWN);
}
END_TEST

START_TEST(test_parse_slo_alerts)
{
	static const char slo[] =
		"{\"routes\":[{\"route\":\"intent\",\"objectives\":{\"service_availability\":0.999,"
		"\"smart_availability\":0.95,\"latency_ms\":2000,\"latency_target\":0.99},"
		"\"windows\":{\"5m\":{\"total\":120,\"service_good\":120,\"smart_good\":101,"
		"\"service_availability\":1.0,\"smart_availability\":0.8417,\"latency_ok\":0.99,"
		"\"timeout_rate\":0.01,\"retry_rate\":0.03,\"format_violation_rate\":0.02},"
		"\"30m\":{\"total\":0,\"service_availability\":null,\"smart_availability\":null}},"
		"\"error_budget\":{\"service\":{\"remaining\":0.93,\"burn_rate_1h\":0.4},"
		"\"smart\":{\"remaining\":-0.2,\"burn_rate_1h\":3.1}}}]}";
	static const char alerts[] =
		"{\"alerts\":[{\"id\":7,\"rule\":\"smart-low\",\"route\":\"intent\",\"severity\":"
		"\"page\",\"state\":\"firing\",\"value\":0.84,\"threshold\":0.9,\"since\":"
		"\"2026-11-30T12:00:00Z\",\"resolved_at\":null},{\"id\":8,\"rule\":\"timeouts\","
		"\"route\":\"ticket\",\"state\":\"resolved\"}]}";
	struct slo_v *s = NULL;
	struct alerts_v *a = NULL;
	const struct slo_route_v *r;
	char *cause = NULL;

	ck_assert_int_eq(model_parse_slo(slo, strlen(slo), &s, &cause), 0);
	r = slo_route(s, "intent");
	ck_assert_ptr_nonnull(r);
	ck_assert_double_eq_tol(r->obj_service, 0.999, 1e-9);
	ck_assert_int_eq(r->w[SLO_5M].present, 1);
	ck_assert_int_eq(r->w[SLO_5M].total, 120);
	ck_assert_double_eq_tol(r->w[SLO_5M].smart, 0.8417, 1e-9);
	ck_assert_int_eq(r->w[SLO_30M].present, 1);
	ck_assert(isnan(r->w[SLO_30M].service));
	ck_assert_int_eq(r->w[SLO_1H].present, 0);
	ck_assert_double_eq_tol(r->budget_smart, -0.2, 1e-9);
	ck_assert_double_eq_tol(r->burn_smart, 3.1, 1e-9);
	slo_free(s);

	ck_assert_int_eq(model_parse_alerts(alerts, strlen(alerts), &a, &cause), 0);
	ck_assert_int_eq(a->n, 2);
	ck_assert_str_eq(a->v[0].id, "7");
	ck_assert_int_eq(a->v[0].since, 1796040000000LL);
	ck_assert_int_eq(alerts_firing(a, "intent"), 1);
	ck_assert_int_eq(alerts_firing(a, "ticket"), 0);
	ck_assert_int_eq(alerts_firing(a, NULL), 1);
	ck_assert(isnan(a->v[1].value));
	alerts_free(a);
}
END_TEST

START_TEST(test_parse_reviews)
{
	static const char list[] =
		"{\"items\":[{\"id\":5,\"route\":\"intent\",\"priority\":\"low\",\"state\":"
		"\"pending\","
		"\"due_at\":\"2026-11-30T14:00:00Z\",\"input\":\"我要退款\",\"raw_output\":\"x\","
		"\"result\":{\"intent\":\"refund\"},\"confidence\":0.6,\"alt_result\":null},"
		"{\"id\":9,\"route\":\"intent\",\"priority\":\"high\",\"state\":\"claimed\","
		"\"due_at\":\"2026-11-30T12:15:00Z\",\"overdue\":true,\"input\":{\"messages\":[1]},"
		"\"result\":null},"
		"{\"id\":2,\"route\":\"ticket\",\"state\":\"pending\"}],"
		"\"counts\":{\"pending\":3,\"overdue\":1}}";
	struct reviews_v *r = NULL;
	char *cause = NULL;

	ck_assert_int_eq(model_parse_reviews(list, strlen(list), 0, &r, &cause), 0);
	ck_assert_int_eq(r->n, 3);
	ck_assert_int_eq(r->pending, 3);
	ck_assert_int_eq(r->overdue, 1);
	reviews_sort(r);
	/* oldest due first; no due date last */
	ck_assert_int_eq(r->v[0].id, 9);
	ck_assert_int_eq(r->v[1].id, 5);
	ck_assert_int_eq(r->v[2].id, 2);
	ck_assert_int_eq(r->v[0].overdue, 1);
	ck_assert_str_eq(r->v[0].input, "{\"messages\":[1]}");
	ck_assert_ptr_null(r->v[0].result);
	ck_assert_str_eq(r->v[1].input, "我要退款");
	ck_assert_str_eq(r->v[1].result, "{\"intent\":\"refund\"}");
	ck_assert_ptr_null(r->v[1].alt_result);
	ck_assert(isnan(r->v[2].confidence));
	reviews_free(r);

	ck_assert_int_eq(
		model_parse_reviews("{\"id\":4,\"state\":\"approved\"}", 29, 1, &r, &cause), 0);
	ck_assert_int_eq(r->n, 1);
	ck_assert_int_eq(r->v[0].id, 4);
	ck_assert_str_eq(r->v[0].state, "approved");
	reviews_free(r);
}
END_TEST

START_TEST(test_events_ring)
{
	static const char page1[] =
		"{\"events\":[{\"id\":1,\"at\":\"2026-11-30T12:00:00Z\",\"kind\":\"breaker\","
		"\"subject\":\"primary-v2\",\"detail\":\"closed -> open\"},"
		"{\"id\":2,\"kind\":\"level\",\"subject\":\"intent\",\"detail\":{\"level\":2}},"
		"{\"id\":3,\"kind\":\"alert\",\"subject\":\"smart-low\"}]}";
	static const char page2[] =
		"{\"events\":[{\"id\":3,\"kind\":\"alert\"},{\"id\":4,\"kind\":\"weights\"}]}";
	struct event_ring ring;
	struct events_v *e = NULL;
	char *cause = NULL;

	event_ring_init(&ring, 3);
	ck_assert_int_eq(model_parse_events(page1, strlen(page1), &e, &cause), 0);
	ck_assert_str_eq(e->v[1].detail, "{\"level\":2}");
	ck_assert_ptr_null(e->v[2].detail);
	event_ring_push(&ring, e);
	events_free(e);
	ck_assert_int_eq(ring.n, 3);
	ck_assert_int_eq(ring.last_id, 3);
	ck_assert_str_eq(event_ring_get(&ring, 0)->detail, "closed -> open");
	/* a repeated id is skipped; the oldest falls out at the cap */
	ck_assert_int_eq(model_parse_events(page2, strlen(page2), &e, &cause), 0);
	event_ring_push(&ring, e);
	events_free(e);
	ck_assert_int_eq(ring.n, 3);
	ck_assert_int_eq(event_ring_get(&ring, 0)->id, 2);
	ck_assert_int_eq(event_ring_get(&ring, 2)->id, 4);
	ck_assert_ptr_null(event_ring_get(&ring, 3));
	event_ring_free(&ring);
}
END_TEST

START_TEST(test_history)
{
	struct history h = {0};
	const struct hist_series *s;
	float out[HIST_LEN];
	int i, n;

	for (i = 0; i < 5; i++) {
		history_push(&h, "intent", i, 1.0 - i * 0.1);
		history_push(&h, "ticket", 10 + i, NAN);
	}
	s = history_find(&h, "intent");
	ck_assert_ptr_nonnull(s);
	n = history_get(s, HIST_RPS, 3, out);
	ck_assert_int_eq(n, 3);
	ck_assert_double_eq(out[0], 2);
	ck_assert_double_eq(out[2], 4);
	n = history_get(s, HIST_SMART, 100, out);
	ck_assert_int_eq(n, 5);
	ck_assert_double_eq_tol(out[0], 1.0, 1e-6);
	ck_assert(isnan(history_get(history_find(&h, "ticket"), HIST_SMART, 1, out) ? out[0] : 0));
	ck_assert_ptr_null(history_find(&h, "nope"));
	ck_assert_int_eq(history_get(NULL, HIST_RPS, 3, out), 0);
	/* the ring keeps the last HIST_LEN samples */
	for (i = 0; i < HIST_LEN + 10; i++)
		history_push(&h, "intent", i, 0);
	s = history_find(&h, "intent");
	n = history_get(s, HIST_RPS, HIST_LEN, out);
	ck_assert_int_eq(n, HIST_LEN);
	ck_assert_double_eq(out[0], 10);
	ck_assert_double_eq(out[HIST_LEN - 1], HIST_LEN + 9);
	history_free(&h);
}
END_TEST

START_TEST(test_weights_step)
{
	int cur[] = {95, 5}, out[3], three[] = {50, 50, 0}, zero[] = {0, 0};

	/* canary up the ladder: 5 -> 10, primary takes the rest */
	ck_assert_int_eq(weights_step(cur, 2, 1, 1, out), 0);
	ck_assert_int_eq(out[0], 90);
	ck_assert_int_eq(out[1], 10);
	/* down: 5 -> 1 */
	ck_assert_int_eq(weights_step(cur, 2, 1, -1, out), 0);
	ck_assert_int_eq(out[0], 99);
	ck_assert_int_eq(out[1], 1);
	/* weights relative to their total: 190/10 is 5 % */
	cur[0] = 190;
	cur[1] = 10;
	ck_assert_int_eq(weights_step(cur, 2, 1, 1, out), 0);
	ck_assert_int_eq(out[1], 10);
	ck_assert_int_eq(out[0], 90);
	/* no step past 100 or below 0 */
	cur[0] = 0;
	cur[1] = 100;
	ck_assert_int_eq(weights_step(cur, 2, 1, 1, out), 1);
	cur[1] = 0;
	cur[0] = 100;
	ck_assert_int_eq(weights_step(cur, 2, 1, -1, out), 1);
	/* three targets: the others share in proportion, sum stays 100 */
	ck_assert_int_eq(weights_step(three, 3, 2, 1, out), 0);
	ck_assert_int_eq(out[2], 1);
	ck_assert_int_eq(out[0] + out[1] + out[2], 100);
	/* all zero: the others share equally */
	ck_assert_int_eq(weights_step(zero, 2, 0, 1, out), 0);
	ck_assert_int_eq(out[0], 1);
	ck_assert_int_eq(out[1], 99);
	/* a single target has nothing to share with */
	ck_assert_int_eq(weights_step(cur, 1, 0, 1, out), 1);
}
END_TEST

START_TEST(test_filter)
{
	const char *const f[] = {"intent", "alice", NULL};

	ck_assert_int_eq(filter_match("", f), 1);
	ck_assert_int_eq(filter_match(NULL, f), 1);
	ck_assert_int_eq(filter_match("TENT", f), 1);
	ck_assert_int_eq(filter_match("ali", f), 1);
	ck_assert_int_eq(filter_match("bob", f), 0);
}
END_TEST

START_TEST(test_client_pure)
{
	static const char body[] =
		"{\"error\":{\"code\":\"forbidden\",\"message\":\"role viewer\"}}";
	char path[] = "/tmp/fusebox-tui-token-XXXXXX", *token = NULL, *cause = NULL, *t;
	FILE *fp;
	int fd, role;

	t = client_error_text(403, body, strlen(body));
	ck_assert_str_eq(t, "403 forbidden: role viewer");
	free(t);
	t = client_error_text(502, "<html>bad\ngateway</html>", 25);
	ck_assert_str_eq(t, "HTTP 502: <html>bad gateway</html>");
	free(t);
	t = client_error_text(500, NULL, 0);
	ck_assert_str_eq(t, "HTTP 500");
	free(t);
	t = client_escape("a b/c");
	ck_assert_str_eq(t, "a%20b%2Fc");
	free(t);

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	fp = fdopen(fd, "w");
	fputs("# comment\n\n  op-token operator alice\nview-token viewer victor\n", fp);
	fclose(fp);
	ck_assert_int_eq(client_token_read(path, &token, &role, &cause), 0);
	ck_assert_str_eq(token, "op-token");
	ck_assert_int_eq(role, ROLE_OPERATOR);
	free(token);
	fp = fopen(path, "w");
	fputs("just-a-token\n", fp);
	fclose(fp);
	ck_assert_int_eq(client_token_read(path, &token, &role, &cause), 0);
	ck_assert_str_eq(token, "just-a-token");
	ck_assert_int_eq(role, CLIENT_ROLE_UNKNOWN);
	free(token);
	fp = fopen(path, "w");
	fputs("\n# nothing\n", fp);
	fclose(fp);
	ck_assert_int_eq(client_token_read(path, &token, &role, &cause), -EINVAL);
	ck_assert_ptr_null(token);
	free(cause);
	cause = NULL;
	unlink(path);
	ck_assert_int_eq(client_token_read(path, &token, &role, &cause), -ENOENT);
	free(cause);
}
END_TEST

/* The discovery file (client_addr_read, client_discover) and call -v's headers. */
START_TEST(test_client_discover)
{
	char path[] = "/tmp/fusebox-tui-addr-XXXXXX", url[512], *cause = NULL, *out = NULL;
	struct client c;
	struct client_resp resp;
	size_t outlen = 0;
	FILE *fp;
	int fd;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	fp = fdopen(fd, "w");
	fputs("# fuseboxd\n\n  http://127.0.0.1:7701/ 4242\n", fp);
	fclose(fp);
	ck_assert_int_eq(client_addr_read(path, url, sizeof url, &cause), 0);
	ck_assert_str_eq(url, "http://127.0.0.1:7701");
	fp = fopen(path, "w");
	fputs("ftp://x\n", fp);
	fclose(fp);
	ck_assert_int_eq(client_addr_read(path, url, sizeof url, &cause), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cause, "not an http(s) URL"));
	free(cause);
	cause = NULL;
	fp = fopen(path, "w");
	fputs("\n# nothing\n", fp);
	fclose(fp);
	ck_assert_int_eq(client_addr_read(path, url, sizeof url, &cause), -EINVAL);
	free(cause);
	cause = NULL;

	/* No URL given: the file's URL is used; given: the given one stays. */
	fp = fopen(path, "w");
	fputs("https://10.0.0.1:7702\n", fp);
	fclose(fp);
	unsetenv("FUSEBOX_ADDR_FILE");
	ck_assert_int_eq(client_init(&c, CLIENT_DEFAULT_URL, NULL, -1, &cause), 0);
	client_discover(&c, path, 0);
	ck_assert_str_eq(c.base, "https://10.0.0.1:7702");
	ck_assert_str_eq(c.addr_file, path);
	client_free(&c);
	ck_assert_int_eq(client_init(&c, "http://127.0.0.1:9", NULL, -1, &cause), 0);
	client_discover(&c, path, 1);
	ck_assert_str_eq(c.base, "http://127.0.0.1:9");
	ck_assert_str_eq(c.addr_file, path);
	client_free(&c);
	/* A URL given and no file named: no discovery (today's behaviour). */
	ck_assert_int_eq(client_init(&c, "http://127.0.0.1:9", NULL, -1, &cause), 0);
	client_discover(&c, NULL, 1);
	ck_assert_str_eq(c.addr_file, "");
	client_free(&c);
	/* A missing file changes nothing. */
	unlink(path);
	ck_assert_int_eq(client_init(&c, CLIENT_DEFAULT_URL, NULL, -1, &cause), 0);
	client_discover(&c, path, 0);
	ck_assert_str_eq(c.base, CLIENT_DEFAULT_URL);
	client_free(&c);

	/* call -v: the answer's status and the headers that tell its story. */
	memset(&resp, 0, sizeof resp);
	resp.status = 503;
	resp.headers =
		(char *)"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			"traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
			"X-Fusebox-Level: 2\r\nx-fusebox-source:rules\r\nRetry-After: 3\r\n"
			"X-Request-ID: fb-1\r\nServer: x\r\n\r\n";
	fp = open_memstream(&out, &outlen);
	cli_print_headers(fp, &resp);
	fclose(fp);
	ck_assert_str_eq(out,
			 "< HTTP 503\n"
			 "< traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n"
			 "< X-Fusebox-Level: 2\n"
			 "< x-fusebox-source: rules\n"
			 "< Retry-After: 3\n"
			 "< X-Request-ID: fb-1\n");
	free(out);
}
END_TEST

static Suite *
tui_model_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"parse_state", test_parse_state},
		{"breaker_names", test_breaker_names},
		{"parse_slo_alerts", test_parse_slo_alerts},
		{"parse_reviews", test_parse_reviews},
		{"events_ring", test_events_ring},
		{"history", test_history},
		{"weights_step", test_weights_step},
		{"filter", test_filter},
		{"client_pure", test_client_pure},
		{"parse_tail", test_parse_tail},
		{"hedge_rates", test_hedge_rates},
		{"client_discover", test_client_discover},
	};
	Suite *s = suite_create("tui_model");
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
	SRunner *sr = srunner_create(tui_model_suite());
	int failed;

	setlocale(LC_ALL, "C.UTF-8");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
