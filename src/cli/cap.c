/* SPDX-License-Identifier: MIT */
/*
 * `wattage cap clear [-c FILE] [--db FILE] [--gpu N|amd:N]`: puts the GPUs wattage capped back to
 * their own limits by hand, from the record of changes (alerts.cap_record, else power-caps
 * beside the store), with or without a daemon running: the change is made under the record's
 * lock and the daemon, seeing its line gone, leaves the GPU alone until what held it lets go.
 * With --gpu N and no record for it, a GPU someone else capped gets its default limit back.
 * NVIDIA's and AMD's GPUs alike (alert/cap.h): amd:N names AMD's GPU N.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/alert.h"
#include "alert/cap.h"
#include "cli/cli.h"
#include "core/config.h"
#include "core/gpuname.h"

static const struct wt_cli_opt cap_opts[] = {
    {"gpu", 'g', "N",
     "only GPU N (an index: NVIDIA's, else AMD's where NVIDIA has none; amd:N or nvidia:N "
     "names a vendor's); with no record for it, a GPU someone else capped gets its default "
     "limit back"},
    {NULL}};

const struct wt_cli_form wt_cli_form_cap_clear = {
    "cap clear",
    "",
    "puts the GPUs wattage capped back to their own limits, from the record of changes, with "
    "or without a daemon running",
    __FILE__,
    false,
    {cap_opts, wt_cli_store_opts}};

int wt_cmd_cap(int argc, char **argv)
{
    struct wt_cli_common co = {0};
    int gpu = -1, c;
    if (argc < 2 || strcmp(argv[1], "clear") != 0) {
        fprintf(stderr, "wattage cap: expected the subcommand clear\n");
        wt_cli_help(stderr, &wt_cli_form_cap_clear);
        return 2;
    }
    argc--, argv++;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_cap_clear, argc, argv, &co)) != -1) {
        switch (c) {
        case 'g': {
            const char *vendor, *idx;
            bool index = wt_gpu_vendor_index(optarg, &vendor, &idx);
            bool amd = strcmp(vendor, "amd") == 0;
            long v = index ? strtol(idx, NULL, 10) : -1;
            if (v < 0 || v > 63) {
                fprintf(stderr,
                        "wattage cap clear: --gpu: expected a GPU index 0..63, amd:N or "
                        "nvidia:N (got \"%s\")\n",
                        optarg);
                return 2;
            }
            gpu = amd ? WT_CAP_AMD_GPU((int)v) : (int)v;
            break;
        }
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (wt_cli_no_operands(&wt_cli_form_cap_clear, argc, argv)) {
        wt_cli_help(stderr, &wt_cli_form_cap_clear);
        return 2;
    }
    struct wt_config cfg;
    int rc = wt_cli_load_config(co.config, &cfg);
    if (rc)
        return rc;
    if (co.db)
        snprintf(cfg.store.path, sizeof cfg.store.path, "%s", co.db);
    struct wt_alerts_config *acfg = malloc(sizeof *acfg);
    struct wt_err err = {{0}};
    int ret = 1;
    if (!acfg)
        goto out;
    if (wt_alerts_config_parse(wt_config_file(&cfg), wt_config_section(&cfg, "alerts"), acfg,
                               &err) != 0) {
        fprintf(stderr, "wattage cap clear: %s\n", err.msg);
        ret = 2;
        goto out;
    }
    rc = wt_cap_clear(&cfg, acfg, gpu, stdout, &err);
    if (rc != 0) {
        fprintf(stderr, "wattage cap clear: %s\n", err.msg);
        ret = rc == -EINVAL ? 2 : 1;
        goto out;
    }
    ret = 0;
out:
    free(acfg);
    wt_config_free(&cfg);
    return ret;
}
