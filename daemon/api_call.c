/*
 * api_call: the data plane of API.md — POST /v1/routes/{route}/call,
 * GET /v1/requests/{id} — and /healthz. Handlers parse and bound the
 * request, apply admission (draining, max_inflight, idempotency: replay or
 * single flight) and start a guarded call; the answer is rendered when the
 * call's done callback runs. Engine thread (which also runs the HTTP server).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_call.h"
#include "addr.h"
#include "budget.h"
#include "call.h"
#include "clock.h"
#include "jsonutil.h"
#include "engine.h"
#include "http.h"
#include "idem.h"
#include "jobs.h"
#include "log.h"
#include "textcheck.h"
#include "util.h"

#define MAX_REQUEST_ID	     128
#define MAX_REQUEST_ATTEMPTS 64 /* more than any retry and hedge policy makes */

static void
set_answer_headers(struct http_req *r, const char *source, int level, int64_t elapsed,
		   const char *request_id)
{
	char num[32];

	if (source)
		http_req_add_header(r, "X-Fusebox-Source", source);
	snprintf(num, sizeof num, "%d", level);
	http_req_add_header(r, "X-Fusebox-Level", num);
	snprintf(num, sizeof num, "%lld", (long long)elapsed);
	http_req_add_header(r, "X-Fusebox-Duration-Ms", num);
	if (request_id)
		http_req_add_header(r, "X-Request-ID", request_id);
}

/* Answer r with a stored answer body (replay or single-flight waiter). */
static void
respond_replay(struct http_req *r, unsigned status, const char *stored)
{
	cJSON *o = cJSON_Parse(stored);
	const cJSON *src, *lvl, *el, *rid;
	char *body;

	if (o == NULL) {
		http_respond_error(r, 500, "internal", "stored answer unreadable");
		return;
	}
	src = cJSON_GetObjectItemCaseSensitive(o, "source");
	lvl = cJSON_GetObjectItemCaseSensitive(o, "level");
	el = cJSON_GetObjectItemCaseSensitive(o, "elapsed_ms");
	rid = cJSON_GetObjectItemCaseSensitive(o, "request_id");
	set_answer_headers(r, cJSON_IsString(src) ? src->valuestring : NULL,
			   cJSON_IsNumber(lvl) ? lvl->valueint : 0,
			   cJSON_IsNumber(el) ? (int64_t)el->valuedouble : 0,
			   cJSON_IsString(rid) ? rid->valuestring : NULL);
	if (cJSON_GetObjectItemCaseSensitive(o, "replayed"))
		cJSON_ReplaceItemInObjectCaseSensitive(o, "replayed", cJSON_CreateTrue());
	body = json_print(o);
	cJSON_Delete(o);
	http_respond(r, status, body, strlen(body));
}

struct call_ctx {
	struct http_req *r;
	struct idem_entry *idem;
};

static void
call_done(struct call *c, const struct call_answer *a, void *arg)
{
	struct call_ctx *ctx = arg;
	char *body = xstrdup(a->json), retry[24];
	struct idem_waiter *w = NULL, *next;

	(void)c;
	if (ctx->idem) {
		if (a->http_status == 200) {
			w = idem_complete(ctx->idem, a->http_status, body);
		} else {
			/* An exhausted call is not replayed: the next try runs again. */
			w = ctx->idem->waiters;
			ctx->idem->waiters = NULL;
			idem_remove(call_engine(c)->idem, ctx->idem);
		}
	}
	set_answer_headers(ctx->r, a->http_status < 300 ? source_name(a->source) : NULL, a->level,
			   a->elapsed_ms, a->request_id);
	if (a->traceparent != NULL)
		http_req_add_header(ctx->r, "traceparent", a->traceparent);
	if (a->http_status >= 300)
		snprintf(retry, sizeof retry, "%lld", (long long)MAX(a->retry_after_s, 1));
	if (a->http_status >= 300)
		http_req_add_header(ctx->r, "Retry-After", retry);
	for (; w; w = next) {
		next = w->next;
		if (a->http_status >= 300)
			http_req_add_header(w->arg, "Retry-After", retry);
		respond_replay(w->arg, a->http_status, body);
		free(w);
	}
	http_respond(ctx->r, a->http_status, body, strlen(body));
	free(ctx);
}

