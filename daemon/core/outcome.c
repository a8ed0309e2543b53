/*
 * outcome: names tables for outcome classes, ladder steps and sources.
 */
#include "outcome.h"

#include <errno.h>
#include <string.h>

static const char *const outcome_names[OUTCOME__COUNT] = {
	[OUTCOME_OK] = "ok",
	[OUTCOME_CONNECT_ERROR] = "connect_error",
	[OUTCOME_RESET] = "reset",
	[OUTCOME_FIRST_BYTE_TIMEOUT] = "first_byte_timeout",
	[OUTCOME_TOTAL_TIMEOUT] = "total_timeout",
	[OUTCOME_HTTP_5XX] = "http_5xx",
	[OUTCOME_HTTP_429] = "http_429",
	[OUTCOME_HTTP_4XX] = "http_4xx",
	[OUTCOME_INVALID_RESPONSE] = "invalid_response",
	[OUTCOME_VALIDATION_FORMAT] = "validation_format",
	[OUTCOME_VALIDATION_SCHEMA] = "validation_schema",
	[OUTCOME_VALIDATION_SEMANTIC] = "validation_semantic",
	[OUTCOME_LOW_CONFIDENCE] = "low_confidence",
};

const char *
outcome_name(enum outcome o)
{
	if ((unsigned)o >= OUTCOME__COUNT)
		return NULL;
	return outcome_names[o];
}

int
outcome_parse(const char *name, enum outcome *out)
{
	int i;

	for (i = 0; i < OUTCOME__COUNT; i++) {
		if (strcmp(outcome_names[i], name) == 0) {
			*out = (enum outcome)i;
			return 0;
		}
	}
	return -EINVAL;
}

int
outcome_is_validation(enum outcome o)
{
	return o == OUTCOME_VALIDATION_FORMAT || o == OUTCOME_VALIDATION_SCHEMA ||
	       o == OUTCOME_VALIDATION_SEMANTIC || o == OUTCOME_LOW_CONFIDENCE;
}

int
outcome_is_timeout(enum outcome o)
{
	return o == OUTCOME_FIRST_BYTE_TIMEOUT || o == OUTCOME_TOTAL_TIMEOUT;
}

static const char *const step_names[STEP__COUNT] = {
	[STEP_PRIMARY] = "primary", [STEP_BACKUP] = "backup", [STEP_RULES] = "rules",
	[STEP_CACHE] = "cache",	    [STEP_PRESET] = "preset", [STEP_EXHAUSTED] = "exhausted",
};

const char *
step_name(enum step s)
{
	if ((unsigned)s >= STEP__COUNT)
		return NULL;
	return step_names[s];
}

static const char *const source_names[SOURCE__COUNT] = {
	[SOURCE_LLM] = "llm",	  [SOURCE_BACKUP] = "backup", [SOURCE_RULES] = "rules",
	[SOURCE_CACHE] = "cache", [SOURCE_PRESET] = "preset", [SOURCE_MANUAL] = "manual",
	[SOURCE_NONE] = "none",
};

const char *
source_name(enum source s)
{
	if ((unsigned)s >= SOURCE__COUNT)
		return NULL;
	return source_names[s];
}
