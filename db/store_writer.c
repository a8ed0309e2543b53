/*
 * store_writer: the writer thread (the shape of Redis bio.c: a
 * mutex-protected queue, a condition variable, one thread that owns the
 * resource), the requests that wait for it, retention, and where and at
 * which priority the thread runs. The queue is described in store_int.h.
 *
 * Requests. store_commit_now() and store_flush() put a request (on the
 * caller's stack) on a FIFO list, stamped with the number of rows queued
 * before it, and sleep on done_cond. The writer runs each request after
 * exactly those rows, inside the same transaction, the request's ops
 * wrapped in a SAVEPOINT so that they fail or succeed together. A batch
 * that carries ops of a request commits with synchronous=FULL: a promise
 * survives power loss, not just a crash. Callers are woken only after
 * COMMIT returned. store_commit_later() queues the same request on the
 * heap, with copies of its ops, and returns: the writer calls its done
 * callback after the COMMIT and frees it. The engine thread uses it so
 * that a 202 waits for its fsync without the loop waiting too; the
 * requests of one batch share one fsync.
 *
 * Batching. The writer commits when 1000 rows are pending (or the queue is
 * full), 50 ms after the first pending row, at once when a request is
 * waiting, and when closing. A batch takes at most 8192 rows, so that a
 * commit-now queued behind a backlog waits for a few short transactions
 * rather than one huge one. Prepared statements are made once at open
 * time and reused. Retention (store_prune) runs as small DELETEs
 * alternating with batches.
 *
 * Lost rows. Every log row that does not reach the DB is counted: refused
 * because the queue was full (stats.dropped) or lost in SQL (stats.errors:
 * a failed statement, or a whole transaction on disk full or an I/O
 * error). The count is told in an events row of kind "log_rows_dropped"
 * ("N rows dropped"), at most one per STORE_DROP_EVENT_MS, and at once in
 * a batch that carries a flush or closes the store; an event that is lost
 * too (the disk is still full) is told again by the next one. A loss in a
 * transaction or to a storage error (full, I/O, read-only, locked) marks
 * the store degraded (stats.degraded, for STORE_DEGRADED_HOLD_MS after
 * the last such loss); promises that fail meanwhile fail to their callers
 * as always, never silently.
 *
 * Scheduling. The writer is background work: a thread that answers calls
 * must get the core first. It runs at nice 10 and, where it can be raised
 * back (store_idle_probe), in SCHED_IDLE: it then runs only on a core
 * nobody else wants. Nice 10 alone is not enough, since a batch holds a
 * core for a slice; in SCHED_IDLE an answer's tail latency comes close to
 * what it is with no writer work at all. An idle thread can starve, so it
 * is raised to SCHED_OTHER (still nice 10) while a backlog of cap/8 rows
 * waits, while a caller sleeps on a request (commit-now, flush: that
 * caller would otherwise wait on the idlest thread of the machine) and
 * when closing; it drops back once the queue is below one batch and no
 * request waits.
 * Where the process may use two or more CPUs, the writer also keeps off
 * the first of them (store_writer_cpus; FUSEBOX_WRITER_AFFINITY=off keeps
 * it anywhere). Left free, the scheduler moves it next to the engine
 * thread that woke it, and its WAL writes and checkpoint fsyncs complete
 * there, on the core the answers need. The engine itself is never pinned.
 * Figures: docs/ENGINE-NOTES.md, "The writer thread's core".
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

/* Nice of the writer thread (background work, see store_writer_main). */
#define STORE_WRITER_NICE 10

#define STORE_BATCH_WAIT_US (50 * 1000)
#define STORE_BATCH_MAX	    8192 /* bounds a commit-now's wait */
#define STORE_PRUNE_ROWS    500

/*
 * A commit-now or flush (nops == 0) request, on the caller's stack; or a
 * commit-later (done != NULL), on the heap with copies of its ops, which
 * the writer completes and frees itself.
 */
struct store_req {
	const struct store_op *ops; /* borrowed until done, or owned */
	int nops;
	uint64_t seq; /* rows queued before this request */
	int done;     /* set by the writer, under lock */
	int rc;
	char *cause;
	int64_t rowid;
	struct store_req *next;
	store_done_fn done_fn; /* commit-later: called after COMMIT */
	void *done_arg;
	struct store_row **rows; /* commit-later: the ops' values */
};

