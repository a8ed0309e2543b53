/*
 * Integration: GET /v1/diagnose on scripted incidents at the mock. Each
 * TCase runs healthy traffic, makes a change, scripts a fault and asks
 * for the diagnosis, which must name the right cause first, on the right
 * backend and phase, and the change before the episode; the cause's query
 * run with SQLite must return the cause's calls.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "itd.h"

#define HEAD "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
#define BACKEND(name)                                                                              \
	"{\"name\":\"" name "\",\"url\":\"@MOCK@/b/" name "/v1/chat/completions\","                \
	"\"model\":\"m\",\"max_concurrent\":500,"                                                  \
	"\"timeouts\":{\"connect_ms\":1000,\"first_byte_ms\":800,\"total_ms\":2000},"              \
	"\"breaker\":{\"failure_threshold\":100000},"                                              \
	"\"rate_limits\":{\"honor_headers\":false}}" /* 429s reach the mock: what is diagnosed */
#define OUTPUT                                                                                     \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\"],\"properties\":"    \
	"{\"intent\":{\"type\":\"string\",\"enum\":[\"refund\",\"complaint\",\"consult\","         \
	"\"other\"]}}},\"review_below\":0.0}"
#define RULES                                                                                      \
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"},"          \
	"\"confidence\":0.6}],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}}"
#define CONFIG                                                                                     \
	HEAD "\"backends\":[" BACKEND("primary-v2") "," BACKEND("canary-v3") "," BACKEND(          \
		"small-v1") "],"                                                                   \
			    "\"routes\":[{\"name\":\"intent\",\"budget_ms\":5000,"                 \
			    "\"targets\":[{\"backend\":\"primary-v2\",\"weight\":100},"            \
			    "{\"backend\":\"canary-v3\",\"weight\":0,\"canary\":true}],"           \
			    "\"backup\":{\"targets\":[{\"backend\":\"small-v1\"}]},"               \
			    "\"retry\":{\"max_retries\":0}," OUTPUT "," RULES "}]}"
#define VIEW  "view-token"
#define OP    "op-token"
#define SHORT "{\"input\":\"refund please\"}"

static struct itd T;

static void
setup(void)
{
	ck_assert_int_eq(itd_start(&T, CONFIG), 0);
}

static void
teardown(void)
{
	itd_stop(&T);
}

/* n calls of body one after the other, every one answered 200. */
static void
calls(int n, const char *body)
{
	struct http_resp r;
	int i;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(itd_call(&T, "intent", body, 10000, &r), 0);
		ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
		http_resp_free(&r);
	}
}

/*
 * n calls of body at once (each on a connection of its own), every one
 * answered 200: where each waits out a timeout, they wait it out together.
 */
static void
calls_at_once(int n, const char *body)
{
	struct http_resp rs[8];
	int i;

	ck_assert_int_le(n, (int)(sizeof rs / sizeof rs[0]));
	ck_assert_int_eq(itd_call_many(&T, "intent", body, n, 10000, rs), 0);
	for (i = 0; i < n; i++) {
		ck_assert_msg(rs[i].status == 200, "status %ld: %s", rs[i].status, rs[i].body);
		http_resp_free(&rs[i]);
	}
}

static cJSON *
diagnose(void)
{
	cJSON *o = itd_expect(&T, "GET", "/v1/diagnose?route=intent&since=10m", NULL, VIEW, 200);
	cJSON *routes = cJSON_GetObjectItem(o, "routes");

	ck_assert_int_eq(cJSON_GetArraySize(routes), 1);
	return o;
}

static cJSON *
route0(cJSON *o)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0);
}

static cJSON *
cause0(cJSON *o)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(route0(o), "causes"), 0);
}

static const cJSON *
find(const cJSON *arr, const char *key, const char *value)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, arr)
	{
		if (strcmp(itd_str(x, key), value) == 0)
			return x;
	}
	return NULL;
}

/* The output of `fusebox ARGS` against the daemon, with the tests' tokens file (caller frees). */
static char *
cli(const char *args)
{
	char *bin = harness_path("tui/fusebox"), *cmd = NULL, *out = NULL;
	size_t len = 0;
	FILE *fp, *mem;
	int ch;

	ck_assert_int_ge(
		asprintf(&cmd, "%s --url %s --token-file %s/tokens %s", bin, T.base, T.dir, args),
		0);
	fp = popen(cmd, "r");
	ck_assert_ptr_nonnull(fp);
	mem = open_memstream(&out, &len);
	while ((ch = fgetc(fp)) != EOF)
		fputc(ch, mem);
	fclose(mem);
	ck_assert_int_eq(pclose(fp), 0);
	free(cmd);
	free(bin);
	return out;
}

