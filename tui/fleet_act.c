/*
 * fleet_act: L / A on a route fanned out over the fleet (the CLI's path,
 * fleet_cli.h): the form, the confirmation page, sending, the per-host
 * result and retries of the failed hosts (see fleet_console_int.h).
 */
#include "fleet_console_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "util.h"

struct fleet_act fleet_act;

static const char *const level_choices[] = {"L0", "L1", "L2", "L3"};
static const char *const scope_choices[] = {"all hosts", "a group", "these hosts"};
static const char *const breaker_choices[] = {"open", "closed", "auto"};

/*
 * The form's first scope field: L has level, reason, TTL before it; W
 * weights, reason; B backend, state, reason; A nothing.
 */
static int
act_scope_field(void)
{
	static const int base[] = {[FLEET_ACT_LEVEL] = 3,
				   [FLEET_ACT_RELEASE] = 0,
				   [FLEET_ACT_WEIGHTS] = 2,
				   [FLEET_ACT_BREAKER] = 3};

	return base[fleet_act.kind];
}

/* "b1=3 b2=1" (spaces or commas) into fo; 0, or -1 with why in err. */
static int
weights_build(const char *text, char *err, size_t errsz)
{
	char buf[FIELD_TEXT_MAX], *pairs[32], *save = NULL, *t;
	int n = 0;

	snprintf(buf, sizeof buf, "%s", text);
	for (t = strtok_r(buf, " ,", &save); t != NULL && n < (int)ARRAY_SIZE(pairs);
	     t = strtok_r(NULL, " ,", &save))
		pairs[n++] = t;
	return fleet_fanout_weights(&fleet_act.fo, fleet_act.route, (const char *const *)pairs, n,
				    fleet_act.reason, err, errsz);
}

/* "Set weights of route R to B1=3 B2=1" from the form's first field. */
static void
act_weights_desc(struct form *f)
{
	char text[FIELD_TEXT_MAX];

	field_get(&f->fields[0], text, sizeof text);
	snprintf(fleet_act.desc, sizeof fleet_act.desc, "Set weights of route %.*s to %.*s",
		 (int)sizeof fleet_act.route, fleet_act.route, 900, text);
}

/* The request for the form's fields; 0, or 1 with the form's error set. */
static int
act_build(struct form *f)
{
	char text[FIELD_TEXT_MAX], err[512];

	fleet_fanout_free(&fleet_act.fo);
	if (fleet_act.kind == FLEET_ACT_LEVEL || fleet_act.kind == FLEET_ACT_RELEASE) {
		fleet_fanout_level(&fleet_act.fo, fleet_act.route,
				   fleet_act.kind == FLEET_ACT_RELEASE ? -1 : fleet_act.level,
				   fleet_act.reason, fleet_act.ttl_s);
		return 0;
	}
	field_get(&f->fields[0], text, sizeof text);
	if (fleet_act.kind == FLEET_ACT_WEIGHTS) {
		if (weights_build(text, err, sizeof err) == 0)
			return 0;
	} else {
		if (text[0] == '\0' || strlen(text) >= sizeof fleet_act.route)
			snprintf(err, sizeof err, "name the backend");
		else if (fleet_fanout_breaker(&fleet_act.fo, text,
					      breaker_choices[f->fields[1].choice],
					      fleet_act.reason, err, sizeof err) == 0) {
			memcpy(fleet_act.route, text, strlen(text) + 1);
			return 0;
		}
	}
	snprintf(f->error, sizeof f->error, "%s", err);
	f->focus = 0;
	return 1;
}