/* What the writer took from the queue for one transaction. */
struct store_batch {
	int start; /* ring index of the first row */
	int nrows;
	uint64_t start_seq;
	struct store_req *reqs;
	uint64_t dropped; /* drops to report in an events row */
	int closing;	  /* the store closes after this batch */
	char why[160];	  /* set when rows were lost to storage: SQLite's words */
};

/*
 * Retention, one table per entry, in this order: ?1 cutoff (epoch ms),
 * ?2 row limit. Each DELETE is its own small transaction.
 */
static const char *const store_prune_sql[] = {
	"DELETE FROM attempts WHERE rowid IN (SELECT rowid FROM attempts "
	"WHERE started_at < ?1 LIMIT ?2)",
	"DELETE FROM validation_failures WHERE rowid IN (SELECT rowid FROM "
	"validation_failures WHERE at < ?1 LIMIT ?2)",
	"DELETE FROM degradations WHERE rowid IN (SELECT rowid FROM "
	"degradations WHERE at < ?1 LIMIT ?2)",
	"DELETE FROM calls WHERE rowid IN (SELECT rowid FROM calls "
	"WHERE started_at < ?1 LIMIT ?2)",
	"DELETE FROM events WHERE rowid IN (SELECT rowid FROM events "
	"WHERE at < ?1 LIMIT ?2)",
	"DELETE FROM alerts WHERE rowid IN (SELECT rowid FROM alerts "
	"WHERE at < ?1 LIMIT ?2)",
	/* SLO windows reach back 30 days whatever log.retention_days says */
	"DELETE FROM slo_minutes WHERE rowid IN (SELECT rowid FROM "
	"slo_minutes WHERE minute < min(?1, unixepoch() * 1000 - 2678400000) LIMIT ?2)",
	"DELETE FROM cache WHERE rowid IN (SELECT rowid FROM cache "
	"WHERE stored_at < ?1 LIMIT ?2)",
	"DELETE FROM reviews WHERE rowid IN (SELECT rowid FROM reviews "
	"WHERE decided_at < ?1 LIMIT ?2)",
	"DELETE FROM jobs WHERE rowid IN (SELECT rowid FROM jobs "
	"WHERE state IN ('done', 'failed') AND updated_at < ?1 LIMIT ?2)",
};
_Static_assert(STORE_NELEM(store_prune_sql) == STORE_PRUNE_COUNT,
	       "STORE_PRUNE_COUNT counts store_prune_sql");

/* Prepare the retention statements (store_open). 0 or STORE_E_SQL. */
int
store_prune_prepare(struct store *st, char **cause)
{
	int i, rc = 0;

	for (i = 0; i < STORE_PRUNE_COUNT; i++) {
		if (sqlite3_prepare_v3(st->db, store_prune_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
				       &st->prune_stmts[i], NULL) != SQLITE_OK) {
			store_cause_set(cause, "preparing retention: %s", sqlite3_errmsg(st->db));
			rc = STORE_E_SQL;
			goto out;
		}
	}
out:
	return rc;
}

/*
 * Is a batch due? Writer, under lock. *deadline_us: when the pending rows
 * fall due (-1: nothing pending, wait for a signal).
 */
static int
store_batch_due(struct store *st, int64_t now_us, int64_t *deadline_us)
{
	int64_t wait_ms = STORE_DROP_EVENT_MS - (store_wall_ms() - st->drop_event_at);
	int due;

	*deadline_us = -1;
	if (st->reqs != NULL)
		due = 1;
	else if (st->pending == 0 && st->dropped_pending == 0 && st->unreported > 0) {
		/* lost rows to tell (see "Lost rows" above) */
		due = st->closing ? !st->close_told : wait_ms <= 0;
		if (!due && !st->closing)
			*deadline_us = now_us + wait_ms * 1000;
	} else if (st->pending == 0 && st->dropped_pending == 0)
		due = 0;
	else if (st->closing || st->pending >= st->threshold)
		due = 1;
	else {
		*deadline_us = st->first_pending_us + STORE_BATCH_WAIT_US;
		due = now_us >= *deadline_us;
	}
	return due;
}

