/* SPDX-License-Identifier: MIT */
/*
 * `wattage report --from T --to T [--db FILE | --source URL] [-c FILE] [-o FILE]
 * [--format html|json|md]`: the audit report of a window (audit/report.h): one self-contained
 * HTML file (inline SVG and styles, no script, no external reference), or its tables and findings
 * as Markdown or JSON. With --source the window's readings are first copied from the engine
 * (store/promsrc.h) into a working store in a new temporary directory, removed at the end.
 * What the window lacks is said in the report and on stderr; the command fails only on bad
 * arguments (2) or a store it cannot read (1).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/report.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "store/promsrc.h"
#include "store/store.h"

/* "FROM..TO" into a window; prints the error and returns 2 when it is not one. */
static int parse_window(const char *s, int64_t now, int64_t *a, int64_t *b)
{
    const char *dots = strstr(s, "..");
    char left[128];
    int rc;
    if (!dots || (size_t)(dots - s) >= sizeof left) {
        fprintf(stderr, "wattage report: --compare: expected FROM..TO, not '%s'\n", s);
        return 2;
    }
    snprintf(left, sizeof left, "%.*s", (int)(dots - s), s);
    if ((rc = wt_cli_parse_time("report", "--compare", left, now, a)) ||
        (rc = wt_cli_parse_time("report", "--compare", dots + 2, now, b)))
        return rc;
    if (*b <= *a) {
        fprintf(stderr, "wattage report: --compare: the window %s is empty\n", s);
        return 2;
    }
    return 0;
}

