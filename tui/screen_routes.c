/*
 * screen_routes: one row per route target — level (forced or auto),
 * backend, weight and share, canary flag, the backend's breaker; on wider
 * terminals the route's hedge delay ("off" when it does not hedge) and its
 * hedges won / lost per minute (rates the console computes from the
 * cumulative counters of successive snapshots, see rates_update()); the
 * panel below says the selected route's hedging in words at any width. + / -
 * step the selected target's weight through the canary ladder (1, 5, 10,
 * 20, 25, 50, 75, 100 %), the other targets of the route sharing the rest;
 * the edit stays pending (NEW column) until Enter applies it after a
 * confirmation (PUT /v1/routes/{r}/weights) or Esc drops it. L forces the
 * route's level (0-3, a reason, an optional TTL, confirm); A releases it
 * to automatic control (confirm); w opens the Why panel on the route.
 */
#include "screen_routes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client.h"
#include "fmt.h"
#include "util.h"
#include "why.h"

#define ROW_CODE(ri, ti) ((ri) * (MODEL_TARGETS_MAX + 1) + (ti) + 1)
#define ROW_ROUTE(code)	 ((code) / (MODEL_TARGETS_MAX + 1))
#define ROW_TARGET(code) ((code) % (MODEL_TARGETS_MAX + 1) - 1)

static struct {
	struct listsel ls;
	struct vislist vis;
	int page;
	char edit_route[MODEL_NAME_MAX]; /* route with pending weights, "" none */
	int edit_w[MODEL_TARGETS_MAX];
	int edit_n;
} rt;

static const char *const level_choices[] = {
	"L0  primary models",
	"L1  backup models",
	"L2  rule engine only",
	"L3  async queue (answer 202, process later)",
};

static const char *const routes_help[] = {
	"Routes: targets, weights and levels",
	"+ / -      step the selected target's weight (canary ladder); pending",
	"Enter      apply the pending weights (confirm)",
	"Esc        drop the pending weights",
	"L          force the route's level: 0-3, reason, optional TTL (confirm)",
	"A          release the route to automatic level control (confirm)",
	"w          why: the daemon's diagnosis of the selected route (panel)",
	"HEDGE      delay before a hedged attempt starts (off: no hedging)",
	"WON/m LOST/m  hedges per minute that answered first / were cancelled",
	NULL,
};

static const struct colspec rt_cols[] = {
	{"ROUTE", 16, FMT_PAD, 0, 0},  {"LEVEL", 9, FMT_PAD, 0, 0},
	{"TARGET", 16, FMT_PAD, 0, 0}, {"WEIGHT", 6, FMT_RIGHT, 0, 0},
	{"NEW", 5, FMT_RIGHT, 0, 0},   {"SHARE", 6, FMT_RIGHT, 1, 0},
	{"CANARY", 6, FMT_PAD, 2, 0},  {"HEDGE", 6, FMT_RIGHT, 5, 0},
	{"WON/m", 6, FMT_RIGHT, 6, 0}, {"LOST/m", 6, FMT_RIGHT, 6, 0},
	{"BREAKER", 0, 0, 0, 0},
};

/* A route's hedge delay: "812ms", "on" (delay not known), "off". */
static void
hedge_delay_text(char *out, size_t outsz, const struct hedge_v *h)
{
	if (!h->on)
		snprintf(out, outsz, "off");
	else if (h->delay_ms < 0)
		snprintf(out, outsz, "on");
	else
		fmt_latency(out, outsz, h->delay_ms);
}

static void
build(struct console *c)
{
	const char *f = console_filter(c, SCR_ROUTES);
	int i, j;

	vislist_reset(&rt.vis);
	for (i = 0; c->state != NULL && i < c->state->nroutes; i++) {
		const struct route_v *r = &c->state->routes[i];

		if (r->ntargets == 0) {
			const char *fields[] = {r->name, NULL};

			if (filter_match(f, fields))
				vislist_add(&rt.vis, ROW_CODE(i, -1));
		}
		for (j = 0; j < r->ntargets; j++) {
			const char *fields[] = {r->name, r->targets[j].backend, NULL};

			if (filter_match(f, fields))
				vislist_add(&rt.vis, ROW_CODE(i, j));
		}
	}
}