/* Take everything queued into b. Writer, under lock. */
static void
store_batch_take(struct store *st, struct store_batch *b)
{
	struct store_req *r, *last;
	uint64_t end_seq;

	b->start = st->head;
	b->nrows = st->pending < STORE_BATCH_MAX ? st->pending : STORE_BATCH_MAX;
	b->start_seq = st->head_seq;
	b->dropped = st->dropped_pending;
	b->closing = st->closing;
	b->why[0] = '\0';
	st->taken = b->nrows;
	st->pending -= b->nrows;
	st->dropped_pending = 0;

	/*
	 * Requests are in seq order: take those due within these rows; the
	 * rest wait for a later batch.
	 */
	end_seq = b->start_seq + (uint64_t)b->nrows;
	last = NULL;
	for (r = st->reqs; r != NULL && r->seq <= end_seq; r = r->next)
		last = r;
	b->reqs = NULL;
	if (last != NULL) {
		b->reqs = st->reqs;
		st->reqs = last->next;
		last->next = NULL;
		if (st->reqs == NULL)
			st->reqs_tail = &st->reqs;
	}
}

/* Is SQLite's last error on db the storage's (not the statement's) fault? */
static int
store_storage_error(sqlite3 *db)
{
	switch (sqlite3_errcode(db)) {
	case SQLITE_FULL:
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
	case SQLITE_READONLY:
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
	case SQLITE_NOMEM:
	case SQLITE_PROTOCOL:
		return 1;
	default:
		return 0;
	}
}

/* Note in b why rows were lost (the first reason of the batch). */
static void
store_batch_why(struct store_batch *b, const char *why)
{
	if (b->why[0] == '\0')
		snprintf(b->why, sizeof(b->why), "%s", why != NULL ? why : "write failed");
}

/*
 * Run a request's ops inside a savepoint. Sets req->rc / cause / rowid.
 * Returns 1 when the failure rolled back the enclosing transaction (SQLite
 * does that for I/O errors, disk full and the like), else 0.
 */
static int
store_req_run(struct store *st, struct store_req *req)
{
	int i, aborted = 0;

	if (req->nops == 0)
		goto out;
	req->rc = store_exec(st->db, "SAVEPOINT commit_now", &req->cause);
	for (i = 0; i < req->nops && req->rc == 0; i++) {
		req->rc = store_stmt_run(st, req->ops[i].stmt, req->ops[i].vals, req->ops[i].nvals,
					 &req->cause);
	}
	req->rowid = sqlite3_last_insert_rowid(st->db);
	if (sqlite3_get_autocommit(st->db))
		aborted = 1;
	else if (req->rc == 0)
		req->rc = store_exec(st->db, "RELEASE commit_now", &req->cause);
	else
		sqlite3_exec(st->db,
			     "ROLLBACK TO commit_now; "
			     "RELEASE commit_now",
			     NULL, NULL, NULL);
out:
	return aborted;
}

/* Fail every request in [from, to) that had succeeded so far. */
static void
store_reqs_fail(struct store_req *from, struct store_req *to, const char *why)
{
	struct store_req *r;

	for (r = from; r != to; r = r->next) {
		if (r->nops == 0 || r->rc != 0)
			continue;
		r->rc = STORE_E_SQL;
		store_cause_set(&r->cause, "%s", why);
	}
}

/*
 * Execute one batch: rows and requests in queue order, then the events row
 * for lost rows (see "Lost rows" above), in one transaction. Writer
 * thread, without the lock. *ok_rows / *err_rows count rows that were
 * committed / lost; b->why says why when storage lost them.
 */
