/*
 * config: load, validate and free the configuration (config.h).
 *
 * Design: the key table (config_table.c) drives the generic work. One
 * walker visits a JSON object together with its path pattern
 * ("routes[].retry"): it rejects unknown and duplicate keys (suggesting the
 * nearest known key), reports missing required keys, and for every scalar
 * row type-checks, range-checks and stores the value — or the row's
 * default, parsed from the table's JSON text, through the very same checks.
 * Objects recurse with the same base struct; an optional section's enabled
 * flag is its presence. Arrays, free-form values (schema, results,
 * headers), regexes and cross references are read by the code below, which
 * takes its defaults from the table too.
 *
 * Invariants: errors never stop the walk (every error is reported, one per
 * line); a pattern_rule's pattern / a rule_match's regex is non-NULL iff its
 * regex_t is compiled (so config_free() can regfree exactly those); every
 * cJSON kept in the config is a copy owned by it; the parse tree is deleted
 * before returning. Runs on the main thread.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_table.h"
#include "util.h"
#include "validate.h"

#define CONFIG_MAX_FILE	    (16 * 1024 * 1024)
#define CONFIG_MAX_ERRORS   100
#define CONFIG_MAX_CAUSE    (256 * 1024)
#define CONFIG_MAX_CHILDREN 64

_Static_assert(sizeof(enum breaker_mode) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum slo_window) == sizeof(int), "enums are stored as int");

struct ctx {
	struct buf errs;
	int nerr;
};

/* Add one error line (the first CONFIG_MAX_ERRORS are kept, the rest counted). */
static void
ctx_line(struct ctx *x, const char *line)
{
	x->nerr++;
	if (x->nerr <= CONFIG_MAX_ERRORS)
		buf_printf(&x->errs, "%s%s", x->errs.len > 0 ? "\n" : "", line);
}

/* Add "path: message". */
static void __attribute__((format(printf, 3, 4)))
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

static char *
ctx_cause(struct ctx *x)
{
	if (x->nerr > CONFIG_MAX_ERRORS)
		buf_printf(&x->errs, "\n... and %d more errors", x->nerr - CONFIG_MAX_ERRORS);
	return buf_steal(&x->errs);
}

/* Write s into dst as a double-quoted, escaped, possibly shortened string. */
static const char *
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

static const char *
num_str(char *dst, size_t n, double v, int integer)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(dst, n, integer ? "%.0f" : "%.1f", v);
	else
		snprintf(dst, n, "%.15g", v);
	return dst;
}

/* A short description of a JSON value for "(got …)". */
static const char *
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
static const char *
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

static const cJSON *
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
static char *
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

static char *
path_index(const char *path, int i)
{
	return xasprintf("%s[%d]", path, i);
}

/* The value of row k in obj, or k's default parsed into *tmp (caller deletes). */
static const cJSON *
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

static const struct config_key *
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
static int
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

static void walk_object(struct ctx *x, const cJSON *obj, const char *pat, const char *path,
			void *base);

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
static void
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
static int
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

/* Names of backends, routes and alerts go into URLs and metric labels. */
static void
name_check(struct ctx *x, const char *path, const char *s)
{
	char got[160];

	if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
	    strlen(s))
		ctx_err(x, path, "must hold only letters, digits, \".\", \"_\" and \"-\" (got %s)",
			quote(got, sizeof got, s));
}

/* The value is not echoed: a URL may carry user:password@. */
static void
url_check(struct ctx *x, const char *path, const char *s)
{
	const char *p, *rest = NULL;

	if (strncmp(s, "http://", 7) == 0)
		rest = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		rest = s + 8;
	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			rest = NULL;
	}
	if (rest == NULL || *rest == '\0' || *rest == '/')
		ctx_err(x, path, "must be an http:// or https:// URL with a host, without spaces");
}

static void
backend_resolve(struct ctx *x, const struct config *c, const char *path, const char *name, int *idx)
{
	const char **names;
	const char *near;
	char got[160];
	int i;

	*idx = config_backend_index(c, name);
	if (*idx >= 0)
		return;
	names = xcalloc((size_t)c->nbackends + 1, sizeof *names);
	for (i = 0; i < c->nbackends; i++)
		names[i] = c->backends[i].name;
	near = nearest(name, names, (size_t)c->nbackends);
	if (near != NULL)
		ctx_err(x, path, "unknown backend %s (did you mean \"%s\"?)",
			quote(got, sizeof got, name), near);
	else
		ctx_err(x, path, "unknown backend %s", quote(got, sizeof got, name));
	free(names);
}

/* The listen address: "a.b.c.d:port", "[v6]:port" or "localhost:port". */
static void
listen_parse(struct ctx *x, struct config *c)
{
	const char *s = c->listen, *colon, *close;
	struct in6_addr a6;
	struct in_addr a4;
	char *host = NULL, got[160];
	int64_t port;

	if (s == NULL)
		return;
	if (*s == '[') {
		close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			goto bad;
		host = xstrndup(s + 1, (size_t)(close - s - 1));
		colon = close + 1;
		if (inet_pton(AF_INET6, host, &a6) != 1)
			goto bad;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || colon == s)
			goto bad;
		host = xstrndup(s, (size_t)(colon - s));
		if (strchr(host, ':') != NULL) {
			ctx_err(x, "listen",
				"IPv6 addresses go in brackets, e.g. \"[::1]:7700\" (got %s)",
				quote(got, sizeof got, s));
			goto out;
		}
		if (strcmp(host, "localhost") != 0 && inet_pton(AF_INET, host, &a4) != 1)
			goto bad;
	}
	if (colon[1] < '0' || colon[1] > '9' || parse_int64(colon + 1, &port) != 0 ||
	    port > 65535) {
		ctx_err(x, "listen", "port must be an integer 0..65535 (got %s)",
			quote(got, sizeof got, colon + 1));
		goto out;
	}
	c->listen_host = host;
	c->listen_port = (int)port;
	host = NULL;
	goto out;
