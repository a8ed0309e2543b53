#pragma once
/*
 * metrics_page: the one writer of the /metrics page (Prometheus text
 * format 0.0.4), every family in page order. Engine thread.
 */
#include <stddef.h>
#include <stdint.h>

struct engine;

/*
 * The page of e at now_wall_ms / now_mono_ms into *body (caller frees)
 * and *len. 0, or -E2BIG when it outgrows its 16 MiB ceiling (then *body
 * is NULL). A scrape ticks the breakers (their state is read at
 * now_mono_ms), which may emit breaker events.
 */
int metrics_page_write(struct engine *e, int64_t now_wall_ms, int64_t now_mono_ms, char **body,
		       size_t *len);
