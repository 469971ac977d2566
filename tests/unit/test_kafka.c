/* SPDX-License-Identifier: MIT */
/*
 * Kafka's pure pieces: the encoder's messages parsed back with cJSON (one per timestamp, in time
 * order, labels and values exact, JSON escapes, the time string, null for a value that is not
 * finite) and the kafka section's defaults and parsing.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/config.h"
#include "runner.h"
#include "serve/kafka.h"
#include "store/cursor.h"

#define S WT_NS_PER_S
#define T0 (1700000000LL * S)

static cJSON *parse(const char *buf, const struct wt_kafka_msg *m)
{
    cJSON *j = cJSON_ParseWithLength(buf + m->off, m->len);
    WT_ASSERT(j != NULL);
    return j;
}

WT_TEST(encoder_one_message_per_timestamp)
{
    struct wt_kafka_encoder *e = NULL;
    WT_EQ_INT(wt_kafka_encoder_open("node \"7\"", &e), 0);
    WT_EQ_INT(wt_kafka_encoder_add(e, "wattage_gpu_power_watts", "gpu=\"0\",model=\"H\\\"200\""),
              0);
    WT_EQ_INT(wt_kafka_encoder_add(e, "wattage_gpu_power_watts", "gpu=\"1\",model=\"a\\nb\""), 1);
    WT_EQ_INT(wt_kafka_encoder_add(e, "wattage_up", ""), 2);
    WT_EQ_INT(wt_kafka_encoder_add(e, "bad", "gpu=0"), -EINVAL);
    /* grouped by series, as the cursor gives them */
    struct wt_cursor_sample s[] = {
        {0, T0 + 1, 312.5},   {0, T0 + S + 1, 0.1}, {1, T0 + 1, 1e300},
        {1, T0 + S + 1, NAN}, {2, T0 + 1, 1},       {2, T0 + 2 * S + 123456789, -0.0},
    };
    struct wt_cursor_batch b = {s, 6, 6};
    const char *buf;
    const struct wt_kafka_msg *m;
    size_t n;
    WT_EQ_INT(wt_kafka_encode(e, &b, &buf, &m, &n), 0);
    WT_EQ_INT(n, 3);
    WT_EQ_INT(m[0].t_ns, T0 + 1);
    WT_EQ_INT(m[0].samples, 3);
    WT_EQ_INT(m[1].samples, 2);
    WT_EQ_INT(m[2].samples, 1);

    cJSON *j = parse(buf, &m[0]);
    WT_EQ_STR(cJSON_GetObjectItem(j, "node")->valuestring, "node \"7\"");
    WT_EQ_STR(cJSON_GetObjectItem(j, "time")->valuestring, "1700000000.000000001");
    cJSON *r = cJSON_GetObjectItem(j, "readings");
    WT_EQ_INT(cJSON_GetArraySize(r), 3);
    cJSON *r0 = cJSON_GetArrayItem(r, 0);
    WT_EQ_STR(cJSON_GetObjectItem(r0, "metric")->valuestring, "wattage_gpu_power_watts");
    cJSON *l0 = cJSON_GetObjectItem(r0, "labels");
    WT_EQ_STR(cJSON_GetObjectItem(l0, "gpu")->valuestring, "0");
    WT_EQ_STR(cJSON_GetObjectItem(l0, "model")->valuestring, "H\"200");
    WT_ASSERT(cJSON_GetObjectItem(r0, "value")->valuedouble == 312.5);
    cJSON *r1 = cJSON_GetArrayItem(r, 1);
    WT_EQ_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(r1, "labels"), "model")->valuestring, "a\nb");
    WT_ASSERT(cJSON_GetObjectItem(r1, "value")->valuedouble == 1e300);
    cJSON *r2 = cJSON_GetArrayItem(r, 2);
    WT_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r2, "labels")), 0);
    cJSON_Delete(j);

    j = parse(buf, &m[1]);
    WT_EQ_STR(cJSON_GetObjectItem(j, "time")->valuestring, "1700000001.000000001");
    r = cJSON_GetObjectItem(j, "readings");
    WT_ASSERT(cJSON_GetObjectItem(cJSON_GetArrayItem(r, 0), "value")->valuedouble == 0.1);
    WT_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(r, 1), "value")));
    cJSON_Delete(j);

    j = parse(buf, &m[2]);
    WT_EQ_STR(cJSON_GetObjectItem(j, "time")->valuestring, "1700000002.123456789");
    cJSON_Delete(j);

    /* a sample of a series never added */
    s[0].series = 9;
    WT_EQ_INT(wt_kafka_encode(e, &b, &buf, &m, &n), -EINVAL);
    wt_kafka_encoder_close(e);
}

