/* SPDX-License-Identifier: MIT */
/*
 * The AMD collector on AMD SMI: the fake libamd_smi (tests/fakes/fake_amd_smi.c, AMD SMI's
 * exports over the fake ROCm SMI's physics) loaded through the real dlopen path where no ROCm SMI
 * loads; ROCm SMI chosen where both do; the uuid's unique id; an MI250X counted once per
 * package, its counter energy against the fake's exact integral; temperatures, busy and caps in
 * ROCm SMI's units; the capper's session beside the collector's; a library without a required
 * call and a failing amdsmi_init.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "collect/amdsmi.h"
#include "collect/rocm.h"
#include "collect/rocm_api.h"
#include "core/clock.h"
#include "core/config.h"
#include "logcap.h"
#include "readings.h"
#include "runner.h"

typedef double exact_energy_fn(unsigned int dev, double t_from, double t_to);

static char amd_path[PATH_MAX], nohandles_path[PATH_MAX], rocm_path[PATH_MAX];

__attribute__((constructor)) static void resolve_fakes(void)
{
    if (!realpath(wt_test_build_path("tests/fakes/libamd_smi.so"), amd_path))
        amd_path[0] = '\0';
    if (!realpath(wt_test_build_path("tests/fakes/nohandles/libamd_smi.so"), nohandles_path))
        nohandles_path[0] = '\0';
    if (!realpath(wt_test_build_path("tests/fakes/librocm_smi64.so.1"), rocm_path))
        rocm_path[0] = '\0';
}

static void need_fakes(void)
{
    if (!amd_path[0] || !nohandles_path[0] || !rocm_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake AMD SMI is not built: run make first");
}

/* ROCm SMI absent (a path that does not load), the fake AMD SMI named. */
static void amd_only(void)
{
    char none[PATH_MAX];
    need_fakes();
    snprintf(none, sizeof none, "%s/no-librocm_smi64.so.1", wt_test_dir());
    setenv("WATTAGE_ROCM_SMI_LIBRARY", none, 1);
    setenv("WATTAGE_AMD_SMI_LIBRARY", amd_path, 1);
    char t0[64];
    snprintf(t0, sizeof t0, "%.6f", (double)wt_now_real_ns() / WT_NS_PER_S);
    setenv("FAKE_RSMI_T0", t0, 1);
}

