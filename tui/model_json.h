#pragma once
/*
 * model_json: the getters the console's parsers share. Pure; any thread.
 */
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define MODEL_BIG_MAX (64 * 1024) /* review input / output excerpts */

enum model_e {
	MODEL_E_PARSE = 1, /* not JSON, or not the expected shape; *cause says what */
};

/* Copy at most dstsz-1 bytes of src, never splitting a UTF-8 sequence. */
void model_json_copy(char *dst, size_t dstsz, const char *src);
/* A heap copy of src, at most MODEL_BIG_MAX bytes (cut at a UTF-8 boundary). */
char *model_json_dup_big(const char *src);
const cJSON *model_json_get(const cJSON *o, const char *key);
/* The string at key into dst (cut like model_json_copy); "" when absent or not a string. */
void model_json_str(const cJSON *o, const char *key, char *dst, size_t dstsz);
double model_json_num(const cJSON *o, const char *key);
int model_json_int(const cJSON *o, const char *key);
int64_t model_json_i64(const cJSON *o, const char *key, int64_t def);
/* An RFC3339 string (or a number of epoch ms); 0 when absent or null. */
int64_t model_json_time(const cJSON *o, const char *key);
/* A string as is; anything else printed compactly; NULL for null (bounded copy). */
char *model_json_text(const cJSON *o, const char *key);
/* Compact JSON text of a value, NULL when absent or null. */
char *model_json_print(const cJSON *o, const char *key);
/* json parsed into *root, a JSON object; MODEL_E_PARSE with *cause (may be NULL). */
int model_json_root(const char *json, size_t len, cJSON **root, char **cause);
/* root's array at key into *arr; MODEL_E_PARSE with *cause when it has none. */
int model_json_array(const cJSON *root, const char *key, const cJSON **arr, char **cause);
