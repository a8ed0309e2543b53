/*
 * validate: the output contract (DESIGN.md step 7).
 *
 * Model text goes through four stages, each of which fails with its own
 * VALIDATE_E_* and a rule name: format (find and parse the first complete
 * JSON object), schema (after normalisation), semantic (deny patterns and
 * conditional rules) and confidence (thresholds, model text only).
 *
 * Extraction stays linear in the input: only a '{' followed by '"' or '}'
 * can open an object; from such a candidate a string- and escape-aware
 * brace scan finds its end, and a candidate that fails is skipped whole
 * (so a truncated answer is reported as truncated instead of yielding one
 * of its nested objects). Candidate scans never overlap.
 *
 * Normalisation rewrites the tree we own (parsed here, or a duplicate of
 * the caller's value) in place: keys are renamed to the schema's spelling,
 * numeric strings become numbers where the schema wants a number, and the
 * confidence field is clamped to [0, 1] before the schema check.
 *
 * A struct vschema is immutable once validate_compile() returns and is
 * owned by the config; its regexes (REG_EXTENDED | REG_NOSUB) are only read
 * by regexec(). Pure: no I/O, no clock. Runs on the engine thread.
 */
#include "validate.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum {
	VT_OBJECT = 1u << 0,
	VT_STRING = 1u << 1,
	VT_NUMBER = 1u << 2,
	VT_INTEGER = 1u << 3,
	VT_BOOLEAN = 1u << 4,
	VT_ARRAY = 1u << 5,
	VT_NULL = 1u << 6,
};

static const struct vtype_name {
	const char *name;
	unsigned bit;
} vtype_names[] = {
	{"object", VT_OBJECT}, {"string", VT_STRING},	{"number", VT_NUMBER}, {"integer", VT_INTEGER},
	{"boolean", VT_BOOLEAN}, {"array", VT_ARRAY}, {"null", VT_NULL},
};

struct vprop {
	char *name;
	struct vschema *schema;
};

struct vschema {
	unsigned types; /* VT_* mask; 0: any type */
	char **required;
	int nrequired;
	struct vprop *props;
	int nprops;
	bool no_additional; /* "additionalProperties": false */
	struct vschema *items;
	cJSON *enumv; /* owned array; NULL: no enum */
	bool has_minimum;
	bool has_maximum;
	double minimum;
	double maximum;
	long min_length; /* in UTF-8 characters; -1: none */
	long max_length;
	char *pattern;
	bool has_re;
	regex_t re;
};

/* A JSON path being built ("properties.intent.enum", "items[2]"), truncated at the size. */
struct path {
	char s[256];
	size_t len;
};

/* Bytes of each excerpt of a value in a detail; details stay short. */
#define EXCERPT_BYTES 48

static bool
is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static size_t
skip_ws(const char *t, size_t i, size_t len)
{
	while (i < len && is_ws((unsigned char)t[i]))
		i++;
	return i;
}

static int
ascii_casecmp(const char *a, const char *b)
{
	unsigned char ca, cb;

	do {
		ca = (unsigned char)*a++;
		cb = (unsigned char)*b++;
		if (ca >= 'A' && ca <= 'Z')
			ca = (unsigned char)(ca - 'A' + 'a');
		if (cb >= 'A' && cb <= 'Z')
			cb = (unsigned char)(cb - 'A' + 'a');
	} while (ca == cb && ca != '\0');
	return (int)ca - (int)cb;
}

/* Number of UTF-8 characters (bytes that are not continuation bytes). */
static long
utf8_length(const char *s)
{
	long n = 0;

	for (; *s != '\0'; s++) {
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	}
	return n;
}

