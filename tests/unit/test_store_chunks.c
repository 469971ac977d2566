/* SPDX-License-Identifier: MIT */
/*
 * Store v2: the chunk codec (exact round trips of every kind of value and spacing, malformed
 * blobs refused), compaction of closed spans into chunks with every reader seeing the same
 * readings before and after, and the in-place upgrade of a schema 1 store made by the schema 1
 * code (tests/fixtures/store-v1).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "runner.h"
#include "store/chunk.h"
#include "store/query.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S - (1700000000LL * S) % WT_MINUTE_NS)

static uint64_t bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* Encodes and decodes n points; every time and every value's bits come back. */
static size_t round_trip(const struct wt_point *p, size_t n)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    struct wt_point_buf out = {0};
    WT_EQ_INT(wt_chunk_encode(p, n, &blob, &len), 0);
    WT_EQ_INT(wt_chunk_count(blob, len), (int64_t)n);
    WT_EQ_INT(wt_chunk_decode(blob, len, &out), 0);
    WT_EQ_INT(out.n, n);
    for (size_t i = 0; i < n; i++) {
        WT_EQ_INT(out.p[i].t_ns, p[i].t_ns);
        if (bits(out.p[i].v) != bits(p[i].v))
            wt_test_fail(__FILE__, __LINE__, "point %zu: %.17g came back as %.17g", i, p[i].v,
                         out.p[i].v);
    }
    /* every truncation of a blob is refused, never read past */
    for (size_t cut = 0; cut < len; cut++) {
        struct wt_point_buf bad = {0};
        WT_ASSERT(wt_chunk_decode(blob, cut, &bad) != 0);
        WT_EQ_INT(bad.n, 0);
        free(bad.p);
    }
    free(out.p);
    free(blob);
    return len;
}

WT_TEST(chunk_round_trips_exactly)
{
    static struct wt_point p[4000];
    /* a single point, and two */
    p[0] = (struct wt_point){T0, 312.456};
    round_trip(p, 1);
    p[1] = (struct wt_point){T0 + 1, -0.0};
    round_trip(p, 2);
    /* values that are not decimals: NaN (two payloads), infinities, -0, subnormals, huge */
    const double odd[] = {NAN,
                          -NAN,
                          INFINITY,
                          -INFINITY,
                          -0.0,
                          4.9e-324,
                          1.7976931348623157e308,
                          -1e300,
                          1e-300,
                          0.1,
                          1.0 / 3,
                          -2.5,
                          9007199254740993.0,
                          1e16,
                          -1e17,
                          123456789.123456789};
    size_t no = sizeof odd / sizeof *odd;
    for (size_t i = 0; i < no; i++)
        p[i] = (struct wt_point){T0 + (int64_t)i * 7919, odd[i]};
    round_trip(p, no);
    /* irregular spacing, negative times, big jumps */
    int64_t t = -5 * S;
    for (int i = 0; i < 500; i++) {
        t += 1 + (int64_t)((i * 2654435761u) % 100000000u) + (i % 50 == 0 ? 86400LL * S : 0);
        p[i] = (struct wt_point){t, (double)(i % 13) - 6};
    }
    round_trip(p, 500);
    /* extreme times */
    p[0] = (struct wt_point){INT64_MIN, 1};
    p[1] = (struct wt_point){0, 2};
    p[2] = (struct wt_point){INT64_MAX, 3};
    round_trip(p, 3);
    /* watts with milliwatt resolution at a steady 1 s: small */
    unsigned seed = 1;
    int64_t mw = 300000;
    for (int i = 0; i < 4000; i++) {
        seed = seed * 1103515245u + 12345u;
        mw += (int64_t)(seed >> 16) % 2001 - 1000;
        p[i] = (struct wt_point){T0 + (int64_t)i * S, (double)mw / 1000.0};
    }
    size_t len = round_trip(p, 4000);
    WT_ASSERT(len < 4000 * 3); /* well under 3 bytes a reading */
    /* a constant at steady ticks: almost nothing */
    for (int i = 0; i < 4000; i++)
        p[i] = (struct wt_point){T0 + (int64_t)i * S, 45.0};
    WT_ASSERT(round_trip(p, 4000) < 100);
}

