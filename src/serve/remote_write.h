/* SPDX-License-Identifier: MIT */
/*
 * Remote write: the daemon sends its stored readings to Prometheus, VictoriaMetrics or any
 * receiver of Prometheus remote write 1.0 (a protobuf WriteRequest, snappy block compression,
 * POST with Content-Encoding: snappy, Content-Type: application/x-protobuf and
 * X-Prometheus-Remote-Write-Version: 0.1.0).
 *
 *   remote_write:
 *     - url: https://prom.example:9090/api/v1/write
 *       name: prom-a            # default: the url; names the cursor in the store and the metrics
 *       bearer_token_file: /etc/wattage/rw.token     # or basic_auth: {username, password_file}
 *       tls: {ca: ca.pem, cert: client.pem, key: client.key, insecure_skip_verify: false}
 *       batch_size: 2000        # samples per request at most
 *       timeout: 10s            # one request, connection included
 *       deadline: 5s            # the longest a stored reading waits for a request to carry it
 *       max_backoff: 30s        # retries of 5xx, 429 and network errors: 0.5 s doubling to this
 *       backfill: 1h            # an endpoint seen for the first time starts this far back
 *       match: ['wattage_gpu_*', 'wattage_cpu_energy_joules_total{domain="package"}']
 *
 * match: a series is sent when one selector matches (all when there is no match): a metric name
 * glob (fnmatch) and optional label matchers {k="v", k!="v", k=~"re", k!~"re"} (regexes POSIX
 * extended, anchored at both ends).
 *
 * Each series goes out with its labels sorted by name, __name__ among them, and a node label
 * (topology.node, default the host name); a series' own node label, when it has one (a meter
 * placed on a node), is sent as exported_node.
 *
 * Delivery: the store is the write-ahead log (store/cursor.h). One thread per endpoint reads the
 * readings after its cursor, oldest first, and moves the cursor when the receiver accepts them
 * (2xx); 5xx, 429, timeouts and network errors retry the same batch with capped exponential
 * backoff, so per-series order holds and nothing is lost; a 401 or 403 (the credentials refused)
 * is retried the same way, with one log line when the endpoint begins refusing and one when it
 * accepts again, and wattage_remote_write_auth_failures_total; the secret file is read for every
 * request, so an operator who fixes it recovers without a restart. Any other 4xx drops that
 * batch (one log line, wattage_remote_write_samples_dropped_total). The poll loop never waits
 * for it. At a stop (SIGTERM/SIGINT), after the store's last flush, what is stored and not yet
 * acknowledged is sent within daemon.stop_deadline (wt_remote_write_drain), one attempt per
 * batch; what is left is sent at the next start.
 *
 * Self-metrics per endpoint (label endpoint): wattage_remote_write_samples_sent_total,
 * _samples_failed_total (samples of attempts that failed and are retried), _samples_dropped_total,
 * wattage_remote_write_samples_pending (stored, not yet acknowledged) and
 * wattage_remote_write_lag_seconds (age of the oldest of them; 0 when none) and
 * wattage_remote_write_auth_failures_total (requests refused with 401 or 403).
 */
#ifndef WT_REMOTE_WRITE_H
#define WT_REMOTE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "store/cursor.h"

#define WT_RW_MAX_ENDPOINTS 8
#define WT_RW_MAX_SELECTORS 16
#define WT_RW_MAX_MATCHERS 8

enum wt_rw_op { WT_RW_EQ, WT_RW_NE, WT_RW_RE, WT_RW_NRE };

struct wt_rw_matcher {
    char name[64];
    enum wt_rw_op op;
    char value[192];
};

struct wt_rw_selector {
    char glob[96]; /* metric name pattern */
    struct wt_rw_matcher m[WT_RW_MAX_MATCHERS];
    size_t nm;
};

struct wt_rw_endpoint_config {
    char name[128];
    char url[512];
    char bearer_token_file[WT_PATH_LEN];
    char username[128];
    char password_file[WT_PATH_LEN];
    char tls_ca[WT_PATH_LEN], tls_cert[WT_PATH_LEN], tls_key[WT_PATH_LEN];
    bool insecure_skip_verify;
    int64_t batch_size;
    int64_t timeout_ns, deadline_ns, max_backoff_ns, backfill_ns;
    struct wt_rw_selector sel[WT_RW_MAX_SELECTORS];
    size_t nsel;
};

struct wt_rw_config {
    struct wt_rw_endpoint_config ep[WT_RW_MAX_ENDPOINTS];
    size_t n;
};

/*
 * Parses the remote_write section (a list; NULL: no endpoints) into *out. file names the config
 * in messages. Returns 0 or -EINVAL with err "file:LINE: remote_write[0].batch_size: ...".
 */
int wt_remote_write_config_parse(const char *file, const struct wt_ynode *node,
                                 struct wt_rw_config *out, struct wt_err *err) WT_MUST_USE;
/*
 * Parses one endpoint mapping m (at path, e.g. "otlp[0]") with remote write's keys and its
 * defaults, allowing the keys extra (NULL-terminated, may be NULL) too, which the caller parses.
 * For transports over HTTP that take the same settings (OTLP). Returns 0 or -EINVAL with err.
 */
