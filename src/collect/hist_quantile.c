/* SPDX-License-Identifier: MIT */
/*
 * histogram_quantile over classic buckets (see hist_quantile.h). The steps follow PromQL's
 * bucketQuantile in order: the answers for q outside [0, 1] before anything else, then sort,
 * the +Inf check, merging of equal bounds, the precision fix, the monotonic envelope, and the
 * search for the first bucket whose count reaches the rank. Written from the documented
 * behaviour and checked against hand-computed PromQL answers in tests/unit.
 */
#include "collect/hist_quantile.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static int by_le(const void *x, const void *y)
{
    const struct wt_hist_bucket *a = x, *b = y;
    return (a->le > b->le) - (a->le < b->le);
}

double wt_hist_quantile(double q, struct wt_hist_bucket *b, size_t n)
{
    if (isnan(q))
        return NAN;
    if (q < 0)
        return -INFINITY;
    if (q > 1)
        return INFINITY;
    if (n == 0)
        return NAN;
    for (size_t i = 0; i < n; i++) {
        if (isnan(b[i].le))
            return NAN;
    }
    qsort(b, n, sizeof *b, by_le);
    if (!(isinf(b[n - 1].le) && b[n - 1].le > 0))
        return NAN;

    /* Buckets of the same bound count together. */
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (b[i].le == b[m].le) {
            b[m].count += b[i].count;
        } else {
            b[++m] = b[i];
        }
    }
    n = m + 1;

    /* Counts that differ by float noise only (a rate's rounding) are equal. */
    double prev = b[0].count;
    for (size_t i = 1; i < n; i++) {
        double d = fabs(b[i].count - prev);
        if (d == 0)
            continue;
        if (d / b[i].count <= 1e-12)
            b[i].count = prev;
        else
            prev = b[i].count;
    }
    /* The envelope: a bucket never counts fewer than the one below it. */
    double max = b[0].count;
    for (size_t i = 1; i < n; i++) {
        if (b[i].count > max)
            max = b[i].count;
        else if (b[i].count < max)
            b[i].count = max;
    }

    if (n < 2)
        return NAN;
    double total = b[n - 1].count;
    if (total == 0)
        return NAN;
    double rank = q * total;
    /* The first of the finite buckets whose count reaches the rank, else the +Inf one. */
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].count >= rank)
            hi = mid;
        else
            lo = mid + 1;
    }
    size_t k = lo;
    if (k == n - 1)
        return b[n - 2].le;
    if (k == 0 && b[0].le <= 0)
        return b[0].le;
    double start = 0, end = b[k].le, count = b[k].count;
    if (k > 0) {
        start = b[k - 1].le;
        count -= b[k - 1].count;
        rank -= b[k - 1].count;
    }
    return start + (end - start) * (rank / count);
}

size_t wt_hist_increase(const struct wt_hist_bucket *start, size_t n_start,
                        const struct wt_hist_bucket *end, size_t n_end, struct wt_hist_bucket *out)
{
    size_t n = 0;
    for (size_t i = 0; i < n_end; i++) {
        const struct wt_hist_bucket *s = NULL;
        for (size_t j = 0; j < n_start; j++) {
            /* Mostly the same layout: try the same position first. */
            size_t k = (i + j) % n_start;
            if (start[k].le == end[i].le) {
                s = &start[k];
                break;
            }
        }
        if (!s)
            continue;
        out[n].le = end[i].le;
        out[n].count = end[i].count < s->count ? end[i].count : end[i].count - s->count;
        n++;
    }
    return n;
}
