/* SPDX-License-Identifier: MIT */
/*
 * Dark power as the daemon counts it: idle is no process and utilization 0 at both ends of a
 * span; the counter's delta first, power integrated without one; a process, utilization, a lost
 * GPU or a gap stops the count; no process list, no series; the day splits at 00:00 UTC; and the
 * per-day figures read back from a real store across a daemon restart.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/dark.h"
#include "core/clock.h"
#include "core/reading.h"
#include "readings.h"
#include "runner.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define DAY (86400 * S)
#define G0 "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\""
#define G1 "gpu=\"1\",uuid=\"GPU-b\",model=\"NVIDIA H200\""

static void add(struct wt_batch *b, int metric, const char *labels, int64_t t, double v)
{
    if (wt_batch_add(b, metric, labels, t, v) != 0)
        wt_test_fail(__FILE__, __LINE__, "batch add");
}

/* One poll of a GPU: power, counter (e < 0: none), utilization, up. */
static void gpu(struct wt_batch *b, const char *l, int64_t t, double p, double e, double util)
{
    add(b, WT_M_GPU_UP, l, t, 1);
    add(b, WT_M_GPU_POWER_W, l, t, p);
    if (e >= 0)
        add(b, WT_M_GPU_ENERGY_J, l, t, e);
    add(b, WT_M_GPU_UTIL_RATIO, l, t, util);
}

static struct wt_dark *open_dark(void)
{
    struct wt_config cfg = {0};
    cfg.daemon.interval_ns = S;
    struct wt_dark *d = NULL;
    struct wt_err err = {{0}};
    if (wt_dark_open(&cfg, NULL, &d, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "%s", err.msg);
    return d;
}

static void procs2(struct wt_gpu_procs p[2], unsigned n0, unsigned n1)
{
    memset(p, 0, 2 * sizeof *p);
    snprintf(p[0].uuid, sizeof p[0].uuid, "GPU-a");
    p[0].npids = n0;
    p[0].pids[0] = 100;
    snprintf(p[1].uuid, sizeof p[1].uuid, "GPU-b");
    p[1].gpu = 1;
    p[1].npids = n1;
    p[1].pids[0] = 200;
}

WT_TEST(dark_counts_idle_spans_only)
{
    struct wt_dark *d = open_dark();
    struct wt_batch b = {0}, out = {0};
    struct wt_gpu_procs p[2];
    int64_t t0 = 20000 * DAY + 3600 * S; /* 01:00 UTC */
    /* GPU 0: idle at 61 W for 100 s (its counter says 61 J a second although power reads 70:
     * the counter wins); then a process for 20 s; then idle again for 30 s. GPU 1 runs a job
     * at utilization 0 (a process holds it: not idle). */
    double e0 = 5e6;
    for (int s = 0; s <= 150; s++) {
        wt_batch_clear(&b);
        gpu(&b, G0, t0 + s * S, 70, e0, 0);
        gpu(&b, G1, t0 + s * S, 90, -1, 0);
        procs2(p, s > 100 && s <= 120 ? 1 : 0, 1);
        wt_dark_feed(d, "nvml", &b, p, 2, true);
        e0 += 61;
    }
    /* batches of other collectors are not fed */
    wt_batch_clear(&b);
    gpu(&b, G0, t0 + 151 * S, 1e6, 1e12, 0);
    wt_dark_feed(d, "dark", &b, p, 2, true);

    WT_EQ_INT(wt_dark_batch(d, t0 + 150 * S, &out), 0);
    /* [0,100] idle (100 s), the spans touching (100,120] are not, [121,150] idle (29 s) */
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_SECONDS, G0), 129, 1e-9);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_J, G0), 129 * 61.0, 1e-6);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_TODAY_J, G0), 129 * 61.0, 1e-6);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_POWER_W, G0), 61, 1e-9);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE, G0), 1, 0);
    int64_t since = 0;
    WT_ASSERT(wt_dark_idle_since(d, "GPU-a", &since));
    WT_EQ_INT(since, t0 + 121 * S);
    /* GPU 1 is known (it has a list) and never idle: zero, and no idle power level */
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_J, G1), 0, 0);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE, G1), 0, 0);
    WT_ASSERT(find_reading(&out, WT_M_GPU_IDLE_POWER_W, G1) == NULL);
    WT_ASSERT(!wt_dark_idle_since(d, "GPU-b", &since));
    WT_EQ_STR(wt_metrics[WT_M_GPU_IDLE_ENERGY_J].name, "wattage_gpu_idle_energy_joules_total");
    WT_EQ_STR(wt_metrics[WT_M_GPU_IDLE_POWER_W].name, "wattage_gpu_idle_power_watts");
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_dark_close(d);
}

