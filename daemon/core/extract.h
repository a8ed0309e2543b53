#pragma once
/*
 * extract: find and parse the first complete JSON object in model text
 * (string- and escape-aware brace matching, linear in the input; a UTF-8
 * BOM, code fences and prose around it tolerated). Pure: no I/O, no clock.
 * Runs on the engine thread.
 */
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

enum extract_e {
	/* no usable JSON object (the value of VALIDATE_E_FORMAT) */
	EXTRACT_E_FORMAT = 1,
};

/* One extraction: the caller sets t and len, extract_run() fills the rest. */
struct extract {
	const char *t; /* the text, borrowed; may be NULL when len is 0 */
	size_t len;
	cJSON *obj;   /* on success: the parsed object, owned by the caller */
	size_t start; /* on success: the object is t[start, end) */
	size_t end;
	const char *why; /* extract_run()'s scratch: the first failing candidate */
};

/*
 * Find and parse the first complete JSON object of ex->t. 0 with ex->obj,
 * start and end set, or EXTRACT_E_FORMAT with *rule ("empty", "json") and
 * *why (static strings, e.g. "truncated JSON object (no closing brace)").
 */
int extract_run(struct extract *ex, const char **rule, const char **why);

/*
 * Find the first complete JSON object in text (string- and escape-aware
 * brace matching, after stripping a UTF-8 BOM; fences and prose around it
 * are skipped). 0 with [*start, *end) set, or EXTRACT_E_FORMAT.
 */
int validate_extract_object(const char *text, size_t len, size_t *start, size_t *end);

/* The whitespace extraction skips (also what trims plain-text output). */
bool extract_is_ws(unsigned char c);
/* The first index >= i of t[0, len) that is not whitespace, or len. */
size_t extract_skip_ws(const char *t, size_t i, size_t len);
