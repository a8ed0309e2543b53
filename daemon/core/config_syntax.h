#pragma once
/*
 * config_syntax: a strict RFC 8259 scanner that turns a JSON parse failure
 * into NAME:LINE:COL and the problem, for the config loader. Pure; runs on
 * the main thread.
 */
#include <stddef.h>

/*
 * NULL when the len bytes of text are strict JSON, else a new string
 * "NAME:LINE:COL: invalid JSON: problem" (caller frees).
 */
char *config_syntax_check(const char *name, const char *text, size_t len);
