/* SPDX-License-Identifier: MIT */
/*
 * KPI statements of ISO/IEC 30134 (see statement.h): the meters' energy through meters.c's
 * rules, their 15-minute slot coverage from their stored readings, the boundary and category
 * from their roles, the checks, and a SHA-256 of every input reading and hand input.
 */
#include "audit/statement.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/carbon.h"
#include "audit/meters.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "store/query.h"
#include "store/segment.h"
#include "store/store.h"

#define J_PER_KWH 3.6e6

/* ---- the config section ---- */

static const char *const stmt_keys[] = {"site",
                                        "installed_it_kw",
                                        "floor_area_m2",
                                        "white_space_m2",
                                        "commissioned",
                                        "redundancy_electrical",
                                        "redundancy_cooling",
                                        "min_coverage",
                                        "renewables",
                                        "tenants",
                                        "residual_mix_g_per_kwh",
                                        "residual_mix_source",
                                        "residual_mix_year",
                                        "fuel_factors",
                                        "market",
                                        NULL};

/* kWh per litre (diesel, bioethanol), per m3 (natural gas), per kg (hydrogen): the EN 50600-4
 * factsheet's conversion (the notes' source marking [Q]). */
static const double fuel_kwh_default[WT_FUEL_COUNT] = {0, 9.9, 10.5, 38.9, 6.0};

const char *wt_stmt_fuel_unit(enum wt_fuel f)
{
    return f == WT_FUEL_HYDROGEN ? "kg" : f == WT_FUEL_NATURAL_GAS ? "m3" : "l";
}

double wt_fuel_energy_j(const double *kwh_per, enum wt_fuel f, double q)
{
    if ((int)f <= 0 || f >= WT_FUEL_COUNT)
        return 0;
    if (!kwh_per)
        kwh_per = fuel_kwh_default;
    /* the counter holds m3 (kg for hydrogen); a factor per litre is 1000 per m3 */
    double per = strcmp(wt_stmt_fuel_unit(f), "l") == 0 ? 1000 : 1;
    return q * per * kwh_per[f] * J_PER_KWH;
}

double wt_stmt_fuel_j(const struct wt_stmt_conf *c, enum wt_fuel f, double q)
{
    return wt_fuel_energy_j(c->fuel_kwh, f, q);
}

/* "YYYY" or "YYYY-MM" into x's vintage and its [from, to) in UTC. 0 or -EINVAL. */
static int vintage_parse(const char *v, struct wt_stmt_renewable *x)
{
    int y = 0, m = 0, used = 0;
    size_t len = strlen(v);
    if (len == 4 && sscanf(v, "%4d%n", &y, &used) == 1 && used == 4)
        m = 0;
    else if (len == 7 && sscanf(v, "%4d-%2d%n", &y, &m, &used) == 2 && used == 7 && m >= 1 &&
             m <= 12)
        ;
    else
        return -EINVAL;
    if (y < 1990 || y > 9999)
        return -EINVAL;
    struct tm a = {.tm_year = y - 1900, .tm_mon = m ? m - 1 : 0, .tm_mday = 1};
    struct tm b = a;
    if (m)
        b.tm_mon++;
    else
        b.tm_year++;
    x->vintage_from_ns = (int64_t)timegm(&a) * WT_NS_PER_S;
    x->vintage_to_ns = (int64_t)timegm(&b) * WT_NS_PER_S;
    snprintf(x->vintage, sizeof x->vintage, "%s", v);
    return 0;
}

