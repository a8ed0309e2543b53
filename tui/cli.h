#pragma once
/*
 * cli: the verbs of `fusebox VERB ARGS...` — status, routes, breakers,
 * reviews, slo, alerts, events, level, weights, breaker, review, call, and
 * report (offline, see report.h). Human tables by default; with --json
 * the daemon's JSON as it came. Exit codes: CLI_OK, CLI_FAILED (refused,
 * failed, unreachable), CLI_USAGE. Main thread; blocking requests.
 */
#include <stdio.h>

#include "client.h"

enum cli_exit { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* Run argv[0] (the verb) with its arguments. */
int cli_run(struct client *c, int json, int argc, char **argv);
void cli_usage(FILE *fp);
