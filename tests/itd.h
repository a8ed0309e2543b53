#pragma once
/*
 * itd: integration fixture — fusebox-mockllm + fuseboxd on 127.0.0.1 with
 * a config written into a fresh temporary folder. The config text may use
 * @MOCK@ (the mock's base URL, "http://127.0.0.1:PORT") and @DB@ (the
 * database path). A tokens file with an operator ("op-token"), a viewer
 * ("view-token") and a caller ("call-token") is written beside it (0600).
 * The itd_expect* helpers assert with Check: call them from a test only.
 */
#include <check.h>
#include <pthread.h>

#include <cjson/cJSON.h>

#include "harness.h"

struct itd {
	struct proc mock;
	struct proc d;
	char *dir;
	char *db;
	char *cfg_path;
	char base[64]; /* "http://127.0.0.1:PORT" of fuseboxd */
};

/* config with @MOCK@ and @DB@ replaced for t (new string). */
char *itd_render(const struct itd *t, const char *config);
/* Overwrite the daemon's config file with config (rendered). 0 or -errno. */
int itd_write_config(struct itd *t, const char *config);
/* Start mock + daemon. 0 or -errno. */
int itd_start(struct itd *t, const char *config);
/* Start only the daemon again on the same folder and mock (after itd_kill_daemon). */
int itd_restart_daemon(struct itd *t);
int itd_kill_daemon(struct itd *t, int sig);
void itd_stop(struct itd *t);
/* POST /v1/routes/<route>/call with body; 0 or CURLcode (see http_do). */
int itd_call(struct itd *t, const char *route, const char *body, long timeout_ms,
	     struct http_resp *out);
/*
 * n identical itd_calls at once (http_do_many: every one on a connection of
 * its own); the answers go to out[0..n-1] (free each with http_resp_free).
 * Returns http_do_many's result (the number of failed transfers, or
 * -errno); -EINVAL when n < 1, -E2BIG when n > ITD_MANY_MAX.
 */
#define ITD_MANY_MAX 10000
int itd_call_many(struct itd *t, const char *route, const char *body, int n, long timeout_ms,
		  struct http_resp *out);
/* A request to the daemon at path (method, body may be NULL, token may be NULL). */
int itd_req(struct itd *t, const char *method, const char *path, const char *body,
	    const char *token, long timeout_ms, struct http_resp *out);
/*
 * itd_req with a 10 s timeout that must answer with status want (the test
 * fails otherwise). Returns the parsed body (caller deletes; NULL when not
 * JSON).
 */
cJSON *itd_expect(struct itd *t, const char *method, const char *path, const char *body,
		  const char *token, long want);
/*
 * itd_expect of an error answer: its error.code is code and its
 * error.message contains needle.
 */
void itd_expect_error(struct itd *t, const char *method, const char *path, const char *body,
		      const char *token, long want, const char *code, const char *needle);
/*
 * A call running on a thread of its own while the test does something
 * else: itd_bg_start starts itd_call(t, route, body, 10 s) (t, route and
 * body are borrowed until itd_bg_join); 0 or the pthread_create error.
 * itd_bg_join waits for it and returns itd_call's result; the answer is in
 * b->r (free it with http_resp_free).
 */
struct itd_bg {
	pthread_t th;
	struct itd *t;
	const char *route;
	const char *body;
	struct http_resp r;
	int rc;
};

int itd_bg_start(struct itd_bg *b, struct itd *t, const char *route, const char *body);
int itd_bg_join(struct itd_bg *b);
/* Parse a response body (caller deletes); NULL when not JSON. */
cJSON *itd_json(const struct http_resp *r);
/* String / number field of a parsed object ("" / -1 when absent). */
const char *itd_str(const cJSON *o, const char *key);
double itd_num(const cJSON *o, const char *key);
/* Wait until the store has flushed (rows are batched every <= 50 ms). */
void itd_settle(void);
/* Count rows: SELECT count(*) FROM <sql_tail>. */
long long itd_count(struct itd *t, const char *sql_tail);
/*
 * itd_count() until it is want or timeout_ms passed (the writer commits in
 * the background, and a loaded machine starves it); the last count.
 */
long long itd_count_wait(struct itd *t, const char *sql_tail, long long want, int timeout_ms);
/* A sample without labels from GET /metrics (viewer token); -1 when absent. */
double itd_metric(struct itd *t, const char *name);
/*
 * Add test t to suite s in a test case of its own (named after it) with
 * the fixture setup/teardown (either may be NULL) and a timeout.
 */
void itd_add_test(Suite *s, const char *name, const TTest *t, SFun setup, SFun teardown,
		  double timeout_s);
#define ITD_ADD_TEST(s, t, setup, teardown, timeout_s)                                             \
	itd_add_test((s), #t, (t), (setup), (teardown), (timeout_s))
/* The sanitizer build (FB_SANITIZED=1): timing bounds get their slack. */
int itd_sanitized(void);
