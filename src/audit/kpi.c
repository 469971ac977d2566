/* SPDX-License-Identifier: MIT */
/*
 * Facility KPIs over an exact window (kpi.h): PUE, part-load PUE, per-zone PUE, CLF, WUE, ERF,
 * the accelerator share of IT energy, rack Delta-T and the chip-vs-wall reconciliation, each
 * saying which inputs were measured and which assumed; and the daemon thread that exports them
 * as gauges over a rolling window.
 */
#include "audit/kpi.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/calibrate.h"
#include "audit/meters.h"
#include "audit/reconcile.h"
#include "audit/statement.h"
#include "collect/hwmon.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/hub.h"
#include "core/log.h"
#include "store/query.h"
#include "store/store.h"

#define MAX_PIECES 2000 /* part-load pieces per window: longer windows get longer pieces */

/* What a computation works with. */
struct ctx {
    struct wt_store *st;
    const struct wt_topology *t;
    struct wt_meter_set *ms;
    const double *fuel_kwh; /* statement.fuel_factors (NULL: their defaults) */
};

/* ---- rows ---- */

struct wt_kpi_row *wt_kpi_add_row(struct wt_kpi_report *r, const char *key, const char *label,
                                  const char *unit)
{
    if (r->nrows == WT_KPI_MAX_ROWS)
        return NULL;
    struct wt_kpi_row *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof *row);
    snprintf(row->key, sizeof row->key, "%s", key);
    snprintf(row->label, sizeof row->label, "%s", label);
    snprintf(row->unit, sizeof row->unit, "%s", unit);
    return row;
}

void wt_kpi_row_input(struct wt_kpi_row *row, const char *name, bool measured, const char *fmt, ...)
{
    if (row->nin == WT_KPI_MAX_INPUTS)
        return;
    struct wt_kpi_input *in = &row->in[row->nin++];
    va_list ap;
    snprintf(in->name, sizeof in->name, "%s", name);
    in->measured = measured;
    va_start(ap, fmt);
    vsnprintf(in->detail, sizeof in->detail, fmt, ap);
    va_end(ap);
}

const struct wt_kpi_row *wt_kpi_row(const struct wt_kpi_report *r, const char *key)
{
    for (size_t i = 0; i < r->nrows; i++)
        if (strcmp(r->rows[i].key, key) == 0)
            return &r->rows[i];
    return NULL;
}

static void set_value(struct wt_kpi_row *row, double v)
{
    row->available = true;
    row->value = v;
    row->measured = true;
    for (size_t i = 0; i < row->nin; i++)
        row->measured = row->measured && row->in[i].measured;
}

/* ---- energy of a role ---- */

/* Roles whose meters each feed one node: they add up, never overlap. */
static bool per_node(enum wt_role r)
{
    return r == WT_ROLE_PDU_OUTLET || r == WT_ROLE_BMC;
}

/*
 * Whether meter m counts for role in zone (NULL or "": the site). Site-wide, an aggregate role
 * counts its meters without a zone when it has any (a main meter and its zone sub-meters must
 * not add up), else all of them.
 */
static bool counts(const struct ctx *c, const struct wt_meter *m, enum wt_role role,
                   const char *zone, bool site_unzoned)
{
    if (m->role != role)
        return false;
    const char *mz = wt_topology_meter_zone(c->t, m);
    if (zone && zone[0])
        return strcmp(mz, zone) == 0;
    if (per_node(role) || !site_unzoned)
        return true;
    return mz[0] == '\0';
}

static int role_energy(const struct ctx *c, enum wt_role role, const char *zone, int64_t a,
                       int64_t b, struct wt_kpi_energy *e)
{
    bool unzoned = false;
    memset(e, 0, sizeof *e);
    e->from = "none";
    e->role = role;
    for (size_t i = 0; i < c->t->nmeters; i++)
        if (c->t->meters[i].role == role && !wt_topology_meter_zone(c->t, &c->t->meters[i])[0])
            unzoned = true;
    double cmin = 1;
    for (size_t i = 0; i < c->t->nmeters; i++) {
        if (!counts(c, &c->t->meters[i], role, zone, unzoned))
            continue;
        double j, cov;
        int pts;
        enum wt_meter_method how;
        int rc = wt_meters_energy(c->ms, i, a, b, &j, &cov, &pts, &how);
        if (rc)
            return rc;
        e->j += j;
        if (cov < cmin)
            cmin = cov;
        e->meters++;
    }
    if (e->meters) {
        e->from = "meters";
        e->coverage = cmin;
        e->measured = cmin >= c->t->min_coverage;
    }
    return 0;
}

static bool node_in_zone(const struct ctx *c, const char *node, const char *zone)
{
    return !zone || !zone[0] || strcmp(wt_topology_node_zone(c->t, node), zone) == 0;
}

/*
 * The facility energy as the statement's E_DC counts it (statement.c): the facility_total meters
 * (role_energy's zone rule), and site-wide also the onsite_generation and purchased_cooling
 * meters and every fuel meter without feeds (its litres, m3 or kg at statement.fuel_factors;
 * the fuel of a generator metered at its output is in that output), less the exported meters.
 * A zone's is its facility_total meters only (the pPUE boundary). Nothing is added without a
 * facility_total meter. car (may be NULL) gets the added carriers, their role in each's role.
 */
