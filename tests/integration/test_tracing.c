/*
 * Integration: W3C trace context and OpenTelemetry spans (API.md
 * "Tracing") and record_response_headers (CONFIG.md). fuseboxd exports to
 * a small OTLP/HTTP receiver in this test on 127.0.0.1; the test asserts
 * the spans' parentage, names, kinds and attributes, the traceparent the
 * caller gets back and the one the upstream gets, the stored trace and
 * span ids, retries on 503, and the dropped-span count when the queue is
 * full.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "itd.h"

#define TID    "4bf92f3577b34da6a3ce929d0e0e4736"
#define SID    "00f067aa0ba902b7"
#define CALLER "00-" TID "-" SID "-01"
#define SCHEMA                                                                                     \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\"],"                   \
	"\"properties\":{\"intent\":{\"type\":\"string\",\"enum\":[\"refund\",\"other\"]}}}}"
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define RULES	     "\"rules\":{\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}}"

/* The OTLP receiver: every export request's body, and how many to refuse first. */
struct otlp {
	int fd, port;
	pthread_t th;
	volatile int stop;
	pthread_mutex_t mu;
	cJSON *bodies; /* array of parsed ExportTraceServiceRequest */
	int posts;
	int refuse; /* answer 503 to this many more requests */
	int stall_ms;
	char path[128];
};

static struct otlp R;
static struct itd T;

static void
otlp_serve(struct otlp *o, int c)
{
	size_t cap = 1 << 16, got = 0, need;
	char *buf = malloc(cap), *hdr_end = NULL, *cl;
	long clen = 0;
	ssize_t n;
	int refuse;
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\n\r\n";

	for (;;) {
		if (got + 1 >= cap && (buf = realloc(buf, cap *= 2)) == NULL)
			abort();
		n = read(c, buf + got, cap - 1 - got);
		if (n <= 0)
			goto out;
		got += (size_t)n;
		buf[got] = '\0';
		if (hdr_end == NULL && (hdr_end = strstr(buf, "\r\n\r\n")) != NULL) {
			cl = strcasestr(buf, "Content-Length:");
			if (cl != NULL && cl < hdr_end)
				clen = strtol(cl + 15, NULL, 10);
		}
		if (hdr_end != NULL) {
			need = (size_t)(hdr_end + 4 - buf) + (size_t)clen;
			if (got >= need)
				break;
		}
		hdr_end = hdr_end ? strstr(buf, "\r\n\r\n") : NULL;
	}
	hdr_end = strstr(buf, "\r\n\r\n");
	if (o->stall_ms > 0)
		usleep((useconds_t)o->stall_ms * 1000);
	pthread_mutex_lock(&o->mu);
	o->posts++;
	refuse = o->refuse > 0;
	if (refuse) {
		o->refuse--;
	} else {
		cJSON *b = cJSON_Parse(hdr_end + 4);
		char *sp = strchr(buf, ' '), *sp2 = sp ? strchr(sp + 1, ' ') : NULL;

		if (b != NULL)
			cJSON_AddItemToArray(o->bodies, b);
		if (sp2 != NULL && (size_t)(sp2 - sp - 1) < sizeof o->path) {
			memcpy(o->path, sp + 1, (size_t)(sp2 - sp - 1));
			o->path[sp2 - sp - 1] = '\0';
		}
	}
	pthread_mutex_unlock(&o->mu);
	n = refuse ? write(c, busy, sizeof busy - 1) : write(c, ok, sizeof ok - 1);
	(void)n;
out:
	free(buf);
}

static void *
otlp_main(void *arg)
{
	struct otlp *o = arg;

	while (!o->stop) {
		struct pollfd p = {o->fd, POLLIN, 0};
		int c;

		if (poll(&p, 1, 100) <= 0)
			continue;
		c = accept(o->fd, NULL, NULL);
		if (c < 0)
			continue;
		otlp_serve(o, c);
		close(c);
	}
	return NULL;
}

