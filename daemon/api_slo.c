/*
 * api_slo: GET /v1/slo, /v1/alerts, /v1/events and /metrics (API.md).
 *
 * /v1/slo comes from obs.c (in-memory minute rings) and the /metrics page
 * from metrics_page.c; alert and event listings are read from SQLite
 * through the engine's reader once the writer has committed every row
 * queued before the request (a flush marker, read_after_writer(): the
 * request waits suspended, the loop does not), so an event is never behind
 * the state change it records.
 * Alerts are listed as episodes folded from the alerts table: an episode
 * opens with a pending (or directly firing) row, its id is that row's id,
 * and it ends resolved, or vanishes when pending goes back to inactive.
 * Engine thread.
 */
#include "api_slo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api_common.h"
#include "clock.h"
#include "engine.h"
#include "jsonutil.h"
#include "metrics_page.h"
#include "obs.h"
#include "util.h"

#define EVENTS_LIMIT_DEFAULT	200
#define EVENTS_LIMIT_MAX	1000
#define ALERTS_RESOLVED_KEEP_MS (24LL * 3600 * 1000)

static void
respond_json(struct http_req *r, cJSON *o)
{
	char *body = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	if (body == NULL) {
		http_respond_error(r, 500, "internal", "cannot render JSON");
		return;
	}
	http_respond(r, 200, body, strlen(body));
}

static void
handle_slo(struct http_req *r, struct engine *e)
{
	const char *name = http_req_arg(r, "route");
	int route = -1;

	if (name != NULL) {
		route = engine_route_index(e, name);
		if (route < 0) {
			http_respond_error(r, 404, "unknown_route", "no route named \"%s\"", name);
			return;
		}
	}
	respond_json(r, obs_slo_json(e->obs, route, clock_wall_ms()));
}

/* One alert episode while folding rows. */
struct episode {
	int64_t id;
	char *rule;
	char *route;
	char *severity;
	char state[16];
	double value, threshold;
	int64_t since, resolved_at;
	int open;
};

struct fold {
	struct episode *v;
	int n, cap;
};

static const char *
col_text(sqlite3_stmt *row, int i)
{
	const unsigned char *t = sqlite3_column_text(row, i);

	return t ? (const char *)t : "";
}

static double
col_real(sqlite3_stmt *row, int i)
{
	return sqlite3_column_type(row, i) == SQLITE_NULL ? NAN : sqlite3_column_double(row, i);
}

static int
fold_row(void *arg, sqlite3_stmt *row)
{
	struct fold *f = arg;
	const char *rule = col_text(row, 1), *route = col_text(row, 2), *state = col_text(row, 4);
	struct episode *ep = NULL;
	int i;

	for (i = f->n - 1; i >= 0; i--) {
		if (f->v[i].open && strcmp(f->v[i].rule, rule) == 0 &&
		    strcmp(f->v[i].route, route) == 0) {
			ep = &f->v[i];
			break;
		}
	}
	if (strcmp(state, "pending") == 0 || strcmp(state, "firing") == 0) {
		if (ep == NULL) {
			if (f->n == f->cap) {
				f->cap = f->cap ? f->cap * 2 : 16;
				f->v = xrealloc(f->v, (size_t)f->cap * sizeof *f->v);
			}
			ep = &f->v[f->n++];
			memset(ep, 0, sizeof *ep);
			ep->id = sqlite3_column_int64(row, 0);
			ep->rule = xstrdup(rule);
			ep->route = xstrdup(route);
			ep->since = sqlite3_column_int64(row, 7);
			ep->open = 1;
		}
		free(ep->severity);
		ep->severity = xstrdup(col_text(row, 3));
		snprintf(ep->state, sizeof ep->state, "%s", state);
		ep->value = col_real(row, 5);
		ep->threshold = col_real(row, 6);
	} else if (ep != NULL && strcmp(state, "resolved") == 0) {
		snprintf(ep->state, sizeof ep->state, "resolved");
		ep->value = col_real(row, 5);
		ep->resolved_at = sqlite3_column_int64(row, 7);
		ep->open = 0;
	} else if (ep != NULL && strcmp(state, "inactive") == 0) {
		/* Pending that never fired: not an alert anyone needs to see. */
		ep->open = 0;
		ep->state[0] = '\0';
	}
	return 0;
}

/*
 * A read that must see every row queued before it (an event is readable no
 * later than the state it records shows through the API): the request
 * waits, suspended, for the writer to commit what is queued — a flush
 * marker through engine_commit_later(), so the loop never waits on the
 * disk — and then reads. Should the marker not be taken (the store is
 * closing), it reads at once.
 */
