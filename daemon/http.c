/*
 * http: libmicrohttpd front end, run by the engine thread.
 *
 * MHD has no thread of its own: its epoll descriptor sits in the engine's
 * epoll set and the engine calls http_run() when it is readable (or MHD
 * has work pending). So a request is read, routed, handled and — when the
 * answer is known at once — written in one turn of one thread, with no
 * hand-over between threads (each hand-over cost two wake-ups on the
 * bench machine, and a scheduler slice when the other core was busy).
 *
 * A request moves READING → DISPATCHED (handler running, or suspended
 * while the call waits) → DONE (response set) → freed by req_completed().
 * A handler that answers inside http_access() (r->inline_call) is queued
 * at once; a later answer resumes the suspended connection and the
 * engine's next http_run() writes it. srv->lock guards the hand-over
 * fields (kept although everything runs on the engine thread today: the
 * stream reader and reload may touch them from MHD's callbacks) and the
 * ORPHANED case (MHD dropped the connection while a handler still holds
 * the request: the handler's later http_respond() frees it instead).
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "jsonutil.h"
#include "log.h"

enum req_state { REQ_READING = 0, REQ_TOO_BIG, REQ_DISPATCHED, REQ_DONE, REQ_QUEUED, REQ_ORPHANED };

#define MAX_URL_BYTES 4096
#define MAX_HEADERS   64

struct http_server {
	struct MHD_Daemon *mhd;
	struct engine *engine;
	pthread_mutex_t lock;
	int port;
	int64_t max_body_bytes;
	int callers_require_token;
	int metrics_public;
	struct tokens *tokens;		      /* owned; swapped under lock by http_set_auth() */
	int active;			      /* requests between arrival and MHD's completion */
	int resumed;			      /* connections resumed since the last http_run() */
	int epfd;			      /* MHD's epoll descriptor (in the engine's set) */
	const struct endpoint *const *tables; /* borrowed (http_opts.tables) */
	int ntables;
};

struct http_stream {
	struct buf pending; /* written, not yet taken by MHD */
	size_t taken;	    /* bytes of pending already handed to MHD */
	int ended;	    /* http_stream_end() ran */
	int gone;	    /* MHD completed the request (client left or all sent) */
	int suspended;	    /* the reader suspended the connection for lack of data */
};

static enum http_method
method_parse(const char *m)
{
	if (strcmp(m, "GET") == 0)
		return HTTP_GET;
	if (strcmp(m, "POST") == 0)
		return HTTP_POST;
	if (strcmp(m, "PUT") == 0)
		return HTTP_PUT;
	if (strcmp(m, "DELETE") == 0)
		return HTTP_DELETE;
	return HTTP_OTHER;
}

static const char *const method_names[] = {"GET", "POST", "PUT", "DELETE", "OTHER"};

static void
req_free(struct http_req *r)
{
	int i;

	if (r == NULL)
		return;
	free(r->url);
	for (i = 0; i < r->nparams; i++)
		free(r->params[i]);
	for (i = 0; i < r->nargs; i++)
		free(r->args[i].k); /* v lives in the same block (kv_set) */
	free(r->args);
	for (i = 0; i < r->nhdrs; i++)
		free(r->hdrs[i].k);
	free(r->hdrs);
	buf_free(&r->body);
	if (r->stream) {
		buf_free(&r->stream->pending);
		free(r->stream);
	}
	free(r->resp_body);
	for (i = 0; i < r->nresp_hdrs; i++)
		free(r->resp_hdrs[i].k);
	free(r);
}

/*
 * Match url against pattern; captures go to r->params. 1 on match.
 */
static int
pattern_match(const char *pattern, const char *url, struct http_req *r)
{
	const char *p = pattern, *u = url;
	char *caps[HTTP_MAX_PARAMS];
	int ncaps = 0, i;

	while (*p && *u) {
		if (p[0] == '{' && p[1] == '}') {
			const char *end = strchr(u, '/');
			size_t n = end ? (size_t)(end - u) : strlen(u);

			if (n == 0 || ncaps == HTTP_MAX_PARAMS)
				goto fail;
			caps[ncaps++] = xstrndup(u, n);
			u += n;
			p += 2;
			continue;
		}
		if (*p != *u)
			goto fail;
		p++;
		u++;
	}
	if (*p || *u)
		goto fail;
	if (r) {
		for (i = 0; i < ncaps; i++)
			r->params[i] = caps[i];
		r->nparams = ncaps;
	} else {
		for (i = 0; i < ncaps; i++)
			free(caps[i]);
	}
	return 1;
fail:
	for (i = 0; i < ncaps; i++)
		free(caps[i]);
	return 0;
}

