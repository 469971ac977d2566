/* SPDX-License-Identifier: MIT */
/*
 * MIG instances (collect/nvml_mig.c): the split of a parent GPU's energy over its instances
 * (conservation to the mJ over many intervals, memory share, equal split when a process's
 * memory is unknown, all idle, the parent's busy share, a gap, a counter reset, an instance
 * destroyed mid-run and a new one appearing, more instances than slots), and the part against
 * the fake libnvidia-ml's MIG handles: enumeration, memory, processes, a destroyed instance
 * said once, a GPU not in MIG mode without series, a library without the MIG calls.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collect/nvml_mig.h"
#include "core/clock.h"
#include "core/log.h"
#include "logcap.h"
#include "readings.h"
#include "runner.h"

#define S WT_NS_PER_S
#define GAP (3 * WT_NS_PER_S)

static struct wt_mig_instance inst(unsigned int gi, unsigned int nprocs, uint64_t mem_mib)
{
    struct wt_mig_instance x;
    memset(&x, 0, sizeof x);
    x.gi = gi;
    x.ci = 0;
    snprintf(x.mig_uuid, sizeof x.mig_uuid, "MIG-test-%u", gi);
    x.nprocs = nprocs;
    x.procs_mem_known = true;
    x.procs_mem_b = mem_mib << 20;
    return x;
}

static uint64_t ledger_sum(const struct wt_mig_ledger *l)
{
    uint64_t s = l->idle_mj;
    for (unsigned int i = 0; i < l->n; i++)
        s += l->slot[i].energy_mj;
    return s;
}

static const struct wt_mig_slot *slot_of(const struct wt_mig_ledger *l, unsigned int gi)
{
    for (unsigned int i = 0; i < l->n; i++)
        if (l->slot[i].gi == gi)
            return &l->slot[i];
    wt_test_fail(__FILE__, __LINE__, "no slot for gi=%u", gi);
    return NULL;
}

WT_TEST(first_call_is_a_baseline_then_memory_share_to_the_mj)
{
    struct wt_mig_ledger l;
    memset(&l, 0, sizeof l);
    struct wt_mig_instance in[3] = {inst(1, 1, 3000), inst(2, 2, 1000), inst(3, 0, 0)};
    enum wt_mig_method m;
    WT_EQ_INT(wt_mig_ledger_account(&l, 5000000, 1 * S, GAP, -1, in, 3, &m), 0);
    WT_EQ_U64(ledger_sum(&l), 0);
    WT_EQ_INT(l.n, 3);
    WT_EQ_INT(wt_mig_ledger_account(&l, 5000000 + 1000, 2 * S, GAP, -1, in, 3, &m), 0);
    WT_EQ_INT(m, WT_MIG_MEMORY);
    WT_EQ_STR(wt_mig_method_name(m), "memory");
    WT_EQ_U64(slot_of(&l, 1)->energy_mj, 750);
    WT_EQ_U64(slot_of(&l, 2)->energy_mj, 250);
    WT_EQ_U64(slot_of(&l, 3)->energy_mj, 0); /* no process: nothing */
    WT_EQ_U64(l.idle_mj, 0);
    /* the parent half busy: half to idle */
    WT_EQ_INT(wt_mig_ledger_account(&l, 5000000 + 2000, 3 * S, GAP, 0.5, in, 3, &m), 0);
    WT_EQ_U64(slot_of(&l, 1)->energy_mj, 750 + 375);
    WT_EQ_U64(slot_of(&l, 2)->energy_mj, 250 + 125);
    WT_EQ_U64(l.idle_mj, 500);
    WT_EQ_U64(ledger_sum(&l), 2000);
}