static void *open_ok(void)
{
    static struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    cfg.collectors.amd.interval_ns = 200 * WT_NS_PER_MS;
    int rc = wt_amd_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

static int open_rc(struct wt_err *err)
{
    struct wt_config cfg;
    void *st = NULL;
    wt_config_defaults(&cfg);
    int rc = wt_amd_collector.open(&cfg, &st, err);
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

/* Device dev's reading of an MI250X pair's fake (key=val added when key is set). */
static double mi250x(const struct wt_batch *b, int metric, unsigned int dev, const char *key,
                     const char *val)
{
    char l[WT_LABELS_LEN], idx[16], uuid[64];
    snprintf(idx, sizeof idx, "%u", dev);
    snprintf(uuid, sizeof uuid, "AMD-00c0ffee%08x%s", dev / 2, dev % 2 ? "-1" : "");
    WT_EQ_INT(
        wt_labels(l, sizeof l, "gpu", idx, "uuid", uuid, "model", "AMD Instinct MI250X", NULL), 0);
    if (key)
        WT_EQ_INT(wt_labels_add(l, sizeof l, key, val), 0);
    const struct wt_reading *r = find_reading(b, metric, l);
    return r ? r->value : NAN;
}

/* Device dev's reading of the default fake (MI300X, one die a package); NAN where none. */
static double mi300x(const struct wt_batch *b, int metric, unsigned int dev)
{
    char l[WT_LABELS_LEN], idx[16], uuid[64];
    snprintf(idx, sizeof idx, "%u", dev);
    snprintf(uuid, sizeof uuid, "AMD-00c0ffee%08x", dev);
    WT_EQ_INT(
        wt_labels(l, sizeof l, "gpu", idx, "uuid", uuid, "model", "AMD Instinct MI300X", NULL), 0);
    const struct wt_reading *r = find_reading(b, metric, l);
    return r ? r->value : NAN;
}

WT_TEST(the_unique_id_is_read_out_of_the_uuid_amd_smi_makes)
{
    uint64_t u = 0;
    /* amdsmi_uuid_gen of unique id 0x12c0ffee00000003, device id 0x740c, index 0xff */
    WT_EQ_INT(wt_amdsmi_uuid_uid("12ff740c-0000-1000-80c0-ffee00000003", &u), 0);
    WT_EQ_U64(u, 0x12c0ffee00000003ull);
    /* another partition index or device id: the same package */
    WT_EQ_INT(wt_amdsmi_uuid_uid("1202740c-0000-1000-80c0-ffee00000003", &u), 0);
    WT_EQ_U64(u, 0x12c0ffee00000003ull);
    WT_EQ_INT(wt_amdsmi_uuid_uid("12ff740c-0000-1000-80c0-ffee0000000", &u), -1);
    WT_EQ_INT(wt_amdsmi_uuid_uid("GPU-12ff740c00001000", &u), -1);
    WT_EQ_INT(wt_amdsmi_uuid_uid("12ff740c-0000-1000-80c0-ffee0000000z", &u), -1);
    WT_EQ_INT(wt_amdsmi_uuid_uid(NULL, &u), -1);
}

WT_TEST(without_rocm_smi_amd_smi_is_loaded_and_an_mi250x_is_one_package)
{
    amd_only();
    setenv("FAKE_RSMI_GPUS", "4", 1);
    setenv("FAKE_RSMI_MI250X", "1", 1);
    int saved = logcap_begin();
    void *st = open_ok();
    logcap_end(saved);
    WT_EQ_INT(logcap_count("amd: 4 GPUs in 2 packages", amd_path), 1);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_INFO), 4);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_UP), 4);
    /* the counter once per package, on its first die; no power reading through AMD SMI */
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ENERGY_J), 2);
    WT_ASSERT(!isnan(mi250x(&b, WT_M_GPU_ENERGY_J, 0, NULL, NULL)));
    WT_ASSERT(!isnan(mi250x(&b, WT_M_GPU_ENERGY_J, 2, NULL, NULL)));
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 0);
    for (unsigned int i = 0; i < 4; i++) {
        /* °C from AMD SMI, as ROCm SMI's fake gives them: edge 40+i, junction 55+i, memory 60+i */
        WT_NEAR(mi250x(&b, WT_M_GPU_TEMP_C, i, "sensor", "edge"), 40 + i, 0);
        WT_NEAR(mi250x(&b, WT_M_GPU_TEMP_C, i, "sensor", "junction"), 55 + i, 0);
        WT_NEAR(mi250x(&b, WT_M_GPU_MEM_TEMP_C, i, NULL, NULL), 60 + i, 0);
        WT_NEAR(mi250x(&b, WT_M_GPU_POWER_LIMIT_W, i, NULL, NULL), 500, 1e-9);
        WT_NEAR(mi250x(&b, WT_M_GPU_POWER_LIMIT_MIN_W, i, NULL, NULL), 100, 1e-9);
        WT_NEAR(mi250x(&b, WT_M_GPU_POWER_LIMIT_MAX_W, i, NULL, NULL), 560, 1e-9);
        double busy = mi250x(&b, WT_M_GPU_UTIL_RATIO, i, NULL, NULL);
        WT_ASSERT(busy >= 0 && busy <= 1);
    }
    char l[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(l, sizeof l, "gpu", "3", "uuid", "AMD-00c0ffee00000001-1", "model",
                        "AMD Instinct MI250X", "vendor", "amd", "pci_bus_id", "0000:13:00.0",
                        "package", "2", NULL),
              0);
    WT_NEAR(reading_value(&b, WT_M_GPU_INFO, l), 1, 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(amd_smi_counter_energy_is_the_exact_energy_to_the_joule)
{
    amd_only();
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_POWER", "400,150,2", 1);
    void *st = open_ok();
    /* the exact integral of the same physics, from the ROCm SMI fake configured alike */
    void *h = dlopen(rocm_path, RTLD_NOW | RTLD_LOCAL);
    WT_ASSERT(h != NULL);
    wt_rsmi_init_fn *init;
    exact_energy_fn *exact;
    void *p = dlsym(h, "rsmi_init"), *q = dlsym(h, "fake_rsmi_exact_energy_j");
    WT_ASSERT(p && q);
    memcpy(&init, &p, sizeof p);
    memcpy(&exact, &q, sizeof q);
    WT_EQ_INT(init(0), RSMI_STATUS_SUCCESS);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    int64_t deadline = wt_now_mono_ns();
    deadline += 200 * WT_NS_PER_MS;
    wt_sleep_until_mono(deadline);
    int64_t t_first = poll_ok(st, &b);
    double c0[2] = {mi300x(&b, WT_M_GPU_ENERGY_J, 0), mi300x(&b, WT_M_GPU_ENERGY_J, 1)};
    int64_t t_last = 0;
    for (int i = 0; i < 15; i++) {
        deadline += 200 * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        t_last = poll_ok(st, &b);
    }
    for (unsigned int d = 0; d < 2; d++) {
        double c = mi300x(&b, WT_M_GPU_ENERGY_J, d) - c0[d];
        double ex = exact(d, (double)t_first / WT_NS_PER_S, (double)t_last / WT_NS_PER_S);
        printf("# gpu %u over %.3f s: counter %.3f J, exact %.3f J\n", d,
               (double)(t_last - t_first) / WT_NS_PER_S, c, ex);
        WT_ASSERT(ex > 1000);
        WT_NEAR(c, ex, 1.0);
    }
    wt_batch_free(&b);
    dlclose(h);
    wt_amd_collector.close(st);
}

WT_TEST(where_both_load_rocm_smi_is_chosen)
{
    amd_only();
    setenv("WATTAGE_ROCM_SMI_LIBRARY", rocm_path, 1);
    setenv("FAKE_RSMI_GPUS", "2", 1);
    int saved = logcap_begin();
    void *st = open_ok();
    logcap_end(saved);
    WT_EQ_INT(logcap_count("amd: 2 GPUs in 2 packages", rocm_path), 1);
    WT_EQ_INT(logcap_count("amd: 2 GPUs", amd_path), 0);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 2); /* ROCm SMI's power */
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(the_capper_sets_limits_through_amd_smi_beside_the_collector)
{
    amd_only();
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/caps", wt_test_dir());
    setenv("FAKE_RSMI_CAP_LOG", log, 1);
    setenv("FAKE_RSMI_GPUS", "2", 1);
    void *st = open_ok();
    struct wt_config cfg;
    wt_config_defaults(&cfg);
    struct wt_rocm_caps *c = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_rocm_caps_open(&cfg, &c, &err), 0);
    WT_EQ_INT(wt_rocm_caps_count(c), 2);
    WT_EQ_STR(wt_rocm_caps_uuid(c, 1), "AMD-00c0ffee00000001");
    struct wt_rocm_cap cap;
    WT_EQ_INT(wt_rocm_caps_read(c, 1, &cap), 0);
    WT_NEAR(cap.limit_w, 500, 1e-9);
    WT_NEAR(cap.default_w, 500, 1e-9);
    WT_NEAR(cap.min_w, 100, 1e-9);
    WT_NEAR(cap.max_w, 560, 1e-9);
    WT_EQ_INT(wt_rocm_caps_set(c, 1, 320), 0);
    WT_ASSERT(wt_rocm_caps_set(c, 1, 900) != 0); /* out of range: refused by the library */
    WT_EQ_INT(wt_rocm_caps_read(c, 1, &cap), 0);
    WT_NEAR(cap.limit_w, 320, 1e-9);
    wt_rocm_caps_close(c);
    /* the collector's session goes on after the capper's ended (the library's handles and its
     * init are shared, counted) */
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_NEAR(mi300x(&b, WT_M_GPU_UP, 1), 1, 0);
    WT_ASSERT(!isnan(mi300x(&b, WT_M_GPU_ENERGY_J, 1)));
    wt_batch_free(&b);
    /* and a capper's session opened while it runs reads the cap the driver kept */
    WT_EQ_INT(wt_rocm_caps_open(&cfg, &c, &err), 0);
    WT_EQ_INT(wt_rocm_caps_read(c, 1, &cap), 0);
    WT_NEAR(cap.limit_w, 320, 1e-9);
    wt_rocm_caps_close(c);
    wt_amd_collector.close(st);
}

