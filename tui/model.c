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

#include "util.h"
#include "wire.h"

const char *const model_slo_windows[SLO_NWIN] = {"5m", "30m", "1h", "6h", "1d", "3d", "30d"};

/* Copy at most dstsz-1 bytes of src, never splitting a UTF-8 sequence. */
static void
copy_str(char *dst, size_t dstsz, const char *src)
{
	size_t n = strlen(src);

	if (n >= dstsz) {
		n = dstsz - 1;
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static char *
dup_big(const char *src)
{
	size_t n = strlen(src);

	if (n > MODEL_BIG_MAX) {
		n = MODEL_BIG_MAX;
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	return xstrndup(src, n);
}

static const cJSON *
get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static void
get_str(const cJSON *o, const char *key, char *dst, size_t dstsz)
{
	const cJSON *v = get(o, key);

	if (cJSON_IsString(v) && v->valuestring != NULL)
		copy_str(dst, dstsz, v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(dst, dstsz, "%.0f", v->valuedouble);
	else
		dst[0] = '\0';
}

static double
get_num(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int
get_int(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < -2147483647.0 || v->valuedouble > 2147483647.0)
		return -1;
	return (int)v->valuedouble;
}

static int64_t
get_i64(const cJSON *o, const char *key, int64_t def)
{
	const cJSON *v = get(o, key);
	int64_t x;

	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	if (cJSON_IsString(v) && parse_int64(v->valuestring, &x) == 0)
		return x;
	return def;
}

/* An RFC3339 string (or a number of epoch ms); 0 when absent or null. */
static int64_t
get_time(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	int64_t ms;

	if (cJSON_IsString(v) && time_parse_rfc3339(v->valuestring, &ms) == 0)
		return ms;
	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	return 0;
}

/* A string as is; anything else (object, array, number) printed compactly; NULL for null. */
static char *
get_text(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	char *p, *r;

	if (v == NULL || cJSON_IsNull(v))
		return NULL;
	if (cJSON_IsString(v))
		return dup_big(v->valuestring);
	p = cJSON_PrintUnformatted(v);
	if (p == NULL)
		abort();
	r = dup_big(p);
	cJSON_free(p);
	return r;
}

/* Compact JSON text of a value, NULL when absent or null. */
static char *
get_json(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	char *p, *r;

	if (v == NULL || cJSON_IsNull(v))
		return NULL;
	p = cJSON_PrintUnformatted(v);
	if (p == NULL)
		abort();
	r = dup_big(p);
	cJSON_free(p);
	return r;
}

static int
parse_root(const char *json, size_t len, cJSON **root, char **cause)
{
	*root = cJSON_ParseWithLength(json, len);
	if (*root == NULL || !cJSON_IsObject(*root)) {
		cJSON_Delete(*root);
		*root = NULL;
		if (cause)
			*cause = xstrdup("the answer is not a JSON object");
		return MODEL_E_PARSE;
	}
	return 0;
}

static int
need_array(const cJSON *root, const char *key, const cJSON **arr, char **cause)
{
	*arr = get(root, key);
	if (!cJSON_IsArray(*arr)) {
		if (cause)
			*cause = xasprintf("the answer has no \"%s\" array", key);
		return MODEL_E_PARSE;
	}
	return 0;
}

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

static void
route_from_json(const cJSON *ro, struct route_v *r)
{
	const cJSON *f, *t, *targets;

	memset(r, 0, sizeof *r);
	get_str(ro, "name", r->name, sizeof r->name);
	r->level = get_int(ro, "level");
	r->auto_level = get_int(ro, "auto_level");
	f = get(ro, "forced_level");
	if (cJSON_IsObject(f)) {
		r->forced = 1;
		r->forced_lvl = get_int(f, "level");
		get_str(f, "actor", r->forced_actor, sizeof r->forced_actor);
		get_str(f, "reason", r->forced_reason, sizeof r->forced_reason);
		r->forced_until = get_time(f, "until");
	}
	r->budget_ms = get_int(ro, "budget_ms");
	targets = get(ro, "targets");
	cJSON_ArrayForEach(t, targets)
	{
		struct target_v *tv;

		if (r->ntargets >= MODEL_TARGETS_MAX)
			break;
		tv = &r->targets[r->ntargets++];
		get_str(t, "backend", tv->backend, sizeof tv->backend);
		tv->weight = get_int(t, "weight");
		tv->canary = cJSON_IsTrue(get(t, "canary"));
	}
	r->rps = get_num(ro, "rps_1m");
	r->p50_ms = get_num(ro, "p50_ms_1m");
	r->p99_ms = get_num(ro, "p99_ms_1m");
	r->review_pending = get_int(ro, "review_pending");
}

static void
backend_from_json(const cJSON *bo, struct backend_v *b)
{
	const cJSON *br, *lt;

	memset(b, 0, sizeof *b);
	get_str(bo, "name", b->name, sizeof b->name);
	get_str(bo, "version", b->version, sizeof b->version);
	br = get(bo, "breaker");
	get_str(br, "state", b->state, sizeof b->state);
	b->st = breaker_st_parse(b->state);
	get_str(br, "mode", b->mode, sizeof b->mode);
	b->failures = get_int(br, "failures");
	b->calls_in_window = get_int(br, "calls_in_window");
	b->failure_rate = get_num(br, "failure_rate");
	b->slow_call_rate = get_num(br, "slow_call_rate");
	b->opened_at = get_time(br, "opened_at");
	b->half_open_at = get_time(br, "half_open_at");
	lt = get(br, "last_transition");
	if (cJSON_IsObject(lt)) {
		b->has_transition = 1;
		b->tr_at = get_time(lt, "at");
		get_str(lt, "from", b->tr_from, sizeof b->tr_from);
		get_str(lt, "to", b->tr_to, sizeof b->tr_to);
		get_str(lt, "reason", b->tr_reason, sizeof b->tr_reason);
	}
	b->inflight = get_int(bo, "inflight");
	b->max_concurrent = get_int(bo, "max_concurrent");
	b->health = get_num(bo, "health");
	b->p90_ms = get_num(bo, "p90_ms_5m");
}

int
model_parse_route(const char *json, size_t len, struct route_v *out, char **cause)
{
	cJSON *root = NULL;
	int rc;

	rc = parse_root(json, len, &root, cause);
	if (rc != 0)
		goto out;
	route_from_json(root, out);
out:
	cJSON_Delete(root);
	return rc;
}

int
model_parse_state(const char *json, size_t len, struct state_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *routes, *backends, *it;
	struct state_v *s = NULL;
	int rc;

	rc = parse_root(json, len, &root, cause);
	if (rc != 0)
		goto out;
	rc = need_array(root, "routes", &routes, cause);
	if (rc == 0)
		rc = need_array(root, "backends", &backends, cause);
	if (rc != 0)
		goto out;
	s = xcalloc(1, sizeof *s);
	get_str(root, "version", s->version, sizeof s->version);
	s->started_at = get_time(root, "started_at");
	s->uptime_s = get_i64(root, "uptime_s", -1);
	s->inflight = get_int(root, "inflight");
	s->routes = xcalloc((size_t)cJSON_GetArraySize(routes) + 1, sizeof *s->routes);
	cJSON_ArrayForEach(it, routes) route_from_json(it, &s->routes[s->nroutes++]);
	s->backends = xcalloc((size_t)cJSON_GetArraySize(backends) + 1, sizeof *s->backends);
	cJSON_ArrayForEach(it, backends) backend_from_json(it, &s->backends[s->nbackends++]);
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
	w->total = get_i64(wo, "total", -1);
	w->service_good = get_i64(wo, "service_good", -1);
	w->smart_good = get_i64(wo, "smart_good", -1);
	w->service = get_num(wo, "service_availability");
	w->smart = get_num(wo, "smart_availability");
	w->latency_ok = get_num(wo, "latency_ok");
	w->timeout_rate = get_num(wo, "timeout_rate");
	w->retry_rate = get_num(wo, "retry_rate");
	w->format_violation_rate = get_num(wo, "format_violation_rate");
}

int
model_parse_slo(const char *json, size_t len, struct slo_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *routes, *it, *obj, *win, *eb;
	struct slo_v *s = NULL;
	int rc, i;

	rc = parse_root(json, len, &root, cause);
	if (rc == 0)
		rc = need_array(root, "routes", &routes, cause);
	if (rc != 0)
		goto out;
	s = xcalloc(1, sizeof *s);
	s->routes = xcalloc((size_t)cJSON_GetArraySize(routes) + 1, sizeof *s->routes);
	cJSON_ArrayForEach(it, routes)
	{
		struct slo_route_v *r = &s->routes[s->n++];

		get_str(it, "route", r->route, sizeof r->route);
		obj = get(it, "objectives");
		r->obj_service = get_num(obj, "service_availability");
		r->obj_smart = get_num(obj, "smart_availability");
		r->obj_latency_ms = get_num(obj, "latency_ms");
		r->obj_latency_target = get_num(obj, "latency_target");
		win = get(it, "windows");
		for (i = 0; i < SLO_NWIN; i++)
			window_from_json(get(win, model_slo_windows[i]), &r->w[i]);
		eb = get(it, "error_budget");
		r->budget_service = get_num(get(eb, "service"), "remaining");
		r->burn_service = get_num(get(eb, "service"), "burn_rate_1h");
		r->budget_smart = get_num(get(eb, "smart"), "remaining");
		r->burn_smart = get_num(get(eb, "smart"), "burn_rate_1h");
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

	rc = parse_root(json, len, &root, cause);
	if (rc == 0)
		rc = need_array(root, "alerts", &arr, cause);
	if (rc != 0)
		goto out;
	a = xcalloc(1, sizeof *a);
	a->v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *a->v);
	cJSON_ArrayForEach(it, arr)
	{
		struct alert_v *v = &a->v[a->n++];

		get_str(it, "id", v->id, sizeof v->id);
		get_str(it, "rule", v->rule, sizeof v->rule);
		get_str(it, "route", v->route, sizeof v->route);
		get_str(it, "severity", v->severity, sizeof v->severity);
		get_str(it, "state", v->state, sizeof v->state);
		v->value = get_num(it, "value");
		v->threshold = get_num(it, "threshold");
		v->since = get_time(it, "since");
		v->resolved_at = get_time(it, "resolved_at");
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
	v->id = get_i64(it, "id", -1);
	get_str(it, "route", v->route, sizeof v->route);
	get_str(it, "request_id", v->request_id, sizeof v->request_id);
	get_str(it, "priority", v->priority, sizeof v->priority);
	get_str(it, "reason", v->reason, sizeof v->reason);
	get_str(it, "state", v->state, sizeof v->state);
	v->created_at = get_time(it, "created_at");
	v->due_at = get_time(it, "due_at");
	v->overdue = cJSON_IsTrue(get(it, "overdue"));
	v->input = get_text(it, "input");
	v->raw_output = get_text(it, "raw_output");
	v->result = get_json(it, "result");
	v->alt_result = get_json(it, "alt_result");
	v->confidence = get_num(it, "confidence");
	get_str(it, "reviewer", v->reviewer, sizeof v->reviewer);
	v->decision_at = get_time(it, "decision_at");
}

int
model_parse_reviews(const char *json, size_t len, int single, struct reviews_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *arr, *it, *counts;
	struct reviews_v *r = NULL;
	int rc;

	rc = parse_root(json, len, &root, cause);
	if (rc != 0)
		goto out;
	r = xcalloc(1, sizeof *r);
	r->pending = r->overdue = -1;
	if (single) {
		r->v = xcalloc(1, sizeof *r->v);
		review_from_json(root, &r->v[r->n++]);
		goto done;
	}
	rc = need_array(root, "items", &arr, cause);
	if (rc != 0)
		goto out;
	r->v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *r->v);
	cJSON_ArrayForEach(it, arr) review_from_json(it, &r->v[r->n++]);
	counts = get(root, "counts");
	r->pending = get_int(counts, "pending");
	r->overdue = get_int(counts, "overdue");
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

	rc = parse_root(json, len, &root, cause);
	if (rc == 0)
		rc = need_array(root, "events", &arr, cause);
	if (rc != 0)
		goto out;
	e = xcalloc(1, sizeof *e);
	e->v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *e->v);
	cJSON_ArrayForEach(it, arr)
	{
		struct event_v *v = &e->v[e->n++];

		v->id = get_i64(it, "id", -1);
		v->at = get_time(it, "at");
		get_str(it, "kind", v->kind, sizeof v->kind);
		get_str(it, "subject", v->subject, sizeof v->subject);
		v->detail = get_text(it, "detail");
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
		copy_str(s->name, sizeof s->name, name);
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
