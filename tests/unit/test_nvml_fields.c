/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's interconnect counters, GPM metrics, power source and S-class units
 * (collect/nvml_fields.c) against the fake libnvidia-ml: symbol coverage; the counter
 * arithmetic (value types, 32-bit wraps, resets); NVLink and PCIe bytes against the fake's
 * exact counts; a PCIe counter that wraps many times; a driver reload; GPM ratios over the
 * interval between two samples, the 100-ms rule, a metric NOT_SUPPORTED, samples freed at
 * close; GPM before Hopper; every feature NOT_SUPPORTED (absent, said once, not asked again);
 * a transient field error; a GPU lost and back; the units' power supplies and fans.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collect/nvml.h"
#include "collect/nvml_fields.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "logcap.h"
#include "readings.h"
#include "runner.h"

static char fake_path[PATH_MAX], minimal_path[PATH_MAX];

__attribute__((constructor)) static void resolve_fakes(void)
{
    if (!realpath(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), fake_path))
        fake_path[0] = '\0';
    if (!realpath(wt_test_build_path("tests/fakes/minimal/libnvidia-ml.so.1"), minimal_path))
        minimal_path[0] = '\0';
}

static const char *fake(void)
{
    if (!fake_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake NVML is not built: run make first");
    return fake_path;
}

static double now_s(void)
{
    return (double)wt_now_real_ns() / WT_NS_PER_S;
}

static double set_t0_now(void)
{
    char buf[64];
    double t0 = now_s();
    snprintf(buf, sizeof buf, "%.6f", t0);
    setenv("FAKE_NVML_T0", buf, 1);
    return t0;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void *open_ok(const char *lib)
{
    static struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    cfg.collectors.nvml.interval_ns = 100 * WT_NS_PER_MS;
    cfg.collectors.nvml_attribution = false;
    setenv("WATTAGE_NVML_LIBRARY", lib, 1);
    int rc = wt_nvml_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

static void poll_ok(void *st, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    wt_batch_clear(b);
    int rc = wt_nvml_collector.poll(st, wt_now_real_ns(), b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %d %s", rc, err.msg);
}

static void gpu_labels(char *buf, size_t n, unsigned int gpu)
{
    char idx[16], uuid[64];
    snprintf(idx, sizeof idx, "%u", gpu);
    snprintf(uuid, sizeof uuid, "GPU-fake-0000-%u", gpu);
    WT_EQ_INT(wt_labels(buf, n, "gpu", idx, "uuid", uuid, "model", "NVIDIA H200", NULL), 0);
}

/* metric of GPU gpu (key="val" appended when key is set); NAN when absent. */
static double value(const struct wt_batch *b, int metric, unsigned int gpu, const char *key,
                    const char *val)
{
    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, gpu);
    if (key)
        WT_EQ_INT(wt_labels_add(l, sizeof l, key, val), 0);
    const struct wt_reading *r = find_reading(b, metric, l);
    return r ? r->value : NAN;
}

/* metric of unit u (key="val" appended when key is set); NAN when absent. */
static double unit_value(const struct wt_batch *b, int metric, unsigned int u, const char *key,
                         const char *val)
{
    char l[WT_LABELS_LEN], idx[16];
    snprintf(idx, sizeof idx, "%u", u);
    WT_EQ_INT(wt_labels(l, sizeof l, "unit", idx, NULL), 0);
    if (key)
        WT_EQ_INT(wt_labels_add(l, sizeof l, key, val), 0);
    const struct wt_reading *r = find_reading(b, metric, l);
    return r ? r->value : NAN;
}

static int count_lines(const char *path, const char *line)
{
    char buf[256];
    int n = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        n += strcmp(buf, line) == 0;
    }
    if (f)
        fclose(f);
    return n;
}

static const char *call_log(void)
{
    static char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/calls.log", wt_test_dir());
    setenv("FAKE_NVML_CALL_LOG", log, 1);
    return log;
}

/* The fake's count of GPM sample buffers allocated and not freed. */
static int gpm_live(void)
{
    void *dl = dlopen(fake(), RTLD_NOW | RTLD_NOLOAD);
    WT_ASSERT(dl != NULL);
    int (*fn)(void) = (int (*)(void))dlsym(dl, "fake_nvml_gpm_live");
    WT_ASSERT(fn != NULL);
    int n = fn();
    dlclose(dl);
    return n;
}

WT_TEST(the_fake_exports_every_entry_point_of_the_fields_and_the_minimal_one_none)
{
    void *dl = dlopen(fake(), RTLD_NOW | RTLD_LOCAL);
    WT_ASSERT(dl != NULL);
    for (size_t i = 0; i < wt_nvml_fields_symbol_count; i++)
        if (!dlsym(dl, wt_nvml_fields_symbols[i]))
            wt_test_fail(__FILE__, __LINE__, "the fake lacks %s", wt_nvml_fields_symbols[i]);
    dlclose(dl);
    WT_ASSERT(minimal_path[0]);
    dl = dlopen(minimal_path, RTLD_NOW | RTLD_LOCAL);
    WT_ASSERT(dl != NULL);
    for (size_t i = 0; i < wt_nvml_fields_symbol_count; i++)
        WT_ASSERT(dlsym(dl, wt_nvml_fields_symbols[i]) == NULL);
    dlclose(dl);
    /* The collector on the minimal library has none of these series and polls fine. */
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NVLINK", "1000,500", 1);
    setenv("FAKE_NVML_GPM", "1", 1);
    void *st = open_ok(minimal_path);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    sleep_s(0.12);
    poll_ok(st, &b);
    WT_EQ_INT(value(&b, WT_M_GPU_UP, 1, NULL, NULL), 1);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_NVLINK_TX_BYTES), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_SM_ACTIVE_RATIO), 0);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(field_values_are_counters_of_their_types_width)
{
    nvmlFieldValue_t fv;
    uint64_t raw = 0, mod = 0;
    memset(&fv, 0, sizeof fv);
    fv.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    fv.value.uiVal = 4000000000u;
    WT_ASSERT(wt_nvml_field_counter(&fv, &raw, &mod));
    WT_EQ_INT(raw, 4000000000u);
    WT_EQ_INT(mod, 1ULL << 32);
    fv.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    fv.value.ullVal = 1ULL << 40;
    WT_ASSERT(wt_nvml_field_counter(&fv, &raw, &mod));
    WT_EQ_INT(raw, 1ULL << 40);
    WT_EQ_INT(mod, 0);
    fv.valueType = NVML_VALUE_TYPE_UNSIGNED_SHORT;
    fv.value.usVal = 65000;
    WT_ASSERT(wt_nvml_field_counter(&fv, &raw, &mod));
    WT_EQ_INT(mod, 1 << 16);
    fv.valueType = NVML_VALUE_TYPE_SIGNED_LONG_LONG;
    fv.value.sllVal = -5;
    WT_ASSERT(!wt_nvml_field_counter(&fv, &raw, &mod));
    fv.valueType = NVML_VALUE_TYPE_DOUBLE;
    fv.value.dVal = NAN;
    WT_ASSERT(!wt_nvml_field_counter(&fv, &raw, &mod));
    fv.value.dVal = 1234.9;
    WT_ASSERT(wt_nvml_field_counter(&fv, &raw, &mod));
    WT_EQ_INT(raw, 1234);
    fv.valueType = (nvmlValueType_t)42;
    WT_ASSERT(!wt_nvml_field_counter(&fv, &raw, &mod));
}

