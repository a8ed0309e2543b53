#pragma once
/* screen_breakers: the console's Breakers screen (see the design note in screen_breakers.c). UI
 * thread. */
#include "console.h"

extern const struct screen screen_breakers;

/* A breaker state in words ("half-open", "forced open") and its colour. */
const char *breaker_words(enum breaker_st st, const char *raw);
enum colour breaker_colour(enum breaker_st st);
