/* SPDX-License-Identifier: MIT */
/* EnEfG checks from a dated table (statement_enefg.h). */
#include "audit/statement_enefg.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

/* "YYYY-MM-DD" or "YYYY-MM" (the first of the month) as ns; -1 when not one. */
static int64_t date_ns(const char *s)
{
    int y, m, d = 1;
    char tail;
    size_t n = strlen(s);
    if (n == 10  ? sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3
        : n == 7 ? sscanf(s, "%4d-%2d%c", &y, &m, &tail) != 2
                 : 1)
        return -1;
    if (m < 1 || m > 12 || d < 1 || d > 31)
        return -1;
    struct tm t = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d};
    return (int64_t)timegm(&t) * WT_NS_PER_S;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int wt_stmt_enefg(const struct wt_statement *s, const struct wt_stmt_conf *c, const char *tab,
                  size_t len, const char *name, char **json, int *failed, struct wt_err *err)
{
    *json = NULL;
    *failed = 0;
    if (!c->commissioned[0])
        return wt_err_set(err, "statement.commissioned: required for --standard enefg (the "
                               "limits depend on the commissioning date); not given");
    int64_t comm = date_ns(c->commissioned);
    cJSON *t = cJSON_ParseWithLength(tab, len);
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(t, "rules");
    if (!t || !cJSON_IsArray(rules) || !str_of(t, "$id") || !str_of(t, "date")) {
        cJSON_Delete(t);
        return wt_err_set(err, "%s: expected a wattage EnEfG table ($id, date, rules)", name);
    }
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "table", str_of(t, "$id"));
    cJSON_AddStringToObject(out, "table_date", str_of(t, "date"));
    cJSON_AddStringToObject(out, "commissioned", c->commissioned);
    cJSON *checks = cJSON_AddArrayToObject(out, "checks");
    cJSON *up = cJSON_AddArrayToObject(out, "upcoming");
    static const char *const kpis[] = {"PUE", "ERF", "REF"};
    int rc = 0;
    for (size_t q = 0; q < 3 && rc == 0; q++) {
        const cJSON *best = NULL;
        double lim = 0;
        bool is_max = true;
        const cJSON *r;
        size_t idx = 0;
        cJSON_ArrayForEach(r, rules)
        {
            idx++;
            const char *kpi = str_of(r, "kpi");
            const cJSON *mx = cJSON_GetObjectItemCaseSensitive(r, "max");
            const cJSON *mn = cJSON_GetObjectItemCaseSensitive(r, "min");
            const char *cb = str_of(r, "commissioned_before"), *cf = str_of(r, "commissioned_from");
            const char *inf = str_of(r, "in_force_from");
            const cJSON *ya = cJSON_GetObjectItemCaseSensitive(r, "years_after_commissioning");
            if (!kpi || cJSON_IsNumber(mx) == cJSON_IsNumber(mn) || !str_of(r, "source") ||
                (cb && date_ns(cb) < 0) || (cf && date_ns(cf) < 0) || (inf && date_ns(inf) < 0)) {
                rc = wt_err_set(err,
                                "%s: rules[%zu]: expected kpi, max or min, source, and dates "
                                "YYYY-MM-DD",
                                name, idx - 1);
                break;
            }
            if (strcmp(kpi, kpis[q]) != 0)
                continue;
            if ((cb && !(comm < date_ns(cb))) || (cf && !(comm >= date_ns(cf))))
                continue;
            int64_t from = comm;
            if (inf)
                from = date_ns(inf);
            else if (cJSON_IsNumber(ya)) {
                time_t ct = (time_t)(comm / WT_NS_PER_S);
                struct tm tm;
                gmtime_r(&ct, &tm);
                tm.tm_year += (int)ya->valuedouble;
                from = (int64_t)timegm(&tm) * WT_NS_PER_S;
            }
            bool rmax = cJSON_IsNumber(mx);
            double v = rmax ? mx->valuedouble : mn->valuedouble;
            if (from > s->from_ns) {
                cJSON *u = cJSON_CreateObject();
                char d[40];
                wt_time_format(from, 0, d, sizeof d);
                cJSON_AddStringToObject(u, "kpi", kpi);
                cJSON_AddStringToObject(u, "kind", rmax ? "max" : "min");
                cJSON_AddNumberToObject(u, "limit", v);
                cJSON_AddStringToObject(u, "in_force_from", d);
                cJSON_AddStringToObject(u, "source", str_of(r, "source"));
                cJSON_AddItemToArray(up, u);
                continue;
            }
            if (!best || (rmax ? v < lim : v > lim)) {
                best = r;
                lim = v;
                is_max = rmax;
            }
        }
        if (rc || !best)
            continue;
        const struct wt_stmt_kpi *k = NULL;
        for (size_t i = 0; i < s->nkpis; i++)
            if (strcmp(s->kpis[i].symbol, kpis[q]) == 0)
                k = &s->kpis[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kpi", kpis[q]);
        cJSON_AddStringToObject(o, "kind", is_max ? "max" : "min");
        cJSON_AddNumberToObject(o, "limit", lim);
        cJSON_AddStringToObject(o, "source", str_of(best, "source"));
        cJSON_AddStringToObject(o, "tag", str_of(best, "tag") ? str_of(best, "tag") : "");
        if (!k || !k->available || !k->reportable || !s->annual) {
            cJSON_AddNullToObject(o, "value");
            cJSON_AddStringToObject(o, "result", "not available");
            cJSON_AddStringToObject(o, "why",
                                    !s->annual       ? "the limits are annual: give --period YEAR"
                                    : k && k->why[0] ? k->why
                                                     : "not computed");
        } else {
            bool pass = is_max ? k->value <= lim : k->value >= lim;
            cJSON_AddNumberToObject(o, "value", k->value);
            cJSON_AddStringToObject(o, "result", pass ? "pass" : "fail");
            *failed += !pass;
        }
        cJSON_AddItemToArray(checks, o);
    }
    if (rc == 0 && s->ntenants) { /* § 15: colocation customers are told their energy yearly */
        cJSON *to = wt_stmt_tenants_json(s);
        if (!to || !cJSON_AddItemToObject(out, "tenants", to)) {
            cJSON_Delete(to);
            rc = -ENOMEM;
        }
    }
    cJSON_AddStringToObject(out, "boundary", s->boundary);
    cJSON_AddStringToObject(out, "wattage_version", WT_VERSION);
    cJSON_AddStringToObject(out, "inputs_sha256", s->hash);
    if (rc == 0) {
        *json = cJSON_Print(out);
        if (!*json)
            rc = -ENOMEM;
    }
    cJSON_Delete(out);
    cJSON_Delete(t);
    return rc;
}
