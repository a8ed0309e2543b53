#pragma once
/*
 * store: fusebox's SQLite persistence. One writer thread (store_writer.c,
 * shaped like Redis bio.c) owns the read-write connection and commits log
 * rows in batches; promises (jobs, review decisions, overrides, audit) go
 * through store_commit_now(), which blocks until they are committed.
 * Readers open a read-only connection per thread. Schema:
 * db/migrations/NNN_*.sql, applied by store_open(). Every function here is
 * thread-safe unless noted.
 */
#include <sched.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum store_e {
	STORE_E_FULL = 1, /* async queue full: row dropped and counted */
	STORE_E_NEWER,	  /* DB schema newer than this binary */
	STORE_E_SQL,	  /* SQLite error; *cause says which */
	STORE_E_CLOSED,	  /* store is closing */
	STORE_E_SLOW,	  /* a read ran past its reader's deadline and was cut */
};

enum store_val_type { SV_NULL = 0, SV_INT, SV_REAL, SV_TEXT };

/* One bound value. SV_TEXT with s == NULL binds NULL. Strings are borrowed. */
struct store_val {
	enum store_val_type type;
	int64_t i;
	double d;
	const char *s;
};

/*
 * Text is a function so that SVT(char_array) does not trip -Waddress
 * ("address will always evaluate as true"); NULL gives SV_NULL.
 */
static inline struct store_val
store_val_text(const char *s)
{
	return (struct store_val){.type = s != NULL ? SV_TEXT : SV_NULL, .s = s};
}

#define SVI(x) ((struct store_val){.type = SV_INT, .i = (x)})
#define SVR(x) ((struct store_val){.type = SV_REAL, .d = (x)})
#define SVT(x) store_val_text(x)
#define SVN    ((struct store_val){.type = SV_NULL})

/*
 * The statements the writer knows. Each binds ?1..?N in the column order
 * given here; a caller may pass fewer than N values (the rest bind NULL),
 * never more. Columns marked [0] treat NULL as 0. Times are epoch ms.
 */
