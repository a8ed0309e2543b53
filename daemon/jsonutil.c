/*
 * jsonutil: times and optional strings in API answers.
 */
#include "jsonutil.h"

#include "util.h"

cJSON *
json_time(int64_t wall_ms)
{
	char ts[40];

	if (wall_ms <= 0)
		return cJSON_CreateNull();
	time_format_rfc3339(wall_ms, ts, sizeof ts);
	return cJSON_CreateString(ts);
}

void
json_add_time(cJSON *o, const char *name, int64_t wall_ms)
{
	cJSON_AddItemToObject(o, name, json_time(wall_ms));
}

void
json_add_string(cJSON *o, const char *name, const char *s)
{
	if (s != NULL)
		cJSON_AddStringToObject(o, name, s);
	else
		cJSON_AddNullToObject(o, name);
}
