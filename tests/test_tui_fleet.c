/*
 * test_tui_fleet: the fleet file (tui/fleet.c) — fields, comments, the
 * optional token file and group, relative token paths, errors naming the
 * line — and the per-host polling schedule (1 Hz, backoff while failing).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet.h"

static int
parse(const char *text, struct fleet *f, char **cause)
{
	*cause = NULL;
	return fleet_parse(text, strlen(text), "/etc/fusebox", f, cause);
}

static void
expect_error(const char *text, const char *message)
{
	struct fleet f;
	char *cause;

	ck_assert_int_eq(parse(text, &f, &cause), -EINVAL);
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strstr(cause, message) != NULL, "\"%s\" lacks \"%s\"", cause, message);
	ck_assert_ptr_null(f.hosts);
	ck_assert_int_eq(f.n, 0);
	free(cause);
}

START_TEST(test_fields)
{
	struct fleet f;
	char *cause;

	ck_assert_int_eq(parse("# the EU fleet\n"
			       "\n"
			       "eu-1 http://10.0.0.1:7700 /run/eu.token eu\n"
			       "  eu-2\thttp://10.0.0.2:7700/  tokens/eu2 eu # second\n"
			       "us-1 https://us1.example:7700\n"
			       "us-2 http://10.1.0.2:7700 - us\r\n",
			       &f, &cause),
			 0);
	ck_assert_int_eq(f.n, 4);
	ck_assert_str_eq(f.hosts[0].name, "eu-1");
	ck_assert_str_eq(f.hosts[0].url, "http://10.0.0.1:7700");
	ck_assert_str_eq(f.hosts[0].token_file, "/run/eu.token");
	ck_assert_str_eq(f.hosts[0].group, "eu");
	ck_assert_str_eq(f.hosts[1].name, "eu-2");
	ck_assert_str_eq(f.hosts[1].url, "http://10.0.0.2:7700");
	ck_assert_str_eq(f.hosts[1].token_file, "/etc/fusebox/tokens/eu2");
	ck_assert_str_eq(f.hosts[1].group, "eu");
	ck_assert_str_eq(f.hosts[2].url, "https://us1.example:7700");
	ck_assert_ptr_null(f.hosts[2].token_file);
	ck_assert_str_eq(f.hosts[2].group, "");
	ck_assert_ptr_null(f.hosts[3].token_file);
	ck_assert_str_eq(f.hosts[3].group, "us");
	ck_assert_int_eq(fleet_find(&f, "us-1"), 2);
	ck_assert_int_eq(fleet_find(&f, "us-3"), -1);
	ck_assert_int_eq(fleet_in_group(&f, 0, "eu"), 1);
	ck_assert_int_eq(fleet_in_group(&f, 2, "eu"), 0);
	ck_assert_int_eq(fleet_in_group(&f, 2, NULL), 1);
	ck_assert_int_eq(fleet_in_group(&f, 3, ""), 1);
	fleet_free(&f);
	ck_assert_ptr_null(f.hosts);
}
END_TEST

START_TEST(test_errors)
{
	expect_error("a http://x:1\nb\n", "fleet line 2: \"b\": expected NAME URL");
	expect_error("# c\n\na ftp://x:1\n", "fleet line 3: URL \"ftp://x:1\"");
	expect_error("a http://\n", "fleet line 1: URL");
	expect_error("a http://x:1\nb http://y:1\na http://z:1\n",
		     "fleet line 3: name \"a\" given twice");
	expect_error("a http://x:1 t g extra\n", "fleet line 1: a: too many fields");
	expect_error("a/b http://x:1\n", "fleet line 1: name \"a/b\"");
	expect_error("a http://x:1 t e/u\n", "fleet line 1: group \"e/u\"");
	expect_error("# only comments\n\n", "no host");
	expect_error("", "no host");
}
END_TEST

START_TEST(test_load)
{
	char dir[] = "/tmp/test_fleet_XXXXXX", path[128];
	struct fleet f;
	char *cause = NULL;
	FILE *fp;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/fleet", dir);
	ck_assert_int_eq(fleet_load(path, &f, &cause), -ENOENT);
	ck_assert_ptr_nonnull(strstr(cause, path));
	free(cause);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs("h1 http://127.0.0.1:1 h1.token\nh2 nope\n", fp);
	fclose(fp);
	ck_assert_int_eq(fleet_load(path, &f, &cause), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cause, "fleet line 2:"));
	ck_assert_ptr_nonnull(strstr(cause, path));
	free(cause);
	fp = fopen(path, "w");
	fputs("h1 http://127.0.0.1:1 h1.token\n", fp);
	fclose(fp);
	ck_assert_int_eq(fleet_load(path, &f, &cause), 0);
	snprintf(path, sizeof path, "%s/h1.token", dir);
	ck_assert_str_eq(f.hosts[0].token_file, path);
	fleet_free(&f);
	snprintf(path, sizeof path, "%s/fleet", dir);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_poll)
{
	struct fleet_poll p = {0};

	ck_assert_int_eq(fleet_poll_due(&p, 0), 1);
	fleet_poll_done(&p, 1, 1000, 5000);
	ck_assert_int_eq(p.next_at, 2000);
	ck_assert_int_eq(fleet_poll_due(&p, 1999), 0);
	ck_assert_int_eq(fleet_poll_due(&p, 2000), 1);
	fleet_poll_done(&p, 0, 2000, 6000);
	ck_assert_int_eq(p.fails, 1);
	ck_assert_int_eq(p.down_since, 6000);
	ck_assert_int_eq(p.next_at, 3000);
	fleet_poll_done(&p, 0, 3000, 7000);
	ck_assert_int_eq(p.next_at, 5000);
	ck_assert_int_eq(p.down_since, 6000);
	fleet_poll_done(&p, 0, 5000, 9000);
	ck_assert_int_eq(p.next_at, 9000);
	for (int i = 0; i < 10; i++)
		fleet_poll_done(&p, 0, 100000, 100000);
	ck_assert_int_eq(p.next_at, 100000 + FLEET_BACKOFF_MAX);
	ck_assert_int_eq(p.down_since, 6000);
	fleet_poll_done(&p, 1, 200000, 200000);
	ck_assert_int_eq(p.fails, 0);
	ck_assert_int_eq(p.down_since, 0);
	ck_assert_int_eq(p.next_at, 200000 + FLEET_POLL_MS);
}
END_TEST

static Suite *
fleet_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"fields", test_fields},
		{"errors", test_errors},
		{"load", test_load},
		{"poll", test_poll},
	};
	Suite *s = suite_create("fleet");
	TCase *tc;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(fleet_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
