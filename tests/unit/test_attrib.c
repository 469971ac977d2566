/* SPDX-License-Identifier: MIT */
/*
 * Attribution (collect/attrib.h, collect/procattr.h, and the NVML collector's split): exact
 * integer splits, conservation per device over every window, no energy from a device a process
 * did not use, PID reuse, folding after the grace period, unreadable cgroups, the CPU split by
 * CPU time on a fake /proc, and the GPU split on the fake NVML with each method.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/jobs.h"
#include "collect/attrib.h"
#include "collect/nvml.h"
#include "collect/procattr.h"
#include "core/clock.h"
#include "core/config.h"
#include "readings.h"
#include "runner.h"
#include "store/store.h"

#define S WT_NS_PER_S

/* A small deterministic generator: the same cases every run. */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

WT_TEST(split_is_exact_and_proportional)
{
    uint64_t parts[64], w[64], idle;
    uint64_t small[3] = {1, 1, 1};
    wt_attrib_split(10, 1, small, 3, parts, &idle);
    WT_EQ_U64(parts[0] + parts[1] + parts[2] + idle, 10);
    WT_EQ_U64(idle, 0);
    for (int i = 0; i < 3; i++)
        WT_ASSERT(parts[i] == 3 || parts[i] == 4);
    uint64_t two[2] = {3, 1};
    wt_attrib_split(1001, 0.5, two, 2, parts, &idle);
    WT_EQ_U64(parts[0], 375);
    WT_EQ_U64(parts[1], 125);
    WT_EQ_U64(idle, 501);
    /* nobody: all idle; busy 0: all idle; zero weights: all idle */
    wt_attrib_split(77, 1, NULL, 0, parts, &idle);
    WT_EQ_U64(idle, 77);
    wt_attrib_split(77, 0, two, 2, parts, &idle);
    WT_EQ_U64(idle, 77);
    WT_EQ_U64(parts[0] + parts[1], 0);
    uint64_t zeros[2] = {0, 0};
    wt_attrib_split(77, 1, zeros, 2, parts, &idle);
    WT_EQ_U64(idle, 77);
    for (int c = 0; c < 3000; c++) {
        size_t n = next_rand() % 64;
        uint64_t energy = next_rand() % 1000000000000ULL;
        double busy = (double)(next_rand() % 1400) / 1000.0 - 0.1;
        long double total_w = 0;
        for (size_t i = 0; i < n; i++) {
            w[i] = next_rand() % 4 == 0 ? 0 : next_rand() % (c % 2 ? 100000 : (1ULL << 40));
            total_w += w[i];
        }
        wt_attrib_split(energy, busy, w, n, parts, &idle);
        uint64_t sum = idle;
        double b = busy < 0 ? 0 : busy > 1 ? 1 : busy;
        for (size_t i = 0; i < n; i++) {
            sum += parts[i];
            if (w[i] == 0)
                WT_EQ_U64(parts[i], 0);
            else {
                long double exact = (long double)energy * b * w[i] / total_w;
                if (fabsl((long double)parts[i] - exact) > 1.5)
                    wt_test_fail(__FILE__, __LINE__, "case %d part %zu: %llu vs %Lf", c, i,
                                 (unsigned long long)parts[i], exact);
            }
        }
        WT_EQ_U64(sum, energy);
    }
}

/* <dir>/proc/PID/cgroup with text (NULL: no file), and a stat with start time start. */
static void fake_proc(unsigned int pid, const char *cgroup, uint64_t ticks, uint64_t start)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc/proc/%u", wt_test_dir(), pid);
    mkdir(path, 0755);
    if (cgroup) {
        snprintf(path, sizeof path, "%s/proc/proc/%u/cgroup", wt_test_dir(), pid);
        wt_test_write(path, "%s\n", cgroup);
    }
    snprintf(path, sizeof path, "%s/proc/proc/%u/stat", wt_test_dir(), pid);
    /* utime holds the ticks, stime 0; the command has a space and parentheses */
    wt_test_write(path,
                  "%u (my (app) x) S 1 1 1 0 -1 4194560 10 0 0 0 %llu 0 0 0 20 0 1 0 %llu "
                  "1000 10\n",
                  pid, (unsigned long long)ticks, (unsigned long long)start);
}

static void proc_root(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc", wt_test_dir());
    mkdir(path, 0755);
    setenv("WATTAGE_PROCFS_ROOT", path, 1);
    snprintf(path, sizeof path, "%s/proc/proc", wt_test_dir());
    mkdir(path, 0755);
}

#define SLURM7 "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0"
#define SLURM7B "0::/system.slice/slurmstepd.scope/job_7/step_1/user/task_0"
#define POD                                                                                        \
    "0::/kubepods.slice/kubepods-burstable.slice/"                                                 \
    "kubepods-burstable-pod11112222_3333_4444_5555_666677778888.slice/"                            \
    "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope"
#define POD2                                                                                       \
    "0::/kubepods.slice/kubepods-burstable.slice/"                                                 \
    "kubepods-burstable-pod11112222_3333_4444_5555_666677778888.slice/"                            \
    "cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope"
#define UNIT "0::/system.slice/render.service"

/* The sum of every series of metric whose labels start with dev (and the device's own). */
static double dev_sum(const struct wt_batch *b, int metric, const char *dev)
{
    double s = 0;
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric == metric && strncmp(b->r[i].labels, dev, strlen(dev)) == 0)
            s += b->r[i].value;
    return s;
}

