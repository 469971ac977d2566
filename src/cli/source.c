/* SPDX-License-Identifier: MIT */
/*
 * --source: the engine a fleet command reads instead of the local store (store/promsrc.h). The
 * client certificate settings are the CLI's: WATTAGE_CACERT, WATTAGE_CERT, WATTAGE_KEY; a bearer
 * token from WATTAGE_SOURCE_TOKEN_FILE; the nodes named per query of a batched read from
 * WATTAGE_SOURCE_BATCH_NODES (default 256). A command that runs its local code on the engine's
 * readings copies them into a working store first (wt_cli_source_store).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/carbon.h"
#include "audit/carbon_parse.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "core/reading.h"
#include "store/promsrc.h"
#include "store/store.h"

#define SOURCE_PAD_NS (30 * WT_NS_PER_S)     /* read around the window, for its edges */
#define SOURCE_CHUNK_NS (3600 * WT_NS_PER_S) /* one query per hour of raw samples */
#define SOURCE_BATCH 2048                    /* readings per store write */
#define SOURCE_DB "source.db"                /* the working store, in its own directory */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int wt_cli_open_source(const char *source, struct wt_promsrc **out)
{
    struct wt_promsrc_opts o = {.ca_file = env("WATTAGE_CACERT"),
                                .cert_file = env("WATTAGE_CERT"),
                                .key_file = env("WATTAGE_KEY"),
                                .token_file = env("WATTAGE_SOURCE_TOKEN_FILE")};
    struct wt_err err = {{0}};
    const char *batch = env("WATTAGE_SOURCE_BATCH_NODES");
    if (batch) {
        char *end;
        errno = 0;
        unsigned long long b = strtoull(batch, &end, 10);
        if (errno || *end || b == 0 || b > 1000000 || batch[0] == '-') {
            fprintf(stderr,
                    "wattage: WATTAGE_SOURCE_BATCH_NODES: expected a number of nodes from 1 to "
                    "1000000, not '%s'\n",
                    batch);
            return 2;
        }
        o.batch_nodes = (size_t)b;
    }
    int rc = wt_promsrc_open(source, &o, out, &err);
    if (rc)
        fprintf(stderr, "wattage: %s\n", err.msg);
    return rc;
}

int wt_cli_source_copy(struct wt_promsrc *ps, const char *sel, int64_t from, int64_t to,
                       struct wt_store *st, size_t *copied, size_t *readings, struct wt_err *err)
{
    return wt_cli_source_copy_every(ps, sel, from, to, SOURCE_CHUNK_NS, st, copied, readings, err);
}

int wt_cli_source_copy_every(struct wt_promsrc *ps, const char *sel, int64_t from, int64_t to,
                             int64_t chunk_ns, struct wt_store *st, size_t *copied,
                             size_t *readings, struct wt_err *err)
{
    /* written a batch at a time, so a long series needs no buffer of its length */
    struct wt_reading *batch = malloc(SOURCE_BATCH * sizeof *batch);
    int rc = batch ? 0 : -ENOMEM;
    *copied = *readings = 0;
    for (int64_t a = from - SOURCE_PAD_NS; a < to + SOURCE_PAD_NS && rc == 0; a += chunk_ns) {
        int64_t b = a + chunk_ns < to + SOURCE_PAD_NS ? a + chunk_ns : to + SOURCE_PAD_NS;
        struct wt_promsrc_set set = {0};
        char q[512];
        snprintf(q, sizeof q, "%s[%lldms]", sel, (long long)((b - a) / 1000000 + 1));
        rc = wt_promsrc_query(ps, q, b, &set, err);
        for (size_t i = 0; i < set.n && rc == 0; i++) {
            const struct wt_promsrc_series *s = &set.s[i];
            int m = wt_metric_find(s->metric);
            if (m < 0 || !s->node[0] || s->n == 0)
                continue; /* not a series of ours, or not a node's */
            for (size_t k = 0; k < s->n && rc == 0; k += SOURCE_BATCH) {
                size_t nb = s->n - k < SOURCE_BATCH ? s->n - k : SOURCE_BATCH;
                for (size_t j = 0; j < nb; j++) {
                    batch[j].t_ns = s->pts[k + j].t_ns;
                    batch[j].value = s->pts[k + j].v;
                    batch[j].metric = (uint16_t)m;
                    snprintf(batch[j].labels, sizeof batch[j].labels, "%s", s->labels);
                }
                rc = wt_store_write(st, s->node, batch, nb);
            }
            if (rc != 0) {
                wt_err_set(err, "cannot copy %s's %s into the working store", s->node, s->metric);
                break;
            }
            *readings += s->n;
            if (a == from - SOURCE_PAD_NS)
                (*copied)++;
        }
        wt_promsrc_set_free(&set);
    }
    free(batch);
    return rc;
}

