#pragma once
/*
 * validate: the output contract (DESIGN.md step 7). Pure functions, no I/O,
 * no clock: extract the first complete JSON object from model text (code
 * fences and prose tolerated), normalise it against the route's schema
 * (case-insensitive keys, numeric strings coerced where the schema says
 * number/integer, confidence clamped when clamp_confidence), check the
 * schema subset, deny patterns, conditional rules and the confidence
 * thresholds. Runs on the engine thread; the compiled schema is immutable
 * and owned by the config. The two algorithms underneath are schema.h
 * (compile and check) and extract.h (find the object).
 */
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"
/* validate_compile(), vschema_free(), validate_extract_object(): included for callers. */
#include "extract.h"
#include "schema.h"

enum validate_e {
	VALIDATE_E_FORMAT = 1, /* no usable JSON object (empty, truncated, fence only, ...) */
	VALIDATE_E_SCHEMA,     /* type, required, enum, bounds, length, pattern */
	VALIDATE_E_SEMANTIC,   /* deny patterns and conditional rules */
	VALIDATE_E_CONFIDENCE, /* confidence below reject_below */
};

struct validate_result {
	cJSON *result; /* normalised object on success (caller deletes via validate_result_clear) */
	bool has_confidence; /* the confidence field was present and numeric */
	double confidence;
	bool review;	  /* accepted, but confidence < review_below */
	int stage;	  /* enum validate_e on failure, 0 on success */
	char rule[64];	  /* e.g. "enum", "required", "deny", "rules[0]", "reject_below" */
	char field[64];	  /* the field concerned, "" when none */
	char detail[256]; /* short human detail, e.g. "intent: \"banana\" not in enum" */
};

/*
 * Validate model text against oc. Returns 0 (res->result set, maybe
 * res->review) or a VALIDATE_E_* stage with res->rule / detail filled.
 * When oc->present is false the contract is only "non-empty": the result is
 * the text as a JSON string. res is always initialised by this call.
 */
int validate_output(const struct output_cfg *oc, const char *text, size_t len,
		    struct validate_result *res);

/*
 * Validate an already-parsed value (a review correction, an operator
 * answer): normalise + schema + semantic rules, no confidence thresholds.
 * v is borrowed; on success res->result is a normalised copy.
 */
int validate_value(const struct output_cfg *oc, const cJSON *v, struct validate_result *res);

void validate_result_clear(struct validate_result *res);

/* "format", "schema", "semantic", "confidence" (the SCHEMA.md stage names). */
const char *validate_stage_name(int stage);