WT_TEST(ledger_conserves_every_window_and_gives_only_to_users)
{
    proc_root();
    const char *cg[6] = {SLURM7, SLURM7B, POD, UNIT, "0::/", NULL};
    for (unsigned int p = 0; p < 6; p++)
        fake_proc(100 + p, cg[p], 0, 1000 + p);
    struct wt_attrib *a;
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, WT_M_GPU_ATTRIB_INFO, 1e-3, 3 * S, &a), 0);
    const char *devs[3] = {"gpu=\"0\",uuid=\"U0\"", "gpu=\"1\",uuid=\"U1\"",
                           "gpu=\"2\",uuid=\"U2\""};
    uint64_t total[3] = {0};
    struct wt_batch prev = {0}, b = {0};
    for (int it = 0; it < 80; it++) {
        int64_t t = (int64_t)(it + 1) * S;
        bool used[3][6] = {{false}};
        for (unsigned int d = 0; d < 3; d++) {
            struct wt_attrib_share sh[6];
            size_t n = 0;
            for (unsigned int p = 0; p < 6; p++) {
                /* each device its own mix; device 2 never has process 105 */
                if (next_rand() % 3 == 0 || (d == 2 && p == 5))
                    continue;
                sh[n++] = (struct wt_attrib_share){100 + p, 1000 + p, next_rand() % 1000, -1};
                used[d][p] = sh[n - 1].weight > 0;
            }
            uint64_t e = next_rand() % 700000;
            total[d] += e;
            double busy = (double)(next_rand() % 1000) / 1000.0;
            WT_EQ_INT(wt_attrib_account(a, d, devs[d], t, e, busy, WT_ATTRIB_UTILIZATION, sh, n),
                      0);
        }
        wt_batch_clear(&b);
        WT_EQ_INT(wt_attrib_emit(a, t, &b), 0);
        for (unsigned int d = 0; d < 3; d++) {
            /* the whole, since the first interval: exact in mJ */
            double sum = dev_sum(&b, WT_M_PROC_GPU_ENERGY_J, devs[d]);
            WT_EQ_U64((uint64_t)llround(sum * 1000), total[d]);
        }
        /* A series that grew belongs to a process its device listed with a weight; folded
         * owners grow only from processes that left. */
        for (size_t i = 0; it > 0 && i < b.len; i++) {
            const struct wt_reading *r = &b.r[i];
            char pid[16];
            if (r->metric != WT_M_PROC_GPU_ENERGY_J ||
                wt_labels_get(r->labels, "pid", pid, sizeof pid) != 0)
                continue;
            const struct wt_reading *q = find_reading(&prev, r->metric, r->labels);
            double before = q ? q->value : 0;
            if (r->value > before + 1e-9) {
                unsigned int d = (unsigned int)(r->labels[5] - '0');
                unsigned int p = (unsigned int)atoi(pid) - 100;
                WT_ASSERT(d < 3 && p < 6);
                if (!used[d][p])
                    wt_test_fail(__FILE__, __LINE__, "pid %s got energy on gpu %u", pid, d);
            }
        }
        for (size_t i = 0; i < b.len; i++)
            WT_ASSERT(!(strncmp(b.r[i].labels, devs[2], strlen(devs[2])) == 0 &&
                        strstr(b.r[i].labels, "pid=\"105\"")));
        wt_batch_clear(&prev);
        WT_EQ_INT(wt_batch_append(&prev, &b), 0);
    }
    /* owners in labels, and one series per method */
    WT_ASSERT(
        find_reading(&b, WT_M_GPU_ATTRIB_INFO, "gpu=\"0\",uuid=\"U0\",method=\"utilization\""));
    struct wt_attrib_device *dv;
    struct wt_attrib_entry *ev;
    size_t nd, ne;
    WT_EQ_INT(wt_attrib_copy(a, &dv, &nd, &ev, &ne), 0);
    WT_EQ_INT(nd, 3);
    for (size_t d = 0; d < nd; d++)
        WT_ASSERT(fabs(dv[d].energy_j - (double)total[d] / 1000) < 1e-6);
    free(dv);
    free(ev);
    wt_attrib_close(a);
    wt_batch_free(&b);
    wt_batch_free(&prev);
}

/* The value of the series with exactly these labels, or -1 when absent. */
static double series(const struct wt_batch *b, const char *labels)
{
    const struct wt_reading *r = find_reading(b, WT_M_PROC_GPU_ENERGY_J, labels);
    return r ? r->value : -1;
}

WT_TEST(finished_processes_fold_into_their_owner_after_the_grace_period)
{
    proc_root();
    fake_proc(100, SLURM7, 0, 50);
    fake_proc(101, SLURM7B, 0, 51);
    fake_proc(102, POD, 0, 52);
    fake_proc(103, UNIT, 0, 53);
    struct wt_attrib *a;
    struct wt_batch b = {0};
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, -1, 1e-3, 10 * S, &a), 0);
    const char *dev = "gpu=\"0\"";
    struct wt_attrib_share all[4] = {
        {100, 50, 1, -1}, {101, 51, 1, -1}, {102, 52, 1, -1}, {103, 53, 1, -1}};
    WT_EQ_INT(wt_attrib_account(a, 0, dev, 1 * S, 4000, 1, WT_ATTRIB_EQUAL, all, 4), 0);
    WT_EQ_INT(wt_attrib_emit(a, 1 * S, &b), 0);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"100\",owner=\"slurm\",slurm_job=\"7\",slurm_step=\"0\""),
              1);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"102\",owner=\"kubernetes\",pod_uid=\"11112222-3333-"
                         "4444-5555-666677778888\",container=\"0123456789ab\""),
              1);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"103\",owner=\"systemd\",unit=\"render.service\""), 1);
    /* they stop; within the grace period each keeps its own series */
    WT_EQ_INT(wt_attrib_account(a, 0, dev, 5 * S, 1000, 1, WT_ATTRIB_EQUAL, NULL, 0), 0);
    wt_batch_clear(&b);
    WT_EQ_INT(wt_attrib_emit(a, 5 * S, &b), 0);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"101\",owner=\"slurm\",slurm_job=\"7\",slurm_step=\"1\""),
              1);
    WT_EQ_INT(series(&b, "gpu=\"0\",owner=\"idle\""), 1);
    /* past it: one series per owner, no pid, the same energy */
    WT_EQ_INT(wt_attrib_account(a, 0, dev, 16 * S, 2000, 1, WT_ATTRIB_EQUAL, NULL, 0), 0);
    wt_batch_clear(&b);
    WT_EQ_INT(wt_attrib_emit(a, 16 * S, &b), 0);
    for (size_t i = 0; i < b.len; i++)
        WT_ASSERT(!strstr(b.r[i].labels, "pid="));
    WT_EQ_INT(series(&b, "gpu=\"0\",owner=\"slurm\",slurm_job=\"7\""), 2);
    WT_EQ_INT(series(&b, "gpu=\"0\",owner=\"kubernetes\",pod_uid=\"11112222-3333-4444-5555-"
                         "666677778888\""),
              1);
    WT_EQ_INT(series(&b, "gpu=\"0\",owner=\"systemd\",unit=\"render.service\""), 1);
    WT_EQ_INT(series(&b, "gpu=\"0\",owner=\"idle\""), 3);
    WT_EQ_INT(b.len, 4);
    /* a process of the same job comes and goes: it joins the job's series */
    fake_proc(104, SLURM7, 0, 60);
    struct wt_attrib_share one = {104, 60, 5, -1};
    WT_EQ_INT(wt_attrib_account(a, 0, dev, 17 * S, 500, 1, WT_ATTRIB_EQUAL, &one, 1), 0);
    WT_EQ_INT(wt_attrib_account(a, 0, dev, 30 * S, 0, 1, WT_ATTRIB_EQUAL, NULL, 0), 0);
    WT_EQ_INT(wt_attrib_account(a, 0, dev, 41 * S, 0, 1, WT_ATTRIB_EQUAL, NULL, 0), 0);
    wt_batch_clear(&b);
    WT_EQ_INT(wt_attrib_emit(a, 41 * S, &b), 0);
    WT_EQ_INT(b.len, 4);
    WT_ASSERT(fabs(series(&b, "gpu=\"0\",owner=\"slurm\",slurm_job=\"7\"") - 2.5) < 1e-9);
    WT_ASSERT(fabs(dev_sum(&b, WT_M_PROC_GPU_ENERGY_J, dev) - 7.5) < 1e-9);
    wt_attrib_close(a);
    wt_batch_free(&b);
}

