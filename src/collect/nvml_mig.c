/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's MIG instances and the split of each parent GPU's energy over them; see
 * nvml_mig.h. It owns only its own state: the library handle, the NVML session and the GPU
 * handles are the collector's; MIG handles are asked for again every poll and never kept.
 *
 * Cost on a GPU in MIG mode: one nvmlDeviceGetMigMode and one nvmlDeviceGetMaxMigDeviceCount,
 * then per handle index one lookup and, per instance, five calls (ids, UUID, memory,
 * processes), and with GPM one nvmlGpmMigSampleGet and one nvmlGpmMetricsGet per GPU instance.
 * A GPU not in MIG mode costs the mode call only.
 */
#include "collect/nvml_mig.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "core/clock.h"
#include "core/log.h"

#define MOD "nvml"
#define LOG_EVERY_NS (60 * WT_NS_PER_S)
#define MAX_HANDLES 64 /* MIG devices asked for per GPU (7 on A100/H100) */
#define PROCS_BUF 256

const char *wt_mig_method_name(enum wt_mig_method m)
{
    switch (m) {
    case WT_MIG_MEMORY:
        return "memory";
    case WT_MIG_EQUAL:
        return "equal";
    case WT_MIG_IDLE:
        break;
    }
    return "idle";
}

static struct wt_mig_slot *find_slot(struct wt_mig_ledger *l, const struct wt_mig_instance *x)
{
    for (unsigned int i = 0; i < l->n; i++) {
        struct wt_mig_slot *s = &l->slot[i];
        if (s->gi == x->gi && s->ci == x->ci && strcmp(s->mig_uuid, x->mig_uuid) == 0)
            return s;
    }
    if (l->n >= WT_MIG_MAX_SLOTS) {
        if (!l->full_said) {
            l->full_said = true;
            wt_warn(MOD,
                    "more than %d MIG instances seen on one GPU: gi=%u ci=%u mig_uuid=%s is "
                    "counted as idle",
                    WT_MIG_MAX_SLOTS, x->gi, x->ci, x->mig_uuid);
        }
        return NULL;
    }
    struct wt_mig_slot *s = &l->slot[l->n++];
    memset(s, 0, sizeof *s);
    s->gi = x->gi;
    s->ci = x->ci;
    snprintf(s->mig_uuid, sizeof s->mig_uuid, "%s", x->mig_uuid);
    return s;
}

unsigned int wt_mig_ledger_account(struct wt_mig_ledger *l, uint64_t parent_mj, int64_t t_ns,
                                   int64_t gap_ns, double busy, const struct wt_mig_instance *in,
                                   size_t n, enum wt_mig_method *method)
{
    struct wt_mig_slot *which[WT_MIG_MAX_SLOTS];
    uint64_t w[WT_MIG_MAX_SLOTS], parts[WT_MIG_MAX_SLOTS];
    size_t k = 0;
    unsigned int gone = 0;
    bool mem_ok = true;

    *method = WT_MIG_IDLE;
    for (unsigned int i = 0; i < l->n; i++)
        l->slot[i].gone = false;
    /* Which slots are present now (their counters are kept either way). */
    bool was[WT_MIG_MAX_SLOTS];
    unsigned int old_n = l->n;
    for (unsigned int i = 0; i < old_n; i++) {
        was[i] = l->slot[i].present;
        l->slot[i].present = false;
    }
    for (size_t i = 0; i < n; i++) {
        struct wt_mig_slot *s = find_slot(l, &in[i]);
        if (!s)
            continue;
        s->present = true;
        if (in[i].nprocs > 0 && k < WT_MIG_MAX_SLOTS) {
            which[k] = s;
            w[k] = in[i].procs_mem_b;
            mem_ok = mem_ok && in[i].procs_mem_known;
            k++;
        }
    }
    for (unsigned int i = 0; i < old_n; i++) {
        if (was[i] && !l->slot[i].present) {
            l->slot[i].gone = true;
            gone++;
        }
    }

    if (!l->started || parent_mj < l->last_mj) {
        /* the first interval, or the parent's series started again: a baseline */
        l->started = true;
        l->last_mj = parent_mj;
        l->last_t_ns = t_ns;
        return gone;
    }
    uint64_t energy = parent_mj - l->last_mj;
    bool gap = t_ns - l->last_t_ns > gap_ns;
    l->last_mj = parent_mj;
    l->last_t_ns = t_ns;
    if (k == 0 || gap) {
        l->idle_mj += energy;
        return gone;
    }
    uint64_t total = 0;
    for (size_t i = 0; mem_ok && i < k; i++)
        total += w[i];
    if (mem_ok && total > 0) {
        *method = WT_MIG_MEMORY;
    } else {
        *method = WT_MIG_EQUAL;
        for (size_t i = 0; i < k; i++)
            w[i] = 1;
    }
    uint64_t idle = 0;
    wt_attrib_split(energy, busy < 0 ? 1 : busy, w, k, parts, &idle);
    l->idle_mj += idle;
    for (size_t i = 0; i < k; i++)
        which[i]->energy_mj += parts[i];
    return gone;
}

