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

#include "outcome.h"
#include "upstream.h"

struct engine;
struct call;

/* A streaming caller's sink: each content delta relayed as the upstream
 * produces it (engine thread). The first call commits the call to that
 * upstream attempt: no fallback after it. */
typedef void (*call_delta_fn)(void *arg, const char *text, size_t len);

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
	struct upstream_params params; /* facade pass-through; params.response_format owned */
	call_delta_fn on_delta;	       /* non-NULL: stream the model's answer */
	void *delta_arg;
	int xcheck_backend; /* cross-check shadow: 1 + the only backend to ask; 0: a normal call */
	int64_t xcheck_call_id; /* the checked call (its attempts rows name it) */
};

void call_req_clear(struct call_req *cr);

/* The answer, filled when done() runs. */
struct call_answer {
	unsigned http_status; /* 200, or 503 when exhausted with on_exhausted=error */
	enum source source;
	const char *backend; /* NULL when none */
	int level;
	int degraded;
	char reason[64]; /* "" when not degraded */
	cJSON *result;	 /* owned by the call; NULL when none */
	char *text;	 /* the model's text / preset text, for the chat facade */
	int has_confidence;
	double confidence;
	int review; /* 1: pending */
	int attempts;
	int64_t elapsed_ms;
	const char *request_id;
	const char *route;
	int streamed;	       /* the model's answer went out as deltas */
	char stream_error[32]; /* a streamed answer cut short: outcome name; "" otherwise */
	int64_t prompt_tokens; /* from the upstream's usage; -1 unknown */
	int64_t completion_tokens;
	const char *json; /* call_answer_json(answer, 0), rendered once (owned by the call) */
	const char *result_json; /* result printed once, for json and the calls row (owned by the
				    call) */
};

typedef void (*call_done_fn)(struct call *c, const struct call_answer *a, void *arg);

/* Start a call; done(c, answer, arg) runs exactly once, on the engine thread. */
void call_start(struct engine *e, struct call_req *cr, call_done_fn done, void *arg);

/* A fresh request id ("fb-" + wall-clock ms + random, UUIDv7-shaped, so
 * ids sort by time). New string. */
char *call_gen_request_id(struct engine *e);

/* The engine a call runs on. */
struct engine *call_engine(const struct call *c);

/* Render the /call 200 body of API.md for an answer. New string. */
char *call_answer_json(const struct call_answer *a, int replayed);

/* Engine hooks: a transfer finished; free closed calls; a bulkhead slot
 * was handed to a waiting call; reload moved the runtime arrays (rmap /
 * bmap: old index -> new index). */
struct route_rt;
struct backend_rt;
struct bulkhead_waiter;
void call_bulkhead_granted(struct engine *e, struct bulkhead_waiter *w);
void call_remap_all(struct engine *e, struct route_rt *routes, const int *rmap,
		    struct backend_rt *backends, const int *bmap);
void call_reap(struct engine *e);