WT_TEST(equal_split_when_a_process_memory_is_unknown_and_all_idle_without_processes)
{
    struct wt_mig_ledger l;
    memset(&l, 0, sizeof l);
    struct wt_mig_instance in[3] = {inst(1, 1, 3000), inst(2, 1, 1000), inst(3, 0, 0)};
    in[1].procs_mem_known = false; /* a process exited between the list and its memory */
    enum wt_mig_method m;
    (void)wt_mig_ledger_account(&l, 100, 1 * S, GAP, -1, in, 3, &m);
    (void)wt_mig_ledger_account(&l, 100 + 1001, 2 * S, GAP, -1, in, 3, &m);
    WT_EQ_INT(m, WT_MIG_EQUAL);
    WT_EQ_STR(wt_mig_method_name(m), "equal");
    /* 1001 mJ in two: the odd mJ to one of them, none lost */
    WT_ASSERT(slot_of(&l, 1)->energy_mj + slot_of(&l, 2)->energy_mj == 1001);
    WT_ASSERT(slot_of(&l, 1)->energy_mj >= 500 && slot_of(&l, 2)->energy_mj >= 500);
    /* processes with no memory at all: equal too */
    in[0].procs_mem_b = in[1].procs_mem_b = 0;
    in[1].procs_mem_known = true;
    (void)wt_mig_ledger_account(&l, 100 + 2001, 3 * S, GAP, -1, in, 3, &m);
    WT_EQ_INT(m, WT_MIG_EQUAL);
    /* no instance with a process: all idle */
    in[0].nprocs = in[1].nprocs = 0;
    uint64_t idle0 = l.idle_mj;
    (void)wt_mig_ledger_account(&l, 100 + 2501, 4 * S, GAP, -1, in, 3, &m);
    WT_EQ_INT(m, WT_MIG_IDLE);
    WT_EQ_STR(wt_mig_method_name(m), "idle");
    WT_EQ_U64(l.idle_mj - idle0, 500);
    WT_EQ_U64(ledger_sum(&l), 2501);
}

WT_TEST(a_gap_is_idle_and_a_counter_that_goes_back_is_a_new_baseline)
{
    struct wt_mig_ledger l;
    memset(&l, 0, sizeof l);
    struct wt_mig_instance in[1] = {inst(1, 1, 100)};
    enum wt_mig_method m;
    (void)wt_mig_ledger_account(&l, 1000, 1 * S, GAP, -1, in, 1, &m);
    (void)wt_mig_ledger_account(&l, 2000, 2 * S, GAP, -1, in, 1, &m);
    WT_EQ_U64(slot_of(&l, 1)->energy_mj, 1000);
    /* 10 s later (the GPU was down): nobody is known to have used it */
    (void)wt_mig_ledger_account(&l, 9000, 12 * S, GAP, -1, in, 1, &m);
    WT_EQ_INT(m, WT_MIG_IDLE);
    WT_EQ_U64(slot_of(&l, 1)->energy_mj, 1000);
    WT_EQ_U64(l.idle_mj, 7000);
    /* the counter restarts (integrated series started again): nothing counted, new baseline */
    (void)wt_mig_ledger_account(&l, 500, 13 * S, GAP, -1, in, 1, &m);
    WT_EQ_U64(ledger_sum(&l), 8000);
    (void)wt_mig_ledger_account(&l, 800, 14 * S, GAP, -1, in, 1, &m);
    WT_EQ_U64(slot_of(&l, 1)->energy_mj, 1300);
    WT_EQ_U64(ledger_sum(&l), 8300);
}

