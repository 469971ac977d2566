/* SPDX-License-Identifier: MIT */
/*
 * hwmon_walk: the hwmon collector on a generated node of 40 sensors (an ACPI wall meter, a Grace
 * node's 4 meters on 2 sockets, 8 PMBus PSUs with pin and pout, 8 amdgpu, an xe card and package
 * counter, 5 other chips' power1_input), written under a temporary directory as the kernel's
 * hwmon ABI lays it out. Measures the CPU time of a poll (every sensor read, parsed, integrated)
 * and of a full walk (open: readdir of every chip and its device directory, labels, roles), and
 * prints one JSON line each for bench/run.sh.
 *   hwmon_walk [POLLS] [MAX_HOLD_S]   (default 2000, 0)
 * With MAX_HOLD_S > 0 (collectors.hwmon.max_hold) the PSU chips say update_interval 2000 ms, so
 * their 16 sensors are read every other 1-s tick: the poll is then reported as a mean over the
 * ticks (they alternate), with the value files read a tick. Without, a last row polls the tree
 * read as sysfs is (collect/filesrc.h's wt_filesrc_bench_as_sysfs: one pread a value file, no
 * check by path that the file was not replaced, which a tree of regular files otherwise costs).
 */
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/filesrc.h"
#include "collect/hwmon.h"
#include "core/clock.h"
#include "core/config.h"

static char root[256];
static int psu_update_ms; /* update_interval of the PSU chips; 0: none */

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Writes <root>/sys/class/hwmon/<hw>/<file>, creating hw and hw/device. */
__attribute__((format(printf, 3, 4))) static int put(const char *hw, const char *file,
                                                     const char *fmt, ...)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sys/class/hwmon/%s", root, hw);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/sys/class/hwmon/%s/device", root, hw);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/sys/class/hwmon/%s/%s", root, hw, file);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    return fclose(f);
}

static int make_tree(void)
{
    const char *dirs[] = {"/sys", "/sys/class", "/sys/class/hwmon"};
    char path[512];
    int rc = 0, n = 0;
    char hw[16];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", root, dirs[i]);
        mkdir(path, 0755);
    }
    /* ACPI meters: everything on the ACPI device */
    const char *grace[] = {"Module", "Grace", "CPU", "SysIO"};
    for (int m = 0; m < 9; m++) {
        snprintf(hw, sizeof hw, "hwmon%d", n++);
        rc |= put(hw, "device/name", "power_meter\n");
        rc |= put(hw, "device/power1_average", "%d\n", 300000000 + m * 1000000);
        rc |= put(hw, "device/power1_average_interval", "%d\n", m ? 50 : 1000);
        if (m == 0)
            rc |= put(hw, "device/power1_oem_info", "system board\n");
        else
            rc |= put(hw, "device/power1_oem_info", "%s Power Socket %d\n", grace[(m - 1) % 4],
                      (m - 1) / 4);
    }
    for (int p = 0; p < 8; p++) {
        snprintf(hw, sizeof hw, "hwmon%d", n++);
        rc |= put(hw, "name", "pmbus\n");
        rc |= put(hw, "power1_label", "pin\n");
        rc |= put(hw, "power1_input", "%d\n", 1100000000 + p);
        rc |= put(hw, "power2_label", "pout1\n");
        rc |= put(hw, "power2_input", "%d\n", 1030000000 + p);
        rc |= put(hw, "in1_label", "vin\n");
        rc |= put(hw, "in1_input", "230000\n");
        if (psu_update_ms)
            rc |= put(hw, "update_interval", "%d\n", psu_update_ms);
    }
    for (int g = 0; g < 8; g++) {
        snprintf(hw, sizeof hw, "hwmon%d", n++);
        rc |= put(hw, "name", "amdgpu\n");
        rc |= put(hw, "power1_label", "PPT\n");
        rc |= put(hw, "power1_average", "%d\n", 550000000 + g);
        rc |= put(hw, "power1_cap", "750000000\n");
        rc |= put(hw, "temp1_input", "45000\n");
    }
    snprintf(hw, sizeof hw, "hwmon%d", n++);
    rc |= put(hw, "name", "xe\n");
    rc |= put(hw, "energy1_label", "card\n");
    rc |= put(hw, "energy1_input", "123456789\n");
    rc |= put(hw, "energy2_label", "pkg\n");
    rc |= put(hw, "energy2_input", "23456789\n");
    for (int o = 0; o < 5; o++) {
        snprintf(hw, sizeof hw, "hwmon%d", n++);
        rc |= put(hw, "name", "ina2xx\n");
        rc |= put(hw, "power1_input", "%d\n", 12000000 + o);
        rc |= put(hw, "in0_input", "12000\n");
    }
    return rc;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* One poll stamped t_ns into b; its CPU time into *us. 0, or -1 said on stderr. */
