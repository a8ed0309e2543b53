/*
 * Integration: the guarded call engine (issue "call engine") against
 * fusebox-mockllm on 127.0.0.1 — the intent fast path scenario, retry
 * classes, backoff gaps measured at the mock, Retry-After, breakers,
 * bulkheads, max_inflight, idempotency and the attempts log.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "itd.h"

#define SCHEMA                                                                                     \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\",\"confidence\"],"    \
	"\"properties\":{\"intent\":{\"type\":\"string\",\"enum\":[\"refund\",\"complaint\","      \
	"\"consult\",\"other\"]},\"confidence\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1}" \
	"}},"                                                                                      \
	"\"review_below\":0.0}"
#define RULES                                                                                      \
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"},"          \
	"\"confidence\":0.6}],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}}"
#define HEAD "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","

/* One backend "primary" with the given timeouts/breaker JSON, one route "intent". */
static char *
config_one(const char *backend_extra, const char *route_extra)
{
	char *s = NULL;

	if (asprintf(&s,
		     HEAD "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
			  "completions\","
			  "\"model\":\"m\"%s%s}],"
			  "\"routes\":[{\"name\":\"intent\",\"targets\":[{\"backend\":\"primary\","
			  "\"weight\":1}]," SCHEMA "," RULES "%s%s}]}",
		     backend_extra[0] ? "," : "", backend_extra, route_extra[0] ? "," : "",
		     route_extra) < 0)
		abort();
	return s;
}

static struct itd T;

static void
start(const char *backend_extra, const char *route_extra)
{
	char *cfg = config_one(backend_extra, route_extra);
	int r = itd_start(&T, cfg);

	free(cfg);
	ck_assert_int_eq(r, 0);
}

static void
teardown(void)
{
	itd_stop(&T);
}

/*
 * The rows of a call that has answered are committed in the background
 * (batched every <= 50 ms): wait for count(*) FROM sql_tail to be want
 * (up to 5 s, where itd_settle slept 150 ms) and assert it.
 */
#define ASSERT_COUNT(sql_tail, want)                                                               \
	ck_assert_int_eq(itd_count_wait(&T, (sql_tail), (want), 5000), (want))

/* Call and parse; asserts HTTP 200 unless want_status is given. */
static cJSON *
call(const char *body, long want_status, double *elapsed)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_call(&T, "intent", body, 20000, &r), 0);
	ck_assert_msg(r.status == want_status, "status %ld, want %ld: %s", r.status, want_status,
		      r.body);
	if (elapsed)
		*elapsed = r.elapsed_ms;
	o = itd_json(&r);
	ck_assert_ptr_nonnull(o);
	http_resp_free(&r);
	return o;
}

static void
assert_source(const cJSON *o, const char *source, const char *reason)
{
	ck_assert_str_eq(itd_str(o, "source"), source);
	if (reason)
		ck_assert_str_eq(itd_str(o, "reason"), reason);
}

/*
 * Count the answers rs[0..n-1] that came from the model (*llm) and those
 * that fell to the rules for reason (*fell); frees the answers.
 */
static void
tally(struct http_resp *rs, int n, const char *reason, int *llm, int *fell)
{
	cJSON *o;
	int i;

	for (i = 0; i < n; i++) {
		o = itd_json(&rs[i]);
		if (strcmp(itd_str(o, "source"), "llm") == 0)
			(*llm)++;
		else if (strcmp(itd_str(o, "reason"), reason) == 0)
			(*fell)++;
		cJSON_Delete(o);
		http_resp_free(&rs[i]);
	}
}

/* ---- intent fast path (CONFIG.md reference scenario 1) ---- */

#define FAST_BACKEND                                                                               \
	"\"timeouts\":{\"connect_ms\":1000,\"first_byte_ms\":6000,\"total_ms\":6000},"             \
	"\"breaker\":{\"mode\":\"consecutive\",\"failure_threshold\":3,\"open_ms\":1500,"          \
	"\"half_open_probes\":1}"
#define FAST_ROUTE                                                                                 \
	"\"budget_ms\":6000,\"retry\":{\"max_retries\":1,\"backoff\":\"none\",\"retry_on\":"       \
	"[\"connect_error\",\"reset\",\"http_5xx\",\"http_429\",\"first_byte_timeout\",\"total_"   \
	"timeout\"]}"

