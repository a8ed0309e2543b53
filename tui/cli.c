/*
 * cli: the verbs (see cli.h).
 *
 * Each verb parses its own arguments (usage errors exit 2 before anything
 * is sent), makes one request (events --follow: one a second), and prints
 * either the daemon's JSON (--json) or a table / one line. Any non-2xx
 * answer is printed to stderr as the daemon said it ("403 forbidden: ...")
 * and exits 1; so does a daemon that cannot be reached.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "fmt.h"
#include "model.h"
#include "report.h"
#include "util.h"

#define CONTROL_TIMEOUT_MS 5000
#define CALL_TIMEOUT_MS	   130000
#define CELL_MAX_COLS	   60
#define EVENTS_PAGE	   500

struct table {
	int ncols;
	const char *right; /* 'r' per right-aligned column, or NULL */
	char **cells;
	int nrows;
	int cap;
};

struct table *
table_new(int ncols, const char *const *titles, const char *right)
{
	struct table *t = xcalloc(1, sizeof *t);

	t->ncols = ncols;
	t->right = right;
	if (titles != NULL)
		table_add(t, titles);
	return t;
}

void
table_add(struct table *t, const char *const *cells)
{
	char fit[CELL_MAX_COLS * 4 + 8];
	int i;

	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = xrealloc(t->cells, (size_t)t->cap * (size_t)t->ncols * sizeof *t->cells);
	}
	for (i = 0; i < t->ncols; i++) {
		fmt_fit(fit, sizeof fit, cells[i] ? cells[i] : "", CELL_MAX_COLS, 0);
		t->cells[t->nrows * t->ncols + i] = xstrdup(fit);
	}
	t->nrows++;
}

void
table_print(struct table *t, FILE *fp)
{
	int *w = xcalloc((size_t)t->ncols, sizeof *w), r, i, cw, pad;

	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols; i++)
			w[i] = MAX(w[i], fmt_width(t->cells[r * t->ncols + i]));
	for (r = 0; r < t->nrows; r++) {
		for (i = 0; i < t->ncols; i++) {
			const char *cell = t->cells[r * t->ncols + i];
			int last = i == t->ncols - 1, right = t->right && t->right[i] == 'r';

			cw = fmt_width(cell);
			pad = w[i] - cw;
			if (right)
				fprintf(fp, "%*s%s", pad, "", cell);
			else
				fprintf(fp, "%s%*s", cell, last ? 0 : pad, "");
			if (!last)
				fputs("  ", fp);
		}
		fputc('\n', fp);
	}
	free(w);
}

void
table_free(struct table *t)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

void
cli_usage(FILE *fp)
{
	fputs("usage: fusebox [--url URL] [--token-file FILE] [--json] [VERB ARGS...]\n"
	      "\n"
	      "Without a verb: the console (ncurses). Verbs:\n"
	      "  status                                 daemon, routes and breakers in brief\n"
	      "  routes                                 levels, rates, targets and weights\n"
	      "  breakers                               every backend's breaker\n"
	      "  reviews [--state S] [--route R]        the review queue (S: open, pending, ...)\n"
	      "  slo [ROUTE]                            availability per window, error budgets\n"
	      "  alerts                                 active alerts and those resolved in 24 h\n"
	      "  events [--follow] [--after ID]         events (--follow: keep printing)\n"
	      "  level ROUTE N --reason R [--ttl S]     force a route's level (0-3)\n"
	      "  level ROUTE auto                       release it to automatic control\n"
	      "  weights ROUTE B1=W1 [B2=W2 ...]        set the route's target weights\n"
	      "  breaker BACKEND open|closed|auto [--reason R]\n"
	      "  review ID approve|reject [--note N]\n"
	      "  review ID correct JSON [--note N]      decide a review item\n"
	      "  call ROUTE TEXT [--budget MS]          make a guarded call\n"
	      "  report --db FILE [--since T]           offline report from the SQLite DB\n"
	      "                                         (T: RFC3339 or a duration like 1h)\n"
	      "\n"
	      "URL: --url, else $FUSEBOX_URL, else " CLIENT_DEFAULT_URL ".\n"
	      "Token: --token-file (token = first field of the first line), else $FUSEBOX_TOKEN,\n"
	      "else $FUSEBOX_TOKEN_FILE, else the daemon's tokens file when readable.\n"
	      "--json prints the daemon's JSON. Exit: 0 ok, 1 refused or failed, 2 usage.\n",
	      fp);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("fusebox: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(fusebox --help shows the verbs)\n", stderr);
	return CLI_USAGE;
}

