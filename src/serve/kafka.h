/* SPDX-License-Identifier: MIT */
/*
 * Kafka: the daemon streams its stored readings to a Kafka topic with librdkafka, one JSON
 * message per tick (the readings sharing one timestamp), keyed by the node name: one stream of
 * the shared sender (serve/sender.h; the store is the log, store/cursor.h).
 *
 *   kafka:
 *     brokers: [kafka-1:9092, kafka-2:9092]   # or "kafka-1:9092,kafka-2:9092"
 *     topic: wattage
 *     name: wattage            # default: the topic; names the cursor ("kafka:NAME") and metrics
 *     client_id: wattage       # default: wattage
 *     batch_size: 5000         # readings per store read at most (>= the series of one tick)
 *     deadline: 1s             # the longest a stored reading waits for a message to carry it
 *     timeout: 60s             # message.timeout.ms: librdkafka retries a message this long
 *     max_backoff: 30s         # after a failed message: 0.5 s doubling to this, then resend
 *     backfill: 1h             # a destination seen for the first time starts this far back
 *     match: ['wattage_gpu_*'] # as remote_write's (wt_remote_write_selector_parse); default all
 *     tls: {ca: ca.pem, cert: client.pem, key: client.key}     # security.protocol SSL
 *     sasl: {mechanism: SCRAM-SHA-512, username: u, password_file: /etc/wattage/kafka.pw}
 *
 * A message (value; key: the node name, topology.node, default the host name):
 *   {"node":"gpu-07","time":"1764684900.123456789",
 *    "readings":[{"metric":"wattage_gpu_power_watts","labels":{"gpu":"0",...},"value":312.5},..]}
 * time is the readings' Unix time in seconds with all nine decimals, as a JSON string: a JSON
 * number of 19 digits loses the nanoseconds in any parser that reads doubles. A value that is not
 * finite is null. Only the daemon's own series are sent (not imported logs), labels as stored.
 *
 * Delivery: the producer is idempotent (enable.idempotence=true, acks=all). One thread reads the
 * readings after the cursor (oldest first, wt_cursor_next), produces one message per timestamp
 * and waits for every delivery report of that batch; the cursor then moves past the messages
 * delivered, in order: up to the first message whose report failed (a tick of more than
 * WT_KAFKA_MSG_READINGS readings, split over messages, is acknowledged whole or not at all). Across
 * a broker outage librdkafka retries the messages itself (for `timeout`) and the idempotent
 * producer keeps the broker from storing a retried message twice. A message whose report fails
 * (timeout passed, or a permanent error) is counted in wattage_kafka_messages_failed_total, logged
 * (rate-limited), and produced again from the store after a capped backoff, so nothing is lost; a
 * message that failed while "possibly persisted" (in flight when it timed out) may then be on the
 * topic twice. The poll loop never waits for Kafka.
 *
 * If the daemon dies after a delivery and before the cursor's commit (one small SQLite
 * transaction right after the batch's last report), the next start produces that batch again:
 * at most batch_size readings (one in-flight batch) arrive twice, with equal time and value. A
 * clean stop (SIGTERM/SIGINT) produces what the store's last flush stored and waits for the
 * reports, within daemon.stop_deadline (wt_kafka_drain), and commits what they delivered;
 * messages whose reports had not come by then are produced again at the next start. Without a
 * drain a stop waits up to 5 s for the reports of the batch in flight.
 *
 * Self-metrics (label endpoint = name): wattage_kafka_messages_sent_total,
 * wattage_kafka_messages_failed_total, wattage_kafka_samples_sent_total,
 * wattage_kafka_pending_samples (stored, not yet delivered) and wattage_kafka_lag_seconds (age of
 * the oldest of them; 0 when none).
 *
 * Built only when pkg-config finds rdkafka (WT_HAVE_KAFKA); without it the section is still
 * checked, and a configured kafka section stops `wattage run` with "not built in". The binary
 * does not link librdkafka: it is loaded with dlopen when a kafka section is opened
 * (serve/kafka_lib.h); a library that cannot be loaded stops the start, naming the section.
 */
#ifndef WT_KAFKA_H
#define WT_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "serve/remote_write.h"

#define WT_KAFKA_MAX_BROKERS 16
#define WT_KAFKA_MAX_DESTS 8
/* Readings per message at most: a larger tick (rare: over 2000 series) goes out as several
 * messages of one time, each well under the brokers' default 1 MB message.max.bytes. */
#define WT_KAFKA_MSG_READINGS 2000

enum wt_kafka_sasl { WT_KAFKA_SASL_NONE, WT_KAFKA_PLAIN, WT_KAFKA_SCRAM256, WT_KAFKA_SCRAM512 };

struct wt_kafka_config {
    bool enabled;       /* the section is present */
    char brokers[1024]; /* comma-separated, as bootstrap.servers takes them */
    char topic[250];
    char name[256];
    char client_id[128];
    int64_t batch_size;
    int64_t deadline_ns, timeout_ns, max_backoff_ns, backfill_ns;
    struct wt_rw_selector sel[WT_RW_MAX_SELECTORS];
    size_t nsel;
    char tls_ca[WT_PATH_LEN], tls_cert[WT_PATH_LEN], tls_key[WT_PATH_LEN];
    bool tls;
    enum wt_kafka_sasl sasl;
    char username[128];
    char password_file[WT_PATH_LEN];
};

