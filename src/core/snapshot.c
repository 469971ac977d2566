/* SPDX-License-Identifier: MIT */
/*
 * Snapshot rendering: readings grouped per GPU (by the gpu label), per RAPL domain and for the
 * host, then written as JSON (cJSON) or as a table for a terminal. A metric a GPU does not
 * support has no reading, so it is absent from the JSON and shown as "-" in the table.
 */
#include "core/snapshot.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"

#define MAX_GPUS 64
#define MAX_DOMAINS 32

/* GPU metrics and their JSON keys, in output order; F_* name the positions. */
enum {
    F_POWER,
    F_ENERGY,
    F_TEMP,
    F_SLOWDOWN,
    F_SHUTDOWN,
    F_UTIL,
    F_MEM_UTIL,
    F_MEM_USED,
    F_MEM_TOTAL,
    F_SM_CLOCK,
    F_MEM_CLOCK,
    F_LIMIT,
    F_LIMIT_MIN,
    F_LIMIT_MAX,
    F_PSTATE,
    F_THROTTLE,
    F_GAPS,
    F_IDLE,
    F_IDLE_TODAY_J,
    F_IDLE_POWER
};
static const struct {
    int metric;
    const char *key;
    int integer;
} gpu_fields[] = {
    {WT_M_GPU_POWER_W, "power_watts", 0},
    {WT_M_GPU_ENERGY_J, "energy_joules", 0},
    {WT_M_GPU_TEMP_C, "temperature_celsius", 0},
    {WT_M_GPU_SLOWDOWN_TEMP_C, "slowdown_temperature_celsius", 0},
    {WT_M_GPU_SHUTDOWN_TEMP_C, "shutdown_temperature_celsius", 0},
    {WT_M_GPU_UTIL_RATIO, "utilization_ratio", 0},
    {WT_M_GPU_MEM_UTIL_RATIO, "memory_utilization_ratio", 0},
    {WT_M_GPU_MEM_USED_B, "memory_used_bytes", 1},
    {WT_M_GPU_MEM_TOTAL_B, "memory_total_bytes", 1},
    {WT_M_GPU_SM_CLOCK_HZ, "sm_clock_hertz", 1},
    {WT_M_GPU_MEM_CLOCK_HZ, "memory_clock_hertz", 1},
    {WT_M_GPU_POWER_LIMIT_W, "power_limit_watts", 0},
    {WT_M_GPU_POWER_LIMIT_MIN_W, "power_limit_min_watts", 0},
    {WT_M_GPU_POWER_LIMIT_MAX_W, "power_limit_max_watts", 0},
    {WT_M_GPU_PSTATE, "performance_state", 1},
    {WT_M_GPU_THROTTLE_REASONS, "throttle_reasons", 1},
    {WT_M_GPU_ENERGY_GAPS, "energy_gaps", 1},
    /* dark power (audit/dark.h), where the daemon measures it */
    {WT_M_GPU_IDLE, "idle", 1},
    {WT_M_GPU_IDLE_ENERGY_TODAY_J, "idle_energy_today_joules", 0},
    {WT_M_GPU_IDLE_POWER_W, "idle_power_watts", 0},
};
#define NFIELDS (sizeof gpu_fields / sizeof gpu_fields[0])

struct gpu {
    char index[16], uuid[96], model[96], pci[32];
    int up; /* -1 unknown */
    double v[NFIELDS];
    int has[NFIELDS];
    double energy_integrated;
    int has_integrated;
    char throttled[256];
};

struct domain {
    char package[16], domain[16];
    double energy, power;
    int has_energy, has_power;
};

struct view {
    struct gpu gpus[MAX_GPUS];
    int ngpus;
    struct domain doms[MAX_DOMAINS];
    int ndoms;
    double cpu_util, mem_ratio, mem_used, mem_total;
    int has_cpu_util, has_mem_ratio, has_mem_used, has_mem_total;
};

static struct gpu *gpu_for(struct view *v, const char *labels)
{
    char idx[16];
    if (wt_labels_get(labels, "gpu", idx, sizeof idx) != 0)
        return NULL;
    for (int i = 0; i < v->ngpus; i++) {
        if (strcmp(v->gpus[i].index, idx) == 0)
            return &v->gpus[i];
    }
    if (v->ngpus == MAX_GPUS)
        return NULL;
    struct gpu *g = &v->gpus[v->ngpus++];
    memset(g, 0, sizeof *g);
    g->up = -1;
    snprintf(g->index, sizeof g->index, "%s", idx);
    (void)wt_labels_get(labels, "uuid", g->uuid, sizeof g->uuid);
    (void)wt_labels_get(labels, "model", g->model, sizeof g->model);
    return g;
}

