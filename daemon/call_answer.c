/*
 * call_answer: the answer's JSON, the call's span, the input text a call
 * records (rules, cache, reviews, the span).
 */
#include "call_answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_int.h"
#include "engine.h"
#include "jsonutil.h"
#include "trace.h"
#include "util.h"

/* Nanoseconds since the epoch of a wall-clock time in ms. */
int64_t
call_wall_ns(int64_t wall_ms)
{
	return wall_ms * 1000000;
}

const char *
call_input_text(const struct call *c)
{
	const cJSON *m;

	if (c->req.input)
		return c->req.input;
	/* messages: the last user message stands for the input (rules, cache). */
	if (c->req.messages) {
		const char *last = "";

		cJSON_ArrayForEach(m, c->req.messages)
		{
			const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
			const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");

			if (cJSON_IsString(role) && cJSON_IsString(content) &&
			    strcmp(role->valuestring, "user") == 0)
				last = content->valuestring;
		}
		return last;
	}
	return "";
}

/* The call's span, ended with its answer. */
void
call_span_end(struct call *c)
{
	struct call_answer *a = &c->ans;
	struct trace_span *s = &c->span;

	if (s->o == NULL)
		return;
	if (a->backend != NULL && (a->source == SOURCE_LLM || a->source == SOURCE_BACKUP)) {
		int bi = engine_backend_index(c->e, a->backend);

		if (bi >= 0)
			trace_attr_str(s, "gen_ai.response.model", c->e->backends[bi].cfg->model);
		trace_attr_str(s, "fusebox.backend", a->backend);
	}
	if (a->prompt_tokens >= 0)
		trace_attr_int(s, "gen_ai.usage.input_tokens", a->prompt_tokens);
	if (a->completion_tokens >= 0)
		trace_attr_int(s, "gen_ai.usage.output_tokens", a->completion_tokens);
	trace_attr_int(s, "http.response.status_code", a->http_status);
	trace_attr_int(s, "fusebox.level", a->level);
	trace_attr_str(s, "fusebox.source", source_name(a->source));
	if (a->reason[0])
		trace_attr_str(s, "fusebox.reason", a->reason);
	trace_attr_str(s, "fusebox.outcome", a->http_status < 300 ? "done" : "failed");
	trace_attr_int(s, "fusebox.attempt_count", a->attempts);
	trace_attr_str(s, "fusebox.review", a->review ? "pending" : "none");
	trace_attr_bool(s, "fusebox.degraded", a->degraded);
	if (a->http_status >= 300)
		trace_attr_str(s, "error.type", a->reason[0] ? a->reason : "exhausted");
	if (trace_include_io()) {
		trace_attr_str(s, "fusebox.input", call_input_text(c));
		trace_attr_str(s, "fusebox.output", a->result_json);
	}
	trace_span_end(s, call_wall_ns(c->started_wall + a->elapsed_ms), a->http_status >= 300,
		       a->http_status >= 300 ? a->reason : NULL);
}

char *
call_answer_json(const struct call_answer *a, int replayed)
{
	struct buf b;

	/* Written straight into a buffer (no cJSON tree), keys in a fixed order
	 * (tests/test_jsonutil.c pins the text). */
	buf_init(&b, SIZE_MAX / 2);
	if (a->http_status >= 300) {
		char msg[160];

		snprintf(msg, sizeof msg, "every rung of the ladder failed for route %s (%s)",
			 a->route, a->reason);
		buf_puts(&b, "{\"error\":{\"code\":\"exhausted\",\"message\":");
		json_buf_string(&b, msg);
		buf_puts(&b, ",\"reason\":");
		json_buf_string(&b, a->reason);
		buf_puts(&b, "},\"request_id\":");
		json_buf_string(&b, a->request_id);
		buf_puts(&b, ",\"attempts\":");
		json_buf_number(&b, a->attempts);
		buf_puts(&b, ",\"elapsed_ms\":");
		json_buf_number(&b, (double)a->elapsed_ms);
		buf_puts(&b, "}");
		return buf_steal(&b);
	}
	buf_puts(&b, "{\"request_id\":");
	json_buf_string(&b, a->request_id);
	buf_puts(&b, ",\"route\":");
	json_buf_string(&b, a->route);
	buf_puts(&b, ",\"result\":");
	if (a->result_json) /* printed once (call_answer_finish()), spliced in */
		buf_puts(&b, a->result_json);
	else if (a->result)
		json_buf_item(&b, a->result);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"source\":");
	json_buf_string(&b, source_name(a->source));
	buf_puts(&b, ",\"backend\":");
	if (a->backend)
		json_buf_string(&b, a->backend);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"level\":");
	json_buf_number(&b, a->level);
	buf_puts(&b, a->degraded ? ",\"degraded\":true,\"reason\":"
				 : ",\"degraded\":false,\"reason\":");
	if (a->reason[0])
		json_buf_string(&b, a->reason);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"confidence\":");
	if (a->has_confidence)
		json_buf_number(&b, a->confidence);
	else
		buf_puts(&b, "null");
	buf_puts(&b, a->review ? ",\"review\":\"pending\",\"attempts\":"
			       : ",\"review\":\"none\",\"attempts\":");
	json_buf_number(&b, a->attempts);
	buf_puts(&b, ",\"elapsed_ms\":");
	json_buf_number(&b, (double)a->elapsed_ms);
	buf_puts(&b, replayed ? ",\"replayed\":true}" : ",\"replayed\":false}");
	return buf_steal(&b);
}
