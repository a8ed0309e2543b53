#pragma once
/*
 * cli_int: what the CLI's files share (cli.c: the helpers, the verbs table
 * and dispatch; cli_read.c: the verbs that read; cli_write.c: the verbs
 * that change something). Not part of the console's public face. Main
 * thread.
 */
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "client.h"
#include "model.h"

#define CONTROL_TIMEOUT_MS 5000

/*
 * A verb of the verbs table. A needs_state verb takes no arguments: cli_run
 * checks that, fetches GET /v1/state and, with --json, prints it without
 * calling fn; otherwise fn gets the parsed state (s, borrowed). Every other
 * verb gets s == NULL and parses its own arguments.
 */
typedef int cli_verb_fn(struct client *c, int json, int argc, char **argv, const struct state_v *s);

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

int cli_args_parse(int argc, char **argv, const char *const *takes, const char *const *flags,
		   struct args *a);
/* Print "fusebox: MESSAGE" and the --help hint to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * One request: 0 with *out set on a 2xx answer; CLI_FAILED after printing
 * why (unreachable, or the daemon's error) otherwise.
 */
int cli_request(struct client *c, const char *method, const char *path, const char *body,
		long timeout_ms, struct client_resp *out);
/*
 * cli_request(), printing first (verbose) the answer's status and the
 * headers that say what happened to it — traceparent, tracestate,
 * X-Fusebox-*, X-Request-ID, Retry-After — whatever its status.
 */
int cli_request_v(struct client *c, const char *method, const char *path, const char *body,
		  long timeout_ms, int verbose, struct client_resp *out);
/* Those header lines of r ("< traceparent: 00-..."), to fp. Pure but for the output. */
void cli_print_headers(FILE *fp, const struct client_resp *r);
/* The answer's body as it came, newline-terminated. */
void cli_print_json(const struct client_resp *r);
/* RFC3339 of a wall-clock ms, "-" when unset (<= 0). */
void cli_rfc3339(int64_t ms, char *out, size_t outsz);
/* "B1=W1 B2=W2(canary)". */
void cli_targets_text(const struct route_v *r, char *out, size_t outsz);

cli_verb_fn cli_verb_status, cli_verb_routes, cli_verb_breakers, cli_verb_reviews, cli_verb_slo,
	cli_verb_alerts, cli_verb_events;
cli_verb_fn cli_verb_level, cli_verb_weights, cli_verb_breaker, cli_verb_review, cli_verb_call,
	cli_verb_reload;
/* The verbs' options that take a value, named once for the verb and for cli_globals_take. */
extern const char *const cli_reviews_takes[],
	*const cli_events_takes[], *const cli_events_flags[],
					   *const cli_level_takes[],
						   *const cli_breaker_takes[],
							   *const cli_review_takes[],
								   *const cli_call_takes[];
/* slo's options: --prometheus URL (the fleet's SLOs, prom.h). */
extern const char *const cli_slo_takes[];
/* cli_diagnose.c: why a route is degraded (GET /v1/diagnose). */
cli_verb_fn cli_verb_diagnose;
extern const char *const cli_diagnose_takes[];
/* A review row's id, time to its due (or "-") and confidence (or "-") as table cells. */
struct review_v;
void cli_review_cells(const struct review_v *r, int64_t now, char *id, size_t idsz, char *due,
		      size_t duesz, char *conf, size_t confsz);