static struct domain *domain_for(struct view *v, const char *labels)
{
    char pkg[16] = "", dom[16] = "";
    (void)wt_labels_get(labels, "package", pkg, sizeof pkg);
    (void)wt_labels_get(labels, "domain", dom, sizeof dom);
    for (int i = 0; i < v->ndoms; i++) {
        if (strcmp(v->doms[i].package, pkg) == 0 && strcmp(v->doms[i].domain, dom) == 0)
            return &v->doms[i];
    }
    if (v->ndoms == MAX_DOMAINS)
        return NULL;
    struct domain *d = &v->doms[v->ndoms++];
    memset(d, 0, sizeof *d);
    snprintf(d->package, sizeof d->package, "%s", pkg);
    snprintf(d->domain, sizeof d->domain, "%s", dom);
    return d;
}

static int cmp_gpu(const void *a, const void *b)
{
    return atoi(((const struct gpu *)a)->index) - atoi(((const struct gpu *)b)->index);
}

static void build_view(struct view *v, const struct wt_batch *b)
{
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        char tmp[64];
        if (r->metric <= WT_M_GPU_ENERGY_GAPS || r->metric == WT_M_GPU_IDLE ||
            r->metric == WT_M_GPU_IDLE_ENERGY_TODAY_J || r->metric == WT_M_GPU_IDLE_POWER_W) {
            struct gpu *g = gpu_for(v, r->labels);
            if (!g)
                continue;
            if (r->metric == WT_M_GPU_INFO) {
                (void)wt_labels_get(r->labels, "pci_bus_id", g->pci, sizeof g->pci);
            } else if (r->metric == WT_M_GPU_UP) {
                g->up = r->value != 0;
            } else if (r->metric == WT_M_GPU_THROTTLED) {
                if (r->value != 0 && wt_labels_get(r->labels, "reason", tmp, sizeof tmp) == 0) {
                    size_t l = strlen(g->throttled);
                    snprintf(g->throttled + l, sizeof g->throttled - l, "%s%s", l ? "," : "", tmp);
                }
            } else if (r->metric == WT_M_GPU_ENERGY_INTEGRATED_J) {
                g->energy_integrated = r->value;
                g->has_integrated = 1;
            } else {
                for (size_t f = 0; f < NFIELDS; f++) {
                    if (gpu_fields[f].metric == r->metric) {
                        g->v[f] = r->value;
                        g->has[f] = 1;
                    }
                }
            }
        } else if (r->metric == WT_M_CPU_ENERGY_J || r->metric == WT_M_CPU_POWER_W) {
            struct domain *d = domain_for(v, r->labels);
            if (!d)
                continue;
            if (r->metric == WT_M_CPU_ENERGY_J) {
                d->energy = r->value;
                d->has_energy = 1;
            } else {
                d->power = r->value;
                d->has_power = 1;
            }
        } else if (r->metric == WT_M_CPU_UTIL_RATIO) {
            if (wt_labels_get(r->labels, "cpu", tmp, sizeof tmp) == 0 && strcmp(tmp, "all") == 0) {
                v->cpu_util = r->value;
                v->has_cpu_util = 1;
            }
        } else if (r->metric == WT_M_MEM_USED_RATIO) {
            v->mem_ratio = r->value;
            v->has_mem_ratio = 1;
        } else if (r->metric == WT_M_MEM_USED_B) {
            v->mem_used = r->value;
            v->has_mem_used = 1;
        } else if (r->metric == WT_M_MEM_TOTAL_B) {
            v->mem_total = r->value;
            v->has_mem_total = 1;
        }
    }
    qsort(v->gpus, (size_t)v->ngpus, sizeof v->gpus[0], cmp_gpu);
}

static double total_gpu_power(const struct view *v, int *n)
{
    double sum = 0;
    *n = 0;
    for (int i = 0; i < v->ngpus; i++) {
        if (v->gpus[i].up != 0 && v->gpus[i].has[F_POWER]) {
            sum += v->gpus[i].v[F_POWER];
            (*n)++;
        }
    }
    return sum;
}

/* CPU power is the sum over package domains (psys when that is all there is). */
static double total_cpu_power(const struct view *v, int *n)
{
    double sum = 0, psys = 0;
    int np = 0, ns = 0;
    for (int i = 0; i < v->ndoms; i++) {
        if (!v->doms[i].has_power)
            continue;
        if (strcmp(v->doms[i].domain, "package") == 0) {
            sum += v->doms[i].power;
            np++;
        } else if (strcmp(v->doms[i].domain, "psys") == 0) {
            psys += v->doms[i].power;
            ns++;
        }
    }
    *n = np ? np : ns;
    return np ? sum : psys;
}

/* ---- facility measuring points (SNMP, Redfish, Modbus) ---- */

#define MAX_FAC_POINTS 512
#define FAC_FIRST WT_M_FAC_POWER_W
#define FAC_N (WT_M_FAC_HEAT_J - WT_M_FAC_POWER_W + 1)

struct fac_point {
    char source[16], target[32], point[64], kind[24], name[64];
    double v[FAC_N];
    bool has[FAC_N];
    int64_t t_ns; /* when the poll that took the values shown began (the latest of them) */
};

struct fac_view {
    struct fac_point p[MAX_FAC_POINTS];
    size_t n;
    struct {
        char source[16], target[32];
        bool up;
    } t[WT_HUB_MAX_COLLECTORS];
    size_t nt;
};

