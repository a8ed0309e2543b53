/*
 * traffic/report: latency samples, percentiles and the summary (text or
 * JSON) at the end of a run.
 */
#include "traffic.h"

const char *const source_names[SRC_COUNT] = {
	"llm", "backup", "rules", "cache", "preset", "manual", "queued", "failed", "other",
};

void
lat_add(struct lat *l, int64_t us, uint64_t *rng)
{
	uint64_t j;

	l->seen++;
	if (l->v == NULL)
		l->v = xcalloc(LAT_KEEP, sizeof *l->v);
	if (l->n < LAT_KEEP) {
		l->v[l->n++] = us;
	} else {
		j = rng_next(rng) % l->seen;
		if (j < LAT_KEEP)
			l->v[j] = us;
	}
}

static int
int64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile in ms; -1 without samples. Sorts l->v. */
static double
lat_pct(struct lat *l, double p)
{
	size_t idx;
	double ms = -1.0;

	if (l->n == 0)
		goto out;
	qsort(l->v, l->n, sizeof *l->v, int64_cmp);
	idx = (size_t)ceil(p * (double)l->n);
	if (idx > 0)
		idx--;
	if (idx >= l->n)
		idx = l->n - 1;
	ms = (double)l->v[idx] / 1000.0;
out:
	return ms;
}

static void
print_row(const char *name, struct stats *st)
{
	double p50 = lat_pct(&st->lat, 0.50), p99 = lat_pct(&st->lat, 0.99);
	int i;

	printf("%-12s %7" PRIu64, name, st->calls);
	for (i = 0; i < SRC_COUNT; i++)
		printf(" %7" PRIu64, st->by_source[i]);
	if (p50 < 0)
		printf(" %8s %8s\n", "-", "-");
	else
		printf(" %8.1f %8.1f\n", p50, p99);
}

static void
print_statuses(const char *name, const struct stats *st)
{
	int i;

	printf("  %-10s", name);
	for (i = 0; i < STATUS_MAX; i++) {
		if (st->by_status[i] == 0)
			continue;
		if (i == 0)
			printf(" no-answer:%" PRIu64, st->by_status[i]);
		else
			printf(" %d:%" PRIu64, i, st->by_status[i]);
	}
	printf("   degraded %" PRIu64 ", review pending %" PRIu64 ", allow_llm false %" PRIu64
	       ", async %" PRIu64 "\n",
	       st->degraded, st->review_pending, st->no_llm, st->async);
}

void
summary_text(struct traffic *t, double elapsed_s)
{
	int i;

	printf("fusebox-traffic: %" PRIu64 " calls sent in %.1f s (%.2f/s) to %s; "
	       "%" PRIu64 " skipped (max in flight), %" PRIu64 " abandoned\n",
	       t->sent, elapsed_s, elapsed_s > 0 ? (double)t->sent / elapsed_s : 0.0, t->base,
	       t->skipped, t->aborted);
	printf("%-12s %7s", "route", "calls");
	for (i = 0; i < SRC_COUNT; i++)
		printf(" %7s", source_names[i]);
	printf(" %8s %8s\n", "p50_ms", "p99_ms");
	for (i = 0; i < t->nroutes; i++)
		print_row(t->routes[i].name, &t->routes[i].st);
	print_row("all", &t->total);
	printf("status codes:\n");
	for (i = 0; i < t->nroutes; i++)
		print_statuses(t->routes[i].name, &t->routes[i].st);
	print_statuses("all", &t->total);
}

static cJSON *
stats_json(const char *name, struct stats *st)
{
	cJSON *o, *src, *sts;
	double p50 = lat_pct(&st->lat, 0.50), p99 = lat_pct(&st->lat, 0.99);
	char key[16];
	int i;

	o = cJSON_CreateObject();
	if (name != NULL)
		cJSON_AddStringToObject(o, "route", name);
	cJSON_AddNumberToObject(o, "calls", (double)st->calls);
	src = cJSON_AddObjectToObject(o, "by_source");
	for (i = 0; i < SRC_COUNT; i++) {
		if (st->by_source[i] > 0)
			cJSON_AddNumberToObject(src, source_names[i], (double)st->by_source[i]);
	}
	sts = cJSON_AddObjectToObject(o, "by_status");
	for (i = 0; i < STATUS_MAX; i++) {
		if (st->by_status[i] == 0)
			continue;
		snprintf(key, sizeof key, "%d", i);
		cJSON_AddNumberToObject(sts, i == 0 ? "no_answer" : key, (double)st->by_status[i]);
	}
	cJSON_AddNumberToObject(o, "degraded", (double)st->degraded);
	cJSON_AddNumberToObject(o, "review_pending", (double)st->review_pending);
	cJSON_AddNumberToObject(o, "allow_llm_false", (double)st->no_llm);
	cJSON_AddNumberToObject(o, "async", (double)st->async);
	if (p50 < 0) {
		cJSON_AddNullToObject(o, "p50_ms");
		cJSON_AddNullToObject(o, "p99_ms");
	} else {
		cJSON_AddNumberToObject(o, "p50_ms", round(p50 * 10.0) / 10.0);
		cJSON_AddNumberToObject(o, "p99_ms", round(p99 * 10.0) / 10.0);
	}
	return o;
}

void
summary_json(struct traffic *t, double elapsed_s)
{
	cJSON *root, *routes;
	char *s;
	int i;

	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "url", t->base);
	cJSON_AddNumberToObject(root, "elapsed_s", round(elapsed_s * 10.0) / 10.0);
	cJSON_AddNumberToObject(root, "sent", (double)t->sent);
	cJSON_AddNumberToObject(root, "skipped", (double)t->skipped);
	cJSON_AddNumberToObject(root, "abandoned", (double)t->aborted);
	routes = cJSON_AddArrayToObject(root, "routes");
	for (i = 0; i < t->nroutes; i++)
		cJSON_AddItemToArray(routes, stats_json(t->routes[i].name, &t->routes[i].st));
	cJSON_AddItemToObject(root, "total", stats_json(NULL, &t->total));
	s = cJSON_PrintUnformatted(root);
	if (s != NULL)
		printf("%s\n", s);
	free(s);
	cJSON_Delete(root);
}
