/*
 * call: the guarded call.
 *
 * A call walks the ladder from the step its level selects. Model steps
 * (primary, backup) pick a backend (router: weights × health, breakers
 * admitting, bulkheads with room, avoiding the backend that just failed),
 * take a bulkhead slot and breaker permission, and run one attempt at a
 * time as a curl easy handle on the engine's multi. An attempt ends by
 * itself (curl reports the transfer done) or by one of our timers (first
 * byte, total); either way attempt_end() classifies it, records breaker,
 * health and the attempts row, validates a 200's content, and then the
 * call answers, retries (backoff timer) or falls to the next rung. Every
 * timeout is clipped to the call's one budget, and a call deadline timer
 * is the last word: the answer leaves by the deadline whatever the
 * upstream does.
 *
 * Invariants: at most one attempt per call is in flight; c->att is it.
 * A bulkhead slot and a breaker permit are held exactly while c->att is
 * set. done() runs once (c->answered); afterwards the call only waits to
 * be reaped.
 */
#include "call.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "budget.h"
#include "jsonutil.h"
#include "cache.h"
#include "canary.h"
#include "clock.h"
#include "engine.h"
#include "idem.h"
#include "log.h"
#include "obs.h"
#include "review_q.h"
#include "router.h"
#include "rules.h"
#include "upstream.h"
#include "util.h"
#include "validate.h"

/*
 * Time kept back from the last attempt to answer from the rungs below
 * (DESIGN.md allows up to 50 ms): the rules, the cache and rendering and
 * writing the answer fit in it. When many calls reach their deadline
 * together (a burst against a hanging upstream), the crowd (budget.h)
 * adds the time the engine needs to answer the calls due before this one,
 * up to MAX_RESERVE_MS in all: their cuts spread out ahead of the deadline
 * instead of piling up on it.
 */
#define ANSWER_RESERVE_MS 10
#define MAX_RESERVE_MS 50
/*
 * A cut-and-answer is measured from the timer to the answer rendered; its
 * write happens in the loop's next HTTP pass, on the same thread, and costs
 * about as much again: the crowd counts twice the measured time.
 */
#define CROWD_COST_FACTOR 2
#define MAX_TARGETS 64

struct attempt {
	struct engine_transfer xfer; /* first: CURLOPT_PRIVATE points here */
	struct call *call;
	struct backend_rt *b;
	int bidx;
	int64_t id;
	int attempt_no;
	CURL *easy;
	struct curl_slist *hdrs; /* one block (attempt_headers) */
	size_t hdrs_size;
	char *body;
	struct buf resp;
	int body_too_big;
	long status;
	int got_headers;
	int json_type;
	char retry_after[64];
	int is_probe;
	int canary; /* the target picked was a canary */
	int target; /* index among the route's primary targets (canary guard); -1 otherwise */
	int wire_sends; /* requests libcurl put on the wire (prereq callback) */
	struct attempt_timeouts to;
	int64_t crowd_ms; /* the deadline this attempt is counted under in e->crowd; 0: not counted */
	int64_t started_us;
	int64_t started_wall;
	int64_t first_byte_us;
	int64_t input_tokens;
	char errbuf[CURL_ERROR_SIZE];
	struct timer t_first_byte; /* streaming: first token, then the idle gap */
	struct timer t_total;
	int streaming;		   /* SSE requested from the upstream */
	int sse_type;		   /* the response is text/event-stream */
	struct sse_parser sse;
	struct buf text;	   /* streamed content so far */
	int committed;		   /* a delta went to the caller */
	int64_t prompt_tokens, completion_tokens;
};

struct call {
	struct engine *e;
	struct call *prev, *next; /* engine's live list */
	struct call *close_next;
	struct cfg_hold *hold; /* the configuration this call runs on */
	int64_t id;
	char *request_id;
	struct call_req req;
	int route;
	const struct route_cfg *rc;
	struct route_rt *rt;
	struct budget budget;
	int64_t start_us;
	int64_t started_wall;
	int level;
	enum step step;
	int step_retries;
	int attempts;
	int retries;
	int avoid_backend;
	char reason[64]; /* root cause: why the first step tried was left */
	struct attempt *att;
	struct timer t_backoff;
	struct timer t_deadline;
	struct timer t_queue;
	struct bulkhead_waiter bw;
	int queued_bidx;     /* -1 when not waiting for a bulkhead slot */
	int queued_canary;
	int queued_target;
	int deadline_passed;
	int timeouts;	     /* attempts that ended in a timeout */
	int format_violations; /* attempts that ended validation_format */
	int start_vfail;     /* an attempt of the starting model step failed validation */
	int auto_start;      /* the call started at the route's auto level (not forced) */
	int answered;
	int closing;
	char *last_raw;      /* last model output, for review items */
	const char *review_reason; /* "low_confidence", "manual": enqueue with the answer */
	int xcheck;		   /* a cross-check shadow call: off the caller's path */
	int force_bidx;		   /* -1, or the only backend this call may use */
	struct call_answer ans;
	call_done_fn done;
	void *done_arg;
};

static void call_step(struct call *c);
static void attempt_end(struct attempt *a, enum outcome forced, CURLcode code);
static void attempt_transfer_done(struct engine *e, struct engine_transfer *t, CURLcode code);

void
call_req_clear(struct call_req *cr)
{
	free(cr->request_id);
	free(cr->input);
	cJSON_Delete(cr->messages);
	free(cr->callback_url);
	cJSON_Delete(cr->metadata);
	cJSON_Delete((cJSON *)cr->params.response_format);
	memset(cr, 0, sizeof *cr);
}

static int
step_configured(const struct route_cfg *rc, enum step s)
{
	switch (s) {
	case STEP_PRIMARY:
		return rc->ntargets > 0;
	case STEP_BACKUP:
		return rc->backup.enabled && rc->backup.ntargets > 0;
	case STEP_RULES:
		return rc->rules.enabled;
	case STEP_CACHE:
		return rc->cache.enabled;
	case STEP_PRESET:
		return rc->preset.enabled;
	default:
		return 1;
	}
}

static enum step
next_configured(const struct route_cfg *rc, enum step s)
{
	do
		s++;
	while (s < STEP_EXHAUSTED && !step_configured(rc, s));
	return s;
}