static const struct route_v *
selected(struct console *c, int *ti)
{
	int code;

	if (c->state == NULL || rt.vis.n == 0)
		return NULL;
	listsel_clamp(&rt.ls, rt.vis.n, MAX(rt.page, 1));
	code = rt.vis.idx[rt.ls.sel];
	if (ROW_ROUTE(code) >= c->state->nroutes)
		return NULL;
	*ti = ROW_TARGET(code);
	return &c->state->routes[ROW_ROUTE(code)];
}

static int
pending_for(const struct route_v *r)
{
	return rt.edit_route[0] && strcmp(rt.edit_route, r->name) == 0 && rt.edit_n == r->ntargets;
}

static void
draw_row(struct console *c, int code, int y, int cols, int sel)
{
	const struct route_v *r = &c->state->routes[ROW_ROUTE(code)];
	int ti = ROW_TARGET(code), total = 0, j, first = ti <= 0;
	const struct backend_v *b;
	struct row row;
	char t[64];

	row_begin(&row, y, cols, sel, rt_cols, (int)ARRAY_SIZE(rt_cols));
	row_cell(&row, C_NORMAL, first ? r->name : "");
	if (first)
		snprintf(t, sizeof t, "L%d %s", r->level, r->forced ? "forced" : "auto");
	else
		t[0] = '\0';
	row_cell(&row, r->forced ? C_WARN : r->level > 0 ? C_WARN : C_OK, t);
	if (ti < 0) {
		row_cell(&row, C_DIM, "(no targets)");
		return;
	}
	for (j = 0; j < r->ntargets; j++)
		total += MAX(r->targets[j].weight, 0);
	row_cell(&row, C_NORMAL, r->targets[ti].backend);
	snprintf(t, sizeof t, "%d", r->targets[ti].weight);
	row_cell(&row, C_NORMAL, t);
	if (pending_for(r))
		snprintf(t, sizeof t, "%d", rt.edit_w[ti]);
	else
		t[0] = '\0';
	row_cell(&row, C_ACCENT, t);
	if (total > 0)
		snprintf(t, sizeof t, "%.0f%%", 100.0 * MAX(r->targets[ti].weight, 0) / total);
	else
		snprintf(t, sizeof t, "-");
	row_cell(&row, C_NORMAL, t);
	row_cell(&row, C_WARN, r->targets[ti].canary ? "canary" : "");
	t[0] = '\0';
	if (first)
		hedge_delay_text(t, sizeof t, &r->hedge);
	row_cell(&row, r->hedge.on ? C_NORMAL : C_DIM, t);
	t[0] = '\0';
	if (first && r->hedge.on)
		fmt_rate(t, sizeof t, r->hedge.per_min[HV_WON]);
	row_cell(&row, C_NORMAL, t);
	t[0] = '\0';
	if (first && r->hedge.on)
		fmt_rate(t, sizeof t, r->hedge.per_min[HV_LOST]);
	row_cell(&row, C_NORMAL, t);
	b = state_backend(c->state, r->targets[ti].backend);
	if (b != NULL)
		row_cell(&row, breaker_colour(b->st), breaker_words(b->st, b->state));
	else
		row_cell(&row, C_DIM, "?");
}

/*
 * "hedge 800ms (max 1, same backend)  won 0.5 lost 1.0 failed 0.0 denied
 * 0.0/min" (per minute) or "hedge off".
 */
static void
draw_hedge(const struct route_v *r, int y, int cols)
{
	const struct hedge_v *h = &r->hedge;
	char d[16], pm[HV__COUNT][16];
	int k;

	if (!h->on) {
		ui_put(y, 1, cols - 1, C_DIM, "hedge off", 0);
		return;
	}
	hedge_delay_text(d, sizeof d, h);
	for (k = 0; k < HV__COUNT; k++)
		fmt_rate(pm[k], sizeof pm[k], h->per_min[k]);
	ui_printf(y, 1, cols - 1, C_NORMAL, 0,
		  "hedge %s (max %d, %s backend)  won %s lost %s failed %s denied %s/min", d,
		  h->max_hedges, strcmp(h->targets, "other") == 0 ? "other" : "same", pm[HV_WON],
		  pm[HV_LOST], pm[HV_FAILED], pm[HV_DENIED]);
}

