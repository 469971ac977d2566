/* SPDX-License-Identifier: MIT */
/* The SQLite store against real SQLite files: writes, the writer thread, energy windows at counter
 * edges, across resets and gaps, rollups and pruning. */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/health.h"
#include "runner.h"
#include "serve/expo.h"
#include "store/query.h"
#include "store/store.h"

#define S WT_NS_PER_S
/* every stored reading: raw rows and those compacted into chunks */
#define ALL_READINGS                                                                               \
    "SELECT (SELECT count(*) FROM readings) + (SELECT coalesce(sum(n), 0) FROM chunks)"
/* A minute-aligned origin far in the past, so retention tests choose "now" freely. */
#define T0 (1700000000LL * S - (1700000000LL * S) % WT_MINUTE_NS)

static const char *gpu0 = "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\"";
/* How the integrated series was stored before it had a name of its own: method last. */
static const char *gpu0_legacy =
    "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\",method=\"integrated\"";

static struct wt_store *open_store(const char *name)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/%s", wt_test_dir(), name);
    int rc = wt_store_open(path, NULL, &s, &err);
    if (rc)
        wt_test_fail(__FILE__, __LINE__, "open: %s", err.msg);
    return s;
}

static struct wt_reading rd(int metric, const char *labels, int64_t t, double v)
{
    struct wt_reading r = {.t_ns = t, .value = v, .metric = (uint16_t)metric};
    snprintf(r.labels, sizeof r.labels, "%s", labels);
    return r;
}

/* Writes a counter series: value at T0 + i*step_s is f(i). */
static void write_counter(struct wt_store *s, const char *labels, int n, double step_s, double w)
{
    struct wt_reading *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++)
        r[i] = rd(WT_M_GPU_ENERGY_J, labels, T0 + (int64_t)(i * step_s * S), 1000 + w * i * step_s);
    WT_EQ_INT(wt_store_write(s, "", r, (size_t)n), 0);
    free(r);
}

static struct wt_series_info series_of(struct wt_store *s, const char *sel)
{
    struct wt_series_info *si = NULL, out;
    size_t n = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_store_series(s, sel, false, &si, &n, &err), 0);
    WT_EQ_INT(n, 1);
    out = si[0];
    free(si);
    return out;
}

static void energy(struct wt_store *s, const char *sel, int64_t a, int64_t b, int flags, double *e,
                   double *cov)
{
    struct wt_run_list runs = {0};
    struct wt_series_info si = series_of(s, sel);
    WT_EQ_INT(wt_runs_load(s, &runs), 0);
    WT_EQ_INT(wt_store_series_energy(s, &si, &runs, a, b, flags, e, cov), 0);
    wt_runs_free(&runs);
}

static char sel_buf[512];
static const char *sel(const char *labels)
{
    snprintf(sel_buf, sizeof sel_buf, "wattage_gpu_energy_joules_total{%s}", labels);
    return sel_buf;
}

static const char *sel_integrated(const char *labels)
{
    snprintf(sel_buf, sizeof sel_buf, "wattage_gpu_energy_integrated_joules_total{%s}", labels);
    return sel_buf;
}

WT_TEST(write_and_read_back)
{
    struct wt_store *s = open_store("a.db");
    struct wt_reading r[3] = {rd(WT_M_GPU_POWER_W, gpu0, T0, 100.5),
                              rd(WT_M_GPU_POWER_W, gpu0, T0 + S, 101.5),
                              rd(WT_M_GPU_TEMP_C, gpu0, T0, 40)};
    WT_EQ_INT(wt_store_write(s, "", r, 3), 0);
    /* the same reading again is left as it is */
    r[0].value = 999;
    WT_EQ_INT(wt_store_write(s, "", r, 1), 0);
    struct wt_series_info si = series_of(s, "wattage_gpu_power_watts{gpu=\"0\"}");
    WT_EQ_INT(si.kind, WT_SK_GAUGE);
    struct wt_point *p = NULL;
    size_t n = 0;
    WT_EQ_INT(wt_store_points(s, &si, T0, T0 + 10 * S, 0, &p, &n), 0);
    WT_EQ_INT(n, 2);
    WT_NEAR(p[0].v, 100.5, 0);
    WT_NEAR(p[1].v, 101.5, 0);
    WT_EQ_INT(p[1].t_ns, T0 + S);
    free(p);
    /* downsampled: one point, the mean */
    WT_EQ_INT(wt_store_points(s, &si, T0, T0 + 10 * S, 10 * S, &p, &n), 0);
    WT_EQ_INT(n, 1);
    WT_NEAR(p[0].v, 101.0, 1e-12);
    free(p);
    wt_store_close(s);

    /* reopened: the series is interned once */
    s = open_store("a.db");
    WT_EQ_INT(wt_store_write(s, "", &r[2], 1), 0);
    sqlite3_stmt *q;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), "SELECT count(*) FROM series", -1, &q, NULL), 0);
    WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
    WT_EQ_INT(sqlite3_column_int(q, 0), 2);
    sqlite3_finalize(q);
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), "PRAGMA journal_mode", -1, &q, NULL), 0);
    WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
    WT_EQ_STR((const char *)sqlite3_column_text(q, 0), "wal");
    sqlite3_finalize(q);
    wt_store_close(s);
}