static const char *
input_text(const struct call *c)
{
	const cJSON *m;

	if (c->req.input)
		return c->req.input;
	/* messages: the last user message stands for the input (rules, cache). */
	if (c->req.messages) {
		const char *last = "";

		cJSON_ArrayForEach(m, c->req.messages)
		{
			const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
			const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");

			if (cJSON_IsString(role) && cJSON_IsString(content) &&
			    strcmp(role->valuestring, "user") == 0)
				last = content->valuestring;
		}
		return last;
	}
	return "";
}

/* The one place a call's ladder position changes: logs the degradation row. */
static void
call_fall(struct call *c, const char *reason)
{
	enum step to = next_configured(c->rc, c->step);
	int64_t now_wall = clock_wall_ms();

	if (c->reason[0] == '\0')
		snprintf(c->reason, sizeof c->reason, "%s", reason);
	if (!c->xcheck) {
		struct store_val v[] = { SVI(c->e->next_degradation_id++), SVI(c->id),
					 SVT(c->rc->name), SVT(step_name(c->step)), SVT(step_name(to)),
					 SVT(reason), SVI(now_wall) };

		store_put(c->e->store, STORE_DEGRADATION_INSERT, v, (int)ARRAY_SIZE(v));
	}
	log_debug("call", "%s %s: %s -> %s (%s)", c->rc->name, c->request_id, step_name(c->step),
		  step_name(to), reason);
	if (c->route < c->e->nroutes && !c->xcheck)
		obs_degradation(c->e->obs, c->route, reason);
	c->step = to;
	c->step_retries = 0;
	c->avoid_backend = -1;
}

static void
log_call_row(struct call *c)
{
	struct call_answer *a = &c->ans;
	const char *result = a->result_json;
	const char *response = a->json;
	const struct log_cfg *lc = &c->e->cfg->log;
	const char *input = lc->inputs ? input_text(c) : NULL;
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
	};

	store_put(c->e->store, STORE_CALL_INSERT, v, (int)ARRAY_SIZE(v));
}

/*
 * One review item (pending). fn (NULL: nobody waits; a failure is logged)
 * hears once it is committed. 0 when under way.
 */
static int
review_insert(struct engine *e, const struct route_cfg *rc, const char *request_id, int64_t call_id,
	      const char *reason, const char *input, const char *raw, const cJSON *result,
	      int has_conf, double conf, const cJSON *alt_result, const char *callback_url,
	      review_q_done_fn fn, void *arg)
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
		log_error("call", "%s %s: review enqueue failed: %s", c->rc->name, c->request_id,
			  cause ? cause : "?");
	c->ans.review = rc == 0;
	call_answer_finish(c);
	(void)e;
	(void)id;
}

/* ---- off the caller's path: rules shadow and cross-check (DESIGN.md step 9) ---- */

/* Every key of sub has an equal value in obj. */
static int
json_subset_equal(const cJSON *sub, const cJSON *obj)
{
	const cJSON *k;

	if (!cJSON_IsObject(sub) || !cJSON_IsObject(obj))
		return cJSON_Compare(sub, obj, 1);
	cJSON_ArrayForEach(k, sub)
	{
		if (!cJSON_Compare(k, cJSON_GetObjectItemCaseSensitive(obj, k->string), 1))
			return 0;
	}
	return 1;
}

/* Sampled model answers also go through the rule engine: would the fallback have agreed? */
static void
rules_shadow(struct call *c, const cJSON *result)
{
	const struct route_cfg *rc = c->rc;
	struct rules_hit hit;
	const char *in;
	int agree;

	if (!rc->rules_shadow.enabled || !rc->rules.enabled || result == NULL || c->xcheck ||
	    rng_double(&c->e->rng) >= rc->rules_shadow.sample_rate)
		return;
	in = input_text(c);
	agree = rules_eval(&rc->rules, in, strlen(in), &hit) == 0 && json_subset_equal(hit.result, result);
	if (c->route < c->e->nroutes)
		obs_shadow(c->e->obs, c->route, agree, clock_wall_ms());
}

struct xcheck_ctx {
	char *route;
	char *request_id;
	int64_t call_id;
	char *input;
	char *raw;
	cJSON *result;
	int has_conf;
	double conf;
};

static void
xcheck_done(struct call *sc, const struct call_answer *a, void *arg)
{
	struct xcheck_ctx *x = arg;
	struct engine *e = sc->e;
	const struct route_cfg *rc = sc->rc;
	int i, agree = 1, route = engine_route_index(e, x->route);

	if (a->source == SOURCE_LLM && a->result) {
		for (i = 0; i < rc->cross_check.ncompare; i++) {
			const char *f = rc->cross_check.compare[i];
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(x->result, f);
			const cJSON *o = cJSON_GetObjectItemCaseSensitive(a->result, f);

			if (!(m == NULL && o == NULL) && !cJSON_Compare(m, o, 1))
				agree = 0;
		}
		if (route >= 0)
			obs_cross_check(e->obs, route, agree, clock_wall_ms());
		if (!agree)
			review_insert(e, rc, x->request_id, x->call_id, "cross_check_mismatch", x->input,
				      x->raw, x->result, x->has_conf, x->conf, a->result, NULL, NULL,
				      NULL);
	}
	free(x->route);
	free(x->request_id);
	free(x->input);
	free(x->raw);
	cJSON_Delete(x->result);
	free(x);
}

