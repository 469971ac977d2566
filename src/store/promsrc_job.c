/* SPDX-License-Identifier: MIT */
/*
 * One job over the fleet (wt_promsrc_job, wt_promsrc_profile in promsrc.h): the job's series per
 * node, the energy samples around its edges read in batches of nodes, its figures and phases. A
 * job's nodes are kept in a hash by name, and its energy series sorted by node, so each node's
 * figures read its own series only: nothing here grows with the square of nodes or series.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/promsrc.h"
#include "store/promsrc_int.h"
#include "store/store.h"

/* ---- one job over the fleet ---- */

struct pmark {
    char kind[64], index[24];
    int64_t t;
};

/* What one energy series of a node is, worked out once (see series_info). */
enum { USE_NONE, USE_GPU, USE_CPU };
struct sinfo {
    unsigned char kind; /* enum wt_series_kind */
    unsigned char use;  /* USE_GPU: one of the job's GPUs; USE_CPU: a CPU package counted */
};

struct pnode {
    char node[64], id[24], gpus[WT_LABELS_LEN];
    int64_t start, end; /* end 0: running */
    struct pmark *m;
    size_t nm;
    size_t s0, ns;          /* its energy series: the fleet's e.s[s0 .. s0 + ns) */
    const struct sinfo *si; /* what each of them is (si[0 .. ns)) */
    bool integrated;        /* one of them is a GPU's integrated series */
    bool reread;            /* read again with the source's pad (see near_check) */
};

/* A job's nodes: an array and a hash of their names. */
struct pnodes {
    struct pnode *v;
    size_t n, cap;
    size_t *index, index_cap; /* slots: index + 1 */
};

/* A PromQL string literal's content: node names go into a regex, so escape both layers. */
static void regex_quote(const char *s, char *out, size_t n)
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

static void str_quote(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 3 < n; s++) {
        if (*s == '"' || *s == '\\')
            out[k++] = '\\';
        out[k++] = *s;
    }
    out[k] = '\0';
}

static bool gpu_in(const char *gpus, const char *labels)
{
    char gpu[32], uuid[96], list[WT_LABELS_LEN];
    if (!gpus[0])
        return true;
    if (wt_labels_get(labels, "gpu", gpu, sizeof gpu) != 0)
        gpu[0] = '\0';
    if (wt_labels_get(labels, "uuid", uuid, sizeof uuid) != 0)
        uuid[0] = '\0';
    snprintf(list, sizeof list, "%s", gpus);
    char *save = NULL;
    for (char *g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        bool index = strspn(g, "0123456789") == strlen(g);
        if (index ? strcmp(g, gpu) == 0 : uuid[0] && strncmp(uuid, g, strlen(g)) == 0)
            return true;
    }
    return false;
}

static bool cpu_counted(const char *labels)
{
    char d[32];
    if (wt_labels_get(labels, "domain", d, sizeof d) != 0)
        return true;
    return strcmp(d, "core") != 0 && strcmp(d, "uncore") != 0 && strcmp(d, "psys") != 0;
}

struct pspan {
    double gpu_j, cpu_j, coverage;
    int ngpu;
};

/* The job's energy on node nd over [a, b]: its GPUs (counter first) and CPU packages. */
static int node_span(const struct wt_promsrc_set *e, const struct pnode *nd, int64_t a, int64_t b,
                     struct pspan *sp)
{
    memset(sp, 0, sizeof *sp);
    if (b <= a)
        return 0;
    double cov = 1;
    if (!nd->integrated) {
        /* counters only: nothing to choose between, each series summed as it is */
        for (size_t i = 0; i < nd->ns; i++) {
            const struct sinfo *si = &nd->si[i];
            double ej, cs;
            if (si->use == USE_NONE)
                continue;
            wt_promsrc_window(&e->s[nd->s0 + i], (enum wt_series_kind)si->kind, a, b, &ej, &cs);
            if (si->use == USE_CPU) {
                sp->cpu_j += ej;
                continue;
            }
            double c = cs / ((double)(b - a) / 1e9);
            sp->gpu_j += ej;
            sp->ngpu++;
            cov = c < cov ? c : cov;
        }
        sp->coverage = sp->ngpu ? cov : 0;
        return 0;
    }
    size_t k = 0;
    struct wt_energy_row *r = calloc(nd->ns ? nd->ns : 1, sizeof *r);
    if (!r)
        return -ENOMEM;
    for (size_t i = nd->s0; i < nd->s0 + nd->ns; i++)
        wt_promsrc_fill_row(&r[k++], &e->s[i], a, b);
    wt_energy_choose(r, k);
    for (size_t i = 0; i < k; i++) {
        if (!r[i].chosen)
            continue;
        if (!strcmp(r[i].s.metric, "wattage_cpu_energy_joules_total")) {
            if (cpu_counted(r[i].s.labels))
                sp->cpu_j += r[i].energy_j;
            continue;
        }
        if (!wt_metric_is_gpu_energy(r[i].s.metric) || !gpu_in(nd->gpus, r[i].s.labels))
            continue;
        sp->gpu_j += r[i].energy_j;
        sp->ngpu++;
        if (r[i].coverage < cov)
            cov = r[i].coverage;
    }
    sp->coverage = sp->ngpu ? cov : 0;
    free(r);
    return 0;
}

