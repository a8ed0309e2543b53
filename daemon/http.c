/*
 * http: libmicrohttpd front end (the MHD glue, dispatch, answers and
 * streams), run by the engine thread.
 *
 * MHD has no thread of its own: its epoll descriptor sits in the engine's
 * epoll set, beside a set holding the listen socket, and the engine calls
 * http_run() when either is readable (or MHD has work pending). So a
 * request is read, routed, handled and — when the answer is known at once
 * — written in one turn of one thread, with no hand-over between threads
 * (each hand-over cost two wake-ups on the bench machine, and a scheduler
 * slice when the other core was busy).
 *
 * Connections are accepted by http_conn.c, not by MHD: so a connection
 * over a cap gets a 503 instead of waiting in the backlog, and a
 * connection whose headers trickle in is closed with a 408. Each request
 * is screened on its headers before any body is read (http_screen.c).
 *
 * A request moves READING (or REFUSED, its error set) → DISPATCHED (handler running, or suspended
 * while the call waits) → DONE (response set) → freed by req_completed().
 * A handler that answers inside http_access() (r->inline_call) is queued
 * at once; a later answer resumes the suspended connection and the
 * engine's next http_run() writes it. srv->lock guards the hand-over
 * fields (kept although everything runs on the engine thread today: the
 * stream reader and reload may touch them from MHD's callbacks) and the
 * ORPHANED case (MHD dropped the connection while a handler still holds
 * the request: the handler's later http_respond() frees it instead).
 *
 * Out of memory on a request path never aborts: whatever this front
 * allocates for a request (its context, URL, headers, body, error bodies,
 * response headers, a stream's buffer) may fail; the request is then
 * answered 503 out_of_memory with Retry-After from a static body, and its
 * connection closed; when not even MHD's response can be had, MHD closes
 * the connection. Allocations at start-up still abort.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "http_int.h"
#include "jsonutil.h"
#include "log.h"

/* REQ_REFUSED: the error is set; the rest of the body is discarded. */
enum req_state { REQ_READING = 0, REQ_REFUSED, REQ_DISPATCHED, REQ_DONE, REQ_QUEUED, REQ_ORPHANED };

#define MAX_URL_BYTES 4096

/* The answer when memory ran out: static, so that sending it allocates
 * nothing but MHD's response. */
static const char oom_body[] = "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"the server "
			       "is out of memory; retry shortly\",\"type\":\"server_error\"}}";
/* *con_cls of a request whose context could not be allocated (answered already). */
static char oom_mark;

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

static void
req_free(struct http_req *r)
{
	int i;

	if (r == NULL)
		return;
	if (r->reserved) {
		pthread_mutex_lock(&r->srv->lock);
		r->srv->buffered -= r->reserved;
		pthread_mutex_unlock(&r->srv->lock);
	}
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
	if (r->stream)
		buf_free(&r->stream->pending);
	free(r->resp_body);
	for (i = 0; i < r->nresp_hdrs; i++)
		free(r->resp_hdrs[i].k);
	free(r);
}

