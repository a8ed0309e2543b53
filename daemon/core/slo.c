/*
 * slo: per-minute SLO counters and their arithmetic.
 *
 * The ring holds only minutes that saw traffic, oldest first, in a circular
 * array; a new minute is appended (the clock moves forward), a late one is
 * inserted in order (history loaded from slo_minutes arrives ascending, so
 * that is rare and cheap). Window sums walk backwards from the newest minute
 * and stop at the start of the longest window asked for, so a query costs
 * O(minutes with traffic in that window) and never more than 43,200 steps.
 * Invariant: m[head .. head+n) (mod cap) is strictly ascending by minute.
 */
#include "slo.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const slo_field_columns[SLO_FIELD__COUNT] = {
	[SLO_TOTAL] = "total",
	[SLO_SERVICE_GOOD] = "service_good",
	[SLO_SMART_GOOD] = "smart_good",
	[SLO_LATENCY_OK] = "latency_ok",
	[SLO_TIMEOUTS] = "timeouts",
	[SLO_RETRIES] = "retries",
	[SLO_ATTEMPTS] = "attempts",
	[SLO_FORMAT_VIOLATIONS] = "format_violations",
	[SLO_SRC_LLM] = "src_llm",
	[SLO_SRC_BACKUP] = "src_backup",
	[SLO_SRC_RULES] = "src_rules",
	[SLO_SRC_CACHE] = "src_cache",
	[SLO_SRC_PRESET] = "src_preset",
	[SLO_SRC_MANUAL] = "src_manual",
	[SLO_REVIEW_DECIDED] = "review_decided",
	[SLO_REVIEW_CORRECTED] = "review_corrected",
	[SLO_SHADOW_TOTAL] = "shadow_total",
	[SLO_SHADOW_AGREE] = "shadow_agree",
	[SLO_CROSS_TOTAL] = "cross_total",
	[SLO_CROSS_AGREE] = "cross_agree",
	[SLO_NO_LLM] = "no_llm",
};

static const char *const slo_kind_names[SLO_KIND__COUNT] = {
	[SLO_KIND_SERVICE] = "service",
	[SLO_KIND_SMART] = "smart",
};

const char *
slo_field_column(enum slo_field f)
{
	const char *name = NULL;

	if ((unsigned)f < SLO_FIELD__COUNT)
		name = slo_field_columns[f];
	return name;
}

const char *
slo_kind_name(enum slo_kind k)
{
	const char *name = NULL;

	if ((unsigned)k < SLO_KIND__COUNT)
		name = slo_kind_names[k];
	return name;
}

int64_t
slo_minute_of(int64_t wall_ms)
{
	int64_t q = wall_ms / SLO_MINUTE_MS;

	if (wall_ms % SLO_MINUTE_MS < 0)
		q--;
	return q * SLO_MINUTE_MS;
}

void
slo_ring_init(struct slo_ring *r)
{
	memset(r, 0, sizeof *r);
}

void
slo_ring_free(struct slo_ring *r)
{
	if (r == NULL)
		return;
	free(r->m);
	memset(r, 0, sizeof *r);
}

static struct slo_minute *
ring_at(const struct slo_ring *r, int i)
{
	return &r->m[(r->head + i) % r->cap];
}

/* Make room for one more slot (the ring is never full after this). */
static void
ring_grow(struct slo_ring *r)
{
	struct slo_minute *m;
	int cap, i;

	if (r->n < r->cap)
		return;
	cap = r->cap ? MIN(r->cap * 2, SLO_MAX_MINUTES + 1) : 16;
	if (cap <= r->cap)
		return; /* at the ceiling: the caller dropped the oldest */
	m = xcalloc((size_t)cap, sizeof *m);
	for (i = 0; i < r->n; i++)
		m[i] = *ring_at(r, i);
	free(r->m);
	r->m = m;
	r->cap = cap;
	r->head = 0;
}

static void
ring_drop_oldest(struct slo_ring *r)
{
	r->head = (r->head + 1) % r->cap;
	r->n--;
}

void
slo_ring_expire(struct slo_ring *r, int64_t now_ms)
{
	int64_t first = slo_minute_of(now_ms) - (SLO_MAX_MINUTES - 1) * SLO_MINUTE_MS;

	while (r->n > 0 && ring_at(r, 0)->minute < first)
		ring_drop_oldest(r);
}

static void
minute_add(struct slo_minute *m, const uint32_t delta[SLO_FIELD__COUNT])
{
	int i;

	for (i = 0; i < SLO_FIELD__COUNT; i++) {
		uint64_t s = (uint64_t)m->v[i] + delta[i];

		m->v[i] = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
	}
}

