/*
 * why: the diagnosis in the console (see why.h).
 *
 * One request slot: a diagnosis is seconds of the daemon's worker at most
 * and the daemon runs one at a time, so the console never has two in
 * flight. The panel's request goes first: when the slot is taken it waits
 * (panel_want) and leaves as soon as the slot is free. A 503
 * diagnose_busy (another client's diagnosis is running) keeps the slot and
 * is asked once more after WHY_RETRY_MS; a second busy answer is an error
 * for the panel ("r" asks again) and, for the background, a wait for the
 * next round. Answers are parsed on the fetch thread; here they are only
 * kept, and the panel's text built once per answer (model_diag.c).
 */
#include "why.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "console_ctx.h"
#include "fmt.h"
#include "util.h"

#define CAUSE_MAX 1024

enum why_for { WHY_FOR_NONE, WHY_FOR_BG, WHY_FOR_PANEL };

struct why {
	/* The request in flight (one at a time), or waiting to be retried. */
	int tag;		    /* fetch_get()'s tag, 0: none running */
	enum why_for purpose;	    /* WHY_FOR_NONE: the slot is free */
	char route[MODEL_NAME_MAX]; /* the route asked for, "" every degraded one */
	int tries;		    /* answers 503 diagnose_busy so far */
	int64_t retry_at;	    /* monotonic ms of the retry, 0: none */
	int panel_want;		    /* the panel's request waits for the slot */

	/* Background answers for the Overview. */
	struct diag_v *bg;
	int64_t bg_at;	 /* monotonic ms it arrived */
	int64_t bg_next; /* the next background request, not before */

	/* The panel. */
	int active;
	char p_route[MODEL_NAME_MAX];
	struct diag_v *p_diag; /* its answer (p_route in it), or NULL */
	int64_t p_at;
	char p_err[320]; /* the last request's error for the panel, "" none */
	int p_busy;	 /* waiting for a retry after 503 diagnose_busy */
	struct diag_lines lines;
	int sel, top; /* selected line, first line shown */
	int expanded; /* the selected line is shown whole */
	int page;     /* text rows at the last draw */
};

static struct why why_state;

const char *const why_help[] = {
	"Why panel: the daemon's diagnosis of the route (GET /v1/diagnose, 15m)",
	"  first cause   share of the degraded calls, phase, backend, evidence,",
	"                the calls behind it and the SQL that proves it",
	"  then          other causes, failing vs succeeding attempts, changes",
	"                before the episode, advice (never applied)",
	"j k  PgUp PgDn  move through the lines (g G: first, last)",
	"Enter           show the selected line whole (again: cut it)",
	"r               diagnose again",
	"Esc  w          close; any other key closes the panel and acts",
	NULL,
};

static void
clock_local(char *out, size_t outsz, int64_t wall_ms)
{
	fmt_clock(out, outsz, wall_ms, wall_ms);
}

/* Send the request of the slot (purpose and route set). */
static void
why_send(struct console *c)
{
	struct why *w = &why_state;
	char path[256], *seg;

	if (w->route[0]) {
		seg = client_escape(w->route);
		snprintf(path, sizeof path, "/v1/diagnose?route=%s&since=%s", seg, WHY_SINCE);
		free(seg);
	} else {
		snprintf(path, sizeof path, "/v1/diagnose?since=%s", WHY_SINCE);
	}
	w->retry_at = 0;
	w->tag = fetch_get(c->fetch, FETCH_DIAGNOSE, path, WHY_TIMEOUT_MS);
}

static void
start(struct console *c, enum why_for purpose, const char *route)
{
	struct why *w = &why_state;

	w->purpose = purpose;
	w->tries = 0;
	snprintf(w->route, sizeof w->route, "%.*s", (int)sizeof w->route - 1, route);
	why_send(c);
}