/* MHD asks for more of a streaming body (inside http_run()). */
static ssize_t
stream_reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_req *r = cls;
	struct http_stream *st = r->stream;
	ssize_t n = 0;

	pthread_mutex_lock(&r->srv->lock);
	if (st->failed) {
		/* Cut: no final chunk, so the client sees the stream fail. */
		n = MHD_CONTENT_READER_END_WITH_ERROR;
	} else if (st->pending.len > st->taken) {
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

/* Queue the static 503 out_of_memory and close; MHD_NO (MHD closes) when even that fails. */
static enum MHD_Result
queue_oom(struct http_server *s, struct MHD_Connection *conn)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	refusal_note(s, HTTP_REFUSED_BODY_MEMORY);
	resp = MHD_create_response_from_buffer(sizeof oom_body - 1, (void *)oom_body,
					       MHD_RESPMEM_PERSISTENT);
	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
queue_response(struct http_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	int i;

	if (r->oom) {
		r->state = REQ_QUEUED;
		return queue_oom(r->srv, r->conn);
	}
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
	if (r->close_after)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(r->conn, r->status, resp);
	MHD_destroy_response(resp);
	r->state = REQ_QUEUED;
	return ret;
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
	size_t ulen;

	if (*con_cls == &oom_mark) {
		/* Answered 503 already: the rest of the body is discarded. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r == NULL) {
		conn_request_begins(s, conn);
		/* Out of memory on a request path: answer 503 and close, never abort. */
		r = calloc(1, sizeof *r);
		if (r == NULL) {
			*con_cls = &oom_mark;
			return queue_oom(s, conn);
		}
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
		r->url = strdup(ulen > MAX_URL_BYTES ? "/" : url);
		if (r->url == NULL) {
			r->oom = 1;
		} else if (ulen > MAX_URL_BYTES) {
			set_error(r, 414, "uri_too_long", "request URL longer than 4096 bytes");
			r->state = REQ_REFUSED;
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
		if (!r->oom)
			MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_kv, r);
		if (!r->oom)
			MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_kv, r);
		if (!r->oom && r->state == REQ_READING && req_screen(s, r, conn, version) != 0)
			r->state = REQ_REFUSED;
		if (r->oom) {
			r->state = REQ_REFUSED;
			r->close_after = 1;
		}
		/* Queued now, MHD reads no body and closes after the answer:
		 * nothing after a refused request is read as a request. */
		if (r->state == REQ_REFUSED && r->close_after)
			return queue_response(r);
		return MHD_YES;
	}
	if (r->state == REQ_READING || r->state == REQ_REFUSED) {
		if (*upload_data_size) {
			/* MHD 0.9.75 refuses a response while upload data is
			 * pending: discard the rest, answer at the end. */
			if (r->state == REQ_READING &&
			    body_append(s, r, upload_data, *upload_data_size) != 0) {
				r->state = REQ_REFUSED;
				r->close_after = 1;
				buf_free(&r->body);
			}
			*upload_data_size = 0;
			return MHD_YES;
		}
		if (r->state == REQ_REFUSED)
			return queue_response(r);
		r->recv_us = clock_mono_us();
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
	struct http_stream *st = &r->stream_mem;
	int resume;

	memset(st, 0, sizeof *st);
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
	} else if (st->failed) {
		rc = -ENOMEM;
	} else {
		rc = buf_try_append(&st->pending, data, len);
		if (rc == -ENOMEM)
			st->failed = 1;
		if ((rc == 0 || st->failed) && st->suspended) {
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
	char msg[512], *body;
	va_list ap;
	size_t len = 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	body = error_body(status, code, msg, &len);
	if (body == NULL)
		r->oom = 1; /* answered 503 out_of_memory instead */
	http_respond(r, status, body, len);
}

static void
req_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
	      enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct http_req *r = *con_cls;
	int orphan = 0;

	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		conn_request_ends(s, conn);
	if (r == NULL || (void *)r == (void *)&oom_mark) {
		*con_cls = NULL; /* no context: nothing to free */
		return;
	}
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

static void
server_free(struct http_server *s)
{
	struct ipslot *p, *n;
	int i;

	if (s->lfd >= 0)
		close(s->lfd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	for (i = 0; i < IP_BUCKETS; i++)
		for (p = s->ipt[i]; p != NULL; p = n) {
			n = p->next;
			free(p);
		}
	for (i = 0; i < s->nhosts; i++)
		free(s->hosts[i]);
	free(s->hosts);
	for (i = 0; i < s->norigins; i++)
		free(s->origins[i]);
	free(s->origins);
	free(s->listen_host);
	tokens_free(s->tokens);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int
http_start(const struct http_opts *o, struct engine *e, struct http_server **out, char **cause)
{
	struct http_server *s = NULL;
	struct sockaddr_storage ss;
	socklen_t sslen;
	const union MHD_DaemonInfo *di;
	/* No MHD thread: the engine runs MHD (see the top of this file); we
	 * accept, MHD has no listen socket. */
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
			 MHD_USE_NO_LISTEN_SOCKET;
	struct epoll_event ev;
	int r = 0, i, one = 1;

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
	} else {
		*cause = xasprintf("listen: cannot parse address \"%s\"", o->host);
		r = -EINVAL;
		goto out;
	}
	s = xcalloc(1, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	s->lfd = s->epfd = s->spare_fd = -1;
	s->max_connections = o->max_connections;
	s->max_per_ip = o->max_connections_per_ip;
	s->max_buffered = o->max_buffered_body_bytes;
	s->body_timeout_s = o->conn_timeout_s;
	s->header_timeout_s = o->header_timeout_s;
	s->idle_timeout_s = o->idle_timeout_s > 0 ? o->idle_timeout_s : o->conn_timeout_s;
	s->listen_host = xstrdup(o->host);
	s->hosts = xcalloc((size_t)MAX(o->nallowed_hosts, 1), sizeof *s->hosts);
	for (i = 0; i < o->nallowed_hosts; i++)
		s->hosts[s->nhosts++] = xstrdup(o->allowed_hosts[i]);
	reqcheck_self_init(&s->self, s->listen_host, s->hosts, s->nhosts);
	s->origins = xcalloc((size_t)MAX(o->nallowed_origins, 1), sizeof *s->origins);
	for (i = 0; i < o->nallowed_origins; i++)
		s->origins[s->norigins++] = xstrdup(o->allowed_origins[i]);
	s->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd >= 0) {
		setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (ss.ss_family == AF_INET6)
			setsockopt(s->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	}
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&ss, sslen) != 0 ||
	    listen(s->lfd, 4096) != 0) {
		*cause = xasprintf("listen: cannot bind %s:%d (%s)", o->host, o->port,
				   strerror(errno));
		r = -EADDRINUSE;
		goto out;
	}
	sslen = sizeof ss;
	getsockname(s->lfd, (struct sockaddr *)&ss, &sslen);
	s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->engine = e;
	s->tables = o->tables;
	s->ntables = o->ntables;
	s->max_body_bytes = o->max_body_bytes;
	s->callers_require_token = o->callers_require_token;
	s->metrics_public = o->metrics_public;
	s->tokens = o->tokens;
	/* MHD's own cap is above ours: ours answers 503 first. */
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, http_access, s, MHD_OPTION_NOTIFY_COMPLETED,
				  req_completed, s, MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections + 64,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->idle_timeout_s,
				  /* The connection's pool (HTTP_CONN_POOL_BYTES): the request
				   * line and headers must fit in it. */
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_POOL_BYTES,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (s->mhd == NULL) {
		*cause = xasprintf("listen: libmicrohttpd did not start (%s)", strerror(errno));
		r = -ENOSYS;
		goto out;
	}
	di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	s->mhd_epfd = di ? di->epoll_fd : -1;
	/* The listen socket has an epoll set of its own beside MHD's, so the
	 * engine knows which one woke it (http_run accepts only then). */
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->mhd_epfd < 0 || s->epfd < 0) {
		*cause = xasprintf("listen: libmicrohttpd has no epoll descriptor");
		r = -ENOSYS;
		goto out;
	}
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.fd = s->lfd;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) != 0) {
		*cause = xasprintf("listen: cannot watch the listen socket (%s)", strerror(errno));
		r = -errno;
		goto out;
	}
	*out = s;
	s = NULL;
