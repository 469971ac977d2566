/* SPDX-License-Identifier: MIT */
/*
 * Power capping, the one place wattage changes a GPU's settings (off unless a rule has
 * `action: cap` or alerts.power_budget_watts is set). Loads the same NVML library as the
 * collector (WATTAGE_NVML_LIBRARY, else collectors.nvml.library) with its own session.
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
#include "audit/jobs.h"
#include "collect/nvml.h"
#include "collect/nvml_api.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/durable.h"
#include "core/log.h"
#include "serve/expo.h"

#define MOD "cap"
#define DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define MAX_GPUS 64
#define MAX_ACTIVE 512
#define SETTLE_NS (3 * WT_NS_PER_S) /* between two budget adjustments */
#define LOG_EVERY_NS (60 * WT_NS_PER_S)
#define SAME_W 0.5   /* limits closer than this are the same limit */
#define OTHERS_W 1.0 /* a limit this far from what wattage set was set by someone else */
#define REC_FILE "power-caps"
#define REC_HEADER "# wattage power caps v1: UUID GPU OWN_W SET_W T_NS REASON\n"
#define NEVER_TAG "cap"
#define NEVER_VALUE "never"

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
    wt_nvml_uint_fn *default_limit;
    wt_nvml_string_fn *uuid;
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
    {{"nvmlDeviceGetPowerManagementDefaultLimit", NULL},
     false,
     offsetof(struct cap_fns, default_limit)},
    {{"nvmlDeviceGetUUID", NULL}, false, offsetof(struct cap_fns, uuid)},
};

enum act { A_CAP, A_BUDGET, A_RESTORE, A_ERROR, A_IDLE, A_COUNT };
static const char *const act_names[A_COUNT] = {"cap", "budget_cap", "restore", "error", "idle_cap"};

/* Why an action was taken (or held back): the reason label of wattage_power_cap_reasons_total,
 * a fixed set so that its cardinality is bounded. */
enum why {
    W_RULE,         /* a firing rule with action cap */
    W_BUDGET,       /* the site budget */
    W_RESOLVED,     /* what held it let go: restored */
    W_STOPPING,     /* the daemon stops: restored */
    W_CAP_NEVER,    /* a cap=never job holds the GPU: restored, or not capped */
    W_EARLIER_RUN,  /* a record an earlier run left: restored at start */
    W_KEPT,         /* a record an earlier run left, kept: a rule of this configuration holds it */
    W_BY_HAND,      /* `wattage cap clear` restored it: left alone */
    W_BY_OTHERS,    /* someone else changed the limit: left as they set it */
    W_MIN_INTERVAL, /* a change held back by alerts.cap_min_interval */
    W_FLOOR,        /* a target under the GPU's minimum or alerts.cap_floor_watts: raised */
    W_NO_RECORD,    /* the record could not be written: no change */
    W_IDLE,         /* alerts.idle_policy: the GPU has been idle for idle_for */
    W_IDLE_ENDED,   /* alerts.idle_policy: the GPU is busy again (a process, utilization) */
    W_JOB_START,    /* alerts.idle_policy: a job naming the GPU starts (POST /api/v1/jobs) */
    W_COUNT
};
static const char *const why_names[W_COUNT] = {
    "rule", "budget",          "resolved",          "stopping",     "cap_never", "earlier_run",
    "kept", "cleared_by_hand", "changed_by_others", "min_interval", "floor",     "no_record",
    "idle", "idle_ended",      "job_start"};

