/*
 * Unit: fuseboxd.addr — its path beside the database, its line (wildcard
 * listens as loopback, IPv6 in brackets), the atomic write and the
 * removal that spares another process's file.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addrfile.h"

START_TEST(path_is_beside_the_database)
{
	char *p = addrfile_path("/var/lib/fusebox/fusebox.db");

	ck_assert_str_eq(p, "/var/lib/fusebox/fuseboxd.addr");
	free(p);
	p = addrfile_path("fusebox.db");
	ck_assert_str_eq(p, "fuseboxd.addr");
	free(p);
	ck_assert_ptr_null(addrfile_path(":memory:"));
	ck_assert_ptr_null(addrfile_path(""));
}
END_TEST

START_TEST(line_names_a_reachable_url)
{
	char b[128];

	ck_assert_int_eq(addrfile_line("127.0.0.1", 7070, 42, b, sizeof b), 0);
	ck_assert_str_eq(b, "http://127.0.0.1:7070 42\n");
	ck_assert_int_eq(addrfile_line("0.0.0.0", 80, 1, b, sizeof b), 0);
	ck_assert_str_eq(b, "http://127.0.0.1:80 1\n");
	ck_assert_int_eq(addrfile_line("::", 80, 1, b, sizeof b), 0);
	ck_assert_str_eq(b, "http://[::1]:80 1\n");
	ck_assert_int_eq(addrfile_line("::1", 9, 7, b, sizeof b), 0);
	ck_assert_str_eq(b, "http://[::1]:9 7\n");
	ck_assert_int_eq(addrfile_line("127.0.0.1", 7070, 42, b, 10), -ENAMETOOLONG);
}
END_TEST

START_TEST(write_then_remove_only_our_own)
{
	char dir[] = "/tmp/fb-addrfile-XXXXXX", path[128], got[128], want[128];
	struct stat st;
	char *cause = NULL;
	FILE *f;
	size_t n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/fuseboxd.addr", dir);
	ck_assert_int_eq(addrfile_write(path, "127.0.0.1", 5555, &cause), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(got, 1, sizeof got - 1, f);
	fclose(f);
	got[n] = '\0';
	snprintf(want, sizeof want, "http://127.0.0.1:5555 %ld\n", (long)getpid());
	ck_assert_str_eq(got, want);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	addrfile_remove(path);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* a file another daemon wrote since stays */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "http://127.0.0.1:6666 %ld\n", (long)getpid() + 1);
	fclose(f);
	addrfile_remove(path);
	ck_assert_int_eq(access(path, F_OK), 0);
	unlink(path);
	/* an unwritable directory is an error with its cause, never a crash */
	snprintf(path, sizeof path, "%s/missing/fuseboxd.addr", dir);
	ck_assert_int_lt(addrfile_write(path, "127.0.0.1", 1, &cause), 0);
	ck_assert_ptr_nonnull(strstr(cause, "missing"));
	free(cause);
	rmdir(dir);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("addrfile");
	TCase *tc = tcase_create("addrfile");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, path_is_beside_the_database);
	tcase_add_test(tc, line_names_a_reachable_url);
	tcase_add_test(tc, write_then_remove_only_our_own);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
