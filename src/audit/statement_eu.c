/* SPDX-License-Identifier: MIT */
/*
 * The EU EED file (statement_eu.h): the Annex symbols, their units and where each value comes
 * from are read from the dated schema file, not from code, so that the 2026 amendment is a new
 * schema file; each symbol becomes a value with its unit, or "not available" with a reason.
 */
#include "audit/statement_eu.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

#define J_PER_KWH 3.6e6

static bool has_role(const struct wt_statement *s, enum wt_role r)
{
    for (size_t i = 0; i < s->nmeters; i++)
        if (s->meters[i].role == r)
            return true;
    return false;
}

static const struct wt_stmt_kpi *kpi_of(const struct wt_statement *s, const char *sym)
{
    for (size_t i = 0; i < s->nkpis; i++)
        if (strcmp(s->kpis[i].symbol, sym) == 0)
            return &s->kpis[i];
    return NULL;
}

/* The instruments of type that count in REF (statement.h: wt_stmt_instruments), kWh. */
static double ren_sum(const struct wt_statement *s, const struct wt_stmt_conf *c, const char *type)
{
    double k = 0;
    for (size_t i = 0; i < c->nren; i++)
        if (strcmp(c->ren[i].type, type) == 0 && s->instruments[i].in_ref)
            k += c->ren[i].kwh;
    return k;
}

/* The value of source src: 1 with *v (and *kpi for a ratio), 0 with why, -EINVAL unknown. */
static int source_value(const struct wt_statement *s, const struct wt_stmt_conf *c, const char *src,
                        double *v, const struct wt_stmt_kpi **kpi, char *why, size_t wn)
{
    *kpi = NULL;
    struct {
        const char *name;
        double val;
        const char *key;
    } hand[] = {{"hand:installed_it_kw", c->installed_it_kw, "installed_it_kw"},
                {"hand:floor_area_m2", c->floor_area_m2, "floor_area_m2"},
                {"hand:white_space_m2", c->white_space_m2, "white_space_m2"}};
    for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
        if (strcmp(src, hand[i].name) == 0) {
            if (hand[i].val < 0) {
                snprintf(why, wn, "not given: statement.%s is not in the configuration",
                         hand[i].key);
                return 0;
            }
            *v = hand[i].val;
            return 1;
        }
    }
    if (strcmp(src, "e_dc_kwh") == 0) {
        *v = round(s->e_dc_j / J_PER_KWH);
        return 1;
    }
    if (strcmp(src, "e_it_kwh") == 0) {
        *v = round(s->e_it_j / J_PER_KWH);
        return 1;
    }
    if (strcmp(src, "w_in_m3") == 0 || strcmp(src, "w_pot_m3") == 0) {
        bool pot = src[2] == 'p';
        if (!has_role(s, pot ? WT_ROLE_WATER_POTABLE : WT_ROLE_WATER)) {
            snprintf(why, wn, "no meter with role %s", pot ? "water_potable" : "water_litres");
            return 0;
        }
        *v = round((pot ? s->w_pot_m3 : s->w_in_m3) * 1000) / 1000; /* whole litres */
        return 1;
    }
    if (strcmp(src, "e_reuse_kwh") == 0) {
        if (!has_role(s, WT_ROLE_HEAT_REUSED)) {
            snprintf(why, wn, "no meter with role heat_reused");
            return 0;
        }
        *v = round(s->e_reuse_j / J_PER_KWH);
        return 1;
    }
    if (strcmp(src, "e_res_goo_kwh") == 0 || strcmp(src, "e_res_ppa_kwh") == 0) {
        const char *type = src[6] == 'g' ? "goo" : "ppa";
        bool any = false;
        for (size_t i = 0; i < c->nren; i++)
            any |= strcmp(c->ren[i].type, type) == 0;
        if (!any) {
            snprintf(why, wn, "no instrument of type %s in statement.renewables", type);
            return 0;
        }
        *v = round(ren_sum(s, c, type));
        return 1;
    }
    if (strcmp(src, "e_res_os_kwh") == 0) {
        if (!has_role(s, WT_ROLE_ONSITE_GENERATION)) {
            snprintf(why, wn, "no meter with role onsite_generation");
            return 0;
        }
        *v = round(s->e_os_used_j / J_PER_KWH);
        return 1;
    }
    if (strcmp(src, "e_res_tot_kwh") == 0) {
        const struct wt_stmt_kpi *k = kpi_of(s, "REF");
        if (k && !k->available) {
            snprintf(why, wn, "%s", k->why);
            return 0;
        }
        *v = round(s->e_ren_j / J_PER_KWH);
        return 1;
    }
    static const char *const ratios[][2] = {
        {"pue", "PUE"}, {"wue", "WUE"}, {"erf", "ERF"}, {"ref", "REF"}};
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(src, ratios[i][0]) != 0)
            continue;
        const struct wt_stmt_kpi *k = kpi_of(s, ratios[i][1]);
        if (!k || !k->available || !k->reportable) {
            snprintf(why, wn, "%s", k && k->why[0] ? k->why : "not computed");
            return 0;
        }
        *kpi = k;
        *v = k->value;
        return 1;
    }
    if (strcmp(src, "none") == 0) {
        snprintf(why, wn, "not measured by wattage: enter it from the site's records");
        return 0;
    }
    return -EINVAL;
}