WT_TEST(chunk_encode_refuses_bad_input_and_decode_bad_blobs)
{
    struct wt_point p[2] = {{T0, 1}, {T0, 2}};
    uint8_t *blob = NULL;
    size_t len = 0;
    WT_EQ_INT(wt_chunk_encode(p, 0, &blob, &len), -EINVAL);
    WT_EQ_INT(wt_chunk_encode(p, 2, &blob, &len), -EINVAL); /* equal times */
    const uint8_t junk[][6] = {
        {0}, {9, 1, 0, 0, 0, 0}, {WT_CHUNK_PLAIN, 0}, {WT_CHUNK_PLAIN, 1, 2, 7}};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        struct wt_point_buf out = {0};
        WT_ASSERT(wt_chunk_decode(junk[i], sizeof junk[i], &out) != 0);
        WT_EQ_INT(out.n, 0);
        free(out.p);
    }
}

static struct wt_reading rd(int metric, const char *labels, int64_t t, double v)
{
    struct wt_reading r = {.t_ns = t, .value = v, .metric = (uint16_t)metric};
    snprintf(r.labels, sizeof r.labels, "%s", labels);
    return r;
}

static int64_t count(struct wt_store *s, const char *sql)
{
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), sql, -1, &q, NULL), SQLITE_OK);
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
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

static void maintain_all(struct wt_store *s, int64_t now)
{
    bool more = true;
    for (int i = 0; i < 1000 && more; i++)
        WT_EQ_INT(wt_store_maintain(s, now, 20000, &more), 0);
    WT_ASSERT(!more);
}

