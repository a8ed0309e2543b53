/*
 * screen_events: a live tail of /v1/events (breaker transitions, level and
 * weight changes, canary rollbacks, alerts, review decisions ...), oldest
 * at the top. While the selection is on the last row the view follows new
 * events; moving up stops following, G (or End) follows again; Enter shows
 * the selected row's detail whole. The console keeps the last 2000 events
 * (model.c event ring). a switches to the audit rows (GET /v1/audit: who
 * changed what), o to the overrides in force (forced levels with their
 * TTL, forced breakers), e back to the events.
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
	int view;    /* VIEW_* */
	int whole;   /* Enter: the selected row's detail in full below the list */
} ev;

enum { VIEW_EVENTS, VIEW_AUDIT, VIEW_OVERRIDES };

static const char *const events_help[] = {
	"Events: breaker, level, weights, canary, alert, review events",
	"  the view follows new events while the last row is selected",
	"G / End    follow again",
	"Enter      the selected row's detail in full (again: hide it)",
	"a          audit rows: who changed what (GET /v1/audit)",
	"o          overrides in force: forced levels (TTL), forced breakers",
	"e          back to the events",
	NULL,
};

static const struct colspec au_cols[] = {
	{"ID", 6, FMT_RIGHT, 2, 0},    {"TIME", 11, FMT_PAD, 0, 0},   {"ACTOR", 10, FMT_PAD, 0, 0},
	{"ACTION", 14, FMT_PAD, 0, 0}, {"TARGET", 14, FMT_PAD, 0, 0}, {"CHANGE", 0, 0, 0, 30},
};

static const struct colspec ov_cols[] = {
	{"KIND", 8, FMT_PAD, 0, 0}, {"SUBJECT", 16, FMT_PAD, 0, 0}, {"VALUE", 14, FMT_PAD, 0, 0},
	{"TTL", 10, FMT_PAD, 0, 0}, {"BY", 10, FMT_PAD, 1, 0},	    {"REASON", 0, 0, 0, 0},
};

