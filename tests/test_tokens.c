/*
 * test_tokens: the tokens file. Parsing (good lines, every bad line with
 * its number, duplicates, no secret in a message), the mode check on load,
 * lookup, role names.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokens.h"
#include "util.h"

static char tmpdir[64];

static void
setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/fb-tokens-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
teardown(void)
{
	char *p = xasprintf("%s/tokens", tmpdir);

	unlink(p);
	rmdir(tmpdir);
	free(p);
}

/* Write text to tmpdir/tokens with mode; returns the path (caller frees). */
static char *
file_write(const char *text, mode_t mode)
{
	char *p = xasprintf("%s/tokens", tmpdir);
	int fd;

	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
	return p;
}

START_TEST(test_parse_good)
{
	struct tokens *t = NULL;
	char *cause = NULL;

	ck_assert_int_eq(tokens_parse("# fuseboxd tokens\n"
				      "\n"
				      "tok-caller-0001 caller checkout-svc\n"
				      "   tok-viewer-0002\tviewer   grafana  \r\n"
				      "\t# indented comment\n"
				      "tok-operator-003 operator alice",
				      &t, &cause),
			 0);
	ck_assert_ptr_null(cause);
	ck_assert_int_eq(t->n, 3);
	ck_assert_str_eq(t->v[0].token, "tok-caller-0001");
	ck_assert_int_eq(t->v[0].role, ROLE_CALLER);
	ck_assert_str_eq(t->v[0].name, "checkout-svc");
	ck_assert_str_eq(t->v[1].token, "tok-viewer-0002");
	ck_assert_int_eq(t->v[1].role, ROLE_VIEWER);
	ck_assert_str_eq(t->v[1].name, "grafana");
	ck_assert_int_eq(t->v[2].role, ROLE_OPERATOR);
	ck_assert_str_eq(t->v[2].name, "alice");
	tokens_free(t);

	t = NULL;
	ck_assert_int_eq(tokens_parse("", &t, &cause), 0);
	ck_assert_int_eq(t->n, 0);
	tokens_free(t);
}
END_TEST

START_TEST(test_parse_bad_lines)
{
	struct tokens *t = NULL;
	char *cause = NULL;

	ck_assert_int_eq(tokens_parse("good-token-1 operator alice\n"
				      "secret-AAAA admin bob\n"
				      "# fine\n"
				      "secret-BBBB viewer\n"
				      "secret-CCCC caller carol extra\n"
				      "good-token-1 viewer dave\n",
				      &t, &cause),
			 TOKENS_E_INVALID);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(cause);
	ck_assert_str_eq(
		cause, "line 2: second field is not a role (expected caller, viewer or operator)\n"
		       "line 4: expected \"<token> <role> <name>\" (fewer than three fields)\n"
		       "line 5: expected \"<token> <role> <name>\" (more than three fields)\n"
		       "line 6: duplicate token (same as line 1)");
	/* Secrets never reach a message. */
	ck_assert_ptr_null(strstr(cause, "secret-"));
	ck_assert_ptr_null(strstr(cause, "admin"));
	ck_assert_ptr_null(strstr(cause, "good-token"));
	free(cause);
}
END_TEST

START_TEST(test_parse_control_bytes)
{
	struct tokens *t = NULL;
	char *cause = NULL;

	ck_assert_int_eq(tokens_parse("tok\x01x caller a\ntok2 caller b\x7f\n", &t, &cause),
			 TOKENS_E_INVALID);
	ck_assert_str_eq(cause, "line 1: token holds a control or non-ASCII byte\n"
				"line 2: name holds a control byte");
	free(cause);
}
END_TEST

START_TEST(test_no_secret_in_cause)
{
	struct tokens *t = NULL;
	char *cause = NULL;

	/* Fields in the wrong order put the secret where the role goes. */
	ck_assert_int_eq(tokens_parse("alice tok-SECRET-9f3a operator\n"
				      "tok-SECRET-77 operator\n",
				      &t, &cause),
			 TOKENS_E_INVALID);
	ck_assert_str_eq(cause, "line 1: second field is not a role (expected caller, viewer or "
				"operator)\nline 2: expected \"<token> <role> <name>\" (fewer than "
				"three fields)");
	ck_assert_ptr_null(strstr(cause, "SECRET"));
	free(cause);
}
END_TEST

