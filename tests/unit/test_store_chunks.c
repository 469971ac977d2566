/* SPDX-License-Identifier: MIT */
/*
 * Store v2: the chunk codec (exact round trips of every kind of value and spacing, malformed
 * blobs refused), compaction of closed spans into chunks with every reader seeing the same
 * readings before and after, and the in-place upgrade of a schema 1 store made by the schema 1
 * code (tests/fixtures/store-v1).
 */
#include <errno.h>
#include <math.h>
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
    WT_EQ_INT(count(s, "PRAGMA user_version"), 2);
    WT_EQ_INT(count(s, "SELECT count(*) FROM chunks"), 0);
    int64_t rows = count(s, "SELECT count(*) FROM readings");
    WT_EQ_INT(rows, 4590);
    check_expect(s, "upgraded");
    /* the writer's maintenance at the fixture's "now" compacts every closed span */
    maintain_all(s, T0 + 12 * WT_MINUTE_NS + 20 * WT_MINUTE_NS);
    WT_EQ_INT(count(s, "SELECT count(*) FROM readings"), 0);
    WT_EQ_INT(count(s, "SELECT sum(n) FROM chunks"), rows);
    check_expect(s, "compacted");
    wt_store_close(s);
    /* and again on a second open: nothing more to upgrade */
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    check_expect(s, "reopened");
    wt_store_close(s);
}
