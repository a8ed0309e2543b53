/*
 * fleet_reviews: the fleet console's merged review queue (VIEW_REVIEWS; the
 * files and threads: fleet_console_int.h). Every answering host's open
 * items (pending or claimed) with a HOST column, oldest due first across
 * the fleet: due time (none last), then host, then id — the order of
 * `fusebox --fleet F reviews`. a approves, x rejects (optional note), c
 * corrects, C claims, as on a daemon's Reviews screen: the rows, the forms
 * and the requests are screen_reviews.c's. Each is confirmed, then sent to
 * the owning daemon alone with that host's token, the poller paused; the
 * daemon's answer stays on the last line. A claim made elsewhere shows at
 * the host's next poll (<= 1 s). A host that is down is named above the
 * rows by the caller; one up whose GET /v1/reviews fails is named here.
 */
#include "fleet_console_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "screen_reviews.h"
#include "util.h"

#define SEND_TIMEOUT_MS 5000

struct fleet_rq fleet_rq;

/* The merged list: pointers into the hosts' snapshots, valid under fleet_fc.mu. */
static struct host_review *items;
static int nitems, cap;

/* Under fleet_fc.mu. */
static void
build(void)
{
	int i, j;

	nitems = 0;
	for (i = 0; i < fleet_fc.f->n; i++) {
		const struct reviews_v *rv = fleet_fc.h[i].up ? fleet_fc.h[i].reviews : NULL;

		for (j = 0; rv != NULL && j < rv->n; j++) {
			if (nitems == cap) {
				cap = MAX(cap * 2, 64);
				items = xrealloc(items, (size_t)cap * sizeof *items);
			}
			items[nitems++] = (struct host_review){i, &rv->v[j]};
		}
	}
	if (nitems > 1)
		qsort(items, (size_t)nitems, sizeof *items, host_review_cmp);
}

void
fleet_reviews_draw(int top, int rows, int cols, int64_t now_wall)
{
	int y = top, i, bottom = top + rows, up = 0, asked = 0;

	build();
	for (i = 0; i < fleet_fc.f->n; i++) {
		const struct fhost *h = &fleet_fc.h[i];

		if (!h->up)
			continue;
		if (h->rev_error[0] && y < bottom - 3)
			ui_printf(y++, 0, cols, C_BAD, 0, " host %s %s", fleet_fc.f->hosts[i].name,
				  h->rev_error);
		asked++;
		up += h->rev_error[0] == '\0';
	}
	ui_printf(y++, 0, cols, up < fleet_fc.f->n ? C_WARN : C_ACCENT, 0,
		  " reviews: %d open on %d of %d hosts, oldest due first%s", nitems, up,
		  fleet_fc.f->n, up < fleet_fc.f->n ? " (partial)" : "");
	review_header_draw(y++, cols, 1);
	/* The last line: the answer to the last claim or decision. */
	fleet_rq.page = MAX(bottom - y - 1, 1);
	listsel_clamp(&fleet_rq.ls, nitems, fleet_rq.page);
	for (i = fleet_rq.ls.top; i < nitems && y < bottom - 1; i++, y++)
		review_row_draw(y, cols, i == fleet_rq.ls.sel,
				fleet_fc.f->hosts[items[i].host].name, items[i].r, now_wall);
	if (nitems == 0)
		ui_put(y, 0, cols, C_DIM,
		       asked > 0 ? " no open review on the answering hosts"
				 : " no host answers yet",
		       0);
	if (fleet_rq.msg[0])
		ui_put(bottom - 1, 0, cols, fleet_rq.msg_bad ? C_BAD : C_OK, fleet_rq.msg, 0);
}

