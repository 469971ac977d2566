/* SPDX-License-Identifier: MIT */
/*
 * attrib_bench: the NVML collector's CPU time per tick with 8 GPUs x 16 processes each, with
 * attribution (collectors.nvml.attribution: true: per-process utilization, /proc/PID/stat
 * start times, the ledger and its 8 x (16 + 1) + 8 readings) and without (the process lists
 * are read all the same), on the fake NVML and a fake /proc of 128 processes (stat and a
 * Slurm cgroup each). Both collectors are open at once and polled in turn once a second
 * (every tick reads the process lists then); the CPU time of each poll is the calling
 * thread's (CLOCK_THREAD_CPUTIME_ID). Prints median, min and max per side and the ratio of
 * the medians. Then the CPU side: the CPU time of one split of a RAPL interval over every
 * process (a scan of /proc/PID/stat), median of TICKS, on a fake /proc of PROCS processes (a
 * tenth of them using CPU between two ticks; a tree on a plain file system, where each kept
 * descriptor is checked with a stat) and on this host's real /proc.
 *   attrib_bench [TICKS [PROCS]]   (default 15 and 2000; WATTAGE_NVML_LIBRARY, else
 *                                   build/tests/fakes/libnvidia-ml.so.1)
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect/nvml.h"
#include "collect/procattr.h"
#include "collect/procfs.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"

#define GPUS 8
#define PER_GPU 16
#define MAX_TICKS 600

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -EIO;
}

/* The fake /proc (stat and cgroup of 128 processes) and the fake NVML's process file. */
static int make_tree(const char *dir)
{
    char path[PATH_MAX], text[512];
    snprintf(path, sizeof path, "%s/proc", dir);
    if (mkdir(path, 0755) != 0)
        return -errno;
    snprintf(path, sizeof path, "%s/procs", dir);
    FILE *procs = fopen(path, "w");
    if (!procs)
        return -errno;
    for (int g = 0; g < GPUS; g++) {
        for (int k = 0; k < PER_GPU; k++) {
            int pid = 10000 + g * PER_GPU + k;
            fprintf(procs, "%d %d sm=%d mem=%d\n", g, pid, 2 + k * 3, 512 + 64 * k);
            snprintf(path, sizeof path, "%s/proc/%d", dir, pid);
            if (mkdir(path, 0755) != 0)
                return -errno;
            snprintf(path, sizeof path, "%s/proc/%d/stat", dir, pid);
            snprintf(text, sizeof text,
                     "%d (python3) R 1 %d %d 0 -1 4194560 1000 0 0 0 %d 20 0 0 20 0 8 0 %d "
                     "1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n",
                     pid, pid, pid, 100 + k, 5000 + pid);
            if (write_file(path, text) != 0)
                return -EIO;
            snprintf(path, sizeof path, "%s/proc/%d/cgroup", dir, pid);
            snprintf(text, sizeof text,
                     "0::/system.slice/slurmstepd.scope/job_%d/step_0/user/task_%d\n", 100 + g, k);
            if (write_file(path, text) != 0)
                return -EIO;
        }
    }
    return fclose(procs) == 0 ? 0 : -EIO;
}

