/*
 * test_mockllm: drives the real fusebox-mockllm over loopback and asserts
 * each behaviour exactly. Every test gets its own mock (checked fixture);
 * the teardown stops it with SIGTERM and requires exit status 0, so every
 * behaviour also proves a clean shutdown (suspended connections included).
 */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#define DEFAULT_CONTENT                                                                            \
	"{\"intent\":\"refund\",\"confidence\":0.92,"                                              \
	"\"summary\":\"customer wants a refund\"}"
#define CHAT_BODY                                                                                  \
	"{\"model\":\"gpt-test\",\"messages\":[{\"role\":\"user\","                                \
	"\"content\":\"I want my money back\"}]}"

static struct proc mock = {-1, 0, -1};

static void
mock_setup(void)
{
	int rc = mock_start(&mock);

	ck_assert_msg(rc == 0, "mock_start: %s", strerror(-rc));
}

static void
mock_teardown(void)
{
	int status;

	if (mock.pid <= 0)
		return;
	status = proc_kill(&mock, SIGTERM);
	ck_assert_int_eq(status, 0);
}

/* POST CHAT_BODY (or body) to backend (NULL: default), fill r. */
static int
chat(const char *backend, const char *body, long timeout_ms, struct http_resp *r)
{
	char path[128], *url;
	int rc;

	if (backend != NULL)
		snprintf(path, sizeof path, "/b/%s/v1/chat/completions", backend);
	else
		snprintf(path, sizeof path, "/v1/chat/completions");
	url = mock_url(&mock, path);
	rc = http_do("POST", url, body != NULL ? body : CHAT_BODY, NULL, timeout_ms, r);
	free(url);
	return rc;
}

/* choices[0].message.content of a chat.completion body; malloc'd. */
static char *
completion_content(const struct http_resp *r)
{
	const cJSON *c;
	cJSON *j;
	char *s = NULL;

	j = cJSON_ParseWithLength(r->body, r->len);
	c = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0), "message");
	c = cJSON_GetObjectItemCaseSensitive(c, "content");
	if (cJSON_IsString(c))
		s = strdup(c->valuestring);
	cJSON_Delete(j);
	return s;
}

/* stats backends.<backend>.<key> as a number, or -1. */
static long
stat_num(const char *backend, const char *key)
{
	const cJSON *v;
	cJSON *s;
	long n = -1;

	s = mock_stats(&mock);
	v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "backends"),
						 backend),
		key);
	if (cJSON_IsNumber(v))
		n = (long)v->valuedouble;
	cJSON_Delete(s);
	return n;
}

/* Poll stats until backend.key == want or timeout; returns the last value. */
static long
stat_wait(const char *backend, const char *key, long want, int timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	long v;

	for (;;) {
		v = stat_num(backend, key);
		if (v == want || harness_now_ms() >= deadline)
			break;
		usleep(10000);
	}
	return v;
}

START_TEST(test_default_answer)
{
	struct http_resp r;
	const cJSON *u, *ch, *msg;
	char *ct, *be;
	cJSON *j;

	ck_assert_int_eq(chat(NULL, NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ct = http_resp_header(&r, "content-type");
	ck_assert_str_eq(ct, "application/json");
	be = http_resp_header(&r, "X-Mock-Backend");
	ck_assert_str_eq(be, "default");
	j = cJSON_ParseWithLength(r.body, r.len);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "object")->valuestring, "chat.completion");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "model")->valuestring, "gpt-test");
	ck_assert_int_eq(strncmp(cJSON_GetObjectItem(j, "id")->valuestring, "mock-", 5), 0);
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(j, "created")));
	ch = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(ch, "index")->valueint, 0);
	ck_assert_str_eq(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "stop");
	msg = cJSON_GetObjectItem(ch, "message");
	ck_assert_str_eq(cJSON_GetObjectItem(msg, "role")->valuestring, "assistant");
	ck_assert_str_eq(cJSON_GetObjectItem(msg, "content")->valuestring, DEFAULT_CONTENT);
	u = cJSON_GetObjectItem(j, "usage");
	ck_assert_int_gt(cJSON_GetObjectItem(u, "prompt_tokens")->valueint, 0);
	ck_assert_int_gt(cJSON_GetObjectItem(u, "completion_tokens")->valueint, 0);
	ck_assert_int_eq(cJSON_GetObjectItem(u, "total_tokens")->valueint,
			 cJSON_GetObjectItem(u, "prompt_tokens")->valueint +
				 cJSON_GetObjectItem(u, "completion_tokens")->valueint);
	cJSON_Delete(j);
	free(ct);
	free(be);
	http_resp_free(&r);
}
END_TEST