WT_TEST(series_kinds)
{
    WT_EQ_INT(wt_series_kind_of("wattage_gpu_energy_joules_total", gpu0), WT_SK_HWCOUNTER);
    WT_EQ_INT(wt_series_kind_of("wattage_gpu_energy_integrated_joules_total", gpu0),
              WT_SK_INTEGRATED);
    WT_EQ_INT(wt_series_kind_of("wattage_gpu_energy_joules_total", gpu0_legacy), WT_SK_INTEGRATED);
    WT_EQ_INT(wt_series_kind_of("wattage_cpu_energy_joules_total", "package=\"0\""), WT_SK_COUNTER);
    WT_EQ_INT(wt_series_kind_of("wattage_gpu_power_watts", gpu0), WT_SK_GAUGE);
}

WT_TEST(creates_directory_and_refuses_missing)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/deep/er/w.db", wt_test_dir());
    struct wt_store_opts o = {.create = false};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), -ENOENT);
    WT_CONTAINS(err.msg, "no store at");
    WT_EQ_INT(wt_store_open(path, NULL, &s, &err), 0);
    wt_store_close(s);
    struct stat st;
    snprintf(path, sizeof path, "%s/deep/er", wt_test_dir());
    WT_EQ_INT(stat(path, &st), 0);
    WT_EQ_INT(st.st_mode & 0777, 0750);
    /* a file where the directory should be */
    snprintf(path, sizeof path, "%s/file", wt_test_dir());
    FILE *f = fopen(path, "w");
    fclose(f);
    snprintf(path, sizeof path, "%s/file/w.db", wt_test_dir());
    WT_ASSERT(wt_store_open(path, NULL, &s, &err) < 0);
    WT_CONTAINS(err.msg, "cannot create the store's directory");
}

WT_TEST(energy_at_counter_edges)
{
    struct wt_store *s = open_store("e.db");
    write_counter(s, gpu0, 11, 1.0, 300); /* 300 W, readings at T0..T0+10 s */
    double e, c;
    /* whole span */
    energy(s, sel(gpu0), T0, T0 + 10 * S, 0, &e, &c);
    WT_NEAR(e, 3000, 1e-6);
    WT_NEAR(c, 10, 1e-9);
    /* edges between readings: interpolated */
    energy(s, sel(gpu0), T0 + S / 4, T0 + 2 * S + S / 2, 0, &e, &c);
    WT_NEAR(e, 300 * 2.25, 1e-6);
    WT_NEAR(c, 2.25, 1e-9);
    /* a window inside one segment */
    energy(s, sel(gpu0), T0 + 3 * S + S / 10, T0 + 3 * S + S / 5, 0, &e, &c);
    WT_NEAR(e, 30, 1e-6);
    /* a window sticking out on both sides: only the stored span is covered */
    energy(s, sel(gpu0), T0 - 5 * S, T0 + 15 * S, 0, &e, &c);
    WT_NEAR(e, 3000, 1e-6);
    WT_NEAR(c, 10, 1e-9);
    /* entirely before the data */
    energy(s, sel(gpu0), T0 - 5 * S, T0 - S, 0, &e, &c);
    WT_NEAR(e, 0, 0);
    WT_NEAR(c, 0, 0);
    wt_store_close(s);
}

WT_TEST(energy_across_reset_and_restart_gap)
{
    struct wt_store *s = open_store("r.db");
    const char *cpu = "package=\"0\",domain=\"package\"";
    struct wt_reading r[8];
    /* GPU hardware counter: 100 W for 4 s, the daemon stops at +4 s, starts at +10 s (the counter
     * kept counting: 100 W all along), then the driver reloads (counter back to ~0) at +20 s */
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "test"), 0);
    for (int i = 0; i <= 4; i++)
        r[i] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + i * S, 5000 + 100.0 * i);
    WT_EQ_INT(wt_store_write(s, "", r, 5), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 + 10 * S - S / 2, S, "test"), 0);
    r[0] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + 10 * S, 6000);
    r[1] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + 15 * S, 6500);
    r[2] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + 20 * S, 6); /* reset */
    r[3] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + 25 * S, 506);
    /* a RAPL counter kept by the daemon: restarts, so +4..+10 is a gap even though it grew */
    r[4] = rd(WT_M_CPU_ENERGY_J, cpu, T0, 100);
    r[5] = rd(WT_M_CPU_ENERGY_J, cpu, T0 + 4 * S, 140);
    r[6] = rd(WT_M_CPU_ENERGY_J, cpu, T0 + 10 * S, 900);
    r[7] = rd(WT_M_CPU_ENERGY_J, cpu, T0 + 14 * S, 940);
    WT_EQ_INT(wt_store_write(s, "", r, 8), 0);

    double e, c;
    /* across the restart: the hardware counter spans it */
    energy(s, sel(gpu0), T0 + 2 * S, T0 + 12 * S, 0, &e, &c);
    WT_NEAR(e, 1000, 1e-6);
    WT_NEAR(c, 10, 1e-9);
    /* across the reset: 15..20 is a gap (new baseline), never negative */
    energy(s, sel(gpu0), T0 + 10 * S, T0 + 25 * S, 0, &e, &c);
    WT_NEAR(e, 500 + 500, 1e-6);
    WT_NEAR(c, 10, 1e-9);
    energy(s, sel(gpu0), T0 + 16 * S, T0 + 19 * S, 0, &e, &c);
    WT_NEAR(e, 0, 0);
    WT_NEAR(c, 0, 0);
    /* the RAPL counter across the restart: a gap of 6 s */
    energy(s, "wattage_cpu_energy_joules_total{domain=\"package\"}", T0, T0 + 14 * S, 0, &e, &c);
    WT_NEAR(e, 40 + 40, 1e-6);
    WT_NEAR(c, 8, 1e-9);

    /* the same through wt_store_energy, with the coverage ratio */
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_store_energy(s, T0, T0 + 14 * S, 0, &rows, &n, &err), 0);
    WT_EQ_INT(n, 2);
    WT_EQ_STR(rows[0].s.metric, "wattage_gpu_energy_joules_total");
    WT_NEAR(rows[0].energy_j, 1400, 1e-6);
    WT_NEAR(rows[0].coverage, 1, 1e-9);
    WT_NEAR(rows[1].coverage, 8.0 / 14, 1e-9);
    free(rows);
    WT_ASSERT(wt_store_energy(s, T0, T0, 0, &rows, &n, &err) == -EINVAL);
    wt_store_close(s);
}

