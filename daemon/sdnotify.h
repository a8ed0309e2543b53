#pragma once
/*
 * sdnotify: the service manager's notify protocol (sd_notify(3)), written
 * here rather than linked: one datagram "KEY=VALUE\n..." to the AF_UNIX
 * socket named by $NOTIFY_SOCKET (a leading '@' is the abstract
 * namespace). Without $NOTIFY_SOCKET every call is a no-op. Any thread.
 */
#include <stdint.h>

/* Send state ("READY=1\nSTATUS=..."). 1 sent, 0 no socket configured, -errno. */
int sdnotify_send(const char *state);
/* RELOADING=1 with MONOTONIC_USEC (as Type=notify-reload wants); then READY=1 when done. */
int sdnotify_reloading(void);
/*
 * The watchdog interval asked of this process ($WATCHDOG_USEC, when
 * $WATCHDOG_PID is absent or ours), in ms; 0 when there is none.
 */
int64_t sdnotify_watchdog_ms(void);
