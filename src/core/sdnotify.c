/* SPDX-License-Identifier: MIT */
/* sd_notify as a few lines of socket code; see sdnotify.h. */
#include "core/sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int wt_sdnotify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    /* A path or an abstract name ('@' stands for the leading NUL); nothing else is valid. */
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof sa.sun_path)
        return -EINVAL;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int ret = 1;
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
    if (n < 0)
        ret = -errno;
    close(fd);
    return ret;
}

int64_t wt_sdnotify_watchdog_ns(void)
{
    const char *usec = getenv("WATCHDOG_USEC");
    if (!usec || !*usec)
        return 0;
    const char *pid = getenv("WATCHDOG_PID");
    if (pid && *pid) {
        char *end;
        long p = strtol(pid, &end, 10);
        if (*end || p != (long)getpid())
            return 0;
    }
    char *end;
    errno = 0;
    unsigned long long us = strtoull(usec, &end, 10);
    if (errno || *end || us == 0 || us > (unsigned long long)INT64_MAX / 1000)
        return 0;
    return (int64_t)us * 1000 / 2;
}
