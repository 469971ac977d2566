/* SPDX-License-Identifier: MIT */
/* Jobs, marks and KPIs over a store holding known series: 3 GPUs at constant power (100, 200,
 * 300 W), so every energy figure has an exact expected value; bad bodies and what they leave. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "audit/jobs.h"
#include "core/clock.h"
#include "runner.h"
#include "serve/api_jobs.h"
#include "serve/expo.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S - (1700000000LL * S) % WT_MINUTE_NS)

static char db_path[512];

/* GPU g: counter from 1000 J rising at 100*(g+1) W, power gauge, every second for 200 s. */
static struct wt_jobs *setup(void)
{
    struct wt_store *s = NULL;
    struct wt_jobs *j = NULL;
    struct wt_err err = {{0}};
    snprintf(db_path, sizeof db_path, "%s/w.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(db_path, NULL, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "test"), 0);
    int n = 201;
    struct wt_reading *r = calloc((size_t)n * 6, sizeof *r);
    size_t k = 0;
    for (int g = 0; g < 3; g++) {
        char labels[WT_LABELS_LEN], idx[8], uuid[32];
        snprintf(idx, sizeof idx, "%d", g);
        snprintf(uuid, sizeof uuid, "GPU-abc%d-1111", g);
        WT_EQ_INT(wt_labels(labels, sizeof labels, "gpu", idx, "uuid", uuid, "model", "H200", NULL),
                  0);
        for (int i = 0; i < n; i++) {
            double w = 100.0 * (g + 1);
            r[k++] = (struct wt_reading){
                .t_ns = T0 + i * S, .value = 1000 + w * i, .metric = WT_M_GPU_ENERGY_J};
            memcpy(r[k - 1].labels, labels, sizeof labels);
            r[k++] =
                (struct wt_reading){.t_ns = T0 + i * S, .value = w, .metric = WT_M_GPU_POWER_W};
            memcpy(r[k - 1].labels, labels, sizeof labels);
        }
    }
    WT_EQ_INT(wt_store_write(s, "", r, k), 0);
    free(r);
    wt_store_close(s);
    WT_EQ_INT(wt_jobs_open(db_path, NULL, &j, &err), 0);
    return j;
}

static unsigned last_status;
/* One request at T0 + at seconds; returns the parsed reply (freed by the caller). */
static cJSON *req(struct wt_jobs *j, const char *method, const char *path, const char *body,
                  double at)
{
    char *json = NULL;
    WT_EQ_INT(wt_api_jobs_handle(j, method, path, body, body ? strlen(body) : 0, 0,
                                 T0 + (int64_t)(at * S), &last_status, &json),
              0);
    cJSON *v = cJSON_Parse(json);
    WT_ASSERT(v != NULL);
    cJSON_free(json);
    return v;
}

static double num(const cJSON *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *v = o;
    for (char *save = NULL, *p = strtok_r(buf, ".", &save); p; p = strtok_r(NULL, ".", &save))
        v = isdigit((unsigned char)p[0]) ? cJSON_GetArrayItem(v, atoi(p))
                                         : cJSON_GetObjectItemCaseSensitive(v, p);
    if (!cJSON_IsNumber(v))
        wt_test_fail(__FILE__, __LINE__, "%s: not a number", path);
    return v->valuedouble;
}

static const char *field(const cJSON *o)
{
    const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "field"));
    return f ? f : "(none)";
}

/* One call that must answer status (and field, for errors). */
static void expect(struct wt_jobs *j, const char *method, const char *path, const char *body,
                   unsigned status, const char *fld)
{
    cJSON *v = req(j, method, path, body, 100);
    if (last_status != status || (fld && strcmp(field(v), fld) != 0))
        wt_test_fail(__FILE__, __LINE__, "%s %s %s: got %u field %s, want %u %s", method, path,
                     body ? body : "", last_status, field(v), status, fld ? fld : "");
    cJSON_Delete(v);
}

