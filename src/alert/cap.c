/* SPDX-License-Identifier: MIT */
/*
 * Power capping, the one place wattage changes a GPU's settings (off unless a rule has
 * `action: cap` or alerts.power_budget_watts is set). Loads the same NVML library as the
 * collector (WATTAGE_NVML_LIBRARY, else collectors.nvml.library) with its own session.
 *
 * Each GPU's limit is the lowest of what holds it down: the targets of the firing cap alerts on
 * it, and its share of the site budget. The first change remembers the limit the GPU had; when
 * nothing holds it down any more (the alerts resolved, the node back under budget x
 * budget_clear_share) or the daemon stops (wt_cap_close), that limit is put back, unless someone
 * else changed the limit meanwhile (then it is left as they set it, with a warning). A limit is
 * only ever lowered, and always within the GPU's [min, max] constraints.
 *
 * Site budget: when the node's power (the GPUs' sum, or the series alerts.power_budget_meter
 * names) exceeds the budget, every GPU is capped in proportion to its draw so that the power comes
 * down to the midpoint between budget x clear share and the budget (a GPU's cap never under its
 * minimum); while capped and still over, the caps are tightened again at most every few seconds
 * (the power readings lag a new limit).
 *
 * Dry run logs each action it would take and exports it, without calling the set function.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/alert.h"
#include "collect/nvml_api.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "serve/expo.h"

#define MOD "cap"
#define DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define MAX_GPUS 64
#define MAX_ACTIVE 512
#define SETTLE_NS (3 * WT_NS_PER_S) /* between two budget adjustments */
#define LOG_EVERY_NS (60 * WT_NS_PER_S)
#define SAME_W 0.5 /* limits closer than this are the same limit */

struct cap_fns {
    wt_nvml_init_fn *init;
    wt_nvml_shutdown_fn *shutdown;
    wt_nvml_error_string_fn *error_string;
    wt_nvml_count_fn *count;
    wt_nvml_handle_fn *handle;
    wt_nvml_set_limit_fn *set_limit;
    wt_nvml_uint_fn *get_limit;
    wt_nvml_uint_fn *enforced;
    wt_nvml_constraints_fn *constraints;
};

static const struct {
    const char *names[2];
    bool required;
    size_t offset;
} syms[] = {
    {{"nvmlInit_v2", "nvmlInit"}, true, offsetof(struct cap_fns, init)},
    {{"nvmlShutdown", NULL}, true, offsetof(struct cap_fns, shutdown)},
    {{"nvmlErrorString", NULL}, true, offsetof(struct cap_fns, error_string)},
    {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, true, offsetof(struct cap_fns, count)},
    {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
     true,
     offsetof(struct cap_fns, handle)},
    {{"nvmlDeviceSetPowerManagementLimit", NULL}, false, offsetof(struct cap_fns, set_limit)},
    {{"nvmlDeviceGetPowerManagementLimit", NULL}, false, offsetof(struct cap_fns, get_limit)},
    {{"nvmlDeviceGetEnforcedPowerLimit", NULL}, false, offsetof(struct cap_fns, enforced)},
    {{"nvmlDeviceGetPowerManagementLimitConstraints", NULL},
     false,
     offsetof(struct cap_fns, constraints)},
};

enum act { A_CAP, A_BUDGET, A_RESTORE, A_ERROR, A_COUNT };
static const char *const act_names[A_COUNT] = {"cap", "budget_cap", "restore", "error"};

struct capgpu {
    bool have_dev;
    nvmlDevice_t dev;
    /* From NVML, else from the latest snapshot; 0 when unknown. */
    double min_w, max_w, limit_w;
    double power_w;
    bool seen; /* in the latest snapshot */
    /* What wattage did. */
    bool touched;    /* the limit is wattage's (or would be, in dry run) */
    double saved_w;  /* the limit before the first change */
    double set_w;    /* the limit wattage set */
    double budget_w; /* this GPU's share of the site budget; 0: none */
    struct wt_ratelimit err_rl;
};

struct active {
    uint64_t fp;
    int gpu;
    double watts;
    char name[64];
};

struct rule_cap {
    char name[64];
    double watts, share;
};

