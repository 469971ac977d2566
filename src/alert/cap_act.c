/* SPDX-License-Identifier: MIT */
/*
 * The power capper's record (one line per capped GPU, written before each change) and
 * its actions on one GPU through its vendor's library (NVML, or ROCm SMI for AMD GPUs): load
 * the libraries, refresh a GPU, set a limit, restore the GPU's own limit, reconcile what holds
 * it down with what is set (see alert/cap.c).
 */
#include "alert/cap_act.h"

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
#include "collect/rocm.h"
#include "core/durable.h"

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

const char *wt_cap_errstr(const struct wt_cap *c, nvmlReturn_t r)
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
int wt_cap_rec_lock(const char *path)
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

void wt_cap_rec_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the lock */
}

int wt_cap_rec_find(const struct wt_cap_rec *r, size_t n, const char *uuid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].uuid, uuid) == 0)
            return (int)i;
    return -1;
}

/* ---- NVML ---------------------------------------------------------------------------------- */

int wt_cap_load_nvml(struct wt_cap *c, const struct wt_config *cfg, struct wt_err *err)
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
        return wt_err_set(err, "nvmlInit failed in %s: %s (%d)", path, wt_cap_errstr(c, r), (int)r);
    c->inited = true;
    unsigned int n = 0;
    r = c->fn.count(&n);
    if (r != NVML_SUCCESS)
        return wt_err_set(err, "nvmlDeviceGetCount failed: %s (%d)", wt_cap_errstr(c, r), (int)r);
    c->ngpus = c->nnv = n < MAX_GPUS ? n : MAX_GPUS;
    return 0;
}

/* Whether the record at path has a line for an AMD GPU (an AMD-... uuid): a cap to restore. */
static bool record_has_amd(const char *path)
{
    struct wt_cap_rec r[MAX_GPUS];
    size_t n = 0;
    struct wt_err err = {{0}};
    bool amd = false;
    if (!path[0])
        return false;
    int fd = wt_cap_rec_lock(path);
    if (wt_cap_record_read(path, r, MAX_GPUS, &n, &err) == 0)
        for (size_t k = 0; k < n && !amd; k++)
            amd = strncmp(r[k].uuid, "AMD-", 4) == 0;
    wt_cap_rec_unlock(fd);
    return amd;
}

void wt_cap_load_amd(struct wt_cap *c, const struct wt_config *cfg)
{
    struct wt_err err = {{0}};
    /* With the AMD collector off the library is not loaded, unless an earlier run's AMD cap
     * waits in the record to be put back (a record that cannot be read is recover's to say). */
    if (cfg && !cfg->collectors.amd.enabled) {
        if (!record_has_amd(c->record)) {
            wt_debug(MOD,
                     "collectors.amd.enabled is false: ROCm SMI not loaded, no AMD GPU to cap");
            return;
        }
        wt_info(MOD,
                "collectors.amd.enabled is false, but %s holds an AMD GPU's cap to restore: "
                "ROCm SMI loaded for it",
                c->record);
    }
    if (wt_rocm_caps_open(cfg, &c->amd, &err) != 0) {
        /* most hosts have no AMD GPU: said where someone looks */
        wt_debug(MOD, "no AMD GPU to cap: %s", err.msg);
        return;
    }
    unsigned int n = wt_rocm_caps_count(c->amd);
    for (unsigned int k = 0; k < n && c->ngpus < MAX_GPUS; k++) {
        struct capgpu *g = &c->g[c->ngpus++];
        g->amd = true;
        g->amd_ind = k;
        g->have_dev = true;
        snprintf(g->uuid, sizeof g->uuid, "%s", wt_rocm_caps_uuid(c->amd, k));
    }
    wt_info(MOD, "AMD GPUs to cap through ROCm SMI: %u (slots %u..%u)", n, c->nnv,
            c->ngpus ? c->ngpus - 1 : 0);
}

bool wt_cap_has_lib(const struct wt_cap *c, int i)
{
    return c->g[i].amd ? c->amd != NULL : c->inited;
}

bool wt_cap_dev_ok(const struct wt_cap *c, int i)
{
    const struct capgpu *g = &c->g[i];
    if (g->amd)
        return c->amd && g->have_dev;
    return c->fn.set_limit && g->have_dev;
}