WT_TEST(compaction_keeps_every_reading_and_every_answer)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/c.db", wt_test_dir());
    struct wt_store_opts o = {.retention_raw_ns = 3650LL * 86400 * S, .create = true};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "daemon"), 0);
    const char *l = "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\"";
    enum { N = 3 * 3600 };
    static struct wt_reading r[2 * N];
    for (int i = 0; i < N; i++) {
        int64_t t = T0 + (int64_t)i * S + (i % 3) * 1000;
        r[2 * i] = rd(WT_M_GPU_ENERGY_J, l, t, 1000 + 0.3 * i + (i % 5) * 0.001);
        r[2 * i + 1] = rd(WT_M_GPU_UTIL_RATIO, l, t, (double)i / 7.0);
    }
    WT_EQ_INT(wt_store_write(s, "", r, 2 * N), 0);
    struct wt_series_info e = series_of(s, "wattage_gpu_energy_joules_total");
    struct wt_series_info u = series_of(s, "wattage_gpu_utilization_ratio");
    struct wt_run_list runs = {0};
    WT_EQ_INT(wt_runs_load(s, &runs), 0);
    const int64_t win[][2] = {{T0 + 17 * S + 3, T0 + 2 * 3600 * S + 11},
                              {T0 - 100 * S, T0 + 4 * 3600 * S},
                              {T0 + 900 * S, T0 + 900 * S + 1}};
    double be[3], bc[3];
    struct wt_point *before = NULL;
    size_t nbefore = 0;
    WT_EQ_INT(wt_store_points(s, &u, T0, T0 + N * S, 0, &before, &nbefore), 0);
    WT_EQ_INT(nbefore, N);
    for (int w = 0; w < 3; w++)
        WT_EQ_INT(wt_store_series_energy(s, &e, &runs, win[w][0], win[w][1], WT_Q_RAW_ONLY, &be[w],
                                         &bc[w]),
                  0);

    /* SQLite's page cache of a store connection is bounded: 512 KiB, not its default 2000 */
    WT_EQ_INT(count(s, "PRAGMA cache_size"), -512);
    /* an hour after the last reading: all but the last open span is closed */
    maintain_all(s, T0 + N * S + 3600 * S);
    WT_ASSERT(count(s, "SELECT count(*) FROM chunks") >= 2 * 11);
    WT_EQ_INT(count(s, "SELECT count(*) FROM readings"), 0);
    WT_EQ_INT(count(s, "SELECT sum(n) FROM chunks"), 2 * N);
    WT_ASSERT(count(s, "SELECT sum(length(data)) FROM chunks") < 2 * N * 4);

    struct wt_point *after = NULL;
    size_t nafter = 0;
    e = series_of(s, "wattage_gpu_energy_joules_total");
    u = series_of(s, "wattage_gpu_utilization_ratio");
    WT_EQ_INT(wt_store_points(s, &u, T0, T0 + N * S, 0, &after, &nafter), 0);
    WT_EQ_INT(nafter, nbefore);
    for (size_t i = 0; i < nafter; i++) {
        WT_EQ_INT(after[i].t_ns, before[i].t_ns);
        WT_ASSERT(bits(after[i].v) == bits(before[i].v));
    }
    for (int w = 0; w < 3; w++) {
        double ae, ac;
        WT_EQ_INT(
            wt_store_series_energy(s, &e, &runs, win[w][0], win[w][1], WT_Q_RAW_ONLY, &ae, &ac), 0);
        WT_NEAR(ae, be[w], 1e-9 * (1 + fabs(be[w])));
        WT_NEAR(ac, bc[w], 1e-9);
        /* and through the rollups */
        WT_EQ_INT(wt_store_series_energy(s, &e, &runs, win[w][0], win[w][1], 0, &ae, &ac), 0);
        WT_NEAR(ae, be[w], 1e-6 * (1 + fabs(be[w])));
    }
    int64_t first, last;
    WT_EQ_INT(wt_store_bounds(s, u.id, &first, &last), 1);
    WT_EQ_INT(first, before[0].t_ns);
    WT_EQ_INT(last, before[nbefore - 1].t_ns);
    uint64_t pending;
    int64_t oldest;
    WT_EQ_INT(wt_store_count_after(s, u.id, before[100].t_ns, &pending, &oldest), 0);
    WT_EQ_INT(pending, N - 101);
    WT_EQ_INT(oldest, before[101].t_ns);
    struct wt_point_buf pb = {0};
    WT_EQ_INT(wt_store_read(s, u.id, before[899].t_ns, INT64_MAX, WT_RD_AFTER, 5, &pb), 0);
    WT_EQ_INT(pb.n, 5);
    WT_EQ_INT(pb.p[0].t_ns, before[900].t_ns);
    WT_EQ_INT(pb.p[4].t_ns, before[904].t_ns);
    free(pb.p);

    /* a reading written again into a compacted span stays as it was stored first */
    struct wt_reading again = rd(WT_M_GPU_UTIL_RATIO, l, before[10].t_ns, -1);
    WT_EQ_INT(wt_store_write(s, "", &again, 1), 0);
    free(after);
    WT_EQ_INT(wt_store_points(s, &u, T0, T0 + N * S, 0, &after, &nafter), 0);
    WT_EQ_INT(nafter, nbefore);
    WT_ASSERT(bits(after[10].v) == bits(before[10].v));
    maintain_all(s, T0 + N * S + 3600 * S);
    WT_EQ_INT(count(s, "SELECT count(*) FROM readings"), 0);
    WT_EQ_INT(count(s, "SELECT sum(n) FROM chunks"), 2 * N);
    int64_t newest;
    WT_EQ_INT(wt_store_newest(s, &newest), 1);
    WT_EQ_INT(newest, before[nbefore - 1].t_ns);
    free(after);
    free(before);
    wt_runs_free(&runs);
    wt_store_close(s);
}