int
slo_ring_add(struct slo_ring *r, int64_t wall_ms, const uint32_t delta[SLO_FIELD__COUNT])
{
	int64_t minute = slo_minute_of(wall_ms), newest;
	struct slo_minute *m;
	int i, pos, ret = 0;

	if (r->n > 0) {
		newest = ring_at(r, r->n - 1)->minute;
		if (minute <= newest - SLO_MAX_MINUTES * SLO_MINUTE_MS) {
			ret = SLO_E_TOO_OLD;
			goto out;
		}
		/* Usually the newest minute, or the one after it. */
		for (pos = r->n; pos > 0 && ring_at(r, pos - 1)->minute > minute; pos--)
			;
		if (pos > 0 && ring_at(r, pos - 1)->minute == minute) {
			minute_add(ring_at(r, pos - 1), delta);
			goto out;
		}
	}
	/* A new minute: expire what it pushes out of 30 days, then insert. */
	slo_ring_expire(r, MAX(minute, r->n > 0 ? ring_at(r, r->n - 1)->minute : minute));
	if (r->n > 0 && r->cap == SLO_MAX_MINUTES + 1 && r->n == r->cap)
		ring_drop_oldest(r);
	ring_grow(r);
	for (pos = r->n; pos > 0 && ring_at(r, pos - 1)->minute > minute; pos--)
		;
	r->n++;
	for (i = r->n - 1; i > pos; i--)
		*ring_at(r, i) = *ring_at(r, i - 1);
	m = ring_at(r, pos);
	memset(m, 0, sizeof *m);
	m->minute = minute;
	minute_add(m, delta);
out:
	return ret;
}

void
slo_ring_sums(const struct slo_ring *r, int64_t now_ms, const int *minutes, int n,
	      struct slo_counts *out)
{
	int64_t cur = slo_minute_of(now_ms);
	int i, j, w, f;

	memset(out, 0, sizeof *out * (size_t)MAX(n, 0));
	if (n <= 0)
		return;
	w = 0;
	for (i = r->n - 1; i >= 0; i--) {
		const struct slo_minute *m = ring_at(r, i);

		if (m->minute > cur)
			continue; /* from the future (clock stepped back) */
		while (w < n && m->minute <= cur - (int64_t)minutes[w] * SLO_MINUTE_MS)
			w++;
		if (w == n)
			break;
		/* Count it in the smallest window holding it; prefix-sum below. */
		for (f = 0; f < SLO_FIELD__COUNT; f++)
			out[w].v[f] += m->v[f];
	}
	/* Windows are nested: each holds everything the smaller ones hold. */
	for (j = 1; j < n; j++)
		for (f = 0; f < SLO_FIELD__COUNT; f++)
			out[j].v[f] += out[j - 1].v[f];
}

int
slo_call_delta(const struct slo_call *c, uint32_t delta[SLO_FIELD__COUNT])
{
	int ret = 0;

	memset(delta, 0, sizeof(uint32_t) * SLO_FIELD__COUNT);
	if (c->http_status >= 400 && c->http_status < 500) {
		ret = SLO_E_CALLER_ERROR;
		goto out;
	}
	delta[SLO_TOTAL] = 1;
	delta[SLO_NO_LLM] = c->no_llm != 0;
	if ((c->http_status == 200 || c->http_status == 202 ||
	     (c->http_status > 200 && c->http_status < 300)) &&
	    c->elapsed_ms <= c->budget_ms + SLO_BUDGET_GRACE_MS)
		delta[SLO_SERVICE_GOOD] = 1;
	if (c->http_status >= 200 && c->http_status < 300 &&
	    (c->source == SOURCE_LLM || c->source == SOURCE_BACKUP))
		delta[SLO_SMART_GOOD] = 1;
	if (c->latency_ms <= 0 || c->elapsed_ms <= c->latency_ms)
		delta[SLO_LATENCY_OK] = 1;
	delta[SLO_TIMEOUTS] = c->timeouts > 0;
	delta[SLO_RETRIES] = (uint32_t)MAX(c->retries, 0);
	delta[SLO_ATTEMPTS] = (uint32_t)MAX(c->attempts, 0);
	delta[SLO_FORMAT_VIOLATIONS] = (uint32_t)MAX(c->format_violations, 0);
	switch (c->source) {
	case SOURCE_LLM:
		delta[SLO_SRC_LLM] = 1;
		break;
	case SOURCE_BACKUP:
		delta[SLO_SRC_BACKUP] = 1;
		break;
	case SOURCE_RULES:
		delta[SLO_SRC_RULES] = 1;
		break;
	case SOURCE_CACHE:
		delta[SLO_SRC_CACHE] = 1;
		break;
	case SOURCE_PRESET:
		delta[SLO_SRC_PRESET] = 1;
		break;
	case SOURCE_MANUAL:
		delta[SLO_SRC_MANUAL] = 1;
		break;
	default:
		break;
	}
out:
	return ret;
}

static double
ratio(uint64_t num, uint64_t den)
{
	return den == 0 ? NAN : (double)num / (double)den;
}

