/*
 * screen_slo: per route (j/k choose it) service against smart availability
 * in every window, measured against the objectives, with the burn rate of
 * each window ((1 - availability) / (1 - objective)) and latency, timeout
 * and retry rates; the error budget left as bars with the daemon's 1 h
 * burn rates; then the alerts of every route with state and since (firing
 * first). The filter narrows the alert list.
 */
#include "screen_slo.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmt.h"
#include "prom.h"
#include "util.h"

/*
 * Fleet mode (f): the fleet's SLOs from Prometheus's recording rules
 * (prom.c's queries), fetched by a worker thread every PF_EVERY_MS while
 * the mode is shown; the UI thread only copies what it left under pf.mu.
 */
#define PF_EVERY_MS   5000
#define PF_TIMEOUT_MS 4000
#define PF_HIST_MIN   60

struct pf_hist {
	char route[64];
	float v[PF_HIST_MIN + 1];
	int n;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int started;
	char url[512];
	int want;	      /* the mode is shown: keep it fresh */
	int fetching;	      /* a fetch is running */
	struct prom_slo *rep; /* last good report (worker replaces it) */
	struct pf_hist *hist; /* 1 h of the 5m service availability per route */
	int nhist;
	char err[320];	   /* the last fetch's error ("" fine) */
	int64_t err_since; /* wall ms of the first failure in a row */
	int64_t ok_at;	   /* wall ms of the last good answer */
	int on;		   /* UI: fleet mode shown */
	int sel;	   /* UI: route index in rep */
} pf = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int64_t
pf_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
pf_fetch_hist(const char *url, struct pf_hist **out, int *nout)
{
	struct prom_result r = {0};
	struct pf_hist *h;
	char *cause = NULL;
	int64_t end = pf_wall_ms() / 60000 * 60000;
	int i, j, n = 0;

	*out = NULL;
	*nout = 0;
	if (prom_slo_history(url, NULL, PROM_SLO_SERVICE, prom_slo_windows[0],
			     end - PF_HIST_MIN * 60000LL, end, 60000, PF_TIMEOUT_MS, &r,
			     &cause) != 0) {
		free(cause);
		return;
	}
	h = xcalloc((size_t)(r.nseries ? r.nseries : 1), sizeof *h);
	for (i = 0; i < r.nseries; i++) {
		const struct prom_series *se = &r.series[i];
		const char *route = prom_series_label(se, "route");

		if (route == NULL)
			continue;
		snprintf(h[n].route, sizeof h[n].route, "%s", route);
		for (j = 0; j < PF_HIST_MIN + 1; j++)
			h[n].v[j] = NAN;
		/* by time, so a gap stays a gap */
		for (j = 0; j < se->npoints; j++) {
			int64_t k = (se->points[j].t_ms - (end - PF_HIST_MIN * 60000LL)) / 60000;

			if (k >= 0 && k <= PF_HIST_MIN)
				h[n].v[k] = (float)se->points[j].v;
		}
		h[n].n = PF_HIST_MIN + 1;
		n++;
	}
	prom_result_free(&r);
	*out = h;
	*nout = n;
}

