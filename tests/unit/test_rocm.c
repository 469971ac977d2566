/* SPDX-License-Identifier: MIT */
/*
 * The AMD collector against the fake librocm_smi64 (tests/fakes/fake_rocm_smi.c), loaded through
 * the real dlopen path: the pure parts (resolution, packages, counter check), readings and labels
 * for 8 GPUs, MI250X pairs published once per package, energy against the fake's exact integral,
 * a frozen and a reset counter falling back to integration (said once), NOT_SUPPORTED, a missing
 * library, a library without the required symbols, a failing rsmi_init; the slow fields (cap,
 * range, ECC) at collectors.amd.slow_interval, counted in the fake's call log.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collect/cadence.h"
#include "collect/rocm.h"
#include "collect/rocm_api.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "logcap.h"
#include "readings.h"
#include "runner.h"

typedef double exact_energy_fn(unsigned int dev, double t_from, double t_to);

static char fake_path[PATH_MAX];

/* The runner chdirs into each test's directory: the fake's absolute path is taken first. */
__attribute__((constructor)) static void resolve_fake(void)
{
    if (!realpath(wt_test_build_path("tests/fakes/librocm_smi64.so.1"), fake_path))
        fake_path[0] = '\0';
}

static const char *fake(void)
{
    if (!fake_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake ROCm SMI is not built: run make first");
    return fake_path;
}

static void set_t0_now(void)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", (double)wt_now_real_ns() / WT_NS_PER_S);
    setenv("FAKE_RSMI_T0", buf, 1);
}

static void *open_ok(int interval_ms)
{
    static struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    cfg.collectors.amd.interval_ns = (int64_t)interval_ms * WT_NS_PER_MS;
    setenv("WATTAGE_ROCM_SMI_LIBRARY", fake(), 1);
    int rc = wt_amd_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    WT_ASSERT(st != NULL);
    return st;
}

static int open_rc(struct wt_err *err)
{
    struct wt_config cfg;
    void *st = NULL;
    wt_config_defaults(&cfg);
    int rc = wt_amd_collector.open(&cfg, &st, err);
    WT_ASSERT(rc != 0 || st != NULL);
    wt_amd_collector.close(st);
    return rc;
}

