/*
 * attempt: one attempt on the wire.
 *
 * An attempt is a curl easy handle on the engine's multi plus two timers
 * (first byte, total), its timeouts planned from the owner's budget when
 * it starts. It ends by itself (curl reports the transfer done: the
 * engine calls attempt_transfer_done()) or by a timer or its owner
 * (attempt_stop()); either way attempt_end() gathers the facts — the
 * outcome class, the reply parsed and a 200's content validated — writes
 * the attempts row (and the validation-failure row), and hands the
 * result to the owner's done(), which records breaker and health and
 * decides what follows. The attempt is freed when done() returns.
 */
#include "attempt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "breaker.h"
#include "clock.h"
#include "health.h"
#include "jsonutil.h"
#include "retry.h"
#include "store.h"
#include "textcheck.h"
#include "trace.h"

static int attempt_end(struct attempt *a, enum outcome forced, CURLcode code);
static void attempt_transfer_done(struct engine *e, struct engine_transfer *t, CURLcode code);

int
attempt_tool_calls_allowed(const struct route_cfg *rc)
{
	if (rc->output.tool_calls == TOOL_CALLS_DEFAULT)
		return rc->output.schema == NULL;
	return rc->output.tool_calls == TOOL_CALLS_ALLOW;
}

/*
 * The tool calls of a stream's first choice, assembled from its deltas as
 * message.tool_calls would hold them (name, arguments so far): what the
 * attempts row summarises (tool names and argument sizes).
 */
static void
stream_tools_add(struct attempt *a, const cJSON *chunk)
{
	const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(chunk, "choices"), 0);
	const cJSON *d = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "delta") : NULL;
	const cJSON *tc = d ? cJSON_GetObjectItemCaseSensitive(d, "tool_calls") : NULL, *t;

	if (!cJSON_IsArray(tc))
		return;
	if (a->stream_tools == NULL)
		a->stream_tools = cJSON_CreateArray();
	cJSON_ArrayForEach(t, tc)
	{
		const cJSON *ix = cJSON_GetObjectItemCaseSensitive(t, "index");
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
		const cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
		int i = cJSON_IsNumber(ix) ? ix->valueint : cJSON_GetArraySize(a->stream_tools), k;
		cJSON *slot, *sfn, *sargs;

		if (i < 0 || i > 127)
			continue;
		while (cJSON_GetArraySize(a->stream_tools) <= i) {
			cJSON *o = cJSON_CreateObject(),
			      *f = cJSON_AddObjectToObject(o, "function");

			cJSON_AddStringToObject(f, "name", "?");
			cJSON_AddStringToObject(f, "arguments", "");
			cJSON_AddItemToArray(a->stream_tools, o);
		}
		slot = cJSON_GetArrayItem(a->stream_tools, i);
		for (k = 0; k < 2; k++) {
			const char *key = k == 0 ? "id" : "type";
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, key);

			if (cJSON_IsString(v) && !cJSON_HasObjectItem(slot, key))
				cJSON_AddStringToObject(slot, key, v->valuestring);
		}
		sfn = cJSON_GetObjectItemCaseSensitive(slot, "function");
		if (cJSON_IsString(name) && name->valuestring[0])
			cJSON_ReplaceItemInObjectCaseSensitive(
				sfn, "name", cJSON_CreateString(name->valuestring));
		sargs = cJSON_GetObjectItemCaseSensitive(sfn, "arguments");
		if (cJSON_IsString(args) && args->valuestring[0] && cJSON_IsString(sargs) &&
		    strlen(sargs->valuestring) < 1024 * 1024) {
			struct buf b;

			buf_init(&b, SIZE_MAX / 2);
			buf_puts(&b, sargs->valuestring);
			buf_puts(&b, args->valuestring);
			buf_append(&b, "", 1);
			cJSON_ReplaceItemInObjectCaseSensitive(sfn, "arguments",
							       cJSON_CreateString(b.data));
			buf_free(&b);
		}
	}
}

/* The attempts-row summary of a stream's tool calls; NULL when none. */
static char *
stream_tools_summary(const struct attempt *a, int full)
{
	cJSON *doc, *ch, *c0, *msg;
	char *s;

	if (cJSON_GetArraySize(a->stream_tools) == 0)
		return NULL;
	doc = cJSON_CreateObject();
	ch = cJSON_AddArrayToObject(doc, "choices");
	c0 = cJSON_CreateObject();
	cJSON_AddItemToArray(ch, c0);
	msg = cJSON_AddObjectToObject(c0, "message");
	cJSON_AddItemReferenceToObject(msg, "tool_calls", a->stream_tools);
	s = upstream_tool_calls_summary(doc, full);
	cJSON_Delete(doc);
	return s;
}