/*
 * Find the endpoint for r. 0, or 404 / 405 (with *allow listing methods).
 */
static int
endpoint_find(struct http_req *r, const struct endpoint **out, char *allow, size_t allowlen)
{
	int t;
	const struct endpoint *e;
	int path_seen = 0;

	allow[0] = '\0';
	for (t = 0; t < r->srv->ntables; t++) {
		for (e = r->srv->tables[t]; e->pattern != NULL; e++) {
			if (!pattern_match(e->pattern, r->url, NULL))
				continue;
			path_seen = 1;
			if (e->method == r->method) {
				pattern_match(e->pattern, r->url, r);
				*out = e;
				return 0;
			}
			if (strstr(allow, method_names[e->method]) == NULL) {
				size_t n = strlen(allow);

				snprintf(allow + n, allowlen - n, "%s%s", n ? ", " : "",
					 method_names[e->method]);
			}
		}
	}
	return path_seen ? 405 : 404;
}

/* A name and its value copied into one block: k owns it, v points inside. */
static void
kv_set(struct http_kv *kv, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);

	kv->k = xmalloc(kl + vl + 2);
	memcpy(kv->k, key, kl + 1);
	kv->v = kv->k + kl + 1;
	memcpy(kv->v, value, vl + 1);
}

static enum MHD_Result
collect_kv(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct http_req *r = cls;
	struct http_kv **vp;
	int *np;

	if (kind == MHD_HEADER_KIND) {
		vp = &r->hdrs;
		np = &r->nhdrs;
	} else {
		vp = &r->args;
		np = &r->nargs;
	}
	if (*np >= MAX_HEADERS)
		return MHD_YES;
	/* grows 8, 16, 32, 64: one allocation for a usual request */
	if (*np == 0 || (*np >= 8 && (*np & (*np - 1)) == 0))
		*vp = xrealloc(*vp, (size_t)(*np < 8 ? 8 : 2 * *np) * sizeof **vp);
	kv_set(&(*vp)[*np], key, value ? value : "");
	(*np)++;
	return MHD_YES;
}

static const char *
kv_find(const struct http_kv *v, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcasecmp(v[i].k, name) == 0)
			return v[i].v;
	return NULL;
}

const char *
http_req_header(const struct http_req *r, const char *name)
{
	return kv_find(r->hdrs, r->nhdrs, name);
}

const char *
http_req_arg(const struct http_req *r, const char *name)
{
	return kv_find(r->args, r->nargs, name);
}

void
http_req_add_header(struct http_req *r, const char *name, const char *value)
{
	if (r->nresp_hdrs >= HTTP_MAX_RESP_HEADERS)
		return;
	kv_set(&r->resp_hdrs[r->nresp_hdrs], name, value);
	r->nresp_hdrs++;
}

/* MHD asks for more of a streaming body (inside http_run()). */
static ssize_t
stream_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_req *r = cls;
	struct http_stream *st = r->stream;
	ssize_t n = 0;

	pthread_mutex_lock(&r->srv->lock);
	if (st->pending.len > st->taken) {
		n = (ssize_t)MIN(max, st->pending.len - st->taken);
		memcpy(out, st->pending.data + st->taken, (size_t)n);
		st->taken += (size_t)n;
		if (st->taken == st->pending.len) {
			buf_reset(&st->pending);
			st->taken = 0;
		}
	} else if (st->ended) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		/* Nothing to send yet: sleep until http_stream_write() resumes us. */
		st->suspended = 1;
		MHD_suspend_connection(r->conn);
	}
	pthread_mutex_unlock(&r->srv->lock);
	return n;
}

static enum MHD_Result
queue_response(struct http_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	int i;

	if (r->stream)
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader,
							 r, NULL);
	else
		resp = MHD_create_response_from_buffer(
			r->resp_len, r->resp_body ? r->resp_body : (void *)"",
			r->resp_body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (resp == NULL)
		return MHD_NO;
	if (!r->stream)
		r->resp_body = NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->content_type ? r->content_type : "application/json");
	for (i = 0; i < r->nresp_hdrs; i++)
		MHD_add_response_header(resp, r->resp_hdrs[i].k, r->resp_hdrs[i].v);
	ret = MHD_queue_response(r->conn, r->status, resp);
	MHD_destroy_response(resp);
	r->state = REQ_QUEUED;
	return ret;
}

/*
 * The OpenAI error "type" for a status, so that every error body of the
 * daemon also reads as an OpenAI error ({"error":{"message","type","code"}})
 * to SDK clients of the facade.
 */
