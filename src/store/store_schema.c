/* SPDX-License-Identifier: MIT */
/*
 * The store's schema: its tables, the upgrades from older schemas, and the renames of old
 * series, run when a store is opened (store.c).
 */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/family.h"
#include "core/health.h"
#include "core/hub.h"
#include "core/log.h"
#include "store/chunk.h"
#include "store/segment.h"
#include "store/ticks.h"

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, node TEXT NOT NULL DEFAULT '',"
    " metric TEXT NOT NULL, labels TEXT NOT NULL, kind INTEGER NOT NULL,"
    " rolled_to INTEGER NOT NULL DEFAULT 0, UNIQUE(node, metric, labels));"
    "CREATE TABLE IF NOT EXISTS readings(series INTEGER NOT NULL, t INTEGER NOT NULL,"
    " v REAL NOT NULL, PRIMARY KEY(series, t)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollups(series INTEGER NOT NULL, t INTEGER NOT NULL,"
    " n INTEGER NOT NULL, min REAL, max REAL, mean REAL, last REAL, energy REAL NOT NULL,"
    " covered INTEGER NOT NULL, PRIMARY KEY(series, t)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, node TEXT NOT NULL,"
    " start_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL, interval_ns INTEGER NOT NULL,"
    " source TEXT NOT NULL, UNIQUE(node, start_ns));"
    /* schema 2: closed spans of readings, one compressed blob (store/chunk.h) per series and
     * span; t0, t1: its first and last reading, n: how many. Schema 3: its summary (see
     * summary_sql) */
    /* the summary before the blob: a window reads it without the blob's overflow pages (a
     * schema 2 table gets it after, by ALTER TABLE: still no decoding, but those pages read) */
    "CREATE TABLE IF NOT EXISTS chunks(series INTEGER NOT NULL, t0 INTEGER NOT NULL,"
    " t1 INTEGER NOT NULL, n INTEGER NOT NULL, v0 REAL, v1 REAL, e REAL, cov INTEGER,"
    " data BLOB NOT NULL, PRIMARY KEY(series, t0)) WITHOUT ROWID;"
    /* schema 4: packed ticks (store/ticks.h), a row per write of every series' readings; seq
     * orders the writes (of one series at one time the first written is kept), t_min and t_max
     * bound the row's readings. Readers merge them with the readings table's rows. */
    "CREATE TABLE IF NOT EXISTS ticks(seq INTEGER PRIMARY KEY, t_min INTEGER NOT NULL,"
    " t_max INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS ticks_t_min ON ticks(t_min);"
    "CREATE INDEX IF NOT EXISTS ticks_t_max ON ticks(t_max);";

/* Schema 2 -> 3: the summary columns on a chunks table that lacks them. */
static const char *const summary_columns = "ALTER TABLE chunks ADD COLUMN v0 REAL;"
                                           "ALTER TABLE chunks ADD COLUMN v1 REAL;"
                                           "ALTER TABLE chunks ADD COLUMN e REAL;"
                                           "ALTER TABLE chunks ADD COLUMN cov INTEGER;";

/*
 * Schema 3: each chunk's summary, so that an exact window applies a whole chunk inside it without
 * decoding it (wt_store_window): v0, v1 its first and last value; e, cov the energy (J) and the
 * covered time (ns) of the segments between its readings by the series' segment rule
 * (wt_segment_sum). NULL: not known (a chunk of schema 2, or one whose rule changed), read by
 * decoding; maintenance fills them (chunks_unsummed finds those). The rule depends on the
 * series' kind and its node's runs: a run that starts (or changes) at t makes e and cov of that
 * node's chunks that end at or after t stale, and the triggers clear them in the same transaction
 * (900000000000: SPAN_NS, a chunk lies inside one span).
 */
static const char *const summary_sql =
    "CREATE INDEX IF NOT EXISTS chunks_unsummed ON chunks(series, t0) WHERE e IS NULL;"
    /* the summaries alone, dense: what a window reads (the chunks' rows hold their blobs) */
    "CREATE INDEX IF NOT EXISTS chunks_summary ON chunks(series, t0, t1, v0, v1, e, cov);"
    "CREATE TRIGGER IF NOT EXISTS runs_insert_summaries AFTER INSERT ON runs BEGIN"
    " UPDATE chunks SET e=NULL, cov=NULL WHERE e IS NOT NULL AND"
    " series IN (SELECT id FROM series WHERE node=new.node) AND"
    " t0>new.start_ns-900000000000 AND t1>=new.start_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS runs_update_summaries AFTER UPDATE OF node, start_ns,"
    " interval_ns ON runs WHEN old.node!=new.node OR old.start_ns!=new.start_ns OR"
    " old.interval_ns!=new.interval_ns BEGIN"
    " UPDATE chunks SET e=NULL, cov=NULL WHERE e IS NOT NULL AND"
    " series IN (SELECT id FROM series WHERE node IN (old.node, new.node)) AND"
    " t0>min(old.start_ns, new.start_ns)-900000000000 AND t1>=min(old.start_ns, new.start_ns);"
    " END;"
    "CREATE TRIGGER IF NOT EXISTS runs_delete_summaries AFTER DELETE ON runs BEGIN"
    " UPDATE chunks SET e=NULL, cov=NULL WHERE e IS NOT NULL AND"
    " series IN (SELECT id FROM series WHERE node=old.node) AND"
    " t0>old.start_ns-900000000000 AND t1>=old.start_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS series_kind_summaries AFTER UPDATE OF kind ON series"
    " WHEN old.kind!=new.kind BEGIN UPDATE chunks SET e=NULL, cov=NULL WHERE series=new.id; END;";

