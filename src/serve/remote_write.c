/* SPDX-License-Identifier: MIT */
/*
 * Remote write (see remote_write.h): the remote_write section, the selectors, the encoder
 * (protobuf-c over the messages of remote_write.proto, then snappy), and one sender thread per
 * endpoint that reads its batches from the store (store/cursor.h) and posts them with libcurl.
 *
 * Cost: the label set of a series is built once, when the series is first seen; a request packs
 * arrays of pointers into those and into the batch, so encoding allocates nothing once the
 * buffers have grown to the batch size.
 */
#include "serve/remote_write.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <regex.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/curl_lib.h"
#include "core/log.h"
#include "core/yget.h"
#include "serve/http.h"
#include "serve/remote_write.pb-c.h"
#include "serve/sender.h"

#define MOD "remote_write"

/* ---- configuration ------------------------------------------------------------------------ */

static const char *const ep_keys[] = {
    "url",     "name",     "bearer_token_file", "basic_auth", "tls",   "batch_size",
    "timeout", "deadline", "max_backoff",       "backfill",   "match", NULL};
static const char *const basic_keys[] = {"username", "password_file", NULL};
static const char *const tls_keys[] = {"ca", "cert", "key", "insecure_skip_verify", NULL};

static void ep_defaults(struct wt_rw_endpoint_config *e)
{
    memset(e, 0, sizeof *e);
    e->batch_size = 2000;
    e->timeout_ns = 10 * WT_NS_PER_S;
    e->deadline_ns = 5 * WT_NS_PER_S;
    e->max_backoff_ns = 30 * WT_NS_PER_S;
    e->backfill_ns = 3600 * WT_NS_PER_S;
}

static bool url_ok(const char *u)
{
    bool https = strncmp(u, "https://", 8) == 0;
    if (!https && strncmp(u, "http://", 7) != 0)
        return false;
    const char *host = u + (https ? 8 : 7);
    return *host && *host != '/' && !strpbrk(u, " \t\r\n#");
}

/* Reads a label value in double quotes at *p (\\, \" and \n escapes); moves *p past it. */
static int quoted(const char **p, char *out, size_t n)
{
    const char *s = *p;
    size_t k = 0;
    if (*s++ != '"')
        return -EINVAL;
    for (; *s && *s != '"'; s++) {
        char ch = *s;
        if (ch == '\\') {
            s++;
            if (*s == 'n')
                ch = '\n';
            else if (*s == '\\' || *s == '"')
                ch = *s;
            else
                return -EINVAL;
        }
        if (k + 1 >= n)
            return -E2BIG;
        out[k++] = ch;
    }
    if (*s != '"')
        return -EINVAL;
    out[k] = '\0';
    *p = s + 1;
    return 0;
}

/* Compiles an anchored POSIX extended regex; the caller frees it. */
static int compile_re(const char *re, regex_t *out)
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "^(%s)$", re) >= (int)sizeof buf)
        return -E2BIG;
    return regcomp(out, buf, REG_EXTENDED | REG_NOSUB) == 0 ? 0 : -EINVAL;
}