/* What each energy series of each node is (its kind, whether the job counts it), once, for
 * node_span's every window; a node with a GPU's integrated series beside its counter chooses
 * between them per window (wt_energy_choose). */
static int series_info(struct wt_promsrc_set *e, struct pnode *nodes, size_t nn, struct sinfo **out)
{
    struct sinfo *si = calloc(e->n ? e->n : 1, sizeof *si);
    if (!si)
        return -ENOMEM;
    for (size_t q = 0; q < nn; q++) {
        struct pnode *nd = &nodes[q];
        nd->si = si + nd->s0;
        for (size_t i = nd->s0; i < nd->s0 + nd->ns; i++) {
            const struct wt_promsrc_series *s = &e->s[i];
            enum wt_series_kind kind = wt_series_kind_of(s->metric, s->labels);
            si[i].kind = (unsigned char)kind;
            nd->integrated = nd->integrated || kind == WT_SK_INTEGRATED;
            if (!strcmp(s->metric, "wattage_cpu_energy_joules_total"))
                si[i].use = cpu_counted(s->labels) ? USE_CPU : USE_NONE;
            else if (wt_metric_is_gpu_energy(s->metric) && gpu_in(nd->gpus, s->labels))
                si[i].use = USE_GPU;
        }
    }
    *out = si;
    return 0;
}

