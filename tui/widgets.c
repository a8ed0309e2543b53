/*
 * widgets: colours, fitted text, lists, fields, forms, help, breaker states
 * (see widgets.h).
 *
 * The colour table is the only place colours are chosen. Each entry has
 * its colour-mode look (pair + attributes) and its monochrome look
 * (attributes alone), used when the terminal has no colours or NO_COLOR
 * is set. Pair i + 1 belongs to colour i. In monochrome the selection is
 * reverse video alone, warnings bold, errors bold and underlined, headers
 * underlined: four looks that never read alike.
 */
#include "widgets.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "util.h"

struct colour_def {
	short fg, bg;
	attr_t attr; /* with colours: added to the pair */
	attr_t mono; /* without colours: alone */
};

#define GREY (-2) /* bright black where the terminal has it, else white dimmed */

static const struct colour_def colour_table[C__COUNT] = {
	[C_NORMAL] = {-1, -1, A_NORMAL, A_NORMAL},
	[C_TITLE] = {COLOR_BLACK, COLOR_CYAN, A_NORMAL, A_REVERSE},
	[C_TAB] = {COLOR_BLACK, COLOR_CYAN, A_NORMAL, A_REVERSE},
	[C_TAB_ACTIVE] = {COLOR_WHITE, COLOR_BLUE, A_BOLD, A_BOLD},
	[C_STATUS] = {-1, -1, A_NORMAL, A_NORMAL},
	[C_STATUS_BAD] = {COLOR_WHITE, COLOR_RED, A_BOLD, A_REVERSE | A_BOLD},
	[C_HEADER] = {COLOR_BLACK, COLOR_GREEN, A_NORMAL, A_UNDERLINE},
	[C_SEL] = {COLOR_BLACK, COLOR_CYAN, A_NORMAL, A_REVERSE},
	[C_OK] = {COLOR_GREEN, -1, A_NORMAL, A_NORMAL},
	[C_WARN] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
	[C_BAD] = {COLOR_RED, -1, A_BOLD, A_BOLD | A_UNDERLINE},
	[C_DIM] = {GREY, -1, A_NORMAL, A_DIM},
	[C_ACCENT] = {COLOR_CYAN, -1, A_BOLD, A_BOLD},
	[C_FORM] = {COLOR_WHITE, COLOR_BLUE, A_NORMAL, A_NORMAL},
	[C_FIELD] = {COLOR_BLACK, COLOR_WHITE, A_NORMAL, A_UNDERLINE},
	[C_MSG_OK] = {COLOR_GREEN, -1, A_BOLD, A_BOLD},
	[C_MSG_ERR] = {COLOR_WHITE, COLOR_RED, A_BOLD, A_REVERSE | A_BOLD},
};

static int ui_mono;
static int ui_greyed;

void
ui_colours_init(int mono)
{
	int i;
	short fg;

	ui_mono = mono || !has_colors();
	if (ui_mono)
		return;
	if (start_color() == ERR || COLOR_PAIRS < C__COUNT + 1) {
		ui_mono = 1;
		return;
	}
	use_default_colors();
	for (i = 0; i < C__COUNT; i++) {
		fg = colour_table[i].fg;
		if (fg == GREY)
			fg = COLORS >= 16 ? 8 : COLOR_WHITE;
		init_pair((short)(i + 1), fg, colour_table[i].bg);
	}
}

int
ui_is_mono(void)
{
	return ui_mono;
}

void
ui_grey(int on)
{
	ui_greyed = on;
}

attr_t
ui_attr(enum colour c)
{
	if (ui_greyed && (c == C_NORMAL || c == C_OK || c == C_WARN || c == C_BAD || c == C_ACCENT))
		c = C_DIM;
	if (ui_mono)
		return colour_table[c].mono;
	return COLOR_PAIR(c + 1) | colour_table[c].attr |
	       (c == C_DIM && COLORS < 16 ? A_DIM : A_NORMAL);
}

