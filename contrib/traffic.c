/*
 * fusebox-traffic: a bounded loopback traffic generator for the demo.
 *
 *   fusebox-traffic --url http://127.0.0.1:PORT --routes intent,ticket
 *       --rps 8 --duration 200 [--inputs FILE] [--json]
 *
 * It POSTs /v1/routes/<route>/call with customer messages (English and
 * Chinese: refunds, complaints, questions, small talk), some with
 * "allow_llm": false, some "mode": "async", and prints a summary at the
 * end: calls by route and by answering source, HTTP status codes, p50/p99
 * latency (with --json, the same as one JSON object on stdout).
 *
 * Design. One thread and one curl multi handle: no thread per request, so
 * a slow daemon costs sockets, not threads. Sends follow a Poisson process
 * (exponential gaps, mean 1/rps). The run is bounded twice: it stops sending
 * after --duration seconds or --count calls, whichever comes first, then
 * waits at most DRAIN_MS for the calls in flight and abandons the rest. At
 * most --max-inflight calls are outstanding; a send due while that many
 * wait is skipped (and counted), never queued, so the generator cannot
 * build a backlog that outlives the run. The target must be a loopback
 * address: this tool exists to exercise a local daemon, never someone
 * else's service.
 *
 * Ownership: a struct req owns its easy handle, header list, body and
 * response buffer, and is freed by req_free() after it left the multi
 * handle. Every buffer has a ceiling (RESP_MAX, INPUT_LINE_MAX, ...).
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

static const char *const source_names[SRC_COUNT] = {
	"llm", "backup", "rules", "cache", "preset", "manual", "queued", "failed", "other",
};

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

/*
 * Customer messages, as they reach a support desk. The rule engines of the
 * demo configuration match some of them (退款, refund, 投诉, complain, how do
 * i, 请问, 咨询) and not others, so degraded answers come from rules, cache
 * and preset alike.
 */
static const char *const builtin_inputs[] = {
	"I want my money back for the headphones I returned last week",
	"Please refund my order, it arrived broken",
	"How long does a refund take to reach my card?",
	"I was charged twice for the same order, refund one of them please",
	"Cancel my subscription and refund the last payment",
	"The shoes do not fit, can I return them for a refund?",
	"I want to complain about the delivery driver, he was very rude",
	"This is the third time my package is late. Terrible service!",
	"Your agent hung up on me, I want to file a complaint",
	"The app keeps crashing when I try to pay, this is unacceptable",
	"I'd like to complain: the product looks nothing like the photos",
	"How do I change my delivery address?",
	"How do I reset my password?",
	"Do you ship to Canada?",
	"What are your opening hours on Sunday?",
	"How do I apply a discount code at checkout?",
	"Is the blue version back in stock?",
	"Thanks, the issue is solved",
	"Can I speak to a human?",
	"hello?",
	"我要退款，商品质量太差了",
	"收到的衣服尺码不对，申请退货退款",
	"退款什么时候能到账？",
	"订单被重复扣款了，请尽快退款",
	"我要投诉快递员，态度非常恶劣",
	"客服一直不回复，我要投诉",
	"东西三天就坏了，太失望了",
	"请问怎么修改收货地址？",
	"请问会员积分怎么使用？",
	"咨询一下发票怎么开",
	"请问周末发货吗？",
	"谢谢，问题已经解决了",
	"在吗？",
	"帮我转人工客服",
	"优惠券为什么用不了",
};

static const char *const channels[] = {"app", "web", "phone", "email", "wechat"};

static volatile sig_atomic_t signals_seen;

static void
on_signal(int sig)
{
	(void)sig;
	if (signals_seen < 2)
		signals_seen++;
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL) {
		fprintf(stderr, "fusebox-traffic: out of memory\n");
		abort();
	}
	return p;
}

static char *
xstrndup(const char *s, size_t n)
{
	char *p = xcalloc(n + 1, 1);

	memcpy(p, s, n);
	return p;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: deterministic with --seed. */
static uint64_t
rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(2685821657736338717);
}

/* Uniform in [0, 1). */
static double
rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static int
parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	int rc = -1;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		goto out;
	*out = v;
	rc = 0;
out:
	return rc;
}

