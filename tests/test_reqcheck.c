/*
 * test_reqcheck: the HTTP front's header-value checks on literals:
 * Content-Length framing (RFC 9112 6.3), Host names (DNS rebinding), the
 * Origin list and the JSON media type.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "reqcheck.h"

START_TEST(content_length_one_or_equal)
{
	uint64_t len = 0;
	int n = 0;

	ck_assert_int_eq(reqcheck_content_length("17", &n, &len), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(len, 17);
	ck_assert_int_eq(reqcheck_content_length(" 17 ", &n, &len), 0); /* a repeat, equal */
	ck_assert_int_eq(reqcheck_content_length("17, 17", &n, &len), 0);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(reqcheck_content_length("40", &n, &len), -1); /* differs */
	n = 0;
	ck_assert_int_eq(reqcheck_content_length("5,6", &n, &len), -1);
	n = 0;
	ck_assert_int_eq(reqcheck_content_length("0", &n, &len), 0);
	ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(content_length_garbage)
{
	static const char *const bad[] = {"",	" ",  "abc", "-1",   "+5",
					  "5x", "5,", ",5",  "0x10", "99999999999999999999",
					  "5 5"};
	uint64_t len;
	size_t i;
	int n;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = 0;
		ck_assert_msg(reqcheck_content_length(bad[i], &n, &len) == -1, "\"%s\"", bad[i]);
	}
	n = 0;
	ck_assert_int_eq(reqcheck_content_length("18446744073709551615", &n, &len), 0);
	ck_assert_uint_eq(len, UINT64_MAX);
}
END_TEST

START_TEST(host_on_loopback)
{
	char *names[] = {"fusebox.internal"};
	struct reqcheck_self s;

	reqcheck_self_init(&s, "127.0.0.1", names, 1);
	ck_assert_int_eq(s.loopback, 1);
	ck_assert_int_eq(s.any, 0);
	ck_assert_int_eq(reqcheck_host(&s, "127.0.0.1"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "127.0.0.1:7700"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "LOCALHOST:7700"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "127.0.0.2"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "[::1]:7700"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "Fusebox.Internal:80"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "fusebox.internal"), 1);
	/* names that a rebinding page would send */
	ck_assert_int_eq(reqcheck_host(&s, "evil.example"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "evil.example:7700"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "127.0.0.1.evil.example"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "127.evil"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "localhost."), 0);
	ck_assert_int_eq(reqcheck_host(&s, "fusebox.internal.evil"), 0);
	/* another interface's address: not us */
	ck_assert_int_eq(reqcheck_host(&s, "10.1.2.3"), 0);
	/* malformed */
	ck_assert_int_eq(reqcheck_host(&s, ""), 0);
	ck_assert_int_eq(reqcheck_host(&s, ":7700"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "127.0.0.1:77a"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "127.0.0.1:1:2"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "[::1"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "[::1]x"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "::1"), 0); /* a v6 literal needs brackets */
}
END_TEST

START_TEST(host_on_other_listens)
{
	struct reqcheck_self s;

	reqcheck_self_init(&s, "0.0.0.0", NULL, 0);
	ck_assert_int_eq(s.any, 1);
	ck_assert_int_eq(reqcheck_host(&s, "10.1.2.3:7700"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "[fe80::1]"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "localhost"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "box.example"), 0);
	reqcheck_self_init(&s, "192.0.2.7", NULL, 0);
	ck_assert_int_eq(s.loopback + s.any, 0);
	ck_assert_int_eq(reqcheck_host(&s, "192.0.2.7:7700"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "192.0.2.8"), 0);
	ck_assert_int_eq(reqcheck_host(&s, "127.0.0.1"), 0);
	reqcheck_self_init(&s, "::1", NULL, 0);
	ck_assert_int_eq(s.loopback, 1);
	ck_assert_int_eq(reqcheck_host(&s, "[::1]:7700"), 1);
	ck_assert_int_eq(reqcheck_host(&s, "localhost"), 1);
}
END_TEST

START_TEST(origin_listed_only)
{
	char *allowed[] = {"http://app.example", "https://console.example:8443"};

	ck_assert_int_eq(reqcheck_origin("http://app.example", allowed, 2), 1);
	ck_assert_int_eq(reqcheck_origin("HTTP://APP.EXAMPLE", allowed, 2), 1);
	ck_assert_int_eq(reqcheck_origin("https://console.example:8443", allowed, 2), 1);
	ck_assert_int_eq(reqcheck_origin("https://app.example", allowed, 2), 0);
	ck_assert_int_eq(reqcheck_origin("http://app.example:80", allowed, 2), 0);
	ck_assert_int_eq(reqcheck_origin("null", allowed, 2), 0);
	ck_assert_int_eq(reqcheck_origin("http://app.example", NULL, 0), 0);
}
END_TEST

START_TEST(json_media_type)
{
	ck_assert_int_eq(reqcheck_json_type("application/json"), 1);
	ck_assert_int_eq(reqcheck_json_type("Application/JSON; charset=utf-8"), 1);
	ck_assert_int_eq(reqcheck_json_type(" application/json ;charset=utf-8"), 1);
	ck_assert_int_eq(reqcheck_json_type(NULL), 0);
	ck_assert_int_eq(reqcheck_json_type(""), 0);
	ck_assert_int_eq(reqcheck_json_type("text/plain"), 0);
	ck_assert_int_eq(reqcheck_json_type("application/x-www-form-urlencoded"), 0);
	ck_assert_int_eq(reqcheck_json_type("multipart/form-data; boundary=x"), 0);
	ck_assert_int_eq(reqcheck_json_type("application/jsonp"), 0);
	ck_assert_int_eq(reqcheck_json_type("application/json-seq"), 0);
}
END_TEST

static Suite *
reqcheck_suite(void)
{
	Suite *s = suite_create("reqcheck");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, content_length_one_or_equal);
	tcase_add_test(tc, content_length_garbage);
	tcase_add_test(tc, host_on_loopback);
	tcase_add_test(tc, host_on_other_listens);
	tcase_add_test(tc, origin_listed_only);
	tcase_add_test(tc, json_media_type);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(reqcheck_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
