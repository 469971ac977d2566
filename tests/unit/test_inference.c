/* SPDX-License-Identifier: MIT */
/*
 * Inference servers' expositions mapped to wattage's series (collect/inference.h): the names,
 * types, labels and suffixes of each engine as the field notes give them; sums over the labels
 * that are not the model; the old and new name of a latency counted once; a family of the same
 * name and another type ignored; an engine named in the configuration keeping to its names;
 * malformed bodies publishing nothing.
 */
#include <errno.h>
#include <math.h>

#include "collect/inference.h"
#include "runner.h"

#define T 1796000000000000000LL

static double val(const struct wt_batch *b, int metric, const char *labels)
{
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric == metric && strcmp(b->r[i].labels, labels) == 0)
            return b->r[i].value;
    return NAN;
}

static size_t count(const struct wt_batch *b, int metric)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->r[i].metric == metric;
    return n;
}

static int map(const char *engine, const char *model, const char *body, const char *ctype,
               struct wt_batch *b, struct wt_err *err)
{
    return wt_inference_map("t", engine, model, body, strlen(body), ctype, T, b, err);
}

#define M "meta-llama/Llama-3.1-8B-Instruct"

/* vLLM V1: two data-parallel engines, prometheus_client's layout, _created gauges, the 0.11
 * duplicate of the inter-token latency under its old name */
static const char vllm[] =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"" M "\"} 4.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"" M "\"} 3.0\n"
    "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"" M "\"} 512000.0\n"
    "vllm:prompt_tokens_total{engine=\"1\",model_name=\"" M "\"} 1000.0\n"
    "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n"
    "# TYPE vllm:prompt_tokens_created gauge\n"
    "vllm:prompt_tokens_created{engine=\"0\",model_name=\"" M "\"} 1.7512896e+09\n"
    "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"" M "\"} 96000.0\n"
    "# HELP vllm:request_success_total Count of successfully processed requests.\n"
    "# TYPE vllm:request_success_total counter\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"" M "\"} 150.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"" M
    "\"} 48.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"" M "\"} 2.0\n"
    "# HELP vllm:iteration_tokens_total Histogram of number of tokens per engine_step.\n"
    "# TYPE vllm:iteration_tokens_total histogram\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"1.0\",model_name=\"" M "\"} 5.0\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"+Inf\",model_name=\"" M "\"} 9.0\n"
    "vllm:iteration_tokens_total_count{engine=\"0\",model_name=\"" M "\"} 9.0\n"
    "vllm:iteration_tokens_total_sum{engine=\"0\",model_name=\"" M "\"} 608000.0\n"
    "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.\n"
    "# TYPE vllm:e2e_request_latency_seconds histogram\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"2.5\",model_name=\"" M "\"} 14.0\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"5.0\",model_name=\"" M "\"} 78.0\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"" M "\"} 200.0\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"1\",le=\"2.5\",model_name=\"" M "\"} 1.0\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"1\",le=\"5.0\",model_name=\"" M "\"} 2.0\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"" M "\"} 3.0\n"
    "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"" M "\"} 200.0\n"
    "vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"" M "\"} 1234.5\n"
    "# HELP vllm:time_per_output_token_seconds Histogram of time per output token in seconds.\n"
    "# TYPE vllm:time_per_output_token_seconds histogram\n"
    "vllm:time_per_output_token_seconds_bucket{engine=\"0\",le=\"0.01\",model_name=\"" M
    "\"} 999.0\n"
    "vllm:time_per_output_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"" M
    "\"} 999.0\n"
    "vllm:time_per_output_token_seconds_count{engine=\"0\",model_name=\"" M "\"} 999.0\n"
    "vllm:time_per_output_token_seconds_sum{engine=\"0\",model_name=\"" M "\"} 9.0\n"
    "# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.\n"
    "# TYPE vllm:inter_token_latency_seconds histogram\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.01\",model_name=\"" M
    "\"} 95000.0\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"" M
    "\"} 95796.0\n"
    "vllm:inter_token_latency_seconds_count{engine=\"0\",model_name=\"" M "\"} 95796.0\n"
    "vllm:inter_token_latency_seconds_sum{engine=\"0\",model_name=\"" M "\"} 1178.29\n";