static void add_time(cJSON *o, const char *key, int64_t t_ns)
{
    char buf[40], k[40];
    wt_time_format(t_ns, 1, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
    snprintf(k, sizeof k, "%s_s", key);
    cJSON_AddNumberToObject(o, k, (double)t_ns / 1e9);
}

static void add_kpis(cJSON *o, double dur_s, const struct pspan *sp)
{
    cJSON_AddNumberToObject(o, "duration_s", dur_s);
    cJSON_AddNumberToObject(o, "energy_joules", sp->gpu_j);
    cJSON_AddNumberToObject(o, "energy_kwh", sp->gpu_j / 3.6e6);
    cJSON_AddNumberToObject(o, "mean_power_w", dur_s > 0 ? sp->gpu_j / dur_s : 0);
    cJSON_AddNumberToObject(o, "coverage", sp->coverage);
    cJSON_AddNumberToObject(o, "cpu_energy_joules", sp->cpu_j);
}

/* Sums b into a (coverage: the lowest). */
static void span_add(struct pspan *a, const struct pspan *b, bool first)
{
    a->gpu_j += b->gpu_j;
    a->cpu_j += b->cpu_j;
    a->ngpu += b->ngpu;
    a->coverage = first || b->coverage < a->coverage ? b->coverage : a->coverage;
}

static struct pnode *node_find(const struct pnodes *ns, const char *node)
{
    if (!ns->index)
        return NULL;
    size_t mask = ns->index_cap - 1;
    for (size_t h = (size_t)wt_promsrc_hash(WT_PROMSRC_HASH_SEED, node) & mask; ns->index[h];
         h = (h + 1) & mask) {
        if (!strcmp(ns->v[ns->index[h] - 1].node, node))
            return &ns->v[ns->index[h] - 1];
    }
    return NULL;
}

/* The node of that name, added when new; NULL: out of memory. */
static struct pnode *node_of(struct pnodes *ns, const char *node)
{
    struct pnode *nd = node_find(ns, node);
    if (nd)
        return nd;
    if (ns->n == ns->cap) {
        size_t nc = ns->cap ? 2 * ns->cap : 64;
        struct pnode *nv = realloc(ns->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        ns->v = nv;
        ns->cap = nc;
    }
    if (2 * (ns->n + 1) > ns->index_cap) {
        size_t nc = ns->index_cap ? 2 * ns->index_cap : 256;
        size_t *ni = calloc(nc, sizeof *ni);
        if (!ni)
            return NULL;
        free(ns->index);
        ns->index = ni;
        ns->index_cap = nc;
        for (size_t i = 0; i < ns->n; i++) {
            size_t h = (size_t)wt_promsrc_hash(WT_PROMSRC_HASH_SEED, ns->v[i].node) & (nc - 1);
            while (ni[h])
                h = (h + 1) & (nc - 1);
            ni[h] = i + 1;
        }
    }
    nd = &ns->v[ns->n++];
    memset(nd, 0, sizeof *nd);
    snprintf(nd->node, sizeof nd->node, "%s", node);
    size_t mask = ns->index_cap - 1,
           h = (size_t)wt_promsrc_hash(WT_PROMSRC_HASH_SEED, nd->node) & mask;
    while (ns->index[h])
        h = (h + 1) & mask;
    ns->index[h] = ns->n;
    return nd;
}

static int mark_cmp(const void *pa, const void *pb)
{
    const struct pmark *a = pa, *b = pb;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* The job's series (start, end, info, marks) per node: the latest job of that name. */
static int load_job(struct wt_promsrc *p, const char *key, const char *ref, int64_t now,
                    struct pnodes *nodes, struct wt_err *err)
{
    struct wt_promsrc_set st = {0}, other = {0};
    char q[512], rq[256], lb[64];
    int rc;
    str_quote(ref, rq, sizeof rq);
    snprintf(q, sizeof q, "max_over_time(wattage_job_start_time_seconds{%s=\"%s\"}[" LOOKBACK "])",
             key, rq);
    if ((rc = wt_promsrc_query(p, q, now, &st, err)) != 0)
        goto out;
    for (size_t i = 0; i < st.n; i++) {
        struct wt_promsrc_series *s = &st.s[i];
        if (!s->n)
            continue;
        int64_t start = (int64_t)llround(s->pts[s->n - 1].v * 1e9);
        struct pnode *nd = node_of(nodes, s->node);
        if (!nd) {
            rc = -ENOMEM;
            goto out;
        }
        if (nd->start && nd->start >= start)
            continue; /* an earlier run of the same name on this node */
        nd->start = start;
        if (wt_labels_get(s->labels, "id", nd->id, sizeof nd->id) != 0)
            nd->id[0] = '\0';
    }
    /* the end, GPUs and marks of the run each node chose (its id) */
    static const char *const what[] = {"wattage_job_end_time_seconds", "wattage_job_info",
                                       "wattage_job_mark_time_seconds"};
    for (int w = 0; w < 3; w++) {
        wt_promsrc_set_free(&other);
        snprintf(q, sizeof q, "max_over_time(%s{%s=\"%s\"}[" LOOKBACK "])", what[w], key, rq);
        if ((rc = wt_promsrc_query(p, q, now, &other, err)) != 0)
            goto out;
        for (size_t i = 0; i < other.n; i++) {
            struct wt_promsrc_series *s = &other.s[i];
            struct pnode *nd = node_find(nodes, s->node);
            if (!nd || !s->n || wt_labels_get(s->labels, "id", lb, sizeof lb) != 0 ||
                strcmp(lb, nd->id) != 0)
                continue;
            double v = s->pts[s->n - 1].v;
            if (w == 0) {
                nd->end = (int64_t)llround(v * 1e9);
            } else if (w == 1) {
                if (wt_labels_get(s->labels, "gpus", nd->gpus, sizeof nd->gpus) != 0)
                    nd->gpus[0] = '\0';
            } else {
                struct pmark *nm = realloc(nd->m, (nd->nm + 1) * sizeof *nm);
                if (!nm) {
                    rc = -ENOMEM;
                    goto out;
                }
                nd->m = nm;
                struct pmark *mk = &nm[nd->nm++];
                memset(mk, 0, sizeof *mk);
                wt_labels_get(s->labels, "kind", mk->kind, sizeof mk->kind);
                wt_labels_get(s->labels, "index", mk->index, sizeof mk->index);
                mk->t = (int64_t)llround(v * 1e9);
            }
        }
    }
    for (size_t i = 0; i < nodes->n; i++)
        qsort(nodes->v[i].m, nodes->v[i].nm, sizeof *nodes->v[i].m, mark_cmp);
out:
    wt_promsrc_set_free(&st);
    wt_promsrc_set_free(&other);
    return rc;
}

/* One phase over the fleet: the marks of one kind and index on every node. */
struct pphase {
    char kind[64], index[24];
    int64_t from, to;
    struct pspan sp;
    int nodes;
};

static int phases_json(const struct wt_promsrc_set *e, const struct pnode *nodes, size_t nn,
                       cJSON *arr)
{
    struct pphase *ph = NULL;
    size_t np = 0;
    int rc = 0;
    for (size_t i = 0; i < nn && rc == 0; i++) {
        const struct pnode *nd = &nodes[i];
        for (size_t k = 0; k < nd->nm && rc == 0; k++) {
            const struct pmark *mk = &nd->m[k];
            int64_t from = nd->start;
            for (size_t q = k; q-- > 0;) {
                if (!strcmp(nd->m[q].kind, mk->kind)) {
                    from = nd->m[q].t;
                    break;
                }
            }
            struct pspan sp;
            if ((rc = node_span(e, nd, from, mk->t, &sp)) != 0)
                break;
            size_t j = 0;
            while (j < np && (strcmp(ph[j].kind, mk->kind) || strcmp(ph[j].index, mk->index)))
                j++;
            if (j == np) {
                struct pphase *n2 = realloc(ph, (np + 1) * sizeof *n2);
                if (!n2) {
                    rc = -ENOMEM;
                    break;
                }
                ph = n2;
                memset(&ph[np], 0, sizeof ph[np]);
                snprintf(ph[np].kind, sizeof ph[np].kind, "%s", mk->kind);
                snprintf(ph[np].index, sizeof ph[np].index, "%s", mk->index);
                ph[np].from = from;
                ph[np].to = mk->t;
                np++;
            }
            span_add(&ph[j].sp, &sp, ph[j].nodes == 0);
            ph[j].nodes++;
            if (from < ph[j].from)
                ph[j].from = from;
            if (mk->t > ph[j].to)
                ph[j].to = mk->t;
        }
    }
    for (size_t j = 0; j < np && rc == 0; j++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) {
            rc = -ENOMEM;
            break;
        }
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "kind", ph[j].kind);
        if (ph[j].index[0])
            cJSON_AddNumberToObject(o, "index", strtod(ph[j].index, NULL));
        else
            cJSON_AddNullToObject(o, "index");
        add_time(o, "from", ph[j].from);
        add_time(o, "to", ph[j].to);
        cJSON_AddNumberToObject(o, "nodes", ph[j].nodes);
        cJSON_AddItemToObject(o, "counters", cJSON_CreateObject());
        add_kpis(cJSON_AddObjectToObject(o, "kpi"), (double)(ph[j].to - ph[j].from) / 1e9,
                 &ph[j].sp);
    }
    free(ph);
    return rc;
}

/* A job over the fleet: its nodes and the energy samples around all their edges. */
struct fleet {
    struct pnodes pn;
    struct pnode *nodes; /* pn.v, pn.n */
    size_t nn;
    struct wt_promsrc_set e; /* sorted by node once loaded */
    struct sinfo *si;        /* what each of e's series is */
};

static void fleet_free(struct fleet *f)
{
    for (size_t i = 0; i < f->pn.n; i++)
        free(f->pn.v[i].m);
    free(f->pn.v);
    free(f->pn.index);
    wt_promsrc_set_free(&f->e);
    free(f->si);
    memset(f, 0, sizeof *f);
}

#define FLEET_SEL "{__name__=~\"wattage_(gpu|cpu)_energy(_integrated)?_joules_total\",node=~\""
/* A job's readings are first asked within this of each edge (the source's pad when smaller) */
#define NEAR_PAD_NS (5 * WT_NS_PER_S)

/* The edges of node nd: its start, its end (or now: *open), its marks; out holds 2 + nd->nm. */
static size_t node_edges(const struct pnode *nd, int64_t now_ns, int64_t *out)
{
    size_t k = 0;
    out[k++] = nd->start;
    out[k++] = nd->end ? nd->end : now_ns;
    for (size_t m = 0; m < nd->nm; m++)
        out[k++] = nd->m[m].t;
    return k;
}

/*
 * The energy samples around every edge of the nodes idx[0 .. n) (starts, ends or now, marks) and
 * the profile's steps: the nodes named in the query, so what is read follows the job, not the
 * fleet. pad: how far on each side of an edge; a pad under the source's asks the engine for the
 * batch's series first (/api/v1/series over the source's pad), so a series without a reading
 * that near an edge is still known (see near_check). A batch the engine refuses with 422 (its
 * limit on series or samples per query) is split in two and asked again; one node's refusal is
 * the error. Samples read twice merge as one.
 */
static int load_batch(struct wt_promsrc *p, struct fleet *f, const size_t *idx, size_t n,
                      int64_t now_ns, const int64_t *steps, size_t nsteps, int64_t pad,
                      struct wt_err *err)
{
    size_t ne = nsteps, sl = sizeof FLEET_SEL + 8;
    for (size_t i = 0; i < n; i++) {
        ne += 2 + f->nodes[idx[i]].nm;
        sl += 3 * strlen(f->nodes[idx[i]].node) + 1; /* regex_quote: up to 3 bytes a byte */
    }
    int64_t *edges = malloc(ne * sizeof *edges);
    char *sel = malloc(sl);
    int rc = 0;
    if (!edges || !sel) {
        rc = -ENOMEM;
        goto out;
    }
    size_t k = 0, off = (size_t)snprintf(sel, sl, "%s", FLEET_SEL);
    for (size_t i = 0; i < n; i++) {
        const struct pnode *nd = &f->nodes[idx[i]];
        k += node_edges(nd, now_ns, edges + k);
        char qn[200];
        regex_quote(nd->node, qn, sizeof qn);
        off += (size_t)snprintf(sel + off, sl - off, "%s%s", i ? "|" : "", qn);
    }
    memcpy(edges + k, steps, nsteps * sizeof *edges);
    snprintf(sel + off, sl - off, "\"}");
    long status = 0;
    int64_t wide = p->o.pad_ns;
    if (pad < wide) {
        int64_t lo = edges[0], hi = edges[0];
        for (size_t i = 1; i < ne; i++) {
            lo = edges[i] < lo ? edges[i] : lo;
            hi = edges[i] > hi ? edges[i] : hi;
        }
        rc = wt_promsrc_series_status(p, sel, lo - wide, hi + wide, &f->e, &status, err);
        /* an engine, or a proxy before it, that does not answer /api/v1/series */
        if (rc == -EIO && (status == 400 || status == 404 || status == 405)) {
            rc = -ENOTSUP;
            goto out;
        }
    }
    if (rc == 0)
        rc = wt_promsrc_around_pad(p, sel, edges, ne, pad, 2 * wide, &f->e, &status, err);
    if (rc == -EIO && status == 422 && n > 1) {
        size_t mid = n / 2;
        rc = load_batch(p, f, idx, mid, now_ns, steps, nsteps, pad, err);
        if (rc == 0)
            rc = load_batch(p, f, idx + mid, n - mid, now_ns, steps, nsteps, pad, err);
    } else if (rc == -EIO && status == 422) {
        wt_promsrc_alone(err, f->nodes[idx[0]].node, "job");
    }
out:
    free(edges);
    free(sel);
    return rc;
}

/* s holds a reading within pad on each side of edge e (one at e is both sides); an open edge
 * (now, the end of a job still running) needs the one before only. */
static bool straddles(const struct wt_promsrc_series *s, int64_t e, int64_t pad, bool open)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->pts[mid].t_ns < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool after = lo < s->n && s->pts[lo].t_ns - e <= pad;
    bool before = (lo < s->n && s->pts[lo].t_ns == e) || (lo > 0 && e - s->pts[lo - 1].t_ns <= pad);
    return before && (after || open);
}

