/*
 * engine: the event loop.
 *
 * Design (Redis ae shape): one epoll set holds the eventfd that wakes us
 * for posted tasks and every socket libcurl asks us to watch
 * (CURLMOPT_SOCKETFUNCTION); libcurl's own timeout is one named timer in
 * our heap (CURLMOPT_TIMERFUNCTION). Each turn: run due timers, run posted
 * tasks, collect finished transfers, reap closed calls (before-sleep), then
 * sleep in epoll_wait until the next timer. Deadlines are timers, so a call
 * is answered when its budget ends whatever the upstream does.
 */
#include "engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "cache.h"
#include "canary.h"
#include "call.h"
#include "clock.h"
#include "control.h"
#include "idem.h"
#include "jobs.h"
#include "log.h"
#include "notify.h"
#include "obs.h"
#include "review_q.h"
#include "http.h"
#include "tokens.h"
#include "util.h"

#define CRON_MS 1000
/* After the last call of a drain, answers still being written get this long. */
#define DRAIN_WRITE_MS 5000
#define RETENTION_EVERY_S 3600 /* and once a minute after start */

int64_t
engine_now_ms(const struct engine *e)
{
	return clock_mono_ms();
}

int64_t
engine_now_us(const struct engine *e)
{
	return clock_mono_us();
}

void
engine_timer_arm(struct engine *e, struct timer *t, int64_t at_us)
{
	timerheap_arm(&e->timers, t, at_us);
}

void
engine_timer_cancel(struct engine *e, struct timer *t)
{
	timerheap_cancel(&e->timers, t);
}

/*
 * Idle easy handles kept for reuse. A fresh handle costs a ~5 KB calloc,
 * its receive buffer and their frees per attempt (with the large-chunk
 * frees, glibc's fastbin consolidation); curl_easy_reset() keeps the
 * buffers. The pool holds what a burst returned, up to EASY_POOL_MAX
 * (~10 KB each); connections live in the multi handle and the h2 share,
 * not in easy handles.
 */
#define EASY_POOL_MAX 128

/*
 * libcurl's sockets in our epoll set. libcurl says REMOVE when a transfer
 * ends and IN again when the next attempt reuses the connection, usually
 * moments later: deleting and adding it back cost two epoll_ctl per call
 * (~2 of the ~10 syscalls of a call on the engine thread). A connection
 * socket (one we opened for libcurl, engine_curl_open) therefore lingers
 * in the set after REMOVE: taken up again with the same events it costs
 * nothing; an event while it lingers (the server closed the idle
 * connection) removes it then; libcurl closes it through
 * engine_curl_close, and the slot is cleared, so a descriptor number
 * reused by another socket is never mistaken for it. Other sockets
 * (the resolver's) are added and deleted as libcurl says.
 */
struct curl_fd {
	uint32_t events;   /* registered with these; 0: not in our set */
	uint8_t ours;	   /* opened by engine_curl_open, not closed yet */
	uint8_t lingering; /* libcurl said REMOVE; still in the set */
};

static struct curl_fd *
curl_fd_slot(struct engine *e, int fd)
{
	int n;

	if (fd >= e->ncurl_fds) {
		n = MAX(fd + 1, MAX(2 * e->ncurl_fds, 256));
		e->curl_fds = xrealloc(e->curl_fds, (size_t)n * sizeof *e->curl_fds);
		memset(e->curl_fds + e->ncurl_fds, 0,
		       (size_t)(n - e->ncurl_fds) * sizeof *e->curl_fds);
		e->ncurl_fds = n;
	}
	return &e->curl_fds[fd];
}

static curl_socket_t
engine_curl_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct engine *e = clientp;
	int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);

	if (fd < 0)
		return CURL_SOCKET_BAD;
	*curl_fd_slot(e, fd) = (struct curl_fd){ .ours = 1 };
	(void)purpose;
	return fd;
}

static int
engine_curl_close(void *clientp, curl_socket_t fd)
{
	struct engine *e = clientp;

	/* close() takes it out of the epoll set (libcurl never dups it). */
	if (fd >= 0 && fd < e->ncurl_fds)
		e->curl_fds[fd] = (struct curl_fd){ 0 };
	return close(fd);
}

/* An epoll event for a lingering socket: libcurl does not want it; out it goes. */
static int
curl_fd_drop_lingering(struct engine *e, int fd)
{
	struct curl_fd *f;

	if (fd < 0 || fd >= e->ncurl_fds || !e->curl_fds[fd].lingering)
		return 0;
	f = &e->curl_fds[fd];
	epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
	f->events = 0;
	f->lingering = 0;
	return 1;
}

