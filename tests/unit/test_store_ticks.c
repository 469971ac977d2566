/* SPDX-License-Identifier: MIT */
/*
 * Store schema 4: the readers merge the packed-ticks table (store/ticks.h) with the readings
 * table and the chunks. The same readings, written as rows in one store and as ticks rows in
 * another (one row per second, one row out of order, duplicates of rows and of ticks), give the
 * same answer to every reader: ranges, edges, bounds, counts, the newest time, exact-window
 * energy and, after maintenance (rollups, compaction of the rows), the same again. A ticks blob
 * that does not decode fails the read instead of answering without it.
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "runner.h"
#include "store/query.h"
#include "store/store.h"
#include "store/ticks.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S - (1700000000LL * S) % WT_MINUTE_NS)
#define SECS 3600
#define NSER 3

static const char *const labels = "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\"";
static const char *const labels1 = "gpu=\"1\",uuid=\"GPU-b\",model=\"NVIDIA H200\"";

static struct wt_reading rd(int metric, const char *l, int64_t t, double v)
{
    struct wt_reading r = {.t_ns = t, .value = v, .metric = (uint16_t)metric};
    snprintf(r.labels, sizeof r.labels, "%s", l);
    return r;
}

/* The readings of second i: two GPUs' energy counters and one utilization, times jittered. */
static size_t second(int i, struct wt_reading *r)
{
    int64_t t = T0 + (int64_t)i * S + (i % 7) * 1000003;
    r[0] = rd(WT_M_GPU_ENERGY_J, labels, t, 1000 + 400.25 * i + (i % 5) * 13.5);
    r[1] = rd(WT_M_GPU_ENERGY_J, labels1, t + 17, 2000 + 250.5 * i + (i % 3) * 90.125);
    r[2] = rd(WT_M_GPU_UTIL_RATIO, labels, t, (double)(i % 11) / 10.0);
    return NSER;
}

static int64_t one(struct wt_store *s, const char *sql)
{
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), sql, -1, &q, NULL), SQLITE_OK);
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

static int64_t id_of(struct wt_store *s, const struct wt_reading *r)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id FROM series WHERE metric='%s' AND labels='%s'",
             wt_metrics[r->metric].name, r->labels);
    int64_t id = one(s, sql);
    WT_ASSERT(id > 0);
    return id;
}

/* Appends one ticks row of the readings r[0..n) (their series already in the store). */
static void put_ticks(struct wt_store *s, const int64_t *ids, const struct wt_reading *r, size_t n)
{
    struct wt_tick_reading tr[64];
    WT_ASSERT(n <= 64);
    for (size_t i = 0; i < n; i++)
        tr[i] = (struct wt_tick_reading){
            ids[r[i].metric == WT_M_GPU_UTIL_RATIO ? 2 : strstr(r[i].labels, "GPU-b") != NULL],
            r[i].t_ns, r[i].value};
    uint8_t *blob = NULL;
    size_t len = 0;
    int64_t lo, hi;
    WT_EQ_INT(wt_ticks_encode(tr, n, &blob, &len, &lo, &hi), 0);
    sqlite3_stmt *q = NULL;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s),
                                 "INSERT INTO ticks(t_min, t_max, n, data) VALUES(?,?,?,?)", -1, &q,
                                 NULL),
              SQLITE_OK);
    sqlite3_bind_int64(q, 1, lo);
    sqlite3_bind_int64(q, 2, hi);
    sqlite3_bind_int64(q, 3, (int64_t)n);
    sqlite3_bind_blob(q, 4, blob, (int)len, SQLITE_TRANSIENT);
    WT_EQ_INT(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    free(blob);
}

static struct wt_store *open_as(const char *name, bool ticks)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/%s", wt_test_dir(), name);
    struct wt_store_opts o = {
        .retention_raw_ns = 3650LL * 86400 * S, .create = true, .ticks = ticks};
    WT_EQ_INT(wt_store_open(path, &o, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "daemon"), 0);
    return s;
}

static struct wt_store *open_at(const char *name)
{
    return open_as(name, false);
}