/*
 * After a batch read within pad of each edge: the nodes of its series e.s[from .. to) (the series
 * it added) where some series lacks a reading within pad on either side of one of the node's
 * edges get reread set. Where every series has them, the readings around each edge that the
 * window math uses (the last at or before it, the first at or after it) are the ones the
 * source's whole pad would give, and a counter's rise between two edges is the same whichever
 * readings lie between: the figures are the same.
 */
static int near_check(struct fleet *f, size_t from, size_t to, int64_t now_ns, int64_t pad)
{
    int64_t *edges = NULL;
    size_t cap = 0;
    for (size_t i = from; i < to; i++) {
        const struct wt_promsrc_series *s = &f->e.s[i];
        struct pnode *nd = node_find(&f->pn, s->node);
        if (!nd || nd->reread)
            continue;
        if (cap < 2 + nd->nm) {
            int64_t *ne = realloc(edges, (2 + nd->nm) * sizeof *ne);
            if (!ne) {
                free(edges);
                return -ENOMEM;
            }
            edges = ne;
            cap = 2 + nd->nm;
        }
        size_t k = node_edges(nd, now_ns, edges);
        for (size_t q = 0; q < k && !nd->reread; q++)
            nd->reread = !straddles(s, edges[q], pad, q == 1 && !nd->end);
    }
    free(edges);
    return 0;
}

