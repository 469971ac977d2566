/* SPDX-License-Identifier: MIT */
/*
 * Kafka (see kafka.h): the kafka section, the JSON encoder, and one sender thread that reads
 * batches from the store (store/cursor.h), produces one message per timestamp with librdkafka's
 * idempotent producer and moves the cursor by the delivery reports.
 *
 * The delivery reports are served by rd_kafka_poll on the sender thread itself, so the per-batch
 * state they fill needs no lock; only the counters /metrics reads are under k->mu.
 */
#include "serve/kafka.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/topology.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/reading.h"
#include "core/secret.h"
#include "core/yget.h"
#include "serve/http.h"
#include "store/cursor.h"

#ifdef WT_HAVE_KAFKA
#include <librdkafka/rdkafka.h>

#include "alert/notify.h"
#endif

#define MOD "kafka"

/* ---- configuration ------------------------------------------------------------------------ */

static const char *const keys[] = {"brokers",  "topic",   "name",        "client_id", "batch_size",
                                   "deadline", "timeout", "max_backoff", "backfill",  "match",
                                   "tls",      "sasl",    NULL};
static const char *const tls_keys[] = {"ca", "cert", "key", NULL};
static const char *const sasl_keys[] = {"mechanism", "username", "password_file", NULL};
static const char *const mechanisms[] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", NULL};

/* HOST:PORT, the port 1..65535, the host without blanks or commas. */
static bool broker_ok(const char *b)
{
    const char *colon = strrchr(b, ':');
    if (!colon || colon == b || strpbrk(b, " \t\r\n,/"))
        return false;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return colon[1] && !*end && port >= 1 && port <= 65535;
}

static int add_broker(const struct wt_yget *g, const struct wt_ynode *at, const char *path,
                      const char *b, size_t len, struct wt_kafka_config *c, size_t *nb)
{
    char one[256], shown[80];
    while (len && (*b == ' ' || *b == '\t'))
        b++, len--;
    while (len && (b[len - 1] == ' ' || b[len - 1] == '\t'))
        len--;
    if (len >= sizeof one)
        return wt_y_fail(g, at, path, "a broker address is at most %zu characters", sizeof one - 1);
    memcpy(one, b, len);
    one[len] = '\0';
    if (!broker_ok(one)) {
        wt_y_show(one, shown, sizeof shown);
        return wt_y_fail(g, at, path, "expected HOST:PORT (got %s)", shown);
    }
    if (*nb == WT_KAFKA_MAX_BROKERS)
        return wt_y_fail(g, at, path, "at most %d brokers", WT_KAFKA_MAX_BROKERS);
    size_t have = strlen(c->brokers);
    if (have + len + 2 > sizeof c->brokers)
        return wt_y_fail(g, at, path, "the broker list is longer than %zu characters",
                         sizeof c->brokers - 1);
    snprintf(c->brokers + have, sizeof c->brokers - have, "%s%s", have ? "," : "", one);
    (*nb)++;
    return 0;
}

/* brokers: a list of HOST:PORT or one string of them separated by commas. */
static int parse_brokers(const struct wt_yget *g, const struct wt_ynode *m,
                         struct wt_kafka_config *c)
{
    const struct wt_ynode *n = wt_y_get(m, "brokers");
    char q[64];
    size_t nb = 0;
    int rc = 0;
    if (!n || wt_ynode_is_null(n))
        return wt_y_fail(g, n ? n : m, "kafka.brokers", "required (a list of HOST:PORT)");
    if (n->kind == WT_YNODE_SCALAR) {
        const char *s = n->value;
        for (;;) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            rc = add_broker(g, n, "kafka.brokers", s, len, c, &nb);
            if (rc || !comma)
                break;
            s = comma + 1;
        }
        return rc;
    }
    rc = wt_y_seq(g, n, "kafka.brokers");
    for (size_t i = 0; !rc && i < n->n; i++) {
        const struct wt_ynode *it = n->child[i];
        wt_y_index(q, sizeof q, "kafka.brokers", i);
        if (it->kind != WT_YNODE_SCALAR)
            rc = wt_y_fail(g, it, q, "expected HOST:PORT (got %s)", wt_ynode_kind_name(it->kind));
        else
            rc = add_broker(g, it, q, it->value, strlen(it->value), c, &nb);
    }
    if (!rc && !nb)
        rc = wt_y_fail(g, n, "kafka.brokers", "required (a list of HOST:PORT)");
    return rc;
}

static bool topic_ok(const char *t)
{
    if (!*t || strcmp(t, ".") == 0 || strcmp(t, "..") == 0)
        return false;
    for (; *t; t++)
        if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
              *t == '.' || *t == '_' || *t == '-'))
            return false;
    return true;
}