static int
parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;
	int rc = -1;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
		goto out;
	*out = v;
	rc = 0;
out:
	return rc;
}

static int
name_valid(const char *s, size_t n)
{
	size_t i;
	int ok = n > 0 && n <= ROUTE_NAME_MAX;

	for (i = 0; ok && i < n; i++) {
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		     (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.';
	}
	return ok;
}

/* "intent,ticket" or "intent:3,ticket:1" (weights, default 1). */
static int
routes_parse(struct traffic *t, const char *spec)
{
	const char *p = spec, *comma, *colon;
	char wbuf[16];
	size_t len, nlen;
	long w;
	int rc = -1;

	while (*p != '\0') {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		colon = memchr(p, ':', len);
		nlen = colon != NULL ? (size_t)(colon - p) : len;
		w = 1;
		if (colon != NULL) {
			if (len - nlen - 1 >= sizeof wbuf)
				goto bad;
			memcpy(wbuf, colon + 1, len - nlen - 1);
			wbuf[len - nlen - 1] = '\0';
			if (parse_long(wbuf, 0, WEIGHT_MAX, &w) != 0)
				goto bad;
		}
		if (!name_valid(p, nlen) || t->nroutes == ROUTES_MAX)
			goto bad;
		memcpy(t->routes[t->nroutes].name, p, nlen);
		t->routes[t->nroutes].name[nlen] = '\0';
		t->routes[t->nroutes].weight = (unsigned int)w;
		t->wsum += (unsigned int)w;
		t->nroutes++;
		p += len;
		if (*p == ',')
			p++;
	}
	if (t->nroutes == 0 || t->wsum == 0)
		goto bad;
	rc = 0;
	goto out;
bad:
	fprintf(stderr,
		"fusebox-traffic: --routes: want NAME[:WEIGHT],... (at most %d names of "
		"[A-Za-z0-9._-], weights 0..%d, one > 0)\n",
		ROUTES_MAX, WEIGHT_MAX);
out:
	return rc;
}

/*
 * Accept only http:// URLs whose host is a loopback address (127.0.0.0/8,
 * ::1, localhost), and keep "http://HOST:PORT" as the base.
 */
static int
url_check(struct traffic *t, const char *url)
{
	CURLU *u = NULL;
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	char v6[64];
	struct in_addr a4;
	struct in6_addr a6;
	size_t hl;
	int ok = 0, n, rc = -1;

	u = curl_url();
	if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		fprintf(stderr, "fusebox-traffic: --url: cannot parse \"%s\"\n", url);
		goto out;
	}
	if (strcasecmp(scheme, "http") != 0) {
		fprintf(stderr, "fusebox-traffic: --url: only http:// is supported\n");
		goto out;
	}
	if (strcmp(path, "/") != 0 && path[0] != '\0') {
		fprintf(stderr, "fusebox-traffic: --url: give the daemon's base URL, "
				"without a path\n");
		goto out;
	}
	hl = strlen(host);
	if (strcasecmp(host, "localhost") == 0) {
		ok = 1;
	} else if (inet_pton(AF_INET, host, &a4) == 1) {
		ok = (ntohl(a4.s_addr) >> 24) == 127;
	} else if (hl > 2 && hl < sizeof v6 && host[0] == '[' && host[hl - 1] == ']') {
		memcpy(v6, host + 1, hl - 2);
		v6[hl - 2] = '\0';
		ok = inet_pton(AF_INET6, v6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	if (!ok) {
		fprintf(stderr,
			"fusebox-traffic: --url: %s is not a loopback address; this "
			"generator only talks to a daemon on this machine\n",
			host);
		goto out;
	}
	n = snprintf(t->base, sizeof t->base, "http://%s:%s", host, port);
	if (n < 0 || (size_t)n >= sizeof t->base) {
		fprintf(stderr, "fusebox-traffic: --url: too long\n");
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}

/* Read at most max bytes of path into a NUL-terminated buffer. */
static int
file_read(const char *path, size_t max, char **textp, size_t *lenp)
{
	FILE *f = NULL;
	char *text = NULL;
	size_t n;
	int rc = -1;

	f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "fusebox-traffic: %s: %s\n", path, strerror(errno));
		goto out;
	}
	text = xcalloc(max + 2, 1);
	n = fread(text, 1, max + 1, f);
	if (ferror(f)) {
		fprintf(stderr, "fusebox-traffic: %s: read error\n", path);
		goto out;
	}
	if (n > max) {
		fprintf(stderr, "fusebox-traffic: %s: over %zu bytes\n", path, max);
		goto out;
	}
	text[n] = '\0';
	*textp = text;
	*lenp = n;
	text = NULL;
	rc = 0;
out:
	free(text);
	if (f != NULL)
		fclose(f);
	return rc;
}

/* One message a line; blank lines and lines starting with '#' are skipped. */
static int
inputs_load(struct traffic *t, const char *path)
{
	char *text = NULL, *p, *nl, *end;
	size_t len, n;
	int rc = -1;

	if (file_read(path, INPUTS_FILE_MAX, &text, &len) != 0)
		goto out;
	t->inputs = xcalloc(INPUTS_MAX, sizeof *t->inputs);
	end = text + len;
	for (p = text; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		n = (size_t)(nl - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n == 0 || p[0] == '#')
			continue;
		if (n > INPUT_LINE_MAX) {
			fprintf(stderr, "fusebox-traffic: %s: a line is over %d bytes\n", path,
				INPUT_LINE_MAX);
			goto out;
		}
		if (t->ninputs == INPUTS_MAX) {
			fprintf(stderr, "fusebox-traffic: %s: over %d inputs\n", path, INPUTS_MAX);
			goto out;
		}
		t->inputs[t->ninputs++] = xstrndup(p, n);
	}
	if (t->ninputs == 0) {
		fprintf(stderr, "fusebox-traffic: %s: no inputs\n", path);
		goto out;
	}
	rc = 0;
out:
	free(text);
	return rc;
}

/* The first whitespace-separated field of the first line. */
static int
token_load(struct traffic *t, const char *path)
{
	char *text = NULL;
	size_t len, n;
	int rc = -1;

	if (file_read(path, 64 * 1024, &text, &len) != 0)
		goto out;
	n = strcspn(text, " \t\r\n");
	if (n == 0 || n > TOKEN_MAX) {
		fprintf(stderr, "fusebox-traffic: %s: no token on the first line\n", path);
		goto out;
	}
	snprintf(t->auth, sizeof t->auth, "Authorization: Bearer %.*s", (int)n, text);
	rc = 0;
out:
	if (text != NULL)
		explicit_bzero(text, len);
	free(text);
	return rc;
}

static void
lat_add(struct lat *l, int64_t us, uint64_t *rng)
{
	uint64_t j;

	l->seen++;
	if (l->v == NULL)
		l->v = xcalloc(LAT_KEEP, sizeof *l->v);
	if (l->n < LAT_KEEP) {
		l->v[l->n++] = us;
	} else {
		j = rng_next(rng) % l->seen;
		if (j < LAT_KEEP)
			l->v[j] = us;
	}
}

static int
int64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile in ms; -1 without samples. Sorts l->v. */
static double
lat_pct(struct lat *l, double p)
{
	size_t idx;
	double ms = -1.0;

	if (l->n == 0)
		goto out;
	qsort(l->v, l->n, sizeof *l->v, int64_cmp);
	idx = (size_t)ceil(p * (double)l->n);
	if (idx > 0)
		idx--;
	if (idx >= l->n)
		idx = l->n - 1;
	ms = (double)l->v[idx] / 1000.0;
out:
	return ms;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct req *r = arg;
	size_t n = size * nmemb;

	if (r->too_big || r->resp_len + n > RESP_MAX) {
		r->too_big = 1;
		goto out;
	}
	memcpy(r->resp + r->resp_len, data, n);
	r->resp_len += n;
	r->resp[r->resp_len] = '\0';
out:
	return n;
}

static void
req_unlink(struct traffic *t, struct req *r)
{
	if (r->prev != NULL)
		r->prev->next = r->next;
	else
		t->live = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
	curl_multi_remove_handle(t->multi, r->easy);
	t->inflight--;
}

static void
req_free(struct req *r)
{
	if (r != NULL) {
		if (r->easy != NULL)
			curl_easy_cleanup(r->easy);
		curl_slist_free_all(r->hdrs);
		free(r->body);
		free(r->resp);
		free(r);
	}
}

static int
route_pick(struct traffic *t)
{
	unsigned int x = (unsigned int)(rng_next(&t->rng) % t->wsum);
	int i;

	for (i = 0; i < t->nroutes - 1; i++) {
		if (x < t->routes[i].weight)
			break;
		x -= t->routes[i].weight;
	}
	return i;
}

/*
 * The message of one call. Built-in messages are varied: sometimes a
 * greeting in front, sometimes an order number behind, so that some inputs
 * repeat exactly (cache hits) and most do not.
 */
static void
input_make(struct traffic *t, char *buf, size_t size)
{
	const char *msg, *greet = "", *tail = "";
	char order[48];
	double u;
	int cjk;

	order[0] = '\0';
	if (!t->builtin) {
		msg = t->inputs[rng_next(&t->rng) % t->ninputs];
		snprintf(buf, size, "%s", msg);
		goto out;
	}
	msg = builtin_inputs[rng_next(&t->rng) %
			     (sizeof builtin_inputs / sizeof builtin_inputs[0])];
	cjk = (unsigned char)msg[0] >= 0x80;
	u = rng_unit(&t->rng);
	if (u < 0.15)
		greet = cjk ? "你好，" : "Hi, ";
	else if (u < 0.25)
		greet = cjk ? "您好，" : "Hello team, ";
	if (rng_unit(&t->rng) < 0.4) {
		snprintf(order, sizeof order,
			 cjk ? "（订单号 %" PRIu64 "）" : " (order #%" PRIu64 ")",
			 100000 + rng_next(&t->rng) % 900000);
		tail = order;
	}
	snprintf(buf, size, "%s%s%s", greet, msg, tail);
out:
	return;
}

static char *
body_make(struct traffic *t, int async, int no_llm)
{
	char input[INPUT_LINE_MAX + 128], rid[64];
	cJSON *root, *meta;
	char *s;

	input_make(t, input, sizeof input);
	snprintf(rid, sizeof rid, "traffic-%016" PRIx64 "-%" PRIu64, t->run_id, t->sent + 1);
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "input", input);
	cJSON_AddStringToObject(root, "request_id", rid);
	if (no_llm)
		cJSON_AddFalseToObject(root, "allow_llm");
	if (async)
		cJSON_AddStringToObject(root, "mode", "async");
	meta = cJSON_AddObjectToObject(root, "metadata");
	cJSON_AddStringToObject(
		meta, "channel",
		channels[rng_next(&t->rng) % (sizeof channels / sizeof channels[0])]);
	cJSON_AddStringToObject(meta, "generator", "fusebox-traffic");
	s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (s == NULL) {
		fprintf(stderr, "fusebox-traffic: out of memory\n");
		abort();
	}
	return s;
}

