/* SPDX-License-Identifier: MIT */
/*
 * Remote write's pure pieces and its cursor against a real SQLite store: the encoder's request
 * decoded again with protobuf-c's unpack after snappy's uncompress, the selectors, the status
 * verdicts, the remote_write section's messages, the cursor's batches, acknowledgements and
 * persistence, and the shared sender's drain at stop with a transport of the test's own.
 */
#include <errno.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "runner.h"
#include "serve/remote_write.h"
#include "serve/remote_write.pb-c.h"
#include "serve/sender.h"
#include "store/cursor.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S)

/* Uncompresses and unpacks what the encoder produced. */
static Prometheus__WriteRequest *decode(const char *body, size_t len, size_t raw_len)
{
    size_t n = 0;
    WT_EQ_INT(snappy_uncompressed_length(body, len, &n), SNAPPY_OK);
    WT_EQ_INT(n, raw_len);
    char *raw = malloc(n ? n : 1);
    WT_EQ_INT(snappy_uncompress(body, len, raw, &n), SNAPPY_OK);
    Prometheus__WriteRequest *req =
        prometheus__write_request__unpack(NULL, n, (const uint8_t *)raw);
    free(raw);
    WT_ASSERT(req != NULL);
    return req;
}

static const char *label(const Prometheus__TimeSeries *ts, const char *name)
{
    for (size_t i = 0; i < ts->n_labels; i++)
        if (strcmp(ts->labels[i]->name, name) == 0)
            return ts->labels[i]->value;
    return NULL;
}

WT_TEST(encoder_request_decodes_back)
{
    struct wt_rw_encoder *e = NULL;
    WT_EQ_INT(wt_remote_write_encoder_open("gpu-01", &e), 0);
    WT_EQ_INT(wt_remote_write_encoder_add(e, "wattage_gpu_power_watts",
                                          "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\""),
              0);
    /* a meter placed on another node, an escaped value, an empty value, upper-case names */
    WT_EQ_INT(wt_remote_write_encoder_add(e, "wattage_facility_power_watts",
                                          "target=\"pdu \\\"a\\\"\",node=\"gpu-02\",Zone=\"\","
                                          "Rack=\"r1\""),
              1);
    struct wt_cursor_sample s[] = {
        {0, T0 + 1500000, 300.25},
        {0, T0 + S, 301.5},
        {0, T0 + 2 * S + 999999, -0.0},
        {1, T0, 7000.125},
    };
    struct wt_cursor_batch b = {s, 4, 4};
    const char *body;
    size_t len, raw;
    WT_EQ_INT(wt_remote_write_encode(e, &b, &body, &len, &raw), 0);
    Prometheus__WriteRequest *req = decode(body, len, raw);
    WT_EQ_INT(req->n_timeseries, 2);

    const Prometheus__TimeSeries *a = req->timeseries[0];
    WT_EQ_INT(a->n_labels, 5);
    WT_EQ_STR(label(a, "__name__"), "wattage_gpu_power_watts");
    WT_EQ_STR(label(a, "node"), "gpu-01");
    WT_EQ_STR(label(a, "model"), "NVIDIA H200");
    WT_EQ_INT(a->n_samples, 3);
    WT_EQ_INT(a->samples[0]->timestamp, 1700000000001LL); /* ns floored to ms */
    WT_NEAR(a->samples[0]->value, 300.25, 0);
    WT_EQ_INT(a->samples[1]->timestamp, 1700000001000LL);
    WT_EQ_INT(a->samples[2]->timestamp, 1700000002000LL);

    const Prometheus__TimeSeries *f = req->timeseries[1];
    WT_EQ_STR(label(f, "node"), "gpu-01");
    WT_EQ_STR(label(f, "exported_node"), "gpu-02");
    WT_EQ_STR(label(f, "target"), "pdu \"a\"");
    WT_ASSERT(label(f, "Zone") == NULL); /* empty values are left out */
    WT_EQ_INT(f->n_samples, 1);
    WT_NEAR(f->samples[0]->value, 7000.125, 0);
    /* sorted by name in byte order: upper case before "__name__" before lower case */
    for (size_t t = 0; t < req->n_timeseries; t++)
        for (size_t i = 1; i < req->timeseries[t]->n_labels; i++)
            WT_ASSERT(strcmp(req->timeseries[t]->labels[i - 1]->name,
                             req->timeseries[t]->labels[i]->name) < 0);
    WT_EQ_STR(f->labels[0]->name, "Rack");
    WT_EQ_STR(f->labels[1]->name, "__name__");
    prometheus__write_request__free_unpacked(req, NULL);

    /* a sample of a series never added */
    s[3].series = 2;
    WT_EQ_INT(wt_remote_write_encode(e, &b, &body, &len, &raw), -EINVAL);
    wt_remote_write_encoder_close(e);
}

