/*
 * Integration: the human review queue (issue "review queue") through the
 * real fuseboxd and fusebox-mockllm on 127.0.0.1 — low-confidence and
 * manual answers enqueue at once without blocking the caller, listing
 * order / filters / counts, overdue events, claim conflicts between two
 * operators, decisions and their audit rows, correction validation and
 * the correction callback (received by a small HTTP server in this test),
 * the JSONL export, both overflow policies at capacity 2, and decisions
 * surviving kill -9.
 */
#include <check.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "itd.h"

#define OP   "op-token"
#define OP2  "op2-token"
#define VIEW "view-token"

#define SCHEMA                                                                                     \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\",\"confidence\"],"    \
	"\"properties\":{\"intent\":{\"type\":\"string\",\"enum\":[\"refund\",\"complaint\","      \
	"\"consult\",\"other\"]},\"confidence\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1}" \
	"}},"                                                                                      \
	"\"review_below\":0.7}"
#define RULES                                                                                      \
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"},"          \
	"\"confidence\":0.6}],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}}"
#define MANUAL "\"on_exhausted\":\"manual\""

static struct itd T;

/*
 * One backend "primary" on the mock at mock (a base URL, or "@MOCK@"),
 * one route "intent" with the output contract; extra: more route keys.
 */
static char *
config(const char *mock, const char *db, const char *extra)
{
	char *cfg = NULL;

	if (asprintf(&cfg,
		     "{\"listen\":\"127.0.0.1:0\",\"database\":\"%s\",\"tokens_file\":\"tokens\","
		     "\"callbacks\":{\"allow\":[\"127.0.0.1\"]},"
		     "\"backends\":[{\"name\":\"primary\",\"url\":\"%s/b/primary/v1/chat/"
		     "completions\",\"model\":\"m\",\"breaker\":{\"failure_threshold\":1000}}],"
		     "\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,\"retry\":{\"max_"
		     "retries\":0},"
		     "\"targets\":[{\"backend\":\"primary\",\"weight\":1}]," SCHEMA "%s%s}]}",
		     db, mock, extra[0] ? "," : "", extra) < 0)
		abort();
	return cfg;
}

static void
start(const char *extra)
{
	char *cfg = config("@MOCK@", "@DB@", extra);
	int r = itd_start(&T, cfg);

	free(cfg);
	ck_assert_int_eq(r, 0);
}

/* Rewrite the running daemon's config file with other route keys (then reload). */
static void
rewrite_config(const char *extra)
{
	char mock[64], *cfg;
	FILE *fp;

	snprintf(mock, sizeof mock, "http://127.0.0.1:%d", T.mock.port);
	cfg = config(mock, T.db, extra);
	fp = fopen(T.cfg_path, "w");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_ge(fputs(cfg, fp), 0);
	ck_assert_int_eq(fclose(fp), 0);
	free(cfg);
}

static void
teardown(void)
{
	itd_stop(&T);
}

/* POST /call with body; asserts 200 and returns the answer. */
static cJSON *
call(const char *body)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_call(&T, "intent", body, 10000, &r), 0);
	ck_assert_msg(r.status == 200, "call: status %ld: %s", r.status, r.body);
	o = itd_json(&r);
	http_resp_free(&r);
	ck_assert_ptr_nonnull(o);
	return o;
}

/* A low-confidence model answer for request_id: enqueued; returns the item id. */
static long long
low_confidence_item(const char *request_id)
{
	char body[256], sql[256];
	cJSON *o;
	long long id;

	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"preset\":\"low_confidence\"}"), 0);
	snprintf(body, sizeof body, "{\"input\":\"money back for %s\",\"request_id\":\"%s\"}",
		 request_id, request_id);
	o = call(body);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	ck_assert_str_eq(itd_str(o, "review"), "pending");
	cJSON_Delete(o);
	snprintf(sql, sizeof sql, "SELECT id FROM reviews WHERE request_id = '%s'", request_id);
	id = db_scalar_int(T.db, sql);
	ck_assert_msg(id > 0, "no review row for %s", request_id);
	return id;
}

static cJSON *
item(long long id, const char *token, long want)
{
	char path[64];

	snprintf(path, sizeof path, "/v1/reviews/%lld", id);
	return itd_expect(&T, "GET", path, NULL, token, want);
}

static cJSON *
act(long long id, const char *what, const char *body, const char *token, long want)
{
	char path[96];

	snprintf(path, sizeof path, "/v1/reviews/%lld/%s", id, what);
	return itd_expect(&T, "POST", path, body, token, want);
}

static void
act_error(long long id, const char *what, const char *body, const char *token, long want,
	  const char *code, const char *needle)
{
	char path[96];

	snprintf(path, sizeof path, "/v1/reviews/%lld/%s", id, what);
	itd_expect_error(&T, "POST", path, body, token, want, code, needle);
}

