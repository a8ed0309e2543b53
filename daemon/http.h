#pragma once
/*
 * http: the HTTP front (libmicrohttpd in external epoll mode, run by the
 * engine thread: http_epoll_fd() joins the engine's epoll set and the
 * engine calls http_run()). It accepts connections itself (caps, header
 * timeout: 503 / 408 and close), screens each request on its headers
 * before reading a body (framing, Host, Origin, endpoint, auth, media
 * type, body caps: docs/CONFIG-NOTES.md "The HTTP front"), finds the
 * endpoint in the api_*.c tables and calls its handler at once on the
 * engine thread. A handler answers with http_respond() — inside
 * the handler (written in the same turn) or later, when the call ends
 * (the connection waits suspended). A waiting call costs a suspended
 * connection, never a thread.
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
struct sockaddr;

enum http_method { HTTP_GET = 0, HTTP_POST, HTTP_PUT, HTTP_DELETE, HTTP_OTHER };

/* Who may call an endpoint. */
enum http_access {
	ACCESS_OPEN = 0, /* no token (healthz) */
	ACCESS_DATA,	 /* data plane: a token of any role when callers_require_token */
	ACCESS_METRICS,	 /* viewer, or open when metrics_public */
	ACCESS_VIEWER,
	ACCESS_OPERATOR,
};

/* One allocation: k owns it, v points inside (http_req.c kv_set()). */
struct http_kv {
	char *k;
	char *v;
};

#define HTTP_MAX_PARAMS	      4
#define HTTP_MAX_RESP_HEADERS 8

struct http_req;

/* Handlers run on the engine thread (they own engine state). */
typedef void (*http_handler)(struct http_req *r, struct engine *e);

struct endpoint {
	enum http_method method;
	const char *pattern; /* "/v1/routes/{}/call": {} captures one segment */
	enum http_access access;
	http_handler handler;
};

/*
 * The endpoint tables exported by the api_*.c files. http.c knows none of
 * them: the composition root hands them over (http_opts.tables), so the
 * handlers may call http_respond() without a cycle.
 */
extern const struct endpoint api_call_endpoints[];
extern const struct endpoint api_control_endpoints[];
extern const struct endpoint api_chat_endpoints[];
extern const struct endpoint api_review_endpoints[];
extern const struct endpoint api_slo_endpoints[];
extern const struct endpoint api_diagnose_endpoints[];

/* A streaming answer's state: private to http.c, kept in its request (no allocation). */
struct http_stream {
	struct buf pending; /* written, not yet taken by MHD */
	size_t taken;	    /* bytes of pending already handed to MHD */
	int ended;	    /* http_stream_end() ran */
	int gone;	    /* MHD completed the request (client left or all sent) */
	int suspended;	    /* the reader suspended the connection for lack of data */
	int failed;	    /* out of memory for pending: the stream is cut, no final chunk */
};

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
	char actor[64];	 /* token name, "anonymous" when no token */
	int role;	 /* enum role of the token, -1 when none */
	int64_t recv_us; /* monotonic µs when the request was complete */
	const struct endpoint *ep;
	int state;	  /* private to http.c */
	int inline_call;  /* private to http.c: the handler is running inside http_access() */
	int close_after;  /* private to http*.c: answer with Connection: close */
	int64_t reserved; /* private to http*.c: bytes counted against max_buffered_body_bytes */
	struct http_stream *stream; /* private to http.c; &stream_mem for a streaming answer */
	struct http_stream stream_mem;
	/* private to http*.c: an allocation for this request failed, so it is
	 * answered 503 out_of_memory with Retry-After and the connection closed */
	int oom;
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
	int64_t max_buffered_body_bytes; /* all bodies held at once; 0: no cap */
	int max_connections;
	int max_connections_per_ip; /* 0: no cap */
	int conn_timeout_s;	    /* a request body may pause this long */
	int header_timeout_s;	    /* a new connection's headers must be in by then; 0: off */
	int idle_timeout_s; /* a keep-alive connection between requests; 0: conn_timeout_s */
	/* Host names accepted besides the listen address, and the browser
	 * Origins accepted (any other Origin: 403); copied. */
	char *const *allowed_hosts;
	int nallowed_hosts;
	char *const *allowed_origins;
	int nallowed_origins;
	int callers_require_token;
	int metrics_public;
	struct tokens
		*tokens; /* consumed (the server frees it); NULL: no tokens, control plane closed */
	const struct endpoint *const
		*tables; /* searched in order; borrowed, must outlive the server */
	int ntables;
};

