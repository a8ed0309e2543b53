/*
 * fusebox-mockllm: an OpenAI-compatible chat-completions mock server, "the
 * LLM" of the integration tests and the demo.
 *
 * Design. Every backend (`/b/<name>/v1/chat/completions`, or `default` for
 * `/v1/chat/completions`) has a base behaviour and a FIFO script of
 * behaviours, both replaced through the control API (`/_mock/...`) or a
 * scenario timeline. A request copies its behaviour when its body is
 * complete, and from then on owns that copy.
 *
 * No thread ever sleeps for a request. libmicrohttpd runs one epoll polling
 * thread; a request that must wait (delay, hang, drip, stream pacing)
 * suspends its connection and sits in a min-heap of wake-up times. The timer
 * thread resumes due connections and applies scenario steps. It sleeps in
 * its own epoll set, which holds an eventfd (to be woken early) and every
 * suspended socket (EPOLLRDHUP), so a client that goes away frees its
 * connection at once (MHD cannot see that while it is suspended). Response
 * bodies are a list of segments produced by a content-reader callback; a
 * segment may be virtual (n bytes of one fill character), so huge bodies
 * cost no memory.
 *
 * Invariants: a connection is resumed exactly once per suspension: whoever
 * clears req->suspended under mock.lock (timer thread or shutdown) resumes
 * it, and it does so after dropping the lock. A request in the heap is
 * suspended, so MHD cannot complete (and free) it. On shutdown every
 * suspended connection is resumed before MHD_stop_daemon.
 *
 * Threads: main (arguments, signals, shutdown), the MHD polling thread
 * (handlers, content readers, completion), the timer thread. mock.lock
 * guards backends, counters, the heap and the suspension fields of a req.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BODY_MAX		(4 * 1024 * 1024)
#define SCENARIO_MAX		(1024 * 1024)
#define ARRIVALS_MAX		1000
#define BACKENDS_MAX		1024
#define BACKEND_NAME_MAX	64
#define SCRIPT_MAX		10000
#define MS_MAX			(24LL * 3600 * 1000)
#define BODY_BYTES_MAX		(1024LL * 1024 * 1024)
#define LOOP_PAUSE_MS		20000
#define WAIT_FOREVER		INT64_MAX
#define READ_BLOCK		(16 * 1024)
#define STREAM_PIECES		4

#define BASE_JSON \
	"{\"intent\":\"refund\",\"confidence\":0.92," \
	"\"summary\":\"customer wants a refund\"}"

enum preset {
	PRESET_GOOD,
	PRESET_FENCED,
	PRESET_PROSE,
	PRESET_TRUNCATED,
	PRESET_WRONG_ENUM,
	PRESET_CONFIDENCE_OUT_OF_RANGE,
	PRESET_CONFIDENCE_STRING,
	PRESET_KEY_CASE,
	PRESET_EMPTY,
	PRESET_LOW_CONFIDENCE,
	PRESET_COUNT
};

static const char *const preset_names[PRESET_COUNT] = {
	"good", "fenced", "prose", "truncated", "wrong_enum",
	"confidence_out_of_range", "confidence_string", "key_case", "empty",
	"low_confidence",
};

static const char *const preset_texts[PRESET_COUNT] = {
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

/*
 * What a backend does with one request. Strings are owned. Integers use 0
 * for "off" except reset_after_bytes, body_bytes and delay_min/max_ms,
 * which use -1.
 */
struct behave {
	char	*content;
	int	 preset;
	int64_t	 delay_ms;
	int64_t	 delay_min_ms;
	int64_t	 delay_max_ms;
	int64_t	 status;
	char	*retry_after;
	int	 hang;
	int64_t	 hang_ms;
	int	 reset;
	int64_t	 reset_after_bytes;
	int64_t	 drip_ms;
	int	 truncate;
	char	*content_type;
	char	*body;
	int64_t	 body_bytes;
	int64_t	 stream_first_delay_ms;
	int64_t	 stream_chunk_ms;
};

enum field_type {
	FIELD_STR,
	FIELD_HEADER,	/* string without CR/LF; retry_after also takes ints */
	FIELD_BOOL,
	FIELD_MS,
	FIELD_STATUS,
	FIELD_BYTES,
	FIELD_PRESET,
};

struct field {
	const char	*name;
	enum field_type	 type;
	size_t		 off;
};

static const struct field behave_fields[] = {
	{ "content", FIELD_STR, offsetof(struct behave, content) },
	{ "preset", FIELD_PRESET, offsetof(struct behave, preset) },
	{ "delay_ms", FIELD_MS, offsetof(struct behave, delay_ms) },
	{ "delay_min_ms", FIELD_MS, offsetof(struct behave, delay_min_ms) },
	{ "delay_max_ms", FIELD_MS, offsetof(struct behave, delay_max_ms) },
	{ "status", FIELD_STATUS, offsetof(struct behave, status) },
	{ "retry_after", FIELD_HEADER, offsetof(struct behave, retry_after) },
	{ "hang", FIELD_BOOL, offsetof(struct behave, hang) },
	{ "hang_ms", FIELD_MS, offsetof(struct behave, hang_ms) },
	{ "reset", FIELD_BOOL, offsetof(struct behave, reset) },
	{ "reset_after_bytes", FIELD_BYTES,
	    offsetof(struct behave, reset_after_bytes) },
	{ "drip_ms", FIELD_MS, offsetof(struct behave, drip_ms) },
	{ "truncate", FIELD_BOOL, offsetof(struct behave, truncate) },
	{ "content_type", FIELD_HEADER,
	    offsetof(struct behave, content_type) },
	{ "body", FIELD_STR, offsetof(struct behave, body) },
	{ "body_bytes", FIELD_BYTES, offsetof(struct behave, body_bytes) },
	{ "stream_first_delay_ms", FIELD_MS,
	    offsetof(struct behave, stream_first_delay_ms) },
	{ "stream_chunk_ms", FIELD_MS,
	    offsetof(struct behave, stream_chunk_ms) },
};

struct backend {
	char		 name[BACKEND_NAME_MAX + 1];
	struct behave	 base;
	struct behave	*script;
	size_t		 nscript;
	size_t		 script_pos;
	uint64_t	 requests;
	uint64_t	 completed;
	uint64_t	 aborted;
	int64_t		 inflight;
	int64_t		 max_inflight;
	cJSON		*last_request;
	int64_t		 arrivals[ARRIVALS_MAX];
	size_t		 arrivals_n;
	size_t		 arrivals_next;
	struct backend	*next;
};

