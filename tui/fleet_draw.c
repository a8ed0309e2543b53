/*
 * fleet_draw: the fleet console's view state and its drawing (see
 * fleet_console_int.h).
 */
#include "fleet_console_int.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fmt.h"
#include "util.h"

#define DOWN_LINES_MAX 5

struct fleet_ui fleet_ui;

/* 80 columns: SVC/SMART fit "99.95% 19990/20000"; wide screens give more room. */
static const struct colspec route_cols[] = {
	{"ROUTE", 14, FMT_PAD, 0, 0},	 {"HOSTS BY LEVEL", 20, FMT_PAD, 0, 0},
	{"SVC 1h", 16, FMT_RIGHT, 0, 0}, {"SMART 1h", 16, FMT_RIGHT, 1, 0},
	{"BRK", 4, FMT_RIGHT, 3, 0},	 {"ALRT", 4, FMT_RIGHT, 2, 0},
	{"REV", 4, FMT_RIGHT, 0, 0},
};

static const struct colspec route_cols_wide[] = {
	{"ROUTE", 24, FMT_PAD, 0, 0},	 {"HOSTS BY LEVEL", 40, FMT_PAD, 0, 0},
	{"SVC 1h", 26, FMT_RIGHT, 0, 0}, {"SMART 1h", 26, FMT_RIGHT, 1, 0},
	{"BRK", 5, FMT_RIGHT, 3, 0},	 {"ALRT", 5, FMT_RIGHT, 2, 0},
	{"REV", 5, FMT_RIGHT, 0, 0},
};

static const struct colspec backend_cols[] = {
	{"BACKEND", 14, FMT_PAD, 0, 0},
	{"OPEN", 7, FMT_RIGHT, 0, 0},
	{"HOSTS OPEN", 0, 0, 0, 10},
};

static const struct colspec host_cols[] = {
	{"HOST", 14, FMT_PAD, 0, 0},	   {"LVL", 4, FMT_PAD, 0, 0},
	{"FORCED", 6, FMT_PAD, 2, 0},	   {"SVC 1h", 16, FMT_RIGHT, 0, 0},
	{"SMART 1h", 16, FMT_RIGHT, 1, 0}, {"OPEN BREAKERS", 0, 0, 0, 10},
};

static const struct colspec host_cols_wide[] = {
	{"HOST", 24, FMT_PAD, 0, 0},	   {"LVL", 4, FMT_PAD, 0, 0},
	{"FORCED", 6, FMT_PAD, 2, 0},	   {"SVC 1h", 26, FMT_RIGHT, 0, 0},
	{"SMART 1h", 26, FMT_RIGHT, 1, 0}, {"OPEN BREAKERS", 0, 0, 0, 10},
};

#define WIDE_COLS 120

static enum colour
level_colour(int level)
{
	return level <= 0 ? C_OK : level == 1 ? C_WARN : C_BAD;
}

static void
down_text(int i, char *out, size_t outsz, int64_t now_wall)
{
	const struct fhost *h = &fleet_fc.h[i];
	char when[32];

	if (h->init_error != NULL) {
		snprintf(out, outsz, "not asked: %s", h->init_error);
		return;
	}
	fmt_clock(when, sizeof when, h->down_since, now_wall);
	snprintf(out, outsz, "down since %s: %s", when, h->error);
}

/* The "host NAME down since ...: error" lines; returns the rows used. */
static int
draw_down(int y, int rows, int cols, int64_t now_wall)
{
	char line[768];
	int i, used = 0, down = 0;

	for (i = 0; i < fleet_fc.f->n; i++)
		down += fleet_fc.h[i].seen && !fleet_fc.h[i].up;
	for (i = 0; i < fleet_fc.f->n && used < rows; i++) {
		if (!fleet_fc.h[i].seen || fleet_fc.h[i].up)
			continue;
		if (used == DOWN_LINES_MAX - 1 && down > DOWN_LINES_MAX) {
			ui_printf(y + used, 0, cols, C_BAD, 0, " ... and %d more hosts down",
				  down - used);
			used++;
			break;
		}
		down_text(i, line, sizeof line, now_wall);
		ui_printf(y + used++, 0, cols, C_BAD, 0, " host %s %s", fleet_fc.f->hosts[i].name,
			  line);
	}
	return used;
}