static void fac_label(const char *labels, const char *key, char *out, size_t n)
{
    if (wt_labels_get(labels, key, out, n) != 0)
        out[0] = '\0';
}

static int cmp_fac(const void *a, const void *b)
{
    const struct fac_point *x = a, *y = b;
    int c = strcmp(x->target, y->target);
    return c ? c : strcmp(x->point, y->point);
}

static void build_fac(struct fac_view *fv, const struct wt_batch *b)
{
    fv->n = fv->nt = 0;
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        char src[16], tgt[32], pt[64];
        if (r->metric == WT_M_FAC_UP && fv->nt < WT_HUB_MAX_COLLECTORS) {
            fac_label(r->labels, "source", fv->t[fv->nt].source, sizeof fv->t[fv->nt].source);
            fac_label(r->labels, "target", fv->t[fv->nt].target, sizeof fv->t[fv->nt].target);
            fv->t[fv->nt++].up = r->value > 0.5;
            continue;
        }
        if (r->metric < FAC_FIRST || r->metric >= FAC_FIRST + FAC_N)
            continue;
        fac_label(r->labels, "source", src, sizeof src);
        fac_label(r->labels, "target", tgt, sizeof tgt);
        fac_label(r->labels, "point", pt, sizeof pt);
        struct fac_point *p = NULL;
        for (size_t k = 0; k < fv->n && !p; k++)
            if (!strcmp(fv->p[k].target, tgt) && !strcmp(fv->p[k].point, pt) &&
                !strcmp(fv->p[k].source, src))
                p = &fv->p[k];
        if (!p) {
            if (fv->n == MAX_FAC_POINTS)
                continue;
            p = &fv->p[fv->n++];
            memset(p, 0, sizeof *p);
            memcpy(p->source, src, sizeof p->source);
            memcpy(p->target, tgt, sizeof p->target);
            memcpy(p->point, pt, sizeof p->point);
            fac_label(r->labels, "kind", p->kind, sizeof p->kind);
            fac_label(r->labels, "name", p->name, sizeof p->name);
        }
        /* Several series of one metric at one point (per phase...): the first is shown. */
        if (!p->has[r->metric - FAC_FIRST]) {
            p->has[r->metric - FAC_FIRST] = true;
            p->v[r->metric - FAC_FIRST] = r->value;
            if (r->t_ns > p->t_ns)
                p->t_ns = r->t_ns;
        }
    }
    if (fv->n)
        qsort(fv->p, fv->n, sizeof fv->p[0], cmp_fac);
}

/* The JSON key of a facility metric: its name without "wattage_facility_". */
static const char *fac_key(int metric)
{
    const char *n = wt_metrics[metric].name;
    return strncmp(n, "wattage_facility_", 17) == 0 ? n + 17 : n;
}

static void fac_json(cJSON *root, const struct fac_view *fv)
{
    cJSON *targets = cJSON_AddArrayToObject(root, "facility_targets");
    for (size_t i = 0; i < fv->nt; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(targets, o);
        cJSON_AddStringToObject(o, "source", fv->t[i].source);
        cJSON_AddStringToObject(o, "target", fv->t[i].target);
        cJSON_AddBoolToObject(o, "up", fv->t[i].up);
    }
    cJSON *pts = cJSON_AddArrayToObject(root, "facility");
    for (size_t i = 0; i < fv->n; i++) {
        const struct fac_point *p = &fv->p[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(pts, o);
        cJSON_AddStringToObject(o, "source", p->source);
        cJSON_AddStringToObject(o, "target", p->target);
        cJSON_AddStringToObject(o, "point", p->point);
        if (p->kind[0])
            cJSON_AddStringToObject(o, "kind", p->kind);
        if (p->name[0])
            cJSON_AddStringToObject(o, "name", p->name);
        /* The reading's own time: a target polled every 30 s, or slow to answer, shows the same
         * values for many requests, and a client averaging them (wattage calibrate) must know. */
        char ts[40];
        wt_time_format(p->t_ns, 1, ts, sizeof ts);
        cJSON_AddStringToObject(o, "t", ts);
        for (int k = 0; k < FAC_N; k++)
            if (p->has[k])
                cJSON_AddNumberToObject(o, fac_key(FAC_FIRST + k), p->v[k]);
    }
}

/* ---- hwmon sensors (collect/hwmon.h), by role ---- */

#define MAX_HWMON 64

struct hw_sensor {
    char chip[32], sensor[16], label[64], role[16], socket[8], hwmon[16], method[16];
    double power_w, energy_j, interval_s, age_s;
    bool has_power, has_energy, has_interval, has_age;
    int64_t t_ns; /* the power reading's own time (an average's middle) */
};

struct hw_view {
    struct hw_sensor s[MAX_HWMON];
    size_t n;
};

static void build_hw(struct hw_view *hv, const struct wt_batch *b)
{
    hv->n = 0;
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        if (r->metric != WT_M_HWMON_POWER_W && r->metric != WT_M_HWMON_ENERGY_J &&
            r->metric != WT_M_HWMON_INTERVAL_S && r->metric != WT_M_HWMON_AGE_S)
            continue;
        struct hw_sensor k;
        memset(&k, 0, sizeof k);
        fac_label(r->labels, "chip", k.chip, sizeof k.chip);
        fac_label(r->labels, "sensor", k.sensor, sizeof k.sensor);
        fac_label(r->labels, "label", k.label, sizeof k.label);
        fac_label(r->labels, "role", k.role, sizeof k.role);
        fac_label(r->labels, "socket", k.socket, sizeof k.socket);
        fac_label(r->labels, "hwmon", k.hwmon, sizeof k.hwmon);
        struct hw_sensor *s = NULL;
        for (size_t j = 0; j < hv->n && !s; j++)
            if (!strcmp(hv->s[j].chip, k.chip) && !strcmp(hv->s[j].sensor, k.sensor) &&
                !strcmp(hv->s[j].label, k.label) && !strcmp(hv->s[j].hwmon, k.hwmon))
                s = &hv->s[j];
        if (!s) {
            if (hv->n == MAX_HWMON)
                continue;
            s = &hv->s[hv->n++];
            *s = k;
        }
        if (r->metric == WT_M_HWMON_POWER_W) {
            s->power_w = r->value;
            s->has_power = true;
            s->t_ns = r->t_ns;
        } else if (r->metric == WT_M_HWMON_ENERGY_J) {
            s->energy_j = r->value;
            s->has_energy = true;
            fac_label(r->labels, "method", s->method, sizeof s->method);
        } else if (r->metric == WT_M_HWMON_AGE_S) {
            s->age_s = r->value;
            s->has_age = true;
        } else {
            s->interval_s = r->value;
            s->has_interval = true;
        }
    }
}