/* A suggestion of route 0 whose text contains needle. */
static int
suggested(cJSON *o, const char *needle)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, cJSON_GetObjectItem(route0(o), "suggestions"))
	{
		if (strstr(itd_str(x, "text"), needle) != NULL)
			return 1;
	}
	return 0;
}

/* The first cause's query returns as many distinct calls as the cause counts. */
static void
query_proves(cJSON *o)
{
	const cJSON *c = cause0(o);
	const char *q = itd_str(c, "query");
	const char *semi = strchr(q, ';');
	char *sql = NULL;
	long long n;

	ck_assert_ptr_nonnull(strstr(q, "SELECT"));
	ck_assert_int_ge(asprintf(&sql, "SELECT count(DISTINCT id) FROM (%.*s)",
				  semi != NULL ? (int)(semi - q) : (int)strlen(q), q),
			 0);
	n = db_scalar_int(T.db, sql);
	ck_assert_int_eq(n, (long long)itd_num(cJSON_GetObjectItem(c, "evidence"), "calls"));
	free(sql);
}

/* The changes of route 0 hold one of kind with actor (NULL: any). */
static void
change_before(cJSON *o, const char *kind, const char *actor)
{
	const cJSON *ch = find(cJSON_GetObjectItem(route0(o), "changes"), "kind", kind);
	const char *start = itd_str(route0(o), "episode_start");

	ck_assert_msg(ch != NULL, "no %s change", kind);
	if (actor != NULL)
		ck_assert_str_eq(itd_str(ch, "actor"), actor);
	ck_assert_str_ne(start, "");
	ck_assert_msg(strcmp(itd_str(ch, "at"), start) <= 0, "change %s after the episode %s",
		      itd_str(ch, "at"), start);
}

START_TEST(first_byte_hang_on_primary)
{
	cJSON *o, *c;
	char *out;

	calls(5, SHORT);
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	usleep(20 * 1000);
	ck_assert_int_eq(mock_set(&T.mock, "primary-v2", "{\"hang\":true}"), 0);
	calls_at_once(4, SHORT); /* each waits 800 ms for a first byte, then the backup answers */
	o = diagnose();
	c = cause0(o);
	ck_assert_str_eq(itd_str(c, "reason"), "first_byte_timeout");
	ck_assert_str_eq(itd_str(c, "backend"), "primary-v2");
	ck_assert_str_eq(itd_str(c, "phase"), "first_byte");
	ck_assert_double_eq_tol(itd_num(c, "share"), 1.0, 1e-9);
	ck_assert_ptr_nonnull(strstr(itd_str(c, "text"), "first byte > 800 ms in"));
	ck_assert_int_eq((int)itd_num(route0(o), "degraded_calls"), 4);
	ck_assert_int_eq((int)itd_num(route0(o), "calls"), 9);
	change_before(o, "reload", "alice");
	ck_assert_str_eq(
		itd_str(cJSON_GetArrayItem(cJSON_GetObjectItem(route0(o), "suggestions"), 0),
			"text"),
		"backup small-v1 healthy (100 % valid): force level 1");
	query_proves(o);
	cJSON_Delete(o);
	out = cli("diagnose intent --since 10m");
	ck_assert_msg(strstr(out, "  causes:\n    100 % of degraded calls: first_byte_timeout on "
				  "primary-v2 (connect p50 ") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "      $ fusebox level intent 1 --reason \"first_byte_timeout on "
				  "primary-v2\"\n") != NULL,
		      "%s", out);
	free(out);
	out = cli("diagnose --json");
	o = cJSON_Parse(out);
	ck_assert_str_eq(itd_str(cause0(o), "reason"), "first_byte_timeout");
	cJSON_Delete(o);
	free(out);
}
END_TEST

