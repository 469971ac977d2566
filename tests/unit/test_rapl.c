/* SPDX-License-Identifier: MIT */
/*
 * RAPL collector on fake powercap trees: the captured two-package fixture, and trees written per
 * test under wt_test_dir() so energy_uj can change between polls (wrap, reset, power, zones that
 * come and go). The permission path goes through the wt_rapl_read_file seam, since CI runs as
 * root and chmod proves nothing there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/rapl.h"
#include "core/clock.h"
#include "core/reading.h"
#include "fstree.h"
#include "readings.h"
#include "runner.h"

#define S WT_NS_PER_S
#define T0 (1764439200LL * S)
#define INTEL_RANGE 262143328850ULL

static const char *root(void)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/sysfs", wt_test_dir());
    return buf;
}

static void mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    mkdir(tmp, 0755);
}

static const char *zone_file(const char *zone, const char *file)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/sys/class/powercap/%s/%s", root(), zone, file);
    return buf;
}

/* Writes one zone of the per-test tree and points WATTAGE_SYSFS_ROOT at it. */
static void make_zone(const char *zone, const char *name, uint64_t energy_uj, uint64_t max_uj)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/sys/class/powercap/%s", root(), zone);
    mkdirs(dir);
    wt_test_write(zone_file(zone, "name"), "%s\n", name);
    wt_test_write(zone_file(zone, "energy_uj"), "%llu\n", (unsigned long long)energy_uj);
    wt_test_write(zone_file(zone, "max_energy_range_uj"), "%llu\n", (unsigned long long)max_uj);
    setenv("WATTAGE_SYSFS_ROOT", root(), 1);
}

static void set_energy(const char *zone, uint64_t energy_uj)
{
    wt_test_write(zone_file(zone, "energy_uj"), "%llu\n", (unsigned long long)energy_uj);
}

