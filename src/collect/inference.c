/* SPDX-License-Identifier: MIT */
/*
 * Inference servers' /metrics (collect/inference.h). The names each engine exposes, their types
 * and labels are in docs/inference.md, from the field notes: vLLM and
 * SGLang count tokens in `_total` counters (vLLM per engine step, SGLang at a request's end),
 * TGI and the TensorRT-LLM backend only as the `_sum` of per-request histograms, llama.cpp in
 * unlabelled counters printed to six digits. A family's meaning comes from its name and TYPE,
 * never from a suffix alone (vllm:iteration_tokens_total is a histogram).
 */
#include "collect/inference.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "collect/expo_parse.h"
#include "collect/inference_energy.h"
#include "collect/listener.h"
#include "collect/nvml.h"
#include "collect/rocm.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/curl_lib.h"
#include "core/gpuname.h"
#include "core/log.h"
#include "core/source.h"
#include "core/yget.h"

#define SECTION "inference.targets"
#define MODEL_LEN WT_INF_MODEL_LEN
#define MAX_ACC 2048           /* kept values a scrape: models x (tokens, requests, buckets...) */
#define MAX_RESPONSE (8 << 20) /* default max_response_bytes: a vLLM body is ~30 kB */

enum engine { ENG_AUTO, ENG_VLLM, ENG_SGLANG, ENG_TGI, ENG_TRITON, ENG_LLAMACPP };
static const char *const engine_names[] = {"auto",   "vllm",     "sglang", "tgi",
                                           "triton", "llamacpp", NULL};

/* What a family gives. */
enum what {
    W_TOKENS,     /* a counter's value */
    W_TOKENS_SUM, /* a histogram's _sum (TGI, TensorRT-LLM: tokens per request) */
    W_REQUESTS,   /* a counter, summed over every other label (finished_reason) */
    W_LATENCY,    /* a histogram: buckets, sum, count */
    W_RUNNING,    /* a gauge */
    W_WAITING,    /* a gauge */
};

struct rule {
    enum engine engine;
    const char *family; /* without _total for counters */
    enum what what;
    const char *kind;
    const char *only_label, *only_value; /* keep only samples with this label value */
    bool fallback;                       /* used only when no family of the same kind came */
};

static const struct rule rules[] = {
    {ENG_VLLM, "vllm:prompt_tokens", W_TOKENS, "prompt", NULL, NULL, false},
    {ENG_VLLM, "vllm:generation_tokens", W_TOKENS, "generated", NULL, NULL, false},
    {ENG_VLLM, "vllm:prompt_tokens_cached", W_TOKENS, "prompt_cached", NULL, NULL, false},
    {ENG_VLLM, "vllm:prompt_tokens_by_source", W_TOKENS, "prompt_computed", "source",
     "local_compute", false},
    {ENG_VLLM, "vllm:request_success", W_REQUESTS, NULL, NULL, NULL, false},
    {ENG_VLLM, "vllm:e2e_request_latency_seconds", W_LATENCY, "e2e", NULL, NULL, false},
    {ENG_VLLM, "vllm:time_to_first_token_seconds", W_LATENCY, "ttft", NULL, NULL, false},
    {ENG_VLLM, "vllm:inter_token_latency_seconds", W_LATENCY, "itl", NULL, NULL, false},
    /* the old name of the same data (0.11 emits both): only without the new one */
    {ENG_VLLM, "vllm:time_per_output_token_seconds", W_LATENCY, "itl", NULL, NULL, true},
    {ENG_VLLM, "vllm:num_requests_running", W_RUNNING, NULL, NULL, NULL, false},
    {ENG_VLLM, "vllm:num_requests_waiting", W_WAITING, NULL, NULL, NULL, false},
    {ENG_SGLANG, "sglang:prompt_tokens", W_TOKENS, "prompt", NULL, NULL, false},
    {ENG_SGLANG, "sglang:generation_tokens", W_TOKENS, "generated", NULL, NULL, false},
    {ENG_SGLANG, "sglang:cached_tokens", W_TOKENS, "prompt_cached", NULL, NULL, false},
    {ENG_SGLANG, "sglang:num_requests", W_REQUESTS, NULL, NULL, NULL, false},
    {ENG_SGLANG, "sglang:e2e_request_latency_seconds", W_LATENCY, "e2e", NULL, NULL, false},
    {ENG_SGLANG, "sglang:time_to_first_token_seconds", W_LATENCY, "ttft", NULL, NULL, false},
    {ENG_SGLANG, "sglang:inter_token_latency_seconds", W_LATENCY, "itl", NULL, NULL, false},
    {ENG_SGLANG, "sglang:time_per_output_token_seconds", W_LATENCY, "itl", NULL, NULL, true},
    {ENG_SGLANG, "sglang:num_running_reqs", W_RUNNING, NULL, NULL, NULL, false},
    {ENG_SGLANG, "sglang:num_queue_reqs", W_WAITING, NULL, NULL, NULL, false},
    {ENG_TGI, "tgi_request_input_length", W_TOKENS_SUM, "prompt", NULL, NULL, false},
    {ENG_TGI, "tgi_request_generated_tokens", W_TOKENS_SUM, "generated", NULL, NULL, false},
    {ENG_TGI, "tgi_request_success", W_REQUESTS, NULL, NULL, NULL, false},
    {ENG_TGI, "tgi_request_duration", W_LATENCY, "e2e", NULL, NULL, false},
    {ENG_TGI, "tgi_batch_current_size", W_RUNNING, NULL, NULL, NULL, false},
    {ENG_TGI, "tgi_queue_size", W_WAITING, NULL, NULL, NULL, false},
    {ENG_TRITON, "nv_llm_input_token_len", W_TOKENS_SUM, "prompt", "response_metric_type",
     "total_input_tokens", false},
    {ENG_TRITON, "nv_llm_output_token_len", W_TOKENS_SUM, "generated", "response_metric_type",
     "total_output_tokens", false},
    {ENG_TRITON, "nv_inference_request_success", W_REQUESTS, NULL, NULL, NULL, false},
    {ENG_TRITON, "nv_inference_pending_request_count", W_WAITING, NULL, NULL, NULL, false},
    {ENG_LLAMACPP, "llamacpp:prompt_tokens", W_TOKENS, "prompt", NULL, NULL, false},
    {ENG_LLAMACPP, "llamacpp:tokens_predicted", W_TOKENS, "generated", NULL, NULL, false},
    {ENG_LLAMACPP, "llamacpp:prompt_tokens_cached", W_TOKENS, "prompt_cached", NULL, NULL, false},
    {ENG_LLAMACPP, "llamacpp:requests_processing", W_RUNNING, NULL, NULL, NULL, false},
    {ENG_LLAMACPP, "llamacpp:requests_deferred", W_WAITING, NULL, NULL, NULL, false},
};
#define NRULES (sizeof rules / sizeof rules[0])

