/*
 * slowupstream: an OpenAI-compatible upstream for benchmarks that answers
 * every request exactly --delay-ms after it arrived, at any concurrency,
 * with a canned chat.completion (the content passes the bench route's
 * schema). One thread, one epoll set, non-blocking sockets; since every
 * request waits the same delay, the requests waiting form a FIFO in
 * arrival order, so holding 10,000 of them costs O(1) per request and no
 * timer structure. Keep-alive is honoured.
 *
 * Prints "listening on 127.0.0.1:PORT" when ready; stops on SIGTERM or
 * SIGINT, or by itself after --max-s seconds (default 600). Loopback only.
 *
 * Usage: slowupstream [--port P] [--delay-ms D] [--max-s S]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SLOW_BUF (16 * 1024)

static const char slow_body[] =
	"{\"id\":\"chatcmpl-slow\",\"object\":\"chat.completion\",\"created\":1767225600,"
	"\"model\":\"bench\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
	"\"content\":\"{\\\"intent\\\":\\\"refund\\\",\\\"confidence\\\":0.92,"
	"\\\"summary\\\":\\\"customer wants a refund\\\"}\"},\"finish_reason\":\"stop\"}],"
	"\"usage\":{\"prompt_tokens\":42,\"completion_tokens\":20,\"total_tokens\":62}}";

struct slow_conn {
	int fd;
	int closed; /* peer gone: freed when it leaves the FIFO */
	int queued; /* a request of it waits in the FIFO */
	char buf[SLOW_BUF];
	size_t len;
	int64_t due_us;
	struct slow_conn *next; /* FIFO */
};

static volatile sig_atomic_t slow_stop;
static struct slow_conn *slow_head, *slow_tail;
static char slow_resp[1024];
static size_t slow_resp_len;
static long slow_requests, slow_waiting, slow_max_waiting;

static int64_t
slow_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
slow_on_signal(int sig)
{
	(void)sig;
	slow_stop = 1;
}

static void
slow_close(struct slow_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->closed = 1;
	if (!c->queued)
		free(c);
}

/* A complete request in c->buf? Its length, else 0. */
static size_t
slow_request_len(struct slow_conn *c)
{
	char *hend, *p;
	long clen = 0;

	c->buf[c->len] = '\0';
	hend = strstr(c->buf, "\r\n\r\n");
	if (hend == NULL)
		return 0;
	for (p = strstr(c->buf, "\r\n"); p != NULL && p < hend; p = strstr(p + 2, "\r\n"))
		if (strncasecmp(p + 2, "Content-Length:", 15) == 0)
			clen = strtol(p + 17, NULL, 10);
	if (c->len < (size_t)(hend - c->buf) + 4 + (size_t)clen)
		return 0;
	return (size_t)(hend - c->buf) + 4 + (size_t)clen;
}

static void
slow_read(struct slow_conn *c, int64_t delay_us)
{
	size_t n;
	ssize_t r;

	for (;;) {
		if (c->len >= SLOW_BUF - 1) {
			slow_close(c);
			return;
		}
		r = recv(c->fd, c->buf + c->len, SLOW_BUF - 1 - c->len, 0);
		if (r > 0) {
			c->len += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EAGAIN)
			break;
		slow_close(c);
		return;
	}
	if (c->queued || (n = slow_request_len(c)) == 0)
		return;
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
	c->due_us = slow_now_us() + delay_us;
	c->queued = 1;
	c->next = NULL;
	if (slow_tail)
		slow_tail->next = c;
	else
		slow_head = c;
	slow_tail = c;
	slow_requests++;
	if (++slow_waiting > slow_max_waiting)
		slow_max_waiting = slow_waiting;
}

int
main(int argc, char **argv)
{
	struct epoll_event ev, evs[512];
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	struct rlimit rl;
	int64_t delay_us = 5000000, end;
	int port = 0, max_s = 600, lfd, epfd, one = 1, i, k;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port") == 0)
			port = (int)strtol(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--delay-ms") == 0)
			delay_us = strtoll(argv[i + 1], NULL, 10) * 1000;
		else if (strcmp(argv[i], "--max-s") == 0)
			max_s = (int)strtol(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (i != argc || port < 0 || port > 65535 || delay_us < 0 || max_s < 1 || max_s > 3600) {
		fprintf(stderr, "usage: slowupstream [--port P] [--delay-ms D] [--max-s S]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, slow_on_signal);
	signal(SIGINT, slow_on_signal);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	slow_resp_len = (size_t)snprintf(
		slow_resp, sizeof(slow_resp),
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		"Connection: keep-alive\r\n\r\n%s",
		strlen(slow_body), slow_body);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4096) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("slowupstream: listen");
		return 1;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
	printf("listening on 127.0.0.1:%d\n", ntohs(sa.sin_port));
	fflush(stdout);

	end = slow_now_us() + (int64_t)max_s * 1000000;
	while (!slow_stop) {
		int64_t now = slow_now_us();
		int timeout = 100;

		/* Answer every request that is due: the FIFO is in due order. */
		while (slow_head != NULL && slow_head->due_us <= now) {
			struct slow_conn *c = slow_head;

			slow_head = c->next;
			if (slow_head == NULL)
				slow_tail = NULL;
			c->queued = 0;
			slow_waiting--;
			if (c->closed) {
				free(c);
				continue;
			}
			/* Small enough for an empty socket buffer: one send. */
			if (send(c->fd, slow_resp, slow_resp_len, MSG_NOSIGNAL) !=
			    (ssize_t)slow_resp_len) {
				slow_close(c);
				continue;
			}
			if (slow_request_len(c) > 0)
				slow_read(c, delay_us); /* a pipelined request */
		}
		if (now >= end)
			break;
		if (slow_head != NULL) {
			int64_t d = (slow_head->due_us - now + 999) / 1000;

			timeout = d < timeout ? (int)d : timeout;
		}
		k = epoll_wait(epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), timeout);
		for (i = 0; i < k; i++) {
			struct slow_conn *c = evs[i].data.ptr;

			if (c == NULL) {
				int fd;

				while ((fd = accept4(lfd, NULL, NULL,
						     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					c = calloc(1, sizeof(*c));
					if (c == NULL) {
						close(fd);
						continue;
					}
					c->fd = fd;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					memset(&ev, 0, sizeof(ev));
					ev.events = EPOLLIN | EPOLLRDHUP;
					ev.data.ptr = c;
					epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			if (c->fd < 0)
				continue;
			slow_read(c, delay_us);
		}
	}
	fprintf(stderr, "slowupstream: %ld requests, at most %ld waiting at once\n", slow_requests,
		slow_max_waiting);
	return 0;
}
