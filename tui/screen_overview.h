#pragma once
/* screen_overview: the console's Overview screen (see the design note in screen_overview.c). UI
 * thread. */
#include "console_ctx.h"

extern const struct screen screen_overview;