/* The engine a family's name belongs to (ENG_AUTO: none of them). */
static enum engine engine_of(const char *name, size_t n)
{
    static const struct {
        const char *prefix;
        enum engine e;
    } p[] = {{"vllm:", ENG_VLLM},           {"sglang:", ENG_SGLANG}, {"tgi_", ENG_TGI},
             {"nv_inference_", ENG_TRITON}, {"nv_llm_", ENG_TRITON}, {"llamacpp:", ENG_LLAMACPP}};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        size_t k = strlen(p[i].prefix);
        if (n >= k && memcmp(name, p[i].prefix, k) == 0)
            return p[i].e;
    }
    return ENG_AUTO;
}

/* One kept value of a scrape: a (what, kind, model, le) and its sum over the other labels. */
struct acc {
    unsigned char what; /* enum what; W_LATENCY splits into the three below */
    unsigned char part; /* 0 value/bucket, 1 sum, 2 count */
    bool fallback;
    const char *kind;
    char model[MODEL_LEN];
    double le;
    double v;
};

struct scrape {
    enum engine configured;
    const char *model; /* for servers without a model label */
    struct acc *acc;
    size_t n;
    bool seen[6];            /* engines whose families came (index enum engine) */
    bool kind_seen[3];       /* latency kinds of non-fallback families: e2e, ttft, itl */
    const struct rule *rule; /* the current family's, NULL: not wanted */
    bool matched;            /* a family of the rules came */
    bool too_many;
};

static int lat_index(const char *kind)
{
    return kind[0] == 'e' ? 0 : kind[0] == 't' ? 1 : 2;
}

static bool on_family(void *ctx, const struct wt_expo_parse_family *f)
{
    struct scrape *s = ctx;
    size_t n = f->name_len;
    enum engine e = engine_of(f->name, n);
    s->rule = NULL;
    if (e == ENG_AUTO)
        return false;
    s->seen[e] = true;
    /* 0.0.4 types a counter with its _total (prometheus_client), OpenMetrics without */
    if ((f->type == WT_EXPO_PARSE_COUNTER || f->type == WT_EXPO_PARSE_UNTYPED) && n > 6 &&
        memcmp(f->name + n - 6, "_total", 6) == 0)
        n -= 6;
    for (size_t i = 0; i < NRULES; i++) {
        const struct rule *r = &rules[i];
        if (strlen(r->family) != n || memcmp(r->family, f->name, n) != 0)
            continue;
        /* an engine named in the configuration keeps to its own names (Triton's vLLM backend
         * speaks vLLM's) */
        if (s->configured != ENG_AUTO && r->engine != s->configured &&
            !(s->configured == ENG_TRITON && r->engine == ENG_VLLM))
            return false;
        bool hist = f->type == WT_EXPO_PARSE_HISTOGRAM;
        if ((r->what == W_LATENCY || r->what == W_TOKENS_SUM) != hist)
            return false; /* the same name with another type: not the family meant */
        if (r->what == W_LATENCY && !r->fallback)
            s->kind_seen[lat_index(r->kind)] = true;
        s->rule = r;
        s->matched = true;
        return true;
    }
    return false;
}

static struct acc *acc_for(struct scrape *s, unsigned what, unsigned part, const char *kind,
                           const char *model, size_t mlen, double le, bool fallback)
{
    for (size_t i = 0; i < s->n; i++) {
        struct acc *a = &s->acc[i];
        if (a->what == what && a->part == part && a->kind == kind && a->fallback == fallback &&
            strlen(a->model) == mlen && memcmp(a->model, model, mlen) == 0 &&
            (a->le == le || (isinf(a->le) && isinf(le))))
            return a;
    }
    if (s->n == MAX_ACC) {
        s->too_many = true;
        return NULL;
    }
    struct acc *a = &s->acc[s->n++];
    a->what = (unsigned char)what;
    a->part = (unsigned char)part;
    a->fallback = fallback;
    a->kind = kind;
    memcpy(a->model, model, mlen);
    a->model[mlen] = '\0';
    a->le = le;
    a->v = 0;
    return a;
}

