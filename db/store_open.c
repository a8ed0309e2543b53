/*
 * store_open: the store's life and its producer side — open (files,
 * migrations, the prepared statements, the writer thread), close, and
 * store_put, which bounds a log row's text and queues it for the writer.
 * It sits on top of the module: store.c (tables, SQL helpers, migrations),
 * store_rows.c (row blocks) and store_writer.c (the writer thread) never
 * call back into it. Any thread (store_open/close: the owner's).
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

/*
 * The text columns of log rows that store_limit_set() bounds: statement,
 * 0-based value index. Caller-sized text only; calls.response is kept
 * whole, since a repeated request replays it.
 */
static const struct {
	enum store_stmt stmt;
	int val;
} store_bounded_cols[] = {
	{STORE_CALL_INSERT, 16}, /* input */
	{STORE_CALL_INSERT, 17}, /* result */
};

/* File modes: the DB, WAL and SHM files (store_files_share: shared). */
#define STORE_FILE_MODE	       0600
#define STORE_FILE_MODE_SHARED 0640

static int
store_stmts_prepare(struct store *st, char **cause)
{
	int i, rc = 0;

	for (i = 0; i < STORE_STMT__COUNT; i++) {
		if (sqlite3_prepare_v3(st->db, store_stmt_defs[i].sql, -1,
				       SQLITE_PREPARE_PERSISTENT, &st->stmts[i],
				       NULL) != SQLITE_OK) {
			store_cause_set(cause, "preparing %s: %s", store_stmt_defs[i].name,
					sqlite3_errmsg(st->db));
			rc = STORE_E_SQL;
			goto out;
		}
		st->nparams[i] = sqlite3_bind_parameter_count(st->stmts[i]);
	}
	rc = store_prune_prepare(st, cause);
out:
	return rc;
}

/* Free a store that may be half-built. The writer must not be running. */
static void
store_free(struct store *st)
{
	int i;

	if (st != NULL) {
		for (i = 0; i < STORE_STMT__COUNT; i++)
			sqlite3_finalize(st->stmts[i]);
		for (i = 0; i < STORE_PRUNE_COUNT; i++)
			sqlite3_finalize(st->prune_stmts[i]);
		if (st->db != NULL && sqlite3_close(st->db) != SQLITE_OK)
			fprintf(stderr, "store: close: %s\n", sqlite3_errmsg(st->db));
		if (st->ring != NULL)
			store_rows_free(st, st->ring, st->cap);
		free(st->ring);
		store_spares_release(st);
		pthread_mutex_destroy(&st->spare_lock);
		pthread_cond_destroy(&st->done_cond);
		pthread_cond_destroy(&st->wake_cond);
		pthread_mutex_destroy(&st->lock);
		free(st);
	}
}

/* A path SQLite does not map to files of its own (":memory:", a URI). */
static int
store_path_is_file(const char *path)
{
	return strcmp(path, ":memory:") != 0 && strncmp(path, "file:", 5) != 0;
}

/*
 * Give the DB file at path (created here when missing, so that SQLite never
 * creates it with the umask's mode) and its WAL and SHM files, where they
 * exist, mode and, unless gid is -1, group gid. SQLite creates WAL and SHM
 * files later with the DB file's mode (and, as root, its owner and group).
 * 0 or -errno with *cause.
 */
