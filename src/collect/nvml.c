/* SPDX-License-Identifier: MIT */
/*
 * NVML collector: loads libnvidia-ml with dlopen, resolves its entry points from one table
 * (versioned names first, older fallbacks after; required and optional), keeps one NVML session
 * for its whole life, and turns each GPU's state into readings every poll.
 *
 * Energy is counter first: the GPU's own mJ counter (Volta and newer) is followed with reset
 * detection (it restarts from 0 when the driver reloads, it does not wrap). Power is integrated
 * too, always when it is available, so both series exist and their disagreement is visible.
 *
 * A GPU that answers GPU_IS_LOST, or whose essential calls fail, is reported down (gpu_up 0)
 * while the others go on; every later tick looks for it again.
 */
#include "collect/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "collect/nvml_api.h"
#include "collect/nvml_fields.h"
#include "collect/nvml_mig.h"
#include "collect/procfs.h"
#include "core/clock.h"
#include "core/energy.h"
#include "core/log.h"

#define MOD "nvml"
#define DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define LOG_EVERY_NS (60 * WT_NS_PER_S)

/* The resolved entry points; a NULL optional one means "not in this library". */
struct nvml_fns {
    wt_nvml_init_fn *init;
    wt_nvml_shutdown_fn *shutdown;
    wt_nvml_error_string_fn *error_string;
    wt_nvml_driver_version_fn *driver_version;
    wt_nvml_count_fn *count;
    wt_nvml_handle_fn *handle;
    wt_nvml_string_fn *name;
    wt_nvml_string_fn *uuid;
    wt_nvml_pci_fn *pci;
    wt_nvml_uint_fn *power;
    wt_nvml_ull_fn *energy;
    wt_nvml_temperature_fn *temperature;
    wt_nvml_threshold_fn *threshold;
    wt_nvml_utilization_fn *utilization;
    wt_nvml_memory_fn *memory;
    wt_nvml_clock_fn *clock;
    wt_nvml_ull_fn *throttle;
    wt_nvml_uint_fn *power_limit;
    wt_nvml_constraints_fn *constraints;
    wt_nvml_pstate_fn *pstate;
    wt_nvml_enable_state_fn *persistence;
    wt_nvml_procs_fn *compute_procs;
    wt_nvml_procs_v1_fn *compute_procs_v1;
    wt_nvml_procs_fn *graphics_procs;
    wt_nvml_procs_v1_fn *graphics_procs_v1;
    wt_nvml_proc_util_fn *proc_util;
    /* health */
    wt_nvml_string_fn *vbios;
    wt_nvml_cuda_version_fn *cuda_version;
    wt_nvml_event_set_create_fn *event_set_create;
    wt_nvml_event_set_free_fn *event_set_free;
    wt_nvml_register_events_fn *register_events;
    wt_nvml_ull_fn *supported_events;
    wt_nvml_event_wait_fn *event_wait;
    wt_nvml_ecc_fn *ecc;
    wt_nvml_remapped_rows_fn *remapped_rows;
    wt_nvml_uint_fn *pcie_replay;
    wt_nvml_field_values_fn *field_values;
    wt_nvml_uint_fn *num_fans;
    wt_nvml_fan_fn *fan_v2;
    wt_nvml_uint_fn *fan;
};

_Static_assert(sizeof(void *) == sizeof(wt_nvml_init_fn *), "dlsym results must fit");

#define SYM(field, req, ...)                                                                       \
    {                                                                                              \
        {__VA_ARGS__}, req, offsetof(struct nvml_fns, field)                                       \
    }

/*
 * Required: what every NVML since the Kepler era exports and the collector cannot do without.
 * Everything else is optional: its metric is simply absent.
 */