/*
 * The energy samples around the edges of every node (and the profile's steps), in batches of
 * the source's batch_nodes. A job (no steps) is read near its edges first (NEAR_PAD_NS); the
 * nodes where that is not enough (near_check: readings further apart, a node that left, a series
 * that stopped) are read again with the source's pad, so the figures are those the pad gives.
 * Where most of a batch needed it (a fleet polled less often), or where the engine does not list
 * series (400, 404 or 405 to /api/v1/series: a proxy that lets only the query API through), the
 * batches after it are read with the pad at once. Series that hold no reading at all are dropped,
 * as they were never answered.
 */
static int load_edges(struct wt_promsrc *p, struct fleet *f, int64_t now_ns, const int64_t *steps,
                      size_t nsteps, struct wt_err *err)
{
    size_t bn = p->o.batch_nodes, *idx = malloc((f->nn ? f->nn : 1) * sizeof *idx),
           *again = malloc((bn ? bn : 1) * sizeof *again);
    int64_t pad = nsteps || NEAR_PAD_NS >= p->o.pad_ns ? p->o.pad_ns : NEAR_PAD_NS;
    int rc = 0;
    if (!idx || !again)
        rc = -ENOMEM;
    for (size_t i = 0; i < f->nn && rc == 0; i++)
        idx[i] = i;
    for (size_t b = 0; b < f->nn && rc == 0; b += bn) {
        size_t n = b + bn < f->nn ? bn : f->nn - b, from = f->e.n, na = 0;
        rc = load_batch(p, f, idx + b, n, now_ns, steps, nsteps, pad, err);
        if (rc == -ENOTSUP) {
            /* no listing of series: this batch and the rest read with the pad at once */
            pad = p->o.pad_ns;
            rc = load_batch(p, f, idx + b, n, now_ns, steps, nsteps, pad, err);
        }
        if (rc || pad == p->o.pad_ns)
            continue;
        if ((rc = near_check(f, from, f->e.n, now_ns, pad)) != 0)
            break;
        for (size_t i = b; i < b + n; i++)
            if (f->nodes[i].reread)
                again[na++] = i;
        if (na)
            rc = load_batch(p, f, again, na, now_ns, steps, nsteps, p->o.pad_ns, err);
        if (2 * na > n)
            pad = p->o.pad_ns;
    }
    /* series listed by the engine that hold no reading near any edge: not the job's */
    size_t k = 0;
    for (size_t i = 0; i < f->e.n; i++) {
        if (f->e.s[i].n)
            f->e.s[k++] = f->e.s[i];
        else
            free(f->e.s[i].pts);
    }
    f->e.n = k;
    free(f->e.index);
    f->e.index = NULL;
    f->e.index_cap = 0;
    free(idx);
    free(again);
    return rc;
}