/* Rewrite the tokens file with a second operator "bob" and restart the daemon. */
static void
two_operators(void)
{
	static const char text[] = "op-token operator alice\nop2-token operator bob\n"
				   "view-token viewer victor\ncall-token caller svc\n";
	char path[512];
	int fd;

	snprintf(path, sizeof path, "%s/tokens", T.dir);
	fd = open(path, O_WRONLY | O_TRUNC | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * Rows are committed in the background (batched every <= 50 ms): wait for
 * count(*) FROM sql_tail to be want (up to timeout_ms) and assert it.
 */
#define ASSERT_COUNT_WITHIN(sql_tail, want, timeout_ms)                                            \
	ck_assert_int_eq(itd_count_wait(&T, (sql_tail), (want), (timeout_ms)), (want))
#define ASSERT_COUNT(sql_tail, want) ASSERT_COUNT_WITHIN(sql_tail, want, 5000)

/*
 * GET /v1/reviews until its first item is overdue, up to timeout_ms (the
 * review tick runs every second); the last answer (caller deletes).
 */
static cJSON *
reviews_until_overdue(int timeout_ms)
{
	int64_t end = harness_now_ms() + timeout_ms;
	cJSON *o;

	for (;;) {
		o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
		if (cJSON_IsTrue(cJSON_GetObjectItem(
			    cJSON_GetArrayItem(cJSON_GetObjectItem(o, "items"), 0), "overdue")) ||
		    harness_now_ms() >= end)
			return o;
		cJSON_Delete(o);
		sleep_ms(20);
	}
}

/* ---- enqueue ---- */

/*
 * Items made together share commits: the loop does not wait for each
 * item's fsync (each caller still waits for its own item to be durable).
 */
START_TEST(items_made_together_share_commits)
{
	struct http_resp *rs = calloc(40, sizeof *rs);
	double promises, syncs;
	int i;

	start("");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"preset\":\"low_confidence\"}"), 0);
	promises = itd_metric(&T, "fusebox_store_promises_total");
	syncs = itd_metric(&T, "fusebox_store_sync_commits_total");
	ck_assert_int_eq(
		itd_call_many(&T, "intent", "{\"input\":\"I want my money back\"}", 40, 10000, rs),
		0);
	for (i = 0; i < 40; i++) {
		cJSON *o = itd_json(&rs[i]);

		ck_assert_msg(rs[i].status == 200, "call %d: %ld %s", i, rs[i].status, rs[i].body);
		ck_assert_str_eq(itd_str(o, "review"), "pending");
		cJSON_Delete(o);
		http_resp_free(&rs[i]);
	}
	/* durable before each answer */
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'pending'"), 40);
	ck_assert_double_eq(itd_metric(&T, "fusebox_store_promises_total") - promises, 40);
	syncs = itd_metric(&T, "fusebox_store_sync_commits_total") - syncs;
	ck_assert_msg(syncs >= 1 && syncs < 40, "%g fsyncs for 40 items", syncs);
	free(rs);
}
END_TEST

START_TEST(low_confidence_answer_is_queued_at_once)
{
	cJSON *o, *items, *it;
	double el;
	struct http_resp r;
	char *s;

	start("");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"preset\":\"low_confidence\"}"), 0);
	ck_assert_int_eq(itd_call(&T, "intent",
				  "{\"input\":\"I want my money back\","
				  "\"request_id\":\"lc-1\"}",
				  10000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	el = r.elapsed_ms;
	o = itd_json(&r);
	http_resp_free(&r);
	/* The caller is answered with the model's result, marked for review. */
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	ck_assert_str_eq(itd_str(o, "review"), "pending");
	ck_assert(itd_num(o, "confidence") < 0.5);
	ck_assert_msg(el < 1000, "answer took %.0f ms", el);
	cJSON_Delete(o);
	/* The item was committed before the answer: no settling needed. */
	ck_assert_int_eq(itd_count(&T, "reviews WHERE request_id = 'lc-1' AND state = 'pending' "
				       "AND reason = 'low_confidence'"),
			 1);
	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	items = cJSON_GetObjectItem(o, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 1);
	it = cJSON_GetArrayItem(items, 0);
	ck_assert_str_eq(itd_str(it, "route"), "intent");
	ck_assert_str_eq(itd_str(it, "request_id"), "lc-1");
	ck_assert_str_eq(itd_str(it, "reason"), "low_confidence");
	ck_assert_str_eq(itd_str(it, "state"), "pending");
	ck_assert_str_eq(itd_str(it, "priority"), "medium");
	ck_assert_str_eq(itd_str(it, "input"), "I want my money back");
	ck_assert_ptr_nonnull(strstr(itd_str(it, "raw_output"), "refund"));
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(it, "result"), "intent"), "refund");
	ck_assert(itd_num(it, "confidence") > 0.39 && itd_num(it, "confidence") < 0.41);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(it, "overdue")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(it, "alt_result")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(it, "reviewer")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(it, "decision_at")));
	/* due_at = created_at + the medium SLA (7200 s) */
	s = db_scalar_text(T.db, "SELECT due_at - created_at FROM reviews");
	ck_assert_str_eq(s, "7200000");
	free(s);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 1);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "overdue"), 0);
	cJSON_Delete(o);
	/* A confident answer is not queued. */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{}"), 0);
	o = call("{\"input\":\"refund\"}");
	ck_assert_str_eq(itd_str(o, "review"), "none");
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "reviews"), 1);
}
END_TEST

