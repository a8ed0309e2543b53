#pragma once
/*
 * engine: the event loop thread and the runtime state it guards. One
 * epoll set drives one attached source (the HTTP server: engine_source),
 * libcurl's multi handle (curl_multi_socket_action; a finished transfer
 * calls the done hook its engine_transfer carries), a timer heap
 * (deadlines, backoff, first-byte timers, the cron) and a task queue fed
 * by other threads (engine_post, woken through an eventfd). The cron and
 * the before-sleep step call hooks the modules registered
 * (engine_on_tick, engine_on_before_sleep): the loop knows nothing of
 * calls, jobs, reviews or HTTP. All runtime state — breakers, bulkheads,
 * health, route levels, the idempotency table — lives here and is touched
 * only on this thread, so none of it is locked. No thread ever waits on
 * an LLM: a call in flight is a curl easy handle plus timers. The
 * composition root (daemon.c) creates the services and wires the hooks.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>

#include "breaker.h"
#include "bulkhead.h"
#include "canary_guard.h"
#include "config.h"
#include "escalation.h"
#include "health.h"
#include "gate.h"
#include "retry.h"
#include "rng.h"
#include "store.h"
#include "timerheap.h"

struct call;
struct engine;
struct idem;
struct cache;
struct obs;
struct notify;
struct jobs;
struct review_q;

/* Runtime state of one backend (breaker, bulkhead, health). */
struct backend_rt {
	const struct backend_cfg *cfg;
	struct breaker breaker;
	struct bulkhead bulkhead;
	struct health health;
	struct gate gate; /* adaptive limit (bulkhead.max), rate limits, first-byte times */
	char *api_key;	  /* from the environment; never logged, stored or shown */
	uint64_t seen_transitions;
	uint64_t attempts;
};

/* How a hedged attempt ended (fusebox_hedges_total{result}). */
enum hedge_result {
	HEDGE_WON = 0, /* the hedge answered first; the attempt it hedged was cancelled */
	HEDGE_LOST,    /* the attempt it hedged answered first; the hedge was cancelled */
	HEDGE_FAILED,  /* the hedge itself failed */
	HEDGE_DENIED,  /* due, but the retry budget (or no room) said no */
	HEDGE__COUNT
};

/* Runtime state of one route. */
struct route_rt {
	const struct route_cfg *cfg;
	/* The forced part of the level: written only by control_level_set(). */
	int forced_level; /* -1: none */
	char *forced_actor;
	char *forced_reason;
	int64_t forced_until_wall; /* 0: no TTL */
	int auto_level;		   /* == esc.level, kept for readers */
	struct escalation esc;	   /* the auto level's state machine */
	uint64_t seen_esc_changes;
	struct retry_budget rbudget;
	int *weights; /* live weights of cfg->targets (operator / canary guard) */
	uint64_t calls;
	uint64_t retries_denied; /* retry budget said no */
	uint64_t hedges[HEDGE__COUNT];
	int live_calls;		     /* calls running on this route now */
	struct canary_track *canary; /* per primary target, when canary_guard is on */
};

/* A configuration and the live calls still running on it (reload). */
struct cfg_hold {
	struct config *cfg; /* owned */
	int refs;	    /* live calls started under it */
	struct cfg_hold *next;
};

typedef void (*engine_task_fn)(struct engine *e, void *arg);

/*
 * A transfer on the engine's curl multi handle. Every easy handle the
 * loop drives has CURLOPT_PRIVATE set to one of these, usually embedded in
 * its owner (an attempt); when libcurl reports it done the loop calls
 * done(e, t, code) on the engine thread. The loop knows nothing else of
 * what the transfer is for.
 */
struct engine_transfer;
typedef void (*engine_transfer_done_fn)(struct engine *e, struct engine_transfer *t, CURLcode code);
struct engine_transfer {
	engine_transfer_done_fn done;
};

struct engine_task {
	struct engine_task *next;
	engine_task_fn fn;
	void *arg;
};

/* A cron hook: once a second on the engine thread, with both clocks read once. */
typedef void (*engine_tick_fn)(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms);

#define ENGINE_HOOKS_MAX 16

struct engine_hook {
	engine_tick_fn tick; /* engine_on_tick */
	engine_task_fn task; /* engine_on_before_sleep */
	void *arg;
};