enum store_stmt {
	/*
	 * INSERT calls: ?1 id, request_id, route, started_at, ?5 finished_at,
	 * elapsed_ms, budget_ms, level, source, ?10 backend, degraded[0],
	 * reason, attempts[0], confidence, ?15 review[0], http_status, input,
	 * result, response, ?20 status (done|failed), trace_id (hex). A row
	 * with the same (route, request_id) is replaced: a request id reused
	 * after its idempotency TTL, or an async job re-run after a crash,
	 * keeps one row, the latest.
	 */
	STORE_CALL_INSERT,
	/*
	 * INSERT attempts: ?1 id, call_id, request_id, route, ?5 backend,
	 * attempt_no, started_at, timeout_ms, connect_ms, ?10 first_byte_ms,
	 * total_ms, http_status, outcome, retry_after_ms, ?15 input_tokens,
	 * output_tokens, raw_output, span_id (hex), upstream_headers (JSON).
	 */
	STORE_ATTEMPT_INSERT,
	/*
	 * INSERT validation_failures: ?1 id, attempt_id, call_id, route,
	 * ?5 stage, rule, detail, raw_output, ?9 at (retention time).
	 */
	STORE_VFAIL_INSERT,
	/*
	 * INSERT degradations: ?1 id, call_id, route, from_step, ?5 to_step,
	 * reason, at.
	 */
	STORE_DEGRADATION_INSERT,
	/* INSERT events: ?1 at, kind, subject, detail (id assigned). */
	STORE_EVENT_INSERT,
	/*
	 * Upsert slo_minutes adding the deltas to (route, minute): ?1 route,
	 * ?2 minute (epoch ms of the minute's start), then the deltas [0]:
	 * ?3 total, service_good, ?5 smart_good, latency_ok, timeouts,
	 * retries, attempts, ?10 format_violations, src_llm, src_backup,
	 * src_rules, src_cache, ?15 src_preset, src_manual, review_decided,
	 * review_corrected, shadow_total, ?20 shadow_agree, cross_total,
	 * ?22 cross_agree, ?23 no_llm (unbound: 0).
	 */
	STORE_SLO_MINUTE_ADD,
	/*
	 * INSERT jobs: ?1 request_id, route, state, body, ?5 created_at,
	 * updated_at, tries[0], response (id assigned: last_rowid).
	 */
	STORE_JOB_INSERT,
	/*
	 * UPDATE jobs by request_id: ?1 state, updated_at, tries[0],
	 * response, ?5 request_id.
	 */
	STORE_JOB_UPDATE,
	/*
	 * Upsert overrides on (kind, subject): ?1 kind, subject, value,
	 * actor, ?5 reason, until, at.
	 */
	STORE_OVERRIDE_UPSERT,
	/* DELETE overrides: ?1 kind, ?2 subject. */
	STORE_OVERRIDE_DELETE,
	/*
	 * INSERT audit: ?1 at, actor, action, target, ?5 before, after,
	 * remote (id assigned).
	 */
	STORE_AUDIT_INSERT,
	/*
	 * INSERT alerts: ?1 rule, route, severity, state, ?5 value,
	 * threshold, at (id assigned).
	 */
	STORE_ALERT_INSERT,
	/*
	 * INSERT reviews: ?1 id (NULL: assigned, see last_rowid), route,
	 * request_id, call_id, ?5 priority[0], reason, state, created_at,
	 * due_at, ?10 input, raw_output, result, confidence, alt_result,
	 * ?15 callback_url. reviewer .. decided_at start NULL.
	 */
	STORE_REVIEW_INSERT,
	/*
	 * UPDATE reviews by id: ?1 state, reviewer, verdict,
	 * corrected_result, ?5 note, decided_at, ?7 id.
	 */
	STORE_REVIEW_UPDATE,
	/*
	 * Upsert cache on (route, key): ?1 route, key, result, confidence,
	 * ?5 stored_at.
	 */
	STORE_CACHE_UPSERT,
	/*
	 * UPDATE audit: ?1 action_id on the newest row of ?2 actor and
	 * ?3 target still without one (API.md "Fleet").
	 */
	STORE_AUDIT_ACTION_ID_SET,
	STORE_STMT__COUNT
};

/*
 * The read queries: what the daemon and the console read, named, beside
 * the writer's statements. Each binds ?1..?N as listed (fewer values bind
 * NULL) and returns the columns after "->". Run one with
 * store_reader_run() and its _int and _text forms. STORE_REVIEW_COLUMNS
 * (store.c) stands for a review item's columns, in the order
 * daemon/review_q.h's review_item_from_row() reads them.
 */
