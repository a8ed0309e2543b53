/*
 * sdnotify: the notify protocol (see sdnotify.h). A fresh socket per
 * message: a handful are sent (start, reloads, a watchdog ping a second),
 * and nothing stays open for a fork or a restarted manager to trip on.
 */
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int
sdnotify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t salen;
	size_t n;
	ssize_t w;
	int fd, err;

	if (path == NULL || path[0] == '\0')
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path)
		return -EINVAL;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	w = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	err = errno;
	close(fd);
	return w < 0 ? -err : 1;
}

int
sdnotify_reloading(void)
{
	struct timespec ts;
	char msg[96];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ULL +
			 (unsigned long long)ts.tv_nsec / 1000ULL);
	return sdnotify_send(msg);
}

int64_t
sdnotify_watchdog_ms(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	int64_t v, p;

	if (usec == NULL || parse_int64(usec, &v) != 0 || v <= 0)
		return 0;
	if (pid != NULL && (parse_int64(pid, &p) != 0 || p != (int64_t)getpid()))
		return 0;
	return v / 1000 > 0 ? v / 1000 : 1;
}