START_TEST(exhausted_manual_is_queued_high)
{
	cJSON *o;
	long long id;

	start(MANUAL);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	o = call("{\"input\":\"where is my parcel\",\"request_id\":\"man-1\"}");
	ck_assert_str_eq(itd_str(o, "source"), "manual");
	ck_assert_str_eq(itd_str(o, "review"), "pending");
	cJSON_Delete(o);
	id = db_scalar_int(T.db, "SELECT id FROM reviews WHERE request_id = 'man-1'");
	ck_assert_int_gt(id, 0);
	o = item(id, VIEW, 200);
	ck_assert_str_eq(itd_str(o, "reason"), "manual");
	ck_assert_str_eq(itd_str(o, "priority"), "high");
	ck_assert_str_eq(itd_str(o, "state"), "pending");
	ck_assert_str_eq(itd_str(o, "input"), "where is my parcel");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "result")));
	cJSON_Delete(o);
	ck_assert_int_eq(db_scalar_int(T.db, "SELECT due_at - created_at FROM reviews"), 900000);
}
END_TEST

/* ---- listing ---- */

START_TEST(list_order_filters_and_counts)
{
	cJSON *o, *items;
	long long manual, low;

	/* medium is due before high here, so due order differs from creation order */
	start(MANUAL ",\"review\":{\"sla_s\":{\"high\":3000,\"medium\":100,\"low\":5000}}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	cJSON_Delete(call("{\"input\":\"x\",\"request_id\":\"m-1\"}"));
	manual = db_scalar_int(T.db, "SELECT id FROM reviews WHERE request_id = 'm-1'");
	low = low_confidence_item("l-1");

	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	items = cJSON_GetObjectItem(o, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 2);
	ck_assert_int_eq((long long)itd_num(cJSON_GetArrayItem(items, 0), "id"), low);
	ck_assert_int_eq((long long)itd_num(cJSON_GetArrayItem(items, 1), "id"), manual);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 2);
	cJSON_Delete(o);

	o = itd_expect(&T, "GET", "/v1/reviews?priority=high", NULL, VIEW, 200);
	items = cJSON_GetObjectItem(o, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 1);
	ck_assert_int_eq((long long)itd_num(cJSON_GetArrayItem(items, 0), "id"), manual);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 1);
	cJSON_Delete(o);

	o = itd_expect(&T, "GET", "/v1/reviews?limit=1&route=intent", NULL, VIEW, 200);
	items = cJSON_GetObjectItem(o, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 1);
	ck_assert_int_eq((long long)itd_num(cJSON_GetArrayItem(items, 0), "id"), low);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 2);
	cJSON_Delete(o);

	o = itd_expect(&T, "GET", "/v1/reviews?route=other", NULL, VIEW, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "items")), 0);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 0);
	cJSON_Delete(o);

	/* claimed items are open: listed by default and by state=claimed */
	cJSON_Delete(act(manual, "claim", NULL, OP, 200));
	o = itd_expect(&T, "GET", "/v1/reviews?state=claimed", NULL, VIEW, 200);
	items = cJSON_GetObjectItem(o, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 1);
	ck_assert_str_eq(itd_str(cJSON_GetArrayItem(items, 0), "reviewer"), "alice");
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/reviews?state=pending", NULL, VIEW, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "items")), 1);
	cJSON_Delete(o);
	/* decided items leave the default listing */
	cJSON_Delete(act(low, "decision", "{\"verdict\":\"approve\"}", OP, 200));
	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	items = cJSON_GetObjectItem(o, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 1);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 1);
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/reviews?state=approved", NULL, VIEW, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "items")), 1);
	cJSON_Delete(o);

	itd_expect_error(&T, "GET", "/v1/reviews?state=done", NULL, VIEW, 400, "bad_request",
			 "state");
	itd_expect_error(&T, "GET", "/v1/reviews?priority=urgent", NULL, VIEW, 400, "bad_request",
			 "priority");
	itd_expect_error(&T, "GET", "/v1/reviews?limit=0", NULL, VIEW, 400, "bad_request", "limit");
	itd_expect_error(&T, "GET", "/v1/reviews?limit=x", NULL, VIEW, 400, "bad_request", "limit");
	itd_expect_error(&T, "GET", "/v1/reviews", NULL, NULL, 401, "unauthorized", "");
	itd_expect_error(&T, "GET", "/v1/reviews/999", NULL, VIEW, 404, "unknown_review", "999");
	itd_expect_error(&T, "GET", "/v1/reviews/abc", NULL, VIEW, 404, "unknown_review", "abc");
}
END_TEST

