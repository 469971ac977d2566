/* SPDX-License-Identifier: MIT */
/* `wattage`: one binary, one subcommand per file under src/cli/. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int wt_cmd_kpi(int argc, char **argv);    /* src/cli/kpi.c */
int wt_cmd_cap(int argc, char **argv);    /* src/cli/cap.c */
int wt_cmd_report(int argc, char **argv); /* src/cli/report.c */

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *usage;
} commands[] = {
    {"run", wt_cmd_run,
     "run [-c FILE] [--listen ADDR:PORT] [--db FILE] [--interval SECONDS] [--dry-run]"},
    {"status", wt_cmd_status, "status [-c FILE] [--json]"},
    {"check-config", wt_cmd_check_config, "check-config FILE"},
    {"energy", wt_cmd_energy, "energy [--from T] [--to T] [--by gpu|node] [--json] [--db FILE]"},
    {"query", wt_cmd_query,
     "query SERIES [--from T] [--to T] [--step S] [--csv|--json] [--db FILE]"},
    {"import", wt_cmd_import, "import nvidia-smi|carbon FILE [--node NAME|--zone Z] [--db FILE]"},
    {"job", wt_cmd_job,
     "job start|mark|end|show NAME [--tag K=V]... [--gpus LIST] [--kind K] [--tokens N] ..."},
    {"jobs", wt_cmd_jobs, "jobs [--json] [--limit N] | jobs compare A B [--json]"},
    {"exec", wt_cmd_exec, "exec [--job NAME] [--tag K=V]... [--gpus LIST] -- CMD [ARGS...]"},
    {"schedule", wt_cmd_schedule,
     "schedule --duration D (--energy E|--power P|--like JOB) --deadline T [--zone Z] [--json]"},
    {"kpi", wt_cmd_kpi, "kpi [--from T] [--to T] [--zone Z] [--json] [--db FILE] [-c FILE]"},
    {"cap", wt_cmd_cap, "cap clear [-c FILE] [--db FILE] [--gpu N]"},
    {"report", wt_cmd_report,
     "report [--from T] [--to T] [--db FILE] [-c FILE] [-o FILE] [--format html|json|md]"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: wattage COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  wattage %s\n", commands[i].usage);
    fprintf(f, "  wattage version\n\nSee README.md; exit status 0 ok, 1 runtime failure, 2 bad "
               "usage or input.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("wattage %s\n", WT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name) != 0)
            continue;
        if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            printf("usage: wattage %s\n", commands[i].usage);
            return 0;
        }
        return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "wattage: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
