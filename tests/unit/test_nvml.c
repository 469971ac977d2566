/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector against the fake libnvidia-ml (tests/fakes/fake_nvml.c), loaded through the
 * real dlopen path: symbol coverage, the minimal library, readings and labels for 8 GPUs,
 * NOT_SUPPORTED, a GPU lost and back, a counter reset, a missing library, a failing nvmlInit,
 * and energy over a window against the fake's exact integral.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collect/nvml.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/hub.h"
#include "core/log.h"
#include "core/loop.h"
#include "logcap.h"
#include "readings.h"
#include "runner.h"

typedef double exact_energy_fn(unsigned int gpu, double t_from, double t_to);

static char fake_path[PATH_MAX], minimal_path[PATH_MAX];

/*
 * The runner chdirs into each test's own directory and wt_test_build_path() is relative to the
 * repository root, so the fakes' absolute paths are taken before main runs.
 */
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

static const char *minimal(void)
{
    if (!minimal_path[0])
        wt_test_fail(__FILE__, __LINE__, "the minimal fake NVML is not built: run make first");
    return minimal_path;
}

static double now_s(void)
{
    return (double)wt_now_real_ns() / WT_NS_PER_S;
}

static void set_t0_now(void)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", now_s());
    setenv("FAKE_NVML_T0", buf, 1);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Opens the collector on lib with the given interval (ms); asserts success. */
static void *open_ok(const char *lib, int interval_ms)
{
    static struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    cfg.collectors.nvml.interval_ns = (int64_t)interval_ms * WT_NS_PER_MS;
    setenv("WATTAGE_NVML_LIBRARY", lib, 1);
    int rc = wt_nvml_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    WT_ASSERT(st != NULL);
    return st;
}

static int64_t poll_ok(void *st, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    int64_t t = wt_now_real_ns();
    wt_batch_clear(b);
    int rc = wt_nvml_collector.poll(st, t, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %d %s", rc, err.msg);
    return t;
}

static void gpu_labels(char *buf, size_t n, unsigned int gpu)
{
    char idx[16], uuid[64];
    snprintf(idx, sizeof idx, "%u", gpu);
    snprintf(uuid, sizeof uuid, "GPU-fake-0000-%u", gpu);
    WT_EQ_INT(wt_labels(buf, n, "gpu", idx, "uuid", uuid, "model", "NVIDIA H200", NULL), 0);
}

/* The value of metric for GPU gpu, extra label pair appended when key is set; NAN if absent. */
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

/* gpu_up of GPU gpu, whatever its uuid/model labels say (they are empty before discovery). */
static double up_of(const struct wt_batch *b, unsigned int gpu)
{
    char want[16], got[16];
    snprintf(want, sizeof want, "%u", gpu);
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric == WT_M_GPU_UP &&
            wt_labels_get(b->r[i].labels, "gpu", got, sizeof got) == 0 && strcmp(got, want) == 0)
            return b->r[i].value;
    return NAN;
}

static int count_lines(const char *path, const char *line)
{
    FILE *f = fopen(path, "r");
    char buf[256];
    int n = 0;
    if (!f)
        return 0;
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        n += strcmp(buf, line) == 0;
    }
    fclose(f);
    return n;
}

WT_TEST(every_resolved_symbol_exists_in_the_fake)
{
    void *h = dlopen(fake(), RTLD_NOW | RTLD_LOCAL);
    WT_ASSERT(h != NULL);
    WT_ASSERT(wt_nvml_symbol_count >= 20);
    for (size_t i = 0; i < wt_nvml_symbol_count; i++) {
        const struct wt_nvml_symbol *s = &wt_nvml_symbols[i];
        WT_ASSERT(s->names[0] != NULL);
        for (int k = 0; k < WT_NVML_MAX_NAMES && s->names[k]; k++)
            if (!dlsym(h, s->names[k]))
                wt_test_fail(__FILE__, __LINE__, "fake lacks %s", s->names[k]);
    }
    WT_ASSERT(dlsym(h, "fake_nvml_exact_energy_j") != NULL);
    dlclose(h);
}

WT_TEST(minimal_fake_has_exactly_the_required_symbols)
{
    void *h = dlopen(minimal(), RTLD_NOW | RTLD_LOCAL);
    WT_ASSERT(h != NULL);
    int required = 0;
    for (size_t i = 0; i < wt_nvml_symbol_count; i++) {
        const struct wt_nvml_symbol *s = &wt_nvml_symbols[i];
        int found = 0;
        for (int k = 0; k < WT_NVML_MAX_NAMES && s->names[k]; k++)
            found += dlsym(h, s->names[k]) != NULL;
        if (s->required) {
            required++;
            if (!found)
                wt_test_fail(__FILE__, __LINE__, "minimal fake lacks required %s", s->names[0]);
        } else if (found) {
            wt_test_fail(__FILE__, __LINE__, "minimal fake exports optional %s", s->names[0]);
        }
    }
    WT_ASSERT(required >= 5);
    /* Only the oldest names: the collector must fall back to them. */
    WT_ASSERT(dlsym(h, "nvmlInit_v2") == NULL);
    WT_ASSERT(dlsym(h, "nvmlInit") != NULL);
    dlclose(h);
}