int wt_remote_write_selector_parse(const char *s, struct wt_rw_selector *out, char *why,
                                   size_t whyn)
{
    memset(out, 0, sizeof *out);
    const char *brace = strchr(s, '{');
    size_t gl = brace ? (size_t)(brace - s) : strlen(s);
    while (gl && s[gl - 1] == ' ')
        gl--;
    if (!gl || gl >= sizeof out->glob) {
        snprintf(why, whyn, "expected a metric name pattern of 1..%zu characters",
                 sizeof out->glob - 1);
        return -EINVAL;
    }
    memcpy(out->glob, s, gl);
    for (size_t i = 0; i < gl; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(c == '_' || c == ':' || c == '*' || c == '?' || c == '[' || c == ']' || c == '!' ||
              c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9'))) {
            snprintf(why, whyn, "a metric name pattern holds letters, digits, _ : and * ? [ ]");
            return -EINVAL;
        }
    }
    if (!brace)
        return 0;
    const char *p = brace + 1;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '}')
            break;
        if (out->nm == WT_RW_MAX_MATCHERS) {
            snprintf(why, whyn, "at most %d label matchers", WT_RW_MAX_MATCHERS);
            return -EINVAL;
        }
        struct wt_rw_matcher *m = &out->m[out->nm];
        size_t k = 0;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
               (k && *p >= '0' && *p <= '9')) {
            if (k + 1 >= sizeof m->name) {
                snprintf(why, whyn, "label name too long");
                return -EINVAL;
            }
            m->name[k++] = *p++;
        }
        while (*p == ' ')
            p++;
        if (!k) {
            snprintf(why, whyn, "expected a label name at \"%.20s\"", p);
            return -EINVAL;
        }
        if (strncmp(p, "=~", 2) == 0) {
            m->op = WT_RW_RE;
            p += 2;
        } else if (strncmp(p, "!~", 2) == 0) {
            m->op = WT_RW_NRE;
            p += 2;
        } else if (strncmp(p, "!=", 2) == 0) {
            m->op = WT_RW_NE;
            p += 2;
        } else if (*p == '=') {
            m->op = WT_RW_EQ;
            p++;
        } else {
            snprintf(why, whyn, "label %s: expected =, !=, =~ or !~", m->name);
            return -EINVAL;
        }
        while (*p == ' ')
            p++;
        if (quoted(&p, m->value, sizeof m->value) != 0) {
            snprintf(why, whyn, "label %s: expected a value in double quotes", m->name);
            return -EINVAL;
        }
        if (m->op == WT_RW_RE || m->op == WT_RW_NRE) {
            regex_t re;
            if (compile_re(m->value, &re) != 0) {
                snprintf(why, whyn, "label %s: not a POSIX extended regex: %s", m->name, m->value);
                return -EINVAL;
            }
            regfree(&re);
        }
        out->nm++;
        while (*p == ' ')
            p++;
        if (*p != ',' && *p != '}') {
            snprintf(why, whyn, "expected , or } after the matcher of %s", m->name);
            return -EINVAL;
        }
    }
    if (p[1]) {
        snprintf(why, whyn, "unexpected text after }");
        return -EINVAL;
    }
    return 0;
}

static bool matcher_ok(const struct wt_rw_matcher *m, const char *labels)
{
    char v[WT_LABELS_LEN];
    if (wt_labels_get(labels, m->name, v, sizeof v) != 0)
        v[0] = '\0'; /* an absent label matches "" as in PromQL */
    if (m->op == WT_RW_EQ || m->op == WT_RW_NE)
        return (strcmp(v, m->value) == 0) == (m->op == WT_RW_EQ);
    regex_t re;
    if (compile_re(m->value, &re) != 0)
        return false;
    bool hit = regexec(&re, v, 0, NULL, 0) == 0;
    regfree(&re);
    return hit == (m->op == WT_RW_RE);
}

bool wt_remote_write_match(const struct wt_rw_selector *sel, size_t n, const char *metric,
                           const char *labels)
{
    if (!n)
        return true;
    for (size_t i = 0; i < n; i++) {
        if (fnmatch(sel[i].glob, metric, 0) != 0)
            continue;
        bool all = true;
        for (size_t k = 0; k < sel[i].nm && all; k++)
            all = matcher_ok(&sel[i].m[k], labels);
        if (all)
            return true;
    }
    return false;
}

