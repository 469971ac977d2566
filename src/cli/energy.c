/* SPDX-License-Identifier: MIT */
/*
 * `wattage energy [--from T] [--to T] [--by gpu|node] [--json] [--db FILE] [-c FILE]
 * [--method auto|counter|integrated] [--raw] [--source URL]`: the energy
 * of every stored energy series over exactly [from, to] (see store/query.h for the rule), counter
 * first per GPU where it covers the window; with --source, of every node's series in a
 * Prometheus-compatible engine (store/promsrc.h), each row naming its node. JSON is a contract
 * other checks read:
 *   {"from": RFC3339, "to": RFC3339, "total_joules": X, "series": [{"gpu": "0", "uuid": "…",
 *    "model": "…", "energy_joules": X, "method": "counter"|"integrated", "coverage": 0..1,
 *    "uncertainty_joules": U}, …], "uncertainty_joules": U}
 * The method per GPU is store/query.h's wt_energy_counter_first: a GPU whose counter covers only
 * part of the window, less than its integrated series, is "integrated" and its row adds
 * "counter_coverage": the counter's coverage 0..1 (the table says "counter covers N %").
 * uncertainty_joules is the error bar of store/uncert.h (the total's: the sum of the listed
 * series' bars); integrated series add "sensor_accuracy_joules" (NVML's +-5 W over the covered
 * time, apart from the bar). With --source there is no bar (the engine's samples are not read
 * around the edges): the fields are left out.
 * Non-GPU series carry their own labels ("package", "domain"); imported ones add "node".
 * The total counts every listed series except RAPL sub-domains that another one contains
 * (core, uncore within package; psys contains all): those say "in_total": false.
 * --method counter or integrated where no GPU series of that kind covers any of the window is a
 * runtime failure (exit 1, said on stderr), not a total of 0.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/clockcheck.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "store/promsrc.h"
#include "store/query.h"
#include "store/store.h"

/* A RAPL domain that another series already contains. */
static bool in_total(const struct wt_energy_row *r)
{
    char d[32];
    if (strcmp(r->s.metric, "wattage_cpu_energy_joules_total") != 0)
        return true;
    if (wt_labels_get(r->s.labels, "domain", d, sizeof d) != 0)
        return true;
    return strcmp(d, "core") != 0 && strcmp(d, "uncore") != 0 && strcmp(d, "psys") != 0;
}

static void add_labels(cJSON *o, const struct wt_energy_row *r)
{
    size_t pos = 0;
    char k[64], v[WT_LABELS_LEN];
    if (r->s.node[0])
        cJSON_AddStringToObject(o, "node", r->s.node);
    while (wt_labels_next(r->s.labels, &pos, k, sizeof k, v, sizeof v) == 1) {
        if (strcmp(k, "method") != 0 && !cJSON_GetObjectItemCaseSensitive(o, k))
            cJSON_AddStringToObject(o, k, v);
    }
}

/* A short human name for a series: "gpu 0  NVIDIA H200" or "cpu package=0 domain=dram". */
static void describe(const struct wt_energy_row *r, char *buf, size_t n)
{
    char gpu[32], model[128];
    size_t off = 0;
    if (r->s.node[0])
        off = (size_t)snprintf(buf, n, "%s: ", r->s.node);
    if (off >= n)
        return;
    if (wt_metric_is_gpu_energy(r->s.metric) &&
        wt_labels_get(r->s.labels, "gpu", gpu, sizeof gpu) == 0) {
        if (wt_labels_get(r->s.labels, "model", model, sizeof model) != 0)
            model[0] = '\0';
        snprintf(buf + off, n - off, "gpu %s  %s", gpu, model);
        return;
    }
    const char *m = r->s.metric;
    if (strncmp(m, "wattage_", 8) == 0)
        m += 8;
    snprintf(buf + off, n - off, "%.*s {%s}", (int)strcspn(m, "_"), m, r->s.labels);
}

/* Some chosen GPU series covers part of the window. */
static bool gpu_method_covers(const struct wt_energy_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].chosen && wt_metric_is_gpu_energy(rows[i].s.metric) && rows[i].covered_s > 0)
            return true;
    return false;
}

static void human_energy(double j, char *buf, size_t n)
{
    snprintf(buf, n, "%.6f kWh  %12.3f Wh", j / 3.6e6, j / 3600.0);
}

struct node_sum {
    char node[64];
    double j, u, cov_min;
    int n;
};

