/*
 * fuzz_chat_body: a caller's POST /v1/chat/completions request (the
 * OpenAI-compatible facade) through api_chat_parse(). Input layout: see
 * fuzz_split.h. Asserted: 0 with a model name and a non-empty array of
 * {role, content} strings, pass-through parameters in range; or 400 with a
 * message. The model string and the call_req are released whatever the
 * answer, as handle_chat() does.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api_chat.h"
#include "call.h"
#include "fuzz_split.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_split s;
	struct call_req cr;
	const cJSON *m;
	struct chat_opts opts;
	char msg[256], *model = NULL;
	int r;

	fuzz_split(data, size, &s);
	memset(&cr, 0, sizeof cr);
	r = api_chat_parse(s.body, s.len, s.hdr_request_id, s.hdr_budget, &cr, &opts, &model, msg,
			   sizeof msg);
	if (r == 0) {
		assert(model != NULL);
		assert(cJSON_IsArray(cr.messages) && cJSON_GetArraySize(cr.messages) > 0);
		cJSON_ArrayForEach(m, cr.messages)
		{
			assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "role")));
			const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");

			/* null only beside tool calls */
			assert(cJSON_IsString(content) ||
			       ((content == NULL || cJSON_IsNull(content)) &&
				cJSON_GetArraySize(
					cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) > 0));
		}
		assert(cr.params.passthrough == 1);
		assert(!cr.params.has_temperature ||
		       (cr.params.temperature >= 0 && cr.params.temperature <= 2));
		assert(cr.params.max_tokens >= 0 && cr.params.max_tokens <= 10000000);
		assert(cr.params.response_format == NULL ||
		       cJSON_IsObject(cr.params.response_format));
		assert(opts.stream == 0 || opts.stream == 1);
		assert(opts.n >= 1 && opts.n <= 128);
		assert(opts.include_usage == 0 || opts.stream == 1);
		assert(cr.params.extra == NULL || cJSON_IsObject(cr.params.extra));
		assert(cr.caller_budget_ms >= 0 && cr.caller_budget_ms <= 86400000);
		assert(cr.request_id == NULL ||
		       (strlen(cr.request_id) >= 1 && strlen(cr.request_id) <= 128));
	} else {
		assert(r == 400);
		assert(memchr(msg, '\0', sizeof msg) != NULL && msg[0] != '\0');
	}
	call_req_clear(&cr);
	free(model);
	fuzz_split_free(&s);
	return 0;
}
