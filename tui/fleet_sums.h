#pragma once
/*
 * fleet_sums: the fleet overview's sums (pure, unit-tested): per route
 * the answering hosts at each level, service / smart availability summed
 * over the hosts' counters (good / total added up, not a mean of
 * percentages), breakers open, alerts and pending reviews; per backend the
 * hosts where its breaker is open.
 */
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* One host as the console last saw it (borrowed pointers). */
struct fleet_snap {
	const char *name;
	int up;			       /* the last poll answered with parsed 2xx answers */
	const struct state_v *state;   /* the last good one (stale while !up), or NULL */
	const struct slo_v *slo;       /* NULL: none */
	const struct alerts_v *alerts; /* NULL: none */
};

struct fleet_route_sum {
	char name[MODEL_NAME_MAX];
	int hosts[4], forced[4]; /* answering hosts at each level; forced on any */
	int down;		 /* hosts not answering whose last state had the route */
	int64_t total, service_good, smart_good; /* 1 h, summed */
	int alerts, reviews, open; /* open: breakers open on its targets, host × backend */
};

struct fleet_backend_sum {
	char name[MODEL_NAME_MAX];
	int hosts, open; /* answering hosts that have it; of those, open or forced open */
	char where[256]; /* "h2(forced_open) h5(open)" */
};

struct fleet_sums {
	struct fleet_route_sum *r;
	int nr;
	struct fleet_backend_sum *b;
	int nb;
	int up, down; /* hosts answering, not answering */
};

/* Sum the n hosts (route and backend order: first seen). Free with fleet_sums_free. */
void fleet_sums_build(const struct fleet_snap *h, int n, struct fleet_sums *out);
void fleet_sums_free(struct fleet_sums *s);
/* "L0 27 · L1 1 · L2* 2 · down 1" (" | " when !utf8). */
void fleet_levels_text(const struct fleet_route_sum *r, int utf8, char *out, size_t outsz);
/* b is open or forced open (NULL: no). */
int fleet_backend_open(const struct backend_v *b);
/* "99.50% 199/200", or "- 0/0" without calls. */
void fleet_avail_text(char *out, size_t outsz, int64_t good, int64_t total);