struct after_writer {
	struct http_req *r;
	void (*read)(struct http_req *r, struct engine *e, int64_t after, int64_t limit);
	int64_t after, limit;
};

static void
after_writer_done(struct engine *e, void *arg, int rc, int64_t rowid, const char *cause)
{
	struct after_writer *w = arg;

	w->read(w->r, e, w->after, w->limit);
	free(w);
}

static void
read_after_writer(struct http_req *r, struct engine *e,
		  void (*read)(struct http_req *, struct engine *, int64_t, int64_t), int64_t after,
		  int64_t limit)
{
	struct after_writer *w = xmalloc(sizeof *w);

	*w = (struct after_writer){r, read, after, limit};
	if (engine_commit_later(e, NULL, 0, after_writer_done, w) != 0) {
		free(w);
		read(r, e, after, limit);
	}
}

static void
alerts_read(struct http_req *r, struct engine *e, int64_t unused_after, int64_t unused_limit)
{
	int64_t now = clock_wall_ms(), cutoff = now - ALERTS_RESOLVED_KEEP_MS, after;
	struct fold f = {NULL, 0, 0};
	struct store_val v[2];
	char *cause = NULL;
	cJSON *o = NULL, *arr;
	int i;

	/*
	 * Rows to fold: the last 24 h, and before that, the rows of episodes
	 * still open at the cutoff (after the last row that closed them).
	 */
	v[0] = SVI(cutoff);
	after = store_reader_run_int(e->reader, STORE_Q_ALERTS_FOLD_AFTER, v, 1, -1);
	v[1] = SVI(after >= 0 ? after : INT64_MAX);
	if (store_reader_run(e->reader, STORE_Q_ALERTS_FOLD, v, 2, fold_row, &f, &cause) != 0) {
		api_store_error(r, e->reader, cause);
		goto out;
	}
	o = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(o, "alerts");
	for (i = f.n - 1; i >= 0; i--) {
		struct episode *ep = &f.v[i];
		cJSON *x;

		if (ep->state[0] == '\0' || (!ep->open && ep->resolved_at < cutoff))
			continue;
		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "id", (double)ep->id);
		cJSON_AddStringToObject(x, "rule", ep->rule);
		cJSON_AddStringToObject(x, "route", ep->route);
		cJSON_AddStringToObject(x, "severity", ep->severity ? ep->severity : "");
		cJSON_AddStringToObject(x, "state", ep->state);
		json_add_number(x, "value", ep->value);
		json_add_number(x, "threshold", ep->threshold);
		json_add_time(x, "since", ep->since);
		json_add_time(x, "resolved_at", ep->open ? 0 : ep->resolved_at);
		cJSON_AddItemToArray(arr, x);
	}
	respond_json(r, o);
out:
	for (i = 0; i < f.n; i++) {
		free(f.v[i].rule);
		free(f.v[i].route);
		free(f.v[i].severity);
	}
	free(f.v);
	free(cause);
}

/* After the writer's queue, so an alert shows here once /metrics shows it. */
static void
handle_alerts(struct http_req *r, struct engine *e)
{
	read_after_writer(r, e, alerts_read, 0, 0);
}

static int
event_row(void *arg, sqlite3_stmt *row)
{
	cJSON *arr = arg, *x = cJSON_CreateObject();

	cJSON_AddNumberToObject(x, "id", (double)sqlite3_column_int64(row, 0));
	json_add_time(x, "at", sqlite3_column_int64(row, 1));
	cJSON_AddStringToObject(x, "kind", col_text(row, 2));
	if (sqlite3_column_type(row, 3) == SQLITE_NULL)
		cJSON_AddNullToObject(x, "subject");
	else
		cJSON_AddStringToObject(x, "subject", col_text(row, 3));
	if (sqlite3_column_type(row, 4) == SQLITE_NULL)
		cJSON_AddNullToObject(x, "detail");
	else
		cJSON_AddStringToObject(x, "detail", col_text(row, 4));
	cJSON_AddItemToArray(arr, x);
	return 0;
}

static void
events_read(struct http_req *r, struct engine *e, int64_t after, int64_t limit)
{
	struct store_val v[2];
	char *cause = NULL;
	cJSON *o, *arr;

	o = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(o, "events");
	v[0] = SVI(after);
	v[1] = SVI(limit);
	if (store_reader_run(e->reader, STORE_Q_EVENTS_AFTER, v, 2, event_row, arr, &cause) != 0) {
		cJSON_Delete(o);
		api_store_error(r, e->reader, cause);
		free(cause);
		return;
	}
	respond_json(r, o);
}