static void
otlp_start(struct otlp *o)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof a;

	memset(o, 0, sizeof *o);
	pthread_mutex_init(&o->mu, NULL);
	o->bodies = cJSON_CreateArray();
	o->fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(o->fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(o->fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(o->fd, 16), 0);
	ck_assert_int_eq(getsockname(o->fd, (struct sockaddr *)&a, &len), 0);
	o->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&o->th, NULL, otlp_main, o), 0);
}

static void
otlp_stop(struct otlp *o)
{
	o->stop = 1;
	pthread_join(o->th, NULL);
	close(o->fd);
	cJSON_Delete(o->bodies);
	pthread_mutex_destroy(&o->mu);
}

/* The spans of trace tid received so far (a new array of copies). */
static cJSON *
otlp_spans(struct otlp *o, const char *tid)
{
	cJSON *out = cJSON_CreateArray(), *b, *rs, *ss, *sp;

	pthread_mutex_lock(&o->mu);
	cJSON_ArrayForEach(b, o->bodies)
	{
		cJSON_ArrayForEach(rs, cJSON_GetObjectItem(b, "resourceSpans"))
		{
			cJSON_ArrayForEach(ss, cJSON_GetObjectItem(rs, "scopeSpans"))
			{
				cJSON_ArrayForEach(sp, cJSON_GetObjectItem(ss, "spans"))
				{
					if (strcmp(itd_str(sp, "traceId"), tid) == 0)
						cJSON_AddItemToArray(out, cJSON_Duplicate(sp, 1));
				}
			}
		}
	}
	pthread_mutex_unlock(&o->mu);
	return out;
}

/* Wait up to 5 s for n spans of trace tid. */
static cJSON *
otlp_wait(struct otlp *o, const char *tid, int n)
{
	cJSON *s = NULL;
	int i;

	for (i = 0; i < 100; i++) {
		cJSON_Delete(s);
		s = otlp_spans(o, tid);
		if (cJSON_GetArraySize(s) >= n)
			break;
		usleep(50000);
	}
	return s;
}

static const cJSON *
span_named(const cJSON *spans, const char *name)
{
	const cJSON *sp;

	cJSON_ArrayForEach(sp, spans)
	{
		if (strcmp(itd_str(sp, "name"), name) == 0)
			return sp;
	}
	return NULL;
}

/* The value object of attribute key in an attributes array; NULL when absent. */
static const cJSON *
attr(const cJSON *owner, const char *key)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, cJSON_GetObjectItem(owner, "attributes"))
	{
		if (strcmp(itd_str(a, "key"), key) == 0)
			return cJSON_GetObjectItem(a, "value");
	}
	return NULL;
}

static const char *
attr_str(const cJSON *owner, const char *key)
{
	return itd_str(attr(owner, key), "stringValue");
}

static const char *
attr_int(const cJSON *owner, const char *key)
{
	return itd_str(attr(owner, key), "intValue");
}

static void
start(const char *tracing_extra, const char *backend_extra)
{
	char *cfg;
	int r;

	otlp_start(&R);
	if (asprintf(
		    &cfg,
		    "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
		    "\"tracing\":{\"endpoint\":\"http://127.0.0.1:%d/v1/traces\","
		    "\"flush_ms\":100,\"service_name\":\"fb-test\"%s},"
		    "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
		    "completions\",\"model\":\"m\",\"record_response_headers\":[\"X-Mock-Backend\","
		    "\"Retry-After\",\"X-Not-Sent\"]%s}],"
		    "\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,\"targets\":[{\"backend\":"
		    "\"primary\"}]," SCHEMA "," RULES "}]}",
		    R.port, tracing_extra, backend_extra) < 0)
		abort();
	r = itd_start(&T, cfg);
	free(cfg);
	ck_assert_int_eq(r, 0);
}

static void
teardown(void)
{
	itd_stop(&T);
	otlp_stop(&R);
}