/* One piece of a response body; data NULL means len bytes of fill. */
struct seg {
	char	*data;
	size_t	 len;
	char	 fill;
	int64_t	 due_ms;	/* monotonic; not sent before */
};

enum req_kind {
	REQ_CHAT,
	REQ_CONTROL,
	REQ_OTHER,
};

enum req_phase {
	PHASE_RECV,
	PHASE_WAIT,
	PHASE_SEND,
};

struct req {
	struct MHD_Connection	*conn;
	int			 fd;
	enum req_kind		 kind;
	enum req_phase		 phase;
	struct backend		*backend;	/* REQ_CHAT only; never freed */
	uint64_t		 id;
	int64_t			 arrival_ms;
	char			*body;
	size_t			 body_len;
	size_t			 body_cap;
	int			 too_big;
	cJSON			*headers;
	struct behave		 bh;
	char			*model;
	int			 stream;
	int64_t			 prompt_tokens;
	unsigned int		 status;

	/* Guarded by mock.lock. */
	int			 suspended;
	int			 gone;
	int64_t			 due_ms;
	size_t			 heap_idx;

	/* Response body, read by the MHD thread only. */
	struct seg		*segs;
	size_t			 nsegs;
	size_t			 cur;
	uint64_t		 cur_start;
	uint64_t		 total;
	int64_t			 limit;
	int64_t			 drip_ms;
	int64_t			 next_drip_ms;
};

static struct mock {
	pthread_mutex_t	  lock;
	int		  epfd;
	int		  wakefd;
	int		  stopping;
	int		  quiet;
	int64_t		  start_ms;
	uint64_t	  next_id;
	uint64_t	  rng;
	struct backend	 *backends;
	size_t		  nbackends;
	struct req	**heap;
	size_t		  heap_len;
	size_t		  heap_cap;
	cJSON		 *scenario;
	const cJSON	 *timeline;
	int		  scen_n;
	int		  scen_idx;
	int		  scen_loop;
	int64_t		  scen_base_ms;
	int64_t		  scen_period_ms;
} mock = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.epfd = -1,
	.wakefd = -1,
};

static void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		fprintf(stderr, "fusebox-mockllm: out of memory (%zu)\n", n);
		abort();
	}
	return p;
}

static void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL) {
		fprintf(stderr, "fusebox-mockllm: out of memory (%zu)\n", n);
		abort();
	}
	return q;
}

static char *
xstrdup(const char *s)
{
	size_t n = strlen(s);
	char *p = xmalloc(n + 1);

	memcpy(p, s, n + 1);
	return p;
}

static char *
xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0) {
		fprintf(stderr, "fusebox-mockllm: out of memory\n");
		abort();
	}
	va_end(ap);
	return p;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
