/*
 * api_slo: GET /v1/slo, /v1/alerts, /v1/events and /metrics (API.md).
 *
 * /v1/slo comes from obs.c (in-memory minute rings) and the /metrics page
 * from metrics_page.c; alert and event listings are read from SQLite
 * through the engine's reader, so they show rows once the writer has
 * committed them (at most one batch behind).
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

static void
handle_alerts(struct http_req *r, struct engine *e)
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
		http_respond_error(r, 500, "store_error", "%s", cause ? cause : "query failed");
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
handle_events(struct http_req *r, struct engine *e)
{
	const char *a = http_req_arg(r, "after"), *l = http_req_arg(r, "limit");
	int64_t after = 0, limit = EVENTS_LIMIT_DEFAULT;
	struct store_val v[2];
	char *cause = NULL;
	cJSON *o, *arr;

	if (a != NULL && (parse_int64(a, &after) != 0 || after < 0)) {
		http_respond_error(r, 400, "bad_request", "after: must be an event id >= 0");
		return;
	}
	if (l != NULL && (parse_int64(l, &limit) != 0 || limit < 1)) {
		http_respond_error(r, 400, "bad_request", "limit: must be an integer >= 1");
		return;
	}
	limit = MIN(limit, EVENTS_LIMIT_MAX);
	o = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(o, "events");
	v[0] = SVI(after);
	v[1] = SVI(limit);
	if (store_reader_run(e->reader, STORE_Q_EVENTS_AFTER, v, 2, event_row, arr, &cause) != 0) {
		cJSON_Delete(o);
		http_respond_error(r, 500, "store_error", "%s", cause ? cause : "query failed");
		free(cause);
		return;
	}
	respond_json(r, o);
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
	{HTTP_GET, "/v1/alerts", ACCESS_VIEWER, handle_alerts},
	{HTTP_GET, "/v1/events", ACCESS_VIEWER, handle_events},
	{HTTP_GET, "/metrics", ACCESS_METRICS, handle_metrics},
	{0, NULL, 0, NULL},
};