static const struct {
	const char *preset;
	const char *content;
} presets[] = {
	{"good", DEFAULT_CONTENT},
	{"fenced", "```json\n" DEFAULT_CONTENT "\n```"},
	{"prose", "Sure! Here is the result: " DEFAULT_CONTENT " Hope this helps."},
	{"truncated", "{\"intent\":\"refund\",\"confid"},
	{"wrong_enum", "{\"intent\":\"banana\",\"confidence\":0.92,"
		       "\"summary\":\"customer wants a refund\"}"},
	{"confidence_out_of_range", "{\"intent\":\"refund\","
				    "\"confidence\":1.7,\"summary\":\"customer wants a refund\"}"},
	{"confidence_string", "{\"intent\":\"refund\","
			      "\"confidence\":\"0.85\","
			      "\"summary\":\"customer wants a refund\"}"},
	{"key_case", "{\"Intent\":\"refund\",\"CONFIDENCE\":0.9,"
		     "\"Summary\":\"customer wants a refund\"}"},
	{"empty", ""},
	{"low_confidence", "{\"intent\":\"refund\",\"confidence\":0.4,"
			   "\"summary\":\"customer wants a refund\"}"},
};

START_TEST(test_presets)
{
	struct http_resp r;
	char *beh, *c;
	size_t i;

	for (i = 0; i < sizeof presets / sizeof presets[0]; i++) {
		if (asprintf(&beh, "{\"preset\":\"%s\"}", presets[i].preset) < 0)
			abort();
		ck_assert_int_eq(mock_set(&mock, "p", beh), 0);
		ck_assert_int_eq(chat("p", NULL, 5000, &r), 0);
		ck_assert_int_eq(r.status, 200);
		c = completion_content(&r);
		ck_assert_msg(c != NULL && strcmp(c, presets[i].content) == 0, "preset %s: got %s",
			      presets[i].preset, c);
		free(c);
		free(beh);
		http_resp_free(&r);
	}
	ck_assert_int_eq(
		mock_set(&mock, "p", "{\"content\":\"plain \\\"text\\\"\",\"preset\":\"fenced\"}"),
		0);
	ck_assert_int_eq(chat("p", NULL, 5000, &r), 0);
	c = completion_content(&r);
	ck_assert_str_eq(c, "plain \"text\"");
	free(c);
	http_resp_free(&r);
}
END_TEST

