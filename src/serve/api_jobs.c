/* SPDX-License-Identifier: MIT */
/*
 * The jobs API's routes (see api_jobs.h): the path says which job and what to do with it, the
 * jobs module (audit/jobs.h) does it; and GET /api/v1/gpus/processes, from the NVML
 * collector's latest process list.
 */
#include "serve/api_jobs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "collect/cgroup.h"
#include "collect/nvml.h"
#include "collect/rocm.h"
#include "core/clock.h"
#include "core/log.h"
#include "serve/expo.h"
#include "store/query.h"
#include "store/segment.h"
#include "store/store.h"

#define BASE "/api/v1/jobs"
#define REF_MAX 96 /* a job reference in the path, with its NUL */
#define MAX_GPUS 64

/* A refusal of the path or method: *json is {"error": msg, "field": field} (field may be NULL). */
__attribute__((format(printf, 5, 6))) static int
refuse(unsigned *status, char **json, unsigned code, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    if (o)
        cJSON_AddStringToObject(o, "error", msg);
    if (o && field)
        cJSON_AddStringToObject(o, "field", field);
    *json = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!*json)
        return -ENOMEM;
    *status = code;
    return 0;
}

/* Which action a path below /api/v1/jobs/{ref} names; false when none. */
static bool verb_of(const char *action, enum wt_jobs_verb *v)
{
    static const struct {
        const char *name;
        enum wt_jobs_verb verb;
    } verbs[] = {
        {"", WT_JOBS_SHOW}, {"marks", WT_JOBS_MARK}, {"end", WT_JOBS_END}, {"gpus", WT_JOBS_GPUS}};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        if (strcmp(action, verbs[i].name) == 0) {
            *v = verbs[i].verb;
            return true;
        }
    }
    return false;
}

/* /api/v1/jobs/{ref}[/action]: p is what follows the slash after the base. */
static int one_job(struct wt_jobs *j, bool get, const char *method, const char *p, const char *body,
                   size_t len, int64_t now, unsigned *status, char **json)
{
    char ref[REF_MAX];
    const char *slash = strchr(p, '/');
    size_t rl = slash ? (size_t)(slash - p) : strlen(p);
    const char *action = slash ? slash + 1 : "";
    enum wt_jobs_verb verb;
    if (rl == 0 || rl >= sizeof ref)
        return refuse(status, json, 404, "job", "job: no such job");
    memcpy(ref, p, rl);
    ref[rl] = '\0';
    if (!verb_of(action, &verb))
        return refuse(status, json, 404, NULL,
                      "no such endpoint (expected /api/v1/jobs/{id}[/marks|/end|/gpus])");
    if ((get && *action) || (!get && !*action) || (!get && strcmp(method, "POST")))
        return refuse(status, json, 405, NULL, "%s is not allowed here",
                      *action ? "only POST" : "only GET");
    return wt_jobs_act_json(j, ref, verb, body, len, now, status, json);
}

int wt_api_jobs_handle(struct wt_jobs *j, const char *method, const char *path, const char *body,
                       size_t len, int limit, int64_t now_ns, unsigned *status, char **json)
{
    size_t bl = sizeof BASE - 1;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    *json = NULL;
    *status = 500;
    if (strncmp(path, BASE, bl) != 0 || (path[bl] && path[bl] != '/'))
        return refuse(status, json, 404, NULL, "no such endpoint");
    if (path[bl] && path[bl + 1])
        return one_job(j, get, method, path + bl + 1, body, len, now_ns, status, json);
    if (get)
        return wt_jobs_list_json(j, limit, now_ns, status, json);
    if (strcmp(method, "POST") == 0)
        return wt_jobs_start_json(j, body, len, now_ns, status, json);
    return refuse(status, json, 405, NULL, "use GET or POST");
}

/* Answers with a JSON text (cJSON's, freed here) and a newline. */
static int reply(struct wt_http_reply *rep, unsigned status, char *json)
{
    size_t n = strlen(json);
    rep->body = malloc(n + 2);
    if (!rep->body) {
        cJSON_free(json);
        return -ENOMEM;
    }
    memcpy(rep->body, json, n);
    rep->body[n] = '\n';
    rep->body[n + 1] = '\0';
    rep->len = n + 1;
    rep->status = status;
    cJSON_free(json);
    return 0;
}

static int route_jobs(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    unsigned status;
    char *json = NULL;
    const char *lim = wt_http_query(req, "limit");
    int limit = lim ? atoi(lim) : 0;
    int rc = wt_api_jobs_handle(ctx, req->method, req->path, req->body, req->body_len, limit,
                                wt_now_real_ns(), &status, &json);
    if (rc)
        return rc;
    return reply(rep, status, json);
}