static void
rebuild(struct why *w)
{
	const struct diag_route_v *r = diag_route(w->p_diag, w->p_route);

	diag_lines_free(&w->lines);
	if (r != NULL)
		diag_lines_build(r, w->p_diag->from, w->p_diag->to, clock_local, &w->lines);
	if (w->sel >= w->lines.n)
		w->sel = MAX(w->lines.n - 1, 0);
}

void
why_open(struct console *c, const char *route)
{
	struct why *w = &why_state;

	if (strcmp(w->p_route, route) != 0) {
		diag_free(w->p_diag);
		w->p_diag = NULL;
		diag_lines_free(&w->lines);
		w->sel = w->top = w->expanded = 0;
		snprintf(w->p_route, sizeof w->p_route, "%.*s", (int)sizeof w->p_route - 1, route);
	}
	w->active = 1;
	w->p_err[0] = '\0';
	w->p_busy = 0;
	if (w->purpose == WHY_FOR_PANEL && strcmp(w->route, route) == 0)
		return; /* asked already */
	w->panel_want = 1;
	why_tick(c);
}

void
why_close(void)
{
	why_state.active = 0;
	why_state.panel_want = 0;
}

int
why_active(void)
{
	return why_state.active;
}

/* Routes with a cause line now (model_cause.c): the ones worth a diagnosis. */
static int
degraded_routes(const struct console *c, const char **first)
{
	char cause[CAUSE_MAX];
	int i, n = 0;

	for (i = 0; c->state != NULL && i < c->state->nroutes; i++) {
		const struct route_v *r = &c->state->routes[i];

		if (!cause_route(c->state, &c->events, slo_route(c->slo, r->name), r, c->utf8,
				 clock_local, cause, sizeof cause))
			continue;
		if (n++ == 0)
			*first = r->name;
	}
	return n;
}

void
why_tick(struct console *c)
{
	struct why *w = &why_state;
	const char *first = NULL;
	int64_t now = clock_mono_ms();
	int n;

	if (c->fetch == NULL)
		return;
	if (w->purpose != WHY_FOR_NONE) {
		if (w->tag == 0 && w->retry_at > 0 && now >= w->retry_at)
			why_send(c);
		return;
	}
	if (w->panel_want) {
		w->panel_want = 0;
		if (w->active) {
			start(c, WHY_FOR_PANEL, w->p_route);
			return;
		}
	}
	if (c->screen != SCR_OVERVIEW || c->state == NULL || !c->connected || now < w->bg_next)
		return;
	n = degraded_routes(c, &first);
	if (n == 0)
		return; /* every route is healthy: nothing to ask */
	w->bg_next = now + WHY_BG_MS;
	start(c, WHY_FOR_BG, n == 1 ? first : "");
}

void
why_merge(struct console *c, struct fetch_result *r)
{
	struct why *w = &why_state;
	enum why_for purpose = w->purpose;
	int busy;

	if (r->tag != w->tag || purpose == WHY_FOR_NONE)
		return; /* not the request of the slot */
	w->tag = 0;
	if (r->error == NULL && r->diag != NULL) {
		if (purpose == WHY_FOR_BG) {
			diag_free(w->bg);
			w->bg = r->diag;
			w->bg_at = r->done_ms;
		} else if (strcmp(w->route, w->p_route) == 0) {
			diag_free(w->p_diag);
			w->p_diag = r->diag;
			w->p_at = r->done_ms;
			w->p_err[0] = '\0';
			w->p_busy = 0;
			rebuild(w);
		} else {
			diag_free(r->diag); /* the panel moved on to another route */
		}
		r->diag = NULL;
		w->purpose = WHY_FOR_NONE;
		return;
	}
	busy = r->status == 503 && r->error != NULL && strstr(r->error, "diagnose_busy") != NULL;
	if (busy && w->tries == 0) {
		/* Another diagnosis is running on the daemon: once more, a second later. */
		w->tries = 1;
		w->retry_at = r->done_ms + WHY_RETRY_MS;
		if (purpose == WHY_FOR_PANEL)
			w->p_busy = 1;
		return;
	}
	if (purpose == WHY_FOR_PANEL && strcmp(w->route, w->p_route) == 0) {
		snprintf(w->p_err, sizeof w->p_err, "GET /v1/diagnose: %s%s",
			 r->error ? r->error : "not a diagnosis",
			 busy ? " (asked twice; r asks again)" : "");
		w->p_busy = 0;
	}
	if (purpose == WHY_FOR_BG && r->status == 404)
		w->bg_next = r->done_ms + WHY_MISSING_MS;
	w->purpose = WHY_FOR_NONE;
	w->tries = 0;
}