static void
store_batch_run(struct store *st, struct store_batch *b, uint64_t *ok_rows, uint64_t *err_rows,
		int *synced)
{
	struct store_req *req, *tx_first;
	struct store_row *row;
	struct store_val ev[4];
	uint64_t seq, ok = 0, errs = 0, logged = 0, report = 0;
	int64_t now_ms = store_wall_ms();
	char *cause = NULL, detail[64];
	int i, sync = 0, flush = 0, rc, ev_ok = 0;

	*synced = 0;
	for (req = b->reqs; req != NULL; req = req->next) {
		if (req->nops > 0)
			sync = 1;
		else
			flush = 1;
	}
	st->unreported += b->dropped;
	if (st->unreported > 0 &&
	    (flush || b->closing || now_ms - st->drop_event_at >= STORE_DROP_EVENT_MS))
		report = st->unreported;
	if (report > 0) {
		st->drop_event_at = now_ms; /* tried: the next try waits, told or not */
		st->close_told = b->closing;
	}
	if (b->nrows == 0 && report == 0 && !sync)
		goto out;
	if (sync)
		store_exec(st->db, "PRAGMA synchronous = FULL", NULL);
	if (store_exec(st->db, "BEGIN IMMEDIATE", &cause) != 0) {
		fprintf(stderr, "store: batch of %d rows lost: %s\n", b->nrows, cause);
		errs = (uint64_t)b->nrows;
		store_reqs_fail(b->reqs, NULL, cause);
		store_batch_why(b, cause);
		goto out;
	}

	req = tx_first = b->reqs;
	for (i = 0; i <= b->nrows; i++) {
		seq = b->start_seq + (uint64_t)i;
		while (req != NULL && req->seq <= seq) {
			if (store_req_run(st, req)) {
				/* The transaction is gone: so is all before. */
				fprintf(stderr,
					"store: transaction aborted "
					"(%s); %" PRIu64 " rows lost\n",
					req->cause, ok);
				store_batch_why(b, req->cause);
				errs += ok;
				ok = 0;
				store_reqs_fail(tx_first, req,
						"transaction aborted by a later error");
				store_exec(st->db, "BEGIN IMMEDIATE", NULL);
				tx_first = req->next;
			} else if (req->rc != 0 && store_storage_error(st->db)) {
				store_batch_why(b, req->cause);
			}
			req = req->next;
		}
		if (i == b->nrows)
			break;
		row = st->ring[(b->start + i) % st->cap];
		rc = store_stmt_run(st, row->stmt, row->vals, row->nvals, &cause);
		if (rc == 0) {
			ok++;
			continue;
		}
		errs++;
		if (store_storage_error(st->db))
			store_batch_why(b, cause);
		if (logged++ == 0)
			fprintf(stderr, "store: row failed: %s\n", cause);
		free(cause);
		cause = NULL;
		if (sqlite3_get_autocommit(st->db)) {
			fprintf(stderr, "store: transaction aborted; %" PRIu64 " rows lost\n", ok);
			store_batch_why(b, "transaction aborted");
			errs += ok;
			ok = 0;
			store_reqs_fail(tx_first, req, "transaction aborted by a later error");
			store_exec(st->db, "BEGIN IMMEDIATE", NULL);
			tx_first = req;
		}
	}
	if (logged > 1)
		fprintf(stderr,
			"store: %" PRIu64 " more rows failed in this "
			"batch\n",
			logged - 1);

	if (report > 0) {
		snprintf(detail, sizeof(detail), "%" PRIu64 " rows dropped", report);
		ev[0] = SVI(now_ms);
		ev[1] = SVT("log_rows_dropped");
		ev[2] = SVT("store");
		ev[3] = SVT(detail);
		if (store_stmt_run(st, STORE_EVENT_INSERT, ev, 4, &cause) == 0)
			ev_ok = 1;
		else
			fprintf(stderr, "store: %s\n", cause);
		free(cause);
		cause = NULL;
	}

	if (sqlite3_get_autocommit(st->db) || store_exec(st->db, "COMMIT", &cause) != 0) {
		fprintf(stderr,
			"store: commit failed, %" PRIu64 " rows lost: "
			"%s\n",
			ok, cause != NULL ? cause : "no transaction");
		store_batch_why(b, cause != NULL ? cause : "commit failed");
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		errs += ok;
		ok = 0;
		store_reqs_fail(tx_first, NULL, cause != NULL ? cause : "commit failed");
		goto out;
	}
	*synced = sync;
	if (ev_ok) {
		ok++;
		st->unreported -= report;
	}
	for (req = b->reqs; req != NULL; req = req->next) {
		if (req->rc == 0)
			ok += (uint64_t)req->nops;
	}
out:
	if (sync)
		store_exec(st->db, "PRAGMA synchronous = NORMAL", NULL);
	free(cause);
	st->unreported += errs;
	*ok_rows = ok;
	*err_rows = errs;
}

/*
 * One step of retention: at most STORE_PRUNE_ROWS rows from the current
 * table, in its own (autocommit) transaction. Writer, without the lock.
 */