const struct wt_nvml_symbol wt_nvml_symbols[] = {
    SYM(init, true, "nvmlInit_v2", "nvmlInit"),
    SYM(shutdown, true, "nvmlShutdown"),
    SYM(error_string, true, "nvmlErrorString"),
    SYM(count, true, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
    SYM(handle, true, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
    SYM(name, true, "nvmlDeviceGetName"),
    SYM(uuid, true, "nvmlDeviceGetUUID"),
    SYM(power, true, "nvmlDeviceGetPowerUsage"),
    SYM(driver_version, false, "nvmlSystemGetDriverVersion"),
    SYM(pci, false, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"),
    SYM(energy, false, "nvmlDeviceGetTotalEnergyConsumption"),
    SYM(temperature, false, "nvmlDeviceGetTemperature"),
    SYM(threshold, false, "nvmlDeviceGetTemperatureThreshold"),
    SYM(utilization, false, "nvmlDeviceGetUtilizationRates"),
    SYM(memory, false, "nvmlDeviceGetMemoryInfo"),
    SYM(clock, false, "nvmlDeviceGetClockInfo"),
    SYM(throttle, false, "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons"),
    SYM(power_limit, false, "nvmlDeviceGetEnforcedPowerLimit"),
    SYM(constraints, false, "nvmlDeviceGetPowerManagementLimitConstraints"),
    SYM(pstate, false, "nvmlDeviceGetPerformanceState"),
    SYM(persistence, false, "nvmlDeviceGetPersistenceMode"),
    /* The v2/v3 layout and the original one differ in size: two entries each. */
    SYM(compute_procs, false, "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetComputeRunningProcesses_v2"),
    SYM(compute_procs_v1, false, "nvmlDeviceGetComputeRunningProcesses"),
    SYM(graphics_procs, false, "nvmlDeviceGetGraphicsRunningProcesses_v3",
        "nvmlDeviceGetGraphicsRunningProcesses_v2"),
    SYM(graphics_procs_v1, false, "nvmlDeviceGetGraphicsRunningProcesses"),
    SYM(proc_util, false, "nvmlDeviceGetProcessUtilization"),
    /* Health. nvmlEventSetWait fills a shorter nvmlEventData_t than _v2: it is zeroed first. */
    SYM(vbios, false, "nvmlDeviceGetVbiosVersion"),
    SYM(cuda_version, false, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"),
    SYM(event_set_create, false, "nvmlEventSetCreate"),
    SYM(event_set_free, false, "nvmlEventSetFree"),
    SYM(register_events, false, "nvmlDeviceRegisterEvents"),
    SYM(supported_events, false, "nvmlDeviceGetSupportedEventTypes"),
    SYM(event_wait, false, "nvmlEventSetWait_v2", "nvmlEventSetWait"),
    SYM(ecc, false, "nvmlDeviceGetTotalEccErrors"),
    SYM(remapped_rows, false, "nvmlDeviceGetRemappedRows"),
    SYM(pcie_replay, false, "nvmlDeviceGetPcieReplayCounter"),
    SYM(field_values, false, "nvmlDeviceGetFieldValues"),
    SYM(num_fans, false, "nvmlDeviceGetNumFans"),
    SYM(fan_v2, false, "nvmlDeviceGetFanSpeed_v2"),
    SYM(fan, false, "nvmlDeviceGetFanSpeed"),
};
const size_t wt_nvml_symbol_count = sizeof wt_nvml_symbols / sizeof wt_nvml_symbols[0];

/* Per-GPU features; a bit set in struct gpu.unsupported means "do not ask again". */
enum feature {
    F_POWER,
    F_ENERGY,
    F_TEMP,
    F_SLOWDOWN,
    F_SHUTDOWN,
    F_UTIL,
    F_MEMORY,
    F_SM_CLOCK,
    F_MEM_CLOCK,
    F_THROTTLE,
    F_LIMIT,
    F_CONSTRAINTS,
    F_PSTATE,
    F_PERSISTENCE,
    F_PCI,
    F_PROCS,
    F_VBIOS,
    F_ECC_VOLATILE,
    F_ECC_AGGREGATE,
    F_REMAP,
    F_PCIE_REPLAY,
    F_MEM_TEMP,
    F_FAN,
    F_XID,
    F_COUNT
};
/* The health features: NOT_SUPPORTED is said once per collector at info (many boards lack one). */
#define HEALTH_FEATURES                                                                            \
    (1u << F_VBIOS | 1u << F_ECC_VOLATILE | 1u << F_ECC_AGGREGATE | 1u << F_REMAP |                \
     1u << F_PCIE_REPLAY | 1u << F_MEM_TEMP | 1u << F_FAN | 1u << F_XID)

static const char *const feature_names[F_COUNT] = {
    "power",
    "energy",
    "temperature",
    "slowdown threshold",
    "shutdown threshold",
    "utilization",
    "memory",
    "SM clock",
    "memory clock",
    "clocks event reasons",
    "power limit",
    "power limit constraints",
    "performance state",
    "persistence mode",
    "PCI info",
    "running processes",
    "VBIOS version",
    "volatile ECC counts",
    "aggregate ECC counts",
    "remapped rows",
    "PCIe replay counter",
    "memory temperature",
    "fan speed",
    "XID events",
};

/* The reasons behind the clocks event bitmask, named for wattage_gpu_throttled{reason}. */
static const struct {
    unsigned long long bit;
    const char *name;
} reasons[] = {
    {nvmlClocksEventReasonGpuIdle, "gpu_idle"},
    {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
    {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
    {nvmlClocksEventReasonSyncBoost, "sync_boost"},
    {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {nvmlClocksEventReasonDisplayClockSetting, "display_clocks_setting"},
};
#define N_REASONS (sizeof reasons / sizeof reasons[0])

struct gpu {
    unsigned int index;
    nvmlDevice_t dev;
    bool known; /* static info read since it last came up */
    bool up;
    bool persistence_warned;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char pci[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    char vbios[NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE];
    char labels[WT_LABELS_LEN];      /* gpu,uuid,model */
    char info_labels[WT_LABELS_LEN]; /* + pci_bus_id, driver/VBIOS/CUDA versions */
    unsigned int nfans;
    uint32_t unsupported; /* 1 << enum feature */
    /* static per discovery */
    bool have_slowdown, have_shutdown, have_constraints;
    unsigned int slowdown_c, shutdown_c, limit_min_mw, limit_max_mw;
    /* energy */
    struct wt_energy_counter counter;
    uint64_t first_raw_mj;
    struct wt_energy_integral integral;
    /* this tick's counter, read ahead of the other calls (read_counters) */
    bool pre_read;
    nvmlReturn_t pre_r;
    unsigned long long pre_mj;
    int64_t read_end_ns; /* CLOCK_REALTIME when the last counter read returned */
    /* health */
    uint64_t failed_ticks;
    struct wt_ratelimit down_rl, err_rl;
    /* attribution (see poll_procs): the energy of this tick, and where the last split ended */
    bool have_energy_mj;
    uint64_t energy_mj;  /* counter (or integrated power) in mJ, monotone */
    bool attrib_started; /* attrib_mj and attrib_at hold the last split's end */
    uint64_t attrib_mj;
    int64_t attrib_at; /* CLOCK_REALTIME */
    double busy;       /* this tick's utilization, 0..1; -1 unknown */
    bool proc_util_unsupported;
    unsigned long long util_seen_us; /* newest per-process sample taken */
    /* the start times of the last split's processes: a pid listed again is not read again */
    unsigned int known_n, known_age;
    unsigned int known_pid[WT_NVML_MAX_PROCS];
    uint64_t known_start[WT_NVML_MAX_PROCS];
};

/* XIDs of one GPU, counted by the event thread (under xid_ctx.mu). */
#define MAX_XIDS 32 /* distinct codes per GPU; more count under xid="other" (code 0) */
/* The event thread blocks in nvmlEventSetWait this long with nothing to do (a wake-up every
 * 10 s); a stop interrupts the wait with a signal (see xid_stop). */
#define XID_WAIT_MS 10000
#define XID_JOIN_NS (300 * WT_NS_PER_MS) /* how long close waits for the thread to end */
struct xid_count {
    unsigned int xid;
    uint64_t n, logged; /* events, and how many of them a log line has said */
    struct wt_ratelimit rl;
};
struct xid_gpu {
    nvmlDevice_t dev; /* as registered at open; never changes after */
    unsigned int index;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    bool registered;
    struct xid_count c[MAX_XIDS + 1];
    unsigned int n;
};

/*
 * What the event thread uses, shared by the collector and the thread and freed by whichever
 * lets go last: the thread holds its own reference to the library and its own NVML session, so
 * a thread still blocked in nvmlEventSetWait when the collector closes (a library that does not
 * return from the wait on a signal) finishes on its own, after which the set is freed and the
 * session released. Nothing of the collector's state is touched by the thread.
 */
struct xid_ctx {
    atomic_int refs;
    void *dl;
    bool session;
    wt_nvml_init_fn *init;
    wt_nvml_shutdown_fn *shutdown;
    wt_nvml_error_string_fn *error_string;
    wt_nvml_event_wait_fn *wait;
    wt_nvml_event_set_free_fn *set_free;
    nvmlEventSet_t set;
    atomic_bool stop;
    bool exited;        /* under mu; cv says when it is set */
    pthread_mutex_t mu; /* the counts, and exited */
    pthread_cond_t cv;
    unsigned int n;
    struct xid_gpu g[]; /* per GPU index */
};

struct nvml_state {
    void *dl;
    struct nvml_fns fn;
    bool inited;
    char library[256];
    char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    char cuda_version[16];     /* "12.4", "" when the library does not say */
    uint32_t said_unsupported; /* health features whose absence was logged */
    /* XID events: one set for every GPU, waited on by its own thread */
    struct xid_ctx *xid;
    pthread_t xid_thread;
    bool xid_running;
    int64_t max_gap_ns;
    int64_t attrib_gap_ns;    /* the longest span between two splits that is not a gap */
    int64_t procs_at;         /* CLOCK_MONOTONIC of the last process list */
    int64_t split_t_ns;       /* the tick of the last split (0: none yet) */
    struct wt_attrib *attrib; /* per-process energy (collect/attrib.h); NULL without memory */
    nvmlProcessUtilizationSample_t *util_buf;
    bool said_proc_util;
    unsigned int util_cap;
    unsigned int n;
    struct gpu *gpus;
    struct wt_nvml_fields *fields; /* interconnect counters, GPM, units (nvml_fields.h) */
    struct wt_nvml_mig *mig;       /* MIG instances and their energy (nvml_mig.h) */
    /* Energy sub-polls (wt_nvml_auto_energy_interval): collectors.nvml.energy_interval, the
     * interval in force (0: none, or not decided yet under auto), and while auto decides, the
     * CPU and wall time of the first ticks' energy reads. */
    int64_t interval_ns, energy_cfg_ns, sub_ns;
    bool sub_decided;
    unsigned int auto_ticks;
    int64_t auto_cpu_ns, auto_wall_ns;
    uint64_t auto_calls;
};

#define AUTO_TICKS 5 /* ticks whose energy reads auto measures before it decides */

#define PROCS_EVERY_NS WT_NS_PER_S
#define START_REFRESH 30 /* splits between two reads of a listed process's start time */
#define PROCS_BUF 256

/* The latest process list of the collector that read one last (see wt_nvml_processes). */
static pthread_mutex_t procs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wt_gpu_procs *procs_list;
static size_t procs_n;
static int64_t procs_t;
static const void *procs_owner;

/* Outcome of one GPU's calls in one tick. */
struct tick {
    bool lost;         /* some call answered GPU_IS_LOST */
    unsigned int ok;   /* calls that succeeded */
    nvmlReturn_t hard; /* first failure other than NOT_SUPPORTED */
    const char *hard_what;
};

#define MAX_FANS 8

/* One GPU's values in one tick; have_* says which exist. */
struct sample {
    bool have_power, have_energy, have_temp, have_util, have_mem, have_sm, have_memclk;
    bool have_throttle, have_limit, have_pstate;
    bool have_ecc_vol, have_ecc_agg, have_remap, have_replay, have_mem_temp;
    unsigned long long ecc_vol[2], ecc_agg[2]; /* [nvmlMemoryErrorType_t] */
    unsigned int remap[4];                     /* corrected, uncorrected, pending, failure */
    unsigned int replay;
    double mem_temp_c;
    unsigned int nfans;
    double fan_pct[MAX_FANS];
    unsigned int power_mw, temp_c, sm_mhz, mem_mhz, limit_mw;
    unsigned long long energy_mj, throttle;
    nvmlUtilization_t util;
    nvmlMemory_t mem;
    nvmlPstates_t pstate;
};

static const char *errstr(const struct nvml_state *s, nvmlReturn_t r)
{
    const char *m = s->fn.error_string ? s->fn.error_string(r) : NULL;
    return m ? m : "unknown error";
}

static bool want(const struct gpu *g, const struct tick *tk, enum feature f)
{
    return !tk->lost && !(g->unsupported & (1u << f));
}

/* Files the outcome of one call. Returns true on success. */
static bool check(struct nvml_state *s, struct gpu *g, struct tick *tk, enum feature f,
                  nvmlReturn_t r, const char *what)
{
    if (r == NVML_SUCCESS) {
        tk->ok++;
        return true;
    }
    if (r == NVML_ERROR_NOT_SUPPORTED && f < F_COUNT) {
        /* Absent on this GPU for good: never zero, and not asked again every tick. */
        g->unsupported |= 1u << f;
        if (f == F_ENERGY)
            /* The counter is the figure to trust: its absence changes every energy figure of
             * this GPU, so it is said once where people look, not at debug level. */
            wt_info(MOD,
                    "no energy counter gpu=%u uuid=%s (%s): its energy is integrated from power "
                    "readings (wattage_gpu_energy_integrated_joules_total)",
                    g->index, g->uuid, errstr(s, r));
        else if ((HEALTH_FEATURES & (1u << f)) && !(s->said_unsupported & (1u << f))) {
            /* Once per collector, not per GPU: a board without it has eight GPUs without it. */
            s->said_unsupported |= 1u << f;
            wt_info(MOD, "%s: %s gpu=%u uuid=%s (%s): its metric is absent", feature_names[f],
                    errstr(s, r), g->index, g->uuid, what);
        } else
            wt_debug(MOD, "%s: %s gpu=%u uuid=%s", feature_names[f], errstr(s, r), g->index,
                     g->uuid);
        return false;
    }
    if (r == NVML_ERROR_GPU_IS_LOST)
        tk->lost = true;
    if (tk->hard == NVML_SUCCESS) {
        tk->hard = r;
        tk->hard_what = what;
    }
    return false;
}

static void copy_str(char *dst, size_t n, const char *src, size_t src_n)
{
    size_t len = strnlen(src, src_n);
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* Appends key="value" to labels when value is set and it fits; a version that does not fit is
 * left out rather than the identity. */
static void add_version(char *labels, size_t n, const char *key, const char *value)
{
    if (value[0])
        (void)wt_labels_add(labels, n, key, value);
}

static void build_labels(const struct nvml_state *s, struct gpu *g)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%u", g->index);
    /* The strings are bounded (96 + 96 + 32 bytes of NVML text); if escaping ever made them
     * too long the labels keep the gpu index at least. */
    if (wt_labels(g->labels, sizeof g->labels, "gpu", idx, "uuid", g->uuid, "model", g->name,
                  NULL) != 0 &&
        wt_labels(g->labels, sizeof g->labels, "gpu", idx, NULL) != 0)
        g->labels[0] = '\0';
    memcpy(g->info_labels, g->labels, sizeof g->labels);
    /* the vendor, as AMD's GPUs say theirs (collect/rocm.c): one wattage_gpu_* family each */
    (void)wt_labels_add(g->info_labels, sizeof g->info_labels, "vendor", "nvidia");
    if (g->pci[0] && wt_labels_add(g->info_labels, sizeof g->info_labels, "pci_bus_id", g->pci)) {
        memcpy(g->info_labels, g->labels, sizeof g->labels);
        (void)wt_labels_add(g->info_labels, sizeof g->info_labels, "vendor", "nvidia");
    }
    add_version(g->info_labels, sizeof g->info_labels, "driver_version", s->driver_version);
    add_version(g->info_labels, sizeof g->info_labels, "vbios_version", g->vbios);
    add_version(g->info_labels, sizeof g->info_labels, "cuda_driver_version", s->cuda_version);
}

/* A fresh start for a GPU's per-device memory (first discovery, or another board at the index). */
static void reset_gpu(const struct nvml_state *s, struct gpu *g)
{
    g->unsupported = 0;
    if (!s->fn.pci)
        g->unsupported |= 1u << F_PCI;
    if (!s->fn.energy)
        g->unsupported |= 1u << F_ENERGY;
    if (!s->fn.temperature)
        g->unsupported |= 1u << F_TEMP;
    if (!s->fn.threshold)
        g->unsupported |= 1u << F_SLOWDOWN | 1u << F_SHUTDOWN;
    if (!s->fn.utilization)
        g->unsupported |= 1u << F_UTIL;
    if (!s->fn.memory)
        g->unsupported |= 1u << F_MEMORY;
    if (!s->fn.clock)
        g->unsupported |= 1u << F_SM_CLOCK | 1u << F_MEM_CLOCK;
    if (!s->fn.throttle)
        g->unsupported |= 1u << F_THROTTLE;
    if (!s->fn.power_limit)
        g->unsupported |= 1u << F_LIMIT;
    if (!s->fn.constraints)
        g->unsupported |= 1u << F_CONSTRAINTS;
    if (!s->fn.pstate)
        g->unsupported |= 1u << F_PSTATE;
    if (!s->fn.persistence)
        g->unsupported |= 1u << F_PERSISTENCE;
    if (!s->fn.compute_procs && !s->fn.compute_procs_v1 && !s->fn.graphics_procs &&
        !s->fn.graphics_procs_v1)
        g->unsupported |= 1u << F_PROCS;
    if (!s->fn.vbios)
        g->unsupported |= 1u << F_VBIOS;
    if (!s->fn.ecc)
        g->unsupported |= 1u << F_ECC_VOLATILE | 1u << F_ECC_AGGREGATE;
    if (!s->fn.remapped_rows)
        g->unsupported |= 1u << F_REMAP;
    if (!s->fn.pcie_replay)
        g->unsupported |= 1u << F_PCIE_REPLAY;
    if (!s->fn.field_values)
        g->unsupported |= 1u << F_MEM_TEMP;
    if (!s->fn.fan_v2 && !s->fn.fan)
        g->unsupported |= 1u << F_FAN;
    g->vbios[0] = '\0';
    g->nfans = 0;
    memset(&g->counter, 0, sizeof g->counter);
    memset(&g->integral, 0, sizeof g->integral);
    g->first_raw_mj = 0;
    g->persistence_warned = false;
}

/*
 * Reads what does not change while a GPU is up: handle, name, UUID, PCI bus id, temperature
 * thresholds, power limit constraints; warns once when persistence mode is off.
 */
static void discover(struct nvml_state *s, struct gpu *g, struct tick *tk)
{
    nvmlReturn_t r = s->fn.handle(g->index, &g->dev);
    if (!check(s, g, tk, F_COUNT, r, "nvmlDeviceGetHandleByIndex"))
        return;

    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    if (!check(s, g, tk, F_COUNT, s->fn.name(g->dev, name, sizeof name), "nvmlDeviceGetName") ||
        !check(s, g, tk, F_COUNT, s->fn.uuid(g->dev, uuid, sizeof uuid), "nvmlDeviceGetUUID"))
        return;
    name[sizeof name - 1] = uuid[sizeof uuid - 1] = '\0';
    if (g->uuid[0] && strcmp(g->uuid, uuid) != 0) {
        wt_warn(MOD, "another GPU at this index gpu=%u uuid=%s was=%s", g->index, uuid, g->uuid);
        reset_gpu(s, g);
    } else if (!g->uuid[0]) {
        reset_gpu(s, g);
    }
    copy_str(g->name, sizeof g->name, name, sizeof name);
    /* Its power readings are averages over this window (per generation): the integration
     * fallback places each at the middle of it. */
    g->integral.window_ns = wt_energy_nvml_power_window_ns(g->name);
    copy_str(g->uuid, sizeof g->uuid, uuid, sizeof uuid);

    if (want(g, tk, F_PCI)) {
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        if (check(s, g, tk, F_PCI, s->fn.pci(g->dev, &pci), "nvmlDeviceGetPciInfo")) {
            /* The original call fills only the 16-byte legacy id. */
            if (pci.busId[0])
                copy_str(g->pci, sizeof g->pci, pci.busId, sizeof pci.busId);
            else
                copy_str(g->pci, sizeof g->pci, pci.busIdLegacy, sizeof pci.busIdLegacy);
        }
    }
    if (want(g, tk, F_VBIOS)) {
        char v[NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE] = "";
        if (check(s, g, tk, F_VBIOS, s->fn.vbios(g->dev, v, sizeof v), "nvmlDeviceGetVbiosVersion"))
            copy_str(g->vbios, sizeof g->vbios, v, sizeof v);
    }
    if (want(g, tk, F_FAN)) {
        /* Without nvmlDeviceGetNumFans (before R460) the original call reads fan 0. */
        unsigned int n = 1;
        if (s->fn.num_fans &&
            !check(s, g, tk, F_FAN, s->fn.num_fans(g->dev, &n), "nvmlDeviceGetNumFans"))
            n = 0;
        if (!s->fn.fan_v2 && n > 1)
            n = 1;
        g->nfans = n < MAX_FANS ? n : MAX_FANS;
    }
    g->have_slowdown = g->have_shutdown = g->have_constraints = false;
    if (want(g, tk, F_SLOWDOWN))
        g->have_slowdown =
            check(s, g, tk, F_SLOWDOWN,
                  s->fn.threshold(g->dev, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &g->slowdown_c),
                  "nvmlDeviceGetTemperatureThreshold");
    if (want(g, tk, F_SHUTDOWN))
        g->have_shutdown =
            check(s, g, tk, F_SHUTDOWN,
                  s->fn.threshold(g->dev, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &g->shutdown_c),
                  "nvmlDeviceGetTemperatureThreshold");
    if (want(g, tk, F_CONSTRAINTS))
        g->have_constraints = check(s, g, tk, F_CONSTRAINTS,
                                    s->fn.constraints(g->dev, &g->limit_min_mw, &g->limit_max_mw),
                                    "nvmlDeviceGetPowerManagementLimitConstraints");
    if (want(g, tk, F_PERSISTENCE) && !g->persistence_warned) {
        nvmlEnableState_t mode = NVML_FEATURE_ENABLED;
        if (check(s, g, tk, F_PERSISTENCE, s->fn.persistence(g->dev, &mode),
                  "nvmlDeviceGetPersistenceMode") &&
            mode == NVML_FEATURE_DISABLED) {
            /* Without it the driver tears the GPU down between clients; each start wakes it
             * for ~1.5 s at ~75 W. wattage keeps its session open, other tools may not. */
            wt_warn(MOD,
                    "persistence mode is off gpu=%u uuid=%s: enable it (nvidia-persistenced) "
                    "so that GPU state is not rebuilt for every NVML client",
                    g->index, g->uuid);
            g->persistence_warned = true;
        }
    }
    build_labels(s, g);
    g->known = true;
}

/* One field value as a double; false for a value type this code does not know. */
static bool field_double(const nvmlFieldValue_t *fv, double *out)
{
    switch (fv->valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
        *out = fv->value.dVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *out = fv->value.uiVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        *out = (double)fv->value.ulVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *out = (double)fv->value.ullVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        *out = (double)fv->value.sllVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_INT:
        *out = fv->value.siVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        *out = fv->value.usVal;
        return true;
    }
    return false;
}

/* The health counters and gauges: ECC, remapped rows, PCIe replays, memory temperature, fans. */
static void sample_health(struct nvml_state *s, struct gpu *g, struct tick *tk, struct sample *v)
{
    nvmlDevice_t d = g->dev;
    static const struct {
        enum feature f;
        nvmlEccCounterType_t counter;
    } ecc[] = {{F_ECC_VOLATILE, NVML_VOLATILE_ECC}, {F_ECC_AGGREGATE, NVML_AGGREGATE_ECC}};
    for (size_t k = 0; k < 2; k++) {
        unsigned long long *out = k == 0 ? v->ecc_vol : v->ecc_agg;
        bool ok = want(g, tk, ecc[k].f) &&
                  check(s, g, tk, ecc[k].f,
                        s->fn.ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, ecc[k].counter, &out[0]),
                        "nvmlDeviceGetTotalEccErrors") &&
                  check(s, g, tk, ecc[k].f,
                        s->fn.ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, ecc[k].counter, &out[1]),
                        "nvmlDeviceGetTotalEccErrors");
        if (k == 0)
            v->have_ecc_vol = ok;
        else
            v->have_ecc_agg = ok;
    }
    if (want(g, tk, F_REMAP))
        v->have_remap =
            check(s, g, tk, F_REMAP,
                  s->fn.remapped_rows(d, &v->remap[0], &v->remap[1], &v->remap[2], &v->remap[3]),
                  "nvmlDeviceGetRemappedRows");
    if (want(g, tk, F_PCIE_REPLAY))
        v->have_replay = check(s, g, tk, F_PCIE_REPLAY, s->fn.pcie_replay(d, &v->replay),
                               "nvmlDeviceGetPcieReplayCounter");
    if (want(g, tk, F_MEM_TEMP)) {
        nvmlFieldValue_t fv;
        memset(&fv, 0, sizeof fv);
        fv.fieldId = NVML_FI_DEV_MEMORY_TEMP;
        nvmlReturn_t r = s->fn.field_values(d, 1, &fv);
        /* The call succeeds when it could ask; each value says whether it has an answer. */
        if (r == NVML_SUCCESS)
            r = fv.nvmlReturn;
        if (check(s, g, tk, F_MEM_TEMP, r, "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)"))
            v->have_mem_temp = field_double(&fv, &v->mem_temp_c);
    }
    if (want(g, tk, F_FAN)) {
        for (unsigned int f = 0; f < g->nfans; f++) {
            unsigned int pct = 0;
            nvmlReturn_t r = s->fn.fan_v2 ? s->fn.fan_v2(d, f, &pct) : s->fn.fan(d, &pct);
            if (!check(s, g, tk, F_FAN, r, "nvmlDeviceGetFanSpeed"))
                break;
            v->fan_pct[v->nfans++] = pct;
        }
    }
}

/* One energy counter read. While auto decides on sub-polls it also files what the read costs
 * this thread in CPU time (the field notes give ~3 ms wall on an H200, not how much of it is a
 * wait). */
static nvmlReturn_t read_counter(struct nvml_state *s, struct gpu *g, unsigned long long *mj)
{
    bool measure = !s->sub_decided;
    int64_t c0 = measure ? wt_thread_cpu_ns() : 0, w0 = measure ? wt_now_mono_ns() : 0;
    nvmlReturn_t r = s->fn.energy(g->dev, mj);
    g->read_end_ns = wt_now_real_ns();
    if (measure) {
        s->auto_cpu_ns += wt_thread_cpu_ns() - c0;
        s->auto_wall_ns += wt_now_mono_ns() - w0;
        s->auto_calls++;
    }
    return r;
}

/*
 * The energy counters of the GPUs that are up, back to back before any other call: a poll's
 * readings carry its one stamp, and GPU k's counter would otherwise wait for GPU 0..k-1's other
 * calls (tens of ms on eight H200s), an error of power x that wait at every job edge. The
 * answers go through check() in sample_gpu, in their usual place.
 */
static void read_counters(struct nvml_state *s)
{
    for (unsigned int i = 0; i < s->n; i++) {
        struct gpu *g = &s->gpus[i];
        g->pre_read = s->fn.energy && g->known && g->up && !(g->unsupported & (1u << F_ENERGY));
        if (g->pre_read)
            g->pre_r = read_counter(s, g, &g->pre_mj);
    }
}

/* Every per-tick call; the power call goes first and doubles as the liveness probe. */
static void sample_gpu(struct nvml_state *s, struct gpu *g, struct tick *tk, struct sample *v)
{
    nvmlDevice_t d = g->dev;
    if (want(g, tk, F_POWER))
        v->have_power =
            check(s, g, tk, F_POWER, s->fn.power(d, &v->power_mw), "nvmlDeviceGetPowerUsage");
    if (want(g, tk, F_ENERGY)) {
        nvmlReturn_t r = g->pre_read ? g->pre_r : read_counter(s, g, &v->energy_mj);
        if (g->pre_read)
            v->energy_mj = g->pre_mj;
        v->have_energy = check(s, g, tk, F_ENERGY, r, "nvmlDeviceGetTotalEnergyConsumption");
    }
    if (want(g, tk, F_TEMP))
        v->have_temp =
            check(s, g, tk, F_TEMP, s->fn.temperature(d, NVML_TEMPERATURE_GPU, &v->temp_c),
                  "nvmlDeviceGetTemperature");
    if (want(g, tk, F_UTIL))
        v->have_util = check(s, g, tk, F_UTIL, s->fn.utilization(d, &v->util),
                             "nvmlDeviceGetUtilizationRates");
    if (want(g, tk, F_MEMORY))
        v->have_mem =
            check(s, g, tk, F_MEMORY, s->fn.memory(d, &v->mem), "nvmlDeviceGetMemoryInfo");
    if (want(g, tk, F_SM_CLOCK))
        v->have_sm = check(s, g, tk, F_SM_CLOCK, s->fn.clock(d, NVML_CLOCK_SM, &v->sm_mhz),
                           "nvmlDeviceGetClockInfo");
    if (want(g, tk, F_MEM_CLOCK))
        v->have_memclk = check(s, g, tk, F_MEM_CLOCK, s->fn.clock(d, NVML_CLOCK_MEM, &v->mem_mhz),
                               "nvmlDeviceGetClockInfo");
    if (want(g, tk, F_THROTTLE))
        v->have_throttle = check(s, g, tk, F_THROTTLE, s->fn.throttle(d, &v->throttle),
                                 "nvmlDeviceGetCurrentClocksEventReasons");
    if (want(g, tk, F_LIMIT))
        v->have_limit = check(s, g, tk, F_LIMIT, s->fn.power_limit(d, &v->limit_mw),
                              "nvmlDeviceGetEnforcedPowerLimit");
    if (want(g, tk, F_PSTATE))
        v->have_pstate =
            check(s, g, tk, F_PSTATE, s->fn.pstate(d, &v->pstate), "nvmlDeviceGetPerformanceState");
    sample_health(s, g, tk, v);
}

static int add(struct wt_batch *out, int metric, const char *labels, int64_t t_ns, double value)
{
    return wt_batch_add(out, metric, labels, t_ns, value);
}

static int emit_up(const struct gpu *g, int64_t t_ns, struct wt_batch *out)
{
    int rc = add(out, WT_M_GPU_INFO, g->info_labels, t_ns, 1);
    if (!rc)
        rc = add(out, WT_M_GPU_UP, g->labels, t_ns, g->up ? 1 : 0);
    return rc;
}

/* metric{labels,key="val"[,key2="val2"]} = value; 0, or -E2BIG/-ENOMEM. */
static int add_with(struct wt_batch *out, int metric, const char *labels, const char *key,
                    const char *val, const char *key2, const char *val2, int64_t t_ns, double value)
{
    char l[WT_LABELS_LEN];
    memcpy(l, labels, sizeof l);
    if (wt_labels_add(l, sizeof l, key, val) || (key2 && wt_labels_add(l, sizeof l, key2, val2)))
        return -E2BIG;
    return add(out, metric, l, t_ns, value);
}

static int emit_xids(struct nvml_state *s, const struct gpu *g, int64_t t_ns, struct wt_batch *out)
{
    struct xid_count c[MAX_XIDS + 1];
    unsigned int n = 0;
    int rc = 0;
    if (!s->xid || g->index >= s->xid->n || !s->xid->g[g->index].registered)
        return 0;
    pthread_mutex_lock(&s->xid->mu);
    n = s->xid->g[g->index].n;
    memcpy(c, s->xid->g[g->index].c, n * sizeof c[0]);
    pthread_mutex_unlock(&s->xid->mu);
    for (unsigned int i = 0; i < n; i++) {
        char code[16];
        if (c[i].xid)
            snprintf(code, sizeof code, "%u", c[i].xid);
        else
            snprintf(code, sizeof code, "other");
        rc |= add_with(out, WT_M_GPU_XID_ERRORS, g->labels, "xid", code, NULL, NULL, t_ns,
                       (double)c[i].n);
    }
    return rc;
}

static int emit_health(struct nvml_state *s, const struct gpu *g, const struct sample *v,
                       int64_t t_ns, struct wt_batch *out)
{
    static const char *const types[2] = {"corrected", "uncorrected"};
    static const char *const kinds[4] = {"correctable", "uncorrectable", "pending", "failure"};
    const char *l = g->labels;
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        if (v->have_ecc_vol)
            rc |= add_with(out, WT_M_GPU_ECC_ERRORS, l, "type", types[k], "counter", "volatile",
                           t_ns, (double)v->ecc_vol[k]);
        if (v->have_ecc_agg)
            rc |= add_with(out, WT_M_GPU_ECC_ERRORS, l, "type", types[k], "counter", "aggregate",
                           t_ns, (double)v->ecc_agg[k]);
    }
    for (int k = 0; v->have_remap && k < 4; k++)
        rc |= add_with(out, WT_M_GPU_REMAPPED_ROWS, l, "kind", kinds[k], NULL, NULL, t_ns,
                       k < 2         ? (double)v->remap[k]
                       : v->remap[k] ? 1
                                     : 0);
    if (v->have_replay)
        rc |= add(out, WT_M_GPU_PCIE_REPLAYS, l, t_ns, (double)v->replay);
    if (v->have_mem_temp)
        rc |= add(out, WT_M_GPU_MEM_TEMP_C, l, t_ns, v->mem_temp_c);
    for (unsigned int f = 0; f < v->nfans; f++) {
        char fan[16];
        snprintf(fan, sizeof fan, "%u", f);
        /* raw: percent of the fan's maximum */
        rc |= add_with(out, WT_M_GPU_FAN_RATIO, l, "fan", fan, NULL, NULL, t_ns,
                       v->fan_pct[f] / 100.0);
    }
    return rc | emit_xids(s, g, t_ns, out);
}

/* The energy counter's reading, from a tick or a sub-poll. */
static int emit_counter(struct gpu *g, unsigned long long raw_mj, int64_t t_ns,
                        struct wt_batch *out)
{
    /* raw: mJ since the driver loaded. Modulus 0: a decrease is a reset, not a wrap. */
    enum wt_delta_kind k = wt_energy_counter_update(&g->counter, t_ns, (uint64_t)raw_mj, 0, 0);
    if (k == WT_DELTA_FIRST)
        g->first_raw_mj = raw_mj;
    else if (k == WT_DELTA_RESET)
        wt_warn(MOD, "energy counter went back gpu=%u uuid=%s (driver reload?): new baseline",
                g->index, g->uuid);
    return add(out, WT_M_GPU_ENERGY_J, g->labels, t_ns,
               (double)(g->first_raw_mj + g->counter.total_raw) / 1000.0);
}

static int emit(struct nvml_state *s, struct gpu *g, const struct sample *v, int64_t t_ns,
                struct wt_batch *out)
{
    const char *l = g->labels;
    int rc = emit_up(g, t_ns, out);
    if (rc)
        return rc;

    if (v->have_power) {
        double w = v->power_mw / 1000.0; /* raw: mW */
        rc |= add(out, WT_M_GPU_POWER_W, l, t_ns, w);
        wt_energy_integral_update(&g->integral, t_ns, w, s->max_gap_ns);
        rc |= add(out, WT_M_GPU_ENERGY_INTEGRATED_J, l, t_ns, g->integral.total_j);
        rc |= add(out, WT_M_GPU_ENERGY_GAPS, l, t_ns, (double)g->integral.gaps);
    }
    if (v->have_energy) {
        rc |= emit_counter(g, v->energy_mj, t_ns, out);
        /* The counter was read up to this long after the poll's stamp it carries (store/uncert.h
         * counts power x this at a window edge on the reading), rounded up to 10 us: a bound,
         * whose jitter below that would cost the store bytes (bench/results). */
        int64_t skew_ns = g->read_end_ns > t_ns ? g->read_end_ns - t_ns : 0;
        rc |= add(out, WT_M_GPU_ENERGY_READ_SKEW_S, l, t_ns,
                  (double)((skew_ns + 9999) / 10000) / 1e5);
        g->have_energy_mj = true;
        g->energy_mj = g->first_raw_mj + g->counter.total_raw;
    } else if (v->have_power) {
        /* Without a counter the split is of the integrated power, in whole mJ. */
        g->have_energy_mj = true;
        g->energy_mj = (uint64_t)(g->integral.total_j * 1000.0);
    }
    if (v->have_temp)
        rc |= add(out, WT_M_GPU_TEMP_C, l, t_ns, v->temp_c);
    if (g->have_slowdown)
        rc |= add(out, WT_M_GPU_SLOWDOWN_TEMP_C, l, t_ns, g->slowdown_c);
    if (g->have_shutdown)
        rc |= add(out, WT_M_GPU_SHUTDOWN_TEMP_C, l, t_ns, g->shutdown_c);
    if (v->have_util) {
        g->busy = v->util.gpu / 100.0;
        rc |= add(out, WT_M_GPU_UTIL_RATIO, l, t_ns, v->util.gpu / 100.0);
        rc |= add(out, WT_M_GPU_MEM_UTIL_RATIO, l, t_ns, v->util.memory / 100.0);
    }
    if (v->have_mem) {
        rc |= add(out, WT_M_GPU_MEM_USED_B, l, t_ns, (double)v->mem.used);
        rc |= add(out, WT_M_GPU_MEM_TOTAL_B, l, t_ns, (double)v->mem.total);
    }
    if (v->have_sm)
        rc |= add(out, WT_M_GPU_SM_CLOCK_HZ, l, t_ns, v->sm_mhz * 1e6);
    if (v->have_memclk)
        rc |= add(out, WT_M_GPU_MEM_CLOCK_HZ, l, t_ns, v->mem_mhz * 1e6);
    if (v->have_limit)
        rc |= add(out, WT_M_GPU_POWER_LIMIT_W, l, t_ns, v->limit_mw / 1000.0);
    if (g->have_constraints) {
        rc |= add(out, WT_M_GPU_POWER_LIMIT_MIN_W, l, t_ns, g->limit_min_mw / 1000.0);
        rc |= add(out, WT_M_GPU_POWER_LIMIT_MAX_W, l, t_ns, g->limit_max_mw / 1000.0);
    }
    if (v->have_pstate && v->pstate <= NVML_PSTATE_15)
        rc |= add(out, WT_M_GPU_PSTATE, l, t_ns, (double)v->pstate);
    if (v->have_throttle) {
        rc |= add(out, WT_M_GPU_THROTTLE_REASONS, l, t_ns, (double)v->throttle);
        for (size_t i = 0; i < N_REASONS; i++) {
            char rl[WT_LABELS_LEN];
            memcpy(rl, l, sizeof rl);
            if (wt_labels_add(rl, sizeof rl, "reason", reasons[i].name))
                continue;
            rc |= add(out, WT_M_GPU_THROTTLED, rl, t_ns, (v->throttle & reasons[i].bit) ? 1 : 0);
        }
    }
    rc |= emit_health(s, g, v, t_ns, out);
    return rc ? -ENOMEM : 0;
}

/* ---- shared sessions ---- */

#define MAX_LIBS 4
static pthread_mutex_t sessions_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    wt_nvml_init_fn *init;
    unsigned int users;
} sessions[MAX_LIBS];

nvmlReturn_t wt_nvml_session_acquire(wt_nvml_init_fn *init)
{
    nvmlReturn_t r = NVML_SUCCESS;
    int free_slot = -1;
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < MAX_LIBS; i++) {
        if (sessions[i].users && sessions[i].init == init) {
            sessions[i].users++;
            goto out;
        }
        if (!sessions[i].users && free_slot < 0)
            free_slot = i;
    }
    /* The first user (or more libraries than slots: then each user has its own session). */
    r = init();
    if (r == NVML_SUCCESS && free_slot >= 0) {
        sessions[free_slot].init = init;
        sessions[free_slot].users = 1;
    }
out:
    pthread_mutex_unlock(&sessions_mu);
    return r;
}

void wt_nvml_session_release(wt_nvml_init_fn *init, wt_nvml_shutdown_fn *shutdown)
{
    if (!init)
        return;
    bool last = true;
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < MAX_LIBS; i++) {
        if (sessions[i].users && sessions[i].init == init) {
            last = --sessions[i].users == 0;
            break;
        }
    }
    if (last && shutdown)
        shutdown();
    pthread_mutex_unlock(&sessions_mu);
}

/* ---- XID events ---- */

/* What the common XIDs mean, from NVIDIA's XID catalog (Ampere and newer). */
static const struct {
    unsigned int xid;
    const char *meaning;
} xid_meanings[] = {
    {8, "GPU stopped processing"},
    {13, "Graphics Engine Exception"},
    {31, "GPU memory page fault"},
    {32, "Invalid or corrupted push buffer stream"},
    {43, "GPU stopped processing"},
    {45, "Preemptive cleanup, due to previous errors"},
    {48, "Double Bit ECC Error"},
    {61, "Internal micro-controller breakpoint/warning"},
    {62, "Internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recording event"},
    {64, "ECC page retirement or row remapper recording failure"},
    {68, "NVDEC0 Exception"},
    {69, "Graphics Engine class error"},
    {74, "NVLINK Error"},
    {79, "GPU has fallen off the bus"},
    {92, "High single-bit ECC error rate"},
    {94, "Contained ECC error"},
    {95, "Uncontained ECC error"},
    {119, "GSP RPC Timeout"},
    {120, "GSP Error"},
};

const char *wt_nvml_xid_meaning(unsigned int xid)
{
    for (size_t i = 0; i < sizeof xid_meanings / sizeof xid_meanings[0]; i++)
        if (xid_meanings[i].xid == xid)
            return xid_meanings[i].meaning;
    return NULL;
}

/*
 * Counts one XID of GPU slot x. The first of each code on a GPU is logged with its meaning; the
 * same code again at most once a minute with how many came meanwhile, so that a storm of them
 * (a broken board can raise thousands a second) is a few lines, not a flood.
 */
static void xid_record(struct xid_ctx *s, struct xid_gpu *x, unsigned int xid)
{
    int64_t now = wt_now_mono_ns();
    bool first = false, say = false;
    uint64_t total = 0, since = 0;
    pthread_mutex_lock(&s->mu);
    struct xid_count *c = NULL;
    for (unsigned int i = 0; i < x->n && !c; i++)
        if (x->c[i].xid == xid)
            c = &x->c[i];
    if (!c && x->n < MAX_XIDS) {
        c = &x->c[x->n++];
        c->xid = xid;
        c->rl.interval_ns = LOG_EVERY_NS;
    }
    if (!c) {
        /* More distinct codes than slots: the rest share "other" (code 0). */
        for (unsigned int i = 0; i < x->n && !c; i++)
            if (x->c[i].xid == 0)
                c = &x->c[i];
        if (!c) {
            c = &x->c[x->n++];
            c->xid = 0;
            c->rl.interval_ns = LOG_EVERY_NS;
        }
    }
    c->n++;
    first = c->n == 1;
    if (wt_ratelimit_ok(&c->rl, now, NULL)) {
        say = true;
        since = c->n - c->logged;
        total = c->n;
        c->logged = c->n;
    }
    pthread_mutex_unlock(&s->mu);
    if (!say)
        return;
    const char *m = wt_nvml_xid_meaning(xid);
    if (first)
        wt_warn(MOD, "XID %u gpu=%u uuid=%s: %s", xid, x->index, x->uuid,
                m ? m : "see NVIDIA's XID catalog");
    else
        wt_warn(MOD, "XID %u again gpu=%u uuid=%s: %llu since the last line, %llu in all (%s)", xid,
                x->index, x->uuid, (unsigned long long)since, (unsigned long long)total,
                m ? m : "see NVIDIA's XID catalog");
}

/* Lets go of one reference; the last frees the set, ends the session, closes the library. */
static void xid_ctx_unref(struct xid_ctx *x)
{
    if (!x || atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    if (x->set && x->set_free)
        x->set_free(x->set);
    if (x->session)
        wt_nvml_session_release(x->init, x->shutdown);
    if (x->dl)
        dlclose(x->dl);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/*
 * The signal that ends a wait early: a real-time signal with a handler that does nothing,
 * installed without SA_RESTART, sent only to the event thread (pthread_kill). It is not used
 * when something else already handles that signal.
 */
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static int wake_sig; /* 0: no signal, close waits XID_JOIN_NS and then lets the thread go */

static void wake_handler(int sig)
{
    (void)sig;
}

static void wake_install(void)
{
    struct sigaction sa, old;
    int sig = SIGRTMIN + 5;
    if (sig > SIGRTMAX || sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = wake_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocked wait returns with EINTR */
    if (sigaction(sig, &sa, NULL) == 0)
        wake_sig = sig;
}

/* The event thread: waits on the set (never polls the GPUs), counts what comes. */
static void *xid_main(void *arg)
{
    struct xid_ctx *s = arg;
    struct wt_ratelimit rl = {.interval_ns = LOG_EVERY_NS};
    if (wake_sig) {
        /* The daemon's threads block its stop signals; this one takes its wake-up. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, wake_sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    while (!atomic_load(&s->stop)) {
        nvmlEventData_t ev;
        memset(&ev, 0, sizeof ev);
        nvmlReturn_t r = s->wait(s->set, &ev, XID_WAIT_MS);
        if (atomic_load(&s->stop))
            break;
        if (r == NVML_ERROR_TIMEOUT)
            continue;
        if (r != NVML_SUCCESS) {
            uint64_t suppressed = 0;
            const char *m = s->error_string ? s->error_string(r) : NULL;
            if (wt_ratelimit_ok(&rl, wt_now_mono_ns(), &suppressed))
                wt_warn(MOD, "nvmlEventSetWait failed error=\"%s\" (%d) suppressed=%llu",
                        m ? m : "unknown error", (int)r, (unsigned long long)suppressed);
            /* A lost GPU answers at once: do not spin on it (a stop cuts the pause short). */
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (!(ev.eventType & nvmlEventTypeXidCriticalError))
            continue;
        for (unsigned int i = 0; i < s->n; i++) {
            if (s->g[i].registered && s->g[i].dev == ev.device) {
                xid_record(s, &s->g[i], (unsigned int)ev.eventData);
                break;
            }
        }
    }
    pthread_mutex_lock(&s->mu);
    s->exited = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    xid_ctx_unref(s);
    return NULL;
}

static struct xid_ctx *xid_ctx_new(struct nvml_state *s)
{
    struct xid_ctx *x = calloc(1, sizeof *x + s->n * sizeof x->g[0]);
    if (!x)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&x->mu, NULL);
    atomic_store(&x->refs, 1);
    x->n = s->n;
    x->init = s->fn.init;
    x->shutdown = s->fn.shutdown;
    x->error_string = s->fn.error_string;
    x->wait = s->fn.event_wait;
    x->set_free = s->fn.event_set_free;
    return x;
}

/*
 * Registers every GPU that supports XID events in one event set and starts the thread that
 * waits on it. A library or GPU without events has no XID series (said once); nothing fails.
 */
static void xid_start(struct nvml_state *s)
{
    if (!s->fn.event_set_create || !s->fn.register_events || !s->fn.event_wait) {
        wt_info(MOD, "%s has no event calls: XID events are not counted", s->library);
        return;
    }
    struct xid_ctx *x = s->xid = xid_ctx_new(s);
    if (!x)
        return;
    nvmlReturn_t r = s->fn.event_set_create(&x->set);
    if (r != NVML_SUCCESS) {
        wt_warn(MOD, "nvmlEventSetCreate failed error=\"%s\" (%d): XID events are not counted",
                errstr(s, r), (int)r);
        x->set = NULL;
        return;
    }
    unsigned int nreg = 0;
    bool warned = false;
    for (unsigned int i = 0; i < s->n; i++) {
        struct gpu *g = &s->gpus[i];
        struct xid_gpu *xg = &x->g[i];
        xg->index = i;
        if (!g->known)
            continue;
        unsigned long long types = nvmlEventTypeXidCriticalError;
        if (s->fn.supported_events && s->fn.supported_events(g->dev, &types) != NVML_SUCCESS)
            types = nvmlEventTypeXidCriticalError; /* let the registration say */
        r = (types & nvmlEventTypeXidCriticalError)
                ? s->fn.register_events(g->dev, nvmlEventTypeXidCriticalError, x->set)
                : NVML_ERROR_NOT_SUPPORTED;
        if (r != NVML_SUCCESS) {
            struct tick tk = {0};
            /* NOT_SUPPORTED is said once (check); anything else once too, as a warning (the
             * same answer on every GPU is one cause). */
            if (!check(s, g, &tk, F_XID, r, "nvmlDeviceRegisterEvents") &&
                r != NVML_ERROR_NOT_SUPPORTED && !warned) {
                wt_warn(MOD, "XID events not registered gpu=%u uuid=%s error=\"%s\" (%d)%s", i,
                        g->uuid, errstr(s, r), (int)r,
                        r == NVML_ERROR_NO_PERMISSION ? " (run as root to count XIDs)" : "");
                warned = true;
            }
            continue;
        }
        xg->dev = g->dev;
        copy_str(xg->uuid, sizeof xg->uuid, g->uuid, sizeof g->uuid);
        xg->registered = true;
        nreg++;
    }
    if (!nreg)
        return;
    /* The thread's own references: the library stays mapped and NVML up while it waits. */
    x->dl = dlopen(s->library, RTLD_NOW | RTLD_LOCAL);
    x->session = x->dl && wt_nvml_session_acquire(s->fn.init) == NVML_SUCCESS;
    pthread_once(&wake_once, wake_install);
    atomic_store(&x->stop, false);
    atomic_store(&x->refs, 2);
    if (!x->session || pthread_create(&s->xid_thread, NULL, xid_main, x) != 0) {
        atomic_store(&x->refs, 1);
        wt_warn(MOD, "cannot start the XID event thread: XID events are not counted");
        for (unsigned int i = 0; i < s->n; i++)
            x->g[i].registered = false;
        return;
    }
    s->xid_running = true;
}

/*
 * Stops the event thread; before the collector's nvmlShutdown. The stop flag is set and the
 * thread signalled (again every 20 ms, in case the signal came just before it entered the
 * wait) for up to XID_JOIN_NS; a thread back by then is joined. One still blocked (a library
 * whose wait does not return on a signal) is let go: it ends when its wait does, at most
 * XID_WAIT_MS later, and then frees the set and releases its own session.
 */
static void xid_stop(struct nvml_state *s)
{
    struct xid_ctx *x = s->xid;
    if (s->xid_running) {
        int64_t deadline = wt_now_mono_ns() + XID_JOIN_NS;
        atomic_store(&x->stop, true);
        pthread_mutex_lock(&x->mu);
        while (!x->exited) {
            int64_t now = wt_now_mono_ns();
            if (now >= deadline)
                break;
            if (wake_sig)
                pthread_kill(s->xid_thread, wake_sig);
            int64_t until = now + 20 * WT_NS_PER_MS < deadline ? now + 20 * WT_NS_PER_MS : deadline;
            struct timespec ts = {(time_t)(until / WT_NS_PER_S), (long)(until % WT_NS_PER_S)};
            pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        }
        bool exited = x->exited;
        pthread_mutex_unlock(&x->mu);
        if (exited) {
            pthread_join(s->xid_thread, NULL);
        } else {
            pthread_detach(s->xid_thread);
            wt_info(MOD,
                    "the XID event thread is still in nvmlEventSetWait: it ends by itself within "
                    "%d s (then its event set is freed and its NVML session ends)",
                    XID_WAIT_MS / 1000);
        }
        s->xid_running = false;
    }
    xid_ctx_unref(x);
    s->xid = NULL;
}

static bool library_level(nvmlReturn_t r)
{
    return r == NVML_ERROR_UNINITIALIZED || r == NVML_ERROR_DRIVER_NOT_LOADED ||
           r == NVML_ERROR_LIB_RM_VERSION_MISMATCH || r == NVML_ERROR_LIBRARY_NOT_FOUND;
}

/* Marks g down after a failed tick; logs the first time, then at most once a minute. */
static void mark_down(const struct nvml_state *s, struct gpu *g, const struct tick *tk)
{
    uint64_t suppressed = 0;
    int64_t now = wt_now_mono_ns();
    nvmlReturn_t r = tk->hard ? tk->hard : NVML_ERROR_UNKNOWN;
    const char *what = tk->hard_what ? tk->hard_what : "nvml";
    if (g->up) {
        g->up = false;
        g->failed_ticks = 1;
        g->down_rl.last_ns = 0;
        (void)wt_ratelimit_ok(&g->down_rl, now, NULL);
        wt_warn(MOD, "GPU %s gpu=%u uuid=%s call=%s error=\"%s\" (%d)",
                r == NVML_ERROR_GPU_IS_LOST ? "lost" : "not answering", g->index,
                g->uuid[0] ? g->uuid : "unknown", what, errstr(s, r), (int)r);
    } else {
        g->failed_ticks++;
        if (wt_ratelimit_ok(&g->down_rl, now, &suppressed))
            wt_warn(MOD, "GPU still down gpu=%u uuid=%s failed_ticks=%llu error=\"%s\" (%d)",
                    g->index, g->uuid[0] ? g->uuid : "unknown", (unsigned long long)g->failed_ticks,
                    errstr(s, r), (int)r);
    }
    /* The power series restarts when it comes back: the outage is a gap, not a trapezoid. */
    wt_energy_integral_break(&g->integral);
    g->known = false; /* re-read handle and static info on the next tick */
}

/* Polls one GPU. Returns the tick's hard error when the GPU is down, else NVML_SUCCESS. */
static nvmlReturn_t poll_gpu(struct nvml_state *s, struct gpu *g, int64_t t_ns,
                             struct wt_batch *out, int *rc)
{
    struct tick tk = {0};
    struct sample v;
    memset(&v, 0, sizeof v);
    g->have_energy_mj = false;
    g->busy = -1;
    if (!g->known)
        discover(s, g, &tk);
    if (g->known && !tk.lost)
        sample_gpu(s, g, &tk, &v);

    /* Essential: the handle and static info, then power (or, without power, the counter). */
    bool essential_failed = !g->known;
    if (!(g->unsupported & (1u << F_POWER)))
        essential_failed |= !v.have_power;
    else if (!(g->unsupported & (1u << F_ENERGY)))
        essential_failed |= !v.have_energy;
    if (tk.lost || essential_failed || (tk.hard && tk.ok == 0)) {
        if (!tk.hard)
            tk.hard = NVML_ERROR_UNKNOWN;
        mark_down(s, g, &tk);
        *rc |= emit_up(g, t_ns, out);
        return tk.hard;
    }
    if (!g->up) {
        wt_info(MOD, "GPU back gpu=%u uuid=%s after %llu failed ticks", g->index, g->uuid,
                (unsigned long long)g->failed_ticks);
        g->up = true;
        g->failed_ticks = 0;
    }
    if (tk.hard) {
        uint64_t suppressed = 0;
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &suppressed))
            wt_warn(MOD, "%s failed gpu=%u uuid=%s error=\"%s\" (%d) suppressed=%llu", tk.hard_what,
                    g->index, g->uuid, errstr(s, tk.hard), (int)tk.hard,
                    (unsigned long long)suppressed);
    }
    *rc |= emit(s, g, &v, t_ns, out);
    *rc |= wt_nvml_fields_poll_gpu(s->fields, g->index, g->dev, g->uuid, g->labels, t_ns, out);
    /* The parent's energy of this tick over its MIG instances, counted once (nvml_mig.h). */
    *rc |= wt_nvml_mig_poll_gpu(s->mig, g->index, g->dev, g->uuid, g->labels, g->have_energy_mj,
                                g->energy_mj, g->busy, t_ns, out);
    return NVML_SUCCESS;
}

/* ---- running processes, and the split of each GPU's energy over them ---- */

static void add_pid(struct wt_gpu_procs *p, unsigned int pid, unsigned long long mem_b,
                    unsigned int instance)
{
    for (unsigned int i = 0; i < p->npids; i++) {
        if (p->pids[i] == pid) {
            if (mem_b != WT_NVML_NO_MEMORY &&
                (p->mem_b[i] == WT_NVML_NO_MEMORY || mem_b > p->mem_b[i]))
                p->mem_b[i] = mem_b;
            return;
        }
    }
    if (p->npids < WT_NVML_MAX_PROCS) {
        p->mem_b[p->npids] = mem_b;
        p->instance[p->npids] = instance;
        p->pids[p->npids++] = pid;
    }
}

/* One of the two lists (compute or graphics) of a GPU into p. Returns the NVML answer. */
static nvmlReturn_t read_procs(wt_nvml_procs_fn *f, wt_nvml_procs_v1_fn *f1, nvmlDevice_t d,
                               struct wt_gpu_procs *p)
{
    unsigned int count = PROCS_BUF;
    nvmlReturn_t r;
    if (f) {
        nvmlProcessInfo_t buf[PROCS_BUF];
        r = f(d, &count, buf);
        for (unsigned int i = 0; r == NVML_SUCCESS && i < count && i < PROCS_BUF; i++)
            add_pid(p, buf[i].pid, buf[i].usedGpuMemory, buf[i].gpuInstanceId);
    } else if (f1) {
        nvmlProcessInfo_v1_t buf[PROCS_BUF];
        r = f1(d, &count, buf);
        for (unsigned int i = 0; r == NVML_SUCCESS && i < count && i < PROCS_BUF; i++)
            add_pid(p, buf[i].pid, buf[i].usedGpuMemory, WT_NVML_NO_INSTANCE);
    } else {
        r = NVML_ERROR_NOT_SUPPORTED;
    }
    return r;
}

/*
 * The per-process samples newer than the last taken: *n of them in s->util_buf. Returns false
 * when the GPU cannot say this time (then the split falls back), and marks it for good when it
 * answers NOT_SUPPORTED. NOT_FOUND is an answer: no process ran a kernel since.
 */
static bool read_util(struct nvml_state *s, struct gpu *g, unsigned int *n)
{
    *n = 0;
    if (!s->fn.proc_util || g->proc_util_unsupported)
        return false;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!s->util_buf) {
            s->util_buf = calloc(s->util_cap, sizeof *s->util_buf);
            if (!s->util_buf)
                return false;
        }
        unsigned int count = s->util_cap;
        nvmlReturn_t r = s->fn.proc_util(g->dev, s->util_buf, &count, g->util_seen_us);
        if (r == NVML_SUCCESS) {
            *n = count < s->util_cap ? count : s->util_cap;
            for (unsigned int i = 0; i < *n; i++)
                if (s->util_buf[i].timeStamp > g->util_seen_us)
                    g->util_seen_us = s->util_buf[i].timeStamp;
            return true;
        }
        if (r == NVML_ERROR_NOT_FOUND)
            return true;
        if (r == NVML_ERROR_INSUFFICIENT_SIZE && count > s->util_cap && count < (1u << 16)) {
            free(s->util_buf);
            s->util_buf = NULL;
            s->util_cap = count + 64;
            continue;
        }
        if (r == NVML_ERROR_NOT_SUPPORTED) {
            g->proc_util_unsupported = true;
            if (s->said_proc_util)
                return false;
            s->said_proc_util = true; /* once: a board without it has eight GPUs without it */
            wt_info(MOD,
                    "per-process utilization: %s gpu=%u uuid=%s: its energy is split by memory "
                    "used, else equally (wattage_gpu_attribution_info says which)",
                    errstr(s, r), g->index, g->uuid);
        }
        return false;
    }
    return false;
}