/* Copy src into dst[n], cut at a UTF-8 character boundary. */
static void
str_copy(char *dst, size_t n, const char *src)
{
	size_t len = strlen(src);

	if (len >= n) {
		len = n - 1;
		while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
			len--;
	}
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* A short, quoted, UTF-8-safe excerpt of s into buf[n] (n > EXCERPT_BYTES + 8). */
static void
str_excerpt(const char *s, char *buf, size_t n)
{
	char cut[EXCERPT_BYTES + 1];

	str_copy(cut, sizeof cut, s);
	snprintf(buf, n, "\"%s%s\"", cut, strlen(cut) < strlen(s) ? "..." : "");
}

static const char *
value_type_name(const cJSON *v)
{
	const char *name = "invalid";

	if (cJSON_IsObject(v))
		name = "object";
	else if (cJSON_IsArray(v))
		name = "array";
	else if (cJSON_IsString(v))
		name = "string";
	else if (cJSON_IsNumber(v))
		name = "number";
	else if (cJSON_IsBool(v))
		name = "boolean";
	else if (cJSON_IsNull(v))
		name = "null";
	return name;
}

static void
value_excerpt(const cJSON *v, char *buf, size_t n)
{
	if (cJSON_IsString(v))
		str_excerpt(v->valuestring, buf, n);
	else if (cJSON_IsNumber(v))
		snprintf(buf, n, "%.17g", v->valuedouble);
	else if (cJSON_IsTrue(v))
		snprintf(buf, n, "true");
	else if (cJSON_IsFalse(v))
		snprintf(buf, n, "false");
	else
		snprintf(buf, n, "%s", value_type_name(v));
}

static size_t
path_push_key(struct path *p, const char *key)
{
	size_t old = p->len;
	size_t room = sizeof p->s - p->len;
	int n;

	n = snprintf(p->s + p->len, room, "%s%s", p->len > 0 ? "." : "", key);
	if (n < 0 || (size_t)n >= room)
		p->len = sizeof p->s - 1;
	else
		p->len += (size_t)n;
	return old;
}

static size_t
path_push_index(struct path *p, int i)
{
	size_t old = p->len;
	size_t room = sizeof p->s - p->len;
	int n;

	n = snprintf(p->s + p->len, room, "[%d]", i);
	if (n < 0 || (size_t)n >= room)
		p->len = sizeof p->s - 1;
	else
		p->len += (size_t)n;
	return old;
}

static void
path_pop(struct path *p, size_t old)
{
	p->len = old;
	p->s[old] = '\0';
}

static const char *
path_name(const struct path *p)
{
	return p->len > 0 ? p->s : "(root)";
}

/* ---- schema compilation ---------------------------------------------- */

static int compile_error(char **cause, const struct path *p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
compile_error(char **cause, const struct path *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (cause != NULL && *cause == NULL) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		*cause = xasprintf("%s%s%s", p->s, p->len > 0 ? ": " : "", msg);
	}
	return VALIDATE_E_SCHEMA;
}

static int schema_compile_node(const cJSON *j, struct path *p, struct vschema **out, char **cause);

static int
type_bit(const char *name, unsigned *bit)
{
	size_t i;
	int r = -ENOENT;

	for (i = 0; i < ARRAY_SIZE(vtype_names); i++) {
		if (strcmp(vtype_names[i].name, name) == 0) {
			*bit = vtype_names[i].bit;
			r = 0;
			break;
		}
	}
	return r;
}

static int
kw_type(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	const cJSON *e;
	unsigned bit;
	size_t old;
	int i = 0, r = 0;

	if (cJSON_IsString(v)) {
		if (type_bit(v->valuestring, &bit) != 0)
			r = compile_error(cause, p, "unknown type \"%s\"", v->valuestring);
		else
			s->types = bit;
		goto out;
	}
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
		r = compile_error(cause, p, "must be a type name or a non-empty array of type names");
		goto out;
	}
	cJSON_ArrayForEach(e, v) {
		old = path_push_index(p, i++);
		if (!cJSON_IsString(e))
			r = compile_error(cause, p, "must be a string");
		else if (type_bit(e->valuestring, &bit) != 0)
			r = compile_error(cause, p, "unknown type \"%s\"", e->valuestring);
		else
			s->types |= bit;
		path_pop(p, old);
		if (r != 0)
			goto out;
	}
out:
	return r;
}

static int
kw_required(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	const cJSON *e;
	size_t old;
	int r = 0;

	if (!cJSON_IsArray(v)) {
		r = compile_error(cause, p, "must be an array of strings");
		goto out;
	}
	s->required = xcalloc((size_t)cJSON_GetArraySize(v) + 1, sizeof *s->required);
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsString(e)) {
			old = path_push_index(p, s->nrequired);
			r = compile_error(cause, p, "must be a string");
			path_pop(p, old);
			goto out;
		}
		s->required[s->nrequired++] = xstrdup(e->valuestring);
	}
out:
	return r;
}

static int
kw_properties(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	const cJSON *m;
	struct vprop *vp;
	size_t old;
	int r = 0;

	if (!cJSON_IsObject(v)) {
		r = compile_error(cause, p, "must be an object");
		goto out;
	}
	s->props = xcalloc((size_t)cJSON_GetArraySize(v) + 1, sizeof *s->props);
	cJSON_ArrayForEach(m, v) {
		vp = &s->props[s->nprops++];
		vp->name = xstrdup(m->string);
		old = path_push_key(p, m->string);
		r = schema_compile_node(m, p, &vp->schema, cause);
		path_pop(p, old);
		if (r != 0)
			goto out;
	}
out:
	return r;
}

