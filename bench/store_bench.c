/* SPDX-License-Identifier: MIT */
/*
 * store_bench [DAY_HOURS] [QUERY_HOURS]: the SQLite store's figures on a simulated node.
 *   1. insert throughput: 8 GPUs x 20 series at 1 s for DAY_HOURS (default 24), written as the
 *      writer does it, one transaction per 1-s flush (readings/s);
 *   2. bytes per reading at rest for that day: the writer's maintenance has rolled up and
 *      compacted every closed span into chunks (database after a WAL checkpoint), and the
 *      chunks' blobs alone;
 *   3. an exact-window energy query over QUERY_HOURS (default 72) of the 16 GPU energy series
 *      stored as chunks (wt_store_energy, error bars included), four ways: readings only and the
 *      default (rollups where readings were pruned), each with the chunks' summaries (whole
 *      chunks inside the window not decoded) and with every chunk decoded (WT_Q_DECODE: what
 *      schema 2 did, whose default read per-minute rollups inside and raw at the edges).
 *   4. inserts written packed (store.packed_ticks): the same 1-s flushes, each one ticks row;
 *      readings/s and the bytes handed to write(2) over the blobs' bytes;
 *   0. the ticks codec (store/ticks.h) alone, the unit of the packed-ticks table:
 *      each 1-s tick of the day's first hour (or less) encoded as one blob, readings/s on one
 *      core and bytes a reading, and the walk over every blob decoding it again;
 * Times are medians of 5 runs. The values are synthetic but at the sensors' resolutions: power
 * in mW, the hardware energy counter in mJ (NVML's units), temperatures in whole °C, clocks in
 * MHz; ../shared/data/gpu-traces holds single exporter scrapes and field lists, no time series
 * to replay.
 * Prints a readable summary on stderr and one JSON line per figure on stdout for bench/run.sh.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/clock.h"
#include "core/reading.h"
#include "store/query.h"
#include "store/store.h"
#include "store/ticks.h"

#define GPUS 8
#define S WT_NS_PER_S

static const int gpu_metrics[] = {
    WT_M_GPU_INFO,
    WT_M_GPU_UP,
    WT_M_GPU_POWER_W,
    WT_M_GPU_ENERGY_J,
    WT_M_GPU_ENERGY_INTEGRATED_J,
    WT_M_GPU_TEMP_C,
    WT_M_GPU_SLOWDOWN_TEMP_C,
    WT_M_GPU_SHUTDOWN_TEMP_C,
    WT_M_GPU_UTIL_RATIO,
    WT_M_GPU_MEM_UTIL_RATIO,
    WT_M_GPU_MEM_USED_B,
    WT_M_GPU_MEM_TOTAL_B,
    WT_M_GPU_SM_CLOCK_HZ,
    WT_M_GPU_MEM_CLOCK_HZ,
    WT_M_GPU_POWER_LIMIT_W,
    WT_M_GPU_POWER_LIMIT_MIN_W,
    WT_M_GPU_POWER_LIMIT_MAX_W,
    WT_M_GPU_PSTATE,
    WT_M_GPU_THROTTLE_REASONS,
    WT_M_GPU_ENERGY_GAPS,
};
#define NSER ((int)(sizeof gpu_metrics / sizeof gpu_metrics[0]))

struct gpu {
    char labels[WT_LABELS_LEN];
    int64_t energy_mj;
    double integ_energy, last_p;
};

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double now_s(void)
{
    return (double)wt_now_mono_ns() / 1e9;
}

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

/* One second of readings for every GPU (energy only when energy_only). */
static size_t tick(struct gpu *g, int64_t t, long k, bool energy_only, struct wt_reading *out)
{
    size_t n = 0;
    for (int i = 0; i < GPUS; i++) {
        double p =
            round((350 + 250 * sin((double)k / 300.0 + i) + (double)((k * 7 + i) % 13)) * 1000) /
            1000;
        g[i].energy_mj += llround(p * 1000);          /* 1 s at p W */
        g[i].integ_energy += 0.5 * (p + g[i].last_p); /* trapezoid */
        g[i].last_p = p;
        for (int m = 0; m < NSER; m++) {
            int metric = gpu_metrics[m];
            if (energy_only && metric != WT_M_GPU_ENERGY_J &&
                metric != WT_M_GPU_ENERGY_INTEGRATED_J)
                continue;
            double v;
            switch (metric) {
            case WT_M_GPU_POWER_W:
                v = p;
                break;
            case WT_M_GPU_ENERGY_J:
                v = (double)g[i].energy_mj / 1000;
                break;
            case WT_M_GPU_ENERGY_INTEGRATED_J:
                v = g[i].integ_energy;
                break;
            case WT_M_GPU_TEMP_C:
                v = 40 + (int)(p / 20);
                break;
            case WT_M_GPU_SLOWDOWN_TEMP_C:
                v = 87;
                break;
            case WT_M_GPU_SHUTDOWN_TEMP_C:
                v = 92;
                break;
            case WT_M_GPU_UTIL_RATIO:
                v = (double)((k + i) % 101) / 100;
                break;
            case WT_M_GPU_MEM_UTIL_RATIO:
                v = (double)((k * 3 + i) % 101) / 100;
                break;
            case WT_M_GPU_MEM_USED_B:
                v = 8e10 + (double)((k % 1000) * 1048576);
                break;
            case WT_M_GPU_MEM_TOTAL_B:
                v = 150754820096.0;
                break;
            case WT_M_GPU_SM_CLOCK_HZ:
                v = 1980e6 - (double)((k % 5) * 15e6);
                break;
            case WT_M_GPU_MEM_CLOCK_HZ:
                v = 2619e6;
                break;
            case WT_M_GPU_POWER_LIMIT_W:
                v = 700;
                break;
            case WT_M_GPU_POWER_LIMIT_MIN_W:
                v = 200;
                break;
            case WT_M_GPU_POWER_LIMIT_MAX_W:
                v = 700;
                break;
            default:
                v = metric == WT_M_GPU_UP || metric == WT_M_GPU_INFO ? 1 : 0;
                break;
            }
            struct wt_reading *r = &out[n++];
            r->t_ns = t + (int64_t)i * 1000; /* GPUs are read a few µs apart */
            r->value = v;
            r->metric = (uint16_t)metric;
            memcpy(r->labels, g[i].labels, sizeof r->labels);
        }
    }
    return n;
}

