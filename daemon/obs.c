/*
 * obs: what the engine observes, turned into SLO minutes, Prometheus
 * series and alerts.
 *
 * Per route, a slo_ring holds the minute counters of the last 30 days
 * (loaded from slo_minutes at start). Every counted call also accumulates
 * into the route's "dirty" minute, which is written to slo_minutes as a
 * delta (STORE_SLO_MINUTE_ADD adds, so rows never need reading back) when
 * the minute changes and at least every OBS_FLUSH_MS, and at obs_free():
 * a crash loses at most that much, a clean stop nothing.
 *
 * Once a second obs_tick() evaluates every alert rule (alerts.c) over the
 * windows of its route; each transition is logged, stored (alerts row +
 * events row kind "alert") and, when firing or resolved, POSTed to the
 * alert webhook and/or Alertmanager through a private notify worker (only
 * created when one is configured). A firing alert is re-sent to
 * Alertmanager every minute so it does not time out there; an episode
 * found pending/firing in the alerts table at start resumes.
 *
 * Thread: everything here runs on the engine thread. The config, store and
 * reader are borrowed and must outlive the obs.
 */
#include "obs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "alerts.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "slo.h"
#include "util.h"

#define OBS_FLUSH_MS	 2000
#define OBS_AM_RESEND_MS 60000
#define OBS_MAX_NAMED	 32 /* distinct degradation reasons / stages per route */
#define OBS_LEVELS	 4
#define OBS_NOTIFY_QUEUE 256
#define OBS_NOTIFY_TRIES 4

/* The windows of /v1/slo plus 2h (the short window of the 1d burn pair). */
static const int obs_windows[] = {5, 30, 60, 120, 360, 1440, 4320, 43200};
#define OBS_NWINDOWS ((int)ARRAY_SIZE(obs_windows))

struct obs_named {
	char *name;
	uint64_t n;
};

struct obs_route {
	struct slo_ring ring;
	struct slo_minute dirty; /* not yet written to slo_minutes */
	int has_dirty;
	int latency_ms;
	int max_alert_min; /* longest window an alert of this route needs */
	uint64_t calls[SOURCE__COUNT][OBS_LEVELS];
	uint64_t retries;
	uint64_t slo_total, slo_good[SLO_KIND__COUNT];
	struct obs_named degr[OBS_MAX_NAMED + 1]; /* the last one is "other" */
	int ndegr;
	struct obs_named vfail[OBS_MAX_NAMED + 1];
	int nvfail;
	struct metrics_hist duration;
};

struct obs_backend {
	uint64_t attempts[OUTCOME__COUNT];
	struct metrics_hist duration;
};

struct obs {
	const struct config *cfg;
	struct store *st;
	struct store_reader *rd;
	struct obs_route *routes;
	int nroutes;
	struct obs_backend *backends;
	int nbackends;
	struct alert_rule *rules;
	struct alert *alerts;
	int nrules;
	struct notify *notify;
	char *am_url; /* <alertmanager>/api/v2/alerts or NULL */
	char instance[128];
	int64_t last_flush_ms;
	int64_t last_am_ms;
};

static int
window_index(int minutes)
{
	int i;

	for (i = 0; i < OBS_NWINDOWS; i++)
		if (obs_windows[i] == minutes)
			return i;
	return -1;
}

/* "5m", "2h", "30d" */
static void
window_label(int minutes, char *out, size_t n)
{
	if (minutes % 1440 == 0)
		snprintf(out, n, "%dd", minutes / 1440);
	else if (minutes % 60 == 0)
		snprintf(out, n, "%dh", minutes / 60);
	else
		snprintf(out, n, "%dm", minutes);
}

static const char *
route_name(const struct obs *o, int route)
{
	return o->cfg->routes[route].name;
}

static int
route_ok(const struct obs *o, int route)
{
	return route >= 0 && route < o->nroutes;
}

/* Write the route's dirty minute as a delta row. */
static void
route_flush(struct obs *o, int route)
{
	struct obs_route *r = &o->routes[route];
	struct store_val v[2 + SLO_FIELD__COUNT];
	int i, ret;

	if (!r->has_dirty)
		return;
	if (o->st == NULL) {
		r->has_dirty = 0;
		return;
	}
	v[0] = SVT(route_name(o, route));
	v[1] = SVI(r->dirty.minute);
	for (i = 0; i < SLO_FIELD__COUNT; i++)
		v[2 + i] = SVI((int64_t)r->dirty.v[i]);
	ret = store_put(o->st, STORE_SLO_MINUTE_ADD, v, (int)ARRAY_SIZE(v));
	if (ret != 0) {
		/* Keep it and try again on the next tick (the ring has it anyway). */
		log_warn("obs", "route %s: slo minute not queued (%d), will retry",
			 route_name(o, route), ret);
		return;
	}
	r->has_dirty = 0;
	memset(&r->dirty, 0, sizeof r->dirty);
}

/* Count delta in the minute of wall_ms, in memory and towards the DB. */
static void
route_add(struct obs *o, int route, int64_t wall_ms, const uint32_t delta[SLO_FIELD__COUNT])
{
	struct obs_route *r = &o->routes[route];
	int64_t minute = slo_minute_of(wall_ms);
	int i;

	if (slo_ring_add(&r->ring, wall_ms, delta) != 0)
		return;
	if (r->has_dirty && r->dirty.minute != minute) {
		route_flush(o, route);
		if (r->has_dirty) {
			log_warn("obs", "route %s: dropping unsaved slo minute %lld",
				 route_name(o, route), (long long)r->dirty.minute);
			r->has_dirty = 0;
		}
	}
	if (!r->has_dirty) {
		memset(&r->dirty, 0, sizeof r->dirty);
		r->dirty.minute = minute;
		r->has_dirty = 1;
	}
	for (i = 0; i < SLO_FIELD__COUNT; i++)
		r->dirty.v[i] += delta[i];
}

static void
named_inc(struct obs_named *tab, int *n, const char *name)
{
	int i;

	if (name == NULL || *name == '\0')
		name = "unknown";
	for (i = 0; i < *n; i++) {
		if (strcmp(tab[i].name, name) == 0) {
			tab[i].n++;
			return;
		}
	}
	if (*n < OBS_MAX_NAMED) {
		tab[*n].name = xstrdup(name);
		tab[*n].n = 1;
		(*n)++;
		return;
	}
	/* Bounded label cardinality: the rest share "other". */
	if (tab[OBS_MAX_NAMED].name == NULL)
		tab[OBS_MAX_NAMED].name = xstrdup("other");
	tab[OBS_MAX_NAMED].n++;
}

