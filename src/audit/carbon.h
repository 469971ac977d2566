/* SPDX-License-Identifier: MIT */
/*
 * The carbon layer: grid carbon-intensity series (and contracted renewable supply and energy
 * price series, loaded the same way) in the store, and time-matched emissions of any window.
 *
 * Series live in the store's SQLite file, in a table this module creates on the connection it is
 * given (carbon_points: series, zone, kind, from_ns, to_ns, value, source, stored_ns). One point
 * is a value over [from, to): gCO2e/kWh for intensity, kWh for renewable supply, currency per
 * kWh for price. Forecasts (kind forecast) are kept apart from actuals (kind actual): a newer
 * forecast of the same period replaces an older one, and wherever an actual exists it wins.
 *
 * Sources: files (`wattage import carbon FILE`, or a source with `file:` in the config, re-read
 * when it changes) and URLs fetched on a schedule with libcurl on a thread of its own (so the
 * daemon's ticks never wait for the network), retried with doubling backoff on failure; "{now}"
 * in a URL is the current time (wt_carbon_url_expand). Formats:
 *   csv             timestamp,gco2_per_kwh[,kind]  (kind actual|forecast; any value column name)
 *                   from,intensity.forecast,intensity.actual  (the UK Carbon Intensity API's CSV)
 *   uk_api          {"data": [{"from", "to", "intensity": {"forecast", "actual"}}]}
 *   electricitymaps {"history": [{"carbonIntensity", "datetime", "isEstimated"}]}, {"forecast":
 *                   [...]} and the single-point /latest reply ("isEstimated": true is stored as a
 *                   forecast, so the measured value wins when it comes)
 * A point without an end lasts the series' period (the smallest step between its timestamps;
 * 1 h for a single point). A file with any malformed line stores nothing: every bad line is
 * reported with its number and the whole load is one transaction.
 *
 * Emissions of [a, b] (wt_carbon_emissions): the window is cut where the intensity step
 * function changes; each piece's IT energy comes from the caller's exact-window energy query,
 * is scaled to facility energy by the PUE (measured when the facility layer has it, else
 * carbon.pue_assumed, flagged) and charged at that piece's intensity:
 *     gCO2e = sum_i E_i[kWh] * PUE * I_i[g/kWh]
 * Holes in the series (no actual and no forecast): the last value before a hole carries on for
 * up to carbon.max_hole (default 6 h) after its period ends, and the first value after it
 * reaches back up to max_hole before its period starts ("filled"); what remains of a longer hole
 * is charged at carbon.static_gco2_per_kwh when set ("static", assumed), else at the last value
 * before it (else the first after it, "filled"). The energy charged at each kind of value is
 * counted apart (energy_kwh_by_source), so a figure says how much of it was measured. With no
 * series for the zone at all, the static value is used, else there is no figure ("known":
 * false).
 * Market-based (when renewable supply is loaded for the zone): in each piece the share of the
 * site's facility energy covered by contracted supply (supply kWh prorated over the piece /
 * the site's facility kWh, at most 1) is carbon-free; the rest is charged at the location
 * intensity (the residual mix is approximated by the grid's).
 *
 * Files: carbon_conf.c (the "carbon" section), carbon_parse.{c,h} (the three input formats),
 * carbon.c (the table, the step function, emissions, CUE), carbon_fetch.{c,h} (the daemon's
 * fetch thread and the grid-intensity gauge).
 */
#ifndef WT_CARBON_H
#define WT_CARBON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "core/err.h"

#define WT_CARBON_ZONE_LEN 64
#define WT_CARBON_MAX_SOURCES 16
#define WT_CARBON_MAX_NODES 64
/* Uptime Institute's Global Data Center Survey 2023: average annual PUE 1.58. */
#define WT_CARBON_PUE_ASSUMED 1.58
#define WT_CARBON_MAX_POINTS 1000000                   /* per file or reply */
#define WT_CARBON_MAX_TIMEOUT_NS (60LL * 1000000000LL) /* per request (a source's timeout) */

struct wt_store;
struct sqlite3;
struct wt_ynode;

enum wt_carbon_series { WT_CS_INTENSITY, WT_CS_RENEWABLE, WT_CS_PRICE };
enum wt_carbon_kind { WT_CK_ACTUAL = 0, WT_CK_FORECAST = 1 };
enum wt_carbon_format { WT_CF_AUTO, WT_CF_CSV, WT_CF_UK_API, WT_CF_ELECTRICITYMAPS };

/* "intensity", "renewable", "price"; and the reverse (0 or -EINVAL). */
const char *wt_carbon_series_name(enum wt_carbon_series s);
int wt_carbon_series_parse(const char *s, enum wt_carbon_series *out) WT_MUST_USE;
/* "auto", "csv", "uk_api", "electricitymaps"; and the reverse (0 or -EINVAL). */
const char *wt_carbon_format_name(enum wt_carbon_format f);
int wt_carbon_format_parse(const char *s, enum wt_carbon_format *out) WT_MUST_USE;

/* ---- configuration: the top-level "carbon" section ---- */

