/*
 * model_json: the getters the console's parsers share (model.c,
 * model_hist.c): fields of a control-API answer read into fixed buffers
 * cut at a UTF-8 boundary, numbers, times, bounded heap copies. Pure.
 */
#include "model_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Copy at most dstsz-1 bytes of src, never splitting a UTF-8 sequence. */
void
model_json_copy(char *dst, size_t dstsz, const char *src)
{
	size_t n = strlen(src);

	if (n >= dstsz) {
		n = dstsz - 1;
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
}

char *
model_json_dup_big(const char *src)
{
	size_t n = strlen(src);

	if (n > MODEL_BIG_MAX) {
		n = MODEL_BIG_MAX;
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	return xstrndup(src, n);
}

const cJSON *
model_json_get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

void
model_json_str(const cJSON *o, const char *key, char *dst, size_t dstsz)
{
	const cJSON *v = model_json_get(o, key);

	if (cJSON_IsString(v) && v->valuestring != NULL)
		model_json_copy(dst, dstsz, v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(dst, dstsz, "%.0f", v->valuedouble);
	else
		dst[0] = '\0';
}

double
model_json_num(const cJSON *o, const char *key)
{
	const cJSON *v = model_json_get(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int
model_json_int(const cJSON *o, const char *key)
{
	const cJSON *v = model_json_get(o, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < -2147483647.0 || v->valuedouble > 2147483647.0)
		return -1;
	return (int)v->valuedouble;
}

int64_t
model_json_i64(const cJSON *o, const char *key, int64_t def)
{
	const cJSON *v = model_json_get(o, key);
	int64_t x;

	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	if (cJSON_IsString(v) && parse_int64(v->valuestring, &x) == 0)
		return x;
	return def;
}

/* An RFC3339 string (or a number of epoch ms); 0 when absent or null. */
int64_t
model_json_time(const cJSON *o, const char *key)
{
	const cJSON *v = model_json_get(o, key);
	int64_t ms;

	if (cJSON_IsString(v) && time_parse_rfc3339(v->valuestring, &ms) == 0)
		return ms;
	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	return 0;
}

/* A string as is; anything else (object, array, number) printed compactly; NULL for null. */
char *
model_json_text(const cJSON *o, const char *key)
{
	const cJSON *v = model_json_get(o, key);
	char *p, *r;

	if (v == NULL || cJSON_IsNull(v))
		return NULL;
	if (cJSON_IsString(v))
		return model_json_dup_big(v->valuestring);
	p = cJSON_PrintUnformatted(v);
	if (p == NULL)
		abort();
	r = model_json_dup_big(p);
	cJSON_free(p);
	return r;
}

/* Compact JSON text of a value, NULL when absent or null. */
char *
model_json_print(const cJSON *o, const char *key)
{
	const cJSON *v = model_json_get(o, key);
	char *p, *r;

	if (v == NULL || cJSON_IsNull(v))
		return NULL;
	p = cJSON_PrintUnformatted(v);
	if (p == NULL)
		abort();
	r = model_json_dup_big(p);
	cJSON_free(p);
	return r;
}

int
model_json_root(const char *json, size_t len, cJSON **root, char **cause)
{
	*root = cJSON_ParseWithLength(json, len);
	if (*root == NULL || !cJSON_IsObject(*root)) {
		cJSON_Delete(*root);
		*root = NULL;
		if (cause)
			*cause = xstrdup("the answer is not a JSON object");
		return MODEL_E_PARSE;
	}
	return 0;
}

int
model_json_array(const cJSON *root, const char *key, const cJSON **arr, char **cause)
{
	*arr = model_json_get(root, key);
	if (!cJSON_IsArray(*arr)) {
		if (cause)
			*cause = xasprintf("the answer has no \"%s\" array", key);
		return MODEL_E_PARSE;
	}
	return 0;
}