struct load_ctx {
	const struct config *cfg;
	struct obs_route *routes;
	int64_t rows;
};

static int
load_row(void *arg, sqlite3_stmt *row)
{
	struct load_ctx *lc = arg;
	const unsigned char *name = sqlite3_column_text(row, 0);
	uint32_t delta[SLO_FIELD__COUNT];
	int i, route = -1;

	if (name == NULL)
		return 0;
	for (i = 0; i < lc->cfg->nroutes; i++) {
		if (strcmp(lc->cfg->routes[i].name, (const char *)name) == 0) {
			route = i;
			break;
		}
	}
	if (route < 0)
		return 0; /* a route no longer configured */
	for (i = 0; i < SLO_FIELD__COUNT; i++) {
		int64_t x = sqlite3_column_int64(row, 2 + i);

		delta[i] = x < 0 ? 0 : x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
	}
	slo_ring_add(&lc->routes[route].ring, sqlite3_column_int64(row, 1), delta);
	lc->rows++;
	return 0;
}

/*
 * Load the last 30 days of slo_minutes into the rings of routes (indexed
 * like cfg->routes): every route, or only the one named only. 0 or
 * STORE_E_SQL with *cause.
 */
static int
history_load(struct store_reader *rd, const struct config *cfg, struct obs_route *routes,
	     const char *only, int64_t now_wall_ms, char **cause)
{
	struct load_ctx lc = {cfg, routes, 0};
	struct buf sql;
	struct store_val v[2];
	int i, ret;

	buf_init(&sql, 4096);
	buf_puts(&sql, "SELECT route, minute");
	for (i = 0; i < SLO_FIELD__COUNT; i++)
		buf_printf(&sql, ", %s", slo_field_column((enum slo_field)i));
	buf_puts(&sql, " FROM slo_minutes WHERE minute >= ?1");
	if (only != NULL)
		buf_puts(&sql, " AND route = ?2");
	buf_puts(&sql, " ORDER BY minute");
	v[0] = SVI(slo_minute_of(now_wall_ms) - (int64_t)(SLO_MAX_MINUTES - 1) * SLO_MINUTE_MS);
	v[1] = SVT(only);
	ret = store_reader_query(rd, sql.data, v, only != NULL ? 2 : 1, load_row, &lc, cause);
	buf_free(&sql);
	if (ret == 0)
		log_info("obs", "loaded %lld slo minute rows%s%s", (long long)lc.rows,
			 only ? " of route " : "", only ? only : "");
	return ret;
}

/*
 * The alert rules of cfg and their (inactive) alerts; sets each route's
 * max_alert_min and warns about burn-rate pairs that can never fire.
 */
static int
rules_setup(const struct config *cfg, struct obs_route *routes, struct alert_rule **rulesp,
	    struct alert **alertsp)
{
	struct alert_rule *rules = NULL;
	struct alert *alerts;
	int i, n = alert_rules_build(cfg, &rules);

	alerts = xcalloc((size_t)MAX(n, 1), sizeof *alerts);
	for (i = 0; i < n; i++) {
		struct alert_rule *r = &rules[i];

		alert_init(&alerts[i], r);
		routes[r->route].max_alert_min = MAX(routes[r->route].max_alert_min, r->window_min);
		if (r->kind == ALERT_KIND_BURN && !r->reachable)
			log_warn("obs",
				 "route %s: burn-rate alert %s can never fire: %.1fx the error "
				 "budget of a %g target exceeds a total outage (factor x (1 - "
				 "target) > 1)",
				 cfg->routes[r->route].name, r->name, r->threshold, r->target);
	}
	*rulesp = rules;
	*alertsp = alerts;
	return n;
}

/* <alertmanager>/api/v2/alerts, or NULL. */
static char *
am_url_make(const struct config *cfg)
{
	size_t n;

	if (cfg->alertmanager_url == NULL)
		return NULL;
	n = strlen(cfg->alertmanager_url);
	while (n > 0 && cfg->alertmanager_url[n - 1] == '/')
		n--;
	return xasprintf("%.*s/api/v2/alerts", (int)n, cfg->alertmanager_url);
}

static const char *
rule_route_name(const struct obs *o, const struct alert_rule *r)
{
	return route_name(o, r->route);
}

struct last_ctx {
	char state[16];
	int64_t at;
	int found;
};

static int
last_row(void *arg, sqlite3_stmt *row)
{
	struct last_ctx *lc = arg;
	const unsigned char *s = sqlite3_column_text(row, 0);

	snprintf(lc->state, sizeof lc->state, "%s", s ? (const char *)s : "");
	lc->at = sqlite3_column_int64(row, 1);
	lc->found = 1;
	return 1;
}

static void
alert_store_row(struct obs *o, const char *rule, const char *route, const char *severity,
		const char *state, double value, double threshold, int64_t at)
{
	struct store_val v[7];

	if (o->st == NULL)
		return;
	v[0] = SVT(rule);
	v[1] = SVT(route);
	v[2] = SVT(severity);
	v[3] = SVT(state);
	v[4] = isnan(value) ? SVN : SVR(value);
	v[5] = isnan(threshold) ? SVN : SVR(threshold);
	v[6] = SVI(at);
	store_put(o->st, STORE_ALERT_INSERT, v, 7);
}

static void
event_row(struct obs *o, int64_t at, const char *subject, const char *detail)
{
	struct store_val v[] = {SVI(at), SVT("alert"), SVT(subject), SVT(detail)};

	if (o->st != NULL)
		store_put(o->st, STORE_EVENT_INSERT, v, (int)ARRAY_SIZE(v));
}

struct orphan_ctx {
	struct obs *o;
	int64_t now;
};

