#pragma once
/*
 * call_answer: a call's answer as the API gives it (struct call_answer),
 * rendered into the caller's JSON, and the call's span ended with it.
 * Engine thread. call.c makes the answer; nothing here calls back into it.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "outcome.h"

struct call_answer {
	unsigned http_status; /* 200, or 503 when exhausted with on_exhausted=error */
	enum source source;
	const char *backend; /* NULL when none */
	int level;
	int degraded;
	char reason[64]; /* "" when not degraded */
	cJSON *result;	 /* owned by the call; NULL when none */
	char *text;	 /* the model's text / preset text, for the chat facade */
	int has_confidence;
	double confidence;
	int review; /* 1: pending */
	int attempts;
	int64_t elapsed_ms;
	const char *request_id;
	const char *route;
	int streamed;	       /* the model's answer went out as deltas */
	char stream_error[32]; /* a streamed answer cut short: outcome name; "" otherwise */
	int64_t prompt_tokens; /* from the upstream's usage; -1 unknown */
	int64_t completion_tokens;
	const char *json; /* call_answer_json(answer, 0), rendered once (owned by the call) */
	const char *result_json; /* result printed once, for json and the calls row (owned by the
				    call) */
	const cJSON *upstream;	 /* the model's whole chat.completion (facade calls; owned by the
				    call); NULL otherwise */
	int64_t retry_after_s;	 /* status >= 300: when a retry may fare better (breaker probe,
				    bulkhead estimate); 0 otherwise */
	const char *traceparent; /* of the call's span, for the answer's header */
};

char *call_answer_json(const struct call_answer *a, int replayed);