/* ---- the collector part ---- */

struct fns {
    wt_nvml_mig_mode_fn *mode;
    wt_nvml_uint_fn *max_count;
    wt_nvml_mig_handle_fn *handle;
    wt_nvml_uint_fn *gi_id;
    wt_nvml_uint_fn *ci_id;
    wt_nvml_string_fn *uuid;
    wt_nvml_memory_fn *memory;
    wt_nvml_procs_fn *procs;
    /* GPM per GPU instance (optional) */
    wt_nvml_gpm_support_fn *gpm_support;
    wt_nvml_gpm_alloc_fn *gpm_alloc;
    wt_nvml_gpm_free_fn *gpm_free;
    wt_nvml_gpm_mig_sample_fn *gpm_sample;
    wt_nvml_gpm_metrics_fn *gpm_metrics;
};

const char *const wt_nvml_mig_symbols[] = {
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetComputeInstanceId",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc",
    "nvmlGpmSampleFree",
    "nvmlGpmMigSampleGet",
    "nvmlGpmMetricsGet",
};
const size_t wt_nvml_mig_symbol_count = sizeof wt_nvml_mig_symbols / sizeof wt_nvml_mig_symbols[0];

/* GPM samples of one GPU instance, used in turn (prev is the older). */
struct gi_gpm {
    bool used, seen;
    unsigned int gi;
    nvmlGpmSample_t smp[2];
    int cur;
    bool have_prev;
    int64_t prev_mono_ns;
    bool have_ratio; /* this tick's SM activity */
    double ratio;
};
#define MAX_GI 16
/* Two GPM samples closer than this are not turned into a figure (as nvml_fields.c). */
#define GPM_MIN_GAP_NS (100 * WT_NS_PER_MS)

struct gpu {
    bool seen;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    bool unsupported; /* nvmlDeviceGetMigMode answered NOT_SUPPORTED */
    bool mig_said;    /* "in MIG mode" said (once per mode change) */
    bool in_mig;
    bool mode_known;         /* in_mig is nvmlDeviceGetMigMode's last answer (a slow field) */
    bool gpm_known, gpm_off; /* GPM support asked; absent */
    struct gi_gpm gpm[MAX_GI];
    struct wt_mig_ledger ledger;
};

struct wt_nvml_mig {
    struct fns fn;
    bool off; /* the library lacks an entry point */
    wt_nvml_error_string_fn *error_string;
    char library[256];
    int64_t gap_ns;
    bool gpm_said; /* GPM's absence said */
    nvmlGpmMetricsGet_t *mg;
    unsigned int n;
    struct gpu *gpus;
    struct wt_ratelimit err_rl;
};

static const char *errstr(const struct wt_nvml_mig *m, nvmlReturn_t r)
{
    const char *s = m->error_string ? m->error_string(r) : NULL;
    return s ? s : "unknown error";
}

static void say_failed(struct wt_nvml_mig *m, const char *what, unsigned int gpu, nvmlReturn_t r)
{
    uint64_t suppressed = 0;
    if (wt_ratelimit_ok(&m->err_rl, wt_now_mono_ns(), &suppressed))
        wt_warn(MOD, "%s failed gpu=%u error=\"%s\" (%d) suppressed=%llu", what, gpu, errstr(m, r),
                (int)r, (unsigned long long)suppressed);
}

/* POSIX guarantees object and function pointers share a representation. */
#define RESOLVE(field, name)                                                                       \
    do {                                                                                           \
        void *p_ = dl ? dlsym(dl, name) : NULL;                                                    \
        memcpy(&m->fn.field, &p_, sizeof p_);                                                      \
        if (!p_ && !missing)                                                                       \
            missing = name;                                                                        \
    } while (0)

