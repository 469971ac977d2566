/* SPDX-License-Identifier: MIT */
/*
 * The GPU health detectors (alert/detect.c) on hand-made snapshots: a new XID fires with its
 * meaning and severity and lasts its hold, uncorrectable ECC (volatile, and the aggregate
 * rising), a pending or failed row remap, PCIe replays rising over the window; and the
 * detectors' config keys.
 */
#include <errno.h>
#include <math.h>

#include "alert/detect.h"
#include "core/clock.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "runner.h"

#define T0 (1800000000LL * WT_NS_PER_S)
#define S(x) ((int64_t)((x) * (double)WT_NS_PER_S))

/* The findings of one tick. */
#define MAX_F 64
static struct {
    enum wt_detector det;
    char labels[WT_LABELS_LEN];
    enum wt_cond cond;
    enum wt_severity sev;
    double value;
    char summary[256];
} found[MAX_F];
static int nfound;

static void on_finding(void *ctx, const struct wt_finding *f)
{
    (void)ctx;
    if (nfound == MAX_F)
        return;
    found[nfound].det = f->det;
    snprintf(found[nfound].labels, sizeof found[nfound].labels, "%s", f->labels);
    found[nfound].cond = f->cond;
    found[nfound].sev = f->severity;
    found[nfound].value = f->value;
    snprintf(found[nfound].summary, sizeof found[nfound].summary, "%s",
             f->summary ? f->summary : "");
    nfound++;
}

/* The finding of det whose labels contain `has` (NULL: any), or NULL. */
static const __typeof__(found[0]) *finding(enum wt_detector det, const char *has)
{
    for (int i = 0; i < nfound; i++)
        if (found[i].det == det && (!has || strstr(found[i].labels, has)))
            return &found[i];
    return NULL;
}

static struct wt_alerts_config cfg;

static void labels_of(int i, char *l, size_t n)
{
    char idx[16], uuid[48];
    snprintf(idx, sizeof idx, "%d", i);
    snprintf(uuid, sizeof uuid, "GPU-test-%04d", i);
    WT_EQ_INT(wt_labels(l, n, "gpu", idx, "uuid", uuid, "model", "NVIDIA H200", NULL), 0);
}

static void put(struct wt_batch *b, int m, int gpu, const char *k1, const char *v1, const char *k2,
                const char *v2, int64_t t, double v)
{
    char l[WT_LABELS_LEN];
    labels_of(gpu, l, sizeof l);
    if (k1)
        WT_EQ_INT(wt_labels_add(l, sizeof l, k1, v1), 0);
    if (k2)
        WT_EQ_INT(wt_labels_add(l, sizeof l, k2, v2), 0);
    WT_EQ_INT(wt_batch_add(b, m, l, t, v), 0);
}

/* A GPU's base series (as the collector sends them first: info with its extra labels). */
static void base(struct wt_batch *b, int gpu, int64_t t)
{
    char l[WT_LABELS_LEN];
    labels_of(gpu, l, sizeof l);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "pci_bus_id", "00000000:19:00.0"), 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "driver_version", "580.1"), 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "vbios_version", "96.00"), 0);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "cuda_driver_version", "13.0"), 0);
    WT_EQ_INT(wt_batch_add(b, WT_M_GPU_INFO, l, t, 1), 0);
    put(b, WT_M_GPU_UP, gpu, NULL, NULL, NULL, NULL, t, 1);
    put(b, WT_M_GPU_POWER_W, gpu, NULL, NULL, NULL, NULL, t, 300);
}

static void tick(struct wt_detect *d, const struct wt_batch *b, int64_t t)
{
    struct wt_alert_input in = {.snap = b, .now_ns = t, .now_mono = t};
    nfound = 0;
    wt_detect_tick(d, &cfg, &in, WT_NS_PER_S, on_finding, NULL);
}

static struct wt_detect *new_detect(void)
{
    struct wt_detect *d = NULL;
    wt_alerts_config_defaults(&cfg);
    WT_EQ_INT(wt_detect_new(&d), 0);
    return d;
}

