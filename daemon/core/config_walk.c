/*
 * config_walk: the table-driven engine of the config loader (config_int.h).
 *
 * Design: the key table (config_table.c) drives the generic work. One
 * walker visits a JSON object together with its path pattern
 * ("routes[].retry"): it rejects unknown and duplicate keys (suggesting the
 * nearest known key), reports missing required keys, and for every scalar
 * row type-checks, range-checks and stores the value — or the row's
 * default, parsed from the table's JSON text, through the very same checks.
 * Objects recurse with the same base struct; an optional section's enabled
 * flag is its presence. The same table prints the --help reference.
 *
 * Invariants: errors never stop the walk (every error is reported, one per
 * line, the first CONFIG_MAX_ERRORS kept). Runs on the main thread.
 */
#include "config_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_table.h"
#include "util.h"

#define CONFIG_MAX_ERRORS   100
#define CONFIG_MAX_CHILDREN 64

_Static_assert(sizeof(enum breaker_mode) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum slo_window) == sizeof(int), "enums are stored as int");

/* Add one error line (the first CONFIG_MAX_ERRORS are kept, the rest counted). */
void
ctx_line(struct ctx *x, const char *line)
{
	x->nerr++;
	if (x->nerr <= CONFIG_MAX_ERRORS)
		buf_printf(&x->errs, "%s%s", x->errs.len > 0 ? "\n" : "", line);
}

/* Add "path: message". */
void __attribute__((format(printf, 3, 4)))
ctx_err(struct ctx *x, const char *path, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL, *line;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	line = xasprintf("%s: %s", *path != '\0' ? path : "(top level)",
			 msg != NULL ? msg : "invalid");
	ctx_line(x, line);
	free(line);
	free(msg);
}

char *
ctx_cause(struct ctx *x)
{
	if (x->nerr > CONFIG_MAX_ERRORS)
		buf_printf(&x->errs, "\n... and %d more errors", x->nerr - CONFIG_MAX_ERRORS);
	return buf_steal(&x->errs);
}

/* Write s into dst as a double-quoted, escaped, possibly shortened string. */
const char *
quote(char *dst, size_t n, const char *s)
{
	size_t o = 0, i;
	unsigned char ch;

	dst[o++] = '"';
	for (i = 0; s[i] != '\0' && o + 8 < n; i++) {
		ch = (unsigned char)s[i];
		if (i >= 60 && (ch & 0xc0) != 0x80) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(dst + o, n - o, "\\x%02x", ch);
		} else {
			dst[o++] = (char)ch;
		}
	}
	dst[o++] = '"';
	dst[o] = '\0';
	return dst;
}

const char *
num_str(char *dst, size_t n, double v, int integer)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(dst, n, integer ? "%.0f" : "%.1f", v);
	else
		snprintf(dst, n, "%.15g", v);
	return dst;
}

/* A short description of a JSON value for "(got …)". */
const char *
json_describe(char *dst, size_t n, const cJSON *v)
{
	if (v == NULL)
		snprintf(dst, n, "nothing");
	else if (cJSON_IsNull(v))
		snprintf(dst, n, "null");
	else if (cJSON_IsBool(v))
		snprintf(dst, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNumber(v))
		snprintf(dst, n, "%.15g", v->valuedouble);
	else if (cJSON_IsString(v))
		quote(dst, n, v->valuestring);
	else if (cJSON_IsArray(v))
		snprintf(dst, n, "an array");
	else if (cJSON_IsObject(v))
		snprintf(dst, n, "an object");
	else
		snprintf(dst, n, "an invalid value");
	return dst;
}

/* Levenshtein distance of two short strings (bytes). */
static size_t
edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, prev, cur, tmp;
	size_t row[65];

	if (la > 64 || lb > 64)
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			cur = row[j];
			tmp = prev + (a[i - 1] != b[j - 1]);
			tmp = MIN(tmp, row[j] + 1);
			tmp = MIN(tmp, row[j - 1] + 1);
			row[j] = tmp;
			prev = cur;
		}
	}
	return row[lb];
}

/* The candidate nearest to s when it is near enough to be a typo, else NULL. */
const char *
nearest(const char *s, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t i, d, bestd = (size_t)-1, len = strlen(s);

	for (i = 0; i < n; i++) {
		if (cands[i] == NULL)
			continue;
		if (strcasecmp(s, cands[i]) == 0)
			return cands[i];
		d = edit_distance(s, cands[i]);
		/* "api_key" for "api_key_env": a prefix is a near miss too. */
		if (len >= 3 &&
		    (strncmp(s, cands[i], len) == 0 || strncmp(cands[i], s, strlen(cands[i])) == 0))
			d = 1;
		if (d < bestd) {
			bestd = d;
			best = cands[i];
		}
	}
	if (best == NULL || (bestd > 2 && bestd * 2 > len))
		return NULL;
	return best;
}