int wt_nvml_mig_open(void *dl, const char *library, unsigned int ngpus, int64_t gap_ns,
                     wt_nvml_error_string_fn *error_string, struct wt_nvml_mig **out)
{
    const char *missing = NULL;
    *out = NULL;
    struct wt_nvml_mig *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->gpus = calloc(ngpus ? ngpus : 1, sizeof *m->gpus);
    if (!m->gpus) {
        free(m);
        return -ENOMEM;
    }
    m->n = ngpus;
    m->gap_ns = gap_ns;
    m->error_string = error_string;
    m->err_rl.interval_ns = LOG_EVERY_NS;
    snprintf(m->library, sizeof m->library, "%s", library ? library : "the library");
    RESOLVE(mode, "nvmlDeviceGetMigMode");
    RESOLVE(max_count, "nvmlDeviceGetMaxMigDeviceCount");
    RESOLVE(handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    RESOLVE(gi_id, "nvmlDeviceGetGpuInstanceId");
    RESOLVE(ci_id, "nvmlDeviceGetComputeInstanceId");
    RESOLVE(uuid, "nvmlDeviceGetUUID");
    RESOLVE(memory, "nvmlDeviceGetMemoryInfo");
    RESOLVE(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    const char *required_missing = missing;
    RESOLVE(gpm_support, "nvmlGpmQueryDeviceSupport");
    RESOLVE(gpm_alloc, "nvmlGpmSampleAlloc");
    RESOLVE(gpm_free, "nvmlGpmSampleFree");
    RESOLVE(gpm_sample, "nvmlGpmMigSampleGet");
    RESOLVE(gpm_metrics, "nvmlGpmMetricsGet");
    if (!required_missing && missing) {
        m->gpm_said = true;
        wt_info(MOD,
                "%s has no %s: MIG instances have no utilization (no wattage_mig_sm_active_ratio)",
                m->library, missing);
    }
    missing = required_missing;
    if (missing) {
        m->off = true;
        wt_info(MOD, "%s has no %s: MIG instances are not enumerated (no wattage_mig_ series)",
                m->library, missing);
    }
    *out = m;
    return 0;
}

static void free_gi(struct wt_nvml_mig *m, struct gi_gpm *x)
{
    for (int k = 0; k < 2; k++)
        if (x->smp[k] && m->fn.gpm_free)
            m->fn.gpm_free(x->smp[k]);
    memset(x, 0, sizeof *x);
}

static void free_gpm(struct wt_nvml_mig *m, struct gpu *g)
{
    for (int i = 0; i < MAX_GI; i++)
        if (g->gpm[i].used)
            free_gi(m, &g->gpm[i]);
}

void wt_nvml_mig_close(struct wt_nvml_mig *m)
{
    if (!m)
        return;
    for (unsigned int i = 0; i < m->n; i++)
        free_gpm(m, &m->gpus[i]);
    free(m->mg);
    free(m->gpus);
    free(m);
}

/* A handle's answer that means its instance is gone (destroyed since it was enumerated). */
static bool gone_answer(nvmlReturn_t r)
{
    return r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT;
}

/* Reads one MIG handle into x. Returns false when the instance is not there (destroyed between
 * the calls) or its ids cannot be read; other failures leave a value out. */
static bool read_instance(struct wt_nvml_mig *m, unsigned int index, nvmlDevice_t h,
                          struct wt_mig_instance *x)
{
    memset(x, 0, sizeof *x);
    nvmlReturn_t r = m->fn.gi_id(h, &x->gi);
    if (r == NVML_SUCCESS)
        r = m->fn.ci_id(h, &x->ci);
    if (r != NVML_SUCCESS) {
        if (!gone_answer(r))
            say_failed(m, "nvmlDeviceGetGpuInstanceId", index, r);
        return false;
    }
    r = m->fn.uuid(h, x->mig_uuid, sizeof x->mig_uuid);
    if (r != NVML_SUCCESS) {
        if (!gone_answer(r))
            say_failed(m, "nvmlDeviceGetUUID (MIG)", index, r);
        return false; /* without its UUID an instance cannot be told from a new one */
    }
    nvmlMemory_t mem;
    memset(&mem, 0, sizeof mem);
    r = m->fn.memory(h, &mem);
    if (r == NVML_SUCCESS) {
        x->have_mem = true;
        x->mem_used_b = mem.used;
        x->mem_total_b = mem.total;
    } else if (gone_answer(r)) {
        return false;
    } else {
        say_failed(m, "nvmlDeviceGetMemoryInfo (MIG)", index, r);
    }
    nvmlProcessInfo_t buf[PROCS_BUF];
    unsigned int count = PROCS_BUF;
    r = m->fn.procs(h, &count, buf);
    if (gone_answer(r))
        return false;
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
        /* more processes than we list: their count is known, their memory not all */
        x->nprocs = count;
        x->procs_mem_known = false;
        return true;
    }
    if (r != NVML_SUCCESS) {
        /* not known to be busy: counted as idle this poll */
        say_failed(m, "nvmlDeviceGetComputeRunningProcesses_v3 (MIG)", index, r);
        return true;
    }
    x->nprocs = count < PROCS_BUF ? count : PROCS_BUF;
    x->procs_mem_known = true;
    for (unsigned int i = 0; i < x->nprocs; i++) {
        if (buf[i].usedGpuMemory == ~0ULL)
            x->procs_mem_known = false;
        else
            x->procs_mem_b += buf[i].usedGpuMemory;
    }
    return true;
}

/* GPM is absent on g: its samples freed, said once per collector. */
static void gpm_absent(struct wt_nvml_mig *m, struct gpu *g, unsigned int index, const char *why)
{
    free_gpm(m, g);
    g->gpm_off = true;
    if (m->gpm_said)
        return;
    m->gpm_said = true;
    wt_info(MOD, "MIG utilization: %s gpu=%u uuid=%s: no wattage_mig_sm_active_ratio", why, index,
            g->uuid);
}

/* One GPM sample per GPU instance of in, and each one's SM activity since its previous one. */
static int poll_gpm(struct wt_nvml_mig *m, struct gpu *g, unsigned int index, nvmlDevice_t dev,
                    const struct wt_mig_instance *in, size_t n)
{
    for (int i = 0; i < MAX_GI; i++)
        g->gpm[i].seen = g->gpm[i].have_ratio = false;
    if (g->gpm_off)
        return 0;
    if (!m->fn.gpm_support || !m->fn.gpm_alloc || !m->fn.gpm_free || !m->fn.gpm_sample ||
        !m->fn.gpm_metrics) {
        g->gpm_off = true; /* said at open */
        return 0;
    }
    if (!g->gpm_known) {
        nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION, .isSupportedDevice = 0};
        nvmlReturn_t r = m->fn.gpm_support(dev, &sup);
        if (r == NVML_ERROR_NOT_SUPPORTED || (r == NVML_SUCCESS && !sup.isSupportedDevice)) {
            gpm_absent(m, g, index, "not supported (GPM needs Hopper or newer)");
            return 0;
        }
        if (r != NVML_SUCCESS) {
            say_failed(m, "nvmlGpmQueryDeviceSupport", index, r);
            return 0;
        }
        g->gpm_known = true;
    }
    if (!m->mg && !(m->mg = malloc(sizeof *m->mg)))
        return -ENOMEM;
    int64_t now = wt_now_mono_ns();
    for (size_t i = 0; i < n; i++) {
        struct gi_gpm *x = NULL, *free_slot = NULL;
        for (int k = 0; k < MAX_GI && !x; k++) {
            if (g->gpm[k].used && g->gpm[k].gi == in[i].gi)
                x = &g->gpm[k];
            else if (!g->gpm[k].used && !free_slot)
                free_slot = &g->gpm[k];
        }
        if (x && x->seen)
            continue; /* another compute instance of the same GPU instance */
        if (!x) {
            if (!free_slot)
                continue;
            x = free_slot;
            x->used = true;
            x->gi = in[i].gi;
            for (int k = 0; k < 2; k++) {
                nvmlReturn_t r = m->fn.gpm_alloc(&x->smp[k]);
                if (r != NVML_SUCCESS) {
                    x->smp[k] = NULL;
                    free_gi(m, x);
                    say_failed(m, "nvmlGpmSampleAlloc", index, r);
                    x = NULL;
                    break;
                }
            }
            if (!x)
                continue;
        }
        x->seen = true;
        if (x->have_prev && now - x->prev_mono_ns < GPM_MIN_GAP_NS)
            continue; /* too close to the last sample: the next tick spans both */
        nvmlReturn_t r = m->fn.gpm_sample(dev, x->gi, x->smp[x->cur]);
        if (r == NVML_ERROR_NOT_SUPPORTED) {
            gpm_absent(m, g, index, errstr(m, r));
            return 0;
        }
        if (gone_answer(r))
            continue; /* destroyed since it was enumerated */
        if (r != NVML_SUCCESS) {
            say_failed(m, "nvmlGpmMigSampleGet", index, r);
            continue;
        }
        if (x->have_prev) {
            nvmlGpmMetricsGet_t *mg = m->mg;
            memset(mg, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + sizeof mg->metrics[0]);
            mg->version = NVML_GPM_METRICS_GET_VERSION;
            mg->numMetrics = 1;
            mg->sample1 = x->smp[1 - x->cur];
            mg->sample2 = x->smp[x->cur];
            mg->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
            r = m->fn.gpm_metrics(mg);
            if (r == NVML_SUCCESS)
                r = mg->metrics[0].nvmlReturn;
            double v = mg->metrics[0].value / 100.0; /* raw: percent */
            if (r == NVML_SUCCESS && isfinite(v)) {
                x->have_ratio = true;
                x->ratio = v < 0 ? 0 : v > 1 ? 1 : v;
            } else if (r == NVML_ERROR_NOT_SUPPORTED) {
                gpm_absent(m, g, index, "SM activity per GPU instance: Not Supported");
                return 0;
            } else {
                say_failed(m, "nvmlGpmMetricsGet (MIG)", index, r ? r : NVML_ERROR_UNKNOWN);
            }
        }
        x->have_prev = true;
        x->prev_mono_ns = now;
        x->cur = 1 - x->cur;
    }
    for (int k = 0; k < MAX_GI; k++)
        if (g->gpm[k].used && !g->gpm[k].seen)
            free_gi(m, &g->gpm[k]); /* its instance is gone */
    return 0;
}

