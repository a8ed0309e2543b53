/*
 * test_migrations: the schema contract (SCHEMA.md). A fresh DB has every
 * required table and column (listed literally here, not derived from the
 * migration), the indexes and keys the API relies on, and one
 * schema_migrations row per migration; re-opening applies nothing and keeps
 * data; a DB from a newer fuseboxd is refused with both versions named.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "migrations.h"
#include "store.h"

static char dir[64];
static char db_path[128];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fusebox-migr-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/fusebox.db", dir);
}

static void
teardown(void)
{
	char p[160];

	unlink(db_path);
	snprintf(p, sizeof(p), "%s-wal", db_path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db_path);
	unlink(p);
	rmdir(dir);
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Open and close a store: applies the migrations. */
static void
db_create(void)
{
	struct store *st = NULL;
	char *cause = NULL;

	ck_assert_int_eq(store_open(db_path, 16, &st, &cause), 0);
	ck_assert_ptr_null(cause);
	store_close(st);
}

static struct store_reader *
reader(void)
{
	struct store_reader *r = NULL;
	char *cause = NULL;

	ck_assert_int_eq(store_reader_open(db_path, &r, &cause), 0);
	ck_assert_ptr_null(cause);
	return r;
}

static const struct {
	const char *table;
	const char *columns[24];
} required[] = {
	{"calls",
	 {"id",	       "request_id", "route",	 "started_at",	"finished_at", "elapsed_ms",
	  "budget_ms", "level",	     "source",	 "backend",	"degraded",    "reason",
	  "attempts",  "confidence", "review",	 "http_status", "input",       "result",
	  "response",  "status",     "trace_id", NULL}},
	{"attempts", {"id",	    "call_id",	      "request_id",	  "route",
		      "backend",    "attempt_no",     "started_at",	  "timeout_ms",
		      "connect_ms", "first_byte_ms",  "total_ms",	  "http_status",
		      "outcome",    "retry_after_ms", "input_tokens",	  "output_tokens",
		      "raw_output", "span_id",	      "upstream_headers", NULL}},
	{"validation_failures",
	 {"id", "attempt_id", "call_id", "route", "stage", "rule", "detail", "raw_output", NULL}},
	{"degradations", {"id", "call_id", "route", "from_step", "to_step", "reason", "at", NULL}},
	{"events", {"id", "at", "kind", "subject", "detail", NULL}},
	{"reviews",
	 {"id",		"route",      "request_id", "call_id", "priority",	   "reason",
	  "state",	"created_at", "due_at",	    "input",   "raw_output",	   "result",
	  "confidence", "alt_result", "reviewer",   "verdict", "corrected_result", "note",
	  "decided_at", NULL}},
	{"jobs",
	 {"id", "request_id", "route", "state", "body", "created_at", "updated_at", "tries",
	  "response", NULL}},
	{"overrides", {"kind", "subject", "value", "actor", "reason", "until", "at", NULL}},
	{"audit",
	 {"id", "at", "actor", "action", "target", "before", "after", "remote", "action_id", NULL}},
	{"alerts", {"id", "rule", "route", "severity", "state", "value", "threshold", "at", NULL}},
	{"slo_minutes", {"route",	   "minute",
			 "total",	   "service_good",
			 "smart_good",	   "latency_ok",
			 "timeouts",	   "retries",
			 "attempts",	   "format_violations",
			 "src_llm",	   "src_backup",
			 "src_rules",	   "src_cache",
			 "src_preset",	   "src_manual",
			 "review_decided", "review_corrected",
			 "shadow_total",   "shadow_agree",
			 "cross_total",	   "cross_agree",
			 "no_llm",	   NULL}},
	{"cache", {"route", "key", "result", "confidence", "stored_at", NULL}},
	{"schema_migrations", {"version", "applied_at", NULL}},
};