CURL *
engine_easy_get(struct engine *e)
{
	CURL *h;

	if (e->neasy_pool > 0) {
		h = e->easy_pool[--e->neasy_pool];
	} else {
		h = curl_easy_init();
		if (h == NULL) { /* allocation only: out of memory, as xmalloc() */
			fprintf(stderr, "fuseboxd: out of memory (curl_easy_init)\n");
			abort();
		}
	}
	/* A connection keeps the callbacks of the handle that opened it. */
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, engine_curl_open);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, e);
	curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, engine_curl_close);
	curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, e);
	return h;
}

void
engine_easy_put(struct engine *e, CURL *h)
{
	if (h == NULL)
		return;
	if (e->neasy_pool >= EASY_POOL_MAX) {
		curl_easy_cleanup(h);
		return;
	}
	/* curl_easy_reset() keeps a share: an h1 attempt must not inherit
	 * the h2 pool (attempt_set_transport). */
	curl_easy_setopt(h, CURLOPT_SHARE, (CURLSH *)NULL);
	curl_easy_reset(h);
	if (e->easy_pool == NULL)
		e->easy_pool = xcalloc(EASY_POOL_MAX, sizeof *e->easy_pool);
	e->easy_pool[e->neasy_pool++] = h;
}

int
engine_route_index(const struct engine *e, const char *name)
{
	int i;

	for (i = 0; i < e->nroutes; i++)
		if (strcmp(e->routes[i].cfg->name, name) == 0)
			return i;
	return -1;
}

int
engine_route_level(struct engine *e, int i)
{
	struct route_rt *rt = &e->routes[i];

	if (rt->forced_level >= 0 && rt->forced_until_wall > 0 &&
	    clock_wall_ms() >= rt->forced_until_wall) {
		char detail[160];

		snprintf(detail, sizeof detail, "forced level %d expired (ttl) -> auto %d",
			 rt->forced_level, rt->auto_level);
		log_info("engine", "route %s: %s", rt->cfg->name, detail);
		engine_event(e, "level", rt->cfg->name, detail);
		control_level_expired(e, i);
		rt->forced_level = -1;
		free(rt->forced_actor);
		free(rt->forced_reason);
		rt->forced_actor = rt->forced_reason = NULL;
		rt->forced_until_wall = 0;
	}
	return rt->forced_level >= 0 ? rt->forced_level : rt->auto_level;
}

void
engine_event(struct engine *e, const char *kind, const char *subject, const char *detail)
{
	struct store_val v[] = { SVI(clock_wall_ms()), SVT(kind), SVT(subject), SVT(detail) };

	store_put(e->store, STORE_EVENT_INSERT, v, (int)ARRAY_SIZE(v));
}

void
engine_route_escalation_events(struct engine *e, struct route_rt *rt)
{
	if (rt->esc.changes == rt->seen_esc_changes)
		return;
	rt->seen_esc_changes = rt->esc.changes;
	rt->auto_level = rt->esc.level;
	log_info("escalation", "route %s: %s", rt->cfg->name, rt->esc.last_reason);
	{
		char detail[200];

		snprintf(detail, sizeof detail, "%s; actor escalation", rt->esc.last_reason);
		engine_event(e, "level", rt->cfg->name, detail);
	}
}

void
engine_breaker_events(struct engine *e, struct backend_rt *b)
{
	char detail[256];
	const struct breaker_transition *t = &b->breaker.last;

	if (b->breaker.ntransitions == b->seen_transitions)
		return;
	b->seen_transitions = b->breaker.ntransitions;
	snprintf(detail, sizeof detail, "%s -> %s (%s)", breaker_state_name(t->from),
		 breaker_state_name(t->to), t->reason);
	log_info("breaker", "%s: %s", b->cfg->name, detail);
	engine_event(e, "breaker", b->cfg->name, detail);
}

/* libcurl asks us to watch socket s (struct curl_fd says how we keep it). */
static int
curl_sock_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct engine *e = userp;
	struct curl_fd *f = curl_fd_slot(e, s);
	struct epoll_event ev;

	if (what == CURL_POLL_REMOVE) {
		if (f->ours && f->events != 0) {
			f->lingering = 1;
		} else {
			epoll_ctl(e->epfd, EPOLL_CTL_DEL, s, NULL);
			f->events = 0;
		}
		curl_multi_assign(e->multi, s, NULL);
		return 0;
	}
	memset(&ev, 0, sizeof ev);
	ev.data.fd = s;
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	if (f->ours && f->events == ev.events) {
		/* in the set already, as wanted */
	} else if (f->events == 0) {
		if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST)
			epoll_ctl(e->epfd, EPOLL_CTL_MOD, s, &ev);
	} else if (epoll_ctl(e->epfd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT) {
		epoll_ctl(e->epfd, EPOLL_CTL_ADD, s, &ev);
	}
	f->events = ev.events;
	f->lingering = 0;
	if (socketp == NULL)
		curl_multi_assign(e->multi, s, e);
	return 0;
}

