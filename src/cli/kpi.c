/* SPDX-License-Identifier: MIT */
/*
 * `wattage kpi [--from T] [--to T] [--zone Z] [--json] [--db FILE] [-c FILE] [--source URL
 * [--carbon FILE]]`: the facility KPIs over exactly [from, to] from the store (audit/kpi.h), or
 * with --source from every node's readings in an engine (CUE then weighs the intensity of the
 * local store's carbon table, or of --carbon FILE): one line per KPI from the report's table
 * of rows, each with its inputs and whether they were measured or assumed; part-load PUE per
 * band; PUE per zone; rack Delta-T; the chip-vs-wall reconciliation per node. Energies in joules
 * in the JSON (water in cubic metres), kWh only in the text:
 *   {"from", "to", "zone": null|"Z", "seconds",
 *    "energy": {"facility"|"it"|"cooling"|"water"|"heat_reused"|"gpu": {"joules" (water:
 *               "cubic_meters"), "from": "meters"|"node_sensors"|"none", "role", "count",
 *               "coverage", "measured"}},
 *    "kpis": [{"name": "pue"|"clf"|"wue"|"erf"|"accelerator_share"|..., "value": X|null, "unit",
 *              "measured", "inputs": [{"name", "measured", "detail"}], "why" (when null)}],
 *    "part_load": {"available", "why", "piece_seconds", "bands": [{"from_percent",
 *                  "to_percent", "pue": X|null, "pieces", "seconds", "facility_joules",
 *                  "it_joules"}]},
 *    "zones": [{"zone", "pue", "measured", "facility_joules", "it_joules"}],
 *    "racks": [{"rack", "inlet_celsius", "exhaust_celsius", "delta_t_kelvin"}],
 *    "nodes": [{"node", "wall_from", "wall_joules", "wall_coverage", "gpu_joules", "cpu_joules",
 *               "dram_joules", "chips_joules", "chips_coverage", "unaccounted_joules",
 *               "unaccounted_watts", "unaccounted_ratio", "pieces", "share_min", "share_max",
 *               "suspect": ["chips_exceed_wall", "share_drift"], and with hwmon PSU sensors
 *               "psu_in_joules", "psu_out_joules", "psu_loss_joules", "psu_loss_ratio"}]}
 * wall_from is "pdu_outlet", "bmc" or "hwmon" (the node's ACPI power meter).
 * The KPI lines come from the report's table of rows (wt_kpi_add_row adds one, e.g. CUE).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/calibrate.h"
#include "audit/carbon.h"
#include "audit/clockcheck.h"
#include "audit/kpi.h"
#include "audit/reconcile.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "store/promsrc.h"
#include "store/store.h"

static void energy_json(cJSON *o, const char *key, const struct wt_kpi_energy *e)
{
    cJSON *x = cJSON_AddObjectToObject(o, key);
    if (strcmp(key, "water") == 0)
        cJSON_AddNumberToObject(x, "cubic_meters", e->j);
    else
        cJSON_AddNumberToObject(x, "joules", e->j);
    cJSON_AddStringToObject(x, "from", e->from);
    if (strcmp(e->from, "meters") == 0)
        cJSON_AddStringToObject(x, "role", wt_role_name(e->role));
    cJSON_AddNumberToObject(x, "count", e->meters);
    cJSON_AddNumberToObject(x, "coverage", e->coverage);
    cJSON_AddBoolToObject(x, "measured", e->measured);
}

static void num_or_null(cJSON *o, const char *key, bool have, double v)
{
    if (have)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static void print_json(const struct wt_kpi_report *r, const struct wt_clock_warnings *cw)
{
    char fs[40], ts[40];
    cJSON *root = cJSON_CreateObject();
    wt_time_format(r->from_ns, r->from_ns % WT_NS_PER_S ? 1 : 0, fs, sizeof fs);
    wt_time_format(r->to_ns, r->to_ns % WT_NS_PER_S ? 1 : 0, ts, sizeof ts);
    cJSON_AddStringToObject(root, "from", fs);
    cJSON_AddStringToObject(root, "to", ts);
    if (r->zone[0])
        cJSON_AddStringToObject(root, "zone", r->zone);
    else
        cJSON_AddNullToObject(root, "zone");
    cJSON_AddNumberToObject(root, "seconds", (double)(r->to_ns - r->from_ns) / 1e9);
    cJSON *en = cJSON_AddObjectToObject(root, "energy");
    energy_json(en, "facility", &r->facility);
    energy_json(en, "it", &r->it);
    energy_json(en, "cooling", &r->cooling);
    energy_json(en, "water", &r->water);
    energy_json(en, "heat_reused", &r->heat);
    energy_json(en, "gpu", &r->gpu);
    energy_json(en, "onsite_generation", &r->carriers.onsite);
    energy_json(en, "fuel", &r->carriers.fuel);
    energy_json(en, "purchased_cooling", &r->carriers.cooling_in);
    energy_json(en, "exported", &r->carriers.exported);

    cJSON *kp = cJSON_AddArrayToObject(root, "kpis");
    for (size_t i = 0; i < r->nrows; i++) {
        const struct wt_kpi_row *row = &r->rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", row->key);
        num_or_null(o, "value", row->available, row->value);
        cJSON_AddStringToObject(o, "unit", row->unit);
        cJSON_AddBoolToObject(o, "measured", row->available && row->measured);
        cJSON *in = cJSON_AddArrayToObject(o, "inputs");
        for (size_t k = 0; k < row->nin; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "name", row->in[k].name);
            cJSON_AddBoolToObject(x, "measured", row->in[k].measured);
            cJSON_AddStringToObject(x, "detail", row->in[k].detail);
            cJSON_AddItemToArray(in, x);
        }
        if (!row->available)
            cJSON_AddStringToObject(o, "why", row->why);
        cJSON_AddItemToArray(kp, o);
    }

    cJSON *pl = cJSON_AddObjectToObject(root, "part_load");
    cJSON_AddBoolToObject(pl, "available", r->part_load_available);
    if (!r->part_load_available)
        cJSON_AddStringToObject(pl, "why", r->part_load_why);
    cJSON_AddNumberToObject(pl, "piece_seconds", (double)r->piece_ns / 1e9);
    cJSON *bands = cJSON_AddArrayToObject(pl, "bands");
    for (size_t k = 0; r->part_load_available && k < r->nbands; k++) {
        const struct wt_kpi_band *b = &r->bands[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "from_percent", b->lo_pct);
        cJSON_AddNumberToObject(o, "to_percent", b->hi_pct);
        num_or_null(o, "pue", b->available, b->pue);
        cJSON_AddNumberToObject(o, "pieces", b->pieces);
        cJSON_AddNumberToObject(o, "seconds", b->seconds);
        cJSON_AddNumberToObject(o, "facility_joules", b->facility_j);
        cJSON_AddNumberToObject(o, "it_joules", b->it_j);
        cJSON_AddItemToArray(bands, o);
    }

    cJSON *zs = cJSON_AddArrayToObject(root, "zones");
    for (size_t k = 0; k < r->nzones; k++) {
        const struct wt_kpi_zone *z = &r->zones[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "zone", z->zone);
        num_or_null(o, "pue", z->available, z->pue);
        cJSON_AddBoolToObject(o, "measured", z->available && z->measured);
        cJSON_AddNumberToObject(o, "facility_joules", z->facility.j);
        cJSON_AddNumberToObject(o, "it_joules", z->it.j);
        cJSON_AddItemToArray(zs, o);
    }

    cJSON *rs = cJSON_AddArrayToObject(root, "racks");
    for (size_t k = 0; k < r->nracks; k++) {
        const struct wt_kpi_rack *x = &r->racks[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "rack", x->rack);
        num_or_null(o, "inlet_celsius", x->has_inlet, x->inlet_c);
        num_or_null(o, "exhaust_celsius", x->has_exhaust, x->exhaust_c);
        num_or_null(o, "delta_t_kelvin", x->has_inlet && x->has_exhaust, x->delta_t_k);
        cJSON_AddItemToArray(rs, o);
    }

    cJSON *ns = cJSON_AddArrayToObject(root, "nodes");
    for (size_t k = 0; k < r->nnodes; k++) {
        const struct wt_recon_node *x = &r->nodes[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "node", x->node);
        cJSON_AddStringToObject(o, "wall_from", x->wall_from ? x->wall_from : "none");
        cJSON_AddNumberToObject(o, "wall_joules", x->wall_j);
        cJSON_AddNumberToObject(o, "wall_coverage", x->wall_coverage);
        cJSON_AddNumberToObject(o, "gpu_joules", x->gpu_j);
        cJSON_AddNumberToObject(o, "cpu_joules", x->cpu_j);
        cJSON_AddNumberToObject(o, "dram_joules", x->dram_j);
        cJSON_AddNumberToObject(o, "chips_joules", x->chips_j);
        cJSON_AddNumberToObject(o, "chips_coverage", x->chips_coverage);
        cJSON_AddNumberToObject(o, "unaccounted_joules", x->unaccounted_j);
        if (x->psu_series) {
            cJSON_AddNumberToObject(o, "psu_in_joules", x->psu_in_j);
            cJSON_AddNumberToObject(o, "psu_out_joules", x->psu_out_j);
            cJSON_AddNumberToObject(o, "psu_loss_joules", x->psu_loss_j);
            num_or_null(o, "psu_loss_ratio", x->psu_in_j > 0, x->psu_loss_share);
        }
        cJSON_AddNumberToObject(o, "unaccounted_watts", x->unaccounted_w);
        num_or_null(o, "unaccounted_ratio", x->wall_j > 0, x->share);
        cJSON_AddNumberToObject(o, "pieces", x->pieces);
        num_or_null(o, "share_min", x->pieces > 0, x->share_min);
        num_or_null(o, "share_max", x->pieces > 0, x->share_max);
        cJSON *sus = cJSON_AddArrayToObject(o, "suspect");
        if (x->chips_exceed_wall)
            cJSON_AddItemToArray(sus, cJSON_CreateString("chips_exceed_wall"));
        if (x->share_drift)
            cJSON_AddItemToArray(sus, cJSON_CreateString("share_drift"));
        if (x->has_model) { /* against the node's calibration (wattage calibrate) */
            cJSON *m = cJSON_AddObjectToObject(o, "model");
            char md[40];
            wt_time_format(x->model_t_ns, 0, md, sizeof md);
            cJSON_AddStringToObject(m, "date", md);
            cJSON_AddNumberToObject(m, "predicted_wall_watts", x->model_predicted_w);
            cJSON_AddNumberToObject(m, "unaccounted_watts", x->model_unaccounted_w);
            cJSON_AddNumberToObject(m, "departure_watts", x->model_departure_w);
            cJSON_AddNumberToObject(m, "bound_watts", x->model_bound_w);
            cJSON_AddBoolToObject(m, "drift", x->model_drift);
        }
        cJSON_AddItemToArray(ns, o);
    }
    if (wt_clockcheck_json(root, cw) != 0)
        fprintf(stderr, "wattage kpi: out of memory\n");
    char *txt = cJSON_PrintUnformatted(root);
    if (txt)
        printf("%s\n", txt);
    cJSON_free(txt);
    cJSON_Delete(root);
}