static int64_t poll_ok(void *st, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    int64_t t = wt_now_real_ns();
    wt_batch_clear(b);
    int rc = wt_amd_collector.poll(st, t, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %d %s", rc, err.msg);
    return t;
}

/* Polls every interval_ms for n polls (absolute deadlines); the last poll's stamp. */
static int64_t poll_for(void *st, struct wt_batch *b, int interval_ms, int n)
{
    int64_t t = 0, deadline = wt_now_mono_ns();
    for (int i = 0; i < n; i++) {
        deadline += (int64_t)interval_ms * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        t = poll_ok(st, b);
    }
    return t;
}

static void dev_labels(char *buf, size_t n, unsigned int dev, const char *model, bool secondary)
{
    char idx[16], uuid[64];
    unsigned int pkg = strstr(model, "MI250X") ? dev / 2 : dev;
    snprintf(idx, sizeof idx, "%u", dev);
    snprintf(uuid, sizeof uuid, "AMD-00c0ffee%08x%s", pkg, secondary ? "-1" : "");
    WT_EQ_INT(wt_labels(buf, n, "gpu", idx, "uuid", uuid, "model", model, NULL), 0);
}

/* The value of metric for device dev of the default fake (MI300X), extra pair when key set. */
static double value_m(const struct wt_batch *b, int metric, unsigned int dev, const char *model,
                      bool secondary, const char *key, const char *val)
{
    char l[WT_LABELS_LEN];
    dev_labels(l, sizeof l, dev, model, secondary);
    if (key)
        WT_EQ_INT(wt_labels_add(l, sizeof l, key, val), 0);
    const struct wt_reading *r = find_reading(b, metric, l);
    return r ? r->value : NAN;
}

static double value(const struct wt_batch *b, int metric, unsigned int dev)
{
    return value_m(b, metric, dev, "AMD Instinct MI300X", false, NULL, NULL);
}

static exact_energy_fn *exact_fn(void **h)
{
    exact_energy_fn *exact;
    *h = dlopen(fake(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    WT_ASSERT(*h != NULL);
    void *p = dlsym(*h, "fake_rsmi_exact_energy_j");
    WT_ASSERT(p != NULL);
    memcpy(&exact, &p, sizeof p);
    return exact;
}

/* ---- pure parts ---- */

WT_TEST(the_library_resolution_15_3_is_taken_for_2_pow_minus_16_joules)
{
    WT_NEAR(wt_rocm_uj_per_count(15.3f), 15.2587890625, 1e-12);
    WT_NEAR(wt_rocm_uj_per_count(15.2587890625f), 15.2587890625, 1e-6);
    WT_NEAR(wt_rocm_uj_per_count(1.0f), 1.0, 1e-12);
    WT_NEAR(wt_rocm_uj_per_count(0.0f), 0, 0);
    WT_NEAR(wt_rocm_uj_per_count(-15.3f), 0, 0);
    WT_NEAR(wt_rocm_uj_per_count(NAN), 0, 0);
}

WT_TEST(devices_group_into_packages_by_unique_id_then_pci_device)
{
    /* 0,1: an MI250X (one unique id); 2..5: an MI300X in CPX, listed partition 3 first; 6,7: no
     * unique id, functions .1 and .0 of one PCI device; 8: nothing known; 9: another id. */
    struct wt_rocm_ident ids[10] = {
        {true, true, 0xa, 0x1000},
        {true, true, 0xa, 0x1100},
        {true, true, 0xb, 0x2000 | 3ull << 28},
        {true, true, 0xb, 0x2000 | 1ull << 28},
        {true, true, 0xb, 0x2000},
        {true, true, 0xb, 0x2000 | 2ull << 28},
        {false, true, 0, 0x3001},
        {false, true, 0, 0x3000},
        {false, false, 0, 0},
        {true, true, 0xc, 0x4000},
    };
    unsigned int p[10];
    wt_rocm_group(ids, 10, p);
    unsigned int want[10] = {0, 0, 4, 4, 4, 4, 7, 7, 8, 9};
    for (int i = 0; i < 10; i++)
        WT_EQ_INT(p[i], want[i]);
}

WT_TEST(the_counter_check_passes_a_counting_counter)
{
    struct wt_rocm_check c = {0};
    double uj = 1e6 / 65536.0;
    uint64_t raw = 1000000, ts = 1;
    WT_EQ_INT(wt_rocm_check_step(&c, raw, ts, uj, -1), WT_ROCM_OK);
    for (int i = 0; i < 50; i++) {
        raw += 65536 * 40; /* 40 J a tick, as power x time says */
        WT_EQ_INT(wt_rocm_check_step(&c, raw, ++ts, uj, 40.0), WT_ROCM_OK);
    }
    /* idle: no power, no counting, for ever */
    for (int i = 0; i < 10; i++)
        WT_EQ_INT(wt_rocm_check_step(&c, raw, ++ts, uj, 0.0), WT_ROCM_OK);
}

WT_TEST(a_counter_that_stops_while_power_is_drawn_is_frozen_on_the_third_tick)
{
    struct wt_rocm_check c = {0};
    double uj = 1e6 / 65536.0;
    const uint64_t s = 1000000000u; /* the library's stamps, ns */
    WT_EQ_INT(wt_rocm_check_step(&c, 5000, 10 * s, uj, -1), WT_ROCM_OK);
    /* the driver served its cached table again (same stamp): not frozen */
    for (int i = 0; i < 5; i++)
        WT_EQ_INT(wt_rocm_check_step(&c, 5000, 10 * s, uj, 40.0), WT_ROCM_OK);
    /* three fast ticks within a second of the last move: a slow firmware, not frozen yet */
    for (int i = 1; i <= 4; i++)
        WT_EQ_INT(wt_rocm_check_step(&c, 5000, 10 * s + i * s / 10, uj, 4.0), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&c, 5000, 11 * s, uj, 40.0), WT_ROCM_FROZEN);

    /* without stamps, three ticks are enough */
    struct wt_rocm_check d = {0};
    WT_EQ_INT(wt_rocm_check_step(&d, 5000, 0, uj, -1), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&d, 5000, 0, uj, 40.0), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&d, 5000, 0, uj, 40.0), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&d, 5000, 0, uj, 40.0), WT_ROCM_FROZEN);
}

WT_TEST(a_counter_that_goes_back_or_disagrees_tenfold_is_refused)
{
    struct wt_rocm_check c = {0};
    double uj = 1e6 / 65536.0;
    WT_EQ_INT(wt_rocm_check_step(&c, 1u << 20, 1, uj, -1), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&c, 10, 2, uj, 1.0), WT_ROCM_BACKWARDS);

    struct wt_rocm_check d = {0};
    uint64_t raw = 0;
    WT_EQ_INT(wt_rocm_check_step(&d, raw, 1, uj, -1), WT_ROCM_OK);
    /* 11x what power says: judged once WT_ROCM_CHECK_MIN_J of power x time are in */
    raw += 65536ull * 11000;
    WT_EQ_INT(wt_rocm_check_step(&d, raw, 2, uj, 1000.0), WT_ROCM_OK);
    raw += 65536ull * 11000;
    WT_EQ_INT(wt_rocm_check_step(&d, raw, 3, uj, 1000.0), WT_ROCM_IMPLAUSIBLE);
    /* a lagging average over a power step (30 W to 700 W) is not refused */
    struct wt_rocm_check e = {0};
    raw = 0;
    WT_EQ_INT(wt_rocm_check_step(&e, raw, 1, uj, -1), WT_ROCM_OK);
    for (int i = 0; i < 30; i++) {
        raw += 65536ull * 70;                   /* 700 W x 0.1 s */
        double p = i < 10 ? 3.0 + i * 6.7 : 70; /* the average catches up over a second */
        WT_EQ_INT(wt_rocm_check_step(&e, raw, 2 + (uint64_t)i, uj, p), WT_ROCM_OK);
    }
}

