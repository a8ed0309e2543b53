/*
 * screen_events: a live tail of /v1/events (breaker transitions, level and
 * weight changes, canary rollbacks, alerts, review overflow ...), oldest
 * at the top. While the selection is on the last row the view follows new
 * events; moving up stops following, G (or End) follows again. The
 * console keeps the last 2000 events (model.c event ring).
 */
#include "screen_events.h"

#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "util.h"

static struct {
	struct listsel ls;
	struct vislist vis;
	int page;
	int stopped; /* the user scrolled away from the tail */
} ev;

static const char *const events_help[] = {
	"Events: breaker, level, weights, canary, alert, review events",
	"  the view follows new events while the last row is selected",
	"G / End    follow again",
	NULL,
};

static const struct colspec ev_cols[] = {
	{"ID", 7, FMT_RIGHT},	  {"TIME", 11, FMT_PAD}, {"KIND", 15, FMT_PAD},
	{"SUBJECT", 14, FMT_PAD}, {"DETAIL", 0, 0},
};

static void
build(struct console *c)
{
	const char *f = console_filter(c, SCR_EVENTS);
	int i;

	vislist_reset(&ev.vis);
	for (i = 0; i < c->events.n; i++) {
		const struct event_v *e = event_ring_get(&c->events, i);
		const char *fields[] = {e->kind, e->subject, e->detail ? e->detail : "", NULL};

		if (filter_match(f, fields))
			vislist_add(&ev.vis, i);
	}
}

static enum colour
kind_colour(const struct event_v *e)
{
	if (strcmp(e->kind, "alert") == 0 || strcmp(e->kind, "canary_rollback") == 0 ||
	    strcmp(e->kind, "log_rows_dropped") == 0 || strncmp(e->kind, "review_", 7) == 0)
		return C_BAD;
	if (strcmp(e->kind, "breaker") == 0 || strcmp(e->kind, "level") == 0)
		return C_WARN;
	return C_ACCENT;
}

static void
events_draw(struct console *c, int top, int rows, int cols)
{
	const char *err = console_ep_error(c, FETCH_EVENTS);
	struct row row;
	char t[40];
	int i, y;

	build(c);
	if (err != NULL)
		ui_printf(top, 1, cols - 1, C_BAD, 0, "GET /v1/events: %s", err);
	else
		ui_printf(top, 1, cols - 1, C_NORMAL, 0, "%d events%s", c->events.n,
			  ev.stopped ? "   (paused: G follows)" : "   (following)");
	ui_header(top + 1, cols, ev_cols, (int)ARRAY_SIZE(ev_cols));
	ev.page = MAX(rows - 2, 1);
	if (!ev.stopped)
		ev.ls.sel = ev.vis.n - 1;
	listsel_clamp(&ev.ls, ev.vis.n, ev.page);
	for (i = ev.ls.top, y = top + 2; i < ev.vis.n && y < top + rows; i++, y++) {
		const struct event_v *e = event_ring_get(&c->events, ev.vis.idx[i]);

		row_begin(&row, y, cols, ev.stopped && i == ev.ls.sel, ev_cols,
			  (int)ARRAY_SIZE(ev_cols));
		snprintf(t, sizeof t, "%lld", (long long)e->id);
		row_cell(&row, C_DIM, t);
		fmt_clock(t, sizeof t, e->at, c->now_wall);
		row_cell(&row, C_NORMAL, t);
		row_cell(&row, kind_colour(e), e->kind);
		row_cell(&row, C_NORMAL, e->subject);
		row_cell(&row, C_NORMAL, e->detail ? e->detail : "");
	}
	if (ev.vis.n == 0 && err == NULL)
		ui_put(top + 2, 1, cols - 1, C_DIM,
		       c->events.n ? "no event matches the filter" : "no events yet", 0);
}

static enum next
events_key(struct console *c, int key)
{
	build(c);
	if (!listsel_key(&ev.ls, key, ev.vis.n, ev.page))
		return NEXT_PASS;
	ev.stopped = ev.ls.sel < ev.vis.n - 1;
	return NEXT_DONE;
}

const struct screen screen_events = {
	.name = "Events",
	.help = events_help,
	.want = FETCH_BIT(FETCH_EVENTS),
	.draw = events_draw,
	.key = events_key,
	.hints = "j/k move  G follow  / filter",
};
