/* SPDX-License-Identifier: MIT */
/*
 * `wattage import meters FILE [--interval D] [--time-is end|start] [--rollover N] [--db FILE]`:
 * interval meter data from building-management and energy systems (audit/meter_import.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/meter_import.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "store/store.h"

static const struct wt_cli_opt meter_opts[] = {
    {"interval", 'i', "DURATION", "the intervals' length for interval energy (default 15m)"},
    {"time-is", 't', "end|start", "interval energy is stamped at its interval's end (default)"},
    {"rollover", 'r', "N",
     "registers wrap at N (in the file's unit; default: the power of ten above the reading)"},
    {NULL}};

const struct wt_cli_form wt_cli_form_import_meters = {
    "import meters",
    "FILE",
    "loads interval meter data (CSV: time, meter, register or energy, unit) as facility series",
    __FILE__,
    false,
    {meter_opts, wt_cli_store_opts}};

int wt_cli_import_meters(int argc, char **argv)
{
    struct wt_cli_common co = {0};
    struct wt_meter_import_opts o = {0};
    int c;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_import_meters, argc, argv, &co)) != -1) {
        switch (c) {
        case 'i':
            if (wt_duration_parse(optarg, &o.interval_ns) != 0) {
                fprintf(stderr,
                        "wattage import meters: --interval: expected a duration such as "
                        "15m (got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case 't':
            if (strcmp(optarg, "end") != 0 && strcmp(optarg, "start") != 0) {
                fprintf(stderr,
                        "wattage import meters: --time-is: expected end or start (got \"%s\")\n",
                        optarg);
                return 2;
            }
            o.time_is_start = strcmp(optarg, "start") == 0;
            break;
        case 'r': {
            char *end;
            o.modulus = strtod(optarg, &end);
            if (end == optarg || *end || !(o.modulus > 0)) {
                fprintf(stderr,
                        "wattage import meters: --rollover: expected a number > 0 (got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        }
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (optind + 2 != argc) {
        fprintf(stderr, "usage: wattage import meters FILE [--interval D] [--time-is end|start] "
                        "[--rollover N] [--db FILE]\n");
        return 2;
    }
    const char *file = argv[optind + 1];
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "wattage import meters: %s: %s\n", file, strerror(errno));
        return 2;
    }
    struct wt_store *st = NULL;
    int rc = wt_cli_store("import meters", &co, true, NULL, &st);
    if (rc) {
        fclose(f);
        return rc;
    }
    struct wt_meter_import_stats s;
    struct wt_err err = {{0}};
    rc = wt_meter_import(st, f, file, &o, stderr, &s, &err);
    fclose(f);
    wt_store_close(st);
    if (rc) {
        fprintf(stderr, "wattage import meters: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        return rc == -EINVAL ? 2 : 1;
    }
    printf("imported %s: %zu meters, %zu rows, %zu readings, %zu lines skipped, %zu rollovers, "
           "%zu resets, %zu gaps\n",
           file, s.meters, s.rows, s.readings, s.skipped, s.rollovers, s.resets, s.gaps);
    return 0;
}
