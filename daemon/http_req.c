/*
 * http_req: a request's fields: its headers and query arguments as MHD
 * hands them over, the response headers a handler adds, and the error
 * body every refusal and error answer carries. Engine thread.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"
#include "jsonutil.h"

/* A name and its value copied into one block: k owns it, v points inside. */
static void
kv_set(struct http_kv *kv, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);

	kv->k = xmalloc(kl + vl + 2);
	memcpy(kv->k, key, kl + 1);
	kv->v = kv->k + kl + 1;
	memcpy(kv->v, value, vl + 1);
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
	if (*np == 0 || (*np >= 8 && (*np & (*np - 1)) == 0))
		*vp = xrealloc(*vp, (size_t)(*np < 8 ? 8 : 2 * *np) * sizeof **vp);
	kv_set(&(*vp)[*np], key, value ? value : "");
	(*np)++;
	return MHD_YES;
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
	kv_set(&r->resp_hdrs[r->nresp_hdrs], name, value);
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

void
set_error(struct http_req *r, unsigned status, const char *code, const char *message)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");

	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddStringToObject(e, "type", error_type(status));
	free(r->resp_body);
	r->resp_body = json_print(o);
	r->resp_len = strlen(r->resp_body);
	r->status = status;
	cJSON_Delete(o);
}
