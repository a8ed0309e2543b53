/*
 * harness: child processes, HTTP over libcurl, mock control, SQLite peeks
 * for the integration tests. See harness.h for the contracts.
 *
 * Every buffer has a ceiling: a child's stdout line 64 KiB, response
 * headers 1 MiB, response bodies 256 MiB (a transfer past it fails with
 * CURLE_WRITE_ERROR).
 */
#include "harness.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES	(64 * 1024)
#define HEADERS_MAX	(1024 * 1024)
#define BODY_MAX_BYTES	((size_t)256 * 1024 * 1024)
#define KILL_GRACE_MS	10000
#define MOCK_TIMEOUT_MS 5000

struct hbuf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

struct xfer {
	CURL *h;
	struct curl_slist *hdrs;
	struct hbuf body;
	struct hbuf head;
	struct http_resp *out;
	int done;
};

static pthread_once_t harness_once = PTHREAD_ONCE_INIT;

static void
harness_init_once(void)
{
	struct rlimit rl;

	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void
harness_init(void)
{
	pthread_once(&harness_once, harness_init_once);
}

static void *
hmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		fprintf(stderr, "harness: out of memory (%zu)\n", n);
		abort();
	}
	return p;
}

static char *hasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
hasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0) {
		fprintf(stderr, "harness: out of memory\n");
		abort();
	}
	va_end(ap);
	return p;
}

int64_t
harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
harness_build_root(void)
{
	const char *s = getenv("FB_BUILD_ROOT");

	return s != NULL && *s != '\0' ? s : "build";
}

const char *
harness_source_root(void)
{
	const char *s = getenv("FB_SOURCE_ROOT");

	return s != NULL && *s != '\0' ? s : ".";
}

char *
harness_path(const char *rel)
{
	return hasprintf("%s/%s", harness_build_root(), rel);
}

char *
harness_tmpdir(void)
{
	char tmpl[] = "/tmp/fusebox-test-XXXXXX";
	char *p = NULL;

	if (mkdtemp(tmpl) == NULL) {
		fprintf(stderr, "harness: mkdtemp: %s\n", strerror(errno));
		goto out;
	}
	p = strdup(tmpl);
out:
	return p;
}

/* Forwards a child's stdout to stderr until EOF; owns the fd. */
static void *
proc_drain(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
	}
	close(fd);
	return NULL;
}

static void
proc_drain_start(int fd)
{
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, proc_drain, (void *)(intptr_t)fd) != 0)
		close(fd);
	pthread_attr_destroy(&attr);
}

static void
proc_child(char *const argv[], int out_w, int ex_w, pid_t parent)
{
	sigset_t none;
	int fd, e;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	if (dup2(out_w, STDOUT_FILENO) < 0)
		_exit(127);
	execv(argv[0], argv);
	e = errno;
	if (write(ex_w, &e, sizeof e) < 0)
		_exit(127);
	_exit(127);
}

/*
 * Parse "listening on HOST:PORT" (the port is after the last ':').
 * Returns the port or -1.
 */
static int
proc_listen_port(const char *line)
{
	static const char pfx[] = "listening on ";
	const char *colon;
	char *end;
	long port;
	int rc = -1;

	if (strncmp(line, pfx, sizeof pfx - 1) != 0)
		goto out;
	colon = strrchr(line, ':');
	if (colon == NULL)
		goto out;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || port <= 0 || port > 65535)
		goto out;
	while (*end == '\r' || *end == ' ')
		end++;
	if (*end == '\0')
		rc = (int)port;
out:
	return rc;
}