/*
 * Splits GPU g's energy since its last split over the processes of p (collect/attrib.h): by
 * each process's mean SM utilization over the interval where NVML samples it (the GPU's idle
 * share to idle), else by memory used, else equally (both scaled by the GPU's utilization when
 * known). Energy across a gap (no split for 3 s, or 3 intervals when they are longer: the GPU
 * was down) is idle: nobody is known to have used it.
 */
static void attribute(struct nvml_state *s, struct gpu *g, const struct wt_gpu_procs *p,
                      int64_t t_ns)
{
    unsigned int nsamp = 0;
    bool have_util = read_util(s, g, &nsamp);
    if (!g->attrib_started || g->energy_mj < g->attrib_mj) {
        /* the first interval (or the integrated series started again): a baseline */
        g->attrib_started = true;
        g->attrib_mj = g->energy_mj;
        g->attrib_at = t_ns;
        return;
    }
    uint64_t energy = g->energy_mj - g->attrib_mj;
    bool gap = t_ns - g->attrib_at > s->attrib_gap_ns;
    struct wt_attrib_share sh[WT_NVML_MAX_PROCS];
    double util[WT_NVML_MAX_PROCS] = {0};
    unsigned int cnt[WT_NVML_MAX_PROCS] = {0}, k_max = 0;
    bool mem_ok = p->npids > 0;
    /* Every START_REFRESH splits every start time is read again: a pid that left and came
     * back between two lists a second apart is the one reuse this cache could miss. */
    bool refresh = ++g->known_age >= START_REFRESH;
    if (refresh)
        g->known_age = 0;
    for (unsigned int i = 0; i < p->npids; i++) {
        struct wt_pid_stat st;
        bool cached = false;
        sh[i].pid = p->pids[i];
        /* Under MIG a process's series says its GPU instance: each process is counted once,
         * so the instances' series and idle sum to the parent's energy. */
        sh[i].instance = p->instance[i] == WT_NVML_NO_INSTANCE ? -1 : (int)p->instance[i];
        for (unsigned int k = 0; !refresh && k < g->known_n && !cached; k++) {
            /* the lists keep their order from one second to the next: look at i first */
            unsigned int j = (i + k) % g->known_n;
            if (g->known_pid[j] == p->pids[i] && g->known_start[j]) {
                sh[i].start = g->known_start[j];
                cached = true;
            }
        }
        /* A process gone since the list keeps its energy under its pid (start unknown). */
        if (!cached)
            sh[i].start = wt_procfs_pid_stat((int)p->pids[i], &st) == 0 ? st.start : 0;
        if (p->mem_b[i] == WT_NVML_NO_MEMORY)
            mem_ok = false;
    }
    for (unsigned int i = 0; i < p->npids; i++) {
        g->known_pid[i] = sh[i].pid;
        g->known_start[i] = sh[i].start;
    }
    g->known_n = p->npids;
    for (unsigned int k = 0; have_util && k < nsamp; k++) {
        for (unsigned int i = 0; i < p->npids; i++) {
            if (s->util_buf[k].pid == p->pids[i]) {
                util[i] += s->util_buf[k].smUtil;
                if (++cnt[i] > k_max)
                    k_max = cnt[i];
                break;
            }
        }
    }
    enum wt_attrib_method m;
    double busy = g->busy >= 0 ? g->busy : 1;
    uint64_t mem_total = 0;
    for (unsigned int i = 0; mem_ok && i < p->npids; i++)
        mem_total += p->mem_b[i];
    if (have_util) {
        /* The mean over the interval's sample periods (a process absent from one ran nothing). */
        double sum = 0;
        m = WT_ATTRIB_UTILIZATION;
        for (unsigned int i = 0; i < p->npids; i++) {
            double u = k_max ? util[i] / k_max : 0;
            sh[i].weight = (uint64_t)(u * 1000 + 0.5);
            sum += u;
        }
        busy = sum / 100;
    } else if (mem_ok && mem_total > 0) {
        m = WT_ATTRIB_MEMORY;
        for (unsigned int i = 0; i < p->npids; i++)
            sh[i].weight = p->mem_b[i];
    } else {
        m = WT_ATTRIB_EQUAL;
        for (unsigned int i = 0; i < p->npids; i++)
            sh[i].weight = 1;
    }
    if (gap)
        busy = 0;
    char idx[16], labels[WT_LABELS_LEN];
    snprintf(idx, sizeof idx, "%u", g->index);
    if (wt_labels(labels, sizeof labels, "gpu", idx, "uuid", g->uuid, NULL) != 0)
        (void)wt_labels(labels, sizeof labels, "gpu", idx, NULL);
    if (wt_attrib_account(s->attrib, g->index, labels, t_ns, energy, busy, m, sh, p->npids) != 0)
        return; /* not accounted: the next interval takes this one's energy too */
    g->attrib_mj = g->energy_mj;
    g->attrib_at = t_ns;
}