int
api_request_id_check(const char *id, const char *field, char *msg, size_t msglen)
{
	size_t n = strlen(id), i;

	if (n == 0 || n > MAX_REQUEST_ID) {
		snprintf(msg, msglen, "%s: must be 1 to %d characters", field, MAX_REQUEST_ID);
		return 400;
	}
	for (i = 0; i < n; i++) {
		if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] == 0x7f) {
			snprintf(msg, msglen, "%s: must not contain spaces or control characters",
				 field);
			return 400;
		}
	}
	/* C1 controls (a raw 0x9b is an 8-bit CSI to a terminal) and broken UTF-8 */
	if (textcheck_has_control(id)) {
		snprintf(msg, msglen, "%s: must be UTF-8 without control characters", field);
		return 400;
	}
	return 0;
}

int
api_call_parse(const char *body, size_t len, const char *hdr_request_id, const char *hdr_budget,
	       struct call_req *cr, int *async, char *msg, size_t msglen)
{
	cJSON *o = NULL;
	const cJSON *v;
	const char *h;
	char *cause = NULL, path[128];
	int rc = 400;

	cr->allow_llm = 1;
	*async = 0;
	o = cJSON_ParseWithLength(body ? body : "", len);
	if (!cJSON_IsObject(o)) {
		snprintf(msg, msglen, "body: must be a JSON object");
		goto out;
	}
	if (textcheck_json_utf8(o, path, sizeof path)) {
		snprintf(msg, msglen, "%s: must be valid UTF-8", path);
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "input");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v)) {
			snprintf(msg, msglen, "input: must be a string");
			goto out;
		}
		cr->input = xstrdup(v->valuestring);
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "messages");
	if (v && !cJSON_IsNull(v)) {
		const cJSON *m;
		int i = 0;

		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
			snprintf(msg, msglen, "messages: must be a non-empty array");
			goto out;
		}
		cJSON_ArrayForEach(m, v)
		{
			const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
			const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");

			if (!cJSON_IsString(role) || !cJSON_IsString(content)) {
				snprintf(msg, msglen,
					 "messages[%d]: must be an object with string role and "
					 "content",
					 i);
				goto out;
			}
			i++;
		}
		if (cr->input) {
			snprintf(msg, msglen, "input: give either input or messages, not both");
			goto out;
		}
		cr->messages = cJSON_Duplicate(v, 1);
	}
	if (cr->input == NULL && cr->messages == NULL) {
		snprintf(msg, msglen, "input: required (a string), or messages");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "request_id");
	h = hdr_request_id;
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v)) {
			snprintf(msg, msglen, "request_id: must be a string");
			goto out;
		}
		h = v->valuestring;
	}
	if (h) {
		if (api_request_id_check(h, "request_id", msg, msglen) != 0)
			goto out;
		cr->request_id = xstrdup(h);
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "budget_ms");
	if (budget_caller_parse(hdr_budget, v, &cr->caller_budget_ms, &cause) != 0) {
		snprintf(msg, msglen, "%s", cause);
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "allow_llm");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsBool(v)) {
			snprintf(msg, msglen, "allow_llm: must be true or false");
			goto out;
		}
		cr->allow_llm = cJSON_IsTrue(v);
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "mode");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v) ||
		    (strcmp(v->valuestring, "sync") != 0 && strcmp(v->valuestring, "async") != 0)) {
			snprintf(msg, msglen, "mode: must be \"sync\" or \"async\"");
			goto out;
		}
		*async = strcmp(v->valuestring, "async") == 0;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "callback_url");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v) || (strncmp(v->valuestring, "http://", 7) != 0 &&
					   strncmp(v->valuestring, "https://", 8) != 0)) {
			snprintf(msg, msglen, "callback_url: must be an http:// or https:// URL");
			goto out;
		}
		cr->callback_url = xstrdup(v->valuestring);
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	if (v)
		cr->metadata = cJSON_Duplicate(v, 1);
	rc = 0;
out:
	free(cause);
	cJSON_Delete(o);
	return rc;
}

/* The 202 of a job, sent once its row is committed (or the error). */
struct job_answer {
	struct http_req *r;
	char *request_id;
};

static void
job_answer(struct engine *e, void *arg, int rc, const char *state, const char *cause)
{
	struct job_answer *ja = arg;
	cJSON *o;
	char *text;

	if (rc != 0 && rc != JOBS_E_EXISTS) {
		http_respond_error(ja->r, 500, "store_failed", "the job could not be stored: %s",
				   cause ? cause : "?");
	} else {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "request_id", ja->request_id);
		cJSON_AddStringToObject(o, "status", state ? state : "queued");
		text = json_print(o);
		cJSON_Delete(o);
		http_req_add_header(ja->r, "X-Request-ID", ja->request_id);
		http_respond(ja->r, 202, text, strlen(text));
	}
	free(ja->request_id);
	free(ja);
	(void)e;
}

