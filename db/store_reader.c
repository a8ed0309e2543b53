/*
 * store_reader: read-only connections, one per thread at a time (WAL lets
 * them read alongside the writer), each with a small cache of prepared
 * statements keyed by SQL text, and the runner of the named read queries
 * (store_query_defs in store.c).
 *
 * Deadline. A reader may bound its queries (store_reader_deadline_set):
 * the outermost query sets the deadline when it starts, queries its row
 * callbacks run share it, and SQLite's progress handler, called every
 * STORE_PROGRESS_OPS virtual machine steps, interrupts the statement once
 * the monotonic clock has passed it. An interrupted statement is only
 * reset, never half-read: the query fails as a whole with STORE_E_SLOW.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define STORE_READER_CACHE 32
#define STORE_PROGRESS_OPS 1000 /* a few microseconds of work between clock reads */

struct store_reader_entry {
	char *sql;
	sqlite3_stmt *stmt;
};

struct store_reader {
	sqlite3 *db;
	struct store_reader_entry cache[STORE_READER_CACHE];
	int next;	     /* next cache slot to reuse */
	int64_t limit_us;    /* 0: no deadline */
	int64_t deadline_us; /* of the outermost query running */
	int depth;	     /* queries running (row callbacks nest them) */
	int cut;	     /* the progress handler interrupted this query */
	uint64_t timeouts;
};

static int
store_reader_progress(void *arg)
{
	struct store_reader *r = arg;

	if (r->depth > 0 && store_mono_us() > r->deadline_us) {
		r->cut = 1;
		return 1;
	}
	return 0;
}

void
store_reader_deadline_set(struct store_reader *r, int limit_ms)
{
	r->limit_us = limit_ms > 0 ? (int64_t)limit_ms * 1000 : 0;
	if (r->limit_us > 0)
		sqlite3_progress_handler(r->db, STORE_PROGRESS_OPS, store_reader_progress, r);
	else
		sqlite3_progress_handler(r->db, 0, NULL, NULL);
}

int
store_reader_was_cut(const struct store_reader *r)
{
	return r != NULL && r->cut;
}

int
store_reader_tune(struct store_reader *r, int64_t mmap_bytes, int cache_kib, char **cause)
{
	char sql[96];
	int rc;

	snprintf(sql, sizeof sql, "PRAGMA mmap_size = %lld", (long long)mmap_bytes);
	rc = store_exec(r->db, sql, cause);
	if (rc == 0) {
		snprintf(sql, sizeof sql, "PRAGMA cache_size = -%d", cache_kib);
		rc = store_exec(r->db, sql, cause);
	}
	return rc;
}

uint64_t
store_reader_timeouts(const struct store_reader *r)
{
	return r->timeouts;
}

int
store_reader_open(const char *path, struct store_reader **out, char **cause)
{
	struct store_reader *r = NULL;
	int rc;

	r = store_alloc(sizeof(*r));
	memset(r, 0, sizeof(*r));
	rc = store_db_open(path, SQLITE_OPEN_READONLY, &r->db, cause);
	if (rc != 0)
		goto out;
	*out = r;
	r = NULL;
out:
	store_reader_close(r);
	return rc;
}

void
store_reader_close(struct store_reader *r)
{
	int i;

	for (i = 0; r != NULL && i < STORE_READER_CACHE; i++) {
		sqlite3_finalize(r->cache[i].stmt);
		free(r->cache[i].sql);
	}
	if (r != NULL)
		sqlite3_close(r->db);
	free(r);
}

/*
 * Find or prepare the statement for sql. A cached statement that is still
 * running (a row callback querying again) is neither reused nor evicted:
 * the caller then gets a private statement (*temp = 1) to finalize.
 */
static int
store_reader_stmt(struct store_reader *r, const char *sql, sqlite3_stmt **out, int *temp,
		  char **cause)
{
	struct store_reader_entry *e = NULL;
	sqlite3_stmt *stmt = NULL;
	int i, slot, busy_hit = 0, rc = 0;

	*temp = 0;
	for (i = 0; i < STORE_READER_CACHE; i++) {
		e = &r->cache[i];
		if (e->sql == NULL || strcmp(e->sql, sql) != 0)
			continue;
		if (!sqlite3_stmt_busy(e->stmt)) {
			*out = e->stmt;
			goto out;
		}
		busy_hit = 1;
		break;
	}
	if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL) !=
	    SQLITE_OK) {
		store_cause_set(cause, "%s", sqlite3_errmsg(r->db));
		rc = STORE_E_SQL;
		goto out;
	}
	if (stmt == NULL) {
		store_cause_set(cause, "empty SQL");
		rc = STORE_E_SQL;
		goto out;
	}
	for (i = 0; !busy_hit && i < STORE_READER_CACHE; i++) {
		slot = (r->next + i) % STORE_READER_CACHE;
		e = &r->cache[slot];
		if (e->stmt != NULL && sqlite3_stmt_busy(e->stmt))
			continue;
		sqlite3_finalize(e->stmt);
		free(e->sql);
		e->sql = store_strdup(sql);
		e->stmt = stmt;
		r->next = (slot + 1) % STORE_READER_CACHE;
		*out = stmt;
		stmt = NULL;
		goto out;
	}
	*out = stmt;
	*temp = 1;
	stmt = NULL;