static void
draw_routes(int top, int rows, int cols, const struct fleet_sums *s, int64_t now_wall)
{
	char lv[160], sv[48], sm[48], b[16];
	int y = top, i, page, nb_rows, bottom = top + rows;
	const struct colspec *rc = cols >= WIDE_COLS ? route_cols_wide : route_cols;
	int nrc = (int)ARRAY_SIZE(route_cols);
	struct row row;

	y += draw_down(y, MIN(DOWN_LINES_MAX, rows / 3), cols, now_wall);
	if (s->down > 0)
		ui_printf(y++, 0, cols, C_WARN, 0,
			  " routes: sums over the %d answering hosts of %d (partial: %d down)",
			  s->up, s->up + s->down, s->down);
	else
		ui_printf(y++, 0, cols, C_ACCENT, 0, " routes: sums over all %d hosts", s->up);
	ui_header(y++, cols, rc, nrc);
	/* The backends below take at most a third of what is left. */
	nb_rows = s->nb > 0 ? MIN(s->nb, MAX((bottom - y) / 3, 1)) + 2 : 0;
	page = MAX(MIN(s->nr, bottom - y - nb_rows), 1);
	fleet_ui.page = page;
	listsel_clamp(&fleet_ui.rs, s->nr, page);
	if (s->nr == 0)
		ui_put(y, 0, cols, C_DIM, s->up > 0 ? " no routes" : " no host answers yet", 0);
	for (i = fleet_ui.rs.top; i < s->nr && i < fleet_ui.rs.top + page; i++) {
		const struct fleet_route_sum *r = &s->r[i];
		int l, worst = 0;

		for (l = 0; l < 4; l++)
			if (r->hosts[l] > 0)
				worst = l;
		row_begin(&row, y++, cols, i == fleet_ui.rs.sel, rc, nrc);
		row_cell(&row, C_NORMAL, r->name);
		fleet_levels_text(r, fleet_ui.utf8, lv, sizeof lv);
		row_cell(&row, level_colour(worst), lv);
		fleet_avail_text(sv, sizeof sv, r->service_good, r->total);
		row_cell(&row, C_NORMAL, sv);
		fleet_avail_text(sm, sizeof sm, r->smart_good, r->total);
		row_cell(&row, C_NORMAL, sm);
		snprintf(b, sizeof b, "%d", r->open);
		row_cell(&row, r->open ? C_BAD : C_NORMAL, b);
		snprintf(b, sizeof b, "%d", r->alerts);
		row_cell(&row, r->alerts ? C_BAD : C_NORMAL, b);
		snprintf(b, sizeof b, "%d", r->reviews);
		row_cell(&row, r->reviews ? C_WARN : C_NORMAL, b);
	}
	if (s->nb == 0)
		return;
	y = MAX(y, bottom - nb_rows);
	ui_put(y++, 0, cols, C_ACCENT, " breakers open per backend (answering hosts)", 0);
	ui_header(y++, cols, backend_cols, (int)ARRAY_SIZE(backend_cols));
	for (i = 0; i < s->nb && y < bottom; i++) {
		const struct fleet_backend_sum *q = &s->b[i];

		if (y == bottom - 1 && i < s->nb - 1) {
			ui_printf(y++, 0, cols, C_DIM, 0, " ... %d more backends", s->nb - i);
			break;
		}
		row_begin(&row, y++, cols, 0, backend_cols, (int)ARRAY_SIZE(backend_cols));
		row_cell(&row, C_NORMAL, q->name);
		snprintf(b, sizeof b, "%d/%d", q->open, q->hosts);
		row_cell(&row, q->open ? C_BAD : C_OK, b);
		row_cell(&row, q->open ? C_BAD : C_DIM, q->open ? q->where : "-");
	}
}

