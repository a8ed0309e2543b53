/*
 * fuzz_upstream_reply: what an upstream sends back, both ways it arrives.
 *
 * The input is parsed as a chat.completion body by upstream_parse_reply()
 * and, as a text/event-stream, fed to sse_feed() twice: whole, and in
 * pieces of pseudo-random sizes (1 to 64 bytes, derived from the input so
 * a run is reproducible). Every event payload goes through
 * upstream_chunk_delta(). The two feeds must see the same events, the
 * same [DONE] and the same return: how the bytes are cut by the network
 * must not change what the stream says. Every buffer handed to the code
 * is exactly as long as its length (no terminating NUL).
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "upstream.h"
#include "util.h"

/* What one feed saw: every payload, length-prefixed, and the deltas. */
struct events {
	struct buf log;
	int n;
};

static void
on_event(void *arg, const char *payload, size_t len)
{
	struct events *ev = arg;
	char *copy = xmalloc(len > 0 ? len : 1), *content = NULL;
	int finish = -1, r;

	memcpy(copy, payload, len);
	r = upstream_chunk_delta(copy, len, &content, &finish);
	if (r == 0)
		assert(content != NULL && (finish == 0 || finish == 1));
	else
		assert(r == UPSTREAM_E_INVALID && content == NULL);
	buf_printf(&ev->log, "%zu:", len);
	buf_append(&ev->log, payload, len);
	buf_printf(&ev->log, "|%d|%s\n", r, content != NULL ? content : "");
	ev->n++;
	free(content);
	free(copy);
}

static uint32_t
hash(const uint8_t *data, size_t size)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	return h;
}

static int
feed(const char *data, size_t size, uint32_t seed, struct events *ev, int *done)
{
	struct sse_parser p;
	size_t off = 0, n;
	char *piece;
	int r = 0;

	sse_init(&p);
	while (off < size && r == 0) {
		if (seed == 0) {
			n = size;
		} else {
			seed = seed * 1103515245u + 12345u;
			n = 1 + (seed >> 16) % 64;
		}
		if (n > size - off)
			n = size - off;
		piece = xmalloc(n);
		memcpy(piece, data + off, n);
		r = sse_feed(&p, piece, n, on_event, ev);
		free(piece);
		off += n;
	}
	*done = p.done;
	sse_free(&p);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = xmalloc(size > 0 ? size : 1);
	struct upstream_reply reply;
	struct events whole, cut;
	int r, rw, rc, dw, dc;

	memcpy(body, data, size);
	r = upstream_parse_reply(body, size, &reply);
	if (r == 0)
		assert(reply.content != NULL);
	else
		assert(r == UPSTREAM_E_INVALID);
	upstream_reply_clear(&reply);
	assert(reply.content == NULL);

	buf_init(&whole.log, 64 * 1024 * 1024);
	buf_init(&cut.log, 64 * 1024 * 1024);
	whole.n = cut.n = 0;
	rw = feed(body, size, 0, &whole, &dw);
	rc = feed(body, size, hash(data, size) | 1u, &cut, &dc);
	if (rw == 0 && rc == 0) {
		assert(whole.n == cut.n);
		assert(whole.log.len == cut.log.len);
		assert(whole.log.len == 0 ||
		       memcmp(whole.log.data, cut.log.data, whole.log.len) == 0);
		assert(dw == dc);
	}
	buf_free(&whole.log);
	buf_free(&cut.log);
	free(body);
	return 0;
}
