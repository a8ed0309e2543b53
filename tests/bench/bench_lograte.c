/*
 * bench_lograte: does the store's writer thread keep up with the rows a
 * given call rate produces, without losing any? One producer thread puts,
 * every millisecond, the rows of rate/1000 calls: per call one calls row
 * and one attempts row shaped like the daemon's (input, result, response
 * JSON, raw output), with store_put() exactly as the engine does: a row
 * the queue refuses (STORE_E_FULL) is lost, not retried. After the run
 * the store is flushed and the rows on disk are counted.
 *
 * Usage: bench_lograte [calls_per_s [seconds [dir]]]
 * Prints key=value lines: rate, calls, rows_put, rows_lost, rows_on_disk,
 * achieved_calls_per_s, peak_queue, batches, avg_batch, cpu_s.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define LOGRATE_QUEUE_CAP 65536 /* as fuseboxd's main.c */

static const char lograte_input[] =
	"Hello, I ordered shoes last week and they arrived damaged. I want my money back, "
	"please tell me how to return them.";
static const char lograte_result[] =
	"{\"intent\":\"refund\",\"confidence\":0.92,\"summary\":\"customer wants a refund\"}";
static const char lograte_response[] =
	"{\"request_id\":\"fb-0505266c-2ffd-525c-356a50bc3170\",\"route\":\"intent\","
	"\"result\":{\"intent\":\"refund\",\"confidence\":0.92,\"summary\":\"customer wants a "
	"refund\"},"
	"\"source\":\"llm\",\"backend\":\"primary\",\"level\":0,\"degraded\":false,\"reason\":null,"
	"\"confidence\":0.92,\"review\":\"none\",\"attempts\":1,\"elapsed_ms\":1,\"replayed\":"
	"false}";

static int64_t
lograte_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
lograte_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

/* Put one call's rows; returns the number of rows refused (0..2). */
static int
lograte_call(struct store *st, int64_t id, int64_t wall)
{
	struct store_val c[20], a[17];
	char reqid[48];
	int lost = 0;

	snprintf(reqid, sizeof(reqid), "fb-bench-%012" PRId64, id);
	c[0] = SVI(id);
	c[1] = SVT(reqid);
	c[2] = SVT("intent");
	c[3] = SVI(wall);
	c[4] = SVI(wall + 1);
	c[5] = SVI(1);
	c[6] = SVI(3000);
	c[7] = SVI(0);
	c[8] = SVT("llm");
	c[9] = SVT("primary");
	c[10] = SVI(0);
	c[11] = SVN;
	c[12] = SVI(1);
	c[13] = SVR(0.92);
	c[14] = SVT("none");
	c[15] = SVI(200);
	c[16] = SVT(lograte_input);
	c[17] = SVT(lograte_result);
	c[18] = SVT(lograte_response);
	c[19] = SVT("done");
	a[0] = SVI(id);
	a[1] = SVI(id);
	a[2] = SVT(reqid);
	a[3] = SVT("intent");
	a[4] = SVT("primary");
	a[5] = SVI(1);
	a[6] = SVI(wall);
	a[7] = SVI(3000);
	a[8] = SVI(0);
	a[9] = SVI(1);
	a[10] = SVI(1);
	a[11] = SVI(200);
	a[12] = SVT("ok");
	a[13] = SVN;
	a[14] = SVI(42);
	a[15] = SVI(20);
	a[16] = SVT(lograte_result);
	/* The daemon logs the attempt first, then the call. */
	if (store_put(st, STORE_ATTEMPT_INSERT, a, 17) != 0)
		lost++;
	if (store_put(st, STORE_CALL_INSERT, c, 20) != 0)
		lost++;
	return lost;
}