/* POST /v1/routes/intent/call with a traceparent (NULL: none) and tracestate. */
static void
call_traced(const char *body, const char *tp, const char *ts, long want, struct http_resp *out)
{
	char url[128], h1[160], h2[160];
	const char *hdrs[3] = {NULL, NULL, NULL};
	int n = 0;

	snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
	if (tp != NULL) {
		snprintf(h1, sizeof h1, "traceparent: %s", tp);
		hdrs[n++] = h1;
	}
	if (ts != NULL) {
		snprintf(h2, sizeof h2, "tracestate: %s", ts);
		hdrs[n++] = h2;
	}
	ck_assert_int_eq(http_do("POST", url, body, hdrs, 10000, out), 0);
	ck_assert_msg(out->status == want, "status %ld: %s", out->status, out->body);
}

/* The mock's last request headers (parsed stats; caller deletes *st). */
static const cJSON *
upstream_headers(cJSON **st)
{
	*st = mock_stats(&T.mock);
	return cJSON_GetObjectItem(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(*st, "backends"), "primary"),
			"last_request"),
		"headers");
}

START_TEST(caller_context_propagates_and_spans_nest)
{
	struct http_resp r;
	cJSON *st, *spans, *o;
	const cJSON *h, *cs, *as, *res;
	char *tp, call_span[17], up_span[17], q[256];
	const char *up;

	start("", "");
	call_traced("{\"input\":\"refund\",\"request_id\":\"tr-1\"}", CALLER,
		    "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", 200, &r);
	/* The answer names the call's span: same trace, a new span, sampled. */
	tp = http_resp_header(&r, "traceparent");
	ck_assert_ptr_nonnull(tp);
	ck_assert_int_eq(strlen(tp), 55);
	ck_assert(strncmp(tp, "00-" TID "-", 36) == 0);
	ck_assert_str_eq(tp + 52, "-01");
	memcpy(call_span, tp + 36, 16);
	call_span[16] = '\0';
	ck_assert_str_ne(call_span, SID);
	free(tp);
	http_resp_free(&r);

	/* The upstream got its attempt's own span, child of nothing we can see
	 * but in the caller's trace, and the caller's tracestate unchanged. */
	h = upstream_headers(&st);
	up = itd_str(h, "traceparent");
	ck_assert_int_eq(strlen(up), 55);
	ck_assert(strncmp(up, "00-" TID "-", 36) == 0);
	ck_assert_str_eq(up + 52, "-01");
	memcpy(up_span, up + 36, 16);
	up_span[16] = '\0';
	ck_assert_str_ne(up_span, call_span);
	ck_assert_str_ne(up_span, SID);
	ck_assert_str_eq(itd_str(h, "tracestate"), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
	cJSON_Delete(st);

	/* Stored: the trace id on the call, the span id and headers on the attempt. */
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "calls WHERE request_id='tr-1' AND trace_id='" TID "'"), 1);
	snprintf(q, sizeof q,
		 "attempts WHERE request_id='tr-1' AND span_id='%s' AND "
		 "upstream_headers='{\"x-mock-backend\":\"primary\"}'",
		 up_span);
	ck_assert_int_eq(itd_count(&T, q), 1);
	o = itd_expect(&T, "GET", "/v1/requests/tr-1", NULL, "view-token", 200);
	ck_assert_str_eq(itd_str(o, "trace_id"), TID);
	cJSON_Delete(o);

	/* The exported spans: SERVER call span under the caller's, CLIENT attempt under it. */
	spans = otlp_wait(&R, TID, 2);
	ck_assert_int_eq(cJSON_GetArraySize(spans), 2);
	ck_assert_str_eq(R.path, "/v1/traces");
	cs = span_named(spans, "fusebox.call");
	as = span_named(spans, "chat m");
	ck_assert_ptr_nonnull(cs);
	ck_assert_ptr_nonnull(as);
	ck_assert_str_eq(itd_str(cs, "spanId"), call_span);
	ck_assert_str_eq(itd_str(cs, "parentSpanId"), SID);
	ck_assert_int_eq((int)itd_num(cs, "kind"), 2);
	ck_assert_str_eq(itd_str(as, "spanId"), up_span);
	ck_assert_str_eq(itd_str(as, "parentSpanId"), call_span);
	ck_assert_int_eq((int)itd_num(as, "kind"), 3);
	ck_assert(strtoll(itd_str(as, "startTimeUnixNano"), NULL, 10) >=
		  strtoll(itd_str(cs, "startTimeUnixNano"), NULL, 10));
	ck_assert(strtoll(itd_str(cs, "endTimeUnixNano"), NULL, 10) >=
		  strtoll(itd_str(cs, "startTimeUnixNano"), NULL, 10));
	ck_assert_ptr_null(cJSON_GetObjectItem(cs, "status"));
	ck_assert_ptr_null(cJSON_GetObjectItem(as, "status"));

	ck_assert_str_eq(attr_str(cs, "gen_ai.operation.name"), "chat");
	ck_assert_str_eq(attr_str(cs, "fusebox.route"), "intent");
	ck_assert_str_eq(attr_str(cs, "fusebox.source"), "llm");
	ck_assert_str_eq(attr_int(cs, "fusebox.level"), "0");
	ck_assert_str_eq(attr_int(cs, "fusebox.budget_ms"), "3000");
	ck_assert_str_eq(attr_int(cs, "http.response.status_code"), "200");
	ck_assert_str_eq(attr_str(cs, "fusebox.review"), "none");
	ck_assert_ptr_null(attr(cs, "fusebox.input")); /* include_io is off */

	ck_assert_str_eq(attr_str(as, "gen_ai.operation.name"), "chat");
	ck_assert_str_eq(attr_str(as, "gen_ai.request.model"), "m");
	ck_assert_str_eq(attr_str(as, "server.address"), "127.0.0.1");
	ck_assert_str_eq(attr_int(as, "http.response.status_code"), "200");
	ck_assert_str_eq(attr_int(as, "fusebox.attempt_no"), "1");
	ck_assert_str_eq(attr_str(as, "fusebox.outcome"), "ok");
	ck_assert_str_eq(attr_str(as, "fusebox.breaker"), "closed");
	ck_assert(strtol(attr_int(as, "fusebox.remaining_ms"), NULL, 10) > 2000);
	ck_assert_ptr_nonnull(attr(as, "fusebox.first_byte_ms"));
	ck_assert_ptr_nonnull(attr(as, "gen_ai.usage.input_tokens"));
	ck_assert_ptr_null(attr(as, "error.type"));
	ck_assert_ptr_null(attr(as, "fusebox.output"));
	ck_assert_str_eq(
		itd_str(cJSON_GetArrayItem(
				cJSON_GetObjectItem(
					cJSON_GetObjectItem(
						attr(as, "http.response.header.x-mock-backend"),
						"arrayValue"),
					"values"),
				0),
			"stringValue"),
		"primary");
	ck_assert_ptr_null(attr(as, "http.response.header.x-not-sent"));
	cJSON_Delete(spans);

	/* Resource: service.name from the config. */
	pthread_mutex_lock(&R.mu);
	res = cJSON_GetObjectItem(
		cJSON_GetArrayItem(
			cJSON_GetObjectItem(cJSON_GetArrayItem(R.bodies, 0), "resourceSpans"), 0),
		"resource");
	ck_assert_str_eq(attr_str(res, "service.name"), "fb-test");
	ck_assert_str_eq(attr_str(res, "service.version"), FB_VERSION);
	ck_assert_ptr_nonnull(attr(res, "host.name"));
	pthread_mutex_unlock(&R.mu);
}
END_TEST