START_TEST(overdue_is_reported_once)
{
	cJSON *o, *it;
	long long id;

	start(MANUAL ",\"review\":{\"sla_s\":{\"high\":1}}");
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	cJSON_Delete(call("{\"input\":\"x\",\"request_id\":\"od-1\"}"));
	id = db_scalar_int(T.db, "SELECT id FROM reviews");
	o = item(id, VIEW, 200);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "overdue")));
	cJSON_Delete(o);
	/* due after 1 s; the tick runs every second (it slept 2.6 s here) */
	o = reviews_until_overdue(5000);
	it = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "items"), 0);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(it, "overdue")));
	ck_assert_str_eq(itd_str(it, "state"), "pending");
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 1);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "overdue"), 1);
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/reviews?state=overdue", NULL, VIEW, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "items")), 1);
	cJSON_Delete(o);
	ASSERT_COUNT("events WHERE kind = 'review_overdue' AND subject = 'intent'", 1);
	/* an overdue item feeds an alert (on a tick of its own: up to 5 s) */
	ASSERT_COUNT("alerts WHERE rule = 'review_overdue' AND route = 'intent' "
		     "AND state = 'firing'",
		     1);
	sleep_ms(2000);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "events WHERE kind = 'review_overdue'"), 1);
	/* ... and not again after a restart */
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	sleep_ms(2200);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "events WHERE kind = 'review_overdue'"), 1);
	/* deciding it clears the overdue count, and the alert resolves */
	cJSON_Delete(act(id, "decision", "{\"verdict\":\"reject\"}", OP, 200));
	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "overdue"), 0);
	cJSON_Delete(o);
	ASSERT_COUNT("alerts WHERE rule = 'review_overdue' AND state = 'resolved'", 1);
}
END_TEST

/* ---- claim and decide ---- */

START_TEST(claim_conflicts_between_operators)
{
	cJSON *o;
	long long a, b;

	start("");
	two_operators();
	a = low_confidence_item("c-1");
	b = low_confidence_item("c-2");

	o = act(a, "claim", NULL, OP, 200);
	ck_assert_str_eq(itd_str(o, "state"), "claimed");
	ck_assert_str_eq(itd_str(o, "reviewer"), "alice");
	cJSON_Delete(o);
	/* the holder may claim again */
	cJSON_Delete(act(a, "claim", "{}", OP, 200));
	/* somebody else may neither claim nor decide it */
	act_error(a, "claim", NULL, OP2, 409, "claimed", "alice");
	act_error(a, "decision", "{\"verdict\":\"approve\"}", OP2, 409, "claimed", "alice");
	/* a viewer may do neither */
	act_error(a, "claim", NULL, VIEW, 403, "forbidden", "operator");
	act_error(b, "decision", "{\"verdict\":\"approve\"}", VIEW, 403, "forbidden", "operator");
	/* the holder decides */
	o = act(a, "decision", "{\"verdict\":\"approve\",\"note\":\"fine\"}", OP, 200);
	ck_assert_str_eq(itd_str(o, "state"), "approved");
	ck_assert_str_eq(itd_str(o, "verdict"), "approve");
	ck_assert_str_eq(itd_str(o, "note"), "fine");
	ck_assert_str_eq(itd_str(o, "reviewer"), "alice");
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, "decision_at")));
	cJSON_Delete(o);
	act_error(a, "claim", NULL, OP2, 409, "already_decided", "approved");
	/* an unclaimed item may be decided directly by anyone */
	o = act(b, "decision", "{\"verdict\":\"reject\"}", OP2, 200);
	ck_assert_str_eq(itd_str(o, "state"), "rejected");
	ck_assert_str_eq(itd_str(o, "reviewer"), "bob");
	cJSON_Delete(o);
	/* every change is audited, committed before the answer */
	ck_assert_int_eq(itd_count(&T,
				   "audit WHERE action = 'review.claim' AND actor = 'alice' AND "
				   "target = 'review:1' AND json_extract(after, '$.state') = "
				   "'claimed' AND remote IS NOT NULL"),
			 1);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action = 'review.decision'"), 2);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action = 'review.decision' AND actor = 'bob' "
				       "AND json_extract(before, '$.state') = 'pending' AND "
				       "json_extract(after, '$.verdict') = 'reject'"),
			 1);
	act_error(999, "claim", NULL, OP, 404, "unknown_review", "999");
}
END_TEST