static const char *
error_type(unsigned status)
{
	switch (status) {
	case 401:
		return "authentication_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 429:
		return "rate_limit_error";
	default:
		return status >= 500 ? "server_error" : "invalid_request_error";
	}
}

static void
set_error(struct http_req *r, unsigned status, const char *code, const char *message)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");

	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddStringToObject(e, "type", error_type(status));
	free(r->resp_body);
	r->resp_body = json_print(o);
	r->resp_len = strlen(r->resp_body);
	r->status = status;
	cJSON_Delete(o);
}

/*
 * Authenticate r against the endpoint's access level. 0, or 401 / 403 with
 * the error body set.
 */
static int
auth_check(struct http_server *s, struct http_req *r)
{
	const char *h = http_req_header(r, "Authorization");
	const struct token *t = NULL;
	int need;

	int callers_require_token, metrics_public;

	snprintf(r->actor, sizeof r->actor, "anonymous");
	r->role = -1;
	/* The tokens may be swapped by a reload: look up under the lock and
	 * keep only copies (name, role). */
	pthread_mutex_lock(&s->lock);
	callers_require_token = s->callers_require_token;
	metrics_public = s->metrics_public;
	if (h && strncasecmp(h, "Bearer ", 7) == 0 && s->tokens) {
		t = tokens_find(s->tokens, h + 7);
		if (t) {
			snprintf(r->actor, sizeof r->actor, "%s", t->name);
			r->role = (int)t->role;
		}
	}
	pthread_mutex_unlock(&s->lock);
	switch (r->ep->access) {
	case ACCESS_OPEN:
		return 0;
	case ACCESS_DATA:
		if (!callers_require_token)
			return 0;
		need = ROLE_CALLER;
		break;
	case ACCESS_METRICS:
		if (metrics_public)
			return 0;
		need = ROLE_VIEWER;
		break;
	case ACCESS_VIEWER:
		need = ROLE_VIEWER;
		break;
	default:
		need = ROLE_OPERATOR;
		break;
	}
	if (r->role < 0) {
		set_error(r, 401, "unauthorized",
			  h ? "unknown token" : "missing Authorization: Bearer <token>");
		return 401;
	}
	if (r->role < need) {
		char msg[128];

		snprintf(msg, sizeof msg, "role %s may not do this (needs %s)",
			 role_name((enum role)r->role), role_name((enum role)need));
		set_error(r, 403, "forbidden", msg);
		return 403;
	}
	return 0;
}

/* Adds the length of one query argument ("&k=v") to *cls. */
static enum MHD_Result
arg_len(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	size_t *n = cls;

	*n += 2 + strlen(key) + (value ? strlen(value) : 0);
	return MHD_YES;
}

static enum MHD_Result
http_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	    const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct http_req *r = *con_cls;
	const union MHD_ConnectionInfo *ci;
	char allow[64];
	size_t ulen;
	int rc;

	if (r == NULL) {
		r = xcalloc(1, sizeof *r);
		r->conn = conn;
		r->srv = s;
		pthread_mutex_lock(&s->lock);
		s->active++;
		pthread_mutex_unlock(&s->lock);
		r->method = method_parse(method);
		r->role = -1;
		buf_init(&r->body, (size_t)s->max_body_bytes);
		ulen = strlen(url);
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, arg_len, &ulen);
		if (ulen > MAX_URL_BYTES) {
			r->url = xstrdup("/");
			set_error(r, 414, "uri_too_long", "request URL longer than 4096 bytes");
			r->state = REQ_TOO_BIG;
		} else {
			r->url = xstrdup(url);
		}
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ci && ci->client_addr) {
			const struct sockaddr *sa = ci->client_addr;

			if (sa->sa_family == AF_INET)
				inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
					  r->remote, sizeof r->remote);
			else if (sa->sa_family == AF_INET6)
				inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
					  r->remote, sizeof r->remote);
		}
		*con_cls = r;
		return MHD_YES;
	}
	if (r->state == REQ_READING || r->state == REQ_TOO_BIG) {
		if (*upload_data_size) {
			if (r->state == REQ_READING &&
			    buf_append(&r->body, upload_data, *upload_data_size) < 0) {
				char msg[96];

				snprintf(msg, sizeof msg,
					 "request body larger than max_body_bytes (%lld)",
					 (long long)s->max_body_bytes);
				/* MHD 0.9.75 refuses a response while upload data is
				 * pending: discard the rest, answer 413 at the end. */
				set_error(r, 413, "body_too_large", msg);
				r->state = REQ_TOO_BIG;
				buf_free(&r->body);
			}
			*upload_data_size = 0;
			return MHD_YES;
		}
		if (r->state == REQ_TOO_BIG)
			return queue_response(r);
		r->recv_us = clock_mono_us();
		MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_kv, r);
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_kv, r);
		rc = endpoint_find(r, &r->ep, allow, sizeof allow);
		if (rc == 404) {
			set_error(r, 404, "not_found", "no such endpoint");
			return queue_response(r);
		}
		if (rc == 405) {
			set_error(r, 405, "method_not_allowed", "method not allowed here");
			http_req_add_header(r, "Allow", allow);
			return queue_response(r);
		}
		if (auth_check(s, r) != 0)
			return queue_response(r);
		/* The handler runs here, on the engine thread: an answer known
		 * at once (rules, cache, an error) is written in this turn. */
		r->state = REQ_DISPATCHED;
		r->inline_call = 1;
		engine_http_request(s->engine);
		r->ep->handler(r, s->engine);
		r->inline_call = 0;
		if (r->state == REQ_DONE)
			return queue_response(r);
		MHD_suspend_connection(conn);
		return MHD_YES;
	}
	if (r->state == REQ_DONE)
		return queue_response(r);
	return MHD_YES;
}

