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
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "clock.h"
#include "log.h"
#include "util.h"

#define CRON_MS 1000
/* After the last call of a drain, answers still being written get this long. */
#define DRAIN_WRITE_MS	  5000
#define RETENTION_EVERY_S 3600 /* and once a minute after start */

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
	*curl_fd_slot(e, fd) = (struct curl_fd){.ours = 1};
	(void)purpose;
	return fd;
}

static int
engine_curl_close(void *clientp, curl_socket_t fd)
{
	struct engine *e = clientp;

	/* close() takes it out of the epoll set (libcurl never dups it). */
	if (fd >= 0 && fd < e->ncurl_fds)
		e->curl_fds[fd] = (struct curl_fd){0};
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
engine_route_forced(const struct engine *e, int i)
{
	/* A TTL ends when control's timer runs control_level_tick() (within a
	 * loop turn of forced_until): until then the level is in force, so
	 * what the API shows and the events it has written never disagree. */
	return e->routes[i].forced_level;
}

int
engine_route_level(const struct engine *e, int i)
{
	int forced = engine_route_forced(e, i);

	return forced >= 0 ? forced : e->routes[i].auto_level;
}

void
engine_event_at(struct engine *e, int64_t at_wall_ms, const char *kind, const char *subject,
		const char *detail)
{
	struct store_val v[] = {SVI(at_wall_ms), SVT(kind), SVT(subject), SVT(detail)};

	store_put(e->store, STORE_EVENT_INSERT, v, (int)ARRAY_SIZE(v));
}

void
engine_event(struct engine *e, const char *kind, const char *subject, const char *detail)
{
	engine_event_at(e, clock_wall_ms(), kind, subject, detail);
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

int
engine_on_tick(struct engine *e, engine_tick_fn fn, void *arg)
{
	if (e->ntick_hooks >= ENGINE_HOOKS_MAX)
		return -ENOSPC;
	e->tick_hooks[e->ntick_hooks++] = (struct engine_hook){.tick = fn, .arg = arg};
	return 0;
}

int
engine_on_before_sleep(struct engine *e, engine_task_fn fn, void *arg)
{
	if (e->nsleep_hooks >= ENGINE_HOOKS_MAX)
		return -ENOSPC;
	e->sleep_hooks[e->nsleep_hooks++] = (struct engine_hook){.task = fn, .arg = arg};
	return 0;
}

void
engine_before_sleep(struct engine *e)
{
	int i;

	for (i = 0; i < e->nsleep_hooks; i++)
		e->sleep_hooks[i].task(e, e->sleep_hooks[i].arg);
}

/*
 * The cron (Redis's serverCron shape): the engine's own duties — breaker
 * and escalation ticks with their events —, then the hooks the modules
 * registered (engine_on_tick, in registration order), then retention.
 */
static void
cron_fire(struct timer *t, void *arg)
{
	struct engine *e = arg;
	int64_t now = clock_mono_ms(), now_wall = clock_wall_ms();
	int i;

	for (i = 0; i < e->nbackends; i++) {
		breaker_state(&e->backends[i].breaker, now);
		engine_breaker_events(e, &e->backends[i]);
	}
	for (i = 0; i < e->nroutes; i++) {
		struct route_rt *rt = &e->routes[i];

		escalation_tick(&rt->esc, &rt->cfg->escalation, now);
		engine_route_escalation_events(e, rt);
	}
	for (i = 0; i < e->ntick_hooks; i++)
		e->tick_hooks[i].tick(e, e->tick_hooks[i].arg, now, now_wall);
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
	if (!ready && !e->stopping && !e->src.pending(e->src.arg) && now_us < e->http_due_us)
		return 0;
	e->http_batch = 0;
	return 1;
}

/* What made the source readable since its last pass (engine_main). */
#define HTTP_READY_IO	  1
#define HTTP_READY_ACCEPT 2

/*
 * One pass of MHD when due; then note when it wants the next without I/O.
 * It accepts only when the listen socket was readable: an accept that
 * finds nothing is a syscall on every pass (three a request at c=1).
 */
static void
engine_http_pass(struct engine *e, int *ready, int64_t now_us)
{
	int64_t to;
	int accept;

	if (e->src.run == NULL || !engine_http_due(e, *ready, now_us))
		return;
	accept = (*ready & HTTP_READY_ACCEPT) != 0;
	*ready = 0;
	e->src.run(e->src.arg, accept);
	to = e->src.timeout_ms(e->src.arg);
	e->http_due_us = to < 0 ? INT64_MAX : clock_mono_us() + MIN(to, 3600 * 1000) * 1000;
}

/* Has the drain finished: no call, no task, every answer written (or 5 s passed)? */
static int
engine_drained(struct engine *e, int64_t now_us)
{
	if (!e->stopping || e->calls != NULL || e->qhead != NULL || e->commits_pending > 0)
		return 0;
	if (e->src.run == NULL || e->src.active(e->src.arg) == 0)
		return 1;
	if (e->drain_until_us == 0)
		e->drain_until_us = now_us + DRAIN_WRITE_MS * 1000;
	if (now_us < e->drain_until_us)
		return 0;
	log_warn("engine", "stopping with %d requests still unanswered after %d ms",
		 e->src.active(e->src.arg), DRAIN_WRITE_MS);
	return 1;
}

static void *
engine_main(void *arg)
{
	struct engine *e = arg;
	struct epoll_event evs[256];
	int running, i, n, http_ready = HTTP_READY_IO | HTTP_READY_ACCEPT;

	while (!e->stop_now) {
		int64_t now = clock_mono_us(), next;
		int timeout;

		timerheap_run(&e->timers, now);
		run_tasks(e);
		check_multi_info(e);
		engine_http_pass(e, &http_ready, now);
		/* A transfer the pass started wants libcurl's first step now (a
		 * timer due at once): it sends in this turn, not after an empty
		 * epoll_wait. */
		now = clock_mono_us();
		if (timerheap_next(&e->timers) <= now) {
			timerheap_run(&e->timers, now);
			check_multi_info(e);
		}
		engine_before_sleep(e);
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
		if (e->src.run) {
			if (e->src.pending(e->src.arg) || e->http_due_us <= now)
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
			if (e->src.run && fd == e->http_fd) {
				http_ready |= HTTP_READY_IO;
				continue;
			}
			if (e->src.run && fd == e->http_accept_fd) {
				http_ready |= HTTP_READY_ACCEPT;
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
engine_attach_source(struct engine *e, const struct engine_source *src)
{
	struct epoll_event ev;

	if (e->src.run != NULL)
		return -EBUSY;
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.fd = src->fd;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) < 0)
		return -errno;
	if (src->accept_fd >= 0) {
		ev.data.fd = src->accept_fd;
		if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) < 0) {
			int err = -errno;

			epoll_ctl(e->epfd, EPOLL_CTL_DEL, src->fd, NULL);
			return err;
		}
	}
	e->http_fd = src->fd;
	e->http_accept_fd = src->accept_fd;
	e->src = *src;
	return 0;
}

void
engine_backend_rt_init(struct backend_rt *b, const struct backend_cfg *bc)
{
	const char *key;

	b->cfg = bc;
	breaker_init(&b->breaker, &bc->breaker);
	bulkhead_init(&b->bulkhead, bc->max_concurrent);
	health_init(&b->health);
	gate_init(&b->gate, bc, &b->bulkhead, clock_mono_ms());
	key = bc->api_key_env ? getenv(bc->api_key_env) : NULL;
	b->api_key = key && *key ? xstrdup(key) : NULL;
	if (bc->api_key_env && b->api_key == NULL)
		log_warn("engine",
			 "backend %s: environment variable %s is not set; calling without a key",
			 bc->name, bc->api_key_env);
}

void
engine_backend_rt_free(struct backend_rt *b)
{
	breaker_free(&b->breaker);
	free(b->api_key);
	b->api_key = NULL;
}

void
engine_route_rt_init(struct route_rt *rt, const struct route_cfg *rc)
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

void
engine_route_rt_free(struct route_rt *rt)
{
	free(rt->canary);
	rt->canary = NULL;
	free(rt->weights);
	free(rt->forced_actor);
	free(rt->forced_reason);
	rt->weights = NULL;
	rt->forced_actor = rt->forced_reason = NULL;
}

/*
 * The store's settings from the config: the text bound of log rows and,
 * with database_group, the DB files' group and mode 0640.
 */
static int
engine_storage_setup(const struct config *cfg, struct store *st, char **cause)
{
	struct group gr, *found = NULL;
	char buf[4096], *end, *why = NULL;
	unsigned long v;
	gid_t gid;
	int r;

	store_limit_set(st, cfg->log.max_input_bytes);
	if (cfg->database_group == NULL)
		return 0;
	v = strtoul(cfg->database_group, &end, 10);
	if (*cfg->database_group != '\0' && *end == '\0') {
		gid = (gid_t)v;
	} else if (getgrnam_r(cfg->database_group, &gr, buf, sizeof buf, &found) == 0 &&
		   found != NULL) {
		gid = found->gr_gid;
	} else {
		*cause = xasprintf("database_group: no group \"%s\"", cfg->database_group);
		return -ENOENT;
	}
	r = store_files_share(cfg->database, gid, &why);
	if (r != 0) {
		*cause = xasprintf("database_group: %s", why != NULL ? why : strerror(-r));
		free(why);
	}
	return r;
}

int
engine_create(struct config *cfg, struct store *st, struct engine **out, char **cause)
{
	struct engine *e = xcalloc(1, sizeof *e);
	struct store_reader *rd = NULL;
	struct epoll_event ev;
	int i, r = 0;

	e->cfg = cfg;
	e->hold = xcalloc(1, sizeof *e->hold);
	e->hold->cfg = cfg;
	e->store = st;
	e->http_fd = -1;
	e->http_accept_fd = -1;
	e->epfd = -1;
	e->evfd = -1;
	pthread_mutex_init(&e->qlock, NULL);
	timerheap_init(&e->timers);
	timer_init(&e->curl_timer, "curl", curl_timer_fire, e);
	timer_init(&e->cron_timer, "cron", cron_fire, e);
	rng_seed_entropy(&e->rng);
	e->started_wall_ms = clock_wall_ms();
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
		engine_backend_rt_init(&e->backends[i], &cfg->backends[i]);
	e->nroutes = e->nroutes_all = cfg->nroutes;
	e->routes = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *e->routes);
	for (i = 0; i < cfg->nroutes; i++)
		engine_route_rt_init(&e->routes[i], &cfg->routes[i]);

	r = engine_storage_setup(cfg, st, cause);
	if (r != 0)
		goto out;
	/* Row ids continue after the highest one on disk (rows are written
	 * asynchronously, so the daemon assigns them). */
	if (store_reader_open(cfg->database, &rd, cause) != 0) {
		r = -EIO;
		goto out;
	}
	e->next_call_id = store_reader_run_int(rd, STORE_Q_CALL_MAX_ID, NULL, 0, 0) + 1;
	e->next_attempt_id = store_reader_run_int(rd, STORE_Q_ATTEMPT_MAX_ID, NULL, 0, 0) + 1;
	e->next_vfail_id = store_reader_run_int(rd, STORE_Q_VFAIL_MAX_ID, NULL, 0, 0) + 1;
	e->next_degradation_id =
		store_reader_run_int(rd, STORE_Q_DEGRADATION_MAX_ID, NULL, 0, 0) + 1;
	e->route_names = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *e->route_names);
	for (i = 0; i < cfg->nroutes; i++)
		e->route_names[i] = cfg->routes[i].name;
	e->reader = rd;
	rd = NULL;
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

	/*
	 * From here on the reader serves requests on the engine thread: no read
	 * may hold the loop longer than database_read_timeout_ms (the loads
	 * before this, at start-up, are not bounded).
	 */
	store_reader_deadline_set(e->reader, e->cfg->database_read_timeout_ms);

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
	if (e->src.quiesce)
		e->src.quiesce(e->src.arg);
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
	engine_before_sleep(e);
	if (e->multi)
		curl_multi_cleanup(e->multi);
	while (e->neasy_pool > 0)
		curl_easy_cleanup(e->easy_pool[--e->neasy_pool]);
	free(e->easy_pool);
	if (e->h2_share)
		curl_share_cleanup(e->h2_share); /* after the handles that used it */
	for (i = 0; i < e->nbackends_all; i++)
		engine_backend_rt_free(&e->backends[i]);
	free(e->backends);
	for (i = 0; i < e->nroutes_all; i++)
		engine_route_rt_free(&e->routes[i]);
	free(e->routes);
	free(e->crowd);
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