START_TEST(schema_drift_on_canary_after_weights)
{
	cJSON *o, *c, *ev;

	calls(5, SHORT);
	ck_assert_int_eq(mock_set(&T.mock, "canary-v3", "{\"preset\":\"wrong_enum\"}"), 0);
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/intent/weights",
				"{\"weights\":{\"primary-v2\":0,\"canary-v3\":100}}", OP, 200));
	usleep(20 * 1000);
	calls(6, SHORT);
	o = diagnose();
	c = cause0(o);
	ck_assert_str_eq(itd_str(c, "reason"), "validation_schema");
	ck_assert_str_eq(itd_str(c, "backend"), "canary-v3");
	ck_assert_str_eq(itd_str(c, "phase"), "validation");
	ev = cJSON_GetObjectItem(c, "evidence");
	ck_assert_int_eq((int)itd_num(ev, "failures"), 6);
	ck_assert_ptr_nonnull(
		strstr(itd_str(cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "details"), 0), "detail"),
		       "\"banana\" not in enum"));
	ck_assert_ptr_nonnull(strstr(itd_str(c, "text"), "\xc3\x97"
							 "6"));
	change_before(o, "weights", "alice");
	ck_assert_str_eq(
		itd_str(cJSON_GetArrayItem(cJSON_GetObjectItem(route0(o), "suggestions"), 0),
			"action"),
		"fusebox weights intent primary-v2=0 canary-v3=0");
	query_proves(o);
	cJSON_Delete(o);
}
END_TEST

START_TEST(storm_429_with_retry_after)
{
	cJSON *o, *c;
	const cJSON *x;

	calls(5, SHORT);
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/backends/canary-v3/breaker",
				"{\"state\":\"forced_open\",\"reason\":\"maintenance\"}", OP, 200));
	usleep(20 * 1000);
	ck_assert_int_eq(mock_set(&T.mock, "primary-v2", "{\"status\":429,\"retry_after\":\"3\"}"),
			 0);
	calls(5, SHORT);
	o = diagnose();
	c = cause0(o);
	ck_assert_str_eq(itd_str(c, "reason"), "http_429");
	ck_assert_str_eq(itd_str(c, "backend"), "primary-v2");
	ck_assert_str_eq(itd_str(c, "phase"), "rate_limit");
	x = find(cJSON_GetObjectItem(route0(o), "contrasts"), "factor", "http_status");
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq((int)itd_num(x, "failing"), 429);
	ck_assert_int_eq((int)itd_num(x, "succeeding"), 200);
	x = find(cJSON_GetObjectItem(route0(o), "contrasts"), "factor", "retry_after");
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq((int)itd_num(x, "failing"), 3000);
	change_before(o, "breaker", "alice");
	query_proves(o);
	cJSON_Delete(o);
}
END_TEST

START_TEST(long_inputs_time_out_short_pass)
{
	char body[2200], text[2000];
	cJSON *o, *c;
	const cJSON *x;
	int i;

	for (i = 0; i + 7 < (int)sizeof text; i += 7)
		memcpy(text + i, "refund ", 7);
	text[i] = '\0';
	snprintf(body, sizeof body, "{\"input\":\"%s\"}", text);
	calls(4, SHORT);
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	usleep(20 * 1000);
	/* The mock answers in request order: a hang for each long input, good for each short. */
	ck_assert_int_eq(mock_set(&T.mock, "primary-v2",
				  "{\"script\":[{\"hang\":true},{},{\"hang\":true},{},"
				  "{\"hang\":true},{},{\"hang\":true},{}]}"),
			 0);
	for (i = 0; i < 4; i++) {
		calls(1, body);
		calls(1, SHORT);
	}
	o = diagnose();
	c = cause0(o);
	ck_assert_str_eq(itd_str(c, "reason"), "first_byte_timeout");
	ck_assert_str_eq(itd_str(c, "backend"), "primary-v2");
	ck_assert_str_eq(itd_str(c, "phase"), "first_byte");
	x = find(cJSON_GetObjectItem(route0(o), "contrasts"), "factor", "input_tokens");
	ck_assert_msg(x != NULL, "no input_tokens contrast");
	ck_assert_msg(itd_num(x, "failing") >= 4 * itd_num(x, "succeeding"),
		      "failing %g vs succeeding %g", itd_num(x, "failing"),
		      itd_num(x, "succeeding"));
	ck_assert(suggested(o, "long inputs time out on primary-v2"));
	change_before(o, "reload", "alice");
	query_proves(o);
	cJSON_Delete(o);
}
END_TEST

START_TEST(arguments_and_roles)
{
	cJSON *o;

	itd_expect_error(&T, "GET", "/v1/diagnose?since=15x", NULL, VIEW, 400, "bad_request",
			 "since");
	itd_expect_error(&T, "GET", "/v1/diagnose?route=nope", NULL, VIEW, 404, "unknown_route",
			 "nope");
	cJSON_Delete(itd_expect(&T, "GET", "/v1/diagnose", NULL, "call-token", 403));
	/* Nothing degraded: no route listed unless asked for. */
	calls(2, SHORT);
	{
		char path[96], ts[40];
		time_t t = time(NULL) - 300;
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(path, sizeof path, "/v1/diagnose?since=%s", ts);
		o = itd_expect(&T, "GET", path, NULL, VIEW, 200);
	}
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "routes")), 0);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "window"), "from"));
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/diagnose?route=intent", NULL, VIEW, 200);
	ck_assert_int_eq((int)itd_num(route0(o), "calls"), 2);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(route0(o), "episode_start")));
	cJSON_Delete(o);
}
END_TEST

