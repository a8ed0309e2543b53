/*
 * http_screen: each request is screened on its headers before any body
 * is read (framing, header count, Host and Origin, the endpoint, auth,
 * the media type, the body caps), and its body is held within
 * max_body_bytes and max_buffered_body_bytes as it arrives. Engine
 * thread; the buffered-body count is under srv->lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"

static const char *const method_names[] = {"GET", "POST", "PUT", "DELETE", "OTHER"};

/*
 * Match url against pattern; captures go to r->params. 1 on match.
 */
static int
pattern_match(const char *pattern, const char *url, struct http_req *r)
{
	const char *p = pattern, *u = url;
	char *caps[HTTP_MAX_PARAMS];
	int ncaps = 0, i;

	while (*p && *u) {
		if (p[0] == '{' && p[1] == '}') {
			const char *end = strchr(u, '/');
			size_t n = end ? (size_t)(end - u) : strlen(u);

			if (n == 0 || ncaps == HTTP_MAX_PARAMS)
				goto fail;
			caps[ncaps++] = xstrndup(u, n);
			u += n;
			p += 2;
			continue;
		}
		if (*p != *u)
			goto fail;
		p++;
		u++;
	}
	if (*p || *u)
		goto fail;
	if (r) {
		for (i = 0; i < ncaps; i++)
			r->params[i] = caps[i];
		r->nparams = ncaps;
	} else {
		for (i = 0; i < ncaps; i++)
			free(caps[i]);
	}
	return 1;
fail:
	for (i = 0; i < ncaps; i++)
		free(caps[i]);
	return 0;
}

/*
 * Find the endpoint for r. 0, or 404 / 405 (with *allow listing methods).
 */
static int
endpoint_find(struct http_req *r, const struct endpoint **out, char *allow, size_t allowlen)
{
	int t;
	const struct endpoint *e;
	int path_seen = 0;

	allow[0] = '\0';
	for (t = 0; t < r->srv->ntables; t++) {
		for (e = r->srv->tables[t]; e->pattern != NULL; e++) {
			if (!pattern_match(e->pattern, r->url, NULL))
				continue;
			path_seen = 1;
			if (e->method == r->method) {
				pattern_match(e->pattern, r->url, r);
				*out = e;
				return 0;
			}
			if (strstr(allow, method_names[e->method]) == NULL) {
				size_t n = strlen(allow);

				snprintf(allow + n, allowlen - n, "%s%s", n ? ", " : "",
					 method_names[e->method]);
			}
		}
	}
	return path_seen ? 405 : 404;
}

/*
 * Authenticate r against the endpoint's access level. 0, or 401 / 403 with
 * the error body set.
 */
static int
auth_check(struct http_server *s, struct http_req *r)
{
	const char *h = http_req_header(r, "Authorization");
	const struct token *t = NULL;
	int need;

	int callers_require_token, metrics_public;

	snprintf(r->actor, sizeof r->actor, "anonymous");
	r->role = -1;
	/* The tokens may be swapped by a reload: look up under the lock and
	 * keep only copies (name, role). */
	pthread_mutex_lock(&s->lock);
	callers_require_token = s->callers_require_token;
	metrics_public = s->metrics_public;
	if (h && strncasecmp(h, "Bearer ", 7) == 0 && s->tokens) {
		t = tokens_find(s->tokens, h + 7);
		if (t) {
			snprintf(r->actor, sizeof r->actor, "%s", t->name);
			r->role = (int)t->role;
		}
	}
	pthread_mutex_unlock(&s->lock);
	switch (r->ep->access) {
	case ACCESS_OPEN:
		return 0;
	case ACCESS_DATA:
		if (!callers_require_token)
			return 0;
		need = ROLE_CALLER;
		break;
	case ACCESS_METRICS:
		if (metrics_public)
			return 0;
		need = ROLE_VIEWER;
		break;
	case ACCESS_VIEWER:
		need = ROLE_VIEWER;
		break;
	default:
		need = ROLE_OPERATOR;
		break;
	}
	if (r->role < 0) {
		set_error(r, 401, "unauthorized",
			  h ? "unknown token" : "missing Authorization: Bearer <token>");
		return 401;
	}
	if (r->role < need) {
		char msg[128];

		snprintf(msg, sizeof msg, "role %s may not do this (needs %s)",
			 role_name((enum role)r->role), role_name((enum role)need));
		set_error(r, 403, "forbidden", msg);
		return 403;
	}
	return 0;
}

