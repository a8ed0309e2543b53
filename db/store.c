/*
 * store: SQLite persistence with one writer thread (the shape of Redis
 * bio.c: a mutex-protected queue, a condition variable, one thread that owns
 * the resource).
 *
 * Queue. A ring of cap row pointers. Each row is one allocation holding the
 * statement number, its values and copies of their strings. Slots
 * [head, head + taken) belong to the writer, which executes them without
 * the lock; [head + taken, head + taken + pending) are queued after them.
 * Producers only ever write the slot after the last one, so the two never
 * touch the same slot. Every queued row has a sequence number (enqueued
 * counts them); ring[head] is row head_seq.
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
 * Row blocks. Rows are made by producers (the engine) and freed by the
 * writer, a pattern glibc's allocator serves badly: the engine's thread
 * cache never gets the blocks back, so every row went the slow way through
 * the arena (and rows of 1 KiB and more made malloc consolidate its fast
 * bins first), while the writer's free()s took the engine's arena lock.
 * The writer hands finished rows back instead, to per-size spare lists
 * (blocks of 512 B .. 8 KiB, at most 1 MiB per size); producers take
 * from them first. Larger rows use malloc/free as before. Spare blocks
 * are poisoned for AddressSanitizer while they wait, so a use after the
 * writer is done with a row is still caught.
 *
 * Scheduling. The writer is background work: a thread that answers calls
 * must get the core first. It runs at nice 10 and, where it can be raised
 * back (store_idle_probe), in SCHED_IDLE: it then runs only on a core
 * nobody else wants. Measured on the 2-core bench machine, rule-engine
 * answers at concurrency 1: p99 ~2.2 ms at nice 10 alone (a batch holds a
 * core for a slice), ~0.45 ms with SCHED_IDLE, ~0.14 ms with no writer
 * work at all. An idle thread can starve, so it is raised to SCHED_OTHER
 * (still nice 10) while a backlog of cap/8 rows waits, while a caller
 * sleeps on a request (commit-now, flush: that caller would otherwise
 * wait on the idlest thread of the machine) and when closing; it drops
 * back once the queue is below one batch and no request waits.
 * Where the process may use two or more CPUs, the writer also keeps off
 * the first of them (store_writer_cpus; FUSEBOX_WRITER_AFFINITY=off keeps
 * it anywhere). Left free, the scheduler moved it next to the engine
 * thread that woke it, and its WAL writes and checkpoint fsyncs completed
 * there: rule-engine answers at concurrency 1, the writer's CPUs left
 * free / restricted, alternated on the 2-core bench machine: p99 per 5 s
 * run 0.22-0.76 ms / 0.14-0.24 ms. The engine itself is never pinned.
 *
 * Threads: the writer connection is used by store_open() until the thread
 * starts, then only by the writer. Everything under "lock" in struct store
 * is shared; fields marked "writer" are the writer's alone.
 */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "migrations.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define STORE_POISON(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define STORE_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define STORE_POISON(p, n)	((void)(p), (void)(n))
#define STORE_UNPOISON(p, n)	((void)(p), (void)(n))
#endif

/* Nice of the writer thread (background work, see store_writer_main). */
#define STORE_WRITER_NICE 10

/* Spare row blocks (see "Row blocks" above): sizes 512 << class. */
#define STORE_SPARE_MIN		512
#define STORE_SPARE_CLASSES	5		/* 512 B .. 8 KiB */
#define STORE_SPARE_BYTES	(1024 * 1024)	/* kept per class, at most */

struct store_spare {
	struct store_spare *next;
};

#define STORE_BATCH_ROWS	1000
#define STORE_BATCH_WAIT_US	(50 * 1000)
#define STORE_BATCH_MAX		8192	/* bounds a commit-now's wait */
#define STORE_PRUNE_ROWS	500
#define STORE_ROW_MAX		(16 * 1024 * 1024)
#define STORE_BUSY_TIMEOUT_MS	5000
#define STORE_READER_CACHE	32

#define STORE_NELEM(a)		(sizeof(a) / sizeof((a)[0]))

struct store_stmt_def {
	const char *name;
	const char *sql;
};

