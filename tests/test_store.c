/*
 * test_store: the writer thread and the readers. Async rows land after a
 * flush, in few batches, and on their own after 50 ms; commit-now is
 * visible on return, all-or-nothing, and survives SIGKILL; a full queue
 * drops and reports; close flushes; retention deletes only old rows; every
 * statement binds its documented column order; every named read query
 * runs, and those served by a key search an index; a reader's deadline
 * cuts a slow query; log rows' long texts are cut and marked; every lost
 * row is counted and told; the files are private. Each test works in a
 * fresh directory under /tmp.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

static char dir[64];
static char db_path[128];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fusebox-store-XXXXXX");
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

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static struct store *
open_store(int cap)
{
	struct store *st = NULL;
	char *cause = NULL;
	int rc;

	rc = store_open(db_path, cap, &st, &cause);
	ck_assert_msg(rc == 0, "store_open: %d %s", rc, cause);
	return st;
}

static struct store_reader *
open_reader(void)
{
	struct store_reader *r = NULL;
	char *cause = NULL;

	ck_assert_int_eq(store_reader_open(db_path, &r, &cause), 0);
	return r;
}

/* A fresh reader connection, one query, closed again. */
static int64_t
count(const char *sql)
{
	struct store_reader *r = open_reader();
	int64_t n;

	n = store_reader_int(r, sql, NULL, 0, -1);
	store_reader_close(r);
	return n;
}

static void
put_event(struct store *st, int64_t at, const char *kind)
{
	struct store_val v[4] = {SVI(at), SVT(kind), SVT("subj"), SVT("detail")};

	ck_assert_int_eq(store_put(st, STORE_EVENT_INSERT, v, 4), 0);
}

static void
put_attempt_raw(struct store *st, int64_t id, int64_t started_at, const char *raw_output)
{
	struct store_val v[17] = {
		SVI(id),	 SVI(id / 2), SVT("req"), SVT("route-a"), SVT("be"),	  SVI(1),
		SVI(started_at), SVI(1000),   SVI(1),	  SVI(2),	  SVI(3),	  SVI(200),
		SVT("ok"),	 SVN,	      SVI(10),	  SVI(20),	  SVT(raw_output)};

	ck_assert_int_eq(store_put(st, STORE_ATTEMPT_INSERT, v, 17), 0);
}

static void
put_attempt(struct store *st, int64_t id, int64_t started_at)
{
	put_attempt_raw(st, id, started_at, "{\"x\":1}");
}

/*
 * Compare the single row of sql, column by column, with vals (the select
 * list is in the statement's documented order).
 */
struct row_check {
	const struct store_val *vals;
	int nvals;
	int rows;
};

static int
row_compare(void *arg, sqlite3_stmt *row)
{
	struct row_check *rc = arg;
	const struct store_val *v;
	int i;

	rc->rows++;
	ck_assert_int_eq(sqlite3_column_count(row), rc->nvals);
	for (i = 0; i < rc->nvals; i++) {
		v = &rc->vals[i];
		switch (v->type) {
		case SV_INT:
			ck_assert_msg(sqlite3_column_type(row, i) == SQLITE_INTEGER &&
					      sqlite3_column_int64(row, i) == v->i,
				      "column %d: want %lld", i, (long long)v->i);
			break;
		case SV_REAL:
			ck_assert_msg(sqlite3_column_double(row, i) == v->d, "column %d: want %g",
				      i, v->d);
			break;
		case SV_TEXT:
			ck_assert_msg(sqlite3_column_type(row, i) == SQLITE_TEXT &&
					      strcmp((const char *)sqlite3_column_text(row, i),
						     v->s) == 0,
				      "column %d: want %s", i, v->s);
			break;
		case SV_NULL:
			ck_assert_msg(sqlite3_column_type(row, i) == SQLITE_NULL,
				      "column %d: want NULL", i);
			break;
		}
	}
	return 0;
}

static void
check_row(struct store_reader *r, const char *sql, const struct store_val *vals, int nvals)
{
	struct row_check rc = {vals, nvals, 0};
	char *cause = NULL;

	ck_assert_msg(store_reader_query(r, sql, NULL, 0, row_compare, &rc, &cause) == 0, "%s: %s",
		      sql, cause);
	ck_assert_msg(rc.rows == 1, "%s: %d rows", sql, rc.rows);
}

START_TEST(test_async_rows_after_flush)
{
	struct store *st = open_store(4096);
	struct store_stats stats;
	int i;

	for (i = 0; i < 300; i++) {
		put_event(st, 1000 + i, "async");
		put_attempt(st, i + 1, 5000 + i);
	}
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(count("SELECT count(*) FROM events WHERE "
			       "kind = 'async'"),
			 300);
	ck_assert_int_eq(count("SELECT count(*) FROM attempts"), 300);
	ck_assert_int_eq(count("SELECT sum(started_at) FROM attempts"), 300 * 5000 + 299 * 300 / 2);
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.rows_written, 600);
	ck_assert_uint_eq(stats.dropped, 0);
	ck_assert_uint_eq(stats.errors, 0);
	ck_assert_uint_eq(stats.queued, 0);
	store_close(st);
}
END_TEST

/*
 * The writer hands written rows' blocks back for reuse: the same rows again
 * take no new blocks; a reused block never shows an earlier row's text;
 * rows too large for a spare block (> 8 KiB) work as well; what is kept is
 * bounded (1 MiB per block size: 2048 blocks of 512 B).
 */