START_TEST(fast_path_normal_answer)
{
	double el;
	cJSON *o;

	start(FAST_BACKEND, FAST_ROUTE);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":1500}"), 0);
	o = call("{\"input\":\"I want my money back\"}", 200, &el);
	assert_source(o, "llm", NULL);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "reason")));
	ck_assert_str_eq(itd_str(o, "backend"), "primary");
	ck_assert_int_eq((int)itd_num(o, "attempts"), 1);
	ck_assert_msg(el >= 1490 && el < 1800, "elapsed %.0f", el);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "result"), "intent"), "refund");
	{
		/* A generated request id starts with the wall clock in ms
		 * (UUIDv7-shaped: ids sort by time, see call_gen_request_id). */
		unsigned long long hi = 0, lo = 0;
		struct timespec ts;
		long long ms;

		clock_gettime(CLOCK_REALTIME, &ts);
		ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		ck_assert_int_eq(sscanf(itd_str(o, "request_id"), "fb-%8llx-%4llx-", &hi, &lo), 2);
		ck_assert_msg(llabs((long long)((hi << 16) | lo) - ms) < 10000,
			      "request_id %s, now %lld", itd_str(o, "request_id"), ms);
	}
	cJSON_Delete(o);
}
END_TEST

/*
 * Request headers are kept in a table that grows 8, 16, 32, 64: the
 * header after forty others (X-Request-ID) is still found, and the
 * answer's headers carry it.
 */
START_TEST(many_request_headers)
{
	char names[41][48], url[160];
	const char *hdrs[42];
	struct http_resp r;
	cJSON *o;
	int i;

	start(FAST_BACKEND, FAST_ROUTE);
	for (i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "X-Pad-%02d: value-%02d", i, i);
		hdrs[i] = names[i];
	}
	snprintf(names[40], sizeof names[40], "X-Request-ID: many-hdrs-1");
	hdrs[40] = names[40];
	hdrs[41] = NULL;
	snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
	ck_assert_int_eq(
		http_do("POST", url, "{\"input\":\"I want my money back\"}", hdrs, 10000, &r), 0);
	ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
	ck_assert_ptr_nonnull(strcasestr(r.headers, "X-Request-ID: many-hdrs-1\r\n"));
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(o, "request_id"), "many-hdrs-1");
	cJSON_Delete(o);
	http_resp_free(&r);
}
END_TEST

START_TEST(fast_path_hang_degrades_at_budget_not_twice)
{
	double el;
	cJSON *o;

	start(FAST_BACKEND, FAST_ROUTE);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"hang\":true}"), 0);
	o = call("{\"input\":\"refund please\"}", 200, &el);
	/* One budget for everything: the attempt used all 6 s, the retry never ran. */
	assert_source(o, "rules", "first_byte_timeout");
	ck_assert_msg(el >= 5985 && el < 6100, "elapsed %.0f", el);
	ck_assert_int_eq((int)itd_num(o, "attempts"), 1);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 1);
	cJSON_Delete(o);
}
END_TEST

START_TEST(breaker_opens_after_three_then_probe_closes)
{
	double el;
	cJSON *o;
	int i;

	start(FAST_BACKEND, "\"budget_ms\":400,\"retry\":{\"max_retries\":0}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	for (i = 0; i < 3; i++) {
		o = call("{\"input\":\"refund\"}", 200, NULL);
		assert_source(o, "rules", "http_5xx");
		cJSON_Delete(o);
	}
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 3);
	o = call("{\"input\":\"refund\"}", 200, &el);
	assert_source(o, "rules", "breaker_open");
	ck_assert_int_eq((int)itd_num(o, "attempts"), 0);
	ck_assert_msg(el < 20, "breaker-open answer took %.1f ms", el);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 3);
	cJSON_Delete(o);
	/* After open_ms one probe goes through and, succeeding, closes it. */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{}"), 0);
	usleep(1600 * 1000);
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "llm", NULL);
	cJSON_Delete(o);
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "llm", NULL);
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 5);
	ASSERT_COUNT("events WHERE kind='breaker' AND detail LIKE 'closed -> open%'", 1);
	ASSERT_COUNT("events WHERE kind='breaker' AND detail LIKE 'open -> half_open%'", 1);
	ASSERT_COUNT("events WHERE kind='breaker' AND detail LIKE 'half_open -> closed%'", 1);
}
END_TEST

