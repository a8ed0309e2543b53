/*
 * Integration: overload (issue "Reliability"). Ten times more concurrent
 * callers than the bulkheads admit, against a hanging upstream:
 *
 *   - the excess is shed at once: no attempt, reason bulkhead_full, the
 *     daemon's own elapsed_ms <= 5; the admitted calls hold their slots
 *     (the mock never sees more than max_concurrent at once) and still
 *     answer by their deadline;
 *   - round after round, the daemon's thread count does not move (threads
 *     are fixed by design: no thread ever waits on a model), and its RSS
 *     and descriptor count stay flat;
 *   - the daemon-wide max_inflight answers 429 with Retry-After at once;
 *   - when the upstream heals, calls answer from the model again by
 *     themselves (breaker half-open probe, then closed).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "itd.h"

#define HEAD "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
#define RULES                                                                                      \
	"\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0." \
	"3}}"
#define OUTPUT	 "\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\"]}}"
#define TIMEOUTS "\"timeouts\":{\"connect_ms\":300,\"first_byte_ms\":5000,\"total_ms\":5000}"

static struct itd T;

static void
teardown(void)
{
	itd_stop(&T);
}

static int
count_dir(pid_t pid, const char *sub)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, sub);
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static long long
rss_kb(pid_t pid)
{
	char path[64], line[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			v = strtoll(line + 6, NULL, 10);
	fclose(f);
	return v;
}

static int
mock_stat(const char *backend, const char *key)
{
	cJSON *st = mock_stats(&T.mock);
	const cJSON *v = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(st, "backends"), backend), key);
	int n = cJSON_IsNumber(v) ? v->valueint : -1;

	cJSON_Delete(st);
	return n;
}

/*
 * The callers (this thread) and the mock share this machine's CPUs with
 * the daemon; in production they are other processes with their own
 * cores. At equal priority on a small VM the scheduler's arbitration
 * between a 200-connection burst from the load generator and the daemon's
 * engine thread shows up as 8-25 ms of extra wait in the daemon's clock.
 * Lowering the load generator's and the mock's priority (raising their
 * nice value needs no privilege) measures the daemon, not the scheduler.
 */
static void
world_yields(void)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	setpriority(PRIO_PROCESS, 0, 15); /* Linux: this thread only */
	snprintf(path, sizeof path, "/proc/%d/task", (int)T.mock.pid);
	d = opendir(path);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			setpriority(PRIO_PROCESS, (id_t)strtol(de->d_name, NULL, 10), 15);
	closedir(d);
}

/* n concurrent calls to route intent with budget_ms; out[] must hold n. */
static void
storm(int n, int budget_ms, struct http_resp *out)
{
	const char **urls = calloc((size_t)n, sizeof *urls),
		   **bodies = calloc((size_t)n, sizeof *bodies);
	char where[128], body[96];
	int i;

	ck_assert(urls && bodies);
	snprintf(where, sizeof where, "%s/v1/routes/intent/call", T.base);
	snprintf(body, sizeof body, "{\"input\":\"overload\",\"budget_ms\":%d}", budget_ms);
	for (i = 0; i < n; i++) {
		urls[i] = where;
		bodies[i] = body;
	}
	ck_assert_int_eq(http_do_many(n, "POST", urls, bodies, NULL, budget_ms + 10000, out), 0);
	free(urls);
	free(bodies);
}

/* ---- bulkheads shed the excess, resources stay flat ---- */

#define ADMITTED 20 /* primary 10 + backup 10 */
#define CALLERS	 (10 * ADMITTED)
#define ROUNDS	 26
#define RSS_FROM 20 /* SQLite's page cache (2000 KiB) is full by then */
#define BUDGET	 500

static const char *shed_config =
	HEAD "\"backends\":["
	     "{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
	     "completions\",\"model\":\"m\"," TIMEOUTS
	     ",\"max_concurrent\":10,\"breaker\":{\"failure_threshold\":100000}},"
	     "{\"name\":\"backup\",\"url\":\"@MOCK@/b/backup/v1/chat/"
	     "completions\",\"model\":\"s\"," TIMEOUTS
	     ",\"max_concurrent\":10,\"breaker\":{\"failure_threshold\":100000}}],"
	     "\"routes\":[{\"name\":\"intent\",\"budget_ms\":5000,\"targets\":[{\"backend\":"
	     "\"primary\"}],"
	     "\"backup\":{\"targets\":[{\"backend\":\"backup\"}]},"
	     "\"retry\":{\"max_retries\":0}," OUTPUT "," RULES "}]}";

