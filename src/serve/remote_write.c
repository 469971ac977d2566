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

#include <curl/curl.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alert/notify.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/yget.h"
#include "serve/http.h"
#include "serve/remote_write.pb-c.h"

#define MOD "remote_write"
#define REPLY_MAX 512 /* what a receiver's answer may add to a log line */

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

static int parse_endpoint(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                          struct wt_rw_endpoint_config *e)
{
    char p[160], q[200];
    const struct wt_ynode *n;
    ep_defaults(e);
    int rc = wt_y_map(g, m, path, ep_keys);
    if (!rc)
        rc = wt_y_keys(g, m, path, ep_keys);
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
    if (!rc && (n = wt_y_get(m, "match")) != NULL) {
        wt_y_path(p, sizeof p, path, "match");
        rc = wt_y_seq(g, n, p);
        for (size_t i = 0; !rc && i < n->n; i++) {
            const struct wt_ynode *it = n->child[i];
            char why[160];
            wt_y_index(q, sizeof q, p, i);
            if (e->nsel == WT_RW_MAX_SELECTORS)
                rc = wt_y_fail(g, it, q, "at most %d selectors", WT_RW_MAX_SELECTORS);
            else if (it->kind != WT_YNODE_SCALAR)
                rc = wt_y_fail(g, it, q, "expected a selector such as 'wattage_gpu_*' (got %s)",
                               wt_ynode_kind_name(it->kind));
            else if (wt_remote_write_selector_parse(it->value, &e->sel[e->nsel], why, sizeof why) !=
                     0)
                rc = wt_y_fail(g, it, q, "%s", why);
            else
                e->nsel++;
        }
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
        rc = parse_endpoint(&g, node->child[i], p, &out->ep[out->n]);
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

static int need(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, nc * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = nc;
    return 0;
}

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
    if (status >= 200 && status < 300)
        return WT_RW_SENT;
    if (status >= 500 || status == 429 || status <= 0)
        return WT_RW_RETRY;
    if (status == 401 || status == 403)
        return WT_RW_AUTH;
    return WT_RW_DROP;
}

/* ---- senders ------------------------------------------------------------------------------ */

struct endpoint {
    struct wt_remote_write *rw;
    struct wt_rw_endpoint_config cf;
    struct wt_cursor *cur;
    struct wt_rw_encoder *enc;
    CURL *curl;
    pthread_t thread;
    bool started;
    struct wt_rw_stats st; /* under rw->mu */
    struct wt_ratelimit rl_fail, rl_drop;
    bool refused;      /* the receiver's last answer was a 401 or 403 */
    uint64_t refusals; /* of the requests since it began refusing */
};

struct wt_remote_write {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    struct endpoint *ep;
    size_t n;
};

/* Reads a one-line secret into out. Returns 0 or -errno / -EINVAL with why filled. */
static int read_secret(const char *what, const char *path, char *out, size_t n, struct wt_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        wt_err_set(err, "%s %s: %s", what, path, strerror(e));
        return -e;
    }
    int rc = wt_check_secret_mode(what, path, sb.st_mode, err);
    if (rc)
        return rc;
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        wt_err_set(err, "%s %s: %s", what, path, strerror(e));
        return -e;
    }
    size_t len = fread(out, 1, n - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    out[len] = '\0';
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        out[--len] = '\0';
    if (more || !len || strpbrk(out, "\r\n"))
        return wt_err_set(err, "%s %s: expected one line of 1..%zu characters", what, path, n - 2);
    return 0;
}

int wt_remote_write_read_secret(const char *what, const char *path, char *out, size_t n,
                                struct wt_err *err)
{
    return read_secret(what, path, out, n, err);
}

