/*
 * api_slo: GET /v1/slo, /v1/alerts, /v1/events and /metrics (API.md).
 *
 * /v1/slo and the obs-owned /metrics families come from obs.c (in-memory
 * minute rings); the engine-state gauges (breakers, levels, bulkheads,
 * retry budget) are read here from struct engine; review, alert and event
 * listings are read from SQLite through the engine's reader, so they show
 * rows once the writer has committed them (at most one batch behind).
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
#include "metrics.h"
#include "obs.h"
#include "util.h"
#include "jobs.h"
#include "jsonutil.h"

#define EVENTS_LIMIT_DEFAULT	200
#define EVENTS_LIMIT_MAX	1000
#define ALERTS_RESOLVED_KEEP_MS (24LL * 3600 * 1000)
#define METRICS_MAX_BYTES	(16u << 20)

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
add_num_or_null(cJSON *o, const char *name, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddNumberToObject(o, name, v);
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
	after = store_reader_int(
		e->reader,
		"SELECT coalesce(min(coalesce((SELECT max(c.id) FROM alerts c WHERE c.rule = "
		"a.rule "
		"AND c.route IS a.route AND c.id < a.id AND c.state IN ('resolved', 'inactive')), "
		"0)), -1) FROM alerts a WHERE a.id IN (SELECT max(id) FROM alerts WHERE at < ?1 "
		"GROUP BY rule, route) AND a.state IN ('pending', 'firing')",
		v, 1, -1);
	v[1] = SVI(after >= 0 ? after : INT64_MAX);
	if (store_reader_query(e->reader,
			       "SELECT id, rule, route, severity, state, value, threshold, at "
			       "FROM alerts WHERE at >= ?1 OR id > ?2 ORDER BY id",
			       v, 2, fold_row, &f, &cause) != 0) {
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
		add_num_or_null(x, "value", ep->value);
		add_num_or_null(x, "threshold", ep->threshold);
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
	if (store_reader_query(e->reader,
			       "SELECT id, at, kind, subject, detail FROM events WHERE id > ?1 "
			       "ORDER BY id LIMIT ?2",
			       v, 2, event_row, arr, &cause) != 0) {
		cJSON_Delete(o);
		http_respond_error(r, 500, "store_error", "%s", cause ? cause : "query failed");
		free(cause);
		return;
	}
	respond_json(r, o);
}

struct review_counts {
	struct engine *e;
	int64_t (*pending)[PRIORITY__COUNT];
	int64_t *overdue;
};

static int
review_row(void *arg, sqlite3_stmt *row)
{
	struct review_counts *rc = arg;
	int route = engine_route_index(rc->e, col_text(row, 0));
	int64_t prio = sqlite3_column_int64(row, 1);

	if (route < 0 || prio < 0 || prio >= PRIORITY__COUNT)
		return 0;
	rc->pending[route][prio] += sqlite3_column_int64(row, 2);
	rc->overdue[route] += sqlite3_column_int64(row, 3);
	return 0;
}

static void
metrics_reviews(struct metrics *m, struct engine *e, int64_t now_wall)
{
	int64_t(*pending)[PRIORITY__COUNT] = xcalloc((size_t)MAX(e->nroutes, 1), sizeof *pending);
	int64_t *overdue = xcalloc((size_t)MAX(e->nroutes, 1), sizeof *overdue);
	struct review_counts rc = {e, pending, overdue};
	struct store_val v[] = {SVI(now_wall)};
	struct metrics_label l[2];
	char *cause = NULL;
	int i, p;

	if (store_reader_query(e->reader,
			       "SELECT route, priority, count(*), "
			       "sum(due_at IS NOT NULL AND due_at < ?1) FROM reviews "
			       "WHERE state IN ('pending', 'claimed') GROUP BY route, priority",
			       v, 1, review_row, &rc, &cause) != 0) {
		free(cause);
		goto out; /* leave the families out rather than report zeros */
	}
	metrics_family(m, "fusebox_review_pending", METRICS_GAUGE,
		       "Open review items (pending or claimed, overdue included), by route and "
		       "priority.");
	for (i = 0; i < e->nroutes; i++) {
		for (p = 0; p < PRIORITY__COUNT; p++) {
			l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
			l[1] = (struct metrics_label){"priority", priority_name((enum priority)p)};
			metrics_sample(m, "fusebox_review_pending", l, 2, (double)pending[i][p]);
		}
	}
	metrics_family(m, "fusebox_review_overdue", METRICS_GAUGE,
		       "Open review items past their SLA, by route.");
	for (i = 0; i < e->nroutes; i++) {
		l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
		metrics_sample(m, "fusebox_review_overdue", l, 1, (double)overdue[i]);
	}
out:
	free(pending);
	free(overdue);
}

