/* SPDX-License-Identifier: MIT */
/*
 * expo_parse_bench: what parsing one scrape of a vLLM V1 /metrics costs. The body is made here
 * in prometheus_client's single-process layout (HELP, TYPE, labels sorted, a _created gauge
 * family after each counter and histogram, buckets then _count then _sum), with the families
 * and bucket bounds of the field notes, filled with Python process metrics and more histograms
 * up to 300 series. Two cases: the scraper's (a filter keeping 6 families, 32 series, and the
 * e2e latency p99 from their buckets) and every sample handed on. Each parse is timed alone in
 * CPU time (CLOCK_PROCESS_CPUTIME_ID) after a warm-up. A third case is the whole scrape: the
 * inference collector's own poll (libcurl's GET over one kept-alive loopback connection, from a
 * server thread here that answers the same body, then the parse, the selection and the
 * readings), timed in the polling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: the server
 * thread's work is not the daemon's). Prints median, min and max as JSON lines for
 * bench/run.sh's external section, and a human line on stderr.
 *   expo_parse_bench [PARSES]   (default 5000; the scrape case runs a fifth of them)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/expo_parse.h"
#include "collect/hist_quantile.h"
#include "core/config.h"

#define SERIES 300
#define E2E_NAME "vllm:e2e_request_latency_seconds"
#define WARMUP 200
#define LBL "engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\""

struct body {
    char *p;
    size_t len, cap;
    int series;
};

static void put(struct body *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct body *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            exit(1);
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap * 2 + (size_t)n;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            exit(1);
    }
}

static void meta(struct body *b, const char *name, const char *type, const char *help)
{
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void created(struct body *b, const char *base, const char *help)
{
    char n[160];
    snprintf(n, sizeof n, "%s_created", base);
    meta(b, n, "gauge", help);
    put(b, "%s{" LBL "} 1.7512896e+09\n", n);
    b->series++;
}

static void counter(struct body *b, const char *base, const char *help, double v)
{
    char n[160];
    snprintf(n, sizeof n, "%s_total", base);
    meta(b, n, "counter", help);
    put(b, "%s{" LBL "} %.1f\n", n, v);
    b->series++;
    created(b, base, help);
}

static void histogram(struct body *b, const char *name, const char *help, const double *le,
                      size_t n, double total)
{
    meta(b, name, "histogram", help);
    for (size_t i = 0; i <= n; i++) {
        char bound[32];
        if (i == n)
            snprintf(bound, sizeof bound, "+Inf");
        else
            snprintf(bound, sizeof bound, "%.17g", le[i]);
        if (!strchr(bound, '.') && !strchr(bound, 'e') && i < n)
            strcat(bound, ".0");
        /* Most observations in the lower half of the bounds, none past the last. */
        double c =
            i + 1 >= n ? total : floor(total * (1 - exp(-6.0 * (double)(i + 1) / (double)n)));
        put(b,
            "%s_bucket{engine=\"0\",le=\"%s\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"}"
            " %.1f\n",
            name, bound, c);
    }
    put(b, "%s_count{" LBL "} %.1f\n%s_sum{" LBL "} %.3f\n", name, total, name, total * 3.7);
    b->series += (int)n + 3;
    created(b, name, help);
}

static const double lat[] = {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,  20,
                             30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680};
static const double ttft[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                              0.75,  1,     2.5,  5,    7.5,  10,   20,   40,  80,   160};
static const double itl[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                             0.75, 1,     2.5,  5,     7.5, 10,   20,  40,  80};
static const double tok[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 8192};

