/*
 * screen_breakers: one row per backend — breaker state in words and colour
 * (closed green, half-open yellow, open and forced states red), failure
 * and slow-call rates and calls in the window (for an open breaker: the
 * window as it was when it opened, read from the opening cause, since the
 * daemon resets it on the transition), when the next probe goes out,
 * in-flight against the concurrency limit in force ("~" when the limit is
 * adaptive), health, p90; on wider terminals the limit against its
 * ceiling, calls waiting for a slot, the limiter's latency baseline and
 * latest latency, the hedges per minute of the routes that target the
 * backend (a rate the console computes from the cumulative counters of
 * successive snapshots, see rates_update()), and what the router knows of
 * its rate limits (requests / tokens left, times it was passed over for
 * them). Below, the selected backend's opening cause (kept until it
 * closes, see model_cause.c), its last transition, its attempts' outcomes
 * over the last 5 minutes (GET /v1/slo/history), then its concurrency and
 * rate limits / hedges in words (so 80 columns show them too). o / c / r
 * force the breaker open, force it
 * closed, or give it back to automatic control, each after a confirmation
 * (PUT /v1/backends/{b}/breaker).
 */
#include "screen_breakers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client.h"
#include "fmt.h"
#include "util.h"
#include "wire.h"

static struct {
	struct listsel ls;
	struct vislist vis;
	int page; /* list rows at the last draw */
} br;

static const char *const breakers_help[] = {
	"Breakers: one circuit breaker per backend",
	"  closed (green)  half-open (yellow)  open / forced (red)",
	"  PROBE    when an open breaker lets the next probe call through",
	"  FAIL% CALLS  of an OPEN breaker: the window as it was when it opened",
	"  INFLT    in flight / limit in force (~ adaptive)  LIMIT limit / ceiling",
	"  WAIT     calls queued for a slot  LATENCY limiter's baseline -> latest",
	"  HEDGE/m  hedges started per minute by the routes that target it",
	"  RL-REQ RL-TOK SKIP  rate limit left (- unknown), times passed over",
	"  below    cause, last transition, outcomes 5m, limits, rate limits, hedges",
	"o          force the selected breaker open (confirm)",
	"c          force it closed (confirm)",
	"r          reset to automatic control (confirm)",
	NULL,
};

/* 80 columns show the first nine; the later ones go first as it narrows. */
static const struct colspec br_cols[] = {
	{"BACKEND", 13, FMT_PAD, 0, 0},	 {"STATE", 13, FMT_PAD, 0, 0},
	{"FAIL%", 6, FMT_RIGHT, 0, 0},	 {"SLOW%", 6, FMT_RIGHT, 2, 0},
	{"CALLS", 5, FMT_RIGHT, 0, 0},	 {"PROBE", 8, FMT_RIGHT, 0, 0},
	{"INFLT", 7, FMT_RIGHT, 3, 0},	 {"HEALTH", 6, FMT_RIGHT, 1, 0},
	{"P90", 6, FMT_RIGHT, 0, 0},	 {"LIMIT", 7, FMT_RIGHT, 5, 0},
	{"WAIT", 4, FMT_RIGHT, 8, 0},	 {"LATENCY", 12, FMT_RIGHT, 7, 0},
	{"HEDGE/m", 7, FMT_RIGHT, 4, 0}, {"RL-REQ", 6, FMT_RIGHT, 6, 0},
	{"RL-TOK", 6, FMT_RIGHT, 6, 0},	 {"SKIP", 5, FMT_RIGHT, 6, 0},
};

/* A count in at most 6 columns: 12345, 150k, 2300k, 12M; -1 is "-". */
static void
count_text(char *out, size_t outsz, int64_t v)
{
	if (v < 0)
		snprintf(out, outsz, "-");
	else if (v < 100000)
		snprintf(out, outsz, "%lld", (long long)v);
	else if (v < 10000000)
		snprintf(out, outsz, "%lldk", (long long)(v / 1000));
	else
		snprintf(out, outsz, "%lldM", (long long)(v / 1000000));
}

/* The limit in force (the bulkhead's cap), from "concurrency" or the older field. */
static int
limit_of(const struct backend_v *b)
{
	return b->limit >= 0 ? b->limit : b->max_concurrent;
}

/* "95→120ms": the limiter's baseline and latest latency; "-" when it has none. */
static void
latency_text(char *out, size_t outsz, const struct backend_v *b)
{
	char now[16];

	if (isnan(b->baseline_ms)) {
		snprintf(out, outsz, "-");
		return;
	}
	fmt_latency(now, sizeof now, b->latency_ms);
	snprintf(out, outsz, "%.0f%s%s", b->baseline_ms, fmt_is_ascii() ? "->" : "\xe2\x86\x92",
		 now);
}