/*
 * Reads every up GPU's processes, at most once a second, splits each GPU's energy over them,
 * and publishes the list. A GPU that answers NOT_SUPPORTED to both calls is not asked again;
 * other failures leave that GPU out of this list (and its energy for the next split) and never
 * mark it down (the process list is not a health signal).
 */
static void poll_procs(struct nvml_state *s, int64_t t_ns, struct wt_batch *out, int *rc_out)
{
    int64_t now = wt_now_mono_ns();
    /* A tick may come a little early on the grid: 0.9 s counts as the second. */
    if (s->procs_at && now - s->procs_at < PROCS_EVERY_NS / 10 * 9) {
        /* Between splits (an interval under a second) the last split's series again, stamped
         * with its time: /metrics keeps them on every page, the store has them already. */
        if (s->attrib && s->split_t_ns && wt_attrib_emit(s->attrib, s->split_t_ns, out) != 0)
            *rc_out |= -ENOMEM;
        return;
    }
    s->procs_at = now;
    struct wt_gpu_procs *list = calloc(s->n ? s->n : 1, sizeof *list);
    size_t n = 0;
    bool split = false;
    if (!list)
        return;
    for (unsigned int i = 0; i < s->n; i++) {
        struct gpu *g = &s->gpus[i];
        if (!g->up || !g->known || (g->unsupported & (1u << F_PROCS)))
            continue;
        struct wt_gpu_procs *p = &list[n];
        p->gpu = g->index;
        snprintf(p->uuid, sizeof p->uuid, "%s", g->uuid);
        nvmlReturn_t rc = read_procs(s->fn.compute_procs, s->fn.compute_procs_v1, g->dev, p);
        nvmlReturn_t rg = read_procs(s->fn.graphics_procs, s->fn.graphics_procs_v1, g->dev, p);
        if (rc == NVML_ERROR_NOT_SUPPORTED && rg == NVML_ERROR_NOT_SUPPORTED) {
            g->unsupported |= 1u << F_PROCS;
            wt_debug(MOD, "running processes: not supported gpu=%u uuid=%s", g->index, g->uuid);
            continue;
        }
        if (rc == NVML_SUCCESS || rg == NVML_SUCCESS) {
            if (s->attrib && g->have_energy_mj && g->index < WT_ATTRIB_MAX_DEVICES) {
                attribute(s, g, p, t_ns);
                split = true;
            }
            n++;
        } else {
            memset(p, 0, sizeof *p);
        }
    }
    if (split)
        s->split_t_ns = t_ns;
    if (split && wt_attrib_emit(s->attrib, t_ns, out) != 0)
        *rc_out |= -ENOMEM;
    pthread_mutex_lock(&procs_mu);
    struct wt_gpu_procs *old = procs_list;
    procs_list = n ? list : NULL;
    procs_n = n;
    procs_t = t_ns;
    procs_owner = s;
    pthread_mutex_unlock(&procs_mu);
    free(old);
    if (!n)
        free(list);
}

