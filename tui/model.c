/*
 * model: parse the control API into plain structs; history, event ring and
 * the pure helpers of the console (see model.h).
 *
 * Strings are copied into fixed buffers, cut at a UTF-8 character boundary
 * when too long; big texts (review input and outputs, event details) are
 * heap copies bounded by MODEL_BIG_MAX. Arrays in one parsed object are
 * allocated once per parse (not per field), so a 1 Hz snapshot of 200
 * routes and 200 backends costs three allocations.
 */
#include "model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "model_json.h"
#include "util.h"
#include "wire.h"

const char *const model_slo_windows[SLO_NWIN] = {"5m", "30m", "1h", "6h", "1d", "3d", "30d"};
const char *const model_hedge_results[HV__COUNT] = {"won", "lost", "failed", "denied"};

enum breaker_st
breaker_st_parse(const char *name)
{
	static const struct {
		const char *name;
		enum breaker_st st;
	} names[] = {
		{WIRE_BREAKER_CLOSED, BS_CLOSED},
		{WIRE_BREAKER_HALF_OPEN, BS_HALF_OPEN},
		{WIRE_BREAKER_OPEN, BS_OPEN},
		{WIRE_BREAKER_FORCED_OPEN, BS_FORCED_OPEN},
		{WIRE_BREAKER_FORCED_CLOSED, BS_FORCED_CLOSED},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(names[i].name, name) == 0)
			return names[i].st;
	return BS_UNKNOWN;
}

/* A route's "hedge": null or absent is off. */
static void
hedge_from_json(const cJSON *h, struct hedge_v *v)
{
	int k;

	for (k = 0; k < HV__COUNT; k++) {
		v->n[k] = -1;
		v->per_min[k] = NAN;
	}
	v->delay_ms = -1;
	if (!cJSON_IsObject(h))
		return;
	v->on = 1;
	v->delay_ms = model_json_int(h, "delay_ms");
	v->max_hedges = model_json_int(h, "max_hedges");
	model_json_str(h, "targets", v->targets, sizeof v->targets);
	for (k = 0; k < HV__COUNT; k++)
		v->n[k] = model_json_i64(h, model_hedge_results[k], -1);
}

static void
route_from_json(const cJSON *ro, struct route_v *r)
{
	const cJSON *f, *t, *targets;

	memset(r, 0, sizeof *r);
	model_json_str(ro, "name", r->name, sizeof r->name);
	r->level = model_json_int(ro, "level");
	r->auto_level = model_json_int(ro, "auto_level");
	f = model_json_get(ro, "forced_level");
	if (cJSON_IsObject(f)) {
		r->forced = 1;
		r->forced_lvl = model_json_int(f, "level");
		model_json_str(f, "actor", r->forced_actor, sizeof r->forced_actor);
		model_json_str(f, "reason", r->forced_reason, sizeof r->forced_reason);
		r->forced_until = model_json_time(f, "until");
	}
	r->budget_ms = model_json_int(ro, "budget_ms");
	targets = model_json_get(ro, "targets");
	cJSON_ArrayForEach(t, targets)
	{
		struct target_v *tv;

		if (r->ntargets >= MODEL_TARGETS_MAX)
			break;
		tv = &r->targets[r->ntargets++];
		model_json_str(t, "backend", tv->backend, sizeof tv->backend);
		tv->weight = model_json_int(t, "weight");
		tv->canary = cJSON_IsTrue(model_json_get(t, "canary"));
	}
	r->rps = model_json_num(ro, "rps_1m");
	r->p50_ms = model_json_num(ro, "p50_ms_1m");
	r->p99_ms = model_json_num(ro, "p99_ms_1m");
	r->review_pending = model_json_int(ro, "review_pending");
	hedge_from_json(model_json_get(ro, "hedge"), &r->hedge);
}