static void
draw_panel(struct console *c, const struct route_v *r, int y, int rows, int cols)
{
	char line[512], left[32] = "", w[256];
	size_t o = 0;
	int j;

	ui_fill(y, 0, cols, C_HEADER);
	if (r->forced) {
		if (r->forced_until > 0) {
			char d[24];

			fmt_duration(d, sizeof d, r->forced_until - c->now_wall, 0);
			snprintf(left, sizeof left, ", %s left", d);
		}
		snprintf(line, sizeof line, " %s  L%d forced by %s: %s%s   (auto L%d)  budget %dms",
			 r->name, r->level, r->forced_actor, r->forced_reason, left, r->auto_level,
			 r->budget_ms);
	} else {
		snprintf(line, sizeof line, " %s  L%d (auto)  budget %dms", r->name, r->level,
			 r->budget_ms);
	}
	ui_put(y, 0, cols, C_HEADER, line, 0);
	if (rows >= 3)
		draw_hedge(r, ++y, cols);
	if (!pending_for(r)) {
		ui_put(y + 1, 1, cols - 1, C_DIM, "+ / - change a weight, L force a level, A auto",
		       0);
		return;
	}
	w[0] = '\0';
	for (j = 0; j < r->ntargets && o < sizeof w; j++)
		o += (size_t)snprintf(w + o, sizeof w - o, "%s%s=%d", j ? " " : "",
				      r->targets[j].backend, rt.edit_w[j]);
	ui_printf(y + 1, 1, cols - 1, C_ACCENT, 0, "pending: %s   Enter apply   Esc drop", w);
}

static void
routes_draw(struct console *c, int top, int rows, int cols)
{
	const struct route_v *r;
	int y, i, ti, panel = rows >= 9 ? 3 : rows >= 8 ? 2 : 0;

	build(c);
	if (c->state == NULL) {
		ui_put(top + 1, 1, cols - 1, C_DIM, "waiting for the first snapshot ...", 0);
		return;
	}
	if (c->route_select[0]) {
		for (i = 0; i < rt.vis.n; i++) {
			if (strcmp(c->state->routes[ROW_ROUTE(rt.vis.idx[i])].name,
				   c->route_select) == 0) {
				rt.ls.sel = i;
				break;
			}
		}
		c->route_select[0] = '\0';
	}
	ui_printf(top, 1, cols - 1, C_NORMAL, 0, "routes %d", c->state->nroutes);
	ui_header(top + 1, cols, rt_cols, (int)ARRAY_SIZE(rt_cols));
	rt.page = MAX(rows - 2 - panel, 1);
	listsel_clamp(&rt.ls, rt.vis.n, rt.page);
	for (i = rt.ls.top, y = top + 2; i < rt.vis.n && y < top + 2 + rt.page; i++, y++)
		draw_row(c, rt.vis.idx[i], y, cols, i == rt.ls.sel);
	if (rt.vis.n == 0)
		ui_put(top + 2, 1, cols - 1, C_DIM,
		       c->state->nroutes ? "no route matches the filter" : "no routes", 0);
	r = selected(c, &ti);
	if (panel && r != NULL)
		draw_panel(c, r, top + rows - panel, panel, cols);
}

static int
weights_check(struct form *f, struct console *c)
{
	const struct route_v *r = state_route(c->state, f->subject);
	size_t o;
	int j;

	if (r == NULL || r->ntargets != rt.edit_n) {
		snprintf(f->error, sizeof f->error, "route %s changed; edit again", f->subject);
		return 1;
	}
	o = (size_t)snprintf(f->summary, sizeof f->summary,
			     "Set the weights of route %s:", f->subject);
	for (j = 0; j < r->ntargets && o < sizeof f->summary; j++)
		o += (size_t)snprintf(f->summary + o, sizeof f->summary - o, " %s %d -> %d",
				      r->targets[j].backend, r->targets[j].weight, rt.edit_w[j]);
	return 0;
}

