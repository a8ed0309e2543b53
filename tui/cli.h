#pragma once
/*
 * cli: the verbs of `fusebox VERB ARGS...` — status, routes, breakers,
 * reviews, slo, alerts, events, level, weights, breaker, review, call,
 * reload, and report (offline, see report.h). Human tables by default; with --json
 * the daemon's JSON as it came. Exit codes: CLI_OK, CLI_FAILED (refused,
 * failed, unreachable), CLI_USAGE. Main thread; blocking requests.
 */
#include <stdio.h>

#include "client.h"

enum cli_exit { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* The global flags, wherever they stand (fusebox status --json = fusebox --json status). */
struct cli_globals {
	const char *url;
	const char *token_file;
	const char *fleet;     /* --fleet FILE (fleet_cli.h) */
	const char *host;      /* --host NAME: one host of the fleet */
	const char *addr_file; /* --addr-file FILE: where the daemon says it listens */
	int json;
	int help;
	int version;
};

/*
 * If argv[*i] is a global flag, record it in g (advancing *i past a value
 * given as the next argument) and return 1; 0 when it is not one;
 * CLI_USAGE (message printed) when its value is missing.
 */
int cli_global_flag(int argc, char **argv, int *i, struct cli_globals *g);
/*
 * Take the global flags out of a verb's arguments (argv[0] is the verb)
 * up to "--", leaving the values of the verb's own options alone. Returns
 * the new argc, or -CLI_USAGE (message printed).
 */
int cli_globals_take(int argc, char **argv, struct cli_globals *g);
/* Run argv[0] (the verb) with its arguments. */
int cli_run(struct client *c, int json, int argc, char **argv);
void cli_usage(FILE *fp);
/* One verb's usage (fusebox VERB --help); CLI_OK, or CLI_USAGE for an unknown verb. */
int cli_verb_usage(FILE *fp, const char *verb);