static int parse_section(const struct wt_yget *g, const struct wt_ynode *m,
                         struct wt_kafka_config *c)
{
    const char *path = "kafka";
    char p[64], q[80];
    const struct wt_ynode *n;
    int rc = wt_y_map(g, m, path, keys);
    if (!rc)
        rc = wt_y_keys(g, m, path, keys);
    if (!rc)
        rc = parse_brokers(g, m, c);
    if (!rc)
        rc = wt_y_string(g, m, path, "topic", true, c->topic, sizeof c->topic);
    if (!rc && !topic_ok(c->topic)) {
        char shown[80];
        wt_y_show(c->topic, shown, sizeof shown);
        rc = wt_y_fail(g, wt_y_get(m, "topic"), "kafka.topic",
                       "a topic name holds letters, digits, '.', '_' and '-' (got %s)", shown);
    }
    if (!rc)
        rc = wt_y_string(g, m, path, "name", false, c->name, sizeof c->name);
    if (!rc && !c->name[0])
        snprintf(c->name, sizeof c->name, "%s", c->topic);
    if (!rc)
        rc = wt_y_string(g, m, path, "client_id", false, c->client_id, sizeof c->client_id);
    if (!rc)
        rc = wt_y_int(g, m, path, "batch_size", 1, 100000, &c->batch_size);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "deadline", false, 100 * WT_Y_MS, 3600 * WT_Y_S,
                              "the sender reads the store once per deadline at most; under "
                              "100ms it spins, over an hour the topic lags that far",
                              &c->deadline_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "timeout", false, WT_Y_S, 3600 * WT_Y_S,
                              "librdkafka retries a message this long before its delivery "
                              "fails; under 1s a broker's leader election fails it",
                              &c->timeout_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "max_backoff", false, 100 * WT_Y_MS, 3600 * WT_Y_S,
                              "resending failed messages more often than every 100ms hammers "
                              "the brokers; over an hour a recovered one waits that long",
                              &c->max_backoff_ns);
    if (!rc)
        rc = wt_y_duration(g, m, path, "backfill", true, &c->backfill_ns);
    if (!rc && (n = wt_y_get(m, "match")) != NULL) {
        wt_y_path(p, sizeof p, path, "match");
        rc = wt_y_seq(g, n, p);
        for (size_t i = 0; !rc && i < n->n; i++) {
            const struct wt_ynode *it = n->child[i];
            char why[160];
            wt_y_index(q, sizeof q, p, i);
            if (c->nsel == WT_RW_MAX_SELECTORS)
                rc = wt_y_fail(g, it, q, "at most %d selectors", WT_RW_MAX_SELECTORS);
            else if (it->kind != WT_YNODE_SCALAR)
                rc = wt_y_fail(g, it, q, "expected a selector such as 'wattage_gpu_*' (got %s)",
                               wt_ynode_kind_name(it->kind));
            else if (wt_remote_write_selector_parse(it->value, &c->sel[c->nsel], why, sizeof why))
                rc = wt_y_fail(g, it, q, "%s", why);
            else
                c->nsel++;
        }
    }
    if (!rc && (n = wt_y_get(m, "tls")) != NULL) {
        wt_y_path(p, sizeof p, path, "tls");
        c->tls = true;
        rc = wt_y_map(g, n, p, tls_keys);
        if (!rc)
            rc = wt_y_keys(g, n, p, tls_keys);
        if (!rc)
            rc = wt_y_string(g, n, p, "ca", false, c->tls_ca, sizeof c->tls_ca);
        if (!rc)
            rc = wt_y_string(g, n, p, "cert", false, c->tls_cert, sizeof c->tls_cert);
        if (!rc)
            rc = wt_y_string(g, n, p, "key", false, c->tls_key, sizeof c->tls_key);
        if (!rc && !c->tls_cert[0] != !c->tls_key[0])
            rc = wt_y_fail(g, n, p, "cert and key go together");
    }
    if (!rc && (n = wt_y_get(m, "sasl")) != NULL) {
        int mech = 0;
        wt_y_path(p, sizeof p, path, "sasl");
        rc = wt_y_map(g, n, p, sasl_keys);
        if (!rc)
            rc = wt_y_keys(g, n, p, sasl_keys);
        if (!rc && !wt_y_get(n, "mechanism"))
            rc = wt_y_fail(g, n, p, "mechanism: required (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)");
        if (!rc)
            rc = wt_y_enum(g, n, p, "mechanism", mechanisms, &mech);
        if (!rc)
            c->sasl = (enum wt_kafka_sasl)(WT_KAFKA_PLAIN + mech);
        if (!rc)
            rc = wt_y_string(g, n, p, "username", true, c->username, sizeof c->username);
        if (!rc)
            rc = wt_y_string(g, n, p, "password_file", true, c->password_file,
                             sizeof c->password_file);
    }
    return rc;
}

int wt_kafka_config_parse(const char *file, const struct wt_ynode *node,
                          struct wt_kafka_config *out, struct wt_err *err)
{
    struct wt_yget g = {.file = file, .err = err};
    memset(out, 0, sizeof *out);
    out->batch_size = 5000;
    out->deadline_ns = WT_NS_PER_S;
    out->timeout_ns = 60 * WT_NS_PER_S;
    out->max_backoff_ns = 30 * WT_NS_PER_S;
    out->backfill_ns = 3600 * WT_NS_PER_S;
    snprintf(out->client_id, sizeof out->client_id, "wattage");
    if (!node || wt_ynode_is_null(node))
        return 0;
    out->enabled = true;
    return parse_section(&g, node, out);
}

