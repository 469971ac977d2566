/* SPDX-License-Identifier: MIT */
/*
 * The energy of facility meters and of the nodes' own sensors over exact windows (meters.h):
 * counters through the store's exact-window query first, power integration only as a fallback.
 */
#include "audit/meters.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/query.h"
#include "store/store.h"

#define POINT_KEY 200

struct point {
    char key[POINT_KEY]; /* source \n target \n point */
    int gap_src;         /* index into t->power_gap_ns */
    bool has_counter, has_integrated, has_power;
    struct wt_series_info counter, integrated, power;
};

struct meter_res {
    struct point *p;
    size_t n;
};

struct chip;

struct wt_meter_set {
    struct wt_store *st;
    const struct wt_topology *t;
    struct wt_run_list runs;
    struct meter_res *m; /* one per t->meters */
    struct chip *chips;  /* the nodes' own sensors (wt_meters_chips), resolved on first use */
    size_t nchips;
    bool chips_ready;
};

const char *wt_meter_method_name(enum wt_meter_method m)
{
    static const char *const names[] = {"none", "counter", "integrated", "power"};
    return m <= WT_MM_POWER ? names[m] : "?";
}

static void point_key(const char *labels, char *key, size_t n, int *gap_src)
{
    char src[32] = "", tgt[64] = "", pt[64] = "";
    (void)wt_labels_get(labels, "source", src, sizeof src);
    (void)wt_labels_get(labels, "target", tgt, sizeof tgt);
    (void)wt_labels_get(labels, "point", pt, sizeof pt);
    snprintf(key, n, "%s\n%s\n%s", src, tgt, pt);
    *gap_src = strcmp(src, "redfish") == 0  ? 1
               : strcmp(src, "modbus") == 0 ? 2
               : strcmp(src, "ipmi") == 0   ? 3
                                            : 0;
}

/* Adds series si to meter res as its counter, integrated or power series. */
static int add_series(struct meter_res *res, const struct wt_series_info *si, int what)
{
    char key[POINT_KEY];
    int gs;
    point_key(si->labels, key, sizeof key, &gs);
    size_t k = 0;
    while (k < res->n && strcmp(res->p[k].key, key) != 0)
        k++;
    if (k == res->n) {
        struct point *np = realloc(res->p, (res->n + 1) * sizeof *np);
        if (!np)
            return -ENOMEM;
        res->p = np;
        memset(&np[k], 0, sizeof np[k]);
        snprintf(np[k].key, sizeof np[k].key, "%s", key);
        np[k].gap_src = gs;
        res->n++;
    }
    struct point *p = &res->p[k];
    if (what == WT_MM_COUNTER && !p->has_counter) {
        p->counter = *si;
        p->has_counter = true;
    } else if (what == WT_MM_INTEGRATED && !p->has_integrated) {
        p->integrated = *si;
        p->has_integrated = true;
    } else if (what == WT_MM_POWER && !p->has_power) {
        p->power = *si;
        p->has_power = true;
    }
    return 0;
}

int wt_meters_open(struct wt_store *st, const struct wt_topology *t, struct wt_meter_set **out,
                   struct wt_err *err)
{
    static const char *const metrics[] = {
        "wattage_facility_energy_joules_total",      "wattage_facility_power_watts",
        "wattage_facility_water_cubic_meters_total", "wattage_facility_heat_joules_total",
        "wattage_facility_fuel_cubic_meters_total",  "wattage_facility_fuel_kilograms_total"};
    struct wt_series_info *si[6] = {NULL};
    size_t ns[6] = {0};
    int rc = 0;
    struct wt_meter_set *ms = calloc(1, sizeof *ms);
    *out = NULL;
    if (!ms || !(ms->m = calloc(t->nmeters ? t->nmeters : 1, sizeof *ms->m))) {
        free(ms);
        return -ENOMEM;
    }
    ms->st = st;
    ms->t = t;
    if (wt_runs_load(st, &ms->runs) != 0) {
        wt_err_set(err, "store: cannot read the runs table");
        rc = -EIO;
        goto out;
    }
    for (int k = 0; k < 6; k++)
        if ((rc = wt_store_series(st, metrics[k], false, &si[k], &ns[k], err)) != 0)
            goto out;
    for (size_t i = 0; i < t->nmeters && rc == 0; i++) {
        const struct wt_meter *m = &t->meters[i];
        /* which metrics a role reads: water and heat have their own counters */
        int lo = 0, hi = 1;
        if (m->role == WT_ROLE_WATER || m->role == WT_ROLE_WATER_POTABLE)
            lo = hi = 2;
        else if (wt_role_is_heat(m->role))
            lo = hi = 3;
        else if (m->role == WT_ROLE_FUEL)
            lo = hi = wt_fuel_by_mass(m->fuel) ? 5 : 4;
        for (int k = lo; k <= hi && rc == 0; k++) {
            for (size_t j = 0; j < ns[k] && rc == 0; j++) {
                const struct wt_series_info *s = &si[k][j];
                if (!wt_meter_matches(m, s->labels))
                    continue;
                int what = k == 1                        ? WT_MM_POWER
                           : s->kind == WT_SK_INTEGRATED ? WT_MM_INTEGRATED
                                                         : WT_MM_COUNTER;
                rc = add_series(&ms->m[i], s, what);
            }
        }
    }
out:
    for (int k = 0; k < 6; k++)
        free(si[k]);
    if (rc) {
        wt_meters_close(ms);
        return rc;
    }
    *out = ms;
    return 0;
}

