/* SPDX-License-Identifier: MIT */
/*
 * OTLP's pure pieces: the encoder's request gunzipped with zlib and decoded again with
 * protobuf-c's unpack (resource, scope, metric names and units, gauges and cumulative monotonic
 * sums, every point's attributes, time, start and value), the mapping of names to the semantic
 * conventions, and the otlp section's messages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/config.h"
#include "runner.h"
#include "serve/otlp.h"
#include "serve/otlp.pb-c.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S)

typedef Wattage__Otlp__ExportMetricsServiceRequest Req;

static Req *decode(const char *body, size_t len, bool gz, size_t raw_len)
{
    uint8_t *raw = malloc(raw_len + 1);
    size_t n = raw_len;
    if (gz) {
        z_stream zs = {0};
        WT_EQ_INT(inflateInit2(&zs, 15 + 16), Z_OK);
        zs.next_in = (Bytef *)body;
        zs.avail_in = (uInt)len;
        zs.next_out = raw;
        zs.avail_out = (uInt)raw_len + 1;
        WT_EQ_INT(inflate(&zs, Z_FINISH), Z_STREAM_END);
        n = zs.total_out;
        inflateEnd(&zs);
        /* a gzip member: the magic bytes */
        WT_EQ_INT((unsigned char)body[0], 0x1f);
        WT_EQ_INT((unsigned char)body[1], 0x8b);
    } else {
        memcpy(raw, body, len);
        n = len;
    }
    WT_EQ_INT(n, raw_len);
    Req *r = wattage__otlp__export_metrics_service_request__unpack(NULL, n, raw);
    free(raw);
    WT_ASSERT(r != NULL);
    return r;
}

static const char *attr(Wattage__Otlp__KeyValue **kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i]->key, key) == 0) {
            WT_EQ_INT(kv[i]->value->value_case, WATTAGE__OTLP__ANY_VALUE__VALUE_STRING_VALUE);
            return kv[i]->value->string_value;
        }
    return NULL;
}

static const Wattage__Otlp__Metric *metric(const Req *r, const char *name)
{
    const Wattage__Otlp__ScopeMetrics *sm = r->resource_metrics[0]->scope_metrics[0];
    for (size_t i = 0; i < sm->n_metrics; i++)
        if (strcmp(sm->metrics[i]->name, name) == 0)
            return sm->metrics[i];
    return NULL;
}

