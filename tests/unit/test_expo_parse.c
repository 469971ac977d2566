/* SPDX-License-Identifier: MIT */
/*
 * The exposition parser: a vLLM V1 body (names and layout from the field notes), OpenMetrics with
 * exemplars, _created and # EOF, escaping, special values, the filter, limits, malformed and
 * truncated bodies with the line each error names, and wattage's own /metrics parsed back.
 */
#include <errno.h>
#include <stdarg.h>

#include "collect/expo_parse.h"
#include "collect/hist_quantile.h"
#include "core/reading.h"
#include "runner.h"
#include "serve/expo.h"

/* What the callbacks saw, one line per family and per sample. */
struct seen {
    char out[16384];
    size_t len;
    int families, samples;
    const char *only; /* keep families whose name starts with this, when set */
    struct wt_hist_bucket b[64];
    size_t nb;
    int stop_after;
};

static void put(struct seen *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct seen *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->out + s->len, sizeof s->out - s->len, fmt, ap);
    va_end(ap);
    WT_ASSERT(n >= 0 && (size_t)n < sizeof s->out - s->len);
    s->len += (size_t)n;
}

static bool on_family(void *ctx, const struct wt_expo_parse_family *f)
{
    struct seen *s = ctx;
    s->families++;
    put(s, "F %.*s %s help=[%s] unit=[%s]\n", (int)f->name_len, f->name,
        wt_expo_parse_type_name(f->type), f->help, f->unit);
    return !s->only ||
           (f->name_len >= strlen(s->only) && memcmp(f->name, s->only, strlen(s->only)) == 0);
}

static int on_sample(void *ctx, const struct wt_expo_parse_family *f,
                     const struct wt_expo_parse_sample *x)
{
    struct seen *s = ctx;
    s->samples++;
    put(s, "S %.*s|%.*s{", (int)f->name_len, f->name, (int)x->name_len, x->name);
    for (size_t i = 0; i < x->n_labels; i++)
        put(s, "%s%.*s=%.*s", i ? "," : "", (int)x->labels[i].name_len, x->labels[i].name,
            (int)x->labels[i].value_len, x->labels[i].value);
    put(s, "} %.17g", x->value);
    if (x->has_t)
        put(s, " t=%lld", (long long)x->t_ns);
    put(s, " sfx=%d\n", (int)x->suffix);
    if (x->suffix == WT_EXPO_PARSE_SFX_BUCKET && s->nb < 64) {
        s->b[s->nb].le = x->le;
        s->b[s->nb].count = x->value;
        s->nb++;
    }
    if (s->stop_after && s->samples >= s->stop_after)
        return -ECANCELED;
    return 0;
}

static int parse(const char *body, enum wt_expo_parse_fmt fmt, struct seen *s, struct wt_err *err)
{
    struct wt_expo_parse_opts o = {.fmt = fmt, .family = on_family, .sample = on_sample, .ctx = s};
    return wt_expo_parse(body, strlen(body), &o, err);
}

#define MODEL "model_name=\"meta-llama/Llama-3.1-8B-Instruct\""
#define E2E "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\""