START_TEST(fall_and_validation_events)
{
	struct http_resp r;
	cJSON *spans;
	const cJSON *cs, *as, *ev, *e;
	int falls = 0, vfails = 0;

	start("", "");
	ck_assert_int_eq(mock_set(&T.mock, "primary",
				  "{\"content\":\"{\\\"intent\\\":\\\"banana\\\"}\",\"status\":200,"
				  "\"retry_after\":\"7\"}"),
			 0);
	call_traced("{\"input\":\"x\",\"request_id\":\"tr-2\"}", CALLER, NULL, 200, &r);
	http_resp_free(&r);
	spans = otlp_wait(&R, TID, 2);
	cs = span_named(spans, "fusebox.call");
	ck_assert_ptr_nonnull(cs);
	ck_assert_str_eq(attr_str(cs, "fusebox.source"), "rules");
	ck_assert_str_eq(attr_str(cs, "fusebox.reason"), "validation_schema");
	/* Answered 200 from the rules: the call is no error. */
	ck_assert_ptr_null(cJSON_GetObjectItem(cs, "status"));
	ev = cJSON_GetObjectItem(cs, "events");
	cJSON_ArrayForEach(e, ev)
	{
		if (strcmp(itd_str(e, "name"), "fusebox.fall") == 0) {
			falls++;
			ck_assert_str_eq(attr_str(e, "from"), "primary");
			ck_assert_str_eq(attr_str(e, "reason"), "validation_schema");
		} else if (strcmp(itd_str(e, "name"), "fusebox.validation_failure") == 0) {
			vfails++;
			ck_assert_str_eq(attr_str(e, "stage"), "schema");
		}
	}
	ck_assert_int_ge(falls, 1);
	ck_assert_int_ge(vfails, 1);
	as = span_named(spans, "chat m");
	ck_assert_ptr_nonnull(as);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(as, "status"), "code"), 2);
	ck_assert_str_eq(attr_str(as, "error.type"), "validation_schema");
	cJSON_Delete(spans);
	itd_settle();
	ck_assert_int_ge(itd_count(&T, "attempts WHERE request_id='tr-2' AND upstream_headers="
				       "'{\"x-mock-backend\":\"primary\",\"retry-after\":\"7\"}'"),
			 1);
}
END_TEST

