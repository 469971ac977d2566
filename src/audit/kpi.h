/* SPDX-License-Identifier: MIT */
/*
 * Facility KPIs over an exact window, from the stored series (never from live values):
 *
 *   PUE   = facility energy / IT energy                      (energy-weighted, never a mean of
 *                                                            instantaneous ratios)
 *   part-load PUE: the window cut into facility.part_load_interval pieces; each piece's IT load
 *           share = its IT energy / (its length x topology.design_it_watts); per band of share,
 *           PUE = sum of the pieces' facility energy / sum of their IT energy
 *   per-zone PUE: the same with the meters of one zone
 *   CLF   = cooling energy / IT energy                       (cooling load factor)
 *   WUE   = water litres / IT kWh                            (water meter in cubic metres)
 *   ERF   = reused heat energy / facility energy
 *   accelerator share = GPU energy / IT energy               (GPU counter, else integrated)
 *   rack Delta-T = mean exhaust - mean inlet temperature     (wattage_facility_temperature_celsius
 *                                                            with kind inlet / exhaust or outlet,
 *                                                            else a point named like intake,
 *                                                            inlet or exhaust; the rack from its
 *                                                            rack label, else its node's rack)
 *
 * Energy of a role: the meters of that role (site-wide: those without a zone when there are any,
 * else all of them; with a zone: that zone's). Per measuring point the device's energy counter
 * (store/query.h's exact-window rule: interpolated edges, resets and restarts are gaps), else an
 * integrated energy series, else its power readings integrated here (trapezoid; a span longer
 * than 3 collector intervals is a gap). IT energy: it_total meters, else pdu_outlet meters, else
 * bmc meters, else the nodes' own sensors (GPU + CPU package + DRAM), each said in the inputs.
 * An input is "measured" when its meters cover at least facility.min_coverage of the window;
 * a constant from the config is "assumed". Every KPI lists its inputs and their state.
 *
 * Reconciliation (reconcile.h) runs over the same window and is part of the report.
 */
#ifndef WT_KPI_H
#define WT_KPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/topology.h"
#include "core/err.h"

struct wt_store;
struct wt_config;
struct wt_hub;

/*
 * PUE over [from_ns, to_ns] for other modules (carbon: CUE, emissions of the facility overhead).
 * st: an open store (wt_store_open; the caller's connection, not the daemon writer's). cfg: the
 * loaded configuration (its topology, facility and statement sections). On success *pue is the
 * measured PUE (E_DC as the statement counts it: facility_total with on-site generation, fuels at
 * statement.fuel_factors and purchased cooling, less exported) with *measured = true when those
 * meters cover the window (facility.min_coverage) and IT energy is known, else facility.pue_assumed
 * with *measured = false. Returns 0; -ENOENT when neither exists (err says why); -EINVAL for a bad
 * config or window; -EIO for a store failure.
 */
int wt_kpi_pue(struct wt_store *st, const struct wt_config *cfg, int64_t from_ns, int64_t to_ns,
               double *pue, bool *measured, struct wt_err *err) WT_MUST_USE;

/* The energy of one input over the window. */
struct wt_kpi_energy {
    double j;          /* joules (cubic metres for water) */
    double coverage;   /* 0..1: the least covered of its meters (time-weighted) */
    int meters;        /* meters (or series, for node sensors) counted */
    const char *from;  /* "meters" (role name in `role`), "node_sensors", "assumed", "none" */
    enum wt_role role; /* for from == "meters" */
    bool measured;     /* meters present and coverage >= facility.min_coverage */
};

#define WT_KPI_MAX_ROWS 16
#define WT_KPI_MAX_INPUTS 4

struct wt_kpi_input {
    char name[32];    /* "facility_energy", "it_energy", "water", ... */
    bool measured;    /* false: assumed or missing */
    char detail[160]; /* "facility_total meters (1), coverage 100%" or "facility.pue_assumed" */
};

