/*
 * test_cache: key normalisation and the in-memory table with literal wall
 * times (no store: st is NULL).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache.h"

/* Route names by number, so the tests read as before. */
static const char *
rn(int i)
{
	static const char *const names[] = {"r0", "r1", "r2", "r3"};

	return names[i];
}

/* Put input on route at now with result {"intent": intent} and confidence conf. */
static void
put(struct cache *c, int route, const char *input, const char *intent, double conf, int64_t now)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "intent", intent);
	cache_put(c, rn(route), input, r, 1, conf, now, NULL);
	cJSON_Delete(r); /* the cache keeps its own copy */
}

/* The intent stored for input, or NULL on a miss. */
static const char *
get(struct cache *c, int route, const char *input, int ttl_s, int64_t now)
{
	const cJSON *res = NULL, *v;
	int has_conf = -1;
	double conf = -1;

	if (cache_get(c, rn(route), input, ttl_s, now, &res, &has_conf, &conf) == CACHE_E_MISS)
		return NULL;
	ck_assert_ptr_nonnull(res);
	v = cJSON_GetObjectItemCaseSensitive(res, "intent");
	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

START_TEST(test_key_normalise)
{
	struct {
		const char *in, *want;
	} cases[] = {
		{"hello", "hello"},
		{"  Hello World  ", "hello world"},
		{"a   b", "a b"},
		{"a\t\tb\n\nc\r\nd", "a b c d"},
		{"\f\v x \t\n", "x"},
		{"MiXeD CaSe 123 !?", "mixed case 123 !?"},
		/* UTF-8 bytes are left alone (no Unicode case folding). */
		{"ÄPFEL Über", "Äpfel Über"},
		{"  你好  世界 ", "你好 世界"},
		{"", ""},
		{" \t\n ", ""},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *k = cache_key(cases[i].in);

		ck_assert_msg(strcmp(k, cases[i].want) == 0, "case %zu: got \"%s\"", i, k);
		free(k);
	}
}
END_TEST

START_TEST(test_put_get_per_route)
{
	struct cache *c = cache_new(100);
	const cJSON *res = NULL;
	int has_conf = -1;
	double conf = -1;

	ck_assert_int_eq(cache_count(c), 0);
	ck_assert_ptr_null(get(c, 0, "where is my parcel", 60, 1000));
	put(c, 0, "Where is  my parcel", "track", 0.9, 1000);
	put(c, 1, "where is my parcel", "other", 0.4, 1000);
	ck_assert_int_eq(cache_count(c), 2);

	/* Looked up through the same normalisation. */
	ck_assert_str_eq(get(c, 0, "  WHERE is my\tparcel ", 60, 2000), "track");
	ck_assert_str_eq(get(c, 1, "where is my parcel", 60, 2000), "other");
	ck_assert_ptr_null(get(c, 2, "where is my parcel", 60, 2000));
	ck_assert_ptr_null(get(c, 0, "where is my parcels", 60, 2000));

	ck_assert_int_eq(cache_get(c, "r0", "where is my parcel", 60, 2000, &res, &has_conf, &conf),
			 0);
	ck_assert_int_eq(has_conf, 1);
	ck_assert_double_eq_tol(conf, 0.9, 1e-12);

	/* Without a confidence. */
	{
		cJSON *r = cJSON_CreateObject();

		cache_put(c, "r0", "no conf", r, 0, 0.0, 1000, NULL);
		cJSON_Delete(r);
	}
	ck_assert_int_eq(cache_get(c, "r0", "no conf", 60, 2000, &res, &has_conf, &conf), 0);
	ck_assert_int_eq(has_conf, 0);
	cache_free(c);
	cache_free(NULL);
}
END_TEST

START_TEST(test_ttl)
{
	struct cache *c = cache_new(100);

	put(c, 0, "q", "a", 0.5, 1000);
	ck_assert_str_eq(get(c, 0, "q", 10, 1000), "a");
	ck_assert_str_eq(get(c, 0, "q", 10, 11000), "a");
	ck_assert_ptr_null(get(c, 0, "q", 10, 11001));
	/* The TTL is the caller's: a longer one still finds it. */
	ck_assert_str_eq(get(c, 0, "q", 20, 11001), "a");
	ck_assert_ptr_null(get(c, 0, "q", 0, 1001));
	cache_free(c);
}
END_TEST

START_TEST(test_capacity_oldest_first)
{
	struct cache *c = cache_new(3);

	put(c, 0, "a", "A", 1, 1000);
	put(c, 1, "b", "B", 1, 2000);
	put(c, 0, "c", "C", 1, 3000);
	ck_assert_int_eq(cache_count(c), 3);
	put(c, 0, "d", "D", 1, 4000);
	ck_assert_int_eq(cache_count(c), 3);
	ck_assert_ptr_null(get(c, 0, "a", 3600, 5000));
	ck_assert_str_eq(get(c, 1, "b", 3600, 5000), "B");
	ck_assert_str_eq(get(c, 0, "c", 3600, 5000), "C");
	ck_assert_str_eq(get(c, 0, "d", 3600, 5000), "D");
	put(c, 0, "e", "E", 1, 5000);
	put(c, 0, "f", "F", 1, 6000);
	ck_assert_int_eq(cache_count(c), 3);
	ck_assert_ptr_null(get(c, 1, "b", 3600, 7000));
	ck_assert_ptr_null(get(c, 0, "c", 3600, 7000));
	ck_assert_str_eq(get(c, 0, "d", 3600, 7000), "D");
	ck_assert_str_eq(get(c, 0, "f", 3600, 7000), "F");
	cache_free(c);
}
END_TEST

START_TEST(test_replace)
{
	struct cache *c = cache_new(2);
	const cJSON *res;
	int has_conf;
	double conf;

	put(c, 0, "Refund please", "refund", 0.6, 1000);
	put(c, 0, "refund   PLEASE", "refund_v2", 0.8, 5000);
	ck_assert_int_eq(cache_count(c), 1);
	ck_assert_int_eq(cache_get(c, "r0", "refund please", 10, 5000, &res, &has_conf, &conf), 0);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(res, "intent")->valuestring, "refund_v2");
	ck_assert_double_eq_tol(conf, 0.8, 1e-12);
	/* The TTL counts from the replacing put. */
	ck_assert_str_eq(get(c, 0, "refund please", 10, 15000), "refund_v2");
	ck_assert_ptr_null(get(c, 0, "refund please", 10, 15001));

	/* A replaced entry is the newest: the capacity evicts the other one. */
	put(c, 0, "other", "x", 0.5, 6000);
	put(c, 0, "refund please", "refund_v3", 0.9, 7000);
	put(c, 0, "third", "y", 0.5, 8000);
	ck_assert_int_eq(cache_count(c), 2);
	ck_assert_ptr_null(get(c, 0, "other", 3600, 9000));
	ck_assert_str_eq(get(c, 0, "refund please", 3600, 9000), "refund_v3");
	ck_assert_str_eq(get(c, 0, "third", 3600, 9000), "y");
	cache_free(c);
}
END_TEST

