#pragma once
/*
 * fmt: pure text helpers shared by the console and the CLI — display width
 * of UTF-8 text (wide characters take two columns), fitting and wrapping
 * text to a number of columns, durations, percentages, latencies,
 * sparklines and bars, and parsing durations / RFC3339 instants.
 *
 * UTF-8 is decoded here, not by mbrtowc, so the result does not depend on
 * LC_CTYPE except for wcwidth(). fmt_set_ascii(1) (a locale that is not
 * UTF-8) makes every output pure ASCII: non-ASCII characters become '?',
 * the ellipsis "~", sparklines and bars use ASCII ramps. Control characters
 * and invalid bytes are always shown as '?' (never sent to the terminal).
 * Set the mode once at start-up; everything else is pure and thread-safe.
 */
#include <stddef.h>
#include <stdint.h>

#define FMT_PAD	  1 /* fill with spaces up to exactly cols columns */
#define FMT_RIGHT 2 /* right-align (implies FMT_PAD) */

void fmt_set_ascii(int ascii);
/* Whether LC_CTYPE's codeset is UTF-8 (after setlocale). */
int fmt_locale_utf8(void);
int fmt_is_ascii(void);

/*
 * Decode one UTF-8 character at s (NUL-terminated): its code point goes to
 * *cp (0xFFFD for an invalid or truncated sequence) and the number of bytes
 * it took is returned (0 at the terminating NUL).
 */
int fmt_utf8_next(const char *s, uint32_t *cp);
/* Encode cp as UTF-8 into out (at least 4 bytes); returns the byte count. */
int fmt_utf8_put(uint32_t cp, char *out);

/* Display columns of s as fmt_fit() would render it (no truncation). */
int fmt_width(const char *s);

/*
 * Copy s into out (outsz bytes, always NUL-terminated) taking at most cols
 * columns; when s is wider it is cut at a character boundary and ends with
 * the ellipsis. A wide character that would straddle the edge is dropped
 * (and padding fills its place with FMT_PAD). flags: FMT_PAD, FMT_RIGHT.
 * Returns the columns used. cols <= 0 yields "".
 */
int fmt_fit(char *out, size_t outsz, const char *s, int cols, int flags);

/*
 * Take the next display line of at most cols columns from *pp: breaks at
 * '\n', else at the last space that fits, else mid-word. The line (without
 * the break) goes to out; *pp advances past it. Returns 1 when a line was
 * produced, 0 when *pp was already at the end.
 */
int fmt_wrap(const char **pp, int cols, char *out, size_t outsz);

/*
 * Durations: "850ms" (only when show_ms and |ms| < 1 s), "45s", "3m05s",
 * "2h07m", "3d04h"; negative values get a leading '-'.
 */
void fmt_duration(char *out, size_t outsz, int64_t ms, int show_ms);
/* A fraction as a percentage with decimals ("99.95%"; < 0: "%.4g", 99.9%); NaN gives "-". */
void fmt_pct(char *out, size_t outsz, double frac, int decimals);
/* Milliseconds as "850ms" / "12.3s"; NaN or negative gives "-". */
void fmt_latency(char *out, size_t outsz, double ms);
/* A rate with one decimal ("4.2"), or "-" for NaN. */
void fmt_rate(char *out, size_t outsz, double v);

/*
 * Sparkline of n samples (oldest first) in exactly width glyphs: when
 * n > width consecutive samples are averaged into width buckets; when
 * n < width the line is right-aligned (leading spaces). NaN samples are
 * skipped; an all-NaN bucket is a space. The scale runs lo..hi; a NaN lo
 * or hi is taken from the data (with a zero span every glyph is the
 * lowest). Returns bytes written (excluding the NUL).
 */
size_t fmt_spark(char *out, size_t outsz, const float *v, int n, int width, double lo, double hi);

/* A bar of width glyphs filled to frac (clamped to 0..1). */
void fmt_bar(char *out, size_t outsz, double frac, int width);

/*
 * Parse a duration: "90" (seconds), "90s", "30m", "1h", "2d", "1h30m",
 * "500ms". 0 or -EINVAL / -ERANGE.
 */
int fmt_parse_duration(const char *s, int64_t *ms);
/* RFC3339, or a duration meaning "that long before now_ms". 0 or -EINVAL. */
int fmt_parse_since(const char *s, int64_t now_ms, int64_t *since_ms);
/* Epoch ms as local "HH:MM:SS" (same day as now_ms) or "MM-DD HH:MM". */
void fmt_clock(char *out, size_t outsz, int64_t wall_ms, int64_t now_ms);
/*
 * The text inside the balanced parentheses that open at open (which points
 * at a '('), cut to outsz - 1 bytes, into out; to the end of the string
 * when they never close.
 */
void fmt_paren_inner(const char *open, char *out, size_t outsz);