/* Waits up to ns or until stopped; true when stopped. */
static bool wait_or_stop(struct wt_remote_write *rw, int64_t ns)
{
    int64_t until = wt_now_mono_ns() + ns;
    pthread_mutex_lock(&rw->mu);
    while (!rw->stop) {
        int64_t now = wt_now_mono_ns();
        if (now >= until)
            break;
        struct timespec ts = {.tv_sec = until / WT_NS_PER_S, .tv_nsec = until % WT_NS_PER_S};
        pthread_cond_timedwait(&rw->cv, &rw->mu, &ts);
    }
    bool stop = rw->stop;
    pthread_mutex_unlock(&rw->mu);
    return stop;
}

static bool stopping(struct wt_remote_write *rw)
{
    pthread_mutex_lock(&rw->mu);
    bool s = rw->stop;
    pthread_mutex_unlock(&rw->mu);
    return s;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    return stopping(arg) ? 1 : 0; /* a stop abandons a hanging request */
}

struct reply {
    char buf[REPLY_MAX];
    size_t n;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct reply *r = arg;
    size_t len = size * nmemb;
    size_t take = len < sizeof r->buf - 1 - r->n ? len : sizeof r->buf - 1 - r->n;
    memcpy(r->buf + r->n, p, take);
    r->n += take;
    r->buf[r->n] = '\0';
    return len;
}

