/*
 * test_timerheap: the timer min-heap with literal times and a seeded rng.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "timerheap.h"

#define NT 1000

/* What the recording callback writes: the at_us of every timer it ran, in order. */
struct log {
	int64_t at[4 * NT];
	struct timer *who[4 * NT];
	int n;
	int armed_inside; /* timer_armed(t) seen inside the last callback */
};

static void
record_cb(struct timer *t, void *arg)
{
	struct log *lg = arg;

	if (lg->n == 4 * NT)
		ck_abort_msg("too many callbacks");
	lg->at[lg->n] = t->at_us;
	lg->who[lg->n] = t;
	lg->n++;
	lg->armed_inside = timer_armed(t);
}

/*
 * The heap invariant: parent <= child and v[i]->index == i. One assertion
 * per call: Check reports every assertion to its parent process.
 */
static void
check_heap(const struct timerheap *h)
{
	int i, bad = -1;

	for (i = 0; i < h->n && bad < 0; i++) {
		if (h->v[i]->index != i || (i > 0 && h->v[(i - 1) / 2]->at_us > h->v[i]->at_us))
			bad = i;
	}
	ck_assert_msg(bad < 0, "heap invariant broken at %d of %d", bad, h->n);
}

static void
check_sorted(const struct log *lg)
{
	int i, bad = -1;

	for (i = 1; i < lg->n && bad < 0; i++)
		if (lg->at[i - 1] > lg->at[i])
			bad = i;
	ck_assert_msg(bad < 0, "ran out of order at %d", bad);
}

START_TEST(test_random_order)
{
	static struct timer t[NT];
	static struct log lg;
	struct timerheap h;
	struct rng r;
	int64_t min = INT64_MAX;
	int i, ran;

	memset(&lg, 0, sizeof lg);
	rng_seed(&r, 20261130);
	timerheap_init(&h);
	for (i = 0; i < NT; i++) {
		int64_t at = (int64_t)(rng_u64(&r) % 1000000);

		timer_init(&t[i], "random", record_cb, &lg);
		timerheap_arm(&h, &t[i], at);
		if (at < min)
			min = at;
		ck_assert_int_eq(timerheap_next(&h), min);
	}
	ck_assert_int_eq(h.n, NT);
	check_heap(&h);

	/* Nothing is due before the earliest deadline. */
	ck_assert_int_eq(timerheap_run(&h, min - 1), 0);
	ck_assert_int_eq(lg.n, 0);

	/* Advance in steps: each run fires exactly the timers due by then. */
	for (int64_t now = 0; now < 1000000; now += 50000) {
		int before = lg.n;

		ran = timerheap_run(&h, now);
		ck_assert_int_eq(ran, lg.n - before);
		for (i = before; i < lg.n; i++)
			ck_assert_int_le(lg.at[i], now);
		ck_assert_int_gt(timerheap_next(&h), now);
		check_heap(&h);
	}
	i = lg.n;
	ran = timerheap_run(&h, 1000000);
	ck_assert_int_eq(ran, NT - i);
	ck_assert_int_eq(lg.n, NT);
	ck_assert_int_eq(h.n, 0);
	check_sorted(&lg);
	for (i = 0; i < NT; i++)
		ck_assert(!timer_armed(&t[i]));
	ck_assert_int_eq(timerheap_next(&h), INT64_MAX);
	timerheap_free(&h);
	ck_assert_ptr_null(h.v);
	ck_assert_int_eq(h.n, 0);
}
END_TEST

START_TEST(test_cancel_middle)
{
	static struct timer t[NT];
	static struct log lg;
	static char cancelled[NT], seen[NT];
	struct timerheap h;
	struct rng r;
	int i, ncancelled = 0;

	memset(&lg, 0, sizeof lg);
	memset(cancelled, 0, sizeof cancelled);
	memset(seen, 0, sizeof seen);
	rng_seed(&r, 7);
	timerheap_init(&h);
	for (i = 0; i < NT; i++) {
		timer_init(&t[i], "c", record_cb, &lg);
		timerheap_arm(&h, &t[i], (int64_t)(rng_u64(&r) % 100000));
	}
	/* Cancel whatever sits in the middle of the array, 400 times. */
	for (i = 0; i < 400; i++) {
		struct timer *victim = h.v[h.n / 2];

		timerheap_cancel(&h, victim);
		cancelled[victim - t] = 1;
		ncancelled++;
		ck_assert(!timer_armed(victim));
		ck_assert_int_eq(victim->index, -1);
		ck_assert_int_eq(h.n, NT - ncancelled);
		check_heap(&h);
	}
	/* And some random ones (some already cancelled: a no-op). */
	for (i = 0; i < 200; i++) {
		struct timer *victim = &t[rng_u64(&r) % NT];
		int was = timer_armed(victim), n = h.n;

		ck_assert_int_eq(was, !cancelled[victim - t]);
		timerheap_cancel(&h, victim);
		ck_assert_int_eq(h.n, was ? n - 1 : n);
		if (was)
			ncancelled++;
		cancelled[victim - t] = 1;
		check_heap(&h);
	}
	ck_assert_int_gt(ncancelled, 400);
	ck_assert_int_eq(timerheap_run(&h, INT64_MAX), NT - ncancelled);
	ck_assert_int_eq(lg.n, NT - ncancelled);
	check_sorted(&lg);
	/* Every survivor ran exactly once; no cancelled timer ran. */
	for (i = 0; i < lg.n; i++) {
		int k = (int)(lg.who[i] - t);

		ck_assert_int_eq(cancelled[k], 0);
		ck_assert_int_eq(seen[k], 0);
		seen[k] = 1;
	}
	timerheap_free(&h);
}
END_TEST