int wt_nvml_processes(struct wt_gpu_procs *out, size_t cap, size_t *n, int64_t *t_ns)
{
    int rc = -ENODATA;
    *n = 0;
    *t_ns = 0;
    pthread_mutex_lock(&procs_mu);
    if (procs_list && procs_n) {
        *n = procs_n < cap ? procs_n : cap;
        memcpy(out, procs_list, *n * sizeof *out);
        *t_ns = procs_t;
        rc = 0;
    }
    pthread_mutex_unlock(&procs_mu);
    return rc;
}

static const struct wt_collector_config *nvml_config(const struct wt_config *cfg)
{
    return &cfg->collectors.nvml;
}

static void nvml_close(void *state)
{
    struct nvml_state *s = state;
    if (!s)
        return;
    pthread_mutex_lock(&procs_mu);
    if (procs_owner == s) {
        free(procs_list);
        procs_list = NULL;
        procs_n = 0;
        procs_owner = NULL;
    }
    pthread_mutex_unlock(&procs_mu);
    wt_attrib_close(s->attrib);
    free(s->util_buf);
    wt_nvml_fields_close(s->fields); /* its GPM samples, while NVML is still up */
    wt_nvml_mig_close(s->mig);
    if (s->inited)
        xid_stop(s);
    if (s->inited)
        wt_nvml_session_release(s->fn.init, s->fn.shutdown);
    if (s->dl)
        dlclose(s->dl);
    xid_ctx_unref(s->xid); /* a collector that failed before xid_stop */
    free(s->gpus);
    free(s);
}