static int
act_check(struct form *f, struct console *c)
{
	char who[FIELD_TEXT_MAX], ttl[64] = "", err[512], *p;
	int base = act_scope_field(), scope, i, o;
	int64_t ttl_ms = 0;

	(void)c;
	fleet_act.ttl_s = 0;
	fleet_act.reason[0] = '\0';
	if (fleet_act.kind == FLEET_ACT_WEIGHTS)
		field_get(&f->fields[1], fleet_act.reason, sizeof fleet_act.reason);
	else if (fleet_act.kind == FLEET_ACT_BREAKER)
		field_get(&f->fields[2], fleet_act.reason, sizeof fleet_act.reason);
	if (fleet_act.kind == FLEET_ACT_LEVEL) {
		fleet_act.level = f->fields[0].choice;
		field_get(&f->fields[1], fleet_act.reason, sizeof fleet_act.reason);
		for (p = fleet_act.reason; *p == ' '; p++)
			;
		if (*p == '\0') {
			snprintf(f->error, sizeof f->error, "a reason is required");
			f->focus = 1;
			return 1;
		}
		field_get(&f->fields[2], ttl, sizeof ttl);
		if (ttl[0] != '\0' && (fmt_parse_duration(ttl, &ttl_ms) != 0 || ttl_ms < 1000)) {
			snprintf(f->error, sizeof f->error,
				 "TTL: seconds or a duration like 30m, or empty (got \"%s\")", ttl);
			f->focus = 2;
			return 1;
		}
		fleet_act.ttl_s = ttl_ms / 1000;
	}
	scope = f->fields[base].choice;
	field_get(&f->fields[base + 1], who, sizeof who);
	if (scope > 0 && who[0] == '\0') {
		snprintf(f->error, sizeof f->error, "%s",
			 scope == 1 ? "name the group"
				    : "name the hosts (H1,H2), or mark them with Space on a "
				      "route's hosts");
		f->focus = base + 1;
		return 1;
	}
	if (fleet_select(fleet_fc.f, scope == 1 ? who : NULL, scope == 2 ? who : NULL,
			 fleet_act.sel, err, sizeof err) != 0) {
		snprintf(f->error, sizeof f->error, "%s", err);
		f->focus = base + 1;
		return 1;
	}
	if (scope == 0)
		snprintf(fleet_act.scope, sizeof fleet_act.scope, "all hosts");
	else
		snprintf(fleet_act.scope, sizeof fleet_act.scope, "%s %s",
			 scope == 1 ? "group" : "hosts", who);
	fleet_action_id_new(fleet_act.aid, sizeof fleet_act.aid);
	for (i = 0, fleet_act.nsel = 0; i < fleet_fc.f->n; i++)
		fleet_act.nsel += fleet_act.sel[i];
	if (act_build(f) != 0)
		return 1;
	if (fleet_act.kind == FLEET_ACT_RELEASE)
		snprintf(fleet_act.desc, sizeof fleet_act.desc, "Release route %s to auto",
			 fleet_act.route);
	else if (fleet_act.kind == FLEET_ACT_LEVEL)
		snprintf(fleet_act.desc, sizeof fleet_act.desc, "Force route %s to L%d",
			 fleet_act.route, fleet_act.level);
	else if (fleet_act.kind == FLEET_ACT_WEIGHTS)
		act_weights_desc(f);
	else
		snprintf(fleet_act.desc, sizeof fleet_act.desc, "Breaker %s to %s", fleet_act.route,
			 breaker_choices[f->fields[1].choice]);
	o = snprintf(f->summary, sizeof f->summary, "%s on %d host%s (%s):\n", fleet_act.desc,
		     fleet_act.nsel, fleet_act.nsel == 1 ? "" : "s", fleet_act.scope);
	pthread_mutex_lock(&fleet_fc.mu);
	for (i = 0, p = f->summary; i < fleet_fc.f->n && o < (int)sizeof f->summary; i++) {
		if (!fleet_act.sel[i])
			continue;
		o += snprintf(p + o, sizeof f->summary - (size_t)o, "%s%s%s",
			      o > 0 && p[o - 1] != '\n' ? ", " : "  ", fleet_fc.f->hosts[i].name,
			      fleet_fc.h[i].seen && !fleet_fc.h[i].up ? " (down now)" : "");
	}
	pthread_mutex_unlock(&fleet_fc.mu);
	if (o < (int)sizeof f->summary && fleet_act.kind != FLEET_ACT_LEVEL &&
	    fleet_act.reason[0] != '\0')
		o += snprintf(p + o, sizeof f->summary - (size_t)o, "\nReason: %s",
			      fleet_act.reason);
	if (o < (int)sizeof f->summary && fleet_act.kind == FLEET_ACT_LEVEL)
		o += snprintf(p + o, sizeof f->summary - (size_t)o, "\nReason: %s\nTTL: %s",
			      fleet_act.reason, ttl[0] ? ttl : "none (until released)");
	if (o < (int)sizeof f->summary)
		snprintf(p + o, sizeof f->summary - (size_t)o, "\nAction id: %s", fleet_act.aid);
	return 0;
}