static int
store_files_mode(const char *path, mode_t mode, gid_t gid, char **cause)
{
	static const char *const suffix[] = {"", "-wal", "-shm"};
	char name[4096];
	size_t i;
	int fd, rc = 0;

	if (!store_path_is_file(path))
		return 0;
	for (i = 0; i < STORE_NELEM(suffix) && rc == 0; i++) {
		if (snprintf(name, sizeof(name), "%s%s", path, suffix[i]) >= (int)sizeof(name)) {
			store_cause_set(cause, "%s: path too long", path);
			return -ENAMETOOLONG;
		}
		fd = open(name, O_RDWR | O_CLOEXEC | (i == 0 ? O_CREAT : 0), mode);
		if (fd < 0 && i > 0 && errno == ENOENT)
			continue;
		if (fd < 0) {
			rc = -errno;
			store_cause_set(cause, "%s: %s", name, strerror(errno));
			break;
		}
		if (gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid) != 0) {
			rc = -errno;
			store_cause_set(cause, "%s: cannot give it group %u: %s", name,
					(unsigned)gid, strerror(errno));
		} else if (fchmod(fd, mode) != 0) {
			rc = -errno;
			store_cause_set(cause, "%s: cannot set mode %03o: %s", name, (unsigned)mode,
					strerror(errno));
		}
		close(fd);
	}
	return rc;
}

int
store_files_share(const char *path, gid_t gid, char **cause)
{
	if (path == NULL || gid == (gid_t)-1) {
		store_cause_set(cause, "store_files_share: bad arguments");
		return -EINVAL;
	}
	return store_files_mode(path, STORE_FILE_MODE_SHARED, gid, cause);
}

void
store_limit_set(struct store *st, int64_t max_bytes)
{
	__atomic_store_n(&st->text_max, max_bytes > 0 ? max_bytes : 0, __ATOMIC_RELAXED);
}

/*
 * The length of s cut to at most max bytes, back to the start of a UTF-8
 * character (never inside a multi-byte sequence).
 */
