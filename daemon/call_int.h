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
	struct attempt_owner own; /* what c->att borrows */
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