static void
weights_apply(struct form *f, struct console *c)
{
	const struct route_v *r = state_route(c->state, f->subject);
	cJSON *o = cJSON_CreateObject(), *w;
	char path[256], label[320], *seg = client_escape(f->subject), *body;
	int j;

	w = cJSON_AddObjectToObject(o, "weights");
	for (j = 0; r != NULL && j < r->ntargets && j < rt.edit_n; j++)
		cJSON_AddNumberToObject(w, r->targets[j].backend, rt.edit_w[j]);
	body = cJSON_PrintUnformatted(o);
	snprintf(path, sizeof path, "/v1/routes/%s/weights", seg);
	snprintf(label, sizeof label, "weights %s", f->subject);
	console_send(c, label, "PUT", path, body);
	rt.edit_route[0] = '\0';
	cJSON_free(body);
	cJSON_Delete(o);
	free(seg);
}

static int
level_check(struct form *f, struct console *c)
{
	char reason[512], ttl[64], until[64];
	int64_t ms;

	field_get(&f->fields[1], reason, sizeof reason);
	field_get(&f->fields[2], ttl, sizeof ttl);
	if (reason[0] == '\0') {
		snprintf(f->error, sizeof f->error,
			 "a reason is required (it goes to the audit log)");
		f->focus = 1;
		return 1;
	}
	if (ttl[0] != '\0' && (fmt_parse_duration(ttl, &ms) != 0 || ms < 1000)) {
		snprintf(f->error, sizeof f->error,
			 "TTL: seconds (3600) or a duration (30m, 2h), at least 1 s");
		f->focus = 2;
		return 1;
	}
	if (ttl[0] != '\0') {
		char d[32];

		fmt_duration(d, sizeof d, ms, 0);
		snprintf(until, sizeof until, "for %s", d);
	} else {
		snprintf(until, sizeof until, "until released");
	}
	snprintf(f->summary, sizeof f->summary, "Force route %s to %s, %s. Reason: %s", f->subject,
		 level_choices[f->fields[0].choice], until, reason);
	if (f->fields[0].choice == 3)
		snprintf(f->again, sizeof f->again,
			 "L3 is the async queue: callers get 202 and fetch their answer later. "
			 "Press y again to force L3 (n cancels).");
	return 0;
}

static void
level_apply(struct form *f, struct console *c)
{
	cJSON *o = cJSON_CreateObject();
	char reason[512], ttl[64], path[256], label[320], *seg = client_escape(f->subject), *body;
	int64_t ms;

	field_get(&f->fields[1], reason, sizeof reason);
	field_get(&f->fields[2], ttl, sizeof ttl);
	cJSON_AddNumberToObject(o, "level", f->fields[0].choice);
	cJSON_AddStringToObject(o, "reason", reason);
	if (ttl[0] != '\0' && fmt_parse_duration(ttl, &ms) == 0)
		cJSON_AddNumberToObject(o, "ttl_s", (double)(ms / 1000));
	body = cJSON_PrintUnformatted(o);
	snprintf(path, sizeof path, "/v1/routes/%s/level", seg);
	snprintf(label, sizeof label, "force %s to L%d", f->subject, f->fields[0].choice);
	console_send(c, label, "PUT", path, body);
	cJSON_free(body);
	cJSON_Delete(o);
	free(seg);
}

static int
release_check(struct form *f, struct console *c)
{
	const struct route_v *r = state_route(c->state, f->subject);

	if (r != NULL && r->forced)
		snprintf(f->summary, sizeof f->summary,
			 "Release route %s to automatic level control (now L%d forced by %s; "
			 "auto is L%d).",
			 f->subject, r->forced_lvl, r->forced_actor, r->auto_level);
	else
		snprintf(f->summary, sizeof f->summary,
			 "Release route %s to automatic level control (it is not forced now).",
			 f->subject);
	return 0;
}

static void
release_apply(struct form *f, struct console *c)
{
	char path[256], label[320], *seg = client_escape(f->subject);

	snprintf(path, sizeof path, "/v1/routes/%s/level", seg);
	snprintf(label, sizeof label, "release %s to auto", f->subject);
	console_send(c, label, "DELETE", path, NULL);
	free(seg);
}

