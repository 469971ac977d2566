/* SPDX-License-Identifier: MIT */
/*
 * `wattage review [--week 2026-W49] [--weeks N] [--json] [--fail-on-finding] [-c FILE] [--db
 * FILE | --source URL]`: the weekly review (audit/review.h) of one ISO week, by default the last
 * whole week before now, against the N weeks before it (default 4). Text for a person, or JSON.
 * With --source the readings of the week and the weeks before it are first copied from the
 * fleet's engine into a working store in a new temporary directory (cli/source.c), removed at the
 * end, and reviewed as a local store is. Exit status 0; 3 with --fail-on-finding when the review
 * has a finding (a cron job or CI step then routes it); 1 when the store cannot be read, or the
 * engine cannot be read or holds no wattage series over those weeks; 2 for bad arguments.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/review.h"
#include "audit/topology.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "store/store.h"

#define EXIT_FINDING 3
#define WEEK_NS (7 * 86400LL * WT_NS_PER_S)

/* The series the review reads (audit/review.c, the KPIs of audit/kpi.c and audit/carbon.c), as
 * one selector for --source. */
#define REVIEW_SEL                                                                                 \
    "{__name__=~\"wattage_(gpu_(power_watts|utilization_ratio|energy_joules_total|"                \
    "energy_integrated_joules_total|info)|cpu_energy_joules_total|hwmon_energy_joules_total|"      \
    "inference_(info|tokens_total)|config_info|grid_carbon_intensity_grams_per_kwh|facility_.+)"   \
    "\"}"

enum { OPT_WEEK = 'w', OPT_WEEKS = 'n', OPT_FAIL = 0x2001 };

static const struct wt_cli_opt review_opts[] = {
    {"week", OPT_WEEK, "W",
     "the ISO week to review, e.g. 2026-W49 (default the last whole week before now)"},
    {"weeks", OPT_WEEKS, "N", "the weeks before it that make the noise bands (default 4, 1 to 12)"},
    {"json", WT_OPT_JSON, NULL, "JSON (SI units) instead of text"},
    {"fail-on-finding", OPT_FAIL, NULL, "exit 3 when the review has a finding"},
    {"source", WT_OPT_SOURCE, "URL",
     WT_CLI_SOURCE_HELP " (or that scrapes them with a node label), instead of the local store; "
                        "the review then has no jobs"},
    {NULL}};

const struct wt_cli_form wt_cli_form_review = {
    "review",
    "",
    "the weekly review: the KPI set of an ISO week against the weeks before it, with noise bands, "
    "the week's change points (driver, VBIOS, model, tags, configuration) and the regressions "
    "that followed them",
    __FILE__,
    false,
    {review_opts, wt_cli_store_opts}};

/*
 * --source: the readings of the week from start and of the weeks before it, copied from the
 * engine into a working store in dir. 0 with *st open; 1 when the engine cannot be read or holds
 * no wattage series with a node label over those weeks, 2 for a URL that is not a source
 * (printed, the URL named).
 */
static int source_store(const char *source, int64_t start, int weeks, char *dir, size_t n,
                        struct wt_store **st)
{
    size_t copied = 0, readings = 0;
    int y, w;
    int64_t monday;
    struct wt_err err = {{0}};
    size_t steps = 0;
    int rc = wt_cli_source_store("review", source, REVIEW_SEL, start - weeks * WEEK_NS,
                                 start + WEEK_NS, dir, n, st, &copied, &readings, &err);
    /* the grid's intensity too, with or without a node label: CUE reads it */
    if (rc == 0 &&
        wt_cli_source_carbon(source, start - weeks * WEEK_NS, start + WEEK_NS, *st, &steps, &err))
        rc = 1;
    if (rc == 1 && err.msg[0])
        fprintf(stderr, "wattage review: --source %s: %s\n", source, err.msg);
    if (rc == 0 && readings == 0) {
        wt_review_week_of(start, &y, &w, &monday);
        fprintf(stderr,
                "wattage review: --source %s holds no wattage series with a node label in "
                "%04d-W%02d or the %d weeks before it (remote write adds the label; a scrape "
                "needs labels: {node: NAME})\n",
                source, y, w, weeks);
        rc = 1;
    }
    return rc;
}

int wt_cmd_review(int argc, char **argv)
{
    const char *week = NULL;
    long weeks = 4;
    bool fail = false;
    struct wt_cli_common co = {0};
    struct wt_err err = {{0}};
    int c, rc;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_review, argc, argv, &co)) != -1) {
        switch (c) {
        case OPT_WEEK:
            week = optarg;
            break;
        case OPT_WEEKS: {
            char *end;
            errno = 0;
            weeks = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || weeks < 1 || weeks > WT_REVIEW_MAX_WEEKS) {
                fprintf(stderr, "wattage review: --weeks: expected 1 to %d, got \"%s\"\n",
                        WT_REVIEW_MAX_WEEKS, optarg);
                return 2;
            }
            break;
        }
        case OPT_FAIL:
            fail = true;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (wt_cli_no_operands(&wt_cli_form_review, argc, argv))
        return 2;
    if (co.source && co.db) {
        fprintf(stderr, "wattage review: --source and --db: name one place to read\n");
        return 2;
    }
    int64_t start;
    if (week) {
        if (wt_review_week_parse(week, &start, &err) != 0) {
            fprintf(stderr, "wattage review: %s\n", err.msg);
            return 2;
        }
    } else {
        int y, w;
        wt_review_week_of(wt_now_real_ns(), &y, &w, &start);
        start -= 7 * 86400LL * WT_NS_PER_S;
    }
    struct wt_config cfg;
    struct wt_topology *t = NULL;
    struct wt_store *st = NULL;
    if ((rc = wt_cli_load_config(co.config, &cfg)) != 0)
        return rc;
    if (wt_topology_load(&cfg, &t, &err) != 0) {
        fprintf(stderr, "wattage review: %s\n", err.msg);
        wt_config_free(&cfg);
        return 2;
    }
    char dir[WT_PATH_LEN] = "";
    if (co.source)
        rc = source_store(co.source, start, (int)weeks, dir, sizeof dir, &st);
    else
        rc = wt_cli_open_store("review", &co, false, &cfg, &st);
    if (rc != 0) {
        wt_store_close(st);
        wt_cli_source_cleanup(dir);
        free(t);
        wt_config_free(&cfg);
        return rc;
    }
    struct wt_review *r = malloc(sizeof *r);
    if (!r) {
        rc = 1;
        fprintf(stderr, "wattage review: out of memory\n");
    } else if (wt_review_compute(st, &cfg, t, start, (int)weeks, r, &err) != 0) {
        fprintf(stderr, "wattage review: %s\n", err.msg);
        rc = 1;
    } else {
        if (co.json) {
            cJSON *j = wt_review_json(r);
            char *s = j ? cJSON_Print(j) : NULL;
            if (s)
                printf("%s\n", s);
            else
                rc = 1;
            free(s);
            cJSON_Delete(j);
        } else {
            wt_review_text(r, stdout);
        }
        if (rc == 0 && fail && r->nfindings > 0)
            rc = EXIT_FINDING;
    }
    free(r);
    wt_store_close(st);
    wt_cli_source_cleanup(dir);
    free(t);
    wt_config_free(&cfg);
    return rc;
}