WT_TEST(vllm_v1_tokens_requests_and_latencies_summed_over_engines)
{
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(map("auto", NULL, vllm, "text/plain; version=0.0.4; charset=utf-8", &b, &err), 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"" M "\",kind=\"prompt\""), 513000, 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"" M "\",kind=\"generated\""), 96000, 0);
    /* every finished_reason is a finished request */
    WT_NEAR(val(&b, WT_M_INF_REQUESTS, "target=\"t\",model=\"" M "\""), 200, 0);
    WT_NEAR(val(&b, WT_M_INF_RUNNING, "target=\"t\",model=\"" M "\""), 7, 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_BUCKET, "target=\"t\",model=\"" M "\",kind=\"e2e\",le=\"2.5\""),
            15, 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_BUCKET, "target=\"t\",model=\"" M "\",kind=\"e2e\",le=\"5\""), 80,
            0);
    WT_NEAR(val(&b, WT_M_INF_LAT_BUCKET, "target=\"t\",model=\"" M "\",kind=\"e2e\",le=\"+Inf\""),
            203, 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_SUM, "target=\"t\",model=\"" M "\",kind=\"e2e\""), 1234.5, 0);
    /* the inter-token latency once, from its new name; the old name's 999 is not added */
    WT_NEAR(val(&b, WT_M_INF_LAT_COUNT, "target=\"t\",model=\"" M "\",kind=\"itl\""), 95796, 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_BUCKET, "target=\"t\",model=\"" M "\",kind=\"itl\",le=\"0.01\""),
            95000, 0);
    /* vllm:iteration_tokens_total is a histogram, not a token counter; _created is no token */
    WT_EQ_INT((int)count(&b, WT_M_INF_TOKENS), 2);
    WT_EQ_INT((int)count(&b, WT_M_INF_LAT_BUCKET), 3 + 2);
    wt_batch_free(&b);
}

WT_TEST(vllm_v0_time_per_output_token_is_the_inter_token_latency)
{
    static const char v0[] =
        "# TYPE vllm:time_per_output_token_seconds histogram\n"
        "vllm:time_per_output_token_seconds_bucket{le=\"0.01\",model_name=\"m\"} 7.0\n"
        "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 9.0\n"
        "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.5\n"
        "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 9.0\n";
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(map("auto", NULL, v0, NULL, &b, &err), 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_COUNT, "target=\"t\",model=\"m\",kind=\"itl\""), 9, 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_BUCKET, "target=\"t\",model=\"m\",kind=\"itl\",le=\"0.01\""), 7,
            0);
    wt_batch_free(&b);
}

WT_TEST(openmetrics_counters_without_total_exemplars_and_eof)
{
    static const char om[] =
        "# TYPE vllm:generation_tokens counter\n"
        "# HELP vllm:generation_tokens Number of generation tokens processed.\n"
        "vllm:generation_tokens_total{engine=\"0\",model_name=\"dir\\\\sub \\\"q\\\"\\nx\"} 42.0\n"
        "vllm:generation_tokens_created{engine=\"0\",model_name=\"dir\\\\sub \\\"q\\\"\\nx\"} "
        "1.7e+09\n"
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        "vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"a\"} 1.0\n"
        "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"a\"} 2.0 # "
        "{trace_id=\"x\"} 1.0\n"
        "vllm:e2e_request_latency_seconds_count{model_name=\"a\"} 2.0\n"
        "vllm:e2e_request_latency_seconds_sum{model_name=\"a\"} 3.0\n"
        "# EOF\n";
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(map("auto", NULL, om, "application/openmetrics-text; version=1.0.0; charset=utf-8",
                  &b, &err),
              0);
    /* the model's name unescaped, then escaped again in wattage's labels */
    WT_NEAR(val(&b, WT_M_INF_TOKENS,
                "target=\"t\",model=\"dir\\\\sub \\\"q\\\"\\nx\",kind=\"generated\""),
            42, 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_BUCKET, "target=\"t\",model=\"a\",kind=\"e2e\",le=\"+Inf\""), 2,
            0);
    wt_batch_free(&b);
    /* the same body without # EOF is not OpenMetrics: refused, nothing kept */
    size_t cut = strlen(om) - strlen("# EOF\n");
    WT_ASSERT(wt_inference_map("t", "auto", NULL, om, cut, "application/openmetrics-text", T, &b,
                               &err) == -EINVAL);
    WT_EQ_INT((int)b.len, 0);
    wt_batch_free(&b);
}

