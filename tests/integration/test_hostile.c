/*
 * Integration: hostile callers (issue 27) through the real fuseboxd and
 * fusebox-mockllm on 127.0.0.1.
 *
 * F1: with 400,000 calls rows in the last minute, /v1/state's route
 * figures take seconds to read; the reader's deadline cuts them (503) and
 * calls made meanwhile still answer within their budget; an unknown
 * request id is one index probe. F5: callbacks go only where
 * callbacks.allow says, checked before DNS when the URL names an address
 * and after it at connect time (only 127.0.0.1 and 127.0.0.2 are ever
 * involved). F6: on a full disk (a 6 MiB tmpfs mounted in a mount
 * namespace of this test's own) the daemon keeps answering, shows
 * storage_degraded, fails promises loudly, and tells every lost row once
 * space is back; long inputs are stored cut and marked. F9: the DB files
 * are 0600. F2 (the rest is in test_abuse.c): under an address-space
 * limit set on the running daemon (prlimit(2), so the allocator's own
 * failure is what is seen, jemalloc or glibc alike), a body that cannot
 * be buffered is answered 503 with Retry-After, never an abort, while
 * /healthz and calls go on; SIGTERM still exits 0.
 */
#include <check.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "itd.h"
#include "store.h"

#define VIEW "view-token"
#define OP   "op-token"

static struct itd T;

/* One backend "primary" on the mock, route "intent"; db: absolute path or @DB@; extra: top keys. */
static char *
config(const char *db, int budget_ms, const char *extra)
{
	char *cfg = NULL;

	if (asprintf(&cfg,
		     "{\"listen\":\"127.0.0.1:0\",\"database\":\"%s\",\"tokens_file\":\"tokens\"%s%"
		     "s,"
		     "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
		     "completions\",\"model\":\"m\",\"breaker\":{\"failure_threshold\":100000}}],"
		     "\"routes\":[{\"name\":\"intent\",\"budget_ms\":%d,\"retry\":{\"max_retries\":"
		     "0},"
		     "\"targets\":[{\"backend\":\"primary\",\"weight\":1}],"
		     "\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"},"
		     "\"confidence\":0.3}}}]}",
		     db, extra[0] ? "," : "", extra, budget_ms) < 0)
		abort();
	return cfg;
}

static void
teardown(void)
{
	itd_stop(&T);
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- F1: reads on the engine thread are bounded ---- */

/* A migrated DB at path with n calls rows of route intent finished just now. */
static void
db_prefill(const char *path, int n)
{
	struct store *st = NULL;
	char *cause = NULL, *sql = NULL, *err = NULL;
	sqlite3 *db;
	int64_t now = wall_ms();

	ck_assert_msg(store_open(path, 16, &st, &cause) == 0, "%s", cause);
	store_close(st);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_ge(
		asprintf(&sql,
			 "BEGIN; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
			 "FROM c WHERE x < %d) INSERT INTO calls (id, request_id, route, "
			 "started_at, finished_at, elapsed_ms, budget_ms, level, source, "
			 "http_status, status) SELECT x, 'pre-' || x, 'intent', %lld, %lld, "
			 "(x * 7919) %% 1000, 1000, 0, 'llm', 200, 'done' FROM c; COMMIT",
			 n, (long long)now, (long long)now),
		0);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "%s", err);
	sqlite3_close(db);
	free(sql);
}

struct state_loop {
	pthread_t th;
	volatile int stop;
	int answers, slow, worst_ms;
};

static void *
state_loop_main(void *arg)
{
	struct state_loop *l = arg;
	struct http_resp r;

	while (!l->stop) {
		memset(&r, 0, sizeof r);
		itd_req(&T, "GET", "/v1/state", NULL, VIEW, 20000, &r);
		l->answers++;
		l->slow += r.status == 503;
		if (r.elapsed_ms > l->worst_ms)
			l->worst_ms = (int)r.elapsed_ms;
		http_resp_free(&r);
	}
	return NULL;
}