START_TEST(decisions_and_validation)
{
	cJSON *o, *res;
	long long a, b, c;
	char *s;

	start("");
	a = low_confidence_item("d-1");
	b = low_confidence_item("d-2");
	c = low_confidence_item("d-3");

	act_error(a, "decision", "not json", OP, 400, "bad_request", "body");
	act_error(a, "decision", "{}", OP, 400, "bad_request", "verdict");
	act_error(a, "decision", "{\"verdict\":\"claim\"}", OP, 400, "bad_request", "verdict");
	act_error(a, "decision", "{\"verdict\":\"approve\",\"note\":5}", OP, 400, "bad_request",
		  "note");
	act_error(a, "decision", "{\"verdict\":\"correct\"}", OP, 400, "bad_request", "result");
	/* the correction must pass the route's output contract, naming the field */
	act_error(a, "decision",
		  "{\"verdict\":\"correct\",\"result\":{\"intent\":\"banana\",\"confidence\":1}}",
		  OP, 400, "bad_request", "result.intent");
	act_error(a, "decision", "{\"verdict\":\"correct\",\"result\":{\"intent\":\"refund\"}}", OP,
		  400, "bad_request", "result.confidence");
	act_error(a, "decision", "{\"verdict\":\"correct\",\"result\":\"refund\"}", OP, 400,
		  "bad_request", "result");
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'pending'"), 3);
	ck_assert_int_eq(itd_count(&T, "audit"), 0);

	/* a correction is normalised like a model answer (numeric string coerced) */
	o = act(a, "decision",
		"{\"verdict\":\"correct\",\"result\":{\"intent\":\"complaint\",\"confidence\":"
		"\"0.9\"},\"note\":\"angry customer\"}",
		OP, 200);
	ck_assert_str_eq(itd_str(o, "state"), "corrected");
	res = cJSON_GetObjectItem(o, "corrected_result");
	ck_assert_str_eq(itd_str(res, "intent"), "complaint");
	ck_assert(itd_num(res, "confidence") > 0.89 && itd_num(res, "confidence") < 0.91);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "result"), "intent"), "refund");
	cJSON_Delete(o);
	s = db_scalar_text(T.db, "SELECT json_extract(corrected_result, '$.intent') || ',' || "
				 "verdict || ',' || reviewer || ',' || note FROM reviews WHERE "
				 "request_id = 'd-1'");
	ck_assert_str_eq(s, "complaint,correct,alice,angry customer");
	free(s);
	cJSON_Delete(act(b, "decision", "{\"verdict\":\"approve\",\"result\":{\"x\":1}}", OP, 200));
	cJSON_Delete(act(c, "decision", "{\"verdict\":\"reject\"}", OP, 200));
	/* decided is final */
	act_error(a, "decision", "{\"verdict\":\"approve\"}", OP, 409, "already_decided",
		  "corrected");
	act_error(c, "decision", "{\"verdict\":\"reject\"}", OP, 409, "already_decided",
		  "rejected");
	o = item(b, VIEW, 200);
	ck_assert_str_eq(itd_str(o, "state"), "approved");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "corrected_result")));
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "reviews WHERE decided_at IS NOT NULL"), 3);
	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 0);
	cJSON_Delete(o);
}
END_TEST

/* ---- export ---- */

START_TEST(export_jsonl)
{
	struct http_resp r;
	char *ct, *line, *nl, *body;
	cJSON *o;
	long long a, b;
	int n = 0;

	start("");
	a = low_confidence_item("e-1");
	b = low_confidence_item("e-2");
	low_confidence_item("e-3");
	cJSON_Delete(act(a, "decision",
			 "{\"verdict\":\"correct\",\"result\":{\"intent\":\"other\",\"confidence\":"
			 "0.8},\"note\":\"n1\"}",
			 OP, 200));
	cJSON_Delete(act(b, "decision", "{\"verdict\":\"approve\"}", OP, 200));

	ck_assert_int_eq(itd_req(&T, "GET", "/v1/reviews/export?since=2020-01-01T00:00:00Z", NULL,
				 VIEW, 10000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	ct = http_resp_header(&r, "Content-Type");
	ck_assert_str_eq(ct, "application/x-ndjson");
	free(ct);
	ck_assert_msg(r.len > 0 && r.body[r.len - 1] == '\n', "body: %s", r.body);
	body = strdup(r.body);
	for (line = body; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		o = cJSON_Parse(line);
		ck_assert_ptr_nonnull(o);
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, "review_id")));
		ck_assert_str_eq(itd_str(o, "route"), "intent");
		ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "model_result"), "intent"),
				 "refund");
		ck_assert_str_eq(itd_str(o, "reviewer"), "alice");
		ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, "created_at")));
		ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, "decided_at")));
		if (n == 0) {
			ck_assert_int_eq((long long)itd_num(o, "review_id"), a);
			ck_assert_str_eq(itd_str(o, "request_id"), "e-1");
			ck_assert_str_eq(itd_str(o, "input"), "money back for e-1");
			ck_assert_str_eq(itd_str(o, "verdict"), "correct");
			ck_assert_str_eq(
				itd_str(cJSON_GetObjectItem(o, "corrected_result"), "intent"),
				"other");
			ck_assert_str_eq(itd_str(o, "note"), "n1");
		} else {
			ck_assert_int_eq((long long)itd_num(o, "review_id"), b);
			ck_assert_str_eq(itd_str(o, "verdict"), "approve");
			ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "corrected_result")));
			ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "note")));
		}
		cJSON_Delete(o);
		n++;
	}
	ck_assert_int_eq(n, 2); /* the pending item is not exported */
	free(body);
	http_resp_free(&r);

	/* since in the future: nothing; the offset form works too */
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/reviews/export?since=2999-01-01T00:00:00%2B01:00",
				 NULL, VIEW, 10000, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq((int)r.len, 0);
	http_resp_free(&r);
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/reviews/export", NULL, VIEW, 10000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	itd_expect_error(&T, "GET", "/v1/reviews/export?since=yesterday", NULL, VIEW, 400,
			 "bad_request", "since");
	itd_expect_error(&T, "GET", "/v1/reviews/export", NULL, NULL, 401, "unauthorized", "");
}
END_TEST

/* ---- the correction callback ---- */

