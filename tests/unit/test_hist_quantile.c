/* SPDX-License-Identifier: MIT */
/*
 * histogram_quantile as PromQL computes it (promql/quantile.go, bucketQuantile), each answer
 * worked out by hand from that code's steps, and the window increase of cumulative buckets.
 */
#include "collect/hist_quantile.h"
#include "runner.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static double hq(double q, const struct wt_hist_bucket *in, size_t n)
{
    struct wt_hist_bucket b[32];
    WT_ASSERT(n <= N(b));
    memcpy(b, in, n * sizeof *b);
    return wt_hist_quantile(q, b, n);
}

WT_TEST(q_outside_0_1_and_nan)
{
    const struct wt_hist_bucket b[] = {{1, 1}, {INFINITY, 2}};
    WT_ASSERT(isinf(hq(-0.1, b, 2)) && hq(-0.1, b, 2) < 0);
    WT_ASSERT(isinf(hq(1.1, b, 2)) && hq(1.1, b, 2) > 0);
    WT_ASSERT(isnan(hq(NAN, b, 2)));
    /* The q answers come first, even with no usable bucket. */
    const struct wt_hist_bucket no_inf[] = {{1, 1}, {2, 2}};
    WT_ASSERT(isinf(hq(2, no_inf, 2)));
}

WT_TEST(nan_cases)
{
    const struct wt_hist_bucket no_inf[] = {{1, 1}, {2, 2}};
    WT_ASSERT(isnan(hq(0.5, no_inf, 2)));
    const struct wt_hist_bucket only_inf[] = {{INFINITY, 5}};
    WT_ASSERT(isnan(hq(0.5, only_inf, 1)));
    /* Two +Inf buckets merge into one: fewer than two left. */
    const struct wt_hist_bucket two_inf[] = {{INFINITY, 5}, {INFINITY, 5}};
    WT_ASSERT(isnan(hq(0.5, two_inf, 2)));
    const struct wt_hist_bucket empty[] = {{1, 0}, {2, 0}, {INFINITY, 0}};
    WT_ASSERT(isnan(hq(0.5, empty, 3)));
    WT_ASSERT(isnan(wt_hist_quantile(0.5, NULL, 0)));
    const struct wt_hist_bucket nan_le[] = {{NAN, 1}, {INFINITY, 2}};
    WT_ASSERT(isnan(hq(0.5, nan_le, 2)));
    /* q = 0 with an empty first bucket: rank 0 / count 0, NaN as in PromQL. */
    const struct wt_hist_bucket first_empty[] = {{1, 0}, {2, 4}, {INFINITY, 4}};
    WT_ASSERT(isnan(hq(0, first_empty, 3)));
}

WT_TEST(interpolation)
{
    /* Lowest bucket starts at 0 when its bound is > 0. */
    const struct wt_hist_bucket one[] = {{2, 10}, {INFINITY, 10}};
    WT_NEAR(hq(0.5, one, 2), 1, 0);
    WT_NEAR(hq(0.25, one, 2), 0.5, 0);
    const struct wt_hist_bucket b[] = {{0.1, 10}, {0.5, 30}, {1, 40}, {INFINITY, 50}};
    /* rank 20: in (0.1, 0.5], 10 of 20 in -> 0.1 + 0.4 * 10/20 */
    WT_NEAR(hq(0.4, b, 4), 0.3, 1e-15);
    /* rank 40 reaches le=1 exactly: 0.5 + 0.5 * 10/10 */
    WT_NEAR(hq(0.8, b, 4), 1, 0);
    /* rank 45 only in +Inf: the highest finite bound */
    WT_NEAR(hq(0.9, b, 4), 1, 0);
    WT_NEAR(hq(1, b, 4), 1, 0);
    /* q = 1 lands in the first bucket whose count is the total. */
    const struct wt_hist_bucket full[] = {{1, 2}, {2, 4}, {INFINITY, 4}};
    WT_NEAR(hq(1, full, 3), 2, 0);
    WT_NEAR(hq(0, full, 3), 0, 0);
}

WT_TEST(lowest_bound_at_or_below_zero)
{
    const struct wt_hist_bucket b[] = {{-1, 5}, {1, 10}, {INFINITY, 10}};
    WT_NEAR(hq(0.2, b, 3), -1, 0);
    /* Above it, interpolation from -1. */
    WT_NEAR(hq(0.75, b, 3), -1 + 2 * (2.5 / 5), 1e-15);
    const struct wt_hist_bucket z[] = {{0, 5}, {1, 10}, {INFINITY, 10}};
    WT_NEAR(hq(0.1, z, 3), 0, 0);
}

WT_TEST(sorting_merging_monotonic)
{
    const struct wt_hist_bucket unsorted[] = {{INFINITY, 50}, {1, 40}, {0.1, 10}, {0.5, 30}};
    WT_NEAR(hq(0.4, unsorted, 4), 0.3, 1e-15);
    /* Two series with the same le (le="1" and le="1.0") count together. */
    const struct wt_hist_bucket dup[] = {{1, 3}, {1, 2}, {2, 10}, {INFINITY, 10}};
    WT_NEAR(hq(0.5, dup, 4), 1, 0);
    /* A bucket below the one before it is raised to it (the envelope). */
    const struct wt_hist_bucket dip[] = {{1, 5}, {2, 3}, {3, 10}, {INFINITY, 10}};
    WT_NEAR(hq(0.5, dip, 4), 1, 0);
    WT_NEAR(hq(0.6, dip, 4), 2 + 1 * (1.0 / 5), 1e-15);
    /* Counts within 1e-12 of the bucket below are that count (rate() rounding). */
    const struct wt_hist_bucket fuzz[] = {{1, 1e12}, {2, 1e12 + 0.5}, {INFINITY, 1e12 + 0.5}};
    WT_NEAR(hq(1, fuzz, 3), 1, 0);
}

