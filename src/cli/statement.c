/* SPDX-License-Identifier: MIT */
/*
 * `wattage report --standard iso30134 (--period YEAR | --from T --to T) [--json] [-c FILE]
 * [--db FILE]`: the KPI statement of a standard from the topology's meter roles
 * (audit/statement.h). JSON in SI units (joules, cubic metres); kWh only in the text:
 *   {"standard", "period": {"from", "to", "label"}, "category", "boundary",
 *    "energy": {"e_dc_joules", "e_it_joules", "w_in_cubic_meters", "w_potable_cubic_meters",
 *               "e_reuse_joules", "e_renewable_joules", "e_renewable_refused_joules",
 *               "e_onsite_used_joules"},
 *    "kpis": [{"name", "symbol", "formula", "standard", "unit", "value": X|null, "why",
 *              "coverage", "estimated_share", "reportable"}], CUE_location with
 *             "emission_factor": {"method", "zone", "source", "granularity", "steps",
 *                                 "actual_share", "gco2e"},
 *    "meters": [{"meter", "role", "value", "unit", "method", "intervals", "measured_intervals",
 *                "coverage", "estimated", "gap_fill"}],
 *    "zones": [{"zone", "label": "partial", "basis", "e_zone_joules", "e_it_joules",
 *               "ppue": X|null, "why"}],
 *    "tenants": {"label", "e_outlets_joules", "rows": [{"tenant": NAME|null (unassigned),
 *                "outlets", "e_it_joules", "estimated", "measured_intervals", "coverage",
 *                "share_of_e_it": X|null}]}   (with statement.tenants only),
 *    "part_load": {"label", "why" | "installed_it_kw", "intervals_not_matched",
 *                  "intervals_above_p_dit", "bins": [{"from_percent", "to_percent", "intervals",
 *                  "e_dc_joules", "e_it_joules", "pue"}]},
 *    "method": {"wattage_version", "interval_seconds", "min_coverage", "hand_inputs": {...},
 *               "renewables": [{"type", "kwh", "g_per_kwh", "ref", "market", "retired_for",
 *                               "vintage" (null: not stated), "in_ref", "in_cue_market",
 *                               "refused": [{"reason", "text"}], "unchecked": [KEY]}],
 *               "market", "inputs_sha256"}}
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/carbon.h"
#include "audit/statement.h"
#include "audit/statement_enefg.h"
#include "audit/statement_eu.h"
#include "audit/topology.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "core/config.h"
#include "store/promsrc.h"
#include "store/store.h"

#define J_PER_KWH 3.6e6
#define WT_EU_SCHEMA_DEFAULT "/usr/share/wattage/standards/eu-eed-2024-1364.v1.schema.json"
#define WT_ENEFG_TABLE_DEFAULT "/usr/share/wattage/standards/enefg.v1.json"

static const struct wt_cli_opt stmt_opts[] = {
    {"standard", 'S', "iso30134|eu-eed|enefg",
     "the KPI statement of ISO/IEC 30134, the EU EED (2024/1364) file, or the EnEfG checks"},
    {"schema", 's', "FILE",
     "eu-eed: the dated schema file of the Annex symbols; enefg: the dated table of limits "
     "(default: eu-eed-2024-1364.v1.schema.json or enefg.v1.json in the directory "
     "/usr/share/wattage/standards)"},
    {"csv", 'v', NULL, "eu-eed: CSV (symbol, value, unit, status, reason, tag) instead of text"},
    {"period", 'P', "YEAR", "the calendar year (UTC); else --from and --to"},
    {"from", WT_OPT_FROM, "T", "the period's start (with --to)"},
    {"to", WT_OPT_TO, "T", "the period's end"},
    {"json", WT_OPT_JSON, NULL,
     "JSON (SI units) instead of text; several sites' statements (--source): an array of them"},
    {"source", WT_OPT_SOURCE, "URL",
     WT_CLI_SOURCE_HELP " (or that scrapes them with a node label), instead of the local store: "
                        "one statement per value of the series' site label"},
    {"site", 'i', "NAME", "with --source: the statement of this site only"},
    {NULL}};

const struct wt_cli_form wt_cli_form_report_standard = {
    "report --standard",
    "",
    "the KPI statement of a standard over a period, from the topology's meter roles",
    __FILE__,
    false,
    {stmt_opts, wt_cli_store_opts}};

bool wt_cli_report_is_standard(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--standard") == 0 || strncmp(argv[i], "--standard=", 11) == 0)
            return true;
    return false;
}

static const char *unit_of(enum wt_role r)
{
    return r == WT_ROLE_WATER || r == WT_ROLE_WATER_POTABLE ? "m3" : "J";
}

static const char *fill_of(const struct wt_stmt_meter *m)
{
    if (m->measured == m->slots)
        return "none needed";
    if (m->estimated > 0)
        return "register difference spread linearly over the hole (total measured)";
    return "not filled: the hole counts nothing";
}

/* The tenants' table (statement.tenants; nothing without it), why in its heading. The row of
 * the outlets of no tenant is left out when no outlet is unassigned. */
static void print_tenants(const struct wt_statement *s, const char *why)
{
    if (!s->ntenants)
        return;
    printf("\ntenants (%s: %s IT energy of each one's PDU outlets):\n", why,
           s->annual ? "annual" : "interim");
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct wt_stmt_tenant *tn = &s->tenants[i];
        if (!tn->name[0] && !tn->noutlets)
            continue;
        printf("  %-16s %14.3f kWh  %2zu outlet%s  %zu/%zu measured, estimated %.3f kWh",
               tn->name[0] ? tn->name : "(unassigned)", tn->e_j / J_PER_KWH, tn->noutlets,
               tn->noutlets == 1 ? " " : "s", tn->measured, s->nslots, tn->estimated / J_PER_KWH);
        if (s->e_it_j > 0)
            printf(", %.2f %% of E_IT\n", 100 * tn->e_j / s->e_it_j);
        else
            printf(", share of E_IT n/a (E_IT is 0)\n");
    }
    printf("  %-16s %14.3f kWh  (the rows add up to it)\n", "outlets", s->e_outlets_j / J_PER_KWH);
}