void
routes_level_form(struct console *c, const struct route_v *r)
{
	struct form f;

	memset(&f, 0, sizeof f);
	snprintf(f.title, sizeof f.title, "Force level: %s", r->name);
	snprintf(f.subject, sizeof f.subject, "%s", r->name);
	f.nfields = 3;
	snprintf(f.fields[0].label, sizeof f.fields[0].label, "Level");
	f.fields[0].kind = FIELD_CHOICE;
	f.fields[0].choices = level_choices;
	f.fields[0].nchoices = (int)ARRAY_SIZE(level_choices);
	/* L2 (rules only) is what an incident needs; L3 changes the callers' contract. */
	f.fields[0].choice = 2;
	snprintf(f.fields[0].hint, sizeof f.fields[0].hint, "0-3, arrows");
	snprintf(f.fields[1].label, sizeof f.fields[1].label, "Reason");
	snprintf(f.fields[1].hint, sizeof f.fields[1].hint, "required");
	snprintf(f.fields[2].label, sizeof f.fields[2].label, "TTL");
	snprintf(f.fields[2].hint, sizeof f.fields[2].hint, "optional: 3600, 30m");
	f.check = level_check;
	f.apply = level_apply;
	f.reopen_on_400 = 1;
	console_form(c, &f);
}

static void
open_simple(struct console *c, const char *title, const char *route,
	    int (*check)(struct form *, struct console *),
	    void (*apply)(struct form *, struct console *))
{
	struct form f;

	memset(&f, 0, sizeof f);
	snprintf(f.title, sizeof f.title, "%s: %s", title, route);
	snprintf(f.subject, sizeof f.subject, "%s", route);
	f.check = check;
	f.apply = apply;
	console_form(c, &f);
}

static enum next
routes_key(struct console *c, int key)
{
	const struct route_v *r;
	int ti, j, out[MODEL_TARGETS_MAX];

	if (c->state == NULL)
		return NEXT_PASS;
	build(c);
	if (listsel_key(&rt.ls, key, rt.vis.n, MAX(rt.page, 1)))
		return NEXT_DONE;
	r = selected(c, &ti);
	switch (key) {
	case K_ESC:
		if (!rt.edit_route[0])
			return NEXT_PASS;
		rt.edit_route[0] = '\0';
		console_msg(c, 0, "pending weights dropped");
		return NEXT_DONE;
	case '+':
	case '=':
	case '-':
		if (r == NULL || ti < 0 || !console_can_operate(c))
			return NEXT_DONE;
		if (!pending_for(r)) {
			snprintf(rt.edit_route, sizeof rt.edit_route, "%s", r->name);
			rt.edit_n = r->ntargets;
			for (j = 0; j < r->ntargets; j++)
				rt.edit_w[j] = r->targets[j].weight;
		}
		if (weights_step(rt.edit_w, rt.edit_n, ti, key == '-' ? -1 : 1, out) != 0) {
			console_msg(c, 1, "%s: no further step", r->targets[ti].backend);
			return NEXT_DONE;
		}
		memcpy(rt.edit_w, out, (size_t)rt.edit_n * sizeof out[0]);
		return NEXT_DONE;
	case K_ENTER:
		if (r == NULL)
			return NEXT_DONE;
		if (!pending_for(r)) {
			console_msg(c, 1, "nothing to apply: change a weight with + / - first");
			return NEXT_DONE;
		}
		if (!console_can_operate(c))
			return NEXT_DONE;
		open_simple(c, "Weights", r->name, weights_check, weights_apply);
		return NEXT_DONE;
	case 'L':
		if (r != NULL && console_can_operate(c))
			routes_level_form(c, r);
		return NEXT_DONE;
	case 'w':
		if (r != NULL)
			why_open(c, r->name);
		return NEXT_DONE;
	case 'A':
		if (r != NULL && console_can_operate(c))
			open_simple(c, "Release to auto", r->name, release_check, release_apply);
		return NEXT_DONE;
	default:
		return NEXT_PASS;
	}
}

const struct screen screen_routes = {
	.name = "Routes",
	.help = routes_help,
	.want = 0,
	.draw = routes_draw,
	.key = routes_key,
	.hints = "j/k  w why  / filter",
	.op_hints = "+/- weight  Enter apply  L level  A auto",
};