struct wt_cap {
    pthread_mutex_t mu;
    void *dl;
    struct cap_fns fn;
    bool inited;
    char library[WT_PATH_LEN];
    unsigned int ngpus; /* NVML's count; 0 without NVML */
    bool dry_run;
    double budget_w, clear_share;
    int meter_metric; /* -1: the GPUs' sum */
    char meter_match[WT_LABELS_LEN];
    char meter[256];
    bool engaged;
    int64_t last_budget_ns;
    struct capgpu g[MAX_GPUS];
    struct active active[MAX_ACTIVE];
    size_t nactive;
    struct rule_cap rules[WT_ALERT_MAX_RULES];
    size_t nrules;
    uint64_t actions[A_COUNT];
    struct wt_ratelimit rl;
};

static bool forced_dry_run;

void wt_cap_force_dry_run(bool on)
{
    forced_dry_run = on;
}

static const char *errstr(const struct wt_cap *c, nvmlReturn_t r)
{
    const char *m = c->fn.error_string ? c->fn.error_string(r) : NULL;
    return m ? m : "unknown error";
}

/* ---- NVML ---------------------------------------------------------------------------------- */

static int load_nvml(struct wt_cap *c, const struct wt_config *cfg, struct wt_err *err)
{
    const char *path = getenv("WATTAGE_NVML_LIBRARY");
    if (!path || !*path)
        path =
            cfg && cfg->collectors.nvml_library[0] ? cfg->collectors.nvml_library : DEFAULT_LIBRARY;
    snprintf(c->library, sizeof c->library, "%s", path);
    dlerror();
    c->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!c->dl) {
        const char *why = dlerror();
        return wt_err_set(err, "%s not found (%s)", path, why ? why : "dlopen failed");
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = NULL;
        for (int k = 0; k < 2 && syms[i].names[k] && !p; k++)
            p = dlsym(c->dl, syms[i].names[k]);
        if (!p && syms[i].required)
            return wt_err_set(err, "%s does not export %s", path, syms[i].names[0]);
        /* POSIX guarantees object and function pointers share a representation. */
        memcpy((char *)&c->fn + syms[i].offset, &p, sizeof p);
    }
    nvmlReturn_t r = c->fn.init();
    if (r != NVML_SUCCESS)
        return wt_err_set(err, "nvmlInit failed in %s: %s (%d)", path, errstr(c, r), (int)r);
    c->inited = true;
    unsigned int n = 0;
    r = c->fn.count(&n);
    if (r != NVML_SUCCESS)
        return wt_err_set(err, "nvmlDeviceGetCount failed: %s (%d)", errstr(c, r), (int)r);
    c->ngpus = n < MAX_GPUS ? n : MAX_GPUS;
    if (!c->fn.set_limit)
        wt_warn(MOD, "%s does not export nvmlDeviceSetPowerManagementLimit: limits cannot be set",
                path);
    return 0;
}

/* Reads the GPU's handle, constraints and current limit from NVML where it can. */
static void refresh(struct wt_cap *c, int i)
{
    struct capgpu *g = &c->g[i];
    if (!c->inited || (unsigned int)i >= c->ngpus)
        return;
    if (!g->have_dev && c->fn.handle((unsigned int)i, &g->dev) == NVML_SUCCESS)
        g->have_dev = true;
    if (!g->have_dev)
        return;
    unsigned int lo, hi, mw;
    if (c->fn.constraints && c->fn.constraints(g->dev, &lo, &hi) == NVML_SUCCESS && hi >= lo) {
        g->min_w = lo / 1000.0;
        g->max_w = hi / 1000.0;
    }
    if ((c->fn.get_limit && c->fn.get_limit(g->dev, &mw) == NVML_SUCCESS) ||
        (c->fn.enforced && c->fn.enforced(g->dev, &mw) == NVML_SUCCESS))
        g->limit_w = mw / 1000.0;
}

static void count_action(struct wt_cap *c, enum act a)
{
    c->actions[a]++;
}