log_line(const char *fmt, ...)
{
	va_list ap;

	if (mock.quiet)
		return;
	va_start(ap, fmt);
	fputs("fusebox-mockllm: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* splitmix64; caller holds mock.lock. */
static uint64_t
rng_next(void)
{
	uint64_t z;

	mock.rng += 0x9e3779b97f4a7c15ULL;
	z = mock.rng;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void
behave_init(struct behave *b)
{
	memset(b, 0, sizeof *b);
	b->preset = PRESET_GOOD;
	b->status = 200;
	b->delay_min_ms = -1;
	b->delay_max_ms = -1;
	b->reset_after_bytes = -1;
	b->body_bytes = -1;
}

static void
behave_free(struct behave *b)
{
	free(b->content);
	free(b->retry_after);
	free(b->content_type);
	free(b->body);
	behave_init(b);
}

static void
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
}

static void
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
behave_field_set(struct behave *b, const struct field *f, const cJSON *v,
    char **cause)
{
	char *base = (char *)b + f->off;
	char **sp = (char **)(void *)base;
	int64_t *ip = (int64_t *)(void *)base;
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
		if (f->type == FIELD_HEADER &&
		    strpbrk(v->valuestring, "\r\n") != NULL) {
			*cause = xasprintf("\"%s\" must not contain CR/LF",
			    f->name);
			goto out;
		}
		free(*sp);
		*sp = xstrdup(v->valuestring);
		break;
	case FIELD_BOOL:
		if (!cJSON_IsBool(v)) {
			*cause = xasprintf("\"%s\" must be true or false",
			    f->name);
			goto out;
		}
		*bp = cJSON_IsTrue(v);
		break;
	case FIELD_MS:
		if (json_int(v, 0, MS_MAX, &n) != 0) {
			*cause = xasprintf("\"%s\" must be an integer in "
			    "0..%lld", f->name, MS_MAX);
			goto out;
		}
		*ip = n;
		break;
	case FIELD_STATUS:
		if (json_int(v, 200, 599, &n) != 0) {
			*cause = xasprintf("\"%s\" must be an integer in "
			    "200..599", f->name);
			goto out;
		}
		*ip = n;
		break;
	case FIELD_BYTES:
		if (json_int(v, 0, BODY_BYTES_MAX, &n) != 0) {
			*cause = xasprintf("\"%s\" must be an integer in "
			    "0..%lld", f->name, BODY_BYTES_MAX);
			goto out;
		}
		*ip = n;
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
			*cause = xasprintf("unknown preset \"%s\"",
			    v->valuestring);
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
static int
behave_parse(const cJSON *j, struct behave *b, struct behave **scriptp,
    size_t *nscriptp, char **cause)
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
	cJSON_ArrayForEach(item, j) {
		if (strcmp(item->string, "script") == 0) {
			if (scriptp == NULL) {
				*cause = xasprintf("\"script\" is not allowed "
				    "inside a script item");
				goto out;
			}
			if (!cJSON_IsArray(item) ||
			    cJSON_GetArraySize(item) > SCRIPT_MAX) {
				*cause = xasprintf("\"script\" must be an "
				    "array of at most %d behaviours",
				    SCRIPT_MAX);
				goto out;
			}
			script_free(script, nscript);
			nscript = 0;
			script = xmalloc(sizeof *script *
			    (size_t)cJSON_GetArraySize(item));
			cJSON_ArrayForEach(s, item) {
				if (behave_parse(s, &script[nscript], NULL,
				    NULL, &sub) != 0) {
					*cause = xasprintf("script[%zu]: %s",
					    nscript, sub);
					goto out;
				}
				nscript++;
			}
			continue;
		}
		for (i = 0; i < sizeof behave_fields / sizeof behave_fields[0];
		    i++) {
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

static int
backend_name_valid(const char *s, size_t n)
{
	size_t i;
	int ok = n > 0 && n <= BACKEND_NAME_MAX;

	for (i = 0; ok && i < n; i++) {
		ok = (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '-' || s[i] == '_' || s[i] == '.';
	}
	return ok;
}

/* Find or create a backend by (validated) name; caller holds mock.lock. */
static struct backend *
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

static void
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
static int
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

/* Back to defaults and zero counters; in-flight gauges stay. */
static void
mock_reset_all(void)
{
	struct backend *be;

	pthread_mutex_lock(&mock.lock);
	for (be = mock.backends; be != NULL; be = be->next) {
		behave_free(&be->base);
		script_free(be->script, be->nscript);
		be->script = NULL;
		be->nscript = 0;
		be->script_pos = 0;
		be->requests = 0;
		be->completed = 0;
		be->aborted = 0;
		be->max_inflight = be->inflight;
		cJSON_Delete(be->last_request);
		be->last_request = NULL;
		be->arrivals_n = 0;
		be->arrivals_next = 0;
	}
	pthread_mutex_unlock(&mock.lock);
}

static cJSON *
mock_stats_json(void)
{
	cJSON *root, *bes, *o, *arr;
	struct backend *be;
	size_t i, k;

	root = cJSON_CreateObject();
	bes = cJSON_AddObjectToObject(root, "backends");
	pthread_mutex_lock(&mock.lock);
	cJSON_AddNumberToObject(root, "uptime_ms",
	    (double)(mono_ms() - mock.start_ms));
	for (be = mock.backends; be != NULL; be = be->next) {
		o = cJSON_AddObjectToObject(bes, be->name);
		cJSON_AddNumberToObject(o, "requests", (double)be->requests);
		cJSON_AddNumberToObject(o, "inflight", (double)be->inflight);
		cJSON_AddNumberToObject(o, "max_inflight",
		    (double)be->max_inflight);
		cJSON_AddNumberToObject(o, "completed", (double)be->completed);
		cJSON_AddNumberToObject(o, "aborted", (double)be->aborted);
		cJSON_AddNumberToObject(o, "script_left",
		    (double)(be->nscript - be->script_pos));
		if (be->last_request != NULL)
			cJSON_AddItemToObject(o, "last_request",
			    cJSON_Duplicate(be->last_request, 1));
		else
			cJSON_AddNullToObject(o, "last_request");
		arr = cJSON_AddArrayToObject(o, "arrivals_ms");
		k = (be->arrivals_next + ARRIVALS_MAX - be->arrivals_n) %
		    ARRIVALS_MAX;
		for (i = 0; i < be->arrivals_n; i++) {
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(
			    (double)be->arrivals[(k + i) % ARRIVALS_MAX]));
		}
	}
	pthread_mutex_unlock(&mock.lock);
	return root;
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
		if (l < mock.heap_len && mock.heap[l]->due_ms <
		    mock.heap[m]->due_ms)
			m = l;
		if (l + 1 < mock.heap_len && mock.heap[l + 1]->due_ms <
		    mock.heap[m]->due_ms)
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
		mock.heap = xrealloc(mock.heap,
		    mock.heap_cap * sizeof *mock.heap);
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

static void
mock_wake(void)
{
	uint64_t one = 1;

	if (write(mock.wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
		fprintf(stderr, "fusebox-mockllm: eventfd: %s\n",
		    strerror(errno));
}

/*
 * Take a suspended r off the heap and the watch set; the caller holds
 * mock.lock and must resume the returned connection after dropping it.
 */
static struct MHD_Connection *
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
static int
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

static int
req_alive(struct req *r)
{
	int alive;

	pthread_mutex_lock(&mock.lock);
	alive = !mock.stopping && !r->gone;
	pthread_mutex_unlock(&mock.lock);
	return alive;
}

static void
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

static void
req_body_append(struct req *r, const char *p, size_t n)
{
	if (r->too_big)
		goto out;
	if (n > BODY_MAX - r->body_len) {
		r->too_big = 1;
		free(r->body);
		r->body = NULL;
		r->body_len = r->body_cap = 0;
		goto out;
	}
	if (r->body_len + n + 1 > r->body_cap) {
		r->body_cap = r->body_cap ? r->body_cap : 4096;
		while (r->body_len + n + 1 > r->body_cap)
			r->body_cap *= 2;
		r->body = xrealloc(r->body, r->body_cap);
	}
	memcpy(r->body + r->body_len, p, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
out:
	return;
}

static enum MHD_Result
header_collect(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	cJSON *o = cls;
	char *lk;
	size_t i;

	lk = xstrdup(key);
	for (i = 0; lk[i] != '\0'; i++) {
		if (lk[i] >= 'A' && lk[i] <= 'Z')
			lk[i] = (char)(lk[i] - 'A' + 'a');
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, lk);
	cJSON_AddStringToObject(o, lk, value != NULL ? value : "");
	free(lk);
	return MHD_YES;
}

static const char *
error_type(unsigned int status, const char **code)
{
	const char *type;

	*code = NULL;
	switch (status) {
	case 401:
		*code = "invalid_api_key";
		type = "authentication_error";
		break;
	case 403:
		type = "permission_error";
		break;
	case 429:
		*code = "rate_limit_exceeded";
		type = "rate_limit_error";
		break;
	default:
		type = status >= 500 ? "server_error" : "invalid_request_error";
		break;
	}
	return type;
}

static char *
error_json(unsigned int status, const char *message)
{
	const char *code;
	cJSON *root, *e;
	char *s;

	root = cJSON_CreateObject();
	e = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddStringToObject(e, "type", error_type(status, &code));
	cJSON_AddNullToObject(e, "param");
	if (code != NULL)
		cJSON_AddStringToObject(e, "code", code);
	else
		cJSON_AddNullToObject(e, "code");
	s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return s;
}

/* Queue a small in-memory response; text is consumed. */
static enum MHD_Result
respond_text(struct req *r, unsigned int status, char *text,
    const char *ctype)
{
	struct MHD_Response *resp;
	enum MHD_Result ret = MHD_NO;

	r->status = status;
	r->phase = PHASE_SEND;
	resp = MHD_create_response_from_buffer(strlen(text), text,
	    MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(text);
		goto out;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
out:
	return ret;
}

static enum MHD_Result
respond_error(struct req *r, unsigned int status, const char *message)
{
	return respond_text(r, status, error_json(status, message),
	    "application/json");
}

static enum MHD_Result
respond_json(struct req *r, unsigned int status, cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j);

	cJSON_Delete(j);
	return respond_text(r, status, s, "application/json");
}

static void
req_seg_add(struct req *r, char *data, size_t len, char fill, int64_t due)
{
	r->segs = xrealloc(r->segs, (r->nsegs + 1) * sizeof *r->segs);
	r->segs[r->nsegs].data = data;
	r->segs[r->nsegs].len = len;
	r->segs[r->nsegs].fill = fill;
	r->segs[r->nsegs].due_ms = due;
	r->nsegs++;
	r->total += len;
}

static const char *
req_content(const struct req *r)
{
	return r->bh.content != NULL ? r->bh.content :
	    preset_texts[r->bh.preset];
}

/* A JSON string literal's inside (without quotes), malloc'd. */
static char *
json_escape(const char *s)
{
	cJSON *j = cJSON_CreateString(s);
	char *p, *q;
	size_t n;

	p = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	n = strlen(p);
	q = xmalloc(n - 1);
	memcpy(q, p + 1, n - 2);
	q[n - 2] = '\0';
	free(p);
	return q;
}

/*
 * A chat.completion split around the content so that body_bytes padding
 * (spaces after the content, still valid JSON content) costs no memory:
 * [head + escaped content] [pad] [tail].
 */
static void
req_build_completion(struct req *r, int64_t now)
{
	static const char key[] = "\"content\":\"\"";
	const char *content = req_content(r);
	cJSON *root, *choice, *msg, *usage;
	char *text, *esc, *head, *at, *idstr;
	int64_t ctoks;
	size_t hlen, minimal, pad = 0;

	ctoks = ((int64_t)strlen(content) + 3) / 4;
	idstr = xasprintf("mock-%" PRIu64, r->id);
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "id", idstr);
	cJSON_AddStringToObject(root, "object", "chat.completion");
	cJSON_AddNumberToObject(root, "created", (double)time(NULL));
	cJSON_AddStringToObject(root, "model", r->model);
	choice = cJSON_CreateObject();
	cJSON_AddNumberToObject(choice, "index", 0);
	msg = cJSON_AddObjectToObject(choice, "message");
	cJSON_AddStringToObject(msg, "role", "assistant");
	cJSON_AddStringToObject(msg, "content", "");
	cJSON_AddStringToObject(choice, "finish_reason", "stop");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
	usage = cJSON_AddObjectToObject(root, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens",
	    (double)r->prompt_tokens);
	cJSON_AddNumberToObject(usage, "completion_tokens", (double)ctoks);
	cJSON_AddNumberToObject(usage, "total_tokens",
	    (double)(r->prompt_tokens + ctoks));
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	free(idstr);

	/* Quotes inside string values are escaped: the key is unique. */
	at = strstr(text, key);
	hlen = (size_t)(at - text) + sizeof key - 2;
	esc = json_escape(content);
	head = xasprintf("%.*s%s", (int)hlen, text, esc);
	minimal = strlen(head) + strlen(text + hlen);
	if (r->bh.body_bytes > 0 && (uint64_t)r->bh.body_bytes > minimal)
		pad = (size_t)r->bh.body_bytes - minimal;
	req_seg_add(r, head, strlen(head), 0, now);
	if (pad > 0)
		req_seg_add(r, NULL, pad, ' ', now);
	req_seg_add(r, xstrdup(text + hlen), strlen(text + hlen), 0, now);
	free(esc);
	free(text);
}

static char *
sse_event(const struct req *r, const char *piece, int first, int last)
{
	cJSON *root, *choice, *delta;
	char *idstr, *s, *ev;

	idstr = xasprintf("mock-%" PRIu64, r->id);
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "id", idstr);
	cJSON_AddStringToObject(root, "object", "chat.completion.chunk");
	cJSON_AddNumberToObject(root, "created", (double)time(NULL));
	cJSON_AddStringToObject(root, "model", r->model);
	choice = cJSON_CreateObject();
	cJSON_AddNumberToObject(choice, "index", 0);
	delta = cJSON_AddObjectToObject(choice, "delta");
	if (first)
		cJSON_AddStringToObject(delta, "role", "assistant");
	if (piece != NULL)
		cJSON_AddStringToObject(delta, "content", piece);
	if (last)
		cJSON_AddStringToObject(choice, "finish_reason", "stop");
	else
		cJSON_AddNullToObject(choice, "finish_reason");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
	s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	ev = xasprintf("data: %s\n\n", s);
	free(s);
	free(idstr);
	return ev;
}

/*
 * SSE: up to STREAM_PIECES content events (split on UTF-8 boundaries), the
 * first stream_first_delay_ms after the headers, then one every
 * stream_chunk_ms; the finish event and [DONE] go with the last piece.
 */
static void
req_build_stream(struct req *r, int64_t now)
{
	const char *content = req_content(r);
	size_t len = strlen(content), step, off = 0, end;
	int64_t due = now + r->bh.stream_first_delay_ms;
	char *piece, *ev, *fin;
	int i = 0;

	step = (len + STREAM_PIECES - 1) / STREAM_PIECES;
	do {
		end = off + step;
		if (end > len)
			end = len;
		while (end < len && ((unsigned char)content[end] & 0xc0) ==
		    0x80)
			end++;
		piece = xmalloc(end - off + 1);
		memcpy(piece, content + off, end - off);
		piece[end - off] = '\0';
		ev = sse_event(r, piece, i == 0, 0);
		free(piece);
		if (end >= len) {
			fin = sse_event(r, NULL, 0, 1);
			piece = ev;
			ev = xasprintf("%s%sdata: [DONE]\n\n", piece, fin);
			free(piece);
			free(fin);
		}
		req_seg_add(r, ev, strlen(ev), 0, due);
		due += r->bh.stream_chunk_ms;
		off = end;
		i++;
	} while (off < len);
}

/*
 * MHD content reader: serve the body segments, waiting (suspended) for a
 * segment's due time or the next drip, and failing the transfer at limit.
 */
static ssize_t
req_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct req *r = cls;
	const struct seg *s;
	int64_t now, wait_until;
	ssize_t ret = MHD_CONTENT_READER_END_WITH_ERROR;
	uint64_t n;

	if (!req_alive(r))
		goto out;
	if (r->limit >= 0 && pos >= (uint64_t)r->limit)
		goto out;
	if (pos >= r->total) {
		ret = MHD_CONTENT_READER_END_OF_STREAM;
		goto out;
	}
	while (r->cur < r->nsegs && pos >= r->cur_start + r->segs[r->cur].len) {
		r->cur_start += r->segs[r->cur].len;
		r->cur++;
	}
	if (r->cur == r->nsegs)
		goto out;
	s = &r->segs[r->cur];
	now = mono_ms();
	wait_until = s->due_ms;
	if (r->drip_ms > 0 && r->next_drip_ms > wait_until)
		wait_until = r->next_drip_ms;
	if (wait_until > now) {
		if (req_suspend(r, wait_until) == 0)
			ret = 0;
		goto out;
	}
	n = r->cur_start + s->len - pos;
	if (n > max)
		n = max;
	if (r->limit >= 0 && n > (uint64_t)r->limit - pos)
		n = (uint64_t)r->limit - pos;
	if (r->drip_ms > 0) {
		n = 1;
		r->next_drip_ms = now + r->drip_ms;
	}
	if (s->data != NULL)
		memcpy(buf, s->data + (pos - r->cur_start), n);
	else
		memset(buf, s->fill, n);
	ret = (ssize_t)n;
out:
	return ret;
}

static enum MHD_Result
chat_respond(struct req *r)
{
	struct MHD_Response *resp = NULL;
	const char *ctype = "application/json";
	enum MHD_Result ret = MHD_NO;
	int64_t now = mono_ms();
	char *text, *err, *idstr = NULL;
	int sized = 1;

	r->phase = PHASE_SEND;
	if (r->bh.reset)
		goto out;
	r->status = (unsigned int)r->bh.status;
	if (r->bh.body != NULL) {
		req_seg_add(r, xstrdup(r->bh.body), strlen(r->bh.body), 0, now);
	} else if (r->status != 200) {
		text = xasprintf("mock: simulated HTTP %u", r->status);
		err = error_json(r->status, text);
		free(text);
		req_seg_add(r, err, strlen(err), 0, now);
	} else if (r->stream) {
		req_build_stream(r, now);
		ctype = "text/event-stream";
		sized = 0;
	} else {
		req_build_completion(r, now);
	}
	if (r->bh.content_type != NULL)
		ctype = r->bh.content_type;
	r->limit = r->bh.reset_after_bytes;
	if (r->bh.truncate && (r->limit < 0 ||
	    (uint64_t)r->limit > r->total / 2))
		r->limit = (int64_t)(r->total / 2);
	r->drip_ms = r->bh.drip_ms;
	resp = MHD_create_response_from_callback(sized ? r->total :
	    MHD_SIZE_UNKNOWN, READ_BLOCK, req_read, r, NULL);
	if (resp == NULL)
		goto out;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(resp, "X-Mock-Backend", r->backend->name);
	idstr = xasprintf("mock-%" PRIu64, r->id);
	MHD_add_response_header(resp, "X-Mock-Id", idstr);
	if (r->bh.retry_after != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER,
		    r->bh.retry_after);
	if (!sized)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
		    "no-cache");
	ret = MHD_queue_response(r->conn, r->status, resp);
out:
	if (resp != NULL)
		MHD_destroy_response(resp);
	free(idstr);
	return ret;
}

static int64_t
prompt_tokens(const cJSON *body)
{
	const cJSON *msgs, *m, *c;
	size_t bytes = 0;

	msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
	cJSON_ArrayForEach(m, msgs) {
		c = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (cJSON_IsString(c))
			bytes += strlen(c->valuestring);
	}
	return (int64_t)(bytes + 3) / 4 + 1;
}

/* The request body is complete: pick the behaviour and start it. */
static enum MHD_Result
chat_start(struct req *r, const char *method)
{
	struct backend *be = r->backend;
	const cJSON *model, *stream;
	cJSON *body = NULL, *last;
	int64_t delay = 0;
	enum MHD_Result ret;
	int valid;

	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
		ret = respond_error(r, MHD_HTTP_METHOD_NOT_ALLOWED,
		    "use POST");
		goto out;
	}
	if (r->too_big) {
		ret = respond_error(r, 413, "request body over 4 MiB");
		goto out;
	}
	if (r->body != NULL)
		body = cJSON_ParseWithLength(r->body, r->body_len);
	valid = cJSON_IsObject(body);
	if (valid) {
		model = cJSON_GetObjectItemCaseSensitive(body, "model");
		stream = cJSON_GetObjectItemCaseSensitive(body, "stream");
		r->model = xstrdup(cJSON_IsString(model) ?
		    model->valuestring : "mock");
		r->stream = cJSON_IsTrue(stream);
		r->prompt_tokens = prompt_tokens(body);
	}

	last = cJSON_CreateObject();
	cJSON_AddItemToObject(last, "headers", r->headers);
	r->headers = NULL;
	if (body != NULL)
		cJSON_AddItemToObject(last, "body", body);
	else
		cJSON_AddNullToObject(last, "body");
	body = NULL;

	/* A request the mock cannot parse consumes no script item. */
	pthread_mutex_lock(&mock.lock);
	cJSON_Delete(be->last_request);
	be->last_request = last;
	if (valid && be->script_pos < be->nscript)
		behave_copy(&r->bh, &be->script[be->script_pos++]);
	else if (valid)
		behave_copy(&r->bh, &be->base);
	if (r->bh.delay_min_ms >= 0)
		delay = r->bh.delay_min_ms + (int64_t)(rng_next() %
		    (uint64_t)(r->bh.delay_max_ms - r->bh.delay_min_ms + 1));
	else
		delay = r->bh.delay_ms;
	pthread_mutex_unlock(&mock.lock);

	if (!valid) {
		ret = respond_error(r, MHD_HTTP_BAD_REQUEST,
		    "request body is not a JSON object");
		goto out;
	}
	delay += r->bh.hang_ms;
	if (r->bh.hang || delay > 0) {
		r->phase = PHASE_WAIT;
		if (req_suspend(r, r->bh.hang ? WAIT_FOREVER :
		    mono_ms() + delay) != 0)
			ret = MHD_NO;
		else
			ret = MHD_YES;
		goto out;
	}
	ret = chat_respond(r);
out:
	cJSON_Delete(body);
	return ret;
}

static enum MHD_Result
chat_handle(struct req *r, const char *method)
{
	enum MHD_Result ret;

	switch (r->phase) {
	case PHASE_RECV:
		ret = chat_start(r, method);
		break;
	case PHASE_WAIT:
		if (!req_alive(r))
			ret = MHD_NO;
		else
			ret = chat_respond(r);
		break;
	default:
		ret = MHD_NO;
		break;
	}
	return ret;
}

static enum MHD_Result
control_handle(struct req *r, const char *url, const char *method)
{
	static const char pfx[] = "/_mock/backends/";
	const char *name;
	cJSON *j = NULL, *ok;
	char *cause = NULL;
	enum MHD_Result ret;
	int is_get, is_set;

	is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
	is_set = strcmp(method, MHD_HTTP_METHOD_PUT) == 0 ||
	    strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (r->too_big) {
		ret = respond_error(r, 413, "request body over 4 MiB");
		goto out;
	}
	if (strcmp(url, "/_mock/stats") == 0) {
		if (!is_get)
			ret = respond_error(r, 405, "use GET");
		else
			ret = respond_json(r, 200, mock_stats_json());
		goto out;
	}
	if (strcmp(url, "/_mock/reset") == 0) {
		if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
			ret = respond_error(r, 405, "use POST");
			goto out;
		}
		mock_reset_all();
		log_line("reset");
		ok = cJSON_CreateObject();
		cJSON_AddTrueToObject(ok, "ok");
		ret = respond_json(r, 200, ok);
		goto out;
	}
	if (strncmp(url, pfx, sizeof pfx - 1) == 0) {
		name = url + sizeof pfx - 1;
		if (!backend_name_valid(name, strlen(name))) {
			ret = respond_error(r, 400, "bad backend name");
			goto out;
		}
		if (!is_set) {
			ret = respond_error(r, 405, "use PUT");
			goto out;
		}
		if (r->body != NULL)
			j = cJSON_ParseWithLength(r->body, r->body_len);
		if (j == NULL) {
			ret = respond_error(r, 400, "body is not valid JSON");
			goto out;
		}
		if (backend_set(name, j, &cause) != 0) {
			ret = respond_error(r, 400, cause);
			goto out;
		}
		log_line("backend %s: %.*s", name,
		    (int)(r->body_len > 200 ? 200 : r->body_len), r->body);
		ok = cJSON_CreateObject();
		cJSON_AddTrueToObject(ok, "ok");
		ret = respond_json(r, 200, ok);
		goto out;
	}
	ret = respond_error(r, 404, "unknown control endpoint");
out:
	cJSON_Delete(j);
	free(cause);
	return ret;
}

/* Classify a new request; chat requests are counted here. */
static struct req *
req_new(struct MHD_Connection *conn, const char *url)
{
	static const char chat[] = "/v1/chat/completions";
	const union MHD_ConnectionInfo *ci;
	struct req *r;
	const char *name = NULL, *rest;
	size_t nlen = 0;
	struct backend *be;

	r = xmalloc(sizeof *r);
	memset(r, 0, sizeof *r);
	r->conn = conn;
	r->fd = -1;
	r->kind = REQ_OTHER;
	r->heap_idx = SIZE_MAX;
	r->limit = -1;
	behave_init(&r->bh);
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci != NULL)
		r->fd = ci->connect_fd;

	if (strncmp(url, "/_mock/", 7) == 0) {
		r->kind = REQ_CONTROL;
		goto out;
	}
	if (strcmp(url, chat) == 0) {
		name = "default";
		nlen = 7;
	} else if (strncmp(url, "/b/", 3) == 0) {
		rest = strchr(url + 3, '/');
		if (rest != NULL && strcmp(rest, chat) == 0) {
			name = url + 3;
			nlen = (size_t)(rest - name);
		}
	}
	if (name == NULL || !backend_name_valid(name, nlen))
		goto out;
	r->headers = cJSON_CreateObject();
	MHD_get_connection_values(conn, MHD_HEADER_KIND, header_collect,
	    r->headers);
	pthread_mutex_lock(&mock.lock);
	be = backend_get(name, nlen);
	if (be != NULL) {
		r->kind = REQ_CHAT;
		r->backend = be;
		r->id = ++mock.next_id;
		r->arrival_ms = mono_ms() - mock.start_ms;
		be->requests++;
		be->inflight++;
		if (be->inflight > be->max_inflight)
			be->max_inflight = be->inflight;
		be->arrivals[be->arrivals_next] = r->arrival_ms;
		be->arrivals_next = (be->arrivals_next + 1) % ARRIVALS_MAX;
		if (be->arrivals_n < ARRIVALS_MAX)
			be->arrivals_n++;
	}
	pthread_mutex_unlock(&mock.lock);
out:
	return r;
}

static enum MHD_Result
mock_access(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **con_cls)
{
	struct req *r = *con_cls;
	const char *cl;
	enum MHD_Result ret = MHD_YES;
	char *end;
	unsigned long long n;

	if (r == NULL) {
		r = req_new(conn, url);
		*con_cls = r;
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL) {
			errno = 0;
			n = strtoull(cl, &end, 10);
			if (errno == 0 && *end == '\0' && n > BODY_MAX)
				ret = respond_error(r, 413,
				    "request body over 4 MiB");
		}
		goto out;
	}
	if (*upload_size != 0) {
		req_body_append(r, upload, *upload_size);
		*upload_size = 0;
		goto out;
	}
	switch (r->kind) {
	case REQ_CHAT:
		ret = chat_handle(r, method);
		break;
	case REQ_CONTROL:
		ret = control_handle(r, url, method);
		break;
	default:
		ret = respond_error(r, MHD_HTTP_NOT_FOUND, "unknown path");
		break;
	}
out:
	return ret;
}

static void
mock_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	if (r == NULL)
		return;
	*con_cls = NULL;
	pthread_mutex_lock(&mock.lock);
	if (r->suspended) {
		/* Can't happen: suspended connections are never closed. */
		req_unsuspend(r);
	}
	if (r->kind == REQ_CHAT) {
		r->backend->inflight--;
		if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
			r->backend->completed++;
		else
			r->backend->aborted++;
	}
	pthread_mutex_unlock(&mock.lock);
	if (r->kind == REQ_CHAT) {
		log_line("%s mock-%" PRIu64 " %s %u%s", r->backend->name,
		    r->id, r->stream ? "stream" : "json", r->status,
		    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" :
		    " (aborted)");
	}
	req_free(r);
}

