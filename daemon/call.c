/*
 * call: the guarded call.
 *
 * A call walks the ladder from the step its level selects. Model steps
 * (primary, backup) pick a backend (router: weights × health, breakers
 * admitting, bulkheads with room, avoiding the backend that just failed),
 * take a bulkhead slot and breaker permission, and run one attempt at a
 * time (attempt.c). An attempt ends by itself (curl reports the transfer
 * done) or by one of its timers (first byte, total); either way attempt.c
 * classifies it, validates a 200's content and writes the attempts row,
 * and call_attempt_done() records breaker and health; then the call
 * answers, retries (backoff timer) or falls to the next rung
 * (call_set_step(), the one writer of c->step). Every timeout is clipped
 * to the call's one budget (budget_attempt_plan()), and a call deadline
 * timer is the last word: the answer leaves by the deadline whatever the
 * upstream does.
 *
 * Hedging (call_hedge.c): when an attempt has no first byte after the
 * route's hedge delay, a second one may start beside it; the first valid
 * answer wins and the others end as hedge_cancelled.
 *
 * Invariants: the attempts of a call in flight are c->att[0..natt); each
 * holds a bulkhead slot and a breaker permit exactly while it is there.
 * The call decides what follows (retry, fall) only when its last attempt
 * in flight ends. done() runs once (c->answered); afterwards the call only
 * waits to be reaped, its attempts stopped.
 */
#include "call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attempt.h"
#include "budget.h"
#include "call_int.h"
#include "jsonutil.h"
#include "cache.h"
#include "canary.h"
#include "clock.h"
#include "engine.h"
#include "gate.h"
#include "health.h"
#include "idem.h"
#include "ladder.h"
#include "log.h"
#include "obs.h"
#include "review_q.h"
#include "router.h"
#include "rules.h"
#include "util.h"
#include "validate.h"
#include "wire.h"

static void call_step(struct call *c);

void
call_req_clear(struct call_req *cr)
{
	free(cr->request_id);
	free(cr->input);
	cJSON_Delete(cr->messages);
	free(cr->callback_url);
	cJSON_Delete(cr->metadata);
	cJSON_Delete((cJSON *)cr->params.response_format);
	cJSON_Delete((cJSON *)cr->params.extra);
	free(cr->tracestate);
	memset(cr, 0, sizeof *cr);
}

void
call_req_trace(struct engine *e, struct call_req *cr, const char *traceparent,
	       const char *tracestate)
{
	struct tracectx parent;
	int has_parent = tracectx_parse(traceparent, &parent);
	double rate = e->cfg->tracing.sample_rate;

	free(cr->tracestate);
	cr->tracestate = NULL;
	/* W3C: without a valid traceparent, tracestate is not forwarded either */
	if (has_parent && tracectx_tracestate_ok(tracestate))
		cr->tracestate = xstrdup(tracestate);
	tracectx_child(has_parent ? &parent : NULL, &e->rng, rate,
		       has_parent || rate >= 1 ? 0 : rng_double(&e->rng), &cr->trace,
		       cr->trace_parent);
	cr->has_trace = 1;
}

/*
 * The one writer of c->step: moves the call to rung to (a move the ladder
 * allows; none when to is where it stands), logs it and writes its
 * degradation row.
 */
static void
call_set_step(struct call *c, enum step to, const char *reason)
{
	int64_t now_wall = clock_wall_ms();

	if (to == c->step)
		return;
	if (!ladder_transition_ok(c->step, to)) {
		log_ctx(LOG_LEVEL_ERROR, "call", &CALL_LOG_CTX(c),
			"%s %s: refused ladder move %d -> %d (%s)", c->rc->name, c->request_id,
			(int)c->step, (int)to, reason);
		return;
	}
	if (!c->xcheck) {
		struct store_val v[] = {SVI(c->e->next_degradation_id++),
					SVI(c->id),
					SVT(c->rc->name),
					SVT(step_name(c->step)),
					SVT(step_name(to)),
					SVT(reason),
					SVI(now_wall)};

		store_put(c->e->store, STORE_DEGRADATION_INSERT, v, (int)ARRAY_SIZE(v));
	}
	if (c->span.o != NULL) {
		const char *kv[] = {"from",	   step_name(c->step), "to",
				    step_name(to), "reason",	       reason};

		trace_event(&c->span, "fusebox.fall", call_wall_ns(now_wall), kv, 3);
	}
	log_ctx(LOG_LEVEL_DEBUG, "call", &CALL_LOG_CTX(c), "%s %s: %s -> %s (%s)", c->rc->name,
		c->request_id, step_name(c->step), step_name(to), reason);
	c->step = to;
	c->step_retries = 0;
	c->avoid_backend = -1;
}