START_TEST(test_tables_and_columns)
{
	struct store_reader *r;
	struct store_val v[2];
	size_t t;
	int c;
	int64_t n;

	db_create();
	r = reader();
	for (t = 0; t < sizeof(required) / sizeof(required[0]); t++) {
		for (c = 0; required[t].columns[c] != NULL; c++) {
			v[0] = SVT(required[t].table);
			v[1] = SVT(required[t].columns[c]);
			n = store_reader_int(r,
					     "SELECT count(*) FROM "
					     "pragma_table_info(?1) WHERE name = ?2",
					     v, 2, -1);
			ck_assert_msg(n == 1, "%s.%s missing", required[t].table,
				      required[t].columns[c]);
		}
	}
	store_reader_close(r);
}
END_TEST

/* An index on table over exactly these columns (comma list, in order). */
static int64_t
index_count(struct store_reader *r, const char *table, const char *cols, int unique)
{
	struct store_val v[3] = {SVT(table), SVT(cols), SVI(unique)};

	return store_reader_int(r,
				"SELECT count(*) FROM pragma_index_list(?1) "
				"AS il WHERE il.\"unique\" = ?3 AND (SELECT group_concat(name, "
				"',') FROM (SELECT name FROM pragma_index_info(il.name) ORDER BY "
				"seqno)) = ?2",
				v, 3, -1);
}

static char pk_cols[128];

static int
pk_row(void *arg, sqlite3_stmt *row)
{
	const unsigned char *s = sqlite3_column_text(row, 0);

	snprintf(pk_cols, sizeof(pk_cols), "%s", s != NULL ? (const char *)s : "");
	return 1;
}

static const char *
primary_key(struct store_reader *r, const char *table)
{
	struct store_val v = SVT(table);
	char *cause = NULL;

	pk_cols[0] = '\0';
	ck_assert_int_eq(
		store_reader_query(r,
				   "SELECT group_concat(name, ',') "
				   "FROM (SELECT name FROM pragma_table_info(?1) WHERE pk > 0 "
				   "ORDER BY pk)",
				   &v, 1, pk_row, NULL, &cause),
		0);
	return pk_cols;
}

START_TEST(test_indexes_and_keys)
{
	static const struct {
		const char *table, *cols;
		int unique;
	} idx[] = {
		{"calls", "route,request_id", 1},
		{"calls", "started_at", 0},
		{"calls", "request_id,id", 0},
		{"attempts", "call_id", 0},
		{"attempts", "started_at", 0},
		{"validation_failures", "call_id", 0},
		{"degradations", "call_id", 0},
		{"reviews", "state,due_at", 0},
		{"reviews", "route", 0},
		{"reviews", "request_id", 0},
		{"jobs", "state,created_at", 0},
		{"jobs", "request_id", 1},
		{"alerts", "at", 0},
		{"audit", "at", 0},
	};
	struct store_reader *r;
	size_t i;

	db_create();
	r = reader();
	for (i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
		ck_assert_msg(index_count(r, idx[i].table, idx[i].cols, idx[i].unique) >= 1,
			      "no %sindex on %s(%s)", idx[i].unique ? "unique " : "", idx[i].table,
			      idx[i].cols);
	}
	ck_assert_str_eq(primary_key(r, "overrides"), "kind,subject");
	ck_assert_str_eq(primary_key(r, "slo_minutes"), "route,minute");
	ck_assert_str_eq(primary_key(r, "cache"), "route,key");
	ck_assert_str_eq(primary_key(r, "schema_migrations"), "version");
	ck_assert_str_eq(primary_key(r, "calls"), "id");
	ck_assert_str_eq(primary_key(r, "attempts"), "id");
	store_reader_close(r);
}
END_TEST

START_TEST(test_schema_migrations_rows)
{
	struct store_reader *r;
	int64_t before, after, at;
	int i;

	before = wall_ms();
	db_create();
	after = wall_ms();
	r = reader();
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM "
					  "schema_migrations",
					  NULL, 0, -1),
			 migrations_count);
	for (i = 0; i < migrations_count; i++) {
		struct store_val v = SVI(migrations[i].version);

		at = store_reader_int(r,
				      "SELECT applied_at FROM "
				      "schema_migrations WHERE version = ?1",
				      &v, 1, -1);
		ck_assert_int_ge(at, before);
		ck_assert_int_le(at, after);
	}
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT version FROM "
					  "schema_migrations WHERE version = 1",
					  NULL, 0, -1),
			 1);
	ck_assert_int_eq(store_schema_version(r), store_known_version());
	store_reader_close(r);
}
END_TEST

