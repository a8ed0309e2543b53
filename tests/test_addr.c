/*
 * test_addr: literal addresses, their classes, the callbacks.allow
 * patterns and the verdicts on literal addresses (no name is resolved,
 * nothing is sent).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"

static enum addr_class
class_of(const char *s)
{
	struct addr a;

	ck_assert_msg(addr_parse(s, &a) == 0, "%s does not parse", s);
	return addr_classify(&a);
}

START_TEST(parse_and_format)
{
	static const char *const bad[] = {"",	 "127.1", "2130706433",	 "1.2.3.4.5", "256.0.0.1",
					  "::g", "[::1",  "example.com", "1.2.3.4 ",  "[]"};
	struct addr a;
	char buf[64];
	size_t i;

	ck_assert_int_eq(addr_parse("192.0.2.7", &a), 0);
	ck_assert_int_eq(a.family, 4);
	addr_format(&a, buf, sizeof buf);
	ck_assert_str_eq(buf, "192.0.2.7");
	ck_assert_int_eq(addr_parse("[2001:db8::1]", &a), 0);
	ck_assert_int_eq(a.family, 6);
	addr_format(&a, buf, sizeof buf);
	ck_assert_str_eq(buf, "2001:db8::1");
	/* an IPv4-mapped IPv6 address is the IPv4 address */
	ck_assert_int_eq(addr_parse("::ffff:127.0.0.1", &a), 0);
	ck_assert_int_eq(a.family, 4);
	addr_format(&a, buf, sizeof buf);
	ck_assert_str_eq(buf, "127.0.0.1");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(addr_parse(bad[i], &a) != 0, "\"%s\" parsed", bad[i]);
}
END_TEST

START_TEST(classes)
{
	ck_assert_int_eq(class_of("0.0.0.0"), ADDR_UNSPECIFIED);
	ck_assert_int_eq(class_of("0.1.2.3"), ADDR_UNSPECIFIED);
	ck_assert_int_eq(class_of("::"), ADDR_UNSPECIFIED);
	ck_assert_int_eq(class_of("127.0.0.1"), ADDR_LOOPBACK);
	ck_assert_int_eq(class_of("127.255.0.9"), ADDR_LOOPBACK);
	ck_assert_int_eq(class_of("::1"), ADDR_LOOPBACK);
	ck_assert_int_eq(class_of("::ffff:127.0.0.2"), ADDR_LOOPBACK);
	ck_assert_int_eq(class_of("10.1.2.3"), ADDR_PRIVATE);
	ck_assert_int_eq(class_of("172.16.0.1"), ADDR_PRIVATE);
	ck_assert_int_eq(class_of("172.31.255.255"), ADDR_PRIVATE);
	ck_assert_int_eq(class_of("172.32.0.1"), ADDR_GLOBAL);
	ck_assert_int_eq(class_of("172.15.255.255"), ADDR_GLOBAL);
	ck_assert_int_eq(class_of("192.168.1.1"), ADDR_PRIVATE);
	ck_assert_int_eq(class_of("100.64.0.1"), ADDR_PRIVATE);
	ck_assert_int_eq(class_of("100.128.0.1"), ADDR_GLOBAL);
	ck_assert_int_eq(class_of("fd12:3456::1"), ADDR_PRIVATE);
	ck_assert_int_eq(class_of("fc00::1"), ADDR_PRIVATE);
	ck_assert_int_eq(class_of("169.254.169.254"), ADDR_LINK_LOCAL);
	ck_assert_int_eq(class_of("fe80::1"), ADDR_LINK_LOCAL);
	ck_assert_int_eq(class_of("febf::1"), ADDR_LINK_LOCAL);
	ck_assert_int_eq(class_of("fec0::1"), ADDR_GLOBAL);
	ck_assert_int_eq(class_of("224.0.0.1"), ADDR_MULTICAST);
	ck_assert_int_eq(class_of("239.255.255.250"), ADDR_MULTICAST);
	ck_assert_int_eq(class_of("255.255.255.255"), ADDR_MULTICAST);
	ck_assert_int_eq(class_of("ff02::1"), ADDR_MULTICAST);
	ck_assert_int_eq(class_of("240.0.0.1"), ADDR_RESERVED);
	ck_assert_int_eq(class_of("192.0.2.1"), ADDR_RESERVED);
	ck_assert_int_eq(class_of("198.51.100.1"), ADDR_RESERVED);
	ck_assert_int_eq(class_of("203.0.113.1"), ADDR_RESERVED);
	ck_assert_int_eq(class_of("198.19.0.1"), ADDR_RESERVED);
	ck_assert_int_eq(class_of("2001:db8::1"), ADDR_RESERVED);
	ck_assert_int_eq(class_of("64:ff9b::7f00:1"), ADDR_RESERVED);
	ck_assert_int_eq(class_of("8.8.8.8"), ADDR_GLOBAL);
	ck_assert_int_eq(class_of("2606:4700::1111"), ADDR_GLOBAL);
	ck_assert_str_eq(addr_class_name(ADDR_LINK_LOCAL), "link-local");
	ck_assert_str_eq(addr_class_name(ADDR_GLOBAL), "global");
}
END_TEST

