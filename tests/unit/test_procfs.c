/* SPDX-License-Identifier: MIT */
/*
 * procfs collector: utilization from two captured /proc/stat samples (tests/fixtures/procfs-*),
 * computed exactly for the total and per core; meminfo parsing; counters going backwards; CPUs
 * coming and going; malformed files give errors naming file and line.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/procfs.h"
#include "core/clock.h"
#include "core/reading.h"
#include "readings.h"
#include "runner.h"

#define S WT_NS_PER_S
#define T0 (1764439200LL * S)
#define KIB 1024.0

static const char *root(void)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/procfs", wt_test_dir());
    return buf;
}

static const char *proc_file(const char *name)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/proc/%s", root(), name);
    return buf;
}

/* Creates <test dir>/procfs/proc and points WATTAGE_PROCFS_ROOT at it. */
static void make_root(void)
{
    mkdir(root(), 0755);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/proc", root());
    mkdir(dir, 0755);
    setenv("WATTAGE_PROCFS_ROOT", root(), 1);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "r"), *out = fopen(to, "w");
    if (!in || !out)
        wt_test_fail(__FILE__, __LINE__, "cannot copy %s to %s", from, to);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
}

/* Installs fixture sample N (1 or 2) as the live /proc files. */
static void use_sample(int n)
{
    char rel[128];
    snprintf(rel, sizeof rel, "tests/fixtures/procfs-sample%d/proc/stat", n);
    copy_file(wt_test_src_path(rel), proc_file("stat"));
    snprintf(rel, sizeof rel, "tests/fixtures/procfs-sample%d/proc/meminfo", n);
    copy_file(wt_test_src_path(rel), proc_file("meminfo"));
}

static void *open_ok(void)
{
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = wt_procfs_collector.open(NULL, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

static void poll_ok(void *st, int64_t t_ns, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    wt_batch_clear(b);
    int rc = wt_procfs_collector.poll(st, t_ns, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %d %s", rc, err.msg);
}

#define ALL "cpu=\"all\""

WT_TEST(procfs_utilization_from_two_samples_exact)
{
    make_root();
    use_sample(1);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    /* one sample is no delta: no utilization yet, but memory is there */
    WT_EQ_INT(count_readings(&b, WT_M_CPU_UTIL_RATIO), 0);
    WT_ASSERT(find_reading(&b, WT_M_MEM_TOTAL_B, "") != NULL);

    use_sample(2);
    poll_ok(st, T0 + S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_UTIL_RATIO), 5);
    /*
     * Ticks between the samples (busy = total − idle − iowait; guest is inside user):
     *   all: 400 ticks, 160 idle+iowait → 0.6
     *   cpu0: 100 ticks, 45 idle + 5 iowait → 0.5
     *   cpu1: 100 ticks, 10 idle, guest +70 not counted twice → 0.9
     *   cpu2: 100 ticks, 75 idle → 0.25
     *   cpu3: 100 ticks, 20 idle + 5 iowait, irq/softirq/steal busy → 0.75
     */
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, ALL), 0.6, 1e-12);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"0\""), 0.5, 1e-12);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"1\""), 0.9, 1e-12);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"2\""), 0.25, 1e-12);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"3\""), 0.75, 1e-12);
    for (size_t i = 0; i < b.len; i++)
        WT_EQ_INT(b.r[i].t_ns, T0 + S);

    /* nothing changed: no tick passed, so no utilization rather than a 0/0 */
    poll_ok(st, T0 + 2 * S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_UTIL_RATIO), 0);
    wt_procfs_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(procfs_meminfo_bytes_and_ratio)
{
    make_root();
    use_sample(1);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_MEM_TOTAL_B, ""), 16384000 * KIB, 0);
    WT_NEAR(reading_value(&b, WT_M_MEM_USED_B, ""), (16384000 - 12288000) * KIB, 0);
    WT_NEAR(reading_value(&b, WT_M_MEM_USED_RATIO, ""), 0.25, 1e-12);
    use_sample(2);
    poll_ok(st, T0 + S, &b);
    WT_NEAR(reading_value(&b, WT_M_MEM_USED_B, ""), (16384000 - 8192000) * KIB, 0);
    WT_NEAR(reading_value(&b, WT_M_MEM_USED_RATIO, ""), 0.5, 1e-12);
    wt_procfs_collector.close(st);
    wt_batch_free(&b);

    struct wt_meminfo m;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_procfs_read_meminfo(wt_test_src_path("tests/fixtures/procfs-sample1/proc/meminfo"),
                                     &m, &err),
              0);
    WT_EQ_U64(m.total_b, 16384000ULL * 1024);
    WT_EQ_U64(m.available_b, 12288000ULL * 1024);
}

