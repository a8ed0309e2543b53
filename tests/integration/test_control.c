/*
 * Integration: the control plane and its security (issue "Control plane
 * and security") against fuseboxd + fusebox-mockllm on 127.0.0.1 — GET
 * /v1/state, forced levels with TTLs, weights, breaker forcing, their
 * override / audit / events rows (committed before the answer), overrides
 * surviving a restart, the auth matrix, request limits, slow clients and
 * the graceful drain on SIGTERM.
 */
#include <check.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
#define BACKEND(n)                                                                                 \
	"{\"name\":\"" n "\",\"url\":\"@MOCK@/b/" n "/v1/chat/completions\",\"model\":\"m\","      \
	"\"breaker\":{\"mode\":\"consecutive\",\"failure_threshold\":3,\"open_ms\":60000}}"

/*
 * Backends primary, canary, small; routes intent (primary 95 + canary 5,
 * backup small), ticket and addr (primary only). extra: top-level keys.
 */
static char *
config(const char *extra)
{
	char *s = NULL;

	if (asprintf(&s,
		     "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
		     "%s%s"
		     "\"backends\":[" BACKEND("primary") "," BACKEND("canary") "," BACKEND(
			     "small") "],"
				      "\"routes\":["
				      "{\"name\":\"intent\",\"budget_ms\":3000,\"retry\":{\"max_"
				      "retries\":0},"
				      "\"targets\":[{\"backend\":\"primary\",\"weight\":95},"
				      "{\"backend\":\"canary\",\"weight\":5,\"canary\":true}],"
				      "\"backup\":{\"targets\":[{\"backend\":\"small\",\"weight\":"
				      "1}]}," SCHEMA "," RULES "},"
				      "{\"name\":\"ticket\",\"budget_ms\":3000,\"retry\":{\"max_"
				      "retries\":0},"
				      "\"targets\":[{\"backend\":\"primary\",\"weight\":1}]," SCHEMA
				      "," RULES "},"
				      "{\"name\":\"addr\",\"budget_ms\":3000,\"retry\":{\"max_"
				      "retries\":0},"
				      "\"targets\":[{\"backend\":\"primary\",\"weight\":1}]," SCHEMA
				      "," RULES "}]}",
		     extra, extra[0] ? "," : "") < 0)
		abort();
	return s;
}

static struct itd T;

static void
start(const char *extra)
{
	char *cfg = config(extra);
	int r = itd_start(&T, cfg);

	free(cfg);
	ck_assert_int_eq(r, 0);
}

static void
teardown(void)
{
	itd_stop(&T);
}

#define OP     "op-token"
#define VIEW   "view-token"
#define CALLER "call-token"

static cJSON *
state(void)
{
	cJSON *o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);

	ck_assert_ptr_nonnull(o);
	return o;
}

/* Element of arr whose "name" is name (borrowed from arr). */
static cJSON *
named(cJSON *arr, const char *name)
{
	cJSON *it;

	cJSON_ArrayForEach(it, arr) if (strcmp(itd_str(it, "name"), name) == 0) return it;
	ck_abort_msg("no element named %s", name);
	return NULL;
}

static cJSON *
state_route(cJSON *st, const char *name)
{
	return named(cJSON_GetObjectItem(st, "routes"), name);
}

static cJSON *
state_backend(cJSON *st, const char *name)
{
	return named(cJSON_GetObjectItem(st, "backends"), name);
}

/* Weight of backend among route object ro's targets. */
static int
target_weight(const cJSON *ro, const char *backend)
{
	cJSON *t;

	cJSON_ArrayForEach(
		t, cJSON_GetObjectItem(ro, "targets")) if (strcmp(itd_str(t, "backend"), backend) ==
							   0) return (int)itd_num(t, "weight");
	ck_abort_msg("no target %s", backend);
	return -1;
}

static cJSON *
call(const char *route, long want)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_call(&T, route, "{\"input\":\"refund please\"}", 10000, &r), 0);
	ck_assert_msg(r.status == want, "call %s: status %ld: %s", route, r.status, r.body);
	o = itd_json(&r);
	http_resp_free(&r);
	ck_assert_ptr_nonnull(o);
	return o;
}

static void
call_expect(const char *route, const char *source, const char *reason)
{
	cJSON *o = call(route, 200);

	ck_assert_str_eq(itd_str(o, "source"), source);
	if (reason)
		ck_assert_str_eq(itd_str(o, "reason"), reason);
	cJSON_Delete(o);
}