enum store_query {
	/* -> the highest applied migration, 0 when none. */
	STORE_Q_SCHEMA_VERSION,
	/*
	 * The stored answer a repeated request replays: ?1 route,
	 * request_id, ?3 oldest started_at (the idempotency TTL) ->
	 * response (HTTP 200 answers only).
	 */
	STORE_Q_CALL_REPLAY,
	/* The latest call of a request id: ?1 request_id -> route. */
	STORE_Q_CALL_ROUTE,
	/* The latest call of a request id: ?1 request_id -> response. */
	STORE_Q_CALL_RESPONSE,
	/* Where the id counters start: -> max(id), 0 when empty. */
	STORE_Q_CALL_MAX_ID,
	STORE_Q_ATTEMPT_MAX_ID,
	STORE_Q_VFAIL_MAX_ID,
	STORE_Q_DEGRADATION_MAX_ID,
	/*
	 * Calls of a route that finished in a window: ?1 route, started_at
	 * lower bound (lets the index bound the range), ?3 finished_at
	 * lower bound -> count(*).
	 */
	STORE_Q_ROUTE_CALLS,
	/*
	 * The same calls ranked by elapsed_ms: ?1 .. ?3 as above, ?4 rank
	 * (0-based) -> elapsed_ms.
	 */
	STORE_Q_ROUTE_ELAPSED_RANK,
	/* Open (pending, claimed) reviews of ?1 route -> count(*). */
	STORE_Q_ROUTE_REVIEWS_OPEN,
	/* One review item: ?1 id -> STORE_REVIEW_COLUMNS. */
	STORE_Q_REVIEW_GET,
	/*
	 * The review list, one query per state filter: ?1 state (_STATE
	 * only), ?2 now (_OVERDUE only: due_at <= now), ?3 route or NULL,
	 * priority or NULL, ?5 limit -> STORE_REVIEW_COLUMNS, by due_at, id.
	 * _OPEN: pending or claimed; _DECIDED: approved, corrected or
	 * rejected; _ALL: every state.
	 */
	STORE_Q_REVIEW_LIST_STATE,
	STORE_Q_REVIEW_LIST_OPEN,
	STORE_Q_REVIEW_LIST_OVERDUE,
	STORE_Q_REVIEW_LIST_DECIDED,
	STORE_Q_REVIEW_LIST_ALL,
	/*
	 * Open reviews beside the list: ?1 route or NULL, priority or NULL,
	 * ?3 now -> count(*), how many are due by now.
	 */
	STORE_Q_REVIEW_LIST_COUNTS,
	/*
	 * Decided reviews for export: ?1 decided_at lower bound, ?2 limit
	 * -> STORE_REVIEW_COLUMNS, by decided_at, id.
	 */
	STORE_Q_REVIEW_EXPORT,
	/*
	 * The oldest pending items of a route and priority, which overflow
	 * accepts: ?1 route, priority, ?3 limit -> id.
	 */
	STORE_Q_REVIEW_OVERFLOW,
	/*
	 * Open items that fell due in (?1, ?2] -> id, route, priority,
	 * reason, due_at, by due_at, id.
	 */
	STORE_Q_REVIEW_NEWLY_OVERDUE,
	/* Open items due by ?1 -> route, count(*), one row per route. */
	STORE_Q_REVIEW_OVERDUE_BY_ROUTE,
	/* Open items -> route, priority, state, count(*). */
	STORE_Q_REVIEW_OPEN_COUNTS,
	/*
	 * Open items for /metrics: ?1 now -> route, priority, count(*),
	 * how many are past due_at.
	 */
	STORE_Q_REVIEW_METRICS,
	/*
	 * Queued or running jobs after ?1 id, ?2 limit -> id, request_id,
	 * route, state, body, tries, created_at, by id.
	 */
	STORE_Q_JOBS_QUEUED,
	/* -> count(*) of queued or running jobs. */
	STORE_Q_JOBS_QUEUED_COUNT,
	/* One job: ?1 request_id -> route, state, response. */
	STORE_Q_JOB_STATE,
	/*
	 * Every override -> kind, subject, value, actor, reason, until, by
	 * at, kind, subject.
	 */
	STORE_Q_OVERRIDES,
	/*
	 * Cache rows stored at or after ?1 -> route, key, result,
	 * confidence, stored_at, by stored_at.
	 */
	STORE_Q_CACHE_LOAD,
	/*
	 * SLO minutes from ?1 (_ROUTE: of ?2 route only) -> route, minute,
	 * then the 21 counters in the order of STORE_SLO_MINUTE_ADD's ?3 ..
	 * ?23, by minute.
	 */
	STORE_Q_SLO_HISTORY,
	STORE_Q_SLO_HISTORY_ROUTE,
	/* The latest row of ?1 rule, ?2 route -> state, at. */
	STORE_Q_ALERT_LAST,
	/* The same row -> 1 when its state is firing, else 0. */
	STORE_Q_ALERT_FIRING,
	/*
	 * When the open episode of ?1 rule, ?2 route began -> min(at) after
	 * its last resolved or inactive row, 0 when none.
	 */
	STORE_Q_ALERT_EPISODE_START,
	/*
	 * Rule and route pairs whose latest row is pending or firing ->
	 * rule, route, severity, state.
	 */
	STORE_Q_ALERTS_OPEN,
	/*
	 * Where the alert history's fold starts: over the rule and route
	 * pairs whose latest row before ?1 (epoch ms) is pending or firing,
	 * the smallest id of the row that closed the pair's episode before
	 * (0: none) -> that id, -1 when no episode is open.
	 */
	STORE_Q_ALERTS_FOLD_AFTER,
	/*
	 * Alert rows at or after ?1, or with id > ?2 -> id, rule, route,
	 * severity, state, value, threshold, at, by id.
	 */
	STORE_Q_ALERTS_FOLD,
	/*
	 * Events after ?1 id, ?2 limit -> id, at, kind, subject, detail, by
	 * id.
	 */
	STORE_Q_EVENTS_AFTER,
	/* The latest event of ?1 kind -> max(at), 0 when none. */
	STORE_Q_EVENT_LAST_AT,
	/* fusebox report, from ?1 (epoch ms): -> count(*) of SLO minutes. */
	STORE_Q_REPORT_SLO_ROWS,
	/*
	 * Availability from SLO minutes since ?1 -> route, sum(total),
	 * sum(service_good), sum(smart_good), sum(no_llm), by route.
	 */
	STORE_Q_REPORT_AVAIL_SLO,
	/*
	 * The same from calls started since ?1 -> route, calls but 4xx,
	 * 200/202 within budget, 200 answered by llm or backup, calls but 4xx
	 * whose caller said allow_llm: false, by route.
	 */
	STORE_Q_REPORT_AVAIL_CALLS,
	/*
	 * Degradations since ?1, top ?2 reasons -> reason, count(*),
	 * distinct calls, the routes (comma-separated).
	 */
	STORE_Q_REPORT_DEGRADATIONS,
	/*
	 * Validation failures since ?1 (a row without at counts by its
	 * call's started_at), top ?2 -> route, stage, rule, count(*),
	 * max(detail).
	 */
	STORE_Q_REPORT_FAILURES,
	/*
	 * Calls started since ?1 (epoch ms) -> route, minute (epoch ms of its
	 * start), count(*), sum(degraded), the nearest-rank p99 of
	 * elapsed_ms, by route and minute (GET /v1/slo/history).
	 */
	STORE_Q_HISTORY_CALLS,
	/* Attempts started since ?1 -> backend, outcome, count(*), by backend. */
	STORE_Q_HISTORY_OUTCOMES,
	/*
	 * Audit rows after ?1 id, ?2 limit -> id, at, actor, action, target,
	 * before, after, remote, action_id, by id (GET /v1/audit).
	 */
	STORE_Q_AUDIT_AFTER,
	/*
	 * GET /v1/diagnose, by time on the tables' time indexes (calls and
	 * attempts on their covering calls_diag and attempts_diag), each with
	 * ?1 from, ?2 to (from <= t < to) and a row limit (the last ?N):
	 * degraded calls started in the window, ?3 route or NULL, ?4 limit
	 * -> id, route, started_at, degraded, reason, source, http_status,
	 * elapsed_ms, budget_ms, by started_at, id.
	 */
	STORE_Q_DIAG_CALLS,
	/*
	 * The window's calls that were not degraded, only as the diagnosis
	 * counts them: ?3 route or NULL, ?4 limit -> route, started_at /
	 * 60000 * 8 + flags (1: answered 4xx, 2: 200 or 202 within budget,
	 * 4: 200 answered by the llm or the backup), by started_at, id.
	 */
	STORE_Q_DIAG_HEALTHY,
	/*
	 * Attempts started in the window, ?3 route or NULL, ?4 limit -> id,
	 * call_id, route, backend, attempt_no, started_at, connect_ms,
	 * first_byte_ms, total_ms, http_status, outcome, retry_after_ms,
	 * input_tokens, by started_at, id.
	 */
	STORE_Q_DIAG_ATTEMPTS,
	/*
	 * Validation failures checked in the window, ?3 route or NULL,
	 * ?4 limit -> attempt_id, call_id, route, stage, rule, detail, at,
	 * by at.
	 */
	STORE_Q_DIAG_VFAILS,
	/* Events in the window, ?3 limit -> at, kind, subject, detail, by at. */
	STORE_Q_DIAG_EVENTS,
	/* Audit rows in the window, ?3 limit -> at, actor, action, target, by at. */
	STORE_Q_DIAG_AUDIT,
	/*
	 * The window before as the episode needs it, from the SLO minutes:
	 * ?3 route or NULL, ?4 limit -> route, minute, total, total minus
	 * the calls answered by the llm (the degraded ones), by minute.
	 */
	STORE_Q_DIAG_PREV_MINUTES,
	/*
	 * The window before's falls by reason (degradations.at in the
	 * window): ?3 route or NULL, ?4 limit -> route, reason, distinct
	 * calls.
	 */
	STORE_Q_DIAG_PREV_REASONS,
	/* The latest call of a request id: ?1 request_id -> trace_id (hex). */
	STORE_Q_CALL_TRACE_ID,
	/*
	 * The attempts of the latest call of a request id: ?1 request_id,
	 * ?2 limit -> attempt_no, backend, outcome, http_status, connect_ms,
	 * first_byte_ms, total_ms, span_id, upstream_headers (JSON text), by
	 * attempt_no, id (GET /v1/requests/{request_id}).
	 */
	STORE_Q_REQUEST_ATTEMPTS,
	STORE_Q__COUNT
};

