/*
 * bench_store: sustained attempt rows per second through the store's writer
 * thread (batched transactions, WAL, synchronous=NORMAL), plus the latency
 * of store_commit_now() (synchronous=FULL) while the writer is idle.
 *
 * Usage: bench_store [rows [producer_threads [dir]]]
 * Producers retry a row the queue refused after a short sleep, so every row
 * is written; the figure is rows written / (first put .. flush returned).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define BENCH_QUEUE_CAP 65536
#define BENCH_COMMITS	200

struct bench_producer {
	struct store *st;
	int64_t first_id;
	int64_t rows;
	uint64_t refused;
};

static int64_t
bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *
bench_produce(void *arg)
{
	static const char raw[] =
		"{\"label\":\"positive\",\"confidence\":0.93,"
		"\"reasons\":[\"the customer thanks the agent\",\"no complaint\"]}";
	struct bench_producer *p = arg;
	struct timespec pause = {0, 100 * 1000};
	struct store_val v[17];
	char reqid[32];
	int64_t i, id;
	int rc;

	for (i = 0; i < p->rows; i++) {
		id = p->first_id + i;
		snprintf(reqid, sizeof(reqid), "req-%" PRId64, id / 3);
		v[0] = SVI(id);
		v[1] = SVI(id / 3);
		v[2] = SVT(reqid);
		v[3] = SVT("sentiment");
		v[4] = SVT("openai-primary");
		v[5] = SVI(id % 3 + 1);
		v[6] = SVI(1767225600000 + id);
		v[7] = SVI(2000);
		v[8] = SVI(3);
		v[9] = SVI(180);
		v[10] = SVI(420);
		v[11] = SVI(200);
		v[12] = SVT("ok");
		v[13] = SVN;
		v[14] = SVI(512);
		v[15] = SVI(48);
		v[16] = SVT(raw);
		while ((rc = store_put(p->st, STORE_ATTEMPT_INSERT, v, 17)) == STORE_E_FULL) {
			p->refused++;
			nanosleep(&pause, NULL);
		}
		if (rc != 0) {
			fprintf(stderr, "bench_store: store_put: %d\n", rc);
			exit(1);
		}
	}
	return NULL;
}

/* CPU time (user + system) this process has used, in microseconds. */
static int64_t
bench_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static int
bench_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	struct bench_producer prod[64];
	pthread_t threads[64];
	struct store_stats stats;
	struct store_op op;
	struct store_val jv[8];
	struct store *st = NULL;
	int64_t rows = 1000000, t0, t1, c0, c1, lat[BENCH_COMMITS], per;
	uint64_t refused = 0;
	const char *base = "/tmp";
	char tmpl[512], path[600], reqid[32], *cause = NULL;
	int nthreads = 1, i, rc, status = 1, made_dir = 0;

	if (argc > 1)
		rows = strtoll(argv[1], NULL, 10);
	if (argc > 2)
		nthreads = (int)strtol(argv[2], NULL, 10);
	if (argc > 3)
		base = argv[3];
	if (rows < 1 || nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "usage: bench_store [rows [threads(1..64) "
				"[dir]]]\n");
		status = 2;
		goto out;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/bench_store.XXXXXX", base);
	if (mkdtemp(tmpl) == NULL) {
		fprintf(stderr, "bench_store: mkdtemp %s: %s\n", tmpl, strerror(errno));
		goto out;
	}
	made_dir = 1;
	snprintf(path, sizeof(path), "%s/fusebox.db", tmpl);
	rc = store_open(path, BENCH_QUEUE_CAP, &st, &cause);
	if (rc != 0) {
		fprintf(stderr, "bench_store: %s\n", cause);
		goto out;
	}

	per = rows / nthreads;
	c0 = bench_cpu_us();
	t0 = bench_now_us();
	for (i = 0; i < nthreads; i++) {
		prod[i].st = st;
		prod[i].first_id = 1 + (int64_t)i * per;
		prod[i].rows = i == nthreads - 1 ? rows - per * i : per;
		prod[i].refused = 0;
		pthread_create(&threads[i], NULL, bench_produce, &prod[i]);
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(threads[i], NULL);
		refused += prod[i].refused;
	}
	store_flush(st);
	t1 = bench_now_us();
	c1 = bench_cpu_us();
	store_get_stats(st, &stats);
	printf("attempt rows:     %" PRId64 " from %d producer thread(s)\n", rows, nthreads);
	printf("elapsed:          %.3f s\n", (double)(t1 - t0) / 1e6);
	printf("throughput:       %.0f rows/s\n", (double)rows * 1e6 / (double)(t1 - t0));
	printf("cpu:              %.3f s (user+sys, all threads): %.0f rows "
	       "per CPU-second\n",
	       (double)(c1 - c0) / 1e6, (double)rows * 1e6 / (double)(c1 - c0));
	printf("batches:          %" PRIu64 " (max %" PRIu64 " rows, "
	       "avg %.0f)\n",
	       stats.batches, stats.max_batch_rows,
	       stats.batches ? (double)stats.rows_written / (double)stats.batches : 0.0);
	printf("queue-full waits: %" PRIu64 ", row errors %" PRIu64 "\n", refused, stats.errors);

	for (i = 0; i < BENCH_COMMITS; i++) {
		snprintf(reqid, sizeof(reqid), "job-%d", i);
		jv[0] = SVT(reqid);
		jv[1] = SVT("sentiment");
		jv[2] = SVT("queued");
		jv[3] = SVT("{\"text\":\"hello\"}");
		jv[4] = SVI(1767225600000);
		jv[5] = SVI(1767225600000);
		jv[6] = SVI(0);
		jv[7] = SVN;
		op = (struct store_op){STORE_JOB_INSERT, jv, 8};
		t0 = bench_now_us();
		rc = store_commit_now(st, &op, 1, NULL, &cause);
		lat[i] = bench_now_us() - t0;
		if (rc != 0) {
			fprintf(stderr, "bench_store: commit_now: %s\n", cause);
			goto out;
		}
	}
	qsort(lat, BENCH_COMMITS, sizeof(lat[0]), bench_cmp);
	printf("commit_now:       p50 %.2f ms, p99 %.2f ms (synchronous=FULL, "
	       "%d commits)\n",
	       (double)lat[BENCH_COMMITS / 2] / 1000.0,
	       (double)lat[BENCH_COMMITS * 99 / 100] / 1000.0, BENCH_COMMITS);

	status = 0;
out:
	store_close(st);
	free(cause);
	if (made_dir) {
		snprintf(path, sizeof(path), "%s/fusebox.db", tmpl);
		unlink(path);
		snprintf(path, sizeof(path), "%s/fusebox.db-wal", tmpl);
		unlink(path);
		snprintf(path, sizeof(path), "%s/fusebox.db-shm", tmpl);
		unlink(path);
		rmdir(tmpl);
	}
	return status;
}