int wt_kafka_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_kafka_config *c = malloc(sizeof *c);
    if (!c)
        return wt_err_set(err, "%s: kafka: out of memory", file);
    int rc = wt_kafka_config_parse(file, node, c, err);
    free(c);
    return rc;
}

int wt_kafka_check_secrets(const struct wt_config *cfg, struct wt_err *err)
{
    struct wt_kafka_config *c = malloc(sizeof *c);
    if (!c)
        return -ENOMEM;
    int rc = wt_kafka_config_parse(wt_config_file(cfg), wt_config_section(cfg, "kafka"), c, err);
    if (!rc && c->enabled && c->sasl)
        rc = wt_check_secret_file("kafka.sasl.password_file", c->password_file, err);
    free(c);
    return rc;
}

/* ---- encoder ------------------------------------------------------------------------------ */

struct wt_kafka_encoder {
    char node[128];
    char *head; /* {"node":"...","time":" */
    size_t headlen;
    char *frags; /* each series' {"metric":..,"labels":{..},"value": */
    size_t nfrags, capfrags;
    struct frag {
        size_t off, len;
    } * frag;
    size_t nseries, capseries;
    struct order {
        int64_t t_ns;
        uint32_t series, i;
    } * order; /* the batch's samples in (time, series) order */
    size_t caporder;
    char *buf;
    size_t nbuf, capbuf;
    struct wt_kafka_msg *msgs;
    size_t capmsgs;
};

static int grow(void **p, size_t *cap, size_t want, size_t elem)
{
    if (want <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < want)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

/* Appends s as a JSON string body (no quotes) to the arena (*a, *n, *cap). */
static int put_json_str(char **a, size_t *n, size_t *cap, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        char esc[8];
        size_t l = 1;
        esc[0] = (char)ch;
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            l = 2;
        } else if (ch < 0x20) {
            l = (size_t)snprintf(esc, sizeof esc, "\\u%04x", ch);
        }
        if (grow((void **)a, cap, *n + l + 1, 1))
            return -ENOMEM;
        memcpy(*a + *n, esc, l);
        *n += l;
    }
    return 0;
}

static int put(char **a, size_t *n, size_t *cap, const char *s, size_t l)
{
    if (grow((void **)a, cap, *n + l + 1, 1))
        return -ENOMEM;
    memcpy(*a + *n, s, l);
    *n += l;
    return 0;
}

int wt_kafka_encoder_open(const char *node, struct wt_kafka_encoder **out)
{
    struct wt_kafka_encoder *e = calloc(1, sizeof *e);
    size_t cap = 0;
    *out = NULL;
    if (!e)
        return -ENOMEM;
    snprintf(e->node, sizeof e->node, "%s", node);
    if (put(&e->head, &e->headlen, &cap, "{\"node\":\"", 9) ||
        put_json_str(&e->head, &e->headlen, &cap, e->node) ||
        put(&e->head, &e->headlen, &cap, "\",\"time\":\"", 10)) {
        wt_kafka_encoder_close(e);
        return -ENOMEM;
    }
    *out = e;
    return 0;
}

void wt_kafka_encoder_close(struct wt_kafka_encoder *e)
{
    if (!e)
        return;
    free(e->head);
    free(e->frags);
    free(e->frag);
    free(e->order);
    free(e->buf);
    free(e->msgs);
    free(e);
}

const char *wt_kafka_encoder_node(const struct wt_kafka_encoder *e)
{
    return e->node;
}

int wt_kafka_encoder_add(struct wt_kafka_encoder *e, const char *metric, const char *labels)
{
    char key[128], val[WT_LABELS_LEN];
    size_t pos = 0, start = e->nfrags;
    int r;
    if (grow((void **)&e->frag, &e->capseries, e->nseries + 1, sizeof *e->frag))
        return -ENOMEM;
    if (put(&e->frags, &e->nfrags, &e->capfrags, "{\"metric\":\"", 11) ||
        put_json_str(&e->frags, &e->nfrags, &e->capfrags, metric) ||
        put(&e->frags, &e->nfrags, &e->capfrags, "\",\"labels\":{", 12))
        return -ENOMEM;
    bool first = true;
    while ((r = wt_labels_next(labels, &pos, key, sizeof key, val, sizeof val)) == 1) {
        if (put(&e->frags, &e->nfrags, &e->capfrags, first ? "\"" : ",\"", first ? 1 : 2) ||
            put_json_str(&e->frags, &e->nfrags, &e->capfrags, key) ||
            put(&e->frags, &e->nfrags, &e->capfrags, "\":\"", 3) ||
            put_json_str(&e->frags, &e->nfrags, &e->capfrags, val) ||
            put(&e->frags, &e->nfrags, &e->capfrags, "\"", 1))
            return -ENOMEM;
        first = false;
    }
    if (r < 0) {
        e->nfrags = start;
        return -EINVAL;
    }
    if (put(&e->frags, &e->nfrags, &e->capfrags, "},\"value\":", 10))
        return -ENOMEM;
    e->frag[e->nseries].off = start;
    e->frag[e->nseries].len = e->nfrags - start;
    return (int)e->nseries++;
}