/* libcurl wants to be called after timeout_ms (-1: never). */
static int
curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct engine *e = userp;

	if (timeout_ms < 0)
		timerheap_cancel(&e->timers, &e->curl_timer);
	else
		timerheap_arm(&e->timers, &e->curl_timer, clock_mono_us() + timeout_ms * 1000);
	return 0;
}

static void
check_multi_info(struct engine *e)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(e->multi, &left)) != NULL) {
		struct engine_transfer *t = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
		if (t != NULL && t->done != NULL)
			t->done(e, t, msg->data.result);
	}
}

static void
curl_timer_fire(struct timer *t, void *arg)
{
	struct engine *e = arg;
	int running;

	curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_multi_info(e);
}

/* The longest cache TTL of the routes (0 when no route caches: all go). */
static int64_t
engine_cache_ttl_max_ms(const struct engine *e)
{
	int64_t ttl = 0;
	int i;

	for (i = 0; i < e->nroutes; i++) {
		const struct route_cfg *rc = e->routes[i].cfg;

		if (rc->cache.enabled && (int64_t)rc->cache.ttl_s * 1000 > ttl)
			ttl = (int64_t)rc->cache.ttl_s * 1000;
	}
	return ttl;
}

static void
cron_fire(struct timer *t, void *arg)
{
	struct engine *e = arg;
	int64_t now = clock_mono_ms();
	int i;

	for (i = 0; i < e->nbackends; i++) {
		breaker_state(&e->backends[i].breaker, now);
		engine_breaker_events(e, &e->backends[i]);
	}
	for (i = 0; i < e->nroutes; i++) {
		struct route_rt *rt = &e->routes[i];

		escalation_tick(&rt->esc, &rt->cfg->escalation, now);
		engine_route_escalation_events(e, rt);
		engine_route_level(e, i);
	}
	idem_expire(e->idem, clock_wall_ms());
	cache_expire(e->cache, clock_wall_ms() - engine_cache_ttl_max_ms(e));
	obs_tick(e->obs, clock_wall_ms());
	review_q_tick(e, clock_wall_ms());
	canary_tick(e, now);
	/* Retention: old log rows go in small batches on the writer thread. */
	if (++e->cron_ticks % RETENTION_EVERY_S == 60 && e->cfg->log.retention_days > 0)
		store_prune(e->store,
			    clock_wall_ms() - (int64_t)e->cfg->log.retention_days * 86400 * 1000);
	timerheap_arm(&e->timers, &e->cron_timer, clock_mono_us() + CRON_MS * 1000);
}

void
engine_post(struct engine *e, engine_task_fn fn, void *arg)
{
	struct engine_task *t = xmalloc(sizeof *t);
	uint64_t one = 1;
	ssize_t n;

	t->fn = fn;
	t->arg = arg;
	t->next = NULL;
	pthread_mutex_lock(&e->qlock);
	if (e->exited) {
		/* After the drain (only late keep-alive requests get here): they
		 * see e->stopping and are refused at once, on the caller's thread. */
		fn(e, arg);
		pthread_mutex_unlock(&e->qlock);
		free(t);
		return;
	}
	if (e->qtail)
		e->qtail->next = t;
	else
		e->qhead = t;
	e->qtail = t;
	pthread_mutex_unlock(&e->qlock);
	n = write(e->evfd, &one, sizeof one);
	(void)n;
}

/*
 * Run the posted tasks. A burst of thousands of new calls must not starve
 * the deadlines of the calls already waiting: due timers run between
 * every RUN_TASKS_BATCH tasks.
 */
#define RUN_TASKS_BATCH 32

static void
run_tasks(struct engine *e)
{
	struct engine_task *t, *next;
	int n = 0;

	pthread_mutex_lock(&e->qlock);
	t = e->qhead;
	e->qhead = e->qtail = NULL;
	pthread_mutex_unlock(&e->qlock);
	for (; t; t = next) {
		next = t->next;
		t->fn(e, t->arg);
		free(t);
		if (++n % RUN_TASKS_BATCH == 0 && !e->exited)
			timerheap_run(&e->timers, clock_mono_us());
	}
}

/* A commit-later on its way: filled by the writer, finished on the engine. */
struct engine_commit {
	struct engine *e_owner;
	engine_commit_fn done;
	void *arg;
	int rc;
	int64_t rowid;
	char *cause;
};