/* The answers of store-v1.expect, from a store opened (and so upgraded) by this code. */
static void check_expect(struct wt_store *s, const char *what)
{
    static const char *const sels[] = {
        "wattage_gpu_energy_joules_total{gpu=\"0\"}", "wattage_gpu_energy_joules_total{gpu=\"1\"}",
        "wattage_gpu_power_watts{gpu=\"0\"}",         "wattage_gpu_temperature_celsius{gpu=\"1\"}",
        "wattage_gpu_utilization_ratio{gpu=\"0\"}",   "wattage_gpu_energy_joules_total{gpu=\"7\"}",
    };
    const int64_t win[][2] = {{T0 - 10 * S, T0 + 800 * S},
                              {T0 + 30 * S + 123, T0 + 700 * S - 77},
                              {T0 + 200 * S, T0 + 400 * S},
                              {T0 + 355 * S, T0 + 365 * S + 1}};
    FILE *f = fopen(wt_test_src_path("tests/fixtures/store-v1/store-v1.expect"), "r");
    WT_ASSERT(f != NULL);
    struct wt_run_list runs = {0};
    WT_EQ_INT(wt_runs_load(s, &runs), 0);
    char kind[16];
    int lines = 0;
    size_t q, w;
    while (fscanf(f, "%15s %zu %zu", kind, &q, &w) == 3) {
        WT_ASSERT(q < 6 && w < 4);
        struct wt_series_info si = series_of(s, sels[q]);
        if (strcmp(kind, "energy") == 0) {
            double xe, xc, e, c;
            WT_EQ_INT(fscanf(f, "%lf %lf", &xe, &xc), 2);
            WT_EQ_INT(wt_store_series_energy(s, &si, &runs, win[w][0], win[w][1], 0, &e, &c), 0);
            if (fabs(e - xe) > 1e-9 * (1 + fabs(xe)) || fabs(c - xc) > 1e-9)
                wt_test_fail(__FILE__, __LINE__,
                             "%s: energy %zu %zu: %.17g %.17g, v1 said %.17g %.17g", what, q, w, e,
                             c, xe, xc);
        } else {
            int step;
            size_t xn;
            double xs;
            WT_EQ_INT(fscanf(f, "%d %zu %lf", &step, &xn, &xs), 3);
            struct wt_point *p = NULL;
            size_t np = 0;
            WT_EQ_INT(
                wt_store_points(s, &si, win[w][0], win[w][1], step ? WT_MINUTE_NS : 0, &p, &np), 0);
            double sum = 0;
            for (size_t i = 0; i < np; i++)
                sum += p[i].v + (double)(p[i].t_ns - T0) / S;
            if (np != xn || fabs(sum - xs) > 1e-9 * (1 + fabs(xs)))
                wt_test_fail(__FILE__, __LINE__,
                             "%s: points %zu %zu %d: %zu sum %.17g, v1 said %zu %.17g", what, q, w,
                             step, np, sum, xn, xs);
            free(p);
        }
        lines++;
    }
    fclose(f);
    WT_EQ_INT(lines, 6 * 4 * 3);
    wt_runs_free(&runs);
}

WT_TEST(compaction_gives_its_buffers_back)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/b.db", wt_test_dir());
    struct wt_store_opts o = {.retention_raw_ns = 3650LL * 86400 * S, .create = true};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "daemon"), 0);
    /* an energy counter read every 200 ms (nvml.energy_interval) for 2 hours: 36000 points */
    enum { N = 5 * 7200 };
    static struct wt_reading r[N];
    for (int i = 0; i < N; i++)
        r[i] = rd(WT_M_GPU_ENERGY_J, "gpu=\"0\",uuid=\"GPU-a\"", T0 + (int64_t)i * S / 5,
                  1000 + 0.1 * i);
    WT_EQ_INT(wt_store_write(s, "", r, N), 0);
    maintain_all(s, T0 + 3 * 3600 * S);
    WT_EQ_INT(count(s, "SELECT sum(n) FROM chunks"), N);
    /* done, the passes' buffers went back: at most 4096 points kept in each of the four */
    WT_ASSERT(wt_store_maint_buffered(s) <= 4 * 4096 * sizeof(struct wt_point));
    wt_store_close(s);
}

WT_TEST(schema_1_store_is_upgraded_in_place_nothing_lost)
{
    char path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/v1.db", wt_test_dir());
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'",
             wt_test_src_path("tests/fixtures/store-v1/store-v1.db"), path);
    WT_EQ_INT(system(cmd), 0);
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    /* a long retention: what the fixture's retention pruned is gone, nothing more goes */
    struct wt_store_opts o = {.retention_raw_ns = 3650LL * 86400 * S, .create = false};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(count(s, "PRAGMA user_version"), 4);
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks"), 0);
    int64_t rows = count(s, "SELECT count(*) FROM readings");
    WT_EQ_INT(rows, 4590);
    check_expect(s, "upgraded");
    /* the writer's maintenance at the fixture's "now" compacts every closed span */
    maintain_all(s, T0 + 12 * WT_MINUTE_NS + 20 * WT_MINUTE_NS);
    WT_EQ_INT(count(s, "SELECT count(*) FROM readings"), 0);
    WT_EQ_INT(count(s, "SELECT sum(n) FROM chunks"), rows);
    /* compaction writes each chunk's summary */
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks WHERE e IS NULL OR cov IS NULL OR v0 IS NULL"),
              0);
    check_expect(s, "compacted");
    wt_store_close(s);
    /* and again on a second open: nothing more to upgrade */
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    check_expect(s, "reopened");
    wt_store_close(s);
}