/* The writer's statements; column orders are documented in store.h. */
static const struct store_stmt_def store_stmt_defs[STORE_STMT__COUNT] = {
	[STORE_CALL_INSERT] = { "call_insert",
	    "INSERT OR REPLACE INTO calls (id, request_id, route, started_at, "
	    "finished_at, elapsed_ms, budget_ms, level, source, backend, "
	    "degraded, reason, attempts, confidence, review, http_status, "
	    "input, result, response, status) VALUES (?1, ?2, ?3, ?4, ?5, "
	    "?6, ?7, ?8, ?9, ?10, coalesce(?11, 0), ?12, coalesce(?13, 0), "
	    "?14, coalesce(?15, 0), ?16, ?17, ?18, ?19, ?20)" },
	[STORE_ATTEMPT_INSERT] = { "attempt_insert",
	    "INSERT INTO attempts (id, call_id, request_id, route, backend, "
	    "attempt_no, started_at, timeout_ms, connect_ms, first_byte_ms, "
	    "total_ms, http_status, outcome, retry_after_ms, input_tokens, "
	    "output_tokens, raw_output) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
	    "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)" },
	[STORE_VFAIL_INSERT] = { "vfail_insert",
	    "INSERT INTO validation_failures (id, attempt_id, call_id, route, "
	    "stage, rule, detail, raw_output, at) VALUES (?1, ?2, ?3, ?4, ?5, "
	    "?6, ?7, ?8, ?9)" },
	[STORE_DEGRADATION_INSERT] = { "degradation_insert",
	    "INSERT INTO degradations (id, call_id, route, from_step, "
	    "to_step, reason, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)" },
	[STORE_EVENT_INSERT] = { "event_insert",
	    "INSERT INTO events (at, kind, subject, detail) "
	    "VALUES (?1, ?2, ?3, ?4)" },
	[STORE_SLO_MINUTE_ADD] = { "slo_minute_add",
	    "INSERT INTO slo_minutes (route, minute, total, service_good, "
	    "smart_good, latency_ok, timeouts, retries, attempts, "
	    "format_violations, src_llm, src_backup, src_rules, src_cache, "
	    "src_preset, src_manual, review_decided, review_corrected, "
	    "shadow_total, shadow_agree, cross_total, cross_agree) VALUES "
	    "(?1, ?2, coalesce(?3, 0), coalesce(?4, 0), coalesce(?5, 0), "
	    "coalesce(?6, 0), coalesce(?7, 0), coalesce(?8, 0), "
	    "coalesce(?9, 0), coalesce(?10, 0), coalesce(?11, 0), "
	    "coalesce(?12, 0), coalesce(?13, 0), coalesce(?14, 0), "
	    "coalesce(?15, 0), coalesce(?16, 0), coalesce(?17, 0), "
	    "coalesce(?18, 0), coalesce(?19, 0), coalesce(?20, 0), "
	    "coalesce(?21, 0), coalesce(?22, 0)) "
	    "ON CONFLICT (route, minute) DO UPDATE SET "
	    "total = total + excluded.total, "
	    "service_good = service_good + excluded.service_good, "
	    "smart_good = smart_good + excluded.smart_good, "
	    "latency_ok = latency_ok + excluded.latency_ok, "
	    "timeouts = timeouts + excluded.timeouts, "
	    "retries = retries + excluded.retries, "
	    "attempts = attempts + excluded.attempts, "
	    "format_violations = format_violations + "
	    "excluded.format_violations, "
	    "src_llm = src_llm + excluded.src_llm, "
	    "src_backup = src_backup + excluded.src_backup, "
	    "src_rules = src_rules + excluded.src_rules, "
	    "src_cache = src_cache + excluded.src_cache, "
	    "src_preset = src_preset + excluded.src_preset, "
	    "src_manual = src_manual + excluded.src_manual, "
	    "review_decided = review_decided + excluded.review_decided, "
	    "review_corrected = review_corrected + excluded.review_corrected, "
	    "shadow_total = shadow_total + excluded.shadow_total, "
	    "shadow_agree = shadow_agree + excluded.shadow_agree, "
	    "cross_total = cross_total + excluded.cross_total, "
	    "cross_agree = cross_agree + excluded.cross_agree" },
	[STORE_JOB_INSERT] = { "job_insert",
	    "INSERT INTO jobs (request_id, route, state, body, created_at, "
	    "updated_at, tries, response) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
	    "coalesce(?7, 0), ?8)" },
	[STORE_JOB_UPDATE] = { "job_update",
	    "UPDATE jobs SET state = ?1, updated_at = ?2, "
	    "tries = coalesce(?3, 0), response = ?4 WHERE request_id = ?5" },
	[STORE_OVERRIDE_UPSERT] = { "override_upsert",
	    "INSERT INTO overrides (kind, subject, value, actor, reason, "
	    "until, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
	    "ON CONFLICT (kind, subject) DO UPDATE SET "
	    "value = excluded.value, actor = excluded.actor, "
	    "reason = excluded.reason, until = excluded.until, "
	    "at = excluded.at" },
	[STORE_OVERRIDE_DELETE] = { "override_delete",
	    "DELETE FROM overrides WHERE kind = ?1 AND subject = ?2" },
	[STORE_AUDIT_INSERT] = { "audit_insert",
	    "INSERT INTO audit (at, actor, action, target, before, after, "
	    "remote) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)" },
	[STORE_ALERT_INSERT] = { "alert_insert",
	    "INSERT INTO alerts (rule, route, severity, state, value, "
	    "threshold, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)" },
	[STORE_REVIEW_INSERT] = { "review_insert",
	    "INSERT INTO reviews (id, route, request_id, call_id, priority, "
	    "reason, state, created_at, due_at, input, raw_output, result, "
	    "confidence, alt_result, callback_url) VALUES (?1, ?2, ?3, ?4, "
	    "coalesce(?5, 0), ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)" },
	[STORE_REVIEW_UPDATE] = { "review_update",
	    "UPDATE reviews SET state = ?1, reviewer = ?2, verdict = ?3, "
	    "corrected_result = ?4, note = ?5, decided_at = ?6 "
	    "WHERE id = ?7" },
	[STORE_CACHE_UPSERT] = { "cache_upsert",
	    "INSERT INTO cache (route, key, result, confidence, stored_at) "
	    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (route, key) DO UPDATE "
	    "SET result = excluded.result, confidence = excluded.confidence, "
	    "stored_at = excluded.stored_at" },
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
#define STORE_PRUNE_COUNT ((int)STORE_NELEM(store_prune_sql))

/* A queued row: one allocation, values then their strings. */
struct store_row {
	enum store_stmt stmt;
	int nvals;
	int spare_class;		/* its block's size class, -1: malloc */
	struct store_val vals[];
};

/*
 * A commit-now or flush (nops == 0) request, on the caller's stack; or a
 * commit-later (done != NULL), on the heap with copies of its ops, which
 * the writer completes and frees itself.
 */
struct store_req {
	const struct store_op *ops;	/* borrowed until done, or owned */
	int nops;
	uint64_t seq;			/* rows queued before this request */
	int done;			/* set by the writer, under lock */
	int rc;
	char *cause;
	int64_t rowid;
	struct store_req *next;
	store_done_fn done_fn;		/* commit-later: called after COMMIT */
	void *done_arg;
	struct store_row **rows;	/* commit-later: the ops' values */
};

/* What the writer took from the queue for one transaction. */
struct store_batch {
	int start;			/* ring index of the first row */
	int nrows;
	uint64_t start_seq;
	struct store_req *reqs;
	uint64_t dropped;		/* drops to report in an events row */
};

struct store {
	sqlite3 *db;			/* writer */
	sqlite3_stmt *stmts[STORE_STMT__COUNT];	/* writer */
	sqlite3_stmt *prune_stmts[STORE_PRUNE_COUNT];	/* writer */
	int nparams[STORE_STMT__COUNT];	/* read-only after open */
	int prune_table;		/* writer: next table to prune */
	int prune_turn;			/* writer: prune before next batch */

	pthread_t thread;
	int thread_started;

	pthread_mutex_t lock;
	pthread_cond_t wake_cond;	/* the writer waits here */
	pthread_cond_t done_cond;	/* request callers wait here */
	struct store_row **ring;	/* lock */
	int cap;
	int threshold;			/* pending rows that start a batch */
	int boost_rows;			/* queued rows that raise an idle writer */
	int head;			/* lock */
	int taken;			/* lock */
	int pending;			/* lock */
	uint64_t head_seq;		/* lock */
	uint64_t enqueued;		/* lock */
	uint64_t dropped_pending;	/* lock */
	int64_t first_pending_us;	/* lock: when pending/drops went 0 -> 1 */
	struct store_req *reqs;		/* lock */
	struct store_req **reqs_tail;	/* lock */
	int closing;			/* lock */
	int64_t prune_before;		/* lock */
	int prune_restart;		/* lock */
	int prune_running;		/* lock */
	struct store_stats stats;	/* lock */
	pid_t writer_tid;		/* lock: set by the writer at start */
	int idle;			/* lock: the writer runs SCHED_IDLE ... */
	int boosted;			/* lock: ... but SCHED_OTHER just now */
	int writer_cpus;		/* lock: CPUs it keeps to, 0: any */

	pthread_mutex_t spare_lock;	/* only for the two fields below */
	struct store_spare *spare[STORE_SPARE_CLASSES];
	int nspare[STORE_SPARE_CLASSES];
};

struct store_reader_entry {
	char *sql;
	sqlite3_stmt *stmt;
};

struct store_reader {
	sqlite3 *db;
	struct store_reader_entry cache[STORE_READER_CACHE];
	int next;			/* next cache slot to reuse */
};

static void *
store_alloc(size_t n)
{
	void *p;

	p = malloc(n);
	if (p == NULL) {
		fprintf(stderr, "store: out of memory\n");
		abort();
	}
	return p;
}

static char *
store_strdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(store_alloc(n), s, n);
}