int wt_remote_write_endpoint_parse(const struct wt_yget *g, const struct wt_ynode *m,
                                   const char *path, const char *const *extra,
                                   struct wt_rw_endpoint_config *e)
{
    char p[160];
    const struct wt_ynode *n;
    const char *keys[32];
    size_t nk = 0;
    for (size_t i = 0; ep_keys[i]; i++)
        keys[nk++] = ep_keys[i];
    for (size_t i = 0; extra && extra[i] && nk + 1 < sizeof keys / sizeof keys[0]; i++)
        keys[nk++] = extra[i];
    keys[nk] = NULL;
    ep_defaults(e);
    int rc = wt_y_map(g, m, path, keys);
    if (!rc)
        rc = wt_y_keys(g, m, path, keys);
    if (!rc)
        rc = wt_y_string(g, m, path, "url", true, e->url, sizeof e->url);
    if (!rc && !url_ok(e->url)) {
        char shown[80];
        wt_y_show(e->url, shown, sizeof shown);
        rc = wt_y_fail(g, wt_y_get(m, "url"), wt_y_path(p, sizeof p, path, "url"),
                       "expected http://HOST[:PORT]/PATH or https://... (got %s)", shown);
    }
    if (!rc)
        rc = wt_y_string(g, m, path, "name", false, e->name, sizeof e->name);
    if (!rc && !e->name[0]) {
        size_t l = strnlen(e->url, sizeof e->name - 1);
        memcpy(e->name, e->url, l);
        e->name[l] = '\0';
    }
    if (!rc)
        rc = wt_y_string(g, m, path, "bearer_token_file", false, e->bearer_token_file,
                         sizeof e->bearer_token_file);
    if (!rc && (n = wt_y_get(m, "basic_auth")) != NULL) {
        wt_y_path(p, sizeof p, path, "basic_auth");
        rc = wt_y_map(g, n, p, basic_keys);
        if (!rc)
            rc = wt_y_keys(g, n, p, basic_keys);
        if (!rc)
            rc = wt_y_string(g, n, p, "username", true, e->username, sizeof e->username);
        if (!rc)
            rc = wt_y_string(g, n, p, "password_file", true, e->password_file,
                             sizeof e->password_file);
        if (!rc && e->bearer_token_file[0])
            rc = wt_y_fail(g, n, p, "bearer_token_file and basic_auth exclude each other");
    }
    if (!rc && (n = wt_y_get(m, "tls")) != NULL) {
        wt_y_path(p, sizeof p, path, "tls");
        rc = wt_y_map(g, n, p, tls_keys);
        if (!rc)
            rc = wt_y_keys(g, n, p, tls_keys);
        if (!rc)
            rc = wt_y_string(g, n, p, "ca", false, e->tls_ca, sizeof e->tls_ca);
        if (!rc)
            rc = wt_y_string(g, n, p, "cert", false, e->tls_cert, sizeof e->tls_cert);
        if (!rc)
            rc = wt_y_string(g, n, p, "key", false, e->tls_key, sizeof e->tls_key);
        if (!rc)
            rc = wt_y_bool(g, n, p, "insecure_skip_verify", &e->insecure_skip_verify);
        if (!rc && !e->tls_cert[0] != !e->tls_key[0])
            rc = wt_y_fail(g, n, p, "cert and key go together");
        if (!rc && strncmp(e->url, "https://", 8) != 0)
            rc = wt_y_fail(g, n, p, "tls needs an https:// url");
    }
    if (!rc)
        rc = wt_y_int(g, m, path, "batch_size", 1, 100000, &e->batch_size);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "timeout", false, WT_Y_NET_TIMEOUT_MIN,
                              WT_Y_NET_TIMEOUT_MAX, WT_Y_WHY_NET_TIMEOUT, &e->timeout_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "deadline", false, 100 * WT_Y_MS, 3600 * WT_Y_S,
                              "the sender reads the store once per deadline at most; under "
                              "100ms it spins, over an hour the receiver lags that far",
                              &e->deadline_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "max_backoff", false, 100 * WT_Y_MS, 3600 * WT_Y_S,
                              "retrying a failed receiver more often than every 100ms hammers "
                              "it; over an hour a recovered one waits that long",
                              &e->max_backoff_ns);
    if (!rc)
        rc = wt_y_duration(g, m, path, "backfill", true, &e->backfill_ns);
    if (!rc)
        rc = wt_remote_write_match_parse(g, m, path, e->sel, &e->nsel);
    return rc;
}