/* vLLM V1 (prometheus_client single-process, text 0.0.4), as in the field notes, 11.1. */
static const char vllm_body[] =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\"," MODEL "} 4.0\n"
    "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{engine=\"0\"," MODEL "} 0.0712\n"
    "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{engine=\"0\"," MODEL "} 512000.0\n"
    "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens_created gauge\n"
    "vllm:prompt_tokens_created{engine=\"0\"," MODEL "} 1.7512896e+09\n"
    "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    "vllm:generation_tokens_total{engine=\"0\"," MODEL "} 96000.0\n"
    "# HELP vllm:request_success_total Count of successfully processed requests.\n"
    "# TYPE vllm:request_success_total counter\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\"," MODEL "} 150.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"length\"," MODEL "} 48.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\"," MODEL "} 2.0\n"
    "# HELP vllm:iteration_tokens_total Histogram of number of tokens per engine_step.\n"
    "# TYPE vllm:iteration_tokens_total histogram\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"1.0\"," MODEL "} 0.0\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"8.0\"," MODEL "} 21140.0\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"+Inf\"," MODEL "} 21404.0\n"
    "vllm:iteration_tokens_total_count{engine=\"0\"," MODEL "} 21404.0\n"
    "vllm:iteration_tokens_total_sum{engine=\"0\"," MODEL "} 608000.0\n"
    "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n"
    "# TYPE vllm:e2e_request_latency_seconds histogram\n" E2E "0.3\"," MODEL "} 0.0\n" E2E
    "0.5\"," MODEL "} 0.0\n" E2E "0.8\"," MODEL "} 1.0\n" E2E "1.0\"," MODEL "} 2.0\n" E2E
    "1.5\"," MODEL "} 5.0\n" E2E "2.0\"," MODEL "} 9.0\n" E2E "2.5\"," MODEL "} 14.0\n" E2E
    "5.0\"," MODEL "} 78.0\n" E2E "10.0\"," MODEL "} 171.0\n" E2E "15.0\"," MODEL "} 193.0\n" E2E
    "20.0\"," MODEL "} 198.0\n" E2E "30.0\"," MODEL "} 200.0\n" E2E "40.0\"," MODEL "} 200.0\n" E2E
    "50.0\"," MODEL "} 200.0\n" E2E "60.0\"," MODEL "} 200.0\n" E2E "120.0\"," MODEL "} 200.0\n" E2E
    "240.0\"," MODEL "} 200.0\n" E2E "480.0\"," MODEL "} 200.0\n" E2E "960.0\"," MODEL
    "} 200.0\n" E2E "1920.0\"," MODEL "} 200.0\n" E2E "7680.0\"," MODEL "} 200.0\n" E2E
    "+Inf\"," MODEL "} 200.0\n"
    "vllm:e2e_request_latency_seconds_count{engine=\"0\"," MODEL "} 200.0\n"
    "vllm:e2e_request_latency_seconds_sum{engine=\"0\"," MODEL "} 1234.5\n";

WT_TEST(vllm_text_body)
{
    struct seen s = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(parse(vllm_body, WT_EXPO_PARSE_TEXT, &s, &err), 0);
    WT_EQ_INT(s.families, 8);
    WT_EQ_INT(s.samples, 37);
    WT_CONTAINS(s.out, "F vllm:prompt_tokens_total counter help=[Number of prefill tokens "
                       "processed.] unit=[]\n");
    WT_CONTAINS(s.out, "S vllm:prompt_tokens_total|vllm:prompt_tokens_total{engine=0,model_name="
                       "meta-llama/Llama-3.1-8B-Instruct} 512000 sfx=1\n");
    WT_CONTAINS(s.out, "F vllm:prompt_tokens_created gauge");
    WT_CONTAINS(s.out, "S vllm:prompt_tokens_created|vllm:prompt_tokens_created{engine=0,model_"
                       "name=meta-llama/Llama-3.1-8B-Instruct} 1751289600 sfx=0\n");
    /* A histogram whose name ends in _total: its samples are its, not a counter's. */
    WT_CONTAINS(s.out, "F vllm:iteration_tokens_total histogram");
    WT_CONTAINS(s.out, "S vllm:iteration_tokens_total|vllm:iteration_tokens_total_sum{engine=0,"
                       "model_name=meta-llama/Llama-3.1-8B-Instruct} 608000 sfx=5\n");
    WT_CONTAINS(s.out, "S vllm:iteration_tokens_total|vllm:iteration_tokens_total_bucket{engine=0,"
                       "le=+Inf,model_name=meta-llama/Llama-3.1-8B-Instruct} 21404 sfx=3\n");
}

WT_TEST(vllm_filter_and_percentiles)
{
    struct seen s = {.only = "vllm:e2e_request_latency_seconds"};
    struct wt_err err = {{0}};
    WT_EQ_INT(parse(vllm_body, WT_EXPO_PARSE_TEXT, &s, &err), 0);
    WT_EQ_INT(s.families, 8); /* every family is offered */
    WT_EQ_INT(s.samples, 24); /* 22 buckets, _count and _sum of the one kept */
    WT_EQ_INT(s.nb, 22);
    WT_ASSERT(isinf(s.b[21].le));
    /* The field notes' p50: 5 + (100 - 78) / 93 * 5. */
    struct wt_hist_bucket b[64];
    memcpy(b, s.b, sizeof b);
    WT_NEAR(wt_hist_quantile(0.5, b, s.nb), 5 + 22.0 / 93 * 5, 1e-12);
    memcpy(b, s.b, sizeof b);
    WT_NEAR(wt_hist_quantile(0.95, b, s.nb), 10 + 19.0 / 22 * 5, 1e-12);
    memcpy(b, s.b, sizeof b);
    WT_NEAR(wt_hist_quantile(0.99, b, s.nb), 20, 1e-12);
}

/* SGLang (multiprocess): _sum before the buckets, a pid label on gauges, 0 and 1e+06 bounds. */
WT_TEST(sglang_multiprocess_order)
{
    const char *q = "model_name=\"Qwen/Qwen2.5-7B-Instruct\"";
    char body[2048];
    snprintf(body, sizeof body,
             "# HELP sglang:time_to_first_token_seconds Histogram of time to first token.\n"
             "# TYPE sglang:time_to_first_token_seconds histogram\n"
             "sglang:time_to_first_token_seconds_sum{engine_type=\"unified\",%s} 19.7\n"
             "sglang:time_to_first_token_seconds_bucket{engine_type=\"unified\",le=\"0.1\",%s} "
             "57.0\n"
             "sglang:time_to_first_token_seconds_bucket{engine_type=\"unified\",le=\"1e+06\",%s} "
             "121.0\n"
             "sglang:time_to_first_token_seconds_bucket{engine_type=\"unified\",le=\"+Inf\",%s} "
             "123.0\n"
             "sglang:time_to_first_token_seconds_count{engine_type=\"unified\",%s} 123.0\n"
             "# HELP sglang:num_retracted_reqs The number of retracted requests.\n"
             "# TYPE sglang:num_retracted_reqs gauge\n"
             "sglang:num_retracted_reqs{%s,pid=\"4242\"} 0.0\n"
             "sglang:num_retracted_reqs{%s,pid=\"4243\"} 1.0\n",
             q, q, q, q, q, q, q);
    struct seen s = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(parse(body, WT_EXPO_PARSE_TEXT, &s, &err), 0);
    WT_EQ_INT(s.families, 2);
    WT_EQ_INT(s.samples, 7);
    WT_EQ_INT(s.nb, 3);
    WT_NEAR(s.b[1].le, 1e6, 0);
    WT_ASSERT(isinf(s.b[2].le));
    WT_CONTAINS(s.out, "|sglang:time_to_first_token_seconds_sum{engine_type=unified,model_name="
                       "Qwen/Qwen2.5-7B-Instruct} 19.699999999999999 sfx=5\n");
    WT_CONTAINS(s.out, "S sglang:num_retracted_reqs|sglang:num_retracted_reqs{model_name=Qwen/"
                       "Qwen2.5-7B-Instruct,pid=4243} 1 sfx=0\n");
}

WT_TEST(bare_counters_untyped_and_comments)
{
    /* TGI / Triton: counters without _total; a sample with no TYPE; blank lines; comments. */
    const char *body = "# HELP tgi_request_count Requests\n"
                       "# TYPE tgi_request_count counter\n"
                       "tgi_request_count 12\n"
                       "\n"
                       "# a comment that is not metadata\n"
                       "  # TYPE nv_gpu_power_usage gauge\n"
                       "nv_gpu_power_usage{gpu_uuid=\"GPU-1\"}\t 301.5  \n"
                       "some_untyped_thing{a=\"1\",} 3 1700000000123\n"
                       "# TYPE om_style counter\n"
                       "om_style_total 7\n"
                       "om_style_created 1.7e+09\n";
    struct seen s = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(parse(body, WT_EXPO_PARSE_TEXT, &s, &err), 0);
    WT_CONTAINS(s.out, "S tgi_request_count|tgi_request_count{} 12 sfx=0\n");
    WT_CONTAINS(s.out, "S nv_gpu_power_usage|nv_gpu_power_usage{gpu_uuid=GPU-1} 301.5 sfx=0\n");
    WT_CONTAINS(s.out, "F some_untyped_thing untyped");
    WT_CONTAINS(s.out, "{a=1} 3 t=1700000000123000000 sfx=0\n");
    /* A counter's TYPE without _total, as OpenMetrics names it, in a 0.0.4 body. */
    WT_CONTAINS(s.out, "S om_style|om_style_total{} 7 sfx=1\n");
    WT_CONTAINS(s.out, "S om_style|om_style_created{} 1700000000 sfx=2\n");
}

WT_TEST(openmetrics_exemplars_created_eof)
{
    const char *body =
        "# TYPE vllm:generation_tokens counter\n"
        "# HELP vllm:generation_tokens Number of generation tokens \\\"processed\\\".\n"
        "vllm:generation_tokens_total{model_name=\"m\"} 96000.0 # {trace_id=\"abc\"} 1.0 "
        "1751289600.5\n"
        "vllm:generation_tokens_created{model_name=\"m\"} 1.7512896e+09\n"
        "# TYPE http_request_duration_seconds histogram\n"
        "# UNIT http_request_duration_seconds seconds\n"
        "http_request_duration_seconds_bucket{le=\"0.1\"} 3 # {trace_id=\"x\"} 0.05\n"
        "http_request_duration_seconds_bucket{le=\"+Inf\"} 4\n"
        "http_request_duration_seconds_count 4\n"
        "http_request_duration_seconds_sum 0.8\n"
        "http_request_duration_seconds_created 1.5e+09\n"
        "# TYPE queue gaugehistogram\n"
        "queue_bucket{le=\"1\"} 1\n"
        "queue_bucket{le=\"+Inf\"} 2\n"
        "queue_gcount 2\n"
        "queue_gsum 1.5\n"
        "# TYPE build info\n"
        "build_info{version=\"1\"} 1\n"
        "# TYPE rpc summary\n"
        "rpc{quantile=\"0.5\"} NaN\n"
        "rpc_count 0 1700000000.25\n"
        "# EOF\n";
    struct seen s = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(parse(body, WT_EXPO_PARSE_OPENMETRICS, &s, &err), 0);
    WT_EQ_INT(s.families, 5);
    WT_CONTAINS(s.out, "F vllm:generation_tokens counter help=[Number of generation tokens "
                       "\"processed\".]");
    WT_CONTAINS(s.out, "S vllm:generation_tokens|vllm:generation_tokens_total{model_name=m} 96000 "
                       "sfx=1\n");
    WT_CONTAINS(s.out, "S vllm:generation_tokens|vllm:generation_tokens_created{model_name=m} "
                       "1751289600 sfx=2\n");
    WT_CONTAINS(s.out, "F http_request_duration_seconds histogram help=[] unit=[seconds]\n");
    WT_CONTAINS(s.out, "http_request_duration_seconds_created{} 1500000000 sfx=2\n");
    WT_CONTAINS(s.out, "S queue|queue_gcount{} 2 sfx=6\n");
    WT_CONTAINS(s.out, "S build|build_info{version=1} 1 sfx=8\n");
    WT_CONTAINS(s.out, "S rpc|rpc{quantile=0.5} nan sfx=0\n");
    WT_CONTAINS(s.out, "S rpc|rpc_count{} 0 t=1700000000250000000 sfx=4\n");
    /* Without the final newline too. */
    char cut[2048];
    snprintf(cut, sizeof cut, "%.*s", (int)strlen(body) - 1, body);
    struct seen s2 = {0};
    WT_EQ_INT(parse(cut, WT_EXPO_PARSE_OPENMETRICS, &s2, &err), 0);
    WT_EQ_INT(s2.samples, s.samples);
}

WT_TEST(escapes_and_special_values)
{
    const char *body =
        "# HELP m A help with a \\\\ backslash\\nand a newline; \\\" stays in 0.0.4\n"
        "# TYPE m gauge\n"
        "m{path=\"C:\\\\models\\\\x\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\",odd=\"\\t\",u=\"Ä€\"} "
        "+Inf\n"
        "m{path=\"2\"} -Inf\n"
        "m{path=\"3\"} NaN\n"
        "m{path=\"4\"} -0.5e-3 -1000\n";
    struct seen s = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(parse(body, WT_EXPO_PARSE_TEXT, &s, &err), 0);
    WT_CONTAINS(s.out, "help=[A help with a \\ backslash\nand a newline; \\\" stays in 0.0.4]");
    WT_CONTAINS(s.out, "{path=C:\\models\\x,q=say \"hi\",nl=a\nb,odd=\\t,u=Ä€} inf sfx=0\n");
    WT_CONTAINS(s.out, "{path=2} -inf");
    WT_CONTAINS(s.out, "{path=3} nan");
    WT_CONTAINS(s.out, "{path=4} -0.00050000000000000001 t=-1000000000 sfx=0\n");
}

WT_TEST(reads_only_len_bytes)
{
    /* A body that is not NUL-terminated where it ends: the parser must stop at len. */
    const char buf[] = "foo 12\nbar 3\n";
    struct seen s = {0};
    struct wt_err err = {{0}};
    struct wt_expo_parse_opts o = {.family = on_family, .sample = on_sample, .ctx = &s};
    char *exact = malloc(7);
    WT_ASSERT(exact);
    memcpy(exact, buf, 7);
    WT_EQ_INT(wt_expo_parse(exact, 7, &o, &err), 0);
    WT_EQ_INT(s.samples, 1);
    WT_CONTAINS(s.out, "S foo|foo{} 12 sfx=0\n");
    /* Cut inside the value: an error, never the value 1. */
    WT_EQ_INT(wt_expo_parse(exact, 5, &o, &err), -EINVAL);
    WT_EQ_STR(err.msg, "line 1: no newline at the end: the body is cut short");
    free(exact);
    /* An empty text body is no family, no error. */
    WT_EQ_INT(wt_expo_parse(NULL, 0, &o, &err), 0);
}

struct bad {
    enum wt_expo_parse_fmt fmt;
    const char *body;
    const char *msg;
};

WT_TEST(malformed_bodies_name_their_line)
{
    const enum wt_expo_parse_fmt T = WT_EXPO_PARSE_TEXT, O = WT_EXPO_PARSE_OPENMETRICS;
    static const struct bad cases[] = {
        {T, "a 1\nb 2\nfoo{a=\"b} 1\n", "line 3: label value: unterminated string"},
        {T, "foo{a=\"b\n", "line 1: label value: unterminated string"},
        {T, "a 1\nb 2", "line 2: no newline at the end"},
        {T, "# HELP a x", "line 1: no newline at the end"},
        {T, "foo{a=\"b\\\"\n", "line 1: label value: unterminated string"},
        {T, "foo{a=\"b\"\n", "line 1: labels: expected ',' or '}'"},
        {T, "foo{a=\"b\"} 1\nfoo{a=\"b\"\n", "line 2: labels: expected ',' or '}'"},
        {T, "foo{a=\"b\" 1\n", "line 1: labels: expected ',' or '}'"},
        {T, "foo{1a=\"b\"} 1\n", "line 1: labels: expected a label name"},
        {T, "foo{a=b} 1\n", "line 1: label a: expected '\"'"},
        {T, "foo{a=\"1\",a=\"2\"} 1\n", "line 1: label a: given twice"},
        {T, "foo{a=\"\xff\"} 1\n", "line 1: label a: value is not valid UTF-8"},
        {T, "foo{a=\"\xc0\xaf\"} 1\n", "line 1: label a: value is not valid UTF-8"},
        {T, "foo{a=\"\\\xa5\"} 1\n", "line 1: label a: value is not valid UTF-8"},
        {T, "foo\n", "line 1: foo: expected a space and a value"},
        {T, "foo \n", "line 1: foo: value is not a number"},
        {T, "foo 1x\n", "line 1: foo: value is not a number"},
        {T, "foo 0x10\n", "line 1: foo: value is not a number"},
        {T, "foo 1 1.5\n", "line 1: foo: timestamp is not an integer of milliseconds"},
        {T, "foo 1 99999999999999999\n", "line 1: foo: timestamp out of range"},
        {T, "foo 1 2 3\n", "line 1: foo: unexpected text after the value"},
        {T, "9foo 1\n", "line 1: expected a metric name"},
        {T, "# TYPE foo gauge\n# TYPE foo gauge\n", "line 2: TYPE foo: a second TYPE line"},
        {T, "# TYPE foo bogus\n", "line 1: TYPE foo: unknown type \"bogus\""},
        {T, "# TYPE foo gaugehistogram\n", "line 1: TYPE foo: unknown type"},
        {T, "# TYPE foo\n", "line 1: TYPE foo: expected a space after the name"},
        {T, "# HELP\n", "line 1: HELP: expected a metric name"},
        {T, "foo 1\n# TYPE foo gauge\n", "line 2: TYPE foo: comes after the family's samples"},
        {T, "# TYPE h histogram\nh 1\n", "line 2: h: a histogram needs a suffix"},
        {T, "foo 1 # {a=\"b\"}\n", "line 1: exemplar: expected a value after the labels"},
        {O, "foo 1\n", "line 2: no # EOF at the end"},
        {O, "", "line 1: no # EOF at the end"},
        {O, "# EOF\nfoo 1\n", "line 2: text after # EOF"},
        {O, "# EOF\n\n", "line 2: text after # EOF"},
        {O, "# a comment\n# EOF\n", "line 1: comment: OpenMetrics allows only"},
        {O, "foo 1\n\n# EOF\n", "line 2: an empty line"},
        {O, "# TYPE c counter\nc 1\n# EOF\n", "line 2: c: a counter's samples end in _total"},
        {O, "# TYPE h histogram\nh_bucket 1\n# EOF\n", "line 2: h_bucket: a bucket needs an le"},
        {O, "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n# EOF\n",
         "line 2: h_bucket: a bucket needs"},
        {O, "# TYPE s summary\ns 1\n# EOF\n", "line 2: s: a summary needs a quantile label"},
        {O, "foo  1\n# EOF\n", "line 1: foo: value is not a number"},
        {O, "foo\t1\n# EOF\n", "line 1: foo: expected a space and a value"},
        {O, "foo 1 \n# EOF\n", "line 1: foo: a space at the end of the line"},
        {O, "foo{a=\"1\",} 1\n# EOF\n", "line 1: labels: a ',' before '}'"},
        {O, "foo{a = \"1\"} 1\n# EOF\n", "line 1: label a: expected '='"},
        {O, "foo 1 12a\n# EOF\n", "line 1: foo: timestamp is not a number of seconds"},
        {O, "a 1\nb 1\na 2\n# EOF\n", "line 3: a: the family's samples are not together"},
        {O, "# TYPE a_seconds gauge\n# UNIT a_seconds bytes\n# EOF\n",
         "line 2: UNIT a_seconds: the name does not end in _bytes"},
        {O, "# HELP foo\n# EOF\n", "line 1: HELP foo: expected a space after the name"},
        {O, "foo_total 1 # {a=\"1\"}1\n# EOF\n", "line 1: exemplar: expected a value"},
        {O, "foo_total 1 #{a=\"1\"} 1\n# EOF\n", "line 1: exemplar: expected '{' after '#'"},
        {O, "foo_total 1 # {a=\"1\"} x\n# EOF\n", "line 1: exemplar: value is not a number"},
        {O, "foo_total 1 # {a=\"1\"} 1 2 3\n# EOF\n", "line 1: exemplar: unexpected text"},
        {O,
         "foo_total 1 # {trace_id=\"0123456789012345678901234567890123456789012345678901234567890"
         "123456789012345678901234567890123456789012345678901234567890\"} 1\n# EOF\n",
         "line 1: exemplar: labels of 129 characters, more than 128"},
        {O, "# TYPE x untyped\n# EOF\n", "line 1: TYPE x: unknown type \"untyped\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct seen s = {0};
        struct wt_err err = {{0}};
        int rc = parse(cases[i].body, cases[i].fmt, &s, &err);
        if (rc != -EINVAL || !strstr(err.msg, cases[i].msg))
            wt_test_fail(__FILE__, __LINE__, "case %zu (%s): rc %d, \"%s\", want \"%s\"", i,
                         cases[i].body, rc, err.msg, cases[i].msg);
    }
}

WT_TEST(truncated_openmetrics_always_fails)
{
    /* Every cut of an OpenMetrics body is an error, save the one of the last newline. */
    const char *body = "# TYPE a counter\n"
                       "# HELP a Some help.\n"
                       "a_total{x=\"1\"} 1.5 # {t=\"y\"} 1 1700000000\n"
                       "a_created{x=\"1\"} 1.7e+09\n"
                       "# EOF\n";
    size_t n = strlen(body);
    for (size_t cut = 0; cut < n - 1; cut++) {
        struct seen s = {0};
        struct wt_err err = {{0}};
        struct wt_expo_parse_opts o = {
            .fmt = WT_EXPO_PARSE_OPENMETRICS, .family = on_family, .sample = on_sample, .ctx = &s};
        char *b = malloc(cut ? cut : 1);
        WT_ASSERT(b);
        memcpy(b, body, cut);
        int rc = wt_expo_parse(b, cut, &o, &err);
        free(b);
        if (rc != -EINVAL || strncmp(err.msg, "line ", 5) != 0)
            wt_test_fail(__FILE__, __LINE__, "cut at %zu: rc %d \"%s\"", cut, rc, err.msg);
    }
    /* And every cut of the vLLM text body parses or names a line, never reads past the cut. */
    n = strlen(vllm_body);
    int ok = 0;
    for (size_t cut = 0; cut < n; cut += 7) {
        struct seen s = {0};
        struct wt_err err = {{0}};
        struct wt_expo_parse_opts o = {.sample = on_sample, .ctx = &s};
        char *b = malloc(cut ? cut : 1);
        WT_ASSERT(b);
        memcpy(b, vllm_body, cut);
        int rc = wt_expo_parse(b, cut, &o, &err);
        free(b);
        if (rc == 0)
            ok++;
        else if (rc != -EINVAL || strncmp(err.msg, "line ", 5) != 0)
            wt_test_fail(__FILE__, __LINE__, "cut at %zu: rc %d \"%s\"", cut, rc, err.msg);
    }
    WT_ASSERT(ok > 0);
}

WT_TEST(limits)
{
    struct seen s = {0};
    struct wt_err err = {{0}};
    const char *body = "a 1\nb{x=\"1\",y=\"2\",z=\"3\"} 2\nc 3\n";
    struct wt_expo_parse_opts o = {.sample = on_sample, .ctx = &s, .max_series = 2};
    WT_EQ_INT(wt_expo_parse(body, strlen(body), &o, &err), -EINVAL);
    WT_EQ_STR(err.msg, "line 3: more than 2 series");
    o = (struct wt_expo_parse_opts){.sample = on_sample, .ctx = &s, .max_labels = 2};
    WT_EQ_INT(wt_expo_parse(body, strlen(body), &o, &err), -EINVAL);
    WT_EQ_STR(err.msg, "line 2: more than 2 labels");
    o = (struct wt_expo_parse_opts){.sample = on_sample, .ctx = &s, .max_families = 2};
    WT_EQ_INT(wt_expo_parse(body, strlen(body), &o, &err), -EINVAL);
    WT_EQ_STR(err.msg, "line 3: more than 2 metric families");
    o = (struct wt_expo_parse_opts){.sample = on_sample, .ctx = &s, .max_body = 10};
    WT_EQ_INT(wt_expo_parse(body, strlen(body), &o, &err), -EINVAL);
    WT_EQ_STR(err.msg, "body: 31 bytes, more than the limit of 10");
}

WT_TEST(caller_stops_the_parse)
{
    struct seen s = {.stop_after = 2};
    struct wt_err err = {{0}};
    WT_EQ_INT(parse(vllm_body, WT_EXPO_PARSE_TEXT, &s, &err), -ECANCELED);
    WT_EQ_INT(s.samples, 2);
    WT_EQ_STR(err.msg, "line 6: stopped by the caller");
}

WT_TEST(content_type)
{
    WT_EQ_INT(wt_expo_parse_fmt_of(NULL), WT_EXPO_PARSE_TEXT);
    WT_EQ_INT(wt_expo_parse_fmt_of("text/plain; version=0.0.4; charset=utf-8"), WT_EXPO_PARSE_TEXT);
    WT_EQ_INT(wt_expo_parse_fmt_of("application/openmetrics-text; version=1.0.0; charset=utf-8"),
              WT_EXPO_PARSE_OPENMETRICS);
    WT_EQ_INT(wt_expo_parse_fmt_of("Application/OpenMetrics-Text"), WT_EXPO_PARSE_OPENMETRICS);
    WT_EQ_INT(wt_expo_parse_fmt_of("application/openmetrics-textx"), WT_EXPO_PARSE_TEXT);
}

/* wattage's own /metrics, both formats, parses back to the values it was made of. */
WT_TEST(round_trip_of_wattage_metrics)
{
    struct wt_batch b = {0};
    char g0[WT_LABELS_LEN], g1[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(g0, sizeof g0, "gpu", "0", "model", "NVIDIA \"H200\" \\ x", NULL), 0);
    WT_EQ_INT(wt_labels(g1, sizeof g1, "gpu", "1", "model", "NVIDIA H200", NULL), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_ENERGY_J, g0, 1000, 1000.5), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, g0, 1000, 300.125), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_ENERGY_J, g1, 1000, 2e9 + 0.25), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, g1, 1000, 250.25), 0);
    const enum wt_expo_format fmts[] = {WT_EXPO_TEXT, WT_EXPO_OPENMETRICS};
    for (size_t i = 0; i < 2; i++) {
        size_t len = 0;
        char *body = wt_expo_render(&b, fmts[i], "1.2.3", &len);
        WT_ASSERT(body);
        struct seen s = {0};
        struct wt_err err = {{0}};
        struct wt_expo_parse_opts o = {.fmt = wt_expo_parse_fmt_of(wt_expo_content_type(fmts[i])),
                                       .family = on_family,
                                       .sample = on_sample,
                                       .ctx = &s};
        int rc = wt_expo_parse(body, len, &o, &err);
        if (rc)
            wt_test_fail(__FILE__, __LINE__, "format %zu: %s\n%s", i, err.msg, body);
        free(body);
        WT_CONTAINS(s.out, "F wattage_gpu_power_watts gauge");
        WT_CONTAINS(s.out, "|wattage_gpu_power_watts{gpu=0,model=NVIDIA \"H200\" \\ x} 300.125 ");
        WT_CONTAINS(s.out, "|wattage_gpu_power_watts{gpu=1,model=NVIDIA H200} 250.25 sfx=0\n");
        WT_CONTAINS(s.out, "|wattage_gpu_energy_joules_total{gpu=0,model=NVIDIA \"H200\" \\ x} "
                           "1000.5 sfx=1\n");
        WT_CONTAINS(s.out, "|wattage_gpu_energy_joules_total{gpu=1,model=NVIDIA H200} "
                           "2000000000.25 sfx=1\n");
        WT_CONTAINS(s.out, "|wattage_build_info{version=1.2.3} 1 ");
    }
    wt_batch_free(&b);
}