WT_TEST(a_new_xid_fires_with_its_meaning_then_holds_then_clears)
{
    struct wt_detect *d = new_detect();
    struct wt_batch b = {0};
    cfg.xid.hold_ns = S(60);
    /* GPU 0 healthy: no XID series, no finding. */
    base(&b, 0, T0);
    tick(d, &b, T0);
    WT_ASSERT(finding(WT_DET_XID, NULL) == NULL);
    /* Two XID 79 and one 13 arrive. */
    wt_batch_clear(&b);
    base(&b, 0, T0 + S(1));
    put(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "79", NULL, NULL, T0 + S(1), 2);
    put(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "13", NULL, NULL, T0 + S(1), 1);
    tick(d, &b, T0 + S(1));
    const __typeof__(found[0]) *f = finding(WT_DET_XID, "xid=\"79\"");
    WT_ASSERT(f != NULL);
    WT_EQ_INT(f->cond, WT_COND_TRUE);
    WT_EQ_INT(f->sev, WT_SEV_CRITICAL);
    WT_CONTAINS(f->summary, "XID 79: GPU has fallen off the bus");
    WT_CONTAINS(f->summary, "2 new");
    /* The instance's labels are the GPU's, without the info series' extras. */
    WT_EQ_STR(f->labels, "gpu=\"0\",uuid=\"GPU-test-0000\",model=\"NVIDIA H200\",xid=\"79\"");
    f = finding(WT_DET_XID, "xid=\"13\"");
    WT_ASSERT(f != NULL);
    WT_EQ_INT(f->sev, WT_SEV_WARNING);
    WT_CONTAINS(f->summary, "Graphics Engine Exception");
    /* Same counts later: held, not new. */
    for (int s = 2; s < 60; s += 10) {
        wt_batch_clear(&b);
        base(&b, 0, T0 + S(s));
        put(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "79", NULL, NULL, T0 + S(s), 2);
        put(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "13", NULL, NULL, T0 + S(s), 1);
        tick(d, &b, T0 + S(s));
        WT_EQ_INT(finding(WT_DET_XID, "xid=\"79\"")->cond, WT_COND_HOLD);
    }
    /* Past the hold: cleared. A third 79 fires again. */
    wt_batch_clear(&b);
    base(&b, 0, T0 + S(62));
    put(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "79", NULL, NULL, T0 + S(62), 2);
    tick(d, &b, T0 + S(62));
    WT_EQ_INT(finding(WT_DET_XID, "xid=\"79\"")->cond, WT_COND_FALSE);
    wt_batch_clear(&b);
    base(&b, 0, T0 + S(63));
    put(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "79", NULL, NULL, T0 + S(63), 3);
    tick(d, &b, T0 + S(63));
    WT_EQ_INT(finding(WT_DET_XID, "xid=\"79\"")->cond, WT_COND_TRUE);
    WT_CONTAINS(finding(WT_DET_XID, "xid=\"79\"")->summary, "1 new, 3 since wattage started");
    /* Disabled: nothing. */
    cfg.xid.enabled = false;
    tick(d, &b, T0 + S(64));
    WT_ASSERT(finding(WT_DET_XID, NULL) == NULL);
    wt_batch_free(&b);
    wt_detect_free(d);
}

/* The detectors remember which GPU each place of the snapshot held: when the GPUs change places
 * between ticks, a reading still goes to the GPU its labels name. */
WT_TEST(a_reading_goes_to_its_own_gpu_when_the_gpus_change_places)
{
    struct wt_detect *d = new_detect();
    struct wt_batch b = {0};
    base(&b, 0, T0);
    base(&b, 1, T0);
    put(&b, WT_M_GPU_XID_ERRORS, 1, "xid", "79", NULL, NULL, T0, 1);
    tick(d, &b, T0);
    const __typeof__(found[0]) *f = finding(WT_DET_XID, "xid=\"79\"");
    WT_ASSERT(f != NULL);
    WT_CONTAINS(f->labels, "uuid=\"GPU-test-0001\"");
    /* GPU 1 first now; GPU 0's XID where GPU 1's was; then GPU 0 gone and GPU 1 at its place */
    wt_batch_clear(&b);
    base(&b, 1, T0 + S(1));
    base(&b, 0, T0 + S(1));
    put(&b, WT_M_GPU_XID_ERRORS, 0, "xid", "13", NULL, NULL, T0 + S(1), 1);
    put(&b, WT_M_GPU_XID_ERRORS, 1, "xid", "79", NULL, NULL, T0 + S(1), 1);
    tick(d, &b, T0 + S(1));
    f = finding(WT_DET_XID, "xid=\"13\"");
    WT_ASSERT(f != NULL);
    WT_EQ_STR(f->labels, "gpu=\"0\",uuid=\"GPU-test-0000\",model=\"NVIDIA H200\",xid=\"13\"");
    WT_ASSERT(finding(WT_DET_XID, "uuid=\"GPU-test-0001\",model=\"NVIDIA H200\",xid=\"13\"") ==
              NULL);
    wt_batch_clear(&b);
    base(&b, 1, T0 + S(2));
    put(&b, WT_M_GPU_XID_ERRORS, 1, "xid", "13", NULL, NULL, T0 + S(2), 1);
    tick(d, &b, T0 + S(2));
    f = finding(WT_DET_XID, "uuid=\"GPU-test-0001\",model=\"NVIDIA H200\",xid=\"13\"");
    WT_ASSERT(f != NULL);
    WT_EQ_INT(f->cond, WT_COND_TRUE);
    wt_batch_free(&b);
    wt_detect_free(d);
}

