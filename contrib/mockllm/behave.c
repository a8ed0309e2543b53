/*
 * Behaviours (presets, the field table, parsing), backends, and the heap
 * of suspended requests with suspend/resume. Any thread; the shared parts
 * under mock.lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#include "mockllm.h"

#define BASE_JSON                                                                                  \
	"{\"intent\":\"refund\",\"confidence\":0.92,"                                              \
	"\"summary\":\"customer wants a refund\"}"

static const char *const preset_names[PRESET_COUNT] = {
	"good",
	"fenced",
	"prose",
	"truncated",
	"wrong_enum",
	"confidence_out_of_range",
	"confidence_string",
	"key_case",
	"empty",
	"low_confidence",
};

const char *const preset_texts[PRESET_COUNT] = {
	BASE_JSON,
	"```json\n" BASE_JSON "\n```",
	"Sure! Here is the result: " BASE_JSON " Hope this helps.",
	"{\"intent\":\"refund\",\"confid",
	"{\"intent\":\"banana\",\"confidence\":0.92,"
	"\"summary\":\"customer wants a refund\"}",
	"{\"intent\":\"refund\",\"confidence\":1.7,"
	"\"summary\":\"customer wants a refund\"}",
	"{\"intent\":\"refund\",\"confidence\":\"0.85\","
	"\"summary\":\"customer wants a refund\"}",
	"{\"Intent\":\"refund\",\"CONFIDENCE\":0.9,"
	"\"Summary\":\"customer wants a refund\"}",
	"",
	"{\"intent\":\"refund\",\"confidence\":0.4,"
	"\"summary\":\"customer wants a refund\"}",
};

enum field_type {
	FIELD_STR,
	FIELD_HEADER, /* string without CR/LF; retry_after also takes ints */
	FIELD_BOOL,
	FIELD_MS,
	FIELD_STATUS,
	FIELD_BYTES,
	FIELD_PRESET,
	FIELD_JSON,  /* any JSON, kept as its text */
	FIELD_PCT,   /* a number 0..100 (double) */
	FIELD_EXP,   /* a number 0.5..4 (double) */
	FIELD_COUNT, /* an integer 0..COUNT_MAX */
};

#define COUNT_MAX 1000000000LL

struct field {
	const char *name;
	enum field_type type;
	size_t off;
};

/*
 * The behaviour keys. Latency: delay_ms, or delay_min_ms..delay_max_ms
 * (uniform, the seeded generator), plus hang_ms; hang: never answer. The
 * delay comes before the status line, so it is the time to the first byte
 * of a JSON answer and of a stream alike (a stream then waits
 * stream_first_delay_ms more for its first event, stream_chunk_ms between
 * events). Failures: status (+ retry_after), reset, reset_after_bytes,
 * truncate, drip_ms, body, body_bytes, content_type. Answers: content,
 * preset, tool_calls, finish_reason. "script": behaviours served first, in
 * order, one per request.
 *
 * tail_pct P (0..100) with tail_delay_ms T: a heavy latency tail. Each
 * request is, with probability P %, delayed T ms instead of delay_ms /
 * delay_min_ms..delay_max_ms (the same seeded generator; hang_ms still
 * adds). The two keys go together.
 *
 * knee K (>= 1) with knee_exp E (default 1, 0.5..4): a server that slows
 * down past K requests in flight. With n requests of this backend in flight
 * when a request's body is complete (counted from arrival to the end of
 * its answer, itself included), its delay (normal or tail) is multiplied by
 * (n / K)^E when n > K. E = 1: latency grows linearly with concurrency
 * while throughput stays flat at K / delay (processor sharing); E = 2: the
 * throughput itself falls as K^2 / (n x delay), the congestion collapse of
 * a thrashing model server. Nothing blocks: the delay is a timer.
 *
 * ratelimit_requests N and/or ratelimit_tokens T with ratelimit_reset_ms
 * R: a provider's fixed rate-limit window per backend. The window opens
 * with the first request after the previous one ended (or after the
 * behaviour was set, or /_mock/reset) and lasts R ms. A request that
 * would be the (N+1)-th in the window, or whose tokens (prompt estimate +
 * the answer's completion tokens) would pass T, is answered 429 at once
 * (no delay) with retry-after-ms (ms left in the window, at least 1) and
 * retry-after (seconds, rounded up), and is not counted in the window.
 * Every answer of such a backend, 429 included, carries
 * x-ratelimit-limit-requests / x-ratelimit-remaining-requests (N minus the
 * requests admitted in the window, this one included) /
 * x-ratelimit-reset-requests (time left in the window at the answer, in
 * OpenAI's duration format: "20ms", "1.5s", "6m0s"), and the -tokens
 * triple when T is set. /_mock/stats shows per backend "requests"
 * (received), "ratelimited", "tail_delayed", "knee_delayed" and the open
 * window ("ratelimit_window").
 */