/* ---- retry classes ---- */

struct retry_case {
	const char *behaviour;
	int want_requests;
	const char *reason;
};

static const struct retry_case retry_cases[] = {
	{"{\"status\":500}", 2, "http_5xx"},
	{"{\"status\":503}", 2, "http_5xx"},
	{"{\"status\":429}", 2, "http_429"},
	{"{\"status\":400}", 1, "http_4xx"},
	{"{\"status\":401}", 1, "http_4xx"},
	{"{\"reset\":true}", 2, "reset"},
	{"{\"preset\":\"wrong_enum\"}", 1, "validation_schema"},
	{"{\"preset\":\"empty\"}", 1, "validation_format"},
	{"{\"preset\":\"truncated\"}", 1, "validation_format"},
	{"{\"body\":\"not json at all\"}", 1, "invalid_response"},
	{"{\"content_type\":\"text/html\"}", 1, "invalid_response"},
};

START_TEST(retry_class_table)
{
	const struct retry_case *rc = &retry_cases[_i];
	char body[160];
	cJSON *o;

	start("\"breaker\":{\"failure_threshold\":100}",
	      "\"budget_ms\":3000,\"retry\":{\"max_retries\":1,\"backoff\":\"none\"}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", rc->behaviour), 0);
	snprintf(body, sizeof body, "{\"input\":\"refund\",\"request_id\":\"rc-%d\"}", _i);
	o = call(body, 200, NULL);
	assert_source(o, "rules", rc->reason);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), rc->want_requests);
	ck_assert_int_eq((int)itd_num(o, "attempts"), rc->want_requests);
	cJSON_Delete(o);
	/* One attempts row per request the upstream saw. */
	ASSERT_COUNT("calls WHERE request_id LIKE 'rc-%' AND source='rules'", 1);
	ASSERT_COUNT("attempts", rc->want_requests);
}
END_TEST

START_TEST(connect_refused_is_retried_and_logged)
{
	cJSON *o;
	char *cfg;
	int r;

	cfg = strdup(HEAD "\"backends\":[{\"name\":\"dead\",\"url\":\"http://127.0.0.1:9/v1/chat/"
			  "completions\","
			  "\"model\":\"m\",\"breaker\":{\"failure_threshold\":100}}],"
			  "\"routes\":[{\"name\":\"intent\",\"targets\":[{\"backend\":\"dead\","
			  "\"weight\":1}],"
			  "\"retry\":{\"max_retries\":2}," SCHEMA "," RULES "}]}");
	r = itd_start(&T, cfg);
	free(cfg);
	ck_assert_int_eq(r, 0);
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "rules", "connect_error");
	ck_assert_int_eq((int)itd_num(o, "attempts"), 3);
	cJSON_Delete(o);
	ASSERT_COUNT("attempts WHERE outcome='connect_error'", 3);
	ASSERT_COUNT("degradations WHERE from_step='primary' AND to_step='rules' "
		     "AND reason='connect_error'",
		     1);
}
END_TEST

static double
arrival(const cJSON *stats, int i)
{
	const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(stats, "backends"), "primary");

	return cJSON_GetArrayItem(cJSON_GetObjectItem(b, "arrivals_ms"), i)->valuedouble;
}

START_TEST(exponential_backoff_gaps_at_the_mock)
{
	cJSON *o, *st;
	double g1, g2;

	start("\"breaker\":{\"failure_threshold\":100}",
	      "\"budget_ms\":5000,\"retry\":{\"max_retries\":2,\"backoff\":\"exponential\","
	      "\"base_ms\":200,\"multiplier\":2.0,\"max_ms\":8000,\"jitter\":0}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":502}"), 0);
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "rules", "http_5xx");
	ck_assert_int_eq((int)itd_num(o, "attempts"), 3);
	cJSON_Delete(o);
	st = mock_stats(&T.mock);
	g1 = arrival(st, 1) - arrival(st, 0);
	g2 = arrival(st, 2) - arrival(st, 1);
	ck_assert_msg(g1 >= 195 && g1 < 290, "first gap %.0f", g1);
	ck_assert_msg(g2 >= 395 && g2 < 490, "second gap %.0f", g2);
	cJSON_Delete(st);
}
END_TEST