/* A named read query; by_key: see store_query_defs in store.c. */
struct store_query_def {
	const char *name;
	const char *sql;
	int by_key;
};

/* The read queries, indexed by enum store_query. */
extern const struct store_query_def store_query_defs[STORE_Q__COUNT];

/* One statement with its values (borrowed). */
struct store_op {
	enum store_stmt stmt;
	const struct store_val *vals;
	int nvals;
};

struct store;

struct store_stats {
	uint64_t rows_written; /* rows executed and committed (incl. commit-now) */
	uint64_t batches;      /* write transactions committed (not prune) */
	uint64_t dropped;      /* store_put() rows refused: queue full */
	uint64_t sync_commits; /* transactions committed with synchronous=FULL */
	uint64_t max_batch_rows;
	uint64_t errors;       /* async rows that failed (logged to stderr) */
	uint64_t pruned;       /* rows deleted by retention */
	uint64_t queued;       /* rows in the queue right now */
	int prune_running;     /* a store_prune() pass is still going */
	uint64_t boosts;       /* times the idle writer was raised (backlog, request, close) */
	uint64_t boost_errors; /* raising it failed (logged once) */
	int writer_idle;       /* the writer runs SCHED_IDLE when nothing presses */
	uint64_t requests;     /* commit-now and commit-later requests queued (not flushes) */
	uint64_t spare_blocks; /* written rows' blocks kept for reuse by producers */
	int writer_cpus;       /* CPUs the writer keeps to, 0: not restricted */
	uint64_t rows_dropped; /* every log row that never reached the DB: dropped + errors */
	uint64_t truncated;    /* log row texts cut at the text limit (store_limit_set) */
	int degraded;	       /* rows were lost to a failed write in the last 30 s */
	int64_t degraded_at;   /* epoch ms of the last such loss, 0: never */
	char last_error[160];  /* why, SQLite's words ("" when never) */
};

