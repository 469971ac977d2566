/* SPDX-License-Identifier: MIT */
/*
 * The ticks codec (store/ticks.h): a flush of readings of many series in one blob. Every
 * reading of every series comes back bit for bit, in time order per series, from the one-series
 * reader and from the walk over all; a repeated (series, time) keeps the first; a window keeps
 * what lies inside it; malformed and truncated blobs are refused without reading past them; a
 * realistic 8-GPU tick costs a few bytes a reading.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "runner.h"
#include "store/ticks.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S)

static uint64_t bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static int by_series_time(const void *pa, const void *pb)
{
    const struct wt_tick_reading *a = pa, *b = pb;
    if (a->series != b->series)
        return a->series < b->series ? -1 : 1;
    return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

/* What a walk saw: every series' points, in order, appended. */
struct seen {
    struct wt_tick_reading r[20000];
    size_t n;
    int64_t last_id;
    int stop_at; /* return 1 at this call (0: never) */
    int calls;
};

static int see(void *ctx, int64_t id, const struct wt_point *p, size_t n)
{
    struct seen *s = ctx;
    WT_ASSERT(id > s->last_id);
    s->last_id = id;
    for (size_t i = 0; i < n; i++) {
        WT_ASSERT(i == 0 || p[i].t_ns > p[i - 1].t_ns);
        s->r[s->n++] = (struct wt_tick_reading){id, p[i].t_ns, p[i].v};
    }
    return ++s->calls == s->stop_at;
}

/* The readings as a set, each (series, time) once with its first value: what a blob holds. */
static size_t expected(const struct wt_tick_reading *in, size_t n, struct wt_tick_reading *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t j = 0; j < m && !dup; j++)
            dup = out[j].series == in[i].series && out[j].t_ns == in[i].t_ns;
        if (!dup)
            out[m++] = in[i];
    }
    qsort(out, m, sizeof *out, by_series_time);
    return m;
}

/* Encodes readings given in any order; both readers give each one back exactly. */
static int last_fmt; /* the format byte of round_trip's blob */