static size_t
store_text_cut(const char *s, size_t max)
{
	size_t n = max;

	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/*
 * vals with the bounded columns of stmt cut to max bytes (see
 * store_limit_set): *out is vals itself when nothing is cut, else tmp,
 * whose cut strings the caller frees (bufs, one per value, NULL where
 * none). Returns how many values were cut.
 */
static int
store_vals_bound(enum store_stmt stmt, const struct store_val *vals, int nvals, int64_t max,
		 struct store_val *tmp, char **bufs, const struct store_val **out)
{
	size_t i, len, keep;
	int k, cut = 0;

	*out = vals;
	if (max <= 0)
		return 0;
	for (i = 0; i < STORE_NELEM(store_bounded_cols); i++) {
		k = store_bounded_cols[i].val;
		if (store_bounded_cols[i].stmt != stmt || k >= nvals || vals[k].type != SV_TEXT ||
		    vals[k].s == NULL)
			continue;
		len = strlen(vals[k].s);
		if (len <= (size_t)max)
			continue;
		if (cut == 0)
			memcpy(tmp, vals, sizeof(*tmp) * (size_t)nvals);
		keep = store_text_cut(vals[k].s, (size_t)max);
		if (asprintf(&bufs[k], "%.*s" STORE_TRUNCATED_MARK "%zu bytes]", (int)keep,
			     vals[k].s, len) < 0) {
			fprintf(stderr, "store: out of memory\n");
			abort();
		}
		tmp[k].s = bufs[k];
		cut++;
	}
	if (cut > 0)
		*out = tmp;
	return cut;
}

int
store_open(const char *path, int queue_cap, struct store **out, char **cause)
{
	struct store *st = NULL;
	pthread_condattr_t attr;
	int rc;

	if (path == NULL || out == NULL || queue_cap < 1) {
		store_cause_set(cause, "store_open: bad arguments");
		rc = -EINVAL;
		goto out;
	}
	st = store_alloc(sizeof(*st));
	memset(st, 0, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	pthread_mutex_init(&st->spare_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&st->wake_cond, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&st->done_cond, NULL);
	st->cap = queue_cap;
	st->threshold = queue_cap < STORE_BATCH_ROWS ? queue_cap : STORE_BATCH_ROWS;
	st->boost_rows = queue_cap / 8 > 0 ? queue_cap / 8 : 1;
	st->ring = store_alloc(sizeof(*st->ring) * (size_t)queue_cap);
	memset(st->ring, 0, sizeof(*st->ring) * (size_t)queue_cap);
	st->reqs_tail = &st->reqs;

	rc = store_files_mode(path, STORE_FILE_MODE, (gid_t)-1, cause);
	if (rc != 0)
		goto out;
	rc = store_db_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &st->db, cause);
	if (rc != 0)
		goto out;
	rc = store_db_configure(st->db, path, cause);
	if (rc != 0)
		goto out;
	rc = store_migrate(st->db, cause);
	if (rc != 0)
		goto out;
	rc = store_stmts_prepare(st, cause);
	if (rc != 0)
		goto out;

	rc = pthread_create(&st->thread, NULL, store_writer_main, st);
	if (rc != 0) {
		store_cause_set(cause, "store writer thread: %s", strerror(rc));
		rc = -rc;
		goto out;
	}
	st->thread_started = 1;
	*out = st;
	st = NULL;
out:
	store_free(st);
	return rc;
}

void
store_close(struct store *st)
{
	if (st != NULL && st->thread_started) {
		pthread_mutex_lock(&st->lock);
		st->closing = 1;
		store_boost(st);
		pthread_cond_signal(&st->wake_cond);
		pthread_mutex_unlock(&st->lock);
		pthread_join(st->thread, NULL);
	}
	store_free(st);
}

int
store_put(struct store *st, enum store_stmt stmt, const struct store_val *vals, int nvals)
{
	struct store_val tmp[STORE_MAX_VALS];
	char *bufs[STORE_MAX_VALS] = {NULL};
	const struct store_val *use = vals;
	struct store_row *row = NULL;
	int64_t max;
	int rc, i, cut = 0;

	rc = store_args_check(st, stmt, vals, nvals);
	if (rc != 0)
		goto out;
	max = __atomic_load_n(&st->text_max, __ATOMIC_RELAXED);
	if (nvals <= STORE_MAX_VALS)
		cut = store_vals_bound(stmt, vals, nvals, max, tmp, bufs, &use);
	rc = store_row_make(st, stmt, use, nvals, &row);
	for (i = 0; i < nvals && i < STORE_MAX_VALS; i++)
		free(bufs[i]);
	if (rc != 0)
		goto out;
	pthread_mutex_lock(&st->lock);
	st->stats.truncated += (uint64_t)cut;
	if (st->closing) {
		rc = STORE_E_CLOSED;
	} else if (st->taken + st->pending >= st->cap) {
		if (st->pending == 0 && st->dropped_pending == 0) {
			st->first_pending_us = store_mono_us();
			pthread_cond_signal(&st->wake_cond);
		}
		st->dropped_pending++;
		st->stats.dropped++;
		store_boost(st);
		rc = STORE_E_FULL;
	} else {
		if (st->pending == 0 && st->dropped_pending == 0)
			st->first_pending_us = store_mono_us();
		st->ring[(st->head + st->taken + st->pending) % st->cap] = row;
		row = NULL;
		st->pending++;
		st->enqueued++;
		if (st->pending == 1 || st->pending == st->threshold)
			pthread_cond_signal(&st->wake_cond);
		if (st->taken + st->pending >= st->boost_rows)
			store_boost(st);
	}
	pthread_mutex_unlock(&st->lock);
out:
	if (row != NULL)
		store_rows_free(st, &row, 1);
	return rc;
}

void
store_get_stats(struct store *st, struct store_stats *out)
{
	pthread_mutex_lock(&st->lock);
	*out = st->stats;
	out->rows_dropped = st->stats.dropped + st->stats.errors;
	out->degraded = st->stats.degraded_at > 0 &&
			store_wall_ms() - st->stats.degraded_at < STORE_DEGRADED_HOLD_MS;
	out->queued = (uint64_t)(st->taken + st->pending);
	out->prune_running = st->prune_running;
	out->writer_idle = st->idle;
	out->writer_cpus = st->writer_cpus;
	pthread_mutex_unlock(&st->lock);
	out->spare_blocks += store_spares_count(st);
}
