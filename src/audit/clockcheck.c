/* SPDX-License-Identifier: MIT */
/* The clock's state over a window, from the stored clock series; see clockcheck.h. */
#include "audit/clockcheck.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "core/reading.h"
#include "store/store.h"

/* What one series says of the window: its readings (and the last before it) and rollups. */
struct tally {
    double n, unsynced; /* readings, and how many of them say 0 (synchronised series) */
    double max;         /* the largest value (error series) */
    bool any;
};

static int step_rows(sqlite3_stmt *q, struct tally *t, bool rollup)
{
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (sqlite3_column_type(q, 0) == SQLITE_NULL)
            continue;
        double n = rollup ? sqlite3_column_double(q, 0) : 1;
        double low = sqlite3_column_double(q, 1), mean = sqlite3_column_double(q, 2),
               high = sqlite3_column_double(q, 3);
        if (n <= 0)
            continue;
        t->any = true;
        t->n += n;
        /* 0/1 readings: a minute's mean is its synchronised share */
        t->unsynced += rollup ? n * (1 - mean) : (low < 0.5 ? 1 : 0);
        if (high > t->max)
            t->max = high;
    }
    return rc == SQLITE_DONE ? 0 : -EIO;
}

/* Tallies series id over [from, to]: raw readings, the one before from, the rollups of minutes
 * whose raw readings are gone. */
static int tally_series(sqlite3 *db, int64_t id, int64_t from, int64_t to, struct tally *t)
{
    static const char *const sql[] = {
        "SELECT 1, v, v, v FROM readings WHERE series=?1 AND t>=?2 AND t<=?3",
        "SELECT 1, v, v, v FROM readings WHERE series=?1 AND t<?2 ORDER BY t DESC LIMIT 1",
        /* only minutes wholly before the oldest raw reading: the others are read raw */
        "SELECT n, min, mean, max FROM rollups WHERE series=?1 AND t>=?2 AND t<=?3 AND n>0 AND "
        "t + 60000000000 <= coalesce((SELECT min(t) FROM readings WHERE series=?1), ?3 + 1)",
    };
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, sql[i], -1, &q, NULL) != SQLITE_OK)
            return -EIO;
        sqlite3_bind_int64(q, 1, id);
        sqlite3_bind_int64(q, 2, i == 2 ? wt_minute_floor(from) : from);
        sqlite3_bind_int64(q, 3, to);
        int rc = step_rows(q, t, i == 2);
        sqlite3_finalize(q);
        if (rc)
            return rc;
        if (i == 0 && t->any)
            i++; /* readings in the window: the one before says nothing more */
    }
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
        if ((rc = tally_series(db, sqlite3_column_int64(q, 0), from, to, &t)) != 0 || !t.any)
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