WT_TEST(sglang_tgi_triton_and_llamacpp)
{
    static const char sgl[] =
        "# TYPE sglang:prompt_tokens_total counter\n"
        "sglang:prompt_tokens_total{engine_type=\"unified\",model_name=\"Q\"} 153600.0\n"
        "# TYPE sglang:cached_tokens_total counter\n"
        "sglang:cached_tokens_total{engine_type=\"unified\",model_name=\"Q\"} 40960.0\n"
        "# TYPE sglang:num_requests_total counter\n"
        "sglang:num_requests_total{engine_type=\"unified\",model_name=\"Q\"} 120.0\n"
        "# TYPE sglang:time_to_first_token_seconds histogram\n"
        "sglang:time_to_first_token_seconds_sum{engine_type=\"unified\",model_name=\"Q\"} 19.7\n"
        "sglang:time_to_first_token_seconds_bucket{engine_type=\"unified\",le=\"0.1\","
        "model_name=\"Q\"} 57.0\n"
        "sglang:time_to_first_token_seconds_bucket{engine_type=\"unified\",le=\"+Inf\","
        "model_name=\"Q\"} 123.0\n"
        "sglang:time_to_first_token_seconds_count{engine_type=\"unified\",model_name=\"Q\"} 123.0\n"
        "# TYPE sglang:num_queue_reqs gauge\n"
        "sglang:num_queue_reqs{engine_type=\"unified\",model_name=\"Q\",pid=\"1\",tp_rank=\"0\"} "
        "2.0\n"
        "sglang:num_queue_reqs{engine_type=\"unified\",model_name=\"Q\",pid=\"2\",tp_rank=\"0\"} "
        "1.0\n";
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(map("auto", NULL, sgl, NULL, &b, &err), 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"Q\",kind=\"prompt\""), 153600, 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"Q\",kind=\"prompt_cached\""), 40960, 0);
    WT_NEAR(val(&b, WT_M_INF_REQUESTS, "target=\"t\",model=\"Q\""), 120, 0);
    WT_NEAR(val(&b, WT_M_INF_LAT_SUM, "target=\"t\",model=\"Q\",kind=\"ttft\""), 19.7, 0);
    WT_NEAR(val(&b, WT_M_INF_WAITING, "target=\"t\",model=\"Q\""), 3, 0);
    wt_batch_free(&b);

    /* TGI: bare counter names, tokens only as histograms' _sum, no model label, blank lines */
    static const char tgi[] = "# TYPE tgi_request_success counter\n"
                              "tgi_request_success 17\n"
                              "\n"
                              "# TYPE tgi_request_input_length histogram\n"
                              "tgi_request_input_length_bucket{le=\"20\"} 1\n"
                              "tgi_request_input_length_bucket{le=\"+Inf\"} 17\n"
                              "tgi_request_input_length_sum 4321\n"
                              "tgi_request_input_length_count 17\n"
                              "\n"
                              "# TYPE tgi_request_generated_tokens histogram\n"
                              "tgi_request_generated_tokens_bucket{le=\"+Inf\"} 17\n"
                              "tgi_request_generated_tokens_sum 999\n"
                              "tgi_request_generated_tokens_count 17\n"
                              "\n";
    WT_EQ_INT(map("auto", "bigcode", tgi, NULL, &b, &err), 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"bigcode\",kind=\"prompt\""), 4321, 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"bigcode\",kind=\"generated\""), 999, 0);
    WT_NEAR(val(&b, WT_M_INF_REQUESTS, "target=\"t\",model=\"bigcode\""), 17, 0);
    wt_batch_free(&b);

    /* Triton with the TensorRT-LLM backend: token histograms by response_metric_type */
    static const char trt[] =
        "# TYPE nv_inference_request_success counter\n"
        "nv_inference_request_success{model=\"ens\",version=\"1\"} 8\n"
        "# TYPE nv_llm_output_token_len histogram\n"
        "nv_llm_output_token_len_bucket{model=\"ens\",response_metric_type=\"total_output_tokens\","
        "version=\"1\",le=\"+Inf\"} 8\n"
        "nv_llm_output_token_len_sum{model=\"ens\",response_metric_type=\"total_output_tokens\","
        "version=\"1\"} 800.000000\n"
        "nv_llm_output_token_len_count{model=\"ens\",response_metric_type=\"total_output_tokens\","
        "version=\"1\"} 8\n"
        "# TYPE nv_gpu_power_usage gauge\n"
        "nv_gpu_power_usage{gpu_uuid=\"GPU-1\"} 33.246000\n";
    WT_EQ_INT(map("auto", NULL, trt, NULL, &b, &err), 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"ens\",kind=\"generated\""), 800, 0);
    WT_NEAR(val(&b, WT_M_INF_REQUESTS, "target=\"t\",model=\"ens\""), 8, 0);
    wt_batch_free(&b);

    /* llama.cpp: no labels, six significant digits */
    static const char lc[] = "# HELP llamacpp:tokens_predicted_total Number of generation tokens.\n"
                             "# TYPE llamacpp:tokens_predicted_total counter\n"
                             "llamacpp:tokens_predicted_total 1.23457e+06\n"
                             "# TYPE llamacpp:requests_processing gauge\n"
                             "llamacpp:requests_processing 2\n";
    WT_EQ_INT(map("auto", NULL, lc, NULL, &b, &err), 0);
    WT_NEAR(val(&b, WT_M_INF_TOKENS, "target=\"t\",model=\"t\",kind=\"generated\""), 1234570, 0);
    WT_NEAR(val(&b, WT_M_INF_RUNNING, "target=\"t\",model=\"t\""), 2, 0);
    wt_batch_free(&b);
}