/* The form for key on the selected item (its text copied: the snapshot may go). */
static void
open_form(int k)
{
	char err[256];
	int rc = -1;

	err[0] = '\0';
	pthread_mutex_lock(&fleet_fc.mu);
	build();
	listsel_clamp(&fleet_rq.ls, nitems, fleet_rq.page);
	if (nitems == 0) {
		snprintf(err, sizeof err, "no review item selected");
	} else {
		fleet_rq.host = items[fleet_rq.ls.sel].host;
		rc = review_form(&fleet_rq.form, items[fleet_rq.ls.sel].r, k, err, sizeof err);
	}
	pthread_mutex_unlock(&fleet_fc.mu);
	if (rc != 0) {
		snprintf(fleet_rq.msg, sizeof fleet_rq.msg, " %s", err);
		fleet_rq.msg_bad = 1;
		return;
	}
	snprintf(fleet_rq.form.title + strlen(fleet_rq.form.title),
		 sizeof fleet_rq.form.title - strlen(fleet_rq.form.title), " on %s",
		 fleet_fc.f->hosts[fleet_rq.host].name);
	form_open(&fleet_rq.form, NULL);
}

/* The confirmed form to its host alone, with the host's token. */
static void
send_form(void)
{
	struct fhost *h = &fleet_fc.h[fleet_rq.host];
	const char *name = fleet_fc.f->hosts[fleet_rq.host].name;
	char path[128], label[320], *body, *err = NULL;
	struct fleet_req q;

	if (h->init_error != NULL) {
		snprintf(fleet_rq.msg, sizeof fleet_rq.msg, " %s: %s", name, h->init_error);
		fleet_rq.msg_bad = 1;
		return;
	}
	review_request(&fleet_rq.form, path, sizeof path, &body, label, sizeof label);
	q = (struct fleet_req){.c = &h->c, .method = "POST", .path = path, .body = body};
	fleet_pause_poller(1);
	fleet_fetch_run(&q, 1, SEND_TIMEOUT_MS);
	fleet_pause_poller(0);
	if (!q.answered)
		err = xstrdup(q.error ? q.error : "no answer");
	else if (q.status < 200 || q.status > 299)
		err = client_error_text(q.status, q.resp, q.len);
	fleet_rq.msg_bad = err != NULL;
	if (err == NULL) {
		snprintf(fleet_rq.msg, sizeof fleet_rq.msg, " %s: %s: done (%ld)", name, label,
			 q.status);
	} else {
		snprintf(fleet_rq.msg, sizeof fleet_rq.msg, " %s: %s: refused: %s", name, label,
			 err);
		/* A rejected correction comes back with the daemon's words, to be fixed. */
		if (q.answered && q.status == 400 && fleet_rq.form.reopen_on_400) {
			fleet_rq.form.active = 1;
			fleet_rq.form.confirming = 0;
			snprintf(fleet_rq.form.error, sizeof fleet_rq.form.error, "%s", err);
		}
	}
	free(err);
	fleet_req_free(&q);
	cJSON_free(body);
}

int
fleet_reviews_key(int k)
{
	enum form_res fr;
	int n;

	if (fleet_rq.form.active) {
		fr = form_key(&fleet_rq.form, NULL, k);
		if (fr == FORM_CANCEL) {
			fleet_rq.form.active = 0;
			snprintf(fleet_rq.msg, sizeof fleet_rq.msg, " %s: cancelled",
				 fleet_rq.form.title);
			fleet_rq.msg_bad = 0;
		} else if (fr == FORM_CONFIRM) {
			fleet_rq.form.active = 0;
			send_form();
		}
		return 1;
	}
	if (k == 'a' || k == 'x' || k == 'c' || k == 'C') {
		open_form(k);
		return 1;
	}
	pthread_mutex_lock(&fleet_fc.mu);
	build();
	n = nitems;
	pthread_mutex_unlock(&fleet_fc.mu);
	return listsel_key(&fleet_rq.ls, k, n, fleet_rq.page);
}

void
fleet_reviews_free(void)
{
	free(items);
	items = NULL;
	nitems = cap = 0;
}