/*
 * Parses the kafka section (a mapping; NULL: none) into *out. Returns 0 or -EINVAL with err
 * "file:LINE: kafka.topic: ...".
 */
int wt_kafka_config_parse(const char *file, const struct wt_ynode *node,
                          struct wt_kafka_config *out, struct wt_err *err) WT_MUST_USE;
/*
 * The whole section: a mapping (one destination, as wt_kafka_config_parse) or a list of them
 * (messages name kafka[i]; names unique: each keeps its cursor "kafka:NAME"). Returns 0 or
 * -EINVAL with err set.
 */
struct wt_kafka_configs {
    struct wt_kafka_config d[WT_KAFKA_MAX_DESTS];
    size_t n;
};
int wt_kafka_config_parse_all(const char *file, const struct wt_ynode *node,
                              struct wt_kafka_configs *out, struct wt_err *err) WT_MUST_USE;
/* The check registered in src/cli/sections.c. */
int wt_kafka_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);
/*
 * For `wattage check-config` and the start (wt_cli_check_secrets): the SASL password file, when
 * the section names one, passes wt_check_secret_file. Returns 0, or a negative errno with err
 * "kafka.sasl.password_file ...".
 */
int wt_kafka_check_secrets(const struct wt_config *cfg, struct wt_err *err) WT_MUST_USE;

/* True when this build has librdkafka. */
bool wt_kafka_built_in(void);
/* librdkafka's version ("2.0.2"), loading the library to ask; "not loadable" when it cannot be
 * loaded, "" when not built in. */
const char *wt_kafka_version(void);

/*
 * The encoder: the JSON of each series ({"metric":..,"labels":{..},"value":) built once, when the
 * series is added (in the cursor's order, so indices agree), and the buffers a batch is encoded
 * into, reused between batches.
 */
struct wt_kafka_encoder;

/* One message of an encoded batch: its bytes in the encoder's buffer, time and samples. */
struct wt_kafka_msg {
    size_t off, len;
    int64_t t_ns;
    size_t samples;
};

/* node: the messages' node and key. Returns 0 or -ENOMEM. */
int wt_kafka_encoder_open(const char *node, struct wt_kafka_encoder **out) WT_MUST_USE;
void wt_kafka_encoder_close(struct wt_kafka_encoder *e);
/* Adds the next series. Returns its index (>= 0), -EINVAL for labels that do not parse, or
 * -ENOMEM. */
int wt_kafka_encoder_add(struct wt_kafka_encoder *e, const char *metric,
                         const char *labels) WT_MUST_USE;
/*
 * Encodes b as one message per timestamp, in time order (the readings of one time in series
 * order; more than WT_KAFKA_MSG_READINGS of one time are split over several messages). *buf is the
 * encoder's buffer (valid until the next call), *msgs its messages, *n how many. Returns 0, -EINVAL
 * (a sample of a series never added) or -ENOMEM.
 */
int wt_kafka_encode(struct wt_kafka_encoder *e, const struct wt_cursor_batch *b, const char **buf,
                    const struct wt_kafka_msg **msgs, size_t *n) WT_MUST_USE;
/* The node the encoder was opened with (the messages' key). */
const char *wt_kafka_encoder_node(const struct wt_kafka_encoder *e);

struct wt_kafka;
struct wt_http;

/*
 * For `wattage run`: parses cfg's kafka section, reads the SASL password file (secret-mode
 * checked, like remote write's), opens the cursor "kafka:NAME" on cfg's store, creates the
 * producer and starts the sender thread; with http, registers the self-metrics (before
 * wt_http_start). No section: *out is a handle that does nothing. Returns 0 or a negative errno
 * with err set.
 */
int wt_kafka_open(const struct wt_config *cfg, struct wt_http *http, struct wt_kafka **out,
                  struct wt_err *err) WT_MUST_USE;
/*
 * At a stop, as wt_remote_write_drain: what is stored is produced for deadline_ns at most, the
 * reports waited for until then (0: nothing is produced). Accepts NULL.
 */
void wt_kafka_drain(struct wt_kafka *k, int64_t deadline_ns);
/* Waits for a drain to end (its deadline at the latest) and logs what it sent and left; stops
 * the sender (without a drain, after up to 5 s for the reports in flight) and frees k; accepts
 * NULL. */
void wt_kafka_close(struct wt_kafka *k);

struct wt_kafka_stats {
    uint64_t messages_sent, messages_failed, samples_sent, pending;
    uint64_t messages_dropped, samples_dropped; /* permanent errors: not sent again */
    double lag_s;
};
/* The counters of the first destination since open. Returns -ENOENT without one. */
int wt_kafka_stats(struct wt_kafka *k, struct wt_kafka_stats *out);
/* The counters of destination i. Returns -ENOENT past the last. */
int wt_kafka_stats_at(struct wt_kafka *k, size_t i, struct wt_kafka_stats *out);
/*
 * True for a delivery error that sending again cannot cure (the message too large for the
 * broker, a record the broker calls invalid, ...): such messages are dropped, counted in
 * wattage_kafka_messages_dropped_total, and the cursor moves past them.
 */
bool wt_kafka_permanent(int err);

#endif
