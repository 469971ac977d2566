/* SPDX-License-Identifier: MIT */
/*
 * Kept-open readers for the small sysfs and procfs files the file collectors read every tick
 * (hwmon, RAPL, netdev, /proc/stat, /proc/meminfo): the descriptor is opened once and each read
 * is a pread at offset 0, which makes sysfs and procfs produce the attribute afresh. One system
 * call a read instead of four (open, read, read to the end, close), and no path lookup.
 *
 * A file that goes away is reopened by its path: sysfs answers a read of a removed attribute
 * (a hwmon chip or RAPL zone unloaded, a netdev gone) with ENODEV, NFS-like roots with ESTALE;
 * on ENODEV, ESTALE, EIO or ENOENT from a descriptor opened earlier the reader closes it, opens
 * the path again and reads once more. On any other file system (a captured or fake tree, a
 * tmpfs) a file replaced, moved or removed leaves the old descriptor reading the old inode and
 * no error, so there each read first checks that the path still names the descriptor's inode
 * (stat: one path lookup, as open did) and reopens when it does not.
 *
 * Descriptors kept open are bounded process-wide by WT_FILESRC_MAX_KEPT: beyond it a reader
 * opens, reads and closes each time as before, so a host with thousands of sensors does not
 * eat the daemon's descriptor limit. Per-process /proc/PID files are not read through this:
 * they go away with the process.
 *
 * A struct wt_filesrc is owned by one thread at a time; the zeroed struct is a closed reader
 * with no path.
 */
#ifndef WT_FILESRC_H
#define WT_FILESRC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/err.h"

/* Most descriptors kept open by all readers of the process together. */
#define WT_FILESRC_MAX_KEPT 256

struct wt_filesrc {
    char *path; /* owned; NULL before wt_filesrc_init */
    int fd;     /* valid while open */
    bool open;
    bool kept;  /* open between reads, counted against WT_FILESRC_MAX_KEPT */
    bool check; /* not sysfs/procfs: each read checks the path still names dev/ino */
    dev_t dev;
    ino_t ino;
};

/*
 * Benchmarks only (bench/hwmon_walk): readers opened after wt_filesrc_bench_as_sysfs(true) read
 * their files as sysfs's, one pread a read with no inode check, so that a generated tree that
 * is never replaced costs what sysfs would. Call before opening readers, from one thread.
 */
void wt_filesrc_bench_as_sysfs(bool on);

/* Sets the path (copied) of a zeroed or closed reader; opens nothing. 0 or -ENOMEM. */
int wt_filesrc_init(struct wt_filesrc *f, const char *path) WT_MUST_USE;

/* Closes the descriptor if open; the path stays, so the next read opens it again. */
void wt_filesrc_drop(struct wt_filesrc *f);

/* Closes the descriptor and frees the path; the struct is zeroed. Accepts a zeroed one. */
void wt_filesrc_close(struct wt_filesrc *f);

/*
 * Reads the whole file into buf (size n >= 1), NUL-terminated, trailing whitespace and newlines
 * removed. Returns the length, -E2BIG when the file does not fit, or a negative errno from
 * open or read (-ENOENT when the path names nothing now).
 */
int wt_filesrc_read(struct wt_filesrc *f, char *buf, size_t n) WT_MUST_USE;

/*
 * Reads the whole file, of any length, into *buf (grown with realloc; caller frees; *cap its
 * capacity), NUL-terminated, *len bytes without the NUL. Returns 0 or a negative errno.
 */
int wt_filesrc_read_all(struct wt_filesrc *f, char **buf, size_t *cap, size_t *len) WT_MUST_USE;

/* Descriptors the readers of this process keep open now (for tests and the benchmarks). */
size_t wt_filesrc_kept(void);

/*
 * The next line of text[0..len) from *pos into line (size n), without its newline; *pos moves
 * past it. Returns 1 for a line, 0 at the end, -E2BIG for a line longer than n - 1 (its start
 * is in line, *pos is past the whole line).
 */
int wt_filesrc_line(const char *text, size_t len, size_t *pos, char *line, size_t n);

#endif