WT_TEST(phases_and_kpis_from_the_stored_series)
{
    struct wt_jobs *j = setup();
    cJSON *v = req(j, "POST", "/api/v1/jobs",
                   "{\"name\": \"train\", \"gpus\": [0, \"2\"], \"tags\": {\"bs\": 32}}", 10);
    WT_EQ_INT(last_status, 201);
    WT_EQ_INT((int)num(v, "id"), 1);
    cJSON_Delete(v);
    /* 400 W on GPUs 0 and 2. Epoch 1: 10 s, 4000 J = 1/900 kWh with 3.6e6 tokens. */
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/1/marks",
                     "{\"kind\": \"epoch\", \"index\": 1, \"tokens\": 3600000}", 20));
    WT_EQ_INT(last_status, 201);
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/train/marks",
                     "{\"kind\": \"epoch\", \"index\": 2, \"samples\": 800}", 40.5));
    cJSON_Delete(
        req(j, "POST", "/api/v1/jobs/1/marks", "{\"kind\": \"eval\", \"begin\": true}", 41));
    cJSON_Delete(
        req(j, "POST", "/api/v1/jobs/1/marks", "{\"kind\": \"eval\", \"accuracy\": 0.7}", 45));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/1/marks",
                     "{\"kind\": \"serve\", \"requests\": 100, \"latency_p99_s\": 0.2}", 50));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/1/end", "", 60));
    WT_EQ_INT(last_status, 200);

    v = req(j, "GET", "/api/v1/jobs/1", NULL, 100);
    WT_EQ_INT(last_status, 200);
    WT_NEAR(num(v, "kpi.energy_joules"), 50 * 400.0, 1e-6);
    WT_NEAR(num(v, "kpi.duration_s"), 50, 1e-9);
    WT_NEAR(num(v, "kpi.mean_power_w"), 400, 1e-6);
    WT_NEAR(num(v, "kpi.coverage"), 1, 1e-12);
    WT_NEAR(num(v, "kpi.peak_power_w"), 400, 1e-6);
    WT_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(v, "gpu_energy")), 2);
    WT_NEAR(num(v, "gpu_energy.1.energy_joules"), 50 * 300.0, 1e-6);
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "tags"), "bs")),
              "32");
    /* Job totals count the epochs (tokens only from epoch 1). */
    WT_NEAR(num(v, "counters.tokens"), 3.6e6, 1e-6);
    WT_NEAR(num(v, "kpi.tokens_per_kwh"), 3.6e6 / (20000 / 3.6e6), 1e-3);

    const cJSON *ph = cJSON_GetObjectItem(v, "phases");
    WT_EQ_INT(cJSON_GetArraySize(ph), 4); /* the begin mark is no phase */
    WT_NEAR(num(v, "phases.0.kpi.energy_joules"), 4000, 1e-6);
    WT_NEAR(num(v, "phases.0.kpi.energy_kwh"), 4000 / 3.6e6, 1e-15);
    WT_NEAR(num(v, "phases.0.kpi.tokens_per_kwh"), 3.6e6 * 900, 1e-3);
    WT_NEAR(num(v, "phases.0.kpi.joules_per_token"), 4000 / 3.6e6, 1e-15);
    /* Epoch 2 from epoch 1's mark: 20.5 s, 8200 J; 800 samples: samples/s/W = 800/8200. */
    WT_NEAR(num(v, "phases.1.kpi.duration_s"), 20.5, 1e-9);
    WT_NEAR(num(v, "phases.1.kpi.energy_joules"), 8200, 1e-6);
    WT_NEAR(num(v, "phases.1.kpi.samples_per_s_per_w"), 800 / 8200.0, 1e-12);
    WT_NEAR(num(v, "phases.1.from_s"), num(v, "phases.0.to_s"), 1e-9);
    /* Eval from its begin mark: 4 s. */
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(ph, 2), "kind")), "eval");
    WT_NEAR(num(v, "phases.2.kpi.energy_joules"), 1600, 1e-6);
    /* Serve from the job's start (no earlier serve mark): 40 s, 16000 J, 160 J/request. */
    WT_NEAR(num(v, "phases.3.kpi.joules_per_request"), 160, 1e-9);
    WT_NEAR(num(v, "phases.3.kpi.latency_p99_s"), 0.2, 1e-12);
    cJSON_Delete(v);
    wt_jobs_close(j);
}

