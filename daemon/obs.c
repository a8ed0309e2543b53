/*
 * obs: what the engine observes, turned into SLO minutes, the counters
 * /metrics shows, and alerts.
 *
 * Per route, a slo_ring holds the minute counters of the last 30 days
 * (loaded from slo_minutes at start). Every counted call also accumulates
 * into the route's "dirty" minute, which is written to slo_minutes as a
 * delta (STORE_SLO_MINUTE_ADD adds, so rows never need reading back) when
 * the minute changes and at least every OBS_FLUSH_MS, and at obs_free():
 * a crash loses at most that much, a clean stop nothing.
 *
 * Once a second obs_tick() hands the windows of each route that has alert
 * rules to obs_alerts.c, which owns the rules, their episodes and their
 * delivery. /metrics is written by metrics_page.c from the read side in
 * obs.h; the /v1/slo JSON is rendered here.
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

#include <cjson/cJSON.h>

#include "jsonutil.h"
#include "log.h"
#include "obs_alerts.h"
#include "util.h"
#include "validate.h"

#define OBS_FLUSH_MS 2000

/* The windows of /v1/slo plus 2h (the short window of the 1d burn pair). */
static const int obs_windows[] = {5, 30, 60, 120, 360, 1440, 4320, 43200};
#define OBS_NWINDOWS ((int)ARRAY_SIZE(obs_windows))

struct obs_route {
	struct slo_ring ring;
	struct slo_minute dirty; /* not yet written to slo_minutes */
	int has_dirty;
	int latency_ms;
	int max_alert_min; /* longest window an alert of this route needs */
	struct obs_route_counts n;
};

