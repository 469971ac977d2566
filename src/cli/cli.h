/* SPDX-License-Identifier: MIT */
/* The subcommands of `wattage`; each returns the process exit status (0, 1 runtime, 2 usage). */
#ifndef WT_CLI_H
#define WT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"

int wt_cmd_run(int argc, char **argv);
int wt_cmd_status(int argc, char **argv);
int wt_cmd_calibrate(int argc, char **argv);
int wt_cmd_check_config(int argc, char **argv);
int wt_cmd_energy(int argc, char **argv);
int wt_cmd_query(int argc, char **argv);
int wt_cmd_import(int argc, char **argv);
int wt_cli_import_meters(int argc, char **argv); /* src/cli/import_meters.c */
int wt_cmd_job(int argc, char **argv);
int wt_cmd_jobs(int argc, char **argv);
int wt_cmd_exec(int argc, char **argv);
int wt_cmd_schedule(int argc, char **argv);
int wt_cmd_kpi(int argc, char **argv);
int wt_cmd_cap(int argc, char **argv);
int wt_cmd_report(int argc, char **argv);
int wt_cmd_doctor(int argc, char **argv);
int wt_cmd_assess(int argc, char **argv);
int wt_cmd_inference(int argc, char **argv);
int wt_cmd_review(int argc, char **argv);

/*
 * ---- options: one table per command form, from which both getopt_long's options and the
 * --help text (a usage line, then one line per option) are made, so the help lists exactly
 * what is parsed. tests/unit/test_cli.c checks every table against its command's source.
 */
#define WT_CLI_HELP 0x7001 /* wt_cli_getopt: --help was given and the help printed */
#define WT_CLI_MAX_OPTS 48 /* options of one form, all its tables together */

enum {
    WT_OPT_SHORT = 1,    /* also -X, X being the id */
    WT_OPT_REQUIRED = 2, /* shown without brackets in the usage line */
    WT_OPT_REPEAT = 4,   /* may be given more than once ("..." in the usage line) */
};

struct wt_cli_opt {
    const char *name; /* long name, without "--"; NULL ends a table */
    int id;           /* what wt_cli_getopt returns for it: a character, or a value > 255 */
    const char *arg;  /* its argument as the help names it ("FILE", "T"); NULL: a flag */
    const char *help; /* one line: what it does, its default */
    unsigned flags;   /* WT_OPT_* */
};

struct wt_cli_form {
    const char *name;     /* "energy", "job start" */
    const char *args;     /* operands in the usage line ("SERIES", "-- CMD [ARGS...]") */
    const char *summary;  /* what it does, one line */
    const char *file;     /* the source that parses it (__FILE__), for the help test */
    bool stop_at_operand; /* options end at the first operand (exec's CMD keeps its own) */
    const struct wt_cli_opt *opts[3]; /* its tables (shared ones too), NULL after the last */
};

/*
 * getopt_long over a form's tables (optind must be reset by the caller for a new argv). Returns
 * the id of the next option (optarg set for one with an argument), -1 after the last; on
 * --help or -h it prints the form's help on stdout and returns WT_CLI_HELP (the command then
 * exits 0); on an unknown option or a missing argument it prints the problem and a pointer to
 * --help on stderr and returns '?' (exit 2).
 */
int wt_cli_getopt(const struct wt_cli_form *f, int argc, char **argv);
/* Prints a form's help: "usage: wattage NAME [--opt ARG]... ARGS", its summary, one line per
 * option (and -h, --help). */
void wt_cli_help(FILE *out, const struct wt_cli_form *f);
/* The entry of a form's tables named name (a long option without "--"), or NULL. */
const struct wt_cli_opt *wt_cli_find_opt(const struct wt_cli_form *f, const char *name);

/*
 * Hidden commands (src/cli/man.c), from the same tables as --help and the config schema:
 * `wattage __man 1` and `wattage __man 5 [EXAMPLE.yaml]` print wattage(1) and wattage.yaml(5) in
 * roff; `wattage __complete [COMMAND [SUBCOMMAND]]` prints the words that may follow, one a line
 * (for deploy/bash-completion/wattage). argv[0] is the hidden command's name.
 */
