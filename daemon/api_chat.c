/*
 * api_chat: the OpenAI-compatible facade, POST /v1/chat/completions. The
 * request's `model` names a route ("intent" or "fusebox/intent"); the
 * caller's messages, temperature, max_tokens and response_format pass to
 * the upstream (the route's prompt is not applied); the call is guarded
 * like /call. Non-streaming answers are a chat.completion whose content is
 * the model's text, a fallback result's JSON or the preset text, plus a
 * "fusebox" object. With "stream": true the answer is Server-Sent Events
 * in chat.completion.chunk form: the model's deltas are relayed as they
 * arrive; a fallback (no first token in time) streams as chunks too; a
 * stream cut after its first token ends with an error event. Engine
 * thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_call.h"
#include "api_chat.h"
#include "budget.h"
#include "call.h"
#include "clock.h"
#include "engine.h"
#include "http.h"
#include "jsonutil.h"
#include "log.h"
#include "util.h"

struct chat_ctx {
	struct http_req *r;
	int stream;
	char *model;
	char id[160];
	int64_t created;
};

static void
chat_error(struct http_req *r, unsigned status, const char *type, const char *code,
	   const char *message)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
	char *body;

	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddNullToObject(e, "param");
	body = json_print(o);
	cJSON_Delete(o);
	http_respond(r, status, body, strlen(body));
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

static cJSON *
fusebox_object(const struct call_answer *a)
{
	cJSON *f = cJSON_CreateObject();

	cJSON_AddStringToObject(f, "source", source_name(a->source));
	cJSON_AddNumberToObject(f, "level", a->level);
	cJSON_AddBoolToObject(f, "degraded", a->degraded);
	if (a->reason[0])
		cJSON_AddStringToObject(f, "reason", a->reason);
	else
		cJSON_AddNullToObject(f, "reason");
	cJSON_AddNumberToObject(f, "attempts", a->attempts);
	cJSON_AddNumberToObject(f, "elapsed_ms", (double)a->elapsed_ms);
	cJSON_AddStringToObject(f, "request_id", a->request_id);
	cJSON_AddStringToObject(f, "review", a->review ? "pending" : "none");
	if (a->backend)
		cJSON_AddStringToObject(f, "backend", a->backend);
	else
		cJSON_AddNullToObject(f, "backend");
	return f;
}

/* One chat.completion.chunk; delta_text NULL with finish for the last. */
static void
stream_chunk(struct chat_ctx *x, const char *role, const char *delta_text, size_t len,
	     const char *finish, cJSON *extra)
{
	cJSON *o = cJSON_CreateObject(), *choices, *c0, *delta;
	char *json, *content = NULL;
	struct buf b;

	cJSON_AddStringToObject(o, "id", x->id);
	cJSON_AddStringToObject(o, "object", "chat.completion.chunk");
	cJSON_AddNumberToObject(o, "created", (double)x->created);
	cJSON_AddStringToObject(o, "model", x->model);
	choices = cJSON_AddArrayToObject(o, "choices");
	c0 = cJSON_CreateObject();
	cJSON_AddNumberToObject(c0, "index", 0);
	delta = cJSON_AddObjectToObject(c0, "delta");
	if (role)
		cJSON_AddStringToObject(delta, "role", role);
	if (delta_text) {
		content = xstrndup(delta_text, len);
		cJSON_AddStringToObject(delta, "content", content);
	}
	if (finish)
		cJSON_AddStringToObject(c0, "finish_reason", finish);
	else
		cJSON_AddNullToObject(c0, "finish_reason");
	cJSON_AddItemToArray(choices, c0);
	if (extra)
		cJSON_AddItemToObject(o, "fusebox", extra);
	json = json_print(o);
	cJSON_Delete(o);
	buf_init(&b, HTTP_STREAM_MAX);
	buf_puts(&b, "data: ");
	buf_puts(&b, json);
	buf_puts(&b, "\n\n");
	http_stream_write(x->r, b.data, b.len);
	buf_free(&b);
	free(json);
	free(content);
}

static void
on_delta(void *arg, const char *text, size_t len)
{
	stream_chunk(arg, NULL, text, len, NULL, NULL);
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
}

