/*
 * screen_reviews: the human review queue, oldest due first — priority,
 * time left to the SLA (overdue in red), reason, confidence and input.
 * Enter opens an item: input, raw model output, parsed result, confidence
 * and the cross-check's answer. a approves, x rejects (with an optional
 * note), c corrects (a form with one field per result key, pre-filled; the
 * daemon validates against the route's schema and its 400 message is
 * shown), C claims, n goes to the next item. Every decision is confirmed
 * first (POST /v1/reviews/{id}/decision).
 *
 * The detail view is drawn straight from the last list snapshot; when the
 * item leaves the open queue (decided, here or elsewhere) the view says so.
 *
 * The rows, the forms and the requests they send are shared with the
 * fleet console's merged queue (fleet_reviews.c; screen_reviews.h).
 */
#include "screen_reviews.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client.h"
#include "fmt.h"
#include "util.h"

#define NOTE_FIELD_LABEL "(note)"

static struct {
	struct listsel ls;
	struct vislist vis;
	int page;
	int detail;	 /* the item view is open */
	int64_t open_id; /* its review id */
	int scroll;	 /* item view: first line shown */
	int lines;	 /* item view: lines at the last draw */
} rv;

static const char *const reviews_help[] = {
	"Reviews: the queue, oldest due first (red: past its SLA)",
	"Enter      open the selected item (input, outputs, cross-check)",
	"a          approve the model's result (confirm)",
	"c          correct: edit the result fields, then confirm",
	"x          reject, with an optional note (confirm)",
	"C          claim the item for yourself (confirm)",
	"n          next item",
	"Esc        back to the list",
	NULL,
};

static const struct colspec rv_cols[] = {
	{"ID", 6, FMT_RIGHT, 0, 0},   {"PRI", 6, FMT_PAD, 0, 0},      {"ROUTE", 12, FMT_PAD, 0, 0},
	{"STATE", 8, FMT_PAD, 0, 0},  {"DUE IN", 8, FMT_RIGHT, 0, 0}, {"REASON", 14, FMT_PAD, 0, 0},
	{"CONF", 5, FMT_RIGHT, 1, 0}, {"INPUT", 0, 0, 0, 20},
};

/* The fleet's merged queue: the owning host first, the claimer before the input. */
static const struct colspec rv_cols_host[] = {
	{"HOST", 8, FMT_PAD, 0, 0},	 {"ID", 5, FMT_RIGHT, 0, 0},
	{"PRI", 6, FMT_PAD, 0, 0},	 {"ROUTE", 10, FMT_PAD, 0, 0},
	{"STATE", 8, FMT_PAD, 0, 0},	 {"DUE IN", 8, FMT_RIGHT, 0, 0},
	{"REASON", 14, FMT_PAD, 2, 0},	 {"CONF", 5, FMT_RIGHT, 1, 0},
	{"REVIEWER", 10, FMT_PAD, 0, 0}, {"INPUT", 0, 0, 0, 12},
};

static void
build(struct console *c)
{
	const char *f = console_filter(c, SCR_REVIEWS);
	int i;

	vislist_reset(&rv.vis);
	for (i = 0; c->reviews != NULL && i < c->reviews->n; i++) {
		const struct review_v *r = &c->reviews->v[i];
		const char *fields[] = {
			r->route,      r->reason, r->state, r->priority, r->input ? r->input : "",
			r->request_id, NULL};

		if (filter_match(f, fields))
			vislist_add(&rv.vis, i);
	}
}

static const struct review_v *
find_open(const struct console *c, int *vi)
{
	int i;

	for (i = 0; i < rv.vis.n; i++) {
		if (c->reviews->v[rv.vis.idx[i]].id == rv.open_id) {
			*vi = i;
			return &c->reviews->v[rv.vis.idx[i]];
		}
	}
	return NULL;
}

static void
due_text(int64_t now_wall, const struct review_v *r, char *out, size_t outsz, enum colour *col)
{
	int64_t left;

	if (r->due_at <= 0) {
		snprintf(out, outsz, "-");
		*col = C_NORMAL;
		return;
	}
	left = r->due_at - now_wall;
	fmt_duration(out, outsz, left, 0);
	*col = r->overdue || left < 0 ? C_BAD : left < 15 * 60 * 1000 ? C_WARN : C_NORMAL;
}

