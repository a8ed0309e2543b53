/*
 * diagnose_cause: a cause's evidence, its sentence and the SQL
 * query that returns exactly its calls (cause_sql() says in SQL what
 * diagnose_rows.c decides).
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

/* ---- a cause's evidence, text and query ---------------------------------- */

static void
cause_sql(const struct route_ctx *rc, const struct cause *cs, struct buf *q)
{
	const struct diag_rows *w = &rc->in->cur;

	buf_puts(q, "SELECT c.id, c.started_at, c.reason, a.backend, a.outcome, a.connect_ms, "
		    "a.first_byte_ms, a.total_ms, a.http_status, a.retry_after_ms, "
		    "a.input_tokens FROM calls c LEFT JOIN attempts a ON a.id = "
		    "coalesce((SELECT x.id FROM attempts x WHERE x.call_id = c.id AND "
		    "x.outcome = c.reason ORDER BY x.attempt_no, x.id LIMIT 1), (SELECT x.id "
		    "FROM attempts x WHERE x.call_id = c.id AND x.outcome <> 'ok' ORDER BY "
		    "x.attempt_no, x.id LIMIT 1)) WHERE c.route = ");
	diag_sql_quote(q, rc->route);
	buf_printf(q, " AND c.started_at >= %lld AND c.started_at < %lld AND c.degraded = 1",
		   (long long)w->from, (long long)w->to);
	if (strcmp(cs->reason, "unknown") == 0) {
		buf_puts(q, " AND (c.reason IS NULL OR c.reason = 'unknown')");
	} else {
		buf_puts(q, " AND c.reason = ");
		diag_sql_quote(q, cs->reason);
	}
	if (diag_str_eq(cs->reason, WIRE_REASON_BREAKER_OPEN) && cs->backend != NULL) {
		buf_puts(q, " AND (a.id IS NULL OR a.backend = ");
		diag_sql_quote(q, cs->backend);
		buf_puts(q, ") ORDER BY c.id; SELECT at, subject, detail FROM events WHERE "
			    "kind = 'breaker' AND subject = ");
		diag_sql_quote(q, cs->backend);
		buf_printf(q, " AND at < %lld ORDER BY at", (long long)w->to);
	} else if (cs->backend != NULL) {
		buf_puts(q, " AND a.backend = ");
		diag_sql_quote(q, cs->backend);
		buf_puts(q, " ORDER BY c.id");
	} else {
		buf_puts(q, " AND a.id IS NULL ORDER BY c.id");
	}
	if (diag_str_eq(cs->phase, "validation") && cs->backend != NULL) {
		buf_puts(q,
			 "; SELECT v.detail, count(*) FROM validation_failures v JOIN attempts a "
			 "ON a.id = v.attempt_id WHERE v.route = ");
		diag_sql_quote(q, rc->route);
		buf_puts(q, " AND a.backend = ");
		diag_sql_quote(q, cs->backend);
		buf_printf(q, " AND v.at >= %lld AND v.at < %lld GROUP BY v.detail ORDER BY 2 DESC",
			   (long long)w->from, (long long)w->to);
	}
}

struct detail_count {
	const char *detail;
	int n;
};

static int
cmp_detail(const void *a, const void *b)
{
	const struct detail_count *x = a, *y = b;

	if (x->n != y->n)
		return y->n - x->n;
	return strcmp(x->detail, y->detail);
}