/* Leave the rung the call stands on for the next one the route configures. */
static void
call_fall(struct call *c, const char *reason)
{
	if (c->reason[0] == '\0')
		snprintf(c->reason, sizeof c->reason, "%s", reason);
	if (c->route < c->e->nroutes && !c->xcheck)
		obs_degradation(c->e->obs, c->route, reason);
	call_set_step(c, ladder_step_next(c->rc, c->step), reason);
}

static void
log_call_row(struct call *c)
{
	struct call_answer *a = &c->ans;
	const char *result = a->result_json;
	const char *response = a->json;
	const struct log_cfg *lc = &c->e->cfg->log;
	const char *input = lc->inputs ? call_input_text(c) : NULL;
	char trace_id[TRACECTX_TRACE_HEX + 1];
	struct store_val v[] = {
		SVI(c->id),
		SVT(c->request_id),
		SVT(c->rc->name),
		SVI(c->started_wall),
		SVI(c->started_wall + a->elapsed_ms),
		SVI(a->elapsed_ms),
		SVI(c->budget.budget_ms),
		SVI(a->level),
		SVT(source_name(a->source)),
		SVT(a->backend),
		SVI(a->degraded),
		a->reason[0] ? SVT(a->reason) : SVN,
		SVI(a->attempts),
		a->has_confidence ? SVR(a->confidence) : SVN,
		SVT(a->review ? "pending" : "none"),
		SVI(a->http_status),
		SVT(input),
		SVT(result),
		SVT(response),
		SVT(a->http_status < 300 ? "done" : "failed"),
		SVT(trace_id),
	};

	tracectx_trace_hex(c->req.trace.trace_id, trace_id);
	store_put(c->e->store, STORE_CALL_INSERT, v, (int)ARRAY_SIZE(v));
}

int
call_review_insert(struct engine *e, const struct route_cfg *rc, const char *request_id,
		   int64_t call_id, const char *reason, const char *input, const char *raw,
		   const cJSON *result, int has_conf, double conf, const cJSON *alt_result,
		   const char *callback_url, review_q_done_fn fn, void *arg)
{
	struct review_new n = {
		.rc = rc,
		.request_id = request_id,
		.call_id = call_id,
		.reason = reason,
		.input = input,
		.raw_output = raw,
		.result = result,
		.has_confidence = has_conf,
		.confidence = conf,
		.alt_result = alt_result,
		.callback_url = callback_url,
	};
	char *cause = NULL;
	int r = review_q_enqueue(e, &n, clock_wall_ms(), fn, arg, &cause);

	if (r != 0)
		log_error("call", "%s %s: review enqueue failed: %s", rc->name,
			  request_id ? request_id : "-", cause ? cause : "?");
	free(cause);
	return r;
}

static void call_answer_finish(struct call *c);

/* The call's review item is committed (or not): now the caller may hear "pending". */
static void
call_review_done(struct engine *e, void *arg, int rc, int64_t id, const char *cause)
{
	struct call *c = arg;

	if (rc != 0)
		log_ctx(LOG_LEVEL_ERROR, "call", &CALL_LOG_CTX(c),
			"%s %s: review enqueue failed: %s", c->rc->name, c->request_id,
			cause ? cause : "?");
	c->ans.review = rc == 0;
	call_answer_finish(c);
	(void)e;
	(void)id;
}

/* Feed the route's auto-level state machine with what this call says. */
static void
call_escalation(struct call *c, enum source src)
{
	unsigned flags = 0;

	if (!c->auto_start || !c->req.allow_llm || c->level >= 2) {
		flags = ESC_SKIPPED;
	} else {
		if (c->start_vfail)
			flags |= ESC_F_VFAIL;
		if (src != SOURCE_LLM && src != SOURCE_BACKUP)
			flags |= ESC_F_ERROR;
	}
	escalation_record(&c->rt->esc, &c->rc->escalation, clock_mono_ms(), c->level, flags);
	engine_route_escalation_events(c->e, c->rt);
}

