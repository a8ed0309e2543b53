/*
 * Integration: crash durability under load (issue "Reliability"). Twenty
 * times over (ten in the sanitizer build, which is there for memory
 * errors: the loss figures come from the plain one; FB_CRASH_ITERATIONS
 * sets it): run a mixed load against fuseboxd — sync calls, async jobs
 * (mode async), operator level overrides, review decisions when the review
 * API exists — and kill -9 the daemon at a random moment (seeded: the
 * seed is printed, FB_CRASH_SEED replays it). After each restart:
 *
 *   - every job answered 202 completes exactly once: its jobs row is
 *     done, one calls row holds its request_id, and the upstream saw its
 *     X-Request-ID at least once; no job is left queued or running;
 *   - every override answered 200 is there: the overrides row is the last
 *     answered one (or one still in flight at the kill), and every answered
 *     one has its audit row; GET /v1/state shows it restored;
 *   - PRAGMA integrity_check says ok;
 *   - sync calls answered 200 whose calls row is missing are the last
 *     writer batch only: none answered more than LOSS_WINDOW_MS before the
 *     kill, never more than one batch (1000 rows). The worst loss is printed.
 *
 * The upstream is fusebox-mockllm behind a small TCP proxy in this process
 * that records the X-Request-ID of every request it forwards.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "itd.h"

#define CONCURRENCY 24
#define OPS_MAX	    8192
#define PROXY_CONNS 256
#define BATCH_ROWS  1000 /* the store writer's batch (db/store_writer.c) */

static struct itd T;

/* A call answered this long before the kill must have its calls row. */
static int
loss_window_ms(void)
{
	return itd_sanitized() ? 1000 : 250;
}

/* Kill -9 cycles: 20, 10 in the sanitizer build, FB_CRASH_ITERATIONS when set (1..1000). */
static int
iterations(void)
{
	const char *v = getenv("FB_CRASH_ITERATIONS");
	long n = v ? strtol(v, NULL, 10) : 0;

	if (n >= 1 && n <= 1000)
		return (int)n;
	return itd_sanitized() ? 10 : 20;
}

static uint64_t rng_state;

static uint64_t
rng_next(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static int
rng_range(int lo, int hi)
{
	return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1));
}

/* ---- the recording proxy ---- */

struct pconn {
	int down; /* the daemon's side */
	int up;	  /* the mock's side */
	char line[512];
	size_t llen;
	int skip;
};

static struct proxy {
	int lfd;
	int port;
	int mock_port;
	volatile int stop;
	pthread_t thread;
	pthread_mutex_t lock;
	char **ids; /* every X-Request-ID forwarded, under lock */
	int nids;
	int cap;
	struct pconn conns[PROXY_CONNS];
	int nconns;
} P;

static void
proxy_record(const char *id, size_t len)
{
	pthread_mutex_lock(&P.lock);
	if (P.nids == P.cap) {
		P.cap = P.cap ? P.cap * 2 : 1024;
		P.ids = realloc(P.ids, sizeof *P.ids * (size_t)P.cap);
		if (P.ids == NULL)
			abort();
	}
	P.ids[P.nids] = strndup(id, len);
	if (P.ids[P.nids] == NULL)
		abort();
	P.nids++;
	pthread_mutex_unlock(&P.lock);
}

static int
proxy_saw(const char *id)
{
	int i, found = 0;

	pthread_mutex_lock(&P.lock);
	for (i = 0; i < P.nids && !found; i++)
		found = strcmp(P.ids[i], id) == 0;
	pthread_mutex_unlock(&P.lock);
	return found;
}

/* Look at the bytes going up for "X-Request-ID:" header lines. */
static void
proxy_sniff(struct pconn *c, const char *p, size_t n)
{
	size_t i, v, e;

	for (i = 0; i < n; i++) {
		if (p[i] != '\n') {
			if (c->llen < sizeof c->line)
				c->line[c->llen++] = p[i];
			else
				c->skip = 1;
			continue;
		}
		if (!c->skip && c->llen > 13 && strncasecmp(c->line, "X-Request-ID:", 13) == 0) {
			for (v = 13; v < c->llen && c->line[v] == ' '; v++)
				;
			for (e = c->llen;
			     e > v && (c->line[e - 1] == '\r' || c->line[e - 1] == ' '); e--)
				;
			proxy_record(c->line + v, e - v);
		}
		c->llen = 0;
		c->skip = 0;
	}
}

