/*
 * fleet_cli: the CLI over a fleet (see fleet_cli.h). Every host is asked
 * at once (fleet_fetch.c); a host that does not answer, or answers with
 * an error, is a row of its own, never left out of a sum in silence.
 *
 * status sums the hosts' counters (GET /v1/slo, the 1 h window) before
 * dividing: a fleet's availability is good / total over every host, not
 * the mean of the hosts' availabilities.
 */
#include "fleet_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli_int.h"
#include "clock.h"
#include "fleet_fetch.h"
#include "fmt.h"
#include "table.h"
#include "util.h"
#include "wire.h"

#define FLEET_TIMEOUT_MS 3000

struct fleet_ctx {
	const struct fleet *f;
	struct client *c;   /* one per host; c[i].base[0] == '\0': not set up */
	struct client **cp; /* &c[i], or NULL when host i is not set up */
	char **init_error;
};

static void
ctx_free(struct fleet_ctx *x)
{
	int i;

	for (i = 0; i < x->f->n; i++) {
		if (x->c[i].base[0] != '\0')
			client_free(&x->c[i]);
		free(x->init_error[i]);
	}
	free(x->c);
	free(x->cp);
	free(x->init_error);
}

static void
ctx_init(struct fleet_ctx *x, const struct fleet *f, const char *token, int role)
{
	char *tok, *cause = NULL;
	int i, r;

	x->f = f;
	x->c = xcalloc((size_t)f->n, sizeof *x->c);
	x->cp = xcalloc((size_t)f->n, sizeof *x->cp);
	x->init_error = xcalloc((size_t)f->n, sizeof *x->init_error);
	for (i = 0; i < f->n; i++) {
		const struct fleet_host *h = &f->hosts[i];

		tok = NULL;
		r = role;
		if (h->token_file != NULL &&
		    client_token_read(h->token_file, &tok, &r, &cause) != 0) {
			x->init_error[i] = xasprintf("token file %s: %s", h->token_file, cause);
			free(cause);
			cause = NULL;
			continue;
		}
		if (client_init(&x->c[i], h->url, tok != NULL ? tok : token, r, &cause) != 0) {
			x->init_error[i] = cause;
			cause = NULL;
			x->c[i].base[0] = '\0';
		}
		if (tok != NULL) {
			explicit_bzero(tok, strlen(tok));
			free(tok);
		}
		if (x->init_error[i] == NULL)
			x->cp[i] = &x->c[i];
	}
}

/*
 * Ask the hosts selected by sel (NULL: all) method path at once; r[i] for
 * host i (r[i].c NULL for a host not asked or not set up: c[i] NULL).
 */
static struct fleet_req *
ask_on(const struct fleet *f, struct client *const *c, const int *sel, const char *method,
       const char *path, const char *body, const char *action_id)
{
	struct fleet_req *r = xcalloc((size_t)f->n, sizeof *r), *q;
	int i, n = 0;

	q = xcalloc((size_t)f->n, sizeof *q);
	for (i = 0; i < f->n; i++) {
		if ((sel != NULL && !sel[i]) || c[i] == NULL)
			continue;
		q[n] = (struct fleet_req){.c = c[i],
					  .method = method,
					  .path = path,
					  .body = body,
					  .action_id = action_id};
		n++;
	}
	fleet_fetch_run(q, n, FLEET_TIMEOUT_MS);
	for (i = 0, n = 0; i < f->n; i++) {
		if ((sel != NULL && !sel[i]) || c[i] == NULL)
			continue;
		r[i] = q[n++];
	}
	free(q);
	return r;
}

static struct fleet_req *
ask(struct fleet_ctx *x, const int *sel, const char *method, const char *path, const char *body,
    const char *action_id)
{
	return ask_on(x->f, x->cp, sel, method, path, body, action_id);
}

static void
reqs_free(struct fleet_req *r, int n)
{
	int i;

	for (i = 0; i < n; i++)
		fleet_req_free(&r[i]);
	free(r);
}

/*
 * Why a host gave no usable answer to r (caller frees), or NULL when it did
 * (2xx). init_error: why the host is not set up, or NULL.
 */
static char *
req_error_on(const char *init_error, const struct fleet_req *r)
{
	if (init_error != NULL)
		return xstrdup(init_error);
	if (r->c == NULL)
		return xstrdup("not asked");
	if (!r->answered)
		return xstrdup(r->error ? r->error : "no answer");
	if (r->status < 200 || r->status > 299)
		return client_error_text(r->status, r->resp, r->len);
	return NULL;
}