WT_TEST(minimal_library_opens_and_polls_without_optional_metrics)
{
    setenv("FAKE_NVML_GPUS", "2", 1);
    void *st = open_ok(minimal(), 100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    sleep_s(0.05);
    poll_ok(st, &b);
    for (unsigned int g = 0; g < 2; g++) {
        WT_EQ_INT(up_of(&b, g), 1);
        double p = value(&b, WT_M_GPU_POWER_W, g, NULL, NULL);
        WT_ASSERT(p >= 199 && p <= 401);
        WT_ASSERT(!isnan(value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, g, NULL, NULL)));
        WT_ASSERT(value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, g, NULL, NULL) > 0);
        WT_ASSERT(isnan(value(&b, WT_M_GPU_ENERGY_J, g, NULL, NULL)));
        WT_ASSERT(isnan(value(&b, WT_M_GPU_TEMP_C, g, NULL, NULL)));
    }
    WT_EQ_INT(count_readings(&b, WT_M_GPU_TEMP_C), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_THROTTLED), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_LIMIT_W), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_INFO), 2);
    /* No PCI call in the minimal library: info has no pci_bus_id, only the vendor. */
    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, 1);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "vendor", "nvidia"), 0);
    WT_ASSERT(find_reading(&b, WT_M_GPU_INFO, l) != NULL);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(eight_gpus_give_every_reading_with_labels)
{
    setenv("FAKE_NVML_THROTTLE", "0x44", 1);
    set_t0_now();
    void *st = open_ok(fake(), 1000);
    struct wt_batch b = {0};
    double t_before = now_s();
    poll_ok(st, &b);
    double t_after = now_s();

    WT_EQ_INT(count_readings(&b, WT_M_GPU_UP), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_INFO), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 8); /* the counter, one per GPU */
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_INTEGRATED_J), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_THROTTLED), 8 * 9);

    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, 3);
    WT_EQ_STR(l, "gpu=\"3\",uuid=\"GPU-fake-0000-3\",model=\"NVIDIA H200\"");
    char info[WT_LABELS_LEN];
    memcpy(info, l, sizeof info);
    WT_EQ_INT(wt_labels_add(info, sizeof info, "vendor", "nvidia"), 0);
    WT_EQ_INT(wt_labels_add(info, sizeof info, "pci_bus_id", "00000000:13:00.0"), 0);
    WT_EQ_INT(wt_labels_add(info, sizeof info, "driver_version", "550.54.15-fake"), 0);
    WT_EQ_INT(wt_labels_add(info, sizeof info, "vbios_version", "96.00.89.00.01"), 0);
    WT_EQ_INT(wt_labels_add(info, sizeof info, "cuda_driver_version", "12.4"), 0);
    const struct wt_reading *r = find_reading(&b, WT_M_GPU_INFO, info);
    WT_ASSERT(r != NULL);
    WT_EQ_INT(r->value, 1);

    for (unsigned int g = 0; g < 8; g++) {
        WT_EQ_INT(value(&b, WT_M_GPU_UP, g, NULL, NULL), 1);
        /* P_g(t) = 300 + 100 sin(2π(t−T0)/7 + g), t within the poll. */
        double t0 = atof(getenv("FAKE_NVML_T0"));
        double lo = 1e9, hi = -1e9;
        for (double t = t_before; t <= t_after + 1e-4; t += 1e-4) {
            double p = 300 + 100 * sin(2 * M_PI * (t - t0) / 7 + g);
            lo = p < lo ? p : lo, hi = p > hi ? p : hi;
        }
        WT_NEAR(value(&b, WT_M_GPU_POWER_W, g, NULL, NULL), (lo + hi) / 2, (hi - lo) / 2 + 0.002);
        WT_EQ_INT(value(&b, WT_M_GPU_TEMP_C, g, NULL, NULL), 45 + g);
        WT_EQ_INT(value(&b, WT_M_GPU_SLOWDOWN_TEMP_C, g, NULL, NULL), 87);
        WT_EQ_INT(value(&b, WT_M_GPU_SHUTDOWN_TEMP_C, g, NULL, NULL), 92);
        WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_W, g, NULL, NULL), 700, 1e-9);
        WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_MIN_W, g, NULL, NULL), 200, 1e-9);
        WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_MAX_W, g, NULL, NULL), 700, 1e-9);
        WT_NEAR(value(&b, WT_M_GPU_MEM_TOTAL_B, g, NULL, NULL), 143771.0 * 1024 * 1024, 1);
        double used = value(&b, WT_M_GPU_MEM_USED_B, g, NULL, NULL);
        WT_ASSERT(used > 0 && used < 143771.0 * 1024 * 1024);
        double u = value(&b, WT_M_GPU_UTIL_RATIO, g, NULL, NULL);
        WT_ASSERT(u >= 0 && u <= 1);
        WT_ASSERT(value(&b, WT_M_GPU_MEM_UTIL_RATIO, g, NULL, NULL) <= u);
        double sm = value(&b, WT_M_GPU_SM_CLOCK_HZ, g, NULL, NULL);
        WT_ASSERT(sm >= 345e6 && sm <= 1980e6);
        WT_NEAR(value(&b, WT_M_GPU_MEM_CLOCK_HZ, g, NULL, NULL), 2619e6, 1);
        WT_EQ_INT(value(&b, WT_M_GPU_PSTATE, g, NULL, NULL), 0);
        WT_EQ_INT(value(&b, WT_M_GPU_THROTTLE_REASONS, g, NULL, NULL), 0x44);
        WT_EQ_INT(value(&b, WT_M_GPU_THROTTLED, g, "reason", "sw_power_cap"), 1);
        WT_EQ_INT(value(&b, WT_M_GPU_THROTTLED, g, "reason", "hw_thermal_slowdown"), 1);
        WT_EQ_INT(value(&b, WT_M_GPU_THROTTLED, g, "reason", "gpu_idle"), 0);
        WT_EQ_INT(value(&b, WT_M_GPU_THROTTLED, g, "reason", "hw_slowdown"), 0);
        WT_EQ_INT(value(&b, WT_M_GPU_THROTTLED, g, "reason", "display_clocks_setting"), 0);
        /* The counter starts at the hardware value: offset 1e9 mJ plus the energy since T0. */
        double e = value(&b, WT_M_GPU_ENERGY_J, g, NULL, NULL);
        WT_ASSERT(e >= 1e6 && e <= 1e6 + 400 * (t_after - t0) + 0.01);
        WT_NEAR(value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, g, NULL, NULL), 0, 1e-12);
        WT_EQ_INT(value(&b, WT_M_GPU_ENERGY_GAPS, g, NULL, NULL), 0);
    }
    struct wt_nvml_info info_out;
    WT_EQ_INT(wt_nvml_get_info(st, &info_out), 0);
    WT_EQ_INT(info_out.gpu_count, 8);
    WT_EQ_STR(info_out.driver_version, "550.54.15-fake");
    WT_EQ_STR(info_out.library, fake());
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(not_supported_energy_leaves_only_the_integrated_series_and_is_not_asked_again)
{
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/calls.log", wt_test_dir());
    setenv("FAKE_NVML_CALL_LOG", log, 1);
    setenv("FAKE_NVML_NOT_SUPPORTED", "energy", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    for (int i = 0; i < 4; i++) {
        poll_ok(st, &b);
        sleep_s(0.02);
    }
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_INTEGRATED_J), 8);
    for (unsigned int g = 0; g < 8; g++) {
        WT_ASSERT(isnan(value(&b, WT_M_GPU_ENERGY_J, g, NULL, NULL)));
        WT_ASSERT(value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, g, NULL, NULL) > 0);
        WT_EQ_INT(value(&b, WT_M_GPU_UP, g, NULL, NULL), 1);
    }
    wt_nvml_collector.close(st);
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetTotalEnergyConsumption"), 8);
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetPowerUsage"), 32);
    /* Static facts are read once per GPU, not every tick; one session for the collector. */
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetTemperatureThreshold"), 16);
    WT_EQ_INT(count_lines(log, "nvmlInit_v2"), 1);
    WT_EQ_INT(count_lines(log, "nvmlInit"), 0);
    WT_EQ_INT(count_lines(log, "nvmlShutdown"), 1);
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetCurrentClocksEventReasons"), 32);
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetCurrentClocksThrottleReasons"), 0);
    WT_EQ_INT(count_lines(log, "nvmlDeviceGetPciInfo_v3"), 8);
    wt_batch_free(&b);
}