WT_TEST(conservation_over_many_ticks_with_instances_coming_and_going)
{
    struct wt_mig_ledger l;
    memset(&l, 0, sizeof l);
    uint64_t e = 1000000000ULL, first = e;
    unsigned int seed = 12345;
    unsigned int gone_total = 0;
    enum wt_mig_method m;
    int methods[3] = {0};
    for (int t = 0; t < 5000; t++) {
        struct wt_mig_instance in[7];
        size_t n = 0;
        for (unsigned int gi = 1; gi <= 7; gi++) {
            seed = seed * 1103515245u + 12345u;
            /* gi 7 exists only in the first half; gi 1..6 always */
            if (gi == 7 && t >= 2500)
                continue;
            in[n] = inst(gi, (seed >> 16) % 3, (seed >> 8) % 5000);
            in[n].procs_mem_known = ((seed >> 4) % 17) != 0;
            n++;
        }
        seed = seed * 1103515245u + 12345u;
        e += (seed >> 16) % 700000; /* up to 700 J in the tick */
        if (t == 0)
            first = e; /* the baseline */
        double busy = t % 5 == 0 ? -1 : ((seed >> 3) % 101) / 100.0;
        gone_total += wt_mig_ledger_account(&l, e, (int64_t)t * S, GAP, busy, in, n, &m);
        methods[m]++;
        WT_EQ_U64(ledger_sum(&l), e - first); /* exactly, in every window */
    }
    WT_EQ_INT(gone_total, 1); /* gi 7, once */
    WT_EQ_INT(l.n, 7);
    WT_ASSERT(!slot_of(&l, 7)->present);
    WT_ASSERT(slot_of(&l, 7)->energy_mj > 0); /* its counter stays */
    WT_ASSERT(methods[WT_MIG_MEMORY] > 0 && methods[WT_MIG_EQUAL] > 0);
}

WT_TEST(a_destroyed_instance_keeps_its_counter_and_a_new_one_gets_its_own)
{
    struct wt_mig_ledger l;
    memset(&l, 0, sizeof l);
    struct wt_mig_instance a[2] = {inst(1, 1, 100), inst(2, 1, 100)};
    enum wt_mig_method m;
    (void)wt_mig_ledger_account(&l, 0, 1 * S, GAP, -1, a, 2, &m);
    WT_EQ_INT(wt_mig_ledger_account(&l, 1000, 2 * S, GAP, -1, a, 2, &m), 0);
    /* gi 2 destroyed: said by the account that finds it gone, and only then */
    WT_EQ_INT(wt_mig_ledger_account(&l, 2000, 3 * S, GAP, -1, a, 1, &m), 1);
    WT_ASSERT(slot_of(&l, 2)->gone);
    WT_EQ_INT(wt_mig_ledger_account(&l, 3000, 4 * S, GAP, -1, a, 1, &m), 0);
    WT_ASSERT(!slot_of(&l, 2)->gone);
    WT_EQ_U64(slot_of(&l, 2)->energy_mj, 500);
    WT_EQ_U64(slot_of(&l, 1)->energy_mj, 2500);
    /* gi 2 created again: another instance (another UUID), another counter */
    struct wt_mig_instance b[2] = {inst(1, 1, 100), inst(2, 1, 100)};
    snprintf(b[1].mig_uuid, sizeof b[1].mig_uuid, "MIG-test-2-again");
    WT_EQ_INT(wt_mig_ledger_account(&l, 4000, 5 * S, GAP, -1, b, 2, &m), 0);
    WT_EQ_INT(l.n, 3);
    WT_EQ_STR(l.slot[2].mig_uuid, "MIG-test-2-again");
    WT_EQ_U64(l.slot[2].energy_mj, 500);
    WT_EQ_U64(slot_of(&l, 2)->energy_mj, 500); /* the old one, frozen */
    WT_EQ_U64(ledger_sum(&l), 4000);
}

WT_TEST(more_instances_than_slots_go_to_idle_and_stay_conserved)
{
    struct wt_mig_ledger l;
    memset(&l, 0, sizeof l);
    enum wt_mig_method m;
    uint64_t e = 0;
    for (int round = 0; round < 3; round++) {
        struct wt_mig_instance in[WT_MIG_MAX_SLOTS / 2];
        for (unsigned int i = 0; i < WT_MIG_MAX_SLOTS / 2; i++) {
            in[i] = inst(i, 1, 10);
            snprintf(in[i].mig_uuid, sizeof in[i].mig_uuid, "MIG-r%d-%u", round, i);
        }
        e += 3200;
        (void)wt_mig_ledger_account(&l, e, (round + 1) * S, GAP, -1, in, WT_MIG_MAX_SLOTS / 2, &m);
        WT_EQ_U64(ledger_sum(&l), e - 3200);
    }
    WT_EQ_INT(l.n, WT_MIG_MAX_SLOTS);
    WT_ASSERT(l.full_said);
    WT_EQ_U64(l.idle_mj, 3200); /* the third round's instances found no slot */
}