/* Appends "; "-separated text to buf[0..n). */
static void add_reason(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_reason(char *buf, size_t n, const char *fmt, ...)
{
    size_t l = strlen(buf);
    if (l && l + 2 < n) {
        memcpy(buf + l, "; ", 3);
        l += 2;
    }
    if (l >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + l, n - l, fmt, ap);
    va_end(ap);
}

void wt_stmt_instruments(const struct wt_stmt_conf *c, int64_t from, int64_t to,
                         struct wt_stmt_instrument *out)
{
    for (size_t i = 0; i < c->nren; i++) {
        const struct wt_stmt_renewable *x = &c->ren[i];
        struct wt_stmt_instrument *o = &out[i];
        memset(o, 0, sizeof *o);
        bool ok = true, cue = true;
        if (!x->retired_for[0]) {
            add_reason(o->unchecked, sizeof o->unchecked, "retired_for");
        } else if (!c->site[0]) {
            ok = false;
            add_reason(o->refused, sizeof o->refused,
                       "not_retired_for_site: retired for %s, and statement.site is not given to "
                       "check it",
                       x->retired_for);
        } else if (strcmp(x->retired_for, c->site) != 0) {
            ok = false;
            add_reason(o->refused, sizeof o->refused,
                       "not_retired_for_site: retired for %s, not for this site (statement.site "
                       "%s)",
                       x->retired_for, c->site);
        }
        if (!x->vintage[0]) {
            add_reason(o->unchecked, sizeof o->unchecked, "vintage");
        } else if (x->vintage_to_ns <= from || x->vintage_from_ns >= to) {
            char a[40], b[40];
            wt_time_format(from, 0, a, sizeof a);
            wt_time_format(to, 0, b, sizeof b);
            ok = false;
            add_reason(o->refused, sizeof o->refused,
                       "vintage_outside_period: generated in %s, outside the period %s .. %s",
                       x->vintage, a, b);
        }
        if (!x->market[0]) {
            add_reason(o->unchecked, sizeof o->unchecked, "market");
        } else if (!c->market[0]) {
            cue = false;
            add_reason(o->refused, sizeof o->refused,
                       "market_not_checked: market %s, and statement.market (the site's market "
                       "boundary) is not given: not in market-based CUE",
                       x->market);
        } else if (strcmp(x->market, c->market) != 0) {
            cue = false;
            add_reason(o->refused, sizeof o->refused,
                       "outside_market_boundary: market %s, not the site's %s (statement.market): "
                       "not in market-based CUE (REF counts it: where the source is does not "
                       "change REF)",
                       x->market, c->market);
        }
        o->in_ref = ok;
        o->in_cue = ok && cue;
    }
}

/* statement.tenants: names and outlets, each outlet once. */
static int parse_tenants(const struct wt_yget *g, const struct wt_ynode *n, struct wt_stmt_conf *c)
{
    static const char *const tkeys[] = {"name", "outlets", NULL};
    const struct wt_ynode *ts = wt_y_get(n, "tenants");
    int rc = wt_y_seq(g, ts, "statement.tenants");
    for (size_t i = 0; rc == 0 && ts && !wt_ynode_is_null(ts) && i < ts->n; i++) {
        char p[64], po[96];
        wt_y_index(p, sizeof p, "statement.tenants", i);
        const struct wt_ynode *e = ts->child[i];
        if (c->ntenants == WT_STMT_MAX_TENANTS)
            return wt_y_fail(g, e, p, "at most %d tenants", WT_STMT_MAX_TENANTS);
        if ((rc = wt_y_map(g, e, p, tkeys)) || (rc = wt_y_keys(g, e, p, tkeys)) ||
            (rc = wt_y_string(g, e, p, "name", true, c->tenants[c->ntenants].name,
                              sizeof c->tenants[0].name)))
            return rc;
        for (size_t j = 0; j < c->ntenants; j++)
            if (strcmp(c->tenants[j].name, c->tenants[c->ntenants].name) == 0)
                return wt_y_key_fail(g, e, p, "name", "tenant \"%s\" is listed twice (line %d)",
                                     c->tenants[j].name, c->tenants[j].line);
        c->tenants[c->ntenants].line = e->line;
        const struct wt_ynode *os = wt_y_get(e, "outlets");
        snprintf(po, sizeof po, "%s.outlets", p);
        if (!os || wt_ynode_is_null(os) || os->kind != WT_YNODE_SEQ || os->n == 0)
            return wt_y_key_fail(g, e, p, "outlets",
                                 "expected a list of pdu_outlet meters such as [pdu-a1/outlet3]");
        for (size_t j = 0; j < os->n; j++) {
            const struct wt_ynode *o = os->child[j];
            char pj[128];
            wt_y_index(pj, sizeof pj, po, j);
            if (o->kind != WT_YNODE_SCALAR || !o->value[0] ||
                strlen(o->value) >= sizeof c->outlets[0].name)
                return wt_y_fail(g, o, pj, "expected a pdu_outlet meter's name, target/point");
            if (c->noutlets == WT_TOPO_MAX_METERS)
                return wt_y_fail(g, o, pj, "at most %d outlets", WT_TOPO_MAX_METERS);
            for (size_t k = 0; k < c->noutlets; k++)
                if (strcmp(c->outlets[k].name, o->value) == 0)
                    return wt_y_fail(g, o, pj, "%s is named twice (tenant %s's, line %d)", o->value,
                                     c->tenants[c->outlets[k].tenant].name, c->outlets[k].line);
            struct wt_stmt_outlet *x = &c->outlets[c->noutlets++];
            snprintf(x->name, sizeof x->name, "%s", o->value);
            x->tenant = (int)c->ntenants;
            x->line = o->line;
            x->index = j;
        }
        c->ntenants++;
    }
    return rc;
}

int wt_stmt_conf_parse(const char *file, const struct wt_ynode *n, struct wt_stmt_conf *c,
                       struct wt_err *err)
{
    memset(c, 0, sizeof *c);
    c->installed_it_kw = c->floor_area_m2 = c->white_space_m2 = c->residual_g_per_kwh = -1;
    c->min_coverage = 0.95;
    memcpy(c->fuel_kwh, fuel_kwh_default, sizeof c->fuel_kwh);
    if (!n || wt_ynode_is_null(n))
        return 0;
    struct wt_yget g = {file, err};
    const char *P = "statement";
    char comm[64] = "";
    int rc;
    if ((rc = wt_y_map(&g, n, P, stmt_keys)) || (rc = wt_y_keys(&g, n, P, stmt_keys)) ||
        (rc = wt_y_string(&g, n, P, "site", false, c->site, sizeof c->site)) ||
        (rc = wt_y_double(&g, n, P, "installed_it_kw", 0, 1e7, &c->installed_it_kw)) ||
        (rc = wt_y_double(&g, n, P, "floor_area_m2", 0, 1e8, &c->floor_area_m2)) ||
        (rc = wt_y_double(&g, n, P, "white_space_m2", 0, 1e8, &c->white_space_m2)) ||
        (rc = wt_y_string(&g, n, P, "commissioned", false, comm, sizeof comm)) ||
        (rc = wt_y_string(&g, n, P, "redundancy_electrical", false, c->redundancy_electrical,
                          sizeof c->redundancy_electrical)) ||
        (rc = wt_y_string(&g, n, P, "redundancy_cooling", false, c->redundancy_cooling,
                          sizeof c->redundancy_cooling)) ||
        (rc = wt_y_double(&g, n, P, "min_coverage", 0, 1, &c->min_coverage)) ||
        (rc = wt_y_double(&g, n, P, "residual_mix_g_per_kwh", 0, 5000, &c->residual_g_per_kwh)) ||
        (rc = wt_y_string(&g, n, P, "residual_mix_source", false, c->residual_source,
                          sizeof c->residual_source)) ||
        (rc = wt_y_string(&g, n, P, "market", false, c->market, sizeof c->market)))
        return rc;
    int64_t ry = 0;
    if ((rc = wt_y_int(&g, n, P, "residual_mix_year", 1990, 9999, &ry)))
        return rc;
    c->residual_year = (int)ry;
    if (c->residual_g_per_kwh >= 0 && (!c->residual_source[0] || !c->residual_year))
        return wt_y_key_fail(&g, n, P,
                             c->residual_source[0] ? "residual_mix_year" : "residual_mix_source",
                             "required with residual_mix_g_per_kwh (a factor without its %s is "
                             "not reported)",
                             c->residual_source[0] ? "year" : "source");
    if (c->residual_g_per_kwh < 0 && (c->residual_source[0] || c->residual_year))
        return wt_y_key_fail(&g, n, P, "residual_mix_g_per_kwh",
                             "required with residual_mix_source and residual_mix_year");
    if (comm[0]) {
        int y, m;
        char tail;
        if (strlen(comm) != 7 || sscanf(comm, "%4d-%2d%c", &y, &m, &tail) != 2 || y < 1950 ||
            m < 1 || m > 12)
            return wt_y_key_fail(&g, n, P, "commissioned", "expected YYYY-MM (got \"%s\")", comm);
        memcpy(c->commissioned, comm, 8);
    }
    if (c->floor_area_m2 >= 0 && c->white_space_m2 > c->floor_area_m2)
        return wt_y_key_fail(&g, n, P, "white_space_m2",
                             "%g m2 is more than floor_area_m2 (%g m2): the computer room is "
                             "part of the floor area",
                             c->white_space_m2, c->floor_area_m2);
    const struct wt_ynode *r = wt_y_get(n, "renewables");
    if ((rc = wt_y_seq(&g, r, "statement.renewables")))
        return rc;
    static const char *const rkeys[] = {"type",   "kwh",         "ref",     "g_per_kwh",
                                        "market", "retired_for", "vintage", NULL};
    static const char *const types[] = {"goo", "ppa", NULL};
    for (size_t i = 0; r && !wt_ynode_is_null(r) && i < r->n; i++) {
        char p[64];
        wt_y_index(p, sizeof p, "statement.renewables", i);
        const struct wt_ynode *e = r->child[i];
        if (c->nren == WT_STMT_MAX_RENEWABLES)
            return wt_y_fail(&g, e, p, "at most %d instruments", WT_STMT_MAX_RENEWABLES);
        struct wt_stmt_renewable *x = &c->ren[c->nren];
        int type = -1;
        if ((rc = wt_y_map(&g, e, p, rkeys)) || (rc = wt_y_keys(&g, e, p, rkeys)))
            return rc;
        if (!wt_y_get(e, "type"))
            return wt_y_key_fail(&g, e, p, "type", "required (goo or ppa)");
        if (!wt_y_get(e, "kwh"))
            return wt_y_key_fail(&g, e, p, "kwh", "required (the instrument's kWh)");
        if ((rc = wt_y_enum(&g, e, p, "type", types, &type)) ||
            (rc = wt_y_double(&g, e, p, "kwh", 0, 1e12, &x->kwh)) ||
            (rc = wt_y_double(&g, e, p, "g_per_kwh", 0, 5000, &x->g_per_kwh)) ||
            (rc = wt_y_string(&g, e, p, "ref", false, x->ref, sizeof x->ref)) ||
            (rc = wt_y_string(&g, e, p, "market", false, x->market, sizeof x->market)) ||
            (rc = wt_y_string(&g, e, p, "retired_for", false, x->retired_for,
                              sizeof x->retired_for)))
            return rc;
        char vin[64] = "";
        if ((rc = wt_y_string(&g, e, p, "vintage", false, vin, sizeof vin)))
            return rc;
        if (vin[0] && vintage_parse(vin, x) != 0)
            return wt_y_key_fail(&g, e, p, "vintage",
                                 "expected YYYY or YYYY-MM, the generation period (got \"%s\")",
                                 vin);
        snprintf(x->type, sizeof x->type, "%s", types[type]);
        x->line = e->line;
        c->nren++;
    }
    const struct wt_ynode *ff = wt_y_get(n, "fuel_factors");
    if (ff && !wt_ynode_is_null(ff)) {
        static const char *const fkeys[] = {"diesel", "natural_gas", "hydrogen", "bioethanol",
                                            NULL};
        const char *pf = "statement.fuel_factors";
        if ((rc = wt_y_map(&g, ff, pf, fkeys)) || (rc = wt_y_keys(&g, ff, pf, fkeys)))
            return rc;
        for (int f = 1; f < WT_FUEL_COUNT; f++)
            if ((rc = wt_y_double(&g, ff, pf, fkeys[f - 1], 1e-6, 1e6, &c->fuel_kwh[f])))
                return rc;
    }
    return parse_tenants(&g, n, c);
}

int wt_stmt_conf_from(const struct wt_config *cfg, struct wt_stmt_conf *c, struct wt_err *err)
{
    return wt_stmt_conf_parse(wt_config_file(cfg), wt_config_section(cfg, "statement"), c, err);
}

int wt_stmt_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_stmt_conf *c = malloc(sizeof *c);
    if (!c)
        return -ENOMEM;
    int rc = wt_stmt_conf_parse(file, node, c, err);
    free(c);
    return rc;
}

/* ---- categories and slots ---- */

bool wt_stmt_role_is_it(enum wt_role r)
{
    return r == WT_ROLE_UPS_OUTPUT || r == WT_ROLE_PDU_OUTPUT || r == WT_ROLE_IT_INPUT ||
           r == WT_ROLE_IT_TOTAL;
}