WT_TEST(procfs_meminfo_without_memavailable)
{
    make_root();
    /* kernels before 3.14: free + buffers + cached */
    wt_test_write(proc_file("meminfo"), "%s",
                  "MemTotal:  1000 kB\nMemFree:  100 kB\nBuffers:  50 kB\n"
                  "Cached:  250 kB\nHugePages_Total:       0\n");
    struct wt_meminfo m;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_procfs_read_meminfo(proc_file("meminfo"), &m, &err), 0);
    WT_EQ_U64(m.total_b, 1000 * 1024);
    WT_EQ_U64(m.available_b, 400 * 1024);

    wt_test_write(proc_file("meminfo"), "%s", "MemFree:  100 kB\n");
    WT_EQ_INT(wt_procfs_read_meminfo(proc_file("meminfo"), &m, &err), -EINVAL);
    WT_CONTAINS(err.msg, "proc/meminfo");
    WT_CONTAINS(err.msg, "MemTotal");
}

WT_TEST(procfs_counters_backwards_skip_the_delta)
{
    make_root();
    use_sample(2);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    /* every counter goes backwards: no utilization at all, never a negative or > 1 */
    use_sample(1);
    poll_ok(st, T0 + S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_CPU_UTIL_RATIO), 0);
    WT_ASSERT(find_reading(&b, WT_M_MEM_USED_RATIO, "") != NULL);
    /* the backwards sample is the new baseline: the next delta is exact again */
    use_sample(2);
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, ALL), 0.6, 1e-12);

    /*
     * idle+iowait of one core goes back (iowait is known to on NO_HZ kernels): that core alone
     * is skipped. (iowait moving into idle, the sum growing, is not a decrease.)
     */
    wt_test_write(proc_file("stat"), "%s",
                  "cpu  6785 30 2780 28200 360 110 160 15 120 0\n"
                  "cpu0 1090 10 510 8090 50 20 30 0 0 0\n"
                  "cpu1 2120 0 1020 6010 200 40 60 0 120 0\n"
                  "cpu2 525 0 250 9075 50 10 10 0 0 0\n"
                  "cpu3 3050 20 1000 5020 5 40 60 15 0 0\n");
    poll_ok(st, T0 + 3 * S, &b);
    WT_ASSERT(find_reading(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"0\"") == NULL);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"1\""), 1.0, 1e-12);
    WT_ASSERT(find_reading(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"2\"") == NULL); /* no tick passed */
    for (size_t i = 0; i < b.len; i++)
        if (b.r[i].metric == WT_M_CPU_UTIL_RATIO)
            WT_ASSERT(b.r[i].value >= 0.0 && b.r[i].value <= 1.0);
    wt_procfs_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(procfs_cpus_come_and_go)
{
    make_root();
    wt_test_write(proc_file("meminfo"), "%s", "MemTotal: 100 kB\nMemAvailable: 50 kB\n");
    wt_test_write(proc_file("stat"), "%s",
                  "cpu  10 0 10 80 0 0 0 0 0 0\n"
                  "cpu0 5 0 5 40 0 0 0 0 0 0\n"
                  "cpu1 5 0 5 40 0 0 0 0 0 0\n");
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    /* cpu1 goes offline, cpu2 comes online */
    wt_test_write(proc_file("stat"), "%s",
                  "cpu  40 0 10 150 0 0 0 0 0 0\n"
                  "cpu0 35 0 5 60 0 0 0 0 0 0\n"
                  "cpu2 0 0 0 10 0 0 0 0 0 0\n");
    poll_ok(st, T0 + S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"0\""), 0.6, 1e-12);
    WT_ASSERT(find_reading(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"1\"") == NULL);
    WT_ASSERT(find_reading(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"2\"") == NULL);
    wt_test_write(proc_file("stat"), "%s",
                  "cpu  40 0 10 160 0 0 0 0 0 0\n"
                  "cpu0 35 0 5 60 0 0 0 0 0 0\n"
                  "cpu2 0 0 0 20 0 0 0 0 0 0\n");
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, "cpu=\"2\""), 0.0, 0);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, ALL), 0.0, 0);
    wt_procfs_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(procfs_malformed_stat_names_file_and_line)
{
    make_root();
    use_sample(1);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    wt_test_write(proc_file("stat"), "%s",
                  "cpu  10 0 10 80 0 0 0 0 0 0\n"
                  "cpu0 5 0 5 40 0 0 0 0 0 0\n"
                  "cpu1 5 x 5 40 0 0 0 0 0 0\n");
    struct wt_err err = {{0}};
    wt_batch_clear(&b);
    WT_EQ_INT(wt_procfs_collector.poll(st, T0 + S, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "/proc/stat:3:");
    WT_CONTAINS(err.msg, "cpu1 5 x");

    /* too few fields */
    wt_test_write(proc_file("stat"), "%s", "cpu  10 0 10\n");
    WT_EQ_INT(wt_procfs_collector.poll(st, T0 + S, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "/proc/stat:1:");

    /* no aggregate line */
    wt_test_write(proc_file("stat"), "%s", "cpu0 5 0 5 40 0 0 0 0 0 0\nctxt 1\n");
    WT_EQ_INT(wt_procfs_collector.poll(st, T0 + S, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "/proc/stat: no aggregate");

    /* a cpu line longer than the bounded buffer is refused, not truncated into numbers */
    FILE *f = fopen(proc_file("stat"), "w");
    WT_ASSERT(f != NULL);
    fputs("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0", f);
    for (int i = 0; i < WT_PROCFS_LINE_LEN; i++)
        fputs(" 1", f);
    fputs("\n", f);
    fclose(f);
    WT_EQ_INT(wt_procfs_collector.poll(st, T0 + S, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "/proc/stat:2:");
    WT_CONTAINS(err.msg, "longer");

    /* and the collector recovers with a good file */
    use_sample(2);
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_CPU_UTIL_RATIO, ALL), 0.6, 1e-12);
    wt_procfs_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(procfs_malformed_meminfo_names_file_and_line)
{
    make_root();
    use_sample(1);
    wt_test_write(proc_file("meminfo"), "%s", "MemTotal: 100 kB\nthis line has no colon\n");
    void *st = open_ok();
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_procfs_collector.poll(st, T0, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "/proc/meminfo:2:");
    wt_test_write(proc_file("meminfo"), "%s",
                  "MemTotal: 100 kB\nMemFree: 1\nMemAvailable: 12x kB\n");
    WT_EQ_INT(wt_procfs_collector.poll(st, T0, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "/proc/meminfo:3: MemAvailable");
    wt_test_write(proc_file("meminfo"), "%s", "MemTotal: 100 MB\n");
    WT_EQ_INT(wt_procfs_collector.poll(st, T0, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "/proc/meminfo:1: MemTotal");
    wt_procfs_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(procfs_parse_cpu_line)
{
    struct wt_cpu_times t;
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu  1 2 3 4 5 6 7 8 9 10", &t), 0);
    WT_EQ_INT(t.cpu, -1);
    WT_EQ_U64(t.total, 36); /* 1..8; guest and guest_nice are inside user and nice */
    WT_EQ_U64(t.idle, 9);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu17 1 1 1 1", &t), 0); /* old kernels: 4 fields */
    WT_EQ_INT(t.cpu, 17);
    WT_EQ_U64(t.total, 4);
    WT_EQ_U64(t.idle, 1);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu0 1 1 1 1 1 1 1 1 1 1 99", &t), 0); /* newer: more */
    WT_EQ_U64(t.total, 8);
    WT_EQ_INT(wt_procfs_parse_cpu_line("intr 1 2 3", &t), 1);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpufreq 1 2 3 4", &t), 1);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu 1 2 3", &t), -EINVAL);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu", &t), -EINVAL);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu0 1 2 -3 4", &t), -EINVAL);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu0x 1 2 3 4", &t), -EINVAL);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu0 1 2 3 99999999999999999999", &t), -EINVAL);
    WT_EQ_INT(wt_procfs_parse_cpu_line("cpu0 18446744073709551615 1 1 1", &t), -EINVAL);
}