int
ui_put(int y, int x, int cols, enum colour c, const char *s, int flags)
{
	char line[2048];
	int used;

	if (y < 0 || y >= LINES || x < 0 || x >= COLS)
		return 0;
	if (cols > COLS - x)
		cols = COLS - x;
	used = fmt_fit(line, sizeof line, s, cols, flags & (FMT_PAD | FMT_RIGHT));
	/* On the selected row a warning keeps its look, reversed. */
	if (flags & UI_SEL)
		attrset(c == C_OK || c == C_WARN || c == C_BAD || c == C_ACCENT
				? ui_attr(c) | A_REVERSE
				: ui_attr(C_SEL));
	else
		attrset(ui_attr(c));
	mvaddstr(y, x, line);
	attrset(A_NORMAL);
	return used;
}

int
ui_printf(int y, int x, int cols, enum colour c, int flags, const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	return ui_put(y, x, cols, c, text, flags);
}

void
ui_fill(int y, int x, int cols, enum colour c)
{
	if (y < 0 || y >= LINES || x < 0 || x >= COLS)
		return;
	if (cols > COLS - x)
		cols = COLS - x;
	if (cols <= 0)
		return;
	attrset(ui_attr(c));
	mvhline(y, x, ' ', cols);
	attrset(A_NORMAL);
}

void
listsel_clamp(struct listsel *ls, int n, int page)
{
	if (page < 1)
		page = 1;
	if (ls->sel >= n)
		ls->sel = n - 1;
	if (ls->sel < 0)
		ls->sel = 0;
	if (ls->top > ls->sel)
		ls->top = ls->sel;
	if (ls->sel >= ls->top + page)
		ls->top = ls->sel - page + 1;
	if (ls->top > n - page)
		ls->top = n - page;
	if (ls->top < 0)
		ls->top = 0;
}

int
listsel_key(struct listsel *ls, int key, int n, int page)
{
	switch (key) {
	case 'j':
	case FK(KEY_DOWN):
		ls->sel++;
		break;
	case 'k':
	case FK(KEY_UP):
		ls->sel--;
		break;
	case FK(KEY_NPAGE):
	case K_CTRL('f'):
		ls->sel += page > 1 ? page - 1 : 1;
		break;
	case FK(KEY_PPAGE):
	case K_CTRL('b'):
		ls->sel -= page > 1 ? page - 1 : 1;
		break;
	case 'g':
	case FK(KEY_HOME):
		ls->sel = 0;
		break;
	case 'G':
	case FK(KEY_END):
		ls->sel = n - 1;
		break;
	default:
		return 0;
	}
	listsel_clamp(ls, n, page);
	return 1;
}

void
field_set(struct field *f, const char *utf8)
{
	uint32_t cp;
	int n;

	f->len = 0;
	while (utf8 != NULL && (n = fmt_utf8_next(utf8, &cp)) > 0 && f->len < FIELD_TEXT_MAX - 1) {
		f->text[f->len++] = (wchar_t)cp;
		utf8 += n;
	}
	f->text[f->len] = 0;
	f->cur = f->len;
}

static void
wide_to_utf8(const wchar_t *w, int from, int to, char *out, size_t outsz)
{
	char enc[4];
	size_t o = 0;
	int i, n;

	if (outsz == 0)
		return;
	for (i = from; i < to; i++) {
		n = fmt_utf8_put((uint32_t)w[i], enc);
		if (o + (size_t)n + 1 > outsz)
			break;
		memcpy(out + o, enc, (size_t)n);
		o += (size_t)n;
	}
	out[o] = '\0';
}

void
field_get(const struct field *f, char *out, size_t outsz)
{
	if (f->kind == FIELD_CHOICE) {
		snprintf(out, outsz, "%d", f->choice);
		return;
	}
	wide_to_utf8(f->text, 0, f->len, out, outsz);
}

