/* SPDX-License-Identifier: MIT */
/*
 * Chip-vs-wall reconciliation (reconcile.h): per node, the wall meters against the sum of the
 * node's own GPU, CPU package and DRAM energy over a window and over its pieces.
 */
#include "audit/reconcile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/calibrate.h"
#include "audit/meters.h"
#include "core/log.h"
#include "core/reading.h"

static const struct wt_node_chips *chips_of(const struct wt_node_chips *c, size_t n,
                                            const char *node);

/* Pieces of a window for the share over time: long windows get longer pieces. */
#define MAX_PIECES 120

void wt_recon_judge(struct wt_recon_node *n, double chips_tolerance, double drift_bound,
                    double min_coverage)
{
    /* a wall or chips read over less of the window would compare different spans */
    n->chips_exceed_wall = n->wall_j > 0 && n->wall_coverage >= min_coverage &&
                           n->chips_coverage >= min_coverage &&
                           n->chips_j > n->wall_j * (1 + chips_tolerance);
    n->share_drift = n->pieces >= 2 && n->share_max - n->share_min > drift_bound;
}

bool wt_recon_complete(const struct wt_recon_node *n)
{
    return n->wall_j > 0 && n->wall_coverage >= WT_RECON_FULL_COVERAGE &&
           n->chips_coverage >= WT_RECON_FULL_COVERAGE;
}

/* The node's wall energy over [a, b]: its pdu_outlet meters, else its bmc meters, else its own
 * hwmon wall sensors (own: its entry of wt_meters_chips over [a, b], or NULL). */
static int wall(struct wt_meter_set *ms, const struct wt_topology *t, const char *node, int64_t a,
                int64_t b, const struct wt_node_chips *own, double *j, double *cov, int *meters,
                const char **from)
{
    static const enum wt_role order[] = {WT_ROLE_PDU_OUTLET, WT_ROLE_BMC};
    *j = 0;
    *cov = 0;
    *meters = 0;
    *from = NULL;
    for (int o = 0; o < 2 && !*meters; o++) {
        double cmin = 1;
        for (size_t i = 0; i < t->nmeters; i++) {
            const struct wt_meter *m = &t->meters[i];
            if (m->role != order[o] || strcmp(m->node, node) != 0)
                continue;
            double e, c;
            int pts;
            enum wt_meter_method how;
            int rc = wt_meters_energy(ms, i, a, b, &e, &c, &pts, &how);
            if (rc)
                return rc;
            *j += e;
            if (c < cmin)
                cmin = c;
            (*meters)++;
            *from = wt_role_name(order[o]);
        }
        if (*meters)
            *cov = cmin;
    }
    if (!*meters && own && own->wall_series) {
        *j = own->wall_j;
        *cov = own->wall_coverage;
        *meters = own->wall_series;
        *from = WT_RECON_WALL_HWMON;
    }
    return 0;
}

static const struct wt_node_chips *chips_of(const struct wt_node_chips *c, size_t n,
                                            const char *node)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].node, node) == 0)
            return &c[i];
    return NULL;
}

static int cmp_node(const void *pa, const void *pb)
{
    const struct wt_recon_node *a = pa, *b = pb;
    return strcmp(a->node, b->node);
}

int wt_recon_compute(struct wt_meter_set *ms, const struct wt_topology *t, int64_t a, int64_t b,
                     struct wt_recon_node **out, size_t *n)
{
    struct wt_recon_node *r = NULL;
    struct wt_node_chips *chips = NULL;
    const char **names = NULL;
    size_t nr = 0, nc = 0;
    int rc = 0;
    *out = NULL;
    *n = 0;
    /* every node's own sensors: its hwmon wall where it has no wall meter */
    if ((rc = wt_meters_chips(ms, a, b, NULL, 0, &chips, &nc)) != 0)
        return rc;
    /* the nodes with wall meters, then those with a hwmon wall sensor */
    for (size_t i = 0; i < t->nmeters + nc; i++) {
        const char *node;
        if (i < t->nmeters) {
            const struct wt_meter *m = &t->meters[i];
            if (m->role != WT_ROLE_PDU_OUTLET && m->role != WT_ROLE_BMC)
                continue;
            node = m->node;
        } else {
            if (!chips[i - t->nmeters].wall_series)
                continue;
            node = chips[i - t->nmeters].node;
        }
        size_t k = 0;
        while (k < nr && strcmp(r[k].node, node) != 0)
            k++;
        if (k < nr)
            continue;
        struct wt_recon_node *nn = realloc(r, (nr + 1) * sizeof *nn);
        if (!nn) {
            rc = -ENOMEM;
            goto fail;
        }
        r = nn;
        memset(&r[nr], 0, sizeof r[nr]);
        snprintf(r[nr].node, sizeof r[nr].node, "%s", node);
        nr++;
    }
    if (!nr) {
        free(chips);
        return 0;
    }

