/*
 * api_control: the control plane of API.md — GET /v1/state (viewer) and
 * the operator mutations of levels, weights and breakers. Engine thread.
 *
 * A mutation parses and type-checks its body here (400 naming the field),
 * then hands the values to control.c, which range-checks them, commits the
 * override, audit and event rows in one transaction and changes the
 * runtime state; the answer is the updated object, in the same shape as in
 * /v1/state.
 *
 * A fan-out from the console (API.md "Fleet") carries X-Fusebox-Action-Id;
 * once control.c has committed the change, the id is set on the audit row
 * it wrote (the newest row of that actor and target: the engine thread is
 * the one writer of audit rows and the commit is synchronous, so no other
 * row can come between). A header that is not 1-64 of [A-Za-z0-9._:-] is
 * a 400 before anything changes.
 *
 * Route traffic figures (rps_1m, p50_ms_1m, p99_ms_1m) come from the
 * `calls` rows of the last 60 s: those rows are written by the store's
 * writer thread in batches, so they lag the calls by up to ~50 ms; the
 * percentiles are nearest-rank over every call finished in the window
 * (null when none).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_common.h"
#include "clock.h"
#include "control.h"
#include "engine.h"
#include "gate.h"
#include "http.h"
#include "log.h"
#include "reload.h"
#include "util.h"
#include "jsonutil.h"

#define WEIGHT_MAX    1000000
#define ACTION_ID_MAX 64

/* The request's X-Fusebox-Action-Id: 0 with *id (NULL when absent), or -1 after a 400. */
static int
action_id_get(struct http_req *r, const char **id)
{
	const char *h = http_req_header(r, "X-Fusebox-Action-Id");
	size_t i, n;

	*id = NULL;
	if (h == NULL)
		return 0;
	n = strlen(h);
	for (i = 0; i < n; i++)
		if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
		      (h[i] >= '0' && h[i] <= '9') || strchr("._:-", h[i]) != NULL))
			break;
	if (n == 0 || n > ACTION_ID_MAX || i < n) {
		http_respond_error(r, 400, "bad_request",
				   "X-Fusebox-Action-Id: must be 1-%d of A-Z a-z 0-9 . _ : -",
				   ACTION_ID_MAX);
		return -1;
	}
	*id = h;
	return 0;
}

/* Set id on the audit row just committed for target ("route:NAME", "backend:NAME"). */
static void
action_id_store(struct http_req *r, struct engine *e, const char *id, const char *kind,
		const char *name)
{
	char target[192], *cause = NULL;
	struct store_val v[3];
	struct store_op op = {STORE_AUDIT_ACTION_ID_SET, v, 3};

	if (id == NULL)
		return;
	snprintf(target, sizeof target, "%s:%s", kind, name);
	v[0] = SVT(id);
	v[1] = SVT(r->actor);
	v[2] = SVT(target);
	if (store_commit_now(e->store, &op, 1, NULL, &cause) != 0) {
		log_warn("control", "audit %s: action id %s not stored: %s", target, id,
			 cause ? cause : "store error");
		free(cause);
	}
}

static void
add_int_or_null(cJSON *o, const char *key, int64_t v)
{
	if (v < 0)
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, (double)v);
}

/* Traffic of one route over the last minute, and its open review items. */
struct route_stats {
	double rps;
	int64_t p50_ms, p99_ms; /* -1: no call finished in the window */
	int64_t review_pending;
};

static void
route_stats_get(struct engine *e, int i, int64_t now_wall, struct route_stats *st)
{
	const struct route_cfg *rc = e->routes[i].cfg;
	/* A call finished in the window started at most its budget before it
	 * (+ a generous slack): that bound lets SQLite use calls_started_at. */
	struct store_val v[] = {SVT(rc->name), SVI(now_wall - 60000 - rc->budget_ms - 60000),
				SVI(now_wall - 60000), SVI(0)};
	uint64_t cut = store_reader_timeouts(e->reader);
	int64_t n;

	n = store_reader_run_int(e->reader, STORE_Q_ROUTE_CALLS, v, 3, 0);
	st->rps = round((double)n / 60.0 * 1000.0) / 1000.0;
	st->p50_ms = st->p99_ms = -1;
	if (n > 0) {
		v[3] = SVI((50 * n + 99) / 100 - 1);
		st->p50_ms = store_reader_run_int(e->reader, STORE_Q_ROUTE_ELAPSED_RANK, v, 4, -1);
		v[3] = SVI((99 * n + 99) / 100 - 1);
		if (store_reader_timeouts(e->reader) == cut)
			st->p99_ms = store_reader_run_int(e->reader, STORE_Q_ROUTE_ELAPSED_RANK, v,
							  4, -1);
	}
	st->review_pending = store_reader_run_int(e->reader, STORE_Q_ROUTE_REVIEWS_OPEN, v, 1, 0);
}