START_TEST(retry_after_that_fits_is_honoured)
{
	cJSON *o, *st;
	double gap;

	start("\"breaker\":{\"failure_threshold\":100}",
	      "\"budget_ms\":4000,\"retry\":{\"max_retries\":1,\"backoff\":\"none\"}");
	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"script\":[{\"status\":429,\"retry_after\":\"1\"}]}"),
			 0);
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "llm", NULL);
	ck_assert_int_eq((int)itd_num(o, "attempts"), 2);
	cJSON_Delete(o);
	st = mock_stats(&T.mock);
	gap = arrival(st, 1) - arrival(st, 0);
	ck_assert_msg(gap >= 990 && gap < 1200, "gap %.0f", gap);
	cJSON_Delete(st);
}
END_TEST

START_TEST(retry_after_that_does_not_fit_falls_at_once)
{
	double el;
	cJSON *o;

	start("\"breaker\":{\"failure_threshold\":100}",
	      "\"budget_ms\":3000,\"retry\":{\"max_retries\":3,\"backoff\":\"none\"}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":429,\"retry_after\":\"10\"}"),
			 0);
	o = call("{\"input\":\"refund\"}", 200, &el);
	assert_source(o, "rules", "http_429");
	ck_assert_int_eq((int)itd_num(o, "attempts"), 1);
	ck_assert_msg(el < 300, "elapsed %.0f", el);
	cJSON_Delete(o);
	ASSERT_COUNT("attempts WHERE retry_after_ms = 10000", 1);
}
END_TEST

/* ---- breaker modes ---- */

START_TEST(breaker_count_mode_exact_threshold)
{
	cJSON *o;
	int i;

	/* window 10, min_calls 6, failure_rate 0.5: 3 ok + 2 fail (5 calls) stays
	 * closed (min_calls), the 6th call failing makes 3/6 = 0.5 >= 0.5. */
	start("\"breaker\":{\"mode\":\"count\",\"window\":10,\"min_calls\":6,\"failure_rate\":0.5,"
	      "\"open_ms\":60000}",
	      "\"budget_ms\":2000,\"retry\":{\"max_retries\":0}");
	for (i = 0; i < 3; i++) {
		o = call("{\"input\":\"refund\"}", 200, NULL);
		assert_source(o, "llm", NULL);
		cJSON_Delete(o);
	}
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	for (i = 0; i < 3; i++) {
		o = call("{\"input\":\"refund\"}", 200, NULL);
		assert_source(o, "rules", "http_5xx");
		cJSON_Delete(o);
	}
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "rules", "breaker_open");
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 6);
}
END_TEST

START_TEST(breaker_time_mode_slow_calls)
{
	cJSON *o;
	int i;

	/* time window 10 s, min 4, slow > 100 ms at rate 1.0 (failure_rate 1.0 never reached). */
	start("\"breaker\":{\"mode\":\"time\",\"window_s\":10,\"min_calls\":4,\"failure_rate\":1.0,"
	      "\"slow_call_ms\":100,\"slow_call_rate\":1.0,\"open_ms\":60000}",
	      "\"budget_ms\":2000,\"retry\":{\"max_retries\":0}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":150}"), 0);
	for (i = 0; i < 4; i++) {
		o = call("{\"input\":\"refund\"}", 200, NULL);
		assert_source(o, "llm", NULL); /* slow but good answers */
		cJSON_Delete(o);
	}
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "rules", "breaker_open");
	cJSON_Delete(o);
}
END_TEST

START_TEST(half_open_admits_only_the_probes)
{
	struct http_resp rs[4];
	cJSON *o;
	int llm = 0, open = 0;

	start("\"breaker\":{\"failure_threshold\":1,\"open_ms\":500,\"half_open_probes\":1}",
	      "\"budget_ms\":3000,\"retry\":{\"max_retries\":0}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	o = call("{\"input\":\"refund\"}", 200, NULL);
	cJSON_Delete(o);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":400}"), 0);
	usleep(600 * 1000);
	ck_assert_int_eq(itd_call_many(&T, "intent", "{\"input\":\"refund\"}", 4, 5000, rs), 0);
	tally(rs, 4, "breaker_open", &llm, &open);
	ck_assert_int_eq(llm, 1);
	ck_assert_int_eq(open, 3);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
}
END_TEST

