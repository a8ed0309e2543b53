#pragma once
/*
 * why: the daemon's diagnosis in the console (GET /v1/diagnose, API.md
 * "Diagnosis") — the Why panel that `w` opens on the Overview and Routes
 * screens, and the Overview's "why:" line under a degraded route's cause.
 *
 * A diagnosis runs on the daemon's worker thread, one at a time (a second
 * is answered 503 diagnose_busy): the console asks on the fetch thread
 * (fetch_get, FETCH_DIAGNOSE), one request at a time, retries once after
 * a busy answer, and never waits for it — the panel says "diagnosing…"
 * meanwhile. While the Overview is shown, the routes with a cause line
 * are diagnosed in the background at most every WHY_BG_MS (none while
 * every route is healthy); the Overview shows the first cause of an answer
 * younger than WHY_FRESH_MS. The state is this module's own (like a
 * screen's), so console_ctx.h need not know it. UI thread only.
 */
#include <stdint.h>

#include "fetch.h"
#include "model.h"

#define WHY_SINCE      "15m" /* the window asked for: the diagnosis' default */
#define WHY_TIMEOUT_MS 5000  /* a diagnosis reads up to 2 s, then analyses */
#define WHY_BG_MS      10000 /* background diagnoses at most this often */
#define WHY_FRESH_MS   30000 /* an older answer is not shown on the Overview */
#define WHY_RETRY_MS   1000  /* after 503 diagnose_busy (its Retry-After: 1) */
#define WHY_MISSING_MS 60000 /* the daemon has no /v1/diagnose: ask again after */

struct console;
struct fetch_result;

/* Open the panel on route (and ask the daemon); close it; whether it is up. */
void why_open(struct console *c, const char *route);
void why_close(void);
int why_active(void);
/* Send what is due: the panel's request, a retry, a background diagnosis. */
void why_tick(struct console *c);
/* A FETCH_DIAGNOSE result (the taker still frees r; its diag may be stolen). */
void why_merge(struct console *c, struct fetch_result *r);
/*
 * The Overview's line for route: "92% first_byte_timeout on primary-v2
 * (...)" from the freshest answer that has it (younger than WHY_FRESH_MS);
 * 0 when there is none.
 */
int why_line(const struct console *c, const char *route, char *out, size_t outsz);
/* Draw the panel over the body (rows lines from row top). */
void why_draw(struct console *c, int top, int rows, int cols);
/*
 * A key while the panel is up: 1 when the panel took it; 0 when it closed
 * the panel (or left it up, for '?') and the console should act on the key.
 */
int why_key(struct console *c, int key);
/* Drop what is kept (at the console's end). */
void why_free(void);

extern const char *const why_help[];
#define WHY_HINTS "j/k move  Enter whole line  r diagnose again  Esc close"
