/* SPDX-License-Identifier: MIT */
/*
 * AMD collector: loads ROCm SMI with dlopen, resolves each entry point by name (three required,
 * the rest probed: 5.2.3 lacks rsmi_dev_current_socket_power_get), keeps one rsmi_init session
 * for its whole life, groups the devices into physical packages and turns each device's state
 * into wattage_gpu_* readings every poll (see collect/rocm.h for the series).
 *
 * Energy is counter first, per package: the accumulator of the package's primary device (MI250X
 * second dies and MI300X secondary partitions read 0 or nothing), checked against power x time
 * at every tick; power is integrated always, so the integrated series exists beside it and
 * carries on alone for a counter that failed its check.
 *
 * A call that answers NOT_SUPPORTED, NOT_YET_IMPLEMENTED or PERMISSION is not asked again on
 * that device and its metric is absent. Any other failure is a fault of this tick: it is logged
 * (rate-limited), and a device whose every call failed is reported down (gpu_up 0) until it
 * answers again. Nothing here stops the daemon.
 */
#include "collect/rocm.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collect/amdsmi.h"
#include "collect/attrib.h"
#include "collect/cadence.h"
#include "collect/collector.h"
#include "collect/nvml.h"
#include "collect/procfs.h"
#include "collect/rocm.h"
#include "collect/rocm_api.h"
#include "core/clock.h"
#include "core/energy.h"
#include "core/log.h"

#define MOD "amd"
#define LOG_EVERY_NS (60 * WT_NS_PER_S)
#define NAME_LEN 128

struct rsmi_fns {
    wt_rsmi_init_fn *init;
    wt_rsmi_shut_down_fn *shut_down;
    wt_rsmi_num_devices_fn *num_devices;
    wt_rsmi_status_string_fn *status_string;
    wt_rsmi_name_fn *name;
    wt_rsmi_u64_fn *unique_id;
    wt_rsmi_u64_fn *pci_id;
    wt_rsmi_energy_fn *energy;
    wt_rsmi_u64_fn *socket_power;
    wt_rsmi_sensor_u64_fn *power_ave;
    wt_rsmi_temp_fn *temp;
    wt_rsmi_u32_fn *busy;
    wt_rsmi_sensor_u64_fn *cap;
    wt_rsmi_cap_range_fn *cap_range;
    wt_rsmi_u64_fn *cap_default;
    wt_rsmi_cap_set_fn *cap_set;
    wt_rsmi_u64_fn *ecc_enabled;
    wt_rsmi_ecc_count_fn *ecc_count;
    wt_rsmi_proc_info_fn *proc_info;
    wt_rsmi_proc_gpus_fn *proc_gpus;
};

_Static_assert(sizeof(void *) == sizeof(wt_rsmi_init_fn *), "dlsym results must fit");

static const struct {
    const char *name;
    bool required;
    size_t offset;
} symbols[] = {
#define SYM(field, req, sym)                                                                       \
    {                                                                                              \
        sym, req, offsetof(struct rsmi_fns, field)                                                 \
    }
    SYM(init, true, "rsmi_init"),
    SYM(shut_down, true, "rsmi_shut_down"),
    SYM(num_devices, true, "rsmi_num_monitor_devices"),
    SYM(status_string, false, "rsmi_status_string"),
    SYM(name, false, "rsmi_dev_name_get"),
    SYM(unique_id, false, "rsmi_dev_unique_id_get"),
    SYM(pci_id, false, "rsmi_dev_pci_id_get"),
    SYM(energy, false, "rsmi_dev_energy_count_get"),
    /* ROCm 6.0 and later; power_ave is "deprecated" there but still answers on MI200 */
    SYM(socket_power, false, "rsmi_dev_current_socket_power_get"),
    SYM(power_ave, false, "rsmi_dev_power_ave_get"),
    SYM(temp, false, "rsmi_dev_temp_metric_get"),
    SYM(busy, false, "rsmi_dev_busy_percent_get"),
    SYM(cap, false, "rsmi_dev_power_cap_get"),
    SYM(cap_range, false, "rsmi_dev_power_cap_range_get"),
    /* the power capper's (wt_rocm_caps_open); 5.2.3 has both */
    SYM(cap_default, false, "rsmi_dev_power_cap_default_get"),
    SYM(cap_set, false, "rsmi_dev_power_cap_set"),
    SYM(ecc_enabled, false, "rsmi_dev_ecc_enabled_get"),
    SYM(ecc_count, false, "rsmi_dev_ecc_count_get"),
    /* the KFD's process list (5.2.3 has both) */
    SYM(proc_info, false, "rsmi_compute_process_info_get"),
    SYM(proc_gpus, false, "rsmi_compute_process_gpus_get"),
#undef SYM
};
#define N_SYMBOLS (sizeof symbols / sizeof symbols[0])

/* Per-device calls; a bit set in dev.unsupported is not asked again. */
enum feature {
    F_ENERGY,
    F_SOCKET,
    F_POWER_AVE,
    F_EDGE,
    F_JUNCTION,
    F_MEMTEMP,
    F_BUSY,
    F_CAP,
    F_ECC,
    F_CAP_RANGE,
};

/*
 * Each field's cadence (collect/cadence.h). Slow: what changes only when someone sets it (the
 * power cap and its range) or slowly (the ECC counts, which blocks have ECC), read at start,
 * every collectors.amd.slow_interval, when a device answers again after failing, and after
 * wattage's capper sets or restores a cap (wt_rocm_slow_refresh). Start: read when the devices
 * are found (the identity that names and groups them).
 */
static const struct wt_field_cadence cadence[] = {
    {"name", WT_CADENCE_START},
    {"unique_id", WT_CADENCE_START},
    {"pci_bus_id", WT_CADENCE_START},
    {"power", WT_CADENCE_TICK},
    {"energy", WT_CADENCE_TICK},
    {"temperature", WT_CADENCE_TICK},
    {"memory_temperature", WT_CADENCE_TICK},
    {"utilization", WT_CADENCE_TICK},
    {"processes", WT_CADENCE_TICK},
    {"power_limit", WT_CADENCE_SLOW},
    {"power_limit_range", WT_CADENCE_SLOW},
    {"ecc_enabled", WT_CADENCE_SLOW},
    {"ecc_volatile", WT_CADENCE_SLOW},
};
#define N_CADENCE (sizeof cadence / sizeof cadence[0])
#define DEFAULT_SLOW_NS (60 * WT_NS_PER_S)

/* Bumped by wt_rocm_slow_refresh; each collector reads its slow fields when it changes. */
static atomic_uint slow_refresh_gen;

void wt_rocm_slow_refresh(void)
{
    atomic_fetch_add(&slow_refresh_gen, 1);
}