struct round_stats {
	int shed, admitted;
	double shed_p50, shed_p95, shed_worst, admitted_worst, client_worst;
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The shed latencies of every round but the first. */
static double all_shed[ROUNDS * CALLERS];
static int nall_shed;

/* One storm; warm: assert the shed latency (the first storm of a fresh daemon faults in its heap).
 */
static void
shed_round(struct round_stats *rs, int warm)
{
	static struct http_resp out[CALLERS];
	static double shed_ms[CALLERS];
	int i, att;

	memset(rs, 0, sizeof *rs);
	ck_assert_int_eq(mock_reset(&T.mock), 0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"hang\":true}"), 0);
	ck_assert_int_eq(mock_set(&T.mock, "backup", "{\"hang\":true}"), 0);
	storm(CALLERS, BUDGET, out);
	for (i = 0; i < CALLERS; i++) {
		cJSON *o = itd_json(&out[i]);
		double el = itd_num(o, "elapsed_ms");

		ck_assert_msg(out[i].status == 200, "call %d: status %ld %s", i, out[i].status,
			      out[i].body);
		ck_assert_str_eq(itd_str(o, "source"), "rules");
		att = (int)itd_num(o, "attempts");
		if (att == 0) {
			rs->shed++;
			ck_assert_str_eq(itd_str(o, "reason"), "bulkhead_full");
			shed_ms[rs->shed - 1] = el;
		} else {
			ck_assert_int_eq(att, 1);
			rs->admitted++;
			if (el > rs->admitted_worst)
				rs->admitted_worst = el;
		}
		if (out[i].elapsed_ms > rs->client_worst)
			rs->client_worst = out[i].elapsed_ms;
		cJSON_Delete(o);
		http_resp_free(&out[i]);
	}
	ck_assert_int_eq(rs->admitted, ADMITTED);
	ck_assert_int_eq(rs->shed, CALLERS - ADMITTED);
	qsort(shed_ms, (size_t)rs->shed, sizeof shed_ms[0], cmp_double);
	rs->shed_p50 = shed_ms[rs->shed / 2];
	rs->shed_p95 = shed_ms[rs->shed * 95 / 100];
	rs->shed_worst = shed_ms[rs->shed - 1];
	if (warm) {
		memcpy(all_shed + nall_shed, shed_ms, sizeof shed_ms[0] * (size_t)rs->shed);
		nall_shed += rs->shed;
	}
	ck_assert_msg(rs->admitted_worst <=
			      BUDGET + 10 + (itd_sanitized() ? 15 : 0) + (warm ? 0 : 100),
		      "an admitted call answered after %.0f ms", rs->admitted_worst);
	/* The caller's clock also holds connecting 200 sockets through
	 * the engine thread and this (deprioritised) thread's own scheduling. */
	ck_assert_msg(rs->client_worst <= BUDGET + 150 + (itd_sanitized() ? 150 : 0),
		      "a caller waited %.1f ms", rs->client_worst);
	/* the bulkheads held: never more than max_concurrent at the upstream */
	ck_assert_int_eq(mock_stat("primary", "max_inflight"), 10);
	ck_assert_int_eq(mock_stat("backup", "max_inflight"), 10);
	ck_assert_int_eq(mock_stat("primary", "requests"), 10);
	ck_assert_int_eq(mock_stat("backup", "requests"), 10);
}