/* ---- the collector against the fake ---- */

WT_TEST(a_32_bit_accumulator_wraps_where_power_says_so_else_it_went_back)
{
    double uj = 1e6 / 65536.0;
    uint64_t top = ((uint64_t)1 << 32) - 65536 * 10; /* 10 J before the wrap */
    struct wt_rocm_check c = {0};
    WT_EQ_INT(wt_rocm_check_step(&c, top, 1, uj, -1), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&c, 65536 * 30, 2, uj, 40.0), WT_ROCM_WRAPPED);
    WT_EQ_INT(wt_rocm_check_step(&c, 65536 * 70, 3, uj, 40.0), WT_ROCM_OK);
    /* the same step with power x time saying 400 J: a reset */
    struct wt_rocm_check d = {0};
    WT_EQ_INT(wt_rocm_check_step(&d, top, 1, uj, -1), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&d, 65536 * 30, 2, uj, 400.0), WT_ROCM_BACKWARDS);
    /* above 32 bits no decrease is a wrap */
    struct wt_rocm_check e = {0};
    WT_EQ_INT(wt_rocm_check_step(&e, (uint64_t)1 << 33, 1, uj, -1), WT_ROCM_OK);
    WT_EQ_INT(wt_rocm_check_step(&e, 65536 * 30, 2, uj, 40.0), WT_ROCM_BACKWARDS);
}

WT_TEST(eight_gpus_give_every_reading_with_labels_and_vendor_amd)
{
    setenv("FAKE_RSMI_GPUS", "8", 1);
    set_t0_now();
    void *st = open_ok(100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_INFO), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 8);
    for (unsigned int i = 0; i < 8; i++) {
        char l[WT_LABELS_LEN], pci[32], pkg[16];
        dev_labels(l, sizeof l, i, "AMD Instinct MI300X", false);
        WT_EQ_INT(wt_labels_add(l, sizeof l, "vendor", "amd"), 0);
        snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x10 + i);
        WT_EQ_INT(wt_labels_add(l, sizeof l, "pci_bus_id", pci), 0);
        snprintf(pkg, sizeof pkg, "%u", i);
        WT_EQ_INT(wt_labels_add(l, sizeof l, "package", pkg), 0);
        WT_NEAR(reading_value(&b, WT_M_GPU_INFO, l), 1, 0);
        WT_NEAR(value(&b, WT_M_GPU_UP, i), 1, 0);
        double w = value(&b, WT_M_GPU_POWER_W, i);
        WT_ASSERT(w >= 250 && w <= 550);
        WT_ASSERT(value(&b, WT_M_GPU_ENERGY_J, i) >= 4294967296.0 * 1e6 / 65536.0 / 1e6);
        WT_NEAR(value_m(&b, WT_M_GPU_TEMP_C, i, "AMD Instinct MI300X", false, "sensor", "edge"),
                40 + i, 1e-9);
        WT_NEAR(value_m(&b, WT_M_GPU_TEMP_C, i, "AMD Instinct MI300X", false, "sensor", "junction"),
                55 + i, 1e-9);
        WT_NEAR(value(&b, WT_M_GPU_MEM_TEMP_C, i), 60 + i, 1e-9);
        double busy = value(&b, WT_M_GPU_UTIL_RATIO, i);
        WT_ASSERT(busy >= 0 && busy <= 1);
        WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_W, i), 500, 1e-9);
        WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_MIN_W, i), 100, 1e-9);
        WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_MAX_W, i), 560, 1e-9);
        char el[WT_LABELS_LEN];
        dev_labels(el, sizeof el, i, "AMD Instinct MI300X", false);
        WT_EQ_INT(wt_labels_add(el, sizeof el, "type", "corrected"), 0);
        WT_EQ_INT(wt_labels_add(el, sizeof el, "counter", "volatile"), 0);
        WT_NEAR(reading_value(&b, WT_M_GPU_ECC_ERRORS, el), 0, 0);
    }
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(socket_power_is_read_where_the_library_and_gpu_have_it)
{
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_SOCKET_POWER", "1", 1);
    setenv("FAKE_RSMI_POWER", "300,0,7", 1);
    void *st = open_ok(100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_NEAR(value(&b, WT_M_GPU_POWER_W, 1), 300, 1e-6);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(an_mi250x_publishes_power_and_energy_once_per_package)
{
    setenv("FAKE_RSMI_GPUS", "4", 1);
    setenv("FAKE_RSMI_MI250X", "1", 1);
    set_t0_now();
    const char *m = "AMD Instinct MI250X";
    void *st = open_ok(100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_INFO), 4);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 2);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 2);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_INTEGRATED_J), 2);
    for (unsigned int i = 0; i < 4; i += 2) {
        WT_ASSERT(!isnan(value_m(&b, WT_M_GPU_POWER_W, i, m, false, NULL, NULL)));
        WT_ASSERT(isnan(value_m(&b, WT_M_GPU_POWER_W, i + 1, m, true, NULL, NULL)));
        WT_NEAR(value_m(&b, WT_M_GPU_UP, i + 1, m, true, NULL, NULL), 1, 0);
        /* the second die: info names its package */
        char l[WT_LABELS_LEN], pci[32], pkg[16];
        dev_labels(l, sizeof l, i + 1, m, true);
        snprintf(pci, sizeof pci, "0000:%02x:00.0", 0x10 + i + 1);
        snprintf(pkg, sizeof pkg, "%u", i);
        WT_EQ_INT(wt_labels_add(l, sizeof l, "vendor", "amd"), 0);
        WT_EQ_INT(wt_labels_add(l, sizeof l, "pci_bus_id", pci), 0);
        WT_EQ_INT(wt_labels_add(l, sizeof l, "package", pkg), 0);
        WT_NEAR(reading_value(&b, WT_M_GPU_INFO, l), 1, 0);
    }
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(each_accumulator_reading_carries_how_long_after_its_stamp_it_was_read)
{
    /* device 1's read held 3 ms: its reading and device 2's (read after it) lie 3 ms or more
     * after the poll's stamp, and say so; the accumulator is the energy up to the read */
    setenv("FAKE_RSMI_GPUS", "3", 1);
    setenv("FAKE_RSMI_READ_DELAY_US", "0,3000,0", 1);
    set_t0_now();
    void *st = open_ok(100);
    void *h;
    exact_energy_fn *exact = exact_fn(&h);
    struct wt_batch b = {0};
    int64_t t = poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_READ_SKEW_S), 3);
    double sk[3];
    for (unsigned int i = 0; i < 3; i++) {
        sk[i] = value(&b, WT_M_GPU_ENERGY_READ_SKEW_S, i);
        WT_NEAR(sk[i] * 1e5, round(sk[i] * 1e5), 1e-6); /* 10-us steps */
        WT_ASSERT(sk[i] >= 1e-5 && sk[i] < 0.5);
    }
    printf("# read skew %.5f, %.5f, %.5f s\n", sk[0], sk[1], sk[2]);
    WT_ASSERT(sk[0] < sk[1] && sk[1] >= 0.003 && sk[2] >= sk[1]);
    double t0 = strtod(getenv("FAKE_RSMI_T0"), NULL), ts = (double)t / WT_NS_PER_S;
    double e1 = value(&b, WT_M_GPU_ENERGY_J, 1) - 65536; /* the offset: 2^32 counts of 2^-16 J */
    WT_ASSERT(e1 >= exact(1, t0, ts + 0.003) - 1e-4);
    WT_ASSERT(exact(1, ts, ts + 0.003) > 0.5); /* 3 ms at 250 W or more */
    wt_batch_free(&b);
    dlclose(h);
    wt_amd_collector.close(st);
}

