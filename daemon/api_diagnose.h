#pragma once
/*
 * api_diagnose: GET /v1/diagnose (API.md "Diagnosis"): reads the window's
 * rows through named queries on a reader of its own and hands them to
 * core/diagnose.c. The handler runs on the engine thread; the reads and
 * the analysis on one worker thread, whose answer is sent back on the
 * engine thread.
 */
#include "http.h"

struct engine;

/* Refuse new diagnoses and join the running worker. Before the drain (daemon_free). */
void api_diagnose_stop(struct engine *e);
