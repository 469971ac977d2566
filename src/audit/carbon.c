/* SPDX-License-Identifier: MIT */
/*
 * The carbon layer's core (see carbon.h): the series table in the store, the step function with
 * its hole rule, time-matched emissions, CUE and the CUE row of `wattage kpi`. Parsing lives in
 * carbon_parse.c, the configuration in carbon_conf.c, the daemon's fetch thread in carbon_fetch.c.
 */
#include "audit/carbon.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "audit/carbon_parse.h"
#include "audit/kpi.h"
#include "core/clock.h"
#include "core/log.h"
#include "store/query.h"
#include "store/store.h"

#define HOUR_NS (3600LL * WT_NS_PER_S)

static const char *const src_names[] = {"actual", "forecast", "filled", "static", "none"};

const char *wt_carbon_src_name(enum wt_carbon_src s)
{
    return s < WT_CSRC_COUNT ? src_names[s] : "?";
}

/* ---- the table ---- */

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS carbon_points(series TEXT NOT NULL, zone TEXT NOT NULL,"
    " kind INTEGER NOT NULL, from_ns INTEGER NOT NULL, to_ns INTEGER NOT NULL,"
    " value REAL NOT NULL, source TEXT NOT NULL, stored_ns INTEGER NOT NULL,"
    " PRIMARY KEY(series, zone, kind, from_ns)) WITHOUT ROWID;";

int wt_carbon_tables(sqlite3 *db)
{
    char *msg = NULL;
    if (sqlite3_exec(db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        wt_warn("carbon", "cannot create the carbon table: %s", msg ? msg : "?");
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

int wt_carbon_store(sqlite3 *db, enum wt_carbon_series series, const struct wt_carbon_batch *b,
                    const char *source, int64_t now_ns, struct wt_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = 0;
    if (wt_carbon_tables(db) != 0)
        return wt_err_set(err, "cannot create the carbon table: %s", sqlite3_errmsg(db)), -EIO;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        wt_err_set(err, "cannot begin a transaction: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO carbon_points(series, zone, kind, from_ns, "
                           "to_ns, value, source, stored_ns) VALUES(?,?,?,?,?,?,?,?)",
                           -1, &s, NULL) != SQLITE_OK) {
        rc = -EIO;
        goto done;
    }
    for (size_t i = 0; i < b->n && !rc; i++) {
        const struct wt_carbon_point *p = &b->p[i];
        sqlite3_bind_text(s, 1, wt_carbon_series_name(series), -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, p->zone, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 3, p->kind);
        sqlite3_bind_int64(s, 4, p->from_ns);
        sqlite3_bind_int64(s, 5, p->to_ns);
        sqlite3_bind_double(s, 6, p->value);
        sqlite3_bind_text(s, 7, source, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 8, now_ns);
        if (sqlite3_step(s) != SQLITE_DONE)
            rc = -EIO;
        sqlite3_reset(s);
    }
done:
    if (rc)
        wt_err_set(err, "cannot store the carbon series: %s; nothing stored", sqlite3_errmsg(db));
    sqlite3_finalize(s);
    if (sqlite3_exec(db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK && !rc) {
        wt_err_set(err, "cannot commit: %s", sqlite3_errmsg(db));
        (void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        rc = -EIO;
    }
    return rc;
}

int wt_carbon_load_file(sqlite3 *db, const char *path, enum wt_carbon_format fmt,
                        enum wt_carbon_series series, const char *zone, FILE *report,
                        size_t *stored, struct wt_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    struct wt_carbon_batch b = {0};
    int rc = wt_carbon_read_file(path, &buf, &len, err);
    *stored = 0;
    if (rc)
        return rc;
    rc = wt_carbon_parse(path, buf, len, fmt, series, zone, report, &b, err);
    free(buf);
    if (rc)
        return rc;
    rc = wt_carbon_store(db, series, &b, path, wt_now_real_ns(), err);
    if (rc == 0)
        *stored = b.n;
    wt_carbon_batch_free(&b);
    return rc;
}

/* ---- the step function ---- */

struct steps {
    struct wt_carbon_step *s;
    size_t n, cap;
};

static int push(struct steps *st, int64_t a, int64_t b, double v, enum wt_carbon_src src)
{
    if (b <= a)
        return 0;
    if (st->n && st->s[st->n - 1].to_ns == a && st->s[st->n - 1].value == v &&
        st->s[st->n - 1].src == src) {
        st->s[st->n - 1].to_ns = b;
        return 0;
    }
    if (st->n == st->cap) {
        size_t nc = st->cap ? 2 * st->cap : 32;
        struct wt_carbon_step *ns = realloc(st->s, nc * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        st->s = ns;
        st->cap = nc;
    }
    st->s[st->n++] = (struct wt_carbon_step){a, b, v, src};
    return 0;
}

static int steps_of(const struct wt_carbon_point *p, size_t n, const struct wt_carbon_conf *cf,
                    bool forecast_first, int64_t a, int64_t b, struct wt_carbon_step **out,
                    size_t *nout);

/* Index of the last point of p[0..n) (sorted by from) starting at or before t, or -1. */
static ptrdiff_t last_at(const struct wt_carbon_point *p, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].from_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static int fill_hole(struct steps *st, const struct wt_carbon_point *all, size_t n,
                     const struct wt_carbon_conf *cf, int64_t h0, int64_t h1)
{
    const struct wt_carbon_point *prev = NULL, *next = NULL;
    int64_t max_hole = cf ? cf->max_hole_ns : 6 * HOUR_NS;
    int rc;
    for (size_t i = 0; i < n; i++) {
        const struct wt_carbon_point *p = &all[i];
        if (p->to_ns <= h0 &&
            (!prev || p->to_ns > prev->to_ns || (p->to_ns == prev->to_ns && p->kind < prev->kind)))
            prev = p;
        if (p->from_ns >= h1 && (!next || p->from_ns < next->from_ns ||
                                 (p->from_ns == next->from_ns && p->kind < next->kind)))
            next = p;
    }
    if (prev) {
        int64_t e = prev->to_ns + max_hole < h1 ? prev->to_ns + max_hole : h1;
        if (e > h0) {
            if ((rc = push(st, h0, e, prev->value, WT_CSRC_FILLED)) != 0)
                return rc;
            h0 = e;
        }
    }
    int64_t ns = h1;
    if (next && next->from_ns - max_hole < h1)
        ns = next->from_ns - max_hole > h0 ? next->from_ns - max_hole : h0;
    if (ns > h0) {
        if (cf && cf->has_static)
            rc = push(st, h0, ns, cf->static_g, WT_CSRC_STATIC);
        else if (prev || next)
            rc = push(st, h0, ns, prev ? prev->value : next->value, WT_CSRC_FILLED);
        else
            rc = push(st, h0, ns, 0, WT_CSRC_NONE);
        if (rc)
            return rc;
    }
    if (next && ns < h1)
        return push(st, ns, h1, next->value, WT_CSRC_FILLED);
    return 0;
}

int wt_carbon_steps_of(const struct wt_carbon_point *p, size_t n, const struct wt_carbon_conf *cf,
                       int64_t a, int64_t b, struct wt_carbon_step **out, size_t *nout)
{
    return steps_of(p, n, cf, false, a, b, out, nout);
}

static int steps_of(const struct wt_carbon_point *p, size_t n, const struct wt_carbon_conf *cf,
                    bool forecast_first, int64_t a, int64_t b, struct wt_carbon_step **out,
                    size_t *nout)
{
    struct steps st = {0};
    struct wt_carbon_point *A = NULL, *F = NULL;
    size_t na = 0, nf = 0;
    int rc = 0;
    *out = NULL;
    *nout = 0;
    if (a >= b)
        return 0;
    A = malloc((n + 1) * sizeof *A);
    F = malloc((n + 1) * sizeof *F);
    if (!A || !F) {
        rc = -ENOMEM;
        goto done;
    }
    /* A: the kind that wins (actuals), F: the other; swapped for a forecast-first view. */
    enum wt_carbon_src sa = WT_CSRC_ACTUAL, sf = WT_CSRC_FORECAST;
    if (forecast_first) {
        sa = WT_CSRC_FORECAST;
        sf = WT_CSRC_ACTUAL;
    }
    for (size_t i = 0; i < n; i++) {
        if ((p[i].kind == WT_CK_ACTUAL) != forecast_first)
            A[na++] = p[i];
        else
            F[nf++] = p[i];
    }
    for (int64_t t = a; t < b && !rc;) {
        ptrdiff_t ia = last_at(A, na, t), jf = last_at(F, nf, t);
        int64_t next_a = (size_t)(ia + 1) < na ? A[ia + 1].from_ns : INT64_MAX;
        int64_t next_f = (size_t)(jf + 1) < nf ? F[jf + 1].from_ns : INT64_MAX;
        int64_t e = b;
        if (ia >= 0 && A[ia].to_ns > t) {
            e = A[ia].to_ns < e ? A[ia].to_ns : e;
            e = next_a < e ? next_a : e;
            rc = push(&st, t, e, A[ia].value, sa);
        } else if (jf >= 0 && F[jf].to_ns > t) {
            e = F[jf].to_ns < e ? F[jf].to_ns : e;
            e = next_a < e ? next_a : e;
            e = next_f < e ? next_f : e;
            rc = push(&st, t, e, F[jf].value, sf);
        } else {
            e = next_a < e ? next_a : e;
            e = next_f < e ? next_f : e;
            rc = fill_hole(&st, p, n, cf, t, e);
        }
        t = e;
    }
done:
    free(A);
    free(F);
    if (rc) {
        free(st.s);
        return rc;
    }
    *out = st.s;
    *nout = st.n;
    return 0;
}

/* Points of a zone's series overlapping [a, b], plus the nearest one on each side. */
static int load_points(sqlite3 *db, enum wt_carbon_series series, const char *zone, int64_t a,
                       int64_t b, struct wt_carbon_batch *out)
{
    static const char *const sql[] = {
        "SELECT from_ns, to_ns, value, kind FROM carbon_points WHERE series=?1 AND zone=?2 AND "
        "to_ns > ?3 AND from_ns < ?4 ORDER BY from_ns, kind",
        "SELECT from_ns, to_ns, value, kind FROM carbon_points WHERE series=?1 AND zone=?2 AND "
        "to_ns <= ?3 ORDER BY to_ns DESC, kind LIMIT 1",
        "SELECT from_ns, to_ns, value, kind FROM carbon_points WHERE series=?1 AND zone=?2 AND "
        "from_ns >= ?4 ORDER BY from_ns, kind LIMIT 1",
    };
    memset(out, 0, sizeof *out);
    for (size_t q = 0; q < 3; q++) {
        sqlite3_stmt *s = NULL;
        int step, rc = 0;
        int prep = sqlite3_prepare_v2(db, sql[q], -1, &s, NULL);
        if (prep != SQLITE_OK) {
            /* No table yet: nothing was ever loaded. */
            if (strstr(sqlite3_errmsg(db), "no such table"))
                return 0;
            wt_carbon_batch_free(out);
            return -EIO;
        }
        sqlite3_bind_text(s, 1, wt_carbon_series_name(series), -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, zone, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, a);
        sqlite3_bind_int64(s, 4, b);
        while ((step = sqlite3_step(s)) == SQLITE_ROW && !rc) {
            rc = wt_carbon_batch_add(out, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                                     sqlite3_column_double(s, 2),
                                     (enum wt_carbon_kind)sqlite3_column_int(s, 3), zone);
        }
        if (!rc && step != SQLITE_DONE && step != SQLITE_ROW)
            rc = -EIO;
        sqlite3_finalize(s);
        if (rc) {
            wt_carbon_batch_free(out);
            return rc == -E2BIG ? -ENOMEM : rc;
        }
    }
    /* Sorted by from (the side points are outside the window). */
    for (size_t i = 1; i < out->n; i++) {
        struct wt_carbon_point x = out->p[i];
        size_t k = i;
        while (k > 0 && out->p[k - 1].from_ns > x.from_ns) {
            out->p[k] = out->p[k - 1];
            k--;
        }
        out->p[k] = x;
    }
    return 0;
}

int wt_carbon_steps(sqlite3 *db, const struct wt_carbon_conf *cf, enum wt_carbon_series series,
                    const char *zone, int64_t a, int64_t b, struct wt_carbon_step **steps,
                    size_t *n)
{
    return wt_carbon_steps_ex(db, cf, series, zone, false, a, b, steps, n);
}

int wt_carbon_steps_ex(sqlite3 *db, const struct wt_carbon_conf *cf, enum wt_carbon_series series,
                       const char *zone, bool forecast_first, int64_t a, int64_t b,
                       struct wt_carbon_step **steps, size_t *n)
{
    struct wt_carbon_batch pts;
    *steps = NULL;
    *n = 0;
    if (a >= b)
        return 0;
    int rc = load_points(db, series, zone ? zone : "", a, b, &pts);
    if (rc)
        return rc;
    rc = steps_of(pts.p, pts.n, series == WT_CS_INTENSITY ? cf : NULL, forecast_first, a, b, steps,
                  n);
    wt_carbon_batch_free(&pts);
    return rc;
}

/* ---- emissions ---- */

static bool cpu_in_total(const char *labels)
{
    char d[32];
    if (wt_labels_get(labels, "domain", d, sizeof d) != 0)
        return true;
    return strcmp(d, "core") != 0 && strcmp(d, "uncore") != 0 && strcmp(d, "psys") != 0;
}

/* The IT energy (GPUs + CPU packages/DRAM) of [a, b]: this node's, or every node's in st. */
static int it_energy(struct wt_store *st, int64_t a, int64_t b, bool every_node, double *joules)
{
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    *joules = 0;
    if (b <= a)
        return 0;
    if (wt_store_energy(st, a, b, 0, &rows, &n, &err) != 0)
        return -EIO;
    for (size_t i = 0; i < n; i++) {
        const struct wt_energy_row *r = &rows[i];
        if (!r->chosen || (r->s.node[0] && !every_node))
            continue;
        if (wt_metric_is_gpu_energy(r->s.metric) ||
            (strcmp(r->s.metric, "wattage_cpu_energy_joules_total") == 0 &&
             cpu_in_total(r->s.labels)))
            *joules += r->energy_j;
    }
    free(rows);
    return 0;
}

int wt_carbon_site_energy(struct wt_store *st, int64_t a, int64_t b, double *joules)
{
    return it_energy(st, a, b, false, joules);
}

void wt_carbon_pue(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t a, int64_t b,
                   double *pue, bool *measured)
{
    double m = 0;
    bool meas = false;
    struct wt_err err = {{0}};
    *pue = cf->pue_assumed;
    *measured = false;
    /* The facility layer's answer: measured, or facility.pue_assumed when that is set, so one
     * assumed PUE serves every figure; carbon.pue_assumed only when it has neither. */
    if (st && cf->cfg && b > a && wt_kpi_pue(st, cf->cfg, a, b, &m, &meas, &err) == 0 &&
        isfinite(m) && m >= 1.0) {
        *pue = m;
        *measured = meas;
    }
}

/* kWh of renewable supply over [a, b]: each point's value spread evenly over its period. */
static double supply_kwh(const struct wt_carbon_batch *r, int64_t a, int64_t b)
{
    double s = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct wt_carbon_point *p = &r->p[i];
        int64_t lo = p->from_ns > a ? p->from_ns : a, hi = p->to_ns < b ? p->to_ns : b;
        if (hi > lo && p->kind == WT_CK_ACTUAL)
            s += p->value * (double)(hi - lo) / (double)(p->to_ns - p->from_ns);
    }
    return s;
}

int wt_carbon_emissions(sqlite3 *db, struct wt_store *st, const struct wt_carbon_conf *cf,
                        const char *zone, int64_t a, int64_t b, wt_carbon_energy_fn energy,
                        void *ctx, double pue, bool pue_measured, struct wt_carbon_result *out)
{
    struct wt_carbon_step *s = NULL;
    struct wt_carbon_batch ren = {0};
    size_t n = 0;
    int rc;
    memset(out, 0, sizeof *out);
    snprintf(out->zone, sizeof out->zone, "%s", zone ? zone : "");
    out->pue = pue > 0 ? pue : cf->pue_assumed;
    out->pue_measured = pue > 0 && pue_measured;
    if (b <= a)
        return 0;
    if (zone && *zone)
        rc = wt_carbon_steps(db, cf, WT_CS_INTENSITY, zone, a, b, &s, &n);
    else
        rc = wt_carbon_steps_of(NULL, 0, cf, a, b, &s, &n);
    if (rc)
        return rc;
    if (st && zone && *zone) {
        if ((rc = load_points(db, WT_CS_RENEWABLE, zone, a, b, &ren)) != 0)
            goto done;
        /* Only the points inside the window count; the side ones say a series exists. */
        out->has_market = ren.n > 0;
    }
    out->known = true;
    for (size_t i = 0; i < n; i++) {
        double j = 0;
        if ((rc = energy(ctx, s[i].from_ns, s[i].to_ns, &j)) != 0)
            goto done;
        out->pieces++;
        out->it_j += j;
        out->by_src_j[s[i].src] += j;
        if (s[i].src == WT_CSRC_NONE) {
            out->known = false; /* no series and no static value */
            continue;
        }
        double g = j / 3.6e6 * out->pue * s[i].value;
        out->g += g;
        if (out->has_market) {
            double site = 0, cover = 0;
            if ((rc = wt_carbon_site_energy(st, s[i].from_ns, s[i].to_ns, &site)) != 0)
                goto done;
            double site_kwh = site / 3.6e6 * out->pue;
            double sup = supply_kwh(&ren, s[i].from_ns, s[i].to_ns);
            if (site_kwh > 0)
                cover = sup >= site_kwh ? 1.0 : sup / site_kwh;
            out->g_market += g * (1.0 - cover);
        }
    }
    out->facility_j = out->it_j * out->pue;
done:
    free(s);
    wt_carbon_batch_free(&ren);
    return rc;
}

static int site_energy_fn(void *ctx, int64_t a, int64_t b, double *joules)
{
    return wt_carbon_site_energy(ctx, a, b, joules);
}

int wt_carbon_cue(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t a, int64_t b,
                  struct wt_carbon_cue *out)
{
    double pue;
    bool measured;
    memset(out, 0, sizeof *out);
    out->cue = NAN;
    wt_carbon_pue(st, cf, a, b, &pue, &measured);
    if (wt_carbon_tables(wt_store_db(st)) != 0)
        return -EIO;
    int rc = wt_carbon_emissions(wt_store_db(st), st, cf, cf->zone, a, b, site_energy_fn, st, pue,
                                 measured, &out->r);
    if (rc)
        return rc;
    if (out->r.known && out->r.it_j > 0)
        out->cue = (out->r.g / 1000.0) / (out->r.it_j / 3.6e6);
    return 0;
}

/* The CUE's weights: the IT energy of every node the store holds, imported and remote ones too. */
static int all_nodes_energy_fn(void *ctx, int64_t a, int64_t b, double *joules)
{
    return it_energy(ctx, a, b, true, joules);
}

static int time_energy_fn(void *ctx, int64_t a, int64_t b, double *joules)
{
    (void)ctx;
    *joules = (double)(b - a) / 1e9; /* 1 W: weights by time */
    return 0;
}

int wt_carbon_kpi_row(struct wt_store *st, const struct wt_config *cfg, struct wt_kpi_report *r)
{
    struct wt_carbon_conf *cf = malloc(sizeof *cf);
    struct wt_carbon_result res;
    struct wt_err err = {{0}};
    int rc;
    struct wt_kpi_row *row = wt_kpi_add_row(r, "cue", "CUE (kgCO2e/kWh)", "kgCO2e/kWh");
    if (!row) {
        free(cf);
        return -ENOSPC;
    }
    if (!cf) {
        snprintf(row->why, sizeof row->why, "out of memory");
        return -ENOMEM;
    }
    if ((rc = wt_carbon_conf_from(cfg, cf, &err)) != 0) {
        snprintf(row->why, sizeof row->why, "%.120s", err.msg);
        free(cf);
        return rc;
    }
    const struct wt_kpi_row *pr = wt_kpi_row(r, "pue");
    double pue = cf->pue_assumed;
    bool pue_measured = false;
    if (pr && pr->available) {
        pue = pr->value;
        pue_measured = pr->measured;
    }
    rc = wt_carbon_tables(wt_store_db(st));
    if (rc == 0)
        rc = wt_carbon_emissions(wt_store_db(st), NULL, cf, cf->zone, r->from_ns, r->to_ns,
                                 all_nodes_energy_fn, st, 1.0, false, &res);
    const char *weights = "IT energy (GPU and CPU sensors of every node)";
    if (rc == 0 && res.known && res.it_j <= 0) {
        weights = "time (no IT energy in the window)";
        rc = wt_carbon_emissions(wt_store_db(st), NULL, cf, cf->zone, r->from_ns, r->to_ns,
                                 time_energy_fn, NULL, 1.0, false, &res);
    }
    if (rc) {
        snprintf(row->why, sizeof row->why, "cannot read the carbon series or energy");
    } else if (!res.known || res.it_j <= 0) {
        snprintf(row->why, sizeof row->why,
                 "no carbon-intensity series for zone \"%.24s\" and no "
                 "carbon.static_gco2_per_kwh",
                 cf->zone);
    } else {
        double mean = res.g / (res.it_j / 3.6e6), act = res.by_src_j[WT_CSRC_ACTUAL] / res.it_j;
        bool all_actual = act >= 1 - 1e-9;
        row->available = true;
        row->value = pue * mean / 1000.0;
        row->measured = pue_measured && all_actual;
        if (pr && pr->available)
            wt_kpi_row_input(row, "pue", pue_measured, "the PUE row: %.4g", pue);
        else
            wt_kpi_row_input(row, "pue", false, "carbon.pue_assumed = %g", pue);
        if (res.by_src_j[WT_CSRC_STATIC] >= res.it_j * (1 - 1e-9))
            wt_kpi_row_input(row, "carbon_intensity", false,
                             "carbon.static_gco2_per_kwh = %g g/kWh", cf->static_g);
        else
            wt_kpi_row_input(row, "carbon_intensity", all_actual,
                             "zone %s: mean %.1f g/kWh; %.0f%% actual, %.0f%% forecast, %.0f%% "
                             "filled/static",
                             cf->zone, mean, 100 * act,
                             100 * res.by_src_j[WT_CSRC_FORECAST] / res.it_j,
                             100 * (1 - act - res.by_src_j[WT_CSRC_FORECAST] / res.it_j));
        wt_kpi_row_input(row, "weights", true, "%s", weights);
    }
    free(cf);
    return rc;
}

cJSON *wt_carbon_result_json(const struct wt_carbon_result *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "zone", r->zone);
    cJSON_AddBoolToObject(o, "known", r->known);
    if (r->known) {
        cJSON_AddNumberToObject(o, "gco2e", r->g);
        cJSON_AddNumberToObject(o, "kgco2e", r->g / 1000.0);
        cJSON_AddNumberToObject(o, "intensity_mean_g_per_kwh",
                                r->facility_j > 0 ? r->g / (r->facility_j / 3.6e6) : 0);
    } else {
        cJSON_AddNullToObject(o, "gco2e");
    }
    if (r->has_market)
        cJSON_AddNumberToObject(o, "gco2e_market", r->g_market);
    cJSON_AddNumberToObject(o, "it_energy_kwh", r->it_j / 3.6e6);
    cJSON_AddNumberToObject(o, "facility_energy_kwh", r->facility_j / 3.6e6);
    cJSON_AddNumberToObject(o, "pue", r->pue);
    cJSON_AddStringToObject(o, "pue_source", r->pue_measured ? "measured" : "assumed");
    /* What the intensity was: measured when all the energy met actual values. */
    const char *isrc = "none";
    double tot = r->it_j, act = r->by_src_j[WT_CSRC_ACTUAL];
    if (tot > 0 && act >= tot * (1 - 1e-9))
        isrc = "measured";
    else if (tot > 0 && r->by_src_j[WT_CSRC_STATIC] >= tot * (1 - 1e-9))
        isrc = "assumed";
    else if (tot > 0)
        isrc = act > 0 ? "mixed" : r->by_src_j[WT_CSRC_FORECAST] > 0 ? "forecast" : "filled";
    cJSON_AddStringToObject(o, "intensity_source", isrc);
    cJSON *by = cJSON_AddObjectToObject(o, "energy_kwh_by_source");
    for (int i = 0; by && i < WT_CSRC_COUNT; i++) {
        if (r->by_src_j[i] != 0)
            cJSON_AddNumberToObject(by, wt_carbon_src_name((enum wt_carbon_src)i),
                                    r->by_src_j[i] / 3.6e6);
    }
    return o;
}
