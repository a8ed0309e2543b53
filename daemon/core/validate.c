/*
 * validate: the output contract (DESIGN.md step 7).
 *
 * Model text goes through four stages, each of which fails with its own
 * VALIDATE_E_* and a rule name: format (find and parse the first complete
 * JSON object: extract.c), schema (after normalisation: schema.c), semantic
 * (deny patterns and conditional rules) and confidence (thresholds, model
 * text only). This file is the policy on top of the two algorithms.
 *
 * Normalisation rewrites the tree we own (parsed here, or a duplicate of
 * the caller's value) in place: keys are renamed to the schema's spelling,
 * numeric strings become numbers where the schema wants a number, and the
 * confidence field is clamped to [0, 1] before the schema check.
 *
 * Pure: no I/O, no clock. Runs on the engine thread.
 */
#include "validate.h"

#include <assert.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract.h"
#include "schema.h"
#include "util.h"

static_assert((int)EXTRACT_E_FORMAT == (int)VALIDATE_E_FORMAT, "extract.h and validate.h agree");
static_assert((int)SCHEMA_E_COMPILE == (int)VALIDATE_E_SCHEMA, "schema.h and validate.h agree");

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
	schema_str_copy(res->rule, sizeof res->rule, rule);
	schema_str_copy(res->field, sizeof res->field, field);
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	schema_str_copy(res->detail, sizeof res->detail, tmp);
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

/* ---- normalisation ----------------------------------------------------- */

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

	while (extract_is_ws((unsigned char)*s))
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
	while (extract_is_ws((unsigned char)*s))
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
	} else if (cJSON_IsString(v) && schema_wants_number(s)) {
		if (is_decimal(v->valuestring))
			coerce_number(v);
	} else if (cJSON_IsObject(v) && schema_has_props(s)) {
		for (m = v->child; m != NULL; m = next) {
			next = m->next;
			vp = schema_prop_find(s, m->string, false);
			if (vp == NULL) {
				vp = schema_prop_find(s, m->string, true);
				if (vp != NULL &&
				    cJSON_GetObjectItemCaseSensitive(v, vp->name) != NULL) {
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
	} else if (cJSON_IsArray(v) && schema_items(s) != NULL) {
		cJSON_ArrayForEach(m, v) normalise(m, schema_items(s));
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
			if (m->string != NULL && strncmp(m->string, seg, n) == 0 &&
			    m->string[n] == '\0')
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
		cJSON_ArrayForEach(e, v)
		{
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
	char ex[SCHEMA_EXCERPT_BYTES + 16], pex[SCHEMA_EXCERPT_BYTES + 16],
		wex[SCHEMA_EXCERPT_BYTES + 16];
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
		schema_excerpt(hit, ex, sizeof ex);
		schema_excerpt_str(pr->pattern != NULL ? pr->pattern : "", pex, sizeof pex);
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
		schema_excerpt(hit, ex, sizeof ex);
		schema_excerpt(w, wex, sizeof wex);
		schema_excerpt_str(cr->deny.pattern != NULL ? cr->deny.pattern : "", pex,
				   sizeof pex);
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
	const char *cf = confidence_field(oc);
	struct schema_result sr;
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
	r = schema_check(v, oc->vschema, &sr);
	if (r != 0)
		r = result_fail(res, VALIDATE_E_SCHEMA, sr.rule, sr.field, "%s", sr.detail);
	else
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
	i = extract_skip_ws(text, i, len);
	while (e > i && extract_is_ws((unsigned char)text[e - 1]))
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
					"expected a string, got %s", schema_type_name(v));
			goto out;
		}
		r = output_text(v->valuestring, strlen(v->valuestring), res);
		goto out;
	}
	if (!cJSON_IsObject(v)) {
		r = result_fail(res, VALIDATE_E_FORMAT, "json", "", "expected an object, got %s",
				schema_type_name(v));
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