/*
 * Seconds until a retry of an exhausted call may fare better: the first
 * probe an open breaker of the route's backends admits, or, when their
 * bulkheads were full, about one median answer time; 1 when nothing
 * better is known. Bounded to [1, 3600].
 */
static int64_t
call_retry_after_s(const struct call *c)
{
	const struct route_cfg *rc = c->rc;
	struct engine *e = c->e;
	int64_t now_ms = clock_mono_ms(), best = -1, t;
	int i, n = rc->ntargets + rc->backup.ntargets;

	for (i = 0; i < n; i++) {
		const struct target_cfg *tg =
			i < rc->ntargets ? &rc->targets[i] : &rc->backup.targets[i - rc->ntargets];
		int bidx = call_target_backend(c, tg);
		struct backend_rt *b;

		if (bidx < 0 || bidx >= e->nbackends)
			continue;
		b = &e->backends[bidx];
		if (breaker_half_open_at(&b->breaker) > 0)
			t = breaker_half_open_at(&b->breaker) - now_ms;
		else if (b->bulkhead.inflight >= b->bulkhead.max)
			t = health_percentile(&b->health, now_ms, 60, 0.5, 1);
		else
			continue;
		if (t >= 0 && (best < 0 || t < best))
			best = t;
	}
	if (best < 0)
		return 1;
	return MIN(MAX((best + 999) / 1000, 1), 3600);
}

/*
 * The call has its answer: record it and hand it to done() — at once, or
 * once its review item is committed (call_review_done()). result (may be
 * NULL) becomes the answer's: call_answer_own() takes it, call_answer()
 * takes a copy.
 */
static void
call_answer_own(struct call *c, unsigned status, enum source src, const char *backend,
		cJSON *result, const char *text, int has_conf, double conf)
{
	struct call_answer *a = &c->ans;

	if (c->answered) {
		cJSON_Delete(result);
		return;
	}
	c->answered = 1;
	engine_timer_cancel(c->e, &c->t_deadline);
	engine_timer_cancel(c->e, &c->t_backoff);
	engine_timer_cancel(c->e, &c->t_queue);
	engine_timer_cancel(c->e, &c->t_hedge);
	engine_timer_cancel(c->e, &c->t_unhedge);
	a->http_status = status;
	a->source = src;
	a->backend = backend;
	a->level = c->level;
	a->degraded = src != SOURCE_LLM;
	if (a->degraded || status >= 300)
		snprintf(a->reason, sizeof a->reason, "%s", c->reason[0] ? c->reason : "unknown");
	else
		a->reason[0] = '\0';
	a->result = result;
	a->text = text ? xstrdup(text) : NULL;
	a->has_confidence = has_conf;
	a->confidence = conf;
	a->attempts = c->attempts;
	a->request_id = c->request_id;
	a->route = c->rc->name;
	a->retry_after_s = status >= 300 ? call_retry_after_s(c) : 0;
	/* "review": "pending" only once the item is durable; the loop goes on meanwhile. */
	if (c->review_reason &&
	    call_review_insert(c->e, c->rc, c->request_id, c->id, c->review_reason,
			       call_input_text(c), c->last_raw, result, a->has_confidence,
			       a->confidence, NULL, c->req.callback_url, call_review_done, c) == 0)
		return;
	call_answer_finish(c);
}

static void
call_answer(struct call *c, unsigned status, enum source src, const char *backend,
	    const cJSON *result, const char *text, int has_conf, double conf)
{
	if (!c->answered)
		call_answer_own(c, status, src, backend, result ? cJSON_Duplicate(result, 1) : NULL,
				text, has_conf, conf);
}