void wt_meters_close(struct wt_meter_set *ms)
{
    if (!ms)
        return;
    if (ms->m)
        for (size_t i = 0; i < ms->t->nmeters; i++)
            free(ms->m[i].p);
    free(ms->m);
    free(ms->chips);
    wt_runs_free(&ms->runs);
    free(ms);
}

void wt_power_integrate(const int64_t *t_ns, const double *w, size_t n, int64_t a, int64_t b,
                        int64_t gap_ns, double *j, double *covered_s)
{
    double e = 0, cov = 0;
    for (size_t i = 1; i < n; i++) {
        int64_t t0 = t_ns[i - 1], t1 = t_ns[i];
        if (t1 <= t0 || (gap_ns > 0 && t1 - t0 > gap_ns))
            continue;
        int64_t lo = t0 > a ? t0 : a, hi = t1 < b ? t1 : b;
        if (hi <= lo)
            continue;
        double span = (double)(t1 - t0);
        double p_lo = w[i - 1] + (w[i] - w[i - 1]) * (double)(lo - t0) / span;
        double p_hi = w[i - 1] + (w[i] - w[i - 1]) * (double)(hi - t0) / span;
        e += (p_lo + p_hi) / 2 * (double)(hi - lo) / 1e9;
        cov += (double)(hi - lo) / 1e9;
    }
    *j = e;
    *covered_s = cov;
}

/* Growable (t, v) arrays. */
struct pts {
    int64_t *t;
    double *v;
    size_t n, cap;
};

static int pts_push(struct pts *p, int64_t t, double v)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 256;
        int64_t *nt = realloc(p->t, nc * sizeof *nt);
        if (!nt)
            return -ENOMEM;
        p->t = nt;
        double *nv = realloc(p->v, nc * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        p->v = nv;
        p->cap = nc;
    }
    p->t[p->n] = t;
    p->v[p->n] = v;
    p->n++;
    return 0;
}

static void pts_free(struct pts *p)
{
    free(p->t);
    free(p->v);
}

/* Raw readings of series id in [a, b] with the one before a and the one after b, appended
 * after what p holds (only those later than its last point). */
static int raw_points(struct wt_meter_set *ms, int64_t id, int64_t a, int64_t b, struct pts *p)
{
    struct wt_point_buf pb = {0};
    int rc = wt_store_read(ms->st, id, a, b, WT_RD_EDGES, 0, &pb);
    for (size_t i = 0; rc == 0 && i < pb.n; i++) {
        if (p->n && pb.p[i].t_ns <= p->t[p->n - 1])
            continue;
        rc = pts_push(p, pb.p[i].t_ns, pb.p[i].v);
    }
    free(pb.p);
    return rc;
}

/*
 * Where raw readings of si no longer reach back to a (pruned after store.retention.raw), the
 * per-minute rollups stand in for [a, *split): *split is a when raw readings cover a.
 */
