/* SPDX-License-Identifier: MIT */
/*
 * Logging: one line per event to stderr, RFC 3339 UTC time, level, module, message. Lines are
 * written with a single write() so threads do not interleave.
 */
#include "core/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"

static enum wt_log_level min_level = WT_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

void wt_log_set_level(enum wt_log_level level)
{
    min_level = level;
}

enum wt_log_level wt_log_get_level(void)
{
    return min_level;
}

int wt_log_parse_level(const char *s, enum wt_log_level *out)
{
    for (int i = 0; i <= WT_LOG_ERROR; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (enum wt_log_level)i;
            return 0;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = WT_LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

void wt_log(enum wt_log_level level, const char *module, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char line[2048];
    char ts[40];
    wt_time_format(wt_now_real_ns(), 1, ts, sizeof ts);
    int n = snprintf(line, sizeof line, "%s %-5s %s: ", ts, names[level], module);
    if (n < 0 || (size_t)n >= sizeof line)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m > 0 ? (size_t)m : 0);
    if (len >= sizeof line - 1)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

bool wt_ratelimit_ok(struct wt_ratelimit *rl, int64_t now_ns, uint64_t *suppressed)
{
    if (rl->last_ns == 0 || now_ns - rl->last_ns >= rl->interval_ns) {
        if (suppressed)
            *suppressed = rl->suppressed;
        rl->suppressed = 0;
        rl->last_ns = now_ns ? now_ns : 1;
        return true;
    }
    rl->suppressed++;
    return false;
}
