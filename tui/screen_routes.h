#pragma once
/* screen_routes: the console's Routes screen (see the design note in screen_routes.c). UI thread.
 */
#include "console_ctx.h"

extern const struct screen screen_routes;
/* Open the force-level form for route r (the Overview's L opens it too). */
void routes_level_form(struct console *c, const struct route_v *r);
