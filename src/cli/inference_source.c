/* SPDX-License-Identifier: MIT */
/*
 * `wattage inference --source URL` (src/cli/inference.c): the window's inference series and GPU
 * energy counters of every node, read from the engine (store/promsrc.h) into a working store in
 * a new temporary directory, so that the serving KPIs are computed exactly as from a node's own
 * store. Target names and GPU indices repeat across nodes, so in the working store a node's
 * target is NODE/TARGET and its GPU NODE/INDEX (the info's gpus "NODE/0,NODE/1"); the node is
 * the series' node label (remote write's), else its instance (a scrape that sets no node). The
 * scrape's own labels (instance, job) are left out, so they do not read as the target's tags.
 *
 * Every raw sample of those series within the window and a pad on each side is read in one
 * query: a long window over many targets is a large answer (each latency bucket is a series).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "store/promsrc.h"
#include "store/store.h"

#define PAD_NS (30 * WT_NS_PER_S) /* as store/promsrc.h reads around an edge */
#define SEL                                                                                        \
    "{__name__=~\"wattage_gpu_energy_(integrated_)?joules_total|wattage_inference_(info|"          \
    "tokens_total|requests_total|latency_seconds_bucket|requests_running|requests_waiting)\"}"

static const char *const work_files[] = {"inference.db", "inference.db-wal", "inference.db-shm"};

void wt_cli_inference_source_done(struct wt_store *st, char *dir)
{
    wt_store_close(st);
    if (!dir || !dir[0])
        return;
    char path[160];
    for (size_t i = 0; i < sizeof work_files / sizeof work_files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, work_files[i]);
        unlink(path);
    }
    rmdir(dir);
    dir[0] = '\0';
}

/* "0,1" as "NODE/0,NODE/1". */
static int prefix_list(const char *node, const char *list, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        int w = snprintf(out + len, n - len, "%s%s/%.*s", len ? "," : "", node, (int)l, p);
        if (w < 0 || (size_t)w >= n - len)
            return -E2BIG;
        len += (size_t)w;
        p += l;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* The labels of series s as the working store keeps them (see the top of this file). */
static int relabel(const struct wt_promsrc_series *s, const char *node, char *out, size_t n)
{
    size_t pos = 0;
    char k[64], v[WT_LABELS_LEN], nv[WT_LABELS_LEN];
    int rc;
    out[0] = '\0';
    while ((rc = wt_labels_next(s->labels, &pos, k, sizeof k, v, sizeof v)) == 1) {
        const char *val = v;
        if (strcmp(k, "instance") == 0 || strcmp(k, "job") == 0)
            continue;
        if (strcmp(k, "target") == 0 || strcmp(k, "gpu") == 0) {
            if (snprintf(nv, sizeof nv, "%s/%s", node, v) >= (int)sizeof nv)
                return -E2BIG;
            val = nv;
        } else if (strcmp(k, "gpus") == 0) {
            if (prefix_list(node, v, nv, sizeof nv) != 0)
                return -E2BIG;
            val = nv;
        }
        if (wt_labels_add(out, n, k, val) != 0)
            return -E2BIG;
    }
    return rc < 0 ? rc : 0;
}

static int copy(struct wt_promsrc *ps, int64_t from, int64_t to, struct wt_store *st,
                struct wt_err *err)
{
    struct wt_promsrc_set set = {0};
    struct wt_reading *r = NULL;
    size_t cap = 0;
    char q[400];
    snprintf(q, sizeof q, "%s[%lldms]", SEL, (long long)((to - from + 2 * PAD_NS) / 1000000 + 1));
    int rc = wt_promsrc_query(ps, q, to + PAD_NS, &set, err);
    for (size_t i = 0; i < set.n && rc == 0; i++) {
        const struct wt_promsrc_series *s = &set.s[i];
        int m = wt_metric_find(s->metric);
        char node[WT_LABELS_LEN], labels[WT_LABELS_LEN];
        if (m < 0)
            continue;
        if (s->node[0])
            snprintf(node, sizeof node, "%s", s->node);
        else if (wt_labels_get(s->labels, "instance", node, sizeof node) != 0)
            continue; /* from no node and no scrape: whose it is is not known */
        if (relabel(s, node, labels, sizeof labels) != 0) {
            fprintf(stderr, "wattage inference: %s{%s} of %s: labels too long, left out\n",
                    s->metric, s->labels, node);
            continue;
        }
        if (s->n > cap) {
            struct wt_reading *nr = realloc(r, s->n * sizeof *nr);
            if (!nr) {
                rc = -ENOMEM;
                break;
            }
            r = nr;
            cap = s->n;
        }
        for (size_t k = 0; k < s->n; k++) {
            r[k].t_ns = s->pts[k].t_ns;
            r[k].value = s->pts[k].v;
            r[k].metric = (uint16_t)m;
            snprintf(r[k].labels, sizeof r[k].labels, "%s", labels);
        }
        if ((rc = wt_store_write(st, "", r, s->n)) != 0)
            wt_err_set(err, "cannot copy %s's %s into the working store", node, s->metric);
    }
    free(r);
    wt_promsrc_set_free(&set);
    return rc;
}

int wt_cli_inference_source(const char *source, int64_t from, int64_t to, char *dir, size_t n,
                            struct wt_store **st)
{
    struct wt_promsrc *ps = NULL;
    struct wt_err err = {{0}};
    char path[160];
    struct wt_store_opts o = {.create = true};
    const char *tmp = getenv("TMPDIR");
    *st = NULL;
    snprintf(dir, n, "%s/wattage-inference-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "wattage inference: cannot make a working directory: %s\n",
                strerror(errno));
        dir[0] = '\0';
        return 1;
    }
    if (wt_cli_open_source(source, &ps) != 0) {
        rmdir(dir);
        dir[0] = '\0';
        return 2;
    }
    snprintf(path, sizeof path, "%s/%s", dir, work_files[0]);
    int rc = wt_store_open(path, &o, st, &err);
    if (rc == 0)
        rc = copy(ps, from, to, *st, &err);
    wt_promsrc_close(ps);
    if (rc) {
        fprintf(stderr, "wattage inference: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        wt_cli_inference_source_done(*st, dir);
        *st = NULL;
        return 1;
    }
    return 0;
}
