/* SPDX-License-Identifier: MIT */
/*
 * Secret files (TLS keys, bearer tokens, passwords): the one rule for their mode, applied by every
 * module that reads one and by `wattage check-config`, so that the two cannot disagree.
 */
#ifndef WT_SECRET_H
#define WT_SECRET_H

#include <sys/types.h>

#include "core/err.h"

/*
 * Refuses a secret file whose mode lets group or others in: returns -EPERM with err
 * "<what>: <path> is accessible by group or others (mode 0644); it holds a secret: chmod 600
 * <path>", else 0.
 */
int wt_check_secret_mode(const char *what, const char *path, mode_t mode,
                         struct wt_err *err) WT_MUST_USE;

/*
 * The check before a secret file is read: stat(path), then wt_check_secret_mode. Returns 0;
 * -errno with err "<what> <path>: <strerror>" when it cannot be stat'ed; -EPERM as above.
 */
int wt_check_secret_file(const char *what, const char *path, struct wt_err *err) WT_MUST_USE;

#endif
