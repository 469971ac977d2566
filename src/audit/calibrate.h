/* SPDX-License-Identifier: MIT */
/*
 * Calibration against the wall: a straight line through the steps of a controlled load sweep,
 *
 *   wall_w = a + b × chip_w          (per node; chip_w the GPUs' sum, or GPUs + RAPL)
 *
 * fitted by ordinary least squares, with its residuals and 95 % confidence intervals of a and b
 * (Student's t with n - 2 degrees of freedom). a is what the node burns beside its chips at zero
 * chip load (fans, PSU, NICs, disks); b above 1 is what grows with the load (PSU losses, fans
 * spinning up). The wall tracks the chips only when the steps moved the chips' power, b's
 * interval lies above 0 and the line explains most of the wall's variation (R² >= 0.9);
 * otherwise the fit says "wall does not track chip" and why.
 *
 * Models are kept in one JSON file (calibration.json beside the store), written whole, fsync'd
 * and renamed, each with its date; the reconciliation (audit/reconcile.h) compares later readings
 * with them.
 */
#ifndef WT_CALIBRATE_H
#define WT_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"

struct wt_calib_fit {
    size_t n;
    double a, b;        /* W, W/W */
    double a_ci, b_ci;  /* 95 % half-widths (NAN with n < 3) */
    double resid_sd_w;  /* residual standard deviation, sqrt(SSE / (n - 2)) */
    double max_resid_w; /* the largest |residual| */
    double r2;          /* share of the wall's variance the line explains */
    double chip_min_w, chip_max_w;
    bool tracks;   /* the wall tracks the chips */
    char why[160]; /* when !tracks: "wall does not track chip: ..." */
};

/* The share of its mean the chips' power must span over the steps for the fit to mean anything. */
#define WT_CALIB_MIN_SPAN 0.05
#define WT_CALIB_MIN_R2 0.9

/*
 * Fits wall = a + b × chip over n points (pure). Returns 0, or -EINVAL with n < 2 or a point
 * that is not finite. With every chip value equal, b is 0 and tracks is false.
 */
int wt_calib_fit(const double *chip_w, const double *wall_w, size_t n,
                 struct wt_calib_fit *out) WT_MUST_USE;

/* Student's t quantile for a two-sided 95 % interval with dof degrees of freedom (dof >= 1). */
double wt_calib_t95(size_t dof);

/*
 * The fresh readings of one wall meter in one step. A meter polled every 30 s, or slow to answer,
 * serves the same reading to many requests: only readings taken inside the step's settled window
 * [from_ns, to_ns] (CLOCK_REALTIME, the reading's own time) count, each once.
 */
struct wt_calib_fresh {
    int64_t from_ns, to_ns; /* the window: set by the caller, the rest zeroed */
    int64_t last_ns;        /* the newest reading's time seen, inside the window or not (0: none) */
    int64_t counted_ns;     /* the last counted reading's time */
    double sum_w;           /* of the counted readings */
    int n;                  /* readings counted */
};

/* Fewer fresh readings than this in a step, and the meter is not used for the fit. */
#define WT_CALIB_MIN_FRESH 2

/*
 * Offers f one reading as served (its time t_ns, its value w). Counts it when it was taken inside
 * the window and is newer than the last one counted (pure). Returns true when counted.
 */
bool wt_calib_fresh_add(struct wt_calib_fresh *f, int64_t t_ns, double w);

/*
 * The shortest hold (s) that gives a meter WT_CALIB_MIN_FRESH readings in each step's second
 * half: a new reading comes every max(interval_s, duration_s) (a poll that outlasts its interval
 * delays the next), and a half of 2 x that always holds two. Whole seconds, rounded up; 0 when
 * both are unknown (<= 0).
 */
double wt_calib_min_hold_s(double interval_s, double duration_s);

#define WT_CALIB_MAX_MODELS 64

struct wt_calib_model {
    char node[64];
    char wall[16]; /* what the wall is: "pdu_outlet" or "bmc" */
    char chip[16]; /* what chip_w was: "gpu" or "node" (GPUs + RAPL) */
    int64_t t_ns;  /* when it was fitted */
    struct wt_calib_fit fit;
};

/* The model file: alerts-free, beside the store ("calibration.json"). Returns 0 or -ENAMETOOLONG.
 */
int wt_calib_model_path(const struct wt_config *cfg, char *out, size_t n) WT_MUST_USE;

/*
 * Writes models[0..n) to path whole (a temporary file, fsync, rename, the directory fsync'd).
 * A model of a node already in the file replaces it; the others are kept. Returns 0 or a negative
 * errno with err naming the path.
 */
int wt_calib_save(const char *path, const struct wt_calib_model *m, size_t n,
                  struct wt_err *err) WT_MUST_USE;

/*
 * Reads up to cap models from path into m, *n of them. A missing file is 0 models (returns 0);
 * a file that is not a model file is -EINVAL with err naming the path and the field.
 */
int wt_calib_load(const char *path, struct wt_calib_model *m, size_t cap, size_t *n,
                  struct wt_err *err) WT_MUST_USE;

struct wt_recon_node;
/*
 * The model file of cfg (wt_calib_model_path) applied to nodes[0..n) over a window of window_s
 * seconds (audit/reconcile.h: wt_recon_apply_models). *used: the models read (0 without a
 * file). Returns 0, or -EINVAL / -ENAMETOOLONG / -ENOMEM with err naming the file.
 */
int wt_calib_apply(const struct wt_config *cfg, struct wt_recon_node *nodes, size_t n,
                   double window_s, size_t *used, struct wt_err *err) WT_MUST_USE;

#endif