static size_t
names_count(const char *const *names)
{
	size_t n = 0;

	while (names[n] != NULL)
		n++;
	return n;
}

/* "\"a\", \"b\" or \"c\"" into b. */
static void
names_list(struct buf *b, const char *const *names)
{
	size_t i, n = names_count(names);

	for (i = 0; i < n; i++)
		buf_printf(b, "%s\"%s\"", i == 0 ? "" : i + 1 == n ? " or " : ", ", names[i]);
}

const cJSON *
obj_get(const cJSON *obj, const char *name)
{
	const cJSON *c;

	if (!cJSON_IsObject(obj))
		return NULL;
	cJSON_ArrayForEach(c, obj)
	{
		if (c->string != NULL && strcmp(c->string, name) == 0)
			return c;
	}
	return NULL;
}

/* path + "." + name, with control bytes in name replaced (names come from input). */
char *
path_join(const char *path, const char *name)
{
	char *s;
	size_t i, off;

	if (*path == '\0')
		s = xasprintf("%.100s", name);
	else
		s = xasprintf("%s.%.100s", path, name);
	off = *path == '\0' ? 0 : strlen(path) + 1;
	for (i = off; s[i] != '\0'; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	}
	return s;
}

char *
path_index(const char *path, int i)
{
	return xasprintf("%s[%d]", path, i);
}

/* The value of row k in obj, or k's default parsed into *tmp (caller deletes). */
const cJSON *
item_or_default(const cJSON *obj, const struct config_key *k, cJSON **tmp)
{
	const cJSON *it = obj_get(obj, config_key_name(k));

	*tmp = NULL;
	if (it == NULL && k->def != NULL) {
		*tmp = cJSON_Parse(k->def);
		if (*tmp == NULL)
			abort(); /* a bad table default; test_config loads every one */
		it = *tmp;
	}
	return it;
}

const struct config_key *
key_must(const char *path)
{
	const struct config_key *k = config_key_find(path);

	if (k == NULL)
		abort(); /* the code names a row the table lacks */
	return k;
}

/* Type and range of a number for row k; 0 with *v set, or reported and -EINVAL / -ERANGE. */
static int
key_check_number(struct ctx *x, const struct config_key *k, const cJSON *it, const char *path,
		 double *v)
{
	int integer = k->type == CKEY_INT || k->type == CKEY_INT64;
	char got[128], lim[64];
	int rc = -EINVAL;

	if (!cJSON_IsNumber(it)) {
		ctx_err(x, path, "must be %s (got %s)", integer ? "an integer" : "a number",
			json_describe(got, sizeof got, it));
		goto out;
	}
	*v = it->valuedouble;
	if (!isfinite(*v)) {
		ctx_err(x, path, "must be a finite number");
		goto out;
	}
	if (integer && *v != floor(*v)) {
		ctx_err(x, path, "must be an integer (got %s)", num_str(got, sizeof got, *v, 0));
		goto out;
	}
	rc = -ERANGE;
	if (*v < k->min) {
		ctx_err(x, path, "must be >= %s (got %s)",
			num_str(lim, sizeof lim, k->min, integer),
			num_str(got, sizeof got, *v, integer));
		goto out;
	}
	if (*v > k->max) {
		ctx_err(x, path, "must be <= %s (got %s)",
			num_str(lim, sizeof lim, k->max, integer),
			num_str(got, sizeof got, *v, integer));
		goto out;
	}
	rc = 0;
out:
	return rc;
}

static int
name_index(const char *const *names, const char *s)
{
	int i;

	for (i = 0; names[i] != NULL; i++) {
		if (strcmp(names[i], s) == 0)
			return i;
	}
	return -1;
}

static void
err_not_one_of(struct ctx *x, const char *path, const char *const *names, const cJSON *it)
{
	struct buf b;
	char got[128];
	const char *near = NULL;

	buf_init(&b, 4096);
	names_list(&b, names);
	if (cJSON_IsString(it))
		near = nearest(it->valuestring, names, names_count(names));
	if (near != NULL && strcmp(near, it->valuestring) != 0)
		ctx_err(x, path, "must be one of %s (got %s; did you mean \"%s\"?)", b.data,
			json_describe(got, sizeof got, it), near);
	else
		ctx_err(x, path, "must be one of %s (got %s)", b.data,
			json_describe(got, sizeof got, it));
	buf_free(&b);
}

/*
 * Check it against row k and store it at base + k->off. 0, or an error
 * reported and -EINVAL / -ERANGE with the field untouched.
 */
