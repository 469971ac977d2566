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

static int import_carbon(int argc, char **argv)
{
    static const struct option opts[] = {
        {"zone", required_argument, NULL, 'z'},   {"format", required_argument, NULL, 'f'},
        {"series", required_argument, NULL, 's'}, {"db", required_argument, NULL, 'd'},
        {"config", required_argument, NULL, 'c'}, {0}};
    const char *zone = NULL, *db = NULL, *config = NULL;
    enum wt_carbon_format fmt = WT_CF_AUTO;
    enum wt_carbon_series series = WT_CS_INTENSITY;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
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
        case 'd':
            db = optarg;
            break;
        case 'c':
            config = optarg;
            break;
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
    int rc = wt_cli_load_config(config, &cfg);
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
    rc = wt_cli_open_store(config, db, true, &st);
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
    static const struct option opts[] = {{"node", required_argument, NULL, 'n'},
                                         {"db", required_argument, NULL, 'd'},
                                         {"config", required_argument, NULL, 'c'},
                                         {0}};
    const char *node = NULL, *db = NULL, *config = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            node = optarg;
            break;
        case 'd':
            db = optarg;
            break;
        case 'c':
            config = optarg;
            break;
        default:
            return 2;
        }
    }
    if (optind + 2 != argc || strcmp(argv[optind], "nvidia-smi") != 0) {
        fprintf(stderr, "usage: wattage import nvidia-smi FILE [--node NAME] [--db FILE]\n"
                        "  FILE: a CSV log of nvidia-smi --query-gpu=timestamp,index,...,"
                        "power.draw --format=csv\n"
                        "       wattage import carbon FILE [--zone Z] [--format F] [--series S] "
                        "[--db FILE]\n");
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
    int rc = wt_cli_open_store(config, db, true, &st);
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
