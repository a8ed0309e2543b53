#pragma once
/*
 * review_q: the human review queue (DESIGN.md "Review item", steps 7 and
 * 9; API.md "Reviews"). Items live in the reviews table; every change of an
 * item is committed before anyone is told about it (a new item with
 * engine_commit_later, decisions with store_commit_now). The
 * queue keeps per-route open counts in memory (loaded at start), applies
 * the route's capacity overflow policy and reports items that pass their
 * SLA. Engine thread only, except review_q_load() (daemon_create, before
 * the loop starts). Its pure policy is core/review.h.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "review.h"
#include "store.h"

struct engine;

/* An item as stored (one reviews row). Strings owned; JSON columns as text. */
struct review_item {
	int64_t id;
	char *route;
	char *request_id;
	int64_t call_id; /* 0: none */
	enum priority priority;
	char *reason;
	enum review_state state;
	int64_t created_at; /* epoch ms */
	int64_t due_at;
	char *input;
	char *raw_output;
	char *result; /* JSON */
	int has_confidence;
	double confidence;
	char *alt_result;	/* JSON */
	char *reviewer;		/* the claimer, then the decider */
	char *verdict;		/* "approve" | "correct" | "reject" once decided */
	char *corrected_result; /* JSON */
	char *note;
	int64_t decided_at; /* 0: not decided */
	char *callback_url;
};

/* A new item (review_q_enqueue). Everything borrowed. */
struct review_new {
	const struct route_cfg *rc; /* the call's route (may be one a reload removed) */
	const char *request_id;
	int64_t call_id;    /* 0: none */
	const char *reason; /* "low_confidence", "sampled", "cross_check_mismatch", "manual", ... */
	const char *input;  /* the call's input text, may be NULL */
	const char *raw_output; /* the model's text, may be NULL */
	const cJSON *result;	/* the answer under review, NULL for "manual" */
	int has_confidence;
	double confidence;
	const cJSON *alt_result;  /* the cross-check's answer, or NULL */
	const char *callback_url; /* the call's callback_url, or NULL */
};

/* A state change handed to the setter. Strings borrowed. */
struct review_change {
	enum review_state to;
	const char *reviewer;	      /* claimer or decider */
	const char *verdict;	      /* NULL unless deciding */
	const char *corrected_result; /* JSON text; NULL unless corrected */
	const char *note;
	int64_t decided_at; /* 0 unless deciding */
	const char *why;    /* for the log line */
};

struct review_q;

/* ---- the queue (engine thread) ---- */

/*
 * Create the queue of e (e->review_q): per-route open counts from the
 * reviews table (read through e->reader), the overdue watermark from the
 * last review_overdue event, then the overflow policy of every route is
 * applied once (a restart with a smaller capacity acts at once). Call from
 * daemon_create() after e->routes and e->reader are set (and after
 * control_restore(), so that an operator's forced level is known). 0, or
 * REVIEW_Q_E_STORE with *cause (caller frees); e->review_q is then unset.
 */
int review_q_load(struct engine *e, char **cause);
/*
 * After a reload swapped e->cfg and e->routes: rebuild the per-route
 * counts for the new route set (recounted from the table; carried over by
 * route name should that query fail), keep the overdue watermark, and
 * apply the new capacities and policies (a force_l2 force is released at
 * once when its route's policy changed). Never fails.
 */
void review_q_reconfigure(struct engine *e, int64_t now_wall_ms);
/* Free the queue (engine_free). NULL ok. */
void review_q_free(struct review_q *q);

/*
 * The outcome of review_q_enqueue(), on the engine thread: rc 0 (id: the
 * new item's) or REVIEW_Q_E_STORE (cause borrowed for the call).
 */
typedef void (*review_q_done_fn)(struct engine *e, void *arg, int rc, int64_t id,
				 const char *cause);
/*
 * Enqueue an item: priority from review_priority_for(), due_at from the
 * route's SLA and now_wall_ms. The row (state pending) is committed with
 * synchronous=FULL without blocking the loop (engine_commit_later); then
 * fn(arg) is told (fn NULL: a failure is logged), and the route's overflow
 * policy runs. A route a reload removed meanwhile is fine: the item is
 * stored, not counted. Returns 0 (fn will be called) or REVIEW_Q_E_STORE /
 * -EINVAL with *cause (fn will not be called).
 */
int review_q_enqueue(struct engine *e, const struct review_new *n, int64_t now_wall_ms,
		     review_q_done_fn fn, void *arg, char **cause);

/*
 * Once a second (engine cron): one "review_overdue" event per open item
 * whose due_at passed since the previous tick; refresh the per-route
 * overdue counts; release a level-2 force once the queue is below capacity.
 */
void review_q_tick(struct engine *e, int64_t now_wall_ms);

/* Open items of route i now (for /v1/state "review_pending"); 0 for a bad index. */
int review_q_open(const struct engine *e, int route);
/* Counts of route i (metrics: pending by priority, overdue); zeroes for a bad index. */
void review_q_counts(const struct engine *e, int route, struct review_counts *out);

/*
 * Fill *it (strings new) from a row of STORE_Q_REVIEW_GET, _REVIEW_LIST_* or _REVIEW_EXPORT
 * (db/store.c's STORE_REVIEW_COLUMNS, in its order). 0, or -EINVAL (bad state/priority).
 */
int review_item_from_row(sqlite3_stmt *row, struct review_item *it);
/* A JSON column as a value: null for NULL, the parsed JSON, or the text as a string. New tree. */
cJSON *review_json_value(const char *text);
/* Read item id (e->reader). 0, REVIEW_Q_E_NOT_FOUND, or REVIEW_Q_E_STORE with *cause. */
int review_q_get(struct engine *e, int64_t id, struct review_item *out, char **cause);
void review_item_clear(struct review_item *it);
/* The API.md item object of it at now_wall_ms (new tree, caller deletes). */
cJSON *review_item_json(const struct review_item *it, int64_t now_wall_ms);

/*
 * THE setter of an item's state (STYLE.md rule 7): returns 0 at once when
 * it->state == ch->to; otherwise commits the reviews UPDATE together with
 * extra (audit / events rows, may be NULL) in one transaction, then moves
 * the in-memory counts of q, updates *it and logs "old -> new (why)".
 * Nothing else changes an item's state. 0, or REVIEW_Q_E_STORE with *cause
 * (nothing changed).
 */
int review_q_set_state(struct review_q *q, struct store *st, struct review_item *it,
		       const struct review_change *ch, const struct store_op *extra, int nextra,
		       char **cause);

/*
 * Apply route i's overflow policy now (after an enqueue or a decision).
 * Engine thread. 0, or REVIEW_Q_E_STORE with *cause (an auto-accept could
 * not be committed; the queue stays over capacity and the next call retries).
 */
int review_q_overflow(struct engine *e, int route, int64_t now_wall_ms, char **cause);

/* A queue with zero counts for the routes of cfg (names copied). review_q_free() it. */
struct review_q *review_q_new(const struct config *cfg);
/* Counts of route i in q (tests); NULL for a bad index. */
const struct review_counts *review_q_route_counts(const struct review_q *q, int route);
