/*
 * cli_diagnose: `fusebox diagnose [ROUTE] [--since 15m] [--json]` — why a
 * route is degraded, from GET /v1/diagnose: per route the availability,
 * the episode, the causes ranked by share (each with the SQL that proves
 * it), what differs between failing and succeeding attempts, what changed
 * before the episode and the suggested actions (never applied). Main
 * thread.
 */
#include "cli_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"

#define DIAGNOSE_TIMEOUT_MS 15000

const char *const cli_diagnose_takes[] = {"--since", NULL};

static const char *
jstr(const cJSON *o, const char *key, const char *def)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(x) ? x->valuestring : def;
}

static int
jint(const cJSON *o, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(x) ? x->valueint : 0;
}

static void
print_pct(const char *label, const cJSON *o, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsNumber(x))
		printf("%s %.1f %%", label, x->valuedouble * 100.0);
	else
		printf("%s -", label);
}

static void
print_route(const cJSON *r)
{
	const cJSON *x, *arr;
	const char *start = jstr(r, "episode_start", NULL);

	printf("%s: %d of %d calls degraded; ", jstr(r, "route", "?"), jint(r, "degraded_calls"),
	       jint(r, "calls"));
	print_pct("service", r, "service_availability");
	print_pct(", smart", r, "smart_availability");
	printf("\n  episode: %s\n", start != NULL ? start : "none (healthy now)");
	arr = cJSON_GetObjectItemCaseSensitive(r, "causes");
	if (cJSON_GetArraySize(arr) > 0)
		printf("  causes:\n");
	cJSON_ArrayForEach(x, arr)
	{
		printf("    %s\n", jstr(x, "text", ""));
		printf("      query: %s\n", jstr(x, "query", ""));
	}
	arr = cJSON_GetObjectItemCaseSensitive(r, "contrasts");
	if (cJSON_GetArraySize(arr) > 0)
		printf("  failing vs succeeding attempts:\n");
	cJSON_ArrayForEach(x, arr)
	{
		printf("    %s: %s\n", jstr(x, "factor", "?"), jstr(x, "text", ""));
	}
	arr = cJSON_GetObjectItemCaseSensitive(r, "changes");
	if (cJSON_GetArraySize(arr) > 0)
		printf("  changes before the episode:\n");
	cJSON_ArrayForEach(x, arr)
	{
		const char *actor = jstr(x, "actor", NULL);

		printf("    %s %s %s%s%s: %s\n", jstr(x, "at", "-"), jstr(x, "kind", "?"),
		       jstr(x, "subject", "-"), actor != NULL ? " by " : "",
		       actor != NULL ? actor : "", jstr(x, "detail", ""));
	}
	arr = cJSON_GetObjectItemCaseSensitive(r, "suggestions");
	if (cJSON_GetArraySize(arr) > 0)
		printf("  suggestions (not applied):\n");
	cJSON_ArrayForEach(x, arr)
	{
		const char *action = jstr(x, "action", NULL);

		printf("    %s\n", jstr(x, "text", ""));
		if (action != NULL)
			printf("      $ %s\n", action);
	}
}

int
cli_verb_diagnose(struct client *c, int json, int argc, char **argv, const struct state_v *s)
{
	struct client_resp resp;
	struct args a;
	char path[512];
	char *er = NULL, *es = NULL;
	const cJSON *routes, *r, *win;
	cJSON *o = NULL;
	int rc, n = 0;

	if ((rc = cli_args_parse(argc, argv, cli_diagnose_takes, NULL, &a)) != 0)
		return rc;
	if (a.npos > 1)
		return cli_usage_error("diagnose takes at most one route");
	es = client_escape(a.opt[0] != NULL ? a.opt[0] : "15m");
	if (a.npos == 1) {
		er = client_escape(a.pos[0]);
		snprintf(path, sizeof path, "/v1/diagnose?route=%s&since=%s", er, es);
	} else {
		snprintf(path, sizeof path, "/v1/diagnose?since=%s", es);
	}
	free(er);
	free(es);
	rc = cli_request(c, "GET", path, NULL, DIAGNOSE_TIMEOUT_MS, &resp);
	if (rc != 0)
		return rc;
	if (json) {
		cli_print_json(&resp);
		goto out;
	}
	o = cJSON_ParseWithLength(resp.body, resp.len);
	routes = cJSON_GetObjectItemCaseSensitive(o, "routes");
	win = cJSON_GetObjectItemCaseSensitive(o, "window");
	if (!cJSON_IsArray(routes)) {
		fprintf(stderr, "fusebox: GET %s: not a diagnosis\n", path);
		rc = CLI_FAILED;
		goto out;
	}
	cJSON_ArrayForEach(r, routes)
	{
		if (n++)
			fputc('\n', stdout);
		print_route(r);
	}
	if (n == 0)
		printf("nothing degraded from %s to %s\n", jstr(win, "from", "?"),
		       jstr(win, "to", "?"));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(win, "truncated")))
		printf("(the window held more rows than the daemon reads: figures are partial)\n");
out:
	cJSON_Delete(o);
	client_resp_free(&resp);
	return rc;
}