struct wt_carbon_source {
    enum wt_carbon_format format;
    enum wt_carbon_series series;
    char file[WT_PATH_LEN];
    char url[1024];
    char token_file[WT_PATH_LEN];
    char token_header[64]; /* default "auth-token" (Electricity Maps) */
    char zone[WT_CARBON_ZONE_LEN];
    int64_t interval_ns; /* default 30 min */
    int64_t timeout_ns;  /* per request, default 20 s, at most 60 s */
    int64_t retry_ns;    /* first retry after a failure (doubles up to interval), default 30 s */
};

struct wt_carbon_conf {
    char zone[WT_CARBON_ZONE_LEN]; /* this node's grid zone ("" none) */
    bool has_static;
    double static_g; /* carbon.static_gco2_per_kwh */
    double pue_assumed;
    int64_t max_hole_ns;
    struct {
        char node[64], zone[WT_CARBON_ZONE_LEN];
    } nodes[WT_CARBON_MAX_NODES];
    size_t nnodes;
    struct wt_carbon_source src[WT_CARBON_MAX_SOURCES];
    size_t nsrc;
    /* The loaded configuration, for the measured PUE (wt_kpi_pue); NULL: assumed only. Set by
     * wt_carbon_conf_from; the caller keeps it alive while the conf is used. */
    const struct wt_config *cfg;
};

/* Defaults: no zone, no static value, PUE WT_CARBON_PUE_ASSUMED, max_hole 6 h, no sources. */
void wt_carbon_conf_defaults(struct wt_carbon_conf *cf);
/* Reads the section (node may be NULL: defaults). Errors "file:LINE: carbon.x: ...". */
int wt_carbon_conf_parse(const char *file, const struct wt_ynode *node, struct wt_carbon_conf *cf,
                         struct wt_err *err) WT_MUST_USE;
/* The check registered in src/cli/sections.c. */
int wt_carbon_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);
/* The section of a loaded configuration (defaults when absent). 0 or -EINVAL. */
int wt_carbon_conf_from(const struct wt_config *cfg, struct wt_carbon_conf *cf,
                        struct wt_err *err) WT_MUST_USE;
/*
 * The secret files of cf (the token_file of every URL source), as `wattage run` checks them at
 * start and `wattage check-config` does: wt_check_secret_file (core/secret.h) under the name
 * "carbon.sources[I].token_file" (wt_carbon_token_what). 0, or its error for the first refused.
 */
int wt_carbon_check_secrets(const struct wt_carbon_conf *cf, struct wt_err *err) WT_MUST_USE;
void wt_carbon_token_what(size_t i, char *out, size_t n);
/* True for a zone name: 1..63 letters, digits, '-', '_' or '.'. */
bool wt_carbon_zone_ok(const char *z);
/* The zone of a node: carbon.nodes[node], else carbon.zone (node "" or NULL: carbon.zone). */
const char *wt_carbon_zone_of(const struct wt_carbon_conf *cf, const char *node);

/* ---- points and their table (parsing: carbon_parse.h) ---- */

struct wt_carbon_point {
    int64_t from_ns, to_ns;
    double value;
    enum wt_carbon_kind kind;
    char zone[WT_CARBON_ZONE_LEN];
};

/* Points as parsed (carbon_parse.h) or loaded from the table. */
struct wt_carbon_batch {
    struct wt_carbon_point *p;
    size_t n, cap;
};
void wt_carbon_batch_free(struct wt_carbon_batch *b);

/* Creates the carbon table on db if missing. 0 or -EIO. */
int wt_carbon_tables(struct sqlite3 *db) WT_MUST_USE;

/*
 * Stores the points in one transaction (a point with the same series, zone, kind and start
 * replaces the stored one). source names where they came from. 0, or -EIO with nothing stored.
 */
int wt_carbon_store(struct sqlite3 *db, enum wt_carbon_series series,
                    const struct wt_carbon_batch *b, const char *source, int64_t now_ns,
                    struct wt_err *err) WT_MUST_USE;

/* Reads a file and stores it (parse + store): `wattage import carbon` and file sources. */
int wt_carbon_load_file(struct sqlite3 *db, const char *path, enum wt_carbon_format fmt,
                        enum wt_carbon_series series, const char *zone, FILE *report,
                        size_t *stored, struct wt_err *err) WT_MUST_USE;

/* ---- the step function ---- */

enum wt_carbon_src {
    WT_CSRC_ACTUAL,   /* a measured value */
    WT_CSRC_FORECAST, /* a forecast: no actual yet */
    WT_CSRC_FILLED,   /* a hole, charged at the nearest value */
    WT_CSRC_STATIC,   /* carbon.static_gco2_per_kwh (assumed) */
    WT_CSRC_NONE,     /* nothing known */
    WT_CSRC_COUNT
};
const char *wt_carbon_src_name(enum wt_carbon_src s);

struct wt_carbon_step {
    int64_t from_ns, to_ns;
    double value;
    enum wt_carbon_src src;
};