WT_TEST(encoder_request_decodes_point_by_point)
{
    struct wt_otlp_encoder *e = NULL;
    WT_EQ_INT(wt_otlp_encoder_open("host-1", "node \"7\"", &e), 0);
    WT_EQ_INT(wt_otlp_encoder_add(e, "wattage_gpu_power_watts",
                                  "gpu=\"0\",uuid=\"GPU-a\",model=\"H\\\"200\",empty=\"\""),
              0);
    WT_EQ_INT(wt_otlp_encoder_add(e, "wattage_gpu_energy_joules_total", "gpu=\"1\""), 1);
    WT_EQ_INT(wt_otlp_encoder_add(e, "wattage_cpu_energy_joules_total",
                                  "package=\"0\",domain=\"package\""),
              2);
    WT_EQ_INT(wt_otlp_encoder_add(e, "wattage_gpu_temperature_celsius", "gpu=\"0\""), 3);
    WT_EQ_INT(wt_otlp_encoder_add(e, "bad", "gpu=0"), -EINVAL);
    struct wt_cursor_sample smp[] = {
        {0, T0 + 1, 312.5},         {0, T0 + S + 1, 300.25}, {1, T0, 1e9},
        {1, T0 + S, 1e9 + 250.125}, {2, T0 + S, 77.5},       {3, T0 + 2 * S, 61},
    };
    struct wt_cursor_batch b = {smp, 6, 6};
    const char *body;
    size_t len, raw;
    WT_EQ_INT(wt_otlp_encode(e, &b, true, &body, &len, &raw), 0);
    Req *r = decode(body, len, true, raw);
    WT_EQ_INT(r->n_resource_metrics, 1);
    const Wattage__Otlp__ResourceMetrics *rm = r->resource_metrics[0];
    WT_EQ_STR(attr(rm->resource->attributes, rm->resource->n_attributes, "host.name"), "host-1");
    WT_EQ_STR(attr(rm->resource->attributes, rm->resource->n_attributes, "wattage.node"),
              "node \"7\"");
    WT_EQ_STR(attr(rm->resource->attributes, rm->resource->n_attributes, "service.name"),
              "wattage");
    WT_EQ_INT(rm->n_scope_metrics, 1);
    WT_EQ_STR(rm->scope_metrics[0]->scope->name, "wattage");
    /* hw.power, hw.energy (GPU and CPU in one metric), the temperature under its own name */
    WT_EQ_INT(rm->scope_metrics[0]->n_metrics, 3);

    const Wattage__Otlp__Metric *m = metric(r, "hw.power");
    WT_ASSERT(m != NULL);
    WT_EQ_STR(m->unit, "W");
    WT_EQ_INT(m->data_case, WATTAGE__OTLP__METRIC__DATA_GAUGE);
    WT_EQ_INT(m->gauge->n_data_points, 2);
    const Wattage__Otlp__NumberDataPoint *p = m->gauge->data_points[0];
    WT_EQ_U64(p->time_unix_nano, (uint64_t)(T0 + 1)); /* nanoseconds, none lost */
    WT_EQ_U64(p->start_time_unix_nano, 0);
    WT_EQ_INT(p->value_case, WATTAGE__OTLP__NUMBER_DATA_POINT__VALUE_AS_DOUBLE);
    WT_ASSERT(p->as_double == 312.5);
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "model"), "H\"200");
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "uuid"), "GPU-a");
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "hw.type"), "gpu");
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "hw.id"), "GPU-a");
    WT_ASSERT(attr(p->attributes, p->n_attributes, "empty") == NULL);
    WT_ASSERT(m->gauge->data_points[1]->as_double == 300.25);

    m = metric(r, "hw.energy");
    WT_ASSERT(m != NULL);
    WT_EQ_STR(m->unit, "J");
    WT_EQ_INT(m->data_case, WATTAGE__OTLP__METRIC__DATA_SUM);
    WT_EQ_INT(m->sum->aggregation_temporality,
              WATTAGE__OTLP__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE);
    WT_ASSERT(m->sum->is_monotonic);
    WT_EQ_INT(m->sum->n_data_points, 3);
    p = m->sum->data_points[1];
    WT_EQ_U64(p->time_unix_nano, (uint64_t)(T0 + S));
    WT_EQ_U64(p->start_time_unix_nano, (uint64_t)T0); /* the series' first point */
    WT_ASSERT(p->as_double == 1e9 + 250.125);
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "hw.id"), "1"); /* no uuid: the index */
    p = m->sum->data_points[2];
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "hw.type"), "cpu");
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "hw.id"), "cpu0");
    WT_EQ_STR(attr(p->attributes, p->n_attributes, "domain"), "package");
    WT_EQ_U64(p->start_time_unix_nano, (uint64_t)(T0 + S));

    m = metric(r, "wattage_gpu_temperature_celsius");
    WT_ASSERT(m != NULL);
    WT_EQ_STR(m->unit, "Cel");
    WT_EQ_INT(m->data_case, WATTAGE__OTLP__METRIC__DATA_GAUGE);
    WT_ASSERT(attr(m->gauge->data_points[0]->attributes, m->gauge->data_points[0]->n_attributes,
                   "hw.type") == NULL);
    wattage__otlp__export_metrics_service_request__free_unpacked(r, NULL);

    /* the next request: a sum keeps its start; without gzip the body is the protobuf */
    struct wt_cursor_sample more[] = {{1, T0 + 2 * S, 1e9 + 500}};
    struct wt_cursor_batch b2 = {more, 1, 1};
    WT_EQ_INT(wt_otlp_encode(e, &b2, false, &body, &len, &raw), 0);
    WT_EQ_INT(len, raw);
    r = decode(body, len, false, raw);
    m = metric(r, "hw.energy");
    WT_ASSERT(m != NULL);
    WT_EQ_INT(m->sum->n_data_points, 1);
    WT_EQ_U64(m->sum->data_points[0]->start_time_unix_nano, (uint64_t)T0);
    WT_ASSERT(metric(r, "hw.power") == NULL); /* only the metrics the batch holds */
    wattage__otlp__export_metrics_service_request__free_unpacked(r, NULL);

    struct wt_cursor_sample stray[] = {{9, T0, 1}};
    struct wt_cursor_batch b3 = {stray, 1, 1};
    WT_EQ_INT(wt_otlp_encode(e, &b3, true, &body, &len, &raw), -EINVAL);
    wt_otlp_encoder_close(e);
}

WT_TEST(partial_success_counts_rejected_points)
{
    Wattage__Otlp__ExportMetricsPartialSuccess ps =
        WATTAGE__OTLP__EXPORT_METRICS_PARTIAL_SUCCESS__INIT;
    Wattage__Otlp__ExportMetricsServiceResponse r =
        WATTAGE__OTLP__EXPORT_METRICS_SERVICE_RESPONSE__INIT;
    uint8_t buf[256];
    char msg[64];
    ps.rejected_data_points = 7;
    ps.error_message = (char *)"out of order";
    r.partial_success = &ps;
    size_t n = wattage__otlp__export_metrics_service_response__pack(&r, buf);
    WT_EQ_INT(wt_otlp_rejected((const char *)buf, n, msg, sizeof msg), 7);
    WT_EQ_STR(msg, "out of order");
    /* a full success: an empty body, or a partial_success of 0 */
    WT_EQ_INT(wt_otlp_rejected("", 0, msg, sizeof msg), 0);
    ps.rejected_data_points = 0;
    n = wattage__otlp__export_metrics_service_response__pack(&r, buf);
    WT_EQ_INT(wt_otlp_rejected((const char *)buf, n, msg, sizeof msg), 0);
    /* not protobuf (a JSON answer): nothing said rejected */
    WT_EQ_INT(wt_otlp_rejected("{\"partialSuccess\":{}}", 21, msg, sizeof msg), 0);
}

