/*
 * trace: spans as OTLP/JSON objects, and the exporter thread.
 *
 * OTLP/JSON (opentelemetry-proto, "JSON Protobuf Encoding"): trace and
 * span ids are lowercase hex, 64-bit integers (times in ns, intValue) are
 * decimal strings, enums are numbers. A span is built on the engine
 * thread straight into that shape; the exporter thread only wraps a batch
 * in its resource and scope and prints it.
 *
 * Queue: a ring of max_queue spans under mu. trace_span_end() never
 * waits: a full ring drops the span, counts it (trace_spans_dropped) and,
 * at most once a minute, writes an event row from the engine thread. The
 * thread wakes on a full batch, after flush_ms, or to stop; a POST that
 * meets a connection error, 429 or 5xx is retried with doubling backoff
 * (250 ms up to 8 s, five tries in all) while the queue keeps filling
 * behind it; another status drops the batch (a collector that refuses it
 * will refuse it again). At stop the queue is flushed once, each POST
 * within tracing.timeout_ms, without retries.
 */
#include "trace.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "jsonutil.h"
#include "log.h"
#include "store.h"
#include "tracectx.h"
#include "util.h"

#define TRACE_TRIES	       5
#define TRACE_BACKOFF_MS       250
#define TRACE_BACKOFF_MAX_MS   8000
#define TRACE_DROP_EVENT_EVERY 60000
#define TRACE_STATUS_ERROR     2

struct trace_exporter {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	cJSON **q; /* ring of cap spans: n from head */
	int cap, head, n;
	int stopping;
	char *endpoint, *service, *version, *host;
	struct curl_slist *hdrs;
	int batch, flush_ms, timeout_ms, include_io;
	struct store *st;
	int64_t drop_event_ms; /* engine thread: when the last drop event was written */
	uint64_t drop_event_count;
};

static struct trace_exporter *trace_current; /* engine thread (set before the loop runs) */
static _Atomic uint64_t trace_dropped;

void
trace_install(struct trace_exporter *x)
{
	trace_current = x;
}

struct trace_exporter *
trace_installed(void)
{
	return trace_current;
}

int
trace_enabled(void)
{
	return trace_current != NULL;
}

int
trace_include_io(void)
{
	return trace_current != NULL && trace_current->include_io;
}

uint64_t
trace_spans_dropped(void)
{
	return atomic_load(&trace_dropped);
}

static cJSON *
ns_string(int64_t ns)
{
	char num[24];

	snprintf(num, sizeof num, "%lld", (long long)(ns > 0 ? ns : 0));
	return cJSON_CreateString(num);
}

static void
attr_add(cJSON *attrs, const char *key, const char *type, cJSON *v)
{
	cJSON *a = cJSON_CreateObject(), *val = cJSON_CreateObject();

	cJSON_AddStringToObject(a, "key", key);
	cJSON_AddItemToObject(val, type, v);
	cJSON_AddItemToObject(a, "value", val);
	cJSON_AddItemToArray(attrs, a);
}

void
trace_span_begin(struct trace_span *s, const char *name, enum trace_kind kind,
		 const uint8_t trace_id[16], const uint8_t span_id[8], const uint8_t parent[8],
		 int64_t start_ns)
{
	static const uint8_t zero[8];
	char t[TRACECTX_TRACE_HEX + 1], sp[TRACECTX_SPAN_HEX + 1];

	s->o = cJSON_CreateObject();
	tracectx_trace_hex(trace_id, t);
	tracectx_span_hex(span_id, sp);
	cJSON_AddStringToObject(s->o, "traceId", t);
	cJSON_AddStringToObject(s->o, "spanId", sp);
	if (parent != NULL && memcmp(parent, zero, 8) != 0) {
		tracectx_span_hex(parent, sp);
		cJSON_AddStringToObject(s->o, "parentSpanId", sp);
	}
	cJSON_AddStringToObject(s->o, "name", name);
	cJSON_AddNumberToObject(s->o, "kind", (double)kind);
	cJSON_AddItemToObject(s->o, "startTimeUnixNano", ns_string(start_ns));
	s->attrs = cJSON_AddArrayToObject(s->o, "attributes");
	s->events = NULL;
}

void
trace_attr_str(struct trace_span *s, const char *key, const char *v)
{
	if (s->o != NULL && v != NULL)
		attr_add(s->attrs, key, "stringValue", cJSON_CreateString(v));
}

void
trace_attr_int(struct trace_span *s, const char *key, int64_t v)
{
	char num[24];

	if (s->o == NULL)
		return;
	snprintf(num, sizeof num, "%lld", (long long)v);
	attr_add(s->attrs, key, "intValue", cJSON_CreateString(num));
}

void
trace_attr_bool(struct trace_span *s, const char *key, int v)
{
	if (s->o != NULL)
		attr_add(s->attrs, key, "boolValue", cJSON_CreateBool(v));
}