static void
backend_from_json(const cJSON *bo, struct backend_v *b)
{
	const cJSON *br, *lt, *cc, *rl;

	memset(b, 0, sizeof *b);
	model_json_str(bo, "name", b->name, sizeof b->name);
	model_json_str(bo, "version", b->version, sizeof b->version);
	br = model_json_get(bo, "breaker");
	model_json_str(br, "state", b->state, sizeof b->state);
	b->st = breaker_st_parse(b->state);
	model_json_str(br, "mode", b->mode, sizeof b->mode);
	b->failures = model_json_int(br, "failures");
	b->calls_in_window = model_json_int(br, "calls_in_window");
	b->failure_rate = model_json_num(br, "failure_rate");
	b->slow_call_rate = model_json_num(br, "slow_call_rate");
	b->opened_at = model_json_time(br, "opened_at");
	b->half_open_at = model_json_time(br, "half_open_at");
	lt = model_json_get(br, "last_transition");
	if (cJSON_IsObject(lt)) {
		b->has_transition = 1;
		b->tr_at = model_json_time(lt, "at");
		model_json_str(lt, "from", b->tr_from, sizeof b->tr_from);
		model_json_str(lt, "to", b->tr_to, sizeof b->tr_to);
		model_json_str(lt, "reason", b->tr_reason, sizeof b->tr_reason);
	}
	b->inflight = model_json_int(bo, "inflight");
	b->max_concurrent = model_json_int(bo, "max_concurrent");
	b->health = model_json_num(bo, "health");
	b->p90_ms = model_json_num(bo, "p90_ms_5m");
	cc = model_json_get(bo, "concurrency");
	b->adaptive = cJSON_IsTrue(model_json_get(cc, "adaptive"));
	b->limit = model_json_int(cc, "limit");
	b->limit_max = model_json_int(cc, "max");
	b->conc_inflight = model_json_int(cc, "inflight");
	b->waiting = model_json_int(cc, "waiting");
	b->baseline_ms = model_json_num(cc, "baseline_ms");
	b->latency_ms = model_json_num(cc, "latency_ms");
	rl = model_json_get(bo, "rate_limits");
	b->rl_requests = model_json_i64(rl, "remaining_requests", -1);
	b->rl_tokens = model_json_i64(rl, "remaining_tokens", -1);
	b->rl_skipped = model_json_i64(rl, "skipped", -1);
	b->hedges_per_min = NAN;
}

int
model_parse_route(const char *json, size_t len, struct route_v *out, char **cause)
{
	cJSON *root = NULL;
	int rc;

	rc = model_json_root(json, len, &root, cause);
	if (rc != 0)
		goto out;
	route_from_json(root, out);
out:
	cJSON_Delete(root);
	return rc;
}

/* Whether route r sends traffic to backend (one of its targets). */
static int
route_targets(const struct route_v *r, const char *backend)
{
	int j;

	for (j = 0; j < r->ntargets; j++)
		if (strcmp(r->targets[j].backend, backend) == 0)
			return 1;
	return 0;
}

static void
count_hedged(struct state_v *s)
{
	int i, j;

	for (i = 0; i < s->nbackends; i++)
		for (j = 0; j < s->nroutes; j++)
			s->backends[i].hedged += s->routes[j].hedge.on &&
						 route_targets(&s->routes[j], s->backends[i].name);
}

int
model_parse_state(const char *json, size_t len, struct state_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *routes, *backends, *it;
	struct state_v *s = NULL;
	int rc;

	rc = model_json_root(json, len, &root, cause);
	if (rc != 0)
		goto out;
	rc = model_json_array(root, "routes", &routes, cause);
	if (rc == 0)
		rc = model_json_array(root, "backends", &backends, cause);
	if (rc != 0)
		goto out;
	s = xcalloc(1, sizeof *s);
	model_json_str(root, "version", s->version, sizeof s->version);
	s->started_at = model_json_time(root, "started_at");
	s->uptime_s = model_json_i64(root, "uptime_s", -1);
	s->inflight = model_json_int(root, "inflight");
	s->routes = xcalloc((size_t)cJSON_GetArraySize(routes) + 1, sizeof *s->routes);
	cJSON_ArrayForEach(it, routes) route_from_json(it, &s->routes[s->nroutes++]);
	s->backends = xcalloc((size_t)cJSON_GetArraySize(backends) + 1, sizeof *s->backends);
	cJSON_ArrayForEach(it, backends) backend_from_json(it, &s->backends[s->nbackends++]);
	count_hedged(s);
	*out = s;
	s = NULL;
out:
	state_free(s);
	cJSON_Delete(root);
	return rc;
}

void
state_free(struct state_v *s)
{
	if (s == NULL)
		return;
	free(s->routes);
	free(s->backends);
	free(s);
}

