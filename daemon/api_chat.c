/*
 * api_chat: the OpenAI-compatible facade, POST /v1/chat/completions and
 * GET /v1/models[/{id}]. The request's `model` names a route ("intent" or
 * "fusebox/intent"); the caller's messages and every field the facade does
 * not consume pass to the upstream unchanged (the route's prompt is not
 * applied), or are refused with a 400 naming the field when the route
 * cannot honour them; the call is guarded like /call. Non-streaming
 * answers relay the model's chat.completion (choices with tool calls and
 * finish reasons, usage, system_fingerprint; `model` is the backend's)
 * with our id and a "fusebox" object; answers from the ladder (rules,
 * cache, preset) are chat.completions of their own with finish_reason
 * "stop". With "stream": true the answer is Server-Sent Events in
 * chat.completion.chunk form: the model's chunks (content and
 * delta.tool_calls) are relayed as they arrive, the upstream's finish
 * reason goes on the closing chunk with the "fusebox" object, and
 * stream_options.include_usage adds a usage chunk. The stream's status
 * line waits for the first chunk: a stream that cannot start answers a
 * real HTTP error (with Retry-After); one cut after its first byte ends
 * with an OpenAI-shaped error event and [DONE]. Engine thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_call.h"
#include "api_chat.h"
#include "attempt.h"
#include "budget.h"
#include "call.h"
#include "clock.h"
#include "engine.h"
#include "http.h"
#include "jsonutil.h"
#include "log.h"
#include "textcheck.h"
#include "util.h"

struct chat_ctx {
	struct http_req *r;
	struct chat_opts opts;
	char *model;	  /* as the caller named it */
	char *resp_model; /* the upstream's, from its first chunk; NULL until then */
	char id[160];
	int64_t created;
	int begun;		     /* the stream's status line went out */
	char finish[32];	     /* the upstream's finish_reason of choice 0; "" when none */
	cJSON *usage;		     /* the upstream's usage chunk; NULL when none */
	int64_t prompt_estimate;     /* tokens of the caller's messages (estimated; with
					include_usage only) */
	int64_t completion_estimate; /* tokens of the streamed content (estimated) */
	char request_id[160];
	char traceparent[TRACECTX_TRACEPARENT_LEN + 1]; /* the call span's */
};

static void
chat_error(struct http_req *r, unsigned status, const char *type, const char *code,
	   const char *param, const char *message)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
	char *body;

	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddStringToObject(e, "code", code);
	if (param)
		cJSON_AddStringToObject(e, "param", param);
	else
		cJSON_AddNullToObject(e, "param");
	body = json_print(o);
	cJSON_Delete(o);
	http_respond(r, status, body, strlen(body));
}

/* The field a parser message names: the text before its first ':' (NULL when none). */
static char *
msg_param(const char *msg)
{
	const char *colon = strchr(msg, ':');

	return colon ? xstrndup(msg, (size_t)(colon - msg)) : NULL;
}

/* The text a chat answer carries for answer a. New string. */
static char *
answer_content(const struct call_answer *a)
{
	if ((a->source == SOURCE_LLM || a->source == SOURCE_BACKUP) && a->text)
		return xstrdup(a->text);
	if (a->source == SOURCE_PRESET && a->text)
		return xstrdup(a->text);
	if (a->result)
		return json_print(a->result);
	return xstrdup("");
}

/*
 * The answers are written straight into one buffer, sized for the usual
 * answer so that it is one allocation (no cJSON tree, no copy of the
 * upstream's reply), with json_print()'s formatting.
 */
static void
answer_buf_init(struct buf *b, size_t hint)
{
	buf_init(b, SIZE_MAX / 2);
	b->cap = MAX(hint, (size_t)1024);
	b->data = xmalloc(b->cap);
	b->data[0] = '\0';
}

/* A string literal appended (its length known at compile time); ,"name": */
#define BUF_LIT(b, lit)	 buf_append((b), (lit), sizeof(lit) - 1)
#define BUF_KEY(b, name) BUF_LIT((b), ",\"" name "\":")

static void
buf_string_or_null(struct buf *b, const char *s)
{
	if (s)
		json_buf_string(b, s);
	else
		BUF_LIT(b, "null");
}

