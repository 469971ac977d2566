/* SPDX-License-Identifier: MIT */
/* The exposition rendering: families grouped, escaping, OpenMetrics form, negotiation, gzip. */
#include <zlib.h>

#include "core/reading.h"
#include "runner.h"
#include "serve/expo.h"

static void add(struct wt_batch *b, int metric, const char *labels, double v)
{
    WT_EQ_INT(wt_batch_add(b, metric, labels, 1000, v), 0);
}

/* Counts the lines of s that start with prefix. */
static int count_lines(const char *s, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, pl) == 0)
            n++;
    }
    return n;
}

WT_TEST(text_groups_families_in_table_order)
{
    struct wt_batch b = {0};
    char g0[WT_LABELS_LEN], g1[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(g0, sizeof g0, "gpu", "0", "model", "NVIDIA H200", NULL), 0);
    WT_EQ_INT(wt_labels(g1, sizeof g1, "gpu", "1", "model", "NVIDIA H200", NULL), 0);
    /* As collectors publish: per GPU, metrics interleaved. */
    add(&b, WT_M_GPU_ENERGY_J, g0, 1000.5);
    add(&b, WT_M_GPU_POWER_W, g0, 300);
    add(&b, WT_M_GPU_ENERGY_J, g1, 2000);
    add(&b, WT_M_GPU_POWER_W, g1, 250.25);
    size_t len = 0;
    char *s = wt_expo_render(&b, WT_EXPO_TEXT, "1.2.3", &len);
    WT_ASSERT(s);
    WT_EQ_INT(len, strlen(s));
    const char *want =
        "# HELP wattage_build_info Build information: the version of wattage.\n"
        "# TYPE wattage_build_info gauge\n"
        "wattage_build_info{version=\"1.2.3\"} 1\n"
        "# HELP wattage_gpu_power_watts GPU board power in watts as NVML reports it (a 1 s "
        "average on Ampere and newer).\n"
        "# TYPE wattage_gpu_power_watts gauge\n"
        "wattage_gpu_power_watts{gpu=\"0\",model=\"NVIDIA H200\"} 300\n"
        "wattage_gpu_power_watts{gpu=\"1\",model=\"NVIDIA H200\"} 250.25\n"
        "# HELP wattage_gpu_energy_joules_total GPU energy in joules from the hardware energy "
        "counter (Volta and newer).\n"
        "# TYPE wattage_gpu_energy_joules_total counter\n"
        "wattage_gpu_energy_joules_total{gpu=\"0\",model=\"NVIDIA H200\"} 1000.5\n"
        "wattage_gpu_energy_joules_total{gpu=\"1\",model=\"NVIDIA H200\"} 2000\n";
    WT_EQ_STR(s, want);
    free(s);
    wt_batch_free(&b);
}

WT_TEST(absent_metrics_have_no_family)
{
    struct wt_batch b = {0};
    add(&b, WT_M_GPU_UP, "gpu=\"0\"", 1);
    size_t len;
    char *s = wt_expo_render(&b, WT_EXPO_TEXT, "x", &len);
    WT_ASSERT(s);
    WT_CONTAINS(s, "wattage_gpu_up{gpu=\"0\"} 1\n");
    WT_ASSERT(!strstr(s, "wattage_gpu_energy_joules_total"));
    WT_ASSERT(!strstr(s, "wattage_gpu_power_watts"));
    WT_EQ_INT(count_lines(s, "# TYPE "), 2); /* build info and gpu_up only */
    free(s);
    wt_batch_free(&b);
}

WT_TEST(empty_batch_has_build_info_only)
{
    struct wt_batch b = {0};
    size_t len;
    char *s = wt_expo_render(&b, WT_EXPO_OPENMETRICS, "0.1.0", &len);
    WT_ASSERT(s);
    WT_EQ_STR(s, "# HELP wattage_build Build information: the version of wattage.\n"
                 "# TYPE wattage_build info\n"
                 "wattage_build_info{version=\"0.1.0\"} 1\n"
                 "# EOF\n");
    free(s);
}