static const struct colspec ev_cols[] = {
	{"ID", 7, FMT_RIGHT, 2, 0},	{"TIME", 11, FMT_PAD, 0, 0}, {"KIND", 15, FMT_PAD, 0, 0},
	{"SUBJECT", 14, FMT_PAD, 0, 0}, {"DETAIL", 0, 0, 0, 30},
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

/* The selected row's text in full, wrapped into the rows below the list. */
static void
draw_whole(const char *text, int y, int rows, int cols)
{
	const char *p = text;
	char line[1024];
	int i;

	ui_fill(y, 0, cols, C_HEADER);
	ui_put(y, 0, cols, C_HEADER, " detail (Enter hides)", 0);
	for (i = 1; i < rows && fmt_wrap(&p, cols - 2, line, sizeof line); i++)
		ui_put(y + i, 1, cols - 1, C_NORMAL, line, 0);
}

static void
audit_draw(struct console *c, int top, int rows, int cols)
{
	const char *err = console_ep_error(c, FETCH_AUDIT);
	char t[40], change[1024];
	struct row row;
	int i, y, list = rows - 2 - (ev.whole ? 5 : 0);

	if (err != NULL)
		ui_printf(top, 1, cols - 1, C_BAD, 0, "GET /v1/audit: %s", err);
	else
		ui_printf(top, 1, cols - 1, C_NORMAL, 0, "audit: %d rows (e events, o overrides)",
			  c->audit.n);
	ui_header(top + 1, cols, au_cols, (int)ARRAY_SIZE(au_cols));
	ev.page = MAX(list, 1);
	listsel_clamp(&ev.ls, c->audit.n, ev.page);
	for (i = ev.ls.top, y = top + 2; i < c->audit.n && y < top + 2 + list; i++, y++) {
		const struct audit_v *a = &c->audit.v[i];

		row_begin(&row, y, cols, i == ev.ls.sel, au_cols, (int)ARRAY_SIZE(au_cols));
		snprintf(t, sizeof t, "%lld", (long long)a->id);
		row_cell(&row, C_DIM, t);
		fmt_clock(t, sizeof t, a->at, c->now_wall);
		row_cell(&row, C_NORMAL, t);
		row_cell(&row, C_NORMAL, a->actor);
		row_cell(&row, C_WARN, a->action);
		row_cell(&row, C_NORMAL, a->target);
		snprintf(change, sizeof change, "%s -> %s", a->before ? a->before : "null",
			 a->after ? a->after : "null");
		row_cell(&row, C_NORMAL, change);
	}
	if (c->audit.n == 0 && err == NULL)
		ui_put(top + 2, 1, cols - 1, C_DIM, "no audit rows yet", 0);
	if (ev.whole && c->audit.n > 0) {
		const struct audit_v *a = &c->audit.v[ev.ls.sel];

		snprintf(change, sizeof change, "%s %s %s from %s: %s -> %s", a->actor, a->action,
			 a->target, a->remote[0] ? a->remote : "?", a->before ? a->before : "null",
			 a->after ? a->after : "null");
		draw_whole(change, top + rows - 5, 5, cols);
	}
}

/* Every override in force, in one place: forced levels and breakers. */
static void
overrides_draw(struct console *c, int top, int rows, int cols)
{
	struct row row;
	char t[64];
	int i, y = top + 2, n = 0;

	ui_printf(top, 1, cols - 1, C_NORMAL, 0,
		  "overrides in force (e events, a audit); weights: see Routes");
	ui_header(top + 1, cols, ov_cols, (int)ARRAY_SIZE(ov_cols));
	for (i = 0; c->state != NULL && i < c->state->nroutes && y < top + rows; i++) {
		const struct route_v *r = &c->state->routes[i];

		if (!r->forced)
			continue;
		row_begin(&row, y++, cols, 0, ov_cols, (int)ARRAY_SIZE(ov_cols));
		row_cell(&row, C_NORMAL, "level");
		row_cell(&row, C_NORMAL, r->name);
		snprintf(t, sizeof t, "L%d (auto L%d)", r->forced_lvl, r->auto_level);
		row_cell(&row, C_WARN, t);
		if (r->forced_until > 0) {
			char d[32];

			fmt_duration(d, sizeof d, MAX(r->forced_until - c->now_wall, 0), 0);
			snprintf(t, sizeof t, "%s left", d);
			row_cell(&row, C_NORMAL, t);
		} else {
			row_cell(&row, C_BAD, "no TTL");
		}
		row_cell(&row, C_NORMAL, r->forced_actor);
		row_cell(&row, C_NORMAL, r->forced_reason);
		n++;
	}
	for (i = 0; c->state != NULL && i < c->state->nbackends && y < top + rows; i++) {
		const struct backend_v *b = &c->state->backends[i];

		if (b->st != BS_FORCED_OPEN && b->st != BS_FORCED_CLOSED)
			continue;
		row_begin(&row, y++, cols, 0, ov_cols, (int)ARRAY_SIZE(ov_cols));
		row_cell(&row, C_NORMAL, "breaker");
		row_cell(&row, C_NORMAL, b->name);
		row_cell(&row, breaker_colour(b->st), breaker_words(b->st, b->state));
		row_cell(&row, C_BAD, "no TTL");
		row_cell(&row, C_NORMAL, "");
		row_cell(&row, C_NORMAL, b->tr_reason);
		n++;
	}
	if (n == 0)
		ui_put(top + 2, 1, cols - 1, C_DIM, "none: every route and breaker is automatic",
		       0);
}

static void
events_draw(struct console *c, int top, int rows, int cols)
{
	const char *err = console_ep_error(c, FETCH_EVENTS);
	struct row row;
	char t[40];
	int i, y;

	if (ev.view == VIEW_AUDIT) {
		audit_draw(c, top, rows, cols);
		return;
	}
	if (ev.view == VIEW_OVERRIDES) {
		overrides_draw(c, top, rows, cols);
		return;
	}
	build(c);
	if (ev.whole)
		rows -= 5;
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
	if (ev.whole && ev.vis.n > 0) {
		const struct event_v *e = event_ring_get(&c->events, ev.vis.idx[ev.ls.sel]);
		char text[2048];

		snprintf(text, sizeof text, "%s %s: %s", e->kind, e->subject,
			 e->detail ? e->detail : "");
		draw_whole(text, top + rows, 5, cols);
	}
}

static enum next
events_key(struct console *c, int key)
{
	int v = key == 'a'   ? VIEW_AUDIT
		: key == 'o' ? VIEW_OVERRIDES
		: key == 'e' ? VIEW_EVENTS
			     : -1;

	if (v >= 0) {
		ev.view = v;
		ev.whole = 0;
		if (v == VIEW_AUDIT)
			ev.ls.sel = c->audit.n - 1;
		return NEXT_DONE;
	}
	if (key == K_ENTER) {
		ev.whole = !ev.whole;
		return NEXT_DONE;
	}
	if (ev.view == VIEW_AUDIT)
		return listsel_key(&ev.ls, key, c->audit.n, ev.page) ? NEXT_DONE : NEXT_PASS;
	if (ev.view == VIEW_OVERRIDES)
		return NEXT_PASS;
	build(c);
	if (!listsel_key(&ev.ls, key, ev.vis.n, ev.page))
		return NEXT_PASS;
	ev.stopped = ev.ls.sel < ev.vis.n - 1;
	return NEXT_DONE;
}

const struct screen screen_events = {
	.name = "Events",
	.help = events_help,
	.want = FETCH_BIT(FETCH_EVENTS) | FETCH_BIT(FETCH_AUDIT),
	.draw = events_draw,
	.key = events_key,
	.hints = "j/k move  G follow  Enter whole  a audit  o overrides  e events",
};
