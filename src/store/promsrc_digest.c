/* SPDX-License-Identifier: MIT */
/*
 * A window of the fleet's readings for a working store without every raw sample
 * (wt_promsrc_digest in promsrc.h).
 *
 * A counter X over [a, b] with the pad P: the grid T_k = T_0 + k S (T_0 = a + P, k = 1..M,
 * T_M <= b - P). Stored: the raw samples of R1 = [a - P, T_0], then per step k the last reading
 * of (T_{k-1}, T_k] stamped T_k (query_range of last_over_time(X[S])), then the raw samples of
 * R2 = (T_M, b + P]. Between two stored points a counter's increase is the sum of the raw
 * increases between them as long as no reset lies between, and the working store records no
 * daemon runs, so each segment is covered unless it falls (wt_segment): the window's energy and
 * coverage are those of the raw samples. Where that does not hold, the steps concerned are
 * replaced by their raw samples:
 *   - resets(X[2S]) > 0 at T_k (it sees each pair of readings closer than S: those inside step
 *     k and the last of step k-1 with the first of step k): steps k-1 and k; at T_{M+1}: step M;
 *   - a step without a reading between two with readings: from the step before it through the
 *     step after it (a pair of readings further apart than S, which resets() may not see);
 *   - the first and last steps with readings when R1 or R2 holds none, when R1's last reading
 *     is older than T_0 - S or not after a, when R2's first is later than T_M + S or after b
 *     (the segments across a and b are then real pairs of readings, prorated as the raw path).
 * Gauges are one point per chart step (query_range, avg_over_time or last_over_time).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/promsrc.h"
#include "store/promsrc_int.h"
#include "store/store.h"

#define DEFAULT_STEPS 16
#define DEFAULT_COLS 800

/* One series (node, labels) in the answers of one counter's queries. An engine may give a
 * series' labels in another order from one query to the next (VictoriaMetrics does): they are
 * matched as sets, by a hash that does not depend on their order. */
struct ref {
    const struct wt_promsrc_series *s;
    uint64_t key; /* the node's hash, plus each label pair's */
    int which;    /* 0 R1, 1 R2, 2 last per step, 3 resets per step */
};

static uint64_t labels_key(const char *node, const char *labels)
{
    char k[128], v[WT_LABELS_LEN];
    size_t pos = 0;
    uint64_t h = wt_promsrc_hash(WT_PROMSRC_HASH_SEED, node);
    while (wt_labels_next(labels, &pos, k, sizeof k, v, sizeof v) == 1)
        h += wt_promsrc_hash(wt_promsrc_hash(WT_PROMSRC_HASH_SEED, k), v);
    return h;
}

/* Whether two label strings hold the same pairs, in any order. */
static bool labels_same(const char *a, const char *b)
{
    char k[128], v[WT_LABELS_LEN], k2[128], v2[WT_LABELS_LEN];
    size_t pa = 0, na = 0, nb = 0;
    for (size_t pb = 0; wt_labels_next(b, &pb, k2, sizeof k2, v2, sizeof v2) == 1;)
        nb++;
    while (wt_labels_next(a, &pa, k, sizeof k, v, sizeof v) == 1) {
        bool found = false;
        na++;
        for (size_t pb = 0; !found && wt_labels_next(b, &pb, k2, sizeof k2, v2, sizeof v2) == 1;)
            found = strcmp(k, k2) == 0 && strcmp(v, v2) == 0;
        if (!found)
            return false;
    }
    return na == nb;
}

static bool ref_same(const struct ref *a, const struct ref *b)
{
    return a->key == b->key && strcmp(a->s->node, b->s->node) == 0 &&
           (strcmp(a->s->labels, b->s->labels) == 0 || labels_same(a->s->labels, b->s->labels));
}

static int cmp_ref(const void *x, const void *y)
{
    const struct ref *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    int c = strcmp(a->s->node, b->s->node);
    return c ? c : a->which - b->which;
}

/* A growable array of points. */
struct chain {
    struct wt_point *p;
    size_t n, cap;
};

static int chain_push(struct chain *c, int64_t t, double v)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? 2 * c->cap : 256;
        struct wt_point *np = realloc(c->p, nc * sizeof *np);
        if (!np)
            return -ENOMEM;
        c->p = np;
        c->cap = nc;
    }
    c->p[c->n].t_ns = t;
    c->p[c->n].v = v;
    c->n++;
    return 0;
}