/* Apply due scenario steps; caller holds mock.lock (dropped inside). */
static void
scenario_step(int64_t now)
{
	const cJSON *entry, *bes, *b;
	char *cause = NULL;
	int64_t at;

	while (mock.scen_idx < mock.scen_n) {
		entry = cJSON_GetArrayItem(mock.timeline, mock.scen_idx);
		at = (int64_t)(cJSON_GetObjectItemCaseSensitive(entry,
		    "at_s")->valuedouble * 1000.0);
		if (mock.scen_base_ms + at > now)
			break;
		mock.scen_idx++;
		bes = cJSON_GetObjectItemCaseSensitive(entry, "backends");
		pthread_mutex_unlock(&mock.lock);
		cJSON_ArrayForEach(b, bes) {
			if (backend_set(b->string, b, &cause) != 0) {
				fprintf(stderr, "fusebox-mockllm: scenario: "
				    "%s: %s\n", b->string, cause);
				free(cause);
				cause = NULL;
			}
		}
		log_line("scenario: step %d (at %.1f s)", mock.scen_idx - 1,
		    (double)at / 1000.0);
		pthread_mutex_lock(&mock.lock);
		if (mock.scen_idx == mock.scen_n && mock.scen_loop) {
			mock.scen_idx = 0;
			mock.scen_base_ms += mock.scen_period_ms;
		}
	}
}