WT_TEST(integrated_gap_and_counter_first)
{
    struct wt_store *s = open_store("i.db");
    struct wt_reading r[8];
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "test"), 0);
    /* integrated series: 1 s readings, then a 10 s hole (> 3 intervals) */
    r[0] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, T0, 0);
    r[1] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, T0 + S, 200);
    r[2] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, T0 + 2 * S, 400);
    r[3] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, T0 + 12 * S, 400);
    r[4] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, T0 + 13 * S, 600);
    WT_EQ_INT(wt_store_write(s, "", r, 5), 0);
    double e, c;
    energy(s, sel_integrated(gpu0), T0, T0 + 13 * S, 0, &e, &c);
    WT_NEAR(e, 600, 1e-6);
    WT_NEAR(c, 3, 1e-9);

    /* no hardware counter: the integrated series is chosen */
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_store_energy(s, T0, T0 + 13 * S, 0, &rows, &n, &err), 0);
    WT_EQ_INT(n, 1);
    WT_ASSERT(rows[0].chosen);
    WT_EQ_STR(rows[0].method, "integrated");
    free(rows);
    /* with a hardware counter covering the window, the counter is chosen */
    r[0] = rd(WT_M_GPU_ENERGY_J, gpu0, T0, 10);
    r[1] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + 13 * S, 2610);
    WT_EQ_INT(wt_store_write(s, "", r, 2), 0);
    WT_EQ_INT(wt_store_energy(s, T0, T0 + 13 * S, 0, &rows, &n, &err), 0);
    WT_EQ_INT(n, 2);
    int chosen = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].chosen) {
            chosen++;
            WT_EQ_STR(rows[i].method, "counter");
            WT_NEAR(rows[i].energy_j, 2600, 1e-6);
        }
    }
    WT_EQ_INT(chosen, 1);
    free(rows);
    wt_store_close(s);
}

/*
 * A counter that stops mid-window (frozen, or not answering) while the integrated series goes
 * on: over a window the counter covers only part of, the integrated series is the GPU's figure
 * (exact: 400 W x the window), and says the counter's coverage; over a window the counter covers
 * whole, the counter; where neither covers more than the other (a window that starts before
 * both), the counter.
 */
WT_TEST(auto_falls_back_to_integrated_where_the_counter_stops)
{
    struct wt_store *s = open_store("stop.db");
    struct wt_reading r[16];
    size_t k = 0;
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "test"), 0);
    for (int i = 0; i <= 6; i++)
        r[k++] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, T0 + i * S, 400.0 * i);
    for (int i = 0; i <= 2; i++)
        r[k++] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + i * S, 5000 + 400.0 * i);
    WT_EQ_INT(wt_store_write(s, "", r, k), 0);

    struct {
        int64_t a, b;
        const char *method;
        double energy_j, coverage, counter_coverage; /* counter_coverage < 0: not partial */
    } cases[] = {
        {T0, T0 + 5 * S, "integrated", 2000, 1, 0.4},
        {T0 + S / 2, T0 + 5 * S + S / 2, "integrated", 2000, 1, 0.3},
        {T0, T0 + 2 * S, "counter", 800, 1, -1},
        {T0 + S / 4, T0 + 2 * S, "counter", 700, 1, -1},
        {T0 - 2 * S, T0 + 2 * S, "counter", 800, 0.5, -1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct wt_energy_row *rows = NULL;
        size_t n = 0;
        struct wt_err err = {{0}};
        WT_EQ_INT(wt_store_energy(s, cases[c].a, cases[c].b, 0, &rows, &n, &err), 0);
        WT_EQ_INT(n, 2);
        int chosen = 0;
        for (size_t i = 0; i < n; i++) {
            if (!rows[i].chosen)
                continue;
            chosen++;
            WT_EQ_STR(rows[i].method, cases[c].method);
            WT_NEAR(rows[i].energy_j, cases[c].energy_j, 1e-6);
            WT_NEAR(rows[i].coverage, cases[c].coverage, 1e-9);
            WT_ASSERT(fabs(rows[i].energy_j - cases[c].energy_j) <= rows[i].uncertainty_j + 1e-6);
            WT_EQ_INT(rows[i].counter_partial, cases[c].counter_coverage >= 0);
            if (cases[c].counter_coverage >= 0)
                WT_NEAR(rows[i].counter_coverage, cases[c].counter_coverage, 1e-9);
        }
        WT_EQ_INT(chosen, 1);
        free(rows);
    }
    wt_store_close(s);
}

