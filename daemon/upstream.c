/*
 * upstream: request bodies, reply parsing, outcome classification.
 */
#include "upstream.h"

#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "jsonutil.h"
#include "util.h"

char *
upstream_render(const char *tmpl, const char *input)
{
	struct buf b;
	const char *p = tmpl, *hit;

	buf_init(&b, SIZE_MAX / 2);
	while ((hit = strstr(p, "{{input}}")) != NULL) {
		buf_append(&b, p, (size_t)(hit - p));
		buf_puts(&b, input ? input : "");
		p = hit + strlen("{{input}}");
	}
	buf_puts(&b, p);
	return buf_steal(&b);
}

/* Append {"role":..,"content":..} to the messages array being written in b. */
static void
add_message(struct buf *b, int *n, const char *role, const char *content, int64_t *tokens)
{
	if ((*n)++ > 0)
		buf_append(b, ",", 1);
	buf_puts(b, "{\"role\":");
	json_buf_string(b, role);
	buf_puts(b, ",\"content\":");
	json_buf_string(b, content);
	buf_append(b, "}", 1);
	*tokens += budget_estimate_tokens(content, strlen(content));
}

/*
 * A caller's message as it came (the facade): tool calls, tool_call_id,
 * name and content parts pass unchanged. The estimate counts the text of
 * the content and of the tool calls' arguments.
 */
static void
add_message_verbatim(struct buf *b, int *n, const cJSON *m, int64_t *tokens)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content"), *tc, *t;

	if ((*n)++ > 0)
		buf_append(b, ",", 1);
	json_buf_item(b, m);
	if (cJSON_IsString(content))
		*tokens +=
			budget_estimate_tokens(content->valuestring, strlen(content->valuestring));
	tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
	cJSON_ArrayForEach(t, tc)
	{
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;

		if (cJSON_IsString(args))
			*tokens += budget_estimate_tokens(args->valuestring,
							  strlen(args->valuestring));
	}
}

int64_t
upstream_max_tokens(const struct route_cfg *rc, const struct upstream_params *p)
{
	return p && p->max_tokens > 0 ? p->max_tokens : rc->prompt.max_tokens;
}

/*
 * Written straight into a buffer (no cJSON tree: this runs for every
 * attempt), in the order and with the number formatting json_print() uses:
 * model, messages, temperature, max_tokens, response_format, stream, then
 * the caller's other fields in the order sent.
 */