void
trace_attr_str_array1(struct trace_span *s, const char *key, const char *v)
{
	cJSON *arr, *values, *one;

	if (s->o == NULL || v == NULL)
		return;
	arr = cJSON_CreateObject();
	values = cJSON_AddArrayToObject(arr, "values");
	one = cJSON_CreateObject();
	cJSON_AddStringToObject(one, "stringValue", v);
	cJSON_AddItemToArray(values, one);
	attr_add(s->attrs, key, "arrayValue", arr);
}

void
trace_event(struct trace_span *s, const char *name, int64_t t_ns, const char *const *kv, int n)
{
	cJSON *ev, *attrs;
	int i;

	if (s->o == NULL)
		return;
	if (s->events == NULL)
		s->events = cJSON_AddArrayToObject(s->o, "events");
	ev = cJSON_CreateObject();
	cJSON_AddItemToObject(ev, "timeUnixNano", ns_string(t_ns));
	cJSON_AddStringToObject(ev, "name", name);
	attrs = cJSON_AddArrayToObject(ev, "attributes");
	for (i = 0; i < n; i++)
		if (kv[2 * i + 1] != NULL)
			attr_add(attrs, kv[2 * i], "stringValue",
				 cJSON_CreateString(kv[2 * i + 1]));
	cJSON_AddItemToArray(s->events, ev);
}

void
trace_span_discard(struct trace_span *s)
{
	cJSON_Delete(s->o);
	memset(s, 0, sizeof *s);
}

/* Engine thread: the drop event, once a minute at most. */
static void
drop_event(struct trace_exporter *x)
{
	int64_t now = clock_wall_ms();
	uint64_t total = atomic_load(&trace_dropped);
	char detail[160];

	if (x->drop_event_ms != 0 && now - x->drop_event_ms < TRACE_DROP_EVENT_EVERY)
		return;
	snprintf(detail, sizeof detail,
		 "%llu spans dropped since the last event: the export queue is full "
		 "(tracing.max_queue %d)",
		 (unsigned long long)(total - x->drop_event_count), x->cap);
	x->drop_event_ms = now;
	x->drop_event_count = total;
	log_warn("trace", "%s", detail);
	if (x->st != NULL) {
		struct store_val v[] = {SVI(now), SVT("trace_spans_dropped"), SVT("tracing"),
					SVT(detail)};

		store_put(x->st, STORE_EVENT_INSERT, v, (int)ARRAY_SIZE(v));
	}
}

void
trace_span_end(struct trace_span *s, int64_t end_ns, int error, const char *error_msg)
{
	struct trace_exporter *x = trace_current;
	int queued = 0;

	if (s->o == NULL)
		return;
	if (x == NULL) {
		trace_span_discard(s);
		return;
	}
	cJSON_AddItemToObject(s->o, "endTimeUnixNano", ns_string(end_ns));
	if (error) {
		cJSON *st = cJSON_AddObjectToObject(s->o, "status");

		if (error_msg != NULL)
			cJSON_AddStringToObject(st, "message", error_msg);
		cJSON_AddNumberToObject(st, "code", TRACE_STATUS_ERROR);
	}
	pthread_mutex_lock(&x->mu);
	if (x->n < x->cap && !x->stopping) {
		x->q[(x->head + x->n) % x->cap] = s->o;
		x->n++;
		queued = 1;
		if (x->n >= x->batch)
			pthread_cond_signal(&x->cv);
	}
	pthread_mutex_unlock(&x->mu);
	if (!queued) {
		cJSON_Delete(s->o);
		atomic_fetch_add(&trace_dropped, 1);
		drop_event(x);
	}
	memset(s, 0, sizeof *s);
}

static void
resource_attr(cJSON *attrs, const char *key, const char *v)
{
	if (v != NULL)
		attr_add(attrs, key, "stringValue", cJSON_CreateString(v));
}

char *
trace_export_body(cJSON *const *spans, int n, const char *service, const char *version,
		  const char *host)
{
	cJSON *root = cJSON_CreateObject(), *rs, *res, *attrs, *ss, *scope, *arr, *one;
	char *text;
	int i;

	rs = cJSON_AddArrayToObject(root, "resourceSpans");
	one = cJSON_CreateObject();
	cJSON_AddItemToArray(rs, one);
	res = cJSON_AddObjectToObject(one, "resource");
	attrs = cJSON_AddArrayToObject(res, "attributes");
	resource_attr(attrs, "service.name", service);
	resource_attr(attrs, "service.version", version);
	resource_attr(attrs, "host.name", host);
	ss = cJSON_AddArrayToObject(one, "scopeSpans");
	one = cJSON_CreateObject();
	cJSON_AddItemToArray(ss, one);
	scope = cJSON_AddObjectToObject(one, "scope");
	cJSON_AddStringToObject(scope, "name", "fuseboxd");
	if (version != NULL)
		cJSON_AddStringToObject(scope, "version", version);
	arr = cJSON_AddArrayToObject(one, "spans");
	for (i = 0; i < n; i++)
		cJSON_AddItemReferenceToArray(arr, spans[i]);
	text = json_print(root);
	cJSON_Delete(root);
	return text;
}

static size_t
discard_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	(void)ptr;
	(void)userdata;
	return size * nmemb;
}