/* For a sample of answered calls, ask cross_check.backend the same question. */
static void
xcheck_maybe_start(struct call *c, const cJSON *result, int has_conf, double conf)
{
	const struct cross_check_cfg *cc = &c->rc->cross_check;
	struct engine *e = c->e;
	struct xcheck_ctx *x;
	struct call_req cr;
	int bidx;

	if (!cc->enabled || c->xcheck || result == NULL || e->stopping ||
	    rng_double(&e->rng) >= cc->sample_rate)
		return;
	bidx = engine_backend_index(e, cc->backend);
	if (bidx < 0)
		return;
	x = xcalloc(1, sizeof *x);
	x->route = xstrdup(c->rc->name);
	x->request_id = xstrdup(c->request_id);
	x->call_id = c->id;
	x->input = xstrdup(input_text(c));
	x->raw = c->last_raw ? xstrdup(c->last_raw) : NULL;
	x->result = cJSON_Duplicate(result, 1);
	x->has_conf = has_conf;
	x->conf = conf;
	memset(&cr, 0, sizeof cr);
	cr.route = c->route;
	cr.request_id = xasprintf("%s~xcheck", c->request_id);
	cr.input = c->req.input ? xstrdup(c->req.input) : NULL;
	cr.messages = c->req.messages ? cJSON_Duplicate(c->req.messages, 1) : NULL;
	cr.allow_llm = 1;
	cr.xcheck_backend = bidx + 1;
	cr.xcheck_call_id = c->id;
	call_start(e, &cr, xcheck_done, x);
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
	/* "review": "pending" only once the item is durable; the loop goes on meanwhile. */
	if (c->review_reason &&
	    review_insert(c->e, c->rc, c->request_id, c->id, c->review_reason, input_text(c),
			  c->last_raw, result, a->has_confidence, a->confidence, NULL,
			  c->req.callback_url, call_review_done, c) == 0)
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
	c->rt->live_calls--;
	engine_hold_put(c->e, c->hold);
	call_req_clear(&c->req);
	free(c->request_id);
	free(c->last_raw);
	cJSON_Delete(c->ans.result);
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

/* ---- attempts ---- */

/* One SSE event of a streaming attempt. */
static void
on_sse_event(void *arg, const char *payload, size_t len)
{
	struct attempt *a = arg;
	struct call *c = a->call;
	char *delta = NULL;
	int finish = 0;
	size_t n;

	if (upstream_chunk_delta(payload, len, &delta, &finish) != 0)
		return;
	n = strlen(delta);
	if (n > 0 && buf_append(&a->text, delta, n) == 0) {
		if (!a->committed) {
			a->committed = 1;
			a->first_byte_us = clock_mono_us();
		}
		c->req.on_delta(c->req.delta_arg, delta, n);
		/* the idle gap between chunks is bounded like the first token */
		engine_timer_arm(c->e, &a->t_first_byte,
				 clock_mono_us() + a->to.first_byte_ms * 1000);
	}
	free(delta);
}

static size_t
on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct attempt *a = userdata;
	size_t n = size * nmemb;

	if (a->streaming && a->sse_type && a->status == 200) {
		if (sse_feed(&a->sse, ptr, n, on_sse_event, a) < 0) {
			a->body_too_big = 1;
			return 0;
		}
		return n;
	}
	if (a->first_byte_us == 0)
		a->first_byte_us = clock_mono_us();
	if (buf_append(&a->resp, ptr, n) < 0) {
		a->body_too_big = 1;
		return 0; /* CURLE_WRITE_ERROR */
	}
	return n;
}

static size_t
on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct attempt *a = userdata;
	size_t n = size * nmemb;

	if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0) {
		const char *sp = memchr(ptr, ' ', n);

		a->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		a->retry_after[0] = '\0';
		a->json_type = 1;
	} else if (n >= 12 && strncasecmp(ptr, "Retry-After:", 12) == 0) {
		size_t off = 12, len;

		while (off < n && (ptr[off] == ' ' || ptr[off] == '\t'))
			off++;
		len = n - off;
		while (len && (ptr[off + len - 1] == '\r' || ptr[off + len - 1] == '\n'))
			len--;
		len = MIN(len, sizeof a->retry_after - 1);
		memcpy(a->retry_after, ptr + off, len);
		a->retry_after[len] = '\0';
	} else if (n >= 13 && strncasecmp(ptr, "Content-Type:", 13) == 0) {
		char ct[96];
		size_t len = MIN(n - 13, sizeof ct - 1);

		memcpy(ct, ptr + 13, len);
		ct[len] = '\0';
		a->sse_type = strcasestr(ct, "event-stream") != NULL;
		a->json_type = strcasestr(ct, "json") != NULL || (a->streaming && a->sse_type);
	} else if ((n == 2 && ptr[0] == '\r') || (n == 1 && ptr[0] == '\n')) {
		/* End of a header block; 1xx interim responses don't count. */
		if (a->status >= 200 && !a->got_headers) {
			a->got_headers = 1;
			/* A stream's first byte is its first content chunk. */
			if (!(a->streaming && a->sse_type && a->status == 200)) {
				a->first_byte_us = clock_mono_us();
				engine_timer_cancel(a->call->e, &a->t_first_byte);
			}
		}
	}
	return n;
}

/* Called each time libcurl is about to send the request on a connection. */
static int
on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
	  int conn_local_port)
{
	struct attempt *a = clientp;

	a->wire_sends++;
	return CURL_PREREQFUNC_OK;
}

/*
 * End a by its timer. When that cut was the one before the deadline and
 * the call answered, the time it took teaches the crowd what an answer
 * costs on this machine now.
 */
static void
attempt_cut(struct attempt *a, enum outcome o)
{
	struct call *c = a->call; /* lives until call_reap() */
	struct engine *e = c->e;
	int crowd = a->crowd_ms != 0;
	int64_t t0 = clock_mono_us();

	attempt_end(a, o, CURLE_OK);
	if (crowd && c->answered)
		budget_crowd_cost(e->crowd, (clock_mono_us() - t0) * 1000 * CROWD_COST_FACTOR);
}

static void
attempt_timer_first_byte(struct timer *t, void *arg)
{
	struct attempt *a = arg;

	if (a->committed)
		attempt_cut(a, OUTCOME_TOTAL_TIMEOUT); /* idle gap in a stream */
	else if (!a->got_headers || (a->streaming && a->sse_type))
		attempt_cut(a, OUTCOME_FIRST_BYTE_TIMEOUT);
}

static void
attempt_timer_total(struct timer *t, void *arg)
{
	struct attempt *a = arg;

	attempt_cut(a, a->got_headers && (a->committed || !a->streaming) ? OUTCOME_TOTAL_TIMEOUT
									 : OUTCOME_FIRST_BYTE_TIMEOUT);
}

/* One header line of an attempt, NUL-terminated, into t (attempt_headers). */
static void
header_line(struct buf *t, int *n, const char *name, const char *value)
{
	buf_puts(t, name);
	buf_puts(t, value);
	buf_append(t, "", 1);
	(*n)++;
}

/*
 * The attempt's request headers: the curl_slist nodes and their text in
 * one block (libcurl only reads the list; curl_slist_append() cost two
 * allocations a line, eight lines an attempt). The block holds the API
 * key: attempt_headers_free() wipes it. *size: the block's size.
 */