char *
upstream_build_body_ex(const struct route_cfg *rc, const struct backend_cfg *bc, int backup,
		       const char *input, const cJSON *messages, const struct upstream_params *p,
		       int64_t *input_tokens)
{
	const cJSON *first = NULL;
	int64_t tokens = 0;
	double temperature = rc->prompt.temperature;
	int i, n = 0, have_system = 0;
	struct buf b;

	buf_init(&b, SIZE_MAX / 2);
	buf_puts(&b, "{\"model\":");
	json_buf_string(&b, bc->model ? bc->model : "");
	buf_puts(&b, ",\"messages\":[");
	if (messages) {
		const cJSON *role;

		first = cJSON_GetArrayItem(messages, 0);
		role = first ? cJSON_GetObjectItemCaseSensitive(first, "role") : NULL;
		have_system = cJSON_IsString(role) && strcmp(role->valuestring, "system") == 0;
	}
	/* The system message goes first, also ahead of the backup's few-shot
	 * examples: many chat templates reject a system message elsewhere. */
	if (have_system && p && p->passthrough) {
		/* written with the others, verbatim */
	} else if (have_system) {
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(first, "content");

		if (cJSON_IsString(content))
			add_message(&b, &n, "system", content->valuestring, &tokens);
	} else if (rc->prompt.system && !(p && p->passthrough)) {
		add_message(&b, &n, "system", rc->prompt.system, &tokens);
	}
	if (backup && !(p && p->passthrough)) {
		for (i = 0; i < rc->backup.nfew_shot; i++)
			add_message(&b, &n, rc->backup.few_shot[i].role,
				    rc->backup.few_shot[i].content, &tokens);
		if (rc->backup.has_temperature)
			temperature = rc->backup.temperature;
	}
	if (messages && p && p->passthrough) {
		const cJSON *m;

		for (m = first; m; m = m->next)
			add_message_verbatim(&b, &n, m, &tokens);
	} else if (messages) {
		const cJSON *m;

		cJSON_ArrayForEach(m, messages)
		{
			const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
			const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");

			if (have_system && m == first)
				continue;
			if (cJSON_IsString(role) && cJSON_IsString(content))
				add_message(&b, &n, role->valuestring, content->valuestring,
					    &tokens);
		}
	} else {
		char *user =
			upstream_render(rc->prompt.user ? rc->prompt.user : "{{input}}", input);

		add_message(&b, &n, "user", user, &tokens);
		free(user);
	}
	buf_append(&b, "]", 1);
	if (p && p->has_temperature)
		temperature = p->temperature;
	buf_puts(&b, ",\"temperature\":");
	json_buf_number(&b, temperature);
	buf_puts(&b, p && p->max_completion && p->max_tokens > 0 ? ",\"max_completion_tokens\":"
								 : ",\"max_tokens\":");
	json_buf_number(&b, upstream_max_tokens(rc, p));
	if (p && p->response_format) {
		buf_puts(&b, ",\"response_format\":");
		json_buf_item(&b, p->response_format);
	} else if (rc->prompt.response_format_json && rc->output.present &&
		   !(p && p->passthrough)) {
		buf_puts(&b, ",\"response_format\":{\"type\":\"json_object\"}");
	}
	if (p && p->stream)
		buf_puts(&b, ",\"stream\":true");
	if (p && p->extra) {
		const cJSON *f;

		for (f = p->extra->child; f; f = f->next) {
			if (f->string == NULL)
				continue;
			buf_append(&b, ",", 1);
			json_buf_string(&b, f->string);
			buf_append(&b, ":", 1);
			json_buf_item(&b, f);
		}
	}
	buf_append(&b, "}", 1);
	*input_tokens = tokens;
	return buf_steal(&b);
}

/*
 * A usage count as the upstream sent it: untrusted, so anything but a
 * number in [0, 1e15] is unknown (-1). The bound keeps the double-to-int64
 * conversion defined and the sums of two counts from overflowing.
 */
static int64_t
usage_tokens(const cJSON *v)
{
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1e15))
		return -1;
	return (int64_t)v->valuedouble;
}

int
upstream_parse_reply_ex(const char *body, size_t len, int keep, struct upstream_reply *out)
{
	cJSON *o = NULL;
	const cJSON *choices, *c0, *msg, *content, *usage, *pt, *ct, *tc, *fr;
	int r = UPSTREAM_E_INVALID;

	memset(out, 0, sizeof *out);
	out->prompt_tokens = -1;
	out->completion_tokens = -1;
	o = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(o))
		goto out;
	choices = cJSON_GetObjectItemCaseSensitive(o, "choices");
	c0 = cJSON_GetArrayItem(choices, 0);
	msg = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
	if (!cJSON_IsObject(msg))
		goto out;
	tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	if (tc && !cJSON_IsNull(tc) && !cJSON_IsArray(tc))
		goto out;
	content = cJSON_GetObjectItemCaseSensitive(msg, "content");
	if (cJSON_IsString(content))
		out->content = xstrdup(content->valuestring);
	else if (content == NULL || cJSON_IsNull(content))
		out->content = xstrdup("");
	else
		goto out;
	out->ntool_calls = cJSON_GetArraySize(tc);
	fr = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
	if (cJSON_IsString(fr))
		out->finish_reason = xstrdup(fr->valuestring);
	usage = cJSON_GetObjectItemCaseSensitive(o, "usage");
	pt = usage ? cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens") : NULL;
	ct = usage ? cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens") : NULL;
	out->prompt_tokens = usage_tokens(pt);
	out->completion_tokens = usage_tokens(ct);
	if (keep) {
		out->doc = o;
		o = NULL;
	}
	r = 0;
