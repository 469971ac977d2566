/* SPDX-License-Identifier: MIT */
/* Store maintenance as the daemon runs it: small passes after every flush give exactly the
 * rollups and pruning of one pass over all the data; what another connection wrote is rolled up
 * too; the writer thread is named. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "runner.h"
#include "store/query.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S - (1700000000LL * S) % WT_MINUTE_NS)

static const char *gpu0 = "gpu=\"0\",uuid=\"GPU-a\"";
static const char *gpu1 = "gpu=\"1\",uuid=\"GPU-b\"";

static struct wt_store *open_store(const char *name)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/%s", wt_test_dir(), name);
    if (wt_store_open(path, NULL, &s, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %s", err.msg);
    return s;
}

static struct wt_reading rd(int metric, const char *labels, int64_t t, double v)
{
    struct wt_reading r = {.t_ns = t, .value = v, .metric = (uint16_t)metric};
    snprintf(r.labels, sizeof r.labels, "%s", labels);
    return r;
}

/*
 * The readings of second i (0 <= i < n): a hardware counter, an integrated counter that resets
 * at 1 h and skips 20 s at 2 h, a power gauge, and a second GPU's gauge that stops at 40 min.
 */
static size_t second(int i, struct wt_reading *r)
{
    size_t k = 0;
    int64_t t = T0 + 250 * WT_NS_PER_MS + (int64_t)i * S;
    double p = 300 + 200 * sin(i / 97.0) + (i % 7) * 3;
    double e = 1000.0 * i + 100 * sin(i / 50.0) + 50000;
    r[k++] = rd(WT_M_GPU_ENERGY_J, gpu0, t, e);
    if (i < 7200 || i >= 7220)
        r[k++] = rd(WT_M_GPU_ENERGY_INTEGRATED_J, gpu0, t, i < 3600 ? e : e - 3.6e6);
    r[k++] = rd(WT_M_GPU_POWER_W, gpu0, t, p);
    if (i < 2400)
        r[k++] = rd(WT_M_GPU_POWER_W, gpu1, t, p / 2);
    return k;
}

static void maintain_all(struct wt_store *s, int64_t now, int budget)
{
    bool more = true;
    for (int i = 0; i < 100000 && more; i++)
        WT_EQ_INT(wt_store_maintain(s, now, budget, &more), 0);
    WT_ASSERT(!more);
}

/* Every rollup and the rolled_to of every series, one line each, keyed by metric and labels. */
static char *dump(struct wt_store *s, const char *sql)
{
    sqlite3_stmt *q;
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    WT_ASSERT(out);
    out[0] = '\0';
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), sql, -1, &q, NULL), SQLITE_OK);
    while (sqlite3_step(q) == SQLITE_ROW) {
        char line[1024];
        int n = 0;
        for (int c = 0; c < sqlite3_column_count(q); c++) {
            if (sqlite3_column_type(q, c) == SQLITE_FLOAT)
                n += snprintf(line + n, sizeof line - (size_t)n, "%.17g|",
                              sqlite3_column_double(q, c));
            else
                n += snprintf(line + n, sizeof line - (size_t)n, "%s|",
                              sqlite3_column_type(q, c) == SQLITE_NULL
                                  ? "NULL"
                                  : (const char *)sqlite3_column_text(q, c));
        }
        if (len + (size_t)n + 2 > cap) {
            cap *= 2;
            out = realloc(out, cap);
            WT_ASSERT(out);
        }
        memcpy(out + len, line, (size_t)n);
        len += (size_t)n;
        out[len++] = '\n';
        out[len] = '\0';
    }
    sqlite3_finalize(q);
    return out;
}

static const char *rollups_sql =
    "SELECT s.metric, s.labels, r.t, r.n, r.min, r.max, r.mean, r.last, r.energy, r.covered "
    "FROM rollups r JOIN series s ON s.id = r.series ORDER BY s.metric, s.labels, r.t";
static const char *series_sql =
    "SELECT metric, labels, rolled_to, (SELECT count(*) FROM readings WHERE series = id), "
    "(SELECT min(t) FROM readings WHERE series = id) FROM series ORDER BY metric, labels";

static void same(struct wt_store *a, struct wt_store *b, const char *sql, int min_lines)
{
    char *da = dump(a, sql), *db = dump(b, sql);
    int lines = 0;
    for (const char *p = da; *p; p++)
        lines += *p == '\n';
    WT_ASSERT(lines >= min_lines);
    if (strcmp(da, db) != 0) {
        size_t i = 0;
        while (da[i] && da[i] == db[i])
            i++;
        while (i > 0 && da[i - 1] != '\n')
            i--;
        wt_test_fail(__FILE__, __LINE__, "stores differ at:\n  %.200s\nvs\n  %.200s", da + i,
                     db + i);
    }
    free(da);
    free(db);
}

