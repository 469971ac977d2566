/* SPDX-License-Identifier: MIT */
/*
 * Host CPU and memory use from <procfs_root>/proc/stat and <procfs_root>/proc/meminfo:
 *   wattage_cpu_utilization_ratio{cpu="all"|"N"}   (0..1, from the second poll on)
 *   wattage_memory_total_bytes, wattage_memory_used_bytes, wattage_memory_used_ratio
 * Parsers are exposed for tests; every line is read into a bounded buffer and a malformed one is
 * an error naming file and line.
 */
#ifndef WT_PROCFS_H
#define WT_PROCFS_H

#include <stddef.h>
#include <stdint.h>

#include "core/source.h"

extern const struct wt_collector_ops wt_procfs_collector;

/* Longest /proc/stat or /proc/meminfo line we parse; longer cpu lines are errors. */
#define WT_PROCFS_LINE_LEN 4096
/* At most this many cpuN lines are followed. */
#define WT_PROCFS_MAX_CPUS 16384

/* One cpu line of /proc/stat, in USER_HZ ticks. */
struct wt_cpu_times {
    int cpu;        /* -1 for the aggregate "cpu" line, else N of "cpuN" */
    uint64_t total; /* user+nice+system+idle+iowait+irq+softirq+steal (guest is inside user) */
    uint64_t idle;  /* idle + iowait */
};

/*
 * Parses one /proc/stat line. Returns 0 with *out filled for "cpu …" and "cpuN …" lines, 1 for
 * any other line, -EINVAL for a cpu line that is not followed by at least 4 numbers.
 */
int wt_procfs_parse_cpu_line(const char *line, struct wt_cpu_times *out) WT_MUST_USE;

/*
 * Busy share between two samples of the same cpu: (Δtotal − Δidle) / Δtotal, where idle
 * includes iowait. Returns 0 with *ratio in 0..1; -ERANGE when a counter went backwards (CPU
 * hotplug, iowait's known decreases); -EAGAIN when no tick passed. Both mean: skip this delta.
 */
int wt_procfs_cpu_util(const struct wt_cpu_times *prev, const struct wt_cpu_times *cur,
                       double *ratio) WT_MUST_USE;

/*
 * Reads every cpu line of a /proc/stat file into *arr (grown with realloc; caller frees; *cap
 * its capacity), *n entries. Returns 0; -ENOENT/-EACCES… when the file cannot be opened;
 * -EINVAL with err "PATH:LINE: …" for a malformed line or a file without the aggregate line.
 */
int wt_procfs_read_stat(const char *path, struct wt_cpu_times **arr, size_t *cap, size_t *n,
                        struct wt_err *err) WT_MUST_USE;

struct wt_meminfo {
    uint64_t total_b;     /* MemTotal */
    uint64_t available_b; /* MemAvailable, or MemFree+Buffers+Cached on kernels before 3.14 */
};

/*
 * Reads a /proc/meminfo file. Returns 0; -ENOENT/-EACCES… when it cannot be opened; -EINVAL with
 * err "PATH:LINE: …" for a malformed line, or "PATH: …" when MemTotal is missing.
 */
int wt_procfs_read_meminfo(const char *path, struct wt_meminfo *m, struct wt_err *err) WT_MUST_USE;

/* ---- per process: <procfs_root>/proc/PID/stat, for attribution (collect/attrib.h) ---- */

/* What attribution needs of one process. */
struct wt_pid_stat {
    uint64_t utime, stime; /* CPU time in user and kernel mode, USER_HZ ticks (fields 14, 15) */
    uint64_t start;        /* start time after boot, USER_HZ ticks (field 22): with the pid, the
                            * process's identity (a reused pid has another start time) */
};

/*
 * Parses the text of a /proc/PID/stat file. The command (field 2) is in parentheses and may hold
 * spaces and parentheses itself: fields are counted after its last ')'. Returns 0, or -EINVAL
 * for a text that is not a stat line (no ')' or fewer than 22 fields).
 */
int wt_procfs_parse_pid_stat(const char *text, struct wt_pid_stat *out) WT_MUST_USE;

/*
 * Reads and parses <procfs_root>/proc/PID/stat. Returns 0; -ENOENT or -ESRCH when the process
 * is gone; another -errno when it cannot be read; -EINVAL when malformed.
 */
int wt_procfs_pid_stat(int pid, struct wt_pid_stat *out) WT_MUST_USE;

/*
 * Calls fn(ctx, pid) for every numeric entry of <procfs_root>/proc (every process). Returns 0 or
 * -errno when the directory cannot be opened.
 */
int wt_procfs_each_pid(void (*fn)(void *ctx, int pid), void *ctx) WT_MUST_USE;

#endif