static int
send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
connect_loopback(int port)
{
	struct sockaddr_in sin;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
proxy_drop(int i)
{
	close(P.conns[i].down);
	close(P.conns[i].up);
	P.conns[i] = P.conns[--P.nconns];
}

static void *
proxy_main(void *arg)
{
	struct pollfd pfd[1 + 2 * PROXY_CONNS];
	char buf[65536];
	int i, n, fd, up;
	ssize_t r;

	while (!P.stop) {
		pfd[0].fd = P.lfd;
		pfd[0].events = POLLIN;
		for (i = 0; i < P.nconns; i++) {
			pfd[1 + 2 * i].fd = P.conns[i].down;
			pfd[1 + 2 * i].events = POLLIN;
			pfd[2 + 2 * i].fd = P.conns[i].up;
			pfd[2 + 2 * i].events = POLLIN;
		}
		n = 1 + 2 * P.nconns;
		if (poll(pfd, (nfds_t)n, 50) <= 0)
			continue;
		/* Back to front: proxy_drop moves the last pair into slot i. */
		for (i = P.nconns - 1; i >= 0; i--) {
			struct pconn *c = &P.conns[i];
			int bad = 0;

			if (pfd[1 + 2 * i].revents) {
				r = read(c->down, buf, sizeof buf);
				if (r <= 0) {
					bad = 1;
				} else {
					proxy_sniff(c, buf, (size_t)r);
					bad = send_all(c->up, buf, (size_t)r) != 0;
				}
			}
			if (!bad && pfd[2 + 2 * i].revents) {
				r = read(c->up, buf, sizeof buf);
				bad = r <= 0 || send_all(c->down, buf, (size_t)r) != 0;
			}
			if (bad)
				proxy_drop(i);
		}
		if (pfd[0].revents) {
			fd = accept4(P.lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			up = P.nconns < PROXY_CONNS ? connect_loopback(P.mock_port) : -1;
			if (up < 0) {
				close(fd);
				continue;
			}
			memset(&P.conns[P.nconns], 0, sizeof P.conns[P.nconns]);
			P.conns[P.nconns].down = fd;
			P.conns[P.nconns].up = up;
			P.nconns++;
		}
	}
	while (P.nconns > 0)
		proxy_drop(P.nconns - 1);
	return arg;
}

static void
proxy_start(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof sin;

	pthread_mutex_init(&P.lock, NULL);
	P.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(P.lfd, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(P.lfd, (struct sockaddr *)&sin, sizeof sin), 0);
	ck_assert_int_eq(listen(P.lfd, 512), 0);
	ck_assert_int_eq(getsockname(P.lfd, (struct sockaddr *)&sin, &len), 0);
	P.port = ntohs(sin.sin_port);
	ck_assert_int_eq(pthread_create(&P.thread, NULL, proxy_main, NULL), 0);
}

static void
proxy_stop(void)
{
	P.stop = 1;
	pthread_join(P.thread, NULL);
	close(P.lfd);
}

/* ---- the load ---- */

enum op_kind { OP_SYNC, OP_ASYNC, OP_LEVEL, OP_REVIEW };

struct op {
	enum op_kind kind;
	int iter;
	char id[48];	/* request_id, override reason, or review id */
	long status;	/* 0: no answer (the daemon died) */
	int64_t t_done; /* when the answer arrived (monotonic ms) */
};

static struct op ops[OPS_MAX];
static int nops;
static pthread_mutex_t ops_lock = PTHREAD_MUTEX_INITIALIZER;

struct xfer {
	CURL *h;
	struct curl_slist *hdrs;
	int op;
	char body[256];
};

static struct {
	volatile int stop;
	int64_t t_kill;
	int iter;
	int seq;
	int level_inflight;
	int reviews; /* the review API answers */
} L;

static int
op_new(enum op_kind kind, const char *id)
{
	int i;

	pthread_mutex_lock(&ops_lock);
	i = nops < OPS_MAX ? nops++ : -1;
	if (i >= 0) {
		ops[i].kind = kind;
		ops[i].iter = L.iter;
		snprintf(ops[i].id, sizeof ops[i].id, "%s", id);
		ops[i].status = 0;
		ops[i].t_done = 0;
	}
	pthread_mutex_unlock(&ops_lock);
	return i;
}

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	return size * n;
}

/* Start one operation of the mix on m; 0, or -1 when the op table is full. */
static int
load_add(CURLM *m, struct xfer *x)
{
	char url[160], id[48];
	int r = rng_range(0, 99), kind;

	memset(x, 0, sizeof *x);
	if (r < 8 && !L.level_inflight)
		kind = OP_LEVEL;
	else if (r < 38)
		kind = OP_ASYNC;
	else
		kind = OP_SYNC;
	L.seq++;
	switch (kind) {
	case OP_LEVEL:
		snprintf(id, sizeof id, "lvl-%d-%d", L.iter, L.seq);
		snprintf(url, sizeof url, "%s/v1/routes/aux/level", T.base);
		snprintf(x->body, sizeof x->body,
			 "{\"level\":%d,\"reason\":\"%s\",\"ttl_s\":86400}", L.seq % 3, id);
		break;
	case OP_ASYNC:
		snprintf(id, sizeof id, "j%d-%d", L.iter, L.seq);
		snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
		snprintf(x->body, sizeof x->body,
			 "{\"input\":\"refund please\",\"mode\":\"async\",\"request_id\":\"%s\"}",
			 id);
		break;
	default:
		snprintf(id, sizeof id, "c%d-%d", L.iter, L.seq);
		snprintf(url, sizeof url, "%s/v1/routes/intent/call", T.base);
		snprintf(x->body, sizeof x->body,
			 "{\"input\":\"refund please\",\"request_id\":\"%s\"}", id);
		break;
	}
	x->op = op_new((enum op_kind)kind, id);
	if (x->op < 0)
		return -1;
	if (kind == OP_LEVEL)
		L.level_inflight = 1;
	x->h = curl_easy_init();
	if (x->h == NULL)
		abort();
	x->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	if (kind == OP_LEVEL) {
		x->hdrs = curl_slist_append(x->hdrs, "Authorization: Bearer op-token");
		curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, "PUT");
	}
	curl_easy_setopt(x->h, CURLOPT_URL, url);
	curl_easy_setopt(x->h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->h, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, 8000L);
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, x->body);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
	curl_multi_add_handle(m, x->h);
	return 0;
}

