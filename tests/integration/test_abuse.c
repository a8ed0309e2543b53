/*
 * Integration: hostile callers at the HTTP front (issue "Hostile
 * callers", F2 F3 F10 F11 F12 F13) against fuseboxd + fusebox-mockllm on
 * 127.0.0.1: request smuggling framings, HTTP/1.1 without Host, too many
 * headers, the media type, Host and Origin checks, route and auth before
 * the body, the daemon-wide body cap, the connection caps, the header
 * timeout and a reload that leaves no control-plane token. Raw
 * sockets where curl would not send the request; every loop is bounded.
 */
#include <check.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itd.h"

#define OP "op-token"

static struct itd T;

static void
start(const char *extra)
{
	char *cfg = NULL;
	int r;

	if (asprintf(&cfg,
		     "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
		     "%s%s"
		     "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
		     "completions\",\"model\":\"m\"}],"
		     "\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,"
		     "\"targets\":[{\"backend\":\"primary\"}]}]}",
		     extra, extra[0] ? "," : "") < 0)
		abort();
	r = itd_start(&T, cfg);
	free(cfg);
	ck_assert_int_eq(r, 0);
}

static void
teardown(void)
{
	itd_stop(&T);
}

static int
raw_connect(void)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)T.d.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	return fd;
}

static void
raw_send(int fd, const char *s)
{
	size_t n = strlen(s);

	ck_assert_int_eq(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/*
 * Read into buf until the peer closes or timeout_ms pass. Returns the
 * bytes read; *eof says whether the peer closed.
 */
static size_t
raw_read(int fd, char *buf, size_t cap, int timeout_ms, int *eof)
{
	int64_t end = harness_now_ms() + timeout_ms;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t len = 0;
	ssize_t n;

	*eof = 0;
	while (len + 1 < cap) {
		int64_t left = end - harness_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n <= 0) {
			*eof = 1;
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	return len;
}

/* The number of status lines in an exchange. */
static int
responses(const char *s)
{
	int n = 0;

	while ((s = strstr(s, "HTTP/1.1 ")) != NULL) {
		n++;
		s++;
	}
	return n;
}

/* Send req on a fresh connection, read (up to 3 s) and close. */
static void
exchange(const char *req, char *out, size_t cap, int *eof)
{
	int fd = raw_connect();

	raw_send(fd, req);
	raw_read(fd, out, cap, 3000, eof);
	close(fd);
}

/* ---- F10: framing ---- */

START_TEST(smuggling_cl_and_te_refused_and_closed)
{
	char out[8192];
	int eof;

	start("");
	exchange("POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 5\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n"
		 "0\r\n\r\n"
		 "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		 out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 400", 12) == 0, "got: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "Content-Length and Transfer-Encoding"));
	ck_assert_msg(responses(out) == 1, "the smuggled request was answered: %s", out);
	ck_assert_msg(eof, "the connection stayed open");
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
}
END_TEST

START_TEST(differing_content_lengths_refused)
{
	char out[8192];
	int eof;

	start("");
	exchange("POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 17\r\n"
		 "Content-Length: 40\r\n\r\n"
		 "{\"input\":\"hi xy\"}",
		 out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 400", 12) == 0, "got: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "Content-Length"));
	ck_assert(eof);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	/* Equal repeated values are one length (RFC 9112 6.3). */
	exchange("POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 17\r\n"
		 "Content-Length: 17\r\nConnection: close\r\n\r\n"
		 "{\"input\":\"hi xy\"}",
		 out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 200", 12) == 0, "got: %s", out);
}
END_TEST

START_TEST(http11_needs_one_host)
{
	char out[8192];
	int eof;

	start("");
	exchange("GET /healthz HTTP/1.1\r\n\r\n", out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 400", 12) == 0, "got: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "without Host"));
	ck_assert(eof);
	exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n", out,
		 sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 400", 12) == 0, "got: %s", out);
	/* HTTP/1.0 has no Host requirement. */
	exchange("GET /healthz HTTP/1.0\r\n\r\n", out, sizeof out, &eof);
	ck_assert_msg(strstr(out, " 200 ") != NULL, "got: %s", out);
}
END_TEST

START_TEST(accepted_requests_keep_alive)
{
	static const char req[] = "POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				  "Content-Type: application/json\r\nContent-Length: 14\r\n\r\n"
				  "{\"input\":\"hi\"}";
	char out[16384];
	int fd, eof, i;
	size_t n = 0;

	start("");
	out[0] = '\0';
	fd = raw_connect();
	raw_send(fd, req);
	raw_send(fd, req);
	for (i = 0; i < 30 && responses(out) < 2; i++) {
		n += raw_read(fd, out + n, sizeof out - n, 100, &eof);
		if (eof)
			break;
	}
	close(fd);
	ck_assert_msg(responses(out) == 2, "got: %s", out);
	ck_assert_msg(strncmp(out, "HTTP/1.1 200", 12) == 0, "got: %s", out);
	ck_assert_ptr_null(strstr(out, "Connection: close"));
}
END_TEST

/* ---- F12: the 65th header ---- */

START_TEST(too_many_headers_431)
{
	const char *hdrs[72];
	char names[70][16];
	struct http_resp r;
	cJSON *o;
	int i;

	start("");
	for (i = 0; i < 70; i++) {
		snprintf(names[i], sizeof names[i], "X-Pad-%d: v", i);
		hdrs[i] = names[i];
	}
	hdrs[70] = "Authorization: Bearer view-token"; /* late: read as missing before */
	hdrs[71] = NULL;
	{
		char url[128];

		snprintf(url, sizeof url, "%s/v1/state", T.base);
		ck_assert_int_eq(http_do("GET", url, NULL, hdrs, 5000, &r), 0);
	}
	ck_assert_int_eq(r.status, 431);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "code"), "too_many_headers");
	cJSON_Delete(o);
	http_resp_free(&r);
	/* 63 are fine (curl adds Host and Accept). */
	hdrs[60] = "Authorization: Bearer view-token";
	hdrs[61] = NULL;
	{
		char url[128];

		snprintf(url, sizeof url, "%s/v1/state", T.base);
		ck_assert_int_eq(http_do("GET", url, NULL, hdrs, 5000, &r), 0);
	}
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
}
END_TEST

