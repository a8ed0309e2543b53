#pragma once
/* screen_breakers: the console's Breakers screen (see the design note in screen_breakers.c). UI
 * thread. */
#include "console_ctx.h"

extern const struct screen screen_breakers;
