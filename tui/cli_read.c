/*
 * cli_read: the verbs that only read — status, routes, breakers (on the
 * state cli_run fetched), reviews, slo, alerts and events (see cli.h).
 * slo --prometheus URL reads the fleet's SLOs from Prometheus instead of
 * one daemon (prom.c): no daemon, no token.
 */
#include "cli_int.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "fmt.h"
#include "prom.h"
#include "table.h"
#include "util.h"

#define EVENTS_PAGE 500

int
cli_verb_status(struct client *c, int json, int argc, char **argv, const struct state_v *s)
{
	char up[32];
	int i, lv[4] = {0}, forced = 0, bs[6] = {0};

	for (i = 0; i < s->nroutes; i++) {
		if (s->routes[i].level >= 0 && s->routes[i].level < 4)
			lv[s->routes[i].level]++;
		forced += s->routes[i].forced;
	}
	for (i = 0; i < s->nbackends; i++)
		bs[s->backends[i].st]++;
	fmt_duration(up, sizeof up, s->uptime_s * 1000, 0);
	printf("fuseboxd %s at %s: up %s, inflight %d\n", s->version, c->base, up, s->inflight);
	printf("routes %d: L0 %d, L1 %d, L2 %d, L3 %d (forced %d)\n", s->nroutes, lv[0], lv[1],
	       lv[2], lv[3], forced);
	printf("backends %d: closed %d, half_open %d, open %d, forced_open %d, forced_closed %d\n",
	       s->nbackends, bs[BS_CLOSED], bs[BS_HALF_OPEN], bs[BS_OPEN], bs[BS_FORCED_OPEN],
	       bs[BS_FORCED_CLOSED]);
	return CLI_OK;
}

static void
forced_text(const struct route_v *r, char *out, size_t outsz)
{
	char until[40];

	if (!r->forced) {
		snprintf(out, outsz, "-");
		return;
	}
	cli_rfc3339(r->forced_until, until, sizeof until);
	snprintf(out, outsz, "L%d by %s until %s: %s", r->forced_lvl, r->forced_actor,
		 r->forced_until > 0 ? until : "released", r->forced_reason);
}

/* A route's hedging: "800ms" (the delay now), "on" (delay not known), "off". */
static void
hedge_text(const struct hedge_v *h, char *out, size_t outsz)
{
	if (!h->on)
		snprintf(out, outsz, "off");
	else if (h->delay_ms < 0)
		snprintf(out, outsz, "on");
	else
		snprintf(out, outsz, "%dms", h->delay_ms);
}

/* Cumulative hedge results "won/lost/failed/denied" ("-" when not hedging). */
static void
hedge_counts(const struct hedge_v *h, char *out, size_t outsz)
{
	if (!h->on)
		snprintf(out, outsz, "-");
	else
		snprintf(out, outsz, "%lld/%lld/%lld/%lld", (long long)h->n[HV_WON],
			 (long long)h->n[HV_LOST], (long long)h->n[HV_FAILED],
			 (long long)h->n[HV_DENIED]);
}

/* A count, "-" when unknown (-1). */
static void
count_or_dash(int64_t v, char *out, size_t outsz)
{
	if (v < 0)
		snprintf(out, outsz, "-");
	else
		snprintf(out, outsz, "%lld", (long long)v);
}

