/*
 * log: leveled lines on stderr (see log.h). The level and format are set
 * by the main thread (start-up) and the engine thread (reload) and read by
 * any thread: plain ints, a stale read costs one line in the old format.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "util.h"

#define LOG_MSG_MAX  8192
#define LOG_LINE_MAX (1u << 20) /* escaping grows a message at most 8-fold */

static enum log_level log_level = LOG_LEVEL_INFO;
static enum log_format log_format = LOG_FORMAT_TEXT;
static int log_journal;

void
log_set_level(enum log_level level)
{
	log_level = level;
}

void
log_set_format(enum log_format format)
{
	log_format = format;
}

void
log_detect_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	log_journal = js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
		      fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
		      (unsigned long long)st.st_ino == ino;
}

static void
log_vemit(enum log_level level, const char *module, const struct logline_ctx *ctx, const char *fmt,
	  va_list ap)
{
	char msg[LOG_MSG_MAX];
	struct buf b;

	vsnprintf(msg, sizeof msg, fmt, ap);
	buf_init(&b, LOG_LINE_MAX);
	logline_render(&b, log_format, log_journal, clock_wall_ms(), level, module, ctx, msg);
	if (b.data != NULL)
		fwrite(b.data, 1, b.len, stderr);
	buf_free(&b);
}

void
log_msg(enum log_level level, const char *module, const char *fmt, ...)
{
	va_list ap;

	if (level < log_level)
		return;
	va_start(ap, fmt);
	log_vemit(level, module, NULL, fmt, ap);
	va_end(ap);
}

void
log_ctx(enum log_level level, const char *module, const struct logline_ctx *ctx, const char *fmt,
	...)
{
	va_list ap;

	if (level < log_level)
		return;
	va_start(ap, fmt);
	log_vemit(level, module, ctx, fmt, ap);
	va_end(ap);
}