/*
 * Open (creating) the DB at path: WAL, busy_timeout 5000,
 * the DB, WAL and SHM files mode 0600 (see store_files_share()),
 * synchronous=NORMAL, foreign_keys off. Pending migrations are applied in
 * order, each in its own transaction and recorded in schema_migrations. A DB
 * whose schema is newer than this binary fails with STORE_E_NEWER. Starts
 * the writer thread. queue_cap bounds the async queue (rows, >= 1).
 * Returns 0, -errno (-EINVAL: bad arguments), STORE_E_SQL or STORE_E_NEWER
 * with *cause set (caller frees).
 */
int store_open(const char *path, int queue_cap, struct store **out, char **cause);
/* Flush everything queued, commit, stop the thread, close. NULL ok. */
void store_close(struct store *st);

/*
 * Queue one log row (vals and strings are copied; the caller keeps its
 * own). Never blocks beyond a mutex. Returns 0; STORE_E_FULL when the queue
 * is full (the row is dropped and counted; every lost row, dropped here or
 * lost in SQL, is told in an events row of kind "log_rows_dropped", at
 * most one per 10 s, see "Lost rows" in store_writer.c);
 * STORE_E_CLOSED after store_close() began; -EINVAL for a bad statement or
 * too many values; -E2BIG for a row larger than 16 MiB.
 *
 * A row that fails in SQL (e.g. a duplicate id) is logged to stderr and
 * counted in stats.errors; the rest of its batch still commits (a failed
 * statement only undoes itself). Should SQLite abort the whole transaction
 * (I/O error, disk full) the rows of that batch before the failure are
 * lost, and are logged and counted as such; so is a whole batch when
 * another process holds the DB's write lock for longer than the 5 s busy
 * timeout.
 */