/* A one-shot HTTP server on 127.0.0.1 that keeps the first POST body it gets. */
struct cb_server {
	int fd;
	int port;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *body;
	char path[256];
	int requests;
};

static void *
cb_main(void *arg)
{
	struct cb_server *s = arg;

	for (;;) {
		char buf[65536], *hdr_end, *cl;
		size_t len = 0, want = 0;
		ssize_t n;
		int c = accept(s->fd, NULL, NULL);
		static const char ok[] =
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

		if (c < 0)
			break;
		while (len < sizeof buf - 1) {
			n = read(c, buf + len, sizeof buf - 1 - len);
			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = '\0';
			hdr_end = strstr(buf, "\r\n\r\n");
			if (hdr_end == NULL)
				continue;
			cl = strcasestr(buf, "Content-Length:");
			want = (size_t)(hdr_end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
			if (len >= want)
				break;
		}
		buf[len] = '\0';
		hdr_end = strstr(buf, "\r\n\r\n");
		pthread_mutex_lock(&s->lock);
		s->requests++;
		if (s->body == NULL && hdr_end != NULL) {
			s->body = strdup(hdr_end + 4);
			sscanf(buf, "POST %255s", s->path);
		}
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		n = write(c, ok, sizeof ok - 1);
		(void)n;
		close(c);
	}
	return NULL;
}

static void
cb_start(struct cb_server *s)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;

	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(s->fd, 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(s->fd, 8), 0);
	ck_assert_int_eq(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, cb_main, s), 0);
}

/* The first body received within timeout_ms (borrowed), or NULL. */
static const char *
cb_wait(struct cb_server *s, int timeout_ms)
{
	struct timespec ts;
	const char *b;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (s->body == NULL && pthread_cond_timedwait(&s->cond, &s->lock, &ts) == 0)
		;
	b = s->body;
	pthread_mutex_unlock(&s->lock);
	return b;
}

static void
cb_stop(struct cb_server *s)
{
	shutdown(s->fd, SHUT_RDWR);
	close(s->fd);
	pthread_join(s->thread, NULL);
	free(s->body);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
}

START_TEST(correction_is_pushed_to_the_callback)
{
	struct cb_server srv;
	char body[256];
	const char *got;
	cJSON *o, *p;
	long long id, other;

	start("");
	cb_start(&srv);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"preset\":\"low_confidence\"}"), 0);
	snprintf(body, sizeof body,
		 "{\"input\":\"refund me\",\"request_id\":\"cb-1\","
		 "\"callback_url\":\"http://127.0.0.1:%d/hook\"}",
		 srv.port);
	o = call(body);
	ck_assert_str_eq(itd_str(o, "review"), "pending");
	cJSON_Delete(o);
	id = db_scalar_int(T.db, "SELECT id FROM reviews WHERE request_id = 'cb-1'");
	/* an item without a callback_url is corrected quietly */
	other = low_confidence_item("cb-2");
	cJSON_Delete(
		act(other, "decision",
		    "{\"verdict\":\"correct\",\"result\":{\"intent\":\"other\",\"confidence\":1}}",
		    OP, 200));
	/* claimed, then corrected: pushed once */
	cJSON_Delete(act(id, "claim", NULL, OP, 200));
	cJSON_Delete(act(id, "decision",
			 "{\"verdict\":\"correct\",\"result\":{\"intent\":\"consult\","
			 "\"confidence\":0.95},\"note\":\"asked a question\"}",
			 OP, 200));
	got = cb_wait(&srv, 8000);
	ck_assert_msg(got != NULL, "no callback received");
	ck_assert_str_eq(srv.path, "/hook");
	p = cJSON_Parse(got);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(itd_str(p, "event"), "review_correction");
	ck_assert_int_eq((long long)itd_num(p, "review_id"), id);
	ck_assert_str_eq(itd_str(p, "request_id"), "cb-1");
	ck_assert_str_eq(itd_str(p, "route"), "intent");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(p, "result"), "intent"), "consult");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(p, "original"), "intent"), "refund");
	ck_assert_str_eq(itd_str(p, "note"), "asked a question");
	cJSON_Delete(p);
	sleep_ms(500);
	pthread_mutex_lock(&srv.lock);
	ck_assert_int_eq(srv.requests, 1);
	pthread_mutex_unlock(&srv.lock);
	cb_stop(&srv);
}
END_TEST

/* ---- overflow ---- */

