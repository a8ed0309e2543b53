/*
 * holdcalls: a loopback HTTP/1.1 client that holds many calls open at once
 * (raw non-blocking sockets on one epoll set, one thread), for the
 * "waiting calls" and "deadline precision" benchmarks.
 *
 * Each call is one connection: connect, send one POST (Connection: close),
 * read the whole answer (Content-Length), close. Calls start as fast as
 * the sockets allow, or at --rate per second, with at most --conc open at
 * once. Per call it records the client-side time from "request written" to
 * "answer read", the HTTP status, the answer's "source" and "elapsed_ms"
 * (the daemon's own clock). It prints a summary (key=value lines) and, with
 * --csv, one line per call.
 *
 * Bounds: 127.0.0.1 only; at most 100000 calls; every call has a
 * --timeout-ms (default 30 s) after which it counts as failed; the whole
 * run stops after --max-s seconds (default 120).
 *
 * Usage: holdcalls --port P [--path /v1/routes/intent/call] [--body JSON]
 *        [--chat MODEL] [-n calls] [--conc N] [--rate R] [--timeout-ms T]
 *        [--max-s S] [--late-ms L] [--expect-source S] [--csv FILE]
 *        [--max-connecting M] [--held-file FILE]
 *
 * --chat MODEL calls the OpenAI-compatible facade instead of the native
 * route path: POST /v1/chat/completions with a chat-completions body
 * naming MODEL (--body, when given, replaces the default messages body;
 * --path still wins when given after it). The answer's "source" is read
 * from its "fusebox" object, "elapsed_ms" likewise.
 *
 * --held-file FILE is written the moment every call's request is out (or
 * the call failed before): "held_at_mark=K", K the calls open then (also
 * on stderr); the line "ended_after_mark=1" is appended when the next
 * call ends. The waiting bench reads the server's RSS between the two.
 *
 * --max-connecting (default 256) bounds the connects not yet established,
 * so that a burst of 10,000 does not overflow the server's accept queue
 * (somaxconn) and measure SYN retransmission instead of the server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MAX_CALLS 100000
#define HOLD_RESP_MAX  (16 * 1024)

enum hold_state { HOLD_IDLE = 0, HOLD_CONNECTING, HOLD_READING, HOLD_DONE };

struct hold_call {
	int fd;
	enum hold_state state;
	size_t sent;
	int64_t start_us; /* connect() issued */
	int64_t sent_us;  /* request fully written */
	int64_t done_us;  /* answer fully read (or failure) */
	char *resp;
	size_t len;
	int status;	/* HTTP status, 0: none */
	int err;	/* 0, or errno-ish reason the call failed */
	long daemon_ms; /* "elapsed_ms" of the answer, -1: none */
	char source[16];
};

struct hold_opts {
	int port;
	const char *path;
	const char *body;
	int n;
	int conc;
	double rate;
	int timeout_ms;
	int max_s;
	int late_ms;
	const char *expect_source;
	const char *csv;
	int max_connecting;
	const char *chat_model;
	const char *held_file;
};

static char *hold_request;
static size_t hold_request_len;
static int hold_sent;	       /* calls whose request is fully written */
static int hold_unsent_failed; /* calls that failed before that */

static int64_t
hold_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
hold_fail(struct hold_call *c, int err, int64_t now)
{
	if (c->sent_us == 0 && c->state != HOLD_DONE)
		hold_unsent_failed++;
	c->err = err ? err : EIO;
	c->done_us = now;
	c->state = HOLD_DONE;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* The answer in c->resp is complete? Parse status, Content-Length, fields. */
static int
hold_parse(struct hold_call *c)
{
	const char *hend, *p, *b;
	long clen = -1;
	size_t hlen;

	c->resp[c->len] = '\0';
	hend = strstr(c->resp, "\r\n\r\n");
	if (hend == NULL)
		return 0;
	hlen = (size_t)(hend - c->resp) + 4;
	if (strncmp(c->resp, "HTTP/1.", 7) == 0 && c->len > 12)
		c->status = (int)strtol(c->resp + 9, NULL, 10);
	for (p = strstr(c->resp, "\r\n"); p != NULL && p < hend; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, "Content-Length:", 15) == 0)
			clen = strtol(p + 17, NULL, 10);
	}
	if (clen < 0 || c->len < hlen + (size_t)clen)
		return 0;
	b = c->resp + hlen;
	p = strstr(b, "\"source\":\"");
	if (p != NULL) {
		size_t k = 0;

		p += 10;
		while (p[k] && p[k] != '"' && k < sizeof(c->source) - 1) {
			c->source[k] = p[k];
			k++;
		}
		c->source[k] = '\0';
	}
	p = strstr(b, "\"elapsed_ms\":");
	if (p != NULL)
		c->daemon_ms = strtol(p + 13, NULL, 10);
	return 1;
}