WT_TEST(a_reused_pid_is_another_process)
{
    proc_root();
    fake_proc(100, SLURM7, 0, 50);
    struct wt_attrib *a;
    struct wt_batch b = {0};
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, -1, 1e-3, 300 * S, &a), 0);
    struct wt_attrib_share s1 = {100, 50, 1, -1};
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 1 * S, 3000, 1, WT_ATTRIB_EQUAL, &s1, 1), 0);
    /* pid 100 exits; another process (a pod's) gets pid 100 with a later start */
    fake_proc(100, POD, 0, 90);
    struct wt_attrib_share s2 = {100, 90, 1, -1};
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 2 * S, 1000, 1, WT_ATTRIB_EQUAL, &s2, 1), 0);
    WT_EQ_INT(wt_attrib_emit(a, 2 * S, &b), 0);
    /* one series per pid: the new process's, with only its own energy and owner */
    size_t with_pid = 0;
    for (size_t i = 0; i < b.len; i++)
        with_pid += strstr(b.r[i].labels, "pid=\"100\"") != NULL;
    WT_EQ_INT(with_pid, 1);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"100\",owner=\"kubernetes\",pod_uid=\"11112222-3333-"
                         "4444-5555-666677778888\",container=\"0123456789ab\""),
              1);
    WT_EQ_INT(series(&b, "gpu=\"0\",owner=\"slurm\",slurm_job=\"7\""), 3);
    wt_attrib_close(a);
    wt_batch_free(&b);
}

WT_TEST(an_unreadable_or_missing_cgroup_is_owner_unknown)
{
    proc_root();
    char path[PATH_MAX];
    fake_proc(100, NULL, 0, 50);
    /* a directory where the file should be: read fails (EISDIR), even as root */
    snprintf(path, sizeof path, "%s/proc/proc/100/cgroup", wt_test_dir());
    WT_EQ_INT(mkdir(path, 0755), 0);
    fake_proc(101, "this is not a cgroup line", 0, 51);
    struct wt_attrib *a;
    struct wt_batch b = {0};
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, -1, 1e-3, 300 * S, &a), 0);
    /* 102 has no /proc entry at all (it exited between the list and the read) */
    struct wt_attrib_share sh[3] = {{100, 50, 1, -1}, {101, 51, 1, -1}, {102, 0, 1, -1}};
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 1 * S, 3000, 1, WT_ATTRIB_EQUAL, sh, 3), 0);
    WT_EQ_INT(wt_attrib_emit(a, 1 * S, &b), 0);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"100\",owner=\"unknown\""), 1);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"101\",owner=\"unknown\""), 1);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"102\",owner=\"unknown\""), 1);
    wt_attrib_close(a);
    wt_batch_free(&b);
}

/* More processes in an interval than the account's stack buffers hold (a busy host's CPU
 * ledger), then a few again: each gets its share in both, the device's whole kept. */
WT_TEST(an_interval_of_many_processes_then_a_few_splits_each)
{
    proc_root();
    enum { MANY = 150 };
    struct wt_attrib *a;
    struct wt_batch b = {0};
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, -1, 1e-3, 300 * S, &a), 0);
    struct wt_attrib_share sh[MANY];
    for (unsigned int i = 0; i < MANY; i++) /* listed last pid first: the ledger sorts */
        sh[i] = (struct wt_attrib_share){1000 + MANY - 1 - i, 7, 1 + (i % 2), -1};
    /* weights 1 and 2 alternate: 75 x 1 + 75 x 2 = 225 units; 225 J busy, 25 J idle */
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 1 * S, 250000, 0.9, WT_ATTRIB_EQUAL, sh, MANY),
              0);
    struct wt_attrib_share few[2] = {{1000, 7, 1, -1}, {1001, 7, 3, -1}};
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 2 * S, 4000, 1, WT_ATTRIB_EQUAL, few, 2), 0);
    WT_EQ_INT(wt_attrib_emit(a, 2 * S, &b), 0);
    double sum = 0;
    size_t with_pid = 0;
    for (size_t i = 0; i < b.len; i++) {
        sum += b.r[i].value;
        with_pid += strstr(b.r[i].labels, "pid=\"") != NULL;
    }
    WT_EQ_INT(with_pid, MANY);
    WT_ASSERT(fabs(sum - 254) < 1e-9);
    /* 1149 listed first (weight 1), 1148 (2) ... 1001 (1), 1000 (2); then 1000 1 J, 1001 3 J */
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"1149\",owner=\"unknown\""), 1);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"1148\",owner=\"unknown\""), 2);
    WT_ASSERT(fabs(series(&b, "gpu=\"0\",pid=\"1000\",owner=\"unknown\"") - 3) < 1e-9);
    WT_ASSERT(fabs(series(&b, "gpu=\"0\",pid=\"1001\",owner=\"unknown\"") - 4) < 1e-9);
    wt_attrib_close(a);
    wt_batch_free(&b);
}