static int count_points(void *ctx, int64_t id, const struct wt_point *p, size_t n)
{
    (void)id;
    (void)p;
    *(size_t *)ctx += n;
    return 0;
}

/* 0: the ticks codec over `secs` 1-s ticks, one blob each; series ids as the store would number
 * them. Encoding readings/s and decoding readings/s (medians of 5), bytes a reading. */
static int ticks_codec(struct gpu *g, int64_t t0, long secs, double *enc, double *dec,
                       double *bytes)
{
    struct wt_reading batch[GPUS * NSER];
    struct wt_tick_reading *r = malloc((size_t)secs * GPUS * NSER * sizeof *r);
    size_t *at = malloc(((size_t)secs + 1) * sizeof *at), n = 0;
    uint8_t **blob = calloc((size_t)secs, sizeof *blob);
    size_t *len = calloc((size_t)secs, sizeof *len);
    double e[5], d[5];
    if (!r || !at || !blob || !len)
        return -1;
    for (long k = 0; k < secs; k++) {
        at[k] = n;
        size_t m = tick(g, t0 + k * S, k, false, batch);
        for (size_t i = 0; i < m; i++)
            r[n++] = (struct wt_tick_reading){(int64_t)i + 1, batch[i].t_ns, batch[i].value};
    }
    at[secs] = n;
    size_t stored = 0;
    for (int rep = 0; rep < 5; rep++) {
        stored = 0;
        double a = now_s();
        for (long k = 0; k < secs; k++) {
            int64_t lo, hi;
            free(blob[k]);
            if (wt_ticks_encode(r + at[k], at[k + 1] - at[k], &blob[k], &len[k], &lo, &hi) != 0)
                return -1;
            stored += len[k];
        }
        e[rep] = (double)n / (now_s() - a);
        size_t got = 0;
        a = now_s();
        for (long k = 0; k < secs; k++) {
            if (wt_ticks_each(blob[k], len[k], count_points, &got) != 0)
                return -1;
        }
        d[rep] = (double)got / (now_s() - a);
        if (got != n)
            return -1;
    }
    *enc = median(e, 5);
    *dec = median(d, 5);
    *bytes = (double)stored / (double)n;
    fprintf(stderr,
            "store_bench: ticks codec, %ld ticks of %zu readings: encode %.2fM readings/s, decode "
            "%.2fM readings/s, %.2f B/reading\n",
            secs, n / (size_t)secs, *enc / 1e6, *dec / 1e6, *bytes);
    for (long k = 0; k < secs; k++)
        free(blob[k]);
    free(blob);
    free(len);
    free(at);
    free(r);
    return 0;
}