static void *
load_main(void *arg)
{
	struct xfer *xs = calloc(CONCURRENCY, sizeof *xs), *x;
	CURLM *m = curl_multi_init();
	int running = 0, i, left, busy = 0, full = 0;
	CURLMsg *msg;
	int64_t drain_until = 0;

	if (xs == NULL || m == NULL)
		abort();
	for (;;) {
		for (i = 0; i < CONCURRENCY && !L.stop && !full; i++)
			if (xs[i].h == NULL) {
				if (load_add(m, &xs[i]) != 0)
					full = 1;
				else
					busy++;
			}
		if (busy == 0)
			break;
		if (L.stop && drain_until == 0)
			drain_until = harness_now_ms() + 5000;
		if (drain_until && harness_now_ms() > drain_until)
			break;
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			long status = 0;
			char *priv = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
			x = (struct xfer *)(void *)priv;
			if (msg->data.result == CURLE_OK)
				curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
			pthread_mutex_lock(&ops_lock);
			ops[x->op].status = status;
			ops[x->op].t_done = harness_now_ms();
			if (ops[x->op].kind == OP_LEVEL)
				L.level_inflight = 0;
			pthread_mutex_unlock(&ops_lock);
			curl_multi_remove_handle(m, x->h);
			curl_easy_cleanup(x->h);
			curl_slist_free_all(x->hdrs);
			x->h = NULL;
			busy--;
		}
		curl_multi_poll(m, NULL, 0, 10, NULL);
	}
	for (i = 0; i < CONCURRENCY; i++) {
		if (xs[i].h == NULL)
			continue;
		curl_multi_remove_handle(m, xs[i].h);
		curl_easy_cleanup(xs[i].h);
		curl_slist_free_all(xs[i].hdrs);
	}
	curl_multi_cleanup(m);
	free(xs);
	L.level_inflight = 0;
	return arg;
}