static int on_sample(void *ctx, const struct wt_expo_parse_family *f,
                     const struct wt_expo_parse_sample *x)
{
    (void)f;
    struct scrape *s = ctx;
    const struct rule *r = s->rule;
    if (!r)
        return 0;
    if (r->only_label) {
        size_t vl = 0;
        const char *v = wt_expo_parse_label(x, r->only_label, &vl);
        if (!v || vl != strlen(r->only_value) || memcmp(v, r->only_value, vl) != 0)
            return 0;
    }
    size_t ml = 0;
    const char *model = wt_expo_parse_label(x, "model_name", &ml);
    if (!model)
        model = wt_expo_parse_label(x, "model", &ml);
    if (!model) {
        model = s->model;
        ml = strlen(model);
    }
    if (ml >= MODEL_LEN)
        ml = MODEL_LEN - 1;
    if (!isfinite(x->value) && !(x->suffix == WT_EXPO_PARSE_SFX_BUCKET))
        return 0;
    unsigned part = 0;
    double le = 0;
    switch (r->what) {
    case W_TOKENS_SUM:
        if (x->suffix != WT_EXPO_PARSE_SFX_SUM)
            return 0;
        break;
    case W_LATENCY:
        if (x->suffix == WT_EXPO_PARSE_SFX_BUCKET) {
            if (isnan(x->le))
                return 0;
            le = x->le;
        } else if (x->suffix == WT_EXPO_PARSE_SFX_SUM) {
            part = 1;
        } else if (x->suffix == WT_EXPO_PARSE_SFX_COUNT) {
            part = 2;
        } else {
            return 0;
        }
        break;
    default:
        if (x->suffix == WT_EXPO_PARSE_SFX_CREATED)
            return 0;
        break;
    }
    struct acc *a = acc_for(s, r->what, part, r->kind, model, ml, le, r->fallback);
    if (a)
        a->v += x->value;
    return 0;
}

/* Prometheus' text for a bound: the shortest decimal that reads back exactly, or +Inf. */
static void fmt_le(double v, char *out, size_t n)
{
    if (isinf(v)) {
        snprintf(out, n, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(out, n, "%.*g", p, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static int emit(const struct scrape *s, const char *target, int64_t t_ns, struct wt_batch *out)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct acc *a = &s->acc[i];
        /* the old name of a latency only when no family of the new one came */
        if (a->fallback && s->kind_seen[lat_index(a->kind)])
            continue;
        char labels[WT_LABELS_LEN], le[32];
        int metric, rc;
        switch (a->what) {
        case W_TOKENS:
        case W_TOKENS_SUM:
            metric = WT_M_INF_TOKENS;
            rc = wt_labels(labels, sizeof labels, "target", target, "model", a->model, "kind",
                           a->kind, NULL);
            break;
        case W_REQUESTS:
            metric = WT_M_INF_REQUESTS;
            rc = wt_labels(labels, sizeof labels, "target", target, "model", a->model, NULL);
            break;
        case W_LATENCY:
            metric = a->part == 0   ? WT_M_INF_LAT_BUCKET
                     : a->part == 1 ? WT_M_INF_LAT_SUM
                                    : WT_M_INF_LAT_COUNT;
            rc = wt_labels(labels, sizeof labels, "target", target, "model", a->model, "kind",
                           a->kind, NULL);
            if (!rc && a->part == 0) {
                fmt_le(a->le, le, sizeof le);
                rc = wt_labels_add(labels, sizeof labels, "le", le);
            }
            break;
        default:
            metric = a->what == W_RUNNING ? WT_M_INF_RUNNING : WT_M_INF_WAITING;
            rc = wt_labels(labels, sizeof labels, "target", target, "model", a->model, NULL);
            break;
        }
        if (rc == 0)
            rc = wt_batch_add(out, metric, labels, t_ns, a->v);
        if (rc == -ENOMEM)
            return rc;
    }
    return 0;
}

/* The engine that answered: the one named, else the one whose names came (Triton first: its
 * vLLM backend speaks vLLM's names beside its own). */
static enum engine answered(const struct scrape *s)
{
    if (s->configured != ENG_AUTO)
        return s->configured;
    static const enum engine order[] = {ENG_TRITON, ENG_VLLM, ENG_SGLANG, ENG_TGI, ENG_LLAMACPP};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (s->seen[order[i]])
            return order[i];
    return ENG_AUTO;
}

/* Parses body into s (which the caller zeroed but for configured, model and acc). */
static int parse_into(struct scrape *s, const char *body, size_t len, const char *ctype,
                      size_t max_body, struct wt_err *err)
{
    struct wt_expo_parse_opts o = {
        .fmt = wt_expo_parse_fmt_of(ctype),
        .max_body = max_body,
        .family = on_family,
        .sample = on_sample,
        .ctx = s,
    };
    int rc = wt_expo_parse(body, len, &o, err);
    if (rc)
        return rc;
    if (s->too_many)
        return wt_err_set(err, "more than %d kept values (models x buckets)", MAX_ACC);
    if (answered(s) == ENG_AUTO)
        return wt_err_set(err, "no metric of vLLM, SGLang, TGI, Triton or llama.cpp in %zu bytes",
                          len);
    if (!s->matched)
        return wt_err_set(err, "no metric of %s that wattage reads in %zu bytes",
                          engine_names[s->configured], len);
    return 0;
}

static int engine_by_name(const char *name)
{
    for (int i = 0; engine_names[i]; i++)
        if (strcmp(engine_names[i], name) == 0)
            return i;
    return -1;
}

int wt_inference_map(const char *target, const char *engine, const char *model, const char *body,
                     size_t len, const char *ctype, int64_t t_ns, struct wt_batch *out,
                     struct wt_err *err)
{
    int e = engine_by_name(engine ? engine : "auto");
    if (e < 0)
        return wt_err_set(err, "unknown engine \"%s\"", engine);
    struct scrape s = {.configured = (enum engine)e, .model = model ? model : target};
    s.acc = malloc(MAX_ACC * sizeof *s.acc);
    if (!s.acc)
        return -ENOMEM;
    int rc = parse_into(&s, body, len, ctype, 0, err);
    if (rc == 0)
        rc = emit(&s, target, t_ns, out);
    free(s.acc);
    return rc;
}

/* ---- configuration ---- */

struct target {
    char name[WT_TARGET_NAME_LEN + 1];
    char url[512];
    int engine;
    char model[MODEL_LEN];
    char tags[WT_LABELS_LEN / 2]; /* canonical labels: key="value",... */
    char gpus[96];                /* "0,1", "amd:0,nvidia:1" */
    char ca_file[WT_PATH_LEN], cert_file[WT_PATH_LEN], key_file[WT_PATH_LEN];
    char bearer_token_file[WT_PATH_LEN];
    bool insecure;
    int64_t timeout_ns, interval_ns, max_response;
};

static bool name_ok(const char *s, bool label)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool ok = label ? (islower(c) || c == '_' || (p > s && isdigit(c)))
                        : (isalnum(c) || c == '_' || c == '.' || c == '-');
        if (!ok)
            return false;
    }
    return true;
}