WT_TEST(an_amd_smi_without_a_required_call_is_refused_by_name)
{
    amd_only();
    setenv("WATTAGE_AMD_SMI_LIBRARY", nohandles_path, 1);
    struct wt_err err = {{0}};
    WT_EQ_INT(open_rc(&err), -ENOSYS);
    WT_CONTAINS(err.msg, nohandles_path);
    WT_CONTAINS(err.msg, "does not export amdsmi_get_processor_handles");
    /* and a library that is neither */
    setenv("WATTAGE_AMD_SMI_LIBRARY", "libm.so.6", 1);
    WT_EQ_INT(open_rc(&err), -ENOSYS);
    WT_CONTAINS(err.msg, "does not export amdsmi_init");
}

WT_TEST(neither_library_is_enoent_naming_both_overrides)
{
    amd_only();
    char none[PATH_MAX];
    snprintf(none, sizeof none, "%s/no-libamd_smi.so", wt_test_dir());
    setenv("WATTAGE_AMD_SMI_LIBRARY", none, 1);
    struct wt_err err = {{0}};
    WT_EQ_INT(open_rc(&err), -ENOENT);
    WT_CONTAINS(err.msg, none);
    WT_CONTAINS(err.msg, "WATTAGE_ROCM_SMI_LIBRARY");
    WT_CONTAINS(err.msg, "WATTAGE_AMD_SMI_LIBRARY");
}

