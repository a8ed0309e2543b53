/*
 * config_route: the sections of a route that stand alone (config_int.h):
 * timeout, retry, output (schema, deny patterns, conditional rules), rules
 * and preset, read after the walker has stored their scalar keys. The
 * sections that resolve backend names (targets, backup, cross_check) stay
 * in config.c with the lookups, so no call runs back into config.c. And
 * route_free(), what config_free() calls for each route. Runs on the main
 * thread.
 */
#include "config_int.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_table.h"
#include "schema.h"
#include "util.h"

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

/* "pNN" / "pNN.N" with NN 50..99.9 ("p95", "p99.9") into *q (0.95). 0, or -1. */
static int
quantile_parse(const char *s, double *q)
{
	double v = 0, scale = 1;
	int digits = 0, frac = 0;

	if (*s++ != 'p')
		return -1;
	for (; *s >= '0' && *s <= '9' && digits < 3; s++, digits++)
		v = v * 10 + (*s - '0');
	if (digits == 0)
		return -1;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9' && frac < 3; s++, frac++) {
			scale /= 10;
			v += (*s - '0') * scale;
		}
		if (frac == 0)
			return -1;
	}
	if (*s != '\0' || v < 50 || v > 99.9 + 1e-9)
		return -1;
	*q = v / 100.0;
	return 0;
}

/*
 * retry.hedge: exactly one of after_ms or after ("pNN"); min_ms / max_ms
 * only with after, min_ms <= max_ms.
 */
static void
hedge_load(struct ctx *x, const cJSON *retry, const char *rpath, struct retry_cfg *rc)
{
	static const char *const quantile_only[] = {"min_ms", "max_ms"};
	const cJSON *h = obj_get(retry, "hedge"), *after;
	struct hedge_cfg *hc = &rc->hedge;
	char *hpath, *p, got[128];
	size_t i;

	if (!hc->enabled)
		return;
	hpath = path_join(rpath, "hedge");
	after = obj_get(h, "after");
	if ((after != NULL) == (obj_get(h, "after_ms") != NULL)) {
		ctx_err(x, hpath, "needs exactly one of \"after_ms\" or \"after\"");
	} else if (after != NULL) {
		if (!cJSON_IsString(after) ||
		    quantile_parse(after->valuestring, &hc->after_quantile) != 0) {
			p = path_join(hpath, "after");
			ctx_err(x, p, "must be \"pNN\" with NN 50..99.9, e.g. \"p95\" (got %s)",
				json_describe(got, sizeof got, after));
			free(p);
		}
		if (hc->min_ms > hc->max_ms) {
			p = path_join(hpath, "min_ms");
			ctx_err(x, p, "must be <= max_ms (%d) (got %d)", hc->max_ms, hc->min_ms);
			free(p);
		}
	} else {
		for (i = 0; i < sizeof quantile_only / sizeof quantile_only[0]; i++) {
			if (obj_get(h, quantile_only[i]) == NULL)
				continue;
			p = path_join(hpath, quantile_only[i]);
			ctx_err(x, p, "only used with \"after\"");
			free(p);
		}
	}
	free(hpath);
}

void
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
	hedge_load(x, retry, rpath, &r->retry);
	free(p);
	free(rpath);
	cJSON_Delete(tmp);
}

void
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

void
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

void
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

void
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

/* ---- freeing a route ---- */

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

void
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
