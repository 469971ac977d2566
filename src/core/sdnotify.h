/* SPDX-License-Identifier: MIT */
/*
 * The systemd notification protocol (sd_notify(3)), without libsystemd: one datagram of
 * "KEY=VALUE\n..." to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract name
 * written with a leading '@'). Outside systemd (no NOTIFY_SOCKET) every call does nothing.
 */
#ifndef WT_SDNOTIFY_H
#define WT_SDNOTIFY_H

#include <stdint.h>

/*
 * Sends state ("READY=1", "STATUS=...", "WATCHDOG=1", "RELOADING=1", "STOPPING=1"; several may be
 * joined with '\n') to $NOTIFY_SOCKET. Returns 1 when sent, 0 when there is no socket to send to,
 * or a negative errno (-EINVAL for a malformed NOTIFY_SOCKET, or the failed socket call's). A
 * failure is the caller's to log; it never stops the daemon.
 */
int wt_sdnotify(const char *state);

/*
 * The watchdog ping period: half of $WATCHDOG_USEC in nanoseconds, or 0 when systemd asked for no
 * watchdog (unset, unparsable, zero, or $WATCHDOG_PID naming another process).
 */
int64_t wt_sdnotify_watchdog_ns(void);

#endif