WT_TEST(encoder_large_batch_round_trips)
{
    struct wt_rw_encoder *e = NULL;
    enum { NS = 40, PER = 50 };
    WT_EQ_INT(wt_remote_write_encoder_open("n", &e), 0);
    for (int i = 0; i < NS; i++) {
        char l[64];
        snprintf(l, sizeof l, "gpu=\"%d\"", i);
        WT_EQ_INT(wt_remote_write_encoder_add(e, "wattage_gpu_energy_joules_total", l), i);
    }
    struct wt_cursor_batch b = {calloc(NS * PER, sizeof *b.s), NS * PER, NS * PER};
    for (int i = 0; i < NS; i++)
        for (int k = 0; k < PER; k++)
            b.s[i * PER + k] = (struct wt_cursor_sample){(uint32_t)i, T0 + k * S, i * 1e6 + k};
    const char *body;
    size_t len, raw;
    for (int round = 0; round < 2; round++) { /* buffers reused */
        WT_EQ_INT(wt_remote_write_encode(e, &b, &body, &len, &raw), 0);
        WT_ASSERT(len < raw); /* compressed */
        Prometheus__WriteRequest *req = decode(body, len, raw);
        WT_EQ_INT(req->n_timeseries, NS);
        for (int i = 0; i < NS; i++) {
            char want[16];
            snprintf(want, sizeof want, "%d", i);
            WT_EQ_STR(label(req->timeseries[i], "gpu"), want);
            WT_EQ_INT(req->timeseries[i]->n_samples, PER);
            for (int k = 0; k < PER; k++) {
                WT_EQ_INT(req->timeseries[i]->samples[k]->timestamp, 1700000000000LL + k * 1000);
                WT_NEAR(req->timeseries[i]->samples[k]->value, i * 1e6 + k, 0);
            }
        }
        prometheus__write_request__free_unpacked(req, NULL);
    }
    free(b.s);
    wt_remote_write_encoder_close(e);
}

WT_TEST(selectors_parse_and_match)
{
    struct wt_rw_selector sel[3];
    char why[160];
    WT_EQ_INT(wt_remote_write_selector_parse("wattage_gpu_*", &sel[0], why, sizeof why), 0);
    WT_EQ_INT(wt_remote_write_selector_parse(
                  "wattage_cpu_energy_joules_total{domain=\"package\", package=~\"[01]\"}", &sel[1],
                  why, sizeof why),
              0);
    WT_EQ_INT(sel[1].nm, 2);
    WT_EQ_INT(wt_remote_write_selector_parse("wattage_facility_*{target!=\"x\",kind!~\"ups.*\"}",
                                             &sel[2], why, sizeof why),
              0);
    WT_ASSERT(wt_remote_write_match(sel, 0, "anything", ""));
    WT_ASSERT(wt_remote_write_match(sel, 3, "wattage_gpu_power_watts", "gpu=\"0\""));
    WT_ASSERT(!wt_remote_write_match(sel, 1, "wattage_cpu_energy_joules_total", ""));
    WT_ASSERT(wt_remote_write_match(sel, 3, "wattage_cpu_energy_joules_total",
                                    "package=\"1\",domain=\"package\""));
    WT_ASSERT(!wt_remote_write_match(sel, 3, "wattage_cpu_energy_joules_total",
                                     "package=\"10\",domain=\"package\"")); /* anchored */
    WT_ASSERT(!wt_remote_write_match(sel, 3, "wattage_cpu_energy_joules_total",
                                     "package=\"0\",domain=\"dram\""));
    WT_ASSERT(wt_remote_write_match(sel, 3, "wattage_facility_power_watts", "target=\"y\""));
    WT_ASSERT(!wt_remote_write_match(sel, 3, "wattage_facility_power_watts", "target=\"x\""));
    WT_ASSERT(!wt_remote_write_match(sel, 3, "wattage_facility_power_watts",
                                     "target=\"y\",kind=\"ups_output\""));

    WT_EQ_INT(wt_remote_write_selector_parse("", &sel[0], why, sizeof why), -EINVAL);
    WT_EQ_INT(wt_remote_write_selector_parse("a{b=c}", &sel[0], why, sizeof why), -EINVAL);
    WT_CONTAINS(why, "double quotes");
    WT_EQ_INT(wt_remote_write_selector_parse("a{b=~\"(\"}", &sel[0], why, sizeof why), -EINVAL);
    WT_CONTAINS(why, "regex");
    WT_EQ_INT(wt_remote_write_selector_parse("a{b=\"x\"} junk", &sel[0], why, sizeof why), -EINVAL);
    WT_EQ_INT(wt_remote_write_selector_parse("a b", &sel[0], why, sizeof why), -EINVAL);
}

