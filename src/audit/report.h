/* SPDX-License-Identifier: MIT */
/*
 * The audit report of a window: what `wattage report` draws and tabulates, gathered from the
 * store through the modules that own each figure (nothing here computes a figure another module
 * computes):
 *   GPU energy, its method and coverage        store/query.h (wt_store_energy)
 *   job and phase energy, tokens/kWh, samples/s/W, energy to target
 *                                              audit/jobs.h (the jobs API, without HTTP)
 *   facility KPIs, part-load PUE, zones, chip-vs-wall
 *                                              audit/kpi.h, audit/reconcile.h
 *   CUE, the intensity steps and emissions      audit/carbon.h
 *   where a job would have run for less carbon  audit/schedule.h (forecast-first steps)
 * What is computed here, once, from the stored readings: the chart series (downsampled by
 * wt_report_downsample: the first minimum and the first maximum of every pixel column, in time
 * order, so no peak or dip is lost), and per GPU the idle burn (energy of power readings while
 * utilization is at most WT_REPORT_IDLE_UTIL), the power-capped time (power at or above
 * WT_REPORT_CAP_SHARE of the power limit), the throttle time (the thermal and power-brake bits
 * of the throttle reasons when stored, else temperature at or above the slowdown threshold) and
 * the gaps (consecutive power readings further apart than WT_REPORT_GAP_FACTOR times the
 * median step). Findings are ranked by the energy they concern.
 *
 * Everything the window lacks is said in `missing` (no GPU series, no facility meters, no carbon
 * series, no jobs, gaps, another node's store), never drawn as zeros.
 */
#ifndef WT_REPORT_H
#define WT_REPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "audit/clockcheck.h"
#include "audit/kpi.h"
#include "audit/reconcile.h"
#include "core/err.h"
#include "store/query.h"

#define WT_REPORT_COLS 800       /* pixel columns of a time chart */
#define WT_REPORT_IDLE_UTIL 0.05 /* utilization at or below this is idle */
/* "Busy but underfilled": NVML's utilization (a kernel ran) at least this on average while GPM's
 * SM activity is at most WT_REPORT_UNDERFILL_SHARE of it. */
#define WT_REPORT_UNDERFILL_UTIL 0.5
#define WT_REPORT_UNDERFILL_SHARE 0.5
#define WT_REPORT_IDLE_MIN_W 30.0 /* ...while drawing more than this is idle burn */
#define WT_REPORT_CAP_SHARE 0.95  /* power at or above this share of the limit is capped */
#define WT_REPORT_GAP_FACTOR 3.0
#define WT_REPORT_MAX_MISSING 32
#define WT_REPORT_MAX_FINDINGS 64

struct wt_config;
struct cJSON;

/*
 * Min/max downsampling (pure): the points of in (sorted by time) in [from, to] go into cols
 * equal columns; each column keeps its first minimum and its first maximum (one point when they
 * are the same), in time order. out must hold 2 * cols points; *nout is set. Every column's
 * minimum and maximum value is kept exactly.
 */
void wt_report_downsample(const struct wt_point *in, size_t n, int64_t from, int64_t to,
                          size_t cols, struct wt_point *out, size_t *nout);

/* A series as drawn: downsampled points, and column means for scatter and stacking. */
struct wt_report_line {
    struct wt_point *pts; /* malloc'd, min/max downsampled */
    size_t n;
    double *mean; /* malloc'd, WT_REPORT_COLS column means (NAN: no reading in the column) */
    size_t raw;   /* stored readings read */
};

struct wt_report_gap {
    int64_t from_ns, to_ns;
};

struct wt_report_gpu {
    char node[64], gpu[16], uuid[96], model[64];
    struct wt_report_line power, util, temp;
    double slowdown_c;    /* NAN: not stored */
    double power_limit_w; /* NAN: not stored */
    double energy_j, coverage;
    double uncertainty_j; /* the error bar of energy_j (store/uncert.h) */
    const char *method;   /* "counter", "integrated", NULL: no energy series */
    double idle_j, idle_s, capped_s, throttle_s, throttle_j;
    const char *throttle_from;  /* "throttle_reasons" or "temperature" */
    struct wt_report_gap *gaps; /* malloc'd */
    size_t ngaps;
    /* What the GPU did beside NVML's utilization (NAN: not stored in the window): means of the
     * readings, 0..1 (GPM on Hopper and newer), and interconnect bytes a second over the window. */
    double util_mean, sm_active, sm_occupancy, tensor_active, dram_bw;
    double nvlink_tx_bps, nvlink_rx_bps, pcie_tx_bps, pcie_rx_bps;
};

struct wt_report_inlet {
    char name[320]; /* labels of the facility temperature series */
    struct wt_report_line t;
    double min_c, max_c;
    double outside_s;       /* time outside the ASHRAE recommended 18..27 C envelope */
    double outside_allow_s; /* time outside the class's allowable envelope (audit/ashrae.h) */
};

struct wt_report_job {
    struct cJSON *json; /* the jobs API's GET /api/v1/jobs/{id} reply (owned) */
    int64_t start_ns, end_ns;
    double energy_j, out_per_kwh; /* out_per_kwh: tokens/kWh (NAN: no tokens counted) */
    bool sched_known;
    int64_t best_start_ns;
    double g_now, g_best; /* gCO2e at its real start and at the best start before the deadline */
};