/* One SSE event of a streaming attempt. */
static void
on_sse_event(void *arg, const char *payload, size_t len)
{
	struct attempt *a = arg;
	const struct attempt_owner *own = a->own;
	struct upstream_chunk ch;
	size_t n;

	if (upstream_chunk_parse(payload, len, &ch) != 0)
		return;
	n = strlen(ch.content);
	if (ch.tool_calls && !a->committed && !attempt_tool_calls_allowed(own->rc))
		a->tools_denied = 1;
	if (a->tools_denied)
		goto out;
	if (!a->committed && (n > 0 || ch.tool_calls || ch.other_choice) &&
	    own->may_commit != NULL && !own->may_commit(a, own->arg)) {
		a->outrun = 1; /* another attempt of the owner streams: this one is cancelled */
		goto out;
	}
	if (ch.tool_calls)
		stream_tools_add(a, ch.doc);
	if ((n > 0 && buf_append(&a->text, ch.content, n) == 0) || ch.tool_calls ||
	    ch.other_choice) {
		if (!a->committed) {
			a->committed = 1;
			a->first_byte_us = clock_mono_us();
		}
		own->on_delta(own->delta_arg, ch.content, n, ch.doc);
		/* the idle gap between chunks is bounded like the first token */
		engine_timer_arm(own->e, &a->t_first_byte,
				 clock_mono_us() + a->to.first_byte_ms * 1000);
	} else if (a->committed) {
		own->on_delta(own->delta_arg, "", 0, ch.doc);
	}
out:
	upstream_chunk_clear(&ch);
}

static size_t
on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct attempt *a = userdata;
	size_t n = size * nmemb;

	if (a->streaming && a->sse_type && a->status == 200) {
		if (sse_feed(&a->sse, ptr, n, on_sse_event, a) < 0) {
			a->body_too_big = 1;
			return 0;
		}
		return n;
	}
	if (a->first_byte_us == 0)
		a->first_byte_us = clock_mono_us();
	if (buf_append(&a->resp, ptr, n) < 0) {
		a->body_too_big = 1;
		return 0; /* CURLE_WRITE_ERROR */
	}
	return n;
}

/*
 * A response header line that record_response_headers names: its value
 * (blanks and CR LF trimmed, cut to 256 bytes) kept in a->rec, the last
 * one of a repeated name.
 */
/* A recorded header's value (name and trimmed value of one line). */
static void
record_header(struct attempt *a, const char *name, size_t name_len, const char *v, size_t len)
{
	int i;

	for (i = 0; i < a->rec_cfg->nrecord_headers; i++) {
		const char *want = a->rec_cfg->record_headers[i];

		if (strlen(want) != name_len || strncasecmp(want, name, name_len) != 0)
			continue;
		len = MIN(len, (size_t)CONFIG_RECORD_HEADER_NAME_MAX);
		memcpy(a->rec[i], v, len);
		a->rec[i][len] = '\0';
		return;
	}
}

/* "Name: value\r\n" split once: the name, and the value without blanks and CR LF around it. */
static int
header_split(const char *ptr, size_t n, size_t *name_len, const char **v, size_t *len)
{
	const char *colon = memchr(ptr, ':', n);
	size_t off;

	if (colon == NULL)
		return -1;
	*name_len = (size_t)(colon - ptr);
	off = *name_len + 1;
	while (off < n && (ptr[off] == ' ' || ptr[off] == '\t'))
		off++;
	*len = n - off;
	while (*len && (ptr[off + *len - 1] == '\r' || ptr[off + *len - 1] == '\n' ||
			ptr[off + *len - 1] == ' ' || ptr[off + *len - 1] == '\t'))
		(*len)--;
	*v = ptr + off;
	return 0;
}

static size_t
on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct attempt *a = userdata;
	size_t n = size * nmemb;

	const char *v = NULL;
	size_t name_len = 0, vlen = 0;
	int status_line = n >= 5 && strncmp(ptr, "HTTP/", 5) == 0;

	if (!status_line && header_split(ptr, n, &name_len, &v, &vlen) == 0) {
		if (a->rec != NULL)
			record_header(a, ptr, name_len, v, vlen);
		if (n > 6 && (ptr[0] == 'x' || ptr[0] == 'X' || ptr[0] == 'r' || ptr[0] == 'R'))
			gate_header(&a->b->gate, clock_mono_ms(), ptr, name_len, v, vlen);
	}
	if (status_line) {
		const char *sp = memchr(ptr, ' ', n);

		a->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		a->retry_after[0] = '\0';
		a->json_type = 1;
		if (a->rec != NULL)
			memset(a->rec, 0, (size_t)a->rec_cfg->nrecord_headers * sizeof *a->rec);
	} else if (v != NULL && name_len == 11 && strncasecmp(ptr, "Retry-After", 11) == 0) {
		size_t len = MIN(vlen, sizeof a->retry_after - 1);

		memcpy(a->retry_after, v, len);
		a->retry_after[len] = '\0';
	} else if (n >= 13 && strncasecmp(ptr, "Content-Type:", 13) == 0) {
		char ct[96];
		size_t len = MIN(n - 13, sizeof ct - 1);

		memcpy(ct, ptr + 13, len);
		ct[len] = '\0';
		a->sse_type = strcasestr(ct, "event-stream") != NULL;
		a->json_type = strcasestr(ct, "json") != NULL || (a->streaming && a->sse_type);
	} else if ((n == 2 && ptr[0] == '\r') || (n == 1 && ptr[0] == '\n')) {
		/* End of a header block; 1xx interim responses don't count. */
		if (a->status >= 200 && !a->got_headers) {
			a->got_headers = 1;
			/* A stream's first byte is its first content chunk. */
			if (!(a->streaming && a->sse_type && a->status == 200)) {
				a->first_byte_us = clock_mono_us();
				engine_timer_cancel(a->own->e, &a->t_first_byte);
			}
		}
	}
	return n;
}