WT_TEST(verdicts_follow_the_specification)
{
    WT_EQ_INT(wt_remote_write_verdict(200), WT_RW_SENT);
    WT_EQ_INT(wt_remote_write_verdict(204), WT_RW_SENT);
    WT_EQ_INT(wt_remote_write_verdict(500), WT_RW_RETRY);
    WT_EQ_INT(wt_remote_write_verdict(503), WT_RW_RETRY);
    WT_EQ_INT(wt_remote_write_verdict(429), WT_RW_RETRY);
    WT_EQ_INT(wt_remote_write_verdict(0), WT_RW_RETRY); /* no answer: network, timeout */
    WT_EQ_INT(wt_remote_write_verdict(400), WT_RW_DROP);
    WT_EQ_INT(wt_remote_write_verdict(401), WT_RW_AUTH); /* retried: the token can be fixed */
    WT_EQ_INT(wt_remote_write_verdict(403), WT_RW_AUTH);
    WT_EQ_INT(wt_remote_write_verdict(407), WT_RW_DROP);
    WT_EQ_INT(wt_remote_write_verdict(404), WT_RW_DROP);
    WT_EQ_INT(wt_remote_write_verdict(302), WT_RW_DROP);
}

static int load(const char *yaml, struct wt_config *cfg, struct wt_err *err)
{
    wt_config_defaults(cfg);
    return wt_config_load_string("w.yaml", yaml, strlen(yaml), cfg, err);
}