/*
 * A route's hedging (null when off): the delay a call's attempt on its
 * first target's backend would wait now, and how hedges ended.
 */
static cJSON *
hedge_json(struct engine *e, const struct route_rt *rt)
{
	static const char *const names[HEDGE__COUNT] = {"won", "lost", "failed", "denied"};
	const struct hedge_cfg *h = &rt->cfg->retry.hedge;
	cJSON *o;
	int b, k;

	if (!h->enabled)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	b = rt->cfg->ntargets > 0 ? engine_backend_index(e, rt->cfg->targets[0].backend) : -1;
	add_int_or_null(o, "delay_ms",
			b >= 0 ? gate_hedge_delay_ms(&e->backends[b].gate, h, clock_mono_ms())
			       : -1);
	cJSON_AddNumberToObject(o, "max_hedges", h->max_hedges);
	cJSON_AddStringToObject(o, "targets", h->targets == HEDGE_OTHER ? "other" : "same");
	for (k = 0; k < HEDGE__COUNT; k++)
		cJSON_AddNumberToObject(o, names[k], (double)rt->hedges[k]);
	return o;
}

/* The route object of API.md (also the answer of route mutations). */
static cJSON *
route_json(struct engine *e, int i, int64_t now_wall)
{
	struct route_rt *rt = &e->routes[i];
	cJSON *ro = cJSON_CreateObject(), *targets;
	struct route_stats st;
	int j;

	route_stats_get(e, i, now_wall, &st);
	cJSON_AddStringToObject(ro, "name", rt->cfg->name);
	cJSON_AddNumberToObject(ro, "level", engine_route_level(e, i));
	cJSON_AddNumberToObject(ro, "auto_level", rt->auto_level);
	cJSON_AddItemToObject(ro, "forced_level", control_forced_json(e, i));
	cJSON_AddNumberToObject(ro, "budget_ms", rt->cfg->budget_ms);
	targets = cJSON_AddArrayToObject(ro, "targets");
	for (j = 0; j < rt->cfg->ntargets; j++) {
		cJSON *t = cJSON_CreateObject();

		cJSON_AddStringToObject(t, "backend", rt->cfg->targets[j].backend);
		cJSON_AddNumberToObject(t, "weight", rt->weights[j]);
		cJSON_AddBoolToObject(t, "canary", rt->cfg->targets[j].canary);
		cJSON_AddItemToArray(targets, t);
	}
	cJSON_AddNumberToObject(ro, "rps_1m", st.rps);
	add_int_or_null(ro, "p50_ms_1m", st.p50_ms);
	add_int_or_null(ro, "p99_ms_1m", st.p99_ms);
	cJSON_AddNumberToObject(ro, "review_pending", (double)st.review_pending);
	cJSON_AddItemToObject(ro, "hedge", hedge_json(e, rt));
	return ro;
}

/*
 * The latency reference of a backend's health as shown: the tightest
 * budget of the routes that send it traffic (the router scores it per
 * route with that route's budget), else its own total timeout.
 */
static int
health_budget(const struct engine *e, const struct backend_rt *b)
{
	int i, j, best = 0;

	for (i = 0; i < e->nroutes; i++) {
		const struct route_cfg *rc = e->routes[i].cfg;
		int uses = 0;

		for (j = 0; j < rc->ntargets; j++)
			uses |= strcmp(rc->targets[j].backend, b->cfg->name) == 0;
		for (j = 0; rc->backup.enabled && j < rc->backup.ntargets; j++)
			uses |= strcmp(rc->backup.targets[j].backend, b->cfg->name) == 0;
		if (uses && (best == 0 || rc->budget_ms < best))
			best = rc->budget_ms;
	}
	return best ? best : b->cfg->total_ms;
}

