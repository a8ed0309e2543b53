/*
 * review_q: the review item state machine, SLA due times, the
 * per-route counts and the overflow decisions as pure functions with
 * literal clocks; then the one setter against a real store in a temporary
 * folder (it commits the change with its record rows, or changes nothing).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "harness.h"
#include "review_q.h"
#include "store.h"

/* ---- names ---- */

START_TEST(state_names_round_trip)
{
	enum review_state s;
	enum review_action a;
	enum priority p;
	int i;

	for (i = 0; i < REVIEW_STATE__COUNT; i++) {
		ck_assert_ptr_nonnull(review_state_name((enum review_state)i));
		ck_assert_int_eq(review_state_parse(review_state_name((enum review_state)i), &s),
				 0);
		ck_assert_int_eq(s, i);
	}
	ck_assert_str_eq(review_state_name(REVIEW_PENDING), "pending");
	ck_assert_str_eq(review_state_name(REVIEW_CLAIMED), "claimed");
	ck_assert_str_eq(review_state_name(REVIEW_APPROVED), "approved");
	ck_assert_str_eq(review_state_name(REVIEW_CORRECTED), "corrected");
	ck_assert_str_eq(review_state_name(REVIEW_REJECTED), "rejected");
	ck_assert_ptr_null(review_state_name(REVIEW_STATE__COUNT));
	ck_assert_int_eq(review_state_parse("decided", &s), -EINVAL);
	ck_assert_int_eq(review_state_parse(NULL, &s), -EINVAL);

	ck_assert_int_eq(review_action_parse("approve", &a), 0);
	ck_assert_int_eq(a, REVIEW_APPROVE);
	ck_assert_int_eq(review_action_parse("correct", &a), 0);
	ck_assert_int_eq(a, REVIEW_CORRECT);
	ck_assert_int_eq(review_action_parse("reject", &a), 0);
	ck_assert_int_eq(a, REVIEW_REJECT);
	ck_assert_int_eq(review_action_parse("approved", &a), -EINVAL);
	ck_assert_str_eq(review_action_name(REVIEW_CLAIM), "claim");

	ck_assert_int_eq(review_priority_parse("low", &p), 0);
	ck_assert_int_eq(p, PRIORITY_LOW);
	ck_assert_int_eq(review_priority_parse("urgent", &p), -EINVAL);

	ck_assert(!review_state_decided(REVIEW_PENDING));
	ck_assert(!review_state_decided(REVIEW_CLAIMED));
	ck_assert(review_state_decided(REVIEW_APPROVED));
	ck_assert(review_state_decided(REVIEW_CORRECTED));
	ck_assert(review_state_decided(REVIEW_REJECTED));
}
END_TEST

/* ---- the state machine ---- */

struct tr_case {
	enum review_state from;
	const char *holder;
	const char *actor;
	enum review_action act;
	int rc;
	enum review_state to;
};

static const struct tr_case tr_cases[] = {
	/* pending: claim, or decide directly */
	{REVIEW_PENDING, NULL, "alice", REVIEW_CLAIM, 0, REVIEW_CLAIMED},
	{REVIEW_PENDING, NULL, "alice", REVIEW_APPROVE, 0, REVIEW_APPROVED},
	{REVIEW_PENDING, NULL, "alice", REVIEW_CORRECT, 0, REVIEW_CORRECTED},
	{REVIEW_PENDING, NULL, "alice", REVIEW_REJECT, 0, REVIEW_REJECTED},
	/* claimed: the holder may re-claim (no change) and decide */
	{REVIEW_CLAIMED, "alice", "alice", REVIEW_CLAIM, 0, REVIEW_CLAIMED},
	{REVIEW_CLAIMED, "alice", "alice", REVIEW_APPROVE, 0, REVIEW_APPROVED},
	{REVIEW_CLAIMED, "alice", "alice", REVIEW_CORRECT, 0, REVIEW_CORRECTED},
	{REVIEW_CLAIMED, "alice", "alice", REVIEW_REJECT, 0, REVIEW_REJECTED},
	/* ... anybody else gets a conflict */
	{REVIEW_CLAIMED, "alice", "bob", REVIEW_CLAIM, REVIEW_Q_E_CLAIMED, 0},
	{REVIEW_CLAIMED, "alice", "bob", REVIEW_APPROVE, REVIEW_Q_E_CLAIMED, 0},
	{REVIEW_CLAIMED, "alice", "bob", REVIEW_CORRECT, REVIEW_Q_E_CLAIMED, 0},
	{REVIEW_CLAIMED, "alice", "bob", REVIEW_REJECT, REVIEW_Q_E_CLAIMED, 0},
	{REVIEW_CLAIMED, NULL, "bob", REVIEW_APPROVE, REVIEW_Q_E_CLAIMED, 0},
	/* decided is final, whoever asks */
	{REVIEW_APPROVED, "alice", "alice", REVIEW_APPROVE, REVIEW_Q_E_DECIDED, 0},
	{REVIEW_APPROVED, "alice", "bob", REVIEW_CLAIM, REVIEW_Q_E_DECIDED, 0},
	{REVIEW_CORRECTED, "alice", "alice", REVIEW_REJECT, REVIEW_Q_E_DECIDED, 0},
	{REVIEW_REJECTED, "alice", "bob", REVIEW_CORRECT, REVIEW_Q_E_DECIDED, 0},
	{REVIEW_REJECTED, NULL, "bob", REVIEW_CLAIM, REVIEW_Q_E_DECIDED, 0},
};

