/* SPDX-License-Identifier: MIT */
/*
 * The weekly review (audit/review.h) over five weeks written into the real SQLite store: two
 * nodes, each with one GPU's energy counter, its info series (driver and VBIOS labels), an
 * inference target serving on it (info, generated tokens) and its utilisation, every 15 minutes.
 * Each day's token rate carries a fixed pseudo-random +-2% noise. On Wednesday 2026-12-02 10:00Z
 * node-a's driver goes from 570.86.15 to 580.65.06; in the planted store its tokens per joule
 * drop 10% from then (J/token +10% on node-a), in the noise store they do not. The review of
 * 2026-W49 must name that driver change in one finding, and find nothing in the noise store.
 *
 * The stores are also written for tests/cli/test_review.sh: `test_review write_stores` with
 * WATTAGE_REVIEW_DIR set writes planted.db and noise.db there (WATTAGE_REVIEW_WEEK: the reviewed
 * week's Monday, unix seconds, instead of 2026-W49's; WATTAGE_REVIEW_STEP_S: the readings'
 * spacing instead of 900 s, for timing the review on denser stores).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/jobs.h"
#include "audit/review.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/config.h"
#include "runner.h"
#include "store/query.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define DAY (86400LL * S)
/* 2026-11-30T00:00:00Z, Monday of 2026-W49; write_stores takes another from WATTAGE_REVIEW_WEEK */
static int64_t W49 = 1795996800LL * S;
/* the readings' spacing; write_stores takes another from WATTAGE_REVIEW_STEP_S (seconds) */
static int64_t STEP = 900LL * S;
#define START (W49 - 28 * DAY)                 /* four weeks before it */
#define END (W49 + 7 * DAY)                    /* the week's end */
#define CHANGE (W49 + 2 * DAY + 10 * 3600 * S) /* Wednesday 10:00Z */
#define POWER_W 400.0
#define TOKENS_PER_S 1000.0

/* The label that changes at CHANGE on node-a: none, its driver, or its server's precision tag. */
enum { CH_NONE, CH_DRIVER, CH_PRECISION };

/* A fixed noise in [-1, 1] per node and day (a hash, so every run writes the same store). */
static double noise(int node, int64_t day)
{
    uint64_t x = (uint64_t)(day * 2654435761u) ^ (uint64_t)(node + 1) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (double)(x % 20001) / 10000.0 - 1.0;
}

static void put(struct wt_reading *r, size_t *n, int64_t t, int metric, const char *labels,
                double v)
{
    memset(&r[*n], 0, sizeof r[*n]);
    r[*n].t_ns = t;
    r[*n].metric = (uint16_t)metric;
    r[*n].value = v;
    snprintf(r[*n].labels, sizeof r[*n].labels, "%s", labels);
    (*n)++;
}

/*
 * One node's five weeks. change: the label that changes at CHANGE (CH_*); its tokens per joule
 * drop by 1/1.1 from drop_from on (0: never).
 */