int wt_cli_man(int argc, char **argv);
/* The page of section 1 or 5 on out (example: the commented example configuration, may be NULL).
 * Returns 0, 1 (cannot make it, printed) or 2 (no such section). */
int wt_cli_man_write(FILE *out, int section, const char *example);
int wt_cli_complete(int argc, char **argv);

/* The subcommands, for main and `wattage --help`: each with its forms (NULL after the last). */
struct wt_cli_command {
    const char *name;                 /* NULL ends the list */
    int (*fn)(int argc, char **argv); /* argv[0] is the command's name */
    const char *summary;
    const struct wt_cli_form *forms[8];
};
extern const struct wt_cli_command wt_cli_commands[];

/* Each command form's table, defined beside its parser. */
extern const struct wt_cli_form wt_cli_form_run, wt_cli_form_status, wt_cli_form_check_config,
    wt_cli_form_energy, wt_cli_form_query, wt_cli_form_import_smi, wt_cli_form_import_carbon,
    wt_cli_form_job_start, wt_cli_form_job_mark, wt_cli_form_job_end, wt_cli_form_job_show,
    wt_cli_form_jobs, wt_cli_form_jobs_compare, wt_cli_form_exec, wt_cli_form_schedule,
    wt_cli_form_kpi, wt_cli_form_cap_clear, wt_cli_form_report;
extern const struct wt_cli_form wt_cli_form_doctor;
extern const struct wt_cli_form wt_cli_form_import_meters;
/* `wattage report --standard …` (src/cli/statement.c). */
extern const struct wt_cli_form wt_cli_form_report_standard;
bool wt_cli_report_is_standard(int argc, char **argv);
int wt_cli_report_standard(int argc, char **argv);
extern const struct wt_cli_form wt_cli_form_inference;
extern const struct wt_cli_form wt_cli_form_review;
extern const struct wt_cli_form wt_cli_form_calibrate;
extern const struct wt_cli_form wt_cli_form_assess_start, wt_cli_form_assess_status,
    wt_cli_form_assess_report;

/* ---- the options every subcommand shares (src/cli/opts.c) ---- */

/* Their ids: -c is a short option; the long-only ones are above 255, so no command's own
 * letters (report -C, query --csv) can collide with them. A command's own --from, --to or
 * --json entry (with its own help text) takes the same id. */
enum {
    WT_OPT_CONFIG = 'c', /* -c FILE, --config FILE */
    WT_OPT_DB = 0x1000,  /* --db FILE */
    WT_OPT_FROM,         /* --from T */
    WT_OPT_TO,           /* --to T */
    WT_OPT_URL,          /* --url URL */
    WT_OPT_TOKEN_FILE,   /* --token-file FILE */
    WT_OPT_CACERT,       /* --cacert FILE */
    WT_OPT_CERT,         /* --cert FILE */
    WT_OPT_KEY,          /* --key FILE */
    WT_OPT_JSON,         /* --json */
    WT_OPT_SOURCE,       /* --source URL: the fleet's engine instead of the store */
};

/*
 * The secret files cfg names (daemon.tls.key, daemon.auth.token_file, remote_write tokens and
 * passwords, carbon source tokens), each through wt_check_secret_file (core/secret.h) under the
 * name its module gives it: what `wattage run` checks at start and `check-config` reports.
 * 0, or a negative errno with err naming the first refused file (src/cli/check_config.c).
 */
int wt_cli_check_secrets(const struct wt_config *cfg, struct wt_err *err) WT_MUST_USE;

/* ---- the daemon's jobs API, for job, jobs and exec (src/cli/job.c) ---- */
/* The help of --source where it means the fleet's series (energy, kpi, schedule). */
#define WT_CLI_SOURCE_HELP                                                                         \
    "every node's series from an engine that receives their remote write: "                        \
    "prometheus://HOST:PORT, "                                                                     \
    "victoriametrics://HOST:PORT or http(s)://URL"

/* The connection options of the daemon's clients (job, jobs, exec): -c, --url, --token-file,
 * --cacert, --cert, --key. */
extern const struct wt_cli_opt wt_cli_conn_opts[];
/* The store's readers: -c FILE, --db FILE. */
extern const struct wt_cli_opt wt_cli_store_opts[];
/* An exact window: --from T, --to T (default the last hour). */
extern const struct wt_cli_opt wt_cli_window_opts[];