static int cmp_point(const void *x, const void *y)
{
    const struct wt_point *a = x, *b = y;
    return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

/* The chain in time order, one point per stamp (ranges read twice overlap: the same samples). */
static void chain_sort(struct chain *c)
{
    size_t k = 0;
    qsort(c->p, c->n, sizeof *c->p, cmp_point);
    for (size_t i = 0; i < c->n; i++)
        if (k == 0 || c->p[i].t_ns > c->p[k - 1].t_ns)
            c->p[k++] = c->p[i];
    c->n = k;
}

int wt_promsrc_store_series(struct wt_store *st, const char *node, const char *metric,
                            const char *labels, const struct wt_point *p, size_t n,
                            struct wt_err *err)
{
    enum { BATCH = 2048 };
    int m = wt_metric_find(metric);
    if (m < 0 || !node[0] || n == 0)
        return 0; /* not a series of ours, or not a node's */
    struct wt_reading *r = malloc((n < BATCH ? n : BATCH) * sizeof *r);
    if (!r)
        return -ENOMEM;
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k += BATCH) {
        size_t nb = n - k < BATCH ? n - k : BATCH;
        for (size_t j = 0; j < nb; j++) {
            r[j].t_ns = p[k + j].t_ns;
            r[j].value = p[k + j].v;
            r[j].metric = (uint16_t)m;
            snprintf(r[j].labels, sizeof r[j].labels, "%s", labels);
        }
        rc = wt_store_write(st, node, r, nb);
    }
    free(r);
    if (rc)
        wt_err_set(err, "cannot copy %s's %s into the working store", node, metric);
    return rc;
}

/* The selector of one series: name{node="N",labels}; the node escaped. */
static void series_sel(char *out, size_t n, const char *name, const char *node, const char *labels)
{
    char esc[160];
    size_t k = 0;
    for (const char *c = node; *c && k + 2 < sizeof esc; c++) {
        if (*c == '"' || *c == '\\')
            esc[k++] = '\\';
        esc[k++] = *c;
    }
    esc[k] = '\0';
    snprintf(out, n, "%s{node=\"%s\"%s%s}", name, esc, labels[0] ? "," : "", labels);
}

struct cgrid {
    const char *name;
    int64_t a, b, pad, t0, step;
    size_t m;
    const int64_t *edges; /* inner edges, sorted */
    size_t ne;
};

/* The step index of a stamp of a query_range answer on the grid, or 0 when it is off it. */
static size_t step_of(const struct cgrid *g, int64_t t, size_t max)
{
    int64_t d = t - g->t0;
    if (d <= 0 || d % g->step)
        return 0;
    size_t k = (size_t)(d / g->step);
    return k <= max ? k : 0;
}

static int64_t grid_t(const struct cgrid *g, size_t k)
{
    return g->t0 + (int64_t)k * g->step;
}

/* Whether t lies within the pad of an inner edge (whose raw samples stand there). */
static bool near_edge(const struct cgrid *g, int64_t t)
{
    for (size_t j = 0; j < g->ne; j++)
        if (t >= g->edges[j] - g->pad && t <= g->edges[j] + g->pad)
            return true;
    return false;
}

/* Adds the samples of s within [lo, hi] to c; *n counts them. */
static int add_within(struct chain *c, const struct wt_promsrc_series *s, int64_t lo, int64_t hi,
                      size_t *n)
{
    int rc = 0;
    for (size_t i = 0; s && i < s->n && rc == 0; i++)
        if (s->pts[i].t_ns >= lo && s->pts[i].t_ns <= hi) {
            rc = chain_push(c, s->pts[i].t_ns, s->pts[i].v);
            (*n)++;
        }
    return rc;
}

/* Adds the raw samples of (lo, hi] of one series, read from the engine, to c. */
static int raw_run(struct wt_promsrc *p, const struct cgrid *g, const struct wt_promsrc_series *s,
                   int64_t lo, int64_t hi, struct chain *c, size_t *raw, struct wt_err *err)
{
    char sel[WT_LABELS_LEN + 320], q[WT_LABELS_LEN + 360];
    struct wt_promsrc_set set = {0};
    series_sel(sel, sizeof sel, g->name, s->node, s->labels);
    snprintf(q, sizeof q, "%s[%lldms]", sel, (long long)((hi - lo) / WT_NS_PER_MS));
    int rc = wt_promsrc_query(p, q, hi, &set, err);
    for (size_t i = 0; i < set.n && rc == 0; i++)
        if (strcmp(set.s[i].node, s->node) == 0 && labels_same(set.s[i].labels, s->labels))
            rc = add_within(c, &set.s[i], lo + 1, hi, raw);
    wt_promsrc_set_free(&set);
    return rc;
}