static cJSON *
breaker_json(struct backend_rt *b, int64_t now_ms)
{
	cJSON *o = cJSON_CreateObject(), *lt;
	struct breaker_stats bs;
	enum breaker_state st = breaker_state(&b->breaker, now_ms);
	static const char *const modes[] = {"consecutive", "count", "time"};
	int64_t t;

	breaker_get_stats(&b->breaker, now_ms, &bs);
	cJSON_AddStringToObject(o, "state", breaker_state_name(st));
	cJSON_AddStringToObject(o, "mode", modes[b->cfg->breaker.mode]);
	cJSON_AddNumberToObject(o, "failures", bs.consecutive_failures);
	cJSON_AddNumberToObject(o, "calls_in_window", bs.calls_in_window);
	cJSON_AddNumberToObject(o, "failure_rate", bs.failure_rate);
	cJSON_AddNumberToObject(o, "slow_call_rate", bs.slow_call_rate);
	t = breaker_opened_at(&b->breaker);
	cJSON_AddItemToObject(o, "opened_at", json_time(t >= 0 ? clock_mono_to_wall_ms(t) : 0));
	t = breaker_half_open_at(&b->breaker);
	cJSON_AddItemToObject(o, "half_open_at", json_time(t >= 0 ? clock_mono_to_wall_ms(t) : 0));
	if (b->breaker.ntransitions) {
		lt = cJSON_AddObjectToObject(o, "last_transition");
		t = clock_mono_to_wall_ms(b->breaker.last.at_ms);
		cJSON_AddItemToObject(lt, "at", json_time(t));
		cJSON_AddStringToObject(lt, "from", breaker_state_name(b->breaker.last.from));
		cJSON_AddStringToObject(lt, "to", breaker_state_name(b->breaker.last.to));
		cJSON_AddStringToObject(lt, "reason", b->breaker.last.reason);
	} else {
		cJSON_AddNullToObject(o, "last_transition");
	}
	return o;
}

/*
 * The adaptive concurrency limit as it stands: the bulkhead's cap (the
 * limit when adaptive), the ceiling, attempts in flight, the latency
 * baseline and the latest window's latency.
 */
static cJSON *
concurrency_json(const struct backend_rt *b)
{
	cJSON *o = cJSON_CreateObject();
	int on = b->cfg->adaptive.enabled;

	cJSON_AddBoolToObject(o, "adaptive", on);
	cJSON_AddNumberToObject(o, "limit", b->bulkhead.max);
	cJSON_AddNumberToObject(o, "max", b->cfg->max_concurrent);
	cJSON_AddNumberToObject(o, "inflight", b->bulkhead.inflight);
	cJSON_AddNumberToObject(o, "waiting", b->bulkhead.nwaiting);
	if (on && limiter_baseline_ms(&b->gate.limiter) > 0) {
		cJSON_AddNumberToObject(o, "baseline_ms", limiter_baseline_ms(&b->gate.limiter));
		cJSON_AddNumberToObject(o, "latency_ms", limiter_latency_ms(&b->gate.limiter));
	} else {
		cJSON_AddNullToObject(o, "baseline_ms");
		cJSON_AddNullToObject(o, "latency_ms");
	}
	return o;
}

/* What the router knows of a backend's rate limits (-1 → null: unknown). */
static cJSON *
rate_limits_json(const struct backend_rt *b, int64_t now_ms)
{
	cJSON *o = cJSON_CreateObject();

	add_int_or_null(o, "remaining_requests", ratelimit_remaining_requests(&b->gate.rl, now_ms));
	add_int_or_null(o, "remaining_tokens", ratelimit_remaining_tokens(&b->gate.rl, now_ms));
	cJSON_AddNumberToObject(o, "skipped", (double)b->gate.rate_limited_local);
	return o;
}