/* Start one call; 0, or -1 when curl refused (counted as skipped). */
static int
req_start(struct traffic *t)
{
	struct req *r = NULL;
	char url[URL_MAX + ROUTE_NAME_MAX + 32];
	int rc = -1;

	r = xcalloc(1, sizeof *r);
	r->route = route_pick(t);
	r->async = rng_unit(&t->rng) < t->o.async_ratio;
	r->no_llm = !r->async && rng_unit(&t->rng) < t->o.no_llm_ratio;
	r->body = body_make(t, r->async, r->no_llm);
	r->resp = xcalloc(RESP_MAX + 1, 1);
	snprintf(url, sizeof url, "%s/v1/routes/%s/call", t->base, t->routes[r->route].name);
	r->easy = curl_easy_init();
	if (r->easy == NULL)
		goto out;
	r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/json");
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	if (t->auth[0] != '\0')
		r->hdrs = curl_slist_append(r->hdrs, t->auth);
	if (r->hdrs == NULL)
		goto out;
	curl_easy_setopt(r->easy, CURLOPT_URL, url);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, t->o.timeout_ms);
	if (curl_multi_add_handle(t->multi, r->easy) != CURLM_OK)
		goto out;
	r->next = t->live;
	if (t->live != NULL)
		t->live->prev = r;
	t->live = r;
	t->inflight++;
	t->sent++;
	if (r->async) {
		t->routes[r->route].st.async++;
		t->total.async++;
	}
	if (r->no_llm) {
		t->routes[r->route].st.no_llm++;
		t->total.no_llm++;
	}
	r = NULL;
	rc = 0;
