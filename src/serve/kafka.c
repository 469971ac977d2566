/* SPDX-License-Identifier: MIT */
/*
 * Kafka (see kafka.h): the kafka section, the JSON encoder, and the transport of one stream of
 * the shared sender (serve/sender.h, whose thread reads the batches from the store): one
 * message per timestamp produced with librdkafka's idempotent producer, the cursor moved by the
 * delivery reports.
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

#include "core/clock.h"
#include "core/log.h"
#include "core/reading.h"
#include "core/secret.h"
#include "core/yget.h"
#include "serve/http.h"
#include "serve/sender.h"
#include "store/cursor.h"

#ifdef WT_HAVE_KAFKA
#include "serve/kafka_lib.h"
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
static int parse_brokers(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                         struct wt_kafka_config *c)
{
    const struct wt_ynode *n = wt_y_get(m, "brokers");
    char q[96], bp[80];
    wt_y_path(bp, sizeof bp, path, "brokers");
    size_t nb = 0;
    int rc = 0;
    if (!n || wt_ynode_is_null(n))
        return wt_y_fail(g, n ? n : m, bp, "required (a list of HOST:PORT)");
    if (n->kind == WT_YNODE_SCALAR) {
        const char *s = n->value;
        for (;;) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            rc = add_broker(g, n, bp, s, len, c, &nb);
            if (rc || !comma)
                break;
            s = comma + 1;
        }
        return rc;
    }
    rc = wt_y_seq(g, n, bp);
    for (size_t i = 0; !rc && i < n->n; i++) {
        const struct wt_ynode *it = n->child[i];
        wt_y_index(q, sizeof q, bp, i);
        if (it->kind != WT_YNODE_SCALAR)
            rc = wt_y_fail(g, it, q, "expected HOST:PORT (got %s)", wt_ynode_kind_name(it->kind));
        else
            rc = add_broker(g, it, q, it->value, strlen(it->value), c, &nb);
    }
    if (!rc && !nb)
        rc = wt_y_fail(g, n, bp, "required (a list of HOST:PORT)");
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

static int parse_section(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                         struct wt_kafka_config *c)
{
    char p[80];
    const struct wt_ynode *n;
    int rc = wt_y_map(g, m, path, keys);
    if (!rc)
        rc = wt_y_keys(g, m, path, keys);
    if (!rc)
        rc = parse_brokers(g, m, path, c);
    if (!rc)
        rc = wt_y_string(g, m, path, "topic", true, c->topic, sizeof c->topic);
    if (!rc && !topic_ok(c->topic)) {
        char shown[80];
        wt_y_show(c->topic, shown, sizeof shown);
        rc = wt_y_fail(g, wt_y_get(m, "topic"), wt_y_path(p, sizeof p, path, "topic"),
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
    if (!rc)
        rc = wt_remote_write_match_parse(g, m, path, c->sel, &c->nsel);
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

static void defaults(struct wt_kafka_config *out)
{
    memset(out, 0, sizeof *out);
    out->batch_size = 5000;
    out->deadline_ns = WT_NS_PER_S;
    out->timeout_ns = 60 * WT_NS_PER_S;
    out->max_backoff_ns = 30 * WT_NS_PER_S;
    out->backfill_ns = 3600 * WT_NS_PER_S;
    snprintf(out->client_id, sizeof out->client_id, "wattage");
}

int wt_kafka_config_parse(const char *file, const struct wt_ynode *node,
                          struct wt_kafka_config *out, struct wt_err *err)
{
    struct wt_yget g = {.file = file, .err = err};
    defaults(out);
    if (!node || wt_ynode_is_null(node))
        return 0;
    out->enabled = true;
    return parse_section(&g, node, "kafka", out);
}

int wt_kafka_config_parse_all(const char *file, const struct wt_ynode *node,
                              struct wt_kafka_configs *out, struct wt_err *err)
{
    struct wt_yget g = {.file = file, .err = err};
    char p[64];
    out->n = 0;
    if (!node || wt_ynode_is_null(node))
        return 0;
    if (node->kind != WT_YNODE_SEQ) {
        int rc = wt_kafka_config_parse(file, node, &out->d[0], err);
        out->n = rc ? 0 : 1;
        return rc;
    }
    for (size_t i = 0; i < node->n; i++) {
        wt_y_index(p, sizeof p, "kafka", i);
        if (out->n == WT_KAFKA_MAX_DESTS)
            return wt_y_fail(&g, node->child[i], p, "at most %d destinations", WT_KAFKA_MAX_DESTS);
        struct wt_kafka_config *c = &out->d[out->n];
        defaults(c);
        c->enabled = true;
        int rc = parse_section(&g, node->child[i], p, c);
        for (size_t k = 0; !rc && k < out->n; k++)
            if (strcmp(out->d[k].name, c->name) == 0)
                rc = wt_y_fail(&g, node->child[i], p,
                               "name \"%s\" is taken by kafka[%zu]: each destination keeps its "
                               "own cursor under its name (set name: to tell them apart)",
                               c->name, k);
        if (rc)
            return rc;
        out->n++;
    }
    if (!out->n)
        return wt_y_fail(&g, node, "kafka", "expected a mapping or a list of destinations");
    return 0;
}

int wt_kafka_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_kafka_configs *c = malloc(sizeof *c);
    if (!c)
        return wt_err_set(err, "%s: kafka: out of memory", file);
    int rc = wt_kafka_config_parse_all(file, node, c, err);
    free(c);
    return rc;
}

int wt_kafka_check_secrets(const struct wt_config *cfg, struct wt_err *err)
{
    struct wt_kafka_configs *c = malloc(sizeof *c);
    char what[80];
    if (!c)
        return -ENOMEM;
    int rc =
        wt_kafka_config_parse_all(wt_config_file(cfg), wt_config_section(cfg, "kafka"), c, err);
    for (size_t i = 0; !rc && i < c->n; i++) {
        if (!c->d[i].sasl)
            continue;
        if (wt_config_section(cfg, "kafka")->kind == WT_YNODE_SEQ)
            snprintf(what, sizeof what, "kafka[%zu].sasl.password_file", i);
        else
            snprintf(what, sizeof what, "kafka.sasl.password_file");
        rc = wt_check_secret_file(what, c->d[i].password_file, err);
    }
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

#define grow wt_sender_grow

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

/* The counters of wt_sender (struct wt_kafka_stats's fields). */
enum { C_MSG_SENT, C_MSG_FAILED, C_SAMPLES_SENT, C_MSG_DROPPED, C_SAMPLES_DROPPED };