static int add_slot_labels(char *l, size_t n, const char *labels, const struct wt_mig_slot *s)
{
    char gi[16], ci[16];
    snprintf(gi, sizeof gi, "%u", s->gi);
    snprintf(ci, sizeof ci, "%u", s->ci);
    snprintf(l, n, "%s", labels);
    if (wt_labels_add(l, n, "gpu_instance", gi) || wt_labels_add(l, n, "compute_instance", ci) ||
        wt_labels_add(l, n, "mig_uuid", s->mig_uuid))
        return -E2BIG;
    return 0;
}

/* The GPU's readings; info: with the method gauge (in MIG mode). */
static int emit(const struct gpu *g, const struct wt_mig_instance *in, size_t n, bool info,
                enum wt_mig_method method, const char *labels, int64_t t_ns, struct wt_batch *out)
{
    const struct wt_mig_ledger *l = &g->ledger;
    char lb[WT_LABELS_LEN];
    int rc = 0;
    for (unsigned int i = 0; i < l->n; i++) {
        const struct wt_mig_slot *s = &l->slot[i];
        if (add_slot_labels(lb, sizeof lb, labels, s) != 0)
            continue; /* labels too long: this one series is left out, not the poll */
        rc |= wt_batch_add(out, WT_M_MIG_ENERGY_J, lb, t_ns, (double)s->energy_mj / 1000.0);
        for (size_t k = 0; s->present && k < n; k++) {
            if (in[k].gi != s->gi || in[k].ci != s->ci || strcmp(in[k].mig_uuid, s->mig_uuid))
                continue;
            rc |= wt_batch_add(out, WT_M_MIG_PROCESSES, lb, t_ns, in[k].nprocs);
            for (int j = 0; j < MAX_GI; j++)
                if (g->gpm[j].used && g->gpm[j].have_ratio && g->gpm[j].gi == s->gi)
                    rc |= wt_batch_add(out, WT_M_MIG_SM_ACTIVE_RATIO, lb, t_ns, g->gpm[j].ratio);
            if (in[k].have_mem) {
                rc |= wt_batch_add(out, WT_M_MIG_MEM_USED_B, lb, t_ns, (double)in[k].mem_used_b);
                rc |= wt_batch_add(out, WT_M_MIG_MEM_TOTAL_B, lb, t_ns, (double)in[k].mem_total_b);
            }
            break;
        }
    }
    snprintf(lb, sizeof lb, "%s", labels);
    if (wt_labels_add(lb, sizeof lb, "gpu_instance", "idle") == 0)
        rc |= wt_batch_add(out, WT_M_MIG_ENERGY_J, lb, t_ns, (double)l->idle_mj / 1000.0);
    snprintf(lb, sizeof lb, "%s", labels);
    if (info && wt_labels_add(lb, sizeof lb, "method", wt_mig_method_name(method)) == 0)
        rc |= wt_batch_add(out, WT_M_MIG_ATTRIB_INFO, lb, t_ns, 1);
    return rc;
}