static int
hold_start(struct hold_call *c, int epfd, const struct sockaddr_in *sa)
{
	struct epoll_event ev;
	int one = 1;

	c->start_us = hold_now_us();
	c->daemon_ms = -1;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		hold_fail(c, errno, c->start_us);
		return -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS) {
		hold_fail(c, errno, c->start_us);
		return -1;
	}
	c->state = HOLD_CONNECTING;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
	ev.data.ptr = c;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		hold_fail(c, errno, c->start_us);
		return -1;
	}
	return 0;
}

/* Drive one call on an epoll event. 1 when the call ended. */
static int
hold_event(struct hold_call *c, int epfd, uint32_t events)
{
	struct epoll_event ev;
	int64_t now = hold_now_us();
	ssize_t n;

	if (c->state == HOLD_CONNECTING && (events & (EPOLLOUT | EPOLLERR))) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr != 0) {
			hold_fail(c, soerr, now);
			return 1;
		}
		while (c->sent < hold_request_len) {
			n = send(c->fd, hold_request + c->sent, hold_request_len - c->sent,
				 MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EAGAIN)
					return 0;
				hold_fail(c, errno, now);
				return 1;
			}
			c->sent += (size_t)n;
		}
		c->sent_us = hold_now_us();
		c->state = HOLD_READING;
		hold_sent++;
		c->resp = malloc(HOLD_RESP_MAX + 1);
		if (c->resp == NULL) {
			hold_fail(c, ENOMEM, now);
			return 1;
		}
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = c;
		epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
		return 0;
	}
	if (c->state != HOLD_READING)
		return 0;
	for (;;) {
		if (c->len >= HOLD_RESP_MAX) {
			hold_fail(c, E2BIG, now);
			return 1;
		}
		n = recv(c->fd, c->resp + c->len, HOLD_RESP_MAX - c->len, 0);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			break;
		/* EOF or error: complete or not, the call is over. */
		c->done_us = hold_now_us();
		if (!hold_parse(c)) {
			hold_fail(c, n == 0 ? EPIPE : errno, c->done_us);
			return 1;
		}
		close(c->fd);
		c->fd = -1;
		c->state = HOLD_DONE;
		return 1;
	}
	if (hold_parse(c)) {
		c->done_us = hold_now_us();
		close(c->fd);
		c->fd = -1;
		c->state = HOLD_DONE;
		return 1;
	}
	return 0;
}

static int
hold_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
hold_pct(const double *v, int n, double p)
{
	int i;

	if (n == 0)
		return -1;
	i = (int)(p * n + 0.999999) - 1;
	if (i < 0)
		i = 0;
	if (i >= n)
		i = n - 1;
	return v[i];
}

static void
hold_usage(void)
{
	fprintf(stderr, "usage: holdcalls --port P [--path PATH] [--body JSON] [-n CALLS] "
			"[--conc N] [--rate PER_S] [--timeout-ms T] [--max-s S] [--late-ms L] "
			"[--expect-source S] [--csv FILE] [--max-connecting M] [--chat MODEL] "
			"[--held-file FILE]\n");
	exit(2);
}

