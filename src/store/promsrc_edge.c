/* SPDX-License-Identifier: MIT */
/*
 * The readings around a job's edges from the engine's rollups (wt_promsrc_edges in
 * promsrc_int.h): per edge four small answers (the value and the stamp of the last reading at or
 * before it, of the first one after it) instead of every sample within the pad. The exact-window
 * math needs no more: between two readings a counter's increase is their difference, and an edge
 * takes its interpolated share of the segment around it.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/promsrc.h"
#include "store/promsrc_int.h"

void wt_promsrc_regex_quote(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 4 < n; s++) {
        if (strchr(".^$*+?()[]{}|\\", *s)) {
            out[k++] = '\\';
            out[k++] = '\\';
        } else if (*s == '"') {
            out[k++] = '\\';
        }
        out[k++] = *s;
    }
    out[k] = '\0';
}

struct at {
    int64_t t;
    size_t i; /* the node */
};

static int at_cmp(const void *pa, const void *pb)
{
    const struct at *a = pa, *b = pb;
    return a->t < b->t ? -1 : a->t > b->t;
}

/*
 * FN(SEL{node=~"A|B"}[RANGE] @ T + SHIFT) keep_metric_names, one term per edge time (the nodes
 * sharing it in one regex), the terms joined with "or" (their nodes differ: no series twice).
 * o is sorted by time. NULL: out of memory.
 */
static char *edge_query(const char *fn, const char *sel_head, const char *const *node,
                        const struct at *o, size_t n, int64_t range, int64_t shift)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++) {
        len += 3 * strlen(node[o[i].i]) + 1;
        if (i == 0 || o[i].t != o[i - 1].t)
            len += strlen(fn) + strlen(sel_head) + 128;
    }
    char *q = malloc(len);
    if (!q)
        return NULL;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        bool first = i == 0 || o[i].t != o[i - 1].t, last = i + 1 == n || o[i + 1].t != o[i].t;
        char qn[200];
        wt_promsrc_regex_quote(node[o[i].i], qn, sizeof qn);
        if (first)
            off += (size_t)snprintf(q + off, len - off, "%s%s(%s", i ? " or " : "", fn, sel_head);
        off += (size_t)snprintf(q + off, len - off, "%s%s", first ? "" : "|", qn);
        if (last)
            off +=
                (size_t)snprintf(q + off, len - off, "\"}[%lldms] @ %.3f) keep_metric_names",
                                 (long long)(range / WT_NS_PER_MS), (double)(o[i].t + shift) / 1e9);
    }
    return q;
}

/* Each series of vs (one value) stamped with its series in ts (the seconds of that reading),
 * pushed into set; a series without a stamp is no reading. */
static int pair(struct wt_promsrc_set *vs, struct wt_promsrc_set *ts, struct wt_promsrc_set *set)
{
    for (size_t i = 0; i < vs->n; i++) {
        const struct wt_promsrc_series *v = &vs->s[i];
        if (!v->n)
            continue;
        struct wt_promsrc_series *tm = wt_promsrc_series_of(ts, v->node, v->metric, v->labels);
        if (!tm)
            return -ENOMEM;
        double s = tm->n ? tm->pts[0].v : NAN;
        if (!(s > -9e9 && s < 9e9))
            continue;
        struct wt_promsrc_series *d = wt_promsrc_series_of(set, v->node, v->metric, v->labels);
        /* engines stamp in milliseconds */
        if (!d || wt_promsrc_push(d, (int64_t)llround(s * 1e3) * WT_NS_PER_MS, v->pts[0].v))
            return -ENOMEM;
    }
    return 0;
}

int wt_promsrc_edges(struct wt_promsrc *p, const char *sel_head, const char *const *node,
                     const int64_t *t, size_t n, struct wt_promsrc_set *set, long *status,
                     struct wt_err *err)
{
    /* before: [edge - pad, edge] (the range holds (T - range, T]: one ms more); after:
     * (edge, edge + pad] */
    static const struct {
        const char *v, *t;
        bool after;
    } side[] = {{"last_over_time", "tlast_over_time", false},
                {"first_over_time", "tfirst_over_time", true}};
    int64_t pad = p->o.pad_ns;
    *status = 0;
    if (!n)
        return 0;
    struct at *o = malloc(n * sizeof *o);
    if (!o)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        o[i] = (struct at){.t = t[i], .i = i};
    qsort(o, n, sizeof *o, at_cmp);
    int rc = 0;
    for (size_t s = 0; s < 2 && rc == 0; s++) {
        struct wt_promsrc_set vs = {0}, ts = {0};
        int64_t range = side[s].after ? pad : pad + WT_NS_PER_MS, shift = side[s].after ? pad : 0;
        char *qv = edge_query(side[s].v, sel_head, node, o, n, range, shift);
        char *qt = edge_query(side[s].t, sel_head, node, o, n, range, shift);
        /* the time of the query is the latest edge's: each term has its own */
        if (!qv || !qt)
            rc = -ENOMEM;
        if (rc == 0)
            rc = wt_promsrc_query_status(p, qv, o[n - 1].t + pad, &vs, status, err);
        if (rc == 0)
            rc = wt_promsrc_query_status(p, qt, o[n - 1].t + pad, &ts, status, err);
        if (rc == 0)
            rc = pair(&vs, &ts, set);
        free(qv);
        free(qt);
        wt_promsrc_set_free(&vs);
        wt_promsrc_set_free(&ts);
    }
    free(o);
    return rc;
}