void
http_respond(struct http_req *r, unsigned status, char *body, size_t len)
{
	struct http_server *s = r->srv;
	int orphaned, inline_answer;

	pthread_mutex_lock(&s->lock);
	free(r->resp_body);
	r->resp_body = body;
	r->resp_len = body ? len : 0;
	r->status = status;
	orphaned = r->state == REQ_ORPHANED;
	inline_answer = r->inline_call;
	r->state = REQ_DONE;
	if (!orphaned && !inline_answer)
		s->resumed++;
	pthread_mutex_unlock(&s->lock);
	if (orphaned)
		req_free(r);
	else if (!inline_answer)
		MHD_resume_connection(r->conn);
}

void
http_stream_begin(struct http_req *r, unsigned status, const char *content_type)
{
	struct http_stream *st = xcalloc(1, sizeof *st);
	int resume;

	buf_init(&st->pending, HTTP_STREAM_MAX);
	pthread_mutex_lock(&r->srv->lock);
	r->stream = st;
	r->content_type = content_type;
	r->status = status;
	if (r->state == REQ_ORPHANED) {
		/* The client left already: writes fail, http_stream_end() frees. */
		st->gone = 1;
		resume = 0;
	} else {
		r->state = REQ_DONE;
		resume = !r->inline_call;
		if (resume)
			r->srv->resumed++;
	}
	pthread_mutex_unlock(&r->srv->lock);
	if (resume)
		MHD_resume_connection(r->conn);
}

int
http_stream_write(struct http_req *r, const char *data, size_t len)
{
	struct http_stream *st = r->stream;
	int rc = 0;

	pthread_mutex_lock(&r->srv->lock);
	if (st->gone) {
		rc = -EPIPE;
	} else {
		rc = buf_append(&st->pending, data, len);
		if (rc == 0 && st->suspended) {
			st->suspended = 0;
			r->srv->resumed++;
			MHD_resume_connection(r->conn);
		}
	}
	pthread_mutex_unlock(&r->srv->lock);
	return rc;
}

void
http_stream_end(struct http_req *r)
{
	struct http_stream *st = r->stream;
	int free_now;

	pthread_mutex_lock(&r->srv->lock);
	st->ended = 1;
	free_now = st->gone;
	if (st->suspended && !st->gone) {
		st->suspended = 0;
		r->srv->resumed++;
		MHD_resume_connection(r->conn);
	}
	pthread_mutex_unlock(&r->srv->lock);
	if (free_now)
		req_free(r);
}

void
http_respond_error(struct http_req *r, unsigned status, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	cJSON *o, *e;
	char *body;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	o = cJSON_CreateObject();
	e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddStringToObject(e, "type", error_type(status));
	body = json_print(o);
	cJSON_Delete(o);
	http_respond(r, status, body, strlen(body));
}

static void
req_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
	      enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct http_req *r = *con_cls;
	int orphan = 0;

	if (r == NULL)
		return;
	*con_cls = NULL;
	pthread_mutex_lock(&s->lock);
	s->active--;
	if (r->state == REQ_DISPATCHED) {
		r->state = REQ_ORPHANED;
		orphan = 1;
	} else if (r->stream && !r->stream->ended) {
		/* The handler still writes: http_stream_end() frees it. */
		r->stream->gone = 1;
		orphan = 1;
	}
	pthread_mutex_unlock(&s->lock);
	if (!orphan)
		req_free(r);
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof line, fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("http", "%s", line);
}

