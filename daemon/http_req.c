/*
 * http_req: a request's fields: its headers and query arguments as MHD
 * hands them over, the response headers a handler adds, and the error
 * body every refusal and error answer carries. Engine thread. Nothing
 * here aborts when memory runs out: a failed allocation sets r->oom and
 * the request is answered 503 out_of_memory (http.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"
#include "jsonutil.h"

/* A name and its value copied into one block: k owns it, v points inside. 0 or -ENOMEM. */
static int
kv_set(struct http_kv *kv, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);

	kv->k = malloc(kl + vl + 2);
	if (kv->k == NULL)
		return -ENOMEM;
	memcpy(kv->k, key, kl + 1);
	kv->v = kv->k + kl + 1;
	memcpy(kv->v, value, vl + 1);
	return 0;
}

enum MHD_Result
collect_kv(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct http_req *r = cls;
	struct http_kv **vp;
	int *np;

	if (kind == MHD_HEADER_KIND) {
		vp = &r->hdrs;
		np = &r->nhdrs;
	} else {
		vp = &r->args;
		np = &r->nargs;
	}
	if (*np >= MAX_HEADERS)
		return MHD_YES;
	/* grows 8, 16, 32, 64: one allocation for a usual request */
	if (*np == 0 || (*np >= 8 && (*np & (*np - 1)) == 0)) {
		struct http_kv *nv = realloc(*vp, (size_t)(*np < 8 ? 8 : 2 * *np) * sizeof **vp);

		if (nv == NULL)
			goto oom;
		*vp = nv;
	}
	if (kv_set(&(*vp)[*np], key, value ? value : "") != 0)
		goto oom;
	(*np)++;
	return MHD_YES;
oom:
	r->oom = 1;
	return MHD_NO;
}

static const char *
kv_find(const struct http_kv *v, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcasecmp(v[i].k, name) == 0)
			return v[i].v;
	return NULL;
}

const char *
http_req_header(const struct http_req *r, const char *name)
{
	return kv_find(r->hdrs, r->nhdrs, name);
}

const char *
http_req_arg(const struct http_req *r, const char *name)
{
	return kv_find(r->args, r->nargs, name);
}

void
http_req_add_header(struct http_req *r, const char *name, const char *value)
{
	if (r->nresp_hdrs >= HTTP_MAX_RESP_HEADERS)
		return;
	if (kv_set(&r->resp_hdrs[r->nresp_hdrs], name, value) != 0) {
		r->oom = 1;
		return;
	}
	r->nresp_hdrs++;
}

/*
 * The OpenAI error "type" for a status, so that every error body of the
 * daemon also reads as an OpenAI error ({"error":{"message","type","code"}})
 * to SDK clients of the facade.
 */
const char *
error_type(unsigned status)
{
	switch (status) {
	case 401:
		return "authentication_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 429:
		return "rate_limit_error";
	default:
		return status >= 500 ? "server_error" : "invalid_request_error";
	}
}

/*
 * {"error":{"code","message","type"}} as json_print() writes it, in one
 * allocation sized for every byte escaped (\u00XX), so that the buffer
 * never grows and nothing aborts. NULL when that allocation fails.
 */
char *
error_body(unsigned status, const char *code, const char *message, size_t *len)
{
	const char *type = error_type(status);
	struct buf b;
	int rc;

	if (buf_init_fixed(&b, 48 + 6 * (strlen(code) + strlen(message) + strlen(type))) != 0)
		return NULL;
	rc = buf_puts(&b, "{\"error\":{\"code\":");
	if (rc == 0)
		rc = json_buf_string(&b, code);
	if (rc == 0)
		rc = buf_puts(&b, ",\"message\":");
	if (rc == 0)
		rc = json_buf_string(&b, message);
	if (rc == 0)
		rc = buf_puts(&b, ",\"type\":");
	if (rc == 0)
		rc = json_buf_string(&b, type);
	if (rc == 0)
		rc = buf_puts(&b, "}}");
	if (rc != 0) {
		buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return b.data;
}

void
set_error(struct http_req *r, unsigned status, const char *code, const char *message)
{
	free(r->resp_body);
	r->resp_body = error_body(status, code, message, &r->resp_len);
	if (r->resp_body == NULL) {
		r->resp_len = 0;
		r->oom = 1;
	}
	r->status = status;
}
