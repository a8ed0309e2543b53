#pragma once
/* screen_reviews: the console's Reviews screen (see the design note in screen_reviews.c). UI
 * thread. */
#include "console_ctx.h"

extern const struct screen screen_reviews;