static int
hold_opts_parse(int argc, char **argv, struct hold_opts *o)
{
	static char chat_body[256];
	int i, body_set = 0, path_set = 0;

	memset(o, 0, sizeof(*o));
	o->path = "/v1/routes/intent/call";
	o->body = "{\"input\":\"I want my money back\"}";
	o->n = 1000;
	o->timeout_ms = 30000;
	o->max_s = 120;
	o->late_ms = -1;
	o->max_connecting = 256;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			hold_usage();
		if (strcmp(a, "--port") == 0)
			o->port = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--path") == 0)
			o->path = v, path_set = 1;
		else if (strcmp(a, "--body") == 0)
			o->body = v, body_set = 1;
		else if (strcmp(a, "--chat") == 0)
			o->chat_model = v;
		else if (strcmp(a, "--held-file") == 0)
			o->held_file = v;
		else if (strcmp(a, "-n") == 0)
			o->n = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--conc") == 0)
			o->conc = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--rate") == 0)
			o->rate = strtod(v, NULL);
		else if (strcmp(a, "--timeout-ms") == 0)
			o->timeout_ms = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--max-s") == 0)
			o->max_s = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--late-ms") == 0)
			o->late_ms = (int)strtol(v, NULL, 10);
		else if (strcmp(a, "--expect-source") == 0)
			o->expect_source = v;
		else if (strcmp(a, "--csv") == 0)
			o->csv = v;
		else if (strcmp(a, "--max-connecting") == 0)
			o->max_connecting = (int)strtol(v, NULL, 10);
		else
			hold_usage();
		i++;
	}
	if (o->port <= 0 || o->port > 65535 || o->n < 1 || o->n > HOLD_MAX_CALLS ||
	    o->timeout_ms < 1 || o->max_s < 1 || o->max_s > 3600 || o->max_connecting < 1)
		hold_usage();
	if (o->conc <= 0 || o->conc > o->n)
		o->conc = o->n;
	if (o->chat_model != NULL) {
		if (strlen(o->chat_model) > 64 || strpbrk(o->chat_model, "\"\\") != NULL)
			hold_usage();
		if (!path_set)
			o->path = "/v1/chat/completions";
		if (!body_set) {
			snprintf(chat_body, sizeof(chat_body),
				 "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
				 "\"content\":\"I want my money back\"}]}",
				 o->chat_model);
			o->body = chat_body;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct hold_opts o;
	struct hold_call *calls;
	struct epoll_event evs[512];
	struct sockaddr_in sa;
	struct rlimit rl;
	double *lat, *dms;
	int64_t t0, now, end, next_due, next_scan = 0;
	int epfd, i, k, started = 0, open = 0, done = 0, peak = 0, nlat = 0, ndms = 0;
	int ok = 0, wrong_source = 0, failed = 0, late = 0, st2xx = 0, other_status = 0;
	int timeouts = 0, connecting = 0, marked = 0, done_at_mark = 0;
	FILE *csv = NULL;

	hold_opts_parse(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)o.conc + 64)
		fprintf(stderr, "holdcalls: open-file limit %llu < %d connections\n",
			(unsigned long long)rl.rlim_cur, o.conc);

	if (asprintf(&hold_request,
		     "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n%s",
		     o.path, o.port, strlen(o.body), o.body) < 0)
		return 1;
	hold_request_len = strlen(hold_request);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)o.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	calls = calloc((size_t)o.n, sizeof(*calls));
	lat = calloc((size_t)o.n, sizeof(*lat));
	dms = calloc((size_t)o.n, sizeof(*dms));
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (calls == NULL || lat == NULL || dms == NULL || epfd < 0)
		return 1;
	for (i = 0; i < o.n; i++)
		calls[i].fd = -1;

	t0 = hold_now_us();
	end = t0 + (int64_t)o.max_s * 1000000;
	next_due = t0;
	while (done < o.n) {
		int timeout_ms = 100;

		now = hold_now_us();
		if (now >= end)
			break;
		/* Start calls: as many as allowed now. */
		while (started < o.n && open < o.conc && connecting < o.max_connecting &&
		       (o.rate <= 0 || now >= next_due)) {
			struct hold_call *c = &calls[started++];

			if (hold_start(c, epfd, &sa) < 0) {
				done++;
				continue;
			}
			open++;
			connecting++;
			if (open > peak)
				peak = open;
			if (o.rate > 0)
				next_due = t0 + (int64_t)((double)started * 1e6 / o.rate);
		}
		if (o.rate > 0 && started < o.n && open < o.conc)
			timeout_ms = (int)((next_due - now + 999) / 1000);
		if (timeout_ms > 100)
			timeout_ms = 100;
		k = epoll_wait(epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), timeout_ms);
		for (i = 0; i < k; i++) {
			struct hold_call *c = evs[i].data.ptr;
			int was_connecting = c->state == HOLD_CONNECTING;

			if (hold_event(c, epfd, evs[i].events)) {
				open--;
				done++;
			}
			if (was_connecting && c->state != HOLD_CONNECTING)
				connecting--;
		}
		if (!marked && o.held_file != NULL && hold_sent + hold_unsent_failed >= o.n) {
			FILE *m = fopen(o.held_file, "w");

			/* every request is out (or its call failed first): all are held */
			if (m != NULL) {
				fprintf(m, "held_at_mark=%d\n", open);
				fclose(m);
			}
			fprintf(stderr, "held_at_mark=%d\n", open);
			marked = 1;
			done_at_mark = done;
		} else if (marked == 1 && done > done_at_mark) {
			FILE *m = fopen(o.held_file, "a");

			if (m != NULL) {
				fprintf(m, "ended_after_mark=1\n");
				fclose(m);
			}
			marked = 2;
		}
		/* Per-call timeout: checked every 100 ms. */
		now = hold_now_us();
		if (now >= next_scan) {
			next_scan = now + 100000;
			for (i = 0; i < started; i++) {
				struct hold_call *c = &calls[i];

				if (c->state == HOLD_CONNECTING || c->state == HOLD_READING) {
					if (now - c->start_us > (int64_t)o.timeout_ms * 1000) {
						if (c->state == HOLD_CONNECTING)
							connecting--;
						hold_fail(c, ETIMEDOUT, now);
						open--;
						done++;
						timeouts++;
					}
				}
			}
		}
	}
	now = hold_now_us();
	for (i = 0; i < o.n; i++) {
		struct hold_call *c = &calls[i];

		if (c->state != HOLD_DONE) {
			if (c->state != HOLD_IDLE)
				hold_fail(c, ETIMEDOUT, now);
			else
				c->err = ETIMEDOUT;
			failed++;
			continue;
		}
		if (c->err != 0 || c->status == 0) {
			failed++;
			continue;
		}
		if (c->status >= 200 && c->status < 300)
			st2xx++;
		else
			other_status++;
		lat[nlat++] = (double)(c->done_us - c->sent_us) / 1000.0;
		if (c->daemon_ms >= 0)
			dms[ndms++] = (double)c->daemon_ms;
		if (o.late_ms >= 0 && c->done_us - c->sent_us > (int64_t)o.late_ms * 1000)
			late++;
		if (o.expect_source && strcmp(c->source, o.expect_source) != 0)
			wrong_source++;
		else if (c->status == 200)
			ok++;
	}
	if (o.csv != NULL && (csv = fopen(o.csv, "w")) != NULL) {
		fprintf(csv, "call,start_ms,client_ms,daemon_ms,status,source,err\n");
		for (i = 0; i < o.n; i++) {
			struct hold_call *c = &calls[i];

			fprintf(csv, "%d,%.3f,%.3f,%ld,%d,%s,%d\n", i,
				c->start_us ? (double)(c->start_us - t0) / 1000.0 : -1.0,
				c->sent_us && c->done_us
					? (double)(c->done_us - c->sent_us) / 1000.0
					: -1.0,
				c->daemon_ms, c->status, c->source[0] ? c->source : "-", c->err);
		}
		fclose(csv);
	}
	qsort(lat, (size_t)nlat, sizeof(*lat), hold_cmp);
	qsort(dms, (size_t)ndms, sizeof(*dms), hold_cmp);
	printf("calls=%d\nstarted=%d\nanswered=%d\nok=%d\nstatus_2xx=%d\nstatus_other=%d\n"
	       "failed=%d\ntimeouts=%d\nwrong_source=%d\nlate=%d\npeak_open=%d\nwall_s=%.3f\n",
	       o.n, started, nlat, ok, st2xx, other_status, failed, timeouts, wrong_source, late,
	       peak, (double)(now - t0) / 1e6);
	printf("client_p50_ms=%.3f\nclient_p90_ms=%.3f\nclient_p99_ms=%.3f\nclient_max_ms=%.3f\n",
	       hold_pct(lat, nlat, 0.50), hold_pct(lat, nlat, 0.90), hold_pct(lat, nlat, 0.99),
	       nlat ? lat[nlat - 1] : -1.0);
	printf("client_min_ms=%.3f\n", nlat ? lat[0] : -1.0);
	printf("daemon_p50_ms=%.0f\ndaemon_p99_ms=%.0f\ndaemon_max_ms=%.0f\n",
	       hold_pct(dms, ndms, 0.50), hold_pct(dms, ndms, 0.99), ndms ? dms[ndms - 1] : -1.0);
	for (i = 0; i < o.n; i++)
		free(calls[i].resp);
	free(calls);
	free(lat);
	free(dms);
	free(hold_request);
	close(epfd);
	return failed == 0 && wrong_source == 0 && other_status == 0 ? 0 : 1;
}
