/* SPDX-License-Identifier: MIT */
/*
 * The serving KPIs of one inference target and model over a window (`wattage inference`): the
 * window increase of the server's counters as PromQL's increase() takes it (a drop is a restart
 * and the value after it counts), latency quantiles from the buckets' increases as
 * histogram_quantile(q, increase(x_bucket[w])) gives them, and the ratios of the serving GPUs'
 * energy to tokens and requests. Pure functions: the store is read by src/cli/inference.c.
 *
 * The ratios are all-in: the energy of the window divided by the tokens of one kind, so
 * joules_per_prompt_token and joules_per_generated_token each carry the whole energy and do not
 * add up. No engine says how its GPUs' energy divides between prefill and decode, so the split is
 * estimated (wt_ikpi_prefill_share): between two shares that bracket it, with half their
 * distance as its bound.
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
    double lat_sum_s[WT_IKPI_NLAT]; /* the increase of each histogram's _sum */
    double gco2e;  /* the energy's time-matched emissions (audit/carbon.h), PUE included */
    double node_j; /* the energy at the node's boundary: energy_j x the node's wall / chips */
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
    double prompt_tokens_per_kwh, computed_prompt_tokens_per_kwh; /* all-in, as generated's */
    /* the estimated split (wt_ikpi_prefill_share) and what follows from it */
    double prefill_share, prefill_share_bound; /* of the energy */
    double prefill_share_time, prefill_share_tokens;
    double prefill_energy_j, prefill_energy_bound_j, decode_energy_j, decode_energy_bound_j;
    double prefill_joules_per_computed_prompt_token, prefill_joules_per_computed_prompt_token_u;
    double decode_joules_per_generated_token, decode_joules_per_generated_token_u;
    double gco2e_per_1k_generated_tokens;
    double node_joules_per_generated_token, node_generated_tokens_per_kwh;
};
extern const double wt_ikpi_quantiles[3]; /* 0.50, 0.95, 0.99 */

void wt_ikpi_compute(const struct wt_ikpi_sums *s, struct wt_ikpi *out);

/*
 * The share of the GPUs' energy spent in prefill, estimated: no engine measures it. Two shares
 * bracket it:
 *   time  = sum(ttft) / sum(e2e) of the requests in the window (the histograms' _sum
 *           increases): each request's time is prefill up to its first token and decode after
 *           it, and every running request is given the same power. Prefill's large matrix
 *           products draw more power per request than a decode step, so this is low (and high
 *           only by the queueing time that ttft includes).
 *   tokens = computed prompt tokens / (computed prompt + generated tokens): every token costs
 *           the same. A decode token (one whole pass over the weights for a handful of tokens)
 *           costs more than a prompt token computed in a batch of thousands, so this is high.
 * The estimate is their midpoint and its bound half their distance. *time, *tokens, *est and
 * *bound are NaN when a figure is missing (the time share needs ttft and e2e sums: TGI, Triton
 * and llama.cpp have none) or a denominator is 0.
 */
void wt_ikpi_prefill_share(double ttft_sum_s, double e2e_sum_s, double computed_prompt,
                           double generated, double *time, double *tokens, double *est,
                           double *bound);

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