out:
	sqlite3_finalize(stmt);
	return rc;
}

int
store_reader_query(struct store_reader *r, const char *sql, const struct store_val *vals, int nvals,
		   store_row_cb row_cb, void *arg, char **cause)
{
	sqlite3_stmt *stmt = NULL;
	int rc, src, temp = 0;

	if (r->depth++ == 0) {
		r->deadline_us = store_mono_us() + r->limit_us;
		r->cut = 0;
	}
	if (nvals < 0 || (nvals > 0 && vals == NULL)) {
		store_cause_set(cause, "bad values");
		rc = STORE_E_SQL;
		goto out;
	}
	rc = store_reader_stmt(r, sql, &stmt, &temp, cause);
	if (rc != 0)
		goto out;
	if (nvals > sqlite3_bind_parameter_count(stmt)) {
		store_cause_set(cause, "%d values for %d parameters", nvals,
				sqlite3_bind_parameter_count(stmt));
		rc = STORE_E_SQL;
		goto out;
	}
	src = store_bind(stmt, vals, nvals);
	if (src != SQLITE_OK) {
		store_cause_set(cause, "binding: %s", sqlite3_errmsg(r->db));
		rc = STORE_E_SQL;
		goto out;
	}
	while ((src = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (row_cb != NULL && row_cb(arg, stmt) != 0)
			break;
	}
	if (r->cut) {
		/* this statement or one a row callback ran: either way partial */
		store_cause_set(cause, "read cut after %lld ms (the reader's deadline)",
				(long long)(r->limit_us / 1000));
		rc = STORE_E_SLOW;
	} else if (src != SQLITE_ROW && src != SQLITE_DONE) {
		store_cause_set(cause, "%s", sqlite3_errmsg(r->db));
		rc = STORE_E_SQL;
	}
out:
	if (stmt != NULL) {
		sqlite3_reset(stmt);
		sqlite3_clear_bindings(stmt);
		if (temp)
			sqlite3_finalize(stmt);
	}
	if (--r->depth == 0 && r->cut)
		r->timeouts++;
	return rc;
}

struct store_int_arg {
	int64_t value;
};

static int
store_int_row(void *arg, sqlite3_stmt *row)
{
	struct store_int_arg *a = arg;

	if (sqlite3_column_type(row, 0) != SQLITE_NULL)
		a->value = sqlite3_column_int64(row, 0);
	return 1;
}

int64_t
store_reader_int(struct store_reader *r, const char *sql, const struct store_val *vals, int nvals,
		 int64_t def)
{
	struct store_int_arg a = {def};
	char *cause = NULL;

	if (store_reader_query(r, sql, vals, nvals, store_int_row, &a, &cause) != 0) {
		a.value = def;
		free(cause);
	}
	return a.value;
}

int
store_reader_run(struct store_reader *r, enum store_query q, const struct store_val *vals,
		 int nvals, store_row_cb row_cb, void *arg, char **cause)
{
	if ((int)q < 0 || q >= STORE_Q__COUNT) {
		store_cause_set(cause, "no query %d", (int)q);
		return STORE_E_SQL;
	}
	return store_reader_query(r, store_query_defs[q].sql, vals, nvals, row_cb, arg, cause);
}

int64_t
store_reader_run_int(struct store_reader *r, enum store_query q, const struct store_val *vals,
		     int nvals, int64_t def)
{
	struct store_int_arg a = {def};
	char *cause = NULL;

	if (store_reader_run(r, q, vals, nvals, store_int_row, &a, &cause) != 0) {
		a.value = def;
		free(cause);
	}
	return a.value;
}

static int
store_text_row(void *arg, sqlite3_stmt *row)
{
	const unsigned char *t = sqlite3_column_text(row, 0);
	char **out = arg;

	if (t != NULL)
		*out = store_strdup((const char *)t);
	return 1;
}

int
store_reader_run_text(struct store_reader *r, enum store_query q, const struct store_val *vals,
		      int nvals, char **out, char **cause)
{
	*out = NULL;
	return store_reader_run(r, q, vals, nvals, store_text_row, out, cause);
}

int
store_schema_version(struct store_reader *r)
{
	return (int)store_reader_run_int(r, STORE_Q_SCHEMA_VERSION, NULL, 0, -1);
}