struct obs {
	const struct config *cfg;
	struct store *st;
	struct store_reader *rd;
	struct obs_route *routes;
	int nroutes;
	struct obs_backend_counts *backends;
	int nbackends;
	struct obs_alerts *alerts;
	int64_t last_flush_ms;
	uint64_t reloads_applied, reloads_refused;
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

/* Add name to tab at 0 (when there is room and it is not there yet). */
static void
named_seed(struct obs_named *tab, int *n, const char *name)
{
	int i;

	for (i = 0; i < *n; i++)
		if (strcmp(tab[i].name, name) == 0)
			return;
	if (*n < OBS_MAX_NAMED) {
		tab[*n].name = xstrdup(name);
		tab[*n].n = 0;
		(*n)++;
	}
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
	struct store_val v[2];
	int ret;

	v[0] = SVI(slo_minute_of(now_wall_ms) - (int64_t)(SLO_MAX_MINUTES - 1) * SLO_MINUTE_MS);
	v[1] = SVT(only);
	ret = store_reader_run(rd, only != NULL ? STORE_Q_SLO_HISTORY_ROUTE : STORE_Q_SLO_HISTORY,
			       v, only != NULL ? 2 : 1, load_row, &lc, cause);
	if (ret == 0)
		log_info("obs", "loaded %lld slo minute rows%s%s", (long long)lc.rows,
			 only ? " of route " : "", only ? only : "");
	return ret;
}

/* Each route's max_alert_min, from the rules of alerts. */
static void
routes_alert_min(struct obs_route *routes, int nroutes, const struct obs_alerts *alerts)
{
	const struct alert_rule *rules;
	const struct alert *al;
	int i, n = obs_alerts_list(alerts, &rules, &al);

	for (i = 0; i < nroutes; i++)
		routes[i].max_alert_min = 0;
	for (i = 0; i < n; i++)
		routes[rules[i].route].max_alert_min =
			MAX(routes[rules[i].route].max_alert_min, rules[i].window_min);
}

/* Every known degradation reason and validation stage at 0 (rate() sees the first increase). */
static void
route_seed_reasons(struct obs_route *r)
{
	int i;

	for (i = 0; slo_degradation_reasons[i] != NULL; i++)
		named_seed(r->n.degr, &r->n.ndegr, slo_degradation_reasons[i]);
	for (i = 0; i < OUTCOME__COUNT; i++)
		if (i != OUTCOME_OK)
			named_seed(r->n.degr, &r->n.ndegr, outcome_name((enum outcome)i));
	for (i = VALIDATE_E_FORMAT; i <= VALIDATE_E_CONFIDENCE; i++)
		named_seed(r->n.vfail, &r->n.nvfail, validate_stage_name(i));
}

/* Free the state of one route (a moved-out route is all zero: no-op). */
static void
route_state_free(struct obs_route *r)
{
	int j;

	slo_ring_free(&r->ring);
	for (j = 0; j <= OBS_MAX_NAMED; j++) {
		free(r->n.degr[j].name);
		free(r->n.vfail[j].name);
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
		route_seed_reasons(&o->routes[i]);
	}
	o->alerts = obs_alerts_new(cfg, st, rd);
	routes_alert_min(o->routes, o->nroutes, o->alerts);
	if (rd != NULL) {
		ret = history_load(rd, cfg, o->routes, NULL, now_wall_ms, cause);
		if (ret != 0) {
			ret = -EIO;
			goto out;
		}
		obs_alerts_restore(o->alerts, now_wall_ms);
	}
	ret = obs_alerts_notify_start(o->alerts, cause);
	if (ret != 0)
		goto out;
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
	obs_alerts_free(o->alerts);
	for (i = 0; i < o->nroutes; i++)
		route_state_free(&o->routes[i]);
	free(o->routes);
	free(o->backends);
	free(o);
}

int
obs_reconfigure(struct obs *o, const struct config *ncfg, int64_t now_wall_ms, char **cause)
{
	struct obs_route *nr = NULL;
	struct obs_backend_counts *nb = NULL;
	const struct alert_rule *rules;
	const struct alert *alerts;
	int *from = NULL;   /* per new route: the old index, or -1 */
	char *taken = NULL; /* per old route: already moved */
	int i, j, ret = 0;

	if (o == NULL || ncfg == NULL)
		return -EINVAL;
	nr = xcalloc((size_t)MAX(ncfg->nroutes, 1), sizeof *nr);
	from = xcalloc((size_t)MAX(ncfg->nroutes, 1), sizeof *from);
	taken = xcalloc((size_t)MAX(o->nroutes, 1), 1);
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
	ret = obs_alerts_reconfigure(o->alerts, ncfg, now_wall_ms, cause);
	if (ret != 0)
		goto out;

	/* Routes: unsaved minutes go out under the old names (same names when kept). */
	for (j = 0; j < o->nroutes; j++)
		route_flush(o, j);
	for (i = 0; i < ncfg->nroutes; i++) {
		const struct slo_cfg *s = &ncfg->routes[i].slo;

		if (from[i] >= 0) {
			slo_ring_free(&nr[i].ring);
			nr[i] = o->routes[from[i]];
			memset(&o->routes[from[i]], 0, sizeof o->routes[from[i]]);
		} else {
			route_seed_reasons(&nr[i]);
		}
		nr[i].latency_ms = s->enabled ? s->latency_ms : 0;
	}
	routes_alert_min(nr, ncfg->nroutes, o->alerts);
	/* Backends: by name. */
	nb = xcalloc((size_t)MAX(ncfg->nbackends, 1), sizeof *nb);
	for (i = 0; i < ncfg->nbackends; i++)
		for (j = 0; j < o->nbackends; j++)
			if (strcmp(o->cfg->backends[j].name, ncfg->backends[i].name) == 0) {
				nb[i] = o->backends[j];
				break;
			}

	for (j = 0; j < o->nroutes; j++)
		route_state_free(&o->routes[j]);
	free(o->routes);
	free(o->backends);
	o->routes = nr;
	o->nroutes = ncfg->nroutes;
	o->backends = nb;
	o->nbackends = ncfg->nbackends;
	o->cfg = ncfg;
	nr = NULL;
	log_info("obs", "reconfigured: %d routes, %d alert rules", o->nroutes,
		 obs_alerts_list(o->alerts, &rules, &alerts));
out:
	if (nr != NULL) {
		for (i = 0; i < ncfg->nroutes; i++)
			route_state_free(&nr[i]);
		free(nr);
	}
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
	r->n.calls[src][level]++;
	r->n.retries += (uint64_t)MAX(c->retries, 0);
	metrics_hist_observe(&r->n.duration, (double)c->elapsed_ms / 1000.0);
	if (slo_reason_is_entry(c->reason))
		named_inc(r->n.degr, &r->n.ndegr, c->reason); /* the rungs skipped at the start */
	sc.http_status = c->http_status;
	sc.no_llm = slo_reason_no_llm(c->reason);
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
	r->n.slo_total++;
	r->n.slo_good[SLO_KIND_SERVICE] += delta[SLO_SERVICE_GOOD];
	r->n.slo_good[SLO_KIND_SMART] += delta[SLO_SMART_GOOD];
	r->n.slo_eligible[SLO_KIND_SERVICE] += delta[SLO_TOTAL];
	r->n.slo_eligible[SLO_KIND_SMART] += delta[SLO_TOTAL] - delta[SLO_NO_LLM];
	route_add(o, c->route, c->wall_ms, delta);
}

void
obs_attempt(struct obs *o, const struct attempt_obs *a)
{
	struct obs_backend_counts *b;

	if (o == NULL || a == NULL || a->backend < 0 || a->backend >= o->nbackends)
		return;
	b = &o->backends[a->backend];
	if ((unsigned)a->outcome < OUTCOME__COUNT)
		b->attempts[a->outcome]++;
	b->tokens_in += (uint64_t)MAX(a->input_tokens, 0);
	b->tokens_out += (uint64_t)MAX(a->output_tokens, 0);
	metrics_hist_observe(&b->duration, (double)a->duration_ms / 1000.0);
}

void
obs_degradation(struct obs *o, int route, const char *reason)
{
	if (o == NULL || !route_ok(o, route))
		return;
	named_inc(o->routes[route].n.degr, &o->routes[route].n.ndegr, reason);
}

void
obs_validation_failure(struct obs *o, int route, const char *stage)
{
	if (o == NULL || !route_ok(o, route))
		return;
	named_inc(o->routes[route].n.vfail, &o->routes[route].n.nvfail, stage);
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
	int route, n;

	for (route = 0; route < o->nroutes; route++) {
		if (o->routes[route].max_alert_min <= 0)
			continue; /* no rule */
		n = route_sums(o, route, now_wall_ms, o->routes[route].max_alert_min, sums);
		obs_alerts_eval(o->alerts, route, obs_windows, sums, n, now_wall_ms);
	}
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
	obs_alerts_resend(o->alerts, now_wall_ms);
}

int
obs_alert_firing(struct obs *o, const char *rule, int route)
{
	int i, n;

	if (o == NULL)
		return -ENOENT;
	n = obs_alerts_count(o->alerts);
	for (i = 0; i < n; i++) {
		const struct alert_rule *r;
		const struct alert *a;

		obs_alerts_get(o->alerts, i, &r, &a);
		if (r->route == route && strcmp(r->name, rule) == 0)
			return a->state == ALERT_FIRING;
	}
	return -ENOENT;
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
	cJSON_AddNumberToObject(x, "smart_total", (double)slo_total(c, SLO_KIND_SMART));
	json_add_number(x, "service_availability", s.service_availability);
	json_add_number(x, "smart_availability", s.smart_availability);
	json_add_number(x, "latency_ok", s.latency_ok);
	json_add_number(x, "timeout_rate", s.timeout_rate);
	json_add_number(x, "retry_rate", s.retry_rate);
	json_add_number(x, "format_violation_rate", s.format_violation_rate);
	{
		/* issue "SLOs": review diff rate, rules-shadow and cross-check
		 * agreement; null when nothing was decided / sampled */
		static const char *const extra[] = {"review_diff_rate", "shadow_agreement",
						    "cross_check_agreement"};
		double v;

		for (i = 0; i < ARRAY_SIZE(extra); i++)
			json_add_number(x, extra[i],
					slo_metric_value(c, extra[i], &v) == 0 ? v : NAN);
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

	json_add_number(x, "remaining",
			slo_budget_remaining(slo_good(&sums[OBS_NWINDOWS - 1], k),
					     slo_total(&sums[OBS_NWINDOWS - 1], k), target));
	json_add_number(x, "burn_rate_1h",
			slo_burn_rate(slo_good(&sums[window_index(60)], k),
				      slo_total(&sums[window_index(60)], k), target));
	br = cJSON_AddObjectToObject(x, "burn_rates");
	for (i = 0; i < OBS_NWINDOWS; i++) {
		char name[16];

		obs_alerts_window_label(obs_windows[i], name, sizeof name);
		json_add_number(
			br, name,
			slo_burn_rate(slo_good(&sums[i], k), slo_total(&sums[i], k), target));
	}
	return x;
}

static cJSON *
route_slo_json(struct obs *o, int route, int64_t now_wall_ms)
{
	const struct slo_cfg *s = &o->cfg->routes[route].slo;
	struct slo_counts sums[OBS_NWINDOWS];
	cJSON *x = cJSON_CreateObject(), *obj, *wins, *eb, *ba;
	const struct alert_rule *rules;
	const struct alert *alerts;
	int w, i, n;

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
	n = obs_alerts_list(o->alerts, &rules, &alerts);
	for (i = 0; i < n; i++) {
		const struct alert_rule *r = &rules[i];
		cJSON *p;
		char lw[16], sw[16];

		if (r->route != route || r->kind != ALERT_KIND_BURN)
			continue;
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "rule", r->name);
		cJSON_AddStringToObject(p, "slo", slo_kind_name(r->slo));
		cJSON_AddNumberToObject(p, "factor", r->threshold);
		obs_alerts_window_label(r->window_min, lw, sizeof lw);
		obs_alerts_window_label(r->short_min, sw, sizeof sw);
		cJSON_AddStringToObject(p, "long_window", lw);
		cJSON_AddStringToObject(p, "short_window", sw);
		cJSON_AddStringToObject(p, "severity", severity_name(r->severity));
		cJSON_AddBoolToObject(p, "can_fire", r->reachable);
		cJSON_AddStringToObject(p, "state", alert_state_name(alerts[i].state));
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

const struct config *
obs_config(const struct obs *o)
{
	return o->cfg;
}

const struct obs_route_counts *
obs_route_counts(const struct obs *o, int route)
{
	return route_ok(o, route) ? &o->routes[route].n : NULL;
}

const struct obs_backend_counts *
obs_backend_counts(const struct obs *o, int backend)
{
	return backend >= 0 && backend < o->nbackends ? &o->backends[backend] : NULL;
}

void
obs_window_sums(const struct obs *o, int route, int64_t now_wall_ms,
		struct slo_counts sums[WIN__COUNT])
{
	struct slo_counts all[OBS_NWINDOWS];
	int w;

	slo_ring_sums(&o->routes[route].ring, now_wall_ms, obs_windows, OBS_NWINDOWS, all);
	for (w = 0; w < WIN__COUNT; w++) {
		int idx = window_index(slo_window_minutes((enum slo_window)w));

		if (idx >= 0)
			sums[w] = all[idx];
		else
			memset(&sums[w], 0, sizeof sums[w]);
	}
}

int
obs_alert_list(const struct obs *o, const struct alert_rule **rules, const struct alert **alerts)
{
	return obs_alerts_list(o->alerts, rules, alerts);
}

int
obs_notify_stats(const struct obs *o, struct notify_stats *ns)
{
	return obs_alerts_notify_stats(o->alerts, ns);
}

int
obs_route_minutes(const struct obs *o, int route, int64_t from_minute, struct slo_minute *out,
		  int max)
{
	const struct slo_ring *r;
	int i, n = 0;

	if (o == NULL || !route_ok(o, route))
		return 0;
	r = &o->routes[route].ring;
	for (i = 0; i < r->n && n < max; i++) {
		const struct slo_minute *m = &r->m[(r->head + i) % r->cap];

		if (m->minute >= from_minute)
			out[n++] = *m;
	}
	return n;
}

void
obs_alert_set(struct obs *o, const struct obs_alert_spec *sp, int cond, double value,
	      int64_t now_wall_ms)
{
	if (o != NULL)
		obs_alerts_set(o->alerts, sp, cond, value, now_wall_ms);
}

int
obs_alert_count(const struct obs *o)
{
	return obs_alerts_count(o->alerts);
}

void
obs_alert_get(const struct obs *o, int i, const struct alert_rule **rule,
	      const struct alert **alert)
{
	obs_alerts_get(o->alerts, i, rule, alert);
}

void
obs_reload_counted(struct obs *o, int ok)
{
	if (o == NULL)
		return;
	if (ok)
		o->reloads_applied++;
	else
		o->reloads_refused++;
}

void
obs_reload_counts(const struct obs *o, uint64_t *applied, uint64_t *refused)
{
	*applied = o->reloads_applied;
	*refused = o->reloads_refused;
}