/* ---- schema 3: chunk summaries ---- */

#define MIN WT_MINUTE_NS

/* The fixture's selectors and windows (tests/fixtures/store-v2/make_v2.c). */
static const char *const v2_sels[] = {
    "wattage_gpu_energy_joules_total{gpu=\"0\"}",
    "wattage_gpu_energy_joules_total{gpu=\"1\"}",
    "wattage_gpu_energy_integrated_joules_total{gpu=\"0\"}",
    "wattage_cpu_energy_joules_total{package=\"0\"}",
    "wattage_gpu_power_watts{gpu=\"0\"}",
    "wattage_gpu_energy_joules_total{gpu=\"7\"}",
};
static const int64_t v2_win[][2] = {
    {T0 - 10 * S, T0 + 90 * MIN},
    {T0 + 7 * MIN + 300000000, T0 + 77 * MIN + 123},
    {T0 + 19 * MIN, T0 + 21 * MIN},
    {T0 + 39 * MIN + 50 * S, T0 + 40 * MIN + 10 * S},
    {T0 + 30 * MIN, T0 + 81 * MIN + 30 * S},
    {T0 + 2 * MIN, T0 + 60 * MIN},
};

/* Relative closeness of two energies (and coverage to 1 ns a second) */
static void near_rel(const char *what, double got, double want, double tol)
{
    if (fabs(got - want) > tol * (1 + fabs(want)))
        wt_test_fail(__FILE__, __LINE__, "%s: %.17g, expected %.17g", what, got, want);
}

/* The answers of store-v2.expect, and every window the same with summaries as decoded. */
static void check_expect_at(struct wt_store *s, const char *expect, const char *what)
{
    FILE *f = fopen(wt_test_src_path(expect), "r");
    WT_ASSERT(f != NULL);
    struct wt_run_list runs = {0};
    WT_EQ_INT(wt_runs_load(s, &runs), 0);
    char kind[16], msg[160];
    int lines = 0;
    size_t q, w;
    while (fscanf(f, "%15s %zu %zu", kind, &q, &w) == 3) {
        WT_ASSERT(q < 6 && w < 6);
        struct wt_series_info si = series_of(s, v2_sels[q]);
        if (strcmp(kind, "energy") == 0) {
            int fl;
            double xe, xc, e, c, de, dc;
            WT_EQ_INT(fscanf(f, "%d %lf %lf", &fl, &xe, &xc), 3);
            int flags = fl ? WT_Q_RAW_ONLY : 0;
            WT_EQ_INT(
                wt_store_series_energy(s, &si, &runs, v2_win[w][0], v2_win[w][1], flags, &e, &c),
                0);
            snprintf(msg, sizeof msg, "%s: energy %zu %zu %d", what, q, w, fl);
            /* a gauge's "energy" by the rollups is their raw edges only, and moves with them
             * (maintenance here rolls minutes the fixture had not): kept as schema 2 gave it
             * until then */
            if (si.kind != WT_SK_GAUGE || strcmp(what, "upgraded") == 0) {
                near_rel(msg, e, xe, 1e-9);
                near_rel(msg, c, xc, 1e-9);
            }
            /* the same window decoding every chunk */
            WT_EQ_INT(wt_store_series_energy(s, &si, &runs, v2_win[w][0], v2_win[w][1],
                                             flags | WT_Q_DECODE, &de, &dc),
                      0);
            snprintf(msg, sizeof msg, "%s: energy %zu %zu %d, decoded", what, q, w, fl);
            near_rel(msg, e, de, 1e-9);
            near_rel(msg, c, dc, 1e-12);
        } else {
            int step;
            size_t xn;
            double xs;
            WT_EQ_INT(fscanf(f, "%d %zu %lf", &step, &xn, &xs), 3);
            struct wt_point *p = NULL;
            size_t np = 0;
            WT_EQ_INT(wt_store_points(s, &si, v2_win[w][0], v2_win[w][1], step ? WT_MINUTE_NS : 0,
                                      &p, &np),
                      0);
            double sum = 0;
            for (size_t i = 0; i < np; i++)
                sum += p[i].v + (double)(p[i].t_ns - T0) / S;
            if (np != xn || fabs(sum - xs) > 1e-9 * (1 + fabs(xs)))
                wt_test_fail(__FILE__, __LINE__,
                             "%s: points %zu %zu %d: %zu sum %.17g, v2 said %zu %.17g", what, q, w,
                             step, np, sum, xn, xs);
            free(p);
        }
        lines++;
    }
    fclose(f);
    WT_EQ_INT(lines, 6 * 6 * 4);
    wt_runs_free(&runs);
}

