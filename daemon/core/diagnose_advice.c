/*
 * diagnose_advice: the contrasts of failing and succeeding
 * attempts, the changes before the episode and the suggestions. Nothing
 * here is applied: suggestions are text and a CLI command.
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

/* ---- contrasts ----------------------------------------------------------- */

struct side {
	int n;
	int64_t *tokens, *conn, *fb;
	int ntokens, nconn, nfb, nra;
	int64_t *ra;
};

static void
side_init(struct side *s, int cap)
{
	memset(s, 0, sizeof *s);
	s->tokens = xcalloc((size_t)cap + 1, sizeof *s->tokens);
	s->conn = xcalloc((size_t)cap + 1, sizeof *s->conn);
	s->fb = xcalloc((size_t)cap + 1, sizeof *s->fb);
	s->ra = xcalloc((size_t)cap + 1, sizeof *s->ra);
}

static void
side_free(struct side *s)
{
	free(s->tokens);
	free(s->conn);
	free(s->fb);
	free(s->ra);
}

static void
side_add(struct side *s, const struct diag_attempt *a)
{
	s->n++;
	if (a->input_tokens >= 0)
		s->tokens[s->ntokens++] = a->input_tokens;
	if (a->connect_ms >= 0)
		s->conn[s->nconn++] = a->connect_ms;
	if (a->first_byte_ms >= 0)
		s->fb[s->nfb++] = a->first_byte_ms;
	if (a->retry_after_ms >= 0)
		s->ra[s->nra++] = a->retry_after_ms;
}

/* The most frequent value of key over the route's attempts on one side, with its count. */
struct tally {
	const char *s[64];
	int v[64], n[64], len;
};

static void
tally_add(struct tally *t, const char *s, int v)
{
	int i;

	for (i = 0; i < t->len; i++)
		if (s != NULL ? diag_str_eq(t->s[i], s) : t->v[i] == v) {
			t->n[i]++;
			return;
		}
	if (t->len < (int)ARRAY_SIZE(t->n)) {
		t->s[t->len] = s;
		t->v[t->len] = v;
		t->n[t->len++] = 1;
	}
}

static int
tally_top(const struct tally *t)
{
	int i, best = -1;

	for (i = 0; i < t->len; i++)
		if (best < 0 || t->n[i] > t->n[best])
			best = i;
	return best;
}

static int
tally_count(const struct tally *t, const char *s, int v)
{
	int i;

	for (i = 0; i < t->len; i++)
		if (s != NULL ? diag_str_eq(t->s[i], s) : t->v[i] == v)
			return t->n[i];
	return 0;
}

static void
contrast_add(cJSON *arr, const char *factor, cJSON *failing, cJSON *succeeding, const char *text)
{
	cJSON *x = cJSON_CreateObject();

	cJSON_AddStringToObject(x, "factor", factor);
	cJSON_AddItemToObject(x, "failing", failing);
	cJSON_AddItemToObject(x, "succeeding", succeeding);
	cJSON_AddStringToObject(x, "text", text);
	cJSON_AddItemToArray(arr, x);
}