    double win_s = (double)(b - a) / 1e9;
    names = calloc(nr, sizeof *names);
    if (!names) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t k = 0; k < nr; k++)
        names[k] = r[k].node;
    for (size_t k = 0; k < nr; k++) {
        struct wt_recon_node *x = &r[k];
        const struct wt_node_chips *c = chips_of(chips, nc, x->node);
        if ((rc = wall(ms, t, x->node, a, b, c, &x->wall_j, &x->wall_coverage, &x->wall_meters,
                       &x->wall_from)) != 0)
            goto fail;
        if (c) {
            x->gpu_j = c->gpu_j;
            x->cpu_j = c->cpu_j;
            x->dram_j = c->dram_j;
            x->chip_series = c->series;
            x->chips_coverage = c->coverage;
            x->psu_series = c->psu_series;
            x->psu_in_j = c->psu_in_j;
            x->psu_out_j = c->psu_out_j;
            x->psu_loss_j = c->psu_in_j - c->psu_out_j;
            x->psu_loss_share = c->psu_in_j > 0 ? x->psu_loss_j / c->psu_in_j : 0;
        }
        x->chips_j = x->gpu_j + x->cpu_j + x->dram_j;
        x->unaccounted_j = x->wall_j - x->chips_j;
        x->unaccounted_w = win_s > 0 ? x->unaccounted_j / win_s : 0;
        x->share = x->wall_j > 0 ? x->unaccounted_j / x->wall_j : 0;
    }
    free(chips);
    chips = NULL;

    /* the pieces: the share over time */
    int64_t piece = t->reconcile_interval_ns;
    if (piece <= 0 || piece > b - a)
        piece = b - a;
    if ((b - a) / piece > MAX_PIECES)
        piece = (b - a + MAX_PIECES - 1) / MAX_PIECES;
    for (int64_t p0 = a; p0 < b; p0 += piece) {
        int64_t p1 = p0 + piece < b ? p0 + piece : b;
        if ((rc = wt_meters_chips(ms, p0, p1, names, nr, &chips, &nc)) != 0)
            goto fail;
        for (size_t k = 0; k < nr; k++) {
            struct wt_recon_node *x = &r[k];
            double wj, wc;
            int wm;
            const char *wf;
            const struct wt_node_chips *c = chips_of(chips, nc, x->node);
            if ((rc = wall(ms, t, x->node, p0, p1, c, &wj, &wc, &wm, &wf)) != 0)
                goto fail;
            if (wj <= 0 || wc < t->min_coverage)
                continue;
            if (!c || c->coverage < t->min_coverage)
                continue;
            double cj = c->gpu_j + c->cpu_j + c->dram_j;
            double s = (wj - cj) / wj;
            if (!x->pieces || s < x->share_min)
                x->share_min = s;
            if (!x->pieces || s > x->share_max)
                x->share_max = s;
            x->pieces++;
        }
        free(chips);
        chips = NULL;
    }
    for (size_t k = 0; k < nr; k++)
        wt_recon_judge(&r[k], t->chips_tolerance, t->drift_bound, t->min_coverage);
    qsort(r, nr, sizeof *r, cmp_node);
    free(names);
    *out = r;
    *n = nr;
    return 0;
fail:
    free(names);
    free(chips);
    free(r);
    return rc;
}

void wt_recon_against_model(const struct wt_calib_fit *f, double chips_w, double wall_w,
                            struct wt_recon_model_check *out)
{
    out->predicted_w = f->a + f->b * chips_w;
    out->unaccounted_w = out->predicted_w - chips_w;
    out->departure_w = wall_w - out->predicted_w;
    out->bound_w = fmax(3 * f->resid_sd_w, 0.02 * fabs(out->predicted_w));
    out->drift = fabs(out->departure_w) > out->bound_w;
}