/* An instrument's quality criteria (statement.h: struct wt_stmt_instrument) into o. */
static void instrument_json(cJSON *o, const struct wt_stmt_renewable *x,
                            const struct wt_stmt_instrument *in)
{
    const char *keys[] = {"market", "retired_for", "vintage"};
    const char *vals[] = {x->market, x->retired_for, x->vintage};
    for (size_t k = 0; k < 3; k++)
        if (vals[k][0])
            cJSON_AddStringToObject(o, keys[k], vals[k]);
        else
            cJSON_AddNullToObject(o, keys[k]);
    cJSON_AddBoolToObject(o, "in_ref", in->in_ref);
    cJSON_AddBoolToObject(o, "in_cue_market", in->in_cue);
    cJSON *rf = cJSON_AddArrayToObject(o, "refused");
    char buf[sizeof in->refused];
    snprintf(buf, sizeof buf, "%s", in->refused);
    for (char *save = NULL, *p = strtok_r(buf, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
        while (*p == ' ')
            p++;
        char *colon = strchr(p, ':');
        cJSON *r = cJSON_CreateObject();
        if (colon) {
            *colon = '\0';
            cJSON_AddStringToObject(r, "reason", p);
            cJSON_AddStringToObject(r, "text", colon + 2);
        } else {
            cJSON_AddStringToObject(r, "reason", p);
            cJSON_AddStringToObject(r, "text", "");
        }
        cJSON_AddItemToArray(rf, r);
    }
    cJSON *un = cJSON_AddArrayToObject(o, "unchecked");
    snprintf(buf, sizeof buf, "%s", in->unchecked);
    for (char *save = NULL, *p = strtok_r(buf, "; ", &save); p; p = strtok_r(NULL, "; ", &save))
        cJSON_AddItemToArray(un, cJSON_CreateString(p));
}

static void print_text(const struct wt_statement *s, const struct wt_stmt_conf *c)
{
    char a[40], b[40];
    wt_time_format(s->from_ns, 0, a, sizeof a);
    wt_time_format(s->to_ns, 0, b, sizeof b);
    printf("KPI statement, ISO/IEC 30134 series (EN 50600-4-x)\n");
    printf("site:      %s\n", c->site[0] ? c->site : "(statement.site not given)");
    printf("period:    %s .. %s (%s)\n", a, b,
           s->annual ? "annual: one calendar year, UTC"
                     : "interim: not one calendar year, values are not annual KPIs");
    printf("category:  %s\n", s->category_text);
    printf("boundary:  %s\n\n", s->boundary);
    printf("E_DC %.1f kWh, E_IT %.1f kWh, W_IN %.3f m3, E_REUSE %.1f kWh, renewable %.1f kWh\n\n",
           s->e_dc_j / J_PER_KWH, s->e_it_j / J_PER_KWH, s->w_in_m3, s->e_reuse_j / J_PER_KWH,
           s->e_ren_j / J_PER_KWH);
    for (size_t i = 0; i < c->nren; i++) /* a disclosure line, outside the totals */
        if (s->instruments[i].refused[0])
            printf("instrument %s %.1f kWh%s%s: %s: %s\n", c->ren[i].type, c->ren[i].kwh,
                   c->ren[i].ref[0] ? " " : "", c->ren[i].ref,
                   s->instruments[i].in_ref ? "in REF, not in market-based CUE"
                                            : "not in REF nor in market-based CUE",
                   s->instruments[i].refused);
    for (size_t i = 0; i < s->nkpis; i++) {
        const struct wt_stmt_kpi *k = &s->kpis[i];
        if (k->available)
            printf("%-16s %10.4f %-6s  %s  [%s]\n", k->name, k->value, k->unit, k->formula,
                   k->standard);
        else
            printf("%-16s %10s %-6s  %s  [%s]\n", k->name, "n/a", k->unit, k->formula, k->standard);
        printf("%16s coverage %.2f %%, estimated %.2f %%%s%s%s\n", "", 100 * k->coverage,
               100 * k->estimated_share, k->reportable ? ", reportable" : "", k->why[0] ? ": " : "",
               k->why);
        if (s->has_cue_market && strcmp(k->symbol, "CUE_market") == 0)
            printf("%16s factor: residual mix %g gCO2e/kWh (%s, %d) for %.1f kWh no instrument "
                   "covers; instruments cover %.1f kWh; %.1f kgCO2e\n",
                   "", c->residual_g_per_kwh, c->residual_source, c->residual_year,
                   s->market_uncovered_j / J_PER_KWH, s->market_covered_j / J_PER_KWH,
                   s->market_g / 1000);
        if (s->has_cue && strcmp(k->symbol, "CUE_location") == 0 && s->cue_location.source[0])
            printf("%16s factor: %s, zone %s, %s (%zu steps), %.1f %% of E_DC at actual values, "
                   "%.1f kgCO2e\n",
                   "", s->cue_location.source, s->cue_location.zone[0] ? s->cue_location.zone : "-",
                   s->cue_location.granularity, s->cue_location.steps,
                   100 * s->cue_location.actual_share, s->cue_location.g / 1000);
    }
    if (s->has_part_load) {
        printf("\npart load (non-standard, not a KPI): PUE per IT-load bin of P_DIT, matched "
               "15-minute intervals\n");
        if (s->part_load_why[0])
            printf("  %s\n", s->part_load_why);
        for (int i = 0; !s->part_load_why[0] && i < WT_STMT_BINS; i++) {
            const struct wt_stmt_bin *bn = &s->bins[i];
            if (bn->e_it_j > 0)
                printf(
                    "  %3.0f-%3.0f %%  %6zu intervals  PUE %.4f  (E_DC %.1f kWh, E_IT %.1f kWh)\n",
                    bn->from_pct, bn->to_pct, bn->slots, bn->e_dc_j / bn->e_it_j,
                    bn->e_dc_j / J_PER_KWH, bn->e_it_j / J_PER_KWH);
            else
                printf("  %3.0f-%3.0f %%  %6zu intervals  PUE n/a\n", bn->from_pct, bn->to_pct,
                       bn->slots);
        }
        if (!s->part_load_why[0])
            printf(
                "  %zu intervals not matched (a meter not covering them), %zu above P_DIT (in the "
                "last bin)\n",
                s->pl_skipped, s->pl_above);
    }
    if (s->nzones)
        printf("\npartial PUE per zone (pPUE, ISO/IEC 30134-2; label partial, from the meters with "
               "the zone):\n");
    for (size_t i = 0; i < s->nzones; i++) {
        const struct wt_stmt_zone *z = &s->zones[i];
        if (z->nit && z->e_it_j > 0)
            printf("  %-16s pPUE %.4f  (zone %.1f kWh from %s, E_IT %.1f kWh)\n", z->zone,
                   z->e_total_j / z->e_it_j, z->e_total_j / J_PER_KWH,
                   z->nfac ? "its facility_total meters" : "its IT and cooling meters",
                   z->e_it_j / J_PER_KWH);
        else
            printf("  %-16s pPUE n/a: %s\n", z->zone,
                   z->nit ? "its IT meters read 0 over the period" : "no IT meter in the zone");
    }
    print_tenants(s, "colocation, statement.tenants");
    printf("\nmeters (15-minute intervals of the period):\n");
    for (size_t i = 0; i < s->nmeters; i++) {
        const struct wt_stmt_meter *m = &s->meters[i];
        bool w = m->role == WT_ROLE_WATER || m->role == WT_ROLE_WATER_POTABLE;
        printf("  %-24s %-18s %14.3f %-3s %-10s %zu/%zu measured, estimated %.3f %s; %s\n", m->name,
               wt_role_name(m->role), w ? m->value : m->value / J_PER_KWH, w ? "m3" : "kWh",
               m->method, m->measured, m->slots, w ? m->estimated : m->estimated / J_PER_KWH,
               w ? "m3" : "kWh", fill_of(m));
    }
    printf("\nmethod: wattage %s; annual sums only (never averaged ratios); min_coverage %.2f; "
           "inputs sha256 %s\n",
           WT_VERSION, c->min_coverage, s->hash);
}

static void hand_num(cJSON *o, const char *k, double v)
{
    if (v >= 0)
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddStringToObject(o, k, "not given");
}

static void hand_str(cJSON *o, const char *k, const char *v)
{
    cJSON_AddStringToObject(o, k, v[0] ? v : "not given");
}

static int print_json(const struct wt_statement *s, const struct wt_stmt_conf *c)
{
    char a[40], b[40];
    wt_time_format(s->from_ns, 0, a, sizeof a);
    wt_time_format(s->to_ns, 0, b, sizeof b);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "standard", "iso30134");
    cJSON *p = cJSON_AddObjectToObject(r, "period");
    cJSON_AddStringToObject(p, "from", a);
    cJSON_AddStringToObject(p, "to", b);
    cJSON_AddStringToObject(p, "label", s->annual ? "annual" : "interim");
    cJSON *cat = cJSON_AddObjectToObject(r, "category");
    if (s->category)
        cJSON_AddNumberToObject(cat, "value", s->category);
    else
        cJSON_AddNullToObject(cat, "value");
    cJSON_AddStringToObject(cat, "text", s->category_text);
    cJSON_AddStringToObject(r, "boundary", s->boundary);
    cJSON *e = cJSON_AddObjectToObject(r, "energy");
    cJSON_AddNumberToObject(e, "e_dc_joules", s->e_dc_j);
    cJSON_AddNumberToObject(e, "e_it_joules", s->e_it_j);
    cJSON_AddNumberToObject(e, "w_in_cubic_meters", s->w_in_m3);
    cJSON_AddNumberToObject(e, "w_potable_cubic_meters", s->w_pot_m3);
    cJSON_AddNumberToObject(e, "e_reuse_joules", s->e_reuse_j);
    cJSON_AddNumberToObject(e, "e_renewable_joules", s->e_ren_j);
    cJSON_AddNumberToObject(e, "e_renewable_refused_joules", s->e_ren_refused_j);
    cJSON_AddNumberToObject(e, "e_onsite_used_joules", s->e_os_used_j);
    cJSON *ks = cJSON_AddArrayToObject(r, "kpis");
    for (size_t i = 0; i < s->nkpis; i++) {
        const struct wt_stmt_kpi *k = &s->kpis[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", k->name);
        cJSON_AddStringToObject(o, "symbol", k->symbol);
        cJSON_AddStringToObject(o, "formula", k->formula);
        cJSON_AddStringToObject(o, "standard", k->standard);
        cJSON_AddStringToObject(o, "unit", k->unit);
        if (k->available)
            cJSON_AddNumberToObject(o, "value", k->value);
        else
            cJSON_AddNullToObject(o, "value");
        cJSON_AddStringToObject(o, "why", k->why);
        cJSON_AddNumberToObject(o, "coverage", k->coverage);
        cJSON_AddNumberToObject(o, "estimated_share", k->estimated_share);
        cJSON_AddBoolToObject(o, "reportable", k->reportable);
        if (s->has_cue && strcmp(k->symbol, "CUE_location") == 0) {
            const struct wt_stmt_factor *f = &s->cue_location;
            cJSON *fo = cJSON_AddObjectToObject(o, "emission_factor");
            cJSON_AddStringToObject(fo, "method", "location-based");
            cJSON_AddStringToObject(fo, "zone", f->zone);
            cJSON_AddStringToObject(fo, "source", f->source[0] ? f->source : "none");
            cJSON_AddStringToObject(fo, "granularity", f->granularity[0] ? f->granularity : "none");
            cJSON_AddNumberToObject(fo, "steps", (double)f->steps);
            cJSON_AddNumberToObject(fo, "actual_share", f->actual_share);
            cJSON_AddNumberToObject(fo, "gco2e", f->g);
            if (f->sha256[0])
                cJSON_AddStringToObject(fo, "inputs_sha256", f->sha256);
        }
        if (strcmp(k->symbol, "CUE_market") == 0 && c->residual_g_per_kwh >= 0) {
            cJSON *fo = cJSON_AddObjectToObject(o, "emission_factor");
            cJSON_AddStringToObject(fo, "method", "market-based");
            cJSON_AddNumberToObject(fo, "residual_mix_g_per_kwh", c->residual_g_per_kwh);
            cJSON_AddStringToObject(fo, "source", c->residual_source);
            cJSON_AddNumberToObject(fo, "year", c->residual_year);
            if (s->has_cue_market) {
                cJSON_AddNumberToObject(fo, "covered_joules", s->market_covered_j);
                cJSON_AddNumberToObject(fo, "uncovered_joules", s->market_uncovered_j);
                cJSON_AddNumberToObject(fo, "gco2e", s->market_g);
            }
        }
        if (s->has_cfe && strcmp(k->symbol, "CFE_hourly") == 0) {
            const struct wt_stmt_factor *f = &s->cfe_supply;
            cJSON *fo = cJSON_AddObjectToObject(o, "supply");
            cJSON_AddStringToObject(fo, "zone", f->zone);
            cJSON_AddStringToObject(fo, "source", f->source[0] ? f->source : "none");
            cJSON_AddStringToObject(fo, "granularity", f->granularity[0] ? f->granularity : "none");
            cJSON_AddNumberToObject(fo, "points", (double)f->steps);
            cJSON_AddNumberToObject(fo, "matched_joules", f->g);
            cJSON_AddStringToObject(fo, "inputs_sha256", f->sha256);
        }
        cJSON_AddItemToArray(ks, o);
    }
    cJSON *ms = cJSON_AddArrayToObject(r, "meters");
    for (size_t i = 0; i < s->nmeters; i++) {
        const struct wt_stmt_meter *m = &s->meters[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "meter", m->name);
        cJSON_AddStringToObject(o, "role", wt_role_name(m->role));
        cJSON_AddNumberToObject(o, "value", m->value);
        cJSON_AddStringToObject(o, "unit", unit_of(m->role));
        cJSON_AddStringToObject(o, "method", m->method);
        cJSON_AddNumberToObject(o, "intervals", (double)m->slots);
        cJSON_AddNumberToObject(o, "measured_intervals", (double)m->measured);
        cJSON_AddNumberToObject(o, "coverage",
                                m->slots ? (double)m->measured / (double)m->slots : 0);
        cJSON_AddNumberToObject(o, "estimated", m->estimated);
        cJSON_AddStringToObject(o, "gap_fill", fill_of(m));
        cJSON_AddItemToArray(ms, o);
    }
    cJSON *zs = cJSON_AddArrayToObject(r, "zones");
    for (size_t i = 0; i < s->nzones; i++) {
        const struct wt_stmt_zone *z = &s->zones[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "zone", z->zone);
        cJSON_AddStringToObject(o, "label", "partial");
        cJSON_AddStringToObject(o, "basis", z->nfac ? "facility_total" : "it + cooling");
        cJSON_AddNumberToObject(o, "e_zone_joules", z->e_total_j);
        cJSON_AddNumberToObject(o, "e_it_joules", z->e_it_j);
        if (z->nit && z->e_it_j > 0) {
            cJSON_AddNumberToObject(o, "ppue", z->e_total_j / z->e_it_j);
        } else {
            cJSON_AddNullToObject(o, "ppue");
            cJSON_AddStringToObject(o, "why",
                                    z->nit ? "its IT meters read 0 over the period"
                                           : "no IT meter in the zone");
        }
        cJSON_AddItemToArray(zs, o);
    }
    if (s->ntenants) {
        cJSON *to = wt_stmt_tenants_json(s);
        if (!to || !cJSON_AddItemToObject(r, "tenants", to)) {
            cJSON_Delete(to);
            cJSON_Delete(r);
            return 1;
        }
    }
    cJSON *pl = cJSON_AddObjectToObject(r, "part_load");
    cJSON_AddStringToObject(pl, "label",
                            "non-standard: PUE per IT-load bin of P_DIT, from matched 15-minute "
                            "interval energy (not a standard KPI)");
    if (s->part_load_why[0]) {
        cJSON_AddStringToObject(pl, "why", s->part_load_why);
    } else {
        cJSON_AddNumberToObject(pl, "installed_it_kw", c->installed_it_kw);
        cJSON_AddNumberToObject(pl, "intervals_not_matched", (double)s->pl_skipped);
        cJSON_AddNumberToObject(pl, "intervals_above_p_dit", (double)s->pl_above);
        cJSON *bs = cJSON_AddArrayToObject(pl, "bins");
        for (int i = 0; i < WT_STMT_BINS; i++) {
            const struct wt_stmt_bin *bn = &s->bins[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "from_percent", bn->from_pct);
            cJSON_AddNumberToObject(o, "to_percent", bn->to_pct);
            cJSON_AddNumberToObject(o, "intervals", (double)bn->slots);
            cJSON_AddNumberToObject(o, "e_dc_joules", bn->e_dc_j);
            cJSON_AddNumberToObject(o, "e_it_joules", bn->e_it_j);
            if (bn->e_it_j > 0)
                cJSON_AddNumberToObject(o, "pue", bn->e_dc_j / bn->e_it_j);
            else
                cJSON_AddNullToObject(o, "pue");
            cJSON_AddItemToArray(bs, o);
        }
    }
    cJSON *me = cJSON_AddObjectToObject(r, "method");
    cJSON_AddStringToObject(me, "wattage_version", WT_VERSION);
    cJSON_AddNumberToObject(me, "interval_seconds", (double)(WT_STMT_SLOT_NS / WT_NS_PER_S));
    cJSON_AddNumberToObject(me, "min_coverage", c->min_coverage);
    cJSON_AddStringToObject(me, "sums", "annual sums only, never averaged ratios");
    cJSON *h = cJSON_AddObjectToObject(me, "hand_inputs");
    hand_str(h, "site", c->site);
    hand_num(h, "installed_it_kw", c->installed_it_kw);
    hand_num(h, "floor_area_m2", c->floor_area_m2);
    hand_num(h, "white_space_m2", c->white_space_m2);
    hand_str(h, "commissioned", c->commissioned);
    hand_str(h, "redundancy_electrical", c->redundancy_electrical);
    hand_str(h, "redundancy_cooling", c->redundancy_cooling);
    cJSON *rn = cJSON_AddArrayToObject(me, "renewables");
    for (size_t i = 0; i < c->nren; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", c->ren[i].type);
        cJSON_AddNumberToObject(o, "kwh", c->ren[i].kwh);
        cJSON_AddNumberToObject(o, "g_per_kwh", c->ren[i].g_per_kwh);
        cJSON_AddStringToObject(o, "ref", c->ren[i].ref);
        instrument_json(o, &c->ren[i], &s->instruments[i]);
        cJSON_AddItemToArray(rn, o);
    }
    hand_str(me, "market", c->market);
    cJSON_AddStringToObject(me, "inputs_sha256", s->hash);
    char *txt = cJSON_Print(r);
    cJSON_Delete(r);
    if (!txt)
        return 1;
    puts(txt);
    free(txt);
    return 0;
}

/* One invocation's settings, for each statement it prints. */
struct wt_stmt_run {
    struct wt_config cfg;
    const struct wt_topology *t;
    struct wt_stmt_conf sc;
    int64_t from, to;
    bool eu, de, csv, json;
    const char *schema;
    const char *schema_text;
    size_t schema_len;
    int year;
    bool per_site; /* --source: errors name the site */
};

static int print_eu_text(const char *js);
static int print_enefg_text(const char *js);

/* Builds the statement of r's standard from st with the hand inputs sc and prints it. 0, 1 (a
 * store that cannot be read) or 2 (bad input: named on stderr). */
static int one_statement(const struct wt_stmt_run *r, struct wt_store *st,
                         const struct wt_stmt_conf *sc)
{
    struct wt_statement s;
    struct wt_err err = {{0}};
    int rc = wt_statement_build(st, r->t, sc, r->from, r->to, &s, &err);
    if (rc == 0 && !r->eu && !r->de) {
        struct wt_carbon_conf *cf = malloc(sizeof *cf);
        if (!cf)
            rc = -ENOMEM;
        else if ((rc = wt_carbon_conf_from(&r->cfg, cf, &err)) == 0)
            if ((rc = wt_stmt_cue(st, r->t, cf, sc, &s, &err)) == 0)
                rc = wt_stmt_cfe(st, r->t, cf, sc, &s, &err);
        if (rc == 0)
            rc = wt_stmt_part_load(st, r->t, sc, &s, &err);
        free(cf);
        if (rc)
            wt_statement_free(&s);
    }
    if (rc) {
        bool named = r->per_site && sc->site[0]; /* which of the engine's sites */
        fprintf(stderr, "wattage report: %s%s%s\n", named ? sc->site : "", named ? ": " : "",
                err.msg[0] ? err.msg : strerror(-rc));
        return rc == -EINVAL ? 2 : 1;
    }
    if (r->eu) {
        char *js = NULL, *cs = NULL;
        rc = wt_stmt_eu(&s, sc, r->schema_text, r->schema_len, r->schema, r->year, &js,
                        r->csv ? &cs : NULL, &err);
        if (rc == 0 && !r->csv && !r->json) {
            /* beside the Annex file, never in it: the Annex has no per-customer field */
            if ((rc = print_eu_text(js)) == 0)
                print_tenants(&s, "colocation, statement.tenants; not part of the Annex file");
        } else if (rc == 0) {
            fputs(r->csv ? cs : js, stdout);
            if (!r->csv)
                putchar('\n');
        } else {
            fprintf(stderr, "wattage report: %s\n", err.msg[0] ? err.msg : strerror(-rc));
            rc = rc == -EINVAL ? 2 : 1;
        }
        free(js);
        free(cs);
    } else if (r->de) {
        char *js = NULL;
        int failed = 0;
        rc = wt_stmt_enefg(&s, sc, r->schema_text, r->schema_len, r->schema, &js, &failed, &err);
        if (rc == 0) {
            rc = r->json ? (puts(js), 0) : print_enefg_text(js);
            if (rc == 0 && !r->json) /* § 15: each customer's energy, told yearly */
                print_tenants(&s, "EnEfG § 15 customer information, statement.tenants");
        } else {
            fprintf(stderr, "wattage report: %s\n", err.msg[0] ? err.msg : strerror(-rc));
            rc = rc == -EINVAL ? 2 : 1;
        }
        free(js);
    } else {
        rc = r->json ? print_json(&s, sc) : (print_text(&s, sc), 0);
    }
    wt_statement_free(&s);
    return rc;
}

static const char *jstr(const cJSON *o, const char *k, const char *dflt)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return v ? v : dflt;
}

