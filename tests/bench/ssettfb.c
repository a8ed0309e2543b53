/*
 * ssettfb: the streaming facade's time to first relayed byte, both ends.
 *
 *   ssettfb upstream [--rest-ms R] [--max-s S]
 *     An OpenAI-compatible streaming upstream on 127.0.0.1 (port chosen by
 *     the kernel, printed as "listening on 127.0.0.1:PORT"): every request
 *     gets, in one write, its status line, headers (text/event-stream,
 *     chunked) and its first chat.completion.chunk (role and the first
 *     piece of content); the rest of the content, the finish chunk, a
 *     usage chunk and [DONE] follow R ms later (default 2). The content
 *     is the bench route's canned answer, so it validates. One thread per
 *     connection, keep-alive honoured; stops on SIGTERM or after S s
 *     (default 600).
 *
 *   ssettfb client --port P --path PATH --body BODY [--n N] [--warm W]
 *     Sends N POSTs (after W not counted) one at a time on one keep-alive
 *     connection to 127.0.0.1:P and measures, per request, the time from
 *     the request's write to the first byte of the answer's body (the
 *     first relayed SSE byte), reading each answer to its end (chunked).
 *     Prints "p50_us=... p90_us=... n=... errors=..." lines (wrk_parse's
 *     keys). An answer that is not a 200 event stream ending in [DONE]
 *     counts as an error.
 *
 * Loopback only; bounded in count and time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IOBUF	   (64 * 1024)
#define CHUNK_ROOM 1024 /* one event as a chunk fits (first[] and rest[] keep that much free) */

static int rest_ms = 2;

static int
num(const char *s)
{
	return (int)strtol(s, NULL, 10);
}

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One SSE event as one HTTP chunk, appended to out. */
static size_t
chunk(char *out, size_t off, const char *event)
{
	size_t n = strlen(event);

	return off + (size_t)snprintf(out + off, CHUNK_ROOM, "%zx\r\n%s\r\n", n, event);
}

#define EV_HEAD                                                                                    \
	"data: {\"id\":\"chatcmpl-sse\",\"object\":\"chat.completion.chunk\","                     \
	"\"created\":1767225600,\"model\":\"bench\",\"choices\":[{\"index\":0,"

static const char ev_first[] = EV_HEAD "\"delta\":{\"role\":\"assistant\",\"content\":"
				       "\"{\\\"intent\\\":\\\"refund\\\",\"},"
				       "\"finish_reason\":null}]}\n\n";
static const char ev_rest[] = EV_HEAD "\"delta\":{\"content\":\"\\\"confidence\\\":0.92,"
				      "\\\"summary\\\":\\\"customer wants a refund\\\"}\"},"
				      "\"finish_reason\":null}]}\n\n";
static const char ev_finish[] = EV_HEAD "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
static const char ev_done[] = "data: [DONE]\n\n";

/* The request's end in buf[0..len): its length with the body, 0 when incomplete. */
static size_t
request_end(const char *buf, size_t len)
{
	const char *h = memmem(buf, len, "\r\n\r\n", 4), *p;
	size_t hl, cl = 0;

	if (h == NULL)
		return 0;
	hl = (size_t)(h - buf) + 4;
	for (p = buf; p != NULL && p < h;) {
		if ((size_t)(h - p) > 15 && strncasecmp(p, "Content-Length:", 15) == 0)
			cl = strtoul(p + 15, NULL, 10);
		p = memchr(p, '\n', (size_t)(h - p));
		if (p != NULL)
			p++;
	}
	return len >= hl + cl ? hl + cl : 0;
}

static void *
up_conn(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1;
	char *buf = malloc(IOBUF), first[2048], rest[4096];
	size_t len = 0, n, off;
	struct timespec d = {rest_ms / 1000, (long)(rest_ms % 1000) * 1000000L};

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	off = (size_t)snprintf(first, sizeof first,
			       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			       "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
	off = chunk(first, off, ev_first);
	n = chunk(rest, 0, ev_rest);
	n = chunk(rest, n, ev_finish);
	n = chunk(rest, n, ev_done);
	memcpy(rest + n, "0\r\n\r\n", 5);
	n += 5;
	for (;;) {
		size_t end;
		ssize_t r;

		while ((end = request_end(buf, len)) == 0) {
			if (len == IOBUF)
				goto out;
			r = recv(fd, buf + len, IOBUF - len, 0);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				goto out;
			len += (size_t)r;
		}
		memmove(buf, buf + end, len - end);
		len -= end;
		if (write_all(fd, first, off) != 0)
			break;
		nanosleep(&d, NULL);
		if (write_all(fd, rest, n) != 0)
			break;
	}
out:
	close(fd);
	free(buf);
	return NULL;
}

static int
upstream_main(int max_s)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof sa;
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	pthread_attr_t at;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 512) != 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) != 0) {
		perror("ssettfb: listen");
		return 1;
	}
	printf("listening on 127.0.0.1:%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	alarm((unsigned)max_s);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	for (;;) {
		int fd = accept(ls, NULL, NULL);
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			perror("ssettfb: accept");
			return 1;
		}
		if (pthread_create(&t, &at, up_conn, (void *)(intptr_t)fd) != 0)
			close(fd);
	}
}

struct cli {
	int fd;
	int port;
	char buf[IOBUF];
	size_t len, pos;
};

static int
cli_connect(struct cli *c)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
	int one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	c->len = c->pos = 0;
	return 0;
}

/* More bytes into c->buf (compacted); -1 on EOF or error. */
static int
cli_fill(struct cli *c)
{
	ssize_t r;

	if (c->pos > 0) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	if (c->len == sizeof c->buf)
		return -1;
	do
		r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -1;
	c->len += (size_t)r;
	return 0;
}