static int
orphan_row(void *arg, sqlite3_stmt *row)
{
	struct orphan_ctx *oc = arg;
	struct obs *o = oc->o;
	const char *rule = (const char *)sqlite3_column_text(row, 0);
	const char *route = (const char *)sqlite3_column_text(row, 1);
	const char *sev = (const char *)sqlite3_column_text(row, 2);
	const char *state = (const char *)sqlite3_column_text(row, 3);
	char detail[256];
	int i;

	if (rule == NULL)
		return 0;
	/* The review queue and the canary guard keep alerts of their own. */
	if (strncmp(rule, "review_", 7) == 0 || strncmp(rule, "canary_guard", 12) == 0)
		return 0;
	for (i = 0; i < o->nrules; i++)
		if (strcmp(o->rules[i].name, rule) == 0 && route != NULL &&
		    strcmp(rule_route_name(o, &o->rules[i]), route) == 0)
			return 0; /* still configured: restored by its rule */
	snprintf(detail, sizeof detail, "%s: %s -> resolved (rule no longer configured)", rule,
		 state ? state : "?");
	log_info("alerts", "%s/%s", route ? route : "-", detail);
	alert_store_row(o, rule, route, sev, "resolved", NAN, NAN, oc->now);
	event_row(o, oc->now, route, detail);
	return 0;
}

/* Resume episodes left pending/firing by the previous run. */
static void
alerts_restore(struct obs *o, int64_t now_wall_ms)
{
	struct orphan_ctx oc = {o, now_wall_ms};
	char *cause = NULL;
	int i;

	for (i = 0; i < o->nrules; i++) {
		struct alert_rule *r = &o->rules[i];
		struct last_ctx lc = {"", 0, 0};
		struct store_val v[] = {SVT(r->name), SVT(rule_route_name(o, r))};
		enum alert_state st;
		int64_t since;

		if (store_reader_query(
			    o->rd,
			    "SELECT state, at FROM alerts WHERE rule = ?1 AND route = ?2 "
			    "ORDER BY id DESC LIMIT 1",
			    v, 2, last_row, &lc, &cause) != 0) {
			log_warn("obs", "alerts restore: %s", cause ? cause : "query failed");
			free(cause);
			cause = NULL;
			continue;
		}
		if (!lc.found || alert_state_parse(lc.state, &st) != 0 ||
		    (st != ALERT_PENDING && st != ALERT_FIRING))
			continue;
		since = store_reader_int(
			o->rd,
			"SELECT coalesce(min(at), 0) FROM alerts WHERE rule = ?1 AND route = ?2 "
			"AND "
			"id > coalesce((SELECT max(id) FROM alerts WHERE rule = ?1 AND route = ?2 "
			"AND state IN ('resolved', 'inactive')), 0)",
			v, 2, lc.at);
		alert_restore(&o->alerts[i], st, since > 0 ? since : lc.at, lc.at);
		{
			char ts[40];

			time_format_rfc3339(since > 0 ? since : lc.at, ts, sizeof ts);
			log_info("alerts", "%s/%s: resumed %s (since %s)", rule_route_name(o, r),
				 r->name, lc.state, ts);
		}
	}
	if (store_reader_query(o->rd,
			       "SELECT rule, route, severity, state FROM alerts WHERE id IN "
			       "(SELECT max(id) FROM alerts GROUP BY rule, route) "
			       "AND state IN ('pending', 'firing')",
			       NULL, 0, orphan_row, &oc, &cause) != 0) {
		log_warn("obs", "alerts restore: %s", cause ? cause : "query failed");
		free(cause);
	}
}

/* Free the state of one route (a moved-out route is all zero: no-op). */
static void
route_state_free(struct obs_route *r)
{
	int j;

	slo_ring_free(&r->ring);
	for (j = 0; j <= OBS_MAX_NAMED; j++) {
		free(r->degr[j].name);
		free(r->vfail[j].name);
	}
	memset(r, 0, sizeof *r);
}

int
obs_new(const struct config *cfg, struct store *st, struct store_reader *rd, int64_t now_wall_ms,
	struct obs **out, char **cause)
{
	struct obs *o = xcalloc(1, sizeof *o);
	int i, ret = 0;

	o->cfg = cfg;
	o->st = st;
	o->rd = rd;
	o->nroutes = cfg->nroutes;
	o->routes = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *o->routes);
	o->nbackends = cfg->nbackends;
	o->backends = xcalloc((size_t)MAX(cfg->nbackends, 1), sizeof *o->backends);
	for (i = 0; i < o->nroutes; i++) {
		const struct slo_cfg *s = &cfg->routes[i].slo;

		slo_ring_init(&o->routes[i].ring);
		o->routes[i].latency_ms = s->enabled ? s->latency_ms : 0;
	}
	o->nrules = rules_setup(cfg, o->routes, &o->rules, &o->alerts);
	if (rd != NULL) {
		ret = history_load(rd, cfg, o->routes, NULL, now_wall_ms, cause);
		if (ret != 0) {
			ret = -EIO;
			goto out;
		}
		alerts_restore(o, now_wall_ms);
	}
	if (cfg->alert_webhook != NULL || cfg->alertmanager_url != NULL) {
		ret = notify_new(OBS_NOTIFY_QUEUE, &o->notify);
		if (ret != 0) {
			*cause = xasprintf("obs: cannot start the alert notifier: %s",
					   strerror(-ret));
			goto out;
		}
	}
	o->am_url = am_url_make(cfg);
	if (gethostname(o->instance, sizeof o->instance - 1) != 0)
		snprintf(o->instance, sizeof o->instance, "localhost");
	o->last_flush_ms = now_wall_ms;
	*out = o;
	o = NULL;
out:
	obs_free(o);
	return ret;
}

void
obs_free(struct obs *o)
{
	int i;

	if (o == NULL)
		return;
	for (i = 0; i < o->nroutes; i++)
		route_flush(o, i);
	notify_free(o->notify, 2000);
	for (i = 0; i < o->nroutes; i++)
		route_state_free(&o->routes[i]);
	free(o->routes);
	free(o->backends);
	free(o->rules);
	free(o->alerts);
	free(o->am_url);
	free(o);
}

