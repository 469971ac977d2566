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

#include "collect/nvml_base.h"
#include "collect/nvml_procs.h"
#include "collect/nvml_xid.h"
#include "collect/procfs.h"

#define DEFAULT_LIBRARY "libnvidia-ml.so.1"

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

/*
 * Each field's cadence (collect/cadence.h), by feature. Slow: what changes only when someone sets
 * it or on an event (a power limit, its range, the aggregate ECC counts kept over the board's
 * life, remapped rows, the power source: collect/nvml_fields.c, the MIG mode, which changes
 * only with a GPU reset: collect/nvml_mig.c), read at start, every
 * collectors.nvml.slow_interval, when a GPU is found again, after one of its XID events and after
 * wattage's capper sets a limit (wt_nvml_slow_refresh). Start: read when the GPU is found.
 */
static const struct wt_field_cadence cadence[] = {
    [F_POWER] = {"power", WT_CADENCE_TICK},
    [F_ENERGY] = {"energy", WT_CADENCE_TICK},
    [F_TEMP] = {"temperature", WT_CADENCE_TICK},
    [F_SLOWDOWN] = {"slowdown_temperature", WT_CADENCE_START},
    [F_SHUTDOWN] = {"shutdown_temperature", WT_CADENCE_START},
    [F_UTIL] = {"utilization", WT_CADENCE_TICK},
    [F_MEMORY] = {"memory", WT_CADENCE_TICK},
    [F_SM_CLOCK] = {"sm_clock", WT_CADENCE_TICK},
    [F_MEM_CLOCK] = {"memory_clock", WT_CADENCE_TICK},
    [F_THROTTLE] = {"throttle_reasons", WT_CADENCE_TICK},
    [F_LIMIT] = {"power_limit", WT_CADENCE_SLOW},
    [F_CONSTRAINTS] = {"power_limit_range", WT_CADENCE_SLOW},
    [F_PSTATE] = {"pstate", WT_CADENCE_TICK},
    [F_PERSISTENCE] = {"persistence_mode", WT_CADENCE_START},
    [F_PCI] = {"pci_bus_id", WT_CADENCE_START},
    [F_PROCS] = {"processes", WT_CADENCE_TICK},
    [F_VBIOS] = {"vbios_version", WT_CADENCE_START},
    [F_ECC_VOLATILE] = {"ecc_volatile", WT_CADENCE_TICK},
    [F_ECC_AGGREGATE] = {"ecc_aggregate", WT_CADENCE_SLOW},
    [F_REMAP] = {"remapped_rows", WT_CADENCE_SLOW},
    [F_PCIE_REPLAY] = {"pcie_replays", WT_CADENCE_TICK},
    [F_MEM_TEMP] = {"memory_temperature", WT_CADENCE_TICK},
    [F_FAN] = {"fan_speed", WT_CADENCE_TICK},
    [F_XID] = {"xid_events", WT_CADENCE_TICK},
    [F_COUNT] = {"power_source", WT_CADENCE_SLOW}, /* collect/nvml_fields.c's */
    [F_COUNT + 1] = {"mig_mode", WT_CADENCE_SLOW}, /* collect/nvml_mig.c's */
};
_Static_assert(sizeof cadence / sizeof cadence[0] == F_COUNT + 2, "a cadence per feature");
#define N_CADENCE (sizeof cadence / sizeof cadence[0])
#define DEFAULT_SLOW_NS (60 * WT_NS_PER_S)

/* Bumped by wt_nvml_slow_refresh; each collector reads its slow fields when it changes. */
static atomic_uint slow_refresh_gen;

void wt_nvml_slow_refresh(void)
{
    atomic_fetch_add(&slow_refresh_gen, 1);
}