int
cli_verb_routes(struct client *c, int json, int argc, char **argv, const struct state_v *s)
{
	static const char *const titles[] = {"ROUTE",	"LEVEL", "AUTO",
					     "RPS",	"P50",	 "P99",
					     "REVIEW",	"HEDGE", "WON/LOST/FAILED/DENIED",
					     "TARGETS", "FORCED"};
	struct table *t;
	char lvl[8], al[8], rps[16], p50[16], p99[16], rev[16], tg[512], fo[512], hd[16], hn[96];
	int i;

	t = table_new(11, titles, "   rrrrrr  ");
	for (i = 0; i < s->nroutes; i++) {
		const struct route_v *r = &s->routes[i];
		const char *cells[] = {r->name, lvl, al, rps, p50, p99, rev, hd, hn, tg, fo};

		snprintf(lvl, sizeof lvl, "L%d", r->level);
		snprintf(al, sizeof al, "L%d", r->auto_level);
		fmt_rate(rps, sizeof rps, r->rps);
		fmt_latency(p50, sizeof p50, r->p50_ms);
		fmt_latency(p99, sizeof p99, r->p99_ms);
		if (r->review_pending >= 0)
			snprintf(rev, sizeof rev, "%d", r->review_pending);
		else
			snprintf(rev, sizeof rev, "-");
		hedge_text(&r->hedge, hd, sizeof hd);
		hedge_counts(&r->hedge, hn, sizeof hn);
		cli_targets_text(r, tg, sizeof tg);
		forced_text(r, fo, sizeof fo);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	return CLI_OK;
}

/*
 * The hedges started (won + lost + failed, since the daemon started) by
 * the routes that target backend b; "off" when none of them hedges.
 */
static void
backend_hedges(const struct state_v *s, const struct backend_v *b, char *out, size_t outsz)
{
	int64_t n = 0;
	int i, j, any = 0;

	for (i = 0; i < s->nroutes; i++) {
		const struct route_v *r = &s->routes[i];
		int uses = 0;

		for (j = 0; j < r->ntargets; j++)
			uses |= strcmp(r->targets[j].backend, b->name) == 0;
		if (!uses || !r->hedge.on)
			continue;
		any = 1;
		for (j = HV_WON; j <= HV_FAILED; j++)
			n += MAX(r->hedge.n[j], 0);
	}
	if (any)
		snprintf(out, outsz, "%lld", (long long)n);
	else
		snprintf(out, outsz, "off");
}

int
cli_verb_breakers(struct client *c, int json, int argc, char **argv, const struct state_v *s)
{
	static const char *const titles[] = {"BACKEND", "STATE",     "FAIL%",	 "SLOW%",
					     "CALLS",	"HALF-OPEN", "INFLIGHT", "HEALTH",
					     "LIMIT",	"WAIT",	     "LATENCY",	 "HEDGES",
					     "RL-REQ",	"RL-TOK",    "SKIPPED",	 "LAST TRANSITION"};
	struct table *t;
	char fail[16], slow[16], calls[16], ho[32], inf[32], health[16], last[512];
	char lim[32], wait[16], lat[48], hedges[24], rq[24], tk[24], sk[24];
	int i;
	int64_t now = clock_wall_ms();

	t = table_new(16, titles, "  rrrrrrrrrrrrr ");
	for (i = 0; i < s->nbackends; i++) {
		const struct backend_v *b = &s->backends[i];
		const char *cells[] = {b->name, b->state, fail, slow,	calls, ho, inf, health,
				       lim,	wait,	  lat,	hedges, rq,    tk, sk,	last};
		int limit = b->limit >= 0 ? b->limit : b->max_concurrent;

		fmt_pct(fail, sizeof fail, b->failure_rate, 1);
		fmt_pct(slow, sizeof slow, b->slow_call_rate, 1);
		snprintf(calls, sizeof calls, "%d", b->calls_in_window);
		if (b->st == BS_OPEN && b->half_open_at > 0)
			fmt_duration(ho, sizeof ho, MAX(b->half_open_at - now, 0), 0);
		else
			snprintf(ho, sizeof ho, "-");
		snprintf(inf, sizeof inf, "%d/%s%d", b->inflight, b->adaptive ? "~" : "", limit);
		if (b->limit < 0)
			snprintf(lim, sizeof lim, "-");
		else if (b->adaptive)
			snprintf(lim, sizeof lim, "~%d/%d", b->limit, b->limit_max);
		else
			snprintf(lim, sizeof lim, "%d", b->limit);
		count_or_dash(b->waiting, wait, sizeof wait);
		if (isnan(b->baseline_ms)) {
			snprintf(lat, sizeof lat, "-");
		} else {
			char l[16];

			fmt_latency(l, sizeof l, b->latency_ms);
			snprintf(lat, sizeof lat, "%.0f->%s", b->baseline_ms, l);
		}
		backend_hedges(s, b, hedges, sizeof hedges);
		count_or_dash(b->rl_requests, rq, sizeof rq);
		count_or_dash(b->rl_tokens, tk, sizeof tk);
		count_or_dash(b->rl_skipped, sk, sizeof sk);
		if (isnan(b->health))
			snprintf(health, sizeof health, "-");
		else
			snprintf(health, sizeof health, "%.2f", b->health);
		if (b->has_transition)
			snprintf(last, sizeof last, "%s->%s: %s", b->tr_from, b->tr_to,
				 b->tr_reason);
		else
			snprintf(last, sizeof last, "-");
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	return CLI_OK;
}
void
cli_review_cells(const struct review_v *r, int64_t now, char *id, size_t idsz, char *due,
		 size_t duesz, char *conf, size_t confsz)
{
	snprintf(id, idsz, "%lld", (long long)r->id);
	if (r->due_at > 0)
		fmt_duration(due, duesz, r->due_at - now, 0);
	else
		snprintf(due, duesz, "-");
	if (isnan(r->confidence))
		snprintf(conf, confsz, "-");
	else
		snprintf(conf, confsz, "%.2f", r->confidence);
}

const char *const cli_reviews_takes[] = {"--state", "--route", "--limit", NULL};

int
cli_verb_reviews(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	static const char *const titles[] = {"ID",     "ROUTE",	 "PRIORITY",   "STATE",
					     "DUE IN", "REASON", "CONFIDENCE", "INPUT"};
	struct client_resp resp;
	struct reviews_v *rv = NULL;
	struct table *t;
	struct args a;
	struct buf path;
	char id[32], due[32], conf[16], *cause = NULL, *e;
	int rc, i;
	int64_t now = clock_wall_ms();

	if ((rc = cli_args_parse(argc, argv, cli_reviews_takes, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : cli_usage_error("reviews: unexpected argument %s", a.pos[0]);
	buf_init(&path, 1024);
	buf_puts(&path, "/v1/reviews?limit=");
	buf_puts(&path, a.opt[2] ? a.opt[2] : "200");
	for (i = 0; i < 2; i++) {
		if (a.opt[i] == NULL)
			continue;
		e = client_escape(a.opt[i]);
		buf_printf(&path, "&%s=%s", i == 0 ? "state" : "route", e);
		free(e);
	}
	rc = cli_request(c, "GET", path.data, NULL, CONTROL_TIMEOUT_MS, &resp);
	buf_free(&path);
	if (rc != 0)
		return rc;
	if (json) {
		cli_print_json(&resp);
		goto out;
	}
	if (model_parse_reviews(resp.body, resp.len, 0, &rv, &cause) != 0) {
		fprintf(stderr, "fusebox: GET /v1/reviews: %s\n", cause);
		free(cause);
		client_resp_free(&resp);
		return CLI_FAILED;
	}
	reviews_sort(rv);
	t = table_new(8, titles, "r   r r ");
	for (i = 0; i < rv->n; i++) {
		const struct review_v *r = &rv->v[i];
		const char *cells[] = {id,  r->route,  r->priority, r->state,
				       due, r->reason, conf,	    r->input ? r->input : ""};

		cli_review_cells(r, now, id, sizeof id, due, sizeof due, conf, sizeof conf);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	if (rv->pending >= 0)
		printf("pending %d, overdue %d\n", rv->pending, MAX(rv->overdue, 0));
	reviews_free(rv);
out:
	client_resp_free(&resp);
	return CLI_OK;
}

static void
print_slo_route(const struct slo_route_v *r)
{
	static const char *const titles[] = {"WINDOW",	"TOTAL",   "SERVICE", "SMART",
					     "LATENCY", "TIMEOUT", "RETRY",   "FORMAT"};
	struct table *t = table_new(8, titles, " rrrrrrr");
	char tot[24], sv[16], sm[16], lat[16], to[16], re[16], fv[16], l[16], b1[16], b2[16];
	char o1[16], o2[16], o3[16];
	int i;

	fmt_latency(l, sizeof l, r->obj_latency_ms);
	fmt_pct(o1, sizeof o1, r->obj_service, -1);
	fmt_pct(o2, sizeof o2, r->obj_smart, -1);
	fmt_pct(o3, sizeof o3, r->obj_latency_target, -1);
	printf("%s: objectives service %s, smart %s, latency %s for %s\n", r->route, o1, o2, l, o3);
	for (i = 0; i < SLO_NWIN; i++) {
		const struct slo_window_v *w = &r->w[i];
		const char *cells[] = {model_slo_windows[i], tot, sv, sm, lat, to, re, fv};

		if (!w->present)
			continue;
		snprintf(tot, sizeof tot, "%lld", (long long)w->total);
		fmt_pct(sv, sizeof sv, w->service, 2);
		fmt_pct(sm, sizeof sm, w->smart, 2);
		fmt_pct(lat, sizeof lat, w->latency_ok, 2);
		fmt_pct(to, sizeof to, w->timeout_rate, 2);
		fmt_pct(re, sizeof re, w->retry_rate, 2);
		fmt_pct(fv, sizeof fv, w->format_violation_rate, 2);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	fmt_pct(sv, sizeof sv, r->budget_service, 1);
	fmt_pct(sm, sizeof sm, r->budget_smart, 1);
	snprintf(b1, sizeof b1, isnan(r->burn_service) ? "-" : "%.2fx", r->burn_service);
	snprintf(b2, sizeof b2, isnan(r->burn_smart) ? "-" : "%.2fx", r->burn_smart);
	printf("error budget left: service %s (burn 1h %s), smart %s (burn 1h %s)\n", sv, b1, sm,
	       b2);
}

const char *const cli_slo_takes[] = {"--prometheus", NULL};

/* slo --prometheus URL [ROUTE]: the fleet's windows, budget and alerts (prom.h). */
static int
slo_prometheus(const char *url, const char *route, int json)
{
	char *cause = NULL;

	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return cli_usage_error("slo: --prometheus needs an http(s) URL, not \"%s\"", url);
	if (prom_slo_print(stdout, url, route, json, CONTROL_TIMEOUT_MS, &cause) != 0) {
		fprintf(stderr, "fusebox: %s\n", cause);
		free(cause);
		return CLI_FAILED;
	}
	return CLI_OK;
}

int
cli_verb_slo(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	struct client_resp resp;
	struct slo_v *s = NULL;
	struct args a;
	char path[256], *cause = NULL, *e;
	int rc, i;

	if ((rc = cli_args_parse(argc, argv, cli_slo_takes, NULL, &a)) != 0)
		return rc;
	if (a.npos > 1)
		return cli_usage_error("slo takes at most one route");
	if (a.opt[0] != NULL)
		return slo_prometheus(a.opt[0], a.npos == 1 ? a.pos[0] : NULL, json);
	if (a.npos == 1) {
		e = client_escape(a.pos[0]);
		snprintf(path, sizeof path, "/v1/slo?route=%s", e);
		free(e);
	} else {
		snprintf(path, sizeof path, "/v1/slo");
	}
	rc = cli_request(c, "GET", path, NULL, CONTROL_TIMEOUT_MS, &resp);
	if (rc != 0)
		return rc;
	if (json) {
		cli_print_json(&resp);
		goto out;
	}
	if (model_parse_slo(resp.body, resp.len, &s, &cause) != 0) {
		fprintf(stderr, "fusebox: GET %s: %s\n", path, cause);
		free(cause);
		client_resp_free(&resp);
		return CLI_FAILED;
	}
	for (i = 0; i < s->n; i++) {
		if (i)
			fputc('\n', stdout);
		print_slo_route(&s->routes[i]);
	}
	slo_free(s);
out:
	client_resp_free(&resp);
	return CLI_OK;
}

int
cli_verb_alerts(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	static const char *const titles[] = {"ID",    "RULE",  "ROUTE",	    "SEVERITY",
					     "STATE", "VALUE", "THRESHOLD", "SINCE"};
	struct client_resp resp;
	struct alerts_v *al = NULL;
	struct table *t;
	struct args a;
	char v[32], th[32], since[40], *cause = NULL;
	int rc, i;

	if ((rc = cli_args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : cli_usage_error("alerts takes no arguments");
	rc = cli_request(c, "GET", "/v1/alerts", NULL, CONTROL_TIMEOUT_MS, &resp);
	if (rc != 0)
		return rc;
	if (json) {
		cli_print_json(&resp);
		goto out;
	}
	if (model_parse_alerts(resp.body, resp.len, &al, &cause) != 0) {
		fprintf(stderr, "fusebox: GET /v1/alerts: %s\n", cause);
		free(cause);
		client_resp_free(&resp);
		return CLI_FAILED;
	}
	t = table_new(8, titles, "r    rr ");
	for (i = 0; i < al->n; i++) {
		const struct alert_v *x = &al->v[i];
		const char *cells[] = {x->id,	 x->rule, x->route, x->severity,
				       x->state, v,	  th,	    since};

		snprintf(v, sizeof v, isnan(x->value) ? "-" : "%.4g", x->value);
		snprintf(th, sizeof th, isnan(x->threshold) ? "-" : "%.4g", x->threshold);
		cli_rfc3339(x->since, since, sizeof since);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	alerts_free(al);
out:
	client_resp_free(&resp);
	return CLI_OK;
}

const char *const cli_events_takes[] = {"--after", "--limit", NULL};
const char *const cli_events_flags[] = {"--follow", "-f", NULL};

static volatile sig_atomic_t follow_stop;

static void
on_stop(int sig)
{
	(void)sig;
	follow_stop = 1;
}

/*
 * Wait up to ms; 1 when stdout is a pipe whose reader went away (`| head
 * -3` ends us at once, not at the next event): the write end of such a
 * pipe polls POLLERR. Files and terminals just wait.
 */
static int
reader_gone_within(int ms)
{
	struct pollfd p = {.fd = STDOUT_FILENO, .events = 0};

	return poll(&p, 1, ms) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
}

static void
print_events(const struct events_v *e, struct table *t)
{
	char id[32], at[40];
	int i;

	for (i = 0; i < e->n; i++) {
		const struct event_v *v = &e->v[i];
		const char *cells[] = {id, at, v->kind, v->subject, v->detail ? v->detail : ""};

		snprintf(id, sizeof id, "%lld", (long long)v->id);
		cli_rfc3339(v->at, at, sizeof at);
		table_add(t, cells);
	}
}

/*
 * events: page through /v1/events from --after (default 0) and print the
 * last 200 (all pages are read so the tail is current); --follow then
 * polls once a second and prints new events as they come, one line each
 * (JSON lines with --json), until interrupted.
 */
int
cli_verb_events(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	static const char *const titles[] = {"ID", "AT", "KIND", "SUBJECT", "DETAIL"};
	struct client_resp resp;
	struct events_v *e = NULL;
	struct event_ring ring;
	struct table *t;
	struct args a;
	char path[128], *cause = NULL;
	int64_t after = 0, limit = 200, got;
	int rc, i, follow, pages = 0;
	cJSON *all = NULL, *arr, *page, *it;

	if ((rc = cli_args_parse(argc, argv, cli_events_takes, cli_events_flags, &a)) != 0 ||
	    a.npos != 0)
		return rc ? rc : cli_usage_error("events: unexpected argument %s", a.pos[0]);
	follow = a.flag[0] || a.flag[1];
	if (a.opt[0] != NULL && parse_int64(a.opt[0], &after) != 0)
		return cli_usage_error("events: --after needs an event id");
	if (a.opt[1] != NULL && (parse_int64(a.opt[1], &limit) != 0 || limit < 1))
		return cli_usage_error("events: --limit needs a positive number");
	event_ring_init(&ring, (int)MIN(limit, 100000));
	all = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(all, "events");
	do {
		snprintf(path, sizeof path, "/v1/events?after=%lld&limit=%d", (long long)after,
			 EVENTS_PAGE);
		rc = cli_request(c, "GET", path, NULL, CONTROL_TIMEOUT_MS, &resp);
		if (rc != 0)
			goto out;
		if (model_parse_events(resp.body, resp.len, &e, &cause) != 0) {
			fprintf(stderr, "fusebox: GET %s: %s\n", path, cause);
			client_resp_free(&resp);
			rc = CLI_FAILED;
			goto out;
		}
		page = cJSON_ParseWithLength(resp.body, resp.len);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(page, "events"))
		{
			cJSON_AddItemToArray(arr, cJSON_Duplicate(it, 1));
			while (cJSON_GetArraySize(arr) > limit)
				cJSON_DeleteItemFromArray(arr, 0);
		}
		cJSON_Delete(page);
		client_resp_free(&resp);
		got = e->n;
		for (i = 0; i < e->n; i++)
			after = MAX(after, e->v[i].id);
		event_ring_push(&ring, e);
		events_free(e);
		e = NULL;
	} while (got >= EVENTS_PAGE && ++pages < 1000);
	if (json && follow) {
		cJSON_ArrayForEach(it, arr)
		{
			char *line = cJSON_PrintUnformatted(it);

			printf("%s\n", line);
			cJSON_free(line);
		}
	} else if (json) {
		char *text = cJSON_PrintUnformatted(all);

		printf("%s\n", text);
		cJSON_free(text);
	} else {
		struct events_v view = {0};

		t = table_new(5, titles, "r    ");
		view.v = xcalloc((size_t)ring.n + 1, sizeof *view.v);
		for (i = 0; i < ring.n; i++)
			view.v[view.n++] = *event_ring_get(&ring, i);
		print_events(&view, t);
		free(view.v);
		table_print(t, stdout);
		table_free(t);
	}
	fflush(stdout);
	if (!follow)
		goto out;
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	while (!follow_stop) {
		if (reader_gone_within(1000))
			break;
		if (follow_stop)
			break;
		snprintf(path, sizeof path, "/v1/events?after=%lld&limit=%d", (long long)after,
			 EVENTS_PAGE);
		if (cli_request(c, "GET", path, NULL, CONTROL_TIMEOUT_MS, &resp) != 0)
			continue; /* the daemon may come back */
		if (model_parse_events(resp.body, resp.len, &e, &cause) != 0) {
			free(cause);
			cause = NULL;
			client_resp_free(&resp);
			continue;
		}
		page = cJSON_ParseWithLength(resp.body, resp.len);
		if (json) {
			cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(page, "events"))
			{
				char *line = cJSON_PrintUnformatted(it);

				printf("%s\n", line);
				cJSON_free(line);
			}
		} else {
			char id[32], at[40];

			for (i = 0; i < e->n; i++) {
				cli_rfc3339(e->v[i].at, at, sizeof at);
				snprintf(id, sizeof id, "%lld", (long long)e->v[i].id);
				printf("%s  %s  %s  %s  %s\n", id, at, e->v[i].kind,
				       e->v[i].subject, e->v[i].detail ? e->v[i].detail : "");
			}
		}
		for (i = 0; i < e->n; i++)
			after = MAX(after, e->v[i].id);
		cJSON_Delete(page);
		events_free(e);
		e = NULL;
		client_resp_free(&resp);
		if (fflush(stdout) != 0)
			break;
	}
	rc = CLI_OK;
out:
	free(cause);
	events_free(e);
	event_ring_free(&ring);
	cJSON_Delete(all);
	return rc;
}
