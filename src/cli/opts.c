/* SPDX-License-Identifier: MIT */
/*
 * The options every subcommand shares, parsed in one place: the configuration (-c FILE), the
 * store (--db FILE), the time window (--from T, --to T), the daemon connection (--url,
 * --token-file, --cacert, --cert, --key) and --json. Their tables are here; wt_cli_next takes
 * them out of a command's option loop, and wt_cli_window and wt_cli_store turn them into a
 * window and an open store, with one message each for what can go wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"

int wt_cli_load_config(const char *path, struct wt_config *cfg)
{
    struct wt_err err = {{0}};
    wt_config_defaults(cfg);
    if (!path) {
        if (access(WT_DEFAULT_CONFIG, F_OK) != 0)
            return 0; /* no file: the built-in defaults */
        path = WT_DEFAULT_CONFIG;
    }
    int rc = wt_config_load(path, cfg, &err);
    if (rc != 0) {
        fprintf(stderr, "wattage: %s\n", err.msg);
        return 2;
    }
    wt_log_set_level(cfg->daemon.log_level);
    return 0;
}

const struct wt_cli_opt wt_cli_conn_opts[] = {
    {"config", WT_OPT_CONFIG, "FILE", "the configuration (default " WT_DEFAULT_CONFIG ")",
     WT_OPT_SHORT},
    {"url", WT_OPT_URL, "URL",
     "the daemon: http(s)://HOST:PORT (default WATTAGE_URL, client.url, else daemon.listen)"},
    {"token-file", WT_OPT_TOKEN_FILE, "FILE",
     "file with the bearer token (default WATTAGE_TOKEN, client.token_file, "
     "daemon.auth.token_file)"},
    {"cacert", WT_OPT_CACERT, "FILE",
     "CA that signed the daemon's certificate (default WATTAGE_CACERT, client.cacert)"},
    {"cert", WT_OPT_CERT, "FILE",
     "client certificate for mutual TLS, with --key (default WATTAGE_CERT, client.cert)"},
    {"key", WT_OPT_KEY, "FILE",
     "the client certificate's private key (default WATTAGE_KEY, client.key)"},
    {NULL}};

const struct wt_cli_opt wt_cli_store_opts[] = {
    {"config", WT_OPT_CONFIG, "FILE", "the configuration (default " WT_DEFAULT_CONFIG ")",
     WT_OPT_SHORT},
    {"db", WT_OPT_DB, "FILE", "the store's database (default store.path of the configuration)"},
    {NULL}};

const struct wt_cli_opt wt_cli_window_opts[] = {
    {"from", WT_OPT_FROM, "T",
     "the window's start: RFC 3339, unix seconds or relative (-2h); default -1h"},
    {"to", WT_OPT_TO, "T", "the window's end (default now)"},
    {NULL}};

bool wt_cli_shared_opt(int id, const char *arg, struct wt_cli_common *co)
{
    switch (id) {
    case WT_OPT_CONFIG:
        co->config = co->conn.config = arg;
        return true;
    case WT_OPT_DB:
        co->db = arg;
        return true;
    case WT_OPT_FROM:
        co->from = arg;
        return true;
    case WT_OPT_TO:
        co->to = arg;
        return true;
    case WT_OPT_URL:
        co->conn.url = arg;
        return true;
    case WT_OPT_TOKEN_FILE:
        co->conn.token_file = arg;
        return true;
    case WT_OPT_CACERT:
        co->conn.cacert = arg;
        return true;
    case WT_OPT_CERT:
        co->conn.cert = arg;
        return true;
    case WT_OPT_KEY:
        co->conn.key = arg;
        return true;
    case WT_OPT_JSON:
        co->json = true;
        return true;
    case WT_OPT_SOURCE:
        co->source = arg;
        return true;
    }
    return false;
}

int wt_cli_next(const struct wt_cli_form *f, int argc, char **argv, struct wt_cli_common *co)
{
    int c;
    while ((c = wt_cli_getopt(f, argc, argv)) != -1 && wt_cli_shared_opt(c, optarg, co))
        ;
    return c;
}

int wt_cli_no_operands(const struct wt_cli_form *f, int argc, char **argv)
{
    if (optind >= argc)
        return 0;
    fprintf(stderr, "wattage %s: unexpected argument '%s'\n", f->name, argv[optind]);
    return 2;
}

int wt_cli_window(const char *cmd, const struct wt_cli_common *co, int64_t now, int64_t *from,
                  int64_t *to)
{
    const char *fs = co->from ? co->from : "-1h", *ts = co->to ? co->to : "now";
    int rc;
    if ((rc = wt_cli_parse_time(cmd, "--from", fs, now, from)) ||
        (rc = wt_cli_parse_time(cmd, "--to", ts, now, to)))
        return rc;
    if (*to <= *from) {
        fprintf(stderr, "wattage %s: the window is empty: --to (%s) must be after --from (%s)\n",
                cmd, ts, fs);
        return 2;
    }
    return 0;
}