int
key_store(struct ctx *x, const struct config_key *k, const cJSON *it, const char *path, void *base)
{
	char *dst = (char *)base + k->off;
	char got[128], lim[64];
	size_t len;
	double v;
	int rc = 0, idx;

	switch (k->type) {
	case CKEY_BOOL:
		if (!cJSON_IsBool(it)) {
			ctx_err(x, path, "must be true or false (got %s)",
				json_describe(got, sizeof got, it));
			rc = -EINVAL;
			break;
		}
		*(bool *)(void *)dst = cJSON_IsTrue(it);
		break;
	case CKEY_INT:
	case CKEY_INT64:
	case CKEY_NUMBER:
		rc = key_check_number(x, k, it, path, &v);
		if (rc != 0)
			break;
		if (k->type == CKEY_INT)
			*(int *)(void *)dst = (int)v;
		else if (k->type == CKEY_INT64)
			*(int64_t *)(void *)dst = (int64_t)v;
		else
			*(double *)(void *)dst = v;
		break;
	case CKEY_STRING:
		if (!cJSON_IsString(it)) {
			ctx_err(x, path, "must be a string (got %s)",
				json_describe(got, sizeof got, it));
			rc = -EINVAL;
			break;
		}
		len = strlen(it->valuestring);
		if ((double)len < k->min) {
			if (len == 0)
				ctx_err(x, path, "must not be empty");
			else
				ctx_err(x, path, "must be at least %s bytes long (got %zu)",
					num_str(lim, sizeof lim, k->min, 1), len);
			rc = -ERANGE;
			break;
		}
		if ((double)len > k->max) {
			ctx_err(x, path, "must be at most %s bytes long (got %zu)",
				num_str(lim, sizeof lim, k->max, 1), len);
			rc = -ERANGE;
			break;
		}
		if (k->names != NULL && name_index(k->names, it->valuestring) < 0) {
			err_not_one_of(x, path, k->names, it);
			rc = -EINVAL;
			break;
		}
		free(*(char **)(void *)dst);
		*(char **)(void *)dst = xstrdup(it->valuestring);
		break;
	case CKEY_ENUM:
		idx = cJSON_IsString(it) ? name_index(k->names, it->valuestring) : -1;
		if (idx < 0) {
			err_not_one_of(x, path, k->names, it);
			rc = -EINVAL;
			break;
		}
		*(int *)(void *)dst = idx;
		break;
	case CKEY_OBJECT:
	case CKEY_ARRAY:
	case CKEY_ANY:
		abort(); /* not scalar: the walker and the loader's code handle these */
	}
	return rc;
}

/* Store the value of row k from obj, or its default when absent. */
static void
key_apply(struct ctx *x, const struct config_key *k, const cJSON *it, const char *path, void *base)
{
	cJSON *def = NULL;

	if (it == NULL) {
		if (k->def == NULL)
			return;
		def = cJSON_Parse(k->def);
		if (def == NULL)
			abort(); /* a bad table default; test_config loads every one */
		it = def;
	}
	key_store(x, k, it, path, base);
	cJSON_Delete(def);
}

/* Unknown and duplicate keys of obj, an object of pattern pat. */
static void
keys_check(struct ctx *x, const cJSON *obj, const char *pat, const char *path)
{
	const char *names[CONFIG_MAX_CHILDREN], *near;
	const cJSON *c, *d;
	char *cpat, *cpath;
	struct buf b;
	size_t n = 0, i;

	for (i = 0; i < config_nkeys && n < CONFIG_MAX_CHILDREN; i++) {
		if (config_key_is_child(&config_keys[i], pat))
			names[n++] = config_key_name(&config_keys[i]);
	}
	cJSON_ArrayForEach(c, obj)
	{
		if (c->string == NULL)
			continue;
		cpath = path_join(path, c->string);
		for (d = obj->child; d != c; d = d->next) {
			if (d->string != NULL && strcmp(d->string, c->string) == 0) {
				ctx_err(x, cpath, "duplicate key");
				break;
			}
		}
		cpat = *pat != '\0' ? xasprintf("%s.%s", pat, c->string) : xstrdup(c->string);
		if (strpbrk(c->string, ".[]") != NULL || config_key_find(cpat) == NULL) {
			near = nearest(c->string, names, n);
			if (near != NULL) {
				ctx_err(x, cpath, "unknown key (did you mean \"%s\"?)", near);
			} else {
				buf_init(&b, 4096);
				for (i = 0; i < n; i++)
					buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
				ctx_err(x, cpath, "unknown key (known keys here: %s)",
					b.data ? b.data : "none");
				buf_free(&b);
			}
		}
		free(cpat);
		free(cpath);
	}
}

