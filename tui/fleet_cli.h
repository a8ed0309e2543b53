#pragma once
/*
 * fleet_cli: `fusebox --fleet FILE VERB` — status (per route, summed over
 * the hosts that answer; those that do not are named with the error),
 * level (fan-out with a shared action id; exit 0 only when every host
 * applied it) and reviews (merged by due time). --host NAME runs any verb
 * against that one host as without a fleet. Main thread; blocking.
 */
#include "fleet.h"

/*
 * Run argv[0] over the fleet. token / role: the token of hosts whose line
 * names no token file (may be NULL). Exit codes as cli.h.
 */
int fleet_cli_run(const struct fleet *f, const char *token, int role, const char *host, int json,
		  int argc, char **argv);