WT_TEST(procfs_cpu_util_pure)
{
    struct wt_cpu_times a = {.cpu = 0, .total = 1000, .idle = 800};
    struct wt_cpu_times b = {.cpu = 0, .total = 1200, .idle = 850};
    double r = -1;
    WT_EQ_INT(wt_procfs_cpu_util(&a, &b, &r), 0);
    WT_NEAR(r, 0.75, 1e-15);
    WT_EQ_INT(wt_procfs_cpu_util(&b, &a, &r), -ERANGE);
    WT_EQ_INT(wt_procfs_cpu_util(&a, &a, &r), -EAGAIN);
    /* idle went back while total went on */
    struct wt_cpu_times c = {.cpu = 0, .total = 1100, .idle = 790};
    WT_EQ_INT(wt_procfs_cpu_util(&a, &c, &r), -ERANGE);
    /* busy went back */
    struct wt_cpu_times d = {.cpu = 0, .total = 1100, .idle = 950};
    WT_EQ_INT(wt_procfs_cpu_util(&a, &d, &r), -ERANGE);
}

WT_TEST(procfs_missing_root_is_enoent)
{
    setenv("WATTAGE_PROCFS_ROOT", root(), 1); /* exists nowhere */
    void *st = (void *)1;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_procfs_collector.open(NULL, &st, &err), -ENOENT);
    WT_ASSERT(st == NULL);
    WT_CONTAINS(err.msg, "/proc/stat");
    wt_procfs_collector.close(NULL);
}