/* ---- the part against the fake library ---- */

static char fake_path[PATH_MAX], minimal_path[PATH_MAX];

__attribute__((constructor)) static void resolve_fakes(void)
{
    if (!realpath(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), fake_path))
        fake_path[0] = '\0';
    if (!realpath(wt_test_build_path("tests/fakes/minimal/libnvidia-ml.so.1"), minimal_path))
        minimal_path[0] = '\0';
}

struct lib {
    void *dl;
    wt_nvml_shutdown_fn *shutdown;
    wt_nvml_handle_fn *handle;
    wt_nvml_error_string_fn *error_string;
};

static void *must_sym(void *dl, const char *name)
{
    void *p = dlsym(dl, name);
    if (!p)
        wt_test_fail(__FILE__, __LINE__, "no %s in the fake", name);
    return p;
}

static struct lib lib_open(const char *path)
{
    struct lib x;
    if (!path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake NVML is not built: run make first");
    x.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    WT_ASSERT(x.dl != NULL);
    void *p = dlsym(x.dl, "nvmlInit_v2");
    if (!p)
        p = must_sym(x.dl, "nvmlInit");
    wt_nvml_init_fn *init;
    memcpy(&init, &p, sizeof p);
    WT_EQ_INT(init(), NVML_SUCCESS);
    p = must_sym(x.dl, "nvmlShutdown");
    memcpy(&x.shutdown, &p, sizeof p);
    p = must_sym(x.dl, "nvmlDeviceGetHandleByIndex");
    memcpy(&x.handle, &p, sizeof p);
    p = must_sym(x.dl, "nvmlErrorString");
    memcpy(&x.error_string, &p, sizeof p);
    return x;
}

static void lib_close(struct lib *x)
{
    x->shutdown();
    dlclose(x->dl);
}

static nvmlDevice_t dev_of(const struct lib *x, unsigned int i)
{
    nvmlDevice_t d = NULL;
    WT_EQ_INT(x->handle(i, &d), NVML_SUCCESS);
    return d;
}

static void gpu_labels(char *buf, size_t n, unsigned int gpu)
{
    char idx[16], uuid[64];
    snprintf(idx, sizeof idx, "%u", gpu);
    snprintf(uuid, sizeof uuid, "GPU-fake-0000-%u", gpu);
    WT_EQ_INT(wt_labels(buf, n, "gpu", idx, "uuid", uuid, "model", "NVIDIA H200", NULL), 0);
}

static void inst_labels(char *buf, size_t n, unsigned int gpu, const char *gi)
{
    gpu_labels(buf, n, gpu);
    WT_EQ_INT(wt_labels_add(buf, n, "gpu_instance", gi), 0);
    if (strcmp(gi, "idle") != 0) {
        char uuid[64];
        snprintf(uuid, sizeof uuid, "MIG-fake-%u-%s", gpu, gi);
        WT_EQ_INT(wt_labels_add(buf, n, "compute_instance", "0"), 0);
        WT_EQ_INT(wt_labels_add(buf, n, "mig_uuid", uuid), 0);
    }
}

/* metric of instance gi ("idle" for the rest) of GPU gpu; NAN when absent. */
static double mig_value(const struct wt_batch *b, int metric, unsigned int gpu, const char *gi)
{
    char l[WT_LABELS_LEN];
    inst_labels(l, sizeof l, gpu, gi);
    const struct wt_reading *r = find_reading(b, metric, l);
    return r ? r->value : NAN;
}

static double sum_mig_energy(const struct wt_batch *b, unsigned int gpu)
{
    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, gpu);
    size_t ll = strlen(l);
    double s = 0;
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric == WT_M_MIG_ENERGY_J && strncmp(b->r[i].labels, l, ll) == 0 &&
            b->r[i].labels[ll] == ',')
            s += b->r[i].value;
    return s;
}