int wt_stmt_category(const struct wt_topology *t, unsigned *roles)
{
    unsigned bits = 0;
    for (size_t i = 0; i < t->nmeters; i++)
        if (wt_stmt_role_is_it(t->meters[i].role))
            bits |= 1u << t->meters[i].role;
    if (roles)
        *roles = bits;
    if (!bits || (bits & (1u << WT_ROLE_IT_TOTAL)))
        return 0;
    return (bits & (1u << WT_ROLE_UPS_OUTPUT)) ? 1 : (bits & (1u << WT_ROLE_PDU_OUTPUT)) ? 2 : 3;
}

void wt_stmt_slots(const int64_t *t_ns, const double *v, const bool *covered, size_t n, int64_t a,
                   int64_t b, unsigned char *mask, size_t nslots, double *long_j)
{
    const int64_t S = WT_STMT_SLOT_NS;
    /* a slot is measured when good spans cover it whole: mark each slot's covered time */
    int64_t *cov = calloc(nslots ? nslots : 1, sizeof *cov);
    *long_j = 0;
    for (size_t i = 1; i < n && cov; i++) {
        int64_t t0 = t_ns[i - 1], t1 = t_ns[i];
        if (t1 <= t0)
            continue;
        bool good = covered[i] && t1 - t0 <= S + S / 2;
        if (covered[i] && !good && v[i] > v[i - 1])
            *long_j += v[i] - v[i - 1];
        if (!good)
            continue;
        int64_t lo = t0 > a ? t0 : a, hi = t1 < b ? t1 : b;
        for (int64_t s = lo; s < hi;) {
            size_t k = (size_t)((s - a) / S);
            int64_t end = a + (int64_t)(k + 1) * S;
            int64_t e = end < hi ? end : hi;
            if (k < nslots)
                cov[k] += e - s;
            s = e;
        }
    }
    for (size_t k = 0; k < nslots; k++) {
        int64_t len = (k + 1 == nslots) ? b - (a + (int64_t)k * S) : S;
        if (!cov || cov[k] < len)
            mask[k] = 0;
    }
    free(cov);
}

/* ---- the statement ---- */

static const char *const metric_names[] = {
    "wattage_facility_energy_joules_total",      "wattage_facility_heat_joules_total",
    "wattage_facility_water_cubic_meters_total", "wattage_facility_power_watts",
    "wattage_facility_fuel_cubic_meters_total",  "wattage_facility_fuel_kilograms_total"};
#define NMETRICS 6

static int meter_metric(const struct wt_meter *m)
{
    enum wt_role r = m->role;
    if (r == WT_ROLE_FUEL)
        return wt_fuel_by_mass(m->fuel) ? 5 : 4;
    if (r == WT_ROLE_WATER || r == WT_ROLE_WATER_POTABLE)
        return 2;
    if (wt_role_is_heat(r))
        return 1;
    return 0;
}

/* Slot coverage and estimated energy of meter m from its series' stored readings; every
 * reading goes into the hash. */
static int meter_slots(struct wt_store *st, const struct wt_meter *m, struct wt_series_info **si,
                       size_t *ns, const struct wt_run_list *runs, int64_t a, int64_t b,
                       gnutls_hash_hd_t h, struct wt_stmt_meter *out, unsigned char *and_into)
{
    size_t nslots = (size_t)((b - a + WT_STMT_SLOT_NS - 1) / WT_STMT_SLOT_NS);
    unsigned char *mask = malloc(nslots ? nslots : 1);
    if (!mask)
        return -ENOMEM;
    memset(mask, 1, nslots);
    int k = meter_metric(m);
    bool any = false;
    int rc = 0;
    /* counters first; a meter with none is read from its power readings */
    for (int pass = 0; pass < 2 && !any && rc == 0; pass++) {
        int mk = pass == 0 ? k : 3;
        if (pass == 1 && k != 0)
            break;
        for (size_t j = 0; j < ns[mk] && rc == 0; j++) {
            const struct wt_series_info *s = &si[mk][j];
            if (!wt_meter_matches(m, s->labels))
                continue;
            struct wt_point *p = NULL;
            size_t n = 0;
            if ((rc = wt_store_points(st, s, a, b, 0, &p, &n)) != 0)
                break;
            any = true;
            int64_t *tt = malloc((n ? n : 1) * sizeof *tt);
            double *vv = malloc((n ? n : 1) * sizeof *vv);
            bool *cv = calloc(n ? n : 1, sizeof *cv);
            if (!tt || !vv || !cv) {
                free(tt), free(vv), free(cv), free(p);
                rc = -ENOMEM;
                break;
            }
            struct wt_segment_rule rule =
                wt_segment_rule_for(runs, s->node, mk == 3 ? WT_SK_GAUGE : WT_SK_COUNTER);
            for (size_t i = 0; i < n; i++) {
                tt[i] = p[i].t_ns;
                vv[i] = p[i].v;
                if (i > 0 && mk != 3 && p[i].t_ns > p[i - 1].t_ns) {
                    double d;
                    wt_segment(&rule, p[i - 1].t_ns, p[i - 1].v, p[i].t_ns, p[i].v, &d, &cv[i]);
                } else if (i > 0 && mk == 3) {
                    cv[i] = true; /* power: the span rule alone (no resets) */
                }
            }
            double long_j = 0;
            wt_stmt_slots(tt, vv, cv, n, a, b, mask, nslots, &long_j);
            if (mk != 3)
                out->estimated += long_j;
            gnutls_hash(h, s->labels, strlen(s->labels) + 1);
            gnutls_hash(h, p, n * sizeof *p);
            free(tt), free(vv), free(cv), free(p);
        }
    }
    out->slots = nslots;
    out->measured = 0;
    for (size_t i = 0; any && i < nslots; i++)
        out->measured += mask[i];
    for (size_t i = 0; and_into && i < nslots; i++)
        and_into[i] = and_into[i] && any && mask[i];
    free(mask);
    return rc;
}

static void kpi_set(struct wt_stmt_kpi *k, const char *name, const char *symbol,
                    const char *formula, const char *standard, const char *unit)
{
    memset(k, 0, sizeof *k);
    k->name = name;
    k->symbol = symbol;
    k->formula = formula;
    k->standard = standard;
    k->unit = unit;
}

static bool is_year(int64_t from, int64_t to)
{
    time_t f = (time_t)(from / WT_NS_PER_S);
    struct tm a;
    if (from % WT_NS_PER_S || to % WT_NS_PER_S || !gmtime_r(&f, &a))
        return false;
    if (a.tm_mon != 0 || a.tm_mday != 1 || a.tm_hour || a.tm_min || a.tm_sec)
        return false;
    struct tm e = {.tm_year = a.tm_year + 1, .tm_mday = 1};
    return (int64_t)timegm(&e) * WT_NS_PER_S == to;
}

/* The coverage and estimated share of the meters whose roles are in mask. */
static void inputs_of(const struct wt_statement *s, unsigned mask, double *coverage,
                      double *est_share)
{
    double cov = 1, tot = 0, est = 0;
    bool any = false;
    for (size_t i = 0; i < s->nmeters; i++) {
        const struct wt_stmt_meter *m = &s->meters[i];
        if (!(mask & (1u << m->role)))
            continue;
        any = true;
        double c = m->slots ? (double)m->measured / (double)m->slots : 0;
        cov = c < cov ? c : cov;
        tot += fabs(m->value);
        est += m->estimated;
    }
    *coverage = any ? cov : 0;
    *est_share = tot > 0 ? est / tot : 0;
}

#define R(x) (1u << (x))
#define IT_ROLES                                                                                   \
    (R(WT_ROLE_UPS_OUTPUT) | R(WT_ROLE_PDU_OUTPUT) | R(WT_ROLE_IT_INPUT) | R(WT_ROLE_IT_TOTAL))
#define DC_ROLES                                                                                   \
    (R(WT_ROLE_FACILITY_TOTAL) | R(WT_ROLE_ONSITE_GENERATION) | R(WT_ROLE_PURCHASED_COOLING) |     \
     R(WT_ROLE_EXPORTED) | R(WT_ROLE_FUEL))