struct dev {
    unsigned int index;
    bool up;
    char name[NAME_LEN];
    char uuid[48];
    char pci[32];
    struct wt_rocm_ident id;
    unsigned int primary; /* index of the package's primary (itself for a primary) */
    unsigned int partition;
    char labels[WT_LABELS_LEN];      /* gpu,uuid,model */
    char info_labels[WT_LABELS_LEN]; /* + vendor, pci_bus_id, package, partition */
    uint32_t unsupported;            /* 1 << enum feature */
    /* the slow fields as last read (cadence[]): published at every tick between reads */
    bool slow_pending; /* read them at the next tick (a failure, or back after an outage) */
    bool have_cap, have_range, have_ecc;
    uint64_t cap_uw;
    double cap_min_w, cap_max_w;
    uint64_t ecc_blocks;  /* the blocks with ECC enabled that answer their counts */
    uint64_t ecc_nocount; /* enabled blocks without a counter: not asked again */
    uint64_t ecc[2];      /* corrected, uncorrected: summed over the blocks */
    /* package energy, on the primary */
    bool counter_ok; /* false once the check failed: integration alone */
    struct wt_energy_counter counter;
    uint64_t first_raw;
    double uj_per_count;
    struct wt_rocm_check check;
    struct wt_energy_integral integral;
    double integral_seen_j; /* integral.total_j at the last tick */
    uint64_t gaps_seen;
    /* this tick's counter, read ahead of the other calls */
    bool have_raw;
    uint64_t raw, raw_ts;
    int64_t read_end_ns; /* CLOCK_REALTIME when the read returned */
    struct wt_ratelimit err_rl;
    unsigned int failed_calls; /* this tick's */
    uint64_t failed_ticks;
    double busy; /* this tick's busy ratio, 0..1; -1 unknown */
    /* the package's energy as last published (on the primary): what attribution splits */
    int pub_src; /* 0 none yet, PUB_COUNTER or PUB_INTEGRATED */
    double pub_j;
    /* attribution (collect/attrib.h), on the primary: the published energy at the last split */
    int attrib_src;
    uint64_t attrib_uj;
    int64_t attrib_at;
    struct wt_attrib_starts starts; /* the start times of the last split's processes */
};
#define PUB_COUNTER 1
#define PUB_INTEGRATED 2

struct rocm_state {
    void *dl;
    bool amdsmi; /* AMD SMI behind ROCm SMI's calls (collect/amdsmi.h), dl NULL */
    char library[256];
    struct rsmi_fns fn;
    bool inited;
    unsigned int n, packages;
    struct dev *devs;
    int64_t max_gap_ns;
    int64_t procs_at; /* CLOCK_MONOTONIC of the last process list read */
    bool procs_off;   /* the library does not list processes: not asked again */
    struct wt_ratelimit procs_rl;
    struct wt_attrib *attrib; /* per-process energy; NULL when off or without memory */
    int64_t attrib_gap_ns;
    int64_t split_t_ns; /* the last split's time (0: none yet) */
    int64_t interval_ns;
    struct wt_slow_timer slow; /* collectors.amd.slow_interval */
    unsigned int refresh_seen; /* slow_refresh_gen at the last slow read */
};

/* ---- the GPUs' processes (see wt_rocm_processes) ---- */

#define PROCS_EVERY_NS WT_NS_PER_S
#define PROCS_MAX 1024 /* processes read in one list; more are left out */

static pthread_mutex_t procs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wt_gpu_procs *procs_list;
static size_t procs_n;
static int64_t procs_t;
static const void *procs_owner;

int wt_rocm_processes(struct wt_gpu_procs *out, size_t cap, size_t *n, int64_t *t_ns)
{
    int rc = -ENODATA;
    *n = 0;
    pthread_mutex_lock(&procs_mu);
    if (procs_list) {
        *n = procs_n < cap ? procs_n : cap;
        memcpy(out, procs_list, *n * sizeof *out);
        *t_ns = procs_t;
        rc = 0;
    }
    pthread_mutex_unlock(&procs_mu);
    return rc;
}

/* Replaces the published list with list (taken; NULL withdraws it) when s owns it or none does. */
static void procs_publish(const struct rocm_state *s, struct wt_gpu_procs *list, size_t n,
                          int64_t t_ns)
{
    struct wt_gpu_procs *old = NULL;
    pthread_mutex_lock(&procs_mu);
    if (!procs_owner || procs_owner == s || list) {
        old = procs_list;
        procs_list = list;
        procs_n = n;
        procs_t = t_ns;
        procs_owner = list ? s : NULL;
        list = NULL;
    }
    pthread_mutex_unlock(&procs_mu);
    free(old);
    free(list);
}

static const char *errstr(const struct rocm_state *s, rsmi_status_t r);
static bool attribute(struct rocm_state *s, const struct wt_gpu_procs *list, int64_t t_ns);

/*
 * Reads the library's process list (rsmi_compute_process_info_get, then each process's devices
 * with rsmi_compute_process_gpus_get) into one struct wt_gpu_procs per device and publishes it.
 * A library without the calls, or one that answers NOT_SUPPORTED, is not asked again; other
 * failures keep the last list and are said at most once a minute.
 */
static bool read_procs(struct rocm_state *s, int64_t t_ns)
{
    if (s->procs_off || !s->fn.proc_info || !s->fn.proc_gpus)
        return false;
    int64_t now = wt_now_mono_ns();
    /* A tick may come a little early on the grid: 0.9 s counts as the second. */
    if (s->procs_at && now - s->procs_at < PROCS_EVERY_NS / 10 * 9)
        return false;
    s->procs_at = now;
    uint32_t cnt = 0;
    rsmi_status_t r = s->fn.proc_info(NULL, &cnt);
    wt_rsmi_process_info_t *pi = NULL;
    struct wt_gpu_procs *list = NULL;
    if (r == RSMI_STATUS_SUCCESS && cnt > PROCS_MAX)
        cnt = PROCS_MAX;
    if (r == RSMI_STATUS_SUCCESS && cnt) {
        /* room for a release whose struct grew (rocm_api.h) */
        pi = calloc((size_t)cnt * WT_RSMI_PROC_SLACK, sizeof *pi);
        if (!pi)
            return false;
        r = s->fn.proc_info(pi, &cnt);
        if (r == RSMI_STATUS_INSUFFICIENT_SIZE) /* more came since: these are listed */
            r = RSMI_STATUS_SUCCESS;
    }
    if (r == RSMI_STATUS_NOT_SUPPORTED || r == RSMI_STATUS_NOT_YET_IMPLEMENTED) {
        wt_info(MOD, "%s does not list GPU processes (%s): no AMD process list", s->library,
                errstr(s, r));
        s->procs_off = true;
        free(pi);
        return false;
    }
    if (r != RSMI_STATUS_SUCCESS) {
        uint64_t held = 0;
        if (wt_ratelimit_ok(&s->procs_rl, now, &held))
            wt_warn(MOD,
                    "rsmi_compute_process_info_get failed: %s (%d); the last list is kept "
                    "suppressed=%" PRIu64,
                    errstr(s, r), (int)r, held);
        free(pi);
        return false;
    }
    list = calloc(s->n, sizeof *list);
    if (!list) {
        free(pi);
        return false;
    }
    for (unsigned int i = 0; i < s->n; i++) {
        list[i].gpu = i;
        snprintf(list[i].uuid, sizeof list[i].uuid, "%s", s->devs[i].uuid);
    }
    for (uint32_t k = 0; k < cnt; k++) {
        uint32_t pid = pi[k].process_id, dv[64], nd = 64;
        rsmi_status_t g = s->fn.proc_gpus(pid, dv, &nd);
        if (g == RSMI_STATUS_INSUFFICIENT_SIZE)
            g = RSMI_STATUS_SUCCESS;
        /* NOT_FOUND: the process ended between the two calls */
        for (uint32_t j = 0; g == RSMI_STATUS_SUCCESS && j < nd && j < 64; j++) {
            if (dv[j] >= s->n)
                continue;
            struct wt_gpu_procs *p = &list[dv[j]];
            bool seen = false;
            for (unsigned int x = 0; x < p->npids && !seen; x++)
                seen = p->pids[x] == pid;
            if (seen || p->npids == WT_NVML_MAX_PROCS)
                continue;
            p->pids[p->npids] = pid;
            /* the library gives a process's VRAM over all its GPUs: per GPU only when one */
            p->mem_b[p->npids] = nd == 1 ? pi[k].vram_usage : WT_NVML_NO_MEMORY;
            p->instance[p->npids] = WT_NVML_NO_INSTANCE;
            p->npids++;
        }
    }
    free(pi);
    bool split = attribute(s, list, t_ns);
    procs_publish(s, list, s->n, wt_now_real_ns());
    return split;
}