/* Adds a string member when it is not empty. */
static void add_nonempty(cJSON *o, const char *key, const char *value)
{
    if (value[0])
        cJSON_AddStringToObject(o, key, value);
}

/*
 * One process with its owner from its cgroup (collect/cgroup.h): {"pid", "owner": "slurm" |
 * "kubernetes" | "systemd" | "none", and slurm_job, slurm_step, pod_uid, pod_qos, container,
 * unit where known}; without "owner" when its cgroup cannot be read (it exited since the list).
 */
static void add_owner(cJSON *arr, unsigned int pid)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        return;
    }
    cJSON_AddNumberToObject(o, "pid", pid);
    struct wt_proc_owner w;
    struct wt_err err = {{0}};
    if (wt_cgroup_owner((pid_t)pid, &w, &err) != 0)
        return;
    cJSON_AddStringToObject(o, "owner", wt_owner_kind_name(w.kind));
    add_nonempty(o, "slurm_job", w.slurm_job);
    add_nonempty(o, "slurm_step", w.slurm_step);
    add_nonempty(o, "pod_uid", w.pod_uid);
    add_nonempty(o, "pod_qos", w.pod_qos);
    add_nonempty(o, "container", w.container);
    add_nonempty(o, "unit", w.unit);
}

/* ---- attribution (collect/attrib.h): the published ledgers ---- */

struct ledger {
    struct wt_attrib_device *devs;
    struct wt_attrib_entry *ents;
    size_t ndev, nent;
};

static void ledger_free(struct ledger *l)
{
    free(l->devs);
    free(l->ents);
    memset(l, 0, sizeof *l);
}

/* The owner members of an entry: "owner" and the ids; folded entries have no step/container. */
static void add_entry_owner(cJSON *o, const struct wt_attrib_entry *e)
{
    if (!e->owner_known) {
        cJSON_AddStringToObject(o, "owner", "unknown");
        return;
    }
    const struct wt_proc_owner *w = &e->owner;
    cJSON_AddStringToObject(o, "owner", wt_owner_kind_name(w->kind));
    add_nonempty(o, "slurm_job", w->slurm_job);
    add_nonempty(o, "slurm_step", w->slurm_step);
    add_nonempty(o, "pod_uid", w->pod_uid);
    add_nonempty(o, "pod_qos", w->pod_qos);
    add_nonempty(o, "pod_namespace", w->pod_namespace);
    add_nonempty(o, "pod", w->pod_name);
    add_nonempty(o, "container", w->container);
    add_nonempty(o, "unit", w->unit);
}

/*
 * One device of a ledger: {"method", "energy_joules" (since its first split), "idle_joules",
 * "updated_s" (unix seconds of its last split), "processes": [{"pid", "start_ticks", "running",
 * "energy_joules", owner…}], "owners": [{owner…, "energy_joules"}] (finished processes folded)}.
 */
static void add_device(cJSON *o, const struct ledger *l, const struct wt_attrib_device *d)
{
    cJSON_AddStringToObject(o, "method", wt_attrib_method_name(d->method));
    cJSON_AddNumberToObject(o, "energy_joules", d->energy_j);
    cJSON_AddNumberToObject(o, "idle_joules", d->idle_j);
    cJSON_AddNumberToObject(o, "updated_s", (double)d->t_ns / 1e9);
    cJSON *procs = cJSON_AddArrayToObject(o, "processes");
    cJSON *owners = cJSON_AddArrayToObject(o, "owners");
    for (size_t i = 0; procs && owners && i < l->nent; i++) {
        const struct wt_attrib_entry *e = &l->ents[i];
        if (!wt_attrib_on(e, d))
            continue;
        cJSON *x = cJSON_CreateObject();
        if (!x || !cJSON_AddItemToArray(e->pid ? procs : owners, x)) {
            cJSON_Delete(x);
            return;
        }
        if (e->pid) {
            cJSON_AddNumberToObject(x, "pid", e->pid);
            cJSON_AddNumberToObject(x, "start_ticks", (double)e->start);
            cJSON_AddBoolToObject(x, "running", e->live);
        }
        add_entry_owner(x, e);
        cJSON_AddNumberToObject(x, "energy_joules", e->energy_j);
    }
}

/*
 * One GPU's entry: {"gpu": "0", "vendor": "nvidia"|"amd", "uuid": "GPU-…", "pids": [...],
 * "processes": [{pid, owner...}], "attribution": {…} (add_device, with l: the GPU ledgers, once
 * its energy has been split)}; false when out of memory.
 */