/* One destination: its producer and the state of the batch in flight (its thread only). */
struct dest {
    struct wt_kafka_config cf;
    struct wt_sender_dest *d;
    struct wt_kafka_encoder *enc;
    rd_kafka_t *rk;
    struct wt_ratelimit rl_fail, rl_err, rl_drop;
    /* the batch in flight, filled by the delivery reports (served on the sender thread) */
    rd_kafka_resp_err_t *res;
    bool *maybe; /* its report said "possibly persisted" */
    size_t capres, nres, outstanding;
    bool fatal;        /* the idempotent producer raised a fatal error: recreate it */
    bool dropped_once; /* the first drop is logged in full */
    char password[512];
};

/* librdkafka's entry points, loaded by the first destination's setup (kafka_lib.h) */
static const struct wt_rdk *rdk;

/* The handle is the stream's sender: struct wt_kafka is never defined. */
static struct wt_sender *sender(struct wt_kafka *k)
{
    return (struct wt_sender *)k;
}

bool wt_kafka_permanent(int err)
{
    switch ((rd_kafka_resp_err_t)err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
        return true;
    default:
        return false;
    }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct dest *k = opaque;
    size_t i = (size_t)(uintptr_t)m->_private;
    (void)rk;
    if (!k || i >= k->nres)
        return;
    k->res[i] = m->err;
    k->maybe[i] = m->err && rdk->message_status(m) == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED;
    if (k->outstanding)
        k->outstanding--;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct dest *k = opaque;
    uint64_t sup;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rdk->fatal_error(rk, why, sizeof why);
        wt_error(MOD, "destination %s: the producer failed for good (%s); creating a new one",
                 k->cf.name, why);
        k->fatal = true;
        return;
    }
    if (wt_ratelimit_ok(&k->rl_err, wt_now_mono_ns(), &sup))
        wt_warn(MOD, "destination %s: brokers=%s: %s (%s) suppressed=%" PRIu64, k->cf.name,
                k->cf.brokers, reason, rdk->err2name((rd_kafka_resp_err_t)err), sup);
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
    if (rdk->conf_set(c, key, val, why, sizeof why) != RD_KAFKA_CONF_OK)
        return wt_err_set(err, "kafka: %s: %s", key, why);
    return 0;
}