/* The rule itself, on covered seconds. */
WT_TEST(counter_first_rule)
{
    WT_ASSERT(wt_energy_counter_first(5, 1, 5));        /* both whole: the counter */
    WT_ASSERT(wt_energy_counter_first(5, 1, 4));        /* the counter covers more */
    WT_ASSERT(wt_energy_counter_first(2, 0.4, 2));      /* the same part: the counter */
    WT_ASSERT(wt_energy_counter_first(2, 0.4, 2.0005)); /* within the tolerance */
    WT_ASSERT(!wt_energy_counter_first(2, 0.4, 5));     /* stopped: integrated */
    WT_ASSERT(!wt_energy_counter_first(0, 0, 0));       /* nothing either way: integrated */
    WT_ASSERT(!wt_energy_counter_first(0, 0, 3));
}

/*
 * A store written before the integrated estimate had its own name: opening it renames the series
 * (labels without method), keeps its readings and kind, and a reader's second open changes
 * nothing. The counter beside it is untouched.
 */
WT_TEST(legacy_integrated_series_are_renamed_on_open)
{
    char path[512];
    snprintf(path, sizeof path, "%s/legacy.db", wt_test_dir());
    struct wt_store *s = open_store("legacy.db");
    struct wt_reading r[4];
    const char *nolabels = "method=\"integrated\"";
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "test"), 0);
    r[0] = rd(WT_M_GPU_ENERGY_J, gpu0_legacy, T0, 0);
    r[1] = rd(WT_M_GPU_ENERGY_J, gpu0_legacy, T0 + S, 300);
    r[2] = rd(WT_M_GPU_ENERGY_J, gpu0, T0, 5000);
    r[3] = rd(WT_M_GPU_ENERGY_J, nolabels, T0, 7);
    WT_EQ_INT(wt_store_write(s, "", r, 4), 0);
    wt_store_close(s);

    for (int pass = 0; pass < 2; pass++) {
        s = open_store("legacy.db");
        sqlite3_stmt *q = NULL;
        WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s),
                                     "SELECT metric, labels, kind, (SELECT count(*) FROM readings "
                                     "WHERE series=series.id) FROM series ORDER BY id",
                                     -1, &q, NULL),
                  SQLITE_OK);
        WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
        WT_EQ_STR((const char *)sqlite3_column_text(q, 0),
                  "wattage_gpu_energy_integrated_joules_total");
        WT_EQ_STR((const char *)sqlite3_column_text(q, 1), gpu0);
        WT_EQ_INT(sqlite3_column_int(q, 2), WT_SK_INTEGRATED);
        WT_EQ_INT(sqlite3_column_int(q, 3), 2 + pass);
        WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
        WT_EQ_STR((const char *)sqlite3_column_text(q, 0), "wattage_gpu_energy_joules_total");
        WT_EQ_STR((const char *)sqlite3_column_text(q, 1), gpu0);
        WT_EQ_INT(sqlite3_column_int(q, 2), WT_SK_HWCOUNTER);
        WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
        WT_EQ_STR((const char *)sqlite3_column_text(q, 0),
                  "wattage_gpu_energy_integrated_joules_total");
        WT_EQ_STR((const char *)sqlite3_column_text(q, 1), "");
        WT_EQ_INT(sqlite3_step(q), SQLITE_DONE);
        sqlite3_finalize(q);
        double e, c;
        energy(s, sel_integrated(gpu0), T0, T0 + S, 0, &e, &c);
        WT_NEAR(e, 300, 1e-9);
        /* new readings of the integrated series land in the renamed one */
        r[0] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, T0 + (2 + pass) * S, 600 + 300 * pass);
        WT_EQ_INT(wt_store_write(s, "", r, 1), 0);
        energy(s, sel_integrated(gpu0), T0, T0 + (2 + pass) * S, 0, &e, &c);
        WT_NEAR(e, 600 + 300 * pass, 1e-9);
        wt_store_close(s);
    }
}

/* Counter with varying power: v(t) = sum of a sine-ish profile; 1 s readings for 3 hours. */
static void write_profile(struct wt_store *s, int n)
{
    struct wt_reading *r = calloc((size_t)n, sizeof *r);
    double v = 0;
    for (int i = 0; i < n; i++) {
        double p = 300 + 200 * sin(i / 97.0) + (i % 7) * 3;
        v += p;
        r[i] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + 500 * WT_NS_PER_MS + (int64_t)i * S, v);
    }
    WT_EQ_INT(wt_store_write(s, "", r, (size_t)n), 0);
    free(r);
}

static void maintain_all(struct wt_store *s, int64_t now)
{
    bool more = true;
    for (int i = 0; i < 10000 && more; i++)
        WT_EQ_INT(wt_store_maintain(s, now, 5000, &more), 0);
    WT_ASSERT(!more);
}