/* ---- attribution: each package's energy split over the processes on its devices ---- */

/*
 * Splits package p's published energy since its last split (integer µJ) over the processes
 * listed on any of its devices: by VRAM where the library gives each process's own (a process
 * on one GPU), else equally, scaled by the package's busy ratio (the mean of its devices') where
 * known. The library has no per-process utilization that 5.2.3 fills for every release, so
 * there is no "utilization" method here. Energy across a gap (no split for attrib_gap_ns) is
 * idle, and a package whose energy source changed (the counter dropped for the integral) starts
 * again from a baseline. False when nothing was accounted.
 */
static bool attribute_package(struct rocm_state *s, struct dev *p, const struct wt_gpu_procs *list,
                              int64_t t_ns)
{
    if (!p->pub_src || p->index >= WT_ATTRIB_MAX_DEVICES || !(p->pub_j >= 0))
        return false;
    uint64_t cur = (uint64_t)llround(p->pub_j * 1e6); /* µJ */
    if (p->attrib_src != p->pub_src || cur < p->attrib_uj) {
        p->attrib_src = p->pub_src;
        p->attrib_uj = cur;
        p->attrib_at = t_ns;
        return false;
    }
    struct wt_attrib_share sh[WT_NVML_MAX_PROCS];
    uint64_t mem[WT_NVML_MAX_PROCS];
    bool mem_ok = true;
    size_t n = 0;
    double busy = 0;
    unsigned int nbusy = 0;
    for (unsigned int i = 0; i < s->n; i++) {
        const struct dev *d = &s->devs[i];
        if (d->primary != p->index)
            continue;
        if (d->busy >= 0) {
            busy += d->busy;
            nbusy++;
        }
        const struct wt_gpu_procs *g = &list[i];
        for (unsigned int k = 0; k < g->npids; k++) {
            size_t j = 0;
            while (j < n && sh[j].pid != g->pids[k])
                j++;
            if (j == n) {
                if (n == WT_NVML_MAX_PROCS)
                    continue;
                sh[n] = (struct wt_attrib_share){g->pids[k], 0, 1, -1};
                mem[n++] = 0;
            }
            if (g->mem_b[k] == WT_NVML_NO_MEMORY)
                mem_ok = false;
            else
                mem[j] += g->mem_b[k];
        }
    }
    /* each process's start time (its identity with the pid), kept while it stays listed */
    wt_attrib_starts_fill(&p->starts, sh, n);
    uint64_t mem_total = 0;
    for (size_t j = 0; mem_ok && j < n; j++)
        mem_total += mem[j];
    enum wt_attrib_method m = WT_ATTRIB_EQUAL;
    if (mem_ok && mem_total > 0) {
        m = WT_ATTRIB_MEMORY;
        for (size_t j = 0; j < n; j++)
            sh[j].weight = mem[j];
    }
    double b = nbusy ? busy / nbusy : 1;
    if (t_ns - p->attrib_at > s->attrib_gap_ns)
        b = 0;
    char idx[16], labels[WT_LABELS_LEN];
    snprintf(idx, sizeof idx, "%u", p->index);
    if (wt_labels(labels, sizeof labels, "gpu", idx, "uuid", p->uuid, NULL) != 0)
        (void)wt_labels(labels, sizeof labels, "gpu", idx, NULL);
    if (wt_attrib_account(s->attrib, p->index, labels, t_ns, cur - p->attrib_uj, b, m, sh, n) != 0)
        return false; /* not accounted: the next split takes this one's energy too */
    p->attrib_uj = cur;
    p->attrib_at = t_ns;
    return true;
}

static bool attribute(struct rocm_state *s, const struct wt_gpu_procs *list, int64_t t_ns)
{
    bool split = false;
    for (unsigned int i = 0; s->attrib && i < s->n; i++)
        if (s->devs[i].primary == i && s->devs[i].up)
            split |= attribute_package(s, &s->devs[i], list, t_ns);
    return split;
}

/* ---- pure parts ---- */

double wt_rocm_uj_per_count(float resolution)
{
    if (!isfinite(resolution) || resolution <= 0)
        return 0;
    /* 15.3f, the library's constant: the hardware counts 2^-16 J. */
    if (fabsf(resolution - 15.3f) < 1e-4f)
        return 1e6 / 65536.0;
    return (double)resolution;
}

static bool same_package(const struct wt_rocm_ident *a, const struct wt_rocm_ident *b)
{
    if (a->have_uid && b->have_uid)
        return a->uid == b->uid;
    if (a->have_bdf && b->have_bdf)
        return (a->bdf >> 32) == (b->bdf >> 32) && (a->bdf & 0xfff8u) == (b->bdf & 0xfff8u);
    return false;
}

/* The order within a package: partition, then PCI function, then index. */
static uint64_t rank(const struct wt_rocm_ident *a, size_t i)
{
    uint64_t part = a->have_bdf ? WT_RSMI_BDF_PARTITION(a->bdf) : 0;
    uint64_t func = a->have_bdf ? WT_RSMI_BDF_FUNC(a->bdf) : 0;
    return part << 40 | func << 32 | (uint64_t)i;
}

void wt_rocm_group(const struct wt_rocm_ident *ids, size_t n, unsigned int *primary)
{
    for (size_t i = 0; i < n; i++) {
        size_t best = i;
        for (size_t j = 0; j < n; j++)
            if (j != i && same_package(&ids[i], &ids[j]) &&
                rank(&ids[j], j) < rank(&ids[best], best))
                best = j;
        primary[i] = (unsigned int)best;
    }
}