int wt_nvml_mig_poll_gpu(struct wt_nvml_mig *m, unsigned int index, nvmlDevice_t dev,
                         const char *uuid, const char *labels, bool slow, bool have_energy,
                         uint64_t energy_mj, double busy, int64_t t_ns, struct wt_batch *out)
{
    if (!m || m->off || index >= m->n)
        return 0;
    struct gpu *g = &m->gpus[index];
    if (!g->seen || strcmp(g->uuid, uuid) != 0) {
        /* another board at the index (or the first poll): its split starts afresh */
        free_gpm(m, g);
        memset(g, 0, sizeof *g);
        g->seen = true;
        snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    }
    if (g->unsupported)
        return 0;
    unsigned int cur = g->in_mig ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, pending = 0;
    nvmlReturn_t r = slow || !g->mode_known ? m->fn.mode(dev, &cur, &pending) : NVML_SUCCESS;
    if (r == NVML_ERROR_NOT_SUPPORTED) {
        g->unsupported = true;
        wt_debug(MOD, "MIG: not supported gpu=%u uuid=%s", index, g->uuid);
        return 0;
    }
    g->mode_known = r == NVML_SUCCESS;
    if (r != NVML_SUCCESS) {
        say_failed(m, "nvmlDeviceGetMigMode", index, r);
        return 0;
    }
    bool in_mig = cur == NVML_DEVICE_MIG_ENABLE;
    if (in_mig != g->in_mig) {
        wt_info(MOD, "GPU %s MIG mode gpu=%u uuid=%s%s", in_mig ? "in" : "out of", index, g->uuid,
                in_mig
                    ? ": its energy is split over its instances (wattage_mig_energy_joules_total)"
                    : "");
        g->in_mig = in_mig;
        g->ledger.started = false; /* the next MIG poll is a new baseline */
    }
    if (!in_mig) {
        free_gpm(m, g);
        /* counters of instances seen before stay (frozen); nothing is split */
        if (g->ledger.n == 0)
            return 0;
        return emit(g, NULL, 0, false, WT_MIG_IDLE, labels, t_ns, out) ? -ENOMEM : 0;
    }
    unsigned int max = 0;
    r = m->fn.max_count(dev, &max);
    if (r != NVML_SUCCESS) {
        say_failed(m, "nvmlDeviceGetMaxMigDeviceCount", index, r);
        return 0;
    }
    if (max > MAX_HANDLES)
        max = MAX_HANDLES;
    struct wt_mig_instance in[MAX_HANDLES];
    size_t n = 0;
    for (unsigned int i = 0; i < max; i++) {
        nvmlDevice_t h = NULL;
        r = m->fn.handle(dev, i, &h);
        if (gone_answer(r))
            continue; /* no instance at this index */
        if (r != NVML_SUCCESS) {
            say_failed(m, "nvmlDeviceGetMigDeviceHandleByIndex", index, r);
            /* the instances cannot all be known: this poll's energy waits for the next one */
            return 0;
        }
        if (read_instance(m, index, h, &in[n]))
            n++;
    }
    if (poll_gpm(m, g, index, dev, in, n) != 0)
        return -ENOMEM;
    enum wt_mig_method method = WT_MIG_IDLE;
    if (!have_energy) {
        /* no energy this tick: nothing is split; the next tick takes its share */
        return emit(g, in, n, true, method, labels, t_ns, out) ? -ENOMEM : 0;
    }
    bool baseline = !g->ledger.started || energy_mj < g->ledger.last_mj;
    unsigned int gone =
        wt_mig_ledger_account(&g->ledger, energy_mj, t_ns, m->gap_ns, busy, in, n, &method);
    for (unsigned int i = 0; gone && i < g->ledger.n; i++) {
        struct wt_mig_slot *s = &g->ledger.slot[i];
        if (!s->gone)
            continue;
        s->gone = false;
        wt_info(MOD,
                "MIG instance gone gpu=%u uuid=%s gpu_instance=%u compute_instance=%u "
                "mig_uuid=%s: its energy counter stays at %.3f J",
                index, g->uuid, s->gi, s->ci, s->mig_uuid, (double)s->energy_mj / 1000.0);
    }
    /* a baseline split nothing: no method yet */
    return emit(g, in, n, !baseline, method, labels, t_ns, out) ? -ENOMEM : 0;
}