WT_TEST(encoder_splits_a_huge_tick)
{
    struct wt_kafka_encoder *e = NULL;
    enum { N = WT_KAFKA_MSG_READINGS + 500 };
    char l[32];
    WT_EQ_INT(wt_kafka_encoder_open("n", &e), 0);
    struct wt_cursor_sample *s = calloc(N + 1, sizeof *s);
    for (int i = 0; i < N; i++) {
        snprintf(l, sizeof l, "i=\"%d\"", i);
        WT_EQ_INT(wt_kafka_encoder_add(e, "wattage_up", l), i);
        s[i] = (struct wt_cursor_sample){(uint32_t)i, T0, i};
    }
    s[N] = (struct wt_cursor_sample){0, T0 + S, 1};
    struct wt_cursor_batch b = {s, N + 1, N + 1};
    const char *buf;
    const struct wt_kafka_msg *m;
    size_t n;
    WT_EQ_INT(wt_kafka_encode(e, &b, &buf, &m, &n), 0);
    WT_EQ_INT(n, 3);
    WT_EQ_INT(m[0].samples, WT_KAFKA_MSG_READINGS);
    WT_EQ_INT(m[1].samples, 500);
    WT_EQ_INT(m[1].t_ns, T0);
    WT_EQ_INT(m[2].t_ns, T0 + S);
    cJSON *j = parse(buf, &m[1]);
    cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "readings"), 0);
    WT_EQ_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "labels"), "i")->valuestring, "2000");
    cJSON_Delete(j);
    free(s);
    wt_kafka_encoder_close(e);
}

static int load(const char *yaml, struct wt_config *cfg, struct wt_err *err)
{
    wt_config_defaults(cfg);
    return wt_config_load_string("k.yaml", yaml, strlen(yaml), cfg, err);
}

WT_TEST(permanent_errors_are_told_apart)
{
#ifdef WT_HAVE_KAFKA
    /* too large or invalid: dropped; a timeout or a broker down: sent again */
    WT_ASSERT(wt_kafka_permanent(10));    /* MSG_SIZE_TOO_LARGE */
    WT_ASSERT(wt_kafka_permanent(87));    /* INVALID_RECORD */
    WT_ASSERT(!wt_kafka_permanent(-192)); /* _MSG_TIMED_OUT */
    WT_ASSERT(!wt_kafka_permanent(-195)); /* _TRANSPORT */
    WT_ASSERT(!wt_kafka_permanent(7));    /* REQUEST_TIMED_OUT */
#else
    WT_ASSERT(!wt_kafka_permanent(10));
#endif
}

