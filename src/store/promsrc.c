/* SPDX-License-Identifier: MIT */
/*
 * The engine client (see promsrc.h): form-encoded POSTs to /api/v1/query with libcurl, the
 * answers parsed (promsrc_parse.c) into sample arrays, the samples around window edges and the
 * fleet's energy rows from them with the store's own window math, and the copy of the fleet's
 * samples into a working store. One job over the fleet is promsrc_job.c.
 */
#include "store/promsrc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/curl_lib.h"
#include "store/promsrc_int.h"
#include "store/store.h"

#define MAX_BODY (512u << 20) /* an answer larger than this is refused, not buffered */
#define DEFAULT_PAD_NS (30 * WT_NS_PER_S)
#define DEFAULT_BATCH_NODES 256
#define MSG_QUERY 160 /* a query is quoted in messages up to this many characters */
#define MSG_ERROR 200 /* an engine's error: its last characters (the reason comes last) */
/* An engine that answers 502, 503 or 504 (unavailable for now: restarting, overloaded, a proxy
 * without a backend) is asked again after BACKOFF_NS, then twice as long each time, TRIES times
 * in all (1.75 s of waiting); its last answer is then the error. */
#define TRIES 4
#define BACKOFF_NS (250 * WT_NS_PER_MS)

const char *wt_promsrc_name(const struct wt_promsrc *p)
{
    return p->name;
}

static int read_token(const char *path, char *out, size_t n, struct wt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return wt_err_set(err, "source token file %s: %s", path, strerror(errno)), -EINVAL;
    size_t len = fread(out, 1, n - 1, f);
    fclose(f);
    out[len] = '\0';
    while (len && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' '))
        out[--len] = '\0';
    if (!len)
        return wt_err_set(err, "source token file %s is empty", path);
    return 0;
}

int wt_promsrc_open(const char *source, const struct wt_promsrc_opts *opts, struct wt_promsrc **out,
                    struct wt_err *err)
{
    static const struct {
        const char *scheme, *as;
    } schemes[] = {{"prometheus://", "http://"},
                   {"victoriametrics://", "http://"},
                   {"http://", "http://"},
                   {"https://", "https://"}};
    *out = NULL;
    const char *rest = NULL, *as = NULL;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0] && !rest; i++) {
        size_t k = strlen(schemes[i].scheme);
        if (strncmp(source, schemes[i].scheme, k) == 0) {
            rest = source + k;
            as = schemes[i].as;
        }
    }
    if (!rest || !*rest || *rest == '/' || strlen(source) >= 400)
        return wt_err_set(err,
                          "--source \"%s\": expected prometheus://HOST:PORT, "
                          "victoriametrics://HOST:PORT or an http(s):// URL",
                          source);
    int lrc = wt_curl_load("--source", err);
    if (lrc)
        return lrc;
    struct wt_promsrc *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    snprintf(p->name, sizeof p->name, "%s", source);
    snprintf(p->base, sizeof p->base, "%s%s", as, rest);
    size_t bl = strlen(p->base);
    while (bl && p->base[bl - 1] == '/')
        p->base[--bl] = '\0';
    if (opts)
        p->o = *opts;
    if (!p->o.timeout_ns)
        p->o.timeout_ns = 30 * WT_NS_PER_S;
    if (!p->o.pad_ns)
        p->o.pad_ns = DEFAULT_PAD_NS;
    if (!p->o.batch_nodes)
        p->o.batch_nodes = DEFAULT_BATCH_NODES;
    if (p->o.token_file) {
        char tok[512];
        int rc = read_token(p->o.token_file, tok, sizeof tok, err);
        if (rc) {
            free(p);
            return rc;
        }
        snprintf(p->auth, sizeof p->auth, "Authorization: Bearer %s", tok);
    }
    *out = p;
    return 0;
}

void wt_promsrc_close(struct wt_promsrc *p)
{
    if (!p)
        return;
    if (p->curl)
        curl_easy_cleanup(p->curl);
    free(p);
}

/* ---- HTTP ---- */

struct body {
    char *buf;
    size_t len, cap;
    bool too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct body *b = ud;
    size_t n = size * nmemb;
    if (b->len + n + 1 > MAX_BODY) {
        b->too_big = true;
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 65536;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *nb = realloc(b->buf, nc);
        if (!nb)
            return 0;
        b->buf = nb;
        b->cap = nc;
    }
    memcpy(b->buf + b->len, ptr, n);
    b->len += n;
    b->buf[b->len] = '\0';
    return n;
}

/* POSTs the form body post to url (post NULL: a GET of url); *out is the answer, NUL-terminated
 * (also a 4xx/5xx's). */