int
field_key(struct field *f, int key)
{
	int i;

	if (key >= 0x20 && key < 0x110000 && key != 0x7f) {
		if (f->len >= FIELD_TEXT_MAX - 1)
			return 1;
		memmove(&f->text[f->cur + 1], &f->text[f->cur],
			(size_t)(f->len - f->cur) * sizeof f->text[0]);
		f->text[f->cur++] = (wchar_t)key;
		f->len++;
		f->text[f->len] = 0;
		return 1;
	}
	switch (key) {
	case FK(KEY_BACKSPACE):
	case 0x7f:
	case 8:
		if (f->cur == 0)
			return 1;
		f->cur--;
		/* FALLTHROUGH */
	case FK(KEY_DC):
		if (f->cur >= f->len)
			return 1;
		memmove(&f->text[f->cur], &f->text[f->cur + 1],
			(size_t)(f->len - f->cur - 1) * sizeof f->text[0]);
		f->len--;
		f->text[f->len] = 0;
		return 1;
	case FK(KEY_LEFT):
		if (f->cur > 0)
			f->cur--;
		return 1;
	case FK(KEY_RIGHT):
		if (f->cur < f->len)
			f->cur++;
		return 1;
	case FK(KEY_HOME):
	case K_CTRL('a'):
		f->cur = 0;
		return 1;
	case FK(KEY_END):
	case K_CTRL('e'):
		f->cur = f->len;
		return 1;
	case K_CTRL('u'):
		memmove(&f->text[0], &f->text[f->cur],
			(size_t)(f->len - f->cur) * sizeof f->text[0]);
		f->len -= f->cur;
		f->cur = 0;
		f->text[f->len] = 0;
		return 1;
	case K_CTRL('w'):
		i = f->cur;
		while (i > 0 && f->text[i - 1] == ' ')
			i--;
		while (i > 0 && f->text[i - 1] != ' ')
			i--;
		memmove(&f->text[i], &f->text[f->cur],
			(size_t)(f->len - f->cur) * sizeof f->text[0]);
		f->len -= f->cur - i;
		f->cur = i;
		f->text[f->len] = 0;
		return 1;
	default:
		return 0;
	}
}

void
field_draw(const struct field *f, int y, int x, int cols, enum colour col, int *cx)
{
	char text[FIELD_TEXT_MAX * 4 + 1];
	int start = 0;

	*cx = -1;
	if (cols <= 0)
		return;
	if (f->kind == FIELD_CHOICE) {
		const char *name =
			f->choice >= 0 && f->choice < f->nchoices ? f->choices[f->choice] : "?";

		ui_printf(y, x, cols, col, FMT_PAD, "< %s >", name);
		return;
	}
	/* Scroll so that the cursor stays inside the field. */
	for (;;) {
		wide_to_utf8(f->text, start, f->cur, text, sizeof text);
		if (fmt_width(text) < cols || start >= f->cur)
			break;
		start++;
	}
	*cx = x + fmt_width(text);
	wide_to_utf8(f->text, start, f->len, text, sizeof text);
	ui_put(y, x, cols, col, text, FMT_PAD);
}

void
form_open(struct form *f, struct console *c)
{
	f->active = 1;
	f->focus = 0;
	f->confirming = 0;
	f->error[0] = '\0';
	f->summary[0] = '\0';
	f->again[0] = '\0';
	f->asked = 0;
	if (f->nfields == 0 && (f->check == NULL || f->check(f, c) == 0))
		f->confirming = 1;
}