/* Sets GPU i's limit (or says it would). Returns 0 or -EIO (logged). */
static int set_limit(struct wt_cap *c, int i, double w, enum act why, const char *reason)
{
    struct capgpu *g = &c->g[i];
    unsigned int mw = (unsigned int)lround(w * 1000);
    if (c->dry_run) {
        wt_info(MOD, "dry run: would set gpu=%d limit_w=%.1f action=%s reason=%s previous_w=%.1f",
                i, w, act_names[why], reason, g->touched ? g->set_w : g->limit_w);
        count_action(c, why);
        return 0;
    }
    if (!c->fn.set_limit || !g->have_dev) {
        uint64_t supp;
        count_action(c, A_ERROR);
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "cannot set gpu=%d limit_w=%.1f: %s", i, w,
                     c->inited ? "no such GPU or no set function in the NVML library"
                               : "NVML is not loaded");
        return -EIO;
    }
    nvmlReturn_t r = c->fn.set_limit(g->dev, mw);
    if (r != NVML_SUCCESS) {
        uint64_t supp;
        count_action(c, A_ERROR);
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "nvmlDeviceSetPowerManagementLimit gpu=%d limit_w=%.1f failed: %s (%d)%s",
                     i, w, errstr(c, r), (int)r,
                     r == NVML_ERROR_NO_PERMISSION ? " (setting limits needs root)" : "");
        return -EIO;
    }
    wt_info(MOD, "set gpu=%d limit_w=%.1f action=%s reason=%s previous_w=%.1f", i, w,
            act_names[why], reason, g->touched ? g->set_w : g->limit_w);
    count_action(c, why);
    g->limit_w = w;
    return 0;
}

static void restore(struct wt_cap *c, int i, const char *reason)
{
    struct capgpu *g = &c->g[i];
    if (!g->touched)
        return;
    if (c->dry_run) {
        wt_info(MOD, "dry run: would restore gpu=%d limit_w=%.1f reason=%s", i, g->saved_w, reason);
        count_action(c, A_RESTORE);
        g->touched = false;
        g->set_w = 0;
        return;
    }
    refresh(c, i);
    if (g->limit_w > 0 && fabs(g->limit_w - g->set_w) > 1.0) {
        /* An operator (or another tool) changed it after us: theirs stands. */
        wt_warn(MOD,
                "gpu=%d limit is %.1f W, not the %.1f W wattage set: leaving it (not restoring "
                "%.1f W)",
                i, g->limit_w, g->set_w, g->saved_w);
        g->touched = false;
        g->set_w = 0;
        return;
    }
    unsigned int mw = (unsigned int)lround(g->saved_w * 1000);
    nvmlReturn_t r =
        c->fn.set_limit && g->have_dev ? c->fn.set_limit(g->dev, mw) : NVML_ERROR_UNINITIALIZED;
    if (r != NVML_SUCCESS) {
        uint64_t supp;
        count_action(c, A_ERROR);
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "restoring gpu=%d limit_w=%.1f failed: %s (%d)", i, g->saved_w,
                     errstr(c, r), (int)r);
        return; /* still ours: tried again at the next change or tick */
    }
    wt_info(MOD, "restored gpu=%d limit_w=%.1f reason=%s", i, g->saved_w, reason);
    count_action(c, A_RESTORE);
    g->limit_w = g->saved_w;
    g->touched = false;
    g->set_w = 0;
}

/* Brings GPU i's limit to the lowest of what holds it down, or restores it. */
static void reconcile(struct wt_cap *c, int i, const char *reason)
{
    struct capgpu *g = &c->g[i];
    double want = 0;
    enum act why = A_CAP;
    const char *name = reason;
    for (size_t k = 0; k < c->nactive; k++) {
        if (c->active[k].gpu == i && (want == 0 || c->active[k].watts < want)) {
            want = c->active[k].watts;
            name = c->active[k].name;
        }
    }
    if (g->budget_w > 0 && (want == 0 || g->budget_w < want)) {
        want = g->budget_w;
        why = A_BUDGET;
        name = "power_budget";
    }
    if (want <= 0) {
        restore(c, i, reason);
        return;
    }
    if (!g->touched)
        refresh(c, i);
    double base = g->touched ? g->saved_w : g->limit_w;
    double w = want;
    if (g->max_w > 0 && w > g->max_w)
        w = g->max_w;
    if (g->min_w > 0 && w < g->min_w)
        w = g->min_w;
    if (base > 0 && w > base)
        w = base; /* a cap never raises the limit */
    if (g->touched && fabs(w - g->saved_w) < SAME_W) {
        restore(c, i, reason); /* what holds it now is no lower than its own limit */
        return;
    }
    if (g->touched ? fabs(w - g->set_w) < SAME_W : (base > 0 && fabs(w - base) < SAME_W))
        return;
    if (!g->touched)
        g->saved_w = base > 0 ? base : (g->max_w > 0 ? g->max_w : w);
    if (set_limit(c, i, w, why, name) != 0)
        return;
    g->touched = true;
    g->set_w = w;
}

