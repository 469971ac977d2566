/* SPDX-License-Identifier: MIT */
/*
 * `wattage calibrate --load CMD [--steps 100,75,50,25] [--hold 60s]`: runs the user's load
 * command while it steps every GPU's power limit through the steps (shares of its max limit),
 * through the capper's record of changes (alert/alert.h: a line before each change, so a crash
 * leaves nothing a restart or `wattage cap clear` cannot put back), and restores the limits at
 * the end, on failure and on SIGINT/SIGTERM. At each step it averages, over the second half of
 * the hold, the running daemon's readings (GET /api/v1/status): the GPUs' sum, the node (GPUs +
 * RAPL packages and DRAM), and this node's wall meters of the topology (pdu_outlet, bmc). A
 * wall meter's readings count by their own time ("t"): only those taken inside the step's second
 * half, each once, so a PDU polled every 30 s is not averaged from one stale value; a meter with
 * fewer than WT_CALIB_MIN_FRESH of them in a step is named with the hold it needs, and the other
 * role is the wall when it is fresh; a node with neither has its hwmon wall sensors (an ACPI power
 * meter, collect/hwmon.h: the status's "hwmon" of role "wall", summed). It fits wall = a + b x chip
 * (audit/calibrate.h) and stores the model with its date beside the store; a wall that does not
 * track the chips or is not fresh, a load that fails or exits early, or a GPU lost mid-step store
 * nothing.
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
#define MAX_WALLS 16
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

/* The role of this node's hwmon wall sensors, beside the topology's (enum wt_role). */
#define ROLE_HWMON ((int)WT_ROLE_COUNT + 1)

/* One wall meter of this node: a facility point of the status that the topology gives it, or
 * a hwmon sensor of role "wall" (source "hwmon", target its chip, point its sensor). */
struct wall {
    char source[16], target[32], point[64];
    int role; /* enum wt_role, or ROLE_HWMON */
    /* its collector's ("source:target"), from the status; 0 unknown */
    double interval_s, duration_s;
    bool untimed; /* served without "t" (a daemon older than this calibrate) */
};

struct step {
    double share;
    double chip_w, node_w;
    int n;
    struct wt_calib_fresh fresh[MAX_WALLS]; /* per wall, its readings inside the settled half */
};

/* What the samples found: the walls (in the order first seen). */
struct walls {
    struct wall w[MAX_WALLS];
    size_t n;
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

static const char *jstr(const cJSON *o, const char *k)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return v ? v : "";
}

static const char *role_name(int r)
{
    return r == ROLE_HWMON ? "hwmon" : wt_role_name((enum wt_role)r);
}

/* The wall of w for facility point o of role r (added on first sight); NULL when full. A hwmon
 * sensor is named by its chip (and hwmonN where two chips share a name) and its sensor. */
static struct wall *wall_for(struct walls *w, const cJSON *o, int r)
{
    char chip[32];
    const char *src = jstr(o, "source"), *tgt = jstr(o, "target"), *pt = jstr(o, "point");
    if (r == ROLE_HWMON) {
        src = "hwmon";
        snprintf(chip, sizeof chip, "%s%s%s", jstr(o, "chip"), *jstr(o, "hwmon") ? "/" : "",
                 jstr(o, "hwmon"));
        tgt = chip;
        pt = jstr(o, "sensor");
    }
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->w[i].source, src) && !strcmp(w->w[i].target, tgt) &&
            !strcmp(w->w[i].point, pt))
            return &w->w[i];
    if (w->n == MAX_WALLS)
        return NULL;
    struct wall *x = &w->w[w->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->source, sizeof x->source, "%s", src);
    snprintf(x->target, sizeof x->target, "%s", tgt);
    snprintf(x->point, sizeof x->point, "%s", pt);
    x->role = r;
    return x;
}