static void *
pf_worker(void *arg)
{
	char url[512], *cause;
	struct prom_slo *rep, *old;
	struct pf_hist *hist, *oldh;
	int rc, nhist;

	(void)arg;
	pthread_mutex_lock(&pf.mu);
	for (;;) {
		while (!pf.want)
			pthread_cond_wait(&pf.cv, &pf.mu);
		snprintf(url, sizeof url, "%s", pf.url);
		pf.fetching = 1;
		pthread_mutex_unlock(&pf.mu);

		rep = NULL;
		cause = NULL;
		hist = NULL;
		nhist = 0;
		rc = prom_slo_fetch(url, NULL, PF_TIMEOUT_MS, &rep, &cause);
		if (rc == 0)
			pf_fetch_hist(url, &hist, &nhist);

		pthread_mutex_lock(&pf.mu);
		pf.fetching = 0;
		pthread_cond_broadcast(&pf.cv);
		old = NULL;
		oldh = NULL;
		if (rc == 0) {
			old = pf.rep;
			pf.rep = rep;
			oldh = pf.hist;
			pf.hist = hist;
			pf.nhist = nhist;
			pf.err[0] = '\0';
			pf.err_since = 0;
			pf.ok_at = pf_wall_ms();
		} else {
			if (pf.err[0] == '\0')
				pf.err_since = pf_wall_ms();
			snprintf(pf.err, sizeof pf.err, "%s", cause ? cause : "failed");
		}
		pthread_mutex_unlock(&pf.mu);
		free(cause);
		prom_slo_free(old);
		free(oldh);
		pthread_mutex_lock(&pf.mu);
		if (pf.want) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += PF_EVERY_MS / 1000;
			pthread_cond_timedwait(&pf.cv, &pf.mu, &ts);
		}
	}
	return NULL;
}

void
screen_slo_prometheus(const char *url)
{
	pthread_mutex_lock(&pf.mu);
	snprintf(pf.url, sizeof pf.url, "%s", url != NULL ? url : "");
	pthread_mutex_unlock(&pf.mu);
}

const char *
screen_slo_prometheus_url(void)
{
	return pf.url[0] ? pf.url : NULL;
}

void
screen_slo_fleet_show(int on)
{
	pthread_mutex_lock(&pf.mu);
	pf.on = on && pf.url[0];
	pf.want = pf.on;
	if (pf.want && !pf.started) {
		pthread_attr_t at;

		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&pf.th, &at, pf_worker, NULL) == 0)
			pf.started = 1;
		else
			snprintf(pf.err, sizeof pf.err, "cannot start the fetch thread");
		pthread_attr_destroy(&at);
	}
	if (pf.want)
		pthread_cond_signal(&pf.cv);
	pthread_mutex_unlock(&pf.mu);
}

void
screen_slo_fleet_stop(void)
{
	struct timespec ts;

	pthread_mutex_lock(&pf.mu);
	pf.want = 0;
	pf.on = 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += PF_TIMEOUT_MS / 1000 * 2 + 1;
	while (pf.fetching)
		if (pthread_cond_timedwait(&pf.cv, &pf.mu, &ts) != 0)
			break;
	pthread_mutex_unlock(&pf.mu);
}

static enum colour avail_colour(double v, double objective);

static const struct colspec fleet_cols[] = {
	{"WINDOW", 6, FMT_PAD, 0, 0},	 {"CALLS", 9, FMT_RIGHT, 0, 0},
	{"SERVICE", 8, FMT_RIGHT, 0, 0}, {"BURN", 8, FMT_RIGHT, 0, 0},
	{"SMART", 8, FMT_RIGHT, 0, 0},	 {"BURN", 8, FMT_RIGHT, 0, 0},
};

static void
fleet_window(const struct prom_slo_route *r, int w, int y, int cols)
{
	const struct prom_slo_kind *sv = &r->k[PROM_SLO_SERVICE], *sm = &r->k[PROM_SLO_SMART];
	struct row row;
	char t[32];

	row_begin(&row, y, cols, 0, fleet_cols, (int)ARRAY_SIZE(fleet_cols));
	row_cell(&row, C_NORMAL, prom_slo_windows[w]);
	if (isnan(sv->calls[w]))
		snprintf(t, sizeof t, "-");
	else
		snprintf(t, sizeof t, "%.0f", sv->calls[w]);
	row_cell(&row, C_NORMAL, t);
	fmt_pct(t, sizeof t, sv->availability[w], 2);
	row_cell(&row, avail_colour(sv->availability[w], sv->objective), t);
	prom_burn_text(t, sizeof t, sv->burn[w]);
	row_cell(&row, sv->burn[w] >= 1.0 ? C_BAD : C_NORMAL, t);
	fmt_pct(t, sizeof t, sm->availability[w], 2);
	row_cell(&row, avail_colour(sm->availability[w], sm->objective), t);
	prom_burn_text(t, sizeof t, sm->burn[w]);
	row_cell(&row, sm->burn[w] >= 1.0 ? C_BAD : C_NORMAL, t);
}