static int poll(struct wt_nvml_mig *m, const struct lib *x, unsigned int gpu, uint64_t mj,
                int64_t t_ns, struct wt_batch *b)
{
    char l[WT_LABELS_LEN], uuid[64];
    gpu_labels(l, sizeof l, gpu);
    snprintf(uuid, sizeof uuid, "GPU-fake-0000-%u", gpu);
    return wt_nvml_mig_poll_gpu(m, gpu, dev_of(x, gpu), uuid, l, true, true, mj, -1, t_ns, b);
}

WT_TEST(fake_mig_gpu_instances_memory_processes_and_the_split)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    char procs[PATH_MAX], layout[PATH_MAX];
    snprintf(procs, sizeof procs, "%s/procs", wt_test_dir());
    snprintf(layout, sizeof layout, "%s/mig", wt_test_dir());
    /* GPU 1: instances 1..3; gi 1 one process of 3000 MiB, gi 2 two of 500 MiB, gi 3 none */
    wt_test_write(procs, "1 100 mem=3000 gi=1\n1 101 mem=500 gi=2\n1 102 mem=500 gi=2\n"
                         "0 200 mem=4000\n");
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_MIG", "1:3", 1);
    setenv("FAKE_NVML_PROCS_FILE", procs, 1);
    setenv("FAKE_NVML_MIG_FILE", layout, 1); /* not there yet: the FAKE_NVML_MIG layout */
    struct lib x = lib_open(fake_path);
    struct wt_nvml_mig *m = NULL;
    WT_EQ_INT(wt_nvml_mig_open(x.dl, fake_path, 2, GAP, x.error_string, &m), 0);
    struct wt_batch b = {0};
    uint64_t e0 = 7000000, e = e0;
    for (int t = 0; t < 4; t++) {
        wt_batch_clear(&b);
        WT_EQ_INT(poll(m, &x, 0, e, (int64_t)(t + 1) * S, &b), 0);
        WT_EQ_INT(b.len, 0); /* GPU 0 is not in MIG mode: no MIG series at all */
        WT_EQ_INT(poll(m, &x, 1, e, (int64_t)(t + 1) * S, &b), 0);
        WT_NEAR(sum_mig_energy(&b, 1), (double)(e - e0) / 1000.0, 1e-9);
        e += 4000;
    }
    /* 12 J over three intervals, by memory: gi 1 3000 of 4000 MiB, gi 2 1000 */
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 1, "1"), 9.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 1, "2"), 3.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 1, "3"), 0.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 1, "idle"), 0.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_PROCESSES, 1, "2"), 2, 0);
    WT_NEAR(mig_value(&b, WT_M_MIG_PROCESSES, 1, "3"), 0, 0);
    WT_NEAR(mig_value(&b, WT_M_MIG_MEM_TOTAL_B, 1, "1"), (double)((143771ULL / 7) << 20), 0);
    WT_NEAR(mig_value(&b, WT_M_MIG_MEM_USED_B, 1, "1"), (double)((3000ULL + 64) << 20), 0);
    WT_NEAR(mig_value(&b, WT_M_MIG_MEM_USED_B, 1, "3"), (double)(64ULL << 20), 0);
    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, 1);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "method", "memory"), 0);
    WT_NEAR(reading_value(&b, WT_M_MIG_ATTRIB_INFO, l), 1, 0);
    WT_EQ_INT(count_readings(&b, WT_M_MIG_ATTRIB_INFO), 1);

    /* gi 2 destroyed, gi 5 created while polling: gi 2's counter stays, said once */
    wt_test_write(layout, "1 1\n1 3\n1 5\n");
    wt_test_write(procs, "1 100 mem=3000 gi=1\n1 300 mem=1000 gi=5\n");
    for (int t = 4; t < 8; t++) {
        wt_batch_clear(&b);
        WT_EQ_INT(poll(m, &x, 1, e, (int64_t)(t + 1) * S, &b), 0);
        WT_NEAR(sum_mig_energy(&b, 1), (double)(e - e0) / 1000.0, 1e-9);
        e += 4000;
    }
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 1, "2"), 3.0, 1e-9);
    WT_ASSERT(isnan(mig_value(&b, WT_M_MIG_PROCESSES, 1, "2"))); /* gone: no gauges */
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 1, "5"), 4.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 1, "1"), 9.0 + 12.0, 1e-9);
    wt_nvml_mig_close(m);
    lib_close(&x);
    logcap_end(saved);
    WT_EQ_INT(logcap_count("MIG instance gone gpu=1", "gpu_instance=2 "), 1);
    WT_EQ_INT(logcap_count("MIG instance gone", NULL), 1);
    WT_EQ_INT(logcap_count("GPU in MIG mode gpu=1", NULL), 1);
    WT_EQ_INT(logcap_count("MIG mode gpu=0", NULL), 0);
    WT_EQ_INT(logcap_count(" warn ", NULL), 0);
    wt_batch_free(&b);
}

