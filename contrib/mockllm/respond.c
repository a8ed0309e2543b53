/*
 * Responses: error and JSON bodies, the chat.completion and SSE bodies as
 * segments, the content reader, and the chat endpoint. MHD thread.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#include "mockllm.h"

static const char *
error_type(unsigned int status, const char **code)
{
	const char *type;

	*code = NULL;
	switch (status) {
	case 401:
		*code = "invalid_api_key";
		type = "authentication_error";
		break;
	case 403:
		type = "permission_error";
		break;
	case 429:
		*code = "rate_limit_exceeded";
		type = "rate_limit_error";
		break;
	default:
		type = status >= 500 ? "server_error" : "invalid_request_error";
		break;
	}
	return type;
}

static char *
error_json(unsigned int status, const char *message)
{
	const char *code;
	cJSON *root, *e;
	char *s;

	root = cJSON_CreateObject();
	e = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddStringToObject(e, "type", error_type(status, &code));
	cJSON_AddNullToObject(e, "param");
	if (code != NULL)
		cJSON_AddStringToObject(e, "code", code);
	else
		cJSON_AddNullToObject(e, "code");
	s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return s;
}

/* Queue a small in-memory response; text is consumed. */
static enum MHD_Result
respond_text(struct req *r, unsigned int status, char *text, const char *ctype)
{
	struct MHD_Response *resp;
	enum MHD_Result ret = MHD_NO;

	r->status = status;
	r->phase = PHASE_SEND;
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(text);
		goto out;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
out:
	return ret;
}

enum MHD_Result
respond_error(struct req *r, unsigned int status, const char *message)
{
	return respond_text(r, status, error_json(status, message), "application/json");
}

enum MHD_Result
respond_json(struct req *r, unsigned int status, cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j);

	cJSON_Delete(j);
	return respond_text(r, status, s, "application/json");
}

static void
req_seg_add(struct req *r, char *data, size_t len, char fill, int64_t due)
{
	r->segs = xrealloc(r->segs, (r->nsegs + 1) * sizeof *r->segs);
	r->segs[r->nsegs].data = data;
	r->segs[r->nsegs].len = len;
	r->segs[r->nsegs].fill = fill;
	r->segs[r->nsegs].due_ms = due;
	r->nsegs++;
	r->total += len;
}

static const char *
req_content(const struct req *r)
{
	return r->bh.content != NULL ? r->bh.content : preset_texts[r->bh.preset];
}

/* A JSON string literal's inside (without quotes), malloc'd. */
static char *
json_escape(const char *s)
{
	cJSON *j = cJSON_CreateString(s);
	char *p, *q;
	size_t n;

	p = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	n = strlen(p);
	q = xmalloc(n - 1);
	memcpy(q, p + 1, n - 2);
	q[n - 2] = '\0';
	free(p);
	return q;
}

static const char *
req_finish(const struct req *r)
{
	if (r->bh.finish_reason != NULL)
		return r->bh.finish_reason;
	return r->bh.tool_calls != NULL ? "tool_calls" : "stop";
}

/* The behaviour's tool calls in OpenAI's shape; index: add "index" (stream deltas). */
static cJSON *
tool_calls_json(const struct req *r, int index)
{
	cJSON *in = cJSON_Parse(r->bh.tool_calls), *out = cJSON_CreateArray(), *t;
	const cJSON *id, *name, *args;
	int i = 0;

	cJSON_ArrayForEach(t, in)
	{
		cJSON *o = cJSON_CreateObject(), *fn;
		char *gen = xasprintf("call_mock_%" PRIu64 "_%d", r->id, i);

		id = cJSON_GetObjectItemCaseSensitive(t, "id");
		name = cJSON_GetObjectItemCaseSensitive(t, "name");
		args = cJSON_GetObjectItemCaseSensitive(t, "arguments");
		if (index)
			cJSON_AddNumberToObject(o, "index", i);
		cJSON_AddStringToObject(o, "id", cJSON_IsString(id) ? id->valuestring : gen);
		cJSON_AddStringToObject(o, "type", "function");
		fn = cJSON_AddObjectToObject(o, "function");
		cJSON_AddStringToObject(fn, "name", cJSON_IsString(name) ? name->valuestring : "f");
		cJSON_AddStringToObject(fn, "arguments",
					cJSON_IsString(args) ? args->valuestring : "{}");
		cJSON_AddItemToArray(out, o);
		free(gen);
		i++;
	}
	cJSON_Delete(in);
	return out;
}