struct wt_report_step {
    int64_t from_ns, to_ns;
    double g_per_kwh;
    const char *src; /* wt_carbon_src_name */
    double it_j;     /* IT energy of the step (carbon.h's site energy) */
};

struct wt_report_finding {
    char kind[24]; /* idle_burn, throttle, unaccounted, low_output, carbon_shift, gap */
    double energy_j;
    char title[160];
    char evidence[320];
};

struct wt_report {
    int64_t from_ns, to_ns;
    char node[64];    /* topology.node: this host */
    char source[160]; /* the engine the readings were copied from (wt_report_build_source); "" */
    struct wt_report_gpu *gpus;
    size_t ngpus;
    struct wt_report_inlet *inlets;
    size_t ninlets;
    int ashrae_class; /* enum wt_ashrae_class of facility.ashrae_class */
    struct wt_report_job *jobs;
    size_t njobs;
    bool have_kpi;
    struct wt_kpi_report kpi;
    char carbon_zone[64];
    struct wt_report_step *steps;
    size_t nsteps;
    struct wt_report_finding findings[WT_REPORT_MAX_FINDINGS];
    size_t nfindings;
    char missing[WT_REPORT_MAX_MISSING][200];
    size_t nmissing;
    struct wt_clock_warnings clock; /* the clock's trust over the window (audit/clockcheck.h) */
    /* The Serving section: `wattage inference --json`'s rows over the window (a cJSON array,
     * owned, freed by wt_report_free), set by the caller after the build; NULL: no section. */
    struct cJSON *serving;
};

/*
 * Gathers the report of [from_ns, to_ns] from st (open, read-only use) at db_path (for the jobs
 * tables) with cfg (topology, facility and carbon sections). Returns 0 with *r filled (free with
 * wt_report_free) also when data is missing (r->missing says what); -EINVAL with err for a bad
 * window or config; -EIO / -ENOMEM.
 */
int wt_report_build(struct wt_store *st, const char *db_path, const struct wt_config *cfg,
                    int64_t from_ns, int64_t to_ns, struct wt_report *r,
                    struct wt_err *err) WT_MUST_USE;
/*
 * wt_report_build on a working store that holds readings copied from an engine (source, e.g.
 * prometheus://HOST:PORT; the CLI's `report --source`): every node's series are the report's
 * own (no "another node's store"), and the jobs, which the engine holds only as series, are said
 * missing rather than read. r->source is set.
 */
int wt_report_build_source(struct wt_store *st, const char *source, const struct wt_config *cfg,
                           int64_t from_ns, int64_t to_ns, struct wt_report *r,
                           struct wt_err *err) WT_MUST_USE;
void wt_report_free(struct wt_report *r);

/* Sorts the findings by energy, largest first (pure). */
void wt_report_rank(struct wt_report *r);

/*
 * Two windows side by side (`wattage report --compare`): per figure normalised by IT load
 * (GPU and IT mean power for context; idle share of GPU energy, throttle minutes per hour, PUE,
 * accelerator share, unaccounted share of the wall, CUE, tokens per GPU kWh) the value of each
 * window from its report, the difference B - A, and the noise of that difference: each window is
 * also cut into WT_REPORT_PIECES equal pieces, each piece's figure taken from its own report, and
 *   noise = 2 sqrt(se_A^2 + se_B^2),  se = sample standard deviation of the pieces / sqrt(n)
 * so a difference "exceeds the noise" when |B - A| > noise (about 95 % confidence for
 * independent pieces; fewer than 2 pieces with a value: unknown).
 */
#define WT_REPORT_PIECES 6
#define WT_REPORT_FIGURES 9
struct wt_report_cmp_row {
    const char *key, *label, *unit;
    bool have_a, have_b, have_noise, exceeds;
    double a, b, diff, noise;
};
struct wt_report_cmp {
    struct wt_report a, b; /* the two windows' reports (their missing lists, findings) */
    struct wt_report_cmp_row rows[WT_REPORT_FIGURES];
};
/* Figure i (0..WT_REPORT_FIGURES-1) of a report (pure); NAN when the report has none. key,
 * label and unit may be NULL. */
double wt_report_figure(const struct wt_report *r, size_t i, const char **key, const char **label,
                        const char **unit);
/* Fills row's difference and noise from the windows' values and their pieces' (NAN: none). */
void wt_report_cmp_judge(struct wt_report_cmp_row *row, double a, double b, const double *pa,
                         size_t na, const double *pb, size_t nb);
/* Builds both reports, their pieces, and the rows. Free with wt_report_cmp_free. Errors as
 * wt_report_build. */
int wt_report_compare(struct wt_store *st, const char *db_path, const struct wt_config *cfg,
                      int64_t a_from, int64_t a_to, int64_t b_from, int64_t b_to,
                      struct wt_report_cmp *c, struct wt_err *err) WT_MUST_USE;
void wt_report_cmp_free(struct wt_report_cmp *c);
/* Writes the comparison as html, md or json (format). 0 or -EIO. */
int wt_report_write_cmp(const struct wt_report_cmp *c, const char *format, FILE *out) WT_MUST_USE;

/* Writers (report_html.c). Each returns 0 or -EIO (a write failed). */
int wt_report_write_html(const struct wt_report *r, FILE *out) WT_MUST_USE;
int wt_report_write_md(const struct wt_report *r, FILE *out) WT_MUST_USE;
int wt_report_write_json(const struct wt_report *r, FILE *out) WT_MUST_USE;
#endif