static int resolve(struct nvml_state *s, struct wt_err *err)
{
    for (size_t i = 0; i < wt_nvml_symbol_count; i++) {
        const struct wt_nvml_symbol *e = &wt_nvml_symbols[i];
        void *p = NULL;
        for (int k = 0; k < WT_NVML_MAX_NAMES && e->names[k] && !p; k++)
            p = dlsym(s->dl, e->names[k]);
        if (!p && e->required) {
            wt_err_set(err, "%s does not export %s: not a usable NVML library", s->library,
                       e->names[0]);
            return -ENOSYS;
        }
        /* POSIX guarantees object and function pointers share a representation. */
        memcpy((char *)&s->fn + e->offset, &p, sizeof p);
        if (!p)
            wt_debug(MOD, "optional %s not in %s", e->names[0], s->library);
    }
    return 0;
}

static int nvml_open(const struct wt_config *cfg, void **state, struct wt_err *err)
{
    int rc;
    const char *path = getenv("WATTAGE_NVML_LIBRARY");
    if (!path || !*path)
        path =
            cfg && cfg->collectors.nvml_library[0] ? cfg->collectors.nvml_library : DEFAULT_LIBRARY;
    *state = NULL;
    struct nvml_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    snprintf(s->library, sizeof s->library, "%s", path);
    int64_t interval = cfg ? wt_config_interval(cfg, &cfg->collectors.nvml) : WT_NS_PER_S;
    s->interval_ns = interval;
    s->energy_cfg_ns = cfg ? cfg->collectors.nvml_energy_interval_ns : 0;
    s->max_gap_ns = 3 * (interval > 0 ? interval : WT_NS_PER_S);
    /* Splits are a second apart (PROCS_EVERY_NS) or an interval when it is longer: a gap is
     * 3 of those, not 3 intervals, or under 1/3 s every split would be a gap (all idle). */
    s->attrib_gap_ns = s->max_gap_ns > 3 * PROCS_EVERY_NS ? s->max_gap_ns : 3 * PROCS_EVERY_NS;

    dlerror();
    s->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!s->dl) {
        const char *why = dlerror();
        wt_err_set(err,
                   "%s not found (%s): no NVIDIA driver on this host, or set "
                   "collectors.nvml.library / WATTAGE_NVML_LIBRARY",
                   path, why ? why : "dlopen failed");
        rc = -ENOENT;
        goto fail;
    }
    rc = resolve(s, err);
    if (rc)
        goto fail;
    if (!s->fn.energy)
        wt_info(MOD,
                "%s has no nvmlDeviceGetTotalEnergyConsumption: GPU energy is integrated from "
                "power readings (wattage_gpu_energy_integrated_joules_total)",
                s->library);

    nvmlReturn_t r = wt_nvml_session_acquire(s->fn.init);
    if (r != NVML_SUCCESS) {
        wt_err_set(err, "nvmlInit failed in %s: %s (%d)", path, errstr(s, r), (int)r);
        /* A library without a loaded driver is the usual container/laptop case: absent. */
        rc =
            r == NVML_ERROR_DRIVER_NOT_LOADED || r == NVML_ERROR_LIBRARY_NOT_FOUND ? -ENOENT : -EIO;
        goto fail;
    }
    s->inited = true;
    if (s->fn.driver_version &&
        s->fn.driver_version(s->driver_version, sizeof s->driver_version) != NVML_SUCCESS)
        s->driver_version[0] = '\0';
    s->driver_version[sizeof s->driver_version - 1] = '\0';
    int cuda = 0;
    if (s->fn.cuda_version && s->fn.cuda_version(&cuda) == NVML_SUCCESS && cuda > 0)
        /* 12040 is 12.4 (NVML_CUDA_DRIVER_VERSION_MAJOR/MINOR) */
        snprintf(s->cuda_version, sizeof s->cuda_version, "%d.%d", cuda / 1000, cuda % 1000 / 10);

    r = s->fn.count(&s->n);
    if (r != NVML_SUCCESS) {
        wt_err_set(err, "nvmlDeviceGetCount failed: %s (%d)", errstr(s, r), (int)r);
        rc = -EIO;
        goto fail;
    }
    if (s->n == 0) {
        wt_err_set(err, "the driver in %s sees no GPU", path);
        rc = -ENOENT;
        goto fail;
    }
    s->gpus = calloc(s->n, sizeof *s->gpus);
    if (!s->gpus) {
        rc = -ENOMEM;
        goto fail;
    }
    for (unsigned int i = 0; i < s->n; i++) {
        struct gpu *g = &s->gpus[i];
        struct tick tk = {0};
        g->index = i;
        g->up = true;
        g->down_rl.interval_ns = g->err_rl.interval_ns = LOG_EVERY_NS;
        reset_gpu(s, g);
        build_labels(s, g);
        discover(s, g, &tk);
        if (!g->known)
            mark_down(s, g, &tk);
    }
    xid_start(s);
    /* Counters and GPM are additions too: without memory for them the GPUs are still read. */
    if (wt_nvml_fields_open(s->dl, s->library, s->n, s->fn.error_string, &s->fields) != 0)
        s->fields = NULL;
    /* Per tick, like the per-process split: across a gap the energy is idle. */
    if (wt_nvml_mig_open(s->dl, s->library, s->n, s->attrib_gap_ns, s->fn.error_string, &s->mig) !=
        0)
        s->mig = NULL;
    /* Attribution is an addition: without memory for it the GPUs are still read. */
    s->util_cap = PROCS_BUF;
    if ((!cfg || cfg->collectors.nvml_attribution) &&
        wt_attrib_open(WT_M_PROC_GPU_ENERGY_J, WT_M_GPU_ATTRIB_INFO, 1e-3,
                       cfg ? cfg->collectors.nvml_attrib_grace_ns : 300 * WT_NS_PER_S,
                       &s->attrib) == 0)
        wt_attrib_publish(0, s->attrib);
    wt_info(MOD, "%u GPUs library=%s driver=%s", s->n, s->library,
            s->driver_version[0] ? s->driver_version : "unknown");
    if (s->energy_cfg_ns != WT_CONFIG_AUTO || !s->fn.energy ||
        wt_nvml_auto_energy_interval(interval, 0) == 0) {
        /* Set (or off, or auto with ticks as close as the sub-polls would be): nothing to
         * measure. Sub-polls only where they fall between ticks. */
        s->sub_decided = true;
        s->sub_ns = s->fn.energy && s->energy_cfg_ns > 0 && s->energy_cfg_ns < interval
                        ? s->energy_cfg_ns
                        : 0;
        if (s->sub_ns)
            wt_info(MOD, "energy counters read every %.3g s between ticks",
                    (double)s->sub_ns / WT_NS_PER_S);
    }
    *state = s;
    return 0;
