/* SPDX-License-Identifier: MIT */
/*
 * The report's pure parts: min/max downsampling keeps every pixel column's minimum and maximum
 * (checked against a brute-force scan of random series, with spikes, gaps and points outside
 * the window), in time order, at most two points per column; and findings rank by energy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audit/report.h"
#include "runner.h"

#define S 1000000000LL

static void check_columns(const struct wt_point *in, size_t n, int64_t a, int64_t b, size_t cols)
{
    struct wt_point *out = malloc(2 * cols * sizeof *out);
    size_t nout = 0;
    WT_ASSERT(out != NULL);
    wt_report_downsample(in, n, a, b, cols, out, &nout);
    WT_ASSERT(nout <= 2 * cols);
    for (size_t i = 1; i < nout; i++)
        WT_ASSERT(out[i].t_ns > out[i - 1].t_ns);
    for (size_t c = 0; c < cols; c++) {
        /* brute force: the column's extremes among the inputs inside the window */
        bool any = false;
        double lo = 0, hi = 0;
        for (size_t i = 0; i < n; i++) {
            if (in[i].t_ns < a || in[i].t_ns > b)
                continue;
            size_t k = (size_t)((double)(in[i].t_ns - a) / (double)(b - a) * (double)cols);
            if (k >= cols)
                k = cols - 1;
            if (k != c)
                continue;
            if (!any || in[i].v < lo)
                lo = in[i].v;
            if (!any || in[i].v > hi)
                hi = in[i].v;
            any = true;
        }
        bool has_lo = false, has_hi = false;
        size_t kept = 0;
        for (size_t i = 0; i < nout; i++) {
            size_t k = (size_t)((double)(out[i].t_ns - a) / (double)(b - a) * (double)cols);
            if (k >= cols)
                k = cols - 1;
            if (k != c)
                continue;
            kept++;
            has_lo |= out[i].v == lo;
            has_hi |= out[i].v == hi;
        }
        WT_ASSERT(any ? has_lo && has_hi && kept <= 2 : kept == 0);
    }
    for (size_t i = 0; i < nout; i++)
        WT_ASSERT(out[i].t_ns >= a && out[i].t_ns <= b);
    free(out);
}

WT_TEST(downsample_keeps_every_min_and_max)
{
    srand(7);
    for (int round = 0; round < 20; round++) {
        size_t n = 1000 + (size_t)(rand() % 20000);
        struct wt_point *p = malloc(n * sizeof *p);
        WT_ASSERT(p != NULL);
        int64_t t = 1764000000 * S;
        for (size_t i = 0; i < n; i++) {
            /* 1 s steps with an occasional long gap; a spike now and then */
            t += (rand() % 50 == 0) ? 600 * S : S;
            double v = 300 + (rand() % 1000) / 10.0;
            if (rand() % 997 == 0)
                v = 5000;
            if (rand() % 991 == 0)
                v = -1;
            p[i] = (struct wt_point){t, v};
        }
        /* a window that cuts off both ends, and one that holds everything */
        int64_t a = p[n / 10].t_ns, b = p[n - n / 10].t_ns;
        check_columns(p, n, a, b, 37 + (size_t)(rand() % 800));
        check_columns(p, n, p[0].t_ns, p[n - 1].t_ns, WT_REPORT_COLS);
        free(p);
    }
}

WT_TEST(downsample_small_and_empty)
{
    struct wt_point p[3] = {{10 * S, 1}, {20 * S, 5}, {30 * S, 3}}, out[8];
    size_t n = 99;
    wt_report_downsample(p, 3, 0, 100 * S, 4, out, &n);
    /* columns of 25 s: [10, 20] then [30] */
    WT_EQ_INT((int)n, 3);
    WT_ASSERT(out[0].v == 1 && out[1].v == 5 && out[2].v == 3);
    wt_report_downsample(p, 3, 40 * S, 50 * S, 4, out, &n);
    WT_EQ_INT((int)n, 0);
    wt_report_downsample(p, 0, 0, 100 * S, 4, out, &n);
    WT_EQ_INT((int)n, 0);
    wt_report_downsample(p, 3, 100 * S, 0, 4, out, &n);
    WT_EQ_INT((int)n, 0);
}

WT_TEST(findings_rank_by_energy)
{
    struct wt_report *r = calloc(1, sizeof *r);
    WT_ASSERT(r != NULL);
    const double j[] = {5, 50, 0, 500, 20};
    for (size_t i = 0; i < 5; i++) {
        r->findings[i].energy_j = j[i];
        snprintf(r->findings[i].kind, sizeof r->findings[i].kind, "k%zu", i);
    }
    r->nfindings = 5;
    wt_report_rank(r);
    WT_EQ_STR(r->findings[0].kind, "k3");
    WT_EQ_STR(r->findings[1].kind, "k1");
    WT_EQ_STR(r->findings[2].kind, "k4");
    WT_EQ_STR(r->findings[4].kind, "k2");
    free(r);
}

/* The noise of a difference: twice the combined standard error of the pieces. */
WT_TEST(compare_noise)
{
    struct wt_report_cmp_row row;
    const double flat_a[6] = {1, 1, 1, 1, 1, 1}, flat_b[6] = {2, 2, 2, 2, 2, 2};
    wt_report_cmp_judge(&row, 1, 2, flat_a, 6, flat_b, 6);
    WT_ASSERT(row.have_noise && row.noise == 0 && row.exceeds);
    WT_NEAR(row.diff, 1, 1e-12);
    /* pieces 0..5 in both: se = sqrt(3.5) / sqrt(6), noise = 2 sqrt(2) se = 2.16 */
    const double spread[6] = {0, 1, 2, 3, 4, 5};
    wt_report_cmp_judge(&row, 2.5, 4.5, spread, 6, spread, 6);
    WT_NEAR(row.noise, 2 * sqrt(2 * 3.5 / 6), 1e-9);
    WT_ASSERT(!row.exceeds);
    wt_report_cmp_judge(&row, 2.5, 5.0, spread, 6, spread, 6);
    WT_ASSERT(row.exceeds);
    /* fewer than two pieces with a value: unknown, never "exceeds" */
    const double one[6] = {NAN, NAN, 3, NAN, NAN, NAN};
    wt_report_cmp_judge(&row, 3, 30, one, 6, spread, 6);
    WT_ASSERT(!row.have_noise && !row.exceeds);
    wt_report_cmp_judge(&row, NAN, 3, spread, 6, spread, 6);
    WT_ASSERT(!row.have_a && !row.have_noise);
}
