#pragma once
/*
 * bulkhead: a per-backend concurrency cap with an optional FIFO of waiters
 * (queue_ms). Intrusive: waiters live in the caller's memory; the caller
 * arms its own queue_ms timer. Pure, no allocation; runs on the engine thread.
 */
#include <stdint.h>

enum bulkhead_e {
	BULKHEAD_E_FULL = 1, /* every slot taken */
};

struct bulkhead_waiter {
	struct bulkhead_waiter *prev, *next;
	void *arg; /* the caller's, untouched */
	int queued;
};

struct bulkhead {
	int max;
	int inflight;
	int high_water; /* largest inflight seen */
	int nwaiting;
	struct bulkhead_waiter *head, *tail;
	uint64_t rejected; /* times bulkhead_enter() answered FULL */
};

void bulkhead_init(struct bulkhead *b, int max);
/* Take a slot: 0, or BULKHEAD_E_FULL when all max are taken. */
int bulkhead_enter(struct bulkhead *b);
/* Queue w (borrowed until dequeued) for the next free slot; no-op if already queued. */
void bulkhead_enqueue(struct bulkhead *b, struct bulkhead_waiter *w);
/* Remove w from the queue (its timer fired, or its call is gone); no-op if not queued. */
void bulkhead_cancel(struct bulkhead *b, struct bulkhead_waiter *w);
/*
 * Release a slot. When someone waits and the cap allows, the slot passes to
 * the oldest waiter (inflight unchanged), which is dequeued and returned so
 * the caller can resume it; else NULL.
 */
struct bulkhead_waiter *bulkhead_leave(struct bulkhead *b);
/* New cap after reload; inflight above it drains as slots are left. */
void bulkhead_set_max(struct bulkhead *b, int max);
/*
 * The oldest waiter, given a free slot (inflight++) and dequeued, or NULL
 * when no slot is free or nobody waits. Call it in a loop after raising
 * the cap with bulkhead_set_max().
 */
struct bulkhead_waiter *bulkhead_next(struct bulkhead *b);