void
review_header_draw(int y, int cols, int with_host)
{
	if (with_host)
		ui_header(y, cols, rv_cols_host, (int)ARRAY_SIZE(rv_cols_host));
	else
		ui_header(y, cols, rv_cols, (int)ARRAY_SIZE(rv_cols));
}

void
review_row_draw(int y, int cols, int sel, const char *host, const struct review_v *r,
		int64_t now_wall)
{
	struct row row;
	char t[64];
	enum colour dc;

	if (host != NULL) {
		row_begin(&row, y, cols, sel, rv_cols_host, (int)ARRAY_SIZE(rv_cols_host));
		row_cell(&row, C_NORMAL, host);
	} else {
		row_begin(&row, y, cols, sel, rv_cols, (int)ARRAY_SIZE(rv_cols));
	}
	snprintf(t, sizeof t, "%lld", (long long)r->id);
	row_cell(&row, C_NORMAL, t);
	row_cell(&row, strcmp(r->priority, "high") == 0 ? C_WARN : C_NORMAL, r->priority);
	row_cell(&row, C_NORMAL, r->route);
	row_cell(&row, strcmp(r->state, "claimed") == 0 ? C_ACCENT : C_NORMAL, r->state);
	due_text(now_wall, r, t, sizeof t, &dc);
	row_cell(&row, dc, t);
	row_cell(&row, C_NORMAL, r->reason);
	if (isnan(r->confidence))
		snprintf(t, sizeof t, "-");
	else
		snprintf(t, sizeof t, "%.2f", r->confidence);
	row_cell(&row, C_NORMAL, t);
	if (host != NULL)
		row_cell(&row, r->reviewer[0] ? C_ACCENT : C_DIM,
			 r->reviewer[0] ? r->reviewer : "-");
	row_cell(&row, C_NORMAL, r->input ? r->input : "");
}

/* Item view lines are counted as they are produced; only visible ones are drawn. */
struct pen {
	int top, rows, cols, line;
};

static void
pen_line(struct pen *p, enum colour col, const char *text)
{
	int y = p->line - rv.scroll;

	if (y >= 0 && y < p->rows)
		ui_put(p->top + y, 1, p->cols - 1, col, text, 0);
	p->line++;
}

static void
pen_text(struct pen *p, enum colour col, const char *text)
{
	const char *s = text;
	char line[1024];

	if (text == NULL || *text == '\0') {
		pen_line(p, C_DIM, "(none)");
		return;
	}
	while (fmt_wrap(&s, p->cols - 3, line, sizeof line)) {
		char ind[1040];

		snprintf(ind, sizeof ind, "  %s", line);
		pen_line(p, col, ind);
	}
}

/* JSON text pretty-printed with two-space indents (the text as is when not JSON). */
static void
pen_json(struct pen *p, const char *json)
{
	cJSON *v;
	char *pretty, *q, *out;
	size_t n = 0;

	if (json == NULL) {
		pen_line(p, C_DIM, "  (none)");
		return;
	}
	v = cJSON_Parse(json);
	pretty = v != NULL ? cJSON_Print(v) : NULL;
	cJSON_Delete(v);
	if (pretty == NULL) {
		pen_text(p, C_NORMAL, json);
		return;
	}
	out = xmalloc(strlen(pretty) * 2 + 1);
	for (q = pretty; *q; q++) {
		if (*q == '\t' && q > pretty && q[-1] == ':') {
			out[n++] = ' ';
		} else if (*q == '\t') {
			out[n++] = ' ';
			out[n++] = ' ';
		} else {
			out[n++] = *q;
		}
	}
	out[n] = '\0';
	pen_text(p, C_NORMAL, out);
	free(out);
	cJSON_free(pretty);
}

static void
pen_section(struct pen *p, const char *title)
{
	char t[128];

	snprintf(t, sizeof t, "%s %s", fmt_is_ascii() ? "--" : "\xe2\x94\x80\xe2\x94\x80", title);
	pen_line(p, C_ACCENT, t);
}