START_TEST(transition_table)
{
	const struct tr_case *c = &tr_cases[_i];
	enum review_state to = REVIEW_STATE__COUNT;
	int rc = review_transition(c->from, c->holder, c->actor, c->act, &to);

	ck_assert_msg(rc == c->rc, "case %d: rc %d, want %d", _i, rc, c->rc);
	if (c->rc == 0)
		ck_assert_msg(to == c->to, "case %d: to %s, want %s", _i, review_state_name(to),
			      review_state_name(c->to));
	else
		ck_assert_int_eq(to, REVIEW_STATE__COUNT);
}
END_TEST

START_TEST(transition_rejects_out_of_range)
{
	enum review_state to;

	ck_assert_int_eq(review_transition(REVIEW_PENDING, NULL, "a", REVIEW_ACTION__COUNT, &to),
			 -EINVAL);
	ck_assert_int_eq(review_transition(REVIEW_STATE__COUNT, NULL, "a", REVIEW_CLAIM, &to),
			 -EINVAL);
}
END_TEST

/* ---- priority, SLA, overdue, sampling ---- */

static struct review_cfg
rcfg(enum priority p, double sample_rate)
{
	struct review_cfg rv;

	memset(&rv, 0, sizeof rv);
	rv.sample_rate = sample_rate;
	rv.priority = p;
	rv.sla_s[PRIORITY_HIGH] = 900;
	rv.sla_s[PRIORITY_MEDIUM] = 7200;
	rv.sla_s[PRIORITY_LOW] = 86400;
	rv.capacity = 1000;
	rv.overflow = OVERFLOW_AUTO_ACCEPT_LOW;
	return rv;
}

START_TEST(priority_from_reason)
{
	struct review_cfg rv = rcfg(PRIORITY_LOW, 0);

	ck_assert_int_eq(review_priority_for(&rv, "manual"), PRIORITY_HIGH);
	ck_assert_int_eq(review_priority_for(&rv, "low_confidence"), PRIORITY_LOW);
	ck_assert_int_eq(review_priority_for(&rv, "sampled"), PRIORITY_LOW);
	ck_assert_int_eq(review_priority_for(&rv, "cross_check_mismatch"), PRIORITY_LOW);
	rv.priority = PRIORITY_MEDIUM;
	ck_assert_int_eq(review_priority_for(&rv, "low_confidence"), PRIORITY_MEDIUM);
}
END_TEST

START_TEST(due_at_from_sla)
{
	struct review_cfg rv = rcfg(PRIORITY_MEDIUM, 0);
	const int64_t t0 = 1795996800000LL; /* 2026-11-30T00:00:00Z */

	ck_assert_int_eq(review_due_at(&rv, PRIORITY_HIGH, t0), t0 + 900000);
	ck_assert_int_eq(review_due_at(&rv, PRIORITY_MEDIUM, t0), t0 + 7200000);
	ck_assert_int_eq(review_due_at(&rv, PRIORITY_LOW, t0), t0 + 86400000);
	rv.sla_s[PRIORITY_HIGH] = 1;
	ck_assert_int_eq(review_due_at(&rv, PRIORITY_HIGH, 5), 1005);
	/* the seconds are 64-bit safe: a year of SLA */
	rv.sla_s[PRIORITY_LOW] = 31536000;
	ck_assert_int_eq(review_due_at(&rv, PRIORITY_LOW, t0), t0 + 31536000000LL);
}
END_TEST