START_TEST(slow_reads_keep_the_deadline)
{
	char *dir = harness_tmpdir(), path[256], *cfg;
	struct state_loop loop;
	struct http_resp r;
	double worst = 0, worst_daemon = 0;
	cJSON *o;
	int i;

	snprintf(path, sizeof path, "%s/prefilled.db", dir);
	db_prefill(path, 400000);
	cfg = config(path, 300, "\"database_read_timeout_ms\":40");
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);

	/* an unknown id is an index probe, not a scan of 400,000 rows */
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/requests/no-such-id", NULL, NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 404);
	ck_assert_msg(r.elapsed_ms < 100, "unknown id took %.1f ms", r.elapsed_ms);
	http_resp_free(&r);

	/* the route figures need the whole minute's 400,000 rows: cut, 503 */
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/state", NULL, VIEW, 20000, &r), 0);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(r.body, "storage_slow"));
	ck_assert_msg(r.elapsed_ms < 250, "/v1/state took %.1f ms", r.elapsed_ms);
	http_resp_free(&r);

	/* two clients read /v1/state in a loop; calls still meet their 300 ms */
	memset(&loop, 0, sizeof loop);
	ck_assert_int_eq(pthread_create(&loop.th, NULL, state_loop_main, &loop), 0);
	sleep_ms(100);
	for (i = 0; i < 20; i++) {
		memset(&r, 0, sizeof r);
		ck_assert_int_eq(itd_call(&T, "intent", "{\"input\":\"x\"}", 5000, &r), 0);
		ck_assert_int_eq(r.status, 200);
		o = itd_json(&r);
		if (itd_num(o, "elapsed_ms") > worst_daemon)
			worst_daemon = itd_num(o, "elapsed_ms");
		cJSON_Delete(o);
		if (r.elapsed_ms > worst)
			worst = r.elapsed_ms;
		http_resp_free(&r);
	}
	loop.stop = 1;
	pthread_join(loop.th, NULL);
	fprintf(stderr,
		"slow reads: %d /v1/state answers (%d cut, slowest %d ms); calls: slowest %.1f ms "
		"(daemon %.0f ms)\n",
		loop.answers, loop.slow, loop.worst_ms, worst, worst_daemon);
	ck_assert_int_gt(loop.slow, 0);
	ck_assert_msg(loop.worst_ms < 400, "a /v1/state answer took %d ms", loop.worst_ms);
	ck_assert_msg(worst_daemon <= 300, "a call took %.0f ms on a 300 ms budget", worst_daemon);
	ck_assert_msg(worst < 300 + 150 + (itd_sanitized() ? 150 : 0), "a call answered in %.1f ms",
		      worst);
	itd_stop(&T);
	unlink(path);
	snprintf(path, sizeof path, "%s/prefilled.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/prefilled.db-shm", dir);
	unlink(path);
	rmdir(dir);
	free(dir);
}
END_TEST

/* ---- F9: file modes ---- */

