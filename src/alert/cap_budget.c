/* SPDX-License-Identifier: MIT */
/*
 * The power capper's site budget (alerts.power_budget_watts: caps in proportion to each
 * GPU's draw while the node is over budget) and idle policy (alerts.idle_policy): see
 * alert/cap.c for the rules both follow.
 */
#include "alert/cap_budget.h"

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

#include "audit/jobs.h"
#include "collect/nvml.h"
#include "core/durable.h"
#include "core/gpuname.h"

/* ---- the site budget --------------------------------------------------------------------- */

int wt_cap_meter_parse(const char *sel, int *metric, char *match, size_t n, char *why, size_t whyn)
{
    char name[128];
    size_t k = 0;
    const char *p = sel;
    while (isspace((unsigned char)*p))
        p++;
    while (*p && *p != '{' && !isspace((unsigned char)*p) && k + 1 < sizeof name)
        name[k++] = *p++;
    name[k] = '\0';
    while (isspace((unsigned char)*p))
        p++;
    if (n)
        match[0] = '\0';
    int id = wt_metric_find(name);
    if (id < 0) {
        snprintf(why, whyn,
                 "unknown metric \"%s\" (expected a name such as "
                 "wattage_facility_power_watts)",
                 name);
        return -EINVAL;
    }
    if (*p == '{') {
        p++;
        for (;;) {
            char key[64], val[WT_LABELS_LEN];
            size_t kl = 0, vl = 0;
            while (isspace((unsigned char)*p) || *p == ',')
                p++;
            if (*p == '}')
                break;
            while ((isalnum((unsigned char)*p) || *p == '_') && kl + 1 < sizeof key)
                key[kl++] = *p++;
            key[kl] = '\0';
            while (isspace((unsigned char)*p))
                p++;
            if (!kl || *p != '=' || p[1] != '"') {
                snprintf(why, whyn, "expected label=\"value\" pairs in {...} after %s", name);
                return -EINVAL;
            }
            p += 2;
            while (*p && *p != '"' && vl + 1 < sizeof val) {
                if (*p == '\\' && p[1])
                    p++;
                val[vl++] = *p++;
            }
            val[vl] = '\0';
            if (*p != '"') {
                snprintf(why, whyn, "unterminated value of label %s", key);
                return -EINVAL;
            }
            p++;
            if (wt_labels_add(match, n, key, val) != 0) {
                snprintf(why, whyn, "too many labels in the selector");
                return -EINVAL;
            }
        }
        p++;
    }
    while (isspace((unsigned char)*p))
        p++;
    if (*p) {
        snprintf(why, whyn, "unexpected \"%s\" after the selector", p);
        return -EINVAL;
    }
    *metric = id;
    return 0;
}