enum wt_rocm_verdict wt_rocm_check_step(struct wt_rocm_check *c, uint64_t raw, uint64_t ts_ns,
                                        double uj_per_count, double power_j)
{
    if (!c->have) {
        c->have = true;
        c->last_raw = raw;
        c->last_ts = c->moved_ts = ts_ns;
        return WT_ROCM_OK;
    }
    uint64_t delta = raw - c->last_raw;
    bool wrapped = false;
    if (raw < c->last_raw) {
        /* The SMU 11 tables (MI100) keep a 32-bit accumulator: 2^32 counts, 65536 J, about two
         * minutes at 500 W. A decrease is taken for its wrap only where both readings fit 32
         * bits and the wrapped step is what power x time says; else it is a reset. */
        delta = raw + ((uint64_t)1 << 32) - c->last_raw;
        double dj = (double)delta * uj_per_count / 1e6;
        if (c->last_raw > UINT32_MAX || power_j < 0 || fabs(dj - power_j) > 0.5 * power_j + 5.0)
            return WT_ROCM_BACKWARDS;
        wrapped = true;
    }
    bool fresh = ts_ns == 0 || ts_ns != c->last_ts;
    /* Not published while it stands still: under power, or across a gap in the power readings
     * (power unknown), where a frozen counter would else add a plateau to its series. */
    c->hold = raw == c->last_raw && fresh && (power_j > 0.1 || power_j < 0);
    /* A tick that drew at least 0.1 J moves a 15 µJ counter by thousands of counts. */
    if (raw == c->last_raw && fresh && power_j > 0.1) {
        /* and for a second of the library's own time, where it stamps its readings: a firmware
         * that refreshes its accumulator less often than fast ticks is not frozen */
        if (++c->still >= WT_ROCM_FROZEN_TICKS &&
            (ts_ns == 0 || ts_ns - c->moved_ts >= WT_ROCM_FROZEN_NS))
            return WT_ROCM_FROZEN;
    } else if (raw != c->last_raw) {
        c->still = 0;
        c->moved_ts = ts_ns;
    }
    if (power_j >= 0) {
        c->counter_j += (double)delta * uj_per_count / 1e6;
        c->power_j += power_j;
        /* Judged where the counter moved: a stopped one is the frozen rule's, and a cached
         * table catches up at its next refresh. */
        if (raw != c->last_raw && c->power_j >= WT_ROCM_CHECK_MIN_J) {
            double ratio = c->counter_j / c->power_j;
            c->counter_j = c->power_j = 0;
            if (ratio < 0.1 || ratio > 10)
                return WT_ROCM_IMPLAUSIBLE;
        }
    }
    c->last_raw = raw;
    c->last_ts = ts_ns;
    return wrapped ? WT_ROCM_WRAPPED : WT_ROCM_OK;
}

/* ---- the library ---- */

static const char *errstr(const struct rocm_state *s, rsmi_status_t r)
{
    const char *str = NULL;
    if (s->fn.status_string && s->fn.status_string(r, &str) == RSMI_STATUS_SUCCESS && str)
        return str;
    return "unknown status";
}

static bool want(const struct dev *d, enum feature f)
{
    return !(d->unsupported & (1u << f));
}

/*
 * One call's answer. SUCCESS: true. NOT_SUPPORTED / NOT_YET_IMPLEMENTED / PERMISSION: the call is
 * not made again on this device (said at debug; a permission refusal at info, once). Anything
 * else: this tick's fault, counted in *failed and logged rate-limited.
 */
static bool check(struct rocm_state *s, struct dev *d, enum feature f, rsmi_status_t r,
                  const char *what, unsigned int *failed)
{
    if (r == RSMI_STATUS_SUCCESS)
        return true;
    if (r == RSMI_STATUS_NOT_SUPPORTED || r == RSMI_STATUS_NOT_YET_IMPLEMENTED ||
        r == RSMI_STATUS_PERMISSION) {
        d->unsupported |= 1u << f;
        if (r == RSMI_STATUS_PERMISSION)
            wt_info(MOD, "%s: permission denied gpu=%u: not asked again", what, d->index);
        else
            wt_debug(MOD, "%s not supported gpu=%u", what, d->index);
        return false;
    }
    (*failed)++;
    uint64_t held = 0;
    if (wt_ratelimit_ok(&d->err_rl, wt_now_mono_ns(), &held))
        wt_warn(MOD, "%s failed gpu=%u: %s (%d) suppressed=%" PRIu64, what, d->index, errstr(s, r),
                (int)r, held);
    return false;
}

/* ---- discovery ---- */

static void identify(struct rocm_state *s, struct dev *d)
{
    d->name[0] = '\0';
    if (s->fn.name && s->fn.name(d->index, d->name, sizeof d->name) != RSMI_STATUS_SUCCESS)
        d->name[0] = '\0';
    d->name[sizeof d->name - 1] = '\0';
    if (!d->name[0])
        snprintf(d->name, sizeof d->name, "AMD GPU");
    d->id.have_uid =
        s->fn.unique_id && s->fn.unique_id(d->index, &d->id.uid) == RSMI_STATUS_SUCCESS;
    d->id.have_bdf = s->fn.pci_id && s->fn.pci_id(d->index, &d->id.bdf) == RSMI_STATUS_SUCCESS;
    if (d->id.have_bdf) {
        uint64_t b = d->id.bdf;
        snprintf(d->pci, sizeof d->pci, "%04x:%02x:%02x.%x", WT_RSMI_BDF_DOMAIN(b),
                 WT_RSMI_BDF_BUS(b), WT_RSMI_BDF_DEV(b), WT_RSMI_BDF_FUNC(b));
        d->partition = WT_RSMI_BDF_PARTITION(b);
    }
    /* the cap, its range and ECC: the slow fields (read_slow) */
}

/* Labels, once the packages are known: the uuid names the package and the member. */
static void build_labels(struct rocm_state *s, struct dev *d)
{
    char idx[16], pkg[16], part[16];
    unsigned int member = 0;
    for (unsigned int j = 0; j < d->index; j++)
        member += same_package(&s->devs[j].id, &d->id) && s->devs[j].id.have_uid && d->id.have_uid;
    if (d->id.have_uid && member == 0)
        snprintf(d->uuid, sizeof d->uuid, "AMD-%016" PRIx64, d->id.uid);
    else if (d->id.have_uid)
        snprintf(d->uuid, sizeof d->uuid, "AMD-%016" PRIx64 "-%u", d->id.uid, member);
    else if (d->pci[0])
        snprintf(d->uuid, sizeof d->uuid, "AMD-pci-%s", d->pci);
    else
        snprintf(d->uuid, sizeof d->uuid, "AMD-index-%u", d->index);
    snprintf(idx, sizeof idx, "%u", d->index);
    snprintf(pkg, sizeof pkg, "%u", d->primary);
    snprintf(part, sizeof part, "%u", d->partition);
    if (wt_labels(d->labels, sizeof d->labels, "gpu", idx, "uuid", d->uuid, "model", d->name,
                  NULL) != 0 &&
        wt_labels(d->labels, sizeof d->labels, "gpu", idx, NULL) != 0)
        d->labels[0] = '\0';
    memcpy(d->info_labels, d->labels, sizeof d->labels);
    (void)wt_labels_add(d->info_labels, sizeof d->info_labels, "vendor", "amd");
    if (d->pci[0])
        (void)wt_labels_add(d->info_labels, sizeof d->info_labels, "pci_bus_id", d->pci);
    (void)wt_labels_add(d->info_labels, sizeof d->info_labels, "package", pkg);
    if (d->partition)
        (void)wt_labels_add(d->info_labels, sizeof d->info_labels, "partition", part);
}

