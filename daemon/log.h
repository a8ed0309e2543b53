#pragma once
/*
 * log: one line per event on stderr, "2026-11-30T12:00:00.000Z info engine: ...".
 * Thread-safe (one fprintf per line). Secrets never reach a log line: callers
 * pass names, never keys or tokens.
 */
#include "config.h"

void log_set_level(enum log_level level);
void log_msg(enum log_level level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(m, ...) log_msg(LOG_LEVEL_DEBUG, m, __VA_ARGS__)
#define log_info(m, ...)  log_msg(LOG_LEVEL_INFO, m, __VA_ARGS__)
#define log_warn(m, ...)  log_msg(LOG_LEVEL_WARN, m, __VA_ARGS__)
#define log_error(m, ...) log_msg(LOG_LEVEL_ERROR, m, __VA_ARGS__)