WT_TEST(not_supported_metrics_are_absent_never_zero)
{
    setenv("FAKE_NVML_NOT_SUPPORTED",
           "temperature,thresholds,utilization,memory,clocks,throttle,power_limit,pstate", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    poll_ok(st, &b);
    static const int absent[] = {
        WT_M_GPU_TEMP_C,
        WT_M_GPU_SLOWDOWN_TEMP_C,
        WT_M_GPU_SHUTDOWN_TEMP_C,
        WT_M_GPU_UTIL_RATIO,
        WT_M_GPU_MEM_UTIL_RATIO,
        WT_M_GPU_MEM_USED_B,
        WT_M_GPU_MEM_TOTAL_B,
        WT_M_GPU_SM_CLOCK_HZ,
        WT_M_GPU_MEM_CLOCK_HZ,
        WT_M_GPU_THROTTLE_REASONS,
        WT_M_GPU_THROTTLED,
        WT_M_GPU_POWER_LIMIT_W,
        WT_M_GPU_POWER_LIMIT_MIN_W,
        WT_M_GPU_POWER_LIMIT_MAX_W,
        WT_M_GPU_PSTATE,
    };
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        if (count_readings(&b, absent[i]) != 0)
            wt_test_fail(__FILE__, __LINE__, "metric %d present", absent[i]);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_UP), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_INTEGRATED_J), 8);
    for (unsigned int g = 0; g < 8; g++)
        WT_EQ_INT(value(&b, WT_M_GPU_UP, g, NULL, NULL), 1);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(not_supported_power_keeps_the_counter_and_the_gpu_up)
{
    setenv("FAKE_NVML_NOT_SUPPORTED", "power", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_INTEGRATED_J), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_GAPS), 0);
    for (unsigned int g = 0; g < 8; g++) {
        WT_EQ_INT(value(&b, WT_M_GPU_UP, g, NULL, NULL), 1);
        WT_ASSERT(value(&b, WT_M_GPU_ENERGY_J, g, NULL, NULL) >= 1e6);
    }
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(a_lost_gpu_is_down_alone_and_comes_back)
{
    set_t0_now();
    setenv("FAKE_NVML_LOST", "2:0.6:1.4", 1);
    double t0 = atof(getenv("FAKE_NVML_T0"));
    void *st = open_ok(fake(), 50);
    struct wt_batch b = {0};
    int downs = 0, ups_after = 0;
    double last_e = -1;
    while (now_s() < t0 + 2.0) {
        /* The fake reads its clock during the poll: judge only polls wholly on one side. */
        double s0 = (double)poll_ok(st, &b) / WT_NS_PER_S - t0, s1 = now_s() - t0;
        for (unsigned int g = 0; g < 8; g++)
            if (g != 2)
                WT_EQ_INT(value(&b, WT_M_GPU_UP, g, NULL, NULL), 1);
        double up = up_of(&b, 2);
        if (s0 >= 0.6 && s1 < 1.4) {
            WT_EQ_INT(up, 0);
            /* Down: info and gpu_up only, nothing stale. */
            WT_ASSERT(isnan(value(&b, WT_M_GPU_POWER_W, 2, NULL, NULL)));
            WT_ASSERT(isnan(value(&b, WT_M_GPU_ENERGY_J, 2, NULL, NULL)));
            downs++;
        } else if (s1 < 0.6 || s0 >= 1.4) {
            WT_EQ_INT(up, 1);
            double e = value(&b, WT_M_GPU_ENERGY_J, 2, NULL, NULL);
            WT_ASSERT(e >= last_e);
            last_e = e;
            ups_after += s0 >= 1.4;
        }
        sleep_s(0.05);
    }
    WT_ASSERT(downs >= 3);
    WT_ASSERT(ups_after >= 3);
    /* The outage is a gap in the integrated series, not a trapezoid across it. */
    WT_EQ_INT(value(&b, WT_M_GPU_ENERGY_GAPS, 2, NULL, NULL), 1);
    WT_EQ_INT(value(&b, WT_M_GPU_ENERGY_GAPS, 3, NULL, NULL), 0);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

/* A board swapped while lost comes back under its new UUID: the per-reason, per-ECC-counter and
 * per-remap-kind series, whose labels the collector makes once (issue 49), carry it too. */
WT_TEST(a_gpu_back_under_a_new_uuid_names_it_in_every_series)
{
    set_t0_now();
    setenv("FAKE_NVML_LOST", "2:0.3:0.7", 1);
    setenv("FAKE_NVML_SWAP", "2:0.5", 1);
    double t0 = atof(getenv("FAKE_NVML_T0"));
    void *st = open_ok(fake(), 50);
    struct wt_batch b = {0};
    int before = 0, after = 0;
    while (now_s() < t0 + 1.2) {
        double s0 = (double)poll_ok(st, &b) / WT_NS_PER_S - t0, s1 = now_s() - t0;
        const char *want = s1 < 0.3 ? "GPU-fake-0000-2" : s0 >= 0.7 ? "GPU-fake-swap-2" : NULL;
        int kin = 0;
        for (size_t i = 0; want && i < b.len; i++) {
            const struct wt_reading *r = &b.r[i];
            char idx[8], uuid[64];
            if ((r->metric != WT_M_GPU_THROTTLED && r->metric != WT_M_GPU_ECC_ERRORS &&
                 r->metric != WT_M_GPU_REMAPPED_ROWS) ||
                wt_labels_get(r->labels, "gpu", idx, sizeof idx) != 0 || strcmp(idx, "2") != 0)
                continue;
            WT_EQ_INT(wt_labels_get(r->labels, "uuid", uuid, sizeof uuid), 0);
            WT_EQ_STR(uuid, want);
            kin++;
        }
        if (want) {
            WT_ASSERT(kin >= 9); /* the reasons at least */
            before += s1 < 0.3;
            after += s0 >= 0.7;
        }
        sleep_s(0.05);
    }
    WT_ASSERT(before >= 2);
    WT_ASSERT(after >= 3);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
    unsetenv("FAKE_NVML_SWAP");
}

WT_TEST(a_gpu_lost_at_open_is_picked_up_later_with_its_labels)
{
    set_t0_now();
    setenv("FAKE_NVML_LOST", "0:-1:1.0", 1);
    double t0 = atof(getenv("FAKE_NVML_T0"));
    void *st = open_ok(fake(), 50);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    if (now_s() - t0 >= 1.0)
        wt_test_fail(__FILE__, __LINE__, "open and one poll took over a second");
    WT_EQ_INT(up_of(&b, 0), 0);
    WT_EQ_INT(up_of(&b, 1), 1);
    /* Never seen: its labels say so rather than guessing. */
    WT_EQ_INT(count_readings(&b, WT_M_GPU_UP), 8);
    WT_ASSERT(isnan(value(&b, WT_M_GPU_UP, 0, NULL, NULL)));
    while (now_s() < t0 + 1.05)
        sleep_s(0.02);
    poll_ok(st, &b);
    WT_EQ_INT(value(&b, WT_M_GPU_UP, 0, NULL, NULL), 1);
    WT_ASSERT(value(&b, WT_M_GPU_ENERGY_J, 0, NULL, NULL) >= 1e6);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(a_counter_reset_neither_goes_back_nor_jumps)
{
    set_t0_now();
    setenv("FAKE_NVML_RESET", "1:0.4", 1);
    double t0 = atof(getenv("FAKE_NVML_T0"));
    void *st = open_ok(fake(), 50);
    struct wt_batch b = {0};
    double last_e = -1, last_t = 0;
    int after = 0;
    while (now_s() < t0 + 0.9) {
        int64_t tn = poll_ok(st, &b);
        double t = (double)tn / WT_NS_PER_S;
        double e = value(&b, WT_M_GPU_ENERGY_J, 1, NULL, NULL);
        WT_ASSERT(!isnan(e));
        if (last_e >= 0) {
            WT_ASSERT(e >= last_e);
            /* At most 400 W over the step; the fake reads its clock a little after the stamp,
             * so allow 50 ms of slack. A jump would be the 1e6 J offset coming back. */
            WT_ASSERT(e - last_e <= 400 * (t - last_t + 0.05));
        }
        after += t - t0 > 0.45;
        last_e = e, last_t = t;
        sleep_s(0.05);
    }
    WT_ASSERT(after >= 3);
    WT_EQ_INT(value(&b, WT_M_GPU_UP, 1, NULL, NULL), 1);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(a_missing_library_is_enoent)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = (void *)1;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/no-such/libnvidia-ml.so.1", wt_test_dir());
    wt_config_defaults(&cfg);
    setenv("WATTAGE_NVML_LIBRARY", path, 1);
    WT_EQ_INT(wt_nvml_collector.open(&cfg, &st, &err), -ENOENT);
    WT_CONTAINS(err.msg, path);
    WT_ASSERT(st == NULL);
    /* The config key is used when the environment does not say. */
    unsetenv("WATTAGE_NVML_LIBRARY");
    size_t len = strlen(fake());
    WT_ASSERT(len < sizeof cfg.collectors.nvml_library);
    memcpy(cfg.collectors.nvml_library, fake(), len + 1);
    WT_EQ_INT(wt_nvml_collector.open(&cfg, &st, &err), 0);
    wt_nvml_collector.close(st);
    wt_nvml_collector.close(NULL);
}

WT_TEST(a_library_without_required_symbols_is_refused)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    setenv("WATTAGE_NVML_LIBRARY", "libm.so.6", 1);
    int rc = wt_nvml_collector.open(&cfg, &st, &err);
    WT_ASSERT(rc < 0 && rc != -ENOENT);
    WT_CONTAINS(err.msg, "nvmlInit_v2");
}

WT_TEST(a_failing_init_is_reported)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    setenv("WATTAGE_NVML_LIBRARY", fake(), 1);
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    WT_EQ_INT(wt_nvml_collector.open(&cfg, &st, &err), -ENOENT);
    WT_CONTAINS(err.msg, "Driver Not Loaded");
    WT_ASSERT(st == NULL);
    setenv("FAKE_NVML_INIT_FAIL", "999", 1);
    WT_EQ_INT(wt_nvml_collector.open(&cfg, &st, &err), -EIO);
    WT_CONTAINS(err.msg, "999");
    /* And it recovers once the driver answers. */
    unsetenv("FAKE_NVML_INIT_FAIL");
    WT_EQ_INT(wt_nvml_collector.open(&cfg, &st, &err), 0);
    wt_nvml_collector.close(st);
}