/* A zone-labelled meter's energy into its zone's sums (statement.h: struct wt_stmt_zone). */
static void zone_add(struct wt_statement *s, const struct wt_meter *m, unsigned bit, double j)
{
    size_t z = 0;
    while (z < s->nzones && strcmp(s->zones[z].zone, m->zone) != 0)
        z++;
    if (z == s->nzones) /* s->zones has a row per meter: a new zone always fits */
        snprintf(s->zones[s->nzones++].zone, sizeof s->zones[0].zone, "%s", m->zone);
    struct wt_stmt_zone *zo = &s->zones[z];
    if (bit & IT_ROLES) {
        zo->e_it_j += j;
        zo->nit++;
    } else if (m->role == WT_ROLE_FACILITY_TOTAL) {
        zo->e_fac_j += j;
        zo->nfac++;
    } else if (m->role == WT_ROLE_COOLING) {
        zo->e_cool_j += j;
        zo->ncool++;
    }
    zo->e_total_j = zo->nfac ? zo->e_fac_j : zo->e_it_j + zo->e_cool_j;
}

static void finish_kpi(struct wt_statement *s, struct wt_stmt_kpi *k, unsigned roles,
                       const struct wt_stmt_conf *c)
{
    inputs_of(s, roles, &k->coverage, &k->estimated_share);
    k->reportable = k->available && k->coverage >= c->min_coverage;
    if (k->available && !k->reportable)
        snprintf(k->why, sizeof k->why,
                 "not reportable: its meters cover %.1f %% of the period's 15-minute intervals, "
                 "below statement.min_coverage (%.1f %%)",
                 100 * k->coverage, 100 * c->min_coverage);
}

/* statement.tenants against t: each outlet a pdu_outlet meter (else -EINVAL naming its line);
 * s->tenants gets a row per tenant and one for the outlets of none, *row_of each meter's row
 * (-1: no outlet, or no tenants at all), *masks a slot mask per row, all measured. */
static int tenants_open(const struct wt_topology *t, const struct wt_stmt_conf *c,
                        struct wt_statement *s, int **row_of, unsigned char **masks,
                        struct wt_err *err)
{
    if (!c->ntenants)
        return 0;
    for (size_t k = 0; k < c->noutlets; k++) {
        const struct wt_stmt_outlet *o = &c->outlets[k];
        size_t i = 0;
        for (; i < t->nmeters; i++) {
            const struct wt_meter *m = &t->meters[i];
            char name[sizeof o->name];
            snprintf(name, sizeof name, "%s%s%s", m->target, m->point[0] ? "/" : "", m->point);
            if (m->role == WT_ROLE_PDU_OUTLET && strcmp(name, o->name) == 0)
                break;
        }
        if (i == t->nmeters)
            return wt_err_set(err,
                              "%s:%d: statement.tenants[%d].outlets[%zu]: %s is not a topology "
                              "meter with role pdu_outlet (named target/point)",
                              t->file, o->line, o->tenant, o->index, o->name);
    }
    s->ntenants = c->ntenants + 1;
    s->tenants = calloc(s->ntenants, sizeof *s->tenants);
    *row_of = malloc((t->nmeters ? t->nmeters : 1) * sizeof **row_of);
    *masks = malloc(s->ntenants * (s->nslots ? s->nslots : 1));
    if (!s->tenants || !*row_of || !*masks)
        return -ENOMEM;
    memset(*masks, 1, s->ntenants * s->nslots);
    for (size_t r = 0; r < c->ntenants; r++)
        snprintf(s->tenants[r].name, sizeof s->tenants[r].name, "%s", c->tenants[r].name);
    for (size_t i = 0; i < t->nmeters; i++) {
        const struct wt_meter *m = &t->meters[i];
        char name[sizeof c->outlets[0].name];
        (*row_of)[i] = -1;
        if (m->role != WT_ROLE_PDU_OUTLET)
            continue;
        snprintf(name, sizeof name, "%s%s%s", m->target, m->point[0] ? "/" : "", m->point);
        (*row_of)[i] = (int)c->ntenants; /* the unassigned row, unless a tenant names it */
        for (size_t k = 0; k < c->noutlets; k++)
            if (strcmp(c->outlets[k].name, name) == 0)
                (*row_of)[i] = c->outlets[k].tenant;
    }
    return 0;
}

/* Whether a fuel meter with feeds names generator g and burns diesel or natural gas: its output
 * is no renewable energy (REF). */
static bool fossil_fed(const struct wt_topology *t, const struct wt_meter *g)
{
    for (size_t i = 0; i < t->nmeters; i++) {
        const struct wt_meter *f = &t->meters[i];
        if (f->role == WT_ROLE_FUEL && strcmp(f->feeds, g->target) == 0 &&
            (f->fuel == WT_FUEL_DIESEL || f->fuel == WT_FUEL_NATURAL_GAS))
            return true;
    }
    return false;
}