enum form_res
form_key(struct form *f, struct console *c, int key)
{
	struct field *fl;

	if (f->confirming || f->nfields == 0) {
		if ((key == 'y' || key == 'Y') && f->confirming && f->again[0] && !f->asked) {
			size_t n = strlen(f->summary);

			snprintf(f->summary + n, sizeof f->summary - n, "\n\n%s", f->again);
			f->asked = 1;
			return FORM_GOING;
		}
		if (key == 'y' || key == 'Y')
			return f->confirming ? FORM_CONFIRM : FORM_GOING;
		if (key == 'n' || key == 'N' || key == K_ESC || key == 'q')
			return FORM_CANCEL;
		return FORM_GOING;
	}
	fl = &f->fields[f->focus];
	switch (key) {
	case K_ESC:
		return FORM_CANCEL;
	case K_TAB:
	case FK(KEY_DOWN):
		f->focus = (f->focus + 1) % f->nfields;
		return FORM_GOING;
	case FK(KEY_BTAB):
	case FK(KEY_UP):
		f->focus = (f->focus + f->nfields - 1) % f->nfields;
		return FORM_GOING;
	case K_ENTER:
	case '\n':
	case FK(KEY_ENTER):
		if (f->focus < f->nfields - 1) {
			f->focus++;
			return FORM_GOING;
		}
		f->error[0] = '\0';
		f->again[0] = '\0';
		f->asked = 0;
		if (f->check == NULL || f->check(f, c) == 0)
			f->confirming = 1;
		return FORM_GOING;
	default:
		break;
	}
	if (fl->kind == FIELD_CHOICE) {
		if ((key == FK(KEY_LEFT) || key == '-' || key == 'h') && fl->choice > 0)
			fl->choice--;
		else if ((key == FK(KEY_RIGHT) || key == '+' || key == 'l' || key == ' ') &&
			 fl->choice < fl->nchoices - 1)
			fl->choice++;
		else if (key >= '0' && key <= '9' && key - '0' < fl->nchoices)
			fl->choice = key - '0';
		return FORM_GOING;
	}
	field_key(fl, key);
	return FORM_GOING;
}

static void
box_draw(int y, int x, int h, int w, const char *title)
{
	int i;

	attrset(ui_attr(C_FORM));
	for (i = 0; i < h; i++)
		mvhline(y + i, x, ' ', w);
	if (fmt_is_ascii()) {
		mvaddch(y, x, ACS_ULCORNER);
		mvaddch(y, x + w - 1, ACS_URCORNER);
		mvaddch(y + h - 1, x, ACS_LLCORNER);
		mvaddch(y + h - 1, x + w - 1, ACS_LRCORNER);
		mvhline(y, x + 1, ACS_HLINE, w - 2);
		mvhline(y + h - 1, x + 1, ACS_HLINE, w - 2);
		mvvline(y + 1, x, ACS_VLINE, h - 2);
		mvvline(y + 1, x + w - 1, ACS_VLINE, h - 2);
	} else {
		/* Unicode box drawing: no alternate character set switching. */
		mvadd_wch(y, x, WACS_ULCORNER);
		mvadd_wch(y, x + w - 1, WACS_URCORNER);
		mvadd_wch(y + h - 1, x, WACS_LLCORNER);
		mvadd_wch(y + h - 1, x + w - 1, WACS_LRCORNER);
		mvhline_set(y, x + 1, WACS_HLINE, w - 2);
		mvhline_set(y + h - 1, x + 1, WACS_HLINE, w - 2);
		mvvline_set(y + 1, x, WACS_VLINE, h - 2);
		mvvline_set(y + 1, x + w - 1, WACS_VLINE, h - 2);
	}
	attrset(A_NORMAL);
	if (title != NULL && *title)
		ui_printf(y, x + 2, w - 4, C_FORM, 0, " %s ", title);
}

