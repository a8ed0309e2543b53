/*
 * idem: chained hash table + insertion FIFO.
 */
#include "idem.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NBUCKETS 65536

struct idem {
	struct idem_entry *buckets[NBUCKETS];
	struct idem_entry *fhead, *ftail;
	int count;
	int capacity;
	size_t bytes;	  /* stored answers */
	size_t max_bytes; /* done entries are evicted early beyond it (the calls table still
			     answers) */
};

static char *
make_key(const char *route, const char *request_id)
{
	return xasprintf("%s\x1f%s", route, request_id);
}

struct idem *
idem_new(int capacity)
{
	struct idem *t = xcalloc(1, sizeof *t);

	t->capacity = capacity;
	t->max_bytes = IDEM_MAX_BYTES;
	return t;
}

static void
entry_free(struct idem_entry *en)
{
	struct idem_waiter *w, *n;

	for (w = en->waiters; w; w = n) {
		n = w->next;
		free(w);
	}
	free(en->key);
	free(en->response);
	free(en);
}

static void
unlink_hash(struct idem *t, struct idem_entry *en)
{
	struct idem_entry **pp = &t->buckets[str_hash(STR_HASH_SEED, en->key) % NBUCKETS];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == en) {
			*pp = en->hnext;
			return;
		}
	}
}

void
idem_free(struct idem *t)
{
	struct idem_entry *en, *n;

	if (t == NULL)
		return;
	for (en = t->fhead; en; en = n) {
		n = en->fnext;
		entry_free(en);
	}
	free(t);
}

struct idem_entry *
idem_find(struct idem *t, const char *route, const char *request_id, int64_t now_wall_ms)
{
	char *key = make_key(route, request_id);
	struct idem_entry *en;

	for (en = t->buckets[str_hash(STR_HASH_SEED, key) % NBUCKETS]; en; en = en->hnext)
		if (strcmp(en->key, key) == 0 && !(en->done && en->status == 0))
			break;
	free(key);
	if (en && en->done && en->expires_wall_ms <= now_wall_ms)
		return NULL;
	return en;
}

struct idem_entry *
idem_insert(struct idem *t, const char *route, const char *request_id, int64_t expires_wall_ms)
{
	struct idem_entry *en = xcalloc(1, sizeof *en);
	uint32_t b;

	en->owner = t;
	en->key = make_key(route, request_id);
	en->expires_wall_ms = expires_wall_ms;
	b = str_hash(STR_HASH_SEED, en->key) % NBUCKETS;
	en->hnext = t->buckets[b];
	t->buckets[b] = en;
	if (t->ftail)
		t->ftail->fnext = en;
	else
		t->fhead = en;
	t->ftail = en;
	t->count++;
	return en;
}

struct idem_waiter *
idem_complete(struct idem_entry *en, unsigned status, const char *response)
{
	struct idem_waiter *w = en->waiters;

	en->waiters = NULL;
	en->done = 1;
	en->status = status;
	free(en->response);
	en->response = xstrdup(response ? response : "");
	en->owner->bytes += strlen(en->response);
	return w;
}

void
idem_remove(struct idem *t, struct idem_entry *en)
{
	/* Mark dead (done, status 0): invisible to idem_find, reclaimed by
	 * the FIFO sweep; unlinking here would cost a FIFO walk per call. */
	en->done = 1;
	en->status = 0;
	en->expires_wall_ms = 0;
	(void)t;
}

void
idem_expire(struct idem *t, int64_t now_wall_ms)
{
	/* In flight entries at the head stop the sweep: they are rare and
	 * short-lived, and the next turn gets past them. */
	while (t->fhead && t->fhead->done &&
	       (t->fhead->expires_wall_ms <= now_wall_ms || t->count > t->capacity ||
		t->bytes > t->max_bytes)) {
		struct idem_entry *en = t->fhead;

		if (en->response)
			t->bytes -= strlen(en->response);
		t->fhead = en->fnext;
		if (t->fhead == NULL)
			t->ftail = NULL;
		unlink_hash(t, en);
		t->count--;
		entry_free(en);
	}
}

void
idem_set_max_bytes(struct idem *t, size_t max_bytes)
{
	t->max_bytes = max_bytes;
}

int
idem_count(const struct idem *t)
{
	return t->count;
}
