/*
 * api_chat_parse: the pure parser of a /v1/chat/completions body (API.md
 * "OpenAI-compatible"): messages, the documented fields and their types,
 * what passes through to the upstream untouched, duplicate keys. No I/O;
 * any thread. api_chat.c (the handler and the answers) calls it.
 */
#include "api_chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_call.h"
#include "budget.h"
#include "jsonutil.h"
#include "textcheck.h"
#include "util.h"

#define CHAT_N_MAX 128 /* choices a request may ask for (n) */

struct key_pos {
	cJSON *item;
	size_t pos;
};

static int
key_pos_cmp(const void *a, const void *b)
{
	const struct key_pos *x = a, *y = b;
	int r = strcmp(x->item->string, y->item->string);

	return r ? r : (x->pos > y->pos) - (x->pos < y->pos);
}

/*
 * Drop the later duplicates of o's keys: the facade reads the first one
 * (cJSON's lookup), so the upstream must not see another. Sorted, so a
 * body of many keys costs O(n log n), not O(n²).
 */
static void
dedupe_keys(cJSON *o)
{
	struct key_pos *v;
	cJSON *c;
	size_t n = 0, i, keep;

	for (c = o ? o->child : NULL; c; c = c->next)
		if (c->string)
			n++;
	if (n < 2)
		return;
	v = xcalloc(n, sizeof *v);
	n = 0;
	for (c = o->child; c; c = c->next) {
		if (c->string == NULL)
			continue;
		v[n].item = c;
		v[n].pos = n;
		n++;
	}
	qsort(v, n, sizeof *v, key_pos_cmp);
	/* v[keep] is the first of its key (the one read), the others go */
	for (i = 1, keep = 0; i < n; i++) {
		if (strcmp(v[i].item->string, v[keep].item->string) == 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(o, v[i].item));
		else
			keep = i;
	}
	free(v);
}

/*
 * A caller's message, checked and kept whole for the upstream: later
 * duplicate keys dropped, content normalised, in place (the request's
 * tree is the call's: no copy). 0, or 400 with msg.
 */
static int
message_load(cJSON *m, int i, char *msg, size_t msglen)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
	const cJSON *tcid = cJSON_GetObjectItemCaseSensitive(m, "tool_call_id");

	if (!cJSON_IsObject(m)) {
		snprintf(msg, msglen, "messages[%d]: must be an object", i);
		return 400;
	}
	if (!cJSON_IsString(role)) {
		snprintf(msg, msglen, "messages[%d].role: must be a string", i);
		return 400;
	}
	if (tc && !cJSON_IsNull(tc) && !cJSON_IsArray(tc)) {
		snprintf(msg, msglen, "messages[%d].tool_calls: must be an array", i);
		return 400;
	}
	if (tcid && !cJSON_IsString(tcid)) {
		snprintf(msg, msglen, "messages[%d].tool_call_id: must be a string", i);
		return 400;
	}
	if (content && !cJSON_IsNull(content) && !cJSON_IsString(content) &&
	    !cJSON_IsArray(content)) {
		snprintf(msg, msglen, "messages[%d].content: must be a string or parts", i);
		return 400;
	}
	/* the lookups above found the first of each key: the others go */
	dedupe_keys(m);
	if (cJSON_IsArray(content)) {
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
		cJSON_ReplaceItemInObjectCaseSensitive(m, "content",
						       cJSON_CreateString(b.data ? b.data : ""));
		buf_free(&b);
	} else if ((content == NULL || cJSON_IsNull(content)) && cJSON_GetArraySize(tc) == 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(m, "content");
		cJSON_AddStringToObject(m, "content", "");
	}
	return 0;
}

/* A number field in [lo, hi] (integer when integral), or absent/null. 0, or 400 with msg. */
static int
number_field(const cJSON *o, const char *name, double lo, double hi, int integral, char *msg,
	     size_t msglen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
	    (integral && v->valuedouble != (double)(long long)v->valuedouble)) {
		snprintf(msg, msglen, "%s: must be %s from %g to %g", name,
			 integral ? "an integer" : "a number", lo, hi);
		return 400;
	}
	return 0;
}

/* A field of the given cJSON type test, or absent/null. 0, or 400 with msg. */
static int
typed_field(const cJSON *o, const char *name, cJSON_bool (*is)(const cJSON *), const char *what,
	    char *msg, size_t msglen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (v == NULL || cJSON_IsNull(v) || is(v))
		return 0;
	snprintf(msg, msglen, "%s: must be %s", name, what);
	return 400;
}