static void write_node(struct wt_store *st, int idx, const char *node, int change,
                       int64_t drop_from)
{
    char energy[WT_LABELS_LEN], util[WT_LABELS_LEN], old_info[WT_LABELS_LEN],
        new_info[WT_LABELS_LEN], inf[WT_LABELS_LEN], inf8[WT_LABELS_LEN], tok[WT_LABELS_LEN],
        uuid[64];
    snprintf(uuid, sizeof uuid, "GPU-%s-0", node);
    WT_EQ_INT(
        wt_labels(energy, sizeof energy, "gpu", "0", "uuid", uuid, "model", "NVIDIA H200", NULL),
        0);
    snprintf(util, sizeof util, "%s", energy);
    WT_EQ_INT(wt_labels(old_info, sizeof old_info, "gpu", "0", "uuid", uuid, "model", "NVIDIA H200",
                        "driver_version", "570.86.15", "vbios_version", "96.00.AF.00.01", NULL),
              0);
    WT_EQ_INT(wt_labels(new_info, sizeof new_info, "gpu", "0", "uuid", uuid, "model", "NVIDIA H200",
                        "driver_version", "580.65.06", "vbios_version", "96.00.AF.00.01", NULL),
              0);
    WT_EQ_INT(wt_labels(inf, sizeof inf, "target", "llm", "engine", "vllm", "model", "llama-70b",
                        "gpus", "0", "precision", "bf16", NULL),
              0);
    WT_EQ_INT(wt_labels(inf8, sizeof inf8, "target", "llm", "engine", "vllm", "model", "llama-70b",
                        "gpus", "0", "precision", "fp8", NULL),
              0);
    WT_EQ_INT(wt_labels(tok, sizeof tok, "target", "llm", "model", "llama-70b", "kind", "generated",
                        NULL),
              0);
    size_t cap = (size_t)((END - START) / STEP + 1) * 5, n = 0;
    struct wt_reading *r = calloc(cap, sizeof *r);
    WT_ASSERT(r != NULL);
    WT_EQ_INT(wt_store_begin_run(st, node, START - 60 * S, STEP, "test"), 0);
    double e = 5000, k = 1e6;
    for (int64_t t = START; t <= END; t += STEP) {
        if (t > START) {
            /* the interval (t - STEP, t]: its day's noise, and the drop after the change */
            int64_t day = (t - STEP - START) / DAY;
            double rate = TOKENS_PER_S * (1 + 0.02 * noise(idx, day));
            if (drop_from && t - STEP >= drop_from)
                rate /= 1.1;
            e += POWER_W * (double)(STEP / S);
            k += rate * (double)(STEP / S);
        }
        bool after = change == CH_DRIVER && t >= CHANGE;
        bool fp8 = change == CH_PRECISION && t >= CHANGE;
        put(r, &n, t, WT_M_GPU_ENERGY_J, energy, e);
        put(r, &n, t, WT_M_GPU_INFO, after ? new_info : old_info, 1);
        put(r, &n, t, WT_M_INF_INFO, fp8 ? inf8 : inf, 1);
        put(r, &n, t, WT_M_INF_TOKENS, tok, k);
        put(r, &n, t, WT_M_GPU_UTIL_RATIO, util, 0.8 + 0.01 * noise(idx + 7, (t - START) / DAY));
    }
    WT_EQ_INT(wt_store_write(st, node, r, n), 0);
    free(r);
}

static void write_store(const char *path, int64_t drop_from, int change)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true};
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    write_node(st, 0, "node-a", change, drop_from);
    write_node(st, 1, "node-b", CH_NONE, 0);
    wt_store_close(st);
}

/* The review of week_start over the store at path, with the configuration yaml (NULL: the
 * defaults). */
static void review_with(const char *path, const char *yaml, int64_t week_start, struct wt_review *r)
{
    struct wt_config cfg;
    struct wt_topology *t = NULL;
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = false};
    wt_config_defaults(&cfg);
    if (yaml && wt_config_load_string("t.yaml", yaml, strlen(yaml), &cfg, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "config: %s", err.msg);
    WT_EQ_INT(wt_topology_load(&cfg, &t, &err), 0);
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    int rc = wt_review_compute(st, &cfg, t, week_start, 4, r, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "review: %d %s", rc, err.msg);
    wt_store_close(st);
    free(t);
    wt_config_free(&cfg);
}

/* The review of week_start over the store at path, with the default configuration. */
static void review(const char *path, int64_t week_start, struct wt_review *r)
{
    review_with(path, NULL, week_start, r);
}

static const struct wt_review_kpi *kpi(const struct wt_review *r, const char *key)
{
    for (int k = 0; k < WT_REVIEW_KPIS; k++)
        if (strcmp(r->kpis[k].key, key) == 0)
            return &r->kpis[k];
    wt_test_fail(__FILE__, __LINE__, "no KPI %s", key);
}

static const char *db(const char *name)
{
    static char p[4][512];
    static int i;
    char *b = p[i++ % 4];
    snprintf(b, 512, "%s/%s", wt_test_dir(), name);
    return b;
}