int wt_statement_build(struct wt_store *st, const struct wt_topology *t,
                       const struct wt_stmt_conf *c, int64_t from, int64_t to,
                       struct wt_statement *s, struct wt_err *err)
{
    memset(s, 0, sizeof *s);
    s->from_ns = from;
    s->to_ns = to;
    s->annual = is_year(from, to);
    struct wt_meter_set *ms = NULL;
    struct wt_series_info *si[NMETRICS] = {0};
    size_t ns[NMETRICS] = {0};
    struct wt_run_list runs = {0};
    gnutls_hash_hd_t h = NULL;
    int *row_of = NULL;          /* per topology meter: its tenant row, -1 none */
    unsigned char *masks = NULL; /* per tenant row: the intervals all its outlets measured */
    int rc;
    if (to <= from)
        return wt_err_set(err, "the period is empty");
    if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) != 0)
        return -ENOMEM;
    if ((rc = wt_meters_open(st, t, &ms, err)) != 0)
        goto out;
    for (int k = 0; k < NMETRICS; k++)
        if ((rc = wt_store_series(st, metric_names[k], false, &si[k], &ns[k], err)) != 0)
            goto out;
    if (wt_runs_load(st, &runs) != 0) {
        rc = -EIO;
        wt_err_set(err, "store: cannot read the runs table");
        goto out;
    }
    s->meters = calloc(t->nmeters ? t->nmeters : 1, sizeof *s->meters);
    s->zones = calloc(t->nmeters ? t->nmeters : 1, sizeof *s->zones);
    s->nslots = (size_t)((to - from + WT_STMT_SLOT_NS - 1) / WT_STMT_SLOT_NS);
    s->matched = malloc(s->nslots ? s->nslots : 1);
    if (s->matched)
        memset(s->matched, 1, s->nslots);
    if (!s->meters || !s->zones || !s->matched) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = tenants_open(t, c, s, &row_of, &masks, err)) != 0)
        goto out;
    bool any_data = false;
    for (size_t i = 0; i < t->nmeters; i++) {
        const struct wt_meter *m = &t->meters[i];
        unsigned bit = R(m->role);
        bool outlet = row_of && row_of[i] >= 0;
        if (!((IT_ROLES | DC_ROLES | R(WT_ROLE_WATER) | R(WT_ROLE_WATER_POTABLE) |
               R(WT_ROLE_HEAT_REUSED) | R(WT_ROLE_COOLING) | R(WT_ROLE_HEAT_REMOVED)) &
              bit) &&
            !outlet)
            continue;
        if (m->role == WT_ROLE_FUEL && m->feeds[0]) {
            /* the fuel of a generator metered at its output is in that output already (EN
             * 50600-4-2 §5.2: on-site CHP metered at its output counts as external): outside
             * the boundary, in no sum */
            s->fuel_fed = true;
            continue;
        }
        struct wt_stmt_meter *o = &s->meters[s->nmeters++];
        snprintf(o->name, sizeof o->name, "%s%s%s", m->target, m->point[0] ? "/" : "", m->point);
        o->role = m->role;
        double cov;
        enum wt_meter_method mm;
        if ((rc = wt_meters_energy(ms, i, from, to, &o->value, &cov, &o->points, &mm)) != 0) {
            wt_err_set(err, "store: reading meter %s failed", o->name);
            goto out;
        }
        o->method = wt_meter_method_name(mm);
        if ((rc = meter_slots(st, m, si, ns, &runs, from, to, h, o,
                              outlet ? masks + (size_t)row_of[i] * s->nslots
                              : (bit & (IT_ROLES | DC_ROLES)) ? s->matched
                                                              : NULL)) != 0)
            goto out;
        if (o->measured)
            any_data = true;
        if (outlet) {
            struct wt_stmt_tenant *row = &s->tenants[row_of[i]];
            row->e_j += o->value;
            row->estimated += o->estimated;
            row->noutlets++;
            continue; /* an outlet is part of E_IT already: in no other sum */
        }
        double sign = m->role == WT_ROLE_EXPORTED ? -1 : 1;
        if (m->role == WT_ROLE_FUEL) {
            /* litres, m3 or kg into energy with statement.fuel_factors: the meter's value and
             * estimated part become J, like every other carrier of E_DC */
            o->value = wt_stmt_fuel_j(c, m->fuel, o->value);
            o->estimated = wt_stmt_fuel_j(c, m->fuel, o->estimated);
            s->e_fuel_j += o->value;
            s->e_dc_j += o->value;
        } else if (bit & DC_ROLES) {
            s->e_dc_j += sign * o->value;
            if (m->role == WT_ROLE_FACILITY_TOTAL)
                s->have_dc = true;
        }
        if (bit & IT_ROLES) {
            s->e_it_j += o->value;
            s->have_it = true;
        }
        if (m->role == WT_ROLE_WATER)
            s->w_in_m3 += o->value;
        if (m->role == WT_ROLE_WATER_POTABLE)
            s->w_pot_m3 += o->value;
        if (m->role == WT_ROLE_HEAT_REUSED)
            s->e_reuse_j += o->value;
        if (m->role == WT_ROLE_COOLING)
            s->e_cool_j += o->value;
        if (m->role == WT_ROLE_HEAT_REMOVED)
            s->q_removed_j += o->value;
        if (m->zone[0])
            zone_add(s, m, bit, o->value);
        if (m->role == WT_ROLE_ONSITE_GENERATION && !fossil_fed(t, m))
            s->e_os_used_j += o->value;
        if (m->role == WT_ROLE_EXPORTED)
            s->e_os_used_j -= o->value;
    }
    if (!s->have_dc) {
        rc = wt_err_set(err,
                        "%s: topology.meters: no meter with role facility_total (E_DC: the "
                        "energy entering the data centre)",
                        t->file);
        goto out;
    }
    if (!s->have_it) {
        rc = wt_err_set(err,
                        "%s: topology.meters: no IT meter (role ups_output, pdu_output, it_input "
                        "or it_total: E_IT)",
                        t->file);
        goto out;
    }
    if (!any_data) {
        char a[40], b[40];
        wt_time_format(from, 0, a, sizeof a);
        wt_time_format(to, 0, b, sizeof b);
        rc = wt_err_set(err, "no meter has data in the period %s .. %s", a, b);
        goto out;
    }
    for (size_t r = 0; r < s->ntenants; r++) {
        struct wt_stmt_tenant *row = &s->tenants[r];
        const unsigned char *mk = masks + r * s->nslots;
        for (size_t i = 0; row->noutlets && i < s->nslots; i++)
            row->measured += mk[i];
        /* whole joules (exact as doubles, and in JSON), summed in row order: the rows add up
         * to the total exactly */
        row->e_j = round(row->e_j);
        s->e_outlets_j += row->e_j;
    }
    if (s->e_os_used_j < 0)
        s->e_os_used_j = 0; /* no credit for surplus: exported beyond generation counts 0 */
    wt_stmt_instruments(c, from, to, s->instruments);
    for (size_t i = 0; i < c->nren; i++) {
        if (s->instruments[i].in_ref)
            s->e_ren_j += c->ren[i].kwh * J_PER_KWH;
        else
            s->e_ren_refused_j += c->ren[i].kwh * J_PER_KWH;
    }
    s->e_ren_j += s->e_os_used_j;

    unsigned roles = 0;
    s->category = wt_stmt_category(t, &roles);
    if (s->category)
        snprintf(s->category_text, sizeof s->category_text, "%d (%s)", s->category,
                 s->category == 1   ? "basic: UPS output"
                 : s->category == 2 ? "intermediate: PDU output"
                                    : "advanced: IT equipment input");
    else
        snprintf(s->category_text, sizeof s->category_text,
                 "not stated (role it_total: name it ups_output, pdu_output or it_input)");
    {
        bool os = false, ex = false, pc = false;
        char fu[160] = "";
        size_t fl = 0;
        unsigned seen = 0;
        for (size_t i = 0; i < t->nmeters; i++) {
            const struct wt_meter *m = &t->meters[i];
            if (m->role == WT_ROLE_FUEL && !m->feeds[0] && !(seen & (1u << m->fuel)) &&
                fl < sizeof fu) {
                int w = snprintf(fu + fl, sizeof fu - fl, "%s%s %.4g kWh/%s",
                                 fl ? ", " : " + fuel (", wt_fuel_name(m->fuel),
                                 c->fuel_kwh[m->fuel], wt_stmt_fuel_unit(m->fuel));
                fl += w > 0 ? (size_t)w : 0;
                seen |= 1u << m->fuel;
            }
            os |= t->meters[i].role == WT_ROLE_ONSITE_GENERATION;
            ex |= t->meters[i].role == WT_ROLE_EXPORTED;
            pc |= t->meters[i].role == WT_ROLE_PURCHASED_COOLING;
        }
        if (fl && fl < sizeof fu)
            snprintf(fu + fl, sizeof fu - fl, ")");
        snprintf(s->boundary, sizeof s->boundary,
                 "E_DC = facility_total%s%s%s%s; E_IT = the IT meters (%s%s%s%s)",
                 os ? " + onsite_generation" : "", fu, pc ? " + purchased_cooling" : "",
                 ex ? " - exported" : "", (roles & R(WT_ROLE_UPS_OUTPUT)) ? "ups_output " : "",
                 (roles & R(WT_ROLE_PDU_OUTPUT)) ? "pdu_output " : "",
                 (roles & R(WT_ROLE_IT_INPUT)) ? "it_input " : "",
                 (roles & R(WT_ROLE_IT_TOTAL)) ? "it_total " : "");
        size_t L = strlen(s->boundary);
        if (L > 2 && s->boundary[L - 2] == ' ')
            memmove(s->boundary + L - 2, s->boundary + L - 1, 2);
        if (s->fuel_fed)
            snprintf(s->boundary + strlen(s->boundary), sizeof s->boundary - strlen(s->boundary),
                     "; the fuel of a metered generator (feeds) is not counted: its output is");
    }

    /* PUE */
    struct wt_stmt_kpi *k = &s->kpis[s->nkpis++];
    kpi_set(k, s->annual ? "PUE" : "iPUE (interim)", "PUE", "E_DC / E_IT",
            "ISO/IEC 30134-2:2016 (listed as withdrawn; the new edition not verified) / "
            "EN 50600-4-2:2016",
            "ratio");
    if (s->e_it_j <= 0)
        snprintf(k->why, sizeof k->why, "E_IT is 0 over the period");
    else if (s->e_it_j > s->e_dc_j)
        snprintf(k->why, sizeof k->why,
                 "refused: E_IT (%.0f kWh) > E_DC (%.0f kWh): the boundary misses a carrier, or "
                 "an IT feed is metered twice",
                 s->e_it_j / J_PER_KWH, s->e_dc_j / J_PER_KWH);
    else {
        k->available = true;
        k->value = s->e_dc_j / s->e_it_j;
    }
    finish_kpi(s, k, IT_ROLES | DC_ROLES, c);

    /* WUE */
    k = &s->kpis[s->nkpis++];
    kpi_set(k, "WUE", "WUE", "W_IN / E_IT",
            "ISO/IEC 30134-9:2022 / EN 50600-4-9 (categories not verified)", "L/kWh");
    bool has_w = false, has_pot = false;
    for (size_t i = 0; i < s->nmeters; i++) {
        has_w |= s->meters[i].role == WT_ROLE_WATER;
        has_pot |= s->meters[i].role == WT_ROLE_WATER_POTABLE;
    }
    if (!has_w)
        snprintf(k->why, sizeof k->why, "not available: no meter with role water_litres (W_IN)");
    else if (has_pot && s->w_pot_m3 > s->w_in_m3)
        snprintf(k->why, sizeof k->why,
                 "refused: potable water (%.3f m3) > total water input W_IN (%.3f m3)", s->w_pot_m3,
                 s->w_in_m3);
    else if (s->e_it_j > 0) {
        k->available = true;
        k->value = s->w_in_m3 * 1000 / (s->e_it_j / J_PER_KWH);
    }
    finish_kpi(s, k, R(WT_ROLE_WATER) | R(WT_ROLE_WATER_POTABLE) | IT_ROLES, c);

    /* ERF */
    k = &s->kpis[s->nkpis++];
    kpi_set(k, "ERF", "ERF", "E_REUSE / E_DC", "ISO/IEC 30134-6:2021 / EN 50600-4-6:2020", "ratio");
    bool has_h = false;
    for (size_t i = 0; i < s->nmeters; i++)
        has_h |= s->meters[i].role == WT_ROLE_HEAT_REUSED;
    if (!has_h)
        snprintf(k->why, sizeof k->why, "not available: no meter with role heat_reused (E_REUSE)");
    else if (s->e_dc_j <= 0 || s->e_reuse_j > s->e_dc_j)
        snprintf(k->why, sizeof k->why, "refused: E_REUSE (%.0f kWh) > E_DC (%.0f kWh): ERF > 1",
                 s->e_reuse_j / J_PER_KWH, s->e_dc_j / J_PER_KWH);
    else {
        k->available = true;
        k->value = s->e_reuse_j / s->e_dc_j;
    }
    finish_kpi(s, k, R(WT_ROLE_HEAT_REUSED) | DC_ROLES, c);

    /* REF */
    k = &s->kpis[s->nkpis++];
    kpi_set(k, "REF", "REF", "(E_RES-GOO + E_RES-PPA + on-site generation used) / E_DC",
            "ISO/IEC 30134-3 (edition not verified) / EN 50600-4-3:2016", "ratio");
    if (s->e_ren_j > s->e_dc_j)
        snprintf(k->why, sizeof k->why,
                 "refused: renewable energy (%.0f kWh) > E_DC (%.0f kWh): REF > 1 (at most "
                 "1.00; surplus gets no credit)",
                 s->e_ren_j / J_PER_KWH, s->e_dc_j / J_PER_KWH);
    else if (s->e_dc_j > 0) {
        k->available = true;
        k->value = s->e_ren_j / s->e_dc_j;
    }
    finish_kpi(s, k, DC_ROLES, c);

    /* CER: heat removed / the cooling system's electricity (notes item 16) */
    k = &s->kpis[s->nkpis++];
    kpi_set(k, "CER", "CER", "Q_removed / E_cooling", "ISO/IEC 30134-7:2023 / EN 50600-4-7:2020",
            "ratio");
    bool has_q = false, has_cool = false, has_pc = false;
    for (size_t i = 0; i < s->nmeters; i++) {
        has_q |= s->meters[i].role == WT_ROLE_HEAT_REMOVED;
        has_cool |= s->meters[i].role == WT_ROLE_COOLING;
        has_pc |= s->meters[i].role == WT_ROLE_PURCHASED_COOLING;
    }
    if (!has_q)
        snprintf(k->why, sizeof k->why,
                 "not available: no meter with role heat_removed (the heat meters on the cooling "
                 "loops)");
    else if (!has_cool)
        snprintf(k->why, sizeof k->why,
                 "not available: no meter with role cooling (the cooling system's electricity)");
    else if (has_pc)
        snprintf(k->why, sizeof k->why,
                 "n/a: part of the cooling is purchased cooling fluid, not powered by electricity "
                 "(CER is for electrically powered cooling)");
    else if (s->e_cool_j <= 0)
        snprintf(k->why, sizeof k->why, "the cooling meters count 0 over the period");
    else {
        k->available = true;
        k->value = s->q_removed_j / s->e_cool_j;
    }
    finish_kpi(s, k, R(WT_ROLE_HEAT_REMOVED) | R(WT_ROLE_COOLING), c);

    /* the hand inputs go into the hash too */
    char hand[512];
    int hn = snprintf(hand, sizeof hand, "%lld %lld %s %.17g %.17g %.17g %s %s %s %.17g",
                      (long long)from, (long long)to, c->site, c->installed_it_kw, c->floor_area_m2,
                      c->white_space_m2, c->commissioned, c->redundancy_electrical,
                      c->redundancy_cooling, c->min_coverage);
    gnutls_hash(h, hand, (size_t)(hn > 0 ? hn : 0));
    for (size_t i = 0; i < c->nren; i++) {
        const struct wt_stmt_renewable *x = &c->ren[i];
        hn = snprintf(hand, sizeof hand, "%s %.17g %s", x->type, x->kwh, x->ref);
        gnutls_hash(h, hand, (size_t)(hn > 0 ? hn : 0));
        /* the quality criteria, when stated (absent, the hash is the one before them) */
        if (x->market[0] || x->retired_for[0] || x->vintage[0]) {
            hn = snprintf(hand, sizeof hand, "criteria %s %s %s %s", x->market, x->retired_for,
                          x->vintage, c->market);
            gnutls_hash(h, hand, (size_t)(hn > 0 ? hn : 0));
        }
    }
    bool rated = c->residual_g_per_kwh >= 0;
    for (size_t i = 0; i < c->nren; i++)
        rated |= c->ren[i].g_per_kwh > 0;
    if (rated) { /* (absent, the hash is the one before these settings existed) */
        hn = snprintf(hand, sizeof hand, "residual %.17g %s %d", c->residual_g_per_kwh,
                      c->residual_source, c->residual_year);
        gnutls_hash(h, hand, (size_t)(hn > 0 ? hn : 0));
        for (size_t i = 0; i < c->nren; i++) {
            hn = snprintf(hand, sizeof hand, "rate %.17g", c->ren[i].g_per_kwh);
            gnutls_hash(h, hand, (size_t)(hn > 0 ? hn : 0));
        }
    }
    /* the fuel factors, when a fuel meter is in the boundary (absent, the hash is the one
     * before fuels were counted) */
    for (size_t i = 0; i < t->nmeters; i++) {
        const struct wt_meter *m = &t->meters[i];
        if (m->role != WT_ROLE_FUEL || m->feeds[0])
            continue;
        hn = snprintf(hand, sizeof hand, "fuel %s %s %.17g kWh/%s", m->target,
                      wt_fuel_name(m->fuel), c->fuel_kwh[m->fuel], wt_stmt_fuel_unit(m->fuel));
        gnutls_hash(h, hand, (size_t)(hn > 0 ? hn : 0));
    }
    for (size_t i = 0; i < c->noutlets; i++) {
        hn = snprintf(hand, sizeof hand, "%s %s", c->tenants[c->outlets[i].tenant].name,
                      c->outlets[i].name);
        gnutls_hash(h, hand, (size_t)(hn > 0 ? hn : 0));
    }
    rc = 0;