static int facility_energy(const struct ctx *c, const char *zone, int64_t a, int64_t b,
                           struct wt_kpi_energy *e, struct wt_kpi_carriers *car)
{
    struct wt_kpi_carriers none;
    if (!car)
        car = &none;
    memset(car, 0, sizeof *car);
    car->onsite.from = car->fuel.from = car->cooling_in.from = car->exported.from = "none";
    int rc = role_energy(c, WT_ROLE_FACILITY_TOTAL, zone, a, b, e);
    if (rc || !e->meters || (zone && zone[0]))
        return rc;
    static const enum wt_role add[] = {WT_ROLE_ONSITE_GENERATION, WT_ROLE_PURCHASED_COOLING,
                                       WT_ROLE_EXPORTED};
    struct wt_kpi_energy *into[] = {&car->onsite, &car->cooling_in, &car->exported};
    double cmin = e->coverage;
    for (size_t k = 0; k < sizeof add / sizeof add[0]; k++) {
        if ((rc = role_energy(c, add[k], NULL, a, b, into[k])) != 0)
            return rc;
        if (into[k]->meters && into[k]->coverage < cmin)
            cmin = into[k]->coverage;
    }
    struct wt_kpi_energy *fu = &car->fuel;
    double fmin = 1;
    for (size_t i = 0; i < c->t->nmeters; i++) {
        const struct wt_meter *m = &c->t->meters[i];
        if (m->role != WT_ROLE_FUEL || m->feeds[0])
            continue;
        double q, cov;
        int pts;
        enum wt_meter_method how;
        if ((rc = wt_meters_energy(c->ms, i, a, b, &q, &cov, &pts, &how)) != 0)
            return rc;
        fu->j += wt_fuel_energy_j(c->fuel_kwh, m->fuel, q);
        fu->meters++;
        if (cov < fmin)
            fmin = cov;
    }
    if (fu->meters) {
        fu->from = "meters";
        fu->role = WT_ROLE_FUEL;
        fu->coverage = fmin;
        fu->measured = fmin >= c->t->min_coverage;
        if (fmin < cmin)
            cmin = fmin;
    }
    e->j += car->onsite.j + car->cooling_in.j + fu->j - car->exported.j;
    e->coverage = cmin;
    e->measured = cmin >= c->t->min_coverage;
    return 0;
}

/* GPU and chip energy of the nodes in zone. */
static int chips_energy(const struct ctx *c, const char *zone, int64_t a, int64_t b,
                        struct wt_kpi_energy *gpu, struct wt_kpi_energy *chips)
{
    struct wt_node_chips *nc = NULL;
    size_t n = 0;
    int rc = wt_meters_chips(c->ms, a, b, NULL, 0, &nc, &n);
    if (rc)
        return rc;
    memset(gpu, 0, sizeof *gpu);
    memset(chips, 0, sizeof *chips);
    gpu->from = chips->from = "none";
    double gmin = 1, cmin = 1;
    for (size_t i = 0; i < n; i++) {
        /* a node with hwmon meters only (its wall, its supplies) has no chips to count */
        if (!nc[i].series || !node_in_zone(c, nc[i].node, zone))
            continue;
        chips->j += nc[i].gpu_j + nc[i].cpu_j + nc[i].dram_j;
        chips->meters += nc[i].series;
        if (nc[i].coverage < cmin)
            cmin = nc[i].coverage;
        if (nc[i].gpu_j > 0) {
            gpu->j += nc[i].gpu_j;
            gpu->meters++;
            if (nc[i].coverage < gmin)
                gmin = nc[i].coverage;
        }
    }
    free(nc);
    if (chips->meters) {
        chips->from = "node_sensors";
        chips->coverage = cmin;
        chips->measured = cmin >= c->t->min_coverage;
    }
    if (gpu->meters) {
        gpu->from = "node_sensors";
        gpu->coverage = gmin;
        gpu->measured = gmin >= c->t->min_coverage;
    }
    return 0;
}

/*
 * The IT meters' energy as the statement's E_IT counts it (statement.h): the meters of every IT
 * role present (ups_output, pdu_output, it_input, it_total; wt_stmt_category names them), each
 * role's meters through role_energy's zone rule. e->role is the role of the PUE category
 * (ups_output, pdu_output, it_input; it_total when the category is not stated).
 */
static int it_meters_energy(const struct ctx *c, const char *zone, int64_t a, int64_t b,
                            struct wt_kpi_energy *e)
{
    static const enum wt_role by_category[] = {WT_ROLE_IT_TOTAL, WT_ROLE_UPS_OUTPUT,
                                               WT_ROLE_PDU_OUTPUT, WT_ROLE_IT_INPUT};
    unsigned roles = 0;
    int cat = wt_stmt_category(c->t, &roles);
    memset(e, 0, sizeof *e);
    e->from = "none";
    e->role = by_category[cat];
    double cmin = 1;
    for (int r = 0; r < WT_ROLE_COUNT; r++) {
        if (!(roles & (1u << r)))
            continue;
        struct wt_kpi_energy one;
        int rc = role_energy(c, (enum wt_role)r, zone, a, b, &one);
        if (rc)
            return rc;
        if (!one.meters)
            continue;
        e->j += one.j;
        e->meters += one.meters;
        if (one.coverage < cmin)
            cmin = one.coverage;
    }
    if (e->meters) {
        e->from = "meters";
        e->coverage = cmin;
        e->measured = cmin >= c->t->min_coverage;
    }
    return 0;
}

/*
 * IT energy: the IT meters (it_meters_energy), else the nodes' walls (pdu_outlet meters, or
 * bmc meters for nodes without outlets, or the hwmon wall sensor of nodes without either), else
 * the nodes' own sensors.
 */