WT_TEST(iso_weeks)
{
    int64_t s;
    int y, w;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_review_week_parse("2026-W49", &s, &err), 0);
    WT_ASSERT(s == W49);
    WT_EQ_INT(wt_review_week_parse("2026W49", &s, &err), 0);
    WT_ASSERT(s == W49);
    /* 2026 starts on a Thursday: it has a week 53, and 2027-01-01 is in it */
    WT_EQ_INT(wt_review_week_parse("2026-W53", &s, &err), 0);
    wt_review_week_of(1798761600LL * S, &y, &w, &s); /* 2027-01-01T00:00:00Z */
    WT_EQ_INT(y, 2026);
    WT_EQ_INT(w, 53);
    wt_review_week_of(W49 + 3 * DAY + 5, &y, &w, &s);
    WT_EQ_INT(y, 2026);
    WT_EQ_INT(w, 49);
    WT_ASSERT(s == W49);
    /* 2021-01-04 is the Monday of 2021-W01; 2021 has no week 53 */
    WT_EQ_INT(wt_review_week_parse("2021-W01", &s, &err), 0);
    WT_ASSERT(s == 1609718400LL * S);
    WT_EQ_INT(wt_review_week_parse("2021-W53", &s, &err), -EINVAL);
    WT_CONTAINS(err.msg, "2021 has weeks 1 to 52");
    WT_EQ_INT(wt_review_week_parse("2026-49", &s, &err), -EINVAL);
    WT_CONTAINS(err.msg, "--week: expected an ISO week like 2026-W49, got \"2026-49\"");
    WT_EQ_INT(wt_review_week_parse("2026-W49x", &s, &err), -EINVAL);
}

WT_TEST(node_ranges)
{
    char buf[256];
    /* a run of 15 in any order, a gap, a pair, names without numbers, another width */
    const char *a[] = {"node-017", "node-003", "gpu-b",    "node-010", "node-004",
                       "node-005", "node-006", "node-007", "node-008", "node-009",
                       "node-011", "node-012", "node-013", "node-014", "node-015",
                       "node-016", "node-020", "node-021", "gpu-a",    "node-1000"};
    wt_review_node_ranges(a, sizeof a / sizeof a[0], buf, sizeof buf);
    WT_EQ_STR(buf, "gpu-a, gpu-b, node-003..node-017, node-020, node-021, node-1000");
    const char *b[] = {"n9", "n10", "n11", "n12"}; /* widths differ: no run across 9 -> 10 */
    wt_review_node_ranges(b, 4, buf, sizeof buf);
    WT_EQ_STR(buf, "n10..n12, n9");
    const char *c[] = {"node-a"};
    wt_review_node_ranges(c, 1, buf, sizeof buf);
    WT_EQ_STR(buf, "node-a");
    wt_review_node_ranges(a, sizeof a / sizeof a[0], buf, 12); /* cut, still terminated */
    WT_EQ_STR(buf, "gpu-a, gpu-");
    wt_review_node_ranges(NULL, 0, buf, sizeof buf);
    WT_EQ_STR(buf, "");
}

WT_TEST(bands_and_verdicts)
{
    double v[] = {10, 10.2, 9.8, NAN, 10, 10};
    struct wt_review_band b;
    wt_review_band(v, 6, &b);
    WT_EQ_INT(b.days, 5);
    WT_NEAR(b.mean, 10, 1e-12);
    WT_NEAR(b.half, 3 * sqrt(0.08 / 4), 1e-12);
    WT_EQ_INT(wt_review_judge(10.3, &b, true), WT_RV_WITHIN);
    WT_EQ_INT(wt_review_judge(11.0, &b, true), WT_RV_WORSE);
    WT_EQ_INT(wt_review_judge(11.0, &b, false), WT_RV_BETTER);
    WT_EQ_INT(wt_review_judge(NAN, &b, true), WT_RV_NA);
    /* constant values: the 2% floor, not a zero-width band */
    double c[] = {5, 5, 5};
    wt_review_band(c, 3, &b);
    WT_NEAR(b.half, 0.1, 1e-12);
    WT_EQ_INT(wt_review_judge(5.09, &b, true), WT_RV_WITHIN);
    /* too few days */
    wt_review_band(c, 2, &b);
    WT_EQ_INT(wt_review_judge(5, &b, true), WT_RV_NO_BASE);
}