static void
draw_detail(struct console *c, int top, int rows, int cols)
{
	const struct review_v *r;
	struct pen p = {top + 1, rows - 1, cols, 0};
	char due[32], created[32], line[512], conf[16];
	enum colour dc;
	int vi;

	r = c->reviews != NULL ? find_open(c, &vi) : NULL;
	ui_fill(top, 0, cols, C_HEADER);
	if (r == NULL) {
		ui_printf(top, 0, cols, C_HEADER, 0, " review #%lld", (long long)rv.open_id);
		ui_printf(top + 2, 1, cols - 1, C_WARN, 0,
			  "review #%lld is no longer in the open queue (decided?)   n next   Esc "
			  "back",
			  (long long)rv.open_id);
		return;
	}
	due_text(c->now_wall, r, due, sizeof due, &dc);
	ui_printf(top, 0, cols, C_HEADER, 0, " review #%lld  %s  priority %s  %s  due in %s",
		  (long long)r->id, r->route, r->priority, r->state, due);
	if (dc == C_BAD)
		ui_put(top, cols - 9, 9, C_MSG_ERR, " OVERDUE ", 0);
	if (rv.scroll < 0)
		rv.scroll = 0;
	fmt_clock(created, sizeof created, r->created_at, c->now_wall);
	if (isnan(r->confidence))
		snprintf(conf, sizeof conf, "-");
	else
		snprintf(conf, sizeof conf, "%.2f", r->confidence);
	snprintf(line, sizeof line, "reason %s   confidence %s   created %s   reviewer %s",
		 r->reason, conf, created, r->reviewer[0] ? r->reviewer : "-");
	pen_line(&p, C_NORMAL, line);
	snprintf(line, sizeof line, "request %s", r->request_id[0] ? r->request_id : "-");
	pen_line(&p, C_DIM, line);
	pen_section(&p, "Input");
	pen_text(&p, C_NORMAL, r->input);
	pen_section(&p, "Raw output");
	pen_text(&p, C_NORMAL, r->raw_output);
	pen_section(&p, "Parsed result");
	pen_json(&p, r->result);
	pen_section(&p, "Cross-check answer");
	pen_json(&p, r->alt_result);
	rv.lines = p.line;
}

static void
reviews_draw(struct console *c, int top, int rows, int cols)
{
	const char *err = console_ep_error(c, FETCH_REVIEWS);
	int y, i;

	build(c);
	if (rv.detail) {
		draw_detail(c, top, rows, cols);
		return;
	}
	if (err != NULL)
		ui_printf(top, 1, cols - 1, C_BAD, 0, "GET /v1/reviews: %s", err);
	else if (c->reviews != NULL)
		ui_printf(top, 1, cols - 1, C_NORMAL, 0, "open %d   pending %d   overdue %d",
			  c->reviews->n, c->reviews->pending, c->reviews->overdue);
	if (c->reviews != NULL && c->reviews->overdue > 0)
		ui_printf(top, cols - 12, 12, C_BAD, FMT_RIGHT, "%d OVERDUE ", c->reviews->overdue);
	review_header_draw(top + 1, cols, 0);
	rv.page = MAX(rows - 2, 1);
	listsel_clamp(&rv.ls, rv.vis.n, rv.page);
	for (i = rv.ls.top, y = top + 2; i < rv.vis.n && y < top + rows; i++, y++)
		review_row_draw(y, cols, i == rv.ls.sel, NULL, &c->reviews->v[rv.vis.idx[i]],
				c->now_wall);
	if (c->reviews == NULL && err == NULL)
		ui_put(top + 2, 1, cols - 1, C_DIM, "loading ...", 0);
	else if (rv.vis.n == 0 && c->reviews != NULL)
		ui_put(top + 2, 1, cols - 1, C_DIM,
		       c->reviews->n ? "no item matches the filter" : "the queue is empty", 0);
}

/* The item the keys act on: the open one in the item view, else the selected one. */
static const struct review_v *
current(struct console *c)
{
	int vi;

	if (c->reviews == NULL)
		return NULL;
	if (rv.detail)
		return find_open(c, &vi);
	if (rv.vis.n == 0)
		return NULL;
	listsel_clamp(&rv.ls, rv.vis.n, rv.page);
	return &c->reviews->v[rv.vis.idx[rv.ls.sel]];
}

/* The summary of a simple form, made when it opens from the item (check() has no queue). */
static char simple_summary[sizeof((struct form *)0)->summary];

static int
simple_check(struct form *f, struct console *c)
{
	(void)c;
	snprintf(f->summary, sizeof f->summary, "%s", simple_summary);
	return 0;
}