bad:
	ctx_err(x, "listen",
		"must be \"host:port\" with an IPv4 address, [IPv6 address] or localhost (got %s)",
		quote(got, sizeof got, s));
out:
	free(host);
}

static char *
path_resolve(const char *dir, const char *p)
{
	size_t n;

	if (p[0] == '/' || strcmp(p, ":memory:") == 0 || dir == NULL || *dir == '\0')
		return xstrdup(p);
	n = strlen(dir);
	return xasprintf("%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", p);
}

static void
paths_resolve(struct config *c)
{
	char *p;

	if (c->database != NULL) {
		p = path_resolve(c->dir, c->database);
		free(c->database);
		c->database = p;
	}
	if (c->tokens_file != NULL) {
		p = path_resolve(c->dir, c->tokens_file);
		free(c->tokens_file);
		c->tokens_file = p;
	}
}

static void
webhook_load(struct ctx *x, const cJSON *root, struct config *c)
{
	const cJSON *it = obj_get(root, "alert_webhook");
	char got[128];

	if (it == NULL || cJSON_IsNull(it))
		return;
	if (cJSON_IsString(it)) {
		url_check(x, "alert_webhook", it->valuestring);
		c->alert_webhook = xstrdup(it->valuestring);
	} else if (cJSON_IsObject(it)) {
		walk_object(x, it, "alert_webhook", "alert_webhook", c);
		if (c->alertmanager_url != NULL)
			url_check(x, "alert_webhook.alertmanager", c->alertmanager_url);
	} else {
		ctx_err(x, "alert_webhook",
			"must be null, a URL or {\"alertmanager\": URL} (got %s)",
			json_describe(got, sizeof got, it));
	}
}

/* RFC 7230 tchar. */
static bool
header_name_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("!#$%&'*+-.^_`|~", *s) != NULL))
			return false;
	}
	return true;
}

static void
headers_load(struct ctx *x, const cJSON *obj, const char *path, struct backend_cfg *b)
{
	const cJSON *it = obj_get(obj, "headers"), *h;
	char *hpath = NULL, *p, got[128];
	int n, i = 0, j;

	if (it == NULL)
		return;
	hpath = path_join(path, "headers");
	if (!cJSON_IsObject(it)) {
		ctx_err(x, hpath, "must be an object of header names to strings (got %s)",
			json_describe(got, sizeof got, it));
		goto out;
	}
	n = cJSON_GetArraySize(it);
	b->headers = xcalloc((size_t)n + 1, sizeof *b->headers);
	cJSON_ArrayForEach(h, it)
	{
		p = path_join(hpath, h->string);
		if (!header_name_ok(h->string)) {
			ctx_err(x, p, "not a valid HTTP header name");
		} else if (!cJSON_IsString(h)) {
			ctx_err(x, p, "must be a string (got %s)",
				json_describe(got, sizeof got, h));
		} else if (strpbrk(h->valuestring, "\r\n") != NULL) {
			ctx_err(x, p, "must not hold CR or LF");
		} else {
			for (j = 0; j < i; j++) {
				if (strcasecmp(b->headers[j].name, h->string) == 0)
					break;
			}
			if (j < i) {
				ctx_err(x, p, "duplicate header (names are case-insensitive)");
			} else {
				b->headers[i].name = xstrdup(h->string);
				b->headers[i].value = xstrdup(h->valuestring);
				b->nheaders = ++i;
			}
		}
		free(p);
	}
out:
	free(hpath);
}

