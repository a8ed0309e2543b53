/*
 * log: leveled lines on stderr.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

#include "clock.h"
#include "util.h"

static enum log_level log_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void
log_set_level(enum log_level level)
{
	log_level = level;
}

void
log_msg(enum log_level level, const char *module, const char *fmt, ...)
{
	char ts[40], line[1024];
	va_list ap;

	if (level < log_level)
		return;
	time_format_rfc3339(clock_wall_ms(), ts, sizeof ts);
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s %s %s: %s\n", ts, level_names[level], module, line);
}
