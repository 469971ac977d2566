/* SPDX-License-Identifier: MIT */
/*
 * otlp_bench: what OTLP/HTTP export costs one core, beside remote_write_bench and on the same
 * fixture, on series shaped like the NVML
 * collector's for 8 GPUs (20 metrics each, the labels gpu, uuid and model; values with the
 * entropy of real ones: power with decimals, growing energy counters, integer clocks and bytes).
 *
 *   1. encode + compress: a 2000-sample ExportMetricsServiceRequest (160 series x 12-13 samples,
 *      1 s apart) packed with protobuf-c and gzip-compressed (zlib level 1), timed alone
 * (CLOCK_THREAD_CPUTIME_ID) RUNS times after a warm-up; samples per CPU second, median / min / max.
 *   2. bytes on the wire per sample: the compressed request's length / its samples (and the
 *      protobuf's before compression).
 *   3. from the store: a real SQLite store holding 160 series x 900 s, read through a new
 *      endpoint's cursor (wt_cursor_next), encoded and acknowledged (wt_cursor_ack) batch by
 *      batch until nothing is pending: samples per CPU second of the whole path but the network.
 *   4. end to end: the daemon's own senders (wt_otlp_open, and wt_remote_write_open beside it:
 *      cursor, encoder, libcurl POST, acknowledgement) stream the same store to an HTTP sink that
 *      answers 200 to every request, run in a forked child so that the process CPU time
 *      (CLOCK_PROCESS_CPUTIME_ID) is the sender's alone; samples per CPU second, 3 runs each.
 * Prints JSON lines for bench/run.sh's external section and a human line per figure on stderr.
 *   otlp_bench [RUNS]   (default 300)
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "serve/otlp.h"
#include "serve/remote_write.h"
#include "store/cursor.h"
#include "store/store.h"

#include "gpu_series.h"

#define BATCH 2000
#define STORE_S 900

static int encode_bench(int runs)
{
    struct wt_otlp_encoder *e = NULL;
    char l[WT_LABELS_LEN];
    if (wt_otlp_encoder_open("gpu-node-0042", "gpu-node-0042", &e) != 0)
        return 1;
    for (int s = 0; s < NSERIES; s++) {
        labels_of(s, l, sizeof l);
        if (wt_otlp_encoder_add(e, metrics[s % NMETRIC], l) != s)
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
        if (wt_otlp_encode(e, &b, true, &body, &len, &raw) != 0)
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
    printf("{\"section\": \"OTLP\", \"what\": \"encode + gzip, one core, %d-sample "
           "requests of %d series (otlp_bench)\", \"unit\": \"samples/s\", \"wattage\": "
           "{\"median\": %.0f, \"min\": %.0f, \"max\": %.0f, \"n\": %d}, \"note\": \"remote write: "
           "remote_write_bench\"}\n",
           BATCH, NSERIES, med, lo, hi, runs);
    printf("{\"section\": \"OTLP\", \"what\": \"bytes on the wire per sample (gzip; "
           "protobuf before it %.2f)\", \"unit\": \"B\", \"wattage\": %.3f}\n",
           raw_ps, wire);
    fprintf(stderr,
            "otlp_bench: encode+compress %.0f samples/s median (min %.0f, max %.0f) over "
            "%d runs; %.2f B/sample on the wire, %.2f B/sample protobuf\n",
            med, lo, hi, runs, wire, raw_ps);
    free(rate);
    free(b.s);
    wt_otlp_encoder_close(e);
    return 0;
}

static int store_bench(void)
{
    char dir[] = "/tmp/wt-otlpbench-XXXXXX", path[256];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/s.db", dir);
    if (wt_store_open(path, NULL, &st, &err) != 0) {
        fprintf(stderr, "otlp_bench: %s\n", err.msg);
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
        struct wt_otlp_encoder *e = NULL;
        struct wt_cursor_batch b = {0};
        size_t total = 0;
        snprintf(name, sizeof name, "bench-%d", run);
        if (wt_cursor_open(path, name, t0 - 1, &c, &err) != 0 ||
            wt_otlp_encoder_open("gpu-node-0042", "gpu-node-0042", &e) != 0) {
            fprintf(stderr, "otlp_bench: %s\n", err.msg);
            return 1;
        }
        double c0 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
        int n = wt_cursor_refresh(c, NULL, NULL);
        for (int i = 0; i < n; i++) {
            const struct wt_cursor_series *s = wt_cursor_series_at(c, (size_t)i);
            if (wt_otlp_encoder_add(e, s->metric, s->labels) != i)
                return 1;
        }
        bool more = true;
        while (more) {
            const char *body;
            size_t len;
            if (wt_cursor_next(c, BATCH, &b, &more) != 0 || !b.n)
                break;
            if (wt_otlp_encode(e, &b, true, &body, &len, NULL) != 0 || wt_cursor_ack(c, &b) != 0)
                return 1;
            total += b.n;
        }
        double c1 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
        rate[run] = (double)total / (c1 - c0);
        if (total != (size_t)NSERIES * STORE_S) {
            fprintf(stderr, "otlp_bench: read %zu of %d readings\n", total, NSERIES * STORE_S);
            return 1;
        }
        wt_cursor_batch_free(&b);
        wt_otlp_encoder_close(e);
        wt_cursor_close(c);
    }
    double med, lo, hi;
    figures(rate, 3, &med, &lo, &hi);
    printf("{\"section\": \"OTLP\", \"what\": \"store -> cursor -> encode + gzip -> ack, "
           "one core, %d series x %d s (otlp_bench)\", \"unit\": \"samples/s\", "
           "\"wattage\": {\"median\": %.0f, \"min\": %.0f, \"max\": %.0f, \"n\": 3}}\n",
           NSERIES, STORE_S, med, lo, hi);
    fprintf(stderr,
            "otlp_bench: from the store %.0f samples/s median (min %.0f, max %.0f) over "
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

/* The child: an HTTP/1.1 sink on loopback that reads each request whole and answers 200 (keeping
 * the connection); its port goes up the pipe; it lives until the parent closes the other pipe. */
