/*
 * store_rows: the blocks queued rows live in. Producers make them
 * (store_put, store_commit_later) and the writer frees them.
 *
 * Row blocks. Rows are made by producers (the engine) and freed by the
 * writer, a pattern glibc's allocator serves badly: the engine's thread
 * cache never gets the blocks back, so every row would go the slow way
 * through the arena (and rows of 1 KiB and more make malloc consolidate
 * its fast bins first), while the writer's free()s take the engine's
 * arena lock. The writer hands finished rows back instead, to per-size
 * spare lists (blocks of 512 B .. 8 KiB, at most 1 MiB per size);
 * producers take from them first. Larger rows use malloc and free. Spare
 * blocks are poisoned for AddressSanitizer while they wait, so a use after
 * the writer is done with a row is still caught.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define STORE_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define STORE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define STORE_POISON(p, n)   ((void)(p), (void)(n))
#define STORE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Spare row blocks (see "Row blocks" above): sizes 512 << class. */
#define STORE_SPARE_MIN	  512
#define STORE_SPARE_BYTES (1024 * 1024) /* kept per class, at most */
#define STORE_ROW_MAX	  (16 * 1024 * 1024)

struct store_spare {
	struct store_spare *next;
};

/* The size of a spare block of class c, and how many of them are kept. */
static size_t
store_spare_block(int c)
{
	return (size_t)STORE_SPARE_MIN << c;
}

static int
store_spare_max(int c)
{
	return (int)(STORE_SPARE_BYTES / store_spare_block(c));
}

/* The spare class of a row of size bytes, -1 when too large for one. */
static int
store_spare_class(size_t size)
{
	int c;

	for (c = 0; c < STORE_SPARE_CLASSES; c++) {
		if (size <= store_spare_block(c))
			return c;
	}
	return -1;
}

/* A block for a row of size bytes: a spare one when there is one. */
static struct store_row *
store_row_alloc(struct store *st, size_t size)
{
	struct store_spare *sp = NULL;
	struct store_row *row;
	size_t block;
	int c;

	c = store_spare_class(size);
	if (c < 0) {
		row = store_alloc(size);
		row->spare_class = -1;
		return row;
	}
	block = store_spare_block(c);
	pthread_mutex_lock(&st->spare_lock);
	sp = st->spare[c];
	if (sp != NULL) {
		st->spare[c] = sp->next;
		st->nspare[c]--;
	}
	pthread_mutex_unlock(&st->spare_lock);
	if (sp != NULL)
		STORE_UNPOISON(sp, block);
	else
		sp = store_alloc(block);
	row = (struct store_row *)(void *)sp;
	row->spare_class = c;
	return row;
}

/* Free a chain of spare blocks of class c. */
static void
store_spare_chain_free(struct store_spare *sp, int c)
{
	struct store_spare *next;

	for (; sp != NULL; sp = next) {
		next = sp->next;
		STORE_UNPOISON(sp, store_spare_block(c));
		free(sp);
	}
}

/*
 * Give n rows back: to the spare lists while they hold less than
 * STORE_SPARE_BYTES per size, else to malloc. NULL entries are skipped.
 * The writer runs in SCHED_IDLE and can lose its core at any point: the
 * lists are locked only to read their lengths and to splice a chain built
 * outside the lock, so that a producer never waits for a thousand pushes.
 */
void
store_rows_free(struct store *st, struct store_row **rows, int n)
{
	struct store_spare *head[STORE_SPARE_CLASSES] = {NULL};
	struct store_spare *tail[STORE_SPARE_CLASSES] = {NULL};
	struct store_spare *sp;
	int room[STORE_SPARE_CLASSES], k[STORE_SPARE_CLASSES] = {0};
	int i, c;

	if (n <= 0)
		return;
	pthread_mutex_lock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++)
		room[c] = store_spare_max(c) - st->nspare[c];
	pthread_mutex_unlock(&st->spare_lock);
	for (i = 0; i < n; i++) {
		if (rows[i] == NULL)
			continue;
		c = rows[i]->spare_class;
		if (c < 0 || k[c] >= room[c]) {
			free(rows[i]);
			rows[i] = NULL;
			continue;
		}
		sp = (struct store_spare *)(void *)rows[i];
		rows[i] = NULL;
		sp->next = head[c];
		STORE_POISON((char *)sp + sizeof(*sp), store_spare_block(c) - sizeof(*sp));
		head[c] = sp;
		if (tail[c] == NULL)
			tail[c] = sp;
		k[c]++;
	}
	pthread_mutex_lock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++) {
		if (k[c] == 0)
			continue;
		if (st->nspare[c] + k[c] > store_spare_max(c))
			continue; /* another thread gave blocks back meanwhile */
		tail[c]->next = st->spare[c];
		st->spare[c] = head[c];
		st->nspare[c] += k[c];
		head[c] = NULL;
	}
	pthread_mutex_unlock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++)
		store_spare_chain_free(head[c], c);
}

/* How many spare blocks wait (store_get_stats). */
uint64_t
store_spares_count(struct store *st)
{
	uint64_t n = 0;
	int c;

	pthread_mutex_lock(&st->spare_lock);
	for (c = 0; c < STORE_SPARE_CLASSES; c++)
		n += (uint64_t)st->nspare[c];
	pthread_mutex_unlock(&st->spare_lock);
	return n;
}

/* The spare blocks back to malloc (store_close). */
void
store_spares_release(struct store *st)
{
	int c;

	for (c = 0; c < STORE_SPARE_CLASSES; c++) {
		store_spare_chain_free(st->spare[c], c);
		st->spare[c] = NULL;
		st->nspare[c] = 0;
	}
}

/* A row holding a copy of vals and their strings. 0, -EINVAL or -E2BIG. */
int
store_row_make(struct store *st, enum store_stmt stmt, const struct store_val *vals, int nvals,
	       struct store_row **out)
{
	struct store_row *row;
	size_t size, len;
	char *p;
	int i, rc;

	*out = NULL;
	rc = store_args_check(st, stmt, vals, nvals);
	if (rc != 0)
		return rc;
	size = sizeof(*row) + sizeof(row->vals[0]) * (size_t)nvals;
	for (i = 0; i < nvals; i++) {
		if (vals[i].type == SV_TEXT && vals[i].s != NULL)
			size += strlen(vals[i].s) + 1;
		if (size > STORE_ROW_MAX)
			return -E2BIG;
	}
	row = store_row_alloc(st, size);
	row->stmt = stmt;
	row->nvals = nvals;
	p = (char *)&row->vals[nvals];
	for (i = 0; i < nvals; i++) {
		row->vals[i] = vals[i];
		if (vals[i].type != SV_TEXT || vals[i].s == NULL)
			continue;
		len = strlen(vals[i].s) + 1;
		memcpy(p, vals[i].s, len);
		row->vals[i].s = p;
		p += len;
	}
	*out = row;
	return 0;
}