/* The size of a spare block of class c, and how many of them are kept. */
static size_t
store_spare_block(int c)
{
	return (size_t)STORE_SPARE_MIN << c;
}

static int
store_spare_max(int c)
{
	return (int)(STORE_SPARE_BYTES / store_spare_block(c));
}

/* The spare class of a row of size bytes, -1 when too large for one. */
static int
store_spare_class(size_t size)
{
	int c;

	for (c = 0; c < STORE_SPARE_CLASSES; c++) {
		if (size <= store_spare_block(c))
			return c;
	}
	return -1;
}

/* A block for a row of size bytes: a spare one when there is one. */
static struct store_row *
store_row_alloc(struct store *st, size_t size)
{
	struct store_spare *sp = NULL;
	struct store_row *row;
	size_t block;
	int c;

	c = store_spare_class(size);
	if (c < 0) {
		row = store_alloc(size);
		row->spare_class = -1;
		return row;
	}
	block = store_spare_block(c);
	pthread_mutex_lock(&st->spare_lock);
	sp = st->spare[c];
	if (sp != NULL) {
		st->spare[c] = sp->next;
		st->nspare[c]--;
	}
	pthread_mutex_unlock(&st->spare_lock);
	if (sp != NULL)
		STORE_UNPOISON(sp, block);
	else
		sp = store_alloc(block);
	row = (struct store_row *)(void *)sp;
	row->spare_class = c;
	return row;
}

