/* SPDX-License-Identifier: MIT */
/*
 * Chip-vs-wall reconciliation, per node, over a window: the wall (the node's pdu_outlet meters,
 * else its bmc meters, else its own hwmon "wall" sensor: an ACPI power meter) against what its
 * own sensors say (GPUs + CPU packages, or Grace sockets, + DRAM; meters.h):
 *
 *   unaccounted energy = wall - chips            (fans, PSU losses, NICs, disks, ...)
 *   unaccounted power  = unaccounted energy / window length
 *   unaccounted share  = unaccounted energy / wall energy
 *
 * The window is also cut into facility.reconcile.interval pieces (at most 120: longer windows
 * get longer pieces), each with its own share (those where the wall and the chips cover at least
 * facility.min_coverage of the piece). A node is suspect when
 *   chips_exceed_wall: the chips' energy exceeds the wall's by more than
 *                      facility.reconcile.chips_tolerance of the wall (sensors or mapping wrong);
 *   share_drift:       its pieces' shares spread (max - min) by more than
 *                      facility.reconcile.drift_bound (a sensor drifting, a meter re-cabled).
 */
#ifndef WT_RECONCILE_H
#define WT_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/topology.h"
#include "core/err.h"

struct wt_meter_set;

/* wall_from of a node whose wall is its own hwmon "wall" sensor (an ACPI power meter), used only
 * where the topology has no pdu_outlet or bmc meter for it. */
#define WT_RECON_WALL_HWMON "hwmon"

struct wt_recon_node {
    char node[WT_TOPO_NAME];
    const char *wall_from; /* "pdu_outlet", "bmc" or "hwmon" (WT_RECON_WALL_HWMON) */
    int wall_meters;
    double wall_j, wall_coverage;
    double gpu_j, cpu_j, dram_j, chips_j;
    int chip_series;
    double chips_coverage;
    double unaccounted_j, unaccounted_w, share;
    int pieces; /* pieces with a share */
    double share_min, share_max;
    bool chips_exceed_wall, share_drift;
    /* The node's power supplies (hwmon psu_in, psu_out): their conversion loss in - out, and its
     * share of what they draw (0 without psu_in energy). */
    int psu_series;
    double psu_in_j, psu_out_j, psu_loss_j, psu_loss_share;
    /* Against the node's calibration model (wt_recon_apply_models; audit/calibrate.h). */
    bool has_model;
    int64_t model_t_ns;         /* when the model was fitted */
    double model_predicted_w;   /* a + b x chips: the wall the model expects */
    double model_unaccounted_w; /* predicted - chips: what the model expects beside the chips */
    double model_departure_w;   /* wall - predicted */
    double model_bound_w;       /* the departure allowed (see wt_recon_against_model) */
    bool model_drift;           /* the wall departs from the model beyond the bound */
};

/*
 * Coverage of the window that makes a node's unaccounted power and share mean what they say:
 * the wall and the chips each read over at least 99 % of it, so the two spans differ by at most
 * 1 % of the window (the figure is off by at most 1 % of the node's power). Over less (a daemon
 * in its first kpi_window, a meter that came later, a gap), wall - chips compares different
 * spans and can read thousands of watts off, negative included.
 */
#define WT_RECON_FULL_COVERAGE 0.99

/* True when n's wall and chips both cover the window (WT_RECON_FULL_COVERAGE). */
bool wt_recon_complete(const struct wt_recon_node *n);

/* Sets the two flags of n from its figures (pure): chips_exceed_wall only when the wall and the
 * chips both cover at least min_coverage of the window. */
void wt_recon_judge(struct wt_recon_node *n, double chips_tolerance, double drift_bound,
                    double min_coverage);

/*
 * Every node that has wall meters (pdu_outlet or bmc), over [a, b]. *out malloc'd, sorted by
 * node. Returns 0, -EIO or -ENOMEM.
 */
int wt_recon_compute(struct wt_meter_set *ms, const struct wt_topology *t, int64_t a, int64_t b,
                     struct wt_recon_node **out, size_t *n) WT_MUST_USE;

struct wt_calib_fit;
struct wt_calib_model;

/* One comparison of a mean wall power with what a calibration model predicts from the chips. */
struct wt_recon_model_check {
    double predicted_w, unaccounted_w, departure_w, bound_w;
    bool drift;
};

/*
 * Pure: the wall the fit predicts for chips_w (a + b x chips_w), the unaccounted watts the model
 * expects (predicted - chips), the departure of wall_w from it, and drift when the departure
 * exceeds the bound: 3 residual standard deviations of the fit, and never under 2 % of the
 * prediction (a fit through exact points has no scatter, a meter has).
 */
void wt_recon_against_model(const struct wt_calib_fit *f, double chips_w, double wall_w,
                            struct wt_recon_model_check *out);

/*
 * Fills the model fields of each node from its model among m[0..nm) (by node name), with the
 * node's mean powers over its window of window_s seconds. A model whose wall does not track the
 * chips is not used. Pure.
 */
void wt_recon_apply_models(struct wt_recon_node *nodes, size_t n, const struct wt_calib_model *m,
                           size_t nm, double window_s);

/*
 * The drift detector: a node's wall departing from its calibration model beyond the model's
 * bound (wt_recon_against_model) for sustain_ns on end, every comparison beyond it, is drift;
 * the first comparison back within the bound ends it. Each comparison is the mean over a KPI
 * window, so one noisy reading does not move it. A node without a comparison (no model, a
 * window not covered) keeps its state.
 */
#define WT_RECON_DRIFT_NODES 64
struct wt_recon_drift {
    int64_t sustain_ns;
    size_t n;
    struct {
        char node[WT_TOPO_NAME];
        int64_t beyond_since_ns; /* the first comparison of the current run beyond; 0 none */
        bool firing;
    } s[WT_RECON_DRIFT_NODES];
};

/* Steps node's state with one comparison at now_ns (pure). Returns +1 when drift begins, -1 when
 * it ends, 0 otherwise (also when the table is full: that node is not followed). */
int wt_recon_drift_step(struct wt_recon_drift *d, const char *node, bool beyond, int64_t now_ns);
/* Whether node is in drift now. */
bool wt_recon_drift_firing(const struct wt_recon_drift *d, const char *node);

struct wt_batch;
/*
 * The daemon's gauges against the models (kpi.c's exporter, every KPI interval): applies
 * m[0..nm) to nodes (wt_recon_apply_models over window_s), steps d with each node compared, logs
 * each change of drift once (warning when it begins, info when it ends), and adds per node with
 * a model wattage_node_model_predicted_wall_watts, _departure_watts, _bound_watts and
 * wattage_node_model_drift (0/1) at now_ns to b. Returns 0 or -ENOMEM.
 */
int wt_recon_export_models(struct wt_recon_node *nodes, size_t n, const struct wt_calib_model *m,
                           size_t nm, double window_s, struct wt_recon_drift *d, int64_t now_ns,
                           struct wt_batch *b) WT_MUST_USE;

#endif