/* Every pair of match is in labels with the same value. */
static bool matches(const char *labels, const char *match)
{
    char key[64], want[WT_LABELS_LEN], got[WT_LABELS_LEN];
    size_t pos = 0;
    while (wt_labels_next(match, &pos, key, sizeof key, want, sizeof want) == 1)
        if (wt_labels_get(labels, key, got, sizeof got) != 0 || strcmp(got, want) != 0)
            return false;
    return true;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Shares target among the GPUs in the snapshot, in proportion to their draw; the GPUs of
 * cap=never jobs keep what they draw and the others share the rest. */
static void share_budget(struct wt_cap *c, double target)
{
    double lo[MAX_GPUS], hi[MAX_GPUS], sum_lo = 0, fixed = 0;
    int nfixed = 0;
    for (int i = 0; i < MAX_GPUS; i++) {
        struct capgpu *g = &c->g[i];
        if (!g->seen)
            continue;
        if (g->never) {
            fixed += g->power_w;
            nfixed++;
            continue;
        }
        wt_cap_refresh(c, i);
        double base = g->touched ? g->saved_w : wt_cap_own_limit(g);
        lo[i] = g->min_w > c->floor_w ? g->min_w : c->floor_w;
        hi[i] = g->max_w > 0 ? g->max_w : INFINITY;
        if (base > 0 && base < hi[i])
            hi[i] = base;
        if (hi[i] < lo[i])
            hi[i] = lo[i];
        sum_lo += lo[i];
    }
    target -= fixed;
    double s = 0;
    if (sum_lo >= target) {
        if (nfixed)
            wt_warn(MOD,
                    "power budget %.0f W cannot be met: %d GPUs held by cap=never jobs draw "
                    "%.0f W and the other GPUs' floors add up to %.0f W: every other GPU at its "
                    "floor",
                    c->budget_w, nfixed, fixed, sum_lo);
        else
            wt_warn(MOD,
                    "power budget %.0f W is under the GPUs' floors (%.0f W together, their "
                    "minimum limits or alerts.cap_floor_watts): every GPU at its floor",
                    c->budget_w, sum_lo);
    } else {
        /* f(s) = sum clamp(p_i s, lo_i, hi_i) rises with s; f(1) is about the draw (> target). */
        double a = 0, b = 1;
        for (int it = 0; it < 60; it++) {
            double m = (a + b) / 2, f = 0;
            for (int i = 0; i < MAX_GPUS; i++)
                if (c->g[i].seen && !c->g[i].never)
                    f += clampd(c->g[i].power_w * m, lo[i], hi[i]);
            if (f > target)
                b = m;
            else
                a = m;
        }
        s = a;
    }
    for (int i = 0; i < MAX_GPUS; i++)
        if (c->g[i].seen)
            c->g[i].budget_w = c->g[i].never ? 0 : clampd(c->g[i].power_w * s, lo[i], hi[i]);
}

/* Marks the GPUs that running cap=never jobs hold (the jobs are in the store). */
/* Whether a job's GPU s (as the jobs keep it: an index, nvidia:N or amd:N, a UUID or its
 * prefix) is GPU i. A plain index is whichever vendor's has it (the jobs refuse one both have). */
static bool job_names(const struct wt_cap *c, int i, const char *s)
{
    const struct capgpu *g = &c->g[i];
    const char *vendor, *idx;
    char mine[16];
    snprintf(mine, sizeof mine, "%d", wt_cap_vendor_index(c, i));
    if (wt_gpu_vendor_index(s, &vendor, &idx))
        return (!vendor[0] || strcmp(vendor, g->amd ? "amd" : "nvidia") == 0) &&
               strcmp(idx, mine) == 0;
    return g->uuid[0] && (strncmp(s, "GPU-", 4) == 0 || strncmp(s, "AMD-", 4) == 0) &&
           strncmp(g->uuid, s, strlen(s)) == 0;
}

static void find_never(struct wt_cap *c)
{
    char(*names)[WT_JOBS_GPU_LEN] = calloc(MAX_GPUS, WT_JOBS_GPU_LEN);
    size_t n = 0;
    bool all = false;
    if (!names)
        return;
    if (c->db[0] &&
        wt_jobs_tagged_gpus(c->db, NEVER_TAG, NEVER_VALUE, names, MAX_GPUS, &n, &all) != 0) {
        /* Unreadable: keep what was known. */
        free(names);
        return;
    }
    for (int i = 0; i < MAX_GPUS; i++) {
        struct capgpu *g = &c->g[i];
        bool never = all;
        for (size_t k = 0; k < n && !never; k++)
            never = job_names(c, i, names[k]);
        if (never != g->never && (g->seen || g->touched))
            wt_info(MOD, "gpu=%s %s a running job tagged %s=%s", GN(c, i),
                    never ? "is held by" : "is no longer held by", NEVER_TAG, NEVER_VALUE);
        g->never = never;
    }
    free(names);
}

/* ---- the idle policy (alerts.idle_policy) ------------------------------------------------- */

/* Whether the policy only says what it would do: mode dry_run, or the capper's dry run. */
bool wt_cap_idle_dry(const struct wt_cap *c)
{
    return c->idle_mode == WT_IDLE_DRY_RUN || c->dry_run;
}

/* The policy lets go of GPU i (busy again, or a job starts on it): its limit back to what else
 * holds it, or its own, at once (no alerts.cap_min_interval: a job must not start capped). */
static void idle_lift(struct wt_cap *c, int i, enum why why, const char *reason)
{
    struct capgpu *g = &c->g[i];
    g->idle_from_ns = 0;
    if (g->idle_w <= 0)
        return;
    wt_info(MOD, "idle policy%s: gpu=%s %s: %s its idle cap of %.1f W",
            wt_cap_idle_dry(c) ? " (dry run)" : "", GN(c, i),
            why == W_JOB_START ? "a job naming it starts" : "is busy again",
            wt_cap_idle_dry(c) ? "would lift" : "lifting", g->idle_w);
    g->idle_w = 0;
    g->idle_level_w = 0;
    g->idle_retry_ns = 0;
    if (c->idle_mode != WT_IDLE_LIMIT)
        return; /* mode dry_run: the log and the idle families say it; no action counted */
    g->lift_now = true;
    g->lift_why = why;
    wt_cap_reconcile(c, i, reason);
    g->lift_now = false;
}

/* GPU i has been idle for idle_for: the policy holds it at its target (reconcile applies it). */
static void idle_engage(struct wt_cap *c, int i, int64_t now_ns)
{
    struct capgpu *g = &c->g[i];
    if (!g->touched)
        wt_cap_refresh(c, i);
    double lo = g->min_w > c->floor_w ? g->min_w : c->floor_w;
    double w = c->idle_limit_w > lo ? c->idle_limit_w : lo;
    if (g->max_w > 0 && w > g->max_w)
        w = g->max_w;
    if (w <= 0) {
        uint64_t supp;
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_warn(MOD,
                    "idle policy: gpu=%s is idle but its minimum limit is unknown and "
                    "alerts.idle_policy.limit_watts is not set: not capped",
                    GN(c, i));
        return;
    }
    /* The level before the lever: what it read while idle, else the latest reading. */
    double level = g->snap_level_w > 0 ? g->snap_level_w : g->power_w;
    double own = g->touched ? g->saved_w : wt_cap_own_limit(g);
    g->idle_w = w;
    g->idle_level_w = level;
    wt_info(MOD,
            "idle policy%s: gpu=%s idle for %.0f s: %s limit_w=%.1f (own %.1f W); idle power "
            "level %.1f W, saving estimate %.1f W (an estimate: the idle power over the new "
            "limit; 0 when the GPU idles under it)",
            wt_cap_idle_dry(c) ? " (dry run)" : "", GN(c, i),
            (double)(now_ns - g->idle_from_ns) / WT_NS_PER_S,
            wt_cap_idle_dry(c) ? "would set" : "setting", w, own, level, fmax(0, level - w));
}

/* Once a tick, after the snapshot is read: a GPU is idle when dark.h says so (no process,
 * utilization 0), the collector's latest process list has nothing on it and its utilization
 * reads 0; idle for idle_for, the policy caps it; busy again, the cap goes in this tick. */
static void idle_tick(struct wt_cap *c, int64_t now_ns)
{
    if (c->idle_mode == WT_IDLE_OFF)
        return;
    /* NVML's list, then ROCm SMI's (its GPUs by their AMD-... uuid) */
    struct wt_gpu_procs *procs = calloc(2 * MAX_GPUS, sizeof *procs);
    size_t np = 0, na = 0;
    int64_t t_procs = 0;
    bool have = procs && wt_nvml_processes(procs, MAX_GPUS, &np, &t_procs) == 0;
    if (procs && c->amd && wt_rocm_processes(procs + np, MAX_GPUS, &na, &t_procs) == 0) {
        have = true;
        np += na;
    }
    for (int i = 0; i < MAX_GPUS; i++) {
        struct capgpu *g = &c->g[i];
        bool proc = false;
        for (size_t k = 0; have && k < np && !proc; k++)
            proc = procs[k].npids > 0 &&
                   ((!g->amd && k < np - na && procs[k].gpu == (unsigned int)i) ||
                    (g->uuid[0] && strcmp(procs[k].uuid, g->uuid) == 0));
        bool idle = g->seen && g->snap_idle && !proc && !(g->has_util && g->util > 0) && !g->never;
        if (!idle) {
            idle_lift(c, i, W_IDLE_ENDED, "idle_ended");
            continue;
        }
        if (!g->idle_from_ns)
            g->idle_from_ns = now_ns;
        if (g->idle_w <= 0 && now_ns - g->idle_from_ns >= c->idle_for_ns)
            idle_engage(c, i, now_ns);
    }
    free(procs);
}

void wt_cap_jobs_started(struct wt_cap *c, const char (*gpus)[WT_JOBS_GPU_LEN], size_t n)
{
    if (!c || c->idle_mode == WT_IDLE_OFF)
        return;
    pthread_mutex_lock(&c->mu);
    c->now_ns = wt_now_real_ns();
    for (int i = 0; i < MAX_GPUS; i++) {
        bool named = n == 0; /* a job that names no GPU may use any */
        for (size_t k = 0; k < n && !named; k++)
            named = job_names(c, i, gpus[k]);
        if (named)
            idle_lift(c, i, W_JOB_START, "job_start"); /* its idle time counts from now */
    }
    pthread_mutex_unlock(&c->mu);
}

void wt_cap_budget(struct wt_cap *c, const struct wt_batch *snap, int64_t now_ns)
{
    if (!c || !snap)
        return;
    pthread_mutex_lock(&c->mu);
    c->now_ns = now_ns;
    for (int i = 0; i < MAX_GPUS; i++) {
        c->g[i].seen = false;
        c->g[i].snap_idle = c->g[i].has_util = false;
        c->g[i].snap_level_w = 0;
    }
    char v[16];
    for (size_t k = 0; k < snap->len; k++) {
        const struct wt_reading *r = &snap->r[k];
        if (r->metric != WT_M_GPU_POWER_W && r->metric != WT_M_GPU_POWER_LIMIT_W &&
            r->metric != WT_M_GPU_POWER_LIMIT_MIN_W && r->metric != WT_M_GPU_POWER_LIMIT_MAX_W &&
            r->metric != WT_M_GPU_IDLE && r->metric != WT_M_GPU_IDLE_POWER_W &&
            r->metric != WT_M_GPU_UTIL_RATIO)
            continue;
        if (wt_labels_get(r->labels, "gpu", v, sizeof v) != 0)
            continue;
        char *end;
        long gl = strtol(v, &end, 10);
        int i = *end || gl < 0 || gl >= MAX_GPUS ? -1 : wt_cap_slot(c, r->labels, (int)gl);
        if (i < 0)
            continue;
        struct capgpu *g = &c->g[i];
        bool own = wt_cap_has_lib(c, i);
        /* The library's own values win; the snapshot's serve when this process has none. */
        if (r->metric == WT_M_GPU_POWER_W) {
            g->power_w = r->value;
            g->seen = true;
        } else if (!own && r->metric == WT_M_GPU_POWER_LIMIT_W && !g->touched) {
            g->limit_w = r->value;
        } else if (!own && r->metric == WT_M_GPU_POWER_LIMIT_MIN_W) {
            g->min_w = r->value;
        } else if (!own && r->metric == WT_M_GPU_POWER_LIMIT_MAX_W) {
            g->max_w = r->value;
        } else if (r->metric == WT_M_GPU_IDLE) {
            g->snap_idle = r->value == 1;
        } else if (r->metric == WT_M_GPU_IDLE_POWER_W) {
            g->snap_level_w = r->value;
        } else if (r->metric == WT_M_GPU_UTIL_RATIO) {
            g->util = r->value;
            g->has_util = true;
        }
    }
    find_never(c);
    idle_tick(c, now_ns);
    /* A line gone from the record: `wattage cap clear` put that GPU back meanwhile. */
    bool any = false;
    for (int i = 0; i < MAX_GPUS; i++)
        any = any || c->g[i].touched;
    struct wt_cap_rec rec[MAX_GPUS];
    size_t nrec = 0;
    struct wt_err rerr = {{0}};
    if (any && !c->dry_run && c->record[0] &&
        wt_cap_record_read(c->record, rec, MAX_GPUS, &nrec, &rerr) == 0)
        for (int i = 0; i < MAX_GPUS; i++)
            if (c->g[i].touched && wt_cap_rec_find(rec, nrec, c->g[i].uuid) < 0)
                wt_cap_cleared_by_hand(c, i);
    if (c->budget_w > 0) {
        double gpus = 0, total;
        int n = 0;
        for (int i = 0; i < MAX_GPUS; i++)
            if (c->g[i].seen)
                gpus += c->g[i].power_w, n++;
        total = gpus;
        if (c->meter_metric >= 0) {
            double m = 0;
            int found = 0;
            for (size_t k = 0; k < snap->len; k++)
                if (snap->r[k].metric == c->meter_metric &&
                    matches(snap->r[k].labels, c->meter_match))
                    m += snap->r[k].value, found++;
            uint64_t supp;
            if (found)
                total = m;
            else if (wt_ratelimit_ok(&c->rl, wt_now_mono_ns(), &supp))
                wt_warn(MOD,
                        "power_budget_meter %s is not in the latest readings: holding the "
                        "GPUs' sum to the budget meanwhile",
                        c->meter);
        }
        double clear = c->budget_w * c->clear_share;
        /* What the GPUs must come down to: the rest of the metered load stays as it is. */
        double target = gpus - (total - (c->budget_w + clear) / 2);
        if (n && !c->engaged && total > c->budget_w) {
            wt_warn(MOD,
                    "node power %.1f W is over the budget of %.1f W: capping %d GPUs "
                    "to %.1f W together%s",
                    total, c->budget_w, n, target, c->dry_run ? " (dry run)" : "");
            c->engaged = true;
            c->last_budget_ns = now_ns;
            share_budget(c, target);
        } else if (c->engaged && total < clear) {
            wt_info(MOD, "node power %.1f W is under %.1f W (budget x %.2f): lifting the caps",
                    total, clear, c->clear_share);
            c->engaged = false;
            for (int i = 0; i < MAX_GPUS; i++)
                c->g[i].budget_w = 0;
        } else if (n && c->engaged && total > c->budget_w &&
                   now_ns - c->last_budget_ns >= SETTLE_NS) {
            wt_warn(MOD, "node power %.1f W still over the budget of %.1f W: tightening", total,
                    c->budget_w);
            c->last_budget_ns = now_ns;
            share_budget(c, target);
        }
    }
    for (int i = 0; i < MAX_GPUS; i++) {
        struct capgpu *g = &c->g[i];
        /* An idle cap that could not be set (no root, a driver refusing) is tried again a
         * minute later, not every tick. */
        bool idle_held = c->idle_mode == WT_IDLE_LIMIT && g->idle_w > 0 &&
                         (g->touched || now_ns >= g->idle_retry_ns);
        if (g->touched || g->budget_w > 0 || g->deferred || g->hands_off || idle_held)
            wt_cap_reconcile(c, i,
                             g->budget_w > 0 ? "power_budget"
                             : idle_held
                                 ? "idle"
                                 : (g->deferred ? "min_interval_passed" : "budget_cleared"));
        if (idle_held && !g->touched)
            g->idle_retry_ns = now_ns + LOG_EVERY_NS;
    }
    pthread_mutex_unlock(&c->mu);
}