out:
    free(row_of);
    free(masks);
    if (h) {
        unsigned char d[32];
        gnutls_hash_deinit(h, d);
        for (int i = 0; i < 32; i++)
            snprintf(s->hash + 2 * i, 3, "%02x", d[i]);
    }
    for (int k2 = 0; k2 < NMETRICS; k2++)
        free(si[k2]);
    wt_runs_free(&runs);
    wt_meters_close(ms);
    if (rc)
        wt_statement_free(s);
    return rc;
}

void wt_statement_free(struct wt_statement *s)
{
    free(s->tenants);
    s->tenants = NULL;
    s->ntenants = 0;
    free(s->meters);
    s->meters = NULL;
    free(s->zones);
    s->zones = NULL;
    s->nzones = 0;
    free(s->matched);
    s->matched = NULL;
    s->nmeters = 0;
}

cJSON *wt_stmt_tenants_json(const struct wt_statement *s)
{
    cJSON *to = cJSON_CreateObject();
    cJSON_AddStringToObject(to, "label", s->annual ? "annual" : "interim");
    cJSON_AddNumberToObject(to, "e_outlets_joules", s->e_outlets_j);
    cJSON *rows = cJSON_AddArrayToObject(to, "rows");
    for (size_t i = 0; rows && i < s->ntenants; i++) {
        const struct wt_stmt_tenant *tn = &s->tenants[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(rows, o)) {
            cJSON_Delete(o);
            rows = NULL;
            break;
        }
        if (tn->name[0])
            cJSON_AddStringToObject(o, "tenant", tn->name);
        else
            cJSON_AddNullToObject(o, "tenant"); /* the outlets of no tenant */
        cJSON_AddNumberToObject(o, "outlets", (double)tn->noutlets);
        cJSON_AddNumberToObject(o, "e_it_joules", tn->e_j);
        cJSON_AddNumberToObject(o, "estimated", tn->estimated);
        cJSON_AddNumberToObject(o, "measured_intervals", (double)tn->measured);
        cJSON_AddNumberToObject(o, "coverage",
                                s->nslots ? (double)tn->measured / (double)s->nslots : 0);
        if (s->e_it_j > 0)
            cJSON_AddNumberToObject(o, "share_of_e_it", tn->e_j / s->e_it_j);
        else
            cJSON_AddNullToObject(o, "share_of_e_it");
    }
    if (!rows) {
        cJSON_Delete(to);
        return NULL;
    }
    return to;
}

/* ---- CUE ---- */