static int pruned_split(struct wt_meter_set *ms, const struct wt_series_info *si, int64_t a,
                        int64_t b, int64_t *split)
{
    int64_t raw0 = INT64_MAX, raw1;
    *split = a;
    if (!si->rolled_to)
        return 0;
    int rc = wt_store_bounds(ms->st, si->id, &raw0, &raw1);
    if (rc < 0)
        return -EIO;
    if (rc == 0)
        raw0 = INT64_MAX;
    if (raw0 <= a)
        return 0;
    /* the minute holding the oldest raw reading comes from its rollup too */
    int64_t s = raw0 == INT64_MAX ? si->rolled_to : wt_minute_floor(raw0 - 1) + WT_MINUTE_NS;
    if (s > si->rolled_to)
        s = si->rolled_to;
    *split = s < a ? a : s > b ? b : s;
    return 0;
}

enum rollup_col { COL_MEAN, COL_MIN, COL_LAST };

/* The rollups of si for the minutes that overlap [a, b): column col (mean or last) per minute. */
static int rollup_rows(struct wt_meter_set *ms, const struct wt_series_info *si, int64_t a,
                       int64_t b, enum rollup_col col, struct pts *p)
{
    struct wt_rollup *r = NULL;
    size_t n = 0;
    int rc = wt_store_rollups(ms->st, si->id, a, b, &r, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (r[i].n <= 0)
            continue;
        double v = col == COL_MEAN ? r[i].mean : col == COL_MIN ? r[i].min : r[i].last;
        rc = pts_push(p, r[i].t_ns, v);
    }
    free(r);
    return rc;
}

/* Power readings of si over [a, b] integrated (rollup means where raw readings were pruned). */
static int power_energy(struct wt_meter_set *ms, const struct wt_series_info *si, int64_t gap_ns,
                        int64_t a, int64_t b, double *j, double *cov_s)
{
    struct pts p = {0};
    int64_t split;
    int rc;
    *j = 0;
    *cov_s = 0;
    if ((rc = pruned_split(ms, si, a, b, &split)) != 0)
        return rc;
    if (split > a) {
        /* each minute's mean power over its overlap with the window */
        if ((rc = rollup_rows(ms, si, a, split, COL_MEAN, &p)) != 0)
            goto out;
        for (size_t i = 0; i < p.n; i++) {
            int64_t lo = p.t[i] > a ? p.t[i] : a;
            int64_t hi = p.t[i] + WT_MINUTE_NS < split ? p.t[i] + WT_MINUTE_NS : split;
            if (hi > lo) {
                *j += p.v[i] * (double)(hi - lo) / 1e9;
                *cov_s += (double)(hi - lo) / 1e9;
            }
        }
        p.n = 0;
    }
    if (split < b && (rc = raw_points(ms, si->id, split, b, &p)) == 0) {
        double e, c;
        wt_power_integrate(p.t, p.v, p.n, split, b, gap_ns, &e, &c);
        *j += e;
        *cov_s += c;
    }
out:
    pts_free(&p);
    return rc;
}

/*
 * A counter the store keeps as a gauge (water, in cubic metres): the counter rule over its raw
 * readings, and over the last value of each rolled-up minute where raw readings were pruned.
 */
static int gauge_counter(struct wt_meter_set *ms, const struct wt_series_info *si, int64_t a,
                         int64_t b, double *d, double *cov_s)
{
    struct wt_series_info s = *si;
    struct pts p = {0};
    int64_t split;
    int rc;
    *d = 0;
    *cov_s = 0;
    s.kind = WT_SK_COUNTER;
    if ((rc = pruned_split(ms, si, a, b, &split)) != 0)
        return rc;
    if (split == a) {
        s.rolled_to = 0; /* its rollups hold no deltas: raw readings only */
        return wt_store_series_energy(ms->st, &s, &ms->runs, a, b, 0, d, cov_s);
    }
    /* a minute's least value at its start and its last value at its end: the minute's own
     * increase, and the one across its end to the next minute's first reading */
    struct pts rmin = {0}, rlast = {0};
    if ((rc = rollup_rows(ms, si, a, split, COL_MIN, &rmin)) == 0 &&
        (rc = rollup_rows(ms, si, a, split, COL_LAST, &rlast)) == 0 && rmin.n == rlast.n) {
        for (size_t i = 0; i < rmin.n && rc == 0; i++) {
            rc = pts_push(&p, rmin.t[i], rmin.v[i]);
            if (rc == 0)
                rc = pts_push(&p, rlast.t[i] + WT_MINUTE_NS - 1, rlast.v[i]);
        }
    }
    pts_free(&rmin);
    pts_free(&rlast);
    if (rc == 0)
        rc = raw_points(ms, si->id, split, b, &p);
    struct wt_segment_rule rule = wt_segment_rule_for(&ms->runs, si->node, WT_SK_COUNTER);
    for (size_t i = 1; rc == 0 && i < p.n; i++) {
        int64_t t0 = p.t[i - 1], t1 = p.t[i];
        int64_t lo = t0 > a ? t0 : a, hi = t1 < b ? t1 : b;
        if (hi <= lo)
            continue;
        double delta;
        bool covered;
        wt_segment(&rule, t0, p.v[i - 1], t1, p.v[i], &delta, &covered);
        *d += delta * (double)(hi - lo) / (double)(t1 - t0);
        if (covered)
            *cov_s += (double)(hi - lo) / 1e9;
    }
    pts_free(&p);
    return rc;
}