/* ---- the CPU side ---- */

static void write_proc_stat(uint64_t user, uint64_t idle)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc/proc/stat", wt_test_dir());
    wt_test_write(path, "cpu  %llu 0 0 %llu 0 0 0 0 0 0\ncpu0 %llu 0 0 %llu 0 0 0 0 0 0\n",
                  (unsigned long long)user, (unsigned long long)idle, (unsigned long long)user,
                  (unsigned long long)idle);
}

static void rapl_batch(struct wt_batch *b, int64_t t, double pkg0_j, double pkg1_j)
{
    wt_batch_clear(b);
    WT_EQ_INT(wt_batch_add(b, WT_M_CPU_ENERGY_J, "package=\"0\",domain=\"package\"", t, pkg0_j), 0);
    WT_EQ_INT(wt_batch_add(b, WT_M_CPU_ENERGY_J, "package=\"1\",domain=\"package\"", t, pkg1_j), 0);
    /* DRAM is not the packages' */
    WT_EQ_INT(wt_batch_add(b, WT_M_CPU_ENERGY_J, "package=\"0\",domain=\"dram\"", t, 1e6), 0);
}

static double cpu_series(const struct wt_batch *b, const char *labels)
{
    const struct wt_reading *r = find_reading(b, WT_M_PROC_CPU_ENERGY_J, labels);
    return r ? r->value : -1;
}

WT_TEST(cpu_energy_split_by_cpu_time_is_conserved)
{
    proc_root();
    fake_proc(10, SLURM7, 1000, 5);
    fake_proc(11, UNIT, 500, 6);
    write_proc_stat(2000, 8000);
    struct wt_cpu_attrib *c;
    struct wt_err err = {{0}};
    struct wt_batch in = {0}, out = {0};
    WT_EQ_INT(wt_cpu_attrib_open(NULL, 5 * S, &c, &err), 0);
    rapl_batch(&in, 1 * S, 1000, 2000);
    WT_EQ_INT(wt_cpu_attrib_feed(c, "nvml", &in, &out), 0); /* not rapl's */
    WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 0); /* a baseline */
    WT_EQ_INT(out.len, 0);
    /* 1000 ticks pass: 10 uses 300, 11 uses 100, 12 starts and uses 50; 200 J in all */
    fake_proc(10, SLURM7, 1300, 5);
    fake_proc(11, UNIT, 600, 6);
    fake_proc(12, POD, 50, 900);
    write_proc_stat(2450, 8550);
    rapl_batch(&in, 2 * S, 1100, 2100);
    WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 1);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"10\",owner=\"slurm\",slurm_job=\"7\","
                                    "slurm_step=\"0\"") -
                   60) < 1e-6);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"11\",owner=\"systemd\",unit=\"render.service\"") - 20) <
              1e-6);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"12\",owner=\"kubernetes\",pod_uid=\"11112222-3333-"
                                    "4444-5555-666677778888\",container=\"0123456789ab\"") -
                   10) < 1e-6);
    WT_ASSERT(fabs(cpu_series(&out, "owner=\"idle\"") - 110) < 1e-6);
    WT_EQ_INT(out.len, 4);
    /* every window: the parts are the packages' energy, to the µJ */
    double total = 0;
    for (int it = 3; it < 30; it++) {
        uint64_t d10 = next_rand() % 200, d11 = next_rand() % 200;
        static uint64_t t10 = 1300, t11 = 600, tot = 11000;
        t10 += d10, t11 += d11, tot += 500;
        fake_proc(10, SLURM7, t10, 5);
        fake_proc(11, UNIT, t11, 6);
        write_proc_stat(tot / 2, tot - tot / 2);
        double e = (double)(next_rand() % 100000) / 1000.0;
        total += e;
        rapl_batch(&in, it * S, 1100 + total, 2100);
        wt_batch_clear(&out);
        WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 1);
        double sum = 0;
        for (size_t i = 0; i < out.len; i++)
            sum += out.r[i].value;
        WT_ASSERT(fabs(sum - (200 + total)) < 1e-5);
    }
    /* process 12 stopped using CPU at 2 s: folded into its pod past the grace period */
    WT_ASSERT(cpu_series(&out, "owner=\"kubernetes\",pod_uid=\"11112222-3333-4444-5555-"
                               "666677778888\"") > 9.999);
    wt_cpu_attrib_close(c);
    wt_batch_free(&in);
    wt_batch_free(&out);
}

/* Descriptors this process has open now. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the listing's own */
}

static void gone_proc(unsigned int pid)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc/proc/%u/stat", wt_test_dir(), pid);
    WT_EQ_INT(unlink(path), 0);
    snprintf(path, sizeof path, "%s/proc/proc/%u/cgroup", wt_test_dir(), pid);
    WT_EQ_INT(unlink(path), 0);
    snprintf(path, sizeof path, "%s/proc/proc/%u", wt_test_dir(), pid);
    WT_EQ_INT(rmdir(path), 0);
}