/* Validation failures of the route on backend in the window, by detail. */
static void
cause_validation(const struct route_ctx *rc, const struct cause *cs, cJSON *ev, char *paren,
		 size_t n)
{
	const struct diag_rows *w = &rc->in->cur;
	struct detail_count *d = xcalloc((size_t)w->nvfails + 1, sizeof *d);
	struct id_map ids = {0};
	cJSON *arr = cJSON_AddArrayToObject(ev, "details");
	int i, j, k, nd = 0, total = 0;
	size_t o = 0;

	ids.pairs = xcalloc((size_t)rc->natt + 1, sizeof *ids.pairs);
	for (i = 0; i < rc->natt; i++)
		ids.pairs[ids.n++] = (struct id_idx){w->attempts[rc->att[i]].id, rc->att[i]};
	diag_id_map_seal(&ids);
	for (i = 0; i < w->nvfails; i++) {
		const struct diag_vfail *v = &w->vfails[i];

		if (!diag_str_eq(v->route, rc->route))
			continue;
		k = diag_id_map_find(&ids, v->attempt_id);
		if (k < 0 || !diag_str_eq(w->attempts[k].backend, cs->backend))
			continue;
		total++;
		for (j = 0; j < nd && strcmp(d[j].detail, diag_str_or(v->detail, "")) != 0; j++)
			;
		if (j == nd)
			d[nd++].detail = diag_str_or(v->detail, "");
		d[j].n++;
	}
	qsort(d, (size_t)nd, sizeof *d, cmp_detail);
	cJSON_AddNumberToObject(ev, "failures", total);
	paren[0] = '\0';
	for (i = 0; i < nd && i < MAX_DETAILS; i++) {
		cJSON *x = cJSON_CreateObject();

		cJSON_AddStringToObject(x, "detail", d[i].detail);
		cJSON_AddNumberToObject(x, "count", d[i].n);
		cJSON_AddItemToArray(arr, x);
		if (o < n)
			o += (size_t)snprintf(paren + o, n - o, "%s%s \xc3\x97%d", i ? "; " : "",
					      d[i].detail, d[i].n);
	}
	if (nd == 0)
		snprintf(paren, n, "%d calls", cs->ncalls);
	diag_id_map_free(&ids);
	free(d);
}

/* Attempts of the route on the cause's backend: timings, statuses, Retry-After. */
static void
cause_attempts(const struct route_ctx *rc, const struct cause *cs, cJSON *ev, char *paren, size_t n)
{
	const struct diag_rows *w = &rc->in->cur;
	const struct diag_target *tg = diag_target_find(rc->in, rc->route, cs->backend);
	int64_t *conn = xcalloc((size_t)rc->natt + 1, sizeof *conn);
	int64_t *ra = xcalloc((size_t)rc->natt + 1, sizeof *ra);
	int64_t fb_limit = tg != NULL ? tg->first_byte_ms : -1, cp50, rap50;
	int i, nb = 0, nfail = 0, nconn = 0, nslow = 0, nra = 0, nstatus = 0;

	for (i = 0; i < rc->natt; i++) {
		const struct diag_attempt *a = &w->attempts[rc->att[i]];

		if (!diag_str_eq(a->backend, cs->backend))
			continue;
		nb++;
		if (a->first_byte_ms < 0 ? diag_is_failed(a)
					 : (fb_limit > 0 && a->first_byte_ms > fb_limit))
			nslow++;
		if (!diag_str_eq(a->outcome, cs->reason))
			continue;
		nfail++;
		if (a->connect_ms >= 0)
			conn[nconn++] = a->connect_ms;
		if (a->retry_after_ms >= 0)
			ra[nra++] = a->retry_after_ms;
		if (a->http_status > 0)
			nstatus++;
	}
	cp50 = diag_median(conn, nconn);
	rap50 = diag_median(ra, nra);
	cJSON_AddNumberToObject(ev, "attempts", nb);
	cJSON_AddNumberToObject(ev, "failed_attempts", nfail);
	json_add_number(ev, "connect_p50_ms", cp50 >= 0 ? (double)cp50 : NAN);
	if (diag_is_timeout(cs->reason)) {
		json_add_number(ev, "first_byte_limit_ms", fb_limit > 0 ? (double)fb_limit : NAN);
		cJSON_AddNumberToObject(ev, "no_first_byte_share", nb ? (double)nslow / nb : 0);
		if (fb_limit > 0)
			snprintf(paren, n, "connect p50 %s%lld ms, first byte > %lld ms in %d %%",
				 cp50 < 0 ? "n/a " : "", (long long)MAX(cp50, 0),
				 (long long)fb_limit, diag_pct(nb ? (double)nslow / nb : 0));
		else
			snprintf(paren, n, "connect p50 %lld ms, no first byte in %d %%",
				 (long long)MAX(cp50, 0), diag_pct(nb ? (double)nslow / nb : 0));
	} else if (diag_str_eq(cs->reason, WIRE_OUTCOME_HTTP_429)) {
		cJSON_AddNumberToObject(ev, "retry_after_share", nfail ? (double)nra / nfail : 0);
		json_add_number(ev, "retry_after_p50_ms", rap50 >= 0 ? (double)rap50 : NAN);
		snprintf(paren, n, "429 on %d %% of its attempts, Retry-After p50 %lld ms in %d %%",
			 diag_pct(nb ? (double)nfail / nb : 0), (long long)MAX(rap50, 0),
			 diag_pct(nfail ? (double)nra / nfail : 0));
	} else if (nfail > 0) {
		snprintf(paren, n, "%d of %d attempts %s", nfail, nb, cs->reason);
	} else {
		snprintf(paren, n, "%d calls", cs->ncalls);
	}
	(void)nstatus;
	free(conn);
	free(ra);
}