struct capgpu {
    bool have_dev;
    nvmlDevice_t dev;
    char uuid[96]; /* "" until read */
    /* From NVML, else from the latest snapshot; 0 when unknown. */
    double min_w, max_w, limit_w, default_w;
    double power_w;
    bool seen; /* in the latest snapshot */
    /* What wattage did. */
    bool touched;           /* the limit is wattage's (or would be, in dry run) */
    double saved_w;         /* the GPU's own limit, put back when nothing holds it */
    double set_w;           /* the limit wattage set */
    double budget_w;        /* this GPU's share of the site budget; 0: none */
    int64_t last_change_ns; /* CLOCK_REALTIME of the last change; 0: none */
    bool deferred;          /* a change waits for alerts.cap_min_interval */
    bool hands_off;         /* cleared by hand: not capped until nothing holds it */
    bool never;             /* held by a running cap=never job */
    bool foreign_said;      /* the foreign cap was logged */
    bool left_capped;       /* nothing holds it but restoring failed (twice): still wattage's */
    /* A cap an earlier run set that a rule of this configuration may still hold. */
    double hold_w;
    int64_t hold_until_ns;
    char hold_reason[64];
    struct wt_ratelimit err_rl;
    /* alerts.idle_policy. From the latest snapshot: dark.h's idle gauge, the idle power level
     * (today's mean idle power) and the utilization. */
    bool snap_idle, has_util;
    double snap_level_w, util;
    int64_t idle_from_ns;  /* CLOCK_REALTIME of the first tick the capper saw it idle; 0: busy */
    double idle_w;         /* the limit the policy holds it at (or would, in dry run); 0: none */
    double idle_level_w;   /* its idle power level when the policy engaged */
    bool lift_now;         /* a lift in progress: no min_interval, restored with lift_why */
    int64_t idle_retry_ns; /* an idle cap not set: not tried again before this */
    enum why lift_why;
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
    int64_t for_ns;
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
    double floor_w;
    int64_t min_interval_ns, interval_ns;
    int meter_metric; /* -1: the GPUs' sum */
    char meter_match[WT_LABELS_LEN];
    char meter[256];
    bool engaged;
    int64_t last_budget_ns;
    int64_t now_ns;                /* CLOCK_REALTIME of the latest tick or transition */
    char record[WT_PATH_LEN + 16]; /* "" = none (no configuration to place it) */
    char db[WT_PATH_LEN];          /* the store, for the cap=never jobs; "" = none */
    int crash_hook;                /* WATTAGE_TEST_CAP_EXIT: 1 before the record, 2 after */
    struct capgpu g[MAX_GPUS];
    struct active active[MAX_ACTIVE];
    size_t nactive;
    struct rule_cap rules[WT_ALERT_MAX_RULES];
    size_t nrules;
    uint64_t actions[A_COUNT];
    uint64_t whys[W_COUNT];
    struct wt_ratelimit rl, rec_rl, never_rl;
    /* alerts.idle_policy */
    enum wt_idle_mode idle_mode;
    int64_t idle_for_ns;
    double idle_limit_w; /* 0: the GPU's minimum */
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

/* ---- the record ------------------------------------------------------------------------- */

int wt_cap_record_path(const struct wt_config *cfg, const struct wt_alerts_config *acfg, char *out,
                       size_t n)
{
    if (acfg && acfg->cap_record[0]) {
        snprintf(out, n, "%s", acfg->cap_record);
        return 0;
    }
    if (!cfg || !cfg->store.path[0]) {
        if (n)
            out[0] = '\0';
        return -ENOENT;
    }
    char dir[WT_PATH_LEN];
    snprintf(dir, sizeof dir, "%s", cfg->store.path);
    snprintf(out, n, "%s/%s", dirname(dir), REC_FILE);
    return 0;
}

int wt_cap_record_read(const char *path, struct wt_cap_rec *r, size_t cap, size_t *n,
                       struct wt_err *err)
{
    *n = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : wt_err_set(err, "%s: %s", path, strerror(errno));
    char line[512];
    int ln = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        struct wt_cap_rec x;
        memset(&x, 0, sizeof x);
        int used = 0;
        if (sscanf(line, "%95s %d %lf %lf %" SCNd64 " %n", x.uuid, &x.gpu, &x.own_w, &x.set_w,
                   &x.t_ns, &used) != 5 ||
            x.own_w <= 0 || x.set_w <= 0) {
            rc = wt_err_set(err, "%s:%d: expected UUID GPU OWN_W SET_W T_NS REASON", path, ln);
            break;
        }
        snprintf(x.reason, sizeof x.reason, "%s", line + used);
        x.reason[strcspn(x.reason, "\n")] = '\0';
        if (*n < cap)
            r[(*n)++] = x;
    }
    fclose(f);
    return rc;
}

int wt_cap_record_write(const char *path, const struct wt_cap_rec *r, size_t n, struct wt_err *err)
{
    if (n == 0) {
        if (unlink(path) != 0 && errno != ENOENT)
            return wt_err_set(err, "%s: cannot remove: %s", path, strerror(errno));
        wt_durable_sync_dir(path);
        return 0;
    }
    /* The lines must be on disk before the limit they describe is set: one durable replace. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return wt_err_set(err, "%s: cannot write the cap record: %s", path, strerror(errno));
    bool ok = fputs(REC_HEADER, f) >= 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = fprintf(f, "%s %d %.3f %.3f %" PRId64 " %s\n", r[i].uuid, r[i].gpu, r[i].own_w,
                     r[i].set_w, r[i].t_ns, r[i].reason) > 0;
    if (fclose(f) != 0 || !ok) {
        free(buf);
        return wt_err_set(err, "%s: cannot write the cap record: %s", path, strerror(ENOMEM));
    }
    /* wt_durable_replace ends the file with the last line's newline */
    int rc = wt_durable_replace(path, buf, len - 1, "the cap record", err);
    free(buf);
    return rc;
}

/* Takes the record's lock (a file beside it: the record itself is replaced by rename), shared
 * by every wattage process; returns the descriptor to close, or -1 without a record. */
static int rec_lock(const char *path)
{
    if (!path[0])
        return -1;
    char lk[WT_PATH_LEN + 32];
    snprintf(lk, sizeof lk, "%s.lock", path);
    int fd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    return fd;
}

static void rec_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the lock */
}