/* A chat.completion whose message carries the behaviour's tool calls (n choices). */
static void
req_build_tool_completion(struct req *r, int64_t now)
{
	cJSON *root, *choice, *msg, *usage, *choices;
	char *text, *idstr = xasprintf("mock-%" PRIu64, r->id);
	int i;

	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "id", idstr);
	cJSON_AddStringToObject(root, "object", "chat.completion");
	cJSON_AddNumberToObject(root, "created", (double)time(NULL));
	cJSON_AddStringToObject(root, "model", r->model);
	cJSON_AddStringToObject(root, "system_fingerprint", "fp_mock");
	choices = cJSON_AddArrayToObject(root, "choices");
	for (i = 0; i < r->n; i++) {
		choice = cJSON_CreateObject();
		cJSON_AddNumberToObject(choice, "index", i);
		msg = cJSON_AddObjectToObject(choice, "message");
		cJSON_AddStringToObject(msg, "role", "assistant");
		cJSON_AddNullToObject(msg, "content");
		cJSON_AddItemToObject(msg, "tool_calls", tool_calls_json(r, 0));
		cJSON_AddStringToObject(choice, "finish_reason", req_finish(r));
		cJSON_AddItemToArray(choices, choice);
	}
	usage = cJSON_AddObjectToObject(root, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens", (double)r->prompt_tokens);
	cJSON_AddNumberToObject(usage, "completion_tokens", 9);
	cJSON_AddNumberToObject(usage, "total_tokens", (double)(r->prompt_tokens + 9));
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	free(idstr);
	req_seg_add(r, text, strlen(text), 0, now);
}

/*
 * A chat.completion split around the content so that body_bytes padding
 * (spaces after the content, still valid JSON content) costs no memory:
 * [head + escaped content] [pad] [tail].
 */
static void
req_build_completion(struct req *r, int64_t now)
{
	static const char key[] = "\"content\":\"\"";
	const char *content = req_content(r);
	cJSON *root, *choice, *msg, *usage;
	char *text, *esc, *head, *at, *idstr;
	int64_t ctoks;
	size_t hlen, minimal, pad = 0;
	int ci;

	ctoks = ((int64_t)strlen(content) + 3) / 4;
	idstr = xasprintf("mock-%" PRIu64, r->id);
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "id", idstr);
	cJSON_AddStringToObject(root, "object", "chat.completion");
	cJSON_AddNumberToObject(root, "created", (double)time(NULL));
	cJSON_AddStringToObject(root, "model", r->model);
	cJSON_AddStringToObject(root, "system_fingerprint", "fp_mock");
	choice = cJSON_CreateObject();
	cJSON_AddNumberToObject(choice, "index", 0);
	msg = cJSON_AddObjectToObject(choice, "message");
	cJSON_AddStringToObject(msg, "role", "assistant");
	cJSON_AddStringToObject(msg, "content", "");
	cJSON_AddStringToObject(choice, "finish_reason", req_finish(r));
	cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
	/* choices past the first (n > 1) answer the same content */
	for (ci = 1; ci < r->n; ci++) {
		choice = cJSON_CreateObject();
		cJSON_AddNumberToObject(choice, "index", ci);
		msg = cJSON_AddObjectToObject(choice, "message");
		cJSON_AddStringToObject(msg, "role", "assistant");
		cJSON_AddStringToObject(msg, "content", content);
		cJSON_AddStringToObject(choice, "finish_reason", req_finish(r));
		cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "choices"), choice);
	}
	usage = cJSON_AddObjectToObject(root, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens", (double)r->prompt_tokens);
	cJSON_AddNumberToObject(usage, "completion_tokens", (double)ctoks);
	cJSON_AddNumberToObject(usage, "total_tokens", (double)(r->prompt_tokens + ctoks));
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	free(idstr);

	/* Quotes inside string values are escaped: the key is unique. */
	at = strstr(text, key);
	hlen = (size_t)(at - text) + sizeof key - 2;
	esc = json_escape(content);
	head = xasprintf("%.*s%s", (int)hlen, text, esc);
	minimal = strlen(head) + strlen(text + hlen);
	if (r->bh.body_bytes > 0 && (uint64_t)r->bh.body_bytes > minimal)
		pad = (size_t)r->bh.body_bytes - minimal;
	req_seg_add(r, head, strlen(head), 0, now);
	if (pad > 0)
		req_seg_add(r, NULL, pad, ' ', now);
	req_seg_add(r, xstrdup(text + hlen), strlen(text + hlen), 0, now);
	free(esc);
	free(text);
}