WT_TEST(cpu_split_follows_processes_that_come_go_and_reuse_a_pid)
{
    proc_root();
    fake_proc(10, UNIT, 100, 5);
    write_proc_stat(500, 500);
    int fds0 = open_fds();
    struct wt_cpu_attrib *c;
    struct wt_err err = {{0}};
    struct wt_batch in = {0}, out = {0};
    WT_EQ_INT(wt_cpu_attrib_open(NULL, 5 * S, &c, &err), 0);
    rapl_batch(&in, 1 * S, 1000, 2000);
    WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 0);
    /* 20 starts between the ticks: all of its 40 ticks are this interval's (of 200; 100 J) */
    fake_proc(10, UNIT, 160, 5);
    fake_proc(20, SLURM7, 40, 50);
    write_proc_stat(700, 500);
    rapl_batch(&in, 2 * S, 1050, 2050);
    WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 1);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"10\",owner=\"systemd\",unit=\"render.service\"") - 30) <
              1e-5);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"20\",owner=\"slurm\",slurm_job=\"7\","
                                    "slurm_step=\"0\"") -
                   20) < 1e-5);
    /* both stat files stay open for the next tick */
    WT_EQ_INT(open_fds() - fds0, 2);
    /* 20 exits and another process gets its pid: a new process, its 30 ticks all its own */
    gone_proc(20);
    fake_proc(20, POD, 30, 70);
    fake_proc(10, UNIT, 170, 5);
    write_proc_stat(900, 500);
    rapl_batch(&in, 3 * S, 1100, 2100);
    wt_batch_clear(&out);
    WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 1);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"10\",owner=\"systemd\",unit=\"render.service\"") - 35) <
              1e-5);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"20\",owner=\"kubernetes\",pod_uid=\"11112222-3333-"
                                    "4444-5555-666677778888\",container=\"0123456789ab\"") -
                   15) < 1e-5);
    /* the earlier process of pid 20 folds into its owner at once, its 20 J kept */
    WT_ASSERT(cpu_series(&out, "pid=\"20\",owner=\"slurm\",slurm_job=\"7\",slurm_step=\"0\"") < 0);
    WT_ASSERT(fabs(cpu_series(&out, "owner=\"slurm\",slurm_job=\"7\"") - 20) < 1e-5);
    WT_ASSERT(fabs(cpu_series(&out, "owner=\"idle\"") - 130) < 1e-5);
    /* the same pid rewritten in place (the kept descriptor reads the new text): new again */
    fake_proc(20, POD2, 8, 90);
    fake_proc(10, UNIT, 180, 5);
    write_proc_stat(1000, 500);
    rapl_batch(&in, 4 * S, 1125, 2125);
    wt_batch_clear(&out);
    WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 1);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"20\",owner=\"kubernetes\",pod_uid=\"11112222-3333-"
                                    "4444-5555-666677778888\",container=\"fedcba987654\"") -
                   4) < 1e-5);
    WT_ASSERT(fabs(cpu_series(&out, "owner=\"kubernetes\",pod_uid=\"11112222-3333-4444-5555-"
                                    "666677778888\"") -
                   15) < 1e-5);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"10\",owner=\"systemd\",unit=\"render.service\"") - 40) <
              1e-5);
    /* 20 gone for good: its descriptor closes; the parts still sum to the packages' energy */
    gone_proc(20);
    fake_proc(10, UNIT, 190, 5);
    write_proc_stat(1100, 500);
    rapl_batch(&in, 5 * S, 1150, 2150);
    wt_batch_clear(&out);
    WT_EQ_INT(wt_cpu_attrib_feed(c, "rapl", &in, &out), 1);
    WT_ASSERT(fabs(cpu_series(&out, "pid=\"10\",owner=\"systemd\",unit=\"render.service\"") - 45) <
              1e-5);
    double sum = 0;
    for (size_t i = 0; i < out.len; i++)
        sum += out.r[i].value;
    WT_ASSERT(fabs(sum - 300) < 1e-5);
    WT_EQ_INT(open_fds() - fds0, 1);
    wt_cpu_attrib_close(c);
    WT_EQ_INT(open_fds(), fds0);
    wt_batch_free(&in);
    wt_batch_free(&out);
}

/* ---- the GPU side, on the fake NVML ---- */

static char fake_path[PATH_MAX];
__attribute__((constructor)) static void resolve_fake(void)
{
    if (!realpath(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), fake_path))
        fake_path[0] = '\0';
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Polls the fake NVML n+1 times, a second apart, with procs as the process file, and checks
 * conservation at every split. Leaves the last batch in b. */
static void run_nvml(const char *procs, int n, struct wt_batch *b)
{
    char path[PATH_MAX];
    if (!fake_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake NVML is not built: run make first");
    snprintf(path, sizeof path, "%s/procs", wt_test_dir());
    wt_test_write(path, "%s", procs);
    setenv("FAKE_NVML_PROCS_FILE", path, 1);
    setenv("FAKE_NVML_GPUS", "3", 1);
    setenv("WATTAGE_NVML_LIBRARY", fake_path, 1);
    static struct wt_config cfg;
    wt_config_defaults(&cfg);
    void *st = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_nvml_collector.open(&cfg, &st, &err), 0);
    double first[3] = {0};
    for (int k = 0; k <= n; k++) {
        wt_batch_clear(b);
        WT_EQ_INT(wt_nvml_collector.poll(st, wt_now_real_ns(), b, &err), 0);
        for (unsigned int g = 0; g < 3; g++) {
            char l[WT_LABELS_LEN], dev[64];
            snprintf(l, sizeof l, "gpu=\"%u\",uuid=\"GPU-fake-0000-%u\",model=\"NVIDIA H200\"", g,
                     g);
            snprintf(dev, sizeof dev, "gpu=\"%u\",uuid=\"GPU-fake-0000-%u\",", g, g);
            double e = reading_value(b, WT_M_GPU_ENERGY_J, l);
            if (k == 0) {
                first[g] = e;
                WT_EQ_INT(count_readings(b, WT_M_PROC_GPU_ENERGY_J), 0); /* a baseline */
                continue;
            }
            /* the GPU's counter since the first split, to the mJ */
            double parts = dev_sum(b, WT_M_PROC_GPU_ENERGY_J, dev);
            WT_EQ_INT(llround(parts * 1000), llround((e - first[g]) * 1000));
        }
        if (k < n)
            sleep_s(1.0);
    }
    wt_nvml_collector.close(st);
}

static double gpu_series(const struct wt_batch *b, unsigned int g, const char *rest)
{
    char l[WT_LABELS_LEN];
    snprintf(l, sizeof l, "gpu=\"%u\",uuid=\"GPU-fake-0000-%u\",%s", g, g, rest);
    const struct wt_reading *r = find_reading(b, WT_M_PROC_GPU_ENERGY_J, l);
    return r ? r->value : -1;
}

static bool has_info(const struct wt_batch *b, unsigned int g, const char *method)
{
    char l[WT_LABELS_LEN];
    snprintf(l, sizeof l, "gpu=\"%u\",uuid=\"GPU-fake-0000-%u\",method=\"%s\"", g, g, method);
    return find_reading(b, WT_M_GPU_ATTRIB_INFO, l) != NULL;
}