static void
store_prune_step(struct store *st)
{
	sqlite3_stmt *stmt;
	int64_t before;
	int restart, n = 0;

	pthread_mutex_lock(&st->lock);
	restart = st->prune_restart;
	st->prune_restart = 0;
	before = st->prune_before;
	pthread_mutex_unlock(&st->lock);
	if (restart)
		st->prune_table = 0;

	if (st->prune_table < STORE_PRUNE_COUNT) {
		stmt = st->prune_stmts[st->prune_table];
		sqlite3_bind_int64(stmt, 1, before);
		sqlite3_bind_int(stmt, 2, STORE_PRUNE_ROWS);
		if (sqlite3_step(stmt) == SQLITE_DONE)
			n = sqlite3_changes(st->db);
		else
			fprintf(stderr, "store: retention: %s\n", sqlite3_errmsg(st->db));
		sqlite3_reset(stmt);
		if (n < STORE_PRUNE_ROWS)
			st->prune_table++;
	}

	pthread_mutex_lock(&st->lock);
	st->stats.pruned += (uint64_t)n;
	if (st->prune_table >= STORE_PRUNE_COUNT && !st->prune_restart)
		st->prune_running = 0;
	pthread_mutex_unlock(&st->lock);
}

/*
 * Free the rows of a finished batch. Writer, without the lock: the slots
 * are still taken, producers do not touch them, and a thousand free()s
 * under the lock would make store_put() on the engine wait for them (for
 * long when the idle-priority writer loses its core meanwhile).
 */
static void
store_batch_free_rows(struct store *st, struct store_batch *b)
{
	int first = b->nrows < st->cap - b->start ? b->nrows : st->cap - b->start;

	store_rows_free(st, &st->ring[b->start], first);
	store_rows_free(st, st->ring, b->nrows - first);
}

/* A batch that has run, into the writer's stats. Under lock. */
static void
store_batch_count(struct store *st, const struct store_batch *b, uint64_t ok, uint64_t errs,
		  int synced)
{
	if (ok > 0 || errs > 0 || synced)
		st->stats.batches++;
	st->stats.rows_written += ok;
	st->stats.errors += errs;
	if (synced)
		st->stats.sync_commits++;
	if (b->why[0] != '\0') {
		st->stats.degraded_at = store_wall_ms();
		snprintf(st->stats.last_error, sizeof(st->stats.last_error), "%s", b->why);
	}
	if (ok > st->stats.max_batch_rows)
		st->stats.max_batch_rows = ok;
}

/* Hand the slots of a finished batch back and wake its requesters. Under lock. */
static void
store_batch_release(struct store *st, struct store_batch *b)
{
	struct store_req *req, *next;

	st->head = (st->head + b->nrows) % st->cap;
	st->head_seq += (uint64_t)b->nrows;
	st->taken = 0;
	for (req = b->reqs; req != NULL; req = next) {
		next = req->next; /* req may vanish once done is set */
		req->done = 1;
	}
	if (b->reqs != NULL)
		pthread_cond_broadcast(&st->done_cond);
}

static void
store_req_free_later(struct store *st, struct store_req *req)
{
	store_rows_free(st, req->rows, req->nops);
	free(req->cause);
	free(req);
}

/*
 * Complete the commit-later requests of a batch that has run (committed
 * or failed): their callbacks run here, on the writer without the lock,
 * and they leave b->reqs, which keeps the waiting callers only.
 */
static void
store_batch_done_later(struct store *st, struct store_batch *b)
{
	struct store_req **pp = &b->reqs, *req;

	while ((req = *pp) != NULL) {
		if (req->done_fn == NULL) {
			pp = &req->next;
			continue;
		}
		*pp = req->next;
		req->done_fn(req->done_arg, req->rc, req->rowid, req->cause);
		store_req_free_later(st, req);
	}
}

/*
 * Can a thread at the writer's nice leave SCHED_IDLE again? Unprivileged,
 * only within RLIMIT_NICE (sched(7)); CAP_SYS_NICE always. Tried on a
 * throwaway thread, since a thread that cannot leave stays idle for good.
 */
static void *
store_idle_probe_main(void *arg)
{
	struct sched_param sp = {0};
	int *ok = arg;

	*ok = setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), STORE_WRITER_NICE) == 0 &&
	      sched_setscheduler(0, SCHED_IDLE, &sp) == 0 &&
	      sched_setscheduler(0, SCHED_OTHER, &sp) == 0;
	return NULL;
}

static int
store_idle_probe(void)
{
	pthread_t t;
	int ok = 0;

	if (pthread_create(&t, NULL, store_idle_probe_main, &ok) != 0)
		return 0;
	pthread_join(t, NULL);
	return ok;
}

