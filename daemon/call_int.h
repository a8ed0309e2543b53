#pragma once
/*
 * call_int: what the files of the call module share (call.c: the ladder
 * and its decisions; call_shadow.c: the rules shadow and the cross-check).
 * Private to them. Engine thread.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attempt.h"
#include "budget.h"
#include "call.h"
#include "engine.h"
#include "review_q.h"
#include "trace.h"

#define CALL_MAX_INFLIGHT 4 /* an attempt and up to 3 hedges */

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
	char reason[64];			/* root cause: why the first step tried was left */
	struct attempt *att[CALL_MAX_INFLIGHT]; /* in flight: an attempt and its hedges */
	int natt;
	struct attempt_owner own; /* what c->att[] borrows */
	struct attempt *streamer; /* the attempt whose deltas reach the caller; NULL: none yet */
	int hedges;		  /* hedged attempts started (retry.hedge.max_hedges) */
	int64_t est_tokens;	  /* input + max output tokens, for the rate limits */
	struct timer t_hedge;
	struct timer t_unhedge; /* a stream committed: cancel the other attempts */
	struct timer t_backoff;
	struct timer t_deadline;
	struct timer t_queue;
	struct bulkhead_waiter bw;
	int queued_bidx; /* -1 when not waiting for a bulkhead slot */
	int queued_canary;
	int queued_target;
	int deadline_passed;
	int timeouts;	       /* attempts that ended in a timeout */
	int format_violations; /* attempts that ended validation_format */
	int start_vfail;       /* an attempt of the starting model step failed validation */
	int auto_start;	       /* the call started at the route's auto level (not forced) */
	int answered;
	int closing;
	char *last_raw;		   /* last model output, for review items */
	const char *review_reason; /* "low_confidence", "manual": enqueue with the answer */
	int xcheck;		   /* a cross-check shadow call: off the caller's path */
	int force_bidx;		   /* -1, or the only backend this call may use */
	char traceparent[TRACECTX_TRACEPARENT_LEN + 1]; /* the call span's, for answers */
	struct trace_span span;				/* o NULL: not sampled or no export */
	struct call_answer ans;
	call_done_fn done;
	void *done_arg;
};

/*
 * call_pick.c: the engine's index of a target's backend: the config's own
 * index while c runs on the current configuration, else by name (a reload
 * moved the arrays). -1 when the backend is gone.
 */
int call_target_backend(const struct call *c, const struct target_cfg *t);
/*
 * call_pick.c: pick a target of the model step c stands on (router: weights x
 * health, breakers admitting, bulkheads with room, rate limits), the
 * backend avoid_bidx last (-1: none). 0 with *bidx and *picked (the target's
 * index), or 1 with *why (a degradation reason).
 */
int call_pick_target(struct call *c, int avoid_bidx, int *bidx, int *picked, const char **why);
/*
 * call_pick.c: start an attempt of c on bidx (canary: the target is one;
 * target: its index among the primary targets or -1); its bulkhead slot
 * and breaker permit are held. The attempt, in c->att[] (NULL: no room;
 * cannot happen). The caller arms the hedge timer (call_hedge_arm()).
 */
struct attempt *call_attempt_start(struct call *c, int bidx, int is_probe, int canary, int target,
				   int64_t now_us);
/* call_pick.c: the target index call_attempt_start() takes for the target picked (-1: none). */
int call_target_index(const struct call *c, int picked);
/* call_pick.c: hand a backend's bulkhead slot back; a waiting call gets it on the next turn. */
void call_slot_leave(struct engine *e, struct backend_rt *b);
/* call_hedge.c: arm the hedge timer for c's one attempt in flight (no-op when off). */
void call_hedge_arm(struct call *c, int64_t now_us);
/* call_hedge.c: stop every attempt of c still in flight as hedge_cancelled. */
void call_hedge_cancel_others(struct call *c);
/* call_hedge.c: an attempt of c may send deltas (attempt_owner.may_commit). */
int call_hedge_may_commit(struct attempt *a, void *arg);
/* call_hedge.c: the hedge timers' init (call_start). */
void call_hedge_init(struct call *c);

/* The log context of call c: its request id and route (log_ctx()). */
#define CALL_LOG_CTX(c)                                                                            \
	((struct logline_ctx){.request_id = (c)->request_id, .route = (c)->rc->name})

/* The text that stands for the call's input (rules, cache, review items). */
const char *call_input_text(const struct call *c);
/* call_answer.c: end c's span with its answer; ns since the epoch of a wall time in ms. */
void call_span_end(struct call *c);
int64_t call_wall_ns(int64_t wall_ms);
/*
 * One review item (pending). fn (NULL: nobody waits; a failure is logged)
 * hears once it is committed. 0 when under way.
 */
int call_review_insert(struct engine *e, const struct route_cfg *rc, const char *request_id,
		       int64_t call_id, const char *reason, const char *input, const char *raw,
		       const cJSON *result, int has_conf, double conf, const cJSON *alt_result,
		       const char *callback_url, review_q_done_fn fn, void *arg);
/* Sampled model answers also go through the rule engine: would the fallback have agreed? */
void call_rules_shadow(struct call *c, const cJSON *result);
/* For a sample of answered calls, ask cross_check.backend the same question. */
void call_xcheck_start(struct call *c, const cJSON *result, int has_conf, double conf);
