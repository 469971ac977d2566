/* SPDX-License-Identifier: MIT */
/* The clock's state over a window, from the stored clock series; see clockcheck.h. */
#include "audit/clockcheck.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/reading.h"
#include "store/store.h"

/* What one series says of the window: its readings (and the last before it) and rollups. */
struct tally {
    double n, unsynced; /* readings, and how many of them say 0 (synchronised series) */
    double max;         /* the largest value (error series) */
    bool any;
};

static void tally_add(struct tally *t, double n, double mean, double high)
{
    t->any = true;
    t->n += n;
    t->unsynced += n * (1 - mean); /* 0/1 readings: a minute's mean is its synchronised share */
    if (high > t->max)
        t->max = high;
}

/* Tallies series id over [from, to]: its readings (raw or in chunks), else the one before from,
 * and the rollups of minutes whose readings are gone. */
static int tally_series(struct wt_store *st, int64_t id, int64_t from, int64_t to, struct tally *t)
{
    memset(t, 0, sizeof *t);
    struct wt_point_buf b = {0};
    int rc = wt_store_read(st, id, from, to, WT_RD_EDGES, 0, &b);
    if (rc == 0) {
        bool inside = false;
        for (size_t i = 0; i < b.n; i++)
            if (b.p[i].t_ns >= from && b.p[i].t_ns <= to && !isnan(b.p[i].v)) {
                tally_add(t, 1, b.p[i].v < 0.5 ? 0 : 1, b.p[i].v);
                inside = true;
            }
        for (size_t i = 0; !inside && i < b.n; i++)
            if (b.p[i].t_ns < from && !isnan(b.p[i].v)) /* the one before says what held */
                tally_add(t, 1, b.p[i].v < 0.5 ? 0 : 1, b.p[i].v);
    }
    free(b.p);
    if (rc != 0)
        return rc;
    /* only minutes wholly before the oldest reading: the others were read above */
    int64_t first = 0, last = 0;
    int have = wt_store_bounds(st, id, &first, &last);
    if (have < 0)
        return have;
    struct wt_rollup *rows = NULL;
    size_t n = 0;
    if ((rc = wt_store_rollups(st, id, wt_minute_floor(from), to + 1, &rows, &n)) != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (rows[i].n > 0 && (have == 0 || rows[i].t_ns + 60 * WT_NS_PER_S <= first))
            tally_add(t, (double)rows[i].n, rows[i].mean, rows[i].max);
    free(rows);
    return 0;
}

static struct wt_clock_window *node_slot(struct wt_clock_warnings *w, const char *node)
{
    for (size_t i = 0; i < w->nnodes; i++)
        if (strcmp(w->node[i].node, node) == 0)
            return &w->node[i];
    if (w->nnodes == WT_CLOCKCHECK_MAX_NODES)
        return NULL;
    struct wt_clock_window *x = &w->node[w->nnodes++];
    memset(x, 0, sizeof *x);
    snprintf(x->node, sizeof x->node, "%s", node);
    return x;
}

int wt_clockcheck_window(struct wt_store *st, int64_t from, int64_t to, double bound_s,
                         struct wt_clock_warnings *w)
{
    memset(w, 0, sizeof *w);
    sqlite3 *db = wt_store_db(st);
    sqlite3_stmt *q = NULL;
    if (!db || sqlite3_prepare_v2(db,
                                  "SELECT id, node, metric FROM series WHERE metric IN (?1, ?2) "
                                  "ORDER BY node, metric",
                                  -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(q, 1, wt_metrics[WT_M_CLOCK_SYNCED].name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, wt_metrics[WT_M_CLOCK_MAX_ERROR_S].name, -1, SQLITE_STATIC);
    int rc = 0, s;
    while (rc == 0 && (s = sqlite3_step(q)) == SQLITE_ROW) {
        const char *node = (const char *)sqlite3_column_text(q, 1);
        const char *metric = (const char *)sqlite3_column_text(q, 2);
        struct wt_clock_window *x = node_slot(w, node ? node : "");
        struct tally t;
        if (!x || !metric)
            continue;
        if ((rc = tally_series(st, sqlite3_column_int64(q, 0), from, to, &t)) != 0 || !t.any)
            continue;
        if (strcmp(metric, wt_metrics[WT_M_CLOCK_SYNCED].name) == 0) {
            x->sync_known = true;
            x->unsynced_s = t.unsynced / t.n * (double)(to - from) / 1e9;
            if (t.unsynced > 0 && x->unsynced_s < 1e-3)
                x->unsynced_s = 1e-3; /* only the reading before the window: it says "some" */
        } else {
            x->error_known = true;
            x->max_error_s = t.max;
        }
    }
    sqlite3_finalize(q);
    if (rc)
        return rc;
    for (size_t i = 0; i < w->nnodes; i++) {
        const struct wt_clock_window *x = &w->node[i];
        char who[96];
        if (x->node[0])
            snprintf(who, sizeof who, " on node %s", x->node);
        else
            who[0] = '\0';
        if (x->sync_known && x->unsynced_s > 0)
            snprintf(w->msg[w->n++], sizeof w->msg[0],
                     "the clock%s was not synchronised for about %.0f s of this window "
                     "(wattage_clock_synchronized 0): its times and energy windows may be off",
                     who, x->unsynced_s < 1 ? 1 : x->unsynced_s);
        if (x->error_known && x->max_error_s > bound_s)
            snprintf(w->msg[w->n++], sizeof w->msg[0],
                     "the clock's maximum error%s reached %.3f s in this window, above "
                     "daemon.clock_max_error (%.3f s)",
                     who, x->max_error_s, bound_s);
    }
    return 0;
}

/* The largest |skew| series id gives over [from, to]: its readings, and the rollups of minutes
 * whose readings are gone. Returns 0 (*any false when it says nothing of the window). */
static int peer_extreme(struct wt_store *st, int64_t id, int64_t from, int64_t to, double *out,
                        bool *any)
{
    struct wt_point_buf b = {0};
    *out = 0;
    *any = false;
    int rc = wt_store_read(st, id, from, to, 0, 0, &b);
    for (size_t i = 0; rc == 0 && i < b.n; i++)
        if (!isnan(b.p[i].v) && b.p[i].t_ns >= from && b.p[i].t_ns <= to) {
            *any = true;
            if (fabs(b.p[i].v) > *out)
                *out = fabs(b.p[i].v);
        }
    free(b.p);
    if (rc != 0)
        return rc;
    int64_t first = 0, last = 0;
    int have = wt_store_bounds(st, id, &first, &last);
    if (have < 0)
        return have;
    struct wt_rollup *rows = NULL;
    size_t n = 0;
    if ((rc = wt_store_rollups(st, id, wt_minute_floor(from), to + 1, &rows, &n)) != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (rows[i].n > 0 && (have == 0 || rows[i].t_ns + 60 * WT_NS_PER_S <= first)) {
            double m = fmax(fabs(rows[i].min), fabs(rows[i].max));
            *any = true;
            if (m > *out)
                *out = m;
        }
    free(rows);
    return 0;
}

int wt_clockcheck_peers(struct wt_store *st, int64_t from, int64_t to, double bound_s,
                        struct wt_clock_warnings *w)
{
    const size_t room = sizeof w->msg / sizeof w->msg[0];
    sqlite3 *db = wt_store_db(st);
    sqlite3_stmt *q = NULL;
    if (!db || sqlite3_prepare_v2(db,
                                  "SELECT id, node, labels FROM series WHERE metric = ?1 "
                                  "ORDER BY node, labels",
                                  -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(q, 1, wt_metrics[WT_M_CLOCK_PEER_SKEW_S].name, -1, SQLITE_STATIC);
    int rc = 0, s;
    size_t more = 0;
    while (rc == 0 && (s = sqlite3_step(q)) == SQLITE_ROW) {
        const char *node = (const char *)sqlite3_column_text(q, 1);
        const char *labels = (const char *)sqlite3_column_text(q, 2);
        char src[32] = "", tgt[64] = "", placed[64] = "", who[160] = "";
        double skew;
        bool any;
        if ((rc = peer_extreme(st, sqlite3_column_int64(q, 0), from, to, &skew, &any)) != 0)
            break;
        /* whole-second stamps: 0.5 s of any skew is the stamps' own resolution */
        if (!any || !labels || skew - 0.5 <= bound_s)
            continue;
        if (w->n == room) {
            more++;
            continue;
        }
        (void)wt_labels_get(labels, "source", src, sizeof src);
        (void)wt_labels_get(labels, "target", tgt, sizeof tgt);
        if (wt_labels_get(labels, "node", placed, sizeof placed) == 0)
            snprintf(who, sizeof who, " (for node %s)", placed);
        snprintf(w->msg[w->n++], sizeof w->msg[0],
                 "the clock of %s:%s%s was off from %s%s's by up to %.1f s in this window "
                 "(wattage_clock_peer_skew_seconds), beyond daemon.clock_max_error (%.3f s)",
                 src, tgt, who, node && node[0] ? "node " : "this host", node ? node : "", skew,
                 bound_s);
    }
    sqlite3_finalize(q);
    if (more && w->n == room)
        snprintf(w->msg[room - 1], sizeof w->msg[0],
                 "the clocks of %zu more facility devices were off beyond daemon.clock_max_error "
                 "in this window (wattage_clock_peer_skew_seconds)",
                 more + 1);
    return rc;
}

int wt_clockcheck_json(cJSON *o, const struct wt_clock_warnings *w)
{
    if (!w || w->n == 0)
        return 0;
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "warnings");
    if (!arr && !(arr = cJSON_AddArrayToObject(o, "warnings")))
        return -ENOMEM;
    for (size_t i = 0; i < w->n; i++) {
        cJSON *s = cJSON_CreateString(w->msg[i]);
        if (!s || !cJSON_AddItemToArray(arr, s))
            return -ENOMEM;
    }
    return 0;
}

void wt_clockcheck_print(FILE *f, const struct wt_clock_warnings *w)
{
    for (size_t i = 0; w && i < w->n; i++)
        fprintf(f, "warning: %s\n", w->msg[i]);
}
