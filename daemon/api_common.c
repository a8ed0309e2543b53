/*
 * api_common: shared answers of the API handlers.
 */
#include "api_common.h"

#include "http.h"
#include "store.h"

void
api_store_error(struct http_req *r, const struct store_reader *rd, const char *cause)
{
	if (store_reader_was_cut(rd)) {
		http_req_add_header(r, "Retry-After", "1");
		http_respond_error(r, 503, "storage_slow", "reading took too long; try again");
		return;
	}
	http_respond_error(r, 500, "store_error", "%s", cause ? cause : "query failed");
}