/* Free a chain of spare blocks of class c. */
static void
store_spare_chain_free(struct store_spare *sp, int c)
{
	struct store_spare *next;

	for (; sp != NULL; sp = next) {
		next = sp->next;
		STORE_UNPOISON(sp, store_spare_block(c));
		free(sp);
	}
}

/*
 * Give n rows back: to the spare lists while they hold less than
 * STORE_SPARE_BYTES per size, else to malloc. NULL entries are skipped.
 * The writer runs in SCHED_IDLE and can lose its core at any point: the
 * lists are locked only to read their lengths and to splice a chain built
 * outside the lock, so that a producer never waits for a thousand pushes.
 */
static void
store_rows_free(struct store *st, struct store_row **rows, int n)
{
	struct store_spare *head[STORE_SPARE_CLASSES] = { NULL };
	struct store_spare *tail[STORE_SPARE_CLASSES] = { NULL };
	struct store_spare *sp;
	int room[STORE_SPARE_CLASSES], k[STORE_SPARE_CLASSES] = { 0 };
	int i, c;

	if (n <= 0)
		return;
	pthread_mutex_lock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++)
		room[c] = store_spare_max(c) - st->nspare[c];
	pthread_mutex_unlock(&st->spare_lock);
	for (i = 0; i < n; i++) {
		if (rows[i] == NULL)
			continue;
		c = rows[i]->spare_class;
		if (c < 0 || k[c] >= room[c]) {
			free(rows[i]);
			rows[i] = NULL;
			continue;
		}
		sp = (struct store_spare *)(void *)rows[i];
		rows[i] = NULL;
		sp->next = head[c];
		STORE_POISON((char *)sp + sizeof(*sp), store_spare_block(c) - sizeof(*sp));
		head[c] = sp;
		if (tail[c] == NULL)
			tail[c] = sp;
		k[c]++;
	}
	pthread_mutex_lock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++) {
		if (k[c] == 0)
			continue;
		if (st->nspare[c] + k[c] > store_spare_max(c))
			continue;	/* another thread gave blocks back meanwhile */
		tail[c]->next = st->spare[c];
		st->spare[c] = head[c];
		st->nspare[c] += k[c];
		head[c] = NULL;
	}
	pthread_mutex_unlock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++)
		store_spare_chain_free(head[c], c);
}

/* The spare blocks back to malloc (store_close). */
static void
store_spares_release(struct store *st)
{
	int c;

	for (c = 0; c < STORE_SPARE_CLASSES; c++) {
		store_spare_chain_free(st->spare[c], c);
		st->spare[c] = NULL;
		st->nspare[c] = 0;
	}
}

static void store_cause_set(char **, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/* Set *cause (when cause is not NULL) to a fresh string. */
static void
store_cause_set(char **cause, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (cause != NULL) {
		va_start(ap, fmt);
		if (vasprintf(&s, fmt, ap) < 0) {
			fprintf(stderr, "store: out of memory\n");
			abort();
		}
		va_end(ap);
		*cause = s;
	}
}

static int64_t
store_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
store_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run SQL without results on the writer connection. 0 or STORE_E_SQL. */
static int
store_exec(sqlite3 *db, const char *sql, char **cause)
{
	char *err = NULL;
	int rc = 0;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		store_cause_set(cause, "%s: %s", sql,
		    err != NULL ? err : sqlite3_errmsg(db));
		rc = STORE_E_SQL;
	}
	sqlite3_free(err);
	return rc;
}

/* Bind vals to ?1..?nvals. SQLite result code. */
static int
store_bind(sqlite3_stmt *stmt, const struct store_val *vals, int nvals)
{
	int i, rc = SQLITE_OK;

	for (i = 0; i < nvals && rc == SQLITE_OK; i++) {
		switch (vals[i].type) {
		case SV_INT:
			rc = sqlite3_bind_int64(stmt, i + 1, vals[i].i);
			break;
		case SV_REAL:
			rc = sqlite3_bind_double(stmt, i + 1, vals[i].d);
			break;
		case SV_TEXT:
			if (vals[i].s != NULL) {
				rc = sqlite3_bind_text(stmt, i + 1, vals[i].s,
				    -1, SQLITE_STATIC);
				break;
			}
			/* FALLTHROUGH */
		case SV_NULL:
		default:
			rc = sqlite3_bind_null(stmt, i + 1);
			break;
		}
	}
	return rc;
}

/*
 * Execute one writer statement with vals. The statement is reset and its
 * bindings cleared whatever happens. 0 or STORE_E_SQL with *cause.
 */
