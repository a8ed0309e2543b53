/*
 * config: load, validate and free the configuration (config.h).
 *
 * Design: the key table (config_table.c) drives the generic work: the
 * walker of config_walk.c type-checks, range-checks and stores every scalar
 * key, defaults included. Arrays, free-form values (schema, results,
 * headers), regexes and cross references are read by the section loaders
 * below and in config_route.c, which take their defaults from the table
 * too. Text that is not strict JSON is located by config_syntax.c.
 *
 * Invariants: errors never stop the walk (every error is reported, one per
 * line); a pattern_rule's pattern / a rule_match's regex is non-NULL iff its
 * regex_t is compiled (so config_free() can regfree exactly those); every
 * cJSON kept in the config is a copy owned by it; the parse tree is deleted
 * before returning. Runs on the main thread.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_int.h"
#include "config_syntax.h"
#include "config_table.h"
#include "schema.h"
#include "util.h"

#define CONFIG_MAX_FILE	 (16 * 1024 * 1024)
#define CONFIG_MAX_CAUSE (256 * 1024)

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

/*
 * backends[].record_response_headers: header names, case-insensitive
 * (stored lower case), at most CONFIG_RECORD_HEADERS_MAX of at most
 * CONFIG_RECORD_HEADER_NAME_MAX bytes, no duplicates.
 */
static void
record_headers_load(struct ctx *x, const cJSON *obj, const char *path, struct backend_cfg *b)
{
	const cJSON *it = obj_get(obj, "record_response_headers"), *el;
	char *rpath, *ep, *v, got[128];
	const char *bad;
	int i = 0, j;
	size_t k;

	if (it == NULL)
		return;
	rpath = path_join(path, "record_response_headers");
	if (!cJSON_IsArray(it)) {
		ctx_err(x, rpath, "must be an array of header names (got %s)",
			json_describe(got, sizeof got, it));
		free(rpath);
		return;
	}
	if (cJSON_GetArraySize(it) > CONFIG_RECORD_HEADERS_MAX)
		ctx_err(x, rpath, "at most %d names (got %d)", CONFIG_RECORD_HEADERS_MAX,
			cJSON_GetArraySize(it));
	b->record_headers = xcalloc(CONFIG_RECORD_HEADERS_MAX, sizeof *b->record_headers);
	cJSON_ArrayForEach(el, it)
	{
		bad = NULL;
		if (!cJSON_IsString(el) || !header_name_ok(el->valuestring))
			bad = "must be a valid HTTP header name";
		else if (strlen(el->valuestring) > CONFIG_RECORD_HEADER_NAME_MAX)
			bad = "is longer than 256 bytes";
		for (j = 0; bad == NULL && j < b->nrecord_headers; j++)
			if (strcasecmp(b->record_headers[j], el->valuestring) == 0)
				bad = "duplicate name (names are case-insensitive)";
		if (bad != NULL) {
			ep = path_index(rpath, i);
			ctx_err(x, ep, "%s (got %s)", bad, json_describe(got, sizeof got, el));
			free(ep);
		} else if (b->nrecord_headers < CONFIG_RECORD_HEADERS_MAX) {
			v = xstrdup(el->valuestring);
			for (k = 0; v[k] != '\0'; k++)
				v[k] = (char)tolower((unsigned char)v[k]);
			b->record_headers[b->nrecord_headers++] = v;
		}
		i++;
	}
	free(rpath);
}

/* tracing: the endpoint's URL and the export's extra headers. */
static void
tracing_load(struct ctx *x, const cJSON *root, struct config *c)
{
	const cJSON *t = obj_get(root, "tracing");
	struct backend_cfg tmp;

	if (c->tracing.endpoint != NULL)
		url_check(x, "tracing.endpoint", c->tracing.endpoint);
	if (!cJSON_IsObject(t))
		return;
	memset(&tmp, 0, sizeof tmp);
	headers_load(x, t, "tracing", &tmp);
	c->tracing.headers = tmp.headers;
	c->tracing.nheaders = tmp.nheaders;
}

/*
 * backends[].adaptive_concurrency: the limit's ceiling is max_concurrent;
 * 1 <= min_limit <= initial_limit <= max_concurrent, where an absent
 * initial_limit is its default brought within [min_limit, max_concurrent].
 */