static int64_t
scenario_next_ms(void)
{
	const cJSON *entry, *at;
	int64_t next = WAIT_FOREVER;

	if (mock.scen_idx < mock.scen_n) {
		entry = cJSON_GetArrayItem(mock.timeline, mock.scen_idx);
		at = cJSON_GetObjectItemCaseSensitive(entry, "at_s");
		next = mock.scen_base_ms + (int64_t)(at->valuedouble * 1000.0);
	}
	return next;
}

static void
resume_add(struct MHD_Connection ***v, size_t *n, size_t *cap,
    struct MHD_Connection *c)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[(*n)++] = c;
}

/*
 * The timer thread: resume due connections and the ones whose client went
 * away, apply scenario steps, sleep in epoll until the next of those.
 */
static void *
timer_main(void *arg)
{
	struct MHD_Connection **resume = NULL;
	struct epoll_event evs[256];
	size_t nresume = 0, cresume = 0, i;
	int64_t now, wake;
	struct req *r;
	uint64_t junk;
	int nev = 0, k, timeout;

	pthread_mutex_lock(&mock.lock);
	while (!mock.stopping) {
		nresume = 0;
		for (k = 0; k < nev; k++) {
			r = evs[k].data.ptr;
			if (r == NULL) {
				if (read(mock.wakefd, &junk, sizeof junk) < 0 &&
				    errno != EAGAIN)
					break;
				continue;
			}
			if (!r->suspended)
				continue;
			r->gone = 1;
			resume_add(&resume, &nresume, &cresume,
			    req_unsuspend(r));
		}
		nev = 0;
		now = mono_ms();
		while (mock.heap_len > 0 && mock.heap[0]->due_ms <= now) {
			resume_add(&resume, &nresume, &cresume,
			    req_unsuspend(mock.heap[0]));
		}
		if (nresume > 0) {
			pthread_mutex_unlock(&mock.lock);
			for (i = 0; i < nresume; i++)
				MHD_resume_connection(resume[i]);
			pthread_mutex_lock(&mock.lock);
		}
		scenario_step(now);
		if (mock.stopping)
			break;
		wake = scenario_next_ms();
		if (mock.heap_len > 0 && mock.heap[0]->due_ms < wake)
			wake = mock.heap[0]->due_ms;
		if (wake == WAIT_FOREVER)
			timeout = -1;
		else if (wake - now > INT_MAX)
			timeout = INT_MAX;
		else
			timeout = wake > now ? (int)(wake - now) : 0;
		pthread_mutex_unlock(&mock.lock);
		nev = epoll_wait(mock.epfd, evs, (int)(sizeof evs /
		    sizeof evs[0]), timeout);
		if (nev < 0)
			nev = 0;
		pthread_mutex_lock(&mock.lock);
	}
	pthread_mutex_unlock(&mock.lock);
	free(resume);
	return NULL;
}