int store_put(struct store *st, enum store_stmt stmt, const struct store_val *vals, int nvals);

/*
 * Commit now: ops run in one transaction (a savepoint inside the writer's
 * batch), ordered after everything queued before this call, committed with
 * synchronous=FULL before this returns (the caller blocks). ops and their
 * strings are borrowed until return. Returns 0; STORE_E_SQL with *cause
 * (e.g. a UNIQUE violation), in which case none of the ops took effect;
 * STORE_E_CLOSED; -EINVAL. *last_rowid (may be NULL) gets
 * sqlite3_last_insert_rowid() after the last op.
 */
int store_commit_now(struct store *st, const struct store_op *ops, int nops, int64_t *last_rowid,
		     char **cause);

/*
 * Commit later: the same transaction as store_commit_now() (ordered after
 * everything queued before, a savepoint, synchronous=FULL) without
 * waiting for it. ops and their strings are copied. done(arg, rc,
 * last_rowid, cause) runs once on the writer thread after the COMMIT
 * returned (rc 0) or the ops failed (rc STORE_E_SQL, cause borrowed for
 * the call); it must not call back into the store. Requests of one batch
 * share its fsync. nops 0 (ops may be NULL) is a flush marker: done runs
 * once everything queued before it is committed (store_flush() without
 * the wait). Returns 0; -EINVAL, -E2BIG or STORE_E_CLOSED, and then
 * done is never called. A store being closed still runs every request
 * queued before store_close().
 */
typedef void (*store_done_fn)(void *arg, int rc, int64_t last_rowid, const char *cause);
int store_commit_later(struct store *st, const struct store_op *ops, int nops, store_done_fn done,
		       void *arg);

/* Block until everything queued so far is committed. 0 or STORE_E_CLOSED. */
int store_flush(struct store *st);

void store_get_stats(struct store *st, struct store_stats *out);

/*
 * Bound the text values of log rows queued by store_put() from now on:
 * calls.input and calls.result are cut to at most max_bytes (at a UTF-8
 * character boundary) and marked with STORE_TRUNCATED_MARK and the
 * original length. 0: keep them whole. Promises (store_commit_now,
 * store_commit_later) are never cut.
 */
#define STORE_TRUNCATED_MARK "...[truncated: "
void store_limit_set(struct store *st, int64_t max_bytes);

/*
 * Give the DB, WAL and SHM files of path mode 0640 and group gid (the
 * files that exist now; SQLite creates later WAL and SHM files with the
 * DB file's mode and owner). 0 or -errno with *cause.
 */
int store_files_share(const char *path, gid_t gid, char **cause);

