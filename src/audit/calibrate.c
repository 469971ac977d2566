/* SPDX-License-Identifier: MIT */
/*
 * Calibration against the wall: the least-squares line of wall power on chip power, its
 * intervals and verdict, and the model file; see calibrate.h.
 */
#include "audit/calibrate.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/reconcile.h"
#include "core/clock.h"
#include "core/durable.h"

double wt_calib_t95(size_t dof)
{
    static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                               2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                               2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                               2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (dof == 0)
        return NAN;
    if (dof <= sizeof t / sizeof t[0])
        return t[dof - 1];
    /* Beyond the table: 1.96 + 2.4 / dof is within 0.002 of the quantile at 40, 60 and 120. */
    return 1.96 + 2.4 / (double)dof;
}

int wt_calib_fit(const double *x, const double *y, size_t n, struct wt_calib_fit *out)
{
    memset(out, 0, sizeof *out);
    out->a_ci = out->b_ci = NAN;
    if (n < 2)
        return -EINVAL;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i]))
            return -EINVAL;
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0, syy = 0;
    out->chip_min_w = out->chip_max_w = x[0];
    for (size_t i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
        syy += (y[i] - my) * (y[i] - my);
        out->chip_min_w = fmin(out->chip_min_w, x[i]);
        out->chip_max_w = fmax(out->chip_max_w, x[i]);
    }
    out->n = n;
    out->b = sxx > 0 ? sxy / sxx : 0;
    out->a = my - out->b * mx;
    double sse = 0;
    for (size_t i = 0; i < n; i++) {
        double r = y[i] - out->a - out->b * x[i];
        sse += r * r;
        out->max_resid_w = fmax(out->max_resid_w, fabs(r));
    }
    out->r2 = syy > 0 ? 1 - sse / syy : 0;
    if (n >= 3) {
        double s = sqrt(sse / (double)(n - 2));
        double t = wt_calib_t95(n - 2);
        out->resid_sd_w = s;
        if (sxx > 0) {
            out->b_ci = t * s / sqrt(sxx);
            out->a_ci = t * s * sqrt(1.0 / (double)n + mx * mx / sxx);
        }
    }
    /* The verdict: the first reason found, in the order a person would check them. */
    double span = mx > 0 ? (out->chip_max_w - out->chip_min_w) / mx : 0;
    const char *why = NULL;
    char buf[128];
    if (n < 3) {
        why = "fewer than 3 steps: no interval";
    } else if (span < WT_CALIB_MIN_SPAN) {
        snprintf(buf, sizeof buf, "the steps moved the chips' power by %.1f%% only (%.0f..%.0f W)",
                 100 * span, out->chip_min_w, out->chip_max_w);
        why = buf;
    } else if (!(out->b - out->b_ci > 0)) {
        snprintf(buf, sizeof buf, "slope %.3f +- %.3f W/W is not above 0", out->b, out->b_ci);
        why = buf;
    } else if (out->r2 < WT_CALIB_MIN_R2) {
        snprintf(buf, sizeof buf, "the line explains %.0f%% of the wall's variation (R2 %.2f)",
                 100 * fmax(out->r2, 0), out->r2);
        why = buf;
    }
    out->tracks = why == NULL;
    if (why)
        snprintf(out->why, sizeof out->why, "wall does not track chip: %s", why);
    return 0;
}

bool wt_calib_fresh_add(struct wt_calib_fresh *f, int64_t t_ns, double w)
{
    if (t_ns > f->last_ns)
        f->last_ns = t_ns;
    if (t_ns < f->from_ns || t_ns > f->to_ns || (f->n && t_ns <= f->counted_ns) || !isfinite(w))
        return false;
    f->counted_ns = t_ns;
    f->sum_w += w;
    f->n++;
    return true;
}

double wt_calib_min_hold_s(double interval_s, double duration_s)
{
    double every = fmax(interval_s, duration_s);
    return every > 0 ? ceil(2 * WT_CALIB_MIN_FRESH * every - 1e-9) : 0;
}

