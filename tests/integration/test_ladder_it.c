/*
 * Integration: every rung of the ladder reached for the right reason,
 * auto escalation and recovery, and the durable async queue (including a
 * kill -9 between the 202 and the result).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itd.h"

#define HEAD                                                                                       \
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","            \
	"\"callbacks\":{\"allow\":[\"127.0.0.1\"]},"
#define BACKENDS                                                                                   \
	"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/completions\","    \
	"\"model\":\"big\",\"breaker\":{\"failure_threshold\":1000}},"                             \
	"{\"name\":\"backup\",\"url\":\"@MOCK@/b/backup/v1/chat/"                                  \
	"completions\",\"model\":\"small\","                                                       \
	"\"breaker\":{\"failure_threshold\":1000}}],"
#define OUTPUT                                                                                     \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\"],\"properties\":"    \
	"{\"intent\":{\"type\":\"string\",\"enum\":[\"refund\",\"complaint\",\"consult\","         \
	"\"other\"]}}},"                                                                           \
	"\"review_below\":0.0}"

static struct itd T;

/*
 * Rows are committed in the background (batched every <= 50 ms): wait for
 * count(*) FROM sql_tail to be want (up to 5 s, where itd_settle slept
 * 150 ms) and assert it.
 */
#define ASSERT_COUNT(sql_tail, want)                                                               \
	ck_assert_int_eq(itd_count_wait(&T, (sql_tail), (want), 5000), (want))

static void
teardown(void)
{
	itd_stop(&T);
}

static void
start(const char *route_extra)
{
	char *cfg = NULL;

	ck_assert_int_ge(asprintf(&cfg,
				  HEAD BACKENDS
				  "\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,"
				  "\"targets\":[{\"backend\":\"primary\"}],"
				  "\"retry\":{\"max_retries\":0}," OUTPUT "%s%s}]}",
				  route_extra[0] ? "," : "", route_extra),
			 0);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);
}

static cJSON *
call(const char *body, long want)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_call(&T, "intent", body, 10000, &r), 0);
	ck_assert_msg(r.status == want, "status %ld want %ld: %s", r.status, want, r.body);
	o = itd_json(&r);
	http_resp_free(&r);
	ck_assert_ptr_nonnull(o);
	return o;
}

#define BACKUP "\"backup\":{\"targets\":[{\"backend\":\"backup\"}],\"temperature\":0.1}"
#define RULES_NO_DEFAULT                                                                           \
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"},"          \
	"\"confidence\":0.6}]}"
#define CACHE "\"cache\":{\"enabled\":true,\"ttl_s\":3600}"
#define PRESET                                                                                     \
	"\"preset\":{\"result\":{\"intent\":\"other\"},\"text\":\"Sorry, try again shortly.\"}"

START_TEST(primary_down_backup_answers)
{
	cJSON *o, *st, *body;

	start(BACKUP "," RULES_NO_DEFAULT);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "backup");
	ck_assert_str_eq(itd_str(o, "backend"), "backup");
	ck_assert_str_eq(itd_str(o, "reason"), "http_5xx");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "degraded")));
	cJSON_Delete(o);
	/* the backup step used its own temperature */
	st = mock_stats(&T.mock);
	body = cJSON_GetObjectItem(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), "backup"),
			"last_request"),
		"body");
	ck_assert_double_eq_tol(itd_num(body, "temperature"), 0.1, 1e-9);
	ck_assert_str_eq(itd_str(body, "model"), "small");
	cJSON_Delete(st);
	ASSERT_COUNT("degradations WHERE from_step='primary' AND to_step='backup' "
		     "AND reason='http_5xx'",
		     1);
}
END_TEST