START_TEST(rule_patterns)
{
	static const struct {
		const char *p;
		int is_name, family, prefix, port;
		const char *name;
	} ok[] = {
		{"127.0.0.1:8080", 0, 4, 32, 8080, NULL},
		{"127.0.0.1", 0, 4, 32, 0, NULL},
		{"10.0.0.0/8", 0, 4, 8, 0, NULL},
		{"10.0.0.0/8:443", 0, 4, 8, 443, NULL},
		{"0.0.0.0/0", 0, 4, 0, 0, NULL},
		{"[::1]:9000", 0, 6, 128, 9000, NULL},
		{"::1", 0, 6, 128, 0, NULL},
		{"fd00::/8", 0, 6, 8, 0, NULL},
		{"[fd00::/8]:443", 0, 6, 8, 443, NULL},
		{"Hooks.Example.COM:443", 1, 0, 0, 443, "hooks.example.com"},
		{"localhost", 1, 0, 0, 0, "localhost"},
	};
	static const char *const bad[] = {
		"",
		":80",
		"127.0.0.1:",
		"127.0.0.1:0",
		"127.0.0.1:65536",
		"127.0.0.1:80x",
		"10.0.0.1/8",
		"10.0.0.0/33",
		"10.0.0.0/",
		"::1/129",
		"[::1",
		"[::1]x",
		"exa mple.com",
		"http://example.com",
		"example.com/path",
		"-",
		"a..b",
		"*.example.com",
	};
	struct addr_rule r;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(addr_rule_parse(ok[i].p, &r, &why) == 0, "%s: %s", ok[i].p, why);
		ck_assert_int_eq(r.is_name, ok[i].is_name);
		ck_assert_int_eq(r.port, ok[i].port);
		if (ok[i].is_name) {
			ck_assert_str_eq(r.name, ok[i].name);
		} else {
			ck_assert_int_eq(r.net.family, ok[i].family);
			ck_assert_int_eq(r.prefix, ok[i].prefix);
		}
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(addr_rule_parse(bad[i], &r, &why) != 0, "\"%s\" parsed", bad[i]);
		ck_assert_ptr_nonnull(why);
	}
	ck_assert_int_ne(addr_rule_parse("http://example.com", &r, &why), 0);
	ck_assert_ptr_nonnull(strstr(why, "not a URL"));
	ck_assert_int_ne(addr_rule_parse("10.0.0.1/8", &r, &why), 0);
	ck_assert_str_eq(why, "the address has bits set past the prefix");
}
END_TEST

/* rules from patterns, asserting each parses */
static int
rules_make(const char *const *p, int n, struct addr_rule *out)
{
	const char *why;
	int i;

	for (i = 0; i < n; i++)
		ck_assert_msg(addr_rule_parse(p[i], &out[i], &why) == 0, "%s: %s", p[i], why);
	return n;
}

static int
allowed(const struct addr_rule *r, int n, const char *host, const char *a, int port)
{
	struct addr ad;

	ck_assert_int_eq(addr_parse(a, &ad), 0);
	return addr_allowed(r, n, host, &ad, port);
}