WT_TEST(label_values_stay_escaped)
{
    struct wt_batch b = {0};
    char lb[WT_LABELS_LEN];
    WT_EQ_INT(
        wt_labels(lb, sizeof lb, "gpu", "0", "model", "A \"quoted\\ name\nwith newline", NULL), 0);
    add(&b, WT_M_GPU_TEMP_C, lb, 45);
    size_t len;
    char *s = wt_expo_render(&b, WT_EXPO_TEXT, "0.1.0", &len);
    WT_ASSERT(s);
    WT_CONTAINS(s, "wattage_gpu_temperature_celsius{gpu=\"0\",model=\"A \\\"quoted\\\\ name\\nwith "
                   "newline\"} 45\n");
    free(s);
    wt_batch_free(&b);
}

WT_TEST(a_repeated_series_is_written_once)
{
    struct wt_batch b = {0};
    add(&b, WT_M_GPU_POWER_W, "gpu=\"0\"", 1);
    add(&b, WT_M_GPU_POWER_W, "gpu=\"1\"", 2);
    add(&b, WT_M_GPU_POWER_W, "gpu=\"0\"", 3);
    size_t len;
    char *s = wt_expo_render(&b, WT_EXPO_TEXT, "0.1.0", &len);
    WT_ASSERT(s);
    WT_EQ_INT(count_lines(s, "wattage_gpu_power_watts{gpu=\"0\"}"), 1);
    WT_CONTAINS(s, "wattage_gpu_power_watts{gpu=\"0\"} 1\n");
    WT_EQ_INT(count_lines(s, "wattage_gpu_power_watts{gpu=\"1\"}"), 1);
    free(s);
    wt_batch_free(&b);
}

WT_TEST(openmetrics_counters_info_and_eof)
{
    struct wt_batch b = {0};
    add(&b, WT_M_GPU_ENERGY_J, "gpu=\"0\"", 12.5);
    add(&b, WT_M_GPU_ENERGY_INTEGRATED_J, "gpu=\"0\"", 12.25);
    add(&b, WT_M_GPU_INFO, "gpu=\"0\",uuid=\"GPU-1\"", 1);
    add(&b, WT_M_COLLECTOR_ERRORS, "collector=\"nvml\"", 0);
    add(&b, WT_M_COLLECTOR_DURATION_S, "collector=\"nvml\"", 0.000125);
    size_t len;
    char *s = wt_expo_render(&b, WT_EXPO_OPENMETRICS, "0.1.0", &len);
    WT_ASSERT(s);
    /* Counter families are named without _total; samples keep it. */
    WT_CONTAINS(s, "# TYPE wattage_gpu_energy_joules counter\n");
    WT_CONTAINS(s, "# HELP wattage_gpu_energy_joules GPU energy in joules from the hardware "
                   "energy counter (Volta and newer).\n");
    WT_CONTAINS(s, "wattage_gpu_energy_joules_total{gpu=\"0\"} 12.5\n");
    /* The integrated estimate is a family of its own: one name, one quantity. */
    WT_CONTAINS(s, "# TYPE wattage_gpu_energy_integrated_joules counter\n");
    WT_CONTAINS(s, "wattage_gpu_energy_integrated_joules_total{gpu=\"0\"} 12.25\n");
    WT_EQ_INT(count_lines(s, "wattage_gpu_energy_joules_total{"), 1);
    WT_CONTAINS(s, "# TYPE wattage_collector_errors counter\nwattage_collector_errors_total{");
    /* *_info gauges are info families. */
    WT_CONTAINS(s, "# TYPE wattage_gpu info\nwattage_gpu_info{gpu=\"0\",uuid=\"GPU-1\"} 1\n");
    WT_CONTAINS(s, "# TYPE wattage_collector_duration_seconds gauge\n"
                   "wattage_collector_duration_seconds{collector=\"nvml\"} 0.000125\n");
    WT_ASSERT(!strstr(s, "# TYPE wattage_gpu_energy_joules_total"));
    /* Ends with exactly one # EOF. */
    WT_EQ_INT(count_lines(s, "# EOF"), 1);
    WT_ASSERT(len >= 6 && strcmp(s + len - 6, "# EOF\n") == 0);
    free(s);

    /* In the text format the quote in HELP is not escaped and there is no EOF. */
    s = wt_expo_render(&b, WT_EXPO_TEXT, "0.1.0", &len);
    WT_ASSERT(s);
    WT_CONTAINS(s, "# TYPE wattage_gpu_energy_joules_total counter\n");
    WT_CONTAINS(s, "# TYPE wattage_gpu_energy_integrated_joules_total counter\n");
    WT_CONTAINS(s, "# TYPE wattage_gpu_info gauge\n");
    WT_ASSERT(!strstr(s, "# EOF"));
    free(s);
    wt_batch_free(&b);
}

