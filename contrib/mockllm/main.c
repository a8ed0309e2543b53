/*
 * fusebox-mockllm: an OpenAI-compatible chat-completions mock server, "the
 * LLM" of the integration tests and the demo.
 *
 * Design. Every backend (`/b/<name>/v1/chat/completions`, or `default` for
 * `/v1/chat/completions`) has a base behaviour and a FIFO script of
 * behaviours, both replaced through the control API (`/_mock/...`) or a
 * scenario timeline. A request copies its behaviour when its body is
 * complete, and from then on owns that copy. Answers follow the request
 * like a provider's: `n` choices, `stream_options.include_usage` (a usage
 * chunk before [DONE]), a `system_fingerprint`; a behaviour may script
 * tool calls (`tool_calls`: message.tool_calls, or streamed
 * delta.tool_calls with the arguments in pieces) and the finish reason
 * (`finish_reason`, e.g. "length"). For the tail benches a behaviour can
 * script a latency tail (`tail_pct`, `tail_delay_ms`), a server that slows
 * down past a concurrency knee (`knee`, `knee_exp`) and a provider's
 * rate-limit window with its x-ratelimit-* headers and 429s
 * (`ratelimit_requests`, `ratelimit_tokens`, `ratelimit_reset_ms`); every
 * key is described above behave_fields in behave.c, and /_mock/stats
 * counts per backend what was received, delayed and refused.
 *
 * No thread ever sleeps for a request. libmicrohttpd runs one epoll polling
 * thread; a request that must wait (delay, hang, drip, stream pacing)
 * suspends its connection and sits in a min-heap of wake-up times. The timer
 * thread resumes due connections and applies scenario steps. It sleeps in
 * its own epoll set, which holds an eventfd (to be woken early) and every
 * suspended socket (EPOLLRDHUP), so a client that goes away frees its
 * connection at once (MHD cannot see that while it is suspended). Response
 * bodies are a list of segments produced by a content-reader callback; a
 * segment may be virtual (n bytes of one fill character), so huge bodies
 * cost no memory.
 *
 * Invariants: a connection is resumed exactly once per suspension: whoever
 * clears req->suspended under mock.lock (timer thread or shutdown) resumes
 * it, and it does so after dropping the lock. A request in the heap is
 * suspended, so MHD cannot complete (and free) it. On shutdown every
 * suspended connection is resumed before MHD_stop_daemon.
 *
 * Threads: main (arguments, signals, shutdown), the MHD polling thread
 * (handlers, content readers, completion), the timer thread. mock.lock
 * guards backends, counters, the heap and the suspension fields of a req.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#include "mockllm.h"

static void
req_body_append(struct req *r, const char *p, size_t n)
{
	if (r->too_big)
		goto out;
	if (n > BODY_MAX - r->body_len) {
		r->too_big = 1;
		free(r->body);
		r->body = NULL;
		r->body_len = r->body_cap = 0;
		goto out;
	}
	if (r->body_len + n + 1 > r->body_cap) {
		r->body_cap = r->body_cap ? r->body_cap : 4096;
		while (r->body_len + n + 1 > r->body_cap)
			r->body_cap *= 2;
		r->body = xrealloc(r->body, r->body_cap);
	}
	memcpy(r->body + r->body_len, p, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
out:
	return;
}

static enum MHD_Result
header_collect(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	cJSON *o = cls;
	char *lk;
	size_t i;

	lk = xstrdup(key);
	for (i = 0; lk[i] != '\0'; i++) {
		if (lk[i] >= 'A' && lk[i] <= 'Z')
			lk[i] = (char)(lk[i] - 'A' + 'a');
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, lk);
	cJSON_AddStringToObject(o, lk, value != NULL ? value : "");
	free(lk);
	return MHD_YES;
}

/* Classify a new request; chat requests are counted here. */
static struct req *
req_new(struct MHD_Connection *conn, const char *url)
{
	static const char chat[] = "/v1/chat/completions";
	const union MHD_ConnectionInfo *ci;
	struct req *r;
	const char *name = NULL, *rest;
	size_t nlen = 0;
	struct backend *be;

	r = xmalloc(sizeof *r);
	memset(r, 0, sizeof *r);
	r->conn = conn;
	r->fd = -1;
	r->kind = REQ_OTHER;
	r->heap_idx = SIZE_MAX;
	r->limit = -1;
	behave_init(&r->bh);
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci != NULL)
		r->fd = ci->connect_fd;

	if (strncmp(url, "/_mock/", 7) == 0) {
		r->kind = REQ_CONTROL;
		goto out;
	}
	if (strcmp(url, chat) == 0) {
		name = "default";
		nlen = 7;
	} else if (strncmp(url, "/b/", 3) == 0) {
		rest = strchr(url + 3, '/');
		if (rest != NULL && strcmp(rest, chat) == 0) {
			name = url + 3;
			nlen = (size_t)(rest - name);
		}
	}
	if (name == NULL || !backend_name_valid(name, nlen))
		goto out;
	r->headers = cJSON_CreateObject();
	MHD_get_connection_values(conn, MHD_HEADER_KIND, header_collect, r->headers);
	pthread_mutex_lock(&mock.lock);
	be = backend_get(name, nlen);
	if (be != NULL) {
		r->kind = REQ_CHAT;
		r->backend = be;
		r->id = ++mock.next_id;
		r->arrival_ms = mono_ms() - mock.start_ms;
		be->requests++;
		be->inflight++;
		if (be->inflight > be->max_inflight)
			be->max_inflight = be->inflight;
		be->arrivals[be->arrivals_next] = r->arrival_ms;
		be->arrivals_next = (be->arrivals_next + 1) % ARRIVALS_MAX;
		if (be->arrivals_n < ARRIVALS_MAX)
			be->arrivals_n++;
	}
	pthread_mutex_unlock(&mock.lock);