int
why_line(const struct console *c, const char *route, char *out, size_t outsz)
{
	const struct why *w = &why_state;
	const struct diag_route_v *bg = NULL, *p = NULL;
	int64_t now = clock_mono_ms();

	out[0] = '\0';
	if (w->bg != NULL && now - w->bg_at < WHY_FRESH_MS)
		bg = diag_route(w->bg, route);
	if (w->p_diag != NULL && now - w->p_at < WHY_FRESH_MS && strcmp(w->p_route, route) == 0)
		p = diag_route(w->p_diag, route);
	if (p != NULL && (bg == NULL || w->p_at >= w->bg_at))
		return diag_why(p, c->utf8, out, outsz);
	return diag_why(bg, c->utf8, out, outsz);
}

/* The decorated text of a line: headings get a rule. */
static void
line_text(const struct diag_line *l, char *out, size_t outsz)
{
	if (l->kind == DL_HEAD)
		snprintf(out, outsz, "%s %s", fmt_is_ascii() ? "--" : "\xe2\x94\x80\xe2\x94\x80",
			 l->text);
	else
		snprintf(out, outsz, "%*s%s", l->indent, "", l->text);
}

static enum colour
line_colour(enum diag_line_kind k)
{
	switch (k) {
	case DL_HEAD:
		return C_ACCENT;
	case DL_MAIN:
		return C_BAD;
	case DL_DIM:
		return C_DIM;
	case DL_CMD:
		return C_WARN;
	default:
		return C_NORMAL;
	}
}

/* Where the rows of a wrapped line go on: under its text, two further in. */
static int
cont_indent(const struct diag_line *l)
{
	return l->indent + 2;
}

/* Rows line i takes at cols (the selected one, expanded, wraps). */
static int
line_rows(const struct why *w, int i, int cols)
{
	char text[8192], piece[8192];
	const char *p = text;
	int n = 0;

	if (!(w->expanded && i == w->sel))
		return 1;
	line_text(&w->lines.v[i], text, sizeof text);
	while (fmt_wrap(&p, MAX(cols - (n ? cont_indent(&w->lines.v[i]) : 0) - 1, 8), piece,
			sizeof piece))
		n++;
	return MAX(n, 1);
}

/* Keep the selected line in view: the lines from top to sel fit in rows. */
static void
why_scroll(struct why *w, int rows, int cols)
{
	int used, i;

	if (w->sel >= w->lines.n)
		w->sel = w->lines.n - 1;
	if (w->sel < 0)
		w->sel = 0;
	if (w->top > w->sel)
		w->top = w->sel;
	for (;;) {
		used = 0;
		for (i = w->top; i <= w->sel && i < w->lines.n; i++)
			used += line_rows(w, i, cols);
		if (used <= rows || w->top >= w->sel)
			break;
		w->top++;
	}
}