/* Load and validate the scenario; every behaviour is parsed once here. */
static int
scenario_load(const char *path)
{
	const cJSON *tl, *entry, *at, *bes, *b, *loop;
	struct behave tmp, *script;
	cJSON *root = NULL;
	char *text = NULL, *cause = NULL;
	FILE *f = NULL;
	size_t n, nscript;
	double prev = 0;
	int rc = -1;

	f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "fusebox-mockllm: %s: %s\n", path,
		    strerror(errno));
		goto out;
	}
	text = xmalloc(SCENARIO_MAX + 1);
	n = fread(text, 1, SCENARIO_MAX + 1, f);
	if (n > SCENARIO_MAX) {
		fprintf(stderr, "fusebox-mockllm: %s: over %d bytes\n", path,
		    SCENARIO_MAX);
		goto out;
	}
	root = cJSON_ParseWithLength(text, n);
	tl = cJSON_GetObjectItemCaseSensitive(root, "timeline");
	if (!cJSON_IsArray(tl) || cJSON_GetArraySize(tl) == 0) {
		fprintf(stderr, "fusebox-mockllm: %s: need a non-empty "
		    "\"timeline\" array\n", path);
		goto out;
	}
	cJSON_ArrayForEach(entry, tl) {
		at = cJSON_GetObjectItemCaseSensitive(entry, "at_s");
		bes = cJSON_GetObjectItemCaseSensitive(entry, "backends");
		if (!cJSON_IsNumber(at) || at->valuedouble < prev ||
		    at->valuedouble > 86400.0 || !cJSON_IsObject(bes)) {
			fprintf(stderr, "fusebox-mockllm: %s: each timeline "
			    "entry needs a non-decreasing \"at_s\" and a "
			    "\"backends\" object\n", path);
			goto out;
		}
		prev = at->valuedouble;
		cJSON_ArrayForEach(b, bes) {
			if (!backend_name_valid(b->string, strlen(b->string)) ||
			    behave_parse(b, &tmp, &script, &nscript,
			    &cause) != 0) {
				fprintf(stderr, "fusebox-mockllm: %s: at_s %g: "
				    "%s: %s\n", path, prev, b->string,
				    cause != NULL ? cause : "bad name");
				goto out;
			}
			behave_free(&tmp);
			script_free(script, nscript);
		}
	}
	loop = cJSON_GetObjectItemCaseSensitive(root, "loop");
	mock.scen_loop = cJSON_IsTrue(loop);
	mock.scen_n = cJSON_GetArraySize(tl);
	mock.scen_idx = 0;
	mock.scen_period_ms = (int64_t)(prev * 1000.0) + LOOP_PAUSE_MS;
	mock.timeline = tl;
	mock.scenario = root;
	root = NULL;
	rc = 0;
