#pragma once
/*
 * fleet_console: the console over a fleet (`fusebox --fleet FILE` without
 * a verb). The first screen is the fleet overview: per route the hosts at
 * each level, service / smart availability over 1 h summed over the
 * answering hosts' counters (good / total added up, not a mean of
 * percentages), breakers open, firing alerts and pending reviews; below,
 * breakers open per backend across the fleet. Hosts that do not answer are
 * named with since when and the error, and the sums say they are partial.
 * Enter on a route lists its hosts; Enter on a host opens the
 * single-daemon screens for it (console.h console_run_host); Esc goes back.
 *
 * A poller thread asks every due host GET /v1/state, /v1/slo and
 * /v1/alerts on one curl multi (fleet_fetch.h), at most 1 Hz per host,
 * backing off on hosts that fail (fleet.h fleet_poll_*). The sums are pure
 * (fleet_sums_build) and unit-tested.
 */
#include "fleet.h"
#include "fleet_sums.h"

/*
 * Run the fleet console until q. token / role: for hosts whose line names
 * no token file. 0, or 1 when it cannot start (message printed).
 */
int fleet_console_run(const struct fleet *f, const char *token, int role, const char *path);
