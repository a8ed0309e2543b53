/*
 * schema: compiling the JSON-schema subset and checking values against it.
 *
 * Compilation walks the schema once through a keyword table (kw_*); only
 * the first error is reported, with its path inside the schema. A check
 * walks the value and the compiled schema together and stops at the first
 * failure, reporting the rule and the field path.
 *
 * A struct vschema is immutable once validate_compile() returns and is
 * owned by the config; its regexes (REG_EXTENDED | REG_NOSUB) are only read
 * by regexec(). Pure: no I/O, no clock. Runs on the engine thread.
 */
#include "schema.h"

#include <errno.h>
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
	{"object", VT_OBJECT},	 {"string", VT_STRING},	  {"number", VT_NUMBER},
	{"integer", VT_INTEGER}, {"boolean", VT_BOOLEAN}, {"array", VT_ARRAY},
	{"null", VT_NULL},
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

/* ---- detail text -------------------------------------------------------- */

void
schema_str_copy(char *dst, size_t n, const char *src)
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

void
schema_excerpt_str(const char *s, char *buf, size_t n)
{
	char cut[SCHEMA_EXCERPT_BYTES + 1];

	schema_str_copy(cut, sizeof cut, s);
	snprintf(buf, n, "\"%s%s\"", cut, strlen(cut) < strlen(s) ? "..." : "");
}

const char *
schema_type_name(const cJSON *v)
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

