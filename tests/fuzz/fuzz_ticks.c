/* SPDX-License-Identifier: MIT */
/*
 * The store's ticks codec (src/store/ticks.c): any blob is read whole or refused without
 * reading past it (the one-series reader takes all the walk takes, with the same points); what
 * reads has ascending series, times increasing in each, and encodes to a blob that reads back the
 * same readings bit for bit. The input also read as (series, time, value) readings: any such
 * readings survive a round trip, each (series, time) once with its first value. Seeds: blobs the
 * encoder made and a few hand-made ones (seeds.sh).
 */
#include "fuzz.h"
#include "store/ticks.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

struct acc {
    struct wt_tick_reading *r;
    size_t n, cap;
    int64_t last;
};

static int add(void *ctx, int64_t id, const struct wt_point *p, size_t n)
{
    struct acc *a = ctx;
    FUZZ_CHECK(id > a->last);
    a->last = id;
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(i == 0 || p[i].t_ns > p[i - 1].t_ns);
        if (a->n == a->cap) {
            a->cap = a->cap ? 2 * a->cap : 64;
            a->r = realloc(a->r, a->cap * sizeof *a->r);
            FUZZ_CHECK(a->r != NULL);
        }
        a->r[a->n++] = (struct wt_tick_reading){id, p[i].t_ns, p[i].v};
    }
    return 0;
}

/* Encodes r[0..n) and checks both readers give back what the encoder kept. */
static void round_trip(struct wt_tick_reading *r, size_t n)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    int64_t lo, hi;
    FUZZ_CHECK(wt_ticks_encode(r, n, &blob, &len, &lo, &hi) == 0);
    struct acc a = {0};
    FUZZ_CHECK(wt_ticks_each(blob, len, add, &a) == 0);
    FUZZ_CHECK(wt_ticks_count(blob, len) == (int64_t)a.n);
    /* r is sorted now: its distinct (series, time) pairs, first value each, are a's */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && r[i].series == r[i - 1].series && r[i].t_ns == r[i - 1].t_ns)
            continue;
        FUZZ_CHECK(k < a.n && a.r[k].series == r[i].series && a.r[k].t_ns == r[i].t_ns);
        FUZZ_CHECK(memcmp(&a.r[k].v, &r[i].v, sizeof r[i].v) == 0);
        FUZZ_CHECK(a.r[k].t_ns >= lo && a.r[k].t_ns <= hi);
        k++;
    }
    FUZZ_CHECK(k == a.n);
    struct wt_point_buf one = {0};
    FUZZ_CHECK(wt_ticks_series(blob, len, r[0].series, INT64_MIN, INT64_MAX, &one) == 0);
    FUZZ_CHECK(one.n >= 1 && one.p[0].t_ns == r[0].t_ns);
    free(one.p);
    free(a.r);
    free(blob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct acc a = {0};
    int rc = wt_ticks_each(data, size, add, &a);
    FUZZ_CHECK(rc == 0 || rc == -EINVAL);
    FUZZ_CHECK(rc == 0 || a.n == 0);
    struct wt_point_buf one = {0};
    int rs = wt_ticks_series(data, size, rc == 0 ? a.r[0].series : 1, INT64_MIN, INT64_MAX, &one);
    /* the one-series reader checks the framing and its own series' points: what the walk takes
     * it takes, with the same points */
    FUZZ_CHECK(rs == 0 || rs == -EINVAL);
    FUZZ_CHECK(rc != 0 || rs == 0);
    FUZZ_CHECK(rs == 0 || one.n == 0);
    for (size_t i = 0; rc == 0 && i < one.n; i++)
        FUZZ_CHECK(one.p[i].t_ns == a.r[i].t_ns && a.r[i].series == a.r[0].series);
    /* opened once: its framing refused when the walk's is, and its series read as the blob's */
    struct wt_ticks_view v;
    int rv = wt_ticks_view_open(data, size, &v);
    FUZZ_CHECK(rv == 0 || rv == -EINVAL);
    FUZZ_CHECK(rc != 0 || rv == 0);
    if (rv == 0) {
        struct wt_point_buf vo = {0};
        int rvs = wt_ticks_view_series(&v, rc == 0 ? a.r[0].series : 1, INT64_MIN, INT64_MAX, &vo);
        FUZZ_CHECK(rvs == rs && vo.n == one.n);
        FUZZ_CHECK(vo.n == 0 || memcmp(vo.p, one.p, vo.n * sizeof *vo.p) == 0);
        free(vo.p);
        wt_ticks_view_free(&v);
    }
    free(one.p);
    /* walked series by series (compaction's reader): the walk's series and points, one by one,
     * when the whole blob reads; a blob refused by the walk is refused when opened or at one of
     * its series' points */
    struct wt_ticks_walk w;
    int rw = wt_ticks_walk_open(data, size, &w);
    FUZZ_CHECK(rw == 0 || rw == -EINVAL);
    FUZZ_CHECK(rc != 0 || rw == 0);
    if (rw == 0) {
        struct wt_point_buf wp = {0};
        size_t k = 0;
        int bad = 0;
        for (; w.have && !bad; wt_ticks_walk_next(&w)) {
            size_t n0 = wp.n;
            bad = wt_ticks_walk_points(&w, &wp);
            FUZZ_CHECK(bad == 0 || bad == -EINVAL);
            FUZZ_CHECK(bad == 0 || wp.n == n0);
            for (size_t i = n0; bad == 0 && rc == 0 && i < wp.n; i++, k++) {
                FUZZ_CHECK(k < a.n && a.r[k].series == w.g.id && a.r[k].t_ns == wp.p[i].t_ns);
                FUZZ_CHECK(memcmp(&a.r[k].v, &wp.p[i].v, sizeof wp.p[i].v) == 0);
            }
        }
        FUZZ_CHECK(rc == 0 ? bad == 0 && k == a.n : bad != 0);
        free(wp.p);
        wt_ticks_walk_free(&w);
    }
    if (rc == 0) {
        FUZZ_CHECK(wt_ticks_count(data, size) == (int64_t)a.n);
        round_trip(a.r, a.n);
    }
    free(a.r);
    /* the input as readings: 2 bytes of series, 8 of time, 8 of value */
    size_t n = size / 18;
    if (n) {
        struct wt_tick_reading *r = calloc(n, sizeof *r);
        FUZZ_CHECK(r != NULL);
        for (size_t i = 0; i < n; i++) {
            uint16_t sid;
            memcpy(&sid, data + 18 * i, 2);
            memcpy(&r[i].t_ns, data + 18 * i + 2, 8);
            memcpy(&r[i].v, data + 18 * i + 10, 8);
            r[i].series = 1 + sid % 64;
            r[i].t_ns /= 4; /* any two within 2^63 ns */
        }
        round_trip(r, n);
        free(r);
    }
    return 0;
}
