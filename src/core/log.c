/* SPDX-License-Identifier: MIT */
/*
 * Logging: one line per event to stderr, RFC 3339 UTC time, level, module, message. Lines are
 * written with a single write() so threads do not interleave. When stderr is the journal (systemd
 * sets JOURNAL_STREAM to the "device:inode" of the stream it connected), each line starts with
 * its syslog priority ("<3>" error, "<4>" warning, "<6>" info, "<7>" debug), which journald
 * strips and keeps as the entry's priority.
 */
#include "core/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"

static enum wt_log_level min_level = WT_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};
static const char *const priorities[] = {"<7>", "<6>", "<4>", "<3>"};
/* -1: not looked at yet; 0: a terminal, a file or a pipe; 1: the journal. */
static volatile int to_journal = -1;

bool wt_log_detect_journal(void)
{
    bool yes = false;
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    char tail;
    struct stat st;
    if (v && sscanf(v, "%llu:%llu%c", &dev, &ino, &tail) == 2 && fstat(STDERR_FILENO, &st) == 0)
        yes = (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
    to_journal = yes;
    return yes;
}

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
    /* A race on the first line only looks twice: both threads find the same answer. */
    if (to_journal < 0)
        wt_log_detect_journal();
    int n = snprintf(line, sizeof line, "%s%s %-5s %s: ", to_journal ? priorities[level] : "", ts,
                     names[level], module);
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