static void kwh(const struct wt_kpi_energy *e, char *buf, size_t n)
{
    if (strcmp(e->from, "none") == 0)
        snprintf(buf, n, "-");
    else if (e->role == WT_ROLE_WATER && strcmp(e->from, "meters") == 0)
        snprintf(buf, n, "%.3f m3 (%.0f L)", e->j, e->j * 1000);
    else
        snprintf(buf, n, "%.3f kWh", e->j / 3.6e6);
}

static void print_text(const struct wt_kpi_report *r, const struct wt_clock_warnings *cw)
{
    char fs[40], ts[40], v[64];
    wt_time_format(r->from_ns, r->from_ns % WT_NS_PER_S ? 1 : 0, fs, sizeof fs);
    wt_time_format(r->to_ns, r->to_ns % WT_NS_PER_S ? 1 : 0, ts, sizeof ts);
    printf("KPIs from %s to %s (%.0f s)%s%s\n", fs, ts, (double)(r->to_ns - r->from_ns) / 1e9,
           r->zone[0] ? ", zone " : "", r->zone);
    static const struct {
        const char *label;
        size_t off;
    } energies[] = {
        {"facility", offsetof(struct wt_kpi_report, facility)},
        {"IT", offsetof(struct wt_kpi_report, it)},
        {"cooling", offsetof(struct wt_kpi_report, cooling)},
        {"water", offsetof(struct wt_kpi_report, water)},
        {"heat reused", offsetof(struct wt_kpi_report, heat)},
        {"GPUs", offsetof(struct wt_kpi_report, gpu)},
        {"  on-site gen", offsetof(struct wt_kpi_report, carriers.onsite)},
        {"  fuels", offsetof(struct wt_kpi_report, carriers.fuel)},
        {"  cooling in", offsetof(struct wt_kpi_report, carriers.cooling_in)},
        {"  exported", offsetof(struct wt_kpi_report, carriers.exported)},
    };
    printf("energy\n");
    for (size_t i = 0; i < sizeof energies / sizeof energies[0]; i++) {
        const struct wt_kpi_energy *e =
            (const struct wt_kpi_energy *)((const char *)r + energies[i].off);
        if (energies[i].off >= offsetof(struct wt_kpi_report, carriers) && !e->meters)
            continue; /* what the facility's E_DC adds, only where a meter is */
        kwh(e, v, sizeof v);
        const struct wt_kpi_carriers *ca = &r->carriers;
        if (e == &r->facility && strcmp(e->from, "meters") == 0 &&
            (ca->onsite.meters || ca->fuel.meters || ca->cooling_in.meters || ca->exported.meters))
            printf("  %-12s %-22s E_DC: %s meters (%d) and the carriers below, coverage %.0f%%\n",
                   energies[i].label, v, wt_role_name(e->role), e->meters, 100 * e->coverage);
        else if (strcmp(e->from, "meters") == 0)
            printf("  %-12s %-22s %s meters (%d), coverage %.0f%%\n", energies[i].label, v,
                   wt_role_name(e->role), e->meters, 100 * e->coverage);
        else if (e == &r->gpu && e->meters)
            printf("  %-12s %-22s GPU counters of %d node%s, coverage %.0f%%\n", energies[i].label,
                   v, e->meters, e->meters == 1 ? "" : "s", 100 * e->coverage);
        else if (strcmp(e->from, "hwmon") == 0)
            printf("  %-12s %-22s hwmon wall sensors (%d), coverage %.0f%%\n", energies[i].label, v,
                   e->meters, 100 * e->coverage);
        else if (strcmp(e->from, "node_sensors") == 0)
            printf("  %-12s %-22s node sensors (%d series), coverage %.0f%%\n", energies[i].label,
                   v, e->meters, 100 * e->coverage);
        else
            printf("  %-12s %s\n", energies[i].label, v);
    }
    printf("KPIs\n");
    for (size_t i = 0; i < r->nrows; i++) {
        const struct wt_kpi_row *row = &r->rows[i];
        if (!row->available) {
            printf("  %-26s -         (%s)\n", row->label, row->why);
            continue;
        }
        printf("  %-26s %-9.4g %s%s\n", row->label, row->value,
               strcmp(row->unit, "ratio") ? row->unit : "",
               row->measured ? "  measured" : "  ASSUMED/partial");
        for (size_t k = 0; k < row->nin; k++)
            printf("      %-18s %-9s %s\n", row->in[k].name,
                   row->in[k].measured ? "measured" : "assumed", row->in[k].detail);
    }
    if (!r->part_load_available) {
        printf("part-load PUE: - (%s)\n", r->part_load_why);
    } else {
        printf("part-load PUE (IT load as %% of design capacity, %.0f-s pieces)\n",
               (double)r->piece_ns / 1e9);
        for (size_t k = 0; k < r->nbands; k++) {
            const struct wt_kpi_band *b = &r->bands[k];
            snprintf(v, sizeof v, "%g-%g%%%s", b->lo_pct, b->hi_pct, k + 1 == r->nbands ? "+" : "");
            if (b->available)
                printf("  %-12s PUE %-8.4g %d pieces, IT %.3f kWh\n", v, b->pue, b->pieces,
                       b->it_j / 3.6e6);
            else
                printf("  %-12s -\n", v);
        }
    }
    if (r->nzones) {
        printf("PUE per zone\n");
        for (size_t k = 0; k < r->nzones; k++) {
            const struct wt_kpi_zone *z = &r->zones[k];
            if (z->available)
                printf("  %-16s %-8.4g %s\n", z->zone, z->pue,
                       z->measured ? "measured" : "partial coverage");
            else
                printf("  %-16s -        (needs facility_total and IT meters in the zone)\n",
                       z->zone);
        }
    }
    if (r->nracks) {
        printf("rack Delta-T (mean exhaust - mean inlet)\n");
        for (size_t k = 0; k < r->nracks; k++) {
            const struct wt_kpi_rack *x = &r->racks[k];
            if (x->has_inlet && x->has_exhaust)
                printf("  %-16s %6.2f K  (inlet %.2f C, exhaust %.2f C)\n", x->rack, x->delta_t_k,
                       x->inlet_c, x->exhaust_c);
            else
                printf("  %-16s -  (needs inlet and exhaust sensors)\n", x->rack);
        }
    }
    if (r->nnodes) {
        printf("chip-vs-wall per node (wall - GPUs - CPU packages - DRAM)\n");
        for (size_t k = 0; k < r->nnodes; k++) {
            const struct wt_recon_node *x = &r->nodes[k];
            printf("  %-16s wall %.3f kWh (%s)  chips %.3f kWh  unaccounted %.1f W (%.1f%%)",
                   x->node, x->wall_j / 3.6e6, x->wall_from ? x->wall_from : "none",
                   x->chips_j / 3.6e6, x->unaccounted_w, 100 * x->share);
            if (x->pieces > 1)
                printf("  share %.1f..%.1f%%", 100 * x->share_min, 100 * x->share_max);
            if (x->chips_exceed_wall)
                printf("  SUSPECT: chips exceed wall");
            if (x->share_drift)
                printf("  SUSPECT: share drifts");
            printf("\n");
            if (x->psu_series && x->psu_in_j > 0)
                printf("  %-16s PSU conversion loss %.3f kWh (%.1f%% of the PSUs' input)\n", "",
                       x->psu_loss_j / 3.6e6, 100 * x->psu_loss_share);
            if (x->has_model) {
                char md[40];
                wt_time_format(x->model_t_ns, 0, md, sizeof md);
                printf("  %-16s model of %s: wall %.1f W expected (%.1f W beside the chips), "
                       "departs %+.1f W%s\n",
                       "", md, x->model_predicted_w, x->model_unaccounted_w, x->model_departure_w,
                       x->model_drift ? "  DRIFT: beyond the model" : "");
            }
        }
    }
    wt_clockcheck_print(stdout, cw);
}

