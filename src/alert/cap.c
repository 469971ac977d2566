/* SPDX-License-Identifier: MIT */
/*
 * Power capping, the one place wattage changes a GPU's settings (off unless a rule has
 * `action: cap` or alerts.power_budget_watts is set). Loads the same NVML library as the
 * collector (WATTAGE_NVML_LIBRARY, else collectors.nvml.library) with its own session, and the
 * same ROCm SMI library as the AMD collector (collect/rocm.h, wt_rocm_caps_open) for the AMD
 * GPUs: an alert on a series whose uuid is AMD-... acts on that AMD GPU; everything below is
 * the same for both vendors.
 *
 * Each GPU's limit is the lowest of what holds it down: the targets of the firing cap alerts on
 * it, and its share of the site budget. The first change remembers the GPU's own limit; when
 * nothing holds it down any more (the alerts resolved, the node back under budget x
 * budget_clear_share) or the daemon stops (wt_cap_close), that limit is put back, unless someone
 * else changed the limit meanwhile (then it is left as they set it, with a warning). A limit is
 * only ever lowered, and always within the GPU's [min, max] constraints and over
 * alerts.cap_floor_watts; a GPU's limit changes at most once per alerts.cap_min_interval; a GPU
 * held by a running job tagged cap=never is never capped (the budget is shared by the others).
 *
 * A limit set through NVML outlives the process that set it. So every change is first written
 * to the record (alerts.cap_record, else power-caps beside the store: one line per GPU with its
 * UUID, its own limit, the limit set, when and why; written whole to a temporary file, fsync'd
 * and renamed over the old one), then applied; the line goes when the limit is restored. A
 * change whose record cannot be written is not made. At start, the lines an earlier run left
 * (it was killed) are put right: the GPU's own limit is restored, or, when a rule or the budget
 * of this configuration is what set it, the cap is kept with the recorded own limit as its base
 * until that rule has had time to fire. `wattage cap clear` (wt_cap_clear) restores by hand
 * under the same lock; a running daemon sees its line gone and leaves the GPU alone until what
 * held it lets go. A GPU whose limit is not its default limit with no line to explain it was
 * capped by someone else: that limit is never taken as its own (its default is).
 *
 * Site budget: when the node's power (the GPUs' sum, or the series alerts.power_budget_meter
 * names) exceeds the budget, every GPU is capped in proportion to its draw so that the power comes
 * down to the midpoint between budget x clear share and the budget (a GPU's cap never under its
 * minimum); while capped and still over, the caps are tightened again at most every few seconds
 * (the power readings lag a new limit).
 *
 * Dry run logs each action it would take and exports it, without calling the set function (and
 * without a record: nothing is changed).
 *
 * Idle policy (alerts.idle_policy, off by default): a GPU idle as audit/dark.h counts it (its
 * wattage_gpu_idle gauge in the snapshot), with nothing in the collector's latest process list,
 * utilization 0 and no cap=never job, for idle_for is held at limit_watts (the GPU's minimum by
 * default) as one more thing that holds it down, through the same record and guardrails (reason
 * "idle"). It lets go in the tick the GPU is busy again, and in wt_cap_jobs_started before a job
 * start naming it is answered; neither waits for cap_min_interval. Mode dry_run only logs and
 * exports. An earlier run's idle cap is always restored at start (nothing of a configuration
 * keeps it: the policy caps again after idle_for). Only the limit lever: no clock locking.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "alert/alert.h"
#include "alert/cap.h"
#include "alert/cap_act.h"
#include "alert/cap_budget.h"
#include "audit/jobs.h"
#include "collect/nvml.h"
#include "collect/nvml_api.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/durable.h"
#include "core/family.h"
#include "core/log.h"

static bool forced_dry_run;

void wt_cap_force_dry_run(bool on)
{
    forced_dry_run = on;
}

/* ---- alerts ------------------------------------------------------------------------------ */

