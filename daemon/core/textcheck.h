#pragma once
/*
 * textcheck: what a caller's text may hold and what stored text may not.
 * UTF-8 validity of every string in a parsed JSON document (keys and
 * values), control characters (C0, DEL, C1) in identifiers, and the
 * redaction of secrets (configured API keys, "Bearer <token>") from text
 * that is stored or logged. Pure; any thread.
 */
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* s[0..n) is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
bool textcheck_utf8(const char *s, size_t n);

/*
 * The first string of v (a key or a string value, depth first) that is not
 * well-formed UTF-8: 1 with its path in path ("messages[0].content",
 * "metadata.k", "body" for v itself; pathlen > 0), 0 when every string
 * is valid.
 */
int textcheck_json_utf8(const cJSON *v, char *path, size_t pathlen);

/*
 * s holds a C0 control, DEL or a C1 control (U+0080..U+009F), or is not
 * well-formed UTF-8 (a raw byte 0x9b is both).
 */
bool textcheck_has_control(const char *s);

#define TEXTCHECK_KEYS_MAX 64 /* keys textcheck_redact() looks for (more are ignored) */

/*
 * text with every occurrence of each of keys[0..nkeys) (NULL and keys
 * under 4 bytes are skipped) and the token after each "Bearer " (case
 * insensitive) replaced by "[redacted]". NULL when text is NULL. New
 * string.
 */
char *textcheck_redact(const char *text, const char *const *keys, int nkeys);