static int rec_find(const struct wt_cap_rec *r, size_t n, const char *uuid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].uuid, uuid) == 0)
            return (int)i;
    return -1;
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
    /* The daemon's shared session (collect/nvml.h): it ends after the last user, so the
     * collector stopping first cannot take NVML away from the limits this still has to restore. */
    nvmlReturn_t r = wt_nvml_session_acquire(c->fn.init);
    if (r != NVML_SUCCESS)
        return wt_err_set(err, "nvmlInit failed in %s: %s (%d)", path, errstr(c, r), (int)r);
    c->inited = true;
    unsigned int n = 0;
    r = c->fn.count(&n);
    if (r != NVML_SUCCESS)
        return wt_err_set(err, "nvmlDeviceGetCount failed: %s (%d)", errstr(c, r), (int)r);
    c->ngpus = n < MAX_GPUS ? n : MAX_GPUS;
    return 0;
}

static void unload_nvml(struct wt_cap *c)
{
    if (c->inited)
        wt_nvml_session_release(c->fn.init, c->fn.shutdown);
    c->inited = false;
    c->ngpus = 0;
    /* The library stays loaded if the collector has it too; dlclose only drops our reference. */
    if (c->dl)
        dlclose(c->dl);
    c->dl = NULL;
}

/* Reads the GPU's handle, UUID, constraints, default and current limit from NVML where it can. */
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
    if (!g->uuid[0] && (!c->fn.uuid || c->fn.uuid(g->dev, g->uuid, sizeof g->uuid) != NVML_SUCCESS))
        snprintf(g->uuid, sizeof g->uuid, "index-%d", i); /* no UUID: the index must do */
    if (c->fn.constraints && c->fn.constraints(g->dev, &lo, &hi) == NVML_SUCCESS && hi >= lo) {
        g->min_w = lo / 1000.0;
        g->max_w = hi / 1000.0;
    }
    if (g->default_w <= 0 && c->fn.default_limit &&
        c->fn.default_limit(g->dev, &mw) == NVML_SUCCESS && mw > 0)
        g->default_w = mw / 1000.0;
    if ((c->fn.get_limit && c->fn.get_limit(g->dev, &mw) == NVML_SUCCESS) ||
        (c->fn.enforced && c->fn.enforced(g->dev, &mw) == NVML_SUCCESS))
        g->limit_w = mw / 1000.0;
}

/* The GPU's own limit when wattage has not changed it: its limit, unless that differs from its
 * default limit (someone else capped it; a record would have said if it was wattage): then the
 * default. */
static double own_limit(const struct capgpu *g)
{
    if (g->default_w > 0 && g->limit_w > 0 && fabs(g->limit_w - g->default_w) > OTHERS_W)
        return g->default_w;
    return g->limit_w;
}

static void count_action(struct wt_cap *c, enum act a, enum why w)
{
    c->actions[a]++;
    c->whys[w]++;
}

static void rec_complain(struct wt_cap *c, const char *what, const char *msg)
{
    uint64_t supp;
    if (wt_ratelimit_ok(&c->rec_rl, wt_now_mono_ns(), &supp))
        wt_error(MOD, "%s: %s", what, msg);
}

/* Puts GPU i's line (own, set, reason) in the record, or takes it out (set_w 0). Called with
 * the record's lock held. Returns 0 or -EIO (logged). */
static int rec_update(struct wt_cap *c, int i, double own_w, double set_w, const char *reason)
{
    struct wt_cap_rec r[MAX_GPUS + 1];
    size_t n = 0;
    struct wt_err err = {{0}};
    if (!c->record[0])
        return 0;
    if (wt_cap_record_read(c->record, r, MAX_GPUS, &n, &err) != 0) {
        rec_complain(c, "the power cap record is unreadable", err.msg);
        return -EIO;
    }
    int k = rec_find(r, n, c->g[i].uuid);
    if (set_w <= 0) {
        if (k < 0)
            return 0;
        r[k] = r[--n];
    } else {
        if (k < 0)
            k = (int)n++;
        memset(&r[k], 0, sizeof r[k]);
        snprintf(r[k].uuid, sizeof r[k].uuid, "%s", c->g[i].uuid);
        r[k].gpu = i;
        r[k].own_w = own_w;
        r[k].set_w = set_w;
        r[k].t_ns = wt_now_real_ns();
        snprintf(r[k].reason, sizeof r[k].reason, "%s", reason);
    }
    if (wt_cap_record_write(c->record, r, n, &err) != 0) {
        rec_complain(c, "cannot write the power cap record", err.msg);
        return -EIO;
    }
    return 0;
}

/* True when the record (read without the lock: it is replaced whole) still has GPU i's line;
 * true as well when it cannot be read (nothing is given up on a read error). */
static bool rec_has(struct wt_cap *c, int i)
{
    struct wt_cap_rec r[MAX_GPUS];
    size_t n = 0;
    struct wt_err err = {{0}};
    if (!c->record[0] || wt_cap_record_read(c->record, r, MAX_GPUS, &n, &err) != 0)
        return true;
    return rec_find(r, n, c->g[i].uuid) >= 0;
}

/* GPU i's line is gone from the record while wattage holds it: `wattage cap clear` put it back. */
static void cleared_by_hand(struct wt_cap *c, int i)
{
    struct capgpu *g = &c->g[i];
    refresh(c, i);
    wt_warn(MOD,
            "gpu=%d uuid=%s: its cap of %.1f W was cleared by hand (limit now %.1f W): not "
            "capping it again until what holds it lets go",
            i, g->uuid, g->set_w, g->limit_w);
    count_action(c, A_RESTORE, W_BY_HAND);
    g->touched = false;
    g->set_w = 0;
    g->hands_off = true;
    g->last_change_ns = c->now_ns;
}

