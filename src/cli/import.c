/* SPDX-License-Identifier: MIT */
/*
 * `wattage import nvidia-smi FILE [--node NAME] [--db FILE]`: see store/import.h.
 * `wattage import carbon FILE [--zone Z] [--format F] [--series S] [--db FILE]`: a carbon
 * intensity (or renewable supply, or price) series, see audit/carbon.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "audit/carbon.h"
#include "cli/cli.h"
#include "store/import.h"
#include "store/store.h"

static const struct wt_cli_opt carbon_opts[] = {
    {"zone", 'z', "Z", "the grid zone the values are for (default carbon.zone)"},
    {"format", 'f', "auto|csv|uk_api|electricitymaps", "the file's format (default auto)"},
    {"series", 's', "intensity|renewable|price",
     "what the values are: gCO2e/kWh (default), contracted renewable kWh, or price per kWh"},
    {NULL}};

const struct wt_cli_form wt_cli_form_import_carbon = {
    "import carbon",
    "FILE",
    "loads a grid carbon-intensity (or renewable supply, or price) series into the store",
    __FILE__,
    false,
    {carbon_opts, wt_cli_store_opts}};

static const struct wt_cli_opt smi_opts[] = {
    {"node", 'n', "NAME", "the node the log is from (default the file's name)"}, {NULL}};

const struct wt_cli_form wt_cli_form_import_smi = {
    "import nvidia-smi",
    "FILE",
    "loads an nvidia-smi --query-gpu=... --format=csv log into the store as a recorded node",
    __FILE__,
    false,
    {smi_opts, wt_cli_store_opts}};

static int import_carbon(int argc, char **argv)
{
    const char *zone = NULL;
    struct wt_cli_common co = {0};
    enum wt_carbon_format fmt = WT_CF_AUTO;
    enum wt_carbon_series series = WT_CS_INTENSITY;
    int c;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_import_carbon, argc, argv, &co)) != -1) {
        switch (c) {
        case 'z':
            zone = optarg;
            break;
        case 'f':
            if (wt_carbon_format_parse(optarg, &fmt) != 0) {
                fprintf(stderr,
                        "wattage import carbon: --format: expected auto, csv, uk_api or "
                        "electricitymaps (got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case 's':
            if (wt_carbon_series_parse(optarg, &series) != 0) {
                fprintf(stderr,
                        "wattage import carbon: --series: expected intensity, renewable "
                        "or price (got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (optind + 2 != argc) {
        fprintf(stderr, "usage: wattage import carbon FILE [--zone Z] [--format auto|csv|uk_api|"
                        "electricitymaps] [--series intensity|renewable|price] [--db FILE]\n");
        return 2;
    }
    const char *file = argv[optind + 1];
    struct wt_config cfg;
    struct wt_carbon_conf cf;
    struct wt_err err = {{0}};
    int rc = wt_cli_load_config(co.config, &cfg);
    if (rc)
        return rc;
    if (wt_carbon_conf_from(&cfg, &cf, &err) != 0) {
        fprintf(stderr, "wattage import carbon: %s\n", err.msg);
        wt_config_free(&cfg);
        return 2;
    }
    if (!zone && cf.zone[0])
        zone = cf.zone;
    struct wt_store *st = NULL;
    rc = wt_cli_open_store("import carbon", &co, true, &cfg, &st);
    if (rc) {
        wt_config_free(&cfg);
        return rc;
    }
    size_t stored = 0;
    rc = wt_carbon_load_file(wt_store_db(st), file, fmt, series, zone, stderr, &stored, &err);
    wt_store_close(st);
    wt_config_free(&cfg);
    if (rc) {
        fprintf(stderr, "wattage import carbon: %s\n", err.msg);
        return rc == -EIO ? 1 : 2;
    }
    printf("imported %s: %zu %s values\n", file, stored, wt_carbon_series_name(series));
    return 0;
}

int wt_cmd_import(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "carbon") == 0)
        return import_carbon(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "meters") == 0)
        return wt_cli_import_meters(argc, argv);
    const char *node = NULL;
    struct wt_cli_common co = {0};
    int c;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_import_smi, argc, argv, &co)) != -1) {
        switch (c) {
        case 'n':
            node = optarg;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (optind + 2 != argc || strcmp(argv[optind], "nvidia-smi") != 0) {
        fprintf(stderr, "usage: wattage import nvidia-smi FILE [--node NAME] [--db FILE]\n"
                        "  FILE: a CSV log of nvidia-smi --query-gpu=timestamp,index,...,"
                        "power.draw --format=csv\n"
                        "       wattage import carbon FILE [--zone Z] [--format F] [--series S] "
                        "[--db FILE]\n"
                        "       wattage import meters FILE [OPTIONS] [--db FILE]\n");
        return 2;
    }
    const char *file = argv[optind + 1];
    FILE *f = fopen(file, "r");
    if (!f) {
        perror(file);
        return 2;
    }
    char name[64];
    wt_import_node_name(file, node, name, sizeof name);
    struct wt_store *st = NULL;
    int rc = wt_cli_store("import", &co, true, NULL, &st);
    if (rc) {
        fclose(f);
        return rc;
    }
    struct wt_import_stats stats;
    struct wt_err err = {{0}};
    rc = wt_import_nvidia_smi(st, f, file, name, stderr, &stats, &err);
    fclose(f);
    wt_store_close(st);
    if (rc) {
        fprintf(stderr, "wattage import: %s\n", err.msg);
        return rc == -EINVAL ? 2 : 1;
    }
    printf("imported %s as node %s: %zu rows, %zu readings, %zu GPUs, %zu lines skipped\n", file,
           name, stats.rows, stats.readings, stats.gpus, stats.skipped);
    return 0;
}