WT_TEST(config_defaults_and_errors)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_rw_config rc;
    WT_EQ_INT(load("remote_write:\n"
                   "  - url: http://127.0.0.1:9090/api/v1/write\n"
                   "  - url: https://vm:8428/api/v1/write\n"
                   "    name: vm\n"
                   "    basic_auth: {username: u, password_file: /p}\n"
                   "    tls: {ca: /ca.pem, insecure_skip_verify: true}\n"
                   "    batch_size: 500\n"
                   "    deadline: 2s\n"
                   "    backfill: 0\n"
                   "    match: ['wattage_gpu_*', 'x{a=\"b\"}']\n",
                   &cfg, &err),
              0);
    WT_EQ_INT(
        wt_remote_write_config_parse("w.yaml", wt_config_section(&cfg, "remote_write"), &rc, &err),
        0);
    WT_EQ_INT(rc.n, 2);
    WT_EQ_STR(rc.ep[0].name, "http://127.0.0.1:9090/api/v1/write");
    WT_EQ_INT(rc.ep[0].batch_size, 2000);
    WT_EQ_INT(rc.ep[0].timeout_ns, 10 * S);
    WT_EQ_INT(rc.ep[0].backfill_ns, 3600 * S);
    WT_EQ_INT(rc.ep[0].nsel, 0);
    WT_EQ_STR(rc.ep[1].name, "vm");
    WT_EQ_STR(rc.ep[1].username, "u");
    WT_ASSERT(rc.ep[1].insecure_skip_verify);
    WT_EQ_INT(rc.ep[1].batch_size, 500);
    WT_EQ_INT(rc.ep[1].deadline_ns, 2 * S);
    WT_EQ_INT(rc.ep[1].backfill_ns, 0);
    WT_EQ_INT(rc.ep[1].nsel, 2);
    wt_config_free(&cfg);

    static const struct {
        const char *yaml, *msg;
    } bad[] = {
        {"remote_write:\n  - name: x\n", "w.yaml:2: remote_write[0].url: required"},
        {"remote_write:\n  - url: ftp://x/\n", "w.yaml:2: remote_write[0].url: expected http"},
        {"remote_write:\n  - url: http://x/\n    batch_size: 0\n",
         "w.yaml:3: remote_write[0].batch_size"},
        {"remote_write:\n  - url: http://x/\n    bearer_token: abc\n",
         "w.yaml:3: remote_write[0].bearer_token: unknown key"},
        {"remote_write:\n  - url: http://x/\n    tls: {ca: /a}\n",
         "w.yaml:3: remote_write[0].tls: tls needs an https:// url"},
        {"remote_write:\n  - url: https://x/\n    tls: {cert: /a}\n", "cert and key go together"},
        {"remote_write:\n  - url: http://x/\n    bearer_token_file: /t\n"
         "    basic_auth: {username: u, password_file: /p}\n",
         "exclude each other"},
        {"remote_write:\n  - url: http://x/\n    match: ['a{b=c}']\n",
         "w.yaml:3: remote_write[0].match[0]: label b: expected a value in double quotes"},
        {"remote_write:\n  - url: http://x/\n  - url: http://x/\n",
         "w.yaml:3: remote_write[1]: name \"http://x/\" is taken"},
        {"remote_write: {url: http://x/}\n", "w.yaml:1: remote_write"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        WT_EQ_INT(load(bad[i].yaml, &cfg, &err), -EINVAL);
        WT_CONTAINS(err.msg, bad[i].msg);
        wt_config_free(&cfg);
    }
}

/* ---- the cursor against a real store ---- */

static struct wt_reading rd(int metric, const char *labels, int64_t t, double v)
{
    struct wt_reading r = {.t_ns = t, .value = v, .metric = (uint16_t)metric};
    snprintf(r.labels, sizeof r.labels, "%s", labels);
    return r;
}

/* A store with three series: gpu 0 and 1 power every second for n s, the CPU energy every 5 s. */
static void make_store(const char *path, int n)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    struct wt_reading *r = calloc((size_t)(3 * n), sizeof *r);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        r[k++] = rd(WT_M_GPU_POWER_W, "gpu=\"0\"", T0 + i * S, 100 + i);
        r[k++] = rd(WT_M_GPU_POWER_W, "gpu=\"1\"", T0 + i * S, 200 + i);
        if (i % 5 == 0)
            r[k++] = rd(WT_M_CPU_ENERGY_J, "package=\"0\",domain=\"package\"", T0 + i * S, i);
    }
    WT_EQ_INT(wt_store_write(st, "", r, k), 0);
    /* an imported node's series is never sent */
    struct wt_reading imp = rd(WT_M_GPU_POWER_W, "gpu=\"0\"", T0, 1);
    WT_EQ_INT(wt_store_write(st, "other", &imp, 1), 0);
    free(r);
    wt_store_close(st);
}

/* The cursor looks for a series' next readings in a window that grows (10 s, then 4 times as
 * long) up to now and then to the end of time: readings hours or days apart, and one stamped in
 * the future, come in time order, each once, with dense series beside them. */