static struct wt_store *open_at(const char *dir, const char *name, char *path, size_t n)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    snprintf(path, n, "%s/%s", dir, name);
    if (wt_store_open(path, NULL, &st, &err) != 0) {
        fprintf(stderr, "store_bench: %s\n", err.msg);
        exit(1);
    }
    return st;
}

/* This process's bytes handed to write(2) so far (/proc/self/io wchar), or -1. */
static long long written_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "wchar: %lld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/*
 * 4: the writer's path written packed (store.packed_ticks): secs 1-s flushes of the GPUs into a
 * fresh store, each one transaction of one ticks row. *rate: readings/s; *amp: bytes handed to
 * write(2) (database and WAL, checkpoints included) over the ticks blobs' bytes; *per: blob
 * bytes a reading.
 */
static int packed_inserts(struct gpu *g, const char *dir, int64_t t0, long secs, double *rate,
                          double *amp, double *per)
{
    char path[512];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true, .ticks = true};
    struct wt_reading batch[GPUS * NSER];
    snprintf(path, sizeof path, "%s/packed.db", dir);
    if (wt_store_open(path, &o, &st, &err) != 0 || wt_store_begin_run(st, "", t0 - S, S, "bench"))
        return -1;
    size_t total = 0;
    long long w0 = written_bytes();
    double a = now_s();
    for (long k = 0; k < secs; k++) {
        size_t n = tick(g, t0 + k * S, k, false, batch);
        if (wt_store_write(st, "", batch, n) != 0)
            return -1;
        total += n;
    }
    double took = now_s() - a;
    long long w1 = written_bytes();
    long long blob = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(wt_store_db(st), "SELECT coalesce(sum(length(data)), 0) FROM ticks", -1,
                           &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        blob = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    wt_store_close(st);
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(path);
    unlink(wal);
    *rate = (double)total / took;
    *amp = blob > 0 && w0 >= 0 ? (double)(w1 - w0) / (double)blob : 0;
    *per = (double)blob / (double)total;
    return 0;
}