out:
	if (s) {
		if (s->mhd)
			MHD_stop_daemon(s->mhd);
		s->tokens = NULL; /* freed below */
		server_free(s);
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
	return s->mhd_epfd;
}

int
http_accept_fd(const struct http_server *s)
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
http_run(struct http_server *s, int accept)
{
	struct epoll_event ev;

	pthread_mutex_lock(&s->lock);
	s->resumed = 0;
	pthread_mutex_unlock(&s->lock);
	if (s->lfd_off && s->lfd >= 0 && clock_mono_ms() >= s->rearm_ms) {
		memset(&ev, 0, sizeof ev);
		ev.events = EPOLLIN;
		ev.data.fd = s->lfd;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) == 0) {
			s->lfd_off = 0;
			accept = 1; /* what waited meanwhile, at once */
		} else {
			s->rearm_ms = clock_mono_ms() + 100;
		}
	}
	if (accept)
		conn_accept_all(s);
	conn_expire(s);
	MHD_run(s->mhd);
}

int64_t
http_timeout_ms(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG to;
	int64_t ms = -1, now = clock_mono_ms(), due = INT64_MAX;

	if (MHD_get_timeout(s->mhd, &to) == MHD_YES)
		ms = to > INT64_MAX ? INT64_MAX : (int64_t)to;
	if (s->fresh.head)
		due = s->fresh.head->deadline_ms;
	if (s->kept.head && s->kept.head->deadline_ms < due)
		due = s->kept.head->deadline_ms;
	if (s->lfd_off && s->rearm_ms < due)
		due = s->rearm_ms;
	if (due != INT64_MAX && (ms < 0 || due - now < ms))
		ms = due > now ? due - now : 0;
	return ms;
}

void
http_stop(struct http_server *s)
{
	if (s == NULL)
		return;
	if (s->mhd)
		MHD_stop_daemon(s->mhd); /* closes every connection (conn_notify frees ours) */
	server_free(s);
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
src_run(void *arg, int accept)
{
	http_run(arg, accept);
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
		.accept_fd = http_accept_fd(s),
		.arg = s,
		.run = src_run,
		.timeout_ms = src_timeout_ms,
		.pending = src_pending,
		.active = src_active,
		.quiesce = src_quiesce,
	};
}
