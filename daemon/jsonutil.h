#pragma once
/*
 * jsonutil: the small cJSON helpers every API renderer needs, so that a
 * time or an absent string reads the same in every answer: RFC 3339 UTC
 * with milliseconds, or null. Pure; any thread.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

/* An RFC 3339 string for wall_ms, or null when wall_ms <= 0 (new item). */
cJSON *json_time(int64_t wall_ms);
/* Add name: json_time(wall_ms) to o. */
void json_add_time(cJSON *o, const char *name, int64_t wall_ms);
/* Add name: s, or null when s is NULL. */
void json_add_string(cJSON *o, const char *name, const char *s);
