/* SPDX-License-Identifier: MIT */
/*
 * Queries on the store: energy over an exact window (raw readings at the edges, per-minute
 * rollups inside, the segment rule of store/segment.h), series selection and the stored points
 * of a series.
 */
#include "store/query.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/uncert.h"

/* ---- series ---- */

static void fill_info(sqlite3_stmt *q, struct wt_series_info *si)
{
    si->id = sqlite3_column_int64(q, 0);
    snprintf(si->node, sizeof si->node, "%s", (const char *)sqlite3_column_text(q, 1));
    snprintf(si->metric, sizeof si->metric, "%s", (const char *)sqlite3_column_text(q, 2));
    snprintf(si->labels, sizeof si->labels, "%s", (const char *)sqlite3_column_text(q, 3));
    si->kind = (enum wt_series_kind)sqlite3_column_int(q, 4);
    si->rolled_to = sqlite3_column_int64(q, 5);
}

/* Every pair of want is in have. */
static bool labels_match(const char *want, const char *have)
{
    size_t pos = 0;
    char k[64], v[WT_LABELS_LEN], hv[WT_LABELS_LEN];
    int rc;
    while ((rc = wt_labels_next(want, &pos, k, sizeof k, v, sizeof v)) == 1) {
        if (wt_labels_get(have, k, hv, sizeof hv) != 0 || strcmp(v, hv) != 0)
            return false;
    }
    return rc == 0;
}

int wt_store_series(struct wt_store *st, const char *sel, bool energy_only,
                    struct wt_series_info **out, size_t *n, struct wt_err *err)
{
    char metric[96] = "", want[WT_LABELS_LEN] = "";
    sqlite3_stmt *q = NULL;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (!energy_only) {
        const char *br = strchr(sel, '{');
        size_t ml = br ? (size_t)(br - sel) : strlen(sel);
        if (ml == 0 || ml >= sizeof metric)
            return wt_err_set(err,
                              "series: expected METRIC or METRIC{key=\"value\",...} (got "
                              "\"%s\")",
                              sel);
        memcpy(metric, sel, ml);
        metric[ml] = '\0';
        if (br) {
            size_t bl = strlen(br);
            if (bl < 2 || br[bl - 1] != '}' || bl - 2 >= sizeof want)
                return wt_err_set(err, "series: unterminated label selector in \"%s\"", sel);
            memcpy(want, br + 1, bl - 2);
            want[bl - 2] = '\0';
            size_t pos = 0;
            char k[64], v[WT_LABELS_LEN];
            int rc;
            while ((rc = wt_labels_next(want, &pos, k, sizeof k, v, sizeof v)) == 1)
                ;
            if (rc < 0)
                return wt_err_set(err,
                                  "series: bad label selector in \"%s\" (expected "
                                  "key=\"value\" pairs)",
                                  sel);
        }
    }
    const char *sql = energy_only ? "SELECT id, node, metric, labels, kind, rolled_to FROM series "
                                    "WHERE kind != 0 ORDER BY node, metric, labels"
                                  : "SELECT id, node, metric, labels, kind, rolled_to FROM series "
                                    "WHERE metric = ?1 ORDER BY node, labels";
    if (sqlite3_prepare_v2(wt_store_db(st), sql, -1, &q, NULL) != SQLITE_OK)
        return wt_err_set(err, "store: %s", sqlite3_errmsg(wt_store_db(st))), -EIO;
    if (!energy_only)
        sqlite3_bind_text(q, 1, metric, -1, SQLITE_STATIC);
    while (sqlite3_step(q) == SQLITE_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            struct wt_series_info *p = realloc(*out, nc * sizeof *p);
            if (!p) {
                sqlite3_finalize(q);
                free(*out);
                *out = NULL;
                *n = 0;
                return -ENOMEM;
            }
            *out = p;
            cap = nc;
        }
        fill_info(q, &(*out)[*n]);
        if (!want[0] || labels_match(want, (*out)[*n].labels))
            (*n)++;
    }
    sqlite3_finalize(q);
    return 0;
}

/* ---- energy ---- */

/* Energy over [a, b] from raw readings: chunks by their summaries, or (WT_Q_DECODE) every
 * reading decoded. */