WT_TEST(a_configured_engine_keeps_to_its_names_and_bad_bodies_publish_nothing)
{
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    /* named sglang, the vLLM body has nothing of it */
    WT_EQ_INT(map("sglang", NULL, vllm, NULL, &b, &err), -EINVAL);
    WT_ASSERT(strstr(err.msg, "no metric of") != NULL);
    WT_EQ_INT((int)b.len, 0);
    /* a server of none of the engines */
    WT_EQ_INT(map("auto", NULL, "# TYPE node_load1 gauge\nnode_load1 0.5\n", NULL, &b, &err),
              -EINVAL);
    /* malformed in the middle: the line is named, nothing of the scrape is kept */
    char bad[sizeof vllm + 64];
    snprintf(bad, sizeof bad, "%.*s%s%s", 200, vllm, "vllm:broken{model_name=\"x\" 12 13 14\n",
             vllm + 200);
    WT_EQ_INT(map("auto", NULL, bad, NULL, &b, &err), -EINVAL);
    WT_ASSERT(strncmp(err.msg, "line ", 5) == 0);
    WT_EQ_INT((int)b.len, 0);
    /* cut in the middle of a sample line */
    WT_EQ_INT(wt_inference_map("t", "auto", NULL, vllm, sizeof vllm / 2, NULL, T, &b, &err),
              -EINVAL);
    WT_EQ_INT((int)b.len, 0);
    /* an unknown engine */
    WT_EQ_INT(map("ollama", NULL, vllm, NULL, &b, &err), -EINVAL);
    wt_batch_free(&b);
}