static void *open_ok(void)
{
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = wt_rapl_collector.open(NULL, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    WT_ASSERT(st != NULL);
    return st;
}

static void poll_ok(void *st, int64_t t_ns, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    wt_batch_clear(b);
    int rc = wt_rapl_collector.poll(st, t_ns, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %d %s", rc, err.msg);
}

#define PKG0 "package=\"0\",domain=\"package\""

WT_TEST(rapl_fixture_two_packages_dram_psys_labels)
{
    setenv("WATTAGE_SYSFS_ROOT", wt_test_src_path("tests/fixtures/sysfs-2pkg"), 1);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    /* 2 packages × (package, core, dram) + psys; the intel-rapl-mmio:0 duplicate is skipped */
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 7);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 123456.789012, 1e-6);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"0\",domain=\"core\""), 45678.901234,
            1e-6);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"0\",domain=\"dram\""), 12345.678901,
            1e-6);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"package\""), 223456.789012,
            1e-6);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"core\""), 55678.901234,
            1e-6);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"dram\""), 22345.678901,
            1e-6);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"2\",domain=\"psys\""), 98765.432109,
            1e-6);
    /* power needs two readings */
    WT_EQ_INT(count_readings(&b, WT_M_CPU_POWER_W), 0);
    for (size_t i = 0; i < b.len; i++)
        WT_EQ_INT(b.r[i].t_ns, T0);
    /* the fixture does not change: a second poll gives 0 W everywhere, same energy */
    poll_ok(st, T0 + S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_POWER_W), 7);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, "package=\"1\",domain=\"dram\""), 0.0, 0);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 123456.789012, 1e-6);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(rapl_wrap_at_max_energy_range)
{
    const uint64_t range = 1000000000ULL; /* 1000 J, as a small AMD-like range */
    make_zone("intel-rapl:0", "package-0", range - 1000000, range);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 999.0, 1e-9);
    /* passes the top: 1 J to the top, then 0.5 J after the restart from 0 */
    set_energy("intel-rapl:0", 500000);
    poll_ok(st, T0 + S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 1000.5, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 1.5, 1e-9);
    /* and counts on normally after the wrap */
    set_energy("intel-rapl:0", 2500000);
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 1002.5, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 2.0, 1e-9);
    /* a second wrap, at the Intel range's scale of time: 400 W for 2 s */
    set_energy("intel-rapl:0", range - 300000000);
    poll_ok(st, T0 + 3 * S, &b);
    set_energy("intel-rapl:0", 500000000);
    poll_ok(st, T0 + 5 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 400.0, 1e-6);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 1000.0 + 2.0 * 1000.0 - 500.0, 1e-6);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(rapl_implausible_decrease_is_reset)
{
    make_zone("intel-rapl:0", "package-0", 100000000000ULL, INTEL_RANGE);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 100000.0, 1e-9);
    /*
     * 100 kJ → 1 J one second later. As a wrap that would be 162 kJ in 1 s (162 kW): not
     * plausible, so the counter restarted; the 1 J it counted since is kept.
     */
    set_energy("intel-rapl:0", 1000000);
    poll_ok(st, T0 + S, &b);
    double e1 = reading_value(&b, WT_M_CPU_ENERGY_J, PKG0);
    WT_NEAR(e1, 100001.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 1.0, 1e-9);
    /* counts on from the new baseline */
    set_energy("intel-rapl:0", 51000000);
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 100051.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 50.0, 1e-9);
    /* a decrease with no time passed is never a wrap either, and never negative power */
    set_energy("intel-rapl:0", 50000000);
    poll_ok(st, T0 + 2 * S, &b);
    WT_ASSERT(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0) >= 100051.0);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_POWER_W), 0);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(rapl_power_from_deltas_per_zone)
{
    make_zone("intel-rapl:0", "package-0", 10000000, INTEL_RANGE);
    make_zone("intel-rapl:0:0", "core", 5000000, INTEL_RANGE);
    make_zone("intel-rapl:0:1", "dram", 1000000, 65712999613ULL);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_POWER_W), 0);
    set_energy("intel-rapl:0", 10000000 + 2 * 150000000ULL);  /* 150 W for 2 s */
    set_energy("intel-rapl:0:0", 5000000 + 2 * 100000000ULL); /* 100 W */
    set_energy("intel-rapl:0:1", 1000000 + 2 * 12500000ULL);  /* 12.5 W */
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 150.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, "package=\"0\",domain=\"core\""), 100.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, "package=\"0\",domain=\"dram\""), 12.5, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 310.0, 1e-9);
    /* half a second later: power over that half second only */
    set_energy("intel-rapl:0", 310000000 + 100000000);
    poll_ok(st, T0 + 2 * S + S / 2, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 200.0, 1e-9);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

/* The seam: energy_uj answers EACCES as it does for non-root since CVE-2020-8694. */
static int reads;
static int deny_energy(const char *path, char *buf, size_t n)
{
    size_t len = strlen(path);
    if (len >= 9 && strcmp(path + len - 9, "energy_uj") == 0 && !strstr(path, "max_")) {
        reads++;
        return -EACCES;
    }
    return wt_rapl_read_file_default(path, buf, n);
}

static char *read_all(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "r");
    if (!f)
        wt_test_fail(__FILE__, __LINE__, "cannot read %s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

WT_TEST(rapl_permission_error_says_why_once)
{
    make_zone("intel-rapl:0", "package-0", 1000, INTEL_RANGE);
    wt_rapl_read_file = deny_energy;
    /* capture what is logged */
    char logpath[512];
    snprintf(logpath, sizeof logpath, "%s/stderr.log", wt_test_dir());
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    WT_ASSERT(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);

    void *st = (void *)1;
    struct wt_err err = {{0}};
    int rc1 = wt_rapl_collector.open(NULL, &st, &err);
    struct wt_err err2 = {{0}};
    void *st2 = (void *)1;
    int rc2 = wt_rapl_collector.open(NULL, &st2, &err2); /* the daemon retries with backoff */

    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);

    WT_EQ_INT(rc1, -EACCES);
    WT_EQ_INT(rc2, -EACCES);
    WT_ASSERT(st == NULL);
    WT_ASSERT(reads >= 2);
    /* the message names the file, the cause and the remedy */
    WT_CONTAINS(err.msg, "intel-rapl:0/energy_uj");
    WT_CONTAINS(err.msg, "permission denied");
    WT_CONTAINS(err.msg, "CVE-2020-8694");
    WT_CONTAINS(err.msg, "root");
    WT_CONTAINS(err.msg, "tmpfiles.d");
    WT_CONTAINS(err.msg, "z /sys/class/powercap/intel-rapl:*/energy_uj 0440 root wattage");
    WT_CONTAINS(err.msg, "udev");
    WT_EQ_STR(err2.msg, err.msg);
    /* logged once, not on every retry */
    const char *log = read_all(logpath);
    WT_EQ_INT(occurrences(log, "CVE-2020-8694"), 1);
    WT_CONTAINS(log, "rapl");
}