/* The "fusebox" object of answer a, appended to b. */
static void
fusebox_buf(struct buf *b, const struct call_answer *a)
{
	BUF_LIT(b, "{\"source\":");
	json_buf_string(b, source_name(a->source));
	BUF_KEY(b, "level");
	json_buf_number(b, a->level);
	BUF_KEY(b, "degraded");
	buf_puts(b, a->degraded ? "true" : "false");
	BUF_KEY(b, "reason");
	buf_string_or_null(b, a->reason[0] ? a->reason : NULL);
	BUF_KEY(b, "attempts");
	json_buf_number(b, a->attempts);
	BUF_KEY(b, "elapsed_ms");
	json_buf_number(b, (double)a->elapsed_ms);
	BUF_KEY(b, "request_id");
	json_buf_string(b, a->request_id);
	BUF_KEY(b, "review");
	buf_puts(b, a->review ? "\"pending\"" : "\"none\"");
	BUF_KEY(b, "backend");
	buf_string_or_null(b, a->backend);
	BUF_KEY(b, "route");
	json_buf_string(b, a->route);
	buf_append(b, "}", 1);
}

/* v in decimal into out (at least 21 bytes), NUL-ended; no printf (the answer's headers). */
static const char *
i64_text(char *out, size_t size, int64_t v)
{
	char *p = out + size - 1;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	*p = '\0';
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0 && p > out + 1);
	if (v < 0)
		*--p = '-';
	return p;
}

/* src into dst[size], cut to fit, after prefix (plen bytes, < size). */
static void
copy_cut(char *dst, size_t size, const char *prefix, size_t plen, const char *src)
{
	size_t n = MIN(strlen(src), size - 1 - plen);

	memcpy(dst, prefix, plen);
	memcpy(dst + plen, src, n);
	dst[plen + n] = '\0';
}

static void
set_retry_after(struct http_req *r, int64_t s)
{
	char num[24];

	snprintf(num, sizeof num, "%lld", (long long)MAX(s, 1));
	http_req_add_header(r, "Retry-After", num);
}

static int
is_key(const cJSON *f, const char *name)
{
	return f->string && strcmp(f->string, name) == 0;
}

/* An event being written: "data: " and the chunk's opening brace. */
static void
event_begin(struct buf *b)
{
	buf_init(b, HTTP_STREAM_MAX);
	b->cap = 1024;
	b->data = xmalloc(b->cap);
	memcpy(b->data, "data: {", 8);
	b->len = 7;
}

/* The event's end, relayed; b is freed. */
static void
event_send(struct chat_ctx *x, struct buf *b)
{
	BUF_LIT(b, "}\n\n");
	http_stream_write(x->r, b->data, b->len);
	buf_free(b);
}

/* A chunk's id, object, created and model, into an event begun. */
static void
chunk_head(struct buf *b, struct chat_ctx *x)
{
	BUF_LIT(b, "\"id\":");
	json_buf_string(b, x->id);
	BUF_LIT(b, ",\"object\":\"chat.completion.chunk\",\"created\":");
	json_buf_number(b, (double)x->created);
	BUF_KEY(b, "model");
	json_buf_string(b, x->resp_model ? x->resp_model : x->model);
}

/* One chat.completion.chunk; delta_text NULL with finish for the last (fb: its "fusebox"). */
static void
stream_chunk(struct chat_ctx *x, const char *role, const char *delta_text, size_t len,
	     const char *finish, const struct call_answer *fb)
{
	struct buf b;
	char *content;

	event_begin(&b);
	chunk_head(&b, x);
	BUF_LIT(&b, ",\"choices\":[{\"index\":0,\"delta\":{");
	if (role) {
		BUF_LIT(&b, "\"role\":");
		json_buf_string(&b, role);
	}
	if (delta_text) {
		content = xstrndup(delta_text, len);
		buf_puts(&b, role ? ",\"content\":" : "\"content\":");
		json_buf_string(&b, content);
		free(content);
	}
	BUF_LIT(&b, "},\"finish_reason\":");
	buf_string_or_null(&b, finish);
	BUF_LIT(&b, "}]");
	if (fb) {
		BUF_LIT(&b, ",\"fusebox\":");
		fusebox_buf(&b, fb);
	}
	event_send(x, &b);
}

