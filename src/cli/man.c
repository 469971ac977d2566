/* SPDX-License-Identifier: MIT */
/*
 * The manual pages and the shell completion, made from what --help is made from (the command
 * registry and each form's option tables) and from the configuration's schema (wt_config_key and
 * the defaults wt_config_write writes), so they cannot drift from what is parsed:
 *   wattage __man 1            wattage(1), roff
 *   wattage __man 5 [EXAMPLE]  wattage.yaml(5), roff; each key's text from the comment above it
 *                              in EXAMPLE (deploy/wattage.yaml)
 *   wattage __complete [COMMAND [SUBCOMMAND]]  the words that may come next, one a line
 * Hidden: main dispatches them before the registry, so `wattage --help` does not list them.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/yamltree.h"

/* Text for roff: backslashes and dashes escaped, a line that would start a request guarded. */
static void roff(FILE *out, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", out);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else
            fputc(*s, out);
        if (*s == '\n' && (s[1] == '.' || s[1] == '\''))
            fputs("\\&", out);
    }
}

static void man_form(FILE *out, const struct wt_cli_form *f)
{
    fputs(".SS \"wattage ", out);
    roff(out, f->name);
    fputs("\"\n.B wattage ", out);
    roff(out, f->name);
    if (f->args && *f->args) {
        fputs("\n.RI [ OPTIONS ] \" ", out);
        roff(out, f->args);
        fputs("\"", out);
    } else {
        fputs("\n.RI [ OPTIONS ]", out);
    }
    fputs("\n.PP\n", out);
    roff(out, f->summary);
    fputc('\n', out);
    for (size_t t = 0; t < 3 && f->opts[t]; t++) {
        for (const struct wt_cli_opt *o = f->opts[t]; o->name; o++) {
            fputs(".TP\n", out);
            if (o->flags & WT_OPT_SHORT)
                fprintf(out, "\\fB\\-%c\\fR, ", (char)o->id);
            fputs("\\fB\\-\\-", out);
            roff(out, o->name);
            fputs("\\fR", out);
            if (o->arg) {
                fputs(" \\fI", out);
                roff(out, o->arg);
                fputs("\\fR", out);
            }
            fputc('\n', out);
            roff(out, o->help);
            if (o->flags & WT_OPT_REPEAT)
                fputs(" (may be given more than once)", out);
            if (o->flags & WT_OPT_REQUIRED)
                fputs(" (required)", out);
            fputc('\n', out);
        }
    }
}

static const char *const environment[][2] = {
    {"WATTAGE_URL", "the daemon's address for job, jobs and exec (before client.url)"},
    {"WATTAGE_TOKEN", "the bearer token to send (before \\-\\-token\\-file)"},
    {"WATTAGE_CACERT",
     "the CA that signed the daemon's (or the \\-\\-source engine's) certificate"},
    {"WATTAGE_CERT, WATTAGE_KEY", "a client certificate and its key, for mutual TLS"},
    {"WATTAGE_SOURCE_TOKEN_FILE", "a file with the bearer token for the \\-\\-source engine"},
    {"XDG_STATE_HOME", "where a user who is not root keeps the store by default"},
    {"STATE_DIRECTORY", "set by systemd's StateDirectory=: the store's default directory"},
};

static int man1(FILE *out)
{
    fprintf(out, ".TH WATTAGE 1 \"\" \"wattage %s\" \"User Commands\"\n", WT_VERSION);
    fputs(".SH NAME\nwattage \\- energy auditor for GPU clusters\n"
          ".SH SYNOPSIS\n.B wattage\n.I COMMAND\n.RI [ OPTIONS ]\n.br\n"
          ".B wattage\n.I COMMAND\n.B \\-\\-help\n"
          ".SH DESCRIPTION\n"
          "One binary: the daemon (\\fBwattage run\\fR) reads GPU, CPU, node and facility power, "
          "keeps every reading in an SQLite store and serves /metrics and an HTTP API; the other "
          "commands read the store or talk to the daemon.\n"
          "Every command prints its options with \\fB\\-\\-help\\fR; this page lists the same.\n"
          ".SH COMMANDS\n",
          out);
    for (const struct wt_cli_command *c = wt_cli_commands; c->name; c++)
        for (size_t i = 0; i < sizeof c->forms / sizeof c->forms[0] && c->forms[i]; i++)
            man_form(out, c->forms[i]);
    fputs(".SS \"wattage version\"\nprints the version (also \\fB\\-\\-version\\fR).\n", out);
    fputs(".SH EXIT STATUS\n0: success. 1: a runtime failure (no store, the daemon unreachable, "
          "a write failed). 2: bad usage or input (the message names the place).\n",
          out);
    fputs(".SH ENVIRONMENT\n", out);
    for (size_t i = 0; i < sizeof environment / sizeof environment[0]; i++)
        fprintf(out, ".TP\n.B %s\n%s\n", environment[i][0], environment[i][1]);
    fputs(".SH FILES\n.TP\n.I " WT_DEFAULT_CONFIG "\nthe configuration, see "
          "\\fBwattage.yaml\\fR(5)\n.TP\n.I /var/lib/wattage/wattage.db\nthe store of a daemon "
          "run as root (a user's: \\fI$XDG_STATE_HOME/wattage/wattage.db\\fR, by default "
          "\\fI~/.local/state/wattage/wattage.db\\fR)\n"
          ".SH SEE ALSO\n\\fBwattage.yaml\\fR(5)\n",
          out);
    return 0;
}