static void
act_field(struct field *fl, const char *label, const char *hint)
{
	memset(fl, 0, sizeof *fl);
	snprintf(fl->label, sizeof fl->label, "%s", label);
	snprintf(fl->hint, sizeof fl->hint, "%s", hint);
	fl->kind = FIELD_TEXT;
}

/* A choice field (<- -> moves), `sel` chosen first. */
static void
act_choice(struct field *fl, const char *label, const char *const *choices, int n, int sel)
{
	act_field(fl, label, "<- ->");
	fl->kind = FIELD_CHOICE;
	fl->choices = choices;
	fl->nchoices = n;
	fl->choice = sel;
}

void
fleet_act_open(enum fleet_act_kind kind, const char *name, const int *mark)
{
	struct form *f = &fleet_act.form;
	char marked[FIELD_TEXT_MAX];
	size_t o = 0;
	int i, base;

	fleet_fanout_free(&fleet_act.fo);
	memset(f, 0, sizeof *f);
	static const char *const titles[] = {[FLEET_ACT_LEVEL] = "Force a level:",
					     [FLEET_ACT_RELEASE] = "Release to auto:",
					     [FLEET_ACT_WEIGHTS] = "Set weights:",
					     [FLEET_ACT_BREAKER] = "Breaker:"};

	fleet_act.kind = kind;
	snprintf(fleet_act.route, sizeof fleet_act.route, "%s", name);
	snprintf(f->title, sizeof f->title, "%s %s on the fleet", titles[kind], name);
	if (kind == FLEET_ACT_WEIGHTS) {
		act_field(&f->fields[0], "Weights", "B1=3 B2=1");
		act_field(&f->fields[1], "Reason", "optional");
	} else if (kind == FLEET_ACT_BREAKER) {
		act_field(&f->fields[0], "Backend", "name");
		field_set(&f->fields[0], name);
		act_choice(&f->fields[1], "State", breaker_choices, 3, 0);
		act_field(&f->fields[2], "Reason", "optional");
	} else if (kind == FLEET_ACT_LEVEL) {
		act_choice(&f->fields[0], "Level", level_choices, 4, 2);
		act_field(&f->fields[1], "Reason", "required");
		act_field(&f->fields[2], "TTL", "e.g. 30m; empty: none");
	}
	base = act_scope_field();
	act_choice(&f->fields[base], "Scope", scope_choices, 3, 0);
	act_field(&f->fields[base + 1], "Group / hosts", "G, or H1,H2");
	marked[0] = '\0';
	for (i = 0; i < fleet_fc.f->n && o < sizeof marked; i++)
		if (mark[i])
			o += (size_t)snprintf(marked + o, sizeof marked - o, "%s%s", o ? "," : "",
					      fleet_fc.f->hosts[i].name);
	if (o > 0) {
		f->fields[base].choice = 2;
		field_set(&f->fields[base + 1], marked);
	}
	f->nfields = base + 2;
	f->focus = kind == FLEET_ACT_LEVEL ? 1 : kind == FLEET_ACT_BREAKER && name[0] ? 1 : 0;
	f->check = act_check;
	form_open(f, NULL);
	f->focus = kind == FLEET_ACT_LEVEL ? 1 : kind == FLEET_ACT_BREAKER && name[0] ? 1 : 0;
}