/* Host i's open breakers among the route's targets, "b1(open) b2(forced_open)". */
static void
host_open(const struct state_v *st, const struct route_v *r, char *out, size_t outsz)
{
	size_t o = 0;
	int k;

	out[0] = '\0';
	for (k = 0; k < r->ntargets && o < outsz; k++) {
		const struct backend_v *b = state_backend(st, r->targets[k].backend);

		if (fleet_backend_open(b))
			o += (size_t)snprintf(out + o, outsz - o, "%s%s(%s)", o ? " " : "", b->name,
					      b->state);
	}
	if (o == 0)
		snprintf(out, outsz, "-");
}

static void
draw_hosts(int top, int rows, int cols, const struct fleet_sums *s, int64_t now_wall)
{
	const struct fleet_route_sum *rs = NULL;
	char lv[160], sv[48], sm[48], b[32], open[256], line[768];
	int y = top, i, page, n = fleet_fc.f->n, nhc = (int)ARRAY_SIZE(host_cols);
	const struct colspec *hc = cols >= WIDE_COLS ? host_cols_wide : host_cols;
	struct row row;

	for (i = 0; i < s->nr; i++)
		if (strcmp(s->r[i].name, fleet_ui.route) == 0)
			rs = &s->r[i];
	if (rs != NULL)
		fleet_levels_text(rs, fleet_ui.utf8, lv, sizeof lv);
	else
		snprintf(lv, sizeof lv, "no host has it now");
	ui_printf(y++, 0, cols, C_ACCENT, 0, " route %s on %d hosts: %s", fleet_ui.route, n, lv);
	ui_header(y++, cols, hc, nhc);
	page = MAX(top + rows - y, 1);
	fleet_ui.page = page;
	listsel_clamp(&fleet_ui.hs, n, page);
	for (i = fleet_ui.hs.top; i < n && i < fleet_ui.hs.top + page; i++) {
		const struct fhost *h = &fleet_fc.h[i];
		const struct route_v *r = h->up ? state_route(h->state, fleet_ui.route) : NULL;
		const struct slo_route_v *sr = r ? slo_route(h->slo, fleet_ui.route) : NULL;

		row_begin(&row, y, cols, i == fleet_ui.hs.sel, hc, nhc);
		snprintf(line, sizeof line, "%s%s", fleet_ui.mark[i] ? "+" : "",
			 fleet_fc.f->hosts[i].name);
		row_cell(&row, fleet_ui.mark[i] ? C_ACCENT : C_NORMAL, line);
		if (!h->up || r == NULL) {
			if (!h->seen && h->init_error == NULL)
				snprintf(line, sizeof line, "asking...");
			else if (!h->up)
				down_text(i, line, sizeof line, now_wall);
			else
				snprintf(line, sizeof line, "no route %s on this host",
					 fleet_ui.route);
			ui_put(y, cols - row_left(&row), row_left(&row), h->up ? C_DIM : C_BAD,
			       line, i == fleet_ui.hs.sel ? UI_SEL : 0);
			y++;
			continue;
		}
		snprintf(b, sizeof b, "L%d%s", r->level, r->forced ? "*" : "");
		row_cell(&row, level_colour(r->level), b);
		row_cell(&row, r->forced ? C_WARN : C_NORMAL, r->forced ? "forced" : "auto");
		if (sr != NULL && sr->w[SLO_1H].present) {
			fleet_avail_text(sv, sizeof sv, sr->w[SLO_1H].service_good,
					 sr->w[SLO_1H].total);
			fleet_avail_text(sm, sizeof sm, sr->w[SLO_1H].smart_good,
					 sr->w[SLO_1H].total);
		} else {
			snprintf(sv, sizeof sv, "- 0/0");
			snprintf(sm, sizeof sm, "- 0/0");
		}
		row_cell(&row, C_NORMAL, sv);
		row_cell(&row, C_NORMAL, sm);
		host_open(h->state, r, open, sizeof open);
		row_cell(&row, open[0] == '-' ? C_DIM : C_BAD, open);
		y++;
	}
}

/* The merged review queue, under the down hosts' lines. */
static void
draw_reviews(int top, int rows, int cols, int64_t now_wall)
{
	int used = draw_down(top, MIN(DOWN_LINES_MAX, rows / 3), cols, now_wall);

	fleet_reviews_draw(top + used, rows - used, cols, now_wall);
}

