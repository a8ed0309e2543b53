#pragma once
/* screen_events: the console's Events screen (see the design note in screen_events.c). UI thread.
 */
#include "console_ctx.h"

extern const struct screen screen_events;