WT_TEST(a_gap_longer_than_three_intervals_is_recorded_not_filled)
{
    setenv("FAKE_NVML_GPUS", "1", 1);
    void *st = open_ok(fake(), 200);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    sleep_s(0.05);
    poll_ok(st, &b);
    double before = value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, 0, NULL, NULL);
    WT_ASSERT(before > 0);
    WT_EQ_INT(value(&b, WT_M_GPU_ENERGY_GAPS, 0, NULL, NULL), 0);
    sleep_s(0.8);
    poll_ok(st, &b);
    WT_EQ_INT(value(&b, WT_M_GPU_ENERGY_GAPS, 0, NULL, NULL), 1);
    WT_NEAR(value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, 0, NULL, NULL), before, 1e-9);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(persistence_mode_off_is_warned_once)
{
    int saved = logcap_begin();
    setenv("FAKE_NVML_PERSISTENCE", "0", 1);
    setenv("FAKE_NVML_GPUS", "2", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    poll_ok(st, &b);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    WT_EQ_INT(logcap_count("persistence mode is off", NULL), 2);
    wt_batch_free(&b);
}

WT_TEST(a_missing_energy_counter_is_said_once_per_gpu_at_info)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    setenv("FAKE_NVML_NOT_SUPPORTED", "energy", 1);
    setenv("FAKE_NVML_GPUS", "3", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    for (int i = 0; i < 5; i++)
        poll_ok(st, &b);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    /* Five polls, three GPUs: one line each, at info, saying what stands in for the counter. */
    WT_EQ_INT(logcap_count(" info  nvml: no energy counter gpu=", "integrated"), 3);
    for (unsigned int g = 0; g < 3; g++) {
        char want[64];
        snprintf(want, sizeof want, "no energy counter gpu=%u uuid=GPU-fake-0000-%u ", g, g);
        WT_EQ_INT(logcap_count(want, NULL), 1);
    }
    wt_batch_free(&b);
}

/* The loaded fake's exact energy function; *h to dlclose. */
static exact_energy_fn *exact_fn(void **h)
{
    exact_energy_fn *exact;
    *h = dlopen(fake(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    WT_ASSERT(*h != NULL);
    void *p = dlsym(*h, "fake_nvml_exact_energy_j");
    WT_ASSERT(p != NULL);
    memcpy(&exact, &p, sizeof p);
    return exact;
}

/* The fake's exact energy of gpu from its T0 (FAKE_NVML_T0) to t_ns, J. */
static double fake_nvml_exact(unsigned int gpu, int64_t t_ns)
{
    void *h;
    double j = exact_fn(&h)(gpu, strtod(getenv("FAKE_NVML_T0"), NULL), (double)t_ns / WT_NS_PER_S);
    dlclose(h);
    return j;
}

/* Polls every 0.2 s for ~3 s with a 2 s power period; returns what the collector and the fake say.
 */
static void energy_window(const char *notsup, double *counter_j, double *integrated_j,
                          double *exact_j)
{
    set_t0_now();
    setenv("FAKE_NVML_POWER", "300,100,2", 1);
    /* an H200's power reading is its 1-s average (the collector places it mid-second) */
    setenv("FAKE_NVML_POWER_AVG", "1", 1);
    setenv("FAKE_NVML_GPUS", "2", 1);
    if (notsup)
        setenv("FAKE_NVML_NOT_SUPPORTED", notsup, 1);
    void *st = open_ok(fake(), 200);
    void *h;
    exact_energy_fn *exact = exact_fn(&h);

    struct wt_batch b = {0};
    /* A first poll to warm up (lazy binding, caches): the window's ends are then alike. */
    poll_ok(st, &b);
    sleep_s(0.2);
    int64_t t_first = poll_ok(st, &b);
    double c0 = value(&b, WT_M_GPU_ENERGY_J, 0, NULL, NULL);
    double i0 = value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, 0, NULL, NULL);
    int64_t t_last = t_first;
    int64_t deadline = wt_now_mono_ns();
    for (int i = 0; i < 15; i++) {
        deadline += 200 * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        t_last = poll_ok(st, &b);
    }
    *counter_j = value(&b, WT_M_GPU_ENERGY_J, 0, NULL, NULL) - c0;
    *integrated_j = value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, 0, NULL, NULL) - i0;
    *exact_j = exact(0, (double)t_first / WT_NS_PER_S, (double)t_last / WT_NS_PER_S);
    WT_EQ_INT(value(&b, WT_M_GPU_ENERGY_GAPS, 0, NULL, NULL), 0);
    printf("# over %.3f s: counter %.3f J, integrated %.3f J, exact %.3f J\n",
           (double)(t_last - t_first) / WT_NS_PER_S, *counter_j, *integrated_j, *exact_j);
    wt_batch_free(&b);
    dlclose(h);
    wt_nvml_collector.close(st);
}

WT_TEST(counter_energy_over_a_window_is_within_half_a_percent)
{
    double c, in, ex;
    energy_window(NULL, &c, &in, &ex);
    WT_ASSERT(ex > 600);
    WT_NEAR(c, ex, 0.005 * ex);
    WT_NEAR(in, ex, 0.03 * ex);
}

WT_TEST(integrated_energy_without_a_counter_is_within_three_percent)
{
    double c, in, ex;
    energy_window("energy", &c, &in, &ex);
    WT_ASSERT(isnan(c));
    WT_ASSERT(ex > 600);
    WT_NEAR(in, ex, 0.03 * ex);
}

WT_TEST(reopening_keeps_one_session_each_and_the_counter_continues)
{
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/calls.log", wt_test_dir());
    setenv("FAKE_NVML_CALL_LOG", log, 1);
    setenv("FAKE_NVML_GPUS", "1", 1);
    struct wt_batch b = {0};
    void *st = open_ok(fake(), 100);
    poll_ok(st, &b);
    double e1 = value(&b, WT_M_GPU_ENERGY_J, 0, NULL, NULL);
    wt_nvml_collector.close(st);
    sleep_s(0.05);
    st = open_ok(fake(), 100);
    poll_ok(st, &b);
    double e2 = value(&b, WT_M_GPU_ENERGY_J, 0, NULL, NULL);
    wt_nvml_collector.close(st);
    /* The hardware counter is what the series starts from, so a reopened collector goes on. */
    WT_ASSERT(e2 > e1);
    WT_ASSERT(e2 - e1 < 400 * 1.0);
    WT_EQ_INT(count_lines(log, "nvmlInit_v2"), 2);
    WT_EQ_INT(count_lines(log, "nvmlShutdown"), 2);
    wt_batch_free(&b);
}

WT_TEST(running_processes_of_each_gpu_from_the_latest_poll)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/procs", wt_test_dir());
    FILE *f = fopen(path, "w");
    WT_ASSERT(f != NULL);
    fprintf(f, "0 100\n0 101 graphics\n2 300\n2 300 graphics\n9 900\n");
    fclose(f);
    setenv("FAKE_NVML_PROCS_FILE", path, 1);
    setenv("FAKE_NVML_GPUS", "4", 1);
    struct wt_gpu_procs p[8];
    size_t n = 99;
    int64_t t = 0;
    WT_EQ_INT(wt_nvml_processes(p, 8, &n, &t), -ENODATA);
    WT_EQ_INT(n, 0);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    int64_t t1 = poll_ok(st, &b);
    WT_EQ_INT(wt_nvml_processes(p, 8, &n, &t), 0);
    WT_EQ_INT(n, 4);
    WT_EQ_INT(t, t1);
    WT_EQ_INT(p[0].gpu, 0);
    WT_EQ_STR(p[0].uuid, "GPU-fake-0000-0");
    WT_EQ_INT(p[0].npids, 2); /* compute and graphics together */
    WT_EQ_INT(p[0].pids[0], 100);
    WT_EQ_INT(p[0].pids[1], 101);
    WT_EQ_INT(p[1].npids, 0);
    WT_EQ_INT(p[2].npids, 1); /* one pid in both lists counts once */
    WT_EQ_INT(p[2].pids[0], 300);
    /* A process that starts shows at the next read, a second later at most. */
    f = fopen(path, "a");
    fprintf(f, "1 200\n");
    fclose(f);
    sleep_s(1.05);
    poll_ok(st, &b);
    WT_EQ_INT(wt_nvml_processes(p, 8, &n, &t), 0);
    WT_EQ_INT(p[1].npids, 1);
    WT_EQ_INT(p[1].pids[0], 200);
    /* The list itself is no reading: only the per-process energy carries a pid. */
    for (size_t i = 0; i < b.len; i++)
        WT_ASSERT(!strstr(b.r[i].labels, "pid") || b.r[i].metric == WT_M_PROC_GPU_ENERGY_J);
    wt_nvml_collector.close(st);
    WT_EQ_INT(wt_nvml_processes(p, 8, &n, &t), -ENODATA);
    wt_batch_free(&b);
}

