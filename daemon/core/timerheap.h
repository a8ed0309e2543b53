#pragma once
/*
 * timerheap: a binary min-heap of named timers keyed by monotonic
 * microseconds (the ae/curl "named timers" shape). Each struct timer is
 * embedded in its owner and knows its heap index, so cancel is O(log n).
 * Single-threaded: the engine thread only.
 */
#include <stdint.h>

struct timer;
typedef void (*timer_cb)(struct timer *t, void *arg);

struct timer {
	int64_t at_us;
	timer_cb cb;
	void *arg;
	const char *name; /* for logs: "deadline", "backoff", "first_byte", ... */
	int index;	  /* -1 when not armed */
};

struct timerheap {
	struct timer **v;
	int n;
	int cap;
};

void timerheap_init(struct timerheap *h);
void timerheap_free(struct timerheap *h);
void timer_init(struct timer *t, const char *name, timer_cb cb, void *arg);
/* Arm (or re-arm) t at at_us. */
void timerheap_arm(struct timerheap *h, struct timer *t, int64_t at_us);
/* Disarm t; a no-op when it is not armed. */
void timerheap_cancel(struct timerheap *h, struct timer *t);
int timer_armed(const struct timer *t);
/* Earliest deadline, or INT64_MAX when empty. */
int64_t timerheap_next(const struct timerheap *h);
/* Pop and run every timer due at now_us; callbacks may arm/cancel timers. Returns the count run. */
int timerheap_run(struct timerheap *h, int64_t now_us);
