/*
 * diagnose_rows: one route's rows of the window, folded:
 * the deciding attempt of each degraded call, the causes counted and
 * ranked, the episode. Design notes (docs/DIAGNOSE.md says why):
 *
 * - A degraded call has one cause: its reason (calls.reason) on the
 *   backend of its deciding attempt: the first failed attempt whose
 *   outcome is the call's reason, else its first failed attempt (by
 *   attempt_no, then id). A call that failed without an attempt of its
 *   own (breaker_open) is put on the route's backend whose breaker was
 *   open when it started. cause_sql() says the same in SQL, so that the
 *   query of a cause returns exactly its calls.
 * - The episode starts at the first degraded minute after at least
 *   DIAG_HEALTHY_MINUTES healthy ones (minutes with calls and none
 *   degraded; minutes without calls neither count nor break a run); the
 *   start of the rows counts as such a run, so a route degraded since the
 *   first row has its first degraded minute as the start. It is null
 *   when the last DIAG_HEALTHY_MINUTES minutes with calls were healthy.
 */
#include "diagnose_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonutil.h"
#include "util.h"
#include "wire.h"

/* Interned strings (api_diagnose.c) are mostly equal by pointer. */
int
diag_str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && (a == b || strcmp(a, b) == 0);
}

const char *
diag_str_or(const char *s, const char *def)
{
	return s != NULL ? s : def;
}

int
diag_pct(double share)
{
	return (int)(share * 100.0 + 0.5);
}

/*
 * Nearest-rank median of v[0..n-1] (reordered here: a quickselect, linear
 * on the window's 100k values where a sort is not); -1 when n is 0.
 */
int64_t
diag_median(int64_t *v, int n)
{
	int lo = 0, hi = n - 1, k = (n - 1) / 2;

	if (n <= 0)
		return -1;
	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2], t;
		int i = lo, j = hi;

		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