static const struct field behave_fields[] = {
	{"content", FIELD_STR, offsetof(struct behave, content)},
	{"preset", FIELD_PRESET, offsetof(struct behave, preset)},
	{"delay_ms", FIELD_MS, offsetof(struct behave, delay_ms)},
	{"delay_min_ms", FIELD_MS, offsetof(struct behave, delay_min_ms)},
	{"delay_max_ms", FIELD_MS, offsetof(struct behave, delay_max_ms)},
	{"status", FIELD_STATUS, offsetof(struct behave, status)},
	{"retry_after", FIELD_HEADER, offsetof(struct behave, retry_after)},
	{"hang", FIELD_BOOL, offsetof(struct behave, hang)},
	{"hang_ms", FIELD_MS, offsetof(struct behave, hang_ms)},
	{"reset", FIELD_BOOL, offsetof(struct behave, reset)},
	{"reset_after_bytes", FIELD_BYTES, offsetof(struct behave, reset_after_bytes)},
	{"drip_ms", FIELD_MS, offsetof(struct behave, drip_ms)},
	{"truncate", FIELD_BOOL, offsetof(struct behave, truncate)},
	{"content_type", FIELD_HEADER, offsetof(struct behave, content_type)},
	{"body", FIELD_STR, offsetof(struct behave, body)},
	{"body_bytes", FIELD_BYTES, offsetof(struct behave, body_bytes)},
	{"stream_first_delay_ms", FIELD_MS, offsetof(struct behave, stream_first_delay_ms)},
	{"stream_chunk_ms", FIELD_MS, offsetof(struct behave, stream_chunk_ms)},
	{"tool_calls", FIELD_JSON, offsetof(struct behave, tool_calls)},
	{"finish_reason", FIELD_HEADER, offsetof(struct behave, finish_reason)},
	{"tail_pct", FIELD_PCT, offsetof(struct behave, tail_pct)},
	{"tail_delay_ms", FIELD_MS, offsetof(struct behave, tail_delay_ms)},
	{"knee", FIELD_COUNT, offsetof(struct behave, knee)},
	{"knee_exp", FIELD_EXP, offsetof(struct behave, knee_exp)},
	{"ratelimit_requests", FIELD_COUNT, offsetof(struct behave, ratelimit_requests)},
	{"ratelimit_tokens", FIELD_COUNT, offsetof(struct behave, ratelimit_tokens)},
	{"ratelimit_reset_ms", FIELD_MS, offsetof(struct behave, ratelimit_reset_ms)},
};

void
behave_init(struct behave *b)
{
	memset(b, 0, sizeof *b);
	b->preset = PRESET_GOOD;
	b->status = 200;
	b->delay_min_ms = -1;
	b->delay_max_ms = -1;
	b->reset_after_bytes = -1;
	b->body_bytes = -1;
	b->tail_pct = -1;
	b->tail_delay_ms = -1;
	b->knee_exp = 1;
}

void
behave_free(struct behave *b)
{
	free(b->content);
	free(b->retry_after);
	free(b->content_type);
	free(b->body);
	free(b->tool_calls);
	free(b->finish_reason);
	behave_init(b);
}

void
behave_copy(struct behave *dst, const struct behave *src)
{
	*dst = *src;
	if (src->content != NULL)
		dst->content = xstrdup(src->content);
	if (src->retry_after != NULL)
		dst->retry_after = xstrdup(src->retry_after);
	if (src->content_type != NULL)
		dst->content_type = xstrdup(src->content_type);
	if (src->body != NULL)
		dst->body = xstrdup(src->body);
	if (src->tool_calls != NULL)
		dst->tool_calls = xstrdup(src->tool_calls);
	if (src->finish_reason != NULL)
		dst->finish_reason = xstrdup(src->finish_reason);
}

void
script_free(struct behave *script, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		behave_free(&script[i]);
	free(script);
}

static int
json_int(const cJSON *j, int64_t lo, int64_t hi, int64_t *out)
{
	int rc = -1;
	double d;

	if (!cJSON_IsNumber(j))
		goto out;
	d = j->valuedouble;
	if (d != floor(d) || d < (double)lo || d > (double)hi)
		goto out;
	*out = (int64_t)d;
	rc = 0;
out:
	return rc;
}