/* The status line and the role chunk: the stream has started. */
static void
stream_open(struct chat_ctx *x)
{
	if (x->begun)
		return;
	x->begun = 1;
	http_req_add_header(x->r, "X-Request-ID", x->request_id);
	http_req_add_header(x->r, "traceparent", x->traceparent);
	http_req_add_header(x->r, "Cache-Control", "no-cache");
	http_stream_begin(x->r, 200, "text/event-stream");
	stream_chunk(x, "assistant", "", 0, NULL, NULL);
}

/*
 * A choice relayed into b, with its finish_reason (choice 0's, held) null
 * and its delta. 1 when it says something.
 */
static int
choice_buf(struct buf *b, struct chat_ctx *x, const cJSON *c)
{
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(c, "index");
	const cJSON *delta = cJSON_GetObjectItemCaseSensitive(c, "delta");
	const cJSON *fr = cJSON_GetObjectItemCaseSensitive(c, "finish_reason"), *f;
	int n = 0;

	if (!((idx == NULL || (cJSON_IsNumber(idx) && idx->valuedouble == 0)) &&
	      cJSON_IsString(fr))) {
		json_buf_item(b, c);
		return 1;
	}
	snprintf(x->finish, sizeof x->finish, "%s", fr->valuestring);
	buf_append(b, "{", 1);
	for (f = c->child; f; f = f->next) {
		if (n++ > 0)
			buf_append(b, ",", 1);
		json_buf_string(b, f->string);
		buf_append(b, ":", 1);
		if (f == fr)
			BUF_LIT(b, "null");
		else
			json_buf_item(b, f);
	}
	buf_append(b, "}", 1);
	return cJSON_GetArraySize(delta) > 0;
}

/*
 * One upstream chunk, relayed: our id, the upstream's model, its choices
 * (content, tool_calls, logprobs) as they came, except that choice 0's
 * finish_reason is held for the closing chunk and usage for the usage
 * chunk. A chunk left with nothing to say is not sent. Written from the
 * upstream's tree into the event (no copy of the chunk).
 */
static void
on_delta(void *arg, const char *text, size_t len, const cJSON *chunk)
{
	struct chat_ctx *x = arg;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(chunk, "model"), *f, *c;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(chunk, "id");
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(chunk, "usage");
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(chunk, "choices");
	int say = 0, n = 0, k;
	struct buf b;

	if (x->resp_model == NULL && cJSON_IsString(v))
		x->resp_model = xstrdup(v->valuestring);
	stream_open(x);
	x->completion_estimate += budget_estimate_tokens(text, len);
	if (cJSON_IsObject(usage)) {
		cJSON_Delete(x->usage);
		x->usage = cJSON_Duplicate(usage, 1);
	}
	event_begin(&b);
	for (f = chunk->child; f; f = f->next) {
		if (f->string == NULL || f == usage)
			continue;
		if (n++ > 0)
			buf_append(&b, ",", 1);
		json_buf_string(&b, f->string);
		buf_append(&b, ":", 1);
		if (f == id) {
			json_buf_string(&b, x->id);
		} else if (f == choices && (cJSON_IsArray(f) || cJSON_IsObject(f))) {
			buf_append(&b, cJSON_IsArray(f) ? "[" : "{", 1);
			k = 0;
			for (c = f->child; c; c = c->next) {
				if (k++ > 0)
					buf_append(&b, ",", 1);
				if (cJSON_IsObject(f)) {
					json_buf_string(&b, c->string);
					buf_append(&b, ":", 1);
				}
				say |= choice_buf(&b, x, c);
			}
			buf_append(&b, cJSON_IsArray(f) ? "]" : "}", 1);
		} else {
			json_buf_item(&b, f);
		}
	}
	if (cJSON_GetObjectItemCaseSensitive(chunk, "object") == NULL)
		buf_puts(&b, n > 0 ? ",\"object\":\"chat.completion.chunk\""
				   : "\"object\":\"chat.completion.chunk\"");
	if (say)
		event_send(x, &b);
	else
		buf_free(&b);
}

/* Split text into about four chunks on UTF-8 character boundaries. */
static void
stream_text(struct chat_ctx *x, const char *text)
{
	size_t n = strlen(text), step = MAX(n / 4, 1), off = 0, end;

	while (off < n) {
		end = MIN(off + step, n);
		while (end < n && ((unsigned char)text[end] & 0xc0) == 0x80)
			end++;
		stream_chunk(x, NULL, text + off, end - off, NULL, NULL);
		off = end;
	}
	x->completion_estimate += budget_estimate_tokens(text, n);
}