START_TEST(overflow_auto_accepts_oldest_low)
{
	cJSON *o, *items;
	long long first, second, third;

	start("\"review\":{\"priority\":\"low\",\"capacity\":2,\"overflow\":\"auto_accept_low\"}");
	first = low_confidence_item("o-1");
	second = low_confidence_item("o-2");
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'pending'"), 2);
	third = low_confidence_item("o-3");
	/* over capacity (3 > 2): the oldest low item was approved as review_overflow */
	o = item(first, VIEW, 200);
	ck_assert_str_eq(itd_str(o, "state"), "approved");
	ck_assert_str_eq(itd_str(o, "reviewer"), "review_overflow");
	ck_assert_str_eq(itd_str(o, "verdict"), "approve");
	ck_assert_ptr_nonnull(strstr(itd_str(o, "note"), "over capacity"));
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	items = cJSON_GetObjectItem(o, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 2);
	ck_assert_int_eq((long long)itd_num(cJSON_GetArrayItem(items, 0), "id"), second);
	ck_assert_int_eq((long long)itd_num(cJSON_GetArrayItem(items, 1), "id"), third);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 2);
	cJSON_Delete(o);
	/* the event row is committed with the approval */
	ck_assert_int_eq(itd_count(&T,
				   "events WHERE kind = 'review_overflow' AND subject = 'intent' "
				   "AND detail LIKE '%auto-accepted%'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "audit"), 0);
}
END_TEST

START_TEST(overflow_without_low_items_keeps_everything)
{
	cJSON *o;

	start("\"review\":{\"priority\":\"high\",\"capacity\":1,\"overflow\":\"auto_accept_low\"}");
	low_confidence_item("h-1");
	low_confidence_item("h-2");
	low_confidence_item("h-3");
	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 3);
	cJSON_Delete(o);
	/* said once per episode, not per item */
	ASSERT_COUNT("events WHERE kind = 'review_overflow' AND "
		     "detail LIKE '%no low-priority%'",
		     1);
	/* and the overflow alert fires (the tick runs every second) */
	ASSERT_COUNT("alerts WHERE rule = 'review_overflow' AND state = 'firing' "
		     "AND value = 3 AND threshold = 1",
		     1);
	/* still once, the alert's tick later (a row per item would be here by now) */
	ck_assert_int_eq(itd_count(&T, "events WHERE kind = 'review_overflow' AND "
				       "detail LIKE '%no low-priority%'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'pending'"), 3);
}
END_TEST

START_TEST(overflow_forces_level_2_and_releases)
{
	cJSON *o, *ro, *f;
	long long a, b;

	start(RULES ",\"review\":{\"capacity\":2,\"overflow\":\"force_l2\"}");
	a = low_confidence_item("f-1");
	b = low_confidence_item("f-2");
	low_confidence_item("f-3");
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ro = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0);
	ck_assert_int_eq((int)itd_num(ro, "level"), 2);
	f = cJSON_GetObjectItem(ro, "forced_level");
	ck_assert_int_eq((int)itd_num(f, "level"), 2);
	ck_assert_str_eq(itd_str(f, "actor"), "review_overflow");
	ck_assert_ptr_nonnull(strstr(itd_str(f, "reason"), "over capacity"));
	cJSON_Delete(o);
	ASSERT_COUNT("events WHERE kind = 'review_overflow' AND "
		     "detail LIKE '%forced to L2%'",
		     1);
	ASSERT_COUNT("events WHERE kind = 'level' AND detail LIKE "
		     "'%forced L2 by review_overflow%'",
		     1);
	/* the route now answers from the rule engine without touching the model */
	o = call("{\"input\":\"refund\"}");
	ck_assert_str_eq(itd_str(o, "source"), "rules");
	ck_assert_str_eq(itd_str(o, "reason"), "forced_level");
	ck_assert_str_eq(itd_str(o, "review"), "none");
	cJSON_Delete(o);
	/* at capacity the force stays; below it, it is released */
	cJSON_Delete(act(a, "decision", "{\"verdict\":\"approve\"}", OP, 200));
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ro = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0);
	ck_assert_int_eq((int)itd_num(ro, "level"), 2);
	cJSON_Delete(o);
	cJSON_Delete(act(b, "decision", "{\"verdict\":\"approve\"}", OP, 200));
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ro = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0);
	ck_assert_int_eq((int)itd_num(ro, "level"), 0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ro, "forced_level")));
	cJSON_Delete(o);
	ASSERT_COUNT("events WHERE kind = 'review_overflow' AND "
		     "detail LIKE '%released%'",
		     1);
	ASSERT_COUNT("events WHERE kind = 'review_overflow'", 2);
	o = call("{\"input\":\"refund\"}");
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
}
END_TEST

START_TEST(overflow_force_is_rederived_after_restart)
{
	cJSON *o, *ro;

	start(RULES ",\"review\":{\"capacity\":1,\"overflow\":\"force_l2\"}");
	low_confidence_item("r-1");
	low_confidence_item("r-2");
	ck_assert_int_eq(itd_kill_daemon(&T, SIGKILL), 128 + SIGKILL);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ro = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0);
	ck_assert_int_eq((int)itd_num(ro, "level"), 2);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(ro, "forced_level"), "actor"),
			 "review_overflow");
	ck_assert_int_eq((int)itd_num(ro, "review_pending"), 2);
	cJSON_Delete(o);
}
END_TEST

