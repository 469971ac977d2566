/* SPDX-License-Identifier: MIT */
/*
 * Each field at its own cadence (collect/cadence.h): the slow timer, and the NVML collector
 * against the fake libnvidia-ml (its call log counts the calls): the slow fields read once per
 * slow interval and published at every poll, read again at once when asked
 * (wt_nvml_slow_refresh, as the capper does after a set) or after an XID, every poll with
 * slow_interval 0; and the table that status shows.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/cadence.h"
#include "collect/nvml.h"
#include "core/clock.h"
#include "core/config.h"
#include "runner.h"

#define S WT_NS_PER_S

static char fake_path[PATH_MAX];

__attribute__((constructor)) static void resolve_fake(void)
{
    if (!realpath(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), fake_path))
        fake_path[0] = '\0';
}

WT_TEST(timer_every_tick_at_zero)
{
    struct wt_slow_timer t = {.interval_ns = 0};
    for (int i = 0; i < 10; i++)
        WT_ASSERT(wt_slow_due(&t, (int64_t)i * S, S));
}

WT_TEST(timer_once_an_interval)
{
    /* 1000 ticks of 1 s, slow every 60 s: at most 1000/60 + 2 reads, the first at the start */
    struct wt_slow_timer t = {.interval_ns = 60 * S};
    int n = 0, first = -1;
    for (int i = 0; i < 1000; i++) {
        /* ticks jitter by up to 30 ms either way, as a loaded machine's do */
        int64_t now = 1000 * S + (int64_t)i * S + ((i * 7919) % 61 - 30) * WT_NS_PER_MS;
        if (wt_slow_due(&t, now, S)) {
            n++;
            if (first < 0)
                first = i;
        }
    }
    WT_EQ_INT(first, 0);
    WT_ASSERT(n <= 1000 / 60 + 2);
    WT_ASSERT(n >= 1000 / 60);
}

WT_TEST(timer_force_and_missed_ticks)
{
    struct wt_slow_timer t = {.interval_ns = 10 * S};
    WT_ASSERT(wt_slow_due(&t, 100 * S, S));
    WT_ASSERT(!wt_slow_due(&t, 101 * S, S));
    wt_slow_force(&t);
    WT_ASSERT(wt_slow_due(&t, 102 * S, S));
    WT_ASSERT(!wt_slow_due(&t, 103 * S, S));
    WT_ASSERT(wt_slow_due(&t, 112 * S, S));
    /* a stop of 100 s: one read, then the next an interval later, not a burst */
    WT_ASSERT(wt_slow_due(&t, 212 * S, S));
    WT_ASSERT(!wt_slow_due(&t, 213 * S, S));
    WT_ASSERT(!wt_slow_due(&t, 221 * S, S));
    WT_ASSERT(wt_slow_due(&t, 222 * S, S));
}

/* Lines of the call log that are exactly fn (the log starts with nvmlInit's line). */
static int calls(const char *fn)
{
    size_t len = 0, fl = strlen(fn);
    char *text = wt_test_read("calls", &len);
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, fn)) != NULL; p += fl)
        n += (p == text || p[-1] == '\n') && p[fl] == '\n';
    free(text);
    return n;
}

/* Readings of metric for gpu 0 in b. */
static int count_metric(const struct wt_batch *b, int metric)
{
    int n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->r[i].metric == metric && strstr(b->r[i].labels, "gpu=\"0\"") != NULL;
    return n;
}