static int post_body(struct wt_promsrc *p, const char *url, const char *post, long *status,
                     struct body *out, struct wt_err *err)
{
    struct body b = {0};
    struct curl_slist *hdr = NULL;
    int rc = 0;
    memset(out, 0, sizeof *out);
    if (!p->curl && !(p->curl = curl_easy_init()))
        return -ENOMEM;
    CURL *c = p->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (post) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, post); /* application/x-www-form-urlencoded */
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(post));
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(p->o.timeout_ns / 1000000));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* gzip when the engine offers it */
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    if (p->o.ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, p->o.ca_file);
    if (p->o.cert_file)
        curl_easy_setopt(c, CURLOPT_SSLCERT, p->o.cert_file);
    if (p->o.key_file)
        curl_easy_setopt(c, CURLOPT_SSLKEY, p->o.key_file);
    if (p->auth[0]) {
        hdr = curl_slist_append(NULL, p->auth);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    }
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        rc = b.too_big
                 ? wt_err_set(err, "%s: the answer is larger than %u MiB", p->name, MAX_BODY >> 20)
                 : wt_err_set(err, "%s: %s", p->name, curl_easy_strerror(cc));
        rc = -EIO;
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    *out = b;
    b.buf = NULL;
out:
    curl_slist_free_all(hdr);
    free(b.buf);
    return rc;
}

/* promql as messages quote it: its first MSG_QUERY characters (a batch names many nodes). */
static void query_quote(const char *promql, char *out, size_t n)
{
    size_t len = strlen(promql);
    if (len <= MSG_QUERY)
        snprintf(out, n, "%s", promql);
    else
        snprintf(out, n, "%.*s... (%zu characters)", MSG_QUERY, promql, len);
}

static bool unavailable(long status)
{
    return status == 502 || status == 503 || status == 504;
}

/* POSTs promql as the form's field (query, or match[] of /api/v1/series) to endpoint with the
 * form's time fields in when (get: the same fields in a GET's URL), the answer's series into set;
 * as wt_promsrc_query_status. */
static int ask_as(struct wt_promsrc *p, bool get, const char *endpoint, const char *field,
                  const char *promql, const char *when, struct wt_promsrc_set *set, long *status,
                  struct wt_err *err)
{
    char url[600], shown[MSG_QUERY + 40];
    *status = 0;
    if (!p->curl && !(p->curl = curl_easy_init()))
        return -ENOMEM;
    char *q = curl_easy_escape(p->curl, promql, 0);
    if (!q)
        return -ENOMEM;
    size_t n = strlen(field) + strlen(q) + strlen(when) + 16;
    char *body = malloc(n);
    if (!body) {
        curl_free(q);
        return -ENOMEM;
    }
    snprintf(body, n, "%s=%s&%s", field, q, when);
    curl_free(q);
    char *geturl = NULL;
    snprintf(url, sizeof url, "%s/api/v1/%s", p->base, endpoint);
    if (get) {
        size_t ul = strlen(url) + strlen(body) + 2;
        if (!(geturl = malloc(ul))) {
            free(body);
            return -ENOMEM;
        }
        snprintf(geturl, ul, "%s?%s", url, body);
    }
    struct body b;
    int rc, tries = 0;
    for (int64_t wait = BACKOFF_NS;; wait *= 2) {
        rc = get ? post_body(p, geturl, NULL, status, &b, err)
                 : post_body(p, url, body, status, &b, err);
        if (rc || !unavailable(*status) || ++tries == TRIES)
            break;
        free(b.buf);
        wt_sleep_until_mono(wt_now_mono_ns() + wait);
    }
    free(body);
    free(geturl);
    if (rc)
        return rc;
    query_quote(promql, shown, sizeof shown);
    /* samples go straight into set: on any error below the caller drops the set with the
     * figure (an error answer holds none) */
    struct wt_promsrc_answer *a = malloc(sizeof *a);
    size_t at = 0;
    if (!a) {
        free(b.buf);
        return -ENOMEM;
    }
    /* an unavailable engine's answer holds no samples: whatever it says goes into a set of its
     * own */
    struct wt_promsrc_set none = {0};
    bool down = unavailable(*status);
    char warning[MSG_ERROR + 1] = "";
    rc = b.buf ? wt_promsrc_parse_warned(b.buf, b.len, down ? &none : set, a, &at, warning,
                                         sizeof warning)
               : -EINVAL;
    wt_promsrc_set_free(&none);
    free(b.buf);
    if (down) {
        wt_err_set(err,
                   "%s: query %s: HTTP %ld: the engine was unavailable at each of %d tries over "
                   "%.2f s: %s",
                   p->name, shown, *status, TRIES,
                   (double)(BACKOFF_NS * ((1 << (TRIES - 1)) - 1)) / 1e9,
                   rc == 0 && a->error[0] ? a->error : "no answer of the query API");
        rc = -EIO;
    } else if (rc == -EINVAL) {
        wt_err_set(err, "%s: query %s: HTTP %ld, not a JSON answer of the query API (at byte %zu)",
                   p->name, shown, *status, at);
        rc = -EIO;
    } else if (rc == 0 && (*status / 100 != 2 || strcmp(a->status, "success") != 0)) {
        size_t el = strlen(a->error);
        wt_err_set(err, "%s: query %s: HTTP %ld: %s%s", p->name, shown, *status,
                   el > MSG_ERROR ? "..." : "",
                   !el              ? "no success in the answer"
                   : el > MSG_ERROR ? a->error + el - MSG_ERROR
                                    : a->error);
        rc = -EIO;
    } else if (rc == 0 && a->partial) {
        /* a VictoriaMetrics cluster answers what the storage nodes it reached hold, and says
         * so: a sum over that would be short without a sign */
        wt_err_set(err,
                   "%s: query %s: the engine's answer is partial (isPartial: some of its "
                   "storage did not answer)",
                   p->name, shown);
        rc = -EIO;
    } else if (rc == 0 && warning[0]) {
        /* an engine that cut its answer short (a limit on series or samples, a store that did
         * not answer) says so in "warnings": a sum over it would be short without a sign */
        wt_err_set(err,
                   "%s: query %s: the engine warns that its answer may be incomplete, so no "
                   "figure is made from it: %s",
                   p->name, shown, warning);
        rc = -EIO;
    }
    free(a);
    return rc;
}

