#pragma once
/*
 * report: `fusebox report --db FILE [--since T]` — an offline report read
 * straight from the SQLite database (read-only; it works while the daemon
 * is down): service and smart availability per route, degradations by
 * reason, the top validation failures. T is RFC3339 or a duration back
 * from now (default 24h). Main thread.
 */

/* argv[0] is "report". Returns an exit code (0, 1 failed, 2 usage). */
int report_run(int json, int argc, char **argv);
