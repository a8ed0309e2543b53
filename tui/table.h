#pragma once
/*
 * table: a text table for the terminal. Cells are copied; printed to a
 * terminal each is fitted to CELL_MAX_COLS columns, printed to a pipe or a
 * file it is whole. Columns are as wide as their widest cell (display
 * width, so CJK text lines up), two spaces apart; the last column is not
 * padded. Used by the CLI verbs and the report. Main thread.
 */
#include <stdio.h>

#define CELL_MAX_COLS 60

struct table;

/* right: one char per column, 'r' for right-aligned, or NULL. Borrowed: it must outlive t. */
struct table *table_new(int ncols, const char *const *titles, const char *right);
void table_add(struct table *t, const char *const *cells);
void table_print(struct table *t, FILE *fp);
void table_free(struct table *t);