static int
kw_items(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	return schema_compile_node(v, p, &s->items, cause);
}

static int
kw_enum(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	int r = 0;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
		r = compile_error(cause, p, "must be a non-empty array");
		goto out;
	}
	s->enumv = cJSON_Duplicate(v, 1);
	if (s->enumv == NULL)
		abort();
out:
	return r;
}

static int
kw_number(const cJSON *v, struct path *p, char **cause, double *out)
{
	int r = 0;

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		r = compile_error(cause, p, "must be a number");
	else
		*out = v->valuedouble;
	return r;
}

static int
kw_minimum(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	s->has_minimum = true;
	return kw_number(v, p, cause, &s->minimum);
}

static int
kw_maximum(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	s->has_maximum = true;
	return kw_number(v, p, cause, &s->maximum);
}

static int
kw_length(const cJSON *v, struct path *p, char **cause, long *out)
{
	int r = 0;

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1e15) ||
	    v->valuedouble != floor(v->valuedouble))
		r = compile_error(cause, p, "must be a non-negative integer");
	else
		*out = (long)v->valuedouble;
	return r;
}

static int
kw_min_length(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	return kw_length(v, p, cause, &s->min_length);
}

static int
kw_max_length(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	return kw_length(v, p, cause, &s->max_length);
}

static int
kw_pattern(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	char err[128], ex[EXCERPT_BYTES + 16];
	int r = 0, rc;

	if (!cJSON_IsString(v)) {
		r = compile_error(cause, p, "must be a string");
		goto out;
	}
	rc = regcomp(&s->re, v->valuestring, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		regerror(rc, &s->re, err, sizeof err);
		str_excerpt(v->valuestring, ex, sizeof ex);
		r = compile_error(cause, p, "invalid regex %s: %s", ex, err);
		goto out;
	}
	s->has_re = true;
	s->pattern = xstrdup(v->valuestring);
out:
	return r;
}

static int
kw_additional(struct vschema *s, const cJSON *v, struct path *p, char **cause)
{
	int r = 0;

	if (!cJSON_IsBool(v))
		r = compile_error(cause, p, "must be a boolean (schemas are not supported)");
	else
		s->no_additional = cJSON_IsFalse(v);
	return r;
}

/* The schema keywords; NULL compile: accepted and ignored. */
static const struct schema_keyword {
	const char *name;
	int (*compile)(struct vschema *, const cJSON *, struct path *, char **);
} schema_keywords[] = {
	{"type", kw_type},
	{"required", kw_required},
	{"properties", kw_properties},
	{"items", kw_items},
	{"enum", kw_enum},
	{"minimum", kw_minimum},
	{"maximum", kw_maximum},
	{"minLength", kw_min_length},
	{"maxLength", kw_max_length},
	{"pattern", kw_pattern},
	{"additionalProperties", kw_additional},
	{"description", NULL},
	{"title", NULL},
	{"$schema", NULL},
	{"$comment", NULL},
};

static int
schema_compile_node(const cJSON *j, struct path *p, struct vschema **out, char **cause)
{
	struct vschema *s = NULL;
	const cJSON *m;
	unsigned seen = 0;
	size_t k, old;
	int r = 0;

	if (!cJSON_IsObject(j)) {
		r = compile_error(cause, p, "must be an object");
		goto out;
	}
	s = xcalloc(1, sizeof *s);
	s->min_length = -1;
	s->max_length = -1;
	cJSON_ArrayForEach(m, j) {
		old = path_push_key(p, m->string);
		for (k = 0; k < ARRAY_SIZE(schema_keywords); k++) {
			if (strcmp(schema_keywords[k].name, m->string) == 0)
				break;
		}
		if (k == ARRAY_SIZE(schema_keywords))
			r = compile_error(cause, p, "unknown schema keyword");
		else if (seen & (1u << k))
			r = compile_error(cause, p, "duplicate keyword");
		else if (schema_keywords[k].compile != NULL)
			r = schema_keywords[k].compile(s, m, p, cause);
		seen |= 1u << k;
		path_pop(p, old);
		if (r != 0)
			goto out;
	}
	if (s->has_minimum && s->has_maximum && s->minimum > s->maximum) {
		old = path_push_key(p, "minimum");
		r = compile_error(cause, p, "greater than maximum (%g > %g)", s->minimum, s->maximum);
		path_pop(p, old);
		goto out;
	}
	if (s->min_length >= 0 && s->max_length >= 0 && s->min_length > s->max_length) {
		old = path_push_key(p, "minLength");
		r = compile_error(cause, p, "greater than maxLength (%ld > %ld)", s->min_length,
				  s->max_length);
		path_pop(p, old);
		goto out;
	}
	*out = s;
	s = NULL;
out:
	vschema_free(s);
	return r;
}

