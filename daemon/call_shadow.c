/*
 * call_shadow: off the caller's path (DESIGN.md step 9). A sample of the
 * model's answers goes through the rule engine too (would the fallback
 * have agreed?), and a sample is asked again of cross_check.backend by a
 * shadow call whose disagreement becomes a review item. Neither touches
 * the answer the caller gets.
 */
#include <stdlib.h>
#include <string.h>

#include "call_int.h"
#include "clock.h"
#include "obs.h"
#include "rng.h"
#include "rules.h"
#include "util.h"

/* Every key of sub has an equal value in obj. */
static int
json_subset_equal(const cJSON *sub, const cJSON *obj)
{
	const cJSON *k;

	if (!cJSON_IsObject(sub) || !cJSON_IsObject(obj))
		return cJSON_Compare(sub, obj, 1);
	cJSON_ArrayForEach(k, sub)
	{
		if (!cJSON_Compare(k, cJSON_GetObjectItemCaseSensitive(obj, k->string), 1))
			return 0;
	}
	return 1;
}

void
call_rules_shadow(struct call *c, const cJSON *result)
{
	const struct route_cfg *rc = c->rc;
	struct rules_hit hit;
	const char *in;
	int agree;

	if (!rc->rules_shadow.enabled || !rc->rules.enabled || result == NULL || c->xcheck ||
	    rng_double(&c->e->rng) >= rc->rules_shadow.sample_rate)
		return;
	in = call_input_text(c);
	agree = rules_eval(&rc->rules, in, strlen(in), &hit) == 0 &&
		json_subset_equal(hit.result, result);
	if (c->route < c->e->nroutes)
		obs_shadow(c->e->obs, c->route, agree, clock_wall_ms());
}

struct xcheck_ctx {
	char *route;
	char *request_id;
	int64_t call_id;
	char *input;
	char *raw;
	cJSON *result;
	int has_conf;
	double conf;
};

static void
xcheck_done(struct call *sc, const struct call_answer *a, void *arg)
{
	struct xcheck_ctx *x = arg;
	struct engine *e = sc->e;
	const struct route_cfg *rc = sc->rc;
	int i, agree = 1, route = engine_route_index(e, x->route);

	if (a->source == SOURCE_LLM && a->result) {
		for (i = 0; i < rc->cross_check.ncompare; i++) {
			const char *f = rc->cross_check.compare[i];
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(x->result, f);
			const cJSON *o = cJSON_GetObjectItemCaseSensitive(a->result, f);

			if (!(m == NULL && o == NULL) && !cJSON_Compare(m, o, 1))
				agree = 0;
		}
		if (route >= 0)
			obs_cross_check(e->obs, route, agree, clock_wall_ms());
		if (!agree)
			call_review_insert(e, rc, x->request_id, x->call_id, "cross_check_mismatch",
					   x->input, x->raw, x->result, x->has_conf, x->conf,
					   a->result, NULL, NULL, NULL);
	}
	free(x->route);
	free(x->request_id);
	free(x->input);
	free(x->raw);
	cJSON_Delete(x->result);
	free(x);
}

void
call_xcheck_start(struct call *c, const cJSON *result, int has_conf, double conf)
{
	const struct cross_check_cfg *cc = &c->rc->cross_check;
	struct engine *e = c->e;
	struct xcheck_ctx *x;
	struct call_req cr;
	int bidx;

	if (!cc->enabled || c->xcheck || result == NULL || e->stopping ||
	    rng_double(&e->rng) >= cc->sample_rate)
		return;
	bidx = engine_backend_index(e, cc->backend);
	if (bidx < 0)
		return;
	x = xcalloc(1, sizeof *x);
	x->route = xstrdup(c->rc->name);
	x->request_id = xstrdup(c->request_id);
	x->call_id = c->id;
	x->input = xstrdup(call_input_text(c));
	x->raw = c->last_raw ? xstrdup(c->last_raw) : NULL;
	x->result = cJSON_Duplicate(result, 1);
	x->has_conf = has_conf;
	x->conf = conf;
	memset(&cr, 0, sizeof cr);
	cr.route = c->route;
	cr.request_id = xasprintf("%s~xcheck", c->request_id);
	cr.input = c->req.input ? xstrdup(c->req.input) : NULL;
	cr.messages = c->req.messages ? cJSON_Duplicate(c->req.messages, 1) : NULL;
	cr.allow_llm = 1;
	cr.xcheck_backend = bidx + 1;
	cr.xcheck_call_id = c->id;
	call_start(e, &cr, xcheck_done, x);
}

void
call_shadow_after_answer(struct call *c, const cJSON *result, int has_conf, double conf,
			 int primary)
{
	call_rules_shadow(c, result);
	if (primary)
		call_xcheck_start(c, result, has_conf, conf);
}
