/* SPDX-License-Identifier: MIT */
/*
 * The command line tells the truth about itself: every option of every command form is in that
 * form's --help (usage line and one line of its own), the tables are well formed, and no
 * command parses an option that no table lists: each C file of src/cli is read for getopt tables of
 * its own, getopt_long calls and "--option" strings, which must all be in the help of a form
 * that file defines. The options several commands share (opts.c) are parsed in one place: each
 * form that has one by name gives it the shared id, and wt_cli_next, wt_cli_window and wt_cli_store
 * do what cli.h says.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "runner.h"
#include "store/store.h"

/* The form's help as wt_cli_help prints it (malloc'd). */
static char *help_of(const struct wt_cli_form *f)
{
    FILE *m = tmpfile();
    WT_ASSERT(m != NULL);
    wt_cli_help(m, f);
    long len = ftell(m);
    char *text = malloc((size_t)len + 1);
    WT_ASSERT(text != NULL && len >= 0);
    rewind(m);
    WT_EQ_INT(fread(text, 1, (size_t)len, m), len);
    text[len] = '\0';
    fclose(m);
    return text;
}

/* Each form once, in the order of the registry. */
static size_t all_forms(const struct wt_cli_form **out, size_t max)
{
    size_t n = 0;
    for (const struct wt_cli_command *c = wt_cli_commands; c->name; c++)
        for (size_t i = 0; i < sizeof c->forms / sizeof c->forms[0] && c->forms[i]; i++)
            if (n < max)
                out[n++] = c->forms[i];
    return n;
}

WT_TEST(every_option_of_a_table_is_in_its_help)
{
    const struct wt_cli_form *forms[64];
    size_t nf = all_forms(forms, 64);
    WT_ASSERT(nf >= 16);
    for (size_t i = 0; i < nf; i++) {
        const struct wt_cli_form *f = forms[i];
        char *h = help_of(f), want[96];
        snprintf(want, sizeof want, "usage: wattage %s", f->name);
        WT_CONTAINS(h, want);
        WT_CONTAINS(h, "  -h, --help ");
        /* the usage line(s) end where the summary begins */
        size_t usage_len = 0;
        while (h[usage_len] && !(h[usage_len] == '\n' && strncmp(h + usage_len + 1, "  ", 2) == 0 &&
                                 h[usage_len + 3] != ' '))
            usage_len++;
        WT_ASSERT(h[usage_len] != '\0');
        const char *names[WT_CLI_MAX_OPTS];
        int ids[WT_CLI_MAX_OPTS];
        size_t n = 0;
        for (size_t t = 0; t < 3 && f->opts[t]; t++) {
            for (const struct wt_cli_opt *o = f->opts[t]; o->name; o++) {
                WT_ASSERT(n < WT_CLI_MAX_OPTS);
                WT_ASSERT(o->help && o->help[0]);
                if (o->id == 'h' || o->id == WT_CLI_HELP || o->id == '?' || o->id == ':')
                    wt_test_fail(__FILE__, __LINE__, "%s --%s: id %d is reserved", f->name, o->name,
                                 o->id);
                for (size_t k = 0; k < n; k++)
                    if (strcmp(names[k], o->name) == 0 || ids[k] == o->id)
                        wt_test_fail(__FILE__, __LINE__, "%s: --%s and --%s share a name or id",
                                     f->name, names[k], o->name);
                names[n] = o->name;
                ids[n++] = o->id;
                /* one line of its own: "  --name" or "  -c, --name" at the start */
                char line[96], line2[96];
                snprintf(line, sizeof line, "\n      --%s%s", o->name, o->arg ? " " : "");
                snprintf(line2, sizeof line2, "\n  -%c, --%s", (char)o->id, o->name);
                if (!strstr(h, (o->flags & WT_OPT_SHORT) ? line2 : line))
                    wt_test_fail(__FILE__, __LINE__, "%s --help has no line for --%s:\n%s", f->name,
                                 o->name, h);
                /* and in the usage line */
                char u[96];
                if (o->flags & WT_OPT_SHORT)
                    snprintf(u, sizeof u, "-%c%s%s", (char)o->id, o->arg ? " " : "",
                             o->arg ? o->arg : "");
                else
                    snprintf(u, sizeof u, "--%s%s%s", o->name, o->arg ? " " : "",
                             o->arg ? o->arg : "");
                char *at = strstr(h, u);
                if (!at || (size_t)(at - h) > usage_len)
                    wt_test_fail(__FILE__, __LINE__, "%s: the usage line lacks %s:\n%s", f->name, u,
                                 h);
            }
        }
        free(h);
    }
}