static size_t round_trip(const struct wt_tick_reading *in, size_t n)
{
    static struct wt_tick_reading work[20000], want[20000];
    static struct seen got;
    uint8_t *blob = NULL;
    size_t len = 0;
    int64_t lo = 0, hi = 0;
    memcpy(work, in, n * sizeof *in);
    size_t m = expected(in, n, want);
    WT_EQ_INT(wt_ticks_encode(work, n, &blob, &len, &lo, &hi), 0);
    last_fmt = blob[0];
    WT_EQ_INT(wt_ticks_count(blob, len), (int64_t)m);
    int64_t mn = want[0].t_ns, mx = want[0].t_ns;
    for (size_t i = 0; i < m; i++) {
        mn = want[i].t_ns < mn ? want[i].t_ns : mn;
        mx = want[i].t_ns > mx ? want[i].t_ns : mx;
    }
    WT_EQ_INT(lo, mn);
    WT_EQ_INT(hi, mx);
    memset(&got, 0, sizeof got);
    WT_EQ_INT(wt_ticks_each(blob, len, see, &got), 0);
    WT_EQ_INT(got.n, m);
    for (size_t i = 0; i < m; i++) {
        WT_EQ_INT(got.r[i].series, want[i].series);
        WT_EQ_INT(got.r[i].t_ns, want[i].t_ns);
        if (bits(got.r[i].v) != bits(want[i].v))
            wt_test_fail(__FILE__, __LINE__, "reading %zu: %.17g came back as %.17g", i, want[i].v,
                         got.r[i].v);
    }
    /* one series at a time, whole and through a window, from the blob and from it opened once */
    struct wt_ticks_view v;
    WT_EQ_INT(wt_ticks_view_open(blob, len, &v), 0);
    WT_ASSERT(wt_ticks_view_is(&v, blob, len));
    WT_ASSERT(!wt_ticks_view_is(&v, blob, len - 1));
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && want[j].series == want[i].series)
            j++;
        struct wt_point_buf one = {0}, win = {0};
        WT_EQ_INT(wt_ticks_series(blob, len, want[i].series, INT64_MIN, INT64_MAX, &one), 0);
        WT_EQ_INT(one.n, j - i);
        for (size_t k = i; k < j; k++) {
            WT_EQ_INT(one.p[k - i].t_ns, want[k].t_ns);
            WT_ASSERT(bits(one.p[k - i].v) == bits(want[k].v));
        }
        int64_t a = want[i + (j - i) / 3].t_ns, b = want[i + 2 * (j - i) / 3].t_ns;
        WT_EQ_INT(wt_ticks_series(blob, len, want[i].series, a, b, &win), 0);
        size_t inside = 0;
        for (size_t k = i; k < j; k++)
            inside += want[k].t_ns >= a && want[k].t_ns <= b;
        WT_EQ_INT(win.n, inside);
        for (size_t k = 0; k < win.n; k++)
            WT_ASSERT(win.p[k].t_ns >= a && win.p[k].t_ns <= b);
        struct wt_point_buf vone = {0}, vwin = {0};
        WT_EQ_INT(wt_ticks_view_series(&v, want[i].series, INT64_MIN, INT64_MAX, &vone), 0);
        WT_EQ_INT(wt_ticks_view_series(&v, want[i].series, a, b, &vwin), 0);
        WT_EQ_INT(vone.n, one.n);
        WT_EQ_INT(vwin.n, win.n);
        WT_ASSERT(memcmp(vone.p, one.p, one.n * sizeof *one.p) == 0);
        WT_ASSERT(win.n == 0 || memcmp(vwin.p, win.p, win.n * sizeof *win.p) == 0);
        free(vone.p);
        free(vwin.p);
        free(one.p);
        free(win.p);
        i = j;
    }
    /* a series the blob does not hold: nothing */
    struct wt_point_buf none = {0};
    WT_EQ_INT(wt_ticks_series(blob, len, want[m - 1].series + 1, INT64_MIN, INT64_MAX, &none), 0);
    WT_EQ_INT(none.n, 0);
    WT_EQ_INT(wt_ticks_view_series(&v, want[m - 1].series + 1, INT64_MIN, INT64_MAX, &none), 0);
    WT_EQ_INT(wt_ticks_view_series(&v, 0, INT64_MIN, INT64_MAX, &none), 0);
    WT_EQ_INT(none.n, 0);
    free(none.p);
    wt_ticks_view_free(&v);
    WT_ASSERT(!wt_ticks_view_is(&v, blob, len));
    /* every truncation is refused by every reader, and nothing is appended */
    for (size_t cut = 0; cut < len; cut++) {
        struct wt_point_buf bad = {0};
        struct seen *s = calloc(1, sizeof *s);
        WT_ASSERT(wt_ticks_series(blob, cut, want[0].series, INT64_MIN, INT64_MAX, &bad) != 0);
        WT_EQ_INT(bad.n, 0);
        WT_ASSERT(wt_ticks_each(blob, cut, see, s) != 0);
        WT_EQ_INT(s->calls, 0); /* refused whole, before the first series */
        WT_ASSERT(wt_ticks_view_open(blob, cut, &v) != 0);
        WT_EQ_INT(v.ng, 0);
        free(s);
        free(bad.p);
    }
    free(blob);
    return len;
}