START_TEST(both_down_rules_answer)
{
	cJSON *o;

	start(BACKUP "," RULES_NO_DEFAULT);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":503}"), 0);
	ck_assert_int_eq(mock_set(&T.mock, "backup", "{\"preset\":\"wrong_enum\"}"), 0);
	o = call("{\"input\":\"I want a REFUND\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "rules");
	ck_assert_str_eq(itd_str(o, "reason"), "http_5xx");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "result"), "intent"), "refund");
	ck_assert_double_eq_tol(itd_num(o, "confidence"), 0.6, 1e-9);
	cJSON_Delete(o);
	ASSERT_COUNT("degradations WHERE to_step='rules' AND reason='validation_schema'", 1);
	ASSERT_COUNT("validation_failures WHERE stage='schema' AND rule='enum'", 1);
}
END_TEST

START_TEST(no_rule_then_cache_then_preset)
{
	cJSON *o;

	start(RULES_NO_DEFAULT "," CACHE "," PRESET);
	o = call("{\"input\":\"Where is my parcel?\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	/* same input once normalised (case, white space): the cache answers */
	o = call("{\"input\":\"  where IS my   parcel?\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "cache");
	ck_assert_str_eq(itd_str(o, "reason"), "http_5xx");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "result"), "intent"), "refund");
	cJSON_Delete(o);
	/* an input nobody knows: the preset */
	o = call("{\"input\":\"something new\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "preset");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "result"), "intent"), "other");
	cJSON_Delete(o);
	ASSERT_COUNT("degradations WHERE from_step='cache' AND to_step='preset' "
		     "AND reason='cache_miss'",
		     1);
	ASSERT_COUNT("degradations WHERE from_step='rules' AND to_step='cache' "
		     "AND reason='rules_no_match'",
		     2);
	/* the cache survives a restart (SQLite behind the memory front) */
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	o = call("{\"input\":\"where is my parcel?\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "cache");
	cJSON_Delete(o);
}
END_TEST

START_TEST(exhausted_error_is_503)
{
	struct http_resp r;
	cJSON *o;

	start(RULES_NO_DEFAULT);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	ck_assert_int_eq(itd_call(&T, "intent", "{\"input\":\"unknown thing\"}", 5000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "code"), "exhausted");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "reason"), "http_5xx");
	cJSON_Delete(o);
	http_resp_free(&r);
}
END_TEST

START_TEST(exhausted_manual_enqueues_review)
{
	cJSON *o;

	start(RULES_NO_DEFAULT ",\"on_exhausted\":\"manual\"");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"hang\":true}"), 0);
	o = call("{\"input\":\"unknown thing\",\"budget_ms\":300,\"request_id\":\"man-1\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "manual");
	ck_assert_str_eq(itd_str(o, "review"), "pending");
	ck_assert_str_eq(itd_str(o, "reason"), "first_byte_timeout");
	cJSON_Delete(o);
	ASSERT_COUNT("reviews WHERE request_id='man-1' AND reason='manual' AND "
		     "state='pending' AND input='unknown thing'",
		     1);
}
END_TEST

/* The level of route intent in GET /v1/state. */
static int
route_level(void)
{
	struct http_resp r;
	cJSON *st;
	int level;

	ck_assert_int_eq(itd_req(&T, "GET", "/v1/state", NULL, "view-token", 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	st = itd_json(&r);
	http_resp_free(&r);
	level = (int)itd_num(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "routes"), 0), "level");
	cJSON_Delete(st);
	return level;
}