/* Run sql on the test's own read-write connection to the daemon's DB. */
static void
db_exec(const char *sql)
{
	sqlite3 *db = NULL;
	char *err = NULL;

	ck_assert_int_eq(sqlite3_open(T.db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "%s: %s", sql,
		      err ? err : "");
	sqlite3_free(err);
	sqlite3_close(db);
}

static char *
db_text(const char *sql)
{
	char *s = db_scalar_text(T.db, sql);

	ck_assert_msg(s != NULL, "no value: %s", sql);
	return s;
}

static long long
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- GET /v1/state ---- */

START_TEST(state_has_every_field)
{
	cJSON *st, *ro, *bo, *br, *f;
	static const char *const breaker_keys[] = {
		"state",	  "mode",      "failures",     "calls_in_window", "failure_rate",
		"slow_call_rate", "opened_at", "half_open_at", "last_transition",
	};
	size_t i;

	start("");
	st = state();
	ck_assert_str_eq(itd_str(st, "version"), FB_VERSION);
	ck_assert(itd_str(st, "started_at")[0] != '\0');
	ck_assert(itd_num(st, "uptime_s") >= 0);
	ck_assert_int_eq((int)itd_num(st, "inflight"), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "routes")), 3);
	ro = state_route(st, "intent");
	ck_assert_int_eq((int)itd_num(ro, "level"), 0);
	ck_assert_int_eq((int)itd_num(ro, "auto_level"), 0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ro, "forced_level")));
	ck_assert_int_eq((int)itd_num(ro, "budget_ms"), 3000);
	ck_assert_int_eq(target_weight(ro, "primary"), 95);
	ck_assert_int_eq(target_weight(ro, "canary"), 5);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(ro, "targets"), 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(f, "canary")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(ro, "targets"), 0), "canary")));
	ck_assert(itd_num(ro, "rps_1m") == 0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ro, "p50_ms_1m")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ro, "p99_ms_1m")));
	ck_assert_int_eq((int)itd_num(ro, "review_pending"), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "backends")), 3);
	bo = state_backend(st, "primary");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(bo, "version")));
	ck_assert_int_eq((int)itd_num(bo, "inflight"), 0);
	ck_assert(itd_num(bo, "max_concurrent") > 0);
	ck_assert(itd_num(bo, "health") == 1.0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(bo, "p90_ms_5m")));
	br = cJSON_GetObjectItem(bo, "breaker");
	for (i = 0; i < sizeof breaker_keys / sizeof breaker_keys[0]; i++)
		ck_assert_msg(cJSON_GetObjectItem(br, breaker_keys[i]) != NULL,
			      "breaker.%s missing", breaker_keys[i]);
	ck_assert_str_eq(itd_str(br, "state"), "closed");
	ck_assert_str_eq(itd_str(br, "mode"), "consecutive");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(br, "opened_at")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(br, "last_transition")));
	cJSON_Delete(st);

	/* Real traffic shows up: 3 calls, then rps 3/60 and latencies. */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":120}"), 0);
	call_expect("ticket", "llm", NULL);
	call_expect("ticket", "llm", NULL);
	call_expect("ticket", "llm", NULL);
	itd_settle();
	st = state();
	ro = state_route(st, "ticket");
	ck_assert_msg(fabs(itd_num(ro, "rps_1m") - 0.05) < 1e-9, "rps %g", itd_num(ro, "rps_1m"));
	ck_assert_msg(itd_num(ro, "p50_ms_1m") >= 115 && itd_num(ro, "p50_ms_1m") < 600, "p50 %g",
		      itd_num(ro, "p50_ms_1m"));
	ck_assert(itd_num(ro, "p99_ms_1m") >= itd_num(ro, "p50_ms_1m"));
	ck_assert(itd_num(state_route(st, "intent"), "rps_1m") == 0);
	bo = state_backend(st, "primary");
	ck_assert_msg(itd_num(bo, "p90_ms_5m") >= 115, "p90 %g", itd_num(bo, "p90_ms_5m"));
	cJSON_Delete(st);
}
END_TEST

START_TEST(state_traffic_figures_from_rows)
{
	char sql[2048];
	long long now;
	cJSON *st, *ro;
	int i;

	start("");
	now = wall_ms();
	/* intent: elapsed 1..100 ms finished in the last minute, and 10 slow
	 * calls that finished 2 minutes ago (out of the window). */
	for (i = 1; i <= 100; i++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO calls (id, request_id, route, started_at, finished_at, "
			 "elapsed_ms) "
			 "VALUES (%d, 'r%d', 'intent', %lld, %lld, %d)",
			 900000 + i, i, now - 2000 - i, now - 2000, i);
		db_exec(sql);
	}
	for (i = 1; i <= 10; i++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO calls (id, request_id, route, started_at, finished_at, "
			 "elapsed_ms) "
			 "VALUES (%d, 'old%d', 'intent', %lld, %lld, 5000)",
			 910000 + i, i, now - 125000, now - 120000);
		db_exec(sql);
	}
	for (i = 1; i <= 6; i++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO calls (id, request_id, route, started_at, finished_at, "
			 "elapsed_ms) "
			 "VALUES (%d, 't%d', 'ticket', %lld, %lld, %d)",
			 920000 + i, i, now - 1000, now - 1000 + 7 * i, 7 * i);
		db_exec(sql);
	}
	db_exec("INSERT INTO reviews (route, state, created_at) VALUES "
		"('intent','pending',1), ('intent','pending',1), ('intent','claimed',1), "
		"('intent','approved',1), ('intent','corrected',1), ('intent','rejected',1), "
		"('ticket','pending',1)");
	st = state();
	ro = state_route(st, "intent");
	ck_assert_msg(fabs(itd_num(ro, "rps_1m") - 100.0 / 60) < 0.001, "rps %g",
		      itd_num(ro, "rps_1m"));
	ck_assert_int_eq((int)itd_num(ro, "p50_ms_1m"), 50);
	ck_assert_int_eq((int)itd_num(ro, "p99_ms_1m"), 99);
	ck_assert_int_eq((int)itd_num(ro, "review_pending"), 3);
	ro = state_route(st, "ticket");
	ck_assert_msg(fabs(itd_num(ro, "rps_1m") - 0.1) < 0.001, "rps %g", itd_num(ro, "rps_1m"));
	ck_assert_int_eq((int)itd_num(ro, "p50_ms_1m"), 21); /* 7 14 21 | 28 35 42 */
	ck_assert_int_eq((int)itd_num(ro, "p99_ms_1m"), 42);
	ck_assert_int_eq((int)itd_num(ro, "review_pending"), 1);
	ro = state_route(st, "addr");
	ck_assert(itd_num(ro, "rps_1m") == 0);
	ck_assert_int_eq((int)itd_num(ro, "review_pending"), 0);
	cJSON_Delete(st);
}
END_TEST