static int
behave_field_set(struct behave *b, const struct field *f, const cJSON *v, char **cause)
{
	char *base = (char *)b + f->off;
	char **sp = (char **)(void *)base;
	int64_t *ip = (int64_t *)(void *)base;
	double *dp = (double *)(void *)base;
	int *bp = (int *)(void *)base;
	int64_t n;
	int i, rc = -1;

	switch (f->type) {
	case FIELD_STR:
	case FIELD_HEADER:
		if (f->type == FIELD_HEADER && cJSON_IsNumber(v) &&
		    json_int(v, 0, INT_MAX, &n) == 0) {
			free(*sp);
			*sp = xasprintf("%" PRId64, n);
			break;
		}
		if (!cJSON_IsString(v)) {
			*cause = xasprintf("\"%s\" must be a string", f->name);
			goto out;
		}
		if (f->type == FIELD_HEADER && strpbrk(v->valuestring, "\r\n") != NULL) {
			*cause = xasprintf("\"%s\" must not contain CR/LF", f->name);
			goto out;
		}
		free(*sp);
		*sp = xstrdup(v->valuestring);
		break;
	case FIELD_BOOL:
		if (!cJSON_IsBool(v)) {
			*cause = xasprintf("\"%s\" must be true or false", f->name);
			goto out;
		}
		*bp = cJSON_IsTrue(v);
		break;
	case FIELD_MS:
		if (json_int(v, 0, MS_MAX, &n) != 0) {
			*cause = xasprintf("\"%s\" must be an integer in "
					   "0..%lld",
					   f->name, MS_MAX);
			goto out;
		}
		*ip = n;
		break;
	case FIELD_STATUS:
		if (json_int(v, 200, 599, &n) != 0) {
			*cause = xasprintf("\"%s\" must be an integer in "
					   "200..599",
					   f->name);
			goto out;
		}
		*ip = n;
		break;
	case FIELD_BYTES:
		if (json_int(v, 0, BODY_BYTES_MAX, &n) != 0) {
			*cause = xasprintf("\"%s\" must be an integer in "
					   "0..%lld",
					   f->name, BODY_BYTES_MAX);
			goto out;
		}
		*ip = n;
		break;
	case FIELD_PCT:
	case FIELD_EXP:
		if (!cJSON_IsNumber(v) ||
		    !(f->type == FIELD_PCT ? v->valuedouble >= 0 && v->valuedouble <= 100
					   : v->valuedouble >= 0.5 && v->valuedouble <= 4)) {
			*cause = xasprintf("\"%s\" must be a number in %s", f->name,
					   f->type == FIELD_PCT ? "0..100" : "0.5..4");
			goto out;
		}
		*dp = v->valuedouble;
		break;
	case FIELD_COUNT:
		if (json_int(v, 0, COUNT_MAX, &n) != 0) {
			*cause = xasprintf("\"%s\" must be an integer in 0..%lld", f->name,
					   COUNT_MAX);
			goto out;
		}
		*ip = n;
		break;
	case FIELD_JSON:
		if (!cJSON_IsArray(v)) {
			*cause = xasprintf("\"%s\" must be an array", f->name);
			goto out;
		}
		free(*sp);
		*sp = cJSON_PrintUnformatted(v);
		break;
	case FIELD_PRESET:
		if (!cJSON_IsString(v)) {
			*cause = xasprintf("\"%s\" must be a string", f->name);
			goto out;
		}
		for (i = 0; i < PRESET_COUNT; i++) {
			if (strcmp(v->valuestring, preset_names[i]) == 0)
				break;
		}
		if (i == PRESET_COUNT) {
			*cause = xasprintf("unknown preset \"%s\"", v->valuestring);
			goto out;
		}
		*bp = i;
		break;
	}
	rc = 0;
out:
	return rc;
}

/*
 * Parse a behaviour object into b (initialised here). A "script" key is
 * accepted only when scriptp is not NULL; the script array is returned
 * through scriptp/nscriptp (NULL/0 when absent). Returns 0, or -1 with a
 * caller-freed *cause.
 */