void
slo_stats_compute(const struct slo_counts *c, struct slo_stats *out)
{
	uint64_t total = c->v[SLO_TOTAL];

	out->service_availability = ratio(c->v[SLO_SERVICE_GOOD], total);
	out->smart_availability = ratio(c->v[SLO_SMART_GOOD], slo_total(c, SLO_KIND_SMART));
	out->latency_ok = ratio(c->v[SLO_LATENCY_OK], total);
	out->timeout_rate = ratio(c->v[SLO_TIMEOUTS], total);
	out->retry_rate = ratio(c->v[SLO_RETRIES], c->v[SLO_ATTEMPTS]);
	out->format_violation_rate = ratio(c->v[SLO_FORMAT_VIOLATIONS], c->v[SLO_ATTEMPTS]);
}

int
slo_metric_value(const struct slo_counts *c, const char *metric, double *out)
{
	static const struct {
		const char *name;
		int num; /* field, or -1: total minus src_llm */
		int den; /* field, or -1: smart_total */
	} metrics[] = {
		{"service_availability", SLO_SERVICE_GOOD, SLO_TOTAL},
		{"smart_availability", SLO_SMART_GOOD, -1},
		{"latency_ok", SLO_LATENCY_OK, SLO_TOTAL},
		{"timeout_rate", SLO_TIMEOUTS, SLO_TOTAL},
		{"retry_rate", SLO_RETRIES, SLO_ATTEMPTS},
		{"format_violation_rate", SLO_FORMAT_VIOLATIONS, SLO_ATTEMPTS},
		{"degraded_rate", -1, SLO_TOTAL},
		{"backup_rate", SLO_SRC_BACKUP, SLO_TOTAL},
		{"rules_rate", SLO_SRC_RULES, SLO_TOTAL},
		{"cache_rate", SLO_SRC_CACHE, SLO_TOTAL},
		{"preset_rate", SLO_SRC_PRESET, SLO_TOTAL},
		{"manual_rate", SLO_SRC_MANUAL, SLO_TOTAL},
		{"review_diff_rate", SLO_REVIEW_CORRECTED, SLO_REVIEW_DECIDED},
		{"shadow_agreement", SLO_SHADOW_AGREE, SLO_SHADOW_TOTAL},
		{"cross_check_agreement", SLO_CROSS_AGREE, SLO_CROSS_TOTAL},
	};
	size_t i;
	uint64_t num, den;
	int ret = -EINVAL;

	for (i = 0; i < ARRAY_SIZE(metrics); i++) {
		if (strcmp(metrics[i].name, metric) != 0)
			continue;
		den = metrics[i].den < 0 ? slo_total(c, SLO_KIND_SMART) : c->v[metrics[i].den];
		if (metrics[i].num < 0)
			num = den - MIN(den, c->v[SLO_SRC_LLM]);
		else
			num = c->v[metrics[i].num];
		if (den == 0) {
			ret = -EDOM;
		} else {
			*out = (double)num / (double)den;
			ret = 0;
		}
		break;
	}
	return ret;
}

uint64_t
slo_good(const struct slo_counts *c, enum slo_kind k)
{
	return k == SLO_KIND_SMART ? c->v[SLO_SMART_GOOD] : c->v[SLO_SERVICE_GOOD];
}

uint64_t
slo_total(const struct slo_counts *c, enum slo_kind k)
{
	uint64_t total = c->v[SLO_TOTAL];

	if (k == SLO_KIND_SMART)
		total -= MIN(total, c->v[SLO_NO_LLM]);
	return total;
}

const char *const slo_degradation_reasons[] = {
	"llm_disallowed",
	"forced_level",
	"auto_level",
	"breaker_open",
	"bulkhead_full",
	"no_target",
	"no_weight",
	"budget_exhausted",
	"rules_no_match",
	"cache_miss",
	"concurrency_limited",
	"rate_limited_local",
	NULL,
};

int
slo_reason_is_entry(const char *reason)
{
	int i;

	for (i = 0; i < 3 && reason != NULL; i++)
		if (strcmp(slo_degradation_reasons[i], reason) == 0)
			return 1;
	return 0;
}

int
slo_reason_no_llm(const char *reason)
{
	return reason != NULL && strcmp(reason, "llm_disallowed") == 0;
}

double
slo_burn_rate(uint64_t good, uint64_t total, double target)
{
	double err;

	if (total == 0 || !(target < 1.0))
		return NAN;
	err = (double)(total - MIN(good, total)) / (double)total;
	return err / (1.0 - target);
}

double
slo_budget_remaining(uint64_t good, uint64_t total, double target)
{
	double errors;

	if (total == 0 || !(target < 1.0))
		return NAN;
	errors = (double)(total - MIN(good, total));
	return 1.0 - errors / ((double)total * (1.0 - target));
}

int
slo_burn_factor_reachable(double factor, double target)
{
	/* A little tolerance so 0.9 x 10 (= 1.0000000000000002) still counts. */
	return factor * (1.0 - target) <= 1.0 + 1e-9;
}
