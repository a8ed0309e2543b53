/*
 * screen_overview: one row per route — effective level (a forced level is
 * marked and explained on a second line: level, actor, reason, until),
 * rps, p50/p99, service and smart availability over 5 minutes against the
 * objectives, firing alerts, reviews pending and an rps trend; below, the
 * selected route's sparklines of rps and smart availability over the last
 * ten minutes, kept client-side from the 1 Hz snapshots (model.c history).
 *
 * Rendering touches only the visible rows and formats into stack buffers.
 */
#include "screen_overview.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "util.h"

#define PANEL_ROWS 3

static struct {
	struct listsel ls;
	struct vislist vis;
	int page; /* list rows at the last draw */
} ov;

static const char *const overview_help[] = {
	"Overview: every route at a glance",
	"  LVL      effective level; * = forced (second line: who, why, until)",
	"  SVC/SMART availability over 5 minutes (red: below the objective)",
	"  ALRT     firing alerts   REV  reviews pending",
	"  below    rps and smart availability of the selected route, 10 min",
	"Enter      show the route on the Routes screen",
	NULL,
};

static int
review_pending(const struct console *c, const struct route_v *r)
{
	int i, n = 0;

	if (r->review_pending >= 0 || c->reviews == NULL)
		return r->review_pending;
	for (i = 0; i < c->reviews->n; i++)
		if (strcmp(c->reviews->v[i].route, r->name) == 0)
			n++;
	return n;
}

static void
build(struct console *c)
{
	const char *f = console_filter(c, SCR_OVERVIEW);
	int i;

	vislist_reset(&ov.vis);
	for (i = 0; c->state != NULL && i < c->state->nroutes; i++) {
		const struct route_v *r = &c->state->routes[i];
		const char *fields[] = {r->name, r->forced_actor, r->forced_reason, NULL};

		if (filter_match(f, fields))
			vislist_add(&ov.vis, i);
	}
}

static int
item_rows(const struct console *c, int vi)
{
	return c->state->routes[ov.vis.idx[vi]].forced ? 2 : 1;
}

/* Keep the selection visible in a list of items of one or two rows. */
static void
ov_scroll(struct console *c, int rows)
{
	int used, i;

	if (ov.ls.sel >= ov.vis.n)
		ov.ls.sel = ov.vis.n - 1;
	if (ov.ls.sel < 0)
		ov.ls.sel = 0;
	if (ov.ls.top > ov.ls.sel)
		ov.ls.top = ov.ls.sel;
	for (;;) {
		used = 0;
		for (i = ov.ls.top; i <= ov.ls.sel && i < ov.vis.n; i++)
			used += item_rows(c, i);
		if (used <= rows || ov.ls.top >= ov.ls.sel)
			break;
		ov.ls.top++;
	}
}

static enum colour
avail_colour(double v, double objective)
{
	if (isnan(v))
		return C_DIM;
	if (!isnan(objective) && v < objective)
		return C_BAD;
	return C_OK;
}

static enum colour
level_colour(int level)
{
	return level <= 0 ? C_OK : level == 1 ? C_WARN : C_BAD;
}

static const struct colspec ov_cols[] = {
	{"ROUTE", 16, FMT_PAD},	   {"LVL", 4, FMT_PAD},	   {"RPS", 6, FMT_RIGHT},
	{"P50", 7, FMT_RIGHT},	   {"P99", 7, FMT_RIGHT},  {"SVC5m", 7, FMT_RIGHT},
	{"SMART5m", 7, FMT_RIGHT}, {"ALRT", 4, FMT_RIGHT}, {"REV", 4, FMT_RIGHT},
	{"TREND", 0, 0},
};

