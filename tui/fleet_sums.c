/*
 * fleet_sums: the fleet overview's sums over the hosts' last answers
 * (pure, see fleet_sums.h).
 */
#include "fleet_sums.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* --- sums (pure) --- */

static struct fleet_route_sum *
route_get(struct fleet_sums *s, const char *name)
{
	int i;

	for (i = 0; i < s->nr; i++)
		if (strcmp(s->r[i].name, name) == 0)
			return &s->r[i];
	s->r = xrealloc(s->r, (size_t)(s->nr + 1) * sizeof *s->r);
	memset(&s->r[s->nr], 0, sizeof s->r[0]);
	snprintf(s->r[s->nr].name, sizeof s->r[0].name, "%s", name);
	return &s->r[s->nr++];
}

static struct fleet_backend_sum *
backend_get(struct fleet_sums *s, const char *name)
{
	int i;

	for (i = 0; i < s->nb; i++)
		if (strcmp(s->b[i].name, name) == 0)
			return &s->b[i];
	s->b = xrealloc(s->b, (size_t)(s->nb + 1) * sizeof *s->b);
	memset(&s->b[s->nb], 0, sizeof s->b[0]);
	snprintf(s->b[s->nb].name, sizeof s->b[0].name, "%s", name);
	return &s->b[s->nb++];
}

int
fleet_backend_open(const struct backend_v *b)
{
	return b != NULL && (b->st == BS_OPEN || b->st == BS_FORCED_OPEN);
}

void
fleet_sums_build(const struct fleet_snap *h, int n, struct fleet_sums *s)
{
	int i, j, k;

	memset(s, 0, sizeof *s);
	for (i = 0; i < n; i++) {
		const struct state_v *st = h[i].state;

		if (!h[i].up) {
			s->down++;
			for (j = 0; st != NULL && j < st->nroutes; j++)
				route_get(s, st->routes[j].name)->down++;
			continue;
		}
		s->up++;
		for (j = 0; st != NULL && j < st->nroutes; j++) {
			const struct route_v *r = &st->routes[j];
			const struct slo_route_v *sr = slo_route(h[i].slo, r->name);
			struct fleet_route_sum *q = route_get(s, r->name);
			int l = MIN(MAX(r->level, 0), 3);

			q->hosts[l]++;
			q->forced[l] |= r->forced;
			q->reviews += MAX(r->review_pending, 0);
			q->alerts += alerts_firing(h[i].alerts, r->name);
			if (sr != NULL && sr->w[SLO_1H].present) {
				q->total += sr->w[SLO_1H].total;
				q->service_good += sr->w[SLO_1H].service_good;
				q->smart_good += sr->w[SLO_1H].smart_good;
			}
			for (k = 0; k < r->ntargets; k++)
				q->open += fleet_backend_open(
					state_backend(st, r->targets[k].backend));
		}
		for (j = 0; st != NULL && j < st->nbackends; j++) {
			const struct backend_v *b = &st->backends[j];
			struct fleet_backend_sum *q = backend_get(s, b->name);
			size_t o;

			q->hosts++;
			if (fleet_backend_open(b)) {
				o = strlen(q->where);
				if (o < sizeof q->where)
					snprintf(q->where + o, sizeof q->where - o, "%s%s(%s)",
						 o ? " " : "", h[i].name, b->state);
				q->open++;
			}
		}
	}
}

void
fleet_sums_free(struct fleet_sums *s)
{
	free(s->r);
	free(s->b);
	memset(s, 0, sizeof *s);
}

void
fleet_levels_text(const struct fleet_route_sum *r, int utf8, char *out, size_t outsz)
{
	const char *sep = utf8 ? " · " : " | ";
	size_t o = 0;
	int l;

	out[0] = '\0';
	for (l = 0; l < 4 && o < outsz; l++)
		if (r->hosts[l] > 0)
			o += (size_t)snprintf(out + o, outsz - o, "%sL%d%s %d", o ? sep : "", l,
					      r->forced[l] ? "*" : "", r->hosts[l]);
	if (r->down > 0 && o < outsz)
		snprintf(out + o, outsz - o, "%sdown %d", o ? sep : "", r->down);
}

void
fleet_avail_text(char *out, size_t outsz, int64_t good, int64_t total)
{
	if (total <= 0)
		snprintf(out, outsz, "- 0/0");
	else
		snprintf(out, outsz, "%.2f%% %lld/%lld", 100.0 * (double)good / (double)total,
			 (long long)good, (long long)total);
}