/* Raise an idle writer to SCHED_OTHER (see Scheduling above). Under lock. */
void
store_boost(struct store *st)
{
	struct sched_param sp = {0};

	if (!st->idle || st->boosted || st->writer_tid == 0)
		return;
	if (sched_setscheduler(st->writer_tid, SCHED_OTHER, &sp) == 0) {
		st->boosted = 1;
		st->stats.boosts++;
	} else if (st->stats.boost_errors++ == 0)
		fprintf(stderr, "store: cannot raise the writer thread from SCHED_IDLE: %s\n",
			strerror(errno));
}

/*
 * The writer drops back to SCHED_IDLE once nothing presses. Writer, called
 * and returning under lock; the lock is let go for the switch, so that an
 * idle thread never holds what store_put() waits for. A boost that came
 * in meanwhile (its sched_setscheduler() may have run before ours) is
 * made good at once.
 */
static void
store_unboost(struct store *st)
{
	struct sched_param sp = {0};

	if (!st->boosted || st->reqs != NULL || st->closing || st->pending >= st->threshold)
		return;
	st->boosted = 0;
	pthread_mutex_unlock(&st->lock);
	(void)sched_setscheduler(0, SCHED_IDLE, &sp);
	pthread_mutex_lock(&st->lock);
	if (st->boosted)
		(void)sched_setscheduler(0, SCHED_OTHER, &sp);
}

int
store_writer_cpus(const cpu_set_t *allowed, cpu_set_t *out)
{
	int cpu;

	CPU_ZERO(out);
	if (CPU_COUNT(allowed) < 2)
		return 0;
	*out = *allowed;
	for (cpu = 0; !CPU_ISSET(cpu, out); cpu++)
		;
	CPU_CLR(cpu, out);
	return CPU_COUNT(out);
}

/* Keep the writer thread off the first allowed CPU; how many it keeps to. */
static int
store_writer_place(void)
{
	const char *env = getenv("FUSEBOX_WRITER_AFFINITY");
	cpu_set_t allowed, cpus;
	int n;

	if (env != NULL && strcmp(env, "off") == 0)
		return 0;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		return 0;
	n = store_writer_cpus(&allowed, &cpus);
	if (n > 0 && pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus) != 0)
		n = 0;
	return n;
}

void *
store_writer_main(void *arg)
{
	struct store *st = arg;
	struct store_batch b;
	struct timespec ts;
	uint64_t ok, errs;
	int64_t now_us, deadline_us;
	int synced;

	/* Nice and policy are per thread on Linux (Scheduling above). */
	int idle = store_idle_probe();
	struct sched_param sp = {0};

	int cpus = store_writer_place();

	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), STORE_WRITER_NICE);
	idle = idle && sched_setscheduler(0, SCHED_IDLE, &sp) == 0;
	pthread_mutex_lock(&st->lock);
	st->writer_tid = (pid_t)syscall(SYS_gettid);
	st->idle = idle;
	st->writer_cpus = cpus;
	if (st->closing || st->reqs != NULL || st->pending >= st->boost_rows)
		store_boost(st);
	for (;;) {
		if (st->prune_turn && st->prune_running && !st->closing) {
			st->prune_turn = 0;
			pthread_mutex_unlock(&st->lock);
			store_prune_step(st);
			pthread_mutex_lock(&st->lock);
			continue;
		}
		now_us = store_mono_us();
		if (store_batch_due(st, now_us, &deadline_us)) {
			store_batch_take(st, &b);
			pthread_mutex_unlock(&st->lock);
			store_batch_run(st, &b, &ok, &errs, &synced);
			/* Counted before any requester hears of it: a promise
			 * answered is a commit /metrics already shows. */
			pthread_mutex_lock(&st->lock);
			store_batch_count(st, &b, ok, errs, synced);
			pthread_mutex_unlock(&st->lock);
			store_batch_done_later(st, &b);
			store_batch_free_rows(st, &b);
			pthread_mutex_lock(&st->lock);
			store_batch_release(st, &b);
			st->prune_turn = 1;
			store_unboost(st);
			continue;
		}
		if (st->closing)
			break;
		if (st->prune_running) {
			st->prune_turn = 1;
			continue;
		}
		if (deadline_us < 0) {
			pthread_cond_wait(&st->wake_cond, &st->lock);
			continue;
		}
		ts.tv_sec = deadline_us / 1000000;
		ts.tv_nsec = (deadline_us % 1000000) * 1000;
		pthread_cond_timedwait(&st->wake_cond, &st->lock, &ts);
	}
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