/* ---- bulkheads and admission ---- */

START_TEST(bulkhead_caps_concurrency_at_the_mock)
{
	enum { N = 12 };
	struct http_resp rs[N];
	cJSON *st;
	int llm = 0, full = 0;

	start("\"max_concurrent\":3", "\"budget_ms\":3000,\"retry\":{\"max_retries\":0}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":300}"), 0);
	ck_assert_int_eq(itd_call_many(&T, "intent", "{\"input\":\"refund\"}", N, 5000, rs), 0);
	tally(rs, N, "bulkhead_full", &llm, &full);
	st = mock_stats(&T.mock);
	ck_assert_int_le(
		(int)cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), "primary"),
			"max_inflight")
			->valuedouble,
		3);
	cJSON_Delete(st);
	ck_assert_int_eq(llm + full, N);
	ck_assert_int_ge(llm, 3);
	ck_assert_int_ge(full, 1);
}
END_TEST

START_TEST(bulkhead_queue_waits_for_a_slot)
{
	enum { N = 4 };
	struct http_resp rs[N];
	cJSON *o, *st;
	int i, llm = 0;

	start("\"max_concurrent\":1,\"queue_ms\":2000",
	      "\"budget_ms\":4000,\"retry\":{\"max_retries\":0}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":200}"), 0);
	ck_assert_int_eq(itd_call_many(&T, "intent", "{\"input\":\"refund\"}", N, 5000, rs), 0);
	for (i = 0; i < N; i++) {
		o = itd_json(&rs[i]);
		llm += strcmp(itd_str(o, "source"), "llm") == 0;
		cJSON_Delete(o);
		http_resp_free(&rs[i]);
	}
	ck_assert_int_eq(llm, N);
	st = mock_stats(&T.mock);
	ck_assert_int_eq(
		(int)cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), "primary"),
			"max_inflight")
			->valuedouble,
		1);
	cJSON_Delete(st);
}
END_TEST

START_TEST(max_inflight_answers_429)
{
	enum { N = 6 };
	struct http_resp rs[N];
	char *ra;
	int i, n429 = 0, n200 = 0;

	{
		char *cfg = config_one("", "\"budget_ms\":1000,\"retry\":{\"max_retries\":0}");
		char *cfg2 = NULL;

		/* config_one's text starts with '{': put max_inflight first. */
		ck_assert_int_ge(asprintf(&cfg2, "{\"max_inflight\":2,%s", cfg + 1), 0);
		ck_assert_int_eq(itd_start(&T, cfg2), 0);
		free(cfg);
		free(cfg2);
	}
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"hang\":true}"), 0);
	ck_assert_int_eq(itd_call_many(&T, "intent", "{\"input\":\"refund\"}", N, 5000, rs), 0);
	for (i = 0; i < N; i++) {
		if (rs[i].status == 429) {
			n429++;
			ra = http_resp_header(&rs[i], "Retry-After");
			ck_assert_ptr_nonnull(ra);
			ck_assert_str_eq(ra, "1");
			free(ra);
			ck_assert_msg(rs[i].elapsed_ms < 200, "429 took %.0f ms", rs[i].elapsed_ms);
		} else if (rs[i].status == 200) {
			n200++;
		}
		http_resp_free(&rs[i]);
	}
	ck_assert_int_eq(n200, 2);
	ck_assert_int_eq(n429, N - 2);
}
END_TEST

/* ---- idempotency ---- */