/* The CPU side's fake /proc: nproc processes' stat (tick t's CPU times) and /proc/stat. */
static int cpu_tree(const char *dir, int nproc, int t)
{
    char path[PATH_MAX];
    for (int i = 0; i < nproc; i++) {
        int pid = 20000 + i;
        if (t > 0 && i % 10 != t % 10)
            continue; /* a tenth of them ran since the last tick */
        snprintf(path, sizeof path, "%s/proc/%d", dir, pid);
        if (t == 0 && mkdir(path, 0755) != 0)
            return -errno;
        snprintf(path, sizeof path, "%s/proc/%d/stat", dir, pid);
        FILE *f = fopen(path, "w");
        if (!f)
            return -errno;
        fprintf(f,
                "%d (worker %d) S 1 %d %d 0 -1 4194560 1000 0 0 0 %d %d 20 0 1 0 %d 1000000 100 "
                "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n",
                pid, i, pid, pid, 100 + 7 * t + i % 13, 20 + t, 5000 + i);
        if (fclose(f) != 0)
            return -EIO;
    }
    snprintf(path, sizeof path, "%s/proc/stat", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fprintf(f, "cpu  %d 0 %d %d 0 0 0 0 0 0\n", 100000 + 5000 * t, 20000 + 800 * t,
            900000 + 2000 * t);
    return fclose(f) == 0 ? 0 : -EIO;
}

/* Splits ticks + 1 RAPL intervals (the first a baseline); the CPU time of each split in us[]. */
static int cpu_splits(int ticks, double *us, size_t *series, const char *tree, int nproc)
{
    struct wt_cpu_attrib *c = NULL;
    struct wt_err err = {{0}};
    struct wt_batch in = {0}, b = {0};
    if (wt_cpu_attrib_open(NULL, 300 * WT_NS_PER_S, &c, &err) != 0) {
        fprintf(stderr, "attrib_bench: %s\n", err.msg);
        return -1;
    }
    int rc = 0;
    for (int t = -1; t < ticks && rc == 0; t++) {
        if (tree && cpu_tree(tree, nproc, t + 1) != 0) {
            fprintf(stderr, "attrib_bench: cannot write the fake /proc in %s\n", tree);
            rc = -1;
            break;
        }
        wt_batch_clear(&in);
        wt_batch_clear(&b);
        if (wt_batch_add(&in, WT_M_CPU_ENERGY_J, "package=\"0\",domain=\"package\"",
                         wt_now_real_ns(), 1000.0 + 50.0 * (t + 1)) != 0) {
            rc = -1;
            break;
        }
        double c0 = thread_cpu_us();
        int k = wt_cpu_attrib_feed(c, "rapl", &in, &b);
        double c1 = thread_cpu_us();
        if (k < 0) {
            fprintf(stderr, "attrib_bench: cpu split failed (%d)\n", k);
            rc = -1;
        }
        if (t >= 0) {
            us[t] = c1 - c0;
            *series = b.len;
        }
        struct timespec tenth = {0, 100000000};
        nanosleep(&tenth, NULL);
    }
    wt_cpu_attrib_close(c);
    wt_batch_free(&in);
    wt_batch_free(&b);
    return rc;
}

static void count_one(void *ctx, int pid)
{
    (void)pid;
    (*(int *)ctx)++;
}

static void report(const char *name, double *us, int n)
{
    qsort(us, (size_t)n, sizeof *us, cmp_d);
    printf("%-34s median %9.1f us  min %9.1f  max %9.1f\n", name, us[n / 2], us[0], us[n - 1]);
}

int main(int argc, char **argv)
{
    int ticks = argc > 1 ? atoi(argv[1]) : 15;
    if (ticks < 3 || ticks > MAX_TICKS)
        ticks = 15;
    int nproc = argc > 2 ? atoi(argv[2]) : 2000;
    if (nproc < 1 || nproc > 40000)
        nproc = 2000;
    char dir[] = "/tmp/wt-attrib-bench-XXXXXX", path[PATH_MAX];
    if (!mkdtemp(dir) || make_tree(dir) != 0) {
        fprintf(stderr, "attrib_bench: cannot build the fake tree in %s\n", dir);
        return 1;
    }
    if (!getenv("WATTAGE_NVML_LIBRARY")) {
        char lib[PATH_MAX];
        if (!realpath("build/tests/fakes/libnvidia-ml.so.1", lib)) {
            fprintf(stderr, "attrib_bench: set WATTAGE_NVML_LIBRARY (no build/tests/fakes)\n");
            return 1;
        }
        setenv("WATTAGE_NVML_LIBRARY", lib, 1);
    }
    snprintf(path, sizeof path, "%s/procs", dir);
    setenv("FAKE_NVML_PROCS_FILE", path, 1);
    setenv("FAKE_NVML_GPUS", "8", 1);
    setenv("WATTAGE_PROCFS_ROOT", dir, 1);
    wt_log_set_level(WT_LOG_WARN);

    static struct wt_config cfg[2];
    void *st[2] = {NULL, NULL};
    for (int m = 0; m < 2; m++) {
        struct wt_err err = {{0}};
        wt_config_defaults(&cfg[m]);
        cfg[m].collectors.nvml_attribution = m == 1;
        if (wt_nvml_collector.open(&cfg[m], &st[m], &err) != 0) {
            fprintf(stderr, "attrib_bench: open: %s\n", err.msg);
            return 1;
        }
    }
    static double us[2][MAX_TICKS];
    struct wt_batch b = {0};
    size_t readings[2] = {0, 0};
    for (int t = -2; t < ticks; t++) { /* two warm-up ticks */
        for (int m = 0; m < 2; m++) {
            struct wt_err err = {{0}};
            wt_batch_clear(&b);
            double c0 = thread_cpu_us();
            int rc = wt_nvml_collector.poll(st[m], wt_now_real_ns(), &b, &err);
            double c1 = thread_cpu_us();
            if (rc != 0) {
                fprintf(stderr, "attrib_bench: poll: %s\n", err.msg);
                return 1;
            }
            if (t >= 0) {
                us[m][t] = c1 - c0;
                readings[m] = b.len;
            }
        }
        struct timespec one = {1, 0};
        nanosleep(&one, NULL);
    }
    printf("attrib_bench: %d GPUs x %d processes, %d ticks a second apart\n", GPUS, PER_GPU, ticks);
    double med[2];
    for (int m = 0; m < 2; m++) {
        report(m ? "with attribution" : "without attribution", us[m], ticks);
        med[m] = us[m][ticks / 2];
        printf("%-34s %zu readings per tick\n", "", readings[m]);
    }
    printf("ratio (with / without, medians)   %.3f\n", med[1] / med[0]);
    for (int m = 0; m < 2; m++)
        wt_nvml_collector.close(st[m]);

    /* The CPU side: every process of a fake /proc, then of this host; a split per RAPL batch. */
    static double cu[MAX_TICKS];
    size_t series = 0;
    char tree[] = "/tmp/wt-attrib-bench-cpu-XXXXXX";
    if (!mkdtemp(tree))
        return 1;
    snprintf(path, sizeof path, "%s/proc", tree);
    if (mkdir(path, 0755) != 0)
        return 1;
    setenv("WATTAGE_PROCFS_ROOT", tree, 1);
    if (cpu_splits(ticks, cu, &series, tree, nproc) != 0)
        return 1;
    report("cpu split over a fake /proc", cu, ticks);
    printf("%-34s %d processes (%d using CPU a tick), %zu series\n", "", nproc, (nproc + 9) / 10,
           series);
    unsetenv("WATTAGE_PROCFS_ROOT");
    if (cpu_splits(ticks, cu, &series, NULL, 0) != 0)
        return 1;
    int host = 0;
    if (wt_procfs_each_pid(count_one, &host) != 0)
        host = -1;
    report("cpu split over this host's /proc", cu, ticks);
    printf("%-34s %d processes, %zu series\n", "", host, series);
    wt_batch_free(&b);
    return 0;
}