static bool want(const struct gpu *g, const struct tick *tk, enum feature f)
{
    return !tk->lost && !(g->unsupported & (1u << f));
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
    if (!wt_nvml_check(s, g, tk, F_COUNT, r, "nvmlDeviceGetHandleByIndex"))
        return;

    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    if (!wt_nvml_check(s, g, tk, F_COUNT, s->fn.name(g->dev, name, sizeof name),
                       "nvmlDeviceGetName") ||
        !wt_nvml_check(s, g, tk, F_COUNT, s->fn.uuid(g->dev, uuid, sizeof uuid),
                       "nvmlDeviceGetUUID"))
        return;
    name[sizeof name - 1] = uuid[sizeof uuid - 1] = '\0';
    if (g->uuid[0] && strcmp(g->uuid, uuid) != 0) {
        wt_warn(MOD, "another GPU at this index gpu=%u uuid=%s was=%s", g->index, uuid, g->uuid);
        reset_gpu(s, g);
    } else if (!g->uuid[0]) {
        reset_gpu(s, g);
    }
    wt_nvml_copy_str(g->name, sizeof g->name, name, sizeof name);
    /* Its power readings are averages over this window (per generation): the integration
     * fallback places each at the middle of it. */
    g->integral.window_ns = wt_energy_nvml_power_window_ns(g->name);
    wt_nvml_copy_str(g->uuid, sizeof g->uuid, uuid, sizeof uuid);

    if (want(g, tk, F_PCI)) {
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        if (wt_nvml_check(s, g, tk, F_PCI, s->fn.pci(g->dev, &pci), "nvmlDeviceGetPciInfo")) {
            /* The original call fills only the 16-byte legacy id. */
            if (pci.busId[0])
                wt_nvml_copy_str(g->pci, sizeof g->pci, pci.busId, sizeof pci.busId);
            else
                wt_nvml_copy_str(g->pci, sizeof g->pci, pci.busIdLegacy, sizeof pci.busIdLegacy);
        }
    }
    if (want(g, tk, F_VBIOS)) {
        char v[NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE] = "";
        if (wt_nvml_check(s, g, tk, F_VBIOS, s->fn.vbios(g->dev, v, sizeof v),
                          "nvmlDeviceGetVbiosVersion"))
            wt_nvml_copy_str(g->vbios, sizeof g->vbios, v, sizeof v);
    }
    if (want(g, tk, F_FAN)) {
        /* Without nvmlDeviceGetNumFans (before R460) the original call reads fan 0. */
        unsigned int n = 1;
        if (s->fn.num_fans &&
            !wt_nvml_check(s, g, tk, F_FAN, s->fn.num_fans(g->dev, &n), "nvmlDeviceGetNumFans"))
            n = 0;
        if (!s->fn.fan_v2 && n > 1)
            n = 1;
        g->nfans = n < MAX_FANS ? n : MAX_FANS;
    }
    g->have_slowdown = g->have_shutdown = false;
    g->slow_pending = true; /* its slow fields with this tick's */
    if (want(g, tk, F_SLOWDOWN))
        g->have_slowdown = wt_nvml_check(
            s, g, tk, F_SLOWDOWN,
            s->fn.threshold(g->dev, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &g->slowdown_c),
            "nvmlDeviceGetTemperatureThreshold");
    if (want(g, tk, F_SHUTDOWN))
        g->have_shutdown = wt_nvml_check(
            s, g, tk, F_SHUTDOWN,
            s->fn.threshold(g->dev, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &g->shutdown_c),
            "nvmlDeviceGetTemperatureThreshold");
    if (want(g, tk, F_PERSISTENCE) && !g->persistence_warned) {
        nvmlEnableState_t mode = NVML_FEATURE_ENABLED;
        if (wt_nvml_check(s, g, tk, F_PERSISTENCE, s->fn.persistence(g->dev, &mode),
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
static void sample_health(struct nvml_state *s, struct gpu *g, struct tick *tk, struct sample *v,
                          bool slow)
{
    nvmlDevice_t d = g->dev;
    static const struct {
        enum feature f;
        nvmlEccCounterType_t counter;
    } ecc[] = {{F_ECC_VOLATILE, NVML_VOLATILE_ECC}, {F_ECC_AGGREGATE, NVML_AGGREGATE_ECC}};
    for (size_t k = 0; k < 2; k++) {
        unsigned long long *out = k == 0 ? v->ecc_vol : v->ecc_agg;
        if (k == 1 && !slow)
            continue;
        bool ok =
            want(g, tk, ecc[k].f) &&
            wt_nvml_check(s, g, tk, ecc[k].f,
                          s->fn.ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, ecc[k].counter, &out[0]),
                          "nvmlDeviceGetTotalEccErrors") &&
            wt_nvml_check(s, g, tk, ecc[k].f,
                          s->fn.ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, ecc[k].counter, &out[1]),
                          "nvmlDeviceGetTotalEccErrors");
        if (k == 0)
            v->have_ecc_vol = ok;
        else
            v->have_ecc_agg = ok;
    }
    if (slow && want(g, tk, F_REMAP))
        v->have_remap = wt_nvml_check(
            s, g, tk, F_REMAP,
            s->fn.remapped_rows(d, &v->remap[0], &v->remap[1], &v->remap[2], &v->remap[3]),
            "nvmlDeviceGetRemappedRows");
    if (want(g, tk, F_PCIE_REPLAY))
        v->have_replay = wt_nvml_check(s, g, tk, F_PCIE_REPLAY, s->fn.pcie_replay(d, &v->replay),
                                       "nvmlDeviceGetPcieReplayCounter");
    if (want(g, tk, F_MEM_TEMP)) {
        nvmlFieldValue_t fv;
        memset(&fv, 0, sizeof fv);
        fv.fieldId = NVML_FI_DEV_MEMORY_TEMP;
        nvmlReturn_t r = s->fn.field_values(d, 1, &fv);
        /* The call succeeds when it could ask; each value says whether it has an answer. */
        if (r == NVML_SUCCESS)
            r = fv.nvmlReturn;
        if (wt_nvml_check(s, g, tk, F_MEM_TEMP, r,
                          "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)"))
            v->have_mem_temp = field_double(&fv, &v->mem_temp_c);
    }
    if (want(g, tk, F_FAN)) {
        for (unsigned int f = 0; f < g->nfans; f++) {
            unsigned int pct = 0;
            nvmlReturn_t r = s->fn.fan_v2 ? s->fn.fan_v2(d, f, &pct) : s->fn.fan(d, &pct);
            if (!wt_nvml_check(s, g, tk, F_FAN, r, "nvmlDeviceGetFanSpeed"))
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
 * answers go through wt_nvml_check() in sample_gpu, in their usual place.
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

/* A slow field that should have an answer and has none (a failure, not NOT_SUPPORTED). */
static bool slow_missing(const struct gpu *g, enum feature f, bool have)
{
    return !have && !(g->unsupported & (1u << f));
}

/*
 * The slow fields: read when slow (their outcome filed as every call's), kept in g; else the
 * values kept, so that each tick publishes them. A failed read is not published and is tried
 * again at the next tick.
 */
static void slow_fields(struct nvml_state *s, struct gpu *g, struct tick *tk, struct sample *v,
                        bool slow)
{
    if (slow) {
        g->have_limit = want(g, tk, F_LIMIT) &&
                        wt_nvml_check(s, g, tk, F_LIMIT, s->fn.power_limit(g->dev, &g->limit_mw),
                                      "nvmlDeviceGetEnforcedPowerLimit");
        g->have_constraints =
            want(g, tk, F_CONSTRAINTS) &&
            wt_nvml_check(s, g, tk, F_CONSTRAINTS,
                          s->fn.constraints(g->dev, &g->limit_min_mw, &g->limit_max_mw),
                          "nvmlDeviceGetPowerManagementLimitConstraints");
        g->have_ecc_agg = v->have_ecc_agg;
        memcpy(g->ecc_agg, v->ecc_agg, sizeof g->ecc_agg);
        g->have_remap = v->have_remap;
        memcpy(g->remap, v->remap, sizeof g->remap);
        g->slow_pending = slow_missing(g, F_LIMIT, g->have_limit) ||
                          slow_missing(g, F_CONSTRAINTS, g->have_constraints) ||
                          slow_missing(g, F_ECC_AGGREGATE, g->have_ecc_agg) ||
                          slow_missing(g, F_REMAP, g->have_remap);
    } else {
        v->have_ecc_agg = g->have_ecc_agg;
        memcpy(v->ecc_agg, g->ecc_agg, sizeof v->ecc_agg);
        v->have_remap = g->have_remap;
        memcpy(v->remap, g->remap, sizeof v->remap);
    }
    v->have_limit = g->have_limit;
    v->limit_mw = g->limit_mw;
}

/* Every per-tick call, and the slow ones when slow; the power call goes first and doubles as the
 * liveness probe. */
static void sample_gpu(struct nvml_state *s, struct gpu *g, struct tick *tk, struct sample *v,
                       bool slow)
{
    nvmlDevice_t d = g->dev;
    if (want(g, tk, F_POWER))
        v->have_power = wt_nvml_check(s, g, tk, F_POWER, s->fn.power(d, &v->power_mw),
                                      "nvmlDeviceGetPowerUsage");
    if (want(g, tk, F_ENERGY)) {
        nvmlReturn_t r = g->pre_read ? g->pre_r : read_counter(s, g, &v->energy_mj);
        if (g->pre_read)
            v->energy_mj = g->pre_mj;
        v->have_energy =
            wt_nvml_check(s, g, tk, F_ENERGY, r, "nvmlDeviceGetTotalEnergyConsumption");
    }
    if (want(g, tk, F_TEMP))
        v->have_temp =
            wt_nvml_check(s, g, tk, F_TEMP, s->fn.temperature(d, NVML_TEMPERATURE_GPU, &v->temp_c),
                          "nvmlDeviceGetTemperature");
    if (want(g, tk, F_UTIL))
        v->have_util = wt_nvml_check(s, g, tk, F_UTIL, s->fn.utilization(d, &v->util),
                                     "nvmlDeviceGetUtilizationRates");
    if (want(g, tk, F_MEMORY))
        v->have_mem =
            wt_nvml_check(s, g, tk, F_MEMORY, s->fn.memory(d, &v->mem), "nvmlDeviceGetMemoryInfo");
    if (want(g, tk, F_SM_CLOCK))
        v->have_sm = wt_nvml_check(s, g, tk, F_SM_CLOCK, s->fn.clock(d, NVML_CLOCK_SM, &v->sm_mhz),
                                   "nvmlDeviceGetClockInfo");
    if (want(g, tk, F_MEM_CLOCK))
        v->have_memclk =
            wt_nvml_check(s, g, tk, F_MEM_CLOCK, s->fn.clock(d, NVML_CLOCK_MEM, &v->mem_mhz),
                          "nvmlDeviceGetClockInfo");
    if (want(g, tk, F_THROTTLE))
        v->have_throttle = wt_nvml_check(s, g, tk, F_THROTTLE, s->fn.throttle(d, &v->throttle),
                                         "nvmlDeviceGetCurrentClocksEventReasons");
    if (want(g, tk, F_PSTATE))
        v->have_pstate = wt_nvml_check(s, g, tk, F_PSTATE, s->fn.pstate(d, &v->pstate),
                                       "nvmlDeviceGetPerformanceState");
    sample_health(s, g, tk, v, slow);
    slow_fields(s, g, tk, v, slow);
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

/* Where g's derived labels sit in g->kin. */
enum { KIN_REASON = 0, KIN_ECC = 9, KIN_REMAP = 13 };
_Static_assert(KIN_ECC == N_REASONS && KIN_REMAP == KIN_ECC + 4 && KIN_REMAP + 4 == WT_NVML_KIN,
               "nvml_base.h's WT_NVML_KIN counts the reasons, ECC counters and remap kinds");

/*
 * g's labels with key="val"[,key2="val2"] added, made once and kept in g->kin[k] until g's labels
 * change (a GPU named anew: build_labels); NULL when they do not fit.
 */
static const char *kin(struct gpu *g, int k, const char *key, const char *val, const char *key2,
                       const char *val2)
{
    if (strcmp(g->kin_from, g->labels) != 0) {
        memcpy(g->kin_from, g->labels, sizeof g->kin_from);
        memset(g->kin_ok, 0, sizeof g->kin_ok);
    }
    if (!g->kin_ok[k]) {
        char *l = g->kin[k];
        memcpy(l, g->labels, sizeof g->kin[k]);
        bool fits = wt_labels_add(l, sizeof g->kin[k], key, val) == 0 &&
                    (!key2 || wt_labels_add(l, sizeof g->kin[k], key2, val2) == 0);
        g->kin_ok[k] = fits ? 1 : -1;
    }
    return g->kin_ok[k] > 0 ? g->kin[k] : NULL;
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

/* metric{the labels of kin(g, k, ...)} = value; 0, or -E2BIG/-ENOMEM. */
static int add_kin(struct wt_batch *out, int metric, struct gpu *g, int k, const char *key,
                   const char *val, const char *key2, const char *val2, int64_t t_ns, double value)
{
    const char *l = kin(g, k, key, val, key2, val2);
    return l ? add(out, metric, l, t_ns, value) : -E2BIG;
}

static int emit_health(struct nvml_state *s, struct gpu *g, const struct sample *v, int64_t t_ns,
                       struct wt_batch *out)
{
    static const char *const types[2] = {"corrected", "uncorrected"};
    static const char *const kinds[4] = {"correctable", "uncorrectable", "pending", "failure"};
    const char *l = g->labels;
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        if (v->have_ecc_vol)
            rc |= add_kin(out, WT_M_GPU_ECC_ERRORS, g, KIN_ECC + 2 * k, "type", types[k], "counter",
                          "volatile", t_ns, (double)v->ecc_vol[k]);
        if (v->have_ecc_agg)
            rc |= add_kin(out, WT_M_GPU_ECC_ERRORS, g, KIN_ECC + 2 * k + 1, "type", types[k],
                          "counter", "aggregate", t_ns, (double)v->ecc_agg[k]);
    }
    for (int k = 0; v->have_remap && k < 4; k++)
        rc |= add_kin(out, WT_M_GPU_REMAPPED_ROWS, g, KIN_REMAP + k, "kind", kinds[k], NULL, NULL,
                      t_ns,
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

/* How long after the poll's stamp the counter it carries was read (core/energy.h). */
static int emit_skew(const struct gpu *g, int64_t t_ns, struct wt_batch *out)
{
    return add(out, WT_M_GPU_ENERGY_READ_SKEW_S, g->labels, t_ns,
               wt_energy_read_skew_s(t_ns, g->read_end_ns));
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
        rc |= emit_skew(g, t_ns, out);
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
            const char *rl = kin(g, KIN_REASON + (int)i, "reason", reasons[i].name, NULL, NULL);
            if (!rl)
                continue;
            rc |= add(out, WT_M_GPU_THROTTLED, rl, t_ns, (v->throttle & reasons[i].bit) ? 1 : 0);
        }
    }
    rc |= emit_health(s, g, v, t_ns, out);
    return rc ? -ENOMEM : 0;
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
                g->uuid[0] ? g->uuid : "unknown", what, wt_nvml_errstr(s, r), (int)r);
    } else {
        g->failed_ticks++;
        if (wt_ratelimit_ok(&g->down_rl, now, &suppressed))
            wt_warn(MOD, "GPU still down gpu=%u uuid=%s failed_ticks=%llu error=\"%s\" (%d)",
                    g->index, g->uuid[0] ? g->uuid : "unknown", (unsigned long long)g->failed_ticks,
                    wt_nvml_errstr(s, r), (int)r);
    }
    /* The power series restarts when it comes back: the outage is a gap, not a trapezoid. */
    wt_energy_integral_break(&g->integral);
    g->known = false; /* re-read handle and static info on the next tick */
}

/* Polls one GPU. Returns the tick's hard error when the GPU is down, else NVML_SUCCESS. */
static nvmlReturn_t poll_gpu(struct nvml_state *s, struct gpu *g, bool slow_all, int64_t t_ns,
                             struct wt_batch *out, int *rc)
{
    bool slow;
    struct tick tk = {0};
    struct sample v;
    memset(&v, 0, sizeof v);
    g->have_energy_mj = false;
    g->busy = -1;
    if (!g->known)
        discover(s, g, &tk);
    slow = slow_all || g->slow_pending;
    if (g->known && !tk.lost)
        sample_gpu(s, g, &tk, &v, slow);

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
                    g->index, g->uuid, wt_nvml_errstr(s, tk.hard), (int)tk.hard,
                    (unsigned long long)suppressed);
    }
    *rc |= emit(s, g, &v, t_ns, out);
    *rc |=
        wt_nvml_fields_poll_gpu(s->fields, g->index, g->dev, g->uuid, g->labels, slow, t_ns, out);
    /* The parent's energy of this tick over its MIG instances, counted once (nvml_mig.h). */
    *rc |= wt_nvml_mig_poll_gpu(s->mig, g->index, g->dev, g->uuid, g->labels, slow,
                                g->have_energy_mj, g->energy_mj, g->busy, t_ns, out);
    return NVML_SUCCESS;
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
    wt_cadence_withdraw("nvml", cadence);
    wt_nvml_procs_forget(s);
    wt_attrib_close(s->attrib);
    free(s->util_buf);
    wt_nvml_fields_close(s->fields); /* its GPM samples, while NVML is still up */
    wt_nvml_mig_close(s->mig);
    if (s->inited)
        wt_nvml_xid_stop(s);
    if (s->inited)
        wt_nvml_session_release(s->fn.init, s->fn.shutdown);
    if (s->dl)
        dlclose(s->dl);
    wt_nvml_xid_ctx_unref(s->xid); /* a collector that failed before xid_stop */
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
    s->slow.interval_ns = cfg ? cfg->collectors.nvml_slow_interval_ns : DEFAULT_SLOW_NS;
    s->refresh_seen = atomic_load(&slow_refresh_gen);
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
        wt_err_set(err, "nvmlInit failed in %s: %s (%d)", path, wt_nvml_errstr(s, r), (int)r);
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
        wt_err_set(err, "nvmlDeviceGetCount failed: %s (%d)", wt_nvml_errstr(s, r), (int)r);
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
    wt_nvml_xid_start(s);
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
    if (wt_cadence_publish("nvml", s->slow.interval_ns, cadence, N_CADENCE) != 0)
        wt_debug(MOD, "no room to publish the fields' cadence");
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
 * A sub-poll: each GPU's energy counter alone (with its read skew), for the GPUs that are up and
 * have one. A failed read is left to the next tick, which says what is wrong (and marks a lost
 * GPU down).
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
        nvmlReturn_t r = s->fn.energy(g->dev, &mj);
        g->read_end_ns = wt_now_real_ns();
        if (r == NVML_SUCCESS)
            rc |= emit_counter(g, mj, t_ns, out) | emit_skew(g, t_ns, out);
    }
    return rc ? -ENOMEM : 0;
}

/* A GPU with XID events since the last tick reads its slow fields (its ECC counts and remapped
 * rows may have moved with it). */
static void note_xids(struct nvml_state *s)
{
    if (!s->xid)
        return;
    pthread_mutex_lock(&s->xid->mu);
    for (unsigned int i = 0; i < s->n && i < s->xid->n; i++) {
        const struct xid_gpu *x = &s->xid->g[i];
        uint64_t n = 0;
        for (unsigned int k = 0; k < x->n; k++)
            n += x->c[k].n;
        if (n != s->gpus[i].xid_seen) {
            s->gpus[i].xid_seen = n;
            s->gpus[i].slow_pending = true;
        }
    }
    pthread_mutex_unlock(&s->xid->mu);
}

/* Whether this tick reads every GPU's slow fields: due, or asked for by wt_nvml_slow_refresh. */
static bool slow_tick(struct nvml_state *s)
{
    unsigned int gen = atomic_load(&slow_refresh_gen);
    if (gen != s->refresh_seen) {
        s->refresh_seen = gen;
        wt_slow_force(&s->slow);
    }
    return wt_slow_due(&s->slow, wt_now_mono_ns(), s->interval_ns);
}

static int nvml_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct nvml_state *s = state;
    int rc = 0;
    unsigned int lib_failed = 0;
    nvmlReturn_t last = NVML_SUCCESS;
    bool slow = slow_tick(s);
    note_xids(s);
    read_counters(s);
    for (unsigned int i = 0; i < s->n; i++) {
        nvmlReturn_t r = poll_gpu(s, &s->gpus[i], slow, t_ns, out, &rc);
        if (library_level(r)) {
            lib_failed++;
            last = r;
        }
    }
    wt_nvml_poll_procs(s, t_ns, out, &rc);
    rc |= wt_nvml_fields_poll_units(s->fields, t_ns, out);
    if (!s->sub_decided && s->auto_calls > 0 && ++s->auto_ticks >= AUTO_TICKS)
        decide_auto(s);
    if (rc)
        return wt_err_set(err, "out of memory for readings"), -ENOMEM;
    if (s->n && lib_failed == s->n) {
        wt_err_set(err, "every GPU failed: %s (%d)", wt_nvml_errstr(s, last), (int)last);
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
