/*
 * The control API: /_mock/stats (per backend: requests received, in
 * flight, completed, aborted, tail_delayed, knee_delayed, ratelimited, the
 * open rate-limit window, the last request, arrival times), /_mock/reset
 * and /_mock/backends/<name>. MHD thread.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#include "mockllm.h"

/* Back to defaults and zero counters; in-flight gauges stay. */
static void
mock_reset_all(void)
{
	struct backend *be;

	pthread_mutex_lock(&mock.lock);
	for (be = mock.backends; be != NULL; be = be->next) {
		behave_free(&be->base);
		script_free(be->script, be->nscript);
		be->script = NULL;
		be->nscript = 0;
		be->script_pos = 0;
		be->requests = 0;
		be->completed = 0;
		be->aborted = 0;
		be->tail_delayed = 0;
		be->knee_delayed = 0;
		be->ratelimited = 0;
		backend_window_clear(be);
		be->max_inflight = be->inflight;
		cJSON_Delete(be->last_request);
		be->last_request = NULL;
		be->arrivals_n = 0;
		be->arrivals_next = 0;
	}
	pthread_mutex_unlock(&mock.lock);
}

static cJSON *
mock_stats_json(void)
{
	cJSON *root, *bes, *o, *arr, *w;
	struct backend *be;
	int64_t now;
	size_t i, k;

	root = cJSON_CreateObject();
	bes = cJSON_AddObjectToObject(root, "backends");
	pthread_mutex_lock(&mock.lock);
	now = mono_ms();
	cJSON_AddNumberToObject(root, "uptime_ms", (double)(now - mock.start_ms));
	for (be = mock.backends; be != NULL; be = be->next) {
		o = cJSON_AddObjectToObject(bes, be->name);
		cJSON_AddNumberToObject(o, "requests", (double)be->requests);
		cJSON_AddNumberToObject(o, "inflight", (double)be->inflight);
		cJSON_AddNumberToObject(o, "max_inflight", (double)be->max_inflight);
		cJSON_AddNumberToObject(o, "completed", (double)be->completed);
		cJSON_AddNumberToObject(o, "aborted", (double)be->aborted);
		cJSON_AddNumberToObject(o, "script_left", (double)(be->nscript - be->script_pos));
		cJSON_AddNumberToObject(o, "tail_delayed", (double)be->tail_delayed);
		cJSON_AddNumberToObject(o, "knee_delayed", (double)be->knee_delayed);
		cJSON_AddNumberToObject(o, "ratelimited", (double)be->ratelimited);
		if (be->rl_end_ms > now) {
			w = cJSON_AddObjectToObject(o, "ratelimit_window");
			cJSON_AddNumberToObject(w, "requests", (double)be->rl_requests);
			cJSON_AddNumberToObject(w, "tokens", (double)be->rl_tokens);
			cJSON_AddNumberToObject(w, "reset_in_ms", (double)(be->rl_end_ms - now));
		} else {
			cJSON_AddNullToObject(o, "ratelimit_window");
		}
		if (be->last_request != NULL)
			cJSON_AddItemToObject(o, "last_request",
					      cJSON_Duplicate(be->last_request, 1));
		else
			cJSON_AddNullToObject(o, "last_request");
		arr = cJSON_AddArrayToObject(o, "arrivals_ms");
		k = (be->arrivals_next + ARRIVALS_MAX - be->arrivals_n) % ARRIVALS_MAX;
		for (i = 0; i < be->arrivals_n; i++) {
			cJSON_AddItemToArray(
				arr,
				cJSON_CreateNumber((double)be->arrivals[(k + i) % ARRIVALS_MAX]));
		}
	}
	pthread_mutex_unlock(&mock.lock);
	return root;
}

enum MHD_Result
control_handle(struct req *r, const char *url, const char *method)
{
	static const char pfx[] = "/_mock/backends/";
	const char *name;
	cJSON *j = NULL, *ok;
	char *cause = NULL;
	enum MHD_Result ret;
	int is_get, is_set;

	is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
	is_set = strcmp(method, MHD_HTTP_METHOD_PUT) == 0 ||
		 strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (r->too_big) {
		ret = respond_error(r, 413, "request body over 4 MiB");
		goto out;
	}
	if (strcmp(url, "/_mock/stats") == 0) {
		if (!is_get)
			ret = respond_error(r, 405, "use GET");
		else
			ret = respond_json(r, 200, mock_stats_json());
		goto out;
	}
	if (strcmp(url, "/_mock/reset") == 0) {
		if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
			ret = respond_error(r, 405, "use POST");
			goto out;
		}
		mock_reset_all();
		log_line("reset");
		ok = cJSON_CreateObject();
		cJSON_AddTrueToObject(ok, "ok");
		ret = respond_json(r, 200, ok);
		goto out;
	}
	if (strncmp(url, pfx, sizeof pfx - 1) == 0) {
		name = url + sizeof pfx - 1;
		if (!backend_name_valid(name, strlen(name))) {
			ret = respond_error(r, 400, "bad backend name");
			goto out;
		}
		if (!is_set) {
			ret = respond_error(r, 405, "use PUT");
			goto out;
		}
		if (r->body != NULL)
			j = cJSON_ParseWithLength(r->body, r->body_len);
		if (j == NULL) {
			ret = respond_error(r, 400, "body is not valid JSON");
			goto out;
		}
		if (backend_set(name, j, &cause) != 0) {
			ret = respond_error(r, 400, cause);
			goto out;
		}
		log_line("backend %s: %.*s", name, (int)(r->body_len > 200 ? 200 : r->body_len),
			 r->body);
		ok = cJSON_CreateObject();
		cJSON_AddTrueToObject(ok, "ok");
		ret = respond_json(r, 200, ok);
		goto out;
	}
	ret = respond_error(r, 404, "unknown control endpoint");
out:
	cJSON_Delete(j);
	free(cause);
	return ret;
}