int
behave_parse(const cJSON *j, struct behave *b, struct behave **scriptp, size_t *nscriptp,
	     char **cause)
{
	struct behave *script = NULL;
	size_t nscript = 0, i;
	const cJSON *item, *s;
	char *sub = NULL;
	int rc = -1;

	behave_init(b);
	if (!cJSON_IsObject(j)) {
		*cause = xasprintf("behaviour must be a JSON object");
		goto out;
	}
	cJSON_ArrayForEach(item, j)
	{
		if (strcmp(item->string, "script") == 0) {
			if (scriptp == NULL) {
				*cause = xasprintf("\"script\" is not allowed "
						   "inside a script item");
				goto out;
			}
			if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) > SCRIPT_MAX) {
				*cause = xasprintf("\"script\" must be an "
						   "array of at most %d behaviours",
						   SCRIPT_MAX);
				goto out;
			}
			script_free(script, nscript);
			nscript = 0;
			script = xmalloc(sizeof *script * (size_t)cJSON_GetArraySize(item));
			cJSON_ArrayForEach(s, item)
			{
				if (behave_parse(s, &script[nscript], NULL, NULL, &sub) != 0) {
					*cause = xasprintf("script[%zu]: %s", nscript, sub);
					goto out;
				}
				nscript++;
			}
			continue;
		}
		for (i = 0; i < sizeof behave_fields / sizeof behave_fields[0]; i++) {
			if (strcmp(item->string, behave_fields[i].name) == 0)
				break;
		}
		if (i == sizeof behave_fields / sizeof behave_fields[0]) {
			*cause = xasprintf("unknown key \"%s\"", item->string);
			goto out;
		}
		if (behave_field_set(b, &behave_fields[i], item, cause) != 0)
			goto out;
	}
	if ((b->delay_min_ms < 0) != (b->delay_max_ms < 0)) {
		*cause = xasprintf("\"delay_min_ms\" and \"delay_max_ms\" go "
				   "together");
		goto out;
	}
	if (b->delay_min_ms > b->delay_max_ms) {
		*cause = xasprintf("\"delay_min_ms\" is above "
				   "\"delay_max_ms\"");
		goto out;
	}
	if (b->delay_min_ms >= 0 && b->delay_ms > 0) {
		*cause = xasprintf("\"delay_ms\" conflicts with "
				   "\"delay_min_ms\"/\"delay_max_ms\"");
		goto out;
	}
	if ((b->tail_pct < 0) != (b->tail_delay_ms < 0)) {
		*cause = xasprintf("\"tail_pct\" and \"tail_delay_ms\" go together");
		goto out;
	}
	if ((b->ratelimit_requests > 0 || b->ratelimit_tokens > 0) != (b->ratelimit_reset_ms > 0)) {
		*cause = xasprintf("\"ratelimit_reset_ms\" (> 0) goes with "
				   "\"ratelimit_requests\" or \"ratelimit_tokens\" (> 0)");
		goto out;
	}
	if (scriptp != NULL) {
		*scriptp = script;
		*nscriptp = nscript;
		script = NULL;
		nscript = 0;
	}
	rc = 0;
out:
	free(sub);
	script_free(script, nscript);
	if (rc != 0)
		behave_free(b);
	return rc;
}