/* ---- the header block the connection's pool holds (HTTP_CONN_POOL_BYTES) ---- */

static long
state_with_header_of(size_t value_len)
{
	char *h = malloc(value_len + 16), url[128];
	const char *hdrs[3] = {h, "Authorization: Bearer view-token", NULL};
	struct http_resp r;
	long st;

	ck_assert_ptr_nonnull(h);
	memcpy(h, "X-Pad: ", 7);
	memset(h + 7, 'a', value_len);
	h[7 + value_len] = '\0';
	snprintf(url, sizeof url, "%s/v1/state", T.base);
	ck_assert_int_eq(http_do("GET", url, NULL, hdrs, 5000, &r), 0);
	st = r.status;
	http_resp_free(&r);
	free(h);
	return st;
}

START_TEST(large_header_block_accepted_larger_431)
{
	start("");
	/* ~13 KB of headers fit the 14 KiB pool; 15 KB get MHD's 431, not a hang */
	ck_assert_int_eq(state_with_header_of(13000), 200);
	ck_assert_int_eq(state_with_header_of(15000), 431);
	/* and the daemon still answers */
	ck_assert_int_eq(state_with_header_of(100), 200);
}
END_TEST

/* ---- F11: media type, Host, Origin ---- */

static long
call_with(const char *const *hdrs, const char *body)
{
	char url[128];
	struct http_resp r;
	long st;

	snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
	ck_assert_int_eq(http_do("POST", url, body, hdrs, 5000, &r), 0);
	st = r.status;
	http_resp_free(&r);
	return st;
}

START_TEST(json_media_type_required)
{
	const char *plain[] = {"Content-Type: text/plain", NULL};
	const char *form[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
	const char *charset[] = {"Content-Type: Application/JSON; charset=utf-8", NULL};

	start("");
	ck_assert_int_eq(call_with(plain, "{\"input\":\"hi\"}"), 415);
	ck_assert_int_eq(call_with(form, "{\"input\":\"hi\"}"), 415);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	ck_assert_int_eq(call_with(charset, "{\"input\":\"hi\"}"), 200);
	ck_assert_int_eq(call_with(NULL, "{\"input\":\"hi\"}"), 200);
}
END_TEST

START_TEST(host_and_origin_checked)
{
	char host_ok[64], host_named[64];
	const char *evil[] = {"Host: evil.example", NULL};
	const char *evil_port[] = {NULL, NULL};
	const char *local[] = {NULL, NULL};
	const char *named[] = {NULL, NULL};
	const char *origin_bad[] = {"Origin: http://evil.example", NULL};
	const char *origin_null[] = {"Origin: null", NULL};
	const char *origin_ok[] = {"Origin: http://app.example", NULL};
	char evil_host[64];

	start("\"http\":{\"allowed_hosts\":[\"Fusebox.Internal\"],"
	      "\"allowed_origins\":[\"http://app.example\"]}");
	snprintf(evil_host, sizeof evil_host, "Host: rebind.example:%d", T.d.port);
	evil_port[0] = evil_host;
	snprintf(host_ok, sizeof host_ok, "Host: localhost:%d", T.d.port);
	local[0] = host_ok;
	snprintf(host_named, sizeof host_named, "Host: fusebox.internal:%d", T.d.port);
	named[0] = host_named;
	ck_assert_int_eq(call_with(evil, "{\"input\":\"hi\"}"), 403);
	ck_assert_int_eq(call_with(evil_port, "{\"input\":\"hi\"}"), 403);
	ck_assert_int_eq(call_with(origin_bad, "{\"input\":\"hi\"}"), 403);
	ck_assert_int_eq(call_with(origin_null, "{\"input\":\"hi\"}"), 403);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 0);
	ck_assert_int_eq(call_with(local, "{\"input\":\"hi\"}"), 200);
	ck_assert_int_eq(call_with(named, "{\"input\":\"hi\"}"), 200);
	ck_assert_int_eq(call_with(origin_ok, "{\"input\":\"hi\"}"), 200);
	cJSON_Delete(itd_expect(&T, "GET", "/healthz", NULL, NULL, 200));
}
END_TEST