static int cmp_order(const void *a, const void *b)
{
    const struct order *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    return x->series < y->series ? -1 : x->series > y->series;
}

/* The shortest of %.15g / %.17g that reads back as v; null when not finite. */
static int fmt_value(double v, char *out, size_t n)
{
    if (!isfinite(v))
        return snprintf(out, n, "null");
    int l = snprintf(out, n, "%.15g", v);
    if (strtod(out, NULL) != v)
        l = snprintf(out, n, "%.17g", v);
    return l;
}

int wt_kafka_encode(struct wt_kafka_encoder *e, const struct wt_cursor_batch *b, const char **buf,
                    const struct wt_kafka_msg **msgs, size_t *n)
{
    size_t nm = 0;
    *n = 0;
    e->nbuf = 0;
    if (grow((void **)&e->order, &e->caporder, b->n ? b->n : 1, sizeof *e->order))
        return -ENOMEM;
    for (size_t i = 0; i < b->n; i++) {
        if (b->s[i].series >= e->nseries)
            return -EINVAL;
        e->order[i] = (struct order){b->s[i].t_ns, b->s[i].series, (uint32_t)i};
    }
    /* a batch is grouped by series: messages go by time */
    qsort(e->order, b->n, sizeof *e->order, cmp_order);
    for (size_t i = 0; i < b->n;) {
        int64_t t = e->order[i].t_ns;
        char tbuf[48], vbuf[40];
        if (grow((void **)&e->msgs, &e->capmsgs, nm + 1, sizeof *e->msgs))
            return -ENOMEM;
        struct wt_kafka_msg *m = &e->msgs[nm++];
        m->off = e->nbuf;
        m->t_ns = t;
        m->samples = 0;
        int64_t sec = t / WT_NS_PER_S, ns = t % WT_NS_PER_S;
        if (ns < 0)
            sec--, ns += WT_NS_PER_S;
        int tl = snprintf(tbuf, sizeof tbuf, "%" PRId64 ".%09" PRId64 "\",\"readings\":[", sec, ns);
        if (put(&e->buf, &e->nbuf, &e->capbuf, e->head, e->headlen) ||
            put(&e->buf, &e->nbuf, &e->capbuf, tbuf, (size_t)tl))
            return -ENOMEM;
        for (; i < b->n && e->order[i].t_ns == t && m->samples < WT_KAFKA_MSG_READINGS; i++) {
            const struct wt_cursor_sample *s = &b->s[e->order[i].i];
            int vl = fmt_value(s->v, vbuf, sizeof vbuf);
            if ((m->samples && put(&e->buf, &e->nbuf, &e->capbuf, ",", 1)) ||
                put(&e->buf, &e->nbuf, &e->capbuf, e->frags + e->frag[s->series].off,
                    e->frag[s->series].len) ||
                put(&e->buf, &e->nbuf, &e->capbuf, vbuf, (size_t)vl) ||
                put(&e->buf, &e->nbuf, &e->capbuf, "}", 1))
                return -ENOMEM;
            m->samples++;
        }
        if (put(&e->buf, &e->nbuf, &e->capbuf, "]}", 2))
            return -ENOMEM;
        m->len = e->nbuf - m->off;
    }
    *buf = e->buf;
    *msgs = e->msgs;
    *n = nm;
    return 0;
}

#ifdef WT_HAVE_KAFKA

/* ---- sender ------------------------------------------------------------------------------- */

#define STOP_GRACE_NS (5 * WT_NS_PER_S) /* a clean stop waits this long for reports in flight */

struct wt_kafka {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool on;
    struct wt_kafka_config cf;
    char cursor_name[272];
    struct wt_cursor *cur;
    struct wt_kafka_encoder *enc;
    rd_kafka_t *rk;
    pthread_t thread;
    bool started;
    struct wt_kafka_stats st; /* under mu */
    struct wt_ratelimit rl_fail, rl_err;
    /* the batch in flight, filled by the delivery reports (sender thread only) */
    rd_kafka_resp_err_t *res;
    bool *maybe; /* its report said "possibly persisted" */
    size_t capres, nres, outstanding;
    bool fatal; /* the idempotent producer raised a fatal error: recreate it */
    bool failing;
    char password[512];
};

static bool wait_or_stop(struct wt_kafka *k, int64_t ns)
{
    int64_t until = wt_now_mono_ns() + ns;
    pthread_mutex_lock(&k->mu);
    while (!k->stop) {
        if (wt_now_mono_ns() >= until)
            break;
        struct timespec ts = {.tv_sec = until / WT_NS_PER_S, .tv_nsec = until % WT_NS_PER_S};
        pthread_cond_timedwait(&k->cv, &k->mu, &ts);
    }
    bool stop = k->stop;
    pthread_mutex_unlock(&k->mu);
    return stop;
}