/* Each wall's collector's interval and last poll's duration, from the status's "collectors". */
static void wall_intervals(struct walls *w, const cJSON *st)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "collectors"))
    {
        const char *name = jstr(c, "name");
        const cJSON *iv = cJSON_GetObjectItemCaseSensitive(c, "interval_seconds");
        const cJSON *du = cJSON_GetObjectItemCaseSensitive(c, "duration_seconds");
        for (size_t i = 0; i < w->n; i++) {
            char want[64];
            if (w->w[i].role == ROLE_HWMON)
                snprintf(want, sizeof want, "hwmon");
            else
                snprintf(want, sizeof want, "%.7s:%.23s", w->w[i].source, w->w[i].target);
            if (strcmp(name, want) != 0)
                continue;
            if (cJSON_IsNumber(iv))
                w->w[i].interval_s = iv->valuedouble;
            if (cJSON_IsNumber(du))
                w->w[i].duration_s = du->valuedouble;
        }
    }
}

/*
 * One sample of the daemon's status: the chips into s (when not NULL), each wall's reading
 * offered to s's fresh readings by its own time. *gpus the GPUs answering, and lost (n bytes)
 * names those listed but not answering ("gpu 1 (GPU-…)"). 0, or 1 (printed).
 */
static int sample(const struct wt_cli_api *api, const struct wt_topology *t, struct walls *w,
                  struct step *s, int *gpus, char *lost, size_t n)
{
    cJSON *st = NULL;
    if (wt_cli_api_json(api, CMD, "GET", "/api/v1/status", NULL, &st) != 0)
        return 1;
    double chip = 0, cpu = 0;
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
            int wr = snprintf(lost + used, n - used, "%sgpu %d (%s)", used ? ", " : "",
                              cJSON_IsNumber(ix) ? ix->valueint : -1, uuid ? uuid : "?");
            used += wr > 0 ? (size_t)wr : 0;
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
        int r = is_wall(t, WT_ROLE_PDU_OUTLET, o) ? (int)WT_ROLE_PDU_OUTLET
                : is_wall(t, WT_ROLE_BMC, o)      ? (int)WT_ROLE_BMC
                                                  : (int)WT_ROLE_COUNT;
        struct wall *x = r != (int)WT_ROLE_COUNT ? wall_for(w, o, r) : NULL;
        int64_t t_ns;
        if (!x || !cJSON_IsNumber(p))
            continue;
        /* Without its time (a daemon before "t") a reading cannot be told fresh: not counted. */
        if (wt_time_parse(jstr(o, "t"), 0, &t_ns) != 0) {
            x->untimed = true;
            continue;
        }
        if (!s)
            continue;
        (void)wt_calib_fresh_add(&s->fresh[x - w->w], t_ns, p->valuedouble);
    }
    /* this node's own wall sensors (hwmon's ACPI power meters) */
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(st, "hwmon"))
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "power_watts");
        struct wall *x = strcmp(jstr(o, "role"), "wall") == 0 ? wall_for(w, o, ROLE_HWMON) : NULL;
        int64_t t_ns;
        if (!x || !cJSON_IsNumber(p) || wt_time_parse(jstr(o, "t"), 0, &t_ns) != 0 || !s)
            continue;
        (void)wt_calib_fresh_add(&s->fresh[x - w->w], t_ns, p->valuedouble);
    }
    wall_intervals(w, st);
    cJSON_Delete(st);
    if (s) {
        s->chip_w += chip;
        s->node_w += chip + cpu;
        s->n++;
    }
    return 0;
}

/* Whether every wall of w has shown a reading taken after the step's window (nothing later to
 * wait for). */
static bool walls_past(const struct walls *w, const struct step *s)
{
    for (size_t i = 0; i < w->n; i++)
        if (s->fresh[i].last_ns <= s->fresh[i].to_ns)
            return false;
    return true;
}

/*
 * Whether every wall of role r is fresh (WT_CALIB_MIN_FRESH readings) at every step; *any: w has
 * walls of r. With complain, each wall that is not is printed once, naming its first short step.
 */
