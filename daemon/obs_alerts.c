/*
 * obs_alerts: the alert lifecycle.
 *
 * Every second obs_tick() hands each route's window sums to
 * obs_alerts_eval(), which evaluates every alert rule (alerts.c) of the
 * route; each transition is logged, stored (alerts row + events row kind
 * "alert") and, when firing or resolved, POSTed to the alert webhook
 * and/or Alertmanager through a private notify worker (only created when
 * one is configured). A firing alert is re-sent to Alertmanager every
 * minute so it does not time out there; an episode found pending/firing in
 * the alerts table at start resumes.
 *
 * Thread: everything here runs on the engine thread. The config, store and
 * reader are borrowed and must outlive the obs_alerts.
 */
#include "obs_alerts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "jsonutil.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#define OBS_AM_RESEND_MS 60000
/* Where the runbook of an alertname is (docs/OBSERVABILITY.md "Alerts"). */
#define OBS_RUNBOOK_BASE "docs/OBSERVABILITY.md#"

/* An alert another module raises (obs_alerts_set); its rule is built here. */
struct ext_alert {
	struct alert_rule rule;
	struct alert a;
	char route[128]; /* by name: the index is remapped after a reload */
	char summary[256];
	char backend[128]; /* an extra "backend" label, or "" */
};
#define OBS_NOTIFY_QUEUE 256
#define OBS_NOTIFY_TRIES 4

struct obs_alerts {
	const struct config *cfg;
	struct store *st;
	struct store_reader *rd;
	struct alert_rule *rules;
	struct alert *alerts;
	int nrules;
	struct notify *notify;
	char *am_url; /* <alertmanager>/api/v2/alerts or NULL */
	char instance[128];
	int64_t last_am_ms;
	struct ext_alert **ext;
	int next, ext_cap;
};

void
obs_alerts_window_label(int minutes, char *out, size_t n)
{
	alert_window_label(minutes, out, n);
}

/* The index of minutes in windows[0 .. n), or -1. */
static int
window_find(const int *windows, int n, int minutes)
{
	int i;

	for (i = 0; i < n; i++)
		if (windows[i] == minutes)
			return i;
	return -1;
}

/*
 * The alert rules of cfg and their (inactive) alerts; warns about burn-rate
 * pairs that can never fire.
 */
