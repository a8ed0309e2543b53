/*
 * cli_write: the verbs that change something — level, weights, breaker,
 * review, reload — and call (see cli.h).
 */
#include "cli_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "fmt.h"
#include "util.h"
#include "wire.h"

#define CALL_TIMEOUT_MS 130000

const char *const cli_level_takes[] = {"--reason", "--ttl", NULL};
const char *const cli_breaker_takes[] = {"--reason", NULL};
const char *const cli_review_takes[] = {"--note", NULL};
const char *const cli_call_takes[] = {"--budget", NULL};
static const char *const call_flags[] = {"-v", "--verbose", NULL};

/* Print a route object as "ROUTE: L2 forced by alice until T: reason" / "ROUTE: L0 (auto)". */
static int
print_route_answer(const struct client_resp *resp)
{
	struct route_v r;
	char *cause = NULL, until[40], tg[512];

	if (model_parse_route(resp->body, resp->len, &r, &cause) != 0) {
		free(cause);
		printf("ok\n");
		return CLI_OK;
	}
	cli_targets_text(&r, tg, sizeof tg);
	if (r.forced) {
		cli_rfc3339(r.forced_until, until, sizeof until);
		printf("%s: L%d forced by %s until %s: %s\n", r.name, r.level, r.forced_actor,
		       r.forced_until > 0 ? until : "released", r.forced_reason);
	} else {
		printf("%s: L%d (auto)\n", r.name, r.level);
	}
	printf("targets: %s\n", tg);
	return CLI_OK;
}

int
cli_verb_level(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	struct client_resp resp;
	struct args a;
	cJSON *o = NULL;
	char path[512], *seg = NULL, *body = NULL;
	int64_t level, ttl_ms = 0;
	int rc, release;

	if ((rc = cli_args_parse(argc, argv, cli_level_takes, NULL, &a)) != 0)
		return rc;
	if (a.npos != 2)
		return cli_usage_error(
			"usage: level ROUTE N --reason R [--ttl S] | level ROUTE auto");
	release = strcmp(a.pos[1], "auto") == 0;
	if (!release && parse_int64(a.pos[1], &level) != 0)
		return cli_usage_error("level: N must be 0, 1, 2, 3 or auto (got \"%s\")",
				       a.pos[1]);
	if (!release && (a.opt[0] == NULL || a.opt[0][0] == '\0'))
		return cli_usage_error("level: --reason is required when forcing a level");
	if (release && (a.opt[0] != NULL || a.opt[1] != NULL))
		return cli_usage_error("level ROUTE auto takes no --reason or --ttl");
	if (a.opt[1] != NULL && (fmt_parse_duration(a.opt[1], &ttl_ms) != 0 || ttl_ms < 1000))
		return cli_usage_error(
			"level: --ttl takes seconds or a duration like 30m (got \"%s\")", a.opt[1]);
	seg = client_escape(a.pos[0]);
	snprintf(path, sizeof path, "/v1/routes/%s/level", seg);
	if (!release) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "level", (double)level);
		cJSON_AddStringToObject(o, "reason", a.opt[0]);
		if (ttl_ms > 0)
			cJSON_AddNumberToObject(o, "ttl_s", (double)(ttl_ms / 1000));
		body = cJSON_PrintUnformatted(o);
	}
	rc = cli_request(c, release ? "DELETE" : "PUT", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc == 0) {
		rc = json ? (cli_print_json(&resp), CLI_OK) : print_route_answer(&resp);
		client_resp_free(&resp);
	}
	cJSON_free(body);
	cJSON_Delete(o);
	free(seg);
	return rc;
}

int
cli_verb_weights(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	struct client_resp resp;
	struct args a;
	cJSON *o = NULL, *w;
	char path[512], name[256], *seg = NULL, *body = NULL, *eq;
	int64_t v;
	int rc, i;

	if ((rc = cli_args_parse(argc, argv, NULL, NULL, &a)) != 0)
		goto out;
	if (a.npos < 2) {
		rc = cli_usage_error("usage: weights ROUTE BACKEND=WEIGHT [BACKEND=WEIGHT ...]");
		goto out;
	}
	o = cJSON_CreateObject();
	w = cJSON_AddObjectToObject(o, "weights");
	for (i = 1; i < a.npos; i++) {
		eq = strchr(a.pos[i], '=');
		if (eq == NULL || eq == a.pos[i] || (size_t)(eq - a.pos[i]) >= sizeof name ||
		    parse_int64(eq + 1, &v) != 0) {
			rc = cli_usage_error("weights: \"%s\" is not BACKEND=WEIGHT", a.pos[i]);
			goto out;
		}
		memcpy(name, a.pos[i], (size_t)(eq - a.pos[i]));
		name[eq - a.pos[i]] = '\0';
		cJSON_AddNumberToObject(w, name, (double)v);
	}
	body = cJSON_PrintUnformatted(o);
	seg = client_escape(a.pos[0]);
	snprintf(path, sizeof path, "/v1/routes/%s/weights", seg);
	rc = cli_request(c, "PUT", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc == 0) {
		rc = json ? (cli_print_json(&resp), CLI_OK) : print_route_answer(&resp);
		client_resp_free(&resp);
	}
out:
	free(seg);
	cJSON_free(body);
	cJSON_Delete(o);
	return rc;
}