START_TEST(bulkheads_shed_excess_fast_and_resources_stay_flat)
{
	struct round_stats rs;
	int thr0, thr1 = -1, thr, fd1, fd, r;
	long long rss1 = 0, rss_from = 0, rss, rss_max = 0, bound;

	/* fuseboxd may be linked with jemalloc, which keeps freed pages for
	 * ~10 s before it returns them: purge at once, so RSS follows what is
	 * live (glibc's malloc ignores the variable). */
	setenv("MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0", 1);
	ck_assert_int_eq(itd_start(&T, shed_config), 0);
	unsetenv("MALLOC_CONF");
	world_yields();
	thr0 = count_dir(T.d.pid, "task");
	fd1 = -1;
	for (r = 1; r <= ROUNDS; r++) {
		/* Round 1 warms the allocator, curl and SQLite: no latency bound. */
		shed_round(&rs, r > 1);
		thr = count_dir(T.d.pid, "task");
		fd = count_dir(T.d.pid, "fd");
		rss = rss_kb(T.d.pid);
		if (r == 1) {
			thr1 = thr;
			fd1 = fd;
			rss1 = rss;
		}
		if (r == RSS_FROM)
			rss_from = rss;
		if (r > RSS_FROM && rss > rss_max)
			rss_max = rss;
		fprintf(stderr,
			"overload round %2d: %d callers: %d shed (p50 %.0f, p95 %.0f, max %.0f "
			"ms), %d "
			"admitted (worst %.0f ms), caller worst %.1f ms; threads %d, fds %d, "
			"RSS %lld kB\n",
			r, CALLERS, rs.shed, rs.shed_p50, rs.shed_p95, rs.shed_worst, rs.admitted,
			rs.admitted_worst, rs.client_worst, thr, fd, rss);
		/* Fixed threads: a thread per call or per waiting connection would show
		 * here. Never more than at start; from round 1 on, exactly as many (a
		 * start-up thread may have ended by then: seen under ASan). */
		ck_assert_msg(thr <= thr0 && thr == thr1,
			      "round %d: %d threads, %d at start, %d after round 1", r, thr, thr0,
			      thr1);
		/* Sockets of hung attempts are closed when the attempt ends: the
		 * 20 aborted upstream connections of a round must not pile up. */
		ck_assert_msg(fd <= fd1 + 5, "fds grew from %d to %d", fd1, fd);
	}
	/*
	 * Shed within 5 ms of arrival (the daemon's clock). 180 calls arrive
	 * within a few ms and one engine thread answers them in turn
	 * (~35 us of CPU each), on a machine the test shares with the load
	 * generator, the mock and whatever else runs: over rounds 2-26 the
	 * bound holds for 95 % of them and the slowest stays within 10x of
	 * it. A blocking step on the shed path (a lock, a synchronous write,
	 * a queue behind the bulkhead) would break both.
	 */
	qsort(all_shed, (size_t)nall_shed, sizeof all_shed[0], cmp_double);
	fprintf(stderr,
		"overload: %d shed calls in rounds 2-%d: p50 %.0f, p95 %.0f, p99 %.0f, max %.0f "
		"ms (daemon clock)\n",
		nall_shed, ROUNDS, all_shed[nall_shed / 2], all_shed[nall_shed * 95 / 100],
		all_shed[nall_shed * 99 / 100], all_shed[nall_shed - 1]);
	/* ASan/UBSan make each call 3-10x dearer: the burst's queue is that
	 * much longer; the sanitizer run is about memory, these bounds only
	 * catch a shed path that blocks. */
	ck_assert_msg(all_shed[nall_shed * 95 / 100] <= (itd_sanitized() ? 100 : 5),
		      "shed p95 %.0f ms", all_shed[nall_shed * 95 / 100]);
	ck_assert_msg(all_shed[nall_shed - 1] <= (itd_sanitized() ? 500 : 50),
		      "a shed call took %.0f ms", all_shed[nall_shed - 1]);
	/*
	 * RSS. Until the DB outgrows the writer's SQLite page cache (2000 KiB;
	 * 600 rows a round) RSS climbs ~200 kB a round, for ~15 rounds; then it
	 * is flat (measured over 25 more rounds: 5-10 kB a round, the odd
	 * 60 kB step). Bound: 384 kB over the last 1200 calls, i.e. a leak of
	 * >= 320 bytes per call (one answer JSON, a curl handle, a call) trips
	 * it. Under ASan freed blocks sit in the quarantine (up to 256 MiB): a
	 * loose bound only; LSan at exit catches leaks there.
	 */
	bound = itd_sanitized() ? 64 * 1024 : 384;
	fprintf(stderr,
		"overload: RSS %lld kB after round 1, %lld kB after round %d, worst %lld kB after "
		"rounds %d-%d (+%lld kB, bound +%lld kB); threads %d throughout\n",
		rss1, rss_from, RSS_FROM, rss_max, RSS_FROM + 1, ROUNDS, rss_max - rss_from, bound,
		thr0);
	ck_assert_msg(rss_max - rss_from <= bound, "RSS grew from %lld to %lld kB", rss_from,
		      rss_max);
	itd_settle();
	/* every call logged once; every shed one with its reason */
	ck_assert_int_eq(itd_count(&T, "calls"), ROUNDS * CALLERS);
	ck_assert_int_eq(itd_count(&T, "calls WHERE attempts = 0 AND reason = 'bulkhead_full'"),
			 ROUNDS * (CALLERS - ADMITTED));
	ck_assert_int_eq(itd_count(&T, "attempts"), ROUNDS * ADMITTED);
}
END_TEST

/* ---- max_inflight ---- */