static char *
req_error(const struct fleet_ctx *x, int i, const struct fleet_req *r)
{
	return req_error_on(x->init_error[i], r);
}

/* --- status --- */

struct route_sum {
	char name[MODEL_NAME_MAX];
	int hosts[4], forced[4];
	int64_t total, service_good, smart_good;
	int alerts, reviews;
};

struct backend_sum {
	char name[MODEL_NAME_MAX];
	int hosts, open;
	char where[256];
};

static struct route_sum *
route_sum_get(struct route_sum *rs, int *n, const char *name)
{
	int i;

	for (i = 0; i < *n; i++)
		if (strcmp(rs[i].name, name) == 0)
			return &rs[i];
	memset(&rs[*n], 0, sizeof rs[*n]);
	snprintf(rs[*n].name, sizeof rs[*n].name, "%s", name);
	return &rs[(*n)++];
}

static void
pct_text(char *out, size_t outsz, int64_t good, int64_t total)
{
	if (total <= 0)
		snprintf(out, outsz, "- (0/0)");
	else
		snprintf(out, outsz, "%.2f%% (%lld/%lld)", 100.0 * (double)good / (double)total,
			 (long long)good, (long long)total);
}

static void
levels_text(const struct route_sum *r, char *out, size_t outsz)
{
	size_t o = 0;
	int l;

	out[0] = '\0';
	for (l = 0; l < 4 && o < outsz; l++)
		if (r->hosts[l] > 0)
			o += (size_t)snprintf(out + o, outsz - o, "%sL%d%s %d",
					      o ? (fmt_locale_utf8() ? " · " : " | ") : "", l,
					      r->forced[l] ? "*" : "", r->hosts[l]);
}