WT_TEST(no_process_list_without_the_calls)
{
    struct wt_gpu_procs p[8];
    size_t n;
    int64_t t;
    struct wt_batch b = {0};
    setenv("FAKE_NVML_NOT_SUPPORTED", "processes", 1);
    void *st = open_ok(fake(), 100);
    poll_ok(st, &b);
    WT_EQ_INT(wt_nvml_processes(p, 8, &n, &t), -ENODATA);
    WT_EQ_INT(value(&b, WT_M_GPU_UP, 0, NULL, NULL), 1);
    wt_nvml_collector.close(st);
    unsetenv("FAKE_NVML_NOT_SUPPORTED");
    st = open_ok(minimal(), 100);
    poll_ok(st, &b);
    WT_EQ_INT(wt_nvml_processes(p, 8, &n, &t), -ENODATA);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

/* ---- health signals ---- */

/* The count of readings of metric for GPU gpu (any extra labels). */
static int count_gpu(const struct wt_batch *b, int metric, unsigned int gpu)
{
    char want[16], got[16];
    int n = 0;
    snprintf(want, sizeof want, "%u", gpu);
    for (size_t i = 0; i < b->len; i++)
        n += b->r[i].metric == metric &&
             wt_labels_get(b->r[i].labels, "gpu", got, sizeof got) == 0 && strcmp(got, want) == 0;
    return n;
}

/* metric{gpu labels, k1="v1", k2="v2"} or NAN. */
static double value2(const struct wt_batch *b, int metric, unsigned int gpu, const char *k1,
                     const char *v1, const char *k2, const char *v2)
{
    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, gpu);
    WT_EQ_INT(wt_labels_add(l, sizeof l, k1, v1), 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, k2, v2), 0);
    const struct wt_reading *r = find_reading(b, metric, l);
    return r ? r->value : NAN;
}