static int raw_energy(struct wt_store *st, const struct wt_series_info *si,
                      const struct wt_segment_rule *rule, int flags, int64_t a, int64_t b,
                      double *e, double *cov_ns)
{
    struct wt_point_buf pb = {0};
    int rc;
    if (b <= a)
        return 0;
    struct wt_window w = wt_window_begin(rule, a, b);
    if (!(flags & WT_Q_DECODE)) {
        rc = wt_store_window(st, si->id, true, &w);
    } else {
        rc = wt_store_read(st, si->id, a, b, WT_RD_EDGES, 0, &pb);
        for (size_t i = 0; rc == 0 && i < pb.n; i++)
            wt_window_add(&w, pb.p[i].t_ns, pb.p[i].v);
        free(pb.p);
    }
    *e += w.energy_j;
    *cov_ns += w.covered_ns;
    return rc;
}

/* Energy over [a, b) from rollups: whole minutes count fully, partial ones prorated. */
static int rollup_energy(struct wt_store *st, const struct wt_series_info *si, int64_t a, int64_t b,
                         double *e, double *cov_ns)
{
    struct wt_rollup *r = NULL;
    size_t n = 0;
    if (b <= a)
        return 0;
    int rc = wt_store_rollups(st, si->id, a, b, &r, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int64_t m = r[i].t_ns;
        int64_t lo = m > a ? m : a, hi = m + WT_MINUTE_NS < b ? m + WT_MINUTE_NS : b;
        if (hi <= lo)
            continue;
        double f = (double)(hi - lo) / (double)WT_MINUTE_NS;
        *e += r[i].energy * f;
        *cov_ns += (double)r[i].covered_ns * f;
    }
    free(r);
    return rc;
}

/*
 * An edge [a, b]: raw where raw readings remain, prorated rollups where they were pruned. The
 * minute that holds the oldest raw reading is read raw: its rollup has no energy before that
 * reading, either because the series began there (prorating would spread its energy over time
 * with no data, then count it again from the raw readings) or because the readings before it
 * in that minute were pruned (less than a minute left uncovered, which coverage says).
 */
static int edge_energy(struct wt_store *db, const struct wt_series_info *si,
                       const struct wt_segment_rule *rule, int flags, int64_t oldest, bool have_raw,
                       int64_t a, int64_t b, double *e, double *cov_ns)
{
    if (b <= a)
        return 0;
    if (!si->rolled_to || (have_raw && a >= wt_minute_floor(oldest)))
        return raw_energy(db, si, rule, flags, a, b, e, cov_ns);
    int64_t split = have_raw && oldest < b ? wt_minute_floor(oldest) : b;
    int rc = rollup_energy(db, si, a, split, e, cov_ns);
    if (rc == 0 && split < b)
        rc = raw_energy(db, si, rule, flags, split, b, e, cov_ns);
    return rc;
}

/* [a, b] by rollups for the whole minutes, raw readings at the edges (see edge_energy). */
static int rollup_window(struct wt_store *db, const struct wt_series_info *si,
                         const struct wt_segment_rule *rule, int flags, int64_t oldest,
                         bool have_raw, int64_t a, int64_t b, double *e, double *cov)
{
    int rc;
    int64_t m1 = wt_minute_floor(a);
    if (m1 < a)
        m1 += WT_MINUTE_NS;
    int64_t m2 = wt_minute_floor(b);
    if (m2 > si->rolled_to)
        m2 = si->rolled_to;
    if (m2 > m1) {
        rc = edge_energy(db, si, rule, flags, oldest, have_raw, a, m1, e, cov);
        if (rc == 0)
            rc = rollup_energy(db, si, m1, m2, e, cov);
        if (rc == 0)
            rc = edge_energy(db, si, rule, flags, oldest, have_raw, m2, b, e, cov);
    } else {
        rc = edge_energy(db, si, rule, flags, oldest, have_raw, a, b, e, cov);
    }
    return rc;
}