int main(int argc, char **argv)
{
    double day_h = argc > 1 ? atof(argv[1]) : 24;
    double query_h = argc > 2 ? atof(argv[2]) : 72;
    char dir[] = "/tmp/wt-store-bench-XXXXXX", path[512];
    struct gpu g[GPUS];
    struct wt_reading batch[GPUS * NSER];
    if (day_h <= 0 || query_h <= 0 || !mkdtemp(dir)) {
        fprintf(stderr, "usage: store_bench [DAY_HOURS] [QUERY_HOURS]\n");
        return 2;
    }
    memset(g, 0, sizeof g);
    for (int i = 0; i < GPUS; i++) {
        char idx[8], uuid[64];
        snprintf(idx, sizeof idx, "%d", i);
        snprintf(uuid, sizeof uuid, "GPU-5f3c1d2e-8a7b-4c6d-9e0f-%012d", i);
        if (wt_labels(g[i].labels, sizeof g[i].labels, "gpu", idx, "uuid", uuid, "model",
                      "NVIDIA H200", NULL) != 0)
            return 1;
    }
    int64_t t0 = wt_minute_floor(wt_now_real_ns()) - 100LL * 86400 * S + 250 * WT_NS_PER_MS;
    double tk_enc, tk_dec, tk_bytes;
    struct gpu gc[GPUS]; /* the codec's own copy: the store's day starts from the same state */
    memcpy(gc, g, sizeof gc);
    if (ticks_codec(gc, t0, (long)fmin(day_h * 3600, 3600), &tk_enc, &tk_dec, &tk_bytes) != 0)
        return 1;
    double pk_rate, pk_amp, pk_per;
    memcpy(gc, g, sizeof gc);
    if (packed_inserts(gc, dir, t0, (long)fmin(day_h * 3600, 3600), &pk_rate, &pk_amp, &pk_per))
        return 1;
    fprintf(stderr,
            "store_bench: packed ticks (store.packed_ticks): %.0f readings/s inserted, one "
            "transaction a 1-s flush; %.2f B a reading in the blobs, write(2) bytes %.1fx the "
            "blobs'\n",
            pk_rate, pk_per, pk_amp);

    /* 1 + 2: a day of 8 GPUs x 20 series at 1 s, one transaction per simulated flush */
    struct wt_store *st = open_at(dir, "day.db", path, sizeof path);
    if (wt_store_begin_run(st, "", t0 - S, S, "bench") != 0)
        return 1;
    long secs = (long)(day_h * 3600);
    long timed = secs < 3600 ? secs : 3600;
    size_t total = 0;
    struct wt_reading *big = calloc(60 * GPUS * NSER, sizeof *big);
    double a = now_s();
    for (long k = 0; k < timed; k++) {
        size_t n = tick(g, t0 + k * S, k, false, batch);
        if (wt_store_write(st, "", batch, n) != 0)
            return 1;
        total += n;
    }
    double ins_s = now_s() - a;
    size_t timed_total = total;
    /* the rest of the day only for its size: a minute per transaction, to be quick */
    for (long k = timed; k < secs; k += 60) {
        size_t nb = 0;
        for (long j = k; j < k + 60 && j < secs; j++)
            nb += tick(g, t0 + j * S, j, false, big + nb);
        if (wt_store_write(st, "", big, nb) != 0)
            return 1;
        total += nb;
    }
    free(big);
    /* the writer's maintenance an hour later: rollups, chunks */
    double ca = now_s();
    bool more = true;
    while (more) {
        if (wt_store_maintain(st, t0 + secs * S + 3600 * S, 200000, &more) != 0)
            return 1;
    }
    double compact_s = now_s() - ca;
    long long blob_bytes = 0, chunked = 0;
    {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(wt_store_db(st),
                               "SELECT coalesce(sum(length(data)), 0), coalesce(sum(n), 0) FROM "
                               "chunks",
                               -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW) {
            blob_bytes = sqlite3_column_int64(q, 0);
            chunked = sqlite3_column_int64(q, 1);
        }
        sqlite3_finalize(q);
    }
    if (sqlite3_exec(wt_store_db(st), "VACUUM", NULL, NULL, NULL) != SQLITE_OK)
        return 1;
    wt_store_close(st); /* the last connection checkpoints the WAL into the database */
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", path);
    long long bytes = file_size(path) + file_size(wal);
    double per = (double)bytes / (double)total;
    double blob_per = chunked ? (double)blob_bytes / (double)chunked : 0;
    fprintf(stderr,
            "store_bench: insert %zu readings (%ld s of %d GPUs x %d series, 1-s flushes) in "
            "%.2f s = %.0f readings/s; %.3g h at rest (compacted in %.1f s, %lld of %zu readings "
            "in chunks): %.2f MB on disk = %.2f B/reading, chunk blobs %.2f B/reading\n",
            timed_total, timed, GPUS, NSER, ins_s, (double)timed_total / ins_s, day_h, compact_s,
            chunked, total, (double)bytes / 1e6, per, blob_per);
    unlink(path);
    unlink(wal);

    /* 3: the 16 energy series over QUERY_HOURS, queried raw and with rollups */
    memset(g, 0, sizeof g);
    for (int i = 0; i < GPUS; i++) {
        char idx[8], uuid[64];
        snprintf(idx, sizeof idx, "%d", i);
        snprintf(uuid, sizeof uuid, "GPU-5f3c1d2e-8a7b-4c6d-9e0f-%012d", i);
        (void)wt_labels(g[i].labels, sizeof g[i].labels, "gpu", idx, "uuid", uuid, "model",
                        "NVIDIA H200", NULL);
    }
    st = open_at(dir, "q.db", path, sizeof path);
    if (wt_store_begin_run(st, "", t0 - S, S, "bench") != 0)
        return 1;
    secs = (long)(query_h * 3600) + 120;
    big = calloc(3600 * 2 * GPUS, sizeof *big);
    size_t nb = 0;
    for (long k = 0; k < secs; k++) {
        nb += tick(g, t0 + k * S, k, true, big + nb);
        if (nb >= 3600 * 2 * GPUS - 2 * GPUS || k + 1 == secs) {
            if (wt_store_write(st, "", big, nb) != 0)
                return 1;
            nb = 0;
        }
    }
    free(big);
    a = now_s();
    more = true;
    while (more) {
        if (wt_store_maintain(st, t0 + secs * S, 200000, &more) != 0)
            return 1;
    }
    double roll_s = now_s() - a;
    /* an hour after the window: compacted into chunks */
    more = true;
    while (more) {
        if (wt_store_maintain(st, t0 + secs * S + 3600 * S, 200000, &more) != 0)
            return 1;
    }
    /* an exact window with edges inside minutes: 72 h starting 30.4 s in */
    int64_t from = t0 + 30 * S + 400 * WT_NS_PER_MS;
    int64_t to = from + (int64_t)(query_h * 3600) * S;
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    /* readings only, default, readings only decoded, default decoded */
    static const int qflags[4] = {WT_Q_RAW_ONLY, 0, WT_Q_RAW_ONLY | WT_Q_DECODE, WT_Q_DECODE};
    double t_q[4][5], e_q[4] = {0}, best[4];
    uint64_t dec[4] = {0};
    for (int rep = 0; rep < 5; rep++) {
        for (int m = 0; m < 4; m++) {
            uint64_t d0 = wt_store_chunks_decoded(st);
            a = now_s();
            if (wt_store_energy(st, from, to, qflags[m], &rows, &n, &err) != 0)
                return 1;
            t_q[m][rep] = now_s() - a;
            dec[m] = wt_store_chunks_decoded(st) - d0;
            e_q[m] = 0;
            for (size_t i = 0; i < n; i++)
                e_q[m] += rows[i].chosen ? rows[i].energy_j : 0;
            free(rows);
        }
    }
    for (int m = 0; m < 4; m++)
        best[m] = median(t_q[m], 5);
    double best_raw = best[0], best_roll = best[1];
    double e_raw = e_q[0], e_roll = e_q[1];
    fprintf(stderr,
            "store_bench: %.0f-h energy query over %zu series: with chunk summaries: raw %.2f ms, "
            "default %.2f ms (%llu, %llu chunks decoded); every chunk decoded: raw %.1f ms, "
            "default (rollups) %.2f ms (%llu, %llu decoded); rollups built in %.2f s; answers "
            "%.6f kWh, largest difference %.2g J (summaries vs decoded, readings only: %.2g J)\n",
            query_h, n, best[0] * 1e3, best[1] * 1e3, (unsigned long long)dec[0],
            (unsigned long long)dec[1], best[2] * 1e3, best[3] * 1e3, (unsigned long long)dec[2],
            (unsigned long long)dec[3], roll_s, e_q[0] / 3.6e6,
            fmax(fmax(fabs(e_q[0] - e_q[1]), fabs(e_q[0] - e_q[2])), fabs(e_q[1] - e_q[3])),
            fabs(e_q[0] - e_q[2]));
    wt_store_close(st);
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(path);
    unlink(wal);
    rmdir(dir);

    printf(
        "{\"section\": \"Store\", \"what\": \"ticks codec alone: readings encoded per "
        "second, one blob per 1-s tick of %d GPUs\", \"unit\": \"readings/s\", \"wattage\": %.0f, "
        "\"note\": \"%.2f B/reading; decoded again at %.0f readings/s; the store's write path "
        "with store.packed_ticks\"}\n",
        GPUS, tk_enc, tk_bytes, tk_dec);
    printf("{\"section\": \"Store\", \"what\": \"insert throughput, %d GPUs x %d series, one "
           "transaction per 1-s flush\", \"unit\": \"readings/s\", \"wattage\": %.0f}\n",
           GPUS, NSER, (double)timed_total / ins_s);
    printf("{\"section\": \"Store\", \"what\": \"insert throughput packed "
           "(store.packed_ticks), %d GPUs x %d series, one ticks row per 1-s flush\", \"unit\": "
           "\"readings/s\", \"wattage\": %.0f, \"note\": \"%.2f B/reading in the blobs; "
           "write(2) bytes %.1fx the blobs'\"}\n",
           GPUS, NSER, pk_rate, pk_per, pk_amp);
    printf(
        "{\"section\": \"Store\", \"what\": \"bytes per reading on disk, %.3g h of %d GPUs at "
        "1 s, at rest (chunks)\", \"unit\": \"B\", \"wattage\": %.2f, \"note\": \"%.2f MB for %zu "
        "readings; chunk blobs %.2f B/reading\"}\n",
        day_h, GPUS, per, (double)bytes / 1e6, total, blob_per);
    printf("{\"section\": \"Store\", \"what\": \"%.0f-h exact-window energy query, raw readings "
           "only\", \"unit\": \"ms\", \"wattage\": %.2f, \"note\": \"chunk summaries; every "
           "chunk decoded: %.1f ms\"}\n",
           query_h, best_raw * 1e3, best[2] * 1e3);
    printf("{\"section\": \"Store\", \"what\": \"%.0f-h exact-window energy query, default (chunk "
           "summaries, rollups where pruned)\", \"unit\": \"ms\", \"wattage\": %.3f, \"note\": "
           "\"same answer within %.2g J; schema 2's rollups + raw edges: %.2f ms\"}\n",
           query_h, best_roll * 1e3, fabs(e_raw - e_roll), best[3] * 1e3);
    return 0;
}