START_TEST(test_delay)
{
	struct http_resp r;
	int i;

	ck_assert_int_eq(mock_set(&mock, "d", "{\"delay_ms\":300}"), 0);
	ck_assert_int_eq(chat("d", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(r.elapsed_ms >= 290 && r.elapsed_ms < 1000, "elapsed %.1f ms", r.elapsed_ms);
	http_resp_free(&r);

	ck_assert_int_eq(mock_set(&mock, "d", "{\"delay_min_ms\":100,\"delay_max_ms\":200}"), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(chat("d", NULL, 5000, &r), 0);
		ck_assert_msg(r.elapsed_ms >= 95 && r.elapsed_ms < 700, "elapsed %.1f ms",
			      r.elapsed_ms);
		http_resp_free(&r);
	}

	ck_assert_int_eq(mock_set(&mock, "d", "{\"hang_ms\":200}"), 0);
	ck_assert_int_eq(chat("d", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(r.elapsed_ms >= 190 && r.elapsed_ms < 900, "elapsed %.1f ms", r.elapsed_ms);
	http_resp_free(&r);
}
END_TEST

START_TEST(test_status)
{
	struct http_resp r;
	const cJSON *e;
	char *ra;
	cJSON *j;

	ck_assert_int_eq(mock_set(&mock, "s", "{\"status\":503,\"retry_after\":\"7\"}"), 0);
	ck_assert_int_eq(chat("s", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	ra = http_resp_header(&r, "Retry-After");
	ck_assert_str_eq(ra, "7");
	free(ra);
	j = cJSON_ParseWithLength(r.body, r.len);
	e = cJSON_GetObjectItem(j, "error");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, "server_error");
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(e, "message")));
	cJSON_Delete(j);
	http_resp_free(&r);

	ck_assert_int_eq(mock_set(&mock, "s", "{\"status\":429}"), 0);
	ck_assert_int_eq(chat("s", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 429);
	ck_assert_ptr_null(http_resp_header(&r, "Retry-After"));
	ck_assert_ptr_nonnull(strstr(r.body, "rate_limit_error"));
	http_resp_free(&r);

	ck_assert_int_eq(mock_set(&mock, "s",
				  "{\"status\":200,\"body\":\"<html>oops\",\"content_type\":"
				  "\"text/html\"}"),
			 0);
	ck_assert_int_eq(chat("s", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "<html>oops");
	ra = http_resp_header(&r, "Content-Type");
	ck_assert_str_eq(ra, "text/html");
	free(ra);
	http_resp_free(&r);
}
END_TEST

/* Send a chat request on a raw socket and leave it open; returns the fd. */
static int
raw_chat(const char *backend)
{
	struct sockaddr_in sin;
	char req[512];
	int fd, n;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)mock.port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	n = snprintf(req, sizeof req,
		     "POST /b/%s/v1/chat/completions "
		     "HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
		     "Content-Length: 2\r\n\r\n{}",
		     backend);
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	return fd;
}

START_TEST(test_hang)
{
	struct http_resp r;
	int fd;

	ck_assert_int_eq(mock_set(&mock, "h", "{\"hang\":true}"), 0);
	ck_assert_int_eq(chat("h", NULL, 400, &r), CURLE_OPERATION_TIMEDOUT);
	ck_assert_int_eq(r.status, 0);
	ck_assert_msg(r.elapsed_ms >= 390, "elapsed %.1f", r.elapsed_ms);
	http_resp_free(&r);
	/* The mock notices the client went away and closes its side. */
	ck_assert_int_eq(stat_wait("h", "inflight", 0, 2000), 0);
	ck_assert_int_eq(stat_num("h", "aborted"), 1);

	fd = raw_chat("h");
	ck_assert_int_eq(stat_wait("h", "requests", 2, 2000), 2);
	usleep(200 * 1000);
	ck_assert_int_eq(stat_num("h", "inflight"), 1);
	ck_assert_int_eq(stat_num("h", "completed"), 0);
	close(fd);
	ck_assert_int_eq(stat_wait("h", "inflight", 0, 2000), 0);
	ck_assert_int_eq(stat_num("h", "aborted"), 2);
}
END_TEST

START_TEST(test_reset)
{
	struct http_resp r;

	ck_assert_int_eq(mock_set(&mock, "r", "{\"reset\":true}"), 0);
	ck_assert_int_eq(chat("r", NULL, 5000, &r), CURLE_GOT_NOTHING);
	ck_assert_int_eq(r.status, 0);
	ck_assert_int_eq(r.len, 0);
	http_resp_free(&r);

	ck_assert_int_eq(mock_set(&mock, "r", "{\"reset_after_bytes\":10}"), 0);
	ck_assert_int_eq(chat("r", NULL, 5000, &r), CURLE_PARTIAL_FILE);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(r.len, 10);
	ck_assert_int_eq(memcmp(r.body, "{\"id\":\"moc", 10), 0);
	http_resp_free(&r);
	ck_assert_int_eq(stat_num("r", "requests"), 2);
	ck_assert_int_eq(stat_wait("r", "aborted", 2, 2000), 2);
}
END_TEST

START_TEST(test_drip)
{
	struct http_resp r;

	ck_assert_int_eq(mock_set(&mock, "dr", "{\"drip_ms\":20,\"body\":\"0123456789\"}"), 0);
	ck_assert_int_eq(chat("dr", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "0123456789");
	ck_assert_msg(r.elapsed_ms >= 170 && r.elapsed_ms < 1500, "elapsed %.1f ms", r.elapsed_ms);
	http_resp_free(&r);

	/* A drip that outlasts the client's patience. */
	ck_assert_int_eq(mock_set(&mock, "dr", "{\"drip_ms\":50}"), 0);
	ck_assert_int_eq(chat("dr", NULL, 300, &r), CURLE_OPERATION_TIMEDOUT);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(r.len >= 3 && r.len <= 8, "got %zu bytes", r.len);
	http_resp_free(&r);
	ck_assert_int_eq(stat_wait("dr", "inflight", 0, 2000), 0);
}
END_TEST

START_TEST(test_truncate)
{
	struct http_resp r;
	char *cl;
	long n;

	ck_assert_int_eq(mock_set(&mock, "t", "{\"truncate\":true}"), 0);
	ck_assert_int_eq(chat("t", NULL, 5000, &r), CURLE_PARTIAL_FILE);
	ck_assert_int_eq(r.status, 200);
	cl = http_resp_header(&r, "Content-Length");
	ck_assert_ptr_nonnull(cl);
	n = strtol(cl, NULL, 10);
	ck_assert_int_gt(n, 100);
	ck_assert_int_eq(r.len, (size_t)n / 2);
	free(cl);
	http_resp_free(&r);
}
END_TEST

START_TEST(test_script)
{
	static const long want[] = {500, 502, 200, 200};
	struct http_resp r;
	size_t i;

	ck_assert_int_eq(mock_set(&mock, "sc",
				  "{\"preset\":\"prose\",\"script\":[{\"status\":500},"
				  "{\"status\":502,\"retry_after\":1}]}"),
			 0);
	ck_assert_int_eq(stat_num("sc", "script_left"), 2);
	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		ck_assert_int_eq(chat("sc", NULL, 5000, &r), 0);
		ck_assert_int_eq(r.status, want[i]);
		if (want[i] == 200)
			ck_assert_ptr_nonnull(strstr(r.body, "Hope this helps"));
		http_resp_free(&r);
	}
	ck_assert_int_eq(stat_num("sc", "script_left"), 0);
	ck_assert_int_eq(stat_num("sc", "requests"), 4);
}
END_TEST

START_TEST(test_body_bytes)
{
	struct http_resp r;
	char *c;
	cJSON *j;

	ck_assert_int_eq(mock_set(&mock, "big", "{\"body_bytes\":5000000}"), 0);
	ck_assert_int_eq(chat("big", NULL, 20000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(r.len, 5000000);
	c = completion_content(&r);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_gt(strlen(c), 4000000);
	j = cJSON_Parse(c);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "intent")->valuestring, "refund");
	cJSON_Delete(j);
	free(c);
	http_resp_free(&r);
}
END_TEST

/* A streaming client that notes when each "data:" event arrives. */
struct sse {
	char buf[16384];
	size_t len;
	int64_t start;
	int64_t at[32];
	int nevents;
};

static size_t
sse_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct sse *s = arg;
	size_t n = size * nmemb, i;
	int64_t now = harness_now_ms();

	if (n > sizeof s->buf - 1 - s->len)
		n = 0;
	memcpy(s->buf + s->len, p, n);
	for (i = s->len + 1; i <= s->len + n; i++) {
		if (i >= 5 && memcmp(s->buf + i - 5, "data:", 5) == 0 &&
		    (i == 5 || s->buf[i - 6] == '\n') && s->nevents < 32)
			s->at[s->nevents++] = now - s->start;
	}
	s->len += n;
	s->buf[s->len] = '\0';
	return n;
}

START_TEST(test_stream)
{
	struct curl_slist *h = NULL;
	struct sse s;
	char *url, *line, *nl, all[1024] = "";
	const cJSON *d, *c;
	cJSON *j;
	CURL *e;
	long status = 0;
	int nchunks = 0, done = 0;

	ck_assert_int_eq(
		mock_set(&mock, "st", "{\"stream_first_delay_ms\":200,\"stream_chunk_ms\":100}"),
		0);
	memset(&s, 0, sizeof s);
	url = mock_url(&mock, "/b/st/v1/chat/completions");
	e = curl_easy_init();
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, "{\"model\":\"m\",\"stream\":true}");
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sse_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	s.start = harness_now_ms();
	ck_assert_int_eq(curl_easy_perform(e), CURLE_OK);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	ck_assert_int_eq(status, 200);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	free(url);

	/* 4 content events, the finish event and [DONE]. */
	ck_assert_int_eq(s.nevents, 6);
	ck_assert_msg(s.at[0] >= 190, "first event at %lld ms", (long long)s.at[0]);
	ck_assert_msg(s.at[3] - s.at[0] >= 250, "events spread %lld ms",
		      (long long)(s.at[3] - s.at[0]));
	ck_assert_msg(s.at[1] - s.at[0] >= 80, "gap %lld ms", (long long)(s.at[1] - s.at[0]));
	for (line = s.buf; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		ck_assert_ptr_nonnull(nl);
		*nl = '\0';
		if (*line == '\0')
			continue;
		ck_assert_int_eq(strncmp(line, "data: ", 6), 0);
		ck_assert_int_eq(done, 0);
		if (strcmp(line + 6, "[DONE]") == 0) {
			done = 1;
			continue;
		}
		j = cJSON_Parse(line + 6);
		ck_assert_ptr_nonnull(j);
		ck_assert_str_eq(cJSON_GetObjectItem(j, "object")->valuestring,
				 "chat.completion.chunk");
		d = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0),
					"delta");
		c = cJSON_GetObjectItem(d, "content");
		if (cJSON_IsString(c)) {
			strncat(all, c->valuestring, sizeof all - strlen(all) - 1);
			nchunks++;
		}
		cJSON_Delete(j);
	}
	ck_assert_int_eq(done, 1);
	ck_assert_int_eq(nchunks, 4);
	ck_assert_str_eq(all, DEFAULT_CONTENT);
}
END_TEST