static bool add_procs(cJSON *arr, const struct wt_gpu_procs *p, const char *vendor,
                      const struct ledger *l)
{
    char idx[16];
    cJSON *g = cJSON_CreateObject(), *pids;
    if (!g || !cJSON_AddItemToArray(arr, g)) {
        cJSON_Delete(g);
        return false;
    }
    snprintf(idx, sizeof idx, "%u", p->gpu);
    cJSON_AddStringToObject(g, "gpu", idx);
    cJSON_AddStringToObject(g, "vendor", vendor);
    cJSON_AddStringToObject(g, "uuid", p->uuid);
    pids = cJSON_AddArrayToObject(g, "pids");
    for (unsigned int k = 0; pids && k < p->npids; k++)
        cJSON_AddItemToArray(pids, cJSON_CreateNumber(p->pids[k]));
    cJSON *procs = cJSON_AddArrayToObject(g, "processes");
    for (unsigned int k = 0; procs && k < p->npids; k++)
        add_owner(procs, p->pids[k]);
    const struct wt_attrib_device *d = l ? wt_attrib_find(l->devs, l->ndev, vendor, p->gpu) : NULL;
    cJSON *a = d ? cJSON_AddObjectToObject(g, "attribution") : NULL;
    if (a)
        add_device(a, l, d);
    return true;
}

int wt_api_processes_json(unsigned *status, char **json)
{
    struct wt_gpu_procs *p = calloc(MAX_GPUS, sizeof *p), *pa = calloc(MAX_GPUS, sizeof *pa);
    size_t n = 0, na = 0;
    int64_t t = 0;
    cJSON *o = NULL;
    struct ledger l = {0};
    *json = NULL;
    if (!p || !pa) {
        free(p);
        free(pa);
        return -ENOMEM;
    }
    /* No ledger (no memory for it) leaves the entries without "attribution". */
    if (wt_attrib_copy_published(0, &l.devs, &l.ndev, &l.ents, &l.nent) != 0)
        ledger_free(&l);
    bool nv = wt_nvml_processes(p, MAX_GPUS, &n, &t) == 0;
    bool amd = wt_rocm_processes(pa, MAX_GPUS, &na, &t) == 0;
    if (!nv && !amd) {
        *status = 503;
        o = cJSON_CreateObject();
        if (o)
            cJSON_AddStringToObject(o, "error",
                                    "no GPU process list: no NVML or AMD collector, or their "
                                    "libraries or GPUs do not list processes");
    } else {
        *status = 200;
        o = cJSON_CreateArray();
        bool ok = true;
        for (size_t i = 0; o && ok && nv && i < n; i++)
            ok = add_procs(o, &p[i], "nvidia", &l);
        for (size_t i = 0; o && ok && amd && i < na; i++)
            ok = add_procs(o, &pa[i], "amd", &l);
    }
    ledger_free(&l);
    free(p);
    free(pa);
    if (o)
        *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return *json ? 0 : -ENOMEM;
}

static int route_processes(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    unsigned status;
    char *json = NULL;
    (void)ctx;
    (void)req;
    int rc = wt_api_processes_json(&status, &json);
    if (rc)
        return rc;
    return reply(rep, status, json);
}

int wt_api_attribution_json(unsigned *status, char **json)
{
    struct ledger gl = {0}, cl = {0};
    *json = NULL;
    int rg = wt_attrib_copy_published(0, &gl.devs, &gl.ndev, &gl.ents, &gl.nent);
    int rc = wt_attrib_copy_published(1, &cl.devs, &cl.ndev, &cl.ents, &cl.nent);
    cJSON *o = cJSON_CreateObject();
    cJSON *gpus = o ? cJSON_AddArrayToObject(o, "gpus") : NULL;
    for (size_t i = 0; rg == 0 && gpus && i < gl.ndev; i++) {
        char v[128];
        cJSON *g = cJSON_CreateObject();
        if (!g || !cJSON_AddItemToArray(gpus, g)) {
            cJSON_Delete(g);
            break;
        }
        if (wt_labels_get(gl.devs[i].labels, "gpu", v, sizeof v) == 0)
            cJSON_AddStringToObject(g, "gpu", v);
        cJSON_AddStringToObject(g, "vendor", gl.devs[i].vendor);
        if (wt_labels_get(gl.devs[i].labels, "uuid", v, sizeof v) == 0)
            cJSON_AddStringToObject(g, "uuid", v);
        add_device(g, &gl, &gl.devs[i]);
    }
    if (o && rc == 0 && cl.ndev) {
        cJSON *c = cJSON_AddObjectToObject(o, "cpu");
        if (c)
            add_device(c, &cl, &cl.devs[0]);
    } else if (o) {
        cJSON_AddNullToObject(o, "cpu");
    }
    ledger_free(&gl);
    ledger_free(&cl);
    *status = 200;
    if (o)
        *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return *json ? 0 : -ENOMEM;
}

