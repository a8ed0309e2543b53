#pragma once
/*
 * review: the review item's state machine and the queue's pure policy
 * (DESIGN.md "Review item"; API.md "Reviews"): state and action names,
 * the transition function, priorities and due times, the per-route open
 * counts and the overflow decision. No I/O, no clock: time is an
 * argument. The queue that acts on these is daemon/review_q.c.
 */
#include <stdint.h>

#include "config.h"

/* Outcomes of the queue's operations; review_transition() returns two of them. */
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

/* Per-route open items. */
struct review_counts {
	int pending[PRIORITY__COUNT];
	int claimed[PRIORITY__COUNT];
	int open;	    /* pending + claimed, all priorities */
	int overdue;	    /* open items past due_at at the last tick */
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