WT_TEST(health_signals_ecc_remap_replays_memory_temperature_and_fans)
{
    set_t0_now();
    setenv("FAKE_NVML_GPUS", "4", 1);
    setenv("FAKE_NVML_ECC", "0:0:5:2,0:100:9:9", 1); /* the second starts after the test */
    setenv("FAKE_NVML_REMAP", "1:0:3:1:1:0,2:0:0:0:0:1", 1);
    setenv("FAKE_NVML_PCIE_REPLAYS", "2:0:100:50", 1);
    setenv("FAKE_NVML_MEM_TEMP", "60", 1);
    setenv("FAKE_NVML_FANS", "2", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    sleep_s(0.2);
    poll_ok(st, &b);
    /* ECC: four series per GPU; aggregate is the volatile count plus the board's history. */
    WT_EQ_INT(count_gpu(&b, WT_M_GPU_ECC_ERRORS, 0), 4);
    WT_EQ_INT(value2(&b, WT_M_GPU_ECC_ERRORS, 0, "type", "corrected", "counter", "volatile"), 5);
    WT_EQ_INT(value2(&b, WT_M_GPU_ECC_ERRORS, 0, "type", "uncorrected", "counter", "volatile"), 2);
    WT_EQ_INT(value2(&b, WT_M_GPU_ECC_ERRORS, 0, "type", "corrected", "counter", "aggregate"), 17);
    WT_EQ_INT(value2(&b, WT_M_GPU_ECC_ERRORS, 0, "type", "uncorrected", "counter", "aggregate"), 2);
    WT_EQ_INT(value2(&b, WT_M_GPU_ECC_ERRORS, 1, "type", "uncorrected", "counter", "volatile"), 0);
    /* Remapped rows: counts, and the pending / failure flags as 0/1. */
    WT_EQ_INT(value(&b, WT_M_GPU_REMAPPED_ROWS, 1, "kind", "correctable"), 3);
    WT_EQ_INT(value(&b, WT_M_GPU_REMAPPED_ROWS, 1, "kind", "uncorrectable"), 1);
    WT_EQ_INT(value(&b, WT_M_GPU_REMAPPED_ROWS, 1, "kind", "pending"), 1);
    WT_EQ_INT(value(&b, WT_M_GPU_REMAPPED_ROWS, 1, "kind", "failure"), 0);
    WT_EQ_INT(value(&b, WT_M_GPU_REMAPPED_ROWS, 2, "kind", "failure"), 1);
    WT_EQ_INT(value(&b, WT_M_GPU_REMAPPED_ROWS, 0, "kind", "pending"), 0);
    /* PCIe replays: 50 per second on GPU 2 only. */
    double r1 = value(&b, WT_M_GPU_PCIE_REPLAYS, 2, NULL, NULL);
    WT_ASSERT(r1 >= 5 && r1 <= 50);
    WT_EQ_INT(value(&b, WT_M_GPU_PCIE_REPLAYS, 0, NULL, NULL), 0);
    /* Memory temperature through the field value, per GPU. */
    for (unsigned int g = 0; g < 4; g++)
        WT_EQ_INT(value(&b, WT_M_GPU_MEM_TEMP_C, g, NULL, NULL), 60 + g);
    /* Fans: a ratio (percent / 100) per fan. */
    WT_EQ_INT(count_gpu(&b, WT_M_GPU_FAN_RATIO, 3), 2);
    WT_NEAR(value(&b, WT_M_GPU_FAN_RATIO, 3, "fan", "0"), 0.30, 1e-9);
    WT_NEAR(value(&b, WT_M_GPU_FAN_RATIO, 3, "fan", "1"), 0.40, 1e-9);
    sleep_s(0.3);
    poll_ok(st, &b);
    double r2 = value(&b, WT_M_GPU_PCIE_REPLAYS, 2, NULL, NULL);
    WT_ASSERT(r2 >= r1 + 10);
    /* No XID came: no XID series (a counter appears with its first event). */
    WT_EQ_INT(count_readings(&b, WT_M_GPU_XID_ERRORS), 0);
    wt_batch_free(&b);
    wt_nvml_collector.close(st);
}

WT_TEST(each_health_signal_not_supported_is_absent_said_once_and_the_gpus_stay_up)
{
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    setenv("FAKE_NVML_GPUS", "3", 1);
    setenv("FAKE_NVML_FANS", "1", 1);
    setenv("FAKE_NVML_XID", "0:0:79", 1);
    setenv("FAKE_NVML_NOT_SUPPORTED", "ecc,remap,pcie_replay,mem_temp,fan,vbios,events", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    for (int i = 0; i < 4; i++) {
        poll_ok(st, &b);
        sleep_s(0.05);
    }
    for (unsigned int g = 0; g < 3; g++)
        WT_EQ_INT(value(&b, WT_M_GPU_UP, g, NULL, NULL), 1);
    WT_ASSERT(!isnan(value(&b, WT_M_GPU_POWER_W, 1, NULL, NULL)));
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ECC_ERRORS), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_REMAPPED_ROWS), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_PCIE_REPLAYS), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_MEM_TEMP_C), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_FAN_RATIO), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_XID_ERRORS), 0); /* the XID was sent, never registered */
    /* Without a VBIOS version, the info series keeps the others. */
    const struct wt_reading *info = NULL;
    for (size_t i = 0; i < b.len && !info; i++)
        if (b.r[i].metric == WT_M_GPU_INFO)
            info = &b.r[i];
    WT_ASSERT(info != NULL);
    WT_ASSERT(strstr(info->labels, "driver_version=\"550.54.15-fake\"") != NULL);
    WT_ASSERT(strstr(info->labels, "vbios_version") == NULL);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    /* Three GPUs, four polls: one line per signal, at info. */
    static const char *const names[] = {"volatile ECC counts", "aggregate ECC counts",
                                        "remapped rows",       "PCIe replay counter",
                                        "memory temperature",  "fan speed",
                                        "VBIOS version",       "XID events"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char want[96];
        snprintf(want, sizeof want, " info  nvml: %s: Not Supported", names[i]);
        if (logcap_count(want, NULL) != 1)
            wt_test_fail(__FILE__, __LINE__, "%s said %d times", names[i],
                         logcap_count(want, NULL));
    }
    WT_EQ_INT(logcap_count(" warn ", NULL), 0);
    wt_batch_free(&b);
}

WT_TEST(xid_events_are_counted_per_gpu_and_code_by_their_own_thread)
{
    int saved = logcap_begin();
    set_t0_now();
    setenv("FAKE_NVML_GPUS", "4", 1);
    setenv("FAKE_NVML_XID", "0:0.05:79,0:0.1:79,3:0.05:13,3:0.1:31", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    /* No poll meanwhile: the thread takes them as they come. */
    sleep_s(0.5);
    poll_ok(st, &b);
    WT_EQ_INT(value(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "79"), 2);
    WT_EQ_INT(value(&b, WT_M_GPU_XID_ERRORS, 3, "xid", "13"), 1);
    WT_EQ_INT(value(&b, WT_M_GPU_XID_ERRORS, 3, "xid", "31"), 1);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_XID_ERRORS), 3);
    WT_EQ_INT(count_gpu(&b, WT_M_GPU_XID_ERRORS, 1), 0);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    /* The first of each code is said with its meaning; the second 79 within the minute is not. */
    WT_EQ_INT(logcap_count("XID 79 gpu=0 uuid=GPU-fake-0000-0: GPU has fallen off the bus", NULL),
              1);
    WT_EQ_INT(logcap_count("XID 13 gpu=3", "Graphics Engine Exception"), 1);
    WT_EQ_INT(logcap_count("XID 31 gpu=3", "GPU memory page fault"), 1);
    WT_EQ_INT(logcap_count("XID", NULL), 3);
    WT_EQ_STR(wt_nvml_xid_meaning(48), "Double Bit ECC Error");
    WT_ASSERT(wt_nvml_xid_meaning(7) == NULL);
    wt_batch_free(&b);
}