int wt_calib_model_path(const struct wt_config *cfg, char *out, size_t n)
{
    const char *p = cfg->store.path;
    const char *slash = strrchr(p, '/');
    int len = slash ? (int)(slash - p) : 0;
    int w = slash ? snprintf(out, n, "%.*s/calibration.json", len, p)
                  : snprintf(out, n, "calibration.json");
    return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static cJSON *model_json(const struct wt_calib_model *m)
{
    cJSON *o = cJSON_CreateObject();
    char ts[40];
    wt_time_format(m->t_ns, 0, ts, sizeof ts);
    cJSON_AddStringToObject(o, "node", m->node);
    cJSON_AddStringToObject(o, "wall", m->wall);
    cJSON_AddStringToObject(o, "chip", m->chip);
    cJSON_AddStringToObject(o, "date", ts);
    cJSON_AddNumberToObject(o, "time_ns", (double)m->t_ns);
    cJSON_AddNumberToObject(o, "points", (double)m->fit.n);
    cJSON_AddNumberToObject(o, "a_watts", m->fit.a);
    cJSON_AddNumberToObject(o, "b", m->fit.b);
    cJSON_AddNumberToObject(o, "a_ci_watts", isfinite(m->fit.a_ci) ? m->fit.a_ci : -1);
    cJSON_AddNumberToObject(o, "b_ci", isfinite(m->fit.b_ci) ? m->fit.b_ci : -1);
    cJSON_AddNumberToObject(o, "residual_sd_watts", m->fit.resid_sd_w);
    cJSON_AddNumberToObject(o, "max_residual_watts", m->fit.max_resid_w);
    cJSON_AddNumberToObject(o, "r2", m->fit.r2);
    cJSON_AddNumberToObject(o, "chip_min_watts", m->fit.chip_min_w);
    cJSON_AddNumberToObject(o, "chip_max_watts", m->fit.chip_max_w);
    cJSON_AddBoolToObject(o, "tracks", m->fit.tracks);
    if (m->fit.why[0])
        cJSON_AddStringToObject(o, "why", m->fit.why);
    return o;
}

static int num(const cJSON *o, const char *k, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(x))
        return -EINVAL;
    *v = x->valuedouble;
    return 0;
}

static int str(const cJSON *o, const char *k, char *out, size_t n)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(x) || strlen(x->valuestring) >= n)
        return -EINVAL;
    snprintf(out, n, "%s", x->valuestring);
    return 0;
}

static int model_parse(const cJSON *o, struct wt_calib_model *m, const char **bad)
{
    double t = 0, pts = 0, aci = 0, bci = 0;
    memset(m, 0, sizeof *m);
    /* clang-format off */
    if ((*bad = "node", str(o, "node", m->node, sizeof m->node)) ||
        (*bad = "wall", str(o, "wall", m->wall, sizeof m->wall)) ||
        (*bad = "chip", str(o, "chip", m->chip, sizeof m->chip)) ||
        (*bad = "time_ns", num(o, "time_ns", &t)) ||
        (*bad = "points", num(o, "points", &pts)) ||
        (*bad = "a_watts", num(o, "a_watts", &m->fit.a)) ||
        (*bad = "b", num(o, "b", &m->fit.b)) ||
        (*bad = "a_ci_watts", num(o, "a_ci_watts", &aci)) ||
        (*bad = "b_ci", num(o, "b_ci", &bci)) ||
        (*bad = "residual_sd_watts", num(o, "residual_sd_watts", &m->fit.resid_sd_w)) ||
        (*bad = "r2", num(o, "r2", &m->fit.r2)))
        return -EINVAL;
    /* clang-format on */
    (void)num(o, "max_residual_watts", &m->fit.max_resid_w);
    (void)num(o, "chip_min_watts", &m->fit.chip_min_w);
    (void)num(o, "chip_max_watts", &m->fit.chip_max_w);
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(o, "tracks");
    *bad = "tracks";
    if (!cJSON_IsBool(tr) || pts < 0)
        return -EINVAL;
    m->fit.tracks = cJSON_IsTrue(tr);
    (void)str(o, "why", m->fit.why, sizeof m->fit.why);
    m->t_ns = (int64_t)t;
    m->fit.n = (size_t)pts;
    m->fit.a_ci = aci < 0 ? NAN : aci;
    m->fit.b_ci = bci < 0 ? NAN : bci;
    return 0;
}