START_TEST(test_stats_concurrency)
{
	const char *urls[20], *bodies[20];
	static const char *const hdrs[] = {"X-Test: One", NULL};
	struct http_resp r[20];
	const cJSON *be, *last, *arr;
	cJSON *s;
	int64_t t0;
	char *url;
	int i;

	ck_assert_int_eq(mock_set(&mock, "c", "{\"delay_ms\":500}"), 0);
	url = mock_url(&mock, "/b/c/v1/chat/completions");
	for (i = 0; i < 20; i++) {
		urls[i] = url;
		bodies[i] = CHAT_BODY;
	}
	t0 = harness_now_ms();
	ck_assert_int_eq(http_do_many(20, "POST", urls, bodies, hdrs, 5000, r), 0);
	ck_assert_msg(harness_now_ms() - t0 < 1500,
		      "20 delayed requests "
		      "took %lld ms",
		      (long long)(harness_now_ms() - t0));
	for (i = 0; i < 20; i++) {
		ck_assert_int_eq(r[i].status, 200);
		ck_assert_msg(r[i].elapsed_ms >= 490, "elapsed %.1f", r[i].elapsed_ms);
		http_resp_free(&r[i]);
	}
	free(url);
	ck_assert_int_eq(stat_wait("c", "completed", 20, 2000), 20);

	s = mock_stats(&mock);
	be = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "backends"), "c");
	ck_assert_int_eq(cJSON_GetObjectItem(be, "requests")->valueint, 20);
	ck_assert_int_eq(cJSON_GetObjectItem(be, "max_inflight")->valueint, 20);
	ck_assert_int_eq(cJSON_GetObjectItem(be, "inflight")->valueint, 0);
	arr = cJSON_GetObjectItem(be, "arrivals_ms");
	ck_assert_int_eq(cJSON_GetArraySize(arr), 20);
	ck_assert(cJSON_GetArrayItem(arr, 0)->valuedouble <=
		  cJSON_GetArrayItem(arr, 19)->valuedouble);
	last = cJSON_GetObjectItem(be, "last_request");
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(last, "headers"), "x-test")->valuestring,
		"One");
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(last, "body"), "model")->valuestring,
		"gpt-test");
	cJSON_Delete(s);
}
END_TEST