/* The second half of call_answer(): render, record, hand to done(), close. */
static void
call_answer_finish(struct call *c)
{
	struct call_answer *a = &c->ans;
	enum source src = a->source;
	unsigned status = a->http_status;

	/* Until now: a review item's commit is part of the answer's time. */
	a->elapsed_ms = (clock_mono_us() - c->start_us + 500) / 1000;
	/* Rendered once: the calls row, the HTTP answer and the job result share it. */
	a->result_json = a->result ? json_print(a->result) : NULL;
	a->json = call_answer_json(a, 0);
	if (c->xcheck)
		goto handed; /* a shadow: no calls row, no SLO, no escalation */
	call_span_end(c);
	call_escalation(c, src);
	{
		struct call_obs co = {
			.route = c->route,
			.source = src,
			.http_status = status,
			.level = c->level,
			.degraded = a->degraded,
			.reason = a->reason[0] ? a->reason : NULL,
			.elapsed_ms = a->elapsed_ms,
			.budget_ms = c->budget.budget_ms,
			.attempts = c->attempts,
			.retries = c->retries,
			.timeouts = c->timeouts,
			.format_violations = c->format_violations,
			.review = a->review,
			.wall_ms = clock_wall_ms(),
		};

		if (c->route < c->e->nroutes) /* not a route a reload removed */
			obs_call(c->e->obs, &co);
	}
	log_call_row(c);
handed:
	c->e->inflight--;
	c->done(c, a, c->done_arg);
	/* Reaped before the engine sleeps (never freed inside a callback). */
	c->closing = 1;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->e->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->close_next = c->e->closing;
	c->e->closing = c;
}

static void
call_free(struct call *c)
{
	trace_span_discard(&c->span);
	c->rt->live_calls--;
	engine_hold_put(c->e, c->hold);
	call_req_clear(&c->req);
	free(c->request_id);
	free(c->last_raw);
	cJSON_Delete(c->ans.result);
	cJSON_Delete((cJSON *)c->ans.upstream);
	free(c->ans.text);
	free((char *)c->ans.json);
	free((char *)c->ans.result_json);
	free(c);
}

void
call_reap(struct engine *e)
{
	struct call *c;

	while ((c = e->closing) != NULL) {
		e->closing = c->close_next;
		call_free(c);
	}
}

static void
backoff_fire(struct timer *t, void *arg)
{
	call_step(arg);
}

/*
 * The owner's half of an attempt's end (attempt_done_fn): counts, breaker,
 * health and the bulkhead slot, then answer, retry or fall.
 */