static void crash_point(const struct wt_cap *c, int where)
{
    /* A test hook: die as kill -9 would, at this point of a change. */
    if (c->crash_hook == where)
        _exit(86);
}

/* Sets GPU i's limit (or says it would), recorded first. Returns 0, -ECANCELED (cleared by hand
 * meanwhile) or -EIO (logged). */
static int set_limit(struct wt_cap *c, int i, double w, enum act act, enum why why,
                     const char *reason)
{
    struct capgpu *g = &c->g[i];
    unsigned int mw = (unsigned int)lround(w * 1000);
    if (c->dry_run) {
        wt_info(MOD,
                "dry run: would set gpu=%d limit_w=%.1f action=%s reason=%s why=%s previous_w=%.1f",
                i, w, act_names[act], reason, why_names[why], g->touched ? g->set_w : g->limit_w);
        count_action(c, act, why);
        return 0;
    }
    if (!c->fn.set_limit || !g->have_dev) {
        uint64_t supp;
        count_action(c, A_ERROR, why);
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "cannot set gpu=%d limit_w=%.1f: %s", i, w,
                     c->inited ? "no such GPU or no set function in the NVML library"
                               : "NVML is not loaded");
        return -EIO;
    }
    int fd = rec_lock(c->record);
    int rc = 0;
    if (g->touched && !rec_has(c, i)) {
        cleared_by_hand(c, i);
        rc = -ECANCELED;
        goto out;
    }
    crash_point(c, 1);
    if (rec_update(c, i, g->saved_w, w, reason) != 0) {
        count_action(c, A_ERROR, W_NO_RECORD);
        rc = -EIO; /* never a cap without its record */
        goto out;
    }
    crash_point(c, 2);
    nvmlReturn_t r = c->fn.set_limit(g->dev, mw);
    if (r != NVML_SUCCESS) {
        uint64_t supp;
        count_action(c, A_ERROR, why);
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "nvmlDeviceSetPowerManagementLimit gpu=%d limit_w=%.1f failed: %s (%d)%s",
                     i, w, errstr(c, r), (int)r,
                     r == NVML_ERROR_NO_PERMISSION ? " (setting limits needs root)" : "");
        /* The record says what the GPU has: the previous cap, or nothing. */
        (void)rec_update(c, i, g->saved_w, g->touched ? g->set_w : 0, reason);
        rc = -EIO;
        goto out;
    }
    wt_info(MOD, "set gpu=%d limit_w=%.1f action=%s reason=%s why=%s previous_w=%.1f own_w=%.1f", i,
            w, act_names[act], reason, why_names[why], g->touched ? g->set_w : g->limit_w,
            g->saved_w);
    count_action(c, act, why);
    g->limit_w = w;
    g->last_change_ns = c->now_ns;
    g->left_capped = false; /* held again: wattage's on purpose */
out:
    rec_unlock(fd);
    return rc;
}

static void untouch(struct capgpu *g)
{
    g->touched = false;
    g->set_w = 0;
    g->hold_until_ns = 0;
    g->hold_w = 0;
}

static void restore(struct wt_cap *c, int i, enum why why, const char *reason)
{
    struct capgpu *g = &c->g[i];
    if (!g->touched)
        return;
    if (c->dry_run) {
        wt_info(MOD, "dry run: would restore gpu=%d limit_w=%.1f reason=%s why=%s", i, g->saved_w,
                reason, why_names[why]);
        count_action(c, A_RESTORE, why);
        untouch(g);
        return;
    }
    int fd = rec_lock(c->record);
    refresh(c, i);
    if (!rec_has(c, i)) {
        cleared_by_hand(c, i);
        g->hands_off = false; /* nothing holds it any more */
        goto out;
    }
    if (g->limit_w > 0 && fabs(g->limit_w - g->set_w) > OTHERS_W) {
        /* An operator (or another tool) changed it after us: theirs stands. */
        wt_warn(MOD,
                "gpu=%d limit is %.1f W, not the %.1f W wattage set: leaving it (not restoring "
                "%.1f W)",
                i, g->limit_w, g->set_w, g->saved_w);
        count_action(c, A_RESTORE, W_BY_OTHERS);
        (void)rec_update(c, i, 0, 0, reason);
        untouch(g);
        goto out;
    }
    unsigned int mw = (unsigned int)lround(g->saved_w * 1000);
    nvmlReturn_t r =
        c->fn.set_limit && g->have_dev ? c->fn.set_limit(g->dev, mw) : NVML_ERROR_UNINITIALIZED;
    if (r != NVML_SUCCESS && r != NVML_ERROR_NO_PERMISSION && c->fn.set_limit && g->have_dev) {
        /* Once more, a moment later: a driver busy with a reset or a recovery may take it now. */
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        r = c->fn.set_limit(g->dev, mw);
    }
    if (r != NVML_SUCCESS) {
        uint64_t supp;
        count_action(c, A_ERROR, why);
        g->left_capped = true;
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "restoring gpu=%d limit_w=%.1f failed: %s (%d); it stays at %.1f W", i,
                     g->saved_w, errstr(c, r), (int)r, g->set_w);
        goto out; /* still ours (and recorded): tried again at the next change or tick */
    }
    /* Restored first, then the line goes: a crash between them leaves a line that the next
     * start finds already put right. */
    (void)rec_update(c, i, 0, 0, reason);
    wt_info(MOD, "restored gpu=%d limit_w=%.1f reason=%s why=%s", i, g->saved_w, reason,
            why_names[why]);
    count_action(c, A_RESTORE, why);
    g->limit_w = g->saved_w;
    g->last_change_ns = c->now_ns;
    g->left_capped = false;
    untouch(g);
