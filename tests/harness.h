#pragma once
/*
 * harness: what integration tests share. Spawn the real binaries on
 * 127.0.0.1 port 0 and read the port back, talk HTTP to them with libcurl
 * (one request, or many at once), drive fusebox-mockllm's control API, and
 * read SQLite rows. Runs on the test's thread; no global state beyond a
 * one-time init (SIGPIPE ignored, curl initialised, RLIMIT_NOFILE raised to
 * its hard limit so children and many-connection tests have descriptors).
 * Killing children at the end of a test is the test's job (proc_kill).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

/*
 * A spawned child. out_fd is the read end of the child's stdout while
 * proc_spawn waits for the "listening on" line; afterwards a harness
 * thread forwards the rest of the child's stdout to stderr (so a chatty
 * child never blocks on a full pipe) and out_fd is -1.
 */
struct proc {
	pid_t pid;
	int port;
	int out_fd;
};

/*
 * Spawn argv[0] (a path) with argv; stdin is /dev/null, stderr is the
 * test's stderr, and the child gets SIGKILL if the calling thread dies.
 * Reads the child's stdout until a line "listening on HOST:PORT" (other
 * lines go to stderr) and fills p->port. 0, or -errno: -ENOENT etc. when
 * exec fails, -ETIMEDOUT after timeout_ms (the child is killed), -EPIPE
 * when the child exits first.
 */
int proc_spawn(struct proc *p, char *const argv[], int timeout_ms);
/*
 * Send sig, then wait for the child (SIGKILL after 10 s). Returns its exit
 * status, 128 + signal number when a signal ended it, or -1 when p holds
 * no child. p->pid becomes -1.
 */
int proc_kill(struct proc *p, int sig);

const char *harness_build_root(void);  /* $FB_BUILD_ROOT, else "build" */
const char *harness_source_root(void); /* $FB_SOURCE_ROOT, else "." */
char *harness_path(const char *rel);   /* build root + "/" + rel; free() */
char *harness_tmpdir(void);	       /* fresh /tmp/fusebox-test-XXXXXX */

/*
 * A response. body and headers are NUL-terminated (also when empty);
 * headers is the raw header block of the final response. status is 0 when
 * no status line arrived; err is 0 or the CURLcode that ended the transfer
 * (CURLE_OPERATION_TIMEDOUT, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE...),
 * with whatever arrived before it kept in body/headers.
 */
struct http_resp {
	long status;
	char *body;
	size_t len;
	char *headers;
	double elapsed_ms;
	int err;
};

/*
 * One HTTP request to a loopback url (127.0.0.0/8, localhost, [::1]; no
 * proxy, no connection reuse). body may be NULL; a body is sent as
 * application/json unless extra_headers (NULL-terminated "Name: value"
 * list, or NULL) sets Content-Type. timeout_ms bounds the whole transfer.
 * Returns 0 when a response arrived completely, the (positive) CURLcode
 * when the transfer failed (out is still filled, out->err is the same
 * code), -EINVAL for a non-loopback url. Free out with http_resp_free.
 */
int http_do(const char *method, const char *url, const char *body, const char *const *extra_headers,
	    long timeout_ms, struct http_resp *out);
void http_resp_free(struct http_resp *r);
/* First value of header name (case-insensitive), trimmed; free() or NULL. */
char *http_resp_header(const struct http_resp *r, const char *name);
/*
 * Run n requests concurrently (curl multi, every one on its own connection)
 * and fill out[0..n-1]. bodies may be NULL (no bodies) or hold NULLs. Returns
 * the number of failed transfers (see out[i].err), or -errno.
 */
int http_do_many(int n, const char *method, const char *const urls[], const char *const bodies[],
		 const char *const *extra_headers, long timeout_ms, struct http_resp *out);

/* fusebox-mockllm helpers. */
/* Spawn build/contrib/fusebox-mockllm --listen 127.0.0.1:0 --quiet. */
int mock_start(struct proc *p);
/*
 * PUT /_mock/backends/<backend>. 0; -EINVAL when the mock refused the
 * behaviour (its message goes to stderr); -EIO on other failures.
 */
int mock_set(const struct proc *mock, const char *backend, const char *behaviour_json);
int mock_reset(const struct proc *mock);    /* 0 or -EIO */
cJSON *mock_stats(const struct proc *mock); /* caller cJSON_Delete; NULL */
/* stats backends.<backend>.requests; 0 when absent, -1 on failure. */
int mock_requests(const struct proc *mock, const char *backend);
/* A URL on the mock: "http://127.0.0.1:PORT" + path; free(). */
char *mock_url(const struct proc *mock, const char *path);

/*
 * Open db_path read-only (busy timeout 5 s) and return the first column of
 * the first row. db_scalar_int returns INT64_MIN when the query fails or
 * yields no row; db_scalar_text returns a malloc'd string, or NULL when the
 * query fails, yields no row or the value is NULL. Errors go to stderr.
 */
long long db_scalar_int(const char *db_path, const char *sql);
char *db_scalar_text(const char *db_path, const char *sql);

int64_t harness_now_ms(void); /* CLOCK_MONOTONIC milliseconds */