/* The nodes' calibration models (calibration.json beside the store), when there are. */
static void apply_models(const struct wt_config *cfg, bool fleet, struct wt_kpi_report *r,
                         double window_s)
{
    char path[WT_PATH_LEN + 32];
    struct wt_calib_model *m = calloc(WT_CALIB_MAX_MODELS, sizeof *m);
    size_t n = 0;
    struct wt_err err = {{0}};
    if (m && !fleet && wt_calib_model_path(cfg, path, sizeof path) == 0) {
        if (wt_calib_load(path, m, WT_CALIB_MAX_MODELS, &n, &err) != 0)
            fprintf(stderr, "wattage kpi: %s (models not used)\n", err.msg);
        else
            wt_recon_apply_models(r->nodes, r->nnodes, m, n, window_s);
    }
    free(m);
}

/*
 * KPIs that other modules compute over the same window (CUE from the carbon module...): each adds
 * its row with wt_kpi_add_row and wt_kpi_row_input, after the facility rows. Returns 0, or 1
 * after printing a runtime failure.
 */
static int extra_rows(struct wt_store *st, const struct wt_config *cfg, struct wt_kpi_report *r)
{
    /* CUE (audit/carbon.h): without a series its row says why; a store failure is fatal. */
    if (wt_carbon_kpi_row(st, cfg, r) == -EIO) {
        fprintf(stderr, "wattage kpi: CUE: cannot read the carbon series from the store\n");
        return 1;
    }
    return 0;
}