WT_TEST(cursor_finds_readings_far_apart)
{
    char path[512];
    struct wt_err err = {{0}};
    struct wt_store *st = NULL;
    struct wt_cursor *c = NULL;
    struct wt_cursor_batch b = {0};
    int64_t later = wt_now_real_ns() + 3600 * S;
    snprintf(path, sizeof path, "%s/far.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    struct wt_reading r[8] = {
        rd(WT_M_GPU_POWER_W, "gpu=\"0\"", T0 + 3600 * S, 1),
        rd(WT_M_GPU_POWER_W, "gpu=\"0\"", T0 + 86400 * S, 2),
        rd(WT_M_GPU_POWER_W, "gpu=\"0\"", later, 3),
    };
    for (int i = 0; i < 5; i++)
        r[3 + i] = rd(WT_M_GPU_POWER_W, "gpu=\"1\"", T0 + (i + 1) * S, 10 + i);
    WT_EQ_INT(wt_store_write(st, "", r, 8), 0);
    wt_store_close(st);
    WT_EQ_INT(wt_cursor_open(path, "ep", T0, &c, &err), 0);
    WT_EQ_INT(wt_cursor_refresh(c, NULL, NULL), 2);
    /* 4 a series: all 3 of gpu 0 (none within 10 s of the cursor), 4 of gpu 1, none after the
     * horizon (gpu 1's fourth, T0+4s) */
    bool more = false;
    WT_EQ_INT(wt_cursor_next(c, 8, &b, &more), 0);
    WT_ASSERT(more);
    WT_EQ_INT(b.n, 4);
    for (size_t k = 0; k < b.n; k++)
        WT_EQ_INT(b.s[k].t_ns, T0 + (int64_t)(k + 1) * S);
    WT_EQ_INT(wt_cursor_ack(c, &b), 0);
    WT_EQ_INT(wt_cursor_next(c, 8, &b, &more), 0);
    WT_EQ_INT(b.n, 4);
    WT_EQ_INT(b.s[0].t_ns, T0 + 3600 * S);
    WT_EQ_INT(b.s[1].t_ns, T0 + 86400 * S);
    WT_EQ_INT(b.s[2].t_ns, later);
    WT_NEAR(b.s[2].v, 3, 0);
    WT_EQ_INT(b.s[3].t_ns, T0 + 5 * S);
    WT_EQ_INT(wt_cursor_ack(c, &b), 0);
    WT_EQ_INT(wt_cursor_next(c, 8, &b, &more), 0);
    WT_EQ_INT(b.n, 0);
    WT_ASSERT(!more);
    wt_cursor_close(c);
    wt_cursor_batch_free(&b);
}

static bool only_gpu1(void *ctx, const char *metric, const char *labels)
{
    (void)ctx;
    (void)metric;
    return strstr(labels, "gpu=\"1\"") != NULL;
}