int
obs_reconfigure(struct obs *o, const struct config *ncfg, int64_t now_wall_ms, char **cause)
{
	struct obs_route *nr = NULL;
	struct obs_backend *nb = NULL;
	struct alert_rule *nrules = NULL;
	struct alert *nalerts = NULL;
	struct notify *nn = NULL;
	int *from = NULL;   /* per new route: the old index, or -1 */
	char *taken = NULL; /* per old route / old alert: already moved */
	int i, j, n, ret = 0;

	if (o == NULL || ncfg == NULL)
		return -EINVAL;
	nr = xcalloc((size_t)MAX(ncfg->nroutes, 1), sizeof *nr);
	from = xcalloc((size_t)MAX(ncfg->nroutes, 1), sizeof *from);
	taken = xcalloc((size_t)MAX(MAX(o->nroutes, o->nrules), 1), 1);
	for (i = 0; i < ncfg->nroutes; i++) {
		from[i] = -1;
		for (j = 0; j < o->nroutes; j++) {
			if (!taken[j] && strcmp(route_name(o, j), ncfg->routes[i].name) == 0) {
				from[i] = j;
				taken[j] = 1;
				break;
			}
		}
		slo_ring_init(&nr[i].ring);
	}
	/* Everything that can fail comes first, so a failure changes nothing. */
	for (i = 0; i < ncfg->nroutes && o->rd != NULL; i++) {
		if (from[i] >= 0)
			continue;
		if (history_load(o->rd, ncfg, nr, ncfg->routes[i].name, now_wall_ms, cause) != 0) {
			ret = -EIO;
			goto out;
		}
	}
	if (o->notify == NULL && (ncfg->alert_webhook != NULL || ncfg->alertmanager_url != NULL)) {
		ret = notify_new(OBS_NOTIFY_QUEUE, &nn);
		if (ret != 0) {
			*cause = xasprintf("obs: cannot start the alert notifier: %s",
					   strerror(-ret));
			goto out;
		}
	}

	/* Routes: unsaved minutes go out under the old names (same names when kept). */
	for (j = 0; j < o->nroutes; j++)
		route_flush(o, j);
	for (i = 0; i < ncfg->nroutes; i++) {
		const struct slo_cfg *s = &ncfg->routes[i].slo;

		if (from[i] >= 0) {
			slo_ring_free(&nr[i].ring);
			nr[i] = o->routes[from[i]];
			memset(&o->routes[from[i]], 0, sizeof o->routes[from[i]]);
		}
		nr[i].latency_ms = s->enabled ? s->latency_ms : 0;
		nr[i].max_alert_min = 0;
	}
	/* Backends: by name. */
	nb = xcalloc((size_t)MAX(ncfg->nbackends, 1), sizeof *nb);
	for (i = 0; i < ncfg->nbackends; i++)
		for (j = 0; j < o->nbackends; j++)
			if (strcmp(o->cfg->backends[j].name, ncfg->backends[i].name) == 0) {
				nb[i] = o->backends[j];
				break;
			}
	/* Alerts: an episode continues when its rule (name, route) still exists. */
	n = rules_setup(ncfg, nr, &nrules, &nalerts);
	memset(taken, 0, (size_t)MAX(MAX(o->nroutes, o->nrules), 1));
	for (i = 0; i < n; i++) {
		const char *rname = ncfg->routes[nrules[i].route].name;

		for (j = 0; j < o->nrules; j++) {
			if (!taken[j] && strcmp(o->rules[j].name, nrules[i].name) == 0 &&
			    strcmp(rule_route_name(o, &o->rules[j]), rname) == 0) {
				nalerts[i] = o->alerts[j];
				alert_rebind(&nalerts[i], &nrules[i]);
				taken[j] = 1;
				break;
			}
		}
	}
	for (j = 0; j < o->nrules; j++) {
		const struct alert_rule *r = &o->rules[j];
		char detail[256];

		if (taken[j] || !alert_is_active(&o->alerts[j]))
			continue;
		snprintf(detail, sizeof detail, "%s: %s -> resolved (rule no longer configured)",
			 r->name, alert_state_name(o->alerts[j].state));
		log_info("alerts", "%s/%s", rule_route_name(o, r), detail);
		alert_store_row(o, r->name, rule_route_name(o, r), severity_name(r->severity),
				"resolved", NAN, r->threshold, now_wall_ms);
		event_row(o, now_wall_ms, rule_route_name(o, r), detail);
	}

	for (j = 0; j < o->nroutes; j++)
		route_state_free(&o->routes[j]);
	free(o->routes);
	free(o->backends);
	free(o->rules);
	free(o->alerts);
	free(o->am_url);
	o->routes = nr;
	o->nroutes = ncfg->nroutes;
	o->backends = nb;
	o->nbackends = ncfg->nbackends;
	o->rules = nrules;
	o->alerts = nalerts;
	o->nrules = n;
	o->am_url = am_url_make(ncfg);
	if (nn != NULL)
		o->notify = nn;
	o->cfg = ncfg;
	nr = NULL;
	nn = NULL;
	log_info("obs", "reconfigured: %d routes, %d alert rules", o->nroutes, o->nrules);
out:
	if (nr != NULL) {
		for (i = 0; i < ncfg->nroutes; i++)
			route_state_free(&nr[i]);
		free(nr);
	}
	notify_free(nn, 0);
	free(from);
	free(taken);
	return ret;
}

void
obs_call(struct obs *o, const struct call_obs *c)
{
	struct obs_route *r;
	struct slo_call sc;
	uint32_t delta[SLO_FIELD__COUNT];
	int level, src;

	if (o == NULL || c == NULL || !route_ok(o, c->route))
		return;
	r = &o->routes[c->route];
	src = (unsigned)c->source < SOURCE__COUNT ? (int)c->source : SOURCE_NONE;
	level = MIN(MAX(c->level, 0), OBS_LEVELS - 1);
	r->calls[src][level]++;
	r->retries += (uint64_t)MAX(c->retries, 0);
	metrics_hist_observe(&r->duration, (double)c->elapsed_ms / 1000.0);
	sc.http_status = c->http_status;
	sc.source = (enum source)src;
	sc.elapsed_ms = c->elapsed_ms;
	sc.budget_ms = c->budget_ms;
	sc.latency_ms = r->latency_ms;
	sc.attempts = c->attempts;
	sc.retries = c->retries;
	sc.timeouts = c->timeouts;
	sc.format_violations = c->format_violations;
	if (slo_call_delta(&sc, delta) != 0)
		return; /* caller error: not in the SLO */
	r->slo_total++;
	r->slo_good[SLO_KIND_SERVICE] += delta[SLO_SERVICE_GOOD];
	r->slo_good[SLO_KIND_SMART] += delta[SLO_SMART_GOOD];
	route_add(o, c->route, c->wall_ms, delta);
}