/* How to reach the daemon, as the command line says it (each NULL when not given). */
struct wt_cli_conn {
    const char *config;     /* -c FILE */
    const char *url;        /* --url URL */
    const char *token_file; /* --token-file FILE */
    const char *cacert;     /* --cacert FILE: the CA that signed the daemon's certificate */
    const char *cert, *key; /* --cert FILE --key FILE: a client certificate (mutual TLS) */
};

/* What the shared options said (each NULL or false when not given). */
struct wt_cli_common {
    const char *config;      /* -c FILE (also in conn.config) */
    const char *db;          /* --db FILE */
    const char *from, *to;   /* --from T, --to T as given; a caller may preset its defaults */
    bool json;               /* --json */
    const char *source;      /* --source URL */
    struct wt_cli_conn conn; /* -c, --url, --token-file, --cacert, --cert, --key */
};

/* Records a shared option (an id above, with its argument) in *co; false when id is not one. */
bool wt_cli_shared_opt(int id, const char *arg, struct wt_cli_common *co);
/*
 * wt_cli_getopt, with the shared options recorded in *co: returns the next option that is the
 * command's own, -1 after the last, WT_CLI_HELP or '?' as wt_cli_getopt does.
 */
int wt_cli_next(const struct wt_cli_form *f, int argc, char **argv, struct wt_cli_common *co);
/* After the options: 0 when no operand is left, else prints "wattage NAME: unexpected argument
 * 'X'" and returns 2. */
int wt_cli_no_operands(const struct wt_cli_form *f, int argc, char **argv);
/*
 * The window of --from and --to (default -1h and now, unless preset in *co): prints "wattage
 * CMD: --from: expected ..." or "wattage CMD: the window is empty: --to (T) must be after --from
 * (F)" and returns 2; 0 when it is one.
 */
int wt_cli_window(const char *cmd, const struct wt_cli_common *co, int64_t now, int64_t *from,
                  int64_t *to);
/* Parses a time argument with wt_time_parse; prints "wattage CMD: OPT: expected …", returns 2. */
int wt_cli_parse_time(const char *cmd, const char *opt, const char *s, int64_t now, int64_t *out);

struct wt_store;
/*
 * Loads the configuration (-c, else the default file, else the built-in defaults) into *cfg
 * (NULL when the command needs only the store) and opens the store: --db, else store.path.
 * cfg->store.path is set to the path opened; the caller frees *cfg with wt_config_free in every
 * case. Prints the error; returns 0, 1 (no store, cannot open it) or 2 (bad configuration or --db).
 */
int wt_cli_store(const char *cmd, const struct wt_cli_common *co, bool create,
                 struct wt_config *cfg, struct wt_store **st);
/*
 * Where a store path comes from, for messages: "from --db" (db given), "store.path of FILE", or
 * the default's rule (wt_config_default_store_path) and why no configuration named one. Returns
 * true for the default.
 */
bool wt_cli_store_origin(const char *db, const struct wt_config *cfg, char *why, size_t n);
/* The same for a configuration already loaded (wt_cli_load_config): opens --db, else
 * cfg->store.path, and sets cfg->store.path to the path opened. 0, 1 or 2 (printed). */
int wt_cli_open_store(const char *cmd, const struct wt_cli_common *co, bool create,
                      struct wt_config *cfg, struct wt_store **st);
/*
 * Asks the running daemon (where wt_cli_api_setup says it is, with its token) where its store
 * is: "store.path" of GET /api/v1/status (src/cli/daemon_store.c). Returns 0 with path filled,
 * -ENOENT (the daemon answered without one, or refused), -EIO (no daemon) or -EINVAL (bad
 * client settings); why says which, for a message.
 */
int wt_cli_daemon_store(const struct wt_cli_conn *conn, char *path, size_t n, char *why,
                        size_t whyn);
/*
 * Opens the engine client of --source (store/promsrc.h) with the CLI's TLS settings. Prints the
 * error and returns a negative errno when source is not one.
 */