static void
backends_load(struct ctx *x, const cJSON *root, struct config *c)
{
	static const char env_chars[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
	const cJSON *arr = obj_get(root, "backends"), *el;
	struct backend_cfg *b;
	const char *p;
	char *path, *fpath, *ca, got[160];
	void *v = NULL;
	int i, j;

	c->nbackends = array_walk(x, arr, "backends", "backends", sizeof *c->backends, &v);
	c->backends = v;
	if (cJSON_IsArray(arr) && c->nbackends == 0)
		ctx_err(x, "backends", "at least one backend is required");
	for (i = 0, el = cJSON_IsArray(arr) ? arr->child : NULL; i < c->nbackends;
	     i++, el = el->next) {
		b = &c->backends[i];
		path = path_index("backends", i);
		fpath = path_join(path, "name");
		if (b->name != NULL) {
			name_check(x, fpath, b->name);
			for (j = 0; j < i; j++) {
				if (c->backends[j].name != NULL &&
				    strcmp(c->backends[j].name, b->name) == 0) {
					ctx_err(x, fpath,
						"duplicate backend name %s (also backends[%d])",
						quote(got, sizeof got, b->name), j);
					break;
				}
			}
		}
		free(fpath);
		if (b->url != NULL) {
			fpath = path_join(path, "url");
			url_check(x, fpath, b->url);
			free(fpath);
		}
		if (b->tls_ca_file != NULL) {
			ca = path_resolve(c->dir, b->tls_ca_file);
			free(b->tls_ca_file);
			b->tls_ca_file = ca;
			/* A CA for a plain-http URL is a mistake that would go unnoticed. */
			if (b->url != NULL && strncmp(b->url, "https://", 8) != 0) {
				fpath = path_join(path, "tls_ca_file");
				ctx_err(x, fpath, "only used with an https:// url");
				free(fpath);
			}
		}
		if (b->api_key_env != NULL) {
			p = b->api_key_env;
			if ((*p >= '0' && *p <= '9') || strspn(p, env_chars) != strlen(p)) {
				fpath = path_join(path, "api_key_env");
				/* The value is not echoed: it may be the key itself. */
				ctx_err(x, fpath,
					"must name an environment variable (letters, digits, "
					"\"_\"), "
					"e.g. \"DEEPSEEK_API_KEY\", not hold the key");
				free(fpath);
			}
		}
		if (cJSON_IsObject(el))
			headers_load(x, el, path, b);
		free(path);
	}
}

/* Load a target list (primary or backup) and resolve its backends. */
static void
targets_load(struct ctx *x, const cJSON *arr, const char *pat, const char *path,
	     const struct config *c, struct target_cfg **out, int *nout)
{
	struct target_cfg *t;
	char *epath, *fpath, got[160];
	void *v = NULL;
	int n, i, j, positive = 0;

	n = array_walk(x, arr, pat, path, sizeof *t, &v);
	t = v;
	*out = t;
	*nout = n;
	if (cJSON_IsArray(arr) && n == 0)
		ctx_err(x, path, "must list at least one target");
	for (i = 0; i < n; i++) {
		t[i].backend_idx = -1;
		if (t[i].weight > 0)
			positive = 1;
		if (t[i].backend == NULL)
			continue;
		epath = path_index(path, i);
		fpath = path_join(epath, "backend");
		backend_resolve(x, c, fpath, t[i].backend, &t[i].backend_idx);
		for (j = 0; j < i; j++) {
			if (t[j].backend != NULL && strcmp(t[j].backend, t[i].backend) == 0) {
				ctx_err(x, fpath, "backend %s listed twice (also %s[%d])",
					quote(got, sizeof got, t[i].backend), path, j);
				break;
			}
		}
		free(fpath);
		free(epath);
	}
	if (n > 0 && !positive)
		ctx_err(x, path, "at least one target needs a weight > 0");
}

static bool
outcome_retryable(enum outcome o)
{
	switch (o) {
	case OUTCOME_CONNECT_ERROR:
	case OUTCOME_RESET:
	case OUTCOME_FIRST_BYTE_TIMEOUT:
	case OUTCOME_TOTAL_TIMEOUT:
	case OUTCOME_HTTP_5XX:
	case OUTCOME_HTTP_429:
	case OUTCOME_INVALID_RESPONSE:
		return true;
	default:
		return false;
	}
}

static void
retry_on_load(struct ctx *x, const cJSON *retry, const char *path, struct retry_cfg *rc)
{
	const struct config_key *k = key_must("routes[].retry.retry_on");
	const char *names[OUTCOME__COUNT], *near, *retryable;
	const cJSON *it, *el;
	cJSON *tmp = NULL;
	char *p = NULL, *ep, got[160];
	struct buf rb;
	enum outcome o;
	int i, n = 0;

	buf_init(&rb, 1024);

	for (i = 0; i < OUTCOME__COUNT; i++) {
		if (outcome_retryable((enum outcome)i))
			names[n++] = outcome_name((enum outcome)i);
	}
	for (i = 0; i < n; i++)
		buf_printf(&rb, "%s%s", i > 0 ? ", " : "", names[i]);
	retryable = rb.data;
	it = item_or_default(retry, k, &tmp);
	p = path_join(path, "retry_on");
	rc->retry_on = 0;
	if (!cJSON_IsArray(it)) {
		ctx_err(x, p, "must be an array of outcome classes (got %s)",
			json_describe(got, sizeof got, it));
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(el, it)
	{
		ep = path_index(p, i++);
		if (!cJSON_IsString(el)) {
			ctx_err(x, ep, "must be a string (got %s)",
				json_describe(got, sizeof got, el));
		} else if (outcome_parse(el->valuestring, &o) != 0) {
			near = nearest(el->valuestring, names, (size_t)n);
			if (near != NULL)
				ctx_err(x, ep, "unknown outcome class %s (did you mean \"%s\"?)",
					quote(got, sizeof got, el->valuestring), near);
			else
				ctx_err(x, ep, "unknown outcome class %s",
					quote(got, sizeof got, el->valuestring));
		} else if (!outcome_retryable(o)) {
			ctx_err(x, ep, "%s is never retried: only transport classes are (%s)",
				quote(got, sizeof got, el->valuestring), retryable);
		} else {
			rc->retry_on |= OUTCOME_BIT(o);
		}
		free(ep);
	}
out:
	buf_free(&rb);
	free(p);
	cJSON_Delete(tmp);
}

static void
retry_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r)
{
	const struct config_key *k = key_must("routes[].retry.jitter");
	const cJSON *retry = obj_get(route, "retry"), *it;
	cJSON *tmp = NULL;
	char *rpath, *p, got[128];

	if (!cJSON_IsObject(retry))
		retry = NULL;
	rpath = path_join(path, "retry");
	p = path_join(rpath, "jitter");
	it = item_or_default(retry, k, &tmp);
	if (cJSON_IsString(it) && strcmp(it->valuestring, "full") == 0) {
		r->retry.jitter_full = true;
		r->retry.jitter = 0;
	} else if (cJSON_IsNumber(it)) {
		key_store(x, k, it, p, r);
	} else {
		ctx_err(x, p, "must be a number 0..1 or \"full\" (got %s)",
			json_describe(got, sizeof got, it));
	}
	retry_on_load(x, retry, rpath, &r->retry);
	free(p);
	free(rpath);
	cJSON_Delete(tmp);
}

static void
timeout_check(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r)
{
	const cJSON *t = obj_get(route, "timeout"), *c;
	char *tpath, *p, got[64];

	tpath = path_join(path, "timeout");
	if (r->timeout.mode == TIMEOUT_FIXED && cJSON_IsObject(t)) {
		cJSON_ArrayForEach(c, t)
		{
			if (c->string == NULL || strcmp(c->string, "mode") == 0)
				continue;
			p = xasprintf("routes[].timeout.%s", c->string);
			if (strpbrk(c->string, ".[]") == NULL && config_key_find(p) != NULL) {
				free(p);
				p = path_join(tpath, c->string);
				ctx_err(x, p, "only used with \"mode\": \"dynamic\"");
			}
			free(p);
		}
	}
	if (r->timeout.mode == TIMEOUT_DYNAMIC && r->timeout.min_ms > r->timeout.max_ms) {
		p = path_join(tpath, "min_ms");
		ctx_err(x, p, "must be <= max_ms (%d) (got %s)", r->timeout.max_ms,
			num_str(got, sizeof got, r->timeout.min_ms, 1));
		free(p);
	}
	free(tpath);
}

static void
regex_compile(struct ctx *x, char **pattern, regex_t *re, const char *path)
{
	char msg[256];
	int rc;

	if (*pattern == NULL)
		return;
	rc = regcomp(re, *pattern, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		regerror(rc, re, msg, sizeof msg);
		ctx_err(x, path, "invalid regex: %s", msg);
		free(*pattern);
		*pattern = NULL;
	}
}

/* A copy of the object at key of obj (NULL when absent); type error reported. */
static cJSON *
object_copy(struct ctx *x, const cJSON *obj, const char *key, const char *path)
{
	const cJSON *it = obj_get(obj, key);
	char *p, got[128];

	if (it == NULL)
		return NULL;
	if (!cJSON_IsObject(it)) {
		p = path_join(path, key);
		ctx_err(x, p, "must be an object (got %s)", json_describe(got, sizeof got, it));
		free(p);
		return NULL;
	}
	return cJSON_Duplicate(it, 1);
}

static void
backup_load(struct ctx *x, const cJSON *route, const char *path, const struct config *c,
	    struct route_cfg *r)
{
	const cJSON *b = obj_get(route, "backup");
	char *bpath, *p;
	void *v = NULL;

	if (!r->backup.enabled)
		return;
	bpath = path_join(path, "backup");
	p = path_join(bpath, "targets");
	targets_load(x, obj_get(b, "targets"), "routes[].backup.targets", p, c, &r->backup.targets,
		     &r->backup.ntargets);
	free(p);
	r->backup.has_temperature = cJSON_IsNumber(obj_get(b, "temperature"));
	p = path_join(bpath, "few_shot");
	r->backup.nfew_shot = array_walk(x, obj_get(b, "few_shot"), "routes[].backup.few_shot", p,
					 sizeof *r->backup.few_shot, &v);
	r->backup.few_shot = v;
	free(p);
	free(bpath);
}

/*
 * How to join validate_compile()'s "properties.x.pattern: problem" to the
 * schema's path: ".", nothing before "[" or ":", or ": " when the line
 * names no path (an error at the schema's root).
 */
static const char *
schema_sep(const char *line)
{
	const char *colon = strstr(line, ": ");
	size_t n = colon != NULL ? (size_t)(colon - line) : 0;

	if (*line == ':' || *line == '[')
		return "";
	if (n > 0 &&
	    strspn(line, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.[]-$") ==
		    n)
		return ".";
	return ": ";
}

static void
schema_compile(struct ctx *x, const char *opath, struct output_cfg *o)
{
	char *vcause = NULL, *spath, *line, *nl, *full;
	int rc;

	spath = path_join(opath, "schema");
	rc = validate_compile(o->schema, &o->vschema, &vcause);
	if (rc != 0) {
		o->vschema = NULL;
		if (vcause == NULL || *vcause == '\0') {
			ctx_err(x, spath, "invalid schema");
		} else {
			for (line = vcause; line != NULL; line = nl) {
				nl = strchr(line, '\n');
				if (nl != NULL)
					*nl++ = '\0';
				if (*line == '\0')
					continue;
				full = xasprintf("%s%s%s", spath, schema_sep(line), line);
				ctx_line(x, full);
				free(full);
			}
		}
	}
	free(vcause);
	free(spath);
}

static void
output_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r)
{
	const cJSON *o = obj_get(route, "output"), *el, *when;
	struct output_cfg *oc = &r->output;
	char *opath, *apath, *ep, *fp;
	void *v = NULL;
	int i;

	if (!oc->present)
		return;
	opath = path_join(path, "output");
	oc->schema = object_copy(x, o, "schema", opath);
	if (oc->schema != NULL)
		schema_compile(x, opath, oc);

	apath = path_join(opath, "deny");
	oc->ndeny = array_walk(x, obj_get(o, "deny"), "routes[].output.deny", apath,
			       sizeof *oc->deny, &v);
	oc->deny = v;
	for (i = 0; i < oc->ndeny; i++) {
		ep = path_index(apath, i);
		fp = path_join(ep, "pattern");
		regex_compile(x, &oc->deny[i].pattern, &oc->deny[i].re, fp);
		free(fp);
		free(ep);
	}
	free(apath);

	apath = path_join(opath, "rules");
	el = obj_get(o, "rules");
	oc->nrules = array_walk(x, el, "routes[].output.rules", apath, sizeof *oc->rules, &v);
	oc->rules = v;
	el = cJSON_IsArray(el) ? el->child : NULL;
	for (i = 0; i < oc->nrules; i++, el = el->next) {
		when = obj_get(el, "when");
		if (obj_get(when, "equals") != NULL)
			oc->rules[i].when_equals = cJSON_Duplicate(obj_get(when, "equals"), 1);
		ep = path_index(apath, i);
		fp = path_join(ep, "deny.pattern");
		regex_compile(x, &oc->rules[i].deny.pattern, &oc->rules[i].deny.re, fp);
		free(fp);
		free(ep);
	}
	free(apath);
	free(opath);
}

static void
match_any_load(struct ctx *x, const cJSON *any, const char *path, struct rule_match *m)
{
	const cJSON *el;
	char *ep, *s, got[128];
	int i = 0, n;

	if (!cJSON_IsArray(any) || (n = cJSON_GetArraySize(any)) == 0) {
		ctx_err(x, path, "must be a non-empty array of keywords (got %s)",
			cJSON_IsArray(any) ? "an empty array"
					   : json_describe(got, sizeof got, any));
		return;
	}
	m->any = xcalloc((size_t)n, sizeof *m->any);
	cJSON_ArrayForEach(el, any)
	{
		if (!cJSON_IsString(el) || *el->valuestring == '\0') {
			ep = path_index(path, i);
			ctx_err(x, ep, "must be a non-empty string (got %s)",
				json_describe(got, sizeof got, el));
			free(ep);
		} else {
			m->any[m->nany++] = s = xstrdup(el->valuestring);
			for (; *s != '\0'; s++) {
				if (*s >= 'A' && *s <= 'Z')
					*s = (char)(*s - 'A' + 'a');
			}
		}
		i++;
	}
}

static void
rules_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r)
{
	const cJSON *ru = obj_get(route, "rules"), *el, *any;
	struct rules_cfg *rc = &r->rules;
	char *rpath, *apath, *ep, *fp;
	void *v = NULL;
	int i;

	if (!rc->enabled)
		return;
	rpath = path_join(path, "rules");
	apath = path_join(rpath, "match");
	el = obj_get(ru, "match");
	rc->nmatch = array_walk(x, el, "routes[].rules.match", apath, sizeof *rc->match, &v);
	rc->match = v;
	el = cJSON_IsArray(el) ? el->child : NULL;
	for (i = 0; i < rc->nmatch; i++, el = el->next) {
		ep = path_index(apath, i);
		any = obj_get(el, "any");
		if (cJSON_IsObject(el) && (any != NULL) == (obj_get(el, "regex") != NULL))
			ctx_err(x, ep, "needs exactly one of \"any\" or \"regex\"");
		if (any != NULL) {
			fp = path_join(ep, "any");
			match_any_load(x, any, fp, &rc->match[i]);
			free(fp);
		}
		fp = path_join(ep, "regex");
		regex_compile(x, &rc->match[i].regex, &rc->match[i].re, fp);
		free(fp);
		rc->match[i].result = object_copy(x, el, "result", ep);
		free(ep);
	}
	free(apath);
	if (rc->has_default) {
		ep = path_join(rpath, "default");
		rc->default_result = object_copy(x, obj_get(ru, "default"), "result", ep);
		free(ep);
	}
	if (cJSON_IsObject(ru) && obj_get(ru, "match") == NULL && obj_get(ru, "default") == NULL)
		ctx_err(x, rpath, "needs rules in \"match\" or a \"default\"");
	free(rpath);
}