/* The help text of every form defined in file (a path as the compiler saw it; NULL: every
 * form), concatenated. */
static char *helps_of_file(const char *file, int *nforms)
{
    const struct wt_cli_form *forms[64];
    size_t nf = all_forms(forms, 64), len = 0;
    char *all = calloc(1, 1);
    *nforms = 0;
    for (size_t i = 0; i < nf; i++) {
        if (file && strcmp(forms[i]->file, file) != 0)
            continue;
        char *h = help_of(forms[i]);
        all = realloc(all, len + strlen(h) + 1);
        memcpy(all + len, h, strlen(h) + 1);
        len += strlen(h);
        free(h);
        (*nforms)++;
    }
    return all;
}

/* Fails when "--name" is not in help, for an option found in file at line. */
static void must_be_in(const char *help, const char *file, int line, const char *name,
                       const char *how)
{
    char want[96];
    snprintf(want, sizeof want, "--%s ", name);
    char want2[96];
    snprintf(want2, sizeof want2, "--%s\n", name);
    if (!strstr(help, want) && !strstr(help, want2))
        wt_test_fail(__FILE__, __LINE__,
                     "%s:%d: %s --%s, which the help of no command of that file lists", file, line,
                     how, name);
}

static int line_at(const char *text, const char *p)
{
    int l = 1;
    for (const char *q = text; q < p; q++)
        l += *q == '\n';
    return l;
}

WT_TEST(every_option_the_sources_parse_is_in_a_help)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", wt_test_src_path("src/cli"));
    DIR *d = opendir(dir);
    WT_ASSERT(d != NULL);
    struct dirent *e;
    int files = 0, nall;
    char *every = helps_of_file(NULL, &nall);
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (nl < 3 || strcmp(e->d_name + nl - 2, ".c") != 0)
            continue;
        char rel[512], path[2048];
        snprintf(rel, sizeof rel, "src/cli/%s", e->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *src = wt_test_read(path, NULL);
        int nforms;
        char *help = helps_of_file(rel, &nforms);
        files++;
        /* getopt_long outside common.c: options that no table lists. */
        if (strcmp(e->d_name, "common.c") != 0 && strstr(src, "getopt_long("))
            wt_test_fail(__FILE__, __LINE__,
                         "%s:%d: calls getopt_long itself; parse with wt_cli_getopt over a "
                         "wt_cli_form (cli.h) so that --help lists what is parsed",
                         rel, line_at(src, strstr(src, "getopt_long(")));
        /* A getopt table of its own: {"name", required_argument, ...}. */
        for (const char *p = src; (p = strstr(p, "_argument")); p++) {
            const char *q = p;
            while (q > src && *q != '{')
                q--;
            char name[64];
            if (sscanf(q, "{\"%63[a-z0-9-]\"", name) == 1)
                must_be_in(help, rel, line_at(src, p), name, "a getopt table takes");
        }
        /* "--name" in a string: a hand parser's strcmp, or a message naming an option. */
        for (const char *p = src; (p = strstr(p, "--")); p += 2) {
            char name[64];
            if (p > src && (isalnum((unsigned char)p[-1]) || p[-1] == '-'))
                continue; /* not an option: "a--b", "---" */
            if (sscanf(p + 2, "%63[a-z0-9-]", name) != 1 || !isalpha((unsigned char)name[0]))
                continue;
            if (p[2 + strlen(name)] == '=')
                continue; /* another program's option, as in "nvidia-smi --format=csv" */
            /* Only inside a string literal: an odd number of quotes before it on its line. */
            const char *bol = p;
            while (bol > src && bol[-1] != '\n')
                bol--;
            int quotes = 0;
            for (const char *q = bol; q < p; q++)
                quotes += *q == '"' && (q == bol || q[-1] != '\\');
            if (quotes % 2 == 0)
                continue;
            /* A message that shows another command ("`wattage import carbon --series`"), on this
             * line or the two before (one statement). */
            const char *from = bol;
            for (int k = 0; k < 2 && from > src; k++)
                for (from--; from > src && from[-1] != '\n'; from--)
                    ;
            const char *eol = strchr(p, '\n');
            char *other = strstr(from, "`wattage ");
            /* common.c, opts.c, client.c and man.c hold what several forms share. */
            if ((other && (!eol || other < eol)) || strcmp(e->d_name, "common.c") == 0 ||
                strcmp(e->d_name, "opts.c") == 0 || strcmp(e->d_name, "client.c") == 0 ||
                strcmp(e->d_name, "man.c") == 0) {
                must_be_in(every, rel, line_at(src, p), name, "names");
                continue;
            }
            /* main.c reads the top level's own: wattage --help, wattage --version. */
            if (strcmp(e->d_name, "main.c") == 0 &&
                (strcmp(name, "help") == 0 || strcmp(name, "version") == 0))
                continue;
            if (!nforms)
                wt_test_fail(__FILE__, __LINE__, "%s:%d: names --%s but defines no command form",
                             rel, line_at(src, p), name);
            must_be_in(help, rel, line_at(src, p), name, "names");
        }
        free(help);
        free(src);
    }
    closedir(d);
    free(every);
    WT_ASSERT(files >= 10);
}