START_TEST(malformed_or_unsampled_context)
{
	struct http_resp r;
	cJSON *st, *spans;
	const cJSON *h;
	char *tp, tid[33], q[160];

	start("", "");
	/* Malformed (uppercase hex): ignored, a new trace, tracestate dropped. */
	call_traced("{\"input\":\"refund\",\"request_id\":\"tr-3\"}",
		    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "a=b", 200, &r);
	tp = http_resp_header(&r, "traceparent");
	ck_assert_ptr_nonnull(tp);
	ck_assert_int_eq(strlen(tp), 55);
	memcpy(tid, tp + 3, 32);
	tid[32] = '\0';
	ck_assert_str_ne(tid, TID);
	ck_assert_str_ne(tid, "00000000000000000000000000000000");
	ck_assert_str_eq(tp + 52, "-01"); /* sample_rate 1.0 */
	free(tp);
	http_resp_free(&r);
	h = upstream_headers(&st);
	ck_assert(strncmp(itd_str(h, "traceparent"), "00-", 3) == 0);
	ck_assert(strncmp(itd_str(h, "traceparent") + 3, tid, 32) == 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(h, "tracestate"));
	cJSON_Delete(st);
	spans = otlp_wait(&R, tid, 2);
	ck_assert_int_eq(cJSON_GetArraySize(spans), 2);
	ck_assert_ptr_null(cJSON_GetObjectItem(span_named(spans, "fusebox.call"), "parentSpanId"));
	cJSON_Delete(spans);
	itd_settle();
	snprintf(q, sizeof q, "calls WHERE request_id='tr-3' AND trace_id='%s'", tid);
	ck_assert_int_eq(itd_count(&T, q), 1);

	/* The caller's flag says not sampled: propagated, never exported. */
	call_traced("{\"input\":\"refund\"}", "00-" TID "-" SID "-00", NULL, 200, &r);
	tp = http_resp_header(&r, "traceparent");
	ck_assert(strncmp(tp, "00-" TID "-", 36) == 0);
	ck_assert_str_eq(tp + 52, "-00");
	free(tp);
	http_resp_free(&r);
	h = upstream_headers(&st);
	ck_assert_str_eq(itd_str(h, "traceparent") + 52, "-00");
	cJSON_Delete(st);
	usleep(600000);
	spans = otlp_spans(&R, TID);
	ck_assert_int_eq(cJSON_GetArraySize(spans), 0);
	cJSON_Delete(spans);
}
END_TEST