out:
	req_free(r);
	return rc;
}

static enum source
source_of(const char *name)
{
	int i;

	for (i = 0; i < SRC_QUEUED; i++) {
		if (strcmp(name, source_names[i]) == 0)
			break;
	}
	return i < SRC_QUEUED ? (enum source)i : SRC_OTHER;
}

static void
stats_add(struct stats *st, enum source src, long status, int degraded, int review, int64_t us,
	  uint64_t *rng)
{
	st->calls++;
	st->by_source[src]++;
	st->by_status[status > 0 && status < STATUS_MAX ? status : 0]++;
	if (degraded)
		st->degraded++;
	if (review)
		st->review_pending++;
	if (us >= 0)
		lat_add(&st->lat, us, rng);
}

/* A transfer finished: classify it, count it, free it. */
static void
req_done(struct traffic *t, CURL *easy, CURLcode result)
{
	struct req *r;
	cJSON *root = NULL;
	const cJSON *src, *deg, *rev;
	enum source s = SRC_FAILED;
	curl_off_t us = -1;
	long status = 0;
	int degraded = 0, review = 0;
	char *priv = NULL;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
	r = (struct req *)(void *)priv;
	req_unlink(t, r);
	if (result == CURLE_OK) {
		curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(easy, CURLINFO_TOTAL_TIME_T, &us);
		t->answered++;
		if (status == 202) {
			s = SRC_QUEUED;
		} else if (status == 200 && !r->too_big) {
			root = cJSON_ParseWithLength(r->resp, r->resp_len);
			src = cJSON_GetObjectItemCaseSensitive(root, "source");
			deg = cJSON_GetObjectItemCaseSensitive(root, "degraded");
			rev = cJSON_GetObjectItemCaseSensitive(root, "review");
			s = cJSON_IsString(src) ? source_of(src->valuestring) : SRC_OTHER;
			degraded = cJSON_IsTrue(deg);
			review = cJSON_IsString(rev) && strcmp(rev->valuestring, "pending") == 0;
		} else if (status == 200) {
			s = SRC_OTHER;
		}
	}
	stats_add(&t->routes[r->route].st, s, status, degraded, review, (int64_t)us, &t->rng);
	stats_add(&t->total, s, status, degraded, review, (int64_t)us, &t->rng);
	cJSON_Delete(root);
	req_free(r);
}