void
form_draw(const struct form *f, int *cy, int *cx)
{
	const char *p;
	char line[1024];
	int w, h, y, x, i, lw = 0, nsum = 0, row, fx;

	*cy = *cx = -1;
	w = MIN(COLS - 2, 76);
	if (w < 20 || LINES < 8)
		return;
	if (f->confirming) {
		for (p = f->summary; nsum < 10 && fmt_wrap(&p, w - 4, line, sizeof line);)
			nsum++;
		h = nsum + 5 + (f->error[0] ? 1 : 0);
	} else {
		h = f->nfields + 6 + (f->error[0] ? 1 : 0);
	}
	if (h > LINES)
		h = LINES;
	y = (LINES - h) / 2;
	x = (COLS - w) / 2;
	box_draw(y, x, h, w, f->title);
	row = y + 2;
	if (f->confirming) {
		for (p = f->summary, i = 0; i < nsum && fmt_wrap(&p, w - 4, line, sizeof line); i++)
			ui_put(row++, x + 2, w - 4, C_FORM, line, 0);
		row++;
		if (f->error[0])
			ui_put(row++, x + 2, w - 4, C_MSG_ERR, f->error, 0);
		ui_put(MIN(row, y + h - 2), x + 2, w - 4, f->asked ? C_MSG_ERR : C_FORM,
		       f->asked ? "Sure?  y again = yes, send it   n / Esc = cancel"
				: "Apply?  y = yes, send it   n / Esc = cancel",
		       0);
		return;
	}
	for (i = 0; i < f->nfields; i++)
		lw = MAX(lw, fmt_width(f->fields[i].label));
	lw += 2;
	for (i = 0; i < f->nfields && row < y + h - 3; i++, row++) {
		const struct field *fl = &f->fields[i];
		int fw = w - 4 - lw, hintw = fl->hint[0] ? MIN(fmt_width(fl->hint) + 1, fw / 3) : 0;

		ui_put(row, x + 2, lw, C_FORM, fl->label, FMT_PAD);
		field_draw(fl, row, x + 2 + lw, fw - hintw, i == f->focus ? C_SEL : C_FIELD, &fx);
		if (hintw > 0)
			ui_put(row, x + 2 + lw + fw - hintw + 1, hintw - 1, C_FORM, fl->hint, 0);
		if (i == f->focus && fx >= 0) {
			*cy = row;
			*cx = fx;
		}
	}
	row++;
	if (f->error[0])
		ui_put(row++, x + 2, w - 4, C_MSG_ERR, f->error, 0);
	ui_put(y + h - 2, x + 2, w - 4, C_FORM, "Enter next / done   Tab move   Esc cancel", 0);
}

void
help_draw(const char *title, const char *const *lines)
{
	int n = 0, w = 0, h, y, x, i;

	for (n = 0; lines[n] != NULL; n++)
		w = MAX(w, fmt_width(lines[n]));
	w = MIN(MAX(w, 46) + 4, COLS);
	h = MIN(n + 3, LINES);
	if (w < 10 || h < 4)
		return;
	y = (LINES - h) / 2;
	x = (COLS - w) / 2;
	box_draw(y, x, h, w, title);
	for (i = 0; i < n && i < h - 3; i++)
		ui_put(y + 1 + i, x + 2, w - 4, C_FORM, lines[i], 0);
	ui_put(y + h - 2, x + 2, w - 4, C_FORM, "Esc or ? closes; any other key closes and acts",
	       0);
}

void
vislist_reset(struct vislist *v)
{
	v->n = 0;
}

void
vislist_add(struct vislist *v, int i)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 64;
		v->idx = xrealloc(v->idx, (size_t)v->cap * sizeof *v->idx);
	}
	v->idx[v->n++] = i;
}

/*
 * Which columns are left out at cols: the ones with the highest prio
 * first (rightmost on a tie) until the rest fits; prio 0 never goes. The
 * marker of left-out columns needs its own cell (and a space before it)
 * unless the last column shown takes the rest of the line, where it sits
 * on the last cell.
 */
static int
col_want(const struct colspec *c)
{
	return c->width ? c->width : MAX(c->min, 4);
}