void
obs_attempt(struct obs *o, const struct attempt_obs *a)
{
	struct obs_backend *b;

	if (o == NULL || a == NULL || a->backend < 0 || a->backend >= o->nbackends)
		return;
	b = &o->backends[a->backend];
	if ((unsigned)a->outcome < OUTCOME__COUNT)
		b->attempts[a->outcome]++;
	metrics_hist_observe(&b->duration, (double)a->duration_ms / 1000.0);
}

void
obs_degradation(struct obs *o, int route, const char *reason)
{
	if (o == NULL || !route_ok(o, route))
		return;
	named_inc(o->routes[route].degr, &o->routes[route].ndegr, reason);
}

void
obs_validation_failure(struct obs *o, int route, const char *stage)
{
	if (o == NULL || !route_ok(o, route))
		return;
	named_inc(o->routes[route].vfail, &o->routes[route].nvfail, stage);
}

static void
count_one(struct obs *o, int route, enum slo_field total, enum slo_field good, int is_good,
	  int64_t wall_ms)
{
	uint32_t delta[SLO_FIELD__COUNT] = {0};

	if (o == NULL || !route_ok(o, route))
		return;
	delta[total] = 1;
	delta[good] = is_good ? 1 : 0;
	route_add(o, route, wall_ms, delta);
}

void
obs_review_decided(struct obs *o, int route, int corrected, int64_t wall_ms)
{
	count_one(o, route, SLO_REVIEW_DECIDED, SLO_REVIEW_CORRECTED, corrected, wall_ms);
}

void
obs_shadow(struct obs *o, int route, int agree, int64_t wall_ms)
{
	count_one(o, route, SLO_SHADOW_TOTAL, SLO_SHADOW_AGREE, agree, wall_ms);
}

void
obs_cross_check(struct obs *o, int route, int agree, int64_t wall_ms)
{
	count_one(o, route, SLO_CROSS_TOTAL, SLO_CROSS_AGREE, agree, wall_ms);
}

static void
format_ts(int64_t wall_ms, char *out, size_t n)
{
	time_format_rfc3339(wall_ms, out, n);
}

static cJSON *
am_alert_json(struct obs *o, const struct alert *a, int64_t now_wall_ms)
{
	const struct alert_rule *r = a->rule;
	cJSON *x = cJSON_CreateObject(), *labels, *ann;
	char ts[40], num[64];

	labels = cJSON_AddObjectToObject(x, "labels");
	cJSON_AddStringToObject(labels, "alertname", r->name);
	cJSON_AddStringToObject(labels, "route", rule_route_name(o, r));
	cJSON_AddStringToObject(labels, "severity", severity_name(r->severity));
	cJSON_AddStringToObject(labels, "service", "fusebox");
	cJSON_AddStringToObject(labels, "instance", o->instance);
	ann = cJSON_AddObjectToObject(x, "annotations");
	snprintf(num, sizeof num, "%g", a->value);
	cJSON_AddStringToObject(ann, "value", num);
	snprintf(num, sizeof num, "%g", r->threshold);
	cJSON_AddStringToObject(ann, "threshold", num);
	{
		char *summary = xasprintf("route %s: %s %s %g", rule_route_name(o, r), r->metric,
					  alert_op_name(r->op), r->threshold);

		cJSON_AddStringToObject(ann, "summary", summary);
		free(summary);
	}
	format_ts(a->since_ms > 0 ? a->since_ms : now_wall_ms, ts, sizeof ts);
	cJSON_AddStringToObject(x, "startsAt", ts);
	if (a->state != ALERT_FIRING) {
		format_ts(a->state_at_ms > 0 ? a->state_at_ms : now_wall_ms, ts, sizeof ts);
		cJSON_AddStringToObject(x, "endsAt", ts);
	}
	return x;
}

static void
am_post(struct obs *o, cJSON *arr)
{
	char *body = cJSON_PrintUnformatted(arr);

	if (body != NULL)
		notify_post(o->notify, o->am_url, body, "alert", OBS_NOTIFY_TRIES);
	free(body);
}

static void
webhook_post(struct obs *o, const struct alert *a)
{
	const struct alert_rule *r = a->rule;
	cJSON *x = cJSON_CreateObject();
	char ts[40];
	char *body;

	cJSON_AddStringToObject(x, "event", "alert");
	cJSON_AddStringToObject(x, "rule", r->name);
	cJSON_AddStringToObject(x, "route", rule_route_name(o, r));
	cJSON_AddStringToObject(x, "severity", severity_name(r->severity));
	cJSON_AddStringToObject(x, "state", alert_state_name(a->state));
	cJSON_AddStringToObject(x, "previous", alert_state_name(a->last.from));
	cJSON_AddStringToObject(x, "metric", r->metric);
	if (isnan(a->last.value))
		cJSON_AddNullToObject(x, "value");
	else
		cJSON_AddNumberToObject(x, "value", a->last.value);
	cJSON_AddNumberToObject(x, "threshold", r->threshold);
	format_ts(a->since_ms, ts, sizeof ts);
	cJSON_AddStringToObject(x, "since", ts);
	format_ts(a->last.at_ms, ts, sizeof ts);
	cJSON_AddStringToObject(x, "at", ts);
	cJSON_AddStringToObject(x, "instance", o->instance);
	body = cJSON_PrintUnformatted(x);
	cJSON_Delete(x);
	if (body != NULL)
		notify_post(o->notify, o->cfg->alert_webhook, body, "alert", OBS_NOTIFY_TRIES);
	free(body);
}

/* Log, store and post one transition of alert a. */
static void
alert_emit(struct obs *o, struct alert *a)
{
	const struct alert_rule *r = a->rule;
	const struct alert_transition *t = &a->last;
	const char *route = rule_route_name(o, r);
	char detail[320], win[32];

	window_label(r->window_min, win, sizeof win);
	if (r->kind == ALERT_KIND_BURN) {
		size_t n = strlen(win);

		snprintf(win + n, sizeof win - n, " & ");
		n = strlen(win);
		window_label(r->short_min, win + n, sizeof win - n);
	}
	snprintf(detail, sizeof detail, "%s: %s -> %s (%s %g; condition %s %g over %s)", r->name,
		 alert_state_name(t->from), alert_state_name(t->to), r->metric, t->value,
		 alert_op_name(r->op), r->threshold, win);
	log_info("alerts", "%s/%s", route, detail);
	alert_store_row(o, r->name, route, severity_name(r->severity), alert_state_name(t->to),
			t->value, r->threshold, t->at_ms);
	event_row(o, t->at_ms, route, detail);
	if (o->notify == NULL || (t->to != ALERT_FIRING && t->to != ALERT_RESOLVED))
		return;
	if (o->cfg->alert_webhook != NULL)
		webhook_post(o, a);
	if (o->am_url != NULL) {
		cJSON *arr = cJSON_CreateArray();

		cJSON_AddItemToArray(arr, am_alert_json(o, a, t->at_ms));
		am_post(o, arr);
		cJSON_Delete(arr);
	}
}