/* The backend object of API.md (also the answer of breaker mutations). */
static cJSON *
backend_json(struct engine *e, struct backend_rt *b, int64_t now_ms)
{
	cJSON *bo = cJSON_CreateObject();

	cJSON_AddStringToObject(bo, "name", b->cfg->name);
	if (b->cfg->version)
		cJSON_AddStringToObject(bo, "version", b->cfg->version);
	else
		cJSON_AddNullToObject(bo, "version");
	cJSON_AddItemToObject(bo, "breaker", breaker_json(b, now_ms));
	/* Looking may have taken a due OPEN -> HALF_OPEN edge: emit its event. */
	engine_breaker_events(e, b);
	cJSON_AddNumberToObject(bo, "inflight", b->bulkhead.inflight);
	cJSON_AddNumberToObject(bo, "max_concurrent", b->bulkhead.max);
	cJSON_AddNumberToObject(bo, "health",
				health_score(&b->health, now_ms, health_budget(e, b),
					     b->bulkhead.inflight, b->bulkhead.max));
	add_int_or_null(bo, "p90_ms_5m", health_percentile(&b->health, now_ms, 300, 0.9, 1));
	cJSON_AddItemToObject(bo, "concurrency", concurrency_json(b));
	cJSON_AddItemToObject(bo, "rate_limits", rate_limits_json(b, now_ms));
	return bo;
}

/* Answer 200 with o (deleted). */
static void
respond_json(struct http_req *r, cJSON *o)
{
	char *body = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	http_respond(r, 200, body, strlen(body));
}

/*
 * The store's health: "ok", or "storage_degraded" while log rows are
 * being lost to a failing disk (store.h, stats.degraded).
 */
static cJSON *
storage_json(struct engine *e)
{
	cJSON *so = cJSON_CreateObject();
	struct store_stats ss;

	store_get_stats(e->store, &ss);
	cJSON_AddStringToObject(so, "state", ss.degraded ? "storage_degraded" : "ok");
	cJSON_AddNumberToObject(so, "log_rows_dropped", (double)ss.rows_dropped);
	cJSON_AddNumberToObject(so, "log_rows_truncated", (double)ss.truncated);
	cJSON_AddNumberToObject(so, "read_timeouts", (double)store_reader_timeouts(e->reader));
	cJSON_AddItemToObject(so, "last_loss_at", json_time(ss.degraded_at));
	if (ss.last_error[0] != '\0')
		cJSON_AddStringToObject(so, "last_error", ss.last_error);
	else
		cJSON_AddNullToObject(so, "last_error");
	return so;
}

static void
handle_state(struct http_req *r, struct engine *e)
{
	cJSON *o = cJSON_CreateObject(), *routes, *backends;
	int64_t now_ms = clock_mono_ms(), now_wall = clock_wall_ms();
	uint64_t cut = store_reader_timeouts(e->reader);
	char ts[40];
	int i;

	cJSON_AddStringToObject(o, "version", FB_VERSION);
	time_format_rfc3339(e->started_wall_ms, ts, sizeof ts);
	cJSON_AddStringToObject(o, "started_at", ts);
	cJSON_AddNumberToObject(o, "uptime_s", (double)((now_wall - e->started_wall_ms) / 1000));
	cJSON_AddNumberToObject(o, "inflight", e->inflight);
	routes = cJSON_AddArrayToObject(o, "routes");
	for (i = 0; i < e->nroutes && store_reader_timeouts(e->reader) == cut; i++)
		cJSON_AddItemToArray(routes, route_json(e, i, now_wall));
	backends = cJSON_AddArrayToObject(o, "backends");
	for (i = 0; i < e->nbackends; i++)
		cJSON_AddItemToArray(backends, backend_json(e, &e->backends[i], now_ms));
	cJSON_AddItemToObject(o, "storage", storage_json(e));
	if (store_reader_timeouts(e->reader) != cut) {
		/* a route's figures could not be read in time: no half answer */
		cJSON_Delete(o);
		http_req_add_header(r, "Retry-After", "1");
		http_respond_error(r, 503, "storage_slow",
				   "reading the route figures took too long; try again");
		return;
	}
	respond_json(r, o);
}

/* ---- mutations ---- */

/*
 * Parse r's body as a JSON object into *out (caller deletes). 0, or 400
 * answered.
 */
static int
body_object(struct http_req *r, cJSON **out)
{
	cJSON *o = NULL;

	if (r->body.len > 0)
		o = cJSON_ParseWithLength(r->body.data, r->body.len);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		http_respond_error(r, 400, "bad_request", "body: must be a JSON object");
		return 400;
	}
	*out = o;
	return 0;
}

/* An integral JSON number in [min, max] into *out: 0, else -1. */
static int
json_int(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return -1;
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
		return -1;
	*out = (int64_t)d;
	return 0;
}

