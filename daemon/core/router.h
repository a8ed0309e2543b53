#pragma once
/*
 * router: weighted random choice of a backend among a step's targets
 * (DESIGN.md step 5). The caller computes each candidate's weight (target
 * weight x health, canary weights) and eligibility (breaker, bulkhead).
 * Pure: chance is an argument. Runs on the engine thread.
 */
#include "rng.h"

enum router_e {
	ROUTER_E_NONE = 1, /* no eligible candidate with weight > 0 */
};

struct router_cand {
	int id;
	double weight;
	int eligible;
};

/*
 * Pick one of the n candidates, eligible and with a finite weight > 0,
 * with probability proportional to its weight. avoid_id (or -1) is skipped
 * when another such candidate exists: a preference, not a ban. 0 with
 * *picked_id set, or ROUTER_E_NONE.
 */
int router_pick(const struct router_cand *c, int n, int avoid_id, struct rng *rng, int *picked_id);