static int parse_tags(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                      struct target *t)
{
    const struct wt_ynode *tags = wt_y_get(m, "tags");
    char p[256];
    if (!tags)
        return 0;
    wt_y_path(p, sizeof p, path, "tags");
    if (tags->kind != WT_YNODE_MAP && !wt_ynode_is_null(tags))
        return wt_y_fail(g, tags, p, "expected a mapping of tags (precision: fp8)");
    int rc = 0;
    for (size_t i = 0; tags->kind == WT_YNODE_MAP && !rc && i < tags->n; i++) {
        const struct wt_ynode *c = tags->child[i];
        static const char *const reserved[] = {"target", "engine", "model", "gpus",
                                               "kind",   "le",     NULL};
        bool clash = false;
        for (int k = 0; reserved[k]; k++)
            clash |= strcmp(c->key, reserved[k]) == 0;
        if (!name_ok(c->key, true) || clash)
            rc = wt_y_key_fail(g, tags, p, c->key,
                               "a tag is a label: [a-z_][a-z0-9_]*, not target, engine, model, "
                               "gpus, kind or le");
        else if (c->kind != WT_YNODE_SCALAR)
            rc = wt_y_key_fail(g, tags, p, c->key, "expected a value (precision: fp8)");
        else if (wt_labels_add(t->tags, sizeof t->tags, c->key, c->value) != 0)
            rc = wt_y_key_fail(g, tags, p, c->key, "the tags are too long");
    }
    return rc;
}

static int parse_gpus(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                      struct target *t)
{
    const struct wt_ynode *gpus = wt_y_get(m, "gpus");
    char p[256];
    if (!gpus)
        return 0;
    wt_y_path(p, sizeof p, path, "gpus");
    int rc = wt_y_seq(g, gpus, p);
    size_t len = 0;
    for (size_t i = 0; !rc && i < gpus->n; i++) {
        const struct wt_ynode *c = gpus->child[i];
        /* an index or a vendor's index: a node with both vendors numbers each from 0 */
        const char *vendor = "", *num = NULL;
        long v = c->kind == WT_YNODE_SCALAR && wt_gpu_vendor_index(c->value, &vendor, &num)
                     ? strtol(num, NULL, 10)
                     : -1;
        if (v < 0 || v > 1023) {
            char ip[300];
            rc = wt_y_fail(g, c, wt_y_index(ip, sizeof ip, p, i),
                           "expected a GPU index (0..1023) or a vendor's index (nvidia:0, amd:0)");
            break;
        }
        int w = snprintf(t->gpus + len, sizeof t->gpus - len, "%s%s%s%ld", len ? "," : "", vendor,
                         vendor[0] ? ":" : "", v);
        if (w < 0 || (size_t)w >= sizeof t->gpus - len)
            return wt_y_fail(g, gpus, p, "too many GPUs");
        len += (size_t)w;
    }
    return rc;
}

static int parse_target(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                        void *tv)
{
    struct target *t = tv;
    static const char *const keys[] = {"name",     "url",
                                       "engine",   "model",
                                       "tags",     "gpus",
                                       "ca_file",  "cert_file",
                                       "key_file", "bearer_token_file",
                                       "insecure", "timeout",
                                       "interval", "max_response_bytes",
                                       NULL};
    int64_t maxr = MAX_RESPONSE;
    int rc = wt_y_keys(g, m, path, keys);
    memset(t, 0, sizeof *t);
    t->timeout_ns = 2 * WT_NS_PER_S;
    if (!rc)
        rc = wt_y_string(g, m, path, "name", true, t->name, sizeof t->name);
    if (!rc && !name_ok(t->name, false))
        rc = wt_y_key_fail(g, m, path, "name",
                           "expected at most %d of A-Z a-z 0-9 _ . - (got \"%s\")",
                           WT_TARGET_NAME_LEN, t->name);
    if (!rc)
        rc = wt_y_string(g, m, path, "url", true, t->url, sizeof t->url);
    if (!rc && strncmp(t->url, "http://", 7) != 0 && strncmp(t->url, "https://", 8) != 0)
        rc = wt_y_key_fail(g, m, path, "url",
                           "expected http://HOST:PORT/metrics or https://... (got \"%s\")", t->url);
    if (!rc)
        rc = wt_y_enum(g, m, path, "engine", engine_names, &t->engine);
    if (!rc)
        rc = wt_y_string(g, m, path, "model", false, t->model, sizeof t->model);
    if (!rc)
        rc = parse_tags(g, m, path, t);
    if (!rc)
        rc = parse_gpus(g, m, path, t);
    if (!rc)
        rc = wt_y_string(g, m, path, "ca_file", false, t->ca_file, sizeof t->ca_file);
    if (!rc)
        rc = wt_y_string(g, m, path, "cert_file", false, t->cert_file, sizeof t->cert_file);
    if (!rc)
        rc = wt_y_string(g, m, path, "key_file", false, t->key_file, sizeof t->key_file);
    if (!rc && !t->cert_file[0] != !t->key_file[0])
        rc = wt_y_key_fail(g, m, path, t->cert_file[0] ? "key_file" : "cert_file",
                           "cert_file and key_file go together");
    if (!rc)
        rc = wt_y_string(g, m, path, "bearer_token_file", false, t->bearer_token_file,
                         sizeof t->bearer_token_file);
    if (!rc)
        rc = wt_y_bool(g, m, path, "insecure", &t->insecure);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "timeout", false, WT_Y_NET_TIMEOUT_MIN,
                              WT_Y_NET_TIMEOUT_MAX, WT_Y_WHY_NET_TIMEOUT, &t->timeout_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "interval", false, WT_Y_NET_POLL_MIN, WT_Y_NET_POLL_MAX,
                              WT_Y_WHY_NET_POLL, &t->interval_ns);
    if (!rc)
        rc = wt_y_int(g, m, path, "max_response_bytes", 1024, 256 << 20, &maxr);
    t->max_response = maxr;
    return rc;
}