/* The include_usage chunk: no choices, the upstream's usage or our estimate (marked). */
static void
stream_usage(struct chat_ctx *x, const struct call_answer *a)
{
	struct buf b;

	event_begin(&b);
	chunk_head(&b, x);
	BUF_LIT(&b, ",\"choices\":[],\"usage\":");
	if (x->usage) {
		json_buf_item(&b, x->usage);
	} else {
		int64_t pt = a->prompt_tokens >= 0 ? a->prompt_tokens : x->prompt_estimate;
		int64_t ct =
			a->completion_tokens >= 0 ? a->completion_tokens : x->completion_estimate;

		BUF_LIT(&b, "{\"prompt_tokens\":");
		json_buf_number(&b, (double)pt);
		BUF_KEY(&b, "completion_tokens");
		json_buf_number(&b, (double)ct);
		BUF_KEY(&b, "total_tokens");
		json_buf_number(&b, (double)(pt + ct));
		BUF_LIT(&b, "},\"fusebox\":{\"usage_estimated\":true}");
	}
	event_send(x, &b);
}

static void
chat_stream_done(struct chat_ctx *x, const struct call_answer *a)
{
	char *content;

	if (a->http_status >= 300 && !x->begun) {
		char text[200];

		snprintf(text, sizeof text, "every rung of the ladder failed for route %s (%s)",
			 a->route, a->reason);
		http_req_add_header(x->r, "X-Request-ID", a->request_id);
		http_req_add_header(x->r, "traceparent", x->traceparent);
		set_retry_after(x->r, a->retry_after_s);
		chat_error(x->r, a->http_status, "server_error", "exhausted", NULL, text);
		return;
	}
	stream_open(x);
	if (a->http_status >= 300 || a->stream_error[0]) {
		struct buf b;

		event_begin(&b);
		BUF_LIT(&b, "\"error\":{\"message\":");
		json_buf_string(&b, a->http_status >= 300 ? "every rung of the ladder failed"
							  : "the upstream stream was cut short");
		BUF_LIT(&b, ",\"type\":\"server_error\",\"code\":");
		json_buf_string(&b, a->http_status >= 300 ? "exhausted" : a->stream_error);
		BUF_LIT(&b, ",\"param\":null}");
		event_send(x, &b);
	} else {
		if (!a->streamed) {
			content = answer_content(a);
			stream_text(x, content);
			free(content);
		}
		stream_chunk(x, NULL, NULL, 0, a->streamed && x->finish[0] ? x->finish : "stop", a);
		if (x->opts.include_usage)
			stream_usage(x, a);
	}
	http_stream_write(x->r, "data: [DONE]\n\n", 14);
	http_stream_end(x->r);
}

/*
 * The model's own chat.completion, relayed into b: its fields in the
 * order sent (model, choices, usage, system_fingerprint...) but for id,
 * object, created and fusebox, which are ours and follow; the caller's
 * model name when the upstream gave none.
 */
static void
relayed_completion(struct buf *b, struct chat_ctx *x, const cJSON *up)
{
	const cJSON *f;
	int model_ok = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(up, "model"));

	buf_append(b, "{", 1);
	for (f = up->child; f; f = f->next) {
		if (f->string == NULL || is_key(f, "fusebox") || is_key(f, "id") ||
		    is_key(f, "object") || is_key(f, "created") ||
		    (!model_ok && is_key(f, "model")))
			continue;
		json_buf_string(b, f->string);
		buf_append(b, ":", 1);
		json_buf_item(b, f);
		buf_append(b, ",", 1);
	}
	BUF_LIT(b, "\"id\":");
	json_buf_string(b, x->id);
	BUF_LIT(b, ",\"object\":\"chat.completion\",\"created\":");
	json_buf_number(b, (double)x->created);
	if (!model_ok) {
		BUF_KEY(b, "model");
		json_buf_string(b, x->model);
	}
}