START_TEST(escalation_and_recovery)
{
	int64_t end;
	cJSON *o;
	int i;

	start(BACKUP
	      "," RULES_NO_DEFAULT "," PRESET ",\"escalation\":{\"l1_after\":2,\"l2_after\":2,"
	      "\"window_s\":60,\"error_rate\":1.0,\"min_calls\":1000,\"recover_after_s\":2}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"preset\":\"wrong_enum\"}"), 0);
	ck_assert_int_eq(mock_set(&T.mock, "backup", "{\"status\":500}"), 0);
	for (i = 0; i < 2; i++) {
		o = call("{\"input\":\"refund\"}", 200);
		ck_assert_int_eq((int)itd_num(o, "level"), 0);
		cJSON_Delete(o);
	}
	/* two validation failures at L0: auto level 1, calls start at the backup */
	for (i = 0; i < 2; i++) {
		o = call("{\"input\":\"refund\"}", 200);
		ck_assert_int_eq((int)itd_num(o, "level"), 1);
		ck_assert_str_eq(itd_str(o, "reason"), "auto_level");
		cJSON_Delete(o);
	}
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
	/* two failures at L1: level 2, rules only, no model touched */
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_int_eq((int)itd_num(o, "level"), 2);
	ck_assert_str_eq(itd_str(o, "source"), "rules");
	ck_assert_int_eq((int)itd_num(o, "attempts"), 0);
	cJSON_Delete(o);
	/* the two L0 calls fell through the backup too: 2 + 2 */
	ck_assert_int_eq(mock_requests(&T.mock, "backup"), 4);
	/* recovery: 2 s at level 2 → 1; the healthy backup keeps it there; 2 s more → 0 */
	ck_assert_int_eq(mock_set(&T.mock, "backup", "{}"), 0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{}"), 0);
	usleep(3100 * 1000);
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_int_eq((int)itd_num(o, "level"), 1);
	ck_assert_str_eq(itd_str(o, "source"), "backup");
	cJSON_Delete(o);
	/* the step back to 0 is the engine tick's: watch for it, until the
	 * moment this call was made after a fixed 2.1 s sleep */
	end = harness_now_ms() + 2100;
	while (route_level() != 0 && harness_now_ms() < end)
		usleep(20 * 1000);
	o = call("{\"input\":\"refund\"}", 200);
	ck_assert_int_eq((int)itd_num(o, "level"), 0);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
	ASSERT_COUNT("events WHERE kind='level' AND detail LIKE 'auto 1 -> 0%'", 1);
	ASSERT_COUNT("events WHERE kind='level' AND detail LIKE 'auto 0 -> 1%'", 1);
	ASSERT_COUNT("events WHERE kind='level' AND detail LIKE 'auto 1 -> 2%'", 1);
	ASSERT_COUNT("events WHERE kind='level' AND detail LIKE 'auto 2 -> 1%'", 1);
}
END_TEST

/* Poll GET /v1/requests/{id} until its status is want (or time runs out). */
static cJSON *
wait_status(const char *id, const char *want, int timeout_ms)
{
	char path[128];
	int64_t end = harness_now_ms() + timeout_ms;

	snprintf(path, sizeof path, "/v1/requests/%s", id);
	while (harness_now_ms() < end) {
		struct http_resp r;
		cJSON *o;

		if (itd_req(&T, "GET", path, NULL, NULL, 2000, &r) == 0 && r.status == 200) {
			o = itd_json(&r);
			http_resp_free(&r);
			if (o && strcmp(itd_str(o, "status"), want) == 0)
				return o;
			cJSON_Delete(o);
		} else {
			http_resp_free(&r);
		}
		usleep(50 * 1000);
	}
	return NULL;
}

START_TEST(async_job_runs_and_calls_back)
{
	char body[512], *cb;
	cJSON *o, *st, *last;

	start(RULES_NO_DEFAULT);
	cb = mock_url(&T.mock, "/b/callback/v1/chat/completions");
	snprintf(body, sizeof body,
		 "{\"input\":\"refund\",\"mode\":\"async\",\"request_id\":\"job-1\",\"callback_"
		 "url\":\"%s\"}",
		 cb);
	free(cb);
	o = call(body, 202);
	ck_assert_str_eq(itd_str(o, "status"), "queued");
	ck_assert_str_eq(itd_str(o, "request_id"), "job-1");
	cJSON_Delete(o);
	/* durable before the 202 was sent */
	ck_assert_int_eq(itd_count(&T, "jobs WHERE request_id='job-1'"), 1);
	o = wait_status("job-1", "done", 5000);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "response"), "source"), "llm");
	cJSON_Delete(o);
	/* the callback arrived (the mock records any POST under /b/<name>/...) */
	usleep(300 * 1000);
	st = mock_stats(&T.mock);
	last = cJSON_GetObjectItem(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), "callback"),
			"last_request"),
		"body");
	ck_assert_str_eq(itd_str(last, "event"), "result");
	ck_assert_str_eq(itd_str(last, "request_id"), "job-1");
	cJSON_Delete(st);
	/* the same request id again: still one job */
	o = call("{\"input\":\"refund\",\"mode\":\"async\",\"request_id\":\"job-1\"}", 202);
	ck_assert_str_eq(itd_str(o, "status"), "done");
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "jobs WHERE request_id='job-1'"), 1);
}
END_TEST