/* One KPI line: what the text and JSON outputs print, in order. */
struct wt_kpi_row {
    char key[32];   /* JSON name: "pue", "wue", "erf", "cue"... */
    char label[48]; /* for a person: "PUE", "WUE (L/kWh)" */
    char unit[24];  /* "ratio", "L/kWh", "kgCO2e/kWh" */
    bool available; /* false: no value (why says) */
    double value;
    bool measured; /* every input measured */
    char why[128];
    struct wt_kpi_input in[WT_KPI_MAX_INPUTS];
    size_t nin;
};

struct wt_kpi_band {
    double lo_pct, hi_pct; /* the last band also takes loads above its top */
    int pieces;
    double seconds, facility_j, it_j;
    bool available;
    double pue;
};

struct wt_kpi_zone {
    char zone[WT_TOPO_NAME];
    struct wt_kpi_energy facility, it;
    bool available, measured;
    double pue;
};

struct wt_kpi_rack {
    char rack[WT_TOPO_NAME];
    bool has_inlet, has_exhaust;
    double inlet_c, exhaust_c, delta_t_k; /* delta only with both */
};

struct wt_recon_node; /* reconcile.h */

/* What the site's facility energy adds to its facility_total meters, as the statement's E_DC
 * does: each from "meters" with its meters counted, or "none". fuel.j is the fuels' energy at
 * statement.fuel_factors (fuel meters with feeds are not counted). */
struct wt_kpi_carriers {
    struct wt_kpi_energy onsite, fuel, cooling_in, exported;
};

struct wt_kpi_report {
    int64_t from_ns, to_ns;
    char zone[WT_TOPO_NAME]; /* "" = site */
    /* facility: E_DC (the site's: facility_total + carriers.onsite + carriers.fuel +
     * carriers.cooling_in - carriers.exported; a zone's: its facility_total meters) */
    struct wt_kpi_energy facility, it, cooling, water, heat, gpu;
    struct wt_kpi_carriers carriers;
    struct wt_kpi_row rows[WT_KPI_MAX_ROWS];
    size_t nrows;
    bool part_load_available;
    char part_load_why[128];
    int64_t piece_ns;
    struct wt_kpi_band bands[WT_TOPO_MAX_BANDS];
    size_t nbands;
    struct wt_kpi_zone *zones; /* malloc'd */
    size_t nzones;
    struct wt_kpi_rack *racks; /* malloc'd */
    size_t nracks;
    struct wt_recon_node *nodes; /* malloc'd; reconcile.h */
    size_t nnodes;
};

/*
 * Computes every KPI of the site (zone NULL or "") or of one zone over [from_ns, to_ns] into *r
 * (free with wt_kpi_report_free). Returns 0, -EINVAL (err) or -EIO / -ENOMEM.
 */
int wt_kpi_compute(struct wt_store *st, const struct wt_topology *t, int64_t from_ns, int64_t to_ns,
                   const char *zone, struct wt_kpi_report *r, struct wt_err *err) WT_MUST_USE;
/* The same with the fuels' factors kwh_per (indexed by enum wt_fuel; NULL: the defaults of
 * statement.fuel_factors), as wt_kpi_fuel_factors reads them. */
int wt_kpi_compute_with(struct wt_store *st, const struct wt_topology *t, const double *kwh_per,
                        int64_t from_ns, int64_t to_ns, const char *zone, struct wt_kpi_report *r,
                        struct wt_err *err) WT_MUST_USE;
/* statement.fuel_factors of cfg into kwh_per. Returns 0 or -EINVAL (err: file:line). */
int wt_kpi_fuel_factors(const struct wt_config *cfg, double kwh_per[WT_FUEL_COUNT],
                        struct wt_err *err) WT_MUST_USE;
void wt_kpi_report_free(struct wt_kpi_report *r);

/* The row of key, or NULL. */
const struct wt_kpi_row *wt_kpi_row(const struct wt_kpi_report *r, const char *key);

