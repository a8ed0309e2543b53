#pragma once
/*
 * fusebox-mockllm's private header: its limits, the behaviour, backend and
 * request types, the one shared state (struct mock, guarded by mock.lock)
 * and the functions its files share. The design note is in main.c.
 */
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#define BODY_MAX	 (4 * 1024 * 1024)
#define SCENARIO_MAX	 (1024 * 1024)
#define ARRIVALS_MAX	 1000
#define BACKENDS_MAX	 1024
#define BACKEND_NAME_MAX 64
#define SCRIPT_MAX	 10000
#define MS_MAX		 (24LL * 3600 * 1000)
#define BODY_BYTES_MAX	 (1024LL * 1024 * 1024)
#define LOOP_PAUSE_MS	 20000
#define WAIT_FOREVER	 INT64_MAX
#define READ_BLOCK	 (16 * 1024)
#define STREAM_PIECES	 4

enum preset {
	PRESET_GOOD,
	PRESET_FENCED,
	PRESET_PROSE,
	PRESET_TRUNCATED,
	PRESET_WRONG_ENUM,
	PRESET_CONFIDENCE_OUT_OF_RANGE,
	PRESET_CONFIDENCE_STRING,
	PRESET_KEY_CASE,
	PRESET_EMPTY,
	PRESET_LOW_CONFIDENCE,
	PRESET_COUNT
};

/*
 * What a backend does with one request. Strings are owned. Integers use 0
 * for "off" except reset_after_bytes, body_bytes, delay_min/max_ms and
 * tail_delay_ms, which use -1; tail_pct uses -1 too, knee_exp defaults to 1.
 * The keys and their semantics are listed above behave_fields (behave.c).
 */
struct behave {
	char *content;
	int preset;
	int64_t delay_ms;
	int64_t delay_min_ms;
	int64_t delay_max_ms;
	int64_t status;
	char *retry_after;
	int hang;
	int64_t hang_ms;
	int reset;
	int64_t reset_after_bytes;
	int64_t drip_ms;
	int truncate;
	char *content_type;
	char *body;
	int64_t body_bytes;
	int64_t stream_first_delay_ms;
	int64_t stream_chunk_ms;
	char *tool_calls;      /* JSON array of {"id","name","arguments"}: answer with tool calls */
	char *finish_reason;   /* NULL: "stop" ("tool_calls" with tool_calls) */
	double tail_pct;       /* 0..100: share of requests delayed tail_delay_ms */
	int64_t tail_delay_ms; /* the tail's delay, instead of delay_ms/min..max */
	int64_t knee;	       /* in-flight requests the backend serves at full speed */
	double knee_exp;       /* delay x (inflight / knee)^knee_exp past the knee */
	int64_t ratelimit_requests; /* requests per window (0: unlimited) */
	int64_t ratelimit_tokens;   /* tokens per window (0: unlimited) */
	int64_t ratelimit_reset_ms; /* the window's length */
};

struct backend {
	char name[BACKEND_NAME_MAX + 1];
	struct behave base;
	struct behave *script;
	size_t nscript;
	size_t script_pos;
	uint64_t requests;
	uint64_t completed;
	uint64_t aborted;
	int64_t inflight;
	int64_t max_inflight;
	uint64_t tail_delayed; /* requests given the tail delay */
	uint64_t knee_delayed; /* requests slowed by the knee */
	uint64_t ratelimited;  /* requests refused with 429 by the window */
	int64_t rl_end_ms;     /* monotonic end of the rate-limit window; 0: none */
	int64_t rl_requests;   /* requests admitted in the window */
	int64_t rl_tokens;     /* tokens admitted in the window */
	cJSON *last_request;
	int64_t arrivals[ARRIVALS_MAX];
	size_t arrivals_n;
	size_t arrivals_next;
	struct backend *next;
};