out:
	cJSON_Delete(root);
	free(cause);
	free(text);
	if (f != NULL)
		fclose(f);
	return rc;
}

static int
listen_parse(const char *s, struct sockaddr_in *sin)
{
	const char *colon = strrchr(s, ':');
	char host[64], *end;
	long port;
	int rc = -1;

	if (colon == NULL || (size_t)(colon - s) >= sizeof host)
		goto out;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == colon + 1 || port < 0 ||
	    port > 65535)
		goto out;
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		goto out;
	rc = 0;
out:
	return rc;
}

static void
print_usage(void)
{
	fprintf(stderr, "usage: fusebox-mockllm [--listen 127.0.0.1:PORT] "
	    "[--scenario FILE] [--quiet]\n");
}

/* Resume every suspended connection so MHD_stop_daemon may run. */
static void
mock_stop(struct MHD_Daemon *d, pthread_t timer, int timer_started)
{
	struct MHD_Connection **conns = NULL;
	size_t n = 0, i;

	pthread_mutex_lock(&mock.lock);
	mock.stopping = 1;
	mock_wake();
	pthread_mutex_unlock(&mock.lock);
	if (timer_started)
		pthread_join(timer, NULL);
	pthread_mutex_lock(&mock.lock);
	conns = xmalloc((mock.heap_len + 1) * sizeof *conns);
	while (mock.heap_len > 0)
		conns[n++] = req_unsuspend(mock.heap[0]);
	pthread_mutex_unlock(&mock.lock);
	for (i = 0; i < n; i++)
		MHD_resume_connection(conns[i]);
	free(conns);
	if (d != NULL)
		MHD_stop_daemon(d);
}