WT_TEST(energy_to_target_and_gpu_by_uuid)
{
    struct wt_jobs *j = setup();
    /* lower is better for a loss; GPU 1 named by a UUID prefix: 200 W. */
    cJSON_Delete(req(j, "POST", "/api/v1/jobs",
                     "{\"name\": \"ft\", \"gpus\": [\"GPU-abc1\"], \"target\": {\"loss\": 0.5}}",
                     0));
    WT_EQ_INT(last_status, 201);
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/ft/marks", "{\"loss\": 0.8}", 20));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/ft/marks", "{\"loss\": 0.4}", 30));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/ft/marks", "{\"loss\": 0.3}", 40));
    cJSON *v = req(j, "GET", "/api/v1/jobs/ft", NULL, 50);
    WT_ASSERT(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "energy_to_target"), "reached")));
    WT_NEAR(num(v, "energy_to_target.energy_joules"), 30 * 200.0, 1e-6);
    /* Running: the window ends now (T0+50). */
    WT_NEAR(num(v, "kpi.energy_joules"), 50 * 200.0, 1e-6);
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "state")), "running");
    cJSON_Delete(v);
    /* A target in the tags works too; accuracy is reached at or above it. */
    cJSON_Delete(req(j, "POST", "/api/v1/jobs",
                     "{\"name\": \"acc\", \"tags\": {\"target_accuracy\": \"0.9\"}}", 0));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/acc/marks", "{\"accuracy\": 0.85}", 10));
    v = req(j, "GET", "/api/v1/jobs/acc", NULL, 20);
    WT_ASSERT(
        cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "energy_to_target"), "reached")));
    WT_NEAR(num(v, "energy_to_target.target"), 0.9, 1e-12);
    WT_NEAR(num(v, "kpi.energy_joules"), 20 * 600.0, 1e-6); /* every GPU */
    cJSON_Delete(v);
    /* A window past the stored data says how much of it is covered. */
    v = req(j, "GET", "/api/v1/jobs/acc", NULL, 400);
    WT_NEAR(num(v, "kpi.coverage"), 200.0 / 400, 1e-9);
    cJSON_Delete(v);
    v = req(j, "GET", "/api/v1/jobs", NULL, 20);
    WT_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(v, "jobs")), 2);
    cJSON_Delete(v);
    wt_jobs_close(j);
}

/*
 * One GPU at 300 W whose counter stops 20 s in (frozen, or no longer answering) while its
 * integrated series goes on: a job over [10, 50] counts the integrated series, 40 s x 300 W,
 * and its per-GPU object says the counter covers a quarter of the window.
 */
WT_TEST(a_counter_that_stops_mid_job_gives_way_to_the_integrated_series)
{
    struct wt_store *s = NULL;
    struct wt_jobs *j = NULL;
    struct wt_err err = {{0}};
    struct wt_reading r[128];
    char labels[WT_LABELS_LEN];
    size_t k = 0;
    snprintf(db_path, sizeof db_path, "%s/stop.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(db_path, NULL, &s, &err), 0);
    WT_EQ_INT(wt_store_begin_run(s, "", T0 - S, S, "test"), 0);
    WT_EQ_INT(
        wt_labels(labels, sizeof labels, "gpu", "0", "uuid", "GPU-stop", "model", "H200", NULL), 0);
    for (int i = 0; i <= 60; i++) {
        r[k] = (struct wt_reading){
            .t_ns = T0 + i * S, .value = 300.0 * i, .metric = WT_M_GPU_ENERGY_INTEGRATED_J};
        memcpy(r[k++].labels, labels, sizeof labels);
        if (i <= 20) {
            r[k] = (struct wt_reading){
                .t_ns = T0 + i * S, .value = 7000 + 300.0 * i, .metric = WT_M_GPU_ENERGY_J};
            memcpy(r[k++].labels, labels, sizeof labels);
        }
    }
    WT_EQ_INT(wt_store_write(s, "", r, k), 0);
    wt_store_close(s);
    WT_EQ_INT(wt_jobs_open(db_path, NULL, &j, &err), 0);
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"f\", \"gpus\": [0]}", 10));
    WT_EQ_INT(last_status, 201);
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/f/end", "", 50));
    cJSON *v = req(j, "GET", "/api/v1/jobs/f", NULL, 100);
    WT_NEAR(num(v, "kpi.energy_joules"), 40 * 300.0, 1e-6);
    WT_NEAR(num(v, "kpi.coverage"), 1, 1e-12);
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(
                  cJSON_GetArrayItem(cJSON_GetObjectItem(v, "gpu_energy"), 0), "method")),
              "integrated");
    WT_NEAR(num(v, "gpu_energy.0.counter_coverage"), 0.25, 1e-9);
    cJSON_Delete(v);
    wt_jobs_close(j);
}

