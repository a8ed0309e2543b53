/*
 * api_review: the review endpoints of API.md "Reviews" — list, get,
 * claim, decision, export. Reads go through the engine's reader; every
 * change goes through review_q_set_state() and is committed together with
 * its audit row before the answer leaves. A correction is validated
 * against the route's output contract (validate_value), stored, counted
 * for the review diff rate and POSTed to the call's callback_url through
 * the notify thread. Engine thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api_common.h"
#include "clock.h"
#include "engine.h"
#include "http.h"
#include "log.h"
#include "notify.h"
#include "obs.h"
#include "review_q.h"
#include "util.h"
#include "validate.h"
#include "jsonutil.h"

#define LIST_LIMIT_DEFAULT   50
#define LIST_LIMIT_MAX	     1000
#define EXPORT_LIMIT_DEFAULT 100000
#define EXPORT_LIMIT_MAX     1000000
#define EXPORT_MAX_BYTES     (64u << 20)
#define NOTE_MAX_BYTES	     4096
#define CALLBACK_TRIES	     5

/*
 * The state filters of GET /v1/reviews, as list queries (db/store.c).
 * Each binds ?1 state, ?2 now, ?3 route, ?4 priority, ?5 limit; a filter
 * that is one literal set keeps the (state, due_at) index usable.
 */
static const struct {
	const char *name;
	enum store_query q;
} list_filters[] = {
	{"open", STORE_Q_REVIEW_LIST_OPEN},
	{"overdue", STORE_Q_REVIEW_LIST_OVERDUE},
	{"decided", STORE_Q_REVIEW_LIST_DECIDED},
	{"all", STORE_Q_REVIEW_LIST_ALL},
};

static void
respond_json(struct http_req *r, unsigned status, cJSON *o)
{
	char *body = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	if (body == NULL) {
		http_respond_error(r, 500, "internal", "cannot render JSON");
		return;
	}
	http_respond(r, status, body, strlen(body));
}

/* The {id} of the path; -1 when it is not a positive integer. */
static int64_t
path_id(const struct http_req *r)
{
	int64_t id;

	if (r->nparams < 1 || parse_int64(r->params[0], &id) != 0 || id <= 0)
		return -1;
	return id;
}

/* An integer query argument in [min, max], def when absent. 0 or -EINVAL. */
static int
arg_int(const struct http_req *r, const char *name, int64_t min, int64_t max, int64_t def,
	int64_t *out)
{
	const char *s = http_req_arg(r, name);

	*out = def;
	if (s == NULL)
		return 0;
	if (parse_int64(s, out) != 0 || *out < min || *out > max)
		return -EINVAL;
	return 0;
}

/* Answer the item (200) as it is now. */
static void
respond_item(struct http_req *r, const struct review_item *it)
{
	respond_json(r, 200, review_item_json(it, clock_wall_ms()));
}

/* Load the item of the path, or answer 404 / 500 and return non-zero. */
static int
load_item(struct http_req *r, struct engine *e, struct review_item *it)
{
	int64_t id = path_id(r);
	char *cause = NULL;
	int rc;

	memset(it, 0, sizeof *it);
	if (id < 0) {
		http_respond_error(r, 404, "unknown_review", "no review item \"%s\"",
				   r->nparams > 0 ? r->params[0] : "");
		return REVIEW_Q_E_NOT_FOUND;
	}
	rc = review_q_get(e, id, it, &cause);
	if (rc == REVIEW_Q_E_NOT_FOUND)
		http_respond_error(r, 404, "unknown_review", "no review item %lld", (long long)id);
	else if (rc != 0)
		api_store_error(r, e->reader, cause);
	free(cause);
	return rc;
}

/* 409 for a transition the state machine refused. */
static void
respond_conflict(struct http_req *r, const struct review_item *it, int rc)
{
	if (rc == REVIEW_Q_E_DECIDED)
		http_respond_error(r, 409, "already_decided", "review %lld is already %s by %s",
				   (long long)it->id, review_state_name(it->state),
				   it->reviewer ? it->reviewer : "?");
	else
		http_respond_error(r, 409, "claimed", "review %lld is claimed by %s",
				   (long long)it->id, it->reviewer ? it->reviewer : "?");
}