void
screen_slo_fleet_draw(int top, int rows, int cols, int64_t now_wall)
{
	char st[512], o1[16], o2[16], lv[96], al[1024], a1[16], a2[16], sp[256];
	const struct prom_slo_route *r = NULL;
	int y = top, end = top + rows, w, i, n;

	pthread_mutex_lock(&pf.mu);
	prom_status_text(st, sizeof st, pf.url, pf.fetching, pf.err, pf.err_since, pf.ok_at,
			 now_wall);
	ui_put(y++, 1, cols - 1, pf.err[0] ? C_BAD : C_DIM, st, 0);
	n = pf.rep != NULL ? pf.rep->n : 0;
	if (n > 0) {
		pf.sel = pf.sel >= n ? n - 1 : pf.sel < 0 ? 0 : pf.sel;
		r = &pf.rep->routes[pf.sel];
	} else if (pf.rep != NULL && y < end) {
		ui_put(y++, 1, cols - 1, C_DIM, "no fleet series", 0);
	}
	if (r != NULL && y < end) {
		fmt_pct(o1, sizeof o1, r->k[PROM_SLO_SERVICE].objective, -1);
		fmt_pct(o2, sizeof o2, r->k[PROM_SLO_SMART].objective, -1);
		prom_slo_levels_text(r, lv, sizeof lv);
		ui_printf(y++, 0, cols, C_ACCENT, 0,
			  " %s (%d/%d) fleet: objectives service %s  smart %s  %s", r->route,
			  pf.sel + 1, n, o1, o2, lv);
		if (y < end)
			ui_header(y++, cols, fleet_cols, (int)ARRAY_SIZE(fleet_cols));
		for (w = 0; w < PROM_SLO_NWIN && y < end; w++)
			fleet_window(r, w, y++, cols);
		fmt_pct(a1, sizeof a1, r->k[PROM_SLO_SERVICE].budget_left, 1);
		fmt_pct(a2, sizeof a2, r->k[PROM_SLO_SMART].budget_left, 1);
		if (y < end)
			ui_printf(y++, 1, cols - 1, C_NORMAL, 0,
				  "error budget left (30d): service %s  smart %s", a1, a2);
		for (i = 0; i < pf.nhist && y < end; i++) {
			double obj = r->k[PROM_SLO_SERVICE].objective;
			/* 10 budgets below 100 %: the objective at 90 % of the height */
			double lo = isnan(obj) ? NAN : MAX(0.0, 1.0 - 10.0 * (1.0 - obj));

			if (strcmp(pf.hist[i].route, r->route) != 0)
				continue;
			fmt_pct(a1, sizeof a1, lo, -1);
			fmt_spark(sp, sizeof sp, pf.hist[i].v, pf.hist[i].n,
				  MIN(PF_HIST_MIN + 1, MAX(5, cols - 40)), lo, 1.0);
			ui_printf(y++, 1, cols - 1, C_NORMAL, 0,
				  "service 5m, last 1h: %s (%s-100%%)", sp, a1);
		}
		prom_slo_alerts_text(r, al, sizeof al);
		if (y < end)
			ui_printf(y++, 1, cols - 1, r->nalerts ? C_BAD : C_NORMAL, 0,
				  "fleet alerts firing: %s", al);
	}
	pthread_mutex_unlock(&pf.mu);
}

static struct {
	int sel; /* route index in c->slo */
	struct vislist alerts;
} so;

static const char *const slo_help[] = {
	"SLO: service availability (answered in budget, any source) against",
	"     smart availability (answered by a model, validated), per window",
	"  BURN      (1 - availability) / (1 - objective); > 1 spends budget",
	"  budget    error budget left (30 d) and the daemon's 1 h burn rate",
	"j/k        previous / next route",
	"/          filter the alerts",
	"f          this daemon / the fleet (Prometheus, --prometheus URL)",
	NULL,
};