static int
rules_setup(const struct config *cfg, struct alert_rule **rulesp, struct alert **alertsp)
{
	struct alert_rule *rules = NULL;
	struct alert *alerts;
	int i, n = alert_rules_build(cfg, &rules);

	alerts = xcalloc((size_t)MAX(n, 1), sizeof *alerts);
	for (i = 0; i < n; i++) {
		struct alert_rule *r = &rules[i];

		alert_init(&alerts[i], r);
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
rule_route_name(const struct obs_alerts *o, const struct alert_rule *r)
{
	return o->cfg->routes[r->route].name;
}

/* The ext_alert a belongs to, or NULL for a configured rule's alert. */
static const struct ext_alert *
ext_of(const struct alert *a)
{
	const struct alert_rule *r = a->rule;

	if (r->kind != ALERT_KIND_EXTERNAL)
		return NULL;
	return (const struct ext_alert *)((const char *)r - offsetof(struct ext_alert, rule));
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
alert_store_row(struct obs_alerts *o, const char *rule, const char *route, const char *severity,
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
event_row(struct obs_alerts *o, int64_t at, const char *subject, const char *detail)
{
	struct store_val v[] = {SVI(at), SVT("alert"), SVT(subject), SVT(detail)};

	if (o->st != NULL)
		store_put(o->st, STORE_EVENT_INSERT, v, (int)ARRAY_SIZE(v));
}

struct orphan_ctx {
	struct obs_alerts *o;
	int64_t now;
};

static int
orphan_row(void *arg, sqlite3_stmt *row)
{
	struct orphan_ctx *oc = arg;
	struct obs_alerts *o = oc->o;
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
alerts_restore(struct obs_alerts *o, int64_t now_wall_ms)
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

		if (store_reader_run(o->rd, STORE_Q_ALERT_LAST, v, 2, last_row, &lc, &cause) != 0) {
			log_warn("obs", "alerts restore: %s", cause ? cause : "query failed");
			free(cause);
			cause = NULL;
			continue;
		}
		if (!lc.found || alert_state_parse(lc.state, &st) != 0 ||
		    (st != ALERT_PENDING && st != ALERT_FIRING))
			continue;
		since = store_reader_run_int(o->rd, STORE_Q_ALERT_EPISODE_START, v, 2, lc.at);
		alert_restore(&o->alerts[i], st, since > 0 ? since : lc.at, lc.at);
		{
			char ts[40];

			time_format_rfc3339(since > 0 ? since : lc.at, ts, sizeof ts);
			log_info("alerts", "%s/%s: resumed %s (since %s)", rule_route_name(o, r),
				 r->name, lc.state, ts);
		}
	}
	if (store_reader_run(o->rd, STORE_Q_ALERTS_OPEN, NULL, 0, orphan_row, &oc, &cause) != 0) {
		log_warn("obs", "alerts restore: %s", cause ? cause : "query failed");
		free(cause);
	}
}

struct obs_alerts *
obs_alerts_new(const struct config *cfg, struct store *st, struct store_reader *rd)
{
	struct obs_alerts *o = xcalloc(1, sizeof *o);

	o->cfg = cfg;
	o->st = st;
	o->rd = rd;
	o->nrules = rules_setup(cfg, &o->rules, &o->alerts);
	o->am_url = am_url_make(cfg);
	if (gethostname(o->instance, sizeof o->instance - 1) != 0)
		snprintf(o->instance, sizeof o->instance, "localhost");
	return o;
}

void
obs_alerts_free(struct obs_alerts *o)
{
	int i;

	if (o == NULL)
		return;
	notify_free(o->notify, 2000);
	for (i = 0; i < o->next; i++)
		free(o->ext[i]);
	free(o->ext);
	free(o->rules);
	free(o->alerts);
	free(o->am_url);
	free(o);
}

void
obs_alerts_restore(struct obs_alerts *o, int64_t now_wall_ms)
{
	if (o->rd != NULL)
		alerts_restore(o, now_wall_ms);
}

int
obs_alerts_notify_start(struct obs_alerts *o, char **cause)
{
	int ret;

	if (o->notify != NULL ||
	    (o->cfg->alert_webhook == NULL && o->cfg->alertmanager_url == NULL))
		return 0;
	ret = notify_new(OBS_NOTIFY_QUEUE, &o->notify);
	if (ret != 0)
		*cause = xasprintf("obs: cannot start the alert notifier: %s", strerror(-ret));
	return ret;
}

int
obs_alerts_reconfigure(struct obs_alerts *o, const struct config *ncfg, int64_t now_wall_ms,
		       char **cause)
{
	struct alert_rule *nrules = NULL;
	struct alert *nalerts = NULL;
	struct notify *nn = NULL;
	char *taken = NULL; /* per old alert: already moved */
	int i, j, n, ret;

	if (o->notify == NULL && (ncfg->alert_webhook != NULL || ncfg->alertmanager_url != NULL)) {
		ret = notify_new(OBS_NOTIFY_QUEUE, &nn);
		if (ret != 0) {
			*cause = xasprintf("obs: cannot start the alert notifier: %s",
					   strerror(-ret));
			return ret;
		}
	}
	/* Alerts: an episode continues when its rule (name, route) still exists. */
	n = rules_setup(ncfg, &nrules, &nalerts);
	taken = xcalloc((size_t)MAX(o->nrules, 1), 1);
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
	/* Raised alerts follow their route by name; a removed route's resolve. */
	for (i = j = 0; j < o->next; j++) {
		struct ext_alert *x = o->ext[j];
		int k, route = -1;

		for (k = 0; k < ncfg->nroutes; k++)
			if (strcmp(ncfg->routes[k].name, x->route) == 0)
				route = k;
		if (route < 0) {
			if (alert_is_active(&x->a)) {
				alert_store_row(o, x->rule.name, x->route,
						severity_name(x->rule.severity), "resolved", NAN,
						x->rule.threshold, now_wall_ms);
				event_row(o, now_wall_ms, x->route, "route no longer configured");
			}
			free(x);
			continue;
		}
		x->rule.route = route;
		o->ext[i++] = x;
	}
	o->next = i;
	free(o->rules);
	free(o->alerts);
	free(o->am_url);
	o->rules = nrules;
	o->alerts = nalerts;
	o->nrules = n;
	o->am_url = am_url_make(ncfg);
	if (nn != NULL)
		o->notify = nn;
	o->cfg = ncfg;
	free(taken);
	return 0;
}

static void
format_ts(int64_t wall_ms, char *out, size_t n)
{
	time_format_rfc3339(wall_ms, out, n);
}

/* summary and description of a; *summary and *description caller-freed. */
static void
alert_texts(struct obs_alerts *o, const struct alert *a, char **summary, char **description)
{
	const struct alert_rule *r = a->rule;
	const struct ext_alert *x = ext_of(a);
	const char *route = rule_route_name(o, r);

	if (x != NULL) {
		*summary = xasprintf("fusebox route %s: %s", route, x->summary);
		*description = xasprintf("%s on %s (value %g, threshold %g)", x->summary,
					 o->instance, a->value, r->threshold);
	} else if (r->kind == ALERT_KIND_BURN) {
		char sw[16];

		alert_window_label(r->short_min, sw, sizeof sw);
		*summary =
			xasprintf("fusebox route %s: %s error budget burning over %gx (%s and %s)",
				  route, r->kind_label, r->threshold, r->window_label, sw);
		*description =
			xasprintf("%s burn rate %g over %s and %s on %s (target %g)", r->kind_label,
				  a->value, r->window_label, sw, o->instance, r->target);
	} else {
		*summary = xasprintf("fusebox route %s: %s %s %g over %s", route, r->metric,
				     alert_op_name(r->op), r->threshold, r->window_label);
		*description = xasprintf("rule %s: %s is %g over %s on %s", r->name, r->metric,
					 a->value, r->window_label, o->instance);
	}
}

static cJSON *
am_alert_json(struct obs_alerts *o, const struct alert *a, int64_t now_wall_ms)
{
	const struct alert_rule *r = a->rule;
	const struct ext_alert *x = ext_of(a);
	cJSON *x_ = cJSON_CreateObject(), *labels, *ann;
	char ts[40], num[64], *summary, *description, *runbook;

	labels = cJSON_AddObjectToObject(x_, "labels");
	cJSON_AddStringToObject(labels, "alertname", r->alertname);
	cJSON_AddStringToObject(labels, "rule", r->name);
	cJSON_AddStringToObject(labels, "route", rule_route_name(o, r));
	cJSON_AddStringToObject(labels, "kind", r->kind_label);
	cJSON_AddStringToObject(labels, "window", r->window_label);
	cJSON_AddStringToObject(labels, "severity", severity_name(r->severity));
	cJSON_AddStringToObject(labels, "source", "daemon");
	if (x != NULL && x->backend[0] != '\0')
		cJSON_AddStringToObject(labels, "backend", x->backend);
	if (r->kind == ALERT_KIND_BURN) {
		snprintf(num, sizeof num, "%g", r->threshold);
		cJSON_AddStringToObject(labels, "factor", num); /* as the fleet rules have it */
	}
	cJSON_AddStringToObject(labels, "service", "fusebox");
	cJSON_AddStringToObject(labels, "instance", o->instance);
	ann = cJSON_AddObjectToObject(x_, "annotations");
	snprintf(num, sizeof num, "%g", a->value);
	cJSON_AddStringToObject(ann, "value", num);
	snprintf(num, sizeof num, "%g", r->threshold);
	cJSON_AddStringToObject(ann, "threshold", num);
	alert_texts(o, a, &summary, &description);
	runbook = xasprintf(OBS_RUNBOOK_BASE "%s", r->alertname);
	cJSON_AddStringToObject(ann, "summary", summary);
	cJSON_AddStringToObject(ann, "description", description);
	cJSON_AddStringToObject(ann, "runbook_url", runbook);
	free(summary);
	free(description);
	free(runbook);
	format_ts(a->since_ms > 0 ? a->since_ms : now_wall_ms, ts, sizeof ts);
	cJSON_AddStringToObject(x_, "startsAt", ts);
	if (a->state != ALERT_FIRING) {
		format_ts(a->state_at_ms > 0 ? a->state_at_ms : now_wall_ms, ts, sizeof ts);
		cJSON_AddStringToObject(x_, "endsAt", ts);
	}
	return x_;
}

static void
am_post(struct obs_alerts *o, cJSON *arr)
{
	char *body = cJSON_PrintUnformatted(arr);

	if (body != NULL)
		notify_post(o->notify, o->am_url, body, "alert", OBS_NOTIFY_TRIES);
	free(body);
}

static void
webhook_post(struct obs_alerts *o, const struct alert *a)
{
	const struct alert_rule *r = a->rule;
	cJSON *x = cJSON_CreateObject();
	char ts[40];
	char *body;

	char *summary, *description, *runbook;

	cJSON_AddStringToObject(x, "event", "alert");
	cJSON_AddStringToObject(x, "rule", r->name);
	cJSON_AddStringToObject(x, "alertname", r->alertname);
	cJSON_AddStringToObject(x, "route", rule_route_name(o, r));
	cJSON_AddStringToObject(x, "kind", r->kind_label);
	cJSON_AddStringToObject(x, "window", r->window_label);
	cJSON_AddStringToObject(x, "source", "daemon");
	cJSON_AddStringToObject(x, "severity", severity_name(r->severity));
	cJSON_AddStringToObject(x, "state", alert_state_name(a->state));
	cJSON_AddStringToObject(x, "previous", alert_state_name(a->last.from));
	cJSON_AddStringToObject(x, "metric", r->metric);
	json_add_number(x, "value", a->last.value);
	cJSON_AddNumberToObject(x, "threshold", r->threshold);
	format_ts(a->since_ms, ts, sizeof ts);
	cJSON_AddStringToObject(x, "since", ts);
	format_ts(a->last.at_ms, ts, sizeof ts);
	cJSON_AddStringToObject(x, "at", ts);
	cJSON_AddStringToObject(x, "instance", o->instance);
	alert_texts(o, a, &summary, &description);
	runbook = xasprintf(OBS_RUNBOOK_BASE "%s", r->alertname);
	cJSON_AddStringToObject(x, "summary", summary);
	cJSON_AddStringToObject(x, "description", description);
	cJSON_AddStringToObject(x, "runbook_url", runbook);
	free(summary);
	free(description);
	free(runbook);
	body = cJSON_PrintUnformatted(x);
	cJSON_Delete(x);
	if (body != NULL)
		notify_post(o->notify, o->cfg->alert_webhook, body, "alert", OBS_NOTIFY_TRIES);
	free(body);
}

/* Log, store and post one transition of alert a. */
static void
alert_emit(struct obs_alerts *o, struct alert *a)
{
	const struct alert_rule *r = a->rule;
	const struct alert_transition *t = &a->last;
	const char *route = rule_route_name(o, r);
	const struct ext_alert *x = ext_of(a);
	char detail[512], win[32];

	obs_alerts_window_label(r->window_min, win, sizeof win);
	if (x != NULL) {
		snprintf(detail, sizeof detail, "%s %s: %s (%s; value %g, threshold %g)", r->name,
			 route, alert_state_name(t->to), x->summary, t->value, r->threshold);
		goto emit;
	}
	if (r->kind == ALERT_KIND_BURN) {
		size_t n = strlen(win);

		snprintf(win + n, sizeof win - n, " & ");
		n = strlen(win);
		obs_alerts_window_label(r->short_min, win + n, sizeof win - n);
	}
	snprintf(detail, sizeof detail, "%s: %s -> %s (%s %g; condition %s %g over %s)", r->name,
		 alert_state_name(t->from), alert_state_name(t->to), r->metric, t->value,
		 alert_op_name(r->op), r->threshold, win);
emit:
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

void
obs_alerts_eval(struct obs_alerts *o, int route, const int *windows, const struct slo_counts *sums,
		int n, int64_t now_wall_ms)
{
	static const struct slo_counts zero;
	int i;

	for (i = 0; i < o->nrules; i++) {
		struct alert *a = &o->alerts[i];
		const struct alert_rule *r = a->rule;
		const struct slo_counts *lng, *shrt = &zero;
		double value;
		int cond, li, si;

		if (r->route != route)
			continue;
		li = window_find(windows, n, r->window_min);
		if (li < 0)
			continue;
		lng = &sums[li];
		if (r->kind == ALERT_KIND_BURN) {
			si = window_find(windows, n, r->short_min);
			if (si < 0)
				continue;
			shrt = &sums[si];
		}
		cond = alert_condition(r, lng, shrt, &value);
		if (alert_update(a, cond, value, now_wall_ms))
			alert_emit(o, a);
	}
}

void
obs_alerts_resend(struct obs_alerts *o, int64_t now_wall_ms)
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
	for (i = 0; i < o->next; i++) {
		if (o->ext[i]->a.state != ALERT_FIRING)
			continue;
		cJSON_AddItemToArray(arr, am_alert_json(o, &o->ext[i]->a, now_wall_ms));
		n++;
	}
	if (n > 0)
		am_post(o, arr);
	cJSON_Delete(arr);
}

int
obs_alerts_list(const struct obs_alerts *o, const struct alert_rule **rules,
		const struct alert **alerts)
{
	*rules = o->rules;
	*alerts = o->alerts;
	return o->nrules;
}

int
obs_alerts_notify_stats(const struct obs_alerts *o, struct notify_stats *ns)
{
	if (o->notify == NULL)
		return -ENOENT;
	notify_get_stats(o->notify, ns);
	return 0;
}

/* The raised alert (rule, route), created (and resumed from the table) on first use. */
static struct ext_alert *
ext_find(struct obs_alerts *o, const struct obs_alert_spec *sp)
{
	const char *route = o->cfg->routes[sp->route].name;
	struct ext_alert *x;
	struct last_ctx lc = {"", 0, 0};
	enum alert_state st;
	char *cause = NULL;
	int i;

	for (i = 0; i < o->next; i++)
		if (o->ext[i]->rule.route == sp->route &&
		    strcmp(o->ext[i]->rule.name, sp->rule) == 0)
			return o->ext[i];
	x = xcalloc(1, sizeof *x);
	snprintf(x->rule.name, sizeof x->rule.name, "%s", sp->rule);
	snprintf(x->rule.alertname, sizeof x->rule.alertname, "%s", sp->alertname);
	snprintf(x->rule.kind_label, sizeof x->rule.kind_label, "%s", sp->kind);
	snprintf(x->rule.window_label, sizeof x->rule.window_label, "%s", sp->window);
	snprintf(x->route, sizeof x->route, "%s", route);
	snprintf(x->backend, sizeof x->backend, "%s", sp->backend ? sp->backend : "");
	x->rule.route = sp->route;
	x->rule.kind = ALERT_KIND_EXTERNAL;
	x->rule.severity = sp->severity;
	x->rule.metric = "";
	x->rule.reachable = 1;
	alert_init(&x->a, &x->rule);
	if (o->rd != NULL) {
		struct store_val v[] = {SVT(sp->rule), SVT(route)};

		/* An episode open before a restart goes on, not again. */
		if (store_reader_run(o->rd, STORE_Q_ALERT_LAST, v, 2, last_row, &lc, &cause) == 0 &&
		    lc.found && alert_state_parse(lc.state, &st) == 0 &&
		    (st == ALERT_PENDING || st == ALERT_FIRING)) {
			int64_t since = store_reader_run_int(o->rd, STORE_Q_ALERT_EPISODE_START, v,
							     2, lc.at);

			alert_restore(&x->a, st, since > 0 ? since : lc.at, lc.at);
		}
		free(cause);
	}
	if (o->next == o->ext_cap) {
		o->ext_cap = o->ext_cap ? 2 * o->ext_cap : 8;
		o->ext = xrealloc(o->ext, (size_t)o->ext_cap * sizeof *o->ext);
	}
	o->ext[o->next++] = x;
	return x;
}

void
obs_alerts_set(struct obs_alerts *o, const struct obs_alert_spec *sp, int cond, double value,
	       int64_t now_wall_ms)
{
	struct ext_alert *x;

	if (o == NULL || sp->route < 0 || sp->route >= o->cfg->nroutes)
		return;
	x = ext_find(o, sp);
	x->rule.threshold = sp->threshold;
	if (sp->summary != NULL)
		snprintf(x->summary, sizeof x->summary, "%s", sp->summary);
	if (alert_update(&x->a, cond, value, now_wall_ms))
		alert_emit(o, &x->a);
}

int
obs_alerts_count(const struct obs_alerts *o)
{
	return o->nrules + o->next;
}

void
obs_alerts_get(const struct obs_alerts *o, int i, const struct alert_rule **rule,
	       const struct alert **alert)
{
	if (i < o->nrules) {
		*rule = &o->rules[i];
		*alert = &o->alerts[i];
	} else {
		*rule = &o->ext[i - o->nrules]->rule;
		*alert = &o->ext[i - o->nrules]->a;
	}
}
