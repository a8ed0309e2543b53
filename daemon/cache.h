#pragma once
/*
 * cache: the last good model result per route and normalised input
 * (trimmed, whitespace collapsed, ASCII lower-cased), with a TTL. Keyed by
 * route name, so a reload that reorders routes keeps every entry. An
 * in-memory hash table in front of the SQLite `cache` table: puts are
 * written through asynchronously, and cache_load() refills memory at start.
 * Engine thread only.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "store.h"

enum cache_e { CACHE_E_MISS = 1 };

struct cache;

struct cache *cache_new(int capacity);
void cache_free(struct cache *c);
/* Normalise an input into a key (new string). */
char *cache_key(const char *input);
/* Look up; *result is borrowed until the next put. 0 or CACHE_E_MISS (absent or older than ttl_s).
 */
int cache_get(struct cache *c, const char *route, const char *input, int ttl_s, int64_t now_wall_ms,
	      const cJSON **result, int *has_conf, double *conf);
/* Store (copying result); written through to the DB when st is not NULL. */
void cache_put(struct cache *c, const char *route, const char *input, const cJSON *result,
	       int has_conf, double conf, int64_t now_wall_ms, struct store *st);
/* Load rows stored at or after since_wall_ms from the DB. */
int cache_load(struct cache *c, struct store_reader *rd, int64_t since_wall_ms);
int cache_count(const struct cache *c);
/*
 * Drop the entries stored before before_wall_ms (no TTL can serve them any
 * more); returns how many. Without it an entry nobody asks for again (an
 * input with an order number in it) stays until the capacity pushes it
 * out: memory would grow for hours under a steady mix of new inputs.
 */
int cache_expire(struct cache *c, int64_t before_wall_ms);
