#pragma once
/*
 * schema: the JSON-schema subset of the output contract. Compile a schema
 * once (the config owns the result; it is immutable afterwards) and check
 * values against it, reporting the first failure with its rule and field
 * path. Pure: no I/O, no clock. Runs on the engine thread (and the config
 * loader's).
 */
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

enum schema_e {
	/* validate_compile(): the schema is not valid (the value of VALIDATE_E_SCHEMA) */
	SCHEMA_E_COMPILE = 2,
	/* schema_check(): the value does not satisfy the schema */
	SCHEMA_E_MISMATCH,
};

struct vschema;

/* A property of an object schema: its exact spelling and its schema (never NULL). */
struct vprop {
	char *name;
	struct vschema *schema;
};

/* The first failure of schema_check(); all strings NUL-terminated. */
struct schema_result {
	const char *rule; /* the keyword that failed: "type", "required", "enum", ... */
	char field[64];	  /* the value's path, e.g. "address.city", "tags[1]"; "" at the root */
	char detail[256]; /* short human detail, e.g. "intent: \"banana\" not in enum" */
};

/*
 * Compile a JSON-schema subset (type object/string/number/integer/boolean/
 * array, required, properties, items, enum, minimum, maximum, minLength,
 * maxLength, pattern). Unknown keywords and bad values are errors:
 * *cause names the path inside the schema, e.g. "properties.summary.pattern:
 * invalid regex ...". 0 or SCHEMA_E_COMPILE.
 */
int validate_compile(const cJSON *schema, struct vschema **out, char **cause);
void vschema_free(struct vschema *s);

/*
 * Check v against s (NULL: anything matches). 0, or SCHEMA_E_MISMATCH with
 * res filled for the first failure found. v and s are borrowed.
 */
int schema_check(const cJSON *v, const struct vschema *s, struct schema_result *res);

/*
 * What normalisation reads of a schema: the property named name (exactly,
 * or ASCII case-insensitively when nocase), whether it has properties,
 * its items schema (NULL: none), and whether a string at s is to become a
 * number (s wants a number or integer and not a string).
 */
const struct vprop *schema_prop_find(const struct vschema *s, const char *name, bool nocase);
bool schema_has_props(const struct vschema *s);
const struct vschema *schema_items(const struct vschema *s);
bool schema_wants_number(const struct vschema *s);

/* Bytes of each excerpt of a value in a detail; details stay short. */
#define SCHEMA_EXCERPT_BYTES 48

/* "object", "array", "string", "number", "boolean", "null" or "invalid". */
const char *schema_type_name(const cJSON *v);
/* A short excerpt of v into buf[n] (n > SCHEMA_EXCERPT_BYTES + 8): a quoted string or a scalar. */
void schema_excerpt(const cJSON *v, char *buf, size_t n);
/* A short, quoted, UTF-8-safe excerpt of s into buf[n] (n > SCHEMA_EXCERPT_BYTES + 8). */
void schema_excerpt_str(const char *s, char *buf, size_t n);
/* Copy src into dst[n], cut at a UTF-8 character boundary. */
void schema_str_copy(char *dst, size_t n, const char *src);