WT_TEST(procfs_reads_the_real_proc)
{
    /* the host's own /proc, through the default root: the parsers accept what a kernel writes */
    unsetenv("WATTAGE_PROCFS_ROOT");
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_ASSERT(reading_value(&b, WT_M_MEM_TOTAL_B, "") > 0);
    double ratio = reading_value(&b, WT_M_MEM_USED_RATIO, "");
    WT_ASSERT(ratio >= 0 && ratio <= 1);
    /* per-core lines with no tick since the last poll are skipped; the total soon ticks */
    size_t n = 0;
    for (int i = 1; i <= 100 && n == 0; i++) {
        usleep(50000);
        poll_ok(st, T0 + i * (S / 20), &b);
        n = count_readings(&b, WT_M_CPU_UTIL_RATIO);
    }
    WT_ASSERT(n >= 1 && n <= (size_t)sysconf(_SC_NPROCESSORS_CONF) + 1);
    for (size_t i = 0; i < b.len; i++)
        if (b.r[i].metric == WT_M_CPU_UTIL_RATIO)
            WT_ASSERT(b.r[i].value >= 0.0 && b.r[i].value <= 1.0);
    wt_procfs_collector.close(st);
    wt_batch_free(&b);
}

/* ---- per process: /proc/PID/stat, for attribution ---- */

WT_TEST(procfs_pid_stat_parses_times_and_start_past_the_command)
{
    struct wt_pid_stat st = {0};
    /* the command may hold spaces and parentheses: fields count after the last ')' */
    WT_EQ_INT(wt_procfs_parse_pid_stat("4242 (a (b) c) R 1 4242 4242 0 -1 4194560 511 0 0 0 "
                                       "1234 567 0 0 20 0 1 0 987654 1000000 100\n",
                                       &st),
              0);
    WT_EQ_U64(st.utime, 1234);
    WT_EQ_U64(st.stime, 567);
    WT_EQ_U64(st.start, 987654);
    /* negative fields before ours (tty_nr -1, priority) are skipped */
    WT_EQ_INT(
        wt_procfs_parse_pid_stat("1 (x) S 0 1 1 0 -1 0 0 0 0 0 5 6 -7 -8 -20 0 1 0 99 0 0", &st),
        0);
    WT_EQ_U64(st.start, 99);
    WT_EQ_INT(wt_procfs_parse_pid_stat("1 (x) S 0 1 1 0 -1 0 0 0 0 0 5 6", &st), -EINVAL);
    WT_EQ_INT(wt_procfs_parse_pid_stat("no parentheses here", &st), -EINVAL);
    WT_EQ_INT(wt_procfs_parse_pid_stat("1 (x) S 0 1 1 0 -1 0 0 0 0 0 abc 6 0 0 0 0 1 0 9", &st),
              -EINVAL);
    /* the real one: this process, started after boot, with some CPU time */
    unsetenv("WATTAGE_PROCFS_ROOT");
    WT_EQ_INT(wt_procfs_pid_stat((int)getpid(), &st), 0);
    WT_ASSERT(st.start > 0);
    WT_EQ_INT(wt_procfs_pid_stat(0x7ffffff0, &st), -ENOENT);
}

static void count_pid(void *ctx, int pid)
{
    int *n = ctx;
    if (pid == (int)getpid())
        n[0]++;
    n[1]++;
}

WT_TEST(procfs_each_pid_lists_processes_under_the_root)
{
    int n[2] = {0, 0};
    unsetenv("WATTAGE_PROCFS_ROOT");
    WT_EQ_INT(wt_procfs_each_pid(count_pid, n), 0);
    WT_EQ_INT(n[0], 1);
    WT_ASSERT(n[1] >= 1);
    char path[512];
    snprintf(path, sizeof path, "%s/proc/17", wt_test_dir());
    WT_EQ_INT(mkdir(wt_test_dir(), 0755) == 0 || errno == EEXIST, 1);
    snprintf(path, sizeof path, "%s/proc", wt_test_dir());
    WT_EQ_INT(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/proc/17", wt_test_dir());
    WT_EQ_INT(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/proc/self", wt_test_dir());
    WT_EQ_INT(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/proc/12x", wt_test_dir());
    WT_EQ_INT(mkdir(path, 0755), 0);
    setenv("WATTAGE_PROCFS_ROOT", wt_test_dir(), 1);
    n[0] = n[1] = 0;
    WT_EQ_INT(wt_procfs_each_pid(count_pid, n), 0);
    WT_EQ_INT(n[1], 1); /* 17 only: not self, not 12x */
    setenv("WATTAGE_PROCFS_ROOT", "/nonexistent-root", 1);
    WT_EQ_INT(wt_procfs_each_pid(count_pid, n), -ENOENT);
    unsetenv("WATTAGE_PROCFS_ROOT");
}