static int it_energy(const struct ctx *c, const char *zone, int64_t a, int64_t b,
                     struct wt_kpi_energy *e)
{
    int rc = it_meters_energy(c, zone, a, b, e);
    if (rc || e->meters)
        return rc;
    struct wt_kpi_energy pdu, bmc;
    if ((rc = role_energy(c, WT_ROLE_PDU_OUTLET, zone, a, b, &pdu)) != 0)
        return rc;
    /* bmc meters only for nodes without outlets */
    memset(&bmc, 0, sizeof bmc);
    double cmin = pdu.meters ? pdu.coverage : 1;
    for (size_t i = 0; i < c->t->nmeters; i++) {
        const struct wt_meter *m = &c->t->meters[i];
        if (m->role != WT_ROLE_BMC || !counts(c, m, WT_ROLE_BMC, zone, false))
            continue;
        bool has_outlet = false;
        for (size_t k = 0; k < c->t->nmeters && !has_outlet; k++)
            has_outlet = c->t->meters[k].role == WT_ROLE_PDU_OUTLET &&
                         strcmp(c->t->meters[k].node, m->node) == 0;
        if (has_outlet)
            continue;
        double j, cov;
        int pts;
        enum wt_meter_method how;
        if ((rc = wt_meters_energy(c->ms, i, a, b, &j, &cov, &pts, &how)) != 0)
            return rc;
        bmc.j += j;
        bmc.meters++;
        if (cov < cmin)
            cmin = cov;
    }
    /* and the nodes' own hwmon wall sensors (ACPI power meters) for nodes without either */
    struct wt_node_chips *nc = NULL;
    size_t nn = 0;
    double hw_j = 0;
    int hw = 0;
    if ((rc = wt_meters_chips(c->ms, a, b, NULL, 0, &nc, &nn)) != 0)
        return rc;
    for (size_t i = 0; i < nn; i++) {
        if (!nc[i].wall_series || !node_in_zone(c, nc[i].node, zone))
            continue;
        bool metered = false;
        for (size_t k = 0; k < c->t->nmeters && !metered; k++)
            metered =
                per_node(c->t->meters[k].role) && strcmp(c->t->meters[k].node, nc[i].node) == 0;
        if (metered)
            continue;
        hw_j += nc[i].wall_j;
        hw += nc[i].wall_series;
        if (nc[i].wall_coverage < cmin)
            cmin = nc[i].wall_coverage;
    }
    free(nc);
    if (pdu.meters || bmc.meters || hw) {
        memset(e, 0, sizeof *e);
        e->j = pdu.j + bmc.j + hw_j;
        e->meters = pdu.meters + bmc.meters + hw;
        e->from = pdu.meters || bmc.meters ? "meters" : "hwmon";
        e->role = pdu.meters ? WT_ROLE_PDU_OUTLET : WT_ROLE_BMC;
        e->coverage = cmin;
        e->measured = cmin >= c->t->min_coverage;
        return 0;
    }
    struct wt_kpi_energy gpu;
    return chips_energy(c, zone, a, b, &gpu, e);
}

/* "facility_total meters (2), coverage 100%" */
static void describe(const struct wt_kpi_energy *e, char *buf, size_t n)
{
    if (strcmp(e->from, "meters") == 0)
        snprintf(buf, n, "%s meters (%d), coverage %.0f%%", wt_role_name(e->role), e->meters,
                 100 * e->coverage);
    else if (strcmp(e->from, "hwmon") == 0)
        snprintf(buf, n, "nodes' hwmon wall sensors (%d), coverage %.0f%%", e->meters,
                 100 * e->coverage);
    else if (strcmp(e->from, "node_sensors") == 0)
        snprintf(buf, n, "nodes' own sensors (%d series: GPU, CPU package, DRAM), coverage %.0f%%",
                 e->meters, 100 * e->coverage);
    else
        snprintf(buf, n, "%s", e->from);
}

/* The facility energy of the site with its carriers: "facility_total meters (1) + fuel (1) -
 * exported (1), coverage 100%" (describe without carriers). */
static void describe_dc(const struct wt_kpi_energy *e, const struct wt_kpi_carriers *car, char *buf,
                        size_t n)
{
    const struct {
        const char *op;
        const struct wt_kpi_energy *x;
    } add[] = {{" + ", &car->onsite},
               {" + ", &car->fuel},
               {" + ", &car->cooling_in},
               {" - ", &car->exported}};
    if (strcmp(e->from, "meters") != 0) {
        describe(e, buf, n);
        return;
    }
    int w = snprintf(buf, n, "%s meters (%d)", wt_role_name(e->role), e->meters);
    size_t l = w > 0 ? (size_t)w : 0;
    for (size_t k = 0; k < sizeof add / sizeof add[0] && l < n; k++) {
        if (!add[k].x->meters)
            continue;
        w = snprintf(buf + l, n - l, "%s%s (%d)", add[k].op, wt_role_name(add[k].x->role),
                     add[k].x->meters);
        l += w > 0 ? (size_t)w : 0;
    }
    if (l < n)
        snprintf(buf + l, n - l, ", coverage %.0f%%", 100 * e->coverage);
}

/* ---- the KPIs ---- */

static void kpi_pue(const struct ctx *c, struct wt_kpi_report *r, struct wt_kpi_energy *fac_used)
{
    struct wt_kpi_row *row = wt_kpi_add_row(r, "pue", "PUE", "ratio");
    char d[96];
    *fac_used = r->facility;
    describe(&r->it, d, sizeof d);
    if (r->it.j <= 0) {
        snprintf(row->why, sizeof row->why, "no IT energy in the window (%s)", d);
        return;
    }
    if (r->facility.meters && r->facility.j > 0 &&
        (r->facility.measured || c->t->pue_assumed <= 0)) {
        char f[160];
        describe_dc(&r->facility, &r->carriers, f, sizeof f);
        wt_kpi_row_input(row, "facility_energy", r->facility.measured, "%s", f);
        wt_kpi_row_input(row, "it_energy", r->it.measured, "%s", d);
        set_value(row, r->facility.j / r->it.j);
        return;
    }
    if (c->t->pue_assumed > 0) {
        wt_kpi_row_input(row, "facility_energy", false, "facility.pue_assumed = %g (%s)",
                         c->t->pue_assumed,
                         r->facility.meters ? "facility_total meters do not cover the window"
                                            : "no facility_total meter");
        wt_kpi_row_input(row, "it_energy", r->it.measured, "%s", d);
        set_value(row, c->t->pue_assumed);
        fac_used->j = c->t->pue_assumed * r->it.j;
        fac_used->from = "assumed";
        fac_used->measured = false;
        return;
    }
    snprintf(row->why, sizeof row->why, "no facility_total meter and no facility.pue_assumed");
}