static void
engine_commit_task(struct engine *e, void *arg)
{
	struct engine_commit *c = arg;

	e->commits_pending--;
	c->done(e, c->arg, c->rc, c->rowid, c->cause);
	free(c->cause);
	free(c);
}

/* Writer thread: hand the outcome to the engine thread. */
static void
engine_commit_written(void *arg, int rc, int64_t rowid, const char *cause)
{
	struct engine_commit *c = arg;

	c->rc = rc;
	c->rowid = rowid;
	c->cause = cause ? xstrdup(cause) : NULL;
	engine_post(c->e_owner, engine_commit_task, c);
}

int
engine_commit_later(struct engine *e, const struct store_op *ops, int nops, engine_commit_fn done,
		    void *arg)
{
	struct engine_commit *c = xcalloc(1, sizeof *c);
	int r;

	c->e_owner = e;
	c->done = done;
	c->arg = arg;
	r = store_commit_later(e->store, ops, nops, engine_commit_written, c);
	if (r != 0) {
		free(c);
		return r;
	}
	e->commits_pending++;
	return 0;
}

/*
 * Every RUN_TASKS_BATCH new requests read by MHD in one http_run(), the
 * due timers run too (a burst of arrivals must not delay deadlines).
 */
void
engine_http_request(struct engine *e)
{
	if (++e->http_batch % RUN_TASKS_BATCH == 0)
		timerheap_run(&e->timers, clock_mono_us());
}

/*
 * Should the loop run MHD now: its descriptor was readable, answers were
 * resumed, we drain, or the time MHD asked for (MHD_get_timeout: 0 when
 * it has work left from its last pass, such as finishing a request whose
 * answer it wrote; else its connection timeouts) has come.
 */
static int
engine_http_due(struct engine *e, int ready, int64_t now_us)
{
	if (!ready && !e->stopping && !http_pending(e->srv) && now_us < e->http_due_us)
		return 0;
	e->http_batch = 0;
	return 1;
}

/* One pass of MHD when due; then note when it wants the next without I/O. */
static void
engine_http_pass(struct engine *e, int *ready, int64_t now_us)
{
	int64_t to;

	if (e->srv == NULL || !engine_http_due(e, *ready, now_us))
		return;
	*ready = 0;
	http_run(e->srv);
	to = http_timeout_ms(e->srv);
	e->http_due_us = to < 0 ? INT64_MAX : clock_mono_us() + MIN(to, 3600 * 1000) * 1000;
}

/* Has the drain finished: no call, no task, every answer written (or 5 s passed)? */
static int
engine_drained(struct engine *e, int64_t now_us)
{
	if (!e->stopping || e->calls != NULL || e->qhead != NULL || e->commits_pending > 0)
		return 0;
	if (e->srv == NULL || http_active(e->srv) == 0)
		return 1;
	if (e->drain_until_us == 0)
		e->drain_until_us = now_us + DRAIN_WRITE_MS * 1000;
	if (now_us < e->drain_until_us)
		return 0;
	log_warn("engine", "stopping with %d requests still unanswered after %d ms",
		 http_active(e->srv), DRAIN_WRITE_MS);
	return 1;
}

static void *
engine_main(void *arg)
{
	struct engine *e = arg;
	struct epoll_event evs[256];
	int running, i, n, http_ready = 1;

	while (!e->stop_now) {
		int64_t now = clock_mono_us(), next;
		int timeout;

		timerheap_run(&e->timers, now);
		run_tasks(e);
		check_multi_info(e);
		engine_http_pass(e, &http_ready, now);
		call_reap(e);
		if (engine_drained(e, now)) {
			e->stop_now = 1;
			break;
		}
		next = timerheap_next(&e->timers);
		now = clock_mono_us();
		if (next == INT64_MAX)
			timeout = 1000;
		else if (next <= now)
			timeout = 0;
		else
			timeout = (int)MIN((next - now + 999) / 1000, 1000);
		if (e->srv) {
			if (http_pending(e->srv) || e->http_due_us <= now)
				timeout = 0;
			else if (e->http_due_us - now < (int64_t)timeout * 1000)
				timeout = (int)((e->http_due_us - now + 999) / 1000);
		}
		if (e->stopping && timeout > 50)
			timeout = 50; /* the drain polls http_active() */
		n = epoll_wait(e->epfd, evs, (int)ARRAY_SIZE(evs), timeout);
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd, flags = 0;

			if (fd == e->evfd) {
				uint64_t v;
				ssize_t rd = read(e->evfd, &v, sizeof v);

				(void)rd;
				continue;
			}
			if (e->srv && fd == e->http_fd) {
				http_ready = 1;
				continue;
			}
			if (curl_fd_drop_lingering(e, fd))
				continue;
			if (evs[i].events & EPOLLIN)
				flags |= CURL_CSELECT_IN;
			if (evs[i].events & EPOLLOUT)
				flags |= CURL_CSELECT_OUT;
			if (evs[i].events & (EPOLLERR | EPOLLHUP))
				flags |= CURL_CSELECT_ERR;
			curl_multi_socket_action(e->multi, fd, flags, &running);
		}
		check_multi_info(e);
		/* Answers made by this turn's transfers and timers leave now. */
		engine_http_pass(e, &http_ready, clock_mono_us());
	}
	return NULL;
}

