#pragma once
/*
 * client: HTTP to fuseboxd's control API with libcurl — the CLI's blocking
 * requests, the per-transfer set-up that fetch.c drives on a curl multi,
 * the daemon's error bodies turned into one line, and where the bearer
 * token comes from. A struct client is read-only once set up, so any
 * thread may use it; the token never appears in a message.
 */
#include <curl/curl.h>

#include "util.h"

#define CLIENT_BODY_MAX	    (16 * 1024 * 1024) /* ceiling of an answer body */
#define CLIENT_DEFAULT_URL  "http://127.0.0.1:7700"
#define CLIENT_ROLE_UNKNOWN (-1)
/* Where fuseboxd says where it listens (the daemon's side: docs/CONSOLE.md). */
#define CLIENT_ADDR_FILE_DEFAULT "/var/lib/fusebox/fuseboxd.addr"

enum client_e {
	CLIENT_E_TRANSPORT = 1, /* no HTTP answer: refused, timed out, too big */
};

struct client {
	char base[512]; /* "http://host:port", no trailing slash */
	char *token;	/* owned secret, NULL: no Authorization header */
	int role; /* enum role (tokens.h) when the token file said, else CLIENT_ROLE_UNKNOWN */
	char addr_file[512]; /* the address file ("" none): see client_discover() */
};

/* One transfer's resources (fetch.c keeps several on a multi handle). */
struct client_xfer {
	CURL *h;
	struct curl_slist *hdrs;
	struct buf body; /* the answer body, bounded by CLIENT_BODY_MAX */
	char *req_body;	 /* copy of the request body */
	char errbuf[CURL_ERROR_SIZE];
};

struct client_resp {
	long status; /* HTTP status */
	char *body;  /* NUL-terminated, never NULL after success */
	size_t len;
	char *headers; /* the final answer's header lines ("Name: value\r\n"...), or NULL */
};

#define CLIENT_HEADERS_MAX (64 * 1024)

/*
 * url: NULL takes $FUSEBOX_URL, else CLIENT_DEFAULT_URL. token is copied
 * (may be NULL). 0, or -EINVAL with *cause for a URL that is not http(s)
 * or too long.
 */
int client_init(struct client *c, const char *url, const char *token, int role, char **cause);
void client_free(struct client *c);

/*
 * Read an address file: the daemon's URL is the first field of the first
 * line that is neither blank nor a '#' comment ("http://127.0.0.1:7701
 * 4242": the URL, then what else the daemon wrote, ignored); a trailing
 * '/' is dropped. 0, -errno, or -EINVAL (no http(s) URL) with *cause.
 */
int client_addr_read(const char *path, char *url, size_t urlsz, char **cause);
/*
 * Where the daemon says it listens: the address file is flag_file
 * (--addr-file), else $FUSEBOX_ADDR_FILE, else — only when no URL was given
 * (url_given 0: no --url, no $FUSEBOX_URL) — CLIENT_ADDR_FILE_DEFAULT.
 * Without a URL given, a readable file's URL replaces the default one.
 * The console reads the file again while the daemon does not answer
 * (fetch.h). A missing file changes nothing.
 */
void client_discover(struct client *c, const char *flag_file, int url_given);

/*
 * Set up x->h (a new easy handle) for method base+path with an optional
 * JSON body and a total timeout (connect included). Free with
 * client_xfer_cleanup() after the transfer, whatever its outcome.
 */
void client_xfer_setup(const struct client *c, struct client_xfer *x, const char *method,
		       const char *path, const char *body, long timeout_ms);
/* Human text for a transfer that ended with code (caller frees). */
char *client_xfer_error(const struct client *c, struct client_xfer *x, CURLcode code,
			long timeout_ms);
void client_xfer_cleanup(struct client_xfer *x);

/*
 * Blocking request. 0 when an HTTP answer arrived (any status; *out owns
 * the body and the answer's headers), CLIENT_E_TRANSPORT with *cause when
 * none did.
 */
int client_do(const struct client *c, const char *method, const char *path, const char *body,
	      long timeout_ms, struct client_resp *out, char **cause);
void client_resp_free(struct client_resp *r);

/*
 * One line for a non-2xx answer: "403 forbidden: <message>" from the
 * daemon's {"error": {"code", "message"}}, else "HTTP 502: <start of
 * body>". Pure; caller frees.
 */
char *client_error_text(long status, const char *body, size_t len);

/* A path segment percent-encoded (caller frees). */
char *client_escape(const char *seg);

/*
 * Read a token file: the token is the first field of the first line that
 * is neither blank nor a '#' comment; a second field naming a role
 * (caller|viewer|operator, as in the daemon's tokens file) sets *role,
 * else CLIENT_ROLE_UNKNOWN. 0, -errno, or -EINVAL (no token) with *cause.
 */
int client_token_read(const char *path, char **token, int *role, char **cause);

/*
 * Where the token comes from, first found wins: --token-file (flag_file;
 * an error when unreadable), $FUSEBOX_TOKEN, $FUSEBOX_TOKEN_FILE, then the
 * daemon's tokens file when readable ($FUSEBOX_TOKENS_FILE,
 * /etc/fusebox/tokens, /var/lib/fusebox/tokens). No token at all is fine
 * (*token NULL): the daemon answers 401 where one is needed. *source says
 * where it came from (static string).
 */
int client_token_resolve(const char *flag_file, char **token, int *role, const char **source,
			 char **cause);
