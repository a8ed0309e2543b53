/*
 * Integration: the service manager's notify protocol, against a datagram
 * socket the test binds and names in $NOTIFY_SOCKET (no systemd needed).
 * READY=1 once listening and nothing before it; WATCHDOG=1 from the
 * loop's cron when $WATCHDOG_USEC asks; RELOADING=1 (with MONOTONIC_USEC)
 * then READY=1 around every reload, applied or refused, through POST
 * /v1/reload and SIGHUP; STOPPING=1 on SIGTERM. Also the abstract
 * namespace ('@').
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "itd.h"

static struct itd T;
static int sock = -1;

#define OP "op-token"

static const char *cfg =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
	"completions\",\"model\":\"m\"}],"
	"\"routes\":[{\"name\":\"intent\",\"targets\":[{\"backend\":\"primary\"}]}]}";

/* Bind a datagram socket at name ('@' first: abstract) and export it. */
static void
notify_listen(const char *name)
{
	struct sockaddr_un sa;
	socklen_t len;

	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(sock, 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	ck_assert_uint_lt(strlen(name), sizeof sa.sun_path);
	memcpy(sa.sun_path, name, strlen(name));
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		unlink(name);
	ck_assert_int_eq(bind(sock, (struct sockaddr *)&sa, len), 0);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
}

/* The next datagram within ms into out; 0 when none came. */
static int
next_msg(char *out, size_t outsz, int ms)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	ssize_t n;

	out[0] = '\0';
	if (poll(&p, 1, ms) <= 0)
		return 0;
	n = recv(sock, out, outsz - 1, 0);
	ck_assert_int_ge(n, 0);
	out[n] = '\0';
	return 1;
}

/* The next message that is not a watchdog ping, within ms. */
static int
next_state(char *out, size_t outsz, int ms)
{
	while (next_msg(out, outsz, ms))
		if (strcmp(out, "WATCHDOG=1") != 0)
			return 1;
	return 0;
}

static void
expect_reload_pair(const char *status)
{
	char m[512];

	ck_assert_msg(next_state(m, sizeof m, 5000), "no RELOADING=1");
	ck_assert_msg(strncmp(m, "RELOADING=1\nMONOTONIC_USEC=", 27) == 0, "got \"%s\"", m);
	ck_assert_uint_gt(strtoull(m + 27, NULL, 10), 0);
	ck_assert_msg(next_state(m, sizeof m, 5000), "no READY=1 after the reload");
	ck_assert_msg(strncmp(m, "READY=1\nSTATUS=", 15) == 0 && strstr(m, status) != NULL,
		      "got \"%s\", expected READY=1 with \"%s\"", m, status);
}

static void
teardown(void)
{
	itd_stop(&T);
	if (sock >= 0)
		close(sock);
	sock = -1;
}

START_TEST(ready_once_listening_and_stopping_on_term)
{
	char path[256], m[512], want[128];

	snprintf(path, sizeof path, "/tmp/fusebox-notify-%d", (int)getpid());
	notify_listen(path);
	unsetenv("WATCHDOG_USEC");
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	/* itd_start returned after "listening on": the first message is READY=1. */
	ck_assert_msg(next_msg(m, sizeof m, 5000), "no READY=1");
	snprintf(want, sizeof want, "READY=1\nSTATUS=listening on 127.0.0.1:%d", T.d.port);
	ck_assert_str_eq(m, want);
	/* No watchdog asked: no pings. */
	ck_assert_msg(!next_msg(m, sizeof m, 1500), "unexpected \"%s\"", m);
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	ck_assert_msg(next_msg(m, sizeof m, 5000), "no STOPPING=1");
	ck_assert_str_eq(m, "STOPPING=1\nSTATUS=draining");
	unlink(path);
}
END_TEST

START_TEST(watchdog_from_the_loop)
{
	char name[64], m[512];
	struct timespec t0, t1;
	int pings = 0;

	snprintf(name, sizeof name, "@fusebox-notify-%d", (int)getpid());
	notify_listen(name);
	ck_assert_int_eq(setenv("WATCHDOG_USEC", "2000000", 1), 0);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	ck_assert(next_msg(m, sizeof m, 5000));
	ck_assert(strncmp(m, "READY=1\n", 8) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (next_msg(m, sizeof m, 3000) && strcmp(m, "WATCHDOG=1") == 0)
			pings++;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (t1.tv_sec - t0.tv_sec < 4);
	/* The cron fires once a second: within 4 s, 3 to 5 pings. */
	ck_assert_msg(pings >= 3 && pings <= 6, "%d pings in 4 s", pings);
	/* WATCHDOG_PID naming another process: not ours, no pings. */
	itd_stop(&T);
	while (next_msg(m, sizeof m, 200))
		;
	ck_assert_int_eq(setenv("WATCHDOG_PID", "1", 1), 0);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	ck_assert(next_msg(m, sizeof m, 5000));
	ck_assert(strncmp(m, "READY=1\n", 8) == 0);
	ck_assert_msg(!next_msg(m, sizeof m, 2500), "unexpected \"%s\"", m);
	unsetenv("WATCHDOG_PID");
	unsetenv("WATCHDOG_USEC");
}
END_TEST

START_TEST(reloading_then_ready_around_each_reload)
{
	char path[256], m[512];
	struct http_resp r;

	snprintf(path, sizeof path, "/tmp/fusebox-notify-%d", (int)getpid());
	notify_listen(path);
	unsetenv("WATCHDOG_USEC");
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	ck_assert(next_msg(m, sizeof m, 5000));
	ck_assert(strncmp(m, "READY=1\n", 8) == 0);

	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	expect_reload_pair("configuration reloaded");

	ck_assert_int_eq(itd_write_config(&T, "{\"listen\":\"127.0.0.1:0\",\"routes\":[{}]}"), 0);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/reload", NULL, OP, 5000, &r), 0);
	ck_assert_int_eq(r.status, 400);
	http_resp_free(&r);
	expect_reload_pair("configuration refused");

	ck_assert_int_eq(kill(T.d.pid, SIGHUP), 0);
	expect_reload_pair("configuration refused");
	ck_assert_int_eq(itd_write_config(&T, cfg), 0);
	ck_assert_int_eq(kill(T.d.pid, SIGHUP), 0);
	expect_reload_pair("configuration reloaded");
	unlink(path);
}
END_TEST

static Suite *
sdnotify_suite(void)
{
	Suite *s = suite_create("sdnotify");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)
	ADD(ready_once_listening_and_stopping_on_term);
	ADD(watchdog_from_the_loop);
	ADD(reloading_then_ready_around_each_reload);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sdnotify_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
