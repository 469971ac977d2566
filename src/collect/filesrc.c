/* SPDX-License-Identifier: MIT */
/* Kept-open pread readers for sysfs and procfs files; see filesrc.h. */
#include "collect/filesrc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

static size_t kept_now; /* __atomic: readers of several collector threads share the budget */
static bool as_sysfs;   /* wt_filesrc_bench_as_sysfs: a benchmark's tree read as sysfs is */

void wt_filesrc_bench_as_sysfs(bool on)
{
    as_sysfs = on;
}

size_t wt_filesrc_kept(void)
{
    return __atomic_load_n(&kept_now, __ATOMIC_RELAXED);
}

int wt_filesrc_init(struct wt_filesrc *f, const char *path)
{
    wt_filesrc_close(f);
    f->path = strdup(path);
    return f->path ? 0 : -ENOMEM;
}

void wt_filesrc_drop(struct wt_filesrc *f)
{
    if (!f->open)
        return;
    close(f->fd);
    if (f->kept)
        __atomic_fetch_sub(&kept_now, 1, __ATOMIC_RELAXED);
    f->open = false;
    f->kept = false;
    f->fd = -1;
}

void wt_filesrc_close(struct wt_filesrc *f)
{
    wt_filesrc_drop(f);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* Opens the path; keeps the descriptor when the budget allows. */
static int reopen(struct wt_filesrc *f)
{
    if (!f->path)
        return -EINVAL;
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    f->fd = fd;
    f->open = true;
    f->kept = false;
    f->check = true;
    if (__atomic_add_fetch(&kept_now, 1, __ATOMIC_RELAXED) <= WT_FILESRC_MAX_KEPT) {
        f->kept = true;
        /* sysfs and procfs say a removed file with an error; elsewhere the link count does */
        struct statfs sf;
        struct stat st;
        if (as_sysfs || (fstatfs(fd, &sf) == 0 && ((unsigned long)sf.f_type == SYSFS_MAGIC ||
                                                   (unsigned long)sf.f_type == PROC_SUPER_MAGIC)))
            f->check = false;
        else if (fstat(fd, &st) == 0)
            f->dev = st.st_dev, f->ino = st.st_ino;
    } else {
        __atomic_fetch_sub(&kept_now, 1, __ATOMIC_RELAXED);
    }
    return 0;
}

/* Errors after which a descriptor opened earlier is worth reopening by its path. */
static bool gone(int e)
{
    return e == ENODEV || e == ESTALE || e == EIO || e == ENOENT;
}

/*
 * Makes f readable: opens it when closed, reopens it when the path no longer names the file a
 * kept descriptor reads (only checked off sysfs/procfs). *fresh says whether it was opened just
 * now.
 */
static int ready(struct wt_filesrc *f, bool *fresh)
{
    *fresh = false;
    if (f->open && f->kept && f->check) {
        /* The inode of an open file is not reused: the same number is the same file. */
        struct stat st;
        if (stat(f->path, &st) != 0 || st.st_ino != f->ino || st.st_dev != f->dev)
            wt_filesrc_drop(f);
    }
    if (f->open)
        return 0;
    *fresh = true;
    return reopen(f);
}

/* After a read: a descriptor over the budget is not kept. */
static void done(struct wt_filesrc *f)
{
    if (f->open && !f->kept)
        wt_filesrc_drop(f);
}

/* pread from offset 0 into buf[0..n): bytes read, or -errno. Stops at a short read (the end). */
static ssize_t pread_all(int fd, char *buf, size_t n)
{
    size_t len = 0;
    while (len < n) {
        size_t want = n - len;
        ssize_t k = pread(fd, buf + len, want, (off_t)len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        len += (size_t)k;
        if ((size_t)k < want)
            break;
    }
    return (ssize_t)len;
}

int wt_filesrc_read(struct wt_filesrc *f, char *buf, size_t n)
{
    if (n == 0)
        return -E2BIG;
    for (int attempt = 0;; attempt++) {
        bool fresh;
        int rc = ready(f, &fresh);
        if (rc < 0)
            return rc;
        ssize_t k = pread_all(f->fd, buf, n - 1);
        if (k >= 0 && (size_t)k == n - 1) {
            /* Full: one more byte tells whether the file is longer than the buffer. */
            char extra;
            ssize_t x = pread(f->fd, &extra, 1, (off_t)k);
            if (x > 0)
                k = -E2BIG;
            else if (x < 0)
                k = -errno;
        }
        if (k < 0 && k != -E2BIG && !fresh && attempt == 0 && gone((int)-k)) {
            wt_filesrc_drop(f); /* removed and maybe back: once more by the path */
            continue;
        }
        done(f);
        if (k < 0)
            return (int)k;
        size_t len = (size_t)k;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
            len--;
        buf[len] = '\0';
        return (int)len;
    }
}

int wt_filesrc_read_all(struct wt_filesrc *f, char **buf, size_t *cap, size_t *len)
{
    for (int attempt = 0;; attempt++) {
        bool fresh;
        int rc = ready(f, &fresh);
        if (rc < 0)
            return rc;
        size_t got = 0;
        for (;;) {
            if (*cap < got + 2) {
                size_t nc = *cap ? *cap * 2 : 4096;
                char *nb = realloc(*buf, nc);
                if (!nb) {
                    done(f);
                    return -ENOMEM;
                }
                *buf = nb;
                *cap = nc;
            }
            size_t want = *cap - 1 - got;
            ssize_t k = pread(f->fd, *buf + got, want, (off_t)got);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                rc = -errno;
                break;
            }
            got += (size_t)k;
            if (k == 0 || (size_t)k < want)
                break;
        }
        if (rc < 0 && !fresh && attempt == 0 && gone(-rc)) {
            wt_filesrc_drop(f);
            continue;
        }
        done(f);
        if (rc < 0)
            return rc;
        (*buf)[got] = '\0';
        *len = got;
        return 0;
    }
}

int wt_filesrc_line(const char *text, size_t len, size_t *pos, char *line, size_t n)
{
    if (*pos >= len)
        return 0;
    const char *start = text + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    size_t k = nl ? (size_t)(nl - start) : len - *pos;
    *pos += k + (nl ? 1 : 0);
    if (n == 0)
        return -E2BIG;
    size_t copy = k < n - 1 ? k : n - 1;
    memcpy(line, start, copy);
    line[copy] = '\0';
    return k < n ? 1 : -E2BIG;
}
