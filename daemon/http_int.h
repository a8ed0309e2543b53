#pragma once
/*
 * http_int: what the files of the HTTP front share (http.c: the MHD glue,
 * dispatch, answers and streams; http_screen.c: a request's headers
 * checked before its body; http_conn.c: the connection layer; http_req.c:
 * a request's header, argument and error fields). Private to them. Engine
 * thread (srv->lock where a field says so).
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "reqcheck.h"

#define MAX_HEADERS 64
/* A body up to this long is small: it may use the quarter of
 * max_buffered_body_bytes that large bodies leave (http_screen.c). */
#define HTTP_SMALL_BODY_BYTES (16 * 1024)
#define IP_BUCKETS	      1024 /* per-address counts (max_connections_per_ip) */
/*
 * libmicrohttpd's memory pool of a connection (MHD_OPTION_CONNECTION_MEMORY_LIMIT):
 * the request line and header block are read into it (and its header
 * entries, ~50 bytes each, taken from its end); bodies pass through it in
 * increments and are buffered by us. So it bounds the header block we
 * accept: ~13.8 KB of request line and headers (64 at most, MAX_HEADERS),
 * 431 from 14 KiB (MHD's own page; in between MHD 0.9.75 closes without
 * an answer; it was ~15.4 KB with 16 KiB). A waiting call touches two pages:
 * the first (the bytes read) and the last (the header entries). 14 KiB is
 * below 32 KiB (MHD takes the pool from malloc, not mmap: a munmap per
 * connection costs a TLB shootdown on every core) and, not a multiple of
 * the page, packs two pools into 7 pages in jemalloc's slabs (glibc's heap
 * places them back to back alike): the last page of one is the first of
 * the next, 1.5 pages touched a waiting connection instead of 2 with 16
 * KiB (waiting bench: -2.7 KiB per held call at 10,000; -49 MB at the
 * peak, when MHD writes the answers in the pools).
 */
#define HTTP_CONN_POOL_BYTES (14 * 1024)

/*
 * A TCP connection, from accept to MHD's close (its socket context). A
 * connection waiting for a request's headers is on one of two lists in
 * deadline order (every entry of a list has the same timeout): fresh
 * ones (header_timeout_s from accept) and kept-alive ones (idle_timeout_s
 * + header_timeout_s from the end of the previous request).
 */
struct conn {
	struct conn *prev, *next;
	struct ipslot *ip; /* NULL when no per-address cap */
	int fd;
	enum http_conn_state state;
	struct conn_list *list;
	int64_t deadline_ms;
};

struct conn_list {
	struct conn *head, *tail;
};

struct ipslot {
	struct ipslot *next;
	unsigned char addr[16]; /* IPv4 as ::ffff:a.b.c.d */
	int n;
};

struct http_server {
	struct MHD_Daemon *mhd;
	struct engine *engine;
	pthread_mutex_t lock;
	int port;
	int64_t max_body_bytes;
	/* The connection layer: our listen socket, accepted by http_conn.c and handed
	 * to MHD (MHD_USE_NO_LISTEN_SOCKET), so that a connection over a cap
	 * is answered 503 and closed rather than left in the backlog. Engine
	 * thread only. */
	int lfd;      /* -1 after quiesce */
	int lfd_off;  /* taken out of epfd until rearm_ms (out of descriptors) */
	int spare_fd; /* given up to accept and refuse when out of descriptors */
	int64_t rearm_ms;
	int mhd_epfd;
	int max_connections, max_per_ip;
	int header_timeout_s, idle_timeout_s, body_timeout_s;
	int64_t max_buffered, buffered; /* request body bytes, under lock */
	int nconns;
	int64_t nstate[HTTP_CONN__COUNT];
	uint64_t refused[HTTP_REFUSED__COUNT];
	int64_t warned_ms[HTTP_REFUSED__COUNT];
	uint64_t unwarned[HTTP_REFUSED__COUNT];
	struct conn_list fresh, kept;
	struct ipslot *ipt[IP_BUCKETS];
	struct conn *adding; /* inside MHD_add_connection() */
	int add_closed;	     /* MHD closed it there */
	char *listen_host;
	struct reqcheck_self self; /* Host checks: listen_host and hosts */
	char **hosts, **origins;
	int nhosts, norigins;
	int callers_require_token;
	int metrics_public;
	struct tokens *tokens; /* owned; swapped under lock by http_set_auth() */
	int active;	       /* requests between arrival and MHD's completion */
	int resumed;	       /* connections resumed since the last http_run() */
	int epfd;	       /* ours, in the engine's set beside mhd_epfd: the listen socket */
	const struct endpoint *const *tables; /* borrowed (http_opts.tables) */
	int ntables;
};

/* http_req.c: the request's fields. */
enum MHD_Result collect_kv(void *cls, enum MHD_ValueKind kind, const char *key, const char *value);
const char *error_type(unsigned status);
/* The JSON error body (malloc'ed, *len set), or NULL when out of memory: never aborts. */
char *error_body(unsigned status, const char *code, const char *message, size_t *len);
/* r's answer becomes this error (r->oom when its body cannot be allocated). */
void set_error(struct http_req *r, unsigned status, const char *code, const char *message);

/* http_conn.c: the connection layer. */
void refusal_note(struct http_server *s, enum http_refusal why);
void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		 enum MHD_ConnectionNotificationCode toe);
void conn_accept_all(struct http_server *s);
void conn_expire(struct http_server *s);
void conn_request_begins(struct http_server *s, struct MHD_Connection *conn);
void conn_request_ends(struct http_server *s, struct MHD_Connection *conn);

/* http_screen.c: the checks on a request's headers, and its body's caps. */
int req_screen(struct http_server *s, struct http_req *r, struct MHD_Connection *conn,
	       const char *version);
int body_append(struct http_server *s, struct http_req *r, const char *p, size_t n);
