/*
 * test_tui_fleet: the fleet file (tui/fleet.c) — fields, comments, the
 * optional token file and group, relative token paths, errors naming the
 * line — the per-host polling schedule (1 Hz, backoff while failing) and
 * the fleet console's sums (tui/fleet_console.c: counters added up, not
 * percentages averaged; a host down is counted as down, not summed) and
 * the fan-out's host selection and level request, shared by the CLI and
 * the console (tui/fleet_cli.c).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet.h"
#include "fleet_cli.h"
#include "fleet_console.h"

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

/* A host's /v1/state: intent at level (forced or not), flaky-v1's breaker state. */
static struct state_v *
host_state(int level, int forced, const char *breaker, int pending)
{
	char json[2048], *cause = NULL;
	struct state_v *s = NULL;

	snprintf(json, sizeof json,
		 "{\"version\":\"0.1.0\",\"uptime_s\":5,\"inflight\":0,\"routes\":["
		 "{\"name\":\"intent\",\"level\":%d,\"auto_level\":0,\"forced_level\":%s,"
		 "\"budget_ms\":1000,\"targets\":[{\"backend\":\"primary\",\"weight\":90,"
		 "\"canary\":false},{\"backend\":\"flaky-v1\",\"weight\":10,\"canary\":false}],"
		 "\"review_pending\":%d},"
		 "{\"name\":\"ticket\",\"level\":0,\"auto_level\":0,\"forced_level\":null,"
		 "\"budget_ms\":1000,\"targets\":[{\"backend\":\"primary\",\"weight\":100,"
		 "\"canary\":false}]}],"
		 "\"backends\":[{\"name\":\"primary\",\"breaker\":{\"state\":\"closed\"}},"
		 "{\"name\":\"flaky-v1\",\"breaker\":{\"state\":\"%s\"}}]}",
		 level,
		 forced ? "{\"level\":2,\"actor\":\"alice\",\"reason\":\"vendor\",\"until\":null}"
			: "null",
		 pending, breaker);
	ck_assert_msg(model_parse_state(json, strlen(json), &s, &cause) == 0, "%s", cause);
	return s;
}

static struct slo_v *
host_slo(int total, int service_good, int smart_good)
{
	char json[1024], *cause = NULL;
	struct slo_v *s = NULL;

	snprintf(json, sizeof json,
		 "{\"routes\":[{\"route\":\"intent\",\"windows\":{\"1h\":{\"total\":%d,"
		 "\"service_good\":%d,\"smart_good\":%d}}}]}",
		 total, service_good, smart_good);
	ck_assert_msg(model_parse_slo(json, strlen(json), &s, &cause) == 0, "%s", cause);
	return s;
}

