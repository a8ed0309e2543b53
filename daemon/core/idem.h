#pragma once
/*
 * idem: the idempotency table (DESIGN.md step 1). Key = route + request_id.
 * An entry is in flight (the first caller's call is running; later callers
 * wait on it: single flight) or done (the stored answer is replayed until
 * it expires). Entries expire in insertion order (one TTL for all), so
 * expiry pops a FIFO. Done entries beyond the capacity (entries) or
 * IDEM_MAX_BYTES (stored answers) are evicted early: the calls table still
 * answers for them. Engine thread only.
 */
#include <stddef.h>
#include <stdint.h>

struct idem;

/* Stored answers kept in memory at most (done entries beyond it go early). */
#define IDEM_MAX_BYTES (64u * 1024 * 1024)

struct idem_waiter {
	struct idem_waiter *next;
	void *arg; /* the waiting request */
};

struct idem_entry {
	char *key;
	int64_t expires_wall_ms;
	int done;
	unsigned status;
	char *response;		     /* the stored answer body (done) */
	struct idem_waiter *waiters; /* in flight: callers waiting for the first */
	struct idem_entry *hnext;    /* hash chain */
	struct idem_entry *fnext;    /* FIFO */
	struct idem *owner;
};

struct idem *idem_new(int capacity);
void idem_free(struct idem *t);
struct idem_entry *idem_find(struct idem *t, const char *route, const char *request_id,
			     int64_t now_wall_ms);
/* Insert an in-flight entry (the key must not be present). */
struct idem_entry *idem_insert(struct idem *t, const char *route, const char *request_id,
			       int64_t expires_wall_ms);
/* Mark done with the answer (copied); returns the waiters list, handed over to the caller. */
struct idem_waiter *idem_complete(struct idem_entry *en, unsigned status, const char *response);
/* Forget an in-flight entry whose call produced no replayable answer. */
void idem_remove(struct idem *t, struct idem_entry *en);
void idem_expire(struct idem *t, int64_t now_wall_ms);
/* Change the byte budget of stored answers (tests; default IDEM_MAX_BYTES). */
void idem_set_max_bytes(struct idem *t, size_t max_bytes);
int idem_count(const struct idem *t);
