#pragma once
/*
 * rules: the rule engine, the rung that is always there (CONFIG.md
 * "rules"). Ordered rules, first match wins: "any" keywords (substring,
 * UTF-8, case-insensitive for ASCII; keywords are lower-cased at config
 * load) and "regex" (POSIX extended, compiled at config load), then the
 * optional default. Pure, allocation-free on the hot path, microseconds per
 * input. Runs on the engine thread.
 */
#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"

enum rules_e {
	RULES_E_NOMATCH = 1, /* no rule matched and there is no default */
	RULES_E_DISABLED,    /* the route has no rules section */
};

struct rules_hit {
	const cJSON *result; /* borrowed from the config */
	double confidence;
	int index; /* index of the matching rule, -1 for the default */
};

/* Evaluate rc against input (len bytes, need not be NUL-terminated). */
int rules_eval(const struct rules_cfg *rc, const char *input, size_t len, struct rules_hit *hit);
