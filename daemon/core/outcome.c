/*
 * outcome: names tables for outcome classes, ladder steps and sources.
 */
#include "outcome.h"

#include <errno.h>
#include <string.h>

#include "wire.h"

static const char *const outcome_names[OUTCOME__COUNT] = {
	[OUTCOME_OK] = WIRE_OUTCOME_OK,
	[OUTCOME_CONNECT_ERROR] = WIRE_OUTCOME_CONNECT_ERROR,
	[OUTCOME_RESET] = WIRE_OUTCOME_RESET,
	[OUTCOME_FIRST_BYTE_TIMEOUT] = WIRE_OUTCOME_FIRST_BYTE_TIMEOUT,
	[OUTCOME_TOTAL_TIMEOUT] = WIRE_OUTCOME_TOTAL_TIMEOUT,
	[OUTCOME_HTTP_5XX] = WIRE_OUTCOME_HTTP_5XX,
	[OUTCOME_HTTP_429] = WIRE_OUTCOME_HTTP_429,
	[OUTCOME_HTTP_4XX] = WIRE_OUTCOME_HTTP_4XX,
	[OUTCOME_INVALID_RESPONSE] = WIRE_OUTCOME_INVALID_RESPONSE,
	[OUTCOME_VALIDATION_FORMAT] = WIRE_OUTCOME_VALIDATION_FORMAT,
	[OUTCOME_VALIDATION_SCHEMA] = WIRE_OUTCOME_VALIDATION_SCHEMA,
	[OUTCOME_VALIDATION_SEMANTIC] = WIRE_OUTCOME_VALIDATION_SEMANTIC,
	[OUTCOME_LOW_CONFIDENCE] = WIRE_OUTCOME_LOW_CONFIDENCE,
	[OUTCOME_HEDGE_CANCELLED] = WIRE_OUTCOME_HEDGE_CANCELLED,
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
	[STEP_PRIMARY] = WIRE_STEP_PRIMARY, [STEP_BACKUP] = WIRE_STEP_BACKUP,
	[STEP_RULES] = WIRE_STEP_RULES,	    [STEP_CACHE] = WIRE_STEP_CACHE,
	[STEP_PRESET] = WIRE_STEP_PRESET,   [STEP_EXHAUSTED] = WIRE_STEP_EXHAUSTED,
};

const char *
step_name(enum step s)
{
	if ((unsigned)s >= STEP__COUNT)
		return NULL;
	return step_names[s];
}

static const char *const source_names[SOURCE__COUNT] = {
	[SOURCE_LLM] = WIRE_SOURCE_LLM,	      [SOURCE_BACKUP] = WIRE_SOURCE_BACKUP,
	[SOURCE_RULES] = WIRE_SOURCE_RULES,   [SOURCE_CACHE] = WIRE_SOURCE_CACHE,
	[SOURCE_PRESET] = WIRE_SOURCE_PRESET, [SOURCE_MANUAL] = WIRE_SOURCE_MANUAL,
	[SOURCE_NONE] = WIRE_SOURCE_NONE,
};

const char *
source_name(enum source s)
{
	if ((unsigned)s >= SOURCE__COUNT)
		return NULL;
	return source_names[s];
}