WT_TEST(xid_severity_follows_the_catalog)
{
    static const unsigned int critical[] = {48, 61, 62, 64, 74, 79, 95, 119, 120, 999};
    static const unsigned int warning[] = {13, 31, 43, 45, 63, 92, 94};
    for (size_t i = 0; i < sizeof critical / sizeof critical[0]; i++)
        WT_EQ_INT(wt_detect_xid_severity(critical[i]), WT_SEV_CRITICAL);
    for (size_t i = 0; i < sizeof warning / sizeof warning[0]; i++)
        WT_EQ_INT(wt_detect_xid_severity(warning[i]), WT_SEV_WARNING);
}

WT_TEST(uncorrectable_ecc_volatile_over_zero_or_the_aggregate_rising)
{
    struct wt_detect *d = new_detect();
    struct wt_batch b = {0};
    /* GPU 0: volatile 0, aggregate 4 (history: no alert). GPU 1: volatile 2. */
    for (int s = 0; s < 2; s++) {
        wt_batch_clear(&b);
        for (int g = 0; g < 2; g++) {
            base(&b, g, T0 + S(s));
            put(&b, WT_M_GPU_ECC_ERRORS, g, "type", "corrected", "counter", "volatile", T0 + S(s),
                50);
            put(&b, WT_M_GPU_ECC_ERRORS, g, "type", "uncorrected", "counter", "volatile", T0 + S(s),
                g == 1 ? 2 : 0);
            put(&b, WT_M_GPU_ECC_ERRORS, g, "type", "uncorrected", "counter", "aggregate",
                T0 + S(s), 4);
        }
        tick(d, &b, T0 + S(s));
        WT_EQ_INT(finding(WT_DET_ECC_UNCORRECTABLE, "gpu=\"0\"")->cond, WT_COND_FALSE);
        const __typeof__(found[0]) *f = finding(WT_DET_ECC_UNCORRECTABLE, "gpu=\"1\"");
        WT_EQ_INT(f->cond, WT_COND_TRUE);
        WT_EQ_INT(f->sev, WT_SEV_CRITICAL);
        WT_CONTAINS(f->summary, "2 uncorrectable ECC errors since the driver loaded");
    }
    /* GPU 0 without a volatile count: its aggregate rises, an alert for the hold. */
    wt_batch_clear(&b);
    base(&b, 0, T0 + S(2));
    put(&b, WT_M_GPU_ECC_ERRORS, 0, "type", "uncorrected", "counter", "aggregate", T0 + S(2), 5);
    tick(d, &b, T0 + S(2));
    WT_EQ_INT(finding(WT_DET_ECC_UNCORRECTABLE, "gpu=\"0\"")->cond, WT_COND_TRUE);
    WT_CONTAINS(finding(WT_DET_ECC_UNCORRECTABLE, "gpu=\"0\"")->summary, "1 since wattage started");
    tick(d, &b, T0 + S(2) + WT_DETECT_ECC_HOLD_NS + S(1));
    WT_EQ_INT(finding(WT_DET_ECC_UNCORRECTABLE, "gpu=\"0\"")->cond, WT_COND_FALSE);
    /* A GPU without ECC series: no finding at all. */
    wt_batch_clear(&b);
    base(&b, 3, T0 + S(3));
    tick(d, &b, T0 + S(3));
    WT_ASSERT(finding(WT_DET_ECC_UNCORRECTABLE, "gpu=\"3\"") == NULL);
    wt_batch_free(&b);
    wt_detect_free(d);
}

WT_TEST(a_pending_row_remap_warns_and_a_failed_one_is_critical)
{
    struct wt_detect *d = new_detect();
    struct wt_batch b = {0};
    static const double rows[3][4] = {{0, 0, 0, 0}, {3, 1, 1, 0}, {3, 1, 0, 1}};
    static const char *const kinds[4] = {"correctable", "uncorrectable", "pending", "failure"};
    for (int g = 0; g < 3; g++) {
        base(&b, g, T0);
        for (int k = 0; k < 4; k++)
            put(&b, WT_M_GPU_REMAPPED_ROWS, g, "kind", kinds[k], NULL, NULL, T0, rows[g][k]);
    }
    tick(d, &b, T0);
    WT_EQ_INT(finding(WT_DET_ROW_REMAP, "gpu=\"0\"")->cond, WT_COND_FALSE);
    const __typeof__(found[0]) *f = finding(WT_DET_ROW_REMAP, "gpu=\"1\"");
    WT_EQ_INT(f->cond, WT_COND_TRUE);
    WT_EQ_INT(f->sev, WT_SEV_WARNING);
    WT_CONTAINS(f->summary, "row remap pending (1 rows remapped for uncorrectable errors)");
    f = finding(WT_DET_ROW_REMAP, "gpu=\"2\"");
    WT_EQ_INT(f->cond, WT_COND_TRUE);
    WT_EQ_INT(f->sev, WT_SEV_CRITICAL);
    WT_CONTAINS(f->summary, "row remapping failed");
    wt_batch_free(&b);
    wt_detect_free(d);
}