WT_TEST(counter_energy_over_a_window_is_the_exact_energy_to_the_joule)
{
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_POWER", "400,150,2", 1);
    set_t0_now();
    void *st = open_ok(200);
    void *h;
    exact_energy_fn *exact = exact_fn(&h);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    int64_t t_first = poll_for(st, &b, 200, 1);
    double c0 = value(&b, WT_M_GPU_ENERGY_J, 1), i0 = value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, 1);
    int64_t t_last = poll_for(st, &b, 200, 15);
    double c = value(&b, WT_M_GPU_ENERGY_J, 1) - c0;
    double in = value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, 1) - i0;
    double ex = exact(1, (double)t_first / WT_NS_PER_S, (double)t_last / WT_NS_PER_S);
    printf("# over %.3f s: counter %.3f J, integrated %.3f J, exact %.3f J\n",
           (double)(t_last - t_first) / WT_NS_PER_S, c, in, ex);
    WT_ASSERT(ex > 1000);
    WT_NEAR(c, ex, 1.0);
    WT_NEAR(in, ex, 0.03 * ex);
    WT_NEAR(value(&b, WT_M_GPU_ENERGY_GAPS, 1), 0, 0);
    wt_batch_free(&b);
    dlclose(h);
    wt_amd_collector.close(st);
}

/* The counter of device dev stops being published after `what` at 0.5 s, said once; the
 * integrated series goes on within 3 % of the exact energy; device 1-dev is untouched. */