static void make_body(struct body *b)
{
    /* Python's own metrics first, as prometheus_client writes them. */
    meta(b, "python_gc_objects_collected_total", "counter", "Objects collected during gc");
    for (int g = 0; g < 3; g++)
        put(b, "python_gc_objects_collected_total{generation=\"%d\"} %d.0\n", g, 1000 * (g + 1));
    b->series += 3;
    meta(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    put(b, "process_resident_memory_bytes 4.294967296e+09\n");
    meta(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time.");
    put(b, "process_cpu_seconds_total 1234.56\n");
    b->series += 2;
    meta(b, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
    put(b, "vllm:num_requests_running{" LBL "} 4.0\n");
    meta(b, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
    put(b, "vllm:num_requests_waiting{" LBL "} 0.0\n");
    meta(b, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
    put(b, "vllm:kv_cache_usage_perc{" LBL "} 0.0712\n");
    b->series += 3;
    counter(b, "vllm:prompt_tokens", "Number of prefill tokens processed.", 512000);
    counter(b, "vllm:generation_tokens", "Number of generation tokens processed.", 96000);
    meta(b, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
    const char *reasons[] = {"stop", "length", "abort", "error"};
    for (int i = 0; i < 4; i++)
        put(b,
            "vllm:request_success_total{engine=\"0\",finished_reason=\"%s\",model_name=\"meta-"
            "llama/Llama-3.1-8B-Instruct\"} %d.0\n",
            reasons[i], 150 / (i + 1));
    b->series += 4;
    histogram(b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              lat, sizeof lat / sizeof lat[0], 200);
    histogram(b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              ttft, sizeof ttft / sizeof ttft[0], 204);
    histogram(b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              itl, sizeof itl / sizeof itl[0], 95796);
    histogram(b, "vllm:request_prompt_tokens", "Number of prefill tokens processed.", tok,
              sizeof tok / sizeof tok[0], 200);
    histogram(b, "vllm:request_generation_tokens", "Number of generation tokens processed.", tok,
              sizeof tok / sizeof tok[0], 200);
    histogram(b, "vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
              tok, sizeof tok / sizeof tok[0], 21404);
    const char *phases[] = {"queue", "prefill", "decode", "inference"};
    for (int i = 0; i < 4 && b->series < SERIES; i++) {
        char n[96];
        snprintf(n, sizeof n, "vllm:request_%s_time_seconds", phases[i]);
        histogram(b, n, "Histogram of time spent in a phase of the request.", lat,
                  sizeof lat / sizeof lat[0], 200);
    }
    /* Gauges to make up the rest. */
    if (b->series < SERIES)
        meta(b, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
    for (int i = 0; b->series < SERIES; i++) {
        put(b, "vllm:cache_config_info{block_size=\"%d\"," LBL "} 1.0\n", 16 + i);
        b->series++;
    }
}

static const char *const keep[] = {
    "vllm:prompt_tokens_total",   "vllm:generation_tokens_total",
    "vllm:request_success_total", "vllm:num_requests_running",
    "vllm:num_requests_waiting",  "vllm:e2e_request_latency_seconds"};

struct acc {
    bool filter;
    int samples;
    double sum;
    struct wt_hist_bucket b[32];
    size_t nb;
};

static bool want(void *ctx, const struct wt_expo_parse_family *f)
{
    const struct acc *a = ctx;
    if (!a->filter)
        return true;
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        if (wt_expo_parse_family_is(f, keep[i], strlen(keep[i])))
            return true;
    }
    return false;
}

static int sample(void *ctx, const struct wt_expo_parse_family *f,
                  const struct wt_expo_parse_sample *s)
{
    struct acc *a = ctx;
    a->samples++;
    a->sum += s->value;
    if (s->suffix == WT_EXPO_PARSE_SFX_BUCKET && a->nb < 32 &&
        wt_expo_parse_family_is(f, E2E_NAME, sizeof E2E_NAME - 1)) {
        a->b[a->nb].le = s->le;
        a->b[a->nb].count = s->value;
        a->nb++;
    }
    return 0;
}

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static int one(const struct body *b, bool filter, int parses)
{
    double *t = malloc(sizeof *t * (size_t)parses);
    if (!t)
        return 1;
    struct acc a = {0};
    double p99 = NAN;
    for (int i = -WARMUP; i < parses; i++) {
        a = (struct acc){.filter = filter};
        struct wt_err err = {{0}};
        struct wt_expo_parse_opts o = {.family = want, .sample = sample, .ctx = &a};
        double t0 = cpu_us();
        int rc = wt_expo_parse(b->p, b->len, &o, &err);
        p99 = wt_hist_quantile(0.99, a.b, a.nb);
        double t1 = cpu_us();
        if (rc) {
            fprintf(stderr, "expo_parse_bench: %s\n", err.msg);
            free(t);
            return 1;
        }
        if (i >= 0)
            t[i] = t1 - t0;
    }
    qsort(t, (size_t)parses, sizeof *t, by_value);
    double med = t[parses / 2];
    const char *what = filter ? "keeping 6 families and the e2e p99" : "every sample handed on";
    fprintf(stderr,
            "expo_parse_bench: %d series, %zu bytes, %s: %d samples, median %.1f us CPU "
            "(min %.1f, max %.1f)\n",
            b->series, b->len, what, a.samples, med, t[0], t[parses - 1]);
    printf("{\"section\": \"Scrape parsing\", \"what\": \"parse a %d-series vLLM /metrics (%zu "
           "bytes), %s\", \"unit\": \"us\", \"wattage\": {\"median\": %.2f, \"min\": %.2f, "
           "\"max\": %.2f, \"n\": %d}, \"peer\": null, \"peer_name\": null, \"note\": \"CPU time; "
           "%d samples handed on; e2e p99 %.4g s\"}\n",
           b->series, b->len, what, med, t[0], t[parses - 1], parses, a.samples, p99);
    free(t);
    return 0;
}

/* ---- the scrape: the collector's poll against a loopback server ---- */

struct server {
    int fd;
    const struct body *b;
};

/* Answers every GET on a connection with the body, as a kept-alive HTTP/1.1 server does. */
static void *serve(void *arg)
{
    struct server *sv = arg;
    char head[256], req[8192];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; "
                      "charset=utf-8\r\nContent-Length: %zu\r\n\r\n",
                      sv->b->len);
    for (;;) {
        int c = accept(sv->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        size_t have = 0;
        for (;;) {
            ssize_t r = read(c, req + have, sizeof req - 1 - have);
            if (r <= 0)
                break;
            have += (size_t)r;
            req[have] = '\0';
            char *end = strstr(req, "\r\n\r\n");
            if (!end) {
                if (have == sizeof req - 1)
                    break;
                continue;
            }
            size_t used = (size_t)(end + 4 - req);
            memmove(req, req + used, have - used);
            have -= used;
            if (write(c, head, (size_t)hl) != hl ||
                write(c, sv->b->p, sv->b->len) != (ssize_t)sv->b->len)
                break;
        }
        close(c);
    }
}

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int scrape(const struct body *b, int polls)
{
    struct server sv = {.fd = socket(AF_INET, SOCK_STREAM, 0), .b = b};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (sv.fd < 0 || bind(sv.fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(sv.fd, 4) != 0 ||
        getsockname(sv.fd, (struct sockaddr *)&a, &al) != 0) {
        fprintf(stderr, "expo_parse_bench: cannot listen on loopback: %s\n", strerror(errno));
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, serve, &sv) != 0)
        return 1;
    pthread_detach(th);
    char yaml[256];
    snprintf(yaml, sizeof yaml,
             "inference:\n  targets:\n    - name: bench\n      url: http://127.0.0.1:%u/metrics\n"
             "      gpus: [0]\n",
             (unsigned)ntohs(a.sin_port));
    const struct wt_collector_ops *ops = NULL;
    for (size_t i = 0; wt_collectors[i]; i++)
        if (strcmp(wt_collectors[i]->name, "serving") == 0)
            ops = wt_collectors[i];
    struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    wt_config_defaults(&cfg);
    if (!ops || wt_config_load_string("bench.yaml", yaml, strlen(yaml), &cfg, &err) != 0 ||
        ops->open_target(&cfg, 0, &st, &err) != 0) {
        fprintf(stderr, "expo_parse_bench: the inference collector: %s\n", err.msg);
        return 1;
    }
    double *t = malloc(sizeof *t * (size_t)polls);
    struct wt_batch out = {0};
    size_t readings = 0;
    double generated = NAN;
    int rc = t ? 0 : 1;
    for (int i = -WARMUP; i < polls && rc == 0; i++) {
        wt_batch_clear(&out);
        double t0 = thread_cpu_us();
        rc = ops->poll(st, (int64_t)i * 500000000, &out, &err);
        double t1 = thread_cpu_us();
        if (i >= 0)
            t[i] = t1 - t0;
    }
    if (rc == 0) {
        readings = out.len;
        for (size_t i = 0; i < out.len; i++)
            if (out.r[i].metric == WT_M_INF_TOKENS && strstr(out.r[i].labels, "generated"))
                generated = out.r[i].value;
        /* the scrape's work was done: the body's generated tokens reached a reading */
        if (generated != 96000) {
            fprintf(stderr, "expo_parse_bench: the scrape gave %zu readings, generated %g\n",
                    readings, generated);
            rc = 1;
        }
    } else {
        fprintf(stderr, "expo_parse_bench: the scrape failed: %s\n", err.msg);
    }
    ops->close(st);
    wt_batch_free(&out);
    wt_config_free(&cfg);
    shutdown(sv.fd, SHUT_RDWR);
    if (rc) {
        free(t);
        return rc;
    }
    qsort(t, (size_t)polls, sizeof *t, by_value);
    double med = t[polls / 2];
    fprintf(stderr,
            "expo_parse_bench: scrape of %d series (%zu bytes) over loopback HTTP, parse and "
            "select: %zu readings, median %.1f us CPU (min %.1f, max %.1f)\n",
            b->series, b->len, readings, med, t[0], t[polls - 1]);
    printf("{\"section\": \"Scrape parsing\", \"what\": \"scrape a %d-series vLLM /metrics (%zu "
           "bytes) over loopback HTTP, parse and select (the inference collector's poll)\", "
           "\"unit\": \"us\", \"wattage\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, "
           "\"n\": %d}, \"peer\": null, \"peer_name\": null, \"note\": \"the polling thread's CPU "
           "time, a kept-alive connection; %zu readings a scrape\"}\n",
           b->series, b->len, med, t[0], t[polls - 1], polls, readings);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    int parses = argc > 1 ? atoi(argv[1]) : 5000;
    if (parses < 1)
        parses = 1;
    struct body b = {.cap = 65536};
    b.p = malloc(b.cap);
    if (!b.p)
        return 1;
    make_body(&b);
    int rc = one(&b, true, parses) || one(&b, false, parses) ||
             scrape(&b, parses / 5 > 0 ? parses / 5 : 1);
    free(b.p);
    return rc;
}