static long long rows(void)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long n = -1;
    WT_EQ_INT(sqlite3_open(db_path, &db), SQLITE_OK);
    WT_EQ_INT(sqlite3_prepare_v2(db,
                                 "SELECT (SELECT count(*) FROM jobs) * 1000000 + "
                                 "(SELECT count(*) FROM marks) + (SELECT count(*) FROM jobs "
                                 "WHERE end_ns IS NOT NULL) * 1000",
                                 -1, &st, NULL),
              SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

WT_TEST(bad_inputs_name_the_field_and_store_nothing)
{
    struct wt_jobs *j = setup();
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"a\"}", 0));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"done\"}", 0));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/done/end", NULL, 1));
    long long before = rows();
    WT_EQ_INT(before, 2001000);
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"x\"", 400, "body");
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"x\"} trailing", 400, "body");
    expect(j, "POST", "/api/v1/jobs", "\"name\"", 400, "body");
    expect(j, "POST", "/api/v1/jobs", "", 400, "body");
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"12\"}", 400, "name");
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"a\"}", 409, "name"); /* running already */
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"b\", \"gpus\": \"0\"}", 400, "gpus");
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"b\", \"gpus\": [-1]}", 400, "gpus[0]");
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"b\", \"tags\": {\"k\": \"a\\nb\"}}", 400,
           "tags.k");
    expect(j, "POST", "/api/v1/jobs", "{\"name\": \"b\", \"target\": {\"acc\": \"x\"}}", 400,
           "target.acc");
    expect(j, "POST", "/api/v1/jobs/a/marks", "{\"tokens\": -1}", 400, "tokens");
    expect(j, "POST", "/api/v1/jobs/a/marks", "{\"tokens\": 1, \"Bad-Name\": 1}", 400, "Bad-Name");
    expect(j, "POST", "/api/v1/jobs/a/marks", "{\"index\": -2}", 400, "index");
    expect(j, "POST", "/api/v1/jobs/a/marks", "{\"begin\": 1}", 400, "begin");
    expect(j, "POST", "/api/v1/jobs/a/marks", "{\"kind\": \"\"}", 400, "kind");
    expect(j, "POST", "/api/v1/jobs/a/marks", "{\"accuracy\": {\"top1\": 1}}", 400, "accuracy");
    expect(j, "POST", "/api/v1/jobs/a/end", "{\"force\": true}", 400, "force");
    expect(j, "POST", "/api/v1/jobs/zzz/marks", "{}", 404, "job");
    expect(j, "POST", "/api/v1/jobs/77/end", NULL, 404, "job");
    expect(j, "POST", "/api/v1/jobs/done/marks", "{\"tokens\": 1}", 409, "job");
    expect(j, "POST", "/api/v1/jobs/done/end", NULL, 409, "job");
    expect(j, "GET", "/api/v1/jobs/a/marks", NULL, 405, NULL);
    expect(j, "POST", "/api/v1/jobs/a", "{}", 405, NULL);
    expect(j, "POST", "/api/v1/jobs/a/stop", "{}", 404, NULL);
    /* A body nested past cJSON's limit is malformed, not a crash. */
    char *deep = malloc(4100);
    memset(deep, '[', 4099);
    deep[4099] = '\0';
    expect(j, "POST", "/api/v1/jobs", deep, 400, "body");
    free(deep);
    WT_EQ_INT(rows(), before);
    wt_jobs_close(j);
}

WT_TEST(key_names)
{
    WT_ASSERT(wt_jobs_key_ok("tokens"));
    WT_ASSERT(wt_jobs_key_ok("latency_p99_s"));
    WT_ASSERT(wt_jobs_key_ok("_x1"));
    WT_ASSERT(!wt_jobs_key_ok(""));
    WT_ASSERT(!wt_jobs_key_ok("1x"));
    WT_ASSERT(!wt_jobs_key_ok("Tokens"));
    WT_ASSERT(!wt_jobs_key_ok("a-b"));
    WT_ASSERT(!wt_jobs_key_ok("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

WT_TEST(phases_are_bounded)
{
    struct wt_jobs *j = setup();
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"steps\", \"gpus\": [1]}", 0));
    for (int i = 0; i < 1003; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"kind\": \"step\", \"index\": %d}", i);
        cJSON_Delete(req(j, "POST", "/api/v1/jobs/steps/marks", body, 0.1 * (i + 1)));
        WT_EQ_INT(last_status, 201);
    }
    cJSON *v = req(j, "GET", "/api/v1/jobs/steps", NULL, 150);
    WT_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(v, "phases")), 1000);
    WT_EQ_INT((int)num(v, "phases_omitted"), 3);
    WT_EQ_INT((int)num(v, "phases.0.index"), 3); /* the latest are kept */
    WT_NEAR(num(v, "phases.999.kpi.energy_joules"), 0.1 * 200, 1e-6);
    cJSON_Delete(v);
    wt_jobs_close(j);
}