int
cli_verb_breaker(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	struct client_resp resp;
	struct args a;
	cJSON *o, *ans;
	const cJSON *st;
	const char *state;
	char path[512], *seg, *body;
	int rc;

	if ((rc = cli_args_parse(argc, argv, cli_breaker_takes, NULL, &a)) != 0)
		return rc;
	if (a.npos != 2)
		return cli_usage_error("usage: breaker BACKEND open|closed|auto [--reason R]");
	if (strcmp(a.pos[1], "open") == 0)
		state = WIRE_BREAKER_FORCED_OPEN;
	else if (strcmp(a.pos[1], "closed") == 0)
		state = WIRE_BREAKER_FORCED_CLOSED;
	else if (strcmp(a.pos[1], "auto") == 0)
		state = WIRE_BREAKER_AUTO;
	else
		return cli_usage_error("breaker: open, closed or auto (got \"%s\")", a.pos[1]);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "state", state);
	if (a.opt[0] != NULL)
		cJSON_AddStringToObject(o, "reason", a.opt[0]);
	body = cJSON_PrintUnformatted(o);
	seg = client_escape(a.pos[0]);
	snprintf(path, sizeof path, "/v1/backends/%s/breaker", seg);
	rc = cli_request(c, "PUT", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc == 0) {
		if (json) {
			cli_print_json(&resp);
		} else {
			ans = cJSON_ParseWithLength(resp.body, resp.len);
			st = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(ans, "breaker"), "state");
			if (!cJSON_IsString(st))
				st = cJSON_GetObjectItemCaseSensitive(ans, "state");
			printf("%s: breaker %s\n", a.pos[0],
			       cJSON_IsString(st) ? st->valuestring : state);
			cJSON_Delete(ans);
		}
		client_resp_free(&resp);
	}
	free(seg);
	cJSON_free(body);
	cJSON_Delete(o);
	return rc;
}

int
cli_verb_review(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	struct client_resp resp;
	struct args a;
	cJSON *o = NULL, *result = NULL, *ans;
	const cJSON *st;
	const char *verdict;
	char path[128], *body = NULL;
	int64_t id;
	int rc;

	if ((rc = cli_args_parse(argc, argv, cli_review_takes, NULL, &a)) != 0)
		goto out;
	if (a.npos < 2 || parse_int64(a.pos[0], &id) != 0) {
		rc = cli_usage_error("usage: review ID approve|reject|correct JSON [--note N]");
		goto out;
	}
	verdict = a.pos[1];
	if (strcmp(verdict, "correct") == 0) {
		if (a.npos != 3) {
			rc = cli_usage_error("review: correct needs the corrected result as JSON");
			goto out;
		}
		result = cJSON_Parse(a.pos[2]);
		if (!cJSON_IsObject(result)) {
			rc = cli_usage_error("review: the correction is not a JSON object: %s",
					     a.pos[2]);
			goto out;
		}
	} else if (strcmp(verdict, "approve") != 0 && strcmp(verdict, "reject") != 0) {
		rc = cli_usage_error("review: approve, reject or correct (got \"%s\")", verdict);
		goto out;
	} else if (a.npos != 2) {
		rc = cli_usage_error("review: %s takes no JSON", verdict);
		goto out;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "verdict", verdict);
	if (result != NULL)
		cJSON_AddItemToObject(o, "result", result);
	result = NULL;
	if (a.opt[0] != NULL)
		cJSON_AddStringToObject(o, "note", a.opt[0]);
	body = cJSON_PrintUnformatted(o);
	snprintf(path, sizeof path, "/v1/reviews/%lld/decision", (long long)id);
	rc = cli_request(c, "POST", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc != 0)
		goto out;
	if (json) {
		cli_print_json(&resp);
	} else {
		ans = cJSON_ParseWithLength(resp.body, resp.len);
		st = cJSON_GetObjectItemCaseSensitive(ans, "state");
		printf("review %lld: %s\n", (long long)id,
		       cJSON_IsString(st)		 ? st->valuestring
		       : strcmp(verdict, "approve") == 0 ? "approved"
		       : strcmp(verdict, "reject") == 0	 ? "rejected"
							 : "corrected");
		cJSON_Delete(ans);
	}
	client_resp_free(&resp);
out:
	cJSON_Delete(result);
	cJSON_free(body);
	cJSON_Delete(o);
	return rc;
}