/* ---- polling ---- */

struct sample {
    bool have_power, have_edge, have_junction, have_mem, have_busy, have_cap, have_ecc;
    uint64_t ecc[2]; /* corrected, uncorrected: summed over the blocks */
    double power_w;
    int64_t edge_mc, junction_mc, mem_mc; /* raw: millidegrees Celsius */
    uint32_t busy_pct;
    uint64_t cap_uw;
};

/* The primaries' accumulators, back to back before any other call: one stamp for all, each
 * read's lateness after it kept (wattage_gpu_energy_read_skew_seconds). */
static void read_counters(struct rocm_state *s)
{
    for (unsigned int i = 0; i < s->n; i++) {
        struct dev *d = &s->devs[i];
        float res = 0;
        d->have_raw = false;
        d->failed_calls = 0;
        if (d->primary != i || !d->counter_ok || !s->fn.energy || !want(d, F_ENERGY))
            continue;
        rsmi_status_t r = s->fn.energy(i, &d->raw, &res, &d->raw_ts);
        d->read_end_ns = wt_now_real_ns();
        if (!check(s, d, F_ENERGY, r, "rsmi_dev_energy_count_get", &d->failed_calls))
            continue;
        double uj = wt_rocm_uj_per_count(res);
        if (uj <= 0) {
            wt_warn(MOD, "energy counter resolution %g gpu=%u: counter not used", (double)res, i);
            d->counter_ok = false;
            continue;
        }
        d->uj_per_count = uj;
        d->have_raw = true;
    }
}

static void sample_dev(struct rocm_state *s, struct dev *d, struct sample *v, unsigned int *failed)
{
    unsigned int i = d->index;
    bool primary = d->primary == i;
    uint64_t uw = 0;
    if (primary && s->fn.socket_power && want(d, F_SOCKET)) {
        v->have_power = check(s, d, F_SOCKET, s->fn.socket_power(i, &uw),
                              "rsmi_dev_current_socket_power_get", failed);
    }
    if (primary && !v->have_power && s->fn.power_ave && want(d, F_POWER_AVE) &&
        (!s->fn.socket_power || !want(d, F_SOCKET)))
        v->have_power =
            check(s, d, F_POWER_AVE, s->fn.power_ave(i, 0, &uw), "rsmi_dev_power_ave_get", failed);
    v->power_w = (double)uw / 1e6; /* raw: µW */
    if (s->fn.temp && want(d, F_EDGE))
        v->have_edge =
            check(s, d, F_EDGE, s->fn.temp(i, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &v->edge_mc),
                  "rsmi_dev_temp_metric_get edge", failed);
    if (s->fn.temp && want(d, F_JUNCTION))
        v->have_junction =
            check(s, d, F_JUNCTION,
                  s->fn.temp(i, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CURRENT, &v->junction_mc),
                  "rsmi_dev_temp_metric_get junction", failed);
    if (s->fn.temp && want(d, F_MEMTEMP))
        v->have_mem = check(s, d, F_MEMTEMP,
                            s->fn.temp(i, RSMI_TEMP_TYPE_MEMORY, RSMI_TEMP_CURRENT, &v->mem_mc),
                            "rsmi_dev_temp_metric_get memory", failed);
    if (s->fn.busy && want(d, F_BUSY))
        v->have_busy =
            check(s, d, F_BUSY, s->fn.busy(i, &v->busy_pct), "rsmi_dev_busy_percent_get", failed);
}

/* The ECC counts of the enabled blocks that have them, summed into d->ecc: true when read. */
static bool read_ecc(struct rocm_state *s, struct dev *d, unsigned int *failed)
{
    unsigned int i = d->index;
    uint64_t mask = 0;
    if (!s->fn.ecc_enabled || !s->fn.ecc_count || !want(d, F_ECC) ||
        !check(s, d, F_ECC, s->fn.ecc_enabled(i, &mask), "rsmi_dev_ecc_enabled_get", failed))
        return false;
    d->ecc_blocks = mask & WT_RSMI_GPU_BLOCKS & ~d->ecc_nocount;
    bool have = false;
    uint64_t sum[2] = {0, 0};
    for (uint64_t blk = 1; blk & WT_RSMI_GPU_BLOCKS; blk <<= 1) {
        if (!(d->ecc_blocks & blk))
            continue;
        wt_rsmi_error_count_buf buf = {0};
        rsmi_status_t r = s->fn.ecc_count(i, blk, &buf.ec);
        if (r == RSMI_STATUS_SUCCESS) {
            have = true;
            sum[0] += buf.ec.correctable_err;
            sum[1] += buf.ec.uncorrectable_err;
        } else if (r == RSMI_STATUS_NOT_SUPPORTED || r == RSMI_STATUS_PERMISSION ||
                   r == RSMI_STATUS_NOT_YET_IMPLEMENTED) {
            /* enabled but no kernel counter for it (the header says this happens) */
            d->ecc_blocks &= ~blk;
            d->ecc_nocount |= blk;
        } else {
            /* a sum with a block missing would go back: none until the next read */
            check(s, d, F_ECC, r, "rsmi_dev_ecc_count_get", failed);
            return false;
        }
    }
    memcpy(d->ecc, sum, sizeof d->ecc);
    return have;
}

/*
 * The slow fields (cadence[]): read into d and kept there until the next slow read. A failed
 * read (not NOT_SUPPORTED) is not published and is tried again at the next tick. True when any
 * call answered.
 */
static bool read_slow(struct rocm_state *s, struct dev *d, unsigned int *failed)
{
    unsigned int i = d->index, before = *failed;
    d->have_cap = s->fn.cap && want(d, F_CAP) &&
                  check(s, d, F_CAP, s->fn.cap(i, 0, &d->cap_uw), "rsmi_dev_power_cap_get", failed);
    uint64_t max_uw = 0, min_uw = 0;
    d->have_range = s->fn.cap_range && want(d, F_CAP_RANGE) &&
                    check(s, d, F_CAP_RANGE, s->fn.cap_range(i, 0, &max_uw, &min_uw),
                          "rsmi_dev_power_cap_range_get", failed) &&
                    max_uw >= min_uw;
    if (d->have_range) {
        d->cap_min_w = (double)min_uw / 1e6; /* raw: µW */
        d->cap_max_w = (double)max_uw / 1e6;
    }
    d->have_ecc = read_ecc(s, d, failed);
    d->slow_pending = *failed > before;
    return d->have_cap || d->have_range || d->have_ecc;
}

/* The slow fields as last read, into this tick's sample. */
static void held_slow(const struct dev *d, struct sample *v)
{
    v->have_cap = d->have_cap;
    v->cap_uw = d->cap_uw;
    v->have_ecc = d->have_ecc;
    memcpy(v->ecc, d->ecc, sizeof v->ecc);
}

static int add(struct wt_batch *out, int metric, const char *labels, int64_t t_ns, double value)
{
    return wt_batch_add(out, metric, labels, t_ns, value);
}