/*
 * --source: the carbon series CUE weighs the fleet's IT energy with, put into the working store:
 * the local store's (--db, else store.path when it exists) and a --carbon file's (zone
 * carbon.zone unless the file names it). 0, 1 (a file that cannot be read) or 2.
 */
static int fleet_carbon(struct wt_store *st, const struct wt_config *cfg, const char *db,
                        const char *carbon)
{
    struct wt_err err = {{0}};
    struct wt_carbon_conf cf;
    const char *local = db ? db : cfg->store.path;
    size_t n = 0;
    if (wt_carbon_tables(wt_store_db(st)) != 0) {
        fprintf(stderr, "wattage kpi: the working store: cannot create the carbon table\n");
        return 1;
    }
    if (db && access(db, R_OK) != 0) {
        fprintf(stderr, "wattage kpi: --db %s: %s\n", db, strerror(errno));
        return 2;
    }
    if (local[0] && access(local, R_OK) == 0 && wt_kpi_carbon_copy(st, local, &n, &err) != 0) {
        fprintf(stderr, "wattage kpi: %s\n", err.msg);
        return 1;
    }
    if (!carbon)
        return 0;
    if (wt_carbon_conf_from(cfg, &cf, &err) != 0) {
        fprintf(stderr, "wattage kpi: %s\n", err.msg);
        return 2;
    }
    if (wt_carbon_load_file(wt_store_db(st), carbon, WT_CF_AUTO, WT_CS_INTENSITY,
                            cf.zone[0] ? cf.zone : NULL, stderr, &n, &err) != 0) {
        fprintf(stderr, "wattage kpi: --carbon %s: %s\n", carbon, err.msg);
        return 1;
    }
    return 0;
}

