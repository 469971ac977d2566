/* SPDX-License-Identifier: MIT */
/*
 * The serving KPIs of one inference target and model over a window (`wattage inference`): the
 * window increase of the server's counters as PromQL's increase() takes it (a drop is a restart
 * and the value after it counts), latency quantiles from the buckets' increases as
 * histogram_quantile(q, increase(x_bucket[w])) gives them, and the ratios of the serving GPUs'
 * energy to tokens and requests. Pure functions: the store is read by src/cli/inference.c.
 *
 * The ratios are all-in: the energy of the window divided by the tokens of one kind. Prefill and
 * decode energy are not told apart, so joules_per_prompt_token and joules_per_generated_token
 * each carry the whole energy and do not add up.
 */
#ifndef WT_INFERENCE_KPI_H
#define WT_INFERENCE_KPI_H

#include <stddef.h>
#include <stdint.h>

#include "collect/hist_quantile.h"

/*
 * The increase of a counter over its n samples v (time order), as PromQL's increase() sums it
 * before extrapolating: each rise counts, and after a drop (a restart) the new value counts
 * whole. Fewer than two samples: NaN (increase() gives nothing).
 */
double wt_ikpi_increase(const double *v, size_t n);

/* The window increase of one histogram's buckets, summed by le (as sum by (le) does). */
#define WT_IKPI_MAX_BUCKETS 64
struct wt_ikpi_hist {
    size_t n;
    struct wt_hist_bucket b[WT_IKPI_MAX_BUCKETS];
};

/*
 * Adds inc observations to the bucket le of h (a new bucket, or the sum with the one of the same
 * le). Returns 0, or -E2BIG when h has WT_IKPI_MAX_BUCKETS other bounds already.
 */
int wt_ikpi_hist_add(struct wt_ikpi_hist *h, double le, double inc);
/* The q-quantile of h as PromQL's histogram_quantile (wt_hist_quantile on a copy); NaN when h has
 * no observations or no +Inf bucket. */
double wt_ikpi_hist_quantile(const struct wt_ikpi_hist *h, double q);

enum { WT_IKPI_E2E, WT_IKPI_TTFT, WT_IKPI_ITL, WT_IKPI_NLAT };
/* "e2e", "ttft", "itl"; and the latency kind of a name (-1 when none). */
const char *wt_ikpi_lat_name(int k);
int wt_ikpi_lat_kind(const char *name);

/* What one row adds up over the window; NaN where the server gives no such series. */
struct wt_ikpi_sums {
    double energy_j, energy_u_j; /* the serving GPUs' energy (its share of it) and its error bar */
    double idle_j, idle_s;       /* of which while nothing ran or waited, and for how long */
    double generated, prompt, prompt_cached, prompt_computed; /* tokens */
    double requests;                                          /* finished requests */
    struct wt_ikpi_hist lat[WT_IKPI_NLAT];
};

/* Sets every figure of s to NaN (energy and idle included) and empties its histograms. */
void wt_ikpi_sums_init(struct wt_ikpi_sums *s);
/* Adds b to a, figure by figure: NaN + x = x, and buckets by le. Returns 0 or -E2BIG. */
int wt_ikpi_sums_add(struct wt_ikpi_sums *a, const struct wt_ikpi_sums *b);

/* The KPIs of a row; NaN where a figure is missing or a denominator is 0. */
struct wt_ikpi {
    double generated_tokens_per_kwh;
    double joules_per_generated_token, joules_per_generated_token_u; /* with the energy's bar */
    double joules_per_prompt_token;          /* all prompt tokens, cached ones too */
    double joules_per_computed_prompt_token; /* prompt tokens not served from cache */
    double joules_per_request;
    double lat_s[WT_IKPI_NLAT][3]; /* p50, p95, p99 per latency kind */
};
extern const double wt_ikpi_quantiles[3]; /* 0.50, 0.95, 0.99 */

void wt_ikpi_compute(const struct wt_ikpi_sums *s, struct wt_ikpi *out);

/*
 * The share of a target's energy given to one model when several models share its GPUs: by its
 * generated tokens in the window (part / all). NaN when all is 0 or NaN.
 */
double wt_ikpi_share(double part_tokens, double all_tokens);

/* A stretch of time [a_ns, b_ns]. */
struct wt_ikpi_span {
    int64_t a_ns, b_ns;
};

/*
 * The idle stretches of a server from its n samples (t_ns increasing) of busy, the requests
 * running plus waiting: the span between two consecutive samples that both say 0 is idle when
 * they are at most max_gap_ns apart (a longer gap is a server not read, not known idle);
 * touching spans are merged. Writes up to max stretches to out and returns how many there are
 * (more than max when out was too short).
 */
size_t wt_ikpi_idle_spans(const int64_t *t_ns, const double *busy, size_t n, int64_t max_gap_ns,
                          struct wt_ikpi_span *out, size_t max);

#endif