/*
 * Only the first error is reported; its path is relative to the schema
 * ("properties.intent.enun: unknown schema keyword"), the caller prefixes
 * where the schema lives.
 */
int
validate_compile(const cJSON *schema, struct vschema **out, char **cause)
{
	struct path p = {.s = "", .len = 0};

	*out = NULL;
	return schema_compile_node(schema, &p, out, cause);
}

void
vschema_free(struct vschema *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nrequired; i++)
		free(s->required[i]);
	free(s->required);
	for (i = 0; i < s->nprops; i++) {
		free(s->props[i].name);
		vschema_free(s->props[i].schema);
	}
	free(s->props);
	vschema_free(s->items);
	cJSON_Delete(s->enumv);
	if (s->has_re)
		regfree(&s->re);
	free(s->pattern);
	free(s);
}

/* ---- results ----------------------------------------------------------- */

static int result_fail(struct validate_result *res, int stage, const char *rule, const char *field,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int
result_fail(struct validate_result *res, int stage, const char *rule, const char *field,
	    const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;

	res->stage = stage;
	str_copy(res->rule, sizeof res->rule, rule);
	str_copy(res->field, sizeof res->field, field);
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	str_copy(res->detail, sizeof res->detail, tmp);
	return stage;
}

void
validate_result_clear(struct validate_result *res)
{
	if (res == NULL)
		return;
	cJSON_Delete(res->result);
	memset(res, 0, sizeof *res);
}

const char *
validate_stage_name(int stage)
{
	const char *name = "unknown";

	switch (stage) {
	case 0:
		name = "ok";
		break;
	case VALIDATE_E_FORMAT:
		name = "format";
		break;
	case VALIDATE_E_SCHEMA:
		name = "schema";
		break;
	case VALIDATE_E_SEMANTIC:
		name = "semantic";
		break;
	case VALIDATE_E_CONFIDENCE:
		name = "confidence";
		break;
	}
	return name;
}

/* ---- extraction -------------------------------------------------------- */

enum { FIND_NONE = 0, FIND_OK, FIND_FAIL };

struct extract {
	const char *t;
	size_t len;
	cJSON *obj;    /* FIND_OK: the parsed object (owned) */
	size_t start;
	size_t end;
	const char *why; /* FIND_FAIL: the first candidate's failure */
};

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
	while (p > from && is_ws((unsigned char)t[p - 1]))
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
		k = skip_ws(t, p + 1, to);
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
		i = skip_ws(t, i, len);
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
		i = skip_ws(t, i + 1, len);
		c = i < len ? t[i] : '\0';
		opens = c == '{' || c == '[' || c == '"' || c == ']' || c == '-' ||
			(c >= '0' && c <= '9');
	}
	return opens;
}

/*
 * Find and parse the first complete JSON object. 0 with ex->obj, start and
 * end set, or VALIDATE_E_FORMAT with *rule ("empty", "json") and *why.
 */