static uint64_t bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* wt_store_read of both stores, point for point and bit for bit. */
static void same_read(struct wt_store *a, int64_t ia, struct wt_store *b, int64_t ib, int64_t x,
                      int64_t y, int flags, size_t limit)
{
    struct wt_point_buf pa = {0}, pb = {0};
    WT_EQ_INT(wt_store_read(a, ia, x, y, flags, limit, &pa), 0);
    WT_EQ_INT(wt_store_read(b, ib, x, y, flags, limit, &pb), 0);
    if (pa.n != pb.n)
        wt_test_fail(__FILE__, __LINE__, "[%lld, %lld] flags %d limit %zu: %zu points vs %zu",
                     (long long)(x - T0), (long long)(y - T0), flags, limit, pa.n, pb.n);
    WT_ASSERT(pa.n > 0 || y - x < S);
    for (size_t i = 0; i < pa.n && i < pb.n; i++) {
        if (pa.p[i].t_ns != pb.p[i].t_ns || bits(pa.p[i].v) != bits(pb.p[i].v))
            wt_test_fail(__FILE__, __LINE__, "point %zu: (%lld, %.17g) vs (%lld, %.17g)", i,
                         (long long)pa.p[i].t_ns, pa.p[i].v, (long long)pb.p[i].t_ns, pb.p[i].v);
    }
    free(pa.p);
    free(pb.p);
}

static void same_energy(struct wt_store *a, struct wt_store *b, int64_t x, int64_t y)
{
    struct wt_energy_row *ra = NULL, *rb = NULL;
    size_t na = 0, nb = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_store_energy(a, x, y, 0, &ra, &na, &err), 0);
    WT_EQ_INT(wt_store_energy(b, x, y, 0, &rb, &nb, &err), 0);
    WT_EQ_INT(na, nb);
    WT_ASSERT(na == 2);
    for (size_t i = 0; i < na && i < nb; i++) {
        WT_ASSERT(ra[i].energy_j > 0);
        if (fabs(ra[i].energy_j - rb[i].energy_j) > 1e-9 * ra[i].energy_j ||
            fabs(ra[i].covered_s - rb[i].covered_s) > 1e-6)
            wt_test_fail(__FILE__, __LINE__,
                         "[%lld s, %lld s] row %zu: %.9f J over %.6f s vs %.9f "
                         "J over %.6f s",
                         (long long)((x - T0) / S), (long long)((y - T0) / S), i, ra[i].energy_j,
                         ra[i].covered_s, rb[i].energy_j, rb[i].covered_s);
    }
    free(ra);
    free(rb);
}

static void maintain_all(struct wt_store *s, int64_t now)
{
    bool more = true;
    for (int i = 0; i < 1000 && more; i++)
        WT_EQ_INT(wt_store_maintain(s, now, 20000, &more), 0);
    WT_ASSERT(!more);
}

static void same_answers(struct wt_store *a, const int64_t *ia, struct wt_store *b,
                         const int64_t *ib)
{
    const int64_t win[][2] = {
        {T0 + 17 * S + 3, T0 + 2000 * S + 11},  /* across the out-of-order row */
        {T0 - 100 * S, T0 + 4000 * S},          /* all of it */
        {T0 + 1000 * S, T0 + 1000 * S + 1},     /* inside one second */
        {T0 + 1040 * S + 7, T0 + 1060 * S - 5}, /* inside the out-of-order row */
        {T0 + 3500 * S, T0 + SECS * S + 50 * S},
    };
    for (size_t w = 0; w < sizeof win / sizeof win[0]; w++) {
        for (int k = 0; k < NSER; k++) {
            same_read(a, ia[k], b, ib[k], win[w][0], win[w][1], 0, 0);
            same_read(a, ia[k], b, ib[k], win[w][0], win[w][1], WT_RD_EDGES, 0);
            same_read(a, ia[k], b, ib[k], win[w][0], win[w][1], WT_RD_AFTER, 0);
            same_read(a, ia[k], b, ib[k], win[w][0], win[w][1], 0, 5);
        }
        same_energy(a, b, win[w][0], win[w][1]);
    }
    for (int k = 0; k < NSER; k++) {
        int64_t f0 = 0, l0 = 0, f1 = 0, l1 = 0;
        WT_EQ_INT(wt_store_bounds(a, ia[k], &f0, &l0), 1);
        WT_EQ_INT(wt_store_bounds(b, ib[k], &f1, &l1), 1);
        WT_EQ_INT(f0, f1);
        WT_EQ_INT(l0, l1);
        const int64_t after[] = {INT64_MIN,     T0 - S,        T0 + 999 * S,
                                 T0 + 1050 * S, T0 + 3599 * S, INT64_MAX};
        for (size_t j = 0; j < sizeof after / sizeof after[0]; j++) {
            uint64_t n0 = 0, n1 = 0;
            int64_t o0 = 0, o1 = 0;
            WT_EQ_INT(wt_store_count_after(a, ia[k], after[j], &n0, &o0), 0);
            WT_EQ_INT(wt_store_count_after(b, ib[k], after[j], &n1, &o1), 0);
            WT_EQ_INT(n0, n1);
            WT_EQ_INT(o0, o1);
        }
    }
    int64_t t0 = 0, t1 = 0;
    WT_EQ_INT(wt_store_newest(a, &t0), 1);
    WT_EQ_INT(wt_store_newest(b, &t1), 1);
    WT_EQ_INT(t0, t1);
}

