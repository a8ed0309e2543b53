/*
 * addrfile: where a running fuseboxd can be reached, for the console.
 *
 * One line, "http://HOST:PORT PID\n", in fuseboxd.addr beside the
 * database (the directory the daemon already owns), written once the
 * socket is bound (a port-0 listen names its real port) and before
 * READY=1, atomically (a temp file in the same directory, then rename), and
 * removed at a clean exit while it still names this process. A wildcard
 * listen is written as its loopback address; IPv6 hosts in brackets.
 */
#include "addrfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

char *
addrfile_path(const char *database)
{
	const char *slash;

	if (database == NULL || database[0] == '\0' || strcmp(database, ":memory:") == 0)
		return NULL;
	slash = strrchr(database, '/');
	if (slash == NULL)
		return xstrdup(ADDRFILE_NAME);
	return xasprintf("%.*s/" ADDRFILE_NAME, (int)(slash - database), database);
}

int
addrfile_line(const char *host, int port, long pid, char *out, size_t n)
{
	const char *h = host;
	int v6, w;

	if (strcmp(host, "0.0.0.0") == 0 || host[0] == '\0')
		h = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		h = "::1";
	v6 = strchr(h, ':') != NULL && h[0] != '[';
	w = snprintf(out, n, "http://%s%s%s:%d %ld\n", v6 ? "[" : "", h, v6 ? "]" : "", port, pid);
	return w > 0 && (size_t)w < n ? 0 : -ENAMETOOLONG;
}

int
addrfile_write(const char *path, const char *host, int port, char **cause)
{
	char line[320], *tmp;
	int fd, r = 0;
	size_t len;

	if (addrfile_line(host, port, (long)getpid(), line, sizeof line) != 0) {
		*cause = xasprintf("listen address too long for %s", path);
		return -ENAMETOOLONG;
	}
	len = strlen(line);
	tmp = xasprintf("%s.%ld.tmp", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		*cause = xasprintf("cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (fchmod(fd, 0644) != 0 || write(fd, line, len) != (ssize_t)len) {
		r = errno ? -errno : -EIO;
		*cause = xasprintf("cannot write %s: %s", tmp, strerror(-r));
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, path) != 0) {
		r = -errno;
		*cause = xasprintf("cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
	}
out:
	free(tmp);
	return r;
}

void
addrfile_remove(const char *path)
{
	char buf[320], want[32];
	FILE *f;
	size_t n;
	const char *sp;

	if (path == NULL || (f = fopen(path, "re")) == NULL)
		return;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	snprintf(want, sizeof want, " %ld\n", (long)getpid());
	/* only our own: a daemon started since on the same database keeps its file */
	sp = strrchr(buf, ' ');
	if (sp != NULL && strcmp(sp, want) == 0)
		unlink(path);
}
