/* SPDX-License-Identifier: MIT */
/* Error messages for a person; see err.h. */
#include "core/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int wt_err_set(struct wt_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}