static void hash_hex(gnutls_hash_hd_t h, char out[65])
{
    unsigned char d[32];
    gnutls_hash_deinit(h, d);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

struct dc_energy {
    struct wt_meter_set *ms;
    const struct wt_topology *t;
};

/* E_DC of [a, b]: the boundary's meters, exported negative. */
static int dc_energy_fn(void *ctx, int64_t a, int64_t b, double *joules)
{
    const struct dc_energy *d = ctx;
    *joules = 0;
    for (size_t i = 0; i < d->t->nmeters; i++) {
        enum wt_role r = d->t->meters[i].role;
        if (!(DC_ROLES & R(r)))
            continue;
        double j, cov;
        int pts;
        enum wt_meter_method how;
        int rc = wt_meters_energy(d->ms, i, a, b, &j, &cov, &pts, &how);
        if (rc)
            return rc;
        *joules += r == WT_ROLE_EXPORTED ? -j : j;
    }
    return 0;
}

static const char *step_name(int64_t ns, char *buf, size_t n)
{
    int64_t s = ns / WT_NS_PER_S;
    if (s == 3600)
        return "hourly";
    if (s == 86400)
        return "daily";
    if (s > 3600 && s % 3600 == 0)
        snprintf(buf, n, "%lld h", (long long)(s / 3600));
    else if (s > 0 && s < 3600 && s % 60 == 0)
        snprintf(buf, n, "%lld min", (long long)(s / 60));
    else
        snprintf(buf, n, "%lld s", (long long)s);
    return buf;
}

/* The stored intensity points of zone over [a, b): their sources (distinct, comma-joined) and
 * the step most of them have. 0 or -EIO. */
static int factor_of(sqlite3 *db, const char *zone, int64_t a, int64_t b, struct wt_stmt_factor *f)
{
    static const char *const sql[] = {
        "SELECT DISTINCT source FROM carbon_points WHERE series='intensity' AND zone=?1 AND "
        "to_ns > ?2 AND from_ns < ?3 ORDER BY source",
        "SELECT to_ns - from_ns, COUNT(*) FROM carbon_points WHERE series='intensity' AND "
        "zone=?1 AND to_ns > ?2 AND from_ns < ?3 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1"};
    for (int q = 0; q < 2; q++) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, sql[q], -1, &s, NULL) != SQLITE_OK)
            return -EIO;
        sqlite3_bind_text(s, 1, zone, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, a);
        sqlite3_bind_int64(s, 3, b);
        int step;
        while ((step = sqlite3_step(s)) == SQLITE_ROW) {
            if (q == 0) {
                size_t L = strlen(f->source);
                snprintf(f->source + L, sizeof f->source - L, "%s%s", L ? ", " : "",
                         (const char *)sqlite3_column_text(s, 0));
            } else {
                char buf[32];
                snprintf(f->granularity, sizeof f->granularity, "%s",
                         step_name(sqlite3_column_int64(s, 0), buf, sizeof buf));
            }
        }
        sqlite3_finalize(s);
        if (step != SQLITE_DONE)
            return -EIO;
    }
    return 0;
}

int wt_stmt_cue(struct wt_store *st, const struct wt_topology *t, const struct wt_carbon_conf *cf,
                const struct wt_stmt_conf *c, struct wt_statement *s, struct wt_err *err)
{
    if (s->nkpis + 2 > WT_STMT_MAX_KPIS)
        return -ENOMEM;
    struct wt_stmt_factor *f = &s->cue_location;
    memset(f, 0, sizeof *f);
    s->has_cue = true;
    snprintf(f->zone, sizeof f->zone, "%s", cf->zone);
    struct wt_stmt_kpi *k = &s->kpis[s->nkpis++];
    kpi_set(k, "CUE (location-based)", "CUE_location", "sum_h(E_DC,h x EF_grid,h) / E_IT",
            "ISO/IEC 30134-8:2022 / EN 50600-4-8 (categories not verified)", "kgCO2e/kWh");
    sqlite3 *db = wt_store_db(st);
    int rc = 0;
    struct wt_meter_set *ms = NULL;
    struct wt_carbon_result r;
    if (!cf->zone[0] && !cf->has_static) {
        snprintf(k->why, sizeof k->why,
                 "not available: no carbon.zone (the grid zone of the stored intensity series) "
                 "and no carbon.static_gco2_per_kwh");
        goto market;
    }
    if (wt_carbon_tables(db) != 0 ||
        (cf->zone[0] && factor_of(db, cf->zone, s->from_ns, s->to_ns, f) != 0)) {
        wt_err_set(err, "store: cannot read the carbon table");
        return -EIO;
    }
    if (!f->source[0] && cf->has_static) {
        snprintf(f->source, sizeof f->source, "carbon.static_gco2_per_kwh (%g gCO2e/kWh)",
                 cf->static_g);
        snprintf(f->granularity, sizeof f->granularity, "static (one value for the period)");
    }
    if ((rc = wt_meters_open(st, t, &ms, err)) != 0)
        return rc;
    struct dc_energy d = {ms, t};
    rc = wt_carbon_emissions(db, NULL, cf, cf->zone, s->from_ns, s->to_ns, dc_energy_fn, &d, 1.0,
                             true, &r);
    wt_meters_close(ms);
    if (rc) {
        wt_err_set(err, "store: reading E_DC per intensity step failed");
        return rc;
    }
    {
        struct wt_carbon_step *steps = NULL;
        size_t nsteps = 0;
        gnutls_hash_hd_t h = NULL;
        if (wt_carbon_steps(db, cf, WT_CS_INTENSITY, cf->zone, s->from_ns, s->to_ns, &steps,
                            &nsteps) != 0 ||
            gnutls_hash_init(&h, GNUTLS_DIG_SHA256) != 0) {
            free(steps);
            wt_err_set(err, "store: cannot read the intensity series");
            return -EIO;
        }
        char set[160];
        int sn = snprintf(set, sizeof set, "%s %d %.17g %lld", cf->zone, cf->has_static,
                          cf->static_g, (long long)cf->max_hole_ns);
        gnutls_hash(h, set, (size_t)(sn > 0 ? sn : 0));
        for (size_t i = 0; i < nsteps; i++) {
            sn = snprintf(set, sizeof set, "%lld %lld %.17g %d", (long long)steps[i].from_ns,
                          (long long)steps[i].to_ns, steps[i].value, (int)steps[i].src);
            gnutls_hash(h, set, (size_t)(sn > 0 ? sn : 0));
        }
        free(steps);
        hash_hex(h, f->sha256);
    }
    f->g = r.g;
    f->steps = r.pieces;
    f->actual_share = r.it_j > 0 ? r.by_src_j[WT_CSRC_ACTUAL] / r.it_j : 0;
    if (!r.known || !f->source[0])
        snprintf(k->why, sizeof k->why,
                 "not available: no intensity series stored for zone %.63s over the period "
                 "(wattage import carbon FILE --zone ZONE) and no carbon.static_gco2_per_kwh",
                 cf->zone);
    else if (s->e_it_j <= 0)
        snprintf(k->why, sizeof k->why, "E_IT is 0 over the period");
    else {
        k->available = true;
        k->value = (r.g / 1000.0) / (s->e_it_j / J_PER_KWH);
    }
market:
    finish_kpi(s, k, IT_ROLES | DC_ROLES, c);
    k = &s->kpis[s->nkpis++];
    kpi_set(k, "CUE (market-based)", "CUE_market",
            "(emissions after contractual instruments + residual mix x uncovered E_DC) / E_IT",
            "ISO/IEC 30134-8:2022 / GHG Protocol Scope 2 market-based method", "kgCO2e/kWh");
    s->has_cue_market = false;
    size_t nin = 0; /* the instruments that meet the quality criteria (wt_stmt_instruments) */
    for (size_t i = 0; i < c->nren; i++)
        nin += s->instruments[i].in_cue;
    if (c->residual_g_per_kwh < 0 && !nin)
        snprintf(k->why, sizeof k->why,
                 "market-based: not reported (no contract instruments configured in "
                 "statement.renewables, and no residual-mix factor for the rest: "
                 "statement.residual_mix_g_per_kwh)");
    else if (c->residual_g_per_kwh < 0)
        snprintf(k->why, sizeof k->why,
                 "market-based: not reported (no residual-mix factor is configured for the energy "
                 "the %zu contract instruments do not cover: statement.residual_mix_g_per_kwh)",
                 nin);
    else if (s->e_it_j <= 0)
        snprintf(k->why, sizeof k->why, "E_IT is 0 over the period");
    else {
        double ren_kwh = 0, ren_g = 0, dc_kwh = s->e_dc_j / J_PER_KWH;
        for (size_t i = 0; i < c->nren; i++) {
            if (!s->instruments[i].in_cue)
                continue; /* refused: a disclosure line, outside the total */
            ren_kwh += c->ren[i].kwh;
            ren_g += c->ren[i].kwh * c->ren[i].g_per_kwh;
        }
        double covered = ren_kwh < dc_kwh ? ren_kwh : dc_kwh;
        if (covered < 0)
            covered = 0;
        double uncovered = dc_kwh - covered;
        /* instruments beyond E_DC cover nothing more: their rate applies pro rata */
        s->market_g =
            (ren_kwh > 0 ? ren_g * covered / ren_kwh : 0) + uncovered * c->residual_g_per_kwh;
        s->market_covered_j = covered * J_PER_KWH;
        s->market_uncovered_j = uncovered * J_PER_KWH;
        s->has_cue_market = true;
        k->available = true;
        k->value = (s->market_g / 1000.0) / (s->e_it_j / J_PER_KWH);
    }
    finish_kpi(s, k, IT_ROLES | DC_ROLES, c);
    return 0;
}

