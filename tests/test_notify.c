/*
 * test_notify: the callbacks.allow check at connect time, against two
 * small HTTP listeners of this test on 127.0.0.1 and 127.0.0.2 (the same
 * port): an allowed address is delivered to, a URL that only becomes
 * 127.0.0.2 in curl's hands (one decimal number) is refused without a
 * connection and not retried, a name is judged by the address it
 * resolves to, and an instance without a list connects anywhere.
 */
#include <check.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"

static const char ok_answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/* A listening socket on ip:port (0: any); its port into *port. */
static int
listener(const char *ip, int port, int *out_port)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	ck_assert_int_eq(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*out_port = ntohs(a.sin_port);
	return fd;
}

/* Answer every request that arrives on fd within ms; how many. */
static int
serve(int fd, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	char buf[4096];
	int n = 0, c;

	while (poll(&p, 1, ms) > 0) {
		c = accept(fd, NULL, NULL);
		if (c < 0)
			break;
		if (read(c, buf, sizeof buf) > 0 && write(c, ok_answer, sizeof ok_answer - 1) > 0)
			n++;
		close(c);
	}
	return n;
}

static struct addr_rule
rule(const char *pattern)
{
	struct addr_rule r;
	const char *why;

	ck_assert_msg(addr_rule_parse(pattern, &r, &why) == 0, "%s: %s", pattern, why);
	return r;
}

START_TEST(checked_where_it_connects)
{
	struct notify *n = NULL;
	struct notify_stats s;
	struct addr_rule r;
	char pat[64], url[128];
	int pa, pb, a, b, got_a = 0, got_b = 0, i;

	a = listener("127.0.0.1", 0, &pa);
	b = listener("127.0.0.2", pa, &pb);
	ck_assert_int_eq(notify_new(16, &n), 0);
	snprintf(pat, sizeof pat, "127.0.0.1:%d", pa);
	r = rule(pat);
	notify_allow_set(n, &r, 1);
	snprintf(url, sizeof url, "http://2130706434:%d/x", pa); /* 127.0.0.2 */
	ck_assert_int_eq(notify_post(n, url, "{}", "callback", 3), 0);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/x", pa);
	ck_assert_int_eq(notify_post(n, url, "{}", "callback", 3), 0);
	snprintf(url, sizeof url, "http://localhost:%d/x", pa);
	ck_assert_int_eq(notify_post(n, url, "{}", "callback", 3), 0);
	for (i = 0; i < 40; i++) {
		got_a += serve(a, 50);
		got_b += serve(b, 0);
		notify_get_stats(n, &s);
		if (s.delivered + s.refused + s.failed == 3)
			break;
	}
	/* a refused one is not retried: wait past the first retry (1 s) */
	for (i = 0; i < 12; i++) {
		got_a += serve(a, 50);
		got_b += serve(b, 50);
	}
	notify_get_stats(n, &s);
	ck_assert_int_eq(got_b, 0);
	ck_assert_int_eq(got_a, 2);
	ck_assert_uint_eq(s.delivered, 2);
	ck_assert_uint_eq(s.refused, 1);
	ck_assert_uint_eq(s.failed, 0);
	notify_free(n, 100);
	close(a);
	close(b);
}
END_TEST

START_TEST(an_empty_list_allows_nothing)
{
	struct notify *n = NULL;
	struct notify_stats s;
	char url[128];
	int pa, a, got = 0, i;

	memset(&s, 0, sizeof s);
	a = listener("127.0.0.1", 0, &pa);
	ck_assert_int_eq(notify_new(16, &n), 0);
	notify_allow_set(n, NULL, 0);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/x", pa);
	ck_assert_int_eq(notify_post(n, url, "{}", "callback", 3), 0);
	for (i = 0; i < 40 && s.refused == 0; i++) {
		got += serve(a, 50);
		notify_get_stats(n, &s);
	}
	got += serve(a, 200);
	notify_get_stats(n, &s);
	ck_assert_int_eq(got, 0);
	ck_assert_uint_eq(s.refused, 1);
	notify_free(n, 100);
	close(a);
}
END_TEST

START_TEST(without_a_list_anywhere)
{
	struct notify *n = NULL;
	struct notify_stats s;
	char url[128];
	int pb, b, got = 0, i;

	b = listener("127.0.0.2", 0, &pb);
	ck_assert_int_eq(notify_new(16, &n), 0);
	snprintf(url, sizeof url, "http://127.0.0.2:%d/x", pb);
	ck_assert_int_eq(notify_post(n, url, "{}", "alert", 3), 0);
	for (i = 0; i < 40 && got == 0; i++)
		got += serve(b, 50);
	for (i = 0; i < 20; i++) {
		notify_get_stats(n, &s);
		if (s.delivered == 1)
			break;
		serve(b, 50);
	}
	ck_assert_int_eq(got, 1);
	ck_assert_uint_eq(s.delivered, 1);
	notify_free(n, 100);
	close(b);
}
END_TEST

static Suite *
notify_suite(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = tcase_create("allow");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, checked_where_it_connects);
	tcase_add_test(tc, an_empty_list_allows_nothing);
	tcase_add_test(tc, without_a_list_anywhere);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sr = srunner_create(notify_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