/* One attempt of GET /v1/requests/{id}: its line and the headers its backend recorded. */
static void
print_attempt(const cJSON *x)
{
	static const char *const ms[][2] = {
		{"connect_ms", "connect"}, {"first_byte_ms", "first byte"}, {"total_ms", "total"}};
	const cJSON *no = cJSON_GetObjectItemCaseSensitive(x, "attempt_no"),
		    *be = cJSON_GetObjectItemCaseSensitive(x, "backend"),
		    *oc = cJSON_GetObjectItemCaseSensitive(x, "outcome"),
		    *st = cJSON_GetObjectItemCaseSensitive(x, "http_status"),
		    *sp = cJSON_GetObjectItemCaseSensitive(x, "span_id"),
		    *hd = cJSON_GetObjectItemCaseSensitive(x, "upstream_headers"), *h, *v;
	size_t i;

	printf("attempt %d  %s  %s", cJSON_IsNumber(no) ? no->valueint : 0,
	       cJSON_IsString(be) ? be->valuestring : "-",
	       cJSON_IsString(oc) ? oc->valuestring : "-");
	if (cJSON_IsNumber(st))
		printf("  HTTP %d", st->valueint);
	for (i = 0; i < sizeof ms / sizeof ms[0]; i++) {
		v = cJSON_GetObjectItemCaseSensitive(x, ms[i][0]);
		if (cJSON_IsNumber(v))
			printf("  %s %d ms", ms[i][1], v->valueint);
	}
	if (cJSON_IsString(sp))
		printf("  span %s", sp->valuestring);
	printf("\n");
	cJSON_ArrayForEach(h, hd)
	{
		if (cJSON_IsString(h) && h->string != NULL)
			printf("  < %s: %s\n", h->string, h->valuestring);
	}
}

/*
 * call -v: the call's attempts as GET /v1/requests/{id} reads them from
 * the store, with the upstream headers recorded. The daemon's writer
 * commits them a moment after the answer: ask again (ATTEMPTS_TRIES times,
 * ATTEMPTS_WAIT_MS apart) until as many as the answer counted are there.
 */
#define ATTEMPTS_TRIES	 20
#define ATTEMPTS_WAIT_MS 100

static void
print_call_attempts(struct client *c, const char *request_id, int want)
{
	struct client_resp resp;
	struct timespec wait = {0, ATTEMPTS_WAIT_MS * 1000000L};
	cJSON *o = NULL;
	const cJSON *arr = NULL, *x;
	char path[512], *seg = client_escape(request_id), *cause = NULL;
	int i;

	snprintf(path, sizeof path, "/v1/requests/%s", seg);
	for (i = 0; i < ATTEMPTS_TRIES; i++) {
		if (i > 0)
			nanosleep(&wait, NULL);
		cJSON_Delete(o);
		o = NULL;
		if (client_do(c, "GET", path, NULL, CONTROL_TIMEOUT_MS, &resp, &cause) != 0) {
			fprintf(stderr, "fusebox: GET %s: %s\n", path, cause);
			break;
		}
		if (resp.status == 200)
			o = cJSON_ParseWithLength(resp.body, resp.len);
		client_resp_free(&resp);
		arr = cJSON_GetObjectItemCaseSensitive(o, "attempts");
		if (cJSON_IsArray(arr) && cJSON_GetArraySize(arr) >= want)
			break;
	}
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < want)
		fprintf(stderr, "fusebox: the call's attempts are not in the store yet\n");
	if (!cJSON_IsArray(arr))
		arr = NULL;
	cJSON_ArrayForEach(x, arr)
	{
		print_attempt(x);
	}
	cJSON_Delete(o);
	free(cause);
	free(seg);
}

