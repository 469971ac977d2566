/* SPDX-License-Identifier: MIT */
/* `wattage`: one binary, one subcommand per file under src/cli/ (listed in commands.c). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: wattage COMMAND [OPTIONS]\n\ncommands:\n");
    for (const struct wt_cli_command *c = wt_cli_commands; c->name; c++)
        fprintf(f, "  %-13s %s\n", c->name, c->summary);
    fprintf(f, "  %-13s %s\n", "version", "prints the version (also --version)");
    fprintf(f, "\n`wattage COMMAND --help` lists a command's options. Exit status: 0 ok, 1 runtime "
               "failure, 2 bad usage or input.\n");
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
    /* Hidden: the manual pages and the completion's words, from the same tables (man.c). */
    if (strcmp(cmd, "__man") == 0)
        return wt_cli_man(argc - 1, argv + 1);
    if (strcmp(cmd, "__complete") == 0)
        return wt_cli_complete(argc - 1, argv + 1);
    for (const struct wt_cli_command *c = wt_cli_commands; c->name; c++) {
        if (strcmp(cmd, c->name) != 0)
            continue;
        /* `wattage COMMAND --help`: every form of the command (job start, job mark, ...). */
        if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            for (size_t i = 0; i < sizeof c->forms / sizeof c->forms[0] && c->forms[i]; i++)
                wt_cli_help(stdout, c->forms[i]);
            return 0;
        }
        return c->fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "wattage: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
