#pragma once
/*
 * jsonutil: the small cJSON helpers every API renderer needs, so that a
 * time, an absent string or a number that is not there reads the same in
 * every answer: RFC 3339 UTC with milliseconds, or null. Pure; any thread.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "util.h"

/* An RFC 3339 string for wall_ms, or null when wall_ms <= 0 (new item). */
cJSON *json_time(int64_t wall_ms);
/* Add name: json_time(wall_ms) to o. */
void json_add_time(cJSON *o, const char *name, int64_t wall_ms);
/* Add name: s, or null when s is NULL. */
void json_add_string(cJSON *o, const char *name, const char *s);
/* Add name: v, or null when v is NaN (a ratio of nothing, an unset value). */
void json_add_number(cJSON *o, const char *name, double v);
/*
 * Compact JSON text of item (malloc'ed), as cJSON_PrintUnformatted() but
 * about three times cheaper on the call path: integers are written
 * digit by digit, other numbers with the shortest of %.15g / %.17g that
 * reads back equal (checked with strtod, where cJSON uses sprintf and
 * sscanf for every number). Non-finite numbers are null, as in cJSON.
 * NULL when item is NULL or allocation fails.
 */
char *json_print(const cJSON *item);
/*
 * The same writers, appending to b (for bodies built without a cJSON
 * tree): a string (NULL as ""), a number, any item. 0 or -E2BIG at b's
 * bound (-1 for an item of unknown type).
 */
int json_buf_string(struct buf *b, const char *s);
int json_buf_number(struct buf *b, double d);
int json_buf_item(struct buf *b, const cJSON *item);