int wt_store_series_energy(struct wt_store *st, const struct wt_series_info *si,
                           const struct wt_run_list *runs, int64_t a, int64_t b, int flags,
                           double *energy_j, double *covered_s)
{
    struct wt_store *db = st;
    struct wt_segment_rule rule = wt_segment_rule_for(runs, si->node, si->kind);
    double e = 0, cov = 0;
    int rc = 0;

    *energy_j = 0;
    *covered_s = 0;
    if (flags & WT_Q_RAW_ONLY || !si->rolled_to) {
        rc = raw_energy(db, si, &rule, flags, a, b, &e, &cov);
    } else {
        int64_t oldest = 0, newest, rows0 = 0;
        int hr = wt_store_bounds(st, si->id, &oldest, &newest);
        int hw = hr < 0 ? hr : wt_store_rows_oldest(st, si->id, &rows0);
        if (hr < 0 || hw < 0)
            return -EIO;
        /* a gauge's rollups hold no energy: its answer stays what the rollups give */
        if (hr == 0 || (flags & WT_Q_DECODE) || si->kind == WT_SK_GAUGE) {
            rc = rollup_window(db, si, &rule, flags, oldest, hr > 0, a, b, &e, &cov);
        } else {
            /* The window in three parts (energy adds over any partition of it): to the end of
             * the minute of the oldest reading (pruned: rollups, whose minute holds the segment
             * from the last pruned reading), then to the minute of the oldest reading not
             * compacted (chunks: wt_store_window), then the rest (readings not compacted yet:
             * rollups inside, raw at the edges). */
            int64_t p = wt_minute_floor(oldest) + WT_MINUTE_NS;
            int64_t q = hw > 0 ? wt_minute_floor(rows0) : INT64_MAX;
            if (q < p)
                q = p;
            int64_t x = a > p ? a : p, y = b < q ? b : q, z = a > q ? a : q;
            if (a < p)
                rc = rollup_window(db, si, &rule, flags, oldest, true, a, b < p ? b : p, &e, &cov);
            if (rc == 0 && x < y)
                rc = raw_energy(db, si, &rule, flags, x, y, &e, &cov);
            if (rc == 0 && z < b)
                rc = rollup_window(db, si, &rule, flags, oldest, true, z, b, &e, &cov);
        }
    }
    *energy_j = e;
    *covered_s = cov / 1e9;
    return rc;
}

/* The key that groups a GPU's counter and integrated series: node + gpu + uuid. */
static bool gpu_key(const struct wt_series_info *si, char *key, size_t n)
{
    char gpu[32], uuid[128];
    if (!wt_metric_is_gpu_energy(si->metric))
        return false;
    if (wt_labels_get(si->labels, "gpu", gpu, sizeof gpu) != 0)
        return false;
    if (wt_labels_get(si->labels, "uuid", uuid, sizeof uuid) != 0)
        uuid[0] = '\0';
    snprintf(key, n, "%s\n%s\n%s", si->node, gpu, uuid);
    return true;
}

static long gpu_index(const struct wt_energy_row *r)
{
    char gpu[32];
    if (wt_labels_get(r->s.labels, "gpu", gpu, sizeof gpu) != 0)
        return -1;
    return strtol(gpu, NULL, 10);
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct wt_energy_row *a = pa, *b = pb;
    int c = strcmp(a->s.node, b->s.node);
    if (c)
        return c;
    bool ga = wt_metric_is_gpu_energy(a->s.metric);
    bool gb = wt_metric_is_gpu_energy(b->s.metric);
    if (ga != gb)
        return ga ? -1 : 1;
    if (ga) {
        long ia = gpu_index(a), ib = gpu_index(b);
        if (ia != ib)
            return ia < ib ? -1 : 1;
    }
    c = strcmp(a->s.metric, b->s.metric);
    return c ? c : strcmp(a->s.labels, b->s.labels);
}

bool wt_energy_counter_first(double counter_covered_s, double counter_coverage,
                             double integrated_covered_s)
{
    if (counter_coverage >= 1)
        return true;
    if (integrated_covered_s > counter_covered_s + WT_ENERGY_COVER_TOL_S)
        return false;
    return counter_covered_s > 0;
}