/* ---- attribution over a window, from the store ---- */

#define ATTR_WINDOW_MAX (31LL * 86400 * WT_NS_PER_S)
#define ATTR_WINDOW_DEFAULT (3600LL * WT_NS_PER_S)

/* The owner's labels (what a folded series keeps); the rest of a process's: where and which. */
static const char *const owner_keys[] = {"owner", "slurm_job", "pod_uid", "pod_namespace",
                                         "pod",   "unit",      NULL};
static const char *const proc_keys[] = {
    "pid",           "gpu_instance", "owner",     "slurm_job", "slurm_step", "pod_uid",
    "pod_namespace", "pod",          "container", "unit",      NULL};
static const char *const fold_drop[] = {"pid", "gpu_instance", "slurm_step", "container", NULL};

static bool key_in(const char *k, const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++)
        if (strcmp(k, keys[i]) == 0)
            return true;
    return false;
}

/* The pairs of in whose key is (keep) or is not (!keep) in keys, in their order. */
static void labels_filter(const char *in, const char *const *keys, bool keep, char *out, size_t n)
{
    char k[64], v[WT_LABELS_LEN];
    size_t pos = 0;
    out[0] = '\0';
    while (wt_labels_next(in, &pos, k, sizeof k, v, sizeof v) == 1)
        if (key_in(k, keys) == keep)
            (void)wt_labels_add(out, n, k, v);
}

/* One stored series of a per-process metric, and its energy over the window. */
struct aser {
    const struct wt_series_info *si;
    char dev[WT_LABELS_LEN];   /* the device's labels (gpu, uuid; "" for the CPU) */
    char owner[WT_LABELS_LEN]; /* owner and its ids */
    bool pid, idle;
    int64_t first, last; /* its oldest and newest readings */
    double energy_j;
};

/* The last reading of series id at or before t (*prev) and the first after it (*next). */
static int edges(struct wt_store *st, int64_t id, int64_t t, struct wt_point *prev, bool *hp,
                 struct wt_point *next, bool *hn)
{
    struct wt_point_buf b = {0};
    int rc = wt_store_read(st, id, t, t, WT_RD_EDGES, 0, &b);
    *hp = *hn = false;
    for (size_t i = 0; rc == 0 && i < b.n; i++) {
        if (b.p[i].t_ns <= t) {
            *prev = b.p[i];
            *hp = true;
        } else if (!*hn) {
            *next = b.p[i];
            *hn = true;
        }
    }
    free(b.p);
    return rc;
}

/* A daemon start of this node (runs of node "") in (t0, t1]. */
static bool restart_in(const struct wt_run_list *runs, int64_t t0, int64_t t1)
{
    for (size_t i = 0; i < runs->n; i++)
        if (!runs->r[i].node[0] && runs->r[i].start_ns > t0 && runs->r[i].start_ns <= t1)
            return true;
    return false;
}

static struct aser *find_ser(struct aser *v, size_t n, const char *labels)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].si->labels, labels) == 0)
            return &v[i];
    return NULL;
}

/* The owner members of a label string (owner, slurm_job, pod_uid...). */
static void add_owner_labels(cJSON *o, const char *labels)
{
    char k[64], v[WT_LABELS_LEN];
    size_t pos = 0;
    while (wt_labels_next(labels, &pos, k, sizeof k, v, sizeof v) == 1)
        cJSON_AddStringToObject(o, k, v);
}

/*
 * The energy of every series of one device over [a, b] (both the times of splits: every series
 * that exists then has a reading there), with the two events that are not energy undone:
 *   - a series first stored inside the window, or first again after a daemon start inside it
 *     (a process first seen, an owner's first folded series) starts from 0, not from its first
 *     reading: that reading is added, unless it is the first split of a daemon run (then
 *     nothing before it is counted, on any series);
 *   - a fold moves a finished process's energy to its owner's series at the split after its
 *     last reading: that jump is taken off the owner's series (the process had it already).
 * So the device's series sum to what the ledger split over the window. -EIO / -ENOMEM.
 */
