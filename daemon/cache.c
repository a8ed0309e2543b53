/*
 * cache: chained hash table with insertion-order eviction.
 */
#include "cache.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define CACHE_BUCKETS 16384

struct centry {
	char *route;
	char *key;
	cJSON *result;
	int has_conf;
	double conf;
	int64_t stored_at;
	struct centry *hnext;
	struct centry *fnext, *fprev;
};

struct cache {
	struct centry *buckets[CACHE_BUCKETS];
	struct centry *fhead, *ftail;
	int count;
	int capacity;
};

static uint32_t
hash(const char *route, const char *key)
{
	uint32_t h = str_hash(STR_HASH_SEED, route);

	h = (h ^ 0x1f) * 16777619u; /* a separator: ("ab","c") != ("a","bc") */
	return str_hash(h, key);
}

char *
cache_key(const char *input)
{
	size_t n = strlen(input), i, o = 0;
	char *k = xmalloc(n + 1);
	int space = 0;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)input[i];

		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' ||
		    ch == '\v') {
			space = o > 0;
			continue;
		}
		if (space) {
			k[o++] = ' ';
			space = 0;
		}
		k[o++] = (char)(ch < 0x80 ? tolower(ch) : ch);
	}
	k[o] = '\0';
	return k;
}

struct cache *
cache_new(int capacity)
{
	struct cache *c = xcalloc(1, sizeof *c);

	c->capacity = capacity;
	return c;
}

static void
centry_free(struct centry *e)
{
	free(e->route);
	free(e->key);
	cJSON_Delete(e->result);
	free(e);
}

void
cache_free(struct cache *c)
{
	struct centry *e, *n;

	if (c == NULL)
		return;
	for (e = c->fhead; e; e = n) {
		n = e->fnext;
		centry_free(e);
	}
	free(c);
}

static struct centry *
find(struct cache *c, const char *route, const char *key)
{
	struct centry *e;

	for (e = c->buckets[hash(route, key) % CACHE_BUCKETS]; e; e = e->hnext)
		if (strcmp(e->route, route) == 0 && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

static void
evict_head(struct cache *c)
{
	struct centry *e = c->fhead, **pp;

	c->fhead = e->fnext;
	if (c->fhead)
		c->fhead->fprev = NULL;
	else
		c->ftail = NULL;
	for (pp = &c->buckets[hash(e->route, e->key) % CACHE_BUCKETS]; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	c->count--;
	centry_free(e);
}

static void
put_key(struct cache *c, const char *route, char *key, const cJSON *result, int has_conf,
	double conf, int64_t now)
{
	struct centry *e = find(c, route, key);
	uint32_t b;

	if (e) {
		free(key);
		cJSON_Delete(e->result);
		e->result = cJSON_Duplicate(result, 1);
		e->has_conf = has_conf;
		e->conf = conf;
		e->stored_at = now;
		/* Now the newest: move to the FIFO tail so eviction stays oldest-first. */
		if (e != c->ftail) {
			if (e->fprev)
				e->fprev->fnext = e->fnext;
			else
				c->fhead = e->fnext;
			e->fnext->fprev = e->fprev;
			e->fprev = c->ftail;
			e->fnext = NULL;
			c->ftail->fnext = e;
			c->ftail = e;
		}
		return;
	}
	while (c->count >= c->capacity && c->fhead)
		evict_head(c);
	e = xcalloc(1, sizeof *e);
	e->route = xstrdup(route);
	e->key = key;
	e->result = cJSON_Duplicate(result, 1);
	e->has_conf = has_conf;
	e->conf = conf;
	e->stored_at = now;
	b = hash(route, key) % CACHE_BUCKETS;
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	e->fprev = c->ftail;
	if (c->ftail)
		c->ftail->fnext = e;
	else
		c->fhead = e;
	c->ftail = e;
	c->count++;
}

int
cache_expire(struct cache *c, int64_t before_wall_ms)
{
	int n = 0;

	/* The FIFO is oldest-first (a re-put moves an entry to the tail). */
	while (c->fhead && c->fhead->stored_at < before_wall_ms) {
		evict_head(c);
		n++;
	}
	return n;
}

int
cache_get(struct cache *c, const char *route, const char *input, int ttl_s, int64_t now_wall_ms,
	  const cJSON **result, int *has_conf, double *conf)
{
	char *key = cache_key(input);
	struct centry *e = find(c, route, key);

	free(key);
	if (e == NULL || now_wall_ms - e->stored_at > (int64_t)ttl_s * 1000)
		return CACHE_E_MISS;
	*result = e->result;
	*has_conf = e->has_conf;
	*conf = e->conf;
	return 0;
}

void
cache_put(struct cache *c, const char *route, const char *input, const cJSON *result, int has_conf,
	  double conf, int64_t now_wall_ms, struct store *st)
{
	char *key = cache_key(input);

	if (st) {
		char *res = cJSON_PrintUnformatted(result);
		struct store_val v[] = {SVT(route), SVT(key), SVT(res), has_conf ? SVR(conf) : SVN,
					SVI(now_wall_ms)};

		store_put(st, STORE_CACHE_UPSERT, v, (int)ARRAY_SIZE(v));
		free(res);
	}
	put_key(c, route, key, result, has_conf, conf, now_wall_ms);
}

struct load_ctx {
	struct cache *c;
};

static int
load_row(void *arg, sqlite3_stmt *row)
{
	struct load_ctx *lc = arg;
	struct cache *c = lc->c;
	const char *route = (const char *)sqlite3_column_text(row, 0);
	const char *key = (const char *)sqlite3_column_text(row, 1);
	const char *res = (const char *)sqlite3_column_text(row, 2);
	cJSON *result;

	if (!route || !key || !res)
		return 0;
	result = cJSON_Parse(res);
	if (result)
		put_key(c, route, xstrdup(key), result, sqlite3_column_type(row, 3) != SQLITE_NULL,
			sqlite3_column_double(row, 3), sqlite3_column_int64(row, 4));
	cJSON_Delete(result);
	return 0;
}

int
cache_load(struct cache *c, struct store_reader *rd, int64_t since_wall_ms)
{
	struct load_ctx lc = {c};
	struct store_val v[] = {SVI(since_wall_ms)};
	char *cause = NULL;
	int r;

	r = store_reader_run(rd, STORE_Q_CACHE_LOAD, v, 1, load_row, &lc, &cause);
	free(cause);
	return r;
}

int
cache_count(const struct cache *c)
{
	return c->count;
}