WT_TEST(ticks_round_trip_exactly)
{
    static struct wt_tick_reading r[20000];
    /* one reading */
    r[0] = (struct wt_tick_reading){7, T0, 312.456};
    round_trip(r, 1);
    /* odd values, one series each, shuffled ids, shared and distinct times */
    const double odd[] = {
        NAN, -NAN,    INFINITY, -INFINITY, -0.0,   4.9e-324, 1e308, -1e300,
        0.1, 1.0 / 3, 1e16,     -2.5,      1e-300, 0,        45.0,  123456789.123456789};
    size_t no = sizeof odd / sizeof *odd;
    for (size_t i = 0; i < no; i++)
        r[i] = (struct wt_tick_reading){(int64_t)((i * 7) % no) + 1, T0 + (int64_t)(i % 3), odd[i]};
    round_trip(r, no);
    /* several ticks of several series, given newest first; ids far apart */
    size_t n = 0;
    for (int tick = 9; tick >= 0; tick--)
        for (int sid = 0; sid < 30; sid++)
            r[n++] = (struct wt_tick_reading){1 + sid * 100003LL, T0 + tick * S / 10,
                                              tick * 1.5 + sid / 7.0};
    round_trip(r, n);
    /* a repeated (series, time): the first given stays */
    r[0] = (struct wt_tick_reading){3, T0, 1};
    r[1] = (struct wt_tick_reading){3, T0, 2};
    r[2] = (struct wt_tick_reading){3, T0 + 1, 3};
    r[3] = (struct wt_tick_reading){3, T0, 4};
    round_trip(r, 4);
    /* a long flush of constant readings: zstd folds it far more than a tick (the decoder's
     * bound on the ratio must hold for what the encoder writes) */
    for (size_t i = 0; i < 20000; i++)
        r[i] = (struct wt_tick_reading){1 + (int64_t)(i % 4), T0 + (int64_t)(i / 4) * S, 87};
    round_trip(r, 20000);
    /* extreme times and ids */
    r[0] = (struct wt_tick_reading){INT64_MAX, -(INT64_MAX / 2), 1};
    r[1] = (struct wt_tick_reading){1, INT64_MAX / 2, 2};
    r[2] = (struct wt_tick_reading){1, 0, 3};
    round_trip(r, 3);
}

/* The blob of readings in any order is the blob of the same readings sorted, each (series,
 * time) once with its first value; the caller's array comes back sorted. */
static void same_blob(const struct wt_tick_reading *in, size_t n)
{
    static struct wt_tick_reading work[4000], want[4000];
    uint8_t *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    int64_t lo, hi;
    memcpy(work, in, n * sizeof *in);
    size_t m = expected(in, n, want);
    WT_EQ_INT(wt_ticks_encode(work, n, &a, &la, &lo, &hi), 0);
    for (size_t i = 1; i < n; i++)
        WT_ASSERT(by_series_time(&work[i - 1], &work[i]) <= 0);
    WT_EQ_INT(wt_ticks_encode(want, m, &b, &lb, &lo, &hi), 0);
    WT_EQ_INT(la, lb);
    WT_ASSERT(memcmp(a, b, la) == 0);
    free(a);
    free(b);
}

/* A flush is the batches of a few collectors one after another, each in ascending ids (issue
 * 49: the encoder merges those runs instead of sorting); the runs overlap, repeat a (series,
 * time) with another value, and come in every other order too. */
WT_TEST(ticks_runs_merge_to_the_sorted_blob)
{
    static struct wt_tick_reading r[4000];
    size_t n = 0;
    for (int tick = 0; tick < 3; tick++) {
        for (int sid = 1; sid <= 120; sid++) /* the GPUs */
            r[n++] = (struct wt_tick_reading){sid, T0 + tick * S, sid * 1.25 + tick};
        for (int sid = 200; sid <= 230; sid++) /* the host */
            r[n++] = (struct wt_tick_reading){sid, T0 + tick * S + 7, sid / 3.0};
        for (int sid = 100; sid <= 210; sid += 10) /* overlapping ids, a repeat at tick 0 */
            r[n++] = (struct wt_tick_reading){sid, T0 + tick * S, -sid - 0.5};
    }
    same_blob(r, n);
    same_blob(r, 151); /* one tick: runs of 120, 31 */
    same_blob(r, 120); /* one run: in order already */
    /* reversed: a run a reading */
    static struct wt_tick_reading rev[4000];
    for (size_t i = 0; i < n; i++)
        rev[i] = r[n - 1 - i];
    same_blob(rev, n);
    /* shuffled */
    unsigned seed = 11;
    for (size_t i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        size_t j = (seed >> 8) % (i + 1);
        struct wt_tick_reading t = r[i];
        r[i] = r[j];
        r[j] = t;
    }
    same_blob(r, n);
    round_trip(r, n);
    /* one series read many times in one flush (an import, a long flush interval), shuffled, each
     * time given twice */
    for (int i = 0; i < 400; i++)
        r[i] = (struct wt_tick_reading){5, T0 + (i * 37 % 200) * S, i};
    same_blob(r, 400);
    round_trip(r, 400);
}