static void
reap(struct traffic *t)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(t->multi, &left)) != NULL) {
		if (m->msg == CURLMSG_DONE)
			req_done(t, m->easy_handle, m->data.result);
	}
}

/* Abandon every call still in flight (the drain ran out). */
static void
abandon(struct traffic *t)
{
	struct req *r;

	while ((r = t->live) != NULL) {
		req_unlink(t, r);
		req_free(r);
		t->aborted++;
	}
}

/* Exponential gap of mean 1/rps in microseconds, capped at ten means. */
static int64_t
gap_us(struct traffic *t)
{
	double mean = 1e6 / t->o.rps, g;

	g = -log(1.0 - rng_unit(&t->rng)) * mean;
	if (g > 10.0 * mean)
		g = 10.0 * mean;
	return (int64_t)g;
}

/* Send, poll and reap until the run is over and drained. */
static void
run(struct traffic *t)
{
	int64_t now, next_us, end, drain_end = 0;
	int running, stopping = 0, timeout;

	t->start_ms = mono_ms();
	end = t->start_ms + t->o.duration_s * 1000;
	next_us = t->start_ms * 1000;
	for (;;) {
		now = mono_ms();
		if (!stopping &&
		    (now >= end || signals_seen > 0 ||
		     (t->o.count > 0 && t->sent + t->skipped >= (uint64_t)t->o.count))) {
			stopping = 1;
			t->stop_ms = now;
			drain_end = now + DRAIN_MS;
		}
		while (!stopping && now * 1000 >= next_us &&
		       (t->o.count == 0 || t->sent + t->skipped < (uint64_t)t->o.count)) {
			if (t->inflight >= t->o.max_inflight || req_start(t) != 0)
				t->skipped++;
			next_us += gap_us(t);
			if (now * 1000 - next_us > 1000000)
				next_us = now * 1000;
		}
		if (stopping && (t->inflight == 0 || now >= drain_end || signals_seen > 1))
			break;
		curl_multi_perform(t->multi, &running);
		reap(t);
		timeout = POLL_MAX_MS;
		if (!stopping && next_us / 1000 - now < timeout)
			timeout = next_us / 1000 > now ? (int)(next_us / 1000 - now) : 0;
		curl_multi_poll(t->multi, NULL, 0, timeout, NULL);
	}
	reap(t);
	abandon(t);
}