static int
call_attempt_done(struct attempt *a, struct attempt_result *r, void *arg)
{
	struct call *c = arg;
	struct engine *e = c->e;
	struct backend_rt *b = a->b;
	int64_t now_ms = r->now_ms, now_us = r->now_us, delay;
	enum outcome o = r->outcome;
	enum breaker_verdict verdict;
	struct bulkhead_waiter *w;
	int rd, i;

	for (i = 0; i < c->natt; i++)
		if (c->att[i] == a)
			c->att[i] = c->att[--c->natt];
	if (c->streamer == a)
		c->streamer = NULL;
	if (o == OUTCOME_HEDGE_CANCELLED) {
		/* lost a race: no verdict on the backend, its slot and permit back */
		breaker_record(&b->breaker, now_ms, BREAKER_IGNORE, o, r->total_ms, a->is_probe);
		engine_breaker_events(e, b);
		if (a->is_hedge)
			c->rt->hedges[HEDGE_LOST]++;
		else if (r->first_byte_ms < 0)
			gate_first_byte_censored(&b->gate, now_ms, r->total_ms);
		if (c->route < e->nroutes && a->bidx < e->nbackends) {
			struct attempt_obs ao = {.route = c->route,
						 .backend = a->bidx,
						 .outcome = o,
						 .duration_ms = r->total_ms,
						 .canary = a->canary};

			obs_attempt(e->obs, &ao);
		}
		call_slot_leave(e, b);
		return c->answered;
	}
	if (r->raw) {
		free(c->last_raw);
		c->last_raw = attempt_redact(e, r->reply.content, SIZE_MAX);
	}
	if (r->streamed) {
		if (o != OUTCOME_OK)
			snprintf(c->ans.stream_error, sizeof c->ans.stream_error, "%s",
				 outcome_name(o));
		c->ans.streamed = 1;
	}
	if (outcome_is_timeout(o))
		c->timeouts++;
	if (o == OUTCOME_VALIDATION_FORMAT)
		c->format_violations++;
	{
		struct attempt_obs ao = {
			.route = c->route,
			.backend = a->bidx,
			.outcome = o,
			.duration_ms = r->total_ms,
			.canary = a->canary,
			.input_tokens = r->reply.prompt_tokens > 0 ? r->reply.prompt_tokens : 0,
			.output_tokens =
				r->reply.completion_tokens > 0 ? r->reply.completion_tokens : 0};

		if (c->route < e->nroutes && a->bidx < e->nbackends)
			obs_attempt(e->obs, &ao);
	}
	if (outcome_is_validation(o)) {
		if (c->span.o != NULL) {
			const char *kv[] = {"stage",   validate_stage_name(r->vr.stage),
					    "rule",    r->vr.rule[0] ? r->vr.rule : NULL,
					    "backend", b->cfg->name};

			trace_event(&c->span, "fusebox.validation_failure",
				    call_wall_ns(clock_wall_ms()), kv, 3);
		}
		if (c->route < e->nroutes)
			obs_validation_failure(e->obs, c->route, validate_stage_name(r->vr.stage));
		if (c->step == (c->level == 1 ? STEP_BACKUP : STEP_PRIMARY))
			c->start_vfail = 1;
	}

	verdict = breaker_classify(&b->cfg->breaker, o);
	/* the canary guard counts failures by outcome class, the same measure
	 * for every target whatever their breakers count (canary_failure) */
	if (a->target >= 0 && c->rt->canary && c->rt->cfg == c->rc)
		canary_record_outcome(&c->rt->canary[a->target], now_ms, o);
	breaker_record(&b->breaker, now_ms, verdict, o, r->total_ms, a->is_probe);
	engine_breaker_events(e, b);
	health_record(&b->health, now_ms, verdict != BREAKER_FAILURE, r->total_ms);
	if (gate_attempt_end(&b->gate, &b->bulkhead, now_ms, a->inflight_start, r->first_byte_ms,
			     r->total_ms, o))
		while ((w = bulkhead_next(&b->bulkhead)) != NULL)
			call_bulkhead_granted(e, w); /* the limit rose: waiters go */
	call_slot_leave(e, b);

	if (r->ok) {
		struct validate_result *vr = &r->vr;
		enum source src = c->step == STEP_BACKUP ? SOURCE_BACKUP : SOURCE_LLM;

		if (vr->review && !c->xcheck)
			c->review_reason = "low_confidence";
		else if (!c->xcheck && c->rc->review.sample_rate > 0 &&
			 rng_double(&e->rng) < c->rc->review.sample_rate)
			c->review_reason = "sampled";
		/* a tool-call answer is a turn of a conversation, not a result to reuse */
		if (c->rc->cache.enabled && vr->result && !c->xcheck && r->reply.ntool_calls == 0)
			cache_put(e->cache, c->rc->name, call_input_text(c), vr->result,
				  vr->has_confidence, vr->confidence, clock_wall_ms(), e->store);
		c->ans.prompt_tokens = r->reply.prompt_tokens;
		c->ans.completion_tokens = r->reply.completion_tokens;
		/* off the caller's path: rules shadow, cross-check (the hook
		 * daemon.c sets: call_shadow_after_answer) */
		if (!c->xcheck && r->reply.ntool_calls == 0 && e->call_after_answer != NULL)
			e->call_after_answer(c, vr->result, vr->has_confidence, vr->confidence,
					     src == SOURCE_LLM);
		c->ans.upstream = r->reply.doc;
		r->reply.doc = NULL;
		/* the validated result becomes the answer's (no copy) */
		call_answer_own(c, 200, src, b->cfg->name, vr->result, r->reply.content,
				vr->has_confidence, vr->confidence);
		vr->result = NULL;
		if (a->is_hedge)
			c->rt->hedges[HEDGE_WON]++;
		call_hedge_cancel_others(c);
		goto out;
	}
	if (a->is_hedge)
		c->rt->hedges[HEDGE_FAILED]++;
	if (c->answered || c->natt > 0)
		goto out; /* another attempt in flight may still answer */
	engine_timer_cancel(e, &c->t_hedge);
	rd = retry_decide(&c->rc->retry, o, c->step_retries, r->retry_after_ms,
			  budget_attempt_room(&c->budget, now_ms), c->rc->min_attempt_ms,
			  &c->rt->rbudget, now_ms, &e->rng, &delay);
	if (rd == 0 && !c->deadline_passed) {
		c->step_retries++;
		c->retries++;
		c->avoid_backend = a->bidx;
		engine_timer_arm(e, &c->t_backoff, now_us + delay * 1000);
		goto out;
	}
	if (rd == RETRY_E_BUDGET)
		c->rt->retries_denied++;
	call_fall(c, outcome_name(o));
	call_step(c);
out:
	return c->answered;
}