int
main(int argc, char **argv)
{
	const char *addr = "127.0.0.1:0", *scenario = NULL;
	const union MHD_DaemonInfo *di;
	struct MHD_Daemon *d = NULL;
	struct backend *be;
	struct sockaddr_in sin;
	struct epoll_event ev;
	pthread_t timer;
	struct rlimit rl;
	sigset_t set;
	unsigned int flags;
	int i, sig, rc = 2, timer_started = 0;

	memset(&timer, 0, sizeof timer);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
			addr = argv[++i];
		else if (strcmp(argv[i], "--scenario") == 0 && i + 1 < argc)
			scenario = argv[++i];
		else if (strcmp(argv[i], "--quiet") == 0)
			mock.quiet = 1;
		else {
			print_usage();
			goto out;
		}
	}
	if (listen_parse(addr, &sin) != 0) {
		fprintf(stderr, "fusebox-mockllm: bad --listen \"%s\"\n",
		    addr);
		goto out;
	}

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	mock.epfd = epoll_create1(EPOLL_CLOEXEC);
	mock.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (mock.epfd < 0 || mock.wakefd < 0) {
		fprintf(stderr, "fusebox-mockllm: epoll/eventfd: %s\n",
		    strerror(errno));
		goto out;
	}
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(mock.epfd, EPOLL_CTL_ADD, mock.wakefd, &ev);
	mock.start_ms = mono_ms();
	mock.rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	if (scenario != NULL) {
		if (scenario_load(scenario) != 0)
			goto out;
		mock.scen_base_ms = mock.start_ms;
		pthread_mutex_lock(&mock.lock);
		scenario_step(mock.start_ms);
		pthread_mutex_unlock(&mock.lock);
	}

	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME;
	if (!mock.quiet)
		flags |= MHD_USE_ERROR_LOG;
	if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
		flags |= MHD_USE_EPOLL;
	else
		flags |= MHD_USE_POLL;
	d = MHD_start_daemon(flags, 0, NULL, NULL, mock_access, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)20000,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)0,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
	    MHD_OPTION_NOTIFY_COMPLETED, mock_completed, NULL,
	    MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "fusebox-mockllm: cannot listen on %s\n",
		    addr);
		goto out;
	}
	if (pthread_create(&timer, NULL, timer_main, NULL) != 0) {
		fprintf(stderr, "fusebox-mockllm: cannot start timer thread\n");
		goto out;
	}
	timer_started = 1;
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("listening on %s:%u\n", inet_ntoa(sin.sin_addr),
	    di != NULL ? (unsigned int)di->port : 0u);
	fflush(stdout);

	do {
		if (sigwait(&set, &sig) != 0)
			sig = 0;
	} while (sig != SIGINT && sig != SIGTERM);
	log_line("signal %d, stopping", sig);
	rc = 0;
out:
	if (d != NULL || timer_started)
		mock_stop(d, timer, timer_started);
	while ((be = mock.backends) != NULL) {
		mock.backends = be->next;
		backend_free(be);
	}
	free(mock.heap);
	cJSON_Delete(mock.scenario);
	if (mock.wakefd >= 0)
		close(mock.wakefd);
	if (mock.epfd >= 0)
		close(mock.epfd);
	return rc;
}