WT_TEST(dark_without_counter_integrates_and_stops_at_gaps_and_utilization)
{
    struct wt_dark *d = open_dark();
    struct wt_batch b = {0}, out = {0};
    struct wt_gpu_procs p[2];
    procs2(p, 0, 0);
    int64_t t0 = 20000 * DAY;
    /* no counter: power 50 then 60 W, trapezoids; a 10-s gap (over 3 intervals) is not
     * counted; utilization 1 % is not idle; a lost GPU breaks the span */
    const struct {
        int s;
        double p, util;
        int up;
    } seq[] = {{0, 50, 0, 1},  {1, 60, 0, 1},     {2, 60, 0, 1},  {12, 60, 0, 1},
               {13, 60, 0, 1}, {14, 60, 0.01, 1}, {15, 60, 0, 1}, {16, 60, 0, 1},
               {17, 0, 0, 0},  {18, 60, 0, 1},    {19, 60, 0, 1}};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        wt_batch_clear(&b);
        if (seq[i].up) {
            gpu(&b, G0, t0 + seq[i].s * S, seq[i].p, -1, seq[i].util);
        } else {
            add(&b, WT_M_GPU_UP, G0, t0 + seq[i].s * S, 0);
        }
        wt_dark_feed(d, "nvml", &b, p, 2, true);
    }
    WT_EQ_INT(wt_dark_batch(d, t0 + 19 * S, &out), 0);
    /* [0,1] 55 J, [1,2] 60, [12,13] 60, [15,16] 60, [18,19] 60 */
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_J, G0), 55 + 4 * 60.0, 1e-9);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_SECONDS, G0), 5, 1e-9);
    /* GPU 1 sent nothing: no series of it */
    WT_ASSERT(find_reading(&out, WT_M_GPU_IDLE_ENERGY_J, G1) == NULL);
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_dark_close(d);
}

WT_TEST(dark_without_a_process_list_has_no_series)
{
    struct wt_dark *d = open_dark();
    struct wt_batch b = {0}, out = {0};
    for (int s = 0; s < 10; s++) {
        wt_batch_clear(&b);
        gpu(&b, G0, 20000 * DAY + s * S, 60, -1, 0);
        wt_dark_feed(d, "nvml", &b, NULL, 0, false);
    }
    WT_EQ_INT(wt_dark_batch(d, 20000 * DAY + 10 * S, &out), 0);
    WT_EQ_INT(out.len, 0);
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_dark_close(d);
}

WT_TEST(dark_day_splits_at_utc_midnight)
{
    struct wt_dark *d = open_dark();
    struct wt_batch b = {0}, out = {0};
    struct wt_gpu_procs p[2];
    procs2(p, 0, 0);
    int64_t mid = 20001 * DAY;
    /* 10 s before midnight to 5 s after, 1 s polls straddling it at half seconds */
    for (int k = 0; k <= 15; k++) {
        wt_batch_clear(&b);
        gpu(&b, G0, mid - 10 * S + S / 2 + k * S, 40, -1, 0);
        wt_dark_feed(d, "nvml", &b, p, 2, true);
    }
    WT_EQ_INT(wt_dark_batch(d, mid + 6 * S, &out), 0);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_J, G0), 15 * 40.0, 1e-9);
    /* after midnight: the half second of the straddling span and 5 whole ones */
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_TODAY_J, G0), 5.5 * 40, 1e-6);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_POWER_W, G0), 40, 1e-9);
    /* the next day with no idle time: today is 0, and no level */
    wt_batch_clear(&out);
    WT_EQ_INT(wt_dark_batch(d, mid + DAY + S, &out), 0);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_TODAY_J, G0), 0, 0);
    WT_ASSERT(find_reading(&out, WT_M_GPU_IDLE_POWER_W, G0) == NULL);
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_dark_close(d);
}

/* A batch in any order, three GPUs, one relabelled (its power reading's model changes while
 * its other readings keep the old labels): each reading still counts for its own GPU. */