int
proc_spawn(struct proc *p, char *const argv[], int timeout_ms)
{
	int out[2] = {-1, -1}, ex[2] = {-1, -1};
	char *line = NULL, *nl;
	size_t len = 0;
	int64_t deadline;
	struct pollfd pfd;
	pid_t pid = -1, parent;
	ssize_t n;
	int rc, e, port = -1, status;

	harness_init();
	p->pid = -1;
	p->port = 0;
	p->out_fd = -1;
	if (argv == NULL || argv[0] == NULL) {
		rc = -EINVAL;
		goto out;
	}
	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(ex, O_CLOEXEC) != 0) {
		rc = -errno;
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	if (pid == 0)
		proc_child(argv, out[1], ex[1], parent);
	close(out[1]);
	out[1] = -1;
	close(ex[1]);
	ex[1] = -1;

	/* EOF: exec succeeded (the pipe is close-on-exec). */
	do {
		n = read(ex[0], &e, sizeof e);
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof e) {
		waitpid(pid, &status, 0);
		pid = -1;
		fprintf(stderr, "harness: exec %s: %s\n", argv[0], strerror(e));
		rc = -e;
		goto out;
	}

	p->pid = pid;
	p->out_fd = out[0];
	line = hmalloc(LINE_MAX_BYTES + 1);
	deadline = harness_now_ms() + timeout_ms;
	while (port < 0) {
		while (port < 0 && (nl = memchr(line, '\n', len)) != NULL) {
			*nl = '\0';
			port = proc_listen_port(line);
			if (port < 0)
				fprintf(stderr, "%s\n", line);
			len -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, len);
		}
		if (port >= 0)
			break;
		if (len == LINE_MAX_BYTES) {
			rc = -E2BIG;
			goto fail;
		}
		pfd.fd = out[0];
		pfd.events = POLLIN;
		e = (int)(deadline - harness_now_ms());
		if (e <= 0) {
			fprintf(stderr,
				"harness: %s: no \"listening on\" line "
				"in %d ms\n",
				argv[0], timeout_ms);
			rc = -ETIMEDOUT;
			goto fail;
		}
		if (poll(&pfd, 1, e) < 0 && errno != EINTR) {
			rc = -errno;
			goto fail;
		}
		if (pfd.revents == 0)
			continue;
		n = read(out[0], line + len, LINE_MAX_BYTES - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			fprintf(stderr, "harness: %s exited before listening\n", argv[0]);
			rc = -EPIPE;
			goto fail;
		}
		len += (size_t)n;
	}
	if (len > 0 && write(STDERR_FILENO, line, len) < 0)
		len = 0;
	p->port = port;
	p->out_fd = -1;
	proc_drain_start(out[0]);
	out[0] = -1;
	pid = -1;
	rc = 0;
	goto out;
fail:
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	pid = -1;
	p->pid = -1;
	p->out_fd = -1;
out:
	free(line);
	if (out[0] >= 0)
		close(out[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (ex[0] >= 0)
		close(ex[0]);
	if (ex[1] >= 0)
		close(ex[1]);
	return rc;
}

int
proc_kill(struct proc *p, int sig)
{
	int64_t deadline;
	int status, rc = -1;
	pid_t w;

	if (p == NULL || p->pid <= 0)
		goto out;
	kill(p->pid, sig);
	deadline = harness_now_ms() + KILL_GRACE_MS;
	for (;;) {
		w = waitpid(p->pid, &status, WNOHANG);
		if (w == p->pid)
			break;
		if (w < 0 && errno != EINTR)
			goto done;
		if (harness_now_ms() >= deadline) {
			fprintf(stderr,
				"harness: pid %d ignored signal %d for "
				"%d ms, killing\n",
				(int)p->pid, sig, KILL_GRACE_MS);
			kill(p->pid, SIGKILL);
			if (waitpid(p->pid, &status, 0) != p->pid)
				goto done;
			break;
		}
		usleep(2000);
	}
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
done:
	p->pid = -1;
	if (p->out_fd >= 0) {
		close(p->out_fd);
		p->out_fd = -1;
	}
out:
	return rc;
}

static void
hbuf_init(struct hbuf *b, size_t max)
{
	b->cap = 256;
	b->data = hmalloc(b->cap);
	b->data[0] = '\0';
	b->len = 0;
	b->max = max;
}

static int
hbuf_append(struct hbuf *b, const char *p, size_t n)
{
	size_t cap;
	char *q;
	int rc = -E2BIG;

	if (n > b->max - b->len)
		goto out;
	if (b->len + n + 1 > b->cap) {
		cap = b->cap;
		while (b->len + n + 1 > cap)
			cap *= 2;
		q = realloc(b->data, cap);
		if (q == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		b->data = q;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	rc = 0;
out:
	return rc;
}

static size_t
xfer_body_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;

	return hbuf_append(&x->body, p, size * nmemb) == 0 ? size * nmemb : 0;
}

static size_t
xfer_header_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;

	/* A new status line (after 1xx) starts the final header block. */
	if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		x->head.len = 0;
		x->head.data[0] = '\0';
	}
	return hbuf_append(&x->head, p, n) == 0 ? n : 0;
}

static int
url_is_loopback(const char *url)
{
	CURLU *u;
	char *host = NULL;
	int ok = 0;

	u = curl_url();
	if (u == NULL)
		goto out;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		goto out;
	ok = strncmp(host, "127.", 4) == 0 || strcasecmp(host, "localhost") == 0 ||
	     strcmp(host, "[::1]") == 0;
out:
	curl_free(host);
	if (u != NULL)
		curl_url_cleanup(u);
	return ok;
}

static void
xfer_cleanup(struct xfer *x)
{
	if (x->h != NULL)
		curl_easy_cleanup(x->h);
	curl_slist_free_all(x->hdrs);
	free(x->body.data);
	free(x->head.data);
	memset(x, 0, sizeof *x);
}

static int
headers_have(const char *const *extra, const char *name)
{
	size_t n = strlen(name);
	int found = 0;

	for (; !found && extra != NULL && *extra != NULL; extra++)
		found = strncasecmp(*extra, name, n) == 0 && (*extra)[n] == ':';
	return found;
}

