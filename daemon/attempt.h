#pragma once
/*
 * attempt: one attempt of a call on the wire. The request (body, headers,
 * timeouts planned from the call's budget at one instant), the libcurl
 * easy handle on the engine's multi, the first-byte and total timers and,
 * once it ends, the facts (outcome, reply, validation) and its attempts
 * rows. What follows is its owner's decision, heard through
 * attempt_done_fn. Engine thread.
 */
#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "budget.h"
#include "attempt_gate.h"
#include "config.h"
#include "engine.h"
#include "outcome.h"
#include "timerheap.h"
#include "tracectx.h"
#include "upstream.h"
#include "util.h"
#include "validate.h"

struct attempt;

/* How an attempt ended, as its owner hears it. */
struct attempt_result {
	enum outcome outcome;
	int ok;			/* the answer stands: validated, or a stream that went out */
	int streamed;		/* deltas went to the caller (cut short when outcome is not ok) */
	int raw;		/* reply.content is the model's output */
	int64_t total_ms;	/* how long the attempt ran */
	int64_t first_byte_ms;	/* its first byte (a stream's first chunk) after the start; -1: none
				 */
	int64_t retry_after_ms; /* the upstream's Retry-After; -1: none */
	int64_t now_ms, now_us; /* when it ended (the monotonic clock, read once) */
	struct upstream_reply reply; /* cleared after done() returns */
	struct validate_result vr;   /* the same; done() may take vr.result (setting it NULL) */
};

/*
 * The owner hears the end of attempt a (no longer on the multi handle,
 * its rows written). a is freed when done() returns; done() may start the
 * next attempt meanwhile. It returns 1 when the owner has answered its
 * caller (a cut before the deadline then teaches the crowd its cost), 0
 * otherwise.
 */
typedef int (*attempt_done_fn)(struct attempt *a, struct attempt_result *r, void *arg);
/*
 * A streaming owner's sink: each chunk as the upstream produces it, text
 * its first choice's content delta and chunk the whole chunk (borrowed).
 * Chunks with content or tool calls commit the attempt; others (a finish,
 * usage) are relayed only once it is committed.
 */
typedef void (*attempt_delta_fn)(void *arg, const char *text, size_t len, const cJSON *chunk);

/* What the attempts of one owner borrow from it; it outlives them. */
struct attempt_owner {
	struct engine *e;
	const struct route_cfg *rc;
	int64_t call_id;
	const char *request_id;
	const struct budget *budget;
	int *attempts;	   /* the owner's count: each request on the wire takes the next number */
	const char *input; /* the request: input or messages, and the facade's parameters */
	const cJSON *messages;
	const struct upstream_params *params;
	attempt_delta_fn on_delta; /* non-NULL: ask for SSE and relay the deltas */
	void *delta_arg;
	/* may attempt a send deltas (hedges: one stream reaches the caller)? NULL: yes */
	int (*may_commit)(struct attempt *a, void *arg);
	attempt_done_fn done;
	void *arg;
	const struct tracectx *trace; /* the call span's: attempts are its children */
	const char *tracestate;	      /* sent upstream unchanged; NULL: none */
};

/*
 * An attempt in flight. Its owner reads bidx, b, is_probe, canary, target
 * and got_headers, and rewrites bidx and b when a reload moves the
 * engine's backends; the rest is attempt.c's.
 */
struct attempt {
	struct engine_transfer xfer; /* first: CURLOPT_PRIVATE points here */
	const struct attempt_owner *own;
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
	int canary;   /* the target picked was a canary */
	int target;   /* index among the route's primary targets (canary guard); -1 otherwise */
	int is_hedge; /* started by the hedge timer beside a running attempt (owner's) */
	int inflight_start; /* the backend's attempts in flight as it started, itself included */
	int wire_sends;	    /* requests libcurl put on the wire (prereq callback) */
	struct attempt_timeouts to;
	int64_t crowd_ms; /* the deadline this attempt is counted under in e->crowd; 0: not counted
			   */
	int64_t started_us;
	int64_t started_wall;
	int64_t first_byte_us;
	int64_t input_tokens;
	char errbuf[CURL_ERROR_SIZE];
	struct timer t_first_byte; /* streaming: first token, then the idle gap */
	struct timer t_total;
	int streaming; /* SSE requested from the upstream */
	int sse_type;  /* the response is text/event-stream */
	struct sse_parser sse;
	struct buf text;      /* streamed content so far */
	int committed;	      /* a delta went to the caller */
	int tools_denied;     /* the stream began with tool calls the route refuses */
	cJSON *stream_tools;  /* streamed tool calls, assembled (attempts row) */
	int outrun;	      /* another attempt of the owner streams (may_commit said no) */
	struct tracectx tc;   /* the attempt's span: the traceparent sent upstream */
	int64_t remaining_ms; /* the call's budget left at the start */
	const struct backend_cfg *rec_cfg; /* whose record_response_headers rec follows */
	char (*rec)[CONFIG_RECORD_HEADER_NAME_MAX + 1]; /* recorded values; "" absent; NULL: none */
	struct attempt_gw gw; /* its place at the h2 connection gate (attempt_gate.c) */
};

/*
 * Start one attempt for own on backend bidx at now_us (the monotonic
 * clock); backup: the backup step's prompt settings apply. The owner holds
 * the backend's bulkhead slot and breaker permit until done() runs. The
 * attempt, in flight.
 */
struct attempt *attempt_start(const struct attempt_owner *own, int bidx, int backup, int is_probe,
			      int canary, int target, int64_t now_us);
/* End a now with outcome o (the owner's deadline passed): done() runs before this returns. */
void attempt_stop(struct attempt *a, enum outcome o);

/*
 * text with every configured API key and "Bearer <token>" redacted, cut
 * to max bytes: what may be stored or logged of an upstream's bytes. NULL
 * when text is NULL. New string.
 */
char *attempt_redact(struct engine *e, const char *text, size_t max);

/* Whether route rc takes a model's tool calls as an answer (output.tool_calls). */
int attempt_tool_calls_allowed(const struct route_cfg *rc);