/* A number for a person: up to 10 significant digits, no trailing zeros. */
static const char *jnum(const cJSON *v, char *buf, size_t n)
{
    if (cJSON_IsNumber(v))
        snprintf(buf, n, "%.10g", v->valuedouble);
    else
        snprintf(buf, n, "n/a");
    return buf;
}

/* The EU file (wt_stmt_eu's JSON) for a person: each Annex symbol's value, its tag (Q: read in
 * a source quoting the Annex; M: not verified) and unit, or "n/a" and why it is not available. */
static int print_eu_text(const char *js)
{
    cJSON *d = cJSON_Parse(js);
    if (!d)
        return 1;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(d, "period");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(d, "method");
    const cJSON *it;
    char num[64];
    printf("EU EED data-centre KPIs (Delegated Regulation (EU) 2024/1364, Annex)\n");
    printf("schema:    %s (dated %s)\n", jstr(d, "schema", "?"), jstr(m, "schema_date", "?"));
    printf("site:      %s\n", jstr(d, "site", "not given"));
    printf("period:    %s .. %s (reporting year %s)\n", jstr(p, "from", "?"), jstr(p, "to", "?"),
           jnum(cJSON_GetObjectItemCaseSensitive(p, "year"), num, sizeof num));
    printf("category:  %s\nboundary:  %s\n\n", jstr(m, "category", "?"), jstr(m, "boundary", "?"));
    printf("%-10s %16s %-3s %s\n", "symbol", "value", "tag", "unit");
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(d, "kpis"))
    {
        const char *na = jstr(it, "not_available", NULL);
        printf("%-10s %16s %-3s %s%s%s\n", it->string,
               jnum(cJSON_GetObjectItemCaseSensitive(it, "value"), num, sizeof num),
               jstr(it, "tag", ""), jstr(it, "unit", ""), na ? "  not available: " : "",
               na ? na : "");
    }
    printf("\nhand inputs:");
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(d, "hand_inputs"))
        printf(" %s %s;", it->string, cJSON_GetStringValue(it) ? it->valuestring : "?");
    printf("\nmethod: wattage %s; min_coverage %s; inputs sha256 %s\n",
           jstr(m, "wattage_version", "?"),
           jnum(cJSON_GetObjectItemCaseSensitive(m, "min_coverage"), num, sizeof num),
           jstr(m, "inputs_sha256", "?"));
    cJSON_Delete(d);
    return 0;
}

