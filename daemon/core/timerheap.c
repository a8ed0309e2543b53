/*
 * timerheap: binary min-heap of embedded timers.
 *
 * Invariant: h->v[i]->index == i for every armed timer, and a disarmed
 * timer has index -1. A timer is removed from the heap before its callback
 * runs, so the callback may re-arm it.
 */
#include "timerheap.h"

#include <stdlib.h>

#include "util.h"

void
timerheap_init(struct timerheap *h)
{
	h->v = NULL;
	h->n = 0;
	h->cap = 0;
}

void
timerheap_free(struct timerheap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

void
timer_init(struct timer *t, const char *name, timer_cb cb, void *arg)
{
	t->at_us = 0;
	t->cb = cb;
	t->arg = arg;
	t->name = name;
	t->index = -1;
}

int
timer_armed(const struct timer *t)
{
	return t->index >= 0;
}

static void
heap_swap(struct timerheap *h, int a, int b)
{
	struct timer *t = h->v[a];

	h->v[a] = h->v[b];
	h->v[b] = t;
	h->v[a]->index = a;
	h->v[b]->index = b;
}

static void
heap_up(struct timerheap *h, int i)
{
	while (i > 0) {
		int p = (i - 1) / 2;

		if (h->v[p]->at_us <= h->v[i]->at_us)
			break;
		heap_swap(h, p, i);
		i = p;
	}
}

static void
heap_down(struct timerheap *h, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < h->n && h->v[l]->at_us < h->v[m]->at_us)
			m = l;
		if (r < h->n && h->v[r]->at_us < h->v[m]->at_us)
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
}

void
timerheap_arm(struct timerheap *h, struct timer *t, int64_t at_us)
{
	if (t->index >= 0)
		timerheap_cancel(h, t);
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->v = xrealloc(h->v, (size_t)h->cap * sizeof *h->v);
	}
	t->at_us = at_us;
	t->index = h->n;
	h->v[h->n++] = t;
	heap_up(h, t->index);
}

void
timerheap_cancel(struct timerheap *h, struct timer *t)
{
	int i = t->index;

	if (i < 0)
		return;
	h->n--;
	if (i != h->n) {
		h->v[i] = h->v[h->n];
		h->v[i]->index = i;
		heap_down(h, i);
		heap_up(h, i);
	}
	t->index = -1;
}

int64_t
timerheap_next(const struct timerheap *h)
{
	return h->n ? h->v[0]->at_us : INT64_MAX;
}

int
timerheap_run(struct timerheap *h, int64_t now_us)
{
	int ran = 0;

	while (h->n > 0 && h->v[0]->at_us <= now_us) {
		struct timer *t = h->v[0];

		timerheap_cancel(h, t);
		t->cb(t, t->arg);
		ran++;
	}
	return ran;
}