/*
 * The CPUs the writer thread keeps to, from those the process may use: all
 * but the first when there are two or more (see "Scheduling" in
 * store_writer.c). Returns how many are in *out; 0 (writer not restricted)
 * with fewer than two. The writer applies it at start unless
 * FUSEBOX_WRITER_AFFINITY is "off".
 */
int store_writer_cpus(const cpu_set_t *allowed, cpu_set_t *out);

/*
 * Retention: delete rows whose time is < before_ms: calls (started_at),
 * attempts (started_at), validation_failures (at), degradations (at),
 * events (at), alerts (at), slo_minutes (minute, but never within the
 * last 31 days: the SLO windows reach back 30), cache (stored_at), reviews
 * with decided_at set, jobs done or failed (updated_at). The writer deletes at most 500
 * rows per transaction, alternating with normal batches. Asynchronous:
 * returns at once (stats.prune_running says when it is done). A second call
 * while one runs restarts it with the later cutoff. 0 or STORE_E_CLOSED.
 */
int store_prune(struct store *st, int64_t before_ms);

/*
 * Readers: a read-only connection for one thread at a time (WAL lets it
 * read alongside the writer). Prepared statements are cached by SQL text.
 */
struct store_reader;

int store_reader_open(const char *path, struct store_reader **out, char **cause);
void store_reader_close(struct store_reader *r);
/*
 * Bound every query on r from now on to limit_ms of wall time, the row
 * callbacks and the queries they run included (a progress handler cuts
 * it: the query fails with STORE_E_SLOW). 0: no bound.
 */
void store_reader_deadline_set(struct store_reader *r, int limit_ms);
/*
 * Size r for large scans it is kept open for: map up to mmap_bytes of the
 * database file (pages then come from the OS cache without a copy, and a
 * reader kept open keeps them mapped) and keep up to cache_kib of pages.
 * 0 or STORE_E_SQL with *cause.
 */
int store_reader_tune(struct store_reader *r, int64_t mmap_bytes, int cache_kib, char **cause);
/* Queries on r cut by the deadline so far. */
uint64_t store_reader_timeouts(const struct store_reader *r);
/* 1 when r's last (outermost) query was cut by the deadline, else 0. */
int store_reader_was_cut(const struct store_reader *r);

/*
 * Run sql with vals bound to ?1..?nvals; row_cb (may be NULL) is called for
 * each row with the statement (use sqlite3_column_*(), valid during the
 * call only); a non-zero return stops the query. row_cb may run other
 * queries on the same reader. Returns 0, STORE_E_SQL with *cause, or
 * STORE_E_SLOW with *cause when the reader's deadline cut it.
 */
typedef int (*store_row_cb)(void *arg, sqlite3_stmt *row);
int store_reader_query(struct store_reader *r, const char *sql, const struct store_val *vals,
		       int nvals, store_row_cb row_cb, void *arg, char **cause);
/* First column of the first row as int64; def when no row or on error. */
int64_t store_reader_int(struct store_reader *r, const char *sql, const struct store_val *vals,
			 int nvals, int64_t def);
/*
 * Run the named query q as store_reader_query() runs SQL. 0 or STORE_E_SQL
 * with *cause (also for a q out of range).
 */
int store_reader_run(struct store_reader *r, enum store_query q, const struct store_val *vals,
		     int nvals, store_row_cb row_cb, void *arg, char **cause);
/* First column of the first row of q as int64; def when no row or on error. */
int64_t store_reader_run_int(struct store_reader *r, enum store_query q,
			     const struct store_val *vals, int nvals, int64_t def);
/*
 * First column of the first row of q as a new string in *out (caller
 * frees; NULL when there is no row or the value is NULL). 0 or STORE_E_SQL
 * with *cause.
 */
int store_reader_run_text(struct store_reader *r, enum store_query q, const struct store_val *vals,
			  int nvals, char **out, char **cause);
/* Applied schema version of the reader's DB (0: none, -1: error). */
int store_schema_version(struct store_reader *r);
/* The highest migration version compiled in. */
int store_known_version(void);