void wt_energy_choose(struct wt_energy_row *r, size_t ns)
{
    char ki[256], kj[256];
    for (size_t i = 0; i < ns; i++) {
        if (r[i].s.kind != WT_SK_INTEGRATED || !gpu_key(&r[i].s, ki, sizeof ki))
            continue;
        for (size_t j = 0; j < ns; j++) {
            if (j == i || r[j].s.kind != WT_SK_HWCOUNTER || !gpu_key(&r[j].s, kj, sizeof kj) ||
                strcmp(ki, kj) != 0)
                continue;
            if (wt_energy_counter_first(r[j].covered_s, r[j].coverage, r[i].covered_s)) {
                r[i].chosen = false;
            } else {
                r[j].chosen = false;
                if (r[j].covered_s > 0) {
                    r[i].counter_partial = true;
                    r[i].counter_coverage = r[j].coverage;
                }
            }
        }
    }
    qsort(r, ns, sizeof *r, row_cmp);
}

/* The readings store/uncert.c bounds the error with (wt_uncert_points_fn). */
struct uncert_ctx {
    struct wt_store *st;
    const struct wt_series_info *si;
    const struct wt_series_info *skew; /* the counter's read skew series (NULL: none) */
};
static int uncert_points(void *ctx, int64_t from, int64_t to, struct wt_point **pts, size_t *n)
{
    struct uncert_ctx *c = ctx;
    return wt_store_points(c->st, c->si, from, to, 0, pts, n);
}
static int uncert_skew(void *ctx, int64_t from, int64_t to, struct wt_point **pts, size_t *n)
{
    struct uncert_ctx *c = ctx;
    *pts = NULL;
    *n = 0;
    return c->skew ? wt_store_points(c->st, c->skew, from, to, 0, pts, n) : 0;
}

/* The read skew series of GPU energy counter si among sk[0..n) (same node and labels). */
static const struct wt_series_info *skew_of(const struct wt_series_info *si,
                                            const struct wt_series_info *sk, size_t n)
{
    if (strcmp(si->metric, wt_metrics[WT_M_GPU_ENERGY_J].name) != 0)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(sk[i].node, si->node) == 0 && strcmp(sk[i].labels, si->labels) == 0)
            return &sk[i];
    return NULL;
}

int wt_store_energy(struct wt_store *st, int64_t from, int64_t to, int flags,
                    struct wt_energy_row **rows, size_t *n, struct wt_err *err)
{
    struct wt_series_info *si = NULL, *sk = NULL;
    struct wt_run_list runs = {0};
    size_t ns = 0, nsk = 0;
    int rc;