/* Hedges per minute: "off" when no route that targets it hedges, "-" unknown yet. */
static void
hedges_text(char *out, size_t outsz, const struct backend_v *b)
{
	if (!b->hedged)
		snprintf(out, outsz, "off");
	else
		fmt_rate(out, outsz, b->hedges_per_min);
}

static void
build(struct console *c)
{
	const char *f = console_filter(c, SCR_BREAKERS);
	int i;

	vislist_reset(&br.vis);
	for (i = 0; c->state != NULL && i < c->state->nbackends; i++) {
		const struct backend_v *b = &c->state->backends[i];
		const char *fields[] = {b->name, b->state, b->version, NULL};

		if (filter_match(f, fields))
			vislist_add(&br.vis, i);
	}
}

static void
draw_row(struct console *c, const struct backend_v *b, int y, int cols, int sel)
{
	struct row row;
	char t[64], cause[MODEL_TEXT_MAX];
	double fail = b->failure_rate;
	int calls = b->calls_in_window, nfail, ncalls, lim;
	int64_t at;

	/* Open: the daemon's window restarts empty; show it as it was at opening. */
	if (b->st == BS_OPEN && cause_breaker(&c->events, b, cause, sizeof cause, &at)) {
		cause_window(cause, &nfail, &ncalls);
		if (ncalls > 0) {
			fail = (double)nfail / ncalls;
			calls = ncalls;
		}
	}
	row_begin(&row, y, cols, sel, br_cols, (int)ARRAY_SIZE(br_cols));
	row_cell(&row, C_NORMAL, b->name);
	row_cell(&row, breaker_colour(b->st), breaker_words(b->st, b->state));
	fmt_pct(t, sizeof t, fail, 1);
	row_cell(&row, fail > 0 ? C_WARN : C_NORMAL, t);
	fmt_pct(t, sizeof t, b->slow_call_rate, 1);
	row_cell(&row, b->slow_call_rate > 0 ? C_WARN : C_NORMAL, t);
	snprintf(t, sizeof t, "%d", calls);
	row_cell(&row, C_NORMAL, calls >= 0 ? t : "-");
	if ((b->st == BS_OPEN) && b->half_open_at > 0) {
		char d[32];

		fmt_duration(d, sizeof d, MAX(b->half_open_at - c->now_wall, 0), 0);
		snprintf(t, sizeof t, "in %s", d);
	} else if (b->st == BS_HALF_OPEN) {
		snprintf(t, sizeof t, "now");
	} else {
		snprintf(t, sizeof t, "-");
	}
	row_cell(&row, C_NORMAL, t);
	lim = limit_of(b);
	snprintf(t, sizeof t, "%d/%s%d", b->inflight, b->adaptive ? "~" : "", lim);
	row_cell(&row, lim > 0 && b->inflight >= lim ? C_BAD : C_NORMAL, t);
	if (isnan(b->health))
		snprintf(t, sizeof t, "-");
	else
		snprintf(t, sizeof t, "%.2f", b->health);
	row_cell(&row, !isnan(b->health) && b->health < 0.5 ? C_WARN : C_NORMAL, t);
	fmt_latency(t, sizeof t, b->p90_ms);
	row_cell(&row, C_NORMAL, t);
	if (b->limit < 0)
		snprintf(t, sizeof t, "-");
	else if (b->adaptive)
		snprintf(t, sizeof t, "~%d/%d", b->limit, b->limit_max);
	else
		snprintf(t, sizeof t, "%d", b->limit);
	row_cell(&row, C_NORMAL, t);
	count_text(t, sizeof t, b->waiting);
	row_cell(&row, b->waiting > 0 ? C_WARN : C_NORMAL, t);
	latency_text(t, sizeof t, b);
	row_cell(&row, C_NORMAL, t);
	hedges_text(t, sizeof t, b);
	row_cell(&row, b->hedges_per_min > 0 ? C_ACCENT : C_NORMAL, t);
	count_text(t, sizeof t, b->rl_requests);
	row_cell(&row, b->rl_requests == 0 ? C_BAD : C_NORMAL, t);
	count_text(t, sizeof t, b->rl_tokens);
	row_cell(&row, b->rl_tokens == 0 ? C_BAD : C_NORMAL, t);
	count_text(t, sizeof t, b->rl_skipped);
	row_cell(&row, b->rl_skipped > 0 ? C_WARN : C_NORMAL, t);
}

