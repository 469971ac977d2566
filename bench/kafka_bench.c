/* SPDX-License-Identifier: MIT */
/*
 * kafka_bench: what the Kafka stream costs one core, on series shaped like the NVML collector's
 * for 8 GPUs (20 metrics each, labels gpu, uuid and model), beside remote_write_bench.
 *
 *   1. encode: 5000-reading batches (160 series x 31-32 ticks) turned into one JSON message per
 *      tick (wt_kafka_encode), timed alone (CLOCK_THREAD_CPUTIME_ID) RUNS times after a warm-up;
 *      samples and messages per CPU second, median / min / max; bytes per sample.
 *   2. end to end: a real SQLite store holding 160 series x 900 s, streamed by the daemon's own
 *      sender (wt_kafka_open: cursor, encoder, idempotent producer, delivery reports, cursor
 *      commits) into librdkafka's mock cluster, which runs in a child process so that this
 *      process's CPU time (CLOCK_PROCESS_CPUTIME_ID: the sender and librdkafka's threads) is the
 *      client's alone; messages and samples per CPU second until every reading is delivered, and
 *      per wall second.
 * Prints JSON lines for bench/run.sh's external section and a human line per figure on stderr.
 *   kafka_bench [RUNS]   (default 300)
 */
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "serve/kafka.h"
#include "store/cursor.h"
#include "store/store.h"

#include "gpu_series.h"

#define BATCH 5000
#define STORE_S 900

static int encode_bench(int runs)
{
    struct wt_kafka_encoder *e = NULL;
    char l[WT_LABELS_LEN];
    if (wt_kafka_encoder_open("gpu-node-0042", &e) != 0)
        return 1;
    for (int s = 0; s < NSERIES; s++) {
        labels_of(s, l, sizeof l);
        if (wt_kafka_encoder_add(e, metrics[s % NMETRIC], l) != s)
            return 1;
    }
    int ticks = (BATCH + NSERIES - 1) / NSERIES;
    struct wt_cursor_batch b = {calloc((size_t)NSERIES * ticks, sizeof *b.s), 0, BATCH};
    double *rate = calloc((size_t)runs, sizeof *rate), *mrate = calloc((size_t)runs, sizeof *mrate);
    double bytes = 0;
    if (!b.s || !rate || !mrate)
        return 1;
    int64_t t0 = 1700000000LL * WT_NS_PER_S;
    for (int r = -20; r < runs; r++) {
        int base = (r + 20) * ticks;
        b.n = 0;
        for (int s = 0; s < NSERIES; s++) /* grouped by series, as the cursor gives them */
            for (int k = 0; k < ticks && b.n < BATCH; k++)
                if ((size_t)s * ticks + k < BATCH)
                    b.s[b.n++] = (struct wt_cursor_sample){
                        (uint32_t)s, t0 + (int64_t)(base + k) * WT_NS_PER_S + 123456789,
                        value_of(s, base + k)};
        const char *buf;
        const struct wt_kafka_msg *m;
        size_t n;
        double c0 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
        if (wt_kafka_encode(e, &b, &buf, &m, &n) != 0)
            return 1;
        double dt = cpu_of(CLOCK_THREAD_CPUTIME_ID) - c0;
        if (r < 0)
            continue;
        if (dt < 1e-9)
            dt = 1e-9;
        rate[r] = (double)b.n / dt;
        mrate[r] = (double)n / dt;
        size_t total = 0;
        for (size_t i = 0; i < n; i++)
            total += m[i].len;
        bytes += (double)total / (double)b.n;
    }
    double med, lo, hi, mmed, mlo, mhi;
    figures(rate, runs, &med, &lo, &hi);
    figures(mrate, runs, &mmed, &mlo, &mhi);
    bytes /= runs;
    printf("{\"section\": \"Kafka\", \"what\": \"JSON encode, one core, %d-reading batches of %d "
           "series (kafka_bench)\", \"unit\": \"samples/s\", \"wattage\": {\"median\": %.0f, "
           "\"min\": %.0f, \"max\": %.0f, \"n\": %d}}\n",
           BATCH, NSERIES, med, lo, hi, runs);
    printf("{\"section\": \"Kafka\", \"what\": \"bytes per sample in the JSON messages (no "
           "compression)\", \"unit\": \"B\", \"wattage\": %.1f}\n",
           bytes);
    fprintf(stderr,
            "kafka_bench: encode %.0f samples/s median (min %.0f, max %.0f), %.0f messages/s, "
            "%.1f B/sample over %d runs\n",
            med, lo, hi, mmed, bytes, runs);
    free(rate);
    free(mrate);
    free(b.s);
    wt_kafka_encoder_close(e);
    return 0;
}

/* The child: a mock cluster with topic "bench"; its address goes up the pipe; it lives until
 * the parent closes the other pipe. */
static void mock_child(int wfd, int rfd)
{
    char errstr[256], c;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr); /* no bootstrap: fine */
    rd_kafka_t *h = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    rd_kafka_mock_cluster_t *mc = h ? rd_kafka_mock_cluster_new(h, 1) : NULL;
    if (!mc || rd_kafka_mock_topic_create(mc, "bench", 1, 1) != RD_KAFKA_RESP_ERR_NO_ERROR)
        _exit(1);
    const char *boot = rd_kafka_mock_cluster_bootstraps(mc);
    if (write(wfd, boot, strlen(boot) + 1) < 0)
        _exit(1);
    close(wfd);
    while (read(rfd, &c, 1) > 0)
        ;
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(h);
    _exit(0);
}