/* One piece of a response body; data NULL means len bytes of fill. */
struct seg {
	char *data;
	size_t len;
	char fill;
	int64_t due_ms; /* monotonic; not sent before */
};

enum req_kind {
	REQ_CHAT,
	REQ_CONTROL,
	REQ_OTHER,
};

enum req_phase {
	PHASE_RECV,
	PHASE_WAIT,
	PHASE_SEND,
};

struct req {
	struct MHD_Connection *conn;
	int fd;
	enum req_kind kind;
	enum req_phase phase;
	struct backend *backend; /* REQ_CHAT only; never freed */
	uint64_t id;
	int64_t arrival_ms;
	char *body;
	size_t body_len;
	size_t body_cap;
	int too_big;
	cJSON *headers;
	struct behave bh;
	char *model;
	int stream;
	int include_usage; /* stream_options.include_usage */
	int n;		   /* choices asked for */
	int64_t prompt_tokens;
	unsigned int status;

	/* Rate-limit window, fixed in chat_start (rl 0: no window). */
	int rl;
	int rl_refused;	      /* 0, 1: over the requests, 2: over the tokens */
	int64_t rl_limit_req; /* 0: no request limit */
	int64_t rl_left_req;
	int64_t rl_limit_tok; /* 0: no token limit */
	int64_t rl_left_tok;
	int64_t rl_end_ms; /* monotonic */

	/* Guarded by mock.lock. */
	int suspended;
	int gone;
	int64_t due_ms;
	size_t heap_idx;

	/* Response body, read by the MHD thread only. */
	struct seg *segs;
	size_t nsegs;
	size_t cur;
	uint64_t cur_start;
	uint64_t total;
	int64_t limit;
	int64_t drip_ms;
	int64_t next_drip_ms;
};

struct mock {
	pthread_mutex_t lock;
	int epfd;
	int wakefd;
	int stopping;
	int quiet;
	int64_t start_ms;
	uint64_t next_id;
	uint64_t rng;
	struct backend *backends;
	size_t nbackends;
	struct req **heap;
	size_t heap_len;
	size_t heap_cap;
	cJSON *scenario;
	const cJSON *timeline;
	int scen_n;
	int scen_idx;
	int scen_loop;
	int64_t scen_base_ms;
	int64_t scen_period_ms;
};

extern struct mock mock;
extern const char *const preset_texts[PRESET_COUNT];

/* util.c: the shared state and private helpers (the mock links nothing of the daemon). */
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t mono_ms(void);
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t rng_next(void);
void duration_format(char *buf, size_t n, int64_t ms);

/* behave.c: behaviours, backends, the heap and suspension. */
void behave_init(struct behave *b);
void behave_free(struct behave *b);
void behave_copy(struct behave *dst, const struct behave *src);
void script_free(struct behave *script, size_t n);
int behave_parse(const cJSON *j, struct behave *b, struct behave **scriptp, size_t *nscriptp,
		 char **cause);
int backend_name_valid(const char *s, size_t n);
struct backend *backend_get(const char *name, size_t n);
void backend_free(struct backend *be);
void backend_window_clear(struct backend *be);
int backend_set(const char *name, const cJSON *j, char **cause);
void mock_wake(void);
struct MHD_Connection *req_unsuspend(struct req *r);
int req_suspend(struct req *r, int64_t due_ms);
int req_alive(struct req *r);
void req_free(struct req *r);

/* respond.c: responses, SSE and the chat endpoint (MHD thread). */
enum MHD_Result respond_error(struct req *r, unsigned int status, const char *message);
enum MHD_Result respond_json(struct req *r, unsigned int status, cJSON *j);
enum MHD_Result chat_handle(struct req *r, const char *method);

/* control.c: the control API under /_mock/ (MHD thread). */
enum MHD_Result control_handle(struct req *r, const char *url, const char *method);

/* scenario.c: the scenario timeline and the timer thread. */
void scenario_step(int64_t now);
int scenario_load(const char *path);
void *timer_main(void *arg);