    *rows = NULL;
    *n = 0;
    if (to <= from)
        return wt_err_set(err, "the window is empty: --to must be after --from");
    /* one read transaction: every statement sees the same snapshot while the writer rolls up
     * and prunes */
    if (sqlite3_exec(wt_store_db(st), "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return wt_err_set(err, "store: %s", sqlite3_errmsg(wt_store_db(st))), -EIO;
    /* the chunks decoded for the energy serve the error bars too */
    wt_store_cache(st, true);
    rc = wt_store_series(st, NULL, true, &si, &ns, err);
    if (rc == 0)
        rc = wt_store_series(st, wt_metrics[WT_M_GPU_ENERGY_READ_SKEW_S].name, false, &sk, &nsk,
                             err);
    if (rc)
        goto out;
    rc = wt_runs_load(st, &runs);
    if (rc)
        goto out;
    struct wt_energy_row *r = calloc(ns ? ns : 1, sizeof *r);
    if (!r) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < ns && rc == 0; i++) {
        r[i].s = si[i];
        r[i].method = si[i].kind == WT_SK_INTEGRATED ? "integrated" : "counter";
        rc = wt_store_series_energy(st, &si[i], &runs, from, to, flags, &r[i].energy_j,
                                    &r[i].covered_s);
        r[i].coverage = r[i].covered_s / ((double)(to - from) / 1e9);
        if (r[i].coverage > 1)
            r[i].coverage = 1;
        r[i].chosen = true;
        if (rc == 0) {
            struct uncert_ctx uc = {st, &si[i], skew_of(&si[i], sk, nsk)};
            struct wt_uncert u;
            rc = wt_uncert_series_bar(&si[i], &runs, uncert_points, uncert_skew, &uc, from, to,
                                      r[i].energy_j, r[i].covered_s, &u);
            r[i].uncertainty_j = u.total_j;
            r[i].sensor_j = u.sensor_j;
        }
    }
    if (rc) {
        free(r);
        wt_err_set(err, "store: query failed: %s", sqlite3_errmsg(wt_store_db(st)));
        goto out;
    }
    wt_energy_choose(r, ns);
    *rows = r;
    *n = ns;
out:
    wt_store_cache(st, false);
    sqlite3_exec(wt_store_db(st), "COMMIT", NULL, NULL, NULL);
    wt_runs_free(&runs);
    free(si);
    free(sk);
    return rc;
}

/* ---- points ---- */

static int push(struct wt_point **pts, size_t *n, size_t *cap, int64_t t, double v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        struct wt_point *p = realloc(*pts, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        *pts = p;
        *cap = nc;
    }
    (*pts)[*n].t_ns = t;
    (*pts)[*n].v = v;
    (*n)++;
    return 0;
}

int wt_store_points(struct wt_store *st, const struct wt_series_info *si, int64_t from, int64_t to,
                    int64_t step_ns, struct wt_point **pts, size_t *n)
{
    size_t cap = 0;
    int rc = 0;
    bool counter = si->kind != WT_SK_GAUGE;
    int64_t oldest = INT64_MAX, newest;

    *pts = NULL;
    *n = 0;
    rc = wt_store_bounds(st, si->id, &oldest, &newest);
    if (rc < 0)
        return -EIO;
    if (rc == 0)
        oldest = INT64_MAX;
    rc = 0;

    /* pruned part from rollups (only when the step is at least a minute) */
    if (step_ns >= WT_MINUTE_NS && from < oldest && si->rolled_to) {
        int64_t end = oldest < to ? oldest : to;
        struct wt_rollup *r = NULL;
        size_t nr = 0;
        if ((rc = wt_store_rollups(st, si->id, wt_minute_floor(from), end, &r, &nr)) != 0)
            return rc;
        int64_t bucket = INT64_MIN;
        double sum = 0, last = 0;
        int64_t cnt = 0;
        for (size_t i = 0; rc == 0 && i < nr; i++) {
            if (r[i].n <= 0 || r[i].t_ns < wt_minute_floor(from))
                continue;
            int64_t t = r[i].t_ns;
            int64_t b = from + (t - from) / step_ns * step_ns;
            if (t < from)
                b = from;
            if (b != bucket && cnt)
                rc = push(pts, n, &cap, bucket, counter ? last : sum / (double)cnt);
            if (b != bucket) {
                bucket = b;
                sum = 0;
                cnt = 0;
            }
            sum += r[i].mean;
            last = r[i].last;
            cnt++;
        }
        if (rc == 0 && cnt)
            rc = push(pts, n, &cap, bucket, counter ? last : sum / (double)cnt);
        free(r);
        if (rc)
            goto fail;
        from = end;
    }
    struct wt_point_buf pb = {0};
    if ((rc = wt_store_read(st, si->id, from, to, 0, 0, &pb)) != 0) {
        free(pb.p);
        goto fail;
    }
    int64_t bucket = INT64_MIN;
    double sum = 0, last = 0;
    int64_t cnt = 0;
    for (size_t i = 0; rc == 0 && i < pb.n; i++) {
        int64_t t = pb.p[i].t_ns;
        double v = pb.p[i].v;
        if (step_ns <= 0) {
            rc = push(pts, n, &cap, t, v);
            continue;
        }
        int64_t b = from + (t - from) / step_ns * step_ns;
        if (b != bucket && cnt)
            rc = push(pts, n, &cap, bucket, counter ? last : sum / (double)cnt);
        if (b != bucket) {
            bucket = b;
            sum = 0;
            cnt = 0;
        }
        sum += v;
        last = v;
        cnt++;
    }
    if (rc == 0 && cnt)
        rc = push(pts, n, &cap, bucket, counter ? last : sum / (double)cnt);
    free(pb.p);
    if (rc == 0)
        return 0;
fail:
    free(*pts);
    *pts = NULL;
    *n = 0;
    return rc;
}