/* ---- wattage.yaml(5) ---- */

struct note {
    char path[128];
    char *text; /* the comment lines above the key, "# " taken off, joined with spaces */
};

/* The comments of an example configuration, by the dotted path of the key under them. */
static size_t read_notes(const char *file, struct note **out)
{
    FILE *f = file ? fopen(file, "r") : NULL;
    char line[1024], stack[16][64] = {{0}}, comment[4096] = "";
    int indent[16] = {0}, depth = 0;
    size_t n = 0, cap = 0;
    *out = NULL;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        int ind = (int)strspn(line, " ");
        char *p = line + ind, key[64];
        p[strcspn(p, "\n")] = '\0';
        if (*p == '#') {
            p++;
            p += *p == ' ';
            size_t l = strlen(comment);
            snprintf(comment + l, sizeof comment - l, "%s%s", l ? " " : "", p);
            continue;
        }
        if (!*p || sscanf(p, "%63[A-Za-z0-9_]:", key) != 1 || p[strlen(key)] != ':') {
            comment[0] = '\0';
            continue;
        }
        while (depth > 0 && indent[depth - 1] >= ind)
            depth--;
        if (depth < 16) {
            snprintf(stack[depth], sizeof stack[depth], "%s", key);
            indent[depth++] = ind;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            struct note *g = realloc(*out, cap * sizeof **out);
            if (!g)
                break;
            *out = g;
        }
        struct note *x = &(*out)[n++];
        x->path[0] = '\0';
        for (int i = 0; i < depth; i++) {
            size_t l = strlen(x->path);
            snprintf(x->path + l, sizeof x->path - l, "%s%s", i ? "." : "", stack[i]);
        }
        x->text = strdup(comment);
        comment[0] = '\0';
    }
    fclose(f);
    return n;
}

static const char *note_of(const struct note *notes, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(notes[i].path, path) == 0)
            return notes[i].text;
    return NULL;
}

/* The value of path in tree as written, or NULL when it is not a scalar there. */
static const char *scalar_at(const struct wt_ynode *tree, const char *path)
{
    char part[64];
    const struct wt_ynode *n = tree;
    while (n && *path) {
        size_t l = strcspn(path, ".");
        snprintf(part, sizeof part, "%.*s", (int)l, path);
        const struct wt_ynode *next = NULL;
        for (size_t i = 0; n->kind == WT_YNODE_MAP && i < n->n && !next; i++)
            if (n->child[i]->key && strcmp(n->child[i]->key, part) == 0)
                next = n->child[i];
        n = next;
        path += l + (path[l] == '.');
    }
    return n && n->kind == WT_YNODE_SCALAR ? n->value : NULL;
}

