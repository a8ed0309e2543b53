/*
 * Integration: backends[].http_version (and tls_ca_file) against a real
 * HTTP/2 server. nginx (Debian nginx-light: the http_v2 module and the
 * echo module) runs as a plain foreground process with its own prefix in
 * the test's folder, 127.0.0.1 only, with three servers: h2 over TLS
 * (ALPN offers h2 and http/1.1; a self-signed certificate made with the
 * openssl tool, trusted through tls_ca_file), h2c with prior knowledge,
 * and plain HTTP/1.1. Each answers every POST with a canned
 * chat.completion after a short sleep, so concurrent attempts are in
 * flight together. Its access log names, per request, the server's port,
 * the protocol, the connection serial number and the X-Request-ID the
 * daemon sent, which we hold against the daemon's attempts rows.
 *
 * nginx cannot bind port 0 and report it: free ports are picked by binding
 * port 0 and closing, with a retry if nginx lost the race. nginx is stopped
 * by the pid we started, never by name. A missing nginx, echo module or
 * openssl fails the test (contrib/dev.sh deps installs them).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "itd.h"

#define NGINX_BIN   "/usr/sbin/nginx"
#define OPENSSL_BIN "/usr/bin/openssl"
#define ECHO_MOD    "/usr/lib/nginx/modules/ngx_http_echo_module.so"
#define NCALLS	    50
#define LOG_MAX	    4096  /* access log lines read back */
#define UPSTREAM_S  "0.3" /* nginx's answer delay (echo_sleep, seconds) */

/* The canned answer; the route has no output contract, so any text passes. */
#define CANNED                                                                                     \
	"{\"id\":\"chatcmpl-it\",\"object\":\"chat.completion\",\"created\":1767225600,"           \
	"\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","           \
	"\"content\":\"refund\"},\"finish_reason\":\"stop\"}],"                                    \
	"\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1,\"total_tokens\":11}}"

enum srv { SRV_TLS = 0, SRV_H2C, SRV_H1, SRV__COUNT };

struct nginx {
	struct proc p;	      /* the nginx we started (one process, no master) */
	int port[SRV__COUNT]; /* h2 + http/1.1 over TLS; h2c; HTTP/1.1 */
	int keepalive_s;      /* keepalive_timeout; 0: nginx's default (75 s) */
	char *dir;
	char path[3][512]; /* access log, certificate, key */
};

#define N_LOG  path[0]
#define N_CERT path[1]
#define N_KEY  path[2]

/* One access log line. */
struct hit {
	int port;
	char proto[16];
	long conn;
	int status;
	char request_id[80];
};

static struct itd T;
static struct nginx N = {.p = {.pid = -1, .out_fd = -1}};

static int
free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int
port_open(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Fork + exec argv (stdin and stdout /dev/null); the child dies with the test. */
static pid_t
spawn(char *const argv[])
{
	pid_t parent = getpid(), pid;
	int fd;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	execv(argv[0], argv);
	_exit(127);
}

/* A self-signed certificate for IP 127.0.0.1: its own CA (tls_ca_file). */
static void
make_cert(struct nginx *n)
{
	char *argv[] = {OPENSSL_BIN,
			"req",
			"-x509",
			"-newkey",
			"ec",
			"-pkeyopt",
			"ec_paramgen_curve:prime256v1",
			"-nodes",
			"-keyout",
			n->N_KEY,
			"-out",
			n->N_CERT,
			"-days",
			"2",
			"-subj",
			"/CN=127.0.0.1",
			"-addext",
			"subjectAltName=IP:127.0.0.1",
			NULL};
	pid_t pid = spawn(argv);
	int status = -1;

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "openssl req failed (status %d)", status);
}