static void
draw_row(struct console *c, const struct route_v *r, int y, int cols, int sel)
{
	const struct slo_route_v *sr = slo_route(c->slo, r->name);
	const struct hist_series *hs = history_find(&c->hist, r->name);
	char b[64], spark[1024];
	float samples[HIST_LEN];
	struct row row;
	int n, alerts = alerts_firing(c->alerts, r->name), rev, tw;
	double svc = sr ? sr->w[SLO_5M].service : NAN, smart = sr ? sr->w[SLO_5M].smart : NAN;

	row_begin(&row, y, cols, sel, ov_cols, (int)ARRAY_SIZE(ov_cols));
	row_cell(&row, C_NORMAL, r->name);
	snprintf(b, sizeof b, "L%d%s", r->level, r->forced ? "*" : "");
	row_cell(&row, level_colour(r->level), b);
	fmt_rate(b, sizeof b, r->rps);
	row_cell(&row, C_NORMAL, b);
	fmt_latency(b, sizeof b, r->p50_ms);
	row_cell(&row, C_NORMAL, b);
	fmt_latency(b, sizeof b, r->p99_ms);
	row_cell(&row, C_NORMAL, b);
	fmt_pct(b, sizeof b, svc, 2);
	row_cell(&row, avail_colour(svc, sr ? sr->obj_service : NAN), b);
	fmt_pct(b, sizeof b, smart, 2);
	row_cell(&row, avail_colour(smart, sr ? sr->obj_smart : NAN), b);
	if (c->alerts != NULL)
		snprintf(b, sizeof b, "%d", alerts);
	else
		snprintf(b, sizeof b, "-");
	row_cell(&row, alerts > 0 ? C_BAD : C_NORMAL, b);
	rev = review_pending(c, r);
	if (rev >= 0)
		snprintf(b, sizeof b, "%d", rev);
	else
		snprintf(b, sizeof b, "-");
	row_cell(&row, rev > 0 ? C_WARN : C_NORMAL, b);
	tw = row_left(&row);
	if (tw >= 4) {
		n = history_get(hs, HIST_RPS, MIN(HIST_LEN, 300), samples);
		fmt_spark(spark, sizeof spark, samples, n, tw, 0.0, NAN);
		row_cell(&row, C_ACCENT, spark);
	}
}

static void
draw_forced(struct console *c, const struct route_v *r, int y, int cols)
{
	char until[40] = "", line[512];

	if (r->forced_until > 0) {
		char left[32];

		fmt_duration(left, sizeof left, r->forced_until - c->now_wall, 0);
		snprintf(until, sizeof until, ", %s left", left);
	}
	snprintf(line, sizeof line, "  %s forced L%d by %s: %s%s (auto would be L%d)",
		 fmt_is_ascii() ? "->" : "\xe2\x86\xb3", r->forced_lvl,
		 r->forced_actor[0] ? r->forced_actor : "?",
		 r->forced_reason[0] ? r->forced_reason : "(no reason)", until, r->auto_level);
	ui_put(y, 0, cols, C_WARN, line, 0);
}

static void
draw_panel(struct console *c, const struct route_v *r, int y, int cols)
{
	const struct hist_series *hs = history_find(&c->hist, r->name);
	float samples[HIST_LEN];
	char spark[2048], now[32], ext[32];
	const char *err;
	double mx = NAN, mn = NAN;
	int n, i, sw = cols - 34;

	ui_fill(y, 0, cols, C_HEADER);
	ui_printf(y, 0, cols, C_HEADER, 0, " %s, last 10 minutes", r->name);
	if (sw < 8)
		return;
	n = history_get(hs, HIST_RPS, HIST_LEN, samples);
	for (i = 0; i < n; i++)
		if (!isnan(samples[i]) && (isnan(mx) || samples[i] > mx))
			mx = samples[i];
	fmt_spark(spark, sizeof spark, samples, n, sw, 0.0, NAN);
	fmt_rate(now, sizeof now, r->rps);
	fmt_rate(ext, sizeof ext, mx);
	ui_put(y + 1, 0, 7, C_NORMAL, " rps", FMT_PAD);
	ui_put(y + 1, 7, sw, C_ACCENT, spark, 0);
	ui_printf(y + 1, 8 + sw, cols - 8 - sw, C_NORMAL, 0, "now %s max %s", now, ext);

	n = history_get(hs, HIST_SMART, HIST_LEN, samples);
	for (i = 0; i < n; i++)
		if (!isnan(samples[i]) && (isnan(mn) || samples[i] < mn))
			mn = samples[i];
	fmt_spark(spark, sizeof spark, samples, n, sw, isnan(mn) ? 0.0 : MIN(mn, 0.9), 1.0);
	fmt_pct(now, sizeof now, n > 0 ? samples[n - 1] : NAN, 1);
	fmt_pct(ext, sizeof ext, mn, 1);
	ui_put(y + 2, 0, 7, C_NORMAL, " smart", FMT_PAD);
	err = console_ep_error(c, FETCH_SLO);
	if (err != NULL && isnan(mn)) {
		ui_printf(y + 2, 7, cols - 7, C_BAD, 0, "GET %s", err);
		return;
	}
	ui_put(y + 2, 7, sw, C_ACCENT, spark, 0);
	ui_printf(y + 2, 8 + sw, cols - 8 - sw, C_NORMAL, 0, "now %s min %s", now, ext);
}