WT_TEST(names_follow_the_conventions)
{
    struct wt_otlp_metric m;
    wt_otlp_map("wattage_gpu_memory_used_bytes", &m);
    WT_EQ_STR(m.name, "hw.gpu.memory.usage");
    WT_EQ_STR(m.unit, "By");
    WT_ASSERT(!m.sum);
    wt_otlp_map("wattage_gpu_utilization_ratio", &m);
    WT_EQ_STR(m.name, "hw.gpu.utilization");
    WT_EQ_STR(m.unit, "1");
    wt_otlp_map("wattage_node_energy_joules_total", &m);
    WT_EQ_STR(m.name, "wattage_node_energy_joules_total");
    WT_EQ_STR(m.unit, "J");
    WT_ASSERT(m.sum);
    WT_ASSERT(m.hw_type == NULL);
    wt_otlp_map("wattage_collector_duration_seconds", &m);
    WT_EQ_STR(m.unit, "s");
    WT_ASSERT(!m.sum);
    wt_otlp_map("wattage_gpu_throttled", &m);
    WT_EQ_STR(m.unit, "");
}

static int load(const char *yaml, struct wt_config *cfg, struct wt_err *err)
{
    wt_config_defaults(cfg);
    return wt_config_load_string("o.yaml", yaml, strlen(yaml), cfg, err);
}

WT_TEST(config_defaults_and_errors)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_otlp_config *oc = malloc(sizeof *oc);
    WT_EQ_INT(load("otlp:\n"
                   "  - url: http://127.0.0.1:4318/v1/metrics\n"
                   "  - url: https://otel:4318/v1/metrics\n"
                   "    name: b\n"
                   "    compression: none\n"
                   "    headers: {X-Scope-OrgID: fleet-7, api-key: 'a b'}\n"
                   "    match: ['wattage_gpu_*']\n",
                   &cfg, &err),
              0);
    WT_EQ_INT(wt_otlp_config_parse("o.yaml", wt_config_section(&cfg, "otlp"), oc, &err), 0);
    WT_EQ_INT(oc->n, 2);
    WT_EQ_STR(oc->ep[0].ep.name, "http://127.0.0.1:4318/v1/metrics");
    WT_ASSERT(oc->ep[0].gzip);
    WT_EQ_INT(oc->ep[0].ep.batch_size, 2000);
    WT_EQ_INT(oc->ep[0].nheaders, 0);
    WT_ASSERT(!oc->ep[1].gzip);
    WT_EQ_INT(oc->ep[1].nheaders, 2);
    WT_EQ_STR(oc->ep[1].headers[0], "X-Scope-OrgID: fleet-7");
    WT_EQ_STR(oc->ep[1].headers[1], "api-key: a b");
    WT_EQ_INT(oc->ep[1].ep.nsel, 1);
    wt_config_free(&cfg);

    static const struct {
        const char *yaml, *msg;
    } bad[] = {
        {"otlp:\n  url: http://x/\n", "o.yaml:2: otlp: expected a list"},
        {"otlp:\n  - name: a\n", "otlp[0].url: required"},
        {"otlp:\n  - url: http://x/\n    compression: zstd\n", "o.yaml:3: otlp[0].compression"},
        {"otlp:\n  - url: http://x/\n    headers: {Content-Type: text/plain}\n",
         "o.yaml:3: otlp[0].headers.Content-Type: set by wattage"},
        {"otlp:\n  - url: http://x/\n    headers: {'a b': c}\n",
         "otlp[0].headers.a b: a header name holds"},
        {"otlp:\n  - url: http://x/\n    headers: [a]\n", "otlp[0].headers: expected a mapping"},
        {"otlp:\n  - url: http://x/\n    batch: 3\n", "o.yaml:3: otlp[0].batch: unknown key"},
        {"otlp:\n  - url: http://x/\n  - url: http://x/\n",
         "o.yaml:3: otlp[1]: name \"http://x/\" is taken by otlp[0]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* the load runs the registered check (src/cli/sections.c) */
        memset(&err, 0, sizeof err);
        int rc = load(bad[i].yaml, &cfg, &err);
        bool loaded = rc == 0;
        if (loaded)
            rc = wt_otlp_config_parse("o.yaml", wt_config_section(&cfg, "otlp"), oc, &err);
        WT_EQ_INT(rc, -EINVAL);
        WT_CONTAINS(err.msg, bad[i].msg);
        if (loaded)
            wt_config_free(&cfg);
    }
    free(oc);
}