WT_TEST(planted_regression_after_driver_change)
{
    const char *path = db("planted.db");
    write_store(path, CHANGE, CH_DRIVER);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review(path, W49, r);
    WT_EQ_INT(r->year, 2026);
    WT_EQ_INT(r->week, 49);
    WT_ASSERT(r->has_data);
    /* the change point: node-a's driver, at its first reading with the new label */
    WT_EQ_INT((int)r->nchanges, 1);
    WT_EQ_STR(r->changes[0].kind, "driver");
    WT_EQ_STR(r->changes[0].before, "570.86.15");
    WT_EQ_STR(r->changes[0].after, "580.65.06");
    WT_EQ_INT((int)r->changes[0].nnodes, 1);
    WT_EQ_STR(r->changes[0].nodes[0], "node-a");
    WT_ASSERT(r->changes[0].first_ns == CHANGE);
    /* one finding: J/token after the change on node-a, +10% against its days before */
    WT_EQ_INT((int)r->nfindings, 1);
    const struct wt_review_finding *f = &r->findings[0];
    WT_EQ_STR(f->kpi, "joules_per_generated_token");
    WT_EQ_INT(f->change, 0);
    WT_NEAR(f->before, POWER_W / TOKENS_PER_S, 0.01 * POWER_W / TOKENS_PER_S);
    WT_NEAR(f->after / f->before, 1.10, 0.015);
    WT_CONTAINS(f->text, "J/token +");
    WT_CONTAINS(f->text, "since driver 570.86.15 -> 580.65.06 on node-a");
    /* utilisation did not move: no finding for it */
    WT_EQ_INT(kpi(r, "gpu_utilization")->verdict, WT_RV_WITHIN);
    free(r);
}

WT_TEST(finding_from_rollups_after_raw_pruning)
{
    /* the daemon's store a week later: raw readings kept one day, the weeks reviewed only in
     * the per-minute rollups; the change and the finding are the same */
    const char *path = db("pruned.db");
    write_store(path, CHANGE, CH_DRIVER);
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = false, .retention_raw_ns = DAY};
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    bool more = true;
    for (int i = 0; more && i < 100000; i++)
        WT_EQ_INT(wt_store_maintain(st, END + 7 * DAY, 1000, &more), 0);
    WT_ASSERT(!more);
    struct wt_series_info *si = NULL;
    size_t n = 0;
    WT_EQ_INT(wt_store_series(st, "wattage_gpu_info", false, &si, &n, &err), 0);
    /* at most each series' last raw reading is left (the store keeps it); the new label's
     * first, at CHANGE, is only in its minute's rollup */
    WT_EQ_INT((int)n, 3);
    for (size_t i = 0; i < n; i++) {
        struct wt_point_buf pb = {0};
        WT_EQ_INT(wt_store_read(st, si[i].id, START, END, 0, 0, &pb), 0);
        WT_ASSERT(pb.n <= 1);
        WT_ASSERT(pb.n == 0 || pb.p[0].t_ns != CHANGE);
        free(pb.p);
    }
    free(si);
    wt_store_close(st);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review(path, W49, r);
    WT_ASSERT(r->has_data);
    WT_EQ_INT((int)r->nchanges, 1);
    WT_EQ_STR(r->changes[0].after, "580.65.06");
    WT_ASSERT(r->changes[0].first_ns == CHANGE);
    WT_EQ_INT((int)r->nfindings, 1);
    WT_EQ_STR(r->findings[0].kpi, "joules_per_generated_token");
    WT_NEAR(r->findings[0].after / r->findings[0].before, 1.10, 0.015);
    free(r);
}

WT_TEST(noise_alone_no_finding)
{
    const char *path = db("noise.db");
    write_store(path, 0, CH_DRIVER);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review(path, W49, r);
    WT_EQ_INT((int)r->nchanges, 1); /* the driver still changed */
    WT_EQ_INT((int)r->nfindings, 0);
    const struct wt_review_kpi *k = kpi(r, "joules_per_generated_token");
    WT_EQ_INT(k->verdict, WT_RV_WITHIN);
    WT_EQ_INT(k->band.days, 28);
    WT_NEAR(k->value, POWER_W / TOKENS_PER_S, 0.01 * POWER_W / TOKENS_PER_S);
    /* the shift after the change is computed and small */
    WT_ASSERT(fabs(r->after[0][0] / r->before[0][0] - 1) < 0.02);
    free(r);
}

WT_TEST(regression_without_change_is_unexplained)
{
    /* node-a's drop from the week's start, with no label change: J/token +5% for the week
     * (half the tokens), worse beyond the noise, and no change to name */
    const char *path = db("silent.db");
    write_store(path, W49, CH_NONE);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review(path, W49, r);
    WT_EQ_INT((int)r->nchanges, 0);
    const struct wt_review_kpi *k = kpi(r, "joules_per_generated_token");
    WT_EQ_INT(k->verdict, WT_RV_WORSE);
    WT_EQ_INT((int)r->nfindings, 1);
    WT_EQ_STR(r->findings[0].kpi, "joules_per_generated_token");
    WT_EQ_INT(r->findings[0].change, -1);
    WT_CONTAINS(r->findings[0].text, "no change point in the week explains it");
    free(r);
}