START_TEST(async_job_survives_kill_9)
{
	cJSON *o, *st, *h;

	start(RULES_NO_DEFAULT);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":1500}"), 0);
	o = call("{\"input\":\"refund\",\"mode\":\"async\",\"request_id\":\"job-k9\"}", 202);
	cJSON_Delete(o);
	usleep(400 * 1000); /* the job is running, its upstream call in flight */
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 1);
	ck_assert_int_eq(itd_kill_daemon(&T, SIGKILL), 128 + SIGKILL);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{}"), 0);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	o = wait_status("job-k9", "done", 5000);
	ck_assert_ptr_nonnull(o);
	cJSON_Delete(o);
	/* run again upstream with the same X-Request-ID, recorded once */
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
	st = mock_stats(&T.mock);
	h = cJSON_GetObjectItem(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), "primary"),
			"last_request"),
		"headers");
	ck_assert_str_eq(itd_str(h, "x-request-id"), "job-k9");
	cJSON_Delete(st);
	ASSERT_COUNT("calls WHERE request_id='job-k9'", 1);
	ASSERT_COUNT("jobs WHERE request_id='job-k9' AND state='done' AND tries=2", 1);
	{
		char *ic = db_scalar_text(T.db, "PRAGMA integrity_check");

		ck_assert_ptr_nonnull(ic);
		ck_assert_str_eq(ic, "ok");
		free(ic);
	}
}
END_TEST

/* /v1/slo window 5m of route intent, field name (a number; -1 when null/absent). */
static double
slo_5m(const char *field)
{
	struct http_resp r;
	cJSON *o, *w;
	double v;

	ck_assert_int_eq(itd_req(&T, "GET", "/v1/slo?route=intent", NULL, "view-token", 5000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	o = itd_json(&r);
	http_resp_free(&r);
	w = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0),
				    "windows"),
		"5m");
	v = itd_num(w, field);
	cJSON_Delete(o);
	return v;
}