/* Whether the chunks table already has the summary columns (a store made as schema 3). */
static bool has_summary_columns(struct wt_store *s)
{
    sqlite3_stmt *st = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM pragma_table_info('chunks') WHERE name='cov'", -1,
                           &st, NULL) == SQLITE_OK)
        found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/*
 * The GPU's integrated energy used to be stored as wattage_gpu_energy_joules_total with
 * method="integrated" last in its labels (kind 3). It has its own metric now; a store written
 * before is renamed in place when opened, so one GPU has one integrated series across the
 * change. A row whose new name already exists (an older wattage wrote to the store after a newer
 * one) is left as it is: its kind still says integrated, and queries pair it as such.
 */
static const char *const legacy_integrated_where =
    " WHERE metric='wattage_gpu_energy_joules_total' AND kind=3 AND"
    " (labels LIKE '%,method=\"integrated\"' OR labels='method=\"integrated\"')";

static int rename_legacy_integrated(struct wt_store *s)
{
    char sql[512];
    sqlite3_stmt *st = NULL;
    bool found = false;
    snprintf(sql, sizeof sql, "SELECT 1 FROM series%s LIMIT 1", legacy_integrated_where);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!found)
        return 0; /* the usual case: no write transaction for a reader's open */
    /* 20 = strlen(",method=\"integrated\"") */
    snprintf(sql, sizeof sql,
             "UPDATE OR IGNORE series SET metric='wattage_gpu_energy_integrated_joules_total',"
             " labels=CASE WHEN labels='method=\"integrated\"' THEN ''"
             " ELSE substr(labels, 1, length(labels) - 20) END%s",
             legacy_integrated_where);
    if (wt_store_exec(s, sql))
        return -EIO;
    wt_info(MOD,
            "%s: %d integrated GPU energy series renamed to "
            "wattage_gpu_energy_integrated_joules_total",
            s->path, sqlite3_changes(s->db));
    return 0;
}

/* Creates the schema, or upgrades an older one (one transaction), and renames legacy series. */
int wt_store_schema(struct wt_store *s, const char *path, struct wt_err *err)
{
    int rc;
    sqlite3_stmt *st = NULL;
    int ver = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        ver = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (ver < 0) {
        rc = wt_store_db_error(s, err, "not a wattage store (cannot read it)");
        goto fail;
    }
    if (ver > SCHEMA_VERSION) {
        rc = -EINVAL;
        wt_err_set(err, "%s: store schema %d is newer than this wattage (%d)", path, ver,
                   SCHEMA_VERSION);
        goto fail;
    }
    if (ver < SCHEMA_VERSION) {
        /* one transaction: a store is at one schema or the next, never between */
        if (wt_store_exec(s, "BEGIN IMMEDIATE") || wt_store_exec(s, schema) ||
            (!has_summary_columns(s) && wt_store_exec(s, summary_columns)) ||
            wt_store_exec(s, summary_sql) || wt_store_exec(s, SCHEMA_PRAGMA) ||
            wt_store_exec(s, "COMMIT")) {
            rc = wt_store_db_error(s, err, "cannot create the schema");
            if (!sqlite3_get_autocommit(s->db))
                (void)wt_store_exec(s, "ROLLBACK");
            goto fail;
        }
        if (ver >= 1)
            wt_info(MOD, "%s: store schema %d upgraded to %d (%s%spacked ticks)", path, ver,
                    SCHEMA_VERSION,
                    ver == 1 ? "the writer compacts closed spans of readings into chunks; " : "",
                    ver <= 2 ? "chunk summaries: the writer fills them in the background; " : "");
    }
    /* Not fatal (a store on a read-only medium): the old rows keep their kind, and queries
     * pair them with the counter as before. */
    if (rename_legacy_integrated(s) != 0)
        wt_warn(MOD, "%s: cannot rename the integrated GPU energy series: %s", path,
                sqlite3_errmsg(s->db));
    return 0;
fail:
    return rc;
}