static int
extract_run(struct extract *ex, const char **rule, const char **why)
{
	const char *t = ex->t, *f;
	size_t len = ex->len, i = 0, lead, cs = 0, ce = 0;
	bool fenced = false;
	int r = VALIDATE_E_FORMAT, found;

	*rule = "json";
	*why = "no JSON object";
	if (len >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	if (skip_ws(t, i, len) >= len) {
		*rule = "empty";
		*why = "empty output";
		goto out;
	}
	if (only_fences(t, i, len)) {
		*rule = "empty";
		*why = "only a code fence, no content";
		goto out;
	}
	lead = skip_ws(t, i, len);
	lead = skip_ws(t, skip_fence(t, lead, len), len);
	f = memmem(t + i, len - i, "```", 3);
	if (f != NULL) {
		fenced = true;
		cs = skip_fence(t, (size_t)(f - t), len);
		f = memmem(t + cs, len - cs, "```", 3);
		ce = f != NULL ? (size_t)(f - t) : len;
	}
	if (opens_array(t, lead, len) || (fenced && opens_array(t, skip_ws(t, cs, ce), ce))) {
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

/* ---- normalisation ----------------------------------------------------- */

static const struct vprop *
prop_find(const struct vschema *s, const char *name, bool nocase)
{
	const struct vprop *found = NULL;
	int i;

	for (i = 0; i < s->nprops; i++) {
		if (nocase ? ascii_casecmp(s->props[i].name, name) == 0
			   : strcmp(s->props[i].name, name) == 0) {
			found = &s->props[i];
			break;
		}
	}
	return found;
}

static void
item_rename(cJSON *m, const char *name)
{
	size_t n = strlen(name) + 1;
	char *s = cJSON_malloc(n);

	if (s == NULL)
		abort();
	memcpy(s, name, n);
	if (!(m->type & cJSON_StringIsConst))
		cJSON_free(m->string);
	m->string = s;
	m->type &= ~cJSON_StringIsConst;
}

/* Whether s is a plain decimal number: [-+]digits[.digits][e[-+]digits], whitespace around. */
static bool
is_decimal(const char *s)
{
	bool digits = false;

	while (is_ws((unsigned char)*s))
		s++;
	if (*s == '-' || *s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits = true;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits = true;
	}
	if (digits && (*s == 'e' || *s == 'E')) {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			digits = false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	while (is_ws((unsigned char)*s))
		s++;
	return digits && *s == '\0';
}

/*
 * Turn the string v (a decimal number, see is_decimal) into a number in
 * place. strtod() follows LC_NUMERIC, so '.' becomes the locale's decimal
 * point first, as cJSON does. Strings too long for the buffer stay strings.
 */
static void
coerce_number(cJSON *v)
{
	const char *point = localeconv()->decimal_point;
	char buf[128];
	size_t i;
	double d;

	if (strlen(v->valuestring) >= sizeof buf)
		goto out;
	for (i = 0; v->valuestring[i] != '\0'; i++) {
		buf[i] = v->valuestring[i];
		if (buf[i] == '.' && point != NULL && point[0] != '\0')
			buf[i] = point[0];
	}
	buf[i] = '\0';
	d = strtod(buf, NULL);
	if (!(v->type & cJSON_IsReference))
		cJSON_free(v->valuestring);
	v->valuestring = NULL;
	v->type = cJSON_Number | (v->type & cJSON_StringIsConst);
	cJSON_SetNumberHelper(v, d);
out:
	return;
}

/* Rewrite v in place to the schema's spelling and types; see the design note. */
static void
normalise(cJSON *v, const struct vschema *s)
{
	const struct vprop *vp;
	cJSON *m, *next;

	if (s == NULL) {
		/* No schema here: nothing to normalise against. */
	} else if (cJSON_IsString(v) && (s->types & (VT_NUMBER | VT_INTEGER)) &&
		   !(s->types & VT_STRING)) {
		if (is_decimal(v->valuestring))
			coerce_number(v);
	} else if (cJSON_IsObject(v) && s->nprops > 0) {
		for (m = v->child; m != NULL; m = next) {
			next = m->next;
			vp = prop_find(s, m->string, false);
			if (vp == NULL) {
				vp = prop_find(s, m->string, true);
				if (vp != NULL && cJSON_GetObjectItemCaseSensitive(v, vp->name) != NULL) {
					/* The exact spelling (or an earlier drifted one) wins. */
					cJSON_Delete(cJSON_DetachItemViaPointer(v, m));
					continue;
				}
				if (vp != NULL)
					item_rename(m, vp->name);
			}
			if (vp != NULL)
				normalise(m, vp->schema);
		}
	} else if (cJSON_IsArray(v) && s->items != NULL) {
		cJSON_ArrayForEach(m, v)
			normalise(m, s->items);
	}
}

/* The field at a dotted path ("address.province"); an exact member name is tried first. */
static cJSON *
field_lookup(const cJSON *obj, const char *path)
{
	const char *seg = path, *dot;
	cJSON *cur = NULL, *m = NULL;
	size_t n;

	if (!cJSON_IsObject(obj) || path == NULL)
		goto out;
	m = cJSON_GetObjectItemCaseSensitive(obj, path);
	if (m != NULL)
		goto out;
	cur = (cJSON *)obj;
	for (;;) {
		dot = strchr(seg, '.');
		n = dot != NULL ? (size_t)(dot - seg) : strlen(seg);
		for (m = cur->child; m != NULL; m = m->next) {
			if (m->string != NULL && strncmp(m->string, seg, n) == 0 && m->string[n] == '\0')
				break;
		}
		if (m == NULL || dot == NULL || !cJSON_IsObject(m))
			break;
		cur = m;
		seg = dot + 1;
	}
	if (dot != NULL)
		m = NULL;
out:
	return m;
}

static const char *
confidence_field(const struct output_cfg *oc)
{
	return oc->confidence_field != NULL ? oc->confidence_field : "confidence";
}

/* ---- schema check ------------------------------------------------------ */

static void
types_describe(unsigned types, char *buf, size_t n)
{
	size_t i, len = 0;
	int k;

	buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(vtype_names); i++) {
		if (!(types & vtype_names[i].bit))
			continue;
		k = snprintf(buf + len, n - len, "%s%s", len > 0 ? " or " : "", vtype_names[i].name);
		if (k < 0 || (size_t)k >= n - len)
			break;
		len += (size_t)k;
	}
}

static bool
type_ok(const cJSON *v, unsigned types)
{
	bool ok = false;

	if (types == 0)
		ok = true;
	else if (cJSON_IsObject(v))
		ok = types & VT_OBJECT;
	else if (cJSON_IsArray(v))
		ok = types & VT_ARRAY;
	else if (cJSON_IsString(v))
		ok = types & VT_STRING;
	else if (cJSON_IsBool(v))
		ok = types & VT_BOOLEAN;
	else if (cJSON_IsNull(v))
		ok = types & VT_NULL;
	else if (cJSON_IsNumber(v))
		ok = (types & VT_NUMBER) ||
		     ((types & VT_INTEGER) && v->valuedouble == floor(v->valuedouble));
	return ok;
}

static int schema_check(const cJSON *v, const struct vschema *s, struct path *fp,
			struct validate_result *res);

static int
schema_check_object(const cJSON *v, const struct vschema *s, struct path *fp,
		    struct validate_result *res)
{
	const cJSON *m;
	size_t old;
	int i, r = 0;

	for (i = 0; i < s->nrequired; i++) {
		if (cJSON_GetObjectItemCaseSensitive(v, s->required[i]) == NULL) {
			old = path_push_key(fp, s->required[i]);
			r = result_fail(res, VALIDATE_E_SCHEMA, "required", fp->s,
					"%s: required field missing", fp->s);
			path_pop(fp, old);
			goto out;
		}
	}
	for (i = 0; i < s->nprops; i++) {
		m = cJSON_GetObjectItemCaseSensitive(v, s->props[i].name);
		if (m == NULL)
			continue;
		old = path_push_key(fp, s->props[i].name);
		r = schema_check(m, s->props[i].schema, fp, res);
		path_pop(fp, old);
		if (r != 0)
			goto out;
	}
	if (s->no_additional) {
		cJSON_ArrayForEach(m, v) {
			if (prop_find(s, m->string, false) != NULL)
				continue;
			old = path_push_key(fp, m->string);
			r = result_fail(res, VALIDATE_E_SCHEMA, "additionalProperties", fp->s,
					"%s: unknown field not allowed", fp->s);
			path_pop(fp, old);
			goto out;
		}
	}
out:
	return r;
}

static int
schema_check_string(const cJSON *v, const struct vschema *s, struct path *fp,
		    struct validate_result *res)
{
	char ex[EXCERPT_BYTES + 16], pex[EXCERPT_BYTES + 16];
	long n;
	int r = 0;

	if (s->min_length >= 0 || s->max_length >= 0) {
		n = utf8_length(v->valuestring);
		if (s->min_length >= 0 && n < s->min_length) {
			r = result_fail(res, VALIDATE_E_SCHEMA, "minLength", fp->s,
					"%s: %ld characters < minLength %ld", path_name(fp), n,
					s->min_length);
			goto out;
		}
		if (s->max_length >= 0 && n > s->max_length) {
			r = result_fail(res, VALIDATE_E_SCHEMA, "maxLength", fp->s,
					"%s: %ld characters > maxLength %ld", path_name(fp), n,
					s->max_length);
			goto out;
		}
	}
	if (s->has_re && regexec(&s->re, v->valuestring, 0, NULL, 0) != 0) {
		str_excerpt(v->valuestring, ex, sizeof ex);
		str_excerpt(s->pattern, pex, sizeof pex);
		r = result_fail(res, VALIDATE_E_SCHEMA, "pattern", fp->s,
				"%s: %s does not match pattern %s", path_name(fp), ex, pex);
	}
out:
	return r;
}

static int
schema_check(const cJSON *v, const struct vschema *s, struct path *fp, struct validate_result *res)
{
	char ex[EXCERPT_BYTES + 16], want[96];
	const cJSON *e;
	size_t old;
	int i = 0, r = 0;

	if (s == NULL)
		goto out;
	if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) {
		r = result_fail(res, VALIDATE_E_SCHEMA, "type", fp->s, "%s: number out of range",
				path_name(fp));
		goto out;
	}
	if (!type_ok(v, s->types)) {
		types_describe(s->types, want, sizeof want);
		r = result_fail(res, VALIDATE_E_SCHEMA, "type", fp->s, "%s: expected %s, got %s",
				path_name(fp), want, value_type_name(v));
		goto out;
	}
	if (s->enumv != NULL) {
		cJSON_ArrayForEach(e, s->enumv) {
			if (cJSON_Compare(v, e, 1))
				break;
		}
		if (e == NULL) {
			value_excerpt(v, ex, sizeof ex);
			r = result_fail(res, VALIDATE_E_SCHEMA, "enum", fp->s, "%s: %s not in enum",
					path_name(fp), ex);
			goto out;
		}
	}
	if (cJSON_IsNumber(v)) {
		if (s->has_minimum && v->valuedouble < s->minimum) {
			r = result_fail(res, VALIDATE_E_SCHEMA, "minimum", fp->s,
					"%s: %g < minimum %g", path_name(fp), v->valuedouble,
					s->minimum);
			goto out;
		}
		if (s->has_maximum && v->valuedouble > s->maximum) {
			r = result_fail(res, VALIDATE_E_SCHEMA, "maximum", fp->s,
					"%s: %g > maximum %g", path_name(fp), v->valuedouble,
					s->maximum);
			goto out;
		}
	} else if (cJSON_IsString(v)) {
		r = schema_check_string(v, s, fp, res);
	} else if (cJSON_IsObject(v)) {
		r = schema_check_object(v, s, fp, res);
	} else if (cJSON_IsArray(v) && s->items != NULL) {
		cJSON_ArrayForEach(e, v) {
			old = path_push_index(fp, i++);
			r = schema_check(e, s->items, fp, res);
			path_pop(fp, old);
			if (r != 0)
				goto out;
		}
	}
out:
	return r;
}

/* ---- semantic rules ---------------------------------------------------- */

/* The first string at v (or among its elements when v is an array) that re matches. */
static const cJSON *
pattern_hit(const cJSON *v, const regex_t *re)
{
	const cJSON *hit = NULL, *e;

	if (cJSON_IsString(v)) {
		if (regexec(re, v->valuestring, 0, NULL, 0) == 0)
			hit = v;
	} else if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(e, v) {
			if (cJSON_IsString(e) && regexec(re, e->valuestring, 0, NULL, 0) == 0) {
				hit = e;
				break;
			}
		}
	}
	return hit;
}

static int
semantic_check(const struct output_cfg *oc, const cJSON *obj, struct validate_result *res)
{
	char ex[EXCERPT_BYTES + 16], pex[EXCERPT_BYTES + 16], wex[EXCERPT_BYTES + 16];
	const struct pattern_rule *pr;
	const struct cond_rule *cr;
	const cJSON *hit, *w;
	char rule[32];
	int i, r = 0;

	for (i = 0; i < oc->ndeny; i++) {
		pr = &oc->deny[i];
		hit = pattern_hit(field_lookup(obj, pr->field), &pr->re);
		if (hit == NULL)
			continue;
		value_excerpt(hit, ex, sizeof ex);
		str_excerpt(pr->pattern != NULL ? pr->pattern : "", pex, sizeof pex);
		r = result_fail(res, VALIDATE_E_SEMANTIC, "deny", pr->field,
				"%s: %s matches deny pattern %s", pr->field, ex, pex);
		goto out;
	}
	for (i = 0; i < oc->nrules; i++) {
		cr = &oc->rules[i];
		w = field_lookup(obj, cr->when_field);
		if (w == NULL || cr->when_equals == NULL || !cJSON_Compare(w, cr->when_equals, 1))
			continue;
		hit = pattern_hit(field_lookup(obj, cr->deny.field), &cr->deny.re);
		if (hit == NULL)
			continue;
		value_excerpt(hit, ex, sizeof ex);
		value_excerpt(w, wex, sizeof wex);
		str_excerpt(cr->deny.pattern != NULL ? cr->deny.pattern : "", pex, sizeof pex);
		snprintf(rule, sizeof rule, "rules[%d]", i);
		r = result_fail(res, VALIDATE_E_SEMANTIC, rule, cr->deny.field,
				"%s: %s matches deny pattern %s when %s = %s", cr->deny.field, ex,
				pex, cr->when_field, wex);
		goto out;
	}
out:
	return r;
}

/* ---- the stages together ----------------------------------------------- */

/* Normalise v (owned, rewritten in place), clamp, then schema and semantic checks. */
static int
value_check(const struct output_cfg *oc, cJSON *v, struct validate_result *res)
{
	struct path fp = {.s = "", .len = 0};
	const char *cf = confidence_field(oc);
	cJSON *c;
	int r;

	normalise(v, oc->vschema);
	c = field_lookup(v, cf);
	if (cJSON_IsNumber(c) && oc->clamp_confidence) {
		if (c->valuedouble < 0)
			cJSON_SetNumberHelper(c, 0.0);
		else if (c->valuedouble > 1)
			cJSON_SetNumberHelper(c, 1.0);
	}
	if (cJSON_IsNumber(c) && isfinite(c->valuedouble)) {
		res->has_confidence = true;
		res->confidence = c->valuedouble;
	}
	r = schema_check(v, oc->vschema, &fp, res);
	if (r == 0)
		r = semantic_check(oc, v, res);
	return r;
}

static int
confidence_check(const struct output_cfg *oc, struct validate_result *res)
{
	const char *cf = confidence_field(oc);
	int r = 0;

	if (!res->has_confidence)
		goto out;
	if (res->confidence < oc->reject_below) {
		r = result_fail(res, VALIDATE_E_CONFIDENCE, "reject_below", cf,
				"%s: %g < reject_below %g", cf, res->confidence, oc->reject_below);
		goto out;
	}
	if (res->confidence < oc->review_below)
		res->review = true;
out:
	return r;
}

/* No output section: any non-empty text; the result is the trimmed text. */
static int
output_text(const char *text, size_t len, struct validate_result *res)
{
	size_t i = 0, e = len;
	char *s = NULL;
	int r = 0;

	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	i = skip_ws(text, i, len);
	while (e > i && is_ws((unsigned char)text[e - 1]))
		e--;
	if (e == i) {
		r = result_fail(res, VALIDATE_E_FORMAT, "empty", "", "empty output");
		goto out;
	}
	s = xstrndup(text + i, e - i);
	res->result = cJSON_CreateString(s);
	if (res->result == NULL)
		r = -ENOMEM;
out:
	free(s);
	return r;
}

int
validate_output(const struct output_cfg *oc, const char *text, size_t len,
		struct validate_result *res)
{
	struct extract ex = {.t = text, .len = text != NULL ? len : 0};
	const char *rule, *why;
	int r;

	memset(res, 0, sizeof *res);
	if (oc == NULL || !oc->present) {
		r = output_text(text, ex.len, res);
		goto out;
	}
	r = extract_run(&ex, &rule, &why);
	if (r != 0) {
		result_fail(res, VALIDATE_E_FORMAT, rule, "", "%s", why);
		goto out;
	}
	r = value_check(oc, ex.obj, res);
	if (r != 0)
		goto out;
	r = confidence_check(oc, res);
	if (r != 0)
		goto out;
	res->result = ex.obj;
	ex.obj = NULL;
out:
	cJSON_Delete(ex.obj);
	return r;
}

int
validate_value(const struct output_cfg *oc, const cJSON *v, struct validate_result *res)
{
	cJSON *dup = NULL;
	int r;

	memset(res, 0, sizeof *res);
	if (v == NULL) {
		r = result_fail(res, VALIDATE_E_FORMAT, "empty", "", "no value");
		goto out;
	}
	if (oc == NULL || !oc->present) {
		if (!cJSON_IsString(v)) {
			r = result_fail(res, VALIDATE_E_FORMAT, "text", "",
					"expected a string, got %s", value_type_name(v));
			goto out;
		}
		r = output_text(v->valuestring, strlen(v->valuestring), res);
		goto out;
	}
	if (!cJSON_IsObject(v)) {
		r = result_fail(res, VALIDATE_E_FORMAT, "json", "", "expected an object, got %s",
				value_type_name(v));
		goto out;
	}
	dup = cJSON_Duplicate(v, 1);
	if (dup == NULL) {
		r = -ENOMEM;
		goto out;
	}
	r = value_check(oc, dup, res);
	if (r != 0)
		goto out;
	res->result = dup;
	dup = NULL;
out:
	cJSON_Delete(dup);
	return r;
}