WT_TEST(ticks_refuse_bad_input_and_bad_blobs)
{
    struct wt_tick_reading r[2] = {{1, T0, 1}, {0, T0, 2}};
    uint8_t *blob = NULL;
    size_t len = 0;
    int64_t lo, hi;
    WT_EQ_INT(wt_ticks_encode(r, 0, &blob, &len, &lo, &hi), -EINVAL);
    WT_EQ_INT(wt_ticks_encode(r, 2, &blob, &len, &lo, &hi), -EINVAL); /* series 0 */
    r[1] = (struct wt_tick_reading){2, INT64_MIN, 2};
    r[0].t_ns = INT64_MAX;
    WT_EQ_INT(wt_ticks_encode(r, 2, &blob, &len, &lo, &hi), -EINVAL); /* 2^64 ns apart */
    WT_ASSERT(blob == NULL);
    /* format 9; no readings; a series of 0 points; an id step of 0; a payload cut short; a
     * byte left over after the last series */
    const uint8_t junk[][11] = {{9, 1, 0, 1, 1, 1, 3, 0, 3, 0},
                                {WT_TICKS_PLAIN, 0},
                                {WT_TICKS_PLAIN, 1, 0, 1, 1, 0, 3, 0, 3, 0},
                                {WT_TICKS_PLAIN, 1, 0, 1, 0, 1, 3, 0, 3, 0},
                                {WT_TICKS_PLAIN, 1, 0, 1, 1, 1, 2, 0, 3, 0},
                                {WT_TICKS_PLAIN, 1, 0, 1, 1, 1, 3, 0, 3, 0, 0}};
    const size_t jlen[] = {10, 2, 10, 10, 10, 11};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        struct wt_point_buf out = {0};
        struct seen *s = calloc(1, sizeof *s);
        WT_ASSERT(wt_ticks_series(junk[i], jlen[i], 1, INT64_MIN, INT64_MAX, &out) != 0);
        WT_EQ_INT(out.n, 0);
        WT_ASSERT(wt_ticks_each(junk[i], jlen[i], see, s) != 0);
        WT_EQ_INT(s->calls, 0);
        free(s);
        free(out.p);
    }
    /* the last one without its extra byte: one series, one point at the base, 0 at scale 3 */
    const uint8_t good[] = {WT_TICKS_PLAIN, 1, 0, 1, 1, 1, 3, 0, 3, 0};
    struct wt_point_buf out = {0};
    WT_EQ_INT(wt_ticks_series(good, sizeof good, 1, INT64_MIN, INT64_MAX, &out), 0);
    WT_EQ_INT(out.n, 1);
    WT_EQ_INT(out.p[0].t_ns, 0);
    free(out.p);
}

WT_TEST(ticks_walk_stops_when_asked)
{
    static struct wt_tick_reading r[40];
    for (int i = 0; i < 40; i++)
        r[i] = (struct wt_tick_reading){1 + i % 8, T0 + i / 8, i};
    uint8_t *blob = NULL;
    size_t len = 0;
    int64_t lo, hi;
    WT_EQ_INT(wt_ticks_encode(r, 40, &blob, &len, &lo, &hi), 0);
    WT_EQ_INT(lo, T0);
    WT_EQ_INT(hi, T0 + 4);
    struct seen *s = calloc(1, sizeof *s);
    s->stop_at = 3;
    WT_EQ_INT(wt_ticks_each(blob, len, see, s), 1);
    WT_EQ_INT(s->calls, 3);
    WT_EQ_INT(s->n, 15);
    free(s);
    free(blob);
}

/* What wt_ticks_walk gives of a blob, series by series, into s (as see does). */
static void walk_all(const uint8_t *blob, size_t len, struct seen *s)
{
    struct wt_ticks_walk w;
    struct wt_point_buf pb = {0};
    WT_EQ_INT(wt_ticks_walk_open(blob, len, &w), 0);
    for (; w.have; wt_ticks_walk_next(&w)) {
        pb.n = 0;
        WT_EQ_INT(wt_ticks_walk_points(&w, &pb), 0);
        WT_EQ_INT(pb.n, w.g.n);
        see(s, w.g.id, pb.p, pb.n);
    }
    free(pb.p);
    wt_ticks_walk_free(&w);
}

