/*
 * client: libcurl requests to the control API (see client.h).
 *
 * A transfer never runs longer than its timeout (connect included), so a
 * hung daemon costs the caller at most that. The answer body has a ceiling
 * (CLIENT_BODY_MAX): a bigger one ends the transfer as a transport error.
 * The token is sent only in the Authorization header and wiped on free.
 */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tokens.h"

#define TOKEN_FILE_MAX (64 * 1024)

static char *next_field(char **p);

int
client_init(struct client *c, const char *url, const char *token, int role, char **cause)
{
	size_t n;

	memset(c, 0, sizeof *c);
	c->role = CLIENT_ROLE_UNKNOWN;
	if (url == NULL || *url == '\0')
		url = getenv("FUSEBOX_URL");
	if (url == NULL || *url == '\0')
		url = CLIENT_DEFAULT_URL;
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		*cause = xasprintf("bad URL \"%s\": it must start with http:// or https://", url);
		return -EINVAL;
	}
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if (n >= sizeof c->base) {
		*cause = xstrdup("URL too long");
		return -EINVAL;
	}
	memcpy(c->base, url, n);
	c->base[n] = '\0';
	if (token != NULL)
		c->token = xstrdup(token);
	c->role = role;
	return 0;
}

void
client_free(struct client *c)
{
	if (c->token != NULL) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	c->token = NULL;
}

int
client_addr_read(const char *path, char *url, size_t urlsz, char **cause)
{
	char text[1024], *line, *next, *p, *tok;
	size_t n;
	ssize_t got;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		*cause = xasprintf("%s: %s", path, strerror(e));
		return -e;
	}
	got = read(fd, text, sizeof text - 1);
	close(fd);
	text[got > 0 ? got : 0] = '\0';
	for (line = text; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		p = line;
		tok = next_field(&p);
		if (tok == NULL || tok[0] == '#')
			continue;
		n = strlen(tok);
		while (n > 0 && tok[n - 1] == '/')
			tok[--n] = '\0';
		if ((strncmp(tok, "http://", 7) != 0 && strncmp(tok, "https://", 8) != 0) ||
		    n >= urlsz || n <= 8) {
			*cause = xasprintf("%s: \"%s\" is not an http(s) URL", path, tok);
			return -EINVAL;
		}
		memcpy(url, tok, n + 1);
		return 0;
	}
	*cause = xasprintf("%s: no URL in the file", path);
	return -EINVAL;
}

void
client_discover(struct client *c, const char *flag_file, int url_given)
{
	const char *env = getenv("FUSEBOX_ADDR_FILE"), *file = NULL;
	char url[sizeof c->base], *cause = NULL;

	if (flag_file != NULL && flag_file[0] != '\0')
		file = flag_file;
	else if (env != NULL && env[0] != '\0')
		file = env;
	else if (!url_given)
		file = CLIENT_ADDR_FILE_DEFAULT;
	if (file == NULL || strlen(file) >= sizeof c->addr_file)
		return;
	snprintf(c->addr_file, sizeof c->addr_file, "%s", file);
	if (!url_given && client_addr_read(file, url, sizeof url, &cause) == 0)
		snprintf(c->base, sizeof c->base, "%s", url);
	free(cause);
}

static size_t
on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;

	if (buf_append(b, p, size * nmemb) != 0)
		return 0; /* over the ceiling: curl ends with CURLE_WRITE_ERROR */
	return size * nmemb;
}