START_TEST(chat_and_async_keep_the_callers_trace)
{
	struct http_resp r;
	char url[128], *tp;
	cJSON *spans;
	int i;

	start("", "");
	snprintf(url, sizeof url, "%s/v1/chat/completions", T.base);
	ck_assert_int_eq(http_do("POST", url,
				 "{\"model\":\"fusebox/intent\",\"messages\":[{\"role\":\"user\","
				 "\"content\":\"refund\"}]}",
				 (const char *const[]){"traceparent: " CALLER,
						       "Authorization: Bearer call-token", NULL},
				 10000, &r),
			 0);
	ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
	tp = http_resp_header(&r, "traceparent");
	ck_assert_ptr_nonnull(tp);
	ck_assert(strncmp(tp, "00-" TID "-", 36) == 0);
	free(tp);
	http_resp_free(&r);
	spans = otlp_wait(&R, TID, 2);
	ck_assert_int_eq(cJSON_GetArraySize(spans), 2);
	ck_assert_str_eq(itd_str(span_named(spans, "fusebox.call"), "parentSpanId"), SID);
	cJSON_Delete(spans);

	/* An async job runs later, still in the caller's trace. */
	call_traced("{\"input\":\"refund\",\"mode\":\"async\",\"request_id\":\"tr-job\"}", CALLER,
		    NULL, 202, &r);
	http_resp_free(&r);
	for (i = 0; i < 100; i++) {
		itd_settle();
		if (itd_count(&T, "calls WHERE request_id='tr-job' AND trace_id='" TID "'") == 1)
			break;
		usleep(50000);
	}
	ck_assert_int_eq(itd_count(&T, "calls WHERE request_id='tr-job' AND trace_id='" TID "'"),
			 1);
	spans = otlp_wait(&R, TID, 4);
	ck_assert_int_eq(cJSON_GetArraySize(spans), 4);
	cJSON_Delete(spans);
}
END_TEST

START_TEST(export_retried_on_503)
{
	struct http_resp r;
	cJSON *spans;

	start("", "");
	pthread_mutex_lock(&R.mu);
	R.refuse = 2;
	pthread_mutex_unlock(&R.mu);
	call_traced("{\"input\":\"refund\"}", CALLER, NULL, 200, &r);
	http_resp_free(&r);
	spans = otlp_wait(&R, TID, 2);
	ck_assert_int_eq(cJSON_GetArraySize(spans), 2);
	cJSON_Delete(spans);
	pthread_mutex_lock(&R.mu);
	ck_assert_int_ge(R.posts, 3);
	ck_assert_int_eq(R.refuse, 0);
	pthread_mutex_unlock(&R.mu);
}
END_TEST

START_TEST(full_queue_drops_and_counts)
{
	struct http_resp r;
	double dropped, t0;
	struct timespec a, b;
	int i;

	/* One span fits; the collector takes 3 s an export: calls never wait for it. */
	start(",\"max_queue\":1,\"batch\":1", "");
	R.stall_ms = 3000;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < 6; i++) {
		call_traced("{\"input\":\"refund\"}", CALLER, NULL, 200, &r);
		http_resp_free(&r);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	t0 = (double)(b.tv_sec - a.tv_sec) * 1000 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	ck_assert_msg(t0 < 2500, "6 calls took %.0f ms behind a stalled collector", t0);
	dropped = itd_metric(&T, "fusebox_trace_spans_dropped_total");
	ck_assert_msg(dropped >= 8, "dropped %.0f of 12 spans", dropped);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='trace_spans_dropped'"), 1);
	R.stall_ms = 0;
}
END_TEST

