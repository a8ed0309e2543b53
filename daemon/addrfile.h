#pragma once
/*
 * addrfile: fuseboxd.addr beside the database — "http://HOST:PORT PID\n",
 * the address the daemon really listens on, so the console finds it again
 * when it comes back on another port (docs/CONSOLE.md). Main thread.
 */
#include <stddef.h>

#define ADDRFILE_NAME "fuseboxd.addr"

/* The file's path for a database path (new string); NULL for ":memory:" or none. */
char *addrfile_path(const char *database);
/* The line for host:port and pid into out (n bytes): 0 or -ENAMETOOLONG. Pure. */
int addrfile_line(const char *host, int port, long pid, char *out, size_t n);
/* Write path atomically (temp + rename, mode 0644). 0, or -errno with *cause. */
int addrfile_write(const char *path, const char *host, int port, char **cause);
/* Remove path if it still names this process (a clean exit). */
void addrfile_remove(const char *path);