START_TEST(test_row_blocks_reused)
{
	struct store *st = open_store(8192);
	struct store_stats s1, s2, s3;
	sqlite3 *blocker = NULL;
	char *raw = malloc(12000);
	size_t len;
	int i, round;

	ck_assert_ptr_nonnull(raw);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 200; i++) {
			len = (size_t)(i * 53) % 11000 + 1;
			memset(raw, 'a' + (i + round) % 26, len);
			raw[len] = '\0';
			put_attempt_raw(st, round * 1000 + i + 1, (int64_t)len, raw);
		}
		ck_assert_int_eq(store_flush(st), 0);
		store_get_stats(st, round == 0 ? &s1 : &s2);
	}
	free(raw);
	ck_assert_uint_gt(s1.spare_blocks, 0);
	ck_assert_uint_lt(s1.spare_blocks, 200); /* rows > 8 KiB: freed */
	ck_assert_uint_eq(s2.spare_blocks, s1.spare_blocks);
	/* Every text whole: its length (started_at), one letter throughout,
	 * the letter of its own row and round. */
	ck_assert_int_eq(count("SELECT count(*) FROM attempts WHERE "
			       "length(raw_output) = started_at AND "
			       "replace(raw_output, substr(raw_output, 1, 1), '') = '' AND "
			       "unicode(raw_output) = 97 + (((id - 1) % 1000) + (id > 1000)) % 26"),
			 400);

	/* 3,000 small rows alive at once (the writer waits for another
	 * connection's write lock meanwhile): at most 2,048 blocks kept. */
	ck_assert_int_eq(sqlite3_open(db_path, &blocker), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(blocker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	for (i = 0; i < 3000; i++)
		put_event(st, 1000 + i, "small");
	ck_assert_int_eq(sqlite3_exec(blocker, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(blocker);
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &s3);
	ck_assert_uint_eq(s3.spare_blocks, s2.spare_blocks + 2048);
	ck_assert_int_eq(count("SELECT count(*) FROM events WHERE "
			       "kind = 'small'"),
			 3000);
	store_close(st);
}
END_TEST

/*
 * Producers on several threads take spare blocks while the writer hands
 * blocks back (each producer flushes every 500 rows): every row arrives
 * whole (a block given to two rows at once would show one
 * row's letter in another's text; the ASan build also sees any use of a
 * block while it waits on a spare list).
 */
struct producer {
	struct store *st;
	int no;
	int failed;
};

static void *
produce(void *arg)
{
	struct producer *p = arg;
	char raw[3000];
	size_t len;
	int i;

	for (i = 0; i < 3000; i++) {
		if (i % 500 == 499 && store_flush(p->st) != 0)
			p->failed++; /* the writer hands blocks back meanwhile */
		len = (size_t)(i * 37 + p->no * 11) % 2900 + 1;
		memset(raw, 'a' + p->no, len);
		raw[len] = '\0';
		put_attempt_raw(p->st, (int64_t)p->no * 100000 + i + 1, (int64_t)len, raw);
	}
	return NULL;
}

START_TEST(test_concurrent_producers)
{
	struct store *st = open_store(16384);
	struct producer p[4];
	pthread_t th[4];
	char raw[3000];
	int i;

	/* spare blocks of every size the producers will ask for */
	for (i = 0; i < 2000; i++) {
		memset(raw, 'z', (size_t)i + 1);
		raw[i + 1] = '\0';
		put_attempt_raw(st, 900000 + i, i + 1, raw);
	}
	ck_assert_int_eq(store_flush(st), 0);
	for (i = 0; i < 4; i++) {
		p[i] = (struct producer){st, i, 0};
		ck_assert_int_eq(pthread_create(&th[i], NULL, produce, &p[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(p[i].failed, 0);
	}
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(count("SELECT count(*) FROM attempts WHERE "
			       "length(raw_output) = started_at AND "
			       "replace(raw_output, substr(raw_output, 1, 1), '') = '' AND "
			       "unicode(raw_output) = 97 + id / 100000"),
			 12000);
	ck_assert_int_eq(count("SELECT count(*) FROM attempts"), 14000);
	store_close(st);
}
END_TEST

START_TEST(test_column_order)
{
	struct store *st = open_store(256);
	struct store_reader *r;
	const struct store_val call[20] = {SVI(7),
					   SVT("req-7"),
					   SVT("route-a"),
					   SVI(1000),
					   SVI(1100),
					   SVI(100),
					   SVI(2000),
					   SVT("L1"),
					   SVT("llm"),
					   SVT("be-1"),
					   SVI(1),
					   SVT("why"),
					   SVI(2),
					   SVR(0.75),
					   SVI(1),
					   SVI(200),
					   SVT("{\"in\":1}"),
					   SVT("{\"out\":1}"),
					   SVT("{\"resp\":1}"),
					   SVT("done")};
	const struct store_val attempt[17] = {SVI(8),
					      SVI(7),
					      SVT("req-7"),
					      SVT("route-a"),
					      SVT("be-1"),
					      SVI(2),
					      SVI(1010),
					      SVI(900),
					      SVI(11),
					      SVI(22),
					      SVI(33),
					      SVI(429),
					      SVT("rate_limited"),
					      SVI(1500),
					      SVI(44),
					      SVI(55),
					      SVT("raw text")};
	const struct store_val vfail[9] = {SVI(9),	     SVI(8),	    SVI(7),
					   SVT("route-a"),   SVT("schema"), SVT("required"),
					   SVT("no intent"), SVT("raw"),    SVI(1020)};
	const struct store_val degr[7] = {SVI(10),    SVI(7),	    SVT("route-a"),
					  SVT("llm"), SVT("rules"), SVT("breaker_open"),
					  SVI(1030)};
	const struct store_val alert[7] = {SVT("burn"), SVT("route-a"), SVT("page"), SVT("firing"),
					   SVR(14.4),	SVR(10.0),	SVI(1040)};
	const struct store_val audit[7] = {SVI(1050),	   SVT("alice"),     SVT("override.set"),
					   SVT("route-a"), SVT("{\"b\":1}"), SVT("{\"a\":2}"),
					   SVT("10.0.0.1")};
	const struct store_val over[7] = {SVT("level"),	   SVT("route-a"), SVT("L2"), SVT("alice"),
					  SVT("incident"), SVI(9999),	   SVI(1060)};
	const struct store_val cache[5] = {SVT("route-a"), SVT("k1"), SVT("{\"r\":1}"), SVR(0.5),
					   SVI(1070)};
	const struct store_val job[8] = {
		SVT("job-1"), SVT("route-a"), SVT("queued"), SVT("{\"body\":1}"),
		SVI(1080),    SVI(1081),      SVI(0),	     SVN};
	const struct store_val jobup[5] = {SVT("done"), SVI(1090), SVI(2), SVT("{\"resp\":2}"),
					   SVT("job-1")};
	const struct store_val review[14] = {
		SVI(77),   SVT("route-a"),	  SVT("req-7"),	  SVI(7),
		SVI(3),	   SVT("low_confidence"), SVT("pending"), SVI(1100),
		SVI(2100), SVT("{\"in\":1}"),	  SVT("raw"),	  SVT("{\"out\":1}"),
		SVR(0.4),  SVT("{\"alt\":1}")};
	const struct store_val reviewup[7] = {
		SVT("decided"), SVT("bob"), SVT("corrected"), SVT("{\"fixed\":1}"),
		SVT("note"),	SVI(1200),  SVI(77)};
	struct store_val slo[22];
	struct store_op ops[3];
	char *cause = NULL;
	int i;

	ck_assert_int_eq(store_put(st, STORE_CALL_INSERT, call, 20), 0);
	ck_assert_int_eq(store_put(st, STORE_ATTEMPT_INSERT, attempt, 17), 0);
	ck_assert_int_eq(store_put(st, STORE_VFAIL_INSERT, vfail, 9), 0);
	ck_assert_int_eq(store_put(st, STORE_DEGRADATION_INSERT, degr, 7), 0);
	ck_assert_int_eq(store_put(st, STORE_ALERT_INSERT, alert, 7), 0);
	ck_assert_int_eq(store_put(st, STORE_CACHE_UPSERT, cache, 5), 0);
	slo[0] = SVT("route-a");
	slo[1] = SVI(60000);
	for (i = 2; i < 22; i++)
		slo[i] = SVI(i * 10);
	ck_assert_int_eq(store_put(st, STORE_SLO_MINUTE_ADD, slo, 22), 0);
	ops[0] = (struct store_op){STORE_AUDIT_INSERT, audit, 7};
	ops[1] = (struct store_op){STORE_OVERRIDE_UPSERT, over, 7};
	ops[2] = (struct store_op){STORE_JOB_INSERT, job, 8};
	ck_assert_int_eq(store_commit_now(st, ops, 3, NULL, &cause), 0);
	ops[0] = (struct store_op){STORE_REVIEW_INSERT, review, 14};
	ck_assert_int_eq(store_commit_now(st, ops, 1, NULL, &cause), 0);

	r = open_reader();
	check_row(r,
		  "SELECT id, request_id, route, started_at, finished_at, "
		  "elapsed_ms, budget_ms, level, source, backend, degraded, reason, "
		  "attempts, confidence, review, http_status, input, result, "
		  "response, status FROM calls",
		  call, 20);
	check_row(r,
		  "SELECT id, call_id, request_id, route, backend, "
		  "attempt_no, started_at, timeout_ms, connect_ms, first_byte_ms, "
		  "total_ms, http_status, outcome, retry_after_ms, input_tokens, "
		  "output_tokens, raw_output FROM attempts",
		  attempt, 17);
	check_row(r,
		  "SELECT id, attempt_id, call_id, route, stage, rule, "
		  "detail, raw_output, at FROM validation_failures",
		  vfail, 9);
	check_row(r,
		  "SELECT id, call_id, route, from_step, to_step, reason, "
		  "at FROM degradations",
		  degr, 7);
	check_row(r,
		  "SELECT rule, route, severity, state, value, threshold, "
		  "at FROM alerts",
		  alert, 7);
	check_row(r,
		  "SELECT at, actor, action, target, before, after, "
		  "remote FROM audit",
		  audit, 7);
	check_row(r,
		  "SELECT kind, subject, value, actor, reason, until, at "
		  "FROM overrides",
		  over, 7);
	check_row(r,
		  "SELECT route, key, result, confidence, stored_at FROM "
		  "cache",
		  cache, 5);
	check_row(r,
		  "SELECT request_id, route, state, body, created_at, "
		  "updated_at, tries, response FROM jobs",
		  job, 8);
	check_row(r,
		  "SELECT id, route, request_id, call_id, priority, "
		  "reason, state, created_at, due_at, input, raw_output, result, "
		  "confidence, alt_result FROM reviews",
		  review, 14);
	check_row(r,
		  "SELECT route, minute, total, service_good, smart_good, "
		  "latency_ok, timeouts, retries, attempts, format_violations, "
		  "src_llm, src_backup, src_rules, src_cache, src_preset, "
		  "src_manual, review_decided, review_corrected, shadow_total, "
		  "shadow_agree, cross_total, cross_agree FROM slo_minutes",
		  slo, 22);

	ops[0] = (struct store_op){STORE_JOB_UPDATE, jobup, 5};
	ops[1] = (struct store_op){STORE_REVIEW_UPDATE, reviewup, 7};
	ops[2] = (struct store_op){STORE_OVERRIDE_DELETE, over, 2};
	ck_assert_int_eq(store_commit_now(st, ops, 3, NULL, &cause), 0);
	check_row(r,
		  "SELECT state, updated_at, tries, response, request_id "
		  "FROM jobs",
		  jobup, 5);
	check_row(r,
		  "SELECT state, reviewer, verdict, corrected_result, "
		  "note, decided_at, id FROM reviews",
		  reviewup, 7);
	ck_assert_int_eq(store_reader_int(r, "SELECT count(*) FROM overrides", NULL, 0, -1), 0);
	store_reader_close(r);
	store_close(st);
}
END_TEST

START_TEST(test_defaults_and_upserts)
{
	struct store *st = open_store(256);
	struct store_reader *r;
	struct store_val slo[4] = {SVT("route-a"), SVI(120000), SVI(1), SVI(1)};
	struct store_val call[4] = {SVI(1), SVT("req-1"), SVT("route-a"), SVI(5)};
	struct store_val c1[5] = {SVT("route-a"), SVT("k"), SVT("old"), SVR(0.1), SVI(1)};
	struct store_val c2[5] = {SVT("route-a"), SVT("k"), SVT("new"), SVR(0.9), SVI(2)};

	ck_assert_int_eq(store_put(st, STORE_SLO_MINUTE_ADD, slo, 4), 0);
	ck_assert_int_eq(store_put(st, STORE_SLO_MINUTE_ADD, slo, 4), 0);
	slo[2] = SVN;
	ck_assert_int_eq(store_put(st, STORE_SLO_MINUTE_ADD, slo, 4), 0);
	ck_assert_int_eq(store_put(st, STORE_CALL_INSERT, call, 4), 0);
	ck_assert_int_eq(store_put(st, STORE_CACHE_UPSERT, c1, 5), 0);
	ck_assert_int_eq(store_put(st, STORE_CACHE_UPSERT, c2, 5), 0);
	ck_assert_int_eq(store_flush(st), 0);

	r = open_reader();
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT total FROM slo_minutes "
					  "WHERE route = 'route-a' AND minute = 120000",
					  NULL, 0, -1),
			 2);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT service_good FROM "
					  "slo_minutes",
					  NULL, 0, -1),
			 3);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT cross_agree FROM "
					  "slo_minutes",
					  NULL, 0, -1),
			 0);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM "
					  "slo_minutes",
					  NULL, 0, -1),
			 1);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT degraded + attempts + "
					  "review FROM calls WHERE id = 1",
					  NULL, 0, -1),
			 0);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT stored_at FROM cache "
					  "WHERE result = 'new'",
					  NULL, 0, -1),
			 2);
	ck_assert_int_eq(store_reader_int(r, "SELECT count(*) FROM cache", NULL, 0, -1), 1);
	store_reader_close(r);
	store_close(st);
}
END_TEST