START_TEST(test_reopen_keeps_data)
{
	struct store *st = NULL;
	struct store_reader *r;
	struct store_val v[4] = {SVI(1234), SVT("test"), SVT("kept"), SVT("across reopen")};
	struct store_op op = {STORE_EVENT_INSERT, v, 4};
	char *cause = NULL;
	int64_t applied;

	ck_assert_int_eq(store_open(db_path, 16, &st, &cause), 0);
	ck_assert_int_eq(store_commit_now(st, &op, 1, NULL, &cause), 0);
	store_close(st);
	r = reader();
	applied = store_reader_int(r,
				   "SELECT applied_at FROM "
				   "schema_migrations WHERE version = 1",
				   NULL, 0, -1);
	store_reader_close(r);

	st = NULL;
	ck_assert_int_eq(store_open(db_path, 16, &st, &cause), 0);
	ck_assert_ptr_null(cause);
	store_close(st);

	r = reader();
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM "
					  "schema_migrations",
					  NULL, 0, -1),
			 migrations_count);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT applied_at FROM "
					  "schema_migrations WHERE version = 1",
					  NULL, 0, -1),
			 applied);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM events "
					  "WHERE kind = 'test' AND subject = 'kept' AND at = 1234",
					  NULL, 0, -1),
			 1);
	store_reader_close(r);
}
END_TEST

START_TEST(test_newer_refused)
{
	struct store *st = NULL;
	sqlite3 *db = NULL;
	char *cause = NULL, known[32];
	int rc;

	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_exec(db,
			     "CREATE TABLE schema_migrations "
			     "(version INTEGER PRIMARY KEY, applied_at INTEGER); INSERT INTO "
			     "schema_migrations VALUES (999, 0)",
			     NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);

	rc = store_open(db_path, 16, &st, &cause);
	ck_assert_int_eq(rc, STORE_E_NEWER);
	ck_assert_ptr_null(st);
	ck_assert_ptr_nonnull(cause);
	ck_assert_ptr_nonnull(strstr(cause, "version 999 is newer"));
	snprintf(known, sizeof(known), "knows %d", store_known_version());
	ck_assert_ptr_nonnull(strstr(cause, known));
	ck_assert_ptr_nonnull(strstr(cause, "upgrade fuseboxd"));
	free(cause);
}
END_TEST

START_TEST(test_embedded_migrations)
{
	char prefix[16];
	int i;

	ck_assert_int_ge(migrations_count, 1);
	ck_assert_int_eq(migrations[0].version, 1);
	ck_assert_str_eq(migrations[0].name, "001_initial");
	ck_assert_ptr_nonnull(strstr(migrations[0].sql, "CREATE TABLE calls"));
	for (i = 0; i < migrations_count; i++) {
		snprintf(prefix, sizeof(prefix), "%03d_", migrations[i].version);
		ck_assert_int_eq(strncmp(migrations[i].name, prefix, strlen(prefix)), 0);
		if (i > 0)
			ck_assert_int_gt(migrations[i].version, migrations[i - 1].version);
	}
	ck_assert_int_eq(store_known_version(), migrations[migrations_count - 1].version);
}
END_TEST

static Suite *
migrations_suite(void)
{
	Suite *s = suite_create("migrations");
	TCase *tc;

#define TC(name, fn)                                                                               \
	do {                                                                                       \
		tc = tcase_create(name);                                                           \
		tcase_add_unchecked_fixture(tc, setup, teardown);                                  \
		tcase_add_test(tc, fn);                                                            \
		suite_add_tcase(s, tc);                                                            \
	} while (0)
	TC("tables_and_columns", test_tables_and_columns);
	TC("indexes_and_keys", test_indexes_and_keys);
	TC("schema_migrations_rows", test_schema_migrations_rows);
	TC("reopen_keeps_data", test_reopen_keeps_data);
	TC("newer_refused", test_newer_refused);
	TC("embedded_migrations", test_embedded_migrations);
#undef TC
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(migrations_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