/* A bulkhead slot was handed to us, or the queue wait ran out. */
static void
queue_fire(struct timer *t, void *arg)
{
	struct call *c = arg;
	struct backend_rt *b;
	int64_t now_us = clock_mono_us();
	int is_probe = 0;

	if (c->queued_bidx < 0)
		return;
	b = &c->e->backends[c->queued_bidx];
	if (c->bw.queued) {
		/* Still waiting: the wait ran out. */
		bulkhead_cancel(&b->bulkhead, &c->bw);
		c->queued_bidx = -1;
		call_fall(c, gate_full_reason(&b->gate));
		call_step(c);
		return;
	}
	c->queued_bidx = -1;
	if (breaker_allow(&b->breaker, now_us / 1000, &is_probe) != 0) {
		call_slot_leave(c->e, b);
		engine_breaker_events(c->e, b);
		call_fall(c, "breaker_open");
		call_step(c);
		return;
	}
	engine_breaker_events(c->e, b);
	if (call_attempt_start(c, (int)(b - c->e->backends), is_probe, c->queued_canary,
			       c->queued_target, now_us) != NULL)
		call_hedge_arm(c, now_us);
}

static void
deadline_fire(struct timer *t, void *arg)
{
	struct call *c = arg;

	c->deadline_passed = 1;
	engine_timer_cancel(c->e, &c->t_hedge);
	if (c->natt > 0) {
		/* the last one to end decides what follows */
		while (c->natt > 0) {
			struct attempt *a = c->att[c->natt - 1];

			attempt_stop(a, a->got_headers ? OUTCOME_TOTAL_TIMEOUT
						       : OUTCOME_FIRST_BYTE_TIMEOUT);
		}
		return;
	}
	if (c->queued_bidx >= 0) {
		bulkhead_cancel(&c->e->backends[c->queued_bidx].bulkhead, &c->bw);
		c->queued_bidx = -1;
	}
	engine_timer_cancel(c->e, &c->t_backoff);
	engine_timer_cancel(c->e, &c->t_queue);
	if (!c->answered) {
		if (c->step <= STEP_BACKUP)
			call_fall(c, "budget_exhausted");
		call_step(c);
	}
}

static void
call_remap(struct call *c, struct route_rt *routes, const int *rmap, struct backend_rt *backends,
	   const int *bmap)
{
	int i;

	c->route = rmap[c->route];
	c->rt = &routes[c->route];
	for (i = 0; i < c->natt; i++) {
		c->att[i]->bidx = bmap[c->att[i]->bidx];
		c->att[i]->b = &backends[c->att[i]->bidx];
	}
	if (c->queued_bidx >= 0)
		c->queued_bidx = bmap[c->queued_bidx];
	if (c->avoid_backend >= 0)
		c->avoid_backend = bmap[c->avoid_backend];
}

void
call_remap_all(struct engine *e, struct route_rt *routes, const int *rmap,
	       struct backend_rt *backends, const int *bmap)
{
	struct call *c;

	for (c = e->calls; c; c = c->next)
		call_remap(c, routes, rmap, backends, bmap);
	/* answered calls waiting to be reaped still give their route back (call_free) */
	for (c = e->closing; c; c = c->close_next)
		call_remap(c, routes, rmap, backends, bmap);
}

