/*
 * test_idem: the idempotency table with literal wall times.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "util.h"

#define FAR 4000000000000LL /* an expiry nobody reaches in these tests */

START_TEST(test_insert_find_per_route)
{
	struct idem *t = idem_new(100);
	struct idem_entry *a, *b, *c;

	ck_assert_ptr_null(idem_find(t, "intent", "r1", 0));
	a = idem_insert(t, "intent", "r1", FAR);
	b = idem_insert(t, "summary", "r1", FAR);
	c = idem_insert(t, "ab", "c", FAR);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_ne(a, b);
	ck_assert_int_eq(idem_count(t), 3);

	ck_assert_ptr_eq(idem_find(t, "intent", "r1", 1000), a);
	ck_assert_ptr_eq(idem_find(t, "summary", "r1", 1000), b);
	ck_assert_ptr_eq(idem_find(t, "ab", "c", 1000), c);
	/* Same request_id on another route, or another id: absent. */
	ck_assert_ptr_null(idem_find(t, "other", "r1", 1000));
	ck_assert_ptr_null(idem_find(t, "intent", "r2", 1000));
	ck_assert_ptr_null(idem_find(t, "intent", "R1", 1000));
	/* The route/id boundary is part of the key. */
	ck_assert_ptr_null(idem_find(t, "a", "bc", 1000));
	ck_assert_ptr_null(idem_find(t, "abc", "", 1000));
	idem_free(t);
	idem_free(NULL);
}
END_TEST

START_TEST(test_inflight_vs_done)
{
	struct idem *t = idem_new(100);
	struct idem_entry *en, *got;
	char answer[] = "{\"result\":1}";

	en = idem_insert(t, "intent", "r1", 5000);
	ck_assert_int_eq(en->done, 0);
	ck_assert_ptr_null(en->response);
	ck_assert_int_eq(en->expires_wall_ms, 5000);
	/* In flight: visible even past its expiry time (the call still runs). */
	ck_assert_ptr_eq(idem_find(t, "intent", "r1", 9000), en);
	idem_expire(t, 9000);
	ck_assert_int_eq(idem_count(t), 1);

	ck_assert_ptr_null(idem_complete(en, 200, answer));
	ck_assert_int_eq(en->done, 1);
	ck_assert_uint_eq(en->status, 200);
	/* The answer is copied. */
	ck_assert_ptr_ne(en->response, answer);
	answer[0] = 'X';
	got = idem_find(t, "intent", "r1", 1000);
	ck_assert_ptr_eq(got, en);
	ck_assert_str_eq(got->response, "{\"result\":1}");

	/* A NULL answer is stored as "". */
	en = idem_insert(t, "intent", "r2", 5000);
	idem_complete(en, 503, NULL);
	got = idem_find(t, "intent", "r2", 1000);
	ck_assert_ptr_eq(got, en);
	ck_assert_uint_eq(got->status, 503);
	ck_assert_str_eq(got->response, "");
	idem_free(t);
}
END_TEST

START_TEST(test_expiry_ttl)
{
	struct idem *t = idem_new(100);
	struct idem_entry *a, *b, *c;

	/* TTL 1000 ms, inserted at 1000, 2000, 3000. */
	a = idem_insert(t, "r", "a", 2000);
	b = idem_insert(t, "r", "b", 3000);
	c = idem_insert(t, "r", "c", 4000);
	idem_complete(a, 200, "A");
	idem_complete(b, 200, "B");
	idem_complete(c, 200, "C");

	ck_assert_ptr_eq(idem_find(t, "r", "a", 1999), a);
	ck_assert_ptr_null(idem_find(t, "r", "a", 2000));
	ck_assert_ptr_eq(idem_find(t, "r", "b", 2000), b);

	idem_expire(t, 1999);
	ck_assert_int_eq(idem_count(t), 3);
	idem_expire(t, 3000);
	ck_assert_int_eq(idem_count(t), 1);
	ck_assert_ptr_null(idem_find(t, "r", "a", 0));
	ck_assert_ptr_null(idem_find(t, "r", "b", 0));
	ck_assert_ptr_eq(idem_find(t, "r", "c", 3999), c);
	idem_expire(t, 4000);
	ck_assert_int_eq(idem_count(t), 0);
	ck_assert_ptr_null(idem_find(t, "r", "c", 0));

	/* After the sweep the key can be used again. */
	a = idem_insert(t, "r", "a", 9000);
	ck_assert_ptr_eq(idem_find(t, "r", "a", 5000), a);
	ck_assert_int_eq(a->done, 0);
	idem_free(t);
}
END_TEST

