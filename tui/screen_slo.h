#pragma once
/* screen_slo: the console's SLO screen (see the design note in screen_slo.c). UI thread. */
#include "console_ctx.h"

extern const struct screen screen_slo;