WT_TEST(cursor_batches_oldest_first_and_resumes)
{
    char path[512];
    struct wt_err err = {{0}};
    struct wt_cursor *c = NULL;
    struct wt_cursor_batch b = {0};
    snprintf(path, sizeof path, "%s/s.db", wt_test_dir());
    WT_EQ_INT(wt_cursor_open(path, "ep", T0, &c, &err), -ENOENT);
    make_store(path, 20);

    /* since T0: the readings at T0 are acknowledged already (the cursor is exclusive) */
    WT_EQ_INT(wt_cursor_open(path, "ep", T0, &c, &err), 0);
    WT_EQ_INT(wt_cursor_refresh(c, NULL, NULL), 3);
    WT_EQ_INT(wt_cursor_refresh(c, NULL, NULL), 0);
    uint64_t pending;
    int64_t oldest;
    WT_EQ_INT(wt_cursor_pending(c, &pending, &oldest), 0);
    WT_EQ_U64(pending, 19 + 19 + 3);
    WT_EQ_INT(oldest, T0 + S);
    /* paced for self-metrics: forced it counts, right after it is not due, forced again it is */
    double lag = -1;
    pending = 0;
    WT_EQ_INT(wt_cursor_pending_paced(c, true, &pending, &lag), 1);
    WT_EQ_U64(pending, 19 + 19 + 3);
    WT_ASSERT(lag > 0); /* the oldest pending reading is in the past */
    WT_EQ_INT(wt_cursor_pending_paced(c, false, &pending, &lag), 0);
    WT_EQ_INT(wt_cursor_pending_paced(c, true, &pending, &lag), 1);

    /* max 9 over 3 series, 3 read of each: the horizon is the earliest third reading of a
     * series that had more (the GPUs: T0+3s), so the CPU's T0+5s waits */
    bool more = false;
    WT_EQ_INT(wt_cursor_next(c, 9, &b, &more), 0);
    WT_ASSERT(more);
    WT_EQ_INT(b.n, 6);
    for (size_t k = 0; k < b.n; k++) {
        WT_ASSERT(b.s[k].t_ns <= T0 + 3 * S);
        WT_EQ_INT(b.s[k].series, k / 3);
        WT_EQ_INT(b.s[k].t_ns, T0 + (int64_t)(k % 3 + 1) * S);
    }
    WT_NEAR(b.s[0].v, 101, 0);
    WT_NEAR(b.s[3].v, 201, 0);
    /* not acknowledged: the same batch again */
    WT_EQ_INT(wt_cursor_next(c, 9, &b, NULL), 0);
    WT_EQ_INT(b.n, 6);
    WT_EQ_INT(wt_cursor_ack(c, &b), 0);
    WT_EQ_INT(wt_cursor_series_at(c, 0)->acked_ns, T0 + 3 * S);
    WT_EQ_INT(wt_cursor_series_at(c, 2)->acked_ns, T0); /* nothing of it was sent */
    wt_cursor_close(c);

    /* a restart: the endpoint's start and the cursors come from the store */
    WT_EQ_INT(wt_cursor_open(path, "ep", T0 + 1000 * S, &c, &err), 0);
    WT_EQ_INT(wt_cursor_refresh(c, NULL, NULL), 3);
    WT_EQ_INT(wt_cursor_next(c, 9, &b, NULL), 0);
    WT_EQ_INT(b.n, 7);
    WT_EQ_INT(b.s[0].t_ns, T0 + 4 * S);
    WT_EQ_INT(b.s[6].series, 2);
    WT_EQ_INT(b.s[6].t_ns, T0 + 5 * S);

    /* everything else, batch by batch: each reading exactly once, per-series order */
    int64_t last[3] = {T0 + 3 * S, T0 + 3 * S, T0};
    size_t total = 6;
    for (int round = 0; round < 100 && b.n; round++) {
        for (size_t k = 0; k < b.n; k++) {
            WT_ASSERT(b.s[k].t_ns > last[b.s[k].series]);
            last[b.s[k].series] = b.s[k].t_ns;
        }
        total += b.n;
        WT_EQ_INT(wt_cursor_ack(c, &b), 0);
        WT_EQ_INT(wt_cursor_next(c, 9, &b, NULL), 0);
    }
    WT_EQ_INT(total, 41);
    WT_EQ_INT(last[0], T0 + 19 * S);
    WT_EQ_INT(last[2], T0 + 15 * S);
    WT_EQ_INT(wt_cursor_pending(c, &pending, &oldest), 0);
    WT_EQ_U64(pending, 0);
    WT_EQ_INT(oldest, 0);

    /* new readings after a restart of the store's writer: only they are pending */
    struct wt_store *st = NULL;
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    struct wt_reading extra[2] = {rd(WT_M_GPU_POWER_W, "gpu=\"0\"", T0 + 30 * S, 1),
                                  rd(WT_M_GPU_POWER_W, "gpu=\"7\"", T0 + 30 * S, 2)};
    WT_EQ_INT(wt_store_write(st, "", extra, 2), 0);
    wt_store_close(st);
    WT_EQ_INT(wt_cursor_refresh(c, NULL, NULL), 1); /* gpu 7 */
    WT_EQ_INT(wt_cursor_next(c, 9, &b, &more), 0);
    WT_EQ_INT(b.n, 2);
    WT_ASSERT(!more); /* every series gave all it had */
    WT_EQ_INT(b.s[0].series, 0);
    WT_EQ_INT(b.s[1].series, 3);
    wt_cursor_close(c);

    /* another endpoint: its own cursor, its own start, only what it matches */
    WT_EQ_INT(wt_cursor_open(path, "ep2", T0 + 10 * S, &c, &err), 0);
    WT_EQ_INT(wt_cursor_refresh(c, only_gpu1, NULL), 1);
    WT_EQ_INT(wt_cursor_pending(c, &pending, &oldest), 0);
    WT_EQ_U64(pending, 9);
    WT_EQ_INT(oldest, T0 + 11 * S);
    wt_cursor_close(c);

    /* more series than a batch holds: one reading each, in turn */
    WT_EQ_INT(wt_cursor_open(path, "ep3", T0, &c, &err), 0);
    WT_EQ_INT(wt_cursor_refresh(c, NULL, NULL), 4);
    WT_EQ_INT(wt_cursor_next(c, 3, &b, NULL), 0);
    WT_EQ_INT(b.n, 3);
    WT_EQ_INT(b.s[0].series, 0);
    WT_EQ_INT(b.s[2].series, 2);
    WT_EQ_INT(wt_cursor_ack(c, &b), 0);
    WT_EQ_INT(wt_cursor_next(c, 3, &b, NULL), 0);
    WT_EQ_INT(b.n, 3);
    WT_EQ_INT(b.s[0].series, 0); /* sorted by series: 3, 0, 1 taken */
    WT_EQ_INT(b.s[0].t_ns, T0 + 2 * S);
    WT_EQ_INT(b.s[2].series, 3);
    WT_EQ_INT(b.s[2].t_ns, T0 + 30 * S);
    wt_cursor_close(c);
    wt_cursor_batch_free(&b);
}

