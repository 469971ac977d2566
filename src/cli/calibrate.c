/* SPDX-License-Identifier: MIT */
/*
 * `wattage calibrate --load CMD [--steps 100,75,50,25] [--hold 60s]`: runs the user's load
 * command while it steps every GPU's power limit through the steps (shares of its max limit),
 * through the capper's record of changes (alert/alert.h: a line before each change, so a crash
 * leaves nothing a restart or `wattage cap clear` cannot put back), and restores the limits at
 * the end, on failure and on SIGINT/SIGTERM. At each step it averages, over the second half of
 * the hold, the running daemon's readings (GET /api/v1/status): the GPUs' sum, the node (GPUs +
 * RAPL packages and DRAM), and this node's wall meters of the topology (pdu_outlet, bmc). It
 * fits wall = a + b x chip (audit/calibrate.h) and stores the model with its date beside the
 * store; a wall that does not track the chips, a load that fails or exits early, or a GPU lost
 * mid-step store nothing.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alert/alert.h"
#include "audit/calibrate.h"
#include "audit/topology.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "core/config.h"

#define MAX_STEPS 16
#define CMD "wattage calibrate"

enum { OPT_LOAD = 'l', OPT_STEPS = 's', OPT_HOLD = 'H' };

static const struct wt_cli_opt calib_opts[] = {
    {"load", OPT_LOAD, "CMD", "the load to run while stepping (through /bin/sh -c), e.g. a burn"},
    {"steps", OPT_STEPS, "LIST",
     "the power limits, percent of each GPU's max limit (default 100,75,50,25)"},
    {"hold", OPT_HOLD, "D", "how long each step lasts; its second half is averaged (default 60s)"},
    {"db", WT_OPT_DB, "FILE", "the store beside which the model is kept (default store.path)"},
    {NULL}};

const struct wt_cli_form wt_cli_form_calibrate = {
    "calibrate",
    "--load CMD",
    "steps the GPUs' power limits under a load and fits the wall's power on the chips'",
    __FILE__,
    false,
    {calib_opts, wt_cli_conn_opts}};

static volatile sig_atomic_t stop_sig;
static void on_signal(int sig)
{
    stop_sig = sig;
}

struct step {
    double share;
    double chip_w, node_w, pdu_w, bmc_w;
    int n, npdu, nbmc;
};

static int parse_steps(const char *s, double *out, int *n)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 100 || *n == MAX_STEPS || (*end && *end != ','))
            return -EINVAL;
        out[(*n)++] = (double)v / 100;
        p = *end ? end + 1 : end;
    }
    return *n ? 0 : -EINVAL;
}

/*
 * Whether a facility point of the status (o: its target, point, kind and name) is one of this
 * node's meters of role r: the topology's own match (audit/topology.h), so a meter of another
 * node, another point of the target, or a point its `match` leaves out is never this node's wall.
 */
static bool is_wall(const struct wt_topology *t, enum wt_role r, const cJSON *o)
{
    char lb[WT_LABELS_LEN] = "";
    static const char *const keys[] = {"target", "point", "kind", "name"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
        if (cJSON_IsString(v) && wt_labels_add(lb, sizeof lb, keys[k], v->valuestring) != 0)
            return false;
    }
    for (size_t i = 0; i < t->nmeters; i++) {
        const struct wt_meter *m = &t->meters[i];
        if (m->role == r && strcmp(m->node, t->node) == 0 && wt_meter_matches(m, lb))
            return true;
    }
    return false;
}

/* One sample of the daemon's status into s; *gpus the GPUs answering, and lost (n bytes) names
 * those listed but not answering ("gpu 1 (GPU-…)"). 0, or 1 (printed). */
static int sample(const struct wt_cli_api *api, const struct wt_topology *t, struct step *s,
                  int *gpus, char *lost, size_t n)
{
    cJSON *st = NULL;
    if (wt_cli_api_json(api, CMD, "GET", "/api/v1/status", NULL, &st) != 0)
        return 1;
    double chip = 0, cpu = 0, pdu = 0, bmc = 0;
    int npdu = 0, nbmc = 0;
    *gpus = 0;
    size_t used = 0;
    lost[0] = '\0';
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(st, "gpus"))
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "power_watts");
        const cJSON *up = cJSON_GetObjectItemCaseSensitive(o, "up");
        if (cJSON_IsNumber(p) && !cJSON_IsFalse(up)) {
            chip += p->valuedouble;
            (*gpus)++;
        } else if (used < n) {
            const cJSON *ix = cJSON_GetObjectItemCaseSensitive(o, "index");
            const char *uuid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "uuid"));
            int w = snprintf(lost + used, n - used, "%sgpu %d (%s)", used ? ", " : "",
                             cJSON_IsNumber(ix) ? ix->valueint : -1, uuid ? uuid : "?");
            used += w > 0 ? (size_t)w : 0;
        }
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(st, "cpu"))
    {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "domain");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "power_watts");
        if (cJSON_IsString(d) && cJSON_IsNumber(p) &&
            (strcmp(d->valuestring, "package") == 0 || strcmp(d->valuestring, "dram") == 0))
            cpu += p->valuedouble;
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(st, "facility"))
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "power_watts");
        if (!cJSON_IsNumber(p))
            continue;
        if (is_wall(t, WT_ROLE_PDU_OUTLET, o)) {
            pdu += p->valuedouble;
            npdu++;
        } else if (is_wall(t, WT_ROLE_BMC, o)) {
            bmc += p->valuedouble;
            nbmc++;
        }
    }
    cJSON_Delete(st);
    s->chip_w += chip;
    s->node_w += chip + cpu;
    if (npdu) {
        s->pdu_w += pdu;
        s->npdu++;
    }
    if (nbmc) {
        s->bmc_w += bmc;
        s->nbmc++;
    }
    s->n++;
    return 0;
}