/* ---- alerts ------------------------------------------------------------------------------ */

void wt_cap_apply(struct wt_cap *c, const struct wt_alert *a)
{
    if (!c || !a || a->action != WT_ACTION_CAP)
        return;
    if (a->gpu < 0 || a->gpu >= MAX_GPUS || (c->inited && (unsigned int)a->gpu >= c->ngpus)) {
        wt_warn(MOD, "alert %s{%s} has action cap but no GPU this node has (gpu=%d)", a->name,
                a->labels, a->gpu);
        return;
    }
    pthread_mutex_lock(&c->mu);
    size_t k = 0;
    while (k < c->nactive && c->active[k].fp != a->fingerprint)
        k++;
    if (a->state == WT_ALERT_FIRING) {
        double w = a->cap_watts;
        if (w <= 0) {
            /* The engine leaves a share to us when it does not know the GPU's max. */
            refresh(c, a->gpu);
            for (size_t r = 0; r < c->nrules; r++)
                if (strcmp(c->rules[r].name, a->name) == 0)
                    w = c->rules[r].watts > 0 ? c->rules[r].watts
                                              : c->rules[r].share * c->g[a->gpu].max_w;
        }
        if (w <= 0) {
            wt_warn(MOD, "alert %s{%s}: no cap target (cap_watts or cap_share with a known max)",
                    a->name, a->labels);
        } else if (k < c->nactive || c->nactive < MAX_ACTIVE) {
            if (k == c->nactive)
                c->nactive++;
            c->active[k].fp = a->fingerprint;
            c->active[k].gpu = a->gpu;
            c->active[k].watts = w;
            snprintf(c->active[k].name, sizeof c->active[k].name, "%s", a->name);
        }
    } else if (k < c->nactive) {
        c->active[k] = c->active[--c->nactive];
    }
    reconcile(c, a->gpu, a->name);
    pthread_mutex_unlock(&c->mu);
}

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