/* The EnEfG checks (wt_stmt_enefg's JSON) for a person: each KPI against its limit, and the
 * limits not yet in force. */
static int print_enefg_text(const char *js)
{
    cJSON *d = cJSON_Parse(js);
    if (!d)
        return 1;
    const cJSON *it;
    char v[64], l[64];
    printf("EnEfG checks (Energieeffizienzgesetz)\n");
    printf("table:        %s (dated %s)\n", jstr(d, "table", "?"), jstr(d, "table_date", "?"));
    printf("commissioned: %s\nboundary:     %s\n\n", jstr(d, "commissioned", "?"),
           jstr(d, "boundary", "?"));
    printf("%-5s %12s %-4s %8s  %-14s %s\n", "kpi", "value", "kind", "limit", "result", "source");
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(d, "checks"))
    {
        const char *why = jstr(it, "why", NULL), *tag = jstr(it, "tag", "");
        printf("%-5s %12s %-4s %8s  %-14s %s%s%s%s\n", jstr(it, "kpi", "?"),
               jnum(cJSON_GetObjectItemCaseSensitive(it, "value"), v, sizeof v),
               jstr(it, "kind", "?"),
               jnum(cJSON_GetObjectItemCaseSensitive(it, "limit"), l, sizeof l),
               jstr(it, "result", "?"), jstr(it, "source", ""), tag[0] ? " [" : "", tag,
               tag[0] ? "]" : "");
        if (why)
            printf("%5s %s\n", "", why);
    }
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "checks")) == 0)
        printf("(no limit of the table applies to this site and period)\n");
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(d, "upcoming"))
        printf("upcoming: %s %s %s from %s (%s)\n", jstr(it, "kpi", "?"), jstr(it, "kind", "?"),
               jnum(cJSON_GetObjectItemCaseSensitive(it, "limit"), l, sizeof l),
               jstr(it, "in_force_from", "?"), jstr(it, "source", ""));
    printf("\nmethod: wattage %s; inputs sha256 %s\n", jstr(d, "wattage_version", "?"),
           jstr(d, "inputs_sha256", "?"));
    cJSON_Delete(d);
    return 0;
}