/*
 * Whether an energy counter counts in steps too coarse for the window: PDUs and BMCs often count
 * in 0.1 kWh or 1 kWh (360 kJ, 3.6 MJ), more than a node draws in minutes. Such a counter stands
 * still at most polls; its step is the least increase between its raw readings in the window.
 * Coarse when it rose at fewer than half of the polls and the window's energy e is less than
 * WT_METER_MIN_STEPS steps (the error of a step would exceed 1/WT_METER_MIN_STEPS).
 */
static int too_coarse(struct wt_meter_set *ms, const struct wt_series_info *si, int64_t a,
                      int64_t b, double e, bool *coarse)
{
    struct wt_point_buf pb = {0};
    double step = 0, prev = 0;
    bool have = false;
    int n = 0, rises = 0;
    *coarse = false;
    int rc = wt_store_read(ms->st, si->id, a, b, 0, 0, &pb);
    for (size_t i = 0; rc == 0 && i < pb.n; i++) {
        double v = pb.p[i].v;
        if (have && v > prev) {
            rises++;
            if (step == 0 || v - prev < step)
                step = v - prev;
        }
        prev = v;
        have = true;
        n++;
    }
    free(pb.p);
    if (rc != 0)
        return rc;
    /* a counter that rises at most polls counts finer than a poll's energy: not coarse */
    *coarse = 2 * rises < n - 1 && step > 0 && e < WT_METER_MIN_STEPS * step;
    return 0;
}

int wt_meters_energy(struct wt_meter_set *ms, size_t i, int64_t a, int64_t b, double *j,
                     double *coverage, int *points, enum wt_meter_method *method)
{
    const struct meter_res *res = &ms->m[i];
    double win_s = (double)(b - a) / 1e9, total = 0, cov_min = res->n ? 1 : 0;
    *method = WT_MM_NONE;
    for (size_t k = 0; k < res->n; k++) {
        const struct point *p = &res->p[k];
        double e = 0, cs = 0;
        enum wt_meter_method how = WT_MM_NONE;
        int rc;
        if (p->has_counter) {
            if (p->counter.kind == WT_SK_GAUGE)
                rc = gauge_counter(ms, &p->counter, a, b, &e, &cs);
            else
                rc = wt_store_series_energy(ms->st, &p->counter, &ms->runs, a, b, 0, &e, &cs);
            if (rc != 0)
                return rc;
            how = WT_MM_COUNTER;
            bool coarse = false;
            if (cs > 0 && p->has_power && p->counter.kind != WT_SK_GAUGE &&
                (rc = too_coarse(ms, &p->counter, a, b, e, &coarse)) != 0)
                return rc;
            if (coarse)
                cs = 0; /* its power readings say more over this window */
        }
        if (cs <= 0 && p->has_integrated) {
            if ((rc = wt_store_series_energy(ms->st, &p->integrated, &ms->runs, a, b, 0, &e,
                                             &cs)) != 0)
                return rc;
            how = WT_MM_INTEGRATED;
        }
        if (cs <= 0 && p->has_power) {
            if ((rc = power_energy(ms, &p->power, ms->t->power_gap_ns[p->gap_src], a, b, &e,
                                   &cs)) != 0)
                return rc;
            how = WT_MM_POWER;
        }
        if (k == 0)
            *method = how;
        total += e;
        double c = win_s > 0 ? cs / win_s : 0;
        if (c > 1)
            c = 1;
        if (c < cov_min)
            cov_min = c;
    }
    *j = total;
    *coverage = cov_min;
    *points = (int)res->n;
    return 0;
}