int
http_start(const struct http_opts *o, struct engine *e, struct http_server **out, char **cause)
{
	struct http_server *s = NULL;
	struct sockaddr_storage ss;
	socklen_t sslen;
	const union MHD_DaemonInfo *di;
	/* No MHD thread: the engine runs MHD (see the top of this file). */
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	int r = 0;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, o->host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)o->port);
		sslen = sizeof *sin;
	} else if (inet_pton(AF_INET6, o->host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)o->port);
		sslen = sizeof *sin6;
		flags |= MHD_USE_IPv6;
	} else {
		*cause = xasprintf("listen: cannot parse address \"%s\"", o->host);
		r = -EINVAL;
		goto out;
	}
	(void)sslen;
	s = xcalloc(1, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	s->engine = e;
	s->tables = o->tables;
	s->ntables = o->ntables;
	s->max_body_bytes = o->max_body_bytes;
	s->callers_require_token = o->callers_require_token;
	s->metrics_public = o->metrics_public;
	s->tokens = o->tokens;
	s->mhd = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, http_access, s,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_NOTIFY_COMPLETED, req_completed, s,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->conn_timeout_s,
				  /* <= 32 KiB: MHD takes the pool from malloc, not mmap (a munmap
				   * per connection costs a TLB shootdown on every core); 16 KiB
				   * halves the per-request memset and still holds the request
				   * line and headers (bodies are buffered by us). */
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
				  MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096U, MHD_OPTION_EXTERNAL_LOGGER,
				  mhd_log, NULL, MHD_OPTION_END);
	if (s->mhd == NULL) {
		*cause = xasprintf("listen: cannot bind %s:%d (%s)", o->host, o->port,
				   strerror(errno));
		r = -EADDRINUSE;
		goto out;
	}
	di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : o->port;
	di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	s->epfd = di ? di->epoll_fd : -1;
	if (s->epfd < 0) {
		*cause = xasprintf("listen: libmicrohttpd has no epoll descriptor");
		MHD_stop_daemon(s->mhd);
		r = -ENOSYS;
		goto out;
	}
	*out = s;
	s = NULL;
out:
	if (s) {
		pthread_mutex_destroy(&s->lock);
		free(s);
	}
	if (r != 0)
		tokens_free(o->tokens);
	return r;
}

int
http_port(const struct http_server *s)
{
	return s->port;
}

void
http_quiesce(struct http_server *s)
{
	if (s && s->mhd) {
		MHD_socket fd = MHD_quiesce_daemon(s->mhd);

		/* External mode: the listen socket is ours to close now. */
		if (fd != MHD_INVALID_SOCKET)
			close(fd);
	}
}

int
http_active(struct http_server *s)
{
	int active;

	pthread_mutex_lock(&s->lock);
	active = s->active;
	pthread_mutex_unlock(&s->lock);
	return active;
}

int
http_epoll_fd(const struct http_server *s)
{
	return s->epfd;
}

int
http_pending(struct http_server *s)
{
	int n;

	pthread_mutex_lock(&s->lock);
	n = s->resumed;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void
http_run(struct http_server *s)
{
	pthread_mutex_lock(&s->lock);
	s->resumed = 0;
	pthread_mutex_unlock(&s->lock);
	MHD_run(s->mhd);
}

int64_t
http_timeout_ms(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG to;

	if (MHD_get_timeout(s->mhd, &to) != MHD_YES)
		return -1;
	return to > INT64_MAX ? INT64_MAX : (int64_t)to;
}

void
http_stop(struct http_server *s)
{
	if (s == NULL)
		return;
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	tokens_free(s->tokens);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void
http_set_auth(struct http_server *s, struct tokens *t, int callers_require_token,
	      int metrics_public)
{
	struct tokens *old;

	pthread_mutex_lock(&s->lock);
	old = s->tokens;
	s->tokens = t;
	s->callers_require_token = callers_require_token;
	s->metrics_public = metrics_public;
	pthread_mutex_unlock(&s->lock);
	tokens_free(old);
}

static void
src_run(void *arg)
{
	http_run(arg);
}

static int64_t
src_timeout_ms(void *arg)
{
	return http_timeout_ms(arg);
}

static int
src_pending(void *arg)
{
	return http_pending(arg);
}

static int
src_active(void *arg)
{
	return http_active(arg);
}

static void
src_quiesce(void *arg)
{
	http_quiesce(arg);
}

void
http_engine_source(struct http_server *s, struct engine_source *src)
{
	*src = (struct engine_source){
		.fd = http_epoll_fd(s),
		.arg = s,
		.run = src_run,
		.timeout_ms = src_timeout_ms,
		.pending = src_pending,
		.active = src_active,
		.quiesce = src_quiesce,
	};
}