static bool stopping(struct wt_kafka *k)
{
    pthread_mutex_lock(&k->mu);
    bool s = k->stop;
    pthread_mutex_unlock(&k->mu);
    return s;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct wt_kafka *k = opaque;
    size_t i = (size_t)(uintptr_t)m->_private;
    (void)rk;
    if (!k || i >= k->nres)
        return;
    k->res[i] = m->err;
    k->maybe[i] = m->err && rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED;
    if (k->outstanding)
        k->outstanding--;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct wt_kafka *k = opaque;
    uint64_t sup;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_fatal_error(rk, why, sizeof why);
        wt_error(MOD, "destination %s: the producer failed for good (%s); creating a new one",
                 k->cf.name, why);
        k->fatal = true;
        return;
    }
    if (wt_ratelimit_ok(&k->rl_err, wt_now_mono_ns(), &sup))
        wt_warn(MOD, "destination %s: brokers=%s: %s (%s) suppressed=%" PRIu64, k->cf.name,
                k->cf.brokers, reason, rd_kafka_err2name((rd_kafka_resp_err_t)err), sup);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)level;
    wt_debug(MOD, "librdkafka %s: %s", fac, buf);
}

static int set(rd_kafka_conf_t *c, const char *key, const char *val, struct wt_err *err)
{
    char why[256];
    if (rd_kafka_conf_set(c, key, val, why, sizeof why) != RD_KAFKA_CONF_OK)
        return wt_err_set(err, "kafka: %s: %s", key, why);
    return 0;
}

static int make_producer(struct wt_kafka *k, struct wt_err *err)
{
    const struct wt_kafka_config *c = &k->cf;
    char v[32], why[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    int rc = 0;
    if (!conf)
        return -ENOMEM;
    static const char *const mech_names[] = {"", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};
    int64_t backoff_ms = c->max_backoff_ns / 1000000;
    rc = set(conf, "bootstrap.servers", c->brokers, err);
    if (!rc)
        rc = set(conf, "client.id", c->client_id, err);
    if (!rc)
        rc = set(conf, "enable.idempotence", "true", err);
    if (!rc)
        rc = set(conf, "acks", "all", err);
    snprintf(v, sizeof v, "%" PRId64, c->timeout_ns / 1000000);
    if (!rc)
        rc = set(conf, "message.timeout.ms", v, err);
    snprintf(v, sizeof v, "%" PRId64, backoff_ms > 10000 ? 10000 : backoff_ms);
    if (!rc)
        rc = set(conf, "reconnect.backoff.max.ms", v, err);
    if (!rc)
        rc = set(conf, "linger.ms", "5", err);
    if (!rc)
        rc = set(conf, "security.protocol",
                 c->tls ? (c->sasl ? "SASL_SSL" : "SSL")
                        : (c->sasl ? "SASL_PLAINTEXT" : "PLAINTEXT"),
                 err);
    if (!rc && c->tls_ca[0])
        rc = set(conf, "ssl.ca.location", c->tls_ca, err);
    if (!rc && c->tls_cert[0])
        rc = set(conf, "ssl.certificate.location", c->tls_cert, err);
    if (!rc && c->tls_key[0])
        rc = set(conf, "ssl.key.location", c->tls_key, err);
    if (!rc && c->sasl)
        rc = set(conf, "sasl.mechanisms", mech_names[c->sasl], err);
    if (!rc && c->sasl)
        rc = set(conf, "sasl.username", c->username, err);
    if (!rc && c->sasl)
        rc = set(conf, "sasl.password", k->password, err);
    if (rc) {
        rd_kafka_conf_destroy(conf);
        return rc;
    }
    rd_kafka_conf_set_opaque(conf, k);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_log_cb(conf, on_log);
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!k->rk) {
        rd_kafka_conf_destroy(conf);
        return wt_err_set(err, "kafka: cannot create the producer: %s", why);
    }
    k->fatal = false;
    return 0;
}

static void drop_producer(struct wt_kafka *k)
{
    if (!k->rk)
        return;
    k->nres = 0; /* reports served from here on are ignored */
    rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(k->rk, 0);
    rd_kafka_destroy(k->rk);
    k->rk = NULL;
}

/* The pending count and its age into the stats, when due (store/cursor.h paces it). */
static void count_pending(struct wt_kafka *k, bool force)
{
    uint64_t n;
    double lag;
    if (wt_cursor_pending_paced(k->cur, force, &n, &lag) != 1)
        return;
    pthread_mutex_lock(&k->mu);
    k->st.pending = n;
    k->st.lag_s = lag;
    pthread_mutex_unlock(&k->mu);
}

static bool keep_series(void *ctx, const char *metric, const char *labels)
{
    const struct wt_kafka *k = ctx;
    return wt_remote_write_match(k->cf.sel, k->cf.nsel, metric, labels);
}

