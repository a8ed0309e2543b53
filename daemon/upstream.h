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
};

/*
 * The request body for route rc on backend bc. At the backup step
 * (backup != 0) backup.temperature and backup.few_shot apply. input is
 * substituted for "{{input}}" in the prompt's user template; when messages
 * (borrowed, an array of {role, content}) is given it replaces the
 * template, the route's system prompt still going first. p: the facade's
 * parameters (NULL: none). *input_tokens gets the token estimate of the
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

struct upstream_reply {
	char *content; /* choices[0].message.content (owned), "" when null */
	int64_t prompt_tokens;
	int64_t completion_tokens; /* -1 when usage is absent; either count -1 when not in [0, 1e15]
				    */
};

/* Parse a chat.completion body. 0 or UPSTREAM_E_INVALID. */
int upstream_parse_reply(const char *body, size_t len, struct upstream_reply *out);
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