/* Called each time libcurl is about to send the request on a connection. */
static int
on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
	  int conn_local_port)
{
	struct attempt *a = clientp;

	a->wire_sends++;
	attempt_gate_settled(&a->gw);
	return CURL_PREREQFUNC_OK;
}

/*
 * End a by its timer. When that cut was the one before the deadline and
 * the call answered, the time it took teaches the crowd what an answer
 * costs on this machine now.
 */
static void
attempt_cut(struct attempt *a, enum outcome o)
{
	struct engine *e = a->own->e; /* a is freed by attempt_end() */
	int crowd = a->crowd_ms != 0;
	int64_t t0 = clock_mono_us();

	if (attempt_end(a, o, CURLE_OK) && crowd)
		budget_crowd_cost(e->crowd,
				  (clock_mono_us() - t0) * 1000 * BUDGET_CROWD_COST_FACTOR);
}

static void
attempt_timer_first_byte(struct timer *t, void *arg)
{
	struct attempt *a = arg;

	if (a->committed)
		attempt_cut(a, OUTCOME_TOTAL_TIMEOUT); /* idle gap in a stream */
	else if (!a->got_headers || (a->streaming && a->sse_type))
		attempt_cut(a, OUTCOME_FIRST_BYTE_TIMEOUT);
}

static void
attempt_timer_total(struct timer *t, void *arg)
{
	struct attempt *a = arg;

	attempt_cut(a, a->got_headers && (a->committed || !a->streaming)
			       ? OUTCOME_TOTAL_TIMEOUT
			       : OUTCOME_FIRST_BYTE_TIMEOUT);
}

/* One header line of an attempt, NUL-terminated, into t (attempt_headers). */
static void
header_line(struct buf *t, int *n, const char *name, const char *value)
{
	buf_puts(t, name);
	buf_puts(t, value);
	buf_append(t, "", 1);
	(*n)++;
}

/*
 * The attempt's request headers: the curl_slist nodes and their text in
 * one block (libcurl only reads the list; curl_slist_append() cost two
 * allocations a line, eight lines an attempt). The block holds the API
 * key: attempt_headers_free() wipes it. *size: the block's size.
 */
static struct curl_slist *
attempt_headers(struct attempt *a, int64_t max_wait_ms, size_t *size)
{
	const struct backend_cfg *bc = a->b->cfg;
	struct curl_slist *nodes;
	struct buf t;
	char num[24], *text;
	int i, n = 0;

	buf_init(&t, SIZE_MAX / 2);
	header_line(&t, &n, "Content-Type: application/json", "");
	header_line(&t, &n, a->streaming ? "Accept: text/event-stream" : "Accept: application/json",
		    "");
	header_line(&t, &n, "Expect:", ""); /* no 100-continue round trip */
	if (a->b->api_key)
		header_line(&t, &n, "Authorization: Bearer ", a->b->api_key);
	for (i = 0; i < bc->nheaders; i++) {
		buf_puts(&t, bc->headers[i].name);
		header_line(&t, &n, ": ", bc->headers[i].value);
	}
	header_line(&t, &n, "X-Request-ID: ", a->own->request_id);
	snprintf(num, sizeof num, "%d", a->attempt_no);
	header_line(&t, &n, "X-Fusebox-Attempt: ", num);
	/* the call's remaining budget at the attempt's start (DESIGN.md, step 5) */
	snprintf(num, sizeof num, "%lld", (long long)max_wait_ms);
	header_line(&t, &n, "X-Max-Wait: ", num);
	if (a->own->trace != NULL) {
		char tp[TRACECTX_TRACEPARENT_LEN + 1];

		tracectx_format(&a->tc, tp, sizeof tp);
		header_line(&t, &n, "traceparent: ", tp);
		if (a->own->tracestate != NULL)
			header_line(&t, &n, "tracestate: ", a->own->tracestate);
	}

	*size = (size_t)n * sizeof *nodes + t.len;
	nodes = xmalloc(*size);
	text = (char *)(nodes + n);
	memcpy(text, t.data, t.len);
	for (i = 0; i < n; i++) {
		nodes[i].data = text;
		nodes[i].next = i + 1 < n ? &nodes[i + 1] : NULL;
		text += strlen(text) + 1;
	}
	explicit_bzero(t.data, t.len);
	buf_free(&t);
	return nodes;
}

static void
attempt_headers_free(struct curl_slist *h, size_t size)
{
	if (h == NULL)
		return;
	explicit_bzero(h, size);
	free(h);
}