static char *
sse_event(const struct req *r, const char *piece, int first, int last)
{
	cJSON *root, *choice, *delta;
	char *idstr, *s, *ev;

	idstr = xasprintf("mock-%" PRIu64, r->id);
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "id", idstr);
	cJSON_AddStringToObject(root, "object", "chat.completion.chunk");
	cJSON_AddNumberToObject(root, "created", (double)time(NULL));
	cJSON_AddStringToObject(root, "model", r->model);
	choice = cJSON_CreateObject();
	cJSON_AddNumberToObject(choice, "index", 0);
	delta = cJSON_AddObjectToObject(choice, "delta");
	if (first)
		cJSON_AddStringToObject(delta, "role", "assistant");
	if (piece != NULL)
		cJSON_AddStringToObject(delta, "content", piece);
	if (last)
		cJSON_AddStringToObject(choice, "finish_reason", req_finish(r));
	else
		cJSON_AddNullToObject(choice, "finish_reason");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
	s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	ev = xasprintf("data: %s\n\n", s);
	free(s);
	free(idstr);
	return ev;
}

static char *
sse_text(cJSON *root)
{
	char *s = cJSON_PrintUnformatted(root), *ev = xasprintf("data: %s\n\n", s);

	cJSON_Delete(root);
	free(s);
	return ev;
}

static cJSON *
sse_head(const struct req *r)
{
	cJSON *root = cJSON_CreateObject();
	char *idstr = xasprintf("mock-%" PRIu64, r->id);

	cJSON_AddStringToObject(root, "id", idstr);
	cJSON_AddStringToObject(root, "object", "chat.completion.chunk");
	cJSON_AddNumberToObject(root, "created", (double)time(NULL));
	cJSON_AddStringToObject(root, "model", r->model);
	cJSON_AddStringToObject(root, "system_fingerprint", "fp_mock");
	free(idstr);
	return root;
}

