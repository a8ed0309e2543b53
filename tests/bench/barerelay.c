/*
 * barerelay: the floor of fuseboxd's libraries, for the facade bench. A
 * relay built the way the engine is — libmicrohttpd run from one epoll
 * loop (MHD_USE_EPOLL, requests suspended while upstream, resumed when the
 * answer is in), libcurl's multi interface on the same loop (socket and
 * timer callbacks, pooled keep-alive connections whose sockets stay in
 * the epoll set between transfers as the engine's do, easy handles reused
 * with curl_easy_reset) and the same per-transfer options (TCP_NODELAY,
 * Accept-Encoding, a 4 KiB receive buffer; X-Request-ID and traceparent,
 * not the guard's X-Fusebox-Attempt and X-Max-Wait) — and nothing else:
 * no parse, validation, routing, budget, breaker, log row, span or SLO
 * book. What fuseboxd costs above it is the guard; what it costs above
 * HAProxy is the two libraries.
 *
 * Every POST is relayed to --upstream with its body and Content-Type; the
 * answer goes back with the upstream's status and body (502 when the
 * transfer failed). An event stream (Content-Type text/event-stream) is
 * passed through as it comes, chunked, the way fuseboxd's streams are
 * written (a callback response fed from the transfer, the connection
 * suspended while there is nothing to send). Prints "listening on
 * 127.0.0.1:PORT" when ready; stops on SIGTERM or SIGINT, or by itself
 * after --max-s seconds (default 900). Loopback only.
 *
 * Usage: barerelay --upstream URL [--port P] [--max-s S]
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RELAY_BODY_MAX (1024 * 1024)
#define RELAY_POOL     256

struct relay_req {
	struct MHD_Connection *conn;
	char *body;
	size_t len, cap;
	char *answer;
	size_t alen, acap;
	long status;
	int state;    /* 0 reading, 1 upstream, 2 answered, 3 streaming */
	int sse;      /* the upstream answers an event stream */
	size_t taken; /* of answer, handed to MHD (streaming) */
	int ended, suspended;
	struct curl_slist *hdrs;
	CURL *easy;
};

static const char *upstream;
static struct MHD_Daemon *mhd;
static CURLM *multi;
static int epfd, mhd_fd;
static int64_t curl_due = -1; /* monotonic ms of libcurl's timer, -1 none */
static CURL *pool[RELAY_POOL];
static int npool;
static unsigned long seq;
static int resumed; /* connections resumed since the last MHD_run() */
/*
 * libcurl's sockets by descriptor, as the engine keeps them (engine.c,
 * "curl_fd"): a pooled connection's socket stays in the set after
 * libcurl's REMOVE, so the next transfer on it costs no epoll_ctl; an
 * event while it lingers takes it out; closing it clears the slot.
 */
#define RELAY_FDS 65536
static struct {
	uint32_t events; /* registered with these; 0: not in the set */
	uint8_t ours, lingering;
} fds[RELAY_FDS];
static volatile sig_atomic_t stop;

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
grow(char **p, size_t *cap, size_t need)
{
	size_t n = *cap ? *cap : 1024;
	char *q;

	while (n < need)
		n *= 2;
	if (n == *cap)
		return 0;
	q = realloc(*p, n);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

static size_t
on_answer(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct relay_req *q = arg;
	size_t n = size * nmemb;

	if (q->alen + n > RELAY_BODY_MAX || grow(&q->answer, &q->acap, q->alen + n) != 0)
		return 0;
	memcpy(q->answer + q->alen, ptr, n);
	q->alen += n;
	return n;
}

static size_t
on_header(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct relay_req *q = arg;
	size_t n = size * nmemb;

	if (n > 13 && strncasecmp(ptr, "Content-Type:", 13) == 0 &&
	    memmem(ptr, n, "text/event-stream", 17) != NULL)
		q->sse = 1;
	return n;
}

/* A stream's bytes as they come: the connection resumes to send them. */
static size_t
on_stream(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct relay_req *q = arg;

	if (!q->sse)
		return on_answer(ptr, size, nmemb, arg);
	if (on_answer(ptr, size, nmemb, arg) == 0)
		return 0;
	if (q->state == 1) {
		q->state = 3;
		MHD_resume_connection(q->conn);
		resumed++;
	} else if (q->suspended) {
		q->suspended = 0;
		MHD_resume_connection(q->conn);
		resumed++;
	}
	return size * nmemb;
}

static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct relay_req *q = cls;
	size_t n;

	(void)pos;
	if (q->alen > q->taken) {
		n = q->alen - q->taken < max ? q->alen - q->taken : max;
		memcpy(buf, q->answer + q->taken, n);
		q->taken += n;
		if (q->taken == q->alen)
			q->taken = q->alen = 0;
		return (ssize_t)n;
	}
	if (q->ended)
		return q->status == 200 ? MHD_CONTENT_READER_END_OF_STREAM
					: MHD_CONTENT_READER_END_WITH_ERROR;
	q->suspended = 1;
	MHD_suspend_connection(q->conn);
	return 0;
}