/* The sum of the power of role's sensors; false when none has a reading. */
static bool hw_role_power(const struct hw_view *hv, const char *role, double *w)
{
    bool any = false;
    *w = 0;
    for (size_t i = 0; i < hv->n; i++)
        if (hv->s[i].has_power && strcmp(hv->s[i].role, role) == 0) {
            *w += hv->s[i].power_w;
            any = true;
        }
    return any;
}

/*
 * "hwmon": one object per sensor (chip, sensor, label, role[, socket][, hwmon], t, power_watts,
 * energy_joules, energy_method, average_interval_seconds), and "hwmon_power_watts": each role's
 * sum, with "psu_loss_watts" and "psu_loss_ratio" (1 - out / in) where the PSUs give both sides.
 */
static void hw_json(cJSON *root, const struct hw_view *hv)
{
    cJSON *arr = cJSON_AddArrayToObject(root, "hwmon");
    cJSON *roles = NULL;
    for (size_t i = 0; i < hv->n; i++) {
        const struct hw_sensor *s = &hv->s[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "chip", s->chip);
        cJSON_AddStringToObject(o, "sensor", s->sensor);
        cJSON_AddStringToObject(o, "label", s->label);
        cJSON_AddStringToObject(o, "role", s->role);
        if (s->socket[0])
            cJSON_AddStringToObject(o, "socket", s->socket);
        if (s->hwmon[0])
            cJSON_AddStringToObject(o, "hwmon", s->hwmon);
        if (s->has_power) {
            char ts[40];
            wt_time_format(s->t_ns, 1, ts, sizeof ts);
            cJSON_AddStringToObject(o, "t", ts);
            cJSON_AddNumberToObject(o, "power_watts", s->power_w);
            /* A sensor read at its own cadence: how old its reading was at the last poll. */
            if (s->has_age)
                cJSON_AddNumberToObject(o, "age_seconds", s->age_s);
        }
        if (s->has_energy) {
            cJSON_AddNumberToObject(o, "energy_joules", s->energy_j);
            cJSON_AddStringToObject(o, "energy_method", s->method);
        }
        if (s->has_interval)
            cJSON_AddNumberToObject(o, "average_interval_seconds", s->interval_s);
        double w;
        if (s->has_power && (!roles || !cJSON_GetObjectItemCaseSensitive(roles, s->role)) &&
            hw_role_power(hv, s->role, &w)) {
            if (!roles)
                roles = cJSON_AddObjectToObject(root, "hwmon_power_watts");
            cJSON_AddNumberToObject(roles, s->role, w);
        }
    }
    double in, out;
    if (hw_role_power(hv, "psu_in", &in) && hw_role_power(hv, "psu_out", &out) && in > 0) {
        cJSON_AddNumberToObject(root, "psu_loss_watts", in - out);
        cJSON_AddNumberToObject(root, "psu_loss_ratio", (in - out) / in);
    }
}

static void cell(FILE *f, int has, double v, int width, int prec, const char *suffix);