int http_start(const struct http_opts *o, struct engine *e, struct http_server **out, char **cause);
/* The port actually bound (for port 0). */
int http_port(const struct http_server *s);
/*
 * Hand over an accepted, non-blocking stream socket as if the listen
 * socket had given it (the caps apply; fuzz and tests). 0, or -errno when
 * it was refused (fd is closed in every case).
 */
int http_adopt(struct http_server *s, int fd, const struct sockaddr *sa, unsigned sa_len);
/* Stop accepting new connections (drain). */
void http_quiesce(struct http_server *s);
/* Requests received and not yet answered and sent. */
int http_active(struct http_server *s);
/* MHD's epoll descriptor: readable when http_run() has work. */
int http_epoll_fd(const struct http_server *s);
/* An epoll set holding the listen socket: readable when connections wait. */
int http_accept_fd(const struct http_server *s);
/* Connections resumed since the last http_run() (answers waiting to be written). */
int http_pending(struct http_server *s);
/* Let MHD read, call handlers and write; accept too when accept (the
 * accept set was readable). Engine thread. */
void http_run(struct http_server *s, int accept);
/* ms until MHD needs http_run() again even without I/O (0: now; -1: no need). */
int64_t http_timeout_ms(struct http_server *s);
void http_stop(struct http_server *s);
/* The server as the engine loop's source (engine_attach_source): run, timeouts, drain. */
struct engine_source;
void http_engine_source(struct http_server *s, struct engine_source *src);
/* Replace the tokens (consumed; the old ones are freed) and auth flags after a reload. Thread-safe.
 */
void http_set_auth(struct http_server *s, struct tokens *t, int callers_require_token,
		   int metrics_public);

/* Connections by state, and what the front turned away (for /metrics). */
enum http_conn_state { HTTP_CONN_READING = 0, HTTP_CONN_ACTIVE, HTTP_CONN_IDLE, HTTP_CONN__COUNT };
enum http_refusal {
	HTTP_REFUSED_CAPACITY = 0,   /* max_connections reached: 503 and close */
	HTTP_REFUSED_PER_IP,	     /* max_connections_per_ip reached: 503 and close */
	HTTP_REFUSED_FD_LIMIT,	     /* accept() out of descriptors: 503 and close */
	HTTP_REFUSED_HEADER_TIMEOUT, /* headers not in within header_timeout_s: 408 and close */
	HTTP_REFUSED_BODY_MEMORY,    /* max_buffered_body_bytes reached or no memory: 503 */
	HTTP_REFUSED__COUNT,
};
struct http_conn_stats {
	int64_t conns[HTTP_CONN__COUNT];
	uint64_t refused[HTTP_REFUSED__COUNT];
	int64_t buffered_body_bytes;
};
void http_conn_stats(struct http_server *s, struct http_conn_stats *out);
const char *http_conn_state_name(enum http_conn_state st);
const char *http_refusal_name(enum http_refusal why);

/* Add a response header (copied). At most HTTP_MAX_RESP_HEADERS. */
void http_req_add_header(struct http_req *r, const char *name, const char *value);
/* Answer r with status and body (consumed; NULL for none); thread-safe;
 * resumes the suspended connection. Exactly once per request, on the engine thread.
 * When an allocation for r failed (a header, an error body), the answer is
 * 503 out_of_memory with Retry-After instead, and the connection closes. */
void http_respond(struct http_req *r, unsigned status, char *body, size_t len);
/* Answer {"error":{"code","message"}} with status. */
void http_respond_error(struct http_req *r, unsigned status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * Streaming answers (Server-Sent Events). http_stream_begin() answers r
 * with status and a body of unknown length (chunked) that the handler
 * feeds with http_stream_write() as data arrives (engine thread), and
 * closes with http_stream_end(); after that the handler must not touch r.
 * Writes are buffered up to HTTP_STREAM_MAX bytes (-E2BIG beyond);
 * -EPIPE once the client is gone; -ENOMEM when the buffer cannot grow (the
 * stream is then cut without its final chunk: the client sees it fail).
 * The connection sleeps (suspended) while the buffer is empty: no busy
 * loop, no thread per stream.
 */
#define HTTP_STREAM_MAX (4 * 1024 * 1024)
void http_stream_begin(struct http_req *r, unsigned status, const char *content_type);
int http_stream_write(struct http_req *r, const char *data, size_t len);
void http_stream_end(struct http_req *r);

/* Case-insensitive request header / query argument lookup; NULL when absent. */
const char *http_req_header(const struct http_req *r, const char *name);
const char *http_req_arg(const struct http_req *r, const char *name);
