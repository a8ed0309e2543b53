/*
 * bulkhead: counting semaphore plus an intrusive doubly linked FIFO.
 * Invariant: a waiter is in the list iff w->queued; nwaiting is the list's
 * length; inflight only exceeds max after the cap was lowered. A freed slot
 * goes straight to the oldest waiter, so while slots are contended nobody
 * overtakes the queue; only a raised cap leaves free slots beside waiters
 * until bulkhead_next() drains them.
 */
#include "bulkhead.h"

#include <stddef.h>

void
bulkhead_init(struct bulkhead *b, int max)
{
	b->max = max;
	b->inflight = 0;
	b->high_water = 0;
	b->nwaiting = 0;
	b->head = NULL;
	b->tail = NULL;
	b->rejected = 0;
}

static void
bulkhead_take(struct bulkhead *b)
{
	b->inflight++;
	if (b->inflight > b->high_water)
		b->high_water = b->inflight;
}

int
bulkhead_enter(struct bulkhead *b)
{
	int error = BULKHEAD_E_FULL;

	if (b->inflight < b->max) {
		bulkhead_take(b);
		error = 0;
	} else
		b->rejected++;
	return error;
}

void
bulkhead_enqueue(struct bulkhead *b, struct bulkhead_waiter *w)
{
	if (!w->queued) {
		w->next = NULL;
		w->prev = b->tail;
		if (b->tail != NULL)
			b->tail->next = w;
		else
			b->head = w;
		b->tail = w;
		w->queued = 1;
		b->nwaiting++;
	}
}

void
bulkhead_cancel(struct bulkhead *b, struct bulkhead_waiter *w)
{
	if (w->queued) {
		if (w->prev != NULL)
			w->prev->next = w->next;
		else
			b->head = w->next;
		if (w->next != NULL)
			w->next->prev = w->prev;
		else
			b->tail = w->prev;
		w->prev = NULL;
		w->next = NULL;
		w->queued = 0;
		b->nwaiting--;
	}
}

struct bulkhead_waiter *
bulkhead_leave(struct bulkhead *b)
{
	struct bulkhead_waiter *w = NULL;

	if (b->inflight > 0) {
		if (b->head != NULL && b->inflight <= b->max) {
			w = b->head;
			bulkhead_cancel(b, w);
		} else
			b->inflight--;
	}
	return w;
}

void
bulkhead_set_max(struct bulkhead *b, int max)
{
	b->max = max;
}

struct bulkhead_waiter *
bulkhead_next(struct bulkhead *b)
{
	struct bulkhead_waiter *w = NULL;

	if (b->head != NULL && b->inflight < b->max) {
		w = b->head;
		bulkhead_cancel(b, w);
		bulkhead_take(b);
	}
	return w;
}