/* The /metrics family's value of the sample whose labels are want; NAN when absent. */
static double fam_value(struct wt_jobs *j, const char *want, size_t *n)
{
    struct wt_expo_family f;
    double v = NAN;
    WT_EQ_INT(wt_jobs_family(j, &f), 0);
    WT_EQ_STR(f.name, "wattage_job_energy_joules_total");
    WT_EQ_INT(f.type, WT_COUNTER);
    for (size_t i = 0; i < f.n; i++) {
        if (strcmp(f.s[i].labels, want) == 0)
            v = f.s[i].value;
    }
    *n = f.n;
    free(f.s);
    return v;
}

WT_TEST(metrics_family_of_running_jobs_and_their_gpus_set_later)
{
    struct wt_jobs *j = setup();
    size_t n = 9;
    WT_ASSERT(isnan(fam_value(j, "", &n)));
    WT_EQ_INT(n, 0);
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"a\", \"gpus\": [0, \"2\"]}", 10));
    WT_EQ_INT(last_status, 201);
    /* The stored series end at T0+200: 400 W over 190 s. */
    WT_NEAR(fam_value(j, "id=\"1\",job=\"a\"", &n), 76000, 1e-6);
    WT_EQ_INT(n, 1);
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"b\"}", 50));
    /* Every GPU: 600 W over 150 s; a start shows at once, whatever the cache. */
    WT_NEAR(fam_value(j, "id=\"2\",job=\"b\"", &n), 90000, 1e-6);
    WT_EQ_INT(n, 2);
    cJSON *v = req(j, "GET", "/api/v1/jobs/b", NULL, 300);
    WT_NEAR(num(v, "kpi.energy_joules"), 90000, 1e-6);
    cJSON_Delete(v);

    expect(j, "POST", "/api/v1/jobs/a/gpus", "{\"gpus\": [1]}", 409, "gpus");
    expect(j, "POST", "/api/v1/jobs/b/gpus", "{\"gpus\": [\"x\"]}", 400, "gpus[0]");
    expect(j, "POST", "/api/v1/jobs/b/gpus", "{}", 400, "gpus");
    expect(j, "GET", "/api/v1/jobs/b/gpus", NULL, 405, NULL);
    v = req(j, "POST", "/api/v1/jobs/b/gpus", "{\"gpus\": [\"GPU-abc1\"]}", 60);
    WT_EQ_INT(last_status, 200);
    cJSON_Delete(v);
    /* GPU 1 alone (200 W) over the job's whole window. */
    WT_NEAR(fam_value(j, "id=\"2\",job=\"b\"", &n), 30000, 1e-6);
    expect(j, "POST", "/api/v1/jobs/b/gpus", "{\"gpus\": [0]}", 409, "gpus");

    cJSON_Delete(req(j, "POST", "/api/v1/jobs/a/end", NULL, 70));
    WT_ASSERT(isnan(fam_value(j, "id=\"1\",job=\"a\"", &n)));
    WT_EQ_INT(n, 1);
    expect(j, "POST", "/api/v1/jobs/a/gpus", "{\"gpus\": [1]}", 409, "job");
    cJSON_Delete(req(j, "POST", "/api/v1/jobs/b/end", NULL, 70));
    fam_value(j, "", &n);
    WT_EQ_INT(n, 0);
    wt_jobs_close(j);
}

/* The body of one request through the API layer, at T0 + 100 s (malloc'd). */
static char *raw(struct wt_jobs *j, const char *method, const char *path, unsigned want)
{
    unsigned status = 0;
    char *json = NULL;
    WT_EQ_INT(wt_api_jobs_handle(j, method, path, NULL, 0, 0, T0 + 100 * S, &status, &json), 0);
    WT_EQ_INT(status, want);
    return json;
}