static int make_producer(struct dest *k, struct wt_err *err)
{
    const struct wt_kafka_config *c = &k->cf;
    char v[32], why[256];
    rd_kafka_conf_t *conf = rdk->conf_new();
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
        rdk->conf_destroy(conf);
        return rc;
    }
    rdk->conf_set_opaque(conf, k);
    rdk->conf_set_dr_msg_cb(conf, on_delivery);
    rdk->conf_set_error_cb(conf, on_error);
    rdk->conf_set_log_cb(conf, on_log);
    k->rk = rdk->new_(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!k->rk) {
        rdk->conf_destroy(conf);
        return wt_err_set(err, "kafka: cannot create the producer: %s", why);
    }
    k->fatal = false;
    return 0;
}

static void drop_producer(struct dest *k)
{
    if (!k->rk)
        return;
    k->nres = 0; /* reports served from here on are ignored */
    rdk->purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rdk->poll(k->rk, 0);
    rdk->destroy(k->rk);
    k->rk = NULL;
}

/* Before each round: a producer that failed for good (or never came up) is made again. */
static int prepare(struct wt_sender_dest *d, void *ctx)
{
    struct dest *k = ctx;
    struct wt_err err = {{0}};
    (void)d;
    if (!k->fatal && k->rk)
        return 0;
    drop_producer(k);
    if (make_producer(k, &err) != 0) {
        wt_error(MOD, "destination %s: %s", k->cf.name, err.msg);
        return -EAGAIN;
    }
    return 0;
}

static bool keep_series(void *ctx, const char *metric, const char *labels)
{
    const struct dest *k = ctx;
    return wt_remote_write_match(k->cf.sel, k->cf.nsel, metric, labels);
}

static int add_series(struct wt_sender_dest *d, void *ctx, const struct wt_cursor_series *s,
                      size_t i)
{
    struct dest *k = ctx;
    (void)d;
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
    return 0;
}

/* The outcome of one batch's reports. */
struct outcome {
    size_t ok;      /* messages from the first delivered or dropped, in order */
    size_t failed;  /* reports failed, to be sent again */
    size_t dropped; /* of the first ok: permanent errors */
    uint64_t samples_dropped;
    rd_kafka_resp_err_t first_err, first_drop;
    bool maybe_dup;
};

/*
 * Produces the messages of one batch and waits for all their reports (a stop waits
 * STOP_GRACE_NS more), into *o.
 */