static int64_t count(struct wt_store *s, const char *sql)
{
    sqlite3_stmt *q;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), sql, -1, &q, NULL), 0);
    WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

WT_TEST(rollups_give_the_same_answer_after_pruning)
{
    struct wt_store *s = open_store("p.db");
    const int n = 3 * 3600;
    write_profile(s, n);
    int64_t a = T0 + 1234 * WT_NS_PER_MS * 10, b = T0 + 9876 * S + 333 * WT_NS_PER_MS;
    int64_t am = T0 + 5 * WT_MINUTE_NS, bm = T0 + 170 * WT_MINUTE_NS;
    double raw_e, raw_c, raw_em, raw_cm, e, c;
    energy(s, sel(gpu0), a, b, WT_Q_RAW_ONLY, &raw_e, &raw_c);
    energy(s, sel(gpu0), am, bm, WT_Q_RAW_ONLY, &raw_em, &raw_cm);
    WT_ASSERT(raw_e > 1e6);

    /* rollups, nothing pruned yet (retention 7 d from "now" = the data's time) */
    maintain_all(s, T0 + n * S);
    WT_EQ_INT(count(s, ALL_READINGS), n);
    WT_ASSERT(count(s, "SELECT count(*) FROM rollups") >= 179);
    struct wt_series_info si = series_of(s, sel(gpu0));
    WT_EQ_INT(si.rolled_to, T0 + 179 * WT_MINUTE_NS); /* last reading at 179:59.5 */
    energy(s, sel(gpu0), a, b, 0, &e, &c);
    WT_NEAR(e, raw_e, raw_e * 1e-12);
    WT_NEAR(c, raw_c, 1e-6);

    /* the rollup holds min/max/mean/last of its minute */
    sqlite3_stmt *q;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), "SELECT n, min, max, last FROM rollups WHERE t=?",
                                 -1, &q, NULL),
              0);
    sqlite3_bind_int64(q, 1, T0 + 10 * WT_MINUTE_NS);
    WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
    WT_EQ_INT(sqlite3_column_int(q, 0), 60);
    WT_ASSERT(sqlite3_column_double(q, 1) < sqlite3_column_double(q, 2));
    WT_NEAR(sqlite3_column_double(q, 3), sqlite3_column_double(q, 2), 0);
    sqlite3_finalize(q);

    /* 8 days later the raw readings are pruned (in small steps); rollups answer */
    maintain_all(s, T0 + 8LL * 86400 * S);
    /* a chunk goes whole: the one that holds the last reading of a rolled minute stays */
    WT_ASSERT(count(s, ALL_READINGS) <= 15 * 60 + 61);
    energy(s, sel(gpu0), am, bm, 0, &e, &c);
    WT_NEAR(e, raw_em, raw_em * 1e-12);
    WT_NEAR(c, raw_cm, 1e-6);
    /* edges inside pruned minutes are prorated: close, not exact */
    energy(s, sel(gpu0), a, b, 0, &e, &c);
    WT_NEAR(e, raw_e, raw_e * 1e-3);
    WT_NEAR(c, raw_c, 1.0);
    wt_store_close(s);

    /* rollups past their retention go too */
    s = open_store("p.db");
    maintain_all(s, T0 + 500LL * 86400 * S);
    WT_EQ_INT(count(s, "SELECT count(*) FROM rollups"), 0);
    wt_store_close(s);
}

/*
 * A window that begins before the series' first reading, in the minute that holds it: the
 * rollup of that minute holds only what came after the first reading, so the time before it
 * has no energy (it used to be prorated from the rollup, then counted again from the raw
 * readings: 50.4 kJ against 29.3 kJ in a fleet test).
 */
WT_TEST(rollups_do_not_count_the_time_before_a_series_began)
{
    struct wt_store *s = open_store("b.db");
    const int n = 600;
    struct wt_reading *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) /* 250 W from T0 + 40.5 s */
        r[i] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + 40500 * WT_NS_PER_MS + (int64_t)i * S, 250.0 * i);
    WT_EQ_INT(wt_store_write(s, "", r, (size_t)n), 0);
    free(r);
    double raw_e, raw_c, e, c;
    int64_t a = T0 + 10 * S, b = T0 + 5 * WT_MINUTE_NS + 10 * S;
    energy(s, sel(gpu0), a, b, WT_Q_RAW_ONLY, &raw_e, &raw_c);
    WT_NEAR(raw_e, 250.0 * (b - (T0 + 40500 * WT_NS_PER_MS)) / S, 1e-6);
    maintain_all(s, T0 + n * S);
    WT_ASSERT(series_of(s, sel(gpu0)).rolled_to > T0 + 5 * WT_MINUTE_NS);
    energy(s, sel(gpu0), a, b, 0, &e, &c);
    WT_NEAR(e, raw_e, raw_e * 1e-12);
    WT_NEAR(c, raw_c, 1e-6);
    /* a window wholly inside the first minute, before and across the first reading */
    energy(s, sel(gpu0), T0, T0 + 50 * S, 0, &e, &c);
    WT_NEAR(e, 250.0 * 9.5, 1e-6);
    WT_NEAR(c, 9.5, 1e-6);
    wt_store_close(s);
}