static int run_compare(const char *wa, const char *wb, int64_t now, const struct wt_cli_common *co,
                       const char *out, const char *format)
{
    int64_t a0, a1, b0, b1;
    int rc;
    if ((rc = parse_window(wa, now, &a0, &a1)) || (rc = parse_window(wb, now, &b0, &b1)))
        return rc;
    struct wt_config cfg;
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_report_cmp *c = malloc(sizeof *c);
    FILE *f = stdout;
    if (!c)
        return 1;
    if ((rc = wt_cli_store("report", co, false, &cfg, &st)) != 0)
        goto out;
    if ((rc = wt_report_compare(st, cfg.store.path, &cfg, a0, a1, b0, b1, c, &err)) != 0) {
        fprintf(stderr, "wattage report: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        rc = rc == -EINVAL ? 2 : 1;
        goto out;
    }
    if (out && !(f = fopen(out, "w"))) {
        fprintf(stderr, "wattage report: -o %s: %s\n", out, strerror(errno));
        rc = 1;
    } else {
        rc = wt_report_write_cmp(c, format, f) ? 1 : 0;
        if (f != stdout && fclose(f) != 0)
            rc = 1;
        if (rc)
            fprintf(stderr, "wattage report: %s: cannot write the report\n", out ? out : "stdout");
    }
    wt_report_cmp_free(c);
out:
    free(c);
    wt_store_close(st);
    wt_config_free(&cfg);
    return rc;
}

/* The series a report reads (audit/report.c, kpi.c, reconcile.c): the counters exact, the
 * gauges one point per chart column, the facility's series (a few meters) as they are. */
static const char *const source_counters[] = {"wattage_gpu_energy_joules_total",
                                              "wattage_gpu_energy_integrated_joules_total",
                                              "wattage_cpu_energy_joules_total", NULL};
static const char *const source_gauges[] = {"wattage_gpu_power_watts",
                                            "wattage_gpu_utilization_ratio",
                                            "wattage_gpu_temperature_celsius",
                                            "wattage_gpu_slowdown_temperature_celsius",
                                            "wattage_gpu_power_limit_watts",
                                            "wattage_gpu_throttle_reasons",
                                            NULL};
/* --source: the window's readings (cli/source.c) in a working store, said when the engine holds
 * none. 0, 1 or 2 (printed). */
static int source_store(const char *source, int64_t from, int64_t to, char *dir, size_t n,
                        struct wt_store **st)
{
    size_t copied = 0, readings = 0;
    struct wt_err err = {{0}};
    struct wt_promsrc_digest d = {.counters = source_counters,
                                  .gauges = source_gauges,
                                  .raw = "{__name__=~\"wattage_facility_.+\"}",
                                  .chart_step_ns = (to - from) / WT_REPORT_COLS};
    int rc = wt_cli_source_store_digest("report", source, &d, from, to, dir, n, st, &copied,
                                        &readings, &err);
    if (rc == 1 && err.msg[0])
        fprintf(stderr, "wattage report: --source %s: %s\n", source, err.msg);
    if (rc == 0 && copied == 0)
        fprintf(stderr,
                "wattage report: --source %s holds no wattage series with a node label in the "
                "window (remote write adds the label; a scrape needs labels: {node: "
                "NAME})\n",
                source);
    return rc;
}

static const struct wt_cli_opt report_opts[] = {
    {"from", WT_OPT_FROM, "T",
     "the window's start: RFC 3339, unix seconds or relative (-2h); default -24h"},
    {"to", WT_OPT_TO, "T", "the window's end (default now)"},
    {"compare", 'C', NULL,
     "two windows side by side (operands A_FROM..A_TO B_FROM..B_TO), KPIs normalised by IT load, "
     "their differences and whether they exceed the measurement's noise"},
    {"source", WT_OPT_SOURCE, "URL",
     WT_CLI_SOURCE_HELP " (or that scrapes them with a node label), instead of the local store; "
                        "the report then has no jobs"},
    {"format", 'F', "html|json|md", "html (default: one self-contained file that opens offline)"},
    {"output", 'o', "FILE", "write there (default standard output)", WT_OPT_SHORT},
    {NULL}};

const struct wt_cli_form wt_cli_form_report = {"report",
                                               "[A_FROM..A_TO B_FROM..B_TO]",
                                               "an audit report of a window (or two compared)",
                                               __FILE__,
                                               false,
                                               {report_opts, wt_cli_store_opts}};

int wt_cmd_report(int argc, char **argv)
{
    const char *out = NULL, *format = "html";
    struct wt_cli_common co = {.from = "-24h"};
    bool compare = false;
    int c, rc;
    if (wt_cli_report_is_standard(argc, argv))
        return wt_cli_report_standard(argc, argv); /* src/cli/statement.c */
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_report, argc, argv, &co)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'F':
            format = optarg;
            break;
        case 'C':
            compare = true;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (compare ? argc - optind != 2 : optind != argc) {
        if (compare)
            fprintf(stderr, "wattage report: --compare needs two windows: A_FROM..A_TO "
                            "B_FROM..B_TO\n");
        else
            fprintf(stderr, "wattage report: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (strcmp(format, "html") && strcmp(format, "json") && strcmp(format, "md")) {
        fprintf(stderr, "wattage report: --format: expected html, json or md, not '%s'\n", format);
        return 2;
    }
    int64_t now = wt_now_real_ns(), from, to;
    if (compare && co.source) {
        fprintf(stderr, "wattage report: --compare reads the local store; --source goes with one "
                        "window\n");
        return 2;
    }
    if (compare)
        return run_compare(argv[optind], argv[optind + 1], now, &co, out, format);
    if ((rc = wt_cli_window("report", &co, now, &from, &to)) != 0)
        return rc;
    struct wt_config cfg;
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_report r;
    FILE *f = stdout;
    char dir[WT_PATH_LEN] = "";
    if (co.source && co.db) {
        fprintf(stderr, "wattage report: --source and --db: name one place to read\n");
        return 2;
    }
    if (co.source) {
        if ((rc = wt_cli_load_config(co.config, &cfg)) != 0)
            return rc;
        if ((rc = source_store(co.source, from, to, dir, sizeof dir, &st)) != 0)
            goto out;
        rc = wt_report_build_source(st, co.source, &cfg, from, to, &r, &err);
    } else {
        if ((rc = wt_cli_store("report", &co, false, &cfg, &st)) != 0) {
            wt_config_free(&cfg);
            return rc;
        }
        rc = wt_report_build(st, cfg.store.path, &cfg, from, to, &r, &err);
        if (rc == 0) /* the Serving section: the inference targets' rows, when there are any */
            r.serving = wt_cli_inference_rows_json(st, &cfg, from, to);
    }
    if (rc) {
        fprintf(stderr, "wattage report: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        rc = rc == -EINVAL ? 2 : 1;
        goto out;
    }
    for (size_t i = 0; i < r.nmissing; i++)
        fprintf(stderr, "wattage report: missing: %s\n", r.missing[i]);
    for (size_t i = 0; i < r.clock.n; i++)
        fprintf(stderr, "wattage report: warning: %s\n", r.clock.msg[i]);
    if (out && !(f = fopen(out, "w"))) {
        fprintf(stderr, "wattage report: -o %s: %s\n", out, strerror(errno));
        rc = 1;
        wt_report_free(&r);
        goto out;
    }
    rc = strcmp(format, "html") == 0 ? wt_report_write_html(&r, f)
         : strcmp(format, "md") == 0 ? wt_report_write_md(&r, f)
                                     : wt_report_write_json(&r, f);
    if (f != stdout && fclose(f) != 0 && rc == 0)
        rc = -EIO;
    if (rc) {
        fprintf(stderr, "wattage report: %s: cannot write the report\n", out ? out : "stdout");
        rc = 1;
    }
    wt_report_free(&r);
out:
    wt_store_close(st);
    wt_cli_source_cleanup(dir);
    wt_config_free(&cfg);
    return rc;
}
