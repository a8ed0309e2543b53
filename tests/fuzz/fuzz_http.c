/*
 * fuzz_http: raw bytes as one client connection through the HTTP front
 * (daemon/http.c over libmicrohttpd: the request parser, the header
 * screening, the router, auth and the body caps) into a dry-run endpoint
 * table whose handlers only check what the front promised them and
 * answer; one handler answers later, from a suspended connection. The
 * input is written to one end of a socket pair whose other end goes to
 * http_adopt(); the front runs until the answer is read or nothing moves,
 * then the client closes and the connection must be gone.
 */
#include <assert.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine.h"
#include "http.h"
#include "log.h"
#include "tokens.h"
#include "util.h"

#define MAX_BODY 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* http.c counts requests for the engine; no engine here. */
void
engine_http_request(struct engine *e)
{
	(void)e;
}

static struct http_req *later; /* the deferred answer of dry_later */

static void
dry_check(struct http_req *r)
{
	int i;

	assert(r->ep != NULL && r->url != NULL && r->url[0] == '/');
	assert(r->nparams >= 0 && r->nparams <= HTTP_MAX_PARAMS);
	for (i = 0; i < r->nparams; i++)
		assert(r->params[i] != NULL && r->params[i][0] != '\0');
	assert(r->nhdrs <= 64);
	assert(r->body.len <= MAX_BODY);
	assert(r->body.data == NULL || r->body.data[r->body.len] == '\0');
	assert(r->ep->access == ACCESS_OPEN || r->ep->access == ACCESS_DATA || r->role >= 0);
}

static void
dry_now(struct http_req *r, struct engine *e)
{
	(void)e;
	dry_check(r);
	http_req_add_header(r, "X-Dry", "1");
	http_respond_error(r, 200, "dry_run", "%zu bytes", r->body.len);
}

static void
dry_later(struct http_req *r, struct engine *e)
{
	(void)e;
	dry_check(r);
	if (later != NULL) {
		dry_now(r, e);
		return;
	}
	later = r;
}

static const struct endpoint dry_endpoints[] = {
	{HTTP_GET, "/healthz", ACCESS_OPEN, dry_now},
	{HTTP_POST, "/v1/routes/{}/call", ACCESS_DATA, dry_later},
	{HTTP_GET, "/v1/requests/{}", ACCESS_DATA, dry_now},
	{HTTP_GET, "/v1/state", ACCESS_VIEWER, dry_now},
	{HTTP_PUT, "/v1/routes/{}/level", ACCESS_OPERATOR, dry_now},
	{HTTP_DELETE, "/v1/routes/{}/level", ACCESS_OPERATOR, dry_now},
	{HTTP_POST, "/v1/reload", ACCESS_OPERATOR, dry_now},
	{HTTP_GET, "/metrics", ACCESS_METRICS, dry_now},
	{0, NULL, 0, NULL},
};

static const struct endpoint *const dry_tables[] = {dry_endpoints};

static struct http_server *
server(void)
{
	static struct http_server *srv;
	static char *const hosts[] = {"fusebox.internal"};
	static char *const origins[] = {"http://app.example"};
	struct http_opts o;
	struct tokens *t = NULL;
	char *cause = NULL;

	if (srv != NULL)
		return srv;
	log_set_level(LOG_LEVEL_ERROR);
	if (tokens_parse("op-token operator op\nview-token viewer view\ncall-token caller c\n", &t,
			 &cause) != 0)
		abort();
	memset(&o, 0, sizeof o);
	o.host = "127.0.0.1";
	o.max_body_bytes = MAX_BODY;
	o.max_buffered_body_bytes = 3 * MAX_BODY;
	o.max_connections = 16;
	o.max_connections_per_ip = 8;
	o.conn_timeout_s = 30;
	o.header_timeout_s = 10;
	o.idle_timeout_s = 30;
	o.allowed_hosts = hosts;
	o.nallowed_hosts = 1;
	o.allowed_origins = origins;
	o.nallowed_origins = 1;
	o.tokens = t;
	o.tables = dry_tables;
	o.ntables = 1;
	if (http_start(&o, NULL, &srv, &cause) != 0)
		abort();
	return srv;
}

static int
open_conns(struct http_server *s)
{
	struct http_conn_stats st;
	int i, n = 0;

	http_conn_stats(s, &st);
	for (i = 0; i < HTTP_CONN__COUNT; i++)
		n += (int)st.conns[i];
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_server *s = server();
	struct sockaddr_in sa;
	struct http_conn_stats st;
	char sink[4096];
	size_t sent = 0;
	ssize_t n;
	int sv[2], i, quiet = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
		return 0;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(40000);
	if (http_adopt(s, sv[0], (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(sv[1]);
		return 0;
	}
	for (i = 0; i < 64 && quiet < 3; i++) {
		quiet++;
		if (sent < size) {
			n = send(sv[1], data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0) {
				sent += (size_t)n;
				quiet = 0;
			}
		}
		http_run(s, 0); /* adopted connections: nothing to accept */
		if (later != NULL) {
			struct http_req *r = later;

			later = NULL;
			http_respond_error(r, 200, "dry_run", "later, %zu bytes", r->body.len);
			quiet = 0;
		}
		while ((n = recv(sv[1], sink, sizeof sink, 0)) > 0)
			quiet = 0;
		if (n == 0)
			break;
	}
	close(sv[1]);
	/* The client left: the connection and its request must go. */
	for (i = 0; i < 64 && open_conns(s) > 0; i++) {
		http_run(s, 0); /* adopted connections: nothing to accept */
		if (later != NULL) {
			struct http_req *r = later;

			later = NULL;
			http_respond_error(r, 200, "dry_run", "late");
		}
	}
	assert(open_conns(s) == 0);
	assert(http_active(s) == 0);
	http_conn_stats(s, &st);
	assert(st.buffered_body_bytes == 0);
	return 0;
}