START_TEST(overdue_only_while_open)
{
	ck_assert(!review_is_overdue(REVIEW_PENDING, 1000, 999));
	ck_assert(review_is_overdue(REVIEW_PENDING, 1000, 1000));
	ck_assert(review_is_overdue(REVIEW_CLAIMED, 1000, 5000));
	ck_assert(!review_is_overdue(REVIEW_APPROVED, 1000, 5000));
	ck_assert(!review_is_overdue(REVIEW_CORRECTED, 1000, 5000));
	ck_assert(!review_is_overdue(REVIEW_REJECTED, 1000, 5000));
}
END_TEST

/* ---- counts ---- */

START_TEST(counts_follow_the_items)
{
	struct review_counts c;

	memset(&c, 0, sizeof c);
	review_counts_move(&c, PRIORITY_LOW, REVIEW_STATE__COUNT, REVIEW_PENDING);
	review_counts_move(&c, PRIORITY_LOW, REVIEW_STATE__COUNT, REVIEW_PENDING);
	review_counts_move(&c, PRIORITY_HIGH, REVIEW_STATE__COUNT, REVIEW_PENDING);
	ck_assert_int_eq(c.open, 3);
	ck_assert_int_eq(c.pending[PRIORITY_LOW], 2);
	ck_assert_int_eq(c.pending[PRIORITY_HIGH], 1);
	review_counts_move(&c, PRIORITY_LOW, REVIEW_PENDING, REVIEW_CLAIMED);
	ck_assert_int_eq(c.open, 3);
	ck_assert_int_eq(c.pending[PRIORITY_LOW], 1);
	ck_assert_int_eq(c.claimed[PRIORITY_LOW], 1);
	review_counts_move(&c, PRIORITY_LOW, REVIEW_CLAIMED, REVIEW_CORRECTED);
	ck_assert_int_eq(c.open, 2);
	ck_assert_int_eq(c.claimed[PRIORITY_LOW], 0);
	review_counts_move(&c, PRIORITY_HIGH, REVIEW_PENDING, REVIEW_REJECTED);
	review_counts_move(&c, PRIORITY_LOW, REVIEW_PENDING, REVIEW_APPROVED);
	ck_assert_int_eq(c.open, 0);
	ck_assert_int_eq(c.pending[PRIORITY_LOW], 0);
	ck_assert_int_eq(c.pending[PRIORITY_HIGH], 0);
	/* no change, bad priority: nothing moves */
	review_counts_move(&c, PRIORITY_LOW, REVIEW_APPROVED, REVIEW_APPROVED);
	review_counts_move(&c, PRIORITY__COUNT, REVIEW_STATE__COUNT, REVIEW_PENDING);
	ck_assert_int_eq(c.open, 0);
}
END_TEST

/* ---- overflow decisions ---- */

struct ov_case {
	struct review_overflow_in in;
	enum review_overflow_act act;
	int accept;
};

#define AAL OVERFLOW_AUTO_ACCEPT_LOW
#define FL2 OVERFLOW_FORCE_L2