static int64_t
attempt_total_ms(const struct route_cfg *rc, struct backend_rt *b, int64_t input_tokens,
		 int64_t now_ms)
{
	const struct timeout_cfg *tc = &rc->timeout;
	int64_t p;

	if (tc->mode != TIMEOUT_DYNAMIC)
		return b->cfg->total_ms;
	p = health_percentile(&b->health, now_ms, tc->window_s, tc->percentile, 20);
	return budget_dynamic_timeout(tc, p, input_tokens);
}

/*
 * The connection side of an attempt: HTTP version, connection sharing,
 * TLS trust. "1.1": a connection per attempt in flight. "2": attempts are
 * h2 streams on a few shared connections (ALPN on https, prior knowledge
 * on http); PIPEWAIT makes a new attempt wait for a connection being set
 * up rather than open its own.
 *
 * h2 attempts keep their connections in a pool of their own (a curl share
 * holding a connection cache) rather than the multi handle's: libcurl 7.88
 * keeps one "can multiplex" flag per host:port, so h1 and h2 connections
 * to one server in one pool (two backends on one provider, or a reload
 * that changed http_version) make it queue attempts behind busy HTTP/1.1
 * connections until they time out, and stop multiplexing. The share
 * (e->h2_share) is used on the engine thread only (no lock callbacks).
 *
 * libcurl before 8.0.0 breaks a reused prior-knowledge connection (every
 * stream after the first fails with "Error in the HTTP2 framing layer",
 * curl issue #10634): there, h2 on an http url gets a fresh connection per
 * attempt, closed after it.
 */
static void
attempt_set_transport(struct engine *e, CURL *h, const struct backend_rt *b)
{
	const struct backend_cfg *bc = b->cfg;
	int tls = strncmp(bc->url, "https://", 8) == 0; /* the loader allows lower case only */

	if (bc->http_version == HTTP_VERSION_1_1) {
		curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		/* libcurl 7.88 scans every connection to the host for one to
		 * reuse: with hundreds in flight that scan is O(n) per
		 * attempt; a busy backend gets a fresh connection instead. */
		if (b->bulkhead.inflight > 64)
			curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_SHARE, e->h2_share);
		curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
				 tls ? (long)CURL_HTTP_VERSION_2TLS
				     : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
		if (tls || e->h2c_reuse) {
			curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
		} else {
			curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
			curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
		}
	}
	if (bc->tls_ca_file != NULL) {
		curl_easy_setopt(h, CURLOPT_CAINFO, bc->tls_ca_file);
		curl_easy_setopt(h, CURLOPT_CAPATH, (char *)NULL);
	}
}

struct attempt *
attempt_start(const struct attempt_owner *own, int bidx, int backup, int is_probe, int canary,
	      int target, int64_t now_us)
{
	struct engine *e = own->e;
	struct backend_rt *b = &e->backends[bidx];
	struct attempt *a = xcalloc(1, sizeof *a);
	struct attempt_limits lim;
	int64_t now_ms = now_us / 1000;
	CURL *h;

	a->own = own;
	a->b = b;
	a->bidx = bidx;
	a->is_probe = is_probe;
	a->canary = canary;
	a->target = target;
	a->id = e->next_attempt_id++;
	a->attempt_no = ++*own->attempts;
	a->started_us = now_us;
	a->started_wall = clock_wall_ms();
	buf_init(&a->resp, (size_t)b->cfg->max_response_bytes);
	timer_init(&a->t_first_byte, "first_byte", attempt_timer_first_byte, a);
	timer_init(&a->t_total, "total", attempt_timer_total, a);
	a->streaming = own->on_delta != NULL;
	sse_init(&a->sse);
	buf_init(&a->text, (size_t)b->cfg->max_response_bytes);
	{
		struct upstream_params p = *own->params;

		p.stream = a->streaming;
		a->body = upstream_build_body_ex(own->rc, b->cfg, backup, own->input, own->messages,
						 &p, &a->input_tokens);
	}
	lim.connect_ms = b->cfg->connect_ms;
	lim.first_byte_ms = b->cfg->first_byte_ms;
	lim.total_ms = attempt_total_ms(own->rc, b, a->input_tokens, now_ms);
	/* BUDGET_E_EXHAUSTED (a queue wait or a late timer spent the
	 * reserve) leaves the timeouts 0: the timers cut the attempt at once
	 * and attempt_end() records it like any timeout, which hands back
	 * the slot and the permit. */
	budget_attempt_plan(own->budget, now_ms, e->crowd, &lim, &a->to);
	if (a->to.at_cut) {
		a->crowd_ms = own->budget->deadline_ms;
		budget_crowd_add(e->crowd, a->crowd_ms);
	}
	if (own->trace != NULL) {
		/* the attempt's span: a child of the call's, in its trace */
		memcpy(a->tc.trace_id, own->trace->trace_id, sizeof a->tc.trace_id);
		a->tc.flags = own->trace->flags & 1;
		tracectx_new_span_id(&e->rng, a->tc.span_id);
	}
	a->rec_cfg = b->cfg;
	if (b->cfg->nrecord_headers > 0)
		a->rec = xcalloc((size_t)b->cfg->nrecord_headers, sizeof *a->rec);
	a->remaining_ms = budget_remaining(own->budget, now_ms);
	a->hdrs = attempt_headers(a, a->remaining_ms, &a->hdrs_size);
	b->attempts++;
	gate_sent(&b->gate, now_ms, a->input_tokens + upstream_max_tokens(own->rc, own->params));

	h = engine_easy_get(e);
	a->easy = h;
	curl_easy_setopt(h, CURLOPT_URL, b->cfg->url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, a->body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(a->body));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, a->hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(h, CURLOPT_PREREQDATA, a);
	a->xfer.done = attempt_transfer_done;
	curl_easy_setopt(h, CURLOPT_PRIVATE, &a->xfer);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a->errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)a->to.connect_ms);
	/* Our timers end the attempt; curl's own total is a backstop. */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)a->to.total_ms + 50);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	/* Per attempt libcurl allocates a receive buffer (16 KiB by default)
	 * and, for h2, an upload buffer (64 KiB), held for the whole wait and
	 * mostly never touched (figures: docs/ENGINE-NOTES.md, "Memory
	 * bounds"). Answers are small JSON; 16 KiB is libcurl's upload minimum,
	 * and attempt_gate.c frees it once the body is out (-4 KiB a waiting h2
	 * call: one page touched). The 4 KiB receive buffer is not touched
	 * while a call waits (1 KiB measured the same). */
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 4096L);
	curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
	attempt_set_transport(e, h, b);
	engine_timer_arm(e, &a->t_first_byte, a->started_us + a->to.first_byte_ms * 1000);
	engine_timer_arm(e, &a->t_total, a->started_us + a->to.total_ms * 1000);
	attempt_gate_start(&a->gw, e, h, b->cfg);
	return a;
}