START_TEST(idempotent_replay_and_single_flight)
{
	struct http_resp rs[2];
	cJSON *a, *b;
	int replayed = 0, i;

	start("", "\"budget_ms\":3000");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":300}"), 0);
	a = call("{\"input\":\"refund\",\"request_id\":\"same-1\"}", 200, NULL);
	b = call("{\"input\":\"refund\",\"request_id\":\"same-1\"}", 200, NULL);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(a, "replayed")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(b, "replayed")));
	ck_assert_str_eq(itd_str(b, "source"), "llm");
	ck_assert_str_eq(itd_str(b, "request_id"), "same-1");
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 1);
	cJSON_Delete(a);
	cJSON_Delete(b);
	/* Two at once with the same id: one upstream call, both answered. */
	ck_assert_int_eq(itd_call_many(&T, "intent",
				       "{\"input\":\"refund\",\"request_id\":\"same-2\"}", 2, 5000,
				       rs),
			 0);
	for (i = 0; i < 2; i++) {
		a = itd_json(&rs[i]);
		ck_assert_int_eq(rs[i].status, 200);
		ck_assert_str_eq(itd_str(a, "source"), "llm");
		replayed += cJSON_IsTrue(cJSON_GetObjectItem(a, "replayed"));
		cJSON_Delete(a);
		http_resp_free(&rs[i]);
	}
	ck_assert_int_eq(replayed, 1);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
	itd_settle();
	/* A replay adds no calls row; it is counted in a metric. */
	ck_assert_int_eq(itd_count(&T, "calls"), 2);
	{
		struct http_resp m;

		ck_assert_int_eq(itd_req(&T, "GET", "/metrics", NULL, "view-token", 5000, &m), 0);
		ck_assert_int_eq(m.status, 200);
		ck_assert_ptr_nonnull(strstr(m.body, "\nfusebox_replays_total 2\n"));
		http_resp_free(&m);
	}
	/* GET /v1/requests/{id} knows sync calls. */
	{
		struct http_resp r;
		cJSON *o;

		ck_assert_int_eq(itd_req(&T, "GET", "/v1/requests/same-1", NULL, NULL, 2000, &r),
				 0);
		ck_assert_int_eq(r.status, 200);
		o = itd_json(&r);
		ck_assert_str_eq(itd_str(o, "status"), "done");
		ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "response"), "source"), "llm");
		cJSON_Delete(o);
		http_resp_free(&r);
		ck_assert_int_eq(itd_req(&T, "GET", "/v1/requests/nope", NULL, NULL, 2000, &r), 0);
		ck_assert_int_eq(r.status, 404);
		http_resp_free(&r);
	}
}
END_TEST

/* ---- request headers and upstream request ---- */

START_TEST(upstream_request_carries_ids_and_budget)
{
	cJSON *st, *h;
	const char *maxwait;
	struct http_resp r;
	const char *hdrs[] = {"X-Fusebox-Budget-Ms: 2500", "X-Request-ID: hdr-7", NULL};
	char url[128], *v;

	setenv("FB_TEST_UPSTREAM_KEY", "sk-test-4711", 1);
	start("\"headers\":{\"X-Extra\":\"yes\"},\"api_key_env\":\"FB_TEST_UPSTREAM_KEY\"",
	      "\"budget_ms\":6000");
	snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
	ck_assert_int_eq(http_do("POST", url, "{\"input\":\"refund\"}", hdrs, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	v = http_resp_header(&r, "X-Fusebox-Source");
	ck_assert_str_eq(v, "llm");
	free(v);
	v = http_resp_header(&r, "X-Request-ID");
	ck_assert_str_eq(v, "hdr-7");
	free(v);
	v = http_resp_header(&r, "X-Fusebox-Level");
	ck_assert_str_eq(v, "0");
	free(v);
	v = http_resp_header(&r, "X-Fusebox-Duration-Ms");
	ck_assert_ptr_nonnull(v);
	free(v);
	http_resp_free(&r);
	st = mock_stats(&T.mock);
	h = cJSON_GetObjectItem(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), "primary"),
			"last_request"),
		"headers");
	ck_assert_str_eq(itd_str(h, "x-request-id"), "hdr-7");
	ck_assert_str_eq(itd_str(h, "x-fusebox-attempt"), "1");
	ck_assert_str_eq(itd_str(h, "x-extra"), "yes");
	ck_assert_str_eq(itd_str(h, "content-type"), "application/json");
	ck_assert_str_eq(itd_str(h, "authorization"), "Bearer sk-test-4711");
	maxwait = itd_str(h, "x-max-wait");
	ck_assert_msg(strtol(maxwait, NULL, 10) > 2300 && strtol(maxwait, NULL, 10) <= 2500,
		      "X-Max-Wait %s", maxwait);
	cJSON_Delete(st);
	ASSERT_COUNT("calls WHERE request_id='hdr-7' AND budget_ms=2500", 1);
	unsetenv("FB_TEST_UPSTREAM_KEY");
}
END_TEST