static void
preset_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r)
{
	const cJSON *p = obj_get(route, "preset");
	char *ppath;

	if (!r->preset.enabled)
		return;
	ppath = path_join(path, "preset");
	r->preset.result = object_copy(x, p, "result", ppath);
	if (cJSON_IsObject(p) && obj_get(p, "result") == NULL && obj_get(p, "text") == NULL)
		ctx_err(x, ppath, "needs \"result\" or \"text\"");
	free(ppath);
}

static void
cross_check_load(struct ctx *x, const cJSON *route, const char *path, const struct config *c,
		 struct route_cfg *r)
{
	const struct config_key *k = key_must("routes[].cross_check.compare");
	struct cross_check_cfg *cc = &r->cross_check;
	const cJSON *it, *el;
	cJSON *tmp = NULL;
	char *cpath, *p, *ep, got[128];
	int i = 0, n;

	cc->backend_idx = -1;
	if (!cc->enabled)
		return;
	cpath = path_join(path, "cross_check");
	if (cc->backend != NULL) {
		p = path_join(cpath, "backend");
		backend_resolve(x, c, p, cc->backend, &cc->backend_idx);
		free(p);
	}
	it = item_or_default(obj_get(route, "cross_check"), k, &tmp);
	p = path_join(cpath, "compare");
	if (!cJSON_IsArray(it)) {
		ctx_err(x, p, "must be an array of field names (got %s)",
			json_describe(got, sizeof got, it));
	} else if ((n = cJSON_GetArraySize(it)) > 0) {
		cc->compare = xcalloc((size_t)n, sizeof *cc->compare);
		cJSON_ArrayForEach(el, it)
		{
			if (!cJSON_IsString(el) || *el->valuestring == '\0') {
				ep = path_index(p, i);
				ctx_err(x, ep, "must be a non-empty string (got %s)",
					json_describe(got, sizeof got, el));
				free(ep);
			} else {
				cc->compare[cc->ncompare++] = xstrdup(el->valuestring);
			}
			i++;
		}
	}
	free(p);
	free(cpath);
	cJSON_Delete(tmp);
}