static void
window_from_json(const cJSON *wo, struct slo_window_v *w)
{
	w->present = cJSON_IsObject(wo);
	w->total = model_json_i64(wo, "total", -1);
	w->service_good = model_json_i64(wo, "service_good", -1);
	w->smart_good = model_json_i64(wo, "smart_good", -1);
	w->service = model_json_num(wo, "service_availability");
	w->smart = model_json_num(wo, "smart_availability");
	w->latency_ok = model_json_num(wo, "latency_ok");
	w->timeout_rate = model_json_num(wo, "timeout_rate");
	w->retry_rate = model_json_num(wo, "retry_rate");
	w->format_violation_rate = model_json_num(wo, "format_violation_rate");
}

int
model_parse_slo(const char *json, size_t len, struct slo_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *routes, *it, *obj, *win, *eb;
	struct slo_v *s = NULL;
	int rc, i;

	rc = model_json_root(json, len, &root, cause);
	if (rc == 0)
		rc = model_json_array(root, "routes", &routes, cause);
	if (rc != 0)
		goto out;
	s = xcalloc(1, sizeof *s);
	s->routes = xcalloc((size_t)cJSON_GetArraySize(routes) + 1, sizeof *s->routes);
	cJSON_ArrayForEach(it, routes)
	{
		struct slo_route_v *r = &s->routes[s->n++];

		model_json_str(it, "route", r->route, sizeof r->route);
		obj = model_json_get(it, "objectives");
		r->obj_service = model_json_num(obj, "service_availability");
		r->obj_smart = model_json_num(obj, "smart_availability");
		r->obj_latency_ms = model_json_num(obj, "latency_ms");
		r->obj_latency_target = model_json_num(obj, "latency_target");
		win = model_json_get(it, "windows");
		for (i = 0; i < SLO_NWIN; i++)
			window_from_json(model_json_get(win, model_slo_windows[i]), &r->w[i]);
		eb = model_json_get(it, "error_budget");
		r->budget_service = model_json_num(model_json_get(eb, "service"), "remaining");
		r->burn_service = model_json_num(model_json_get(eb, "service"), "burn_rate_1h");
		r->budget_smart = model_json_num(model_json_get(eb, "smart"), "remaining");
		r->burn_smart = model_json_num(model_json_get(eb, "smart"), "burn_rate_1h");
	}
	*out = s;
	s = NULL;
out:
	slo_free(s);
	cJSON_Delete(root);
	return rc;
}

void
slo_free(struct slo_v *s)
{
	if (s == NULL)
		return;
	free(s->routes);
	free(s);
}

int
model_parse_alerts(const char *json, size_t len, struct alerts_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *arr, *it;
	struct alerts_v *a = NULL;
	int rc;

	rc = model_json_root(json, len, &root, cause);
	if (rc == 0)
		rc = model_json_array(root, "alerts", &arr, cause);
	if (rc != 0)
		goto out;
	a = xcalloc(1, sizeof *a);
	a->v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *a->v);
	cJSON_ArrayForEach(it, arr)
	{
		struct alert_v *v = &a->v[a->n++];

		model_json_str(it, "id", v->id, sizeof v->id);
		model_json_str(it, "rule", v->rule, sizeof v->rule);
		model_json_str(it, "route", v->route, sizeof v->route);
		model_json_str(it, "severity", v->severity, sizeof v->severity);
		model_json_str(it, "state", v->state, sizeof v->state);
		v->value = model_json_num(it, "value");
		v->threshold = model_json_num(it, "threshold");
		v->since = model_json_time(it, "since");
		v->resolved_at = model_json_time(it, "resolved_at");
	}
	*out = a;
	a = NULL;
out:
	alerts_free(a);
	cJSON_Delete(root);
	return rc;
}

void
alerts_free(struct alerts_v *a)
{
	if (a == NULL)
		return;
	free(a->v);
	free(a);
}

static void
review_from_json(const cJSON *it, struct review_v *v)
{
	memset(v, 0, sizeof *v);
	v->id = model_json_i64(it, "id", -1);
	model_json_str(it, "route", v->route, sizeof v->route);
	model_json_str(it, "request_id", v->request_id, sizeof v->request_id);
	model_json_str(it, "priority", v->priority, sizeof v->priority);
	model_json_str(it, "reason", v->reason, sizeof v->reason);
	model_json_str(it, "state", v->state, sizeof v->state);
	v->created_at = model_json_time(it, "created_at");
	v->due_at = model_json_time(it, "due_at");
	v->overdue = cJSON_IsTrue(model_json_get(it, "overdue"));
	v->input = model_json_text(it, "input");
	v->raw_output = model_json_text(it, "raw_output");
	v->result = model_json_print(it, "result");
	v->alt_result = model_json_print(it, "alt_result");
	v->confidence = model_json_num(it, "confidence");
	model_json_str(it, "reviewer", v->reviewer, sizeof v->reviewer);
	v->decision_at = model_json_time(it, "decision_at");
}

