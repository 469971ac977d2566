/* SPDX-License-Identifier: MIT */
/* Files replaced whole, durably; see durable.h. */
#include "core/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void wt_durable_sync_dir(const char *path)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int wt_durable_replace(const char *path, const char *data, size_t len, const char *what,
                       struct wt_err *err)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return wt_err_set(err, "%s: cannot write %s: %s", path, what, strerror(ENAMETOOLONG)),
               -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write(fd, data, len) == (ssize_t)len && write(fd, "\n", 1) == 1 &&
              fsync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok || rename(tmp, path) != 0) {
        if (ok)
            e = errno;
        unlink(tmp);
        wt_err_set(err, "%s: cannot write %s: %s", path, what, strerror(e ? e : EIO));
        return e ? -e : -EIO;
    }
    wt_durable_sync_dir(path);
    return 0;
}