WT_TEST(a_counter_unwraps_its_width_and_takes_a_64_bit_decrease_as_a_reset)
{
    struct wt_nvml_counter c = {0};
    uint64_t total = 0;
    const uint64_t m32 = 1ULL << 32;
    WT_EQ_INT(wt_nvml_counter_update(&c, 1, m32 - 100, m32, &total), WT_DELTA_FIRST);
    WT_EQ_INT(total, m32 - 100); /* the series starts where the hardware is */
    WT_EQ_INT(wt_nvml_counter_update(&c, 2, 50, m32, &total), WT_DELTA_WRAP);
    WT_EQ_INT(total, m32 + 50);
    WT_EQ_INT(wt_nvml_counter_update(&c, 3, 1000, m32, &total), WT_DELTA_OK);
    WT_EQ_INT(total, m32 + 1000);
    /* 64 bits: a decrease is a driver reload; what it counted since is kept. */
    struct wt_nvml_counter d = {0};
    WT_EQ_INT(wt_nvml_counter_update(&d, 1, 5000000, 0, &total), WT_DELTA_FIRST);
    WT_EQ_INT(wt_nvml_counter_update(&d, 2, 5000100, 0, &total), WT_DELTA_OK);
    WT_EQ_INT(total, 5000100);
    WT_EQ_INT(wt_nvml_counter_update(&d, 3, 30, 0, &total), WT_DELTA_RESET);
    WT_EQ_INT(total, 5000130);
    WT_EQ_INT(wt_nvml_counter_update(&d, 4, 40, 0, &total), WT_DELTA_OK);
    WT_EQ_INT(total, 5000140);
}