/* ---- forced levels ---- */

START_TEST(level_force_persists_audits_and_releases)
{
	cJSON *o, *f, *j;
	char *s;
	long long now = wall_ms(), until;

	start("");
	o = itd_expect(&T, "PUT", "/v1/routes/intent/level",
		       "{\"level\":2,\"reason\":\"vendor incident\",\"ttl_s\":3600}", OP, 200);
	/* The answer is the route object. */
	ck_assert_str_eq(itd_str(o, "name"), "intent");
	ck_assert_int_eq((int)itd_num(o, "level"), 2);
	ck_assert_int_eq((int)itd_num(o, "auto_level"), 0);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "targets"));
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "rps_1m"));
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "review_pending"));
	f = cJSON_GetObjectItem(o, "forced_level");
	ck_assert_int_eq((int)itd_num(f, "level"), 2);
	ck_assert_str_eq(itd_str(f, "actor"), "alice");
	ck_assert_str_eq(itd_str(f, "reason"), "vendor incident");
	ck_assert(itd_str(f, "until")[0] != '\0');
	cJSON_Delete(o);

	/* Committed before the answer: no settling needed to see the rows. */
	ck_assert_int_eq(itd_count(&T, "overrides WHERE kind='level' AND subject='intent' AND "
				       "value='{\"level\":2}' AND actor='alice' AND "
				       "reason='vendor incident'"),
			 1);
	until = db_scalar_int(T.db, "SELECT until FROM overrides WHERE kind='level'");
	ck_assert_msg(until >= now + 3600000 - 100 && until <= wall_ms() + 3600000 + 100,
		      "until %lld", until);
	ck_assert_int_eq(itd_count(&T, "audit WHERE actor='alice' AND action='level.force' AND "
				       "target='route:intent' AND remote='127.0.0.1'"),
			 1);
	s = db_text("SELECT before FROM audit WHERE action='level.force'");
	j = cJSON_Parse(s);
	free(s);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq((int)itd_num(j, "level"), 0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "forced_level")));
	cJSON_Delete(j);
	s = db_text("SELECT after FROM audit WHERE action='level.force'");
	j = cJSON_Parse(s);
	free(s);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq((int)itd_num(j, "level"), 2);
	f = cJSON_GetObjectItem(j, "forced_level");
	ck_assert_int_eq((int)itd_num(f, "level"), 2);
	ck_assert_str_eq(itd_str(f, "actor"), "alice");
	ck_assert_str_eq(itd_str(f, "reason"), "vendor incident");
	cJSON_Delete(j);
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='level' AND subject='intent' AND "
				       "detail LIKE '%L2%alice%vendor incident%'"),
			 1);

	/* The level is in force: calls start at the rule engine. */
	call_expect("intent", "rules", "forced_level");
	ck_assert_int_eq(mock_requests(&T.mock, "primary") + mock_requests(&T.mock, "canary"), 0);
	o = state();
	ck_assert_int_eq((int)itd_num(state_route(o, "intent"), "level"), 2);
	ck_assert_int_eq((int)itd_num(state_route(o, "ticket"), "level"), 0);
	cJSON_Delete(o);

	/* L1 starts at the backup step. */
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/intent/level",
				"{\"level\":1,\"reason\":\"r1\"}", OP, 200));
	call_expect("intent", "backup", "forced_level");
	ck_assert_int_eq(mock_requests(&T.mock, "small"), 1);
	ck_assert_int_eq(itd_count(&T, "overrides WHERE kind='level' AND until IS NULL AND "
				       "value='{\"level\":1}'"),
			 1);

	/* Release: back to auto, row gone, audited, event. */
	o = itd_expect(&T, "DELETE", "/v1/routes/intent/level", NULL, OP, 200);
	ck_assert_str_eq(itd_str(o, "name"), "intent");
	ck_assert_int_eq((int)itd_num(o, "level"), 0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "forced_level")));
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "overrides"), 0);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action='level.release' AND actor='alice' AND "
				       "target='route:intent' AND remote='127.0.0.1' AND "
				       "json_extract(before, '$.forced_level.level') = 1 AND "
				       "json_extract(after, '$.forced_level') IS NULL"),
			 1);
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='level' AND subject='intent'"), 3);
	call_expect("intent", "llm", NULL);
}
END_TEST

struct bad_body {
	const char *body;
	const char *field;
};

static const struct bad_body bad_levels[] = {
	{"{\"reason\":\"x\"}", "level"},
	{"{\"level\":4,\"reason\":\"x\"}", "level"},
	{"{\"level\":-1,\"reason\":\"x\"}", "level"},
	{"{\"level\":1.5,\"reason\":\"x\"}", "level"},
	{"{\"level\":\"2\",\"reason\":\"x\"}", "level"},
	{"{\"level\":null,\"reason\":\"x\"}", "level"},
	{"{\"level\":2}", "reason"},
	{"{\"level\":2,\"reason\":\"\"}", "reason"},
	{"{\"level\":2,\"reason\":7}", "reason"},
	{"{\"level\":2,\"reason\":\"two\\nlines\"}", "reason"},
	{"{\"level\":2,\"reason\":\"x\",\"ttl_s\":0}", "ttl_s"},
	{"{\"level\":2,\"reason\":\"x\",\"ttl_s\":-5}", "ttl_s"},
	{"{\"level\":2,\"reason\":\"x\",\"ttl_s\":1.5}", "ttl_s"},
	{"{\"level\":2,\"reason\":\"x\",\"ttl_s\":\"60\"}", "ttl_s"},
	{"{\"level\":2,\"reason\":\"x\",\"ttl_s\":1e12}", "ttl_s"},
	{"not json", "body"},
	{"[1,2]", "body"},
	{"", "body"},
};