fail:
    nvml_close(s);
    return rc;
}

int64_t wt_nvml_auto_energy_interval(int64_t interval_ns, int64_t cpu_ns_per_tick)
{
    const int64_t sub = WT_NVML_AUTO_ENERGY_NS;
    if (interval_ns < 2 * sub || cpu_ns_per_tick < 0)
        return 0; /* ticks this fast are as good as sub-polls */
    /* (interval / sub - 1) sub-polls a tick, each cpu_ns_per_tick, within 1 % of a core */
    double per_s = (double)(interval_ns / sub - 1) * (double)cpu_ns_per_tick / (double)interval_ns;
    return per_s <= 0.01 ? sub : 0;
}

/* auto: after AUTO_TICKS ticks, sub-polls when the energy reads of a tick are cheap enough. */
static void decide_auto(struct nvml_state *s)
{
    int64_t cpu = s->auto_cpu_ns / s->auto_ticks;
    double per_call_cpu = (double)s->auto_cpu_ns / (double)s->auto_calls / 1e3;
    double per_call_wall = (double)s->auto_wall_ns / (double)s->auto_calls / 1e3;
    s->sub_ns = wt_nvml_auto_energy_interval(s->interval_ns, cpu);
    s->sub_decided = true;
    if (s->sub_ns)
        wt_info(MOD,
                "energy counters read every %.3g s between ticks (energy_interval auto): a read "
                "costs %.0f us CPU, %.0f us wall",
                (double)s->sub_ns / WT_NS_PER_S, per_call_cpu, per_call_wall);
    else
        wt_info(MOD,
                "energy counters read at the ticks only (energy_interval auto): a read costs "
                "%.0f us CPU, %.0f us wall; a tick's reads %.3f ms CPU",
                per_call_cpu, per_call_wall, (double)cpu / 1e6);
}