WT_TEST(rapl_permission_error_during_poll)
{
    make_zone("intel-rapl:0", "package-0", 1000, INTEL_RANGE);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    /* permissions tightened while running (e.g. a kernel update applied the fix) */
    wt_rapl_read_file = deny_energy;
    struct wt_err err = {{0}};
    wt_batch_clear(&b);
    WT_EQ_INT(wt_rapl_collector.poll(st, T0 + S, &b, &err), -EACCES);
    WT_CONTAINS(err.msg, "CVE-2020-8694");
    WT_CONTAINS(err.msg, "root");
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 0);
    /* and recovers when they are granted again */
    wt_rapl_read_file = wt_rapl_read_file_default;
    set_energy("intel-rapl:0", 1000 + 3000000);
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 3.001, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 1.5, 1e-9);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(rapl_missing_tree_is_enoent)
{
    setenv("WATTAGE_SYSFS_ROOT", root(), 1);
    void *st = (void *)1;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_rapl_collector.open(NULL, &st, &err), -ENOENT);
    WT_ASSERT(st == NULL);
    WT_CONTAINS(err.msg, "powercap");

    /* a powercap class with only the control directory and another driver: still absent */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/sys/class/powercap/intel-rapl", root());
    mkdirs(dir);
    snprintf(dir, sizeof dir, "%s/sys/class/powercap/dtpm", root());
    mkdirs(dir);
    memset(&err, 0, sizeof err);
    WT_EQ_INT(wt_rapl_collector.open(NULL, &st, &err), -ENOENT);
    WT_CONTAINS(err.msg, "intel-rapl");
}

WT_TEST(rapl_mmio_used_only_without_msr_zones)
{
    make_zone("intel-rapl-mmio:0", "package-0", 7000000, INTEL_RANGE);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 1);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 7.0, 1e-9);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

/*
 * energy_uj stays open between polls (collect/filesrc.h): a zone removed and made again between
 * two ticks (the driver reloaded, its counter restarted) is read from its new file, the energy
 * stays monotone, and the descriptors held stay as many over many polls.
 */
WT_TEST(rapl_zone_removed_and_back_is_read_anew_with_bounded_descriptors)
{
    make_zone("intel-rapl:0", "package-0", 1000000, INTEL_RANGE);
    make_zone("intel-rapl:1", "package-1", 2000000, INTEL_RANGE);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 2);
    int fds = wt_fstree_open_fds();
    double e1 = reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"package\"");

    char dir[1024];
    snprintf(dir, sizeof dir, "%s/sys/class/powercap/intel-rapl:1", root());
    WT_EQ_INT(wt_fstree_remove(dir), 0);
    make_zone("intel-rapl:1", "package-1", 500000, INTEL_RANGE);
    set_energy("intel-rapl:0", 3000000);
    poll_ok(st, T0 + S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 2);
    WT_ASSERT(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"package\"") >= e1);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 2.0, 1e-9);
    WT_EQ_INT(wt_fstree_open_fds(), fds);
    for (int i = 0; i < 40; i++) {
        /* package 1 at 1 W from its new counter, every file replaced before each poll */
        set_energy("intel-rapl:1", 500000 + (uint64_t)(i + 1) * 1000000);
        set_energy("intel-rapl:0", 3000000 + (uint64_t)(i + 1) * 5000000);
        poll_ok(st, T0 + (2 + i) * S, &b);
        WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, "package=\"1\",domain=\"package\""), 1.0, 1e-9);
        WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 5.0, 1e-9);
        WT_EQ_INT(wt_fstree_open_fds(), fds);
    }
    wt_rapl_collector.close(st);
    WT_EQ_INT(wt_fstree_open_fds(), fds - 2); /* one kept per zone, all given back */
    wt_batch_free(&b);
}