static const struct wt_y_targets targets = {
    .section = SECTION,
    .size = sizeof(struct target),
    .name_at = offsetof(struct target, name),
    .interval_at = offsetof(struct target, interval_ns),
    .parse = parse_target,
    .drop = NULL,
};

int wt_inference_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    int rc = wt_y_targets_parse(&targets, file, node, -1, NULL, NULL, 0, err);
    return rc < 0 ? rc : 0;
}

/* ---- the collector ---- */

struct body {
    char *p;
    size_t len, cap, max;
    bool too_big;
};

struct inf {
    struct target t;
    CURL *curl;
    struct curl_slist *headers;
    char errbuf[CURL_ERROR_SIZE];
    char ctype[128];
    struct body body;
    struct scrape s;
    struct acc *prev; /* the last good scrape's values, to say what changed since */
    size_t nprev;
    bool have_prev;
    char up_labels[WT_LABELS_LEN];
    enum engine said; /* the engine last said in the log */
    /* the serving tree, found when no gpus are configured: looked for every FIND_EVERY */
    uint16_t port;
    bool loopback;
    int pids[WT_LISTENER_MAX_PIDS];
    size_t npids;
    int64_t found_mono; /* 0: never looked */
    int find_rc;        /* the last look's answer, said when it changes */
    /* the GPUs NVML or ROCm SMI list those processes on ("1,3", "amd:0"), said when they change */
    char gpus_found[96];
    bool gpus_said;
    struct wt_inf_energy energy; /* wattage_inference_energy_joules_total */
    struct wt_inf_value *values; /* a scrape's values, for it */
};

#define FIND_EVERY (60 * WT_NS_PER_S)

/* The URL's port (its scheme's default without one) and whether its host is this host's
 * loopback. */
static void url_port(const char *url, uint16_t *port, bool *loopback)
{
    bool https = strncmp(url, "https://", 8) == 0;
    const char *h = url + (https ? 8 : 7);
    const char *end = h + strcspn(h, "/?#");
    const char *colon = NULL;
    if (*h == '[') { /* [v6]:port */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        colon = rb && rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
    }
    long p = colon ? strtol(colon + 1, NULL, 10) : (https ? 443 : 80);
    *port = p > 0 && p < 65536 ? (uint16_t)p : 0;
    size_t hl = (size_t)((colon ? colon : end) - h);
    *loopback = (hl >= 4 && strncmp(h, "127.", 4) == 0) ||
                (hl == 9 && strncmp(h, "localhost", 9) == 0) ||
                (hl == 5 && strncmp(h, "[::1]", 5) == 0);
}

/* Looks for the serving tree again when it is time; says what it found when that changes. */
static void find_tree(struct inf *s)
{
    int64_t now = wt_now_mono_ns();
    if (s->t.gpus[0] || !s->port || (s->found_mono && now - s->found_mono < FIND_EVERY))
        return;
    s->found_mono = now;
    struct wt_err err = {{0}};
    int pids[WT_LISTENER_MAX_PIDS];
    size_t n = 0;
    int rc = wt_listener_find(s->port, s->loopback, pids, WT_LISTENER_MAX_PIDS, &n, &err);
    bool same = rc == s->find_rc && n == s->npids && !memcmp(pids, s->pids, n * sizeof *pids);
    s->npids = rc == 0 ? n : 0;
    if (rc == 0)
        memcpy(s->pids, pids, n * sizeof *pids);
    if (same)
        return;
    s->find_rc = rc;
    if (rc != 0) {
        wt_warn("inference", "%s: its processes are not found (%s): set its gpus", s->t.name,
                err.msg);
        return;
    }
    char list[256] = "";
    for (size_t i = 0, len = 0; i < n && len < sizeof list - 12; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", pids[i]);
    wt_info("inference", "%s: serving processes %s (port %u)", s->t.name, list, s->port);
}

static bool pid_in(const int *pids, size_t n, unsigned int pid)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned int)pids[i] == pid)
            return true;
    return false;
}

/* Whether a process of the serving tree is in one of list[0..n)'s GPU gpu. */
static bool tree_on(const struct inf *s, const struct wt_gpu_procs *list, size_t n,
                    unsigned int gpu)
{
    for (size_t i = 0; i < n; i++)
        for (unsigned int k = 0; list[i].gpu == gpu && k < list[i].npids; k++)
            if (pid_in(s->pids, s->npids, list[i].pids[k]))
                return true;
    return false;
}

/* Whether list[0..n) has GPU gpu. */
static bool has_gpu(const struct wt_gpu_procs *list, size_t n, unsigned int gpu)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].gpu == gpu)
            return true;
    return false;
}