static struct wt_node_chips *node_slot(struct wt_node_chips **arr, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*arr)[i].node, name) == 0)
            return &(*arr)[i];
    struct wt_node_chips *na = realloc(*arr, (*n + 1) * sizeof *na);
    if (!na)
        return NULL;
    *arr = na;
    memset(&na[*n], 0, sizeof na[*n]);
    snprintf(na[*n].node, sizeof na[*n].node, "%s", name);
    na[*n].coverage = 1;
    na[*n].wall_coverage = 1;
    na[*n].psu_coverage = 1;
    return &na[(*n)++];
}

/* What a node's own sensors are: resolved once per meter set. */
struct chip {
    struct wt_series_info s;
    const char *node; /* the store's node, "" named t->node */
    int which;        /* 0 GPU, 1 CPU package, 2 DRAM, 3 wall, 4 psu_in, 5 psu_out (CHIP_*) */
    bool hwmon;       /* a hwmon sensor (collect/hwmon.h) */
    int alt;          /* a GPU counter's integrated series (index), or -1 */
    bool skip;        /* an integrated series whose GPU has a counter: used through it */
};

enum { CHIP_GPU, CHIP_CPU, CHIP_DRAM, CHIP_WALL, CHIP_PSU_IN, CHIP_PSU_OUT };

/* Which figure a hwmon energy series feeds, from its role; -1: none (module, the rails, the GPUs
 * the GPU collectors read, other). */
static int hwmon_which(const char *labels)
{
    char role[16];
    if (wt_labels_get(labels, "role", role, sizeof role) != 0)
        return -1;
    return strcmp(role, "wall") == 0      ? CHIP_WALL
           : strcmp(role, "cpu") == 0     ? CHIP_CPU
           : strcmp(role, "psu_in") == 0  ? CHIP_PSU_IN
           : strcmp(role, "psu_out") == 0 ? CHIP_PSU_OUT
                                          : -1;
}

int wt_meters_has_hwmon_wall(struct wt_store *st, bool *yes)
{
    struct wt_series_info *si = NULL;
    size_t ns = 0;
    struct wt_err err = {{0}};
    *yes = false;
    int rc = wt_store_series(st, "wattage_hwmon_energy_joules_total", false, &si, &ns, &err);
    if (rc)
        return rc == -ENOMEM ? rc : -EIO;
    for (size_t i = 0; i < ns && !*yes; i++)
        *yes = hwmon_which(si[i].labels) == CHIP_WALL;
    free(si);
    return 0;
}

static bool gpu_key_eq(const struct wt_series_info *x, const struct wt_series_info *y)
{
    char gx[32], gy[32], ux[128] = "", uy[128] = "";
    if (strcmp(x->node, y->node) != 0 || wt_labels_get(x->labels, "gpu", gx, sizeof gx) != 0 ||
        wt_labels_get(y->labels, "gpu", gy, sizeof gy) != 0 || strcmp(gx, gy) != 0)
        return false;
    (void)wt_labels_get(x->labels, "uuid", ux, sizeof ux);
    (void)wt_labels_get(y->labels, "uuid", uy, sizeof uy);
    return strcmp(ux, uy) == 0;
}