/* "limit ~12 adaptive of max 60  in flight 3  waiting 0  latency 95→120ms" */
static void
draw_limits(const struct backend_v *b, int y, int cols)
{
	char lat[64] = "", t[48];

	if (b->limit < 0) {
		ui_put(y, 1, cols - 1, C_DIM, "concurrency: not reported by this daemon", 0);
		return;
	}
	if (b->adaptive && !isnan(b->baseline_ms)) {
		latency_text(t, sizeof t, b);
		snprintf(lat, sizeof lat, "  latency %s", t);
	} else if (b->adaptive) {
		snprintf(lat, sizeof lat, "  latency: no baseline yet");
	}
	if (b->adaptive)
		ui_printf(y, 1, cols - 1, C_NORMAL, 0,
			  "limit ~%d adaptive of max %d  in flight %d  waiting %d%s", b->limit,
			  b->limit_max, b->conc_inflight, MAX(b->waiting, 0), lat);
	else
		ui_printf(y, 1, cols - 1, C_NORMAL, 0, "limit %d fixed  in flight %d  waiting %d",
			  b->limit, b->conc_inflight, MAX(b->waiting, 0));
}

/* "rate limit left: requests 5, tokens -  skipped 2   hedges 1.5/min" */
static void
draw_rate_limits(const struct backend_v *b, int y, int cols)
{
	char rq[24], tk[24], sk[24], hd[48];

	count_text(rq, sizeof rq, b->rl_requests);
	count_text(tk, sizeof tk, b->rl_tokens);
	count_text(sk, sizeof sk, b->rl_skipped);
	if (!b->hedged)
		snprintf(hd, sizeof hd, "hedging off");
	else if (isnan(b->hedges_per_min))
		snprintf(hd, sizeof hd, "hedges -/min (%d route%s)", b->hedged,
			 b->hedged == 1 ? "" : "s");
	else
		snprintf(hd, sizeof hd, "hedges %.1f/min (%d route%s)", b->hedges_per_min,
			 b->hedged, b->hedged == 1 ? "" : "s");
	ui_printf(y, 1, cols - 1, b->rl_requests == 0 || b->rl_tokens == 0 ? C_WARN : C_NORMAL, 0,
		  "rate limit left: requests %s, tokens %s  skipped %s   %s", rq, tk, sk, hd);
}

static void
draw_panel(struct console *c, const struct backend_v *b, int y, int rows, int cols)
{
	char when[32], opened[32], cause[MODEL_TEXT_MAX], oc[512];
	int64_t at;
	int nfail, ncalls, line = y + 1;

	ui_fill(y, 0, cols, C_HEADER);
	ui_printf(y, 0, cols, C_HEADER, 0, " %s%s%s  mode %s  failures in a row %d", b->name,
		  b->version[0] ? " " : "", b->version, b->mode[0] ? b->mode : "?", b->failures);
	if (b->opened_at > 0) {
		fmt_clock(opened, sizeof opened, b->opened_at, c->now_wall);
		ui_printf(y, cols - 20, 20, C_HEADER, FMT_RIGHT, "opened %s ", opened);
	}
	if (cause_breaker(&c->events, b, cause, sizeof cause, &at)) {
		char win[64] = "";

		fmt_clock(when, sizeof when, at, c->now_wall);
		cause_window(cause, &nfail, &ncalls);
		if (ncalls > 0)
			snprintf(win, sizeof win, "; window at opening: %d of %d failed", nfail,
				 ncalls);
		ui_printf(line++, 1, cols - 1, C_BAD, 0, "%s since %s: %s%s",
			  breaker_words(b->st, b->state), when, cause[0] ? cause : "?", win);
	} else if (!b->has_transition) {
		ui_put(line++, 1, cols - 1, C_DIM, "no transition yet", 0);
	}
	if (b->has_transition && line < y + rows) {
		fmt_clock(when, sizeof when, b->tr_at, c->now_wall);
		ui_printf(line++, 1, cols - 1, C_NORMAL, 0, "last transition %s: %s %s %s (%s)",
			  when, b->tr_from, fmt_is_ascii() ? "->" : "\xe2\x86\x92", b->tr_to,
			  b->tr_reason[0] ? b->tr_reason : "no reason given");
	}
	if (line < y + rows) {
		const char *err = console_ep_error(c, FETCH_HISTORY);

		hist_outcomes_text(slo_hist_backend(c->hist_d, b->name), oc, sizeof oc);
		if (err != NULL && c->hist_d == NULL)
			ui_printf(line, 1, cols - 1, C_BAD, 0, "outcomes: GET %s", err);
		else
			ui_printf(line, 1, cols - 1, C_NORMAL, 0, "outcomes 5m: %s",
				  oc[0] ? oc : "no attempts");
		line++;
	}
	if (line < y + rows)
		draw_limits(b, line++, cols);
	if (line < y + rows)
		draw_rate_limits(b, line, cols);
}