static int device_window(struct wt_store *st, const struct wt_run_list *runs, struct aser *v,
                         size_t n, const struct aser *idle, int64_t a, int64_t b)
{
    struct wt_point p, f, q, x;
    bool hp, hf, hq, hx;
    int rc = 0;
    /* where a series may start from 0: the window's start and each daemon start inside it */
    int64_t begins[16];
    size_t nb = 0;
    begins[nb++] = a;
    for (size_t r = 0; r < runs->n && nb < 16; r++)
        if (!runs->r[r].node[0] && runs->r[r].start_ns > a && runs->r[r].start_ns <= b)
            begins[nb++] = runs->r[r].start_ns - 1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct aser *s = &v[i];
        double cov = 0;
        int64_t added = INT64_MIN;
        s->energy_j = 0;
        if (strcmp(s->dev, idle->dev) != 0 || s->last < a || s->first > b)
            continue;
        if ((rc = wt_store_series_energy(st, s->si, runs, a, b, 0, &s->energy_j, &cov)) != 0)
            break;
        for (size_t k = 0; k < nb && rc == 0; k++) {
            /* its first reading after the begin: the first of its life in that run? */
            if ((rc = edges(st, s->si->id, begins[k], &p, &hp, &f, &hf)) != 0)
                break;
            if (!hf || f.t_ns > b || f.t_ns == added)
                continue;
            if ((rc = edges(st, s->si->id, f.t_ns - 1, &p, &hp, &x, &hx)) != 0)
                break;
            if (hp && !restart_in(runs, p.t_ns, f.t_ns))
                continue; /* it goes on from a reading of the same run */
            /* and not the first split of its run (nothing before that one is counted) */
            if ((rc = edges(st, idle->si->id, f.t_ns - 1, &q, &hq, &x, &hx)) != 0)
                break;
            if (hq && !restart_in(runs, q.t_ns, f.t_ns)) {
                s->energy_j += f.v;
                added = f.t_ns;
            }
        }
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct aser *s = &v[i];
        if (!s->pid || strcmp(s->dev, idle->dev) != 0 || s->last < a || s->last >= b)
            continue;
        /* its last reading, and the split after it: the fold, if in the window and the run */
        if ((rc = edges(st, s->si->id, s->last, &p, &hp, &f, &hf)) != 0 ||
            (rc = edges(st, idle->si->id, s->last, &q, &hq, &x, &hx)) != 0)
            break;
        if (!hp || !hx || x.t_ns > b || restart_in(runs, s->last, x.t_ns))
            continue;
        char lab[WT_LABELS_LEN], kind[64];
        labels_filter(s->si->labels, fold_drop, false, lab, sizeof lab);
        struct aser *to = find_ser(v, n, lab);
        if (!to && wt_labels_get(s->si->labels, "owner", kind, sizeof kind) == 0) {
            /* past the owners' cap: the one series of its kind */
            snprintf(lab, sizeof lab, "%s", s->dev);
            (void)wt_labels_add(lab, sizeof lab, "owner", kind);
            to = find_ser(v, n, lab);
        }
        if (!to || to->pid)
            continue;
        struct wt_point t1, t0, nx;
        bool h1, h0, hn;
        if ((rc = edges(st, to->si->id, x.t_ns, &t1, &h1, &nx, &hn)) != 0 ||
            (rc = edges(st, to->si->id, x.t_ns - 1, &t0, &h0, &nx, &hn)) != 0)
            break;
        double before = h0 && !restart_in(runs, t0.t_ns, x.t_ns) ? t0.v : 0;
        if (h1 && t1.t_ns == x.t_ns && t1.v - before >= p.v - 1e-6)
            to->energy_j -= p.v;
    }
    return rc;
}

/*
 * One device's object: {"from", "to" (the splits the window was taken between), "idle_joules",
 * "attributed_joules" (the sum of the parts), "processes": [{"pid", owner…, "energy_joules"}],
 * "owners": [{owner…, "energy_joules", "processes": N}]} (an owner: its processes and what was
 * folded into it). NULL when out of memory.
 */