static const struct ov_case ov_cases[] = {
	/* auto_accept_low: at capacity is fine; over it, accept the excess */
	{{AAL, 2, 2, 2, 0, 0}, REVIEW_OVERFLOW_NONE, 0},
	{{AAL, 2, 3, 3, 0, 0}, REVIEW_OVERFLOW_ACCEPT_LOW, 1},
	{{AAL, 2, 5, 4, 0, 0}, REVIEW_OVERFLOW_ACCEPT_LOW, 3},
	/* ... but never more than there are low items */
	{{AAL, 2, 5, 1, 0, 0}, REVIEW_OVERFLOW_ACCEPT_LOW, 1},
	/* ... and none: keep every item */
	{{AAL, 2, 3, 0, 0, 0}, REVIEW_OVERFLOW_KEEP, 0},
	{{AAL, 1000, 0, 0, 0, 0}, REVIEW_OVERFLOW_NONE, 0},
	/* force_l2: over capacity forces L2 */
	{{FL2, 2, 2, 0, 0, 0}, REVIEW_OVERFLOW_NONE, 0},
	{{FL2, 2, 3, 3, 0, 0}, REVIEW_OVERFLOW_FORCE_L2, 0},
	/* ... once */
	{{FL2, 2, 4, 0, 1, 0}, REVIEW_OVERFLOW_NONE, 0},
	/* ... an operator's forced level is left alone */
	{{FL2, 2, 3, 0, 0, 1}, REVIEW_OVERFLOW_KEEP, 0},
	{{FL2, 2, 1, 0, 0, 1}, REVIEW_OVERFLOW_NONE, 0},
	/* ... released below capacity, not at it */
	{{FL2, 2, 2, 0, 1, 0}, REVIEW_OVERFLOW_NONE, 0},
	{{FL2, 2, 1, 0, 1, 0}, REVIEW_OVERFLOW_RELEASE_L2, 0},
	{{FL2, 2, 0, 0, 1, 0}, REVIEW_OVERFLOW_RELEASE_L2, 0},
	/* a force left by force_l2 after the policy changed (reload) is released */
	{{AAL, 2, 0, 0, 1, 0}, REVIEW_OVERFLOW_RELEASE_L2, 0},
	{{AAL, 2, 5, 4, 1, 0}, REVIEW_OVERFLOW_RELEASE_L2, 0},
};

START_TEST(overflow_plan_table)
{
	const struct ov_case *c = &ov_cases[_i];
	struct review_overflow_plan p;

	review_overflow_plan(&c->in, &p);
	ck_assert_msg(p.act == c->act, "case %d: act %d, want %d", _i, p.act, c->act);
	ck_assert_msg(p.accept == c->accept, "case %d: accept %d, want %d", _i, p.accept,
		      c->accept);
}
END_TEST

/* ---- the setter against a real store ---- */

static char *dir;
static char db_path[512];

static void
store_setup(void)
{
	dir = harness_tmpdir();
	snprintf(db_path, sizeof db_path, "%s/review.db", dir);
}