WT_TEST(rapl_zones_come_and_go)
{
    make_zone("intel-rapl:0", "package-0", 1000000, INTEL_RANGE);
    make_zone("intel-rapl:1", "package-1", 2000000, INTEL_RANGE);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 2);

    /* package 1 disappears (driver unloaded): the other goes on */
    char from[1024], to[1024];
    snprintf(from, sizeof from, "%s/sys/class/powercap/intel-rapl:1", root());
    snprintf(to, sizeof to, "%s/sys/class/powercap/gone", root());
    WT_EQ_INT(rename(from, to), 0);
    set_energy("intel-rapl:0", 3000000);
    poll_ok(st, T0 + S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 1);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, PKG0), 2.0, 1e-9);
    poll_ok(st, T0 + 2 * S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 1);

    /* it comes back with its counter restarted: energy stays monotone, new baseline */
    WT_EQ_INT(rename(to, from), 0);
    set_energy("intel-rapl:1", 500000);
    /* a new zone appears as well */
    make_zone("intel-rapl:1:0", "dram", 4000000, INTEL_RANGE);
    set_energy("intel-rapl:0", 3000000);
    for (int i = 3; i < 40; i++)
        poll_ok(st, T0 + i * S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 3);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"package\""), 2.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"dram\""), 4.0, 1e-9);
    set_energy("intel-rapl:1", 1500000);
    poll_ok(st, T0 + 40 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"package\""), 3.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_POWER_W, "package=\"1\",domain=\"package\""), 1.0, 1e-9);

    /* everything gone: the source fails this tick, without crashing */
    snprintf(from, sizeof from, "%s/sys", root());
    snprintf(to, sizeof to, "%s/sys-gone", root());
    WT_EQ_INT(rename(from, to), 0);
    struct wt_err err = {{0}};
    wt_batch_clear(&b);
    WT_ASSERT(wt_rapl_collector.poll(st, T0 + 41 * S, &b, &err) < 0);
    WT_ASSERT(err.msg[0] != '\0');
    memset(&err, 0, sizeof err);
    WT_ASSERT(wt_rapl_collector.poll(st, T0 + 42 * S, &b, &err) < 0);
    WT_CONTAINS(err.msg, "powercap");
    WT_EQ_INT(rename(to, from), 0);
    poll_ok(st, T0 + 43 * S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 3);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"package\""), 3.0, 1e-9);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(rapl_duplicate_names_stay_apart)
{
    /* broken firmware: two top-level zones both called package-0 */
    make_zone("intel-rapl:0", "package-0", 1000000, INTEL_RANGE);
    make_zone("intel-rapl:1", "package-0", 2000000, INTEL_RANGE);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 2);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0), 1.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_CPU_ENERGY_J, PKG0 ",zone=\"intel-rapl:1\""), 2.0, 1e-9);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(rapl_parse_name)
{
    char d[32];
    int pkg, die;
    WT_EQ_INT(wt_rapl_parse_name("package-0", d, sizeof d, &pkg, &die), 0);
    WT_EQ_STR(d, "package");
    WT_EQ_INT(pkg, 0);
    WT_EQ_INT(die, -1);
    WT_EQ_INT(wt_rapl_parse_name("package-12", d, sizeof d, &pkg, &die), 0);
    WT_EQ_INT(pkg, 12);
    WT_EQ_INT(wt_rapl_parse_name("package-1-die-2", d, sizeof d, &pkg, &die), 0);
    WT_EQ_STR(d, "package");
    WT_EQ_INT(pkg, 1);
    WT_EQ_INT(die, 2);
    const char *sub[] = {"core", "uncore", "dram", "psys"};
    for (int i = 0; i < 4; i++) {
        WT_EQ_INT(wt_rapl_parse_name(sub[i], d, sizeof d, &pkg, &die), 0);
        WT_EQ_STR(d, sub[i]);
        WT_EQ_INT(pkg, -1);
    }
    /* not a package number: kept as is */
    WT_EQ_INT(wt_rapl_parse_name("package-x", d, sizeof d, &pkg, &die), 0);
    WT_EQ_STR(d, "package-x");
    WT_EQ_INT(pkg, -1);
    WT_EQ_INT(wt_rapl_parse_name("", d, sizeof d, &pkg, &die), -EINVAL);
    WT_EQ_INT(wt_rapl_parse_name("a-very-long-domain-name-that-does-not-fit", d, 8, &pkg, &die),
              -EINVAL);
}