out:
	return r;
}

static enum MHD_Result
mock_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct req *r = *con_cls;
	const char *cl;
	enum MHD_Result ret = MHD_YES;
	char *end;
	unsigned long long n;

	if (r == NULL) {
		r = req_new(conn, url);
		*con_cls = r;
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL) {
			errno = 0;
			n = strtoull(cl, &end, 10);
			if (errno == 0 && *end == '\0' && n > BODY_MAX)
				ret = respond_error(r, 413, "request body over 4 MiB");
		}
		goto out;
	}
	if (*upload_size != 0) {
		req_body_append(r, upload, *upload_size);
		*upload_size = 0;
		goto out;
	}
	switch (r->kind) {
	case REQ_CHAT:
		ret = chat_handle(r, method);
		break;
	case REQ_CONTROL:
		ret = control_handle(r, url, method);
		break;
	default:
		ret = respond_error(r, MHD_HTTP_NOT_FOUND, "unknown path");
		break;
	}
out:
	return ret;
}

static void
mock_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
	       enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	if (r == NULL)
		return;
	*con_cls = NULL;
	pthread_mutex_lock(&mock.lock);
	if (r->suspended) {
		/* Can't happen: suspended connections are never closed. */
		req_unsuspend(r);
	}
	if (r->kind == REQ_CHAT) {
		r->backend->inflight--;
		if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
			r->backend->completed++;
		else
			r->backend->aborted++;
	}
	pthread_mutex_unlock(&mock.lock);
	if (r->kind == REQ_CHAT) {
		log_line("%s mock-%" PRIu64 " %s %u%s", r->backend->name, r->id,
			 r->stream ? "stream" : "json", r->status,
			 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
	}
	req_free(r);
}

static int
listen_parse(const char *s, struct sockaddr_in *sin)
{
	const char *colon = strrchr(s, ':');
	char host[64], *end;
	long port;
	int rc = -1;

	if (colon == NULL || (size_t)(colon - s) >= sizeof host)
		goto out;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == colon + 1 || port < 0 || port > 65535)
		goto out;
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		goto out;
	rc = 0;
out:
	return rc;
}

static void
print_usage(void)
{
	fprintf(stderr, "usage: fusebox-mockllm [--listen 127.0.0.1:PORT] "
			"[--scenario FILE] [--quiet]\n");
}

