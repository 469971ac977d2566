/* SPDX-License-Identifier: MIT */
/* Capturing the log (stderr) of a test into its directory's file "stderr" and counting lines. */
#ifndef WT_TEST_LOGCAP_H
#define WT_TEST_LOGCAP_H

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

/* Sends stderr to the test's file "stderr" until logcap_end; returns the saved descriptor. */
static inline int logcap_begin(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/stderr", wt_test_dir());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    WT_ASSERT(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return saved;
}

static inline void logcap_end(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

/* How many captured lines contain both a and b (b may be NULL). */
static inline int logcap_count(const char *a, const char *b)
{
    char path[PATH_MAX], line[1024];
    int n = 0;
    snprintf(path, sizeof path, "%s/stderr", wt_test_dir());
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, a) && (!b || strstr(line, b));
    if (f)
        fclose(f);
    return n;
}

#endif