struct wt_promsrc;
int wt_cli_open_source(const char *source, struct wt_promsrc **out);
/*
 * Copies the raw samples of the selector sel (a PromQL series selector, no range) over
 * [from - 30 s, to + 30 s] from the engine into st, an hour per query (so a long window is not
 * one huge answer). Series without a node label are not a node's (remote write adds it; a scrape
 * adds it with labels: {node: NAME}) and are skipped, as are metrics wattage does not know.
 * *copied counts the series written from the first hour, *readings every sample written. 0, or
 * a negative errno with err (src/cli/source.c).
 */
struct wt_store;
int wt_cli_source_copy(struct wt_promsrc *ps, const char *sel, int64_t from, int64_t to,
                       struct wt_store *st, size_t *copied, size_t *readings, struct wt_err *err);
/*
 * --source for a command (cmd, for messages) that runs its local code on the engine's readings:
 * opens the engine and copies sel over [from, to] (wt_cli_source_copy) into a working store in a
 * new temporary directory, its path in dir[0..n) ("" when none was made). 0 with *st open; 2 for
 * a URL that is not a source (printed); 1 when the directory cannot be made (printed) or the
 * engine not read (err, for the caller to print with the URL). The caller closes *st and removes
 * the directory (wt_cli_source_cleanup) in every case.
 */
int wt_cli_source_store(const char *cmd, const char *source, const char *sel, int64_t from,
                        int64_t to, char *dir, size_t n, struct wt_store **st, size_t *copied,
                        size_t *readings, struct wt_err *err);
/* The same two with chunk_ns (> 0) of raw samples per query instead of an hour: for a long
 * period of slow meters (`report --standard --source`: 6 hours). */
int wt_cli_source_copy_every(struct wt_promsrc *ps, const char *sel, int64_t from, int64_t to,
                             int64_t chunk_ns, struct wt_store *st, size_t *copied,
                             size_t *readings, struct wt_err *err);
/*
 * The grid's carbon intensity the daemons exported (wattage_grid_carbon_intensity_grams_per_kwh,
 * per zone label, with or without a node label) over [from, to] from source into st's carbon
 * table as intensity steps (a sample holds its value until the next one, at most an hour; per
 * zone the series with the most samples), so that CUE reads them as it reads `wattage import
 * carbon`'s. *points counts the steps stored. 0, or a negative errno with err.
 */
int wt_cli_source_carbon(const char *source, int64_t from, int64_t to, struct wt_store *st,
                         size_t *points, struct wt_err *err);
int wt_cli_source_store_every(const char *cmd, const char *source, const char *sel, int64_t from,
                              int64_t to, int64_t chunk_ns, char *dir, size_t n,
                              struct wt_store **st, size_t *copied, size_t *readings,
                              struct wt_err *err);
/*
 * wt_cli_source_store with the window's readings digested (wt_promsrc_digest in
 * store/promsrc.h: counters exact from their edges, with the raw samples where a reset or a gap
 * lies; gauges one point per chart step; d->raw copied as it is) instead of every raw sample.
 * *copied counts the series written, *readings the readings. Returns as wt_cli_source_store.
 */
struct wt_promsrc_digest;
int wt_cli_source_store_digest(const char *cmd, const char *source,
                               const struct wt_promsrc_digest *d, int64_t from, int64_t to,
                               char *dir, size_t n, struct wt_store **st, size_t *copied,
                               size_t *readings, struct wt_err *err);
/* Removes the working store of wt_cli_source_store and its directory (dir "": nothing). */
void wt_cli_source_cleanup(const char *dir);
/*
 * Loads the configuration for a command: `path` when given (must exist), else the default file
 * when it exists, else the built-in defaults. Prints the error and returns 2 on bad input.
 */
int wt_cli_load_config(const char *path, struct wt_config *cfg);

/* ---- the daemon's client, for job, jobs and exec (src/cli/client.c) ---- */