/*
 * The corrected result from the form: a field whose original value was a
 * string stays a string; any other field is parsed as JSON (a number, true,
 * null, an object), falling back to a string — the daemon has the schema
 * and answers 400 when the result does not fit it.
 */
static cJSON *
correct_result(const struct form *f)
{
	cJSON *o = cJSON_CreateObject(), *v;
	char text[FIELD_TEXT_MAX * 4 + 1];
	int i;

	for (i = 0; i < f->nfields; i++) {
		const struct field *fl = &f->fields[i];

		if (strcmp(fl->label, NOTE_FIELD_LABEL) == 0)
			continue;
		field_get(fl, text, sizeof text);
		if (strcmp(fl->hint, "string") == 0) {
			v = cJSON_CreateString(text);
		} else {
			v = cJSON_Parse(text);
			if (v == NULL)
				v = cJSON_CreateString(text);
		}
		cJSON_AddItemToObject(o, fl->label, v);
	}
	return o;
}

static int
correct_check(struct form *f, struct console *c)
{
	cJSON *o = correct_result(f);
	char *text = cJSON_PrintUnformatted(o);

	(void)c;
	snprintf(f->summary, sizeof f->summary,
		 "Correct review #%lld of route %s; the result becomes %s", (long long)f->id,
		 f->subject, text);
	cJSON_free(text);
	cJSON_Delete(o);
	return 0;
}

void
review_request(const struct form *f, char *path, size_t pathsz, char **body, char *label,
	       size_t labelsz)
{
	char verdict[16], note[512];
	cJSON *o;
	int i;

	*body = NULL;
	if (strcmp(f->extra, "Claim") == 0) {
		snprintf(path, pathsz, "/v1/reviews/%lld/claim", (long long)f->id);
		snprintf(label, labelsz, "claim review #%lld", (long long)f->id);
		return;
	}
	snprintf(verdict, sizeof verdict, "%s",
		 strcmp(f->extra, "Approve") == 0  ? "approve"
		 : strcmp(f->extra, "Reject") == 0 ? "reject"
						   : "correct");
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "verdict", verdict);
	if (strcmp(verdict, "correct") == 0)
		cJSON_AddItemToObject(o, "result", correct_result(f));
	for (i = 0; i < f->nfields; i++) {
		if (strcmp(f->fields[i].label, NOTE_FIELD_LABEL) != 0)
			continue;
		field_get(&f->fields[i], note, sizeof note);
		if (note[0])
			cJSON_AddStringToObject(o, "note", note);
	}
	*body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	snprintf(path, pathsz, "/v1/reviews/%lld/decision", (long long)f->id);
	snprintf(label, labelsz, "%s review #%lld", verdict, (long long)f->id);
}

static void
review_apply(struct form *f, struct console *c)
{
	char path[128], label[320], *body;

	review_request(f, path, sizeof path, &body, label, sizeof label);
	console_send(c, label, "POST", path, body);
	cJSON_free(body);
}

static const char *
json_kind(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "string";
	if (cJSON_IsNumber(v))
		return "number";
	if (cJSON_IsBool(v))
		return "boolean";
	if (cJSON_IsNull(v))
		return "null";
	return "json";
}

static int
form_correct(struct form *f, const struct review_v *r, char *err, size_t errsz)
{
	cJSON *res = r->result ? cJSON_Parse(r->result) : NULL, *it;
	char *text;

	snprintf(f->title, sizeof f->title, "Correct review #%lld (%s)", (long long)r->id,
		 r->route);
	snprintf(f->extra, sizeof f->extra, "Correct");
	if (!cJSON_IsObject(res)) {
		cJSON_Delete(res);
		res = NULL;
	}
	cJSON_ArrayForEach(it, res)
	{
		struct field *fl;

		if (f->nfields >= FORM_FIELDS_MAX - 1)
			break;
		fl = &f->fields[f->nfields++];
		snprintf(fl->label, sizeof fl->label, "%s", it->string);
		snprintf(fl->hint, sizeof fl->hint, "%s", json_kind(it));
		if (cJSON_IsString(it)) {
			field_set(fl, it->valuestring);
		} else {
			text = cJSON_PrintUnformatted(it);
			field_set(fl, text);
			cJSON_free(text);
		}
	}
	cJSON_Delete(res);
	if (f->nfields == 0) {
		snprintf(err, errsz, "review #%lld has no result object to correct",
			 (long long)r->id);
		return -1;
	}
	snprintf(f->fields[f->nfields].label, sizeof f->fields[0].label, NOTE_FIELD_LABEL);
	snprintf(f->fields[f->nfields].hint, sizeof f->fields[0].hint, "optional");
	f->nfields++;
	f->check = correct_check;
	f->reopen_on_400 = 1;
	return 0;
}