/* Try to run one model step (primary or backup). 0: an attempt (or a queue wait) is under way. */
static int
model_step(struct call *c, const char **why)
{
	struct engine *e = c->e;
	const struct route_cfg *rc = c->rc;
	const struct target_cfg *targets =
		c->step == STEP_PRIMARY ? rc->targets : rc->backup.targets;
	int64_t now_us = clock_mono_us(), now_ms = now_us / 1000, room;
	int picked, bidx, is_probe = 0, canary;
	struct backend_rt *b;

	room = budget_attempt_room(&c->budget, now_ms);
	if (c->deadline_passed || room < rc->min_attempt_ms) {
		*why = WIRE_REASON_BUDGET_EXHAUSTED;
		return 1;
	}
	if (call_pick_target(c, c->avoid_backend, &bidx, &picked, why) != 0)
		return 1;
	canary = c->force_bidx >= 0 ? 0 : targets[picked].canary;
	b = &e->backends[bidx];
	if (bulkhead_enter(&b->bulkhead) != 0) {
		int64_t wait = MIN((int64_t)b->cfg->queue_ms, room - rc->min_attempt_ms);

		if (wait <= 0) {
			*why = gate_full_reason(&b->gate);
			return 1;
		}
		c->bw.arg = c;
		c->queued_bidx = bidx;
		c->queued_canary = canary;
		c->queued_target = call_target_index(c, picked);
		bulkhead_enqueue(&b->bulkhead, &c->bw);
		engine_timer_arm(e, &c->t_queue, now_us + wait * 1000);
		return 0;
	}
	if (breaker_allow(&b->breaker, now_ms, &is_probe) != 0) {
		call_slot_leave(e, b);
		engine_breaker_events(e, b);
		*why = WIRE_REASON_BREAKER_OPEN;
		return 1;
	}
	engine_breaker_events(e, b);
	if (call_attempt_start(c, bidx, is_probe, canary, call_target_index(c, picked), now_us) !=
	    NULL)
		call_hedge_arm(c, now_us);
	return 0;
}

/* Walk the ladder from c->step until something is under way or answered. */
static void
call_step(struct call *c)
{
	const struct route_cfg *rc = c->rc;
	struct engine *e = c->e;
	const char *why = NULL;

	while (!c->answered) {
		if (c->xcheck && c->step > STEP_PRIMARY) {
			/* a cross-check only asks its one backend: no verdict */
			call_answer(c, 503, SOURCE_NONE, NULL, NULL, NULL, 0, 0);
			return;
		}
		switch (c->step) {
		case STEP_PRIMARY:
		case STEP_BACKUP:
			if (model_step(c, &why) == 0)
				return;
			call_fall(c, why);
			break;
		case STEP_RULES: {
			struct rules_hit hit;
			const char *in = call_input_text(c);

			if (rules_eval(&rc->rules, in, strlen(in), &hit) == 0) {
				call_answer(c, 200, SOURCE_RULES, NULL, hit.result, NULL, 1,
					    hit.confidence);
				return;
			}
			call_fall(c, "rules_no_match");
			break;
		}
		case STEP_CACHE: {
			const cJSON *res = NULL;
			int has_conf = 0;
			double conf = 0;

			if (cache_get(e->cache, rc->name, call_input_text(c), rc->cache.ttl_s,
				      clock_wall_ms(), &res, &has_conf, &conf) == 0) {
				call_answer(c, 200, SOURCE_CACHE, NULL, res, NULL, has_conf, conf);
				return;
			}
			call_fall(c, "cache_miss");
			break;
		}
		case STEP_PRESET:
			call_answer(c, 200, SOURCE_PRESET, NULL, rc->preset.result, rc->preset.text,
				    0, 0);
			return;
		default:
			if (rc->on_exhausted == ON_EXHAUSTED_MANUAL) {
				c->review_reason = "manual";
				call_answer(c, 200, SOURCE_MANUAL, NULL, NULL, NULL, 0, 0);
			} else {
				call_answer(c, 503, SOURCE_NONE, NULL, NULL, NULL, 0, 0);
			}
			return;
		}
	}
}

char *
call_gen_request_id(struct engine *e)
{
	/* UUIDv7-shaped: 48 bits of wall-clock milliseconds, then 64 random
	 * bits. Time first, so that the unique (route, request_id) index of
	 * the calls table grows at its right edge: with random ids every
	 * insert lands on a random leaf page, and the writer rereads and
	 * rewrites about one page per call once the index outgrows the
	 * cache. */
	uint64_t ms = (uint64_t)clock_wall_ms() & 0xffffffffffffULL, b = rng_u64(&e->rng);

	return xasprintf("fb-%08llx-%04llx-%04llx-%012llx", (unsigned long long)(ms >> 16),
			 (unsigned long long)(ms & 0xffff), (unsigned long long)(b >> 48),
			 (unsigned long long)(b & 0xffffffffffffULL));
}