WT_TEST(rapl_parse_zone_dir)
{
    int z, s, m;
    WT_EQ_INT(wt_rapl_parse_zone_dir("intel-rapl:0", &z, &s, &m), 0);
    WT_EQ_INT(z, 0);
    WT_EQ_INT(s, -1);
    WT_EQ_INT(m, 0);
    WT_EQ_INT(wt_rapl_parse_zone_dir("intel-rapl:1:2", &z, &s, &m), 0);
    WT_EQ_INT(z, 1);
    WT_EQ_INT(s, 2);
    WT_EQ_INT(wt_rapl_parse_zone_dir("intel-rapl-mmio:0", &z, &s, &m), 0);
    WT_EQ_INT(m, 1);
    WT_EQ_INT(wt_rapl_parse_zone_dir("intel-rapl", &z, &s, &m), -EINVAL);
    WT_EQ_INT(wt_rapl_parse_zone_dir("intel-rapl:", &z, &s, &m), -EINVAL);
    WT_EQ_INT(wt_rapl_parse_zone_dir("intel-rapl:0:", &z, &s, &m), -EINVAL);
    WT_EQ_INT(wt_rapl_parse_zone_dir("intel-rapl:0x", &z, &s, &m), -EINVAL);
    WT_EQ_INT(wt_rapl_parse_zone_dir("dtpm", &z, &s, &m), -EINVAL);
}

WT_TEST(rapl_read_file_bounds)
{
    char path[512], buf[8];
    snprintf(path, sizeof path, "%s/f", wt_test_dir());
    wt_test_write(path, "12345\n");
    WT_EQ_INT(wt_rapl_read_file_default(path, buf, sizeof buf), 5);
    WT_EQ_STR(buf, "12345");
    wt_test_write(path, "1234567890\n");
    WT_EQ_INT(wt_rapl_read_file_default(path, buf, sizeof buf), -E2BIG);
    snprintf(path, sizeof path, "%s/missing", wt_test_dir());
    WT_EQ_INT(wt_rapl_read_file_default(path, buf, sizeof buf), -ENOENT);
}

WT_TEST(rapl_garbage_energy_skips_zone)
{
    make_zone("intel-rapl:0", "package-0", 1000000, INTEL_RANGE);
    make_zone("intel-rapl:1", "package-1", 1000000, INTEL_RANGE);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    wt_test_write(zone_file("intel-rapl:1", "energy_uj"), "not-a-number\n");
    poll_ok(st, T0 + S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_ENERGY_J), 1);
    WT_ASSERT(find_reading(&b, WT_M_CPU_ENERGY_J, PKG0) != NULL);
    wt_rapl_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(rapl_roots_default_empty)
{
    unsetenv("WATTAGE_SYSFS_ROOT");
    unsetenv("WATTAGE_PROCFS_ROOT");
    WT_EQ_STR(wt_sysfs_root(), "");
    WT_EQ_STR(wt_procfs_root(), "");
    setenv("WATTAGE_SYSFS_ROOT", "/x", 1);
    WT_EQ_STR(wt_sysfs_root(), "/x");
    wt_rapl_collector.close(NULL);
}
