/* SPDX-License-Identifier: MIT */
/*
 * OTLP: the daemon exports its stored readings to an OpenTelemetry collector (or any receiver of
 * OTLP/HTTP metrics): a protobuf ExportMetricsServiceRequest (protobuf-c over otlp.proto),
 * gzip-compressed, POSTed with Content-Type: application/x-protobuf and Content-Encoding: gzip,
 * on the send path of remote write (serve/sender.h: the store is the log, cursor "otlp:NAME").
 *
 *   otlp:
 *     - url: https://otel-collector:4318/v1/metrics
 *       name: collector-a       # default: the url; the cursor "otlp:NAME", the metrics' endpoint
 *       headers: {X-Scope-OrgID: fleet-7}      # sent with every request
 *       compression: gzip       # or none
 *       # and remote_write's keys: bearer_token_file or basic_auth, tls, batch_size, timeout,
 *       # deadline, max_backoff, backfill, match
 *
 * What is sent: one ResourceMetrics (resource attributes service.name "wattage",
 * service.version, host.name (the host name) and wattage.node (topology.node)), one scope
 * "wattage", one Metric per OTLP metric name in the batch. A series' labels become data point
 * attributes (empty values left out); counters (the metric type the store records, names ending
 * in _total) are Sums, cumulative and monotonic, with start_time_unix_nano the time of the
 * series' first point this process sent (so a restart reads as a counter reset); gauges are
 * Gauges; values as_double, times in nanoseconds as stored. Where the OpenTelemetry semantic
 * conventions name the quantity (hardware metrics), that name and unit are used, with hw.type and
 * hw.id (the GPU uuid, else its index; "cpuN" for a RAPL package):
 *   wattage_gpu_power_watts              hw.power (W)
 *   wattage_gpu_energy_joules_total      hw.energy (J)            hw.type gpu
 *   wattage_cpu_energy_joules_total      hw.energy (J)            hw.type cpu
 *   wattage_gpu_utilization_ratio        hw.gpu.utilization (1)
 *   wattage_gpu_memory_utilization_ratio hw.gpu.memory.utilization (1)
 *   wattage_gpu_memory_used_bytes        hw.gpu.memory.usage (By)
 *   wattage_gpu_memory_total_bytes       hw.gpu.memory.limit (By)
 * Every other metric keeps its wattage_ name, with the unit its suffix names (_watts W, _joules J,
 * _seconds s, _bytes By, _ratio 1, _celsius Cel, _hertz Hz).
 *
 * Delivery and self-metrics as remote write's (serve/remote_write.h); a 2xx whose answer reports a
 * partial success counts the rejected points as dropped (logged). The families are named
 * wattage_otlp_samples_sent_total, _samples_failed_total, _samples_dropped_total,
 * wattage_otlp_samples_pending, wattage_otlp_lag_seconds, wattage_otlp_auth_failures_total.
 */
#ifndef WT_OTLP_H
#define WT_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "serve/remote_write.h"
#include "store/cursor.h"

#define WT_OTLP_MAX_ENDPOINTS 8
#define WT_OTLP_MAX_HEADERS 16

struct wt_otlp_endpoint_config {
    struct wt_rw_endpoint_config ep; /* url, name, credentials, tls, batch and timing, match */
    char headers[WT_OTLP_MAX_HEADERS][640]; /* "Name: value" */
    size_t nheaders;
    bool gzip;
};

struct wt_otlp_config {
    struct wt_otlp_endpoint_config ep[WT_OTLP_MAX_ENDPOINTS];
    size_t n;
};

/*
 * Parses the otlp section (a list; NULL: none) into *out. Returns 0 or -EINVAL with err
 * "file:LINE: otlp[0].headers.X: ...".
 */
int wt_otlp_config_parse(const char *file, const struct wt_ynode *node, struct wt_otlp_config *out,
                         struct wt_err *err) WT_MUST_USE;
/* The check registered in src/cli/sections.c. */
int wt_otlp_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);
/* For check-config and the start: the secret files the section names pass the mode check. */
int wt_otlp_check_secrets(const struct wt_config *cfg, struct wt_err *err) WT_MUST_USE;

/* How one wattage metric goes out: its OTLP name (semantic convention or its own), unit, type. */
struct wt_otlp_metric {
    char name[96];
    const char *unit;
    const char *hw_type; /* "gpu", "cpu" or NULL (not a hw.* metric) */
    bool sum;            /* a cumulative monotonic Sum, else a Gauge */
};
void wt_otlp_map(const char *metric, struct wt_otlp_metric *out);

/* The encoder: per series its metric and attributes, built once; buffers reused. */
struct wt_otlp_encoder;

/* host: host.name, node: wattage.node. Returns 0 or -ENOMEM. */
int wt_otlp_encoder_open(const char *host, const char *node,
                         struct wt_otlp_encoder **out) WT_MUST_USE;
void wt_otlp_encoder_close(struct wt_otlp_encoder *e);
/* Adds the next series. Returns its index (>= 0), -EINVAL (labels do not parse) or -ENOMEM. */
int wt_otlp_encoder_add(struct wt_otlp_encoder *e, const char *metric,
                        const char *labels) WT_MUST_USE;
/*
 * Encodes b as one ExportMetricsServiceRequest, gzip-compressed when gzip is set. *body points
 * into e (valid until the next call), *len its length, *raw_len (may be NULL) the protobuf's
 * length. Returns 0, -EINVAL (a sample of a series never added) or -ENOMEM.
 */
int wt_otlp_encode(struct wt_otlp_encoder *e, const struct wt_cursor_batch *b, bool gzip,
                   const char **body, size_t *len, size_t *raw_len) WT_MUST_USE;

/*
 * What an ExportMetricsServiceResponse body says: the data points rejected (partial_success;
 * 0 when none, or when the body is empty or not one), its error_message into msg. These count in
 * wattage_otlp_samples_dropped_total and are logged (not retried: the receiver refused them).
 */
size_t wt_otlp_rejected(const char *body, size_t len, char *msg, size_t n);

struct wt_otlp;
struct wt_http;

/*
 * For `wattage run`: parses the otlp section, checks the secrets, opens a cursor "otlp:NAME" per
 * endpoint and starts its sender thread; with http, registers the self-metrics (before
 * wt_http_start). No endpoints: a handle that does nothing. Returns 0 or a negative errno.
 */
int wt_otlp_open(const struct wt_config *cfg, struct wt_http *http, struct wt_otlp **out,
                 struct wt_err *err) WT_MUST_USE;
/* At a stop, as wt_remote_write_drain: what is stored goes out for deadline_ns at most. */
void wt_otlp_drain(struct wt_otlp *o, int64_t deadline_ns);
/* Waits for a drain to end (its deadline at the latest), logs what it sent and left, stops the
 * senders and frees o; accepts NULL. */
void wt_otlp_close(struct wt_otlp *o);

/* Counters of endpoint i since open (remote write's fields). Returns -ENOENT past the last. */
int wt_otlp_stats(struct wt_otlp *o, size_t i, struct wt_rw_stats *out);

/* True: this build exports OTLP (protobuf-c and zlib are required, so always). */
bool wt_otlp_built_in(void);

#endif