/* The include_usage chunk: no choices, the usage. */
static char *
sse_usage(const struct req *r, int64_t ctoks)
{
	cJSON *root = sse_head(r), *usage;

	cJSON_AddArrayToObject(root, "choices");
	usage = cJSON_AddObjectToObject(root, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens", (double)r->prompt_tokens);
	cJSON_AddNumberToObject(usage, "completion_tokens", (double)ctoks);
	cJSON_AddNumberToObject(usage, "total_tokens", (double)(r->prompt_tokens + ctoks));
	return sse_text(root);
}

/* One tool-call delta chunk: tc (consumed) under choice 0's delta.tool_calls. */
static char *
sse_tool_delta(const struct req *r, cJSON *tc, int first)
{
	cJSON *root = sse_head(r), *choice = cJSON_CreateObject(), *delta, *arr;

	cJSON_AddNumberToObject(choice, "index", 0);
	delta = cJSON_AddObjectToObject(choice, "delta");
	if (first) {
		cJSON_AddStringToObject(delta, "role", "assistant");
		cJSON_AddNullToObject(delta, "content");
	}
	arr = cJSON_AddArrayToObject(delta, "tool_calls");
	cJSON_AddItemToArray(arr, tc);
	cJSON_AddNullToObject(choice, "finish_reason");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
	return sse_text(root);
}

/*
 * SSE of a tool-call answer: per tool call a chunk with its id and name,
 * then its arguments in two pieces, stream_chunk_ms apart; the finish
 * chunk, the usage chunk (include_usage) and [DONE] with the last.
 */
static void
req_build_tool_stream(struct req *r, int64_t now)
{
	cJSON *calls = tool_calls_json(r, 1), *t, *root, *choice;
	int64_t due = now + r->bh.stream_first_delay_ms;
	char *ev, *tail, *usage;
	int first = 1;

	cJSON_ArrayForEach(t, calls)
	{
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const char *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments")->valuestring;
		size_t half = strlen(args) / 2;
		cJSON *head = cJSON_Duplicate(t, 1), *piece;
		char *a1 = xasprintf("%.*s", (int)half, args);

		cJSON_ReplaceItemInObjectCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(head, "function"), "arguments",
			cJSON_CreateString(""));
		ev = sse_tool_delta(r, head, first);
		first = 0;
		req_seg_add(r, ev, strlen(ev), 0, due);
		due += r->bh.stream_chunk_ms;
		piece = cJSON_CreateObject();
		cJSON_AddNumberToObject(piece, "index",
					cJSON_GetObjectItemCaseSensitive(t, "index")->valuedouble);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(piece, "function"), "arguments",
					a1);
		ev = sse_tool_delta(r, piece, 0);
		req_seg_add(r, ev, strlen(ev), 0, due);
		due += r->bh.stream_chunk_ms;
		piece = cJSON_CreateObject();
		cJSON_AddNumberToObject(piece, "index",
					cJSON_GetObjectItemCaseSensitive(t, "index")->valuedouble);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(piece, "function"), "arguments",
					args + half);
		ev = sse_tool_delta(r, piece, 0);
		req_seg_add(r, ev, strlen(ev), 0, due);
		due += r->bh.stream_chunk_ms;
		free(a1);
	}
	cJSON_Delete(calls);
	root = sse_head(r);
	choice = cJSON_CreateObject();
	cJSON_AddNumberToObject(choice, "index", 0);
	cJSON_AddObjectToObject(choice, "delta");
	cJSON_AddStringToObject(choice, "finish_reason", req_finish(r));
	cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
	tail = sse_text(root);
	usage = r->include_usage ? sse_usage(r, 9) : xstrdup("");
	ev = xasprintf("%s%sdata: [DONE]\n\n", tail, usage);
	free(tail);
	free(usage);
	req_seg_add(r, ev, strlen(ev), 0, due);
}

/*
 * SSE: up to STREAM_PIECES content events (split on UTF-8 boundaries), the
 * first stream_first_delay_ms after the headers, then one every
 * stream_chunk_ms; the finish event and [DONE] go with the last piece.
 */
static void
req_build_stream(struct req *r, int64_t now)
{
	const char *content = req_content(r);
	size_t len = strlen(content), step, off = 0, end;
	int64_t due = now + r->bh.stream_first_delay_ms;
	char *piece, *ev, *fin;
	int i = 0;

	step = (len + STREAM_PIECES - 1) / STREAM_PIECES;
	do {
		end = off + step;
		if (end > len)
			end = len;
		while (end < len && ((unsigned char)content[end] & 0xc0) == 0x80)
			end++;
		piece = xmalloc(end - off + 1);
		memcpy(piece, content + off, end - off);
		piece[end - off] = '\0';
		ev = sse_event(r, piece, i == 0, 0);
		free(piece);
		if (end >= len) {
			fin = sse_event(r, NULL, 0, 1);
			piece = ev;
			if (r->include_usage) {
				char *u = sse_usage(r, ((int64_t)len + 3) / 4);

				ev = xasprintf("%s%s%sdata: [DONE]\n\n", piece, fin, u);
				free(u);
			} else {
				ev = xasprintf("%s%sdata: [DONE]\n\n", piece, fin);
			}
			free(piece);
			free(fin);
		}
		req_seg_add(r, ev, strlen(ev), 0, due);
		due += r->bh.stream_chunk_ms;
		off = end;
		i++;
	} while (off < len);
}

/*
 * MHD content reader: serve the body segments, waiting (suspended) for a
 * segment's due time or the next drip, and failing the transfer at limit.
 */