START_TEST(overflow_follows_a_reload)
{
	cJSON *o, *ro;

	start(RULES ",\"review\":{\"capacity\":1,\"overflow\":\"force_l2\"}");
	low_confidence_item("rl-1");
	low_confidence_item("rl-2");
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ro = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0);
	ck_assert_int_eq((int)itd_num(ro, "level"), 2);
	cJSON_Delete(o);
	/* the policy changes: the force goes at once; the counts carry on */
	rewrite_config(RULES ",\"review\":{\"capacity\":5,\"overflow\":\"auto_accept_low\"}");
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ro = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0);
	ck_assert_int_eq((int)itd_num(ro, "level"), 0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ro, "forced_level")));
	cJSON_Delete(o);
	ASSERT_COUNT("events WHERE kind = 'review_overflow' AND detail LIKE "
		     "'%no longer force_l2%'",
		     1);
	/* a smaller capacity acts on the next enqueue with the new policy */
	rewrite_config(RULES ",\"review\":{\"capacity\":2,\"priority\":\"low\"}");
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	low_confidence_item("rl-3"); /* low; 3 > 2: the oldest low goes, and it is rl-3 */
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'approved' AND "
				       "reviewer = 'review_overflow' AND request_id = 'rl-3'"),
			 1);
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'pending'"), 2);
}
END_TEST

/*
 * A pass that accepts many items commits them together: one fsync on the
 * engine thread for the pass (it took one per item, each stalling every
 * call in flight), the oldest items accepted, each with its events row.
 */
START_TEST(overflow_pass_is_one_commit)
{
	char rid[16];
	double before;
	cJSON *o;
	int i;

	start("\"review\":{\"priority\":\"low\",\"capacity\":100,\"overflow\":\"auto_accept_"
	      "low\"}");
	for (i = 0; i < 40; i++) {
		snprintf(rid, sizeof rid, "p-%02d", i);
		low_confidence_item(rid);
	}
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'pending'"), 40);
	before = itd_metric(&T, "fusebox_store_sync_commits_total");
	rewrite_config("\"review\":{\"priority\":\"low\",\"capacity\":5,\"overflow\":\"auto_accept_"
		       "low\"}");
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'pending'"), 5);
	ck_assert_int_eq(itd_count(&T, "reviews WHERE state = 'approved' AND reviewer = "
				       "'review_overflow' AND request_id < 'p-35'"),
			 35);
	ck_assert_int_eq(itd_count(&T, "events WHERE kind = 'review_overflow' AND "
				       "detail LIKE '%auto-accepted%'"),
			 35);
	/* the reload's audit row and the pass: 2 (it was 35 + 1) */
	ck_assert_double_le(itd_metric(&T, "fusebox_store_sync_commits_total") - before, 2);
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ck_assert_int_eq((int)itd_num(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0),
				      "review_pending"),
			 5);
	cJSON_Delete(o);
}
END_TEST

/* ---- durability ---- */

START_TEST(decisions_survive_kill_9)
{
	cJSON *o;
	long long a, b, c;

	start("");
	a = low_confidence_item("k-1");
	b = low_confidence_item("k-2");
	c = low_confidence_item("k-3");
	cJSON_Delete(act(a, "decision",
			 "{\"verdict\":\"correct\",\"result\":{\"intent\":\"other\",\"confidence\":"
			 "0.5}}",
			 OP, 200));
	cJSON_Delete(act(b, "claim", NULL, OP, 200));
	/* no settling: the answers promised it, the crash comes right after */
	ck_assert_int_eq(itd_kill_daemon(&T, SIGKILL), 128 + SIGKILL);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	o = item(a, VIEW, 200);
	ck_assert_str_eq(itd_str(o, "state"), "corrected");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "corrected_result"), "intent"), "other");
	ck_assert_str_eq(itd_str(o, "reviewer"), "alice");
	cJSON_Delete(o);
	o = item(b, VIEW, 200);
	ck_assert_str_eq(itd_str(o, "state"), "claimed");
	cJSON_Delete(o);
	ck_assert_int_eq(itd_count(&T, "audit WHERE action LIKE 'review.%'"), 2);
	/* the queue reloaded its counts: one claimed, one pending */
	o = itd_expect(&T, "GET", "/v1/reviews", NULL, VIEW, 200);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(o, "counts"), "pending"), 2);
	cJSON_Delete(o);
	o = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	ck_assert_int_eq((int)itd_num(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "routes"), 0),
				      "review_pending"),
			 2);
	cJSON_Delete(o);
	/* and goes on where it was */
	act_error(a, "decision", "{\"verdict\":\"approve\"}", OP, 409, "already_decided", "");
	cJSON_Delete(act(c, "decision", "{\"verdict\":\"approve\"}", OP, 200));
}
END_TEST

static Suite *
review_it_suite(void)
{
	Suite *s = suite_create("review_it");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)

	ADD(low_confidence_answer_is_queued_at_once);
	ADD(items_made_together_share_commits);
	ADD(exhausted_manual_is_queued_high);
	ADD(list_order_filters_and_counts);
	ADD(overdue_is_reported_once);
	ADD(claim_conflicts_between_operators);
	ADD(decisions_and_validation);
	ADD(export_jsonl);
	ADD(correction_is_pushed_to_the_callback);
	ADD(overflow_auto_accepts_oldest_low);
	ADD(overflow_without_low_items_keeps_everything);
	ADD(overflow_forces_level_2_and_releases);
	ADD(overflow_force_is_rederived_after_restart);
	ADD(overflow_follows_a_reload);
	ADD(overflow_pass_is_one_commit);
	ADD(decisions_survive_kill_9);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(review_it_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
