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
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "util.h"

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
	.hints = "j/k route  / filter alerts",
};