static int
store_stmt_run(struct store *st, enum store_stmt which,
    const struct store_val *vals, int nvals, char **cause)
{
	sqlite3_stmt *stmt = st->stmts[which];
	int rc = 0, src;

	src = store_bind(stmt, vals, nvals);
	if (src == SQLITE_OK)
		src = sqlite3_step(stmt);
	if (src != SQLITE_DONE && src != SQLITE_ROW) {
		store_cause_set(cause, "%s: %s", store_stmt_defs[which].name,
		    sqlite3_errmsg(st->db));
		rc = STORE_E_SQL;
	}
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	return rc;
}

/*
 * Check arguments shared by store_put() and store_commit_now().
 * 0 or -EINVAL.
 */
static int
store_args_check(const struct store *st, enum store_stmt stmt,
    const struct store_val *vals, int nvals)
{
	int rc = 0;

	if ((int)stmt < 0 || stmt >= STORE_STMT__COUNT)
		rc = -EINVAL;
	else if (nvals < 0 || nvals > st->nparams[stmt])
		rc = -EINVAL;
	else if (nvals > 0 && vals == NULL)
		rc = -EINVAL;
	return rc;
}

/* Highest applied migration, 0 when none. 0 or STORE_E_SQL. */
static int
store_version_read(sqlite3 *db, int *version, char **cause)
{
	sqlite3_stmt *stmt = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(version), 0) FROM "
	    "schema_migrations", -1, &stmt, NULL) != SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_ROW) {
		store_cause_set(cause, "reading schema_migrations: %s",
		    sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
	*version = sqlite3_column_int(stmt, 0);
out:
	sqlite3_finalize(stmt);
	return rc;
}

/* Apply one migration in its own transaction unless already applied. */
static int
store_migration_apply(sqlite3 *db, const struct migration *m, char **cause)
{
	sqlite3_stmt *stmt = NULL;
	char *err = NULL;
	int rc, version, in_tx = 0;

	rc = store_exec(db, "BEGIN IMMEDIATE", cause);
	if (rc != 0)
		goto out;
	in_tx = 1;
	/* Another process may have applied it while we waited for the lock. */
	rc = store_version_read(db, &version, cause);
	if (rc != 0 || version >= m->version)
		goto out;
	if (sqlite3_exec(db, m->sql, NULL, NULL, &err) != SQLITE_OK) {
		store_cause_set(cause, "migration %s: %s", m->name,
		    err != NULL ? err : sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
	if (sqlite3_prepare_v2(db, "INSERT INTO schema_migrations (version, "
	    "applied_at) VALUES (?1, ?2)", -1, &stmt, NULL) != SQLITE_OK ||
	    sqlite3_bind_int(stmt, 1, m->version) != SQLITE_OK ||
	    sqlite3_bind_int64(stmt, 2, store_wall_ms()) != SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_DONE) {
		store_cause_set(cause, "migration %s: recording it: %s",
		    m->name, sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
out:
	sqlite3_finalize(stmt);
	sqlite3_free(err);
	if (in_tx && rc == 0)
		rc = store_exec(db, "COMMIT", cause);
	if (in_tx && rc != 0)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * Bring the schema up to date. A DB newer than every compiled-in migration
 * is refused rather than half-understood.
 */
static int
store_migrate(sqlite3 *db, char **cause)
{
	int rc, i, version = 0, known = store_known_version();

	rc = store_exec(db, "CREATE TABLE IF NOT EXISTS schema_migrations "
	    "(version INTEGER PRIMARY KEY, applied_at INTEGER)", cause);
	if (rc != 0)
		goto out;
	rc = store_version_read(db, &version, cause);
	if (rc != 0)
		goto out;
	if (version > known) {
		store_cause_set(cause, "database schema version %d is newer "
		    "than this fuseboxd (knows %d): upgrade fuseboxd", version,
		    known);
		rc = STORE_E_NEWER;
		goto out;
	}
	for (i = 0; i < migrations_count; i++) {
		if (migrations[i].version <= version)
			continue;
		rc = store_migration_apply(db, &migrations[i], cause);
		if (rc != 0)
			goto out;
	}
out:
	return rc;
}

/* Open a connection with the settings every connection shares. */
static int
store_db_open(const char *path, int flags, sqlite3 **out, char **cause)
{
	sqlite3 *db = NULL;
	int rc = 0;

	if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX,
	    NULL) != SQLITE_OK) {
		store_cause_set(cause, "%s: %s", path, db != NULL ?
		    sqlite3_errmsg(db) : "out of memory");
		rc = STORE_E_SQL;
		goto out;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
	*out = db;
	db = NULL;
out:
	sqlite3_close(db);
	return rc;
}

/* WAL, synchronous=NORMAL, foreign_keys off on the writer connection. */
static int
store_db_configure(sqlite3 *db, const char *path, char **cause)
{
	sqlite3_stmt *stmt = NULL;
	const char *mode;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &stmt,
	    NULL) != SQLITE_OK || sqlite3_step(stmt) != SQLITE_ROW) {
		store_cause_set(cause, "%s: setting WAL mode: %s", path,
		    sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
	mode = (const char *)sqlite3_column_text(stmt, 0);
	if (mode == NULL || (strcmp(mode, "wal") != 0 &&
	    strcmp(mode, "memory") != 0)) {
		store_cause_set(cause, "%s: cannot use WAL mode (journal mode "
		    "is %s)", path, mode != NULL ? mode : "unknown");
		rc = STORE_E_SQL;
		goto out;
	}
	rc = store_exec(db, "PRAGMA synchronous = NORMAL", cause);
	if (rc == 0)
		rc = store_exec(db, "PRAGMA foreign_keys = OFF", cause);
	/* Trim the WAL file after checkpoints instead of keeping its peak. */
	if (rc == 0)
		rc = store_exec(db, "PRAGMA journal_size_limit = 67108864",
		    cause);
out:
	sqlite3_finalize(stmt);
	return rc;
}

static int
store_stmts_prepare(struct store *st, char **cause)
{
	int i, rc = 0;

	for (i = 0; i < STORE_STMT__COUNT; i++) {
		if (sqlite3_prepare_v3(st->db, store_stmt_defs[i].sql, -1,
		    SQLITE_PREPARE_PERSISTENT, &st->stmts[i], NULL) !=
		    SQLITE_OK) {
			store_cause_set(cause, "preparing %s: %s",
			    store_stmt_defs[i].name, sqlite3_errmsg(st->db));
			rc = STORE_E_SQL;
			goto out;
		}
		st->nparams[i] = sqlite3_bind_parameter_count(st->stmts[i]);
	}
	for (i = 0; i < STORE_PRUNE_COUNT; i++) {
		if (sqlite3_prepare_v3(st->db, store_prune_sql[i], -1,
		    SQLITE_PREPARE_PERSISTENT, &st->prune_stmts[i], NULL) !=
		    SQLITE_OK) {
			store_cause_set(cause, "preparing retention: %s",
			    sqlite3_errmsg(st->db));
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
	int due;

	*deadline_us = -1;
	if (st->reqs != NULL)
		due = 1;
	else if (st->pending == 0 && st->dropped_pending == 0)
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
	b->nrows = st->pending < STORE_BATCH_MAX ? st->pending :
	    STORE_BATCH_MAX;
	b->start_seq = st->head_seq;
	b->dropped = st->dropped_pending;
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
		req->rc = store_stmt_run(st, req->ops[i].stmt,
		    req->ops[i].vals, req->ops[i].nvals, &req->cause);
	}
	req->rowid = sqlite3_last_insert_rowid(st->db);
	if (sqlite3_get_autocommit(st->db))
		aborted = 1;
	else if (req->rc == 0)
		req->rc = store_exec(st->db, "RELEASE commit_now",
		    &req->cause);
	else
		sqlite3_exec(st->db, "ROLLBACK TO commit_now; "
		    "RELEASE commit_now", NULL, NULL, NULL);
out:
	return aborted;
}

/* Fail every request in [from, to) that had succeeded so far. */
static void
store_reqs_fail(struct store_req *from, struct store_req *to,
    const char *why)
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
 * for drops, in one transaction. Writer thread, without the lock.
 * *ok_rows / *err_rows count rows that were committed / lost.
 */
static void
store_batch_run(struct store *st, struct store_batch *b, uint64_t *ok_rows,
    uint64_t *err_rows, int *synced)
{
	struct store_req *req, *tx_first;
	struct store_row *row;
	struct store_val ev[4];
	uint64_t seq, ok = 0, errs = 0, logged = 0;
	char *cause = NULL, detail[64];
	int i, sync = 0, rc;

	*synced = 0;
	for (req = b->reqs; req != NULL; req = req->next) {
		if (req->nops > 0)
			sync = 1;
	}
	if (b->nrows == 0 && b->dropped == 0 && !sync)
		goto out;
	if (sync)
		store_exec(st->db, "PRAGMA synchronous = FULL", NULL);
	if (store_exec(st->db, "BEGIN IMMEDIATE", &cause) != 0) {
		fprintf(stderr, "store: batch of %d rows lost: %s\n",
		    b->nrows, cause);
		errs = (uint64_t)b->nrows;
		store_reqs_fail(b->reqs, NULL, cause);
		goto out;
	}

	req = tx_first = b->reqs;
	for (i = 0; i <= b->nrows; i++) {
		seq = b->start_seq + (uint64_t)i;
		while (req != NULL && req->seq <= seq) {
			if (store_req_run(st, req)) {
				/* The transaction is gone: so is all before. */
				fprintf(stderr, "store: transaction aborted "
				    "(%s); %" PRIu64 " rows lost\n",
				    req->cause, ok);
				errs += ok;
				ok = 0;
				store_reqs_fail(tx_first, req,
				    "transaction aborted by a later error");
				store_exec(st->db, "BEGIN IMMEDIATE", NULL);
				tx_first = req->next;
			}
			req = req->next;
		}
		if (i == b->nrows)
			break;
		row = st->ring[(b->start + i) % st->cap];
		rc = store_stmt_run(st, row->stmt, row->vals, row->nvals,
		    logged == 0 ? &cause : NULL);
		if (rc == 0) {
			ok++;
			continue;
		}
		errs++;
		if (logged++ == 0)
			fprintf(stderr, "store: row failed: %s\n", cause);
		free(cause);
		cause = NULL;
		if (sqlite3_get_autocommit(st->db)) {
			fprintf(stderr, "store: transaction aborted; %" PRIu64
			    " rows lost\n", ok);
			errs += ok;
			ok = 0;
			store_reqs_fail(tx_first, req,
			    "transaction aborted by a later error");
			store_exec(st->db, "BEGIN IMMEDIATE", NULL);
			tx_first = req;
		}
	}
	if (logged > 1)
		fprintf(stderr, "store: %" PRIu64 " more rows failed in this "
		    "batch\n", logged - 1);

	if (b->dropped > 0) {
		snprintf(detail, sizeof(detail), "%" PRIu64 " rows dropped",
		    b->dropped);
		ev[0] = SVI(store_wall_ms());
		ev[1] = SVT("log_rows_dropped");
		ev[2] = SVT("store");
		ev[3] = SVT(detail);
		if (store_stmt_run(st, STORE_EVENT_INSERT, ev, 4, &cause) == 0)
			ok++;
		else
			fprintf(stderr, "store: %s\n", cause);
		free(cause);
		cause = NULL;
	}

	if (sqlite3_get_autocommit(st->db) ||
	    store_exec(st->db, "COMMIT", &cause) != 0) {
		fprintf(stderr, "store: commit failed, %" PRIu64 " rows lost: "
		    "%s\n", ok, cause != NULL ? cause : "no transaction");
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		errs += ok;
		ok = 0;
		store_reqs_fail(tx_first, NULL, cause != NULL ? cause :
		    "commit failed");
		goto out;
	}
	*synced = sync;
	for (req = b->reqs; req != NULL; req = req->next) {
		if (req->rc == 0)
			ok += (uint64_t)req->nops;
	}
out:
	if (sync)
		store_exec(st->db, "PRAGMA synchronous = NORMAL", NULL);
	free(cause);
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
			fprintf(stderr, "store: retention: %s\n",
			    sqlite3_errmsg(st->db));
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
 * under the lock made store_put() on the engine wait for them (for long
 * when the idle-priority writer lost its core meanwhile).
 */
static void
store_batch_free_rows(struct store *st, struct store_batch *b)
{
	int first = b->nrows < st->cap - b->start ? b->nrows :
	    st->cap - b->start;

	store_rows_free(st, &st->ring[b->start], first);
	store_rows_free(st, st->ring, b->nrows - first);
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
		next = req->next;	/* req may vanish once done is set */
		req->done = 1;
	}
	if (b->reqs != NULL)
		pthread_cond_broadcast(&st->done_cond);
}

/*
 * Can a thread at the writer's nice leave SCHED_IDLE again? Unprivileged,
 * only within RLIMIT_NICE (sched(7)); CAP_SYS_NICE always. Tried on a
 * throwaway thread, since a thread that cannot leave stays idle for good.
 */
static void *
store_idle_probe_main(void *arg)
{
	struct sched_param sp = { 0 };
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
static void
store_boost(struct store *st)
{
	struct sched_param sp = { 0 };

	if (!st->idle || st->boosted || st->writer_tid == 0)
		return;
	if (sched_setscheduler(st->writer_tid, SCHED_OTHER, &sp) == 0) {
		st->boosted = 1;
		st->stats.boosts++;
	}
	else if (st->stats.boost_errors++ == 0)
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
	struct sched_param sp = { 0 };

	if (!st->boosted || st->reqs != NULL || st->closing ||
	    st->pending >= st->threshold)
		return;
	st->boosted = 0;
	pthread_mutex_unlock(&st->lock);
	(void)sched_setscheduler(0, SCHED_IDLE, &sp);
	pthread_mutex_lock(&st->lock);
	if (st->boosted)
		(void)sched_setscheduler(0, SCHED_OTHER, &sp);
}

static void store_batch_done_later(struct store *st, struct store_batch *b);

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

static void *
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
	struct sched_param sp = { 0 };

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
			store_batch_done_later(st, &b);
			store_batch_free_rows(st, &b);
			pthread_mutex_lock(&st->lock);
			store_batch_release(st, &b);
			if (ok > 0 || errs > 0 || synced)
				st->stats.batches++;
			st->stats.rows_written += ok;
			st->stats.errors += errs;
			if (synced)
				st->stats.sync_commits++;
			if (ok > st->stats.max_batch_rows)
				st->stats.max_batch_rows = ok;
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

int
store_known_version(void)
{
	return migrations_count > 0 ?
	    migrations[migrations_count - 1].version : 0;
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
			fprintf(stderr, "store: close: %s\n",
			    sqlite3_errmsg(st->db));
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

int
store_open(const char *path, int queue_cap, struct store **out,
    char **cause)
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
	st->threshold = queue_cap < STORE_BATCH_ROWS ? queue_cap :
	    STORE_BATCH_ROWS;
	st->boost_rows = queue_cap / 8 > 0 ? queue_cap / 8 : 1;
	st->ring = store_alloc(sizeof(*st->ring) * (size_t)queue_cap);
	memset(st->ring, 0, sizeof(*st->ring) * (size_t)queue_cap);
	st->reqs_tail = &st->reqs;

	rc = store_db_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
	    &st->db, cause);
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
		store_cause_set(cause, "store writer thread: %s",
		    strerror(rc));
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

/* A row holding a copy of vals and their strings. 0, -EINVAL or -E2BIG. */
static int
store_row_make(struct store *st, enum store_stmt stmt,
    const struct store_val *vals, int nvals, struct store_row **out)
{
	struct store_row *row;
	size_t size, len;
	char *p;
	int i, rc;

	*out = NULL;
	rc = store_args_check(st, stmt, vals, nvals);
	if (rc != 0)
		return rc;
	size = sizeof(*row) + sizeof(row->vals[0]) * (size_t)nvals;
	for (i = 0; i < nvals; i++) {
		if (vals[i].type == SV_TEXT && vals[i].s != NULL)
			size += strlen(vals[i].s) + 1;
		if (size > STORE_ROW_MAX)
			return -E2BIG;
	}
	row = store_row_alloc(st, size);
	row->stmt = stmt;
	row->nvals = nvals;
	p = (char *)&row->vals[nvals];
	for (i = 0; i < nvals; i++) {
		row->vals[i] = vals[i];
		if (vals[i].type != SV_TEXT || vals[i].s == NULL)
			continue;
		len = strlen(vals[i].s) + 1;
		memcpy(p, vals[i].s, len);
		row->vals[i].s = p;
		p += len;
	}
	*out = row;
	return 0;
}

int
store_put(struct store *st, enum store_stmt stmt,
    const struct store_val *vals, int nvals)
{
	struct store_row *row = NULL;
	int rc;

	rc = store_row_make(st, stmt, vals, nvals, &row);
	if (rc != 0)
		goto out;
	pthread_mutex_lock(&st->lock);
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

static void
store_req_free_later(struct store *st, struct store_req *req)
{
	store_rows_free(st, req->rows, req->nops);
	free(req->cause);
	free(req);
}

int
store_commit_later(struct store *st, const struct store_op *ops, int nops,
    store_done_fn done, void *arg)
{
	struct store_req *req;
	struct store_op *cops;
	int i, rc = 0;

	if (nops < 1 || ops == NULL || done == NULL)
		return -EINVAL;
	/* One block: the request, its ops, the pointers to their rows. */
	req = store_alloc(sizeof(*req) + (sizeof(*cops) +
	    sizeof(*req->rows)) * (size_t)nops);
	memset(req, 0, sizeof(*req));
	cops = (struct store_op *)(req + 1);
	req->rows = (struct store_row **)(cops + nops);
	for (i = 0; i < nops; i++) {
		rc = store_row_make(st, ops[i].stmt, ops[i].vals,
		    ops[i].nvals, &req->rows[i]);
		if (rc != 0)
			goto fail;
		req->nops = i + 1;
		cops[i] = (struct store_op){ ops[i].stmt, req->rows[i]->vals,
		    req->rows[i]->nvals };
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

int
store_commit_now(struct store *st, const struct store_op *ops, int nops,
    int64_t *last_rowid, char **cause)
{
	struct store_req req;
	int i, rc;

	memset(&req, 0, sizeof(req));
	if (nops < 0 || (nops > 0 && ops == NULL)) {
		rc = -EINVAL;
		goto out;
	}
	for (i = 0; i < nops; i++) {
		rc = store_args_check(st, ops[i].stmt, ops[i].vals,
		    ops[i].nvals);
		if (rc != 0) {
			store_cause_set(cause, "store_commit_now: op %d: bad "
			    "statement or values", i);
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

void
store_get_stats(struct store *st, struct store_stats *out)
{
	int c;

	pthread_mutex_lock(&st->lock);
	*out = st->stats;
	out->queued = (uint64_t)(st->taken + st->pending);
	out->prune_running = st->prune_running;
	out->writer_idle = st->idle;
	out->writer_cpus = st->writer_cpus;
	pthread_mutex_unlock(&st->lock);
	pthread_mutex_lock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++)
		out->spare_blocks += (uint64_t)st->nspare[c];
	pthread_mutex_unlock(&st->spare_lock);
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
store_reader_stmt(struct store_reader *r, const char *sql,
    sqlite3_stmt **out, int *temp, char **cause)
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
	if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	    &stmt, NULL) != SQLITE_OK) {
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
store_reader_query(struct store_reader *r, const char *sql,
    const struct store_val *vals, int nvals, store_row_cb row_cb, void *arg,
    char **cause)
{
	sqlite3_stmt *stmt = NULL;
	int rc, src, temp = 0;

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
	if (src != SQLITE_ROW && src != SQLITE_DONE) {
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
store_reader_int(struct store_reader *r, const char *sql,
    const struct store_val *vals, int nvals, int64_t def)
{
	struct store_int_arg a = { def };
	char *cause = NULL;

	if (store_reader_query(r, sql, vals, nvals, store_int_row, &a,
	    &cause) != 0) {
		a.value = def;
		free(cause);
	}
	return a.value;
}

int
store_schema_version(struct store_reader *r)
{
	return (int)store_reader_int(r, "SELECT coalesce(max(version), 0) "
	    "FROM schema_migrations", NULL, 0, -1);
}
