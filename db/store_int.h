#pragma once
/*
 * store_int: what the files of the store share and nothing outside db/
 * sees. store.c opens and closes, holds the statement tables, the SQL
 * helpers, the migrations and the producer side of the queue;
 * store_writer.c is the writer thread (batches, requests, retention,
 * scheduling); store_rows.c makes and recycles queued rows;
 * store_reader.c is the read connections.
 *
 * Queue. A ring of cap row pointers. Each row is one allocation holding the
 * statement number, its values and copies of their strings. Slots
 * [head, head + taken) belong to the writer, which executes them without
 * the lock; [head + taken, head + taken + pending) are queued after them.
 * Producers only ever write the slot after the last one, so the two never
 * touch the same slot. Every queued row has a sequence number (enqueued
 * counts them); ring[head] is row head_seq.
 *
 * Threads: the writer connection is used by store_open() until the thread
 * starts, then only by the writer. Everything under "lock" in struct store
 * is shared; fields marked "writer" are the writer's alone.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store.h"

#define STORE_BATCH_ROWS    1000 /* pending rows that start a batch */
#define STORE_SPARE_CLASSES 5	 /* 512 B .. 8 KiB, store_rows.c */
#define STORE_PRUNE_COUNT   10	 /* tables retention walks, store_writer.c */

#define STORE_NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define STORE_MAX_VALS	       32	   /* values of the widest statement */
#define STORE_DEGRADED_HOLD_MS (30 * 1000) /* degraded this long after a loss */
#define STORE_DROP_EVENT_MS    (10 * 1000) /* one log_rows_dropped event per */

/* A queued row: one allocation, values then their strings. */
struct store_row {
	enum store_stmt stmt;
	int nvals;
	int spare_class; /* its block's size class, -1: malloc */
	struct store_val vals[];
};

struct store_req;
struct store_spare;

struct store {
	sqlite3 *db;				      /* writer */
	sqlite3_stmt *stmts[STORE_STMT__COUNT];	      /* writer */
	sqlite3_stmt *prune_stmts[STORE_PRUNE_COUNT]; /* writer */
	int nparams[STORE_STMT__COUNT];		      /* read-only after open */
	int prune_table;			      /* writer: next table to prune */
	int prune_turn;				      /* writer: prune before next batch */
	uint64_t unreported;			      /* writer: lost rows no event told yet */
	int64_t drop_event_at;			      /* writer: last log_rows_dropped try */
	int close_told;				      /* writer: told them while closing */

	pthread_t thread;
	int thread_started;

	pthread_mutex_t lock;
	pthread_cond_t wake_cond; /* the writer waits here */
	pthread_cond_t done_cond; /* request callers wait here */
	struct store_row **ring;  /* lock */
	int cap;
	int threshold;		      /* pending rows that start a batch */
	int boost_rows;		      /* queued rows that raise an idle writer */
	int head;		      /* lock */
	int taken;		      /* lock */
	int pending;		      /* lock */
	uint64_t head_seq;	      /* lock */
	uint64_t enqueued;	      /* lock */
	uint64_t dropped_pending;     /* lock */
	int64_t text_max;	      /* atomic: store_limit_set, 0: none */
	int64_t first_pending_us;     /* lock: when pending/drops went 0 -> 1 */
	struct store_req *reqs;	      /* lock */
	struct store_req **reqs_tail; /* lock */
	int closing;		      /* lock */
	int64_t prune_before;	      /* lock */
	int prune_restart;	      /* lock */
	int prune_running;	      /* lock */
	struct store_stats stats;     /* lock */
	pid_t writer_tid;	      /* lock: set by the writer at start */
	int idle;		      /* lock: the writer runs SCHED_IDLE ... */
	int boosted;		      /* lock: ... but SCHED_OTHER just now */
	int writer_cpus;	      /* lock: CPUs it keeps to, 0: any */

	pthread_mutex_t spare_lock; /* only for the two fields below */
	struct store_spare *spare[STORE_SPARE_CLASSES];
	int nspare[STORE_SPARE_CLASSES];
};

/* store.c: allocation (aborts when out of memory), errors, clocks, SQL. */
void *store_alloc(size_t n);
char *store_strdup(const char *s);
void store_cause_set(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t store_mono_us(void);
int64_t store_wall_ms(void);
int store_exec(sqlite3 *db, const char *sql, char **cause);
int store_bind(sqlite3_stmt *stmt, const struct store_val *vals, int nvals);
int store_stmt_run(struct store *st, enum store_stmt which, const struct store_val *vals, int nvals,
		   char **cause);
int store_args_check(const struct store *st, enum store_stmt stmt, const struct store_val *vals,
		     int nvals);
int store_db_open(const char *path, int flags, sqlite3 **out, char **cause);
/* A writer statement: store.c's table, store_open.c prepares them. */
struct store_stmt_def {
	const char *name;
	const char *sql;
};
extern const struct store_stmt_def store_stmt_defs[STORE_STMT__COUNT];
/* store.c: configure a connection (pragmas) / bring its schema to the newest migration. */
int store_db_configure(sqlite3 *db, const char *path, char **cause);
int store_migrate(sqlite3 *db, char **cause);

/* store_rows.c: rows and their spare blocks. */
int store_row_make(struct store *st, enum store_stmt stmt, const struct store_val *vals, int nvals,
		   struct store_row **out);
void store_rows_free(struct store *st, struct store_row **rows, int n);
uint64_t store_spares_count(struct store *st);
void store_spares_release(struct store *st);

/* store_writer.c: the writer thread and what wakes or raises it. */
void *store_writer_main(void *arg);
void store_boost(struct store *st);
int store_prune_prepare(struct store *st, char **cause);
