#pragma once
/*
 * http: the HTTP front (libmicrohttpd, one internal epoll polling thread,
 * suspend/resume). It reads and bounds requests, checks auth, finds the
 * endpoint in the api_*.c tables, and either answers at once (MHD thread)
 * or suspends the connection and posts the request to the engine thread,
 * which answers later with http_respond() from any thread. A waiting call
 * costs a suspended connection, never a thread.
 *
 * Ownership: struct http_req belongs to http.c; it is freed when MHD
 * reports the request completed. After http_respond() the caller must not
 * touch the request again.
 */
#include <stddef.h>
#include <stdint.h>

#include "tokens.h"
#include "util.h"

struct engine;
struct config;

enum http_method { HTTP_GET = 0, HTTP_POST, HTTP_PUT, HTTP_DELETE, HTTP_OTHER };

/* Who may call an endpoint. */
enum http_access {
	ACCESS_OPEN = 0, /* no token (healthz) */
	ACCESS_DATA,	 /* data plane: a token of any role when callers_require_token */
	ACCESS_METRICS,	 /* viewer, or open when metrics_public */
	ACCESS_VIEWER,
	ACCESS_OPERATOR,
};

struct http_kv {
	char *k;
	char *v;
};

#define HTTP_MAX_PARAMS 4
#define HTTP_MAX_RESP_HEADERS 8

struct http_req;

/* Handlers run on the engine thread (they own engine state) unless
 * the endpoint says on_mhd_thread. */
typedef void (*http_handler)(struct http_req *r, struct engine *e);

struct endpoint {
	enum http_method method;
	const char *pattern; /* "/v1/routes/{}/call": {} captures one segment */
	enum http_access access;
	http_handler handler;
	int on_mhd_thread; /* answer inline (no engine state touched) */
};

/* The endpoint tables exported by the api_*.c files. */
extern const struct endpoint api_call_endpoints[];
extern const struct endpoint api_control_endpoints[];
extern const struct endpoint api_chat_endpoints[];

struct http_req {
	struct MHD_Connection *conn;
	struct http_server *srv;
	enum http_method method;
	char *url;
	char *params[HTTP_MAX_PARAMS]; /* the {} captures, URL-decoded */
	int nparams;
	struct http_kv *args; /* query arguments */
	int nargs;
	struct http_kv *hdrs; /* request headers, names as sent */
	int nhdrs;
	struct buf body;
	char remote[64];
	char actor[64];	  /* token name, "anonymous" when no token */
	int role;	  /* enum role of the token, -1 when none */
	int64_t recv_us;  /* monotonic µs when the request was complete */
	const struct endpoint *ep;
	int state;	  /* private to http.c */
	struct http_stream *stream; /* private to http.c; non-NULL for a streaming answer */
	/* response, set by http_respond() */
	unsigned status;
	char *resp_body;
	size_t resp_len;
	const char *content_type;
	struct http_kv resp_hdrs[HTTP_MAX_RESP_HEADERS];
	int nresp_hdrs;
};

struct http_server;

struct http_opts {
	const char *host; /* "127.0.0.1" */
	int port;	  /* 0: ephemeral */
	int64_t max_body_bytes;
	int max_connections;
	int conn_timeout_s; /* idle / slow client timeout */
	int callers_require_token;
	int metrics_public;
	struct tokens *tokens; /* consumed (the server frees it); NULL: no tokens, control plane closed */
};

int http_start(const struct http_opts *o, struct engine *e, struct http_server **out, char **cause);
/* The port actually bound (for port 0). */
int http_port(const struct http_server *s);
/* Stop accepting new connections (drain). */
void http_quiesce(struct http_server *s);
/* Wait until every request received has been answered and sent (or
 * timeout_ms passed); returns how many are still open. */
int http_drain(struct http_server *s, int timeout_ms);
void http_stop(struct http_server *s);
/* Replace the tokens (consumed; the old ones are freed) and auth flags after a reload. Thread-safe. */
void http_set_auth(struct http_server *s, struct tokens *t, int callers_require_token,
		   int metrics_public);

/* Add a response header (copied). At most HTTP_MAX_RESP_HEADERS. */
void http_req_add_header(struct http_req *r, const char *name, const char *value);
/* Answer r with status and body (consumed; NULL for none); thread-safe;
 * resumes the suspended connection. Exactly once per request. */
void http_respond(struct http_req *r, unsigned status, char *body, size_t len);
/* Answer {"error":{"code","message"}} with status. */
void http_respond_error(struct http_req *r, unsigned status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * Streaming answers (Server-Sent Events). http_stream_begin() answers r
 * with status and a body of unknown length (chunked) that the handler
 * feeds with http_stream_write() as data arrives, from any thread, and
 * closes with http_stream_end(); after that the handler must not touch r.
 * Writes are buffered up to HTTP_STREAM_MAX bytes (-E2BIG beyond);
 * -EPIPE once the client is gone. The MHD thread sleeps (suspended) while
 * the buffer is empty: no busy loop, no thread per stream.
 */
#define HTTP_STREAM_MAX (4 * 1024 * 1024)
void http_stream_begin(struct http_req *r, unsigned status, const char *content_type);
int http_stream_write(struct http_req *r, const char *data, size_t len);
void http_stream_end(struct http_req *r);

/* Case-insensitive request header / query argument lookup; NULL when absent. */
const char *http_req_header(const struct http_req *r, const char *name);
const char *http_req_arg(const struct http_req *r, const char *name);