START_TEST(level_validation_names_the_field)
{
	char body[1200], reason[1000];
	size_t i;
	cJSON *o;

	start("");
	for (i = 0; i < sizeof bad_levels / sizeof bad_levels[0]; i++)
		itd_expect_error(&T, "PUT", "/v1/routes/intent/level", bad_levels[i].body, OP, 400,
				 "bad_request", bad_levels[i].field);
	/* 201 characters is one too many; 200 (two bytes each) is fine. */
	memset(reason, 'x', 201);
	reason[201] = '\0';
	snprintf(body, sizeof body, "{\"level\":2,\"reason\":\"%s\"}", reason);
	itd_expect_error(&T, "PUT", "/v1/routes/intent/level", body, OP, 400, "bad_request",
			 "reason");
	itd_expect_error(&T, "PUT", "/v1/routes/nope/level", "{\"level\":2,\"reason\":\"x\"}", OP,
			 404, "unknown_route", "nope");
	itd_expect_error(&T, "DELETE", "/v1/routes/nope/level", NULL, OP, 404, "unknown_route",
			 "nope");
	ck_assert_int_eq(itd_count(&T, "audit"), 0);
	ck_assert_int_eq(itd_count(&T, "overrides"), 0);
	o = state();
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(state_route(o, "intent"), "forced_level")));
	cJSON_Delete(o);
	for (i = 0; i < 200; i++)
		memcpy(reason + 2 * i, "\xc3\xa9", 2);
	reason[400] = '\0';
	snprintf(body, sizeof body, "{\"level\":3,\"reason\":\"%s\",\"ttl_s\":null}", reason);
	o = itd_expect(&T, "PUT", "/v1/routes/intent/level", body, OP, 200);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "forced_level"), "reason"), reason);
	ck_assert(
		cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "forced_level"), "until")));
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "audit"), 1);
}
END_TEST

START_TEST(level_ttl_expires)
{
	cJSON *o;

	start("");
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/ticket/level",
				"{\"level\":2,\"reason\":\"short\",\"ttl_s\":1}", OP, 200));
	call_expect("ticket", "rules", "forced_level");
	o = state();
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(state_route(o, "ticket"), "forced_level"),
				      "level"),
			 2);
	cJSON_Delete(o);
	usleep(1500 * 1000);
	o = state();
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(state_route(o, "ticket"), "forced_level")));
	ck_assert_int_eq((int)itd_num(state_route(o, "ticket"), "level"), 0);
	cJSON_Delete(o);
	call_expect("ticket", "llm", NULL);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='level' AND subject='ticket' AND "
				       "detail LIKE '%expired%'"),
			 1);
}
END_TEST

/* ---- weights ---- */

START_TEST(weights_set_partial_and_routing)
{
	cJSON *o;
	int i;

	start("");
	o = itd_expect(&T, "PUT", "/v1/routes/intent/weights",
		       "{\"weights\":{\"primary\":80,\"canary\":20}}", OP, 200);
	ck_assert_str_eq(itd_str(o, "name"), "intent");
	ck_assert_int_eq(target_weight(o, "primary"), 80);
	ck_assert_int_eq(target_weight(o, "canary"), 20);
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "overrides WHERE kind='weights' AND subject='intent' AND "
				       "json_extract(value,'$.primary')=80 AND "
				       "json_extract(value,'$.canary')=20 AND actor='alice'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action='weights.set' AND actor='alice' AND "
				       "target='route:intent' AND remote='127.0.0.1' AND "
				       "json_extract(before,'$.primary')=95 AND "
				       "json_extract(before,'$.canary')=5 AND "
				       "json_extract(after,'$.primary')=80 AND "
				       "json_extract(after,'$.canary')=20"),
			 1);
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='weights' AND subject='intent' AND "
				       "detail LIKE '%primary 95 -> 80%canary 5 -> 20%alice%'"),
			 1);

	/* A missing target keeps its weight. Canary 0: no canary traffic. */
	o = itd_expect(&T, "PUT", "/v1/routes/intent/weights", "{\"weights\":{\"canary\":0}}", OP,
		       200);
	ck_assert_int_eq(target_weight(o, "primary"), 80);
	ck_assert_int_eq(target_weight(o, "canary"), 0);
	cJSON_Delete(o);
	for (i = 0; i < 8; i++)
		call_expect("intent", "llm", NULL);
	ck_assert_int_eq(mock_requests(&T.mock, "canary"), 0);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 8);
	/* All on the canary. */
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/intent/weights",
				"{\"weights\":{\"canary\":1,\"primary\":0},\"reason\":\"promote\"}",
				OP, 200));
	for (i = 0; i < 5; i++)
		call_expect("intent", "llm", NULL);
	ck_assert_int_eq(mock_requests(&T.mock, "canary"), 5);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 8);
	ck_assert_int_eq(itd_count(&T, "overrides WHERE kind='weights' AND reason='promote' AND "
				       "json_extract(value,'$.primary')=0 AND "
				       "json_extract(value,'$.canary')=1"),
			 1);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action='weights.set'"), 3);
	o = state();
	ck_assert_int_eq(target_weight(state_route(o, "intent"), "canary"), 1);
	ck_assert_int_eq(target_weight(state_route(o, "intent"), "primary"), 0);
	cJSON_Delete(o);
}
END_TEST