WT_TEST(getopt_over_a_form_returns_its_ids_and_refuses_the_rest)
{
    static const struct wt_cli_opt t[] = {{"alpha", 'a', "X", "an option with a value"},
                                          {"beta", 0x200, NULL, "a flag"},
                                          {"config", 'c', "FILE", "short too", WT_OPT_SHORT},
                                          {NULL}};
    static const struct wt_cli_form f = {"test", "", "a test form", __FILE__, false, {t}};
    char a0[] = "test", a1[] = "--alpha", a2[] = "1", a3[] = "--beta", a4[] = "-c", a5[] = "f",
         a6[] = "rest", a7[] = "--gamma";
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, NULL};
    optind = 1;
    WT_EQ_INT(wt_cli_getopt(&f, 8, argv), 'a');
    WT_EQ_STR(optarg, "1");
    WT_EQ_INT(wt_cli_getopt(&f, 8, argv), 0x200);
    WT_EQ_INT(wt_cli_getopt(&f, 8, argv), 'c');
    WT_EQ_STR(optarg, "f");
    WT_EQ_INT(wt_cli_getopt(&f, 8, argv), '?'); /* --gamma: not in the table */
    WT_EQ_INT(wt_cli_getopt(&f, 8, argv), -1);
    WT_EQ_STR(argv[optind], "rest");
    char b1[] = "--help";
    char *hv[] = {a0, b1, NULL};
    optind = 1;
    fflush(stdout);
    WT_EQ_INT(wt_cli_getopt(&f, 2, hv), WT_CLI_HELP);
}

/* The shared options by name, with the id wt_cli_shared_opt records. */
static const struct {
    const char *name;
    int id;
} shared[] = {
    {"config", WT_OPT_CONFIG}, {"db", WT_OPT_DB},        {"from", WT_OPT_FROM},
    {"to", WT_OPT_TO},         {"url", WT_OPT_URL},      {"token-file", WT_OPT_TOKEN_FILE},
    {"cacert", WT_OPT_CACERT}, {"cert", WT_OPT_CERT},    {"key", WT_OPT_KEY},
    {"json", WT_OPT_JSON},     {"source", WT_OPT_SOURCE}};