/* One POST; 0 sent, 1 worth a retry, -1 refused for good. */
static int
export_post(struct trace_exporter *x, CURL *h, const char *body)
{
	long status = 0;
	CURLcode rc;

	curl_easy_setopt(h, CURLOPT_URL, x->endpoint);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)x->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)x->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_body);
	rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		log_debug("trace", "export to %s: %s", x->endpoint, curl_easy_strerror(rc));
		return 1;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return 0;
	log_debug("trace", "export to %s: HTTP %ld", x->endpoint, status);
	return status == 429 || status >= 500 ? 1 : -1;
}

/* Wait ms unless stopping; mu held. 1 when stopping. */
static int
wait_ms(struct trace_exporter *x, int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	if (!x->stopping)
		pthread_cond_timedwait(&x->cv, &x->mu, &ts);
	return x->stopping;
}

static void *
export_thread(void *arg)
{
	struct trace_exporter *x = arg;
	CURL *h = curl_easy_init();
	cJSON **batch = xcalloc((size_t)x->batch, sizeof *batch);
	int i, k, r, tries, stop;
	int64_t backoff;
	char *body;

	pthread_mutex_lock(&x->mu);
	for (;;) {
		if (x->n < x->batch && !x->stopping)
			wait_ms(x, x->flush_ms);
		if (x->n == 0) {
			if (x->stopping)
				break;
			continue;
		}
		k = MIN(x->n, x->batch);
		for (i = 0; i < k; i++)
			batch[i] = x->q[(x->head + i) % x->cap];
		x->head = (x->head + k) % x->cap;
		x->n -= k;
		stop = x->stopping;
		pthread_mutex_unlock(&x->mu);
		body = trace_export_body(batch, k, x->service, x->version, x->host);
		backoff = TRACE_BACKOFF_MS;
		for (tries = 1;; tries++) {
			r = h != NULL && body != NULL ? export_post(x, h, body) : -1;
			if (r <= 0 || stop || tries >= TRACE_TRIES)
				break;
			pthread_mutex_lock(&x->mu);
			stop = wait_ms(x, backoff);
			pthread_mutex_unlock(&x->mu);
			if (stop)
				break;
			backoff = MIN(backoff * 2, TRACE_BACKOFF_MAX_MS);
		}
		if (r != 0)
			log_debug("trace", "%d spans not exported", k);
		free(body);
		for (i = 0; i < k; i++)
			cJSON_Delete(batch[i]);
		pthread_mutex_lock(&x->mu);
	}
	pthread_mutex_unlock(&x->mu);
	free(batch);
	if (h != NULL)
		curl_easy_cleanup(h);
	return NULL;
}

struct trace_exporter *
trace_exporter_new(const struct tracing_cfg *tc, struct store *st, const char *host,
		   const char *version, char **cause)
{
	struct trace_exporter *x;
	char *line;
	int i;

	if (tc->endpoint == NULL)
		return NULL;
	x = xcalloc(1, sizeof *x);
	x->cap = tc->max_queue;
	x->q = xcalloc((size_t)x->cap, sizeof *x->q);
	x->batch = tc->batch;
	x->flush_ms = tc->flush_ms;
	x->timeout_ms = tc->timeout_ms;
	x->include_io = tc->include_io;
	x->endpoint = xstrdup(tc->endpoint);
	x->service = xstrdup(tc->service_name ? tc->service_name : "fuseboxd");
	x->version = version ? xstrdup(version) : NULL;
	x->host = host ? xstrdup(host) : NULL;
	x->st = st;
	x->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	for (i = 0; i < tc->nheaders; i++) {
		line = xasprintf("%s: %s", tc->headers[i].name, tc->headers[i].value);
		x->hdrs = curl_slist_append(x->hdrs, line);
		free(line);
	}
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->cv, NULL);
	if (pthread_create(&x->th, NULL, export_thread, x) != 0) {
		if (cause != NULL)
			*cause = xstrdup("the trace export thread could not start");
		pthread_mutex_destroy(&x->mu);
		pthread_cond_destroy(&x->cv);
		curl_slist_free_all(x->hdrs);
		free(x->endpoint);
		free(x->service);
		free(x->version);
		free(x->host);
		free(x->q);
		free(x);
		return NULL;
	}
	return x;
}

void
trace_exporter_free(struct trace_exporter *x)
{
	int i;

	if (x == NULL)
		return;
	if (trace_current == x)
		trace_current = NULL;
	pthread_mutex_lock(&x->mu);
	x->stopping = 1;
	pthread_cond_signal(&x->cv);
	pthread_mutex_unlock(&x->mu);
	pthread_join(x->th, NULL);
	for (i = 0; i < x->n; i++)
		cJSON_Delete(x->q[(x->head + i) % x->cap]);
	pthread_mutex_destroy(&x->mu);
	pthread_cond_destroy(&x->cv);
	curl_slist_free_all(x->hdrs);
	free(x->endpoint);
	free(x->service);
	free(x->version);
	free(x->host);
	free(x->q);
	free(x);
}