/*
 * Split a verb's arguments: options listed in takes ("--state", ...) take a
 * value ("--state S" or "--state=S"); flags listed in flags take none;
 * anything else starting with "--" is a usage error; the rest are
 * positional, in order. 0 or CLI_USAGE (message printed).
 */
struct args {
	const char *pos[16];
	int npos;
	const char *opt[8];
	int flag[8];
};

static int
args_parse(int argc, char **argv, const char *const *takes, const char *const *flags,
	   struct args *a)
{
	int i, k, matched, rest = 0;
	size_t n;

	memset(a, 0, sizeof *a);
	for (i = 1; i < argc; i++) {
		matched = 0;
		if (!rest && strcmp(argv[i], "--") == 0) {
			rest = 1;
			continue;
		}
		for (k = 0; !rest && flags != NULL && flags[k] != NULL && !matched; k++) {
			if (strcmp(argv[i], flags[k]) == 0) {
				a->flag[k] = 1;
				matched = 1;
			}
		}
		if (!matched && !rest && strncmp(argv[i], "--", 2) == 0) {
			for (k = 0; takes != NULL && takes[k] != NULL && !matched; k++) {
				n = strlen(takes[k]);
				if (strcmp(argv[i], takes[k]) == 0) {
					if (i + 1 >= argc)
						return usage_error("%s: %s needs a value", argv[0],
								   takes[k]);
					a->opt[k] = argv[++i];
					matched = 1;
				} else if (strncmp(argv[i], takes[k], n) == 0 &&
					   argv[i][n] == '=') {
					a->opt[k] = argv[i] + n + 1;
					matched = 1;
				}
			}
			if (!matched)
				return usage_error("%s: unknown option %s", argv[0], argv[i]);
		}
		if (matched)
			continue;
		if (a->npos >= (int)ARRAY_SIZE(a->pos))
			return usage_error("%s: too many arguments", argv[0]);
		a->pos[a->npos++] = argv[i];
	}
	return 0;
}

/*
 * One request: 0 with *out set on a 2xx answer; CLI_FAILED after printing
 * why (unreachable, or the daemon's error) otherwise.
 */
static int
request(struct client *c, const char *method, const char *path, const char *body, long timeout_ms,
	struct client_resp *out)
{
	char *cause = NULL, *err;
	int rc;

	rc = client_do(c, method, path, body, timeout_ms, out, &cause);
	if (rc != 0) {
		fprintf(stderr, "fusebox: %s\n", cause);
		free(cause);
		return CLI_FAILED;
	}
	if (out->status < 200 || out->status > 299) {
		err = client_error_text(out->status, out->body, out->len);
		fprintf(stderr, "fusebox: %s %s: %s\n", method, path, err);
		free(err);
		client_resp_free(out);
		return CLI_FAILED;
	}
	return 0;
}

static void
print_json(const struct client_resp *r)
{
	fwrite(r->body, 1, r->len, stdout);
	if (r->len == 0 || r->body[r->len - 1] != '\n')
		fputc('\n', stdout);
}

static int
get_state(struct client *c, int json, struct client_resp *resp, struct state_v **st)
{
	char *cause = NULL;
	int rc = request(c, "GET", "/v1/state", NULL, CONTROL_TIMEOUT_MS, resp);

	if (rc != 0 || json)
		return rc;
	if (model_parse_state(resp->body, resp->len, st, &cause) != 0) {
		fprintf(stderr, "fusebox: GET /v1/state: %s\n", cause);
		free(cause);
		client_resp_free(resp);
		return CLI_FAILED;
	}
	return 0;
}

static void
rfc3339(int64_t ms, char *out, size_t outsz)
{
	if (ms <= 0)
		snprintf(out, outsz, "-");
	else
		time_format_rfc3339(ms, out, outsz);
}

