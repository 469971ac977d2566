/* SPDX-License-Identifier: MIT */
/*
 * remote_write_bench: what remote write costs one core, on series shaped like the NVML
 * collector's for 8 GPUs (20 metrics each, the labels gpu, uuid and model; values with the
 * entropy of real ones: power with decimals, growing energy counters, integer clocks and bytes).
 *
 *   1. encode + compress: a 2000-sample WriteRequest (160 series x 12-13 samples, 1 s apart) packed
 *      with protobuf-c and snappy-compressed, timed alone (CLOCK_THREAD_CPUTIME_ID) RUNS times
 *      after a warm-up; samples per CPU second, median / min / max.
 *   2. bytes on the wire per sample: the compressed request's length / its samples (and the
 *      protobuf's before compression).
 *   3. from the store: a real SQLite store holding 160 series x 900 s, read through a new
 *      endpoint's cursor (wt_cursor_next), encoded and acknowledged (wt_cursor_ack) batch by
 *      batch until nothing is pending: samples per CPU second of the whole path but the network.
 * Prints JSON lines for bench/run.sh's external section and a human line per figure on stderr.
 *   remote_write_bench [RUNS]   (default 300)
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "serve/remote_write.h"
#include "store/cursor.h"
#include "store/store.h"

#include "gpu_series.h"

#define BATCH 2000
#define STORE_S 900

static int encode_bench(int runs)
{
    struct wt_rw_encoder *e = NULL;
    char l[WT_LABELS_LEN];
    if (wt_remote_write_encoder_open("gpu-node-0042", &e) != 0)
        return 1;
    for (int s = 0; s < NSERIES; s++) {
        labels_of(s, l, sizeof l);
        if (wt_remote_write_encoder_add(e, metrics[s % NMETRIC], l) != s)
            return 1;
    }
    struct wt_cursor_batch b = {calloc(BATCH, sizeof *b.s), 0, BATCH};
    double *rate = calloc((size_t)runs, sizeof *rate);
    double wire = 0, raw_ps = 0;
    if (!b.s || !rate)
        return 1;
    int64_t t0 = 1700000000LL * WT_NS_PER_S;
    for (int r = -20; r < runs; r++) {
        /* each run a new time span, as consecutive requests are */
        int base = (r + 20) * 13;
        b.n = 0;
        for (int s = 0; s < NSERIES && b.n < BATCH; s++)
            for (int k = 0; k < 13 && b.n < BATCH; k++)
                b.s[b.n++] = (struct wt_cursor_sample){
                    (uint32_t)s, t0 + (int64_t)(base + k) * WT_NS_PER_S + 123456789,
                    value_of(s, base + k)};
        const char *body;
        size_t len, raw;
        double c0 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
        if (wt_remote_write_encode(e, &b, &body, &len, &raw) != 0)
            return 1;
        double c1 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
        if (r < 0)
            continue;
        rate[r] = (double)b.n / (c1 - c0 > 1e-9 ? c1 - c0 : 1e-9);
        wire += (double)len / (double)b.n;
        raw_ps += (double)raw / (double)b.n;
    }
    double med, lo, hi;
    figures(rate, runs, &med, &lo, &hi);
    wire /= runs;
    raw_ps /= runs;
    printf("{\"section\": \"Remote write\", \"what\": \"encode + snappy, one core, %d-sample "
           "requests of %d series (remote_write_bench)\", \"unit\": \"samples/s\", \"wattage\": "
           "{\"median\": %.0f, \"min\": %.0f, \"max\": %.0f, \"n\": %d}, \"note\": \"goal >= "
           "500000\"}\n",
           BATCH, NSERIES, med, lo, hi, runs);
    printf("{\"section\": \"Remote write\", \"what\": \"bytes on the wire per sample (snappy; "
           "protobuf before it %.2f)\", \"unit\": \"B\", \"wattage\": %.3f}\n",
           raw_ps, wire);
    fprintf(stderr,
            "remote_write_bench: encode+compress %.0f samples/s median (min %.0f, max %.0f) over "
            "%d runs; %.2f B/sample on the wire, %.2f B/sample protobuf\n",
            med, lo, hi, runs, wire, raw_ps);
    free(rate);
    free(b.s);
    wt_remote_write_encoder_close(e);
    return 0;
}

static int store_bench(void)
{
    char dir[] = "/tmp/wt-rwbench-XXXXXX", path[256];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/s.db", dir);
    if (wt_store_open(path, NULL, &st, &err) != 0) {
        fprintf(stderr, "remote_write_bench: %s\n", err.msg);
        return 1;
    }
    int64_t t0 = 1700000000LL * WT_NS_PER_S;
    if (write_series(st, t0, STORE_S, 1000) != 0)
        return 1;
    wt_store_close(st);
    double rate[3];
    for (int run = 0; run < 3; run++) {
        char name[32];
        struct wt_cursor *c = NULL;
        struct wt_rw_encoder *e = NULL;
        struct wt_cursor_batch b = {0};
        size_t total = 0;
        snprintf(name, sizeof name, "bench-%d", run);
        if (wt_cursor_open(path, name, t0 - 1, &c, &err) != 0 ||
            wt_remote_write_encoder_open("gpu-node-0042", &e) != 0) {
            fprintf(stderr, "remote_write_bench: %s\n", err.msg);
            return 1;
        }
        double c0 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
        int n = wt_cursor_refresh(c, NULL, NULL);
        for (int i = 0; i < n; i++) {
            const struct wt_cursor_series *s = wt_cursor_series_at(c, (size_t)i);
            if (wt_remote_write_encoder_add(e, s->metric, s->labels) != i)
                return 1;
        }
        bool more = true;
        while (more) {
            const char *body;
            size_t len;
            if (wt_cursor_next(c, BATCH, &b, &more) != 0 || !b.n)
                break;
            if (wt_remote_write_encode(e, &b, &body, &len, NULL) != 0 || wt_cursor_ack(c, &b) != 0)
                return 1;
            total += b.n;
        }
        double c1 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
        rate[run] = (double)total / (c1 - c0);
        if (total != (size_t)NSERIES * STORE_S) {
            fprintf(stderr, "remote_write_bench: read %zu of %d readings\n", total,
                    NSERIES * STORE_S);
            return 1;
        }
        wt_cursor_batch_free(&b);
        wt_remote_write_encoder_close(e);
        wt_cursor_close(c);
    }
    double med, lo, hi;
    figures(rate, 3, &med, &lo, &hi);
    printf("{\"section\": \"Remote write\", \"what\": \"store -> cursor -> encode + snappy -> ack, "
           "one core, %d series x %d s (remote_write_bench)\", \"unit\": \"samples/s\", "
           "\"wattage\": {\"median\": %.0f, \"min\": %.0f, \"max\": %.0f, \"n\": 3}}\n",
           NSERIES, STORE_S, med, lo, hi);
    fprintf(stderr,
            "remote_write_bench: from the store %.0f samples/s median (min %.0f, max %.0f) over "
            "%d readings, 3 runs\n",
            med, lo, hi, NSERIES * STORE_S);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "%s-wal", path);
    unlink(cmd);
    snprintf(cmd, sizeof cmd, "%s-shm", path);
    unlink(cmd);
    unlink(path);
    rmdir(dir);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 300;
    if (runs < 1)
        runs = 1;
    wt_log_set_level(WT_LOG_WARN);
    if (encode_bench(runs) != 0) {
        fprintf(stderr, "remote_write_bench: the encoder failed\n");
        return 1;
    }
    return store_bench();
}
