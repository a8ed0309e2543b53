#pragma once
/*
 * api_common: what the api_*.c handlers share beyond http.h. Engine
 * thread.
 */
struct http_req;
struct store_reader;

/*
 * Answer a failed read on rd: 503 storage_slow with Retry-After when the
 * reader's deadline cut it (the loop must not wait on a slow disk), else
 * 500 store_error with cause (borrowed; NULL: "query failed").
 */
void api_store_error(struct http_req *r, const struct store_reader *rd, const char *cause);