int wt_cap_dev_set(struct wt_cap *c, int i, double w)
{
    struct capgpu *g = &c->g[i];
    if (!wt_cap_dev_ok(c, i))
        return WT_CAP_NO_DEV;
    if (g->amd)
        return wt_rocm_caps_set(c->amd, g->amd_ind, w);
    return (int)c->fn.set_limit(g->dev, (unsigned int)lround(w * 1000));
}

const char *wt_cap_dev_errstr(const struct wt_cap *c, int i, int r)
{
    if (r == WT_CAP_NO_DEV)
        return c->g[i].amd ? "ROCm SMI is not loaded or has no such GPU"
                           : "NVML is not loaded, has no such GPU or no set function";
    return c->g[i].amd ? wt_rocm_caps_errstr(c->amd, r) : wt_cap_errstr(c, (nvmlReturn_t)r);
}

bool wt_cap_dev_denied(const struct wt_cap *c, int i, int r)
{
    return c->g[i].amd ? wt_rocm_caps_denied(r) : r == NVML_ERROR_NO_PERMISSION;
}

const char *wt_cap_dev_setter(const struct wt_cap *c, int i)
{
    return c->g[i].amd ? "rsmi_dev_power_cap_set" : "nvmlDeviceSetPowerManagementLimit";
}

int wt_cap_vendor_index(const struct wt_cap *c, int i)
{
    return c->g[i].amd ? (int)c->g[i].amd_ind : i;
}

const char *wt_cap_gpu_name(const struct wt_cap *c, int i, char *buf, size_t n)
{
    snprintf(buf, n, "%s%d", c->g[i].amd ? "amd:" : "", wt_cap_vendor_index(c, i));
    return buf;
}

int wt_cap_slot(const struct wt_cap *c, const char *labels, int gpu)
{
    char uuid[96];
    if (labels && wt_labels_get(labels, "uuid", uuid, sizeof uuid) == 0 &&
        strncmp(uuid, "AMD-", 4) == 0) {
        for (unsigned int i = c->nnv; i < c->ngpus; i++)
            if (c->g[i].amd && strcmp(c->g[i].uuid, uuid) == 0)
                return (int)i;
        return -1;
    }
    if (gpu < 0 || gpu >= MAX_GPUS)
        return -1;
    /* with AMD's GPUs in the slots, only NVML's own indices are NVIDIA's */
    if (c->amd && (unsigned int)gpu >= c->nnv)
        return -1;
    return gpu;
}

void wt_cap_unload(struct wt_cap *c)
{
    if (c->inited)
        wt_nvml_session_release(c->fn.init, c->fn.shutdown);
    c->inited = false;
    c->ngpus = c->nnv = 0;
    wt_rocm_caps_close(c->amd);
    c->amd = NULL;
    /* The library stays loaded if the collector has it too; dlclose only drops our reference. */
    if (c->dl)
        dlclose(c->dl);
    c->dl = NULL;
}

