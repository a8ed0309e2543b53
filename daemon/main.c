/*
 * fuseboxd: load the configuration, open the store, start the engine and
 * the HTTP front, then wait for signals on the main thread (SIGTERM/SIGINT:
 * drain and exit 0; SIGHUP: reload).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "addrfile.h"
#include "commit.h"
#include "config.h"
#include "daemon.h"
#include "engine.h"
#include "http.h"
#include "log.h"
#include "reload.h"
#include "sdnotify.h"
#include "store.h"
#include "tokens.h"
#include "util.h"

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: fuseboxd -c FILE [--check-config]\n"
		    "       fuseboxd --help | --version\n"
		    "\n"
		    "fuseboxd performs LLM calls guarded: one deadline shared by all retries,\n"
		    "classified retries, circuit breakers, bulkheads, routing, output validation\n"
		    "and a degradation ladder. See fuseboxd(8) and fusebox.json(5).\n"
		    "\n"
		    "  -c, --config FILE   configuration file (JSON)\n"
		    "      --check-config  validate FILE, print every error, exit 0 or 1\n"
		    "  -h, --help          this text and the configuration key reference\n"
		    "  -V, --version       print the version and the commit\n"
		    "\n");
	config_print_reference(fp);
}

static int
mkdir_parents(const char *path)
{
	char *dir = xstrdup(path), *p;

	p = strrchr(dir, '/');
	if (p == NULL) {
		free(dir);
		return 0;
	}
	*p = '\0';
	for (p = dir + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0750);
			*p = '/';
		}
	}
	mkdir(dir, 0750);
	free(dir);
	return 0;
}

static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t old = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			log_info("main", "open-file limit raised from %llu to %llu",
				 (unsigned long long)old, (unsigned long long)rl.rlim_cur);
		else
			log_warn("main", "cannot raise the open-file limit from %llu: %s",
				 (unsigned long long)old, strerror(errno));
	}
	if (rl.rlim_cur < 20000)
		log_warn(
			"main",
			"open-file limit is %llu: fewer concurrent calls than max_inflight may fit",
			(unsigned long long)rl.rlim_cur);
}

static void
reload_task(struct engine *e, void *arg)
{
	char *cause = NULL;

	reload_from_disk(e, &cause); /* a refusal is logged there */
	free(cause);
}