WT_TEST(fake_mig_instance_destroyed_between_lookup_and_reads_is_left_out_and_said_once)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    char procs[PATH_MAX], layout[PATH_MAX];
    snprintf(procs, sizeof procs, "%s/procs", wt_test_dir());
    snprintf(layout, sizeof layout, "%s/mig", wt_test_dir());
    wt_test_write(procs, "0 100 mem=1000 gi=1\n0 101 mem=1000 gi=2\n");
    wt_test_write(layout, "0 1\n0 2\n");
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_MIG", "0:2", 1);
    setenv("FAKE_NVML_PROCS_FILE", procs, 1);
    setenv("FAKE_NVML_MIG_FILE", layout, 1);
    struct lib x = lib_open(fake_path);
    struct wt_nvml_mig *m = NULL;
    WT_EQ_INT(wt_nvml_mig_open(x.dl, fake_path, 1, GAP, x.error_string, &m), 0);
    struct wt_batch b = {0};
    uint64_t e = 1000;
    for (int t = 0; t < 6; t++) {
        /* ticks 2 and 3: gi 2's handle is found, then answers NOT_FOUND */
        if (t == 2)
            wt_test_write(layout, "0 1\n0 2 stale\n");
        if (t == 4)
            wt_test_write(layout, "0 1\n0 2\n");
        wt_batch_clear(&b);
        WT_EQ_INT(poll(m, &x, 0, e, (int64_t)(t + 1) * S, &b), 0);
        WT_NEAR(sum_mig_energy(&b, 0), (double)(e - 1000) / 1000.0, 1e-9);
        if (t == 2 || t == 3)
            WT_ASSERT(isnan(mig_value(&b, WT_M_MIG_PROCESSES, 0, "2")));
        e += 2000;
    }
    /* 1 J each in ticks 1, 4, 5; gi 1 alone (2 J) in ticks 2 and 3 */
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 0, "1"), 3.0 + 4.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 0, "2"), 3.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_PROCESSES, 0, "2"), 1, 0); /* back, the same counter */
    wt_nvml_mig_close(m);
    lib_close(&x);
    logcap_end(saved);
    WT_EQ_INT(logcap_count("MIG instance gone gpu=0", "gpu_instance=2 "), 1);
    WT_EQ_INT(logcap_count(" warn ", NULL), 0);
    wt_batch_free(&b);
}