/* Reads the GPU's handle, UUID, constraints, default and current limit from NVML where it can. */
void wt_cap_refresh(struct wt_cap *c, int i)
{
    struct capgpu *g = &c->g[i];
    if ((unsigned int)i >= c->ngpus || !wt_cap_has_lib(c, i))
        return;
    if (g->amd) {
        struct wt_rocm_cap rc;
        int r = wt_rocm_caps_read(c->amd, g->amd_ind, &rc);
        if (rc.max_w > 0) {
            g->min_w = rc.min_w;
            g->max_w = rc.max_w;
        }
        if (g->default_w <= 0 && rc.default_w > 0)
            g->default_w = rc.default_w;
        if (r == 0 && rc.limit_w > 0)
            g->limit_w = rc.limit_w;
        return;
    }
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
double wt_cap_own_limit(const struct capgpu *g)
{
    if (g->default_w > 0 && g->limit_w > 0 && fabs(g->limit_w - g->default_w) > OTHERS_W)
        return g->default_w;
    return g->limit_w;
}

void wt_cap_count_action(struct wt_cap *c, enum act a, enum why w)
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
    int k = wt_cap_rec_find(r, n, c->g[i].uuid);
    if (set_w <= 0) {
        if (k < 0)
            return 0;
        r[k] = r[--n];
    } else {
        if (k < 0)
            k = (int)n++;
        memset(&r[k], 0, sizeof r[k]);
        snprintf(r[k].uuid, sizeof r[k].uuid, "%s", c->g[i].uuid);
        r[k].gpu = wt_cap_vendor_index(c, i);
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
    return wt_cap_rec_find(r, n, c->g[i].uuid) >= 0;
}

/* GPU i's line is gone from the record while wattage holds it: `wattage cap clear` put it back. */
void wt_cap_cleared_by_hand(struct wt_cap *c, int i)
{
    struct capgpu *g = &c->g[i];
    wt_cap_refresh(c, i);
    wt_warn(MOD,
            "gpu=%s uuid=%s: its cap of %.1f W was cleared by hand (limit now %.1f W): not "
            "capping it again until what holds it lets go",
            GN(c, i), g->uuid, g->set_w, g->limit_w);
    wt_cap_count_action(c, A_RESTORE, W_BY_HAND);
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
int wt_cap_set_limit(struct wt_cap *c, int i, double w, enum act act, enum why why,
                     const char *reason)
{
    struct capgpu *g = &c->g[i];
    if (c->dry_run) {
        wt_info(MOD,
                "dry run: would set gpu=%s limit_w=%.1f action=%s reason=%s why=%s previous_w=%.1f",
                GN(c, i), w, act_names[act], reason, why_names[why],
                g->touched ? g->set_w : g->limit_w);
        wt_cap_count_action(c, act, why);
        return 0;
    }
    if (!wt_cap_dev_ok(c, i)) {
        uint64_t supp;
        wt_cap_count_action(c, A_ERROR, why);
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "cannot set gpu=%s limit_w=%.1f: %s", GN(c, i), w,
                     wt_cap_dev_errstr(c, i, WT_CAP_NO_DEV));
        return -EIO;
    }
    int fd = wt_cap_rec_lock(c->record);
    int rc = 0;
    if (g->touched && !rec_has(c, i)) {
        wt_cap_cleared_by_hand(c, i);
        rc = -ECANCELED;
        goto out;
    }
    crash_point(c, 1);
    if (rec_update(c, i, g->saved_w, w, reason) != 0) {
        wt_cap_count_action(c, A_ERROR, W_NO_RECORD);
        rc = -EIO; /* never a cap without its record */
        goto out;
    }
    crash_point(c, 2);
    int r = wt_cap_dev_set(c, i, w);
    if (r != 0) {
        uint64_t supp;
        wt_cap_count_action(c, A_ERROR, why);
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "%s gpu=%s uuid=%s limit_w=%.1f failed: %s (%d)%s",
                     wt_cap_dev_setter(c, i), GN(c, i), g->uuid, w, wt_cap_dev_errstr(c, i, r), r,
                     wt_cap_dev_denied(c, i, r) ? " (setting limits needs root)" : "");
        /* The record says what the GPU has: the previous cap, or nothing. */
        (void)rec_update(c, i, g->saved_w, g->touched ? g->set_w : 0, reason);
        rc = -EIO;
        goto out;
    }
    wt_info(MOD, "set gpu=%s limit_w=%.1f action=%s reason=%s why=%s previous_w=%.1f own_w=%.1f",
            GN(c, i), w, act_names[act], reason, why_names[why], g->touched ? g->set_w : g->limit_w,
            g->saved_w);
    wt_cap_count_action(c, act, why);
    /* the collector reads the new limit at its next tick */
    if (g->amd)
        wt_rocm_slow_refresh();
    else
        wt_nvml_slow_refresh();
    g->limit_w = w;
    g->last_change_ns = c->now_ns;
    g->left_capped = false; /* held again: wattage's on purpose */
out:
    wt_cap_rec_unlock(fd);
    return rc;
}

static void untouch(struct capgpu *g)
{
    g->touched = false;
    g->set_w = 0;
    g->hold_until_ns = 0;
    g->hold_w = 0;
}