static int
verb_status(struct client *c, int json, int argc, char **argv)
{
	struct client_resp resp;
	struct state_v *s = NULL;
	struct args a;
	char up[32];
	int rc, i, lv[4] = {0}, forced = 0, bs[6] = {0};

	if ((rc = args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : usage_error("status takes no arguments");
	rc = get_state(c, json, &resp, &s);
	if (rc != 0)
		return rc;
	if (json) {
		print_json(&resp);
		goto out;
	}
	for (i = 0; i < s->nroutes; i++) {
		if (s->routes[i].level >= 0 && s->routes[i].level < 4)
			lv[s->routes[i].level]++;
		forced += s->routes[i].forced;
	}
	for (i = 0; i < s->nbackends; i++)
		bs[s->backends[i].st]++;
	fmt_duration(up, sizeof up, s->uptime_s * 1000, 0);
	printf("fuseboxd %s at %s: up %s, inflight %d\n", s->version, c->base, up, s->inflight);
	printf("routes %d: L0 %d, L1 %d, L2 %d, L3 %d (forced %d)\n", s->nroutes, lv[0], lv[1],
	       lv[2], lv[3], forced);
	printf("backends %d: closed %d, half_open %d, open %d, forced_open %d, forced_closed %d\n",
	       s->nbackends, bs[BS_CLOSED], bs[BS_HALF_OPEN], bs[BS_OPEN], bs[BS_FORCED_OPEN],
	       bs[BS_FORCED_CLOSED]);
out:
	state_free(s);
	client_resp_free(&resp);
	return CLI_OK;
}

static void
targets_text(const struct route_v *r, char *out, size_t outsz)
{
	size_t o = 0;
	int j;

	out[0] = '\0';
	for (j = 0; j < r->ntargets && o < outsz; j++)
		o += (size_t)snprintf(out + o, outsz - o, "%s%s=%d%s", j ? " " : "",
				      r->targets[j].backend, r->targets[j].weight,
				      r->targets[j].canary ? "(canary)" : "");
}

static void
forced_text(const struct route_v *r, char *out, size_t outsz)
{
	char until[40];

	if (!r->forced) {
		snprintf(out, outsz, "-");
		return;
	}
	rfc3339(r->forced_until, until, sizeof until);
	snprintf(out, outsz, "L%d by %s until %s: %s", r->forced_lvl, r->forced_actor,
		 r->forced_until > 0 ? until : "released", r->forced_reason);
}

static int
verb_routes(struct client *c, int json, int argc, char **argv)
{
	static const char *const titles[] = {"ROUTE", "LEVEL",	"AUTO",	   "RPS",   "P50",
					     "P99",   "REVIEW", "TARGETS", "FORCED"};
	struct client_resp resp;
	struct state_v *s = NULL;
	struct table *t;
	struct args a;
	char lvl[8], al[8], rps[16], p50[16], p99[16], rev[16], tg[512], fo[512];
	int rc, i;

	if ((rc = args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : usage_error("routes takes no arguments");
	rc = get_state(c, json, &resp, &s);
	if (rc != 0)
		return rc;
	if (json) {
		print_json(&resp);
		goto out;
	}
	t = table_new(9, titles, "   rrrr  ");
	for (i = 0; i < s->nroutes; i++) {
		const struct route_v *r = &s->routes[i];
		const char *cells[] = {r->name, lvl, al, rps, p50, p99, rev, tg, fo};

		snprintf(lvl, sizeof lvl, "L%d", r->level);
		snprintf(al, sizeof al, "L%d", r->auto_level);
		fmt_rate(rps, sizeof rps, r->rps);
		fmt_latency(p50, sizeof p50, r->p50_ms);
		fmt_latency(p99, sizeof p99, r->p99_ms);
		if (r->review_pending >= 0)
			snprintf(rev, sizeof rev, "%d", r->review_pending);
		else
			snprintf(rev, sizeof rev, "-");
		targets_text(r, tg, sizeof tg);
		forced_text(r, fo, sizeof fo);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
out:
	state_free(s);
	client_resp_free(&resp);
	return CLI_OK;
}

static int
verb_breakers(struct client *c, int json, int argc, char **argv)
{
	static const char *const titles[] = {"BACKEND",	 "STATE",  "FAIL%",
					     "SLOW%",	 "CALLS",  "HALF-OPEN",
					     "INFLIGHT", "HEALTH", "LAST TRANSITION"};
	struct client_resp resp;
	struct state_v *s = NULL;
	struct table *t;
	struct args a;
	char fail[16], slow[16], calls[16], ho[32], inf[32], health[16], last[512];
	int rc, i;
	int64_t now = clock_wall_ms();

	if ((rc = args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : usage_error("breakers takes no arguments");
	rc = get_state(c, json, &resp, &s);
	if (rc != 0)
		return rc;
	if (json) {
		print_json(&resp);
		goto out;
	}
	t = table_new(9, titles, "  rrrrrr ");
	for (i = 0; i < s->nbackends; i++) {
		const struct backend_v *b = &s->backends[i];
		const char *cells[] = {b->name, b->state, fail, slow, calls, ho, inf, health, last};

		fmt_pct(fail, sizeof fail, b->failure_rate, 1);
		fmt_pct(slow, sizeof slow, b->slow_call_rate, 1);
		snprintf(calls, sizeof calls, "%d", b->calls_in_window);
		if (b->st == BS_OPEN && b->half_open_at > 0)
			fmt_duration(ho, sizeof ho, MAX(b->half_open_at - now, 0), 0);
		else
			snprintf(ho, sizeof ho, "-");
		snprintf(inf, sizeof inf, "%d/%d", b->inflight, b->max_concurrent);
		if (isnan(b->health))
			snprintf(health, sizeof health, "-");
		else
			snprintf(health, sizeof health, "%.2f", b->health);
		if (b->has_transition)
			snprintf(last, sizeof last, "%s->%s: %s", b->tr_from, b->tr_to,
				 b->tr_reason);
		else
			snprintf(last, sizeof last, "-");
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
out:
	state_free(s);
	client_resp_free(&resp);
	return CLI_OK;
}

static int
verb_reviews(struct client *c, int json, int argc, char **argv)
{
	static const char *const takes[] = {"--state", "--route", "--limit", NULL};
	static const char *const titles[] = {"ID",     "ROUTE",	 "PRIORITY",   "STATE",
					     "DUE IN", "REASON", "CONFIDENCE", "INPUT"};
	struct client_resp resp;
	struct reviews_v *rv = NULL;
	struct table *t;
	struct args a;
	struct buf path;
	char id[32], due[32], conf[16], *cause = NULL, *e;
	int rc, i;
	int64_t now = clock_wall_ms();

	if ((rc = args_parse(argc, argv, takes, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : usage_error("reviews: unexpected argument %s", a.pos[0]);
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
	rc = request(c, "GET", path.data, NULL, CONTROL_TIMEOUT_MS, &resp);
	buf_free(&path);
	if (rc != 0)
		return rc;
	if (json) {
		print_json(&resp);
		goto out;
	}
	if (model_parse_reviews(resp.body, resp.len, 0, &rv, &cause) != 0) {
		fprintf(stderr, "fusebox: GET /v1/reviews: %s\n", cause);
		free(cause);
		client_resp_free(&resp);
		return CLI_FAILED;
	}
	reviews_sort(rv);
	t = table_new(8, titles, "r   r r ");
	for (i = 0; i < rv->n; i++) {
		const struct review_v *r = &rv->v[i];
		const char *cells[] = {id,  r->route,  r->priority, r->state,
				       due, r->reason, conf,	    r->input ? r->input : ""};

		snprintf(id, sizeof id, "%lld", (long long)r->id);
		if (r->due_at > 0)
			fmt_duration(due, sizeof due, r->due_at - now, 0);
		else
			snprintf(due, sizeof due, "-");
		if (isnan(r->confidence))
			snprintf(conf, sizeof conf, "-");
		else
			snprintf(conf, sizeof conf, "%.2f", r->confidence);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	if (rv->pending >= 0)
		printf("pending %d, overdue %d\n", rv->pending, MAX(rv->overdue, 0));
	reviews_free(rv);
out:
	client_resp_free(&resp);
	return CLI_OK;
}

static void
print_slo_route(const struct slo_route_v *r)
{
	static const char *const titles[] = {"WINDOW",	"TOTAL",   "SERVICE", "SMART",
					     "LATENCY", "TIMEOUT", "RETRY",   "FORMAT"};
	struct table *t = table_new(8, titles, " rrrrrrr");
	char tot[24], sv[16], sm[16], lat[16], to[16], re[16], fv[16], l[16], b1[16], b2[16];
	char o1[16], o2[16], o3[16];
	int i;

	fmt_latency(l, sizeof l, r->obj_latency_ms);
	fmt_pct(o1, sizeof o1, r->obj_service, -1);
	fmt_pct(o2, sizeof o2, r->obj_smart, -1);
	fmt_pct(o3, sizeof o3, r->obj_latency_target, -1);
	printf("%s: objectives service %s, smart %s, latency %s for %s\n", r->route, o1, o2, l, o3);
	for (i = 0; i < SLO_NWIN; i++) {
		const struct slo_window_v *w = &r->w[i];
		const char *cells[] = {model_slo_windows[i], tot, sv, sm, lat, to, re, fv};

		if (!w->present)
			continue;
		snprintf(tot, sizeof tot, "%lld", (long long)w->total);
		fmt_pct(sv, sizeof sv, w->service, 2);
		fmt_pct(sm, sizeof sm, w->smart, 2);
		fmt_pct(lat, sizeof lat, w->latency_ok, 2);
		fmt_pct(to, sizeof to, w->timeout_rate, 2);
		fmt_pct(re, sizeof re, w->retry_rate, 2);
		fmt_pct(fv, sizeof fv, w->format_violation_rate, 2);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	fmt_pct(sv, sizeof sv, r->budget_service, 1);
	fmt_pct(sm, sizeof sm, r->budget_smart, 1);
	snprintf(b1, sizeof b1, isnan(r->burn_service) ? "-" : "%.2fx", r->burn_service);
	snprintf(b2, sizeof b2, isnan(r->burn_smart) ? "-" : "%.2fx", r->burn_smart);
	printf("error budget left: service %s (burn 1h %s), smart %s (burn 1h %s)\n", sv, b1, sm,
	       b2);
}

static int
verb_slo(struct client *c, int json, int argc, char **argv)
{
	struct client_resp resp;
	struct slo_v *s = NULL;
	struct args a;
	char path[256], *cause = NULL, *e;
	int rc, i;

	if ((rc = args_parse(argc, argv, NULL, NULL, &a)) != 0)
		return rc;
	if (a.npos > 1)
		return usage_error("slo takes at most one route");
	if (a.npos == 1) {
		e = client_escape(a.pos[0]);
		snprintf(path, sizeof path, "/v1/slo?route=%s", e);
		free(e);
	} else {
		snprintf(path, sizeof path, "/v1/slo");
	}
	rc = request(c, "GET", path, NULL, CONTROL_TIMEOUT_MS, &resp);
	if (rc != 0)
		return rc;
	if (json) {
		print_json(&resp);
		goto out;
	}
	if (model_parse_slo(resp.body, resp.len, &s, &cause) != 0) {
		fprintf(stderr, "fusebox: GET %s: %s\n", path, cause);
		free(cause);
		client_resp_free(&resp);
		return CLI_FAILED;
	}
	for (i = 0; i < s->n; i++) {
		if (i)
			fputc('\n', stdout);
		print_slo_route(&s->routes[i]);
	}
	slo_free(s);
out:
	client_resp_free(&resp);
	return CLI_OK;
}

static int
verb_alerts(struct client *c, int json, int argc, char **argv)
{
	static const char *const titles[] = {"ID",    "RULE",  "ROUTE",	    "SEVERITY",
					     "STATE", "VALUE", "THRESHOLD", "SINCE"};
	struct client_resp resp;
	struct alerts_v *al = NULL;
	struct table *t;
	struct args a;
	char v[32], th[32], since[40], *cause = NULL;
	int rc, i;

	if ((rc = args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : usage_error("alerts takes no arguments");
	rc = request(c, "GET", "/v1/alerts", NULL, CONTROL_TIMEOUT_MS, &resp);
	if (rc != 0)
		return rc;
	if (json) {
		print_json(&resp);
		goto out;
	}
	if (model_parse_alerts(resp.body, resp.len, &al, &cause) != 0) {
		fprintf(stderr, "fusebox: GET /v1/alerts: %s\n", cause);
		free(cause);
		client_resp_free(&resp);
		return CLI_FAILED;
	}
	t = table_new(8, titles, "r    rr ");
	for (i = 0; i < al->n; i++) {
		const struct alert_v *x = &al->v[i];
		const char *cells[] = {x->id,	 x->rule, x->route, x->severity,
				       x->state, v,	  th,	    since};

		snprintf(v, sizeof v, isnan(x->value) ? "-" : "%.4g", x->value);
		snprintf(th, sizeof th, isnan(x->threshold) ? "-" : "%.4g", x->threshold);
		rfc3339(x->since, since, sizeof since);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
	alerts_free(al);
out:
	client_resp_free(&resp);
	return CLI_OK;
}

static volatile sig_atomic_t follow_stop;

static void
on_stop(int sig)
{
	(void)sig;
	follow_stop = 1;
}

static void
print_events(const struct events_v *e, struct table *t)
{
	char id[32], at[40];
	int i;

	for (i = 0; i < e->n; i++) {
		const struct event_v *v = &e->v[i];
		const char *cells[] = {id, at, v->kind, v->subject, v->detail ? v->detail : ""};

		snprintf(id, sizeof id, "%lld", (long long)v->id);
		rfc3339(v->at, at, sizeof at);
		table_add(t, cells);
	}
}

/*
 * events: page through /v1/events from --after (default 0) and print the
 * last 200 (all pages are read so the tail is current); --follow then
 * polls once a second and prints new events as they come, one line each
 * (JSON lines with --json), until interrupted.
 */
static int
verb_events(struct client *c, int json, int argc, char **argv)
{
	static const char *const takes[] = {"--after", "--limit", NULL};
	static const char *const flags[] = {"--follow", "-f", NULL};
	static const char *const titles[] = {"ID", "AT", "KIND", "SUBJECT", "DETAIL"};
	struct client_resp resp;
	struct events_v *e = NULL;
	struct event_ring ring;
	struct table *t;
	struct args a;
	char path[128], *cause = NULL;
	int64_t after = 0, limit = 200, got;
	int rc, i, follow, pages = 0;
	cJSON *all = NULL, *arr, *page, *it;

	if ((rc = args_parse(argc, argv, takes, flags, &a)) != 0 || a.npos != 0)
		return rc ? rc : usage_error("events: unexpected argument %s", a.pos[0]);
	follow = a.flag[0] || a.flag[1];
	if (a.opt[0] != NULL && parse_int64(a.opt[0], &after) != 0)
		return usage_error("events: --after needs an event id");
	if (a.opt[1] != NULL && (parse_int64(a.opt[1], &limit) != 0 || limit < 1))
		return usage_error("events: --limit needs a positive number");
	event_ring_init(&ring, (int)MIN(limit, 100000));
	all = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(all, "events");
	do {
		snprintf(path, sizeof path, "/v1/events?after=%lld&limit=%d", (long long)after,
			 EVENTS_PAGE);
		rc = request(c, "GET", path, NULL, CONTROL_TIMEOUT_MS, &resp);
		if (rc != 0)
			goto out;
		if (model_parse_events(resp.body, resp.len, &e, &cause) != 0) {
			fprintf(stderr, "fusebox: GET %s: %s\n", path, cause);
			client_resp_free(&resp);
			rc = CLI_FAILED;
			goto out;
		}
		page = cJSON_ParseWithLength(resp.body, resp.len);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(page, "events"))
		{
			cJSON_AddItemToArray(arr, cJSON_Duplicate(it, 1));
			while (cJSON_GetArraySize(arr) > limit)
				cJSON_DeleteItemFromArray(arr, 0);
		}
		cJSON_Delete(page);
		client_resp_free(&resp);
		got = e->n;
		for (i = 0; i < e->n; i++)
			after = MAX(after, e->v[i].id);
		event_ring_push(&ring, e);
		events_free(e);
		e = NULL;
	} while (got >= EVENTS_PAGE && ++pages < 1000);
	if (json && follow) {
		cJSON_ArrayForEach(it, arr)
		{
			char *line = cJSON_PrintUnformatted(it);

			printf("%s\n", line);
			cJSON_free(line);
		}
	} else if (json) {
		char *text = cJSON_PrintUnformatted(all);

		printf("%s\n", text);
		cJSON_free(text);
	} else {
		struct events_v view = {0};

		t = table_new(5, titles, "r    ");
		view.v = xcalloc((size_t)ring.n + 1, sizeof *view.v);
		for (i = 0; i < ring.n; i++)
			view.v[view.n++] = *event_ring_get(&ring, i);
		print_events(&view, t);
		free(view.v);
		table_print(t, stdout);
		table_free(t);
	}
	fflush(stdout);
	if (!follow)
		goto out;
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	while (!follow_stop) {
		usleep(1000 * 1000);
		if (follow_stop)
			break;
		snprintf(path, sizeof path, "/v1/events?after=%lld&limit=%d", (long long)after,
			 EVENTS_PAGE);
		if (request(c, "GET", path, NULL, CONTROL_TIMEOUT_MS, &resp) != 0)
			continue; /* the daemon may come back */
		if (model_parse_events(resp.body, resp.len, &e, &cause) != 0) {
			free(cause);
			cause = NULL;
			client_resp_free(&resp);
			continue;
		}
		page = cJSON_ParseWithLength(resp.body, resp.len);
		if (json) {
			cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(page, "events"))
			{
				char *line = cJSON_PrintUnformatted(it);

				printf("%s\n", line);
				cJSON_free(line);
			}
		} else {
			char id[32], at[40];

			for (i = 0; i < e->n; i++) {
				rfc3339(e->v[i].at, at, sizeof at);
				snprintf(id, sizeof id, "%lld", (long long)e->v[i].id);
				printf("%s  %s  %s  %s  %s\n", id, at, e->v[i].kind,
				       e->v[i].subject, e->v[i].detail ? e->v[i].detail : "");
			}
		}
		for (i = 0; i < e->n; i++)
			after = MAX(after, e->v[i].id);
		cJSON_Delete(page);
		events_free(e);
		e = NULL;
		client_resp_free(&resp);
		if (fflush(stdout) != 0)
			break;
	}
	rc = CLI_OK;
out:
	free(cause);
	events_free(e);
	event_ring_free(&ring);
	cJSON_Delete(all);
	return rc;
}

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
	targets_text(&r, tg, sizeof tg);
	if (r.forced) {
		rfc3339(r.forced_until, until, sizeof until);
		printf("%s: L%d forced by %s until %s: %s\n", r.name, r.level, r.forced_actor,
		       r.forced_until > 0 ? until : "released", r.forced_reason);
	} else {
		printf("%s: L%d (auto)\n", r.name, r.level);
	}
	printf("targets: %s\n", tg);
	return CLI_OK;
}

static int
verb_level(struct client *c, int json, int argc, char **argv)
{
	static const char *const takes[] = {"--reason", "--ttl", NULL};
	struct client_resp resp;
	struct args a;
	cJSON *o = NULL;
	char path[512], *seg = NULL, *body = NULL;
	int64_t level, ttl_ms = 0;
	int rc, release;

	if ((rc = args_parse(argc, argv, takes, NULL, &a)) != 0)
		return rc;
	if (a.npos != 2)
		return usage_error("usage: level ROUTE N --reason R [--ttl S] | level ROUTE auto");
	release = strcmp(a.pos[1], "auto") == 0;
	if (!release && parse_int64(a.pos[1], &level) != 0)
		return usage_error("level: N must be 0, 1, 2, 3 or auto (got \"%s\")", a.pos[1]);
	if (!release && (a.opt[0] == NULL || a.opt[0][0] == '\0'))
		return usage_error("level: --reason is required when forcing a level");
	if (release && (a.opt[0] != NULL || a.opt[1] != NULL))
		return usage_error("level ROUTE auto takes no --reason or --ttl");
	if (a.opt[1] != NULL && (fmt_parse_duration(a.opt[1], &ttl_ms) != 0 || ttl_ms < 1000))
		return usage_error("level: --ttl takes seconds or a duration like 30m (got \"%s\")",
				   a.opt[1]);
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
	rc = request(c, release ? "DELETE" : "PUT", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc == 0) {
		rc = json ? (print_json(&resp), CLI_OK) : print_route_answer(&resp);
		client_resp_free(&resp);
	}
	cJSON_free(body);
	cJSON_Delete(o);
	free(seg);
	return rc;
}

static int
verb_weights(struct client *c, int json, int argc, char **argv)
{
	struct client_resp resp;
	struct args a;
	cJSON *o = NULL, *w;
	char path[512], name[256], *seg = NULL, *body = NULL, *eq;
	int64_t v;
	int rc, i;

	if ((rc = args_parse(argc, argv, NULL, NULL, &a)) != 0)
		goto out;
	if (a.npos < 2) {
		rc = usage_error("usage: weights ROUTE BACKEND=WEIGHT [BACKEND=WEIGHT ...]");
		goto out;
	}
	o = cJSON_CreateObject();
	w = cJSON_AddObjectToObject(o, "weights");
	for (i = 1; i < a.npos; i++) {
		eq = strchr(a.pos[i], '=');
		if (eq == NULL || eq == a.pos[i] || (size_t)(eq - a.pos[i]) >= sizeof name ||
		    parse_int64(eq + 1, &v) != 0) {
			rc = usage_error("weights: \"%s\" is not BACKEND=WEIGHT", a.pos[i]);
			goto out;
		}
		memcpy(name, a.pos[i], (size_t)(eq - a.pos[i]));
		name[eq - a.pos[i]] = '\0';
		cJSON_AddNumberToObject(w, name, (double)v);
	}
	body = cJSON_PrintUnformatted(o);
	seg = client_escape(a.pos[0]);
	snprintf(path, sizeof path, "/v1/routes/%s/weights", seg);
	rc = request(c, "PUT", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc == 0) {
		rc = json ? (print_json(&resp), CLI_OK) : print_route_answer(&resp);
		client_resp_free(&resp);
	}
out:
	free(seg);
	cJSON_free(body);
	cJSON_Delete(o);
	return rc;
}

static int
verb_breaker(struct client *c, int json, int argc, char **argv)
{
	static const char *const takes[] = {"--reason", NULL};
	struct client_resp resp;
	struct args a;
	cJSON *o, *ans;
	const cJSON *st;
	const char *state;
	char path[512], *seg, *body;
	int rc;

	if ((rc = args_parse(argc, argv, takes, NULL, &a)) != 0)
		return rc;
	if (a.npos != 2)
		return usage_error("usage: breaker BACKEND open|closed|auto [--reason R]");
	if (strcmp(a.pos[1], "open") == 0)
		state = "forced_open";
	else if (strcmp(a.pos[1], "closed") == 0)
		state = "forced_closed";
	else if (strcmp(a.pos[1], "auto") == 0)
		state = "auto";
	else
		return usage_error("breaker: open, closed or auto (got \"%s\")", a.pos[1]);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "state", state);
	if (a.opt[0] != NULL)
		cJSON_AddStringToObject(o, "reason", a.opt[0]);
	body = cJSON_PrintUnformatted(o);
	seg = client_escape(a.pos[0]);
	snprintf(path, sizeof path, "/v1/backends/%s/breaker", seg);
	rc = request(c, "PUT", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc == 0) {
		if (json) {
			print_json(&resp);
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

static int
verb_review(struct client *c, int json, int argc, char **argv)
{
	static const char *const takes[] = {"--note", NULL};
	struct client_resp resp;
	struct args a;
	cJSON *o = NULL, *result = NULL, *ans;
	const cJSON *st;
	const char *verdict;
	char path[128], *body = NULL;
	int64_t id;
	int rc;

	if ((rc = args_parse(argc, argv, takes, NULL, &a)) != 0)
		goto out;
	if (a.npos < 2 || parse_int64(a.pos[0], &id) != 0) {
		rc = usage_error("usage: review ID approve|reject|correct JSON [--note N]");
		goto out;
	}
	verdict = a.pos[1];
	if (strcmp(verdict, "correct") == 0) {
		if (a.npos != 3) {
			rc = usage_error("review: correct needs the corrected result as JSON");
			goto out;
		}
		result = cJSON_Parse(a.pos[2]);
		if (!cJSON_IsObject(result)) {
			rc = usage_error("review: the correction is not a JSON object: %s",
					 a.pos[2]);
			goto out;
		}
	} else if (strcmp(verdict, "approve") != 0 && strcmp(verdict, "reject") != 0) {
		rc = usage_error("review: approve, reject or correct (got \"%s\")", verdict);
		goto out;
	} else if (a.npos != 2) {
		rc = usage_error("review: %s takes no JSON", verdict);
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
	rc = request(c, "POST", path, body, CONTROL_TIMEOUT_MS, &resp);
	if (rc != 0)
		goto out;
	if (json) {
		print_json(&resp);
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

static int
verb_call(struct client *c, int json, int argc, char **argv)
{
	static const char *const takes[] = {"--budget", NULL};
	struct client_resp resp;
	struct args a;
	cJSON *o, *ans = NULL;
	const cJSON *res;
	char path[512], *seg, *body, *text = NULL;
	int64_t budget = 0;
	int rc;

	if ((rc = args_parse(argc, argv, takes, NULL, &a)) != 0)
		return rc;
	if (a.npos != 2)
		return usage_error("usage: call ROUTE TEXT [--budget MS]");
	if (a.opt[0] != NULL && (parse_int64(a.opt[0], &budget) != 0 || budget <= 0))
		return usage_error("call: --budget takes milliseconds");
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "input", a.pos[1]);
	if (budget > 0)
		cJSON_AddNumberToObject(o, "budget_ms", (double)budget);
	body = cJSON_PrintUnformatted(o);
	seg = client_escape(a.pos[0]);
	snprintf(path, sizeof path, "/v1/routes/%s/call", seg);
	rc = request(c, "POST", path, body, CALL_TIMEOUT_MS, &resp);
	if (rc != 0)
		goto out;
	if (json) {
		print_json(&resp);
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

static const struct verb {
	const char *name;
	int (*run)(struct client *c, int json, int argc, char **argv);
} verbs[] = {
	{"status", verb_status},   {"routes", verb_routes}, {"breakers", verb_breakers},
	{"reviews", verb_reviews}, {"slo", verb_slo},	    {"alerts", verb_alerts},
	{"events", verb_events},   {"level", verb_level},   {"weights", verb_weights},
	{"breaker", verb_breaker}, {"review", verb_review}, {"call", verb_call},
};

int
cli_run(struct client *c, int json, int argc, char **argv)
{
	size_t i;

	fmt_set_ascii(!fmt_locale_utf8());
	if (strcmp(argv[0], "report") == 0)
		return report_run(json, argc, argv);
	if (strcmp(argv[0], "help") == 0) {
		cli_usage(stdout);
		return CLI_OK;
	}
	for (i = 0; i < ARRAY_SIZE(verbs); i++)
		if (strcmp(verbs[i].name, argv[0]) == 0)
			return verbs[i].run(c, json, argc, argv);
	return usage_error("unknown verb \"%s\"", argv[0]);
}
