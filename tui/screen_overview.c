/*
 * screen_overview: one row per route — effective level (a forced level is
 * marked and explained on a second line: level, actor, reason, until),
 * rps, p50/p99, service and smart availability over 5 minutes against the
 * objectives, firing alerts, reviews pending and an rps trend. Whatever is
 * degraded says why on a cause line (model_cause.c: the automatic level's
 * reason and since when, the open breakers of its targets with their
 * opening causes, smart availability below the objective) and, once the
 * daemon has diagnosed it (why.h, in the background at most every 10 s
 * while a route is degraded), a "why:" line with the diagnosis' first
 * cause; w opens the Why panel on the selected route. The header
 * counts routes off L0 and degraded calls per minute. Below, the selected
 * route's sparklines, each labelled with its range: rps over the last ten
 * minutes (1 Hz snapshots, model.c history) and, per minute over the last
 * hour, degraded calls, smart availability and p99 from the daemon
 * (GET /v1/slo/history), so a console opened mid-incident has the hour.
 *
 * Rendering touches only the visible rows and formats into stack buffers.
 */
#include "screen_overview.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "screen_routes.h"
#include "util.h"
#include "why.h"

#define PANEL_ROWS 5
#define LABEL_COLS 30 /* "now 12.3 (0.0-99.9)" after a sparkline */
#define CAUSE_MAX  1024
#define CAUSE_ROWS 3 /* a longer cause ends in "…" on its third row */

static struct {
	struct listsel ls;
	struct vislist vis;
	int page;  /* list rows at the last draw */
	int moved; /* the user moved: until then the selection follows the worst route */
	int cols;  /* columns at the last draw (how many rows a cause takes) */
} ov;

