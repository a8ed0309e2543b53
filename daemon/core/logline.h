#pragma once
/*
 * logline: one log entry rendered as one line, plain text or a JSON object,
 * with an optional syslog priority prefix ("<3>") for journald. Every string
 * is escaped: control characters, C1 controls and bytes that are not UTF-8
 * become \xNN, so no caller-supplied text can forge a line or send a
 * terminal escape. Pure; any thread.
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "util.h"

/* What a line is known to be about; NULL members are left out. */
struct logline_ctx {
	const char *request_id;
	const char *route;
	const char *backend;
};

/* Append s to b with every control, C1 and non-UTF-8 byte as \xNN. */
void logline_escape(struct buf *b, const char *s);
/* The syslog priority of a level: debug 7, info 6, warn 4, error 3. */
int logline_priority(enum log_level level);
/*
 * Render one entry into b (reset first), newline-terminated. Text:
 * "TIME LEVEL MODULE: MSG[ route=R][ backend=B][ request_id=ID]"; JSON:
 * {"time","level","module","msg"[,"request_id","route","backend"]}. With
 * prefix the line starts with "<N>" (logline_priority). ctx may be NULL.
 */
void logline_render(struct buf *b, enum log_format format, int prefix, int64_t wall_ms,
		    enum log_level level, const char *module, const struct logline_ctx *ctx,
		    const char *msg);