/* The series a statement reads (audit/statement.c, meters.c), copied from the engine 6 hours of
 * raw samples per query: a year is 1464 queries, not 8784, and a query's answer stays that of
 * 6 hours (a room of 500 outlets read every 10 s: about 1.1 M samples). */
#define STMT_SEL_METRICS                                                                           \
    "wattage_facility_(energy_joules_total|heat_joules_total|water_cubic_meters_total|"            \
    "fuel_cubic_meters_total|fuel_kilograms_total|power_watts)"
#define STMT_CHUNK_NS (6 * 3600 * WT_NS_PER_S)
#define STMT_PAD_NS (30 * WT_NS_PER_S)
#define STMT_MAX_SITES 64

/* v with '"' and '\\' escaped, for a PromQL string. */
static void promql_quote(char *out, size_t n, const char *v)
{
    size_t k = 0;
    for (; *v && k + 3 < n; v++) {
        if (*v == '"' || *v == '\\')
            out[k++] = '\\';
        out[k++] = *v;
    }
    out[k] = '\0';
}

/* The values of the site label among the engine's facility series of the period (*unlabelled:
 * the series without one). 0, or 1 with the error printed. */
static int source_sites(const char *source, int64_t from, int64_t to, char (*sites)[WT_TOPO_NAME],
                        size_t *nsites, double *unlabelled, double *series)
{
    struct wt_promsrc *ps = NULL;
    struct wt_promsrc_set set = {0};
    struct wt_err err = {{0}};
    char q[512], v[WT_LABELS_LEN];
    *nsites = 0;
    *unlabelled = *series = 0;
    if (wt_cli_open_source(source, &ps) != 0)
        return 2;
    snprintf(q, sizeof q,
             "count by (site) (count_over_time({__name__=~\"" STMT_SEL_METRICS
             "\",node!=\"\"}[%llds]))",
             (long long)((to - from + 2 * STMT_PAD_NS) / WT_NS_PER_S));
    int rc = wt_promsrc_query(ps, q, to + STMT_PAD_NS, &set, &err);
    wt_promsrc_close(ps);
    if (rc) {
        fprintf(stderr, "wattage report: --source %s: %s\n", source, err.msg);
        return 1;
    }
    for (size_t i = 0; i < set.n; i++) {
        const struct wt_promsrc_series *x = &set.s[i];
        double c = x->n ? x->pts[x->n - 1].v : 0;
        *series += c;
        if (wt_labels_get(x->labels, "site", v, sizeof v) != 0 || !v[0]) {
            *unlabelled += c;
        } else if (*nsites == STMT_MAX_SITES || strlen(v) >= WT_TOPO_NAME) {
            fprintf(stderr,
                    "wattage report: --source %s: site \"%.64s\" left out (at most %d "
                    "sites of at most %d characters)\n",
                    source, v, STMT_MAX_SITES, WT_TOPO_NAME - 1);
        } else {
            snprintf(sites[(*nsites)++], WT_TOPO_NAME, "%s", v);
        }
    }
    wt_promsrc_set_free(&set);
    return 0;
}