WT_TEST(increase_over_a_window)
{
    const struct wt_hist_bucket s[] = {{1, 5}, {2, 8}, {INFINITY, 10}};
    const struct wt_hist_bucket e[] = {{1, 7}, {2, 12}, {INFINITY, 15}};
    struct wt_hist_bucket out[4];
    WT_EQ_INT(wt_hist_increase(s, 3, e, 3, out), 3);
    WT_NEAR(out[0].count, 2, 0);
    WT_NEAR(out[1].count, 4, 0);
    WT_NEAR(out[2].count, 5, 0);
    WT_ASSERT(isinf(out[2].le));
    /* rank 2.5 of 5: (1, 2], 0.5 of 2 -> 1.25 */
    WT_NEAR(wt_hist_quantile(0.5, out, 3), 1.25, 1e-15);

    /* A restart: every bucket went down, each is its end count. */
    const struct wt_hist_bucket r[] = {{1, 1}, {2, 2}, {INFINITY, 3}};
    WT_EQ_INT(wt_hist_increase(s, 3, r, 3, out), 3);
    WT_NEAR(out[0].count, 1, 0);
    WT_NEAR(out[2].count, 3, 0);
    /* Per bucket, as PromQL: one that went down is a reset, the others a difference. */
    const struct wt_hist_bucket m[] = {{1, 4}, {2, 9}, {INFINITY, 12}};
    WT_EQ_INT(wt_hist_increase(s, 3, m, 3, out), 3);
    WT_NEAR(out[0].count, 4, 0);
    WT_NEAR(out[1].count, 1, 0);
    WT_NEAR(out[2].count, 2, 0);

    /* A bucket new at the end has no increase; order of the start does not matter. */
    const struct wt_hist_bucket s2[] = {{INFINITY, 10}, {1, 5}};
    WT_EQ_INT(wt_hist_increase(s2, 2, e, 3, out), 2);
    WT_NEAR(out[0].le, 1, 0);
    WT_NEAR(out[0].count, 2, 0);
    WT_ASSERT(isinf(out[1].le));
    WT_NEAR(out[1].count, 5, 0);
    WT_EQ_INT(wt_hist_increase(NULL, 0, e, 3, out), 0);
}

/*
 * The same answers as Prometheus: each expected value below is what `promtool test rules`
 * (Prometheus 2.42, Debian 12) printed for histogram_quantile over these buckets as series, and
 * for histogram_quantile(q, increase(x_bucket[1m])) over two samples 1 min apart. Equal bits.
 */
WT_TEST(matches_promtool)
{
    const struct wt_hist_bucket e2e[] = {
        {0.3, 0},   {0.5, 0},    {0.8, 1},    {1.0, 2},       {1.5, 5},   {2.0, 9},
        {2.5, 14},  {5.0, 78},   {10, 171},   {15, 193},      {20, 198},  {30, 200},
        {40, 200},  {50, 200},   {60, 200},   {120, 200},     {240, 200}, {480, 200},
        {960, 200}, {1920, 200}, {7680, 200}, {INFINITY, 200}};
    const struct {
        double q, want;
    } e[] = {{0.5, 6.182795698924731}, {0.95, 14.318181818181818}, {0.99, 20}, {1, 30}, {0.01, 1},
             {0.25, 3.90625}};
    for (size_t i = 0; i < N(e); i++)
        WT_NEAR(hq(e[i].q, e2e, N(e2e)), e[i].want, 0);
    WT_ASSERT(isnan(hq(0, e2e, N(e2e))));
    const struct wt_hist_bucket b[] = {{0.1, 10}, {0.5, 30}, {1, 40}, {INFINITY, 50}};
    WT_NEAR(hq(0.4, b, N(b)), 0.30000000000000004, 0);
    const struct wt_hist_bucket neg[] = {{-1, 5}, {1, 10}, {INFINITY, 10}};
    WT_NEAR(hq(0.75, neg, N(neg)), 0, 0);
    const struct wt_hist_bucket dip[] = {{1, 5}, {2, 3}, {3, 10}, {INFINITY, 10}};
    WT_NEAR(hq(0.6, dip, N(dip)), 2.2, 0);

    /* increase() then histogram_quantile: plain, all reset, one bucket reset. */
    const struct wt_hist_bucket s[] = {{1, 5}, {2, 8}, {INFINITY, 10}};
    const struct wt_hist_bucket ends[3][3] = {{{1, 7}, {2, 12}, {INFINITY, 15}},
                                              {{1, 1}, {2, 2}, {INFINITY, 3}},
                                              {{1, 4}, {2, 9}, {INFINITY, 12}}};
    const double want[3] = {1.25, 1.5, 0.5};
    for (size_t i = 0; i < 3; i++) {
        struct wt_hist_bucket out[3];
        size_t n = wt_hist_increase(s, 3, ends[i], 3, out);
        WT_NEAR(wt_hist_quantile(0.5, out, n), want[i], 0);
    }
    struct wt_hist_bucket out[3];
    size_t n = wt_hist_increase(s, 3, ends[2], 3, out);
    WT_NEAR(wt_hist_quantile(0.9, out, n), 0.9, 0);
}