static void hw_print(FILE *f, const struct hw_view *hv)
{
    if (!hv->n)
        return;
    fprintf(f, "\n%-10s %-14s %-8s %-28s %10s %12s %6s\n", "ROLE", "CHIP", "SENSOR", "LABEL",
            "POWER W", "ENERGY kWh", "AGE s");
    for (size_t i = 0; i < hv->n; i++) {
        const struct hw_sensor *s = &hv->s[i];
        fprintf(f, "%-10.10s %-14.14s %-8.8s %-28.28s", s->role, s->chip, s->sensor,
                s->label[0] ? s->label : "-");
        cell(f, s->has_power, s->power_w, 10, 1, "");
        cell(f, s->has_energy, s->energy_j / 3.6e6, 12, 3, "");
        cell(f, s->has_power && s->has_age, s->age_s, 6, 1, "");
        fprintf(f, "\n");
    }
    double w, in, out;
    if (hw_role_power(hv, "wall", &w))
        fprintf(f, "wall (hwmon): %.1f W\n", w);
    if (hw_role_power(hv, "psu_in", &in) && hw_role_power(hv, "psu_out", &out) && in > 0)
        fprintf(f, "PSU: in %.1f W, out %.1f W, conversion loss %.1f W (%.1f%%)\n", in, out,
                in - out, 100 * (in - out) / in);
}

/* The object under parent's key (created on first use); NULL when out of memory. */
static cJSON *child(cJSON *parent, const char *key)
{
    cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key);
    return o ? o : cJSON_AddObjectToObject(parent, key);
}

/*
 * The rolling power means (audit/power_avg.h) as "power_average_watts": {"1m": W, "5m": W,
 * "15m": W}, in each GPU's object and under root's "node" and "site"; gobj[i] is the JSON object
 * of v->gpus[i].
 */
static void averages_json(cJSON *root, cJSON *const *gobj, const struct view *v,
                          const struct wt_batch *b)
{
    cJSON *avg = NULL;
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        char win[8], idx[16];
        cJSON *o = NULL;
        if ((r->metric != WT_M_GPU_POWER_AVG_W && r->metric != WT_M_NODE_POWER_AVG_W &&
             r->metric != WT_M_SITE_POWER_AVG_W) ||
            wt_labels_get(r->labels, "window", win, sizeof win) != 0)
            continue;
        if (r->metric == WT_M_GPU_POWER_AVG_W) {
            if (wt_labels_get(r->labels, "gpu", idx, sizeof idx) != 0)
                continue;
            for (int g = 0; g < v->ngpus && !o; g++)
                if (gobj[g] && strcmp(v->gpus[g].index, idx) == 0)
                    o = child(gobj[g], "power_average_watts");
        } else if ((avg = avg ? avg : child(root, "power_average_watts"))) {
            o = child(avg, r->metric == WT_M_NODE_POWER_AVG_W ? "node" : "site");
        }
        if (o && !cJSON_GetObjectItemCaseSensitive(o, win))
            cJSON_AddNumberToObject(o, win, r->value);
    }
}

/* ---- MIG instances (collect/nvml_mig.h), per GPU ---- */

#define MAX_MIG 64
struct mig_inst {
    char gi[16], ci[16], uuid[96];
    double energy, used, total, procs, sm;
    bool has_used, has_total, has_procs, has_sm;
};
struct mig_view {
    int n;
    bool in_mig; /* a method gauge: the GPU is in MIG mode */
    char method[16];
    bool has_idle;
    double idle;
    struct mig_inst in[MAX_MIG];
};

/* GPU idx's MIG readings of b into m; false when it has none. */
static bool mig_of(const struct wt_batch *b, const char *idx, struct mig_view *m)
{
    memset(m, 0, sizeof *m);
    bool any = false;
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        char gpu[16], gi[16], uuid[96];
        if (r->metric < WT_M_MIG_ENERGY_J || r->metric > WT_M_MIG_SM_ACTIVE_RATIO ||
            wt_labels_get(r->labels, "gpu", gpu, sizeof gpu) != 0 || strcmp(gpu, idx) != 0)
            continue;
        any = true;
        if (r->metric == WT_M_MIG_ATTRIB_INFO) {
            m->in_mig = wt_labels_get(r->labels, "method", m->method, sizeof m->method) == 0;
            continue;
        }
        if (wt_labels_get(r->labels, "gpu_instance", gi, sizeof gi) != 0)
            continue;
        if (strcmp(gi, "idle") == 0) {
            m->has_idle = r->metric == WT_M_MIG_ENERGY_J;
            m->idle = r->value;
            continue;
        }
        if (wt_labels_get(r->labels, "mig_uuid", uuid, sizeof uuid) != 0)
            continue;
        struct mig_inst *x = NULL;
        for (int k = 0; k < m->n && !x; k++)
            if (strcmp(m->in[k].uuid, uuid) == 0 && strcmp(m->in[k].gi, gi) == 0)
                x = &m->in[k];
        if (!x && m->n == MAX_MIG)
            continue;
        if (!x) {
            x = &m->in[m->n++];
            snprintf(x->gi, sizeof x->gi, "%s", gi);
            snprintf(x->uuid, sizeof x->uuid, "%s", uuid);
            if (wt_labels_get(r->labels, "compute_instance", x->ci, sizeof x->ci) != 0)
                x->ci[0] = '\0';
        }
        switch (r->metric) {
        case WT_M_MIG_ENERGY_J:
            x->energy = r->value;
            break;
        case WT_M_MIG_MEM_USED_B:
            x->used = r->value;
            x->has_used = true;
            break;
        case WT_M_MIG_MEM_TOTAL_B:
            x->total = r->value;
            x->has_total = true;
            break;
        case WT_M_MIG_PROCESSES:
            x->procs = r->value;
            x->has_procs = true;
            break;
        case WT_M_MIG_SM_ACTIVE_RATIO:
            x->sm = r->value;
            x->has_sm = true;
            break;
        default:
            break;
        }
    }
    return any;
}