/* ---- F2: route and auth on the headers; the daemon-wide body cap ---- */

START_TEST(auth_and_route_before_the_body)
{
	char out[4096];
	int64_t t0;
	int eof;

	start("");
	t0 = harness_now_ms();
	/* A body announced and never sent: the answer must not wait for it. */
	exchange("POST /v1/reload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 500000\r\n\r\n",
		 out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 401", 12) == 0, "got: %s", out);
	ck_assert(eof);
	exchange("POST /v1/nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 500000\r\n\r\n",
		 out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 404", 12) == 0, "got: %s", out);
	ck_assert_msg(harness_now_ms() - t0 < 2000, "answers waited for the bodies");
}
END_TEST

START_TEST(buffered_bodies_capped_503)
{
	char out[4096], pad[1001];
	int a, eof;

	start("\"max_buffered_body_bytes\":100000");
	memset(pad, ' ', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	a = raw_connect();
	raw_send(a, "POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		    "Content-Type: application/json\r\nContent-Length: 80000\r\n\r\n");
	raw_send(a, pad); /* half-sent: 1000 of 80000 bytes */
	usleep(100 * 1000);
	exchange("POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 80000\r\n\r\n",
		 out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 503", 12) == 0, "got: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "Retry-After: 1"));
	ck_assert_ptr_nonnull(strstr(out, "\"overloaded\""));
	ck_assert_double_eq(
		itd_metric(&T, "fusebox_connections_refused_total{reason=\"body_memory\"}"), 1);
	ck_assert_double_eq(itd_metric(&T, "fusebox_buffered_body_bytes"), 80000);
	close(a);
	/* The half-sent body's share comes back when its connection goes. */
	for (eof = 0; eof < 50 && itd_metric(&T, "fusebox_buffered_body_bytes") != 0; eof++)
		usleep(50 * 1000);
	ck_assert_double_eq(itd_metric(&T, "fusebox_buffered_body_bytes"), 0);
	ck_assert_int_eq(call_with(NULL, "{\"input\":\"hi\"}"), 200);
}
END_TEST

/* Large half-sent bodies leave a quarter of the budget to small ones: the calls go on. */
START_TEST(small_bodies_keep_their_share)
{
	char out[4096], pad[1001];
	int a, eof;

	start("\"max_buffered_body_bytes\":100000");
	memset(pad, ' ', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	a = raw_connect();
	raw_send(a, "POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		    "Content-Type: application/json\r\nContent-Length: 70000\r\n\r\n");
	raw_send(a, pad);
	usleep(100 * 1000);
	/* 70000 + 20000 fits the 100000, but not the 75000 large bodies may use */
	exchange("POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 20000\r\n\r\n",
		 out, sizeof out, &eof);
	ck_assert_msg(strncmp(out, "HTTP/1.1 503", 12) == 0, "got: %s", out);
	/* a call's small body still gets in while the large one holds its share */
	ck_assert_int_eq(call_with(NULL, "{\"input\":\"hi\"}"), 200);
	ck_assert_double_eq(itd_metric(&T, "fusebox_buffered_body_bytes"), 70000);
	close(a);
}
END_TEST

/* ---- F3: per-address cap, header timeout ---- */

START_TEST(per_address_cap_answers_503)
{
	struct http_resp r;
	char *ra;
	int fds[4], i;

	start("\"max_connections_per_ip\":4");
	for (i = 0; i < 4; i++)
		fds[i] = raw_connect();
	usleep(200 * 1000);
	ck_assert_int_eq(itd_req(&T, "GET", "/healthz", NULL, NULL, 3000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(r.body, "too_many_connections"));
	ra = http_resp_header(&r, "Retry-After");
	ck_assert_ptr_nonnull(ra);
	free(ra);
	http_resp_free(&r);
	for (i = 0; i < 4; i++)
		close(fds[i]);
	/* The slots come back once the daemon sees the closes. */
	for (i = 0; i < 40; i++) {
		ck_assert_int_eq(itd_req(&T, "GET", "/healthz", NULL, NULL, 3000, &r), 0);
		if (r.status == 200)
			break;
		http_resp_free(&r);
		usleep(50 * 1000);
	}
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	ck_assert_double_ge(itd_metric(&T, "fusebox_connections_refused_total{reason=\"per_ip\"}"),
			    1);
	ck_assert_double_ge(itd_metric(&T, "fusebox_connections{state=\"active\"}"), 1);
}
END_TEST

/* max_inflight 1: the connection cap is 1 + 1024. */
#define CAP_CONNS 1025

START_TEST(connection_cap_answers_503_not_backlog)
{
	static int fds[CAP_CONNS];
	struct http_resp r;
	int64_t t0;
	int i;

	start("\"max_inflight\":1");
	for (i = 0; i < CAP_CONNS; i++)
		fds[i] = raw_connect();
	usleep(300 * 1000);
	t0 = harness_now_ms();
	ck_assert_int_eq(itd_req(&T, "GET", "/healthz", NULL, NULL, 3000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(r.body, "too_many_connections"));
	ck_assert_msg(harness_now_ms() - t0 < 1000, "the refusal waited in the backlog");
	http_resp_free(&r);
	for (i = 0; i < CAP_CONNS; i++)
		close(fds[i]);
	for (i = 0; i < 40; i++) {
		ck_assert_int_eq(itd_req(&T, "GET", "/healthz", NULL, NULL, 3000, &r), 0);
		if (r.status == 200)
			break;
		http_resp_free(&r);
		usleep(50 * 1000);
	}
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	ck_assert_double_ge(
		itd_metric(&T, "fusebox_connections_refused_total{reason=\"capacity\"}"), 1);
}
END_TEST

START_TEST(header_timeout_closes_slowloris)
{
	char out[4096];
	int64_t t0, took;
	int fd, i, eof = 0;
	size_t n = 0;

	start("\"http\":{\"header_timeout_s\":1}");
	out[0] = '\0';
	fd = raw_connect();
	t0 = harness_now_ms();
	raw_send(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
	usleep(200 * 1000);
	ck_assert_double_ge(itd_metric(&T, "fusebox_connections{state=\"reading\"}"), 1);
	/* One header byte every 200 ms: never idle, never done (bounded: 4 s). */
	for (i = 0; i < 20 && !eof; i++) {
		if (send(fd, "X", 1, MSG_NOSIGNAL) != 1)
			break;
		n += raw_read(fd, out + n, sizeof out - n, 200, &eof);
	}
	took = harness_now_ms() - t0;
	close(fd);
	ck_assert_msg(strncmp(out, "HTTP/1.1 408", 12) == 0, "got: %s", out);
	ck_assert_msg(took < 2500, "closed after %lld ms", (long long)took);
	ck_assert_double_eq(
		itd_metric(&T, "fusebox_connections_refused_total{reason=\"header_timeout\"}"), 1);
	/* The daemon let go of it too. */
	for (i = 0; i < 20 && itd_metric(&T, "fusebox_connections{state=\"reading\"}") != 0; i++)
		usleep(50 * 1000);
	ck_assert_double_eq(itd_metric(&T, "fusebox_connections{state=\"reading\"}"), 0);
	/* A prompt client is unaffected. */
	cJSON_Delete(itd_expect(&T, "GET", "/healthz", NULL, NULL, 200));
}
END_TEST

/* ---- F13: a reload that closes the control plane ---- */

START_TEST(reload_without_tokens_warns)
{
	char path[512];

	start("");
	snprintf(path, sizeof path, "%s/tokens", T.dir);
	ck_assert_int_eq(unlink(path), 0);
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='reload' AND detail LIKE "
				       "'NO CONTROL-PLANE TOKENS%'"),
			 1);
	itd_expect_error(&T, "GET", "/v1/state", NULL, OP, 401, "unauthorized", "token");
}
END_TEST

static Suite *
abuse_suite(void)
{
	Suite *s = suite_create("abuse");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)

	ADD(smuggling_cl_and_te_refused_and_closed);
	ADD(differing_content_lengths_refused);
	ADD(http11_needs_one_host);
	ADD(accepted_requests_keep_alive);
	ADD(too_many_headers_431);
	ADD(large_header_block_accepted_larger_431);
	ADD(json_media_type_required);
	ADD(host_and_origin_checked);
	ADD(auth_and_route_before_the_body);
	ADD(buffered_bodies_capped_503);
	ADD(small_bodies_keep_their_share);
	ADD(per_address_cap_answers_503);
	ADD(connection_cap_answers_503_not_backlog);
	ADD(header_timeout_closes_slowloris);
	ADD(reload_without_tokens_warns);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(abuse_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
