#pragma once
/*
 * config_int: the private header of the config module, shared by config.c
 * (section loaders, load, free, lookups), config_walk.c (the table-driven
 * engine: error context, did-you-mean help, the walker, the --help
 * reference), config_route.c (the sections of a route that stand alone) and
 * config_table.c (the key table). Runs on the main thread.
 */
#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "config_table.h"
#include "util.h"

/* The errors of one load: every one is reported, the walk never stops. */
struct ctx {
	struct buf errs;
	int nerr;
};

/* config_walk.c */

/* Add one error line, or "path: message" ("(top level)" for ""). */
void ctx_line(struct ctx *x, const char *line);
void ctx_err(struct ctx *x, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The error lines, one per line, handed over (caller frees). */
char *ctx_cause(struct ctx *x);

/*
 * Text for messages, written into dst (n bytes) and returned: s quoted,
 * escaped and shortened; v ("3" or "3.0" for whole values as integer says,
 * else %.15g); a short description of a JSON value for "(got …)".
 */
const char *quote(char *dst, size_t n, const char *s);
const char *num_str(char *dst, size_t n, double v, int integer);
const char *json_describe(char *dst, size_t n, const cJSON *v);
/* The candidate nearest to s when it is near enough to be a typo, else NULL. */
const char *nearest(const char *s, const char *const *cands, size_t n);

/* Member name of obj (NULL when absent or obj is not an object). */
const cJSON *obj_get(const cJSON *obj, const char *name);
/* path + "." + name and path + "[i]", new strings (caller frees). */
char *path_join(const char *path, const char *name);
char *path_index(const char *path, int i);

/* The value of row k in obj, or k's default parsed into *tmp (caller deletes). */
const cJSON *item_or_default(const cJSON *obj, const struct config_key *k, cJSON **tmp);
/* The row of path; aborts when the table lacks it. */
const struct config_key *key_must(const char *path);
/*
 * Check it against row k and store it at base + k->off. 0, or an error
 * reported and -EINVAL / -ERANGE with the field untouched.
 */
int key_store(struct ctx *x, const struct config_key *k, const cJSON *it, const char *path,
	      void *base);
/*
 * Apply every row that is a direct child of pat to obj (NULL: the object is
 * absent, so only defaults apply and nothing is required).
 */
void walk_object(struct ctx *x, const cJSON *obj, const char *pat, const char *path, void *base);
/*
 * Walk each element of the array at path (rows of pattern pat + "[]") into
 * a new array of elem_size structs (*out, caller frees). Returns the
 * element count (0 when absent or not an array: error reported).
 */
int array_walk(struct ctx *x, const cJSON *arr, const char *pat, const char *path, size_t elem_size,
	       void **out);

/*
 * config_route.c: each reads one section of route (routes[i]'s object at
 * path, NULL when not an object) into r, after the walker has stored the
 * section's scalar keys, and reports into x.
 */
void timeout_check(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r);
void retry_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r);
void output_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r);
void rules_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r);
void preset_load(struct ctx *x, const cJSON *route, const char *path, struct route_cfg *r);
/* config_route.c: free what a route owns (not r itself). */
void route_free(struct route_cfg *r);