WT_TEST(rollups_of_a_counter_across_a_restart)
{
    /* the hardware counter spans a 5-minute daemon stop: the empty minutes get their share */
    struct wt_store *s = open_store("x.db");
    struct wt_reading r[200];
    int k = 0;
    WT_EQ_INT(wt_store_begin_run(s, "", T0, S, "test"), 0);
    for (int i = 0; i < 90; i++)
        r[k++] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + i * S, 100.0 * i);
    WT_EQ_INT(wt_store_write(s, "", r, (size_t)k), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 + 395 * S, S, "test"), 0);
    k = 0;
    for (int i = 400; i < 500; i++)
        r[k++] = rd(WT_M_GPU_ENERGY_J, gpu0, T0 + i * S, 100.0 * i);
    WT_EQ_INT(wt_store_write(s, "", r, (size_t)k), 0);
    double raw_e, raw_c, e, c;
    energy(s, sel(gpu0), T0 + 30 * S, T0 + 470 * S, WT_Q_RAW_ONLY, &raw_e, &raw_c);
    WT_NEAR(raw_e, 44000, 1e-6);
    WT_NEAR(raw_c, 440, 1e-9);
    maintain_all(s, T0 + 1000 * S);
    energy(s, sel(gpu0), T0 + 30 * S, T0 + 470 * S, 0, &e, &c);
    WT_NEAR(e, raw_e, 1e-6);
    WT_NEAR(c, raw_c, 1e-6);
    wt_store_close(s);
}

WT_TEST(writer_thread_flushes_sink_batches)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/w.db", wt_test_dir());
    struct wt_store_opts o = {.flush_ns = 50 * WT_NS_PER_MS, .queue_cap = 100, .create = true};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0, S, "test"), 0);
    WT_EQ_INT(wt_store_writer_start(s), 0);
    struct wt_batch b = {0};
    for (int i = 0; i < 10; i++)
        WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, gpu0, T0 + i * S, i), 0);
    wt_store_sink(s, "nvml", &b);
    /* readers see the flushed batch while the writer runs */
    struct wt_store *rdr = NULL;
    struct wt_store_opts ro = {.create = false};
    WT_EQ_INT(wt_store_open(path, &ro, &rdr, &err), 0);
    int64_t n = 0;
    for (int i = 0; i < 100 && n < 10; i++) {
        usleep(20000);
        n = count(rdr, ALL_READINGS);
    }
    WT_EQ_INT(n, 10);
    /* a full queue drops and counts, never blocks */
    wt_batch_clear(&b);
    for (int i = 0; i < 150; i++)
        WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, gpu0, T0 + (100 + i) * S, i), 0);
    wt_store_sink(s, "nvml", &b);
    WT_EQ_INT(wt_store_dropped(s), 50);
    wt_store_close(s); /* flushes what is queued */
    WT_EQ_INT(count(rdr, ALL_READINGS), 110);
    WT_EQ_INT(count(rdr, "SELECT last_ns FROM runs"), T0 + 199 * S);
    wt_store_close(rdr);
    wt_batch_free(&b);
}