static ssize_t
req_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct req *r = cls;
	const struct seg *s;
	int64_t now, wait_until;
	ssize_t ret = MHD_CONTENT_READER_END_WITH_ERROR;
	uint64_t n;

	if (!req_alive(r))
		goto out;
	if (r->limit >= 0 && pos >= (uint64_t)r->limit)
		goto out;
	if (pos >= r->total) {
		ret = MHD_CONTENT_READER_END_OF_STREAM;
		goto out;
	}
	while (r->cur < r->nsegs && pos >= r->cur_start + r->segs[r->cur].len) {
		r->cur_start += r->segs[r->cur].len;
		r->cur++;
	}
	if (r->cur == r->nsegs)
		goto out;
	s = &r->segs[r->cur];
	now = mono_ms();
	wait_until = s->due_ms;
	if (r->drip_ms > 0 && r->next_drip_ms > wait_until)
		wait_until = r->next_drip_ms;
	if (wait_until > now) {
		if (req_suspend(r, wait_until) == 0)
			ret = 0;
		goto out;
	}
	n = r->cur_start + s->len - pos;
	if (n > max)
		n = max;
	if (r->limit >= 0 && n > (uint64_t)r->limit - pos)
		n = (uint64_t)r->limit - pos;
	if (r->drip_ms > 0) {
		n = 1;
		r->next_drip_ms = now + r->drip_ms;
	}
	if (s->data != NULL)
		memcpy(buf, s->data + (pos - r->cur_start), n);
	else
		memset(buf, s->fill, n);
	ret = (ssize_t)n;
out:
	return ret;
}

/*
 * The rate-limit headers of a windowed answer; a refusal also gets
 * retry-after-ms and retry-after (the behaviour's retry_after otherwise).
 */
static void
ratelimit_headers(const struct req *r, struct MHD_Response *resp, int64_t now)
{
	int64_t left = r->rl_end_ms - now;
	char v[64];

	if (left < 0)
		left = 0;
	if (r->rl_limit_req > 0) {
		snprintf(v, sizeof v, "%" PRId64, r->rl_limit_req);
		MHD_add_response_header(resp, "x-ratelimit-limit-requests", v);
		snprintf(v, sizeof v, "%" PRId64, r->rl_left_req);
		MHD_add_response_header(resp, "x-ratelimit-remaining-requests", v);
		duration_format(v, sizeof v, left);
		MHD_add_response_header(resp, "x-ratelimit-reset-requests", v);
	}
	if (r->rl_limit_tok > 0) {
		snprintf(v, sizeof v, "%" PRId64, r->rl_limit_tok);
		MHD_add_response_header(resp, "x-ratelimit-limit-tokens", v);
		snprintf(v, sizeof v, "%" PRId64, r->rl_left_tok);
		MHD_add_response_header(resp, "x-ratelimit-remaining-tokens", v);
		duration_format(v, sizeof v, left);
		MHD_add_response_header(resp, "x-ratelimit-reset-tokens", v);
	}
	if (r->rl_refused) {
		if (left < 1)
			left = 1;
		snprintf(v, sizeof v, "%" PRId64, left);
		MHD_add_response_header(resp, "retry-after-ms", v);
		snprintf(v, sizeof v, "%" PRId64, (left + 999) / 1000);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, v);
	} else if (r->bh.retry_after != NULL) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, r->bh.retry_after);
	}
}