WT_TEST(gpu_energy_split_by_process_utilization)
{
    proc_root();
    fake_proc(100, SLURM7, 0, 50);
    fake_proc(101, POD, 0, 51);
    struct wt_batch b = {0};
    /* GPU 0: 60 % and 20 %; GPU 1: process 100 again, alone at 50 %; GPU 2: nobody */
    run_nvml("0 100 sm=60\n0 101 graphics sm=20\n1 100 sm=50\n", 2, &b);
    WT_ASSERT(has_info(&b, 0, "utilization") && has_info(&b, 2, "utilization"));
    double p100 = gpu_series(&b, 0, "pid=\"100\",owner=\"slurm\",slurm_job=\"7\",slurm_step=\"0\"");
    double p101 = gpu_series(&b, 0,
                             "pid=\"101\",owner=\"kubernetes\",pod_uid=\"11112222-3333-4444-"
                             "5555-666677778888\",container=\"0123456789ab\"");
    double idle0 = gpu_series(&b, 0, "owner=\"idle\"");
    WT_ASSERT(p100 > 0 && p101 > 0);
    WT_ASSERT(fabs(p100 / p101 - 3) < 0.01);
    WT_ASSERT(fabs(idle0 / (p100 + p101 + idle0) - 0.2) < 0.01);
    double q100 = gpu_series(&b, 1, "pid=\"100\",owner=\"slurm\",slurm_job=\"7\",slurm_step=\"0\"");
    double idle1 = gpu_series(&b, 1, "owner=\"idle\"");
    WT_ASSERT(fabs(q100 / (q100 + idle1) - 0.5) < 0.01);
    /* nobody on GPU 2: all idle; no process has a series on a GPU it did not use */
    WT_ASSERT(gpu_series(&b, 2, "owner=\"idle\"") > 0);
    for (size_t i = 0; i < b.len; i++) {
        const char *l = b.r[i].labels;
        WT_ASSERT(!(strstr(l, "gpu=\"2\"") && strstr(l, "pid=")));
        WT_ASSERT(!(strstr(l, "gpu=\"1\"") && strstr(l, "pid=\"101\"")));
    }
    wt_batch_free(&b);
}

WT_TEST(gpu_split_falls_back_to_memory_then_equal)
{
    proc_root();
    fake_proc(100, SLURM7, 0, 50);
    fake_proc(101, UNIT, 0, 51);
    setenv("FAKE_NVML_NOT_SUPPORTED", "process_utilization", 1);
    struct wt_batch b = {0};
    /* GPU 0: 3 GiB and 1 GiB; GPU 1: one without a memory figure, so equal */
    run_nvml("0 100 mem=3072 sm=90\n0 101 mem=1024\n1 100 mem=na\n1 101 mem=512\n", 2, &b);
    unsetenv("FAKE_NVML_NOT_SUPPORTED");
    WT_ASSERT(has_info(&b, 0, "memory"));
    WT_ASSERT(has_info(&b, 1, "equal"));
    WT_ASSERT(!has_info(&b, 0, "utilization"));
    double a = gpu_series(&b, 0, "pid=\"100\",owner=\"slurm\",slurm_job=\"7\",slurm_step=\"0\"");
    double c = gpu_series(&b, 0, "pid=\"101\",owner=\"systemd\",unit=\"render.service\"");
    WT_ASSERT(fabs(a / c - 3) < 0.01);
    double x = gpu_series(&b, 1, "pid=\"100\",owner=\"slurm\",slurm_job=\"7\",slurm_step=\"0\"");
    double y = gpu_series(&b, 1, "pid=\"101\",owner=\"systemd\",unit=\"render.service\"");
    WT_ASSERT(x > 0 && fabs(x / y - 1) < 0.01);
    /* the busy share is the GPU's utilization (the fake's follows its power): idle is the rest */
    WT_ASSERT(gpu_series(&b, 0, "owner=\"idle\"") > 0);
    wt_batch_free(&b);
}