void
schema_excerpt(const cJSON *v, char *buf, size_t n)
{
	if (cJSON_IsString(v))
		schema_excerpt_str(v->valuestring, buf, n);
	else if (cJSON_IsNumber(v))
		snprintf(buf, n, "%.17g", v->valuedouble);
	else if (cJSON_IsTrue(v))
		snprintf(buf, n, "true");
	else if (cJSON_IsFalse(v))
		snprintf(buf, n, "false");
	else
		snprintf(buf, n, "%s", schema_type_name(v));
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
	return SCHEMA_E_COMPILE;
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
		r = compile_error(cause, p,
				  "must be a type name or a non-empty array of type names");
		goto out;
	}
	cJSON_ArrayForEach(e, v)
	{
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
	cJSON_ArrayForEach(e, v)
	{
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
	cJSON_ArrayForEach(m, v)
	{
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
	char err[128], ex[SCHEMA_EXCERPT_BYTES + 16];
	int r = 0, rc;

	if (!cJSON_IsString(v)) {
		r = compile_error(cause, p, "must be a string");
		goto out;
	}
	rc = regcomp(&s->re, v->valuestring, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		regerror(rc, &s->re, err, sizeof err);
		schema_excerpt_str(v->valuestring, ex, sizeof ex);
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
	cJSON_ArrayForEach(m, j)
	{
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
		r = compile_error(cause, p, "greater than maximum (%g > %g)", s->minimum,
				  s->maximum);
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

/* ---- lookups ------------------------------------------------------------ */

const struct vprop *
schema_prop_find(const struct vschema *s, const char *name, bool nocase)
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

bool
schema_has_props(const struct vschema *s)
{
	return s->nprops > 0;
}

const struct vschema *
schema_items(const struct vschema *s)
{
	return s->items;
}

bool
schema_wants_number(const struct vschema *s)
{
	return (s->types & (VT_NUMBER | VT_INTEGER)) && !(s->types & VT_STRING);
}

/* ---- schema check ------------------------------------------------------ */

static int check_fail(struct schema_result *res, const char *rule, const char *field,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
check_fail(struct schema_result *res, const char *rule, const char *field, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;

	res->rule = rule;
	schema_str_copy(res->field, sizeof res->field, field);
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	schema_str_copy(res->detail, sizeof res->detail, tmp);
	return SCHEMA_E_MISMATCH;
}

static void
types_describe(unsigned types, char *buf, size_t n)
{
	size_t i, len = 0;
	int k;

	buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(vtype_names); i++) {
		if (!(types & vtype_names[i].bit))
			continue;
		k = snprintf(buf + len, n - len, "%s%s", len > 0 ? " or " : "",
			     vtype_names[i].name);
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

static int schema_check_node(const cJSON *v, const struct vschema *s, struct path *fp,
			     struct schema_result *res);

static int
schema_check_object(const cJSON *v, const struct vschema *s, struct path *fp,
		    struct schema_result *res)
{
	const cJSON *m;
	size_t old;
	int i, r = 0;

	for (i = 0; i < s->nrequired; i++) {
		if (cJSON_GetObjectItemCaseSensitive(v, s->required[i]) == NULL) {
			old = path_push_key(fp, s->required[i]);
			r = check_fail(res, "required", fp->s, "%s: required field missing", fp->s);
			path_pop(fp, old);
			goto out;
		}
	}
	for (i = 0; i < s->nprops; i++) {
		m = cJSON_GetObjectItemCaseSensitive(v, s->props[i].name);
		if (m == NULL)
			continue;
		old = path_push_key(fp, s->props[i].name);
		r = schema_check_node(m, s->props[i].schema, fp, res);
		path_pop(fp, old);
		if (r != 0)
			goto out;
	}
	if (s->no_additional) {
		cJSON_ArrayForEach(m, v)
		{
			if (schema_prop_find(s, m->string, false) != NULL)
				continue;
			old = path_push_key(fp, m->string);
			r = check_fail(res, "additionalProperties", fp->s,
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
		    struct schema_result *res)
{
	char ex[SCHEMA_EXCERPT_BYTES + 16], pex[SCHEMA_EXCERPT_BYTES + 16];
	long n;
	int r = 0;

	if (s->min_length >= 0 || s->max_length >= 0) {
		n = utf8_length(v->valuestring);
		if (s->min_length >= 0 && n < s->min_length) {
			r = check_fail(res, "minLength", fp->s,
				       "%s: %ld characters < minLength %ld", path_name(fp), n,
				       s->min_length);
			goto out;
		}
		if (s->max_length >= 0 && n > s->max_length) {
			r = check_fail(res, "maxLength", fp->s,
				       "%s: %ld characters > maxLength %ld", path_name(fp), n,
				       s->max_length);
			goto out;
		}
	}
	if (s->has_re && regexec(&s->re, v->valuestring, 0, NULL, 0) != 0) {
		schema_excerpt_str(v->valuestring, ex, sizeof ex);
		schema_excerpt_str(s->pattern, pex, sizeof pex);
		r = check_fail(res, "pattern", fp->s, "%s: %s does not match pattern %s",
			       path_name(fp), ex, pex);
	}
out:
	return r;
}

static int
schema_check_node(const cJSON *v, const struct vschema *s, struct path *fp,
		  struct schema_result *res)
{
	char ex[SCHEMA_EXCERPT_BYTES + 16], want[96];
	const cJSON *e;
	size_t old;
	int i = 0, r = 0;

	if (s == NULL)
		goto out;
	if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) {
		r = check_fail(res, "type", fp->s, "%s: number out of range", path_name(fp));
		goto out;
	}
	if (!type_ok(v, s->types)) {
		types_describe(s->types, want, sizeof want);
		r = check_fail(res, "type", fp->s, "%s: expected %s, got %s", path_name(fp), want,
			       schema_type_name(v));
		goto out;
	}
	if (s->enumv != NULL) {
		cJSON_ArrayForEach(e, s->enumv)
		{
			if (cJSON_Compare(v, e, 1))
				break;
		}
		if (e == NULL) {
			schema_excerpt(v, ex, sizeof ex);
			r = check_fail(res, "enum", fp->s, "%s: %s not in enum", path_name(fp), ex);
			goto out;
		}
	}
	if (cJSON_IsNumber(v)) {
		if (s->has_minimum && v->valuedouble < s->minimum) {
			r = check_fail(res, "minimum", fp->s, "%s: %g < minimum %g", path_name(fp),
				       v->valuedouble, s->minimum);
			goto out;
		}
		if (s->has_maximum && v->valuedouble > s->maximum) {
			r = check_fail(res, "maximum", fp->s, "%s: %g > maximum %g", path_name(fp),
				       v->valuedouble, s->maximum);
			goto out;
		}
	} else if (cJSON_IsString(v)) {
		r = schema_check_string(v, s, fp, res);
	} else if (cJSON_IsObject(v)) {
		r = schema_check_object(v, s, fp, res);
	} else if (cJSON_IsArray(v) && s->items != NULL) {
		cJSON_ArrayForEach(e, v)
		{
			old = path_push_index(fp, i++);
			r = schema_check_node(e, s->items, fp, res);
			path_pop(fp, old);
			if (r != 0)
				goto out;
		}
	}
out:
	return r;
}

int
schema_check(const cJSON *v, const struct vschema *s, struct schema_result *res)
{
	struct path fp = {.s = "", .len = 0};

	res->rule = "";
	res->field[0] = '\0';
	res->detail[0] = '\0';
	return schema_check_node(v, s, &fp, res);
}
