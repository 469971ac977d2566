/* SPDX-License-Identifier: MIT */
/*
 * The rolling power means as the daemon publishes them: per GPU and window, the node's sum of
 * GPUs and RAPL packages and DRAM (not cores, not psys: they sit inside or around the package),
 * windows that are not yet half covered left out, and its own slot's batches ignored.
 */
#include <math.h>

#include "audit/power_avg.h"
#include "core/clock.h"
#include "core/reading.h"
#include "readings.h"
#include "runner.h"

#define S WT_NS_PER_S
#define G0 "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\""
#define G1 "gpu=\"1\",uuid=\"GPU-b\",model=\"NVIDIA H200\""

static void add(struct wt_batch *b, int metric, const char *labels, int64_t t, double v)
{
    if (wt_batch_add(b, metric, labels, t, v) != 0)
        wt_test_fail(__FILE__, __LINE__, "batch add");
}

WT_TEST(power_avg_per_gpu_and_node_over_each_window)
{
    struct wt_config cfg = {0};
    cfg.daemon.interval_ns = S;
    struct wt_power_avg *p = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_power_avg_open(&cfg, NULL, &p, &err), 0);
    struct wt_batch b = {0};
    for (int t = 0; t <= 400; t++) { /* GPU 0 at 300 W, GPU 1 at 100 W for 100 s then 500 W */
        wt_batch_clear(&b);
        add(&b, WT_M_GPU_POWER_W, G0, t * S, 300);
        add(&b, WT_M_GPU_POWER_W, G1, t * S, t < 100 ? 100 : 500);
        add(&b, WT_M_CPU_POWER_W, "package=\"0\",domain=\"package\"", t * S, 80);
        add(&b, WT_M_CPU_POWER_W, "package=\"0\",domain=\"dram\"", t * S, 20);
        add(&b, WT_M_CPU_POWER_W, "package=\"0\",domain=\"core\"", t * S, 60);
        add(&b, WT_M_CPU_POWER_W, "package=\"0\",domain=\"psys\"", t * S, 900);
        add(&b, WT_M_GPU_TEMP_C, G0, t * S, 50);
        wt_power_avg_feed(p, "nvml", &b);
    }
    /* a batch from its own slot is not fed back */
    wt_batch_clear(&b);
    add(&b, WT_M_GPU_POWER_W, G0, 401 * S, 1e6);
    wt_power_avg_feed(p, "power_avg", &b);

    struct wt_batch out = {0};
    WT_EQ_INT(wt_power_avg_batch(p, 400 * S, &out), 0);
    WT_NEAR(reading_value(&out, WT_M_GPU_POWER_AVG_W, G0 ",window=\"1m\""), 300, 1e-9);
    WT_NEAR(reading_value(&out, WT_M_GPU_POWER_AVG_W, G1 ",window=\"1m\""), 500, 1e-9);
    /* 5 min over [100, 400]: the step from 100 W is in the second before it */
    WT_NEAR(reading_value(&out, WT_M_GPU_POWER_AVG_W, G1 ",window=\"5m\""), 500, 1e-9);
    /* at 350 s the 5-min window [50, 350] holds the step */
    wt_batch_clear(&out);
    WT_EQ_INT(wt_power_avg_batch(p, 350 * S, &out), 0);
    WT_NEAR(reading_value(&out, WT_M_GPU_POWER_AVG_W, G1 ",window=\"5m\""),
            (100.0 * 49 + 300.0 * 1 + 500.0 * 250) / 300, 1e-9);
    /* 15 min: 400 s covered of 900, under half: no series */
    WT_ASSERT(find_reading(&out, WT_M_GPU_POWER_AVG_W, G1 ",window=\"15m\"") == NULL);
    WT_EQ_INT(count_readings(&out, WT_M_GPU_POWER_AVG_W), 4);
    /* node: 300 + 500 + 80 + 20 (cores and psys are not added again) */
    WT_NEAR(reading_value(&out, WT_M_NODE_POWER_AVG_W, "window=\"1m\""), 900, 1e-9);
    WT_ASSERT(find_reading(&out, WT_M_NODE_POWER_AVG_W, "window=\"15m\"") == NULL);
    WT_EQ_STR(wt_metrics[WT_M_GPU_POWER_AVG_W].name, "wattage_gpu_power_average_watts");
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_power_avg_close(p);
}

WT_TEST(power_avg_a_lost_gpu_is_neither_zero_nor_stretched)
{
    struct wt_config cfg = {0};
    cfg.daemon.interval_ns = S;
    struct wt_power_avg *p = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_power_avg_open(&cfg, NULL, &p, &err), 0);
    struct wt_batch b = {0};
    for (int t = 0; t <= 300; t++) {
        if (t > 200 && t < 260)
            continue; /* lost for a minute */
        wt_batch_clear(&b);
        add(&b, WT_M_GPU_POWER_W, G0, t * S, t <= 200 ? 400 : 200);
        wt_power_avg_feed(p, "nvml", &b);
    }
    struct wt_batch out = {0};
    WT_EQ_INT(wt_power_avg_batch(p, 300 * S, &out), 0);
    /* 1 min [240, 300]: only [260, 300] covered (40 s, over half) at 200 W */
    WT_NEAR(reading_value(&out, WT_M_GPU_POWER_AVG_W, G0 ",window=\"1m\""), 200, 1e-9);
    /* 5 min [0, 300]: 200 s at 400 W and 40 s at 200 W */
    WT_NEAR(reading_value(&out, WT_M_GPU_POWER_AVG_W, G0 ",window=\"5m\""),
            (400.0 * 200 + 200.0 * 40) / 240, 1e-9);
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_power_avg_close(p);
}