static void produce_batch(struct wt_sender_dest *d, struct dest *k, const char *buf,
                          const struct wt_kafka_msg *msgs, size_t n, struct outcome *o)
{
    const char *node = wt_kafka_encoder_node(k->enc);
    size_t produced = 0;
    memset(o, 0, sizeof *o);
    if (grow((void **)&k->res, &k->capres, n, sizeof *k->res))
        return;
    void *q = realloc(k->maybe, k->capres * sizeof *k->maybe);
    if (!q)
        return;
    k->maybe = q;
    k->nres = n;
    k->outstanding = 0;
    for (size_t i = 0; i < n; i++) {
        k->res[i] = RD_KAFKA_RESP_ERR__IN_PROGRESS;
        k->maybe[i] = false;
    }
    while (produced < n && !wt_sender_stopping(d)) {
        rd_kafka_resp_err_t e =
            rdk->producev(k->rk, RD_KAFKA_V_TOPIC(k->cf.topic), RD_KAFKA_V_KEY(node, strlen(node)),
                          RD_KAFKA_V_VALUE((void *)(buf + msgs[produced].off), msgs[produced].len),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_TIMESTAMP(msgs[produced].t_ns / 1000000),
                          RD_KAFKA_V_OPAQUE((void *)(uintptr_t)produced), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rdk->poll(k->rk, 100);
            continue;
        }
        if (e) {
            k->res[produced++] = e;
            if (!wt_kafka_permanent(e))
                break;
            continue; /* refused for good (too large): dropped below, the rest goes on */
        }
        k->outstanding++;
        produced++;
        rdk->poll(k->rk, 0);
    }
    int64_t grace = 0;
    while (k->outstanding && !k->fatal) {
        if (wt_sender_stopping(d)) {
            int64_t now = wt_now_mono_ns();
            /* a drain at stop had its deadline: the reports still out are not waited for (their
             * messages, if delivered after all, come again at the next start) */
            if (wt_sender_draining(d))
                break;
            if (!grace)
                grace = now + STOP_GRACE_NS;
            else if (now >= grace)
                break;
        }
        rdk->poll(k->rk, 100);
        wt_sender_count_pending(d, false);
    }
    size_t ok = 0;
    while (ok < n && (k->res[ok] == RD_KAFKA_RESP_ERR_NO_ERROR || wt_kafka_permanent(k->res[ok])))
        ok++;
    /* a tick split over messages is acknowledged whole or not at all */
    while (ok > 0 && ok < n && msgs[ok - 1].t_ns == msgs[ok].t_ns)
        ok--;
    for (size_t i = 0; i < n; i++) {
        if (k->res[i] == RD_KAFKA_RESP_ERR_NO_ERROR || k->res[i] == RD_KAFKA_RESP_ERR__IN_PROGRESS)
            continue; /* delivered, or not reported (a stop): sent again at the next start */
        if (wt_kafka_permanent(k->res[i])) {
            if (i < ok) {
                if (!o->dropped++)
                    o->first_drop = k->res[i];
                o->samples_dropped += msgs[i].samples;
            }
            continue;
        }
        if (!o->failed++)
            o->first_err = k->res[i];
        o->maybe_dup |= k->maybe[i];
    }
    o->ok = ok;
    k->nres = 0;
}

static enum wt_send_next send_batch(struct wt_sender_dest *d, void *ctx,
                                    const struct wt_cursor_batch *b)
{
    struct dest *k = ctx;
    const char *buf;
    const struct wt_kafka_msg *msgs;
    size_t n;
    struct outcome o;
    uint64_t sup;
    int rc = wt_kafka_encode(k->enc, b, &buf, &msgs, &n);
    if (rc) {
        wt_error(MOD, "destination %s: cannot encode %zu readings (%s)", k->cf.name, b->n,
                 strerror(-rc));
        return WT_SEND_PAUSE;
    }
    produce_batch(d, k, buf, msgs, n, &o);
    uint64_t samples = 0;
    for (size_t i = 0; i < o.ok; i++)
        samples += msgs[i].samples;
    if (o.ok && wt_sender_ack_through(d, b, msgs[o.ok - 1].t_ns) != 0)
        wt_error(MOD,
                 "destination %s: cannot store the cursor (the next start sends these %zu "
                 "messages again)",
                 k->cf.name, o.ok);
    wt_sender_count(d, C_MSG_SENT, o.ok - o.dropped);
    wt_sender_count(d, C_SAMPLES_SENT, samples - o.samples_dropped);
    wt_sender_count(d, C_MSG_FAILED, o.failed);
    wt_sender_count(d, C_MSG_DROPPED, o.dropped);
    wt_sender_count(d, C_SAMPLES_DROPPED, o.samples_dropped);
    if (o.dropped) {
        /* the first drop in full, then at most one line per 30 s with the count suppressed */
        if (!k->dropped_once || wt_ratelimit_ok(&k->rl_drop, wt_now_mono_ns(), &sup)) {
            if (!k->dropped_once)
                sup = 0;
            wt_error(MOD,
                     "destination %s: the brokers refused %zu messages (%" PRIu64
                     " readings) for good (%s: %s), dropped, not sent again; brokers=%s "
                     "topic=%s suppressed=%" PRIu64,
                     k->cf.name, o.dropped, o.samples_dropped, rdk->err2name(o.first_drop),
                     rdk->err2str(o.first_drop), k->cf.brokers, k->cf.topic, sup);
            if (!k->dropped_once)
                (void)wt_ratelimit_ok(&k->rl_drop, wt_now_mono_ns(), &sup);
            k->dropped_once = true;
        }
    }
    if (o.failed) {
        int64_t wait = wt_sender_failed(d);
        if (wt_ratelimit_ok(&k->rl_fail, wt_now_mono_ns(), &sup))
            wt_warn(MOD,
                    "destination %s: %zu of %zu messages not delivered (%s: %s%s); "
                    "sending them again from the store in %.1f s, brokers=%s "
                    "topic=%s suppressed=%" PRIu64,
                    k->cf.name, o.failed, n, rdk->err2name(o.first_err), rdk->err2str(o.first_err),
                    o.maybe_dup ? "; some were possibly persisted and may arrive twice" : "",
                    (double)wait / WT_NS_PER_S, k->cf.brokers, k->cf.topic, sup);
        wt_sender_count_pending(d, false);
        wt_sender_wait(d, wait);
        return WT_SEND_AGAIN;
    }
    if (o.ok)
        wt_sender_delivered(d, true);
    return WT_SEND_DONE;
}