/* Waits (up to 10 s) until the writer's stats satisfy cond. */
#define WAIT_STATS(s, st, cond)                                                                    \
    do {                                                                                           \
        for (int i_ = 0; i_ < 500; i_++) {                                                         \
            wt_store_stats(s, &st);                                                                \
            if (cond)                                                                              \
                break;                                                                             \
            usleep(20000);                                                                         \
        }                                                                                          \
        if (!(cond))                                                                               \
            wt_test_fail(__FILE__, __LINE__, "timed out waiting for %s", #cond);                   \
    } while (0)

static int synced(struct timex *tx)
{
    tx->status = 0;
    return TIME_OK;
}

/*
 * A full database (SQLite's own SQLITE_FULL, from PRAGMA max_page_count, the same error a full
 * disk gives): the writer keeps the readings in memory, reports "store" to readiness and counts
 * on its families; once there is room every buffered reading is written. A small buffer drops
 * the rest and counts it. The full-disk CLI test does the same on a real filled tmpfs.
 */
WT_TEST(a_full_database_buffers_then_writes_everything)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    struct wt_store_stats st;
    struct wt_health_reason why[8];
    struct wt_expo_family fam;
    /* Recent times: maintenance prunes raw readings past the retention, which T0 is. */
    const int64_t t0 = wt_minute_floor(wt_now_real_ns()) - 7200 * S;
    snprintf(path, sizeof path, "%s/full.db", wt_test_dir());
    struct wt_store_opts o = {
        .flush_ns = 20 * WT_NS_PER_MS, .buffer_readings = 3000, .create = true};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", t0, S, "test"), 0);
    struct wt_reading r[10];
    for (int i = 0; i < 10; i++)
        r[i] = rd(WT_M_GPU_POWER_W, gpu0, t0 + i * S, i);
    WT_EQ_INT(wt_store_write(s, "", r, 10), 0);
    /* no page more than it has now */
    char sql[256];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count=%lld",
             (long long)count(s, "PRAGMA page_count"));
    WT_EQ_INT(sqlite3_exec(wt_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    wt_health_reset();
    wt_health_set_adjtimex(synced); /* this host's clock is not the subject */
    WT_EQ_INT(wt_store_writer_start(s), 0);
    struct wt_batch b = {0};
    for (int i = 0; i < 2000; i++)
        WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, gpu0, t0 + (100 + i) * S, i), 0);
    wt_store_sink(s, "nvml", &b);
    WAIT_STATS(s, st, st.failing && st.write_errors > 0);
    WT_EQ_INT(st.queued, 2000);
    WT_EQ_U64(st.dropped, 0);
    WT_EQ_INT(wt_health_collect(NULL, why, 8) >= 1, 1);
    WT_EQ_STR(why[0].component, "store");
    WT_CONTAINS(why[0].message, "writes failing: ");
    WT_CONTAINS(why[0].message, "database or disk is full");
    WT_EQ_INT(wt_store_family(s, 1, &fam), 0); /* wattage_store_write_errors_total */
    WT_EQ_STR(fam.name, "wattage_store_write_errors_total");
    WT_ASSERT(fam.n == 1 && fam.s[0].value >= 1);
    free(fam.s);
    /* more than the buffer holds: the rest is dropped and counted */
    wt_batch_clear(&b);
    for (int i = 0; i < 1500; i++)
        WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, gpu0, t0 + (5000 + i) * S, i), 0);
    wt_store_sink(s, "nvml", &b);
    WAIT_STATS(s, st, st.dropped == 500);
    WT_EQ_INT(st.queued, 3000);
    WT_EQ_INT(wt_store_family(s, 0, &fam), 0);
    WT_EQ_STR(fam.name, "wattage_store_readings_dropped_total");
    WT_NEAR(fam.s[0].value, 500, 0);
    free(fam.s);
    /* room again: everything buffered is written, readiness clears */
    WT_EQ_INT(sqlite3_exec(wt_store_db(s), "PRAGMA max_page_count=1000000000", NULL, NULL, NULL),
              SQLITE_OK);
    WAIT_STATS(s, st, !st.failing && st.queued == 0);
    WT_ASSERT(st.last_flush_ns > 0);
    WT_ASSERT(st.db_bytes > 0);
    WT_EQ_INT(wt_health_collect(NULL, why, 8) == 0 || strcmp(why[0].component, "store") != 0, 1);
    wt_store_close(s);
    struct wt_store *rdr = NULL;
    struct wt_store_opts ro = {.create = false};
    WT_EQ_INT(wt_store_open(path, &ro, &rdr, &err), 0);
    WT_EQ_INT(count(rdr, ALL_READINGS), 10 + 3000);
    /* what was stored before is still there (raw or compacted: read it back) */
    struct wt_series_info pw = series_of(rdr, "wattage_gpu_power_watts");
    struct wt_point_buf pb = {0};
    WT_EQ_INT(wt_store_read(rdr, pw.id, INT64_MIN, t0 + 10 * S - 1, 0, 0, &pb), 0);
    WT_EQ_INT(pb.n, 10);
    free(pb.p);
    wt_store_close(rdr);
    wt_batch_free(&b);
    wt_health_reset();
    wt_health_set_adjtimex(NULL);
}

/*
 * The writer finds a reading's series at its place in its collector's batch (issue 49): a GPU
 * that goes while another comes at the same place, a label whose value changes, GPUs in another
 * order, metrics swapped at their places, a GPU more (a longer batch) and back. Every reading
 * must be stored under its own series: a cache keyed by place alone stores tick 3's GPU 2 as
 * GPU 1, and the rest likewise. In rows and in packed ticks.
 */
struct placed {
    int metric, gpu;
    const char *model;
};

static void push_point(struct wt_point_buf *b, int64_t t, double v)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->p = realloc(b->p, b->cap * sizeof *b->p);
        WT_ASSERT(b->p != NULL);
    }
    b->p[b->n++] = (struct wt_point){t, v};
}

/* Every reading of the series sl, against want (n of them: none, no series). */
static void series_holds(struct wt_store *s, const char *sl, const struct wt_point_buf *want)
{
    struct wt_series_info *si = NULL;
    struct wt_point_buf pb = {0};
    struct wt_err err = {{0}};
    size_t n = 0;
    WT_EQ_INT(wt_store_series(s, sl, false, &si, &n, &err), 0);
    WT_EQ_INT(n, want->n ? 1 : 0);
    if (n)
        WT_EQ_INT(wt_store_read(s, si[0].id, INT64_MIN, INT64_MAX, 0, 0, &pb), 0);
    WT_EQ_INT(pb.n, want->n);
    for (size_t i = 0; i < pb.n && i < want->n; i++) {
        WT_EQ_INT(pb.p[i].t_ns, want->p[i].t_ns);
        WT_NEAR(pb.p[i].v, want->p[i].v, 0);
    }
    free(si);
    free(pb.p);
}

static void placed_labels(const struct placed *p, char *buf, size_t n)
{
    char g[8], u[16];
    snprintf(g, sizeof g, "%d", p->gpu);
    snprintf(u, sizeof u, "GPU-%c", 'a' + p->gpu);
    WT_EQ_INT(wt_labels(buf, n, "gpu", g, "uuid", u, "model", p->model, NULL), 0);
}

