/*
 * model_hist: the daemon's history (GET /v1/slo/history) and audit rows
 * (GET /v1/audit) as plain structs (see model.h). Pure; parsed on the
 * fetch thread, owned by the UI thread afterwards.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model_json.h"
#include "util.h"

/* A JSON object's array key (the answer's root), or MODEL_E_PARSE with *cause. */
static int
root_array(const char *json, size_t len, const char *key, cJSON **root, const cJSON **arr,
	   char **cause)
{
	int r = model_json_root(json, len, root, cause);

	if (r == 0 && (r = model_json_array(*root, key, arr, cause)) != 0) {
		cJSON_Delete(*root);
		*root = NULL;
	}
	return r;
}

/* The last n values of a JSON array into dst[HIST_MINUTES] (NAN for null). */
static void
series(const cJSON *arr, int n, float *dst)
{
	int size = cJSON_GetArraySize(arr), i;

	for (i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetArrayItem(arr, size - n + i);

		dst[i] = cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
	}
	for (; i < HIST_MINUTES; i++)
		dst[i] = NAN;
}

int
model_parse_history(const char *json, size_t len, struct slo_hist_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *routes, *backends, *it, *oc, *o, *mv;
	struct slo_hist_v *h;
	int n, total;

	if (root_array(json, len, "routes", &root, &routes, cause) != 0)
		return MODEL_E_PARSE;
	h = xcalloc(1, sizeof *h);
	mv = model_json_get(root, "minutes");
	total = cJSON_IsNumber(mv) && mv->valuedouble >= 1 && mv->valuedouble < 1e6
			? (int)mv->valuedouble
			: HIST_MINUTES;
	n = MIN(total, HIST_MINUTES);
	h->minutes = n;
	h->from = model_json_time(root, "from") + (int64_t)(total - n) * 60000;
	h->routes = xcalloc((size_t)cJSON_GetArraySize(routes) + 1, sizeof *h->routes);
	cJSON_ArrayForEach(it, routes)
	{
		struct hist_route_v *r = &h->routes[h->nroutes++];

		model_json_str(it, "route", r->route, sizeof r->route);
		series(model_json_get(it, "calls"), n, r->calls);
		series(model_json_get(it, "degraded"), n, r->degraded);
		series(model_json_get(it, "service"), n, r->service);
		series(model_json_get(it, "smart"), n, r->smart);
		series(model_json_get(it, "p99_ms"), n, r->p99_ms);
	}
	backends = model_json_get(root, "backends");
	h->backends = xcalloc((size_t)cJSON_GetArraySize(backends) + 1, sizeof *h->backends);
	cJSON_ArrayForEach(it, backends)
	{
		struct hist_backend_v *b = &h->backends[h->nbackends++];

		model_json_str(it, "backend", b->backend, sizeof b->backend);
		oc = model_json_get(it, "outcomes");
		cJSON_ArrayForEach(o, oc)
		{
			int64_t v = cJSON_IsNumber(o) ? (int64_t)o->valuedouble : 0;
			int j;

			b->total += v;
			if (b->n == HIST_OUTCOMES || o->string == NULL)
				continue;
			/* Most first (the daemon sends them so; keep it whatever comes). */
			for (j = b->n; j > 0 && b->o[j - 1].n < v; j--)
				b->o[j] = b->o[j - 1];
			snprintf(b->o[j].name, sizeof b->o[j].name, "%s", o->string);
			b->o[j].n = v;
			b->n++;
		}
	}
	cJSON_Delete(root);
	*out = h;
	return 0;
}

void
slo_hist_free(struct slo_hist_v *h)
{
	if (h == NULL)
		return;
	free(h->routes);
	free(h->backends);
	free(h);
}

const struct hist_route_v *
slo_hist_route(const struct slo_hist_v *h, const char *route)
{
	int i;

	for (i = 0; h != NULL && i < h->nroutes; i++)
		if (strcmp(h->routes[i].route, route) == 0)
			return &h->routes[i];
	return NULL;
}

const struct hist_backend_v *
slo_hist_backend(const struct slo_hist_v *h, const char *backend)
{
	int i;

	for (i = 0; h != NULL && i < h->nbackends; i++)
		if (strcmp(h->backends[i].backend, backend) == 0)
			return &h->backends[i];
	return NULL;
}

void
hist_outcomes_text(const struct hist_backend_v *b, char *out, size_t outsz)
{
	size_t len = 0;
	int i;

	out[0] = '\0';
	for (i = 0; b != NULL && i < b->n && len + 1 < outsz; i++) {
		int w = snprintf(out + len, outsz - len, "%s%s %lld", i ? "  " : "", b->o[i].name,
				 (long long)b->o[i].n);

		if (w < 0 || (size_t)w >= outsz - len) {
			out[len] = '\0';
			break;
		}
		len += (size_t)w;
	}
}

int
model_parse_audit(const char *json, size_t len, struct audits_v **out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *rows, *it;
	struct audits_v *a;

	if (root_array(json, len, "audit", &root, &rows, cause) != 0)
		return MODEL_E_PARSE;
	a = xcalloc(1, sizeof *a);
	a->v = xcalloc((size_t)cJSON_GetArraySize(rows) + 1, sizeof *a->v);
	cJSON_ArrayForEach(it, rows)
	{
		struct audit_v *r = &a->v[a->n++];
		const cJSON *id = model_json_get(it, "id");

		r->id = cJSON_IsNumber(id) ? (int64_t)id->valuedouble : 0;
		r->at = model_json_time(it, "at");
		model_json_str(it, "actor", r->actor, sizeof r->actor);
		model_json_str(it, "action", r->action, sizeof r->action);
		model_json_str(it, "target", r->target, sizeof r->target);
		model_json_str(it, "remote", r->remote, sizeof r->remote);
		r->before = model_json_text(it, "before");
		r->after = model_json_text(it, "after");
	}
	cJSON_Delete(root);
	*out = a;
	return 0;
}

void
audits_free(struct audits_v *a)
{
	int i;

	if (a == NULL)
		return;
	for (i = 0; i < a->n; i++) {
		free(a->v[i].before);
		free(a->v[i].after);
	}
	free(a->v);
	free(a);
}

void
audit_list_push(struct audit_list *l, struct audits_v *a, int cap)
{
	int i;

	for (i = 0; a != NULL && i < a->n; i++) {
		if (a->v[i].id <= l->last_id)
			continue;
		if (l->n == cap && cap > 0) {
			free(l->v[0].before);
			free(l->v[0].after);
			memmove(l->v, l->v + 1, (size_t)(l->n - 1) * sizeof *l->v);
			l->n--;
		}
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 64;
			l->v = xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
		}
		l->v[l->n++] = a->v[i];
		a->v[i].before = a->v[i].after = NULL;
		l->last_id = a->v[i].id;
	}
}

void
audit_list_free(struct audit_list *l)
{
	int i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].before);
		free(l->v[i].after);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}
