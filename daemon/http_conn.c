/*
 * http_conn: the connection layer of the HTTP front. Connections are
 * accepted here, not by MHD (MHD_USE_NO_LISTEN_SOCKET), and handed to it
 * with MHD_add_connection(): so a connection over a cap (max_connections,
 * max_connections_per_ip, out of descriptors) gets a 503 instead of
 * waiting in the backlog, and a connection whose headers trickle in is
 * closed with a 408. Counts by state and refusals feed /metrics. Engine
 * thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "http_int.h"
#include "log.h"

#define ACCEPT_BATCH  64    /* connections accepted per http_run() */
#define WARN_EVERY_MS 10000 /* one warning per refusal reason at most this often */

static const char *const state_names[HTTP_CONN__COUNT] = {"reading", "active", "idle"};
static const char *const refusal_names[HTTP_REFUSED__COUNT] = {"capacity", "per_ip", "fd_limit",
							       "header_timeout", "body_memory"};

const char *
http_conn_state_name(enum http_conn_state st)
{
	return (unsigned)st < HTTP_CONN__COUNT ? state_names[st] : NULL;
}

const char *
http_refusal_name(enum http_refusal why)
{
	return (unsigned)why < HTTP_REFUSED__COUNT ? refusal_names[why] : NULL;
}

void
http_conn_stats(struct http_server *s, struct http_conn_stats *out)
{
	memset(out, 0, sizeof *out);
	memcpy(out->conns, s->nstate, sizeof out->conns);
	memcpy(out->refused, s->refused, sizeof out->refused);
	pthread_mutex_lock(&s->lock);
	out->buffered_body_bytes = s->buffered;
	pthread_mutex_unlock(&s->lock);
}

/* Count a refusal and warn, at most once per WARN_EVERY_MS for each reason. */
void
refusal_note(struct http_server *s, enum http_refusal why)
{
	int64_t now = clock_mono_ms();

	s->refused[why]++;
	s->unwarned[why]++;
	if (s->warned_ms[why] != 0 && now - s->warned_ms[why] < WARN_EVERY_MS)
		return;
	switch (why) {
	case HTTP_REFUSED_CAPACITY:
		log_warn("http",
			 "connection cap reached (%d open): %llu connection(s) answered 503",
			 s->max_connections, (unsigned long long)s->unwarned[why]);
		break;
	case HTTP_REFUSED_PER_IP:
		log_warn("http",
			 "per-address cap reached (max_connections_per_ip %d): %llu connection(s) "
			 "answered 503",
			 s->max_per_ip, (unsigned long long)s->unwarned[why]);
		break;
	case HTTP_REFUSED_FD_LIMIT:
		log_warn("http",
			 "out of file descriptors: %llu connection(s) answered 503 (raise the "
			 "descriptor limit, LimitNOFILE)",
			 (unsigned long long)s->unwarned[why]);
		break;
	case HTTP_REFUSED_HEADER_TIMEOUT:
		log_warn("http",
			 "%llu connection(s) closed: headers not received within "
			 "http.header_timeout_s (%d s)",
			 (unsigned long long)s->unwarned[why], s->header_timeout_s);
		break;
	default:
		log_warn("http",
			 "%llu request(s) answered 503: buffered bodies at max_buffered_body_bytes "
			 "(%lld) or out of memory",
			 (unsigned long long)s->unwarned[why], (long long)s->max_buffered);
		break;
	}
	s->warned_ms[why] = now;
	s->unwarned[why] = 0;
}

static struct ipslot **
ip_bucket(struct http_server *s, const unsigned char addr[16])
{
	uint32_t h = 2166136261u;
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619u;
	return &s->ipt[h % IP_BUCKETS];
}

/* The slot of the address of sa (created with n = 0), or NULL (no memory, not IP). */
static struct ipslot *
ip_get(struct http_server *s, const struct sockaddr *sa)
{
	unsigned char a[16] = {0};
	struct ipslot **b, *p;

	if (sa->sa_family == AF_INET) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else {
		return NULL;
	}
	b = ip_bucket(s, a);
	for (p = *b; p != NULL; p = p->next)
		if (memcmp(p->addr, a, 16) == 0)
			return p;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return NULL;
	memcpy(p->addr, a, 16);
	p->next = *b;
	*b = p;
	return p;
}