/* The starts of the carbon steps inside [from, to] that CUE weighs the IT energy by (none
 * without carbon.zone): edges where the digest's energy must be exact too. 0 or -errno. */
static int carbon_edges(struct wt_store *st, const struct wt_config *cfg, int64_t from, int64_t to,
                        int64_t **edges, size_t *n)
{
    struct wt_carbon_conf cf;
    struct wt_carbon_step *s = NULL;
    struct wt_err err = {{0}};
    size_t ns = 0;
    *edges = NULL;
    *n = 0;
    if (wt_carbon_conf_from(cfg, &cf, &err) != 0 || !cf.zone[0])
        return 0; /* said by fleet_carbon; no zone: one static value */
    int rc = wt_carbon_steps(wt_store_db(st), &cf, WT_CS_INTENSITY, cf.zone, from, to, &s, &ns);
    if (rc == 0 && ns > 1 && !(*edges = malloc((ns - 1) * sizeof **edges)))
        rc = -ENOMEM;
    for (size_t i = 1; rc == 0 && i < ns; i++)
        (*edges)[(*n)++] = s[i].from_ns;
    free(s);
    return rc;
}

/*
 * --source: a working store in a new temporary directory (dir, removed by the caller) with the
 * carbon series (fleet_carbon) and the fleet's readings of the window digested
 * (wt_promsrc_digest: the nodes' counters exact over the window and each carbon step, not every
 * sample; the facility's few meters as they are, audit/meters.c reads their steps), so the KPIs
 * are computed exactly as locally. 0, 1 or 2 (printed).
 */
