/*
 * traffic/send: the calls on the wire — the built-in messages, the
 * request bodies, one curl multi handle sending on a Poisson schedule,
 * reaping and classifying the answers (see main.c for the design).
 */
#include "traffic.h"

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
void
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