/* "mig": {"method", "idle_energy_joules", "instances": [...]} in each GPU object with MIG
 * series. */
static void mig_json(cJSON *const *gobj, const struct view *v, const struct wt_batch *b)
{
    struct mig_view *m = malloc(sizeof *m);
    for (int g = 0; m && g < v->ngpus; g++) {
        if (!gobj[g] || !mig_of(b, v->gpus[g].index, m))
            continue;
        cJSON *o = cJSON_AddObjectToObject(gobj[g], "mig");
        if (!o)
            break;
        if (m->in_mig)
            cJSON_AddStringToObject(o, "method", m->method);
        if (m->has_idle)
            cJSON_AddNumberToObject(o, "idle_energy_joules", m->idle);
        cJSON *arr = cJSON_AddArrayToObject(o, "instances");
        for (int k = 0; arr && k < m->n; k++) {
            const struct mig_inst *x = &m->in[k];
            cJSON *e = cJSON_CreateObject();
            if (!e)
                break;
            cJSON_AddItemToArray(arr, e);
            cJSON_AddNumberToObject(e, "gpu_instance", atoi(x->gi));
            if (x->ci[0])
                cJSON_AddNumberToObject(e, "compute_instance", atoi(x->ci));
            cJSON_AddStringToObject(e, "mig_uuid", x->uuid);
            cJSON_AddNumberToObject(e, "energy_joules", x->energy);
            if (x->has_used)
                cJSON_AddNumberToObject(e, "memory_used_bytes", x->used);
            if (x->has_total)
                cJSON_AddNumberToObject(e, "memory_total_bytes", x->total);
            if (x->has_procs)
                cJSON_AddNumberToObject(e, "processes", x->procs);
            if (x->has_sm)
                cJSON_AddNumberToObject(e, "sm_active_ratio", x->sm);
        }
    }
    free(m);
}