static void
breakers_draw(struct console *c, int top, int rows, int cols)
{
	int y, i, list_rows, nopen = 0;
	int panel = rows >= 12 ? 6 : rows >= 9 ? 4 : rows >= 7 ? 2 : 0;

	build(c);
	if (c->state == NULL) {
		ui_put(top + 1, 1, cols - 1, C_DIM, "waiting for the first snapshot ...", 0);
		return;
	}
	for (i = 0; i < c->state->nbackends; i++)
		nopen += c->state->backends[i].st != BS_CLOSED;
	ui_printf(top, 1, cols - 1, C_NORMAL, 0, "backends %d   not closed %d", c->state->nbackends,
		  nopen);
	ui_header(top + 1, cols, br_cols, (int)ARRAY_SIZE(br_cols));
	list_rows = rows - 2 - panel;
	br.page = MAX(list_rows, 1);
	listsel_clamp(&br.ls, br.vis.n, br.page);
	for (i = br.ls.top, y = top + 2; i < br.vis.n && y < top + 2 + list_rows; i++, y++)
		draw_row(c, &c->state->backends[br.vis.idx[i]], y, cols, i == br.ls.sel);
	if (br.vis.n == 0)
		ui_put(top + 2, 1, cols - 1, C_DIM,
		       c->state->nbackends ? "no backend matches the filter" : "no backends", 0);
	else if (panel)
		draw_panel(c, &c->state->backends[br.vis.idx[br.ls.sel]], top + rows - panel, panel,
			   cols);
}

static const char *
target_name(const char *state)
{
	return strcmp(state, WIRE_BREAKER_FORCED_OPEN) == 0 ? "OPEN (forced)"
	       : strcmp(state, WIRE_BREAKER_FORCED_CLOSED) == 0
		       ? "CLOSED (forced)"
		       : "automatic control (closed, empty windows)";
}

static int
breaker_check(struct form *f, struct console *c)
{
	char reason[256];

	field_get(&f->fields[0], reason, sizeof reason);
	snprintf(f->summary, sizeof f->summary, "Set the breaker of backend %s to %s%s%s%s.",
		 f->subject, target_name(f->extra), reason[0] ? " (reason: " : "", reason,
		 reason[0] ? ")" : "");
	return 0;
}

static void
breaker_apply(struct form *f, struct console *c)
{
	cJSON *o = cJSON_CreateObject();
	char reason[256], path[256], label[320], *seg = client_escape(f->subject), *body;

	field_get(&f->fields[0], reason, sizeof reason);
	cJSON_AddStringToObject(o, "state", f->extra);
	if (reason[0])
		cJSON_AddStringToObject(o, "reason", reason);
	body = cJSON_PrintUnformatted(o);
	snprintf(path, sizeof path, "/v1/backends/%s/breaker", seg);
	snprintf(label, sizeof label, "breaker %s -> %s", f->subject, f->extra);
	console_send(c, label, "PUT", path, body);
	cJSON_free(body);
	cJSON_Delete(o);
	free(seg);
}

static void
open_form(struct console *c, const struct backend_v *b, const char *state)
{
	struct form f;

	memset(&f, 0, sizeof f);
	snprintf(f.title, sizeof f.title, "Breaker %s", b->name);
	snprintf(f.subject, sizeof f.subject, "%s", b->name);
	snprintf(f.extra, sizeof f.extra, "%s", state);
	f.nfields = 1;
	snprintf(f.fields[0].label, sizeof f.fields[0].label, "Reason");
	snprintf(f.fields[0].hint, sizeof f.fields[0].hint, "optional");
	f.check = breaker_check;
	f.apply = breaker_apply;
	console_form(c, &f);
}

static enum next
breakers_key(struct console *c, int key)
{
	const struct backend_v *b;

	if (c->state == NULL)
		return NEXT_PASS;
	build(c);
	if (listsel_key(&br.ls, key, br.vis.n, MAX(br.page, 1)))
		return NEXT_DONE;
	if (key != 'o' && key != 'c' && key != 'r')
		return NEXT_PASS;
	if (br.vis.n == 0)
		return NEXT_DONE;
	if (!console_can_operate(c))
		return NEXT_DONE;
	listsel_clamp(&br.ls, br.vis.n, MAX(br.page, 1));
	b = &c->state->backends[br.vis.idx[br.ls.sel]];
	open_form(c, b,
		  key == 'o'   ? WIRE_BREAKER_FORCED_OPEN
		  : key == 'c' ? WIRE_BREAKER_FORCED_CLOSED
			       : WIRE_BREAKER_AUTO);
	return NEXT_DONE;
}

const struct screen screen_breakers = {
	.name = "Breakers",
	.help = breakers_help,
	.want = 0,
	.draw = breakers_draw,
	.key = breakers_key,
	.hints = "j/k move  / filter",
	.op_hints = "o open  c closed  r auto",
};