cJSON *
diag_cause_json(const struct route_ctx *rc, const struct cause *cs)
{
	cJSON *x = cJSON_CreateObject(), *ev;
	char paren[CAUSE_TEXT_MAX], when[16], text[TEXT_MAX];
	double share = rc->degraded ? (double)cs->ncalls / rc->degraded : 0;
	const struct diag_event *bev = NULL;
	struct buf q;

	paren[0] = '\0';
	cJSON_AddNumberToObject(x, "share", share);
	cJSON_AddStringToObject(x, "reason", cs->reason);
	json_add_string(x, "backend", cs->backend);
	json_add_string(x, "phase", cs->phase);
	ev = cJSON_CreateObject();
	cJSON_AddNumberToObject(ev, "calls", cs->ncalls);
	cJSON_AddNumberToObject(ev, "degraded_calls", rc->degraded);
	cJSON_AddNumberToObject(ev, "previous_calls", cs->prev_ncalls);
	if (diag_str_eq(cs->reason, WIRE_REASON_BREAKER_OPEN) && cs->backend != NULL)
		bev = diag_breaker_open_at(rc->in, cs->backend, cs->since);
	json_add_time(x, "since", bev != NULL ? bev->at : cs->since);
	diag_hhmmss(cs->since, when, sizeof when);
	if (bev != NULL) {
		const char *why = bev->detail != NULL ? strchr(bev->detail, '(') : NULL;
		char at[16];

		diag_hhmmss(bev->at, at, sizeof at);
		cJSON_AddStringToObject(ev, "breaker_event", diag_str_or(bev->detail, ""));
		snprintf(text, sizeof text,
			 "%d %% of degraded calls: breaker %s OPEN since %s%s%s \xe2\x80\x94 "
			 "%d calls answered without it",
			 diag_pct(share), cs->backend, at, why != NULL ? " " : "",
			 diag_str_or(why, ""), cs->ncalls);
	} else {
		if (diag_str_eq(cs->phase, "validation") && cs->backend != NULL)
			cause_validation(rc, cs, ev, paren, sizeof paren);
		else if (cs->backend != NULL)
			cause_attempts(rc, cs, ev, paren, sizeof paren);
		else
			snprintf(paren, sizeof paren, "%d calls", cs->ncalls);
		snprintf(text, sizeof text,
			 "%d %% of degraded calls: %s%s%s (%s) \xe2\x80\x94 began %s",
			 diag_pct(share), cs->reason, cs->backend != NULL ? " on " : "",
			 diag_str_or(cs->backend, ""), paren, when);
	}
	cJSON_AddStringToObject(x, "text", text);
	cJSON_AddItemToObject(x, "evidence", ev);
	buf_init(&q, 8192);
	cause_sql(rc, cs, &q);
	cJSON_AddStringToObject(x, "query", q.data != NULL ? q.data : "");
	buf_free(&q);
	return x;
}