int
engine_attach_http(struct engine *e, struct http_server *srv)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.fd = http_epoll_fd(srv);
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) < 0)
		return -errno;
	e->http_fd = ev.data.fd;
	e->srv = srv;
	return 0;
}

static void
backend_rt_init(struct backend_rt *b, const struct backend_cfg *bc)
{
	const char *key;

	b->cfg = bc;
	breaker_init(&b->breaker, &bc->breaker);
	bulkhead_init(&b->bulkhead, bc->max_concurrent);
	health_init(&b->health);
	key = bc->api_key_env ? getenv(bc->api_key_env) : NULL;
	b->api_key = key && *key ? xstrdup(key) : NULL;
	if (bc->api_key_env && b->api_key == NULL)
		log_warn("engine", "backend %s: environment variable %s is not set; calling without a key",
			 bc->name, bc->api_key_env);
}

static void
backend_rt_free(struct backend_rt *b)
{
	breaker_free(&b->breaker);
	free(b->api_key);
	b->api_key = NULL;
}

static void
route_rt_init(struct route_rt *rt, const struct route_cfg *rc)
{
	int j;

	memset(rt, 0, sizeof *rt);
	rt->cfg = rc;
	rt->forced_level = -1;
	escalation_init(&rt->esc, clock_mono_ms());
	retry_budget_init(&rt->rbudget);
	rt->weights = xcalloc((size_t)MAX(rc->ntargets, 1), sizeof *rt->weights);
	for (j = 0; j < rc->ntargets; j++)
		rt->weights[j] = rc->targets[j].weight;
	if (rc->canary_guard.enabled)
		rt->canary = xcalloc((size_t)MAX(rc->ntargets, 1), sizeof *rt->canary);
}

static void
route_rt_free(struct route_rt *rt)
{
	free(rt->canary);
	rt->canary = NULL;
	free(rt->weights);
	free(rt->forced_actor);
	free(rt->forced_reason);
	rt->weights = NULL;
	rt->forced_actor = rt->forced_reason = NULL;
}

void
engine_bulkhead_wake(struct engine *e, struct backend_rt *b)
{
	struct bulkhead_waiter *w;

	/* A raised cap hands free slots to waiting calls at once. */
	while ((w = bulkhead_next(&b->bulkhead)) != NULL)
		call_bulkhead_granted(e, w);
}