WT_TEST(an_xid_storm_neither_stalls_the_polls_nor_floods_the_log)
{
    int saved = logcap_begin();
    set_t0_now();
    setenv("FAKE_NVML_GPUS", "2", 1);
    /* 10,000 XIDs a second for 2 s on GPU 0 (and one 94 on GPU 1 in the middle). */
    setenv("FAKE_NVML_XID_STORM", "0:0:2:48:10000", 1);
    setenv("FAKE_NVML_XID", "1:1:94", 1);
    void *st = open_ok(fake(), 100);
    struct wt_batch b = {0};
    int64_t worst = 0, deadline = wt_now_mono_ns();
    double last = 0;
    for (int i = 0; i < 25; i++) {
        deadline += 100 * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        int64_t t0 = wt_now_mono_ns();
        poll_ok(st, &b);
        int64_t d = wt_now_mono_ns() - t0;
        worst = d > worst ? d : worst;
        double n = value(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "48");
        if (!isnan(n)) {
            WT_ASSERT(n >= last); /* a counter */
            last = n;
        }
    }
    /* On a loaded host the thread may still be taking the storm's last events: a few more
     * polls, at most 3 s, before counting (the storm ended 0.5 s ago). */
    for (int i = 0; i < 30 && last < 20000; i++) {
        deadline += 100 * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        poll_ok(st, &b);
        double n = value(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "48");
        if (!isnan(n))
            last = n;
    }
    printf("# slowest poll during the storm: %.3f ms, %.0f XIDs counted\n", worst / 1e6, last);
    /* A poll takes the counts under a lock the thread holds for an increment. */
    WT_ASSERT(worst < 50 * WT_NS_PER_MS);
    /* Every event is counted (the driver queues them; the thread keeps up with 10k/s). */
    WT_EQ_INT(last, 20000);
    WT_EQ_INT(value(&b, WT_M_GPU_XID_ERRORS, 1, "xid", "94"), 1);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    /* 20,000 events in 2.5 s: the first line of each code, nothing more within the minute. */
    WT_EQ_INT(logcap_count("XID 48 gpu=0", "Double Bit ECC Error"), 1);
    WT_EQ_INT(logcap_count("XID 94 gpu=1", "Contained ECC error"), 1);
    WT_ASSERT(logcap_count("XID", NULL) <= 3);
    wt_batch_free(&b);
}

/* ---- energy sub-polls (collectors.nvml.energy_interval) ---- */

WT_TEST(auto_energy_sub_polls_when_the_reads_cost_under_one_percent_of_a_core)
{
    const int64_t s = WT_NS_PER_S, ms = WT_NS_PER_MS;
    /* 1-s ticks: 4 sub-polls a second; 2.5 ms of CPU each is 1 % of a core */
    WT_EQ_INT(wt_nvml_auto_energy_interval(s, 20 * 1000), 200 * ms);
    WT_EQ_INT(wt_nvml_auto_energy_interval(s, 2500 * 1000), 200 * ms);
    WT_EQ_INT(wt_nvml_auto_energy_interval(s, 2600 * 1000), 0);
    /* 10-s ticks: 49 sub-polls in 10 s, 2 ms each is 0.98 % */
    WT_EQ_INT(wt_nvml_auto_energy_interval(10 * s, 2000 * 1000), 200 * ms);
    /* ticks of 0.3 s are already close: none */
    WT_EQ_INT(wt_nvml_auto_energy_interval(300 * ms, 0), 0);
}

/* Opens the collector with energy_interval (WT_CONFIG_AUTO, 0, or a duration) at 1-s ticks. */
static void *open_energy(int64_t energy_ns)
{
    static struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    WT_EQ_INT(cfg.collectors.nvml_energy_interval_ns, WT_CONFIG_AUTO); /* the default */
    cfg.collectors.nvml_energy_interval_ns = energy_ns;
    setenv("WATTAGE_NVML_LIBRARY", fake(), 1);
    int rc = wt_nvml_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

WT_TEST(auto_measures_the_first_ticks_and_turns_sub_polls_on_for_a_cheap_counter)
{
    setenv("FAKE_NVML_GPUS", "2", 1);
    void *st = open_energy(WT_CONFIG_AUTO);
    struct wt_batch b = {0};
    for (int i = 0; i < 4; i++) {
        poll_ok(st, &b);
        WT_EQ_INT(wt_nvml_collector.sub_interval(st), 0); /* not decided yet */
    }
    poll_ok(st, &b);
    WT_EQ_INT(wt_nvml_collector.sub_interval(st), 200 * WT_NS_PER_MS);
    /* a sub-poll: each GPU's counter, nothing else, stamped as asked and never going back */
    double before = value(&b, WT_M_GPU_ENERGY_J, 1, NULL, NULL);
    int64_t t = wt_now_real_ns();
    wt_batch_clear(&b);
    WT_EQ_INT(wt_nvml_collector.sub_poll(st, t, &b), 0);
    WT_EQ_INT(b.len, 4);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 2);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_READ_SKEW_S), 2); /* each with its read skew */
    WT_EQ_INT(b.r[0].t_ns, t);
    WT_ASSERT(value(&b, WT_M_GPU_ENERGY_J, 1, NULL, NULL) >= before);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