int
model_parse_reviews(const char *json, size_t len, int single, struct reviews_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *arr, *it, *counts;
	struct reviews_v *r = NULL;
	int rc;

	rc = model_json_root(json, len, &root, cause);
	if (rc != 0)
		goto out;
	r = xcalloc(1, sizeof *r);
	r->pending = r->overdue = -1;
	if (single) {
		r->v = xcalloc(1, sizeof *r->v);
		review_from_json(root, &r->v[r->n++]);
		goto done;
	}
	rc = model_json_array(root, "items", &arr, cause);
	if (rc != 0)
		goto out;
	r->v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *r->v);
	cJSON_ArrayForEach(it, arr) review_from_json(it, &r->v[r->n++]);
	counts = model_json_get(root, "counts");
	r->pending = model_json_int(counts, "pending");
	r->overdue = model_json_int(counts, "overdue");
done:
	*out = r;
	r = NULL;
out:
	reviews_free(r);
	cJSON_Delete(root);
	return rc;
}

void
reviews_free(struct reviews_v *r)
{
	int i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n; i++) {
		free(r->v[i].input);
		free(r->v[i].raw_output);
		free(r->v[i].result);
		free(r->v[i].alt_result);
	}
	free(r->v);
	free(r);
}

static int
review_cmp(const void *a, const void *b)
{
	const struct review_v *x = a, *y = b;
	int64_t dx = x->due_at > 0 ? x->due_at : INT64_MAX;
	int64_t dy = y->due_at > 0 ? y->due_at : INT64_MAX;

	if (dx != dy)
		return dx < dy ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void
reviews_sort(struct reviews_v *r)
{
	if (r != NULL && r->n > 1)
		qsort(r->v, (size_t)r->n, sizeof *r->v, review_cmp);
}

int
model_parse_events(const char *json, size_t len, struct events_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *arr, *it;
	struct events_v *e = NULL;
	int rc;

	rc = model_json_root(json, len, &root, cause);
	if (rc == 0)
		rc = model_json_array(root, "events", &arr, cause);
	if (rc != 0)
		goto out;
	e = xcalloc(1, sizeof *e);
	e->v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *e->v);
	cJSON_ArrayForEach(it, arr)
	{
		struct event_v *v = &e->v[e->n++];

		v->id = model_json_i64(it, "id", -1);
		v->at = model_json_time(it, "at");
		model_json_str(it, "kind", v->kind, sizeof v->kind);
		model_json_str(it, "subject", v->subject, sizeof v->subject);
		v->detail = model_json_text(it, "detail");
	}
	*out = e;
	e = NULL;
out:
	events_free(e);
	cJSON_Delete(root);
	return rc;
}

void
events_free(struct events_v *e)
{
	int i;

	if (e == NULL)
		return;
	for (i = 0; i < e->n; i++)
		free(e->v[i].detail);
	free(e->v);
	free(e);
}

const struct backend_v *
state_backend(const struct state_v *s, const char *name)
{
	int i;

	for (i = 0; s != NULL && i < s->nbackends; i++)
		if (strcmp(s->backends[i].name, name) == 0)
			return &s->backends[i];
	return NULL;
}

const struct route_v *
state_route(const struct state_v *s, const char *name)
{
	int i;

	for (i = 0; s != NULL && i < s->nroutes; i++)
		if (strcmp(s->routes[i].name, name) == 0)
			return &s->routes[i];
	return NULL;
}

const struct slo_route_v *
slo_route(const struct slo_v *s, const char *name)
{
	int i;

	for (i = 0; s != NULL && i < s->n; i++)
		if (strcmp(s->routes[i].route, name) == 0)
			return &s->routes[i];
	return NULL;
}

int
alerts_firing(const struct alerts_v *a, const char *route)
{
	int i, n = 0;

	for (i = 0; a != NULL && i < a->n; i++)
		if (strcmp(a->v[i].state, "firing") == 0 &&
		    (route == NULL || strcmp(a->v[i].route, route) == 0))
			n++;
	return n;
}

/*
 * Series are looked up by name; the routes of consecutive snapshots come in
 * the same order, so the search starts where the last one ended and a push
 * per route per tick is O(1) in the common case.
 */
