/*
 * extract: find the first complete JSON object in model text (code fences,
 * prose and a UTF-8 BOM around it tolerated) and parse it.
 *
 * Extraction stays linear in the input: only a '{' followed by '"' or '}'
 * can open an object; from such a candidate a string- and escape-aware
 * brace scan finds its end, and a candidate that fails is skipped whole
 * (so a truncated answer is reported as truncated instead of yielding one
 * of its nested objects). Candidate scans never overlap.
 *
 * Pure: no I/O, no clock. Runs on the engine thread.
 */
#include "extract.h"

#include <string.h>

bool
extract_is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

size_t
extract_skip_ws(const char *t, size_t i, size_t len)
{
	while (i < len && extract_is_ws((unsigned char)t[i]))
		i++;
	return i;
}

enum { FIND_NONE = 0, FIND_OK, FIND_FAIL };

/* End (one past the matching '}') of the object opening at t[p], 0 when unmatched before to. */
static size_t
brace_match(const char *t, size_t p, size_t to)
{
	size_t i, depth = 0, end = 0;
	bool instr = false, esc = false;
	char c;

	for (i = p; i < to; i++) {
		c = t[i];
		if (instr) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				instr = false;
		} else if (c == '"') {
			instr = true;
		} else if (c == '{') {
			depth++;
		} else if (c == '}' && --depth == 0) {
			end = i + 1;
			break;
		}
	}
	return end;
}

/* The byte before t[p], whitespace skipped, or '\0'. */
static char
char_before(const char *t, size_t from, size_t p)
{
	while (p > from && extract_is_ws((unsigned char)t[p - 1]))
		p--;
	return p > from ? t[p - 1] : '\0';
}

static void
extract_fail(struct extract *ex, int *r, const char *why)
{
	if (*r != FIND_FAIL)
		ex->why = why;
	*r = FIND_FAIL;
}

/*
 * Search [from, to) for the first complete JSON object: FIND_OK, FIND_NONE
 * or FIND_FAIL. Only a '{' followed by '"' or '}' can open an object, so
 * other braces are skipped without a scan; a candidate that fails is
 * skipped whole (or ends the search when it never closes). The scans are
 * therefore disjoint and the search is linear.
 */
static int
extract_find(struct extract *ex, size_t from, size_t to)
{
	const char *t = ex->t, *q;
	size_t pos = from, p, end, k;
	bool braces = false;
	cJSON *obj;
	int r = FIND_NONE;

	while (pos < to) {
		q = memchr(t + pos, '{', to - pos);
		if (q == NULL)
			break;
		p = (size_t)(q - t);
		k = extract_skip_ws(t, p + 1, to);
		if (k < to && t[k] != '"' && t[k] != '}') {
			braces = true;
			pos = p + 1;
			continue;
		}
		end = brace_match(t, p, to);
		if (end == 0) {
			extract_fail(ex, &r, "truncated JSON object (no closing brace)");
			break;
		}
		obj = cJSON_ParseWithLength(t + p, end - p);
		if (cJSON_IsObject(obj)) {
			if (char_before(t, from, p) == '[') {
				cJSON_Delete(obj);
				extract_fail(ex, &r, "top-level array, expected an object");
				break;
			}
			ex->obj = obj;
			ex->start = p;
			ex->end = end;
			r = FIND_OK;
			break;
		}
		cJSON_Delete(obj);
		extract_fail(ex, &r, "invalid JSON object");
		pos = end;
	}
	if (r == FIND_NONE && braces)
		extract_fail(ex, &r, "invalid JSON object");
	return r;
}

static bool
is_fence_info(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '+' || c == '.';
}

/* Skip a fence marker and its info string ("```json") if t[i] starts one. */
static size_t
skip_fence(const char *t, size_t i, size_t len)
{
	if (len - i >= 3 && memcmp(t + i, "```", 3) == 0) {
		i += 3;
		while (i < len && is_fence_info((unsigned char)t[i]))
			i++;
	}
	return i;
}

/* Whether t[i, len) is only whitespace and fence markers. */
static bool
only_fences(const char *t, size_t i, size_t len)
{
	size_t j;

	for (;;) {
		i = extract_skip_ws(t, i, len);
		j = skip_fence(t, i, len);
		if (j == i)
			break;
		i = j;
	}
	return i >= len;
}

/* Whether t[i] opens a JSON array: '[' then a value or ']' ("[Note]" is prose). */
static bool
opens_array(const char *t, size_t i, size_t len)
{
	bool opens = false;
	char c;

	if (i < len && t[i] == '[') {
		i = extract_skip_ws(t, i + 1, len);
		c = i < len ? t[i] : '\0';
		opens = c == '{' || c == '[' || c == '"' || c == ']' || c == '-' ||
			(c >= '0' && c <= '9');
	}
	return opens;
}

int
extract_run(struct extract *ex, const char **rule, const char **why)
{
	const char *t = ex->t, *f;
	size_t len = ex->len, i = 0, lead, cs = 0, ce = 0;
	bool fenced = false;
	int r = EXTRACT_E_FORMAT, found;

	*rule = "json";
	*why = "no JSON object";
	if (len >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	if (extract_skip_ws(t, i, len) >= len) {
		*rule = "empty";
		*why = "empty output";
		goto out;
	}
	if (only_fences(t, i, len)) {
		*rule = "empty";
		*why = "only a code fence, no content";
		goto out;
	}
	lead = extract_skip_ws(t, i, len);
	lead = extract_skip_ws(t, skip_fence(t, lead, len), len);
	f = memmem(t + i, len - i, "```", 3);
	if (f != NULL) {
		fenced = true;
		cs = skip_fence(t, (size_t)(f - t), len);
		f = memmem(t + cs, len - cs, "```", 3);
		ce = f != NULL ? (size_t)(f - t) : len;
	}
	if (opens_array(t, lead, len) ||
	    (fenced && opens_array(t, extract_skip_ws(t, cs, ce), ce))) {
		*why = "top-level array, expected an object";
		goto out;
	}
	found = FIND_NONE;
	if (fenced)
		found = extract_find(ex, cs, ce);
	if (found != FIND_OK) {
		/* A fence may be cut short by "```" inside a string: retry on the whole text. */
		const char *fwhy = ex->why;
		int again = extract_find(ex, i, len);

		if (again == FIND_OK || found == FIND_NONE)
			found = again;
		else
			ex->why = fwhy;
	}
	if (found == FIND_OK)
		r = 0;
	else if (found == FIND_FAIL)
		*why = ex->why;
out:
	return r;
}

int
validate_extract_object(const char *text, size_t len, size_t *start, size_t *end)
{
	struct extract ex = {.t = text, .len = text != NULL ? len : 0};
	const char *rule, *why;
	int r;

	r = extract_run(&ex, &rule, &why);
	if (r == 0) {
		*start = ex.start;
		*end = ex.end;
	}
	cJSON_Delete(ex.obj);
	return r;
}