/*
 * Optional string member key of o: *out is its value (borrowed) or NULL
 * when absent or null. 0, or 400 answered.
 */
static int
opt_string(struct http_req *r, const cJSON *o, const char *key, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v)) {
		http_respond_error(r, 400, "bad_request", "%s: must be a string", key);
		return 400;
	}
	*out = v->valuestring;
	return 0;
}

/* Answer an error from control.c. */
static void
respond_control_error(struct http_req *r, int rc, const char *cause)
{
	if (rc == CONTROL_E_INVALID)
		http_respond_error(r, 400, "bad_request", "%s", cause ? cause : "invalid value");
	else
		http_respond_error(r, 500, "store_error", "%s",
				   cause ? cause : "cannot persist the change");
}

static int
route_param(struct http_req *r, struct engine *e)
{
	int i = engine_route_index(e, r->params[0]);

	if (i < 0)
		http_respond_error(r, 404, "unknown_route", "no route named \"%s\"", r->params[0]);
	return i;
}

static void
handle_level_put(struct http_req *r, struct engine *e)
{
	struct control_who who = {r->actor, r->remote};
	cJSON *o = NULL;
	const cJSON *v;
	const char *reason;
	char *cause = NULL;
	const char *aid;
	int64_t level, ttl_s = 0;
	int route, rc;

	if ((route = route_param(r, e)) < 0 || action_id_get(r, &aid) != 0)
		goto out;
	if (body_object(r, &o) != 0)
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(o, "level");
	if (v == NULL || json_int(v, 0, CONTROL_LEVEL_MAX, &level) != 0) {
		http_respond_error(r, 400, "bad_request", "level: %s an integer 0-3",
				   v == NULL ? "required:" : "must be");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "reason");
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
		http_respond_error(r, 400, "bad_request", "reason: %s",
				   v == NULL ? "required (why the level is forced)"
					     : "must be a non-empty string");
		goto out;
	}
	reason = v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(o, "ttl_s");
	if (v != NULL && !cJSON_IsNull(v) && json_int(v, 1, CONTROL_TTL_MAX_S, &ttl_s) != 0) {
		http_respond_error(r, 400, "bad_request",
				   "ttl_s: must be a positive integer (seconds, <= %lld)",
				   CONTROL_TTL_MAX_S);
		goto out;
	}
	rc = control_level_force(e, route, (int)level, reason, ttl_s, &who, &cause);
	if (rc != 0) {
		respond_control_error(r, rc, cause);
		goto out;
	}
	action_id_store(r, e, aid, "route", e->routes[route].cfg->name);
	respond_json(r, route_json(e, route, clock_wall_ms()));
out:
	cJSON_Delete(o);
	free(cause);
}

static void
handle_level_delete(struct http_req *r, struct engine *e)
{
	struct control_who who = {r->actor, r->remote};
	const char *aid;
	char *cause = NULL;
	int route, rc;

	if ((route = route_param(r, e)) < 0 || action_id_get(r, &aid) != 0)
		goto out;
	rc = control_level_release(e, route, &who, &cause);
	if (rc != 0) {
		respond_control_error(r, rc, cause);
		goto out;
	}
	action_id_store(r, e, aid, "route", e->routes[route].cfg->name);
	respond_json(r, route_json(e, route, clock_wall_ms()));
out:
	free(cause);
}