int
cli_verb_call(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	struct client_resp resp;
	struct args a;
	cJSON *o, *ans = NULL;
	const cJSON *res;
	char path[512], *seg, *body, *text = NULL;
	int64_t budget = 0;
	int rc;

	if ((rc = cli_args_parse(argc, argv, cli_call_takes, call_flags, &a)) != 0)
		return rc;
	if (a.npos != 2)
		return cli_usage_error("usage: call ROUTE TEXT [--budget MS] [-v]");
	if (a.opt[0] != NULL && (parse_int64(a.opt[0], &budget) != 0 || budget <= 0))
		return cli_usage_error("call: --budget takes milliseconds");
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "input", a.pos[1]);
	if (budget > 0)
		cJSON_AddNumberToObject(o, "budget_ms", (double)budget);
	body = cJSON_PrintUnformatted(o);
	seg = client_escape(a.pos[0]);
	snprintf(path, sizeof path, "/v1/routes/%s/call", seg);
	rc = cli_request_v(c, "POST", path, body, CALL_TIMEOUT_MS, a.flag[0] || a.flag[1], &resp);
	if (rc != 0)
		goto out;
	if (json) {
		cli_print_json(&resp);
		goto done;
	}
	ans = cJSON_ParseWithLength(resp.body, resp.len);
	if (resp.status == 202) {
		res = cJSON_GetObjectItemCaseSensitive(ans, "request_id");
		printf("queued: %s\n", cJSON_IsString(res) ? res->valuestring : "?");
		goto done;
	}
	res = cJSON_GetObjectItemCaseSensitive(ans, "result");
	text = res != NULL ? cJSON_PrintUnformatted(res) : NULL;
	printf("%s\n", text ? text : "null");
	{
		const cJSON *src = cJSON_GetObjectItemCaseSensitive(ans, "source"),
			    *be = cJSON_GetObjectItemCaseSensitive(ans, "backend"),
			    *lv = cJSON_GetObjectItemCaseSensitive(ans, "level"),
			    *rs = cJSON_GetObjectItemCaseSensitive(ans, "reason"),
			    *at = cJSON_GetObjectItemCaseSensitive(ans, "attempts"),
			    *el = cJSON_GetObjectItemCaseSensitive(ans, "elapsed_ms"),
			    *rv = cJSON_GetObjectItemCaseSensitive(ans, "review");

		printf("source %s  backend %s  level %d  reason %s  review %s  attempts %d  %d "
		       "ms\n",
		       cJSON_IsString(src) ? src->valuestring : "-",
		       cJSON_IsString(be) ? be->valuestring : "-",
		       cJSON_IsNumber(lv) ? lv->valueint : -1,
		       cJSON_IsString(rs) ? rs->valuestring : "-",
		       cJSON_IsString(rv) ? rv->valuestring : "-",
		       cJSON_IsNumber(at) ? at->valueint : 0,
		       cJSON_IsNumber(el) ? el->valueint : 0);
		res = cJSON_GetObjectItemCaseSensitive(ans, "request_id");
		if ((a.flag[0] || a.flag[1]) && cJSON_IsString(res))
			print_call_attempts(c, res->valuestring,
					    cJSON_IsNumber(at) ? at->valueint : 0);
	}
done:
	client_resp_free(&resp);
out:
	cJSON_free(text);
	cJSON_Delete(ans);
	free(seg);
	cJSON_free(body);
	cJSON_Delete(o);
	return rc;
}

/*
 * reload: POST /v1/reload. A refused file is the daemon's 400 with every
 * error, printed to stderr, exit 1 — so a unit's ExecReload through this
 * verb makes `systemctl reload` fail.
 */
int
cli_verb_reload(struct client *c, int json, int argc, char **argv, const struct state_v *sv)
{
	struct client_resp resp;
	struct args a;
	cJSON *ans;
	const cJSON *b, *r;
	int rc;

	if ((rc = cli_args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : cli_usage_error("reload takes no arguments");
	rc = cli_request(c, "POST", "/v1/reload", "{}", CONTROL_TIMEOUT_MS, &resp);
	if (rc != 0)
		return rc;
	if (json) {
		cli_print_json(&resp);
	} else {
		ans = cJSON_ParseWithLength(resp.body, resp.len);
		b = cJSON_GetObjectItemCaseSensitive(ans, "backends");
		r = cJSON_GetObjectItemCaseSensitive(ans, "routes");
		if (cJSON_IsNumber(b) && cJSON_IsNumber(r))
			printf("configuration reloaded: %d backends, %d routes\n", b->valueint,
			       r->valueint);
		else
			printf("configuration reloaded\n");
		cJSON_Delete(ans);
	}
	client_resp_free(&resp);
	return CLI_OK;
}