static int chips_resolve(struct wt_meter_set *ms)
{
    struct wt_series_info *si = NULL;
    size_t ns = 0;
    struct wt_err err = {{0}};
    int rc = wt_store_series(ms->st, NULL, true, &si, &ns, &err);
    if (rc)
        return rc == -ENOMEM ? rc : -EIO;
    ms->chips = calloc(ns ? ns : 1, sizeof *ms->chips);
    if (!ms->chips) {
        free(si);
        return -ENOMEM;
    }
    for (size_t i = 0; i < ns; i++) {
        int which;
        bool hw = false;
        char d[32];
        if (wt_metric_is_gpu_energy(si[i].metric)) {
            which = 0;
        } else if (strcmp(si[i].metric, "wattage_hwmon_energy_joules_total") == 0) {
            if ((which = hwmon_which(si[i].labels)) < 0)
                continue;
            hw = true;
        } else if (strcmp(si[i].metric, "wattage_cpu_energy_joules_total") == 0 &&
                   wt_labels_get(si[i].labels, "domain", d, sizeof d) == 0) {
            if (strcmp(d, "package") == 0)
                which = 1;
            else if (strcmp(d, "dram") == 0)
                which = 2;
            else
                continue; /* core and uncore are within package; psys holds everything */
        } else {
            continue;
        }
        struct chip *c = &ms->chips[ms->nchips++];
        c->s = si[i];
        c->which = which;
        c->hwmon = hw;
        c->alt = -1;
    }
    free(si);
    /* a node's CPU from hwmon (Grace) only where it has no RAPL package */
    for (size_t i = 0; i < ms->nchips; i++) {
        struct chip *c = &ms->chips[i];
        if (!c->hwmon || c->which != CHIP_CPU)
            continue;
        for (size_t k = 0; k < ms->nchips && !c->skip; k++)
            c->skip = !ms->chips[k].hwmon && ms->chips[k].which == CHIP_CPU &&
                      strcmp(ms->chips[k].s.node, c->s.node) == 0;
    }
    /* per GPU the hardware counter, or its integrated series by wt_energy_counter_first (the
     * rule of wt_store_energy) */
    for (size_t i = 0; i < ms->nchips; i++) {
        struct chip *c = &ms->chips[i];
        c->node = c->s.node[0] ? c->s.node : ms->t->node;
        if (c->which != 0 || c->s.kind != WT_SK_INTEGRATED)
            continue;
        for (size_t k = 0; k < ms->nchips; k++) {
            struct chip *h = &ms->chips[k];
            if (h->which == 0 && h->s.kind == WT_SK_HWCOUNTER && gpu_key_eq(&h->s, &c->s)) {
                h->alt = (int)i;
                c->skip = true;
                break;
            }
        }
    }
    ms->chips_ready = true;
    return 0;
}

int wt_meters_chips(struct wt_meter_set *ms, int64_t a, int64_t b, const char *const *nodes,
                    size_t nnodes, struct wt_node_chips **out, size_t *n)
{
    double win_s = (double)(b - a) / 1e9;
    int rc = 0;
    *out = NULL;
    *n = 0;
    if (!ms->chips_ready && (rc = chips_resolve(ms)) != 0)
        return rc;
    for (size_t i = 0; i < ms->nchips && rc == 0; i++) {
        const struct chip *c = &ms->chips[i];
        if (c->skip)
            continue;
        if (nodes) {
            size_t k = 0;
            while (k < nnodes && strcmp(nodes[k], c->node) != 0)
                k++;
            if (k == nnodes)
                continue;
        }
        double e = 0, cs = 0;
        rc = wt_store_series_energy(ms->st, &c->s, &ms->runs, a, b, 0, &e, &cs);
        if (rc == 0 && c->alt >= 0 && cs < win_s - WT_ENERGY_COVER_TOL_S) {
            /* a counter that covers part of the window: its integrated series where that covers
             * more (wt_energy_counter_first) */
            double ie = 0, ics = 0;
            rc =
                wt_store_series_energy(ms->st, &ms->chips[c->alt].s, &ms->runs, a, b, 0, &ie, &ics);
            if (rc == 0 && !wt_energy_counter_first(cs, cs / win_s, ics)) {
                e = ie;
                cs = ics;
            }
        }
        if (rc)
            break;
        struct wt_node_chips *nc = node_slot(out, n, c->node);
        if (!nc) {
            rc = -ENOMEM;
            break;
        }
        double cov = win_s > 0 ? cs / win_s : 0;
        if (cov > 1)
            cov = 1;
        if (c->which == CHIP_WALL) {
            nc->wall_j += e;
            nc->wall_series++;
            if (cov < nc->wall_coverage)
                nc->wall_coverage = cov;
            continue;
        }
        if (c->which == CHIP_PSU_IN || c->which == CHIP_PSU_OUT) {
            *(c->which == CHIP_PSU_IN ? &nc->psu_in_j : &nc->psu_out_j) += e;
            nc->psu_series++;
            if (cov < nc->psu_coverage)
                nc->psu_coverage = cov;
            continue;
        }
        if (c->which == CHIP_GPU)
            nc->gpu_j += e;
        else if (c->which == CHIP_CPU)
            nc->cpu_j += e;
        else
            nc->dram_j += e;
        nc->series++;
        if (cov < nc->coverage)
            nc->coverage = cov;
    }
    /* a node with hwmon meters only has no chips to cover anything */
    for (size_t i = 0; rc == 0 && i < *n; i++) {
        if (!(*out)[i].series)
            (*out)[i].coverage = 0;
        if (!(*out)[i].wall_series)
            (*out)[i].wall_coverage = 0;
        if (!(*out)[i].psu_series)
            (*out)[i].psu_coverage = 0;
    }
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