static void
handle_weights_put(struct http_req *r, struct engine *e)
{
	struct control_who who = {r->actor, r->remote};
	const struct route_cfg *rc;
	cJSON *o = NULL;
	const cJSON *ws, *m;
	const char *reason, *aid;
	char *cause = NULL;
	int *w = NULL, route, j, found, err;

	if ((route = route_param(r, e)) < 0 || action_id_get(r, &aid) != 0)
		goto out;
	if (body_object(r, &o) != 0)
		goto out;
	rc = e->routes[route].cfg;
	ws = cJSON_GetObjectItemCaseSensitive(o, "weights");
	if (!cJSON_IsObject(ws) || ws->child == NULL) {
		http_respond_error(r, 400, "bad_request",
				   "weights: required (an object {\"<backend>\": weight, ...} "
				   "naming at least one primary target)");
		goto out;
	}
	if (opt_string(r, o, "reason", &reason) != 0)
		goto out;
	w = xcalloc((size_t)MAX(rc->ntargets, 1), sizeof *w);
	memcpy(w, e->routes[route].weights, (size_t)rc->ntargets * sizeof *w);
	cJSON_ArrayForEach(m, ws)
	{
		int64_t val;

		found = 0;
		for (j = 0; j < rc->ntargets; j++)
			found |= strcmp(rc->targets[j].backend, m->string) == 0;
		if (!found) {
			http_respond_error(r, 400, "bad_request",
					   "weights.%s: not a primary target of route %s",
					   m->string, rc->name);
			goto out;
		}
		if (json_int(m, 0, WEIGHT_MAX, &val) != 0) {
			http_respond_error(r, 400, "bad_request",
					   "weights.%s: must be an integer 0-%d", m->string,
					   WEIGHT_MAX);
			goto out;
		}
		for (j = 0; j < rc->ntargets; j++)
			if (strcmp(rc->targets[j].backend, m->string) == 0)
				w[j] = (int)val;
	}
	err = control_weights_set(e, route, w, reason, &who, &cause);
	if (err != 0) {
		respond_control_error(r, err, cause);
		goto out;
	}
	action_id_store(r, e, aid, "route", rc->name);
	respond_json(r, route_json(e, route, clock_wall_ms()));
out:
	free(w);
	cJSON_Delete(o);
	free(cause);
}

static void
handle_breaker_put(struct http_req *r, struct engine *e)
{
	struct control_who who = {r->actor, r->remote};
	cJSON *o = NULL;
	const cJSON *v;
	const char *reason, *aid;
	char *cause = NULL;
	enum breaker_force f;
	int i, rc;

	for (i = 0; i < e->nbackends; i++)
		if (strcmp(e->backends[i].cfg->name, r->params[0]) == 0)
			break;
	if (i == e->nbackends) {
		http_respond_error(r, 404, "unknown_backend", "no backend named \"%s\"",
				   r->params[0]);
		goto out;
	}
	if (action_id_get(r, &aid) != 0 || body_object(r, &o) != 0)
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(o, "state");
	if (cJSON_IsString(v) && strcmp(v->valuestring, "forced_open") == 0) {
		f = BREAKER_FORCE_OPEN;
	} else if (cJSON_IsString(v) && strcmp(v->valuestring, "forced_closed") == 0) {
		f = BREAKER_FORCE_CLOSED;
	} else if (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0) {
		f = BREAKER_FORCE_AUTO;
	} else {
		http_respond_error(r, 400, "bad_request",
				   "state: %s \"forced_open\", "
				   "\"forced_closed\" or \"auto\"",
				   v == NULL ? "required:" : "must be");
		goto out;
	}
	if (opt_string(r, o, "reason", &reason) != 0)
		goto out;
	rc = control_breaker_force(e, i, f, reason, &who, &cause);
	if (rc != 0) {
		respond_control_error(r, rc, cause);
		goto out;
	}
	action_id_store(r, e, aid, "backend", e->backends[i].cfg->name);
	respond_json(r, backend_json(e, &e->backends[i], clock_mono_ms()));
out:
	cJSON_Delete(o);
	free(cause);
}

/*
 * POST /v1/reload: re-read the configuration (and tokens) file. On error the
 * running configuration stays and the answer is 400 with every error line.
 * The audit row is committed before the answer, as for every mutation.
 */
static void
handle_reload(struct http_req *r, struct engine *e)
{
	char *cause = NULL, *before = NULL, *after = NULL, *body;
	cJSON *o;
	int rc;

	before = xasprintf("{\"backends\":%d,\"routes\":%d}", e->nbackends, e->nroutes);
	rc = reload_from_disk(e, &cause);
	if (rc != 0) {
		http_respond_error(r, 400, "invalid_config",
				   "configuration refused, the running one stays: %s",
				   cause ? cause : "unknown error");
		goto out;
	}
	after = xasprintf("{\"backends\":%d,\"routes\":%d}", e->nbackends, e->nroutes);
	{
		struct store_val av[] = {SVI(clock_wall_ms()), SVT(r->actor), SVT("config.reload"),
					 SVT(e->cfg->path),    SVT(before),   SVT(after),
					 SVT(r->remote)};
		struct store_op op = {STORE_AUDIT_INSERT, av, (int)ARRAY_SIZE(av)};
		char *acause = NULL;

		if (store_commit_now(e->store, &op, 1, NULL, &acause) != 0) {
			http_respond_error(r, 500, "store_failed",
					   "reloaded, but the audit row failed: %s",
					   acause ? acause : "?");
			free(acause);
			goto out;
		}
	}
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "reloaded", 1);
	cJSON_AddStringToObject(o, "config", e->cfg->path);
	cJSON_AddNumberToObject(o, "backends", e->nbackends);
	cJSON_AddNumberToObject(o, "routes", e->nroutes);
	body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	http_respond(r, 200, body, strlen(body));