void wt_cap_apply(struct wt_cap *c, const struct wt_alert *a)
{
    if (!c || !a || a->action != WT_ACTION_CAP)
        return;
    int gi = wt_cap_slot(c, a->labels, a->gpu);
    if (gi < 0 || ((c->inited || c->amd) && (unsigned int)gi >= c->ngpus)) {
        wt_warn(MOD, "alert %s{%s} has action cap but no GPU this node has (gpu=%d)", a->name,
                a->labels, a->gpu);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->now_ns = wt_now_real_ns();
    size_t k = 0;
    while (k < c->nactive && c->active[k].fp != a->fingerprint)
        k++;
    if (a->state == WT_ALERT_FIRING) {
        double w = a->cap_watts;
        if (w <= 0) {
            /* The engine leaves a share to us when it does not know the GPU's max. */
            wt_cap_refresh(c, gi);
            for (size_t r = 0; r < c->nrules; r++)
                if (strcmp(c->rules[r].name, a->name) == 0)
                    w = c->rules[r].watts > 0 ? c->rules[r].watts
                                              : c->rules[r].share * c->g[gi].max_w;
        }
        if (w <= 0) {
            wt_warn(MOD, "alert %s{%s}: no cap target (cap_watts or cap_share with a known max)",
                    a->name, a->labels);
        } else if (k < c->nactive || c->nactive < MAX_ACTIVE) {
            if (k == c->nactive)
                c->nactive++;
            c->active[k].fp = a->fingerprint;
            c->active[k].gpu = gi;
            c->active[k].watts = w;
            snprintf(c->active[k].name, sizeof c->active[k].name, "%s", a->name);
            /* The rule that set an earlier run's cap fired again: it holds the GPU now. */
            if (c->g[gi].hold_until_ns && strcmp(c->g[gi].hold_reason, a->name) == 0)
                c->g[gi].hold_until_ns = 0;
            if (c->g[gi].never) {
                wt_info(MOD,
                        "alert %s would cap gpu=%s to %.1f W: not capped, a running job "
                        "tagged %s=%s holds it",
                        a->name, GN(c, gi), w, NEVER_TAG, NEVER_VALUE);
                c->whys[W_CAP_NEVER]++;
            }
        }
    } else if (k < c->nactive) {
        c->active[k] = c->active[--c->nactive];
    }
    wt_cap_reconcile(c, gi, a->name);
    pthread_mutex_unlock(&c->mu);
}

/* ---- life cycle -------------------------------------------------------------------------- */

/* The index of the GPU with this UUID, or -1 (NVML's GPUs refreshed first). */
static int by_uuid(struct wt_cap *c, const char *uuid)
{
    for (unsigned int i = 0; i < c->ngpus; i++) {
        wt_cap_refresh(c, (int)i);
        if (strcmp(c->g[i].uuid, uuid) == 0)
            return (int)i;
    }
    return -1;
}

/* How long a cap an earlier run set for reason is kept: while the rule of that name (or the
 * budget) of this configuration may fire again, its `for` and three ticks; 0 when nothing of
 * this configuration could hold it. */
static int64_t holds_for(const struct wt_cap *c, const char *reason)
{
    if (strcmp(reason, "power_budget") == 0)
        return c->budget_w > 0 ? SETTLE_NS + 3 * c->interval_ns : 0;
    for (size_t k = 0; k < c->nrules; k++)
        if (strcmp(c->rules[k].name, reason) == 0)
            return c->rules[k].for_ns + 3 * c->interval_ns;
    return 0;
}

/* Puts right the lines an earlier run left in the record (it was killed, or restoring failed):
 * each GPU gets its own limit back, or keeps the cap while a rule of this configuration may
 * hold it (with the recorded own limit as its base). */
static void recover(struct wt_cap *c)
{
    struct wt_cap_rec r[MAX_GPUS], left[MAX_GPUS];
    size_t n = 0, nleft = 0;
    struct wt_err err = {{0}};
    char when[40];
    if (!c->record[0])
        return;
    int fd = wt_cap_rec_lock(c->record);
    if (wt_cap_record_read(c->record, r, MAX_GPUS, &n, &err) != 0) {
        wt_error(MOD, "%s (an earlier run's power caps cannot be checked; fix or remove it)",
                 err.msg);
        goto out;
    }
    if (n == 0)
        goto out;
    if (!c->inited && !c->amd) {
        wt_warn(MOD,
                "%s: %zu GPUs may keep a limit an earlier run set, and neither NVML nor ROCm SMI "
                "is loaded to restore them (see `wattage cap clear`)",
                c->record, n);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        const struct wt_cap_rec *x = &r[k];
        int i = by_uuid(c, x->uuid);
        wt_time_format(x->t_ns, 0, when, sizeof when);
        if (i < 0) {
            wt_warn(MOD,
                    "%s: no GPU %s on this node (an earlier run capped it at %.1f W, own "
                    "%.1f W): line kept; `wattage cap clear` drops it",
                    c->record, x->uuid, x->set_w, x->own_w);
            left[nleft++] = *x;
            continue;
        }
        struct capgpu *g = &c->g[i];
        if (fabs(g->limit_w - x->own_w) <= OTHERS_W) {
            /* Killed between the record and the call, or after the restore: nothing to do. */
            wt_warn(MOD,
                    "gpu=%s uuid=%s: an earlier run recorded a cap of %.1f W (reason=%s at "
                    "%s) that the GPU does not have (limit %.1f W, its own): line dropped",
                    GN(c, i), x->uuid, x->set_w, x->reason, when, g->limit_w);
            c->whys[W_EARLIER_RUN]++;
            continue;
        }
        if (fabs(g->limit_w - x->set_w) > OTHERS_W) {
            wt_warn(MOD,
                    "gpu=%s uuid=%s: limit %.1f W is neither its own %.1f W nor the %.1f W "
                    "an earlier run set: someone else changed it since; leaving it",
                    GN(c, i), x->uuid, g->limit_w, x->own_w, x->set_w);
            c->whys[W_BY_OTHERS]++;
            continue;
        }
        int64_t hold = holds_for(c, x->reason);
        if (c->dry_run) {
            wt_warn(MOD,
                    "dry run: gpu=%s uuid=%s keeps the cap of %.1f W an earlier run set "
                    "(reason=%s at %s, own limit %.1f W); run without dry run or `wattage "
                    "cap clear` to restore it",
                    GN(c, i), x->uuid, x->set_w, x->reason, when, x->own_w);
            left[nleft++] = *x;
            continue;
        }
        if (hold > 0) {
            g->touched = true;
            g->saved_w = x->own_w; /* the base is the GPU's own limit, not the cap */
            g->set_w = g->limit_w;
            g->hold_w = g->limit_w;
            g->hold_until_ns = c->now_ns + hold;
            snprintf(g->hold_reason, sizeof g->hold_reason, "%s", x->reason);
            wt_warn(MOD,
                    "gpu=%s uuid=%s keeps the cap of %.1f W an earlier run set (reason=%s "
                    "at %s; own limit %.1f W): restored unless %s holds it within %.1f s",
                    GN(c, i), x->uuid, x->set_w, x->reason, when, x->own_w, x->reason,
                    (double)hold / WT_NS_PER_S);
            c->whys[W_KEPT]++;
            left[nleft++] = *x;
            continue;
        }
        int rc = wt_cap_dev_set(c, i, x->own_w);
        if (rc != 0) {
            wt_error(MOD,
                     "gpu=%s uuid=%s: restoring its own limit %.1f W (an earlier run capped "
                     "it at %.1f W) failed: %s (%d)",
                     GN(c, i), x->uuid, x->own_w, x->set_w, wt_cap_dev_errstr(c, i, rc), rc);
            wt_cap_count_action(c, A_ERROR, W_EARLIER_RUN);
            left[nleft++] = *x;
            continue;
        }
        wt_warn(MOD,
                "gpu=%s uuid=%s: restored its own limit %.1f W; an earlier run capped it at "
                "%.1f W (reason=%s at %s) and nothing in this configuration holds it",
                GN(c, i), x->uuid, x->own_w, x->set_w, x->reason, when);
        wt_cap_count_action(c, A_RESTORE, W_EARLIER_RUN);
        g->limit_w = x->own_w;
    }
    if (nleft != n && wt_cap_record_write(c->record, left, nleft, &err) != 0)
        wt_error(MOD, "%s", err.msg);
out:
    wt_cap_rec_unlock(fd);
}

/* The record holds at least one line. */
static bool rec_nonempty(const char *path)
{
    struct wt_cap_rec r[1];
    size_t n = 0;
    struct wt_err err = {{0}};
    int rc = wt_cap_record_read(path, r, 1, &n, &err);
    return rc != 0 || n > 0;
}

/* wt_cap_open, or with only_recover the same without any rule or budget (nothing is kept). */
static int open_cap(const struct wt_config *cfg, const struct wt_alerts_config *acfg,
                    bool only_recover, struct wt_cap **out, struct wt_err *err)
{
    *out = NULL;
    if (!acfg)
        return 0;
    size_t ncap = 0;
    for (size_t i = 0; i < acfg->nrules; i++)
        ncap += acfg->rules[i].action == WT_ACTION_CAP;
    bool acts = !only_recover &&
                (ncap > 0 || acfg->power_budget_watts > 0 || acfg->idle_policy.mode != WT_IDLE_OFF);
    char record[sizeof((struct wt_cap *)0)->record];
    (void)wt_cap_record_path(cfg, acfg, record, sizeof record);
    /* Nothing to cap and nothing an earlier run left: nothing to open. */
    if (!acts && !(record[0] && rec_nonempty(record)))
        return 0;
    struct wt_cap *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    snprintf(c->record, sizeof c->record, "%s", record);
    if (cfg)
        snprintf(c->db, sizeof c->db, "%s", cfg->store.path);
    c->now_ns = wt_now_real_ns();
    c->interval_ns = cfg && cfg->daemon.interval_ns > 0 ? cfg->daemon.interval_ns : WT_NS_PER_S;
    c->dry_run = acfg->dry_run || forced_dry_run;
    c->budget_w = acts && acfg->power_budget_watts > 0 ? acfg->power_budget_watts : 0;
    c->clear_share = acfg->budget_clear_share > 0 && acfg->budget_clear_share < 1
                         ? acfg->budget_clear_share
                         : 0.95;
    c->floor_w = acfg->cap_floor_watts > 0 ? acfg->cap_floor_watts : 0;
    c->min_interval_ns = acfg->cap_min_interval_ns > 0 ? acfg->cap_min_interval_ns : 0;
    c->idle_mode = acts ? acfg->idle_policy.mode : WT_IDLE_OFF;
    c->idle_for_ns =
        acfg->idle_policy.idle_for_ns > 0 ? acfg->idle_policy.idle_for_ns : 600 * WT_NS_PER_S;
    c->idle_limit_w = acfg->idle_policy.limit_watts > 0 ? acfg->idle_policy.limit_watts : 0;
    const char *hook = getenv("WATTAGE_TEST_CAP_EXIT");
    c->crash_hook = !hook                                ? 0
                    : strcmp(hook, "before_record") == 0 ? 1
                    : strcmp(hook, "after_record") == 0  ? 2
                                                         : 0;
    c->rl.interval_ns = c->rec_rl.interval_ns = c->never_rl.interval_ns = LOG_EVERY_NS;
    c->meter_metric = -1;
    if (acts && acfg->power_budget_meter[0]) {
        char why[200];
        if (wt_cap_meter_parse(acfg->power_budget_meter, &c->meter_metric, c->meter_match,
                               sizeof c->meter_match, why, sizeof why) != 0) {
            int rc = wt_err_set(err, "alerts.power_budget_meter: %s", why);
            pthread_mutex_destroy(&c->mu);
            free(c);
            return rc;
        }
        snprintf(c->meter, sizeof c->meter, "%s", acfg->power_budget_meter);
    }
    for (int i = 0; i < MAX_GPUS; i++)
        c->g[i].err_rl.interval_ns = LOG_EVERY_NS;
    for (size_t i = 0; acts && i < acfg->nrules && c->nrules < WT_ALERT_MAX_RULES; i++) {
        const struct wt_alert_rule *r = &acfg->rules[i];
        if (r->action != WT_ACTION_CAP)
            continue;
        struct rule_cap *rc = &c->rules[c->nrules++];
        snprintf(rc->name, sizeof rc->name, "%s", r->name);
        rc->watts = r->cap_watts;
        rc->share = r->cap_share;
        rc->for_ns = r->for_ns;
    }
    struct wt_err lerr = {{0}};
    if (wt_cap_load_nvml(c, cfg, &lerr) != 0) {
        /* Not fatal: alerts still fire and are delivered; dry run still says what it would do. */
        wt_warn(MOD, "power capping cannot reach NVML: %s%s", lerr.msg,
                c->dry_run ? " (dry run: limits from the snapshot)" : "; no limit will be set");
        wt_cap_unload(c);
    } else if (!c->fn.set_limit) {
        wt_warn(MOD, "%s does not export nvmlDeviceSetPowerManagementLimit: limits cannot be set",
                c->library);
    }
    wt_cap_load_amd(c, cfg);
    recover(c);
    if (!acts) {
        wt_cap_close(c); /* it kept nothing: no rule or budget of this configuration holds it */
        return 0;
    }
    if (!c->record[0] && !c->dry_run)
        wt_warn(MOD, "no record of power limit changes (no store path): a crash would leave "
                     "limits set with nothing to say so");
    wt_info(MOD,
            "power capping on: cap_rules=%zu budget_w=%.1f clear_share=%.2f meter=%s "
            "dry_run=%s gpus=%u library=%s floor_w=%.1f min_interval_s=%.3g record=%s "
            "idle_policy=%s idle_for_s=%.0f idle_limit_w=%.1f",
            ncap, c->budget_w, c->clear_share, c->meter[0] ? c->meter : "gpus",
            c->dry_run ? "true" : "false", c->ngpus, c->library, c->floor_w,
            (double)c->min_interval_ns / WT_NS_PER_S, c->record[0] ? c->record : "-",
            idle_mode_names[c->idle_mode], (double)c->idle_for_ns / WT_NS_PER_S, c->idle_limit_w);
    *out = c;
    return 0;
}

int wt_cap_open(const struct wt_config *cfg, const struct wt_alerts_config *acfg,
                struct wt_cap **out, struct wt_err *err)
{
    return open_cap(cfg, acfg, false, out, err);
}

void wt_cap_recover(const struct wt_config *cfg, const struct wt_alerts_config *acfg)
{
    struct wt_cap *c = NULL;
    struct wt_err err = {{0}};
    (void)open_cap(cfg, acfg, true, &c, &err);
}

void wt_cap_close(struct wt_cap *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->nactive = 0;
    c->now_ns = wt_now_real_ns();
    for (int i = 0; i < MAX_GPUS; i++) {
        c->g[i].budget_w = 0;
        wt_cap_restore(c, i, W_STOPPING, "stopping");
    }
    for (int i = 0; i < MAX_GPUS; i++)
        if (c->g[i].touched)
            wt_error(MOD,
                     "gpu=%s keeps the limit of %.1f W wattage set (restoring %.1f W failed; "
                     "the record keeps it for the next start or `wattage cap clear`)",
                     GN(c, i), c->g[i].set_w, c->g[i].saved_w);
    pthread_mutex_unlock(&c->mu);
    wt_cap_unload(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- by hand and for `status` ------------------------------------------------------------- */

/* A capper of its own for one command: NVML loaded, every GPU read, no rule. */
static int open_plain(const struct wt_config *cfg, const struct wt_alerts_config *acfg,
                      struct wt_cap **out, struct wt_err *err)
{
    struct wt_cap *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    (void)wt_cap_record_path(cfg, acfg, c->record, sizeof c->record);
    c->now_ns = wt_now_real_ns();
    for (int i = 0; i < MAX_GPUS; i++)
        c->g[i].err_rl.interval_ns = LOG_EVERY_NS;
    int rc = wt_cap_load_nvml(c, cfg, err);
    if (rc != 0)
        wt_cap_unload(c);
    wt_cap_load_amd(c, cfg);
    if (rc != 0 && !c->amd) {
        wt_cap_unload(c);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rc < 0 ? rc : -EIO;
    }
    for (unsigned int i = 0; i < c->ngpus; i++)
        wt_cap_refresh(c, (int)i);
    *out = c;
    return 0;
}

static int set_w(struct wt_cap *c, int i, double w, struct wt_err *err)
{
    struct capgpu *g = &c->g[i];
    int r = wt_cap_dev_set(c, i, w);
    if (r != 0)
        return wt_err_set(err, "gpu %d (%s): setting its limit to %.1f W failed: %s (%d)%s", i,
                          g->uuid, w, wt_cap_dev_errstr(c, i, r), r,
                          wt_cap_dev_denied(c, i, r) ? " (setting limits needs root)" : ""),
               -EIO;
    g->limit_w = w;
    return 0;
}

int wt_cap_set_share(const struct wt_config *cfg, const struct wt_alerts_config *acfg, double share,
                     const char *reason, double *set_w_out, size_t cap, size_t *n,
                     struct wt_err *err)
{
    struct wt_cap *c = NULL;
    struct wt_cap_rec r[MAX_GPUS];
    size_t nr = 0;
    *n = 0;
    int rc = open_plain(cfg, acfg, &c, err);
    if (rc != 0)
        return rc;
    int fd = wt_cap_rec_lock(c->record);
    if (!c->record[0]) {
        wt_err_set(err, "no record of power limit changes (no store path, no "
                        "alerts.cap_record): no limit is changed without one");
        rc = -EIO;
        goto out;
    }
    if ((rc = wt_cap_record_read(c->record, r, MAX_GPUS, &nr, err)) != 0)
        goto out;
    for (unsigned int i = 0; i < c->ngpus && rc == 0; i++) {
        struct capgpu *g = &c->g[i];
        if (!g->have_dev || g->max_w <= 0) {
            wt_err_set(err, "gpu %u: not answering, or no power limit range", i);
            rc = -EIO;
            break;
        }
        double w = fmax(fmax(share * g->max_w, g->min_w), acfg->cap_floor_watts);
        w = fmin(w, g->max_w);
        /* Its own limit: the record's when wattage already changed it, else its default, never
         * what it reads now (someone else's cap is not the GPU's own). */
        int k = wt_cap_rec_find(r, nr, g->uuid);
        double own = k >= 0 ? r[k].own_w : g->default_w > 0 ? g->default_w : g->max_w;
        if (k < 0) {
            k = (int)nr++;
            memset(&r[k], 0, sizeof r[k]);
            snprintf(r[k].uuid, sizeof r[k].uuid, "%s", g->uuid);
        }
        r[k].gpu = (int)i;
        r[k].own_w = own;
        r[k].set_w = w;
        r[k].t_ns = wt_now_real_ns();
        snprintf(r[k].reason, sizeof r[k].reason, "%s", reason);
        /* The line first: a kill between the two leaves a line for a limit not yet set (put
         * right at the next start), never a limit without a line. */
        if ((rc = wt_cap_record_write(c->record, r, nr, err)) != 0)
            break;
        if ((rc = set_w(c, (int)i, w, err)) != 0)
            break;
        if (*n < cap)
            set_w_out[*n] = w;
        (*n)++;
    }
out:
    wt_cap_rec_unlock(fd);
    wt_cap_unload(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return rc;
}

int wt_cap_clear(const struct wt_config *cfg, const struct wt_alerts_config *acfg, int gpu,
                 FILE *out, struct wt_err *err)
{
    struct wt_cap *c = NULL;
    struct wt_cap_rec r[MAX_GPUS], left[MAX_GPUS];
    size_t n = 0, nleft = 0;
    char when[40], nm[16];
    int rc = open_plain(cfg, acfg, &c, err);
    if (rc != 0)
        return rc;
    int fd = wt_cap_rec_lock(c->record);
    unsigned int namd = c->ngpus - c->nnv;
    if (WT_CAP_IS_AMD(gpu) || (namd && gpu >= 0 && (unsigned int)gpu >= c->nnv)) {
        int a = WT_CAP_IS_AMD(gpu) ? WT_CAP_AMD_INDEX(gpu) : gpu;
        if ((unsigned int)a >= namd) {
            rc = wt_err_set(err, "--gpu %s%d: this node has %u AMD GPUs and %u NVIDIA GPUs",
                            WT_CAP_IS_AMD(gpu) ? "amd:" : "", a, namd, c->nnv);
            goto out;
        }
        gpu = (int)(c->nnv + (unsigned int)a); /* its slot */
    } else if (gpu >= 0 && (unsigned int)gpu >= c->ngpus) {
        rc = wt_err_set(err, "--gpu %d: this node has %u GPUs (0..%u)", gpu, c->ngpus,
                        c->ngpus ? c->ngpus - 1 : 0);
        goto out;
    }
    if (c->record[0] && (rc = wt_cap_record_read(c->record, r, MAX_GPUS, &n, err)) != 0)
        goto out;
    bool named_done = false;
    int failed = 0;
    for (size_t k = 0; k < n; k++) {
        const struct wt_cap_rec *x = &r[k];
        int i = by_uuid(c, x->uuid);
        if (gpu >= 0 && i != gpu) {
            left[nleft++] = *x;
            continue;
        }
        wt_time_format(x->t_ns, 0, when, sizeof when);
        if (i < 0) {
            fprintf(out,
                    "%s: no such GPU on this node: its line is dropped (capped at %.1f W, "
                    "own %.1f W, reason %s, at %s)\n",
                    x->uuid, x->set_w, x->own_w, x->reason, when);
            continue;
        }
        struct wt_err e = {{0}};
        if (set_w(c, i, x->own_w, &e) != 0) {
            fprintf(stderr, "wattage cap clear: %s\n", e.msg);
            left[nleft++] = *x;
            failed++;
            continue;
        }
        fprintf(out,
                "gpu %s (%s): limit back to its own %.1f W (wattage had capped it at %.1f W: "
                "reason %s, at %s)\n",
                wt_cap_gpu_name(c, (int)i, nm, sizeof nm), x->uuid, x->own_w, x->set_w, x->reason,
                when);
        named_done = named_done || i == gpu;
    }
    if (nleft != n && (rc = wt_cap_record_write(c->record, left, nleft, err)) != 0)
        goto out;
    /* The GPUs wattage has no line for: a limit other than the default was set by someone else. */
    for (unsigned int i = 0; i < c->ngpus; i++) {
        struct capgpu *g = &c->g[i];
        if ((gpu >= 0 && (int)i != gpu) || (gpu >= 0 && named_done) ||
            wt_cap_rec_find(r, n, g->uuid) >= 0)
            continue;
        bool foreign = g->default_w > 0 && fabs(g->limit_w - g->default_w) > OTHERS_W;
        if (gpu < 0) {
            if (foreign)
                fprintf(out,
                        "gpu %s (%s): limit %.1f W is not its default %.1f W and wattage "
                        "has no record of it (someone else capped it): left; `wattage cap "
                        "clear --gpu %s` puts back its default\n",
                        wt_cap_gpu_name(c, (int)i, nm, sizeof nm), g->uuid, g->limit_w,
                        g->default_w, nm);
            continue;
        }
        if (!foreign) {
            fprintf(out, "gpu %s (%s): not capped (limit %.1f W%s)\n",
                    wt_cap_gpu_name(c, (int)i, nm, sizeof nm), g->uuid, g->limit_w,
                    g->default_w > 0 ? ", its default" : "");
            continue;
        }
        struct wt_err e = {{0}};
        if (set_w(c, (int)i, g->default_w, &e) != 0) {
            fprintf(stderr, "wattage cap clear: %s\n", e.msg);
            failed++;
            continue;
        }
        fprintf(out, "gpu %s (%s): no wattage record; limit back to its default %.1f W\n",
                wt_cap_gpu_name(c, (int)i, nm, sizeof nm), g->uuid, g->default_w);
    }
    if (n == 0 && gpu < 0)
        fprintf(out, "no GPU has a limit wattage set (record %s)\n",
                c->record[0] ? c->record : "-");
    if (failed) {
        wt_err_set(err, "%d GPUs could not be put back", failed);
        rc = -EIO;
    }
out:
    wt_cap_rec_unlock(fd);
    wt_cap_unload(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return rc;
}

int wt_cap_report(const struct wt_config *cfg, const struct wt_alerts_config *acfg, FILE *out)
{
    struct wt_cap *c = NULL;
    struct wt_err err = {{0}};
    struct wt_cap_rec r[MAX_GPUS];
    size_t n = 0;
    char when[40];
    if (open_plain(cfg, acfg, &c, &err) != 0)
        return 0; /* no NVML: the GPU section says so */
    if (c->record[0] && wt_cap_record_read(c->record, r, MAX_GPUS, &n, &err) != 0)
        fprintf(out, "power caps: %s\n", err.msg);
    for (unsigned int i = 0; i < c->ngpus; i++) {
        struct capgpu *g = &c->g[i];
        int k = wt_cap_rec_find(r, n, g->uuid);
        if (k >= 0) {
            wt_time_format(r[k].t_ns, 0, when, sizeof when);
            fprintf(out,
                    "power cap: gpu %s (%s) limit %.1f W set by wattage (own %.1f W, reason "
                    "%s, since %s)\n",
                    GN(c, (int)i), g->uuid, g->limit_w, r[k].own_w, r[k].reason, when);
        } else if (g->default_w > 0 && fabs(g->limit_w - g->default_w) > OTHERS_W) {
            fprintf(out,
                    "power cap: gpu %s (%s) limit %.1f W is not its default %.1f W and "
                    "wattage has no record of it: capped by someone else (not taken as its "
                    "own limit)\n",
                    GN(c, (int)i), g->uuid, g->limit_w, g->default_w);
        }
    }
    wt_cap_unload(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return 0;
}

/* ---- /metrics ---------------------------------------------------------------------------- */

/* GPU i's labels: gpu (its vendor's index), and uuid for an AMD GPU (whose index NVIDIA's may
 * share), then dry_run when given. */
static int gpu_labels(const struct wt_cap *c, int i, char *out, size_t n, const char *dry)
{
    char v[16];
    snprintf(v, sizeof v, "%d", wt_cap_vendor_index(c, i));
    if (c->g[i].amd)
        return dry ? wt_labels(out, n, "gpu", v, "uuid", c->g[i].uuid, "dry_run", dry, NULL)
                   : wt_labels(out, n, "gpu", v, "uuid", c->g[i].uuid, NULL);
    return dry ? wt_labels(out, n, "gpu", v, "dry_run", dry, NULL)
               : wt_labels(out, n, "gpu", v, NULL);
}

int wt_cap_family_limits(void *cap, struct wt_expo_family *fam)
{
    struct wt_cap *c = cap;
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_gpu_power_cap_watts";
    fam->help = "The power limit wattage holds the GPU at (alert action cap or the site power "
                "budget; in dry run, the one it would); absent when not capped";
    fam->type = WT_GAUGE;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    size_t n = 0;
    for (int i = 0; i < MAX_GPUS; i++)
        n += c->g[i].touched;
    if (n && !(fam->s = calloc(n, sizeof *fam->s))) {
        pthread_mutex_unlock(&c->mu);
        return -ENOMEM;
    }
    for (int i = 0; i < MAX_GPUS; i++) {
        if (!c->g[i].touched)
            continue;
        if (gpu_labels(c, i, fam->s[fam->n].labels, sizeof fam->s[fam->n].labels, NULL) == 0)
            fam->s[fam->n++].value = c->g[i].set_w;
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int wt_cap_family_left_capped(void *cap, struct wt_expo_family *fam)
{
    struct wt_cap *c = cap;
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_power_cap_left_capped";
    fam->help = "GPUs that keep a limit wattage set with nothing holding them any more: restoring "
                "their own limit failed (the record keeps them for the next start or `wattage cap "
                "clear`)";
    fam->type = WT_GAUGE;
    if (!c)
        return 0;
    if (!(fam->s = calloc(1, sizeof *fam->s)))
        return -ENOMEM;
    pthread_mutex_lock(&c->mu);
    size_t n = 0;
    for (int i = 0; i < MAX_GPUS; i++)
        n += c->g[i].touched && c->g[i].left_capped;
    pthread_mutex_unlock(&c->mu);
    fam->s[0].labels[0] = '\0';
    fam->s[0].value = (double)n;
    fam->n = 1;
    return 0;
}

int wt_cap_family_actions(void *cap, struct wt_expo_family *fam)
{
    struct wt_cap *c = cap;
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_power_cap_actions_total";
    fam->help =
        "Power limit changes wattage made (or, with dry_run=\"true\", would have made), "
        "by action: cap (an alert's), budget_cap, idle_cap (alerts.idle_policy), restore, error";
    fam->type = WT_COUNTER;
    if (!c)
        return 0;
    if (!(fam->s = calloc(A_COUNT, sizeof *fam->s)))
        return -ENOMEM;
    pthread_mutex_lock(&c->mu);
    for (int a = 0; a < A_COUNT; a++) {
        if (wt_labels(fam->s[fam->n].labels, sizeof fam->s[fam->n].labels, "action", act_names[a],
                      "dry_run", c->dry_run ? "true" : "false", NULL) == 0)
            fam->s[fam->n++].value = (double)c->actions[a];
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int wt_cap_family_reasons(void *cap, struct wt_expo_family *fam)
{
    struct wt_cap *c = cap;
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_power_cap_reasons_total";
    fam->help = "Why power capping acted or held back, per decision: rule, budget, resolved, "
                "stopping, cap_never, earlier_run, kept, cleared_by_hand, changed_by_others, "
                "min_interval, floor, no_record, idle, idle_ended, job_start";
    fam->type = WT_COUNTER;
    if (!c)
        return 0;
    if (!(fam->s = calloc(W_COUNT, sizeof *fam->s)))
        return -ENOMEM;
    pthread_mutex_lock(&c->mu);
    for (int w = 0; w < W_COUNT; w++) {
        if (wt_labels(fam->s[fam->n].labels, sizeof fam->s[fam->n].labels, "reason", why_names[w],
                      "dry_run", c->dry_run ? "true" : "false", NULL) == 0)
            fam->s[fam->n++].value = (double)c->whys[w];
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* One sample per GPU the idle policy holds: its limit, or its saving estimate. */
static int idle_family(struct wt_cap *c, struct wt_expo_family *fam, bool saving)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    size_t n = 0;
    for (int i = 0; i < MAX_GPUS; i++)
        n += c->g[i].idle_w > 0;
    if (n && !(fam->s = calloc(n, sizeof *fam->s))) {
        pthread_mutex_unlock(&c->mu);
        return -ENOMEM;
    }
    for (int i = 0; i < MAX_GPUS; i++) {
        const struct capgpu *g = &c->g[i];
        if (g->idle_w <= 0)
            continue;
        if (gpu_labels(c, i, fam->s[fam->n].labels, sizeof fam->s[fam->n].labels,
                       wt_cap_idle_dry(c) ? "true" : "false") == 0)
            fam->s[fam->n++].value = saving ? fmax(0, g->idle_level_w - g->idle_w) : g->idle_w;
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int wt_cap_family_idle_limits(void *cap, struct wt_expo_family *fam)
{
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_gpu_idle_policy_cap_watts";
    fam->help = "The power limit alerts.idle_policy holds an idle GPU at (dry_run=\"true\": the "
                "one it would set); absent when the policy does not hold it";
    fam->type = WT_GAUGE;
    return idle_family(cap, fam, false);
}

int wt_cap_family_idle_saving(void *cap, struct wt_expo_family *fam)
{
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_gpu_idle_policy_saving_estimate_watts";
    fam->help =
        "An estimate, not a measurement: the GPU's idle power level when alerts.idle_policy "
        "engaged minus the limit it sets (would set), 0 when the GPU idles under that limit "
        "(a limit above the draw lowers nothing; published figures put an idle Hopper GPU "
        "under its lowest limit)";
    fam->type = WT_GAUGE;
    return idle_family(cap, fam, true);
}