static void
draw_header(struct console *c, int y, int cols)
{
	struct why *w = &why_state;
	char from[32] = "", to[32] = "", status[96] = "", line[512];
	int sw, asking = w->panel_want ||
			 (w->purpose == WHY_FOR_PANEL && strcmp(w->route, w->p_route) == 0);
	const char *ell = fmt_is_ascii() ? "..." : "\xe2\x80\xa6";

	if (w->p_diag != NULL && w->p_diag->from > 0) {
		clock_local(from, sizeof from, w->p_diag->from);
		clock_local(to, sizeof to, w->p_diag->to);
	}
	if (asking && w->p_busy)
		snprintf(status, sizeof status, "daemon busy, asking again%s ", ell);
	else if (asking)
		snprintf(status, sizeof status, "diagnosing%s ", ell);
	else if (w->p_diag != NULL && w->p_diag->truncated)
		snprintf(status, sizeof status, "partial: window truncated ");
	ui_fill(y, 0, cols, C_HEADER);
	if (from[0])
		snprintf(line, sizeof line, " Why: %s  last %s  %s%s%s", w->p_route, WHY_SINCE,
			 from, fmt_is_ascii() ? "-" : "\xe2\x80\x93", to);
	else
		snprintf(line, sizeof line, " Why: %s  last %s", w->p_route, WHY_SINCE);
	sw = fmt_width(status);
	ui_put(y, 0, MAX(cols - sw, 0), C_HEADER, line, 0);
	if (sw > 0 && sw < cols)
		ui_put(y, cols - sw, sw, C_WARN, status, 0);
}

void
why_draw(struct console *c, int top, int rows, int cols)
{
	struct why *w = &why_state;
	char text[8192], piece[8192];
	const char *p;
	int y, i, k, end = top + rows, flags;

	for (y = top; y < end; y++)
		ui_fill(y, 0, cols, C_NORMAL);
	if (rows < 2)
		return;
	draw_header(c, top, cols);
	y = top + 1;
	w->page = MAX(rows - 1, 1);
	if (w->p_err[0])
		ui_put(y++, 1, cols - 1, C_BAD, w->p_err, 0);
	if (w->lines.n == 0) {
		if (w->p_diag != NULL)
			ui_printf(y, 1, cols - 1, C_DIM, 0, "the diagnosis names no route %s",
				  w->p_route);
		else if (!w->p_err[0])
			ui_printf(y, 1, cols - 1, C_DIM, 0,
				  "diagnosing%s the daemon reads the last %s of calls off its "
				  "engine thread",
				  fmt_is_ascii() ? "..." : "\xe2\x80\xa6", WHY_SINCE);
		return;
	}
	why_scroll(w, end - y, cols);
	for (i = w->top; i < w->lines.n && y < end; i++) {
		const struct diag_line *l = &w->lines.v[i];
		enum colour col = line_colour(l->kind);

		flags = FMT_PAD | (i == w->sel ? UI_SEL : 0);
		line_text(l, text, sizeof text);
		if (!(w->expanded && i == w->sel)) {
			ui_put(y++, 0, cols, col, text, flags);
			continue;
		}
		p = text;
		for (k = 0; y < end && fmt_wrap(&p, MAX(cols - (k ? cont_indent(l) : 0) - 1, 8),
						piece, sizeof piece);
		     k++) {
			if (k > 0)
				ui_fill(y, 0, cont_indent(l), (flags & UI_SEL) ? C_SEL : C_NORMAL);
			ui_put(y, k ? cont_indent(l) : 0, cols, col, piece, flags);
			y++;
		}
	}
}

int
why_key(struct console *c, int key)
{
	struct why *w = &why_state;
	struct listsel ls = {w->sel, w->top};

	switch (key) {
	case K_ESC:
	case 'w':
		why_close();
		return 1;
	case 'r':
		why_open(c, w->p_route);
		return 1;
	case K_ENTER:
		w->expanded = !w->expanded;
		return 1;
	case '?':
	case FK(KEY_F(1)):
		return 0; /* the help box opens over the panel */
	default:
		break;
	}
	if (listsel_key(&ls, key, w->lines.n, MAX(w->page, 1))) {
		if (ls.sel != w->sel)
			w->expanded = 0;
		w->sel = ls.sel;
		return 1;
	}
	why_close();
	return 0;
}

void
why_free(void)
{
	struct why *w = &why_state;

	diag_free(w->bg);
	diag_free(w->p_diag);
	diag_lines_free(&w->lines);
	memset(w, 0, sizeof *w);
}
