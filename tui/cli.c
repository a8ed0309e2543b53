/*
 * cli: the verbs (see cli.h) — the helpers they share, the verbs table
 * and the dispatch. The verbs themselves are in cli_read.c and
 * cli_write.c; report is report.c's.
 *
 * Each verb parses its own arguments (a needs_state verb takes none and
 * cli_run checks that; usage errors exit 2 before anything is sent),
 * makes one request (events --follow: one a second), and prints
 * either the daemon's JSON (--json) or a table / one line. Any non-2xx
 * answer is printed to stderr as the daemon said it ("403 forbidden: ...")
 * and exits 1; so does a daemon that cannot be reached.
 */
#include "cli_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "fmt.h"
#include "report.h"
#include "util.h"

int
cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("fusebox: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(fusebox --help shows the verbs)\n", stderr);
	return CLI_USAGE;
}

int
cli_args_parse(int argc, char **argv, const char *const *takes, const char *const *flags,
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
						return cli_usage_error("%s: %s needs a value",
								       argv[0], takes[k]);
					a->opt[k] = argv[++i];
					matched = 1;
				} else if (strncmp(argv[i], takes[k], n) == 0 &&
					   argv[i][n] == '=') {
					a->opt[k] = argv[i] + n + 1;
					matched = 1;
				}
			}
			if (!matched)
				return cli_usage_error("%s: unknown option %s", argv[0], argv[i]);
		}
		if (matched)
			continue;
		if (a->npos >= (int)ARRAY_SIZE(a->pos))
			return cli_usage_error("%s: too many arguments", argv[0]);
		a->pos[a->npos++] = argv[i];
	}
	return 0;
}

/* Whether a response header is one `call -v` shows (name case-insensitive). */
static int
header_shown(const char *name, size_t n)
{
	static const char *const names[] = {"traceparent", "tracestate", "x-request-id",
					    "retry-after"};
	size_t i;

	if (n > 10 && strncasecmp(name, "x-fusebox-", 10) == 0)
		return 1;
	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (n == strlen(names[i]) && strncasecmp(name, names[i], n) == 0)
			return 1;
	return 0;
}