/* {"state","reviewer",...} of an item for audit rows. New string. */
static char *
audit_json(enum review_state st, const char *reviewer, const char *verdict, const char *corrected,
	   const char *note)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	cJSON_AddStringToObject(o, "state", review_state_name(st));
	if (reviewer)
		cJSON_AddStringToObject(o, "reviewer", reviewer);
	else
		cJSON_AddNullToObject(o, "reviewer");
	if (verdict)
		cJSON_AddStringToObject(o, "verdict", verdict);
	if (corrected)
		cJSON_AddItemToObject(o, "corrected_result", review_json_value(corrected));
	if (note)
		cJSON_AddStringToObject(o, "note", note);
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/*
 * Change it as ch says, committed with an audit row (action, actor, remote
 * of r). 0, or answers 500 and returns non-zero.
 */
static int
apply_change(struct http_req *r, struct engine *e, struct review_item *it,
	     const struct review_change *ch, const char *action, int64_t now)
{
	char *before = audit_json(it->state, it->reviewer, NULL, NULL, NULL);
	char *after = audit_json(ch->to, ch->reviewer, ch->verdict, ch->corrected_result, ch->note);
	char target[48], *cause = NULL;
	int rc;

	snprintf(target, sizeof target, "review:%lld", (long long)it->id);
	{
		struct store_val av[] = {SVI(now),    SVT(r->actor), SVT(action),   SVT(target),
					 SVT(before), SVT(after),    SVT(r->remote)};
		struct store_op op = {STORE_AUDIT_INSERT, av, (int)ARRAY_SIZE(av)};

		rc = review_q_set_state(e->review_q, e->store, it, ch, &op, 1, &cause);
	}
	if (rc != 0)
		http_respond_error(r, 500, "store_error", "%s", cause ? cause : "commit failed");
	free(cause);
	free(before);
	free(after);
	return rc;
}

/* ---- GET /v1/reviews ---- */

struct list_ctx {
	cJSON *items;
	int64_t now;
};

static int
list_row(void *arg, sqlite3_stmt *row)
{
	struct list_ctx *lc = arg;
	struct review_item it;

	if (review_item_from_row(row, &it) == 0)
		cJSON_AddItemToArray(lc->items, review_item_json(&it, lc->now));
	review_item_clear(&it);
	return 0;
}

struct counts_ctx {
	int64_t pending;
	int64_t overdue;
};

static int
counts_row(void *arg, sqlite3_stmt *row)
{
	struct counts_ctx *cc = arg;

	cc->pending = sqlite3_column_int64(row, 0);
	cc->overdue = sqlite3_column_int64(row, 1);
	return 1;
}