static void
nginx_write_conf(const struct nginx *n, const char *path)
{
	FILE *fp = fopen(path, "w");
	const char *loc = "\t\tdefault_type application/json;\n"
			  "\t\tlocation / { echo_read_request_body; echo_sleep " UPSTREAM_S
			  "; echo_exec /canned; }\n"
			  "\t\tlocation = /canned { internal; return 200 '" CANNED "'; }\n";

	ck_assert_ptr_nonnull(fp);
	fprintf(fp,
		"load_module " ECHO_MOD ";\n"
		"daemon off;\nmaster_process off;\nworker_processes 1;\n"
		"pid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
		"events { worker_connections 1024; }\n"
		"http {\n"
		"\tlog_format fb '$server_port $server_protocol $connection $status "
		"$http_x_request_id';\n"
		"\taccess_log %s fb;\n\tkeepalive_timeout %ds;\n"
		"\tclient_body_buffer_size 64k;\n"
		"\tclient_body_temp_path %s/body;\n\tproxy_temp_path %s/proxy;\n"
		"\tfastcgi_temp_path %s/fastcgi;\n\tuwsgi_temp_path %s/uwsgi;\n"
		"\tscgi_temp_path %s/scgi;\n"
		"\tserver {\n\t\tlisten 127.0.0.1:%d ssl http2;\n"
		"\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n%s\t}\n"
		"\tserver {\n\t\tlisten 127.0.0.1:%d http2;\n%s\t}\n"
		"\tserver {\n\t\tlisten 127.0.0.1:%d;\n%s\t}\n"
		"}\n",
		n->dir, n->dir, n->N_LOG, n->keepalive_s > 0 ? n->keepalive_s : 75, n->dir, n->dir,
		n->dir, n->dir, n->dir, n->port[SRV_TLS], n->N_CERT, n->N_KEY, loc,
		n->port[SRV_H2C], loc, n->port[SRV_H1], loc);
	ck_assert_int_eq(fclose(fp), 0);
}

static int
nginx_listening(const struct nginx *n)
{
	int i;

	for (i = 0; i < SRV__COUNT; i++) {
		if (!port_open(n->port[i]))
			return 0;
	}
	return 1;
}

static void
nginx_start(struct nginx *n)
{
	struct stat st;
	char conf[512], errlog[512];
	char *argv[] = {NGINX_BIN, "-p", NULL, "-e", errlog, "-c", conf, NULL};
	int try, i, j, status;

	ck_assert_msg(stat(NGINX_BIN, &st) == 0,
		      NGINX_BIN " is missing: install nginx-light (contrib/dev.sh deps)");
	ck_assert_msg(stat(ECHO_MOD, &st) == 0,
		      ECHO_MOD " is missing: install nginx-light (it depends on "
			       "libnginx-mod-http-echo)");
	ck_assert_msg(stat(OPENSSL_BIN, &st) == 0,
		      OPENSSL_BIN " is missing: install openssl (contrib/dev.sh deps)");
	n->dir = harness_tmpdir();
	argv[2] = n->dir;
	snprintf(n->N_LOG, sizeof n->N_LOG, "%s/access.log", n->dir);
	snprintf(n->N_CERT, sizeof n->N_CERT, "%s/cert.pem", n->dir);
	snprintf(n->N_KEY, sizeof n->N_KEY, "%s/key.pem", n->dir);
	snprintf(conf, sizeof conf, "%s/nginx.conf", n->dir);
	snprintf(errlog, sizeof errlog, "%s/error.log", n->dir);
	make_cert(n);
	for (try = 0; try < 5 && n->p.pid < 0; try++) {
		for (i = 0; i < SRV__COUNT; i++) {
			n->port[i] = free_port();
			ck_assert_int_gt(n->port[i], 0);
			for (j = 0; j < i; j++) {
				if (n->port[j] == n->port[i])
					n->port[i] = 0; /* the same port twice: try again */
			}
		}
		if (n->port[SRV_H2C] == 0 || n->port[SRV_H1] == 0)
			continue;
		nginx_write_conf(n, conf);
		n->p.pid = spawn(argv);
		ck_assert_int_gt(n->p.pid, 0);
		for (i = 0; i < 250 && !nginx_listening(n); i++) {
			if (waitpid(n->p.pid, &status, WNOHANG) == n->p.pid) {
				/* it exited: a port taken meanwhile, or a bad setup */
				fprintf(stderr, "nginx exited (status %d), try %d; see %s\n",
					status, try, errlog);
				n->p.pid = -1;
				break;
			}
			usleep(20 * 1000);
		}
		ck_assert_msg(i < 250, "nginx did not listen within 5 s");
	}
	ck_assert_msg(n->p.pid > 0, "nginx did not start (see %s)", errlog);
}