static bool role_fresh(const struct walls *w, const struct step *st, int nsteps, int r,
                       double hold_s, bool complain, bool *any)
{
    bool fresh = true;
    *any = false;
    for (size_t i = 0; i < w->n; i++) {
        const struct wall *x = &w->w[i];
        if (x->role != r)
            continue;
        *any = true;
        int k = 0;
        while (k < nsteps && st[k].fresh[i].n >= WT_CALIB_MIN_FRESH)
            k++;
        if (k == nsteps)
            continue;
        fresh = false;
        if (!complain)
            continue;
        const struct wt_calib_fresh *f = &st[k].fresh[i];
        char last[40] = "no reading", every[96] = "", need[96];
        if (f->last_ns) {
            char ts[40];
            wt_time_format(f->last_ns, 0, ts, sizeof ts);
            snprintf(last, sizeof last, "its last at %.8s UTC",
                     strchr(ts, 'T') ? strchr(ts, 'T') + 1 : ts);
        }
        if (x->interval_s > 0)
            snprintf(every, sizeof every, ", polled every %g s", x->interval_s);
        if (x->duration_s > x->interval_s / 2)
            snprintf(every + strlen(every), sizeof every - strlen(every), ", answering in %.1f s",
                     x->duration_s);
        double min = wt_calib_min_hold_s(x->interval_s, x->duration_s);
        if (x->untimed)
            snprintf(need, sizeof need,
                     "the daemon serves it without its time (\"t\"): run this version's daemon");
        else if (min > hold_s)
            snprintf(need, sizeof need,
                     "use --hold of at least %.0f s (two readings in each step's "
                     "second half)",
                     min);
        else
            snprintf(need, sizeof need, "its readings came late; try a --hold longer than %.0f s",
                     hold_s);
        fprintf(stderr, CMD ": %s %s%s%s: %d fresh reading%s in step %.0f %% (%s%s): %s\n",
                role_name(r), x->target, x->point[0] ? "/" : "", x->point, f->n,
                f->n == 1 ? "" : "s", 100 * st[k].share, last, every, need);
    }
    return fresh && *any;
}