/* ---- hourly CFE ---- */

int wt_stmt_cfe(struct wt_store *st, const struct wt_topology *t, const struct wt_carbon_conf *cf,
                const struct wt_stmt_conf *c, struct wt_statement *s, struct wt_err *err)
{
    if (s->nkpis + 1 > WT_STMT_MAX_KPIS)
        return -ENOMEM;
    struct wt_stmt_factor *f = &s->cfe_supply;
    memset(f, 0, sizeof *f);
    s->has_cfe = true;
    snprintf(f->zone, sizeof f->zone, "%s", cf->zone);
    struct wt_stmt_kpi *k = &s->kpis[s->nkpis++];
    kpi_set(k, "CFE (hourly)", "CFE_hourly", "sum_h min(E_DC,h, CFE supply_h) / E_DC",
            "24/7 CFE hourly matching (beside REF; not an ISO/IEC 30134 KPI)", "ratio");
    if (!cf->zone[0]) {
        snprintf(k->why, sizeof k->why,
                 "not available: no carbon.zone (the zone of the stored renewable supply series)");
        goto out;
    }
    sqlite3 *db = wt_store_db(st);
    sqlite3_stmt *q = NULL;
    if (wt_carbon_tables(db) != 0 ||
        sqlite3_prepare_v2(db,
                           "SELECT from_ns, to_ns, value, source FROM carbon_points WHERE "
                           "series='renewable' AND zone=?1 AND kind=0 AND to_ns > ?2 AND "
                           "from_ns < ?3 ORDER BY from_ns",
                           -1, &q, NULL) != SQLITE_OK) {
        wt_err_set(err, "store: cannot read the carbon table");
        return -EIO;
    }
    sqlite3_bind_text(q, 1, cf->zone, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, s->from_ns);
    sqlite3_bind_int64(q, 3, s->to_ns);
    struct wt_meter_set *ms = NULL;
    int rc = wt_meters_open(st, t, &ms, err), step;
    if (rc) {
        sqlite3_finalize(q);
        return rc;
    }
    struct dc_energy d = {ms, t};
    int64_t longest = 0;
    double matched = 0;
    gnutls_hash_hd_t h = NULL;
    if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) != 0) {
        sqlite3_finalize(q);
        wt_meters_close(ms);
        return -ENOMEM;
    }
    gnutls_hash(h, cf->zone, strlen(cf->zone) + 1);
    while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t pf = sqlite3_column_int64(q, 0), pt = sqlite3_column_int64(q, 1);
        double kwh = sqlite3_column_double(q, 2);
        const char *src = (const char *)sqlite3_column_text(q, 3);
        if (src && !strstr(f->source, src)) {
            size_t L = strlen(f->source);
            snprintf(f->source + L, sizeof f->source - L, "%s%s", L ? ", " : "", src);
        }
        if (pt - pf > longest)
            longest = pt - pf;
        char row[96];
        int rn = snprintf(row, sizeof row, "%lld %lld %.17g", (long long)pf, (long long)pt, kwh);
        gnutls_hash(h, row, (size_t)(rn > 0 ? rn : 0));
        int64_t a = pf > s->from_ns ? pf : s->from_ns, b = pt < s->to_ns ? pt : s->to_ns;
        if (b <= a || pt <= pf)
            continue;
        double sup = kwh * J_PER_KWH * (double)(b - a) / (double)(pt - pf), load = 0;
        if ((rc = dc_energy_fn(&d, a, b, &load)) != 0)
            wt_err_set(err, "store: reading E_DC per supply point failed");
        matched += load < sup ? (load > 0 ? load : 0) : sup;
        f->steps++;
    }
    sqlite3_finalize(q);
    wt_meters_close(ms);
    hash_hex(h, f->sha256);
    if (rc)
        return rc;
    if (step != SQLITE_DONE) {
        wt_err_set(err, "store: cannot read the carbon table");
        return -EIO;
    }
    f->g = matched;
    if (longest) {
        char buf[32];
        snprintf(f->granularity, sizeof f->granularity, "%s", step_name(longest, buf, sizeof buf));
    }
    if (!f->steps)
        snprintf(k->why, sizeof k->why,
                 "not available: no renewable supply series (actual values) stored for zone "
                 "%.63s over the period (wattage import carbon FILE --series renewable)",
                 cf->zone);
    else if (longest > 3600 * WT_NS_PER_S)
        snprintf(k->why, sizeof k->why,
                 "not available: the supply series has %s points, longer than the hour hourly "
                 "matching needs",
                 f->granularity);
    else if (s->e_dc_j > 0) {
        k->available = true;
        k->value = matched / s->e_dc_j;
    }
out:
    finish_kpi(s, k, DC_ROLES, c);
    return 0;
}

/* ---- part-load bins ---- */

int wt_stmt_part_load(struct wt_store *st, const struct wt_topology *t,
                      const struct wt_stmt_conf *c, struct wt_statement *s, struct wt_err *err)
{
    s->has_part_load = true;
    s->pl_skipped = s->pl_above = 0;
    for (int i = 0; i < WT_STMT_BINS; i++) {
        memset(&s->bins[i], 0, sizeof s->bins[i]);
        s->bins[i].from_pct = 25.0 * i;
        s->bins[i].to_pct = 25.0 * (i + 1);
    }
    if (c->installed_it_kw <= 0) {
        snprintf(s->part_load_why, sizeof s->part_load_why,
                 "not available: statement.installed_it_kw (P_DIT) not given");
        return 0;
    }
    s->part_load_why[0] = '\0';
    struct wt_meter_set *ms = NULL;
    int rc = wt_meters_open(st, t, &ms, err);
    if (rc)
        return rc;
    for (size_t slot = 0; slot < s->nslots && rc == 0; slot++) {
        int64_t a = s->from_ns + (int64_t)slot * WT_STMT_SLOT_NS;
        int64_t b = a + WT_STMT_SLOT_NS < s->to_ns ? a + WT_STMT_SLOT_NS : s->to_ns;
        double dc = 0, it = 0;
        if (!s->matched[slot]) {
            s->pl_skipped++;
            continue;
        }
        for (size_t i = 0; i < t->nmeters && rc == 0; i++) {
            enum wt_role r = t->meters[i].role;
            if (!((DC_ROLES | IT_ROLES) & R(r)))
                continue;
            double j, cov;
            int pts;
            enum wt_meter_method how;
            if ((rc = wt_meters_energy(ms, i, a, b, &j, &cov, &pts, &how)) != 0)
                break;
            if (IT_ROLES & R(r))
                it += j;
            else
                dc += r == WT_ROLE_EXPORTED ? -j : j;
        }
        if (rc)
            break;
        if (it <= 0) {
            s->pl_skipped++;
            continue;
        }
        double pct = 100.0 * it / ((double)(b - a) / 1e9 * c->installed_it_kw * 1000.0);
        int k = (int)(pct / 25.0);
        if (pct >= 100)
            s->pl_above++;
        if (k >= WT_STMT_BINS)
            k = WT_STMT_BINS - 1;
        s->bins[k].slots++;
        s->bins[k].e_dc_j += dc;
        s->bins[k].e_it_j += it;
    }
    wt_meters_close(ms);
    if (rc)
        wt_err_set(err, "store: reading the meters per interval failed");
    return rc;
}