void
client_xfer_setup(const struct client *c, struct client_xfer *x, const char *method,
		  const char *path, const char *body, long timeout_ms)
{
	char url[1024], *auth;

	memset(x, 0, sizeof *x);
	buf_init(&x->body, CLIENT_BODY_MAX);
	x->h = curl_easy_init();
	if (x->h == NULL)
		abort();
	snprintf(url, sizeof url, "%s%s", c->base, path);
	curl_easy_setopt(x->h, CURLOPT_URL, url);
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(x->h, CURLOPT_USERAGENT, "fusebox/" FB_VERSION);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, &x->body);
	curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http,https");
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	x->hdrs = curl_slist_append(x->hdrs, "Accept: application/json");
	if (c->token != NULL) {
		auth = xasprintf("Authorization: Bearer %s", c->token);
		x->hdrs = curl_slist_append(x->hdrs, auth);
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	if (body != NULL) {
		x->req_body = xstrdup(body);
		x->hdrs = curl_slist_append(x->hdrs, "Content-Type: application/json");
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, x->req_body);
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, (long)strlen(x->req_body));
	}
	if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(x->h, CURLOPT_HTTPGET, 1L);
	} else {
		if (body == NULL && strcmp(method, "POST") == 0) {
			curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, "");
			curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, 0L);
		}
		curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, method);
	}
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
}

char *
client_xfer_error(const struct client *c, struct client_xfer *x, CURLcode code, long timeout_ms)
{
	if (code == CURLE_OPERATION_TIMEDOUT)
		return xasprintf("%s: no answer within %ld ms", c->base, timeout_ms);
	if (code == CURLE_WRITE_ERROR)
		return xasprintf("%s: answer larger than %d bytes", c->base, CLIENT_BODY_MAX);
	return xasprintf("cannot reach %s: %s", c->base,
			 x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
}

void
client_xfer_cleanup(struct client_xfer *x)
{
	if (x->h != NULL)
		curl_easy_cleanup(x->h);
	curl_slist_free_all(x->hdrs);
	buf_free(&x->body);
	free(x->req_body);
	memset(x, 0, sizeof *x);
}

/* The answer's header lines; a new status line (after a 100 Continue) starts again. */
static size_t
on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;

	if (n >= 5 && strncmp(p, "HTTP/", 5) == 0)
		buf_reset(b);
	if (buf_append(b, p, n) != 0)
		return 0;
	return n;
}

int
client_do(const struct client *c, const char *method, const char *path, const char *body,
	  long timeout_ms, struct client_resp *out, char **cause)
{
	struct client_xfer x;
	struct buf hdrs;
	CURLcode code;
	int rc = 0;

	memset(out, 0, sizeof *out);
	buf_init(&hdrs, CLIENT_HEADERS_MAX);
	client_xfer_setup(c, &x, method, path, body, timeout_ms);
	curl_easy_setopt(x.h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x.h, CURLOPT_HEADERDATA, &hdrs);
	code = curl_easy_perform(x.h);
	if (code != CURLE_OK) {
		*cause = client_xfer_error(c, &x, code, timeout_ms);
		rc = CLIENT_E_TRANSPORT;
		goto out;
	}
	curl_easy_getinfo(x.h, CURLINFO_RESPONSE_CODE, &out->status);
	out->len = x.body.len;
	out->body = buf_steal(&x.body);
	out->headers = buf_steal(&hdrs);
out:
	buf_free(&hdrs);
	client_xfer_cleanup(&x);
	return rc;
}

void
client_resp_free(struct client_resp *r)
{
	free(r->body);
	free(r->headers);
	memset(r, 0, sizeof *r);
}

char *
client_error_text(long status, const char *body, size_t len)
{
	cJSON *root = NULL;
	const cJSON *err, *code, *msg;
	char *text = NULL, excerpt[201];
	size_t i, n;

	if (body != NULL && len > 0)
		root = cJSON_ParseWithLength(body, len);
	err = cJSON_GetObjectItemCaseSensitive(root, "error");
	code = cJSON_GetObjectItemCaseSensitive(err, "code");
	msg = cJSON_GetObjectItemCaseSensitive(err, "message");
	if (cJSON_IsString(code) && cJSON_IsString(msg)) {
		text = xasprintf("%ld %s: %s", status, code->valuestring, msg->valuestring);
		goto out;
	}
	if (cJSON_IsString(msg)) {
		text = xasprintf("%ld: %s", status, msg->valuestring);
		goto out;
	}
	n = body != NULL ? MIN(len, sizeof excerpt - 1) : 0;
	for (i = 0; i < n; i++)
		excerpt[i] = body[i] == '\n' || body[i] == '\r' ? ' ' : body[i];
	excerpt[n] = '\0';
	text = n ? xasprintf("HTTP %ld: %s", status, excerpt) : xasprintf("HTTP %ld", status);
out:
	cJSON_Delete(root);
	return text;
}