WT_TEST(a_failing_amdsmi_init_is_absent_with_amd_smi_s_words)
{
    amd_only();
    setenv("FAKE_RSMI_INIT_FAIL", "8", 1);
    struct wt_err err = {{0}};
    WT_EQ_INT(open_rc(&err), -ENOENT);
    WT_CONTAINS(err.msg, "AMDSMI_STATUS_INIT_ERROR");
    /* the library was let go: a second try loads it again and works */
    setenv("FAKE_RSMI_INIT_FAIL", "0", 1);
    setenv("FAKE_RSMI_GPUS", "1", 1);
    WT_EQ_INT(open_rc(&err), 0);
}

/* Device dev's ECC count of type (corrected, uncorrected) on the default fake. */
static double ecc(const struct wt_batch *b, unsigned int dev, const char *type)
{
    char l[WT_LABELS_LEN], idx[16], uuid[64];
    snprintf(idx, sizeof idx, "%u", dev);
    snprintf(uuid, sizeof uuid, "AMD-00c0ffee%08x", dev);
    WT_EQ_INT(wt_labels(l, sizeof l, "gpu", idx, "uuid", uuid, "model", "AMD Instinct MI300X",
                        "type", type, "counter", "volatile", NULL),
              0);
    return reading_value(b, WT_M_GPU_ECC_ERRORS, l);
}