struct wt_cli_api {
    char url[300];            /* "http://127.0.0.1:9747", no trailing slash */
    char token[512];          /* bearer token, "" for none */
    char cacert[WT_PATH_LEN]; /* CA file for https, "" for the system's */
    char cert[WT_PATH_LEN];   /* client certificate (PEM), "" for none */
    char key[WT_PATH_LEN];    /* its private key (PEM), set with cert */
    long connect_ms;          /* connect and TLS handshake limit per request; 0: 3 s */
    long timeout_ms;          /* whole request limit; 0: 30 s */
};
/*
 * Where the daemon is: --url, else WATTAGE_URL, else client.url, else daemon.listen of the
 * configuration (https when it has daemon.tls.cert, which is then the CA to trust). The CA:
 * --cacert, else WATTAGE_CACERT, else client.cacert. The client certificate and key: --cert and
 * --key, else WATTAGE_CERT and WATTAGE_KEY, else client.cert and client.key; they go together.
 * The token: WATTAGE_TOKEN, else --token-file, else client.token_file, else
 * daemon.auth.token_file when readable. Returns 0 or 2 (bad configuration or flags, printed).
 */
int wt_cli_api_setup(const struct wt_cli_conn *conn, struct wt_cli_api *api);
/*
 * One request: fills *status and *reply (malloc'd, NUL-terminated). Returns 0, or a negative
 * errno when the daemon could not be reached (why says so).
 */
int wt_cli_api_call(const struct wt_cli_api *api, const char *method, const char *path,
                    const char *body, long *status, char **reply, char *why, size_t whyn);
struct cJSON;
/*
 * One request whose reply is JSON: returns 0 with *out (a 2xx; freed with cJSON_Delete), 1 (the
 * daemon is unreachable or failed) or 2 (a 4xx); errors are printed as "wattage CMD: ...", with
 * the daemon's own message for a 4xx or 5xx.
 */
int wt_cli_api_json(const struct wt_cli_api *api, const char *cmd, const char *method,
                    const char *path, const char *body, struct cJSON **out);
/* The JSON body of POST /api/v1/jobs from the command line (*out freed with cJSON_free). 0/1/2. */
int wt_cli_job_body(const char *cmd, const char *name, char **tags, int ntags, const char *gpus,
                    char **targets, int ntargets, char **out);
/* Prints a job of GET /api/v1/jobs/{id} for a person. */
void wt_cli_print_job(FILE *out, const struct cJSON *job);
/*
 * The figures of a job that has just ended: the store writes every store.flush_interval, so
 * the end of the window may not be on disk yet. Polls GET /api/v1/jobs/{id} until its coverage
 * reaches 0.999 or wait_s passes (each request bounded by what is left, at least 0.5 s), starting
 * from first (a reply already in hand, may be NULL; consumed). Returns the job (the caller frees
 * it with cJSON_Delete), or NULL when it cannot be read; *final is false when its coverage is
 * still below 0.999, i.e. the figures are provisional.
 */
struct cJSON *wt_cli_final_job(struct wt_cli_api *api, const char *id, struct cJSON *first,
                               double wait_s, bool *final);
/*
 * Prints a job that has just ended: as one line of JSON with "provisional": true|false, or for
 * a person followed, when not final, by a line saying the figures are provisional, with their
 * coverage.
 */
void wt_cli_print_ended(FILE *out, struct cJSON *job, bool json, bool final);

/*
 * `wattage inference --source URL` (src/cli/inference_source.c): every node's inference series
 * and GPU energy of [from, to] (and a pad) read from the engine into a working store in a new
 * temporary directory (its path in dir), a node's targets and GPUs named NODE/TARGET and
 * NODE/INDEX there. Returns 0 with *st open, or 1 / 2 (printed). wt_cli_inference_source_done
 * closes st and removes the directory (dir "" or NULL: only closes).
 */
struct wt_store;
int wt_cli_inference_source(const char *source, int64_t from, int64_t to, char *dir, size_t n,
                            struct wt_store **st);
void wt_cli_inference_source_done(struct wt_store *st, char *dir);

/*
 * `wattage status`: one line per inference target over the last window_s seconds, from the
 * store at cfg's store.path (cli/inference.c); prints nothing when there is no store or no
 * target with two scrapes in the window.
 */
void wt_cli_inference_status(const struct wt_config *cfg, double window_s, FILE *out);

/*
 * The rows of `wattage inference --json` over [from, to] in st (cfg gives carbon and the node's
 * wall), as a cJSON array for the report's Serving section; NULL when there is none or on error.
 */
struct cJSON *wt_cli_inference_rows_json(struct wt_store *st, const struct wt_config *cfg,
                                         int64_t from, int64_t to);

#endif