WT_TEST(passes_after_each_flush_match_one_pass_over_everything)
{
    const int n = 3 * 3600;
    struct wt_store *inc = open_store("inc.db"), *one = open_store("one.db");
    struct wt_reading *all = calloc((size_t)n * 4, sizeof *all);
    size_t nall = 0;
    WT_EQ_INT(wt_store_begin_run(inc, "", T0, S, "test"), 0);
    WT_EQ_INT(wt_store_begin_run(one, "", T0, S, "test"), 0);
    /* as the writer: a flush every 10 s, a small-budget pass after it while there is work */
    for (int i = 0; i < n; i += 10) {
        size_t k = nall;
        for (int j = i; j < i + 10; j++)
            nall += second(j, all + nall);
        WT_EQ_INT(wt_store_write(inc, "", all + k, nall - k), 0);
        bool more = true;
        for (int p = 0; p < 1000 && more; p++)
            WT_EQ_INT(wt_store_maintain(inc, T0 + (int64_t)(i + 10) * S, 300, &more), 0);
    }
    WT_EQ_INT(wt_store_write(one, "", all, nall), 0);
    maintain_all(one, T0 + (int64_t)n * S, 5000);
    same(inc, one, rollups_sql, 3 * 179 + 39);
    same(inc, one, series_sql, 4);

    /* a week later, pruned in steps of either size, the same again */
    maintain_all(inc, T0 + 8LL * 86400 * S, 300);
    maintain_all(one, T0 + 8LL * 86400 * S, 5000);
    same(inc, one, rollups_sql, 3 * 179 + 39);
    same(inc, one, series_sql, 4);
    struct wt_energy_row *ra = NULL, *rb = NULL;
    size_t na = 0, nb = 0;
    struct wt_err err = {{0}};
    int64_t a = T0 + 123 * S, b = T0 + 10000 * S;
    WT_EQ_INT(wt_store_energy(inc, a, b, 0, &ra, &na, &err), 0);
    WT_EQ_INT(wt_store_energy(one, a, b, 0, &rb, &nb, &err), 0);
    WT_EQ_INT(na, 2);
    WT_EQ_INT(nb, 2);
    for (size_t i = 0; i < na; i++) {
        WT_ASSERT(ra[i].energy_j > 1e6);
        WT_NEAR(ra[i].energy_j, rb[i].energy_j, 0);
        WT_NEAR(ra[i].covered_s, rb[i].covered_s, 0);
    }
    free(ra);
    free(rb);

    /* and the rollups' retention */
    maintain_all(inc, T0 + 500LL * 86400 * S, 300);
    char *d = dump(inc, "SELECT count(*) FROM rollups");
    WT_EQ_STR(d, "0|\n");
    free(d);
    free(all);
    wt_store_close(inc);
    wt_store_close(one);
}

static int64_t rolled_to(struct wt_store *s, const char *metric, const char *labels)
{
    sqlite3_stmt *q;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s),
                                 "SELECT rolled_to FROM series WHERE metric=? AND labels=?", -1, &q,
                                 NULL),
              SQLITE_OK);
    sqlite3_bind_text(q, 1, metric, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, labels, -1, SQLITE_STATIC);
    WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

WT_TEST(what_another_connection_wrote_is_rolled_up)
{
    struct wt_store *s = open_store("x.db");
    struct wt_reading r[600];
    for (int i = 0; i < 300; i++)
        r[i] = rd(WT_M_GPU_POWER_W, gpu0, T0 + i * S, i);
    WT_EQ_INT(wt_store_write(s, "", r, 300), 0);
    maintain_all(s, T0 + 300 * S, 5000);
    WT_EQ_INT(rolled_to(s, "wattage_gpu_power_watts", gpu0), T0 + 4 * WT_MINUTE_NS);

    /* a second connection (an import, say) adds to that series and makes a new one */
    struct wt_store *o = open_store("x.db");
    for (int i = 0; i < 300; i++) {
        r[2 * i] = rd(WT_M_GPU_POWER_W, gpu0, T0 + (300 + i) * S, i);
        r[2 * i + 1] = rd(WT_M_GPU_POWER_W, gpu1, T0 + (300 + i) * S, i);
    }
    WT_EQ_INT(wt_store_write(o, "", r, 600), 0);
    wt_store_close(o);

    maintain_all(s, T0 + 600 * S, 5000);
    WT_EQ_INT(rolled_to(s, "wattage_gpu_power_watts", gpu0), T0 + 9 * WT_MINUTE_NS);
    WT_EQ_INT(rolled_to(s, "wattage_gpu_power_watts", gpu1), T0 + 9 * WT_MINUTE_NS);
    /* and this connection's own writes after that still count */
    for (int i = 0; i < 60; i++)
        r[i] = rd(WT_M_GPU_POWER_W, gpu1, T0 + (600 + i) * S, i);
    WT_EQ_INT(wt_store_write(s, "", r, 60), 0);
    maintain_all(s, T0 + 700 * S, 5000);
    WT_EQ_INT(rolled_to(s, "wattage_gpu_power_watts", gpu1), T0 + 10 * WT_MINUTE_NS);
    WT_EQ_INT(rolled_to(s, "wattage_gpu_power_watts", gpu0), T0 + 9 * WT_MINUTE_NS);
    wt_store_close(s);
}

/* Whether a thread of this process is named name. */
static bool thread_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    bool found = false;
    WT_ASSERT(d);
    while (!found && (e = readdir(d))) {
        char path[300], comm[64] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        found = strcmp(comm, name) == 0;
    }
    closedir(d);
    return found;
}

WT_TEST(the_writer_thread_is_named)
{
    struct wt_store *s = open_store("w.db");
    WT_ASSERT(!thread_named("wt-store"));
    WT_EQ_INT(wt_store_writer_start(s), 0);
    bool named = false;
    for (int i = 0; i < 200 && !named; i++) {
        named = thread_named("wt-store");
        if (!named)
            usleep(5000);
    }
    WT_ASSERT(named);
    wt_store_close(s);
}