WT_TEST(pcie_replays_rising_over_the_window_fire_and_clear_when_still)
{
    struct wt_detect *d = new_detect();
    struct wt_batch b = {0};
    cfg.pcie_replays.threshold = 10;
    cfg.pcie_replays.window_ns = S(60);
    /* 0..30 s: steady at 100 (quiet); 30..40 s: +2 a second; then still. */
    enum wt_cond seen[200];
    for (int s = 0; s < 200; s++) {
        double v = s < 30 ? 100 : s < 40 ? 100 + 2 * (s - 30) : 120;
        wt_batch_clear(&b);
        base(&b, 0, T0 + S(s));
        put(&b, WT_M_GPU_PCIE_REPLAYS, 0, NULL, NULL, NULL, NULL, T0 + S(s), v);
        tick(d, &b, T0 + S(s));
        seen[s] = finding(WT_DET_PCIE_REPLAYS, NULL)->cond;
    }
    WT_EQ_INT(seen[29], WT_COND_FALSE);
    WT_EQ_INT(seen[33], WT_COND_HOLD);   /* +6: rising, not yet the threshold */
    WT_EQ_INT(seen[36], WT_COND_TRUE);   /* +12 within the window */
    WT_EQ_INT(seen[80], WT_COND_TRUE);   /* the window still holds the rise */
    WT_EQ_INT(seen[199], WT_COND_FALSE); /* still for more than the window */
    /* A counter that restarts lower is a new baseline, not a rise. */
    wt_batch_clear(&b);
    base(&b, 0, T0 + S(200));
    put(&b, WT_M_GPU_PCIE_REPLAYS, 0, NULL, NULL, NULL, NULL, T0 + S(200), 3);
    tick(d, &b, T0 + S(200));
    WT_EQ_INT(finding(WT_DET_PCIE_REPLAYS, NULL)->cond, WT_COND_FALSE);
    wt_batch_free(&b);
    wt_detect_free(d);
}

WT_TEST(the_health_detectors_have_names_and_config_keys)
{
    WT_EQ_STR(wt_detector_alertname(WT_DET_XID), "GPUXidError");
    WT_EQ_STR(wt_detector_alertname(WT_DET_ECC_UNCORRECTABLE), "GPUUncorrectableECC");
    WT_EQ_STR(wt_detector_alertname(WT_DET_ROW_REMAP), "GPURowRemapPending");
    WT_EQ_STR(wt_detector_alertname(WT_DET_PCIE_REPLAYS), "GPUPCIeReplaysRising");
    static const char yaml[] = "alerts:\n"
                               " detectors:\n"
                               "  xid: {hold: 2m}\n"
                               "  ecc_uncorrectable: false\n"
                               "  row_remap: {enabled: true}\n"
                               "  pcie_replays: {threshold: 50, window: 10m}\n";
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_yaml_parse("t.yaml", yaml, strlen(yaml), &root, &err), 0);
    struct wt_alerts_config c;
    WT_EQ_INT(wt_alerts_config_parse("t.yaml", wt_y_get(root, "alerts"), &c, &err), 0);
    WT_ASSERT(c.xid.enabled);
    WT_EQ_INT(c.xid.hold_ns, S(120));
    WT_ASSERT(!c.ecc_uncorrectable.enabled);
    WT_ASSERT(c.row_remap.enabled);
    WT_NEAR(c.pcie_replays.threshold, 50, 0);
    WT_EQ_INT(c.pcie_replays.window_ns, S(600));
    wt_ynode_free(root);
    static const char bad[] = "alerts:\n detectors:\n  pcie_replays: {window: 0s}\n";
    WT_EQ_INT(wt_yaml_parse("t.yaml", bad, strlen(bad), &root, &err), 0);
    WT_EQ_INT(wt_alerts_config_parse("t.yaml", wt_y_get(root, "alerts"), &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "alerts.detectors.pcie_replays.window");
    wt_ynode_free(root);
}