/* The load's state: 0 running, else why it is not (printed into why). */
static int load_gone(pid_t pid, char *why, size_t n)
{
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == 0)
        return 0;
    if (r == pid && WIFEXITED(status))
        snprintf(why, n, "the load command exited early (status %d)", WEXITSTATUS(status));
    else if (r == pid && WIFSIGNALED(status))
        snprintf(why, n, "the load command was killed early (signal %d)", WTERMSIG(status));
    else
        snprintf(why, n, "the load command is gone");
    return 1;
}

int wt_cmd_calibrate(int argc, char **argv)
{
    struct wt_cli_common co = {0};
    const char *load = NULL, *steps_s = "100,75,50,25";
    int64_t hold_ns = 60 * WT_NS_PER_S;
    int c;
    while ((c = wt_cli_next(&wt_cli_form_calibrate, argc, argv, &co)) != -1) {
        switch (c) {
        case OPT_LOAD:
            load = optarg;
            break;
        case OPT_STEPS:
            steps_s = optarg;
            break;
        case OPT_HOLD:
            if (wt_duration_parse(optarg, &hold_ns) != 0 || hold_ns < WT_NS_PER_S ||
                hold_ns > 3600 * WT_NS_PER_S) {
                fprintf(stderr, CMD ": --hold: expected a duration from 1s to 1h (got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    double shares[MAX_STEPS];
    int nsteps = 0;
    if (parse_steps(steps_s, shares, &nsteps) != 0) {
        fprintf(stderr,
                CMD ": --steps: expected up to %d percentages 1..100 separated by commas (got "
                    "\"%s\")\n",
                MAX_STEPS, steps_s);
        return 2;
    }
    if (!load || !*load || wt_cli_no_operands(&wt_cli_form_calibrate, argc, argv)) {
        fprintf(stderr, CMD ": --load CMD is required (the load to run while stepping)\n");
        wt_cli_help(stderr, &wt_cli_form_calibrate);
        return 2;
    }
    struct wt_config cfg;
    int rc = wt_cli_load_config(co.config, &cfg);
    if (rc)
        return rc;
    if (co.db)
        snprintf(cfg.store.path, sizeof cfg.store.path, "%s", co.db);
    struct wt_alerts_config *acfg = malloc(sizeof *acfg);
    struct wt_topology *topo = NULL;
    struct wt_err err = {{0}};
    struct wt_cli_api api;
    struct step st[MAX_STEPS];
    memset(st, 0, sizeof st);
    int ret = 1, gpus0 = -1;
    pid_t pid = -1;
    bool stepped = false;
    char why[640] = "";
    if (!acfg)
        goto out;
    if (wt_alerts_config_parse(wt_config_file(&cfg), wt_config_section(&cfg, "alerts"), acfg,
                               &err) != 0 ||
        wt_topology_load(&cfg, &topo, &err) != 0) {
        fprintf(stderr, CMD ": %s\n", err.msg);
        ret = 2;
        goto out;
    }
    if ((rc = wt_cli_api_setup(&co.conn, &api)) != 0) {
        ret = rc;
        goto out;
    }
    /* The daemon must be there: the readings are its own. */
    struct step probe = {0};
    char none[8];
    if (sample(&api, topo, &probe, &gpus0, none, sizeof none) != 0) {
        fprintf(stderr, CMD ": needs the running daemon (`wattage run`): its readings are the "
                            "figures fitted\n");
        goto out;
    }
    if (gpus0 == 0) {
        fprintf(stderr, CMD ": the daemon sees no GPU: nothing to step\n");
        goto out;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, CMD ": cannot start the load: %s\n", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execl("/bin/sh", "sh", "-c", load, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    fprintf(stderr, CMD ": load started (pid %d): %d steps of %.0f s on %d GPUs\n", (int)pid,
            nsteps, (double)hold_ns / 1e9, gpus0);
    for (int k = 0; k < nsteps && !why[0]; k++) {
        double set[64];
        size_t nset = 0;
        st[k].share = shares[k];
        stepped = true;
        if (wt_cap_set_share(&cfg, acfg, shares[k], "calibrate", set, 64, &nset, &err) != 0) {
            snprintf(why, sizeof why, "step %.0f%%: %s", 100 * shares[k], err.msg);
            break;
        }
        int64_t t0 = wt_now_mono_ns(), half = t0 + hold_ns / 2, end = t0 + hold_ns;
        int64_t next = half;
        while (!why[0]) {
            int64_t now = wt_now_mono_ns();
            if (stop_sig) {
                snprintf(why, sizeof why, "interrupted (signal %d)", (int)stop_sig);
                break;
            }
            if (load_gone(pid, why, sizeof why)) {
                pid = -1;
                break;
            }
            if (now >= end)
                break;
            if (now >= next) {
                int g = 0;
                char lost[160];
                if (sample(&api, topo, &st[k], &g, lost, sizeof lost) != 0) {
                    snprintf(why, sizeof why, "the daemon stopped answering");
                    break;
                }
                if (g < gpus0) {
                    snprintf(why, sizeof why,
                             "step %.0f%%: a GPU was lost mid-step (%d of %d "
                             "answering; lost: %s)",
                             100 * shares[k], g, gpus0, lost[0] ? lost : "no longer listed");
                    break;
                }
                next += WT_NS_PER_S;
            }
            wt_sleep_until_mono(now + 100 * WT_NS_PER_MS);
        }
        if (!why[0] && st[k].n == 0)
            snprintf(why, sizeof why, "step %.0f%%: no reading in its second half",
                     100 * shares[k]);
    }
    /* Whatever happened: the limits back, the load stopped. */
    if (stepped) {
        FILE *devnull = fopen("/dev/null", "w");
        struct wt_err e2 = {{0}};
        if (wt_cap_clear(&cfg, acfg, -1, devnull ? devnull : stderr, &e2) != 0)
            fprintf(stderr, CMD ": restoring the limits: %s (run `wattage cap clear`)\n", e2.msg);
        else
            fprintf(stderr, CMD ": limits restored\n");
        if (devnull)
            fclose(devnull);
    }
    if (pid > 0) {
        kill(-pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    if (why[0]) {
        fprintf(stderr, CMD ": %s: no model stored\n", why);
        goto out;
    }
    double x[MAX_STEPS], y[MAX_STEPS];
    const char *wall = NULL;
    for (int k = 0; k < nsteps; k++) {
        const struct step *s = &st[k];
        x[k] = s->chip_w / s->n;
        double pdu = s->npdu == s->n ? s->pdu_w / s->n : NAN;
        double bmc = s->nbmc == s->n ? s->bmc_w / s->n : NAN;
        if (!wall)
            wall = !isnan(pdu) ? "pdu_outlet" : !isnan(bmc) ? "bmc" : NULL;
        y[k] = wall && strcmp(wall, "pdu_outlet") == 0 ? pdu : bmc;
        printf("step %3.0f%%: chips %8.1f W  node %8.1f W  pdu_outlet %8.1f W  bmc %8.1f W  "
               "(%d samples)\n",
               100 * s->share, x[k], s->node_w / s->n, pdu, bmc, s->n);
    }
    if (!wall) {
        fprintf(stderr,
                CMD ": no wall meter (pdu_outlet or bmc) of node %s answered at every "
                    "step: no model stored\n",
                topo->node);
        goto out;
    }
    struct wt_calib_model m = {0};
    snprintf(m.node, sizeof m.node, "%s", topo->node);
    snprintf(m.wall, sizeof m.wall, "%s", wall);
    snprintf(m.chip, sizeof m.chip, "gpu");
    m.t_ns = wt_now_real_ns();
    if (wt_calib_fit(x, y, (size_t)nsteps, &m.fit) != 0) {
        fprintf(stderr, CMD ": the steps read values that cannot be fitted: no model stored\n");
        goto out;
    }
    printf("fit (%s): wall = %.1f (+-%.1f) W + %.4f (+-%.4f) x chips; residual sd %.1f W, max "
           "%.1f W, R2 %.4f\n",
           wall, m.fit.a, m.fit.a_ci, m.fit.b, m.fit.b_ci, m.fit.resid_sd_w, m.fit.max_resid_w,
           m.fit.r2);
    if (!m.fit.tracks) {
        fprintf(stderr, CMD ": %s: no model stored\n", m.fit.why);
        goto out;
    }
    char path[WT_PATH_LEN + 32];
    if (wt_calib_model_path(&cfg, path, sizeof path) != 0 ||
        wt_calib_save(path, &m, 1, &err) != 0) {
        fprintf(stderr, CMD ": %s\n", err.msg[0] ? err.msg : "no path for the model");
        goto out;
    }
    printf("model of node %s stored in %s\n", m.node[0] ? m.node : "(this node)", path);
    ret = 0;
out:
    free(topo);
    free(acfg);
    wt_config_free(&cfg);
    return ret;
}