char *
attempt_redact(struct engine *e, const char *text, size_t max)
{
	const char *keys[64];
	char *cut, *red;
	size_t longest = 0, n;
	int i, nkeys = 0;

	if (text == NULL)
		return NULL;
	for (i = 0; i < e->nbackends && nkeys < (int)ARRAY_SIZE(keys); i++) {
		if (e->backends[i].api_key == NULL)
			continue;
		keys[nkeys++] = e->backends[i].api_key;
		longest = MAX(longest, strlen(e->backends[i].api_key));
	}
	/* redacted before the cut (a key straddling it goes too), and only
	 * what can reach the excerpt is scanned */
	n = strnlen(text, max < SIZE_MAX - longest ? max + longest : SIZE_MAX);
	cut = xstrndup(text, n);
	red = textcheck_redact(cut, keys, nkeys);
	free(cut);
	if (strlen(red) <= max)
		return red;
	cut = xstrndup(red, max);
	free(red);
	return cut;
}

/*
 * The recorded response headers as a JSON object (lower-case names, values
 * with API keys redacted); NULL when none was configured or came. New
 * string.
 */
static char *
upstream_headers_json(struct attempt *a)
{
	cJSON *o = NULL;
	char *v, *text;
	int i;

	for (i = 0; a->rec != NULL && i < a->rec_cfg->nrecord_headers; i++) {
		if (a->rec[i][0] == '\0')
			continue;
		if (o == NULL)
			o = cJSON_CreateObject();
		v = attempt_redact(a->own->e, a->rec[i], CONFIG_RECORD_HEADER_NAME_MAX);
		cJSON_AddStringToObject(o, a->rec_cfg->record_headers[i], v);
		free(v);
	}
	if (o == NULL)
		return NULL;
	text = json_print(o);
	cJSON_Delete(o);
	return text;
}

static void
log_attempt_row(struct attempt *a, enum outcome o, int64_t connect_ms, int64_t fb_ms,
		int64_t total_ms, int64_t retry_after_ms, int64_t out_tokens, const char *raw,
		int64_t id, int attempt_no, const char *span_id, const char *headers)
{
	const struct attempt_owner *own = a->own;
	int raw_max = own->e->cfg->log.raw_output_bytes;
	char *excerpt = attempt_redact(own->e, raw, (size_t)MAX(raw_max, 0));
	struct store_val v[] = {
		SVI(id),
		SVI(own->call_id),
		SVT(own->request_id),
		SVT(own->rc->name),
		SVT(a->b->cfg->name),
		SVI(attempt_no),
		SVI(a->started_wall),
		SVI(a->to.total_ms),
		connect_ms >= 0 ? SVI(connect_ms) : SVN,
		fb_ms >= 0 ? SVI(fb_ms) : SVN,
		SVI(total_ms),
		a->status ? SVI(a->status) : SVN,
		SVT(outcome_name(o)),
		retry_after_ms >= 0 ? SVI(retry_after_ms) : SVN,
		SVI(a->input_tokens),
		out_tokens >= 0 ? SVI(out_tokens) : SVN,
		SVT(excerpt),
		SVT(span_id),
		SVT(headers),
	};

	store_put(own->e->store, STORE_ATTEMPT_INSERT, v, (int)ARRAY_SIZE(v));
	free(excerpt);
}