static void
chat_done(struct call *c, const struct call_answer *a, void *arg)
{
	struct chat_ctx *x = arg;
	char *content = answer_content(a), *body, num[32];
	cJSON *o, *choices, *c0, *msg;

	(void)c;
	if (x->stream) {
		if (a->http_status >= 300 || a->stream_error[0]) {
			char line[512];
			int n = snprintf(
				line, sizeof line,
				"data: {\"error\":{\"message\":\"%s\",\"type\":\"server_error\","
				"\"code\":\"%s\"}}\n\n",
				a->http_status >= 300 ? "every rung of the ladder failed"
						      : "the upstream stream was cut short",
				a->http_status >= 300 ? "exhausted" : a->stream_error);

			http_stream_write(x->r, line, (size_t)MIN(n, (int)sizeof line - 1));
		} else {
			if (!a->streamed)
				stream_text(x, content);
			stream_chunk(x, NULL, NULL, 0, "stop", fusebox_object(a));
		}
		http_stream_write(x->r, "data: [DONE]\n\n", 14);
		http_stream_end(x->r);
		goto out;
	}
	if (a->http_status >= 300) {
		char text[200];

		snprintf(text, sizeof text, "every rung of the ladder failed for route %s (%s)",
			 a->route, a->reason);
		chat_error(x->r, a->http_status, "server_error", "exhausted", text);
		goto out;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", x->id);
	cJSON_AddStringToObject(o, "object", "chat.completion");
	cJSON_AddNumberToObject(o, "created", (double)x->created);
	cJSON_AddStringToObject(o, "model", x->model);
	choices = cJSON_AddArrayToObject(o, "choices");
	c0 = cJSON_CreateObject();
	cJSON_AddNumberToObject(c0, "index", 0);
	msg = cJSON_AddObjectToObject(c0, "message");
	cJSON_AddStringToObject(msg, "role", "assistant");
	cJSON_AddStringToObject(msg, "content", content);
	cJSON_AddStringToObject(c0, "finish_reason", "stop");
	cJSON_AddItemToArray(choices, c0);
	if (a->prompt_tokens >= 0 && a->completion_tokens >= 0) {
		cJSON *u = cJSON_AddObjectToObject(o, "usage");

		cJSON_AddNumberToObject(u, "prompt_tokens", (double)a->prompt_tokens);
		cJSON_AddNumberToObject(u, "completion_tokens", (double)a->completion_tokens);
		cJSON_AddNumberToObject(u, "total_tokens",
					(double)(a->prompt_tokens + a->completion_tokens));
	}
	cJSON_AddItemToObject(o, "fusebox", fusebox_object(a));
	body = json_print(o);
	cJSON_Delete(o);
	http_req_add_header(x->r, "X-Fusebox-Source", source_name(a->source));
	snprintf(num, sizeof num, "%d", a->level);
	http_req_add_header(x->r, "X-Fusebox-Level", num);
	snprintf(num, sizeof num, "%lld", (long long)a->elapsed_ms);
	http_req_add_header(x->r, "X-Fusebox-Duration-Ms", num);
	http_req_add_header(x->r, "X-Request-ID", a->request_id);
	http_respond(x->r, 200, body, strlen(body));
out:
	free(content);
	free(x->model);
	free(x);
}

int
api_chat_parse(const char *body, size_t len, const char *hdr_request_id, const char *hdr_budget,
	       struct call_req *cr, int *stream, char **model, char *msg, size_t msglen)
{
	cJSON *o = cJSON_ParseWithLength(body ? body : "", len);
	const cJSON *v, *m;
	const char *h;
	char *cause = NULL;
	int i = 0, rc = 400;

	msg[0] = '\0';
	*stream = 0;
	*model = NULL;
	if (!cJSON_IsObject(o)) {
		snprintf(msg, msglen, "body: must be a JSON object");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "model");
	if (!cJSON_IsString(v)) {
		snprintf(msg, msglen, "model: required, a string naming a route");
		goto out;
	}
	*model = xstrdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "messages");
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
		snprintf(msg, msglen, "messages: must be a non-empty array");
		goto out;
	}
	cr->messages = cJSON_CreateArray();
	cJSON_ArrayForEach(m, v)
	{
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		cJSON *mm;

		if (!cJSON_IsString(role)) {
			snprintf(msg, msglen, "messages[%d].role: must be a string", i);
			goto out;
		}
		mm = cJSON_CreateObject();
		cJSON_AddStringToObject(mm, "role", role->valuestring);
		if (cJSON_IsString(content)) {
			cJSON_AddStringToObject(mm, "content", content->valuestring);
		} else if (cJSON_IsArray(content)) {
			/* content parts: the text parts, joined */
			struct buf b;
			const cJSON *part;

			buf_init(&b, 4 * 1024 * 1024);
			cJSON_ArrayForEach(part, content)
			{
				const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");

				if (cJSON_IsString(t))
					buf_puts(&b, t->valuestring);
			}
			cJSON_AddStringToObject(mm, "content", b.data ? b.data : "");
			buf_free(&b);
		} else if (content == NULL || cJSON_IsNull(content)) {
			cJSON_AddStringToObject(mm, "content", "");
		} else {
			cJSON_Delete(mm);
			snprintf(msg, msglen, "messages[%d].content: must be a string or parts", i);
			goto out;
		}
		cJSON_AddItemToArray(cr->messages, mm);
		i++;
	}
	cr->params.passthrough = 1;
	v = cJSON_GetObjectItemCaseSensitive(o, "temperature");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 2) {
			snprintf(msg, msglen, "temperature: must be a number from 0 to 2");
			goto out;
		}
		cr->params.has_temperature = 1;
		cr->params.temperature = v->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "max_tokens");
	if (v == NULL || cJSON_IsNull(v))
		v = cJSON_GetObjectItemCaseSensitive(o, "max_completion_tokens");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e7) {
			snprintf(msg, msglen, "max_tokens: must be a positive integer");
			goto out;
		}
		cr->params.max_tokens = (int)v->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "response_format");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsObject(v)) {
			snprintf(msg, msglen, "response_format: must be an object");
			goto out;
		}
		cr->params.response_format = cJSON_Duplicate(v, 1);
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "stream");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsBool(v)) {
			snprintf(msg, msglen, "stream: must be true or false");
			goto out;
		}
		*stream = cJSON_IsTrue(v);
	}
	h = hdr_request_id;
	if (h) {
		if (api_request_id_check(h, "X-Request-ID", msg, msglen) != 0)
			goto out;
		cr->request_id = xstrdup(h);
	}
	/* the facade takes the caller's budget from the header only */
	if (budget_caller_parse(hdr_budget, NULL, &cr->caller_budget_ms, &cause) != 0) {
		snprintf(msg, msglen, "%s", cause);
		goto out;
	}
	cr->allow_llm = 1;
	rc = 0;