static void
handle_list(struct http_req *r, struct engine *e)
{
	const char *state = http_req_arg(r, "state"), *route = http_req_arg(r, "route");
	const char *prio_s = http_req_arg(r, "priority");
	enum store_query q = STORE_Q_REVIEW_LIST_STATE;
	struct list_ctx lc = {NULL, clock_wall_ms()};
	struct counts_ctx cc = {0, 0};
	enum review_state st;
	enum priority prio = PRIORITY_MEDIUM;
	int64_t limit;
	char *cause = NULL;
	cJSON *o = NULL, *counts;
	size_t i;

	if (state == NULL || *state == '\0')
		state = "open";
	for (i = 0; i < ARRAY_SIZE(list_filters); i++)
		if (strcmp(state, list_filters[i].name) == 0)
			break;
	if (i < ARRAY_SIZE(list_filters)) {
		q = list_filters[i].q;
	} else if (review_state_parse(state, &st) != 0) {
		http_respond_error(r, 400, "bad_request",
				   "state: must be open, overdue, decided, all, pending, claimed, "
				   "approved, corrected or rejected");
		goto out;
	}
	if (prio_s != NULL && review_priority_parse(prio_s, &prio) != 0) {
		http_respond_error(r, 400, "bad_request", "priority: must be high, medium or low");
		goto out;
	}
	if (arg_int(r, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT, &limit) != 0) {
		http_respond_error(r, 400, "bad_request", "limit: must be an integer 1..%d",
				   LIST_LIMIT_MAX);
		goto out;
	}
	o = cJSON_CreateObject();
	lc.items = cJSON_AddArrayToObject(o, "items");
	{
		struct store_val v[] = {SVT(state), SVI(lc.now), SVT(route),
					prio_s ? SVI(prio) : SVN, SVI(limit)};

		if (store_reader_run(e->reader, q, v, (int)ARRAY_SIZE(v), list_row, &lc, &cause) !=
		    0)
			goto fail;
	}
	{
		struct store_val v[] = {SVT(route), prio_s ? SVI(prio) : SVN, SVI(lc.now)};

		if (store_reader_run(e->reader, STORE_Q_REVIEW_LIST_COUNTS, v, (int)ARRAY_SIZE(v),
				     counts_row, &cc, &cause) != 0)
			goto fail;
	}
	counts = cJSON_AddObjectToObject(o, "counts");
	cJSON_AddNumberToObject(counts, "pending", (double)cc.pending);
	cJSON_AddNumberToObject(counts, "overdue", (double)cc.overdue);
	respond_json(r, 200, o);
	o = NULL;
	goto out;
fail:
	api_store_error(r, e->reader, cause);
out:
	cJSON_Delete(o);
	free(cause);
}

/* ---- GET /v1/reviews/{id} ---- */

static void
handle_get(struct http_req *r, struct engine *e)
{
	struct review_item it;

	if (load_item(r, e, &it) == 0)
		respond_item(r, &it);
	review_item_clear(&it);
}

/* ---- POST /v1/reviews/{id}/claim ---- */

static void
handle_claim(struct http_req *r, struct engine *e)
{
	struct review_item it;
	enum review_state to;
	int64_t now = clock_wall_ms();
	char why[96];
	int rc;

	if (load_item(r, e, &it) != 0)
		goto out;
	rc = review_transition(it.state, it.state == REVIEW_CLAIMED ? it.reviewer : NULL, r->actor,
			       REVIEW_CLAIM, &to);
	if (rc != 0) {
		respond_conflict(r, &it, rc);
		goto out;
	}
	if (to != it.state) {
		struct review_change ch = {.to = to, .reviewer = r->actor, .why = why};

		snprintf(why, sizeof why, "claimed by %s", r->actor);
		if (apply_change(r, e, &it, &ch, "review.claim", now) != 0)
			goto out;
	}
	respond_item(r, &it);
out:
	review_item_clear(&it);
}

/* ---- POST /v1/reviews/{id}/decision ---- */

/* The correction push of API.md "Callbacks". New string. */
static char *
correction_body(const struct review_item *it)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	cJSON_AddStringToObject(o, "event", "review_correction");
	cJSON_AddNumberToObject(o, "review_id", (double)it->id);
	if (it->request_id)
		cJSON_AddStringToObject(o, "request_id", it->request_id);
	else
		cJSON_AddNullToObject(o, "request_id");
	cJSON_AddStringToObject(o, "route", it->route ? it->route : "");
	cJSON_AddItemToObject(o, "result", review_json_value(it->corrected_result));
	cJSON_AddItemToObject(o, "original", review_json_value(it->result));
	if (it->note)
		cJSON_AddStringToObject(o, "note", it->note);
	else
		cJSON_AddNullToObject(o, "note");
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* "result.<field>: ..." naming the field a correction failed on. */
static void
respond_invalid_result(struct http_req *r, const struct validate_result *vr)
{
	size_t fl = strlen(vr->field);

	if (fl > 0 && strncmp(vr->detail, vr->field, fl) == 0)
		http_respond_error(r, 400, "bad_request", "result.%s", vr->detail);
	else if (fl > 0)
		http_respond_error(r, 400, "bad_request", "result.%s: %s", vr->field, vr->detail);
	else
		http_respond_error(r, 400, "bad_request", "result: %s", vr->detail);
}

