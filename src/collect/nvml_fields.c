/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's interconnect counters (NVLink and PCIe bytes through field values), GPM
 * metrics (SM, tensor and DRAM activity on Hopper and newer), the GPU's power source and the
 * S-class units' power supplies and fans; see nvml_fields.h. It owns only its own state: the
 * library handle, the NVML session and the GPU handles are the collector's.
 *
 * Cost: one nvmlDeviceGetFieldValues call for the four counters of a GPU, and on GPM boards one
 * nvmlGpmSampleGet and one nvmlGpmMetricsGet; what a GPU does not support is never asked again.
 */
#include "collect/nvml_fields.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"

#define MOD "nvml"
#define LOG_EVERY_NS (60 * WT_NS_PER_S)
/* Two GPM samples closer than this are not turned into metrics (NVML refreshes its counters at
 * about this rate, and the reference asks for more than 100 ms between the two samples). */
#define GPM_MIN_GAP_NS (100 * WT_NS_PER_MS)
#define MAX_UNITS 16
#define MAX_UNIT_FANS 24
#define STATE_LEN 96 /* of a PSU's state string, as a label */

/* What a GPU or the library may lack; a bit set means "absent, do not ask again". */
enum feature {
    F_NVLINK_TX,
    F_NVLINK_RX,
    F_PCIE_TX,
    F_PCIE_RX,
    F_GPM,
    F_POWER_SOURCE,
    F_PSU,
    F_UNIT_FANS,
    F_COUNT
};
#define N_COUNTERS 4

static const char *const feature_names[F_COUNT] = {
    "NVLink transmit counter",
    "NVLink receive counter",
    "PCIe transmit counter",
    "PCIe receive counter",
    "GPM metrics",
    "power source",
    "S-class unit power supply",
    "S-class unit fans",
};

/* The four counters: field id, metric, and how many bytes one raw unit is. */
static const struct {
    unsigned int field;
    int metric;
    double unit_b;
} counters[N_COUNTERS] = {
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, WT_M_GPU_NVLINK_TX_BYTES, 1024}, /* raw: KiB */
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, WT_M_GPU_NVLINK_RX_BYTES, 1024},
    {NVML_FI_DEV_PCIE_COUNT_TX_BYTES, WT_M_GPU_PCIE_TX_BYTES, 1}, /* raw: bytes */
    {NVML_FI_DEV_PCIE_COUNT_RX_BYTES, WT_M_GPU_PCIE_RX_BYTES, 1},
};

/* The GPM metrics: id and metric; each value is a percent. */
#define N_GPM 4
static const struct {
    unsigned int id;
    int metric;
    const char *name;
} gpm_metrics[N_GPM] = {
    {NVML_GPM_METRIC_SM_UTIL, WT_M_GPU_SM_ACTIVE_RATIO, "SM activity"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, WT_M_GPU_SM_OCCUPANCY_RATIO, "SM occupancy"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, WT_M_GPU_TENSOR_ACTIVE_RATIO, "tensor activity"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, WT_M_GPU_DRAM_BW_RATIO, "DRAM bandwidth utilization"},
};

struct fns {
    wt_nvml_field_values_fn *field_values;
    wt_nvml_uint_fn *power_source;
    wt_nvml_gpm_support_fn *gpm_support;
    wt_nvml_gpm_alloc_fn *gpm_alloc;
    wt_nvml_gpm_free_fn *gpm_free;
    wt_nvml_gpm_sample_fn *gpm_sample;
    wt_nvml_gpm_metrics_fn *gpm_metrics;
    wt_nvml_count_fn *unit_count;
    wt_nvml_unit_handle_fn *unit_handle;
    wt_nvml_unit_psu_fn *unit_psu;
    wt_nvml_unit_fans_fn *unit_fans;
};