/* Shares target among the GPUs in the snapshot, in proportion to their draw. */
static void share_budget(struct wt_cap *c, double target)
{
    double lo[MAX_GPUS], hi[MAX_GPUS], sum_lo = 0;
    for (int i = 0; i < MAX_GPUS; i++) {
        struct capgpu *g = &c->g[i];
        if (!g->seen)
            continue;
        refresh(c, i);
        double base = g->touched ? g->saved_w : g->limit_w;
        lo[i] = g->min_w > 0 ? g->min_w : 0;
        hi[i] = g->max_w > 0 ? g->max_w : INFINITY;
        if (base > 0 && base < hi[i])
            hi[i] = base;
        if (hi[i] < lo[i])
            hi[i] = lo[i];
        sum_lo += lo[i];
    }
    double s = 0;
    if (sum_lo >= target) {
        wt_warn(MOD,
                "power budget %.0f W is under the GPUs' minimum limits (%.0f W together): "
                "every GPU at its minimum",
                c->budget_w, sum_lo);
    } else {
        /* f(s) = sum clamp(p_i s, lo_i, hi_i) rises with s; f(1) is about the draw (> target). */
        double a = 0, b = 1;
        for (int it = 0; it < 60; it++) {
            double m = (a + b) / 2, f = 0;
            for (int i = 0; i < MAX_GPUS; i++)
                if (c->g[i].seen)
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
            c->g[i].budget_w = clampd(c->g[i].power_w * s, lo[i], hi[i]);
}

void wt_cap_budget(struct wt_cap *c, const struct wt_batch *snap, int64_t now_ns)
{
    if (!c || !snap)
        return;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < MAX_GPUS; i++)
        c->g[i].seen = false;
    char v[16];
    for (size_t k = 0; k < snap->len; k++) {
        const struct wt_reading *r = &snap->r[k];
        if (r->metric != WT_M_GPU_POWER_W && r->metric != WT_M_GPU_POWER_LIMIT_W &&
            r->metric != WT_M_GPU_POWER_LIMIT_MIN_W && r->metric != WT_M_GPU_POWER_LIMIT_MAX_W)
            continue;
        if (wt_labels_get(r->labels, "gpu", v, sizeof v) != 0)
            continue;
        char *end;
        long i = strtol(v, &end, 10);
        if (*end || i < 0 || i >= MAX_GPUS)
            continue;
        struct capgpu *g = &c->g[i];
        /* NVML's own values win; the snapshot's serve when this process has no NVML. */
        if (r->metric == WT_M_GPU_POWER_W) {
            g->power_w = r->value;
            g->seen = true;
        } else if (!c->inited && r->metric == WT_M_GPU_POWER_LIMIT_W && !g->touched) {
            g->limit_w = r->value;
        } else if (!c->inited && r->metric == WT_M_GPU_POWER_LIMIT_MIN_W) {
            g->min_w = r->value;
        } else if (!c->inited && r->metric == WT_M_GPU_POWER_LIMIT_MAX_W) {
            g->max_w = r->value;
        }
    }
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
        if (g->touched || g->budget_w > 0)
            reconcile(c, i, g->budget_w > 0 ? "power_budget" : "budget_cleared");
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- life cycle -------------------------------------------------------------------------- */

int wt_cap_open(const struct wt_config *cfg, const struct wt_alerts_config *acfg,
                struct wt_cap **out, struct wt_err *err)
{
    *out = NULL;
    if (!acfg)
        return 0;
    size_t ncap = 0;
    for (size_t i = 0; i < acfg->nrules; i++)
        ncap += acfg->rules[i].action == WT_ACTION_CAP;
    if (ncap == 0 && acfg->power_budget_watts <= 0)
        return 0;
    struct wt_cap *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    c->dry_run = acfg->dry_run || forced_dry_run;
    c->budget_w = acfg->power_budget_watts > 0 ? acfg->power_budget_watts : 0;
    c->clear_share = acfg->budget_clear_share > 0 && acfg->budget_clear_share < 1
                         ? acfg->budget_clear_share
                         : 0.95;
    c->rl.interval_ns = LOG_EVERY_NS;
    c->meter_metric = -1;
    if (acfg->power_budget_meter[0]) {
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
    for (size_t i = 0; i < acfg->nrules && c->nrules < WT_ALERT_MAX_RULES; i++) {
        const struct wt_alert_rule *r = &acfg->rules[i];
        if (r->action != WT_ACTION_CAP)
            continue;
        struct rule_cap *rc = &c->rules[c->nrules++];
        snprintf(rc->name, sizeof rc->name, "%s", r->name);
        rc->watts = r->cap_watts;
        rc->share = r->cap_share;
    }
    struct wt_err lerr = {{0}};
    if (load_nvml(c, cfg, &lerr) != 0) {
        /* Not fatal: alerts still fire and are delivered; dry run still says what it would do. */
        wt_warn(MOD, "power capping cannot reach NVML: %s%s", lerr.msg,
                c->dry_run ? " (dry run: limits from the snapshot)" : "; no limit will be set");
        if (c->inited && c->fn.shutdown)
            c->fn.shutdown();
        c->inited = false;
        c->ngpus = 0;
    }
    wt_info(MOD,
            "power capping on: cap_rules=%zu budget_w=%.1f clear_share=%.2f meter=%s "
            "dry_run=%s gpus=%u library=%s",
            ncap, c->budget_w, c->clear_share, c->meter[0] ? c->meter : "gpus",
            c->dry_run ? "true" : "false", c->ngpus, c->library);
    *out = c;
    return 0;
}

void wt_cap_close(struct wt_cap *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->nactive = 0;
    for (int i = 0; i < MAX_GPUS; i++) {
        c->g[i].budget_w = 0;
        restore(c, i, "stopping");
    }
    for (int i = 0; i < MAX_GPUS; i++)
        if (c->g[i].touched)
            wt_error(MOD, "gpu=%d keeps the limit of %.1f W wattage set (restoring %.1f W failed)",
                     i, c->g[i].set_w, c->g[i].saved_w);
    pthread_mutex_unlock(&c->mu);
    if (c->inited && c->fn.shutdown)
        c->fn.shutdown();
    /* The library stays loaded if the collector has it too; dlclose only drops our reference. */
    if (c->dl)
        dlclose(c->dl);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- /metrics ---------------------------------------------------------------------------- */

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
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        if (wt_labels(fam->s[fam->n].labels, sizeof fam->s[fam->n].labels, "gpu", v, NULL) == 0)
            fam->s[fam->n++].value = c->g[i].set_w;
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int wt_cap_family_actions(void *cap, struct wt_expo_family *fam)
{
    struct wt_cap *c = cap;
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_power_cap_actions_total";
    fam->help = "Power limit changes wattage made (or, with dry_run=\"true\", would have made), "
                "by action: cap (an alert's), budget_cap, restore, error";
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