static void check_expect_v2(struct wt_store *s, const char *what)
{
    check_expect_at(s, "tests/fixtures/store-v2/store-v2.expect", what);
}

WT_TEST(schema_2_store_is_upgraded_in_place_and_summaries_filled)
{
    char path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/v2.db", wt_test_dir());
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'",
             wt_test_src_path("tests/fixtures/store-v2/store-v2.db"), path);
    WT_EQ_INT(system(cmd), 0);
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.retention_raw_ns = 3650LL * 86400 * S, .create = false};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(count(s, "PRAGMA user_version"), 4);
    int64_t chunks = count(s, "SELECT count(*) FROM chunks");
    int64_t in_chunks = count(s, "SELECT sum(n) FROM chunks");
    int64_t rows = count(s, "SELECT count(*) FROM readings");
    WT_EQ_INT(chunks, 32);
    WT_EQ_INT(in_chunks, 27000);
    WT_EQ_INT(rows, 8882);
    /* upgraded: nothing summarized yet, every answer as schema 2 gave it (chunks decoded) */
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks WHERE e IS NULL"), chunks);
    check_expect_v2(s, "upgraded");
    /* maintenance at the fixture's "now" fills the summaries, in batches */
    bool more = true;
    int passes = 0;
    for (; passes < 100 && more; passes++)
        WT_EQ_INT(wt_store_maintain(s, T0 + 82 * MIN + S, 20000, &more), 0);
    WT_ASSERT(!more);
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks WHERE e IS NULL OR v0 IS NULL"), 0);
    WT_EQ_INT(count(s, "SELECT sum(n) FROM chunks") + count(s, "SELECT count(*) FROM readings"),
              in_chunks + rows);
    check_expect_v2(s, "summarized");
    /* a long window decodes only the chunks at its edges (and the one with a late reading) */
    struct wt_series_info si = series_of(s, v2_sels[0]);
    struct wt_run_list runs = {0};
    WT_EQ_INT(wt_runs_load(s, &runs), 0);
    double e, c;
    uint64_t d0 = wt_store_chunks_decoded(s);
    WT_EQ_INT(
        wt_store_series_energy(s, &si, &runs, v2_win[1][0], v2_win[1][1], WT_Q_RAW_ONLY, &e, &c),
        0);
    uint64_t used = wt_store_chunks_decoded(s) - d0;
    WT_ASSERT(used <= 2);
    d0 = wt_store_chunks_decoded(s);
    WT_EQ_INT(wt_store_series_energy(s, &si, &runs, v2_win[1][0], v2_win[1][1],
                                     WT_Q_RAW_ONLY | WT_Q_DECODE, &e, &c),
              0);
    WT_ASSERT(wt_store_chunks_decoded(s) - d0 >= 4);
    wt_runs_free(&runs);
    wt_store_close(s);
    /* reopened: nothing to upgrade, nothing lost */
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks WHERE e IS NULL"), 0);
    check_expect_v2(s, "reopened");
    wt_store_close(s);
}

/* ---- schema 4: packed ticks ---- */

/* A store of schema 3 made by the schema 3 code (tests/fixtures/store-v3): upgraded in place to
 * 4 (the ticks table, empty), every answer as schema 3 gave it, before and after maintenance. */