/*
 * Level 3 or mode async: commit a job, answer 202 once it is durable. The
 * connection waits suspended for the commit; the loop goes on meanwhile.
 */
static void
respond_job(struct http_req *r, struct engine *e, int route, struct call_req *cr)
{
	cJSON *body = cJSON_CreateObject();
	struct job_answer *ja = xcalloc(1, sizeof *ja);

	if (cr->request_id == NULL)
		cr->request_id = call_gen_request_id(e);
	if (cr->input)
		cJSON_AddStringToObject(body, "input", cr->input);
	if (cr->messages)
		cJSON_AddItemToObject(body, "messages", cJSON_Duplicate(cr->messages, 1));
	if (cr->caller_budget_ms > 0)
		cJSON_AddNumberToObject(body, "budget_ms", (double)cr->caller_budget_ms);
	cJSON_AddBoolToObject(body, "allow_llm", cr->allow_llm);
	if (cr->callback_url)
		cJSON_AddStringToObject(body, "callback_url", cr->callback_url);
	if (cr->metadata)
		cJSON_AddItemToObject(body, "metadata", cJSON_Duplicate(cr->metadata, 1));
	{
		/* the job's call runs later, in the caller's trace (jobs.c) */
		const char *tp = http_req_header(r, "traceparent");
		struct tracectx tc;

		if (tracectx_parse(tp, &tc)) {
			char text[TRACECTX_TRACEPARENT_LEN + 1];

			tracectx_format(&tc, text, sizeof text);
			cJSON_AddStringToObject(body, "traceparent", text);
			if (cr->tracestate)
				cJSON_AddStringToObject(body, "tracestate", cr->tracestate);
		}
	}
	ja->r = r;
	ja->request_id = xstrdup(cr->request_id);
	jobs_accept(e->jobs, route, cr->request_id, body, job_answer, ja);
	cJSON_Delete(body);
}

/*
 * A callback_url that callbacks.allow can never let through (a literal
 * address or a port no rule names) is refused at once; any other waits
 * for the check after DNS when the callback is sent (notify.c).
 */
static int
callback_refused(const struct config *cfg, const char *url, char *msg, size_t msglen)
{
	char host[256];
	int port;

	if (addr_url_host(url, host, sizeof host, &port) != 0) {
		snprintf(msg, msglen, "callback_url: no host and port can be read from it");
		return 1;
	}
	if (!addr_may_allow(cfg->callbacks_allow, cfg->ncallbacks_allow, host, port)) {
		snprintf(msg, msglen, "callback_url: %.64s port %d is not in callbacks.allow", host,
			 port);
		return 1;
	}
	return 0;
}