static void
handle_decision(struct http_req *r, struct engine *e)
{
	cJSON *body = NULL;
	const cJSON *verdict, *note, *result;
	struct review_item it;
	struct validate_result vr;
	enum review_action act;
	enum review_state to;
	char *corrected = NULL, *push = NULL, why[96];
	const char *note_s = NULL;
	int64_t now = clock_wall_ms();
	int rc, route;

	memset(&it, 0, sizeof it);
	memset(&vr, 0, sizeof vr);
	body = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.len);
	if (!cJSON_IsObject(body)) {
		http_respond_error(r, 400, "bad_request", "body: must be a JSON object");
		goto out;
	}
	verdict = cJSON_GetObjectItemCaseSensitive(body, "verdict");
	if (!cJSON_IsString(verdict) || review_action_parse(verdict->valuestring, &act) != 0 ||
	    act == REVIEW_CLAIM) {
		http_respond_error(r, 400, "bad_request",
				   "verdict: must be \"approve\", \"correct\" or \"reject\"");
		goto out;
	}
	note = cJSON_GetObjectItemCaseSensitive(body, "note");
	if (note != NULL && !cJSON_IsNull(note)) {
		if (!cJSON_IsString(note)) {
			http_respond_error(r, 400, "bad_request", "note: must be a string");
			goto out;
		}
		if (strlen(note->valuestring) > NOTE_MAX_BYTES) {
			http_respond_error(r, 400, "bad_request", "note: longer than %d bytes",
					   NOTE_MAX_BYTES);
			goto out;
		}
		note_s = note->valuestring;
	}
	result = cJSON_GetObjectItemCaseSensitive(body, "result");
	if (act == REVIEW_CORRECT && (result == NULL || cJSON_IsNull(result))) {
		http_respond_error(r, 400, "bad_request",
				   "result: required for verdict \"correct\"");
		goto out;
	}
	if (load_item(r, e, &it) != 0)
		goto out;
	rc = review_transition(it.state, it.state == REVIEW_CLAIMED ? it.reviewer : NULL, r->actor,
			       act, &to);
	if (rc != 0) {
		respond_conflict(r, &it, rc);
		goto out;
	}
	route = engine_route_index(e, it.route ? it.route : "");
	if (act == REVIEW_CORRECT) {
		if (route < 0) {
			http_respond_error(r, 400, "bad_request",
					   "result: route \"%s\" is no longer configured; a "
					   "correction cannot be validated",
					   it.route ? it.route : "");
			goto out;
		}
		if (validate_value(&e->routes[route].cfg->output, result, &vr) != 0) {
			respond_invalid_result(r, &vr);
			goto out;
		}
		corrected = cJSON_PrintUnformatted(vr.result);
	}
	{
		struct review_change ch = {
			.to = to,
			.reviewer = r->actor,
			.verdict = review_action_name(act),
			.corrected_result = corrected,
			.note = note_s,
			.decided_at = now,
			.why = why,
		};

		snprintf(why, sizeof why, "%s by %s", review_action_name(act), r->actor);
		if (apply_change(r, e, &it, &ch, "review.decision", now) != 0)
			goto out;
	}
	if (route >= 0) {
		char *cause = NULL;

		obs_review_decided(e->obs, route, act == REVIEW_CORRECT, now);
		if (review_q_overflow(e, route, now, &cause) != 0)
			log_error("review", "route %s: overflow policy: %s", it.route,
				  cause ? cause : "failed");
		free(cause);
	}
	if (act == REVIEW_CORRECT && it.callback_url != NULL && *it.callback_url != '\0') {
		push = correction_body(&it);
		if (notify_post(e->notify, it.callback_url, push, "review_correction",
				CALLBACK_TRIES) != 0)
			log_warn("review", "%lld: correction callback dropped (notify queue full)",
				 (long long)it.id);
	}
	respond_item(r, &it);