/*
 * 320,000 calls over the last two hours on route intent (the window of 1 h
 * and the one before it), a quarter degraded by first_byte_timeout with a
 * second attempt: as tests/bench/diagnose.sh fills it but twice as dense
 * (a diagnosis of the bench's window became too quick to tell whether
 * calls are answered while it runs), written while the daemon is down.
 */
static void
fill_large_window(void)
{
	long long now = (long long)time(NULL) * 1000 - 1000, t0 = now - 7200000;
	char *sql = NULL, *err = NULL;
	sqlite3 *db;

	ck_assert_int_gt(
		asprintf(&sql,
			 "BEGIN;"
			 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
			 "WHERE i < 320000) "
			 "INSERT INTO calls (id, request_id, route, started_at, finished_at, "
			 "elapsed_ms, budget_ms, level, source, backend, degraded, reason, "
			 "attempts, http_status, status) "
			 "SELECT 10000000 + i, 'r' || i, 'intent', %lld + i * 45 / 2, "
			 "%lld + i * 45 / 2 + 900, 900, 3000, 'L0', "
			 "CASE WHEN i %% 4 = 0 THEN 'rules' ELSE 'llm' END, 'primary-v2', "
			 "i %% 4 = 0, CASE WHEN i %% 4 = 0 THEN 'first_byte_timeout' END, "
			 "1 + (i %% 4 = 0), 200, 'done' FROM n;"
			 "INSERT INTO attempts (id, call_id, request_id, route, backend, "
			 "attempt_no, started_at, timeout_ms, connect_ms, first_byte_ms, "
			 "total_ms, http_status, outcome, input_tokens) "
			 "SELECT id, id, request_id, route, 'primary-v2', 1, started_at, 2500, 2, "
			 "CASE WHEN degraded THEN NULL ELSE 300 END, 900, "
			 "CASE WHEN degraded THEN NULL ELSE 200 END, "
			 "CASE WHEN degraded THEN 'first_byte_timeout' ELSE 'ok' END, "
			 "100 + id %% 400 FROM calls WHERE id >= 10000000;"
			 "INSERT INTO attempts (id, call_id, request_id, route, backend, "
			 "attempt_no, started_at, timeout_ms, connect_ms, total_ms, outcome, "
			 "input_tokens) "
			 "SELECT 1000000 + id, id, request_id, route, 'primary-v2', 2, "
			 "started_at + 400, 2500, 2, 2500, 'first_byte_timeout', 100 + id %% 400 "
			 "FROM calls WHERE degraded AND id > 10160000;"
			 "INSERT INTO degradations (id, call_id, route, from_step, to_step, "
			 "reason, at) SELECT id, id, route, 'primary', 'rules', reason, "
			 "started_at + 900 FROM calls WHERE degraded AND id >= 10000000;"
			 "INSERT OR IGNORE INTO slo_minutes (route, minute, total, service_good, "
			 "smart_good, src_llm, src_rules) "
			 "SELECT route, started_at / 60000 * 60000, count(*), count(*), "
			 "sum(1 - degraded), sum(1 - degraded), sum(degraded) FROM calls "
			 "WHERE id >= 10000000 GROUP BY route, started_at / 60000;"
			 "COMMIT;",
			 t0, t0),
		0);
	ck_assert_int_eq(sqlite3_open(T.db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "fill: %s", err);
	sqlite3_close(db);
	free(sql);
}

static double
wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec * 1000.0 + tv.tv_usec / 1000.0;
}

struct bg_diagnose {
	pthread_t th;
	double start, end;
	int done;
	struct http_resp r;
};