static void
nginx_stop(struct nginx *n)
{
	if (n->p.pid > 0)
		proc_kill(&n->p, SIGTERM); /* the pid we started, never by name */
	free(n->dir);
	n->dir = NULL;
}

static void
teardown(void)
{
	itd_stop(&T);
	nginx_stop(&N);
}

/* Read nginx's access log into hits[]; the number of lines. */
static int
read_hits(struct hit *hits, int max)
{
	FILE *fp = fopen(N.N_LOG, "r");
	char line[512];
	int n = 0;

	if (fp == NULL)
		return 0;
	while (n < max && fgets(line, sizeof line, fp) != NULL) {
		struct hit *h = &hits[n];

		memset(h, 0, sizeof *h);
		ck_assert_msg(sscanf(line, "%d %15s %ld %d %79s", &h->port, h->proto, &h->conn,
				     &h->status, h->request_id) == 5,
			      "access log line: %s", line);
		n++;
	}
	fclose(fp);
	return n;
}

/* Wait (5 s) until nginx has logged want requests; the lines read. */
static int
wait_hits(struct hit *hits, int want)
{
	int i, n = 0;

	for (i = 0; i < 100; i++) {
		n = read_hits(hits, LOG_MAX);
		if (n >= want)
			break;
		usleep(50 * 1000);
	}
	return n;
}

/* Distinct connection serial numbers among hits[from..to-1]. */
static int
distinct_conns(const struct hit *hits, int from, int to)
{
	int i, j, d = 0;

	for (i = from; i < to; i++) {
		for (j = from; j < i && hits[j].conn != hits[i].conn; j++)
			;
		d += j == i;
	}
	return d;
}

/* Lines hits[from..to-1] all came to server s over proto, answered 200. */
static void
assert_hits(const struct hit *hits, int from, int to, enum srv s, const char *proto)
{
	int i;

	for (i = from; i < to; i++) {
		ck_assert_int_eq(hits[i].port, N.port[s]);
		ck_assert_str_eq(hits[i].proto, proto);
		ck_assert_int_eq(hits[i].status, 200);
	}
}

/*
 * The daemon's config: one backend "up" on server s; extra: its extra keys.
 * connect_ms 5 s: ten TLS handshakes at once take over a second under
 * valgrind (FB_DAEMON_WRAPPER).
 */
static char *
config(enum srv s, const char *extra)
{
	char *text = malloc(4096);

	ck_assert_ptr_nonnull(text);
	snprintf(text, 4096,
		 "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
		 "\"backends\":[{\"name\":\"up\",\"url\":\"%s://127.0.0.1:%d/v1/chat/completions\","
		 "\"model\":\"m\",\"max_concurrent\":500,\"timeouts\":{\"connect_ms\":5000},"
		 "\"breaker\":{\"failure_threshold\":100000}%s%s%s}],"
		 "\"routes\":[{\"name\":\"intent\",\"retry\":{\"max_retries\":0},"
		 "\"targets\":[{\"backend\":\"up\"}]}]}",
		 s == SRV_TLS ? "https" : "http", N.port[s],
		 s == SRV_TLS ? ",\"tls_ca_file\":\"" : "", s == SRV_TLS ? N.N_CERT : "",
		 s == SRV_TLS ? "\"" : "");
	if (extra != NULL) {
		char *tail = strstr(text, "}],\"routes\"");
		char *out = malloc(4096 + strlen(extra));

		ck_assert_ptr_nonnull(tail);
		ck_assert_ptr_nonnull(out);
		snprintf(out, 4096 + strlen(extra), "%.*s,%s%s", (int)(tail - text), text, extra,
			 tail);
		free(text);
		text = out;
	}
	return text;
}