WT_TEST(every_family_has_one_help_and_type)
{
    struct wt_batch b = {0};
    char lb[WT_LABELS_LEN];
    /* Every metric, for 3 series each, interleaved the worst way. */
    for (int g = 0; g < 3; g++) {
        for (int m = 0; m < WT_M_COUNT; m++) {
            snprintf(lb, sizeof lb, "gpu=\"%d\"", g);
            add(&b, m, lb, g + m);
        }
    }
    size_t len;
    char *s = wt_expo_render(&b, WT_EXPO_TEXT, "0.1.0", &len);
    WT_ASSERT(s);
    /* the inference servers' _bucket, _sum and _count are one histogram family */
    WT_EQ_INT(count_lines(s, "# TYPE "), WT_M_COUNT + 1 - 2);
    WT_EQ_INT(count_lines(s, "# HELP "), WT_M_COUNT + 1 - 2);
    for (int m = 0; m < WT_M_COUNT; m++) {
        char want[300];
        bool hist = m >= WT_M_INF_LAT_BUCKET && m <= WT_M_INF_LAT_COUNT;
        /* The family's three samples follow its TYPE line (or the histogram's part before)
         * directly. */
        snprintf(want, sizeof want, "%s\n%s{gpu=\"0\"} %d\n%s{gpu=\"1\"} %d\n%s{gpu=\"2\"} %d\n",
                 hist                               ? ""
                 : wt_metrics[m].type == WT_COUNTER ? " counter"
                                                    : " gauge",
                 wt_metrics[m].name, m, wt_metrics[m].name, m + 1, wt_metrics[m].name, m + 2);
        WT_CONTAINS(s, want);
    }
    WT_CONTAINS(s, "# TYPE wattage_inference_latency_seconds histogram\n"
                   "wattage_inference_latency_seconds_bucket{");
    free(s);
    /* OpenMetrics: the histogram's samples keep their names (no _total) */
    s = wt_expo_render(&b, WT_EXPO_OPENMETRICS, "0.1.0", &len);
    WT_ASSERT(s);
    WT_CONTAINS(s, "# TYPE wattage_inference_latency_seconds histogram\n");
    WT_ASSERT(strstr(s, "_bucket_total") == NULL && strstr(s, "_count_total") == NULL);
    WT_CONTAINS(s, "\nwattage_inference_latency_seconds_sum{gpu=\"0\"} ");
    free(s);
    wt_batch_free(&b);
}

