#pragma once
/*
 * api_chat: the request parser of the OpenAI-compatible facade, pure so it
 * can be fuzzed and unit-tested without a server. Any thread.
 */
#include <stddef.h>

#include "call.h"

/* What the facade itself needs of a request (the rest goes upstream). */
struct chat_opts {
	int stream;
	int include_usage; /* stream_options.include_usage */
	int n;		   /* choices asked for (1 when absent) */
	int tools;	   /* the request offers tools */
};

/*
 * Parse a /v1/chat/completions body: *model gets the model name (new
 * string), cr the messages and the parameters to pass upstream (every
 * field the facade does not consume goes verbatim in cr->params.extra,
 * owned by cr), opts what the facade needs; cr->route is not set. 0, or
 * 400 with msg naming the field.
 */
int api_chat_parse(const char *body, size_t len, const char *hdr_request_id, const char *hdr_budget,
		   struct call_req *cr, struct chat_opts *opts, char **model, char *msg,
		   size_t msglen);
