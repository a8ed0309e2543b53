/*
 * test_bulkhead: slots, the FIFO of waiters and reloads.
 */
#include <check.h>
#include <stdlib.h>

#include "bulkhead.h"

START_TEST(test_enter_full)
{
	struct bulkhead b;
	int i;

	bulkhead_init(&b, 3);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(bulkhead_enter(&b), 0);
	ck_assert_int_eq(b.inflight, 3);
	ck_assert_int_eq(bulkhead_enter(&b), BULKHEAD_E_FULL);
	ck_assert_int_eq(bulkhead_enter(&b), BULKHEAD_E_FULL);
	ck_assert_uint_eq(b.rejected, 2);
	ck_assert_int_eq(b.inflight, 3);
	ck_assert_ptr_null(bulkhead_leave(&b));
	ck_assert_int_eq(b.inflight, 2);
	ck_assert_int_eq(bulkhead_enter(&b), 0);
}
END_TEST

START_TEST(test_zero_max)
{
	struct bulkhead b;

	bulkhead_init(&b, 0);
	ck_assert_int_eq(bulkhead_enter(&b), BULKHEAD_E_FULL);
	ck_assert_ptr_null(bulkhead_leave(&b)); /* nothing held: no-op */
	ck_assert_int_eq(b.inflight, 0);
}
END_TEST

START_TEST(test_fifo_handoff)
{
	struct bulkhead_waiter w[3] = {{0}};
	struct bulkhead b;
	int i;

	bulkhead_init(&b, 1);
	ck_assert_int_eq(bulkhead_enter(&b), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(bulkhead_enter(&b), BULKHEAD_E_FULL);
		w[i].arg = &w[i];
		bulkhead_enqueue(&b, &w[i]);
		ck_assert_int_eq(w[i].queued, 1);
	}
	ck_assert_int_eq(b.nwaiting, 3);
	/* Each leave hands the slot to the oldest waiter. */
	for (i = 0; i < 3; i++) {
		ck_assert_ptr_eq(bulkhead_leave(&b), &w[i]);
		ck_assert_int_eq(w[i].queued, 0);
		ck_assert_int_eq(b.inflight, 1);
		ck_assert_int_eq(b.nwaiting, 2 - i);
		/* Nobody overtakes while the slot is handed over. */
		ck_assert_int_eq(bulkhead_enter(&b), BULKHEAD_E_FULL);
	}
	ck_assert_ptr_null(bulkhead_leave(&b));
	ck_assert_int_eq(b.inflight, 0);
	ck_assert_ptr_null(b.head);
	ck_assert_ptr_null(b.tail);
}
END_TEST

START_TEST(test_cancel_middle)
{
	struct bulkhead_waiter w[4] = {{0}};
	struct bulkhead b;
	int i;

	bulkhead_init(&b, 1);
	ck_assert_int_eq(bulkhead_enter(&b), 0);
	for (i = 0; i < 4; i++)
		bulkhead_enqueue(&b, &w[i]);
	bulkhead_cancel(&b, &w[1]);
	ck_assert_int_eq(w[1].queued, 0);
	ck_assert_int_eq(b.nwaiting, 3);
	bulkhead_cancel(&b, &w[1]); /* not queued: no-op */
	ck_assert_int_eq(b.nwaiting, 3);
	bulkhead_cancel(&b, &w[3]); /* the tail */
	ck_assert_ptr_eq(b.tail, &w[2]);
	bulkhead_cancel(&b, &w[0]); /* the head */
	ck_assert_ptr_eq(b.head, &w[2]);
	ck_assert_int_eq(b.nwaiting, 1);
	ck_assert_ptr_eq(bulkhead_leave(&b), &w[2]);
	ck_assert_int_eq(b.nwaiting, 0);
	ck_assert_ptr_null(b.head);
	ck_assert_ptr_null(b.tail);
	/* A cancelled waiter can queue again. */
	bulkhead_enqueue(&b, &w[1]);
	bulkhead_enqueue(&b, &w[1]); /* already queued: no-op */
	ck_assert_int_eq(b.nwaiting, 1);
	ck_assert_ptr_eq(bulkhead_leave(&b), &w[1]);
	ck_assert_ptr_null(bulkhead_leave(&b));
	ck_assert_int_eq(b.inflight, 0);
}
END_TEST

START_TEST(test_high_water)
{
	struct bulkhead b;

	bulkhead_init(&b, 5);
	ck_assert_int_eq(b.high_water, 0);
	bulkhead_enter(&b);
	bulkhead_enter(&b);
	bulkhead_enter(&b);
	ck_assert_int_eq(b.high_water, 3);
	bulkhead_leave(&b);
	bulkhead_leave(&b);
	bulkhead_enter(&b);
	ck_assert_int_eq(b.inflight, 2);
	ck_assert_int_eq(b.high_water, 3);
	bulkhead_enter(&b);
	bulkhead_enter(&b);
	ck_assert_int_eq(b.high_water, 4);
}
END_TEST

START_TEST(test_set_max_lower)
{
	struct bulkhead_waiter w = {0};
	struct bulkhead b;

	bulkhead_init(&b, 3);
	bulkhead_enter(&b);
	bulkhead_enter(&b);
	bulkhead_enter(&b);
	bulkhead_enqueue(&b, &w);
	bulkhead_set_max(&b, 1);
	ck_assert_int_eq(bulkhead_enter(&b), BULKHEAD_E_FULL);
	/* Inflight drains to the new cap before the waiter gets a slot. */
	ck_assert_ptr_null(bulkhead_leave(&b));
	ck_assert_ptr_null(bulkhead_leave(&b));
	ck_assert_int_eq(b.inflight, 1);
	ck_assert_ptr_eq(bulkhead_leave(&b), &w);
	ck_assert_int_eq(b.inflight, 1);
}
END_TEST

START_TEST(test_set_max_raise)
{
	struct bulkhead_waiter w[3] = {{0}};
	struct bulkhead b;
	int i;

	bulkhead_init(&b, 1);
	bulkhead_enter(&b);
	for (i = 0; i < 3; i++)
		bulkhead_enqueue(&b, &w[i]);
	ck_assert_ptr_null(bulkhead_next(&b));
	bulkhead_set_max(&b, 3);
	ck_assert_ptr_eq(bulkhead_next(&b), &w[0]);
	ck_assert_ptr_eq(bulkhead_next(&b), &w[1]);
	ck_assert_ptr_null(bulkhead_next(&b));
	ck_assert_int_eq(b.inflight, 3);
	ck_assert_int_eq(b.high_water, 3);
	ck_assert_int_eq(b.nwaiting, 1);
	ck_assert_ptr_eq(bulkhead_leave(&b), &w[2]);
}
END_TEST

static Suite *
bulkhead_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"enter_full", test_enter_full},       {"zero_max", test_zero_max},
		{"fifo_handoff", test_fifo_handoff},   {"cancel_middle", test_cancel_middle},
		{"high_water", test_high_water},       {"set_max_lower", test_set_max_lower},
		{"set_max_raise", test_set_max_raise},
	};
	Suite *s = suite_create("bulkhead");
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
	SRunner *sr = srunner_create(bulkhead_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