static const struct wt_cli_opt energy_opts[] = {
    {"by", 'b', "gpu|node", "one line per GPU (default) or per node"},
    {"method", 'm', "auto|counter|integrated",
     "per GPU: the hardware counter, or integrated power where the counter covers only part "
     "of the window and power more (auto, the default), or only one kind"},
    {"json", WT_OPT_JSON, NULL, "JSON instead of a table"},
    {"raw", 'r', NULL, "raw readings only (no per-minute rollups)"},
    {"source", WT_OPT_SOURCE, "URL", WT_CLI_SOURCE_HELP},
    {NULL}};

const struct wt_cli_form wt_cli_form_energy = {
    "energy", "",    "the energy of each series over exactly [from, to], from the store",
    __FILE__, false, {wt_cli_window_opts, energy_opts, wt_cli_store_opts}};

int wt_cmd_energy(int argc, char **argv)
{
    const char *by = "gpu", *method = "auto";
    struct wt_cli_common co = {.from = "-1h", .to = "now"};
    int flags = 0, c, rc;
    struct wt_store *st = NULL;
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    struct wt_config cfg;
    struct wt_clock_warnings cw = {0};

    wt_config_defaults(&cfg);
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_energy, argc, argv, &co)) != -1) {
        switch (c) {
        case 'b':
            by = optarg;
            break;
        case 'r':
            flags |= WT_Q_RAW_ONLY;
            break;
        case 'm':
            method = optarg;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (wt_cli_no_operands(&wt_cli_form_energy, argc, argv))
        return 2;
    if (strcmp(by, "gpu") != 0 && strcmp(by, "node") != 0) {
        fprintf(stderr, "wattage energy: --by: expected gpu or node (got \"%s\")\n", by);
        return 2;
    }
    if (strcmp(method, "auto") != 0 && strcmp(method, "counter") != 0 &&
        strcmp(method, "integrated") != 0) {
        fprintf(stderr,
                "wattage energy: --method: expected auto, counter or integrated (got "
                "\"%s\")\n",
                method);
        return 2;
    }
    int64_t from, to;
    if ((rc = wt_cli_window("energy", &co, wt_now_real_ns(), &from, &to)) != 0)
        return rc;
    if (co.source) {
        struct wt_promsrc *ps = NULL;
        if (wt_cli_open_source(co.source, &ps) != 0)
            return 2;
        rc = wt_promsrc_energy(ps, from, to, &rows, &n, &err);
        wt_promsrc_close(ps);
    } else {
        rc = wt_cli_store("energy", &co, false, &cfg, &st);
        wt_config_free(&cfg);
        if (rc)
            return rc;
        rc = wt_store_energy(st, from, to, flags, &rows, &n, &err);
        /* the clock's trust over the window: warnings, never a failure */
        if (rc == 0 && wt_clockcheck_window(st, from, to,
                                            (double)cfg.daemon.clock_max_error_ns / 1e9, &cw) != 0)
            fprintf(stderr, "wattage energy: could not read the clock's state in the store\n");
    }
    if (rc != 0) {
        fprintf(stderr, "wattage energy: %s\n", err.msg);
        wt_store_close(st);
        return 1;
    }

    for (size_t i = 0; i < n && strcmp(method, "auto") != 0; i++) {
        if (wt_metric_is_gpu_energy(rows[i].s.metric))
            rows[i].chosen = strcmp(rows[i].method, method) == 0;
    }
    if (strcmp(method, "auto") != 0 && !gpu_method_covers(rows, n)) {
        /* Asked for one kind by name: a total of 0 would read as "no energy used". */
        fprintf(stderr, "wattage energy: --method %s: no GPU %s in the store covers %s .. %s%s\n",
                method, strcmp(method, "counter") == 0 ? "energy counter" : "integrated energy",
                co.from, co.to,
                strcmp(method, "counter") == 0
                    ? " (GPUs without a counter and imported logs have integrated power only: "
                      "try --method integrated or auto)"
                    : "");
        free(rows);
        wt_store_close(st);
        return 1;
    }
    char fs[40], ts[40], host[64] = "localhost";
    wt_time_format(from, from % WT_NS_PER_S ? 1 : 0, fs, sizeof fs);
    wt_time_format(to, to % WT_NS_PER_S ? 1 : 0, ts, sizeof ts);
    gethostname(host, sizeof host - 1);
    double total = 0, total_u = 0;
    bool bars = !co.source; /* store/uncert.h's bars: the local store's rows only */
    struct node_sum *nodes = calloc(n ? n : 1, sizeof *nodes);
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].chosen || !in_total(&rows[i]))
            continue;
        total += rows[i].energy_j;
        total_u += rows[i].uncertainty_j;
        const char *node = rows[i].s.node[0] ? rows[i].s.node : host;
        size_t k = 0;
        while (k < nn && strcmp(nodes[k].node, node) != 0)
            k++;
        if (k == nn) {
            snprintf(nodes[nn].node, sizeof nodes[nn].node, "%s", node);
            nodes[nn++].cov_min = 1;
        }
        nodes[k].j += rows[i].energy_j;
        nodes[k].u += rows[i].uncertainty_j;
        nodes[k].n++;
        if (rows[i].coverage < nodes[k].cov_min)
            nodes[k].cov_min = rows[i].coverage;
    }

    if (co.json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "from", fs);
        cJSON_AddStringToObject(root, "to", ts);
        cJSON_AddNumberToObject(root, "total_joules", total);
        if (bars)
            cJSON_AddNumberToObject(root, "uncertainty_joules", total_u);
        cJSON *arr = cJSON_AddArrayToObject(root, "series");
        if (strcmp(by, "node") == 0) {
            for (size_t k = 0; k < nn; k++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "node", nodes[k].node);
                cJSON_AddNumberToObject(o, "energy_joules", nodes[k].j);
                if (bars)
                    cJSON_AddNumberToObject(o, "uncertainty_joules", nodes[k].u);
                cJSON_AddNumberToObject(o, "coverage", nodes[k].cov_min);
                cJSON_AddNumberToObject(o, "series", nodes[k].n);
                cJSON_AddItemToArray(arr, o);
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                if (!rows[i].chosen)
                    continue;
                cJSON *o = cJSON_CreateObject();
                add_labels(o, &rows[i]);
                cJSON_AddNumberToObject(o, "energy_joules", rows[i].energy_j);
                cJSON_AddStringToObject(o, "method", rows[i].method);
                cJSON_AddNumberToObject(o, "coverage", rows[i].coverage);
                if (rows[i].counter_partial)
                    cJSON_AddNumberToObject(o, "counter_coverage", rows[i].counter_coverage);
                if (bars)
                    cJSON_AddNumberToObject(o, "uncertainty_joules", rows[i].uncertainty_j);
                if (bars && rows[i].sensor_j > 0)
                    cJSON_AddNumberToObject(o, "sensor_accuracy_joules", rows[i].sensor_j);
                if (!in_total(&rows[i]))
                    cJSON_AddFalseToObject(o, "in_total");
                cJSON_AddItemToArray(arr, o);
            }
        }
        if (wt_clockcheck_json(root, &cw) != 0)
            fprintf(stderr, "wattage energy: out of memory\n");
        char *txt = cJSON_PrintUnformatted(root);
        if (txt)
            printf("%s\n", txt);
        cJSON_free(txt);
        cJSON_Delete(root);
    } else {
        char e[64], name[WT_LABELS_LEN + 96], u[48] = "", cc[48];
        printf("energy from %s to %s (%.0f s)\n", fs, ts, (double)(to - from) / 1e9);
        human_energy(total, e, sizeof e);
        if (bars)
            snprintf(u, sizeof u, "  \u00b1 %8.3g J", total_u);
        printf("  %-44s %s%s\n", "total", e, u);
        if (strcmp(by, "node") == 0) {
            for (size_t k = 0; k < nn; k++) {
                human_energy(nodes[k].j, e, sizeof e);
                if (bars)
                    snprintf(u, sizeof u, "  \u00b1 %8.3g J", nodes[k].u);
                printf("  %-44s %s%s  coverage %5.1f%%\n", nodes[k].node, e, u,
                       100 * nodes[k].cov_min);
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                if (!rows[i].chosen)
                    continue;
                describe(&rows[i], name, sizeof name);
                human_energy(rows[i].energy_j, e, sizeof e);
                if (bars)
                    snprintf(u, sizeof u, "  \u00b1 %8.3g J", rows[i].uncertainty_j);
                cc[0] = '\0';
                if (rows[i].counter_partial)
                    snprintf(cc, sizeof cc, "  (counter covers %.1f%%)",
                             100 * rows[i].counter_coverage);
                printf("  %-44.44s %s%s  %-10s coverage %5.1f%%%s%s\n", name, e, u, rows[i].method,
                       100 * rows[i].coverage, in_total(&rows[i]) ? "" : "  (within another)", cc);
            }
        }
        if (n == 0)
            printf("  (no energy series %s in this window)\n",
                   co.source ? "in the source" : "stored");
        wt_clockcheck_print(stdout, &cw);
    }
    free(nodes);
    free(rows);
    wt_store_close(st);
    return 0;
}