static void
store_teardown(void)
{
	char p[600];

	unlink(db_path);
	snprintf(p, sizeof p, "%s-wal", db_path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", db_path);
	unlink(p);
	rmdir(dir);
	free(dir);
	dir = NULL;
}

static struct config *
two_routes(void)
{
	static const char *json =
		"{\"backends\":[{\"name\":\"b1\",\"url\":\"http://127.0.0.1:9/"
		"x\",\"model\":\"m\"}],"
		"\"routes\":[{\"name\":\"r1\",\"targets\":[{\"backend\":\"b1\"}]},"
		"{\"name\":\"r2\",\"targets\":[{\"backend\":\"b1\"}]}]}";
	struct config *c = NULL;
	char *cause = NULL;
	int rc = config_load_string(json, NULL, &c, &cause);

	ck_assert_msg(rc == 0, "config: %s", cause ? cause : "?");
	return c;
}

/* Insert a pending item of route with priority; returns its id. */
static int64_t
insert_item(struct store *st, const char *route, enum priority p)
{
	struct store_val v[] = {SVN,
				SVT(route),
				SVT("req-1"),
				SVI(1),
				SVI(p),
				SVT("low_confidence"),
				SVT("pending"),
				SVI(1000),
				SVI(2000),
				SVT("hello"),
				SVT("raw"),
				SVT("{\"a\":1}"),
				SVR(0.4),
				SVN};
	struct store_op op = {STORE_REVIEW_INSERT, v, (int)(sizeof v / sizeof v[0])};
	int64_t id = 0;
	char *cause = NULL;

	ck_assert_int_eq(store_commit_now(st, &op, 1, &id, &cause), 0);
	return id;
}

static struct review_item
pending_item(int64_t id, const char *route, enum priority p)
{
	struct review_item it;

	memset(&it, 0, sizeof it);
	it.id = id;
	it.route = strdup(route);
	it.priority = p;
	it.state = REVIEW_PENDING;
	return it;
}

START_TEST(setter_commits_with_its_record_rows)
{
	struct config *cfg = two_routes();
	struct review_q *q = review_q_new(cfg);
	struct store *st = NULL;
	struct store_stats stats;
	struct review_item it;
	char *cause = NULL, *s;
	int64_t id;
	uint64_t commits;

	ck_assert_int_eq(store_open(db_path, 64, &st, &cause), 0);
	id = insert_item(st, "r2", PRIORITY_LOW);
	it = pending_item(id, "r2", PRIORITY_LOW);
	review_counts_move((struct review_counts *)review_q_route_counts(q, 1), PRIORITY_LOW,
			   REVIEW_STATE__COUNT, REVIEW_PENDING);

	/* pending -> claimed, with an audit row in the same transaction */
	{
		struct review_change ch = {.to = REVIEW_CLAIMED, .reviewer = "alice", .why = "t"};
		struct store_val av[] = {SVI(5), SVT("alice"), SVT("review.claim"), SVT("review:1"),
					 SVN,	 SVN,	       SVT("127.0.0.1")};
		struct store_op op = {STORE_AUDIT_INSERT, av, 7};

		ck_assert_int_eq(review_q_set_state(q, st, &it, &ch, &op, 1, &cause), 0);
	}
	ck_assert_int_eq(it.state, REVIEW_CLAIMED);
	ck_assert_str_eq(it.reviewer, "alice");
	ck_assert_int_eq(review_q_route_counts(q, 1)->claimed[PRIORITY_LOW], 1);
	ck_assert_int_eq(review_q_route_counts(q, 1)->pending[PRIORITY_LOW], 0);
	ck_assert_int_eq(review_q_route_counts(q, 1)->open, 1);
	ck_assert_int_eq(review_q_route_counts(q, 0)->open, 0);
	s = db_scalar_text(db_path, "SELECT state || ',' || reviewer FROM reviews");
	ck_assert_str_eq(s, "claimed,alice");
	free(s);
	ck_assert_int_eq(db_scalar_int(db_path, "SELECT count(*) FROM audit WHERE "
						"action = 'review.claim'"),
			 1);

	/* no change: nothing committed */
	store_get_stats(st, &stats);
	commits = stats.sync_commits;
	{
		struct review_change ch = {.to = REVIEW_CLAIMED, .reviewer = "alice"};

		ck_assert_int_eq(review_q_set_state(q, st, &it, &ch, NULL, 0, &cause), 0);
	}
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.sync_commits, commits);

	/* claimed -> corrected */
	{
		struct review_change ch = {.to = REVIEW_CORRECTED,
					   .reviewer = "alice",
					   .verdict = "correct",
					   .corrected_result = "{\"a\":2}",
					   .note = "was wrong",
					   .decided_at = 7000,
					   .why = "t"};

		ck_assert_int_eq(review_q_set_state(q, st, &it, &ch, NULL, 0, &cause), 0);
	}
	ck_assert_int_eq(review_q_route_counts(q, 1)->open, 0);
	ck_assert_int_eq(review_q_route_counts(q, 1)->claimed[PRIORITY_LOW], 0);
	s = db_scalar_text(db_path, "SELECT state || ',' || verdict || ',' || corrected_result || "
				    "',' || note || ',' || decided_at FROM reviews");
	ck_assert_str_eq(s, "corrected,correct,{\"a\":2},was wrong,7000");
	free(s);
	ck_assert_int_eq(it.decided_at, 7000);
	ck_assert_str_eq(it.note, "was wrong");

	review_item_clear(&it);
	store_close(st);
	review_q_free(q);
	config_free(cfg);
}
END_TEST