out:
    rec_unlock(fd);
}

/* Whether alerts.cap_min_interval holds a change of GPU i back now. */
static bool too_soon(struct wt_cap *c, int i)
{
    const struct capgpu *g = &c->g[i];
    return c->min_interval_ns > 0 && g->last_change_ns && c->now_ns >= g->last_change_ns &&
           c->now_ns - g->last_change_ns < c->min_interval_ns;
}

/* Brings GPU i's limit to the lowest of what holds it down, or restores it. */
static void reconcile(struct wt_cap *c, int i, const char *reason)
{
    struct capgpu *g = &c->g[i];
    double want = 0;
    enum act act = A_CAP;
    enum why why = W_RULE;
    const char *name = reason;
    bool was_deferred = g->deferred;
    g->deferred = false;
    if (g->never) {
        if (g->touched) {
            wt_warn(MOD, "gpu=%d is held by a running job tagged %s=%s: lifting its cap", i,
                    NEVER_TAG, NEVER_VALUE);
            restore(c, i, W_CAP_NEVER, "cap_never_job");
        }
        return;
    }
    for (size_t k = 0; k < c->nactive; k++) {
        if (c->active[k].gpu == i && (want == 0 || c->active[k].watts < want)) {
            want = c->active[k].watts;
            name = c->active[k].name;
        }
    }
    if (g->budget_w > 0 && (want == 0 || g->budget_w < want)) {
        want = g->budget_w;
        act = A_BUDGET;
        why = W_BUDGET;
        name = "power_budget";
    }
    double iw = c->idle_mode == WT_IDLE_LIMIT ? g->idle_w : 0;
    if (iw > 0 && (want == 0 || iw < want)) {
        want = iw;
        act = A_IDLE;
        why = W_IDLE;
        name = "idle";
    }
    if (g->budget_w > 0 && strcmp(g->hold_reason, "power_budget") == 0)
        g->hold_until_ns = 0; /* the budget that set an earlier run's cap holds the GPU now */
    if (g->hold_until_ns && c->now_ns < g->hold_until_ns && (want == 0 || g->hold_w < want)) {
        want = g->hold_w; /* an earlier run's cap, while its rule may still fire */
        why = W_KEPT;
        name = g->hold_reason;
    }
    if (g->hands_off) {
        if (want <= 0)
            g->hands_off = false;
        return;
    }
    if (want <= 0) {
        if (g->touched && !g->lift_now && too_soon(c, i)) {
            if (!was_deferred)
                c->whys[W_MIN_INTERVAL]++;
            g->deferred = true;
            return;
        }
        restore(c, i, g->lift_now ? g->lift_why : W_RESOLVED, reason);
        return;
    }
    if (!g->touched)
        refresh(c, i);
    double base = g->touched ? g->saved_w : own_limit(g);
    if (!g->touched && base != g->limit_w && !g->foreign_said) {
        wt_warn(MOD,
                "gpu=%d uuid=%s: limit %.1f W is not its default %.1f W and no record explains "
                "it (someone else capped it): its own limit is taken as %.1f W",
                i, g->uuid, g->limit_w, g->default_w, base);
        g->foreign_said = true;
    }
    double w = want, lo = g->min_w > c->floor_w ? g->min_w : c->floor_w;
    bool floored = lo > 0 && w < lo;
    if (g->max_w > 0 && w > g->max_w)
        w = g->max_w;
    if (floored)
        w = lo;
    if (base > 0 && w > base)
        w = base; /* a cap never raises the limit over its own */
    if (!g->touched && g->limit_w > 0 && w > g->limit_w)
        w = g->limit_w; /* nor over what someone else set */
    if (g->touched && fabs(w - g->saved_w) < SAME_W) {
        restore(c, i, W_RESOLVED, reason); /* what holds it now is no lower than its own limit */
        return;
    }
    if (g->touched ? fabs(w - g->set_w) < SAME_W
                   : (g->limit_w > 0 && fabs(w - g->limit_w) < SAME_W))
        return;
    if (!(g->lift_now && g->touched && w > g->set_w) && too_soon(c, i)) {
        /* (a lift raising the limit to what else holds it is never held back) */
        if (!was_deferred)
            c->whys[W_MIN_INTERVAL]++;
        g->deferred = true;
        return;
    }
    if (!g->touched)
        g->saved_w = base > 0 ? base : (g->max_w > 0 ? g->max_w : w);
    if (set_limit(c, i, w, act, why, name) != 0)
        return;
    if (floored) {
        c->whys[W_FLOOR]++;
        wt_info(MOD,
                "gpu=%d: target %.1f W is under its floor: held at %.1f W (min %.1f W, "
                "alerts.cap_floor_watts %.1f W)",
                i, want, w, g->min_w, c->floor_w);
    }
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
    c->now_ns = wt_now_real_ns();
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
            /* The rule that set an earlier run's cap fired again: it holds the GPU now. */
            if (c->g[a->gpu].hold_until_ns && strcmp(c->g[a->gpu].hold_reason, a->name) == 0)
                c->g[a->gpu].hold_until_ns = 0;
            if (c->g[a->gpu].never) {
                wt_info(MOD,
                        "alert %s would cap gpu=%d to %.1f W: not capped, a running job "
                        "tagged %s=%s holds it",
                        a->name, a->gpu, w, NEVER_TAG, NEVER_VALUE);
                c->whys[W_CAP_NEVER]++;
            }
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
        refresh(c, i);
        double base = g->touched ? g->saved_w : own_limit(g);
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
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        for (size_t k = 0; k < n && !never; k++)
            never =
                strcmp(names[k], idx) == 0 || (g->uuid[0] && strncmp(names[k], "GPU-", 4) == 0 &&
                                               strncmp(g->uuid, names[k], strlen(names[k])) == 0);
        if (never != g->never && (g->seen || g->touched))
            wt_info(MOD, "gpu=%d %s a running job tagged %s=%s", i,
                    never ? "is held by" : "is no longer held by", NEVER_TAG, NEVER_VALUE);
        g->never = never;
    }
    free(names);
}