static int
is_loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
	       strcmp(host, "localhost") == 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check-config", no_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *path = NULL;
	int check = 0, ch, r, sig, rc = 1;
	struct config *cfg = NULL;
	const struct config *live; /* the start-up config, owned by the engine once created */
	struct tokens *tokens = NULL;
	struct store *st = NULL;
	struct engine *eng = NULL;
	struct http_server *srv = NULL;
	struct http_opts ho;
	char *cause = NULL, *addr_path = NULL;
	sigset_t set;

	while ((ch = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'k':
			check = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("fuseboxd %s (commit %s)\n", FB_VERSION, FB_COMMIT);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (path == NULL || optind != argc) {
		fprintf(stderr, "fuseboxd: -c FILE is required\n");
		return 2;
	}
	r = config_load(path, &cfg, &cause);
	if (r != 0) {
		fprintf(stderr, "%s: configuration refused:\n%s%s", path, cause ? cause : "",
			cause && cause[0] && cause[strlen(cause) - 1] == '\n' ? "" : "\n");
		free(cause);
		return 1;
	}
	if (check) {
		printf("%s: configuration ok (%d backends, %d routes)\n", path, cfg->nbackends,
		       cfg->nroutes);
		config_free(cfg);
		return 0;
	}
	log_detect_journal();
	log_set_level(cfg->log.level);
	log_set_format(cfg->log.format);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	raise_nofile();

	r = tokens_load(cfg->tokens_file, &tokens, &cause);
	if (r == -ENOENT) {
		log_warn("main", "no tokens file at %s: the control plane refuses every request",
			 cfg->tokens_file);
		tokens = NULL;
	} else if (r != 0) {
		log_error("main", "tokens file %s refused: %s", cfg->tokens_file,
			  cause ? cause : "");
		goto out;
	}
	if (!is_loopback(cfg->listen_host) && !cfg->callers_require_token)
		log_warn("main",
			 "LISTENING ON NON-LOOPBACK %s WITHOUT CALLER TOKENS: anyone who can reach "
			 "this port can spend your LLM budget (set auth.callers_require_token)",
			 cfg->listen);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	mkdir_parents(cfg->database);
	r = store_open(cfg->database, 65536, &st, &cause);
	if (r != 0) {
		log_error("main", "database %s: %s", cfg->database, cause ? cause : strerror(-r));
		goto out;
	}
	live = cfg;
	r = daemon_create(cfg, st, &eng, &cause);
	cfg = NULL; /* the engine owns it now, also on failure */
	if (r != 0) {
		log_error("main", "%s", cause ? cause : "engine failed");
		goto out;
	}
	memset(&ho, 0, sizeof ho);
	ho.host = live->listen_host;
	ho.port = live->listen_port;
	ho.max_body_bytes = live->max_body_bytes;
	ho.max_connections = live->max_inflight + 1024;
	ho.max_buffered_body_bytes = live->max_buffered_body_bytes;
	ho.max_connections_per_ip = live->max_connections_per_ip;
	ho.conn_timeout_s = live->http.body_timeout_s;
	ho.header_timeout_s = live->http.header_timeout_s;
	ho.idle_timeout_s = live->http.idle_timeout_s;
	ho.allowed_hosts = live->http.allowed_hosts;
	ho.nallowed_hosts = live->http.nallowed_hosts;
	ho.allowed_origins = live->http.allowed_origins;
	ho.nallowed_origins = live->http.nallowed_origins;
	ho.callers_require_token = live->callers_require_token;
	ho.metrics_public = live->metrics_public;
	daemon_http_endpoints(&ho);
	ho.tokens = tokens;
	tokens = NULL; /* the HTTP server owns them */
	r = http_start(&ho, eng, &srv, &cause);
	if (r != 0) {
		log_error("main", "%s", cause);
		goto out;
	}
	/* The engine thread runs the HTTP server too (one loop, no hand-over). */
	r = daemon_attach_http(eng, srv);
	if (r != 0) {
		log_error("main", "cannot watch the HTTP server: %s", strerror(-r));
		goto out;
	}
	if (engine_start(eng) != 0) {
		log_error("main", "cannot start the engine thread");
		goto out;
	}
	printf("listening on %s:%d\n", live->listen_host, http_port(srv));
	fflush(stdout);
	/* where the console finds this daemon again (docs/CONSOLE.md) */
	addr_path = addrfile_path(live->database);
	if (addr_path != NULL &&
	    addrfile_write(addr_path, live->listen_host, http_port(srv), &cause) != 0) {
		log_warn("main", "%s (the console will not find this daemon by it)", cause);
		free(cause);
		cause = NULL;
		free(addr_path);
		addr_path = NULL;
	}
	log_info("main", "fuseboxd %s up: %d backends, %d routes, database %s", FB_VERSION,
		 live->nbackends, live->nroutes, live->database);
	{
		char ready[160];

		snprintf(ready, sizeof ready, "READY=1\nSTATUS=listening on %s:%d",
			 live->listen_host, http_port(srv));
		r = sdnotify_send(ready);
		if (r < 0)
			log_warn("main", "NOTIFY_SOCKET: %s", strerror(-r));
	}
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			log_info("main", "SIGHUP: reloading the configuration");
			engine_post(eng, reload_task, NULL);
			continue;
		}
		log_info("main", "signal %d: draining", sig);
		sdnotify_send("STOPPING=1\nSTATUS=draining");
		break;
	}
	/* Stops accepting, drains the calls and writes their answers (the
	 * engine runs the HTTP server), then joins the engine thread. */
	engine_stop(eng);
	rc = 0;
out:
	addrfile_remove(addr_path);
	free(addr_path);
	http_stop(srv);
	daemon_free(eng);
	store_close(st);
	tokens_free(tokens);
	config_free(cfg);
	free(cause);
	curl_global_cleanup();
	return rc;
}