static void *
bg_diagnose_run(void *arg)
{
	struct bg_diagnose *b = arg;

	b->start = wall_ms();
	itd_req(&T, "GET", "/v1/diagnose?route=intent&since=1h", NULL, VIEW, 30000, &b->r);
	b->end = wall_ms();
	__atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

#define CALLS_MAX 2000

/*
 * The analysis runs on a thread of its own: while a diagnosis of a large
 * window runs, calls on the route are answered, each in far less time than
 * the diagnosis takes, and a second diagnosis is refused 503 diagnose_busy.
 */
START_TEST(large_window_off_the_loop)
{
	static double t0[CALLS_MAX], t1[CALLS_MAX];
	struct bg_diagnose b;
	struct http_resp r;
	double diag_ms, worst = 0;
	int i, n = 0, inside = 0, busy_seen = 0, round, second_ran;
	cJSON *o;

	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	fill_large_window();
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	calls(3, SHORT);
	/* On a loaded machine the second diagnosis can reach the daemon before
	 * the thread's first: then the roles are swapped and the round is run
	 * again (at most three times). */
	for (round = 0; round < 3; round++) {
		n = 0;
		busy_seen = 0;
		second_ran = 0;
		memset(&b, 0, sizeof b);
		ck_assert_int_eq(pthread_create(&b.th, NULL, bg_diagnose_run, &b), 0);
		while (!__atomic_load_n(&b.done, __ATOMIC_SEQ_CST) && n < CALLS_MAX) {
			t0[n] = wall_ms();
			ck_assert_int_eq(itd_call(&T, "intent", SHORT, 10000, &r), 0);
			t1[n] = wall_ms();
			ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
			http_resp_free(&r);
			n++;
			if (n == 2 && !__atomic_load_n(&b.done, __ATOMIC_SEQ_CST)) {
				ck_assert_int_eq(itd_req(&T, "GET",
							 "/v1/diagnose?route=intent&since=1h", NULL,
							 VIEW, 30000, &r),
						 0);
				second_ran = r.status == 200;
				if (!second_ran && !__atomic_load_n(&b.done, __ATOMIC_SEQ_CST)) {
					ck_assert_msg(r.status == 503, "second diagnose: %ld",
						      r.status);
					ck_assert_ptr_nonnull(strstr(r.body, "diagnose_busy"));
					busy_seen = 1;
				}
				http_resp_free(&r);
			}
		}
		pthread_join(b.th, NULL);
		if (!(second_ran && b.r.status == 503))
			break;
		http_resp_free(&b.r);
	}
	ck_assert_msg(b.r.status == 200, "diagnose: %ld %s", b.r.status, b.r.body);
	o = cJSON_Parse(b.r.body);
	ck_assert_int_ge((int)itd_num(route0(o), "calls"), 70000);
	ck_assert_str_eq(itd_str(cause0(o), "reason"), "first_byte_timeout");
	cJSON_Delete(o);
	http_resp_free(&b.r);
	diag_ms = b.end - b.start;
	/* A call stuck behind the analysis would start in it and end after it. */
	for (i = 0; i < n; i++) {
		if (t0[i] < b.start || t0[i] > b.end)
			continue;
		if (t1[i] <= b.end)
			inside++;
		if (t1[i] - t0[i] > worst)
			worst = t1[i] - t0[i];
	}
	ck_assert_msg(diag_ms >= 100, "the diagnosis took only %.0f ms: too small to tell",
		      diag_ms);
	ck_assert_msg(inside >= 3, "%d calls answered during a %.0f ms diagnosis", inside, diag_ms);
	ck_assert_msg(worst < diag_ms / 4, "a call took %.0f ms during a %.0f ms diagnosis", worst,
		      diag_ms);
	ck_assert(busy_seen);
	/* A drain while a diagnosis runs: it is answered, and the daemon exits cleanly. */
	memset(&b, 0, sizeof b);
	ck_assert_int_eq(pthread_create(&b.th, NULL, bg_diagnose_run, &b), 0);
	usleep(50 * 1000);
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	pthread_join(b.th, NULL);
	ck_assert_msg(b.r.status == 200 || (b.r.status == 503 && strstr(b.r.body, "draining")),
		      "diagnose in the drain: %ld %s", b.r.status, b.r.body);
	http_resp_free(&b.r);
}
END_TEST

static Suite *
diagnose_it_suite(void)
{
	Suite *s = suite_create("diagnose_it");

	ITD_ADD_TEST(s, first_byte_hang_on_primary, setup, teardown, 120);
	ITD_ADD_TEST(s, schema_drift_on_canary_after_weights, setup, teardown, 120);
	ITD_ADD_TEST(s, storm_429_with_retry_after, setup, teardown, 120);
	ITD_ADD_TEST(s, long_inputs_time_out_short_pass, setup, teardown, 120);
	ITD_ADD_TEST(s, arguments_and_roles, setup, teardown, 120);
	ITD_ADD_TEST(s, large_window_off_the_loop, setup, teardown, 240);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(diagnose_it_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