static int fleet_store(const char *source, const struct wt_config *cfg, const char *db,
                       const char *carbon, int64_t from, int64_t to, char *dir, size_t n,
                       struct wt_store **st)
{
    static const char *const counters[] = {"wattage_gpu_energy_joules_total",
                                           "wattage_gpu_energy_integrated_joules_total",
                                           "wattage_cpu_energy_joules_total", NULL};
    struct wt_promsrc_digest d = {.counters = counters,
                                  .raw = "{__name__=~\"wattage_facility_.+\"}"};
    struct wt_promsrc *ps = NULL;
    struct wt_err err = {{0}};
    char path[96];
    struct wt_store_opts o = {.create = true};
    const char *tmp = getenv("TMPDIR");
    int64_t *edges = NULL;
    snprintf(dir, n, "%s/wattage-kpi-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "wattage kpi: cannot make a working directory: %s\n", strerror(errno));
        dir[0] = '\0';
        return 1;
    }
    snprintf(path, sizeof path, "%s/kpi.db", dir);
    if (wt_cli_open_source(source, &ps) != 0) {
        rmdir(dir);
        dir[0] = '\0';
        return 2;
    }
    size_t series, readings;
    int rc = wt_store_open(path, &o, st, &err);
    if (rc == 0 && (rc = fleet_carbon(*st, cfg, db, carbon)) != 0) {
        wt_promsrc_close(ps);
        return rc; /* said; the caller closes the store and removes it */
    }
    if (rc == 0 && (rc = carbon_edges(*st, cfg, from, to, &edges, &d.nedges)) != 0)
        wt_err_set(&err, "the working store: cannot read the carbon series");
    d.edges = edges;
    if (rc == 0)
        rc = wt_promsrc_digest(ps, &d, from, to, *st, &series, &readings, &err);
    free(edges);
    wt_promsrc_close(ps);
    if (rc) {
        fprintf(stderr, "wattage kpi: %s\n", err.msg);
        wt_store_close(*st);
        *st = NULL;
        unlink(path);
        rmdir(dir);
        dir[0] = '\0';
        return 1;
    }
    return 0;
}