/* What the header block says about the framing and the caller. */
struct framing {
	int nheaders, nhost, ncl, nte;
	int cl_bad;	/* unparsable or differing Content-Length values */
	int te_chunked; /* one Transfer-Encoding, exactly "chunked" */
	uint64_t cl;
	const char *host, *origin, *ctype;
};

static enum MHD_Result
framing_scan(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (value == NULL)
		value = "";
	f->nheaders++;
	if (strcasecmp(key, "Host") == 0) {
		f->nhost++;
		f->host = value;
	} else if (strcasecmp(key, "Content-Length") == 0) {
		if (reqcheck_content_length(value, &f->ncl, &f->cl) != 0)
			f->cl_bad = 1;
	} else if (strcasecmp(key, "Transfer-Encoding") == 0) {
		f->nte++;
		f->te_chunked = f->nte == 1 && strcasecmp(value, "chunked") == 0;
	} else if (strcasecmp(key, "Origin") == 0) {
		f->origin = value;
	} else if (strcasecmp(key, "Content-Type") == 0) {
		f->ctype = value;
	}
	return MHD_YES;
}

/*
 * Check a request on its headers alone, before any of its body is read:
 * the framing (RFC 9112 6.1, 6.3: both Content-Length and
 * Transfer-Encoding, differing lengths, HTTP/1.1 without exactly one
 * Host), the header count, Host and Origin, the endpoint, auth, the media
 * type and the body caps. 0, or the status with the error set; a refused
 * request that carries a body (or bad framing) is answered at once and
 * the connection closed (r->close_after).
 */