START_TEST(test_batching)
{
	struct store *st = open_store(10000);
	struct store_stats stats;
	int i;

	for (i = 0; i < 2500; i++)
		put_attempt(st, i + 1, 1000);
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &stats);
	ck_assert_msg(stats.batches <= 5, "%llu batches", (unsigned long long)stats.batches);
	ck_assert_uint_ge(stats.max_batch_rows, 500);
	ck_assert_uint_eq(stats.rows_written, 2500);
	ck_assert_int_eq(count("SELECT count(*) FROM attempts"), 2500);
	store_close(st);
}
END_TEST

START_TEST(test_timer_commits)
{
	struct store *st = open_store(100);
	struct store_stats stats;

	put_event(st, 42, "timer");
	sleep_ms(200);
	ck_assert_int_eq(count("SELECT count(*) FROM events WHERE "
			       "kind = 'timer'"),
			 1);
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.batches, 1);
	ck_assert_uint_eq(stats.sync_commits, 0);
	store_close(st);
}
END_TEST

START_TEST(test_commit_now_visible)
{
	struct store *st = open_store(100);
	struct store_stats stats;
	struct store_val v[8] = {SVT("job-a"), SVT("route-a"), SVT("queued"), SVT("{}"),
				 SVI(10),      SVI(10),	       SVI(0),	      SVN};
	struct store_val rv[8] = {SVN,	  SVT("route-a"),	 SVT("req-r"),	 SVI(1),
				  SVI(0), SVT("low_confidence"), SVT("pending"), SVI(10)};
	struct store_op op = {STORE_JOB_INSERT, v, 8};
	char *cause = NULL;
	int64_t rowid = -1;

	ck_assert_int_eq(store_commit_now(st, &op, 1, &rowid, &cause), 0);
	ck_assert_ptr_null(cause);
	ck_assert_int_gt(rowid, 0);
	ck_assert_int_eq(count("SELECT id FROM jobs WHERE request_id = "
			       "'job-a'"),
			 rowid);
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.sync_commits, 1);
	ck_assert_uint_eq(stats.rows_written, 1);

	/* A review inserted with a NULL id reports the id it was given. */
	op = (struct store_op){STORE_REVIEW_INSERT, rv, 8};
	ck_assert_int_eq(store_commit_now(st, &op, 1, &rowid, &cause), 0);
	ck_assert_int_eq(count("SELECT id FROM reviews WHERE request_id = "
			       "'req-r'"),
			 rowid);
	store_close(st);
}
END_TEST

START_TEST(test_commit_now_rollback)
{
	struct store *st = open_store(100);
	struct store_val job[8] = {SVT("dup"), SVT("route-a"), SVT("queued"), SVT("{}"),
				   SVI(10),    SVI(10),	       SVI(0),	      SVN};
	struct store_val aud[7] = {SVI(20), SVT("alice"), SVT("job.add"),  SVT("dup"),
				   SVN,	    SVN,	  SVT("127.0.0.1")};
	struct store_op ops[2];
	char *cause = NULL;
	int rc;

	ops[0] = (struct store_op){STORE_JOB_INSERT, job, 8};
	ck_assert_int_eq(store_commit_now(st, ops, 1, NULL, &cause), 0);

	put_event(st, 1, "before");
	ops[0] = (struct store_op){STORE_AUDIT_INSERT, aud, 7};
	ops[1] = (struct store_op){STORE_JOB_INSERT, job, 8};
	rc = store_commit_now(st, ops, 2, NULL, &cause);
	ck_assert_int_eq(rc, STORE_E_SQL);
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strstr(cause, "UNIQUE") != NULL, "cause: %s", cause);
	free(cause);
	cause = NULL;
	put_event(st, 2, "after");
	ck_assert_int_eq(store_flush(st), 0);

	ck_assert_int_eq(count("SELECT count(*) FROM audit"), 0);
	ck_assert_int_eq(count("SELECT count(*) FROM jobs"), 1);
	ck_assert_int_eq(count("SELECT count(*) FROM events WHERE kind IN "
			       "('before', 'after')"),
			 2);

	/* The store keeps working after a failed promise. */
	ops[1] = (struct store_op){STORE_AUDIT_INSERT, aud, 7};
	ck_assert_int_eq(store_commit_now(st, ops, 2, NULL, &cause), 0);
	ck_assert_int_eq(count("SELECT count(*) FROM audit"), 2);
	store_close(st);
}
END_TEST

static void *
unlock_later(void *arg)
{
	sleep_ms(300);
	sqlite3_exec(arg, "COMMIT", NULL, NULL, NULL);
	return NULL;
}

/*
 * A commit-now queued behind more rows than one batch takes: the writer is
 * held off by another connection's write lock while the backlog builds.
 */