START_TEST(db_files_are_private)
{
	char *cfg = config("@DB@", 1000, ""), p[300];
	struct stat sb;

	umask(0);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);
	cJSON_Delete(
		itd_expect(&T, "POST", "/v1/routes/intent/call", "{\"input\":\"x\"}", NULL, 200));
	itd_settle();
	ck_assert_int_eq(stat(T.db, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	snprintf(p, sizeof p, "%s-wal", T.db);
	ck_assert_int_eq(stat(p, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	snprintf(p, sizeof p, "%s-shm", T.db);
	ck_assert_int_eq(stat(p, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
}
END_TEST

START_TEST(db_files_shared_with_a_group)
{
	char extra[64], *cfg, p[300];
	struct stat sb;

	umask(0);
	snprintf(extra, sizeof extra, "\"database_group\":\"%u\"", (unsigned)getgid());
	cfg = config("@DB@", 1000, extra);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);
	ck_assert_int_eq(stat(T.db, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0640);
	ck_assert_int_eq(sb.st_gid, getgid());
	snprintf(p, sizeof p, "%s-wal", T.db);
	ck_assert_int_eq(stat(p, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0640);
}
END_TEST

/* ---- F5: callbacks.allow ---- */

/* A tiny HTTP server on addr (127.0.0.x) and port (0: any) that counts requests. */
struct cb_server {
	int fd, port;
	pthread_t th;
	volatile int stop;
	int requests;
	pthread_mutex_t lock;
};

static void *
cb_main(void *arg)
{
	static const char ok[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	struct cb_server *s = arg;
	struct pollfd pfd = {s->fd, POLLIN, 0};
	char buf[4096];
	ssize_t n;
	int c;

	while (!s->stop) {
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		c = accept(s->fd, NULL, NULL);
		if (c < 0)
			continue;
		/* headers and a small body arrive in a read or two */
		n = read(c, buf, sizeof buf);
		if (n > 0 && memmem(buf, (size_t)n, "\r\n\r\n", 4) != NULL) {
			pthread_mutex_lock(&s->lock);
			s->requests++;
			pthread_mutex_unlock(&s->lock);
			if (write(c, ok, sizeof ok - 1) < 0)
				perror("cb write");
		}
		close(c);
	}
	return NULL;
}

static void
cb_start(struct cb_server *s, const char *addr, int port)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int one = 1;

	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->fd, 0);
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	ck_assert_int_eq(inet_pton(AF_INET, addr, &a.sin_addr), 1);
	ck_assert_int_eq(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(s->fd, 16), 0);
	ck_assert_int_eq(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&s->th, NULL, cb_main, s), 0);
}

static int
cb_requests(struct cb_server *s)
{
	int n;

	pthread_mutex_lock(&s->lock);
	n = s->requests;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void
cb_stop(struct cb_server *s)
{
	s->stop = 1;
	pthread_join(s->th, NULL);
	close(s->fd);
	pthread_mutex_destroy(&s->lock);
}

/* An async call with callback_url url: the answer's status. */
static long
async_call(const char *url, const char *id)
{
	struct http_resp r;
	char body[512];
	long status;

	snprintf(body, sizeof body,
		 "{\"input\":\"x\",\"mode\":\"async\",\"request_id\":\"%s\",\"callback_url\":\"%"
		 "s\"}",
		 id, url);
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(itd_call(&T, "intent", body, 5000, &r), 0);
	status = r.status;
	if (getenv("FB_DEBUG"))
		fprintf(stderr, "%s: %ld %s\n", url, status, r.body);
	if (status == 400)
		ck_assert_msg(strstr(r.body, "callback_url") != NULL, "%s", r.body);
	http_resp_free(&r);
	return status;
}

START_TEST(callbacks_go_only_where_allowed)
{
	struct cb_server a, b, a2;
	char extra[128], url[128], *cfg;
	int i;

	cb_start(&a, "127.0.0.1", 0);
	cb_start(&b, "127.0.0.1", 0);
	/* the same port on 127.0.0.2: a request reaching it was let through wrongly */
	cb_start(&a2, "127.0.0.2", a.port);
	snprintf(extra, sizeof extra, "\"callbacks\":{\"allow\":[\"127.0.0.1:%d\"]}", a.port);
	cfg = config("@DB@", 1000, extra);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);

	/* refused before anything is sent: the address or port is not allowed */
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", b.port);
	ck_assert_int_eq(async_call(url, "cb-port-b"), 400);
	snprintf(url, sizeof url, "http://127.0.0.2:%d/hook", a.port);
	ck_assert_int_eq(async_call(url, "cb-127-0-0-2"), 400);
	snprintf(url, sizeof url, "http://[::ffff:127.0.0.2]:%d/hook", a.port);
	ck_assert_int_eq(async_call(url, "cb-mapped"), 400);
	/*
	 * 2130706434 is 127.0.0.2 written as one number: not an address to the
	 * check before DNS, it is refused where the connection is made
	 */
	snprintf(url, sizeof url, "http://2130706434:%d/hook", a.port);
	ck_assert_int_eq(async_call(url, "cb-numeric"), 202);
	/* allowed: delivered */
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", a.port);
	ck_assert_int_eq(async_call(url, "cb-ok"), 202);
	for (i = 0; i < 100 && cb_requests(&a) < 1; i++)
		sleep_ms(50);
	ck_assert_int_eq(cb_requests(&a), 1);
	sleep_ms(1500); /* a wrongly allowed callback would have been retried by now */
	ck_assert_int_eq(cb_requests(&a), 1);
	ck_assert_int_eq(cb_requests(&b), 0);
	ck_assert_int_eq(cb_requests(&a2), 0);
	cb_stop(&a);
	cb_stop(&b);
	cb_stop(&a2);
}
END_TEST

/* A pattern that is none of the four forms is a config error naming it. */
START_TEST(bad_allow_patterns_are_config_errors)
{
	char *dir = harness_tmpdir(), *bin = harness_path("daemon/fuseboxd"), path[256], cmd[1024];
	char *cfg = config("x.db", 1000,
			   "\"callbacks\":{\"allow\":[\"127.0.0.1:7001\",\"10.0.0.1/8\","
			   "\"http://h/\",7]}");
	char out[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "%s/bad.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(cfg, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "'%s' --check-config -c '%s' 2>&1; echo \"exit $?\"", bin, path);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	pclose(f);
	ck_assert_msg(strstr(out, "callbacks.allow[1]: the address has bits set past the prefix") !=
			      NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "callbacks.allow[2]: a pattern, not a URL") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "callbacks.allow[3]: must be a string") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "callbacks.allow[0]") == NULL, "%s", out);
	ck_assert_msg(strstr(out, "exit 1") != NULL, "%s", out);
	unlink(path);
	rmdir(dir);
	free(cfg);
	free(bin);
	free(dir);
}
END_TEST

START_TEST(no_callbacks_without_an_allow_list)
{
	struct cb_server a;
	char url[128], *cfg = config("@DB@", 1000, "");

	cb_start(&a, "127.0.0.1", 0);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", a.port);
	ck_assert_int_eq(async_call(url, "cb-none"), 400);
	snprintf(url, sizeof url, "http://localhost:%d/hook", a.port);
	ck_assert_int_eq(async_call(url, "cb-none-2"), 400);
	sleep_ms(300);
	ck_assert_int_eq(cb_requests(&a), 0);
	cb_stop(&a);
}
END_TEST

/* ---- F6: a full disk ---- */

/* Fill the file system of dir: a file that grows until ENOSPC. Its path into out. */
static void
disk_fill(const char *dir, char *out, size_t outlen)
{
	static char block[65536];
	ssize_t n;
	int fd;

	snprintf(out, outlen, "%s/filler", dir);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(block, 'f', sizeof block);
	while ((n = write(fd, block, sizeof block)) > 0)
		;
	ck_assert_int_eq(errno, ENOSPC);
	/* the last few bytes too */
	while (write(fd, block, 1) == 1)
		;
	close(fd);
}

/* /v1/state's storage object (caller deletes the state it belongs to). */
static cJSON *
storage_of(cJSON **state)
{
	*state = itd_expect(&T, "GET", "/v1/state", NULL, VIEW, 200);
	return cJSON_GetObjectItem(*state, "storage");
}

START_TEST(full_disk_is_seen_and_counted)
{
	char dir[] = "/tmp/fusebox-tmpfs-XXXXXX", db[128], filler[160], input[12001], body[12100];
	char *cfg, *in;
	cJSON *st, *so, *h;
	double dropped;
	long long told = 0;
	int i;

	/* a mount namespace of this test process (and the daemons it starts) */
	ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_msg(mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=6m,mode=0700") == 0,
		      "mount: %s", strerror(errno));
	snprintf(db, sizeof db, "%s/fusebox.db", dir);
	cfg = config(db, 1000, "\"log\":{\"max_input_bytes\":2048}");
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);

	/* a 12,000-byte input is stored as its first 2048 bytes and a mark */
	memset(input, 'x', sizeof input - 1);
	input[sizeof input - 1] = '\0';
	snprintf(body, sizeof body, "{\"input\":\"%s\",\"request_id\":\"long-1\"}", input);
	cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/intent/call", body, NULL, 200));
	itd_settle();
	in = db_scalar_text(db, "SELECT input FROM calls WHERE request_id = 'long-1'");
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(strstr(in, STORE_TRUNCATED_MARK));
	ck_assert_int_lt(strlen(in), 2048 + 64);
	free(in);
	so = storage_of(&st);
	ck_assert_str_eq(itd_str(so, "state"), "ok");
	ck_assert_int_eq((int)itd_num(so, "log_rows_dropped"), 0);
	ck_assert_int_ge((int)itd_num(so, "log_rows_truncated"), 1);
	cJSON_Delete(st);

	disk_fill(dir, filler, sizeof filler);
	/* calls are still answered; their rows cannot be written */
	for (i = 0; i < 40; i++) {
		snprintf(body, sizeof body, "{\"input\":\"%.3000s\"}", input);
		cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/intent/call", body, NULL, 200));
	}
	itd_settle();
	sleep_ms(300);
	so = storage_of(&st);
	ck_assert_str_eq(itd_str(so, "state"), "storage_degraded");
	ck_assert_int_ge((int)itd_num(so, "log_rows_dropped"), 40);
	ck_assert_str_ne(itd_str(so, "last_error"), "");
	cJSON_Delete(st);
	h = itd_expect(&T, "GET", "/healthz", NULL, NULL, 200);
	ck_assert_str_eq(itd_str(h, "status"), "degraded");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(h, "detail"), "storage"), "storage_degraded");
	cJSON_Delete(h);
	/* a promise that cannot be kept fails to its caller */
	itd_expect_error(&T, "PUT", "/v1/routes/intent/level",
			 "{\"level\":2,\"reason\":\"disk full drill\"}", OP, 500, "store_error",
			 "persist");

	/* space again: new rows land, and the lost ones are told in events */
	ck_assert_int_eq(unlink(filler), 0);
	for (i = 0; i < 5; i++)
		cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/intent/call",
					"{\"input\":\"after\"}", NULL, 200));
	so = storage_of(&st);
	dropped = itd_num(so, "log_rows_dropped");
	cJSON_Delete(st);
	for (i = 0; i < 150 && told < (long long)dropped; i++) {
		sleep_ms(100);
		told = db_scalar_int(db, "SELECT coalesce(sum(CAST(detail AS INTEGER)), 0) FROM "
					 "events WHERE kind = 'log_rows_dropped'");
	}
	fprintf(stderr, "full disk: %.0f log rows dropped, %lld told in events\n", dropped, told);
	ck_assert_int_eq(told, (long long)dropped);
	ck_assert_int_ge(db_scalar_int(db, "SELECT count(*) FROM calls WHERE input = 'after'"), 5);
	itd_stop(&T);
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}
END_TEST