static void
handle_events(struct http_req *r, struct engine *e)
{
	const char *a = http_req_arg(r, "after"), *l = http_req_arg(r, "limit");
	int64_t after = 0, limit = EVENTS_LIMIT_DEFAULT;

	if (a != NULL && (parse_int64(a, &after) != 0 || after < 0)) {
		http_respond_error(r, 400, "bad_request", "after: must be an event id >= 0");
		return;
	}
	if (l != NULL && (parse_int64(l, &limit) != 0 || limit < 1)) {
		http_respond_error(r, 400, "bad_request", "limit: must be an integer >= 1");
		return;
	}
	limit = MIN(limit, EVENTS_LIMIT_MAX);
	/* An event is readable no later than the state it records (the route's
	 * level, a breaker) shows through the API. */
	read_after_writer(r, e, events_read, after, limit);
}

#define HISTORY_MINUTES_DEFAULT 60
#define HISTORY_MINUTES_MAX	360
#define HISTORY_OUTCOMES_MS	(5 * 60000LL)

/* The series of one route while GET /v1/slo/history folds the calls rows. */
struct hist_fold {
	const struct config *cfg;
	int64_t from;
	int minutes;
	cJSON **deg, **p99; /* per route: arrays of minutes slots */
};

static int
hist_call_row(void *arg, sqlite3_stmt *row)
{
	struct hist_fold *h = arg;
	const char *route = col_text(row, 0);
	int64_t slot = (sqlite3_column_int64(row, 1) - h->from) / SLO_MINUTE_MS;
	int i;

	if (slot < 0 || slot >= h->minutes)
		return 0;
	for (i = 0; i < h->cfg->nroutes; i++) {
		if (strcmp(h->cfg->routes[i].name, route) != 0)
			continue;
		cJSON_ReplaceItemInArray(h->deg[i], (int)slot,
					 cJSON_CreateNumber((double)sqlite3_column_int64(row, 3)));
		cJSON_ReplaceItemInArray(h->p99[i], (int)slot,
					 cJSON_CreateNumber((double)sqlite3_column_int64(row, 4)));
		break;
	}
	return 0;
}

static int
hist_outcome_row(void *arg, sqlite3_stmt *row)
{
	cJSON *arr = arg, *last = cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1), *oc;
	const char *backend = col_text(row, 0);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(last, "backend");

	if (!cJSON_IsString(name) || strcmp(name->valuestring, backend) != 0) {
		last = cJSON_CreateObject();
		cJSON_AddStringToObject(last, "backend", backend);
		cJSON_AddObjectToObject(last, "outcomes");
		cJSON_AddItemToArray(arr, last);
	}
	oc = cJSON_GetObjectItemCaseSensitive(last, "outcomes");
	cJSON_AddNumberToObject(oc, col_text(row, 1)[0] ? col_text(row, 1) : "unknown",
				(double)sqlite3_column_int64(row, 2));
	return 0;
}

static cJSON *
null_array(int n)
{
	cJSON *a = cJSON_CreateArray();
	int i;

	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNull());
	return a;
}

/*
 * GET /v1/slo/history?minutes=60[&route=R]: per route, one slot per
 * minute, oldest first, the last one the minute now running: calls,
 * service and smart availability from obs' minutes (as /v1/slo counts
 * them), degraded calls and p99 latency from the calls table; per
 * backend, the outcomes of its attempts in the last 5 minutes.
 */