START_TEST(test_commit_now_behind_backlog)
{
	struct store *st = open_store(40000);
	struct store_val v[8] = {SVT("late"), SVT("route-a"), SVT("queued"), SVN,
				 SVI(1),      SVI(1),	      SVI(0),	     SVN};
	struct store_op op = {STORE_JOB_INSERT, v, 8};
	struct store_reader *r;
	struct store_stats stats;
	sqlite3 *blocker = NULL;
	pthread_t th;
	char *cause = NULL;
	int i;

	ck_assert_int_eq(sqlite3_open(db_path, &blocker), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(blocker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	for (i = 0; i < 30000; i++)
		put_attempt(st, i + 1, 1000);
	ck_assert_int_eq(pthread_create(&th, NULL, unlock_later, blocker), 0);
	ck_assert_int_eq(store_commit_now(st, &op, 1, NULL, &cause), 0);
	pthread_join(th, NULL);
	sqlite3_close(blocker);

	r = open_reader();
	ck_assert_int_eq(store_reader_int(r, "SELECT count(*) FROM attempts", NULL, 0, -1), 30000);
	ck_assert_int_eq(store_reader_int(r, "SELECT count(*) FROM jobs", NULL, 0, -1), 1);
	store_reader_close(r);
	store_get_stats(st, &stats);
	ck_assert_uint_ge(stats.batches, 4); /* 30000 rows, <= 8192 each */
	ck_assert_uint_le(stats.max_batch_rows, 8192 + 1);
	for (i = 0; i < 3; i++) {
		put_attempt(st, 40000 + i, 1000);
		ck_assert_int_eq(store_flush(st), 0);
	}
	ck_assert_int_eq(count("SELECT count(*) FROM attempts"), 30003);
	store_close(st);
}
END_TEST

/* What a commit-later's callback saw (writer thread; read after a flush). */
struct later_seen {
	int calls;
	int rc;
	int64_t rowid;
	char cause[256];
	int64_t jobs_visible; /* jobs rows a fresh connection saw then */
	int64_t events_visible;
};

static void
later_done(void *arg, int rc, int64_t rowid, const char *cause)
{
	struct later_seen *s = arg;

	s->calls++;
	s->rc = rc;
	s->rowid = rowid;
	snprintf(s->cause, sizeof(s->cause), "%s", cause ? cause : "");
	s->jobs_visible = count("SELECT count(*) FROM jobs");
	s->events_visible = count("SELECT count(*) FROM events WHERE kind = "
				  "'before'");
}

/* A flush marker (no ops): done runs once the rows queued before it are committed. */
START_TEST(test_commit_later_marker)
{
	struct store *st = open_store(1000);
	struct later_seen m;
	int i;

	memset(&m, 0, sizeof(m));
	ck_assert_int_eq(store_commit_later(st, NULL, -1, later_done, &m), -EINVAL);
	for (i = 0; i < 300; i++)
		put_event(st, i, "before");
	ck_assert_int_eq(store_commit_later(st, NULL, 0, later_done, &m), 0);
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(m.calls, 1);
	ck_assert_int_eq(m.rc, 0);
	/* what a fresh connection saw from inside done: every row before it */
	ck_assert_int_eq(m.events_visible, 300);
	store_close(st);
}
END_TEST

START_TEST(test_commit_later)
{
	struct store *st = open_store(1000);
	char rid[16] = "later-a";
	struct store_val job[8] = {SVT(rid), SVT("route-a"), SVT("queued"), SVT("{}"),
				   SVI(10),  SVI(10),	     SVI(0),	    SVN};
	struct store_val aud[7] = {SVI(20), SVT("alice"), SVT("job.add"),  SVT("later-a"),
				   SVN,	    SVN,	  SVT("127.0.0.1")};
	struct store_op ops[2] = {{STORE_AUDIT_INSERT, aud, 7}, {STORE_JOB_INSERT, job, 8}};
	struct later_seen a, dup;
	struct store_stats stats;
	int i;

	memset(&a, 0, sizeof(a));
	memset(&dup, 0, sizeof(dup));
	for (i = 0; i < 200; i++)
		put_event(st, i, "before");
	ck_assert_int_eq(store_commit_later(st, &ops[1], 1, later_done, &a), 0);
	/* The values were copied: the caller's buffers are its own again. */
	memset(rid, 'x', sizeof(rid) - 1);
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_msg(a.rc == 0, "rc %d: %s", a.rc, a.cause);
	ck_assert_int_gt(a.rowid, 0);
	/* Called after the COMMIT, which took the rows queued before it. */
	ck_assert_int_eq(a.jobs_visible, 1);
	ck_assert_int_eq(a.events_visible, 200);
	ck_assert_int_eq(count("SELECT id FROM jobs WHERE request_id = "
			       "'later-a'"),
			 a.rowid);
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.sync_commits, 1);

	/* A failing request undoes all its ops and says why. */
	snprintf(rid, sizeof rid, "%s", "later-a");
	ck_assert_int_eq(store_commit_later(st, ops, 2, later_done, &dup), 0);
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(dup.calls, 1);
	ck_assert_int_eq(dup.rc, STORE_E_SQL);
	ck_assert_msg(strstr(dup.cause, "UNIQUE") != NULL, "cause: %s", dup.cause);
	ck_assert_int_eq(count("SELECT count(*) FROM audit"), 0);

	/* nops 0 is a flush marker now (test_commit_later_marker); bad counts
	 * and a missing done are still refused */
	ck_assert_int_eq(store_commit_later(st, ops, -1, later_done, &a), -EINVAL);
	ck_assert_int_eq(store_commit_later(st, ops, 1, NULL, NULL), -EINVAL);
	ck_assert_int_eq(a.calls, 1);
	store_close(st);
}
END_TEST

/*
 * Requests that arrive while a commit is under way share the next one:
 * fifty promises made while another connection holds the write lock cost
 * a couple of fsyncs, not fifty. Closing runs what was queued before.
 */
START_TEST(test_commit_later_shares_commits)
{
	struct store *st = open_store(1000);
	struct later_seen seen[51];
	struct store_stats stats;
	sqlite3 *blocker = NULL;
	pthread_t th;
	char rid[51][16];
	int i;

	memset(seen, 0, sizeof(seen));
	ck_assert_int_eq(sqlite3_open(db_path, &blocker), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(blocker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(pthread_create(&th, NULL, unlock_later, blocker), 0);
	for (i = 0; i < 51; i++) {
		struct store_val v[8] = {SVT(rid[i]), SVT("route-a"), SVT("queued"), SVT("{}"),
					 SVI(10),     SVI(10),	      SVI(0),	     SVN};
		struct store_op op = {STORE_JOB_INSERT, v, 8};

		snprintf(rid[i], sizeof(rid[i]), "share-%d", i);
		if (i == 50) {
			pthread_join(th, NULL);
			sqlite3_close(blocker);
			ck_assert_int_eq(store_flush(st), 0);
			/* The first request's batch, then one for the 49 that
			 * came while it waited for the lock (one each: 50). */
			store_get_stats(st, &stats);
			ck_assert_uint_le(stats.sync_commits, 2);
			ck_assert_int_eq(seen[49].calls, 1);
		}
		ck_assert_int_eq(store_commit_later(st, &op, 1, later_done, &seen[i]), 0);
	}
	store_close(st); /* runs the last one, if it has not yet */
	for (i = 0; i < 51; i++) {
		ck_assert_msg(seen[i].calls == 1 && seen[i].rc == 0,
			      "request %d: %d calls, rc %d %s", i, seen[i].calls, seen[i].rc,
			      seen[i].cause);
	}
	ck_assert_int_eq(count("SELECT count(*) FROM jobs"), 51);
}
END_TEST

START_TEST(test_order_async_then_commit_now)
{
	struct store *st = open_store(100);
	struct store_val job[8] = {SVT("j"), SVT("route-a"), SVT("queued"), SVT("{}"),
				   SVI(10),  SVI(10),	     SVI(0),	    SVN};
	struct store_val up[5] = {SVT("done"), SVI(20), SVI(1), SVT("{\"ok\":1}"), SVT("j")};
	struct store_op op = {STORE_JOB_UPDATE, up, 5};
	char *cause = NULL;

	ck_assert_int_eq(store_put(st, STORE_JOB_INSERT, job, 8), 0);
	ck_assert_int_eq(store_commit_now(st, &op, 1, NULL, &cause), 0);
	ck_assert_int_eq(count("SELECT count(*) FROM jobs WHERE state = "
			       "'done' AND tries = 1"),
			 1);
	store_close(st);
}
END_TEST

START_TEST(test_async_row_error)
{
	struct store *st = open_store(100);
	struct store_stats stats;

	put_attempt(st, 1, 10);
	put_attempt(st, 1, 10); /* duplicate id: fails alone */
	put_attempt(st, 2, 10);
	ck_assert_int_eq(store_flush(st), 0);
	/* the drop's event is queued when the writer notices it: one more flush */
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.errors, 1);
	/* the two attempts, and the log_rows_dropped event that tells of the third */
	ck_assert_uint_eq(stats.rows_written, 3);
	ck_assert_int_eq(count("SELECT count(*) FROM attempts"), 2);
	ck_assert_int_eq(count("SELECT count(*) FROM events WHERE kind = 'log_rows_dropped'"), 1);
	store_close(st);
}
END_TEST

START_TEST(test_queue_full)
{
	struct store *st = open_store(8);
	struct store_reader *r;
	struct store_stats stats;
	struct store_val v[4] = {SVI(1), SVT("fill"), SVN, SVN};
	int i, rc, full = 0, ok = 0;
	int64_t reported;

	for (i = 0; i < 10000; i++) {
		rc = store_put(st, STORE_EVENT_INSERT, v, 4);
		ck_assert(rc == 0 || rc == STORE_E_FULL);
		if (rc == STORE_E_FULL)
			full++;
		else
			ok++;
	}
	ck_assert_int_gt(full, 0);
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.dropped, (uint64_t)full);

	r = open_reader();
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM events "
					  "WHERE kind = 'fill'",
					  NULL, 0, -1),
			 ok);
	ck_assert_int_ge(store_reader_int(r,
					  "SELECT count(*) FROM events "
					  "WHERE kind = 'log_rows_dropped' AND subject = 'store'",
					  NULL, 0, -1),
			 1);
	/* detail is "N rows dropped"; the Ns add up to every drop. */
	reported = store_reader_int(r,
				    "SELECT sum(CAST(detail AS INTEGER)) "
				    "FROM events WHERE kind = 'log_rows_dropped' AND detail LIKE "
				    "'% rows dropped'",
				    NULL, 0, -1);
	ck_assert_int_eq(reported, full);
	store_reader_close(r);
	store_close(st);
}
END_TEST

