/*
 * diagnose: the ranked diagnosis of a route (API.md "Diagnosis"), from the
 * rows the store logged, as GET /v1/diagnose answers it: one route's
 * answer put together from the files of diagnose_int.h, and the "since"
 * argument.
 */
#include "diagnose.h"
#include "diagnose_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonutil.h"
#include "util.h"
#include "wire.h"

/* ---- the answer ---------------------------------------------------------- */

static cJSON *
route_json(const struct diag_input *in, const char *route)
{
	const struct diag_rows *w = &in->cur;
	struct route_ctx rc;
	cJSON *x = cJSON_CreateObject(), *arr;
	int i, total = 0, svc = 0, smart = 0, ncalls;
	int64_t tok_fail, tok_ok;

	diag_route_ctx_init(&rc, in, route);
	ncalls = rc.ncalls;
	for (i = 0; i < rc.ncalls; i++) {
		const struct diag_call *c = &w->calls[rc.calls[i]];

		if (c->http_status >= 400 && c->http_status <= 499)
			continue;
		total++;
		svc += (c->http_status == 200 || c->http_status == 202) &&
		       (c->budget_ms < 0 || c->elapsed_ms < 0 || c->elapsed_ms <= c->budget_ms);
		smart += c->http_status == 200 && (diag_str_eq(c->source, WIRE_SOURCE_LLM) ||
						   diag_str_eq(c->source, WIRE_SOURCE_BACKUP));
	}
	for (i = 0; i < in->nhealthy; i++) {
		const struct diag_healthy *h = &in->healthy[i];

		if (!diag_str_eq(h->route, route))
			continue;
		ncalls += h->calls;
		total += h->calls - h->client_errors;
		svc += h->service_good;
		smart += h->smart_good;
	}
	diag_causes_collect(&rc);
	diag_episode_find(&rc);
	cJSON_AddStringToObject(x, "route", route);
	json_add_number(x, "service_availability", total ? (double)svc / total : NAN);
	json_add_number(x, "smart_availability", total ? (double)smart / total : NAN);
	cJSON_AddNumberToObject(x, "degraded_calls", rc.degraded);
	cJSON_AddNumberToObject(x, "calls", ncalls);
	json_add_time(x, "episode_start", rc.episode >= 0 ? rc.episode : 0);
	arr = cJSON_AddArrayToObject(x, "causes");
	for (i = 0; i < rc.ncauses; i++)
		cJSON_AddItemToArray(arr, diag_cause_json(&rc, &rc.causes[i]));
	cJSON_AddItemToObject(x, "contrasts", diag_contrasts_json(&rc, &tok_fail, &tok_ok));
	cJSON_AddItemToObject(x, "changes", diag_changes_json(&rc));
	cJSON_AddItemToObject(x, "suggestions", diag_suggestions_json(&rc, tok_fail, tok_ok));
	diag_route_ctx_free(&rc);
	return x;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

cJSON *
diagnose_run(const struct diag_input *in)
{
	const struct diag_rows *w = &in->cur;
	cJSON *o = cJSON_CreateObject(), *win, *routes;
	const char **names = NULL;
	int i, n = 0;

	win = cJSON_AddObjectToObject(o, "window");
	json_add_time(win, "from", w->from);
	json_add_time(win, "to", w->to);
	routes = cJSON_AddArrayToObject(o, "routes");
	if (in->route != NULL) {
		cJSON_AddItemToArray(routes, route_json(in, in->route));
		return o;
	}
	names = xcalloc((size_t)w->ncalls + 1, sizeof *names);
	for (i = 0; i < w->ncalls; i++)
		if (w->calls[i].degraded && w->calls[i].route != NULL)
			names[n++] = w->calls[i].route;
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	for (i = 0; i < n; i++)
		if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
			cJSON_AddItemToArray(routes, route_json(in, names[i]));
	free(names);
	return o;
}

int
diagnose_since_parse(const char *s, int64_t now_ms, int64_t *from_ms)
{
	int64_t v, unit;
	size_t n;
	char num[24];

	if (s == NULL || (n = strlen(s)) < 2)
		return -EINVAL;
	switch (s[n - 1]) {
	case 's':
		unit = 1000;
		break;
	case 'm':
		unit = MINUTE_MS;
		break;
	case 'h':
		unit = 60 * MINUTE_MS;
		break;
	case 'd':
		unit = 1440 * MINUTE_MS;
		break;
	default:
		unit = 0;
	}
	if (unit > 0 && n - 1 < sizeof num) {
		memcpy(num, s, n - 1);
		num[n - 1] = '\0';
		if (parse_int64(num, &v) == 0) {
			if (v <= 0 || v > 400LL * 24 * 3600 * 1000 / unit)
				return -EINVAL;
			*from_ms = now_ms - v * unit;
			return 0;
		}
	}
	if (time_parse_rfc3339(s, &v) != 0 || v > now_ms)
		return -EINVAL;
	*from_ms = v;
	return 0;
}