/* The wall of role r at step s: the sum over its walls of each one's mean fresh reading. */
static double role_wall(const struct walls *w, const struct step *s, int r)
{
    double sum = 0;
    bool any = false;
    for (size_t i = 0; i < w->n; i++) {
        if (w->w[i].role != r)
            continue;
        if (s->fresh[i].n < WT_CALIB_MIN_FRESH)
            return NAN;
        sum += s->fresh[i].sum_w / s->fresh[i].n;
        any = true;
    }
    return any ? sum : NAN;
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
    struct walls walls = {0};
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
    char none[8];
    if (sample(&api, topo, &walls, NULL, &gpus0, none, sizeof none) != 0) {
        fprintf(stderr, CMD ": needs the running daemon (`wattage run`): its readings are the "
                            "figures fitted\n");
        goto out;
    }
    if (gpus0 == 0) {
        fprintf(stderr, CMD ": the daemon sees no GPU: nothing to step\n");
        goto out;
    }
    /* Said before the load starts: a wall slower than the hold allows will not be fresh. */
    for (size_t i = 0; i < walls.n; i++) {
        const struct wall *x = &walls.w[i];
        double min = wt_calib_min_hold_s(x->interval_s, x->duration_s);
        if (min > (double)hold_ns / 1e9)
            fprintf(stderr,
                    CMD
                    ": warning: %s %s%s%s reads every %g s at best: a --hold under %.0f s gives "
                    "it fewer than %d readings per step\n",
                    role_name(x->role), x->target, x->point[0] ? "/" : "", x->point,
                    fmax(x->interval_s, x->duration_s), min, WT_CALIB_MIN_FRESH);
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
        int64_t next = half, t0_real = wt_now_real_ns();
        /* The walls' settled window, in their readings' time (CLOCK_REALTIME, this host's). */
        for (int i = 0; i < MAX_WALLS; i++) {
            st[k].fresh[i].from_ns = t0_real + hold_ns / 2;
            st[k].fresh[i].to_ns = t0_real + hold_ns;
        }
        /*
         * After the hold, before the next limit: a reading taken just before its end may still
         * be on its way (a poll is published when it ends). Sampled until every wall shows a
         * later one, or its last poll's duration (and half a second) is past, at most a quarter
         * of the hold.
         */
        double slowest_s = 0;
        for (size_t i = 0; i < walls.n; i++)
            slowest_s = fmax(slowest_s, walls.w[i].duration_s);
        int64_t grace = end + (int64_t)(fmin(slowest_s + 0.5, (double)hold_ns / 4e9) * 1e9);
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
            if (now >= end && (now >= grace || walls_past(&walls, &st[k])))
                break;
            if (now >= next || now >= end) {
                int g = 0;
                char lost[160];
                if (sample(&api, topo, &walls, &st[k], &g, lost, sizeof lost) != 0) {
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
                /* Four times a second: the status holds each meter's latest reading only, and a
                 * meter polled every second must not have one replaced before it is seen. */
                while (next <= now)
                    next += WT_NS_PER_S / 4;
            }
            wt_sleep_until_mono(now + (now >= end ? 200 : 100) * WT_NS_PER_MS);
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
    /* The wall: this node's PDU outlets when every one is fresh at every step, else its BMC,
     * else (a node without either in the topology) its hwmon wall sensors. */
    double x[MAX_STEPS], y[MAX_STEPS];
    double hold_s = (double)hold_ns / 1e9;
    bool any_pdu, any_bmc, any_hw;
    bool pdu_ok = role_fresh(&walls, st, nsteps, WT_ROLE_PDU_OUTLET, hold_s, false, &any_pdu);
    bool bmc_ok = role_fresh(&walls, st, nsteps, WT_ROLE_BMC, hold_s, false, &any_bmc);
    bool hw_ok = role_fresh(&walls, st, nsteps, ROLE_HWMON, hold_s, false, &any_hw);
    if (any_pdu || any_bmc) /* the reconciliation's order too (audit/reconcile.h) */
        hw_ok = any_hw = false;
    int wr = pdu_ok ? (int)WT_ROLE_PDU_OUTLET : bmc_ok ? (int)WT_ROLE_BMC : ROLE_HWMON;
    const char *wall = pdu_ok || bmc_ok || hw_ok ? role_name(wr) : NULL;
    for (int k = 0; k < nsteps; k++) {
        const struct step *s = &st[k];
        int fresh = 0;
        for (size_t i = 0; i < walls.n; i++)
            fresh += s->fresh[i].n;
        x[k] = s->chip_w / s->n;
        double pdu = role_wall(&walls, s, WT_ROLE_PDU_OUTLET);
        double bmc = role_wall(&walls, s, WT_ROLE_BMC);
        double hw = role_wall(&walls, s, ROLE_HWMON);
        y[k] = wr == (int)WT_ROLE_PDU_OUTLET ? pdu : wr == (int)WT_ROLE_BMC ? bmc : hw;
        printf("step %3.0f%%: chips %8.1f W  node %8.1f W  pdu_outlet %8.1f W  bmc %8.1f W  ",
               100 * s->share, x[k], s->node_w / s->n, pdu, bmc);
        if (any_hw)
            printf("hwmon %8.1f W  ", hw);
        printf("(%d samples, %d fresh wall readings)\n", s->n, fresh);
    }
    /* Each wall that is not fresh is named, with the hold it needs; a fresh BMC stands in. */
    if (any_pdu && !pdu_ok)
        (void)role_fresh(&walls, st, nsteps, WT_ROLE_PDU_OUTLET, hold_s, true, &any_pdu);
    if (any_bmc && !bmc_ok && !pdu_ok)
        (void)role_fresh(&walls, st, nsteps, WT_ROLE_BMC, hold_s, true, &any_bmc);
    if (any_hw && !hw_ok)
        (void)role_fresh(&walls, st, nsteps, ROLE_HWMON, hold_s, true, &any_hw);
    if (!wall) {
        if (any_pdu || any_bmc || any_hw)
            fprintf(stderr,
                    CMD ": no wall meter of node %s has fresh readings at every step: no model "
                        "stored\n",
                    topo->node);
        else
            fprintf(stderr,
                    CMD ": no wall meter (pdu_outlet, bmc or a hwmon wall sensor) of node %s "
                        "answered at every step: no model stored\n",
                    topo->node);
        goto out;
    }
    if (any_pdu && !pdu_ok)
        fprintf(stderr, CMD ": the wall is node %s's bmc instead, fresh at every step\n",
                topo->node);
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