void wt_cap_restore(struct wt_cap *c, int i, enum why why, const char *reason)
{
    struct capgpu *g = &c->g[i];
    if (!g->touched)
        return;
    if (c->dry_run) {
        wt_info(MOD, "dry run: would restore gpu=%s limit_w=%.1f reason=%s why=%s", GN(c, i),
                g->saved_w, reason, why_names[why]);
        wt_cap_count_action(c, A_RESTORE, why);
        untouch(g);
        return;
    }
    int fd = wt_cap_rec_lock(c->record);
    wt_cap_refresh(c, i);
    if (!rec_has(c, i)) {
        wt_cap_cleared_by_hand(c, i);
        g->hands_off = false; /* nothing holds it any more */
        goto out;
    }
    if (g->limit_w > 0 && fabs(g->limit_w - g->set_w) > OTHERS_W) {
        /* An operator (or another tool) changed it after us: theirs stands. */
        wt_warn(MOD,
                "gpu=%s limit is %.1f W, not the %.1f W wattage set: leaving it (not restoring "
                "%.1f W)",
                GN(c, i), g->limit_w, g->set_w, g->saved_w);
        wt_cap_count_action(c, A_RESTORE, W_BY_OTHERS);
        (void)rec_update(c, i, 0, 0, reason);
        untouch(g);
        goto out;
    }
    int r = wt_cap_dev_set(c, i, g->saved_w);
    if (r != 0 && r != WT_CAP_NO_DEV && !wt_cap_dev_denied(c, i, r)) {
        /* Once more, a moment later: a driver busy with a reset or a recovery may take it now. */
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        r = wt_cap_dev_set(c, i, g->saved_w);
    }
    if (r != 0) {
        uint64_t supp;
        wt_cap_count_action(c, A_ERROR, why);
        g->left_capped = true;
        if (wt_ratelimit_ok(&g->err_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD,
                     "restoring gpu=%s uuid=%s limit_w=%.1f failed: %s (%d); it stays at %.1f W",
                     GN(c, i), g->uuid, g->saved_w, wt_cap_dev_errstr(c, i, r), r, g->set_w);
        goto out; /* still ours (and recorded): tried again at the next change or tick */
    }
    /* Restored first, then the line goes: a crash between them leaves a line that the next
     * start finds already put right. */
    (void)rec_update(c, i, 0, 0, reason);
    wt_info(MOD, "restored gpu=%s limit_w=%.1f reason=%s why=%s", GN(c, i), g->saved_w, reason,
            why_names[why]);
    wt_cap_count_action(c, A_RESTORE, why);
    if (g->amd)
        wt_rocm_slow_refresh();
    else
        wt_nvml_slow_refresh();
    g->limit_w = g->saved_w;
    g->last_change_ns = c->now_ns;
    g->left_capped = false;
    untouch(g);
out:
    wt_cap_rec_unlock(fd);
}

/* Whether alerts.cap_min_interval holds a change of GPU i back now. */
static bool too_soon(struct wt_cap *c, int i)
{
    const struct capgpu *g = &c->g[i];
    return c->min_interval_ns > 0 && g->last_change_ns && c->now_ns >= g->last_change_ns &&
           c->now_ns - g->last_change_ns < c->min_interval_ns;
}

/* Brings GPU i's limit to the lowest of what holds it down, or restores it. */
void wt_cap_reconcile(struct wt_cap *c, int i, const char *reason)
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
            wt_warn(MOD, "gpu=%s is held by a running job tagged %s=%s: lifting its cap", GN(c, i),
                    NEVER_TAG, NEVER_VALUE);
            wt_cap_restore(c, i, W_CAP_NEVER, "cap_never_job");
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
        wt_cap_restore(c, i, g->lift_now ? g->lift_why : W_RESOLVED, reason);
        return;
    }
    if (!g->touched)
        wt_cap_refresh(c, i);
    double base = g->touched ? g->saved_w : wt_cap_own_limit(g);
    if (!g->touched && base != g->limit_w && !g->foreign_said) {
        wt_warn(MOD,
                "gpu=%s uuid=%s: limit %.1f W is not its default %.1f W and no record explains "
                "it (someone else capped it): its own limit is taken as %.1f W",
                GN(c, i), g->uuid, g->limit_w, g->default_w, base);
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
        wt_cap_restore(c, i, W_RESOLVED,
                       reason); /* what holds it now is no lower than its own limit */
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
    if (wt_cap_set_limit(c, i, w, act, why, name) != 0)
        return;
    if (floored) {
        c->whys[W_FLOOR]++;
        wt_info(MOD,
                "gpu=%s: target %.1f W is under its floor: held at %.1f W (min %.1f W, "
                "alerts.cap_floor_watts %.1f W)",
                GN(c, i), want, w, g->min_w, c->floor_w);
    }
    g->touched = true;
    g->set_w = w;
}