START_TEST(cross_check_mismatch_goes_to_review)
{
	cJSON *o;
	int i;

	start(RULES_NO_DEFAULT ",\"cross_check\":{\"backend\":\"backup\",\"sample_rate\":1.0,"
			       "\"compare\":[\"intent\"]}");
	ck_assert_int_eq(
		mock_set(&T.mock, "backup", "{\"content\":\"{\\\"intent\\\":\\\"complaint\\\"}\"}"),
		0);
	o = call("{\"input\":\"money back\",\"request_id\":\"xc-1\"}", 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm"); /* the caller never waits for it */
	cJSON_Delete(o);
	for (i = 0; i < 40 && itd_count(&T, "reviews WHERE reason='cross_check_mismatch'") < 1; i++)
		usleep(50 * 1000);
	ck_assert_int_eq(
		itd_count(&T, "reviews WHERE reason='cross_check_mismatch' AND request_id='xc-1' "
			      "AND json_extract(result,'$.intent')='refund' AND "
			      "json_extract(alt_result,'$.intent')='complaint'"),
		1);
	ck_assert_int_eq(mock_requests(&T.mock, "backup"), 1);
	/* the cross-check asked with its own request id; no calls row of its own */
	ck_assert_int_eq(itd_count(&T, "calls"), 1);
	ck_assert_int_eq(
		itd_count(&T, "attempts WHERE backend='backup' AND request_id='xc-1~xcheck'"), 1);
	/* an agreeing backup: no new item, agreement 1 of 2 */
	ck_assert_int_eq(mock_set(&T.mock, "backup", "{}"), 0);
	o = call("{\"input\":\"money back\"}", 200);
	cJSON_Delete(o);
	usleep(300 * 1000);
	ck_assert_int_eq(itd_count(&T, "reviews WHERE reason='cross_check_mismatch'"), 1);
	ck_assert_double_eq_tol(slo_5m("cross_check_agreement"), 0.5, 1e-9);
}
END_TEST

START_TEST(rules_shadow_measures_agreement)
{
	cJSON *o;

	start(RULES_NO_DEFAULT ",\"rules_shadow\":{\"sample_rate\":1.0}");
	/* the model says refund; the rules say refund for "refund" and nothing for "hello" */
	o = call("{\"input\":\"refund\"}", 200);
	cJSON_Delete(o);
	o = call("{\"input\":\"refund please\"}", 200);
	cJSON_Delete(o);
	o = call("{\"input\":\"hello\"}", 200);
	cJSON_Delete(o);
	ck_assert_double_eq_tol(slo_5m("shadow_agreement"), 2.0 / 3.0, 1e-9);
}
END_TEST

START_TEST(level_3_queues_and_drains_when_released)
{
	struct http_resp r;
	cJSON *o;

	start(RULES_NO_DEFAULT);
	ck_assert_int_eq(itd_req(&T, "PUT", "/v1/routes/intent/level",
				 "{\"level\":3,\"reason\":\"vendor incident\"}", "op-token", 5000,
				 &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	o = call("{\"input\":\"refund\",\"request_id\":\"l3-1\"}", 202);
	ck_assert_str_eq(itd_str(o, "status"), "queued");
	cJSON_Delete(o);
	usleep(400 * 1000);
	/* still queued while the route is at level 3; the model untouched */
	o = wait_status("l3-1", "queued", 1000);
	ck_assert_ptr_nonnull(o);
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	ck_assert_int_eq(
		itd_req(&T, "DELETE", "/v1/routes/intent/level", NULL, "op-token", 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	o = wait_status("l3-1", "done", 3000);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "response"), "source"), "llm");
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 1);
}
END_TEST

/*
 * An outage's burst of accepts: every 202 waits for its job's commit, but
 * the loop does not, so the accepts that arrive together share fsyncs
 * (one commit each before: the loop sat in every fsync). Duplicates sent
 * while their first copy is being committed wait for that commit and get
 * the same answer; one job each.
 */
START_TEST(level_3_accepts_share_commits)
{
	struct http_resp *rs = calloc(60, sizeof *rs);
	struct http_resp r;
	double promises, syncs;
	int i;

	start(RULES_NO_DEFAULT);
	ck_assert_int_eq(itd_req(&T, "PUT", "/v1/routes/intent/level",
				 "{\"level\":3,\"reason\":\"vendor incident\"}", "op-token", 5000,
				 &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	promises = itd_metric(&T, "fusebox_store_promises_total");
	syncs = itd_metric(&T, "fusebox_store_sync_commits_total");
	ck_assert(promises >= 0 && syncs >= 0);

	ck_assert_int_eq(itd_call_many(&T, "intent", "{\"input\":\"refund\"}", 60, 10000, rs), 0);
	for (i = 0; i < 60; i++) {
		cJSON *o = itd_json(&rs[i]);

		ck_assert_msg(rs[i].status == 202, "call %d: %ld %s", i, rs[i].status, rs[i].body);
		ck_assert_str_eq(itd_str(o, "status"), "queued");
		cJSON_Delete(o);
		http_resp_free(&rs[i]);
	}
	/* durable before each 202 */
	ck_assert_int_eq(itd_count(&T, "jobs WHERE state='queued'"), 60);
	ck_assert_double_eq(itd_metric(&T, "fusebox_store_promises_total") - promises, 60);
	syncs = itd_metric(&T, "fusebox_store_sync_commits_total") - syncs;
	ck_assert_msg(syncs >= 1 && syncs < 60, "%g fsyncs for 60 accepts", syncs);

	ck_assert_int_eq(itd_call_many(&T, "intent",
				       "{\"input\":\"refund\",\"request_id\":\"dup-1\"}", 30, 10000,
				       rs),
			 0);
	for (i = 0; i < 30; i++) {
		cJSON *o = itd_json(&rs[i]);

		ck_assert_msg(rs[i].status == 202, "dup %d: %ld %s", i, rs[i].status, rs[i].body);
		ck_assert_str_eq(itd_str(o, "status"), "queued");
		ck_assert_str_eq(itd_str(o, "request_id"), "dup-1");
		cJSON_Delete(o);
		http_resp_free(&rs[i]);
	}
	ck_assert_int_eq(itd_count(&T, "jobs WHERE request_id='dup-1'"), 1);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	free(rs);
}
END_TEST

/*
 * Memory holds a window of the queue (FUSEBOX_JOBS_IN_MEMORY, 10,000 by
 * default; 4 here): the rest wait in the table, are found by GET and by a
 * repeated accept, survive a kill -9 and run in the order they were
 * accepted once the route is released.
 */
START_TEST(level_3_queue_beyond_memory)
{
	struct http_resp r;
	char body[128];
	cJSON *o;
	int i;

	setenv("FUSEBOX_JOBS_IN_MEMORY", "4", 1);
	start(RULES_NO_DEFAULT);
	ck_assert_int_eq(itd_req(&T, "PUT", "/v1/routes/intent/level",
				 "{\"level\":3,\"reason\":\"vendor incident\"}", "op-token", 5000,
				 &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	for (i = 0; i < 20; i++) {
		snprintf(body, sizeof body, "{\"input\":\"refund\",\"request_id\":\"win-%02d\"}",
			 i);
		o = call(body, 202);
		ck_assert_str_eq(itd_str(o, "status"), "queued");
		cJSON_Delete(o);
	}
	ck_assert_double_eq(itd_metric(&T, "fusebox_jobs_queued"), 20);
	o = wait_status("win-15", "queued", 1000); /* one only in the table */
	ck_assert_ptr_nonnull(o);
	cJSON_Delete(o);
	o = call("{\"input\":\"refund\",\"request_id\":\"win-15\"}", 202);
	ck_assert_str_eq(itd_str(o, "status"), "queued");
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "jobs WHERE request_id='win-15'"), 1);

	/* A restart reads the window back and counts the rest. */
	ck_assert_int_eq(itd_kill_daemon(&T, SIGKILL), 128 + SIGKILL);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	ck_assert_double_eq(itd_metric(&T, "fusebox_jobs_queued"), 20);
	ck_assert_int_eq(
		itd_req(&T, "DELETE", "/v1/routes/intent/level", NULL, "op-token", 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	o = wait_status("win-19", "done", 10000);
	ck_assert_ptr_nonnull(o);
	cJSON_Delete(o);
	for (i = 0; i < 50 && itd_count(&T, "jobs WHERE state='done'") < 20; i++)
		usleep(100 * 1000);
	ck_assert_int_eq(itd_count(&T, "jobs WHERE state='done' AND tries=1"), 20);
	ck_assert_double_eq(itd_metric(&T, "fusebox_jobs_queued"), 0);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 20);
	/* oldest first, across the refills of the window */
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "attempts a JOIN attempts b ON a.request_id < b.request_id "
				       "WHERE a.started_at > b.started_at"),
			 0);
	unsetenv("FUSEBOX_JOBS_IN_MEMORY");
}
END_TEST

static Suite *
ladder_suite(void)
{
	Suite *s = suite_create("ladder");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)
	ADD(primary_down_backup_answers);
	ADD(both_down_rules_answer);
	ADD(no_rule_then_cache_then_preset);
	ADD(exhausted_error_is_503);
	ADD(exhausted_manual_enqueues_review);
	ADD(escalation_and_recovery);
	ADD(async_job_runs_and_calls_back);
	ADD(async_job_survives_kill_9);
	ADD(level_3_accepts_share_commits);
	ADD(level_3_queue_beyond_memory);
	ADD(cross_check_mismatch_goes_to_review);
	ADD(rules_shadow_measures_agreement);
	ADD(level_3_queues_and_drains_when_released);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ladder_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