void wt_recon_apply_models(struct wt_recon_node *nodes, size_t n, const struct wt_calib_model *m,
                           size_t nm, double window_s)
{
    for (size_t i = 0; i < n; i++) {
        struct wt_recon_node *x = &nodes[i];
        x->has_model = false;
        const struct wt_calib_model *md = NULL;
        for (size_t k = 0; k < nm; k++)
            if (strcmp(m[k].node, x->node) == 0 && m[k].fit.tracks)
                md = &m[k];
        if (!md || window_s <= 0 || !wt_recon_complete(x))
            continue;
        /* the chips as the model was fitted: the GPUs alone, or GPUs + CPU packages + DRAM */
        double chips_w = (strcmp(md->chip, "gpu") == 0 ? x->gpu_j : x->chips_j) / window_s;
        struct wt_recon_model_check c;
        wt_recon_against_model(&md->fit, chips_w, x->wall_j / window_s, &c);
        x->has_model = true;
        x->model_t_ns = md->t_ns;
        x->model_predicted_w = c.predicted_w;
        x->model_unaccounted_w = c.unaccounted_w;
        x->model_departure_w = c.departure_w;
        x->model_bound_w = c.bound_w;
        x->model_drift = c.drift;
    }
}

/* The slot of node in d, created when absent; NULL when the table is full. */
static int drift_slot(struct wt_recon_drift *d, const char *node, bool create)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->s[i].node, node) == 0)
            return (int)i;
    if (!create || d->n == WT_RECON_DRIFT_NODES)
        return -1;
    memset(&d->s[d->n], 0, sizeof d->s[d->n]);
    snprintf(d->s[d->n].node, sizeof d->s[d->n].node, "%s", node);
    return (int)d->n++;
}

int wt_recon_drift_step(struct wt_recon_drift *d, const char *node, bool beyond, int64_t now_ns)
{
    int i = drift_slot(d, node, true);
    if (i < 0)
        return 0;
    if (!beyond) {
        bool was = d->s[i].firing;
        d->s[i].beyond_since_ns = 0;
        d->s[i].firing = false;
        return was ? -1 : 0;
    }
    if (!d->s[i].beyond_since_ns)
        d->s[i].beyond_since_ns = now_ns;
    if (!d->s[i].firing && now_ns - d->s[i].beyond_since_ns >= d->sustain_ns) {
        d->s[i].firing = true;
        return 1;
    }
    return 0;
}

bool wt_recon_drift_firing(const struct wt_recon_drift *d, const char *node)
{
    int i = drift_slot((struct wt_recon_drift *)d, node, false);
    return i >= 0 && d->s[i].firing;
}

int wt_recon_export_models(struct wt_recon_node *nodes, size_t n, const struct wt_calib_model *m,
                           size_t nm, double window_s, struct wt_recon_drift *d, int64_t now_ns,
                           struct wt_batch *b)
{
    char lb[WT_LABELS_LEN];
    int rc = 0;
    wt_recon_apply_models(nodes, n, m, nm, window_s);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct wt_recon_node *x = &nodes[i];
        if (!x->has_model || wt_labels(lb, sizeof lb, "node", x->node, NULL) != 0)
            continue;
        int ch = wt_recon_drift_step(d, x->node, x->model_drift, now_ns);
        int k = drift_slot(d, x->node, false);
        double since_s = k >= 0 && d->s[k].beyond_since_ns
                             ? (double)(now_ns - d->s[k].beyond_since_ns) / 1e9
                             : 0;
        if (ch > 0)
            wt_warn("kpi",
                    "node %s: the wall departs from its calibration model beyond the bound for "
                    "%.0f s (drift): wall %.1f W, model %.1f W, departure %+.1f W, bound %.1f W",
                    x->node, since_s, x->model_predicted_w + x->model_departure_w,
                    x->model_predicted_w, x->model_departure_w, x->model_bound_w);
        else if (ch < 0)
            wt_info("kpi",
                    "node %s: the wall is back within its calibration model's bound (drift "
                    "ended): departure %+.1f W, bound %.1f W",
                    x->node, x->model_departure_w, x->model_bound_w);
        if ((rc = wt_batch_add(b, WT_M_NODE_MODEL_PREDICTED_W, lb, now_ns, x->model_predicted_w)) ||
            (rc = wt_batch_add(b, WT_M_NODE_MODEL_DEPARTURE_W, lb, now_ns, x->model_departure_w)) ||
            (rc = wt_batch_add(b, WT_M_NODE_MODEL_BOUND_W, lb, now_ns, x->model_bound_w)) ||
            (rc = wt_batch_add(b, WT_M_NODE_MODEL_DRIFT, lb, now_ns,
                               wt_recon_drift_firing(d, x->node) ? 1 : 0)))
            break;
    }
    return rc;
}
