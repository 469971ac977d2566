/* SPDX-License-Identifier: MIT */
/*
 * The energy of the topology's meters and of the nodes' own sensors over exact windows, for the
 * KPIs (kpi.c) and the reconciliation (reconcile.c).
 *
 * A meter's series are resolved once (wt_meters_open): its measuring points (source + target +
 * point) among wattage_facility_* series matching it. Per point, the energy over [a, b] is:
 *   1. the device's energy counter (wattage_facility_energy_joules_total; heat and water use
 *      their own counters) through store/query.h's exact-window rule, when it covers any of
 *      [a, b] and, where the point also has power readings, counts at least
 *      WT_METER_MIN_STEPS of its steps over [a, b] (PDUs and BMCs often count in 0.1 or 1 kWh:
 *      over minutes such a counter says 0 or a whole step);
 *   2. else an integrated energy series (labelled method="integrated") the same way;
 *   3. else its power readings (wattage_facility_power_watts) integrated here, trapezoid with
 *      linear interpolation at the window's edges; a span longer than the source's gap bound
 *      (3 collector intervals, topology.h) is a gap, neither counted nor covered.
 * Water (wattage_facility_water_cubic_meters_total, m3) is a counter the store keeps as a gauge:
 * it is read with the same counter rule from its raw readings.
 * Where raw readings were pruned (older than store.retention.raw), the per-minute rollups stand
 * in: the store's own for energy counters; for power, each minute's mean power over the minute's
 * overlap with the window; for water, each minute's least value at its start and its last value
 * at its end.
 */
#ifndef WT_METERS_H
#define WT_METERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/topology.h"
#include "core/err.h"

struct wt_store;
struct wt_meter_set;

/* A counter whose step is more than 1/WT_METER_MIN_STEPS of a window's energy is too coarse
 * for it (its power readings are integrated instead). */
#define WT_METER_MIN_STEPS 50

/* Resolves every meter of t against the store's series. Returns 0 or -EIO / -ENOMEM (err). */
int wt_meters_open(struct wt_store *st, const struct wt_topology *t, struct wt_meter_set **out,
                   struct wt_err *err) WT_MUST_USE;
void wt_meters_close(struct wt_meter_set *ms);

/* How meter i's energy was found over the last window asked (for the inputs' detail). */
enum wt_meter_method { WT_MM_NONE, WT_MM_COUNTER, WT_MM_INTEGRATED, WT_MM_POWER };
const char *wt_meter_method_name(enum wt_meter_method m);

/*
 * Energy of meter i over [a, b] (J; m3 for water): the sum over its points; *coverage the least
 * covered point's covered share of [a, b] (0 when it has no points); *points how many points it
 * has; *method the method of its first point. Returns 0 or -EIO.
 */
int wt_meters_energy(struct wt_meter_set *ms, size_t i, int64_t a, int64_t b, double *j,
                     double *coverage, int *points, enum wt_meter_method *method) WT_MUST_USE;

/* What a node's own sensors say over a window. */
struct wt_node_chips {
    char node[WT_TOPO_NAME]; /* the store's node "" is named t->node */
    double gpu_j, cpu_j, dram_j;
    int series;
    double coverage; /* the least covered series' share (0 without series) */
    /* The node's own hwmon meters (collect/hwmon.h), never among the chips: role "wall" (an ACPI
     * power meter: the node's wall where no meter of the topology is), and the power supplies'
     * input and output ("psu_in", "psu_out"). */
    double wall_j, wall_coverage; /* wall_coverage: the least covered wall sensor's share */
    int wall_series;
    double psu_in_j, psu_out_j, psu_coverage;
    int psu_series;
};

/*
 * The GPU (per GPU its hardware counter, else its integrated series: the rule of
 * wt_store_energy), CPU package and DRAM (RAPL) energy over [a, b] of the nodes named in
 * nodes[0..nnodes) (NULL: every node). A node without RAPL packages takes its CPU from hwmon's
 * "cpu" role (NVIDIA Grace's "Grace Power Socket N", each socket once): never from "module"
 * (Grace and the GPU together) nor the "cpu_rail"/"sysio_rail" parts of the socket. The hwmon
 * "wall", "psu_in" and "psu_out" sensors fill their own fields. Through store/query.h's
 * exact-window query; the series
 * are listed once per meter set. *out malloc'd. Returns 0, -EIO or -ENOMEM.
 */
int wt_meters_chips(struct wt_meter_set *ms, int64_t a, int64_t b, const char *const *nodes,
                    size_t nnodes, struct wt_node_chips **out, size_t *n) WT_MUST_USE;

/* Whether the store holds a hwmon sensor of role "wall" (a node that reconciles against its own
 * ACPI power meter). Returns 0 (*yes set) or -EIO / -ENOMEM. */
int wt_meters_has_hwmon_wall(struct wt_store *st, bool *yes) WT_MUST_USE;

/* The integral of power readings pts (sorted by time) over [a, b], gaps longer than gap_ns not
 * counted: pure, for tests. */
void wt_power_integrate(const int64_t *t_ns, const double *w, size_t n, int64_t a, int64_t b,
                        int64_t gap_ns, double *j, double *covered_s);

#endif