static const struct bad_body bad_weights[] = {
	{"{}", "weights"},
	{"{\"weights\":{}}", "weights"},
	{"{\"weights\":[80,20]}", "weights"},
	{"{\"weights\":{\"nope\":1}}", "weights.nope"},
	{"{\"weights\":{\"small\":1}}", "weights.small"}, /* a backup target, not primary */
	{"{\"weights\":{\"primary\":-1}}", "weights.primary"},
	{"{\"weights\":{\"primary\":1.5}}", "weights.primary"},
	{"{\"weights\":{\"primary\":\"1\"}}", "weights.primary"},
	{"{\"weights\":{\"primary\":true}}", "weights.primary"},
	{"{\"weights\":{\"primary\":0,\"canary\":0}}", "weights"},
	{"{\"weights\":{\"primary\":1},\"reason\":5}", "reason"},
	{"nope", "body"},
};

START_TEST(weights_validation_names_the_field)
{
	size_t i;
	cJSON *o;

	start("");
	for (i = 0; i < sizeof bad_weights / sizeof bad_weights[0]; i++)
		itd_expect_error(&T, "PUT", "/v1/routes/intent/weights", bad_weights[i].body, OP,
				 400, "bad_request", bad_weights[i].field);
	/* The only target of ticket cannot go to 0 either. */
	itd_expect_error(&T, "PUT", "/v1/routes/ticket/weights", "{\"weights\":{\"primary\":0}}",
			 OP, 400, "bad_request", "weights");
	itd_expect_error(&T, "PUT", "/v1/routes/nope/weights", "{\"weights\":{\"primary\":1}}", OP,
			 404, "unknown_route", "nope");
	ck_assert_int_eq(itd_count(&T, "audit"), 0);
	ck_assert_int_eq(itd_count(&T, "overrides"), 0);
	o = state();
	ck_assert_int_eq(target_weight(state_route(o, "intent"), "primary"), 95);
	ck_assert_int_eq(target_weight(state_route(o, "intent"), "canary"), 5);
	cJSON_Delete(o);
}
END_TEST

/* ---- breakers ---- */

START_TEST(breaker_force_open_closed_auto)
{
	cJSON *o, *br, *lt;
	int i;

	start("");
	o = itd_expect(&T, "PUT", "/v1/backends/primary/breaker",
		       "{\"state\":\"forced_open\",\"reason\":\"maintenance\"}", OP, 200);
	ck_assert_str_eq(itd_str(o, "name"), "primary");
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "health"));
	br = cJSON_GetObjectItem(o, "breaker");
	ck_assert_str_eq(itd_str(br, "state"), "forced_open");
	ck_assert(itd_str(br, "opened_at")[0] != '\0');
	lt = cJSON_GetObjectItem(br, "last_transition");
	ck_assert_str_eq(itd_str(lt, "from"), "closed");
	ck_assert_str_eq(itd_str(lt, "to"), "forced_open");
	ck_assert_ptr_nonnull(strstr(itd_str(lt, "reason"), "maintenance"));
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "overrides WHERE kind='breaker' AND subject='primary' AND "
				       "value='{\"state\":\"forced_open\"}' AND actor='alice' AND "
				       "reason='maintenance'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action='breaker.force' AND actor='alice' AND "
				       "target='backend:primary' AND remote='127.0.0.1' AND "
				       "json_extract(before,'$.state')='closed' AND "
				       "json_extract(after,'$.state')='forced_open'"),
			 1);
	/* Open: the call never reaches the mock. */
	call_expect("ticket", "rules", "breaker_open");
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	itd_settle();
	/* Exactly one event for the transition. */
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='breaker' AND subject='primary'"), 1);
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='breaker' AND subject='primary' AND "
				       "detail LIKE 'closed -> forced_open%maintenance%'"),
			 1);

	/* Forced closed: failures past the threshold do not open it. */
	o = itd_expect(&T, "PUT", "/v1/backends/primary/breaker", "{\"state\":\"forced_closed\"}",
		       OP, 200);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "breaker"), "state"), "forced_closed");
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "overrides WHERE kind='breaker' AND "
				       "value='{\"state\":\"forced_closed\"}' AND reason IS NULL"),
			 1);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	for (i = 0; i < 5; i++)
		call_expect("ticket", "rules", "http_5xx");
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 5);
	o = state();
	br = cJSON_GetObjectItem(state_backend(o, "primary"), "breaker");
	ck_assert_str_eq(itd_str(br, "state"), "forced_closed");
	ck_assert_int_eq((int)itd_num(br, "failures"), 5);
	cJSON_Delete(o);

	/* Auto: closed with empty windows, override row gone. */
	o = itd_expect(&T, "PUT", "/v1/backends/primary/breaker",
		       "{\"state\":\"auto\",\"reason\":\"done\"}", OP, 200);
	br = cJSON_GetObjectItem(o, "breaker");
	ck_assert_str_eq(itd_str(br, "state"), "closed");
	ck_assert_int_eq((int)itd_num(br, "failures"), 0);
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "overrides"), 0);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action='breaker.force'"), 3);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='breaker' AND subject='primary'"), 3);
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='breaker' AND "
				       "detail LIKE 'forced_closed -> closed%'"),
			 1);
}
END_TEST