static int add_with(struct wt_batch *out, int metric, const char *labels, const char *key,
                    const char *val, int64_t t_ns, double value)
{
    char l[WT_LABELS_LEN];
    memcpy(l, labels, sizeof l);
    if (wt_labels_add(l, sizeof l, key, val))
        return 0;
    return add(out, metric, l, t_ns, value);
}

static const char *verdict_text(enum wt_rocm_verdict v)
{
    switch (v) {
    case WT_ROCM_FROZEN:
        return "stopped while the package draws power";
    case WT_ROCM_BACKWARDS:
        return "went backwards (driver reload?)";
    case WT_ROCM_IMPLAUSIBLE:
        return "disagrees with power x time by more than 10x";
    default:
        return "ok";
    }
}

/* The package's energy, on its primary. */
static int emit_energy(struct rocm_state *s, struct dev *d, const struct sample *v, int64_t t_ns,
                       struct wt_batch *out)
{
    const char *l = d->labels;
    int rc = 0;
    double power_j = -1;
    if (v->have_power) {
        wt_energy_integral_update(&d->integral, t_ns, v->power_w, s->max_gap_ns);
        if (d->integral.gaps == d->gaps_seen)
            power_j = d->integral.total_j - d->integral_seen_j;
        d->integral_seen_j = d->integral.total_j;
        d->gaps_seen = d->integral.gaps;
        rc |= add(out, WT_M_GPU_POWER_W, l, t_ns, v->power_w);
        rc |= add(out, WT_M_GPU_ENERGY_INTEGRATED_J, l, t_ns, d->integral.total_j);
        rc |= add(out, WT_M_GPU_ENERGY_GAPS, l, t_ns, (double)d->integral.gaps);
        /* the integral is the package's energy where there is no counter (any more) */
        if (!d->counter_ok || !s->fn.energy || !want(d, F_ENERGY)) {
            d->pub_src = PUB_INTEGRATED;
            d->pub_j = d->integral.total_j;
        }
    }
    if (!d->have_raw || !d->counter_ok)
        return rc;
    enum wt_rocm_verdict vd =
        wt_rocm_check_step(&d->check, d->raw, d->raw_ts, d->uj_per_count, power_j);
    if (vd != WT_ROCM_OK && vd != WT_ROCM_WRAPPED) {
        d->counter_ok = false;
        wt_warn(MOD,
                "energy counter %s gpu=%u uuid=%s: its energy is integrated from power from now "
                "on (wattage_gpu_energy_integrated_joules_total)",
                verdict_text(vd), d->index, d->uuid);
        return rc;
    }
    /* Held back while it stands still under load: if it is frozen the series ends at its last
     * move rather than with a plateau; if it moves again the next reading covers the wait. */
    if (d->check.hold)
        return rc;
    /* Modulus 0 but for a 32-bit wrap the check accepted: any other decrease was refused. */
    uint64_t modulus = vd == WT_ROCM_WRAPPED ? (uint64_t)1 << 32 : 0;
    if (wt_energy_counter_update(&d->counter, t_ns, d->raw, modulus, 0) == WT_DELTA_FIRST)
        d->first_raw = d->raw;
    d->pub_src = PUB_COUNTER;
    d->pub_j = (double)(d->first_raw + d->counter.total_raw) * d->uj_per_count / 1e6;
    rc |= add(out, WT_M_GPU_ENERGY_J, l, t_ns, d->pub_j);
    rc |=
        add(out, WT_M_GPU_ENERGY_READ_SKEW_S, l, t_ns, wt_energy_read_skew_s(t_ns, d->read_end_ns));
    return rc;
}

static int emit(struct rocm_state *s, struct dev *d, const struct sample *v, int64_t t_ns,
                struct wt_batch *out)
{
    const char *l = d->labels;
    int rc = add(out, WT_M_GPU_INFO, d->info_labels, t_ns, 1);
    rc |= add(out, WT_M_GPU_UP, l, t_ns, d->up ? 1 : 0);
    if (!d->up)
        return rc;
    if (d->primary == d->index)
        rc |= emit_energy(s, d, v, t_ns, out);
    if (v->have_edge)
        rc |= add_with(out, WT_M_GPU_TEMP_C, l, "sensor", "edge", t_ns, (double)v->edge_mc / 1e3);
    if (v->have_junction)
        rc |= add_with(out, WT_M_GPU_TEMP_C, l, "sensor", "junction", t_ns,
                       (double)v->junction_mc / 1e3);
    if (v->have_mem)
        rc |= add(out, WT_M_GPU_MEM_TEMP_C, l, t_ns, (double)v->mem_mc / 1e3);
    d->busy = v->have_busy && v->busy_pct <= 100 ? v->busy_pct / 100.0 : -1;
    if (d->busy >= 0)
        rc |= add(out, WT_M_GPU_UTIL_RATIO, l, t_ns, d->busy);
    if (v->have_cap)
        rc |= add(out, WT_M_GPU_POWER_LIMIT_W, l, t_ns, (double)v->cap_uw / 1e6);
    if (d->have_range) {
        rc |= add(out, WT_M_GPU_POWER_LIMIT_MIN_W, l, t_ns, d->cap_min_w);
        rc |= add(out, WT_M_GPU_POWER_LIMIT_MAX_W, l, t_ns, d->cap_max_w);
    }
    /* amdgpu's RAS counters live from driver load to unload: NVML's "volatile" */
    for (int k = 0; v->have_ecc && k < 2; k++) {
        char el[WT_LABELS_LEN];
        memcpy(el, l, sizeof el);
        if (wt_labels_add(el, sizeof el, "type", k ? "uncorrected" : "corrected") ||
            wt_labels_add(el, sizeof el, "counter", "volatile"))
            continue;
        rc |= add(out, WT_M_GPU_ECC_ERRORS, el, t_ns, (double)v->ecc[k]);
    }
    return rc;
}

/* ---- the collector ---- */

static const struct wt_collector_config *amd_config(const struct wt_config *cfg)
{
    return &cfg->collectors.amd;
}

static void amd_close(void *state)
{
    struct rocm_state *s = state;
    if (!s)
        return;
    procs_publish(s, NULL, 0, 0);
    wt_cadence_withdraw("amd", cadence);
    wt_attrib_close(s->attrib);
    if (s->inited)
        s->fn.shut_down();
    if (s->dl)
        dlclose(s->dl);
    if (s->amdsmi)
        wt_amdsmi_unload();
    free(s->devs);
    free(s);
}

static int resolve(struct rocm_state *s, struct wt_err *err)
{
    for (size_t i = 0; i < N_SYMBOLS; i++) {
        void *p = s->amdsmi ? wt_amdsmi_sym(symbols[i].name) : dlsym(s->dl, symbols[i].name);
        if (!p && symbols[i].required) {
            wt_err_set(err, "%s does not export %s: not a usable ROCm SMI library", s->library,
                       symbols[i].name);
            return -ENOSYS;
        }
        /* POSIX guarantees object and function pointers share a representation. */
        memcpy((char *)&s->fn + symbols[i].offset, &p, sizeof p);
        if (!p)
            wt_debug(MOD, "optional %s not in %s", symbols[i].name, s->library);
    }
    return 0;
}