/*
 * The scheduling policy (field 41 of /proc/self/task/TID/stat) of the
 * other thread at nice 10 (field 19): the writer. -1 when there is none.
 */
static int
writer_policy(void)
{
	char path[300], line[1024], *p;
	int policy = -1, field, nice;
	FILE *f;
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL && policy < 0) {
		/* not this thread: a test run under nice(1) is at 10 too */
		if (de->d_name[0] == '.' ||
		    strtol(de->d_name, NULL, 10) == (long)syscall(SYS_gettid))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		if (p == NULL)
			continue;
		nice = 0;
		/* field 3 (state) follows ") " */
		for (field = 3, p += 2; *p && field < 41; field++) {
			if (field == 19)
				nice = (int)strtol(p, NULL, 10);
			p = strchr(p, ' ');
			if (p == NULL)
				break;
			p++;
		}
		if (p != NULL && field == 41 && nice == 10)
			policy = (int)strtol(p, NULL, 10);
	}
	closedir(d);
	return policy;
}

static int
wait_writer_policy(int want, int ms)
{
	int i, got = -1;

	for (i = 0; i < ms / 5; i++) {
		got = writer_policy();
		if (got == want)
			break;
		sleep_ms(5);
	}
	return got;
}

/*
 * The writer runs SCHED_IDLE (5) when it can be raised back; a caller
 * waiting on it (flush, commit-now) and a backlog of cap/8 rows raise it
 * to SCHED_OTHER (0); it drops back once idle again. Where the probe says
 * it could not be raised back it stays SCHED_OTHER at nice 10.
 */
START_TEST(test_writer_idle_and_boost)
{
	struct store *st = open_store(1024);
	struct store_stats stats;
	struct store_val v[4] = {SVI(1), SVT("boost"), SVN, SVN};
	uint64_t before;
	int i;

	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &stats);
	if (!stats.writer_idle) {
		ck_assert_int_eq(wait_writer_policy(0, 2000), 0);
		store_close(st);
		return;
	}
	ck_assert_int_eq(wait_writer_policy(5, 2000), 5);
	before = stats.boosts;
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &stats);
	ck_assert_uint_eq(stats.boosts, before + 1);
	ck_assert_int_eq(wait_writer_policy(5, 2000), 5);

	/* A backlog: cap/8 rows queued (below the 1000 rows that start a
	 * batch, so the writer has not taken them) raise it, before anybody
	 * waits. */
	before = stats.boosts;
	for (i = 0; i < 1024 / 8 + 10; i++)
		ck_assert_int_eq(store_put(st, STORE_EVENT_INSERT, v, 4), 0);
	store_get_stats(st, &stats);
	ck_assert_uint_ge(stats.boosts, before + 1);
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_uint_eq(stats.boost_errors, 0);
	ck_assert_int_eq(wait_writer_policy(5, 2000), 5);
	store_close(st);
}
END_TEST

/* The writer keeps off the first of the process's CPUs (two or more). */
START_TEST(test_writer_cpus_pick)
{
	cpu_set_t in, out;
	int i;

	CPU_ZERO(&in);
	ck_assert_int_eq(store_writer_cpus(&in, &out), 0);
	CPU_SET(3, &in);
	ck_assert_int_eq(store_writer_cpus(&in, &out), 0);
	ck_assert_int_eq(CPU_COUNT(&out), 0);
	CPU_ZERO(&in);
	CPU_SET(0, &in);
	CPU_SET(1, &in);
	ck_assert_int_eq(store_writer_cpus(&in, &out), 1);
	ck_assert(!CPU_ISSET(0, &out) && CPU_ISSET(1, &out));
	CPU_ZERO(&in);
	CPU_SET(2, &in);
	CPU_SET(5, &in);
	CPU_SET(7, &in);
	ck_assert_int_eq(store_writer_cpus(&in, &out), 2);
	ck_assert(!CPU_ISSET(2, &out) && CPU_ISSET(5, &out) && CPU_ISSET(7, &out));
	ck_assert_int_eq(CPU_COUNT(&out), 2);
	CPU_ZERO(&in);
	for (i = 0; i < 64; i++)
		CPU_SET(i, &in);
	ck_assert_int_eq(store_writer_cpus(&in, &out), 63);
	ck_assert(!CPU_ISSET(0, &out) && CPU_ISSET(63, &out));
}
END_TEST

/* Threads of this process whose CPU set is exactly want. */
static int
threads_on(const cpu_set_t *want)
{
	struct dirent *d;
	cpu_set_t set;
	DIR *tasks = opendir("/proc/self/task");
	int n = 0;

	ck_assert_ptr_nonnull(tasks);
	while ((d = readdir(tasks)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		if (sched_getaffinity((pid_t)strtol(d->d_name, NULL, 10), sizeof set, &set) == 0 &&
		    CPU_EQUAL(&set, want))
			n++;
	}
	closedir(tasks);
	return n;
}

/*
 * The live writer: on every allowed CPU but the first (when there are two
 * or more), the other threads untouched; FUSEBOX_WRITER_AFFINITY=off
 * leaves it anywhere.
 */
START_TEST(test_writer_keeps_off_first_cpu)
{
	struct store *st = open_store(1024);
	struct store_stats stats;
	cpu_set_t allowed, want;
	int n;

	ck_assert_int_eq(sched_getaffinity(0, sizeof allowed, &allowed), 0);
	n = store_writer_cpus(&allowed, &want);
	ck_assert_int_eq(store_flush(st), 0); /* the writer has started */
	store_get_stats(st, &stats);
	ck_assert_int_eq(stats.writer_cpus, n);
	if (n > 0)
		ck_assert_int_eq(threads_on(&want), 1);
	store_close(st);

	ck_assert_int_eq(setenv("FUSEBOX_WRITER_AFFINITY", "off", 1), 0);
	st = open_store(1024);
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &stats);
	ck_assert_int_eq(stats.writer_cpus, 0);
	if (n > 0)
		ck_assert_int_eq(threads_on(&want), 0);
	store_close(st);
	unsetenv("FUSEBOX_WRITER_AFFINITY");
}
END_TEST

START_TEST(test_durable_after_sigkill)
{
	struct store *st;
	struct store_reader *r;
	pid_t pid;
	int status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct store_val v[8] = {
			SVT("promised"), SVT("route-a"), SVT("queued"), SVT("{\"text\":\"hi\"}"),
			SVI(10),	 SVI(10),	 SVI(0),	SVN};
		struct store_op op = {STORE_JOB_INSERT, v, 8};
		struct store *cst = NULL;
		int i;

		if (store_open(db_path, 1000, &cst, NULL) != 0)
			_exit(2);
		for (i = 0; i < 500; i++) {
			struct store_val a[2] = {SVI(i), SVT("queued")};

			if (store_put(cst, STORE_EVENT_INSERT, a, 2) != 0)
				_exit(5);
		}
		if (store_commit_now(cst, &op, 1, NULL, NULL) != 0)
			_exit(3);
		raise(SIGKILL);
		_exit(4);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d",
		      status);

	st = open_store(100);
	r = open_reader();
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM jobs WHERE "
					  "request_id = 'promised' AND state = 'queued'",
					  NULL, 0, -1),
			 1);
	/* Rows queued before the promise were committed with it. */
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM events "
					  "WHERE kind = 'queued'",
					  NULL, 0, -1),
			 500);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM "
					  "pragma_integrity_check WHERE integrity_check = 'ok'",
					  NULL, 0, -1),
			 1);
	store_reader_close(r);
	store_close(st);
}
END_TEST