static void kpi_rows(const struct ctx *c, struct wt_kpi_report *r)
{
    struct wt_kpi_energy fac;
    char d[96], w[96];
    kpi_pue(c, r, &fac);
    describe(&r->it, d, sizeof d);

    struct wt_kpi_row *row = wt_kpi_add_row(r, "clf", "CLF (cooling / IT)", "ratio");
    if (!r->cooling.meters || r->it.j <= 0) {
        snprintf(row->why, sizeof row->why, "%s",
                 r->cooling.meters ? "no IT energy in the window" : "no cooling meter");
    } else {
        describe(&r->cooling, w, sizeof w);
        wt_kpi_row_input(row, "cooling_energy", r->cooling.measured, "%s", w);
        wt_kpi_row_input(row, "it_energy", r->it.measured, "%s", d);
        set_value(row, r->cooling.j / r->it.j);
    }

    row = wt_kpi_add_row(r, "wue", "WUE", "L/kWh");
    if (r->it.j <= 0) {
        snprintf(row->why, sizeof row->why, "no IT energy in the window");
    } else if (r->water.meters) {
        describe(&r->water, w, sizeof w);
        wt_kpi_row_input(row, "water", r->water.measured, "%s", w);
        wt_kpi_row_input(row, "it_energy", r->it.measured, "%s", d);
        set_value(row, r->water.j * 1000.0 / (r->it.j / 3.6e6));
    } else if (c->t->wue_assumed >= 0) {
        wt_kpi_row_input(row, "water", false, "facility.wue_assumed = %g L/kWh (no water meter)",
                         c->t->wue_assumed);
        set_value(row, c->t->wue_assumed);
    } else {
        snprintf(row->why, sizeof row->why, "no water meter and no facility.wue_assumed");
    }

    row = wt_kpi_add_row(r, "erf", "ERF (reused / facility)", "ratio");
    if (!r->heat.meters) {
        snprintf(row->why, sizeof row->why, "no heat_reused meter");
    } else if (fac.j <= 0) {
        snprintf(row->why, sizeof row->why, "no facility energy (meter or pue_assumed)");
    } else {
        describe(&r->heat, w, sizeof w);
        wt_kpi_row_input(row, "heat_reused", r->heat.measured, "%s", w);
        if (strcmp(fac.from, "assumed") == 0) {
            wt_kpi_row_input(row, "facility_energy", false, "IT energy x facility.pue_assumed %g",
                             c->t->pue_assumed);
        } else {
            char f[160];
            describe_dc(&fac, &r->carriers, f, sizeof f);
            wt_kpi_row_input(row, "facility_energy", fac.measured, "%s", f);
        }
        set_value(row, r->heat.j / fac.j);
    }

    row = wt_kpi_add_row(r, "accelerator_share", "accelerator share of IT", "ratio");
    if (!r->gpu.meters || r->it.j <= 0) {
        snprintf(row->why, sizeof row->why, "%s",
                 r->gpu.meters ? "no IT energy in the window" : "no GPU energy in the window");
    } else {
        wt_kpi_row_input(row, "gpu_energy", r->gpu.measured,
                         "GPU energy counters of %d node%s, coverage %.0f%%", r->gpu.meters,
                         r->gpu.meters == 1 ? "" : "s", 100 * r->gpu.coverage);
        wt_kpi_row_input(row, "it_energy", r->it.measured, "%s", d);
        set_value(row, r->gpu.j / r->it.j);
    }
}

static int part_load(const struct ctx *c, struct wt_kpi_report *r, const char *zone)
{
    const struct wt_topology *t = c->t;
    int64_t a = r->from_ns, b = r->to_ns;
    r->nbands = t->nbands - 1;
    for (size_t k = 0; k < r->nbands; k++) {
        r->bands[k].lo_pct = t->bands[k];
        r->bands[k].hi_pct = t->bands[k + 1];
    }
    if (t->design_it_w <= 0) {
        snprintf(r->part_load_why, sizeof r->part_load_why, "topology.design_it_watts is not set");
        return 0;
    }
    if (!r->facility.meters) {
        snprintf(r->part_load_why, sizeof r->part_load_why,
                 "no facility_total meter (part-load PUE is measured only)");
        return 0;
    }
    int64_t piece = t->part_load_interval_ns;
    if (piece > b - a)
        piece = b - a;
    if ((b - a) / piece > MAX_PIECES)
        piece = (b - a + MAX_PIECES - 1) / MAX_PIECES;
    r->piece_ns = piece;
    r->part_load_available = true;
    for (int64_t p0 = a; p0 < b; p0 += piece) {
        int64_t p1 = p0 + piece < b ? p0 + piece : b;
        struct wt_kpi_energy fac, it;
        int rc;
        if ((rc = facility_energy(c, zone, p0, p1, &fac, NULL)) != 0 ||
            (rc = it_energy(c, zone, p0, p1, &it)) != 0)
            return rc;
        /* a piece counts only when both are measured over it */
        if (!fac.measured || !it.measured || it.j <= 0)
            continue;
        double secs = (double)(p1 - p0) / 1e9;
        double pct = 100.0 * it.j / secs / t->design_it_w;
        if (pct < t->bands[0])
            continue;
        size_t k = 0;
        while (k + 1 < r->nbands && pct >= t->bands[k + 1])
            k++;
        struct wt_kpi_band *bd = &r->bands[k];
        bd->pieces++;
        bd->seconds += secs;
        bd->facility_j += fac.j;
        bd->it_j += it.j;
    }
    for (size_t k = 0; k < r->nbands; k++) {
        struct wt_kpi_band *bd = &r->bands[k];
        if (bd->it_j > 0) {
            bd->available = true;
            bd->pue = bd->facility_j / bd->it_j;
        }
    }
    return 0;
}