/*
 * The loop's one I/O source besides libcurl: the HTTP server. The loop
 * watches fd for input and runs a pass (run) when it was readable, when
 * pending() says answers wait to be written, or when timeout_ms() has
 * passed; the drain calls quiesce() once and waits until active() is 0
 * (or a few seconds pass).
 */
struct engine_source {
	int fd;	       /* readable when run() has I/O to do */
	int accept_fd; /* readable when connections wait to be accepted (-1: none) */
	void *arg;
	void (*run)(void *arg, int accept); /* accept: accept_fd was readable */
	int64_t (*timeout_ms)(void *arg);   /* < 0: no pass needed without I/O */
	int (*pending)(void *arg);
	int (*active)(void *arg);
	void (*quiesce)(void *arg);
};

/* Exposed in /metrics (api_slo.c). */
struct engine_counters {
	uint64_t calls;
	uint64_t replays;
	uint64_t rejected_inflight; /* 429 */
	uint64_t wire_resends;	    /* libcurl re-sent a request on a dead reused connection */
};

struct engine {
	const struct config *cfg; /* the current configuration (== hold->cfg) */
	struct cfg_hold *hold;	  /* current; older ones follow while calls use them */
	struct http_server *srv;  /* set by daemon.c, for reload (tokens); the loop uses src */
	struct engine_source src; /* the attached source (src.run NULL: none) */
	struct engine_hook tick_hooks[ENGINE_HOOKS_MAX];
	int ntick_hooks;
	struct engine_hook sleep_hooks[ENGINE_HOOKS_MAX];
	int nsleep_hooks;
	int nbackends_all; /* backends incl. removed ones still in use (after nbackends) */
	int nroutes_all;
	struct store *store;
	CURLM *multi;
	CURLSH *h2_share; /* the connection pool of http_version "2" backends (call.c) */
	int h2c_reuse;	  /* libcurl >= 8.0.0 can reuse h2 prior-knowledge connections */
	CURL **easy_pool; /* idle easy handles, reset, for the next attempts */
	int neasy_pool;
	struct curl_fd *curl_fds; /* by descriptor: what our epoll set holds for libcurl */
	int ncurl_fds;
	int epfd;
	int evfd;
	struct timerheap timers;
	struct timer curl_timer;
	struct timer cron_timer;
	pthread_t thread;
	int thread_started;
	pthread_mutex_t qlock;
	struct engine_task *qhead, *qtail;
	struct backend_rt *backends;
	int nbackends;
	struct route_rt *routes;
	int nroutes;
	struct rng rng;
	int64_t next_call_id;
	int64_t next_attempt_id;
	int64_t next_vfail_id;
	int64_t next_degradation_id;
	struct idem *idem;
	struct budget_crowd *crowd; /* deadlines due together (budget.h) */
	struct cache *cache;
	struct store_reader *reader; /* engine thread's read connection */
	struct obs *obs;	     /* SLO counters, metrics, alerts */
	struct notify *notify;	     /* webhook / callback delivery thread */
	struct jobs *jobs;	     /* the L3 async queue */
	struct review_q *review_q;   /* review queue: open counts, overflow (review_q.c) */
	struct control *control;     /* the forced levels' TTL timer (control.c) */
	/* After a call's valid model answer (primary: answered by the primary
	 * step), off the caller's path; set by daemon.c (call_shadow.c). */
	void (*call_after_answer)(struct call *c, const cJSON *result, int has_conf, double conf,
				  int primary);
	const char **route_names;
	int inflight;		/* calls admitted and not answered */
	struct call *calls;	/* live calls (doubly linked) */
	int commits_pending;	/* engine_commit_later() not yet completed: the drain waits */
	struct call *closing;	/* finished calls, reaped before sleep */
	int http_fd;		/* MHD's epoll descriptor in epfd, -1 without HTTP */
	int http_accept_fd;	/* the source's accept_fd in epfd, -1 without one */
	unsigned http_batch;	/* requests read in this http_run() */
	int64_t http_due_us;	/* MHD wants a pass by then (MHD_get_timeout) */
	int64_t drain_until_us; /* drain: give up writing answers after this */
	int stopping;		/* SIGTERM: no new calls, drain */
	int stop_now;
	int exited; /* the loop thread is gone: posted tasks run inline (under qlock) */
	int64_t started_wall_ms;
	uint64_t cron_ticks;
	struct engine_counters counters;
};

