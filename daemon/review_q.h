#pragma once
/*
 * review_q: the human review queue (DESIGN.md "Review item", steps 7 and
 * 9; API.md "Reviews"). Items live in the reviews table; every change of an
 * item is committed before anyone is told about it (a new item with
 * engine_commit_later, decisions with store_commit_now). The
 * queue keeps per-route open counts in memory (loaded at start), applies
 * the route's capacity overflow policy and reports items that pass their
 * SLA. Engine thread only, except review_q_load() (engine_create, before
 * the loop starts) and the pure functions, which any thread may call.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "http.h"
#include "store.h"

struct engine;

enum review_q_e {
	REVIEW_Q_E_NOT_FOUND = 1, /* no item with that id */
	REVIEW_Q_E_CLAIMED,	  /* claimed by another operator (HTTP 409) */
	REVIEW_Q_E_DECIDED,	  /* already approved, corrected or rejected (HTTP 409) */
	REVIEW_Q_E_STORE,	  /* the store refused the change; *cause says why */
};

/* pending → claimed → approved | corrected | rejected (pending may be decided directly). */
enum review_state {
	REVIEW_PENDING = 0,
	REVIEW_CLAIMED,
	REVIEW_APPROVED,
	REVIEW_CORRECTED,
	REVIEW_REJECTED,
	REVIEW_STATE__COUNT
};

/* What an operator (or the overflow policy) does to an item. */
enum review_action {
	REVIEW_CLAIM = 0,
	REVIEW_APPROVE, /* the verdicts: "approve", "correct", "reject" */
	REVIEW_CORRECT,
	REVIEW_REJECT,
	REVIEW_ACTION__COUNT
};

/* The actor of automatic decisions and forced levels made by the overflow policy. */
#define REVIEW_OVERFLOW_ACTOR "review_overflow"

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

/* Per-route open items. */
struct review_counts {
	int pending[PRIORITY__COUNT];
	int claimed[PRIORITY__COUNT];
	int open;    /* pending + claimed, all priorities */
	int overdue; /* open items past due_at at the last tick */
	int alert_overdue;  /* the review_overdue alert of the route is firing */
	int alert_overflow; /* the review_overflow alert of the route is firing */
	int alerts_loaded;  /* the two flags were read back from the alerts table */
};

/* What the overflow policy does now (review_overflow_plan). */
enum review_overflow_act {
	REVIEW_OVERFLOW_NONE = 0,
	REVIEW_OVERFLOW_ACCEPT_LOW, /* approve `accept` low pending items, oldest first */
	REVIEW_OVERFLOW_KEEP,	    /* over capacity, nothing to do: keep all, say so once */
	REVIEW_OVERFLOW_FORCE_L2,   /* force the route to level 2 */
	REVIEW_OVERFLOW_RELEASE_L2, /* lift the level-2 force this policy set */
};

struct review_overflow_in {
	enum overflow policy;
	int capacity;
	int open;	  /* open items of the route */
	int low_pending;  /* of which pending with priority low */
	int forced_by_us; /* the route's forced level is ours (actor review_overflow) */
	int forced_by_op; /* an operator's forced level is in force */
};

struct review_overflow_plan {
	enum review_overflow_act act;
	int accept; /* ACCEPT_LOW: how many */
};

struct review_q;

/* ---- pure: no I/O, no clock (time is an argument) ---- */

/* "pending", "claimed", "approved", "corrected", "rejected"; NULL when out of range. */
const char *review_state_name(enum review_state s);
/* 0 and *out, or -EINVAL for an unknown name. */
int review_state_parse(const char *name, enum review_state *out);
/* "claim", "approve", "correct", "reject"; NULL when out of range. */
const char *review_action_name(enum review_action a);
int review_action_parse(const char *name, enum review_action *out);
/* 0 or -EINVAL ("high", "medium", "low"). */
int review_priority_parse(const char *name, enum priority *out);
/* 1 for approved, corrected, rejected. */
int review_state_decided(enum review_state s);

/*
 * The review item state machine. holder is the item's reviewer while it is
 * claimed (NULL otherwise); actor is who acts. Returns 0 with *to set
 * (*to == from when nothing changes: a claim by the holder), or
 * REVIEW_Q_E_DECIDED (the item is already decided) or REVIEW_Q_E_CLAIMED
 * (claimed by someone else). -EINVAL for an action out of range.
 */
int review_transition(enum review_state from, const char *holder, const char *actor,
		      enum review_action act, enum review_state *to);

/* Priority of a new item: "manual" items are high, the rest the route's review.priority. */
enum priority review_priority_for(const struct review_cfg *rv, const char *reason);
/* due_at of an item created at created_ms: created + sla_s[prio] seconds. */
int64_t review_due_at(const struct review_cfg *rv, enum priority prio, int64_t created_ms);
/* 1 when an item in state s due at due_ms is overdue at now_ms (open and due_ms <= now_ms). */
int review_is_overdue(enum review_state s, int64_t due_ms, int64_t now_ms);
/*
 * Move one item of priority p from state `from` to `to` in c (open,
 * pending and claimed stay consistent; a decided state leaves the queue).
 * from == REVIEW_STATE__COUNT means "new item".
 */
void review_counts_move(struct review_counts *c, enum priority p, enum review_state from,
			enum review_state to);
/*
 * The overflow decision. The queue is over capacity when open > capacity.
 * auto_accept_low: accept min(open - capacity, low_pending) items
 * (ACCEPT_LOW), or KEEP when there is none to accept. force_l2: FORCE_L2
 * when over capacity and no forced level is in force; KEEP when an
 * operator's forced level is (it is left alone); RELEASE_L2 when our force
 * is in place and open has fallen below capacity (open < capacity: one
 * item of hysteresis, so the route does not flap on every enqueue), or at
 * once when the route's policy is no longer force_l2 (after a reload).
 * Otherwise NONE. Items are never dropped.
 */
void review_overflow_plan(const struct review_overflow_in *in, struct review_overflow_plan *out);

/* ---- the queue (engine thread) ---- */

/*
 * Create the queue of e (e->review_q): per-route open counts from the
 * reviews table (read through e->reader), the overdue watermark from the
 * last review_overdue event, then the overflow policy of every route is
 * applied once (a restart with a smaller capacity acts at once). Call from
 * engine_create() after e->routes and e->reader are set (and after
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
 * The reviews columns review_item_from_row() reads, in its order, for
 * "SELECT " REVIEW_ITEM_COLUMNS " FROM reviews ...".
 */
#define REVIEW_ITEM_COLUMNS                                                                        \
	"id, route, request_id, call_id, priority, reason, state, created_at, due_at, input, "     \
	"raw_output, result, confidence, alt_result, reviewer, verdict, corrected_result, note, "  \
	"decided_at, callback_url"
/* Fill *it (strings new) from a row of REVIEW_ITEM_COLUMNS. 0, or -EINVAL (bad state/priority). */
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

/*
 * The review endpoints (api_review.c): GET /v1/reviews,
 * GET /v1/reviews/export, GET /v1/reviews/{id}, POST /v1/reviews/{id}/claim,
 * POST /v1/reviews/{id}/decision. Export comes before {id} in the table.
 */
extern const struct endpoint api_review_endpoints[];