static int refresh(struct wt_kafka *k)
{
    int added = wt_cursor_refresh(k->cur, keep_series, k);
    if (added < 0)
        return added;
    size_t n = wt_cursor_nseries(k->cur);
    for (size_t i = n - (size_t)added; i < n; i++) {
        const struct wt_cursor_series *s = wt_cursor_series_at(k->cur, i);
        int r = wt_kafka_encoder_add(k->enc, s->metric, s->labels);
        if (r == -EINVAL) {
            /* cannot happen with labels the store wrote; sent without labels, indices aligned */
            wt_error(MOD,
                     "destination %s: cannot read the labels of series %s{%s}; sending it "
                     "without them",
                     k->cf.name, s->metric, s->labels);
            r = wt_kafka_encoder_add(k->enc, s->metric, "");
        }
        if (r != (int)i)
            return r < 0 ? r : -EINVAL;
    }
    return 0;
}

/*
 * Produces the messages of one batch and waits for all their reports (a stop waits
 * STOP_GRACE_NS more). Returns how many messages from the first were delivered, in order; *failed
 * is how many reports failed.
 */
static size_t produce_batch(struct wt_kafka *k, const char *buf, const struct wt_kafka_msg *msgs,
                            size_t n, size_t *failed, rd_kafka_resp_err_t *first_err,
                            bool *maybe_dup)
{
    const char *node = wt_kafka_encoder_node(k->enc);
    size_t produced = 0;
    *failed = 0;
    *first_err = RD_KAFKA_RESP_ERR_NO_ERROR;
    *maybe_dup = false;
    if (grow((void **)&k->res, &k->capres, n, sizeof *k->res))
        return 0;
    void *q = realloc(k->maybe, k->capres * sizeof *k->maybe);
    if (!q)
        return 0;
    k->maybe = q;
    k->nres = n;
    k->outstanding = 0;
    for (size_t i = 0; i < n; i++) {
        k->res[i] = RD_KAFKA_RESP_ERR__IN_PROGRESS;
        k->maybe[i] = false;
    }
    while (produced < n && !stopping(k)) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            k->rk, RD_KAFKA_V_TOPIC(k->cf.topic), RD_KAFKA_V_KEY(node, strlen(node)),
            RD_KAFKA_V_VALUE((void *)(buf + msgs[produced].off), msgs[produced].len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_TIMESTAMP(msgs[produced].t_ns / 1000000),
            RD_KAFKA_V_OPAQUE((void *)(uintptr_t)produced), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(k->rk, 100);
            continue;
        }
        if (e) {
            k->res[produced] = e;
            (*failed)++;
            break;
        }
        k->outstanding++;
        produced++;
        rd_kafka_poll(k->rk, 0);
    }
    int64_t grace = 0;
    while (k->outstanding && !k->fatal) {
        if (stopping(k)) {
            int64_t now = wt_now_mono_ns();
            if (!grace)
                grace = now + STOP_GRACE_NS;
            else if (now >= grace)
                break;
        }
        rd_kafka_poll(k->rk, 100);
        count_pending(k, false);
    }
    size_t ok = 0;
    while (ok < n && k->res[ok] == RD_KAFKA_RESP_ERR_NO_ERROR)
        ok++;
    /* a tick split over messages is acknowledged whole or not at all */
    while (ok > 0 && ok < n && msgs[ok - 1].t_ns == msgs[ok].t_ns)
        ok--;
    *failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (k->res[i] == RD_KAFKA_RESP_ERR_NO_ERROR || k->res[i] == RD_KAFKA_RESP_ERR__IN_PROGRESS)
            continue; /* delivered, or not reported (a stop): sent again at the next start */
        if (!(*failed)++)
            *first_err = k->res[i];
        *maybe_dup |= k->maybe[i];
    }
    k->nres = 0;
    return ok;
}

/* Acknowledges the samples of b at or before t_ns (the messages delivered). */
static int ack_through(struct wt_kafka *k, const struct wt_cursor_batch *b, int64_t t_ns,
                       struct wt_cursor_batch *part)
{
    if (grow((void **)&part->s, &part->cap, b->n ? b->n : 1, sizeof *part->s))
        return -ENOMEM;
    part->n = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->s[i].t_ns <= t_ns)
            part->s[part->n++] = b->s[i];
    return wt_cursor_ack(k->cur, part);
}