static int
fleet_status(struct fleet_ctx *x, int argc, char **argv)
{
	static const char *const rt[] = {"ROUTE",    "LEVELS",	      "SERVICE 1h",
					 "SMART 1h", "ALERTS FIRING", "REVIEWS PENDING"};
	static const char *const bt[] = {"BACKEND", "OPEN", "HOSTS OPEN"};
	struct fleet_req *st, *sl, *al;
	struct route_sum *rs = xcalloc(1024, sizeof *rs);
	struct backend_sum *bs = xcalloc(1024, sizeof *bs);
	int nrs = 0, nbs = 0, up = 0, i, j, k;
	char when[40], *err;
	struct table *t;
	struct args a;
	int64_t now = clock_wall_ms();

	if ((k = cli_args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0) {
		free(rs);
		free(bs);
		return k ? k : cli_usage_error("status takes no arguments");
	}
	st = ask(x, NULL, "GET", "/v1/state", NULL, NULL);
	sl = ask(x, NULL, "GET", "/v1/slo", NULL, NULL);
	al = ask(x, NULL, "GET", "/v1/alerts", NULL, NULL);
	cli_rfc3339(now, when, sizeof when);
	for (i = 0; i < x->f->n; i++) {
		struct state_v *s = NULL;
		struct slo_v *slo = NULL;
		struct alerts_v *alv = NULL;
		char *cause = NULL;

		err = req_error(x, i, &st[i]);
		if (err == NULL && model_parse_state(st[i].resp, st[i].len, &s, &cause) != 0)
			err = xasprintf("GET /v1/state: %s", cause);
		if (err == NULL && (err = req_error(x, i, &sl[i])) == NULL &&
		    model_parse_slo(sl[i].resp, sl[i].len, &slo, &cause) != 0)
			err = xasprintf("GET /v1/slo: %s", cause);
		if (err == NULL && (err = req_error(x, i, &al[i])) == NULL &&
		    model_parse_alerts(al[i].resp, al[i].len, &alv, &cause) != 0)
			err = xasprintf("GET /v1/alerts: %s", cause);
		free(cause);
		if (err != NULL) {
			printf("DOWN %s (%s) since %s: %s\n", x->f->hosts[i].name,
			       x->f->hosts[i].url, when, err);
			free(err);
		} else {
			up++;
			for (j = 0; j < s->nroutes && nrs < 1024; j++) {
				const struct route_v *r = &s->routes[j];
				const struct slo_route_v *sr = slo_route(slo, r->name);
				struct route_sum *q = route_sum_get(rs, &nrs, r->name);
				int l = MIN(MAX(r->level, 0), 3);

				q->hosts[l]++;
				q->forced[l] |= r->forced;
				q->reviews += MAX(r->review_pending, 0);
				q->alerts += alerts_firing(alv, r->name);
				if (sr != NULL && sr->w[SLO_1H].present) {
					q->total += sr->w[SLO_1H].total;
					q->service_good += sr->w[SLO_1H].service_good;
					q->smart_good += sr->w[SLO_1H].smart_good;
				}
			}
			for (j = 0; j < s->nbackends; j++) {
				const struct backend_v *b = &s->backends[j];
				struct backend_sum *q = NULL;
				size_t o;

				for (k = 0; k < nbs; k++)
					if (strcmp(bs[k].name, b->name) == 0)
						q = &bs[k];
				if (q == NULL && nbs < 1024) {
					q = &bs[nbs++];
					snprintf(q->name, sizeof q->name, "%s", b->name);
				}
				if (q == NULL)
					continue;
				q->hosts++;
				if (b->st == BS_OPEN || b->st == BS_FORCED_OPEN) {
					o = strlen(q->where);
					snprintf(q->where + o, sizeof q->where - o, "%s%s(%s)",
						 o ? " " : "", x->f->hosts[i].name, b->state);
					q->open++;
				}
			}
		}
		state_free(s);
		slo_free(slo);
		alerts_free(alv);
	}
	printf("fleet: %d hosts, %d answering, %d down\n", x->f->n, up, x->f->n - up);
	t = table_new(6, rt, "  rrrr");
	for (i = 0; i < nrs; i++) {
		char lv[128], sv[64], sm[64], an[16], rn[16];
		const char *cells[] = {rs[i].name, lv, sv, sm, an, rn};

		levels_text(&rs[i], lv, sizeof lv);
		pct_text(sv, sizeof sv, rs[i].service_good, rs[i].total);
		pct_text(sm, sizeof sm, rs[i].smart_good, rs[i].total);
		snprintf(an, sizeof an, "%d", rs[i].alerts);
		snprintf(rn, sizeof rn, "%d", rs[i].reviews);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	t = table_new(3, bt, " r ");
	for (i = 0; i < nbs; i++) {
		char on[32];
		const char *cells[] = {bs[i].name, on, bs[i].open ? bs[i].where : "-"};

		snprintf(on, sizeof on, "%d/%d", bs[i].open, bs[i].hosts);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	reqs_free(st, x->f->n);
	reqs_free(sl, x->f->n);
	reqs_free(al, x->f->n);
	free(rs);
	free(bs);
	return up == x->f->n ? CLI_OK : CLI_FAILED;
}

/* --- fan-out: level, weights, breaker --- */

/* The options every fan-out takes, first in each verb's takes list. */
enum { OPT_GROUP, OPT_HOSTS, OPT_ACTION_ID, OPT_VERB };
#define FANOUT_TAKES "--group", "--hosts", "--action-id"
#define FANOUT_USAGE "[--group G] [--hosts H1,H2] [--action-id ID]"

static const char *const fleet_level_takes[] = {FANOUT_TAKES, "--reason", "--ttl", NULL};
static const char *const fleet_weights_takes[] = {FANOUT_TAKES, "--reason", NULL};
static const char *const fleet_breaker_takes[] = {FANOUT_TAKES, "--reason", NULL};

int
fleet_select(const struct fleet *f, const char *group, const char *hosts, int *sel, char *err,
	     size_t errsz)
{
	char *list, *p, *next;
	int i, n = 0;

	for (i = 0; i < f->n; i++)
		sel[i] = fleet_in_group(f, i, group) && hosts == NULL;
	if (hosts != NULL) {
		list = xstrdup(hosts);
		for (p = list; p != NULL; p = next) {
			next = strchr(p, ',');
			if (next != NULL)
				*next++ = '\0';
			if (*p == '\0')
				continue;
			i = fleet_find(f, p);
			if (i < 0) {
				snprintf(err, errsz, "no host named \"%s\" in the fleet", p);
				free(list);
				return -1;
			}
			sel[i] = fleet_in_group(f, i, group);
		}
		free(list);
	}
	for (i = 0; i < f->n; i++)
		n += sel[i];
	if (n == 0) {
		snprintf(err, errsz, "no host of the fleet is selected");
		return -1;
	}
	return 0;
}

/* The CLI's --group / --hosts: usage errors (exit 2). */
static int
select_hosts(const struct fleet *f, const char *group, const char *hosts, int *sel)
{
	char err[512];

	if (fleet_select(f, group, hosts, sel, err, sizeof err) == 0)
		return 0;
	return cli_usage_error("%s%s", strncmp(err, "no host named", 13) == 0 ? "--hosts: " : "",
			       err);
}

static void
answer_text(const struct fleet_fanout *fo, const struct fleet_req *r, char *out, size_t outsz)
{
	struct route_v rv;
	char *cause = NULL, t[256];
	cJSON *ans;
	const cJSON *st;

	if (fo->answer == FLEET_ANSWER_BREAKER) {
		ans = cJSON_ParseWithLength(r->resp, r->len);
		st = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(ans, "breaker"), "state");
		if (!cJSON_IsString(st))
			st = cJSON_GetObjectItemCaseSensitive(ans, "state");
		snprintf(out, outsz, "applied%s%s", cJSON_IsString(st) ? ": breaker " : "",
			 cJSON_IsString(st) ? st->valuestring : "");
		cJSON_Delete(ans);
		return;
	}
	if (model_parse_route(r->resp, r->len, &rv, &cause) != 0) {
		free(cause);
		snprintf(out, outsz, "applied");
	} else if (fo->answer == FLEET_ANSWER_LEVEL) {
		snprintf(out, outsz, "applied: L%d%s", rv.level,
			 rv.forced ? " (forced)" : " (auto)");
	} else {
		cli_targets_text(&rv, t, sizeof t);
		snprintf(out, outsz, "applied: %s", t);
	}
}

int
fleet_fanout_send(const struct fleet *f, struct client *const *c, const char *const *why,
		  const int *sel, const struct fleet_fanout *fo, const char *aid,
		  struct fleet_result *res)
{
	struct fleet_req *r = ask_on(f, c, sel, fo->method, fo->path, fo->body, aid);
	char *err;
	int i, failed = 0;

	for (i = 0; i < f->n; i++) {
		if (!sel[i])
			continue;
		res[i].asked = 1;
		err = req_error_on(c[i] == NULL
					   ? (why != NULL && why[i] != NULL ? why[i] : "not set up")
					   : NULL,
				   &r[i]);
		res[i].applied = err == NULL;
		if (err == NULL) {
			answer_text(fo, &r[i], res[i].text, sizeof res[i].text);
		} else {
			failed++;
			snprintf(res[i].text, sizeof res[i].text, "failed: %s", err);
			free(err);
		}
	}
	reqs_free(r, f->n);
	return failed;
}

void
fleet_fanout_level(struct fleet_fanout *fo, const char *route, int level, const char *reason,
		   int64_t ttl_s)
{
	cJSON *o;
	char *seg;

	memset(fo, 0, sizeof *fo);
	seg = client_escape(route);
	snprintf(fo->path, sizeof fo->path, "/v1/routes/%s/level", seg);
	free(seg);
	if (level >= 0) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "level", (double)level);
		cJSON_AddStringToObject(o, "reason", reason != NULL ? reason : "");
		if (ttl_s > 0)
			cJSON_AddNumberToObject(o, "ttl_s", (double)ttl_s);
		fo->body = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	}
	snprintf(fo->what, sizeof fo->what, "%s %s", level < 0 ? "release" : "force", route);
	fo->method = level < 0 ? "DELETE" : "PUT";
	fo->answer = FLEET_ANSWER_LEVEL;
}