START_TEST(breaker_validation)
{
	start("");
	itd_expect_error(&T, "PUT", "/v1/backends/primary/breaker", "{}", OP, 400, "bad_request",
			 "state");
	itd_expect_error(&T, "PUT", "/v1/backends/primary/breaker", "{\"state\":\"open\"}", OP, 400,
			 "bad_request", "state");
	itd_expect_error(&T, "PUT", "/v1/backends/primary/breaker", "{\"state\":1}", OP, 400,
			 "bad_request", "state");
	itd_expect_error(&T, "PUT", "/v1/backends/primary/breaker",
			 "{\"state\":\"auto\",\"reason\":[]}", OP, 400, "bad_request", "reason");
	itd_expect_error(&T, "PUT", "/v1/backends/primary/breaker", "x", OP, 400, "bad_request",
			 "body");
	itd_expect_error(&T, "PUT", "/v1/backends/nope/breaker", "{\"state\":\"auto\"}", OP, 404,
			 "unknown_backend", "nope");
	ck_assert_int_eq(itd_count(&T, "audit"), 0);
}
END_TEST

/* ---- restart ---- */

START_TEST(overrides_survive_restart)
{
	cJSON *o, *ro, *f;
	char until[64];

	start("");
	o = itd_expect(&T, "PUT", "/v1/routes/intent/level",
		       "{\"level\":2,\"reason\":\"vendor incident\",\"ttl_s\":3600}", OP, 200);
	snprintf(until, sizeof until, "%s",
		 itd_str(cJSON_GetObjectItem(o, "forced_level"), "until"));
	cJSON_Delete(o);
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/ticket/level",
				"{\"level\":1,\"reason\":\"no ttl\"}", OP, 200));
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/addr/level",
				"{\"level\":3,\"reason\":\"gone soon\",\"ttl_s\":1}", OP, 200));
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/intent/weights",
				"{\"weights\":{\"primary\":60,\"canary\":40}}", OP, 200));
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/backends/canary/breaker",
				"{\"state\":\"forced_open\",\"reason\":\"bad canary\"}", OP, 200));
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/backends/small/breaker",
				"{\"state\":\"forced_closed\"}", OP, 200));
	ck_assert_int_eq(itd_count(&T, "overrides"), 6);

	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	usleep(1100 * 1000); /* addr's TTL ends while the daemon is down */
	ck_assert_int_eq(itd_restart_daemon(&T), 0);

	o = state();
	ro = state_route(o, "intent");
	f = cJSON_GetObjectItem(ro, "forced_level");
	ck_assert_msg(cJSON_IsObject(f), "intent's forced level was not restored (control_restore "
					 "not wired into engine_create?)");
	ck_assert_int_eq((int)itd_num(ro, "level"), 2);
	ck_assert_int_eq((int)itd_num(f, "level"), 2);
	ck_assert_str_eq(itd_str(f, "actor"), "alice");
	ck_assert_str_eq(itd_str(f, "reason"), "vendor incident");
	ck_assert_str_eq(itd_str(f, "until"), until);
	ck_assert_int_eq(target_weight(ro, "primary"), 60);
	ck_assert_int_eq(target_weight(ro, "canary"), 40);
	ro = state_route(o, "ticket");
	f = cJSON_GetObjectItem(ro, "forced_level");
	ck_assert_int_eq((int)itd_num(f, "level"), 1);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(f, "until")));
	ro = state_route(o, "addr");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ro, "forced_level")));
	ck_assert_int_eq((int)itd_num(ro, "level"), 0);
	ck_assert_str_eq(
		itd_str(cJSON_GetObjectItem(state_backend(o, "canary"), "breaker"), "state"),
		"forced_open");
	ck_assert_str_eq(
		itd_str(cJSON_GetObjectItem(state_backend(o, "small"), "breaker"), "state"),
		"forced_closed");
	ck_assert_str_eq(
		itd_str(cJSON_GetObjectItem(state_backend(o, "primary"), "breaker"), "state"),
		"closed");
	cJSON_Delete(o);
	call_expect("intent", "rules", "forced_level");
	call_expect("addr", "llm", NULL);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "overrides WHERE subject='addr'"), 0);
	ck_assert_int_eq(itd_count(&T, "overrides"), 5);
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='level' AND subject='addr' AND "
				       "detail LIKE '%expired%'"),
			 1);
	/* Released after the restart, it stays released after the next. */
	cJSON_Delete(itd_expect(&T, "DELETE", "/v1/routes/intent/level", NULL, OP, 200));
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	o = state();
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(state_route(o, "intent"), "forced_level")));
	ck_assert_int_eq(target_weight(state_route(o, "intent"), "primary"), 60);
	cJSON_Delete(o);
}
END_TEST

/* ---- auth ---- */

struct ep_case {
	const char *method, *path, *body;
	int operator_only;
};

static const struct ep_case control_eps[] = {
	{"GET", "/v1/state", NULL, 0},
	{"PUT", "/v1/routes/intent/level", "{\"level\":1,\"reason\":\"auth test\"}", 1},
	{"DELETE", "/v1/routes/intent/level", NULL, 1},
	{"PUT", "/v1/routes/intent/weights", "{\"weights\":{\"primary\":90}}", 1},
	{"PUT", "/v1/backends/primary/breaker", "{\"state\":\"auto\"}", 1},
};

