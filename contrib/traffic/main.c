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
#include "traffic.h"

volatile sig_atomic_t signals_seen;
static void
on_signal(int sig)
{
	(void)sig;
	if (signals_seen < 2)
		signals_seen++;
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