char *
client_escape(const char *seg)
{
	char *e = curl_easy_escape(NULL, seg, 0), *r;

	if (e == NULL)
		abort();
	r = xstrdup(e);
	curl_free(e);
	return r;
}

/* The next whitespace-separated field of the line at *p (cut in place), or NULL. */
static char *
next_field(char **p)
{
	char *s = *p, *f;

	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	if (*s == '\0' || *s == '\n')
		return NULL;
	f = s;
	while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
		s++;
	if (*s == ' ' || *s == '\t' || *s == '\r') {
		*s++ = '\0';
	} else if (*s == '\n') {
		*s = '\0';
		*p = s; /* the caller sees the end of the line next */
		return f;
	}
	*p = s;
	return f;
}

int
client_token_read(const char *path, char **token, int *role, char **cause)
{
	char *text = NULL, *line, *next, *p, *tok, *r;
	ssize_t n;
	size_t len = 0;
	int fd = -1, rc = 0;
	enum role ro;

	*token = NULL;
	*role = CLIENT_ROLE_UNKNOWN;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		*cause = xasprintf("%s: %s", path, strerror(errno));
		goto out;
	}
	text = xmalloc(TOKEN_FILE_MAX + 1);
	while (len < TOKEN_FILE_MAX && (n = read(fd, text + len, TOKEN_FILE_MAX - len)) > 0)
		len += (size_t)n;
	text[len] = '\0';
	for (line = text; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		p = line;
		tok = next_field(&p);
		if (tok == NULL || tok[0] == '#')
			continue;
		*token = xstrdup(tok);
		r = next_field(&p);
		if (r != NULL && role_parse(r, &ro) == 0)
			*role = (int)ro;
		goto out;
	}
	rc = -EINVAL;
	*cause = xasprintf("%s: no token in the file", path);
out:
	if (text != NULL) {
		explicit_bzero(text, TOKEN_FILE_MAX + 1);
		free(text);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int
client_token_resolve(const char *flag_file, char **token, int *role, const char **source,
		     char **cause)
{
	static const char *const daemon_files[] = {"/etc/fusebox/tokens",
						   "/var/lib/fusebox/tokens"};
	const char *env;
	char *ignored = NULL;
	size_t i;

	*token = NULL;
	*role = CLIENT_ROLE_UNKNOWN;
	*source = "none";
	if (flag_file != NULL) {
		*source = "--token-file";
		return client_token_read(flag_file, token, role, cause);
	}
	env = getenv("FUSEBOX_TOKEN");
	if (env != NULL && *env != '\0') {
		*token = xstrdup(env);
		*source = "FUSEBOX_TOKEN";
		return 0;
	}
	env = getenv("FUSEBOX_TOKEN_FILE");
	if (env != NULL && *env != '\0') {
		*source = "FUSEBOX_TOKEN_FILE";
		return client_token_read(env, token, role, cause);
	}
	env = getenv("FUSEBOX_TOKENS_FILE");
	if (env != NULL && *env != '\0' && access(env, R_OK) == 0 &&
	    client_token_read(env, token, role, &ignored) == 0) {
		*source = "FUSEBOX_TOKENS_FILE";
		return 0;
	}
	free(ignored);
	ignored = NULL;
	for (i = 0; i < ARRAY_SIZE(daemon_files); i++) {
		if (access(daemon_files[i], R_OK) != 0)
			continue;
		if (client_token_read(daemon_files[i], token, role, &ignored) == 0) {
			*source = daemon_files[i];
			return 0;
		}
		free(ignored);
		ignored = NULL;
	}
	return 0;
}
