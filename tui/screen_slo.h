#pragma once
/* screen_slo: the console's SLO screen (see the design note in screen_slo.c). UI thread. */
#include "console_ctx.h"

extern const struct screen screen_slo;

/*
 * Fleet mode: the fleet's SLOs from Prometheus at url (--prometheus URL,
 * else $FUSEBOX_PROMETHEUS; NULL or "": none, f says so). Set before the
 * console runs.
 */
void screen_slo_prometheus(const char *url);
const char *screen_slo_prometheus_url(void);
/* Show (1) or leave (0) fleet mode: starts / pauses the background fetch. */
void screen_slo_fleet_show(int on);
/*
 * Stop fetching and wait (bounded: twice the fetch timeout) for a fetch
 * under way, so that curl_global_cleanup() finds no transfer running.
 */
void screen_slo_fleet_stop(void);
/*
 * Draw the fleet SLO view (status line, the selected route's windows,
 * budget, 1 h sparkline, firing fleet alerts) in rows lines from top. UI
 * thread; never blocks on Prometheus. For the fleet console too.
 */
void screen_slo_fleet_draw(int top, int rows, int cols, int64_t now_wall);