/* The window sums an alert evaluation of route needs (0 .. max_alert_min). */
static int
route_sums(struct obs *o, int route, int64_t now_wall_ms, int upto_min, struct slo_counts *sums)
{
	int n = 0;

	while (n < OBS_NWINDOWS && obs_windows[n] <= upto_min)
		n++;
	slo_ring_sums(&o->routes[route].ring, now_wall_ms, obs_windows, n, sums);
	return n;
}

static void
alerts_eval(struct obs *o, int64_t now_wall_ms)
{
	struct slo_counts sums[OBS_NWINDOWS];
	static const struct slo_counts zero;
	int route, i, n = 0;

	for (route = 0; route < o->nroutes; route++) {
		int have = 0;

		for (i = 0; i < o->nrules; i++) {
			struct alert *a = &o->alerts[i];
			const struct alert_rule *r = a->rule;
			const struct slo_counts *lng, *shrt = &zero;
			double value;
			int cond, li, si;

			if (r->route != route)
				continue;
			if (!have) {
				n = route_sums(o, route, now_wall_ms,
					       o->routes[route].max_alert_min, sums);
				have = 1;
			}
			li = window_index(r->window_min);
			if (li < 0 || li >= n)
				continue;
			lng = &sums[li];
			if (r->kind == ALERT_KIND_BURN) {
				si = window_index(r->short_min);
				if (si < 0 || si >= n)
					continue;
				shrt = &sums[si];
			}
			cond = alert_condition(r, lng, shrt, &value);
			if (alert_update(a, cond, value, now_wall_ms))
				alert_emit(o, a);
		}
	}
}

static void
alertmanager_resend(struct obs *o, int64_t now_wall_ms)
{
	cJSON *arr;
	int i, n = 0;

	if (o->am_url == NULL || o->notify == NULL ||
	    now_wall_ms - o->last_am_ms < OBS_AM_RESEND_MS)
		return;
	o->last_am_ms = now_wall_ms;
	arr = cJSON_CreateArray();
	for (i = 0; i < o->nrules; i++) {
		if (o->alerts[i].state != ALERT_FIRING)
			continue;
		cJSON_AddItemToArray(arr, am_alert_json(o, &o->alerts[i], now_wall_ms));
		n++;
	}
	if (n > 0)
		am_post(o, arr);
	cJSON_Delete(arr);
}

void
obs_tick(struct obs *o, int64_t now_wall_ms)
{
	int64_t minute = slo_minute_of(now_wall_ms);
	int flush_all, i;

	if (o == NULL)
		return;
	flush_all = now_wall_ms - o->last_flush_ms >= OBS_FLUSH_MS;
	for (i = 0; i < o->nroutes; i++) {
		struct obs_route *r = &o->routes[i];

		if (r->has_dirty && (flush_all || r->dirty.minute < minute))
			route_flush(o, i);
		slo_ring_expire(&r->ring, now_wall_ms);
	}
	if (flush_all)
		o->last_flush_ms = now_wall_ms;
	alerts_eval(o, now_wall_ms);
	alertmanager_resend(o, now_wall_ms);
}

int
obs_alert_firing(struct obs *o, const char *rule, int route)
{
	int i;

	if (o == NULL)
		return -ENOENT;
	for (i = 0; i < o->nrules; i++)
		if (o->rules[i].route == route && strcmp(o->rules[i].name, rule) == 0)
			return o->alerts[i].state == ALERT_FIRING;
	return -ENOENT;
}

static void
add_ratio(cJSON *x, const char *name, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(x, name);
	else
		cJSON_AddNumberToObject(x, name, v);
}

static cJSON *
window_json(const struct slo_counts *c)
{
	static const struct {
		const char *name;
		enum slo_field f;
	} srcs[] = {
		{"llm", SLO_SRC_LLM},	  {"backup", SLO_SRC_BACKUP}, {"rules", SLO_SRC_RULES},
		{"cache", SLO_SRC_CACHE}, {"preset", SLO_SRC_PRESET}, {"manual", SLO_SRC_MANUAL},
	};
	cJSON *x = cJSON_CreateObject(), *bs;
	struct slo_stats s;
	uint64_t answered = 0;
	size_t i;

	slo_stats_compute(c, &s);
	cJSON_AddNumberToObject(x, "total", (double)c->v[SLO_TOTAL]);
	cJSON_AddNumberToObject(x, "service_good", (double)c->v[SLO_SERVICE_GOOD]);
	cJSON_AddNumberToObject(x, "smart_good", (double)c->v[SLO_SMART_GOOD]);
	add_ratio(x, "service_availability", s.service_availability);
	add_ratio(x, "smart_availability", s.smart_availability);
	add_ratio(x, "latency_ok", s.latency_ok);
	add_ratio(x, "timeout_rate", s.timeout_rate);
	add_ratio(x, "retry_rate", s.retry_rate);
	add_ratio(x, "format_violation_rate", s.format_violation_rate);
	{
		/* issue "SLOs": review diff rate, rules-shadow and cross-check
		 * agreement; null when nothing was decided / sampled */
		static const char *const extra[] = { "review_diff_rate", "shadow_agreement",
						     "cross_check_agreement" };
		double v;

		for (i = 0; i < ARRAY_SIZE(extra); i++)
			add_ratio(x, extra[i], slo_metric_value(c, extra[i], &v) == 0 ? v : NAN);
	}
	bs = cJSON_AddObjectToObject(x, "by_source");
	for (i = 0; i < ARRAY_SIZE(srcs); i++) {
		answered += c->v[srcs[i].f];
		if (c->v[srcs[i].f] > 0)
			cJSON_AddNumberToObject(bs, srcs[i].name, (double)c->v[srcs[i].f]);
	}
	if (c->v[SLO_TOTAL] > answered)
		cJSON_AddNumberToObject(bs, "none", (double)(c->v[SLO_TOTAL] - answered));
	return x;
}