static void
handle_slo_history(struct http_req *r, struct engine *e)
{
	const char *m = http_req_arg(r, "minutes"), *name = http_req_arg(r, "route");
	const struct config *cfg = obs_config(e->obs);
	struct slo_minute mins[HISTORY_MINUTES_MAX];
	int64_t now = clock_wall_ms(), minutes = HISTORY_MINUTES_DEFAULT;
	struct hist_fold h;
	struct store_val v[1];
	char *cause = NULL;
	cJSON *o, *routes, *backends;
	int route = -1, i, j, n;

	if (m != NULL &&
	    (parse_int64(m, &minutes) != 0 || minutes < 1 || minutes > HISTORY_MINUTES_MAX)) {
		http_respond_error(r, 400, "bad_request", "minutes: must be an integer 1..%d",
				   HISTORY_MINUTES_MAX);
		return;
	}
	if (name != NULL && (route = engine_route_index(e, name)) < 0) {
		http_respond_error(r, 404, "unknown_route", "no route named \"%s\"", name);
		return;
	}
	memset(&h, 0, sizeof h);
	h.cfg = cfg;
	h.minutes = (int)minutes;
	h.from = slo_minute_of(now) - (minutes - 1) * SLO_MINUTE_MS;
	h.deg = xcalloc((size_t)cfg->nroutes + 1, sizeof *h.deg);
	h.p99 = xcalloc((size_t)cfg->nroutes + 1, sizeof *h.p99);
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "minutes", (double)minutes);
	json_add_time(o, "from", h.from);
	json_add_time(o, "to", now);
	routes = cJSON_AddArrayToObject(o, "routes");
	for (i = 0; i < cfg->nroutes; i++) {
		h.deg[i] = null_array(h.minutes);
		h.p99[i] = null_array(h.minutes);
	}
	v[0] = SVI(h.from);
	if (store_reader_run(e->reader, STORE_Q_HISTORY_CALLS, v, 1, hist_call_row, &h, &cause) !=
	    0)
		goto fail;
	for (i = 0; i < cfg->nroutes; i++) {
		cJSON *x, *calls, *svc, *smart;

		if (route >= 0 && route != i)
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "route", cfg->routes[i].name);
		calls = cJSON_AddArrayToObject(x, "calls");
		for (j = 0; j < h.minutes; j++)
			cJSON_AddItemToArray(calls, cJSON_CreateNumber(0));
		svc = null_array(h.minutes);
		smart = null_array(h.minutes);
		n = obs_route_minutes(e->obs, i, h.from, mins, h.minutes);
		for (j = 0; j < n; j++) {
			int slot = (int)((mins[j].minute - h.from) / SLO_MINUTE_MS);
			double t = mins[j].v[SLO_TOTAL];

			if (slot < 0 || slot >= h.minutes || t <= 0)
				continue;
			cJSON_ReplaceItemInArray(calls, slot, cJSON_CreateNumber(t));
			cJSON_ReplaceItemInArray(
				svc, slot, cJSON_CreateNumber(mins[j].v[SLO_SERVICE_GOOD] / t));
			cJSON_ReplaceItemInArray(smart, slot,
						 cJSON_CreateNumber(mins[j].v[SLO_SMART_GOOD] / t));
		}
		cJSON_AddItemToObject(x, "degraded", h.deg[i]);
		cJSON_AddItemToObject(x, "service", svc);
		cJSON_AddItemToObject(x, "smart", smart);
		cJSON_AddItemToObject(x, "p99_ms", h.p99[i]);
		h.deg[i] = h.p99[i] = NULL;
		cJSON_AddItemToArray(routes, x);
	}
	backends = cJSON_AddArrayToObject(o, "backends");
	v[0] = SVI(now - HISTORY_OUTCOMES_MS);
	if (store_reader_run(e->reader, STORE_Q_HISTORY_OUTCOMES, v, 1, hist_outcome_row, backends,
			     &cause) != 0)
		goto fail;
	respond_json(r, o);
	o = NULL;
fail:
	if (o != NULL) {
		cJSON_Delete(o);
		api_store_error(r, e->reader, cause);
	}
	for (i = 0; i < cfg->nroutes; i++) {
		cJSON_Delete(h.deg[i]);
		cJSON_Delete(h.p99[i]);
	}
	free(h.deg);
	free(h.p99);
	free(cause);
}

static void
handle_metrics(struct http_req *r, struct engine *e)
{
	char *body = NULL;
	size_t len = 0;
	int ret;

	ret = metrics_page_write(e, clock_wall_ms(), clock_mono_ms(), &body, &len);
	if (ret != 0) {
		http_respond_error(r, 500, "internal", "metrics: %s", strerror(-ret));
		return;
	}
	r->content_type = "text/plain; version=0.0.4; charset=utf-8";
	http_respond(r, 200, body, len);
}

const struct endpoint api_slo_endpoints[] = {
	{HTTP_GET, "/v1/slo", ACCESS_VIEWER, handle_slo},
	{HTTP_GET, "/v1/slo/history", ACCESS_VIEWER, handle_slo_history},
	{HTTP_GET, "/v1/alerts", ACCESS_VIEWER, handle_alerts},
	{HTTP_GET, "/v1/events", ACCESS_VIEWER, handle_events},
	{HTTP_GET, "/metrics", ACCESS_METRICS, handle_metrics},
	{0, NULL, 0, NULL},
};