char *wt_snapshot_json(const struct wt_batch *b, const struct wt_hub_collector *cs, size_t ncs,
                       int64_t t_ns, int pretty)
{
    cJSON *gobj[MAX_GPUS] = {NULL};
    struct view *v = malloc(sizeof *v);
    cJSON *root = cJSON_CreateObject();
    char *out = NULL;
    char ts[40], host[128] = "";
    if (!v || !root)
        goto done;
    build_view(v, b);
    wt_time_format(t_ns, 1, ts, sizeof ts);
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(root, "time", ts);
    cJSON_AddStringToObject(root, "host", host);
    cJSON_AddStringToObject(root, "version", WT_VERSION);

    cJSON *gpus = cJSON_AddArrayToObject(root, "gpus");
    for (int i = 0; i < v->ngpus; i++) {
        const struct gpu *g = &v->gpus[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(gpus, o);
        gobj[i] = o;
        cJSON_AddNumberToObject(o, "index", atoi(g->index));
        cJSON_AddStringToObject(o, "uuid", g->uuid);
        cJSON_AddStringToObject(o, "model", g->model);
        if (g->pci[0])
            cJSON_AddStringToObject(o, "pci_bus_id", g->pci);
        cJSON_AddBoolToObject(o, "up", g->up != 0);
        for (size_t f = 0; f < NFIELDS; f++) {
            if (g->has[f])
                cJSON_AddNumberToObject(o, gpu_fields[f].key, g->v[f]);
        }
        if (g->has_integrated)
            cJSON_AddNumberToObject(o, "energy_integrated_joules", g->energy_integrated);
        if (g->has[F_THROTTLE]) {
            cJSON *th = cJSON_AddArrayToObject(o, "throttled");
            char buf[256];
            snprintf(buf, sizeof buf, "%s", g->throttled);
            for (char *s = NULL, *tok = strtok_r(buf, ",", &s); tok; tok = strtok_r(NULL, ",", &s))
                cJSON_AddItemToArray(th, cJSON_CreateString(tok));
        }
    }
    int n;
    double p = total_gpu_power(v, &n);
    if (n)
        cJSON_AddNumberToObject(root, "gpu_power_watts", p);

    cJSON *cpu = cJSON_AddArrayToObject(root, "cpu");
    for (int i = 0; i < v->ndoms; i++) {
        const struct domain *d = &v->doms[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(cpu, o);
        cJSON_AddStringToObject(o, "package", d->package);
        cJSON_AddStringToObject(o, "domain", d->domain);
        if (d->has_energy)
            cJSON_AddNumberToObject(o, "energy_joules", d->energy);
        if (d->has_power)
            cJSON_AddNumberToObject(o, "power_watts", d->power);
    }
    p = total_cpu_power(v, &n);
    if (n)
        cJSON_AddNumberToObject(root, "cpu_power_watts", p);

    cJSON *h = cJSON_AddObjectToObject(root, "host");
    if (v->has_cpu_util)
        cJSON_AddNumberToObject(h, "cpu_utilization_ratio", v->cpu_util);
    if (v->has_mem_ratio)
        cJSON_AddNumberToObject(h, "memory_used_ratio", v->mem_ratio);
    if (v->has_mem_used)
        cJSON_AddNumberToObject(h, "memory_used_bytes", v->mem_used);
    if (v->has_mem_total)
        cJSON_AddNumberToObject(h, "memory_total_bytes", v->mem_total);
    averages_json(root, gobj, v, b);
    mig_json(gobj, v, b);

    struct fac_view *fv = malloc(sizeof *fv);
    if (fv) {
        build_fac(fv, b);
        fac_json(root, fv);
        free(fv);
    }
    struct hw_view *hv = malloc(sizeof *hv);
    if (hv) {
        build_hw(hv, b);
        hw_json(root, hv);
        free(hv);
    }

    cJSON *cols = cJSON_AddArrayToObject(root, "collectors");
    for (size_t i = 0; i < ncs; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(cols, o);
        cJSON_AddStringToObject(o, "name", cs[i].name);
        cJSON_AddBoolToObject(o, "present", cs[i].present);
        cJSON_AddBoolToObject(o, "up", cs[i].present && cs[i].up);
        cJSON_AddNumberToObject(o, "errors", (double)cs[i].errors);
        cJSON_AddNumberToObject(o, "interval_seconds", (double)cs[i].interval_ns / WT_NS_PER_S);
        if (cs[i].last_tick_mono)
            cJSON_AddNumberToObject(o, "duration_seconds", cs[i].duration_s);
    }
    out = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
done:
    cJSON_Delete(root);
    free(v);
    return out;
}

/* One right-aligned table cell: " " then v with `prec` decimals and a suffix, or "-". */
static void cell(FILE *f, int has, double v, int width, int prec, const char *suffix)
{
    char buf[48];
    if (has)
        snprintf(buf, sizeof buf, "%.*f%s", prec, v, suffix);
    else
        snprintf(buf, sizeof buf, "-");
    fprintf(f, " %*s", width, buf);
}

void wt_snapshot_print(FILE *f, const struct wt_batch *b, const struct wt_hub_collector *cs,
                       size_t ncs, int64_t t_ns)
{
    struct view *v = malloc(sizeof *v);
    char ts[40];
    if (!v)
        return;
    build_view(v, b);
    wt_time_format(t_ns, 0, ts, sizeof ts);
    fprintf(f, "wattage %s  %s\n\n", WT_VERSION, ts);

    const struct wt_hub_collector *nv = NULL;
    for (size_t i = 0; i < ncs; i++) {
        if (strcmp(cs[i].name, "nvml") == 0)
            nv = &cs[i];
    }
    if (v->ngpus) {
        fprintf(f, "%-3s %-22s %8s %14s %5s %5s %5s %5s %9s %8s %8s  %s\n", "GPU", "MODEL",
                "POWER W", "ENERGY J", "TEMP", "SLOW", "UTIL", "MEM", "MEM USED", "SM MHz",
                "LIMIT W", "THROTTLE");
        for (int i = 0; i < v->ngpus; i++) {
            const struct gpu *g = &v->gpus[i];
            fprintf(f, "%-3s %-22.22s", g->index, g->model);
            if (g->up == 0) {
                fprintf(f, " lost (not answering)\n");
                continue;
            }
            cell(f, g->has[F_POWER], g->v[F_POWER], 8, 1, "");
            cell(f, g->has[F_ENERGY], g->v[F_ENERGY], 14, 1, "");
            cell(f, g->has[F_TEMP], g->v[F_TEMP], 5, 0, "");
            cell(f, g->has[F_SLOWDOWN], g->v[F_SLOWDOWN], 5, 0, "");
            cell(f, g->has[F_UTIL], g->v[F_UTIL] * 100, 5, 0, "%");
            cell(f, g->has[F_MEM_UTIL], g->v[F_MEM_UTIL] * 100, 5, 0, "%");
            cell(f, g->has[F_MEM_USED], g->v[F_MEM_USED] / (1 << 30), 9, 1, "G");
            cell(f, g->has[F_SM_CLOCK], g->v[F_SM_CLOCK] / 1e6, 8, 0, "");
            cell(f, g->has[F_LIMIT], g->v[F_LIMIT], 8, 0, "");
            fprintf(f, "  %s\n",
                    g->has[F_THROTTLE] ? (g->throttled[0] ? g->throttled : "none") : "-");
        }
        int n;
        double p = total_gpu_power(v, &n);
        fprintf(f, "total GPU power: %.1f W over %d GPU%s\n", p, n, n == 1 ? "" : "s");
        /* Dark power, where the daemon measures it (audit/dark.h). */
        for (int i = 0; i < v->ngpus; i++) {
            const struct gpu *g = &v->gpus[i];
            if (!g->has[F_IDLE_TODAY_J])
                continue;
            fprintf(f, "GPU %s %s: %.3f kWh idle today (UTC)", g->index,
                    g->v[F_IDLE] != 0 ? "idle" : "busy", g->v[F_IDLE_TODAY_J] / 3.6e6);
            if (g->has[F_IDLE_POWER])
                fprintf(f, ", idle power level %.1f W (sensor +-5 W)", g->v[F_IDLE_POWER]);
            fprintf(f, "\n");
        }
        /* MIG instances, where a GPU is split (collect/nvml_mig.h). */
        struct mig_view *m = malloc(sizeof *m);
        for (int i = 0; m && i < v->ngpus; i++) {
            if (!mig_of(b, v->gpus[i].index, m) || !m->in_mig)
                continue;
            fprintf(f, "GPU %s MIG (split by %s): idle %.1f J\n", v->gpus[i].index, m->method,
                    m->idle);
            for (int k = 0; k < m->n; k++) {
                const struct mig_inst *x = &m->in[k];
                fprintf(f, "  gi %s ci %s %s: %.1f J", x->gi, x->ci[0] ? x->ci : "-", x->uuid,
                        x->energy);
                if (x->has_used && x->has_total)
                    fprintf(f, ", memory %.1f of %.1f GiB", x->used / (1 << 30),
                            x->total / (1 << 30));
                if (x->has_sm)
                    fprintf(f, ", SM %.0f%%", x->sm * 100);
                if (x->has_procs)
                    fprintf(f, ", %.0f process%s", x->procs, x->procs == 1 ? "" : "es");
                else
                    fprintf(f, " (gone)");
                fprintf(f, "\n");
            }
        }
        free(m);
        fprintf(f, "\n");
    } else {
        fprintf(f, "GPUs: unavailable (%s)\n\n",
                nv && !nv->present ? "no NVIDIA driver library found" : "none found");
    }

    if (v->ndoms) {
        fprintf(f, "%-8s %-8s %14s %9s\n", "PACKAGE", "DOMAIN", "ENERGY J", "POWER W");
        for (int i = 0; i < v->ndoms; i++) {
            const struct domain *d = &v->doms[i];
            fprintf(f, "%-8s %-8s", d->package, d->domain);
            cell(f, d->has_energy, d->energy, 14, 1, "");
            cell(f, d->has_power, d->power, 9, 1, "");
            fprintf(f, "\n");
        }
        fprintf(f, "\n");
    } else {
        fprintf(f, "CPU energy (RAPL): unavailable\n\n");
    }
    fprintf(f, "host: CPU");
    cell(f, v->has_cpu_util, v->cpu_util * 100, 0, 1, "%");
    fprintf(f, ", memory");
    cell(f, v->has_mem_ratio, v->mem_ratio * 100, 0, 1, "%");
    if (v->has_mem_used && v->has_mem_total)
        fprintf(f, " (%.1f of %.1f GiB)", v->mem_used / (1 << 30), v->mem_total / (1 << 30));
    fprintf(f, "\n");
    free(v);

    struct fac_view *fv = malloc(sizeof *fv);
    if (!fv)
        return;
    build_fac(fv, b);
    if (fv->nt) {
        fprintf(f, "\nfacility targets:");
        for (size_t i = 0; i < fv->nt; i++)
            fprintf(f, " %s:%s %s", fv->t[i].source, fv->t[i].target, fv->t[i].up ? "up" : "DOWN");
        fprintf(f, "\n");
    }
    if (fv->n) {
        fprintf(f, "%-16s %-24s %-10s %10s %12s %8s %8s %6s\n", "TARGET", "POINT", "KIND",
                "POWER W", "ENERGY kWh", "CURR A", "VOLT V", "TEMP");
        for (size_t i = 0; i < fv->n; i++) {
            const struct fac_point *p = &fv->p[i];
            fprintf(f, "%-16.16s %-24.24s %-10.10s", p->target, p->point, p->kind);
            cell(f, p->has[WT_M_FAC_POWER_W - FAC_FIRST], p->v[WT_M_FAC_POWER_W - FAC_FIRST], 10, 1,
                 "");
            cell(f, p->has[WT_M_FAC_ENERGY_J - FAC_FIRST],
                 p->v[WT_M_FAC_ENERGY_J - FAC_FIRST] / 3.6e6, 12, 3, "");
            cell(f, p->has[WT_M_FAC_CURRENT_A - FAC_FIRST], p->v[WT_M_FAC_CURRENT_A - FAC_FIRST], 8,
                 2, "");
            cell(f, p->has[WT_M_FAC_VOLTAGE_V - FAC_FIRST], p->v[WT_M_FAC_VOLTAGE_V - FAC_FIRST], 8,
                 1, "");
            cell(f, p->has[WT_M_FAC_TEMP_C - FAC_FIRST], p->v[WT_M_FAC_TEMP_C - FAC_FIRST], 6, 1,
                 "");
            fprintf(f, "\n");
        }
    }
    free(fv);
    struct hw_view *hv = malloc(sizeof *hv);
    if (hv) {
        build_hw(hv, b);
        hw_print(f, hv);
        free(hv);
    }
}
