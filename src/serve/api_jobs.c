/* SPDX-License-Identifier: MIT */
/*
 * The jobs API's routes (see api_jobs.h): the path says which job and what to do with it, the
 * jobs module (audit/jobs.h) does it; and GET /api/v1/gpus/processes, from the NVML
 * collector's latest process list.
 */
#include "serve/api_jobs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "collect/cgroup.h"
#include "collect/nvml.h"
#include "core/clock.h"
#include "core/log.h"
#include "serve/expo.h"

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
        if (e->dev != d->dev)
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

static const struct wt_attrib_device *ledger_dev(const struct ledger *l, unsigned int dev)
{
    for (size_t i = 0; i < l->ndev; i++)
        if (l->devs[i].dev == dev)
            return &l->devs[i];
    return NULL;
}

/*
 * One GPU's entry: {"gpu": "0", "uuid": "GPU-…", "pids": [...], "processes": [{pid, owner...}],
 * "attribution": {…} (add_device; once its energy has been split)}; false when out of memory.
 */
static bool add_procs(cJSON *arr, const struct wt_gpu_procs *p, const struct ledger *l)
{
    char idx[16];
    cJSON *g = cJSON_CreateObject(), *pids;
    if (!g || !cJSON_AddItemToArray(arr, g)) {
        cJSON_Delete(g);
        return false;
    }
    snprintf(idx, sizeof idx, "%u", p->gpu);
    cJSON_AddStringToObject(g, "gpu", idx);
    cJSON_AddStringToObject(g, "uuid", p->uuid);
    pids = cJSON_AddArrayToObject(g, "pids");
    for (unsigned int k = 0; pids && k < p->npids; k++)
        cJSON_AddItemToArray(pids, cJSON_CreateNumber(p->pids[k]));
    cJSON *procs = cJSON_AddArrayToObject(g, "processes");
    for (unsigned int k = 0; procs && k < p->npids; k++)
        add_owner(procs, p->pids[k]);
    const struct wt_attrib_device *d = ledger_dev(l, p->gpu);
    cJSON *a = d ? cJSON_AddObjectToObject(g, "attribution") : NULL;
    if (a)
        add_device(a, l, d);
    return true;
}

int wt_api_processes_json(unsigned *status, char **json)
{
    struct wt_gpu_procs *p = calloc(MAX_GPUS, sizeof *p);
    size_t n = 0;
    int64_t t = 0;
    cJSON *o = NULL;
    struct ledger l = {0};
    *json = NULL;
    if (!p)
        return -ENOMEM;
    /* No ledger (no memory for it) leaves the entries without "attribution". */
    if (wt_attrib_copy_published(0, &l.devs, &l.ndev, &l.ents, &l.nent) != 0)
        ledger_free(&l);
    if (wt_nvml_processes(p, MAX_GPUS, &n, &t) != 0) {
        *status = 503;
        o = cJSON_CreateObject();
        if (o)
            cJSON_AddStringToObject(o, "error",
                                    "no GPU process list: no NVML collector, or its library or "
                                    "GPUs do not list processes");
    } else {
        *status = 200;
        o = cJSON_CreateArray();
        for (size_t i = 0; o && i < n; i++) {
            if (!add_procs(o, &p[i], &l))
                break;
        }
    }
    ledger_free(&l);
    free(p);
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

static int route_attribution(void *ctx, const struct wt_http_request *req,
                             struct wt_http_reply *rep)
{
    unsigned status;
    char *json = NULL;
    (void)ctx;
    (void)req;
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