WT_TEST(ticks_a_walk_series_by_series_gives_what_each_gives)
{
    /* 4000 readings of 500 series (zstd) and 40 of 8 (plain): the same series and points */
    static struct wt_tick_reading r[4000];
    for (int i = 0; i < 4000; i++)
        r[i] =
            (struct wt_tick_reading){1 + (i * 7) % 500, T0 + (i / 500) * S + i % 3, i * 0.25 - 17};
    for (int big = 0; big < 2; big++) {
        size_t n = big ? 4000 : 40;
        uint8_t *blob = NULL;
        size_t len = 0;
        int64_t lo, hi;
        WT_EQ_INT(wt_ticks_encode(r, n, &blob, &len, &lo, &hi), 0);
        WT_EQ_INT(blob[0], big ? WT_TICKS_ZSTD : WT_TICKS_PLAIN);
        struct seen *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
        WT_EQ_INT(wt_ticks_each(blob, len, see, a), 0);
        walk_all(blob, len, b);
        WT_EQ_INT(b->calls, a->calls);
        WT_EQ_INT(b->n, a->n);
        WT_ASSERT(memcmp(a->r, b->r, a->n * sizeof *a->r) == 0);
        free(a);
        free(b);
        free(blob);
    }
    /* framing that is not whole is refused when opened; a series whose points do not decode
     * (value mode 200) is refused when read, the buffer left as it was */
    const uint8_t cut[] = {WT_TICKS_PLAIN, 1, 0, 1, 1, 1, 3, 0, 3};
    const uint8_t bad[] = {WT_TICKS_PLAIN, 1, 0, 1, 1, 1, 3, 0, 200, 0};
    struct wt_ticks_walk w;
    WT_EQ_INT(wt_ticks_walk_open(cut, sizeof cut, &w), -EINVAL);
    WT_ASSERT(!w.have && w.plain == NULL);
    WT_EQ_INT(wt_ticks_walk_open(bad, sizeof bad, &w), 0);
    WT_ASSERT(w.have);
    WT_EQ_INT(w.g.id, 1);
    struct wt_point_buf pb = {0};
    WT_EQ_INT(wt_ticks_walk_points(&w, &pb), -EINVAL);
    WT_EQ_INT(pb.n, 0);
    wt_ticks_walk_next(&w);
    WT_ASSERT(!w.have);
    free(pb.p);
    wt_ticks_walk_free(&w);
}

/* One tick of an 8-GPU node as the daemon stores it: about 240 series of watts, joules, celsius,
 * ratios and hertz at one time, most with a fixed decimal resolution. */
WT_TEST(ticks_an_8_gpu_tick_is_a_few_bytes_a_reading)
{
    static struct wt_tick_reading r[240 * 10];
    unsigned seed = 7;
    size_t n = 0;
    for (int tick = 0; tick < 10; tick++) {
        for (int sid = 1; sid <= 240; sid++) {
            seed = seed * 1103515245u + 12345u;
            double v;
            switch (sid % 5) {
            case 0:
                v = 300.0 + (double)(seed >> 20) / 1000.0;
                break; /* W, mW */
            case 1:
                v = 4.2e7 + tick * 350.0 + (double)(seed >> 22) / 1e3;
                break; /* J, mJ */
            case 2:
                v = 40.0 + (double)(seed >> 24) / 100.0;
                break; /* °C, 0.01 */
            case 3:
                v = (double)(seed >> 25) / 100.0;
                break; /* ratio */
            default:
                v = 1980e6;
                break; /* Hz */
            }
            r[n++] = (struct wt_tick_reading){sid, T0 + tick * S, v};
        }
    }
    /* one flush a tick: a body under WT_TICKS_ZSTD_MIN, kept plain (issue 49: zstd does not pay
     * on a row that lives minutes); one of 10 ticks: zstd */
    size_t one = round_trip(r, 240);
    int one_fmt = last_fmt;
    size_t ten = round_trip(r, n);
    printf("# one tick: %zu B for 240 readings (%.2f B/reading); ten ticks: %.2f B/reading\n", one,
           (double)one / 240, (double)ten / (double)n);
    WT_EQ_INT(one_fmt, WT_TICKS_PLAIN);
    WT_EQ_INT(last_fmt, WT_TICKS_ZSTD);
    WT_ASSERT(one < 240 * 9);
    WT_ASSERT(ten < n * 6);
}