/* ---- F2: an allocation that fails on a request path answers 503 ---- */

#define OOM_HEADROOM_MB 48  /* address space left to the daemon over what it maps */
#define OOM_BODY_MB	128 /* a body that needs more than that to be buffered */

/* VmSize of pid in bytes (its mapped address space, what RLIMIT_AS caps); -1 when unknown. */
static long long
vm_size(pid_t pid)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmSize: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* Cap the daemon's address space at what it maps now + headroom_mb (0: lift the cap). */
static void
cap_address_space(int headroom_mb)
{
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
	long long vm = vm_size(T.d.pid);

	ck_assert_int_gt(vm, 0);
	if (headroom_mb > 0)
		rl.rlim_cur = (rlim_t)vm + (rlim_t)headroom_mb * 1024 * 1024;
	ck_assert_msg(prlimit(T.d.pid, RLIMIT_AS, &rl, NULL) == 0, "prlimit: %s", strerror(errno));
}

/* {"input":1,"pad":"xxx..."}: valid JSON of n bytes, refused (400) once parsed. */
static char *
big_body(size_t n)
{
	static const char head[] = "{\"input\":1,\"pad\":\"", tail[] = "\"}";
	char *b = malloc(n + 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, head, sizeof head - 1);
	memset(b + sizeof head - 1, 'x', n - (sizeof head - 1) - (sizeof tail - 1));
	memcpy(b + n - (sizeof tail - 1), tail, sizeof tail);
	return b;
}