static void *
killer_main(void *arg)
{
	int ms = *(int *)arg;

	usleep((useconds_t)ms * 1000);
	L.t_kill = harness_now_ms();
	kill(T.d.pid, SIGKILL);
	L.stop = 1;
	return NULL;
}

/* Review decisions from this thread while the load runs (when the API exists). */
static void
review_decisions(void)
{
	struct http_resp r;
	char path[160], id[48];
	cJSON *o, *item;
	int i;

	while (!L.stop) {
		if (itd_req(&T, "GET", "/v1/reviews?state=pending&limit=1", NULL, "op-token", 2000,
			    &r) != 0 ||
		    r.status != 200) {
			http_resp_free(&r);
			usleep(10 * 1000);
			continue;
		}
		o = itd_json(&r);
		http_resp_free(&r);
		item = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "items"), 0);
		if (cJSON_IsNumber(cJSON_GetObjectItem(item, "id")))
			snprintf(id, sizeof id, "%d", cJSON_GetObjectItem(item, "id")->valueint);
		else
			snprintf(id, sizeof id, "%s", itd_str(item, "id"));
		cJSON_Delete(o);
		if (id[0] == '\0') {
			usleep(10 * 1000);
			continue;
		}
		i = op_new(OP_REVIEW, id);
		if (i < 0)
			return;
		snprintf(path, sizeof path, "/v1/reviews/%s/decision", id);
		itd_req(&T, "POST", path, "{\"verdict\":\"approve\",\"note\":\"crash test\"}",
			"op-token", 2000, &r);
		pthread_mutex_lock(&ops_lock);
		ops[i].status = r.status;
		ops[i].t_done = harness_now_ms();
		pthread_mutex_unlock(&ops_lock);
		http_resp_free(&r);
	}
}

/* ---- checks ---- */

static long long
count_where(const char *fmt, const char *arg)
{
	char tail[512];

	snprintf(tail, sizeof tail, fmt, arg);
	return itd_count(&T, tail);
}

static void
wait_jobs_done(void)
{
	int64_t end = harness_now_ms() + (itd_sanitized() ? 30000 : 15000);
	long long left;

	do {
		left = itd_count(&T, "jobs WHERE state <> 'done'");
		if (left == 0)
			break;
		usleep(50 * 1000);
	} while (harness_now_ms() < end);
	ck_assert_msg(left == 0, "%lld jobs not done after the restart", left);
	itd_settle(); /* calls rows of the last jobs: one writer batch */
}

struct iter_stats {
	int sync_ok, async_ok, level_ok, review_ok;
	int lost, lost_max_age;
};