/* ---- the idle policy (alerts.idle_policy) ------------------------------------------------- */

static const char *const idle_mode_names[] = {"off", "dry_run", "limit"};

/* Whether the policy only says what it would do: mode dry_run, or the capper's dry run. */
static bool idle_dry(const struct wt_cap *c)
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
    wt_info(MOD, "idle policy%s: gpu=%d %s: %s its idle cap of %.1f W",
            idle_dry(c) ? " (dry run)" : "", i,
            why == W_JOB_START ? "a job naming it starts" : "is busy again",
            idle_dry(c) ? "would lift" : "lifting", g->idle_w);
    g->idle_w = 0;
    g->idle_level_w = 0;
    g->idle_retry_ns = 0;
    if (c->idle_mode != WT_IDLE_LIMIT)
        return; /* mode dry_run: the log and the idle families say it; no action counted */
    g->lift_now = true;
    g->lift_why = why;
    reconcile(c, i, reason);
    g->lift_now = false;
}

/* GPU i has been idle for idle_for: the policy holds it at its target (reconcile applies it). */
static void idle_engage(struct wt_cap *c, int i, int64_t now_ns)
{
    struct capgpu *g = &c->g[i];
    if (!g->touched)
        refresh(c, i);
    double lo = g->min_w > c->floor_w ? g->min_w : c->floor_w;
    double w = c->idle_limit_w > lo ? c->idle_limit_w : lo;
    if (g->max_w > 0 && w > g->max_w)
        w = g->max_w;
    if (w <= 0) {
        uint64_t supp;
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_warn(MOD,
                    "idle policy: gpu=%d is idle but its minimum limit is unknown and "
                    "alerts.idle_policy.limit_watts is not set: not capped",
                    i);
        return;
    }
    /* The level before the lever: what it read while idle, else the latest reading. */
    double level = g->snap_level_w > 0 ? g->snap_level_w : g->power_w;
    double own = g->touched ? g->saved_w : own_limit(g);
    g->idle_w = w;
    g->idle_level_w = level;
    wt_info(MOD,
            "idle policy%s: gpu=%d idle for %.0f s: %s limit_w=%.1f (own %.1f W); idle power "
            "level %.1f W, saving estimate %.1f W (an estimate: the idle power over the new "
            "limit; 0 when the GPU idles under it)",
            idle_dry(c) ? " (dry run)" : "", i, (double)(now_ns - g->idle_from_ns) / WT_NS_PER_S,
            idle_dry(c) ? "would set" : "setting", w, own, level, fmax(0, level - w));
}

/* Once a tick, after the snapshot is read: a GPU is idle when dark.h says so (no process,
 * utilization 0), the collector's latest process list has nothing on it and its utilization
 * reads 0; idle for idle_for, the policy caps it; busy again, the cap goes in this tick. */