/* The collector on one GPU of the fake, its calls logged, slow fields every slow_ns. */
static void *open_nvml(int64_t slow_ns)
{
    static struct wt_config cfg;
    wt_config_defaults(&cfg);
    cfg.collectors.nvml_slow_interval_ns = slow_ns;
    cfg.collectors.nvml_energy_interval_ns = 0; /* no sub-polls: calls are the polls' */
    cfg.collectors.nvml.interval_ns = S;
    if (!fake_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake NVML is not built: run make first");
    setenv("WATTAGE_NVML_LIBRARY", fake_path, 1);
    setenv("FAKE_NVML_GPUS", "1", 1);
    setenv("FAKE_NVML_CALL_LOG", "calls", 1);
    struct wt_err err = {{0}};
    void *st = NULL;
    int rc = wt_nvml_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

static void poll_n(void *st, int n, struct wt_batch *b, int *limit_readings)
{
    struct wt_err err = {{0}};
    for (int i = 0; i < n; i++) {
        wt_batch_clear(b);
        WT_EQ_INT(wt_nvml_collector.poll(st, wt_now_real_ns(), b, &err), 0);
        *limit_readings += count_metric(b, WT_M_GPU_POWER_LIMIT_W);
    }
}

/* Each slow field's calls so far were n. */
static void slow_calls_were(int n)
{
    WT_EQ_INT(calls("nvmlDeviceGetEnforcedPowerLimit"), n);
    WT_EQ_INT(calls("nvmlDeviceGetPowerManagementLimitConstraints"), n);
    WT_EQ_INT(calls("nvmlDeviceGetRemappedRows"), n);
    WT_EQ_INT(calls("nvmlDeviceGetMigMode"), n);
}

WT_TEST(nvml_slow_fields_read_once_published_always)
{
    void *st = open_nvml(3600 * S);
    struct wt_batch b = {0};
    int limits = 0;
    poll_n(st, 20, &b, &limits);
    /* read at the first poll only; published at each of the 20 */
    slow_calls_were(1);
    WT_EQ_INT(limits, 20);
    WT_EQ_INT(count_metric(&b, WT_M_GPU_POWER_LIMIT_MAX_W), 1);
    /* the fast ones every poll */
    WT_EQ_INT(calls("nvmlDeviceGetPowerUsage"), 20);
    WT_EQ_INT(calls("nvmlDeviceGetTemperature"), 20);

    /* what the capper does after a set: read at the next poll, once */
    wt_nvml_slow_refresh();
    poll_n(st, 5, &b, &limits);
    slow_calls_were(2);
    WT_EQ_INT(limits, 25);

    /* status's table */
    const char *f[16];
    size_t n = 0;
    int64_t slow_ns = 0;
    WT_ASSERT(wt_cadence_slow_fields("nvml", f, 16, &n, &slow_ns));
    WT_EQ_INT(slow_ns, 3600 * S);
    bool limit = false, remap = false, power = false;
    for (size_t i = 0; i < n && i < 16; i++) {
        limit |= strcmp(f[i], "power_limit") == 0;
        remap |= strcmp(f[i], "remapped_rows") == 0;
        power |= strcmp(f[i], "power") == 0;
    }
    WT_ASSERT(limit && remap && !power);
    wt_nvml_collector.close(st);
    WT_ASSERT(!wt_cadence_slow_fields("nvml", f, 16, &n, &slow_ns));
    wt_batch_free(&b);
}

WT_TEST(nvml_slow_interval_zero_reads_every_tick)
{
    int limits = 0;
    struct wt_batch b = {0};
    void *st = open_nvml(0);
    poll_n(st, 6, &b, &limits);
    slow_calls_were(6);
    WT_EQ_INT(limits, 6);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(nvml_limit_changed_elsewhere_seen_at_the_slow_read)
{
    /* another tool's `nvidia-smi -pl` (the fake's limits file): the published limit stays
     * until the slow read, then is the new one */
    FILE *f = fopen("limits", "we");
    WT_ASSERT(f != NULL);
    fclose(f);
    char path[PATH_MAX];
    WT_ASSERT(realpath("limits", path) != NULL);
    setenv("FAKE_NVML_LIMITS_FILE", path, 1);
    void *st = open_nvml(3600 * S);
    struct wt_batch b = {0};
    int limits = 0;
    poll_n(st, 2, &b, &limits);
    f = fopen("limits", "ae");
    WT_ASSERT(f != NULL);
    fprintf(f, "0 450\n");
    fclose(f);
    poll_n(st, 2, &b, &limits);
    double w = -1;
    for (size_t i = 0; i < b.len; i++)
        if (b.r[i].metric == WT_M_GPU_POWER_LIMIT_W)
            w = b.r[i].value;
    WT_NEAR(w, 700, 1e-9);
    wt_nvml_slow_refresh();
    poll_n(st, 1, &b, &limits);
    for (size_t i = 0; i < b.len; i++)
        if (b.r[i].metric == WT_M_GPU_POWER_LIMIT_W)
            w = b.r[i].value;
    WT_NEAR(w, 450, 1e-9);
    WT_EQ_INT(limits, 5);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
    unsetenv("FAKE_NVML_LIMITS_FILE");
}