WT_TEST(precision_tag_change_is_named)
{
    /* node-a's server goes from bf16 to fp8 at CHANGE (a new info series, same target and
     * model) and its J/token rises 10%: the finding names the tag change */
    const char *path = db("fp8.db");
    write_store(path, CHANGE, CH_PRECISION);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review(path, W49, r);
    WT_EQ_INT((int)r->nchanges, 1);
    WT_EQ_STR(r->changes[0].kind, "tags");
    WT_CONTAINS(r->changes[0].before, "precision=\"bf16\"");
    WT_CONTAINS(r->changes[0].after, "precision=\"fp8\"");
    WT_EQ_STR(r->changes[0].where, "llm");
    WT_EQ_INT((int)r->nfindings, 1);
    WT_EQ_INT(r->findings[0].change, 0);
    WT_CONTAINS(r->findings[0].text, "J/token +");
    WT_CONTAINS(r->findings[0].text, "since tags {");
    WT_CONTAINS(r->findings[0].text, "on node-a");
    free(r);
}

WT_TEST(config_reload_is_a_change_point)
{
    /* the daemon's wattage_config_info{digest} changes at CHANGE (a reload with another file),
     * in noise alone: a change point of kind config, site-wide, and no finding */
    const char *path = db("reload.db");
    write_store(path, 0, CH_NONE);
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = false};
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    WT_EQ_INT(wt_store_begin_run(st, "", START - 60 * S, STEP, "test"), 0);
    size_t cap = (size_t)((END - START) / STEP + 1), n = 0;
    struct wt_reading *r = calloc(cap, sizeof *r);
    WT_ASSERT(r != NULL);
    for (int64_t t = START; t <= END; t += STEP)
        put(r, &n, t, WT_M_CONFIG_INFO,
            t < CHANGE ? "digest=\"00000000000000aa\"" : "digest=\"00000000000000bb\"", 1);
    WT_EQ_INT(wt_store_write(st, "", r, n), 0);
    free(r);
    wt_store_close(st);
    struct wt_review *rv = malloc(sizeof *rv);
    WT_ASSERT(rv != NULL);
    review(path, W49, rv);
    WT_EQ_INT((int)rv->nchanges, 1);
    WT_EQ_STR(rv->changes[0].kind, "config");
    WT_EQ_STR(rv->changes[0].before, "00000000000000aa");
    WT_EQ_STR(rv->changes[0].after, "00000000000000bb");
    WT_ASSERT(rv->changes[0].first_ns == CHANGE);
    WT_EQ_INT((int)rv->nfindings, 0);
    /* its shift was computed, site-wide: every node's J/token */
    WT_ASSERT(fabs(rv->after[0][0] / rv->before[0][0] - 1) < 0.02);
    free(rv);
}

/* One job a day on this node's GPU 0 (01:00 to 23:00), its samples at 0.5 J/sample with the
 * day's noise and its accuracy target reached halfway; 10% fewer samples and the target 10%
 * later from the jobs that end after drop_from (0: never). */