static cJSON *
budget_json(const struct slo_counts *sums, enum slo_kind k, double target)
{
	cJSON *x = cJSON_CreateObject(), *br;
	int i;

	add_ratio(x, "remaining",
		  slo_budget_remaining(slo_good(&sums[OBS_NWINDOWS - 1], k),
				       sums[OBS_NWINDOWS - 1].v[SLO_TOTAL], target));
	add_ratio(x, "burn_rate_1h",
		  slo_burn_rate(slo_good(&sums[window_index(60)], k),
				sums[window_index(60)].v[SLO_TOTAL], target));
	br = cJSON_AddObjectToObject(x, "burn_rates");
	for (i = 0; i < OBS_NWINDOWS; i++) {
		char name[16];

		window_label(obs_windows[i], name, sizeof name);
		add_ratio(br, name,
			  slo_burn_rate(slo_good(&sums[i], k), sums[i].v[SLO_TOTAL], target));
	}
	return x;
}

static cJSON *
route_slo_json(struct obs *o, int route, int64_t now_wall_ms)
{
	const struct slo_cfg *s = &o->cfg->routes[route].slo;
	struct slo_counts sums[OBS_NWINDOWS];
	cJSON *x = cJSON_CreateObject(), *obj, *wins, *eb, *ba;
	int w, i;

	slo_ring_sums(&o->routes[route].ring, now_wall_ms, obs_windows, OBS_NWINDOWS, sums);
	cJSON_AddStringToObject(x, "route", route_name(o, route));
	if (s->enabled) {
		obj = cJSON_AddObjectToObject(x, "objectives");
		cJSON_AddNumberToObject(obj, "service_availability", s->service_availability);
		cJSON_AddNumberToObject(obj, "smart_availability", s->smart_availability);
		cJSON_AddNumberToObject(obj, "latency_ms", s->latency_ms);
		cJSON_AddNumberToObject(obj, "latency_target", s->latency_target);
	} else {
		cJSON_AddNullToObject(x, "objectives");
	}
	wins = cJSON_AddObjectToObject(x, "windows");
	for (w = 0; w < WIN__COUNT; w++) {
		int idx = window_index(slo_window_minutes((enum slo_window)w));

		if (idx >= 0)
			cJSON_AddItemToObject(wins, slo_window_name((enum slo_window)w),
					      window_json(&sums[idx]));
	}
	if (s->enabled) {
		eb = cJSON_AddObjectToObject(x, "error_budget");
		cJSON_AddItemToObject(eb, "service",
				      budget_json(sums, SLO_KIND_SERVICE, s->service_availability));
		cJSON_AddItemToObject(eb, "smart",
				      budget_json(sums, SLO_KIND_SMART, s->smart_availability));
	} else {
		cJSON_AddNullToObject(x, "error_budget");
	}
	/* The burn-rate pairs, marking those the target makes unreachable. */
	ba = cJSON_AddArrayToObject(x, "burn_rate_alerts");
	for (i = 0; i < o->nrules; i++) {
		const struct alert_rule *r = &o->rules[i];
		cJSON *p;
		char lw[16], sw[16];

		if (r->route != route || r->kind != ALERT_KIND_BURN)
			continue;
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "rule", r->name);
		cJSON_AddStringToObject(p, "slo", slo_kind_name(r->slo));
		cJSON_AddNumberToObject(p, "factor", r->threshold);
		window_label(r->window_min, lw, sizeof lw);
		window_label(r->short_min, sw, sizeof sw);
		cJSON_AddStringToObject(p, "long_window", lw);
		cJSON_AddStringToObject(p, "short_window", sw);
		cJSON_AddStringToObject(p, "severity", severity_name(r->severity));
		cJSON_AddBoolToObject(p, "can_fire", r->reachable);
		cJSON_AddStringToObject(p, "state", alert_state_name(o->alerts[i].state));
		cJSON_AddItemToArray(ba, p);
	}
	return x;
}

cJSON *
obs_slo_json(struct obs *o, int route, int64_t now_wall_ms)
{
	cJSON *x = cJSON_CreateObject(), *routes;
	int i;

	routes = cJSON_AddArrayToObject(x, "routes");
	if (o == NULL)
		return x;
	for (i = 0; i < o->nroutes; i++)
		if (route < 0 || route == i)
			cJSON_AddItemToArray(routes, route_slo_json(o, i, now_wall_ms));
	return x;
}

