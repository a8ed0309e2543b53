/*
 * model_diag: the daemon's diagnosis (GET /v1/diagnose) as plain structs,
 * the Overview's one line from its first cause, and the Why panel's text
 * (see model.h). Pure; parsed on the fetch thread, drawn by the UI thread,
 * tested with literals.
 *
 * The daemon's cause sentences read "71 % of degraded calls: REASON on
 * BACKEND (EVIDENCE) — began HH:MM:SS" (a breaker: "... breaker B OPEN
 * since T (WHY) — N calls answered without it"): the words between the
 * share and the dash are the cause, the outermost parentheses after them
 * its evidence. Another sentence falls back on the fields.
 */
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fmt.h"
#include "model_json.h"
#include "util.h"

#define SHARE_PREFIX "of degraded calls: "
#define DASH_SEP     " \xe2\x80\x94 " /* " — " */

static void
parse_cause(const cJSON *it, struct diag_cause_v *c)
{
	const cJSON *ev = model_json_get(it, "evidence"), *q = model_json_get(it, "query");

	c->share = model_json_num(it, "share");
	model_json_str(it, "reason", c->reason, sizeof c->reason);
	model_json_str(it, "backend", c->backend, sizeof c->backend);
	model_json_str(it, "phase", c->phase, sizeof c->phase);
	c->since = model_json_time(it, "since");
	model_json_str(it, "text", c->text, sizeof c->text);
	c->calls = model_json_int(ev, "calls");
	c->previous_calls = model_json_int(ev, "previous_calls");
	model_json_str(ev, "breaker_event", c->breaker_event, sizeof c->breaker_event);
	c->query =
		cJSON_IsString(q) && q->valuestring[0] ? model_json_dup_big(q->valuestring) : NULL;
}

static void
parse_route(const cJSON *it, struct diag_route_v *r)
{
	const cJSON *arr, *x;

	model_json_str(it, "route", r->route, sizeof r->route);
	r->service = model_json_num(it, "service_availability");
	r->smart = model_json_num(it, "smart_availability");
	r->calls = model_json_int(it, "calls");
	r->degraded = model_json_int(it, "degraded_calls");
	r->episode_start = model_json_time(it, "episode_start");

	arr = model_json_get(it, "causes");
	r->causes = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *r->causes);
	cJSON_ArrayForEach(x, arr)
	{
		if (cJSON_IsObject(x))
			parse_cause(x, &r->causes[r->ncauses++]);
	}
	arr = model_json_get(it, "contrasts");
	r->contrasts = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *r->contrasts);
	cJSON_ArrayForEach(x, arr)
	{
		struct diag_contrast_v *k = &r->contrasts[r->ncontrasts++];

		model_json_str(x, "factor", k->factor, sizeof k->factor);
		model_json_str(x, "text", k->text, sizeof k->text);
	}
	arr = model_json_get(it, "changes");
	r->changes = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *r->changes);
	cJSON_ArrayForEach(x, arr)
	{
		struct diag_change_v *k = &r->changes[r->nchanges++];

		k->at = model_json_time(x, "at");
		model_json_str(x, "kind", k->kind, sizeof k->kind);
		model_json_str(x, "subject", k->subject, sizeof k->subject);
		model_json_str(x, "actor", k->actor, sizeof k->actor);
		model_json_str(x, "detail", k->detail, sizeof k->detail);
	}
	arr = model_json_get(it, "suggestions");
	r->suggestions = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *r->suggestions);
	cJSON_ArrayForEach(x, arr)
	{
		struct diag_suggestion_v *k = &r->suggestions[r->nsuggestions++];

		model_json_str(x, "text", k->text, sizeof k->text);
		model_json_str(x, "action", k->action, sizeof k->action);
	}
}

int
model_parse_diagnose(const char *json, size_t len, struct diag_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *routes, *win, *it;
	struct diag_v *d;

	if (model_json_root(json, len, &root, cause) != 0)
		return MODEL_E_PARSE;
	if (model_json_array(root, "routes", &routes, cause) != 0) {
		cJSON_Delete(root);
		return MODEL_E_PARSE;
	}
	d = xcalloc(1, sizeof *d);
	win = model_json_get(root, "window");
	d->from = model_json_time(win, "from");
	d->to = model_json_time(win, "to");
	d->truncated = cJSON_IsTrue(model_json_get(win, "truncated"));
	d->routes = xcalloc((size_t)cJSON_GetArraySize(routes) + 1, sizeof *d->routes);
	cJSON_ArrayForEach(it, routes)
	{
		if (cJSON_IsObject(it))
			parse_route(it, &d->routes[d->nroutes++]);
	}
	cJSON_Delete(root);
	*out = d;
	return 0;
}