static cJSON *device_json(const struct aser *v, size_t n, const struct aser *idle, int64_t a,
                          int64_t b)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *procs = o ? cJSON_AddArrayToObject(o, "processes") : NULL;
    cJSON *owners = o ? cJSON_AddArrayToObject(o, "owners") : NULL;
    if (!procs || !owners)
        goto fail;
    cJSON_AddNumberToObject(o, "from", (double)a / 1e9);
    cJSON_AddNumberToObject(o, "to", (double)b / 1e9);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        const struct aser *s = &v[i];
        if (strcmp(s->dev, idle->dev) != 0 || s->idle || s->last < a || s->first > b)
            continue;
        sum += s->energy_j;
        if (s->pid) {
            char pid[24], inst[24];
            cJSON *x = cJSON_CreateObject();
            if (!x || !cJSON_AddItemToArray(procs, x)) {
                cJSON_Delete(x);
                goto fail;
            }
            if (wt_labels_get(s->si->labels, "pid", pid, sizeof pid) == 0)
                cJSON_AddNumberToObject(x, "pid", atof(pid));
            if (wt_labels_get(s->si->labels, "gpu_instance", inst, sizeof inst) == 0)
                cJSON_AddStringToObject(x, "gpu_instance", inst);
            char who[WT_LABELS_LEN];
            labels_filter(s->si->labels, proc_keys, true, who, sizeof who);
            size_t pos = 0;
            char k[64], val[WT_LABELS_LEN];
            while (wt_labels_next(who, &pos, k, sizeof k, val, sizeof val) == 1)
                if (strcmp(k, "pid") != 0 && strcmp(k, "gpu_instance") != 0)
                    cJSON_AddStringToObject(x, k, val);
            cJSON_AddNumberToObject(x, "energy_joules", s->energy_j);
        }
        /* its owner's total */
        cJSON *w = NULL, *it;
        cJSON_ArrayForEach(it, owners)
        {
            cJSON *key = cJSON_GetObjectItemCaseSensitive(it, "_key");
            if (cJSON_IsString(key) && strcmp(key->valuestring, s->owner) == 0)
                w = it;
        }
        if (!w) {
            w = cJSON_CreateObject();
            if (!w || !cJSON_AddItemToArray(owners, w)) {
                cJSON_Delete(w);
                goto fail;
            }
            cJSON_AddStringToObject(w, "_key", s->owner);
            add_owner_labels(w, s->owner);
            cJSON_AddNumberToObject(w, "energy_joules", 0);
            cJSON_AddNumberToObject(w, "processes", 0);
        }
        cJSON *e = cJSON_GetObjectItemCaseSensitive(w, "energy_joules");
        cJSON_SetNumberValue(e, e->valuedouble + s->energy_j);
        if (s->pid) {
            cJSON *c = cJSON_GetObjectItemCaseSensitive(w, "processes");
            cJSON_SetNumberValue(c, c->valuedouble + 1);
        }
    }
    cJSON *it;
    cJSON_ArrayForEach(it, owners) cJSON_DeleteItemFromObjectCaseSensitive(it, "_key");
    cJSON_AddNumberToObject(o, "idle_joules", idle->energy_j);
    cJSON_AddNumberToObject(o, "attributed_joules", sum + idle->energy_j);
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* The GPU's own energy over [a, b]: its counter series or its integrated one, by the rule of
 * wt_store_energy (wt_energy_counter_first: the integrated series where the counter covers only
 * part of the window and the integrated series more). */
static int gpu_energy(struct wt_store *st, const struct wt_run_list *runs, const char *dev,
                      int64_t a, int64_t b, double *energy_j, bool *have)
{
    static const char *const names[] = {"wattage_gpu_energy_joules_total",
                                        "wattage_gpu_energy_integrated_joules_total"};
    double e[2] = {0, 0}, cov[2] = {0, 0};
    bool got[2] = {false, false};
    *have = false;
    *energy_j = 0;
    for (int k = 0; k < 2; k++) {
        char sel[WT_LABELS_LEN + 96];
        struct wt_series_info *si = NULL;
        size_t n = 0;
        struct wt_err err = {{0}};
        snprintf(sel, sizeof sel, "%s{%s}", names[k], dev);
        if (wt_store_series(st, sel, false, &si, &n, &err) != 0)
            continue;
        for (size_t i = 0; i < n && !got[k]; i++) {
            if (si[i].node[0])
                continue;
            int rc = wt_store_series_energy(st, &si[i], runs, a, b, 0, &e[k], &cov[k]);
            if (rc) {
                free(si);
                return rc;
            }
            got[k] = true;
        }
        free(si);
    }
    double win_s = (double)(b - a) / 1e9;
    int k = !got[0] ? 1 : 0;
    if (got[0] && got[1] && win_s > 0 &&
        !wt_energy_counter_first(cov[0], cov[0] >= win_s ? 1 : cov[0] / win_s, cov[1]))
        k = 1;
    *have = got[k];
    if (got[k])
        *energy_j = e[k];
    return 0;
}