/* One POST of body. Returns the HTTP status, or 0 with why filled when none came back. */
static long post(struct endpoint *e, const char *body, size_t len, char *why, size_t whyn)
{
    const struct wt_rw_endpoint_config *c = &e->cf;
    char cerr[CURL_ERROR_SIZE] = "", secret[512], auth[600];
    struct wt_err err = {{0}};
    struct reply rep = {{0}, 0};
    struct curl_slist *h = NULL;
    long status = 0;
    CURL *cu = e->curl;

    why[0] = '\0';
    curl_easy_reset(cu);
    h = curl_slist_append(h, "Content-Encoding: snappy");
    h = curl_slist_append(h, "Content-Type: application/x-protobuf");
    h = curl_slist_append(h, "X-Prometheus-Remote-Write-Version: 0.1.0");
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    /* Secrets are read for every request, so a rotated token is used without a restart. */
    if (c->bearer_token_file[0]) {
        if (read_secret("bearer_token_file", c->bearer_token_file, secret, sizeof secret, &err)) {
            snprintf(why, whyn, "%s", err.msg);
            goto out;
        }
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", secret);
        h = curl_slist_append(h, auth);
    }
    if (c->username[0]) {
        if (read_secret("basic_auth.password_file", c->password_file, secret, sizeof secret,
                        &err)) {
            snprintf(why, whyn, "%s", err.msg);
            goto out;
        }
        curl_easy_setopt(cu, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(cu, CURLOPT_USERNAME, c->username);
        curl_easy_setopt(cu, CURLOPT_PASSWORD, secret);
    }
    if (!h) {
        snprintf(why, whyn, "out of memory");
        goto out;
    }
    long ms = (long)(c->timeout_ns / 1000000);
    curl_easy_setopt(cu, CURLOPT_URL, c->url);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(cu, CURLOPT_POST, 1L);
    curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, &rep);
    curl_easy_setopt(cu, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(cu, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(cu, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(cu, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(cu, CURLOPT_XFERINFODATA, e->rw);
    if (c->tls_ca[0])
        curl_easy_setopt(cu, CURLOPT_CAINFO, c->tls_ca);
    if (c->tls_cert[0]) {
        curl_easy_setopt(cu, CURLOPT_SSLCERT, c->tls_cert);
        curl_easy_setopt(cu, CURLOPT_SSLKEY, c->tls_key);
    }
    curl_easy_setopt(cu, CURLOPT_SSL_VERIFYPEER, c->insecure_skip_verify ? 0L : 1L);
    curl_easy_setopt(cu, CURLOPT_SSL_VERIFYHOST, c->insecure_skip_verify ? 0L : 2L);
    CURLcode rc = curl_easy_perform(cu);
    if (rc != CURLE_OK) {
        snprintf(why, whyn, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
    /* the receiver's own words, on one line */
    for (char *q = rep.buf; *q; q++)
        if (*q == '\n' || *q == '\r' || *q == '\t')
            *q = ' ';
    snprintf(why, whyn, "%s", rep.buf);
out:
    explicit_bzero(secret, sizeof secret);
    explicit_bzero(auth, sizeof auth);
    curl_slist_free_all(h);
    return status;
}

/* The pending count and its age into the stats, when due (store/cursor.h paces it). */
static void count_pending(struct endpoint *e, bool force)
{
    uint64_t n;
    double lag;
    if (wt_cursor_pending_paced(e->cur, force, &n, &lag) != 1)
        return;
    pthread_mutex_lock(&e->rw->mu);
    e->st.pending = n;
    e->st.lag_s = lag;
    pthread_mutex_unlock(&e->rw->mu);
}

static bool keep_series(void *ctx, const char *metric, const char *labels)
{
    const struct endpoint *e = ctx;
    return wt_remote_write_match(e->cf.sel, e->cf.nsel, metric, labels);
}

/* Series the store gained since the last round: their label sets go into the encoder. */
static int refresh(struct endpoint *e)
{
    int added = wt_cursor_refresh(e->cur, keep_series, e);
    if (added < 0)
        return added;
    size_t n = wt_cursor_nseries(e->cur);
    for (size_t i = n - (size_t)added; i < n; i++) {
        const struct wt_cursor_series *s = wt_cursor_series_at(e->cur, i);
        int k = wt_remote_write_encoder_add(e->enc, s->metric, s->labels);
        if (k != (int)i) {
            /* cannot happen with labels the store wrote; keep indices aligned anyway */
            wt_error(MOD, "endpoint %s: cannot encode series %s{%s}", e->cf.name, s->metric,
                     s->labels);
            return k < 0 ? k : -EINVAL;
        }
    }
    return 0;
}

static void add_stat(struct endpoint *e, uint64_t *field, uint64_t n)
{
    pthread_mutex_lock(&e->rw->mu);
    *field += n;
    e->st.requests++;
    pthread_mutex_unlock(&e->rw->mu);
}

/* The credentials the endpoint sends, for messages. */
static void credentials(const struct wt_rw_endpoint_config *c, char *out, size_t n)
{
    if (c->bearer_token_file[0])
        snprintf(out, n, "bearer_token_file %s", c->bearer_token_file);
    else if (c->username[0])
        snprintf(out, n, "basic_auth.password_file %s", c->password_file);
    else
        snprintf(out, n, "no credentials configured");
}

/*
 * A 401 or 403: counted, logged when the endpoint begins refusing (not at every retry). The batch
 * stays pending; the secret file is read again for the next attempt, so fixing it recovers.
 */
static void refused(struct endpoint *e, const struct wt_cursor_batch *b, long status,
                    const char *why)
{
    char cred[WT_PATH_LEN + 32];
    pthread_mutex_lock(&e->rw->mu);
    e->st.auth_failures++;
    e->st.requests++;
    pthread_mutex_unlock(&e->rw->mu);
    e->refusals++;
    if (e->refused)
        return;
    e->refused = true;
    credentials(&e->cf, cred, sizeof cred);
    wt_error(MOD,
             "endpoint %s: the receiver refuses the credentials with HTTP %ld: %s url=%s (%s); "
             "%zu samples and what follows stay pending, retried with backoff up to %.1f s, the "
             "secret read again at each attempt",
             e->cf.name, status, why[0] ? why : "(no reason given)", e->cf.url, cred, b->n,
             (double)e->cf.max_backoff_ns / WT_NS_PER_S);
}

/* The first answer other than 401/403 after a refusal: logged once. */
static void accepted_again(struct endpoint *e, enum wt_rw_verdict v, long status)
{
    if (v == WT_RW_SENT)
        wt_info(MOD,
                "endpoint %s: the receiver accepts the credentials again after %" PRIu64
                " refused attempts; delivering",
                e->cf.name, e->refusals);
    else
        wt_info(
            MOD,
            "endpoint %s: the receiver no longer refuses the credentials (HTTP %ld after %" PRIu64
            " refused attempts)",
            e->cf.name, status, e->refusals);
    e->refused = false;
    e->refusals = 0;
}

/* Sends one batch until it is accepted or dropped (or the daemon stops); a 401 or 403 is
 * retried like a 5xx, never dropped, so fixing the credentials loses nothing. */
static void deliver(struct endpoint *e, const struct wt_cursor_batch *b, const char *body,
                    size_t len)
{
    int failures = 0;
    char why[600];
    uint64_t sup;
    for (;;) {
        long status = post(e, body, len, why, sizeof why);
        enum wt_rw_verdict v = wt_remote_write_verdict(status);
        if (v == WT_RW_AUTH) {
            refused(e, b, status, why);
            failures++;
            count_pending(e, false);
            if (wait_or_stop(e->rw, wt_notify_backoff(failures, e->cf.max_backoff_ns)))
                return;
            continue;
        }
        bool was_refused = status && e->refused;
        if (was_refused)
            accepted_again(e, v, status);
        if (v == WT_RW_SENT) {
            add_stat(e, &e->st.sent, b->n);
            if (failures && !was_refused)
                wt_info(MOD, "endpoint %s: delivering again after %d failed attempts", e->cf.name,
                        failures);
            break;
        }
        if (v == WT_RW_DROP) {
            add_stat(e, &e->st.dropped, b->n);
            if (wt_ratelimit_ok(&e->rl_drop, wt_now_mono_ns(), &sup))
                wt_error(MOD,
                         "endpoint %s: the receiver refused %zu samples with HTTP %ld, dropped "
                         "(not retried): %s url=%s suppressed=%" PRIu64,
                         e->cf.name, b->n, status, why[0] ? why : "(no reason given)", e->cf.url,
                         sup);
            break;
        }
        add_stat(e, &e->st.failed, b->n);
        failures++;
        int64_t wait = wt_notify_backoff(failures, e->cf.max_backoff_ns);
        if (stopping(e->rw))
            return;
        if (wt_ratelimit_ok(&e->rl_fail, wt_now_mono_ns(), &sup)) {
            if (status)
                wt_warn(MOD,
                        "endpoint %s: HTTP %ld for %zu samples, retrying in %.1f s: %s url=%s "
                        "suppressed=%" PRIu64,
                        e->cf.name, status, b->n, (double)wait / WT_NS_PER_S, why, e->cf.url, sup);
            else
                wt_warn(MOD,
                        "endpoint %s: cannot send %zu samples, retrying in %.1f s: %s url=%s "
                        "suppressed=%" PRIu64,
                        e->cf.name, b->n, (double)wait / WT_NS_PER_S, why, e->cf.url, sup);
        }
        count_pending(e, false);
        if (wait_or_stop(e->rw, wait))
            return;
    }
    /* sent or dropped: either way this batch is done */
    if (wt_cursor_ack(e->cur, b) != 0)
        wt_error(MOD, "endpoint %s: cannot store the cursor (the next start resends this batch)",
                 e->cf.name);
}

static void *sender_main(void *arg)
{
    struct endpoint *e = arg;
    struct wt_cursor_batch b = {0};
    struct wt_ratelimit rl_store = {.interval_ns = 60 * WT_NS_PER_S};
    uint64_t sup;
    pthread_setname_np(pthread_self(), "wt-rwrite");
    while (!stopping(e->rw)) {
        const char *body;
        size_t len;
        bool more = false;
        int rc = refresh(e);
        if (rc == 0)
            rc = wt_cursor_next(e->cur, (size_t)e->cf.batch_size, &b, &more);
        count_pending(e, false);
        if (rc) {
            if (wt_ratelimit_ok(&rl_store, wt_now_mono_ns(), &sup))
                wt_error(MOD, "endpoint %s: cannot read the store (%s); trying again", e->cf.name,
                         strerror(-rc));
            if (wait_or_stop(e->rw, e->cf.deadline_ns))
                break;
            continue;
        }
        if (b.n) {
            rc = wt_remote_write_encode(e->enc, &b, &body, &len, NULL);
            if (rc) {
                wt_error(MOD, "endpoint %s: cannot encode %zu samples (%s)", e->cf.name, b.n,
                         strerror(-rc));
            } else {
                deliver(e, &b, body, len);
            }
        }
        /* more is waiting: at once; else let the store gather some */
        if (!more) {
            count_pending(e, true);
            if (wait_or_stop(e->rw, e->cf.deadline_ns))
                break;
        }
    }
    wt_cursor_batch_free(&b);
    return NULL;
}

/* ---- /metrics ----------------------------------------------------------------------------- */

static const struct {
    const char *name, *help;
    enum wt_metric_type type;
} fams[6] = {
    {"wattage_remote_write_samples_sent_total",
     "Samples the remote write endpoint accepted (2xx), since the daemon started", WT_COUNTER},
    {"wattage_remote_write_samples_failed_total",
     "Samples of requests that failed with 5xx, 429, a timeout or a network error (retried)",
     WT_COUNTER},
    {"wattage_remote_write_samples_dropped_total",
     "Samples of batches the endpoint refused with another 4xx (dropped, not retried)", WT_COUNTER},
    {"wattage_remote_write_samples_pending", "Stored samples the endpoint has not acknowledged yet",
     WT_GAUGE},
    {"wattage_remote_write_lag_seconds",
     "Age of the oldest stored sample the endpoint has not acknowledged (0 when none)", WT_GAUGE},
    {"wattage_remote_write_auth_failures_total",
     "Requests the endpoint refused with 401 or 403 (retried with backoff; the samples stay "
     "pending)",
     WT_COUNTER},
};

static int family(struct wt_remote_write *rw, int k, struct wt_expo_family *fam)
{
    memset(fam, 0, sizeof *fam);
    fam->name = fams[k].name;
    fam->help = fams[k].help;
    fam->type = fams[k].type;
    fam->s = calloc(rw->n, sizeof *fam->s);
    if (!fam->s)
        return -ENOMEM;
    pthread_mutex_lock(&rw->mu);
    for (size_t i = 0; i < rw->n; i++) {
        const struct wt_rw_stats *s = &rw->ep[i].st;
        double v = k == 0   ? (double)s->sent
                   : k == 1 ? (double)s->failed
                   : k == 2 ? (double)s->dropped
                   : k == 3 ? (double)s->pending
                   : k == 4 ? s->lag_s
                            : (double)s->auth_failures;
        if (wt_labels(fam->s[i].labels, sizeof fam->s[i].labels, "endpoint", rw->ep[i].cf.name,
                      NULL) != 0)
            continue;
        fam->s[fam->n++].value = v;
    }
    pthread_mutex_unlock(&rw->mu);
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
static int fam_dropped(void *ctx, struct wt_expo_family *f)
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
static int fam_auth(void *ctx, struct wt_expo_family *f)
{
    return family(ctx, 5, f);
}

int wt_remote_write_stats(struct wt_remote_write *rw, size_t i, struct wt_rw_stats *out)
{
    if (!rw || i >= rw->n)
        return -ENOENT;
    pthread_mutex_lock(&rw->mu);
    *out = rw->ep[i].st;
    pthread_mutex_unlock(&rw->mu);
    return 0;
}

/* ---- life cycle --------------------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int wt_remote_write_open(const struct wt_config *cfg, struct wt_http *http,
                         struct wt_remote_write **out, struct wt_err *err)
{
    struct wt_rw_config *rc_cfg = malloc(sizeof *rc_cfg);
    struct wt_remote_write *rw = calloc(1, sizeof *rw);
    struct wt_topology *topo = NULL;
    pthread_condattr_t ca;
    int rc;
    *out = NULL;
    if (!rc_cfg || !rw) {
        free(rc_cfg);
        free(rw);
        return -ENOMEM;
    }
    pthread_mutex_init(&rw->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rw->cv, &ca);
    pthread_condattr_destroy(&ca);
    rc = wt_remote_write_config_parse(wt_config_file(cfg), wt_config_section(cfg, "remote_write"),
                                      rc_cfg, err);
    if (rc || !rc_cfg->n)
        goto done;
    rc = wt_topology_load(cfg, &topo, err);
    if (rc)
        goto done;
    rw->ep = calloc(rc_cfg->n, sizeof *rw->ep);
    if (!rw->ep) {
        rc = -ENOMEM;
        goto done;
    }
    pthread_once(&curl_once, curl_init);
    int64_t now = wt_now_real_ns();
    for (size_t i = 0; i < rc_cfg->n; i++) {
        struct endpoint *e = &rw->ep[i];
        char secret[512];
        e->rw = rw;
        e->cf = rc_cfg->ep[i];
        e->rl_fail.interval_ns = 30 * WT_NS_PER_S;
        e->rl_drop.interval_ns = 30 * WT_NS_PER_S;
        rw->n++;
        /* a secret that cannot be read is a setup error, named at start */
        if (e->cf.bearer_token_file[0])
            rc = read_secret("bearer_token_file", e->cf.bearer_token_file, secret, sizeof secret,
                             err);
        if (!rc && e->cf.username[0])
            rc = read_secret("basic_auth.password_file", e->cf.password_file, secret, sizeof secret,
                             err);
        explicit_bzero(secret, sizeof secret);
        if (!rc)
            rc = wt_cursor_open(cfg->store.path, e->cf.name, now - e->cf.backfill_ns, &e->cur, err);
        if (!rc)
            rc = wt_remote_write_encoder_open(topo->node, &e->enc);
        if (!rc && !(e->curl = curl_easy_init()))
            rc = -ENOMEM;
        if (rc) {
            char msg[WT_ERR_LEN];
            snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : strerror(-rc));
            wt_err_set(err, "remote_write[%zu] (%s): %s", i, e->cf.name, msg);
            goto done;
        }
    }
    if (http &&
        (wt_http_add_family(http, fam_sent, rw) || wt_http_add_family(http, fam_failed, rw) ||
         wt_http_add_family(http, fam_dropped, rw) || wt_http_add_family(http, fam_pending, rw) ||
         wt_http_add_family(http, fam_lag, rw) || wt_http_add_family(http, fam_auth, rw)))
        wt_warn(MOD, "no room on /metrics for the wattage_remote_write_* families");
    for (size_t i = 0; i < rw->n; i++) {
        struct endpoint *e = &rw->ep[i];
        rc = -pthread_create(&e->thread, NULL, sender_main, e);
        if (rc) {
            wt_err_set(err, "remote_write: cannot start a sender thread (%s)", strerror(-rc));
            goto done;
        }
        e->started = true;
        wt_info(MOD, "endpoint %s url=%s node=%s batch_size=%" PRId64 " series=%s", e->cf.name,
                e->cf.url, topo->node, e->cf.batch_size, e->cf.nsel ? "matched" : "all");
    }
done:
    free(rc_cfg);
    free(topo);
    if (rc) {
        wt_remote_write_close(rw);
        return rc;
    }
    *out = rw;
    return 0;
}

void wt_remote_write_close(struct wt_remote_write *rw)
{
    if (!rw)
        return;
    pthread_mutex_lock(&rw->mu);
    rw->stop = true;
    pthread_cond_broadcast(&rw->cv);
    pthread_mutex_unlock(&rw->mu);
    for (size_t i = 0; i < rw->n; i++) {
        struct endpoint *e = &rw->ep[i];
        if (e->started)
            pthread_join(e->thread, NULL);
        wt_cursor_close(e->cur);
        wt_remote_write_encoder_close(e->enc);
        if (e->curl)
            curl_easy_cleanup(e->curl);
    }
    free(rw->ep);
    pthread_mutex_destroy(&rw->mu);
    pthread_cond_destroy(&rw->cv);
    free(rw);
}