START_TEST(test_rearm)
{
	struct timer a, b, c;
	struct log lg;
	struct timerheap h;

	memset(&lg, 0, sizeof lg);
	timerheap_init(&h);
	timer_init(&a, "a", record_cb, &lg);
	timer_init(&b, "b", record_cb, &lg);
	timer_init(&c, "c", record_cb, &lg);
	timerheap_arm(&h, &a, 100);
	timerheap_arm(&h, &b, 200);
	timerheap_arm(&h, &c, 300);

	/* Later: a moves behind c; the heap does not grow. */
	timerheap_arm(&h, &a, 400);
	ck_assert_int_eq(h.n, 3);
	ck_assert_int_eq(a.at_us, 400);
	ck_assert_int_eq(timerheap_next(&h), 200);
	check_heap(&h);

	/* Earlier: c moves to the front. */
	timerheap_arm(&h, &c, 50);
	ck_assert_int_eq(h.n, 3);
	ck_assert_int_eq(timerheap_next(&h), 50);
	check_heap(&h);

	ck_assert_int_eq(timerheap_run(&h, 399), 2);
	ck_assert_int_eq(lg.n, 2);
	ck_assert_ptr_eq(lg.who[0], &c);
	ck_assert_ptr_eq(lg.who[1], &b);
	ck_assert(timer_armed(&a));
	ck_assert_int_eq(timerheap_run(&h, 400), 1);
	ck_assert_ptr_eq(lg.who[2], &a);

	/* A fired timer can be armed again. */
	timerheap_arm(&h, &a, 1000);
	ck_assert(timer_armed(&a));
	ck_assert_int_eq(timerheap_next(&h), 1000);
	ck_assert_int_eq(timerheap_run(&h, 1000), 1);
	ck_assert_int_eq(lg.n, 4);
	timerheap_free(&h);
}
END_TEST

/* Context for callbacks that arm timers. */
struct chain {
	struct timerheap *h;
	struct timer *next; /* armed by the callback */
	int64_t next_at;
	int ran;
	int armed_inside;
};

static void
chain_cb(struct timer *t, void *arg)
{
	struct chain *ch = arg;

	ch->ran++;
	ch->armed_inside = timer_armed(t);
	if (ch->next)
		timerheap_arm(ch->h, ch->next, ch->next_at);
}

START_TEST(test_callback_arms_due_now)
{
	struct timerheap h;
	struct timer a, b, c;
	struct chain ca, cb, cc;

	timerheap_init(&h);
	memset(&ca, 0, sizeof ca);
	memset(&cb, 0, sizeof cb);
	memset(&cc, 0, sizeof cc);
	ca.h = cb.h = cc.h = &h;
	/* a (due 100) arms b due 100; b arms c due 150 (now is 150). */
	ca.next = &b;
	ca.next_at = 100;
	cb.next = &c;
	cb.next_at = 150;
	timer_init(&a, "a", chain_cb, &ca);
	timer_init(&b, "b", chain_cb, &cb);
	timer_init(&c, "c", chain_cb, &cc);
	timerheap_arm(&h, &a, 100);

	ck_assert_int_eq(timerheap_run(&h, 150), 3);
	ck_assert_int_eq(ca.ran, 1);
	ck_assert_int_eq(cb.ran, 1);
	ck_assert_int_eq(cc.ran, 1);
	ck_assert_int_eq(h.n, 0);

	/* Armed in the future: it waits for a later run. */
	cc.next = &a;
	cc.next_at = 151;
	ca.next = NULL;
	timerheap_arm(&h, &c, 150);
	ck_assert_int_eq(timerheap_run(&h, 150), 1);
	ck_assert(timer_armed(&a));
	ck_assert_int_eq(timerheap_next(&h), 151);
	ck_assert_int_eq(timerheap_run(&h, 151), 1);
	ck_assert_int_eq(ca.ran, 2);
	timerheap_free(&h);
}
END_TEST