static void
handle_call(struct http_req *r, struct engine *e)
{
	struct call_req cr;
	struct call_ctx *ctx;
	struct idem_entry *en = NULL;
	char msg[256];
	int route = engine_route_index(e, r->params[0]), async = 0;

	memset(&cr, 0, sizeof cr);
	if (route < 0) {
		http_respond_error(r, 404, "unknown_route", "no route named \"%s\"", r->params[0]);
		return;
	}
	if (e->stopping) {
		http_req_add_header(r, "Retry-After", "1");
		http_respond_error(r, 503, "draining", "fuseboxd is shutting down");
		return;
	}
	if (api_call_parse(r->body.data, r->body.len, http_req_header(r, "X-Request-ID"),
			   http_req_header(r, "X-Fusebox-Budget-Ms"), &cr, &async, msg,
			   sizeof msg) != 0) {
		call_req_clear(&cr);
		http_respond_error(r, 400, "bad_request", "%s", msg);
		return;
	}
	if (cr.callback_url && callback_refused(e->cfg, cr.callback_url, msg, sizeof msg)) {
		call_req_clear(&cr);
		http_respond_error(r, 400, "bad_request", "%s", msg);
		return;
	}
	call_req_trace(e, &cr, http_req_header(r, "traceparent"), http_req_header(r, "tracestate"));
	if (async || engine_route_level(e, route) >= 3) {
		respond_job(r, e, route, &cr);
		call_req_clear(&cr);
		return;
	}
	if (cr.request_id) {
		en = idem_find(e->idem, e->routes[route].cfg->name, cr.request_id, clock_wall_ms());
		if (en && en->done) {
			e->counters.replays++;
			respond_replay(r, en->status, en->response);
			call_req_clear(&cr);
			return;
		}
		if (en) {
			struct idem_waiter *w = xcalloc(1, sizeof *w);

			e->counters.replays++;
			w->arg = r;
			w->next = en->waiters;
			en->waiters = w;
			call_req_clear(&cr);
			return;
		}
		/* Not in memory: an older answer may still be on disk. */
		{
			struct store_val v[] = {
				SVT(e->routes[route].cfg->name), SVT(cr.request_id),
				SVI(clock_wall_ms() - (int64_t)e->cfg->idempotency_ttl_s * 1000)};
			char *stored = NULL, *cause = NULL;

			if (store_reader_run_text(e->reader, STORE_Q_CALL_REPLAY, v, 3, &stored,
						  &cause) == 0 &&
			    stored) {
				e->counters.replays++;
				respond_replay(r, 200, stored);
				free(stored);
				call_req_clear(&cr);
				return;
			}
			free(cause);
		}
	}
	if (e->inflight >= e->cfg->max_inflight) {
		e->counters.rejected_inflight++;
		call_req_clear(&cr);
		http_req_add_header(r, "Retry-After", "1");
		http_respond_error(r, 429, "overloaded", "max_inflight (%d) calls in flight",
				   e->cfg->max_inflight);
		return;
	}
	if (cr.request_id)
		en = idem_insert(e->idem, e->routes[route].cfg->name, cr.request_id,
				 clock_wall_ms() + (int64_t)e->cfg->idempotency_ttl_s * 1000);
	cr.route = route;
	cr.recv_us = r->recv_us;
	ctx = xcalloc(1, sizeof *ctx);
	ctx->r = r;
	ctx->idem = en;
	call_start(e, &cr, call_done, ctx);
}

/*
 * "trace_id" of the request's latest calls row; null while it is not
 * written yet (a running or queued request) or was written before traces.
 */
static void
request_trace_id(struct engine *e, cJSON *o, const char *id)
{
	struct store_val v[] = {SVT(id)};
	char *trace = NULL, *cause = NULL;

	if (store_reader_run_text(e->reader, STORE_Q_CALL_TRACE_ID, v, 1, &trace, &cause) != 0)
		trace = NULL;
	json_add_string(o, "trace_id", trace);
	free(trace);
	free(cause);
}

/* A column as a JSON number, null when NULL. */
static cJSON *
col_number(sqlite3_stmt *row, int i)
{
	if (sqlite3_column_type(row, i) == SQLITE_NULL)
		return cJSON_CreateNull();
	return cJSON_CreateNumber((double)sqlite3_column_int64(row, i));
}

static cJSON *
col_string(sqlite3_stmt *row, int i)
{
	const unsigned char *t = sqlite3_column_text(row, i);

	return t != NULL ? cJSON_CreateString((const char *)t) : cJSON_CreateNull();
}

static int
request_attempt_row(void *arg, sqlite3_stmt *row)
{
	cJSON *arr = arg, *x = cJSON_CreateObject(), *h = NULL;
	const unsigned char *ht = sqlite3_column_text(row, 8);

	cJSON_AddItemToObject(x, "attempt_no", col_number(row, 0));
	cJSON_AddItemToObject(x, "backend", col_string(row, 1));
	cJSON_AddItemToObject(x, "outcome", col_string(row, 2));
	cJSON_AddItemToObject(x, "http_status", col_number(row, 3));
	cJSON_AddItemToObject(x, "connect_ms", col_number(row, 4));
	cJSON_AddItemToObject(x, "first_byte_ms", col_number(row, 5));
	cJSON_AddItemToObject(x, "total_ms", col_number(row, 6));
	cJSON_AddItemToObject(x, "span_id", col_string(row, 7));
	if (ht != NULL && (h = cJSON_Parse((const char *)ht)) != NULL && !cJSON_IsObject(h)) {
		cJSON_Delete(h);
		h = NULL;
	}
	cJSON_AddItemToObject(x, "upstream_headers", h != NULL ? h : cJSON_CreateNull());
	cJSON_AddItemToArray(arr, x);
	return 0;
}