int
req_screen(struct http_server *s, struct http_req *r, struct MHD_Connection *conn,
	   const char *version)
{
	struct framing f;
	char allow[64], msg[128];
	int rc, http10 = strcmp(version, MHD_HTTP_VERSION_1_0) == 0;
	int body;

	memset(&f, 0, sizeof f);
	MHD_get_connection_values(conn, MHD_HEADER_KIND, framing_scan, &f);
	body = f.nte > 0 || f.cl > 0 || f.cl_bad;
	r->close_after = body;
	if (f.nte > 0 && (f.ncl > 0 || f.cl_bad || http10)) {
		r->close_after = 1;
		set_error(r, 400, "bad_request",
			  http10 ? "Transfer-Encoding in an HTTP/1.0 request"
				 : "both Content-Length and Transfer-Encoding (RFC 9112 6.1)");
		return 400;
	}
	if (f.nte > 0 && !f.te_chunked) {
		r->close_after = 1;
		set_error(r, 501, "not_implemented",
			  "only Transfer-Encoding: chunked is supported");
		return 501;
	}
	if (f.cl_bad) {
		set_error(r, 400, "bad_request",
			  "invalid or differing Content-Length values (RFC 9112 6.3)");
		return 400;
	}
	if ((!http10 && f.nhost == 0) || f.nhost > 1) {
		r->close_after = 1;
		set_error(r, 400, "bad_request",
			  f.nhost ? "more than one Host header" : "HTTP/1.1 request without Host");
		return 400;
	}
	if (f.nheaders > MAX_HEADERS) {
		snprintf(msg, sizeof msg, "more than %d request headers", MAX_HEADERS);
		set_error(r, 431, "too_many_headers", msg);
		return 431;
	}
	if (f.host != NULL && !reqcheck_host(&s->self, f.host)) {
		set_error(r, 403, "host_not_allowed",
			  "Host is not this server's address (see http.allowed_hosts)");
		return 403;
	}
	if (f.origin != NULL && !reqcheck_origin(f.origin, s->origins, s->norigins)) {
		set_error(r, 403, "origin_not_allowed",
			  "requests from browser pages are refused (see http.allowed_origins)");
		return 403;
	}
	rc = endpoint_find(r, &r->ep, allow, sizeof allow);
	if (rc == 404) {
		set_error(r, 404, "not_found", "no such endpoint");
		return 404;
	}
	if (rc == 405) {
		set_error(r, 405, "method_not_allowed", "method not allowed here");
		http_req_add_header(r, "Allow", allow);
		return 405;
	}
	rc = auth_check(s, r);
	if (rc != 0)
		return rc;
	if (body && !reqcheck_json_type(f.ctype)) {
		set_error(r, 415, "unsupported_media_type",
			  "a request body must be sent as Content-Type: application/json");
		return 415;
	}
	if (f.ncl > 0 && f.cl > (uint64_t)s->max_body_bytes) {
		snprintf(msg, sizeof msg, "request body larger than max_body_bytes (%lld)",
			 (long long)s->max_body_bytes);
		set_error(r, 413, "body_too_large", msg);
		return 413;
	}
	if (f.cl > 0) {
		/* A quarter of the budget is kept for small bodies (a call's JSON):
		 * a flood of large half-sent bodies cannot stop the calls. A large
		 * body alone is always let in (the budget may be smaller than it). */
		int64_t cap = s->max_buffered;

		pthread_mutex_lock(&s->lock);
		if (f.cl > HTTP_SMALL_BODY_BYTES && s->buffered > 0)
			cap -= s->max_buffered / 4;
		if (s->max_buffered > 0 && s->buffered + (int64_t)f.cl > cap) {
			rc = 503;
		} else {
			s->buffered += (int64_t)f.cl;
			r->reserved = (int64_t)f.cl;
		}
		pthread_mutex_unlock(&s->lock);
		if (rc == 503) {
			refusal_note(s, HTTP_REFUSED_BODY_MEMORY);
			set_error(r, 503, "overloaded",
				  "too many request bodies in flight; retry shortly");
			http_req_add_header(r, "Retry-After", "1");
			return 503;
		}
	}
	r->close_after = 0; /* accepted: keep-alive as the client asked */
	return 0;
}

/*
 * Append to r's body without aborting: a body past the reservation is
 * counted against max_buffered_body_bytes as it grows (chunked bodies).
 * 0, 413 or 503 with the error set.
 */
int
body_append(struct http_server *s, struct http_req *r, const char *p, size_t n)
{
	struct buf *b = &r->body;
	size_t need = b->len + n + 1, ncap;
	char msg[96], *d;
	int64_t extra;
	int over = 0;

	if (n > b->max || b->len > b->max - n) {
		snprintf(msg, sizeof msg, "request body larger than max_body_bytes (%lld)",
			 (long long)s->max_body_bytes);
		set_error(r, 413, "body_too_large", msg);
		return 413;
	}
	extra = (int64_t)(b->len + n) - r->reserved;
	if (extra > 0) {
		pthread_mutex_lock(&s->lock);
		if (s->max_buffered > 0 && s->buffered + extra > s->max_buffered) {
			over = 1;
		} else {
			s->buffered += extra;
			r->reserved += extra;
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (!over && need > b->cap) {
		ncap = (size_t)r->reserved + 1 > need ? (size_t)r->reserved + 1 : need;
		if (ncap < 2 * b->cap && 2 * b->cap <= b->max + 1)
			ncap = 2 * b->cap;
		d = realloc(b->data, ncap);
		if (d == NULL) {
			over = 1;
		} else {
			b->data = d;
			b->cap = ncap;
		}
	}
	if (over) {
		refusal_note(s, HTTP_REFUSED_BODY_MEMORY);
		set_error(r, 503, "overloaded", "too many request bodies in flight; retry shortly");
		http_req_add_header(r, "Retry-After", "1");
		return 503;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}