static void
slo_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r)
{
	struct slo_cfg *s = &r->slo;
	char *apath, *ep, *fp, got[160];
	void *v = NULL;
	int i, j;

	if (!s->enabled)
		return;
	apath = path_join(path, "slo.alerts");
	s->nalerts = array_walk(x, obj_get(obj_get(route, "slo"), "alerts"), "routes[].slo.alerts",
				apath, sizeof *s->alerts, &v);
	s->alerts = v;
	for (i = 0; i < s->nalerts; i++) {
		if (s->alerts[i].name == NULL)
			continue;
		ep = path_index(apath, i);
		fp = path_join(ep, "name");
		name_check(x, fp, s->alerts[i].name);
		for (j = 0; j < i; j++) {
			if (s->alerts[j].name != NULL &&
			    strcmp(s->alerts[j].name, s->alerts[i].name) == 0) {
				ctx_err(x, fp, "duplicate alert name %s (also %s[%d])",
					quote(got, sizeof got, s->alerts[i].name), apath, j);
				break;
			}
		}
		free(fp);
		free(ep);
	}
	free(apath);
}

static void
route_load(struct ctx *x, const cJSON *el, int i, struct config *c)
{
	struct route_cfg *r = &c->routes[i];
	char *path, *p, got[160];
	int j;

	path = path_index("routes", i);
	if (r->name != NULL) {
		p = path_join(path, "name");
		name_check(x, p, r->name);
		for (j = 0; j < i; j++) {
			if (c->routes[j].name != NULL && strcmp(c->routes[j].name, r->name) == 0) {
				ctx_err(x, p, "duplicate route name %s (also routes[%d])",
					quote(got, sizeof got, r->name), j);
				break;
			}
		}
		free(p);
	}
	if (r->budget_ms > 0 && r->min_attempt_ms > r->budget_ms) {
		p = path_join(path, "min_attempt_ms");
		ctx_err(x, p, "must be <= budget_ms (%d) (got %d)", r->budget_ms,
			r->min_attempt_ms);
		free(p);
	}
	if (!cJSON_IsObject(el))
		el = NULL;
	p = path_join(path, "targets");
	targets_load(x, obj_get(el, "targets"), "routes[].targets", p, c, &r->targets,
		     &r->ntargets);
	free(p);
	timeout_check(x, el, path, r);
	retry_load(x, el, path, r);
	backup_load(x, el, path, c, r);
	output_load(x, el, path, r);
	rules_load(x, el, path, r);
	preset_load(x, el, path, r);
	cross_check_load(x, el, path, c, r);
	slo_load(x, el, path, r);
	free(path);
}