/* Adds name to a list of names (unique). */
static int add_name(char (**list)[WT_TOPO_NAME], size_t *n, const char *name)
{
    if (!name[0])
        return 0;
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i], name) == 0)
            return 0;
    char(*nl)[WT_TOPO_NAME] = realloc(*list, (*n + 1) * sizeof *nl);
    if (!nl)
        return -ENOMEM;
    *list = nl;
    snprintf(nl[*n], WT_TOPO_NAME, "%s", name);
    (*n)++;
    return 0;
}

static int cmp_zone(const void *a, const void *b)
{
    return strcmp(((const struct wt_kpi_zone *)a)->zone, ((const struct wt_kpi_zone *)b)->zone);
}

static int zones(const struct ctx *c, struct wt_kpi_report *r)
{
    char(*names)[WT_TOPO_NAME] = NULL;
    size_t n = 0;
    int rc = 0;
    for (size_t i = 0; i < c->t->nmeters && rc == 0; i++)
        rc = add_name(&names, &n, wt_topology_meter_zone(c->t, &c->t->meters[i]));
    if (rc == 0 && n)
        r->zones = calloc(n, sizeof *r->zones);
    if (rc == 0 && n && !r->zones)
        rc = -ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct wt_kpi_zone *z = &r->zones[r->nzones++];
        snprintf(z->zone, sizeof z->zone, "%s", names[i]);
        if ((rc = role_energy(c, WT_ROLE_FACILITY_TOTAL, z->zone, r->from_ns, r->to_ns,
                              &z->facility)) != 0 ||
            (rc = it_energy(c, z->zone, r->from_ns, r->to_ns, &z->it)) != 0)
            break;
        if (z->facility.meters && z->facility.j > 0 && z->it.j > 0) {
            z->available = true;
            z->measured = z->facility.measured && z->it.measured;
            z->pue = z->facility.j / z->it.j;
        }
    }
    if (rc == 0 && r->nzones)
        qsort(r->zones, r->nzones, sizeof *r->zones, cmp_zone);
    free(names);
    return rc;
}

/* Mean of a gauge series over [a, b] (mean of its readings). Returns 0 and *ok. */
static int gauge_mean(struct wt_store *st, const struct wt_series_info *si, int64_t a, int64_t b,
                      double *mean, bool *ok)
{
    struct wt_point *pts = NULL;
    size_t n = 0;
    *ok = false;
    int rc = wt_store_points(st, si, a, b, b - a + 1, &pts, &n);
    if (rc)
        return rc;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += pts[i].v;
    if (n) {
        *mean = s / (double)n;
        *ok = true;
    }
    free(pts);
    return 0;
}

static int cmp_rack(const void *a, const void *b)
{
    return strcmp(((const struct wt_kpi_rack *)a)->rack, ((const struct wt_kpi_rack *)b)->rack);
}

/* True when s holds word, case-insensitively. */
static bool has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; *s; s++)
        if (strncasecmp(s, word, n) == 0)
            return true;
    return false;
}

/*
 * Which side of a rack a temperature series measures: 0 inlet, 1 exhaust, -1 neither. The kind
 * says (inlet; exhaust or outlet), else the point's name (a BMC's "Intake" or "Exhaust" sensor).
 */
static int air_side(const char *labels)
{
    char kind[32] = "", point[WT_LABELS_LEN] = "";
    (void)wt_labels_get(labels, "kind", kind, sizeof kind);
    if (strcmp(kind, "inlet") == 0)
        return 0;
    if (strcmp(kind, "exhaust") == 0 || strcmp(kind, "outlet") == 0)
        return 1;
    (void)wt_labels_get(labels, "point", point, sizeof point);
    if (has_word(point, "inlet") || has_word(point, "intake"))
        return 0;
    if (has_word(point, "exhaust"))
        return 1;
    return -1;
}

static int racks(const struct ctx *c, struct wt_kpi_report *r, const char *zone)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    int rc = wt_store_series(c->st, "wattage_facility_temperature_celsius", false, &si, &n, &err);
    if (rc)
        return rc;
    struct {
        double sum[2];
        int n[2];
    } *acc = NULL;
    char(*names)[WT_TOPO_NAME] = NULL;
    size_t nn = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char rack[WT_TOPO_NAME], node[WT_TOPO_NAME];
        int side = air_side(si[i].labels);
        if (side < 0)
            continue;
        if (wt_labels_get(si[i].labels, "rack", rack, sizeof rack) != 0) {
            if (wt_labels_get(si[i].labels, "node", node, sizeof node) != 0)
                continue;
            snprintf(rack, sizeof rack, "%s", wt_topology_node_rack(c->t, node));
        }
        if (!rack[0])
            continue;
        if (zone && zone[0] && strcmp(wt_topology_rack_zone(c->t, rack), zone) != 0)
            continue;
        double m;
        bool ok;
        if ((rc = gauge_mean(c->st, &si[i], r->from_ns, r->to_ns, &m, &ok)) != 0 || !ok)
            continue;
        size_t before = nn;
        if ((rc = add_name(&names, &nn, rack)) != 0)
            break;
        if (nn != before) {
            void *na = realloc(acc, nn * sizeof *acc);
            if (!na) {
                rc = -ENOMEM;
                break;
            }
            acc = na;
            memset(&acc[nn - 1], 0, sizeof *acc);
        }
        size_t k = 0;
        while (strcmp(names[k], rack) != 0)
            k++;
        acc[k].sum[side] += m;
        acc[k].n[side]++;
    }
    if (rc == 0 && nn) {
        r->racks = calloc(nn, sizeof *r->racks);
        if (!r->racks)
            rc = -ENOMEM;
    }
    for (size_t k = 0; k < nn && rc == 0; k++) {
        struct wt_kpi_rack *x = &r->racks[r->nracks++];
        snprintf(x->rack, sizeof x->rack, "%s", names[k]);
        x->has_inlet = acc[k].n[0] > 0;
        x->has_exhaust = acc[k].n[1] > 0;
        if (x->has_inlet)
            x->inlet_c = acc[k].sum[0] / acc[k].n[0];
        if (x->has_exhaust)
            x->exhaust_c = acc[k].sum[1] / acc[k].n[1];
        if (x->has_inlet && x->has_exhaust)
            x->delta_t_k = x->exhaust_c - x->inlet_c;
    }
    if (rc == 0 && r->nracks) /* qsort wants a real array, even of none */
        qsort(r->racks, r->nracks, sizeof *r->racks, cmp_rack);
    free(acc);
    free(names);
    free(si);
    return rc;
}