/* "14:02:11" (UTC) of a wall-clock ms. */
void
diag_hhmmss(int64_t ms, char *out, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL)
		snprintf(out, n, "?");
	else
		snprintf(out, n, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Append s to b as an SQL string literal ('' inside). */
void
diag_sql_quote(struct buf *b, const char *s)
{
	buf_puts(b, "'");
	for (; *s != '\0'; s++)
		buf_append(b, *s == '\'' ? "''" : s, *s == '\'' ? 2 : 1);
	buf_puts(b, "'");
}

int
diag_is_ok(const struct diag_attempt *a)
{
	return diag_str_eq(a->outcome, WIRE_OUTCOME_OK);
}

int
diag_is_failed(const struct diag_attempt *a)
{
	return a->outcome != NULL && !diag_is_ok(a);
}

/* The phase of a reason, refined by the attempt's timings when there is one. */
const char *
diag_phase_of(const char *reason, const struct diag_attempt *a)
{
	static const struct {
		const char *reason, *phase;
	} map[] = {
		{WIRE_OUTCOME_CONNECT_ERROR, "connect"},
		{WIRE_OUTCOME_FIRST_BYTE_TIMEOUT, "first_byte"},
		{WIRE_OUTCOME_TOTAL_TIMEOUT, "body"},
		{WIRE_OUTCOME_RESET, "body"},
		{WIRE_OUTCOME_HTTP_5XX, "body"},
		{WIRE_OUTCOME_HTTP_4XX, "body"},
		{WIRE_OUTCOME_INVALID_RESPONSE, "body"},
		{WIRE_OUTCOME_HTTP_429, "rate_limit"},
		{WIRE_OUTCOME_VALIDATION_FORMAT, "validation"},
		{WIRE_OUTCOME_VALIDATION_SCHEMA, "validation"},
		{WIRE_OUTCOME_VALIDATION_SEMANTIC, "validation"},
		{WIRE_OUTCOME_LOW_CONFIDENCE, "validation"},
		{WIRE_REASON_BREAKER_OPEN, "breaker"},
		{WIRE_REASON_BULKHEAD_FULL, "bulkhead"},
		{WIRE_REASON_CONCURRENCY_LIMITED, "bulkhead"},
		{WIRE_REASON_RATE_LIMITED_LOCAL, "rate_limit"},
		{WIRE_REASON_BUDGET_EXHAUSTED, "budget"},
		{WIRE_REASON_FORCED_LEVEL, "forced"},
		{WIRE_REASON_AUTO_LEVEL, "forced"},
	};
	size_t i;

	if (a != NULL && (diag_str_eq(reason, WIRE_OUTCOME_TOTAL_TIMEOUT) ||
			  diag_str_eq(reason, WIRE_OUTCOME_RESET) ||
			  diag_str_eq(reason, WIRE_OUTCOME_CONNECT_ERROR))) {
		if (a->connect_ms < 0)
			return "connect";
		if (a->first_byte_ms < 0)
			return "first_byte";
		return "body";
	}
	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (diag_str_eq(reason, map[i].reason))
			return map[i].phase;
	return NULL;
}

int
diag_is_timeout(const char *reason)
{
	return diag_str_eq(reason, WIRE_OUTCOME_CONNECT_ERROR) ||
	       diag_str_eq(reason, WIRE_OUTCOME_FIRST_BYTE_TIMEOUT) ||
	       diag_str_eq(reason, WIRE_OUTCOME_TOTAL_TIMEOUT) ||
	       diag_str_eq(reason, WIRE_OUTCOME_RESET);
}

const struct diag_target *
diag_target_find(const struct diag_input *in, const char *route, const char *backend)
{
	int i;

	for (i = 0; i < in->ntargets; i++)
		if (diag_str_eq(in->targets[i].route, route) &&
		    diag_str_eq(in->targets[i].backend, backend))
			return &in->targets[i];
	return NULL;
}

/* The state a breaker event ends in: "closed -> open (5 of 5 failed)" -> "open". */
static int
breaker_event_open(const struct diag_event *ev)
{
	const char *p = ev->detail != NULL ? strstr(ev->detail, "-> ") : NULL;

	if (p == NULL)
		return 0;
	p += 3;
	return strncmp(p, WIRE_BREAKER_OPEN, strlen(WIRE_BREAKER_OPEN)) == 0 ||
	       strncmp(p, WIRE_BREAKER_FORCED_OPEN, strlen(WIRE_BREAKER_FORCED_OPEN)) == 0;
}

/* The event that left backend's breaker open at time t, or NULL when it was not open. */
const struct diag_event *
diag_breaker_open_at(const struct diag_input *in, const char *backend, int64_t t)
{
	const struct diag_event *last = NULL;
	int i;

	for (i = 0; i < in->nevents && in->events[i].at <= t; i++)
		if (diag_str_eq(in->events[i].kind, "breaker") &&
		    diag_str_eq(in->events[i].subject, backend))
			last = &in->events[i];
	return last != NULL && breaker_event_open(last) ? last : NULL;
}

/* ---- one route's rows ---------------------------------------------------- */

static int
cmp_id(const void *a, const void *b)
{
	const struct id_idx *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

void
diag_id_map_seal(struct id_map *m)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN, i;

	for (i = 0; i < m->n; i++) {
		lo = MIN(lo, m->pairs[i].id);
		hi = MAX(hi, m->pairs[i].id);
	}
	if (m->n > 0 && hi - lo < 4 * (int64_t)m->n + 1024) {
		m->base = lo;
		m->ndirect = hi - lo + 1;
		m->direct = xmalloc((size_t)m->ndirect * sizeof *m->direct);
		for (i = 0; i < m->ndirect; i++)
			m->direct[i] = -1;
		for (i = 0; i < m->n; i++)
			m->direct[m->pairs[i].id - lo] = m->pairs[i].idx;
	} else {
		qsort(m->pairs, (size_t)m->n, sizeof *m->pairs, cmp_id);
	}
}

int
diag_id_map_find(const struct id_map *m, int64_t id)
{
	struct id_idx key = {id, 0}, *hit;

	if (m->direct != NULL)
		return id >= m->base && id - m->base < m->ndirect ? m->direct[id - m->base] : -1;
	hit = bsearch(&key, m->pairs, (size_t)m->n, sizeof *m->pairs, cmp_id);
	return hit != NULL ? hit->idx : -1;
}

void
diag_id_map_free(struct id_map *m)
{
	free(m->pairs);
	free(m->direct);
}

/* Is attempt a a better deciding attempt of a call with reason than the one at cur? */
static int
decides_better(const struct diag_attempt *a, const struct diag_attempt *cur, const char *reason)
{
	int am = diag_str_eq(a->outcome, reason), cm;

	if (cur == NULL)
		return 1;
	cm = diag_str_eq(cur->outcome, reason);
	if (am != cm)
		return am;
	if (a->attempt_no != cur->attempt_no)
		return a->attempt_no < cur->attempt_no;
	return a->id < cur->id;
}

void
diag_route_ctx_init(struct route_ctx *rc, const struct diag_input *in, const char *route)
{
	const struct diag_rows *w = &in->cur;
	struct id_map ids = {0};
	int i, j;

	memset(rc, 0, sizeof *rc);
	rc->in = in;
	rc->route = route;
	rc->episode = -1;
	rc->calls = xcalloc((size_t)w->ncalls + 1, sizeof *rc->calls);
	rc->att = xcalloc((size_t)w->nattempts + 1, sizeof *rc->att);
	for (i = 0; i < w->ncalls; i++)
		if (diag_str_eq(w->calls[i].route, route))
			rc->calls[rc->ncalls++] = i;
	rc->decide = xcalloc((size_t)rc->ncalls + 1, sizeof *rc->decide);
	ids.pairs = xcalloc((size_t)rc->ncalls + 1, sizeof *ids.pairs);
	for (i = 0; i < rc->ncalls; i++) {
		ids.pairs[ids.n++] = (struct id_idx){w->calls[rc->calls[i]].id, i};
		rc->decide[i] = -1;
	}
	diag_id_map_seal(&ids);
	for (j = 0; j < w->nattempts; j++) {
		const struct diag_attempt *a = &w->attempts[j];
		const struct diag_call *c;
		int k;

		if (!diag_str_eq(a->route, route))
			continue;
		rc->att[rc->natt++] = j;
		if (!diag_is_failed(a))
			continue;
		if ((k = diag_id_map_find(&ids, a->call_id)) < 0)
			continue;
		c = &w->calls[rc->calls[k]];
		if (decides_better(a, rc->decide[k] >= 0 ? &w->attempts[rc->decide[k]] : NULL,
				   diag_str_or(c->reason, "unknown")))
			rc->decide[k] = j;
	}
	diag_id_map_free(&ids);
}

void
diag_route_ctx_free(struct route_ctx *rc)
{
	free(rc->calls);
	free(rc->att);
	free(rc->decide);
}

static struct cause *
cause_get(struct route_ctx *rc, const char *reason, const char *backend, const char *phase)
{
	int i;

	for (i = 0; i < rc->ncauses; i++)
		if (strcmp(rc->causes[i].reason, reason) == 0 &&
		    (rc->causes[i].backend == backend ||
		     diag_str_eq(rc->causes[i].backend, backend)))
			return &rc->causes[i];
	if (rc->ncauses == MAX_CAUSES)
		return NULL;
	i = rc->ncauses++;
	snprintf(rc->causes[i].reason, sizeof rc->causes[i].reason, "%s", reason);
	rc->causes[i].backend = backend;
	rc->causes[i].phase = phase;
	rc->causes[i].since = INT64_MAX;
	return &rc->causes[i];
}

/* The route's target whose breaker was open at t (breaker_open without an attempt). */
static const char *
breaker_backend(const struct route_ctx *rc, int64_t t)
{
	int i;

	for (i = 0; i < rc->in->ntargets; i++) {
		const struct diag_target *tg = &rc->in->targets[i];

		if (diag_str_eq(tg->route, rc->route) && tg->role != DIAG_BACKUP &&
		    diag_breaker_open_at(rc->in, tg->backend, t) != NULL)
			return tg->backend;
	}
	return NULL;
}

static int
cmp_cause(const void *a, const void *b)
{
	const struct cause *x = a, *y = b;

	if (x->ncalls != y->ncalls)
		return y->ncalls - x->ncalls;
	if (x->since != y->since)
		return (x->since > y->since) - (x->since < y->since);
	return strcmp(x->reason, y->reason);
}

void
diag_causes_collect(struct route_ctx *rc)
{
	const struct diag_rows *w = &rc->in->cur, *p = &rc->in->prev;
	int i, j;

	for (i = 0; i < rc->ncalls; i++) {
		const struct diag_call *c = &w->calls[rc->calls[i]];
		const struct diag_attempt *a =
			rc->decide[i] >= 0 ? &w->attempts[rc->decide[i]] : NULL;
		const char *reason = diag_str_or(c->reason, "unknown"), *backend;
		struct cause *cs;

		if (!c->degraded)
			continue;
		rc->degraded++;
		backend = a != NULL ? a->backend : NULL;
		if (a == NULL && diag_str_eq(reason, WIRE_REASON_BREAKER_OPEN))
			backend = breaker_backend(rc, c->started_at);
		cs = cause_get(rc, reason, backend, diag_phase_of(reason, a));
		if (cs == NULL)
			continue;
		cs->ncalls++;
		cs->since = MIN(cs->since, c->started_at);
	}
	for (i = 0; i < p->ncalls; i++) {
		if (!p->calls[i].degraded || !diag_str_eq(p->calls[i].route, rc->route))
			continue;
		for (j = 0; j < rc->ncauses; j++)
			if (strcmp(rc->causes[j].reason,
				   diag_str_or(p->calls[i].reason, "unknown")) == 0)
				rc->causes[j].prev_ncalls++;
	}
	for (i = 0; i < rc->in->nprev_reasons; i++) {
		const struct diag_reason_count *r = &rc->in->prev_reasons[i];

		if (!diag_str_eq(r->route, rc->route))
			continue;
		for (j = 0; j < rc->ncauses; j++)
			if (strcmp(rc->causes[j].reason, diag_str_or(r->reason, "unknown")) == 0)
				rc->causes[j].prev_ncalls += r->calls;
	}
	qsort(rc->causes, (size_t)rc->ncauses, sizeof *rc->causes, cmp_cause);
}

/* ---- the episode --------------------------------------------------------- */

static void
minutes_add(int *calls, int *deg, int64_t *first_deg, int64_t from, int n,
	    const struct diag_rows *w, const char *route)
{
	int i;

	for (i = 0; i < w->ncalls; i++) {
		const struct diag_call *c = &w->calls[i];
		int64_t m = (c->started_at - from) / MINUTE_MS;

		if (!diag_str_eq(c->route, route) || c->started_at < from || m >= n)
			continue;
		calls[m]++;
		if (c->degraded) {
			if (deg[m] == 0 || c->started_at < first_deg[m])
				first_deg[m] = c->started_at;
			deg[m]++;
		}
	}
}

void
diag_episode_find(struct route_ctx *rc)
{
	const struct diag_input *in = rc->in;
	int64_t from = MIN(in->prev.from, in->cur.from) / MINUTE_MS * MINUTE_MS;
	int64_t *first, start = -1, nm;
	int *calls, *deg, i, n, run = DIAG_HEALTHY_MINUTES;

	if (in->cur.to < from)
		return;
	nm = (in->cur.to - from) / MINUTE_MS + 1;
	if (nm > MAX_MINUTES) {
		from += (nm - MAX_MINUTES) * MINUTE_MS;
		nm = MAX_MINUTES;
	}
	n = (int)nm;
	calls = xcalloc((size_t)n, sizeof *calls);
	deg = xcalloc((size_t)n, sizeof *deg);
	first = xcalloc((size_t)n, sizeof *first);
	minutes_add(calls, deg, first, from, n, &in->prev, rc->route);
	minutes_add(calls, deg, first, from, n, &in->cur, rc->route);
	for (i = 0; i < in->nprev_minutes; i++) {
		const struct diag_minute *m = &in->prev_minutes[i];
		int64_t k = (m->minute - from) / MINUTE_MS;

		if (!diag_str_eq(m->route, rc->route) || m->minute < from || k >= n)
			continue;
		calls[k] += m->calls;
		if (m->degraded > 0 && (deg[k] == 0 || m->minute < first[k]))
			first[k] = m->minute;
		deg[k] += m->degraded;
	}
	for (i = 0; i < in->nhealthy; i++) {
		const struct diag_healthy *h = &in->healthy[i];
		int64_t k = (h->minute - from) / MINUTE_MS;

		if (diag_str_eq(h->route, rc->route) && h->minute >= from && k < n)
			calls[k] += h->calls;
	}
	for (i = 0; i < n; i++) {
		if (calls[i] == 0)
			continue;
		if (deg[i] > 0) {
			if (run >= DIAG_HEALTHY_MINUTES)
				start = first[i];
			run = 0;
		} else {
			run++;
		}
	}
	rc->episode = run >= DIAG_HEALTHY_MINUTES ? -1 : start;
	free(calls);
	free(deg);
	free(first);
}
