/* SPDX-License-Identifier: MIT */
/*
 * `wattage check-config FILE`: validates a configuration without running anything, secrets
 * included: the key and token files it names are checked as `wattage run` checks them at start
 * (wt_cli_check_secrets, which run calls too), so a file check-config accepts is not refused later.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/carbon.h"
#include "cli/cli.h"
#include "core/secret.h"
#include "serve/kafka.h"
#include "serve/otlp.h"
#include "serve/remote_write.h"

static const struct wt_cli_opt check_opts[] = {{NULL}};

const struct wt_cli_form wt_cli_form_check_config = {
    "check-config",
    "FILE",
    "validates a configuration file (exit 2 with file:line: key: problem on error)",
    __FILE__,
    false,
    {check_opts}};

/* The daemon's own: its TLS key (when TLS is on) and its bearer token. */
static int daemon_secrets(const struct wt_config *cfg, struct wt_err *err)
{
    int rc = 0;
    if (cfg->daemon.tls.cert[0] && cfg->daemon.tls.key[0])
        rc = wt_check_secret_file("daemon.tls.key", cfg->daemon.tls.key, err);
    if (!rc && cfg->daemon.auth.token_file[0])
        rc = wt_check_secret_file("daemon.auth.token_file", cfg->daemon.auth.token_file, err);
    return rc;
}

/* Each endpoint's bearer token and basic-auth password, named as the sender names them. */
static int remote_write_secrets(const struct wt_config *cfg, struct wt_err *err)
{
    struct wt_rw_config *rc_cfg = malloc(sizeof *rc_cfg);
    int rc;
    if (!rc_cfg)
        return -ENOMEM;
    rc = wt_remote_write_config_parse(wt_config_file(cfg), wt_config_section(cfg, "remote_write"),
                                      rc_cfg, err);
    for (size_t i = 0; !rc && i < rc_cfg->n; i++) {
        const struct wt_rw_endpoint_config *e = &rc_cfg->ep[i];
        if (e->bearer_token_file[0])
            rc = wt_check_secret_file("bearer_token_file", e->bearer_token_file, err);
        if (!rc && e->username[0])
            rc = wt_check_secret_file("basic_auth.password_file", e->password_file, err);
        if (rc) {
            char msg[WT_ERR_LEN];
            snprintf(msg, sizeof msg, "%s", err->msg);
            wt_err_set(err, "remote_write[%zu] (%s): %s", i, e->name, msg);
        }
    }
    free(rc_cfg);
    return rc;
}

static int carbon_secrets(const struct wt_config *cfg, struct wt_err *err)
{
    struct wt_carbon_conf *cf = malloc(sizeof *cf);
    if (!cf)
        return -ENOMEM;
    int rc = wt_carbon_conf_from(cfg, cf, err);
    if (!rc)
        rc = wt_carbon_check_secrets(cf, err);
    free(cf);
    return rc;
}

int wt_cli_check_secrets(const struct wt_config *cfg, struct wt_err *err)
{
    int rc = daemon_secrets(cfg, err);
    if (!rc)
        rc = remote_write_secrets(cfg, err);
    if (!rc)
        rc = carbon_secrets(cfg, err);
    if (!rc)
        rc = wt_kafka_check_secrets(cfg, err);
    if (!rc)
        rc = wt_otlp_check_secrets(cfg, err);
    if (rc == -ENOMEM)
        wt_err_set(err, "out of memory");
    return rc;
}

int wt_cmd_check_config(int argc, char **argv)
{
    int c;
    optind = 1;
    while ((c = wt_cli_getopt(&wt_cli_form_check_config, argc, argv)) != -1)
        return c == WT_CLI_HELP ? 0 : 2;
    if (optind != argc - 1) {
        wt_cli_help(stderr, &wt_cli_form_check_config);
        return 2;
    }
    struct wt_config cfg;
    struct wt_err err = {{0}};
    int rc = wt_cli_load_config(argv[optind], &cfg);
    if (rc != 0)
        return rc;
    if (wt_cli_check_secrets(&cfg, &err) != 0) {
        fprintf(stderr, "wattage: %s\n", err.msg);
        wt_config_free(&cfg);
        return 2;
    }
    printf("%s: ok\n", argv[optind]);
    wt_config_free(&cfg);
    return 0;
}