void
obs_metrics_write(struct obs *o, struct metrics *m, int64_t now_wall_ms)
{
	struct metrics_label l[4];
	char lvl[8];
	int i, j, k, w;

	if (o == NULL)
		return;
	metrics_family(m, "fusebox_calls_total", METRICS_COUNTER,
		       "Guarded calls answered, by route, answer source and route level.");
	for (i = 0; i < o->nroutes; i++) {
		for (j = 0; j < SOURCE__COUNT; j++) {
			for (k = 0; k < OBS_LEVELS; k++) {
				uint64_t n = o->routes[i].calls[j][k];

				if (n == 0)
					continue;
				snprintf(lvl, sizeof lvl, "%d", k);
				l[0] = (struct metrics_label){"route", route_name(o, i)};
				l[1] = (struct metrics_label){"source",
							      source_name((enum source)j)};
				l[2] = (struct metrics_label){"level", lvl};
				metrics_sample(m, "fusebox_calls_total", l, 3, (double)n);
			}
		}
	}
	metrics_family(m, "fusebox_attempts_total", METRICS_COUNTER,
		       "Upstream attempts, by backend and outcome class.");
	for (i = 0; i < o->nbackends; i++) {
		for (j = 0; j < OUTCOME__COUNT; j++) {
			uint64_t n = o->backends[i].attempts[j];

			if (n == 0)
				continue;
			l[0] = (struct metrics_label){"backend", o->cfg->backends[i].name};
			l[1] = (struct metrics_label){"outcome", outcome_name((enum outcome)j)};
			metrics_sample(m, "fusebox_attempts_total", l, 2, (double)n);
		}
	}
	metrics_family(m, "fusebox_retries_total", METRICS_COUNTER, "Retries made, by route.");
	for (i = 0; i < o->nroutes; i++) {
		l[0] = (struct metrics_label){"route", route_name(o, i)};
		metrics_sample(m, "fusebox_retries_total", l, 1, (double)o->routes[i].retries);
	}
	metrics_family(m, "fusebox_degradations_total", METRICS_COUNTER,
		       "Falls and skips down the ladder, by route and reason.");
	for (i = 0; i < o->nroutes; i++) {
		for (j = 0; j <= OBS_MAX_NAMED; j++) {
			const struct obs_named *d = &o->routes[i].degr[j];

			if (d->name == NULL)
				continue;
			l[0] = (struct metrics_label){"route", route_name(o, i)};
			l[1] = (struct metrics_label){"reason", d->name};
			metrics_sample(m, "fusebox_degradations_total", l, 2, (double)d->n);
		}
	}
	metrics_family(m, "fusebox_validation_failures_total", METRICS_COUNTER,
		       "Failed output checks, by route and stage.");
	for (i = 0; i < o->nroutes; i++) {
		for (j = 0; j <= OBS_MAX_NAMED; j++) {
			const struct obs_named *d = &o->routes[i].vfail[j];

			if (d->name == NULL)
				continue;
			l[0] = (struct metrics_label){"route", route_name(o, i)};
			l[1] = (struct metrics_label){"stage", d->name};
			metrics_sample(m, "fusebox_validation_failures_total", l, 2, (double)d->n);
		}
	}
	metrics_family(m, "fusebox_call_duration_seconds", METRICS_HISTOGRAM,
		       "Guarded call duration as the caller saw it, by route.");
	for (i = 0; i < o->nroutes; i++) {
		l[0] = (struct metrics_label){"route", route_name(o, i)};
		metrics_histogram(m, "fusebox_call_duration_seconds", l, 1, &o->routes[i].duration);
	}
	metrics_family(m, "fusebox_attempt_duration_seconds", METRICS_HISTOGRAM,
		       "Upstream attempt duration, by backend.");
	for (i = 0; i < o->nbackends; i++) {
		l[0] = (struct metrics_label){"backend", o->cfg->backends[i].name};
		metrics_histogram(m, "fusebox_attempt_duration_seconds", l, 1,
				  &o->backends[i].duration);
	}
	metrics_family(m, "fusebox_slo_calls_total", METRICS_COUNTER,
		       "Calls counted by the SLOs (all but caller errors), by route.");
	for (i = 0; i < o->nroutes; i++) {
		l[0] = (struct metrics_label){"route", route_name(o, i)};
		metrics_sample(m, "fusebox_slo_calls_total", l, 1, (double)o->routes[i].slo_total);
	}
	metrics_family(m, "fusebox_slo_good_total", METRICS_COUNTER,
		       "Good calls by route and kind: service (2xx/202 within budget, any "
		       "source) or smart (answered by llm or backup).");
	for (i = 0; i < o->nroutes; i++) {
		for (k = 0; k < SLO_KIND__COUNT; k++) {
			l[0] = (struct metrics_label){"route", route_name(o, i)};
			l[1] = (struct metrics_label){"kind", slo_kind_name((enum slo_kind)k)};
			metrics_sample(m, "fusebox_slo_good_total", l, 2,
				       (double)o->routes[i].slo_good[k]);
		}
	}
	metrics_family(m, "fusebox_slo_objective", METRICS_GAUGE,
		       "Configured availability target, by route and kind (routes with an slo "
		       "section).");
	for (i = 0; i < o->nroutes; i++) {
		const struct slo_cfg *s = &o->cfg->routes[i].slo;

		if (!s->enabled)
			continue;
		for (k = 0; k < SLO_KIND__COUNT; k++) {
			l[0] = (struct metrics_label){"route", route_name(o, i)};
			l[1] = (struct metrics_label){"kind", slo_kind_name((enum slo_kind)k)};
			metrics_sample(m, "fusebox_slo_objective", l, 2,
				       k == SLO_KIND_SERVICE ? s->service_availability
							     : s->smart_availability);
		}
	}
	metrics_family(m, "fusebox_slo_availability", METRICS_GAUGE,
		       "Availability over a window, by route, kind (service|smart) and window; "
		       "absent while the window has no calls.");
	for (i = 0; i < o->nroutes; i++) {
		struct slo_counts sums[OBS_NWINDOWS];

		slo_ring_sums(&o->routes[i].ring, now_wall_ms, obs_windows, OBS_NWINDOWS, sums);
		for (w = 0; w < WIN__COUNT; w++) {
			int idx = window_index(slo_window_minutes((enum slo_window)w));
			const struct slo_counts *c;

			if (idx < 0)
				continue;
			c = &sums[idx];
			if (c->v[SLO_TOTAL] == 0)
				continue;
			for (k = 0; k < SLO_KIND__COUNT; k++) {
				l[0] = (struct metrics_label){"route", route_name(o, i)};
				l[1] = (struct metrics_label){"kind",
							      slo_kind_name((enum slo_kind)k)};
				l[2] = (struct metrics_label){"window",
							      slo_window_name((enum slo_window)w)};
				metrics_sample(m, "fusebox_slo_availability", l, 3,
					       (double)slo_good(c, (enum slo_kind)k) /
						       (double)c->v[SLO_TOTAL]);
			}
		}
	}
	metrics_family(m, "fusebox_alert_firing", METRICS_GAUGE,
		       "1 while the alert rule fires, else 0; one series per configured rule.");
	for (i = 0; i < o->nrules; i++) {
		l[0] = (struct metrics_label){"rule", o->rules[i].name};
		l[1] = (struct metrics_label){"route", rule_route_name(o, &o->rules[i])};
		metrics_sample(m, "fusebox_alert_firing", l, 2,
			       o->alerts[i].state == ALERT_FIRING ? 1.0 : 0.0);
	}
	if (o->notify != NULL) {
		struct notify_stats ns;

		notify_get_stats(o->notify, &ns);
		metrics_family(m, "fusebox_alert_notifications_total", METRICS_COUNTER,
			       "Alert notifications (webhook, Alertmanager) by result.");
		l[0] = (struct metrics_label){"result", "delivered"};
		metrics_sample(m, "fusebox_alert_notifications_total", l, 1, (double)ns.delivered);
		l[0] = (struct metrics_label){"result", "failed"};
		metrics_sample(m, "fusebox_alert_notifications_total", l, 1, (double)ns.failed);
		l[0] = (struct metrics_label){"result", "dropped"};
		metrics_sample(m, "fusebox_alert_notifications_total", l, 1, (double)ns.dropped);
	}
}