int
engine_create(struct config *cfg, struct store *st, struct engine **out, char **cause)
{
	struct engine *e = xcalloc(1, sizeof *e);
	struct store_reader *rd = NULL;
	struct epoll_event ev;
	int i, r = 0, max_ttl = 0;

	e->cfg = cfg;
	e->hold = xcalloc(1, sizeof *e->hold);
	e->hold->cfg = cfg;
	e->store = st;
	e->http_fd = -1;
	e->epfd = -1;
	e->evfd = -1;
	pthread_mutex_init(&e->qlock, NULL);
	timerheap_init(&e->timers);
	timer_init(&e->curl_timer, "curl", curl_timer_fire, e);
	timer_init(&e->cron_timer, "cron", cron_fire, e);
	rng_seed_entropy(&e->rng);
	e->started_wall_ms = clock_wall_ms();
	e->idem = idem_new(200000);
	e->crowd = xmalloc(sizeof *e->crowd);
	/* 50 us per cut-and-answer until the first cuts are measured */
	budget_crowd_init(e->crowd, 50000);

	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->epfd < 0 || e->evfd < 0) {
		r = -errno;
		*cause = xasprintf("engine: epoll/eventfd: %s", strerror(errno));
		goto out;
	}
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.fd = e->evfd;
	epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->evfd, &ev);

	e->multi = curl_multi_init();
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, curl_sock_cb);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, 20000L);
	e->h2_share = curl_share_init();
	if (e->multi == NULL || e->h2_share == NULL) {
		*cause = xasprintf("libcurl: cannot create the transfer handles");
		r = -ENOMEM;
		goto out;
	}
	curl_share_setopt(e->h2_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	e->h2c_reuse = curl_version_info(CURLVERSION_NOW)->version_num >= 0x080000;

	e->nbackends = e->nbackends_all = cfg->nbackends;
	e->backends = xcalloc((size_t)MAX(cfg->nbackends, 1), sizeof *e->backends);
	for (i = 0; i < cfg->nbackends; i++)
		backend_rt_init(&e->backends[i], &cfg->backends[i]);
	e->nroutes = e->nroutes_all = cfg->nroutes;
	e->routes = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *e->routes);
	for (i = 0; i < cfg->nroutes; i++)
		route_rt_init(&e->routes[i], &cfg->routes[i]);

	/* Row ids continue after the highest one on disk (rows are written
	 * asynchronously, so the daemon assigns them). */
	if (store_reader_open(cfg->database, &rd, cause) != 0) {
		r = -EIO;
		goto out;
	}
	e->next_call_id = store_reader_int(rd, "SELECT coalesce(max(id),0) FROM calls", NULL, 0, 0) + 1;
	e->next_attempt_id = store_reader_int(rd, "SELECT coalesce(max(id),0) FROM attempts", NULL, 0, 0) + 1;
	e->next_vfail_id =
		store_reader_int(rd, "SELECT coalesce(max(id),0) FROM validation_failures", NULL, 0, 0) + 1;
	e->next_degradation_id =
		store_reader_int(rd, "SELECT coalesce(max(id),0) FROM degradations", NULL, 0, 0) + 1;
	e->route_names = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *e->route_names);
	for (i = 0; i < cfg->nroutes; i++) {
		e->route_names[i] = cfg->routes[i].name;
		if (cfg->routes[i].cache.enabled)
			max_ttl = MAX(max_ttl, cfg->routes[i].cache.ttl_s);
	}
	e->cache = cache_new(100000);
	cache_load(e->cache, rd, clock_wall_ms() - (int64_t)max_ttl * 1000);
	r = obs_new(cfg, st, rd, clock_wall_ms(), &e->obs, cause);
	if (r != 0)
		goto out;
	r = notify_new(4096, &e->notify);
	if (r != 0) {
		*cause = xasprintf("notify: %s", strerror(-r));
		goto out;
	}
	e->reader = rd;
	rd = NULL;
	r = control_restore(e, cause);
	if (r != 0)
		goto out;
	r = jobs_new(e, &e->jobs, cause);
	if (r != 0)
		goto out;
	r = review_q_load(e, cause);
	if (r != 0)
		goto out;
	*out = e;
	e = NULL;
out:
	store_reader_close(rd);
	if (e)
		engine_free(e);
	return r;
}

int
engine_start(struct engine *e)
{
	int r;

	timerheap_arm(&e->timers, &e->cron_timer, clock_mono_us() + CRON_MS * 1000);
	r = pthread_create(&e->thread, NULL, engine_main, e);
	if (r != 0)
		return -r;
	e->thread_started = 1;
	return 0;
}

static void
engine_begin_stop(struct engine *e, void *arg)
{
	e->stopping = 1;
	/* Stop accepting; requests on open connections are refused. */
	if (e->srv)
		http_quiesce(e->srv);
	log_info("engine", "draining %d in-flight calls", e->inflight);
}

void
engine_stop(struct engine *e)
{
	if (e == NULL || !e->thread_started)
		return;
	engine_post(e, engine_begin_stop, NULL);
	pthread_join(e->thread, NULL);
	e->thread_started = 0;
	/* The drain waits for them; should the loop have ended anyway, their
	 * completions are queued before the loop's state goes. */
	if (e->commits_pending > 0)
		store_flush(e->store);
	pthread_mutex_lock(&e->qlock);
	e->exited = 1;
	pthread_mutex_unlock(&e->qlock);
	run_tasks(e);
}