WT_TEST(gpu_split_tells_a_reused_pid_from_its_first_process)
{
    proc_root();
    fake_proc(100, SLURM7, 0, 50);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/procs", wt_test_dir());
    wt_test_write(path, "0 100 sm=50\n");
    setenv("FAKE_NVML_PROCS_FILE", path, 1);
    setenv("FAKE_NVML_GPUS", "1", 1);
    if (!fake_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake NVML is not built: run make first");
    setenv("WATTAGE_NVML_LIBRARY", fake_path, 1);
    static struct wt_config cfg;
    wt_config_defaults(&cfg);
    void *st = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    WT_EQ_INT(wt_nvml_collector.open(&cfg, &st, &err), 0);
    const char *first = "gpu=\"0\",uuid=\"GPU-fake-0000-0\",pid=\"100\",owner=\"slurm\","
                        "slurm_job=\"7\",slurm_step=\"0\"";
    const char *second = "gpu=\"0\",uuid=\"GPU-fake-0000-0\",pid=\"100\",owner=\"kubernetes\","
                         "pod_uid=\"11112222-3333-4444-5555-666677778888\","
                         "container=\"0123456789ab\"";
    double had = 0;
    for (int k = 0; k < 5; k++) {
        if (k == 2) /* the process exits: GPU 0 lists nobody */
            wt_test_write(path, "%s", "");
        if (k == 3) { /* pid 100 again: another process, a pod's, started later */
            fake_proc(100, POD, 0, 90);
            wt_test_write(path, "0 100 sm=50\n");
        }
        wt_batch_clear(&b);
        WT_EQ_INT(wt_nvml_collector.poll(st, wt_now_real_ns(), &b, &err), 0);
        const struct wt_reading *r = find_reading(&b, WT_M_PROC_GPU_ENERGY_J, first);
        if (k == 1 || k == 2) {
            WT_ASSERT(r != NULL && r->value > 0);
            had = r->value;
        }
        if (k >= 3) {
            /* the first process is folded into its job at once; the second starts from 0 */
            WT_ASSERT(r == NULL);
            const struct wt_reading *f =
                find_reading(&b, WT_M_PROC_GPU_ENERGY_J,
                             "gpu=\"0\",uuid=\"GPU-fake-0000-0\",owner=\"slurm\",slurm_job=\"7\"");
            WT_ASSERT(f != NULL && fabs(f->value - had) < 1e-9);
            WT_ASSERT(find_reading(&b, WT_M_PROC_GPU_ENERGY_J, second) != NULL);
        }
        if (k < 4)
            sleep_s(1.0);
    }
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(job_info_carries_the_owner_its_tags_name)
{
    char db[PATH_MAX];
    struct wt_store *st = NULL;
    struct wt_jobs *j = NULL;
    struct wt_err err = {{0}};
    snprintf(db, sizeof db, "%s/w.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(db, NULL, &st, &err), 0);
    wt_store_close(st);
    WT_EQ_INT(wt_jobs_open(db, NULL, &j, &err), 0);
    unsigned status = 0;
    char *json = NULL;
    const char *a = "{\"name\":\"train\",\"tags\":{\"slurm_job\":\"4242\",\"team\":\"x\"}}";
    const char *b = "{\"name\":\"plain\"}";
    int64_t now = wt_now_real_ns();
    WT_EQ_INT(wt_jobs_start_json(j, a, strlen(a), now, &status, &json), 0);
    WT_EQ_INT(status, 201);
    free(json);
    WT_EQ_INT(wt_jobs_start_json(j, b, strlen(b), now, &status, &json), 0);
    free(json);
    struct wt_batch out = {0};
    WT_EQ_INT(wt_jobs_export_batch(j, now + S, &out), 0);
    int with = 0, without = 0;
    for (size_t i = 0; i < out.len; i++) {
        if (out.r[i].metric != WT_M_JOB_INFO)
            continue;
        if (strstr(out.r[i].labels, "job=\"train\""))
            with += strstr(out.r[i].labels, ",slurm_job=\"4242\"") != NULL &&
                    !strstr(out.r[i].labels, "team");
        else
            without += !strstr(out.r[i].labels, "slurm_job");
    }
    WT_EQ_INT(with, 1);
    WT_EQ_INT(without, 1);
    wt_batch_free(&out);
    wt_jobs_close(j);
}

WT_TEST(mig_processes_carry_their_gpu_instance_and_sum_to_the_parent)
{
    proc_root();
    fake_proc(100, SLURM7, 0, 50);
    fake_proc(101, UNIT, 0, 51);
    /* NVML has no per-process utilization under MIG: the split is by memory */
    setenv("FAKE_NVML_NOT_SUPPORTED", "process_utilization", 1);
    struct wt_batch b = {0};
    run_nvml("0 100 gi=1 mem=1024\n0 101 gi=2 mem=3072\n", 2, &b);
    unsetenv("FAKE_NVML_NOT_SUPPORTED");
    double i1 = gpu_series(&b, 0,
                           "pid=\"100\",gpu_instance=\"1\",owner=\"slurm\",slurm_job=\"7\","
                           "slurm_step=\"0\"");
    double i2 = gpu_series(&b, 0,
                           "pid=\"101\",gpu_instance=\"2\",owner=\"systemd\","
                           "unit=\"render.service\"");
    WT_ASSERT(i1 > 0 && fabs(i2 / i1 - 3) < 0.01);
    /* the parent's energy counted once: instances and idle are its parts (run_nvml checked
     * that they sum to its counter); nothing under any other GPU */
    for (size_t i = 0; i < b.len; i++)
        WT_ASSERT(!strstr(b.r[i].labels, "gpu_instance") || strstr(b.r[i].labels, "gpu=\"0\""));
    wt_batch_free(&b);
}

WT_TEST(pod_namespace_and_name_label_a_pods_process_and_its_folded_series)
{
    proc_root();
    fake_proc(102, POD, 0, 52);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pods", wt_test_dir());
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/pods/ml_train-0_11112222-3333-4444-5555-666677778888",
             wt_test_dir());
    WT_EQ_INT(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/pods", wt_test_dir());
    setenv("WATTAGE_PODLOG_ROOT", path, 1);
    struct wt_attrib *a;
    struct wt_batch b = {0};
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, -1, 1e-3, 10 * S, &a), 0);
    struct wt_attrib_share one[1] = {{102, 52, 1, -1}};
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 1 * S, 4000, 1, WT_ATTRIB_EQUAL, one, 1), 0);
    WT_EQ_INT(wt_attrib_emit(a, 1 * S, &b), 0);
    WT_EQ_INT(series(&b, "gpu=\"0\",pid=\"102\",owner=\"kubernetes\",pod_uid=\"11112222-3333-"
                         "4444-5555-666677778888\",pod_namespace=\"ml\",pod=\"train-0\","
                         "container=\"0123456789ab\""),
              4);
    /* a second container of the pod; then both end and, past the grace, fold into the pod's
     * series, which keeps the namespace and name and has both processes' energy */
    fake_proc(103, POD2, 0, 53);
    struct wt_attrib_share two[2] = {{102, 52, 1, -1}, {103, 53, 3, -1}};
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 2 * S, 8000, 1, WT_ATTRIB_EQUAL, two, 2), 0);
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 3 * S, 1000, 1, WT_ATTRIB_EQUAL, NULL, 0), 0);
    WT_EQ_INT(wt_attrib_account(a, 0, "gpu=\"0\"", 14 * S, 500, 1, WT_ATTRIB_EQUAL, NULL, 0), 0);
    wt_batch_clear(&b);
    WT_EQ_INT(wt_attrib_emit(a, 14 * S, &b), 0);
    const char *pod = "gpu=\"0\",owner=\"kubernetes\",pod_uid=\"11112222-3333-4444-5555-"
                      "666677778888\",pod_namespace=\"ml\",pod=\"train-0\"";
    WT_NEAR(series(&b, pod), 4 + 2 + 6, 1e-9);
    double sum = 0;
    for (size_t i = 0; i < b.len; i++) {
        WT_ASSERT(!strstr(b.r[i].labels, "pid=")); /* both folded */
        sum += b.r[i].value;
    }
    WT_NEAR(sum, (4000 + 8000 + 1000 + 500) * 1e-3, 1e-9); /* conserved across the fold */
    WT_EQ_INT((int)b.len, 2);                              /* the pod's series and idle */
    unsetenv("WATTAGE_PODLOG_ROOT");
    wt_batch_free(&b);
    wt_attrib_close(a);
}