static void
routes_load(struct ctx *x, const cJSON *root, struct config *c)
{
	const cJSON *arr = obj_get(root, "routes"), *el;
	void *v = NULL;
	int i;

	c->nroutes = array_walk(x, arr, "routes", "routes", sizeof *c->routes, &v);
	c->routes = v;
	if (cJSON_IsArray(arr) && c->nroutes == 0)
		ctx_err(x, "routes", "at least one route is required");
	for (i = 0, el = cJSON_IsArray(arr) ? arr->child : NULL; i < c->nroutes; i++, el = el->next)
		route_load(x, el, i, c);
}

static void
root_load(struct ctx *x, const cJSON *root, struct config *c)
{
	walk_object(x, root, "", "", c);
	listen_parse(x, c);
	paths_resolve(c);
	webhook_load(x, root, c);
	backends_load(x, root, c);
	routes_load(x, root, c);
}

/*
 * Locating syntax errors: cJSON says only that parsing failed, and where
 * it stopped is often past the mistake. This strict scanner re-reads the
 * text (only after a failure) to find the first offending byte and name
 * the problem. It accepts exactly RFC 8259 JSON.
 */
struct scan {
	const char *s;
	size_t len, off;
	const char *err;
	int depth;
};

#define SCAN_MAX_DEPTH 1000

static int scan_value(struct scan *sc);

static void
scan_ws(struct scan *sc)
{
	while (sc->off < sc->len && strchr(" \t\r\n", sc->s[sc->off]) != NULL &&
	       sc->s[sc->off] != '\0')
		sc->off++;
}

static int
scan_fail(struct scan *sc, const char *err)
{
	if (sc->off >= sc->len)
		err = "unexpected end of input";
	else if (sc->s[sc->off] == '/')
		err = "comments are not allowed (the file is strict JSON)";
	else if (sc->s[sc->off] == '\'')
		err = "strings take double quotes";
	sc->err = err;
	return -1;
}

static int
scan_string(struct scan *sc)
{
	unsigned char ch;
	int i;

	sc->off++;
	while (sc->off < sc->len) {
		ch = (unsigned char)sc->s[sc->off];
		if (ch == '"') {
			sc->off++;
			return 0;
		}
		if (ch < 0x20)
			return scan_fail(sc, "control character in a string (escape it, e.g. \\n)");
		if (ch == '\\') {
			sc->off++;
			if (sc->off >= sc->len)
				break;
			ch = (unsigned char)sc->s[sc->off];
			if (ch == 'u') {
				for (i = 1; i <= 4; i++) {
					if (sc->off + (size_t)i >= sc->len ||
					    strchr("0123456789abcdefABCDEF",
						   sc->s[sc->off + (size_t)i]) == NULL ||
					    sc->s[sc->off + (size_t)i] == '\0') {
						sc->off += (size_t)i;
						return scan_fail(sc, "\\u needs four hex digits");
					}
				}
				sc->off += 4;
			} else if (strchr("\"\\/bfnrt", ch) == NULL || ch == '\0') {
				return scan_fail(sc, "invalid escape in a string");
			}
		}
		sc->off++;
	}
	sc->err = "unterminated string";
	return -1;
}