/* Every device of one per-process metric: appends the GPUs to arr, or sets *cpu. */
static int metric_window(struct wt_store *st, const struct wt_run_list *runs, const char *metric,
                         bool gpus, int64_t a, int64_t b, cJSON *arr, cJSON **cpu)
{
    struct wt_series_info *si = NULL;
    size_t n = 0, m = 0;
    struct wt_err err = {{0}};
    int rc = wt_store_series(st, metric, false, &si, &n, &err);
    if (rc)
        return rc == -EINVAL ? 0 : rc;
    struct aser *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        free(si);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct aser *s = &v[m];
        int64_t first = 0, last = 0;
        if (si[i].node[0] || (rc = wt_store_bounds(st, si[i].id, &first, &last)) < 0)
            continue;
        if (rc == 0)
            continue; /* no readings */
        rc = 0;
        s->si = &si[i];
        s->first = first;
        s->last = last;
        labels_filter(si[i].labels, proc_keys, false, s->dev, sizeof s->dev);
        labels_filter(si[i].labels, owner_keys, true, s->owner, sizeof s->owner);
        char val[64];
        s->pid = wt_labels_get(si[i].labels, "pid", val, sizeof val) == 0;
        s->idle =
            wt_labels_get(si[i].labels, "owner", val, sizeof val) == 0 && strcmp(val, "idle") == 0;
        m++;
    }
    for (size_t d = 0; d < m && rc == 0; d++) {
        const struct aser *idle = &v[d];
        struct wt_point p, x;
        bool hp, hx;
        if (!idle->idle)
            continue;
        /* the window between splits: the last at or before each end (else the first after a) */
        int64_t a2, b2;
        if ((rc = edges(st, idle->si->id, a, &p, &hp, &x, &hx)) != 0)
            break;
        if (!hp && !hx)
            continue;
        a2 = hp ? p.t_ns : x.t_ns;
        if ((rc = edges(st, idle->si->id, b, &p, &hp, &x, &hx)) != 0)
            break;
        if (!hp || p.t_ns <= a2)
            continue;
        b2 = p.t_ns;
        if ((rc = device_window(st, runs, v, m, idle, a2, b2)) != 0)
            break;
        cJSON *o = device_json(v, m, idle, a2, b2);
        if (!o) {
            rc = -ENOMEM;
            break;
        }
        if (gpus) {
            char g[64], u[128];
            double e = 0;
            bool have = false;
            if (wt_labels_get(idle->dev, "gpu", g, sizeof g) == 0)
                cJSON_AddStringToObject(o, "gpu", g);
            if (wt_labels_get(idle->dev, "uuid", u, sizeof u) == 0)
                cJSON_AddStringToObject(o, "uuid", u);
            if ((rc = gpu_energy(st, runs, idle->dev, a2, b2, &e, &have)) != 0) {
                cJSON_Delete(o);
                break;
            }
            if (have)
                cJSON_AddNumberToObject(o, "energy_joules", e);
            else
                cJSON_AddNullToObject(o, "energy_joules");
            if (!cJSON_AddItemToArray(arr, o)) {
                cJSON_Delete(o);
                rc = -ENOMEM;
            }
        } else if (!*cpu) {
            *cpu = o;
        } else {
            cJSON_Delete(o);
        }
    }
    free(v);
    free(si);
    return rc;
}

int wt_api_attribution_window(struct wt_store *st, const char *from, const char *to, int64_t now_ns,
                              unsigned *status, char **json)
{
    int64_t a, b;
    *json = NULL;
    if (wt_time_parse(to ? to : "now", now_ns, &b) != 0)
        return refuse(status, json, 400, "to",
                      "to: expected RFC 3339, unix seconds or a relative time like -1h");
    if (from && wt_time_parse(from, now_ns, &a) != 0)
        return refuse(status, json, 400, "from",
                      "from: expected RFC 3339, unix seconds or a relative time like -1h");
    if (!from)
        a = b - ATTR_WINDOW_DEFAULT;
    if (b <= a)
        return refuse(status, json, 400, "to", "to: the window is empty: to must be after from");
    if (b - a > ATTR_WINDOW_MAX)
        return refuse(status, json, 400, "from", "from: the window is longer than 31 days");
    struct wt_run_list runs = {0};
    cJSON *o = cJSON_CreateObject(), *cpu = NULL;
    cJSON *gpus = o ? cJSON_AddArrayToObject(o, "gpus") : NULL;
    int rc = gpus ? wt_runs_load(st, &runs) : -ENOMEM;
    if (rc == 0)
        rc = metric_window(st, &runs, "wattage_process_gpu_energy_joules_total", true, a, b, gpus,
                           &cpu);
    if (rc == 0)
        rc = metric_window(st, &runs, "wattage_process_cpu_energy_joules_total", false, a, b, NULL,
                           &cpu);
    wt_runs_free(&runs);
    if (rc == 0) {
        cJSON_AddNumberToObject(o, "from", (double)a / 1e9);
        cJSON_AddNumberToObject(o, "to", (double)b / 1e9);
        if (cpu)
            cJSON_AddItemToObject(o, "cpu", cpu);
        else
            cJSON_AddNullToObject(o, "cpu");
        *json = cJSON_PrintUnformatted(o);
        rc = *json ? 0 : -ENOMEM;
    } else {
        cJSON_Delete(cpu);
    }
    cJSON_Delete(o);
    *status = 200;
    return rc;
}