static void idle_tick(struct wt_cap *c, int64_t now_ns)
{
    if (c->idle_mode == WT_IDLE_OFF)
        return;
    struct wt_gpu_procs *procs = calloc(MAX_GPUS, sizeof *procs);
    size_t np = 0;
    int64_t t_procs = 0;
    bool have = procs && wt_nvml_processes(procs, MAX_GPUS, &np, &t_procs) == 0;
    for (int i = 0; i < MAX_GPUS; i++) {
        struct capgpu *g = &c->g[i];
        bool proc = false;
        for (size_t k = 0; have && k < np && !proc; k++)
            proc = procs[k].npids > 0 && (procs[k].gpu == (unsigned int)i ||
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
        struct capgpu *g = &c->g[i];
        bool named = n == 0; /* a job that names no GPU may use any */
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        for (size_t k = 0; k < n && !named; k++)
            named = strcmp(gpus[k], idx) == 0 || (g->uuid[0] && strncmp(gpus[k], "GPU-", 4) == 0 &&
                                                  strncmp(g->uuid, gpus[k], strlen(gpus[k])) == 0);
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
            if (c->g[i].touched && rec_find(rec, nrec, c->g[i].uuid) < 0)
                cleared_by_hand(c, i);
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
            reconcile(c, i,
                      g->budget_w > 0 ? "power_budget"
                      : idle_held     ? "idle"
                                      : (g->deferred ? "min_interval_passed" : "budget_cleared"));
        if (idle_held && !g->touched)
            g->idle_retry_ns = now_ns + LOG_EVERY_NS;
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- life cycle -------------------------------------------------------------------------- */

/* The index of the GPU with this UUID, or -1 (NVML's GPUs refreshed first). */
static int by_uuid(struct wt_cap *c, const char *uuid)
{
    for (unsigned int i = 0; i < c->ngpus; i++) {
        refresh(c, (int)i);
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
    int fd = rec_lock(c->record);
    if (wt_cap_record_read(c->record, r, MAX_GPUS, &n, &err) != 0) {
        wt_error(MOD, "%s (an earlier run's power caps cannot be checked; fix or remove it)",
                 err.msg);
        goto out;
    }
    if (n == 0)
        goto out;
    if (!c->inited) {
        wt_warn(MOD,
                "%s: %zu GPUs may keep a limit an earlier run set, and NVML is not loaded "
                "to restore them (see `wattage cap clear`)",
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
                    "gpu=%d uuid=%s: an earlier run recorded a cap of %.1f W (reason=%s at "
                    "%s) that the GPU does not have (limit %.1f W, its own): line dropped",
                    i, x->uuid, x->set_w, x->reason, when, g->limit_w);
            c->whys[W_EARLIER_RUN]++;
            continue;
        }
        if (fabs(g->limit_w - x->set_w) > OTHERS_W) {
            wt_warn(MOD,
                    "gpu=%d uuid=%s: limit %.1f W is neither its own %.1f W nor the %.1f W "
                    "an earlier run set: someone else changed it since; leaving it",
                    i, x->uuid, g->limit_w, x->own_w, x->set_w);
            c->whys[W_BY_OTHERS]++;
            continue;
        }
        int64_t hold = holds_for(c, x->reason);
        if (c->dry_run) {
            wt_warn(MOD,
                    "dry run: gpu=%d uuid=%s keeps the cap of %.1f W an earlier run set "
                    "(reason=%s at %s, own limit %.1f W); run without dry run or `wattage "
                    "cap clear` to restore it",
                    i, x->uuid, x->set_w, x->reason, when, x->own_w);
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
                    "gpu=%d uuid=%s keeps the cap of %.1f W an earlier run set (reason=%s "
                    "at %s; own limit %.1f W): restored unless %s holds it within %.1f s",
                    i, x->uuid, x->set_w, x->reason, when, x->own_w, x->reason,
                    (double)hold / WT_NS_PER_S);
            c->whys[W_KEPT]++;
            left[nleft++] = *x;
            continue;
        }
        nvmlReturn_t rc = c->fn.set_limit && g->have_dev
                              ? c->fn.set_limit(g->dev, (unsigned int)lround(x->own_w * 1000))
                              : NVML_ERROR_UNINITIALIZED;
        if (rc != NVML_SUCCESS) {
            wt_error(MOD,
                     "gpu=%d uuid=%s: restoring its own limit %.1f W (an earlier run capped "
                     "it at %.1f W) failed: %s (%d)",
                     i, x->uuid, x->own_w, x->set_w, errstr(c, rc), (int)rc);
            count_action(c, A_ERROR, W_EARLIER_RUN);
            left[nleft++] = *x;
            continue;
        }
        wt_warn(MOD,
                "gpu=%d uuid=%s: restored its own limit %.1f W; an earlier run capped it at "
                "%.1f W (reason=%s at %s) and nothing in this configuration holds it",
                i, x->uuid, x->own_w, x->set_w, x->reason, when);
        count_action(c, A_RESTORE, W_EARLIER_RUN);
        g->limit_w = x->own_w;
    }
    if (nleft != n && wt_cap_record_write(c->record, left, nleft, &err) != 0)
        wt_error(MOD, "%s", err.msg);
out:
    rec_unlock(fd);
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
    if (load_nvml(c, cfg, &lerr) != 0) {
        /* Not fatal: alerts still fire and are delivered; dry run still says what it would do. */
        wt_warn(MOD, "power capping cannot reach NVML: %s%s", lerr.msg,
                c->dry_run ? " (dry run: limits from the snapshot)" : "; no limit will be set");
        unload_nvml(c);
    } else if (!c->fn.set_limit) {
        wt_warn(MOD, "%s does not export nvmlDeviceSetPowerManagementLimit: limits cannot be set",
                c->library);
    }
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
        restore(c, i, W_STOPPING, "stopping");
    }
    for (int i = 0; i < MAX_GPUS; i++)
        if (c->g[i].touched)
            wt_error(MOD,
                     "gpu=%d keeps the limit of %.1f W wattage set (restoring %.1f W failed; "
                     "the record keeps it for the next start or `wattage cap clear`)",
                     i, c->g[i].set_w, c->g[i].saved_w);
    pthread_mutex_unlock(&c->mu);
    unload_nvml(c);
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
    int rc = load_nvml(c, cfg, err);
    if (rc != 0) {
        unload_nvml(c);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rc < 0 ? rc : -EIO;
    }
    for (unsigned int i = 0; i < c->ngpus; i++)
        refresh(c, (int)i);
    *out = c;
    return 0;
}

static int set_w(struct wt_cap *c, int i, double w, struct wt_err *err)
{
    struct capgpu *g = &c->g[i];
    nvmlReturn_t r = c->fn.set_limit && g->have_dev
                         ? c->fn.set_limit(g->dev, (unsigned int)lround(w * 1000))
                         : NVML_ERROR_UNINITIALIZED;
    if (r != NVML_SUCCESS)
        return wt_err_set(err, "gpu %d: setting its limit to %.1f W failed: %s (%d)%s", i, w,
                          errstr(c, r), (int)r,
                          r == NVML_ERROR_NO_PERMISSION ? " (setting limits needs root)" : ""),
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
    int fd = rec_lock(c->record);
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
        int k = rec_find(r, nr, g->uuid);
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
    rec_unlock(fd);
    unload_nvml(c);
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
    char when[40];
    int rc = open_plain(cfg, acfg, &c, err);
    if (rc != 0)
        return rc;
    int fd = rec_lock(c->record);
    if (gpu >= 0 && (unsigned int)gpu >= c->ngpus) {
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
                "gpu %d (%s): limit back to its own %.1f W (wattage had capped it at %.1f W: "
                "reason %s, at %s)\n",
                i, x->uuid, x->own_w, x->set_w, x->reason, when);
        named_done = named_done || i == gpu;
    }
    if (nleft != n && (rc = wt_cap_record_write(c->record, left, nleft, err)) != 0)
        goto out;
    /* The GPUs wattage has no line for: a limit other than the default was set by someone else. */
    for (unsigned int i = 0; i < c->ngpus; i++) {
        struct capgpu *g = &c->g[i];
        if ((gpu >= 0 && (int)i != gpu) || (gpu >= 0 && named_done) || rec_find(r, n, g->uuid) >= 0)
            continue;
        bool foreign = g->default_w > 0 && fabs(g->limit_w - g->default_w) > OTHERS_W;
        if (gpu < 0) {
            if (foreign)
                fprintf(out,
                        "gpu %u (%s): limit %.1f W is not its default %.1f W and wattage "
                        "has no record of it (someone else capped it): left; `wattage cap "
                        "clear --gpu %u` puts back its default\n",
                        i, g->uuid, g->limit_w, g->default_w, i);
            continue;
        }
        if (!foreign) {
            fprintf(out, "gpu %u (%s): not capped (limit %.1f W%s)\n", i, g->uuid, g->limit_w,
                    g->default_w > 0 ? ", its default" : "");
            continue;
        }
        struct wt_err e = {{0}};
        if (set_w(c, (int)i, g->default_w, &e) != 0) {
            fprintf(stderr, "wattage cap clear: %s\n", e.msg);
            failed++;
            continue;
        }
        fprintf(out, "gpu %u (%s): no wattage record; limit back to its default %.1f W\n", i,
                g->uuid, g->default_w);
    }
    if (n == 0 && gpu < 0)
        fprintf(out, "no GPU has a limit wattage set (record %s)\n",
                c->record[0] ? c->record : "-");
    if (failed) {
        wt_err_set(err, "%d GPUs could not be put back", failed);
        rc = -EIO;
    }
out:
    rec_unlock(fd);
    unload_nvml(c);
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
        int k = rec_find(r, n, g->uuid);
        if (k >= 0) {
            wt_time_format(r[k].t_ns, 0, when, sizeof when);
            fprintf(out,
                    "power cap: gpu %u (%s) limit %.1f W set by wattage (own %.1f W, reason "
                    "%s, since %s)\n",
                    i, g->uuid, g->limit_w, r[k].own_w, r[k].reason, when);
        } else if (g->default_w > 0 && fabs(g->limit_w - g->default_w) > OTHERS_W) {
            fprintf(out,
                    "power cap: gpu %u (%s) limit %.1f W is not its default %.1f W and "
                    "wattage has no record of it: capped by someone else (not taken as its "
                    "own limit)\n",
                    i, g->uuid, g->limit_w, g->default_w);
        }
    }
    unload_nvml(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return 0;
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
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        if (wt_labels(fam->s[fam->n].labels, sizeof fam->s[fam->n].labels, "gpu", v, "dry_run",
                      idle_dry(c) ? "true" : "false", NULL) == 0)
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
