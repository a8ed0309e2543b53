#pragma once
/*
 * traffic: the private header of fusebox-traffic's files (contrib/traffic/):
 * limits, the run's state and what the files share. One thread: main.c
 * parses the options and drives the run (send.c) after input.c has read
 * the routes, the inputs and the token; report.c prints the summary.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define ROUTES_MAX	 16
#define ROUTE_NAME_MAX	 64
#define WEIGHT_MAX	 1000
#define INPUTS_MAX	 10000
#define INPUT_LINE_MAX	 4096
#define INPUTS_FILE_MAX	 (4 * 1024 * 1024)
#define TOKEN_MAX	 512
#define RESP_MAX	 (256 * 1024)
#define LAT_KEEP	 100000
#define STATUS_MAX	 600
#define RPS_MAX		 5000.0
#define DURATION_MAX	 86400
#define COUNT_MAX	 100000000L
#define INFLIGHT_DEFAULT 256
#define INFLIGHT_MAX	 4096
#define TIMEOUT_DEFAULT	 30000
#define TIMEOUT_MAX	 600000
#define DRAIN_MS	 15000
#define POLL_MAX_MS	 100
#define URL_MAX		 512

enum source {
	SRC_LLM,
	SRC_BACKUP,
	SRC_RULES,
	SRC_CACHE,
	SRC_PRESET,
	SRC_MANUAL,
	SRC_QUEUED,
	SRC_FAILED,
	SRC_OTHER,
	SRC_COUNT
};

extern const char *const source_names[SRC_COUNT];
extern volatile sig_atomic_t signals_seen;

/* Latency samples in microseconds; a reservoir once LAT_KEEP are kept. */
struct lat {
	int64_t *v;
	size_t n;
	uint64_t seen;
};

struct stats {
	uint64_t calls; /* finished: answered, or failed in transport */
	uint64_t by_source[SRC_COUNT];
	uint64_t by_status[STATUS_MAX]; /* [0]: no HTTP answer */
	uint64_t degraded;
	uint64_t review_pending;
	uint64_t async;
	uint64_t no_llm;
	struct lat lat;
};

struct route {
	char name[ROUTE_NAME_MAX + 1];
	unsigned int weight;
	struct stats st;
};

struct opts {
	const char *url;
	const char *routes;
	const char *inputs;
	const char *token_file;
	double rps;
	long duration_s;
	long count;
	double async_ratio;
	double no_llm_ratio;
	long max_inflight;
	long timeout_ms;
	uint64_t seed;
	int seeded;
	int json;
};

/* One call on the wire. */
struct req {
	CURL *easy;
	struct curl_slist *hdrs;
	char *body;
	char *resp;
	size_t resp_len;
	int too_big;
	int route;
	int async;
	int no_llm;
	struct req *prev;
	struct req *next;
};

struct traffic {
	struct opts o;
	char base[URL_MAX];
	char auth[TOKEN_MAX + 32];
	struct route routes[ROUTES_MAX];
	int nroutes;
	unsigned int wsum;
	char **inputs;
	size_t ninputs;
	int builtin;
	CURLM *multi;
	struct req *live; /* calls on the multi handle */
	uint64_t rng;
	uint64_t run_id;
	uint64_t sent;
	uint64_t skipped;
	uint64_t aborted;
	uint64_t answered;
	int inflight;
	struct stats total;
	int64_t start_ms;
	int64_t stop_ms;
};

/* input.c */
void *xcalloc(size_t n, size_t size);
int64_t mono_ms(void);
uint64_t rng_next(uint64_t *s);
double rng_unit(uint64_t *s);
int parse_long(const char *s, long lo, long hi, long *out);
int parse_double(const char *s, double lo, double hi, double *out);
int routes_parse(struct traffic *t, const char *spec);
int url_check(struct traffic *t, const char *url);
int inputs_load(struct traffic *t, const char *path);
int token_load(struct traffic *t, const char *path);

/* send.c */
void run(struct traffic *t);

/* report.c */
void lat_add(struct lat *l, int64_t us, uint64_t *rng);
void summary_text(struct traffic *t, double elapsed_s);
void summary_json(struct traffic *t, double elapsed_s);