START_TEST(test_load_perms)
{
	struct tokens *t = NULL;
	char *cause = NULL, *path;

	path = file_write("tok-1234 operator alice\n", 0644);
	ck_assert_int_eq(tokens_load(path, &t, &cause), TOKENS_E_PERMS);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(cause, "mode 0644"));
	ck_assert_ptr_nonnull(strstr(cause, "chmod 600"));
	ck_assert_ptr_null(strstr(cause, "tok-1234"));
	free(cause);
	cause = NULL;
	free(path);

	path = file_write("tok-1234 operator alice\n", 0640);
	ck_assert_int_eq(tokens_load(path, &t, &cause), TOKENS_E_PERMS);
	free(cause);
	cause = NULL;
	free(path);

	path = file_write("tok-1234 operator alice\n", 0600);
	ck_assert_int_eq(tokens_load(path, &t, &cause), 0);
	ck_assert_ptr_null(cause);
	ck_assert_int_eq(t->n, 1);
	ck_assert_str_eq(t->v[0].name, "alice");
	tokens_free(t);
	free(path);
}
END_TEST

START_TEST(test_load_errors)
{
	struct tokens *t = NULL;
	char *cause = NULL, *path, *want;

	ck_assert_int_eq(tokens_load("/nonexistent/fusebox/tokens", &t, &cause), -ENOENT);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	cause = NULL;

	path = file_write("ok-token caller a\nbad-token root b\n", 0400);
	ck_assert_int_eq(tokens_load(path, &t, &cause), TOKENS_E_INVALID);
	want = xasprintf("%s: line 2: second field is not a role", path);
	ck_assert_ptr_nonnull(strstr(cause, want));
	free(want);
	free(cause);
	free(path);
}
END_TEST

START_TEST(test_find)
{
	struct tokens *t = NULL;
	char *cause = NULL;
	const struct token *k;

	ck_assert_int_eq(
		tokens_parse("abcdef caller a\nabcdefgh viewer b\nzzz operator c\n", &t, &cause),
		0);
	k = tokens_find(t, "abcdefgh");
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(k->name, "b");
	k = tokens_find(t, "abcdef");
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(k->name, "a");
	ck_assert_int_eq(tokens_find(t, "zzz")->role, ROLE_OPERATOR);
	ck_assert_ptr_null(tokens_find(t, "abcde"));
	ck_assert_ptr_null(tokens_find(t, "abcdefg"));
	ck_assert_ptr_null(tokens_find(t, "ABCDEF"));
	ck_assert_ptr_null(tokens_find(t, ""));
	ck_assert_ptr_null(tokens_find(t, NULL));
	ck_assert_ptr_null(tokens_find(NULL, "abcdef"));
	tokens_free(t);
	tokens_free(NULL);
}
END_TEST

START_TEST(test_role_names)
{
	enum role r;

	ck_assert_str_eq(role_name(ROLE_CALLER), "caller");
	ck_assert_str_eq(role_name(ROLE_VIEWER), "viewer");
	ck_assert_str_eq(role_name(ROLE_OPERATOR), "operator");
	ck_assert_ptr_null(role_name((enum role)3));
	ck_assert_int_eq(role_parse("viewer", &r), 0);
	ck_assert_int_eq(r, ROLE_VIEWER);
	ck_assert_int_eq(role_parse("Viewer", &r), -EINVAL);
}
END_TEST

static Suite *
tokens_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"parse_good", test_parse_good},
		{"parse_bad_lines", test_parse_bad_lines},
		{"parse_control_bytes", test_parse_control_bytes},
		{"no_secret_in_cause", test_no_secret_in_cause},
		{"load_perms", test_load_perms},
		{"load_errors", test_load_errors},
		{"find", test_find},
		{"role_names", test_role_names},
	};
	Suite *s = suite_create("tokens");
	TCase *tc;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tokens_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
