/* SPDX-License-Identifier: MIT */
/*
 * Quantiles from the cumulative buckets of a classic Prometheus histogram, with exactly the
 * semantics of PromQL's histogram_quantile (prometheus/prometheus promql/quantile.go,
 * bucketQuantile), and the per-bucket increase between two scrapes that
 * histogram_quantile(q, increase(x_bucket[w])) is computed over. Pure functions.
 */
#ifndef WT_HIST_QUANTILE_H
#define WT_HIST_QUANTILE_H

#include <stddef.h>

/* One cumulative bucket: observations <= le (le may be +Inf). */
struct wt_hist_bucket {
    double le;
    double count;
};

/*
 * The q-quantile of the n buckets at b, as PromQL computes it: b is sorted by le, buckets of
 * the same le merged and counts made monotonic in place (so b is changed). Within the bucket
 * holding rank q * total the value is interpolated linearly; the lowest bucket starts at 0 when
 * its le > 0 (else its le is the answer); a rank in the +Inf bucket gives the highest finite le.
 * Special cases, as PromQL: q NaN -> NaN; q < 0 -> -Inf; q > 1 -> +Inf; no +Inf bucket, fewer
 * than two buckets after merging, or no observations -> NaN. A NaN le (undefined order in
 * PromQL) gives NaN. Counts within a relative 1e-12 of the previous bucket's count are taken
 * as equal to it first (Prometheus 2.5x and later; 2.42 does not).
 */
double wt_hist_quantile(double q, struct wt_hist_bucket *b, size_t n);

/*
 * The increase of each bucket over a window, from the cumulative buckets of its first scrape
 * (start, n_start) and its last (end, n_end): per bucket of end, its count less the start
 * bucket of the same le, or its count alone when it went down (a counter reset, as PromQL's
 * increase() takes it, per series). A bucket of end with no start bucket of the same le is left
 * out, as increase() gives nothing for a series with one sample. PromQL's extrapolation to the
 * window's edges scales every bucket alike and leaves quantiles unchanged; it is not applied.
 * Writes up to n_end buckets to out (which may not overlap the inputs) and returns how many.
 */
size_t wt_hist_increase(const struct wt_hist_bucket *start, size_t n_start,
                        const struct wt_hist_bucket *end, size_t n_end, struct wt_hist_bucket *out);

#endif