struct wt_yget;
int wt_remote_write_endpoint_parse(const struct wt_yget *g, const struct wt_ynode *m,
                                   const char *path, const char *const *extra,
                                   struct wt_rw_endpoint_config *e) WT_MUST_USE;
/* The check registered in src/cli/sections.c. */
int wt_remote_write_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

/*
 * Parses one selector ("glob" or "glob{k=\"v\", ...}"). Returns 0, or -EINVAL with why filled
 * (what is wrong, without the place). Regexes are compiled to check them.
 */
int wt_remote_write_selector_parse(const char *s, struct wt_rw_selector *out, char *why,
                                   size_t whyn) WT_MUST_USE;
/*
 * Parses the key match of mapping m (at path; absent: nothing), a list of selectors, appending
 * them to sel (*n of at most WT_RW_MAX_SELECTORS in use): the streams' one setting of which series
 * they send. Returns 0 or -EINVAL with g's error naming the item.
 */
int wt_remote_write_match_parse(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                                struct wt_rw_selector *sel, size_t *n) WT_MUST_USE;
/* True when the series (metric, canonical labels) is sent under selectors sel[0..n) (n 0: all). */
bool wt_remote_write_match(const struct wt_rw_selector *sel, size_t n, const char *metric,
                           const char *labels);

/*
 * The encoder: series (added in the cursor's order, so indices agree) with their label sets
 * built once, and the buffers a request is packed and compressed into, reused between requests.
 */
struct wt_rw_encoder;

/* node: the value of every series' node label. Returns 0 or -ENOMEM. */
int wt_remote_write_encoder_open(const char *node, struct wt_rw_encoder **out) WT_MUST_USE;
void wt_remote_write_encoder_close(struct wt_rw_encoder *e);
/*
 * Adds the next series: its labels sorted, __name__ = metric, node added (an own node label
 * becomes exported_node), empty values left out. Returns its index (>= 0), -EINVAL for a label
 * string that does not parse, or -ENOMEM.
 */
int wt_remote_write_encoder_add(struct wt_rw_encoder *e, const char *metric,
                                const char *labels) WT_MUST_USE;
/*
 * Encodes b as a WriteRequest (one TimeSeries per series in b, its samples in time order,
 * timestamps in ms), snappy-compressed. *body points into e (valid until the next call), *len
 * its length; *raw_len (may be NULL) the protobuf's length before compression. Returns 0,
 * -EINVAL (a sample of a series never added) or -ENOMEM.
 */
int wt_remote_write_encode(struct wt_rw_encoder *e, const struct wt_cursor_batch *b,
                           const char **body, size_t *len, size_t *raw_len) WT_MUST_USE;

/* What a response status means: sent (2xx), retry (5xx, 429, none), auth (401, 403: retried,
 * counted apart) or drop (any other). */
enum wt_rw_verdict { WT_RW_SENT, WT_RW_RETRY, WT_RW_DROP, WT_RW_AUTH };
enum wt_rw_verdict wt_remote_write_verdict(long status);

/*
 * Reads a one-line secret file (what names it in messages) into out: refused when group or
 * others may read it (wt_http_check_secret_mode), missing, empty or longer than one line.
 * Returns 0 or a negative errno with err set. Kafka's SASL password file is read the same way.
 */
int wt_remote_write_read_secret(const char *what, const char *path, char *out, size_t n,
                                struct wt_err *err) WT_MUST_USE;

struct wt_remote_write;
struct wt_http;

/*
 * For `wattage run`: parses cfg's remote_write section, reads the secrets it names (a missing or
 * unreadable file is an error now, not at the first request), opens each endpoint's cursor on
 * cfg's store (which must exist: after wt_store_attach) and starts one sender thread each; with
 * http, registers the self-metrics families (before wt_http_start). No endpoints: *out is a
 * handle that does nothing. Returns 0 or a negative errno with err set.
 */
int wt_remote_write_open(const struct wt_config *cfg, struct wt_http *http,
                         struct wt_remote_write **out, struct wt_err *err) WT_MUST_USE;
/*
 * At a stop, after the store's last flush: the endpoints send what is stored and not yet
 * acknowledged, for deadline_ns at most (daemon.stop_deadline; 0: nothing), while the caller
 * goes on (serve/sender.h, wt_sender_drain). Accepts NULL.
 */
void wt_remote_write_drain(struct wt_remote_write *rw, int64_t deadline_ns);
/* Waits for a drain to end (its deadline at the latest) and logs what it sent and left; stops
 * the senders (a request in progress is abandoned: its batch is sent again at the next start)
 * and frees rw; accepts NULL. */
void wt_remote_write_close(struct wt_remote_write *rw);

/* Counters of endpoint i since open, for tests and logs. Returns -ENOENT past the last. */
struct wt_rw_stats {
    uint64_t sent, failed, dropped, pending, requests;
    uint64_t auth_failures; /* requests refused with 401 or 403 */
    double lag_s;
};
int wt_remote_write_stats(struct wt_remote_write *rw, size_t i, struct wt_rw_stats *out);

#endif