static void
ip_put(struct http_server *s, struct ipslot *ip)
{
	struct ipslot **pp;

	if (ip == NULL || --ip->n > 0)
		return;
	for (pp = ip_bucket(s, ip->addr); *pp != ip; pp = &(*pp)->next)
		;
	*pp = ip->next;
	free(ip);
}

static void
conn_unlist(struct conn *k)
{
	struct conn_list *l = k->list;

	if (l == NULL)
		return;
	if (k->prev)
		k->prev->next = k->next;
	else
		l->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		l->tail = k->prev;
	k->prev = k->next = NULL;
	k->list = NULL;
}

static void
conn_list_push(struct conn_list *l, struct conn *k, int64_t deadline_ms)
{
	conn_unlist(k);
	k->deadline_ms = deadline_ms;
	k->list = l;
	k->prev = l->tail;
	k->next = NULL;
	if (l->tail)
		l->tail->next = k;
	else
		l->head = k;
	l->tail = k;
}

static void
conn_set_state(struct http_server *s, struct conn *k, enum http_conn_state st)
{
	s->nstate[k->state]--;
	k->state = st;
	s->nstate[st]++;
}

static void
conn_drop(struct http_server *s, struct conn *k)
{
	conn_unlist(k);
	s->nstate[k->state]--;
	s->nconns--;
	ip_put(s, k->ip);
	free(k);
}

static struct conn *
conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

void
conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
	    enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *s = cls;
	struct conn *k;

	(void)c;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = s->adding;
		return;
	}
	k = *socket_context;
	*socket_context = NULL;
	if (k == NULL)
		return;
	if (k == s->adding)
		s->add_closed = 1;
	conn_drop(s, k);
}

/*
 * Write a complete error answer on a socket MHD does not (or no longer)
 * read, best effort. The caller closes or shuts it down.
 */
