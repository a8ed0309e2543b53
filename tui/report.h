#pragma once
/*
 * report: `fusebox report --db FILE [--since T]` — an offline report read
 * straight from the SQLite database (read-only; it works while the daemon
 * is down): service and smart availability per route, degradations by
 * reason, the top validation failures. T is RFC3339 or a duration back
 * from now (default 24h). Main thread.
 */

/* The exit codes, the same numbers as cli.h's (the CLI passes them on). */
enum report_exit { REPORT_OK = 0, REPORT_FAILED = 1, REPORT_USAGE = 2 };

/* argv[0] is "report". Returns an exit code (REPORT_*). */
int report_run(int json, int argc, char **argv);
