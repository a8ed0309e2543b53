#pragma once
/*
 * outcome: the attempt outcome classes of DESIGN.md step 6 and the ladder
 * step and source names shared by config, engine, store rows and the API
 * (the names are spelt in wire.h). Pure; names tables only.
 */

enum outcome {
	OUTCOME_OK = 0,
	OUTCOME_CONNECT_ERROR,
	OUTCOME_RESET,
	OUTCOME_FIRST_BYTE_TIMEOUT,
	OUTCOME_TOTAL_TIMEOUT,
	OUTCOME_HTTP_5XX,
	OUTCOME_HTTP_429,
	OUTCOME_HTTP_4XX,
	OUTCOME_INVALID_RESPONSE,
	OUTCOME_VALIDATION_FORMAT,
	OUTCOME_VALIDATION_SCHEMA,
	OUTCOME_VALIDATION_SEMANTIC,
	OUTCOME_LOW_CONFIDENCE,
	OUTCOME_HEDGE_CANCELLED, /* lost the race to a hedged attempt (not a failure) */
	OUTCOME__COUNT
};

#define OUTCOME_BIT(o) (1u << (o))

/* "ok", "connect_error", ...; NULL for out-of-range values. */
const char *outcome_name(enum outcome o);
/* 0 and *out set, or -EINVAL for an unknown name. */
int outcome_parse(const char *name, enum outcome *out);
/* True for the four validation classes (format, schema, semantic, low_confidence). */
int outcome_is_validation(enum outcome o);
/* True for first_byte_timeout and total_timeout. */
int outcome_is_timeout(enum outcome o);

/* The ladder's steps, in walk order. */
enum step {
	STEP_PRIMARY = 0,
	STEP_BACKUP,
	STEP_RULES,
	STEP_CACHE,
	STEP_PRESET,
	STEP_EXHAUSTED,
	STEP__COUNT
};

const char *step_name(enum step s);

/* Answer sources as the API spells them. */
enum source {
	SOURCE_LLM = 0,
	SOURCE_BACKUP,
	SOURCE_RULES,
	SOURCE_CACHE,
	SOURCE_PRESET,
	SOURCE_MANUAL,
	SOURCE_NONE, /* exhausted with on_exhausted=error, or not answered yet */
	SOURCE__COUNT
};

const char *source_name(enum source s);