START_TEST(auth_matrix_control_plane)
{
	const struct ep_case *c;
	size_t i;
	long n;

	start("");
	for (i = 0; i < sizeof control_eps / sizeof control_eps[0]; i++) {
		c = &control_eps[i];
		itd_expect_error(&T, c->method, c->path, c->body, NULL, 401, "unauthorized",
				 "missing");
		itd_expect_error(&T, c->method, c->path, c->body, "no-such-token", 401,
				 "unauthorized", "unknown token");
		itd_expect_error(&T, c->method, c->path, c->body, CALLER, 403, "forbidden",
				 "caller");
		if (c->operator_only)
			itd_expect_error(&T, c->method, c->path, c->body, VIEW, 403, "forbidden",
					 "viewer");
		else
			cJSON_Delete(itd_expect(&T, c->method, c->path, c->body, VIEW, 200));
		cJSON_Delete(itd_expect(&T, c->method, c->path, c->body, OP, 200));
	}
	/* Refused requests changed and audited nothing; the 4 operator ones did. */
	ck_assert_int_eq(itd_count(&T, "audit"), 4);
	ck_assert_int_eq(itd_count(&T, "audit WHERE actor='alice'"), 4);
	/* A token must be presented as a Bearer token. */
	{
		struct http_resp r;
		char url[128];
		const char *hdrs[] = {"Authorization: Basic op-token", NULL};

		snprintf(url, sizeof url, "%s/v1/state", T.base);
		ck_assert_int_eq(http_do("GET", url, NULL, hdrs, 5000, &r), 0);
		ck_assert_int_eq(r.status, 401);
		http_resp_free(&r);
	}
	/* Open and data-plane endpoints need no token by default. */
	cJSON_Delete(itd_expect(&T, "GET", "/healthz", NULL, NULL, 200));
	cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/ticket/call", "{\"input\":\"refund\"}",
				NULL, 200));
	/* /metrics (when present): viewer, not open by default. */
	n = 0;
	{
		struct http_resp r;

		ck_assert_int_eq(itd_req(&T, "GET", "/metrics", NULL, OP, 5000, &r), 0);
		n = r.status;
		http_resp_free(&r);
	}
	if (n != 404) {
		ck_assert_int_eq(n, 200);
		itd_expect_error(&T, "GET", "/metrics", NULL, NULL, 401, "unauthorized", "missing");
		itd_expect_error(&T, "GET", "/metrics", NULL, CALLER, 403, "forbidden", "caller");
		cJSON_Delete(itd_expect(&T, "GET", "/metrics", NULL, VIEW, 200));
	}
}
END_TEST

START_TEST(auth_data_plane_when_tokens_required)
{
	struct http_resp r;
	cJSON *o;
	long n;

	start("\"auth\":{\"callers_require_token\":true,\"metrics_public\":true}");
	itd_expect_error(&T, "POST", "/v1/routes/ticket/call",
			 "{\"input\":\"refund\",\"request_id\":\"a1\"}", NULL, 401, "unauthorized",
			 "missing");
	itd_expect_error(&T, "POST", "/v1/routes/ticket/call",
			 "{\"input\":\"refund\",\"request_id\":\"a1\"}", "bogus", 401,
			 "unauthorized", "unknown token");
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	o = itd_expect(&T, "POST", "/v1/routes/ticket/call",
		       "{\"input\":\"refund\",\"request_id\":\"a1\"}", CALLER, 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
	/* Any role will do on the data plane. */
	cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/ticket/call", "{\"input\":\"refund\"}",
				VIEW, 200));
	cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/ticket/call", "{\"input\":\"refund\"}", OP,
				200));
	itd_expect_error(&T, "GET", "/v1/requests/a1", NULL, NULL, 401, "unauthorized", "missing");
	o = itd_expect(&T, "GET", "/v1/requests/a1", NULL, CALLER, 200);
	ck_assert_str_eq(itd_str(o, "status"), "done");
	cJSON_Delete(o);
	/* The control plane still wants its roles; /healthz stays open. */
	itd_expect_error(&T, "GET", "/v1/state", NULL, CALLER, 403, "forbidden", "caller");
	cJSON_Delete(itd_expect(&T, "GET", "/healthz", NULL, NULL, 200));
	/* metrics_public: /metrics open (when present). */
	ck_assert_int_eq(itd_req(&T, "GET", "/metrics", NULL, NULL, 5000, &r), 0);
	n = r.status;
	http_resp_free(&r);
	ck_assert_msg(n == 200 || n == 404, "/metrics without a token: %ld", n);
}
END_TEST

/* ---- limits and hygiene ---- */