/* ---- the drain at stop (serve/sender.h), with a transport of the test's own ---- */

enum fake_mode { FAKE_ACK, FAKE_HANG, FAKE_FAIL };

static void nap(int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / S, .tv_nsec = ns % S};
    nanosleep(&ts, NULL);
}

struct fake {
    enum fake_mode mode;
    uint64_t acked;  /* samples acknowledged */
    int attempts;    /* sends tried */
    int drain_tries; /* of them, once the drain began */
};

static int fake_add(struct wt_sender_dest *d, void *ctx, const struct wt_cursor_series *s, size_t i)
{
    (void)d, (void)ctx, (void)s, (void)i;
    return 0;
}

static enum wt_send_next fake_send(struct wt_sender_dest *d, void *ctx,
                                   const struct wt_cursor_batch *b)
{
    struct fake *f = ctx;
    switch (f->mode) {
    case FAKE_ACK:
        if (wt_sender_ack(d, b) == 0)
            __atomic_add_fetch(&f->acked, b->n, __ATOMIC_SEQ_CST);
        break;
    case FAKE_HANG: /* a request that never ends: only the stop (or the deadline) ends it */
        __atomic_add_fetch(&f->attempts, 1, __ATOMIC_SEQ_CST);
        while (!wt_sender_stopping(d))
            nap(WT_NS_PER_MS);
        break;
    case FAKE_FAIL: /* every attempt fails and is retried after a long backoff */
        for (;;) {
            __atomic_add_fetch(&f->attempts, 1, __ATOMIC_SEQ_CST);
            if (wt_sender_draining(d))
                __atomic_add_fetch(&f->drain_tries, 1, __ATOMIC_SEQ_CST);
            if (wt_sender_wait(d, 3600 * S))
                break;
        }
        break;
    }
    return WT_SEND_DONE;
}

static const struct wt_sender_ops fake_ops = {.add = fake_add, .send = fake_send};

/* A sender of one destination "ep" on the store at path, started; its deadline an hour. */
static struct wt_sender *fake_sender(const char *path, struct fake *f)
{
    struct wt_sender *s = NULL;
    struct wt_err err = {{0}};
    struct wt_sender_dest_config c = {.name = "ep",
                                      .cursor = "ep",
                                      .batch_size = 16,
                                      .deadline_ns = 3600 * S,
                                      .max_backoff_ns = 3600 * S,
                                      .backfill_ns = 20LL * 365 * 86400 * S,
                                      .ctx = f};
    WT_EQ_INT(wt_sender_open("test", "wt-test", &fake_ops, NULL, 0, 1, &s), 0);
    WT_EQ_INT(wt_sender_add_dest(s, path, &c, NULL, &err), 0);
    WT_EQ_INT(wt_sender_start(s, &err), 0);
    return s;
}

/* Waits (10 s at most) until *v reaches n. */
static bool reaches(const void *v, uint64_t n, bool wide)
{
    for (int i = 0; i < 1000; i++) {
        uint64_t x = wide ? __atomic_load_n((const uint64_t *)v, __ATOMIC_SEQ_CST)
                          : (uint64_t)__atomic_load_n((const int *)v, __ATOMIC_SEQ_CST);
        if (x >= n)
            return true;
        nap(10 * WT_NS_PER_MS);
    }
    return false;
}