WT_TEST(every_shared_option_has_its_shared_id_in_every_form)
{
    const struct wt_cli_form *forms[64];
    size_t nf = all_forms(forms, 64), seen = 0;
    struct wt_cli_common co = {0};
    for (size_t k = 0; k < sizeof shared / sizeof shared[0]; k++) {
        /* long-only shared options sit above 255: no command's letter can take their id */
        if (shared[k].id != WT_OPT_CONFIG)
            WT_ASSERT(shared[k].id > 255);
        WT_ASSERT(wt_cli_shared_opt(shared[k].id, "x", &co));
    }
    WT_ASSERT(!wt_cli_shared_opt('C', "x", &co)); /* report --compare, query --csv: their own */
    for (size_t i = 0; i < nf; i++) {
        if (strcmp(forms[i]->name, "check-config") == 0)
            continue;
        for (size_t k = 0; k < sizeof shared / sizeof shared[0]; k++) {
            const struct wt_cli_opt *o = wt_cli_find_opt(forms[i], shared[k].name);
            if (!o)
                continue;
            seen++;
            if (o->id != shared[k].id)
                wt_test_fail(__FILE__, __LINE__,
                             "%s --%s: id %d, not the shared one (%d), so wt_cli_next would "
                             "hand it to the command",
                             forms[i]->name, o->name, o->id, shared[k].id);
        }
        /* and no option of its own is parsed as a shared one */
        for (size_t t = 0; t < 3 && forms[i]->opts[t]; t++)
            for (const struct wt_cli_opt *o = forms[i]->opts[t]; o->name; o++) {
                bool is_shared = false;
                for (size_t k = 0; k < sizeof shared / sizeof shared[0]; k++)
                    is_shared |= strcmp(o->name, shared[k].name) == 0;
                if (!is_shared && wt_cli_shared_opt(o->id, "x", &co))
                    wt_test_fail(__FILE__, __LINE__, "%s --%s takes a shared option's id %d",
                                 forms[i]->name, o->name, o->id);
            }
    }
    WT_ASSERT(seen >= 40);
}

WT_TEST(next_records_the_shared_options_and_returns_the_own_ones)
{
    static const struct wt_cli_opt own[] = {{"csv", 'C', NULL, "own, with the letter of --cert"},
                                            {"json", WT_OPT_JSON, NULL, "its own help"},
                                            {NULL}};
    static const struct wt_cli_form f = {
        "test", "", "a test form", __FILE__, false, {own, wt_cli_window_opts, wt_cli_conn_opts}};
    char a0[] = "test", a1[] = "--from", a2[] = "-2h", a3[] = "--csv", a4[] = "--cert",
         a5[] = "c.pem", a6[] = "-c", a7[] = "w.yaml", a8[] = "--json", a9[] = "--key",
         a10[] = "k.pem", a11[] = "rest";
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, NULL};
    struct wt_cli_common co = {0};
    optind = 1;
    WT_EQ_INT(wt_cli_next(&f, 12, argv, &co), 'C');
    WT_EQ_INT(wt_cli_next(&f, 12, argv, &co), -1);
    WT_EQ_STR(argv[optind], "rest");
    WT_EQ_STR(co.from, "-2h");
    WT_ASSERT(co.to == NULL);
    WT_EQ_STR(co.conn.cert, "c.pem");
    WT_EQ_STR(co.conn.key, "k.pem");
    WT_EQ_STR(co.config, "w.yaml");
    WT_EQ_STR(co.conn.config, "w.yaml");
    WT_ASSERT(co.json);
}

WT_TEST(window_defaults_to_the_last_hour_and_refuses_an_empty_one)
{
    struct wt_cli_common co = {0};
    int64_t now = 1764000000 * WT_NS_PER_S, from, to;
    WT_EQ_INT(wt_cli_window("test", &co, now, &from, &to), 0);
    WT_EQ_U64((uint64_t)(to - from), (uint64_t)(3600 * WT_NS_PER_S));
    WT_EQ_U64((uint64_t)to, (uint64_t)now);
    co.from = "-1h";
    co.to = "-2h";
    WT_EQ_INT(wt_cli_window("test", &co, now, &from, &to), 2);
    co.to = "-1h"; /* the same instant: empty too */
    WT_EQ_INT(wt_cli_window("test", &co, now, &from, &to), 2);
    co.to = "yesterday";
    WT_EQ_INT(wt_cli_window("test", &co, now, &from, &to), 2);
}