/*
 * The GPUs on which NVML or ROCm SMI lists a process of the serving tree (the listener is
 * rarely the process on the GPU: vLLM's EngineCore, TGI's shards), from the NVML and AMD
 * collectors' latest lists; says them when they change. A GPU is named by its index ("1") where
 * no GPU of the other vendor has that index, else by its vendor's ("amd:1"). No process of the
 * tree on a GPU leaves none; no list (no NVML or AMD collector, or before their first poll)
 * leaves them as they were.
 */
static void find_gpus(struct inf *s)
{
    if (s->t.gpus[0])
        return;
    char found[sizeof s->gpus_found] = "";
    struct wt_gpu_procs *list[2] = {NULL, NULL};
    size_t n[2] = {0, 0}, len = 0;
    int64_t t = 0;
    bool have[2] = {false, false};
    for (int v = 0; s->npids && v < 2; v++) {
        if ((list[v] = calloc(WT_ATTRIB_MAX_DEVICES, sizeof *list[v])) == NULL)
            continue;
        have[v] = (v ? wt_rocm_processes : wt_nvml_processes)(list[v], WT_ATTRIB_MAX_DEVICES, &n[v],
                                                              &t) == 0;
    }
    /* NVIDIA's, then AMD's, ascending GPU index, each once */
    for (int v = 0; v < 2; v++) {
        for (unsigned int g = 0; have[v] && g < WT_ATTRIB_MAX_DEVICES; g++) {
            if (!tree_on(s, list[v], n[v], g))
                continue;
            bool both = have[!v] && has_gpu(list[!v], n[!v], g);
            int w = snprintf(found + len, sizeof found - len, "%s%s%s%u", len ? "," : "",
                             both ? wt_inf_gpu_vendors[v] : "", both ? ":" : "", g);
            if (w < 0 || (size_t)w >= sizeof found - len)
                break;
            len += (size_t)w;
        }
    }
    free(list[0]);
    free(list[1]);
    if (!have[0] && !have[1] && s->npids)
        return; /* no list yet (the collectors' first poll) or none at all: as it was */
    if (s->gpus_said && strcmp(found, s->gpus_found) == 0)
        return;
    if (!s->gpus_said && !found[0] && !s->npids)
        return; /* nothing to say before its processes are found */
    s->gpus_said = true;
    snprintf(s->gpus_found, sizeof s->gpus_found, "%s", found);
    if (found[0])
        wt_info("inference", "%s: serving GPUs %s (the GPUs' process lists have its processes)",
                s->t.name, found);
    else
        wt_warn("inference",
                "%s: no GPU lists any of its processes: no energy is counted for it (set its "
                "gpus)",
                s->t.name);
}

/* The target's GPUs: configured, else found from its processes. */
static const char *serving_gpus(const struct inf *s)
{
    return s->t.gpus[0] ? s->t.gpus : s->gpus_found;
}

/* The same series of two scrapes (the bound too when with_le). */
static bool same_key(const struct acc *a, const struct acc *b, bool with_le)
{
    return a->what == b->what && a->part == b->part && a->kind == b->kind &&
           a->fallback == b->fallback && strcmp(a->model, b->model) == 0 &&
           (!with_le || a->le == b->le || (isinf(a->le) && isinf(b->le)));
}

/* The value of the last scrape with a's series (and bound), NULL: none; i is a's index, where
 * the same body puts it. */
static const struct acc *prev_of(const struct inf *s, const struct acc *a, size_t i)
{
    if (i < s->nprev && same_key(&s->prev[i], a, true))
        return &s->prev[i];
    for (size_t k = 0; k < s->nprev; k++)
        if (same_key(&s->prev[k], a, true))
            return &s->prev[k];
    return NULL;
}

static bool has_model(const struct acc *v, size_t n, const char *model)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].model, model) == 0)
            return true;
    return false;
}

/* Whether v[i] is the first value of its model in v. */
static bool first_of_model(const struct acc *v, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (strcmp(v[k].model, v[i].model) == 0)
            return false;
    return true;
}

/* A bucket of the histogram a (any of its parts) belongs to. */
static bool bucket_of(const struct acc *x, const struct acc *a)
{
    return x->what == W_LATENCY && x->part == 0 && x->kind == a->kind &&
           x->fallback == a->fallback && strcmp(x->model, a->model) == 0;
}

/* The bucket bounds of a's histogram changed between the last scrape and this one. */
static bool bounds_changed(const struct inf *s, const struct acc *a)
{
    size_t now = 0, before = 0;
    for (size_t k = 0; k < s->nprev; k++)
        before += bucket_of(&s->prev[k], a);
    if (before == 0)
        return false; /* a family that came: no bounds before to change */
    for (size_t i = 0; i < s->s.n; i++) {
        const struct acc *x = &s->s.acc[i];
        if (bucket_of(x, a)) {
            now++;
            if (!prev_of(s, x, i))
                return true;
        }
    }
    return now != before;
}

/*
 * Says once, from the last good scrape to this one: a model that came or went, a model's
 * counters that dropped (the server restarted: the stored counter drops with it, and a window
 * across it counts the new value from 0, as PromQL's increase() counts a reset), latency
 * buckets whose bounds changed (each bound's series stays its own; a window across the change
 * adds up each bound's increase, as sum by (le) does). Then keeps this scrape for the next.
 */