START_TEST(test_capacity_done_only)
{
	struct idem *t = idem_new(2);
	struct idem_entry *a, *b, *c, *d;

	a = idem_insert(t, "r", "a", FAR);
	b = idem_insert(t, "r", "b", FAR);
	c = idem_insert(t, "r", "c", FAR);
	d = idem_insert(t, "r", "d", FAR);
	idem_complete(a, 200, "A");
	idem_complete(b, 200, "B");
	idem_complete(c, 200, "C");
	/* d is in flight. Over capacity: the oldest done entries go. */
	idem_expire(t, 0);
	ck_assert_int_eq(idem_count(t), 2);
	ck_assert_ptr_null(idem_find(t, "r", "a", 0));
	ck_assert_ptr_null(idem_find(t, "r", "b", 0));
	ck_assert_ptr_eq(idem_find(t, "r", "c", 0), c);
	ck_assert_ptr_eq(idem_find(t, "r", "d", 0), d);

	/* In-flight entries are never evicted, even far over capacity. */
	idem_free(t);
	t = idem_new(0);
	a = idem_insert(t, "r", "a", 10);
	b = idem_insert(t, "r", "b", 10);
	idem_expire(t, 100);
	ck_assert_int_eq(idem_count(t), 2);
	ck_assert_ptr_eq(idem_find(t, "r", "a", 100), a);
	ck_assert_ptr_eq(idem_find(t, "r", "b", 100), b);
	/* Once done they go. */
	idem_complete(a, 200, "A");
	idem_expire(t, 0);
	ck_assert_int_eq(idem_count(t), 1);
	ck_assert_ptr_null(idem_find(t, "r", "a", 0));
	ck_assert_ptr_eq(idem_find(t, "r", "b", 100), b);
	idem_free(t);
}
END_TEST

START_TEST(test_remove)
{
	struct idem *t = idem_new(100);
	struct idem_entry *old, *neu;

	old = idem_insert(t, "intent", "r1", 5000);
	idem_remove(t, old);
	ck_assert_ptr_null(idem_find(t, "intent", "r1", 0));

	neu = idem_insert(t, "intent", "r1", 6000);
	ck_assert_ptr_eq(idem_find(t, "intent", "r1", 0), neu);
	ck_assert_int_eq(neu->done, 0);
	idem_complete(neu, 200, "again");
	ck_assert_ptr_eq(idem_find(t, "intent", "r1", 5999), neu);
	ck_assert_str_eq(neu->response, "again");

	/* The removed entry is reclaimed by the sweep, the new one stays. */
	idem_expire(t, 1);
	ck_assert_int_eq(idem_count(t), 1);
	ck_assert_ptr_eq(idem_find(t, "intent", "r1", 5999), neu);

	/* Removing the only entry: invisible, then swept. */
	idem_remove(t, neu);
	ck_assert_ptr_null(idem_find(t, "intent", "r1", 0));
	idem_expire(t, 1);
	ck_assert_int_eq(idem_count(t), 0);
	idem_free(t);
}
END_TEST

START_TEST(test_waiters_handover)
{
	struct idem *t = idem_new(100);
	struct idem_entry *en;
	struct idem_waiter *w, *next;
	int args[3] = {1, 2, 3}, i, n = 0;

	en = idem_insert(t, "intent", "r1", FAR);
	for (i = 0; i < 3; i++) {
		w = xcalloc(1, sizeof *w);
		w->arg = &args[i];
		w->next = en->waiters;
		en->waiters = w;
	}
	w = idem_complete(en, 200, "ok");
	ck_assert_ptr_null(en->waiters);
	for (; w; w = next) {
		next = w->next;
		ck_assert_ptr_eq(w->arg, &args[2 - n]);
		n++;
		free(w);
	}
	ck_assert_int_eq(n, 3);
	/* Nothing left to hand over. */
	ck_assert_ptr_null(idem_complete(en, 200, "ok"));

	/* Waiters still attached at idem_free are released with the entry. */
	en = idem_insert(t, "intent", "r2", FAR);
	en->waiters = xcalloc(1, sizeof *en->waiters);
	idem_free(t);
}
END_TEST

START_TEST(test_byte_budget_evicts_done_entries)
{
	struct idem *t = idem_new(1000);
	char answer[61];
	int i;

	memset(answer, 'a', 60);
	answer[60] = '\0';
	idem_set_max_bytes(t, 100);
	for (i = 0; i < 3; i++) {
		char id[8];
		struct idem_entry *en;

		snprintf(id, sizeof id, "r%d", i);
		en = idem_insert(t, "intent", id, 1000000);
		free(idem_complete(en, 200, answer));
	}
	idem_insert(t, "intent", "in-flight", 1000000); /* never evicted early */
	ck_assert_int_eq(idem_count(t), 4);
	/* 180 bytes of answers > 100: the oldest go until 60 <= 100 */
	idem_expire(t, 10);
	ck_assert_int_eq(idem_count(t), 2);
	ck_assert_ptr_null(idem_find(t, "intent", "r0", 10));
	ck_assert_ptr_null(idem_find(t, "intent", "r1", 10));
	ck_assert_ptr_nonnull(idem_find(t, "intent", "r2", 10));
	ck_assert_ptr_nonnull(idem_find(t, "intent", "in-flight", 10));
	idem_free(t);
}
END_TEST

static Suite *
idem_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"insert_find_per_route", test_insert_find_per_route},
		{"inflight_vs_done", test_inflight_vs_done},
		{"expiry_ttl", test_expiry_ttl},
		{"capacity_done_only", test_capacity_done_only},
		{"remove", test_remove},
		{"waiters_handover", test_waiters_handover},
		{"byte_budget", test_byte_budget_evicts_done_entries},
	};
	Suite *s = suite_create("idem");
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
	SRunner *sr = srunner_create(idem_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