START_TEST(setter_failure_changes_nothing)
{
	struct config *cfg = two_routes();
	struct review_q *q = review_q_new(cfg);
	struct store *st = NULL;
	struct review_item it;
	char *cause = NULL, *s;
	int64_t id;

	ck_assert_int_eq(store_open(db_path, 64, &st, &cause), 0);
	id = insert_item(st, "r1", PRIORITY_HIGH);
	it = pending_item(id, "r1", PRIORITY_HIGH);
	review_counts_move((struct review_counts *)review_q_route_counts(q, 0), PRIORITY_HIGH,
			   REVIEW_STATE__COUNT, REVIEW_PENDING);
	/* the audit row fails (NOT NULL action): the UPDATE is rolled back with it */
	{
		struct review_change ch = {.to = REVIEW_APPROVED,
					   .reviewer = "bob",
					   .verdict = "approve",
					   .decided_at = 9};
		struct store_val av[] = {SVI(5), SVT("bob"), SVN};
		struct store_op op = {STORE_AUDIT_INSERT, av, 3};

		ck_assert_int_eq(review_q_set_state(q, st, &it, &ch, &op, 1, &cause),
				 REVIEW_Q_E_STORE);
		ck_assert_ptr_nonnull(cause);
		free(cause);
		cause = NULL;
	}
	ck_assert_int_eq(it.state, REVIEW_PENDING);
	ck_assert_ptr_null(it.reviewer);
	ck_assert_int_eq(review_q_route_counts(q, 0)->open, 1);
	s = db_scalar_text(db_path, "SELECT state FROM reviews");
	ck_assert_str_eq(s, "pending");
	free(s);
	/* too many record rows: refused before the store is asked */
	{
		struct review_change ch = {.to = REVIEW_REJECTED, .reviewer = "bob"};
		struct store_op ops[8];

		memset(ops, 0, sizeof ops);
		ck_assert_int_eq(review_q_set_state(q, st, &it, &ch, ops, 8, &cause), -EINVAL);
		free(cause);
	}
	ck_assert_int_eq(it.state, REVIEW_PENDING);
	review_item_clear(&it);
	store_close(st);
	review_q_free(q);
	config_free(cfg);
}
END_TEST

START_TEST(item_json_shape)
{
	struct review_item it;
	cJSON *o;
	char *s;

	memset(&it, 0, sizeof it);
	it.id = 12;
	it.route = strdup("intent");
	it.request_id = strdup("req-9");
	it.priority = PRIORITY_HIGH;
	it.reason = strdup("manual");
	it.state = REVIEW_CLAIMED;
	it.created_at = 1795996800000LL;
	it.due_at = 1795996800000LL + 900000;
	it.input = strdup("hi");
	it.result = strdup("{\"intent\":\"refund\"}");
	it.reviewer = strdup("alice");
	o = review_item_json(&it, it.due_at);
	s = cJSON_PrintUnformatted(o);
	ck_assert_str_eq(s, "{\"id\":12,\"route\":\"intent\",\"request_id\":\"req-9\","
			    "\"priority\":\"high\",\"reason\":\"manual\",\"state\":\"claimed\","
			    "\"created_at\":\"2026-11-30T00:00:00.000Z\","
			    "\"due_at\":\"2026-11-30T00:15:00.000Z\",\"overdue\":true,"
			    "\"input\":\"hi\",\"raw_output\":null,\"result\":{\"intent\":"
			    "\"refund\"},\"confidence\":null,\"alt_result\":null,"
			    "\"reviewer\":\"alice\",\"decision_at\":null,\"verdict\":null,"
			    "\"corrected_result\":null,\"note\":null}");
	free(s);
	cJSON_Delete(o);
	o = review_item_json(&it, it.due_at - 1);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "overdue")));
	cJSON_Delete(o);
	review_item_clear(&it);
}
END_TEST

static Suite *
review_suite(void)
{
	Suite *s = suite_create("review");
	TCase *tc;

	tc = tcase_create("names");
	tcase_add_test(tc, state_names_round_trip);
	suite_add_tcase(s, tc);
	tc = tcase_create("state_machine");
	tcase_add_loop_test(tc, transition_table, 0, (int)(sizeof tr_cases / sizeof tr_cases[0]));
	tcase_add_test(tc, transition_rejects_out_of_range);
	suite_add_tcase(s, tc);
	tc = tcase_create("sla");
	tcase_add_test(tc, priority_from_reason);
	tcase_add_test(tc, due_at_from_sla);
	tcase_add_test(tc, overdue_only_while_open);
	suite_add_tcase(s, tc);
	tc = tcase_create("counts");
	tcase_add_test(tc, counts_follow_the_items);
	suite_add_tcase(s, tc);
	tc = tcase_create("overflow");
	tcase_add_loop_test(tc, overflow_plan_table, 0,
			    (int)(sizeof ov_cases / sizeof ov_cases[0]));
	suite_add_tcase(s, tc);
	tc = tcase_create("setter");
	tcase_add_checked_fixture(tc, store_setup, store_teardown);
	tcase_add_test(tc, setter_commits_with_its_record_rows);
	tcase_add_test(tc, setter_failure_changes_nothing);
	suite_add_tcase(s, tc);
	tc = tcase_create("json");
	tcase_add_test(tc, item_json_shape);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(review_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