static uint64_t pending_of(const char *path)
{
    struct wt_cursor *c = NULL;
    struct wt_err err = {{0}};
    uint64_t n = 0;
    int64_t oldest;
    WT_EQ_INT(wt_cursor_open(path, "ep", T0, &c, &err), 0);
    WT_ASSERT(wt_cursor_refresh(c, NULL, NULL) >= 0);
    WT_EQ_INT(wt_cursor_pending(c, &n, &oldest), 0);
    wt_cursor_close(c);
    return n;
}

/* What the store gained while the sender waited out its (hour-long) deadline goes out at the
 * drain, at once: nothing is left. */
WT_TEST(drain_sends_what_was_stored_while_idle)
{
    char path[512];
    struct fake f = {.mode = FAKE_ACK};
    snprintf(path, sizeof path, "%s/d.db", wt_test_dir());
    make_store(path, 20); /* 20 + 20 + 4 readings of the daemon's own series */
    struct wt_sender *s = fake_sender(path, &f);
    WT_ASSERT(reaches(&f.acked, 44, true));
    /* the last flush, while the sender idles */
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_reading r[10];
    for (int i = 0; i < 10; i++)
        r[i] = rd(WT_M_GPU_POWER_W, i % 2 ? "gpu=\"1\"" : "gpu=\"0\"", T0 + (30 + i / 2) * S, i);
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    WT_EQ_INT(wt_store_write(st, "", r, 10), 0);
    wt_store_close(st);
    WT_EQ_INT(f.acked, 44);
    wt_sender_drain(s, 60 * S);
    wt_sender_close(s);
    WT_EQ_INT(f.acked, 54);
    WT_EQ_INT(pending_of(path), 0);
}

/* A request that hangs is abandoned at the drain's deadline: close returns after it (never
 * before: the drain waited), nothing is acknowledged, everything stays for the next start. */
WT_TEST(drain_abandons_a_hanging_send_at_its_deadline)
{
    char path[512];
    struct fake f = {.mode = FAKE_HANG};
    snprintf(path, sizeof path, "%s/h.db", wt_test_dir());
    make_store(path, 20);
    struct wt_sender *s = fake_sender(path, &f);
    WT_ASSERT(reaches(&f.attempts, 1, false));
    int64_t t0 = wt_now_mono_ns();
    wt_sender_drain(s, 300 * WT_NS_PER_MS);
    wt_sender_close(s);
    int64_t took = wt_now_mono_ns() - t0;
    WT_ASSERT(took >= 300 * WT_NS_PER_MS);
    WT_EQ_INT(f.attempts, 1);
    WT_EQ_INT(pending_of(path), 44);
}

/* A receiver that fails: the drain wakes the backoff for one attempt more, and a failure then
 * ends the drain at once (no backoff at stop, well before the minute's deadline). */
WT_TEST(drain_tries_a_failing_receiver_once)
{
    char path[512];
    struct fake f = {.mode = FAKE_FAIL};
    snprintf(path, sizeof path, "%s/f.db", wt_test_dir());
    make_store(path, 20);
    struct wt_sender *s = fake_sender(path, &f);
    WT_ASSERT(reaches(&f.attempts, 1, false));
    int64_t t0 = wt_now_mono_ns();
    wt_sender_drain(s, 60 * S);
    wt_sender_close(s);
    WT_ASSERT(wt_now_mono_ns() - t0 < 30 * S);
    WT_EQ_INT(f.attempts, 2);
    WT_EQ_INT(f.drain_tries, 1);
    WT_EQ_INT(pending_of(path), 44);
}

/* daemon.stop_deadline 0: nothing is sent at stop. */
WT_TEST(drain_of_zero_sends_nothing)
{
    char path[512];
    struct fake f = {.mode = FAKE_ACK};
    snprintf(path, sizeof path, "%s/z.db", wt_test_dir());
    make_store(path, 20);
    struct wt_sender *s = fake_sender(path, &f);
    WT_ASSERT(reaches(&f.acked, 44, true));
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_reading r = rd(WT_M_GPU_POWER_W, "gpu=\"0\"", T0 + 40 * S, 1);
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    WT_EQ_INT(wt_store_write(st, "", &r, 1), 0);
    wt_store_close(st);
    wt_sender_drain(s, 0);
    wt_sender_close(s);
    WT_EQ_INT(f.acked, 44);
    WT_EQ_INT(pending_of(path), 1);
}
