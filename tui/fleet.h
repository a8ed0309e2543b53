#pragma once
/*
 * fleet: the fleet file (`fusebox --fleet FILE`, API.md "Fleet") — one
 * daemon a line, `NAME URL [TOKEN_FILE] [GROUP]`, '#' comments — and the
 * polling schedule of each host (at most 1 Hz, exponential backoff while
 * it fails). Pure but for fleet_load() reading the file; any thread.
 */
#include <stddef.h>
#include <stdint.h>

#define FLEET_HOSTS_MAX	  256
#define FLEET_NAME_MAX	  64
#define FLEET_POLL_MS	  1000	/* a healthy host: at most once a second */
#define FLEET_BACKOFF_MAX 30000 /* a failing host: 1, 2, 4, ... 30 s */

struct fleet_host {
	char name[FLEET_NAME_MAX];
	char url[512];
	char *token_file;	    /* NULL: none ("-" in the file) */
	char group[FLEET_NAME_MAX]; /* "" when not given */
};

struct fleet {
	struct fleet_host *hosts;
	int n;
};

/*
 * Parse a fleet file's text. dir (may be NULL) is where relative token
 * file paths are taken from: the fleet file's folder. 0 with *f owned by
 * the caller, or -EINVAL with *cause naming the line ("fleet line 3:
 * ..."). A third field is the token file; "-" there gives a group without
 * one. Names are [A-Za-z0-9._-], unique; URLs http:// or https://.
 */
int fleet_parse(const char *text, size_t len, const char *dir, struct fleet *f, char **cause);
/* Read and parse path (as above; -errno when unreadable). */
int fleet_load(const char *path, struct fleet *f, char **cause);
void fleet_free(struct fleet *f);
/* The host named name, or -1. */
int fleet_find(const struct fleet *f, const char *name);
/* Hosts in group (NULL or "": every host): 1 when host i belongs. */
int fleet_in_group(const struct fleet *f, int i, const char *group);

/* One host's polling schedule. */
struct fleet_poll {
	int64_t next_at;    /* monotonic ms of the next poll; 0: now */
	int fails;	    /* consecutive failures */
	int64_t down_since; /* wall ms of the first failure in a row; 0: answering */
};

/* 1 when the host is due at now (monotonic ms). */
int fleet_poll_due(const struct fleet_poll *p, int64_t now);
/*
 * Record a poll's outcome at now (monotonic) / now_wall: the next poll in
 * FLEET_POLL_MS when it answered, else after 1 s doubled per failure in a
 * row, capped at FLEET_BACKOFF_MAX.
 */
void fleet_poll_done(struct fleet_poll *p, int ok, int64_t now, int64_t now_wall);