START_TEST(test_many_hanging)
{
	enum { N = 2000 };
	const char **urls, **bodies;
	struct http_resp *r;
	int64_t t0;
	char *url;
	int i;

	ck_assert_int_eq(mock_set(&mock, "many", "{\"delay_ms\":1500}"), 0);
	url = mock_url(&mock, "/b/many/v1/chat/completions");
	urls = calloc(N, sizeof *urls);
	bodies = calloc(N, sizeof *bodies);
	r = calloc(N, sizeof *r);
	ck_assert(urls != NULL && bodies != NULL && r != NULL);
	for (i = 0; i < N; i++) {
		urls[i] = url;
		bodies[i] = CHAT_BODY;
	}
	t0 = harness_now_ms();
	ck_assert_int_eq(http_do_many(N, "POST", urls, bodies, NULL, 20000, r), 0);
	/* Generous: first-touch page faults dominate on small CI VMs. */
	ck_assert_msg(harness_now_ms() - t0 < 25000, "took %lld ms",
		      (long long)(harness_now_ms() - t0));
	for (i = 0; i < N; i++) {
		ck_assert_int_eq(r[i].status, 200);
		http_resp_free(&r[i]);
	}
	ck_assert_int_eq(stat_num("many", "max_inflight"), N);
	free(r);
	free(bodies);
	free(urls);
	free(url);
}
END_TEST