static int
xfer_setup(struct xfer *x, const char *method, const char *url, const char *body,
	   const char *const *extra, long timeout_ms, struct http_resp *out)
{
	const char *const *h;
	int rc = -EINVAL;

	memset(x, 0, sizeof *x);
	memset(out, 0, sizeof *out);
	x->out = out;
	hbuf_init(&x->body, BODY_MAX_BYTES);
	hbuf_init(&x->head, HEADERS_MAX);
	if (method == NULL || url == NULL || !url_is_loopback(url)) {
		fprintf(stderr, "harness: refusing url %s\n", url != NULL ? url : "(null)");
		goto out;
	}
	x->h = curl_easy_init();
	if (x->h == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	curl_easy_setopt(x->h, CURLOPT_URL, url);
	curl_easy_setopt(x->h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->h, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(x->h, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(x->h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, xfer_body_cb);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, xfer_header_cb);
	curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(x->h, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") == 0 && body == NULL)
		curl_easy_setopt(x->h, CURLOPT_HTTPGET, 1L);
	else if (strcmp(method, "POST") != 0)
		curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL || strcmp(method, "POST") == 0) {
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(body != NULL ? strlen(body) : 0));
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, body != NULL ? body : "");
		if (!headers_have(extra, "Content-Type"))
			x->hdrs = curl_slist_append(x->hdrs, "Content-Type: application/json");
	}
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	for (h = extra; h != NULL && *h != NULL; h++)
		x->hdrs = curl_slist_append(x->hdrs, *h);
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	rc = 0;
out:
	return rc;
}

/* Hand the transfer's result over to x->out. */
static void
xfer_finish(struct xfer *x, CURLcode code)
{
	struct http_resp *out = x->out;
	curl_off_t us = 0;
	long status = 0;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->h, CURLINFO_TOTAL_TIME_T, &us);
	out->status = status;
	out->elapsed_ms = (double)us / 1000.0;
	out->err = (int)code;
	out->len = x->body.len;
	out->body = x->body.data;
	out->headers = x->head.data;
	x->body.data = NULL;
	x->head.data = NULL;
	x->done = 1;
}

/* Fill a failed slot: empty strings, err set. */
static void
resp_fail(struct http_resp *out, int err)
{
	memset(out, 0, sizeof *out);
	out->body = hmalloc(1);
	out->body[0] = '\0';
	out->headers = hmalloc(1);
	out->headers[0] = '\0';
	out->err = err;
}

int
http_do(const char *method, const char *url, const char *body, const char *const *extra_headers,
	long timeout_ms, struct http_resp *out)
{
	struct xfer x;
	CURLcode code;
	int rc;

	harness_init();
	rc = xfer_setup(&x, method, url, body, extra_headers, timeout_ms, out);
	if (rc != 0) {
		resp_fail(out, CURLE_FAILED_INIT);
		goto out;
	}
	code = curl_easy_perform(x.h);
	xfer_finish(&x, code);
	rc = (int)code;
out:
	xfer_cleanup(&x);
	return rc;
}

void
http_resp_free(struct http_resp *r)
{
	if (r == NULL)
		return;
	free(r->body);
	free(r->headers);
	r->body = NULL;
	r->headers = NULL;
	r->len = 0;
}

char *
http_resp_header(const struct http_resp *r, const char *name)
{
	const char *line, *eol, *v, *e;
	size_t n = strlen(name);
	char *value = NULL;

	if (r == NULL || r->headers == NULL)
		goto out;
	for (line = r->headers; *line != '\0'; line = eol) {
		eol = strchr(line, '\n');
		eol = eol != NULL ? eol + 1 : line + strlen(line);
		if (strncasecmp(line, name, n) != 0 || line[n] != ':')
			continue;
		v = line + n + 1;
		while (v < eol && (*v == ' ' || *v == '\t'))
			v++;
		e = eol;
		while (e > v && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		value = strndup(v, (size_t)(e - v));
		break;
	}
out:
	return value;
}

int
http_do_many(int n, const char *method, const char *const urls[], const char *const bodies[],
	     const char *const *extra_headers, long timeout_ms, struct http_resp *out)
{
	struct xfer *xs = NULL, *x;
	CURLM *m = NULL;
	CURLMsg *msg;
	int i, running, left, rc = 0;
	char *priv;

	harness_init();
	if (n <= 0 || urls == NULL || out == NULL) {
		rc = -EINVAL;
		goto out;
	}
	xs = hmalloc(sizeof *xs * (size_t)n);
	memset(xs, 0, sizeof *xs * (size_t)n);
	m = curl_multi_init();
	if (m == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (xfer_setup(&xs[i], method, urls[i], bodies != NULL ? bodies[i] : NULL,
			       extra_headers, timeout_ms, &out[i]) != 0 ||
		    curl_multi_add_handle(m, xs[i].h) != CURLM_OK) {
			resp_fail(&out[i], CURLE_FAILED_INIT);
			xfer_cleanup(&xs[i]);
		}
	}
	do {
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			priv = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
			x = (struct xfer *)(void *)priv;
			xfer_finish(x, msg->data.result);
		}
		if (running > 0)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	} while (running > 0);
	for (i = 0; i < n; i++) {
		if (xs[i].h != NULL && !xs[i].done)
			xfer_finish(&xs[i], CURLE_ABORTED_BY_CALLBACK);
		if (out[i].err != 0)
			rc++;
		if (xs[i].h != NULL)
			curl_multi_remove_handle(m, xs[i].h);
		xfer_cleanup(&xs[i]);
	}
out:
	if (m != NULL)
		curl_multi_cleanup(m);
	free(xs);
	return rc;
}