/* A chat.completion of our own (rules, cache, preset, an upstream reply that is no object). */
static void
own_completion(struct buf *b, struct chat_ctx *x, const struct call_answer *a)
{
	char *content = answer_content(a);

	BUF_LIT(b, "{\"id\":");
	json_buf_string(b, x->id);
	BUF_LIT(b, ",\"object\":\"chat.completion\",\"created\":");
	json_buf_number(b, (double)x->created);
	BUF_KEY(b, "model");
	json_buf_string(b, x->model);
	buf_puts(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
		    "\"content\":");
	json_buf_string(b, content);
	BUF_LIT(b, "},\"finish_reason\":\"stop\"}]");
	if (a->prompt_tokens >= 0 && a->completion_tokens >= 0) {
		BUF_LIT(b, ",\"usage\":{\"prompt_tokens\":");
		json_buf_number(b, (double)a->prompt_tokens);
		BUF_KEY(b, "completion_tokens");
		json_buf_number(b, (double)a->completion_tokens);
		BUF_KEY(b, "total_tokens");
		json_buf_number(b, (double)(a->prompt_tokens + a->completion_tokens));
		buf_append(b, "}", 1);
	}
	free(content);
}

static void
chat_done(struct call *c, const struct call_answer *a, void *arg)
{
	struct chat_ctx *x = arg;
	char num[32];
	struct buf b;

	(void)c;
	if (x->opts.stream) {
		chat_stream_done(x, a);
		goto out;
	}
	http_req_add_header(x->r, "traceparent", x->traceparent);
	if (a->http_status >= 300) {
		char text[200];

		snprintf(text, sizeof text, "every rung of the ladder failed for route %s (%s)",
			 a->route, a->reason);
		http_req_add_header(x->r, "X-Request-ID", a->request_id);
		set_retry_after(x->r, a->retry_after_s);
		chat_error(x->r, a->http_status, "server_error", "exhausted", NULL, text);
		goto out;
	}
	answer_buf_init(&b, 1536 + (a->text ? 2 * strlen(a->text) : 0));
	if (cJSON_IsObject(a->upstream))
		relayed_completion(&b, x, a->upstream);
	else
		own_completion(&b, x, a);
	BUF_LIT(&b, ",\"fusebox\":");
	fusebox_buf(&b, a);
	buf_append(&b, "}", 1);
	http_req_add_header(x->r, "X-Fusebox-Source", source_name(a->source));
	http_req_add_header(x->r, "X-Fusebox-Level", i64_text(num, sizeof num, a->level));
	http_req_add_header(x->r, "X-Fusebox-Duration-Ms",
			    i64_text(num, sizeof num, a->elapsed_ms));
	http_req_add_header(x->r, "X-Request-ID", a->request_id);
	http_respond(x->r, 200, b.data, b.len);
out:
	cJSON_Delete(x->usage);
	free(x->resp_model);
	free(x->model);
	free(x);
}

/* What the route cannot honour of a parsed request: 0, or 400 with msg naming the field. */
static int
chat_route_check(const struct route_cfg *rc, const struct chat_opts *opts, char *msg, size_t msglen)
{
	if (opts->n > 1 && rc->output.present) {
		snprintf(msg, msglen,
			 "n: route %s validates its output (an \"output\" section): n must be 1",
			 rc->name);
		return 400;
	}
	if (opts->tools && !attempt_tool_calls_allowed(rc)) {
		snprintf(msg, msglen,
			 "tools: route %s does not take tool calls as answers (output.tool_calls, "
			 "or an output schema)",
			 rc->name);
		return 400;
	}
	return 0;
}