/* The hand inputs of a site's statement: statement's own for the site it names (or, when it
 * names none, for the engine's only site); else none given, so no site gets another's. */
static void site_conf(const struct wt_stmt_conf *sc, const char *site, size_t nsites,
                      struct wt_stmt_conf *out)
{
    *out = *sc;
    if (!site[0] || strcmp(sc->site, site) == 0 || (!sc->site[0] && nsites == 1)) {
        if (site[0])
            snprintf(out->site, sizeof out->site, "%s", site);
        return;
    }
    struct wt_stmt_conf none;
    if (wt_stmt_conf_parse("", NULL, &none, NULL) != 0) /* the defaults: nothing given */
        return;
    none.min_coverage = sc->min_coverage;
    snprintf(none.site, sizeof none.site, "%s", site);
    *out = none;
    if (sc->site[0])
        fprintf(stderr,
                "wattage report: site %s: statement's hand inputs are %s's: not given in its "
                "statement\n",
                site, sc->site);
    else
        fprintf(stderr,
                "wattage report: site %s: statement.site names none of the engine's %zu sites: "
                "statement's hand inputs are not given in its statement\n",
                site, nsites);
}

/* --source [--site]: the statement of each site of the engine (or of the one chosen), each
 * from a working store of its series. */
static int from_source(struct wt_stmt_run *r, const struct wt_cli_common *co, const char *want)
{
    if (!co->source) {
        fprintf(stderr, "wattage report: --site goes with --source (a store is one site)\n");
        return 2;
    }
    if (co->db) {
        fprintf(stderr, "wattage report: --source and --db: name one place to read\n");
        return 2;
    }
    char(*sites)[WT_TOPO_NAME] = calloc(STMT_MAX_SITES, WT_TOPO_NAME);
    size_t nsites = 0, pick = 0, nrun = 1;
    double unlabelled = 0, series = 0;
    if (!sites)
        return 1;
    int rc = source_sites(co->source, r->from, r->to, sites, &nsites, &unlabelled, &series);
    if (rc == 0 && series == 0) {
        fprintf(stderr,
                "wattage report: --source %s holds no facility meter series (" STMT_SEL_METRICS
                ") with a node label in the period (remote write adds the label; a scrape "
                "needs labels: {node: NAME})\n",
                co->source);
        rc = 2;
    }
    if (rc == 0 && want) {
        while (pick < nsites && strcmp(sites[pick], want) != 0)
            pick++;
        if (pick == nsites) {
            fprintf(stderr, "wattage report: --site %s: ", want);
            if (!nsites)
                fprintf(stderr, "the engine's series carry no site label (it holds one site: "
                                "leave --site out)");
            else
                fprintf(stderr, "unknown site; the engine holds sites:");
            for (size_t i = 0; i < nsites; i++)
                fprintf(stderr, "%s %s", i ? "," : "", sites[i]);
            fputc('\n', stderr);
            rc = 2;
        }
        nrun = 1;
    } else if (rc == 0 && nsites) {
        nrun = nsites;
    }
    if (rc == 0 && nsites && unlabelled > 0)
        fprintf(stderr,
                "wattage report: --source %s: %.0f facility series without a site label are in "
                "no site's statement\n",
                co->source, unlabelled);
    bool array = rc == 0 && nrun > 1 && (r->json || (r->eu && !r->csv));
    r->per_site = nsites > 0;
    if (array)
        puts("[");
    for (size_t i = 0; rc == 0 && i < nrun; i++) {
        const char *site = nsites ? sites[want ? pick : i] : "";
        char sel[WT_TOPO_NAME * 2 + 192], qs[WT_TOPO_NAME * 2];
        promql_quote(qs, sizeof qs, site);
        if (site[0])
            snprintf(sel, sizeof sel, "{__name__=~\"" STMT_SEL_METRICS "\",site=\"%s\"}", qs);
        else
            snprintf(sel, sizeof sel, "{__name__=~\"" STMT_SEL_METRICS "\"}");
        struct wt_stmt_conf *sc = malloc(sizeof *sc);
        struct wt_store *st = NULL;
        struct wt_err err = {{0}};
        char dir[WT_PATH_LEN] = "";
        size_t copied = 0, readings = 0;
        if (!sc) {
            rc = 1;
            break;
        }
        site_conf(&r->sc, site, nsites, sc);
        rc = wt_cli_source_store_every("report", co->source, sel, r->from, r->to, STMT_CHUNK_NS,
                                       dir, sizeof dir, &st, &copied, &readings, &err);
        size_t steps = 0;
        /* the grid's intensity too, with or without a node label: CUE reads it */
        if (rc == 0 && wt_cli_source_carbon(co->source, r->from, r->to, st, &steps, &err) != 0)
            rc = 1;
        if (rc == 1 && err.msg[0])
            fprintf(stderr, "wattage report: --source %s: %s\n", co->source, err.msg);
        if (rc == 0) {
            if (i > 0)
                puts(array ? "," : "");
            rc = one_statement(r, st, sc);
        }
        wt_store_close(st);
        wt_cli_source_cleanup(dir);
        free(sc);
    }
    if (array && rc == 0)
        puts("]");
    free(sites);
    return rc;
}