static const char *const fleet_help[] = {
	"Overview: every route over the fleet",
	"  HOSTS BY LEVEL  answering hosts per level; * forced on one at least;",
	"                  down N: hosts down whose last answer had the route",
	"  SVC/SMART 1h    good/total summed over the answering hosts",
	"  BRK             breakers open on the route's targets (host x backend)",
	"  ALRT  REV       firing alerts, pending reviews, summed",
	"  partial         some hosts do not answer: named above, not summed",
	"Enter             the route's hosts; on a host, its own screens",
	"Esc               back (from a host's screens: to its route's hosts)",
	"L                 force a level on the route: on all hosts, a group or",
	"                  the hosts listed; confirm, then a result per host",
	"A                 release the route to auto, the same way",
	"W                 set the route's weights (B1=3 B2=1), the same way",
	"B                 force a backend's breaker open / closed, or release it",
	"                  to auto (the first open backend is preset), the same way",
	"Space             on a route's hosts: mark a host (scope: these hosts)",
	"r                 on a result: retry the failed hosts (same action id)",
	"v                 the review queue: all hosts' open items by due time;",
	"                  a c x C approve, correct, reject, claim (its host)",
	"j k  arrows       move;  PgUp PgDn g G  page, first, last",
	"q                 quit",
	NULL,
};

void
fleet_draw(const struct fleet_sums *s)
{
	int64_t now_wall = clock_wall_ms();
	const char *hints =
		fleet_ui.view == VIEW_ROUTES
			? " Enter hosts  L level  A auto  W weights  B breaker  v reviews"
		: fleet_ui.view == VIEW_HOSTS ? " Enter screens  Space mark  L A W B act  Esc fleet"
		: fleet_ui.view == VIEW_REVIEWS
			? " a approve  c correct  x reject  C claim  Esc fleet"
		: fleet_act.failed > 0 ? " r retry the failed hosts  Esc back"
				       : " Esc back";
	const char *tail = "  ? help  q quit";
	static const char *const view_names[] = {"routes", "hosts", "action", "reviews"};
	int end, cy, cx;

	erase();
	ui_fill(0, 0, COLS, C_TITLE);
	ui_printf(0, 0, COLS, C_TITLE, 0, " fusebox fleet  %s", view_names[fleet_ui.view]);
	if (COLS > 40)
		ui_put(0, MAX(COLS - fmt_width(fleet_ui.path) - 1, 30), COLS - 31, C_TITLE,
		       fleet_ui.path, 0);
	ui_printf(1, 0, COLS, s->down > 0 ? C_STATUS_BAD : C_STATUS, FMT_PAD,
		  " fleet: %d hosts, %d answering, %d down%s", fleet_fc.f->n, s->up, s->down,
		  s->down > 0 ? "  (sums partial)" : "");
	if (LINES > 3) {
		if (fleet_ui.view == VIEW_ROUTES)
			draw_routes(2, LINES - 3, COLS, s, now_wall);
		else if (fleet_ui.view == VIEW_HOSTS)
			draw_hosts(2, LINES - 3, COLS, s, now_wall);
		else if (fleet_ui.view == VIEW_REVIEWS)
			draw_reviews(2, LINES - 3, COLS, now_wall);
		else
			fleet_act_draw_result(2, LINES - 3, COLS);
	}
	end = MAX(COLS - fmt_width(tail), 0);
	if (fleet_ui.msg[0])
		ui_put(LINES - 1, 0, end, C_MSG_ERR, fleet_ui.msg, 0);
	else
		ui_put(LINES - 1, 0, end, C_NORMAL, hints, 0);
	ui_put(LINES - 1, end, COLS - end, C_NORMAL, tail, 0);
	if (fleet_ui.help)
		help_draw("Fleet", fleet_help);
	curs_set(0);
	if (fleet_act.form.active || fleet_rq.form.active) {
		form_draw(fleet_act.form.active ? &fleet_act.form : &fleet_rq.form, &cy, &cx);
		if (cy >= 0) {
			move(cy, cx);
			curs_set(1);
		}
	}
	wnoutrefresh(stdscr);
	doupdate();
}