static int ask(struct wt_promsrc *p, const char *endpoint, const char *field, const char *promql,
               const char *when, struct wt_promsrc_set *set, long *status, struct wt_err *err)
{
    return ask_as(p, false, endpoint, field, promql, when, set, status, err);
}

int wt_promsrc_query_status(struct wt_promsrc *p, const char *promql, int64_t t_ns,
                            struct wt_promsrc_set *set, long *status, struct wt_err *err)
{
    char when[48];
    snprintf(when, sizeof when, "time=%.3f", (double)t_ns / 1e9);
    return ask(p, "query", "query", promql, when, set, status, err);
}

int wt_promsrc_series_status(struct wt_promsrc *p, const char *match, int64_t start_ns,
                             int64_t end_ns, struct wt_promsrc_set *set, long *status,
                             struct wt_err *err)
{
    char when[96];
    snprintf(when, sizeof when, "start=%.3f&end=%.3f", (double)start_ns / 1e9,
             (double)end_ns / 1e9);
    return ask(p, "series", "match%5B%5D", match, when, set, status, err);
}

int wt_promsrc_label_values_status(struct wt_promsrc *p, const char *label, const char *match,
                                   int64_t start_ns, int64_t end_ns, struct wt_promsrc_set *set,
                                   long *status, struct wt_err *err)
{
    char when[96], endpoint[160];
    snprintf(endpoint, sizeof endpoint, "label/%s/values", label);
    snprintf(when, sizeof when, "start=%.3f&end=%.3f", (double)start_ns / 1e9,
             (double)end_ns / 1e9);
    /* GET: Prometheus answers this endpoint to no POST */
    return ask_as(p, true, endpoint, "match%5B%5D", match, when, set, status, err);
}

int wt_promsrc_query_range(struct wt_promsrc *p, const char *promql, int64_t start_ns,
                           int64_t end_ns, int64_t step_ns, struct wt_promsrc_set *set,
                           struct wt_err *err)
{
    long status;
    return wt_promsrc_query_range_status(p, promql, start_ns, end_ns, step_ns, set, &status, err);
}

int wt_promsrc_query_range_status(struct wt_promsrc *p, const char *promql, int64_t start_ns,
                                  int64_t end_ns, int64_t step_ns, struct wt_promsrc_set *set,
                                  long *status, struct wt_err *err)
{
    char when[96];
    *status = 0;
    if (step_ns < WT_NS_PER_MS || end_ns < start_ns)
        return wt_err_set(err, "query_range %s: a step of at least 1 ms and end >= start", promql);
    snprintf(when, sizeof when, "start=%.3f&end=%.3f&step=%.3f", (double)start_ns / 1e9,
             (double)end_ns / 1e9, (double)step_ns / 1e9);
    return ask(p, "query_range", "query", promql, when, set, status, err);
}