/* wt_cli_source_store_every (d NULL) or wt_cli_source_store_digest (sel NULL). */
static int source_store(const char *cmd, const char *source, const char *sel,
                        const struct wt_promsrc_digest *d, int64_t from, int64_t to,
                        int64_t chunk_ns, char *dir, size_t n, struct wt_store **st, size_t *copied,
                        size_t *readings, struct wt_err *err)
{
    struct wt_promsrc *ps = NULL;
    struct wt_store_opts o = {.create = true};
    char path[WT_PATH_LEN + 16];
    const char *tmp = getenv("TMPDIR");
    *st = NULL;
    *copied = *readings = 0;
    snprintf(dir, n, "%s/wattage-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", cmd);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "wattage %s: cannot make a working directory: %s\n", cmd, strerror(errno));
        dir[0] = '\0';
        return 1;
    }
    snprintf(path, sizeof path, "%s/" SOURCE_DB, dir);
    if (wt_cli_open_source(source, &ps) != 0)
        return 2;
    int rc = wt_store_open(path, &o, st, err);
    if (rc == 0)
        rc = d ? wt_promsrc_digest(ps, d, from, to, *st, copied, readings, err)
               : wt_cli_source_copy_every(ps, sel, from, to, chunk_ns, *st, copied, readings, err);
    wt_promsrc_close(ps);
    return rc ? 1 : 0;
}

int wt_cli_source_store(const char *cmd, const char *source, const char *sel, int64_t from,
                        int64_t to, char *dir, size_t n, struct wt_store **st, size_t *copied,
                        size_t *readings, struct wt_err *err)
{
    return source_store(cmd, source, sel, NULL, from, to, SOURCE_CHUNK_NS, dir, n, st, copied,
                        readings, err);
}

int wt_cli_source_store_every(const char *cmd, const char *source, const char *sel, int64_t from,
                              int64_t to, int64_t chunk_ns, char *dir, size_t n,
                              struct wt_store **st, size_t *copied, size_t *readings,
                              struct wt_err *err)
{
    return source_store(cmd, source, sel, NULL, from, to, chunk_ns, dir, n, st, copied, readings,
                        err);
}

int wt_cli_source_store_digest(const char *cmd, const char *source,
                               const struct wt_promsrc_digest *d, int64_t from, int64_t to,
                               char *dir, size_t n, struct wt_store **st, size_t *copied,
                               size_t *readings, struct wt_err *err)
{
    return source_store(cmd, source, NULL, d, from, to, SOURCE_CHUNK_NS, dir, n, st, copied,
                        readings, err);
}

/* ---- the grid's intensity, with or without a node label ---- */

#define CARBON_METRIC "wattage_grid_carbon_intensity_grams_per_kwh"
#define CARBON_MAX_ZONES 32
#define CARBON_MAX_GAP_NS (3600 * WT_NS_PER_S) /* a sample holds its value this long at most */

/* One zone's steps as they are built: the open run [run_from, last_t] at run_v. */
struct carbon_zone {
    char zone[WT_CARBON_ZONE_LEN];
    bool open;
    int64_t run_from, last_t;
    double run_v;
};

/* Ends z's open run at t (a step [run_from, t) into b when it is not empty). */
static int carbon_close(struct carbon_zone *z, int64_t t, struct wt_carbon_batch *b)
{
    z->open = false;
    if (t <= z->run_from)
        return 0;
    return wt_carbon_batch_add(b, z->run_from, t, z->run_v, WT_CK_ACTUAL, z->zone);
}