/* fuseboxd --check-config on config; its output (new string) and exit status. */
static char *
check_config(const char *config, int *status)
{
	char dir[] = "/tmp/fb-trace-cfg-XXXXXX", path[64], cmd[512], *out = NULL;
	size_t len = 0;
	FILE *f, *p;
	int c;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/fusebox.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(config, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "%s/daemon/fuseboxd -c %s --check-config 2>&1",
		 getenv("FB_BUILD_ROOT"), path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	f = open_memstream(&out, &len);
	while ((c = fgetc(p)) != EOF)
		fputc(c, f);
	fclose(f);
	*status = pclose(p);
	unlink(path);
	rmdir(dir);
	return out;
}

START_TEST(config_bounds_are_checked)
{
	static const struct {
		const char *tracing, *record, *needle;
	} cases[] = {
		{"{}", "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]",
		 "record_response_headers: at most 8 names (got 9)"},
		{"{}", "[\"X-LLM-Reason\",\"x-llm-reason\"]",
		 "record_response_headers[1]: duplicate name"},
		{"{}", "[\"X Bad\"]",
		 "record_response_headers[0]: must be a valid HTTP header name"},
		{"{}", "[7]", "record_response_headers[0]: must be a valid HTTP header name"},
		{"{}", "\"retry-after\"", "record_response_headers: must be an array"},
		{"{\"endpoint\":\"ftp://collector/v1/traces\"}", "[]", "tracing.endpoint"},
		{"{\"sample_rate\":1.5}", "[]", "tracing.sample_rate"},
		{"{\"max_queue\":0}", "[]", "tracing.max_queue"},
		{"{\"headers\":{\"X-Scope\":5}}", "[]", "tracing.headers.X-Scope"},
		{"{\"nope\":1}", "[]", "tracing.nope"},
	};
	char long_name[300], *cfg, *out;
	size_t i;
	int status;

	for (i = 0; i < sizeof cases / sizeof cases[0] + 2; i++) {
		const char *tr = i < ARRAY_LEN(cases) ? cases[i].tracing : "{}";
		const char *rec = i < ARRAY_LEN(cases) ? cases[i].record : NULL;
		char recbuf[400];

		if (i == ARRAY_LEN(cases)) {
			/* 257 bytes: refused */
			memset(long_name, 'x', 257);
			long_name[257] = '\0';
			snprintf(recbuf, sizeof recbuf, "[\"%s\"]", long_name);
			rec = recbuf;
		} else if (i == ARRAY_LEN(cases) + 1) {
			/* the good ones: 8 names, one of 256 bytes, and a full tracing section */
			memset(long_name, 'y', 256);
			long_name[256] = '\0';
			snprintf(recbuf, sizeof recbuf,
				 "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"%s\"]", long_name);
			rec = recbuf;
			tr = "{\"endpoint\":\"http://127.0.0.1:4318/v1/traces\",\"service_name\":"
			     "\"s\",\"sample_rate\":0.1,\"max_queue\":10,\"batch\":5,\"flush_ms\":"
			     "50,\"timeout_ms\":500,\"headers\":{\"X-Scope\":\"t\"},"
			     "\"include_io\":true}";
		}
		if (asprintf(&cfg,
			     "{\"listen\":\"127.0.0.1:0\",\"database\":\"x.db\",\"tracing\":%s,"
			     "\"backends\":[{\"name\":\"b\",\"url\":\"http://127.0.0.1:9/v1\","
			     "\"model\":\"m\",\"record_response_headers\":%s}],"
			     "\"routes\":[{\"name\":\"r\",\"targets\":[{\"backend\":\"b\"}]}]}",
			     tr, rec) < 0)
			abort();
		out = check_config(cfg, &status);
		if (i == ARRAY_LEN(cases) + 1) {
			ck_assert_msg(status == 0, "refused: %s", out);
		} else {
			ck_assert_msg(status != 0, "accepted case %zu", i);
			ck_assert_msg(strstr(out, i < ARRAY_LEN(cases) ? cases[i].needle
								       : "longer than 256") != NULL,
				      "case %zu: %s", i, out);
		}
		free(out);
		free(cfg);
	}
}
END_TEST

static Suite *
tracing_suite(void)
{
	Suite *s = suite_create("tracing");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)
	ADD(caller_context_propagates_and_spans_nest);
	ADD(fall_and_validation_events);
	ADD(malformed_or_unsampled_context);
	ADD(chat_and_async_keep_the_callers_trace);
	ADD(export_retried_on_503);
	ADD(full_queue_drops_and_counts);
	ITD_ADD_TEST(s, config_bounds_are_checked, NULL, NULL, 60);
#undef ADD
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tracing_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