int wt_promsrc_query(struct wt_promsrc *p, const char *promql, int64_t t_ns,
                     struct wt_promsrc_set *set, struct wt_err *err)
{
    long status;
    return wt_promsrc_query_status(p, promql, t_ns, set, &status, err);
}

/* ---- samples around window edges ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int wt_promsrc_around(struct wt_promsrc *p, const char *sel, int64_t *edges, size_t ne,
                      struct wt_promsrc_set *set, long *status, struct wt_err *err)
{
    return wt_promsrc_around_pad(p, sel, edges, ne, p->o.pad_ns, 2 * p->o.pad_ns, set, status, err);
}

int wt_promsrc_around_pad(struct wt_promsrc *p, const char *sel, int64_t *edges, size_t ne,
                          int64_t pad, int64_t join, struct wt_promsrc_set *set, long *status,
                          struct wt_err *err)
{
    qsort(edges, ne, sizeof *edges, cmp_i64);
    size_t qlen = strlen(sel) + 64;
    char *q = malloc(qlen);
    if (!q)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < ne && rc == 0;) {
        size_t k = i;
        while (k + 1 < ne && edges[k + 1] - edges[k] <= join)
            k++;
        int64_t lo = edges[i] - pad, hi = edges[k] + pad;
        /* SEL[d] at hi holds the samples in (hi - d, hi]: one ms more to include lo */
        snprintf(q, qlen, "%s[%lldms]", sel, (long long)((hi - lo) / 1000000 + 1));
        rc = wt_promsrc_query_status(p, q, hi, set, status, err);
        i = k + 1;
    }
    free(q);
    return rc;
}

void wt_promsrc_window(const struct wt_promsrc_series *s, enum wt_series_kind kind, int64_t a,
                       int64_t b, double *energy_j, double *covered_s)
{
    struct wt_segment_rule rule = {.kind = kind};
    struct wt_window w = wt_window_begin(&rule, a, b);
    for (size_t i = 0; i < s->n; i++)
        wt_window_add(&w, s->pts[i].t_ns, s->pts[i].v);
    *energy_j = w.energy_j;
    *covered_s = w.covered_ns / 1e9;
}

void wt_promsrc_fill_row(struct wt_energy_row *r, const struct wt_promsrc_series *s, int64_t a,
                         int64_t b)
{
    memset(r, 0, sizeof *r);
    /* the row's names copied, without printf's parsing per row */
    wt_promsrc_copy_cut(r->s.node, sizeof r->s.node, s->node);
    wt_promsrc_copy_cut(r->s.metric, sizeof r->s.metric, s->metric);
    wt_promsrc_copy_cut(r->s.labels, sizeof r->s.labels, s->labels);
    r->s.kind = wt_series_kind_of(s->metric, s->labels);
    r->method = r->s.kind == WT_SK_INTEGRATED ? "integrated" : "counter";
    wt_promsrc_window(s, r->s.kind, a, b, &r->energy_j, &r->covered_s);
    r->coverage = r->covered_s / ((double)(b - a) / 1e9);
    if (r->coverage > 1)
        r->coverage = 1;
    r->chosen = true;
}

#define ENERGY_SEL "{__name__=~\".+_joules_total\",__name__!~\"wattage_job_.+\""

int wt_promsrc_energy(struct wt_promsrc *p, int64_t from, int64_t to, struct wt_energy_row **rows,
                      size_t *n, struct wt_err *err)
{
    struct wt_promsrc_set set = {0};
    int64_t edges[2] = {from, to};
    *rows = NULL;
    *n = 0;
    if (to <= from)
        return wt_err_set(err, "the window is empty: --to must be after --from");
    long status;
    int rc = wt_promsrc_around(p, ENERGY_SEL "}", edges, 2, &set, &status, err);
    if (rc)
        goto out;
    struct wt_energy_row *r = calloc(set.n ? set.n : 1, sizeof *r);
    if (!r) {
        rc = -ENOMEM;
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < set.n; i++) {
        if (wt_series_kind_of(set.s[i].metric, set.s[i].labels) != WT_SK_GAUGE)
            wt_promsrc_fill_row(&r[k++], &set.s[i], from, to);
    }
    wt_energy_choose(r, k);
    *rows = r;
    *n = k;
out:
    wt_promsrc_set_free(&set);
    return rc;
}

void wt_promsrc_alone(struct wt_err *err, const char *node, const char *what)
{
    char m[WT_ERR_LEN];
    snprintf(m, sizeof m, "%s", err->msg);
    wt_err_set(err,
               "node %s alone is over the engine's limit on series or samples per query (the "
               "%s's nodes were split into smaller queries down to one): %s",
               node, what, m);
}