/* One sample of z: a new value or a hole ends the run; a sample holds until the next one. */
static int carbon_sample(struct carbon_zone *z, int64_t t, double v, struct wt_carbon_batch *b)
{
    int rc = 0;
    if (z->open && t <= z->last_t)
        return 0; /* the chunks overlap by a millisecond; a second node repeats a time */
    if (z->open && t - z->last_t > CARBON_MAX_GAP_NS)
        rc = carbon_close(z, z->last_t, b); /* a hole: the carbon section's hole rule has it */
    else if (z->open && v != z->run_v)
        rc = carbon_close(z, t, b);
    if (!z->open) {
        z->open = true;
        z->run_from = t;
        z->run_v = v;
    }
    z->last_t = t;
    return rc;
}

int wt_cli_source_carbon(const char *source, int64_t from, int64_t to, struct wt_store *st,
                         size_t *points, struct wt_err *err)
{
    struct wt_promsrc *ps = NULL;
    struct wt_carbon_batch b = {0};
    struct carbon_zone *zs = calloc(CARBON_MAX_ZONES, sizeof *zs);
    size_t nz = 0;
    int rc = zs ? 0 : -ENOMEM;
    *points = 0;
    if (rc == 0 && wt_cli_open_source(source, &ps) != 0)
        rc = wt_err_set(err, "not a source");
    for (int64_t a = from - SOURCE_PAD_NS; a < to + SOURCE_PAD_NS && rc == 0;
         a += SOURCE_CHUNK_NS) {
        int64_t e =
            a + SOURCE_CHUNK_NS < to + SOURCE_PAD_NS ? a + SOURCE_CHUNK_NS : to + SOURCE_PAD_NS;
        struct wt_promsrc_set set = {0};
        char q[160];
        snprintf(q, sizeof q, CARBON_METRIC "[%lldms]", (long long)((e - a) / 1000000 + 1));
        rc = wt_promsrc_query(ps, q, e, &set, err);
        /* per zone the series with the most samples in the chunk (every node of a zone exports
         * the same intensity; a scrape without a node label is one more series of it) */
        for (size_t i = 0; i < set.n && rc == 0; i++) {
            char zone[WT_CARBON_ZONE_LEN];
            const struct wt_promsrc_series *x = &set.s[i];
            if (wt_labels_get(x->labels, "zone", zone, sizeof zone) != 0 || !zone[0])
                continue;
            bool best = true;
            for (size_t k = 0; k < set.n && best; k++) {
                char zk[WT_CARBON_ZONE_LEN];
                if (k != i && wt_labels_get(set.s[k].labels, "zone", zk, sizeof zk) == 0 &&
                    strcmp(zk, zone) == 0)
                    best = set.s[k].n < x->n || (set.s[k].n == x->n && k > i);
            }
            if (!best)
                continue;
            size_t z = 0;
            while (z < nz && strcmp(zs[z].zone, zone) != 0)
                z++;
            if (z == nz) {
                if (nz == CARBON_MAX_ZONES)
                    continue;
                snprintf(zs[nz++].zone, sizeof zs[0].zone, "%s", zone);
            }
            for (size_t k = 0; k < x->n && rc == 0; k++)
                rc = carbon_sample(&zs[z], x->pts[k].t_ns, x->pts[k].v, &b);
        }
        wt_promsrc_set_free(&set);
    }
    for (size_t z = 0; z < nz && rc == 0; z++)
        if (zs[z].open)
            rc = carbon_close(&zs[z], zs[z].last_t, &b);
    if (rc == 0 && b.n) {
        char what[WT_PATH_LEN + 64];
        snprintf(what, sizeof what, "%s (" CARBON_METRIC ")", source);
        rc = wt_carbon_store(wt_store_db(st), WT_CS_INTENSITY, &b, what, wt_now_real_ns(), err);
        *points = rc == 0 ? b.n : 0;
    }
    if (rc && !err->msg[0])
        wt_err_set(err, "cannot copy " CARBON_METRIC " into the working store (%s)", strerror(-rc));
    wt_carbon_batch_free(&b);
    wt_promsrc_close(ps);
    free(zs);
    return rc;
}

void wt_cli_source_cleanup(const char *dir)
{
    static const char *const files[] = {SOURCE_DB, SOURCE_DB "-wal", SOURCE_DB "-shm",
                                        SOURCE_DB "-journal"};
    char p[WT_PATH_LEN + 32];
    if (!dir[0])
        return;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}