WT_TEST(schema_3_store_is_upgraded_in_place_nothing_lost)
{
    char path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/v3.db", wt_test_dir());
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'",
             wt_test_src_path("tests/fixtures/store-v3/store-v3.db"), path);
    WT_EQ_INT(system(cmd), 0);
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.retention_raw_ns = 3650LL * 86400 * S, .create = false};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(count(s, "PRAGMA user_version"), 4);
    WT_EQ_INT(count(s, "SELECT count(*) FROM ticks"), 0);
    int64_t in_chunks = count(s, "SELECT sum(n) FROM chunks");
    int64_t rows = count(s, "SELECT count(*) FROM readings");
    WT_ASSERT(in_chunks > 0 && rows > 0);
    /* schema 3 filled every summary: none is left to fill */
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks WHERE e IS NULL"), 0);
    check_expect_at(s, "tests/fixtures/store-v3/store-v3.expect", "upgraded");
    bool more = true;
    for (int passes = 0; passes < 100 && more; passes++)
        WT_EQ_INT(wt_store_maintain(s, T0 + 82 * MIN + S, 20000, &more), 0);
    WT_ASSERT(!more);
    WT_EQ_INT(count(s, "SELECT sum(n) FROM chunks") + count(s, "SELECT count(*) FROM readings"),
              in_chunks + rows);
    check_expect_at(s, "tests/fixtures/store-v3/store-v3.expect", "maintained");
    wt_store_close(s);
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(count(s, "PRAGMA user_version"), 4);
    check_expect_at(s, "tests/fixtures/store-v3/store-v3.expect", "reopened");
    wt_store_close(s);
}

/* Energy of series si over [a, b] with summaries and decoded: they agree to 1e-9. */
static void same_both_ways(struct wt_store *s, const struct wt_series_info *si, int64_t a,
                           int64_t b, int flags, double *out_e, double *out_c)
{
    struct wt_run_list runs = {0};
    double e, c, de, dc;
    WT_EQ_INT(wt_runs_load(s, &runs), 0);
    WT_EQ_INT(wt_store_series_energy(s, si, &runs, a, b, flags, &e, &c), 0);
    WT_EQ_INT(wt_store_series_energy(s, si, &runs, a, b, flags | WT_Q_DECODE, &de, &dc), 0);
    char msg[256];
    snprintf(msg, sizeof msg, "%s over [%lld, %lld] ns flags %d", si->metric, (long long)(a - T0),
             (long long)(b - T0), flags);
    near_rel(msg, e, de, 1e-9);
    near_rel(msg, c, dc, 1e-12);
    wt_runs_free(&runs);
    if (out_e)
        *out_e = e;
    if (out_c)
        *out_c = c;
}