const char *const wt_nvml_fields_symbols[] = {
    "nvmlDeviceGetFieldValues", "nvmlDeviceGetPowerSource", "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc",       "nvmlGpmSampleFree",        "nvmlGpmSampleGet",
    "nvmlGpmMetricsGet",        "nvmlUnitGetCount",         "nvmlUnitGetHandleByIndex",
    "nvmlUnitGetPsuInfo",       "nvmlUnitGetFanSpeedInfo",
};
const size_t wt_nvml_fields_symbol_count =
    sizeof wt_nvml_fields_symbols / sizeof wt_nvml_fields_symbols[0];

struct gpu {
    bool seen;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlDevice_t dev;
    uint32_t unsupported; /* 1 << enum feature */
    struct wt_nvml_counter ctr[N_COUNTERS];
    bool gpm_metric_off[N_GPM]; /* a GPM metric this GPU answers NOT_SUPPORTED */
    /* the power source, a slow field: the last one read */
    bool have_src;
    unsigned int src;
    /* GPM: two sample buffers used in turn; prev is the older one */
    bool gpm_known; /* support asked */
    nvmlGpmSample_t smp[2];
    int cur;
    bool have_prev;
    int64_t prev_mono_ns;
};

struct unit {
    nvmlUnit_t h;
    bool have;
};

struct wt_nvml_fields {
    struct fns fn;
    wt_nvml_error_string_fn *error_string;
    char library[256];
    unsigned int n;
    struct gpu *gpus;
    uint32_t said;         /* features whose absence was logged */
    uint32_t said_gpm_off; /* GPM metrics whose absence was logged, 1 << index */
    uint32_t units_off;    /* unit features absent (F_PSU, F_UNIT_FANS) */
    unsigned int nunits;
    struct unit units[MAX_UNITS];
    nvmlGpmMetricsGet_t *mg; /* reused: about 4 KB */
    struct wt_ratelimit err_rl, reset_rl;
};

static const char *errstr(const struct wt_nvml_fields *f, nvmlReturn_t r)
{
    const char *m = f->error_string ? f->error_string(r) : NULL;
    return m ? m : "unknown error";
}

/* Says once per collector that feature is absent (most boards of a node are alike). */
static void say_absent(struct wt_nvml_fields *f, enum feature k, const char *where, const char *why)
{
    if (f->said & (1u << k))
        return;
    f->said |= 1u << k;
    wt_info(MOD, "%s: %s%s (%s): its metrics are absent", feature_names[k], why, where, f->library);
}

/* A failure that is not "not supported": skipped this poll, said at most once a minute. */
static void say_failed(struct wt_nvml_fields *f, const char *what, unsigned int gpu, nvmlReturn_t r)
{
    uint64_t suppressed = 0;
    if (wt_ratelimit_ok(&f->err_rl, wt_now_mono_ns(), &suppressed))
        wt_warn(MOD, "%s failed gpu=%u error=\"%s\" (%d) suppressed=%llu", what, gpu, errstr(f, r),
                (int)r, (unsigned long long)suppressed);
}

static void *sym(void *dl, const char *name)
{
    return dl ? dlsym(dl, name) : NULL;
}

/* POSIX guarantees object and function pointers share a representation. */
#define RESOLVE(field, name)                                                                       \
    do {                                                                                           \
        void *p_ = sym(dl, name);                                                                  \
        memcpy(&f->fn.field, &p_, sizeof p_);                                                      \
    } while (0)

static void open_units(struct wt_nvml_fields *f)
{
    unsigned int n = 0;
    f->units_off = 1u << F_PSU | 1u << F_UNIT_FANS;
    if (!f->fn.unit_count || !f->fn.unit_handle || (!f->fn.unit_psu && !f->fn.unit_fans)) {
        wt_info(MOD, "%s has no S-class unit calls: power supply state is not reported",
                f->library);
        return;
    }
    nvmlReturn_t r = f->fn.unit_count(&n);
    if (r != NVML_SUCCESS || n == 0) {
        /* The usual case: only S-class enclosures report a power supply through NVML. */
        wt_info(MOD, "no S-class unit (%s): power supply state is not reported",
                r == NVML_SUCCESS ? "nvmlUnitGetCount 0" : errstr(f, r));
        return;
    }
    if (n > MAX_UNITS)
        n = MAX_UNITS;
    for (unsigned int i = 0; i < n; i++)
        f->units[i].have = f->fn.unit_handle(i, &f->units[i].h) == NVML_SUCCESS;
    f->nunits = n;
    f->units_off = (f->fn.unit_psu ? 0 : 1u << F_PSU) | (f->fn.unit_fans ? 0 : 1u << F_UNIT_FANS);
    wt_info(MOD, "%u S-class units: their power supplies and fans are read", n);
}