/* Send the action to the hosts with sel[i] (the poller paused meanwhile). */
static void
act_send(const int *sel)
{
	struct client **cp = xcalloc((size_t)fleet_fc.f->n, sizeof *cp);
	const char **why = xcalloc((size_t)fleet_fc.f->n, sizeof *why);
	int i, n = 0;

	for (i = 0; i < fleet_fc.f->n; i++) {
		cp[i] = fleet_fc.h[i].init_error == NULL ? &fleet_fc.h[i].c : NULL;
		why[i] = fleet_fc.h[i].init_error;
		n += sel[i];
	}
	ui_printf(LINES - 1, 0, COLS, C_MSG_OK, FMT_PAD, " sending to %d host%s ...", n,
		  n == 1 ? "" : "s");
	refresh();
	fleet_pause_poller(1);
	fleet_fanout_send(fleet_fc.f, cp, why, sel, &fleet_act.fo, fleet_act.aid, fleet_act.res);
	fleet_act.failed = 0;
	fleet_act.tries++;
	for (i = 0; i < fleet_fc.f->n; i++) {
		if (sel[i])
			fleet_act.try_of[i] = fleet_act.tries;
		fleet_act.failed += fleet_act.sel[i] && !fleet_act.res[i].applied;
		/* A host in backoff that took the action is back: refresh it now. */
		if (sel[i] && fleet_act.res[i].applied)
			atomic_store(&fleet_fc.h[i].kick, 1);
	}
	fleet_pause_poller(0);
	free(cp);
	free(why);
}

void
fleet_act_start(int back)
{
	memset(fleet_act.res, 0, (size_t)fleet_fc.f->n * sizeof *fleet_act.res);
	fleet_act.tries = 0;
	fleet_act.back = back;
	act_send(fleet_act.sel);
}

void
fleet_act_retry(void)
{
	int *sel = xcalloc((size_t)fleet_fc.f->n, sizeof *sel), i;

	for (i = 0; i < fleet_fc.f->n; i++)
		sel[i] = fleet_act.sel[i] && !fleet_act.res[i].applied;
	act_send(sel);
	free(sel);
}

static const struct colspec result_cols[] = {
	{"HOST", 14, FMT_PAD, 0, 0},
	{"RESULT", 0, 0, 0, 10},
};

void
fleet_act_draw_result(int top, int rows, int cols)
{
	int y = top, i, bottom = top + rows, applied = fleet_act.nsel - fleet_act.failed;
	char text[600];
	struct row row;

	ui_printf(y++, 0, cols, C_ACCENT, 0, " action %s", fleet_act.aid);
	ui_printf(y++, 0, cols, C_NORMAL, 0, " %s on %d hosts (%s), try %d", fleet_act.desc,
		  fleet_act.nsel, fleet_act.scope, fleet_act.tries);
	y++;
	ui_header(y++, cols, result_cols, (int)ARRAY_SIZE(result_cols));
	for (i = 0; i < fleet_fc.f->n && y < bottom - 2; i++) {
		if (!fleet_act.sel[i])
			continue;
		row_begin(&row, y++, cols, 0, result_cols, (int)ARRAY_SIZE(result_cols));
		row_cell(&row, C_NORMAL, fleet_fc.f->hosts[i].name);
		if (fleet_act.tries > 1)
			snprintf(text, sizeof text, "%s (try %d)", fleet_act.res[i].text,
				 fleet_act.try_of[i]);
		else
			snprintf(text, sizeof text, "%s", fleet_act.res[i].text);
		row_cell(&row, fleet_act.res[i].applied ? C_OK : C_BAD, text);
	}
	y++;
	ui_printf(MIN(y, bottom - 1), 0, cols, fleet_act.failed ? C_BAD : C_OK, 0,
		  " %d applied, %d failed%s", applied, fleet_act.failed,
		  fleet_act.failed ? "  (r retries the failed hosts, same action id)" : "");
}