/* $WATTAGE_ROCM_SMI_LIBRARY, else collectors.amd.library (a ROCm SMI, or an AMD SMI: one that
 * exports amdsmi_init and not rsmi_init), else the usual names in order; where none loads, AMD
 * SMI: $WATTAGE_AMD_SMI_LIBRARY, else (no ROCm SMI named) its usual names (collect/amdsmi.h). */
static int load(const struct wt_config *cfg, struct rocm_state *s, struct wt_err *err)
{
    static const char *const names[] = {WT_ROCM_LIBRARIES};
    const char *path = getenv("WATTAGE_ROCM_SMI_LIBRARY");
    const char *amd_path = getenv("WATTAGE_AMD_SMI_LIBRARY");
    if (!path || !*path)
        path = cfg && cfg->collectors.amd_library[0] ? cfg->collectors.amd_library : NULL;
    if (amd_path && !*amd_path)
        amd_path = NULL;
    if (!path && !amd_path) {
        /*
         * Without amdgpu's KFD topology rsmi_init can only fail, and Debian's 5.2.3 says so on
         * stderr itself ("Failed to open drm root directory", "Exception caught") at every
         * retry: a host without an AMD GPU is told apart here, through the sysfs root, without
         * loading the library. A library named explicitly is always loaded.
         */
        char kfd[512];
        struct stat st;
        snprintf(kfd, sizeof kfd, "%s/sys/class/kfd/kfd/topology/nodes", wt_sysfs_root());
        if (stat(kfd, &st) != 0) {
            wt_err_set(err,
                       "no AMD GPU driver (%s: no such directory); set collectors.amd.library / "
                       "WATTAGE_ROCM_SMI_LIBRARY to load ROCm SMI anyway",
                       kfd);
            return -ENOENT;
        }
    }
    const char *why = NULL;
    for (size_t i = 0; i < (path ? 1 : sizeof names / sizeof names[0]) && !s->dl; i++) {
        const char *p = path ? path : names[i];
        dlerror();
        s->dl = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        if (s->dl)
            snprintf(s->library, sizeof s->library, "%s", p);
        else if (i == 0)
            why = dlerror();
    }
    if (s->dl && path && !dlsym(s->dl, "rsmi_init") && dlsym(s->dl, "amdsmi_init")) {
        /* the library named is an AMD SMI (collect/amdsmi.h): run on it as such */
        dlclose(s->dl);
        s->dl = NULL;
        struct wt_err amd_err = {{0}};
        int rc = wt_amdsmi_load(path, s->library, sizeof s->library, &amd_err);
        s->amdsmi = rc == 0;
        return rc ? wt_err_set(err, "%s", amd_err.msg), rc : 0;
    }
    if (s->dl)
        return 0;
    char rocm_why[512];
    snprintf(rocm_why, sizeof rocm_why, "%s not found (%s)", path ? path : names[0],
             why ? why : "dlopen failed");
    if (path && !amd_path) /* a ROCm SMI named: no other library is looked for */
        return wt_err_set(
                   err,
                   "%s: set collectors.amd.library / WATTAGE_ROCM_SMI_LIBRARY to a ROCm SMI, "
                   "or WATTAGE_AMD_SMI_LIBRARY to an AMD SMI",
                   rocm_why),
               -ENOENT;
    struct wt_err amd_err = {{0}};
    int rc = wt_amdsmi_load(amd_path, s->library, sizeof s->library, &amd_err);
    s->amdsmi = rc == 0;
    if (rc == -ENOSYS) /* an AMD SMI that lacks a required call: said as such */
        return wt_err_set(err, "%s; %s", rocm_why, amd_err.msg), rc;
    if (rc == 0)
        return 0;
    wt_err_set(err,
               "%s, nor AMD SMI (%s): no ROCm on this host, or set collectors.amd.library / "
               "WATTAGE_ROCM_SMI_LIBRARY / WATTAGE_AMD_SMI_LIBRARY",
               rocm_why, amd_err.msg);
    return -ENOENT;
}

/* Loads the library, starts a session and names the devices (packages, uuids, labels). */
static int discover(const struct wt_config *cfg, struct rocm_state *s, struct wt_err *err)
{
    int rc = load(cfg, s, err);
    if (rc)
        goto fail;
    rc = resolve(s, err);
    if (rc)
        goto fail;
    rsmi_status_t r = s->fn.init(0);
    if (r != RSMI_STATUS_SUCCESS) {
        wt_err_set(err, "rsmi_init failed in %s: %s (%d)", s->library, errstr(s, r), (int)r);
        /* no amdgpu driver, or no /sys/class/kfd in this container: absent, looked at later */
        rc = r == RSMI_STATUS_INIT_ERROR || r == RSMI_STATUS_FILE_ERROR ? -ENOENT : -EIO;
        goto fail;
    }
    s->inited = true;
    uint32_t n = 0;
    r = s->fn.num_devices(&n);
    if (r != RSMI_STATUS_SUCCESS) {
        wt_err_set(err, "rsmi_num_monitor_devices failed: %s (%d)", errstr(s, r), (int)r);
        rc = -EIO;
        goto fail;
    }
    if (n == 0) {
        wt_err_set(err, "%s sees no AMD GPU", s->library);
        rc = -ENOENT;
        goto fail;
    }
    s->n = n;
    s->devs = calloc(n, sizeof *s->devs);
    struct wt_rocm_ident *ids = calloc(n, sizeof *ids);
    unsigned int *prim = calloc(n, sizeof *prim);
    if (!s->devs || !ids || !prim) {
        free(ids);
        free(prim);
        rc = -ENOMEM;
        goto fail;
    }
    for (unsigned int i = 0; i < n; i++) {
        struct dev *d = &s->devs[i];
        d->index = i;
        d->up = true;
        d->counter_ok = true;
        d->err_rl.interval_ns = LOG_EVERY_NS;
        d->busy = -1;
        identify(s, d);
        ids[i] = d->id;
    }
    wt_rocm_group(ids, n, prim);
    unsigned int packages = 0;
    for (unsigned int i = 0; i < n; i++) {
        s->devs[i].primary = prim[i];
        packages += prim[i] == i;
    }
    for (unsigned int i = 0; i < n; i++)
        build_labels(s, &s->devs[i]);
    free(ids);
    free(prim);
    s->packages = packages;
    return 0;
fail:
    return rc;
}