void
fleet_fanout_free(struct fleet_fanout *fo)
{
	cJSON_free(fo->body);
	fo->body = NULL;
}

/*
 * Send fo to the hosts a's --group / --hosts select, with a's --action-id
 * or a fresh one; print the table. CLI_OK only when every host applied it.
 */
static int
fanout_run(struct fleet_ctx *x, const struct args *a, const struct fleet_fanout *fo)
{
	static const char *const titles[] = {"HOST", "RESULT"};
	int *sel = xcalloc((size_t)x->f->n, sizeof *sel);
	struct fleet_result *res = xcalloc((size_t)x->f->n, sizeof *res);
	int rc, i, nsel = 0, failed;
	char aid[64], retry[1024];
	struct table *t;
	size_t ro = 0;

	if (a->opt[OPT_ACTION_ID] != NULL &&
	    (strlen(a->opt[OPT_ACTION_ID]) == 0 || strlen(a->opt[OPT_ACTION_ID]) > 64)) {
		free(sel);
		free(res);
		return cli_usage_error("--action-id: 1 to 64 characters");
	}
	if ((rc = select_hosts(x->f, a->opt[OPT_GROUP], a->opt[OPT_HOSTS], sel)) != 0) {
		free(sel);
		free(res);
		return rc;
	}
	if (a->opt[OPT_ACTION_ID] != NULL)
		snprintf(aid, sizeof aid, "%s", a->opt[OPT_ACTION_ID]);
	else
		fleet_action_id_new(aid, sizeof aid);
	failed = fleet_fanout_send(x->f, x->cp, (const char *const *)x->init_error, sel, fo, aid,
				   res);
	for (i = 0; i < x->f->n; i++)
		nsel += sel[i];
	printf("action %s: %s on %d hosts\n", aid, fo->what, nsel);
	t = table_new(2, titles, NULL);
	retry[0] = '\0';
	for (i = 0; i < x->f->n; i++) {
		const char *cells[] = {x->f->hosts[i].name, res[i].text};

		if (!sel[i])
			continue;
		if (!res[i].applied && ro < sizeof retry)
			ro += (size_t)snprintf(retry + ro, sizeof retry - ro, "%s%s", ro ? "," : "",
					       x->f->hosts[i].name);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	printf("%d applied, %d failed\n", nsel - failed, failed);
	if (failed > 0)
		printf("to retry the failed hosts only, run the same command with --hosts %s "
		       "--action-id %s\n",
		       retry, aid);
	free(res);
	free(sel);
	return failed == 0 ? CLI_OK : CLI_FAILED;
}

static int
fleet_level(struct fleet_ctx *x, int argc, char **argv)
{
	const char *reason, *ttl;
	struct fleet_fanout fo;
	struct args a;
	int64_t level = 0, ttl_ms = 0;
	int rc, release;

	if ((rc = cli_args_parse(argc, argv, fleet_level_takes, NULL, &a)) != 0)
		return rc;
	reason = a.opt[OPT_VERB];
	ttl = a.opt[OPT_VERB + 1];
	if (a.npos != 2)
		return cli_usage_error("usage: level ROUTE N --reason R [--ttl S] " FANOUT_USAGE
				       " | level ROUTE auto " FANOUT_USAGE);
	release = strcmp(a.pos[1], "auto") == 0;
	if (!release && (parse_int64(a.pos[1], &level) != 0 || level < 0 || level > 3))
		return cli_usage_error("level: N must be 0, 1, 2, 3 or auto (got \"%s\")",
				       a.pos[1]);
	if (!release && (reason == NULL || reason[0] == '\0'))
		return cli_usage_error("level: --reason is required when forcing a level");
	if (release && (reason != NULL || ttl != NULL))
		return cli_usage_error("level ROUTE auto takes no --reason or --ttl");
	if (ttl != NULL && (fmt_parse_duration(ttl, &ttl_ms) != 0 || ttl_ms < 1000))
		return cli_usage_error(
			"level: --ttl takes seconds or a duration like 30m (got \"%s\")", ttl);
	fleet_fanout_level(&fo, a.pos[0], release ? -1 : (int)level, reason, ttl_ms / 1000);
	rc = fanout_run(x, &a, &fo);
	fleet_fanout_free(&fo);
	return rc;
}

int
fleet_fanout_weights(struct fleet_fanout *fo, const char *route, const char *const *pairs, int n,
		     const char *reason, char *err, size_t errsz)
{
	cJSON *o, *w;
	char name[256], *seg, *eq;
	int64_t v;
	int i;

	memset(fo, 0, sizeof *fo);
	if (n < 1) {
		snprintf(err, errsz, "weights: give BACKEND=WEIGHT at least once");
		return -1;
	}
	o = cJSON_CreateObject();
	w = cJSON_AddObjectToObject(o, "weights");
	for (i = 0; i < n; i++) {
		eq = strchr(pairs[i], '=');
		if (eq == NULL || eq == pairs[i] || (size_t)(eq - pairs[i]) >= sizeof name ||
		    parse_int64(eq + 1, &v) != 0) {
			cJSON_Delete(o);
			snprintf(err, errsz, "weights: \"%s\" is not BACKEND=WEIGHT", pairs[i]);
			return -1;
		}
		memcpy(name, pairs[i], (size_t)(eq - pairs[i]));
		name[eq - pairs[i]] = '\0';
		cJSON_AddNumberToObject(w, name, (double)v);
	}
	if (reason != NULL && reason[0] != '\0')
		cJSON_AddStringToObject(o, "reason", reason);
	fo->body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	seg = client_escape(route);
	snprintf(fo->path, sizeof fo->path, "/v1/routes/%s/weights", seg);
	free(seg);
	snprintf(fo->what, sizeof fo->what, "weights %s", route);
	fo->method = "PUT";
	fo->answer = FLEET_ANSWER_TARGETS;
	return 0;
}

int
fleet_fanout_breaker(struct fleet_fanout *fo, const char *backend, const char *to,
		     const char *reason, char *err, size_t errsz)
{
	const char *state;
	cJSON *o;
	char *seg;

	memset(fo, 0, sizeof *fo);
	if (strcmp(to, "open") == 0)
		state = WIRE_BREAKER_FORCED_OPEN;
	else if (strcmp(to, "closed") == 0)
		state = WIRE_BREAKER_FORCED_CLOSED;
	else if (strcmp(to, "auto") == 0)
		state = WIRE_BREAKER_AUTO;
	else {
		snprintf(err, errsz, "breaker: open, closed or auto (got \"%s\")", to);
		return -1;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "state", state);
	if (reason != NULL && reason[0] != '\0')
		cJSON_AddStringToObject(o, "reason", reason);
	fo->body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	seg = client_escape(backend);
	snprintf(fo->path, sizeof fo->path, "/v1/backends/%s/breaker", seg);
	free(seg);
	snprintf(fo->what, sizeof fo->what, "breaker %s %s", backend, to);
	fo->method = "PUT";
	fo->answer = FLEET_ANSWER_BREAKER;
	return 0;
}

static int
fleet_weights(struct fleet_ctx *x, int argc, char **argv)
{
	struct fleet_fanout fo = {0};
	struct args a;
	char err[512];
	int rc;

	if ((rc = cli_args_parse(argc, argv, fleet_weights_takes, NULL, &a)) != 0)
		return rc;
	if (a.npos < 2)
		return cli_usage_error("usage: weights ROUTE BACKEND=WEIGHT [BACKEND=WEIGHT ...] "
				       "[--reason R] " FANOUT_USAGE);
	if (fleet_fanout_weights(&fo, a.pos[0], &a.pos[1], a.npos - 1, a.opt[OPT_VERB], err,
				 sizeof err) != 0)
		return cli_usage_error("%s", err);
	rc = fanout_run(x, &a, &fo);
	fleet_fanout_free(&fo);
	return rc;
}

static int
fleet_breaker(struct fleet_ctx *x, int argc, char **argv)
{
	struct fleet_fanout fo = {0};
	struct args a;
	char err[512];
	int rc;

	if ((rc = cli_args_parse(argc, argv, fleet_breaker_takes, NULL, &a)) != 0)
		return rc;
	if (a.npos != 2)
		return cli_usage_error(
			"usage: breaker BACKEND open|closed|auto [--reason R] " FANOUT_USAGE);
	if (fleet_fanout_breaker(&fo, a.pos[0], a.pos[1], a.opt[OPT_VERB], err, sizeof err) != 0)
		return cli_usage_error("%s", err);
	rc = fanout_run(x, &a, &fo);
	fleet_fanout_free(&fo);
	return rc;
}

/* --- reviews (merged) --- */

int
host_review_cmp(const void *a, const void *b)
{
	const struct host_review *x = a, *y = b;
	int64_t dx = x->r->due_at > 0 ? x->r->due_at : INT64_MAX;
	int64_t dy = y->r->due_at > 0 ? y->r->due_at : INT64_MAX;

	if (dx != dy)
		return dx < dy ? -1 : 1;
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return x->r->id < y->r->id ? -1 : x->r->id > y->r->id;
}

static int
fleet_reviews(struct fleet_ctx *x, int argc, char **argv)
{
	static const char *const titles[] = {"HOST",   "ID",	 "ROUTE",      "PRIORITY", "STATE",
					     "DUE IN", "REASON", "CONFIDENCE", "INPUT"};
	struct reviews_v **rv = xcalloc((size_t)x->f->n, sizeof *rv);
	struct host_review *all = NULL;
	struct fleet_req *r;
	struct table *t;
	struct args a;
	struct buf path;
	char *err, *cause = NULL, *e;
	int rc, i, j, n = 0, down = 0;
	int64_t now = clock_wall_ms();

	if ((rc = cli_args_parse(argc, argv, cli_reviews_takes, NULL, &a)) != 0 || a.npos != 0) {
		free(rv);
		return rc ? rc : cli_usage_error("reviews: unexpected argument %s", a.pos[0]);
	}
	buf_init(&path, 1024);
	buf_puts(&path, "/v1/reviews?limit=");
	buf_puts(&path, a.opt[2] ? a.opt[2] : "200");
	for (i = 0; i < 2; i++) {
		if (a.opt[i] == NULL)
			continue;
		e = client_escape(a.opt[i]);
		buf_printf(&path, "&%s=%s", i == 0 ? "state" : "route", e);
		free(e);
	}
	r = ask(x, NULL, "GET", path.data, NULL, NULL);
	buf_free(&path);
	for (i = 0; i < x->f->n; i++) {
		err = req_error(x, i, &r[i]);
		if (err == NULL &&
		    model_parse_reviews(r[i].resp, r[i].len, 0, &rv[i], &cause) != 0) {
			err = xasprintf("GET /v1/reviews: %s", cause);
			free(cause);
			cause = NULL;
		}
		if (err != NULL) {
			fprintf(stderr, "fusebox: %s: %s\n", x->f->hosts[i].name, err);
			free(err);
			down++;
			continue;
		}
		all = xrealloc(all, (size_t)(n + rv[i]->n + 1) * sizeof *all);
		for (j = 0; j < rv[i]->n; j++)
			all[n++] = (struct host_review){i, &rv[i]->v[j]};
	}
	if (n > 1)
		qsort(all, (size_t)n, sizeof *all, host_review_cmp);
	t = table_new(9, titles, " r    r ");
	for (i = 0; i < n; i++) {
		const struct review_v *q = all[i].r;
		char id[32], due[32], conf[16];
		const char *cells[] = {x->f->hosts[all[i].host].name,
				       id,
				       q->route,
				       q->priority,
				       q->state,
				       due,
				       q->reason,
				       conf,
				       q->input ? q->input : ""};

		cli_review_cells(q, now, id, sizeof id, due, sizeof due, conf, sizeof conf);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	printf("%d items on %d hosts", n, x->f->n - down);
	if (down > 0)
		printf(", %d hosts did not answer", down);
	printf("\n");
	for (i = 0; i < x->f->n; i++)
		if (rv[i] != NULL)
			reviews_free(rv[i]);
	free(rv);
	free(all);
	reqs_free(r, x->f->n);
	return down == 0 ? CLI_OK : CLI_FAILED;
}

static const struct {
	const char *name;
	int (*fn)(struct fleet_ctx *x, int argc, char **argv);
} fleet_verbs[] = {
	{"status", fleet_status},   {"level", fleet_level},	{"weights", fleet_weights},
	{"breaker", fleet_breaker}, {"reviews", fleet_reviews},
};

int
fleet_cli_run(const struct fleet *f, const char *token, int role, const char *host, int json,
	      int argc, char **argv)
{
	struct fleet_ctx x;
	int i, rc;

	fmt_set_ascii(!fmt_locale_utf8());
	if (host != NULL) {
		i = fleet_find(f, host);
		if (i < 0)
			return cli_usage_error("--host: no host named \"%s\" in the fleet", host);
	}
	for (i = 0; host == NULL && i < (int)ARRAY_SIZE(fleet_verbs); i++)
		if (strcmp(argv[0], fleet_verbs[i].name) == 0)
			break;
	if (host == NULL && i == (int)ARRAY_SIZE(fleet_verbs))
		return cli_usage_error("%s: not a fleet verb (status, level, weights, breaker, "
				       "reviews); --host NAME runs it on one host",
				       argv[0]);
	if (host == NULL && json)
		return cli_usage_error("--json: give --host NAME (one daemon's JSON)");
	ctx_init(&x, f, token, role);
	if (host != NULL) {
		i = fleet_find(f, host);
		if (x.init_error[i] != NULL) {
			fprintf(stderr, "fusebox: %s: %s\n", host, x.init_error[i]);
			rc = CLI_FAILED;
		} else {
			rc = cli_run(&x.c[i], json, argc, argv);
		}
	} else {
		rc = fleet_verbs[i].fn(&x, argc, argv);
	}
	ctx_free(&x);
	return rc;
}