static void say_changes(struct inf *s)
{
    const struct acc *v = s->s.acc;
    size_t n = s->s.n;
    for (size_t i = 0; s->have_prev && i < s->nprev; i++)
        if (first_of_model(s->prev, i) && !has_model(v, n, s->prev[i].model))
            wt_info("inference", "%s: model %s went: its series stop", s->t.name, s->prev[i].model);
    for (size_t i = 0; s->have_prev && i < n; i++) {
        if (!first_of_model(v, i))
            continue;
        if (!has_model(s->prev, s->nprev, v[i].model)) {
            wt_info("inference", "%s: model %s came", s->t.name, v[i].model);
            continue;
        }
        const struct acc *dropped = NULL, *was = NULL;
        char kinds[32] = "";
        for (size_t k = i; k < n; k++) {
            const struct acc *a = &v[k];
            if (strcmp(a->model, v[i].model) != 0)
                continue;
            bool counter = a->what == W_TOKENS || a->what == W_TOKENS_SUM ||
                           a->what == W_REQUESTS || (a->what == W_LATENCY && a->part == 2);
            const struct acc *p = counter && !dropped ? prev_of(s, a, k) : NULL;
            if (p && a->v < p->v)
                dropped = a, was = p;
            if (a->what == W_LATENCY && a->part == 2 && !strstr(kinds, a->kind) &&
                bounds_changed(s, a) && strlen(kinds) + strlen(a->kind) + 3 < sizeof kinds) {
                if (kinds[0])
                    strcat(kinds, ", ");
                strcat(kinds, a->kind);
            }
        }
        if (dropped)
            wt_info("inference",
                    "%s: model %s: counters dropped (%s from %.17g to %.17g): the server "
                    "restarted; counted from 0 as increase() counts a reset",
                    s->t.name, v[i].model,
                    dropped->what == W_REQUESTS  ? "requests"
                    : dropped->what == W_LATENCY ? "latency count"
                                                 : dropped->kind,
                    was->v, dropped->v);
        if (kinds[0])
            wt_info("inference",
                    "%s: model %s: the %s latency bucket bounds changed: each bound is its own "
                    "series; a window across the change adds up each bound's increase",
                    s->t.name, v[i].model, kinds);
    }
    memcpy(s->prev, v, n * sizeof *v);
    s->nprev = n;
    s->have_prev = true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct body *b = ctx;
    size_t n = size * nmemb;
    if (b->len + n > b->max) {
        b->too_big = true;
        return 0;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct inf *s = ctx;
    size_t n = size * nmemb;
    static const char key[] = "content-type:";
    if (n > sizeof key - 1 && strncasecmp(data, key, sizeof key - 1) == 0) {
        const char *v = data + sizeof key - 1;
        const char *end = data + n;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
            end--;
        size_t len = (size_t)(end - v) < sizeof s->ctype ? (size_t)(end - v) : sizeof s->ctype - 1;
        memcpy(s->ctype, v, len);
        s->ctype[len] = '\0';
    }
    return n;
}

static int inf_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct inf *s = state;
    s->body.len = 0;
    s->body.too_big = false;
    s->ctype[0] = s->errbuf[0] = '\0';
    CURLcode cc = curl_easy_perform(s->curl);
    if (cc != CURLE_OK) {
        if (s->body.too_big || cc == CURLE_FILESIZE_EXCEEDED)
            return wt_err_set(err, "%s: response larger than %lld bytes, refused", s->t.url,
                              (long long)s->t.max_response);
        wt_err_set(err, "%s: %s", s->t.url, s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
        return -EIO;
    }
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200)
        return wt_err_set(err, "%s: HTTP %ld", s->t.url, status);
    if (strncasecmp(s->ctype, "text/html", 9) == 0)
        return wt_err_set(err, "%s: answered a web page (%s), not metrics", s->t.url, s->ctype);
    struct acc *acc = s->s.acc;
    s->s = (struct scrape){.configured = (enum engine)s->t.engine,
                           .model = s->t.model[0] ? s->t.model : s->t.name,
                           .acc = acc};
    struct wt_err perr = {{0}};
    int rc = parse_into(&s->s, s->body.p ? s->body.p : "", s->body.len, s->ctype,
                        (size_t)s->t.max_response, &perr);
    if (rc)
        return wt_err_set(err, "%s: %s", s->t.url, perr.msg), rc == -ENOMEM ? rc : -EINVAL;
    enum engine e = answered(&s->s);
    if (e != s->said) {
        wt_info("inference", "%s: %s, %s", s->t.name, engine_names[e],
                s->t.engine == ENG_AUTO ? "told by its metric names" : "as configured");
        s->said = e;
    }
    say_changes(s);
    if ((rc = wt_batch_add(out, WT_M_INF_UP, s->up_labels, t_ns, 1)) != 0)
        return wt_err_set(err, "%s: out of memory", s->t.name), rc;
    /* one info series per model that came */
    for (size_t i = 0; i < s->s.n; i++) {
        bool first = true;
        for (size_t k = 0; k < i && first; k++)
            first = strcmp(s->s.acc[k].model, s->s.acc[i].model) != 0;
        if (!first)
            continue;
        char l[WT_LABELS_LEN];
        int lrc = wt_labels(l, sizeof l, "target", s->t.name, "engine", engine_names[e], "model",
                            s->s.acc[i].model, NULL);
        if (!lrc && serving_gpus(s)[0])
            lrc = wt_labels_add(l, sizeof l, "gpus", serving_gpus(s));
        if (!lrc && s->t.tags[0] && strlen(l) + 1 + strlen(s->t.tags) < sizeof l) {
            strcat(l, ",");
            strcat(l, s->t.tags);
        }
        if (!lrc && (rc = wt_batch_add(out, WT_M_INF_INFO, l, t_ns, 1)) == -ENOMEM)
            return wt_err_set(err, "%s: out of memory", s->t.name), rc;
    }
    if ((rc = emit(&s->s, s->t.name, t_ns, out)) != 0)
        return wt_err_set(err, "%s: out of memory", s->t.name), rc;
    find_tree(s);
    find_gpus(s);
    /* the energy counter of each model of this scrape */
    for (size_t i = 0; i < s->s.n; i++) {
        const struct acc *a = &s->s.acc[i];
        bool gen =
            (a->what == W_TOKENS || a->what == W_TOKENS_SUM) && strcmp(a->kind, "generated") == 0;
        s->values[i] = (struct wt_inf_value){.model = a->model, .generated = gen ? a->v : NAN};
    }
    struct wt_inf_energy *en = &s->energy;
    if (wt_inf_energy_account(en, s->t.name, serving_gpus(s), s->values, s->s.n)) {
        for (size_t i = 0; i < en->nem; i++) {
            bool came = false;
            for (size_t k = 0; k < s->s.n && !came; k++)
                came = strcmp(s->s.acc[k].model, en->em[i].model) == 0;
            char l[WT_LABELS_LEN];
            if (came &&
                wt_labels(l, sizeof l, "target", s->t.name, "model", en->em[i].model, NULL) == 0 &&
                (rc = wt_batch_add(out, WT_M_INF_ENERGY_J, l, t_ns, en->em[i].energy_j)) == -ENOMEM)
                return wt_err_set(err, "%s: out of memory", s->t.name), rc;
        }
    }
    for (size_t i = 0; i < s->npids; i++) {
        char l[WT_LABELS_LEN], pid[16];
        snprintf(pid, sizeof pid, "%d", s->pids[i]);
        if (wt_labels(l, sizeof l, "target", s->t.name, "pid", pid, NULL) == 0 &&
            (rc = wt_batch_add(out, WT_M_INF_PROCESS, l, t_ns, 1)) == -ENOMEM)
            return wt_err_set(err, "%s: out of memory", s->t.name), rc;
    }
    return 0;
}