static struct curl_slist *
attempt_headers(struct attempt *a, size_t *size)
{
	struct call *c = a->call;
	const struct backend_cfg *bc = a->b->cfg;
	struct curl_slist *nodes;
	struct buf t;
	char num[24], *text;
	int i, n = 0;

	buf_init(&t, SIZE_MAX / 2);
	header_line(&t, &n, "Content-Type: application/json", "");
	header_line(&t, &n, a->streaming ? "Accept: text/event-stream" : "Accept: application/json",
		    "");
	header_line(&t, &n, "Expect:", ""); /* no 100-continue round trip */
	if (a->b->api_key)
		header_line(&t, &n, "Authorization: Bearer ", a->b->api_key);
	for (i = 0; i < bc->nheaders; i++) {
		buf_puts(&t, bc->headers[i].name);
		header_line(&t, &n, ": ", bc->headers[i].value);
	}
	header_line(&t, &n, "X-Request-ID: ", c->request_id);
	snprintf(num, sizeof num, "%d", a->attempt_no);
	header_line(&t, &n, "X-Fusebox-Attempt: ", num);
	snprintf(num, sizeof num, "%lld", (long long)budget_remaining(&c->budget, clock_mono_ms()));
	header_line(&t, &n, "X-Max-Wait: ", num);

	*size = (size_t)n * sizeof *nodes + t.len;
	nodes = xmalloc(*size);
	text = (char *)(nodes + n);
	memcpy(text, t.data, t.len);
	for (i = 0; i < n; i++) {
		nodes[i].data = text;
		nodes[i].next = i + 1 < n ? &nodes[i + 1] : NULL;
		text += strlen(text) + 1;
	}
	explicit_bzero(t.data, t.len);
	buf_free(&t);
	return nodes;
}

static void
attempt_headers_free(struct curl_slist *h, size_t size)
{
	if (h == NULL)
		return;
	explicit_bzero(h, size);
	free(h);
}

static int64_t
attempt_total_ms(struct call *c, struct backend_rt *b, int64_t input_tokens)
{
	const struct timeout_cfg *tc = &c->rc->timeout;
	int64_t p;

	if (tc->mode != TIMEOUT_DYNAMIC)
		return b->cfg->total_ms;
	p = health_percentile(&b->health, clock_mono_ms(), tc->window_s, tc->percentile, 20);
	return budget_dynamic_timeout(tc, p, input_tokens);
}

/*
 * The connection side of an attempt: HTTP version, connection sharing,
 * TLS trust. "1.1": a connection per attempt in flight. "2": attempts are
 * h2 streams on a few shared connections (ALPN on https, prior knowledge
 * on http); PIPEWAIT makes a new attempt wait for a connection being set
 * up rather than open its own.
 *
 * h2 attempts keep their connections in a pool of their own (a curl share
 * holding a connection cache) rather than the multi handle's: libcurl 7.88
 * keeps one "can multiplex" flag per host:port, so h1 and h2 connections
 * to one server in one pool (two backends on one provider, or a reload
 * that changed http_version) make it queue attempts behind busy HTTP/1.1
 * connections until they time out, and stop multiplexing. The share
 * (e->h2_share) is used on the engine thread only (no lock callbacks).
 *
 * libcurl before 8.0.0 breaks a reused prior-knowledge connection (every
 * stream after the first fails with "Error in the HTTP2 framing layer",
 * curl issue #10634): there, h2 on an http url gets a fresh connection per
 * attempt, closed after it.
 */
static void
attempt_set_transport(struct engine *e, CURL *h, const struct backend_rt *b)
{
	const struct backend_cfg *bc = b->cfg;
	int tls = strncmp(bc->url, "https://", 8) == 0; /* the loader allows lower case only */

	if (bc->http_version == HTTP_VERSION_1_1) {
		curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		/* libcurl 7.88 scans every connection to the host for one to
		 * reuse: with hundreds in flight that scan is O(n) per
		 * attempt; a busy backend gets a fresh connection instead. */
		if (b->bulkhead.inflight > 64)
			curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_SHARE, e->h2_share);
		curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
				 tls ? (long)CURL_HTTP_VERSION_2TLS
				     : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
		if (tls || e->h2c_reuse) {
			curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
		} else {
			curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
			curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
		}
	}
	if (bc->tls_ca_file != NULL) {
		curl_easy_setopt(h, CURLOPT_CAINFO, bc->tls_ca_file);
		curl_easy_setopt(h, CURLOPT_CAPATH, (char *)NULL);
	}
}