static enum MHD_Result
chat_respond(struct req *r)
{
	struct MHD_Response *resp = NULL;
	const char *ctype = "application/json";
	enum MHD_Result ret = MHD_NO;
	int64_t now = mono_ms();
	char *text, *err, *idstr = NULL;
	int sized = 1;

	r->phase = PHASE_SEND;
	if (r->rl_refused) {
		r->status = 429;
		err = error_json(429, r->rl_refused == 1 ? "mock: rate limit reached for requests"
							 : "mock: rate limit reached for tokens");
		req_seg_add(r, err, strlen(err), 0, now);
		goto send;
	}
	if (r->bh.reset)
		goto out;
	r->status = (unsigned int)r->bh.status;
	if (r->bh.body != NULL) {
		req_seg_add(r, xstrdup(r->bh.body), strlen(r->bh.body), 0, now);
	} else if (r->status != 200) {
		text = xasprintf("mock: simulated HTTP %u", r->status);
		err = error_json(r->status, text);
		free(text);
		req_seg_add(r, err, strlen(err), 0, now);
	} else if (r->stream) {
		if (r->bh.tool_calls != NULL)
			req_build_tool_stream(r, now);
		else
			req_build_stream(r, now);
		ctype = "text/event-stream";
		sized = 0;
	} else if (r->bh.tool_calls != NULL) {
		req_build_tool_completion(r, now);
	} else {
		req_build_completion(r, now);
	}
	if (r->bh.content_type != NULL)
		ctype = r->bh.content_type;
	r->limit = r->bh.reset_after_bytes;
	if (r->bh.truncate && (r->limit < 0 || (uint64_t)r->limit > r->total / 2))
		r->limit = (int64_t)(r->total / 2);
	r->drip_ms = r->bh.drip_ms;
send:
	resp = MHD_create_response_from_callback(sized ? r->total : MHD_SIZE_UNKNOWN, READ_BLOCK,
						 req_read, r, NULL);
	if (resp == NULL)
		goto out;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(resp, "X-Mock-Backend", r->backend->name);
	idstr = xasprintf("mock-%" PRIu64, r->id);
	MHD_add_response_header(resp, "X-Mock-Id", idstr);
	if (r->rl)
		ratelimit_headers(r, resp, now);
	else if (r->bh.retry_after != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, r->bh.retry_after);
	if (!sized)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	ret = MHD_queue_response(r->conn, r->status, resp);
out:
	if (resp != NULL)
		MHD_destroy_response(resp);
	free(idstr);
	return ret;
}

static int64_t
prompt_tokens(const cJSON *body)
{
	const cJSON *msgs, *m, *c;
	size_t bytes = 0;

	msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
	cJSON_ArrayForEach(m, msgs)
	{
		c = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (cJSON_IsString(c))
			bytes += strlen(c->valuestring);
	}
	return (int64_t)(bytes + 3) / 4 + 1;
}

/* Tokens the window counts for r: the prompt estimate and the completion. */
static int64_t
req_tokens(const struct req *r)
{
	int64_t ctoks = r->bh.tool_calls != NULL ? 9 : ((int64_t)strlen(req_content(r)) + 3) / 4;

	return r->prompt_tokens + ctoks;
}

/* Admit r into its backend's rate-limit window, or refuse it; caller holds mock.lock. */
static void
ratelimit_admit(struct req *r, struct backend *be, int64_t now)
{
	const struct behave *b = &r->bh;
	int64_t tokens = req_tokens(r);

	if (b->ratelimit_reset_ms <= 0)
		return;
	if (be->rl_end_ms == 0 || now >= be->rl_end_ms) {
		be->rl_end_ms = now + b->ratelimit_reset_ms;
		be->rl_requests = 0;
		be->rl_tokens = 0;
	}
	r->rl = 1;
	r->rl_end_ms = be->rl_end_ms;
	if (b->ratelimit_requests > 0 && be->rl_requests >= b->ratelimit_requests)
		r->rl_refused = 1;
	else if (b->ratelimit_tokens > 0 && be->rl_tokens + tokens > b->ratelimit_tokens)
		r->rl_refused = 2;
	if (r->rl_refused) {
		be->ratelimited++;
	} else {
		be->rl_requests++;
		be->rl_tokens += tokens;
	}
	r->rl_limit_req = b->ratelimit_requests;
	r->rl_left_req = b->ratelimit_requests - be->rl_requests;
	if (r->rl_left_req < 0)
		r->rl_left_req = 0;
	r->rl_limit_tok = b->ratelimit_tokens;
	r->rl_left_tok = b->ratelimit_tokens - be->rl_tokens;
	if (r->rl_left_tok < 0)
		r->rl_left_tok = 0;
}

/*
 * The delay of a parsed request: the tail draw, the knee's slow-down, the
 * rate-limit window (a refusal waits for nothing). Caller holds mock.lock.
 */