START_TEST(limits_body_url_method_path)
{
	char *big, *path;
	const char *hdrs[] = {"Authorization: Bearer view-token", NULL};
	struct http_resp r;
	char *allow;
	size_t n;

	start("\"max_body_bytes\":1024");
	big = malloc(4000);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', 3999);
	big[0] = '{';
	memcpy(big + 3990, "\"a\":1}", 7);
	itd_expect_error(&T, "POST", "/v1/routes/ticket/call", big, NULL, 413, "body_too_large",
			 "1024");
	itd_expect_error(&T, "PUT", "/v1/routes/intent/level", big, OP, 413, "body_too_large",
			 "1024");
	free(big);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	ck_assert_int_eq(itd_count(&T, "audit"), 0);
	/* Just under the limit is fine. */
	cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/ticket/call", "{\"input\":\"refund\"}",
				NULL, 200));

	/* A URL over 4096 bytes (itd_req's buffer is too small for it). */
	path = malloc(5000);
	ck_assert_ptr_nonnull(path);
	n = (size_t)snprintf(path, 5000, "%s/v1/state?x=", T.base);
	memset(path + n, 'a', 4200);
	path[n + 4200] = '\0';
	ck_assert_int_eq(http_do("GET", path, NULL, hdrs, 5000, &r), 0);
	free(path);
	ck_assert_int_eq(r.status, 414);
	ck_assert_ptr_nonnull(strstr(r.body, "uri_too_long"));
	http_resp_free(&r);
	path = malloc(5000);
	ck_assert_ptr_nonnull(path);
	n = (size_t)snprintf(path, 5000, "%s/v1/routes/", T.base);
	memset(path + n, 'a', 4200);
	memcpy(path + n + 4200, "/level", 7);
	ck_assert_int_eq(http_do("DELETE", path, NULL, hdrs, 5000, &r), 0);
	free(path);
	ck_assert_int_eq(r.status, 414);
	http_resp_free(&r);

	ck_assert_int_eq(itd_req(&T, "PATCH", "/v1/state", NULL, VIEW, 5000, &r), 0);
	ck_assert_int_eq(r.status, 405);
	allow = http_resp_header(&r, "Allow");
	ck_assert_ptr_nonnull(allow);
	ck_assert_str_eq(allow, "GET");
	free(allow);
	http_resp_free(&r);
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/routes/intent/level", NULL, OP, 5000, &r), 0);
	ck_assert_int_eq(r.status, 405);
	allow = http_resp_header(&r, "Allow");
	ck_assert_ptr_nonnull(allow);
	ck_assert_ptr_nonnull(strstr(allow, "PUT"));
	ck_assert_ptr_nonnull(strstr(allow, "DELETE"));
	free(allow);
	http_resp_free(&r);
	itd_expect_error(&T, "GET", "/v1/nothing-here", NULL, OP, 404, "not_found", "endpoint");
	itd_expect_error(&T, "PUT", "/v1/routes/intent/level/extra", "{}", OP, 404, "not_found",
			 "endpoint");
	/* The daemon is still fine. */
	cJSON_Delete(itd_expect(&T, "GET", "/healthz", NULL, NULL, 200));
}
END_TEST

#define SLOW_CLIENTS 50

START_TEST(slow_clients_do_not_block_others)
{
	static const char half[] =
		"POST /v1/routes/ticket/call HTTP/1.1\r\nHost: 127.0.0.1\r\nConte";
	int fds[SLOW_CLIENTS], i;
	struct sockaddr_in sa;
	double worst = 0;
	struct http_resp r;
	char buf[16];

	start("");
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)T.d.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < SLOW_CLIENTS; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(fds[i], 0);
		ck_assert_int_eq(connect(fds[i], (struct sockaddr *)&sa, sizeof sa), 0);
		ck_assert_int_eq(send(fds[i], half, sizeof half - 1, 0),
				 (ssize_t)(sizeof half - 1));
	}
	usleep(200 * 1000);
	for (i = 0; i < 20; i++) {
		ck_assert_int_eq(itd_req(&T, "GET", "/healthz", NULL, NULL, 2000, &r), 0);
		ck_assert_int_eq(r.status, 200);
		if (r.elapsed_ms > worst)
			worst = r.elapsed_ms;
		http_resp_free(&r);
	}
	ck_assert_msg(worst < 500, "healthz took %.1f ms with slow clients open", worst);
	call_expect("ticket", "llm", NULL);
	cJSON_Delete(state());
	cJSON_Delete(itd_expect(&T, "PUT", "/v1/routes/addr/level",
				"{\"level\":2,\"reason\":\"x\"}", OP, 200));
	/* The slow clients are still connected (nothing was answered to them). */
	for (i = 0; i < SLOW_CLIENTS; i++) {
		ck_assert_int_eq(recv(fds[i], buf, sizeof buf, MSG_DONTWAIT), -1);
		close(fds[i]);
	}
}
END_TEST

/* ---- graceful drain ---- */

START_TEST(sigterm_drains_inflight_calls)
{
	struct itd_bg b;
	cJSON *o;
	int status;

	start("");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":800}"), 0);
	ck_assert_int_eq(itd_bg_start(&b, &T, "ticket", "{\"input\":\"refund please\"}"), 0);
	usleep(100 * 1000);
	status = itd_kill_daemon(&T, SIGTERM);
	ck_assert_int_eq(itd_bg_join(&b), 0);
	ck_assert_msg(b.r.status == 200, "drained call: status %ld err %d: %s", b.r.status, b.r.err,
		      b.r.body);
	o = itd_json(&b.r);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	ck_assert_msg(b.r.elapsed_ms >= 790, "answered after %.0f ms", b.r.elapsed_ms);
	cJSON_Delete(o);
	http_resp_free(&b.r);
	ck_assert_int_eq(status, 0);
	/* Its row was flushed on the way out. */
	ck_assert_int_eq(itd_count(&T, "calls WHERE route='ticket' AND source='llm'"), 1);
}
END_TEST

static Suite *
control_suite(void)
{
	Suite *s = suite_create("control");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)

	ADD(state_has_every_field);
	ADD(state_traffic_figures_from_rows);
	ADD(level_force_persists_audits_and_releases);
	ADD(level_validation_names_the_field);
	ADD(level_ttl_expires);
	ADD(weights_set_partial_and_routing);
	ADD(weights_validation_names_the_field);
	ADD(breaker_force_open_closed_auto);
	ADD(breaker_validation);
	ADD(overrides_survive_restart);
	ADD(auth_matrix_control_plane);
	ADD(auth_data_plane_when_tokens_required);
	ADD(limits_body_url_method_path);
	ADD(slow_clients_do_not_block_others);
	ADD(sigterm_drains_inflight_calls);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(control_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