WT_TEST(values_round_trip)
{
    char buf[40];
    wt_expo_value(0.1, buf, sizeof buf);
    WT_EQ_STR(buf, "0.1");
    wt_expo_value(1e9 + 0.5, buf, sizeof buf);
    WT_EQ_STR(buf, "1000000000.5");
    wt_expo_value(150754820096.0, buf, sizeof buf);
    WT_EQ_STR(buf, "150754820096");
    wt_expo_value(-3, buf, sizeof buf);
    WT_EQ_STR(buf, "-3");
    wt_expo_value(NAN, buf, sizeof buf);
    WT_EQ_STR(buf, "NaN");
    wt_expo_value(INFINITY, buf, sizeof buf);
    WT_EQ_STR(buf, "+Inf");
    wt_expo_value(-INFINITY, buf, sizeof buf);
    WT_EQ_STR(buf, "-Inf");
    wt_expo_value(1e300, buf, sizeof buf);
    WT_EQ_STR(buf, "1e+300");
    double v = 727.1080860684874;
    wt_expo_value(v, buf, sizeof buf);
    WT_ASSERT(strtod(buf, NULL) == v);
    v = 1.0 / 3.0;
    wt_expo_value(v, buf, sizeof buf);
    WT_ASSERT(strtod(buf, NULL) == v);
}

WT_TEST(help_escaping)
{
    char out[64];
    wt_expo_escape_help("a\\b\nc\"d", WT_EXPO_TEXT, out, sizeof out);
    WT_EQ_STR(out, "a\\\\b\\nc\"d");
    wt_expo_escape_help("a\\b\nc\"d", WT_EXPO_OPENMETRICS, out, sizeof out);
    WT_EQ_STR(out, "a\\\\b\\nc\\\"d");
    /* Truncation never splits an escape. */
    wt_expo_escape_help("abc\"", WT_EXPO_OPENMETRICS, out, 5);
    WT_EQ_STR(out, "abc");
}