WT_TEST(nvlink_and_pcie_bytes_follow_the_fakes_counters_through_many_32_bit_wraps)
{
    double t0 = set_t0_now();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NVLINK", "1000,250", 1); /* KiB/s */
    /* 2 GB/s from 100 MB under the wrap: the 32-bit counter wraps at 0.05 s, then every 2.1 s
     * (a poll late by less than that is still unwrapped right) */
    setenv("FAKE_NVML_PCIE", "2e9,1e9", 1);
    setenv("FAKE_NVML_PCIE_OFFSET", "4194967296", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    double first_tx[2] = {0, 0}, first_rx[2] = {0, 0}, b0 = 0, a0 = 0, prev_tx = 0;
    for (int i = 0; i < 30; i++) {
        double before = now_s();
        poll_ok(st, &b);
        double after = now_s();
        for (unsigned int g = 0; g < 2; g++) {
            double tx = value(&b, WT_M_GPU_PCIE_TX_BYTES, g, NULL, NULL);
            double rx = value(&b, WT_M_GPU_PCIE_RX_BYTES, g, NULL, NULL);
            double ntx = value(&b, WT_M_GPU_NVLINK_TX_BYTES, g, NULL, NULL);
            double nrx = value(&b, WT_M_GPU_NVLINK_RX_BYTES, g, NULL, NULL);
            /* NVLink is 64-bit: the series is the fake's exact count at its call time, which
             * lies between before and after (KiB as bytes). */
            WT_ASSERT(ntx >= 1024 * floor(1000 * (before - t0)) &&
                      ntx <= 1024 * floor(1000 * (after - t0)));
            WT_ASSERT(nrx >= 1024 * floor(250 * (before - t0)) &&
                      nrx <= 1024 * floor(250 * (after - t0)));
            if (i == 0) {
                /* A wrapping counter's series starts at its first raw reading. */
                WT_ASSERT(tx < 4294967296.0 && rx < 4294967296.0);
                first_tx[g] = tx, first_rx[g] = rx, b0 = before, a0 = after;
                continue;
            }
            /* What came since the first reading, unwrapped, to the byte of the fake's count. */
            WT_ASSERT(tx - first_tx[g] >= floor(2e9 * (before - a0)) - 1);
            WT_ASSERT(tx - first_tx[g] <= ceil(2e9 * (after - b0)) + 1);
            WT_ASSERT(rx - first_rx[g] >= floor(1e9 * (before - a0)) - 1);
            WT_ASSERT(rx - first_rx[g] <= ceil(1e9 * (after - b0)) + 1);
            if (g == 0) {
                WT_ASSERT(tx >= prev_tx); /* a counter, across every wrap */
                prev_tx = tx;
            }
        }
        sleep_s(0.1);
    }
    double wraps = floor((prev_tx - first_tx[0] + fmod(first_tx[0], 4294967296.0)) / 4294967296.0);
    printf("# PCIe TX: %.0f bytes since the first poll, %.0f wraps of 2^32 unwrapped\n",
           prev_tx - first_tx[0], wraps);
    WT_ASSERT(wraps >= 1);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(a_driver_reload_is_a_new_baseline_never_a_step_back_and_is_said)
{
    int saved = logcap_begin();
    set_t0_now();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NVLINK", "100000,100000", 1);
    setenv("FAKE_NVML_PCIE", "1e8,1e8", 1);
    setenv("FAKE_NVML_PCIE_64", "1", 1);
    setenv("FAKE_NVML_RESET", "0:0.5", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    double last[2] = {0, 0}, before_reset = 0;
    for (int i = 0; i < 10; i++) {
        poll_ok(st, &b);
        for (unsigned int g = 0; g < 2; g++) {
            double v = value(&b, WT_M_GPU_NVLINK_TX_BYTES, g, NULL, NULL);
            WT_ASSERT(!isnan(v));
            WT_ASSERT(v >= last[g]);
            last[g] = v;
            WT_ASSERT(value(&b, WT_M_GPU_PCIE_TX_BYTES, g, NULL, NULL) >= 0);
        }
        if (i == 3)
            before_reset = last[0];
        sleep_s(0.1);
    }
    wt_nvml_collector.close(st);
    logcap_end(saved);
    /* After the reload GPU 0 went on from where it was (plus what the new counter counted). */
    WT_ASSERT(last[0] > before_reset);
    WT_EQ_INT(logcap_count("NVLink transmit counter went back gpu=0", "new baseline"), 1);
    WT_EQ_INT(logcap_count("went back gpu=1", NULL), 0);
    wt_batch_free(&b);
}

WT_TEST(gpm_ratios_are_the_mean_over_two_samples_at_least_100_ms_apart)
{
    int saved = logcap_begin();
    const char *log = call_log();
    set_t0_now();
    setenv("FAKE_NVML_GPUS", "3", 1);
    setenv("FAKE_NVML_GPM", "1", 1);
    setenv("FAKE_NVML_GPM_OFF", "3", 1); /* SM occupancy not on this board */
    setenv("FAKE_NVML_UTIL", "0:0:100:60,1:0:100:20,2:0:100:100", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    poll_ok(st, &b);
    /* One sample is no interval yet. */
    WT_EQ_INT(count_readings(&b, WT_M_GPU_SM_ACTIVE_RATIO), 0);
    WT_EQ_INT(gpm_live(), 6);
    sleep_s(0.15);
    poll_ok(st, &b);
    WT_NEAR(value(&b, WT_M_GPU_SM_ACTIVE_RATIO, 0, NULL, NULL), 0.60, 1e-9);
    WT_NEAR(value(&b, WT_M_GPU_TENSOR_ACTIVE_RATIO, 0, NULL, NULL), 0.15, 1e-9);
    WT_NEAR(value(&b, WT_M_GPU_DRAM_BW_RATIO, 0, NULL, NULL), 0.36, 1e-9);
    WT_NEAR(value(&b, WT_M_GPU_SM_ACTIVE_RATIO, 1, NULL, NULL), 0.20, 1e-9);
    WT_NEAR(value(&b, WT_M_GPU_SM_ACTIVE_RATIO, 2, NULL, NULL), 1.00, 1e-9);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_SM_OCCUPANCY_RATIO), 0);
    /* 20 ms later: too close to the last sample, no sample and no metrics this poll. */
    sleep_s(0.02);
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_SM_ACTIVE_RATIO), 0);
    WT_EQ_INT(value(&b, WT_M_GPU_UP, 0, NULL, NULL), 1);
    sleep_s(0.15);
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_SM_ACTIVE_RATIO), 3);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_TENSOR_ACTIVE_RATIO), 3);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    /* Every sample buffer is freed at close; three samples per GPU in four polls. */
    WT_EQ_INT(gpm_live(), 0);
    WT_EQ_INT(count_lines(log, "nvmlGpmSampleGet"), 9);
    WT_EQ_INT(count_lines(log, "nvmlGpmMetricsGet"), 6);
    WT_EQ_INT(count_lines(log, "nvmlGpmQueryDeviceSupport"), 3);
    WT_EQ_INT(logcap_count("GPM SM occupancy: Not Supported", "its metric is absent"), 1);
    WT_EQ_INT(logcap_count(" warn ", NULL), 0);
    wt_batch_free(&b);
}