/* Two GPU ledgers, NVIDIA's and AMD's, both with a GPU 0: published side by side, copied one
 * after the other, each device known by vendor and index, and a closed ledger unpublished. */
WT_TEST(gpu_ledgers_of_two_vendors_keep_their_devices_apart)
{
    proc_root();
    struct wt_attrib *nv, *amd;
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, -1, 1e-3, 10 * S, &nv), 0);
    WT_EQ_INT(wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, -1, 1e-6, 10 * S, &amd), 0);
    wt_attrib_set_vendor(amd, "amd");
    struct wt_attrib_device *d;
    struct wt_attrib_entry *e;
    size_t nd, ne;
    WT_EQ_INT(wt_attrib_copy_published(0, &d, &nd, &e, &ne), -ENODATA);
    wt_attrib_publish(0, nv);
    wt_attrib_publish(0, amd);
    wt_attrib_publish(0, amd); /* once is enough */
    struct wt_attrib_share p1[1] = {{201, 1, 1, -1}}, p2[1] = {{202, 2, 1, -1}};
    WT_EQ_INT(
        wt_attrib_account(nv, 0, "gpu=\"0\",uuid=\"GPU-a\"", S, 4000, 1, WT_ATTRIB_EQUAL, p1, 1),
        0);
    WT_EQ_INT(wt_attrib_account(amd, 0, "gpu=\"0\",uuid=\"AMD-b\"", S, 3000000, 0.5,
                                WT_ATTRIB_EQUAL, p2, 1),
              0);
    WT_EQ_INT(wt_attrib_account(amd, 1, "gpu=\"1\",uuid=\"AMD-c\"", S, 1000000, 1, WT_ATTRIB_EQUAL,
                                NULL, 0),
              0);
    WT_EQ_INT(wt_attrib_copy_published(0, &d, &nd, &e, &ne), 0);
    WT_EQ_INT((int)nd, 3);
    WT_EQ_INT((int)ne, 2);
    WT_EQ_STR(d[0].vendor, "nvidia");
    WT_EQ_STR(d[1].vendor, "amd");
    const struct wt_attrib_device *n0 = wt_attrib_find(d, nd, "nvidia", 0);
    const struct wt_attrib_device *a0 = wt_attrib_find(d, nd, "amd", 0);
    WT_ASSERT(n0 && a0 && n0 != a0);
    WT_NEAR(n0->energy_j, 4, 1e-9);
    WT_NEAR(a0->energy_j, 3, 1e-9);
    WT_NEAR(a0->idle_j, 1.5, 1e-9);
    /* a plain index is NVIDIA's where both have it, else whichever vendor's */
    WT_ASSERT(wt_attrib_find(d, nd, "", 0) == n0);
    WT_ASSERT(wt_attrib_find(d, nd, NULL, 1) == wt_attrib_find(d, nd, "amd", 1));
    WT_ASSERT(wt_attrib_find(d, nd, "nvidia", 1) == NULL);
    for (size_t i = 0; i < ne; i++) {
        WT_ASSERT(wt_attrib_on(&e[i], e[i].pid == 201 ? n0 : a0));
        WT_ASSERT(!wt_attrib_on(&e[i], e[i].pid == 201 ? a0 : n0));
    }
    free(d);
    free(e);
    /* closing one leaves the other published */
    wt_attrib_close(nv);
    WT_EQ_INT(wt_attrib_copy_published(0, &d, &nd, &e, &ne), 0);
    WT_EQ_INT((int)nd, 2);
    WT_EQ_STR(d[0].vendor, "amd");
    free(d);
    free(e);
    wt_attrib_close(amd);
    WT_EQ_INT(wt_attrib_copy_published(0, &d, &nd, &e, &ne), -ENODATA);
}

WT_TEST(start_times_are_kept_while_listed_and_read_again_when_a_pid_comes_back)
{
    proc_root();
    fake_proc(100, NULL, 0, 5000);
    fake_proc(200, NULL, 0, 6000);
    struct wt_attrib_starts c = {0};
    struct wt_attrib_share sh[2] = {{100, 0, 1, -1}, {200, 0, 1, -1}};
    wt_attrib_starts_fill(&c, sh, 2);
    WT_EQ_INT(sh[0].start, 5000);
    WT_EQ_INT(sh[1].start, 6000);
    /* /proc says otherwise now (a reused pid): a pid still listed keeps its start, unread */
    fake_proc(100, NULL, 0, 7000);
    fake_proc(200, NULL, 0, 8000);
    struct wt_attrib_share again[2] = {{200, 0, 1, -1}, {100, 0, 1, -1}};
    wt_attrib_starts_fill(&c, again, 2);
    WT_EQ_INT(again[0].start, 6000);
    WT_EQ_INT(again[1].start, 5000);
    /* 100 leaves the list: dropped; listed again, it is read again */
    struct wt_attrib_share one[1] = {{200, 0, 1, -1}};
    wt_attrib_starts_fill(&c, one, 1);
    WT_EQ_INT(one[0].start, 6000);
    struct wt_attrib_share back[2] = {{200, 0, 1, -1}, {100, 0, 1, -1}};
    wt_attrib_starts_fill(&c, back, 2);
    WT_EQ_INT(back[0].start, 6000);
    WT_EQ_INT(back[1].start, 7000);
    /* every WT_ATTRIB_STARTS_REFRESH calls everything is read again */
    int calls = 4;
    while (calls < WT_ATTRIB_STARTS_REFRESH - 1) {
        wt_attrib_starts_fill(&c, back, 2);
        calls++;
    }
    WT_EQ_INT(back[0].start, 6000);
    wt_attrib_starts_fill(&c, back, 2);
    WT_EQ_INT(back[0].start, 8000);
    /* a process gone from /proc: start 0 (its energy stays under its pid) */
    struct wt_attrib_share gone[1] = {{300, 0, 1, -1}};
    wt_attrib_starts_fill(&c, gone, 1);
    WT_EQ_INT(gone[0].start, 0);
}