static void
print_row(const char *name, struct stats *st)
{
	double p50 = lat_pct(&st->lat, 0.50), p99 = lat_pct(&st->lat, 0.99);
	int i;

	printf("%-12s %7" PRIu64, name, st->calls);
	for (i = 0; i < SRC_COUNT; i++)
		printf(" %7" PRIu64, st->by_source[i]);
	if (p50 < 0)
		printf(" %8s %8s\n", "-", "-");
	else
		printf(" %8.1f %8.1f\n", p50, p99);
}

static void
print_statuses(const char *name, const struct stats *st)
{
	int i;

	printf("  %-10s", name);
	for (i = 0; i < STATUS_MAX; i++) {
		if (st->by_status[i] == 0)
			continue;
		if (i == 0)
			printf(" no-answer:%" PRIu64, st->by_status[i]);
		else
			printf(" %d:%" PRIu64, i, st->by_status[i]);
	}
	printf("   degraded %" PRIu64 ", review pending %" PRIu64 ", allow_llm false %" PRIu64
	       ", async %" PRIu64 "\n",
	       st->degraded, st->review_pending, st->no_llm, st->async);
}

static void
summary_text(struct traffic *t, double elapsed_s)
{
	int i;

	printf("fusebox-traffic: %" PRIu64 " calls sent in %.1f s (%.2f/s) to %s; "
	       "%" PRIu64 " skipped (max in flight), %" PRIu64 " abandoned\n",
	       t->sent, elapsed_s, elapsed_s > 0 ? (double)t->sent / elapsed_s : 0.0, t->base,
	       t->skipped, t->aborted);
	printf("%-12s %7s", "route", "calls");
	for (i = 0; i < SRC_COUNT; i++)
		printf(" %7s", source_names[i]);
	printf(" %8s %8s\n", "p50_ms", "p99_ms");
	for (i = 0; i < t->nroutes; i++)
		print_row(t->routes[i].name, &t->routes[i].st);
	print_row("all", &t->total);
	printf("status codes:\n");
	for (i = 0; i < t->nroutes; i++)
		print_statuses(t->routes[i].name, &t->routes[i].st);
	print_statuses("all", &t->total);
}

static cJSON *
stats_json(const char *name, struct stats *st)
{
	cJSON *o, *src, *sts;
	double p50 = lat_pct(&st->lat, 0.50), p99 = lat_pct(&st->lat, 0.99);
	char key[16];
	int i;

	o = cJSON_CreateObject();
	if (name != NULL)
		cJSON_AddStringToObject(o, "route", name);
	cJSON_AddNumberToObject(o, "calls", (double)st->calls);
	src = cJSON_AddObjectToObject(o, "by_source");
	for (i = 0; i < SRC_COUNT; i++) {
		if (st->by_source[i] > 0)
			cJSON_AddNumberToObject(src, source_names[i], (double)st->by_source[i]);
	}
	sts = cJSON_AddObjectToObject(o, "by_status");
	for (i = 0; i < STATUS_MAX; i++) {
		if (st->by_status[i] == 0)
			continue;
		snprintf(key, sizeof key, "%d", i);
		cJSON_AddNumberToObject(sts, i == 0 ? "no_answer" : key, (double)st->by_status[i]);
	}
	cJSON_AddNumberToObject(o, "degraded", (double)st->degraded);
	cJSON_AddNumberToObject(o, "review_pending", (double)st->review_pending);
	cJSON_AddNumberToObject(o, "allow_llm_false", (double)st->no_llm);
	cJSON_AddNumberToObject(o, "async", (double)st->async);
	if (p50 < 0) {
		cJSON_AddNullToObject(o, "p50_ms");
		cJSON_AddNullToObject(o, "p99_ms");
	} else {
		cJSON_AddNumberToObject(o, "p50_ms", round(p50 * 10.0) / 10.0);
		cJSON_AddNumberToObject(o, "p99_ms", round(p99 * 10.0) / 10.0);
	}
	return o;
}