START_TEST(test_isolation)
{
	struct http_resp r;

	ck_assert_int_eq(mock_set(&mock, "a", "{\"status\":500}"), 0);
	ck_assert_int_eq(chat("a", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 500);
	http_resp_free(&r);
	ck_assert_int_eq(chat("b", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	ck_assert_int_eq(chat(NULL, NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	ck_assert_int_eq(mock_requests(&mock, "a"), 1);
	ck_assert_int_eq(mock_requests(&mock, "b"), 1);
	ck_assert_int_eq(mock_requests(&mock, "default"), 1);
	ck_assert_int_eq(mock_requests(&mock, "nobody"), 0);
}
END_TEST

START_TEST(test_bad_control)
{
	struct http_resp r;
	char *url, *big;

	ck_assert_int_eq(mock_set(&mock, "x", "{\"delay_ms\":"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "x", "{\"delay_ms\":\"5\"}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "x", "{\"delay\":5}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "x", "{\"preset\":\"nope\"}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "x", "{\"status\":99}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "x", "[1]"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "x", "{\"script\":[{\"script\":[]}]}"), -EINVAL);

	url = mock_url(&mock, "/_mock/backends/x");
	ck_assert_int_eq(http_do("PUT", url, "nope", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 400);
	ck_assert_ptr_nonnull(strstr(r.body, "not valid JSON"));
	http_resp_free(&r);
	free(url);

	big = malloc(5 * 1024 * 1024 + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', 5 * 1024 * 1024);
	big[0] = '{';
	big[5 * 1024 * 1024 - 1] = '}';
	big[5 * 1024 * 1024] = '\0';
	ck_assert_int_eq(chat("x", big, 10000, &r), 0);
	ck_assert_int_eq(r.status, 413);
	http_resp_free(&r);
	free(big);

	ck_assert_int_eq(chat("x", "not json", 5000, &r), 0);
	ck_assert_int_eq(r.status, 400);
	http_resp_free(&r);
}
END_TEST

START_TEST(test_reset_all)
{
	struct http_resp r;
	char *c;

	ck_assert_int_eq(mock_set(&mock, "z", "{\"status\":500,\"script\":[{\"status\":502}]}"), 0);
	ck_assert_int_eq(chat("z", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 502);
	http_resp_free(&r);
	ck_assert_int_eq(mock_requests(&mock, "z"), 1);
	ck_assert_int_eq(mock_reset(&mock), 0);
	ck_assert_int_eq(mock_requests(&mock, "z"), 0);
	ck_assert_int_eq(stat_num("z", "max_inflight"), 0);
	ck_assert_int_eq(chat("z", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	c = completion_content(&r);
	ck_assert_str_eq(c, DEFAULT_CONTENT);
	free(c);
	http_resp_free(&r);
	ck_assert_int_eq(mock_requests(&mock, "z"), 1);
}
END_TEST

START_TEST(test_shutdown)
{
	int fd1, fd2, status;
	int64_t t0;

	ck_assert_int_eq(mock_set(&mock, "h", "{\"hang\":true}"), 0);
	ck_assert_int_eq(mock_set(&mock, "d", "{\"drip_ms\":1000}"), 0);
	fd1 = raw_chat("h");
	fd2 = raw_chat("d");
	ck_assert_int_eq(stat_wait("h", "inflight", 1, 2000), 1);
	ck_assert_int_eq(stat_wait("d", "inflight", 1, 2000), 1);
	t0 = harness_now_ms();
	status = proc_kill(&mock, SIGTERM);
	ck_assert_int_eq(status, 0);
	ck_assert_msg(harness_now_ms() - t0 < 2000, "stop took %lld ms",
		      (long long)(harness_now_ms() - t0));
	close(fd1);
	close(fd2);
}
END_TEST

/* n concurrent CHAT_BODY requests to backend; every one must answer status. */
static struct http_resp *
chat_many(const char *backend, int n, long status)
{
	const char **urls, **bodies;
	struct http_resp *r;
	char path[128], *url;
	int i;

	snprintf(path, sizeof path, "/b/%s/v1/chat/completions", backend);
	url = mock_url(&mock, path);
	urls = calloc((size_t)n, sizeof *urls);
	bodies = calloc((size_t)n, sizeof *bodies);
	r = calloc((size_t)n, sizeof *r);
	ck_assert(urls != NULL && bodies != NULL && r != NULL);
	for (i = 0; i < n; i++) {
		urls[i] = url;
		bodies[i] = CHAT_BODY;
	}
	ck_assert_int_eq(http_do_many(n, "POST", urls, bodies, NULL, 20000, r), 0);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(r[i].status, status);
	free(bodies);
	free(urls);
	free(url);
	return r;
}

static void
chat_many_free(struct http_resp *r, int n)
{
	int i;

	for (i = 0; i < n; i++)
		http_resp_free(&r[i]);
	free(r);
}

/* A streamed chat on backend: ms from the request to its first "data:" event. */
static int64_t
stream_first_event_ms(const char *backend)
{
	struct curl_slist *h = NULL;
	char path[128], *url;
	struct sse s;
	long status = 0;
	CURL *e;

	snprintf(path, sizeof path, "/b/%s/v1/chat/completions", backend);
	memset(&s, 0, sizeof s);
	url = mock_url(&mock, path);
	e = curl_easy_init();
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, "{\"model\":\"m\",\"stream\":true}");
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sse_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	s.start = harness_now_ms();
	ck_assert_int_eq(curl_easy_perform(e), CURLE_OK);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_int_ge(s.nevents, 1);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	free(url);
	return s.at[0];
}

START_TEST(test_tail)
{
	enum { N = 200 };
	struct http_resp *r, one;
	int i, slow = 0;

	/* 20 % of 200 requests wait 600 ms, the others 20 ms. */
	ck_assert_int_eq(
		mock_set(&mock, "tl", "{\"delay_ms\":20,\"tail_pct\":20,\"tail_delay_ms\":600}"),
		0);
	r = chat_many("tl", N, 200);
	for (i = 0; i < N; i++) {
		if (r[i].elapsed_ms >= 590)
			slow++;
		else
			ck_assert_msg(r[i].elapsed_ms < 450, "fast answer took %.1f ms",
				      r[i].elapsed_ms);
	}
	chat_many_free(r, N);
	/* Binomial(200, 0.2): mean 40, sd 5.7; 18..62 is beyond 3.8 sd. */
	ck_assert_msg(slow >= 18 && slow <= 62, "%d of %d in the tail", slow, N);
	ck_assert_int_eq(stat_num("tl", "tail_delayed"), slow);

	/* 0 %: nobody; 100 %: everybody, the stream's first byte included. */
	ck_assert_int_eq(mock_set(&mock, "tl", "{\"tail_pct\":0,\"tail_delay_ms\":600}"), 0);
	r = chat_many("tl", 20, 200);
	for (i = 0; i < 20; i++)
		ck_assert_msg(r[i].elapsed_ms < 450, "elapsed %.1f ms", r[i].elapsed_ms);
	chat_many_free(r, 20);
	ck_assert_int_eq(mock_set(&mock, "tl",
				  "{\"delay_min_ms\":10,\"delay_max_ms\":20,\"tail_pct\":100,"
				  "\"tail_delay_ms\":400}"),
			 0);
	ck_assert_int_eq(chat("tl", NULL, 5000, &one), 0);
	ck_assert_int_eq(one.status, 200);
	ck_assert_msg(one.elapsed_ms >= 390, "elapsed %.1f ms", one.elapsed_ms);
	http_resp_free(&one);
	i = (int)stream_first_event_ms("tl");
	ck_assert_msg(i >= 390 && i < 1500, "first event at %d ms", i);

	ck_assert_int_eq(mock_set(&mock, "tl", "{\"tail_pct\":5}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "tl", "{\"tail_delay_ms\":5}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "tl", "{\"tail_pct\":101,\"tail_delay_ms\":5}"), -EINVAL);
}
END_TEST

static double
max_elapsed(const struct http_resp *r, int n)
{
	double m = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (r[i].elapsed_ms > m)
			m = r[i].elapsed_ms;
	}
	return m;
}

START_TEST(test_knee)
{
	struct http_resp *r, one;
	double m;

	/* Below the knee: the base delay. */
	ck_assert_int_eq(mock_set(&mock, "kn", "{\"delay_ms\":100,\"knee\":4}"), 0);
	r = chat_many("kn", 4, 200);
	m = max_elapsed(r, 4);
	ck_assert_msg(m >= 95 && m < 250, "4 at knee 4: max %.1f ms", m);
	chat_many_free(r, 4);
	ck_assert_int_eq(stat_num("kn", "knee_delayed"), 0);

	/* 16 in flight: the last one waits 100 x 16/4 = 400 ms. */
	r = chat_many("kn", 16, 200);
	m = max_elapsed(r, 16);
	ck_assert_msg(m >= 350 && m < 700, "16 at knee 4: max %.1f ms", m);
	chat_many_free(r, 16);
	ck_assert_int_ge(stat_num("kn", "knee_delayed"), 8);

	/* Alone again: the base delay. */
	ck_assert_int_eq(chat("kn", NULL, 5000, &one), 0);
	ck_assert_msg(one.elapsed_ms >= 95 && one.elapsed_ms < 250, "alone: %.1f ms",
		      one.elapsed_ms);
	http_resp_free(&one);

	/* knee_exp 2: 8 in flight at knee 4 wait up to 100 x (8/4)^2 = 400 ms. */
	ck_assert_int_eq(mock_set(&mock, "kn", "{\"delay_ms\":100,\"knee\":4,\"knee_exp\":2}"), 0);
	r = chat_many("kn", 8, 200);
	m = max_elapsed(r, 8);
	ck_assert_msg(m >= 350 && m < 700, "8 at knee 4, exp 2: max %.1f ms", m);
	chat_many_free(r, 8);

	ck_assert_int_eq(mock_set(&mock, "kn", "{\"knee\":-1}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "kn", "{\"knee\":4,\"knee_exp\":9}"), -EINVAL);
}
END_TEST

/* A response header as a long, or -1. */
static long
header_num(const struct http_resp *r, const char *name)
{
	char *v = http_resp_header(r, name);
	long n = -1;

	if (v != NULL)
		n = strtol(v, NULL, 10);
	free(v);
	return n;
}

static int
header_has(const struct http_resp *r, const char *name)
{
	char *v = http_resp_header(r, name);
	int has = v != NULL;

	free(v);
	return has;
}

START_TEST(test_ratelimit)
{
	struct http_resp r;
	long ms, tok, k;
	char *v;
	int i;

	/* 3 requests per 2.5 s window; the 4th is refused at once despite delay_ms. */
	ck_assert_int_eq(mock_set(&mock, "rl",
				  "{\"delay_ms\":400,\"ratelimit_requests\":3,"
				  "\"ratelimit_reset_ms\":2500}"),
			 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(chat("rl", NULL, 5000, &r), 0);
		ck_assert_int_eq(r.status, 200);
		ck_assert_int_eq(header_num(&r, "x-ratelimit-limit-requests"), 3);
		ck_assert_int_eq(header_num(&r, "x-ratelimit-remaining-requests"), 2 - i);
		v = http_resp_header(&r, "x-ratelimit-reset-requests");
		ck_assert_ptr_nonnull(v);
		/* 2.5 s minus what passed, at the answer: "2.1s", "1.698s", ... */
		ck_assert_msg(strlen(v) > 1 && v[strlen(v) - 1] == 's' && v[strlen(v) - 2] >= '0' &&
				      v[strlen(v) - 2] <= '9' && strtod(v, NULL) > 0.5 &&
				      strtod(v, NULL) < 2.5,
			      "reset %s", v);
		free(v);
		ck_assert(!header_has(&r, "x-ratelimit-limit-tokens"));
		http_resp_free(&r);
	}
	ck_assert_int_eq(chat("rl", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 429);
	ck_assert_msg(r.elapsed_ms < 300, "429 took %.1f ms", r.elapsed_ms);
	ck_assert_ptr_nonnull(strstr(r.body, "rate_limit_exceeded"));
	ck_assert_int_eq(header_num(&r, "x-ratelimit-remaining-requests"), 0);
	ms = header_num(&r, "retry-after-ms");
	ck_assert_msg(ms >= 1 && ms <= 1400, "retry-after-ms %ld", ms);
	ck_assert_int_eq(header_num(&r, "retry-after"), (ms + 999) / 1000);
	http_resp_free(&r);
	ck_assert_int_eq(stat_num("rl", "requests"), 4);
	ck_assert_int_eq(stat_num("rl", "ratelimited"), 1);
	ck_assert_int_eq(stat_num("rl", "completed"), 4);

	/* After the reset a new window: 3 more. */
	usleep((useconds_t)(ms + 30) * 1000);
	ck_assert_int_eq(chat("rl", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(header_num(&r, "x-ratelimit-remaining-requests"), 2);
	http_resp_free(&r);

	/* Setting the behaviour opens a fresh window too. */
	ck_assert_int_eq(
		mock_set(&mock, "rl", "{\"ratelimit_requests\":1,\"ratelimit_reset_ms\":360000}"),
		0);
	ck_assert_int_eq(chat("rl", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(header_num(&r, "x-ratelimit-remaining-requests"), 0);
	v = http_resp_header(&r, "x-ratelimit-reset-requests");
	ck_assert_msg(v != NULL && (strcmp(v, "6m0s") == 0 || strncmp(v, "5m59.9", 6) == 0),
		      "reset %s", v);
	free(v);
	http_resp_free(&r);
	ck_assert_int_eq(chat("rl", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 429);
	ck_assert_int_eq(header_num(&r, "retry-after"), 360);
	http_resp_free(&r);

	/* Tokens: CHAT_BODY costs 6 prompt + the answer's completion tokens. */
	tok = 6 + ((long)strlen(DEFAULT_CONTENT) + 3) / 4;
	ck_assert_int_eq(
		mock_set(&mock, "rt", "{\"ratelimit_tokens\":100,\"ratelimit_reset_ms\":60000}"),
		0);
	/* 100 / tok answers fit in the window. */
	for (k = 1; k <= 100 / tok; k++) {
		ck_assert_int_eq(chat("rt", NULL, 5000, &r), 0);
		ck_assert_int_eq(r.status, 200);
		ck_assert_int_eq(header_num(&r, "x-ratelimit-limit-tokens"), 100);
		ck_assert_int_eq(header_num(&r, "x-ratelimit-remaining-tokens"), 100 - k * tok);
		ck_assert(header_has(&r, "x-ratelimit-reset-tokens"));
		ck_assert(!header_has(&r, "x-ratelimit-limit-requests"));
		http_resp_free(&r);
	}
	ck_assert_int_eq(chat("rt", NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 429);
	ck_assert_int_ge(header_num(&r, "retry-after-ms"), 59000);
	http_resp_free(&r);

	ck_assert_int_eq(mock_set(&mock, "rl", "{\"ratelimit_requests\":3}"), -EINVAL);
	ck_assert_int_eq(mock_set(&mock, "rl", "{\"ratelimit_reset_ms\":1000}"), -EINVAL);
	ck_assert_int_eq(mock_reset(&mock), 0);
	ck_assert_int_eq(stat_num("rl", "ratelimited"), 0);
}
END_TEST

static Suite *
mockllm_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"default_answer", test_default_answer},
		{"presets", test_presets},
		{"delay", test_delay},
		{"status", test_status},
		{"hang", test_hang},
		{"reset", test_reset},
		{"drip", test_drip},
		{"truncate", test_truncate},
		{"script", test_script},
		{"body_bytes", test_body_bytes},
		{"stream", test_stream},
		{"stats_concurrency", test_stats_concurrency},
		{"many_hanging", test_many_hanging},
		{"isolation", test_isolation},
		{"bad_control", test_bad_control},
		{"reset_all", test_reset_all},
		{"shutdown", test_shutdown},
		{"tail", test_tail},
		{"knee", test_knee},
		{"ratelimit", test_ratelimit},
	};
	Suite *s = suite_create("mockllm");
	TCase *tc;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_checked_fixture(tc, mock_setup, mock_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sr = srunner_create(mockllm_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