WT_TEST(a_changed_layout_stores_every_reading_under_its_own_series)
{
    const char *h200 = "NVIDIA H200", *nvl = "NVIDIA H200 NVL";
    enum { P = WT_M_GPU_POWER_W, C = WT_M_GPU_TEMP_C };
    /* each tick's batch of the collector "nvml", in order */
    const struct placed t1[] = {{P, 0, h200}, {C, 0, h200}, {P, 1, h200}, {C, 1, h200}, {0}};
    const struct placed t3[] = {{P, 0, h200}, {C, 0, h200}, {P, 2, h200}, {C, 2, h200}, {0}};
    const struct placed t4[] = {{P, 0, nvl}, {C, 0, nvl}, {P, 2, h200}, {C, 2, h200}, {0}};
    const struct placed t5[] = {{P, 2, h200}, {C, 2, h200}, {P, 0, nvl}, {C, 0, nvl}, {0}};
    const struct placed t6[] = {{C, 2, h200}, {P, 2, h200}, {C, 0, nvl}, {P, 0, nvl}, {0}};
    const struct placed t7[] = {{P, 0, nvl},  {C, 0, nvl},  {P, 1, h200}, {C, 1, h200},
                                {P, 2, h200}, {C, 2, h200}, {0}};
    const struct placed t8[] = {{P, 0, nvl}, {C, 0, nvl}, {P, 2, h200}, {C, 2, h200}, {0}};
    const struct placed *ticks[8] = {t1, t1, t3, t4, t5, t6, t7, t8};
    for (int mode = 0; mode < 2; mode++) {
        char path[512], lb[WT_LABELS_LEN];
        struct wt_store *s = NULL;
        struct wt_err err = {{0}};
        struct wt_store_stats st;
        snprintf(path, sizeof path, "%s/place%d.db", wt_test_dir(), mode);
        struct wt_store_opts o = {
            .flush_ns = 20 * WT_NS_PER_MS, .create = true, .ticks = mode == 1};
        WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
        WT_EQ_INT(wt_store_begin_run(s, "", T0, S, "test"), 0);
        WT_EQ_INT(wt_store_writer_start(s), 0);
        struct wt_batch b = {0};
        int total = 0;
        for (int k = 0; k < 8; k++) {
            wt_batch_clear(&b);
            for (const struct placed *p = ticks[k]; p->model; p++) {
                placed_labels(p, lb, sizeof lb);
                /* the value says which series at which tick it belongs to */
                double v = 1000 * (k + 1) + 10 * p->gpu + (p->metric == P) + 2 * (p->model == nvl);
                WT_EQ_INT(wt_batch_add(&b, p->metric, lb, T0 + k * S, v), 0);
                total++;
            }
            wt_store_sink(s, "nvml", &b);
            /* another collector's batch of the same length between: places are per collector */
            wt_batch_clear(&b);
            for (int i = 0; i < 4; i++) {
                char pk[4] = {(char)('0' + i), 0};
                WT_EQ_INT(wt_labels(lb, sizeof lb, "package", pk, "domain",
                                    k % 2 ? "dram" : "package", NULL),
                          0);
                WT_EQ_INT(wt_batch_add(&b, WT_M_CPU_POWER_W, lb, T0 + k * S, 5000 + 100 * k + i),
                          0);
                total++;
            }
            wt_store_sink(s, "rapl", &b);
            WAIT_STATS(s, st, st.queued == 0); /* a flush a tick: places carry over */
        }
        wt_store_close(s);
        wt_batch_free(&b);

        struct wt_store *rdr = NULL;
        struct wt_store_opts ro = {.create = false};
        WT_EQ_INT(wt_store_open(path, &ro, &rdr, &err), 0);
        /* raw rows, chunks (maintenance may have compacted some) and packed ticks */
        WT_EQ_INT(count(rdr, ALL_READINGS) + count(rdr, "SELECT coalesce(sum(n), 0) FROM ticks"),
                  total);
        /* each series holds exactly the readings made for it */
        const int metrics[] = {P, C};
        const char *models[] = {h200, nvl};
        char sl[512];
        for (int g = 0; g < 3; g++) {
            for (int m = 0; m < 2; m++) {
                for (int md = 0; md < 2; md++) {
                    struct placed want = {metrics[m], g, models[md]};
                    struct wt_point_buf exp = {0};
                    for (int k = 0; k < 8; k++)
                        for (const struct placed *p = ticks[k]; p->model; p++)
                            if (p->metric == want.metric && p->gpu == g && p->model == want.model)
                                push_point(&exp, T0 + k * S,
                                           1000 * (k + 1) + 10 * g + (p->metric == P) +
                                               2 * (p->model == nvl));
                    placed_labels(&want, lb, sizeof lb);
                    snprintf(sl, sizeof sl, "%s{%s}", wt_metrics[want.metric].name, lb);
                    series_holds(rdr, sl, &exp);
                    free(exp.p);
                }
            }
        }
        for (int i = 0; i < 4; i++) {
            for (int d = 0; d < 2; d++) {
                struct wt_point_buf exp = {0};
                for (int k = d; k < 8; k += 2)
                    push_point(&exp, T0 + k * S, 5000 + 100 * k + i);
                snprintf(sl, sizeof sl, "%s{package=\"%d\",domain=\"%s\"}",
                         wt_metrics[WT_M_CPU_POWER_W].name, i, d ? "dram" : "package");
                series_holds(rdr, sl, &exp);
                free(exp.p);
            }
        }
        wt_store_close(rdr);
    }
}