static int
marker_room(const struct colspec *spec, int n, unsigned long hidden)
{
	int i;

	if (hidden == 0)
		return 0;
	for (i = n - 1; i >= 0; i--)
		if (i >= 64 || !(hidden & (1ul << i)))
			return spec[i].width ? 2 : 0;
	return 0;
}

static unsigned long
col_hidden(const struct colspec *spec, int n, int cols)
{
	unsigned long hidden = 0;
	int i, total = -1, worst;

	for (i = 0; i < n; i++)
		total += col_want(&spec[i]) + 1;
	while (total + marker_room(spec, n, hidden) > cols) {
		worst = -1;
		for (i = 0; i < n && i < 64; i++)
			if (!(hidden & (1ul << i)) && spec[i].prio > 0 &&
			    (worst < 0 || spec[i].prio >= spec[worst].prio))
				worst = i;
		if (worst < 0)
			break;
		hidden |= 1ul << worst;
		total -= col_want(&spec[worst]) + 1;
	}
	return hidden;
}

void
ui_header(int y, int cols, const struct colspec *spec, int n)
{
	unsigned long hidden = col_hidden(spec, n, cols);
	int i, x = 0, w;

	ui_fill(y, 0, cols, C_HEADER);
	for (i = 0; i < n && x < cols; i++) {
		if (hidden & (1ul << i))
			continue;
		w = spec[i].width ? MIN(spec[i].width, cols - x) : cols - x;
		if (spec[i].width == 0 && w < 4)
			break; /* a rest-of-line column with no room is left out */
		ui_put(y, x, w, C_HEADER, spec[i].title, spec[i].flags);
		x += w + 1;
	}
	/* Columns left out for want of room: a marker says so (? lists them). */
	if (hidden)
		ui_put(y, cols - 1, 1, C_HEADER, fmt_is_ascii() ? ">" : "\xe2\x80\xba", 0);
}

void
row_begin(struct row *r, int y, int cols, int sel, const struct colspec *spec, int n)
{
	r->y = y;
	r->x = 0;
	r->cols = cols;
	r->sel = sel;
	r->spec = spec;
	r->n = n;
	r->i = 0;
	r->hidden = col_hidden(spec, n, cols);
	if (sel)
		ui_fill(y, 0, cols, C_SEL);
}

void
row_cell(struct row *r, enum colour c, const char *text)
{
	int w;

	if (r->i >= r->n)
		return;
	if (r->hidden & (1ul << r->i)) {
		r->i++;
		return;
	}
	w = r->spec[r->i].width ? r->spec[r->i].width : r->cols - r->x;
	if (w > r->cols - r->x)
		w = r->cols - r->x;
	if (r->spec[r->i].width == 0 && w < 4)
		w = 0;
	if (w > 0)
		ui_put(r->y, r->x, w, c, text, r->spec[r->i].flags | (r->sel ? UI_SEL : 0));
	r->x += w + 1;
	r->i++;
}

int
row_shown(const struct row *r, int i)
{
	return i < r->n && !(r->hidden & (1ul << i));
}

int
row_left(const struct row *r)
{
	return r->x < r->cols ? r->cols - r->x : 0;
}

const char *
breaker_words(enum breaker_st st, const char *raw)
{
	switch (st) {
	case BS_CLOSED:
		return "closed";
	case BS_HALF_OPEN:
		return "half-open";
	case BS_OPEN:
		return "OPEN";
	case BS_FORCED_OPEN:
		return "forced open";
	case BS_FORCED_CLOSED:
		return "forced closed";
	default:
		return raw[0] ? raw : "?";
	}
}

enum colour
breaker_colour(enum breaker_st st)
{
	switch (st) {
	case BS_CLOSED:
		return C_OK;
	case BS_HALF_OPEN:
		return C_WARN;
	case BS_OPEN:
	case BS_FORCED_OPEN:
	case BS_FORCED_CLOSED:
		return C_BAD;
	default:
		return C_NORMAL;
	}
}
