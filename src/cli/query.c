/* SPDX-License-Identifier: MIT */
/*
 * `wattage query SERIES [--from T] [--to T] [--step S] [--csv|--json] [--unix] [--db FILE]`:
 * the stored readings of every series matching SERIES (`metric` or `metric{key="value",...}`),
 * optionally downsampled to one point per step (mean of gauges, last value of counters), so
 * users can plot or export what the daemon recorded. Plain output is one line per point:
 *
 *     2026-11-29T18:00:00.000Z  wattage_gpu_power_watts{gpu="0",...}  312.5
 */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "serve/expo.h"
#include "store/query.h"
#include "store/store.h"

/* CSV field: quoted, with inner quotes doubled. */
static void csv_field(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void series_name(const struct wt_series_info *si, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s%s%s%s", si->node[0] ? si->node : "", si->node[0] ? ":" : "",
             si->metric, si->labels[0] ? "{" : "", si->labels, si->labels[0] ? "}" : "");
}

static const struct wt_cli_opt query_opts[] = {
    {"step", 's', "S",
     "one point per S, a duration such as 10s (mean of gauges, last of counters)"},
    {"csv", 'C', NULL, "CSV instead of a table"},
    {"json", WT_OPT_JSON, NULL, "JSON instead of a table"},
    {"unix", 'U', NULL,
     "times as unix seconds to the nanosecond the store keeps (a string in JSON), not RFC 3339 "
     "to the millisecond"},
    {NULL}};

const struct wt_cli_form wt_cli_form_query = {
    "query",
    "SERIES",
    "the stored readings of each series matching SERIES (metric or metric{key=\"value\",...}), "
    "downsampled on request",
    __FILE__,
    false,
    {wt_cli_window_opts, query_opts, wt_cli_store_opts}};

int wt_cmd_query(int argc, char **argv)
{
    const char *sel = NULL;
    struct wt_cli_common co = {0};
    int64_t step = 0, from, to;
    bool csv = false, unix_s = false;
    int c, rc;

    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_query, argc, argv, &co)) != -1) {
        switch (c) {
        case 's':
            if (wt_duration_parse(optarg, &step) != 0) {
                fprintf(stderr,
                        "wattage query: --step: expected a duration > 0 like 10s or 1m "
                        "(got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case 'C':
            csv = true;
            break;
        case 'U':
            unix_s = true;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "wattage query: expected one SERIES, e.g. "
                        "'wattage_gpu_power_watts{gpu=\"0\"}'\n");
        return 2;
    }
    sel = argv[optind];
    if (csv && co.json) {
        fprintf(stderr, "wattage query: --csv and --json exclude each other\n");
        return 2;
    }
    if ((rc = wt_cli_window("query", &co, wt_now_real_ns(), &from, &to)) != 0)
        return rc;

    struct wt_store *st = NULL;
    struct wt_series_info *si = NULL;
    size_t ns = 0;
    struct wt_err err = {{0}};
    rc = wt_cli_store("query", &co, false, NULL, &st);
    if (rc)
        return rc;
    if (wt_store_series(st, sel, false, &si, &ns, &err) != 0) {
        fprintf(stderr, "wattage query: %s\n", err.msg);
        wt_store_close(st);
        return 2;
    }
    if (ns == 0)
        fprintf(stderr, "wattage query: no stored series matches %s\n", sel);

    cJSON *root = co.json ? cJSON_CreateObject() : NULL;
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "series") : NULL;
    char ts[40], name[WT_LABELS_LEN + 200];
    rc = 0;
    if (csv)
        printf("time,series,value\n");
    for (size_t i = 0; i < ns && rc == 0; i++) {
        struct wt_point *p = NULL;
        size_t np = 0;
        if (wt_store_points(st, &si[i], from, to, step, &p, &np) != 0) {
            fprintf(stderr, "wattage query: reading %s failed\n", si[i].metric);
            rc = 1;
            break;
        }
        series_name(&si[i], name, sizeof name);
        cJSON *o = NULL, *pts = NULL;
        if (co.json) {
            o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "metric", si[i].metric);
            cJSON *lab = cJSON_AddObjectToObject(o, "labels");
            size_t pos = 0;
            char k[64], v[WT_LABELS_LEN];
            while (wt_labels_next(si[i].labels, &pos, k, sizeof k, v, sizeof v) == 1)
                cJSON_AddStringToObject(lab, k, v);
            if (si[i].node[0])
                cJSON_AddStringToObject(o, "node", si[i].node);
            pts = cJSON_AddArrayToObject(o, "points");
            cJSON_AddItemToArray(arr, o);
        }
        for (size_t k = 0; k < np; k++) {
            if (unix_s) /* floor division: a time before 1970 still reads right */
                snprintf(ts, sizeof ts, "%lld.%09lld",
                         (long long)(p[k].t_ns / WT_NS_PER_S - (p[k].t_ns % WT_NS_PER_S < 0)),
                         (long long)((p[k].t_ns % WT_NS_PER_S + WT_NS_PER_S) % WT_NS_PER_S));
            else
                wt_time_format(p[k].t_ns, 1, ts, sizeof ts);
            if (co.json) {
                cJSON *pt = cJSON_CreateArray();
                cJSON_AddItemToArray(pt, cJSON_CreateString(ts));
                /* cJSON's own numbers can be an ulp off; the stored double, exactly */
                char num[40];
                wt_expo_value(p[k].v, num, sizeof num);
                cJSON_AddItemToArray(pt,
                                     isfinite(p[k].v) ? cJSON_CreateRaw(num) : cJSON_CreateNull());
                cJSON_AddItemToArray(pts, pt);
            } else if (csv) {
                printf("%s,", ts);
                csv_field(name);
                printf(",%.17g\n", p[k].v);
            } else {
                printf("%s  %s  %.10g\n", ts, name, p[k].v);
            }
        }
        free(p);
    }
    if (root) {
        char *txt = cJSON_PrintUnformatted(root);
        if (txt)
            printf("%s\n", txt);
        cJSON_free(txt);
        cJSON_Delete(root);
    }
    free(si);
    wt_store_close(st);
    return rc;
}