static void falls_back(const char *knob, unsigned int dev, const char *said)
{
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_POWER", "400,150,2", 1);
    setenv(knob, dev ? "1:0.5" : "0:0.5", 1);
    set_t0_now();
    int saved = logcap_begin();
    void *st = open_ok(100);
    void *h;
    exact_energy_fn *exact = exact_fn(&h);
    struct wt_batch b = {0};
    int64_t t_first = poll_ok(st, &b);
    WT_ASSERT(!isnan(value(&b, WT_M_GPU_ENERGY_J, dev)));
    double i0 = value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, dev);
    /* frozen: three ticks and a second of the library's time after 0.5 s */
    double t0 = strtod(getenv("FAKE_RSMI_T0"), NULL);
    int after = 0; /* counter readings stamped after it stopped */
    int64_t t_last = 0, deadline = wt_now_mono_ns();
    for (int k = 0; k < 25; k++) {
        deadline += 100 * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        t_last = poll_ok(st, &b);
        after +=
            !isnan(value(&b, WT_M_GPU_ENERGY_J, dev)) && (double)t_last / WT_NS_PER_S > t0 + 0.5;
    }
    logcap_end(saved);
    WT_ASSERT(isnan(value(&b, WT_M_GPU_ENERGY_J, dev)));
    WT_ASSERT(!isnan(value(&b, WT_M_GPU_ENERGY_J, 1 - dev)));
    double in = value(&b, WT_M_GPU_ENERGY_INTEGRATED_J, dev) - i0;
    double ex = exact(dev, (double)t_first / WT_NS_PER_S, (double)t_last / WT_NS_PER_S);
    WT_NEAR(in, ex, 0.03 * ex);
    /* at most the first reading after it stopped is published: no plateau in its series */
    WT_ASSERT(after <= 1);
    WT_EQ_INT(logcap_count("energy counter", said), 1);
    WT_EQ_INT(logcap_count("energy counter", NULL), 1);
    wt_batch_free(&b);
    dlclose(h);
    wt_amd_collector.close(st);
}

WT_TEST(a_frozen_counter_falls_back_to_integration_said_once)
{
    falls_back("FAKE_RSMI_FROZEN", 0, "stopped while the package draws power");
}

WT_TEST(a_counter_reset_falls_back_to_integration_said_once)
{
    falls_back("FAKE_RSMI_RESET", 1, "went backwards");
}