int wt_cli_parse_time(const char *cmd, const char *opt, const char *s, int64_t now, int64_t *out)
{
    if (wt_time_parse(s, now, out) != 0) {
        fprintf(stderr,
                "wattage %s: %s: expected RFC 3339 (2026-11-29T18:00:00Z), unix seconds or a "
                "relative time like -2h (got \"%s\")\n",
                cmd, opt, s);
        return 2;
    }
    return 0;
}

bool wt_cli_store_origin(const char *db, const struct wt_config *cfg, char *why, size_t n)
{
    char def[WT_PATH_LEN], rule[160];
    wt_config_default_store_path(def, sizeof def, rule, sizeof rule);
    if (db) {
        snprintf(why, n, "given with --db");
        return false;
    }
    if (strcmp(cfg->store.path, def) != 0) {
        snprintf(why, n, "store.path of %s", cfg->source[0] ? cfg->source : "the configuration");
        return false;
    }
    if (cfg->source[0])
        snprintf(why, n, "%s; %s sets no store.path", rule, cfg->source);
    else
        snprintf(why, n, "%s; there is no configuration file (%s does not exist, no -c)", rule,
                 WT_DEFAULT_CONFIG);
    return true;
}

/* Where a daemon run as root without a configuration keeps its store. */
#define SYSTEM_STORE "/var/lib/wattage/wattage.db"

int wt_cli_open_store(const char *cmd, const struct wt_cli_common *co, bool create,
                      struct wt_config *cfg, struct wt_store **st)
{
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = create};
    char why[512];
    *st = NULL;
    if (co->db && strlen(co->db) >= sizeof cfg->store.path) {
        fprintf(stderr, "wattage %s: --db: the path is longer than %zu bytes\n", cmd,
                sizeof cfg->store.path - 1);
        return 2;
    }
    if (co->db)
        snprintf(cfg->store.path, sizeof cfg->store.path, "%s", co->db);
    bool by_default = wt_cli_store_origin(co->db, cfg, why, sizeof why);
    int rc = wt_store_open(cfg->store.path, &o, st, &err);
    if (rc == 0)
        return 0;
    if (rc != -ENOENT) {
        fprintf(stderr, "wattage %s: %s (%s)\n", cmd, err.msg, why);
        return 1;
    }
    /* A user's default is not where a daemon run as root keeps its store: look there too. */
    bool other = by_default && strcmp(cfg->store.path, SYSTEM_STORE) != 0;
    int there = other ? access(SYSTEM_STORE, F_OK) : -1;
    if (there != 0 && other && errno == EACCES) {
        fprintf(stderr,
                "wattage %s: no store at %s (%s), and this user may not read " SYSTEM_STORE
                " (a system daemon's); name a store with --db FILE, or run as a user who may "
                "read it\n",
                cmd, cfg->store.path, why);
        return 1;
    }
    if (there == 0) {
        struct wt_err e2 = {{0}};
        if (wt_store_open(SYSTEM_STORE, &o, st, &e2) == 0) {
            snprintf(cfg->store.path, sizeof cfg->store.path, "%s", SYSTEM_STORE);
            return 0;
        }
        fprintf(stderr, "wattage %s: no store at %s (%s); %s\n", cmd, cfg->store.path, why, e2.msg);
        return 1;
    }
    /* The running daemon knows where it writes (started with --db, or by another user). */
    char asked[WT_PATH_LEN], dwhy[600] = "";
    if (by_default && wt_cli_daemon_store(&co->conn, asked, sizeof asked, dwhy, sizeof dwhy) == 0) {
        struct wt_err e3 = {{0}};
        if (wt_store_open(asked, &o, st, &e3) == 0) {
            snprintf(cfg->store.path, sizeof cfg->store.path, "%s", asked);
            return 0;
        }
        fprintf(stderr, "wattage %s: no store at %s (%s); %s is %s, which cannot be opened: %s\n",
                cmd, cfg->store.path, why, dwhy, asked, e3.msg);
        return 1;
    }
    fprintf(stderr,
            "wattage %s: no store at %s (%s)%s%s%s; start the daemon (wattage run) with the same "
            "store, or name it with --db FILE or -c FILE (store.path)\n",
            cmd, cfg->store.path, why,
            other ? ", nor at " SYSTEM_STORE " (a daemon run as root without a configuration)" : "",
            dwhy[0] ? "; asked the daemon: " : "", dwhy);
    return 1;
}

int wt_cli_store(const char *cmd, const struct wt_cli_common *co, bool create,
                 struct wt_config *cfg, struct wt_store **st)
{
    struct wt_config own;
    struct wt_config *c = cfg ? cfg : &own;
    int rc = wt_cli_load_config(co->config, c);
    *st = NULL;
    if (rc == 0)
        rc = wt_cli_open_store(cmd, co, create, c, st);
    if (!cfg)
        wt_config_free(c);
    return rc;
}