static void write_jobs(const char *path, int64_t drop_from)
{
    struct wt_jobs *j = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_jobs_open(path, NULL, &j, &err), 0);
    for (int64_t d = START; d < END; d += DAY) {
        char name[32], body[128], *json = NULL;
        unsigned status = 0;
        int64_t a = d + 3600 * S, b = d + 23 * 3600 * S;
        double samples = POWER_W * 22 * 3600 / 0.5 * (1 + 0.02 * noise(5, (d - START) / DAY));
        if (drop_from && b >= drop_from)
            samples /= 1.1;
        snprintf(name, sizeof name, "train-%lld", (long long)((d - START) / DAY));
        snprintf(body, sizeof body,
                 "{\"name\": \"%s\", \"gpus\": [0], \"target\": {\"accuracy\": 0.9}}", name);
        WT_EQ_INT(wt_jobs_start_json(j, body, strlen(body), a, &status, &json), 0);
        WT_EQ_INT(status, 201);
        free(json);
        /* the target reached halfway (with the day's noise), 10% later after the drop */
        double f = 0.5 * (1 + 0.02 * noise(6, (d - START) / DAY));
        if (drop_from && b >= drop_from)
            f *= 1.1;
        snprintf(body, sizeof body, "{\"kind\": \"eval\", \"accuracy\": 0.91}");
        WT_EQ_INT(wt_jobs_act_json(j, name, WT_JOBS_MARK, body, strlen(body),
                                   a + (int64_t)(f * 22 * 3600) * S, &status, &json),
                  0);
        WT_EQ_INT(status, 201);
        free(json);
        snprintf(body, sizeof body, "{\"kind\": \"epoch\", \"samples\": %.0f}", samples);
        WT_EQ_INT(
            wt_jobs_act_json(j, name, WT_JOBS_MARK, body, strlen(body), b - S, &status, &json), 0);
        WT_EQ_INT(status, 201);
        free(json);
        WT_EQ_INT(wt_jobs_act_json(j, name, WT_JOBS_END, NULL, 0, b, &status, &json), 0);
        WT_EQ_INT(status, 200);
        free(json);
    }
    wt_jobs_close(j);
}

WT_TEST(job_energy_per_sample_regression)
{
    /* this node (the store's own, node ""): its driver changes at CHANGE and its jobs need 10%
     * more energy per sample from then; its inference does not move */
    const char *path = db("jobs.db");
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true};
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    write_node(st, 0, "", CH_DRIVER, 0);
    wt_store_close(st);
    write_jobs(path, CHANGE);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review(path, W49, r);
    const struct wt_review_kpi *k = kpi(r, "job_joules_per_sample");
    WT_ASSERT(!isnan(k->value));
    WT_EQ_INT(k->band.days, 28);
    WT_NEAR(k->band.mean, 0.5, 0.01);
    WT_EQ_INT((int)r->nchanges, 1);
    WT_EQ_STR(r->changes[0].nodes[0], "");
    const struct wt_review_kpi *t = kpi(r, "job_energy_to_target_joules");
    WT_EQ_INT(t->band.days, 28);
    WT_NEAR(t->band.mean, POWER_W * 11 * 3600, 0.01 * POWER_W * 11 * 3600);
    /* two findings, both the driver change's: J/sample and the energy to the target */
    WT_EQ_INT((int)r->nfindings, 2);
    WT_EQ_STR(r->findings[0].kpi, "job_joules_per_sample");
    WT_EQ_STR(r->findings[1].kpi, "job_energy_to_target_joules");
    WT_EQ_INT(r->findings[1].change, 0);
    WT_NEAR(r->findings[1].after / r->findings[1].before, 1.10, 0.015);
    WT_CONTAINS(r->findings[1].text, "J to target (jobs) +");
    WT_EQ_INT(r->findings[0].change, 0);
    WT_NEAR(r->findings[0].after / r->findings[0].before, 1.10, 0.015);
    WT_CONTAINS(r->findings[0].text, "J/sample (jobs) +");
    /* the store's own node by its name: topology.node, by default the host's */
    char want[300];
    snprintf(want, sizeof want, "since driver 570.86.15 -> 580.65.06 on %s (",
             r->local_node[0] ? r->local_node : "this node");
    WT_CONTAINS(r->findings[0].text, want);
    free(r);
}

/* Five weeks of a site's facility and IT meters (energy counters every STEP): 100 kW of IT at
 * PUE 1.3 with the day's 1% noise, 10% higher from pue_from on (0: never); and the daemon's
 * configuration digest, which changes at CHANGE. */
static void write_site(const char *path, int64_t pue_from)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true};
    char fac[WT_LABELS_LEN], it[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(fac, sizeof fac, "source", "modbus", "target", "main", "point", "total",
                        "kind", "meter", NULL),
              0);
    WT_EQ_INT(wt_labels(it, sizeof it, "source", "snmp", "target", "ups", "point", "out", "kind",
                        "ups_output", NULL),
              0);
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    WT_EQ_INT(wt_store_begin_run(st, "", START - 60 * S, STEP, "test"), 0);
    size_t cap = (size_t)((END - START) / STEP + 1) * 3, n = 0;
    struct wt_reading *r = calloc(cap, sizeof *r);
    WT_ASSERT(r != NULL);
    double ef = 1e6, ei = 1e6;
    for (int64_t t = START; t <= END; t += STEP) {
        if (t > START) {
            double pue = 1.3 * (1 + 0.01 * noise(9, (t - STEP - START) / DAY));
            if (pue_from && t - STEP >= pue_from)
                pue *= 1.1;
            ei += 100e3 * (double)(STEP / S);
            ef += 100e3 * pue * (double)(STEP / S);
        }
        put(r, &n, t, WT_M_FAC_ENERGY_J, fac, ef);
        put(r, &n, t, WT_M_FAC_ENERGY_J, it, ei);
        put(r, &n, t, WT_M_CONFIG_INFO,
            t < CHANGE ? "digest=\"00000000000000aa\"" : "digest=\"00000000000000bb\"", 1);
    }
    WT_EQ_INT(wt_store_write(st, "", r, n), 0);
    free(r);
    wt_store_close(st);
}