static int man5(FILE *out, const char *example)
{
    struct wt_config d;
    struct wt_ynode *tree = NULL;
    struct wt_err err = {{0}};
    struct note *notes = NULL;
    char *buf = NULL;
    size_t len = 0, nn = 0;
    int rc = 1;
    wt_config_defaults(&d);
    FILE *m = open_memstream(&buf, &len);
    if (!m || wt_config_write(&d, m) != 0 || fclose(m) != 0) {
        fprintf(stderr, "wattage __man: cannot write the defaults\n");
        goto out;
    }
    if (wt_yaml_parse("(defaults)", buf, len, &tree, &err) != 0) {
        fprintf(stderr, "wattage __man: %s\n", err.msg);
        goto out;
    }
    nn = read_notes(example, &notes);
    if (example && nn == 0) {
        fprintf(stderr, "wattage __man: %s: no keys read\n", example);
        goto out;
    }
    fprintf(out, ".TH WATTAGE.YAML 5 \"\" \"wattage %s\" \"File Formats\"\n", WT_VERSION);
    fputs(".SH NAME\nwattage.yaml \\- the configuration of wattage\n"
          ".SH SYNOPSIS\n.I " WT_DEFAULT_CONFIG "\n"
          ".SH DESCRIPTION\nA YAML file; every key is optional and has the default given here. "
          "Durations are written like 500ms, 1s, 5m, 7d. \\fBwattage check\\-config\\fR "
          "\\fIFILE\\fR checks a file without running anything and names file:line: key for "
          "each problem. The keys, by dotted path:\n",
          out);
    for (size_t i = 0; wt_config_key(i); i++) {
        const char *k = wt_config_key(i), *v = scalar_at(tree, k), *t = note_of(notes, nn, k);
        fputs(".TP\n.B ", out);
        roff(out, k);
        fputc('\n', out);
        if (strcmp(k, "store.path") == 0) {
            fputs("Default: /var/lib/wattage/wattage.db for root, $STATE_DIRECTORY/wattage.db "
                  "under systemd's StateDirectory=, else $XDG_STATE_HOME/wattage/wattage.db "
                  "(~/.local/state/wattage/wattage.db).",
                  out);
        } else if (v) {
            fputs("Default: ", out);
            roff(out, *v ? v : "\"\" (none)");
            fputc('.', out);
        } else {
            fputs("A section its module reads and checks.", out);
        }
        if (t && *t) {
            fputc(' ', out);
            roff(out, t);
        }
        fputc('\n', out);
    }
    fputs(".SH SEE ALSO\n\\fBwattage\\fR(1)\n", out);
    rc = 0;
out:
    for (size_t i = 0; i < nn; i++)
        free(notes[i].text);
    free(notes);
    wt_ynode_free(tree);
    free(buf);
    wt_config_free(&d);
    return rc;
}

int wt_cli_man_write(FILE *out, int section, const char *example)
{
    return section == 1 ? man1(out) : section == 5 ? man5(out, example) : 2;
}

int wt_cli_man(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "1") == 0)
        return wt_cli_man_write(stdout, 1, NULL);
    if ((argc == 2 || argc == 3) && strcmp(argv[1], "5") == 0)
        return wt_cli_man_write(stdout, 5, argc == 3 ? argv[2] : NULL);
    fprintf(stderr, "usage: wattage __man 1 | wattage __man 5 [EXAMPLE.yaml]\n");
    return 2;
}

/* ---- completion ---- */

static void form_words(FILE *out, const struct wt_cli_form *f)
{
    for (size_t t = 0; t < 3 && f->opts[t]; t++)
        for (const struct wt_cli_opt *o = f->opts[t]; o->name; o++) {
            fprintf(out, "--%s\n", o->name);
            if (o->flags & WT_OPT_SHORT)
                fprintf(out, "-%c\n", (char)o->id);
        }
    fputs("--help\n", out);
}

int wt_cli_complete(int argc, char **argv)
{
    if (argc < 2) {
        for (const struct wt_cli_command *c = wt_cli_commands; c->name; c++)
            printf("%s\n", c->name);
        printf("version\n");
        return 0;
    }
    for (const struct wt_cli_command *c = wt_cli_commands; c->name; c++) {
        if (strcmp(c->name, argv[1]) != 0)
            continue;
        size_t nf = 0, cl = strlen(c->name);
        while (nf < sizeof c->forms / sizeof c->forms[0] && c->forms[nf])
            nf++;
        /* COMMAND SUBCOMMAND: that form's options */
        for (size_t i = 0; argc >= 3 && i < nf; i++)
            if (strlen(c->forms[i]->name) > cl &&
                strcmp(c->forms[i]->name + cl + 1, argv[2]) == 0) {
                form_words(stdout, c->forms[i]);
                return 0;
            }
        /* COMMAND: its subcommands, and the options of the form named as the command */
        for (size_t i = 0; i < nf; i++) {
            const char *n = c->forms[i]->name;
            if (strcmp(n, c->name) == 0)
                form_words(stdout, c->forms[i]);
            else if (argc < 3)
                printf("%s\n", n + cl + 1);
        }
        return 0;
    }
    return 1;
}