static int
history_index(const struct history *h, const char *name, int hint)
{
	int i, k;

	for (k = 0; k < h->n; k++) {
		i = (hint + k) % h->n;
		if (strcmp(h->s[i].name, name) == 0)
			return i;
	}
	return -1;
}

void
history_push(struct history *h, const char *name, double rps, double smart)
{
	struct hist_series *s;
	int i = history_index(h, name, h->n ? h->hint % h->n : 0);

	if (i < 0) {
		if (h->n == h->cap) {
			h->cap = h->cap ? h->cap * 2 : 16;
			h->s = xrealloc(h->s, (size_t)h->cap * sizeof *h->s);
		}
		i = h->n++;
		s = &h->s[i];
		memset(s, 0, sizeof *s);
		model_json_copy(s->name, sizeof s->name, name);
	}
	s = &h->s[i];
	s->rps[s->head] = (float)rps;
	s->smart[s->head] = (float)smart;
	s->head = (s->head + 1) % HIST_LEN;
	if (s->n < HIST_LEN)
		s->n++;
	h->hint = i + 1;
}

const struct hist_series *
history_find(const struct history *h, const char *name)
{
	int i = history_index(h, name, 0);

	return i < 0 ? NULL : &h->s[i];
}

int
history_get(const struct hist_series *s, enum hist_what what, int count, float *out)
{
	const float *src;
	int i, start;

	if (s == NULL)
		return 0;
	src = what == HIST_RPS ? s->rps : s->smart;
	if (count > s->n)
		count = s->n;
	start = (s->head - count + HIST_LEN) % HIST_LEN;
	for (i = 0; i < count; i++)
		out[i] = src[(start + i) % HIST_LEN];
	return count;
}

void
history_free(struct history *h)
{
	free(h->s);
	h->s = NULL;
	h->n = h->cap = 0;
}

static struct rate_series *
rate_series_get(struct rate_track *t, const char *name)
{
	struct rate_series *rs;
	int i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->s[i].name, name) == 0)
			return &t->s[i];
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 8;
		t->s = xrealloc(t->s, (size_t)t->cap * sizeof *t->s);
	}
	rs = &t->s[t->n++];
	memset(rs, 0, sizeof *rs);
	model_json_copy(rs->name, sizeof rs->name, name);
	return rs;
}

/* Record counts v at now_ms; a counter that went back (or time) restarts the series. */
static void
rate_series_push(struct rate_series *rs, int64_t now_ms, const int64_t *v)
{
	int last = (rs->head - 1 + RATE_SAMPLES) % RATE_SAMPLES, k;

	for (k = 0; rs->n > 0 && k < HV__COUNT; k++)
		if (v[k] >= 0 && rs->v[last][k] >= 0 && v[k] < rs->v[last][k])
			rs->n = 0;
	if (rs->n > 0 && now_ms < rs->at[last])
		rs->n = 0;
	rs->at[rs->head] = now_ms;
	memcpy(rs->v[rs->head], v, sizeof rs->v[0]);
	rs->head = (rs->head + 1) % RATE_SAMPLES;
	if (rs->n < RATE_SAMPLES)
		rs->n++;
}

/* Per-minute rates of the newest sample against the oldest of the last window. */
static void
rate_series_rates(const struct rate_series *rs, double *out)
{
	int newest = (rs->head - 1 + RATE_SAMPLES) % RATE_SAMPLES, old = -1, j, k;
	int64_t now = rs->at[newest], span;

	for (k = 0; k < HV__COUNT; k++)
		out[k] = NAN;
	/* The oldest sample in the window, else the newest before it. */
	for (j = 0; j < rs->n - 1; j++) {
		int i = (rs->head - rs->n + j + RATE_SAMPLES) % RATE_SAMPLES;

		if (now - rs->at[i] <= RATE_WINDOW_MS || j == rs->n - 2) {
			old = i;
			break;
		}
	}
	if (old < 0)
		return;
	span = MAX(now - rs->at[old], RATE_MIN_SPAN_MS);
	for (k = 0; k < HV__COUNT; k++)
		if (rs->v[newest][k] >= 0 && rs->v[old][k] >= 0)
			out[k] =
				(double)(rs->v[newest][k] - rs->v[old][k]) * 60000.0 / (double)span;
}