/* A nested object row: recurse with the same base; sections set their flag. */
static void
walk_child_object(struct ctx *x, const struct config_key *k, const cJSON *it, const char *path,
		  void *base)
{
	bool *flag = NULL;
	char got[128];

	if (k->flags & CKEY_SECTION)
		flag = (bool *)(void *)((char *)base + k->off);
	if (it != NULL && !cJSON_IsObject(it)) {
		ctx_err(x, path, "must be an object (got %s)", json_describe(got, sizeof got, it));
		it = NULL;
	}
	if (flag != NULL && it != NULL)
		*flag = true;
	walk_object(x, it, k->path, path, base);
	if (flag != NULL && it == NULL)
		*flag = false;
}

/*
 * Apply every row that is a direct child of pat to obj (NULL: the object is
 * absent, so only defaults apply and nothing is required).
 */
void
walk_object(struct ctx *x, const cJSON *obj, const char *pat, const char *path, void *base)
{
	const struct config_key *k;
	const cJSON *it;
	char *cpath;
	size_t i;

	if (obj != NULL)
		keys_check(x, obj, pat, path);
	for (i = 0; i < config_nkeys; i++) {
		k = &config_keys[i];
		if (!config_key_is_child(k, pat))
			continue;
		it = obj_get(obj, config_key_name(k));
		cpath = path_join(path, config_key_name(k));
		if (it == NULL && obj != NULL && (k->flags & CKEY_REQUIRED))
			ctx_err(x, cpath, "missing (required)");
		if (k->type == CKEY_OBJECT)
			walk_child_object(x, k, it, cpath, base);
		else if (k->off != CKEY_NOFF && !(k->flags & CKEY_CUSTOM))
			key_apply(x, k, it, cpath, base);
		free(cpath);
	}
}

/*
 * Walk each element of the array at path (rows of pattern pat + "[]") into
 * a new array of elem_size structs. Returns the element count (0 when
 * absent or not an array: error reported).
 */
int
array_walk(struct ctx *x, const cJSON *arr, const char *pat, const char *path, size_t elem_size,
	   void **out)
{
	const cJSON *el;
	char *epat = NULL, *epath, got[128];
	char *v = NULL;
	int n = 0, i = 0;

	*out = NULL;
	if (arr == NULL)
		goto out;
	if (!cJSON_IsArray(arr)) {
		ctx_err(x, path, "must be an array (got %s)", json_describe(got, sizeof got, arr));
		goto out;
	}
	n = cJSON_GetArraySize(arr);
	if (n == 0)
		goto out;
	epat = xasprintf("%s[]", pat);
	v = xcalloc((size_t)n, elem_size);
	cJSON_ArrayForEach(el, arr)
	{
		epath = path_index(path, i);
		if (!cJSON_IsObject(el))
			ctx_err(x, epath, "must be an object (got %s)",
				json_describe(got, sizeof got, el));
		walk_object(x, cJSON_IsObject(el) ? el : NULL, epat, epath,
			    v + (size_t)i * elem_size);
		free(epath);
		i++;
	}
	*out = v;
out:
	free(epat);
	return n;
}
static void
reference_range(struct buf *b, const struct config_key *k)
{
	int integer = k->type == CKEY_INT || k->type == CKEY_INT64;
	char lo[64], hi[64];

	if (k->type == CKEY_INT || k->type == CKEY_INT64 || k->type == CKEY_NUMBER) {
		buf_printf(b, ", %s..%s", num_str(lo, sizeof lo, k->min, integer),
			   num_str(hi, sizeof hi, k->max, integer));
	}
	if (k->names != NULL) {
		buf_puts(b, ", one of ");
		names_list(b, k->names);
	}
}

void
config_print_reference(FILE *fp)
{
	const struct config_key *k;
	struct buf b;
	size_t i;

	fputs("Configuration keys (one JSON file; see fusebox.json(5)). \"[]\" stands for any\n"
	      "array index. Durations are integers (unit shown), rates are fractions 0..1.\n"
	      "Optional sections are off when absent; their keys' defaults apply when they\n"
	      "are present. Unknown keys are errors.\n\n",
	      fp);
	buf_init(&b, 16384);
	for (i = 0; i < config_nkeys; i++) {
		k = &config_keys[i];
		buf_reset(&b);
		buf_printf(&b, "%s (%s", k->path, config_key_type_name(k));
		if (k->unit != NULL)
			buf_printf(&b, " %s", k->unit);
		if (k->flags & CKEY_REQUIRED)
			buf_puts(&b, ", required");
		if (k->flags & CKEY_SECTION)
			buf_puts(&b, ", optional section");
		if (k->def != NULL)
			buf_printf(&b, ", default %s", k->def);
		reference_range(&b, k);
		buf_puts(&b, ")");
		fprintf(fp, "%s\n    %s\n", b.data, k->help);
	}
	buf_free(&b);
}