START_TEST(test_expire_oldest_first)
{
	struct cache *c = cache_new(100);

	put(c, 0, "a", "A", 1, 1000);
	put(c, 1, "b", "B", 1, 2000);
	put(c, 0, "c", "C", 1, 3000);
	/* a re-put makes "a" the newest */
	put(c, 0, "a", "A2", 1, 4000);
	ck_assert_int_eq(cache_expire(c, 1000), 0);
	ck_assert_int_eq(cache_expire(c, 2001), 1); /* b */
	ck_assert_int_eq(cache_count(c), 2);
	ck_assert_ptr_null(get(c, 1, "b", 3600, 5000));
	ck_assert_str_eq(get(c, 0, "a", 3600, 5000), "A2");
	ck_assert_int_eq(cache_expire(c, 4000), 1); /* c, not a (stored at 4000) */
	ck_assert_str_eq(get(c, 0, "a", 3600, 5000), "A2");
	ck_assert_ptr_null(get(c, 0, "c", 3600, 5000));
	/* the table still works after emptying */
	ck_assert_int_eq(cache_expire(c, 10000), 1);
	ck_assert_int_eq(cache_count(c), 0);
	ck_assert_int_eq(cache_expire(c, 20000), 0);
	put(c, 0, "d", "D", 1, 30000);
	ck_assert_str_eq(get(c, 0, "d", 10, 30000), "D");
	ck_assert_int_eq(cache_count(c), 1);
	cache_free(c);
}
END_TEST

START_TEST(test_store_null)
{
	struct cache *c = cache_new(10);
	cJSON *r = cJSON_Parse("{\"intent\":\"track\",\"n\":[1,2]}");
	const cJSON *res;
	int has_conf;
	double conf;

	/* No store: the put stays in memory only. */
	cache_put(c, "r1", "x", r, 1, 0.7, 1000, NULL);
	ck_assert_int_eq(cache_count(c), 1);
	ck_assert_int_eq(cache_get(c, "r1", "x", 60, 1000, &res, &has_conf, &conf), 0);
	ck_assert(cJSON_Compare(res, r, 1));
	ck_assert_ptr_ne(res, r);
	cJSON_Delete(r);
	cache_free(c);
}
END_TEST

static Suite *
cache_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"key_normalise", test_key_normalise},
		{"put_get_per_route", test_put_get_per_route},
		{"ttl", test_ttl},
		{"capacity_oldest_first", test_capacity_oldest_first},
		{"replace", test_replace},
		{"expire_oldest_first", test_expire_oldest_first},
		{"store_null", test_store_null},
	};
	Suite *s = suite_create("cache");
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
	SRunner *sr = srunner_create(cache_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