static void
start(enum srv s, const char *extra)
{
	char *text;

	nginx_start(&N);
	text = config(s, extra);
	ck_assert_int_eq(itd_start(&T, text), 0);
	free(text);
}

/* n calls at once; each must be answered 200 by the model. */
static void
calls_at_once(int n)
{
	struct http_resp rs[NCALLS];
	cJSON *o;
	int i;

	ck_assert_int_le(n, NCALLS);
	ck_assert_int_eq(
		itd_call_many(&T, "intent", "{\"input\":\"I want my money back\"}", n, 10000, rs),
		0);
	for (i = 0; i < n; i++) {
		ck_assert_msg(rs[i].status == 200, "call %d: %ld %s", i, rs[i].status, rs[i].body);
		o = itd_json(&rs[i]);
		ck_assert_ptr_nonnull(o);
		ck_assert_str_eq(itd_str(o, "source"), "llm");
		ck_assert(strcmp(itd_str(o, "backend"), "up") == 0 ||
			  strcmp(itd_str(o, "backend"), "one") == 0 ||
			  strcmp(itd_str(o, "backend"), "two") == 0);
		ck_assert_str_eq(itd_str(o, "result"), "refund");
		cJSON_Delete(o);
		http_resp_free(&rs[i]);
	}
}

/*
 * A round: k calls at once; then nginx's log must come to total lines, of
 * which hits[from..total-1] came to server s over proto. Returns total.
 */
static int
round_logged(struct hit *hits, int k, int total, int from, enum srv s, const char *proto)
{
	int n;

	calls_at_once(k);
	n = wait_hits(hits, total);
	ck_assert_int_eq(n, total);
	assert_hits(hits, from, n, s, proto);
	return n;
}

/*
 * Every request nginx logged is one attempts row of the daemon (by the
 * X-Request-ID it sent), and there are no others.
 */
static void
assert_log_matches_attempts(const struct hit *hits, int n)
{
	char sql[256];
	int i;

	itd_settle();
	ck_assert_int_eq(itd_count(&T, "attempts"), n);
	ck_assert_int_eq(itd_count(&T, "attempts WHERE outcome = 'ok'"), n);
	for (i = 0; i < n; i++) {
		snprintf(sql, sizeof sql, "attempts WHERE request_id = '%s'", hits[i].request_id);
		ck_assert_msg(itd_count(&T, sql) == 1, "nginx saw request %s: no attempts row",
			      hits[i].request_id);
	}
}

/* libcurl >= 8.0.0 reuses a prior-knowledge (h2c) connection correctly. */
static int
h2c_reuse_works(void)
{
	return curl_version_info(CURLVERSION_NOW)->version_num >= 0x080000;
}

START_TEST(h2_over_tls_calls_share_a_few_connections)
{
	static struct hit hits[LOG_MAX];
	int n;

	start(SRV_TLS, "\"http_version\":\"2\"");
	n = round_logged(hits, NCALLS, NCALLS, 0, SRV_TLS, "HTTP/2.0");
	/* 50 attempts in flight together (each waits 0.3 s at nginx): with
	 * HTTP/1.1 that is 50 connections; as h2 streams they share one
	 * (PIPEWAIT: they wait for the first connection to come up) */
	ck_assert_msg(distinct_conns(hits, 0, n) <= 5, "%d connections for %d concurrent calls",
		      distinct_conns(hits, 0, n), n);
	assert_log_matches_attempts(hits, n);
}
END_TEST