/* The documented fields the facade only checks the type of; they pass upstream unchanged. */
static int
check_passthrough_fields(const cJSON *o, struct chat_opts *opts, char *msg, size_t msglen)
{
	const cJSON *v, *t;
	int i = 0;

	if (number_field(o, "n", 1, CHAT_N_MAX, 1, msg, msglen) ||
	    number_field(o, "seed", -9.2e18, 9.2e18, 1, msg, msglen) ||
	    number_field(o, "top_p", 0, 1, 0, msg, msglen) ||
	    number_field(o, "top_logprobs", 0, 20, 1, msg, msglen) ||
	    number_field(o, "presence_penalty", -2, 2, 0, msg, msglen) ||
	    number_field(o, "frequency_penalty", -2, 2, 0, msg, msglen) ||
	    typed_field(o, "logprobs", cJSON_IsBool, "true or false", msg, msglen) ||
	    typed_field(o, "parallel_tool_calls", cJSON_IsBool, "true or false", msg, msglen) ||
	    typed_field(o, "user", cJSON_IsString, "a string", msg, msglen) ||
	    typed_field(o, "logit_bias", cJSON_IsObject, "an object", msg, msglen) ||
	    typed_field(o, "metadata", cJSON_IsObject, "an object", msg, msglen) ||
	    typed_field(o, "stream_options", cJSON_IsObject, "an object", msg, msglen) ||
	    typed_field(o, "tools", cJSON_IsArray, "an array", msg, msglen))
		return 400;
	v = cJSON_GetObjectItemCaseSensitive(o, "n");
	opts->n = cJSON_IsNumber(v) ? (int)v->valuedouble : 1;
	v = cJSON_GetObjectItemCaseSensitive(o, "stop");
	if (v && !cJSON_IsNull(v)) {
		if (cJSON_IsArray(v)) {
			cJSON_ArrayForEach(t, v) if (!cJSON_IsString(t)) i = 99;
		}
		if (!(cJSON_IsString(v) ||
		      (cJSON_IsArray(v) && cJSON_GetArraySize(v) <= 4 && i == 0))) {
			snprintf(msg, msglen, "stop: must be a string or up to 4 strings");
			return 400;
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "tools");
	i = 0;
	cJSON_ArrayForEach(t, v)
	{
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");

		if (!cJSON_IsObject(t) ||
		    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "type"))) {
			snprintf(msg, msglen, "tools[%d]: must be an object with a type", i);
			return 400;
		}
		if (fn && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "name"))) {
			snprintf(msg, msglen, "tools[%d].function.name: must be a string", i);
			return 400;
		}
		i++;
	}
	opts->tools = i > 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "tool_choice");
	if (v && !cJSON_IsNull(v) && !cJSON_IsString(v) && !cJSON_IsObject(v)) {
		snprintf(msg, msglen, "tool_choice: must be a string or an object");
		return 400;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "stream_options");
	if (cJSON_IsObject(v)) {
		if (!opts->stream) {
			snprintf(msg, msglen, "stream_options: only allowed with \"stream\": true");
			return 400;
		}
		t = cJSON_GetObjectItemCaseSensitive(v, "include_usage");
		if (t && !cJSON_IsNull(t) && !cJSON_IsBool(t)) {
			snprintf(msg, msglen,
				 "stream_options.include_usage: must be true or false");
			return 400;
		}
		opts->include_usage = cJSON_IsTrue(t);
	}
	return 0;
}

/* The fields the facade consumes itself; the others go upstream verbatim. */
static int
consumed_field(const char *name)
{
	static const char *const names[] = {
		"model",	   "messages", "temperature", "max_tokens", "max_completion_tokens",
		"response_format", "stream"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	return 0;
}

int
api_chat_parse(const char *body, size_t len, const char *hdr_request_id, const char *hdr_budget,
	       struct call_req *cr, struct chat_opts *opts, char **model, char *msg, size_t msglen)
{
	cJSON *o = cJSON_ParseWithLength(body ? body : "", len), *extra = NULL, *v, *m, *next;
	const char *h;
	char *cause = NULL, path[128];
	int i = 0, rc = 400;

	msg[0] = '\0';
	memset(opts, 0, sizeof *opts);
	opts->n = 1;
	*model = NULL;
	if (!cJSON_IsObject(o)) {
		snprintf(msg, msglen, "body: must be a JSON object");
		goto out;
	}
	/* cJSON decodes \u escapes to valid UTF-8 only (a lone surrogate fails
	 * the parse): a body that is valid UTF-8 has valid strings, so the
	 * walk, which names the bad field, runs only for a body that is not. */
	if (!textcheck_utf8(body, len) && textcheck_json_utf8(o, path, sizeof path)) {
		snprintf(msg, msglen, "%s: must be valid UTF-8", path);
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
	cJSON_ArrayForEach(m, v)
	{
		if (message_load(m, i, msg, msglen) != 0)
			goto out;
		i++;
	}
	cr->messages = cJSON_DetachItemViaPointer(o, v);
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
	m = cJSON_GetObjectItemCaseSensitive(o, "max_completion_tokens");
	if (v && !cJSON_IsNull(v) && m && !cJSON_IsNull(m)) {
		snprintf(msg, msglen, "max_completion_tokens: give it or max_tokens, not both");
		goto out;
	}
	if (v == NULL || cJSON_IsNull(v)) {
		v = cJSON_GetObjectItemCaseSensitive(o, "max_completion_tokens");
		cr->params.max_completion = v && !cJSON_IsNull(v);
	}
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e7) {
			snprintf(msg, msglen, "%s: must be a positive integer", v->string);
			goto out;
		}
		cr->params.max_tokens = (int)v->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "response_format");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsObject(v) ||
		    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "type"))) {
			snprintf(msg, msglen, "response_format: must be an object with a type");
			goto out;
		}
		cr->params.response_format = cJSON_DetachItemViaPointer(o, v);
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "stream");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsBool(v)) {
			snprintf(msg, msglen, "stream: must be true or false");
			goto out;
		}
		opts->stream = cJSON_IsTrue(v);
	}
	if (check_passthrough_fields(o, opts, msg, msglen) != 0)
		goto out;
	/* the other fields move, keys and all, into extra (an object's
	 * members are a list whose items carry their keys) */
	for (m = o->child; m; m = next) {
		next = m->next;
		if (m->string == NULL || consumed_field(m->string))
			continue;
		if (extra == NULL)
			extra = cJSON_CreateObject();
		cJSON_AddItemToArray(extra, cJSON_DetachItemViaPointer(o, m));
	}
	dedupe_keys(extra);
	cr->params.extra = extra;
	extra = NULL;
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
	cJSON_Delete(extra);
	cJSON_Delete(o);
	return rc;
}