START_TEST(test_sums)
{
	struct state_v *s1 = host_state(2, 1, "closed", 2),
		       *s2 = host_state(0, 0, "forced_open", 1), *s3 = host_state(1, 0, "open", 5);
	struct slo_v *l1 = host_slo(3, 3, 1), *l2 = host_slo(997, 990, 900),
		     *l3 = host_slo(50, 0, 0);
	const struct fleet_snap h[] = {
		{"h1", 1, s1, l1, NULL},
		{"h2", 1, s2, l2, NULL},
		{"h3", 0, s3, l3, NULL}, /* down: its last answers are not summed */
		{"h4", 0, NULL, NULL, NULL},
	};
	struct fleet_sums sum;
	char t[128];

	fleet_sums_build(h, 4, &sum);
	ck_assert_int_eq(sum.up, 2);
	ck_assert_int_eq(sum.down, 2);
	ck_assert_int_eq(sum.nr, 2);
	ck_assert_str_eq(sum.r[0].name, "intent");
	ck_assert_int_eq(sum.r[0].hosts[0], 1);
	ck_assert_int_eq(sum.r[0].hosts[2], 1);
	ck_assert_int_eq(sum.r[0].forced[2], 1);
	ck_assert_int_eq(sum.r[0].forced[0], 0);
	ck_assert_int_eq(sum.r[0].down, 1);
	/* 1000 calls, 993 good: 99.30 %, not the mean of 100 % and 99.30 % */
	ck_assert_int_eq(sum.r[0].total, 1000);
	ck_assert_int_eq(sum.r[0].service_good, 993);
	ck_assert_int_eq(sum.r[0].smart_good, 901);
	ck_assert_int_eq(sum.r[0].reviews, 3);
	ck_assert_int_eq(sum.r[0].open, 1);
	ck_assert_int_eq(sum.r[1].open, 0);
	ck_assert_int_eq(sum.r[1].total, 0);
	fleet_levels_text(&sum.r[0], 1, t, sizeof t);
	ck_assert_str_eq(t, "L0 1 · L2* 1 · down 1");
	fleet_levels_text(&sum.r[0], 0, t, sizeof t);
	ck_assert_str_eq(t, "L0 1 | L2* 1 | down 1");
	fleet_levels_text(&sum.r[1], 1, t, sizeof t);
	ck_assert_str_eq(t, "L0 2 · down 1");
	fleet_avail_text(t, sizeof t, sum.r[0].service_good, sum.r[0].total);
	ck_assert_str_eq(t, "99.30% 993/1000");
	fleet_avail_text(t, sizeof t, 0, 0);
	ck_assert_str_eq(t, "- 0/0");
	ck_assert_int_eq(sum.nb, 2);
	ck_assert_str_eq(sum.b[1].name, "flaky-v1");
	ck_assert_int_eq(sum.b[1].hosts, 2);
	ck_assert_int_eq(sum.b[1].open, 1);
	ck_assert_str_eq(sum.b[1].where, "h2(forced_open)");
	ck_assert_int_eq(sum.b[0].open, 0);
	fleet_sums_free(&sum);
	state_free(s1);
	state_free(s2);
	state_free(s3);
	slo_free(l1);
	slo_free(l2);
	slo_free(l3);
}
END_TEST

START_TEST(test_fanout)
{
	struct fleet f;
	struct fleet_fanout fo;
	char *cause, err[256];
	int sel[3];

	ck_assert_int_eq(parse("h1 http://127.0.0.1:1 - eu\n"
			       "h2 http://127.0.0.1:2 - eu\n"
			       "h3 http://127.0.0.1:3 - us\n",
			       &f, &cause),
			 0);
	ck_assert_int_eq(fleet_select(&f, NULL, NULL, sel, err, sizeof err), 0);
	ck_assert(sel[0] && sel[1] && sel[2]);
	ck_assert_int_eq(fleet_select(&f, "eu", NULL, sel, err, sizeof err), 0);
	ck_assert(sel[0] && sel[1] && !sel[2]);
	ck_assert_int_eq(fleet_select(&f, NULL, "h3,h1", sel, err, sizeof err), 0);
	ck_assert(sel[0] && !sel[1] && sel[2]);
	ck_assert_int_eq(fleet_select(&f, "eu", "h3", sel, err, sizeof err), -1);
	ck_assert_str_eq(err, "no host of the fleet is selected");
	ck_assert_int_eq(fleet_select(&f, NULL, "h1,h9", sel, err, sizeof err), -1);
	ck_assert_str_eq(err, "no host named \"h9\" in the fleet");
	ck_assert_int_eq(fleet_select(&f, "asia", NULL, sel, err, sizeof err), -1);

	fleet_fanout_level(&fo, "intent", 2, "vendor outage", 1800);
	ck_assert_str_eq(fo.method, "PUT");
	ck_assert_str_eq(fo.path, "/v1/routes/intent/level");
	ck_assert_str_eq(fo.body, "{\"level\":2,\"reason\":\"vendor outage\",\"ttl_s\":1800}");
	ck_assert_str_eq(fo.what, "force intent");
	fleet_fanout_free(&fo);
	fleet_fanout_level(&fo, "a b", -1, NULL, 0);
	ck_assert_str_eq(fo.method, "DELETE");
	ck_assert_str_eq(fo.path, "/v1/routes/a%20b/level");
	ck_assert_ptr_null(fo.body);
	ck_assert_str_eq(fo.what, "release a b");
	fleet_fanout_free(&fo);
	fleet_free(&f);
}
END_TEST

static Suite *
fleet_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"fields", test_fields}, {"errors", test_errors}, {"load", test_load},
		{"poll", test_poll},	 {"sums", test_sums},	  {"fanout", test_fanout},
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