int wt_nvml_fields_open(void *dl, const char *library, unsigned int ngpus,
                        wt_nvml_error_string_fn *error_string, struct wt_nvml_fields **out)
{
    *out = NULL;
    struct wt_nvml_fields *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->gpus = calloc(ngpus ? ngpus : 1, sizeof *f->gpus);
    if (!f->gpus) {
        free(f);
        return -ENOMEM;
    }
    f->n = ngpus;
    f->error_string = error_string;
    snprintf(f->library, sizeof f->library, "%s", library ? library : "the library");
    f->err_rl.interval_ns = f->reset_rl.interval_ns = LOG_EVERY_NS;
    RESOLVE(field_values, "nvmlDeviceGetFieldValues");
    RESOLVE(power_source, "nvmlDeviceGetPowerSource");
    RESOLVE(gpm_support, "nvmlGpmQueryDeviceSupport");
    RESOLVE(gpm_alloc, "nvmlGpmSampleAlloc");
    RESOLVE(gpm_free, "nvmlGpmSampleFree");
    RESOLVE(gpm_sample, "nvmlGpmSampleGet");
    RESOLVE(gpm_metrics, "nvmlGpmMetricsGet");
    RESOLVE(unit_count, "nvmlUnitGetCount");
    RESOLVE(unit_handle, "nvmlUnitGetHandleByIndex");
    RESOLVE(unit_psu, "nvmlUnitGetPsuInfo");
    RESOLVE(unit_fans, "nvmlUnitGetFanSpeedInfo");
    open_units(f);
    *out = f;
    return 0;
}

static void free_samples(struct wt_nvml_fields *f, struct gpu *g)
{
    for (int k = 0; k < 2; k++) {
        if (g->smp[k] && f->fn.gpm_free)
            f->fn.gpm_free(g->smp[k]);
        g->smp[k] = NULL;
    }
    g->have_prev = false;
    g->gpm_known = false;
}

void wt_nvml_fields_close(struct wt_nvml_fields *f)
{
    if (!f)
        return;
    for (unsigned int i = 0; i < f->n; i++)
        free_samples(f, &f->gpus[i]);
    free(f->mg);
    free(f->gpus);
    free(f);
}

bool wt_nvml_field_counter(const nvmlFieldValue_t *fv, uint64_t *raw, uint64_t *modulus)
{
    *modulus = 0;
    switch (fv->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *raw = fv->value.uiVal;
        *modulus = 1ULL << 32;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
        *raw = fv->value.usVal;
        *modulus = 1ULL << 16;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        *raw = fv->value.ulVal;
        if (sizeof(unsigned long) == 4)
            *modulus = 1ULL << 32;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *raw = fv->value.ullVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (fv->value.sllVal < 0)
            return false;
        *raw = (uint64_t)fv->value.sllVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_INT:
        if (fv->value.siVal < 0)
            return false;
        *raw = (uint64_t)fv->value.siVal;
        return true;
    case NVML_VALUE_TYPE_DOUBLE:
        if (!(fv->value.dVal >= 0) || fv->value.dVal >= 18446744073709551616.0)
            return false;
        *raw = (uint64_t)fv->value.dVal;
        return true;
    }
    return false;
}