static int timed_poll(void *st, int64_t t_ns, struct wt_batch *b, double *us)
{
    struct wt_err err = {{0}};
    wt_batch_clear(b);
    double t0 = cpu_us();
    if (wt_hwmon_collector.poll(st, t_ns, b, &err) != 0) {
        fprintf(stderr, "hwmon_walk: poll: %s\n", err.msg);
        return -1;
    }
    *us = cpu_us() - t0;
    return 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int polls = argc > 1 ? atoi(argv[1]) : 2000;
    if (polls < 10 || polls > 1000000)
        polls = 2000;
    int walks = 200;
    double max_hold_s = argc > 2 ? atof(argv[2]) : 0;
    struct wt_config cfg;
    wt_config_defaults(&cfg);
    cfg.collectors.hwmon_max_hold_ns = 0; /* off: every sensor every tick (the default is auto) */
    if (max_hold_s > 0) {
        cfg.collectors.hwmon_max_hold_ns = (int64_t)(max_hold_s * 1e9);
        psu_update_ms = 2000;
    }
    snprintf(root, sizeof root, "/tmp/wt-hwmon-bench-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    int rc = 1;
    double *t = calloc((size_t)polls, sizeof *t), *w = calloc((size_t)walks, sizeof *w);
    double *full = calloc((size_t)polls, sizeof *full), *held = calloc((size_t)polls, sizeof *held);
    size_t nfull = 0, nheld = 0;
    struct wt_batch b = {0};
    void *st = NULL;
    struct wt_err err = {{0}};
    if (!t || !w || !full || !held || make_tree() != 0)
        goto out;
    setenv("WATTAGE_SYSFS_ROOT", root, 1);
    for (int i = 0; i < walks; i++) {
        double t0 = cpu_us();
        if (wt_hwmon_collector.open(&cfg, &st, &err) != 0) {
            fprintf(stderr, "hwmon_walk: open: %s\n", err.msg);
            goto out;
        }
        w[i] = cpu_us() - t0;
        if (i + 1 < walks) {
            wt_hwmon_collector.close(st);
            st = NULL;
        }
    }
    int64_t now = wt_now_real_ns();
    size_t readings = 0, all_readings = 0;
    double sum_us = 0;
    uint64_t reads0 = wt_hwmon_value_reads(st);
    for (int i = 0; i < polls; i++) {
        /* 1-s ticks as the daemon's: the stamps, not the wall, advance */
        if (timed_poll(st, now + (int64_t)i * WT_NS_PER_S, &b, &t[i]) != 0)
            goto out;
        sum_us += t[i];
        if (i > 1 && i % 30 != 0) { /* not the rescans */
            if (b.len >= readings)
                full[nfull++] = t[i];
            else
                held[nheld++] = t[i];
        }
        all_readings += b.len;
        if (b.len > readings)
            readings = b.len;
    }
    double reads_a_poll = (double)(wt_hwmon_value_reads(st) - reads0) / polls;
    qsort(t, (size_t)polls, sizeof *t, by_value);
    qsort(w, (size_t)walks, sizeof *w, by_value);
    size_t sensors = 0;
    for (size_t i = 0; i < b.len; i++)
        sensors += b.r[i].metric == WT_M_HWMON_ENERGY_J;
    if (max_hold_s > 0) {
        /* Held ticks and full ticks alternate: the mean is what a tick costs. */
        double mean = sum_us / polls, per = (double)all_readings / polls;
        qsort(full, nfull, sizeof *full, by_value);
        qsort(held, nheld, sizeof *held, by_value);
        fprintf(stderr,
                "hwmon_walk: max_hold: median of a full tick %.1f us, of a held tick %.1f us\n",
                nfull ? full[nfull / 2] : 0.0, nheld ? held[nheld / 2] : 0.0);
        fprintf(stderr,
                "hwmon_walk: max_hold %.0f s: %.1f value files read a poll, %.1f readings: poll "
                "mean %.1f us CPU (%.2f us a reading, %.2f us a file read), median %.1f us\n",
                max_hold_s, reads_a_poll, per, mean, mean / per, mean / reads_a_poll, t[polls / 2]);
        printf("{\"section\": \"hwmon\", \"what\": \"poll 40 hwmon sensors, PSUs held to "
               "update_interval 2 s (max_hold %.0f s)\", \"unit\": \"us\", \"wattage\": "
               "{\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, \"n\": %d}, \"peer\": null, "
               "\"peer_name\": null, \"note\": \"CPU time; mean %.2f us a poll, %.1f files read "
               "and %.1f readings a poll, %.3f us a reading\"}\n",
               max_hold_s, t[polls / 2], t[0], t[polls - 1], polls, mean, reads_a_poll, per,
               mean / per);
        rc = 0;
        goto out;
    }
    fprintf(stderr,
            "hwmon_walk: %zu sensors, %zu readings a poll: poll median %.1f us CPU (%.2f us a "
            "reading), mean %.1f us, walk median %.1f us\n",
            sensors, readings, t[polls / 2], t[polls / 2] / (double)readings, sum_us / polls,
            w[walks / 2]);
    printf("{\"section\": \"hwmon\", \"what\": \"poll %zu hwmon sensors (%zu readings)\", "
           "\"unit\": \"us\", \"wattage\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, "
           "\"n\": %d}, \"peer\": null, \"peer_name\": null, \"note\": \"CPU time; %.3f us a "
           "reading; every 30th poll rescans\"}\n",
           sensors, readings, t[polls / 2], t[0], t[polls - 1], polls,
           t[polls / 2] / (double)readings);
    printf("{\"section\": \"hwmon\", \"what\": \"walk /sys/class/hwmon of %zu sensors (open)\", "
           "\"unit\": \"us\", \"wattage\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, "
           "\"n\": %d}, \"peer\": null, \"peer_name\": null, \"note\": \"CPU time\"}\n",
           sensors, w[walks / 2], w[0], w[walks - 1], walks);
    /*
     * The same polls with the tree read as sysfs is (collect/filesrc.h): a generated tree on a
     * disk file system makes each read check, by its path, that the file was not replaced (a
     * stat, one path lookup); sysfs says a removed attribute with an error, so there a read is
     * one pread. This is the cost on a real node.
     */
    wt_hwmon_collector.close(st);
    st = NULL;
    wt_filesrc_bench_as_sysfs(true);
    if (wt_hwmon_collector.open(&cfg, &st, &err) != 0) {
        fprintf(stderr, "hwmon_walk: open: %s\n", err.msg);
        goto out;
    }
    for (int i = 0; i < polls; i++) {
        if (timed_poll(st, now + (int64_t)(polls + i) * WT_NS_PER_S, &b, &t[i]) != 0)
            goto out;
    }
    qsort(t, (size_t)polls, sizeof *t, by_value);
    fprintf(stderr,
            "hwmon_walk: read as sysfs (one pread a file, no inode check): poll median %.1f us "
            "CPU (%.2f us a reading)\n",
            t[polls / 2], t[polls / 2] / (double)readings);
    printf("{\"section\": \"hwmon\", \"what\": \"poll %zu hwmon sensors (%zu readings), read as "
           "sysfs\", \"unit\": \"us\", \"wattage\": {\"median\": %.2f, \"min\": %.2f, "
           "\"max\": %.2f, \"n\": %d}, \"peer\": null, \"peer_name\": null, \"note\": \"CPU "
           "time; %.3f us a reading; one pread a value file, no inode check (as on sysfs)\"}\n",
           sensors, readings, t[polls / 2], t[0], t[polls - 1], polls,
           t[polls / 2] / (double)readings);
    rc = 0;
out:
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
    free(t);
    free(w);
    free(full);
    free(held);
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