WT_TEST(not_supported_metrics_are_absent_never_zero_and_the_gpu_stays_up)
{
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_NOT_SUPPORTED", "energy,temperature,busy,cap", 1);
    void *st = open_ok(100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_TEMP_C), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_MEM_TEMP_C), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_UTIL_RATIO), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_LIMIT_W), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_LIMIT_MAX_W), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_INTEGRATED_J), 2);
    WT_NEAR(value(&b, WT_M_GPU_UP, 0), 1, 0);
    WT_NEAR(value(&b, WT_M_GPU_UP, 1), 1, 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(a_missing_library_is_enoent_and_names_the_override)
{
    struct wt_err err = {{0}};
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/no-such-librocm_smi64.so.1", wt_test_dir());
    setenv("WATTAGE_ROCM_SMI_LIBRARY", path, 1);
    WT_EQ_INT(open_rc(&err), -ENOENT);
    WT_CONTAINS(err.msg, "WATTAGE_ROCM_SMI_LIBRARY");
    WT_CONTAINS(err.msg, path);
}

WT_TEST(a_library_without_the_required_symbols_is_refused)
{
    struct wt_err err = {{0}};
    setenv("WATTAGE_ROCM_SMI_LIBRARY", "libm.so.6", 1);
    WT_EQ_INT(open_rc(&err), -ENOSYS);
    WT_CONTAINS(err.msg, "rsmi_init");
}

WT_TEST(a_failing_init_is_absent_for_init_error_else_an_error)
{
    struct wt_err err = {{0}};
    setenv("WATTAGE_ROCM_SMI_LIBRARY", fake(), 1);
    setenv("FAKE_RSMI_INIT_FAIL", "8", 1);
    WT_EQ_INT(open_rc(&err), -ENOENT);
    WT_CONTAINS(err.msg, "rsmi_init failed");
    setenv("FAKE_RSMI_INIT_FAIL", "6", 1);
    WT_EQ_INT(open_rc(&err), -EIO);
    setenv("FAKE_RSMI_INIT_FAIL", "0", 1);
    setenv("FAKE_RSMI_GPUS", "0", 1);
    WT_EQ_INT(open_rc(&err), -ENOENT);
    WT_CONTAINS(err.msg, "sees no AMD GPU");
}

WT_TEST(an_mi300x_in_cpx_mode_publishes_power_and_energy_on_partition_0)
{
    setenv("FAKE_RSMI_GPUS", "8", 1);
    setenv("FAKE_RSMI_CPX", "4", 1);
    const char *m = "AMD Instinct MI300X";
    void *st = open_ok(100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_INFO), 8);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 2);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 2);
    char l[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(l, sizeof l, "gpu", "4", "uuid", "AMD-00c0ffee00000001", "model", m, NULL),
              0);
    WT_ASSERT(!isnan(reading_value(&b, WT_M_GPU_ENERGY_J, l)));
    WT_EQ_INT(wt_labels(l, sizeof l, "gpu", "6", "uuid", "AMD-00c0ffee00000001-2", "model", m,
                        "vendor", "amd", "pci_bus_id", "0000:11:00.0", "package", "4", "partition",
                        "2", NULL),
              0);
    WT_NEAR(reading_value(&b, WT_M_GPU_INFO, l), 1, 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(a_5_2_3_library_without_socket_power_reads_the_average)
{
    char path[PATH_MAX];
    if (!realpath(wt_test_build_path("tests/fakes/5.2.3/librocm_smi64.so.1"), path))
        wt_test_fail(__FILE__, __LINE__, "the 5.2.3 fake is not built: run make first");
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_SOCKET_POWER", "1", 1);
    setenv("FAKE_RSMI_POWER", "250,0,7", 1);
    struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    setenv("WATTAGE_ROCM_SMI_LIBRARY", path, 1);
    int saved = logcap_begin();
    WT_EQ_INT(wt_amd_collector.open(&cfg, &st, &err), 0);
    logcap_end(saved);
    WT_EQ_INT(logcap_count("amd: 2 GPUs in 2 packages", "power=average"), 1);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_NEAR(value(&b, WT_M_GPU_POWER_W, 0), 250, 1e-6);
    WT_ASSERT(!isnan(value(&b, WT_M_GPU_ENERGY_J, 0)));
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(a_gpu_that_stops_answering_is_down_alone_and_comes_back)
{
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_LOST", "1:0.4:0.9", 1);
    set_t0_now();
    int saved = logcap_begin();
    void *st = open_ok(100);
    struct wt_batch b = {0};
    int downs = 0, up0 = 0, polls = 0;
    int64_t deadline = wt_now_mono_ns();
    for (; polls < 14; polls++) {
        deadline += 100 * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        poll_ok(st, &b);
        downs += value(&b, WT_M_GPU_UP, 1) == 0;
        up0 += value(&b, WT_M_GPU_UP, 0) == 1;
    }
    logcap_end(saved);
    WT_ASSERT(downs >= 2);
    WT_EQ_INT(up0, polls);
    WT_NEAR(value(&b, WT_M_GPU_UP, 1), 1, 0);
    WT_ASSERT(!isnan(value(&b, WT_M_GPU_ENERGY_J, 1)));
    WT_NEAR(value(&b, WT_M_GPU_ENERGY_GAPS, 1), 1, 0);
    WT_EQ_INT(logcap_count("gpu=1", "stopped answering"), 1);
    WT_EQ_INT(logcap_count("gpu=1", "answers again"), 1);
    WT_EQ_INT(logcap_count("energy counter", NULL), 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(a_32_bit_counter_that_wraps_keeps_the_exact_energy)
{
    char off[64];
    setenv("FAKE_RSMI_GPUS", "1", 1);
    setenv("FAKE_RSMI_POWER", "400,150,2", 1);
    setenv("FAKE_RSMI_COUNTER_BITS", "32", 1);
    /* 600 J before the wrap: about 1.5 s in */
    snprintf(off, sizeof off, "%llu", (1ull << 32) - 65536ull * 600);
    setenv("FAKE_RSMI_ENERGY_OFFSET", off, 1);
    set_t0_now();
    int saved = logcap_begin();
    void *st = open_ok(200);
    void *h;
    exact_energy_fn *exact = exact_fn(&h);
    struct wt_batch b = {0};
    int64_t t_first = poll_ok(st, &b);
    double c0 = value(&b, WT_M_GPU_ENERGY_J, 0);
    int64_t t_last = poll_for(st, &b, 200, 15);
    logcap_end(saved);
    double c = value(&b, WT_M_GPU_ENERGY_J, 0) - c0;
    double ex = exact(0, (double)t_first / WT_NS_PER_S, (double)t_last / WT_NS_PER_S);
    printf("# over %.3f s: counter %.3f J, exact %.3f J\n",
           (double)(t_last - t_first) / WT_NS_PER_S, c, ex);
    WT_ASSERT(ex > 700);
    WT_NEAR(c, ex, 1.0);
    WT_EQ_INT(logcap_count("energy counter", NULL), 0);
    wt_batch_free(&b);
    dlclose(h);
    wt_amd_collector.close(st);
}

WT_TEST(ecc_counts_are_summed_over_the_enabled_blocks)
{
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_ECC", "1:3:1", 1);
    void *st = open_ok(100);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ECC_ERRORS), 4);
    const char *m = "AMD Instinct MI300X";
    char l[WT_LABELS_LEN];
    dev_labels(l, sizeof l, 1, m, false);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "type", "uncorrected"), 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "counter", "volatile"), 0);
    WT_NEAR(reading_value(&b, WT_M_GPU_ECC_ERRORS, l), 1, 0);
    dev_labels(l, sizeof l, 1, m, false);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "type", "corrected"), 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "counter", "volatile"), 0);
    WT_NEAR(reading_value(&b, WT_M_GPU_ECC_ERRORS, l), 3, 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(mi250x_dies_with_their_own_unique_ids_still_count_the_package_once)
{
    /* Not grouped (nothing ties the dies together), but the second die reads 0 W and a still
     * accumulator: the node's sum is the packages' energy, and 0 W is no frozen counter. */
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_MI250X", "2", 1);
    setenv("FAKE_RSMI_POWER", "400,150,2", 1);
    set_t0_now();
    int saved = logcap_begin();
    void *st = open_ok(100);
    void *h;
    exact_energy_fn *exact = exact_fn(&h);
    const char *m = "AMD Instinct MI250X";
    char l0[WT_LABELS_LEN], l1[WT_LABELS_LEN];
    WT_EQ_INT(
        wt_labels(l0, sizeof l0, "gpu", "0", "uuid", "AMD-00c0ffee00000000", "model", m, NULL), 0);
    WT_EQ_INT(
        wt_labels(l1, sizeof l1, "gpu", "1", "uuid", "AMD-00c0ffee00000001", "model", m, NULL), 0);
    struct wt_batch b = {0};
    int64_t t_first = poll_ok(st, &b);
    double e0 = reading_value(&b, WT_M_GPU_ENERGY_J, l0) + reading_value(&b, WT_M_GPU_ENERGY_J, l1);
    int64_t t_last = poll_for(st, &b, 100, 25);
    logcap_end(saved);
    WT_NEAR(reading_value(&b, WT_M_GPU_POWER_W, l1), 0, 0);
    double e = reading_value(&b, WT_M_GPU_ENERGY_J, l0) + reading_value(&b, WT_M_GPU_ENERGY_J, l1);
    double ex = exact(0, (double)t_first / WT_NS_PER_S, (double)t_last / WT_NS_PER_S) +
                exact(1, (double)t_first / WT_NS_PER_S, (double)t_last / WT_NS_PER_S);
    WT_NEAR(e - e0, ex, 1.0);
    WT_EQ_INT(logcap_count("energy counter", NULL), 0);
    wt_batch_free(&b);
    dlclose(h);
    wt_amd_collector.close(st);
}

WT_TEST(without_a_library_named_and_no_kfd_the_library_is_not_loaded)
{
    struct wt_err err = {{0}};
    unsetenv("WATTAGE_ROCM_SMI_LIBRARY");
    setenv("WATTAGE_SYSFS_ROOT", wt_test_dir(), 1);
    WT_EQ_INT(open_rc(&err), -ENOENT);
    WT_CONTAINS(err.msg, "no AMD GPU driver");
    WT_CONTAINS(err.msg, "/sys/class/kfd/kfd/topology/nodes");
    WT_ASSERT(dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL);
}

WT_TEST(permission_denied_is_said_once_and_not_asked_again)
{
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/calls", wt_test_dir());
    setenv("FAKE_RSMI_CALL_LOG", log, 1);
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_DENIED", "1", 1);
    int saved = logcap_begin();
    void *st = open_ok(100);
    struct wt_batch b = {0};
    for (int i = 0; i < 4; i++)
        poll_ok(st, &b);
    logcap_end(saved);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_UTIL_RATIO), 0);
    WT_NEAR(value(&b, WT_M_GPU_UP, 0), 1, 0);
    WT_ASSERT(!isnan(value(&b, WT_M_GPU_POWER_W, 0)));
    WT_EQ_INT(logcap_count("rsmi_dev_busy_percent_get: permission denied", NULL), 2);
    size_t len = 0;
    char *calls = wt_test_read(log, &len);
    WT_ASSERT(calls != NULL);
    WT_EQ_STR(calls, "0\n1\n"); /* once per device, never again */
    free(calls);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

