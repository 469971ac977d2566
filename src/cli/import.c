/* SPDX-License-Identifier: MIT */
/* `wattage import nvidia-smi FILE [--node NAME] [--db FILE]`: see store/import.h. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "store/import.h"
#include "store/store.h"

int wt_cmd_import(int argc, char **argv)
{
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
                        "power.draw --format=csv\n");
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