/*
 * The series of zone as consecutive steps covering [a, b] exactly (holes filled as above; the
 * static value and max_hole from cf, which may be NULL for "nearest, no static"). *steps is
 * malloc'd. Returns 0 (n 0 when a >= b), -EIO, -ENOMEM.
 */
int wt_carbon_steps(struct sqlite3 *db, const struct wt_carbon_conf *cf,
                    enum wt_carbon_series series, const char *zone, int64_t a, int64_t b,
                    struct wt_carbon_step **steps, size_t *n) WT_MUST_USE;

/*
 * The same as the scheduler sees the future: forecasts first, an actual only where no forecast
 * exists (forecast_first; a replay with a past "now" must not use what was not known then).
 */
int wt_carbon_steps_ex(struct sqlite3 *db, const struct wt_carbon_conf *cf,
                       enum wt_carbon_series series, const char *zone, bool forecast_first,
                       int64_t a, int64_t b, struct wt_carbon_step **steps, size_t *n) WT_MUST_USE;

/* The pure part of wt_carbon_steps over points already loaded (sorted by from; any kinds). */
int wt_carbon_steps_of(const struct wt_carbon_point *p, size_t n, const struct wt_carbon_conf *cf,
                       int64_t a, int64_t b, struct wt_carbon_step **steps,
                       size_t *nsteps) WT_MUST_USE;

/* ---- emissions ---- */

/* IT energy (J) of [a, b] by the caller's exact-window query. 0 or a negative errno. */
typedef int (*wt_carbon_energy_fn)(void *ctx, int64_t a, int64_t b, double *joules);

struct wt_carbon_result {
    char zone[WT_CARBON_ZONE_LEN];
    bool known;        /* false: no series and no static value: no figure */
    double it_j;       /* IT energy of the window (sum of the pieces) */
    double facility_j; /* it_j * PUE */
    double pue;
    bool pue_measured;
    double g; /* location-based gCO2e */
    bool has_market;
    double g_market;                /* market-based gCO2e (renewable supply loaded for the zone) */
    double by_src_j[WT_CSRC_COUNT]; /* IT energy charged at each kind of value */
    size_t pieces;
};

/*
 * Emissions of [a, b] in zone: the window cut at the steps, each piece's IT energy from
 * energy(ctx, ...), scaled by pue (pue_measured says where it came from; pue <= 0: cf's
 * assumed PUE). st (may be NULL) gives the site's energy for the market-based figure.
 * Returns 0 or a negative errno (from energy or the store).
 */
int wt_carbon_emissions(struct sqlite3 *db, struct wt_store *st, const struct wt_carbon_conf *cf,
                        const char *zone, int64_t a, int64_t b, wt_carbon_energy_fn energy,
                        void *ctx, double pue, bool pue_measured,
                        struct wt_carbon_result *out) WT_MUST_USE;

/* The energy of this node's whole IT load (GPUs + CPU packages/DRAM) over [a, b] in st. */
int wt_carbon_site_energy(struct wt_store *st, int64_t a, int64_t b, double *joules) WT_MUST_USE;

/*
 * The PUE of [a, b]: measured by the facility layer when it can (wt_kpi_pue with cf->cfg: its
 * facility_total meters cover the window), else facility.pue_assumed when set, else
 * cf->pue_assumed (carbon.pue_assumed); *measured false for both assumed values.
 */
void wt_carbon_pue(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t a, int64_t b,
                   double *pue, bool *measured);

struct wt_carbon_cue {
    struct wt_carbon_result r; /* of the site's IT energy over the window */
    double cue;                /* kgCO2e per IT kWh (= PUE x mean intensity / 1000); NAN: none */
};

/*
 * CUE of [a, b] for this node (zone from cf): the site's IT energy from the store's
 * exact-window query, its emissions as above, CUE = kgCO2e / IT kWh. For `wattage kpi`.
 * Returns 0 or a negative errno.
 */
int wt_carbon_cue(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t a, int64_t b,
                  struct wt_carbon_cue *out) WT_MUST_USE;

struct wt_kpi_report;
/*
 * Appends the CUE row to a KPI report (`wattage kpi`): CUE = PUE x the IT-energy-weighted mean
 * grid intensity of the window / 1000, in kgCO2e per IT kWh. The PUE is the report's own "pue"
 * row when it has a value (measured or facility.pue_assumed, as it says), else
 * carbon.pue_assumed (assumed); the weights are the IT energy per intensity interval of every
 * node in the store, this one and imported or remote ones (GPU + CPU sensors, the store's
 * exact-window query), or time when there is none. The row is
 * measured when both the PUE and every interval's intensity (actual values) are. cfg gives the
 * carbon section. Returns 0, or a negative errno (the row then says why).
 */
int wt_carbon_kpi_row(struct wt_store *st, const struct wt_config *cfg, struct wt_kpi_report *r);

/* A JSON object (cJSON) describing r, for the jobs API and the CLI: NULL when out of memory. */
struct cJSON;
struct cJSON *wt_carbon_result_json(const struct wt_carbon_result *r);

#endif