static int inf_down(void *state, int64_t t_ns, struct wt_batch *out)
{
    const struct inf *s = state;
    return wt_batch_add(out, WT_M_INF_UP, s->up_labels, t_ns, 0);
}

static const struct wt_collector_config *inf_config(const struct wt_config *cfg)
{
    return &cfg->inference;
}

static size_t inf_targets(const struct wt_config *cfg, struct wt_target *out, size_t max)
{
    return wt_y_targets_names(&targets, wt_config_file(cfg), wt_config_section(cfg, SECTION),
                              "inference", out, max);
}

static void inf_close(void *state)
{
    struct inf *s = state;
    if (!s)
        return;
    if (s->curl)
        curl_easy_cleanup(s->curl);
    curl_slist_free_all(s->headers);
    free(s->body.p);
    free(s->s.acc);
    free(s->prev);
    free(s->values);
    wt_inf_energy_close(&s->energy);
    free(s);
}

static int inf_open_target(const struct wt_config *cfg, size_t i, void **state, struct wt_err *err)
{
    struct inf *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    *state = s;
    int rc = wt_y_target_at(&targets, wt_config_file(cfg), wt_config_section(cfg, SECTION), i,
                            &s->t, "inference", err);
    if (rc)
        return rc;
    struct target *t = &s->t;
    s->said = ENG_AUTO;
    url_port(t->url, &s->port, &s->loopback);
    s->body.max = (size_t)t->max_response;
    s->s.acc = malloc(MAX_ACC * sizeof *s->s.acc);
    s->prev = malloc(MAX_ACC * sizeof *s->prev);
    s->values = malloc(MAX_ACC * sizeof *s->values);
    if (!s->s.acc || !s->prev || !s->values)
        return -ENOMEM;
    if (wt_labels(s->up_labels, sizeof s->up_labels, "target", t->name, NULL) != 0)
        return wt_err_set(err, "%s: labels too long", t->name);
    rc = wt_curl_load("collectors.inference.targets", err);
    if (rc)
        return rc;
    s->curl = curl_easy_init();
    if (!s->curl)
        return wt_err_set(err, "cannot start libcurl");
    CURL *c = s->curl;
    long tmo = (long)(t->timeout_ns / WT_NS_PER_MS);
    /* OpenMetrics first, as Prometheus asks; the servers that speak only 0.0.4 answer that */
    s->headers = curl_slist_append(NULL, "Accept: application/openmetrics-text;version=1.0.0,"
                                         "text/plain;version=0.0.4;q=0.5,*/*;q=0.1");
    if (t->bearer_token_file[0]) {
        char tok[4096], h[4200];
        FILE *f = fopen(t->bearer_token_file, "r");
        if (!f || !fgets(tok, sizeof tok, f)) {
            int e = errno ? errno : EINVAL;
            if (f)
                fclose(f);
            wt_err_set(err, "%s: cannot read bearer_token_file %s", t->name, t->bearer_token_file);
            return -e;
        }
        fclose(f);
        tok[strcspn(tok, "\r\n")] = '\0';
        snprintf(h, sizeof h, "Authorization: Bearer %s", tok);
        s->headers = curl_slist_append(s->headers, h);
        explicit_bzero(tok, sizeof tok);
        explicit_bzero(h, sizeof h);
    }
    curl_easy_setopt(c, CURLOPT_URL, t->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, tmo);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* gzip when the server offers it */
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)t->max_response);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, s->errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, t->insecure ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, t->insecure ? 0L : 2L);
    if (t->ca_file[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, t->ca_file);
    if (t->cert_file[0]) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, t->cert_file);
        curl_easy_setopt(c, CURLOPT_SSLKEY, t->key_file);
    }
    bool https = strncmp(t->url, "https://", 8) == 0;
    if (t->insecure && https)
        wt_warn("inference", "%s: insecure: true: the TLS certificate of %s is NOT verified",
                t->name, t->url);
    if (t->bearer_token_file[0] && !https)
        wt_warn("inference", "%s: the bearer token is sent without TLS to %s", t->name, t->url);
    return 0;
}

const struct wt_collector_ops wt_inference_collector = {
    .name = "serving", /* the hub slot is "serving:<target>" (7 letters before the colon) */
    .config = inf_config,
    .poll = inf_poll,
    .close = inf_close,
    .targets = inf_targets,
    .open_target = inf_open_target,
    .down = inf_down,
};