void
engine_free(struct engine *e)
{
	struct cfg_hold *h, *hn;
	int i;

	if (e == NULL)
		return;
	engine_stop(e);
	run_tasks(e);
	call_reap(e);
	jobs_free(e->jobs);
	review_q_free(e->review_q);
	if (e->multi)
		curl_multi_cleanup(e->multi);
	while (e->neasy_pool > 0)
		curl_easy_cleanup(e->easy_pool[--e->neasy_pool]);
	free(e->easy_pool);
	if (e->h2_share)
		curl_share_cleanup(e->h2_share); /* after the handles that used it */
	for (i = 0; i < e->nbackends_all; i++)
		backend_rt_free(&e->backends[i]);
	free(e->backends);
	for (i = 0; i < e->nroutes_all; i++)
		route_rt_free(&e->routes[i]);
	free(e->routes);
	idem_free(e->idem);
	free(e->crowd);
	cache_free(e->cache);
	obs_free(e->obs);
	notify_free(e->notify, 1000);
	store_reader_close(e->reader);
	free(e->route_names);
	timerheap_free(&e->timers);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->evfd >= 0)
		close(e->evfd);
	pthread_mutex_destroy(&e->qlock);
	for (h = e->hold; h; h = hn) {
		hn = h->next;
		config_free(h->cfg);
		free(h);
	}
	free(e->curl_fds); /* after the multi and the share closed their sockets */
	free(e);
}

struct cfg_hold *
engine_hold_get(struct engine *e)
{
	e->hold->refs++;
	return e->hold;
}

void
engine_hold_put(struct engine *e, struct cfg_hold *h)
{
	struct cfg_hold **pp;

	h->refs--;
	if (h->refs > 0 || h == e->hold)
		return;
	/* An old configuration's last call ended: free it. */
	for (pp = &e->hold->next; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			log_info("engine", "previous configuration released (its last call ended)");
			config_free(h->cfg);
			free(h);
			return;
		}
	}
}

int
engine_backend_index(const struct engine *e, const char *name)
{
	int i;

	for (i = 0; i < e->nbackends; i++)
		if (strcmp(e->backends[i].cfg->name, name) == 0)
			return i;
	return -1;
}

static int
backend_rt_busy(const struct backend_rt *b)
{
	return b->bulkhead.inflight > 0 || b->bulkhead.nwaiting > 0;
}

static int
same_targets(const struct route_cfg *a, const struct route_cfg *b)
{
	int i;

	if (a->ntargets != b->ntargets)
		return 0;
	for (i = 0; i < a->ntargets; i++)
		if (strcmp(a->targets[i].backend, b->targets[i].backend) != 0)
			return 0;
	return 1;
}