WT_TEST(readers_merge_ticks_with_rows_and_chunks)
{
    struct wt_store *a = open_at("rows.db"), *b = open_at("ticks.db");
    WT_EQ_INT(one(b, "PRAGMA user_version"), 4);
    static struct wt_reading all[SECS * NSER];
    size_t n = 0;
    for (int i = 0; i < SECS; i++)
        n += second(i, all + n);
    WT_EQ_INT(wt_store_write(a, "", all, n), 0);
    /* b: second 0 as rows (the series), the rest as ticks rows, seconds 1000..1099 last in one */
    WT_EQ_INT(wt_store_write(b, "", all, NSER), 0);
    int64_t ia[NSER], ib[NSER];
    for (int k = 0; k < NSER; k++) {
        ia[k] = id_of(a, &all[k]);
        ib[k] = id_of(b, &all[k]);
    }
    for (int i = 1; i < SECS; i++) {
        if (i >= 1000 && i < 1100)
            continue;
        put_ticks(b, ib, all + (size_t)i * NSER, NSER);
    }
    /* what is already stored stays: a row written again in the ticks (other values), a tick
     * written again later */
    struct wt_reading again[2 * NSER];
    for (int k = 0; k < NSER; k++) {
        again[k] = all[k];
        again[k].value += 1000;
        again[NSER + k] = all[(size_t)2500 * NSER + k];
        again[NSER + k].value -= 77;
    }
    put_ticks(b, ib, again, 2 * NSER);
    /* seconds 1000..1099 last, 7 to a row: rows out of time order, overlapping none */
    for (int i = 1000; i < 1100; i += 7)
        put_ticks(b, ib, all + (size_t)i * NSER, (size_t)(i + 7 <= 1100 ? 7 : 1100 - i) * NSER);
    WT_EQ_INT(one(b, "SELECT count(*) FROM readings"), NSER);
    same_answers(a, ia, b, ib);

    /* maintenance: a's rows are compacted into chunks and both are rolled up */
    int64_t now = T0 + (SECS + 30) * S;
    maintain_all(a, now);
    maintain_all(b, now);
    WT_ASSERT(one(a, "SELECT count(*) FROM chunks") > 0);
    WT_EQ_INT(one(a, "SELECT count(*) FROM rollups"), one(b, "SELECT count(*) FROM rollups"));
    WT_ASSERT(one(b, "SELECT count(*) FROM rollups") >= 3 * 59);
    WT_EQ_INT(one(a, "SELECT sum(n) FROM rollups"), one(b, "SELECT sum(n) FROM rollups"));
    same_answers(a, ia, b, ib);
    /* b's closed ticks rows written before the first open one are chunks now (seconds
     * 1100..3599 were written before the duplicates and 1000..1099, and the last of them are in
     * a span still open), the rows deleted: each reading is in one place */
    int64_t left = one(b, "SELECT count(*) FROM ticks");
    WT_ASSERT(left > 0 && left < SECS / 2);
    WT_ASSERT(one(b, "SELECT count(*) FROM chunks") > 0);
    WT_EQ_INT(one(b, "SELECT coalesce(sum(n), 0) FROM chunks") +
                  one(b, "SELECT count(*) FROM readings") +
                  one(b, "SELECT coalesce(sum(n), 0) FROM ticks"),
              SECS * NSER + (left == 0 ? 0 : 2 * NSER));
    /* much later every span is closed: all of it in chunks, the same answers */
    now = T0 + 2 * 3600 * S;
    maintain_all(a, now);
    maintain_all(b, now);
    WT_EQ_INT(one(b, "SELECT count(*) FROM ticks"), 0);
    WT_EQ_INT(one(b, "SELECT sum(n) FROM chunks") + one(b, "SELECT count(*) FROM readings"),
              SECS * NSER);
    WT_EQ_INT(one(a, "SELECT sum(n) FROM chunks"), one(b, "SELECT sum(n) FROM chunks"));
    same_answers(a, ia, b, ib);
    wt_store_close(a);
    wt_store_close(b);
}