/*
 * Create the engine for cfg (consumed: the engine owns and frees it) and
 * st: the loop, the runtime state of every backend and route, the reader
 * connection and the row ids. No services: daemon_create() adds them.
 */
int engine_create(struct config *cfg, struct store *st, struct engine **out, char **cause);
/* Runtime state of a backend / route from its configuration (and back); reload.c uses them too. */
void engine_backend_rt_init(struct backend_rt *b, const struct backend_cfg *bc);
void engine_backend_rt_free(struct backend_rt *b);
void engine_route_rt_init(struct route_rt *rt, const struct route_cfg *rc);
void engine_route_rt_free(struct route_rt *rt);
/* Register a cron hook / a before-sleep hook (run in registration order). 0 or -ENOSPC. */
int engine_on_tick(struct engine *e, engine_tick_fn fn, void *arg);
int engine_on_before_sleep(struct engine *e, engine_task_fn fn, void *arg);
/* Run the before-sleep hooks now (the loop does so every turn; daemon_free once more). */
void engine_before_sleep(struct engine *e);
/* Take the config hold of a new call / release it when the call is freed. */
struct cfg_hold *engine_hold_get(struct engine *e);
void engine_hold_put(struct engine *e, struct cfg_hold *h);
/* Index of a backend / route by name in the current configuration, -1 when absent. */
int engine_backend_index(const struct engine *e, const char *name);
/* Put the source in the loop (before engine_start; src copied). 0, -EBUSY or -errno. */
int engine_attach_source(struct engine *e, const struct engine_source *src);
/* The source, for each request it hands to a handler (runs due timers every few). */
void engine_http_request(struct engine *e);
/* Start the loop thread. */
int engine_start(struct engine *e);
/* Run fn(e, arg) on the engine thread, soon. Thread-safe. */
void engine_post(struct engine *e, engine_task_fn fn, void *arg);
/*
 * Commit ops (copied) with synchronous=FULL without blocking the loop
 * (store_commit_later): done(e, arg, rc, last_rowid, cause) runs later on
 * the engine thread, after the COMMIT (rc 0) or the failure (STORE_E_SQL,
 * cause borrowed for the call). A handler answers from done with its
 * connection suspended meanwhile, so a 202 still means durable; the
 * promises made in one turn of the loop share one fsync. The drain waits
 * for every one. 0, or the store's error (done is then never called).
 * Engine thread.
 */
typedef void (*engine_commit_fn)(struct engine *e, void *arg, int rc, int64_t last_rowid,
				 const char *cause);
int engine_commit_later(struct engine *e, const struct store_op *ops, int nops,
			engine_commit_fn done, void *arg);
/* Drain: refuse new calls, let live calls finish (they end by their deadlines), stop the loop,
 * join. */
void engine_stop(struct engine *e);
void engine_free(struct engine *e);

/* Engine-thread helpers used by call.c and the API handlers. */
void engine_timer_arm(struct engine *e, struct timer *t, int64_t at_us);
void engine_timer_cancel(struct engine *e, struct timer *t);
/*
 * libcurl easy handles for attempts, reused: engine_easy_get() gives one
 * with default options (aborts when out of memory, as xmalloc());
 * engine_easy_put() takes back one no multi handle holds.
 */
CURL *engine_easy_get(struct engine *e);
void engine_easy_put(struct engine *e, CURL *h);
int engine_route_index(const struct engine *e, const char *name);
/*
 * Route i's forced level (-1: none) and its effective level (forced, else
 * auto). Read-only: a TTL's end is control_level_tick()'s write, run by
 * control's timer at forced_until.
 */
int engine_route_forced(const struct engine *e, int i);
int engine_route_level(const struct engine *e, int i);
/* Emit breaker transition events for backend b if its breaker moved. */
void engine_breaker_events(struct engine *e, struct backend_rt *b);
/* Sync rt->auto_level with its state machine; emits the "level" event of a change. */
void engine_route_escalation_events(struct engine *e, struct route_rt *rt);
/* Write an events row (async), at now / at at_wall_ms. */
void engine_event(struct engine *e, const char *kind, const char *subject, const char *detail);
void engine_event_at(struct engine *e, int64_t at_wall_ms, const char *kind, const char *subject,
		     const char *detail);