static void
self_rearm_cb(struct timer *t, void *arg)
{
	struct chain *ch = arg;

	ch->ran++;
	ch->armed_inside = timer_armed(t);
	timerheap_arm(ch->h, t, t->at_us + 1000);
}

START_TEST(test_callback_rearms_itself)
{
	struct timerheap h;
	struct timer a;
	struct chain ch;

	timerheap_init(&h);
	memset(&ch, 0, sizeof ch);
	ch.h = &h;
	ch.armed_inside = -1;
	timer_init(&a, "tick", self_rearm_cb, &ch);
	timerheap_arm(&h, &a, 1000);
	/* Disarmed before its callback; re-armed at 2000, 3000, 4000 within one run. */
	ck_assert_int_eq(timerheap_run(&h, 3500), 3);
	ck_assert_int_eq(ch.ran, 3);
	ck_assert_int_eq(ch.armed_inside, 0);
	ck_assert(timer_armed(&a));
	ck_assert_int_eq(timerheap_next(&h), 4000);
	timerheap_free(&h);
}
END_TEST

START_TEST(test_next)
{
	struct timerheap h;
	struct timer a, b, c;
	struct log lg;

	memset(&lg, 0, sizeof lg);
	timerheap_init(&h);
	ck_assert_int_eq(timerheap_next(&h), INT64_MAX);
	timer_init(&a, "a", record_cb, &lg);
	timer_init(&b, "b", record_cb, &lg);
	timer_init(&c, "c", record_cb, &lg);
	timerheap_arm(&h, &a, 500);
	ck_assert_int_eq(timerheap_next(&h), 500);
	timerheap_arm(&h, &b, -20);
	ck_assert_int_eq(timerheap_next(&h), -20);
	timerheap_arm(&h, &c, 300);
	ck_assert_int_eq(timerheap_next(&h), -20);
	timerheap_cancel(&h, &b);
	ck_assert_int_eq(timerheap_next(&h), 300);
	ck_assert_int_eq(timerheap_run(&h, 300), 1);
	ck_assert_int_eq(timerheap_next(&h), 500);
	timerheap_cancel(&h, &a);
	ck_assert_int_eq(timerheap_next(&h), INT64_MAX);
	ck_assert_int_eq(timerheap_run(&h, INT64_MAX), 0);
	timerheap_free(&h);
}
END_TEST

START_TEST(test_armed)
{
	struct timerheap h;
	struct timer a, b;
	struct log lg;

	memset(&lg, 0, sizeof lg);
	lg.armed_inside = -1;
	timerheap_init(&h);
	timer_init(&a, "deadline", record_cb, &lg);
	timer_init(&b, "backoff", record_cb, &lg);
	ck_assert(!timer_armed(&a));
	ck_assert_int_eq(a.index, -1);
	ck_assert_str_eq(a.name, "deadline");
	ck_assert_ptr_eq(a.arg, &lg);

	/* Cancelling a timer that is not armed changes nothing. */
	timerheap_arm(&h, &b, 10);
	timerheap_cancel(&h, &a);
	ck_assert_int_eq(h.n, 1);
	ck_assert(timer_armed(&b));
	ck_assert_int_eq(b.index, 0);

	timerheap_arm(&h, &a, 5);
	ck_assert(timer_armed(&a));
	timerheap_cancel(&h, &a);
	ck_assert(!timer_armed(&a));
	timerheap_cancel(&h, &a);
	ck_assert_int_eq(h.n, 1);
	ck_assert_ptr_eq(h.v[0], &b);

	ck_assert_int_eq(timerheap_run(&h, 10), 1);
	ck_assert_int_eq(lg.armed_inside, 0);
	ck_assert(!timer_armed(&b));
	timerheap_free(&h);
}
END_TEST

static Suite *
timerheap_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"random_order", test_random_order},
		{"cancel_middle", test_cancel_middle},
		{"rearm", test_rearm},
		{"callback_arms_due_now", test_callback_arms_due_now},
		{"callback_rearms_itself", test_callback_rearms_itself},
		{"next", test_next},
		{"armed", test_armed},
	};
	Suite *s = suite_create("timerheap");
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
	SRunner *sr = srunner_create(timerheap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