static void
summary_json(struct traffic *t, double elapsed_s)
{
	cJSON *root, *routes;
	char *s;
	int i;

	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "url", t->base);
	cJSON_AddNumberToObject(root, "elapsed_s", round(elapsed_s * 10.0) / 10.0);
	cJSON_AddNumberToObject(root, "sent", (double)t->sent);
	cJSON_AddNumberToObject(root, "skipped", (double)t->skipped);
	cJSON_AddNumberToObject(root, "abandoned", (double)t->aborted);
	routes = cJSON_AddArrayToObject(root, "routes");
	for (i = 0; i < t->nroutes; i++)
		cJSON_AddItemToArray(routes, stats_json(t->routes[i].name, &t->routes[i].st));
	cJSON_AddItemToObject(root, "total", stats_json(NULL, &t->total));
	s = cJSON_PrintUnformatted(root);
	if (s != NULL)
		printf("%s\n", s);
	free(s);
	cJSON_Delete(root);
}

static void
usage(FILE *fp)
{
	fprintf(fp,
		"usage: fusebox-traffic --url http://127.0.0.1:PORT [options]\n"
		"\n"
		"Sends POST /v1/routes/<route>/call to a local fuseboxd at a steady\n"
		"Poisson rate, stops by itself, and prints a summary.\n"
		"\n"
		"  --url URL             daemon base URL; loopback only (127.0.0.0/8, ::1, "
		"localhost)\n"
		"  --routes R[:W],...    routes and relative weights (default intent)\n"
		"  --rps N               calls per second, 0 < N <= %.0f (default 8)\n"
		"  --duration S          stop sending after S seconds, 1..%d (default 60)\n"
		"  --count N             ... or after N calls, whichever comes first\n"
		"  --inputs FILE         one message a line (default: built-in English and\n"
		"                        Chinese customer messages)\n"
		"  --async-ratio F       fraction sent with \"mode\": \"async\" (default 0.05)\n"
		"  --no-llm-ratio F      fraction sent with \"allow_llm\": false (default 0.1)\n"
		"  --max-inflight N      outstanding calls at most, else skip (default %d)\n"
		"  --timeout-ms N        client-side cap per call (default %d)\n"
		"  --token-file FILE     send the first field of its first line as a bearer token\n"
		"  --seed N              deterministic inputs and timing\n"
		"  --json                print the summary as one JSON object\n"
		"  -h, --help            this text\n",
		RPS_MAX, DURATION_MAX, INFLIGHT_DEFAULT, TIMEOUT_DEFAULT);
}

