/*
 * itd: the fuseboxd + mock fixture for integration tests.
 */
#include "itd.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *
replace_all(const char *s, const char *what, const char *with)
{
	size_t wl = strlen(what), n = 0, cap = strlen(s) + 1;
	const char *p = s, *hit;
	char *out;

	for (hit = strstr(p, what); hit; hit = strstr(hit + wl, what))
		cap += strlen(with);
	out = malloc(cap);
	if (out == NULL)
		abort();
	while ((hit = strstr(p, what)) != NULL) {
		memcpy(out + n, p, (size_t)(hit - p));
		n += (size_t)(hit - p);
		memcpy(out + n, with, strlen(with));
		n += strlen(with);
		p = hit + wl;
	}
	memcpy(out + n, p, strlen(p) + 1);
	return out;
}

static int
write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	fchmod(fd, mode);
	close(fd);
	return 0;
}

int
itd_restart_daemon(struct itd *t)
{
	char *bin = harness_path("daemon/fuseboxd");
	char *argv[20] = {bin, "-c", t->cfg_path, NULL};
	/* FB_DAEMON_WRAPPER="/abs/tool args..." runs fuseboxd under it (valgrind). */
	char *wrap = getenv("FB_DAEMON_WRAPPER") ? strdup(getenv("FB_DAEMON_WRAPPER")) : NULL;
	char *save = NULL, *w = wrap ? strtok_r(wrap, " ", &save) : NULL;
	int n = 0, r;

	for (; w != NULL && n < 16; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	if (n > 0)
		memcpy(&argv[n], (char *[]){bin, "-c", t->cfg_path, NULL}, 4 * sizeof(char *));
	r = proc_spawn(&t->d, argv, n > 0 ? 60000 : 10000);
	free(wrap);
	free(bin);
	if (r == 0)
		snprintf(t->base, sizeof t->base, "http://127.0.0.1:%d", t->d.port);
	return r;
}

char *
itd_render(const struct itd *t, const char *config)
{
	char mockbase[64], *c1, *c2;

	snprintf(mockbase, sizeof mockbase, "http://127.0.0.1:%d", t->mock.port);
	c1 = replace_all(config, "@MOCK@", mockbase);
	c2 = replace_all(c1, "@DB@", t->db);
	free(c1);
	return c2;
}

int
itd_write_config(struct itd *t, const char *config)
{
	char *text = itd_render(t, config);
	int r = write_file(t->cfg_path, text, 0644);

	free(text);
	return r;
}

int
itd_start(struct itd *t, const char *config)
{
	char path[512];
	int r;

	memset(t, 0, sizeof *t);
	t->mock.pid = -1;
	t->d.pid = -1;
	r = mock_start(&t->mock);
	if (r != 0)
		return r;
	t->dir = harness_tmpdir();
	snprintf(path, sizeof path, "%s/fusebox.db", t->dir);
	t->db = strdup(path);
	snprintf(path, sizeof path, "%s/fusebox.json", t->dir);
	t->cfg_path = strdup(path);
	r = itd_write_config(t, config);
	if (r != 0)
		return r;
	snprintf(path, sizeof path, "%s/tokens", t->dir);
	r = write_file(path,
		       "op-token operator alice\nview-token viewer victor\ncall-token caller svc\n",
		       0600);
	if (r != 0)
		return r;
	return itd_restart_daemon(t);
}

int
itd_kill_daemon(struct itd *t, int sig)
{
	return proc_kill(&t->d, sig);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
itd_stop(struct itd *t)
{
	int ds = 0, ms = 0;

	if (t->d.pid > 0)
		ds = proc_kill(&t->d, SIGTERM);
	if (t->mock.pid > 0)
		ms = proc_kill(&t->mock, SIGTERM);
	/* A clean SIGTERM exit is part of the contract; under the sanitizers
	 * a leak or an error report makes the exit status non-zero. */
	if (ds != 0 || ms != 0) {
		fprintf(stderr,
			"itd: fuseboxd exited %d, mock exited %d on SIGTERM (want 0, 0): "
			"see the report above\n",
			ds, ms);
		_exit(3);
	}
	/* FB_KEEP_TMP=1 keeps the folder (config, DB) for a post-mortem. */
	if (t->dir && getenv("FB_KEEP_TMP") == NULL)
		nftw(t->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(t->dir);
	free(t->db);
	free(t->cfg_path);
	t->dir = t->db = t->cfg_path = NULL;
}

int
itd_req(struct itd *t, const char *method, const char *path, const char *body, const char *token,
	long timeout_ms, struct http_resp *out)
{
	char url[512], auth[256];
	const char *hdrs[2] = {NULL, NULL};

	snprintf(url, sizeof url, "%s%s", t->base, path);
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		hdrs[0] = auth;
	}
	return http_do(method, url, body, hdrs, timeout_ms, out);
}

int
itd_call(struct itd *t, const char *route, const char *body, long timeout_ms, struct http_resp *out)
{
	char path[256];

	snprintf(path, sizeof path, "/v1/routes/%s/call", route);
	return itd_req(t, "POST", path, body, NULL, timeout_ms, out);
}

int
itd_call_many(struct itd *t, const char *route, const char *body, int n, long timeout_ms,
	      struct http_resp *out)
{
	const char **urls = NULL, **bodies = NULL;
	char url[512];
	int i, r;

	if (n < 1) {
		r = -EINVAL;
		goto out;
	}
	if (n > ITD_MANY_MAX) {
		r = -E2BIG;
		goto out;
	}
	urls = calloc((size_t)n, sizeof *urls);
	bodies = calloc((size_t)n, sizeof *bodies);
	if (urls == NULL || bodies == NULL) {
		r = -ENOMEM;
		goto out;
	}
	snprintf(url, sizeof url, "%s/v1/routes/%s/call", t->base, route);
	for (i = 0; i < n; i++) {
		urls[i] = url;
		bodies[i] = body;
	}
	r = http_do_many(n, "POST", urls, bodies, NULL, timeout_ms, out);
out:
	free(bodies);
	free(urls);
	return r;
}

cJSON *
itd_expect(struct itd *t, const char *method, const char *path, const char *body, const char *token,
	   long want)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_req(t, method, path, body, token, 10000, &r), 0);
	ck_assert_msg(r.status == want, "%s %s %s: status %ld, want %ld: %s", method, path,
		      body ? body : "", r.status, want, r.body);
	o = itd_json(&r);
	http_resp_free(&r);
	return o;
}