/*
 * Each node's series together, in the order they came (a node's figures read its own only):
 * placed by their node's index in one pass, not sorted (a series is a few hundred bytes to
 * move). Series of no node of the job go last. Sets each node's s0 and ns.
 */
static int group_by_node(struct fleet *f)
{
    size_t n = f->e.n, *at = calloc(f->nn + 1, sizeof *at), *of = malloc((n ? n : 1) * sizeof *of);
    struct wt_promsrc_series *v = malloc((n ? n : 1) * sizeof *v);
    if (!at || !of || !v) {
        free(at);
        free(of);
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct pnode *nd = node_find(&f->pn, f->e.s[i].node);
        of[i] = nd ? (size_t)(nd - f->nodes) : f->nn;
        at[of[i]]++;
    }
    for (size_t i = 0, sum = 0; i <= f->nn; i++) {
        size_t c = at[i];
        if (i < f->nn) {
            f->nodes[i].s0 = sum;
            f->nodes[i].ns = c;
        }
        at[i] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        v[at[of[i]]++] = f->e.s[i];
    free(f->e.s);
    f->e.s = v;
    f->e.cap = n ? n : 1;
    free(at);
    free(of);
    return 0;
}

/* Loads job ref and the samples around its edges, and around step edges when step_ns > 0. */
static int fleet_load(struct wt_promsrc *p, const char *ref, int64_t now_ns, int64_t step_ns,
                      struct fleet *f, struct wt_err *err)
{
    int64_t *steps = NULL;
    int rc;
    memset(f, 0, sizeof *f);
    if ((rc = load_job(p, "job", ref, now_ns, &f->pn, err)) != 0)
        goto out;
    if (f->pn.n == 0 && strspn(ref, "0123456789") == strlen(ref) &&
        (rc = load_job(p, "id", ref, now_ns, &f->pn, err)) != 0)
        goto out;
    f->nodes = f->pn.v;
    f->nn = f->pn.n;
    if (f->nn == 0) {
        rc = -ENOENT;
        wt_err_set(err, "%s: no job %s in the last " LOOKBACK " (wattage_job_start_time_seconds)",
                   p->name, ref);
        goto out;
    }
    int64_t lo = f->nodes[0].start, hi = 0;
    for (size_t i = 0; i < f->nn; i++) {
        const struct pnode *nd = &f->nodes[i];
        lo = nd->start < lo ? nd->start : lo;
        int64_t b = nd->end ? nd->end : now_ns;
        hi = b > hi ? b : hi;
    }
    size_t nsteps = step_ns > 0 ? (size_t)((hi - lo) / step_ns) + 1 : 0;
    if (nsteps && !(steps = malloc(nsteps * sizeof *steps))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nsteps; i++)
        steps[i] = lo + (int64_t)i * step_ns;
    if ((rc = load_edges(p, f, now_ns, steps, nsteps, err)) != 0)
        goto out;
    if ((rc = group_by_node(f)) == 0)
        rc = series_info(&f->e, f->nodes, f->nn, &f->si);
out:
    free(steps);
    if (rc)
        fleet_free(f);
    return rc;
}

int wt_promsrc_job(struct wt_promsrc *p, const char *ref, int64_t now_ns, cJSON **out,
                   struct wt_err *err)
{
    struct fleet f;
    cJSON *o = NULL;
    *out = NULL;
    int rc = fleet_load(p, ref, now_ns, 0, &f, err);
    if (rc)
        return rc;
    struct pnode *nodes = f.nodes;
    size_t nn = f.nn;
    o = cJSON_CreateObject();
    if (!o) {
        rc = -ENOMEM;
        goto out;
    }
    bool same_id = true, running = false;
    int64_t start = nodes[0].start, end = 0;
    for (size_t i = 0; i < nn; i++) {
        same_id = same_id && !strcmp(nodes[i].id, nodes[0].id);
        running = running || !nodes[i].end;
        start = nodes[i].start < start ? nodes[i].start : start;
        end = nodes[i].end > end ? nodes[i].end : end;
    }
    if (same_id)
        cJSON_AddNumberToObject(o, "id", strtod(nodes[0].id, NULL));
    else
        cJSON_AddNullToObject(o, "id");
    cJSON_AddStringToObject(o, "name", ref);
    cJSON_AddStringToObject(o, "source", p->name);
    cJSON_AddStringToObject(o, "state", running ? "running" : "ended");
    cJSON_AddItemToObject(o, "tags", cJSON_CreateObject());
    add_time(o, "start", start);
    if (running)
        cJSON_AddNullToObject(o, "end");
    else
        add_time(o, "end", end);
    int64_t last = running ? now_ns : end;
    struct pspan total = {0};
    cJSON *arr = cJSON_AddArrayToObject(o, "nodes");
    for (size_t i = 0; i < nn; i++) {
        struct pnode *nd = &nodes[i];
        struct pspan sp;
        int64_t b = nd->end ? nd->end : now_ns;
        if ((rc = node_span(&f.e, nd, nd->start, b, &sp)) != 0)
            goto out;
        span_add(&total, &sp, i == 0);
        cJSON *x = cJSON_CreateObject();
        if (!x) {
            rc = -ENOMEM;
            goto out;
        }
        cJSON_AddItemToArray(arr, x);
        cJSON_AddStringToObject(x, "node", nd->node);
        cJSON_AddNumberToObject(x, "id", strtod(nd->id, NULL));
        cJSON_AddStringToObject(x, "gpus", nd->gpus);
        add_time(x, "start", nd->start);
        if (nd->end)
            add_time(x, "end", nd->end);
        else
            cJSON_AddNullToObject(x, "end");
        add_kpis(cJSON_AddObjectToObject(x, "kpi"), (double)(b - nd->start) / 1e9, &sp);
    }
    add_kpis(cJSON_AddObjectToObject(o, "kpi"), (double)(last - start) / 1e9, &total);
    cJSON_AddItemToObject(o, "counters", cJSON_CreateObject());
    rc = phases_json(&f.e, nodes, nn, cJSON_AddArrayToObject(o, "phases"));
out:
    if (rc) {
        cJSON_Delete(o);
        o = NULL;
    }
    *out = o;
    fleet_free(&f);
    return rc;
}

int wt_promsrc_profile(struct wt_promsrc *p, const char *ref, int64_t now_ns, int64_t step_ns,
                       double **watts, size_t *n, int64_t *duration_ns, struct wt_err *err)
{
    struct fleet f;
    *watts = NULL;
    *n = 0;
    *duration_ns = 0;
    if (step_ns <= 0)
        return wt_err_set(err, "the profile's step must be > 0");
    int rc = fleet_load(p, ref, now_ns, step_ns, &f, err);
    if (rc)
        return rc;
    int64_t lo = f.nodes[0].start, hi = 0;
    for (size_t i = 0; i < f.nn; i++) {
        int64_t b = f.nodes[i].end ? f.nodes[i].end : now_ns;
        lo = f.nodes[i].start < lo ? f.nodes[i].start : lo;
        hi = b > hi ? b : hi;
    }
    size_t k = hi > lo ? (size_t)((hi - lo + step_ns - 1) / step_ns) : 0;
    double *w = k ? calloc(k, sizeof *w) : NULL;
    if (!k)
        rc = wt_err_set(err, "job %s has no duration", ref);
    else if (!w)
        rc = -ENOMEM;
    /* each slot: the GPU energy of every node within it (its part of the node's window) */
    for (size_t i = 0; i < k && rc == 0; i++) {
        int64_t a = lo + (int64_t)i * step_ns, b = a + step_ns < hi ? a + step_ns : hi;
        for (size_t q = 0; q < f.nn && rc == 0; q++) {
            const struct pnode *nd = &f.nodes[q];
            int64_t na = a > nd->start ? a : nd->start;
            int64_t nb = nd->end ? nd->end : now_ns;
            nb = b < nb ? b : nb;
            struct pspan sp;
            if ((rc = node_span(&f.e, nd, na, nb, &sp)) == 0)
                w[i] += sp.gpu_j / ((double)(b - a) / 1e9);
        }
    }
    fleet_free(&f);
    if (rc) {
        free(w);
        return rc;
    }
    *watts = w;
    *n = k;
    *duration_ns = hi - lo;
    return 0;
}
