/*
 * router: weighted random selection. Two passes: decide whether avoid_id
 * can be skipped and total the usable weight, then walk the cumulative
 * weights to the drawn point.
 */
#include "router.h"

#include <math.h>

static int
router_usable(const struct router_cand *c)
{
	return c->eligible && c->weight > 0 && isfinite(c->weight);
}

int
router_pick(const struct router_cand *c, int n, int avoid_id, struct rng *rng, int *picked_id)
{
	double total = 0.0, point, acc = 0.0;
	int i, last = -1, skip_avoid = 0, error = ROUTER_E_NONE;

	for (i = 0; i < n && !skip_avoid; i++) {
		if (router_usable(&c[i]) && c[i].id != avoid_id)
			skip_avoid = avoid_id != -1;
	}
	for (i = 0; i < n; i++) {
		if (router_usable(&c[i]) && !(skip_avoid && c[i].id == avoid_id)) {
			total += c[i].weight;
			last = i;
		}
	}
	if (last >= 0 && isfinite(total)) {
		point = rng_double(rng) * total;
		for (i = 0; i < n; i++) {
			if (!router_usable(&c[i]) || (skip_avoid && c[i].id == avoid_id))
				continue;
			acc += c[i].weight;
			if (point < acc) {
				last = i;
				break;
			}
		}
		*picked_id = c[last].id;
		error = 0;
	}
	return error;
}