enum wt_delta_kind wt_nvml_counter_update(struct wt_nvml_counter *c, int64_t t_ns, uint64_t raw,
                                          uint64_t modulus, uint64_t *total)
{
    if (!c->have) {
        c->have = true;
        c->first_raw = raw;
    }
    /* No plausibility bound on a wrap: a PCIe Gen5 x16 link moves more than 4 GiB a second,
     * so a 32-bit counter may well wrap between two polls (see docs/energy.md: once only). */
    enum wt_delta_kind k = wt_energy_counter_update(&c->c, t_ns, raw, modulus, 0);
    *total = c->first_raw + c->c.total_raw;
    return k;
}

/* Another board at the index (or the first poll): everything of the GPU starts afresh. */
static void reset_gpu(struct wt_nvml_fields *f, struct gpu *g, const char *uuid)
{
    free_samples(f, g);
    memset(g, 0, sizeof *g);
    g->seen = true;
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    if (!f->fn.field_values)
        for (int k = 0; k < N_COUNTERS; k++)
            g->unsupported |= 1u << k;
    if (!f->fn.gpm_support || !f->fn.gpm_alloc || !f->fn.gpm_free || !f->fn.gpm_sample ||
        !f->fn.gpm_metrics)
        g->unsupported |= 1u << F_GPM;
    if (!f->fn.power_source)
        g->unsupported |= 1u << F_POWER_SOURCE;
}

static int add_with(struct wt_batch *out, int metric, const char *labels, const char *key,
                    const char *val, const char *key2, const char *val2, int64_t t_ns, double value)
{
    char l[WT_LABELS_LEN];
    snprintf(l, sizeof l, "%s", labels);
    if ((key && wt_labels_add(l, sizeof l, key, val)) ||
        (key2 && wt_labels_add(l, sizeof l, key2, val2)))
        return 0; /* labels too long: this one series is left out, not the poll */
    return wt_batch_add(out, metric, l, t_ns, value);
}

/* The counters of one GPU, in one field-values call. */
static int poll_counters(struct wt_nvml_fields *f, struct gpu *g, unsigned int index,
                         nvmlDevice_t dev, const char *labels, int64_t t_ns, struct wt_batch *out)
{
    nvmlFieldValue_t fv[N_COUNTERS];
    int which[N_COUNTERS], n = 0, rc = 0;
    for (int k = 0; k < N_COUNTERS; k++) {
        if (g->unsupported & (1u << k))
            continue;
        memset(&fv[n], 0, sizeof fv[n]);
        fv[n].fieldId = counters[k].field;
        /* The NVLink counters are per link; UINT_MAX asks for the sum over all links. PCIe
         * ignores the scope. */
        fv[n].scopeId = k < 2 ? NVML_FI_SCOPE_ALL_LINKS : 0;
        which[n++] = k;
    }
    if (n == 0)
        return 0;
    nvmlReturn_t r = f->fn.field_values(dev, n, fv);
    if (r == NVML_ERROR_NOT_SUPPORTED) {
        for (int i = 0; i < n; i++) {
            g->unsupported |= 1u << which[i];
            say_absent(f, (enum feature)which[i], "", errstr(f, r));
        }
        return 0;
    }
    if (r != NVML_SUCCESS) {
        /* GPU_IS_LOST and the like: the collector's own calls mark the GPU down next poll. */
        say_failed(f, "nvmlDeviceGetFieldValues", index, r);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int k = which[i];
        uint64_t raw = 0, modulus = 0, total = 0;
        /* The call succeeds when it could ask; each value says whether it has an answer. */
        if (fv[i].nvmlReturn == NVML_ERROR_NOT_SUPPORTED) {
            char where[64];
            g->unsupported |= 1u << k;
            snprintf(where, sizeof where, " gpu=%u", index);
            say_absent(f, (enum feature)k, where, errstr(f, fv[i].nvmlReturn));
            continue;
        }
        if (fv[i].nvmlReturn != NVML_SUCCESS) {
            say_failed(f, feature_names[k], index, fv[i].nvmlReturn);
            continue;
        }
        if (!wt_nvml_field_counter(&fv[i], &raw, &modulus)) {
            say_failed(f, feature_names[k], index, NVML_ERROR_UNKNOWN);
            continue;
        }
        enum wt_delta_kind d = wt_nvml_counter_update(&g->ctr[k], t_ns, raw, modulus, &total);
        if (d == WT_DELTA_RESET) {
            uint64_t suppressed = 0;
            if (wt_ratelimit_ok(&f->reset_rl, wt_now_mono_ns(), &suppressed))
                wt_warn(MOD,
                        "%s went back gpu=%u uuid=%s (driver reload?): new baseline "
                        "suppressed=%llu",
                        feature_names[k], index, g->uuid, (unsigned long long)suppressed);
        }
        rc |=
            wt_batch_add(out, counters[k].metric, labels, t_ns, (double)total * counters[k].unit_b);
    }
    return rc;
}

