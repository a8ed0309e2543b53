#pragma once
/*
 * log: one line per entry on stderr, text ("2026-11-30T12:00:00.000Z info
 * engine: ...") or one JSON object (log.format), each string escaped
 * (logline.h), with a syslog priority prefix when stderr is the journal.
 * Thread-safe (one write per line). Secrets never reach a log line:
 * callers pass names, never keys or tokens.
 */
#include "config.h"
#include "logline.h"

void log_set_level(enum log_level level);
void log_set_format(enum log_format format);
/*
 * Whether stderr is the journal: $JOURNAL_STREAM names stderr's device and
 * inode (systemd.exec(5)). Checked once at start-up and after a fork.
 */
void log_detect_journal(void);
void log_msg(enum log_level level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, with the request, route and backend the entry is about (ctx may be NULL). */
void log_ctx(enum log_level level, const char *module, const struct logline_ctx *ctx,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define log_debug(m, ...) log_msg(LOG_LEVEL_DEBUG, m, __VA_ARGS__)
#define log_info(m, ...)  log_msg(LOG_LEVEL_INFO, m, __VA_ARGS__)
#define log_warn(m, ...)  log_msg(LOG_LEVEL_WARN, m, __VA_ARGS__)
#define log_error(m, ...) log_msg(LOG_LEVEL_ERROR, m, __VA_ARGS__)