int wt_calib_load(const char *path, struct wt_calib_model *m, size_t cap, size_t *n,
                  struct wt_err *err)
{
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        int e = -errno;
        wt_err_set(err, "%s: %s", path, strerror(-e));
        return e;
    }
    char *buf = malloc(1 << 20);
    size_t len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!buf)
        return wt_err_set(err, "%s: out of memory", path), -ENOMEM;
    buf[len] = '\0';
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    const cJSON *arr = root ? cJSON_GetObjectItemCaseSensitive(root, "models") : NULL;
    int rc = 0;
    if (!cJSON_IsArray(arr)) {
        wt_err_set(err, "%s: not a calibration file (no \"models\" list)", path);
        rc = -EINVAL;
        goto done;
    }
    size_t i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        const char *bad = "";
        if (*n < cap && model_parse(o, &m[*n], &bad) != 0) {
            wt_err_set(err, "%s: models[%zu].%s: missing or not valid", path, i, bad);
            rc = -EINVAL;
            goto done;
        }
        if (*n < cap)
            (*n)++;
        i++;
    }
done:
    cJSON_Delete(root);
    return rc;
}

int wt_calib_save(const char *path, const struct wt_calib_model *m, size_t n, struct wt_err *err)
{
    struct wt_calib_model *all = calloc(WT_CALIB_MAX_MODELS, sizeof *all);
    size_t na = 0;
    int rc;
    if (!all)
        return wt_err_set(err, "%s: out of memory", path), -ENOMEM;
    if ((rc = wt_calib_load(path, all, WT_CALIB_MAX_MODELS, &na, err)) != 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < na && strcmp(all[k].node, m[i].node) != 0)
            k++;
        if (k == na && na == WT_CALIB_MAX_MODELS) {
            wt_err_set(err, "%s: more than %d nodes", path, WT_CALIB_MAX_MODELS);
            rc = -ENOSPC;
            goto done;
        }
        all[k] = m[i];
        if (k == na)
            na++;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "models");
    for (size_t i = 0; i < na; i++)
        cJSON_AddItemToArray(arr, model_json(&all[i]));
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s) {
        wt_err_set(err, "%s: out of memory", path);
        rc = -ENOMEM;
        goto done;
    }
    rc = wt_durable_replace(path, s, strlen(s), "the calibration", err);
    free(s);
done:
    free(all);
    return rc;
}

int wt_calib_apply(const struct wt_config *cfg, struct wt_recon_node *nodes, size_t n,
                   double window_s, size_t *used, struct wt_err *err)
{
    char path[WT_PATH_LEN + 32];
    size_t nm = 0;
    int rc;
    *used = 0;
    if (wt_calib_model_path(cfg, path, sizeof path) != 0) {
        wt_err_set(err, "%s: the calibration model's path is too long", cfg->store.path);
        return -ENAMETOOLONG;
    }
    struct wt_calib_model *m = calloc(WT_CALIB_MAX_MODELS, sizeof *m);
    if (!m)
        return -ENOMEM;
    if ((rc = wt_calib_load(path, m, WT_CALIB_MAX_MODELS, &nm, err)) == 0) {
        wt_recon_apply_models(nodes, n, m, nm, window_s);
        *used = nm;
    }
    free(m);
    return rc;
}