int
main(int argc, char **argv)
{
	struct store *st = NULL;
	struct store_reader *rd = NULL;
	struct store_stats stats;
	const char *base = "/tmp";
	char tmpl[512], path[600], *cause = NULL;
	double rate = 20000;
	int secs = 10, status = 1, made_dir = 0;
	int64_t t0, end, now, tick, due = 0, calls = 0, lost = 0, peak = 0, c0, c1, t1;
	int64_t on_disk_calls, on_disk_attempts, wall0 = 1767225600000;

	if (argc > 1)
		rate = strtod(argv[1], NULL);
	if (argc > 2)
		secs = (int)strtol(argv[2], NULL, 10);
	if (argc > 3)
		base = argv[3];
	if (rate < 1 || rate > 1e7 || secs < 1 || secs > 600) {
		fprintf(stderr, "usage: bench_lograte [calls_per_s [seconds(1..600) [dir]]]\n");
		return 2;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/bench_lograte.XXXXXX", base);
	if (mkdtemp(tmpl) == NULL) {
		fprintf(stderr, "bench_lograte: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	made_dir = 1;
	snprintf(path, sizeof(path), "%s/fusebox.db", tmpl);
	if (store_open(path, LOGRATE_QUEUE_CAP, &st, &cause) != 0) {
		fprintf(stderr, "bench_lograte: %s\n", cause);
		goto out;
	}

	c0 = lograte_cpu_us();
	t0 = lograte_now_us();
	end = t0 + (int64_t)secs * 1000000;
	for (tick = t0; (now = lograte_now_us()) < end;) {
		/* Every call due by now: the schedule does not drift. */
		due = (int64_t)((double)(now - t0) * rate / 1e6);
		while (calls < due) {
			lost += lograte_call(st, calls + 1, wall0 + calls);
			calls++;
		}
		store_get_stats(st, &stats);
		if ((int64_t)stats.queued > peak)
			peak = (int64_t)stats.queued;
		tick += 1000;
		if (tick > now) {
			struct timespec ts = {0, (long)(tick - now) * 1000};

			nanosleep(&ts, NULL);
		}
	}
	t1 = lograte_now_us();
	store_flush(st);
	c1 = lograte_cpu_us();
	store_get_stats(st, &stats);
	store_close(st);
	st = NULL;

	if (store_reader_open(path, &rd, &cause) != 0) {
		fprintf(stderr, "bench_lograte: %s\n", cause);
		goto out;
	}
	on_disk_calls = store_reader_int(rd, "SELECT count(*) FROM calls", NULL, 0, -1);
	on_disk_attempts = store_reader_int(rd, "SELECT count(*) FROM attempts", NULL, 0, -1);
	printf("rate=%.0f\nseconds=%d\ncalls=%" PRId64 "\nrows_put=%" PRId64 "\nrows_lost=%" PRId64
	       "\nrows_on_disk=%" PRId64 "\nachieved_calls_per_s=%.0f\nrows_per_s=%.0f\n"
	       "peak_queue=%" PRId64 "\nqueue_cap=%d\nbatches=%" PRIu64 "\navg_batch=%.0f\n"
	       "max_batch=%" PRIu64 "\ncpu_s=%.3f\n",
	       rate, secs, calls, 2 * calls, lost, on_disk_calls + on_disk_attempts,
	       (double)calls * 1e6 / (double)(t1 - t0),
	       (double)(2 * calls) * 1e6 / (double)(t1 - t0), peak, LOGRATE_QUEUE_CAP,
	       stats.batches,
	       stats.batches ? (double)stats.rows_written / (double)stats.batches : 0.0,
	       stats.max_batch_rows, (double)(c1 - c0) / 1e6);
	status = lost == 0 && on_disk_calls + on_disk_attempts == 2 * calls ? 0 : 1;
out:
	store_close(st);
	store_reader_close(rd);
	free(cause);
	if (made_dir) {
		const char *sfx[] = {"", "-wal", "-shm"};
		size_t i;

		for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
			snprintf(path, sizeof(path), "%s/fusebox.db%s", tmpl, sfx[i]);
			unlink(path);
		}
		rmdir(tmpl);
	}
	return status;
}