/* Everything the daemon promised before the kill of iteration it. */
static void
check_iteration(int it, struct iter_stats *s)
{
	const char *last_level = NULL;
	char *ov;
	int i, age, ok_row = 0, candidates = 0, answered = 0;

	memset(s, 0, sizeof *s);
	for (i = 0; i < nops; i++) {
		struct op *o = &ops[i];

		if (o->iter != it)
			continue;
		switch (o->kind) {
		case OP_ASYNC:
			if (o->status != 202)
				break;
			s->async_ok++;
			ck_assert_msg(count_where("jobs WHERE request_id = '%s' AND state = 'done'",
						  o->id) == 1,
				      "job %s (202) is not done", o->id);
			ck_assert_msg(count_where("calls WHERE request_id = '%s'", o->id) == 1,
				      "job %s: %lld calls rows, want 1", o->id,
				      count_where("calls WHERE request_id = '%s'", o->id));
			ck_assert_msg(proxy_saw(o->id), "job %s never reached the upstream", o->id);
			break;
		case OP_SYNC:
			if (o->status != 200)
				break;
			s->sync_ok++;
			if (count_where("calls WHERE request_id = '%s'", o->id) == 1)
				break;
			age = (int)(L.t_kill - o->t_done);
			s->lost++;
			if (age > s->lost_max_age)
				s->lost_max_age = age;
			break;
		case OP_LEVEL:
			if (o->status == 200) {
				s->level_ok++;
				last_level = o->id;
				ck_assert_msg(count_where("audit WHERE action = 'level.force' AND "
							  "after LIKE '%%\"reason\":\"%s\"%%'",
							  o->id) == 1,
					      "override %s answered 200 but has no audit row",
					      o->id);
			}
			break;
		case OP_REVIEW:
			if (o->status != 200)
				break;
			s->review_ok++;
			ck_assert_msg(count_where("reviews WHERE id = '%s' AND state = 'approved'",
						  o->id) == 1,
				      "review %s decided (200) but not approved in the DB", o->id);
			break;
		}
	}
	/*
	 * The overrides row holds the last PUT answered 200 (of any iteration
	 * so far) or one sent after it whose answer the kill swallowed (it may
	 * have been committed just before the kill).
	 */
	ov = db_scalar_text(T.db, "SELECT reason FROM overrides WHERE kind = 'level' AND "
				  "subject = 'aux'");
	for (i = nops - 1; i >= 0; i--) {
		if (ops[i].kind != OP_LEVEL || ops[i].iter > it)
			continue;
		if (ops[i].status != 200 && ops[i].status != 0)
			continue; /* refused: not committed */
		candidates++;
		if (ov != NULL && strcmp(ov, ops[i].id) == 0)
			ok_row = 1;
		if (ops[i].status == 200) {
			answered = 1;
			break;
		}
	}
	if (!answered && ov == NULL)
		ok_row = 1; /* none answered, none committed */
	if (candidates > 0)
		ck_assert_msg(ok_row,
			      "iteration %d: override row says %s; the last answered PUT is %s", it,
			      ov ? ov : "(none)", last_level ? last_level : "(before)");
	if (ov != NULL) {
		/* restored at start: the state API shows what the row says */
		struct http_resp r;
		cJSON *o, *route;
		const cJSON *f = NULL;

		ck_assert_int_eq(itd_req(&T, "GET", "/v1/state", NULL, "view-token", 5000, &r), 0);
		o = itd_json(&r);
		http_resp_free(&r);
		cJSON_ArrayForEach(route, cJSON_GetObjectItem(o, "routes"))
		{
			if (strcmp(itd_str(route, "name"), "aux") == 0)
				f = cJSON_GetObjectItem(route, "forced_level");
		}
		ck_assert_msg(cJSON_IsObject(f), "aux has no forced level after the restart");
		ck_assert_str_eq(itd_str(f, "reason"), ov);
		cJSON_Delete(o);
	}
	free(ov);
	ck_assert_msg(s->lost <= BATCH_ROWS, "%d calls rows lost: more than one batch", s->lost);
	ck_assert_msg(s->lost == 0 || s->lost_max_age <= loss_window_ms(),
		      "iteration %d: a call answered %d ms before the kill has no calls row", it,
		      s->lost_max_age);
	{
		char *ic = db_scalar_text(T.db, "PRAGMA integrity_check");

		ck_assert_ptr_nonnull(ic);
		ck_assert_str_eq(ic, "ok");
		free(ic);
	}
}

#define CONFIG_FMT                                                                                 \
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","            \
	"\"backends\":[{\"name\":\"primary\",\"url\":\"http://127.0.0.1:%d/b/primary/v1/chat/"     \
	"completions\",\"model\":\"m\",\"max_concurrent\":500,"                                    \
	"\"breaker\":{\"failure_threshold\":100000}}],"                                            \
	"\"routes\":["                                                                             \
	"{\"name\":\"intent\",\"budget_ms\":3000,\"targets\":[{\"backend\":\"primary\"}],"         \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\"]},"                  \
	"\"review_below\":%s},"                                                                    \
	"\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"},"                  \
	"\"confidence\":0.3}}},"                                                                   \
	"{\"name\":\"aux\",\"budget_ms\":1000,\"targets\":[{\"backend\":\"primary\"}],"            \
	"\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"},"                  \
	"\"confidence\":0.3}}}]}"