static void *sender_main(void *arg)
{
    struct wt_kafka *k = arg;
    struct wt_cursor_batch b = {0}, part = {0};
    struct wt_ratelimit rl_store = {.interval_ns = 60 * WT_NS_PER_S};
    struct wt_err err = {{0}};
    int failures = 0;
    uint64_t sup;
    pthread_setname_np(pthread_self(), "wt-kafka");
    while (!stopping(k)) {
        bool more = false;
        if (k->fatal || !k->rk) {
            drop_producer(k);
            if (make_producer(k, &err) != 0) {
                wt_error(MOD, "destination %s: %s", k->cf.name, err.msg);
                if (wait_or_stop(k, k->cf.max_backoff_ns))
                    break;
                continue;
            }
        }
        int rc = refresh(k);
        if (rc == 0)
            rc = wt_cursor_next(k->cur, (size_t)k->cf.batch_size, &b, &more);
        count_pending(k, false);
        if (rc) {
            if (wt_ratelimit_ok(&rl_store, wt_now_mono_ns(), &sup))
                wt_error(MOD, "destination %s: cannot read the store (%s); trying again",
                         k->cf.name, strerror(-rc));
            if (wait_or_stop(k, k->cf.deadline_ns))
                break;
            continue;
        }
        bool failed_now = false;
        if (b.n) {
            const char *buf;
            const struct wt_kafka_msg *msgs;
            size_t n, nfail;
            rd_kafka_resp_err_t why;
            bool maybe;
            rc = wt_kafka_encode(k->enc, &b, &buf, &msgs, &n);
            if (rc) {
                wt_error(MOD, "destination %s: cannot encode %zu readings (%s)", k->cf.name, b.n,
                         strerror(-rc));
                failed_now = true;
            } else {
                size_t ok = produce_batch(k, buf, msgs, n, &nfail, &why, &maybe);
                uint64_t samples = 0;
                for (size_t i = 0; i < ok; i++)
                    samples += msgs[i].samples;
                if (ok && ack_through(k, &b, msgs[ok - 1].t_ns, &part) != 0)
                    wt_error(MOD,
                             "destination %s: cannot store the cursor (the next start sends "
                             "these %zu messages again)",
                             k->cf.name, ok);
                pthread_mutex_lock(&k->mu);
                k->st.messages_sent += ok;
                k->st.samples_sent += samples;
                k->st.messages_failed += nfail;
                pthread_mutex_unlock(&k->mu);
                if (nfail) {
                    failed_now = true;
                    failures++;
                    int64_t wait = wt_notify_backoff(failures, k->cf.max_backoff_ns);
                    if (wt_ratelimit_ok(&k->rl_fail, wt_now_mono_ns(), &sup))
                        wt_warn(MOD,
                                "destination %s: %zu of %zu messages not delivered (%s: %s%s); "
                                "sending them again from the store in %.1f s, brokers=%s "
                                "topic=%s suppressed=%" PRIu64,
                                k->cf.name, nfail, n, rd_kafka_err2name(why), rd_kafka_err2str(why),
                                maybe ? "; some were possibly persisted and may arrive twice" : "",
                                (double)wait / WT_NS_PER_S, k->cf.brokers, k->cf.topic, sup);
                    k->failing = true;
                    count_pending(k, false);
                    if (wait_or_stop(k, wait))
                        break;
                    continue;
                }
                if (k->failing && ok) {
                    wt_info(MOD, "destination %s: delivering again after %d failed attempts",
                            k->cf.name, failures);
                    k->failing = false;
                }
                failures = 0;
            }
        }
        if (!more || failed_now) {
            count_pending(k, true);
            if (wait_or_stop(k, k->cf.deadline_ns))
                break;
        }
    }
    wt_cursor_batch_free(&b);
    wt_cursor_batch_free(&part);
    return NULL;
}

/* ---- /metrics ----------------------------------------------------------------------------- */

static const struct {
    const char *name, *help;
    enum wt_metric_type type;
} fams[5] = {
    {"wattage_kafka_messages_sent_total",
     "Messages the brokers acknowledged (delivery report without error), since the daemon started",
     WT_COUNTER},
    {"wattage_kafka_messages_failed_total",
     "Messages whose delivery report failed (sent again from the store after a backoff)",
     WT_COUNTER},
    {"wattage_kafka_samples_sent_total", "Readings in the messages the brokers acknowledged",
     WT_COUNTER},
    {"wattage_kafka_pending_samples", "Stored readings not yet delivered to the topic", WT_GAUGE},
    {"wattage_kafka_lag_seconds",
     "Age of the oldest stored reading not yet delivered to the topic (0 when none)", WT_GAUGE},
};

static int family(struct wt_kafka *k, int i, struct wt_expo_family *fam)
{
    memset(fam, 0, sizeof *fam);
    fam->name = fams[i].name;
    fam->help = fams[i].help;
    fam->type = fams[i].type;
    fam->s = calloc(1, sizeof *fam->s);
    if (!fam->s)
        return -ENOMEM;
    pthread_mutex_lock(&k->mu);
    const struct wt_kafka_stats *s = &k->st;
    double v = i == 0   ? (double)s->messages_sent
               : i == 1 ? (double)s->messages_failed
               : i == 2 ? (double)s->samples_sent
               : i == 3 ? (double)s->pending
                        : s->lag_s;
    pthread_mutex_unlock(&k->mu);
    if (wt_labels(fam->s[0].labels, sizeof fam->s[0].labels, "endpoint", k->cf.name, NULL) == 0)
        fam->s[fam->n++].value = v;
    return 0;
}