static const struct wt_sender_ops kafka_ops = {
    .prepare = prepare, .add = add_series, .send = send_batch};

/* ---- /metrics ----------------------------------------------------------------------------- */

static const struct wt_sender_family fams[] = {
    {"wattage_kafka_messages_sent_total",
     "Messages the brokers acknowledged (delivery report without error), since the daemon started",
     WT_COUNTER, C_MSG_SENT},
    {"wattage_kafka_messages_failed_total",
     "Messages whose delivery report failed (sent again from the store after a backoff)",
     WT_COUNTER, C_MSG_FAILED},
    {"wattage_kafka_samples_sent_total", "Readings in the messages the brokers acknowledged",
     WT_COUNTER, C_SAMPLES_SENT},
    {"wattage_kafka_pending_samples", "Stored readings not yet delivered to the topic", WT_GAUGE,
     WT_SENDER_PENDING},
    {"wattage_kafka_lag_seconds",
     "Age of the oldest stored reading not yet delivered to the topic (0 when none)", WT_GAUGE,
     WT_SENDER_LAG},
    {"wattage_kafka_messages_dropped_total",
     "Messages the brokers refused for good (too large, invalid): dropped, not sent again",
     WT_COUNTER, C_MSG_DROPPED},
    {"wattage_kafka_samples_dropped_total", "Readings in the messages dropped", WT_COUNTER,
     C_SAMPLES_DROPPED},
};

int wt_kafka_stats_at(struct wt_kafka *k, size_t i, struct wt_kafka_stats *out)
{
    struct wt_sender_stats st;
    if (wt_sender_stats(sender(k), i, &st) != 0)
        return -ENOENT;
    *out = (struct wt_kafka_stats){.messages_sent = st.c[C_MSG_SENT],
                                   .messages_failed = st.c[C_MSG_FAILED],
                                   .samples_sent = st.c[C_SAMPLES_SENT],
                                   .pending = st.pending,
                                   .messages_dropped = st.c[C_MSG_DROPPED],
                                   .samples_dropped = st.c[C_SAMPLES_DROPPED],
                                   .lag_s = st.lag_s};
    return 0;
}

int wt_kafka_stats(struct wt_kafka *k, struct wt_kafka_stats *out)
{
    return wt_kafka_stats_at(k, 0, out);
}

/* ---- life cycle --------------------------------------------------------------------------- */

bool wt_kafka_built_in(void)
{
    return true;
}

const char *wt_kafka_version(void)
{
    const struct wt_rdk *r;
    struct wt_err err = {{0}};
    return wt_kafka_lib_load(&r, &err) == 0 ? r->version_str() : "not loadable";
}

static int parse(const char *file, const struct wt_ynode *node, void *confs, struct wt_err *err)
{
    struct wt_kafka_configs *c = confs;
    int rc = wt_kafka_config_parse_all(file, node, c, err);
    return rc ? rc : (int)c->n;
}

static const char *dest_name(const void *confs, size_t i)
{
    return ((const struct wt_kafka_configs *)confs)->d[i].name;
}