WT_TEST(dark_finds_each_gpu_in_any_order_and_after_a_relabel)
{
#define G2 "gpu=\"2\",uuid=\"GPU-c\",model=\"NVIDIA H200\""
#define G2N "gpu=\"2\",uuid=\"GPU-c\",model=\"NVIDIA H200 NVL\""
    struct wt_dark *d = open_dark();
    struct wt_batch b = {0}, out = {0};
    struct wt_gpu_procs p[3];
    memset(p, 0, sizeof p);
    const char *uuid[3] = {"GPU-a", "GPU-b", "GPU-c"};
    for (unsigned i = 0; i < 3; i++) {
        p[i].gpu = i;
        snprintf(p[i].uuid, sizeof p[i].uuid, "%s", uuid[i]);
    }
    const char *l[3] = {G0, G1, G2};
    const double w[3] = {61, 75, 90}; /* each GPU's counter, joules a second */
    int64_t t0 = 20000 * DAY + 3600 * S;
    for (int s = 0; s <= 10; s++) {
        int64_t t = t0 + s * S;
        wt_batch_clear(&b);
        for (int i = 2; i >= 0; i--)
            add(&b, WT_M_GPU_UP, l[i], t, 1);
        for (int i = 0; i < 3; i++)
            add(&b, WT_M_GPU_POWER_W, i == 2 && s >= 5 ? G2N : l[i], t, 500);
        const int order[3] = {1, 0, 2};
        for (int k = 0; k < 3; k++)
            add(&b, WT_M_GPU_ENERGY_J, l[order[k]], t, 1e6 * (order[k] + 1) + w[order[k]] * s);
        for (int i = 0; i < 3; i++)
            add(&b, WT_M_GPU_UTIL_RATIO, l[i], t, 0);
        wt_dark_feed(d, "nvml", &b, p, 3, true);
    }
    WT_EQ_INT(wt_dark_batch(d, t0 + 10 * S, &out), 0);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_J, G0), 10 * 61.0, 1e-6);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_J, G1), 10 * 75.0, 1e-6);
    WT_NEAR(reading_value(&out, WT_M_GPU_IDLE_ENERGY_J, G2N), 10 * 90.0, 1e-6);
    WT_ASSERT(find_reading(&out, WT_M_GPU_IDLE_ENERGY_J, G2) == NULL);
    WT_EQ_INT(out.len, 15); /* three GPUs, five series each */
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_dark_close(d);
#undef G2
#undef G2N
}

WT_TEST(dark_increase_counts_restarts_from_zero)
{
    double v[] = {0, 10, 25, 3, 9, 9, 20};
    /* 25, then a restart at 3 (3 since it), then 17 */
    WT_NEAR(wt_dark_increase(v, 7), 25 + 3 + 17, 1e-12);
    WT_NEAR(wt_dark_increase(v, 1), 0, 0);
    WT_NEAR(wt_dark_increase(v, 0), 0, 0);
}

WT_TEST(dark_days_from_the_store_across_a_restart)
{
    char dir[] = "/tmp/wt-dark-XXXXXX";
    WT_ASSERT(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/w.db", dir);
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    int64_t d0 = 20002 * DAY;
    struct wt_dark *d = open_dark();
    struct wt_batch b = {0}, out = {0};
    struct wt_gpu_procs p[2];
    procs2(p, 0, 0);
    /* day 1: idle at 50 W from 23:00 for 2 h (into day 2) with a restart at 23:30 */
    WT_EQ_INT(wt_store_begin_run(st, "", d0 + 23 * 3600 * S, S, "test"), 0);
    for (int s = 0; s <= 7200; s += 1) {
        int64_t t = d0 + 23 * 3600 * S + s * S;
        if (s == 1800) {
            wt_dark_close(d);
            d = open_dark();
            WT_EQ_INT(wt_store_begin_run(st, "", t, S, "test"), 0);
        }
        wt_batch_clear(&b);
        gpu(&b, G0, t, 50, -1, 0);
        wt_dark_feed(d, "nvml", &b, p, 2, true);
        wt_batch_clear(&out);
        WT_EQ_INT(wt_dark_batch(d, t, &out), 0);
        WT_EQ_INT(wt_store_write(st, "", out.r, out.len), 0);
    }
    struct wt_dark_day *days = NULL;
    size_t n = 0;
    WT_EQ_INT(wt_dark_days(st, d0, d0 + 2 * DAY, &days, &n), 0);
    WT_EQ_INT(n, 2);
    WT_EQ_INT(days[0].day_ns, d0);
    WT_EQ_STR(days[0].gpu, "0");
    WT_EQ_STR(days[0].uuid, "GPU-a");
    /* day 1: 3600 s less the first span after the restart (it has no previous poll) and the
     * one that ends at midnight (its reading is the next day's first); day 2: all 3600 s */
    WT_NEAR(days[0].idle_s, 3600 - 1 - 1, 1e-6);
    WT_NEAR(days[0].energy_j, 50 * (3600 - 2.0), 1e-6);
    WT_EQ_INT(days[1].day_ns, d0 + DAY);
    WT_NEAR(days[1].idle_s, 3600, 1e-6);
    WT_NEAR(days[1].energy_j, 50 * 3600.0, 1e-6);
    free(days);
    /* a window of the other GPU's days only: none */
    WT_EQ_INT(wt_dark_days(st, d0 - 3 * DAY, d0 - DAY, &days, &n), 0);
    WT_EQ_INT(n, 0);
    free(days);
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_dark_close(d);
    wt_store_close(st);
    unlink(path);
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    rmdir(dir);
}
