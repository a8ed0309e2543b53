/*
 * table: the terminal table (see table.h).
 */
#include "table.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "util.h"

struct table {
	int ncols;
	const char *right; /* 'r' per right-aligned column, or NULL */
	char **cells;
	int nrows;
	int cap;
};

struct table *
table_new(int ncols, const char *const *titles, const char *right)
{
	struct table *t = xcalloc(1, sizeof *t);

	t->ncols = ncols;
	t->right = right;
	if (titles != NULL)
		table_add(t, titles);
	return t;
}

void
table_add(struct table *t, const char *const *cells)
{
	int i;

	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = xrealloc(t->cells, (size_t)t->cap * (size_t)t->ncols * sizeof *t->cells);
	}
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * t->ncols + i] = xstrdup(cells[i] ? cells[i] : "");
	t->nrows++;
}

/* The cell as shown: fitted to cols (INT_MAX: whole), in a fresh string. */
static char *
cell_render(const char *s, int cols)
{
	size_t n = strlen(s) * 4 + 8; /* a replaced byte may take 3 */
	char *out = xmalloc(n);

	fmt_fit(out, n, s, cols, 0);
	return out;
}

void
table_print(struct table *t, FILE *fp)
{
	int *w = xcalloc((size_t)t->ncols, sizeof *w), r, i, cw, pad, n = t->nrows * t->ncols;
	int cols = isatty(fileno(fp)) ? CELL_MAX_COLS : INT_MAX;
	char **shown = xcalloc((size_t)(n ? n : 1), sizeof *shown);

	for (i = 0; i < n; i++)
		shown[i] = cell_render(t->cells[i], cols);
	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols; i++)
			w[i] = MAX(w[i], fmt_width(shown[r * t->ncols + i]));
	for (r = 0; r < t->nrows; r++) {
		for (i = 0; i < t->ncols; i++) {
			const char *cell = shown[r * t->ncols + i];
			int last = i == t->ncols - 1, right = t->right && t->right[i] == 'r';

			cw = fmt_width(cell);
			pad = w[i] - cw;
			if (right)
				fprintf(fp, "%*s%s", pad, "", cell);
			else
				fprintf(fp, "%s%*s", cell, last ? 0 : pad, "");
			if (!last)
				fputs("  ", fp);
		}
		fputc('\n', fp);
	}
	for (i = 0; i < n; i++)
		free(shown[i]);
	free(shown);
	free(w);
}

void
table_free(struct table *t)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