/* The default stays HTTP/1.1, also where the server offers h2 (ALPN). */
START_TEST(https_default_stays_http11)
{
	static struct hit hits[LOG_MAX];
	int n;

	start(SRV_TLS, NULL);
	n = round_logged(hits, 10, 10, 0, SRV_TLS, "HTTP/1.1");
	ck_assert_int_eq(distinct_conns(hits, 0, n), 10);
	assert_log_matches_attempts(hits, n);
}
END_TEST

/*
 * h2c (prior knowledge). Two rounds: the second finds the first round's
 * connections. With a libcurl older than 8.0.0 every attempt has its own
 * connection (reuse is broken there); with a newer one they multiplex.
 */
START_TEST(h2c_prior_knowledge_speaks_http2)
{
	static struct hit hits[LOG_MAX];
	int n;

	start(SRV_H2C, "\"http_version\":\"2\"");
	calls_at_once(20);
	ck_assert_int_eq(wait_hits(hits, 20), 20);
	n = round_logged(hits, 20, 40, 0, SRV_H2C, "HTTP/2.0");
	if (h2c_reuse_works())
		ck_assert_int_le(distinct_conns(hits, 0, n), 5);
	else
		ck_assert_int_eq(distinct_conns(hits, 0, n), n);
	assert_log_matches_attempts(hits, n);
}
END_TEST

START_TEST(http11_backend_speaks_http11)
{
	static struct hit hits[LOG_MAX];
	int n;

	start(SRV_H1, "\"http_version\":\"1.1\"");
	n = round_logged(hits, NCALLS, NCALLS, 0, SRV_H1, "HTTP/1.1");
	/* the contrast: one connection per attempt in flight */
	ck_assert_msg(distinct_conns(hits, 0, n) > NCALLS / 2,
		      "%d connections for %d concurrent calls", distinct_conns(hits, 0, n), n);
	assert_log_matches_attempts(hits, n);
}
END_TEST

/* A reload that changes only http_version: new attempts use the new one. */
START_TEST(reload_switches_the_http_version)
{
	static struct hit hits[LOG_MAX];
	struct http_resp r;
	char *text;
	int n;

	start(SRV_TLS, "\"http_version\":\"1.1\"");
	round_logged(hits, 5, 5, 0, SRV_TLS, "HTTP/1.1");
	text = config(SRV_TLS, "\"http_version\":\"2\"");
	ck_assert_int_eq(itd_write_config(&T, text), 0);
	free(text);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/reload", NULL, "op-token", 5000, &r), 0);
	ck_assert_msg(r.status == 200, "reload: %ld %s", r.status, r.body);
	http_resp_free(&r);
	n = round_logged(hits, 20, 25, 5, SRV_TLS, "HTTP/2.0");
	ck_assert_int_le(distinct_conns(hits, 5, n), 5);
	assert_log_matches_attempts(hits, n);
}
END_TEST

/*
 * Two backends on one server, one "1.1" and one "2", called together:
 * each keeps its version, and neither stalls the other (h2 connections
 * are pooled apart from HTTP/1.1 ones).
 */