/*
 * "attempts" of the request's latest calls row, with the headers its
 * backend recorded (screened when they were recorded): [] while the row
 * is not written yet (queued, running, or still in the writer's queue),
 * null when the store could not be read within the engine reader's
 * deadline. Engine thread, on the engine's reader like the other reads.
 */
static void
request_attempts(struct engine *e, cJSON *o, const char *id)
{
	struct store_val v[] = {SVT(id), SVI(MAX_REQUEST_ATTEMPTS)};
	cJSON *arr = cJSON_CreateArray();
	char *cause = NULL;

	if (store_reader_run(e->reader, STORE_Q_REQUEST_ATTEMPTS, v, 2, request_attempt_row, arr,
			     &cause) != 0) {
		cJSON_Delete(arr);
		arr = cJSON_CreateNull();
	}
	cJSON_AddItemToObject(o, "attempts", arr);
	free(cause);
}

static void
handle_request_get(struct http_req *r, struct engine *e)
{
	const char *id = r->params[0];
	struct idem_entry *en;
	cJSON *o, *jresp = NULL;
	char *body, *stored = NULL, *route = NULL, *cause = NULL;
	const char *jroute = NULL, *jstate = NULL;
	int i;

	if (jobs_lookup(e->jobs, id, &jroute, &jstate, &jresp) == 0) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "request_id", id);
		cJSON_AddStringToObject(o, "route", jroute);
		cJSON_AddStringToObject(o, "status", jstate);
		if (jresp)
			cJSON_AddItemToObject(o, "response", jresp);
		else
			cJSON_AddNullToObject(o, "response");
		goto send;
	}

	for (i = 0; i < e->nroutes; i++) {
		en = idem_find(e->idem, e->routes[i].cfg->name, id, clock_wall_ms());
		if (en == NULL)
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "request_id", id);
		cJSON_AddStringToObject(o, "route", e->routes[i].cfg->name);
		cJSON_AddStringToObject(o, "status", en->done ? "done" : "running");
		if (en->done)
			cJSON_AddItemToObject(o, "response", cJSON_Parse(en->response));
		else
			cJSON_AddNullToObject(o, "response");
		goto send;
	}
	{
		struct store_val v[] = {SVT(id)};

		int rc = store_reader_run_text(e->reader, STORE_Q_CALL_ROUTE, v, 1, &route, &cause);

		if (rc == 0 && route != NULL) {
			free(cause);
			cause = NULL;
			rc = store_reader_run_text(e->reader, STORE_Q_CALL_RESPONSE, v, 1, &stored,
						   &cause);
		}
		free(cause);
		if (rc == STORE_E_SLOW) {
			free(route);
			free(stored);
			http_req_add_header(r, "Retry-After", "1");
			http_respond_error(r, 503, "storage_slow",
					   "reading the request took too long; try again");
			return;
		}
		if (route == NULL) {
			http_respond_error(r, 404, "unknown_request", "no request \"%s\"", id);
			return;
		}
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "request_id", id);
	cJSON_AddStringToObject(o, "route", route);
	{
		cJSON *resp = stored ? cJSON_Parse(stored) : NULL;
		int failed = resp && cJSON_GetObjectItemCaseSensitive(resp, "error") != NULL;

		cJSON_AddStringToObject(o, "status", failed ? "failed" : "done");
		if (resp)
			cJSON_AddItemToObject(o, "response", resp);
		else
			cJSON_AddNullToObject(o, "response");
	}
	free(route);
	free(stored);
send:
	request_trace_id(e, o, id);
	request_attempts(e, o, id);
	body = json_print(o);
	cJSON_Delete(o);
	http_respond(r, 200, body, strlen(body));
}

static void
handle_healthz(struct http_req *r, struct engine *e)
{
	struct store_stats ss;
	char *body;

	store_get_stats(e->store, &ss);
	if (ss.degraded)
		body = xasprintf("{\"status\":\"degraded\",\"detail\":{\"storage\":"
				 "\"storage_degraded\",\"log_rows_dropped\":%llu}}",
				 (unsigned long long)ss.rows_dropped);
	else
		body = xstrdup("{\"status\":\"ok\"}");
	http_respond(r, 200, body, strlen(body));
}

const struct endpoint api_call_endpoints[] = {
	{HTTP_POST, "/v1/routes/{}/call", ACCESS_DATA, handle_call},
	{HTTP_GET, "/v1/requests/{}", ACCESS_DATA, handle_request_get},
	{HTTP_GET, "/healthz", ACCESS_OPEN, handle_healthz},
	{0, NULL, 0, NULL},
};