/* Lines of the fake's call log (FAKE_RSMI_CALLS) that are exactly fn. */
static int calls(const char *fn)
{
    size_t len = 0, fl = strlen(fn);
    char *text = wt_test_read("rsmi-calls", &len);
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, fn)) != NULL; p += fl)
        n += (p == text || p[-1] == '\n') && p[fl] == '\n';
    free(text);
    return n;
}

/* The collector on one device of the fake, its calls logged, slow fields every slow_ns. */
static void *open_slow(int64_t slow_ns)
{
    static struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    char log[PATH_MAX];
    wt_config_defaults(&cfg);
    cfg.collectors.amd.interval_ns = 100 * WT_NS_PER_MS;
    cfg.collectors.amd_slow_interval_ns = slow_ns;
    snprintf(log, sizeof log, "%s/rsmi-calls", wt_test_dir());
    setenv("FAKE_RSMI_CALLS", log, 1);
    setenv("FAKE_RSMI_GPUS", "1", 1);
    setenv("FAKE_RSMI_ECC", "0:3:1", 1);
    setenv("WATTAGE_ROCM_SMI_LIBRARY", fake(), 1);
    int rc = wt_amd_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

/* Polls n times; counts the polls that published the cap, its range and the ECC counts. */
static void poll_slow(void *st, int n, struct wt_batch *b, int *published)
{
    for (int i = 0; i < n; i++) {
        poll_ok(st, b);
        *published += !isnan(value(b, WT_M_GPU_POWER_LIMIT_W, 0)) &&
                      !isnan(value(b, WT_M_GPU_POWER_LIMIT_MAX_W, 0)) &&
                      count_readings(b, WT_M_GPU_ECC_ERRORS) == 2;
    }
}

/* Each slow call so far was made n times (ECC: 3 blocks enabled, 2 with a counter). */
static void slow_calls_were(int n)
{
    WT_EQ_INT(calls("rsmi_dev_power_cap_get"), n);
    WT_EQ_INT(calls("rsmi_dev_power_cap_range_get"), n);
    WT_EQ_INT(calls("rsmi_dev_ecc_enabled_get"), n);
    /* the block without a counter is asked once, at the first read */
    WT_EQ_INT(calls("rsmi_dev_ecc_count_get"), n ? 2 * n + 1 : 0);
}

WT_TEST(slow_fields_are_read_once_an_interval_and_published_every_tick)
{
    void *st = open_slow(3600 * WT_NS_PER_S);
    struct wt_batch b = {0};
    int published = 0;
    slow_calls_were(0); /* not at open: at the first poll */
    poll_slow(st, 20, &b, &published);
    slow_calls_were(1);
    WT_EQ_INT(published, 20);
    /* the fast ones every poll */
    WT_EQ_INT(calls("rsmi_dev_busy_percent_get"), 20);
    WT_EQ_INT(calls("rsmi_dev_temp_metric_get"), 60);
    WT_EQ_INT(calls("rsmi_dev_energy_count_get"), 20);
    WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_W, 0), 500, 1e-9);
    WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_MIN_W, 0), 100, 1e-9);
    char l[WT_LABELS_LEN];
    dev_labels(l, sizeof l, 0, "AMD Instinct MI300X", false);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "type", "corrected"), 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "counter", "volatile"), 0);
    WT_NEAR(reading_value(&b, WT_M_GPU_ECC_ERRORS, l), 3, 0);

    /* status's table */
    const char *f[16];
    size_t n = 0;
    int64_t slow_ns = 0;
    WT_ASSERT(wt_cadence_slow_fields("amd", f, 16, &n, &slow_ns));
    WT_EQ_INT(slow_ns, 3600 * WT_NS_PER_S);
    bool limit = false, range = false, ecc = false, power = false;
    for (size_t i = 0; i < n && i < 16; i++) {
        limit |= strcmp(f[i], "power_limit") == 0;
        range |= strcmp(f[i], "power_limit_range") == 0;
        ecc |= strcmp(f[i], "ecc_volatile") == 0;
        power |= strcmp(f[i], "power") == 0 || strcmp(f[i], "energy") == 0;
    }
    WT_ASSERT(limit && range && ecc && !power);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
    WT_ASSERT(!wt_cadence_slow_fields("amd", f, 16, &n, &slow_ns));
}