out:
	free(push);
	free(corrected);
	validate_result_clear(&vr);
	review_item_clear(&it);
	cJSON_Delete(body);
}

/* ---- GET /v1/reviews/export ---- */

struct export_ctx {
	struct buf out;
	int err;
};

static int
export_row(void *arg, sqlite3_stmt *row)
{
	struct export_ctx *x = arg;
	struct review_item it;
	cJSON *o;
	char *line;

	if (review_item_from_row(row, &it) != 0)
		goto out;
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "review_id", (double)it.id);
	json_add_string(o, "route", it.route);
	json_add_string(o, "request_id", it.request_id);
	json_add_string(o, "input", it.input);
	cJSON_AddItemToObject(o, "model_result", review_json_value(it.result));
	json_add_string(o, "verdict", it.verdict);
	cJSON_AddItemToObject(
		o, "corrected_result",
		review_json_value(it.state == REVIEW_CORRECTED ? it.corrected_result : NULL));
	json_add_string(o, "note", it.note);
	json_add_string(o, "reviewer", it.reviewer);
	json_add_time(o, "created_at", it.created_at);
	json_add_time(o, "decided_at", it.decided_at);
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (line == NULL || buf_puts(&x->out, line) != 0 || buf_puts(&x->out, "\n") != 0)
		x->err = -E2BIG;
	free(line);
out:
	review_item_clear(&it);
	return x->err != 0;
}

static void
handle_export(struct http_req *r, struct engine *e)
{
	const char *since_s = http_req_arg(r, "since");
	struct export_ctx x = {.err = 0};
	int64_t since = 0, limit;
	char *cause = NULL, *fixed = NULL, *p;

	buf_init(&x.out, EXPORT_MAX_BYTES);
	if (since_s != NULL && time_parse_rfc3339(since_s, &since) != 0) {
		/* A "+01:00" offset sent unescaped arrives as " 01:00". */
		fixed = xstrdup(since_s);
		for (p = fixed; *p; p++)
			if (*p == ' ')
				*p = '+';
		if (time_parse_rfc3339(fixed, &since) != 0) {
			http_respond_error(r, 400, "bad_request",
					   "since: must be an RFC 3339 time, e.g. "
					   "2026-11-30T12:00:00Z");
			goto out;
		}
	}
	if (arg_int(r, "limit", 1, EXPORT_LIMIT_MAX, EXPORT_LIMIT_DEFAULT, &limit) != 0) {
		http_respond_error(r, 400, "bad_request", "limit: must be an integer 1..%d",
				   EXPORT_LIMIT_MAX);
		goto out;
	}
	{
		struct store_val v[] = {SVI(since), SVI(limit)};

		if (store_reader_run(e->reader, STORE_Q_REVIEW_EXPORT, v, (int)ARRAY_SIZE(v),
				     export_row, &x, &cause) != 0) {
			api_store_error(r, e->reader, cause);
			goto out;
		}
	}
	if (x.err != 0) {
		http_respond_error(
			r, 500, "export_too_large",
			"the export exceeds %u MiB: use a later since or a smaller limit",
			EXPORT_MAX_BYTES >> 20);
		goto out;
	}
	r->content_type = "application/x-ndjson";
	{
		size_t len = x.out.len;

		http_respond(r, 200, buf_steal(&x.out), len);
	}
out:
	buf_free(&x.out);
	free(fixed);
	free(cause);
}

/* Export comes before {} so that "/v1/reviews/export" is not taken for an id. */
const struct endpoint api_review_endpoints[] = {
	{HTTP_GET, "/v1/reviews", ACCESS_VIEWER, handle_list},
	{HTTP_GET, "/v1/reviews/export", ACCESS_VIEWER, handle_export},
	{HTTP_GET, "/v1/reviews/{}", ACCESS_VIEWER, handle_get},
	{HTTP_POST, "/v1/reviews/{}/claim", ACCESS_OPERATOR, handle_claim},
	{HTTP_POST, "/v1/reviews/{}/decision", ACCESS_OPERATOR, handle_decision},
	{0, NULL, 0, NULL},
};