int
review_form(struct form *f, const struct review_v *r, int key, char *err, size_t errsz)
{
	const char *verb = key == 'a' ? "Approve" : key == 'x' ? "Reject" : "Claim";
	char conf[32];

	memset(f, 0, sizeof *f);
	snprintf(f->subject, sizeof f->subject, "%s", r->route);
	f->id = r->id;
	f->apply = review_apply;
	if (key == 'c')
		return form_correct(f, r, err, errsz);
	snprintf(f->title, sizeof f->title, "%s review #%lld", verb, (long long)r->id);
	snprintf(f->extra, sizeof f->extra, "%s", verb);
	if (key == 'x') {
		snprintf(f->fields[0].label, sizeof f->fields[0].label, NOTE_FIELD_LABEL);
		snprintf(f->fields[0].hint, sizeof f->fields[0].hint, "optional");
		f->nfields = 1;
	}
	fmt_pct(conf, sizeof conf, r->confidence, 0);
	/* What is decided, not only its number: the input and the model's result. */
	snprintf(simple_summary, sizeof simple_summary,
		 "%s review #%lld of route %s (%s, confidence %s).\nInput: %.300s\nResult: %.300s",
		 verb, (long long)r->id, r->route, r->reason[0] ? r->reason : "?", conf,
		 r->input ? r->input : "-", r->result ? r->result : "-");
	f->check = simple_check;
	return 0;
}

static void
go_next(struct console *c)
{
	int vi = -1;

	if (rv.vis.n == 0)
		return;
	if (rv.detail) {
		if (find_open(c, &vi) != NULL)
			vi++;
		else
			vi = rv.ls.sel;
		if (vi >= rv.vis.n)
			vi = rv.vis.n - 1;
		rv.ls.sel = vi;
		rv.open_id = c->reviews->v[rv.vis.idx[vi]].id;
		rv.scroll = 0;
	} else {
		rv.ls.sel++;
	}
	listsel_clamp(&rv.ls, rv.vis.n, rv.page);
}

static enum next
reviews_key(struct console *c, int key)
{
	const struct review_v *r;

	build(c);
	if (rv.detail) {
		switch (key) {
		case K_ESC:
			rv.detail = 0;
			return NEXT_DONE;
		case 'j':
		case FK(KEY_DOWN):
			rv.scroll++;
			return NEXT_DONE;
		case 'k':
		case FK(KEY_UP):
			rv.scroll = MAX(rv.scroll - 1, 0);
			return NEXT_DONE;
		case FK(KEY_NPAGE):
			rv.scroll += 10;
			return NEXT_DONE;
		case FK(KEY_PPAGE):
			rv.scroll = MAX(rv.scroll - 10, 0);
			return NEXT_DONE;
		default:
			break;
		}
	} else if (listsel_key(&rv.ls, key, rv.vis.n, rv.page)) {
		return NEXT_DONE;
	}
	if (key == 'n') {
		go_next(c);
		return NEXT_DONE;
	}
	if (key != K_ENTER && key != 'a' && key != 'c' && key != 'x' && key != 'C')
		return NEXT_PASS;
	r = current(c);
	if (r == NULL) {
		console_msg(c, 1, "no review item selected");
		return NEXT_DONE;
	}
	if (key == K_ENTER) {
		rv.detail = 1;
		rv.open_id = r->id;
		rv.scroll = 0;
		return NEXT_DONE;
	}
	if (!console_can_operate(c))
		return NEXT_DONE;
	{
		struct form f;
		char err[256];

		if (review_form(&f, r, key, err, sizeof err) != 0)
			console_msg(c, 1, "%s", err);
		else
			console_form(c, &f);
	}
	return NEXT_DONE;
}

const struct screen screen_reviews = {
	.name = "Reviews",
	.help = reviews_help,
	.want = FETCH_BIT(FETCH_REVIEWS),
	.draw = reviews_draw,
	.key = reviews_key,
	.hints = "j/k move  Enter open  n next  Esc back",
	.op_hints = "a approve  c correct  x reject",
};