static int open_dest(const struct wt_sender_setup *su, const void *confs, void *dest,
                     struct wt_err *err)
{
    struct dest *t = dest;
    char cursor[300], pw[100];
    int rc = 0;
    t->cf = ((const struct wt_kafka_configs *)confs)->d[su->i];
    if (wt_kafka_lib_load(&rdk, err) != 0)
        return -ENOENT;
    t->rl_fail.interval_ns = 30 * WT_NS_PER_S;
    t->rl_err.interval_ns = 30 * WT_NS_PER_S;
    t->rl_drop.interval_ns = 30 * WT_NS_PER_S;
    if (t->cf.sasl) {
        snprintf(pw, sizeof pw, "%s.sasl.password_file", su->what);
        rc = wt_sender_read_secret(pw, t->cf.password_file, t->password, sizeof t->password, err);
    }
    snprintf(cursor, sizeof cursor, "kafka:%s", t->cf.name);
    struct wt_sender_dest_config dc = {.name = t->cf.name,
                                       .cursor = cursor,
                                       .batch_size = (size_t)t->cf.batch_size,
                                       .deadline_ns = t->cf.deadline_ns,
                                       .max_backoff_ns = t->cf.max_backoff_ns,
                                       .backfill_ns = t->cf.backfill_ns,
                                       .keep = keep_series,
                                       .ctx = t};
    if (!rc)
        rc = wt_sender_add_dest(su->s, su->cfg->store.path, &dc, &t->d, err);
    if (!rc)
        rc = wt_kafka_encoder_open(su->node, &t->enc);
    return rc ? rc : make_producer(t, err);
}

static void describe(const void *dest, const char *node)
{
    const struct dest *t = dest;
    wt_info(MOD,
            "destination %s brokers=%s topic=%s key=%s batch_size=%" PRId64 " series=%s "
            "librdkafka=%s",
            t->cf.name, t->cf.brokers, t->cf.topic, node, t->cf.batch_size,
            t->cf.nsel ? "matched" : "all", rdk->version_str());
}

static void close_dest(void *dest)
{
    struct dest *t = dest;
    drop_producer(t);
    wt_kafka_encoder_close(t->enc);
    explicit_bzero(t->password, sizeof t->password);
    free(t->res);
    free(t->maybe);
}

static const struct wt_sender_stream stream = {
    .section = "kafka",
    .thread = "wt-kafka",
    .noun = "destination",
    .ops = &kafka_ops,
    WT_SENDER_STREAM_FILE(struct wt_kafka_configs, struct dest)};

int wt_kafka_open(const struct wt_config *cfg, struct wt_http *http, struct wt_kafka **out,
                  struct wt_err *err)
{
    return wt_sender_stream_open(&stream, cfg, http, (struct wt_sender **)out, err);
}

void wt_kafka_drain(struct wt_kafka *k, int64_t deadline_ns)
{
    wt_sender_drain(sender(k), deadline_ns);
}

void wt_kafka_close(struct wt_kafka *k)
{
    /* the threads end (after the grace for reports in flight) before the producers go */
    wt_sender_close(sender(k));
}

#else /* built without librdkafka */

struct wt_kafka {
    int unused;
};

bool wt_kafka_built_in(void)
{
    return false;
}

const char *wt_kafka_version(void)
{
    return "";
}

bool wt_kafka_permanent(int err)
{
    (void)err;
    return false;
}

int wt_kafka_open(const struct wt_config *cfg, struct wt_http *http, struct wt_kafka **out,
                  struct wt_err *err)
{
    struct wt_kafka_configs *c = malloc(sizeof *c);
    (void)http;
    *out = NULL;
    if (!c)
        return -ENOMEM;
    int rc =
        wt_kafka_config_parse_all(wt_config_file(cfg), wt_config_section(cfg, "kafka"), c, err);
    size_t n = c->n;
    free(c);
    if (rc)
        return rc;
    if (n)
        return wt_err_set(err, "kafka: not built in (librdkafka-dev was missing at build time); "
                               "remove the kafka section or rebuild with it");
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void wt_kafka_drain(struct wt_kafka *k, int64_t deadline_ns)
{
    (void)k;
    (void)deadline_ns;
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

int wt_kafka_stats_at(struct wt_kafka *k, size_t i, struct wt_kafka_stats *out)
{
    (void)k;
    (void)i;
    (void)out;
    return -ENOENT;
}

#endif