static void sleep_s(double sec)
{
    struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int gpm_live(const struct lib *x)
{
    void *p = must_sym(x->dl, "fake_nvml_gpm_live");
    int (*f)(void);
    memcpy(&f, &p, sizeof p);
    return f();
}

WT_TEST(fake_mig_sm_activity_per_gpu_instance_through_gpm)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    char procs[PATH_MAX], layout[PATH_MAX];
    snprintf(procs, sizeof procs, "%s/procs", wt_test_dir());
    snprintf(layout, sizeof layout, "%s/mig", wt_test_dir());
    wt_test_write(procs, "0 100 mem=1000 gi=1 sm=35\n0 101 mem=1000 gi=1 sm=25\n"
                         "0 102 mem=1000 gi=2\n");
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_MIG", "0:3", 1);
    setenv("FAKE_NVML_GPM", "1", 1);
    setenv("FAKE_NVML_PROCS_FILE", procs, 1);
    setenv("FAKE_NVML_MIG_FILE", layout, 1);
    struct lib x = lib_open(fake_path);
    struct wt_nvml_mig *m = NULL;
    WT_EQ_INT(wt_nvml_mig_open(x.dl, fake_path, 1, GAP, x.error_string, &m), 0);
    struct wt_batch b = {0};
    WT_EQ_INT(poll(m, &x, 0, 1000, 1 * S, &b), 0);
    WT_EQ_INT(count_readings(&b, WT_M_MIG_SM_ACTIVE_RATIO), 0); /* one sample: no interval */
    WT_EQ_INT(gpm_live(&x), 6);                                 /* two per GPU instance */
    sleep_s(0.12);
    wt_batch_clear(&b);
    WT_EQ_INT(poll(m, &x, 0, 2000, 2 * S, &b), 0);
    WT_NEAR(mig_value(&b, WT_M_MIG_SM_ACTIVE_RATIO, 0, "1"), 0.60, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_SM_ACTIVE_RATIO, 0, "2"), 0.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_SM_ACTIVE_RATIO, 0, "3"), 0.0, 1e-9);
    /* the GPM figure is not a split rule: the energy still goes by memory */
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 0, "1"), 0.667, 1e-9); /* 2:1, whole mJ */
    /* a poll under 100 ms after the last sample: no figure rather than a noisy one */
    wt_batch_clear(&b);
    WT_EQ_INT(poll(m, &x, 0, 3000, 3 * S, &b), 0);
    WT_EQ_INT(count_readings(&b, WT_M_MIG_SM_ACTIVE_RATIO), 0);
    /* gi 3 destroyed: its samples are freed */
    wt_test_write(layout, "0 1\n0 2\n");
    sleep_s(0.12);
    wt_batch_clear(&b);
    WT_EQ_INT(poll(m, &x, 0, 4000, 4 * S, &b), 0);
    WT_EQ_INT(gpm_live(&x), 4);
    WT_NEAR(mig_value(&b, WT_M_MIG_SM_ACTIVE_RATIO, 0, "1"), 0.60, 1e-9);
    wt_nvml_mig_close(m);
    WT_EQ_INT(gpm_live(&x), 0);
    lib_close(&x);
    logcap_end(saved);
    WT_EQ_INT(logcap_count(" warn ", NULL), 0);
    WT_EQ_INT(logcap_count("MIG utilization", NULL), 0);
    wt_batch_free(&b);
}

WT_TEST(fake_mig_without_gpm_has_no_utilization_said_once)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_MIG", "0:2,1:2", 1);
    struct lib x = lib_open(fake_path);
    struct wt_nvml_mig *m = NULL;
    WT_EQ_INT(wt_nvml_mig_open(x.dl, fake_path, 2, GAP, x.error_string, &m), 0);
    struct wt_batch b = {0};
    for (int t = 0; t < 3; t++) {
        WT_EQ_INT(poll(m, &x, 0, 1000 * (uint64_t)t, (t + 1) * S, &b), 0);
        WT_EQ_INT(poll(m, &x, 1, 1000 * (uint64_t)t, (t + 1) * S, &b), 0);
        sleep_s(0.11);
    }
    WT_EQ_INT(count_readings(&b, WT_M_MIG_SM_ACTIVE_RATIO), 0);
    WT_ASSERT(count_readings(&b, WT_M_MIG_MEM_USED_B) > 0);
    WT_EQ_INT(gpm_live(&x), 0);
    wt_nvml_mig_close(m);
    lib_close(&x);
    logcap_end(saved);
    WT_EQ_INT(
        logcap_count("MIG utilization: not supported (GPM needs Hopper or newer) gpu=0", NULL), 1);
    WT_EQ_INT(logcap_count("MIG utilization", NULL), 1);
    wt_batch_free(&b);
}