static void
handle_metrics(struct http_req *r, struct engine *e)
{
	int64_t now_wall = clock_wall_ms(), now_mono = clock_mono_ms();
	struct metrics m;
	struct metrics_label l[1];
	struct store_stats ss;
	char *body = NULL;
	size_t len = 0;
	int i, ret;

	metrics_init(&m, METRICS_MAX_BYTES);
	obs_metrics_write(e->obs, &m, now_wall);
	metrics_family(&m, "fusebox_breaker_state", METRICS_GAUGE,
		       "Circuit breaker state: 0 closed, 1 open, 2 half_open, 3 forced_open, "
		       "4 forced_closed.");
	for (i = 0; i < e->nbackends; i++) {
		enum breaker_state st = breaker_state(&e->backends[i].breaker, now_mono);

		engine_breaker_events(e, &e->backends[i]);
		l[0] = (struct metrics_label){"backend", e->backends[i].cfg->name};
		metrics_sample(&m, "fusebox_breaker_state", l, 1, (double)st);
	}
	metrics_family(&m, "fusebox_inflight", METRICS_GAUGE,
		       "Attempts holding a bulkhead slot, by backend.");
	for (i = 0; i < e->nbackends; i++) {
		l[0] = (struct metrics_label){"backend", e->backends[i].cfg->name};
		metrics_sample(&m, "fusebox_inflight", l, 1,
			       (double)e->backends[i].bulkhead.inflight);
	}
	metrics_family(&m, "fusebox_route_level", METRICS_GAUGE,
		       "Effective route level (0 primary, 1 backup, 2 rules, 3 async).");
	for (i = 0; i < e->nroutes; i++) {
		l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
		metrics_sample(&m, "fusebox_route_level", l, 1, (double)engine_route_level(e, i));
	}
	metrics_family(&m, "fusebox_retry_budget_denied_total", METRICS_COUNTER,
		       "Retries the retry budget refused, by route.");
	for (i = 0; i < e->nroutes; i++) {
		l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
		metrics_sample(&m, "fusebox_retry_budget_denied_total", l, 1,
			       (double)e->routes[i].retries_denied);
	}
	metrics_reviews(&m, e, now_wall);
	store_get_stats(e->store, &ss);
	{
		/* the samples without a label */
		const struct {
			const char *name;
			enum metrics_type type;
			const char *help;
			double v;
		} ec[] = {
			{ "fusebox_log_rows_dropped_total", METRICS_COUNTER,
			  "Log rows refused because the SQLite writer queue was full.",
			  (double)ss.dropped },
			{ "fusebox_log_queue_rows", METRICS_GAUGE,
			  "Log rows waiting for the SQLite writer.", (double)ss.queued },
			{ "fusebox_log_writer_boosts_total", METRICS_COUNTER,
			  "Times the idle-priority SQLite writer was raised to normal scheduling "
			  "(backlog, a commit waited on, shutdown).",
			  (double)ss.boosts },
			{ "fusebox_jobs_queued", METRICS_GAUGE,
			  "Async jobs (L3, mode async) committed and waiting to run.",
			  (double)jobs_queued(e->jobs) },
			{ "fusebox_jobs_running", METRICS_GAUGE, "Async jobs running now.",
			  (double)jobs_running(e->jobs) },
			{ "fusebox_store_promises_total", METRICS_COUNTER,
			  "Durable writes requested (jobs accepted, results, reviews, overrides, audit).",
			  (double)ss.requests },
			{ "fusebox_store_sync_commits_total", METRICS_COUNTER,
			  "Transactions committed with synchronous=FULL (one fsync each; "
			  "promises made together share one).",
			  (double)ss.sync_commits },
			{ "fusebox_replays_total", METRICS_COUNTER,
			  "Calls answered from the idempotency table (replay or single flight): no calls row",
			  (double)e->counters.replays },
			{ "fusebox_rejected_inflight_total", METRICS_COUNTER,
			  "Calls refused 429: max_inflight reached", (double)e->counters.rejected_inflight },
			{ "fusebox_wire_resends_total", METRICS_COUNTER,
			  "Requests libcurl re-sent on a dead reused connection (each an attempt)",
			  (double)e->counters.wire_resends },
			{ "fusebox_inflight_calls", METRICS_GAUGE, "Calls admitted and not yet answered.",
			  (double)e->inflight },
		};
		size_t k;

		for (k = 0; k < ARRAY_SIZE(ec); k++) {
			metrics_family(&m, ec[k].name, ec[k].type, ec[k].help);
			metrics_sample(&m, ec[k].name, NULL, 0, ec[k].v);
		}
	}
	ret = metrics_finish(&m, &body, &len);
	if (ret != 0) {
		http_respond_error(r, 500, "internal", "metrics: %s", strerror(-ret));
		return;
	}
	r->content_type = "text/plain; version=0.0.4; charset=utf-8";
	http_respond(r, 200, body, len);
}

const struct endpoint api_slo_endpoints[] = {
	{ HTTP_GET, "/v1/slo", ACCESS_VIEWER, handle_slo },
	{ HTTP_GET, "/v1/alerts", ACCESS_VIEWER, handle_alerts },
	{ HTTP_GET, "/v1/events", ACCESS_VIEWER, handle_events },
	{ HTTP_GET, "/metrics", ACCESS_METRICS, handle_metrics },
	{ 0, NULL, 0, NULL },
};