START_TEST(test_close_flushes)
{
	struct store *st = open_store(20000);
	int i;

	for (i = 0; i < 10000; i++)
		put_attempt(st, i + 1, 1000);
	store_close(st);
	ck_assert_int_eq(count("SELECT count(*) FROM attempts"), 10000);
}
END_TEST

static void
prune_fixture(struct store *st, int64_t at, int base)
{
	struct store_val call[4] = {SVI(base), SVN, SVT("route-a"), SVI(at)};
	struct store_val vfail[9] = {SVI(base), SVI(base), SVI(base), SVT("route-a"), SVT("schema"),
				     SVN,	SVN,	   SVN,	      SVI(at)};
	struct store_val degr[7] = {SVI(base),	  SVI(base), SVT("route-a"), SVT("llm"),
				    SVT("rules"), SVT("x"),  SVI(at)};
	struct store_val alert[7] = {SVT("burn"), SVT("route-a"), SVT("page"), SVT("firing"),
				     SVR(1),	  SVR(1),	  SVI(at)};
	struct store_val slo[3] = {SVT("route-a"), SVI(at), SVI(1)};
	struct store_val audit[7] = {SVI(at), SVT("alice"), SVT("x"), SVN, SVN, SVN, SVN};
	char req[32];

	ck_assert_int_eq(store_put(st, STORE_CALL_INSERT, call, 4), 0);
	put_attempt(st, base, at);
	ck_assert_int_eq(store_put(st, STORE_VFAIL_INSERT, vfail, 9), 0);
	ck_assert_int_eq(store_put(st, STORE_DEGRADATION_INSERT, degr, 7), 0);
	put_event(st, at, "old-or-new");
	ck_assert_int_eq(store_put(st, STORE_ALERT_INSERT, alert, 7), 0);
	ck_assert_int_eq(store_put(st, STORE_SLO_MINUTE_ADD, slo, 3), 0);
	ck_assert_int_eq(store_put(st, STORE_AUDIT_INSERT, audit, 7), 0);

	/* reviews: one decided, one pending; jobs: one done, one queued. */
	{
		struct store_val rv[8] = {SVI(2000 + base), SVT("route-a"), SVT("r"),
					  SVI(base),	    SVI(0),	    SVT("x"),
					  SVT("pending"),   SVI(at)};
		struct store_val rd[8] = {SVI(1000 + base), SVT("route-a"), SVT("r"),
					  SVI(base),	    SVI(0),	    SVT("x"),
					  SVT("decided"),   SVI(at)};
		struct store_val ru[7] = {SVT("decided"), SVT("bob"),	   SVT("ok"), SVN, SVN,
					  SVI(at),	  SVI(1000 + base)};
		struct store_val jd[6] = {SVT(req), SVT("route-a"), SVT("done"),
					  SVN,	    SVI(at),	    SVI(at)};
		struct store_val jq[6] = {SVT(req), SVT("route-a"), SVT("queued"),
					  SVN,	    SVI(at),	    SVI(at)};

		ck_assert_int_eq(store_put(st, STORE_REVIEW_INSERT, rv, 8), 0);
		ck_assert_int_eq(store_put(st, STORE_REVIEW_INSERT, rd, 8), 0);
		ck_assert_int_eq(store_put(st, STORE_REVIEW_UPDATE, ru, 7), 0);
		snprintf(req, sizeof(req), "done-%d", base);
		ck_assert_int_eq(store_put(st, STORE_JOB_INSERT, jd, 6), 0);
		snprintf(req, sizeof(req), "queued-%d", base);
		ck_assert_int_eq(store_put(st, STORE_JOB_INSERT, jq, 6), 0);
	}
}

START_TEST(test_prune_old_only)
{
	static const char *const tables[] = {"calls",	     "attempts", "validation_failures",
					     "degradations", "events",	 "alerts",
					     "slo_minutes"};
	struct store *st = open_store(10000);
	struct store_stats stats;
	struct store_reader *r;
	char sql[128];
	size_t t;
	int i, waited;

	prune_fixture(st, 1000, 1);   /* old */
	prune_fixture(st, 900000, 2); /* new */
	for (i = 0; i < 1200; i++)    /* > 2 prune steps */
		put_attempt(st, 100 + i, 500 + i);
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(count("SELECT count(*) FROM attempts"), 1202);

	ck_assert_int_eq(store_prune(st, 100000), 0);
	for (waited = 0; waited < 10000; waited += 10) {
		store_get_stats(st, &stats);
		if (!stats.prune_running)
			break;
		sleep_ms(10);
	}
	ck_assert_int_eq(stats.prune_running, 0);
	ck_assert_uint_eq(stats.pruned, 1201 + 6 + 2);

	r = open_reader();
	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[t]);
		ck_assert_msg(store_reader_int(r, sql, NULL, 0, -1) == 1,
			      "%s: old row not pruned or new row lost", tables[t]);
	}
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT min(started_at) FROM "
					  "attempts",
					  NULL, 0, -1),
			 900000);
	/* Undecided reviews, unfinished jobs and audit are kept. */
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM reviews "
					  "WHERE state = 'pending'",
					  NULL, 0, -1),
			 2);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM reviews "
					  "WHERE state = 'decided'",
					  NULL, 0, -1),
			 1);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM jobs "
					  "WHERE state = 'queued'",
					  NULL, 0, -1),
			 2);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT count(*) FROM jobs "
					  "WHERE state = 'done'",
					  NULL, 0, -1),
			 1);
	ck_assert_int_eq(store_reader_int(r, "SELECT count(*) FROM audit", NULL, 0, -1), 2);
	store_reader_close(r);
	store_close(st);
}
END_TEST

struct nested_arg {
	struct store_reader *r;
	int rows;
	int64_t inner_sum;
};

static int
nested_row(void *arg, sqlite3_stmt *row)
{
	struct nested_arg *a = arg;
	struct store_val v = SVI(sqlite3_column_int64(row, 0));

	a->rows++;
	/* Same SQL again while the outer statement is running. */
	a->inner_sum += store_reader_int(a->r,
					 "SELECT at FROM events WHERE "
					 "at = ?1",
					 &v, 1, -1);
	return 0;
}

START_TEST(test_reader)
{
	struct store *st = open_store(100);
	struct store_reader *r;
	struct nested_arg na;
	struct store_val v = SVI(3);
	char *cause = NULL, sql[96];
	int i;

	for (i = 1; i <= 5; i++)
		put_event(st, i, "r");
	ck_assert_int_eq(store_flush(st), 0);
	r = open_reader();

	ck_assert_int_eq(store_reader_int(r,
					  "SELECT at FROM events WHERE "
					  "at = ?1",
					  &v, 1, -1),
			 3);
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT at FROM events WHERE "
					  "at = 99",
					  NULL, 0, -7),
			 -7);
	ck_assert_int_eq(store_reader_int(r, "SELECT NULL", NULL, 0, -8), -8);
	ck_assert_int_eq(store_reader_int(r, "SELECT nope FROM nowhere", NULL, 0, -9), -9);
	ck_assert_int_eq(
		store_reader_query(r, "SELECT nope FROM nowhere", NULL, 0, NULL, NULL, &cause),
		STORE_E_SQL);
	ck_assert_ptr_nonnull(strstr(cause, "nowhere"));
	free(cause);
	cause = NULL;

	/* More distinct statements than the cache holds, then the first. */
	for (i = 0; i < 100; i++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) + %d FROM events", i);
		ck_assert_int_eq(store_reader_int(r, sql, NULL, 0, -1), 5 + i);
	}
	ck_assert_int_eq(store_reader_int(r,
					  "SELECT at FROM events WHERE "
					  "at = ?1",
					  &v, 1, -1),
			 3);

	memset(&na, 0, sizeof(na));
	na.r = r;
	v = SVI(0);
	ck_assert_int_eq(store_reader_query(r,
					    "SELECT at FROM events WHERE "
					    "at > ?1 ORDER BY at",
					    &v, 1, nested_row, &na, &cause),
			 0);
	ck_assert_int_eq(na.rows, 5);
	ck_assert_int_eq(na.inner_sum, 15);
	ck_assert_int_eq(store_schema_version(r), store_known_version());

	/* Readers see new commits without reopening. */
	put_event(st, 6, "r");
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(store_reader_int(r, "SELECT count(*) FROM events", NULL, 0, -1), 6);
	store_reader_close(r);
	store_close(st);
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct store *st = open_store(100);
	struct store_reader *r = NULL;
	struct store_val v[30];
	struct store_op op;
	char *cause = NULL;
	int i;

	for (i = 0; i < 30; i++)
		v[i] = SVI(i);
	ck_assert_int_eq(store_put(st, STORE_EVENT_INSERT, v, 5), -EINVAL);
	ck_assert_int_eq(store_put(st, STORE_STMT__COUNT, v, 1), -EINVAL);
	ck_assert_int_eq(store_put(st, STORE_EVENT_INSERT, NULL, 1), -EINVAL);
	op = (struct store_op){STORE_OVERRIDE_DELETE, v, 3};
	ck_assert_int_eq(store_commit_now(st, &op, 1, NULL, &cause), -EINVAL);
	free(cause);
	cause = NULL;
	ck_assert_int_eq(store_reader_open("/nonexistent/dir/x.db", &r, &cause), STORE_E_SQL);
	ck_assert_ptr_null(r);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	cause = NULL;
	ck_assert_int_eq(store_open(db_path, 0, NULL, &cause), -EINVAL);
	free(cause);
	store_close(st);
	store_close(NULL);
	store_reader_close(NULL);
}
END_TEST