/* Marks the steps that meet [lo, hi]. */
static void need_span(const struct cgrid *g, bool *need, int64_t lo, int64_t hi)
{
    for (size_t k = 1; k <= g->m; k++)
        if (grid_t(g, k) >= lo && grid_t(g, k - 1) < hi)
            need[k] = true;
}

/*
 * One counter series' chain: R1, the steps (or their raw samples where needed), the inner
 * edges' raw samples, R2. part: R1, R2, the last reading per step, resets per step, then one
 * per inner edge.
 */
static int counter_chain(struct wt_promsrc *p, const struct cgrid *g,
                         const struct wt_promsrc_series *const *part, struct chain *c, size_t *raw,
                         struct wt_err *err)
{
    const struct wt_promsrc_series *r1 = part[0], *r2 = part[1], *l = part[2], *rs = part[3];
    size_t m = g->m;
    double *lv = calloc(m + 2, sizeof *lv);
    bool *has = calloc(m + 2, sizeof *has), *need = calloc(m + 2, sizeof *need);
    int rc = lv && has && need ? 0 : -ENOMEM;
    if (rc)
        goto out;
    /* R1's and R2's samples within their ranges */
    size_t n1 = 0, n2 = 0;
    int64_t last1 = 0, first2 = 0, tm = grid_t(g, m);
    for (size_t i = 0; r1 && i < r1->n; i++)
        if (r1->pts[i].t_ns >= g->a - g->pad && r1->pts[i].t_ns <= g->t0) {
            last1 = r1->pts[i].t_ns;
            n1++;
        }
    for (size_t i = r2 ? r2->n : 0; i-- > 0;)
        if (r2->pts[i].t_ns > tm && r2->pts[i].t_ns <= g->b + g->pad) {
            first2 = r2->pts[i].t_ns;
            n2++;
        }
    for (size_t i = 0; l && i < l->n; i++) {
        size_t k = step_of(g, l->pts[i].t_ns, m);
        if (k) {
            has[k] = true;
            lv[k] = l->pts[i].v;
        }
    }
    for (size_t i = 0; rs && i < rs->n; i++) {
        size_t k = step_of(g, rs->pts[i].t_ns, m + 1);
        if (k && rs->pts[i].v > 0) {
            need[k > m ? m : k] = true;
            need[k - 1] = true;
        }
    }
    size_t first = 0, last = 0;
    for (size_t k = 1; k <= m; k++)
        if (has[k]) {
            if (!first)
                first = k;
            last = k;
        }
    if (first) {
        /* readings further apart than a step: from the step before the gap through the one
         * after it, R1 standing at step 0 and R2 after step m */
        size_t prev = n1 ? 0 : first;
        for (size_t k = first; k <= last; k++) {
            if (!has[k])
                continue;
            for (size_t j = prev ? prev : 1; k - prev > 1 && j <= k; j++)
                need[j] = true;
            prev = k;
        }
        for (size_t j = last; n2 && last < m && j <= m; j++)
            need[j] = true;
        if (n2 && first2 > tm + g->step)
            need[last] = true;
        if (n1 == 0 || last1 <= g->a || last1 < g->t0 - g->step)
            need[first] = true;
        if (n2 == 0 || first2 > g->b)
            need[last] = true;
    } else if (n1 && n2) {
        for (size_t j = 1; j <= m; j++)
            need[j] = true; /* only R1 and R2: the pair across the window */
    }
    /* an inner edge without a reading within the pad on each side: the steps around it raw */
    for (size_t j = 0; j < g->ne && first; j++) {
        int64_t e = g->edges[j];
        const struct wt_promsrc_series *se = part[4 + j];
        bool before = false, after = false;
        for (size_t i = 0; se && i < se->n; i++) {
            before |= se->pts[i].t_ns >= e - g->pad && se->pts[i].t_ns <= e;
            after |= se->pts[i].t_ns > e && se->pts[i].t_ns <= e + g->pad;
        }
        if (!before || !after)
            need_span(g, need, e - g->pad - g->step, e + g->pad + g->step);
    }
    need[0] = false;
    size_t kept = 0;
    rc = add_within(c, r1, g->a - g->pad, g->t0, &kept);
    for (size_t j = 0; j < g->ne && rc == 0; j++)
        rc = add_within(c, part[4 + j], g->edges[j] - g->pad, g->edges[j] + g->pad, &kept);
    for (size_t k = 1; k <= m && rc == 0;) {
        if (need[k]) {
            size_t j = k;
            while (j + 1 <= m && need[j + 1])
                j++;
            rc = raw_run(p, g, l ? l : r1 ? r1 : r2, grid_t(g, k - 1), grid_t(g, j), c, raw, err);
            k = j + 1;
            continue;
        }
        /* a step's reading stands at its end: not where an edge's raw samples stand */
        if (has[k] && !near_edge(g, grid_t(g, k)))
            rc = chain_push(c, grid_t(g, k), lv[k]);
        k++;
    }
    if (rc == 0)
        rc = add_within(c, r2, tm + 1, g->b + g->pad, &kept);
    chain_sort(c);
out:
    free(lv);
    free(has);
    free(need);
    return rc;
}