static const struct colspec win_cols[] = {
	{"WINDOW", 6, FMT_PAD, 0, 0},	 {"TOTAL", 8, FMT_RIGHT, 0, 0},
	{"SERVICE", 8, FMT_RIGHT, 0, 0}, {"BURN", 6, FMT_RIGHT, 0, 0},
	{"SMART", 8, FMT_RIGHT, 0, 0},	 {"BURN", 6, FMT_RIGHT, 0, 0},
	{"LAT-OK", 7, FMT_RIGHT, 1, 0},	 {"TIMEOUT", 7, FMT_RIGHT, 2, 0},
	{"RETRY", 6, FMT_RIGHT, 3, 0},	 {"FORMAT", 0, FMT_RIGHT, 4, 0},
};

static const struct colspec alert_cols[] = {
	{"STATE", 8, FMT_PAD, 0, 0},  {"SEV", 6, FMT_PAD, 0, 0},     {"RULE", 16, FMT_PAD, 0, 0},
	{"ROUTE", 12, FMT_PAD, 0, 0}, {"VALUE", 7, FMT_RIGHT, 2, 0}, {"THRESH", 7, FMT_RIGHT, 1, 0},
	{"SINCE", 0, 0, 0, 0},
};

static enum colour
avail_colour(double v, double objective)
{
	if (isnan(v))
		return C_DIM;
	return !isnan(objective) && v < objective ? C_BAD : C_OK;
}

static void
burn_text(char *out, size_t outsz, double avail, double objective, enum colour *col)
{
	double burn;

	*col = C_NORMAL;
	if (isnan(avail) || isnan(objective) || objective >= 1.0) {
		snprintf(out, outsz, "-");
		return;
	}
	burn = (1.0 - avail) / (1.0 - objective);
	snprintf(out, outsz, "%.2f", burn);
	*col = burn >= 1.0 ? C_BAD : burn >= 0.5 ? C_WARN : C_NORMAL;
}

static void
draw_window(const struct slo_route_v *r, int i, int y, int cols)
{
	const struct slo_window_v *w = &r->w[i];
	struct row row;
	char t[32];
	enum colour bc;

	row_begin(&row, y, cols, 0, win_cols, (int)ARRAY_SIZE(win_cols));
	row_cell(&row, C_NORMAL, model_slo_windows[i]);
	if (!w->present) {
		row_cell(&row, C_DIM, "-");
		return;
	}
	snprintf(t, sizeof t, "%lld", (long long)w->total);
	row_cell(&row, C_NORMAL, w->total >= 0 ? t : "-");
	fmt_pct(t, sizeof t, w->service, 2);
	row_cell(&row, avail_colour(w->service, r->obj_service), t);
	burn_text(t, sizeof t, w->service, r->obj_service, &bc);
	row_cell(&row, bc, t);
	fmt_pct(t, sizeof t, w->smart, 2);
	row_cell(&row, avail_colour(w->smart, r->obj_smart), t);
	burn_text(t, sizeof t, w->smart, r->obj_smart, &bc);
	row_cell(&row, bc, t);
	fmt_pct(t, sizeof t, w->latency_ok, 1);
	row_cell(&row, avail_colour(w->latency_ok, r->obj_latency_target), t);
	fmt_pct(t, sizeof t, w->timeout_rate, 1);
	row_cell(&row, C_NORMAL, t);
	fmt_pct(t, sizeof t, w->retry_rate, 1);
	row_cell(&row, C_NORMAL, t);
	fmt_pct(t, sizeof t, w->format_violation_rate, 1);
	row_cell(&row, C_NORMAL, t);
}

