/* SPDX-License-Identifier: MIT */
/*
 * kafka_mock: a Kafka cluster for the tests, librdkafka's own mock cluster (rdkafka_mock.h: a
 * broker implementation shipped with the library that speaks the real protocol, idempotent
 * producer included), with a consumer that reads the topic back.
 *
 *   kafka_mock BOOTSTRAP_FILE TOPIC OUT_JSONL [PARTITIONS]
 *
 * Starts a one-broker cluster, creates TOPIC (PARTITIONS, default 1), writes the bootstrap
 * address to BOOTSTRAP_FILE (atomically, once it listens), then consumes TOPIC from the
 * beginning and appends one JSON line per message to OUT_JSONL:
 *   {"partition":0,"offset":17,"key":"node-k","value":<the message's value, verbatim>}
 * SIGUSR1 takes the broker down (its connections closed, new ones refused), SIGUSR2 brings it
 * back, SIGHUP makes it refuse the next 2 produce requests for good (MSG_SIZE_TOO_LARGE, an
 * error resending cannot cure); each is noted on stderr. SIGTERM or SIGINT stops it.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t want_down, want_up, want_stop, want_refuse;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        want_down = 1;
    else if (sig == SIGUSR2)
        want_up = 1;
    else if (sig == SIGHUP)
        want_refuse = 1;
    else
        want_stop = 1;
}

static void put_json_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int main(int argc, char **argv)
{
    char errstr[512], tmp[4096];
    if (argc < 4) {
        fprintf(stderr, "usage: kafka_mock BOOTSTRAP_FILE TOPIC OUT_JSONL [PARTITIONS]\n");
        return 2;
    }
    const char *topic = argv[2];
    int parts = argc > 4 ? atoi(argv[4]) : 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    /* the cluster's bookkeeping handle */
    rd_kafka_conf_t *hc = rd_kafka_conf_new();
    rd_kafka_t *h = rd_kafka_new(RD_KAFKA_PRODUCER, hc, errstr, sizeof errstr);
    if (!h) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(h, 1);
    if (!mc) {
        fprintf(stderr, "kafka_mock: cannot create the mock cluster\n");
        return 1;
    }
    if (rd_kafka_mock_topic_create(mc, topic, parts, 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "kafka_mock: cannot create topic %s\n", topic);
        return 1;
    }
    const char *boot = rd_kafka_mock_cluster_bootstraps(mc);

    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(cc, "bootstrap.servers", boot, errstr, sizeof errstr) ||
        rd_kafka_conf_set(cc, "group.id", "kafka_mock", errstr, sizeof errstr) ||
        rd_kafka_conf_set(cc, "enable.auto.commit", "false", errstr, sizeof errstr) ||
        rd_kafka_conf_set(cc, "reconnect.backoff.max.ms", "500", errstr, sizeof errstr) ||
        rd_kafka_conf_set(cc, "fetch.wait.max.ms", "50", errstr, sizeof errstr) ||
        rd_kafka_conf_set(cc, "log_level", "2", errstr, sizeof errstr)) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, cc, errstr, sizeof errstr);
    if (!c) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(parts);
    for (int p = 0; p < parts; p++)
        rd_kafka_topic_partition_list_add(tp, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    if (rd_kafka_assign(c, tp) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "kafka_mock: cannot assign the partitions\n");
        return 1;
    }
    rd_kafka_topic_partition_list_destroy(tp);

    FILE *out = fopen(argv[3], "a");
    if (!out) {
        perror(argv[3]);
        return 1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *bf = fopen(tmp, "w");
    if (!bf || fprintf(bf, "%s\n", boot) < 0 || fclose(bf) != 0 || rename(tmp, argv[1]) != 0) {
        perror(argv[1]);
        return 1;
    }
    fprintf(stderr, "kafka_mock: cluster at %s, topic %s (%d partitions)\n", boot, topic, parts);

    unsigned long n = 0;
    while (!want_stop) {
        if (want_refuse) {
            want_refuse = 0;
            rd_kafka_mock_push_request_errors(mc, 0 /* ApiKey Produce */, 2,
                                              RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                                              RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
            fprintf(stderr, "kafka_mock: the next 2 produce requests are refused for good\n");
        }
        if (want_down) {
            want_down = 0;
            rd_kafka_mock_broker_set_down(mc, 1);
            fprintf(stderr, "kafka_mock: broker down after %lu messages\n", n);
        }
        if (want_up) {
            want_up = 0;
            rd_kafka_mock_broker_set_up(mc, 1);
            fprintf(stderr, "kafka_mock: broker up after %lu messages\n", n);
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                fprintf(stderr, "kafka_mock: consumer: %s\n", rd_kafka_message_errstr(m));
        } else {
            fprintf(out, "{\"partition\":%d,\"offset\":%lld,\"key\":", (int)m->partition,
                    (long long)m->offset);
            put_json_string(out, m->key ? (const char *)m->key : "", m->key ? m->key_len : 0);
            fputs(",\"value\":", out);
            fwrite(m->payload, 1, m->len, out);
            fputs("}\n", out);
            fflush(out);
            n++;
        }
        rd_kafka_message_destroy(m);
    }
    fprintf(stderr, "kafka_mock: stopping after %lu messages\n", n);
    fclose(out);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(h);
    return 0;
}