int
engine_reload(struct engine *e, struct config *ncfg, char **cause)
{
	const struct config *ocfg = e->cfg;
	struct backend_rt *nb = NULL;
	struct route_rt *nr = NULL;
	int *bmap = NULL, *rmap = NULL; /* old index -> new index (-1: gone) */
	int onb = e->nbackends_all, onr = e->nroutes_all, nnb, nnr, i, j;
	int64_t now = clock_mono_ms();
	struct cfg_hold *h;
	char detail[256];

	/* The only step that can fail goes first: then nothing has changed. */
	if (obs_reconfigure(e->obs, ncfg, clock_wall_ms(), cause) != 0) {
		config_free(ncfg);
		return -EIO;
	}
	if (strcmp(ocfg->listen, ncfg->listen) != 0)
		log_warn("reload", "listen changed (%s -> %s): takes effect at restart", ocfg->listen,
			 ncfg->listen);
	if (strcmp(ocfg->database, ncfg->database) != 0)
		log_warn("reload", "database changed: takes effect at restart");
	bmap = xcalloc((size_t)MAX(onb, 1), sizeof *bmap);
	rmap = xcalloc((size_t)MAX(onr, 1), sizeof *rmap);
	for (i = 0; i < onb; i++)
		bmap[i] = -1;
	for (i = 0; i < onr; i++)
		rmap[i] = -1;

	/* Backends: matched by name, state moved; removed ones still in use
	 * stay after the configured ones until their calls end. */
	nnb = ncfg->nbackends;
	for (i = 0; i < onb; i++)
		if (config_backend_index(ncfg, e->backends[i].cfg->name) < 0 && backend_rt_busy(&e->backends[i]))
			nnb++;
	nb = xcalloc((size_t)MAX(nnb, 1), sizeof *nb);
	for (i = 0; i < ncfg->nbackends; i++) {
		for (j = 0; j < onb; j++)
			if (bmap[j] < 0 && strcmp(e->backends[j].cfg->name, ncfg->backends[i].name) == 0)
				break;
		if (j == onb) {
			backend_rt_init(&nb[i], &ncfg->backends[i]);
			continue;
		}
		nb[i] = e->backends[j];
		bmap[j] = i;
		nb[i].cfg = &ncfg->backends[i];
		breaker_reconfigure(&nb[i].breaker, &ncfg->backends[i].breaker, now);
		bulkhead_set_max(&nb[i].bulkhead, ncfg->backends[i].max_concurrent);
		free(nb[i].api_key);
		nb[i].api_key = NULL;
		if (ncfg->backends[i].api_key_env && getenv(ncfg->backends[i].api_key_env) &&
		    *getenv(ncfg->backends[i].api_key_env))
			nb[i].api_key = xstrdup(getenv(ncfg->backends[i].api_key_env));
	}
	for (i = 0, j = ncfg->nbackends; i < onb; i++) {
		if (bmap[i] >= 0)
			continue;
		if (backend_rt_busy(&e->backends[i])) {
			nb[j] = e->backends[i];
			bmap[i] = j++;
		} else {
			backend_rt_free(&e->backends[i]);
		}
	}

	/* Routes: the same by name; live weights kept when the targets did not change. */
	nnr = ncfg->nroutes;
	for (i = 0; i < onr; i++)
		if (config_route(ncfg, e->routes[i].cfg->name) == NULL && e->routes[i].live_calls > 0)
			nnr++;
	nr = xcalloc((size_t)MAX(nnr, 1), sizeof *nr);
	for (i = 0; i < ncfg->nroutes; i++) {
		const struct route_cfg *rc = &ncfg->routes[i];

		for (j = 0; j < onr; j++)
			if (rmap[j] < 0 && strcmp(e->routes[j].cfg->name, rc->name) == 0)
				break;
		if (j == onr) {
			route_rt_init(&nr[i], rc);
			continue;
		}
		nr[i] = e->routes[j];
		rmap[j] = i;
		if (!same_targets(e->routes[j].cfg, rc) ||
		    rc->canary_guard.enabled != (nr[i].canary != NULL)) {
			free(nr[i].weights);
			nr[i].weights = xcalloc((size_t)MAX(rc->ntargets, 1), sizeof *nr[i].weights);
			for (j = 0; j < rc->ntargets; j++)
				nr[i].weights[j] = rc->targets[j].weight;
			free(nr[i].canary);
			nr[i].canary = rc->canary_guard.enabled
					       ? xcalloc((size_t)MAX(rc->ntargets, 1), sizeof *nr[i].canary)
					       : NULL;
		}
		nr[i].cfg = rc;
	}
	for (i = 0, j = ncfg->nroutes; i < onr; i++) {
		if (rmap[i] >= 0)
			continue;
		if (e->routes[i].live_calls > 0) {
			nr[j] = e->routes[i];
			rmap[i] = j++;
		} else {
			route_rt_free(&e->routes[i]);
		}
	}

	/* Live calls and attempts point into the arrays: move them along. */
	call_remap_all(e, nr, rmap, nb, bmap);

	free(e->backends);
	free(e->routes);
	e->backends = nb;
	e->routes = nr;
	e->nbackends = ncfg->nbackends;
	e->nbackends_all = nnb;
	e->nroutes = ncfg->nroutes;
	e->nroutes_all = nnr;
	for (i = 0; i < e->nbackends_all; i++)
		engine_bulkhead_wake(e, &e->backends[i]);

	free(e->route_names);
	e->route_names = xcalloc((size_t)MAX(ncfg->nroutes, 1), sizeof *e->route_names);
	for (i = 0; i < ncfg->nroutes; i++)
		e->route_names[i] = ncfg->routes[i].name;
	h = xcalloc(1, sizeof *h);
	h->cfg = ncfg;
	h->next = e->hold;
	e->hold = h;
	e->cfg = ncfg;
	review_q_reconfigure(e, clock_wall_ms());
	log_set_level(ncfg->log.level);
	/* The previous configuration goes when its last call ends (maybe now). */
	h->next->refs++;
	engine_hold_put(e, h->next);

	snprintf(detail, sizeof detail, "configuration reloaded: %d backends, %d routes",
		 ncfg->nbackends, ncfg->nroutes);
	log_info("reload", "%s", detail);
	engine_event(e, "reload", ncfg->path ? ncfg->path : "config", detail);
	free(bmap);
	free(rmap);
	return 0;
}

int
engine_reload_from_disk(struct engine *e, char **cause)
{
	struct config *ncfg = NULL;
	struct tokens *tokens = NULL;
	int r;

	r = config_load(e->cfg->path, &ncfg, cause);
	if (r != 0)
		return r;
	r = tokens_load(ncfg->tokens_file, &tokens, cause);
	if (r != 0 && r != -ENOENT) {
		config_free(ncfg);
		return r;
	}
	if (r == -ENOENT) {
		free(*cause);
		*cause = NULL;
	}
	{
		int crt = ncfg->callers_require_token, mp = ncfg->metrics_public;

		/* Tokens change only with a configuration that was applied. */
		r = engine_reload(e, ncfg, cause);
		if (r == 0 && e->srv)
			http_set_auth(e->srv, tokens, crt, mp);
		else
			tokens_free(tokens);
	}
	return r;
}