static void
draw_budget(const char *name, double remaining, double burn, int y, int cols)
{
	char bar[512], left[32], b[32];
	int bw = MIN(40, cols - 44);
	enum colour col = isnan(remaining)   ? C_DIM
			  : remaining < 0    ? C_BAD
			  : remaining < 0.25 ? C_WARN
					     : C_OK;

	ui_printf(y, 1, 8, C_NORMAL, FMT_PAD, "%s", name);
	if (bw < 5)
		bw = 5;
	fmt_bar(bar, sizeof bar, remaining, bw);
	ui_put(y, 10, bw, col, bar, 0);
	fmt_pct(left, sizeof left, remaining, 1);
	if (isnan(burn))
		snprintf(b, sizeof b, "-");
	else
		snprintf(b, sizeof b, "%.2fx", burn);
	ui_printf(y, 11 + bw, cols - 11 - bw, col, 0, "%s left   burn 1h %s", left, b);
}

static int
alert_rank(const struct alert_v *a)
{
	return strcmp(a->state, "firing") == 0 ? 0 : strcmp(a->state, "pending") == 0 ? 1 : 2;
}

static void
build_alerts(struct console *c)
{
	const char *f = console_filter(c, SCR_SLO);
	int rank, i;

	vislist_reset(&so.alerts);
	/* firing, then pending, then resolved; each in the daemon's order */
	for (rank = 0; rank < 3; rank++) {
		for (i = 0; c->alerts != NULL && i < c->alerts->n; i++) {
			const struct alert_v *a = &c->alerts->v[i];
			const char *fields[] = {a->rule, a->route, a->state, a->severity, NULL};

			if (alert_rank(a) == rank && filter_match(f, fields))
				vislist_add(&so.alerts, i);
		}
	}
}

static void
draw_alert(struct console *c, const struct alert_v *a, int y, int cols)
{
	struct row row;
	char t[64], ago[32];
	int rank = alert_rank(a);

	row_begin(&row, y, cols, 0, alert_cols, (int)ARRAY_SIZE(alert_cols));
	row_cell(&row, rank == 0 ? C_BAD : rank == 1 ? C_WARN : C_DIM, a->state);
	row_cell(&row, strcmp(a->severity, "page") == 0 ? C_WARN : C_NORMAL, a->severity);
	row_cell(&row, C_NORMAL, a->rule);
	row_cell(&row, C_NORMAL, a->route[0] ? a->route : "-");
	if (isnan(a->value))
		snprintf(t, sizeof t, "-");
	else
		snprintf(t, sizeof t, "%.4g", a->value);
	row_cell(&row, C_NORMAL, t);
	if (isnan(a->threshold))
		snprintf(t, sizeof t, "-");
	else
		snprintf(t, sizeof t, "%.4g", a->threshold);
	row_cell(&row, C_NORMAL, t);
	fmt_clock(t, sizeof t, a->since, c->now_wall);
	fmt_duration(ago, sizeof ago, c->now_wall - a->since, 0);
	if (a->since > 0)
		ui_printf(row.y, row.x, row_left(&row), C_NORMAL, 0, "%s ago (%s)", ago, t);
}

