#pragma once
/*
 * call: one guarded call, the state machine of DESIGN.md "The call, step
 * by step": budget → level → ladder walk (primary → backup → rules →
 * cache → preset → on_exhausted) → router → bulkhead → breaker → attempt
 * → classify → validate → retry or fall. Engine thread only.
 *
 * Ownership: call_start() consumes the struct call_req. The call lives
 * until its answer has been handed to done(); then it is marked closing and
 * freed by call_reap() in the engine's before-sleep step, never inside a
 * callback.
 */
#include <curl/curl.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "call_answer.h"
#include "outcome.h"
#include "tracectx.h"
#include "upstream.h"

struct engine;
struct call;

/* A streaming caller's sink: each chunk relayed as the upstream produces
 * it (engine thread): text is its first choice's content delta, chunk the
 * whole chunk (borrowed). The first call commits the call to that
 * upstream attempt: no fallback after it. */
typedef void (*call_delta_fn)(void *arg, const char *text, size_t len, const cJSON *chunk);

struct call_req {
	int route;		  /* index into the engine's routes */
	char *request_id;	  /* NULL: generated */
	char *input;		  /* NULL when messages are given */
	cJSON *messages;	  /* owned; NULL when input is given */
	int64_t caller_budget_ms; /* 0: none */
	int allow_llm;
	char *callback_url;
	cJSON *metadata;
	int64_t recv_us;	       /* when the request was complete (the budget starts then) */
	struct upstream_params params; /* facade pass-through; params.response_format and
					  params.extra owned */
	call_delta_fn on_delta;	       /* non-NULL: stream the model's answer */
	void *delta_arg;
	struct tracectx trace;	 /* the call span's context (call_req_trace) */
	uint8_t trace_parent[8]; /* the caller's span id; all zero: a root span */
	int has_trace;		 /* 0: call_start() starts a new trace */
	char *tracestate;	 /* the caller's, forwarded upstream unchanged; NULL: none */
	int xcheck_backend; /* cross-check shadow: 1 + the only backend to ask; 0: a normal call */
	int64_t xcheck_call_id; /* the checked call (its attempts rows name it) */
};

void call_req_clear(struct call_req *cr);

/* The answer, filled when done() runs. */

typedef void (*call_done_fn)(struct call *c, const struct call_answer *a, void *arg);

/*
 * The trace context of cr's call from the caller's headers (either may be
 * NULL): a valid traceparent makes the call's span its child, in its trace
 * and with its sampled flag, and keeps a valid tracestate; otherwise (a
 * malformed value is ignored, W3C level 1) a new trace starts, sampled at
 * tracing.sample_rate.
 */
void call_req_trace(struct engine *e, struct call_req *cr, const char *traceparent,
		    const char *tracestate);

/* Start a call; done(c, answer, arg) runs exactly once, on the engine thread. */
void call_start(struct engine *e, struct call_req *cr, call_done_fn done, void *arg);

/* A fresh request id ("fb-" + wall-clock ms + random, UUIDv7-shaped, so
 * ids sort by time). New string. */
char *call_gen_request_id(struct engine *e);

/* The engine a call runs on. */
struct engine *call_engine(const struct call *c);

/* Render the /call 200 body of API.md for an answer. New string. */

/* Engine hooks: a transfer finished; free closed calls; a bulkhead slot
 * was handed to a waiting call; reload moved the runtime arrays (rmap /
 * bmap: old index -> new index). */
struct route_rt;
struct backend_rt;
struct bulkhead_waiter;
void call_bulkhead_granted(struct engine *e, struct bulkhead_waiter *w);
/*
 * The cron hook of the backends' gates (engine_on_tick): their limiters'
 * windows close on time and queued calls start when a cap rose.
 */
void call_gate_tick(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms);
void call_remap_all(struct engine *e, struct route_rt *routes, const int *rmap,
		    struct backend_rt *backends, const int *bmap);
void call_reap(struct engine *e);
/*
 * call_shadow.c, the engine's call_after_answer hook (daemon.c sets it):
 * the rules shadow for every valid model answer, and the cross-check for
 * a sample of those the primary step gave. call.c calls it only through
 * the hook, so call_shadow.c stays above call.c.
 */
void call_shadow_after_answer(struct call *c, const cJSON *result, int has_conf, double conf,
			      int primary);