WT_TEST(negotiation)
{
    /* What Prometheus 2.42 sends. */
    WT_EQ_INT(wt_expo_negotiate("application/openmetrics-text;version=1.0.0,application/"
                                "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
                                "q=0.5,*/*;q=0.1"),
              WT_EXPO_OPENMETRICS);
    WT_EQ_INT(wt_expo_negotiate(NULL), WT_EXPO_TEXT);
    WT_EQ_INT(wt_expo_negotiate(""), WT_EXPO_TEXT);
    WT_EQ_INT(wt_expo_negotiate("*/*"), WT_EXPO_TEXT);
    WT_EQ_INT(wt_expo_negotiate("text/plain;version=0.0.4"), WT_EXPO_TEXT);
    WT_EQ_INT(wt_expo_negotiate("application/openmetrics-text"), WT_EXPO_OPENMETRICS);
    WT_EQ_INT(wt_expo_negotiate("Application/OpenMetrics-Text; Version=\"1.0.0\""),
              WT_EXPO_OPENMETRICS);
    /* Only a version we write, and only when not less wanted than text. */
    WT_EQ_INT(wt_expo_negotiate("application/openmetrics-text;version=0.0.1"), WT_EXPO_TEXT);
    WT_EQ_INT(wt_expo_negotiate("text/plain;q=0.9, application/openmetrics-text;q=0.5"),
              WT_EXPO_TEXT);
    WT_EQ_INT(wt_expo_negotiate("application/openmetrics-text;q=0"), WT_EXPO_TEXT);
    WT_EQ_INT(wt_expo_negotiate("application/openmetrics-text;q=bogus"), WT_EXPO_TEXT);
    WT_EQ_STR(wt_expo_content_type(WT_EXPO_TEXT), "text/plain; version=0.0.4; charset=utf-8");
    WT_EQ_STR(wt_expo_content_type(WT_EXPO_OPENMETRICS),
              "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

WT_TEST(gzip_negotiation)
{
    WT_ASSERT(wt_expo_accepts_gzip("gzip"));
    WT_ASSERT(wt_expo_accepts_gzip("deflate, gzip;q=0.5"));
    WT_ASSERT(wt_expo_accepts_gzip("*"));
    WT_ASSERT(wt_expo_accepts_gzip("GZIP"));
    WT_ASSERT(!wt_expo_accepts_gzip(NULL));
    WT_ASSERT(!wt_expo_accepts_gzip("identity"));
    WT_ASSERT(!wt_expo_accepts_gzip("gzip;q=0"));
    WT_ASSERT(!wt_expo_accepts_gzip("*, gzip;q=0"));
    WT_ASSERT(!wt_expo_accepts_gzip("br, deflate"));
}

WT_TEST(gzip_round_trip)
{
    struct wt_batch b = {0};
    char lb[WT_LABELS_LEN];
    for (int g = 0; g < 8; g++) {
        snprintf(lb, sizeof lb, "gpu=\"%d\"", g);
        add(&b, WT_M_GPU_POWER_W, lb, 300 + g);
    }
    size_t len, zlen;
    char *s = wt_expo_render(&b, WT_EXPO_TEXT, "0.1.0", &len);
    char *z = NULL;
    WT_ASSERT(s);
    WT_EQ_INT(wt_expo_gzip(s, len, &z, &zlen), 0);
    WT_ASSERT(zlen > 18 && zlen < len);
    WT_EQ_INT((unsigned char)z[0], 0x1f); /* gzip magic */
    WT_EQ_INT((unsigned char)z[1], 0x8b);

    z_stream st;
    memset(&st, 0, sizeof st);
    WT_EQ_INT(inflateInit2(&st, 15 + 16), Z_OK);
    char *back = malloc(len + 1);
    st.next_in = (Bytef *)z;
    st.avail_in = (uInt)zlen;
    st.next_out = (Bytef *)back;
    st.avail_out = (uInt)len + 1;
    WT_EQ_INT(inflate(&st, Z_FINISH), Z_STREAM_END);
    WT_EQ_INT(st.total_out, len);
    inflateEnd(&st);
    back[len] = '\0';
    WT_EQ_STR(back, s);
    free(back);
    free(z);
    free(s);
    wt_batch_free(&b);
}

WT_TEST(extra_family_after_hub_families_and_before_eof)
{
    struct wt_batch b = {0};
    char g0[WT_LABELS_LEN];
    struct wt_expo_sample smp[2];
    memset(smp, 0, sizeof smp);
    WT_EQ_INT(wt_labels(g0, sizeof g0, "gpu", "0", NULL), 0);
    add(&b, WT_M_GPU_ENERGY_J, g0, 10);
    WT_EQ_INT(wt_labels(smp[0].labels, sizeof smp[0].labels, "id", "7", "job", "a", NULL), 0);
    WT_EQ_INT(wt_labels(smp[1].labels, sizeof smp[1].labels, "id", "8", "job", "b", NULL), 0);
    smp[0].value = 1.5;
    smp[1].value = 2;
    struct wt_expo_family fam[2] = {
        {.name = "wattage_job_energy_joules_total",
         .help = "Job energy.",
         .type = WT_COUNTER,
         .s = smp,
         .n = 2},
        {.name = "wattage_empty", .help = "None.", .type = WT_GAUGE, .s = NULL, .n = 0},
    };
    size_t len = 0;
    char *s = wt_expo_render_with(&b, fam, 2, WT_EXPO_OPENMETRICS, "0.1.0", &len);
    WT_ASSERT(s);
    WT_EQ_INT(count_lines(s, "# TYPE wattage_job_energy_joules counter"), 1);
    WT_EQ_INT(count_lines(s, "# HELP wattage_job_energy_joules Job energy."), 1);
    WT_CONTAINS(s, "wattage_job_energy_joules_total{id=\"7\",job=\"a\"} 1.5\n"
                   "wattage_job_energy_joules_total{id=\"8\",job=\"b\"} 2\n# EOF\n");
    WT_ASSERT(strstr(s, "wattage_gpu_energy_joules_total{") < strstr(s, "wattage_job_energy"));
    WT_ASSERT(!strstr(s, "wattage_empty"));
    free(s);
    s = wt_expo_render_with(&b, fam, 1, WT_EXPO_TEXT, "0.1.0", &len);
    WT_ASSERT(s);
    WT_EQ_INT(count_lines(s, "# TYPE wattage_job_energy_joules_total counter"), 1);
    WT_CONTAINS(s, "wattage_job_energy_joules_total{id=\"8\",job=\"b\"} 2\n");
    free(s);
    wt_batch_free(&b);
}