static int nodes(const struct ctx *c, struct wt_kpi_report *r, const char *zone)
{
    struct wt_recon_node *rn = NULL;
    size_t n = 0, keep = 0;
    int rc = wt_recon_compute(c->ms, c->t, r->from_ns, r->to_ns, &rn, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (node_in_zone(c, rn[i].node, zone))
            rn[keep++] = rn[i];
    r->nodes = rn;
    r->nnodes = keep;
    return 0;
}

int wt_kpi_fuel_factors(const struct wt_config *cfg, double kwh_per[WT_FUEL_COUNT],
                        struct wt_err *err)
{
    struct wt_stmt_conf *sc = malloc(sizeof *sc);
    if (!sc)
        return -ENOMEM;
    int rc = wt_stmt_conf_from(cfg, sc, err);
    if (rc == 0)
        memcpy(kwh_per, sc->fuel_kwh, sizeof sc->fuel_kwh);
    free(sc);
    return rc;
}

int wt_kpi_compute(struct wt_store *st, const struct wt_topology *t, int64_t from_ns, int64_t to_ns,
                   const char *zone, struct wt_kpi_report *r, struct wt_err *err)
{
    return wt_kpi_compute_with(st, t, NULL, from_ns, to_ns, zone, r, err);
}

int wt_kpi_compute_with(struct wt_store *st, const struct wt_topology *t, const double *fuel_kwh,
                        int64_t from_ns, int64_t to_ns, const char *zone, struct wt_kpi_report *r,
                        struct wt_err *err)
{
    struct ctx c = {st, t, NULL, fuel_kwh};
    int rc;
    memset(r, 0, sizeof *r);
    if (to_ns <= from_ns)
        return wt_err_set(err, "the window is empty: --to must be after --from");
    r->from_ns = from_ns;
    r->to_ns = to_ns;
    snprintf(r->zone, sizeof r->zone, "%s", zone ? zone : "");
    if ((rc = wt_meters_open(st, t, &c.ms, err)) != 0)
        return rc;
    struct wt_kpi_energy chips;
    if ((rc = facility_energy(&c, zone, from_ns, to_ns, &r->facility, &r->carriers)) ||
        (rc = it_energy(&c, zone, from_ns, to_ns, &r->it)) ||
        (rc = role_energy(&c, WT_ROLE_COOLING, zone, from_ns, to_ns, &r->cooling)) ||
        (rc = role_energy(&c, WT_ROLE_WATER, zone, from_ns, to_ns, &r->water)) ||
        (rc = role_energy(&c, WT_ROLE_HEAT_REUSED, zone, from_ns, to_ns, &r->heat)) ||
        (rc = chips_energy(&c, zone, from_ns, to_ns, &r->gpu, &chips)))
        goto out;
    kpi_rows(&c, r);
    if ((rc = part_load(&c, r, zone)) || (rc = racks(&c, r, zone)) || (rc = nodes(&c, r, zone)))
        goto out;
    if (!zone || !zone[0])
        rc = zones(&c, r);
out:
    wt_meters_close(c.ms);
    if (rc) {
        if (!err->msg[0])
            wt_err_set(err, "store: query failed (%s)", strerror(-rc));
        wt_kpi_report_free(r);
    }
    return rc;
}

void wt_kpi_report_free(struct wt_kpi_report *r)
{
    free(r->zones);
    free(r->racks);
    free(r->nodes);
    r->zones = NULL;
    r->racks = NULL;
    r->nodes = NULL;
    r->nzones = r->nracks = r->nnodes = 0;
}

int wt_kpi_pue(struct wt_store *st, const struct wt_config *cfg, int64_t from_ns, int64_t to_ns,
               double *pue, bool *measured, struct wt_err *err)
{
    struct wt_topology *t = NULL;
    double kwh_per[WT_FUEL_COUNT];
    struct ctx c = {st, NULL, NULL, kwh_per};
    struct wt_kpi_energy fac, it;
    int rc;
    *pue = 0;
    *measured = false;
    if (to_ns <= from_ns)
        return wt_err_set(err, "the window is empty");
    if ((rc = wt_kpi_fuel_factors(cfg, kwh_per, err)) != 0 ||
        (rc = wt_topology_load(cfg, &t, err)) != 0)
        return rc;
    c.t = t;
    if ((rc = wt_meters_open(st, t, &c.ms, err)) != 0)
        goto out;
    if ((rc = facility_energy(&c, NULL, from_ns, to_ns, &fac, NULL)) ||
        (rc = it_energy(&c, NULL, from_ns, to_ns, &it))) {
        wt_err_set(err, "store: query failed (%s)", strerror(-rc));
        goto out;
    }
    if (fac.measured && it.measured && fac.j > 0 && it.j > 0) {
        *pue = fac.j / it.j;
        *measured = true;
    } else if (t->pue_assumed > 0) {
        *pue = t->pue_assumed;
    } else {
        rc = -ENOENT;
        wt_err_set(err, "no measured PUE (%s) and no facility.pue_assumed",
                   !fac.meters ? "no facility_total meter"
                   : it.j <= 0 ? "no IT energy in the window"
                               : "the meters do not cover the window");
    }
out:
    wt_meters_close(c.ms);
    free(t);
    return rc;
}

/* ---- the fleet's working store ---- */

int wt_kpi_carbon_copy(struct wt_store *st, const char *path, size_t *copied, struct wt_err *err)
{
    sqlite3 *db = wt_store_db(st);
    sqlite3_stmt *q = NULL;
    int rc = -EIO, have = 0;
    *copied = 0;
    /* ATTACH would create a missing file */
    if (access(path, R_OK) != 0) {
        int e = errno;
        wt_err_set(err, "%s: %s", path, strerror(e));
        return -e;
    }
    if (sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS carbon_src", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_bind_text(q, 1, path, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_DONE) {
        wt_err_set(err, "%s: cannot open it for its carbon series: %s", path, sqlite3_errmsg(db));
        sqlite3_finalize(q);
        return -EIO;
    }
    sqlite3_finalize(q);
    q = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM carbon_src.sqlite_master WHERE type = 'table' AND "
                           "name = 'carbon_points'",
                           -1, &q, NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW) {
        wt_err_set(err, "%s: not a store (%s)", path, sqlite3_errmsg(db));
        goto out;
    }
    have = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    q = NULL;
    if (have &&
        sqlite3_exec(db,
                     "INSERT OR REPLACE INTO main.carbon_points SELECT series, zone, kind, "
                     "from_ns, to_ns, value, source, stored_ns FROM carbon_src.carbon_points",
                     NULL, NULL, NULL) != SQLITE_OK) {
        wt_err_set(err, "%s: cannot copy its carbon series: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    *copied = have ? (size_t)sqlite3_changes(db) : 0;
    rc = 0;
out:
    sqlite3_finalize(q);
    sqlite3_exec(db, "DETACH DATABASE carbon_src", NULL, NULL, NULL);
    return rc;
}

/* ---- the exported gauges ---- */

static int add(struct wt_batch *b, int metric, const char *labels, int64_t t, double v)
{
    return isfinite(v) ? wt_batch_add(b, metric, labels, t, v) : 0;
}

int wt_kpi_export_batch(struct wt_store *st, const struct wt_topology *t, int64_t now_ns,
                        struct wt_batch *b)
{
    return wt_kpi_export_batch_models(st, t, now_ns, NULL, 0, NULL, b);
}

int wt_kpi_export_batch_models(struct wt_store *st, const struct wt_topology *t, int64_t now_ns,
                               const struct wt_calib_model *m, size_t nm, struct wt_recon_drift *d,
                               struct wt_batch *b)
{
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    char lb[WT_LABELS_LEN];
    int64_t to = now_ns - t->export_lag_ns;
    int rc = wt_kpi_compute(st, t, to - t->kpi_window_ns, to, NULL, &r, &err);
    if (rc)
        return rc;
    const struct wt_kpi_row *row = wt_kpi_row(&r, "pue");
    if (row && row->available && row->measured)
        rc = add(b, WT_M_KPI_PUE, "", now_ns, row->value);
    for (size_t i = 0; i < r.nzones && rc == 0; i++) {
        if (!r.zones[i].available || !r.zones[i].measured ||
            wt_labels(lb, sizeof lb, "zone", r.zones[i].zone, NULL) != 0)
            continue;
        rc = add(b, WT_M_KPI_PUE, lb, now_ns, r.zones[i].pue);
    }
    static const struct {
        const char *key;
        int metric;
    } simple[] = {
        {"wue", WT_M_KPI_WUE}, {"erf", WT_M_KPI_ERF}, {"accelerator_share", WT_M_KPI_ACCEL_SHARE}};
    for (size_t i = 0; i < sizeof simple / sizeof simple[0] && rc == 0; i++) {
        row = wt_kpi_row(&r, simple[i].key);
        if (row && row->available && row->measured)
            rc = add(b, simple[i].metric, "", now_ns, row->value);
    }
    for (size_t i = 0; i < r.nracks && rc == 0; i++) {
        if (r.racks[i].has_inlet && r.racks[i].has_exhaust &&
            wt_labels(lb, sizeof lb, "rack", r.racks[i].rack, NULL) == 0)
            rc = add(b, WT_M_RACK_DELTA_T, lb, now_ns, r.racks[i].delta_t_k);
    }
    for (size_t i = 0; i < r.nnodes && rc == 0; i++) {
        const struct wt_recon_node *x = &r.nodes[i];
        if (x->wall_j <= 0 || wt_labels(lb, sizeof lb, "node", x->node, NULL) != 0)
            continue;
        /* wall - chips over unequal spans is no figure (a new daemon's first kpi_window) */
        if (wt_recon_complete(x))
            rc = add(b, WT_M_NODE_UNACCOUNTED_W, lb, now_ns, x->unaccounted_w);
        if (rc == 0 && wt_recon_complete(x))
            rc = add(b, WT_M_NODE_UNACCOUNTED_RATIO, lb, now_ns, x->share);
        static const char *const reasons[] = {"chips_exceed_wall", "share_drift"};
        for (int k = 0; k < 2 && rc == 0; k++) {
            char l2[WT_LABELS_LEN];
            if (wt_labels(l2, sizeof l2, "node", x->node, "reason", reasons[k], NULL) != 0)
                continue;
            bool on = k == 0 ? x->chips_exceed_wall : x->share_drift;
            rc = add(b, WT_M_NODE_RECON_SUSPECT, l2, now_ns, on ? 1 : 0);
        }
    }
    if (rc == 0 && d && nm)
        rc = wt_recon_export_models(r.nodes, r.nnodes, m, nm, (double)t->kpi_window_ns / 1e9, d,
                                    now_ns, b);
    wt_kpi_report_free(&r);
    return rc;
}

struct wt_kpi_exporter {
    struct wt_store *st;
    struct wt_topology *t;
    struct wt_hub *hub;
    int slot;
    pthread_t th;
    bool started, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* the nodes' calibration models (wattage calibrate), read again when the file changes */
    char model_path[WT_PATH_LEN + 32];
    struct wt_calib_model *models;
    size_t nmodels;
    int64_t model_mtime_ns;
    bool model_failed;
    struct wt_recon_drift drift;
};

/* Reads the model file again when it changed (a calibration since); a bad file is said once. */
static void models_refresh(struct wt_kpi_exporter *e)
{
    struct stat sb;
    if (!e->model_path[0] || !e->models)
        return;
    if (stat(e->model_path, &sb) != 0) {
        e->nmodels = 0;
        e->model_mtime_ns = 0;
        return;
    }
    int64_t mt = (int64_t)sb.st_mtim.tv_sec * WT_NS_PER_S + sb.st_mtim.tv_nsec;
    if (mt == e->model_mtime_ns)
        return;
    struct wt_err err = {{0}};
    size_t n = 0;
    if (wt_calib_load(e->model_path, e->models, WT_CALIB_MAX_MODELS, &n, &err) != 0) {
        if (!e->model_failed)
            wt_warn("kpi", "calibration models not used: %s", err.msg);
        e->model_failed = true;
        e->nmodels = 0;
    } else {
        if (n)
            wt_info("kpi", "calibration models: %zu from %s", n, e->model_path);
        e->model_failed = false;
        e->nmodels = n;
    }
    e->model_mtime_ns = mt;
}

static void *exporter_main(void *arg)
{
    struct wt_kpi_exporter *e = arg;
    struct wt_batch b = {0};
    int fails = 0;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        pthread_mutex_unlock(&e->mu);
        int64_t m0 = wt_now_mono_ns();
        wt_batch_clear(&b);
        models_refresh(e);
        int rc = wt_kpi_export_batch_models(e->st, e->t, wt_now_real_ns(), e->models, e->nmodels,
                                            &e->drift, &b);
        int64_t m1 = wt_now_mono_ns();
        if (rc != 0 && fails++ % 20 == 0)
            wt_warn("kpi", "computing the KPI gauges failed: %s (failures=%d)", strerror(-rc),
                    fails);
        if (rc == 0 && fails) {
            wt_info("kpi", "KPI gauges computed again after %d failures", fails);
            fails = 0;
        }
        wt_hub_publish(e->hub, e->slot, &b, rc == 0, (double)(m1 - m0) / 1e9, m1);
        int64_t until = m0 + e->t->kpi_interval_ns;
        struct timespec ts = {.tv_sec = until / WT_NS_PER_S, .tv_nsec = until % WT_NS_PER_S};
        pthread_mutex_lock(&e->mu);
        while (!e->stop && wt_now_mono_ns() < until)
            pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    pthread_mutex_unlock(&e->mu);
    wt_batch_free(&b);
    return NULL;
}

/* Whether this node has an hwmon "wall" sensor (an ACPI power meter) that collectors.hwmon
 * reads: with it, a node without any meter in its topology still reconciles (one scan and poll
 * of the hwmon tree, at start and reload). */
static bool hwmon_wall_here(const struct wt_config *cfg)
{
    void *st = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    bool yes = false;
    if (!cfg->collectors.hwmon.enabled || wt_hwmon_collector.open(cfg, &st, &err) != 0)
        return false;
    if (wt_hwmon_collector.poll(st, wt_now_real_ns(), &b, &err) == 0)
        for (size_t i = 0; i < b.len && !yes; i++) {
            char role[16];
            yes = b.r[i].metric == WT_M_HWMON_ENERGY_J &&
                  wt_labels_get(b.r[i].labels, "role", role, sizeof role) == 0 &&
                  strcmp(role, "wall") == 0;
        }
    wt_batch_free(&b);
    wt_hwmon_collector.close(st);
    return yes;
}

int wt_kpi_exporter_open(const struct wt_config *cfg, struct wt_hub *hub,
                         struct wt_kpi_exporter **out, struct wt_err *err)
{
    struct wt_kpi_exporter *e = calloc(1, sizeof *e);
    int rc;
    *out = NULL;
    if (!e)
        return -ENOMEM;
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cv, &ca);
    pthread_condattr_destroy(&ca);
    e->hub = hub;
    if ((rc = wt_topology_load(cfg, &e->t, err)) != 0)
        goto fail;
    e->drift.sustain_ns = e->t->kpi_window_ns;
    e->models = calloc(WT_CALIB_MAX_MODELS, sizeof *e->models);
    if (!e->models || wt_calib_model_path(cfg, e->model_path, sizeof e->model_path) != 0)
        e->model_path[0] = 0;
    if (e->t->nmeters == 0 && !hwmon_wall_here(cfg)) {
        wt_kpi_exporter_close(e);
        return 0;
    }
    struct wt_store_opts o = {.create = false};
    if ((rc = wt_store_open(cfg->store.path, &o, &e->st, err)) != 0)
        goto fail;
    e->slot = wt_hub_add_collector(hub, "kpi", e->t->kpi_interval_ns);
    if (e->slot < 0) {
        rc = wt_err_set(err, "kpi: no hub slot left");
        goto fail;
    }
    wt_hub_set_state(hub, e->slot, true, e->t->kpi_interval_ns);
    if ((rc = pthread_create(&e->th, NULL, exporter_main, e)) != 0) {
        rc = -rc;
        wt_err_set(err, "kpi: cannot start its thread: %s", strerror(-rc));
        goto fail;
    }
    e->started = true;
    wt_info("kpi", "exporting KPI gauges meters=%zu window_s=%.0f interval_s=%.0f", e->t->nmeters,
            (double)e->t->kpi_window_ns / 1e9, (double)e->t->kpi_interval_ns / 1e9);
    *out = e;
    return 0;
fail:
    wt_kpi_exporter_close(e);
    return rc;
}

void wt_kpi_exporter_close(struct wt_kpi_exporter *e)
{
    if (!e)
        return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->stop = true;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->th, NULL);
        /* its gauges leave /metrics (a reload may start another exporter in the slot) */
        wt_hub_set_state(e->hub, e->slot, false, e->t->kpi_interval_ns);
    }
    wt_store_close(e->st);
    free(e->t);
    free(e->models);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