START_TEST(bad_requests_name_the_field)
{
	static const struct {
		const char *body;
		const char *field;
	} cases[] = {
		{"not json", "body"},
		{"{}", "input"},
		{"{\"input\":5}", "input"},
		{"{\"input\":\"x\",\"budget_ms\":-1}", "budget_ms"},
		{"{\"input\":\"x\",\"budget_ms\":\"5\"}", "budget_ms"},
		{"{\"input\":\"x\",\"allow_llm\":\"no\"}", "allow_llm"},
		{"{\"input\":\"x\",\"request_id\":7}", "request_id"},
		{"{\"input\":\"x\",\"mode\":\"later\"}", "mode"},
		{"{\"messages\":[{\"role\":1}]}", "messages[0]"},
		{"{\"input\":\"x\",\"callback_url\":\"ftp://x\"}", "callback_url"},
	};
	struct http_resp r;
	size_t i;

	start("", "");
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ck_assert_int_eq(itd_call(&T, "intent", cases[i].body, 2000, &r), 0);
		ck_assert_int_eq(r.status, 400);
		ck_assert_msg(strstr(r.body, cases[i].field) != NULL, "%s: %s", cases[i].body,
			      r.body);
		http_resp_free(&r);
	}
	ck_assert_int_eq(itd_call(&T, "nope", "{\"input\":\"x\"}", 2000, &r), 0);
	ck_assert_int_eq(r.status, 404);
	ck_assert_ptr_nonnull(strstr(r.body, "unknown_route"));
	http_resp_free(&r);
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/routes/intent/call", NULL, NULL, 2000, &r), 0);
	ck_assert_int_eq(r.status, 405);
	http_resp_free(&r);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
}
END_TEST

START_TEST(allow_llm_false_starts_at_rules)
{
	cJSON *o;

	start("", "");
	o = call("{\"input\":\"refund\",\"allow_llm\":false}", 200, NULL);
	assert_source(o, "rules", "llm_disallowed");
	ck_assert_int_eq((int)itd_num(o, "attempts"), 0);
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
}
END_TEST

START_TEST(silent_resend_on_dead_keepalive_is_logged)
{
	cJSON *o;

	start("", "\"retry\":{\"max_retries\":0}");
	o = call("{\"input\":\"refund\"}", 200, NULL);
	cJSON_Delete(o);
	/* The next request on the kept-alive connection is dropped unanswered:
	 * libcurl re-sends it on a new connection by itself. */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"script\":[{\"reset\":true}]}"), 0);
	o = call("{\"input\":\"refund\"}", 200, NULL);
	assert_source(o, "llm", NULL);
	ck_assert_int_eq((int)itd_num(o, "attempts"), 2);
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 3);
	ASSERT_COUNT("attempts", 3);
	ASSERT_COUNT("attempts WHERE call_id = (SELECT max(call_id) FROM attempts) "
		     "AND outcome = 'reset' AND attempt_no = 1",
		     1);
}
END_TEST

static Suite *
call_suite(void)
{
	Suite *s = suite_create("call");
	TCase *tc;

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)

	ADD(fast_path_normal_answer);
	ADD(many_request_headers);
	ADD(fast_path_hang_degrades_at_budget_not_twice);
	ADD(breaker_opens_after_three_then_probe_closes);
	tc = tcase_create("retry_class_table");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, retry_class_table, 0,
			    (int)(sizeof retry_cases / sizeof retry_cases[0]));
	suite_add_tcase(s, tc);
	ADD(connect_refused_is_retried_and_logged);
	ADD(exponential_backoff_gaps_at_the_mock);
	ADD(retry_after_that_fits_is_honoured);
	ADD(retry_after_that_does_not_fit_falls_at_once);
	ADD(breaker_count_mode_exact_threshold);
	ADD(breaker_time_mode_slow_calls);
	ADD(half_open_admits_only_the_probes);
	ADD(bulkhead_caps_concurrency_at_the_mock);
	ADD(bulkhead_queue_waits_for_a_slot);
	ADD(max_inflight_answers_429);
	ADD(idempotent_replay_and_single_flight);
	ADD(upstream_request_carries_ids_and_budget);
	ADD(bad_requests_name_the_field);
	ADD(allow_llm_false_starts_at_rules);
	ADD(silent_resend_on_dead_keepalive_is_logged);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(call_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