static void
expect_serving(void)
{
	struct http_resp r;

	ck_assert_int_eq(itd_req(&T, "GET", "/healthz", NULL, NULL, 10000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	ck_assert_int_eq(itd_call(&T, "intent", "{\"input\":\"hello\"}", 10000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
}

START_TEST(failed_allocation_answers_503_not_abort)
{
	struct http_resp r;
	char *cfg, *body, *ra, extra[160];
	cJSON *o;
	int i, rc;

	if (itd_sanitized() || getenv("FB_DAEMON_WRAPPER")) {
		/* ASan reserves terabytes of shadow memory: no RLIMIT_AS fits it;
		 * valgrind's own mappings would be capped too. */
		fprintf(stderr, "failed_allocation_answers_503_not_abort: an address-space limit "
				"cannot be set under a sanitizer or FB_DAEMON_WRAPPER: skipped\n");
		return;
	}
	/* Neither body cap refuses it: what refuses it is the failed allocation. */
	snprintf(extra, sizeof extra, "\"max_body_bytes\":%d,\"max_buffered_body_bytes\":%d",
		 2 * OOM_BODY_MB * 1024 * 1024, 4 * OOM_BODY_MB * 1024 * 1024);
	cfg = config("@DB@", 3000, extra);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);
	body = big_body((size_t)OOM_BODY_MB * 1024 * 1024);
	expect_serving(); /* warm: every lazy start-up allocation is made */
	cap_address_space(OOM_HEADROOM_MB);
	for (i = 0; i < 3; i++) {
		rc = itd_call(&T, "intent", body, 60000, &r);
		ck_assert_msg(rc == 0, "round %d: transfer failed (%d): did the daemon die?", i,
			      rc);
		ck_assert_int_eq(r.status, 503);
		ra = http_resp_header(&r, "Retry-After");
		ck_assert_ptr_nonnull(ra);
		ck_assert_int_ge(strtol(ra, NULL, 10), 1);
		free(ra);
		o = itd_json(&r);
		ck_assert_ptr_nonnull(o);
		ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "type"), "server_error");
		ck_assert_str_ne(itd_str(cJSON_GetObjectItem(o, "error"), "code"), "");
		cJSON_Delete(o);
		http_resp_free(&r);
		/* the small ones are still served, under the same limit */
		expect_serving();
	}
	ck_assert_int_eq(kill(T.d.pid, 0), 0);
	/* a clean exit at SIGTERM, under the limit still */
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	/* Without the limit the same body is buffered and parsed (400: input
	 * is not a string): the 503 was the failed allocation, not a cap. */
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	ck_assert_int_eq(itd_call(&T, "intent", body, 60000, &r), 0);
	ck_assert_int_eq(r.status, 400);
	http_resp_free(&r);
	free(body);
}
END_TEST

static Suite *
hostile_suite(void)
{
	Suite *s = suite_create("hostile");

	ITD_ADD_TEST(s, slow_reads_keep_the_deadline, NULL, teardown, 120);
	ITD_ADD_TEST(s, db_files_are_private, NULL, teardown, 60);
	ITD_ADD_TEST(s, db_files_shared_with_a_group, NULL, teardown, 60);
	ITD_ADD_TEST(s, callbacks_go_only_where_allowed, NULL, teardown, 60);
	ITD_ADD_TEST(s, no_callbacks_without_an_allow_list, NULL, teardown, 60);
	ITD_ADD_TEST(s, bad_allow_patterns_are_config_errors, NULL, NULL, 30);
	ITD_ADD_TEST(s, full_disk_is_seen_and_counted, NULL, teardown, 90);
	ITD_ADD_TEST(s, failed_allocation_answers_503_not_abort, NULL, teardown, 120);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(hostile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