static void
handle_chat(struct http_req *r, struct engine *e)
{
	struct call_req cr;
	struct chat_opts opts;
	struct chat_ctx *x;
	char *model = NULL, *param, msg[256];
	const char *name;
	const cJSON *m;

	memset(&cr, 0, sizeof cr);
	if (e->stopping) {
		http_req_add_header(r, "Retry-After", "1");
		chat_error(r, 503, "server_error", "draining", NULL, "fuseboxd is shutting down");
		return;
	}
	if (api_chat_parse(r->body.data, r->body.len, http_req_header(r, "X-Request-ID"),
			   http_req_header(r, "X-Fusebox-Budget-Ms"), &cr, &opts, &model, msg,
			   sizeof msg) != 0) {
		param = msg_param(msg);
		chat_error(r, 400, "invalid_request_error", "invalid_request", param, msg);
		free(param);
		call_req_clear(&cr);
		free(model);
		return;
	}
	name = strncmp(model, "fusebox/", 8) == 0 ? model + 8 : model;
	cr.route = engine_route_index(e, name);
	if (cr.route < 0) {
		snprintf(msg, sizeof msg, "The model `%s` does not exist (no such route)", model);
		chat_error(r, 404, "invalid_request_error", "model_not_found", "model", msg);
		call_req_clear(&cr);
		free(model);
		return;
	}
	if (chat_route_check(e->routes[cr.route].cfg, &opts, msg, sizeof msg) != 0) {
		param = msg_param(msg);
		chat_error(r, 400, "invalid_request_error", "unsupported_parameter", param, msg);
		free(param);
		call_req_clear(&cr);
		free(model);
		return;
	}
	if (e->inflight >= e->cfg->max_inflight) {
		call_req_clear(&cr);
		free(model);
		http_req_add_header(r, "Retry-After", "1");
		chat_error(r, 429, "rate_limit_error", "overloaded", NULL,
			   "max_inflight calls in flight");
		return;
	}
	if (cr.request_id == NULL)
		cr.request_id = call_gen_request_id(e);
	x = xcalloc(1, sizeof *x);
	x->r = r;
	x->opts = opts;
	x->model = model;
	x->created = clock_wall_ms() / 1000;
	copy_cut(x->id, sizeof x->id, "chatcmpl-", 9, cr.request_id);
	copy_cut(x->request_id, sizeof x->request_id, "", 0, cr.request_id);
	/* only a usage chunk of our own reads it */
	for (m = opts.include_usage ? cr.messages->child : NULL; m; m = m->next) {
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");

		if (cJSON_IsString(content))
			x->prompt_estimate += budget_estimate_tokens(content->valuestring,
								     strlen(content->valuestring));
	}
	cr.recv_us = r->recv_us;
	call_req_trace(e, &cr, http_req_header(r, "traceparent"), http_req_header(r, "tracestate"));
	tracectx_format(&cr.trace, x->traceparent, sizeof x->traceparent);
	if (opts.stream) {
		cr.on_delta = on_delta;
		cr.delta_arg = x;
	}
	call_start(e, &cr, chat_done, x);
}

/* One route as an OpenAI model object. */
static cJSON *
model_object(const char *id, int64_t created)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "object", "model");
	cJSON_AddNumberToObject(o, "created", (double)created);
	cJSON_AddStringToObject(o, "owned_by", "fusebox");
	return o;
}

static void
handle_models(struct http_req *r, struct engine *e)
{
	cJSON *o = cJSON_CreateObject(), *data;
	int64_t created = e->started_wall_ms / 1000;
	char id[300], *body;
	int i;

	cJSON_AddStringToObject(o, "object", "list");
	data = cJSON_AddArrayToObject(o, "data");
	for (i = 0; i < e->nroutes; i++) {
		snprintf(id, sizeof id, "fusebox/%s", e->routes[i].cfg->name);
		cJSON_AddItemToArray(data, model_object(id, created));
		cJSON_AddItemToArray(data, model_object(e->routes[i].cfg->name, created));
	}
	body = json_print(o);
	cJSON_Delete(o);
	http_respond(r, 200, body, strlen(body));
}

static void
handle_model_get(struct http_req *r, struct engine *e)
{
	const char *name = r->nparams > 0 ? r->params[0] : "";
	int prefixed = strstr(r->ep->pattern, "/fusebox/") != NULL;
	char id[300], msg[400], *body;
	cJSON *o;

	snprintf(id, sizeof id, "%s%s", prefixed ? "fusebox/" : "", name);

	if (engine_route_index(e, name) < 0) {
		snprintf(msg, sizeof msg, "The model `%.200s` does not exist (no such route)", id);
		chat_error(r, 404, "invalid_request_error", "model_not_found", "model", msg);
		return;
	}
	o = model_object(id, e->started_wall_ms / 1000);
	body = json_print(o);
	cJSON_Delete(o);
	http_respond(r, 200, body, strlen(body));
}

const struct endpoint api_chat_endpoints[] = {
	{HTTP_POST, "/v1/chat/completions", ACCESS_DATA, handle_chat},
	{HTTP_GET, "/v1/models", ACCESS_DATA, handle_models},
	{HTTP_GET, "/v1/models/{}", ACCESS_DATA, handle_model_get},
	{HTTP_GET, "/v1/models/fusebox/{}", ACCESS_DATA, handle_model_get},
	{0, NULL, 0, NULL},
};