WT_TEST(gpm_before_hopper_and_every_other_feature_not_supported_are_absent_and_said_once)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    const char *log = call_log();
    setenv("FAKE_NVML_GPUS", "4", 1);
    /* No FAKE_NVML_GPM (a GPU before Hopper), no NVLink, PCIe counters, power source, units. */
    setenv("FAKE_NVML_NOT_SUPPORTED", "mem_temp", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    for (int i = 0; i < 4; i++) {
        poll_ok(st, &b);
        sleep_s(0.12);
    }
    for (unsigned int g = 0; g < 4; g++)
        WT_EQ_INT(value(&b, WT_M_GPU_UP, g, NULL, NULL), 1);
    static const int metrics[] = {
        WT_M_GPU_NVLINK_TX_BYTES,     WT_M_GPU_NVLINK_RX_BYTES,
        WT_M_GPU_PCIE_TX_BYTES,       WT_M_GPU_PCIE_RX_BYTES,
        WT_M_GPU_SM_ACTIVE_RATIO,     WT_M_GPU_SM_OCCUPANCY_RATIO,
        WT_M_GPU_TENSOR_ACTIVE_RATIO, WT_M_GPU_DRAM_BW_RATIO,
        WT_M_GPU_POWER_SOURCE_INFO,   WT_M_PSU_POWER_W,
        WT_M_PSU_STATE_INFO,          WT_M_UNIT_FAN_RPM,
    };
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
        WT_EQ_INT(count_readings(&b, metrics[i]), 0);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    /* Four GPUs, four polls: one line each, at info. */
    static const char *const said[] = {
        "NVLink transmit counter: Not Supported",
        "NVLink receive counter: Not Supported",
        "PCIe transmit counter: Not Supported",
        "PCIe receive counter: Not Supported",
        "GPM metrics: not supported (GPM needs Hopper or newer) gpu=0",
        "power source: Not Supported",
        "no S-class unit (nvmlUnitGetCount 0)",
    };
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++)
        if (logcap_count(" info  nvml: ", said[i]) != 1)
            wt_test_fail(__FILE__, __LINE__, "\"%s\" said %d times", said[i],
                         logcap_count(" info  nvml: ", said[i]));
    WT_EQ_INT(logcap_count(" warn ", NULL), 0);
    /* Asked once per GPU, never again: the field values call is the memory temperature's and
     * the counters' first poll (both NOT_SUPPORTED), GPM never sampled. */
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetFieldValues"), 8);
    WT_EQ_INT(count_lines(log, "nvmlGpmQueryDeviceSupport"), 4);
    WT_EQ_INT(count_lines(log, "nvmlGpmSampleGet"), 0);
    WT_EQ_INT(count_lines(log, "nvmlGpmSampleAlloc"), 0);
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetPowerSource"), 4);
    WT_EQ_INT(count_lines(log, "nvmlUnitGetCount"), 1);
    WT_EQ_INT(count_lines(log, "nvmlUnitGetPsuInfo"), 0);
    wt_batch_free(&b);
}