int
backend_name_valid(const char *s, size_t n)
{
	size_t i;
	int ok = n > 0 && n <= BACKEND_NAME_MAX;

	for (i = 0; ok && i < n; i++) {
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		     (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.';
	}
	return ok;
}

/* Find or create a backend by (validated) name; caller holds mock.lock. */
struct backend *
backend_get(const char *name, size_t n)
{
	struct backend *be;

	for (be = mock.backends; be != NULL; be = be->next) {
		if (strlen(be->name) == n && memcmp(be->name, name, n) == 0)
			goto out;
	}
	if (mock.nbackends >= BACKENDS_MAX)
		goto out;
	be = xmalloc(sizeof *be);
	memset(be, 0, sizeof *be);
	memcpy(be->name, name, n);
	be->name[n] = '\0';
	behave_init(&be->base);
	be->next = mock.backends;
	mock.backends = be;
	mock.nbackends++;
out:
	return be;
}

/* Close the backend's rate-limit window; caller holds mock.lock. */
void
backend_window_clear(struct backend *be)
{
	be->rl_end_ms = 0;
	be->rl_requests = 0;
	be->rl_tokens = 0;
}

void
backend_free(struct backend *be)
{
	behave_free(&be->base);
	script_free(be->script, be->nscript);
	cJSON_Delete(be->last_request);
	free(be);
}

/*
 * Replace a backend's behaviour and script from JSON. Returns 0, or -1
 * with a caller-freed *cause.
 */
int
backend_set(const char *name, const cJSON *j, char **cause)
{
	struct behave b, *script = NULL, old, *oldscript = NULL;
	size_t nscript = 0, noldscript = 0;
	struct backend *be;
	int rc = -1;

	behave_init(&old);
	if (behave_parse(j, &b, &script, &nscript, cause) != 0)
		goto out;
	pthread_mutex_lock(&mock.lock);
	be = backend_get(name, strlen(name));
	if (be != NULL) {
		old = be->base;
		oldscript = be->script;
		noldscript = be->nscript;
		be->base = b;
		be->script = script;
		be->nscript = nscript;
		be->script_pos = 0;
		backend_window_clear(be);
		behave_init(&b);
		script = NULL;
		nscript = 0;
	}
	pthread_mutex_unlock(&mock.lock);
	if (be == NULL) {
		behave_free(&b);
		*cause = xasprintf("too many backends (max %d)", BACKENDS_MAX);
		goto out;
	}
	rc = 0;
out:
	behave_free(&old);
	script_free(oldscript, noldscript);
	script_free(script, nscript);
	return rc;
}

/* Heap of suspended requests by due_ms; caller holds mock.lock. */
static void
heap_swap(size_t a, size_t b)
{
	struct req *t = mock.heap[a];

	mock.heap[a] = mock.heap[b];
	mock.heap[b] = t;
	mock.heap[a]->heap_idx = a;
	mock.heap[b]->heap_idx = b;
}

static void
heap_up(size_t i)
{
	while (i > 0 && mock.heap[(i - 1) / 2]->due_ms > mock.heap[i]->due_ms) {
		heap_swap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void
heap_down(size_t i)
{
	size_t l, m;

	for (;;) {
		l = 2 * i + 1;
		m = i;
		if (l < mock.heap_len && mock.heap[l]->due_ms < mock.heap[m]->due_ms)
			m = l;
		if (l + 1 < mock.heap_len && mock.heap[l + 1]->due_ms < mock.heap[m]->due_ms)
			m = l + 1;
		if (m == i)
			break;
		heap_swap(i, m);
		i = m;
	}
}

static void
heap_push(struct req *r)
{
	if (mock.heap_len == mock.heap_cap) {
		mock.heap_cap = mock.heap_cap ? mock.heap_cap * 2 : 256;
		mock.heap = xrealloc(mock.heap, mock.heap_cap * sizeof *mock.heap);
	}
	r->heap_idx = mock.heap_len;
	mock.heap[mock.heap_len++] = r;
	heap_up(r->heap_idx);
}

static void
heap_remove(struct req *r)
{
	size_t i = r->heap_idx;

	mock.heap_len--;
	if (i != mock.heap_len) {
		heap_swap(i, mock.heap_len);
		heap_down(i);
		heap_up(i);
	}
	r->heap_idx = SIZE_MAX;
}

void
mock_wake(void)
{
	uint64_t one = 1;

	if (write(mock.wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
		fprintf(stderr, "fusebox-mockllm: eventfd: %s\n", strerror(errno));
}

/*
 * Take a suspended r off the heap and the watch set; the caller holds
 * mock.lock and must resume the returned connection after dropping it.
 */
struct MHD_Connection *
req_unsuspend(struct req *r)
{
	heap_remove(r);
	if (r->fd >= 0)
		epoll_ctl(mock.epfd, EPOLL_CTL_DEL, r->fd, NULL);
	r->suspended = 0;
	return r->conn;
}

/*
 * Suspend r's connection until due_ms (WAIT_FOREVER: until the client goes
 * away or the server stops). Called from the MHD thread inside a handler or
 * content reader. -1 when the server is stopping or the client is gone.
 */
int
req_suspend(struct req *r, int64_t due_ms)
{
	struct epoll_event ev;
	int rc = -1;

	pthread_mutex_lock(&mock.lock);
	if (mock.stopping || r->gone)
		goto out;
	MHD_suspend_connection(r->conn);
	r->suspended = 1;
	r->due_ms = due_ms;
	heap_push(r);
	if (r->fd >= 0) {
		memset(&ev, 0, sizeof ev);
		ev.events = EPOLLRDHUP;
		ev.data.ptr = r;
		epoll_ctl(mock.epfd, EPOLL_CTL_ADD, r->fd, &ev);
	}
	if (r->heap_idx == 0)
		mock_wake();
	rc = 0;
out:
	pthread_mutex_unlock(&mock.lock);
	return rc;
}

int
req_alive(struct req *r)
{
	int alive;

	pthread_mutex_lock(&mock.lock);
	alive = !mock.stopping && !r->gone;
	pthread_mutex_unlock(&mock.lock);
	return alive;
}

void
req_free(struct req *r)
{
	size_t i;

	if (r == NULL)
		return;
	free(r->body);
	cJSON_Delete(r->headers);
	behave_free(&r->bh);
	free(r->model);
	for (i = 0; i < r->nsegs; i++)
		free(r->segs[i].data);
	free(r->segs);
	free(r);
}