out:
	if (r != 0)
		upstream_reply_clear(out);
	cJSON_Delete(o);
	return r;
}

int
upstream_parse_reply(const char *body, size_t len, struct upstream_reply *out)
{
	return upstream_parse_reply_ex(body, len, 0, out);
}

void
upstream_reply_clear(struct upstream_reply *r)
{
	free(r->content);
	r->content = NULL;
	free(r->finish_reason);
	r->finish_reason = NULL;
	cJSON_Delete(r->doc);
	r->doc = NULL;
}

char *
upstream_tool_calls_summary(const cJSON *doc, int full)
{
	const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "choices"), 0);
	const cJSON *msg = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
	const cJSON *tc = msg ? cJSON_GetObjectItemCaseSensitive(msg, "tool_calls") : NULL, *t;
	struct buf b;
	int i = 0;

	if (cJSON_GetArraySize(tc) == 0)
		return NULL;
	if (full)
		return json_print(tc);
	buf_init(&b, 64 * 1024);
	buf_puts(&b, "tool_calls: ");
	cJSON_ArrayForEach(t, tc)
	{
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
		const cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;

		buf_printf(&b, "%s%s(args %zu B)", i++ ? ", " : "",
			   cJSON_IsString(name) ? name->valuestring : "?",
			   cJSON_IsString(args) ? strlen(args->valuestring) : (size_t)0);
	}
	return buf_steal(&b);
}

enum outcome
upstream_classify(const struct upstream_facts *f)
{
	/* A server that breaks HTTP's framing sent an invalid response, even
	 * though curl reports it as a receive error. */
	if (f->bad_framing && f->code != CURLE_OK && f->code != CURLE_OPERATION_TIMEDOUT)
		return OUTCOME_INVALID_RESPONSE;
	switch (f->code) {
	case CURLE_OK:
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		return OUTCOME_CONNECT_ERROR;
	case CURLE_OPERATION_TIMEDOUT:
		if (!f->connected)
			return OUTCOME_CONNECT_ERROR;
		return f->got_headers ? OUTCOME_TOTAL_TIMEOUT : OUTCOME_FIRST_BYTE_TIMEOUT;
	case CURLE_WRITE_ERROR:
		if (f->body_too_big)
			return OUTCOME_INVALID_RESPONSE;
		return OUTCOME_RESET;
	case CURLE_SSL_CONNECT_ERROR:
		return f->connected ? OUTCOME_RESET : OUTCOME_CONNECT_ERROR;
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return OUTCOME_INVALID_RESPONSE;
	default:
		/* GOT_NOTHING, RECV_ERROR, SEND_ERROR, PARTIAL_FILE, HTTP2 errors... */
		if (!f->connected)
			return OUTCOME_CONNECT_ERROR;
		return OUTCOME_RESET;
	}
	if (f->http_status == 429)
		return OUTCOME_HTTP_429;
	if (f->http_status >= 500)
		return OUTCOME_HTTP_5XX;
	if (f->http_status >= 400)
		return OUTCOME_HTTP_4XX;
	if (f->http_status != 200 && f->http_status != 201)
		return OUTCOME_INVALID_RESPONSE;
	if (f->body_too_big || !f->json_type)
		return OUTCOME_INVALID_RESPONSE;
	/* json_type also holds for text/event-stream on streaming attempts. */
	return OUTCOME_OK;
}

void
sse_init(struct sse_parser *p)
{
	buf_init(&p->line, SSE_MAX_LINE);
	p->done = 0;
}

void
sse_free(struct sse_parser *p)
{
	buf_free(&p->line);
}