static int amd_open(const struct wt_config *cfg, void **state, struct wt_err *err)
{
    *state = NULL;
    struct rocm_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    int64_t interval = cfg ? wt_config_interval(cfg, &cfg->collectors.amd) : WT_NS_PER_S;
    s->max_gap_ns = 3 * (interval > 0 ? interval : WT_NS_PER_S);
    s->interval_ns = interval;
    s->slow.interval_ns = cfg ? cfg->collectors.amd_slow_interval_ns : DEFAULT_SLOW_NS;
    s->refresh_seen = atomic_load(&slow_refresh_gen);
    s->procs_rl.interval_ns = LOG_EVERY_NS;
    s->attrib_gap_ns = s->max_gap_ns > 3 * PROCS_EVERY_NS ? s->max_gap_ns : 3 * PROCS_EVERY_NS;
    int rc = discover(cfg, s, err);
    if (rc) {
        amd_close(s);
        return rc;
    }
    if (!s->fn.energy)
        wt_info(MOD,
                "%s has no rsmi_dev_energy_count_get: GPU energy is integrated from power "
                "readings (wattage_gpu_energy_integrated_joules_total)",
                s->library);
    /* Attribution is an addition: without memory for it the GPUs are still read. The NVML
     * collector's keys (collectors.nvml.attribution, attribution_grace) say it for every GPU. */
    if ((!cfg || cfg->collectors.nvml_attribution) && s->fn.proc_info && s->fn.proc_gpus &&
        wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, WT_M_GPU_ATTRIB_INFO, 1e-6,
                       cfg ? cfg->collectors.nvml_attrib_grace_ns : 300 * WT_NS_PER_S,
                       &s->attrib) == 0) {
        wt_attrib_set_vendor(s->attrib, "amd");
        wt_attrib_publish(0, s->attrib);
    }
    wt_info(MOD, "%u GPUs in %u packages library=%s power=%s", s->n, s->packages, s->library,
            s->fn.socket_power ? "current socket power, else average"
            : s->fn.power_ave  ? "average"
                               : "none (the energy counter alone)");
    if (wt_cadence_publish("amd", s->slow.interval_ns, cadence, N_CADENCE) != 0)
        wt_debug(MOD, "no room to publish the fields' cadence");
    *state = s;
    return 0;
}

/* Whether this tick reads every device's slow fields: due, or asked for by wt_rocm_slow_refresh. */
static bool slow_tick(struct rocm_state *s)
{
    unsigned int gen = atomic_load(&slow_refresh_gen);
    if (gen != s->refresh_seen) {
        s->refresh_seen = gen;
        wt_slow_force(&s->slow);
    }
    return wt_slow_due(&s->slow, wt_now_mono_ns(), s->interval_ns);
}

static int amd_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct rocm_state *s = state;
    int rc = 0;
    unsigned int down = 0;
    bool slow_all = slow_tick(s);
    read_counters(s);
    for (unsigned int i = 0; i < s->n; i++) {
        struct dev *d = &s->devs[i];
        struct sample v = {0};
        sample_dev(s, d, &v, &d->failed_calls);
        bool slow_any = (slow_all || d->slow_pending) && read_slow(s, d, &d->failed_calls);
        bool any = v.have_power || v.have_edge || v.have_junction || v.have_mem || v.have_busy ||
                   slow_any || d->have_raw;
        held_slow(d, &v);
        bool was_up = d->up;
        /* Down only when calls failed and none answered. */
        d->up = any || d->failed_calls == 0;
        if (!d->up) {
            d->slow_pending = true; /* read again when it answers */
            down++;
            d->failed_ticks++;
            wt_energy_integral_break(&d->integral);
            if (was_up)
                wt_warn(MOD, "gpu=%u uuid=%s stopped answering: gpu_up 0", i, d->uuid);
        } else if (!was_up) {
            wt_info(MOD, "gpu=%u uuid=%s answers again after %" PRIu64 " failed ticks", i, d->uuid,
                    d->failed_ticks);
            d->failed_ticks = 0;
        }
        rc |= emit(s, d, &v, t_ns, out);
    }
    /* After the energy of this tick is known: the split covers it. Between splits the last
     * split's series again, stamped with its time, as the NVML collector does. */
    if (read_procs(s, t_ns))
        s->split_t_ns = t_ns;
    if (s->attrib && s->split_t_ns)
        rc |= wt_attrib_emit(s->attrib, s->split_t_ns, out);
    if (rc)
        return wt_err_set(err, "out of memory for readings"), -ENOMEM;
    if (down == s->n) {
        wt_err_set(err, "every AMD GPU failed its calls");
        return -EIO;
    }
    return 0;
}

const struct wt_collector_ops wt_amd_collector = {
    .name = "amd",
    .edge_samples = true,
    .config = amd_config,
    .open = amd_open,
    .poll = amd_poll,
    .close = amd_close,
};

/* ---- power caps (the capper's session: alert/cap_act.c) ---- */

struct wt_rocm_caps {
    struct rocm_state s;
};

int wt_rocm_caps_open(const struct wt_config *cfg, struct wt_rocm_caps **out, struct wt_err *err)
{
    *out = NULL;
    struct wt_rocm_caps *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    int rc = discover(cfg, &c->s, err);
    if (rc == 0 && !c->s.fn.cap_set) {
        wt_err_set(err, "%s does not export rsmi_dev_power_cap_set: limits cannot be set",
                   c->s.library);
        rc = -ENOSYS;
    }
    if (rc == 0)
        *out = c;
    else
        wt_rocm_caps_close(c);
    return rc;
}

void wt_rocm_caps_close(struct wt_rocm_caps *c)
{
    if (!c)
        return;
    if (c->s.inited)
        c->s.fn.shut_down(); /* the library counts its sessions: the collector's goes on */
    if (c->s.dl)
        dlclose(c->s.dl);
    if (c->s.amdsmi)
        wt_amdsmi_unload();
    free(c->s.devs);
    free(c);
}

unsigned int wt_rocm_caps_count(const struct wt_rocm_caps *c)
{
    return c ? c->s.n : 0;
}

const char *wt_rocm_caps_uuid(const struct wt_rocm_caps *c, unsigned int i)
{
    return c && i < c->s.n ? c->s.devs[i].uuid : "";
}

const char *wt_rocm_caps_errstr(const struct wt_rocm_caps *c, int status)
{
    return c ? errstr(&c->s, (rsmi_status_t)status) : "unknown status";
}

int wt_rocm_caps_read(struct wt_rocm_caps *c, unsigned int i, struct wt_rocm_cap *out)
{
    memset(out, 0, sizeof *out);
    if (!c || i >= c->s.n)
        return RSMI_STATUS_INVALID_ARGS;
    const struct rsmi_fns *f = &c->s.fn;
    uint64_t uw = 0, lo = 0, hi = 0;
    int r = f->cap ? (int)f->cap(i, 0, &uw) : RSMI_STATUS_NOT_SUPPORTED;
    if (r == RSMI_STATUS_SUCCESS)
        out->limit_w = (double)uw / 1e6; /* raw: µW */
    if (f->cap_range && f->cap_range(i, 0, &hi, &lo) == RSMI_STATUS_SUCCESS && hi >= lo) {
        out->min_w = (double)lo / 1e6;
        out->max_w = (double)hi / 1e6;
    }
    if (f->cap_default && f->cap_default(i, &uw) == RSMI_STATUS_SUCCESS && uw > 0)
        out->default_w = (double)uw / 1e6;
    return r;
}

int wt_rocm_caps_set(struct wt_rocm_caps *c, unsigned int i, double watts)
{
    if (!c || i >= c->s.n || !(watts > 0))
        return RSMI_STATUS_INVALID_ARGS;
    if (!c->s.fn.cap_set)
        return RSMI_STATUS_NOT_SUPPORTED;
    return (int)c->s.fn.cap_set(i, 0, (uint64_t)llround(watts * 1e6)); /* µW */
}

bool wt_rocm_caps_denied(int status)
{
    return status == RSMI_STATUS_PERMISSION;
}