static curl_socket_t
on_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
	int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);

	(void)clientp;
	(void)purpose;
	if (fd >= 0 && fd < RELAY_FDS) {
		fds[fd].events = 0;
		fds[fd].ours = 1;
		fds[fd].lingering = 0;
	}
	return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static int
on_close(void *clientp, curl_socket_t fd)
{
	(void)clientp;
	if (fd >= 0 && fd < RELAY_FDS)
		fds[fd].events = fds[fd].ours = fds[fd].lingering = 0;
	return close(fd); /* out of the epoll set with it */
}

static int
on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct epoll_event ev = {.data.fd = s};
	int mine = s >= 0 && s < RELAY_FDS;

	(void)easy;
	(void)userp;
	if (what == CURL_POLL_REMOVE) {
		if (mine && fds[s].ours && fds[s].events != 0) {
			fds[s].lingering = 1;
		} else {
			epoll_ctl(epfd, EPOLL_CTL_DEL, s, NULL);
			if (mine)
				fds[s].events = 0;
		}
		curl_multi_assign(multi, s, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (mine && fds[s].ours && fds[s].events == ev.events) {
		/* in the set already, as wanted */
	} else if (!mine || fds[s].events == 0) {
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST)
			epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev);
	} else if (epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
		epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev);
	}
	if (mine) {
		fds[s].events = ev.events;
		fds[s].lingering = 0;
	}
	if (socketp == NULL)
		curl_multi_assign(multi, s, (void *)1);
	return 0;
}

static int
on_timer(CURLM *m, long timeout_ms, void *userp)
{
	(void)m;
	(void)userp;
	curl_due = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	return 0;
}

static void
start_upstream(struct relay_req *q)
{
	char id[64], tp[80];

	q->easy = npool > 0 ? pool[--npool] : curl_easy_init();
	if (q->easy == NULL) {
		q->status = 502;
		q->state = 2;
		return;
	}
	seq++;
	snprintf(id, sizeof id, "X-Request-ID: relay-%08lx-0000-0000-000000000000", seq);
	snprintf(tp, sizeof tp, "traceparent: 00-%032lx-%016lx-01", seq, seq);
	q->hdrs = curl_slist_append(q->hdrs, "Content-Type: application/json");
	q->hdrs = curl_slist_append(q->hdrs, id);
	q->hdrs = curl_slist_append(q->hdrs, tp);
	curl_easy_setopt(q->easy, CURLOPT_URL, upstream);
	curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body ? q->body : "");
	curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)q->len);
	curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER, q->hdrs);
	curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(q->easy, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(q->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(q->easy, CURLOPT_HEADERDATA, q);
	curl_easy_setopt(q->easy, CURLOPT_PRIVATE, q);
	curl_easy_setopt(q->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(q->easy, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, 6000L);
	curl_easy_setopt(q->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(q->easy, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(q->easy, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(q->easy, CURLOPT_BUFFERSIZE, 4096L);
	curl_easy_setopt(q->easy, CURLOPT_OPENSOCKETFUNCTION, on_open);
	curl_easy_setopt(q->easy, CURLOPT_CLOSESOCKETFUNCTION, on_close);
	q->state = 1;
	curl_multi_add_handle(multi, q->easy);
}

/* Transfers that ended: their answers are in, their connections resume. */
static void
reap(void)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(multi, &left)) != NULL) {
		struct relay_req *q = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
		if (m->data.result == CURLE_OK)
			curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &q->status);
		else
			q->status = 502;
		curl_multi_remove_handle(multi, m->easy_handle);
		curl_easy_reset(m->easy_handle);
		if (npool < RELAY_POOL)
			pool[npool++] = m->easy_handle;
		else
			curl_easy_cleanup(m->easy_handle);
		q->easy = NULL;
		curl_slist_free_all(q->hdrs);
		q->hdrs = NULL;
		if (q->state == 3) { /* the stream's end */
			q->ended = 1;
			if (!q->suspended)
				continue;
			q->suspended = 0;
		} else {
			q->state = 2;
		}
		MHD_resume_connection(q->conn);
		resumed++;
	}
}

static enum MHD_Result
answer(struct relay_req *q)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer(q->alen, q->answer ? q->answer : (void *)"",
					       q->answer ? MHD_RESPMEM_MUST_FREE
							 : MHD_RESPMEM_PERSISTENT);
	if (resp == NULL)
		return MHD_NO;
	q->answer = NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	r = MHD_queue_response(q->conn, (unsigned)(q->status ? q->status : 502), resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	   const char *version, const char *data, size_t *size, void **ctx)
{
	struct relay_req *q = *ctx;

	(void)cls;
	(void)url;
	(void)version;
	if (q == NULL) {
		if (strcmp(method, "POST") != 0)
			return MHD_NO;
		q = calloc(1, sizeof *q);
		if (q == NULL)
			return MHD_NO;
		q->conn = conn;
		*ctx = q;
		return MHD_YES;
	}
	if (q->state == 0 && *size > 0) {
		if (q->len + *size + 1 > RELAY_BODY_MAX ||
		    grow(&q->body, &q->cap, q->len + *size + 1) != 0)
			return MHD_NO;
		memcpy(q->body + q->len, data, *size);
		q->len += *size;
		*size = 0;
		return MHD_YES;
	}
	if (q->state == 0) {
		start_upstream(q);
		if (q->state == 2)
			return answer(q);
		MHD_suspend_connection(conn);
		return MHD_YES;
	}
	if (q->state == 2)
		return answer(q);
	if (q->state == 3) { /* the stream's first bytes are in (or all of it) */
		struct MHD_Response *resp = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, q, NULL);
		enum MHD_Result r;

		if (resp == NULL)
			return MHD_NO;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
		r = MHD_queue_response(conn, 200, resp);
		MHD_destroy_response(resp);
		return r;
	}
	return MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
	     enum MHD_RequestTerminationCode toe)
{
	struct relay_req *q = *ctx;