WT_TEST(store_opens_db_over_the_configuration_and_says_when_there_is_none)
{
    char dir[] = "/tmp/wattage-test-cli-XXXXXX", db[128];
    WT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/w.db", dir);
    struct wt_cli_common co = {.db = db};
    struct wt_config cfg;
    struct wt_store *st = NULL;
    WT_EQ_INT(wt_cli_store("test", &co, false, &cfg, &st), 1); /* not there, not created */
    WT_ASSERT(st == NULL);
    wt_config_free(&cfg);
    WT_EQ_INT(wt_cli_store("test", &co, true, &cfg, &st), 0);
    WT_ASSERT(st != NULL);
    WT_EQ_STR(cfg.store.path, db);
    wt_store_close(st);
    wt_config_free(&cfg);
    WT_EQ_INT(wt_cli_store("test", &co, false, NULL, &st), 0); /* now it is */
    wt_store_close(st);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    WT_EQ_INT(system(cmd), 0);
}

/* A manual page as wt_cli_man_write makes it (malloc'd). */
static char *man_of(int section, const char *example)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    WT_ASSERT(m != NULL);
    WT_EQ_INT(wt_cli_man_write(m, section, example), 0);
    WT_EQ_INT(fclose(m), 0);
    return buf;
}

/* s as roff writes it: dashes escaped. */
static void roffed(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 3 < n; s++) {
        if (*s == '-')
            out[k++] = '\\';
        out[k++] = *s;
    }
    out[k] = '\0';
}

WT_TEST(manual_page_1_has_every_form_and_option)
{
    char *man = man_of(1, NULL), want[160], name[96];
    const struct wt_cli_form *forms[64];
    size_t nf = all_forms(forms, 64), nopts = 0;
    WT_CONTAINS(man, ".TH WATTAGE 1 ");
    for (size_t i = 0; i < nf; i++) {
        roffed(forms[i]->name, name, sizeof name);
        snprintf(want, sizeof want, "\n.SS \"wattage %s\"\n", name);
        if (!strstr(man, want))
            wt_test_fail(__FILE__, __LINE__, "wattage(1) lacks the form %s", forms[i]->name);
        /* each option after its form's heading, before the next form's */
        const char *at = strstr(man, want), *end = strstr(at + 1, "\n.SS ");
        for (size_t t = 0; t < 3 && forms[i]->opts[t]; t++)
            for (const struct wt_cli_opt *o = forms[i]->opts[t]; o->name; o++, nopts++) {
                roffed(o->name, name, sizeof name);
                snprintf(want, sizeof want, "\\fB\\-\\-%s\\fR", name);
                const char *p = strstr(at, want);
                if (!p || (end && p > end))
                    wt_test_fail(__FILE__, __LINE__, "wattage(1): %s lacks --%s", forms[i]->name,
                                 o->name);
            }
    }
    WT_ASSERT(nopts >= 100);
    free(man);
}

WT_TEST(manual_page_5_has_every_config_key_with_the_example_s_text)
{
    char *man = man_of(5, wt_test_src_path("deploy/wattage.yaml")), want[160];
    size_t n = 0;
    WT_CONTAINS(man, ".TH WATTAGE.YAML 5 ");
    for (; wt_config_key(n); n++) {
        snprintf(want, sizeof want, "\n.TP\n.B %s\n", wt_config_key(n));
        if (!strstr(man, want))
            wt_test_fail(__FILE__, __LINE__, "wattage.yaml(5) lacks %s", wt_config_key(n));
    }
    WT_ASSERT(n >= 30);
    /* a default from the schema and a description from the example's comment */
    WT_CONTAINS(man, ".B daemon.listen\nDefault: 127.0.0.1:9747.");
    WT_CONTAINS(man, "SQLite database file");
    free(man);
}