START_TEST(mixed_versions_on_one_server)
{
	static struct hit hits[LOG_MAX];
	char text[4096], sql[256], *backend;
	int n, i, h1 = 0, h2 = 0;
	long h2conn[LOG_MAX];
	int nh2conn = 0, j;

	nginx_start(&N);
	snprintf(text, sizeof text,
		 "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
		 "\"backends\":[{\"name\":\"one\",\"url\":\"https://127.0.0.1:%d/v1/chat/"
		 "completions\","
		 "\"model\":\"m\",\"max_concurrent\":500,\"timeouts\":{\"connect_ms\":5000},\"tls_"
		 "ca_file\":\"%s\"},"
		 "{\"name\":\"two\",\"url\":\"https://127.0.0.1:%d/v1/chat/completions\","
		 "\"model\":\"m\",\"max_concurrent\":500,\"timeouts\":{\"connect_ms\":5000},\"tls_"
		 "ca_file\":\"%s\",\"http_version\":"
		 "\"2\"}],"
		 "\"routes\":[{\"name\":\"intent\",\"retry\":{\"max_retries\":0},"
		 "\"health_weighting\":false,"
		 "\"targets\":[{\"backend\":\"one\"},{\"backend\":\"two\"}]}]}",
		 N.port[SRV_TLS], N.N_CERT, N.port[SRV_TLS], N.N_CERT);
	ck_assert_int_eq(itd_start(&T, text), 0);
	for (i = 0; i < 3; i++)
		calls_at_once(NCALLS); /* the backend field is "one" or "two" */
	n = wait_hits(hits, 3 * NCALLS);
	ck_assert_int_eq(n, 3 * NCALLS);
	assert_log_matches_attempts(hits, n); /* also waits for the rows */
	for (i = 0; i < n; i++) {
		snprintf(sql, sizeof sql, "SELECT backend FROM attempts WHERE request_id = '%s'",
			 hits[i].request_id);
		backend = db_scalar_text(T.db, sql);
		ck_assert_ptr_nonnull(backend);
		if (strcmp(backend, "two") == 0) {
			ck_assert_str_eq(hits[i].proto, "HTTP/2.0");
			for (j = 0; j < nh2conn && h2conn[j] != hits[i].conn; j++)
				;
			if (j == nh2conn)
				h2conn[nh2conn++] = hits[i].conn;
			h2++;
		} else {
			ck_assert_str_eq(backend, "one");
			ck_assert_str_eq(hits[i].proto, "HTTP/1.1");
			h1++;
		}
		free(backend);
	}
	ck_assert_int_gt(h1, 0);
	ck_assert_int_gt(h2, 0);
	ck_assert_msg(nh2conn <= 5, "%d h2 connections for %d h2 attempts", nh2conn, h2);
}
END_TEST

/* CPU time (user + system) the process has used, in ms. */
static long
proc_cpu_ms(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *fp;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	ck_assert_ptr_nonnull(p);
	/* after "pid (comm)": state is field 3; utime 14, stime 15 */
	ck_assert_int_eq(
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
	return (long)((ut + st) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

/*
 * The engine keeps a finished attempt's socket in its epoll set for the
 * next attempt on that connection. When the server closes the idle
 * connection meanwhile, the socket turns readable while nobody wants it:
 * the engine must drop it rather than spin on it, and the next calls
 * open new connections.
 */
START_TEST(idle_connections_closed_by_the_server)
{
	static struct hit hits[LOG_MAX];
	long cpu0, cpu1;
	int n, i, j;

	N.keepalive_s = 1;
	start(SRV_H1, "\"http_version\":\"1.1\"");
	n = round_logged(hits, 8, 8, 0, SRV_H1, "HTTP/1.1");
	cpu0 = proc_cpu_ms(T.d.pid);
	usleep(2500 * 1000); /* nginx closes them after 1 s */
	cpu1 = proc_cpu_ms(T.d.pid);
	ck_assert_msg(cpu1 - cpu0 < (itd_sanitized() ? 800 : 300),
		      "%ld ms of CPU while idle for 2.5 s", cpu1 - cpu0);
	n = round_logged(hits, 8, 16, n, SRV_H1, "HTTP/1.1");
	/* none of the closed connections was used again */
	for (i = 8; i < n; i++)
		for (j = 0; j < 8; j++)
			ck_assert_int_ne(hits[i].conn, hits[j].conn);
	assert_log_matches_attempts(hits, n);
}
END_TEST

static Suite *
http2_suite(void)
{
	Suite *s = suite_create("http2");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)
	ADD(h2_over_tls_calls_share_a_few_connections);
	ADD(https_default_stays_http11);
	ADD(h2c_prior_knowledge_speaks_http2);
	ADD(http11_backend_speaks_http11);
	ADD(reload_switches_the_http_version);
	ADD(mixed_versions_on_one_server);
	ADD(idle_connections_closed_by_the_server);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(http2_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
