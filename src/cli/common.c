/* SPDX-License-Identifier: MIT */
/*
 * The option tables' machinery: a form's tables make both its getopt_long options and its --help
 * (see cli.h). The options the subcommands share are in opts.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct wt_cli_opt help_opt = {"help", WT_CLI_HELP, NULL, "this help", 0};

/* Every option of a form, its tables in order, then --help; returns how many (at most max). */
static size_t all_opts(const struct wt_cli_form *f, const struct wt_cli_opt **out, size_t max)
{
    size_t n = 0;
    for (size_t t = 0; t < 3 && f->opts[t]; t++)
        for (const struct wt_cli_opt *o = f->opts[t]; o->name && n + 1 < max; o++)
            out[n++] = o;
    out[n++] = &help_opt;
    return n;
}

const struct wt_cli_opt *wt_cli_find_opt(const struct wt_cli_form *f, const char *name)
{
    const struct wt_cli_opt *all[WT_CLI_MAX_OPTS + 1];
    size_t n = all_opts(f, all, WT_CLI_MAX_OPTS + 1);
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

#define HELP_COL 29 /* where an option's description starts */
#define HELP_WIDTH 100

/* One line of help: left (an option and its argument) then help from column indent, wrapped
 * at HELP_WIDTH under itself (from the next line when left is wider than its column). */
static void help_line(FILE *out, const char *left, int indent, const char *help)
{
    int col = fprintf(out, "  %s", left);
    const char *p = help;
    if (*left && col >= indent - 1) {
        fputc('\n', out);
        col = 0;
    }
    while (*p) {
        fprintf(out, "%*s", indent - col, "");
        size_t room = (size_t)(HELP_WIDTH - indent), n = strlen(p);
        if (n > room) {
            n = room;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = strcspn(p, " ");
        }
        fprintf(out, "%.*s\n", (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
        col = 0;
    }
}

void wt_cli_help(FILE *out, const struct wt_cli_form *f)
{
    const struct wt_cli_opt *all[WT_CLI_MAX_OPTS + 1];
    size_t n = all_opts(f, all, WT_CLI_MAX_OPTS + 1);
    char word[160];
    int col = fprintf(out, "usage: wattage %s", f->name);
    /* The usage line: the required options, the others in brackets, then the operands; wrapped
     * at 100 columns under the command. */
    for (size_t i = 0; i + 1 < n; i++) {
        const struct wt_cli_opt *o = all[i];
        bool req = o->flags & WT_OPT_REQUIRED;
        char name[64];
        if (o->flags & WT_OPT_SHORT)
            snprintf(name, sizeof name, "-%c", (char)o->id);
        else
            snprintf(name, sizeof name, "--%s", o->name);
        snprintf(word, sizeof word, "%s%s%s%s%s%s", req ? "" : "[", name, o->arg ? " " : "",
                 o->arg ? o->arg : "", req ? "" : "]", o->flags & WT_OPT_REPEAT ? "..." : "");
        if (col + 1 + (int)strlen(word) > 100)
            col = fprintf(out, "\n%*s", (int)strlen("usage: wattage ") + (int)strlen(f->name), "");
        col += fprintf(out, " %s", word);
    }
    if (f->args && *f->args) {
        if (col + 1 + (int)strlen(f->args) > 100)
            fprintf(out, "\n%*s", (int)strlen("usage: wattage ") + (int)strlen(f->name), "");
        fprintf(out, " %s", f->args);
    }
    fputc('\n', out);
    help_line(out, "", 2, f->summary);
    for (size_t i = 0; i < n; i++) {
        const struct wt_cli_opt *o = all[i];
        char left[64];
        int k = 0;
        if (o->flags & WT_OPT_SHORT)
            k = snprintf(left, sizeof left, "-%c, ", (char)o->id);
        else if (o == &help_opt)
            k = snprintf(left, sizeof left, "-h, ");
        else
            k = snprintf(left, sizeof left, "    ");
        snprintf(left + k, sizeof left - (size_t)k, "--%s%s%s", o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        help_line(out, left, HELP_COL, o->help);
    }
}

int wt_cli_getopt(const struct wt_cli_form *f, int argc, char **argv)
{
    const struct wt_cli_opt *all[WT_CLI_MAX_OPTS + 1];
    struct option lo[WT_CLI_MAX_OPTS + 2];
    char so[2 * WT_CLI_MAX_OPTS + 8];
    size_t n = all_opts(f, all, WT_CLI_MAX_OPTS + 1), k = 0;
    /* ":" first: a missing argument is returned as ':', so the message below says which. */
    k += (size_t)snprintf(so, sizeof so, "%s:h", f->stop_at_operand ? "+" : "");
    for (size_t i = 0; i < n; i++) {
        lo[i] = (struct option){all[i]->name, all[i]->arg ? required_argument : no_argument, NULL,
                                all[i]->id};
        if ((all[i]->flags & WT_OPT_SHORT) && k + 3 < sizeof so) {
            so[k++] = (char)all[i]->id;
            if (all[i]->arg)
                so[k++] = ':';
            so[k] = '\0';
        }
    }
    lo[n] = (struct option){0};
    int saved = opterr;
    opterr = 0; /* the messages below name the command */
    int c = getopt_long(argc, argv, so, lo, NULL);
    opterr = saved;
    if (c == WT_CLI_HELP || c == 'h') {
        wt_cli_help(stdout, f);
        return WT_CLI_HELP;
    }
    if (c == '?' || c == ':') {
        const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        if (c == ':')
            fprintf(stderr, "wattage %s: %s needs a value\n", f->name, a);
        else if (optopt && optopt < 256 && strncmp(a, "--", 2) != 0)
            fprintf(stderr, "wattage %s: unknown option '-%c'\n", f->name, optopt);
        else
            fprintf(stderr, "wattage %s: unknown option '%s'\n", f->name, a);
        fprintf(stderr, "see: wattage %s --help\n", f->name);
        return '?';
    }
    return c;
}