/* GPM: a sample this poll, and the metrics since the previous one. */
static int poll_gpm(struct wt_nvml_fields *f, struct gpu *g, unsigned int index, nvmlDevice_t dev,
                    const char *labels, int64_t t_ns, struct wt_batch *out)
{
    int rc = 0;
    char where[128];
    snprintf(where, sizeof where, " gpu=%u uuid=%s", index, g->uuid);
    if (!g->gpm_known) {
        nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION, .isSupportedDevice = 0};
        nvmlReturn_t r = f->fn.gpm_support(dev, &sup);
        if (r == NVML_SUCCESS && !sup.isSupportedDevice)
            r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_ERROR_NOT_SUPPORTED) {
            /* Before Hopper, or a GPU NVML does not fully support: said once. */
            g->unsupported |= 1u << F_GPM;
            say_absent(f, F_GPM, where, "not supported (GPM needs Hopper or newer)");
            return 0;
        }
        if (r != NVML_SUCCESS) {
            say_failed(f, "nvmlGpmQueryDeviceSupport", index, r);
            return 0;
        }
        for (int k = 0; k < 2; k++) {
            r = f->fn.gpm_alloc(&g->smp[k]);
            if (r != NVML_SUCCESS) {
                g->smp[k] = NULL;
                free_samples(f, g);
                say_failed(f, "nvmlGpmSampleAlloc", index, r);
                return 0;
            }
        }
        g->gpm_known = true;
        g->cur = 0;
    }
    int64_t now = wt_now_mono_ns();
    if (g->have_prev && now - g->prev_mono_ns < GPM_MIN_GAP_NS)
        return 0; /* too close to the last sample: the next poll spans both */
    nvmlReturn_t r = f->fn.gpm_sample(dev, g->smp[g->cur]);
    if (r == NVML_ERROR_NOT_SUPPORTED) {
        free_samples(f, g);
        g->unsupported |= 1u << F_GPM;
        say_absent(f, F_GPM, where, errstr(f, r));
        return 0;
    }
    if (r != NVML_SUCCESS) {
        /* The previous sample stays: the next good one spans the gap, a mean over it. */
        say_failed(f, "nvmlGpmSampleGet", index, r);
        return 0;
    }
    if (g->have_prev) {
        if (!f->mg && !(f->mg = malloc(sizeof *f->mg)))
            return -ENOMEM;
        nvmlGpmMetricsGet_t *mg = f->mg;
        memset(mg, 0, offsetof(nvmlGpmMetricsGet_t, metrics));
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->sample1 = g->smp[1 - g->cur];
        mg->sample2 = g->smp[g->cur];
        int idx[N_GPM];
        unsigned int m = 0;
        for (int k = 0; k < N_GPM; k++) {
            if (g->gpm_metric_off[k])
                continue;
            memset(&mg->metrics[m], 0, sizeof mg->metrics[m]);
            mg->metrics[m].metricId = gpm_metrics[k].id;
            idx[m++] = k;
        }
        mg->numMetrics = m;
        r = m ? f->fn.gpm_metrics(mg) : NVML_SUCCESS;
        if (r != NVML_SUCCESS) {
            say_failed(f, "nvmlGpmMetricsGet", index, r);
        } else {
            for (unsigned int i = 0; i < m; i++) {
                int k = idx[i];
                nvmlReturn_t mr = mg->metrics[i].nvmlReturn;
                double v = mg->metrics[i].value;
                if (mr == NVML_ERROR_NOT_SUPPORTED) {
                    g->gpm_metric_off[k] = true;
                    if (!(f->said_gpm_off & (1u << k))) {
                        f->said_gpm_off |= 1u << k;
                        wt_info(MOD, "GPM %s: %s%s: its metric is absent", gpm_metrics[k].name,
                                errstr(f, mr), where);
                    }
                    continue;
                }
                if (mr != NVML_SUCCESS || !isfinite(v)) {
                    say_failed(f, gpm_metrics[k].name, index, mr ? mr : NVML_ERROR_UNKNOWN);
                    continue;
                }
                /* raw: percent, 0.0 - 100.0; a rounding above 100 is 1. */
                v /= 100.0;
                rc |= wt_batch_add(out, gpm_metrics[k].metric, labels, t_ns,
                                   v < 0   ? 0
                                   : v > 1 ? 1
                                           : v);
            }
        }
    }
    g->have_prev = true;
    g->prev_mono_ns = now;
    g->cur = 1 - g->cur;
    return rc;
}