static void refused(struct wt_jobs *j, const char *method, const char *path, unsigned want,
                    const char *body)
{
    char *json = raw(j, method, path, want);
    WT_EQ_STR(json, body);
    cJSON_free(json);
}

/* The API layer's own refusals (path and method), byte for byte as the jobs module wrote them. */
WT_TEST(api_layer_refuses_paths_and_methods)
{
    struct wt_jobs *j = setup();
    char longref[160];
    memset(longref, 'x', sizeof longref);
    memcpy(longref, "/api/v1/jobs/", 13);
    longref[sizeof longref - 1] = '\0';
    refused(j, "GET", "/api/v1/jobsx", 404, "{\"error\":\"no such endpoint\"}");
    refused(j, "GET", "/metrics", 404, "{\"error\":\"no such endpoint\"}");
    refused(j, "PUT", "/api/v1/jobs", 405, "{\"error\":\"use GET or POST\"}");
    refused(j, "GET", longref, 404, "{\"error\":\"job: no such job\",\"field\":\"job\"}");
    refused(j, "POST", "/api/v1/jobs/1/stop", 404,
            "{\"error\":\"no such endpoint (expected /api/v1/jobs/{id}[/marks|/end|/gpus])\"}");
    refused(j, "GET", "/api/v1/jobs/1/end", 405, "{\"error\":\"only POST is not allowed here\"}");
    refused(j, "DELETE", "/api/v1/jobs/1", 405, "{\"error\":\"only GET is not allowed here\"}");
    refused(j, "GET", "/api/v1/jobs/x\"y", 404,
            "{\"error\":\"job: no job x?y\",\"field\":\"job\"}");
    wt_jobs_close(j);
}

/* What report.c calls gives what the routes answer. */
WT_TEST(plain_functions_answer_as_the_routes)
{
    struct wt_jobs *j = setup();
    unsigned status = 0;
    char *json = NULL;
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"a\", \"gpus\": [0]}", 10));
    WT_EQ_INT(last_status, 201);
    char *route = raw(j, "GET", "/api/v1/jobs/a", 200);
    WT_EQ_INT(wt_jobs_act_json(j, "a", WT_JOBS_SHOW, NULL, 0, T0 + 100 * S, &status, &json), 0);
    WT_EQ_INT(status, 200);
    WT_EQ_STR(json, route);
    cJSON_free(json);
    cJSON_free(route);
    route = raw(j, "GET", "/api/v1/jobs", 200);
    WT_EQ_INT(wt_jobs_list_json(j, 0, T0 + 100 * S, &status, &json), 0);
    WT_EQ_INT(status, 200);
    WT_EQ_STR(json, route);
    WT_CONTAINS(json, "\"name\":\"a\"");
    cJSON_free(json);
    cJSON_free(route);
    WT_EQ_INT(wt_jobs_act_json(j, "zz", WT_JOBS_END, NULL, 0, T0 + 100 * S, &status, &json), 0);
    WT_EQ_INT(status, 404);
    WT_EQ_STR(json, "{\"error\":\"job: no job zz\",\"field\":\"job\"}");
    cJSON_free(json);
    wt_jobs_close(j);
}

WT_TEST(no_process_list_without_an_nvml_collector)
{
    unsigned status = 0;
    char *json = NULL;
    WT_EQ_INT(wt_api_processes_json(&status, &json), 0);
    WT_EQ_INT(status, 503);
    WT_CONTAINS(json, "no GPU process list");
    cJSON_free(json);
}

/* The marks of a job as (kind, tokens form, value) at 10 s steps; returns the last reply. */
static cJSON *marks(struct wt_jobs *j, const char *job, const char *key, const double *v, int n)
{
    cJSON *last = NULL;
    for (int i = 0; i < n; i++) {
        char path[64], body[128];
        snprintf(path, sizeof path, "/api/v1/jobs/%s/marks", job);
        snprintf(body, sizeof body, "{\"kind\": \"epoch\", \"index\": %d, \"%s\": %.17g}", i, key,
                 v[i]);
        cJSON_Delete(last);
        last = req(j, "POST", path, body, 20 + 10 * i);
        if (last_status != 201)
            wt_test_fail(__FILE__, __LINE__, "%s: HTTP %u", body, last_status);
    }
    return last;
}

static int nwarnings(const cJSON *reply)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(reply, "warnings"));
}