WT_TEST(fake_mig_processes_without_memory_split_equally_and_say_so)
{
    char procs[PATH_MAX];
    snprintf(procs, sizeof procs, "%s/procs", wt_test_dir());
    wt_test_write(procs, "0 100 mem=3000 gi=1\n0 101 mem=na gi=2\n");
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_MIG", "0:2", 1);
    setenv("FAKE_NVML_PROCS_FILE", procs, 1);
    struct lib x = lib_open(fake_path);
    struct wt_nvml_mig *m = NULL;
    WT_EQ_INT(wt_nvml_mig_open(x.dl, fake_path, 1, GAP, x.error_string, &m), 0);
    struct wt_batch b = {0};
    WT_EQ_INT(poll(m, &x, 0, 1000, 1 * S, &b), 0);
    wt_batch_clear(&b);
    WT_EQ_INT(poll(m, &x, 0, 3000, 2 * S, &b), 0);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 0, "1"), 1.0, 1e-9);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 0, "2"), 1.0, 1e-9);
    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "method", "equal"), 0);
    WT_NEAR(reading_value(&b, WT_M_MIG_ATTRIB_INFO, l), 1, 0);
    /* every process gone: all idle, and said */
    wt_test_write(procs, "%s", "");
    wt_batch_clear(&b);
    WT_EQ_INT(poll(m, &x, 0, 5000, 3 * S, &b), 0);
    WT_NEAR(mig_value(&b, WT_M_MIG_ENERGY_J, 0, "idle"), 2.0, 1e-9);
    gpu_labels(l, sizeof l, 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "method", "idle"), 0);
    WT_NEAR(reading_value(&b, WT_M_MIG_ATTRIB_INFO, l), 1, 0);
    wt_nvml_mig_close(m);
    lib_close(&x);
    wt_batch_free(&b);
}

WT_TEST(no_mig_calls_in_the_library_or_not_supported_mean_no_series_said_once)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_MIG", "0:2", 1);
    struct lib x = lib_open(minimal_path);
    struct wt_nvml_mig *m = NULL;
    WT_EQ_INT(wt_nvml_mig_open(x.dl, minimal_path, 2, GAP, x.error_string, &m), 0);
    struct wt_batch b = {0};
    for (int t = 0; t < 3; t++)
        WT_EQ_INT(poll(m, &x, 0, 1000 * (uint64_t)t, (t + 1) * S, &b), 0);
    WT_EQ_INT(b.len, 0);
    wt_nvml_mig_close(m);
    lib_close(&x);
    logcap_end(saved);
    WT_EQ_INT(logcap_count("has no nvmlDeviceGetMigMode", "MIG instances are not enumerated"), 1);

    /* a GPU before Ampere: NOT_SUPPORTED, not asked again */
    char calls[PATH_MAX];
    snprintf(calls, sizeof calls, "%s/calls", wt_test_dir());
    setenv("FAKE_NVML_CALL_LOG", calls, 1);
    setenv("FAKE_NVML_NOT_SUPPORTED", "mig", 1);
    x = lib_open(fake_path);
    WT_EQ_INT(wt_nvml_mig_open(x.dl, fake_path, 2, GAP, x.error_string, &m), 0);
    for (int t = 0; t < 3; t++)
        WT_EQ_INT(poll(m, &x, 0, 1000 * (uint64_t)t, (t + 1) * S, &b), 0);
    WT_EQ_INT(b.len, 0);
    wt_nvml_mig_close(m);
    lib_close(&x);
    size_t len = 0;
    char *log = wt_test_read(calls, &len);
    WT_ASSERT(log != NULL);
    int n = 0;
    for (const char *p = log; (p = strstr(p, "nvmlDeviceGetMigMode\n")); p++)
        n++;
    WT_EQ_INT(n, 1);
    free(log);
    wt_batch_free(&b);
}

WT_TEST(symbols_are_exported_by_the_fake)
{
    if (!fake_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake NVML is not built: run make first");
    void *dl = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
    WT_ASSERT(dl != NULL);
    for (size_t i = 0; i < wt_nvml_mig_symbol_count; i++)
        if (!dlsym(dl, wt_nvml_mig_symbols[i]))
            wt_test_fail(__FILE__, __LINE__, "fake lacks %s", wt_nvml_mig_symbols[i]);
    dlclose(dl);
}