START_TEST(max_inflight_answers_429_at_once)
{
	enum { N = 60, CAP = 20 };
	static struct http_resp out[N];
	int i, n429 = 0, n200 = 0;
	double worst429 = 0;
	char *ra;

	ck_assert_int_eq(
		itd_start(&T, HEAD
			  "\"max_inflight\":20,\"backends\":[{\"name\":\"primary\",\"url\":"
			  "\"@MOCK@/b/primary/v1/chat/completions\",\"model\":\"m\"," TIMEOUTS
			  ",\"max_concurrent\":100,\"breaker\":{\"failure_threshold\":100000}}],"
			  "\"routes\":[{\"name\":\"intent\",\"budget_ms\":5000,"
			  "\"targets\":[{\"backend\":\"primary\"}],\"retry\":{\"max_retries\":0}"
			  "," OUTPUT "," RULES "}]}"),
		0);
	world_yields();
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"hang\":true}"), 0);
	storm(N, BUDGET, out);
	for (i = 0; i < N; i++) {
		if (out[i].status == 429) {
			n429++;
			ra = http_resp_header(&out[i], "Retry-After");
			ck_assert_ptr_nonnull(ra);
			free(ra);
			ck_assert_ptr_nonnull(strstr(out[i].body, "overloaded"));
			if (out[i].elapsed_ms > worst429)
				worst429 = out[i].elapsed_ms;
		} else {
			cJSON *o = itd_json(&out[i]);

			ck_assert_int_eq(out[i].status, 200);
			ck_assert_msg(itd_num(o, "elapsed_ms") <=
					      BUDGET + 10 + (itd_sanitized() ? 15 : 0),
				      "admitted call took %.0f ms", itd_num(o, "elapsed_ms"));
			cJSON_Delete(o);
			n200++;
		}
		http_resp_free(&out[i]);
	}
	fprintf(stderr,
		"overload max_inflight %d: %d callers, %d admitted, %d got 429 (slowest "
		"429 %.1f ms at the caller)\n",
		CAP, N, n200, n429, worst429);
	ck_assert_int_eq(n200, CAP);
	ck_assert_int_eq(n429, N - CAP);
	ck_assert_msg(worst429 <= (itd_sanitized() ? 300 : 100), "a 429 took %.1f ms", worst429);
	ck_assert_int_eq(mock_stat("primary", "requests"), CAP);
}
END_TEST

/* ---- recovery ---- */

START_TEST(recovers_when_the_upstream_heals)
{
	enum { N = 100 };
	static struct http_resp out[N];
	struct http_resp r;
	int64_t healed, end;
	cJSON *o;
	int i, llm = 0, polls = 0;

	ck_assert_int_eq(
		itd_start(&T,
			  HEAD "\"backends\":[{\"name\":\"primary\",\"url\":"
			       "\"@MOCK@/b/primary/v1/chat/completions\",\"model\":\"m\"," TIMEOUTS
			       ",\"max_concurrent\":10,\"breaker\":{\"mode\":\"consecutive\","
			       "\"failure_threshold\":3,\"open_ms\":300,\"half_open_probes\":1}}],"
			       "\"routes\":[{\"name\":\"intent\",\"budget_ms\":5000,"
			       "\"targets\":[{\"backend\":\"primary\"}],\"retry\":{\"max_retries\":"
			       "0}," OUTPUT "," RULES "}]}"),
		0);
	world_yields();
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"hang\":true}"), 0);
	storm(N, BUDGET, out);
	for (i = 0; i < N; i++)
		http_resp_free(&out[i]);
	/* ten timeouts in a row: the breaker is open, calls answer from rules at once */
	ck_assert_int_eq(itd_call(&T, "intent", "{\"input\":\"x\"}", 5000, &r), 0);
	o = itd_json(&r);
	ck_assert_str_eq(itd_str(o, "reason"), "breaker_open");
	ck_assert_msg(itd_num(o, "elapsed_ms") <= (itd_sanitized() ? 15 : 5), "%.0f ms",
		      itd_num(o, "elapsed_ms"));
	cJSON_Delete(o);
	http_resp_free(&r);

	ck_assert_int_eq(mock_set(&T.mock, "primary", "{}"), 0);
	healed = harness_now_ms();
	end = healed + 5000;
	for (;;) {
		ck_assert_msg(harness_now_ms() < end,
			      "no model answer 5 s after the upstream healed");
		ck_assert_int_eq(
			itd_call(&T, "intent", "{\"input\":\"x\",\"budget_ms\":2000}", 5000, &r),
			0);
		ck_assert_int_eq(r.status, 200);
		o = itd_json(&r);
		polls++;
		llm = strcmp(itd_str(o, "source"), "llm") == 0;
		cJSON_Delete(o);
		http_resp_free(&r);
		if (llm)
			break;
		usleep(50 * 1000);
	}
	fprintf(stderr,
		"overload: first model answer %lld ms after the upstream healed (%d calls)\n",
		(long long)(harness_now_ms() - healed), polls);
	/* closed again: a full bulkhead's worth of concurrent calls, all from the model */
	storm(10, 2000, out);
	for (i = 0; i < 10; i++) {
		o = itd_json(&out[i]);
		ck_assert_msg(strcmp(itd_str(o, "source"), "llm") == 0, "call %d: %s", i,
			      out[i].body);
		cJSON_Delete(o);
		http_resp_free(&out[i]);
	}
}
END_TEST

static Suite *
overload_suite(void)
{
	Suite *s = suite_create("overload");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 120)
	ADD(bulkheads_shed_excess_fast_and_resources_stay_flat);
	ADD(max_inflight_answers_429_at_once);
	ADD(recovers_when_the_upstream_heals);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(overload_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