static const char site_yaml[] = "topology:\n"
                                "  meters:\n"
                                "    - {target: main, point: total, role: facility_total}\n"
                                "    - {target: ups, point: out, role: it_total}\n";

WT_TEST(pue_after_config_reload)
{
    /* PUE +10% from a configuration reload (a cooling set point, say): the finding names the
     * reload, site-wide; the same site without the rise has the change and no finding */
    const char *path = db("site.db");
    write_site(path, CHANGE);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review_with(path, site_yaml, W49, r);
    const struct wt_review_kpi *k = kpi(r, "pue");
    WT_NEAR(k->band.mean, 1.3, 0.01);
    WT_EQ_INT(k->band.days, 28);
    WT_EQ_INT((int)r->nchanges, 1);
    WT_EQ_STR(r->changes[0].kind, "config");
    WT_EQ_INT((int)r->nfindings, 1);
    WT_EQ_STR(r->findings[0].kpi, "pue");
    WT_EQ_INT(r->findings[0].change, 0);
    WT_NEAR(r->findings[0].after / r->findings[0].before, 1.10, 0.015);
    WT_CONTAINS(r->findings[0].text, "PUE +");
    WT_CONTAINS(r->findings[0].text, "since config 00000000000000aa -> 00000000000000bb");
    free(r);
    path = db("site-noise.db");
    write_site(path, 0);
    r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review_with(path, site_yaml, W49, r);
    WT_EQ_INT((int)r->nchanges, 1);
    WT_EQ_INT((int)r->nfindings, 0);
    WT_EQ_INT(kpi(r, "pue")->verdict, WT_RV_WITHIN);
    free(r);
}

WT_TEST(week_without_data_is_said)
{
    const char *path = db("planted.db");
    write_store(path, CHANGE, CH_DRIVER);
    struct wt_review *r = malloc(sizeof *r);
    WT_ASSERT(r != NULL);
    review(path, W49 + 14 * DAY, r); /* 2026-W51: nothing stored */
    WT_ASSERT(!r->has_data);
    const struct wt_review_kpi *k = kpi(r, "joules_per_generated_token");
    WT_ASSERT(isnan(k->value));
    WT_EQ_INT(k->verdict, WT_RV_NA);
    WT_CONTAINS(k->why, "no inference target");
    /* facility KPIs without meters say why, never 0 */
    WT_ASSERT(isnan(kpi(r, "pue")->value));
    WT_ASSERT(kpi(r, "pue")->why[0] != '\0');
    WT_EQ_INT((int)r->nfindings, 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WT_ASSERT(f != NULL);
    wt_review_text(r, f);
    fclose(f);
    WT_CONTAINS(text, "no readings stored in this week");
    WT_CONTAINS(text, "not available");
    free(text);
    free(r);
}

WT_TEST(write_stores)
{
    const char *dir = getenv("WATTAGE_REVIEW_DIR");
    const char *week = getenv("WATTAGE_REVIEW_WEEK");
    const char *step = getenv("WATTAGE_REVIEW_STEP_S");
    if (week)
        W49 = strtoll(week, NULL, 10) * S;
    if (step && strtoll(step, NULL, 10) > 0)
        STEP = strtoll(step, NULL, 10) * S;
    char p[512];
    snprintf(p, sizeof p, "%s/planted.db", dir ? dir : wt_test_dir());
    write_store(p, CHANGE, CH_DRIVER);
    snprintf(p, sizeof p, "%s/noise.db", dir ? dir : wt_test_dir());
    write_store(p, 0, CH_DRIVER);
}