/*
 * Queue a request after the rows queued so far. Under lock. A request
 * raises an idle writer: someone waits for it (the caller, or the client
 * a commit-later answers), and an idle writer may not get a core at all
 * while the engine is busy.
 */
static void
store_req_queue(struct store *st, struct store_req *req)
{
	req->seq = st->enqueued;
	req->next = NULL;
	*st->reqs_tail = req;
	st->reqs_tail = &req->next;
	if (req->nops > 0)
		st->stats.requests++;
	store_boost(st);
	pthread_cond_signal(&st->wake_cond);
}

/* Queue a request and sleep until the writer has committed it. */
static int
store_req_wait(struct store *st, struct store_req *req)
{
	int rc = 0;

	pthread_mutex_lock(&st->lock);
	if (st->closing) {
		rc = STORE_E_CLOSED;
		goto out;
	}
	store_req_queue(st, req);
	while (!req->done)
		pthread_cond_wait(&st->done_cond, &st->lock);
out:
	pthread_mutex_unlock(&st->lock);
	return rc;
}

int
store_commit_later(struct store *st, const struct store_op *ops, int nops, store_done_fn done,
		   void *arg)
{
	struct store_req *req;
	struct store_op *cops;
	int i, rc = 0;

	if (nops < 0 || (nops > 0 && ops == NULL) || done == NULL)
		return -EINVAL;
	/* One block: the request, its ops, the pointers to their rows. */
	req = store_alloc(sizeof(*req) + (sizeof(*cops) + sizeof(*req->rows)) * (size_t)nops);
	memset(req, 0, sizeof(*req));
	cops = (struct store_op *)(req + 1);
	req->rows = (struct store_row **)(cops + nops);
	for (i = 0; i < nops; i++) {
		rc = store_row_make(st, ops[i].stmt, ops[i].vals, ops[i].nvals, &req->rows[i]);
		if (rc != 0)
			goto fail;
		req->nops = i + 1;
		cops[i] = (struct store_op){ops[i].stmt, req->rows[i]->vals, req->rows[i]->nvals};
	}
	req->ops = cops;
	req->done_fn = done;
	req->done_arg = arg;
	pthread_mutex_lock(&st->lock);
	if (st->closing) {
		pthread_mutex_unlock(&st->lock);
		rc = STORE_E_CLOSED;
		goto fail;
	}
	store_req_queue(st, req);
	pthread_mutex_unlock(&st->lock);
	return 0;
fail:
	store_req_free_later(st, req);
	return rc;
}

int
store_commit_now(struct store *st, const struct store_op *ops, int nops, int64_t *last_rowid,
		 char **cause)
{
	struct store_req req;
	int i, rc;

	memset(&req, 0, sizeof(req));
	if (nops < 0 || (nops > 0 && ops == NULL)) {
		rc = -EINVAL;
		goto out;
	}
	for (i = 0; i < nops; i++) {
		rc = store_args_check(st, ops[i].stmt, ops[i].vals, ops[i].nvals);
		if (rc != 0) {
			store_cause_set(cause,
					"store_commit_now: op %d: bad "
					"statement or values",
					i);
			goto out;
		}
	}
	req.ops = ops;
	req.nops = nops;
	rc = store_req_wait(st, &req);
	if (rc != 0) {
		store_cause_set(cause, "store is closing");
		goto out;
	}
	rc = req.rc;
	if (rc != 0 && cause != NULL) {
		*cause = req.cause;
		req.cause = NULL;
	}
	if (rc == 0 && last_rowid != NULL)
		*last_rowid = req.rowid;
out:
	free(req.cause);
	return rc;
}

int
store_flush(struct store *st)
{
	struct store_req req;

	memset(&req, 0, sizeof(req));
	return store_req_wait(st, &req);
}

int
store_prune(struct store *st, int64_t before_ms)
{
	int rc = 0;

	pthread_mutex_lock(&st->lock);
	if (st->closing) {
		rc = STORE_E_CLOSED;
		goto out;
	}
	if (!st->prune_running || before_ms > st->prune_before)
		st->prune_before = before_ms;
	st->prune_restart = 1;
	st->prune_running = 1;
	pthread_cond_signal(&st->wake_cond);
out:
	pthread_mutex_unlock(&st->lock);
	return rc;
}