WT_TEST(slow_interval_zero_reads_the_slow_fields_every_tick)
{
    void *st = open_slow(0);
    struct wt_batch b = {0};
    int published = 0;
    poll_slow(st, 6, &b, &published);
    slow_calls_were(6);
    WT_EQ_INT(published, 6);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(a_cap_set_by_wattage_is_seen_at_the_next_tick_one_set_elsewhere_at_the_slow_read)
{
    char caps[PATH_MAX];
    snprintf(caps, sizeof caps, "%s/caps", wt_test_dir());
    setenv("FAKE_RSMI_CAP_LOG", caps, 1);
    void *st = open_slow(3600 * WT_NS_PER_S);
    struct wt_batch b = {0};
    int published = 0;
    poll_slow(st, 2, &b, &published);
    WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_W, 0), 500, 1e-9);

    /* another tool's cap (the driver's state in the fake's file): seen at the slow read only */
    FILE *f = fopen(caps, "ae");
    WT_ASSERT(f != NULL);
    fprintf(f, "0 450\n");
    fclose(f);
    poll_slow(st, 3, &b, &published);
    WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_W, 0), 500, 1e-9);
    slow_calls_were(1);

    /* the capper's session sets it and asks for a slow read, as alert/cap_act.c does */
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_rocm_caps *c = NULL;
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_rocm_caps_open(&cfg, &c, &err), 0);
    WT_EQ_INT(wt_rocm_caps_set(c, 0, 300), 0);
    wt_rocm_caps_close(c);
    wt_rocm_slow_refresh();
    poll_slow(st, 1, &b, &published);
    WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_W, 0), 300, 1e-9);
    poll_slow(st, 3, &b, &published);
    WT_NEAR(value(&b, WT_M_GPU_POWER_LIMIT_W, 0), 300, 1e-9);
    slow_calls_were(2);
    WT_EQ_INT(published, 9);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}