void
itd_expect_error(struct itd *t, const char *method, const char *path, const char *body,
		 const char *token, long want, const char *code, const char *needle)
{
	cJSON *o = itd_expect(t, method, path, body, token, want), *err;

	ck_assert_ptr_nonnull(o);
	err = cJSON_GetObjectItem(o, "error");
	ck_assert_msg(strcmp(itd_str(err, "code"), code) == 0, "%s %s %s: code %s, want %s", method,
		      path, body ? body : "", itd_str(err, "code"), code);
	ck_assert_msg(strstr(itd_str(err, "message"), needle) != NULL,
		      "%s %s %s: message \"%s\" lacks \"%s\"", method, path, body ? body : "",
		      itd_str(err, "message"), needle);
	cJSON_Delete(o);
}

static void *
itd_bg_main(void *arg)
{
	struct itd_bg *b = arg;

	b->rc = itd_call(b->t, b->route, b->body, 10000, &b->r);
	return NULL;
}

int
itd_bg_start(struct itd_bg *b, struct itd *t, const char *route, const char *body)
{
	memset(b, 0, sizeof *b);
	b->t = t;
	b->route = route;
	b->body = body;
	return pthread_create(&b->th, NULL, itd_bg_main, b);
}

int
itd_bg_join(struct itd_bg *b)
{
	pthread_join(b->th, NULL);
	return b->rc;
}

cJSON *
itd_json(const struct http_resp *r)
{
	return r->body ? cJSON_ParseWithLength(r->body, r->len) : NULL;
}

const char *
itd_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

double
itd_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

void
itd_settle(void)
{
	usleep(150 * 1000);
}

long long
itd_count(struct itd *t, const char *sql_tail)
{
	char sql[1024];

	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", sql_tail);
	return db_scalar_int(t->db, sql);
}

long long
itd_count_wait(struct itd *t, const char *sql_tail, long long want, int timeout_ms)
{
	int64_t end = harness_now_ms() + timeout_ms;
	long long n;

	while ((n = itd_count(t, sql_tail)) != want && harness_now_ms() < end)
		usleep(20 * 1000);
	return n;
}

double
itd_metric(struct itd *t, const char *name)
{
	struct http_resp r;
	char key[160];
	const char *p;
	double v = -1;

	ck_assert_int_eq(itd_req(t, "GET", "/metrics", NULL, "view-token", 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	snprintf(key, sizeof key, "\n%s ", name);
	p = r.body ? strstr(r.body, key) : NULL;
	if (p)
		v = strtod(p + strlen(key), NULL);
	http_resp_free(&r);
	return v;
}

void
itd_add_test(Suite *s, const char *name, const TTest *t, SFun setup, SFun teardown,
	     double timeout_s)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout_s);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

int
itd_sanitized(void)
{
	const char *v = getenv("FB_SANITIZED");

	return v != NULL && strcmp(v, "1") == 0;
}