static int
scan_digits(struct scan *sc)
{
	size_t start = sc->off;

	while (sc->off < sc->len && sc->s[sc->off] >= '0' && sc->s[sc->off] <= '9')
		sc->off++;
	return sc->off > start ? 0 : scan_fail(sc, "invalid number");
}

static int
scan_number(struct scan *sc)
{
	if (sc->s[sc->off] == '-')
		sc->off++;
	if (sc->off < sc->len && sc->s[sc->off] == '0')
		sc->off++;
	else if (scan_digits(sc) != 0)
		return -1;
	if (sc->off < sc->len && sc->s[sc->off] == '.') {
		sc->off++;
		if (scan_digits(sc) != 0)
			return -1;
	}
	if (sc->off < sc->len && (sc->s[sc->off] == 'e' || sc->s[sc->off] == 'E')) {
		sc->off++;
		if (sc->off < sc->len && (sc->s[sc->off] == '+' || sc->s[sc->off] == '-'))
			sc->off++;
		if (scan_digits(sc) != 0)
			return -1;
	}
	return 0;
}

/* An object or array; sc->off is at its opening bracket. */
static int
scan_container(struct scan *sc, char close)
{
	int first = 1;

	if (++sc->depth > SCAN_MAX_DEPTH)
		return scan_fail(sc, "nested too deeply");
	sc->off++;
	for (;;) {
		scan_ws(sc);
		if (sc->off < sc->len && sc->s[sc->off] == close) {
			if (!first)
				return scan_fail(sc, close == '}' ? "trailing comma before '}'"
								  : "trailing comma before ']'");
			break;
		}
		if (close == '}') {
			if (sc->off >= sc->len || sc->s[sc->off] != '"')
				return scan_fail(sc, "expected a double-quoted key");
			if (scan_string(sc) != 0)
				return -1;
			scan_ws(sc);
			if (sc->off >= sc->len || sc->s[sc->off] != ':')
				return scan_fail(sc, "expected ':' after the key");
			sc->off++;
		}
		if (scan_value(sc) != 0)
			return -1;
		first = 0;
		scan_ws(sc);
		if (sc->off < sc->len && sc->s[sc->off] == ',') {
			sc->off++;
			continue;
		}
		if (sc->off < sc->len && sc->s[sc->off] == close)
			break;
		return scan_fail(sc, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	sc->off++;
	sc->depth--;
	return 0;
}

static int
scan_value(struct scan *sc)
{
	static const char *const lits[] = {"true", "false", "null"};
	size_t i, n;
	char ch;

	scan_ws(sc);
	if (sc->off >= sc->len)
		return scan_fail(sc, "expected a value");
	ch = sc->s[sc->off];
	if (ch == '{')
		return scan_container(sc, '}');
	if (ch == '[')
		return scan_container(sc, ']');
	if (ch == '"')
		return scan_string(sc);
	if (ch == '-' || (ch >= '0' && ch <= '9'))
		return scan_number(sc);
	for (i = 0; i < ARRAY_SIZE(lits); i++) {
		n = strlen(lits[i]);
		if (sc->len - sc->off >= n && memcmp(sc->s + sc->off, lits[i], n) == 0) {
			sc->off += n;
			return 0;
		}
	}
	return scan_fail(sc,
			 "expected a value (object, array, string, number, true, false or null)");
}

/* NULL when text is strict JSON, else "NAME:LINE:COL: invalid JSON: problem". */
static char *
syntax_check(const char *name, const char *text, size_t len)
{
	struct scan sc = {.s = text, .len = len};
	int line = 1, col = 1;
	size_t i;

	if (scan_value(&sc) == 0) {
		scan_ws(&sc);
		if (sc.off < sc.len && text[sc.off] == '\0')
			sc.err = "NUL byte in the file";
		else if (sc.off < sc.len)
			scan_fail(&sc, "unexpected text after the JSON value");
	}
	if (sc.err == NULL)
		return NULL;
	for (i = 0; i < sc.off && i < len; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	return xasprintf("%s:%d:%d: invalid JSON: %s", name, line, col, sc.err);
}

static int
config_parse(const char *text, size_t len, const char *name, const char *path, const char *dir,
	     struct config **out, char **cause)
{
	struct config *c = NULL;
	cJSON *root = NULL;
	struct ctx x;
	char got[64], *serr = NULL;
	int rc = 0;

	buf_init(&x.errs, CONFIG_MAX_CAUSE);
	x.nerr = 0;
	serr = syntax_check(name, text, len);
	if (serr == NULL) {
		root = cJSON_ParseWithOpts(text, NULL, 1);
		if (root == NULL)
			serr = xasprintf("%s: invalid JSON: refused by the parser", name);
	}
	if (serr != NULL) {
		rc = CONFIG_E_SYNTAX;
		if (cause != NULL) {
			*cause = serr;
			serr = NULL;
		}
		goto out;
	}
	c = xcalloc(1, sizeof *c);
	c->path = path != NULL ? xstrdup(path) : NULL;
	c->dir = xstrdup(dir);
	if (!cJSON_IsObject(root))
		ctx_err(&x, "", "must be a JSON object (got %s)",
			json_describe(got, sizeof got, root));
	else
		root_load(&x, root, c);
	if (x.nerr > 0) {
		rc = CONFIG_E_INVALID;
		if (cause != NULL)
			*cause = ctx_cause(&x);
		goto out;
	}
	*out = c;
	c = NULL;
out:
	free(serr);
	buf_free(&x.errs);
	config_free(c);
	cJSON_Delete(root);
	return rc;
}

int
config_load_string(const char *json, const char *dir, struct config **out, char **cause)
{
	char *cwd = NULL;
	int rc;

	if (dir == NULL) {
		cwd = getcwd(NULL, 0);
		dir = cwd != NULL ? cwd : ".";
	}
	rc = config_parse(json, strlen(json), "<string>", NULL, dir, out, cause);
	free(cwd);
	return rc;
}

int
config_load(const char *path, struct config **out, char **cause)
{
	struct buf data;
	struct stat st;
	char chunk[8192], *abs = NULL, *dir = NULL, *slash;
	ssize_t n;
	int fd = -1, rc = 0;

	buf_init(&data, CONFIG_MAX_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) != 0) {
		rc = CONFIG_E_IO;
		if (cause != NULL)
			*cause = xasprintf("%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = CONFIG_E_IO;
		if (cause != NULL)
			*cause = xasprintf("%s: not a regular file", path);
		goto out;
	}
	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = CONFIG_E_IO;
			if (cause != NULL)
				*cause = xasprintf("%s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (buf_append(&data, chunk, (size_t)n) != 0) {
			rc = CONFIG_E_IO;
			if (cause != NULL)
				*cause = xasprintf("%s: larger than %d bytes", path,
						   CONFIG_MAX_FILE);
			goto out;
		}
	}
	abs = realpath(path, NULL);
	if (abs == NULL)
		abs = xstrdup(path);
	dir = xstrdup(abs);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	else {
		free(dir);
		dir = getcwd(NULL, 0);
		if (dir == NULL)
			dir = xstrdup(".");
	}
	rc = config_parse(data.data != NULL ? data.data : "", data.len, path, abs, dir, out, cause);
out:
	free(dir);
	free(abs);
	buf_free(&data);
	if (fd >= 0)
		close(fd);
	return rc;
}

static void
targets_free(struct target_cfg *t, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(t[i].backend);
	free(t);
}

static void
pattern_rule_free(struct pattern_rule *p)
{
	free(p->field);
	if (p->pattern != NULL)
		regfree(&p->re);
	free(p->pattern);
}

static void
route_free(struct route_cfg *r)
{
	int i, j;

	free(r->name);
	targets_free(r->targets, r->ntargets);
	targets_free(r->backup.targets, r->backup.ntargets);
	for (i = 0; i < r->backup.nfew_shot; i++) {
		free(r->backup.few_shot[i].role);
		free(r->backup.few_shot[i].content);
	}
	free(r->backup.few_shot);
	free(r->prompt.system);
	free(r->prompt.user);
	cJSON_Delete(r->output.schema);
	if (r->output.vschema != NULL)
		vschema_free(r->output.vschema);
	for (i = 0; i < r->output.ndeny; i++)
		pattern_rule_free(&r->output.deny[i]);
	free(r->output.deny);
	for (i = 0; i < r->output.nrules; i++) {
		free(r->output.rules[i].when_field);
		cJSON_Delete(r->output.rules[i].when_equals);
		pattern_rule_free(&r->output.rules[i].deny);
	}
	free(r->output.rules);
	free(r->output.confidence_field);
	for (i = 0; i < r->rules.nmatch; i++) {
		for (j = 0; j < r->rules.match[i].nany; j++)
			free(r->rules.match[i].any[j]);
		free(r->rules.match[i].any);
		if (r->rules.match[i].regex != NULL)
			regfree(&r->rules.match[i].re);
		free(r->rules.match[i].regex);
		cJSON_Delete(r->rules.match[i].result);
	}
	free(r->rules.match);
	cJSON_Delete(r->rules.default_result);
	cJSON_Delete(r->preset.result);
	free(r->preset.text);
	free(r->cross_check.backend);
	for (i = 0; i < r->cross_check.ncompare; i++)
		free(r->cross_check.compare[i]);
	free(r->cross_check.compare);
	for (i = 0; i < r->slo.nalerts; i++) {
		free(r->slo.alerts[i].name);
		free(r->slo.alerts[i].metric);
	}
	free(r->slo.alerts);
}

void
config_free(struct config *c)
{
	struct backend_cfg *b;
	int i, j;

	if (c == NULL)
		return;
	for (i = 0; i < c->nbackends; i++) {
		b = &c->backends[i];
		free(b->name);
		free(b->url);
		free(b->model);
		free(b->api_key_env);
		free(b->version);
		free(b->tls_ca_file);
		for (j = 0; j < b->nheaders; j++) {
			free(b->headers[j].name);
			free(b->headers[j].value);
		}
		free(b->headers);
	}
	free(c->backends);
	for (i = 0; i < c->nroutes; i++)
		route_free(&c->routes[i]);
	free(c->routes);
	free(c->path);
	free(c->dir);
	free(c->listen);
	free(c->listen_host);
	free(c->database);
	free(c->tokens_file);
	free(c->alert_webhook);
	free(c->alertmanager_url);
	free(c);
}

const struct route_cfg *
config_route(const struct config *c, const char *name)
{
	int i;

	for (i = 0; i < c->nroutes; i++) {
		if (c->routes[i].name != NULL && strcmp(c->routes[i].name, name) == 0)
			return &c->routes[i];
	}
	return NULL;
}

int
config_backend_index(const struct config *c, const char *name)
{
	int i;

	for (i = 0; i < c->nbackends; i++) {
		if (c->backends[i].name != NULL && strcmp(c->backends[i].name, name) == 0)
			return i;
	}
	return -1;
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

	fputs("Configuration keys (one JSON file; see CONFIG.md). \"[]\" stands for any\n"
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
