#pragma once
/*
 * util: allocation helpers that abort on out-of-memory (small fixed
 * allocations only, STYLE.md rule 13), bounded growable buffers, and small
 * string helpers. Thread-safe: no shared state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)     ((a) < (b) ? (a) : (b))
#define MAX(a, b)     ((a) > (b) ? (a) : (b))

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh string (caller frees); aborts on OOM. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A growable byte buffer with a ceiling. data is always NUL-terminated
 * (the NUL is not counted in len). Appending past max fails with -E2BIG and
 * leaves the buffer unchanged.
 */
struct buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

void buf_init(struct buf *b, size_t max);
int buf_append(struct buf *b, const void *p, size_t n);
/*
 * The non-aborting variants, for what a request sizes (STYLE.md rule 13):
 * buf_try_append() is buf_append() answering -ENOMEM (the buffer
 * unchanged) where buf_append() aborts; buf_init_fixed() allocates cap
 * bytes at once (max = cap - 1, so no append ever reallocates: past it,
 * -E2BIG) and answers -ENOMEM, or -EINVAL for cap 0, without aborting.
 */
int buf_try_append(struct buf *b, const void *p, size_t n);
int buf_init_fixed(struct buf *b, size_t cap);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_reset(struct buf *b);
/* Hand the data over to the caller (who frees it); the buffer is emptied. */
char *buf_steal(struct buf *b);
void buf_free(struct buf *b);

/* Parse a whole decimal integer; 0 or -EINVAL / -ERANGE. */
int parse_int64(const char *s, int64_t *out);

/* FNV-1a over s, continuing from h (start with STR_HASH_SEED): hash-table keys. */
#define STR_HASH_SEED 2166136261u
uint32_t str_hash(uint32_t h, const char *s);

/* Constant-time comparison of two NUL-terminated strings (auth tokens). */
int str_consttime_eq(const char *a, const char *b);

/* Format epoch milliseconds as RFC3339 UTC with milliseconds into out (>= 32 bytes). */
void time_format_rfc3339(int64_t wall_ms, char *out, size_t outlen);
/* Parse RFC3339 ("2026-11-30T12:00:00Z", optional fraction / offset) to epoch ms. */
int time_parse_rfc3339(const char *s, int64_t *wall_ms);
