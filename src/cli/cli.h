/* SPDX-License-Identifier: MIT */
/* The subcommands of `wattage`; each returns the process exit status (0, 1 runtime, 2 usage). */
#ifndef WT_CLI_H
#define WT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"

int wt_cmd_run(int argc, char **argv);
int wt_cmd_status(int argc, char **argv);
int wt_cmd_check_config(int argc, char **argv);
int wt_cmd_energy(int argc, char **argv);
int wt_cmd_query(int argc, char **argv);
int wt_cmd_import(int argc, char **argv);
int wt_cmd_job(int argc, char **argv);
int wt_cmd_jobs(int argc, char **argv);
int wt_cmd_exec(int argc, char **argv);
int wt_cmd_schedule(int argc, char **argv);

struct wt_store;
/*
 * Opens the store for a command: db when given, else store.path of the configuration (config or
 * the default file). Prints the error; returns 0, 1 (no store, cannot open) or 2 (bad config).
 */
int wt_cli_open_store(const char *config, const char *db, bool create, struct wt_store **out);
/*
 * Opens the engine client of --source (store/promsrc.h) with the CLI's TLS settings. Prints the
 * error and returns a negative errno when source is not one.
 */
struct wt_promsrc;
int wt_cli_open_source(const char *source, struct wt_promsrc **out);
/* Parses a time argument with wt_time_parse; prints "wattage CMD: OPT: expected …", returns 2. */
int wt_cli_parse_time(const char *cmd, const char *opt, const char *s, int64_t now, int64_t *out);

/*
 * Loads the configuration for a command: `path` when given (must exist), else the default file
 * when it exists, else the built-in defaults. Prints the error and returns 2 on bad input.
 */
int wt_cli_load_config(const char *path, struct wt_config *cfg);

/* ---- the daemon's jobs API, for job, jobs and exec (src/cli/job.c) ---- */

/* How to reach the daemon, as the command line says it (each NULL when not given). */
struct wt_cli_conn {
    const char *config;     /* -c FILE */
    const char *url;        /* --url URL */
    const char *token_file; /* --token-file FILE */
    const char *cacert;     /* --cacert FILE: the CA that signed the daemon's certificate */
    const char *cert, *key; /* --cert FILE --key FILE: a client certificate (mutual TLS) */
};
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
/* The JSON body of POST /api/v1/jobs from the command line (*out freed with cJSON_free). 0/1/2. */
int wt_cli_job_body(const char *cmd, const char *name, char **tags, int ntags, const char *gpus,
                    char **targets, int ntargets, char **out);
struct cJSON;
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

#endif