WT_TEST(config_defaults_and_errors)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_kafka_config *kc = malloc(sizeof *kc);
    WT_EQ_INT(load("kafka:\n"
                   "  brokers: [a:9092, 'b:9093']\n"
                   "  topic: wattage.gpu\n"
                   "  match: ['wattage_gpu_*']\n"
                   "  sasl: {mechanism: SCRAM-SHA-256, username: u, password_file: /p}\n",
                   &cfg, &err),
              0);
    WT_EQ_INT(wt_kafka_config_parse("k.yaml", wt_config_section(&cfg, "kafka"), kc, &err), 0);
    WT_ASSERT(kc->enabled);
    WT_EQ_STR(kc->brokers, "a:9092,b:9093");
    WT_EQ_STR(kc->name, "wattage.gpu");
    WT_EQ_STR(kc->client_id, "wattage");
    WT_EQ_INT(kc->batch_size, 5000);
    WT_EQ_INT(kc->timeout_ns, 60 * S);
    WT_EQ_INT(kc->deadline_ns, S);
    WT_EQ_INT(kc->nsel, 1);
    WT_EQ_INT(kc->sasl, WT_KAFKA_SCRAM256);
    WT_ASSERT(!kc->tls);
    wt_config_free(&cfg);

    WT_EQ_INT(load("kafka:\n  brokers: ' x:1 , y:2'\n  topic: t\n  name: n\n", &cfg, &err), 0);
    WT_EQ_INT(wt_kafka_config_parse("k.yaml", wt_config_section(&cfg, "kafka"), kc, &err), 0);
    WT_EQ_STR(kc->brokers, "x:1,y:2");
    WT_EQ_STR(kc->name, "n");
    wt_config_free(&cfg);

    WT_EQ_INT(wt_kafka_config_parse("k.yaml", NULL, kc, &err), 0);
    WT_ASSERT(!kc->enabled);

    /* several destinations: a list, each with its own defaults and name */
    struct wt_kafka_configs *all = malloc(sizeof *all);
    WT_EQ_INT(load("kafka:\n"
                   "  - {brokers: 'a:1', topic: t1}\n"
                   "  - {brokers: 'b:2', topic: t1, name: second, batch_size: 10}\n",
                   &cfg, &err),
              0);
    WT_EQ_INT(wt_kafka_config_parse_all("k.yaml", wt_config_section(&cfg, "kafka"), all, &err), 0);
    WT_EQ_INT(all->n, 2);
    WT_EQ_STR(all->d[0].name, "t1");
    WT_EQ_STR(all->d[0].brokers, "a:1");
    WT_EQ_INT(all->d[0].batch_size, 5000);
    WT_EQ_STR(all->d[1].name, "second");
    WT_EQ_INT(all->d[1].batch_size, 10);
    WT_ASSERT(all->d[1].enabled);
    wt_config_free(&cfg);
    /* a mapping is one destination */
    WT_EQ_INT(load("kafka:\n  brokers: a:1\n  topic: t\n", &cfg, &err), 0);
    WT_EQ_INT(wt_kafka_config_parse_all("k.yaml", wt_config_section(&cfg, "kafka"), all, &err), 0);
    WT_EQ_INT(all->n, 1);
    wt_config_free(&cfg);
    free(all);

    static const struct {
        const char *yaml, *msg;
    } bad[] = {
        {"kafka:\n  topic: t\n", "k.yaml:2: kafka.brokers: required"},
        {"kafka:\n  brokers: []\n  topic: t\n", "k.yaml:2: kafka.brokers: required"},
        {"kafka:\n  brokers: a\n  topic: t\n", "k.yaml:2: kafka.brokers: expected HOST:PORT"},
        {"kafka:\n  brokers: a:1\n", "kafka.topic: required"},
        {"kafka:\n  brokers: a:1\n  topic: a/b\n", "k.yaml:3: kafka.topic: a topic name"},
        {"kafka:\n  brokers: a:1\n  topic: t\n  batch_size: 0\n", "k.yaml:4: kafka.batch_size"},
        {"kafka:\n  brokers: a:1\n  topic: t\n  timeout: 10ms\n", "k.yaml:4: kafka.timeout"},
        {"kafka:\n  brokers: a:1\n  topic: t\n  sasl: {username: u, password_file: /p}\n",
         "kafka.sasl: mechanism: required"},
        {"kafka:\n  brokers: a:1\n  topic: t\n  sasl: {mechanism: PLAIN, username: u}\n",
         "kafka.sasl.password_file: required"},
        /* a list: one destination per item, each named in messages by its index */
        {"kafka:\n  - brokers: a:1\n", "k.yaml:2: kafka[0].topic: required"},
        {"kafka:\n  - {brokers: 'a:1', topic: t}\n  - {brokers: 'b:1', topic: t}\n",
         "k.yaml:3: kafka[1]: name \"t\" is taken by kafka[0]"},
        {"kafka: 7\n", "k.yaml:1: kafka: expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* the load runs the registered check (src/cli/sections.c) */
        memset(&err, 0, sizeof err);
        int rc = load(bad[i].yaml, &cfg, &err);
        bool loaded = rc == 0;
        if (loaded)
            rc = wt_kafka_config_parse("k.yaml", wt_config_section(&cfg, "kafka"), kc, &err);
        WT_EQ_INT(rc, -EINVAL);
        WT_CONTAINS(err.msg, bad[i].msg);
        if (loaded)
            wt_config_free(&cfg);
    }
    free(kc);
}