static const char *const overview_help[] = {
	"Overview: every route at a glance",
	"  LVL      effective level; * = forced (second line: who, why, until)",
	"  ! line   why a route is degraded: the auto level and since when, the",
	"           open breakers of its targets and their opening cause,",
	"           smart availability below the objective",
	"  why:     the daemon's diagnosis, its first cause (share, reason,",
	"           backend, evidence), asked every 10 s while a route is degraded",
	"  SVC/SMART availability over 5 minutes (red: below the objective)",
	"  ALRT     firing alerts   REV  reviews pending",
	"  header   routes off L0; degraded calls in the last minute",
	"  below    the selected route: rps (10 min, 1 Hz); degraded calls, smart",
	"           and p99 per minute (60 min, from the daemon); (min-max) ranges",
	"  columns  a narrow screen drops the least needed first (header ends in >)",
	"  select   until you move, the first degraded route is selected",
	"Enter      show the route on the Routes screen",
	"w          why: the daemon's diagnosis of the selected route (panel)",
	"L          force the selected route's level (L2 preselected; confirm)",
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

static void
clock_local(char *out, size_t outsz, int64_t wall_ms)
{
	fmt_clock(out, outsz, wall_ms, wall_ms);
}

static int
route_cause(const struct console *c, const struct route_v *r, char *out, size_t outsz)
{
	return cause_route(c->state, &c->events, slo_route(c->slo, r->name), r, c->utf8,
			   clock_local, out, outsz);
}

/* The cause wrapped into at most max rows of cols - 4 columns; the last takes the rest. */
static int
cause_rows(const char *cause, int cols, char lines[][CAUSE_MAX], int max)
{
	const char *p = cause;
	int n = 0, w = MAX(cols - 4, 8);

	while (n < max && *p) {
		if (n == max - 1) {
			snprintf(lines[n++], CAUSE_MAX, "%s", p);
			break;
		}
		if (!fmt_wrap(&p, w, lines[n], CAUSE_MAX))
			break;
		n++;
	}
	return n;
}

static int
item_rows(const struct console *c, int vi)
{
	const struct route_v *r = &c->state->routes[ov.vis.idx[vi]];
	char cause[CAUSE_MAX], lines[CAUSE_ROWS][CAUSE_MAX];
	int n = 0;

	if (route_cause(c, r, cause, sizeof cause)) {
		n = cause_rows(cause, ov.cols > 0 ? ov.cols : 80, lines, CAUSE_ROWS);
		n += why_line(c, r->name, cause, sizeof cause);
	}
	return 1 + r->forced + n;
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
	{"ROUTE", 16, FMT_PAD, 0, 0},	 {"LVL", 4, FMT_PAD, 0, 0},
	{"RPS", 6, FMT_RIGHT, 0, 0},	 {"P50", 7, FMT_RIGHT, 2, 0},
	{"P99", 7, FMT_RIGHT, 0, 0},	 {"SVC5m", 7, FMT_RIGHT, 0, 0},
	{"SMART5m", 7, FMT_RIGHT, 0, 0}, {"ALRT", 4, FMT_RIGHT, 1, 0},
	{"REV", 4, FMT_RIGHT, 0, 0},	 {"TREND", 0, 0, 3, 8},
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

/* The cause line(s) from row y, at most rows of them; returns the rows used. */
static int
draw_cause(const char *cause, int y, int rows, int cols)
{
	char lines[CAUSE_ROWS][CAUSE_MAX];
	int n = cause_rows(cause, cols, lines, MIN(rows, CAUSE_ROWS)), i;

	for (i = 0; i < n; i++) {
		ui_put(y + i, 0, 4, C_BAD, i == 0 ? "  ! " : "    ", FMT_PAD);
		ui_put(y + i, 4, cols - 4, C_BAD, lines[i], 0);
	}
	return n;
}

/* The diagnosis' first cause in one row, cut with an ellipsis (w shows it whole). */
static void
draw_why(const char *why, int y, int cols)
{
	char line[CAUSE_MAX + 16];

	snprintf(line, sizeof line, "    why: %s", why);
	ui_put(y, 0, cols, C_WARN, line, 0);
}

static void
fmt_pct1(char *out, size_t outsz, double v)
{
	fmt_pct(out, outsz, v, 1);
}

/*
 * One labelled sparkline: name, the line over lo..hi (NAN: the data's
 * range), then "now X (min-max)" in the series' unit.
 */
static void
spark_row(int y, int cols, const char *name, const float *v, int n, double lo, double hi,
	  void (*unit)(char *, size_t, double))
{
	char spark[2048], now[32], mn_s[32], mx_s[32];
	double mn = NAN, mx = NAN, last = NAN;
	int i, sw = cols - 11 - LABEL_COLS;

	ui_put(y, 0, 11, C_NORMAL, name, FMT_PAD);
	if (sw < 8)
		sw = MAX(cols - 11, 0);
	for (i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		mn = isnan(mn) || v[i] < mn ? v[i] : mn;
		mx = isnan(mx) || v[i] > mx ? v[i] : mx;
		last = v[i];
	}
	if (isnan(mn)) {
		ui_put(y, 11, cols - 11, C_DIM, "no calls yet", 0);
		return;
	}
	fmt_spark(spark, sizeof spark, v, n, sw, isnan(lo) ? mn : lo, isnan(hi) ? mx : hi);
	ui_put(y, 11, sw, C_ACCENT, spark, 0);
	unit(now, sizeof now, last);
	unit(mn_s, sizeof mn_s, mn);
	unit(mx_s, sizeof mx_s, mx);
	ui_printf(y, 12 + sw, cols - 12 - sw, C_NORMAL, 0, "now %s (%s%s%s)", now, mn_s,
		  fmt_is_ascii() ? "-" : "\xe2\x80\x93", mx_s);
}

static void
draw_panel(struct console *c, const struct route_v *r, int y, int rows, int cols)
{
	const struct hist_series *hs = history_find(&c->hist, r->name);
	const struct hist_route_v *hr = slo_hist_route(c->hist_d, r->name);
	const char *err = console_ep_error(c, FETCH_HISTORY);
	float samples[HIST_LEN];
	int n;

	ui_fill(y, 0, cols, C_HEADER);
	ui_printf(y, 0, cols, C_HEADER, 0, " %s: rps over 10 min; per minute over 60 min", r->name);
	n = history_get(hs, HIST_RPS, HIST_LEN, samples);
	spark_row(y + 1, cols, " rps", samples, n, 0.0, NAN, fmt_rate);
	if (rows < 3)
		return;
	if (hr == NULL) {
		n = history_get(hs, HIST_SMART, HIST_LEN, samples);
		spark_row(y + 2, cols, " smart", samples, n, NAN, 1.0, fmt_pct1);
		if (err != NULL && rows > 3)
			ui_printf(y + 3, 11, cols - 11, C_BAD, 0, "GET %s", err);
		return;
	}
	spark_row(y + 2, cols, " smart/min", hr->smart, c->hist_d->minutes, NAN, 1.0, fmt_pct1);
	if (rows > 3)
		spark_row(y + 3, cols, " degr/min", hr->degraded, c->hist_d->minutes, 0.0, NAN,
			  fmt_rate);
	if (rows > 4)
		spark_row(y + 4, cols, " p99/min", hr->p99_ms, c->hist_d->minutes, 0.0, NAN,
			  fmt_latency);
}

/*
 * Degraded calls over the last 60 s, from the daemon's minutes: the one
 * running plus the previous one's share of the window. -1 without history.
 */
static double
degraded_per_min(const struct console *c)
{
	const struct slo_hist_v *h = c->hist_d;
	double cur = 0, prev = 0, frac;
	int i, m;

	if (h == NULL || h->minutes < 2)
		return -1;
	m = h->minutes;
	for (i = 0; i < h->nroutes; i++) {
		if (!isnan(h->routes[i].degraded[m - 1]))
			cur += h->routes[i].degraded[m - 1];
		if (!isnan(h->routes[i].degraded[m - 2]))
			prev += h->routes[i].degraded[m - 2];
	}
	frac = (double)(c->now_wall - (h->from + (int64_t)(m - 1) * 60000)) / 60000.0;
	frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
	return cur + prev * (1.0 - frac);
}

/* The first visible route that is degraded (a cause line or off L0), else 0. */
static int
worst_route(const struct console *c)
{
	char cause[CAUSE_MAX];
	int i;

	for (i = 0; i < ov.vis.n; i++) {
		const struct route_v *r = &c->state->routes[ov.vis.idx[i]];

		if (r->level > 0 || route_cause(c, r, cause, sizeof cause))
			return i;
	}
	return 0;
}

static void
overview_draw(struct console *c, int top, int rows, int cols)
{
	const char *err;
	char line[512], dpm[32], cause[CAUSE_MAX];
	int y, i, list_rows, forced = 0, off = 0, pending = 0, panel;
	double deg;

	build(c);
	ov.cols = cols;
	if (c->state == NULL) {
		ui_put(top + 1, 1, cols - 1, C_DIM, "waiting for the first snapshot ...", 0);
		return;
	}
	for (i = 0; i < c->state->nroutes; i++) {
		const struct route_v *r = &c->state->routes[i];

		forced += r->forced;
		off += r->level > 0;
		pending += MAX(review_pending(c, r), 0);
	}
	deg = degraded_per_min(c);
	if (deg >= 0)
		snprintf(dpm, sizeof dpm, "%.0f", deg);
	else
		snprintf(dpm, sizeof dpm, "-");
	snprintf(line, sizeof line,
		 "routes %d  off L0 %d  forced %d  degraded calls %s/min  alerts %d  reviews %d",
		 c->state->nroutes, off, forced, dpm, alerts_firing(c->alerts, NULL), pending);
	ui_put(top, 1, cols - 1, off > 0 || deg > 0 ? C_WARN : C_NORMAL, line, 0);
	err = console_ep_error(c, FETCH_ALERTS);
	if (err == NULL)
		err = console_ep_error(c, FETCH_SLO);
	if (err != NULL && cols > 82)
		ui_printf(top, 82, cols - 82, C_BAD, 0, "%s", err);
	if (!ov.moved)
		ov.ls.sel = worst_route(c);
	ui_header(top + 1, cols, ov_cols, (int)ARRAY_SIZE(ov_cols));
	panel = rows >= 16 ? PANEL_ROWS : rows >= 10 ? 3 : 0;
	list_rows = rows - 2 - panel;
	ov.page = MAX(list_rows, 1);
	ov_scroll(c, ov.page);
	y = top + 2;
	for (i = ov.ls.top; i < ov.vis.n && y < top + 2 + list_rows; i++) {
		const struct route_v *r = &c->state->routes[ov.vis.idx[i]];

		draw_row(c, r, y++, cols, i == ov.ls.sel);
		if (r->forced && y < top + 2 + list_rows)
			draw_forced(c, r, y++, cols);
		if (!route_cause(c, r, cause, sizeof cause) || y >= top + 2 + list_rows)
			continue;
		y += draw_cause(cause, y, top + 2 + list_rows - y, cols);
		if (why_line(c, r->name, cause, sizeof cause) && y < top + 2 + list_rows)
			draw_why(cause, y++, cols);
	}
	if (ov.vis.n == 0)
		ui_put(top + 2, 1, cols - 1, C_DIM,
		       c->state->nroutes ? "no route matches the filter" : "no routes", 0);
	if (panel && ov.vis.n > 0)
		draw_panel(c, &c->state->routes[ov.vis.idx[ov.ls.sel]], top + rows - panel, panel,
			   cols);
}

static enum next
overview_key(struct console *c, int key)
{
	if (c->state == NULL)
		return NEXT_PASS;
	build(c);
	if (listsel_key(&ov.ls, key, ov.vis.n, MAX(ov.page, 1))) {
		ov.moved = 1;
		return NEXT_DONE;
	}
	if (key == K_ENTER && ov.vis.n > 0) {
		console_route_select(c, c->state->routes[ov.vis.idx[ov.ls.sel]].name);
		return NEXT_DONE;
	}
	if (key == 'w' && ov.vis.n > 0) {
		ov.moved = 1;
		why_open(c, c->state->routes[ov.vis.idx[ov.ls.sel]].name);
		return NEXT_DONE;
	}
	if (key == 'L' && ov.vis.n > 0) {
		ov.moved = 1;
		if (console_can_operate(c))
			routes_level_form(c, &c->state->routes[ov.vis.idx[ov.ls.sel]]);
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
	.hints = "j/k move  Enter routes  w why  / filter",
	.op_hints = "L level",
};
