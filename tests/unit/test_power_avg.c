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

/* The site: the topology's facility_total meters, each at its collector's pace. */
WT_TEST(power_avg_site_sums_the_facility_total_meters_once_each_is_covered)
{
    const char *yaml = "collectors:\n  modbus:\n    interval: 5s\n"
                       "topology:\n  meters:\n"
                       "    - {target: main, point: total, role: facility_total}\n"
                       "    - {target: aux, point: in, role: facility_total}\n"
                       "    - {target: ups, point: out, role: it_total}\n";
    struct wt_config cfg;
    struct wt_err err = {{0}};
    wt_config_defaults(&cfg);
    if (wt_config_load_string("s.yaml", yaml, strlen(yaml), &cfg, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "config: %s", err.msg);
    struct wt_power_avg *p = NULL;
    WT_EQ_INT(wt_power_avg_open(&cfg, NULL, &p, &err), 0);
    struct wt_batch b = {0}, out = {0};
    const char *main_l = "source=\"modbus\",target=\"main\",point=\"total\",kind=\"meter\"";
    const char *aux_l = "source=\"modbus\",target=\"aux\",point=\"in\",kind=\"meter\"";
    const char *ups_l = "source=\"modbus\",target=\"ups\",point=\"out\",kind=\"meter\"";
    for (int t = 0; t <= 400; t += 5) { /* a meter read every 5 s: 3 of its intervals, no gap */
        wt_batch_clear(&b);
        add(&b, WT_M_FAC_POWER_W, main_l, t * S, 100000);
        if (t >= 300) /* aux comes later: 100 s of readings */
            add(&b, WT_M_FAC_POWER_W, aux_l, t * S, 20000);
        add(&b, WT_M_FAC_POWER_W, ups_l, t * S, 70000); /* IT, not the site's total */
        add(&b, WT_M_GPU_POWER_W, G0, t * S, 300);      /* the node's, not the site's */
        wt_power_avg_feed(p, "modbus:main", &b);
    }
    WT_EQ_INT(wt_power_avg_batch(p, 400 * S, &out), 0);
    WT_NEAR(reading_value(&out, WT_M_SITE_POWER_AVG_W, "window=\"1m\""), 120000, 1e-6);
    /* 5 min: aux covers 100 s of 300, under half: no site figure rather than a part of it */
    WT_ASSERT(find_reading(&out, WT_M_SITE_POWER_AVG_W, "window=\"5m\"") == NULL);
    WT_ASSERT(find_reading(&out, WT_M_SITE_POWER_AVG_W, "window=\"15m\"") == NULL);
    /* the facility's power never enters the node's sum (the GPU alone, 5 s apart: a gap) */
    const struct wt_reading *node = find_reading(&out, WT_M_NODE_POWER_AVG_W, "window=\"1m\"");
    WT_ASSERT(node == NULL || fabs(node->value - 300) < 1e-9);
    WT_EQ_STR(wt_metrics[WT_M_SITE_POWER_AVG_W].name, "wattage_site_power_average_watts");
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_power_avg_close(p);
    wt_config_free(&cfg);
}

WT_TEST(power_avg_no_site_without_facility_total_meters)
{
    struct wt_config cfg = {0};
    cfg.daemon.interval_ns = S;
    struct wt_power_avg *p = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_power_avg_open(&cfg, NULL, &p, &err), 0);
    struct wt_batch b = {0}, out = {0};
    for (int t = 0; t <= 100; t++) {
        wt_batch_clear(&b);
        add(&b, WT_M_FAC_POWER_W, "source=\"snmp\",target=\"pdu\",point=\"inlet1\"", t * S, 5000);
        wt_power_avg_feed(p, "snmp:pdu", &b);
    }
    WT_EQ_INT(wt_power_avg_batch(p, 100 * S, &out), 0);
    WT_EQ_INT(count_readings(&out, WT_M_SITE_POWER_AVG_W), 0);
    WT_EQ_INT(count_readings(&out, WT_M_NODE_POWER_AVG_W), 0);
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_power_avg_close(p);
}