/* 0 ok, 1 bad usage (message printed), 2 help printed. */
static int
opts_parse(struct opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"url", required_argument, NULL, 'u'},
		{"routes", required_argument, NULL, 'r'},
		{"rps", required_argument, NULL, 'R'},
		{"duration", required_argument, NULL, 'd'},
		{"count", required_argument, NULL, 'n'},
		{"inputs", required_argument, NULL, 'i'},
		{"async-ratio", required_argument, NULL, 'a'},
		{"no-llm-ratio", required_argument, NULL, 'l'},
		{"max-inflight", required_argument, NULL, 'm'},
		{"timeout-ms", required_argument, NULL, 't'},
		{"token-file", required_argument, NULL, 'T'},
		{"seed", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *what = NULL;
	long v;
	int ch, rc = 1;

	o->routes = "intent";
	o->rps = 8.0;
	o->duration_s = 60;
	o->async_ratio = 0.05;
	o->no_llm_ratio = 0.10;
	o->max_inflight = INFLIGHT_DEFAULT;
	o->timeout_ms = TIMEOUT_DEFAULT;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			o->url = optarg;
			break;
		case 'r':
			o->routes = optarg;
			break;
		case 'R':
			if (parse_double(optarg, 0.001, RPS_MAX, &o->rps) != 0)
				what = "--rps";
			break;
		case 'd':
			if (parse_long(optarg, 1, DURATION_MAX, &o->duration_s) != 0)
				what = "--duration";
			break;
		case 'n':
			if (parse_long(optarg, 1, COUNT_MAX, &o->count) != 0)
				what = "--count";
			break;
		case 'i':
			o->inputs = optarg;
			break;
		case 'a':
			if (parse_double(optarg, 0.0, 1.0, &o->async_ratio) != 0)
				what = "--async-ratio";
			break;
		case 'l':
			if (parse_double(optarg, 0.0, 1.0, &o->no_llm_ratio) != 0)
				what = "--no-llm-ratio";
			break;
		case 'm':
			if (parse_long(optarg, 1, INFLIGHT_MAX, &o->max_inflight) != 0)
				what = "--max-inflight";
			break;
		case 't':
			if (parse_long(optarg, 100, TIMEOUT_MAX, &o->timeout_ms) != 0)
				what = "--timeout-ms";
			break;
		case 'T':
			o->token_file = optarg;
			break;
		case 's':
			if (parse_long(optarg, 0, INT32_MAX, &v) != 0)
				what = "--seed";
			o->seed = (uint64_t)v;
			o->seeded = 1;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'h':
			usage(stdout);
			rc = 2;
			goto out;
		default:
			usage(stderr);
			goto out;
		}
		if (what != NULL) {
			fprintf(stderr, "fusebox-traffic: %s: bad value \"%s\"\n", what, optarg);
			goto out;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "fusebox-traffic: unexpected argument \"%s\"\n", argv[optind]);
		goto out;
	}
	if (o->url == NULL) {
		fprintf(stderr, "fusebox-traffic: --url is required\n");
		goto out;
	}
	rc = 0;
out:
	return rc;
}

int
main(int argc, char **argv)
{
	static struct traffic t;
	struct sigaction sa;
	double elapsed_s;
	size_t i;
	int j, r, curl_up = 0, rc = 2;

	r = opts_parse(&t.o, argc, argv);
	if (r != 0) {
		rc = r == 2 ? 0 : 2;
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "fusebox-traffic: curl_global_init failed\n");
		rc = 1;
		goto out;
	}
	curl_up = 1;
	if (url_check(&t, t.o.url) != 0 || routes_parse(&t, t.o.routes) != 0)
		goto out;
	if (t.o.inputs != NULL) {
		if (inputs_load(&t, t.o.inputs) != 0)
			goto out;
	} else {
		t.builtin = 1;
	}
	if (t.o.token_file != NULL && token_load(&t, t.o.token_file) != 0)
		goto out;
	t.rng = t.o.seeded ? t.o.seed : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	t.rng = t.rng * UINT64_C(0x9E3779B97F4A7C15) + 1;
	t.run_id = rng_next(&t.rng) ^ (uint64_t)time(NULL);
	rc = 1;
	t.multi = curl_multi_init();
	if (t.multi == NULL) {
		fprintf(stderr, "fusebox-traffic: curl_multi_init failed\n");
		goto out;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	run(&t);
	elapsed_s = (double)(t.stop_ms - t.start_ms) / 1000.0;
	if (t.o.json)
		summary_json(&t, elapsed_s);
	else
		summary_text(&t, elapsed_s);
	fflush(stdout);
	if (t.answered == 0 && t.sent > 0)
		fprintf(stderr, "fusebox-traffic: no call was answered (is fuseboxd at %s?)\n",
			t.base);
	else
		rc = 0;
out:
	if (t.multi != NULL)
		curl_multi_cleanup(t.multi);
	for (i = 0; i < t.ninputs; i++)
		free(t.inputs[i]);
	free(t.inputs);
	for (j = 0; j < t.nroutes; j++)
		free(t.routes[j].st.lat.v);
	free(t.total.lat.v);
	explicit_bzero(t.auth, sizeof t.auth);
	if (curl_up)
		curl_global_cleanup();
	return rc;
}
