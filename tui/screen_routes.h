#pragma once
/* screen_routes: the console's Routes screen (see the design note in screen_routes.c). UI thread.
 */
#include "console_ctx.h"

extern const struct screen screen_routes;