static int64_t nvml_sub_interval(void *state)
{
    const struct nvml_state *s = state;
    return s->sub_decided ? s->sub_ns : 0;
}

/*
 * A sub-poll: each GPU's energy counter alone, for the GPUs that are up and have one. A failed
 * read is left to the next tick, which says what is wrong (and marks a lost GPU down).
 */
static int nvml_sub_poll(void *state, int64_t t_ns, struct wt_batch *out)
{
    struct nvml_state *s = state;
    int rc = 0;
    for (unsigned int i = 0; i < s->n && s->fn.energy; i++) {
        struct gpu *g = &s->gpus[i];
        unsigned long long mj = 0;
        if (!g->up || !g->known || (g->unsupported & (1u << F_ENERGY)))
            continue;
        if (s->fn.energy(g->dev, &mj) == NVML_SUCCESS)
            rc |= emit_counter(g, mj, t_ns, out);
    }
    return rc ? -ENOMEM : 0;
}

static int nvml_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct nvml_state *s = state;
    int rc = 0;
    unsigned int lib_failed = 0;
    nvmlReturn_t last = NVML_SUCCESS;
    read_counters(s);
    for (unsigned int i = 0; i < s->n; i++) {
        nvmlReturn_t r = poll_gpu(s, &s->gpus[i], t_ns, out, &rc);
        if (library_level(r)) {
            lib_failed++;
            last = r;
        }
    }
    poll_procs(s, t_ns, out, &rc);
    rc |= wt_nvml_fields_poll_units(s->fields, t_ns, out);
    if (!s->sub_decided && s->auto_calls > 0 && ++s->auto_ticks >= AUTO_TICKS)
        decide_auto(s);
    if (rc)
        return wt_err_set(err, "out of memory for readings"), -ENOMEM;
    if (s->n && lib_failed == s->n) {
        wt_err_set(err, "every GPU failed: %s (%d)", errstr(s, last), (int)last);
        return -EIO;
    }
    return 0;
}

int wt_nvml_get_info(const void *state, struct wt_nvml_info *info)
{
    const struct nvml_state *s = state;
    if (!s || !info)
        return -EINVAL;
    snprintf(info->library, sizeof info->library, "%s", s->library);
    snprintf(info->driver_version, sizeof info->driver_version, "%s", s->driver_version);
    info->gpu_count = s->n;
    return 0;
}

const struct wt_collector_ops wt_nvml_collector = {
    .name = "nvml",
    .edge_samples = true,
    .sub_interval = nvml_sub_interval,
    .sub_poll = nvml_sub_poll,
    .config = nvml_config,
    .open = nvml_open,
    .poll = nvml_poll,
    .close = nvml_close,
};
