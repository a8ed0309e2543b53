/*
 * fleet_fetch: concurrent bounded requests to many daemons (see
 * fleet_fetch.h). Each request gets its own easy handle from
 * client_xfer_setup(); up to FLEET_FETCH_PARALLEL run on the multi at a
 * time and the next one starts as soon as one finishes.
 */
#include "fleet_fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static void
start(CURLM *m, struct fleet_req *r, struct client_xfer *x, long timeout_ms)
{
	char hdr[128];

	client_xfer_setup(r->c, x, r->method, r->path, r->body, timeout_ms);
	if (r->action_id != NULL) {
		snprintf(hdr, sizeof hdr, "X-Fusebox-Action-Id: %s", r->action_id);
		x->hdrs = curl_slist_append(x->hdrs, hdr);
		curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	}
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, r);
	curl_multi_add_handle(m, x->h);
}

static void
finish(CURLM *m, struct fleet_req *r, struct client_xfer *x, CURLcode code, long timeout_ms)
{
	if (code == CURLE_OK) {
		r->answered = 1;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &r->status);
		r->len = x->body.len;
		r->resp = x->body.data != NULL ? buf_steal(&x->body) : xstrdup("");
	} else {
		r->error = client_xfer_error(r->c, x, code, timeout_ms);
	}
	curl_multi_remove_handle(m, x->h);
	client_xfer_cleanup(x);
}

void
fleet_fetch_run(struct fleet_req *r, int n, long timeout_ms)
{
	struct client_xfer *x = xcalloc((size_t)MAX(n, 1), sizeof *x);
	CURLM *m = curl_multi_init();
	int next = 0, running = 0, left, i;
	struct fleet_req *done;
	CURLMsg *msg;

	for (i = 0; i < n; i++) {
		r[i].answered = 0;
		r[i].status = 0;
		r[i].resp = r[i].error = NULL;
		r[i].len = 0;
	}
	while (next < n || running > 0) {
		while (next < n && running < FLEET_FETCH_PARALLEL) {
			start(m, &r[next], &x[next], timeout_ms);
			next++;
			running++;
		}
		curl_multi_perform(m, &left);
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&done);
			finish(m, done, &x[done - r], msg->data.result, timeout_ms);
			running--;
		}
		if (running > 0)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	curl_multi_cleanup(m);
	free(x);
}

void
fleet_req_free(struct fleet_req *r)
{
	free(r->resp);
	free(r->error);
	r->resp = r->error = NULL;
}

void
fleet_action_id_new(char *out, size_t outsz)
{
	unsigned char b[16] = {0};
	ssize_t got = -1;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC), i;

	if (fd >= 0) {
		got = read(fd, b, sizeof b);
		close(fd);
	}
	if (got != (ssize_t)sizeof b)
		for (i = 0; i < 16; i++)
			b[i] = (unsigned char)(rand() & 0xff);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, outsz, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}
