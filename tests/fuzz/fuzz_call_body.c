/*
 * fuzz_call_body: a caller's POST /v1/routes/{route}/call request through
 * api_call_parse(). Input layout: see fuzz_split.h. The parser's contract
 * is asserted on every answer (0 with either input or messages, a request
 * id of 1 to 128 visible bytes, a budget of 1 ms to 24 h; or 400 with a
 * message naming the field); call_req_clear() releases everything.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "api_call.h"
#include "call.h"
#include "fuzz_split.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_split s;
	struct call_req cr;
	char msg[256];
	int async = -1, r;
	size_t i, n;

	fuzz_split(data, size, &s);
	memset(&cr, 0, sizeof cr);
	msg[0] = '\0';
	r = api_call_parse(s.body, s.len, s.hdr_request_id, s.hdr_budget, &cr, &async, msg,
			   sizeof msg);
	if (r == 0) {
		assert((cr.input != NULL) != (cr.messages != NULL));
		assert(cr.messages == NULL || cJSON_GetArraySize(cr.messages) > 0);
		assert(async == 0 || async == 1);
		assert(cr.allow_llm == 0 || cr.allow_llm == 1);
		assert(cr.caller_budget_ms >= 0 && cr.caller_budget_ms <= 86400000);
		if (cr.request_id != NULL) {
			n = strlen(cr.request_id);
			assert(n >= 1 && n <= 128);
			for (i = 0; i < n; i++)
				assert((unsigned char)cr.request_id[i] > 0x20 &&
				       (unsigned char)cr.request_id[i] != 0x7f);
		}
		assert(cr.callback_url == NULL || strncmp(cr.callback_url, "http", 4) == 0);
	} else {
		assert(r == 400);
		assert(memchr(msg, '\0', sizeof msg) != NULL && msg[0] != '\0');
	}
	call_req_clear(&cr);
	fuzz_split_free(&s);
	return 0;
}