void
diag_free(struct diag_v *d)
{
	int i, j;

	if (d == NULL)
		return;
	for (i = 0; i < d->nroutes; i++) {
		struct diag_route_v *r = &d->routes[i];

		for (j = 0; j < r->ncauses; j++)
			free(r->causes[j].query);
		free(r->causes);
		free(r->contrasts);
		free(r->changes);
		free(r->suggestions);
	}
	free(d->routes);
	free(d);
}

const struct diag_route_v *
diag_route(const struct diag_v *d, const char *route)
{
	int i;

	for (i = 0; d != NULL && i < d->nroutes; i++)
		if (strcmp(d->routes[i].route, route) == 0)
			return &d->routes[i];
	return NULL;
}

/* The last occurrence of needle in s, or NULL. */
static const char *
last_of(const char *s, const char *needle)
{
	const char *p, *hit = NULL;

	for (p = strstr(s, needle); p != NULL; p = strstr(p + 1, needle))
		hit = p;
	return hit;
}

void
diag_cause_words(const struct diag_cause_v *c, char *out, size_t outsz)
{
	const char *p = strstr(c->text, SHARE_PREFIX), *end;
	size_t n;

	if (p == NULL) {
		snprintf(out, outsz, "%s%s%s", c->reason[0] ? c->reason : "unknown",
			 c->backend[0] ? " on " : "", c->backend);
		return;
	}
	p += strlen(SHARE_PREFIX);
	end = last_of(p, DASH_SEP);
	n = end != NULL ? (size_t)(end - p) : strlen(p);
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	/* Never end inside a UTF-8 sequence (a cut at outsz). */
	model_json_copy(out, outsz, out);
}

void
diag_cause_evidence(const struct diag_cause_v *c, char *out, size_t outsz)
{
	char words[512];
	const char *p;

	out[0] = '\0';
	diag_cause_words(c, words, sizeof words);
	p = strstr(words, " (");
	if (p != NULL)
		fmt_paren_inner(p + 1, out, outsz);
}

static int
pct(double share)
{
	return isnan(share) ? 0 : (int)lround(share * 100.0);
}

int
diag_why(const struct diag_route_v *r, int utf8, char *out, size_t outsz)
{
	const struct diag_cause_v *c;
	char ev[512], sh[512];

	out[0] = '\0';
	if (r == NULL || r->ncauses == 0)
		return 0;
	c = &r->causes[0];
	diag_cause_evidence(c, ev, sizeof ev);
	cause_short(ev, utf8, sh, sizeof sh);
	snprintf(out, outsz, "%d%% %s%s%s%s%s%s", pct(c->share),
		 c->reason[0] ? c->reason : "unknown", c->backend[0] ? " on " : "", c->backend,
		 sh[0] ? " (" : "", sh, sh[0] ? ")" : "");
	return 1;
}

static void add(struct diag_lines *l, enum diag_line_kind kind, int indent, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
add(struct diag_lines *l, enum diag_line_kind kind, int indent, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->v = xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
	}
	l->v[l->n].kind = kind;
	l->v[l->n].indent = indent;
	l->v[l->n].text = s;
	l->n++;
}

static void
avail(char *out, size_t outsz, double v)
{
	if (isnan(v))
		snprintf(out, outsz, "-");
	else
		snprintf(out, outsz, "%.1f%%", v * 100.0);
}

static void
first_cause(const struct diag_route_v *r, void (*clock_text)(char *, size_t, int64_t),
	    struct diag_lines *l)
{
	const struct diag_cause_v *c = &r->causes[0];
	char when[32] = "", words[512], ev[512];