WT_TEST(a_ticks_row_that_does_not_decode_fails_the_read)
{
    struct wt_store *s = open_at("bad.db");
    struct wt_reading r[NSER];
    second(0, r);
    WT_EQ_INT(wt_store_write(s, "", r, NSER), 0);
    int64_t ids[NSER];
    for (int k = 0; k < NSER; k++)
        ids[k] = id_of(s, &r[k]);
    second(1, r);
    put_ticks(s, ids, r, NSER);
    struct wt_point_buf pb = {0};
    WT_EQ_INT(wt_store_read(s, ids[0], T0, T0 + 10 * S, 0, 0, &pb), 0);
    WT_EQ_INT(pb.n, 2);
    /* a blob cut short, over the same second */
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO ticks(t_min, t_max, n, data) SELECT t_min, t_max, n, substr(data, 1, "
             "length(data) - 2) FROM ticks");
    WT_EQ_INT(sqlite3_exec(wt_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    pb.n = 0;
    WT_ASSERT(wt_store_read(s, ids[0], T0, T0 + 10 * S, 0, 0, &pb) != 0);
    int64_t f, l;
    WT_ASSERT(wt_store_bounds(s, ids[0], &f, &l) < 0);
    /* the stored rows are untouched: without the bad row every reading is back */
    WT_EQ_INT(sqlite3_exec(wt_store_db(s), "DELETE FROM ticks WHERE seq=2", NULL, NULL, NULL),
              SQLITE_OK);
    pb.n = 0;
    WT_EQ_INT(wt_store_read(s, ids[0], T0, T0 + 10 * S, 0, 0, &pb), 0);
    WT_EQ_INT(pb.n, 2);
    free(pb.p);
    wt_store_close(s);
}

WT_TEST(the_writer_packs_each_write_in_one_ticks_row_and_every_answer_stays_the_rows_store)
{
    struct wt_store *a = open_at("rows2.db"), *b = open_as("packed.db", true);
    static struct wt_reading all[SECS * NSER];
    size_t n = 0;
    for (int i = 0; i < SECS; i++)
        n += second(i, all + n);
    WT_EQ_INT(wt_store_write(a, "", all, n), 0);
    /* b: a write a second, as the writer flushes; seconds 1000..1099 last, 7 to a write */
    for (int i = 0; i < SECS; i++)
        if (i < 1000 || i >= 1100)
            WT_EQ_INT(wt_store_write(b, "", all + (size_t)i * NSER, NSER), 0);
    /* what is already stored stays: readings written again with other values, a reading twice
     * in one write (the first kept) */
    struct wt_reading again[2 * NSER + 1];
    for (int k = 0; k < NSER; k++) {
        again[k] = all[k];
        again[k].value += 1000;
        again[NSER + k] = all[(size_t)2500 * NSER + k];
        again[NSER + k].value -= 77;
    }
    WT_EQ_INT(wt_store_write(b, "", again, 2 * NSER), 0);
    for (int i = 1000; i < 1100; i += 7) {
        size_t m = (size_t)(i + 7 <= 1100 ? 7 : 1100 - i) * NSER;
        memcpy(again, all + (size_t)i * NSER, NSER * sizeof *again);
        again[NSER] = all[(size_t)i * NSER];
        again[NSER].value = -1;
        WT_EQ_INT(wt_store_write(b, "", again, NSER + 1), 0);
        if (m > NSER)
            WT_EQ_INT(wt_store_write(b, "", all + (size_t)i * NSER + NSER, m - NSER), 0);
    }
    /* no row a reading: a row a write, each counting what it holds */
    WT_EQ_INT(one(b, "SELECT count(*) FROM readings"), 0);
    WT_EQ_INT(one(b, "SELECT count(*) FROM series"), NSER);
    int64_t writes = (SECS - 100) + 1 + 2 * ((100 + 6) / 7);
    WT_EQ_INT(one(b, "SELECT count(*) FROM ticks"), writes);
    WT_EQ_INT(one(b, "SELECT sum(n) FROM ticks"), SECS * NSER + 2 * NSER);
    WT_EQ_INT(one(b, "SELECT count(*) FROM ticks WHERE t_min > t_max"), 0);
    /* the run's end is the newest reading's */
    WT_EQ_INT(one(b, "SELECT last_ns FROM runs"), all[n - 2].t_ns);
    int64_t ia[NSER], ib[NSER];
    for (int k = 0; k < NSER; k++) {
        ia[k] = id_of(a, &all[k]);
        ib[k] = id_of(b, &all[k]);
    }
    same_answers(a, ia, b, ib);
    int64_t now = T0 + 2 * 3600 * S;
    maintain_all(a, now);
    maintain_all(b, now);
    WT_EQ_INT(one(b, "SELECT count(*) FROM ticks"), 0);
    WT_EQ_INT(one(b, "SELECT sum(n) FROM chunks"), SECS * NSER);
    WT_EQ_INT(one(a, "SELECT sum(n) FROM rollups"), one(b, "SELECT sum(n) FROM rollups"));
    same_answers(a, ia, b, ib);
    wt_store_close(a);
    wt_store_close(b);
}

#define MANY_SER 48
#define MANY_SECS 1500

/* The readings of second i of MANY_SER series: energy counters and powers of 24 GPUs. */
static size_t many_second(int i, struct wt_reading *r)
{
    for (int k = 0; k < MANY_SER; k++) {
        char l[64];
        snprintf(l, sizeof l, "gpu=\"%d\",uuid=\"GPU-%d\"", k / 2, k / 2);
        int64_t t = T0 + (int64_t)i * S + (int64_t)k * 1009 + (i % 3) * 250000;
        r[k] = k % 2 ? rd(WT_M_GPU_POWER_W, l, t, 100 + (i * 7 + k) % 500 / 4.0)
                     : rd(WT_M_GPU_ENERGY_J, l, t, 5000.0 * k + 350.125 * i + (i % 4) * 0.5);
    }
    return MANY_SER;
}

/* The chunks of a store, in (metric, labels, t0) order, as one string. */
static char *chunks_text(struct wt_store *s)
{
    sqlite3_stmt *q = NULL;
    char *out = NULL;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s),
                                 "SELECT group_concat(x, ';') FROM (SELECT s.metric || s.labels || "
                                 "',' || c.t0 || ',' || c.t1 || ',' || c.n || ',' || c.v0 || ',' "
                                 "|| c.v1 || ',' || c.e || ',' || c.cov || ',' || hex(c.data) AS x "
                                 "FROM chunks c JOIN series s ON s.id = c.series ORDER BY "
                                 "s.metric, s.labels, c.t0)",
                                 -1, &q, NULL),
              SQLITE_OK);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        out = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    WT_ASSERT(out != NULL);
    return out;
}