/* Resume every suspended connection so MHD_stop_daemon may run. */
static void
mock_stop(struct MHD_Daemon *d, pthread_t timer, int timer_started)
{
	struct MHD_Connection **conns = NULL;
	size_t n = 0, i;

	pthread_mutex_lock(&mock.lock);
	mock.stopping = 1;
	mock_wake();
	pthread_mutex_unlock(&mock.lock);
	if (timer_started)
		pthread_join(timer, NULL);
	pthread_mutex_lock(&mock.lock);
	conns = xmalloc((mock.heap_len + 1) * sizeof *conns);
	while (mock.heap_len > 0)
		conns[n++] = req_unsuspend(mock.heap[0]);
	pthread_mutex_unlock(&mock.lock);
	for (i = 0; i < n; i++)
		MHD_resume_connection(conns[i]);
	free(conns);
	if (d != NULL)
		MHD_stop_daemon(d);
}

int
main(int argc, char **argv)
{
	const char *addr = "127.0.0.1:0", *scenario = NULL;
	const union MHD_DaemonInfo *di;
	struct MHD_Daemon *d = NULL;
	struct backend *be;
	struct sockaddr_in sin;
	struct epoll_event ev;
	pthread_t timer;
	struct rlimit rl;
	sigset_t set;
	unsigned int flags;
	int i, sig, rc = 2, timer_started = 0;

	memset(&timer, 0, sizeof timer);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
			addr = argv[++i];
		else if (strcmp(argv[i], "--scenario") == 0 && i + 1 < argc)
			scenario = argv[++i];
		else if (strcmp(argv[i], "--quiet") == 0)
			mock.quiet = 1;
		else {
			print_usage();
			goto out;
		}
	}
	if (listen_parse(addr, &sin) != 0) {
		fprintf(stderr, "fusebox-mockllm: bad --listen \"%s\"\n", addr);
		goto out;
	}

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	mock.epfd = epoll_create1(EPOLL_CLOEXEC);
	mock.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (mock.epfd < 0 || mock.wakefd < 0) {
		fprintf(stderr, "fusebox-mockllm: epoll/eventfd: %s\n", strerror(errno));
		goto out;
	}
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(mock.epfd, EPOLL_CTL_ADD, mock.wakefd, &ev);
	mock.start_ms = mono_ms();
	mock.rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	if (scenario != NULL) {
		if (scenario_load(scenario) != 0)
			goto out;
		mock.scen_base_ms = mock.start_ms;
		pthread_mutex_lock(&mock.lock);
		scenario_step(mock.start_ms);
		pthread_mutex_unlock(&mock.lock);
	}

	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME;
	if (!mock.quiet)
		flags |= MHD_USE_ERROR_LOG;
	if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
		flags |= MHD_USE_EPOLL;
	else
		flags |= MHD_USE_POLL;
	d = MHD_start_daemon(flags, 0, NULL, NULL, mock_access, NULL, MHD_OPTION_SOCK_ADDR,
			     (struct sockaddr *)&sin, MHD_OPTION_CONNECTION_LIMIT,
			     (unsigned int)20000, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)0,
			     MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
			     MHD_OPTION_NOTIFY_COMPLETED, mock_completed, NULL, MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "fusebox-mockllm: cannot listen on %s\n", addr);
		goto out;
	}
	if (pthread_create(&timer, NULL, timer_main, NULL) != 0) {
		fprintf(stderr, "fusebox-mockllm: cannot start timer thread\n");
		goto out;
	}
	timer_started = 1;
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("listening on %s:%u\n", inet_ntoa(sin.sin_addr),
	       di != NULL ? (unsigned int)di->port : 0u);
	fflush(stdout);

	do {
		if (sigwait(&set, &sig) != 0)
			sig = 0;
	} while (sig != SIGINT && sig != SIGTERM);
	log_line("signal %d, stopping", sig);
	rc = 0;
out:
	if (d != NULL || timer_started)
		mock_stop(d, timer, timer_started);
	while ((be = mock.backends) != NULL) {
		mock.backends = be->next;
		backend_free(be);
	}
	free(mock.heap);
	cJSON_Delete(mock.scenario);
	if (mock.wakefd >= 0)
		close(mock.wakefd);
	if (mock.epfd >= 0)
		close(mock.epfd);
	return rc;
}