static void
raw_answer(int fd, unsigned status, const char *reason, const char *code, const char *message)
{
	char body[320], out[640];
	int bn, n;

	bn = snprintf(body, sizeof body,
		      "{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"type\":\"%s\"}}", code,
		      message, status >= 500 ? "server_error" : "invalid_request_error");
	n = snprintf(out, sizeof out,
		     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
		     "Connection: close\r\n%s\r\n%s",
		     status, reason, bn, status == 503 ? "Retry-After: 1\r\n" : "", body);
	if (n > 0 && (size_t)n < sizeof out)
		(void)!send(fd, out, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Answer 503 on a connection we will not serve, and close it. */
static void
conn_refuse(struct http_server *s, int fd, enum http_refusal why)
{
	static const char *const msgs[] = {
		[HTTP_REFUSED_CAPACITY] = "too many open connections",
		[HTTP_REFUSED_PER_IP] = "too many open connections from your address",
		[HTTP_REFUSED_FD_LIMIT] = "the server is out of file descriptors",
	};
	char sink[4096];
	int i;

	raw_answer(fd, 503, "Service Unavailable", "too_many_connections", msgs[why]);
	/* Read what the client already sent, so that the close is a FIN, not a
	 * reset that could discard the answer on its side. */
	for (i = 0; i < 4 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
		;
	shutdown(fd, SHUT_WR);
	close(fd);
	refusal_note(s, why);
}

static int
conn_admit(struct http_server *s, int fd, const struct sockaddr *sa, socklen_t sl)
{
	struct ipslot *ip = NULL;
	struct conn *k;

	if (s->nconns >= s->max_connections) {
		conn_refuse(s, fd, HTTP_REFUSED_CAPACITY);
		return -EBUSY;
	}
	k = calloc(1, sizeof *k);
	if (k == NULL) {
		conn_refuse(s, fd, HTTP_REFUSED_CAPACITY);
		return -ENOMEM;
	}
	if (s->max_per_ip > 0 && (ip = ip_get(s, sa)) != NULL && ip->n >= s->max_per_ip) {
		free(k);
		conn_refuse(s, fd, HTTP_REFUSED_PER_IP);
		return -EBUSY;
	}
	if (ip)
		ip->n++;
	k->ip = ip;
	k->fd = fd;
	k->state = HTTP_CONN_READING;
	s->nstate[HTTP_CONN_READING]++;
	s->nconns++;
	if (s->header_timeout_s > 0)
		conn_list_push(&s->fresh, k, clock_mono_ms() + 1000LL * s->header_timeout_s);
	s->adding = k;
	s->add_closed = 0;
	if (MHD_add_connection(s->mhd, fd, sa, sl) != MHD_YES) {
		/* MHD closed the socket. */
		if (!s->add_closed)
			conn_drop(s, k);
		s->adding = NULL;
		s->refused[HTTP_REFUSED_CAPACITY]++;
		return -ENOMEM;
	}
	s->adding = NULL;
	return 0;
}

int
http_adopt(struct http_server *s, int fd, const struct sockaddr *sa, unsigned sa_len)
{
	return conn_admit(s, fd, sa, (socklen_t)sa_len);
}

void
conn_accept_all(struct http_server *s)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int i, fd;

	for (i = 0; i < ACCEPT_BATCH && s->lfd >= 0 && !s->lfd_off; i++) {
		sl = sizeof ss;
		fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			conn_admit(s, fd, (struct sockaddr *)&ss, sl);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EMFILE && errno != ENFILE)
			return; /* EAGAIN: the backlog is empty */
		if (s->spare_fd >= 0) {
			/* Out of descriptors: give up the spare one to answer. */
			close(s->spare_fd);
			s->spare_fd = -1;
			fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl,
				     SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd >= 0)
				conn_refuse(s, fd, HTTP_REFUSED_FD_LIMIT);
			s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (fd >= 0 && s->spare_fd >= 0)
				continue;
		}
		/* No spare either: stop watching the listen socket for a while
		 * rather than spin on it. */
		refusal_note(s, HTTP_REFUSED_FD_LIMIT);
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
		s->lfd_off = 1;
		s->rearm_ms = clock_mono_ms() + 100;
		return;
	}
}

/* Close the connections whose headers did not arrive in time (408). */
void
conn_expire(struct http_server *s)
{
	struct conn_list *lists[2] = {&s->fresh, &s->kept};
	int64_t now = clock_mono_ms();
	struct conn *k;
	int i;

	for (i = 0; i < 2; i++) {
		while ((k = lists[i]->head) != NULL && k->deadline_ms <= now) {
			conn_unlist(k);
			raw_answer(k->fd, 408, "Request Timeout", "request_timeout",
				   "request headers not received in time");
			/* MHD reads the end of the stream and closes the connection. */
			shutdown(k->fd, SHUT_RDWR);
			refusal_note(s, HTTP_REFUSED_HEADER_TIMEOUT);
		}
	}
}

/* The connection of conn received a request's headers. */
void
conn_request_begins(struct http_server *s, struct MHD_Connection *conn)
{
	struct conn *k = conn_of(conn);

	if (k == NULL)
		return;
	conn_unlist(k);
	conn_set_state(s, k, HTTP_CONN_ACTIVE);
	MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)s->body_timeout_s);
}

/* A request ended; the connection may carry another one. */
void
conn_request_ends(struct http_server *s, struct MHD_Connection *conn)
{
	struct conn *k = conn_of(conn);

	if (k == NULL || k->state != HTTP_CONN_ACTIVE)
		return;
	conn_set_state(s, k, HTTP_CONN_IDLE);
	MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)s->idle_timeout_s);
	if (s->header_timeout_s > 0)
		conn_list_push(&s->kept, k,
			       clock_mono_ms() +
				       1000LL * (s->idle_timeout_s + s->header_timeout_s));
}

void
http_quiesce(struct http_server *s)
{
	if (s && s->lfd >= 0) {
		if (!s->lfd_off)
			epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
		close(s->lfd);
		s->lfd = -1;
	}
}