/*
 * Compaction moves the ticks rows series by series, at most 256 rows a pass: over several passes
 * of many rows and series (rows out of time order, readings written twice), every series reads
 * back after it what it read before, bit for bit, and the chunks are those a store of rows makes
 * of the same writes.
 */
WT_TEST(a_compaction_of_many_ticks_rows_reads_back_what_was_read_before)
{
    struct wt_store *a = open_at("many_rows.db"), *b = open_as("many_packed.db", true);
    static struct wt_reading all[MANY_SECS * MANY_SER], w[MANY_SER * 30];
    size_t n = 0;
    for (int i = 0; i < MANY_SECS; i++)
        n += many_second(i, all + n);
    /* a write a second; seconds 200..209 written again after second 215 with other values (the
     * first kept; in the same pass's rows); seconds 600..629 last, in one write (out of time
     * order among the last pass's rows); each to both stores */
    memcpy(w, all + (size_t)200 * MANY_SER, 10 * MANY_SER * sizeof *w);
    for (size_t k = 0; k < 10 * MANY_SER; k++)
        w[k].value += 1000;
    for (int i = 0; i < MANY_SECS; i++) {
        if (i >= 600 && i < 630)
            continue;
        WT_EQ_INT(wt_store_write(a, "", all + (size_t)i * MANY_SER, MANY_SER), 0);
        WT_EQ_INT(wt_store_write(b, "", all + (size_t)i * MANY_SER, MANY_SER), 0);
        if (i == 215) {
            WT_EQ_INT(wt_store_write(a, "", w, 10 * MANY_SER), 0);
            WT_EQ_INT(wt_store_write(b, "", w, 10 * MANY_SER), 0);
        }
    }
    WT_EQ_INT(wt_store_write(a, "", all + (size_t)600 * MANY_SER, 30 * MANY_SER), 0);
    WT_EQ_INT(wt_store_write(b, "", all + (size_t)600 * MANY_SER, 30 * MANY_SER), 0);
    WT_EQ_INT(one(b, "SELECT count(*) FROM ticks"), MANY_SECS - 30 + 2);
    WT_ASSERT(one(b, "SELECT count(*) FROM ticks") > 4 * 256);

    int64_t ids[MANY_SER];
    struct wt_point_buf before[MANY_SER];
    for (int k = 0; k < MANY_SER; k++) {
        ids[k] = id_of(b, &all[k]);
        before[k] = (struct wt_point_buf){0};
        WT_EQ_INT(wt_store_read(b, ids[k], T0 - S, T0 + (MANY_SECS + 1) * S, 0, 0, &before[k]), 0);
        WT_EQ_INT(before[k].n, MANY_SECS);
        WT_ASSERT(before[k].p[200].v < 1000 + all[(size_t)200 * MANY_SER + k].value);
    }
    int64_t now = T0 + 3 * 3600 * S;
    maintain_all(a, now);
    maintain_all(b, now);
    WT_EQ_INT(one(b, "SELECT count(*) FROM ticks"), 0);
    WT_EQ_INT(one(b, "SELECT count(*) FROM readings"), 0);
    WT_EQ_INT(one(b, "SELECT sum(n) FROM chunks"), MANY_SECS * MANY_SER);
    for (int k = 0; k < MANY_SER; k++) {
        struct wt_point_buf after = {0};
        WT_EQ_INT(wt_store_read(b, ids[k], T0 - S, T0 + (MANY_SECS + 1) * S, 0, 0, &after), 0);
        WT_EQ_INT(after.n, before[k].n);
        for (size_t i = 0; i < after.n && i < before[k].n; i++) {
            if (after.p[i].t_ns != before[k].p[i].t_ns ||
                bits(after.p[i].v) != bits(before[k].p[i].v))
                wt_test_fail(__FILE__, __LINE__,
                             "series %d point %zu: (%lld, %.17g) vs (%lld, "
                             "%.17g)",
                             k, i, (long long)after.p[i].t_ns, after.p[i].v,
                             (long long)before[k].p[i].t_ns, before[k].p[i].v);
        }
        same_read(a, id_of(a, &all[k]), b, ids[k], T0 - S, T0 + (MANY_SECS + 1) * S, 0, 0);
        free(after.p);
        free(before[k].p);
    }
    char *ca = chunks_text(a), *cb = chunks_text(b);
    WT_ASSERT(strlen(ca) > 1000);
    if (strcmp(ca, cb) != 0)
        wt_test_fail(__FILE__, __LINE__, "the chunks differ from the rows store's");
    free(ca);
    free(cb);
    wt_store_close(a);
    wt_store_close(b);
}