static int e2e_bench(void)
{
    char dir[] = "/tmp/wt-kafkabench-XXXXXX", path[256], boot[256] = "", yaml[1024];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    int up[2], down[2];
    if (!mkdtemp(dir) || pipe(up) || pipe(down))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        mock_child(up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    size_t got = 0;
    ssize_t r;
    while (got < sizeof boot - 1 && (r = read(up[0], boot + got, sizeof boot - 1 - got)) > 0) {
        got += (size_t)r;
        if (memchr(boot, '\0', got))
            break;
    }
    close(up[0]);
    if (!boot[0]) {
        fprintf(stderr, "kafka_bench: the mock cluster did not start\n");
        return 1;
    }

    snprintf(path, sizeof path, "%s/s.db", dir);
    if (wt_store_open(path, NULL, &st, &err) != 0) {
        fprintf(stderr, "kafka_bench: %s\n", err.msg);
        return 1;
    }
    int64_t t0 = wt_now_real_ns() - (int64_t)(STORE_S + 60) * WT_NS_PER_S;
    if (write_series(st, t0, STORE_S, 0) != 0) /* a tick: one time for all */
        return 1;
    wt_store_close(st);

    double srate[3], mrate[3], wrate[3];
    uint64_t want = (uint64_t)NSERIES * STORE_S;
    for (int run = 0; run < 3; run++) {
        struct wt_config cfg;
        struct wt_kafka *k = NULL;
        struct wt_kafka_stats ks = {0};
        snprintf(yaml, sizeof yaml,
                 "store:\n  path: %s\ntopology:\n  node: gpu-node-0042\nkafka:\n  brokers: %s\n"
                 "  topic: bench\n  name: bench-%d\n  deadline: 100ms\n  batch_size: %d\n",
                 path, boot, run, BATCH);
        wt_config_defaults(&cfg);
        if (wt_config_load_string("bench.yaml", yaml, strlen(yaml), &cfg, &err) != 0) {
            fprintf(stderr, "kafka_bench: %s\n", err.msg);
            return 1;
        }
        double c0 = cpu_of(CLOCK_PROCESS_CPUTIME_ID);
        int64_t w0 = wt_now_mono_ns();
        if (wt_kafka_open(&cfg, NULL, &k, &err) != 0) {
            fprintf(stderr, "kafka_bench: %s\n", err.msg);
            return 1;
        }
        while (wt_kafka_stats(k, &ks) == 0 && ks.samples_sent < want &&
               wt_now_mono_ns() - w0 < 120 * WT_NS_PER_S) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        double c1 = cpu_of(CLOCK_PROCESS_CPUTIME_ID);
        double w = (double)(wt_now_mono_ns() - w0) / WT_NS_PER_S;
        wt_kafka_close(k);
        wt_config_free(&cfg);
        if (ks.samples_sent != want || ks.messages_sent != STORE_S) {
            fprintf(stderr, "kafka_bench: delivered %llu of %llu readings in %llu messages\n",
                    (unsigned long long)ks.samples_sent, (unsigned long long)want,
                    (unsigned long long)ks.messages_sent);
            return 1;
        }
        srate[run] = (double)want / (c1 - c0);
        mrate[run] = STORE_S / (c1 - c0);
        wrate[run] = STORE_S / w;
    }
    close(down[1]);
    waitpid(pid, NULL, 0);
    double med, lo, hi, mmed, mlo, mhi, wmed, wlo, whi;
    figures(srate, 3, &med, &lo, &hi);
    figures(mrate, 3, &mmed, &mlo, &mhi);
    figures(wrate, 3, &wmed, &wlo, &whi);
    printf("{\"section\": \"Kafka\", \"what\": \"store -> cursor -> JSON -> idempotent producer -> "
           "delivery reports -> cursor commit, per CPU second of the client, %d series x %d s "
           "into the mock cluster (kafka_bench)\", \"unit\": \"samples/s\", \"wattage\": "
           "{\"median\": %.0f, \"min\": %.0f, \"max\": %.0f, \"n\": 3}}\n",
           NSERIES, STORE_S, med, lo, hi);
    printf("{\"section\": \"Kafka\", \"what\": \"the same, messages (one per tick of %d "
           "readings)\", \"unit\": \"messages/s\", \"wattage\": {\"median\": %.0f, \"min\": %.0f, "
           "\"max\": %.0f, \"n\": 3}}\n",
           NSERIES, mmed, mlo, mhi);
    printf("{\"section\": \"Kafka\", \"what\": \"the same per wall second (messages; one batch "
           "in flight at a time)\", \"unit\": \"messages/s\", \"wattage\": {\"median\": %.0f, "
           "\"min\": %.0f, \"max\": %.0f, \"n\": 3}}\n",
           wmed, wlo, whi);
    fprintf(stderr,
            "kafka_bench: end to end %.0f samples/s and %.0f messages/s per CPU second (min "
            "%.0f, max %.0f samples/s), %.0f messages/s per wall second, 3 runs of %d readings\n",
            med, mmed, lo, hi, wmed, NSERIES * STORE_S);
    char f[300];
    snprintf(f, sizeof f, "%s-wal", path);
    unlink(f);
    snprintf(f, sizeof f, "%s-shm", path);
    unlink(f);
    unlink(path);
    rmdir(dir);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 300;
    if (runs < 1)
        runs = 1;
    signal(SIGPIPE, SIG_IGN);
    wt_log_set_level(WT_LOG_WARN);
    if (encode_bench(runs) != 0) {
        fprintf(stderr, "kafka_bench: the encoder failed\n");
        return 1;
    }
    return e2e_bench();
}