/* Start one attempt on backend bidx; the bulkhead slot and breaker permit are held. */
static void
attempt_start(struct call *c, int bidx, int is_probe, int canary, int target)
{
	struct engine *e = c->e;
	struct backend_rt *b = &e->backends[bidx];
	struct attempt *a = xcalloc(1, sizeof *a);
	int64_t now_ms = clock_mono_ms(), total;
	CURL *h;

	a->call = c;
	a->b = b;
	a->bidx = bidx;
	a->is_probe = is_probe;
	a->canary = canary;
	a->target = target;
	a->id = e->next_attempt_id++;
	a->attempt_no = ++c->attempts;
	a->started_us = clock_mono_us();
	a->started_wall = clock_wall_ms();
	buf_init(&a->resp, (size_t)b->cfg->max_response_bytes);
	timer_init(&a->t_first_byte, "first_byte", attempt_timer_first_byte, a);
	timer_init(&a->t_total, "total", attempt_timer_total, a);
	a->streaming = c->req.on_delta != NULL;
	sse_init(&a->sse);
	buf_init(&a->text, (size_t)b->cfg->max_response_bytes);
	{
		struct upstream_params p = c->req.params;

		p.stream = a->streaming;
		a->body = upstream_build_body_ex(c->rc, b->cfg, c->step == STEP_BACKUP, c->req.input,
						 c->req.messages, &p, &a->input_tokens);
	}
	total = attempt_total_ms(c, b, a->input_tokens);
	{
		int reserve = ANSWER_RESERVE_MS +
			      budget_crowd_extra_ms(e->crowd, c->budget.deadline_ms,
						    MAX_RESERVE_MS - ANSWER_RESERVE_MS);

		/* A crowd never takes the attempt itself away (model_step
		 * checked the plain reserve): then it gets that one. */
		if (budget_attempt_timeouts(&c->budget, now_ms, b->cfg->connect_ms,
					    b->cfg->first_byte_ms, (int)MIN(total, INT32_MAX), reserve,
					    1, &a->to) != 0) {
			reserve = ANSWER_RESERVE_MS;
			budget_attempt_timeouts(&c->budget, now_ms, b->cfg->connect_ms,
						b->cfg->first_byte_ms, (int)MIN(total, INT32_MAX),
						reserve, 1, &a->to);
		}
		/* Runs to the cut before the deadline: one of the crowd. */
		if (a->to.total_ms >= budget_remaining(&c->budget, now_ms) - reserve) {
			a->crowd_ms = c->budget.deadline_ms;
			budget_crowd_add(e->crowd, a->crowd_ms);
		}
	}
	a->hdrs = attempt_headers(a, &a->hdrs_size);
	c->att = a;
	b->attempts++;

	h = engine_easy_get(e);
	a->easy = h;
	curl_easy_setopt(h, CURLOPT_URL, b->cfg->url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, a->body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(a->body));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, a->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(h, CURLOPT_PREREQDATA, a);
	a->xfer.done = attempt_transfer_done;
	curl_easy_setopt(h, CURLOPT_PRIVATE, &a->xfer);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a->errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)a->to.connect_ms);
	/* Our timers end the attempt; curl's own total is a backstop. */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)a->to.total_ms + 50);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	/* Per attempt libcurl allocates a receive buffer (16 KiB by default)
	 * and, for h2, an upload buffer (64 KiB): held for the whole wait, so
	 * at 10,000 waiting calls they were ~800 MB of heap (mostly never
	 * touched). Answers are small JSON; 16 KiB is libcurl's upload minimum. */
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 4096L);
	curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
	attempt_set_transport(e, h, b);
	engine_timer_arm(e, &a->t_first_byte, a->started_us + a->to.first_byte_ms * 1000);
	engine_timer_arm(e, &a->t_total, a->started_us + a->to.total_ms * 1000);
	curl_multi_add_handle(e->multi, h);
}

static void
log_attempt_row(struct attempt *a, enum outcome o, int64_t connect_ms, int64_t fb_ms, int64_t total_ms,
		int64_t retry_after_ms, int64_t out_tokens, const char *raw, int64_t id, int attempt_no)
{
	struct call *c = a->call;
	int raw_max = c->e->cfg->log.raw_output_bytes;
	char *excerpt = raw ? xstrndup(raw, MIN(strlen(raw), (size_t)MAX(raw_max, 0))) : NULL;
	struct store_val v[] = {
		SVI(id),
		SVI(c->id),
		SVT(c->request_id),
		SVT(c->rc->name),
		SVT(a->b->cfg->name),
		SVI(attempt_no),
		SVI(a->started_wall),
		SVI(a->to.total_ms),
		connect_ms >= 0 ? SVI(connect_ms) : SVN,
		fb_ms >= 0 ? SVI(fb_ms) : SVN,
		SVI(total_ms),
		a->status ? SVI(a->status) : SVN,
		SVT(outcome_name(o)),
		retry_after_ms >= 0 ? SVI(retry_after_ms) : SVN,
		SVI(a->input_tokens),
		out_tokens >= 0 ? SVI(out_tokens) : SVN,
		SVT(excerpt),
	};

	store_put(c->e->store, STORE_ATTEMPT_INSERT, v, (int)ARRAY_SIZE(v));
	free(excerpt);
}

static void
log_vfail_row(struct attempt *a, const struct validate_result *vr, const char *raw)
{
	struct call *c = a->call;
	int raw_max = c->e->cfg->log.raw_output_bytes;
	char *excerpt = raw ? xstrndup(raw, MIN(strlen(raw), (size_t)MAX(raw_max, 0))) : NULL;
	struct store_val v[] = {
		SVI(c->e->next_vfail_id++), SVI(a->id),	    SVI(c->id),
		SVT(c->rc->name),	    SVT(validate_stage_name(vr->stage)),
		SVT(vr->rule),		    SVT(vr->detail), SVT(excerpt),
		SVI(clock_wall_ms()),
	};

	store_put(c->e->store, STORE_VFAIL_INSERT, v, (int)ARRAY_SIZE(v));
	free(excerpt);
}

static enum outcome
validation_outcome(int stage)
{
	switch (stage) {
	case VALIDATE_E_FORMAT:
		return OUTCOME_VALIDATION_FORMAT;
	case VALIDATE_E_SCHEMA:
		return OUTCOME_VALIDATION_SCHEMA;
	case VALIDATE_E_SEMANTIC:
		return OUTCOME_VALIDATION_SEMANTIC;
	default:
		return OUTCOME_LOW_CONFIDENCE;
	}
}

static void
backoff_fire(struct timer *t, void *arg)
{
	call_step(arg);
}

/*
 * End attempt a: by curl (forced = OUTCOME__COUNT, facts from the handle)
 * or by a timer (forced outcome). Records everything, then answers,
 * retries or falls.
 */