int
mock_start(struct proc *p)
{
	char *path = harness_path("contrib/fusebox-mockllm");
	char *argv[] = {path, "--listen", "127.0.0.1:0", "--quiet", NULL};
	int rc;

	rc = proc_spawn(p, argv, 10000);
	free(path);
	return rc;
}

char *
mock_url(const struct proc *mock, const char *path)
{
	return hasprintf("http://127.0.0.1:%d%s", mock->port, path);
}

int
mock_set(const struct proc *mock, const char *backend, const char *behaviour_json)
{
	struct http_resp r;
	char *url, *path;
	int rc = -EIO;

	path = hasprintf("/_mock/backends/%s", backend);
	url = mock_url(mock, path);
	if (http_do("PUT", url, behaviour_json, NULL, MOCK_TIMEOUT_MS, &r) != 0)
		goto out;
	if (r.status == 200)
		rc = 0;
	else if (r.status == 400)
		rc = -EINVAL;
	if (rc != 0)
		fprintf(stderr, "harness: mock_set %s: %ld %s\n", backend, r.status, r.body);
out:
	http_resp_free(&r);
	free(url);
	free(path);
	return rc;
}

int
mock_reset(const struct proc *mock)
{
	struct http_resp r;
	char *url = mock_url(mock, "/_mock/reset");
	int rc = -EIO;

	if (http_do("POST", url, NULL, NULL, MOCK_TIMEOUT_MS, &r) == 0 && r.status == 200)
		rc = 0;
	http_resp_free(&r);
	free(url);
	return rc;
}

cJSON *
mock_stats(const struct proc *mock)
{
	struct http_resp r;
	char *url = mock_url(mock, "/_mock/stats");
	cJSON *j = NULL;

	if (http_do("GET", url, NULL, NULL, MOCK_TIMEOUT_MS, &r) == 0 && r.status == 200)
		j = cJSON_ParseWithLength(r.body, r.len);
	http_resp_free(&r);
	free(url);
	return j;
}

int
mock_requests(const struct proc *mock, const char *backend)
{
	const cJSON *be, *req;
	cJSON *stats;
	int n = -1;

	stats = mock_stats(mock);
	if (stats == NULL)
		goto out;
	n = 0;
	be = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(stats, "backends"),
					      backend);
	req = cJSON_GetObjectItemCaseSensitive(be, "requests");
	if (cJSON_IsNumber(req))
		n = req->valueint;
out:
	cJSON_Delete(stats);
	return n;
}

static sqlite3_stmt *
db_query(const char *db_path, const char *sql, sqlite3 **dbp)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	int rc;

	rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "harness: open %s: %s\n", db_path,
			db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto out;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "harness: %s: %s: %s\n", db_path, sql, sqlite3_errmsg(db));
		goto out;
	}
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		if (rc != SQLITE_DONE)
			fprintf(stderr, "harness: %s: %s: %s\n", db_path, sql, sqlite3_errmsg(db));
		sqlite3_finalize(st);
		st = NULL;
	}
out:
	if (st == NULL) {
		sqlite3_close(db);
		db = NULL;
	}
	*dbp = db;
	return st;
}

long long
db_scalar_int(const char *db_path, const char *sql)
{
	sqlite3_stmt *st;
	sqlite3 *db;
	long long v = INT64_MIN;

	st = db_query(db_path, sql, &db);
	if (st == NULL)
		goto out;
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
out:
	return v;
}

char *
db_scalar_text(const char *db_path, const char *sql)
{
	const unsigned char *t;
	sqlite3_stmt *st;
	sqlite3 *db;
	char *v = NULL;

	st = db_query(db_path, sql, &db);
	if (st == NULL)
		goto out;
	t = sqlite3_column_text(st, 0);
	if (t != NULL)
		v = strdup((const char *)t);
	sqlite3_finalize(st);
	sqlite3_close(db);
out:
	return v;
}