	(void)cls;
	(void)conn;
	(void)toe;
	if (q == NULL)
		return;
	if (q->easy != NULL) {
		curl_multi_remove_handle(multi, q->easy);
		curl_easy_cleanup(q->easy);
	}
	curl_slist_free_all(q->hdrs);
	free(q->body);
	free(q->answer);
	free(q);
	*ctx = NULL;
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int
main(int argc, char **argv)
{
	struct epoll_event ev = {.events = EPOLLIN}, evs[64];
	const union MHD_DaemonInfo *di;
	int port = 0, max_s = 900, i, n, running;
	int64_t end;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--upstream") == 0)
			upstream = argv[i + 1];
		else if (strcmp(argv[i], "--port") == 0)
			port = (int)strtol(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--max-s") == 0)
			max_s = (int)strtol(argv[i + 1], NULL, 10);
	}
	if (upstream == NULL || strncmp(upstream, "http://127.", 11) != 0) {
		fprintf(stderr, "usage: barerelay --upstream http://127.x.x.x:PORT/PATH [--port P] "
				"[--max-s S]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	multi = curl_multi_init();
	curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 20000L);
	{
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		mhd = MHD_start_daemon(
			MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL,
			on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
			on_completed, NULL, MHD_OPTION_CONNECTION_LIMIT, 20000u,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(14 * 1024), MHD_OPTION_END);
	}
	if (mhd == NULL) {
		fprintf(stderr, "barerelay: cannot start libmicrohttpd on 127.0.0.1:%d\n", port);
		return 1;
	}
	di = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_EPOLL_FD);
	mhd_fd = di->epoll_fd;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = mhd_fd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, mhd_fd, &ev);
	di = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_BIND_PORT);
	printf("listening on 127.0.0.1:%u\n", (unsigned)di->port);
	fflush(stdout);
	end = now_ms() + (int64_t)max_s * 1000;
	while (!stop && now_ms() < end) {
		MHD_UNSIGNED_LONG_LONG mto;
		int64_t t = 1000, now = now_ms();

		if (MHD_get_timeout(mhd, &mto) == MHD_YES && (int64_t)mto < t)
			t = (int64_t)mto;
		if (curl_due >= 0 && curl_due - now < t)
			t = curl_due > now ? curl_due - now : 0;
		n = epoll_wait(epfd, evs, 64, (int)t);
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd, flags = 0;

			if (fd == mhd_fd)
				continue;
			if (fd >= 0 && fd < RELAY_FDS && fds[fd].lingering) {
				/* libcurl does not want it (the server closed the idle
				 * connection): out of the set */
				epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
				fds[fd].events = fds[fd].lingering = 0;
				continue;
			}
			if (evs[i].events & EPOLLIN)
				flags |= CURL_CSELECT_IN;
			if (evs[i].events & EPOLLOUT)
				flags |= CURL_CSELECT_OUT;
			if (evs[i].events & (EPOLLERR | EPOLLHUP))
				flags |= CURL_CSELECT_ERR;
			curl_multi_socket_action(multi, fd, flags, &running);
		}
		/* Again while there is work at once: a transfer added by MHD_run()
		 * (its due-now timer), a connection resumed by a transfer. */
		do {
			resumed = 0;
			if (curl_due >= 0 && now_ms() >= curl_due) {
				curl_due = -1;
				curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
			}
			reap();
			MHD_run(mhd);
		} while (resumed > 0 || (curl_due >= 0 && now_ms() >= curl_due));
	}
	MHD_stop_daemon(mhd);
	curl_multi_cleanup(multi);
	while (npool > 0)
		curl_easy_cleanup(pool[--npool]);
	curl_global_cleanup();
	return 0;
}