static void
adaptive_check(struct ctx *x, const cJSON *el, const char *path, struct backend_cfg *b)
{
	struct limiter_cfg *a = &b->adaptive;
	char *apath, *p;

	a->max_limit = b->max_concurrent;
	if (!a->enabled)
		return;
	apath = path_join(path, "adaptive_concurrency");
	if (obj_get(obj_get(el, "adaptive_concurrency"), "initial_limit") == NULL) {
		if (a->initial_limit > a->max_limit)
			a->initial_limit = a->max_limit;
		if (a->initial_limit < a->min_limit)
			a->initial_limit = a->min_limit;
	}
	if (a->min_limit > a->max_limit) {
		p = path_join(apath, "min_limit");
		ctx_err(x, p, "must be <= max_concurrent (%d) (got %d)", a->max_limit,
			a->min_limit);
		free(p);
	} else if (a->min_limit > a->initial_limit) {
		p = path_join(apath, "min_limit");
		ctx_err(x, p, "must be <= initial_limit (%d) (got %d)", a->initial_limit,
			a->min_limit);
		free(p);
	} else if (a->initial_limit > a->max_limit) {
		p = path_join(apath, "initial_limit");
		ctx_err(x, p, "must be <= max_concurrent (%d) (got %d)", a->max_limit,
			a->initial_limit);
		free(p);
	}
	free(apath);
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
		if (cJSON_IsObject(el))
			record_headers_load(x, el, path, b);
		adaptive_check(x, cJSON_IsObject(el) ? el : NULL, path, b);
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

/*
 * http.allowed_hosts / http.allowed_origins: arrays of strings without
 * spaces or controls; hosts are names or addresses without a port,
 * origins "scheme://host[:port]" without a path. Stored lower case.
 */
static void
http_names_load(struct ctx *x, const cJSON *root, const char *name, int origins, char ***out,
		int *nout)
{
	char path[32], *ep, *v, got[128];
	const struct config_key *k;
	const cJSON *it, *el;
	cJSON *tmp = NULL;
	const char *bad;
	size_t j;
	int i = 0;

	snprintf(path, sizeof path, "http.%s", name);
	k = key_must(path);
	it = item_or_default(obj_get(root, "http"), k, &tmp);
	if (it != NULL && !cJSON_IsArray(it)) {
		ctx_err(x, path, "must be an array of strings (got %s)",
			json_describe(got, sizeof got, it));
		it = NULL;
	}
	if (it != NULL && cJSON_GetArraySize(it) > 0)
		*out = xcalloc((size_t)cJSON_GetArraySize(it), sizeof **out);
	cJSON_ArrayForEach(el, it)
	{
		bad = NULL;
		if (!cJSON_IsString(el) || *el->valuestring == '\0')
			bad = "must be a non-empty string";
		for (j = 0; bad == NULL && el->valuestring[j] != '\0'; j++)
			if ((unsigned char)el->valuestring[j] <= 0x20 || el->valuestring[j] == 0x7f)
				bad = "must not hold spaces or control characters";
		if (bad == NULL && origins && strncmp(el->valuestring, "http://", 7) != 0 &&
		    strncmp(el->valuestring, "https://", 8) != 0)
			bad = "must be an origin: \"http://host[:port]\" or "
			      "\"https://host[:port]\"";
		if (bad == NULL && origins && strchr(strstr(el->valuestring, "//") + 2, '/'))
			bad = "an origin has no path (not even \"/\")";
		if (bad == NULL && !origins && strpbrk(el->valuestring, "/:[]") != NULL)
			bad = "must be a host name without port, scheme or path";
		if (bad != NULL) {
			ep = path_index(path, i);
			ctx_err(x, ep, "%s (got %s)", bad, json_describe(got, sizeof got, el));
			free(ep);
		} else {
			v = xstrdup(el->valuestring);
			for (j = 0; v[j] != '\0'; j++)
				v[j] = (char)tolower((unsigned char)v[j]);
			(*out)[(*nout)++] = v;
		}
		i++;
	}
	cJSON_Delete(tmp);
}

/* callbacks.allow: patterns of addr_rule_parse(), parsed into the config. */
static void
callbacks_load(struct ctx *x, const cJSON *root, struct config *c)
{
	const struct config_key *k = key_must("callbacks.allow");
	const cJSON *it, *el;
	cJSON *tmp = NULL;
	const char *why;
	char *ep, got[128];
	int i = 0;

	it = item_or_default(obj_get(root, "callbacks"), k, &tmp);
	if (it != NULL && !cJSON_IsArray(it)) {
		ctx_err(x, "callbacks.allow", "must be an array of strings (got %s)",
			json_describe(got, sizeof got, it));
		it = NULL;
	}
	if (it != NULL && cJSON_GetArraySize(it) > 0)
		c->callbacks_allow =
			xcalloc((size_t)cJSON_GetArraySize(it), sizeof *c->callbacks_allow);
	cJSON_ArrayForEach(el, it)
	{
		why = "must be a string";
		if (cJSON_IsString(el) &&
		    addr_rule_parse(el->valuestring, &c->callbacks_allow[c->ncallbacks_allow],
				    &why) == 0) {
			c->ncallbacks_allow++;
		} else {
			ep = path_index("callbacks.allow", i);
			ctx_err(x, ep, "%s (got %s)", why, json_describe(got, sizeof got, el));
			free(ep);
		}
		i++;
	}
	cJSON_Delete(tmp);
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
	callbacks_load(x, root, c);
	tracing_load(x, root, c);
	http_names_load(x, root, "allowed_hosts", 0, &c->http.allowed_hosts,
			&c->http.nallowed_hosts);
	http_names_load(x, root, "allowed_origins", 1, &c->http.allowed_origins,
			&c->http.nallowed_origins);
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
	serr = config_syntax_check(name, text, len);
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
		for (j = 0; j < b->nrecord_headers; j++)
			free(b->record_headers[j]);
		free(b->record_headers);
	}
	free(c->backends);
	free(c->tracing.endpoint);
	free(c->tracing.service_name);
	for (i = 0; i < c->tracing.nheaders; i++) {
		free(c->tracing.headers[i].name);
		free(c->tracing.headers[i].value);
	}
	free(c->tracing.headers);
	for (i = 0; i < c->nroutes; i++)
		route_free(&c->routes[i]);
	free(c->routes);
	free(c->path);
	free(c->dir);
	free(c->listen);
	free(c->listen_host);
	free(c->database);
	free(c->tokens_file);
	free(c->database_group);
	free(c->callbacks_allow);
	free(c->alert_webhook);
	free(c->alertmanager_url);
	for (i = 0; i < c->http.nallowed_hosts; i++)
		free(c->http.allowed_hosts[i]);
	free(c->http.allowed_hosts);
	for (i = 0; i < c->http.nallowed_origins; i++)
		free(c->http.allowed_origins[i]);
	free(c->http.allowed_origins);
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