/* The store the windowed requests read, on a connection of its own (opened at the first). */
static struct {
    pthread_mutex_t mu;
    char path[4096];
    struct wt_store *st;
} win = {PTHREAD_MUTEX_INITIALIZER, "", NULL};

void wt_api_attribution_store(const char *db_path)
{
    pthread_mutex_lock(&win.mu);
    snprintf(win.path, sizeof win.path, "%s", db_path ? db_path : "");
    pthread_mutex_unlock(&win.mu);
}

void wt_api_attribution_close(void)
{
    pthread_mutex_lock(&win.mu);
    wt_store_close(win.st);
    win.st = NULL;
    win.path[0] = '\0';
    pthread_mutex_unlock(&win.mu);
}

static int window_reply(const struct wt_http_request *req, unsigned *status, char **json)
{
    int rc;
    struct wt_err err = {{0}};
    pthread_mutex_lock(&win.mu);
    if (!win.st && win.path[0]) {
        struct wt_store_opts o = {.create = false};
        if (wt_store_open(win.path, &o, &win.st, &err) != 0)
            win.st = NULL;
    }
    if (!win.st)
        rc = refuse(status, json, 503, NULL, "no store to read the window from: %s",
                    err.msg[0] ? err.msg : "the daemon has none");
    else
        rc = wt_api_attribution_window(win.st, wt_http_query(req, "from"), wt_http_query(req, "to"),
                                       wt_now_real_ns(), status, json);
    pthread_mutex_unlock(&win.mu);
    return rc;
}

static int route_attribution(void *ctx, const struct wt_http_request *req,
                             struct wt_http_reply *rep)
{
    unsigned status;
    char *json = NULL;
    (void)ctx;
    if (wt_http_query(req, "from") || wt_http_query(req, "to")) {
        int rc = window_reply(req, &status, &json);
        if (rc)
            return rc;
        return reply(rep, status, json);
    }
    int rc = wt_api_attribution_json(&status, &json);
    if (rc)
        return rc;
    return reply(rep, status, json);
}

static int family_energy(void *ctx, struct wt_expo_family *fam)
{
    return wt_jobs_family(ctx, fam);
}

static int family_co2(void *ctx, struct wt_expo_family *fam)
{
    return wt_jobs_family_co2(ctx, fam);
}

int wt_api_jobs_add(struct wt_http *h, struct wt_jobs *j)
{
    int rc;
    if ((rc = wt_http_add_route(h, "GET", BASE, false, route_jobs, j)) ||
        (rc = wt_http_add_route(h, "POST", BASE, false, route_jobs, j)) ||
        (rc = wt_http_add_route(h, "GET", BASE "/*", false, route_jobs, j)) ||
        (rc = wt_http_add_route(h, "POST", BASE "/*", false, route_jobs, j)) ||
        (rc =
             wt_http_add_route(h, "GET", "/api/v1/gpus/processes", false, route_processes, NULL)) ||
        (rc = wt_http_add_route(h, "GET", "/api/v1/attribution", false, route_attribution, NULL)))
        return rc;
    /* With a hub the job series go through it (the store, /metrics, remote write); without
     * one (tests) the energy family is computed on scrape. */
    rc = wt_jobs_export_start(j);
    if (rc == -ENODEV)
        rc = wt_http_add_family(h, family_energy, j);
    if (rc)
        return rc;
    /* The emissions family is an addition: without room for it the daemon still serves. */
    if (wt_jobs_carbon_on(j) && wt_http_add_family(h, family_co2, j) != 0)
        wt_warn("jobs",
                "wattage_job_emissions_grams_total not on /metrics: no room for another family "
                "(WT_HTTP_MAX_FAMILIES)");
    return 0;
}