/* A failed power source read: NOT_SUPPORTED for good (said once), else said at most once a
 * minute and tried again at the next poll. Returns 0. */
static int source_failed(struct wt_nvml_fields *f, struct gpu *g, unsigned int index,
                         nvmlReturn_t r)
{
    if (r == NVML_ERROR_NOT_SUPPORTED) {
        char where[64];
        g->unsupported |= 1u << F_POWER_SOURCE;
        snprintf(where, sizeof where, " gpu=%u", index);
        say_absent(f, F_POWER_SOURCE, where, errstr(f, r));
        return 0;
    }
    say_failed(f, "nvmlDeviceGetPowerSource", index, r);
    return 0;
}

/* The power source, a slow field: read when slow or after a failed read, else the last one. */
static int poll_power_source(struct wt_nvml_fields *f, struct gpu *g, unsigned int index,
                             nvmlDevice_t dev, bool slow, const char *labels, int64_t t_ns,
                             struct wt_batch *out)
{
    if (slow || !g->have_src) {
        nvmlReturn_t r = f->fn.power_source(dev, &g->src);
        g->have_src = r == NVML_SUCCESS;
        if (!g->have_src)
            return source_failed(f, g, index, r);
    }
    unsigned int src = g->src;
    char other[16];
    const char *name = src == NVML_POWER_SOURCE_AC           ? "ac"
                       : src == NVML_POWER_SOURCE_BATTERY    ? "battery"
                       : src == NVML_POWER_SOURCE_UNDERSIZED ? "undersized"
                                                             : NULL;
    if (!name) {
        snprintf(other, sizeof other, "%u", src);
        name = other;
    }
    return add_with(out, WT_M_GPU_POWER_SOURCE_INFO, labels, "source", name, NULL, NULL, t_ns, 1);
}

int wt_nvml_fields_poll_gpu(struct wt_nvml_fields *f, unsigned int index, nvmlDevice_t dev,
                            const char *uuid, const char *labels, bool slow, int64_t t_ns,
                            struct wt_batch *out)
{
    if (!f || index >= f->n)
        return 0;
    struct gpu *g = &f->gpus[index];
    if (!g->seen || strcmp(g->uuid, uuid) != 0) {
        reset_gpu(f, g, uuid);
    } else if (g->dev != dev) {
        /* The same board with a new handle (back after being lost): GPM samples of the old
         * handle are not mixed with the new one's; the counters go on (a reset is seen). */
        free_samples(f, g);
    }
    g->dev = dev;
    int rc = 0;
    rc |= poll_counters(f, g, index, dev, labels, t_ns, out);
    if (!(g->unsupported & (1u << F_GPM)))
        rc |= poll_gpm(f, g, index, dev, labels, t_ns, out);
    if (!(g->unsupported & (1u << F_POWER_SOURCE)))
        rc |= poll_power_source(f, g, index, dev, slow, labels, t_ns, out);
    return rc ? -ENOMEM : 0;
}