static void
log_vfail_row(struct attempt *a, const struct validate_result *vr, const char *raw)
{
	const struct attempt_owner *own = a->own;
	int raw_max = own->e->cfg->log.raw_output_bytes;
	char *excerpt = attempt_redact(own->e, raw, (size_t)MAX(raw_max, 0));
	struct store_val v[] = {
		SVI(own->e->next_vfail_id++),
		SVI(a->id),
		SVI(own->call_id),
		SVT(own->rc->name),
		SVT(validate_stage_name(vr->stage)),
		SVT(vr->rule),
		SVT(vr->detail),
		SVT(excerpt),
		SVI(clock_wall_ms()),
	};

	store_put(own->e->store, STORE_VFAIL_INSERT, v, (int)ARRAY_SIZE(v));
	free(excerpt);
}

/* The validation failure of a tool-call reply on a route that refuses them. */
static void
tool_calls_refused(const struct route_cfg *rc, struct validate_result *vr)
{
	memset(vr, 0, sizeof *vr);
	vr->stage = VALIDATE_E_FORMAT;
	snprintf(vr->rule, sizeof vr->rule, "tool_calls");
	snprintf(vr->detail, sizeof vr->detail, "%s",
		 rc->output.tool_calls == TOOL_CALLS_DENY
			 ? "the model answered with tool calls; the route's output.tool_calls is "
			   "deny"
			 : "the model answered with tool calls on a route with an output schema");
}

/* The result a tool-call answer stands for: the tool calls (from doc, or the body). */
static cJSON *
tool_calls_result(const cJSON *doc, const char *body, size_t len)
{
	cJSON *o = doc ? NULL : cJSON_ParseWithLength(body ? body : "", len), *tc;
	const cJSON *c0 =
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc ? doc : o, "choices"), 0);
	const cJSON *msg = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;

	tc = cJSON_Duplicate(msg ? cJSON_GetObjectItemCaseSensitive(msg, "tool_calls") : NULL, 1);
	cJSON_Delete(o);
	return tc ? tc : cJSON_CreateArray();
}

/* upstream_tool_calls_summary() of a body not kept parsed. */
static char *
tool_calls_summary_text(const char *body, size_t len, int full)
{
	cJSON *o = cJSON_ParseWithLength(body ? body : "", len);
	char *s = upstream_tool_calls_summary(o, full);

	cJSON_Delete(o);
	return s;
}

static enum outcome
validation_outcome(int stage)
{
	switch (stage) {
	case VALIDATE_E_FORMAT:
		return OUTCOME_VALIDATION_FORMAT;
	case VALIDATE_E_SCHEMA:
		return OUTCOME_VALIDATION_SCHEMA;
	case VALIDATE_E_SEMANTIC:
		return OUTCOME_VALIDATION_SEMANTIC;
	default:
		return OUTCOME_LOW_CONFIDENCE;
	}
}