int wt_cli_report_standard(int argc, char **argv)
{
    struct wt_cli_common co = {0};
    const char *standard = NULL, *period = NULL, *schema = NULL, *site = NULL;
    bool csv = false;
    int c;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_report_standard, argc, argv, &co)) != -1) {
        switch (c) {
        case 'S':
            standard = optarg;
            break;
        case 'P':
            period = optarg;
            break;
        case 's':
            schema = optarg;
            break;
        case 'v':
            csv = true;
            break;
        case 'i':
            site = optarg;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (wt_cli_no_operands(&wt_cli_form_report_standard, argc, argv) != 0)
        return 2;
    bool eu = standard && strcmp(standard, "eu-eed") == 0;
    bool de = standard && strcmp(standard, "enefg") == 0;
    if (!standard || (!eu && !de && strcmp(standard, "iso30134") != 0)) {
        fprintf(stderr,
                "wattage report: --standard: expected iso30134, eu-eed or enefg (got \"%s\")\n",
                standard ? standard : "");
        return 2;
    }
    if (!schema)
        schema = de ? WT_ENEFG_TABLE_DEFAULT : WT_EU_SCHEMA_DEFAULT;
    int64_t from, to;
    if (period) {
        char *end;
        long y = strtol(period, &end, 10);
        if (end == period || *end || y < 1970 || y > 9998) {
            fprintf(stderr, "wattage report: --period: expected a year such as 2026 (got \"%s\")\n",
                    period);
            return 2;
        }
        if (co.from || co.to) {
            fprintf(stderr, "wattage report: --period and --from/--to: give one of them\n");
            return 2;
        }
        struct tm a = {.tm_year = (int)y - 1900, .tm_mday = 1};
        struct tm b = {.tm_year = (int)y + 1 - 1900, .tm_mday = 1};
        from = (int64_t)timegm(&a) * WT_NS_PER_S;
        to = (int64_t)timegm(&b) * WT_NS_PER_S;
    } else {
        if (!co.from || !co.to) {
            fprintf(stderr, "wattage report: --standard needs --period YEAR, or --from and --to\n");
            return 2;
        }
        int rc = wt_cli_window("report", &co, wt_now_real_ns(), &from, &to);
        if (rc)
            return rc;
    }
    if ((eu || de) && !period) {
        fprintf(stderr,
                "wattage report: --standard %s: the file is for a calendar year: "
                "give --period YEAR\n",
                standard);
        return 2;
    }
    char *schema_text = NULL;
    size_t schema_len = 0;
    if (eu || de) {
        FILE *sf = fopen(schema, "r");
        if (!sf) {
            fprintf(stderr, "wattage report: --schema: %s: %s\n", schema, strerror(errno));
            return 2;
        }
        schema_text = malloc(1 << 20);
        schema_len = schema_text ? fread(schema_text, 1, (1 << 20) - 1, sf) : 0;
        fclose(sf);
        if (!schema_text)
            return 1;
    }
    struct wt_stmt_run r = {.t = NULL,
                            .from = from,
                            .to = to,
                            .eu = eu,
                            .de = de,
                            .csv = csv,
                            .json = co.json,
                            .schema = schema,
                            .schema_text = schema_text,
                            .schema_len = schema_len,
                            .year = period ? atoi(period) : 0};
    struct wt_topology *t = NULL;
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    int rc = wt_cli_load_config(co.config, &r.cfg);
    if (rc) {
        free(schema_text);
        return rc;
    }
    if (wt_topology_load(&r.cfg, &t, &err) != 0 || wt_stmt_conf_from(&r.cfg, &r.sc, &err) != 0) {
        fprintf(stderr, "wattage report: %s\n", err.msg);
        rc = 2;
        goto out;
    }
    r.t = t;
    if (co.source || site) {
        rc = from_source(&r, &co, site);
        goto out;
    }
    if ((rc = wt_cli_open_store("report", &co, false, &r.cfg, &st)) != 0)
        goto out;
    rc = one_statement(&r, st, &r.sc);
    wt_store_close(st);
out:
    free(t);
    free(schema_text);
    wt_config_free(&r.cfg);
    return rc;
}
