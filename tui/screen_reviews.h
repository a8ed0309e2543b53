#pragma once
/* screen_reviews: the console's Reviews screen (see the design note in screen_reviews.c). UI
 * thread. */
#include "console_ctx.h"

extern const struct screen screen_reviews;

/*
 * Shared with the fleet's merged queue (fleet_reviews.c): the table's
 * header and rows (host: a HOST column first, or NULL), the form for a key
 * (a approve, x reject, C claim, c correct) on r — 0, or -1 with why in err
 * — and the request a confirmed form stands for (POST path; body: NULL or
 * JSON, free with cJSON_free; label: "approve review #7").
 */
void review_header_draw(int y, int cols, int with_host);
void review_row_draw(int y, int cols, int sel, const char *host, const struct review_v *r,
		     int64_t now_wall);
int review_form(struct form *f, const struct review_v *r, int key, char *err, size_t errsz);
void review_request(const struct form *f, char *path, size_t pathsz, char **body, char *label,
		    size_t labelsz);