out:
	free(cause);
	cJSON_Delete(o);
	return rc;
}

static void
handle_chat(struct http_req *r, struct engine *e)
{
	struct call_req cr;
	struct chat_ctx *x;
	char *model = NULL, msg[256];
	const char *name;
	int stream = 0;

	memset(&cr, 0, sizeof cr);
	if (e->stopping) {
		http_req_add_header(r, "Retry-After", "1");
		chat_error(r, 503, "server_error", "draining", "fuseboxd is shutting down");
		return;
	}
	if (api_chat_parse(r->body.data, r->body.len, http_req_header(r, "X-Request-ID"),
			   http_req_header(r, "X-Fusebox-Budget-Ms"), &cr, &stream, &model, msg,
			   sizeof msg) != 0) {
		chat_error(r, 400, "invalid_request_error", "invalid_request", msg);
		call_req_clear(&cr);
		free(model);
		return;
	}
	name = strncmp(model, "fusebox/", 8) == 0 ? model + 8 : model;
	cr.route = engine_route_index(e, name);
	if (cr.route < 0) {
		snprintf(msg, sizeof msg, "The model `%s` does not exist (no such route)", model);
		chat_error(r, 404, "invalid_request_error", "model_not_found", msg);
		call_req_clear(&cr);
		free(model);
		return;
	}
	if (e->inflight >= e->cfg->max_inflight) {
		call_req_clear(&cr);
		free(model);
		http_req_add_header(r, "Retry-After", "1");
		chat_error(r, 429, "rate_limit_error", "overloaded",
			   "max_inflight calls in flight");
		return;
	}
	if (cr.request_id == NULL)
		cr.request_id = call_gen_request_id(e);
	x = xcalloc(1, sizeof *x);
	x->r = r;
	x->stream = stream;
	x->model = model;
	x->created = clock_wall_ms() / 1000;
	snprintf(x->id, sizeof x->id, "chatcmpl-%s", cr.request_id);
	cr.recv_us = r->recv_us;
	if (stream) {
		http_req_add_header(r, "X-Request-ID", cr.request_id);
		http_req_add_header(r, "Cache-Control", "no-cache");
		http_stream_begin(r, 200, "text/event-stream");
		stream_chunk(x, "assistant", "", 0, NULL, NULL);
		cr.on_delta = on_delta;
		cr.delta_arg = x;
	}
	call_start(e, &cr, chat_done, x);
}

const struct endpoint api_chat_endpoints[] = {
	{HTTP_POST, "/v1/chat/completions", ACCESS_DATA, handle_chat},
	{0, NULL, 0, NULL},
};