static void
slo_draw(struct console *c, int top, int rows, int cols)
{
	const char *err = console_ep_error(c, FETCH_SLO), *aerr = console_ep_error(c, FETCH_ALERTS);
	const struct slo_route_v *r = NULL;
	char lat[32], o1[16], o2[16], o3[16];
	int y = top, i, end = top + rows;

	if (pf.on) {
		screen_slo_fleet_draw(top, rows, cols, c->now_wall);
		return;
	}
	if (c->slo != NULL && c->slo->n > 0) {
		so.sel = so.sel >= c->slo->n ? c->slo->n - 1 : so.sel < 0 ? 0 : so.sel;
		r = &c->slo->routes[so.sel];
	}
	if (err != NULL)
		ui_printf(y++, 1, cols - 1, C_BAD, 0, "GET /v1/slo: %s", err);
	if (r == NULL) {
		if (err == NULL)
			ui_put(y++, 1, cols - 1, C_DIM, c->slo ? "no routes" : "loading ...", 0);
	} else {
		fmt_latency(lat, sizeof lat, r->obj_latency_ms);
		fmt_pct(o1, sizeof o1, r->obj_service, -1);
		fmt_pct(o2, sizeof o2, r->obj_smart, -1);
		fmt_pct(o3, sizeof o3, r->obj_latency_target, -1);
		ui_printf(y, 0, cols, C_ACCENT, 0, " %s (%d/%d)", r->route, so.sel + 1, c->slo->n);
		ui_printf(y++, MIN(cols, 22), cols - 22, C_NORMAL, 0,
			  "objectives: service %s  smart %s  latency %s @ %s", o1, o2, lat, o3);
		ui_header(y++, cols, win_cols, (int)ARRAY_SIZE(win_cols));
		for (i = 0; i < SLO_NWIN && y < end; i++)
			draw_window(r, i, y++, cols);
		if (y < end)
			ui_put(y++, 1, cols - 1, C_ACCENT, "error budget", 0);
		if (y < end)
			draw_budget("service", r->budget_service, r->burn_service, y++, cols);
		if (y < end)
			draw_budget("smart", r->budget_smart, r->burn_smart, y++, cols);
	}
	if (y >= end)
		return;
	build_alerts(c);
	ui_header(y++, cols, alert_cols, (int)ARRAY_SIZE(alert_cols));
	if (aerr != NULL && y < end)
		ui_printf(y++, 1, cols - 1, C_BAD, 0, "GET /v1/alerts: %s", aerr);
	else if (c->alerts != NULL && so.alerts.n == 0 && y < end)
		ui_put(y++, 1, cols - 1, C_DIM,
		       c->alerts->n ? "no alert matches the filter" : "no alerts in the last 24 h",
		       0);
	/* What does not fit is counted, never dropped silently. */
	for (i = 0; i < so.alerts.n && y < end; i++) {
		if (y == end - 1 && so.alerts.n - i > 1) {
			ui_printf(y, 1, cols - 1, C_WARN, 0,
				  "+%d more alerts (a taller terminal, or / to filter; fusebox "
				  "alerts)",
				  so.alerts.n - i);
			break;
		}
		draw_alert(c, &c->alerts->v[so.alerts.idx[i]], y++, cols);
	}
}

static enum next
slo_key(struct console *c, int key)
{
	int n = c->slo != NULL ? c->slo->n : 0;

	if (key == 'f') {
		if (pf.url[0] == '\0') {
			console_msg(c, 1,
				    "fleet mode: no Prometheus (--prometheus URL or "
				    "$FUSEBOX_PROMETHEUS)");
			return NEXT_DONE;
		}
		screen_slo_fleet_show(!pf.on);
		return NEXT_DONE;
	}
	if (pf.on) {
		pthread_mutex_lock(&pf.mu);
		n = pf.rep != NULL ? pf.rep->n : 0;
		pthread_mutex_unlock(&pf.mu);
		if (key == 'j' || key == FK(KEY_DOWN) || key == FK(KEY_RIGHT)) {
			pf.sel = n ? (pf.sel + 1) % n : 0;
			return NEXT_DONE;
		}
		if (key == 'k' || key == FK(KEY_UP) || key == FK(KEY_LEFT)) {
			pf.sel = n ? (pf.sel + n - 1) % n : 0;
			return NEXT_DONE;
		}
		return NEXT_PASS;
	}
	switch (key) {
	case 'j':
	case FK(KEY_DOWN):
	case FK(KEY_RIGHT):
		so.sel = n ? (so.sel + 1) % n : 0;
		return NEXT_DONE;
	case 'k':
	case FK(KEY_UP):
	case FK(KEY_LEFT):
		so.sel = n ? (so.sel + n - 1) % n : 0;
		return NEXT_DONE;
	default:
		return NEXT_PASS;
	}
}

const struct screen screen_slo = {
	.name = "SLO",
	.help = slo_help,
	.want = FETCH_BIT(FETCH_SLO) | FETCH_BIT(FETCH_ALERTS),
	.draw = slo_draw,
	.key = slo_key,
	.hints = "j/k route  / filter alerts  f fleet",
};
