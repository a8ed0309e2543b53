/*
 * test_control: the route level's state machine through its one writer,
 * control_level_set(), on a daemon built by daemon_create() (no loop
 * thread: the test is the engine thread). Every way a forced level
 * changes — an operator's force and release, the TTL expiry of the cron
 * hook, the restore at start, the review overflow's set — and what each
 * leaves behind: the runtime fields, the effective level, the events and
 * overrides rows. Wall times are literals where the API takes them.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "clock.h"
#include "config.h"
#include "control.h"
#include "daemon.h"
#include "engine.h"
#include "harness.h"
#include "store.h"
#include "util.h"

struct fixture {
	char *dir;
	char *db;
	struct store *st;
	struct engine *e;
};

/* One backend (never called: no loop runs) and one route with rules. */
static struct config *
config_for(const struct fixture *f)
{
	struct config *cfg = NULL;
	char *cause = NULL;
	char *json = xasprintf(
		"{\"database\": \"%s\","
		" \"backends\": [{\"name\": \"m\", \"url\": \"http://127.0.0.1:9/v1\","
		"   \"model\": \"m1\"}],"
		" \"routes\": [{\"name\": \"intent\", \"targets\": [{\"backend\": \"m\"}],"
		"   \"rules\": {\"default\": {\"result\": {\"intent\": \"other\"}}}}]}",
		f->db);

	ck_assert_msg(config_load_string(json, f->dir, &cfg, &cause) == 0, "config: %s",
		      cause ? cause : "?");
	free(json);
	return cfg;
}

static void
fixture_up(struct fixture *f)
{
	struct config *cfg;
	char *cause = NULL;
	int r;

	f->dir = harness_tmpdir();
	f->db = xasprintf("%s/fusebox.db", f->dir);
	cfg = config_for(f);
	r = store_open(f->db, 1000, &f->st, &cause);
	ck_assert_msg(r == 0, "store_open: %s", cause ? cause : "?");
	r = daemon_create(cfg, f->st, &f->e, &cause);
	ck_assert_msg(r == 0, "daemon_create: %s", cause ? cause : "?");
	free(cause);
}

static void
fixture_down(struct fixture *f)
{
	daemon_free(f->e);
	store_close(f->st);
	free(f->db);
	free(f->dir);
}

/* Rows of table matching where, after the writer has written what was queued. */
static long long
rows(struct fixture *f, const char *table, const char *where)
{
	char *sql = xasprintf("SELECT count(*) FROM %s WHERE %s", table, where);
	long long n;

	store_flush(f->st);
	n = db_scalar_int(f->db, sql);
	free(sql);
	return n;
}

static const struct control_who alice = {"alice", "127.0.0.1"};

START_TEST(force_and_release_go_through_the_setter)
{
	struct fixture f;
	struct route_rt *rt;
	char *cause = NULL;

	fixture_up(&f);
	rt = &f.e->routes[0];
	ck_assert_int_eq(rt->forced_level, -1);
	ck_assert_int_eq(engine_route_level(f.e, 0), 0);

	ck_assert_int_eq(control_level_force(f.e, 0, 2, "vendor outage", 0, &alice, &cause), 0);
	ck_assert_int_eq(rt->forced_level, 2);
	ck_assert_str_eq(rt->forced_actor, "alice");
	ck_assert_str_eq(rt->forced_reason, "vendor outage");
	ck_assert_int_eq(rt->forced_until_wall, 0);
	ck_assert_int_eq(engine_route_forced(f.e, 0), 2);
	ck_assert_int_eq(engine_route_level(f.e, 0), 2);
	/* The event went with the override in the operator's transaction. */
	ck_assert_int_eq(rows(&f, "events",
			      "kind = 'level' AND subject = 'intent' AND detail ="
			      " 'L0 -> forced L2 by alice: vendor outage'"),
			 1);
	ck_assert_int_eq(rows(&f, "overrides", "kind = 'level' AND subject = 'intent'"), 1);

	ck_assert_int_eq(control_level_release(f.e, 0, &alice, &cause), 0);
	ck_assert_int_eq(rt->forced_level, -1);
	ck_assert_ptr_null(rt->forced_actor);
	ck_assert_ptr_null(rt->forced_reason);
	ck_assert_int_eq(engine_route_level(f.e, 0), 0);
	ck_assert_int_eq(rows(&f, "events",
			      "kind = 'level' AND detail ="
			      " 'forced L2 -> auto L0 (released by alice)'"),
			 1);
	ck_assert_int_eq(rows(&f, "overrides", "kind = 'level'"), 0);

	/* A release of nothing is audited but changes no level: no event. */
	ck_assert_int_eq(control_level_release(f.e, 0, &alice, &cause), 0);
	ck_assert_int_eq(rows(&f, "events", "kind = 'level'"), 2);
	ck_assert_int_eq(rows(&f, "audit", "action = 'level.release'"), 2);

	/* Refused values change nothing. */
	ck_assert_int_eq(control_level_force(f.e, 0, 4, "x", 0, &alice, &cause), CONTROL_E_INVALID);
	free(cause);
	cause = NULL;
	ck_assert_int_eq(control_level_force(f.e, 0, 1, "", 0, &alice, &cause), CONTROL_E_INVALID);
	free(cause);
	ck_assert_int_eq(rt->forced_level, -1);
	fixture_down(&f);
}
END_TEST