WT_TEST(summaries_answer_as_decoding_and_a_run_in_the_past_makes_them_stale)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/sum.db", wt_test_dir());
    struct wt_store_opts o = {.retention_raw_ns = 3650LL * 86400 * S, .create = true};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "daemon"), 0);
    const char *l = "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\"";
    enum { N = 4 * 3600 };
    static struct wt_reading r[3 * N];
    double hw = 1e6, integ = 0;
    unsigned seed = 7;
    size_t nr = 0;
    for (int i = 0; i < N; i++) {
        int64_t t = T0 + (int64_t)i * S + (i % 3) * 1000;
        seed = seed * 1103515245u + 12345u;
        double p = 200 + (double)((seed >> 16) % 500000) / 1000.0;
        hw = i == 2 * 3600 ? 17.0 : hw + p; /* a reset 2 h in */
        integ += p * 1.0000003;
        /* a 10-s hole 3 h in: an integrated gap */
        if (i >= 3 * 3600 && i < 3 * 3600 + 10)
            continue;
        r[nr++] = rd(WT_M_GPU_ENERGY_J, l, t, hw);
        r[nr++] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, l, t, integ);
        r[nr++] = rd(WT_M_CPU_ENERGY_J, "package=\"0\"", t, hw / 3);
    }
    for (size_t i = 0; i < nr; i += 1800)
        WT_EQ_INT(wt_store_write(s, "", r + i, nr - i < 1800 ? nr - i : 1800), 0);
    maintain_all(s, T0 + N * S + 3600 * S);
    WT_EQ_INT(count(s, "SELECT count(*) FROM readings"), 0);
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks WHERE e IS NULL"), 0);
    struct wt_series_info si[3] = {series_of(s, "wattage_gpu_energy_joules_total"),
                                   series_of(s, "wattage_gpu_energy_integrated_joules_total"),
                                   series_of(s, "wattage_cpu_energy_joules_total")};
    /* windows of every shape: whole, inside one chunk, across chunk edges, on readings */
    uint64_t ws = 99;
    for (int k = 0; k < 40; k++) {
        ws = ws * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t a = T0 - 30 * S + (int64_t)((ws >> 11) % (uint64_t)(N * S));
        ws = ws * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t len = (int64_t)((ws >> 11) % (uint64_t)((k % 4 == 0 ? 60 : 3 * 3600) * S)) + 1;
        if (k == 0)
            a = T0 - 5 * S, len = (N + 10) * S;
        if (k == 1)
            a = T0 + 900 * S + 3000, len = 1800 * S; /* on readings */
        for (int i = 0; i < 3; i++) {
            same_both_ways(s, &si[i], a, a + len, 0, NULL, NULL);
            same_both_ways(s, &si[i], a, a + len, WT_Q_RAW_ONLY, NULL, NULL);
        }
    }
    /* the whole: the reset and the hole are gaps either way */
    double e0, c0;
    same_both_ways(s, &si[0], T0, T0 + N * S, WT_Q_RAW_ONLY, &e0, &c0);
    WT_ASSERT(c0 < (double)N - 0.5 && c0 > (double)N - 20);

    /* an import's run that starts in the past, 30 min in: the segments across it are gaps now */
    int64_t start = T0 + 1800 * S + S / 2;
    WT_EQ_INT(wt_store_begin_run(s, "", start, S, "import"), 0);
    int64_t stale = count(s, "SELECT count(*) FROM chunks WHERE e IS NULL");
    WT_ASSERT(stale > 0);
    WT_ASSERT(stale < count(s, "SELECT count(*) FROM chunks"));
    double e1, c1;
    same_both_ways(s, &si[0], T0, T0 + N * S, WT_Q_RAW_ONLY, &e1, &c1);
    WT_NEAR(c1, c0, 1e-9); /* the hardware counter spans restarts */
    double ec, cc, ec1, cc1;
    same_both_ways(s, &si[2], T0, T0 + N * S, WT_Q_RAW_ONLY, &ec, &cc);
    maintain_all(s, T0 + N * S + 3600 * S);
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks WHERE e IS NULL"), 0);
    same_both_ways(s, &si[2], T0, T0 + N * S, WT_Q_RAW_ONLY, &ec1, &cc1);
    WT_NEAR(ec1, ec, 1e-9 * ec);
    WT_NEAR(cc1, cc, 1e-9);
    same_both_ways(s, &si[1], T0, T0 + N * S, WT_Q_RAW_ONLY, NULL, NULL);
    /* the CPU counter lost the 1-s segment across the new start */
    double ecb, ccb;
    struct wt_store *s2 = NULL;
    WT_EQ_INT(wt_store_open(path, &o, &s2, &err), 0);
    same_both_ways(s2, &si[2], T0 + 1700 * S, T0 + 1900 * S, WT_Q_RAW_ONLY, &ecb, &ccb);
    WT_NEAR(ccb, 199.0, 1e-5);
    wt_store_close(s2);
    wt_store_close(s);
}

/* Two threads reading through one handle: each statement the other holds is prepared anew
 * (rq_take), and both read every reading. */
struct reader_arg {
    struct wt_store *s;
    int64_t id;
    size_t want;
    int bad;
};

static void *reader_main(void *p)
{
    struct reader_arg *r = p;
    for (int k = 0; k < 200; k++) {
        struct wt_point_buf pb = {0};
        int64_t first, last;
        if (wt_store_read(r->s, r->id, T0, T0 + 7200 * S, 0, 0, &pb) != 0 || pb.n != r->want ||
            wt_store_bounds(r->s, r->id, &first, &last) != 1)
            r->bad++;
        free(pb.p);
    }
    return NULL;
}

WT_TEST(readers_on_two_threads_share_a_handle)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/threads.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(path, NULL, &s, &err), 0);
    enum { N = 1800 };
    static struct wt_reading r[N];
    for (int i = 0; i < N; i++)
        r[i] = rd(WT_M_GPU_POWER_W, "gpu=\"0\"", T0 + (int64_t)i * S, 300 + i % 17);
    WT_EQ_INT(wt_store_write(s, "", r, N), 0);
    maintain_all(s, T0 + 3 * 3600 * S); /* all in chunks */
    struct wt_series_info si = series_of(s, "wattage_gpu_power_watts");
    pthread_t th[2];
    struct reader_arg ra[2] = {{s, si.id, N, 0}, {s, si.id, N, 0}};
    for (int i = 0; i < 2; i++)
        WT_EQ_INT(pthread_create(&th[i], NULL, reader_main, &ra[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    WT_EQ_INT(ra[0].bad, 0);
    WT_EQ_INT(ra[1].bad, 0);
    wt_store_close(s);
}