WT_TEST(a_transient_field_error_skips_those_polls_with_one_warning_and_the_counter_goes_on)
{
    int saved = logcap_begin();
    double t0 = set_t0_now();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NVLINK", "1000,1000", 1);
    setenv("FAKE_NVML_FIELD_ERROR", "0:0.3:0.7", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    int absent = 0, present_after = 0;
    double last = 0;
    while (now_s() - t0 < 1.2) {
        poll_ok(st, &b);
        double v = value(&b, WT_M_GPU_NVLINK_TX_BYTES, 0, NULL, NULL);
        double s = now_s() - t0;
        WT_EQ_INT(value(&b, WT_M_GPU_UP, 0, NULL, NULL), 1);
        WT_ASSERT(!isnan(value(&b, WT_M_GPU_NVLINK_TX_BYTES, 1, NULL, NULL)));
        if (isnan(v)) {
            absent++;
        } else {
            WT_ASSERT(v >= last);
            last = v;
            present_after += s > 0.75;
        }
        sleep_s(0.05);
    }
    wt_nvml_collector.close(st);
    logcap_end(saved);
    WT_ASSERT(absent >= 3);
    WT_ASSERT(present_after >= 3);
    /* the count went on through the gap: the series is the fake's count, not a new start */
    WT_ASSERT(last >= 1024 * 1000 * 1.0);
    WT_EQ_INT(logcap_count(" warn  nvml: NVLink transmit counter failed gpu=0", NULL), 1);
    WT_EQ_INT(logcap_count("went back", NULL), 0);
    wt_batch_free(&b);
}

WT_TEST(a_gpu_lost_and_back_has_no_counter_series_meanwhile_and_resumes)
{
    double t0 = set_t0_now();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_NVLINK", "1000,1000", 1);
    setenv("FAKE_NVML_GPM", "1", 1);
    setenv("FAKE_NVML_LOST", "1:0.3:0.7", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    int down = 0, gpm_after = 0;
    double last = 0;
    while (now_s() - t0 < 1.4) {
        poll_ok(st, &b);
        double up = NAN;
        for (size_t i = 0; i < b.len; i++)
            if (b.r[i].metric == WT_M_GPU_UP && strstr(b.r[i].labels, "gpu=\"1\""))
                up = b.r[i].value;
        double v = value(&b, WT_M_GPU_NVLINK_TX_BYTES, 1, NULL, NULL);
        if (up == 0) {
            down++;
            WT_ASSERT(isnan(v));
            WT_ASSERT(isnan(value(&b, WT_M_GPU_SM_ACTIVE_RATIO, 1, NULL, NULL)));
        } else if (!isnan(v)) {
            WT_ASSERT(v >= last);
            last = v;
            gpm_after +=
                now_s() - t0 > 0.9 && !isnan(value(&b, WT_M_GPU_SM_ACTIVE_RATIO, 1, NULL, NULL));
        }
        sleep_s(0.11);
    }
    wt_nvml_collector.close(st);
    WT_ASSERT(down >= 2);
    WT_ASSERT(gpm_after >= 2);
    WT_ASSERT(last >= 1024 * 1000 * 1.0);
    WT_EQ_INT(gpm_live(), 0);
    wt_batch_free(&b);
}

WT_TEST(s_class_units_report_their_power_supply_and_fans_and_an_abnormal_state)
{
    set_t0_now();
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_UNITS", "2", 1);
    setenv("FAKE_NVML_PSU_ABNORMAL", "1:0.3", 1);
    setenv("FAKE_NVML_POWER_SOURCE", "undersized", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    poll_ok(st, &b);
    for (unsigned int u = 0; u < 2; u++) {
        WT_EQ_INT(unit_value(&b, WT_M_PSU_POWER_W, u, NULL, NULL), 480 + 12 * u);
        WT_EQ_INT(unit_value(&b, WT_M_PSU_VOLTAGE_V, u, NULL, NULL), 12);
        WT_EQ_INT(unit_value(&b, WT_M_PSU_CURRENT_A, u, NULL, NULL), 40 + u);
        WT_EQ_INT(unit_value(&b, WT_M_PSU_STATE_INFO, u, "state", "Normal"), 1);
        WT_EQ_INT(unit_value(&b, WT_M_UNIT_FAN_RPM, u, "fan", "1"), 5100);
        WT_EQ_INT(unit_value(&b, WT_M_UNIT_FAN_FAILED, u, "fan", "1"), 0);
    }
    WT_EQ_INT(value(&b, WT_M_GPU_POWER_SOURCE_INFO, 0, "source", "undersized"), 1);
    sleep_s(0.4);
    poll_ok(st, &b);
    WT_EQ_INT(unit_value(&b, WT_M_PSU_STATE_INFO, 0, "state", "Normal"), 1);
    WT_EQ_INT(unit_value(&b, WT_M_PSU_STATE_INFO, 1, "state", "Abnormal High voltage"), 1);
    WT_EQ_INT(count_readings(&b, WT_M_PSU_STATE_INFO), 2);
    WT_EQ_INT(unit_value(&b, WT_M_UNIT_FAN_FAILED, 1, "fan", "1"), 1);
    WT_EQ_INT(unit_value(&b, WT_M_UNIT_FAN_FAILED, 1, "fan", "0"), 0);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(units_without_a_power_supply_reading_keep_their_fans_and_say_it_once)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_UNITS", "3", 1);
    setenv("FAKE_NVML_NOT_SUPPORTED", "psu", 1);
    void *st = open_ok(fake());
    struct wt_batch b = {0};
    for (int i = 0; i < 3; i++)
        poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_PSU_POWER_W), 0);
    WT_EQ_INT(count_readings(&b, WT_M_UNIT_FAN_RPM), 6);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    WT_EQ_INT(logcap_count("S-class unit power supply: Not Supported", NULL), 1);
    wt_batch_free(&b);
}