/* Counter name over [a, b] into st, as the file's comment says; its series those of the
 * nodes that match (a name{node=~"..."} selector of one batch of nodes). *status: the HTTP
 * status of the batch's query that failed, before anything was stored (0: none failed). */
static int digest_counter(struct wt_promsrc *p, const char *name, const char *match, int64_t a,
                          int64_t b, size_t steps, const int64_t *edges, size_t ne,
                          struct wt_store *st, size_t *series, size_t *readings, long *status,
                          struct wt_err *err)
{
    struct cgrid g = {.name = name, .a = a, .b = b, .pad = p->o.pad_ns};
    size_t nset = 4 + ne;
    struct wt_promsrc_set *set = calloc(nset, sizeof *set);
    const struct wt_promsrc_series **part = calloc(nset, sizeof *part);
    struct ref *refs = NULL;
    struct chain c = {0};
    size_t ql = strlen(name) + strlen(match) + 96;
    char *q = malloc(ql);
    int rc = set && part && q ? 0 : -ENOMEM;
    /* the grid starts inside the window by the pad, or an eighth of a short window */
    int64_t off = (b - a) / 8 < g.pad ? (b - a) / 8 : g.pad;
    g.t0 = (a + off) / WT_NS_PER_MS * WT_NS_PER_MS;
    int64_t span = b - off - g.t0;
    g.step =
        span > 0 ? (span / (int64_t)steps + WT_NS_PER_MS - 1) / WT_NS_PER_MS * WT_NS_PER_MS : 0;
    g.m = g.step > 0 ? (size_t)(span / g.step) : 0;
    if (g.m < 2) {
        /* a window of a few steps: its raw samples */
        g.t0 = b + g.pad;
        g.m = 0;
        ne = 0;
    }
    g.edges = edges;
    g.ne = ne;
    snprintf(q, ql, "%s%s[%lldms]", name, match,
             (long long)((g.t0 - (a - g.pad)) / WT_NS_PER_MS + 1));
    if (rc == 0)
        rc = wt_promsrc_query_status(p, q, g.t0, &set[0], status, err);
    if (rc == 0 && g.m) {
        int64_t tm = grid_t(&g, g.m);
        snprintf(q, ql, "%s%s[%lldms]", name, match, (long long)((b + g.pad - tm) / WT_NS_PER_MS));
        rc = wt_promsrc_query_status(p, q, b + g.pad, &set[1], status, err);
        snprintf(q, ql, "last_over_time(%s%s[%lldms])", name, match,
                 (long long)(g.step / WT_NS_PER_MS));
        if (rc == 0)
            rc = wt_promsrc_query_range_status(p, q, g.t0 + g.step, tm, g.step, &set[2], status,
                                               err);
        snprintf(q, ql, "resets(%s%s[%lldms])", name, match,
                 (long long)(2 * g.step / WT_NS_PER_MS));
        if (rc == 0)
            rc = wt_promsrc_query_range_status(p, q, g.t0 + g.step, tm + g.step, g.step, &set[3],
                                               status, err);
        snprintf(q, ql, "%s%s[%lldms]", name, match, (long long)(2 * g.pad / WT_NS_PER_MS + 1));
        for (size_t j = 0; j < ne && rc == 0; j++)
            rc = wt_promsrc_query_status(p, q, edges[j] + g.pad, &set[4 + j], status, err);
    }
    if (rc == 0)
        *status = 0; /* what fails from here on is no query of the batch */
    size_t nref = 0, k = 0;
    for (size_t w = 0; w < nset && rc == 0; w++)
        nref += set[w].n;
    if (rc == 0 && nref && !(refs = malloc(nref * sizeof *refs)))
        rc = -ENOMEM;
    for (size_t w = 0; w < nset && rc == 0; w++)
        for (size_t i = 0; i < set[w].n; i++)
            refs[k++] = (struct ref){&set[w].s[i], labels_key(set[w].s[i].node, set[w].s[i].labels),
                                     (int)w};
    if (rc == 0 && nref)
        qsort(refs, nref, sizeof *refs, cmp_ref);
    for (size_t i = 0; i < nref && rc == 0; i++) {
        const struct wt_promsrc_series *s = refs[i].s;
        if (refs[i].which < 0)
            continue; /* taken by an earlier series */
        memset(part, 0, nset * sizeof *part);
        /* the series of refs[i]: the refs of its key that hold the same labels (those of a
         * collision of the hash stay for a series of their own) */
        for (size_t j = i; j < nref && refs[j].key == refs[i].key; j++) {
            if (refs[j].which >= 0 && !part[refs[j].which] && ref_same(&refs[j], &refs[i])) {
                part[refs[j].which] = refs[j].s;
                refs[j].which = -1;
            }
        }
        c.n = 0;
        size_t raw = 0;
        rc = counter_chain(p, &g, part, &c, &raw, err);
        if (rc == 0 && c.n) {
            rc = wt_promsrc_store_series(st, s->node, name, s->labels, c.p, c.n, err);
            (*series)++;
            *readings += c.n;
        }
    }
    free(c.p);
    free(q);
    free(refs);
    for (size_t w = 0; set && w < nset; w++)
        wt_promsrc_set_free(&set[w]);
    free(set);
    free(part);
    return rc;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* A gauge: one point per step of the chart, fn over the step (avg_over_time, last_over_time). */
static int digest_gauge(struct wt_promsrc *p, const char *fn, const char *name, const char *match,
                        int64_t a, int64_t b, int64_t step, struct wt_store *st, size_t *series,
                        size_t *readings, long *status, struct wt_err *err)
{
    struct wt_promsrc_set set = {0};
    size_t ql = strlen(fn) + strlen(name) + strlen(match) + 48;
    char *q = malloc(ql);
    if (!q)
        return -ENOMEM;
    snprintf(q, ql, "%s(%s%s[%lldms])", fn, name, match, (long long)(step / WT_NS_PER_MS));
    int64_t t0 = a / WT_NS_PER_MS * WT_NS_PER_MS + step;
    int rc = wt_promsrc_query_range_status(p, q, t0, t0 + (b - t0) / step * step, step, &set,
                                           status, err);
    free(q);
    if (rc == 0)
        *status = 0;
    for (size_t i = 0; i < set.n && rc == 0; i++) {
        const struct wt_promsrc_series *s = &set.s[i];
        rc = wt_promsrc_store_series(st, s->node, name, s->labels, s->pts, s->n, err);
        if (s->node[0] && s->n) {
            (*series)++;
            *readings += s->n;
        }
    }
    wt_promsrc_set_free(&set);
    return rc;
}

static int cmp_node(const void *x, const void *y)
{
    return strcmp(x, y);
}

/*
 * The nodes that hold any series named in d (counters, gauges) with a sample in [lo, hi], so the
 * digest's queries can name a batch of nodes each and what they answer follows the batch, not
 * the fleet. From the engine's index (the node label's values, GET /api/v1/label/node/values:
 * no sample read, so no limit on samples per query meets it; it may name a node whose series
 * have no sample in the window, whose queries then answer nothing); where the engine, or a proxy
 * before it, does not answer that (400, 404, 405), one series per node (group by node over the
 * window, which reads its samples). *nodes is malloc'd, sorted, each once; a series without a
 * node label is none of them.
 */
static int list_nodes(struct wt_promsrc *p, const struct wt_promsrc_digest *d, int64_t lo,
                      int64_t hi, char (**nodes)[64], size_t *n, struct wt_err *err)
{
    size_t ql = 96;
    *nodes = NULL;
    *n = 0;
    for (size_t k = 0; k < 2; k++)
        for (const char *const *x = k ? d->gauges : d->counters; x && *x; x++)
            ql += strlen(*x) + 1;
    char *q = malloc(ql);
    if (!q)
        return -ENOMEM;
    size_t off = (size_t)snprintf(q, ql, "group by (node) (last_over_time(");
    size_t sel = off;
    off += (size_t)snprintf(q + off, ql - off, "{__name__=~\"");
    bool first = true;
    for (size_t k = 0; k < 2; k++)
        for (const char *const *x = k ? d->gauges : d->counters; x && *x; x++) {
            off += (size_t)snprintf(q + off, ql - off, "%s%s", first ? "" : "|", *x);
            first = false;
        }
    snprintf(q + off, ql - off, "\"}");
    struct wt_promsrc_set set = {0};
    long status = 0;
    int rc =
        first ? 0 : wt_promsrc_label_values_status(p, "node", q + sel, lo, hi, &set, &status, err);
    if (rc == -EIO && (status == 400 || status == 404 || status == 405)) {
        wt_promsrc_set_free(&set);
        snprintf(q + off, ql - off, "\"}[%lldms]))", (long long)((hi - lo) / WT_NS_PER_MS + 1));
        rc = wt_promsrc_query(p, q, hi, &set, err);
    }
    free(q);
    if (rc == 0 && set.n && !(*nodes = malloc(set.n * sizeof **nodes)))
        rc = -ENOMEM;
    for (size_t i = 0; i < set.n && rc == 0; i++)
        if (set.s[i].node[0])
            memcpy((*nodes)[(*n)++], set.s[i].node, sizeof set.s[i].node);
    wt_promsrc_set_free(&set);
    if (*n)
        qsort(*nodes, *n, sizeof **nodes, cmp_node);
    size_t u = 0;
    for (size_t i = 0; i < *n; i++)
        if (u == 0 || strcmp((*nodes)[i], (*nodes)[u - 1]) != 0)
            memmove((*nodes)[u++], (*nodes)[i], sizeof **nodes);
    *n = u;
    return rc;
}

/* {node=~"A|B|..."} of nodes[0..n): each name literal in the regex (ASCII punctuation but _ and
 * - escaped for the engine's regex, then the escapes and quotes escaped for the PromQL string).
 * *out is malloc'd. */
static int node_match(const char (*nodes)[64], size_t n, char **out)
{
    size_t len = 16;
    for (size_t i = 0; i < n; i++)
        len += 4 * strlen(nodes[i]) + 1;
    char *m = malloc(len), *w = m;
    if (!m)
        return -ENOMEM;
    w += sprintf(w, "{node=~\"");
    for (size_t i = 0; i < n; i++) {
        if (i)
            *w++ = '|';
        for (const char *c = nodes[i]; *c; c++) {
            if (ispunct((unsigned char)*c) && *c != '_' && *c != '-') {
                *w++ = '\\'; /* the regex's escape, itself escaped in the string */
                *w++ = '\\';
                if (*c == '"' || *c == '\\')
                    *w++ = '\\';
            }
            *w++ = *c;
        }
    }
    strcpy(w, "\"}");
    *out = m;
    return 0;
}

/* One metric of the digest: a counter (fn NULL) or a gauge (fn over each chart step). */
struct one {
    const char *name, *fn;
    int64_t from, to, cstep;
    size_t steps, ne;
    const int64_t *edges;
    struct wt_store *st;
    size_t *series, *readings;
};

/*
 * x over the nodes nodes[0 .. n), named in its queries. A batch whose query the engine refuses
 * with 422 (its limit on samples or series per query; nothing of the batch is stored then) is
 * split in two and each half asked in turn, as a job's batches are (promsrc_job.c); one node's
 * refusal is the error, the engine's message with the query it refused.
 */
static int digest_one(struct wt_promsrc *p, const struct one *x, const char (*nodes)[64], size_t n,
                      struct wt_err *err)
{
    char *match = NULL;
    long status = 0;
    int rc = node_match(nodes, n, &match);
    if (rc == 0 && x->fn)
        rc = digest_gauge(p, x->fn, x->name, match, x->from, x->to, x->cstep, x->st, x->series,
                          x->readings, &status, err);
    else if (rc == 0)
        rc = digest_counter(p, x->name, match, x->from, x->to, x->steps, x->edges, x->ne, x->st,
                            x->series, x->readings, &status, err);
    free(match);
    if (rc == -EIO && status == 422 && n > 1) {
        size_t mid = n / 2;
        rc = digest_one(p, x, nodes, mid, err);
        if (rc == 0)
            rc = digest_one(p, x, nodes + mid, n - mid, err);
    } else if (rc == -EIO && status == 422) {
        wt_promsrc_alone(err, nodes[0], "digest");
    }
    return rc;
}

int wt_promsrc_digest(struct wt_promsrc *p, const struct wt_promsrc_digest *d, int64_t from,
                      int64_t to, struct wt_store *st, size_t *series, size_t *readings,
                      struct wt_err *err)
{
    int rc = 0;
    *series = *readings = 0;
    if (to <= from)
        return wt_err_set(err, "the window is empty: --to must be after --from");
    size_t steps = d->steps ? d->steps : DEFAULT_STEPS;
    int64_t cstep = d->chart_step_ns;
    if (cstep <= 0)
        cstep = (to - from) / DEFAULT_COLS;
    cstep = (cstep + WT_NS_PER_MS - 1) / WT_NS_PER_MS * WT_NS_PER_MS;
    if (cstep < WT_NS_PER_MS)
        cstep = WT_NS_PER_MS;
    /* the inner edges, sorted, once each */
    int64_t *edges = d->nedges ? malloc(d->nedges * sizeof *edges) : NULL;
    size_t ne = 0;
    if (d->nedges && !edges)
        return -ENOMEM;
    for (size_t i = 0; i < d->nedges; i++)
        if (d->edges[i] > from && d->edges[i] < to)
            edges[ne++] = d->edges[i];
    if (ne)
        qsort(edges, ne, sizeof *edges, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < ne; i++)
        if (u == 0 || edges[i] != edges[u - 1])
            edges[u++] = edges[i];
    /* batch by batch of nodes: the counters, then the gauges */
    char(*nodes)[64] = NULL;
    size_t nn = 0;
    int64_t pad = p->o.pad_ns;
    rc = list_nodes(p, d, from - pad, to + pad, &nodes, &nn, err);
    size_t batch = p->o.batch_nodes ? p->o.batch_nodes : nn;
    for (size_t lo = 0; lo < nn && rc == 0; lo += batch) {
        size_t hi = lo + batch < nn ? lo + batch : nn;
        struct one x = {.from = from,
                        .to = to,
                        .cstep = cstep,
                        .steps = steps,
                        .ne = u,
                        .edges = edges,
                        .st = st,
                        .series = series,
                        .readings = readings};
        for (size_t i = 0; d->counters && d->counters[i] && rc == 0; i++) {
            x.name = d->counters[i];
            rc = digest_one(p, &x, (const char(*)[64])nodes + lo, hi - lo, err);
        }
        for (size_t i = 0; d->gauges && d->gauges[i] && rc == 0; i++) {
            const char *name = d->gauges[i];
            size_t len = strlen(name);
            /* a chart's line is the mean of its column; limits, bit masks: the last reading */
            bool mean = (len > 6 && strcmp(name + len - 6, "_watts") == 0) ||
                        (len > 6 && strcmp(name + len - 6, "_ratio") == 0) ||
                        (len > 8 && strcmp(name + len - 8, "_celsius") == 0);
            if (strstr(name, "limit") || strstr(name, "slowdown"))
                mean = false;
            x.name = name;
            x.fn = mean ? "avg_over_time" : "last_over_time";
            rc = digest_one(p, &x, (const char(*)[64])nodes + lo, hi - lo, err);
        }
    }
    free(nodes);
    free(edges);
    if (rc == 0 && d->raw) {
        struct wt_promsrc_set set = {0};
        char q[512];
        snprintf(q, sizeof q, "%s[%lldms]", d->raw,
                 (long long)((to - from + 2 * pad) / 1000000 + 1));
        rc = wt_promsrc_query(p, q, to + pad, &set, err);
        for (size_t i = 0; i < set.n && rc == 0; i++) {
            const struct wt_promsrc_series *s = &set.s[i];
            rc = wt_promsrc_store_series(st, s->node, s->metric, s->labels, s->pts, s->n, err);
            if (s->node[0] && s->n && wt_metric_find(s->metric) >= 0) {
                (*series)++;
                *readings += s->n;
            }
        }
        wt_promsrc_set_free(&set);
    }
    return rc;
}