/* The host of a URL, for server.address. */
static void
url_host(const char *url, char *out, size_t size)
{
	const char *p = strstr(url, "://"), *end;
	size_t n;

	p = p ? p + 3 : url;
	if (*p == '[') {
		end = strchr(p, ']');
		p++;
	} else {
		end = p + strcspn(p, ":/?#");
	}
	n = end ? MIN((size_t)(end - p), size - 1) : 0;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* The attempt's CLIENT span, a child of the call's (sampled calls, with an exporter). */
static void
attempt_span(struct attempt *a, const struct attempt_result *r, int64_t connect_ms, int64_t fb_ms)
{
	const struct attempt_owner *own = a->own;
	const struct backend_cfg *bc = a->b->cfg;
	const cJSON *model =
		r->reply.doc ? cJSON_GetObjectItemCaseSensitive(r->reply.doc, "model") : NULL;
	struct trace_span s;
	char name[300], host[256], key[300];
	int i;

	if (own->trace == NULL || !tracectx_sampled(&a->tc) || !trace_enabled())
		return;
	snprintf(name, sizeof name, "chat %s", bc->model);
	trace_span_begin(&s, name, TRACE_KIND_CLIENT, a->tc.trace_id, a->tc.span_id,
			 own->trace->span_id, a->started_wall * 1000000);
	trace_attr_str(&s, "gen_ai.operation.name", "chat");
	trace_attr_str(&s, "gen_ai.request.model", bc->model);
	if (cJSON_IsString(model))
		trace_attr_str(&s, "gen_ai.response.model", model->valuestring);
	/* the upstream's usage, when a reply was parsed and had one */
	if (r->raw && !r->streamed && r->reply.prompt_tokens >= 0)
		trace_attr_int(&s, "gen_ai.usage.input_tokens", r->reply.prompt_tokens);
	if (r->raw && !r->streamed && r->reply.completion_tokens >= 0)
		trace_attr_int(&s, "gen_ai.usage.output_tokens", r->reply.completion_tokens);
	url_host(bc->url, host, sizeof host);
	trace_attr_str(&s, "server.address", host);
	if (a->status > 0)
		trace_attr_int(&s, "http.response.status_code", a->status);
	if (r->outcome != OUTCOME_OK)
		trace_attr_str(&s, "error.type", outcome_name(r->outcome));
	trace_attr_str(&s, "fusebox.route", own->rc->name);
	trace_attr_str(&s, "fusebox.backend", bc->name);
	trace_attr_int(&s, "fusebox.attempt_no", a->attempt_no);
	trace_attr_str(&s, "fusebox.outcome", outcome_name(r->outcome));
	trace_attr_int(&s, "fusebox.remaining_ms", a->remaining_ms);
	trace_attr_int(&s, "fusebox.timeout_ms", a->to.total_ms);
	if (connect_ms >= 0)
		trace_attr_int(&s, "fusebox.connect_ms", connect_ms);
	if (fb_ms >= 0)
		trace_attr_int(&s, "fusebox.first_byte_ms", fb_ms);
	trace_attr_str(&s, "fusebox.breaker", breaker_state_name(a->b->breaker.state));
	trace_attr_int(&s, "fusebox.concurrency_limit", a->b->bulkhead.max);
	trace_attr_int(&s, "fusebox.inflight", a->inflight_start);
	if (a->b->cfg->adaptive.enabled && limiter_baseline_ms(&a->b->gate.limiter) > 0)
		trace_attr_int(&s, "fusebox.latency_baseline_ms",
			       (int64_t)limiter_baseline_ms(&a->b->gate.limiter));
	if (a->is_hedge)
		trace_attr_bool(&s, "fusebox.hedge", 1);
	if (a->is_probe)
		trace_attr_bool(&s, "fusebox.probe", 1);
	if (a->canary)
		trace_attr_bool(&s, "fusebox.canary", 1);
	for (i = 0; a->rec != NULL && i < a->rec_cfg->nrecord_headers; i++) {
		char *v;

		if (a->rec[i][0] == '\0')
			continue;
		snprintf(key, sizeof key, "http.response.header.%s", a->rec_cfg->record_headers[i]);
		v = attempt_redact(own->e, a->rec[i], CONFIG_RECORD_HEADER_NAME_MAX);
		trace_attr_str_array1(&s, key, v);
		free(v);
	}
	if (trace_include_io() && r->raw && r->reply.content != NULL) {
		char *out = attempt_redact(own->e, r->reply.content, SIZE_MAX);

		trace_attr_str(&s, "fusebox.output", out);
		free(out);
	}
	trace_span_end(&s, (a->started_wall + r->total_ms) * 1000000, r->outcome != OUTCOME_OK,
		       r->outcome != OUTCOME_OK ? outcome_name(r->outcome) : NULL);
}

/*
 * End attempt a: by curl (forced = OUTCOME__COUNT, facts from the handle)
 * or by a timer or the owner (forced outcome). Gathers the facts, writes
 * the rows, hands the result to the owner, frees a. What done() returned.
 */
static int
attempt_end(struct attempt *a, enum outcome forced, CURLcode code)
{
	const struct attempt_owner *own = a->own;
	struct engine *e = own->e;
	int64_t connect_us = -1, start_us = -1;
	int64_t fb_ms = -1, connect_ms = -1;
	struct attempt_result r;
	char *tools, *headers, span_id[TRACECTX_SPAN_HEX + 1];
	int i, rd, answered;

	memset(&r, 0, sizeof r);
	/* a stream another attempt of the owner outran: whatever came, it lost */
	if (a->outrun && !a->committed)
		forced = OUTCOME_HEDGE_CANCELLED;
	r.outcome = forced;
	r.retry_after_ms = -1;
	r.now_us = clock_mono_us();
	r.now_ms = r.now_us / 1000;
	engine_timer_cancel(e, &a->t_first_byte);
	engine_timer_cancel(e, &a->t_total);
	if (a->crowd_ms) {
		budget_crowd_remove(e->crowd, a->crowd_ms);
		a->crowd_ms = 0;
	}
	curl_easy_getinfo(a->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_getinfo(a->easy, CURLINFO_STARTTRANSFER_TIME_T, &start_us);
	if (connect_us > 0)
		connect_ms = connect_us / 1000;
	if (a->got_headers && a->first_byte_us > 0)
		fb_ms = (a->first_byte_us - a->started_us) / 1000;
	r.first_byte_ms = fb_ms;
	r.total_ms = (r.now_us - a->started_us) / 1000;
	curl_multi_remove_handle(e->multi, a->easy);
	attempt_gate_end(&a->gw); /* outside curl's callbacks: the engine or a timer */

	if (forced == OUTCOME__COUNT) {
		struct upstream_facts f = {
			.code = code,
			.http_status = a->status,
			.connected = connect_us > 0 || a->status > 0,
			.got_headers = a->got_headers,
			.body_too_big = a->body_too_big,
			.json_type = a->json_type,
			.bad_framing = strcasestr(a->errbuf, "chunk") != NULL,
		};

		r.outcome = upstream_classify(&f);
	}
	if (a->retry_after[0] && retry_parse_retry_after(a->retry_after, strlen(a->retry_after),
							 clock_wall_ms(), &r.retry_after_ms) != 0)
		r.retry_after_ms = -1;
	if (a->streaming && a->tools_denied && !a->committed) {
		r.reply.content = xstrdup("");
		r.outcome = OUTCOME_VALIDATION_FORMAT;
		tool_calls_refused(own->rc, &r.vr);
	} else if (a->streaming && a->committed) {
		/* Deltas went out: this attempt's answer stands, cut short or not. */
		r.reply.content = xstrdup(a->text.data ? a->text.data : "");
		r.reply.completion_tokens = -1;
		r.raw = 1;
		r.streamed = 1;
		r.ok = 1;
	} else if (r.outcome == OUTCOME_OK && a->streaming && a->sse_type) {
		/* A stream that ended without any content. */
		r.reply.content = xstrdup("");
		rd = validate_output(&own->rc->output, "", 0, &r.vr);
		r.outcome = rd == 0 ? OUTCOME_VALIDATION_FORMAT : validation_outcome(rd);
	} else if (r.outcome == OUTCOME_OK) {
		if (upstream_parse_reply_ex(a->resp.data ? a->resp.data : "", a->resp.len,
					    own->params && own->params->passthrough,
					    &r.reply) != 0) {
			r.outcome = OUTCOME_INVALID_RESPONSE;
		} else if (r.reply.ntool_calls > 0) {
			/* a tool-call reply is an answer where the route takes them */
			r.raw = 1;
			if (attempt_tool_calls_allowed(own->rc)) {
				r.ok = 1;
				r.vr.result =
					tool_calls_result(r.reply.doc, a->resp.data, a->resp.len);
			} else {
				r.outcome = OUTCOME_VALIDATION_FORMAT;
				tool_calls_refused(own->rc, &r.vr);
			}
		} else if (r.reply.content[0] == '\0' && !own->rc->output.present &&
			   r.reply.finish_reason &&
			   strcmp(r.reply.finish_reason, "content_filter") == 0) {
			/* the provider's filter spoke: an answer, empty as it is */
			r.raw = 1;
			r.ok = 1;
			r.vr.result = cJSON_CreateString("");
		} else {
			r.raw = 1;
			rd = validate_output(&own->rc->output, r.reply.content,
					     strlen(r.reply.content), &r.vr);
			if (rd == 0)
				r.ok = 1;
			else
				r.outcome = validation_outcome(rd);
		}
	}

	/* libcurl re-sent the request on a dead reused connection: each
	 * extra send reached the wire and is an attempt of its own. */
	for (i = 1; i < a->wire_sends; i++) {
		e->counters.wire_resends++;
		log_attempt_row(a, OUTCOME_RESET, -1, -1, 0, -1, -1, NULL, a->id, a->attempt_no,
				NULL, NULL);
		a->id = e->next_attempt_id++;
		a->attempt_no = ++*own->attempts;
	}
	tools = a->stream_tools != NULL ? stream_tools_summary(a, e->cfg->log.inputs)
		: r.reply.ntool_calls > 0
			? upstream_tool_calls_summary(r.reply.doc ? r.reply.doc : NULL,
						      e->cfg->log.inputs)
			: NULL;
	if (tools == NULL && r.reply.ntool_calls > 0)
		tools = tool_calls_summary_text(a->resp.data, a->resp.len, e->cfg->log.inputs);
	headers = upstream_headers_json(a);
	if (own->trace != NULL)
		tracectx_span_hex(a->tc.span_id, span_id);
	log_attempt_row(a, r.outcome, connect_ms, fb_ms, r.total_ms, r.retry_after_ms,
			r.reply.completion_tokens,
			tools ? tools
			: r.reply.content
				? r.reply.content
				: (r.outcome != OUTCOME_OK && a->resp.data ? a->resp.data : NULL),
			a->id, a->attempt_no, own->trace != NULL ? span_id : NULL, headers);
	free(tools);
	attempt_span(a, &r, connect_ms, fb_ms);
	free(headers);
	if (outcome_is_validation(r.outcome))
		log_vfail_row(a, &r.vr, r.reply.content);

	answered = own->done(a, &r, own->arg);

	validate_result_clear(&r.vr);
	upstream_reply_clear(&r.reply);
	engine_easy_put(e, a->easy);
	attempt_headers_free(a->hdrs, a->hdrs_size);
	free(a->body);
	buf_free(&a->resp);
	buf_free(&a->text);
	sse_free(&a->sse);
	cJSON_Delete(a->stream_tools);
	free(a->rec);
	free(a);
	return answered;
}

void
attempt_stop(struct attempt *a, enum outcome o)
{
	attempt_end(a, o, CURLE_OK);
}

/* The engine's transfer-done hook of an attempt (struct engine_transfer). */
static void
attempt_transfer_done(struct engine *e, struct engine_transfer *t, CURLcode code)
{
	attempt_end((struct attempt *)t, OUTCOME__COUNT, code);
}