/* One complete line (without its newline). */
static void
sse_line(struct sse_parser *p, const char *l, size_t n, sse_event_fn cb, void *arg)
{
	if (n && l[n - 1] == '\r')
		n--;
	if (n < 5 || memcmp(l, "data:", 5) != 0)
		return; /* comments (":"), event:, id:, retry:, blank separators */
	l += 5;
	n -= 5;
	if (n && *l == ' ') {
		l++;
		n--;
	}
	if (n == 6 && memcmp(l, "[DONE]", 6) == 0) {
		p->done = 1;
		return;
	}
	cb(arg, l, n);
}

int
sse_feed(struct sse_parser *p, const char *data, size_t len, sse_event_fn cb, void *arg)
{
	const char *nl;
	int r;

	while (len > 0) {
		nl = memchr(data, '\n', len);
		if (nl == NULL)
			return buf_append(&p->line, data, len);
		if (p->line.len) {
			r = buf_append(&p->line, data, (size_t)(nl - data));
			if (r < 0)
				return r;
			sse_line(p, p->line.data, p->line.len, cb, arg);
			buf_reset(&p->line);
		} else {
			sse_line(p, data, (size_t)(nl - data), cb, arg);
		}
		len -= (size_t)(nl - data) + 1;
		data = nl + 1;
	}
	return 0;
}

int
upstream_chunk_delta(const char *payload, size_t len, char **content, int *finish)
{
	cJSON *o = cJSON_ParseWithLength(payload, len);
	const cJSON *c0, *delta, *text, *fr;
	int r = UPSTREAM_E_INVALID;

	*content = NULL;
	*finish = 0;
	if (!cJSON_IsObject(o))
		goto out;
	c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
	if (c0 == NULL) {
		/* usage-only or keep-alive chunks carry no choice */
		*content = xstrdup("");
		r = 0;
		goto out;
	}
	delta = cJSON_GetObjectItemCaseSensitive(c0, "delta");
	text = delta ? cJSON_GetObjectItemCaseSensitive(delta, "content") : NULL;
	fr = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
	*finish = cJSON_IsString(fr);
	*content = xstrdup(cJSON_IsString(text) ? text->valuestring : "");
	r = 0;
out:
	cJSON_Delete(o);
	return r;
}

int
upstream_chunk_parse(const char *payload, size_t len, struct upstream_chunk *out)
{
	const cJSON *choices, *c;
	int i = 0;

	memset(out, 0, sizeof *out);
	out->doc = cJSON_ParseWithLength(payload, len);
	if (!cJSON_IsObject(out->doc)) {
		upstream_chunk_clear(out);
		return UPSTREAM_E_INVALID;
	}
	choices = cJSON_GetObjectItemCaseSensitive(out->doc, "choices");
	cJSON_ArrayForEach(c, choices)
	{
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(c, "delta");
		const cJSON *text =
			delta ? cJSON_GetObjectItemCaseSensitive(delta, "content") : NULL;
		const cJSON *tc =
			delta ? cJSON_GetObjectItemCaseSensitive(delta, "tool_calls") : NULL;
		const cJSON *fr = cJSON_GetObjectItemCaseSensitive(c, "finish_reason");

		if (cJSON_GetArraySize(tc) > 0)
			out->tool_calls = 1;
		if (i++ == 0) {
			out->finish = cJSON_IsString(fr);
			out->content = xstrdup(cJSON_IsString(text) ? text->valuestring : "");
		} else if ((cJSON_IsString(text) && text->valuestring[0]) || cJSON_IsString(fr)) {
			out->other_choice = 1;
		}
	}
	if (out->content == NULL)
		out->content = xstrdup("");
	return 0;
}

void
upstream_chunk_clear(struct upstream_chunk *c)
{
	free(c->content);
	c->content = NULL;
	cJSON_Delete(c->doc);
	c->doc = NULL;
}