int wt_remote_write_match_parse(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                                struct wt_rw_selector *sel, size_t *nsel)
{
    char p[160], q[200];
    const struct wt_ynode *n = wt_y_get(m, "match");
    if (!n)
        return 0;
    wt_y_path(p, sizeof p, path, "match");
    int rc = wt_y_seq(g, n, p);
    for (size_t i = 0; !rc && i < n->n; i++) {
        const struct wt_ynode *it = n->child[i];
        char why[160];
        wt_y_index(q, sizeof q, p, i);
        if (*nsel == WT_RW_MAX_SELECTORS)
            rc = wt_y_fail(g, it, q, "at most %d selectors", WT_RW_MAX_SELECTORS);
        else if (it->kind != WT_YNODE_SCALAR)
            rc = wt_y_fail(g, it, q, "expected a selector such as 'wattage_gpu_*' (got %s)",
                           wt_ynode_kind_name(it->kind));
        else if (wt_remote_write_selector_parse(it->value, &sel[*nsel], why, sizeof why) != 0)
            rc = wt_y_fail(g, it, q, "%s", why);
        else
            (*nsel)++;
    }
    return rc;
}

int wt_remote_write_config_parse(const char *file, const struct wt_ynode *node,
                                 struct wt_rw_config *out, struct wt_err *err)
{
    struct wt_yget g = {.file = file, .err = err};
    char p[64];
    memset(out, 0, sizeof *out);
    if (!node || wt_ynode_is_null(node))
        return 0;
    int rc = wt_y_seq(&g, node, "remote_write");
    for (size_t i = 0; !rc && i < node->n; i++) {
        wt_y_index(p, sizeof p, "remote_write", i);
        if (out->n == WT_RW_MAX_ENDPOINTS) {
            rc = wt_y_fail(&g, node->child[i], p, "at most %d endpoints", WT_RW_MAX_ENDPOINTS);
            break;
        }
        rc = wt_remote_write_endpoint_parse(&g, node->child[i], p, NULL, &out->ep[out->n]);
        for (size_t k = 0; !rc && k < out->n; k++) {
            if (strcmp(out->ep[k].name, out->ep[out->n].name) == 0)
                rc = wt_y_fail(&g, node->child[i], p,
                               "name \"%s\" is taken by remote_write[%zu]: each endpoint keeps "
                               "its own cursor under its name",
                               out->ep[k].name, k);
        }
        if (!rc)
            out->n++;
    }
    return rc;
}

int wt_remote_write_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_rw_config *c = malloc(sizeof *c);
    if (!c)
        return wt_err_set(err, "%s: remote_write: out of memory", file);
    int rc = wt_remote_write_config_parse(file, node, c, err);
    free(c);
    return rc;
}

/* ---- encoder ------------------------------------------------------------------------------ */

struct labelset {
    Prometheus__Label *l;
    Prometheus__Label **p;
    size_t n;
    char *strings; /* every name and value, NUL-terminated */
};

struct wt_rw_encoder {
    char node[128];
    struct labelset *sets;
    size_t nsets, capsets;
    Prometheus__TimeSeries *ts;
    Prometheus__TimeSeries **tsp;
    size_t capts;
    Prometheus__Sample *smp;
    Prometheus__Sample **smpp;
    size_t capsmp;
    uint8_t *pb;
    size_t cappb;
    char *sz;
    size_t capsz;
};

int wt_remote_write_encoder_open(const char *node, struct wt_rw_encoder **out)
{
    struct wt_rw_encoder *e = calloc(1, sizeof *e);
    *out = NULL;
    if (!e)
        return -ENOMEM;
    snprintf(e->node, sizeof e->node, "%s", node);
    *out = e;
    return 0;
}

