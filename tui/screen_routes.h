#pragma once
/* screen_routes: the console's Routes screen (see the design note in screen_routes.c). UI thread.
 */
#include "console.h"

extern const struct screen screen_routes;

/* Switch to the Routes screen with route selected. */
void screen_routes_select(struct console *c, const char *route);
