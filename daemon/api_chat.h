#pragma once
/*
 * api_chat: the request parser of the OpenAI-compatible facade, pure so it
 * can be fuzzed and unit-tested without a server. Any thread.
 */
#include <stddef.h>

#include "call.h"

/*
 * Parse a /v1/chat/completions body: *model gets the model name (new
 * string) and cr the pass-through parameters and messages; cr->route is
 * not set. 0, or 400 with msg naming the field.
 */
int api_chat_parse(const char *body, size_t len, const char *hdr_request_id, const char *hdr_budget,
		   struct call_req *cr, int *stream, char **model, char *msg, size_t msglen);