void wt_remote_write_encoder_close(struct wt_rw_encoder *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nsets; i++) {
        free(e->sets[i].l);
        free(e->sets[i].p);
        free(e->sets[i].strings);
    }
    free(e->sets);
    free(e->ts);
    free(e->tsp);
    free(e->smp);
    free(e->smpp);
    free(e->pb);
    free(e->sz);
    free(e);
}

static int cmp_label(const void *a, const void *b)
{
    const Prometheus__Label *x = *(Prometheus__Label *const *)a;
    const Prometheus__Label *y = *(Prometheus__Label *const *)b;
    return strcmp(x->name, y->name);
}

/* Appends name=value to ls; the string area was sized for every name and value. */
static void put_label(struct labelset *ls, size_t *used, const char *name, const char *value)
{
    Prometheus__Label *l = &ls->l[ls->n++];
    size_t a = strlen(name) + 1, b = strlen(value) + 1;
    prometheus__label__init(l);
    l->name = memcpy(ls->strings + *used, name, a);
    l->value = memcpy(ls->strings + *used + a, value, b);
    *used += a + b;
}

int wt_remote_write_encoder_add(struct wt_rw_encoder *e, const char *metric, const char *labels)
{
    /* at most two more labels than pairs; the unescaped text is never longer than the escaped */
    size_t pairs = 2, pos = 0, used = 0;
    for (const char *c = labels; *c; c++)
        pairs += *c == '=';
    size_t room = 2 * strlen(labels) + strlen(metric) + strlen(e->node) + 64 + 16 * pairs;
    struct labelset ls = {0};
    char key[64], val[WT_LABELS_LEN];
    int r, rc = -ENOMEM;
    if (e->nsets == e->capsets) {
        size_t nc = e->capsets ? e->capsets * 2 : 64;
        struct labelset *p = realloc(e->sets, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        e->sets = p;
        e->capsets = nc;
    }
    ls.l = calloc(pairs, sizeof *ls.l);
    ls.p = calloc(pairs, sizeof *ls.p);
    ls.strings = malloc(room);
    if (!ls.l || !ls.p || !ls.strings)
        goto fail;
    put_label(&ls, &used, "__name__", metric);
    put_label(&ls, &used, "node", e->node);
    while ((r = wt_labels_next(labels, &pos, key, sizeof key, val, sizeof val)) == 1) {
        if (!val[0] || strcmp(key, "__name__") == 0)
            continue; /* the specification: no empty values; the name is the metric's */
        if (ls.n == pairs || used + strlen(key) + strlen(val) + 16 > room)
            break;
        /* the node label is this daemon's; a series' own (a meter placed on a node) is kept */
        put_label(&ls, &used, strcmp(key, "node") == 0 ? "exported_node" : key, val);
    }
    if (r != 0) {
        rc = -EINVAL;
        goto fail;
    }
    for (size_t i = 0; i < ls.n; i++)
        ls.p[i] = &ls.l[i];
    qsort(ls.p, ls.n, sizeof *ls.p, cmp_label);
    e->sets[e->nsets] = ls;
    return (int)e->nsets++;
fail:
    free(ls.l);
    free(ls.p);
    free(ls.strings);
    return rc;
}

#define need wt_sender_grow

int wt_remote_write_encode(struct wt_rw_encoder *e, const struct wt_cursor_batch *b,
                           const char **body, size_t *len, size_t *raw_len)
{
    size_t nts = 0, cts = e->capts, csm = e->capsmp;
    for (size_t k = 0; k < b->n; k++) {
        if (b->s[k].series >= e->nsets)
            return -EINVAL;
        if (k == 0 || b->s[k].series != b->s[k - 1].series)
            nts++;
    }
    if (need((void **)&e->ts, &cts, nts, sizeof *e->ts) ||
        need((void **)&e->tsp, &e->capts, nts, sizeof *e->tsp) ||
        need((void **)&e->smp, &csm, b->n, sizeof *e->smp) ||
        need((void **)&e->smpp, &e->capsmp, b->n, sizeof *e->smpp))
        return -ENOMEM;
    Prometheus__WriteRequest req = PROMETHEUS__WRITE_REQUEST__INIT;
    size_t t = 0;
    for (size_t k = 0; k < b->n; k++) {
        const struct wt_cursor_sample *x = &b->s[k];
        if (k == 0 || x->series != b->s[k - 1].series) {
            const struct labelset *ls = &e->sets[x->series];
            Prometheus__TimeSeries *ts = &e->ts[t];
            prometheus__time_series__init(ts);
            ts->n_labels = ls->n;
            ts->labels = ls->p;
            ts->samples = &e->smpp[k];
            e->tsp[t++] = ts;
        }
        Prometheus__Sample *s = &e->smp[k];
        prometheus__sample__init(s);
        s->value = x->v;
        /* ns to ms, floored (the specification's unit) */
        s->timestamp = x->t_ns >= 0 ? x->t_ns / 1000000 : -((-x->t_ns + 999999) / 1000000);
        e->smpp[k] = s;
        e->tsp[t - 1]->n_samples++;
    }
    req.n_timeseries = nts;
    req.timeseries = e->tsp;
    size_t raw = prometheus__write_request__get_packed_size(&req);
    if (need((void **)&e->pb, &e->cappb, raw ? raw : 1, 1))
        return -ENOMEM;
    prometheus__write_request__pack(&req, e->pb);
    size_t max = snappy_max_compressed_length(raw);
    if (need((void **)&e->sz, &e->capsz, max, 1))
        return -ENOMEM;
    size_t out = max;
    if (snappy_compress((const char *)e->pb, raw, e->sz, &out) != SNAPPY_OK)
        return -ENOMEM;
    *body = e->sz;
    *len = out;
    if (raw_len)
        *raw_len = raw;
    return 0;
}

enum wt_rw_verdict wt_remote_write_verdict(long status)
{
    /* the same order: wt_sender_verdict is the one rule */
    return (enum wt_rw_verdict)wt_sender_verdict(status);
}

/* ---- senders ------------------------------------------------------------------------------ */

/* The counters (struct wt_rw_stats's fields) are wt_sender_http_deliver's. */
enum {
    C_SENT = WT_SENDER_C_SENT,
    C_FAILED = WT_SENDER_C_FAILED,
    C_DROPPED = WT_SENDER_C_DROPPED,
    C_REQUESTS = WT_SENDER_C_REQUESTS,
    C_AUTH = WT_SENDER_C_AUTH
};

struct endpoint {
    struct wt_rw_endpoint_config cf;
    struct wt_sender_http_ep hep;
    struct wt_rw_encoder *enc;
};

/* The handle is the stream's sender: struct wt_remote_write is never defined. */
static struct wt_sender *sender(struct wt_remote_write *rw)
{
    return (struct wt_sender *)rw;
}

int wt_remote_write_read_secret(const char *what, const char *path, char *out, size_t n,
                                struct wt_err *err)
{
    return wt_sender_read_secret(what, path, out, n, err);
}

static const char *const rw_headers[] = {
    "Content-Encoding: snappy", "Content-Type: application/x-protobuf",
    "X-Prometheus-Remote-Write-Version: 0.1.0", "Expect:" /* no 100-continue round trip */, NULL};

/* The encoder, for the shared HTTP stream (wt_sender_http_ops). */
static int codec_add(void *owner, const char *metric, const char *labels)
{
    struct endpoint *e = owner;
    return wt_remote_write_encoder_add(e->enc, metric, labels);
}

static int codec_encode(void *owner, const struct wt_cursor_batch *b, const char **body,
                        size_t *len)
{
    struct endpoint *e = owner;
    return wt_remote_write_encode(e->enc, b, body, len, NULL);
}

static const struct wt_sender_http_codec codec = {
    .add = codec_add, .encode = codec_encode, .keep = wt_remote_write_match};

/* ---- /metrics ----------------------------------------------------------------------------- */

static const struct wt_sender_family fams[] = {
    {"wattage_remote_write_samples_sent_total",
     "Samples the remote write endpoint accepted (2xx), since the daemon started", WT_COUNTER,
     C_SENT},
    {"wattage_remote_write_samples_failed_total",
     "Samples of requests that failed with 5xx, 429, a timeout or a network error (retried)",
     WT_COUNTER, C_FAILED},
    {"wattage_remote_write_samples_dropped_total",
     "Samples of batches the endpoint refused with another 4xx (dropped, not retried)", WT_COUNTER,
     C_DROPPED},
    {"wattage_remote_write_samples_pending", "Stored samples the endpoint has not acknowledged yet",
     WT_GAUGE, WT_SENDER_PENDING},
    {"wattage_remote_write_lag_seconds",
     "Age of the oldest stored sample the endpoint has not acknowledged (0 when none)", WT_GAUGE,
     WT_SENDER_LAG},
    {"wattage_remote_write_auth_failures_total",
     "Requests the endpoint refused with 401 or 403 (retried with backoff; the samples stay "
     "pending)",
     WT_COUNTER, C_AUTH},
};

int wt_remote_write_stats(struct wt_remote_write *rw, size_t i, struct wt_rw_stats *out)
{
    return wt_sender_http_stats(sender(rw), i, out);
}

/* ---- the stream --------------------------------------------------------------------------- */

static int parse(const char *file, const struct wt_ynode *node, void *confs, struct wt_err *err)
{
    struct wt_rw_config *c = confs;
    int rc = wt_remote_write_config_parse(file, node, c, err);
    return rc ? rc : (int)c->n;
}

static const char *dest_name(const void *confs, size_t i)
{
    return ((const struct wt_rw_config *)confs)->ep[i].name;
}

static int open_dest(const struct wt_sender_setup *su, const void *confs, void *dest,
                     struct wt_err *err)
{
    struct endpoint *e = dest;
    e->cf = ((const struct wt_rw_config *)confs)->ep[su->i];
    e->hep.codec = &codec;
    e->hep.owner = e;
    e->hep.headers = rw_headers;
    int rc = wt_sender_http_dest(su->s, su->cfg->store.path, &e->cf, e->cf.name, &e->hep, err);
    return rc ? rc : wt_remote_write_encoder_open(su->node, &e->enc);
}

static void describe(const void *dest, const char *node)
{
    const struct endpoint *e = dest;
    wt_info(MOD, "endpoint %s url=%s node=%s batch_size=%" PRId64 " series=%s", e->cf.name,
            e->cf.url, node, e->cf.batch_size, e->cf.nsel ? "matched" : "all");
}

static void close_dest(void *dest)
{
    struct endpoint *e = dest;
    wt_remote_write_encoder_close(e->enc);
    wt_sender_http_ep_close(&e->hep);
}

static const struct wt_sender_stream stream = {
    .section = "remote_write",
    .thread = "wt-rwrite",
    .noun = "endpoint",
    .indexed = true,
    .ops = &wt_sender_http_ops,
    WT_SENDER_STREAM_FILE(struct wt_rw_config, struct endpoint)};

int wt_remote_write_open(const struct wt_config *cfg, struct wt_http *http,
                         struct wt_remote_write **out, struct wt_err *err)
{
    return wt_sender_stream_open(&stream, cfg, http, (struct wt_sender **)out, err);
}

void wt_remote_write_drain(struct wt_remote_write *rw, int64_t deadline_ns)
{
    wt_sender_drain(sender(rw), deadline_ns);
}

void wt_remote_write_close(struct wt_remote_write *rw)
{
    wt_sender_close(sender(rw)); /* joins the threads before their encoders go */
}