void
call_start(struct engine *e, struct call_req *cr, call_done_fn done, void *arg)
{
	struct call *c = xcalloc(1, sizeof *c);
	int64_t now_us = clock_mono_us(), now_ms;
	const char *why;
	enum step first;

	c->e = e;
	c->req = *cr;
	memset(cr, 0, sizeof *cr);
	c->request_id = c->req.request_id ? xstrdup(c->req.request_id) : call_gen_request_id(e);
	c->route = c->req.route;
	c->rt = &e->routes[c->route];
	c->rc = c->rt->cfg;
	c->hold = engine_hold_get(e);
	c->rt->live_calls++;
	c->id = c->req.xcheck_backend ? c->req.xcheck_call_id : e->next_call_id++;
	c->done = done;
	c->done_arg = arg;
	c->avoid_backend = -1;
	c->queued_bidx = -1;
	c->force_bidx = c->req.xcheck_backend - 1;
	c->xcheck = c->req.xcheck_backend > 0;
	c->ans.prompt_tokens = -1;
	c->ans.completion_tokens = -1;
	c->start_us = c->req.recv_us ? c->req.recv_us : now_us;
	c->started_wall = clock_wall_ms() - (now_us - c->start_us) / 1000;
	now_ms = c->start_us / 1000;
	budget_init(&c->budget, now_ms, c->rc->budget_ms, c->req.caller_budget_ms);
	timer_init(&c->t_backoff, "backoff", backoff_fire, c);
	timer_init(&c->t_deadline, "deadline", deadline_fire, c);
	timer_init(&c->t_queue, "bulkhead_queue", queue_fire, c);
	call_hedge_init(c);
	c->own = (struct attempt_owner){
		.e = e,
		.rc = c->rc,
		.call_id = c->id,
		.request_id = c->request_id,
		.budget = &c->budget,
		.attempts = &c->attempts,
		.input = c->req.input,
		.messages = c->req.messages,
		.params = &c->req.params,
		.on_delta = c->req.on_delta,
		.delta_arg = c->req.delta_arg,
		.may_commit = call_hedge_may_commit,
		.done = call_attempt_done,
		.arg = c,
		.trace = &c->req.trace,
		.tracestate = c->req.tracestate,
	};
	{
		const char *in = call_input_text(c);

		c->est_tokens = budget_estimate_tokens(in, strlen(in)) +
				upstream_max_tokens(c->rc, &c->req.params);
	}
	if (!c->req.has_trace)
		call_req_trace(e, &c->req, NULL, NULL);
	if (c->xcheck)
		c->req.trace.flags &= (uint8_t)~1; /* a shadow's spans would have no parent */
	tracectx_format(&c->req.trace, c->traceparent, sizeof c->traceparent);
	c->ans.traceparent = c->traceparent;
	if (!c->xcheck && tracectx_sampled(&c->req.trace) && trace_enabled()) {
		trace_span_begin(&c->span, "fusebox.call", TRACE_KIND_SERVER, c->req.trace.trace_id,
				 c->req.trace.span_id, c->req.trace_parent,
				 call_wall_ns(c->started_wall));
		trace_attr_str(&c->span, "gen_ai.operation.name", "chat");
		trace_attr_str(&c->span, "fusebox.route", c->rc->name);
		trace_attr_str(&c->span, "fusebox.request_id", c->request_id);
		trace_attr_int(&c->span, "fusebox.budget_ms", c->budget.budget_ms);
	}
	c->next = e->calls;
	if (e->calls)
		e->calls->prev = c;
	e->calls = c;
	e->inflight++;
	e->counters.calls++;
	c->rt->calls++;
	retry_budget_record_call(&c->rt->rbudget, now_us / 1000);
	engine_timer_arm(e, &c->t_deadline, c->budget.deadline_ms * 1000);

	c->level = engine_route_level(e, c->route);
	c->auto_start = engine_route_forced(e, c->route) < 0;
	/* Where the walk starts: the call-site gate, then the route's level.
	 * Level 3 (async queue) is handled by the API before a call starts;
	 * a call that gets here at level 3 walks from the rule engine. A
	 * cross-check starts at STEP_PRIMARY (its step from xcalloc). */
	if (!c->xcheck) {
		first = ladder_step_first(c->rc, c->req.allow_llm, c->level);
		why = !c->req.allow_llm ? "llm_disallowed"
		      : !c->auto_start	? "forced_level"
					: "auto_level";
		if (first != STEP_PRIMARY)
			snprintf(c->reason, sizeof c->reason, "%s", why);
		/* One degradation row for the rungs skipped. */
		call_set_step(c, first, c->reason);
	}
	call_step(c);
}

struct engine *
call_engine(const struct call *c)
{
	return c->e;
}