out:
	free(cause);
	free(before);
	free(after);
}

#define AUDIT_LIMIT_DEFAULT 200
#define AUDIT_LIMIT_MAX	    1000

/* A JSON text column as JSON (null when NULL; a string when it does not parse). */
static void
add_json_col(cJSON *o, const char *key, sqlite3_stmt *row, int i)
{
	const unsigned char *t = sqlite3_column_text(row, i);
	cJSON *v;

	if (t == NULL) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	v = cJSON_Parse((const char *)t);
	cJSON_AddItemToObject(o, key, v != NULL ? v : cJSON_CreateString((const char *)t));
}

static void
add_text_col(cJSON *o, const char *key, sqlite3_stmt *row, int i)
{
	const unsigned char *t = sqlite3_column_text(row, i);

	json_add_string(o, key, (const char *)t);
}

static int
audit_row(void *arg, sqlite3_stmt *row)
{
	cJSON *arr = arg, *x = cJSON_CreateObject();

	cJSON_AddNumberToObject(x, "id", (double)sqlite3_column_int64(row, 0));
	json_add_time(x, "at", sqlite3_column_int64(row, 1));
	add_text_col(x, "actor", row, 2);
	add_text_col(x, "action", row, 3);
	add_text_col(x, "target", row, 4);
	add_json_col(x, "before", row, 5);
	add_json_col(x, "after", row, 6);
	add_text_col(x, "remote", row, 7);
	add_text_col(x, "action_id", row, 8);
	cJSON_AddItemToArray(arr, x);
	return 0;
}

/* GET /v1/audit?after=ID&limit=200 (API.md "Fleet"): audit rows, ascending id. */
static void
handle_audit(struct http_req *r, struct engine *e)
{
	const char *a = http_req_arg(r, "after"), *l = http_req_arg(r, "limit");
	int64_t after = 0, limit = AUDIT_LIMIT_DEFAULT;
	struct store_val v[2];
	char *cause = NULL;
	cJSON *o, *arr;

	if (a != NULL && (parse_int64(a, &after) != 0 || after < 0)) {
		http_respond_error(r, 400, "bad_request", "after: must be an audit id >= 0");
		return;
	}
	if (l != NULL && (parse_int64(l, &limit) != 0 || limit < 1)) {
		http_respond_error(r, 400, "bad_request", "limit: must be an integer >= 1");
		return;
	}
	limit = MIN(limit, AUDIT_LIMIT_MAX);
	o = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(o, "audit");
	v[0] = SVI(after);
	v[1] = SVI(limit);
	if (store_reader_run(e->reader, STORE_Q_AUDIT_AFTER, v, 2, audit_row, arr, &cause) != 0) {
		cJSON_Delete(o);
		api_store_error(r, e->reader, cause);
		free(cause);
		return;
	}
	respond_json(r, o);
}

const struct endpoint api_control_endpoints[] = {
	{HTTP_POST, "/v1/reload", ACCESS_OPERATOR, handle_reload},
	{HTTP_GET, "/v1/state", ACCESS_VIEWER, handle_state},
	{HTTP_PUT, "/v1/routes/{}/level", ACCESS_OPERATOR, handle_level_put},
	{HTTP_DELETE, "/v1/routes/{}/level", ACCESS_OPERATOR, handle_level_delete},
	{HTTP_PUT, "/v1/routes/{}/weights", ACCESS_OPERATOR, handle_weights_put},
	{HTTP_PUT, "/v1/backends/{}/breaker", ACCESS_OPERATOR, handle_breaker_put},
	{HTTP_GET, "/v1/audit", ACCESS_VIEWER, handle_audit},
	{0, NULL, 0, NULL},
};