START_TEST(verdicts)
{
	static const char *const p[] = {"127.0.0.1:7001", "10.0.0.0/8:443", "[::1]:7002",
					"hooks.example.com:8443", "0.0.0.0/0:9999"};
	struct addr_rule r[5];
	int n = rules_make(p, 5, r);

	ck_assert(allowed(r, n, "127.0.0.1", "127.0.0.1", 7001));
	ck_assert(!allowed(r, n, "127.0.0.1", "127.0.0.1", 7003));
	ck_assert(!allowed(r, n, "127.0.0.2", "127.0.0.2", 7001));
	/* the mapped form meets the IPv4 rules */
	ck_assert(allowed(r, n, "::ffff:127.0.0.1", "::ffff:127.0.0.1", 7001));
	ck_assert(allowed(r, n, "::1", "::1", 7002));
	ck_assert(!allowed(r, n, "::1", "::1", 7001));
	ck_assert(allowed(r, n, "10.9.8.7", "10.9.8.7", 443));
	ck_assert(!allowed(r, n, "10.9.8.7", "10.9.8.7", 80));
	ck_assert(!allowed(r, n, "11.0.0.1", "11.0.0.1", 443));
	/* a name rule: the URL's host decides, whatever DNS answered */
	ck_assert(allowed(r, n, "HOOKS.example.com", "192.0.2.10", 8443));
	ck_assert(!allowed(r, n, "hooks.example.com", "192.0.2.10", 443));
	/* a name that resolves into an allowed range is judged by its address */
	ck_assert(allowed(r, n, "rebind.example", "127.0.0.1", 7001));
	ck_assert(!allowed(r, n, "rebind.example", "127.0.0.1", 7003));
	ck_assert(!allowed(r, n, "rebind.example", "169.254.169.254", 80));
	/* 0.0.0.0/0 lets any unicast address through on its port, never 0.0.0.0 itself */
	ck_assert(allowed(r, n, "8.8.8.8", "8.8.8.8", 9999));
	ck_assert(!allowed(r, n, "0.0.0.0", "0.0.0.0", 9999));
	ck_assert(!allowed(r, n, "224.0.0.1", "224.0.0.1", 9999));
	/* no rules: nothing */
	ck_assert(!allowed(r, 0, "127.0.0.1", "127.0.0.1", 7001));
}
END_TEST

START_TEST(before_dns)
{
	static const char *const p[] = {"127.0.0.1:7001", "hooks.example.com:8443"};
	struct addr_rule r[2];
	int n = rules_make(p, 2, r);

	ck_assert(addr_may_allow(r, n, "127.0.0.1", 7001));
	ck_assert(!addr_may_allow(r, n, "127.0.0.1", 7003));
	ck_assert(!addr_may_allow(r, n, "127.0.0.2", 7001));
	ck_assert(!addr_may_allow(r, n, "::ffff:127.0.0.2", 7001));
	ck_assert(!addr_may_allow(r, n, "0.0.0.0", 7001));
	/* names wait for DNS unless no rule has their port */
	ck_assert(addr_may_allow(r, n, "localhost", 7001));
	ck_assert(addr_may_allow(r, n, "hooks.example.com", 8443));
	ck_assert(!addr_may_allow(r, n, "localhost", 7003));
	ck_assert(!addr_may_allow(r, 0, "localhost", 7001));
}
END_TEST

START_TEST(url_host)
{
	char host[256];
	int port;

	ck_assert_int_eq(addr_url_host("http://127.0.0.1:7001/hook", host, sizeof host, &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_eq(port, 7001);
	ck_assert_int_eq(addr_url_host("HTTPS://Hooks.Example.com?x=1", host, sizeof host, &port),
			 0);
	ck_assert_str_eq(host, "hooks.example.com");
	ck_assert_int_eq(port, 443);
	ck_assert_int_eq(addr_url_host("http://[::1]:7002/", host, sizeof host, &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(port, 7002);
	ck_assert_int_eq(addr_url_host("http://user:pw@127.0.0.2/x", host, sizeof host, &port), 0);
	ck_assert_str_eq(host, "127.0.0.2");
	ck_assert_int_eq(port, 80);
	ck_assert_int_eq(addr_url_host("ftp://x/", host, sizeof host, &port), -1);
	ck_assert_int_eq(addr_url_host("http://:80/", host, sizeof host, &port), -1);
	ck_assert_int_eq(addr_url_host("http://h:0/", host, sizeof host, &port), -1);
	ck_assert_int_eq(addr_url_host("http://h:99999/", host, sizeof host, &port), -1);
	ck_assert_int_eq(addr_url_host("http://[::1/", host, sizeof host, &port), -1);
}
END_TEST

static Suite *
addr_suite(void)
{
	Suite *s = suite_create("addr");
	TCase *tc = tcase_create("addr");

	tcase_add_test(tc, parse_and_format);
	tcase_add_test(tc, classes);
	tcase_add_test(tc, rule_patterns);
	tcase_add_test(tc, verdicts);
	tcase_add_test(tc, before_dns);
	tcase_add_test(tc, url_host);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(addr_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