static void csv_field(FILE *f, const char *v)
{
    if (!strpbrk(v, ",\"\n")) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

int wt_stmt_eu(const struct wt_statement *s, const struct wt_stmt_conf *c, const char *schema,
               size_t len, const char *schema_name, int year, char **json, char **csv,
               struct wt_err *err)
{
    *json = NULL;
    if (csv)
        *csv = NULL;
    cJSON *sc = cJSON_ParseWithLength(schema, len);
    cJSON *out = NULL;
    char *cbuf = NULL;
    size_t clen = 0;
    FILE *cf = NULL;
    int rc = -EINVAL;
    if (!sc) {
        wt_err_set(err, "%s: not JSON", schema_name);
        goto out;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(sc, "$id");
    const cJSON *xw = cJSON_GetObjectItemCaseSensitive(sc, "x-wattage");
    const cJSON *date = cJSON_GetObjectItemCaseSensitive(xw, "date");
    const cJSON *props;
    props = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sc, "properties"),
                                         "kpis"),
        "properties");
    if (!cJSON_IsString(id) || !cJSON_IsString(date) || !cJSON_IsObject(props)) {
        wt_err_set(err,
                   "%s: expected a wattage schema ($id, x-wattage.date, "
                   "properties.kpis.properties)",
                   schema_name);
        goto out;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "schema", id->valuestring);
    cJSON *p = cJSON_AddObjectToObject(out, "period");
    char a[40], b[40];
    wt_time_format(s->from_ns, 0, a, sizeof a);
    wt_time_format(s->to_ns, 0, b, sizeof b);
    cJSON_AddNumberToObject(p, "year", year);
    cJSON_AddStringToObject(p, "from", a);
    cJSON_AddStringToObject(p, "to", b);
    cJSON_AddStringToObject(out, "site", c->site[0] ? c->site : "not given");
    cJSON *ks = cJSON_AddObjectToObject(out, "kpis");
    if (csv) {
        cf = open_memstream(&cbuf, &clen);
        if (!cf) {
            rc = -ENOMEM;
            goto out;
        }
        fputs("symbol,value,unit,status,reason,tag\n", cf);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, props)
    {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, "x-wattage");
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(x, "source");
        const cJSON *unit = cJSON_GetObjectItemCaseSensitive(x, "unit");
        const cJSON *tag = cJSON_GetObjectItemCaseSensitive(x, "tag");
        if (!cJSON_IsString(src) || !cJSON_IsString(unit) || !cJSON_IsString(tag)) {
            wt_err_set(err, "%s: kpis.%s: expected x-wattage.source, unit and tag", schema_name,
                       e->string);
            goto out;
        }
        double v = 0;
        const struct wt_stmt_kpi *k = NULL;
        /* a KPI's reason is copied whole (it can be as long as wt_stmt_kpi.why) */
        char why[sizeof k->why] = "";
        int got = source_value(s, c, src->valuestring, &v, &k, why, sizeof why);
        if (got < 0) {
            wt_err_set(err, "%s: kpis.%s: unknown source \"%s\"", schema_name, e->string,
                       src->valuestring);
            goto out;
        }
        cJSON *o = cJSON_AddObjectToObject(ks, e->string);
        char num[64] = "";
        if (got) {
            cJSON_AddNumberToObject(o, "value", v);
            snprintf(num, sizeof num, "%.15g", v);
        } else {
            cJSON_AddStringToObject(o, "not_available", why);
        }
        cJSON_AddStringToObject(o, "unit", unit->valuestring);
        cJSON_AddStringToObject(o, "tag", tag->valuestring);
        if (k) {
            cJSON_AddNumberToObject(o, "coverage", k->coverage);
            cJSON_AddNumberToObject(o, "estimated_share", k->estimated_share);
        }
        if (cf) {
            csv_field(cf, e->string);
            fputc(',', cf);
            fputs(num, cf);
            fputc(',', cf);
            csv_field(cf, unit->valuestring);
            fputs(got ? ",value," : ",not available,", cf);
            csv_field(cf, why);
            fputc(',', cf);
            csv_field(cf, tag->valuestring);
            fputc('\n', cf);
        }
    }
    cJSON *h = cJSON_AddObjectToObject(out, "hand_inputs");
    cJSON_AddStringToObject(h, "commissioned", c->commissioned[0] ? c->commissioned : "not given");
    cJSON_AddStringToObject(h, "redundancy_electrical",
                            c->redundancy_electrical[0] ? c->redundancy_electrical : "not given");
    cJSON_AddStringToObject(h, "redundancy_cooling",
                            c->redundancy_cooling[0] ? c->redundancy_cooling : "not given");
    cJSON *m = cJSON_AddObjectToObject(out, "method");
    cJSON_AddStringToObject(m, "wattage_version", WT_VERSION);
    cJSON_AddStringToObject(m, "schema_date", date->valuestring);
    cJSON_AddStringToObject(m, "category", s->category_text);
    cJSON_AddStringToObject(m, "boundary", s->boundary);
    cJSON_AddNumberToObject(m, "min_coverage", c->min_coverage);
    cJSON_AddStringToObject(m, "inputs_sha256", s->hash);
    *json = cJSON_Print(out);
    if (!*json) {
        rc = -ENOMEM;
        goto out;
    }
    if (cf) {
        if (fclose(cf) != 0) {
            cf = NULL;
            rc = -ENOMEM;
            goto out;
        }
        cf = NULL;
        *csv = cbuf;
        cbuf = NULL;
    }
    rc = 0;
out:
    if (cf)
        fclose(cf);
    free(cbuf);
    if (rc && *json) {
        free(*json);
        *json = NULL;
    }
    cJSON_Delete(out);
    cJSON_Delete(sc);
    return rc;
}