static void
overview_draw(struct console *c, int top, int rows, int cols)
{
	const char *err;
	char line[512];
	int y, i, list_rows, forced = 0, degraded = 0, pending = 0, panel;

	build(c);
	if (c->state == NULL) {
		ui_put(top + 1, 1, cols - 1, C_DIM, "waiting for the first snapshot ...", 0);
		return;
	}
	for (i = 0; i < c->state->nroutes; i++) {
		const struct route_v *r = &c->state->routes[i];

		forced += r->forced;
		degraded += r->level > 0;
		pending += MAX(review_pending(c, r), 0);
	}
	snprintf(line, sizeof line,
		 "routes %d   forced %d   degraded %d   firing alerts %d   reviews pending %d",
		 c->state->nroutes, forced, degraded, alerts_firing(c->alerts, NULL), pending);
	ui_put(top, 1, cols - 1, C_NORMAL, line, 0);
	err = console_ep_error(c, FETCH_ALERTS);
	if (err == NULL)
		err = console_ep_error(c, FETCH_SLO);
	if (err != NULL && cols > 80)
		ui_printf(top, 82, cols - 82, C_BAD, 0, "%s", err);
	ui_header(top + 1, cols, ov_cols, (int)ARRAY_SIZE(ov_cols));
	panel = rows >= 10 ? PANEL_ROWS : 0;
	list_rows = rows - 2 - panel;
	ov.page = MAX(list_rows, 1);
	ov_scroll(c, ov.page);
	y = top + 2;
	for (i = ov.ls.top; i < ov.vis.n && y < top + 2 + list_rows; i++) {
		const struct route_v *r = &c->state->routes[ov.vis.idx[i]];

		draw_row(c, r, y++, cols, i == ov.ls.sel);
		if (r->forced && y < top + 2 + list_rows)
			draw_forced(c, r, y++, cols);
	}
	if (ov.vis.n == 0)
		ui_put(top + 2, 1, cols - 1, C_DIM,
		       c->state->nroutes ? "no route matches the filter" : "no routes", 0);
	if (panel && ov.vis.n > 0)
		draw_panel(c, &c->state->routes[ov.vis.idx[ov.ls.sel]], top + rows - panel, cols);
}

static enum next
overview_key(struct console *c, int key)
{
	if (c->state == NULL)
		return NEXT_PASS;
	build(c);
	if (listsel_key(&ov.ls, key, ov.vis.n, MAX(ov.page, 1)))
		return NEXT_DONE;
	if (key == K_ENTER && ov.vis.n > 0) {
		console_route_select(c, c->state->routes[ov.vis.idx[ov.ls.sel]].name);
		return NEXT_DONE;
	}
	return NEXT_PASS;
}

const struct screen screen_overview = {
	.name = "Overview",
	.help = overview_help,
	.want = FETCH_BIT(FETCH_SLO) | FETCH_BIT(FETCH_ALERTS),
	.draw = overview_draw,
	.key = overview_key,
	.hints = "j/k move  Enter routes  / filter",
};
