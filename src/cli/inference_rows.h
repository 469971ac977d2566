/* SPDX-License-Identifier: MIT */
/*
 * The rows of `wattage inference` (cli/inference.c's command, its output and --compare):
 * one per target and model, read from the store with their energy and emissions attributed
 * (cli/inference_rows.c), and grouped under --by. See cli/inference.c for the rules.
 */
#ifndef WT_CLI_INFERENCE_ROWS_H
#define WT_CLI_INFERENCE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/carbon.h"
#include "audit/inference_kpi.h"
#include "cli/cli.h"
#include "store/store.h"

/* One target and model, then one row of the output (a group of them under --by). */
struct row {
    char target[128], model[256], engine[64], gpus[256];
    char tags[WT_LABELS_LEN]; /* the target's tags from its info series, as labels */
    int64_t a, b;             /* the span its samples cover in the window (0: none) */
    bool has_data;
    bool split;       /* its target's energy shared between models */
    bool gpus_shared; /* other targets serve on some of its GPUs: shared with them */
    /* the earliest and latest first (last) sample of each latency histogram's bounds */
    int64_t lat_first[WT_IKPI_NLAT][2], lat_last[WT_IKPI_NLAT][2];
    bool bounds_changed; /* some histogram's bounds did not all span the same samples */
    double share;
    const char *method;
    double pue; /* of its emissions (NaN: no carbon figure) */
    bool pue_measured;
    const char *intensity;  /* measured, forecast, ... (wt_carbon_result_json's words) */
    double wall_j, chips_j; /* the whole node's over the target's span (NaN: no wall known) */
    const char *wall_from;  /* "pdu_outlet" or "bmc" */
    struct wt_ikpi_sums s;
};

struct rows {
    struct row *r;
    size_t n, cap;
};

/* The rows of every target and model over [from, to], their energy and emissions attributed. */
int wt_cli_inference_gather(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t from,
                            int64_t to, struct rows *rs, struct wt_err *err);
/*
 * Rows grouped by model, target or tags: energy, tokens, requests and buckets are added up and
 * the ratios computed again on the sums (never an average of ratios). A target's idle seconds
 * are counted once per group however many of its models are in it.
 */
int wt_cli_inference_group(const struct rows *in, const char *by, struct rows *out);
struct row *wt_cli_inference_row_of(struct rows *rs, const char *target, const char *model);

#endif