WT_TEST(token_deltas_and_running_totals_give_the_same_figures)
{
    struct wt_jobs *j = setup();
    /* Two jobs on GPU 0 (100 W) over the same windows: one counts each epoch's tokens, the
     * other the running total. Each epoch is 10 s, 1000 J. */
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"delta\", \"gpus\": [0]}", 10));
    cJSON_Delete(req(j, "POST", "/api/v1/jobs", "{\"name\": \"total\", \"gpus\": [0]}", 10));
    const double d[] = {1000, 1200, 900}, t[] = {1000, 2200, 3100};
    cJSON *r = marks(j, "delta", "tokens", d, 3);
    WT_EQ_INT(nwarnings(r), 0);
    cJSON_Delete(r);
    r = marks(j, "total", "tokens_total", t, 3);
    WT_EQ_INT(nwarnings(r), 0);
    WT_NEAR(num(r, "counters.tokens"), 900, 1e-9); /* the phase's count, stored beside the total */
    WT_NEAR(num(r, "counters.tokens_total"), 3100, 1e-9);
    cJSON_Delete(r);
    cJSON *a = req(j, "GET", "/api/v1/jobs/delta", NULL, 100);
    cJSON *b = req(j, "GET", "/api/v1/jobs/total", NULL, 100);
    for (int i = 0; i < 3; i++) {
        char k[64];
        snprintf(k, sizeof k, "phases.%d.kpi.tokens_per_kwh", i);
        WT_NEAR(num(a, k), d[i] / (1000 / 3.6e6), 1e-6);
        WT_NEAR(num(b, k), num(a, k), 1e-6);
    }
    WT_NEAR(num(a, "counters.tokens"), 3100, 1e-9);
    WT_NEAR(num(b, "counters.tokens"), 3100, 1e-9);
    WT_NEAR(num(b, "kpi.tokens_per_kwh"), num(a, "kpi.tokens_per_kwh"), 1e-6);
    cJSON_Delete(a);
    cJSON_Delete(b);

    /* A total below the earlier ones, both forms at once, a total at a begin mark: 400s. */
    expect(j, "POST", "/api/v1/jobs/total/marks", "{\"kind\": \"epoch\", \"tokens_total\": 3000}",
           400, "tokens_total");
    expect(j, "POST", "/api/v1/jobs/total/marks",
           "{\"kind\": \"epoch\", \"tokens\": 5, \"tokens_total\": 4000}", 400, "tokens_total");
    expect(j, "POST", "/api/v1/jobs/total/marks",
           "{\"kind\": \"epoch\", \"begin\": true, \"samples_total\": 4}", 400, "samples_total");
    wt_jobs_close(j);
}

WT_TEST(a_running_total_sent_as_a_delta_is_warned_about)
{
    struct wt_jobs *j = setup();
    static const struct {
        const char *name;
        double v[5];
        int n, warn_from; /* the first mark (0-based) that warns; -1: none */
    } cases[] = {
        {"cumulative", {250, 500, 750, 1000, 1250}, 5, 2},
        {"steady", {250, 260, 240, 255, 250}, 5, -1},
        {"warming-up", {100, 150, 190}, 3, -1}, /* rising, but under twice the first */
        {"dip", {100, 300, 250, 600}, 4, -1},   /* not rising at every mark */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char body[96], path[96];
        snprintf(body, sizeof body, "{\"name\": \"%s\", \"gpus\": [0]}", cases[c].name);
        cJSON_Delete(req(j, "POST", "/api/v1/jobs", body, 10));
        snprintf(path, sizeof path, "/api/v1/jobs/%s/marks", cases[c].name);
        for (int i = 0; i < cases[c].n; i++) {
            snprintf(body, sizeof body, "{\"kind\": \"epoch\", \"tokens\": %g}", cases[c].v[i]);
            cJSON *r = req(j, "POST", path, body, 20 + i);
            bool want = cases[c].warn_from >= 0 && i >= cases[c].warn_from;
            if (nwarnings(r) != (want ? 1 : 0))
                wt_test_fail(__FILE__, __LINE__, "%s mark %d: %d warnings, want %d", cases[c].name,
                             i, nwarnings(r), want);
            if (want)
                WT_CONTAINS(cJSON_GetStringValue(cJSON_GetArrayItem(
                                cJSON_GetObjectItemCaseSensitive(r, "warnings"), 0)),
                            "send it as tokens_total");
            cJSON_Delete(r);
        }
    }
    wt_jobs_close(j);
}
