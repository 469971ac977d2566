/* SPDX-License-Identifier: MIT */
/*
 * Secret files (see secret.h): the mode rule, and the stat-then-check that precedes every read of
 * one.
 */
#include "core/secret.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int wt_check_secret_mode(const char *what, const char *path, mode_t mode, struct wt_err *err)
{
    if ((mode & (S_IRWXG | S_IRWXO)) == 0)
        return 0;
    wt_err_set(err,
               "%s: %s is accessible by group or others (mode %04o); it holds a secret: "
               "chmod 600 %s",
               what, path, (unsigned)(mode & 07777), path);
    return -EPERM;
}

int wt_check_secret_file(const char *what, const char *path, struct wt_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        wt_err_set(err, "%s %s: %s", what, path, strerror(e));
        return -e;
    }
    return wt_check_secret_mode(what, path, sb.st_mode, err);
}