START_TEST(kill_9_under_load)
{
	const char *seed_env = getenv("FB_CRASH_SEED");
	struct iter_stats s, tot;
	struct http_resp r;
	pthread_t load, killer;
	int64_t t0 = harness_now_ms();
	int it, i, kill_ms, worst_lost = 0, worst_age = 0, niter = iterations();
	uint64_t seed;
	char *cfg = NULL;

	seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
	rng_state = seed ? seed : 1;
	fprintf(stderr, "crash: seed %llu (FB_CRASH_SEED to replay)\n", (unsigned long long)seed);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);

	/* The proxy listens first (the config names it); it learns the mock's
	 * port before any traffic: the daemon calls nobody until asked. */
	proxy_start();
	ck_assert_int_ge(asprintf(&cfg, CONFIG_FMT, P.port, "0.0"), 0);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	free(cfg);
	P.mock_port = T.mock.port;
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_min_ms\":20,\"delay_max_ms\":150}"),
			 0);
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/reviews", NULL, "op-token", 2000, &r), 0);
	L.reviews = r.status == 200;
	http_resp_free(&r);
	if (L.reviews) {
		/* every model answer (confidence 0.92) goes to review */
		ck_assert_int_ge(asprintf(&cfg, CONFIG_FMT, P.port, "0.95"), 0);
		ck_assert_int_eq(itd_write_config(&T, cfg), 0);
		free(cfg);
		ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
		ck_assert_int_eq(itd_restart_daemon(&T), 0);
	} else {
		fprintf(stderr, "crash: GET /v1/reviews does not answer 200: review decisions "
				"skipped\n");
	}

	memset(&tot, 0, sizeof tot);
	for (it = 0; it < niter; it++) {
		L.iter = it;
		L.stop = 0;
		kill_ms = rng_range(50, 700);
		ck_assert_int_eq(pthread_create(&load, NULL, load_main, NULL), 0);
		ck_assert_int_eq(pthread_create(&killer, NULL, killer_main, &kill_ms), 0);
		if (L.reviews)
			review_decisions();
		pthread_join(killer, NULL);
		pthread_join(load, NULL);
		ck_assert_int_eq(itd_kill_daemon(&T, SIGKILL), 128 + SIGKILL);
		ck_assert_int_eq(itd_restart_daemon(&T), 0);
		wait_jobs_done();
		check_iteration(it, &s);
		fprintf(stderr,
			"crash %2d: kill at %3d ms: %3d sync 200, %3d jobs 202, %2d overrides, "
			"%2d reviews; calls rows lost %d (oldest %d ms before the kill)\n",
			it, kill_ms, s.sync_ok, s.async_ok, s.level_ok, s.review_ok, s.lost,
			s.lost ? s.lost_max_age : 0);
		tot.sync_ok += s.sync_ok;
		tot.async_ok += s.async_ok;
		tot.level_ok += s.level_ok;
		tot.review_ok += s.review_ok;
		tot.lost += s.lost;
		if (s.lost > worst_lost)
			worst_lost = s.lost;
		if (s.lost && s.lost_max_age > worst_age)
			worst_age = s.lost_max_age;
	}
	/* Once more over every iteration: nothing committed went away since. */
	ck_assert_int_eq(itd_count(&T, "jobs WHERE state <> 'done'"), 0);
	for (i = 0; i < nops; i++) {
		if (ops[i].kind == OP_ASYNC && ops[i].status == 202)
			ck_assert_int_eq(count_where("calls WHERE request_id = '%s'", ops[i].id),
					 1);
	}
	fprintf(stderr,
		"crash: %d kill -9 in %.1f s: %d sync calls answered, %d jobs accepted (all done "
		"once), %d overrides, %d review decisions; calls rows lost: %d in all, at most %d "
		"per crash, the oldest %d ms before the kill\n",
		niter, (double)(harness_now_ms() - t0) / 1000, tot.sync_ok, tot.async_ok,
		tot.level_ok, tot.review_ok, tot.lost, worst_lost, worst_age);
	ck_assert_int_gt(tot.async_ok, 0);
	ck_assert_int_gt(tot.sync_ok, 0);
	ck_assert_int_gt(tot.level_ok, 0);
	proxy_stop();
}
END_TEST

static void
teardown(void)
{
	itd_stop(&T);
}

static Suite *
crash_suite(void)
{
	Suite *s = suite_create("crash");
	TCase *tc = tcase_create("kill_9_under_load");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, kill_9_under_load);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(crash_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