void
cli_print_headers(FILE *fp, const struct client_resp *r)
{
	const char *p = r->headers, *eol, *colon, *v;
	size_t n;

	fprintf(fp, "< HTTP %ld\n", r->status);
	while (p != NULL && *p != '\0') {
		eol = strchr(p, '\n');
		n = eol != NULL ? (size_t)(eol - p) : strlen(p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		colon = memchr(p, ':', n);
		if (colon != NULL && header_shown(p, (size_t)(colon - p))) {
			for (v = colon + 1; v < p + n && (*v == ' ' || *v == '\t'); v++)
				;
			fprintf(fp, "< %.*s: %.*s\n", (int)(colon - p), p, (int)(p + n - v), v);
		}
		p = eol != NULL ? eol + 1 : p + n;
	}
}

int
cli_request(struct client *c, const char *method, const char *path, const char *body,
	    long timeout_ms, struct client_resp *out)
{
	return cli_request_v(c, method, path, body, timeout_ms, 0, out);
}

int
cli_request_v(struct client *c, const char *method, const char *path, const char *body,
	      long timeout_ms, int verbose, struct client_resp *out)
{
	char *cause = NULL, *err;
	int rc;

	rc = client_do(c, method, path, body, timeout_ms, out, &cause);
	if (rc != 0) {
		fprintf(stderr, "fusebox: %s\n", cause);
		free(cause);
		return CLI_FAILED;
	}
	if (verbose) {
		cli_print_headers(stdout, out);
		fflush(stdout);
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

void
cli_print_json(const struct client_resp *r)
{
	fwrite(r->body, 1, r->len, stdout);
	if (r->len == 0 || r->body[r->len - 1] != '\n')
		fputc('\n', stdout);
}

static int
get_state(struct client *c, int json, struct client_resp *resp, struct state_v **st)
{
	char *cause = NULL;
	int rc = cli_request(c, "GET", "/v1/state", NULL, CONTROL_TIMEOUT_MS, resp);

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

void
cli_rfc3339(int64_t ms, char *out, size_t outsz)
{
	if (ms <= 0)
		snprintf(out, outsz, "-");
	else
		time_format_rfc3339(ms, out, outsz);
}

void
cli_targets_text(const struct route_v *r, char *out, size_t outsz)
{
	size_t o = 0;
	int j;

	out[0] = '\0';
	for (j = 0; j < r->ntargets && o < outsz; j++)
		o += (size_t)snprintf(out + o, outsz - o, "%s%s=%d%s", j ? " " : "",
				      r->targets[j].backend, r->targets[j].weight,
				      r->targets[j].canary ? "(canary)" : "");
}

_Static_assert((int)REPORT_OK == CLI_OK && (int)REPORT_FAILED == CLI_FAILED &&
		       (int)REPORT_USAGE == CLI_USAGE,
	       "report_run's exit codes are the CLI's");

static int
verb_report(struct client *c, int json, int argc, char **argv, const struct state_v *s)
{
	return report_run(json, argc, argv);
}

static int
verb_help(struct client *c, int json, int argc, char **argv, const struct state_v *s)
{
	if (argc > 1)
		return cli_verb_usage(stdout, argv[1]);
	cli_usage(stdout);
	return CLI_OK;
}

/* report's options (parsed in report.c), for cli_globals_take. */
static const char *const report_takes[] = {"--db", "--since", NULL};

/*
 * The verbs, in --help order (tmux's cmd_entry). usage is the verb's lines
 * in `fusebox --help`, NULL for one that is not listed; takes its options
 * that take a value.
 */
static const struct verb {
	const char *name;
	const char *usage;
	int needs_state;
	cli_verb_fn *fn;
	const char *const *takes;
} verbs[] = {
	{"status",
	 "  status                                 daemon, routes and breakers in brief\n", 1,
	 cli_verb_status, NULL},
	{"routes",
	 "  routes                                 levels, rates, hedging, targets, weights\n", 1,
	 cli_verb_routes, NULL},
	{"breakers",
	 "  breakers                               breakers, concurrency limits, rate limits\n", 1,
	 cli_verb_breakers, NULL},
	{"reviews",
	 "  reviews [--state S] [--route R]        the review queue (S: open, pending, ...)\n", 0,
	 cli_verb_reviews, cli_reviews_takes},
	{"slo",
	 "  slo [ROUTE]                            availability per window, error budgets\n"
	 "  slo --prometheus URL [ROUTE]           the fleet's, from Prometheus (its rules)\n",
	 0, cli_verb_slo, cli_slo_takes},
	{"alerts",
	 "  alerts                                 active alerts and those resolved in 24 h\n", 0,
	 cli_verb_alerts, NULL},
	{"events", "  events [--follow] [--after ID]         events (--follow: keep printing)\n", 0,
	 cli_verb_events, cli_events_takes},
	{"level",
	 "  level ROUTE N --reason R [--ttl S]     force a route's level (0-3)\n"
	 "  level ROUTE auto                       release it to automatic control\n",
	 0, cli_verb_level, cli_level_takes},
	{"weights", "  weights ROUTE B1=W1 [B2=W2 ...]        set the route's target weights\n", 0,
	 cli_verb_weights, NULL},
	{"breaker", "  breaker BACKEND open|closed|auto [--reason R]\n", 0, cli_verb_breaker,
	 cli_breaker_takes},
	{"review",
	 "  review ID approve|reject [--note N]\n"
	 "  review ID correct JSON [--note N]      decide a review item\n",
	 0, cli_verb_review, cli_review_takes},
	{"call",
	 "  call ROUTE TEXT [--budget MS] [-v]     make a guarded call (-v: the answer's\n"
	 "                                         traceparent, X-Fusebox-*, Retry-After)\n",
	 0, cli_verb_call, cli_call_takes},
	{"reload", "  reload                                 re-read the daemon's configuration\n",
	 0, cli_verb_reload, NULL},
	{"diagnose",
	 "  diagnose [ROUTE] [--since 15m]         why it is degraded: causes, changes, actions\n",
	 0, cli_verb_diagnose, cli_diagnose_takes},
	{"report",
	 "  report --db FILE [--since T]           offline report from the SQLite DB\n"
	 "                                         (T: RFC3339 or a duration like 1h)\n",
	 0, verb_report, report_takes},
	{"help", NULL, 0, verb_help, NULL},
};

static const struct verb *
verb_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(verbs); i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

/* name, or name=VALUE: the value (the next argument for the first form), else NULL. */
static const char *
flag_value(int argc, char **argv, int *i, const char *name, int *missing)
{
	size_t n = strlen(name);

	if (strcmp(argv[*i], name) == 0) {
		if (*i + 1 < argc)
			return argv[++*i];
		*missing = 1;
		return NULL;
	}
	if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return NULL;
}

int
cli_global_flag(int argc, char **argv, int *i, struct cli_globals *g)
{
	const char *a = argv[*i], *v;
	int missing = 0;

	if (strcmp(a, "--json") == 0)
		g->json = 1;
	else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
		g->help = 1;
	else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)
		g->version = 1;
	else if ((v = flag_value(argc, argv, i, "--url", &missing)) != NULL)
		g->url = v;
	else if ((v = flag_value(argc, argv, i, "--token-file", &missing)) != NULL)
		g->token_file = v;
	else if ((v = flag_value(argc, argv, i, "--fleet", &missing)) != NULL)
		g->fleet = v;
	else if ((v = flag_value(argc, argv, i, "--host", &missing)) != NULL)
		g->host = v;
	else if ((v = flag_value(argc, argv, i, "--addr-file", &missing)) != NULL)
		g->addr_file = v;
	else if (missing)
		return cli_usage_error("%s needs a value", a);
	else
		return 0;
	return 1;
}

int
cli_globals_take(int argc, char **argv, struct cli_globals *g)
{
	const struct verb *v = verb_find(argv[0]);
	int i, k, o = 1, r, takes_value;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (i < argc)
				argv[o++] = argv[i++];
			break;
		}
		r = cli_global_flag(argc, argv, &i, g);
		if (r == CLI_USAGE)
			return -CLI_USAGE;
		if (r == 1)
			continue;
		argv[o++] = argv[i];
		takes_value = 0;
		for (k = 0; v != NULL && v->takes != NULL && v->takes[k] != NULL; k++)
			takes_value |= strcmp(argv[i], v->takes[k]) == 0;
		if (takes_value && i + 1 < argc)
			argv[o++] = argv[++i];
	}
	argv[o] = NULL;
	return o;
}

int
cli_verb_usage(FILE *fp, const char *name)
{
	const struct verb *v = verb_find(name);

	if (v == NULL || v->usage == NULL)
		return cli_usage_error("unknown verb \"%s\"", name);
	fprintf(fp, "usage: fusebox [--url URL] [--token-file FILE] [--json] %s ...\n%s", name,
		v->usage);
	fputs("\nThe global flags may also follow the verb. Exit: 0 ok, 1 refused or failed, 2 "
	      "usage.\n",
	      fp);
	return CLI_OK;
}

void
cli_usage(FILE *fp)
{
	size_t i;

	fputs("usage: fusebox [--url URL] [--token-file FILE] [--json] [VERB ARGS...]\n"
	      "\n"
	      "Without a verb: the console (ncurses). Verbs:\n",
	      fp);
	for (i = 0; i < ARRAY_SIZE(verbs); i++)
		if (verbs[i].usage != NULL)
			fputs(verbs[i].usage, fp);
	fputs("\n"
	      "URL: --url, else $FUSEBOX_URL, else the daemon's address file, else\n"
	      "  " CLIENT_DEFAULT_URL ". The address file (--addr-file, else $FUSEBOX_ADDR_FILE,\n"
	      "  else " CLIENT_ADDR_FILE_DEFAULT " without a URL) is read again while the\n"
	      "  daemon does not answer, so the console follows it to another port.\n"
	      "Token: --token-file (token = first field of the first line), else $FUSEBOX_TOKEN,\n"
	      "else $FUSEBOX_TOKEN_FILE, else the daemon's tokens file when readable.\n"
	      "--json prints the daemon's JSON. The global flags may also follow the verb;\n"
	      "fusebox VERB --help shows one verb. Exit: 0 ok, 1 refused or failed, 2 usage.\n"
	      "\n"
	      "Fleet: --fleet FILE (else $FUSEBOX_FLEET; lines NAME URL [TOKEN_FILE] [GROUP])\n"
	      "runs status, reviews and the fan-outs level, weights and breaker (these also take\n"
	      "--group G, --hosts H1,H2, --action-id ID) over every host at once; --host NAME\n"
	      "runs any verb on that one host.\n"
	      "--prometheus URL (else $FUSEBOX_PROMETHEUS): the console's SLO screen shows the\n"
	      "fleet's SLOs from that Prometheus (key f); the verb: slo --prometheus URL.\n",
	      fp);
}

/* A needs_state verb: no arguments, then GET /v1/state, printed (--json) or parsed for fn. */
static int
verb_run_on_state(const struct verb *v, struct client *c, int json, int argc, char **argv)
{
	struct client_resp resp;
	struct state_v *s = NULL;
	struct args a;
	int rc;

	if ((rc = cli_args_parse(argc, argv, NULL, NULL, &a)) != 0 || a.npos != 0)
		return rc ? rc : cli_usage_error("%s takes no arguments", v->name);
	rc = get_state(c, json, &resp, &s);
	if (rc != 0)
		return rc;
	if (json)
		cli_print_json(&resp);
	else
		rc = v->fn(c, json, argc, argv, s);
	state_free(s);
	client_resp_free(&resp);
	return rc;
}

int
cli_run(struct client *c, int json, int argc, char **argv)
{
	const struct verb *v = verb_find(argv[0]);
	int rc;

	fmt_set_ascii(!fmt_locale_utf8());
	if (v == NULL)
		rc = cli_usage_error("unknown verb \"%s\"", argv[0]);
	else if (v->needs_state)
		rc = verb_run_on_state(v, c, json, argc, argv);
	else
		rc = v->fn(c, json, argc, argv, NULL);
	return rc;
}