/* The state string as a label: printable ASCII, at most STATE_LEN bytes. */
static void state_label(const char *s, size_t n, char *out)
{
    size_t j = 0;
    for (size_t i = 0; i < n && s[i] && j + 1 < STATE_LEN; i++)
        out[j++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    while (j > 0 && out[j - 1] == ' ')
        j--;
    out[j] = '\0';
}

int wt_nvml_fields_poll_units(struct wt_nvml_fields *f, int64_t t_ns, struct wt_batch *out)
{
    if (!f)
        return 0;
    int rc = 0;
    for (unsigned int i = 0; i < f->nunits; i++) {
        struct unit *u = &f->units[i];
        char idx[16], labels[WT_LABELS_LEN];
        if (!u->have && f->fn.unit_handle(i, &u->h) == NVML_SUCCESS)
            u->have = true;
        if (!u->have)
            continue;
        snprintf(idx, sizeof idx, "%u", i);
        if (wt_labels(labels, sizeof labels, "unit", idx, NULL) != 0)
            continue;
        if (!(f->units_off & (1u << F_PSU))) {
            nvmlPSUInfo_t psu;
            memset(&psu, 0, sizeof psu);
            nvmlReturn_t r = f->fn.unit_psu(u->h, &psu);
            if (r == NVML_ERROR_NOT_SUPPORTED) {
                f->units_off |= 1u << F_PSU;
                say_absent(f, F_PSU, "", errstr(f, r));
            } else if (r != NVML_SUCCESS) {
                say_failed(f, "nvmlUnitGetPsuInfo", i, r);
            } else {
                char state[STATE_LEN];
                state_label(psu.state, sizeof psu.state, state);
                /* raw: W, V, A (whole units) */
                rc |= wt_batch_add(out, WT_M_PSU_POWER_W, labels, t_ns, psu.power);
                rc |= wt_batch_add(out, WT_M_PSU_VOLTAGE_V, labels, t_ns, psu.voltage);
                rc |= wt_batch_add(out, WT_M_PSU_CURRENT_A, labels, t_ns, psu.current);
                rc |= add_with(out, WT_M_PSU_STATE_INFO, labels, "state",
                               state[0] ? state : "unknown", NULL, NULL, t_ns, 1);
            }
        }
        if (!(f->units_off & (1u << F_UNIT_FANS))) {
            nvmlUnitFanSpeeds_t fans;
            memset(&fans, 0, sizeof fans);
            nvmlReturn_t r = f->fn.unit_fans(u->h, &fans);
            if (r == NVML_ERROR_NOT_SUPPORTED) {
                f->units_off |= 1u << F_UNIT_FANS;
                say_absent(f, F_UNIT_FANS, "", errstr(f, r));
            } else if (r != NVML_SUCCESS) {
                say_failed(f, "nvmlUnitGetFanSpeedInfo", i, r);
            } else {
                unsigned int nf = fans.count < MAX_UNIT_FANS ? fans.count : MAX_UNIT_FANS;
                for (unsigned int k = 0; k < nf; k++) {
                    char fan[16];
                    snprintf(fan, sizeof fan, "%u", k);
                    rc |= add_with(out, WT_M_UNIT_FAN_RPM, labels, "fan", fan, NULL, NULL, t_ns,
                                   fans.fans[k].speed);
                    rc |= add_with(out, WT_M_UNIT_FAN_FAILED, labels, "fan", fan, NULL, NULL, t_ns,
                                   fans.fans[k].state == NVML_FAN_FAILED ? 1 : 0);
                }
            }
        }
    }
    return rc ? -ENOMEM : 0;
}