/* A line ending in CRLF from the buffer (without it, NUL-ended in place); NULL on EOF. */
static char *
cli_line(struct cli *c)
{
	char *p, *e;

	while ((e = memmem(c->buf + c->pos, c->len - c->pos, "\r\n", 2)) == NULL)
		if (cli_fill(c) != 0)
			return NULL;
	p = c->buf + c->pos;
	*e = '\0';
	c->pos = (size_t)(e - c->buf) + 2;
	return p;
}

/*
 * One request: its TTFB into *ttfb (us). 0 when it was a 200 event
 * stream ending with [DONE]; 1 for any other answer read whole; -1 when
 * the connection failed (reconnect).
 */
static int
cli_request(struct cli *c, const char *req, size_t reqlen, int64_t *ttfb)
{
	int64_t t0;
	char *l;
	int status = 0, chunked = 0, ok, keep = 1;
	long cl = -1;
	char tail[16] = "";

	t0 = now_us();
	if (write_all(c->fd, req, reqlen) != 0)
		return -1;
	if ((l = cli_line(c)) == NULL)
		return -1;
	if (strncmp(l, "HTTP/1.", 7) == 0)
		status = num(l + 9);
	while ((l = cli_line(c)) != NULL && *l) {
		if (strncasecmp(l, "Transfer-Encoding:", 18) == 0 && strcasestr(l, "chunked"))
			chunked = 1;
		else if (strncasecmp(l, "Content-Length:", 15) == 0)
			cl = atol(l + 15);
		else if (strncasecmp(l, "Connection:", 11) == 0 && strcasestr(l, "close"))
			keep = 0;
	}
	if (l == NULL)
		return -1;
	while (c->pos == c->len)
		if (cli_fill(c) != 0)
			return -1;
	*ttfb = now_us() - t0;
	if (chunked) {
		for (;;) {
			size_t n, k;

			if ((l = cli_line(c)) == NULL)
				return -1;
			n = strtoul(l, NULL, 16);
			if (n == 0) {
				if (cli_line(c) == NULL) /* the empty trailer */
					return -1;
				break;
			}
			while (c->len - c->pos < n + 2)
				if (cli_fill(c) != 0)
					return -1;
			/* the last bytes seen, for [DONE] */
			k = n < sizeof tail - 1 ? n : sizeof tail - 1;
			memmove(tail, tail + k, sizeof tail - 1 - k);
			memcpy(tail + sizeof tail - 1 - k, c->buf + c->pos + n - k, k);
			tail[sizeof tail - 1] = '\0';
			c->pos += n + 2;
		}
	} else if (cl >= 0) {
		while (c->len - c->pos < (size_t)cl)
			if (cli_fill(c) != 0)
				return -1;
		c->pos += (size_t)cl;
	} else {
		return -1;
	}
	ok = status == 200 && chunked && strstr(tail, "[DONE]") != NULL;
	if (!keep) {
		close(c->fd);
		if (cli_connect(c) != 0)
			return -1;
	}
	return ok ? 0 : 1;
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int
client_main(int port, const char *path, const char *body, int n, int warm)
{
	static struct cli c;
	char *req;
	size_t reqlen;
	int64_t *v = calloc((size_t)n + 1, sizeof *v), t;
	int i, got = 0, errors = 0, rc;

	reqlen = strlen(path) + strlen(body) + 256;
	req = malloc(reqlen);
	reqlen = (size_t)snprintf(req, reqlen,
				  "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
				  "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
				  "Content-Length: %zu\r\n\r\n%s",
				  path, port, strlen(body), body);
	c.port = port;
	if (cli_connect(&c) != 0) {
		perror("ssettfb: connect");
		return 1;
	}
	for (i = 0; i < warm + n; i++) {
		rc = cli_request(&c, req, reqlen, &t);
		if (rc < 0) {
			errors++;
			close(c.fd);
			if (cli_connect(&c) != 0)
				break;
			continue;
		}
		if (rc > 0)
			errors++;
		else if (i >= warm)
			v[got++] = t;
	}
	qsort(v, (size_t)got, sizeof *v, cmp64);
	if (got > 0) {
		printf("p50_us=%lld\n", (long long)v[got / 2]);
		printf("p90_us=%lld\n", (long long)v[got * 9 / 10]);
	}
	printf("requests=%d\nerrors=%d\n", got, errors);
	close(c.fd);
	free(v);
	free(req);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *path = "/v1/chat/completions", *body = "{}";
	int port = 0, n = 200, warm = 20, max_s = 600, i;

	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		goto usage;
	for (i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--rest-ms") == 0)
			rest_ms = num(argv[i + 1]);
		else if (strcmp(argv[i], "--max-s") == 0)
			max_s = num(argv[i + 1]);
		else if (strcmp(argv[i], "--port") == 0)
			port = num(argv[i + 1]);
		else if (strcmp(argv[i], "--path") == 0)
			path = argv[i + 1];
		else if (strcmp(argv[i], "--body") == 0)
			body = argv[i + 1];
		else if (strcmp(argv[i], "--n") == 0)
			n = num(argv[i + 1]);
		else if (strcmp(argv[i], "--warm") == 0)
			warm = num(argv[i + 1]);
		else
			goto usage;
	}
	if (strcmp(argv[1], "upstream") == 0)
		return upstream_main(max_s);
	if (strcmp(argv[1], "client") == 0 && port > 0 && n > 0)
		return client_main(port, path, body, n, warm);
usage:
	fprintf(stderr, "usage: ssettfb upstream [--rest-ms R] [--max-s S]\n"
			"       ssettfb client --port P [--path PATH] [--body BODY] [--n N] "
			"[--warm W]\n");
	return 2;
}