static cJSON *
num_or_null(int64_t v)
{
	return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

/*
 * Contrasts of the route's failing and succeeding attempts: the backend
 * over all of them, the rest over the attempts on the top cause's backend
 * (when it has one), so that a backup answering long inputs does not hide
 * that the primary failed on them. *tok_fail / *tok_ok: their token p50.
 */
cJSON *
diag_contrasts_json(const struct route_ctx *rc, int64_t *tok_fail, int64_t *tok_ok)
{
	const char *scope = rc->ncauses > 0 ? rc->causes[0].backend : NULL;
	char on[80];
	const struct diag_rows *w = &rc->in->cur;
	struct tally bf = {0}, bo = {0}, pf = {0}, sf = {0}, so = {0};
	struct side f, o;
	cJSON *arr = cJSON_CreateArray();
	char text[TEXT_MAX];
	int i, k;
	int64_t tf, to, cf, co, fbo, raf;

	side_init(&f, rc->natt);
	side_init(&o, rc->natt);
	snprintf(on, sizeof on, "%s%s", scope != NULL ? " on " : "", diag_str_or(scope, ""));
	for (i = 0; i < rc->natt; i++) {
		const struct diag_attempt *a = &w->attempts[rc->att[i]];
		int in_scope = scope == NULL || diag_str_eq(a->backend, scope);

		if (diag_is_ok(a)) {
			tally_add(&bo, diag_str_or(a->backend, "?"), 0);
			if (!in_scope)
				continue;
			side_add(&o, a);
			if (a->http_status > 0)
				tally_add(&so, NULL, a->http_status);
		} else if (diag_is_failed(a)) {
			tally_add(&bf, diag_str_or(a->backend, "?"), 0);
			if (!in_scope)
				continue;
			side_add(&f, a);
			tally_add(&pf, diag_str_or(diag_phase_of(a->outcome, a), a->outcome), 0);
			if (a->http_status > 0)
				tally_add(&sf, NULL, a->http_status);
		}
	}
	tf = diag_median(f.tokens, f.ntokens);
	to = diag_median(o.tokens, o.ntokens);
	*tok_fail = tf;
	*tok_ok = to;
	if ((k = tally_top(&bf)) >= 0) {
		int nf = 0, no = 0, ok_on = tally_count(&bo, bf.s[k], 0);

		for (i = 0; i < bf.len; i++)
			nf += bf.n[i];
		for (i = 0; i < bo.len; i++)
			no += bo.n[i];
		snprintf(text, sizeof text,
			 "%d %% of failing attempts were on %s vs %d %% of succeeding ones",
			 diag_pct((double)bf.n[k] / nf), bf.s[k],
			 diag_pct(no ? (double)ok_on / no : 0));
		contrast_add(arr, "backend", cJSON_CreateString(bf.s[k]),
			     no ? cJSON_CreateString(bo.s[tally_top(&bo)]) : cJSON_CreateNull(),
			     text);
	}
	if (f.n > 0 && (k = tally_top(&pf)) >= 0) {
		cf = diag_median(f.conn, f.nconn);
		co = diag_median(o.conn, o.nconn);
		fbo = diag_median(o.fb, o.nfb);
		snprintf(
			text, sizeof text,
			"%d %% of failing attempts%s failed in %s (connect p50 %lld ms vs %lld ms; "
			"succeeding first byte p50 %lld ms)",
			diag_pct((double)pf.n[k] / f.n), on, pf.s[k], (long long)MAX(cf, 0),
			(long long)MAX(co, 0), (long long)MAX(fbo, 0));
		contrast_add(arr, "phase", cJSON_CreateString(pf.s[k]),
			     o.n ? cJSON_CreateString("complete") : cJSON_CreateNull(), text);
	}
	if (tf >= 0 && to > 0 &&
	    ((double)tf >= TOKENS_RATIO * (double)to ||
	     (double)to >= TOKENS_RATIO * (double)MAX(tf, 1))) {
		snprintf(text, sizeof text, "failures%s had median %lld input tokens vs %lld", on,
			 (long long)tf, (long long)to);
		contrast_add(arr, "input_tokens", num_or_null(tf), num_or_null(to), text);
	}
	/* A 200 that failed validation says nothing about HTTP. */
	if (sf.len > 0 && (sf.v[tally_top(&sf)] < 200 || sf.v[tally_top(&sf)] > 299)) {
		int ks = tally_top(&sf), kso = tally_top(&so);
		char ok[32];

		snprintf(ok, sizeof ok, kso >= 0 ? "%d" : "no succeeding attempt",
			 kso >= 0 ? so.v[kso] : 0);
		snprintf(text, sizeof text, "failing attempts%s answered HTTP %d (%d %%) vs %s", on,
			 sf.v[ks], diag_pct((double)sf.n[ks] / f.n), ok);
		contrast_add(arr, "http_status", cJSON_CreateNumber(sf.v[ks]),
			     kso >= 0 ? cJSON_CreateNumber(so.v[kso]) : cJSON_CreateNull(), text);
	}
	if (f.nra > 0) {
		raf = diag_median(f.ra, f.nra);
		snprintf(
			text, sizeof text,
			"%d %% of failing attempts%s carried Retry-After (p50 %lld ms) vs %d %% of "
			"succeeding ones",
			diag_pct((double)f.nra / f.n), on, (long long)raf,
			diag_pct(o.n ? (double)o.nra / o.n : 0));
		contrast_add(arr, "retry_after", num_or_null(raf),
			     o.nra ? num_or_null(diag_median(o.ra, o.nra)) : cJSON_CreateNull(),
			     text);
	}
	side_free(&f);
	side_free(&o);
	return arr;
}

/* ---- changes ------------------------------------------------------------- */

static int
route_has_backend(const struct route_ctx *rc, const char *backend)
{
	return diag_target_find(rc->in, rc->route, backend) != NULL;
}

/* The audit row of an event (same moment, matching action and target), or NULL. */
static const struct diag_audit *
audit_of(const struct route_ctx *rc, const struct diag_event *ev, const char *action_prefix,
	 const char *target_kind)
{
	const struct diag_input *in = rc->in;
	char target[160];
	int i;

	snprintf(target, sizeof target, "%s:%s", target_kind, diag_str_or(ev->subject, ""));
	for (i = 0; i < in->naudit; i++) {
		const struct diag_audit *a = &in->audit[i];

		if (a->at < ev->at - 1000 || a->at > ev->at + 1000 || a->action == NULL ||
		    strncmp(a->action, action_prefix, strlen(action_prefix)) != 0)
			continue;
		if (target_kind[0] == '\0' || diag_str_eq(a->target, target))
			return a;
	}
	return NULL;
}

cJSON *
diag_changes_json(const struct route_ctx *rc)
{
	const struct diag_input *in = rc->in;
	int64_t to = rc->episode >= 0 ? rc->episode : in->cur.to;
	int64_t from = rc->episode >= 0 ? rc->episode - DIAG_CHANGES_MS : in->cur.from;
	cJSON *arr = cJSON_CreateArray();
	int i;

	for (i = 0; i < in->nevents; i++) {
		const struct diag_event *ev = &in->events[i];
		const struct diag_audit *au = NULL;
		const char *kind = ev->kind;
		cJSON *x;

		if (ev->at < from || ev->at > to || kind == NULL)
			continue;
		if (strcmp(kind, "reload") == 0) {
			au = audit_of(rc, ev, "config.reload", "");
		} else if (strcmp(kind, "weights") == 0 && diag_str_eq(ev->subject, rc->route)) {
			au = audit_of(rc, ev, "weights.", "route");
		} else if (strcmp(kind, "level") == 0 && diag_str_eq(ev->subject, rc->route) &&
			   ev->detail != NULL && strstr(ev->detail, "forced") != NULL) {
			au = audit_of(rc, ev, "level.", "route");
		} else if (strcmp(kind, "breaker") == 0 && route_has_backend(rc, ev->subject) &&
			   ev->detail != NULL && strstr(ev->detail, "forced") != NULL) {
			au = audit_of(rc, ev, "breaker.", "backend");
		} else if ((strcmp(kind, "canary_rollback") == 0 || strcmp(kind, "alert") == 0) &&
			   diag_str_eq(ev->subject, rc->route)) {
			au = NULL;
		} else {
			continue;
		}
		x = cJSON_CreateObject();
		json_add_time(x, "at", ev->at);
		cJSON_AddStringToObject(x, "kind", kind);
		json_add_string(x, "subject", ev->subject);
		json_add_string(x, "actor", au != NULL ? au->actor : NULL);
		json_add_string(x, "detail", ev->detail);
		cJSON_AddItemToArray(arr, x);
	}
	return arr;
}

/* ---- suggestions --------------------------------------------------------- */

/* ok / all attempts of backend on the route in the window; -1 when it made none. */
static double
backend_ok_share(const struct route_ctx *rc, const char *backend)
{
	const struct diag_rows *w = &rc->in->cur;
	int i, n = 0, ok = 0;

	for (i = 0; i < rc->natt; i++) {
		const struct diag_attempt *a = &w->attempts[rc->att[i]];

		if (!diag_str_eq(a->backend, backend) || a->outcome == NULL)
			continue;
		n++;
		ok += diag_is_ok(a);
	}
	return n ? (double)ok / n : -1;
}

static void
suggest(cJSON *arr, const char *text, const char *action)
{
	cJSON *x = cJSON_CreateObject();

	cJSON_AddStringToObject(x, "text", text);
	json_add_string(x, "action", action);
	cJSON_AddItemToArray(arr, x);
}

/* "fusebox weights R B1=W1 B2=0 ...": the route's primary targets, zero swapped in. */
static void
weights_action(const struct route_ctx *rc, const char *zero, const char *full, struct buf *b)
{
	int i;

	buf_printf(b, "fusebox weights %s", rc->route);
	for (i = 0; i < rc->in->ntargets; i++) {
		const struct diag_target *t = &rc->in->targets[i];
		int wgt = t->weight;

		if (!diag_str_eq(t->route, rc->route) || t->role == DIAG_BACKUP)
			continue;
		if (diag_str_eq(t->backend, zero))
			wgt = 0;
		else if (full != NULL && diag_str_eq(t->backend, full) && wgt == 0)
			wgt = 100;
		buf_printf(b, " %s=%d", t->backend, wgt);
	}
}

cJSON *
diag_suggestions_json(const struct route_ctx *rc, int64_t tok_fail, int64_t tok_ok)
{
	const struct cause *cs = rc->ncauses > 0 ? &rc->causes[0] : NULL;
	const struct diag_target *tg;
	cJSON *arr = cJSON_CreateArray();
	char text[TEXT_MAX];
	struct buf act;
	int i, nprimary = 0, offered = 0;

	if (cs != NULL && diag_str_eq(cs->reason, WIRE_REASON_RATE_LIMITED_LOCAL)) {
		/* nothing was sent: the backends' own rate-limit headers (or
		 * rate_limits) said their requests or tokens were spent */
		suggest(arr,
			"calls were held back: the route's backends announced their rate limit "
			"spent until its reset (fusebox breakers: RL-REQ, RL-TOK); add a target "
			"with headroom, or lower the traffic",
			NULL);
		return arr;
	}
	if (cs != NULL && diag_str_eq(cs->reason, WIRE_REASON_CONCURRENCY_LIMITED)) {
		suggest(arr,
			"calls found the adaptive concurrency limit full: the backends' latency "
			"rose above their baseline as load grew (fusebox breakers: LIMIT, "
			"LATENCY); add capacity or a target, or give queue_ms room",
			NULL);
		return arr;
	}
	if (cs == NULL || cs->backend == NULL || cs->phase == NULL)
		return arr;
	tg = diag_target_find(rc->in, rc->route, cs->backend);
	for (i = 0; i < rc->in->ntargets; i++)
		nprimary += diag_str_eq(rc->in->targets[i].route, rc->route) &&
			    rc->in->targets[i].role != DIAG_BACKUP;
	buf_init(&act, 4096);
	if (strcmp(cs->phase, "validation") == 0 && tg != NULL && tg->role != DIAG_BACKUP &&
	    (tg->role == DIAG_CANARY || nprimary > 1)) {
		snprintf(text, sizeof text, "schema drift on %s: set its weight to 0", cs->backend);
		weights_action(rc, cs->backend, NULL, &act);
		suggest(arr, text, act.data);
		offered = 1;
	}
	for (i = 0; !offered && i < rc->in->ntargets; i++) {
		const struct diag_target *t = &rc->in->targets[i];
		double ok;

		if (!diag_str_eq(t->route, rc->route) || t->role == DIAG_BACKUP ||
		    diag_str_eq(t->backend, cs->backend) || tg == NULL || tg->role == DIAG_BACKUP)
			continue;
		ok = backend_ok_share(rc, t->backend);
		if (ok < HEALTHY_SHARE)
			continue;
		snprintf(text, sizeof text, "%s healthy (%d %% valid): set %s's weight to 0",
			 t->backend, diag_pct(ok), cs->backend);
		buf_reset(&act);
		weights_action(rc, cs->backend, t->backend, &act);
		suggest(arr, text, act.data);
		offered = 1;
	}
	for (i = 0; i < rc->in->ntargets; i++) {
		const struct diag_target *t = &rc->in->targets[i];
		double ok;

		if (!diag_str_eq(t->route, rc->route) || t->role != DIAG_BACKUP ||
		    diag_str_eq(t->backend, cs->backend))
			continue;
		ok = backend_ok_share(rc, t->backend);
		if (ok < HEALTHY_SHARE)
			continue;
		snprintf(text, sizeof text, "backup %s healthy (%d %% valid): force level 1",
			 t->backend, diag_pct(ok));
		buf_reset(&act);
		buf_printf(&act, "fusebox level %s 1 --reason \"%s on %s\"", rc->route, cs->reason,
			   cs->backend);
		suggest(arr, text, act.data);
		break;
	}
	if (diag_is_timeout(cs->reason) && tok_fail > 0 && tok_ok > 0 &&
	    (double)tok_fail >= TOKENS_RATIO * (double)tok_ok) {
		snprintf(text, sizeof text,
			 "long inputs time out on %s (median %lld input tokens vs %lld that "
			 "pass): "
			 "raise its timeouts.first_byte_ms%s or set the route's timeout.mode to "
			 "dynamic",
			 cs->backend, (long long)tok_fail, (long long)tok_ok,
			 tg != NULL && tg->first_byte_ms > 0 ? " above its current limit" : "");
		suggest(arr, text, NULL);
	}
	if (strcmp(cs->phase, "rate_limit") == 0) {
		snprintf(text, sizeof text,
			 "%s is rate-limiting: lower the traffic sent to it (its max_concurrent, "
			 "the route's weights) until the limit resets",
			 cs->backend);
		suggest(arr, text, NULL);
	}
	buf_free(&act);
	return arr;
}