/*
 * Appends a row (for KPIs computed elsewhere, e.g. CUE by the carbon module) and returns it
 * for its inputs to be filled, or NULL when the table is full.
 */
struct wt_kpi_row *wt_kpi_add_row(struct wt_kpi_report *r, const char *key, const char *label,
                                  const char *unit);
/* Adds an input to a row (ignored past WT_KPI_MAX_INPUTS). */
void wt_kpi_row_input(struct wt_kpi_row *row, const char *name, bool measured, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * The daemon's KPI gauges: every facility.kpi_interval a thread of its own computes the report
 * over the last facility.kpi_window (ending topology.h's export_lag before now: the slowest
 * facility collector's interval plus a store flush, so every input's latest readings are in)
 * on a connection of its own to the store and publishes, as hub slot "kpi" (so /metrics, the
 * store and the alert engine see them):
 *   wattage_pue_ratio (site) and wattage_pue_ratio{zone}: measured PUE only (absent otherwise)
 *   wattage_wue_litres_per_kwh, wattage_erf_ratio, wattage_accelerator_energy_share_ratio
 *   wattage_rack_delta_t_kelvin{rack}
 *   wattage_node_unaccounted_power_watts{node}, wattage_node_unaccounted_ratio{node}: only
 *       once the node's wall and chips both cover the window (wt_recon_complete)
 *   wattage_node_reconciliation_suspect{node,reason="chips_exceed_wall"|"share_drift"} 0/1
 *   wattage_node_model_{predicted_wall,departure,bound}_watts{node}, wattage_node_model_drift:
 *       against the node's calibration model (calibration.json beside the store, read again
 *       when it changes), once the window is covered; drift after a whole kpi_window beyond
 *       the model's bound (audit/reconcile.h)
 * Nothing starts (*out NULL, returns 0) when the topology has no meters. The topology is read
 * at open (a reload closes the exporter and opens it again). Returns 0 or a negative errno with
 * err.
 */
struct wt_kpi_exporter;
int wt_kpi_exporter_open(const struct wt_config *cfg, struct wt_hub *hub,
                         struct wt_kpi_exporter **out, struct wt_err *err) WT_MUST_USE;
/* Stops the thread, takes its gauges off the hub and frees; accepts NULL. */
void wt_kpi_exporter_close(struct wt_kpi_exporter *e);

/*
 * For `wattage kpi --source`: copies the carbon series (audit/carbon.h's carbon_points) of the
 * store at path into st, the working store of the fleet's readings, so that CUE over the fleet
 * weighs the same intensity as the local store would. st must hold the carbon table already
 * (wt_carbon_tables: the carbon module depends on this one, not the other way round).
 * *copied: the points copied (0 when that store holds none). The store at path is only read.
 * Returns 0, -errno (it cannot be read: err says) or -EIO (not a store) with err naming it.
 */
int wt_kpi_carbon_copy(struct wt_store *st, const char *path, size_t *copied,
                       struct wt_err *err) WT_MUST_USE;

/* One computation of the exported readings at now_ns (the window [now_ns - export_lag -
 * kpi_window, now_ns - export_lag]) appended to b, for tests. Returns 0 or -errno. */
int wt_kpi_export_batch(struct wt_store *st, const struct wt_topology *t, int64_t now_ns,
                        struct wt_batch *b) WT_MUST_USE;
/* The same, and the gauges against the nodes' calibration models m[0..nm) with the drift
 * detector d (audit/reconcile.h: wt_recon_export_models). m and d may be NULL. */
struct wt_calib_model;
struct wt_recon_drift;
int wt_kpi_export_batch_models(struct wt_store *st, const struct wt_topology *t, int64_t now_ns,
                               const struct wt_calib_model *m, size_t nm, struct wt_recon_drift *d,
                               struct wt_batch *b) WT_MUST_USE;

#endif