void
rates_update(struct rate_track *t, struct state_v *s, int64_t now_ms)
{
	int i, j;

	for (i = 0; i < t->n; i++)
		t->s[i].seen = 0;
	for (i = 0; i < s->nroutes; i++) {
		struct route_v *r = &s->routes[i];
		struct rate_series *rs;

		if (!r->hedge.on)
			continue;
		rs = rate_series_get(t, r->name);
		rs->seen = 1;
		rate_series_push(rs, now_ms, r->hedge.n);
		rate_series_rates(rs, r->hedge.per_min);
	}
	/* Routes gone (or no longer hedging): their series go. */
	for (i = 0; i < t->n;)
		if (!t->s[i].seen)
			t->s[i] = t->s[--t->n];
		else
			i++;
	for (i = 0; i < s->nbackends; i++) {
		struct backend_v *b = &s->backends[i];
		double sum = 0;

		for (j = 0; j < s->nroutes; j++) {
			const struct hedge_v *h = &s->routes[j].hedge;

			if (h->on && route_targets(&s->routes[j], b->name))
				sum += h->per_min[HV_WON] + h->per_min[HV_LOST] +
				       h->per_min[HV_FAILED];
		}
		b->hedges_per_min = b->hedged ? sum : NAN;
	}
}

void
rate_track_free(struct rate_track *t)
{
	free(t->s);
	memset(t, 0, sizeof *t);
}

void
event_ring_init(struct event_ring *r, int cap)
{
	memset(r, 0, sizeof *r);
	r->cap = cap > 0 ? cap : 1;
	r->v = xcalloc((size_t)r->cap, sizeof *r->v);
}

void
event_ring_push(struct event_ring *r, struct events_v *e)
{
	int i, slot;

	for (i = 0; e != NULL && i < e->n; i++) {
		if (e->v[i].id <= r->last_id)
			continue;
		if (r->n == r->cap) {
			free(r->v[r->head].detail);
			r->head = (r->head + 1) % r->cap;
			r->n--;
		}
		slot = (r->head + r->n) % r->cap;
		r->v[slot] = e->v[i];
		e->v[i].detail = NULL;
		r->n++;
		r->last_id = e->v[i].id;
	}
}

const struct event_v *
event_ring_get(const struct event_ring *r, int i)
{
	if (i < 0 || i >= r->n)
		return NULL;
	return &r->v[(r->head + i) % r->cap];
}

void
event_ring_free(struct event_ring *r)
{
	int i;

	for (i = 0; r->v != NULL && i < r->n; i++)
		free(r->v[(r->head + i) % r->cap].detail);
	free(r->v);
	memset(r, 0, sizeof *r);
}

int
weights_step(const int *cur, int n, int idx, int dir, int *out)
{
	static const int ladder[] = {0, 1, 5, 10, 20, 25, 50, 75, 100};
	int64_t total = 0, others = 0;
	int i, pct, next = -1, rest, given = 0, big = -1, nothers = 0;

	if (n < 2 || idx < 0 || idx >= n)
		return 1;
	for (i = 0; i < n; i++) {
		total += cur[i] > 0 ? cur[i] : 0;
		if (i != idx && cur[i] > 0)
			others += cur[i];
	}
	pct = total > 0 ? (int)((cur[idx] > 0 ? cur[idx] : 0) * 100 / total) : 0;
	if (dir > 0) {
		for (i = 0; i < (int)ARRAY_SIZE(ladder) && next < 0; i++)
			if (ladder[i] > pct)
				next = ladder[i];
	} else {
		for (i = (int)ARRAY_SIZE(ladder) - 1; i >= 0 && next < 0; i--)
			if (ladder[i] < pct)
				next = ladder[i];
	}
	if (next < 0)
		return 1;
	rest = 100 - next;
	for (i = 0; i < n; i++) {
		if (i == idx)
			continue;
		nothers++;
		if (others > 0)
			out[i] = (int)((cur[i] > 0 ? cur[i] : 0) * (int64_t)rest / others);
		else
			out[i] = rest / (n - 1);
		given += out[i];
		if (big < 0 || out[i] > out[big] || (others == 0 && big < 0))
			big = i;
	}
	/* Rounding leftovers go to the largest other target. */
	if (nothers > 0 && big >= 0)
		out[big] += rest - given;
	out[idx] = next;
	return 0;
}

int
filter_match(const char *needle, const char *const *fields)
{
	size_t nl;
	int i;

	if (needle == NULL || *needle == '\0')
		return 1;
	nl = strlen(needle);
	for (i = 0; fields[i] != NULL; i++) {
		const char *h = fields[i];

		for (; *h; h++)
			if (strncasecmp(h, needle, nl) == 0)
				return 1;
	}
	return 0;
}