static int fam_sent(void *ctx, struct wt_expo_family *f)
{
    return family(ctx, 0, f);
}
static int fam_failed(void *ctx, struct wt_expo_family *f)
{
    return family(ctx, 1, f);
}
static int fam_samples(void *ctx, struct wt_expo_family *f)
{
    return family(ctx, 2, f);
}
static int fam_pending(void *ctx, struct wt_expo_family *f)
{
    return family(ctx, 3, f);
}
static int fam_lag(void *ctx, struct wt_expo_family *f)
{
    return family(ctx, 4, f);
}

int wt_kafka_stats(struct wt_kafka *k, struct wt_kafka_stats *out)
{
    if (!k || !k->on)
        return -ENOENT;
    pthread_mutex_lock(&k->mu);
    *out = k->st;
    pthread_mutex_unlock(&k->mu);
    return 0;
}

/* ---- life cycle --------------------------------------------------------------------------- */

bool wt_kafka_built_in(void)
{
    return true;
}

int wt_kafka_open(const struct wt_config *cfg, struct wt_http *http, struct wt_kafka **out,
                  struct wt_err *err)
{
    struct wt_kafka *k = calloc(1, sizeof *k);
    struct wt_topology *topo = NULL;
    pthread_condattr_t ca;
    int rc;
    *out = NULL;
    if (!k)
        return -ENOMEM;
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    k->rl_fail.interval_ns = 30 * WT_NS_PER_S;
    k->rl_err.interval_ns = 30 * WT_NS_PER_S;
    rc = wt_kafka_config_parse(wt_config_file(cfg), wt_config_section(cfg, "kafka"), &k->cf, err);
    if (rc || !k->cf.enabled)
        goto done;
    k->on = true;
    rc = wt_topology_load(cfg, &topo, err);
    if (rc)
        goto done;
    if (k->cf.sasl) {
        rc = wt_remote_write_read_secret("kafka.sasl.password_file", k->cf.password_file,
                                         k->password, sizeof k->password, err);
        if (rc)
            goto done;
    }
    snprintf(k->cursor_name, sizeof k->cursor_name, "kafka:%s", k->cf.name);
    rc = wt_cursor_open(cfg->store.path, k->cursor_name, wt_now_real_ns() - k->cf.backfill_ns,
                        &k->cur, err);
    if (!rc)
        rc = wt_kafka_encoder_open(topo->node, &k->enc);
    if (!rc)
        rc = make_producer(k, err);
    if (rc) {
        char msg[WT_ERR_LEN];
        snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : strerror(-rc));
        wt_err_set(err, "kafka (%s): %s", k->cf.name, msg);
        goto done;
    }
    if (http && (wt_http_add_family(http, fam_sent, k) || wt_http_add_family(http, fam_failed, k) ||
                 wt_http_add_family(http, fam_samples, k) ||
                 wt_http_add_family(http, fam_pending, k) || wt_http_add_family(http, fam_lag, k)))
        wt_warn(MOD, "no room on /metrics for the wattage_kafka_* families");
    rc = -pthread_create(&k->thread, NULL, sender_main, k);
    if (rc) {
        wt_err_set(err, "kafka: cannot start the sender thread (%s)", strerror(-rc));
        goto done;
    }
    k->started = true;
    wt_info(MOD,
            "destination %s brokers=%s topic=%s key=%s batch_size=%" PRId64 " series=%s "
            "librdkafka=%s",
            k->cf.name, k->cf.brokers, k->cf.topic, topo->node, k->cf.batch_size,
            k->cf.nsel ? "matched" : "all", rd_kafka_version_str());
done:
    free(topo);
    if (rc) {
        wt_kafka_close(k);
        return rc;
    }
    *out = k;
    return 0;
}

void wt_kafka_close(struct wt_kafka *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    if (k->started)
        pthread_join(k->thread, NULL);
    drop_producer(k);
    wt_cursor_close(k->cur);
    wt_kafka_encoder_close(k->enc);
    explicit_bzero(k->password, sizeof k->password);
    free(k->res);
    free(k->maybe);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k);
}

#else /* built without librdkafka */

struct wt_kafka {
    int unused;
};

bool wt_kafka_built_in(void)
{
    return false;
}

int wt_kafka_open(const struct wt_config *cfg, struct wt_http *http, struct wt_kafka **out,
                  struct wt_err *err)
{
    struct wt_kafka_config c;
    (void)http;
    *out = NULL;
    int rc = wt_kafka_config_parse(wt_config_file(cfg), wt_config_section(cfg, "kafka"), &c, err);
    if (rc)
        return rc;
    if (c.enabled)
        return wt_err_set(err, "kafka: not built in (librdkafka-dev was missing at build time); "
                               "remove the kafka section or rebuild with it");
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void wt_kafka_close(struct wt_kafka *k)
{
    free(k);
}

int wt_kafka_stats(struct wt_kafka *k, struct wt_kafka_stats *out)
{
    (void)k;
    (void)out;
    return -ENOENT;
}

#endif