static void sink_child(int wfd, int rfd)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 16) ||
        getsockname(ls, (struct sockaddr *)&a, &al))
        _exit(1);
    int port = ntohs(a.sin_port);
    if (write(wfd, &port, sizeof port) != sizeof port)
        _exit(1);
    close(wfd);
    if (fork() == 0) { /* the watcher: the parent's pipe closing ends the sink */
        char c;
        while (read(rfd, &c, 1) > 0)
            ;
        kill(getppid(), SIGTERM);
        _exit(0);
    }
    static char buf[1 << 20];
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            continue;
        size_t have = 0;
        for (;;) {
            ssize_t r = read(c, buf + have, sizeof buf - 1 - have);
            if (r <= 0)
                break;
            have += (size_t)r;
            buf[have] = '\0';
            char *end;
            while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
                char *cl = strcasestr(buf, "Content-Length:");
                size_t body = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
                size_t whole = (size_t)(end + 4 - buf) + body;
                if (have < whole)
                    break;
                static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
                if (write(c, ok, sizeof ok - 1) < 0)
                    break;
                memmove(buf, buf + whole, have - whole);
                have -= whole;
                buf[have] = '\0';
            }
        }
        close(c);
    }
}

static int e2e_bench(void)
{
    char dir[] = "/tmp/wt-otlpe2e-XXXXXX", path[256], yaml[1024];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    int up[2], down[2], port = 0;
    if (!mkdtemp(dir) || pipe(up) || pipe(down))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        sink_child(up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    if (read(up[0], &port, sizeof port) != sizeof port || !port) {
        fprintf(stderr, "otlp_bench: the sink did not start\n");
        return 1;
    }
    close(up[0]);
    snprintf(path, sizeof path, "%s/s.db", dir);
    if (wt_store_open(path, NULL, &st, &err) != 0) {
        fprintf(stderr, "otlp_bench: %s\n", err.msg);
        return 1;
    }
    int64_t t0 = wt_now_real_ns() - (int64_t)(STORE_S + 60) * WT_NS_PER_S;
    if (write_series(st, t0, STORE_S, 1000) != 0)
        return 1;
    wt_store_close(st);
    uint64_t want = (uint64_t)NSERIES * STORE_S;
    static const char *const kind[2] = {"otlp", "remote_write"};
    double rate[2][3];
    for (int k = 0; k < 2; k++) {
        for (int run = 0; run < 3; run++) {
            struct wt_config cfg;
            struct wt_rw_stats rs = {0};
            struct wt_otlp *o = NULL;
            struct wt_remote_write *rw = NULL;
            snprintf(yaml, sizeof yaml,
                     "store:\n  path: %s\ntopology:\n  node: gpu-node-0042\n%s:\n"
                     "  - url: http://127.0.0.1:%d/v1/metrics\n    name: bench-%d\n"
                     "    deadline: 100ms\n    batch_size: %d\n",
                     path, kind[k], port, run, BATCH);
            wt_config_defaults(&cfg);
            if (wt_config_load_string("bench.yaml", yaml, strlen(yaml), &cfg, &err) != 0) {
                fprintf(stderr, "otlp_bench: %s\n", err.msg);
                return 1;
            }
            double c0 = cpu_of(CLOCK_PROCESS_CPUTIME_ID);
            int64_t w0 = wt_now_mono_ns();
            int rc = k == 0 ? wt_otlp_open(&cfg, NULL, &o, &err)
                            : wt_remote_write_open(&cfg, NULL, &rw, &err);
            if (rc != 0) {
                fprintf(stderr, "otlp_bench: %s\n", err.msg);
                return 1;
            }
            while ((k == 0 ? wt_otlp_stats(o, 0, &rs) : wt_remote_write_stats(rw, 0, &rs)) == 0 &&
                   rs.sent < want && wt_now_mono_ns() - w0 < 120 * WT_NS_PER_S) {
                struct timespec ts = {0, 2000000};
                nanosleep(&ts, NULL);
            }
            double c1 = cpu_of(CLOCK_PROCESS_CPUTIME_ID);
            wt_otlp_close(o);
            wt_remote_write_close(rw);
            wt_config_free(&cfg);
            if (rs.sent != want) {
                fprintf(stderr, "otlp_bench: %s delivered %llu of %llu readings\n", kind[k],
                        (unsigned long long)rs.sent, (unsigned long long)want);
                return 1;
            }
            rate[k][run] = (double)want / (c1 - c0);
        }
    }
    close(down[1]);
    waitpid(pid, NULL, 0);
    for (int k = 0; k < 2; k++) {
        double med, lo, hi;
        figures(rate[k], 3, &med, &lo, &hi);
        /* one run measures both senders on one sink: the remote write row says where it was
         * measured rather than passing for otlp_bench's own figure */
        printf("{\"section\": \"%s\", \"what\": \"store -> cursor -> encode -> HTTP POST (libcurl, "
               "loopback sink) -> ack, per CPU second of the sender, %d series x %d s "
               "(%s)\", \"unit\": \"samples/s\", \"wattage\": {\"median\": %.0f, "
               "\"min\": %.0f, \"max\": %.0f, \"n\": 3}}\n",
               k == 0 ? "OTLP" : "Remote write", NSERIES, STORE_S,
               k == 0 ? "otlp_bench" : "remote write sender, run by otlp_bench beside OTLP", med,
               lo, hi);
        fprintf(stderr,
                "otlp_bench: %s end to end %.0f samples/s per CPU second median (min %.0f, max "
                "%.0f), 3 runs of %d readings\n",
                kind[k], med, lo, hi, NSERIES * STORE_S);
    }
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
    wt_log_set_level(WT_LOG_WARN);
    if (encode_bench(runs) != 0) {
        fprintf(stderr, "otlp_bench: the encoder failed\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    if (store_bench() != 0)
        return 1;
    return e2e_bench();
}