static int64_t
shape_delay(struct req *r, struct backend *be, int64_t delay)
{
	const struct behave *b = &r->bh;
	double f;

	if (b->tail_pct > 0 && (double)(rng_next() % 1000000) < b->tail_pct * 10000.0) {
		delay = b->tail_delay_ms;
		be->tail_delayed++;
	}
	if (b->knee > 0 && be->inflight > b->knee) {
		f = pow((double)be->inflight / (double)b->knee, b->knee_exp);
		delay = (int64_t)((double)delay * f + 0.5);
		if (delay > MS_MAX)
			delay = MS_MAX;
		be->knee_delayed++;
	}
	ratelimit_admit(r, be, mono_ms());
	return r->rl_refused ? 0 : delay;
}

/* The request body is complete: pick the behaviour and start it. */
static enum MHD_Result
chat_start(struct req *r, const char *method)
{
	struct backend *be = r->backend;
	const cJSON *model, *stream, *n;
	cJSON *body = NULL, *last;
	int64_t delay = 0;
	enum MHD_Result ret;
	int valid;

	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
		ret = respond_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST");
		goto out;
	}
	if (r->too_big) {
		ret = respond_error(r, 413, "request body over 4 MiB");
		goto out;
	}
	if (r->body != NULL)
		body = cJSON_ParseWithLength(r->body, r->body_len);
	valid = cJSON_IsObject(body);
	if (valid) {
		model = cJSON_GetObjectItemCaseSensitive(body, "model");
		stream = cJSON_GetObjectItemCaseSensitive(body, "stream");
		r->model = xstrdup(cJSON_IsString(model) ? model->valuestring : "mock");
		r->stream = cJSON_IsTrue(stream);
		r->prompt_tokens = prompt_tokens(body);
		r->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(body, "stream_options"), "include_usage"));
		n = cJSON_GetObjectItemCaseSensitive(body, "n");
		r->n = cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble <= 16
			       ? (int)n->valuedouble
			       : 1;
	}

	last = cJSON_CreateObject();
	cJSON_AddItemToObject(last, "headers", r->headers);
	r->headers = NULL;
	if (body != NULL)
		cJSON_AddItemToObject(last, "body", body);
	else
		cJSON_AddNullToObject(last, "body");
	body = NULL;

	/* A request the mock cannot parse consumes no script item. */
	pthread_mutex_lock(&mock.lock);
	cJSON_Delete(be->last_request);
	be->last_request = last;
	if (valid && be->script_pos < be->nscript)
		behave_copy(&r->bh, &be->script[be->script_pos++]);
	else if (valid)
		behave_copy(&r->bh, &be->base);
	if (r->bh.delay_min_ms >= 0)
		delay = r->bh.delay_min_ms +
			(int64_t)(rng_next() %
				  (uint64_t)(r->bh.delay_max_ms - r->bh.delay_min_ms + 1));
	else
		delay = r->bh.delay_ms;
	if (valid)
		delay = shape_delay(r, be, delay);
	pthread_mutex_unlock(&mock.lock);

	if (!valid) {
		ret = respond_error(r, MHD_HTTP_BAD_REQUEST, "request body is not a JSON object");
		goto out;
	}
	if (r->rl_refused) {
		ret = chat_respond(r);
		goto out;
	}
	delay += r->bh.hang_ms;
	if (r->bh.hang || delay > 0) {
		r->phase = PHASE_WAIT;
		if (req_suspend(r, r->bh.hang ? WAIT_FOREVER : mono_ms() + delay) != 0)
			ret = MHD_NO;
		else
			ret = MHD_YES;
		goto out;
	}
	ret = chat_respond(r);
out:
	cJSON_Delete(body);
	return ret;
}

enum MHD_Result
chat_handle(struct req *r, const char *method)
{
	enum MHD_Result ret;

	switch (r->phase) {
	case PHASE_RECV:
		ret = chat_start(r, method);
		break;
	case PHASE_WAIT:
		if (!req_alive(r))
			ret = MHD_NO;
		else
			ret = chat_respond(r);
		break;
	default:
		ret = MHD_NO;
		break;
	}
	return ret;
}