/* The plan of one query: its parameter count and its detail rows. */
struct plan {
	int nparams;
	int search; /* a row says SEARCH */
	int scan;   /* a row says SCAN */
	char text[1024];
};

static int
plan_row(void *arg, sqlite3_stmt *row)
{
	struct plan *p = arg;
	const char *d = (const char *)sqlite3_column_text(row, 3);
	size_t n = strlen(p->text);

	p->nparams = sqlite3_bind_parameter_count(row);
	if (d == NULL)
		return 0;
	if (strncmp(d, "SEARCH ", 7) == 0)
		p->search = 1;
	if (strncmp(d, "SCAN ", 5) == 0)
		p->scan = 1;
	snprintf(p->text + n, sizeof(p->text) - n, "%s%s", n > 0 ? " | " : "", d);
	return 0;
}

static void
plan_get(struct store_reader *r, enum store_query q, struct plan *p)
{
	char *cause = NULL, *sql = NULL;

	memset(p, 0, sizeof(*p));
	ck_assert_int_ge(asprintf(&sql, "EXPLAIN QUERY PLAN %s", store_query_defs[q].sql), 0);
	ck_assert_msg(store_reader_query(r, sql, NULL, 0, plan_row, p, &cause) == 0, "%s: %s",
		      store_query_defs[q].name, cause);
	free(sql);
}

static int
rows_count(void *arg, sqlite3_stmt *row)
{
	(void)row;
	(*(int *)arg)++;
	return 0;
}

/*
 * Every named query prepares and runs on a freshly migrated DB, each
 * parameter bound to 1; the text form returns NULL on no row.
 */
START_TEST(test_queries_run)
{
	struct store *st = open_store(100);
	struct store_reader *r = open_reader();
	struct store_val v[32];
	struct plan p;
	char *cause = NULL, *text = NULL;
	int q, j, rows;

	for (j = 0; j < 32; j++)
		v[j] = SVI(1);
	for (q = 0; q < STORE_Q__COUNT; q++) {
		ck_assert_msg(store_query_defs[q].name != NULL && store_query_defs[q].sql != NULL,
			      "query %d undefined", q);
		for (j = 0; j < q; j++)
			ck_assert_str_ne(store_query_defs[j].name, store_query_defs[q].name);
		plan_get(r, (enum store_query)q, &p);
		ck_assert_int_le(p.nparams, 32);
		rows = 0;
		ck_assert_msg(store_reader_run(r, (enum store_query)q, v, p.nparams, rows_count,
					       &rows, &cause) == 0,
			      "%s: %s", store_query_defs[q].name, cause);
	}
	ck_assert_int_eq(store_reader_run(r, STORE_Q__COUNT, NULL, 0, NULL, NULL, &cause),
			 STORE_E_SQL);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	cause = NULL;
	ck_assert_int_eq(store_reader_run_int(r, STORE_Q_SCHEMA_VERSION, NULL, 0, -1),
			 store_known_version());
	ck_assert_int_eq(store_reader_run_int(r, STORE_Q__COUNT, NULL, 0, -5), -5);
	v[0] = SVT("no-such-request");
	ck_assert_int_eq(store_reader_run_text(r, STORE_Q_CALL_ROUTE, v, 1, &text, &cause), 0);
	ck_assert_ptr_null(text);
	store_reader_close(r);
	store_close(st);
}
END_TEST

/* A call row, then the text form reads it back as a new string. */
START_TEST(test_queries_text)
{
	struct store *st = open_store(100);
	struct store_reader *r;
	struct store_val c[20] = {SVI(1),
				  SVT("req-1"),
				  SVT("route-a"),
				  SVI(1000),
				  SVI(1010),
				  SVI(10),
				  SVI(500),
				  SVT("L1"),
				  SVT("llm"),
				  SVT("be"),
				  SVI(0),
				  SVN,
				  SVI(1),
				  SVN,
				  SVI(0),
				  SVI(200),
				  SVT("in"),
				  SVT("{}"),
				  SVT("{\"ok\":1}"),
				  SVT("done")};
	struct store_val v[1] = {SVT("req-1")};
	char *cause = NULL, *text = NULL;

	ck_assert_int_eq(store_put(st, STORE_CALL_INSERT, c, 20), 0);
	ck_assert_int_eq(store_flush(st), 0);
	r = open_reader();
	ck_assert_int_eq(store_reader_run_text(r, STORE_Q_CALL_ROUTE, v, 1, &text, &cause), 0);
	ck_assert_str_eq(text, "route-a");
	free(text);
	ck_assert_int_eq(store_reader_run_text(r, STORE_Q_CALL_RESPONSE, v, 1, &text, &cause), 0);
	ck_assert_str_eq(text, "{\"ok\":1}");
	free(text);
	ck_assert_int_eq(store_reader_run_int(r, STORE_Q_CALL_MAX_ID, NULL, 0, -1), 1);
	store_reader_close(r);
	store_close(st);
}
END_TEST

/*
 * A query the API serves by a key searches an index: its plan walks no
 * table (SCAN), calls and attempts above all.
 */
START_TEST(test_queries_keyed_plan)
{
	struct store *st = open_store(100);
	struct store_reader *r = open_reader();
	struct plan p;
	int q, keyed = 0;

	for (q = 0; q < STORE_Q__COUNT; q++) {
		if (!store_query_defs[q].by_key)
			continue;
		keyed++;
		plan_get(r, (enum store_query)q, &p);
		ck_assert_msg(p.search && !p.scan, "%s: %s", store_query_defs[q].name, p.text);
	}
	ck_assert_int_gt(keyed, 0);
	store_reader_close(r);
	store_close(st);
}
END_TEST

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The mode bits of path, -1 when it does not exist. */
static int
file_mode(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (int)(sb.st_mode & 07777) : -1;
}

/*
 * The DB, WAL and SHM files are 0600 whatever the umask, an older DB
 * created 0644 included; store_files_share() makes them 0640 with a group.
 */
