#pragma once
/*
 * widgets: what the console's screens share on the terminal — the one
 * colour table (with its monochrome fallback: bold / reverse / dim), text
 * output fitted to a number of columns (wide-char aware), list selection
 * and scrolling, a one-line text field, the modal form (fields, then a
 * y/n confirmation), the help overlay, and how a breaker state reads
 * (words and colour, on the Breakers and Routes screens). UI thread only
 * (ncurses).
 *
 * Everything draws into stdscr (the virtual screen); the console erases
 * it, lets the screens draw, and calls doupdate() once, so ncurses sends
 * only the cells that changed.
 */
#include <curses.h>
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "model.h"

/* Keys: a character is its code point; a curses function key is FK(code). */
#define FK(k)	  (0x1000000 | (k))
#define K_ESC	  27
#define K_TAB	  '\t'
#define K_ENTER	  '\r'
#define K_CTRL(c) ((c)&0x1f)

enum colour {
	C_NORMAL,
	C_TITLE,
	C_TAB,
	C_TAB_ACTIVE,
	C_STATUS,
	C_STATUS_BAD,
	C_HEADER,
	C_SEL,
	C_OK,
	C_WARN,
	C_BAD,
	C_DIM,
	C_ACCENT,
	C_FORM,
	C_FIELD,
	C_MSG_OK,
	C_MSG_ERR,
	C__COUNT
};

/* Set up colour pairs; mono (no colours, or NO_COLOR) uses attributes only. */
void ui_colours_init(int mono);
int ui_is_mono(void);
attr_t ui_attr(enum colour c);
/* While on, data colours (C_NORMAL, C_OK, C_WARN, C_BAD, C_ACCENT) draw greyed. */
void ui_grey(int on);

/*
 * Put s at (y, x) in at most cols columns (see fmt_fit; flags FMT_PAD,
 * FMT_RIGHT, UI_SEL: on the selected row, where a data colour shows
 * reversed and the rest in C_SEL). Returns the columns used. Never
 * writes past the screen.
 */
#define UI_SEL 8
int ui_put(int y, int x, int cols, enum colour c, const char *s, int flags);
int ui_printf(int y, int x, int cols, enum colour c, int flags, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Fill cols columns from (y, x) with spaces in colour c. */
void ui_fill(int y, int x, int cols, enum colour c);

/* A selection in a list of n rows shown page rows at a time. */
struct listsel {
	int sel;
	int top;
};

/* j/k, arrows, PgUp/PgDn, Home/End, g/G: 1 when the key was one of them. */
int listsel_key(struct listsel *ls, int key, int n, int page);
/* Keep sel in 0..n-1 and visible in top..top+page-1. */
void listsel_clamp(struct listsel *ls, int n, int page);

#define FIELD_TEXT_MAX 512

enum field_kind { FIELD_TEXT, FIELD_CHOICE };

struct field {
	char label[32];
	enum field_kind kind;
	char hint[64];
	const char *const *choices; /* FIELD_CHOICE: static strings */
	int nchoices;
	int choice;
	wchar_t text[FIELD_TEXT_MAX]; /* FIELD_TEXT: code points */
	int len;
	int cur;
};

/* Set a text field from UTF-8 (cursor at the end). */
void field_set(struct field *f, const char *utf8);
/* The text as UTF-8 (always NUL-terminated; cut at outsz). */
void field_get(const struct field *f, char *out, size_t outsz);
/* Editing keys (characters, Backspace, Delete, arrows, Home/End, ^U, ^W): 1 when handled. */
int field_key(struct field *f, int key);
/* Draw in cols columns; *cx receives the cursor's column. */
void field_draw(const struct field *f, int y, int x, int cols, enum colour col, int *cx);

#define FORM_FIELDS_MAX 16

struct console;

/*
 * A modal form: fields, then a confirmation page ("summary", y/n). check()
 * validates the fields client-side and writes the summary (0), or writes
 * error and returns non-zero (the form stays open). apply() sends the
 * change. A form without fields opens on its confirmation page (check is
 * still called first).
 */
struct form {
	int active;
	char title[128];
	struct field fields[FORM_FIELDS_MAX];
	int nfields;
	int focus;
	int confirming;
	char summary[1024];
	char again[256]; /* set by check(): a second y is asked for, after this text */
	int asked;
	char error[512];
	char subject[128]; /* context for check/apply: route, backend ... */
	char extra[128];
	int64_t id;
	int reopen_on_400; /* the daemon's 400 reopens the form with its message */
	int (*check)(struct form *f, struct console *c);
	void (*apply)(struct form *f, struct console *c);
};

enum form_res { FORM_GOING, FORM_CANCEL, FORM_CONFIRM };

/* Start f (check() runs at once when there are no fields). */
void form_open(struct form *f, struct console *c);
enum form_res form_key(struct form *f, struct console *c, int key);
/* Draw centred; *cy and *cx get the cursor position (-1: hide it). */
void form_draw(const struct form *f, int *cy, int *cx);

/* A centred box with title and NULL-terminated lines ("key  what"). */
void help_draw(const char *title, const char *const *lines);

/* Indices of the rows that pass a filter; grows, never shrinks (no per-frame allocation). */
struct vislist {
	int *idx;
	int n;
	int cap;
};

void vislist_reset(struct vislist *v);
void vislist_add(struct vislist *v, int i);

/*
 * Table rows. A column spec gives a title, a width (0: the rest of the
 * line), FMT_PAD / FMT_RIGHT and a priority: when the row is too short the
 * columns of the highest prio are left out (the header ends with a
 * marker). Cells are one space apart. row_cell() draws the next cell (on
 * the selected row reversed, see UI_SEL) and skips cells that no longer
 * fit.
 */
struct colspec {
	const char *title;
	int width;
	int flags;
	int prio; /* 0: always shown; else left out, highest first, when the row is short */
	int min;  /* width 0: the columns it wants before others are left out (>= 4) */
};

struct row {
	int y;
	int x;
	int cols;
	int sel;
	const struct colspec *spec;
	int n;
	int i;
	unsigned long hidden; /* columns left out (bit i) */
};

void ui_header(int y, int cols, const struct colspec *spec, int n);
void row_begin(struct row *r, int y, int cols, int sel, const struct colspec *spec, int n);
void row_cell(struct row *r, enum colour c, const char *text);
/* Columns left on the row after the cells drawn so far. */
int row_left(const struct row *r);
/* Whether column i is drawn at this width. */
int row_shown(const struct row *r, int i);

/* A breaker state in words ("half-open", "forced open") and its colour. */
const char *breaker_words(enum breaker_st st, const char *raw);
enum colour breaker_colour(enum breaker_st st);
