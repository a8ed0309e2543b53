#pragma once
/*
 * upstream: what goes on the wire to an OpenAI-compatible chat-completions
 * backend and what comes back. Pure functions: body building, SSE and
 * reply parsing, outcome classification from curl's result. The libcurl
 * easy handle of an attempt is set up in attempt.c. Any thread.
 */
#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "outcome.h"
#include "util.h"

enum upstream_e { UPSTREAM_E_INVALID = 1 };

/* What the OpenAI-compatible facade passes through (chat completions). */
struct upstream_params {
	int passthrough; /* the caller's messages verbatim, no route prompt */
	int has_temperature;
	double temperature;
	int max_tokens;		      /* 0: the route's */
	const cJSON *response_format; /* borrowed; NULL: the route's choice */
	int stream;		      /* ask the upstream for SSE ("stream": true) */
	int max_completion;	      /* max_tokens came as max_completion_tokens: send that key */
	const cJSON
		*extra; /* borrowed object: the caller's other fields, sent verbatim; NULL: none */
};

/* The output tokens an attempt asks for: the caller's max_tokens, else the route's. */
int64_t upstream_max_tokens(const struct route_cfg *rc, const struct upstream_params *p);
/*
 * The request body for route rc on backend bc. At the backup step
 * (backup != 0) backup.temperature and backup.few_shot apply. input is
 * substituted for "{{input}}" in the prompt's user template; when messages
 * (borrowed, an array of {role, content}) is given it replaces the
 * template, the route's system prompt still going first. p: the facade's
 * parameters (NULL: none); with p->passthrough the messages go verbatim
 * (tool_calls, tool_call_id, name and all) and p->extra's fields follow
 * ours. *input_tokens gets the token estimate of the
 * rendered messages. Returns a new string.
 */
char *upstream_build_body_ex(const struct route_cfg *rc, const struct backend_cfg *bc, int backup,
			     const char *input, const cJSON *messages,
			     const struct upstream_params *p, int64_t *input_tokens);

/*
 * Incremental parser of an upstream SSE stream: "data: <payload>" lines,
 * events separated by blank lines, "data: [DONE]" at the end. Bounded:
 * a line over SSE_MAX_LINE bytes is -E2BIG.
 */
#define SSE_MAX_LINE (1024 * 1024)
struct sse_parser {
	struct buf line;
	int done; /* [DONE] seen */
};
typedef void (*sse_event_fn)(void *arg, const char *payload, size_t len);
void sse_init(struct sse_parser *p);
void sse_free(struct sse_parser *p);
int sse_feed(struct sse_parser *p, const char *data, size_t len, sse_event_fn cb, void *arg);
/*
 * The content delta of one chat.completion.chunk payload (new string,
 * "" when the chunk carries none) and whether it carries a finish_reason.
 * 0 or UPSTREAM_E_INVALID.
 */
int upstream_chunk_delta(const char *payload, size_t len, char **content, int *finish);

/* One chat.completion.chunk, as the facade relays it. */
struct upstream_chunk {
	char *content;	  /* choices[0].delta.content (owned), "" when none */
	int finish;	  /* choices[0] carries a finish_reason */
	int tool_calls;	  /* some choice's delta carries tool_calls */
	int other_choice; /* a choice past the first carries content or a finish */
	cJSON *doc;	  /* the whole chunk (owned) */
};

/* Parse one chunk payload. 0 or UPSTREAM_E_INVALID; clear with upstream_chunk_clear(). */
int upstream_chunk_parse(const char *payload, size_t len, struct upstream_chunk *out);
void upstream_chunk_clear(struct upstream_chunk *c);

struct upstream_reply {
	char *content; /* choices[0].message.content (owned), "" when null */
	int64_t prompt_tokens;
	int64_t completion_tokens; /* -1 when usage is absent; either count -1 when not in [0, 1e15]
				    */
	int ntool_calls;	   /* entries of choices[0].message.tool_calls */
	char *finish_reason;	   /* choices[0].finish_reason (owned); NULL when absent */
	cJSON *doc;		   /* the whole reply (owned), kept when asked; NULL otherwise */
};

/* Parse a chat.completion body. 0 or UPSTREAM_E_INVALID. */
int upstream_parse_reply(const char *body, size_t len, struct upstream_reply *out);
/* The same; keep: out->doc keeps the parsed reply (the facade relays it). */
int upstream_parse_reply_ex(const char *body, size_t len, int keep, struct upstream_reply *out);
/*
 * What a tool-call reply stores in attempts.raw_output: the tool calls
 * themselves when full, else each tool's name and its arguments' size
 * ("tool_calls: get_weather(args 42 B), ..."). NULL when doc has none.
 * New string.
 */
char *upstream_tool_calls_summary(const cJSON *doc, int full);
void upstream_reply_clear(struct upstream_reply *r);

/* What curl and the wire said about one finished attempt. */
struct upstream_facts {
	CURLcode code;
	long http_status; /* 0 when no status line */
	int connected;	  /* the TCP connection was established */
	int got_headers;  /* the response headers were complete */
	int body_too_big; /* max_response_bytes reached */
	int json_type;	  /* Content-Type is application/json (or absent) */
	int bad_framing;  /* curl's error says the HTTP framing was broken (chunked encoding) */
};

/*
 * Outcome class (DESIGN.md step 6) of a transfer that ended by itself (not
 * by one of our timers). OK means "HTTP 200 with a body to parse".
 */
enum outcome upstream_classify(const struct upstream_facts *f);

/* Replace every "{{input}}" in tmpl with input. New string. */
char *upstream_render(const char *tmpl, const char *input);