START_TEST(test_file_modes)
{
	char wal[160], shm[160], *cause = NULL;
	struct store *st;
	mode_t old = umask(0);
	FILE *f;

	snprintf(wal, sizeof(wal), "%s-wal", db_path);
	snprintf(shm, sizeof(shm), "%s-shm", db_path);
	st = open_store(100);
	ck_assert_int_eq(file_mode(db_path), 0600);
	ck_assert_int_eq(file_mode(wal), 0600);
	ck_assert_int_eq(file_mode(shm), 0600);
	store_close(st);
	/* a DB left world-readable by an older fuseboxd is closed up */
	ck_assert_int_eq(chmod(db_path, 0644), 0);
	f = fopen(wal, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(chmod(wal, 0666), 0);
	st = open_store(100);
	ck_assert_int_eq(file_mode(db_path), 0600);
	ck_assert_int_eq(file_mode(wal), 0600);
	ck_assert_int_eq(file_mode(shm), 0600);
	ck_assert_int_eq(store_files_share(db_path, getgid(), &cause), 0);
	ck_assert_int_eq(file_mode(db_path), 0640);
	ck_assert_int_eq(file_mode(wal), 0640);
	ck_assert_int_eq(file_mode(shm), 0640);
	store_close(st);
	umask(old);
}
END_TEST

/* A read past the reader's deadline fails with STORE_E_SLOW, soon. */
START_TEST(test_reader_deadline)
{
	static const char slow[] = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
				   "FROM c WHERE x < 1000000000) SELECT count(*) FROM c";
	struct store *st = open_store(100);
	struct store_reader *r = open_reader();
	char *cause = NULL;
	int64_t t0, ms;

	ck_assert_uint_eq(store_reader_timeouts(r), 0);
	store_reader_deadline_set(r, 50);
	t0 = now_ms();
	ck_assert_int_eq(store_reader_query(r, slow, NULL, 0, NULL, NULL, &cause), STORE_E_SLOW);
	ms = now_ms() - t0;
	ck_assert_msg(ms >= 45 && ms < 1000, "cut after %lld ms", (long long)ms);
	ck_assert_ptr_nonnull(strstr(cause, "deadline"));
	free(cause);
	ck_assert_uint_eq(store_reader_timeouts(r), 1);
	/* the _int form gives its default; a quick query still runs */
	ck_assert_int_eq(store_reader_int(r, slow, NULL, 0, -7), -7);
	ck_assert_uint_eq(store_reader_timeouts(r), 2);
	ck_assert_int_eq(store_reader_run_int(r, STORE_Q_SCHEMA_VERSION, NULL, 0, -1),
			 store_known_version());
	/* no deadline: the same reader runs a longer query to its end */
	store_reader_deadline_set(r, 0);
	ck_assert_int_eq(store_reader_int(r,
					  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
					  "FROM c WHERE x < 2000000) SELECT count(*) FROM c",
					  NULL, 0, -1),
			 2000000);
	ck_assert_uint_eq(store_reader_timeouts(r), 2);
	store_reader_close(r);
	store_close(st);
}
END_TEST

/* The input of a calls row of n bytes ('a', then 'é' sequences at the end). */
static char *
long_text(size_t n)
{
	char *t = malloc(n + 1);
	size_t i;

	ck_assert_ptr_nonnull(t);
	memset(t, 'a', n);
	for (i = n - 10; i + 1 < n; i += 2) {
		t[i] = (char)0xc3;
		t[i + 1] = (char)0xa9;
	}
	t[n] = '\0';
	return t;
}

/*
 * With a text limit, calls.input and calls.result of log rows are cut at a
 * character boundary and marked with the original length; other columns
 * and promises are kept whole.
 */
START_TEST(test_text_limit)
{
	struct store *st = open_store(100);
	struct store_val c[20];
	struct store_val job[8];
	struct store_op op = {STORE_JOB_INSERT, job, 8};
	struct store_stats ss;
	char *in = long_text(1009), *cause = NULL, *got = NULL;
	struct store_reader *r;
	struct store_val key;
	int i;

	for (i = 0; i < 20; i++)
		c[i] = SVN;
	c[0] = SVI(1);
	c[1] = SVT("req-1");
	c[2] = SVT("route-a");
	c[3] = SVI(5);
	c[16] = SVT(in);
	c[17] = SVT("{\"ok\":true}");
	c[18] = SVT(in);
	store_limit_set(st, 1000);
	ck_assert_int_eq(store_put(st, STORE_CALL_INSERT, c, 20), 0);
	job[0] = SVT("j-1");
	job[1] = SVT("route-a");
	job[2] = SVT("queued");
	job[3] = SVT(in);
	job[4] = SVI(1);
	job[5] = SVI(1);
	job[6] = SVI(0);
	job[7] = SVN;
	ck_assert_int_eq(store_commit_now(st, &op, 1, NULL, &cause), 0);
	store_limit_set(st, 0);
	c[0] = SVI(2);
	c[1] = SVT("req-2");
	ck_assert_int_eq(store_put(st, STORE_CALL_INSERT, c, 20), 0);
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &ss);
	ck_assert_uint_eq(ss.truncated, 1);

	r = open_reader();
	key = SVT("req-1");
	ck_assert_int_eq(store_reader_run_text(r, STORE_Q_CALL_RESPONSE, &key, 1, &got, &cause), 0);
	ck_assert_str_eq(got, in); /* the response replays: whole */
	free(got);
	/* 999 bytes: byte 1000 would split an 'é' (it starts at 999) */
	ck_assert_int_eq(count("SELECT length(CAST(input AS BLOB)) FROM calls WHERE id = 1"),
			 999 + (int)strlen(STORE_TRUNCATED_MARK "1009 bytes]"));
	ck_assert_int_eq(count("SELECT input LIKE '%" STORE_TRUNCATED_MARK "1009 bytes]' FROM "
			       "calls WHERE id = 1"),
			 1);
	ck_assert_int_eq(count("SELECT substr(CAST(input AS BLOB), 1, 999) = "
			       "substr(CAST(response AS BLOB), 1, 999) FROM calls WHERE id = 1"),
			 1);
	ck_assert_int_eq(count("SELECT result = '{\"ok\":true}' FROM calls WHERE id = 1"), 1);
	ck_assert_int_eq(count("SELECT length(CAST(body AS BLOB)) FROM jobs"), 1009);
	ck_assert_int_eq(count("SELECT length(CAST(input AS BLOB)) FROM calls WHERE id = 2"), 1009);
	store_reader_close(r);
	store_close(st);
	free(in);
}
END_TEST

/*
 * Every lost row counts in rows_dropped (queue full and failed alike) and
 * is told in a log_rows_dropped event by the next flush, or at close.
 */
START_TEST(test_rows_dropped_told)
{
	struct store *st = open_store(100);
	struct store_stats ss;

	put_attempt(st, 1, 10);
	put_attempt(st, 1, 10); /* duplicate id: lost */
	ck_assert_int_eq(store_flush(st), 0);
	ck_assert_int_eq(store_flush(st), 0);
	store_get_stats(st, &ss);
	ck_assert_uint_eq(ss.errors, 1);
	ck_assert_uint_eq(ss.rows_dropped, 1);
	ck_assert_int_eq(ss.degraded, 0); /* a bad row is not a bad disk */
	ck_assert_int_eq(count("SELECT count(*) FROM events WHERE kind = 'log_rows_dropped' "
			       "AND detail = '1 rows dropped'"),
			 1);
	put_attempt(st, 1, 10);
	store_close(st);
	ck_assert_int_eq(count("SELECT sum(CAST(detail AS INTEGER)) FROM events WHERE kind = "
			       "'log_rows_dropped'"),
			 2);
}
END_TEST

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc;

#define TC(name, fn)                                                                               \
	do {                                                                                       \
		tc = tcase_create(name);                                                           \
		tcase_add_unchecked_fixture(tc, setup, teardown);                                  \
		tcase_set_timeout(tc, 60);                                                         \
		tcase_add_test(tc, fn);                                                            \
		suite_add_tcase(s, tc);                                                            \
	} while (0)
	TC("async_rows_after_flush", test_async_rows_after_flush);
	TC("row_blocks_reused", test_row_blocks_reused);
	TC("concurrent_producers", test_concurrent_producers);
	TC("column_order", test_column_order);
	TC("defaults_and_upserts", test_defaults_and_upserts);
	TC("batching", test_batching);
	TC("timer_commits", test_timer_commits);
	TC("commit_now_visible", test_commit_now_visible);
	TC("commit_now_rollback", test_commit_now_rollback);
	TC("commit_now_behind_backlog", test_commit_now_behind_backlog);
	TC("commit_later", test_commit_later);
	TC("commit_later_marker", test_commit_later_marker);
	TC("commit_later_shares_commits", test_commit_later_shares_commits);
	TC("order_async_then_commit_now", test_order_async_then_commit_now);
	TC("async_row_error", test_async_row_error);
	TC("queue_full", test_queue_full);
	TC("writer_idle_and_boost", test_writer_idle_and_boost);
	TC("writer_cpus_pick", test_writer_cpus_pick);
	TC("writer_keeps_off_first_cpu", test_writer_keeps_off_first_cpu);
	TC("durable_after_sigkill", test_durable_after_sigkill);
	TC("close_flushes", test_close_flushes);
	TC("prune_old_only", test_prune_old_only);
	TC("reader", test_reader);
	TC("bad_arguments", test_bad_arguments);
	TC("queries_run", test_queries_run);
	TC("queries_text", test_queries_text);
	TC("queries_keyed_plan", test_queries_keyed_plan);
	TC("file_modes", test_file_modes);
	TC("reader_deadline", test_reader_deadline);
	TC("text_limit", test_text_limit);
	TC("rows_dropped_told", test_rows_dropped_told);
#undef TC
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(store_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