START_TEST(ttl_expiry_is_the_ticks_write)
{
	struct fixture f;
	struct route_rt *rt;
	const struct control_level past = {1, "bob", "probe", 1000, NULL};
	int64_t until;
	char *cause = NULL;

	fixture_up(&f);
	rt = &f.e->routes[0];

	/* A force whose TTL lies in the past (wall ms 1000) stays in force for
	 * the getters, which write nothing, until the tick ends it: what the
	 * API shows never runs ahead of the events. */
	control_level_set(f.e, 0, &past, CONTROL_EVENT_NONE, 500);
	ck_assert_int_eq(rt->forced_level, 1);
	ck_assert_int_eq(engine_route_forced(f.e, 0), 1);
	ck_assert_int_eq(engine_route_level(f.e, 0), 1);
	{
		cJSON *j = control_forced_json(f.e, 0);

		ck_assert(!cJSON_IsNull(j));
		cJSON_Delete(j);
	}
	ck_assert_int_eq(rows(&f, "events", "kind = 'level'"), 0);

	/* The cron hook: before the TTL nothing happens ... */
	control_level_tick(f.e, NULL, 0, 999);
	ck_assert_int_eq(rt->forced_level, 1);
	ck_assert_int_eq(rows(&f, "events", "kind = 'level'"), 0);
	/* ... at it, the fields clear and the event is written. */
	control_level_tick(f.e, NULL, 0, 1000);
	ck_assert_int_eq(rt->forced_level, -1);
	ck_assert_int_eq(engine_route_level(f.e, 0), 0);
	ck_assert_ptr_null(rt->forced_actor);
	ck_assert_int_eq(rt->forced_until_wall, 0);
	ck_assert_int_eq(rows(&f, "events",
			      "kind = 'level' AND at = 1000 AND detail ="
			      " 'forced level 1 expired (ttl) -> auto 0'"),
			 1);
	/* A second tick finds nothing to do. */
	control_level_tick(f.e, NULL, 0, 5000);
	ck_assert_int_eq(rows(&f, "events", "kind = 'level'"), 1);

	/* An operator's force with a TTL: its override row goes at expiry. */
	ck_assert_int_eq(control_level_force(f.e, 0, 2, "maintenance", 60, &alice, &cause), 0);
	until = rt->forced_until_wall;
	ck_assert(until > clock_wall_ms());
	ck_assert_int_eq(rows(&f, "overrides", "kind = 'level'"), 1);
	control_level_tick(f.e, NULL, 0, until);
	ck_assert_int_eq(rt->forced_level, -1);
	ck_assert_int_eq(rows(&f, "overrides", "kind = 'level'"), 0);
	fixture_down(&f);
}
END_TEST

START_TEST(set_writes_its_event_as_told)
{
	struct fixture f;
	const struct control_level on = {2, "review_overflow", "review queue over capacity (6 > 5)",
					 0, "L0 -> forced L2 by review_overflow: over"};
	const struct control_level off = {-1, NULL, NULL, 0, "forced L2 -> auto L0"};
	const struct control_level quiet = {1, "carol", "restored", 0, "not written"};

	fixture_up(&f);
	control_level_set(f.e, 0, &on, CONTROL_EVENT_WRITE, 7000);
	ck_assert_int_eq(engine_route_level(f.e, 0), 2);
	ck_assert_str_eq(f.e->routes[0].forced_actor, "review_overflow");
	ck_assert_int_eq(rows(&f, "events",
			      "kind = 'level' AND at = 7000 AND detail ="
			      " 'L0 -> forced L2 by review_overflow: over'"),
			 1);
	control_level_set(f.e, 0, &off, CONTROL_EVENT_WRITE, 8000);
	ck_assert_int_eq(engine_route_level(f.e, 0), 0);
	ck_assert_int_eq(rows(&f, "events", "kind = 'level' AND at = 8000"), 1);
	/* The restore and a caller that committed the event itself: none here. */
	control_level_set(f.e, 0, &quiet, CONTROL_EVENT_NONE, 9000);
	control_level_set(f.e, 0, &off, CONTROL_EVENT_COMMITTED, 9500);
	ck_assert_int_eq(rows(&f, "events", "kind = 'level'"), 2);
	ck_assert_int_eq(f.e->routes[0].forced_level, -1);
	fixture_down(&f);
}
END_TEST

START_TEST(restore_reapplies_and_drops_expired)
{
	struct fixture f;
	char *cause = NULL;

	fixture_up(&f);
	ck_assert_int_eq(control_level_force(f.e, 0, 2, "kept across a restart", 0, &alice, &cause),
			 0);
	daemon_free(f.e);
	f.e = NULL;
	ck_assert_int_eq(daemon_create(config_for(&f), f.st, &f.e, &cause), 0);
	ck_assert_int_eq(f.e->routes[0].forced_level, 2);
	ck_assert_str_eq(f.e->routes[0].forced_reason, "kept across a restart");
	ck_assert_int_eq(engine_route_level(f.e, 0), 2);
	/* The restore writes no level event of its own. */
	ck_assert_int_eq(rows(&f, "events", "kind = 'level'"), 1);
	fixture_down(&f);
}
END_TEST

static Suite *
control_suite(void)
{
	Suite *s = suite_create("control");
	TCase *tc = tcase_create("route level");

	tcase_add_test(tc, force_and_release_go_through_the_setter);
	tcase_add_test(tc, ttl_expiry_is_the_ticks_write);
	tcase_add_test(tc, set_writes_its_event_as_told);
	tcase_add_test(tc, restore_reapplies_and_drops_expired);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(control_suite());
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