WT_TEST(ecc_counts_come_through_amd_smi_by_block)
{
    amd_only();
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_ECC", "1:3:1", 1); /* UMC of device 1; SDMA enabled without a counter */
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, &b);
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_ECC_ERRORS), 4);
    WT_NEAR(ecc(&b, 1, "corrected"), 3, 0);
    WT_NEAR(ecc(&b, 1, "uncorrected"), 1, 0);
    WT_NEAR(ecc(&b, 0, "corrected"), 0, 0);
    WT_NEAR(ecc(&b, 0, "uncorrected"), 0, 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(collectors_amd_library_may_name_an_amd_smi)
{
    need_fakes();
    unsetenv("WATTAGE_ROCM_SMI_LIBRARY");
    unsetenv("WATTAGE_AMD_SMI_LIBRARY");
    setenv("FAKE_RSMI_GPUS", "2", 1);
    static struct wt_config cfg;
    wt_config_defaults(&cfg);
    WT_ASSERT(strlen(amd_path) < sizeof cfg.collectors.amd_library);
    memcpy(cfg.collectors.amd_library, amd_path, strlen(amd_path) + 1);
    struct wt_err err = {{0}};
    void *st = NULL;
    int saved = logcap_begin();
    int rc = wt_amd_collector.open(&cfg, &st, &err);
    logcap_end(saved);
    WT_EQ_INT(rc, 0);
    WT_EQ_INT(logcap_count("amd: 2 GPUs in 2 packages", "power=none"), 1);
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_ASSERT(!isnan(mi300x(&b, WT_M_GPU_ENERGY_J, 1)));
    wt_batch_free(&b);
    wt_amd_collector.close(st);
    /* named through the environment, one without a required call is refused by name */
    setenv("WATTAGE_ROCM_SMI_LIBRARY", nohandles_path, 1);
    WT_EQ_INT(open_rc(&err), -ENOSYS);
    WT_CONTAINS(err.msg, "does not export amdsmi_get_processor_handles");
}

/* Without power there is no power x time to judge a counter by: one that stops is held back (its
 * series ends at its last move, no plateau) and not said; one that goes back is dropped, said
 * once, and its package has no energy series from then on. */
WT_TEST(without_power_a_stopped_counter_is_held_back_and_a_reset_one_dropped)
{
    amd_only();
    setenv("FAKE_RSMI_GPUS", "2", 1);
    setenv("FAKE_RSMI_FROZEN", "0:0.5", 1);
    setenv("FAKE_RSMI_RESET", "1:0.5", 1);
    int saved = logcap_begin();
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_ASSERT(!isnan(mi300x(&b, WT_M_GPU_ENERGY_J, 0)));
    WT_ASSERT(!isnan(mi300x(&b, WT_M_GPU_ENERGY_J, 1)));
    int64_t deadline = wt_now_mono_ns();
    for (int i = 0; i < 15; i++) {
        deadline += 100 * WT_NS_PER_MS;
        wt_sleep_until_mono(deadline);
        poll_ok(st, &b);
    }
    logcap_end(saved);
    WT_ASSERT(isnan(mi300x(&b, WT_M_GPU_ENERGY_J, 0)));
    WT_ASSERT(isnan(mi300x(&b, WT_M_GPU_ENERGY_J, 1)));
    WT_NEAR(mi300x(&b, WT_M_GPU_UP, 0), 1, 0);
    WT_EQ_INT(logcap_count("energy counter went backwards", "gpu=1"), 1);
    WT_EQ_INT(logcap_count("energy counter", "gpu=0"), 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}

WT_TEST(a_socket_whose_processors_cannot_be_listed_is_left_out)
{
    amd_only();
    setenv("FAKE_RSMI_GPUS", "4", 1);
    setenv("FAKE_AMDSMI_BAD_SOCKET", "0", 1); /* devices 0 and 1 */
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_INFO), 2);
    /* the second socket's devices, indexed from 0 in the order listed: unique ids 2 and 3 */
    char l[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(l, sizeof l, "gpu", "0", "uuid", "AMD-00c0ffee00000002", "model",
                        "AMD Instinct MI300X", NULL),
              0);
    WT_NEAR(reading_value(&b, WT_M_GPU_UP, l), 1, 0);
    wt_batch_free(&b);
    wt_amd_collector.close(st);
}
