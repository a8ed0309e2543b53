#pragma once
/*
 * api_call: the data-plane request parsers, pure so they can be fuzzed
 * and unit-tested without a server. Any thread.
 */
#include <stddef.h>

#include "call.h"

/* A request id: 1..128 bytes, no spaces or control characters. 0, or 400 with msg naming field. */
int api_request_id_check(const char *id, const char *field, char *msg, size_t msglen);

/*
 * Parse a /v1/routes/{route}/call body (len bytes, any content) and the
 * X-Request-ID / X-Fusebox-Budget-Ms header values (NULL when absent; the
 * body wins) into cr (zeroed by the caller; clear it with call_req_clear
 * whatever the result). 0, or 400 with msg naming the field.
 */
int api_call_parse(const char *body, size_t len, const char *hdr_request_id, const char *hdr_budget,
		   struct call_req *cr, int *async, char *msg, size_t msglen);