static void
attempt_end(struct attempt *a, enum outcome forced, CURLcode code)
{
	struct call *c = a->call;
	struct engine *e = c->e;
	struct backend_rt *b = a->b;
	int64_t now_ms = clock_mono_ms(), now_us = clock_mono_us();
	int64_t connect_us = -1, start_us = -1, total_ms, retry_after_ms = -1, delay;
	int64_t fb_ms = -1, connect_ms = -1;
	struct upstream_reply reply = { 0 };
	struct validate_result vr;
	enum outcome o = forced;
	enum breaker_verdict verdict;
	struct bulkhead_waiter *w;
	int i, rd, ok = 0;

	memset(&vr, 0, sizeof vr);
	engine_timer_cancel(e, &a->t_first_byte);
	engine_timer_cancel(e, &a->t_total);
	if (a->crowd_ms) {
		budget_crowd_remove(e->crowd, a->crowd_ms);
		a->crowd_ms = 0;
	}
	curl_easy_getinfo(a->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_getinfo(a->easy, CURLINFO_STARTTRANSFER_TIME_T, &start_us);
	if (connect_us > 0)
		connect_ms = connect_us / 1000;
	if (a->got_headers)
		fb_ms = (a->first_byte_us - a->started_us) / 1000;
	total_ms = (now_us - a->started_us) / 1000;
	curl_multi_remove_handle(e->multi, a->easy);
	c->att = NULL;

	if (forced == OUTCOME__COUNT) {
		struct upstream_facts f = {
			.code = code,
			.http_status = a->status,
			.connected = connect_us > 0 || a->status > 0,
			.got_headers = a->got_headers,
			.body_too_big = a->body_too_big,
			.json_type = a->json_type,
			.bad_framing = strcasestr(a->errbuf, "chunk") != NULL,
		};

		o = upstream_classify(&f);
	}
	if (a->retry_after[0] &&
	    retry_parse_retry_after(a->retry_after, strlen(a->retry_after), clock_wall_ms(),
				    &retry_after_ms) != 0)
		retry_after_ms = -1;
	if (a->streaming && a->committed) {
		/* Deltas went out: this attempt's answer stands, cut short or not. */
		reply.content = xstrdup(a->text.data ? a->text.data : "");
		reply.completion_tokens = -1;
		free(c->last_raw);
		c->last_raw = xstrdup(reply.content);
		if (o != OUTCOME_OK)
			snprintf(c->ans.stream_error, sizeof c->ans.stream_error, "%s", outcome_name(o));
		c->ans.streamed = 1;
		ok = 1;
	} else if (o == OUTCOME_OK && a->streaming && a->sse_type) {
		/* A stream that ended without any content. */
		reply.content = xstrdup("");
		rd = validate_output(&c->rc->output, "", 0, &vr);
		o = rd == 0 ? OUTCOME_VALIDATION_FORMAT : validation_outcome(rd);
	} else if (o == OUTCOME_OK) {
		if (upstream_parse_reply(a->resp.data ? a->resp.data : "", a->resp.len, &reply) != 0) {
			o = OUTCOME_INVALID_RESPONSE;
		} else {
			free(c->last_raw);
			c->last_raw = xstrdup(reply.content);
			rd = validate_output(&c->rc->output, reply.content, strlen(reply.content), &vr);
			if (rd == 0)
				ok = 1;
			else
				o = validation_outcome(rd);
		}
	}

	/* libcurl re-sent the request on a dead reused connection: each
	 * extra send reached the wire and is an attempt of its own. */
	for (i = 1; i < a->wire_sends; i++) {
		e->counters.wire_resends++;
		log_attempt_row(a, OUTCOME_RESET, -1, -1, 0, -1, -1, NULL, a->id, a->attempt_no);
		a->id = e->next_attempt_id++;
		a->attempt_no = ++c->attempts;
	}
	log_attempt_row(a, o, connect_ms, fb_ms, total_ms, retry_after_ms, reply.completion_tokens,
			reply.content ? reply.content : (o != OUTCOME_OK && a->resp.data ? a->resp.data : NULL),
			a->id, a->attempt_no);
	if (outcome_is_timeout(o))
		c->timeouts++;
	if (o == OUTCOME_VALIDATION_FORMAT)
		c->format_violations++;
	{
		struct attempt_obs ao = { .route = c->route, .backend = a->bidx, .outcome = o,
					  .duration_ms = total_ms, .canary = a->canary };

		if (c->route < e->nroutes && a->bidx < e->nbackends)
			obs_attempt(e->obs, &ao);
	}
	if (outcome_is_validation(o)) {
		log_vfail_row(a, &vr, reply.content);
		if (c->route < e->nroutes)
			obs_validation_failure(e->obs, c->route, validate_stage_name(vr.stage));
		if (c->step == (c->level == 1 ? STEP_BACKUP : STEP_PRIMARY))
			c->start_vfail = 1;
	}

	verdict = breaker_classify(&b->cfg->breaker, o);
	/* the canary guard counts transport and validation failures */
	if (a->target >= 0 && c->rt->canary && c->rt->cfg == c->rc)
		canary_record(&c->rt->canary[a->target], now_ms,
			      verdict == BREAKER_FAILURE || outcome_is_validation(o));
	breaker_record(&b->breaker, now_ms, verdict, o, total_ms, a->is_probe);
	engine_breaker_events(e, b);
	health_record(&b->health, now_ms, verdict != BREAKER_FAILURE, total_ms);
	w = bulkhead_leave(&b->bulkhead);
	if (w) {
		struct call *wc = w->arg;

		/* The slot passed to a waiting call: start it on the next turn. */
		engine_timer_arm(e, &wc->t_queue, now_us);
	}

	if (ok) {
		enum source src = c->step == STEP_BACKUP ? SOURCE_BACKUP : SOURCE_LLM;

		if (vr.review && !c->xcheck)
			c->review_reason = "low_confidence";
		else if (!c->xcheck && c->rc->review.sample_rate > 0 &&
			 rng_double(&e->rng) < c->rc->review.sample_rate)
			c->review_reason = "sampled";
		if (c->rc->cache.enabled && vr.result && !c->xcheck)
			cache_put(e->cache, c->rc->name, input_text(c), vr.result, vr.has_confidence,
				  vr.confidence, clock_wall_ms(), e->store);
		c->ans.prompt_tokens = reply.prompt_tokens;
		c->ans.completion_tokens = reply.completion_tokens;
		if (!c->xcheck) {
			rules_shadow(c, vr.result);
			if (src == SOURCE_LLM)
				xcheck_maybe_start(c, vr.result, vr.has_confidence, vr.confidence);
		}
		/* the validated result becomes the answer's (no copy) */
		call_answer_own(c, 200, src, b->cfg->name, vr.result, reply.content,
				vr.has_confidence, vr.confidence);
		vr.result = NULL;
		goto out;
	}
	if (c->answered)
		goto out;
	rd = retry_decide(&c->rc->retry, o, c->step_retries, retry_after_ms,
			  budget_remaining(&c->budget, now_ms) - ANSWER_RESERVE_MS,
			  c->rc->min_attempt_ms, &c->rt->rbudget, now_ms, &e->rng, &delay);
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
	validate_result_clear(&vr);
	upstream_reply_clear(&reply);
	engine_easy_put(e, a->easy);
	attempt_headers_free(a->hdrs, a->hdrs_size);
	free(a->body);
	buf_free(&a->resp);
	buf_free(&a->text);
	sse_free(&a->sse);
	free(a);
}

/* The engine's transfer-done hook of an attempt (struct engine_transfer). */
static void
attempt_transfer_done(struct engine *e, struct engine_transfer *t, CURLcode code)
{
	attempt_end((struct attempt *)t, OUTCOME__COUNT, code);
}

/* A bulkhead slot was handed to us, or the queue wait ran out. */
static void
queue_fire(struct timer *t, void *arg)
{
	struct call *c = arg;
	struct backend_rt *b;
	int is_probe = 0;

	if (c->queued_bidx < 0)
		return;
	b = &c->e->backends[c->queued_bidx];
	if (c->bw.queued) {
		/* Still waiting: the wait ran out. */
		bulkhead_cancel(&b->bulkhead, &c->bw);
		c->queued_bidx = -1;
		call_fall(c, "bulkhead_full");
		call_step(c);
		return;
	}
	c->queued_bidx = -1;
	if (breaker_allow(&b->breaker, clock_mono_ms(), &is_probe) != 0) {
		struct bulkhead_waiter *w = bulkhead_leave(&b->bulkhead);

		if (w)
			engine_timer_arm(c->e, &((struct call *)w->arg)->t_queue, clock_mono_us());
		engine_breaker_events(c->e, b);
		call_fall(c, "breaker_open");
		call_step(c);
		return;
	}
	engine_breaker_events(c->e, b);
	attempt_start(c, (int)(b - c->e->backends), is_probe, c->queued_canary, c->queued_target);
}

static void
deadline_fire(struct timer *t, void *arg)
{
	struct call *c = arg;

	c->deadline_passed = 1;
	if (c->att) {
		attempt_end(c->att,
			    c->att->got_headers ? OUTCOME_TOTAL_TIMEOUT : OUTCOME_FIRST_BYTE_TIMEOUT,
			    CURLE_OK);
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

/*
 * The engine's index of a target's backend: the config's own index while
 * the call runs on the current configuration, else by name (a reload
 * moved the arrays). -1 when the backend is gone.
 */
static int
call_target_backend(const struct call *c, const struct target_cfg *t)
{
	if (c->hold->cfg == c->e->cfg || c->force_bidx >= 0)
		return t->backend_idx;
	return engine_backend_index(c->e, t->backend);
}

void
call_bulkhead_granted(struct engine *e, struct bulkhead_waiter *w)
{
	engine_timer_arm(e, &((struct call *)w->arg)->t_queue, clock_mono_us());
}

static void
call_remap(struct call *c, struct route_rt *routes, const int *rmap, struct backend_rt *backends,
	   const int *bmap)
{
	c->route = rmap[c->route];
	c->rt = &routes[c->route];
	if (c->att) {
		c->att->bidx = bmap[c->att->bidx];
		c->att->b = &backends[c->att->bidx];
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
}

/* Try to run one model step (primary or backup). 0: an attempt (or a queue wait) is under way. */
static int
model_step(struct call *c, const char **why)
{
	struct engine *e = c->e;
	const struct route_cfg *rc = c->rc;
	const struct target_cfg *targets = c->step == STEP_PRIMARY ? rc->targets : rc->backup.targets;
	int n = c->step == STEP_PRIMARY ? rc->ntargets : rc->backup.ntargets;
	struct router_cand cand[MAX_TARGETS];
	int64_t now_ms = clock_mono_ms(), remaining;
	int i, picked, bidx, is_probe = 0, any_open = 0, any_full = 0, any_weight = 0;
	struct backend_rt *b;

	remaining = budget_remaining(&c->budget, now_ms) - ANSWER_RESERVE_MS;
	if (c->deadline_passed || remaining < rc->min_attempt_ms) {
		*why = "budget_exhausted";
		return 1;
	}
	n = MIN(n, MAX_TARGETS);
	if (c->force_bidx >= 0) {
		/* a cross-check: its one backend, whatever the route's targets */
		static struct target_cfg forced;

		forced.backend = e->backends[c->force_bidx].cfg->name;
		forced.backend_idx = c->force_bidx;
		forced.weight = 1;
		targets = &forced;
		n = 1;
	}
	for (i = 0; i < n; i++) {
		double w = c->step == STEP_PRIMARY && c->rt->cfg == rc && c->force_bidx < 0
				   ? c->rt->weights[i]
				   : targets[i].weight;

		bidx = call_target_backend(c, &targets[i]);
		if (bidx < 0) {
			cand[i].id = i;
			cand[i].eligible = 0;
			cand[i].weight = 0;
			continue;
		}
		b = &e->backends[bidx];
		cand[i].id = i;
		cand[i].eligible = 1;
		if (w > 0)
			any_weight = 1;
		if (breaker_admits(&b->breaker, now_ms) != 0) {
			cand[i].eligible = 0;
			if (w > 0)
				any_open = 1;
		} else if (b->bulkhead.inflight >= b->bulkhead.max && b->cfg->queue_ms <= 0) {
			cand[i].eligible = 0;
			if (w > 0)
				any_full = 1;
		}
		engine_breaker_events(e, b);
		/* health only matters when there is a choice (it sorts latencies) */
		if (rc->health_weighting && n > 1)
			w *= health_score(&b->health, now_ms, rc->budget_ms, b->bulkhead.inflight,
					  b->bulkhead.max);
		cand[i].weight = w;
	}
	{
		int avoid = -1;

		for (i = 0; i < n; i++)
			if (call_target_backend(c, &targets[i]) == c->avoid_backend)
				avoid = i;
		if (router_pick(cand, n, avoid, &e->rng, &picked) != 0) {
			*why = any_open ? "breaker_open" : any_full ? "bulkhead_full"
				      : any_weight ? "no_target" : "no_weight";
			return 1;
		}
	}
	bidx = call_target_backend(c, &targets[picked]);
	b = &e->backends[bidx];
	if (bulkhead_enter(&b->bulkhead) != 0) {
		int64_t wait = MIN((int64_t)b->cfg->queue_ms, remaining - rc->min_attempt_ms);

		if (wait <= 0) {
			*why = "bulkhead_full";
			return 1;
		}
		c->bw.arg = c;
		c->queued_bidx = bidx;
		c->queued_canary = targets[picked].canary;
		c->queued_target =
			c->step == STEP_PRIMARY && c->force_bidx < 0 && c->rt->cfg == rc ? picked : -1;
		bulkhead_enqueue(&b->bulkhead, &c->bw);
		engine_timer_arm(e, &c->t_queue, clock_mono_us() + wait * 1000);
		return 0;
	}
	if (breaker_allow(&b->breaker, now_ms, &is_probe) != 0) {
		struct bulkhead_waiter *w = bulkhead_leave(&b->bulkhead);

		if (w)
			engine_timer_arm(e, &((struct call *)w->arg)->t_queue, clock_mono_us());
		engine_breaker_events(e, b);
		*why = "breaker_open";
		return 1;
	}
	engine_breaker_events(e, b);
	attempt_start(c, bidx, is_probe, targets[picked].canary,
		      c->step == STEP_PRIMARY && c->force_bidx < 0 && c->rt->cfg == rc ? picked : -1);
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
			const char *in = input_text(c);

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

			if (cache_get(e->cache, rc->name, input_text(c), rc->cache.ttl_s,
				      clock_wall_ms(), &res, &has_conf, &conf) == 0) {
				call_answer(c, 200, SOURCE_CACHE, NULL, res, NULL, has_conf, conf);
				return;
			}
			call_fall(c, "cache_miss");
			break;
		}
		case STEP_PRESET:
			call_answer(c, 200, SOURCE_PRESET, NULL, rc->preset.result, rc->preset.text, 0,
				    0);
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
	int64_t now_ms;
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
	c->start_us = c->req.recv_us ? c->req.recv_us : clock_mono_us();
	c->started_wall = clock_wall_ms() - (clock_mono_us() - c->start_us) / 1000;
	now_ms = c->start_us / 1000;
	budget_init(&c->budget, now_ms, c->rc->budget_ms, c->req.caller_budget_ms);
	timer_init(&c->t_backoff, "backoff", backoff_fire, c);
	timer_init(&c->t_deadline, "deadline", deadline_fire, c);
	timer_init(&c->t_queue, "bulkhead_queue", queue_fire, c);
	c->next = e->calls;
	if (e->calls)
		e->calls->prev = c;
	e->calls = c;
	e->inflight++;
	e->counters.calls++;
	c->rt->calls++;
	retry_budget_record_call(&c->rt->rbudget, clock_mono_ms());
	engine_timer_arm(e, &c->t_deadline, c->budget.deadline_ms * 1000);

	c->level = engine_route_level(e, c->route);
	c->auto_start = c->rt->forced_level < 0;
	/* Where the walk starts: the call-site gate, then the route's level.
	 * Level 3 (async queue) is handled by the API before a call starts;
	 * a call that gets here at level 3 walks from the rule engine. */
	first = STEP_PRIMARY;
	if (c->xcheck) {
		c->step = STEP_PRIMARY;
		call_step(c);
		return;
	}
	if (!c->req.allow_llm) {
		first = STEP_RULES;
		snprintf(c->reason, sizeof c->reason, "llm_disallowed");
	} else if (c->level >= 1) {
		first = c->level == 1 ? STEP_BACKUP : STEP_RULES;
		snprintf(c->reason, sizeof c->reason, "%s",
			 c->rt->forced_level >= 0 ? "forced_level" : "auto_level");
	}
	if (first != STEP_PRIMARY) {
		if (!step_configured(c->rc, first))
			first = next_configured(c->rc, first);
		/* One degradation row for the rungs skipped. */
		struct store_val v[] = { SVI(e->next_degradation_id++), SVI(c->id), SVT(c->rc->name),
					 SVT(step_name(STEP_PRIMARY)), SVT(step_name(first)),
					 SVT(c->reason), SVI(clock_wall_ms()) };

		store_put(e->store, STORE_DEGRADATION_INSERT, v, (int)ARRAY_SIZE(v));
	}
	c->step = first;
	call_step(c);
}

struct engine *
call_engine(const struct call *c)
{
	return c->e;
}

char *
call_answer_json(const struct call_answer *a, int replayed)
{
	struct buf b;

	/* Written straight into a buffer (no cJSON tree): keys and order as before. */
	buf_init(&b, SIZE_MAX / 2);
	if (a->http_status >= 300) {
		char msg[160];

		snprintf(msg, sizeof msg, "every rung of the ladder failed for route %s (%s)", a->route,
			 a->reason);
		buf_puts(&b, "{\"error\":{\"code\":\"exhausted\",\"message\":");
		json_buf_string(&b, msg);
		buf_puts(&b, ",\"reason\":");
		json_buf_string(&b, a->reason);
		buf_puts(&b, "},\"request_id\":");
		json_buf_string(&b, a->request_id);
		buf_puts(&b, ",\"attempts\":");
		json_buf_number(&b, a->attempts);
		buf_puts(&b, ",\"elapsed_ms\":");
		json_buf_number(&b, (double)a->elapsed_ms);
		buf_puts(&b, "}");
		return buf_steal(&b);
	}
	buf_puts(&b, "{\"request_id\":");
	json_buf_string(&b, a->request_id);
	buf_puts(&b, ",\"route\":");
	json_buf_string(&b, a->route);
	buf_puts(&b, ",\"result\":");
	if (a->result_json) /* printed once (call_answer_finish()), spliced in */
		buf_puts(&b, a->result_json);
	else if (a->result)
		json_buf_item(&b, a->result);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"source\":");
	json_buf_string(&b, source_name(a->source));
	buf_puts(&b, ",\"backend\":");
	if (a->backend)
		json_buf_string(&b, a->backend);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"level\":");
	json_buf_number(&b, a->level);
	buf_puts(&b, a->degraded ? ",\"degraded\":true,\"reason\":" : ",\"degraded\":false,\"reason\":");
	if (a->reason[0])
		json_buf_string(&b, a->reason);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"confidence\":");
	if (a->has_confidence)
		json_buf_number(&b, a->confidence);
	else
		buf_puts(&b, "null");
	buf_puts(&b, a->review ? ",\"review\":\"pending\",\"attempts\":" :
				 ",\"review\":\"none\",\"attempts\":");
	json_buf_number(&b, a->attempts);
	buf_puts(&b, ",\"elapsed_ms\":");
	json_buf_number(&b, (double)a->elapsed_ms);
	buf_puts(&b, replayed ? ",\"replayed\":true}" : ",\"replayed\":false}");
	return buf_steal(&b);
}