	if (c->since > 0 && clock_text != NULL)
		clock_text(when, sizeof when, c->since);
	add(l, DL_HEAD, 0, "first cause");
	diag_cause_words(c, words, sizeof words);
	add(l, DL_MAIN, 1, "%d%% %s%s%s", pct(c->share), c->reason[0] ? c->reason : "unknown",
	    c->backend[0] ? " on " : "", c->backend);
	add(l, DL_TEXT, 3, "phase %s  backend %s%s%s", c->phase[0] ? c->phase : "-",
	    c->backend[0] ? c->backend : "-", when[0] ? "  since " : "", when);
	diag_cause_evidence(c, ev, sizeof ev);
	add(l, DL_TEXT, 3, "evidence: %s", ev[0] ? ev : words);
	if (c->breaker_event[0])
		add(l, DL_TEXT, 3, "breaker: %s", c->breaker_event);
	if (c->calls >= 0 && c->previous_calls == 0)
		add(l, DL_TEXT, 3, "%d of %d degraded calls; none in the window before (new)",
		    c->calls, r->degraded);
	else if (c->calls >= 0 && c->previous_calls > 0)
		add(l, DL_TEXT, 3, "%d of %d degraded calls; %d in the window before", c->calls,
		    r->degraded, c->previous_calls);
	else if (c->calls >= 0)
		add(l, DL_TEXT, 3, "%d of %d degraded calls", c->calls, r->degraded);
	if (c->query != NULL)
		add(l, DL_DIM, 3, "proof (sqlite3): %s", c->query);
}

void
diag_lines_build(const struct diag_route_v *r, int64_t from, int64_t to,
		 void (*clock_text)(char *, size_t, int64_t), struct diag_lines *l)
{
	char a[32], b[32], when[32] = "", words[512];
	int i;

	diag_lines_free(l);
	avail(a, sizeof a, r->service);
	avail(b, sizeof b, r->smart);
	add(l, DL_TEXT, 1, "service %s  smart %s  %d of %d calls degraded", a, b,
	    MAX(r->degraded, 0), MAX(r->calls, 0));
	if (r->episode_start > 0 && clock_text != NULL) {
		clock_text(when, sizeof when, r->episode_start);
		add(l, DL_TEXT, 1, "episode since %s (first degraded minute after 5 healthy)",
		    when);
	} else {
		add(l, DL_TEXT, 1, "no episode: the last 5 minutes with calls were healthy");
	}
	(void)from;
	(void)to;
	if (r->ncauses == 0) {
		add(l, DL_DIM, 1, "no degraded call in the window");
	} else {
		first_cause(r, clock_text, l);
	}
	if (r->ncauses > 1) {
		add(l, DL_HEAD, 0, "other causes");
		for (i = 1; i < r->ncauses; i++) {
			diag_cause_words(&r->causes[i], words, sizeof words);
			add(l, DL_TEXT, 1, "%d%% %s", pct(r->causes[i].share), words);
		}
	}
	if (r->ncontrasts > 0) {
		add(l, DL_HEAD, 0, "failing vs succeeding attempts");
		for (i = 0; i < r->ncontrasts; i++)
			add(l, DL_TEXT, 1, "%s: %s", r->contrasts[i].factor, r->contrasts[i].text);
	}
	add(l, DL_HEAD, 0, r->episode_start > 0 ? "changes before the episode" : "changes");
	for (i = 0; i < r->nchanges; i++) {
		const struct diag_change_v *k = &r->changes[i];

		when[0] = '\0';
		if (k->at > 0 && clock_text != NULL)
			clock_text(when, sizeof when, k->at);
		add(l, DL_TEXT, 1, "%s %s %s%s%s%s%s", when[0] ? when : "-", k->kind,
		    k->subject[0] ? k->subject : "-", k->actor[0] ? " by " : "", k->actor,
		    k->detail[0] ? ": " : "", k->detail);
	}
	if (r->nchanges == 0)
		add(l, DL_DIM, 1,
		    r->episode_start > 0 ? "none in the 10 minutes before it began"
					 : "none in the window");
	add(l, DL_HEAD, 0, "advice (never applied by fusebox)");
	for (i = 0; i < r->nsuggestions; i++) {
		add(l, DL_TEXT, 1, "%s", r->suggestions[i].text);
		if (r->suggestions[i].action[0])
			add(l, DL_CMD, 3, "$ %s", r->suggestions[i].action);
	}
	if (r->nsuggestions == 0)
		add(l, DL_DIM, 1, "none the data supports");
}

void
diag_lines_free(struct diag_lines *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	memset(l, 0, sizeof *l);
}