static const struct wt_cli_opt kpi_opts[] = {
    {"zone", 'z', "Z", "the KPIs of one zone of the topology, from its meters (default the site)"},
    {"json", WT_OPT_JSON, NULL, "JSON (SI units) instead of text"},
    {"source", WT_OPT_SOURCE, "URL",
     WT_CLI_SOURCE_HELP "; --db then names the local store whose carbon series CUE uses (default "
                        "store.path when it exists)"},
    {"carbon", 'C', "FILE",
     "with --source: a carbon-intensity file (CSV or JSON, as `wattage import carbon` reads; zone "
     "carbon.zone) for CUE"},
    {NULL}};

const struct wt_cli_form wt_cli_form_kpi = {
    "kpi",
    "",
    "facility KPIs over a window (PUE, WUE, ERF, CUE...) from the topology's meters, and the "
    "chip-vs-wall reconciliation",
    __FILE__,
    false,
    {wt_cli_window_opts, kpi_opts, wt_cli_store_opts}};

int wt_cmd_kpi(int argc, char **argv)
{
    const char *zone = NULL, *carbon = NULL;
    struct wt_cli_common co = {0};
    int c, rc;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_kpi, argc, argv, &co)) != -1) {
        switch (c) {
        case 'z':
            zone = optarg;
            break;
        case 'C':
            carbon = optarg;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (wt_cli_no_operands(&wt_cli_form_kpi, argc, argv))
        return 2;
    if (carbon && !co.source) {
        fprintf(stderr, "wattage kpi: --carbon goes with --source (the local store's carbon "
                        "series are those `wattage import carbon` stored)\n");
        return 2;
    }
    int64_t from, to;
    if ((rc = wt_cli_window("kpi", &co, wt_now_real_ns(), &from, &to)) != 0)
        return rc;
    struct wt_config cfg;
    struct wt_topology *t = NULL;
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_kpi_report r;
    if ((rc = wt_cli_load_config(co.config, &cfg)) != 0)
        return rc;
    double fuel_kwh[WT_FUEL_COUNT];
    if (wt_topology_load(&cfg, &t, &err) != 0 || wt_kpi_fuel_factors(&cfg, fuel_kwh, &err) != 0) {
        fprintf(stderr, "wattage kpi: %s\n", err.msg);
        wt_config_free(&cfg);
        return 2;
    }
    if (zone) {
        bool known = false;
        for (size_t i = 0; i < t->nmeters && !known; i++)
            known = strcmp(wt_topology_meter_zone(t, &t->meters[i]), zone) == 0;
        for (size_t i = 0; i < t->nnodes && !known; i++)
            known = strcmp(wt_topology_node_zone(t, t->nodes[i].name), zone) == 0;
        if (!known) {
            fprintf(stderr, "wattage kpi: --zone: no meter or node of %s is in zone \"%s\"\n",
                    cfg.source[0] ? cfg.source : "the configuration", zone);
            free(t);
            wt_config_free(&cfg);
            return 2;
        }
    }
    char work[64] = "";
    rc = co.source ? fleet_store(co.source, &cfg, co.db, carbon, from, to, work, sizeof work, &st)
                   : wt_cli_open_store("kpi", &co, false, &cfg, &st);
    if (rc && st) {
        /* fleet_carbon said why */
    } else if (rc) {
        free(t);
        wt_config_free(&cfg);
        return rc;
    }
    if (rc) {
        /* said; the working store is removed below */
    } else if (wt_kpi_compute_with(st, t, fuel_kwh, from, to, zone, &r, &err) != 0) {
        fprintf(stderr, "wattage kpi: %s\n", err.msg);
        rc = 1;
    } else if ((rc = extra_rows(st, &cfg, &r)) != 0) {
        wt_kpi_report_free(&r);
    } else {
        apply_models(&cfg, co.source != NULL, &r, (double)(to - from) / 1e9);
        /* the clock's trust over the window: warnings, never a failure */
        struct wt_clock_warnings cw;
        if (wt_clockcheck_window(st, from, to, (double)cfg.daemon.clock_max_error_ns / 1e9, &cw))
            cw.n = 0;
        else if (wt_clockcheck_peers(st, from, to, (double)cfg.daemon.clock_max_error_ns / 1e9,
                                     &cw) != 0)
            (void)0; /* the facility clocks' warnings are missing: the host's stay */
        if (co.json)
            print_json(&r, &cw);
        else
            print_text(&r, &cw);
        wt_kpi_report_free(&r);
    }
    wt_store_close(st);
    if (work[0]) {
        char path[96];
        static const char *const files[] = {"kpi.db", "kpi.db-wal", "kpi.db-shm"};
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "%s/%s", work, files[i]);
            unlink(path);
        }
        rmdir(work);
    }
    free(t);
    wt_config_free(&cfg);
    return rc;
}