/* How long each GPU's counter read lands after the stamp, GPU 1's read held 3 ms. */
WT_TEST(each_counter_reading_carries_how_long_after_its_stamp_it_was_read)
{
    set_t0_now();
    setenv("FAKE_NVML_GPUS", "3", 1);
    setenv("FAKE_NVML_READ_DELAY_US", "0,3000,0", 1);
    void *st = open_energy(200 * WT_NS_PER_MS);
    struct wt_batch b = {0};
    for (int k = 0; k < 2; k++) {
        /* a tick, then a sub-poll: the counters are read back to back, so GPU 2 waits on GPU 1 */
        int64_t t = wt_now_real_ns();
        wt_batch_clear(&b);
        if (k == 0)
            WT_EQ_INT(wt_nvml_collector.poll(st, t, &b, &(struct wt_err){{0}}), 0);
        else
            WT_EQ_INT(wt_nvml_collector.sub_poll(st, t, &b), 0);
        double sk[3];
        for (unsigned int g = 0; g < 3; g++) {
            sk[g] = value(&b, WT_M_GPU_ENERGY_READ_SKEW_S, g, NULL, NULL);
            /* in 10-us steps, rounded up: never 0 for a read that took any time */
            WT_NEAR(sk[g] * 1e5, round(sk[g] * 1e5), 1e-6);
            WT_ASSERT(sk[g] >= 1e-5 && sk[g] < 0.5);
        }
        printf("# %s: read skew %.5f, %.5f, %.5f s\n", k ? "sub-poll" : "tick", sk[0], sk[1],
               sk[2]);
        WT_ASSERT(sk[0] < sk[1] && sk[1] >= 0.003 && sk[2] >= sk[1]);
        /* GPU 1's counter is the energy up to its read, 3 ms or more after the stamp, which
         * moves it more than a mJ at 100 W or more (the fake's default wave) */
        double e1 = value(&b, WT_M_GPU_ENERGY_J, 1, NULL, NULL);
        WT_ASSERT(e1 * 1000 - 1e9 > floor(1000 * fake_nvml_exact(1, t + 3 * WT_NS_PER_MS)) - 0.5);
        WT_ASSERT(fake_nvml_exact(1, t + 3 * WT_NS_PER_MS) - fake_nvml_exact(1, t) > 0.1);
    }
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(auto_leaves_sub_polls_off_when_the_counter_read_costs_cpu)
{
    /* 2 GPUs x 2 ms of CPU a read: 4 sub-polls x 4 ms = 1.6 % of a core */
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_ENERGY_CPU_US", "2000", 1);
    int saved = logcap_begin();
    wt_log_set_level(WT_LOG_INFO);
    void *st = open_energy(WT_CONFIG_AUTO);
    struct wt_batch b = {0};
    for (int i = 0; i < 6; i++)
        poll_ok(st, &b);
    WT_EQ_INT(wt_nvml_collector.sub_interval(st), 0);
    wt_nvml_collector.close(st);
    logcap_end(saved);
    WT_EQ_INT(
        logcap_count("energy counters read at the ticks only (energy_interval auto)", "us CPU"), 1);
    wt_batch_free(&b);
}

WT_TEST(energy_interval_off_or_no_counter_means_no_sub_polls)
{
    setenv("FAKE_NVML_GPUS", "2", 1);
    void *st = open_energy(0);
    WT_EQ_INT(wt_nvml_collector.sub_interval(st), 0);
    wt_nvml_collector.close(st);
    /* not shorter than the tick: none */
    st = open_energy(WT_NS_PER_S);
    WT_EQ_INT(wt_nvml_collector.sub_interval(st), 0);
    wt_nvml_collector.close(st);
    /* GPUs without a counter are not read between ticks */
    setenv("FAKE_NVML_NOT_SUPPORTED", "energy", 1);
    st = open_energy(200 * WT_NS_PER_MS);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(wt_nvml_collector.sub_interval(st), 200 * WT_NS_PER_MS);
    wt_batch_clear(&b);
    WT_EQ_INT(wt_nvml_collector.sub_poll(st, wt_now_real_ns(), &b), 0);
    WT_EQ_INT(b.len, 0);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

/* What a sink saw of GPU 0: the stamps of its energy and power readings. */
#define SEEN_MAX 256
struct seen {
    pthread_mutex_t mu;
    int ne, np;
    int64_t energy[SEEN_MAX], power[SEEN_MAX];
};

static void seen_sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct seen *s = ctx;
    char gs[8];
    (void)collector;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        if (wt_labels_get(r->labels, "gpu", gs, sizeof gs) != 0 || strcmp(gs, "0") != 0)
            continue;
        if (r->metric == WT_M_GPU_ENERGY_J && s->ne < SEEN_MAX)
            s->energy[s->ne++] = r->t_ns;
        else if (r->metric == WT_M_GPU_POWER_W && s->np < SEEN_MAX)
            s->power[s->np++] = r->t_ns;
    }
    pthread_mutex_unlock(&s->mu);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

WT_TEST(energy_sub_polls_reach_the_store_sinks_between_aligned_ticks_and_nothing_else)
{
    static struct seen all = {.mu = PTHREAD_MUTEX_INITIALIZER};
    static struct seen tick = {.mu = PTHREAD_MUTEX_INITIALIZER};
    static const struct wt_collector_ops *const list[] = {&wt_nvml_collector, NULL};
    const int64_t ms = WT_NS_PER_MS;
    struct wt_config cfg;
    struct wt_hub *hub;
    struct wt_loop *loop;
    struct wt_err err = {{0}};
    struct wt_batch snap = {0};
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("WATTAGE_NVML_LIBRARY", fake(), 1);
    wt_config_defaults(&cfg);
    WT_ASSERT(cfg.daemon.align_ticks);
    cfg.collectors.nvml_energy_interval_ns = 200 * ms;
    WT_EQ_INT(wt_hub_open(&hub), 0);
    WT_EQ_INT(wt_hub_add_sink(hub, seen_sink, &all), 0);       /* as the store */
    WT_EQ_INT(wt_hub_add_tick_sink(hub, seen_sink, &tick), 0); /* as attribution, alerts */
    WT_EQ_INT(wt_loop_start(&cfg, list, hub, 0, &loop, &err), 0);
    sleep_s(4.3);
    /* /metrics: the latest readings are the tick's, the counter's included */
    WT_EQ_INT(wt_hub_snapshot(hub, &snap), 0);
    wt_loop_stop(loop);
    wt_hub_close(hub);
    char l[WT_LABELS_LEN];
    gpu_labels(l, sizeof l, 0);
    const struct wt_reading *se = find_reading(&snap, WT_M_GPU_ENERGY_J, l);
    const struct wt_reading *sp = find_reading(&snap, WT_M_GPU_POWER_W, l);
    WT_ASSERT(se && sp);
    WT_EQ_INT(se->t_ns, sp->t_ns);
    wt_batch_free(&snap);

    printf("# 4.3 s: the store's sink saw %d counter and %d power readings, a tick sink %d and "
           "%d\n",
           all.ne, all.np, tick.ne, tick.np);
    /* power at the ticks only: the start and 4 aligned ticks (5 on a slow start) */
    WT_ASSERT(all.np >= 4 && all.np <= 6);
    WT_EQ_INT(tick.np, all.np);
    /* the tick sinks: one counter reading a tick, at the tick's stamp */
    WT_EQ_INT(tick.ne, tick.np);
    for (int i = 0; i < tick.ne; i++)
        WT_EQ_INT(tick.energy[i], tick.power[i]);
    /* the store's: every tick's and 4 sub-polls between two ticks (a loaded host may skip one),
     * and never more than one a 0.2-s step of the time they cover, the start's aside (a loaded
     * host may miss a tick and keep its sub-polls) */
    WT_ASSERT(all.ne >= 4 * all.np - 2);
    WT_ASSERT(all.ne >= 2);
    WT_ASSERT(all.ne <= (all.energy[all.ne - 1] - all.energy[0] + 100 * ms) / (200 * ms) + 2);
    int64_t gaps[SEEN_MAX], phase[SEEN_MAX];
    int ng = 0;
    for (int i = 1; i < all.ne; i++) {
        WT_ASSERT(all.energy[i] > all.energy[i - 1]);
        gaps[ng++] = all.energy[i] - all.energy[i - 1];
    }
    qsort(gaps, (size_t)ng, sizeof gaps[0], cmp_i64);
    printf("# counter readings apart: median %.1f ms, longest %.1f ms\n",
           (double)gaps[ng / 2] / 1e6, (double)gaps[ng - 1] / 1e6);
    WT_ASSERT(gaps[ng / 2] > 150 * ms && gaps[ng / 2] < 250 * ms);
    /* the ticks keep their phase: the aligned ones on whole seconds (a few ms late at most),
     * and the sub-polls on the 0.2-s grid from them */
    for (int i = 1; i < all.np; i++)
        phase[i - 1] = all.power[i] % WT_NS_PER_S;
    qsort(phase, (size_t)(all.np - 1), sizeof phase[0], cmp_i64);
    WT_ASSERT(phase[(all.np - 1) / 2] < 20 * ms);
    int on_grid = 0, late = 0;
    for (int i = 0; i < all.ne; i++)
        if (all.energy[i] > all.power[1]) {
            late++;
            on_grid += all.energy[i] % (200 * ms) < 20 * ms;
        }
    WT_ASSERT(on_grid * 10 >= late * 8);
}
