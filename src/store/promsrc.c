/* SPDX-License-Identifier: MIT */
/*
 * The engine client (see promsrc.h): form-encoded POSTs to /api/v1/query with libcurl, the
 * answer parsed without a tree straight into sample arrays (series found by a hash of node, name
 * and labels), and the fleet's energy and job figures from them with the store's own window math. A
 * job's nodes are kept in a hash by name, and its energy series sorted by node, so each node's
 * figures read its own series only: nothing here grows with the square of nodes or series.
 */
#include "store/promsrc.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/store.h"

#define MAX_BODY (512u << 20) /* an answer larger than this is refused, not buffered */
#define LOOKBACK "31d"        /* how far back the job series are looked for */
#define DEFAULT_PAD_NS (30 * WT_NS_PER_S)
#define DEFAULT_BATCH_NODES 256
#define MSG_QUERY 160 /* a query is quoted in messages up to this many characters */
#define MSG_ERROR 200 /* an engine's error: its last characters (the reason comes last) */

struct wt_promsrc {
    char name[512];
    char base[512];
    char auth[600]; /* "Authorization: Bearer …" or "" */
    struct wt_promsrc_opts o;
    CURL *curl;
};

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

void wt_promsrc_set_free(struct wt_promsrc_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->s[i].pts);
    free(set->s);
    free(set->index);
    memset(set, 0, sizeof *set);
}

/* ---- string hashing (FNV-1a) and open addressing: slots hold an index + 1, 0 is empty ---- */

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator: ("ab","c") is not ("a","bc") */
}
#define HASH_SEED 0xcbf29ce484222325ull

static uint64_t series_hash(const char *node, const char *metric, const char *labels)
{
    return hash_str(hash_str(hash_str(HASH_SEED, node), metric), labels);
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

/* POSTs the form body post to url; *out is the answer, NUL-terminated (also a 4xx/5xx's). */
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
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, post); /* application/x-www-form-urlencoded */
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(post));
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

/* ---- answers into sample arrays ---- */

static int push_point(struct wt_promsrc_series *s, int64_t t, double v)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        struct wt_point *grown = realloc(s->pts, nc * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        s->pts = grown;
        s->cap = nc;
    }
    struct wt_point *np = s->pts;
    size_t i = s->n;
    /* answers come in time order; a merge of a second query's range inserts */
    while (i > 0 && np[i - 1].t_ns > t)
        i--;
    if (i > 0 && np[i - 1].t_ns == t)
        return 0; /* the same sample from two overlapping ranges */
    memmove(np + i + 1, np + i, (s->n - i) * sizeof *np);
    np[i].t_ns = t;
    np[i].v = v;
    s->n++;
    return 0;
}

/* Puts series i into the index (which has room). */
static void index_put(struct wt_promsrc_set *set, size_t i)
{
    const struct wt_promsrc_series *s = &set->s[i];
    size_t mask = set->index_cap - 1;
    size_t h = (size_t)series_hash(s->node, s->metric, s->labels) & mask;
    while (set->index[h])
        h = (h + 1) & mask;
    set->index[h] = i + 1;
}

static struct wt_promsrc_series *find_or_add(struct wt_promsrc_set *set, const char *node,
                                             const char *metric, const char *labels)
{
    /* the index is rebuilt when it is half full, or when the set grew without it (a caller
     * that sorted the set frees the index) */
    if (2 * (set->n + 1) > set->index_cap || !set->index) {
        size_t nc = set->index_cap ? set->index_cap : 256;
        while (2 * (set->n + 1) > nc)
            nc *= 2;
        size_t *ni = calloc(nc, sizeof *ni);
        if (!ni)
            return NULL;
        free(set->index);
        set->index = ni;
        set->index_cap = nc;
        for (size_t i = 0; i < set->n; i++)
            index_put(set, i);
    }
    size_t mask = set->index_cap - 1;
    size_t h = (size_t)series_hash(node, metric, labels) & mask;
    for (; set->index[h]; h = (h + 1) & mask) {
        struct wt_promsrc_series *s = &set->s[set->index[h] - 1];
        if (!strcmp(s->node, node) && !strcmp(s->metric, metric) && !strcmp(s->labels, labels))
            return s;
    }
    if (set->n == set->cap) {
        size_t nc = set->cap ? 2 * set->cap : 64;
        struct wt_promsrc_series *ns = realloc(set->s, nc * sizeof *ns);
        if (!ns)
            return NULL;
        set->s = ns;
        set->cap = nc;
    }
    struct wt_promsrc_series *s = &set->s[set->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->node, sizeof s->node, "%s", node);
    snprintf(s->metric, sizeof s->metric, "%s", metric);
    snprintf(s->labels, sizeof s->labels, "%s", labels);
    set->index[h] = set->n;
    return s;
}

/* ---- the query API's answer, parsed without a tree ----
 *
 * {"status":..., "error":..., "isPartial":..., "data":{"result":[{"metric":{...},
 * "values":[[t,"v"],...]} or "value":[t,"v"], ...]}}: every sample goes straight into its series
 * (no node per value, no allocation per sample); other keys are skipped, whatever they hold. */

struct jp {
    const char *p, *end;
    int depth;
};

#define JP_DEPTH 64

static void jp_ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

/* The next character (after white space) is c: consumed, true. */
static bool jp_eat(struct jp *j, char c)
{
    jp_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int jp_hex4(struct jp *j, unsigned *u)
{
    if (j->end - j->p < 4)
        return -EINVAL;
    *u = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(j->p[i]);
        if (h < 0)
            return -EINVAL;
        *u = *u << 4 | (unsigned)h;
    }
    j->p += 4;
    return 0;
}

/* Code point u as UTF-8 into o (4 bytes of room); returns its length. */
static size_t put_utf8(unsigned u, char *o)
{
    if (u < 0x80) {
        o[0] = (char)u;
        return 1;
    }
    if (u < 0x800) {
        o[0] = (char)(0xc0 | u >> 6);
        o[1] = (char)(0x80 | (u & 0x3f));
        return 2;
    }
    if (u < 0x10000) {
        o[0] = (char)(0xe0 | u >> 12);
        o[1] = (char)(0x80 | (u >> 6 & 0x3f));
        o[2] = (char)(0x80 | (u & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | u >> 18);
    o[1] = (char)(0x80 | (u >> 12 & 0x3f));
    o[2] = (char)(0x80 | (u >> 6 & 0x3f));
    o[3] = (char)(0x80 | (u & 0x3f));
    return 4;
}

/* One escape after the backslash: its bytes into tmp, their count into *tl. */
static int jp_escape(struct jp *j, char *tmp, size_t *tl)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (j->p >= j->end)
        return -EINVAL;
    char e = *j->p++;
    const char *k = e ? strchr(from, e) : NULL;
    *tl = 1;
    if (k) {
        tmp[0] = to[k - from];
        return 0;
    }
    unsigned u, lo;
    if (e != 'u' || jp_hex4(j, &u))
        return -EINVAL;
    if (u >= 0xd800 && u < 0xdc00) { /* a surrogate pair */
        if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
            return -EINVAL;
        j->p += 2;
        if (jp_hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
            return -EINVAL;
        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    }
    *tl = put_utf8(u, tmp);
    return 0;
}

/*
 * A string, decoded into out (n bytes; out NULL: skipped). *cut is set when it did not fit.
 * -EINVAL: not a string, or a bad escape.
 */
static int jp_str(struct jp *j, char *out, size_t n, bool *cut)
{
    size_t k = 0;
    if (!jp_eat(j, '"'))
        return -EINVAL;
    while (j->p < j->end && *j->p != '"') {
        char tmp[4];
        size_t tl = 1;
        tmp[0] = *j->p++;
        if (tmp[0] == '\\' && jp_escape(j, tmp, &tl) != 0)
            return -EINVAL;
        if (!out)
            continue;
        if (k + tl < n) {
            memcpy(out + k, tmp, tl);
            k += tl;
        } else {
            *cut = true;
        }
    }
    if (j->p >= j->end)
        return -EINVAL;
    j->p++;
    if (out && n)
        out[k] = '\0';
    return 0;
}

static int jp_num(struct jp *j, double *v)
{
    jp_ws(j);
    char *e;
    *v = strtod(j->p, &e); /* the body is NUL-terminated */
    if (e == j->p || e > j->end)
        return -EINVAL;
    j->p = e;
    return 0;
}

/* Skips one value of any kind. */
static int jp_skip(struct jp *j)
{
    static const char *const lits[] = {"true", "false", "null"};
    jp_ws(j);
    if (j->p >= j->end)
        return -EINVAL;
    char c = *j->p;
    if (c == '"')
        return jp_str(j, NULL, 0, NULL);
    if (c != '{' && c != '[') {
        for (size_t i = 0; i < 3; i++) {
            size_t l = strlen(lits[i]);
            if ((size_t)(j->end - j->p) >= l && !strncmp(j->p, lits[i], l)) {
                j->p += l;
                return 0;
            }
        }
        double v;
        return jp_num(j, &v);
    }
    char close = c == '{' ? '}' : ']';
    if (++j->depth > JP_DEPTH)
        return -EINVAL;
    j->p++;
    if (!jp_eat(j, close)) {
        do {
            if (c == '{' && (jp_str(j, NULL, 0, NULL) || !jp_eat(j, ':')))
                return -EINVAL;
            if (jp_skip(j))
                return -EINVAL;
        } while (jp_eat(j, ','));
        if (!jp_eat(j, close))
            return -EINVAL;
    }
    j->depth--;
    return 0;
}

/* One [t, "v"] into s (NULL: read and dropped). A value that is not a number is skipped, as a
 * sample the engine could not give. */
static int jp_sample(struct jp *j, struct wt_promsrc_series *s)
{
    double ts, v;
    char vs[64], *e;
    bool cut = false;
    if (!jp_eat(j, '[') || jp_num(j, &ts) || !jp_eat(j, ',') || jp_str(j, vs, sizeof vs, &cut) ||
        !jp_eat(j, ']'))
        return -EINVAL;
    v = strtod(vs, &e);
    /* a stamp beyond what ns in 64 bits hold (year 2262) is no sample of ours */
    if (!s || cut || e == vs || !(ts > -9e9 && ts < 9e9))
        return 0;
    /* engines stamp in milliseconds: round to them, then ns */
    return push_point(s, (int64_t)llround(ts * 1e3) * 1000000, v);
}

static int jp_samples(struct jp *j, struct wt_promsrc_series *s)
{
    int rc;
    if (!jp_eat(j, '['))
        return -EINVAL;
    if (jp_eat(j, ']'))
        return 0;
    do {
        if ((rc = jp_sample(j, s)) != 0)
            return rc;
    } while (jp_eat(j, ','));
    return jp_eat(j, ']') ? 0 : -EINVAL;
}

/* src into dst (n bytes), cut to fit. */
static void copy_cut(char *dst, size_t n, const char *src)
{
    size_t l = strnlen(src, n - 1);
    memcpy(dst, src, l);
    dst[l] = '\0';
}

/* "metric": the node, the name and the other labels (canonical); *ours false when the labels
 * are longer than the store keeps (not a series of ours). */
static int jp_metric(struct jp *j, char *node, size_t nn, char *metric, size_t mn, char *labels,
                     size_t ln, bool *ours)
{
    char key[128], val[WT_LABELS_LEN];
    if (!jp_eat(j, '{'))
        return -EINVAL;
    if (jp_eat(j, '}'))
        return 0;
    do {
        bool cut = false;
        if (jp_str(j, key, sizeof key, &cut) || !jp_eat(j, ':') || jp_str(j, val, sizeof val, &cut))
            return -EINVAL;
        if (!strcmp(key, "__name__"))
            copy_cut(metric, mn, val);
        else if (!strcmp(key, "node"))
            copy_cut(node, nn, val);
        else if (cut || wt_labels_add(labels, ln, key, val) != 0)
            *ours = false;
    } while (jp_eat(j, ','));
    return jp_eat(j, '}') ? 0 : -EINVAL;
}

/* One element of "result": its series found or added, its samples appended. */
static int jp_result(struct jp *j, struct wt_promsrc_set *set)
{
    char node[64] = "", metric[96] = "", labels[WT_LABELS_LEN] = "", key[64];
    const char *one = NULL, *many = NULL; /* samples met before "metric" */
    bool have_metric = false, ours = true;
    struct wt_promsrc_series *s = NULL;
    int rc = 0;
    jp_ws(j);
    if (j->p < j->end && *j->p != '{')
        return jp_skip(j); /* not a series (a scalar's parts): nothing of ours */
    if (!jp_eat(j, '{'))
        return -EINVAL;
    if (jp_eat(j, '}'))
        return 0;
    do {
        bool cut = false;
        if (jp_str(j, key, sizeof key, &cut) || !jp_eat(j, ':'))
            return -EINVAL;
        bool many_k = !strcmp(key, "values");
        if (!strcmp(key, "metric")) {
            rc = jp_metric(j, node, sizeof node, metric, sizeof metric, labels, sizeof labels,
                           &ours);
            have_metric = true;
            if (rc == 0 && ours && !(s = find_or_add(set, node, metric, labels)))
                return -ENOMEM;
        } else if (many_k || !strcmp(key, "value")) {
            jp_ws(j);
            if (!have_metric) {
                *(many_k ? &many : &one) = j->p;
                rc = jp_skip(j);
            } else {
                rc = many_k ? jp_samples(j, s) : jp_sample(j, s);
            }
        } else {
            rc = jp_skip(j);
        }
        if (rc)
            return rc;
    } while (jp_eat(j, ','));
    if (!jp_eat(j, '}'))
        return -EINVAL;
    /* samples that came before the labels: read again, now that the series is known */
    const char *after = j->p;
    if (one) {
        j->p = one;
        rc = jp_sample(j, s);
    }
    if (many && rc == 0) {
        j->p = many;
        rc = jp_samples(j, s);
    }
    j->p = after;
    return rc;
}

/* "data": every series of "result" into set. */
static int jp_data(struct jp *j, struct wt_promsrc_set *set)
{
    char key[64];
    int rc = 0;
    if (!jp_eat(j, '{'))
        return jp_skip(j);
    if (jp_eat(j, '}'))
        return 0;
    do {
        bool cut = false;
        if (jp_str(j, key, sizeof key, &cut) || !jp_eat(j, ':'))
            return -EINVAL;
        if (strcmp(key, "result") != 0 || !jp_eat(j, '[')) {
            rc = jp_skip(j);
        } else if (!jp_eat(j, ']')) {
            do
                rc = jp_result(j, set);
            while (rc == 0 && jp_eat(j, ','));
            if (rc == 0 && !jp_eat(j, ']'))
                rc = -EINVAL;
        }
        if (rc)
            return rc;
    } while (jp_eat(j, ','));
    return jp_eat(j, '}') ? 0 : -EINVAL;
}

int wt_promsrc_parse(const char *buf, size_t len, struct wt_promsrc_set *set,
                     struct wt_promsrc_answer *a, size_t *at)
{
    struct jp j = {.p = buf, .end = buf + len};
    char key[64];
    int rc = 0;
    memset(a, 0, sizeof *a);
    if (!jp_eat(&j, '{'))
        rc = -EINVAL;
    else if (!jp_eat(&j, '}')) {
        do {
            bool cut = false;
            if (jp_str(&j, key, sizeof key, &cut) || !jp_eat(&j, ':')) {
                rc = -EINVAL;
            } else if (!strcmp(key, "status")) {
                rc = jp_str(&j, a->status, sizeof a->status, &cut);
            } else if (!strcmp(key, "error")) {
                rc = jp_str(&j, a->error, sizeof a->error, &cut);
            } else if (!strcmp(key, "isPartial")) {
                jp_ws(&j);
                a->partial = j.end - j.p >= 4 && !strncmp(j.p, "true", 4);
                rc = jp_skip(&j);
            } else if (!strcmp(key, "data")) {
                rc = jp_data(&j, set);
            } else {
                rc = jp_skip(&j);
            }
        } while (rc == 0 && jp_eat(&j, ','));
        if (rc == 0 && !jp_eat(&j, '}'))
            rc = -EINVAL;
    }
    jp_ws(&j);
    if (rc == 0 && j.p != j.end)
        rc = -EINVAL;
    *at = (size_t)(j.p - buf);
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

/* wt_promsrc_query, with the HTTP status of the answer (0: none) for the caller to judge. */
static int query(struct wt_promsrc *p, const char *promql, int64_t t_ns, struct wt_promsrc_set *set,
                 long *status, struct wt_err *err)
{
    char url[600], shown[MSG_QUERY + 40];
    *status = 0;
    if (!p->curl && !(p->curl = curl_easy_init()))
        return -ENOMEM;
    char *q = curl_easy_escape(p->curl, promql, 0);
    if (!q)
        return -ENOMEM;
    size_t n = strlen(q) + 64;
    char *body = malloc(n);
    if (!body) {
        curl_free(q);
        return -ENOMEM;
    }
    snprintf(body, n, "query=%s&time=%.3f", q, (double)t_ns / 1e9);
    curl_free(q);
    snprintf(url, sizeof url, "%s/api/v1/query", p->base);
    struct body b;
    int rc = post_body(p, url, body, status, &b, err);
    free(body);
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
    rc = b.buf ? wt_promsrc_parse(b.buf, b.len, set, a, &at) : -EINVAL;
    free(b.buf);
    if (rc == -EINVAL) {
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
    }
    free(a);
    return rc;
}

int wt_promsrc_query(struct wt_promsrc *p, const char *promql, int64_t t_ns,
                     struct wt_promsrc_set *set, struct wt_err *err)
{
    long status;
    return query(p, promql, t_ns, set, &status, err);
}

/* ---- samples around window edges ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Reads sel's raw samples within the pad of every edge into set: edges closer than twice the
 * pad share one query. edges is sorted here.
 */
static int around(struct wt_promsrc *p, const char *sel, int64_t *edges, size_t ne,
                  struct wt_promsrc_set *set, long *status, struct wt_err *err)
{
    int64_t pad = p->o.pad_ns;
    qsort(edges, ne, sizeof *edges, cmp_i64);
    size_t qlen = strlen(sel) + 64;
    char *q = malloc(qlen);
    if (!q)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < ne && rc == 0;) {
        size_t k = i;
        while (k + 1 < ne && edges[k + 1] - edges[k] <= 2 * pad)
            k++;
        int64_t lo = edges[i] - pad, hi = edges[k] + pad;
        /* SEL[d] at hi holds the samples in (hi - d, hi]: one ms more to include lo */
        snprintf(q, qlen, "%s[%lldms]", sel, (long long)((hi - lo) / 1000000 + 1));
        rc = query(p, q, hi, set, status, err);
        i = k + 1;
    }
    free(q);
    return rc;
}

/* The exact-window energy of one series over [a, b], as the local store computes it. */
static void series_window(const struct wt_promsrc_series *s, int64_t a, int64_t b, double *e,
                          double *covered_s)
{
    struct wt_segment_rule rule = {.kind = wt_series_kind_of(s->metric, s->labels)};
    struct wt_window w = wt_window_begin(&rule, a, b);
    for (size_t i = 0; i < s->n; i++)
        wt_window_add(&w, s->pts[i].t_ns, s->pts[i].v);
    *e = w.energy_j;
    *covered_s = w.covered_ns / 1e9;
}

static void fill_row(struct wt_energy_row *r, const struct wt_promsrc_series *s, int64_t a,
                     int64_t b)
{
    memset(r, 0, sizeof *r);
    snprintf(r->s.node, sizeof r->s.node, "%s", s->node);
    snprintf(r->s.metric, sizeof r->s.metric, "%s", s->metric);
    snprintf(r->s.labels, sizeof r->s.labels, "%s", s->labels);
    r->s.kind = wt_series_kind_of(s->metric, s->labels);
    r->method = r->s.kind == WT_SK_INTEGRATED ? "integrated" : "counter";
    series_window(s, a, b, &r->energy_j, &r->covered_s);
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
    int rc = around(p, ENERGY_SEL "}", edges, 2, &set, &status, err);
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
            fill_row(&r[k++], &set.s[i], from, to);
    }
    wt_energy_choose(r, k);
    *rows = r;
    *n = k;
out:
    wt_promsrc_set_free(&set);
    return rc;
}

/* ---- one job over the fleet ---- */

struct pmark {
    char kind[64], index[24];
    int64_t t;
};

struct pnode {
    char node[64], id[24], gpus[WT_LABELS_LEN];
    int64_t start, end; /* end 0: running */
    struct pmark *m;
    size_t nm;
    size_t s0, ns; /* its energy series: the fleet's e.s[s0 .. s0 + ns) */
};

/* A job's nodes: an array and a hash of their names. */
struct pnodes {
    struct pnode *v;
    size_t n, cap;
    size_t *index, index_cap; /* slots: index + 1 */
};

/* A PromQL string literal's content: node names go into a regex, so escape both layers. */
static void regex_quote(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 4 < n; s++) {
        if (strchr(".^$*+?()[]{}|\\", *s)) {
            out[k++] = '\\';
            out[k++] = '\\';
        } else if (*s == '"') {
            out[k++] = '\\';
        }
        out[k++] = *s;
    }
    out[k] = '\0';
}

static void str_quote(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 3 < n; s++) {
        if (*s == '"' || *s == '\\')
            out[k++] = '\\';
        out[k++] = *s;
    }
    out[k] = '\0';
}

static bool gpu_in(const char *gpus, const char *labels)
{
    char gpu[32], uuid[96], list[WT_LABELS_LEN];
    if (!gpus[0])
        return true;
    if (wt_labels_get(labels, "gpu", gpu, sizeof gpu) != 0)
        gpu[0] = '\0';
    if (wt_labels_get(labels, "uuid", uuid, sizeof uuid) != 0)
        uuid[0] = '\0';
    snprintf(list, sizeof list, "%s", gpus);
    char *save = NULL;
    for (char *g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        bool index = strspn(g, "0123456789") == strlen(g);
        if (index ? strcmp(g, gpu) == 0 : uuid[0] && strncmp(uuid, g, strlen(g)) == 0)
            return true;
    }
    return false;
}

static bool cpu_counted(const char *labels)
{
    char d[32];
    if (wt_labels_get(labels, "domain", d, sizeof d) != 0)
        return true;
    return strcmp(d, "core") != 0 && strcmp(d, "uncore") != 0 && strcmp(d, "psys") != 0;
}

struct pspan {
    double gpu_j, cpu_j, coverage;
    int ngpu;
};

/* The job's energy on node nd over [a, b]: its GPUs (counter first) and CPU packages. */
static int node_span(const struct wt_promsrc_set *e, const struct pnode *nd, int64_t a, int64_t b,
                     struct pspan *sp)
{
    memset(sp, 0, sizeof *sp);
    if (b <= a)
        return 0;
    size_t k = 0;
    struct wt_energy_row *r = calloc(nd->ns ? nd->ns : 1, sizeof *r);
    if (!r)
        return -ENOMEM;
    for (size_t i = nd->s0; i < nd->s0 + nd->ns; i++)
        fill_row(&r[k++], &e->s[i], a, b);
    wt_energy_choose(r, k);
    double cov = 1;
    for (size_t i = 0; i < k; i++) {
        if (!r[i].chosen)
            continue;
        if (!strcmp(r[i].s.metric, "wattage_cpu_energy_joules_total")) {
            if (cpu_counted(r[i].s.labels))
                sp->cpu_j += r[i].energy_j;
            continue;
        }
        if (!wt_metric_is_gpu_energy(r[i].s.metric) || !gpu_in(nd->gpus, r[i].s.labels))
            continue;
        sp->gpu_j += r[i].energy_j;
        sp->ngpu++;
        if (r[i].coverage < cov)
            cov = r[i].coverage;
    }
    sp->coverage = sp->ngpu ? cov : 0;
    free(r);
    return 0;
}

static void add_time(cJSON *o, const char *key, int64_t t_ns)
{
    char buf[40], k[40];
    wt_time_format(t_ns, 1, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
    snprintf(k, sizeof k, "%s_s", key);
    cJSON_AddNumberToObject(o, k, (double)t_ns / 1e9);
}

static void add_kpis(cJSON *o, double dur_s, const struct pspan *sp)
{
    cJSON_AddNumberToObject(o, "duration_s", dur_s);
    cJSON_AddNumberToObject(o, "energy_joules", sp->gpu_j);
    cJSON_AddNumberToObject(o, "energy_kwh", sp->gpu_j / 3.6e6);
    cJSON_AddNumberToObject(o, "mean_power_w", dur_s > 0 ? sp->gpu_j / dur_s : 0);
    cJSON_AddNumberToObject(o, "coverage", sp->coverage);
    cJSON_AddNumberToObject(o, "cpu_energy_joules", sp->cpu_j);
}

/* Sums b into a (coverage: the lowest). */
static void span_add(struct pspan *a, const struct pspan *b, bool first)
{
    a->gpu_j += b->gpu_j;
    a->cpu_j += b->cpu_j;
    a->ngpu += b->ngpu;
    a->coverage = first || b->coverage < a->coverage ? b->coverage : a->coverage;
}

static struct pnode *node_find(const struct pnodes *ns, const char *node)
{
    if (!ns->index)
        return NULL;
    size_t mask = ns->index_cap - 1;
    for (size_t h = (size_t)hash_str(HASH_SEED, node) & mask; ns->index[h]; h = (h + 1) & mask) {
        if (!strcmp(ns->v[ns->index[h] - 1].node, node))
            return &ns->v[ns->index[h] - 1];
    }
    return NULL;
}

/* The node of that name, added when new; NULL: out of memory. */
static struct pnode *node_of(struct pnodes *ns, const char *node)
{
    struct pnode *nd = node_find(ns, node);
    if (nd)
        return nd;
    if (ns->n == ns->cap) {
        size_t nc = ns->cap ? 2 * ns->cap : 64;
        struct pnode *nv = realloc(ns->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        ns->v = nv;
        ns->cap = nc;
    }
    if (2 * (ns->n + 1) > ns->index_cap) {
        size_t nc = ns->index_cap ? 2 * ns->index_cap : 256;
        size_t *ni = calloc(nc, sizeof *ni);
        if (!ni)
            return NULL;
        free(ns->index);
        ns->index = ni;
        ns->index_cap = nc;
        for (size_t i = 0; i < ns->n; i++) {
            size_t h = (size_t)hash_str(HASH_SEED, ns->v[i].node) & (nc - 1);
            while (ni[h])
                h = (h + 1) & (nc - 1);
            ni[h] = i + 1;
        }
    }
    nd = &ns->v[ns->n++];
    memset(nd, 0, sizeof *nd);
    snprintf(nd->node, sizeof nd->node, "%s", node);
    size_t mask = ns->index_cap - 1, h = (size_t)hash_str(HASH_SEED, nd->node) & mask;
    while (ns->index[h])
        h = (h + 1) & mask;
    ns->index[h] = ns->n;
    return nd;
}

static int mark_cmp(const void *pa, const void *pb)
{
    const struct pmark *a = pa, *b = pb;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* The job's series (start, end, info, marks) per node: the latest job of that name. */
static int load_job(struct wt_promsrc *p, const char *key, const char *ref, int64_t now,
                    struct pnodes *nodes, struct wt_err *err)
{
    struct wt_promsrc_set st = {0}, other = {0};
    char q[512], rq[256], lb[64];
    int rc;
    str_quote(ref, rq, sizeof rq);
    snprintf(q, sizeof q, "max_over_time(wattage_job_start_time_seconds{%s=\"%s\"}[" LOOKBACK "])",
             key, rq);
    if ((rc = wt_promsrc_query(p, q, now, &st, err)) != 0)
        goto out;
    for (size_t i = 0; i < st.n; i++) {
        struct wt_promsrc_series *s = &st.s[i];
        if (!s->n)
            continue;
        int64_t start = (int64_t)llround(s->pts[s->n - 1].v * 1e9);
        struct pnode *nd = node_of(nodes, s->node);
        if (!nd) {
            rc = -ENOMEM;
            goto out;
        }
        if (nd->start && nd->start >= start)
            continue; /* an earlier run of the same name on this node */
        nd->start = start;
        if (wt_labels_get(s->labels, "id", nd->id, sizeof nd->id) != 0)
            nd->id[0] = '\0';
    }
    /* the end, GPUs and marks of the run each node chose (its id) */
    static const char *const what[] = {"wattage_job_end_time_seconds", "wattage_job_info",
                                       "wattage_job_mark_time_seconds"};
    for (int w = 0; w < 3; w++) {
        wt_promsrc_set_free(&other);
        snprintf(q, sizeof q, "max_over_time(%s{%s=\"%s\"}[" LOOKBACK "])", what[w], key, rq);
        if ((rc = wt_promsrc_query(p, q, now, &other, err)) != 0)
            goto out;
        for (size_t i = 0; i < other.n; i++) {
            struct wt_promsrc_series *s = &other.s[i];
            struct pnode *nd = node_find(nodes, s->node);
            if (!nd || !s->n || wt_labels_get(s->labels, "id", lb, sizeof lb) != 0 ||
                strcmp(lb, nd->id) != 0)
                continue;
            double v = s->pts[s->n - 1].v;
            if (w == 0) {
                nd->end = (int64_t)llround(v * 1e9);
            } else if (w == 1) {
                if (wt_labels_get(s->labels, "gpus", nd->gpus, sizeof nd->gpus) != 0)
                    nd->gpus[0] = '\0';
            } else {
                struct pmark *nm = realloc(nd->m, (nd->nm + 1) * sizeof *nm);
                if (!nm) {
                    rc = -ENOMEM;
                    goto out;
                }
                nd->m = nm;
                struct pmark *mk = &nm[nd->nm++];
                memset(mk, 0, sizeof *mk);
                wt_labels_get(s->labels, "kind", mk->kind, sizeof mk->kind);
                wt_labels_get(s->labels, "index", mk->index, sizeof mk->index);
                mk->t = (int64_t)llround(v * 1e9);
            }
        }
    }
    for (size_t i = 0; i < nodes->n; i++)
        qsort(nodes->v[i].m, nodes->v[i].nm, sizeof *nodes->v[i].m, mark_cmp);
out:
    wt_promsrc_set_free(&st);
    wt_promsrc_set_free(&other);
    return rc;
}

/* One phase over the fleet: the marks of one kind and index on every node. */
struct pphase {
    char kind[64], index[24];
    int64_t from, to;
    struct pspan sp;
    int nodes;
};

static int phases_json(const struct wt_promsrc_set *e, const struct pnode *nodes, size_t nn,
                       cJSON *arr)
{
    struct pphase *ph = NULL;
    size_t np = 0;
    int rc = 0;
    for (size_t i = 0; i < nn && rc == 0; i++) {
        const struct pnode *nd = &nodes[i];
        for (size_t k = 0; k < nd->nm && rc == 0; k++) {
            const struct pmark *mk = &nd->m[k];
            int64_t from = nd->start;
            for (size_t q = k; q-- > 0;) {
                if (!strcmp(nd->m[q].kind, mk->kind)) {
                    from = nd->m[q].t;
                    break;
                }
            }
            struct pspan sp;
            if ((rc = node_span(e, nd, from, mk->t, &sp)) != 0)
                break;
            size_t j = 0;
            while (j < np && (strcmp(ph[j].kind, mk->kind) || strcmp(ph[j].index, mk->index)))
                j++;
            if (j == np) {
                struct pphase *n2 = realloc(ph, (np + 1) * sizeof *n2);
                if (!n2) {
                    rc = -ENOMEM;
                    break;
                }
                ph = n2;
                memset(&ph[np], 0, sizeof ph[np]);
                snprintf(ph[np].kind, sizeof ph[np].kind, "%s", mk->kind);
                snprintf(ph[np].index, sizeof ph[np].index, "%s", mk->index);
                ph[np].from = from;
                ph[np].to = mk->t;
                np++;
            }
            span_add(&ph[j].sp, &sp, ph[j].nodes == 0);
            ph[j].nodes++;
            if (from < ph[j].from)
                ph[j].from = from;
            if (mk->t > ph[j].to)
                ph[j].to = mk->t;
        }
    }
    for (size_t j = 0; j < np && rc == 0; j++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) {
            rc = -ENOMEM;
            break;
        }
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "kind", ph[j].kind);
        if (ph[j].index[0])
            cJSON_AddNumberToObject(o, "index", strtod(ph[j].index, NULL));
        else
            cJSON_AddNullToObject(o, "index");
        add_time(o, "from", ph[j].from);
        add_time(o, "to", ph[j].to);
        cJSON_AddNumberToObject(o, "nodes", ph[j].nodes);
        cJSON_AddItemToObject(o, "counters", cJSON_CreateObject());
        add_kpis(cJSON_AddObjectToObject(o, "kpi"), (double)(ph[j].to - ph[j].from) / 1e9,
                 &ph[j].sp);
    }
    free(ph);
    return rc;
}

/* A job over the fleet: its nodes and the energy samples around all their edges. */
struct fleet {
    struct pnodes pn;
    struct pnode *nodes; /* pn.v, pn.n */
    size_t nn;
    struct wt_promsrc_set e; /* sorted by node once loaded */
};

static void fleet_free(struct fleet *f)
{
    for (size_t i = 0; i < f->pn.n; i++)
        free(f->pn.v[i].m);
    free(f->pn.v);
    free(f->pn.index);
    wt_promsrc_set_free(&f->e);
    memset(f, 0, sizeof *f);
}

#define FLEET_SEL "{__name__=~\"wattage_(gpu|cpu)_energy(_integrated)?_joules_total\",node=~\""

/*
 * The energy samples around every edge of nodes [lo, hi) (starts, ends or now, marks) and the
 * profile's steps: the nodes named in the query, so what is read follows the job, not the
 * fleet. A batch the engine refuses with 422 (its limit on series or samples per query) is split
 * in two and asked again; one node's refusal is the error. Samples read twice merge as one.
 */
static int load_batch(struct wt_promsrc *p, struct fleet *f, size_t lo, size_t hi, int64_t now_ns,
                      const int64_t *steps, size_t nsteps, struct wt_err *err)
{
    size_t ne = nsteps, sl = sizeof FLEET_SEL + 8;
    for (size_t i = lo; i < hi; i++) {
        ne += 2 + f->nodes[i].nm;
        sl += 2 * strlen(f->nodes[i].node) + 1;
    }
    int64_t *edges = malloc(ne * sizeof *edges);
    char *sel = malloc(sl);
    int rc = 0;
    if (!edges || !sel) {
        rc = -ENOMEM;
        goto out;
    }
    size_t k = 0, off = (size_t)snprintf(sel, sl, "%s", FLEET_SEL);
    for (size_t i = lo; i < hi; i++) {
        const struct pnode *nd = &f->nodes[i];
        edges[k++] = nd->start;
        edges[k++] = nd->end ? nd->end : now_ns;
        for (size_t m = 0; m < nd->nm; m++)
            edges[k++] = nd->m[m].t;
        char qn[200];
        regex_quote(nd->node, qn, sizeof qn);
        off += (size_t)snprintf(sel + off, sl - off, "%s%s", i > lo ? "|" : "", qn);
    }
    memcpy(edges + k, steps, nsteps * sizeof *edges);
    snprintf(sel + off, sl - off, "\"}");
    long status = 0;
    rc = around(p, sel, edges, ne, &f->e, &status, err);
    if (rc == -EIO && status == 422 && hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        rc = load_batch(p, f, lo, mid, now_ns, steps, nsteps, err);
        if (rc == 0)
            rc = load_batch(p, f, mid, hi, now_ns, steps, nsteps, err);
    } else if (rc == -EIO && status == 422) {
        char m[WT_ERR_LEN];
        snprintf(m, sizeof m, "%s", err->msg);
        wt_err_set(err,
                   "node %s alone is over the engine's limit on series or samples per query "
                   "(the job's nodes were split into smaller queries down to one): %s",
                   f->nodes[lo].node, m);
    }
out:
    free(edges);
    free(sel);
    return rc;
}

static int series_node_cmp(const void *pa, const void *pb)
{
    const struct wt_promsrc_series *a = pa, *b = pb;
    return strcmp(a->node, b->node);
}

/* Loads job ref and the samples around its edges, and around step edges when step_ns > 0. */
static int fleet_load(struct wt_promsrc *p, const char *ref, int64_t now_ns, int64_t step_ns,
                      struct fleet *f, struct wt_err *err)
{
    int64_t *steps = NULL;
    int rc;
    memset(f, 0, sizeof *f);
    if ((rc = load_job(p, "job", ref, now_ns, &f->pn, err)) != 0)
        goto out;
    if (f->pn.n == 0 && strspn(ref, "0123456789") == strlen(ref) &&
        (rc = load_job(p, "id", ref, now_ns, &f->pn, err)) != 0)
        goto out;
    f->nodes = f->pn.v;
    f->nn = f->pn.n;
    if (f->nn == 0) {
        rc = -ENOENT;
        wt_err_set(err, "%s: no job %s in the last " LOOKBACK " (wattage_job_start_time_seconds)",
                   p->name, ref);
        goto out;
    }
    int64_t lo = f->nodes[0].start, hi = 0;
    for (size_t i = 0; i < f->nn; i++) {
        const struct pnode *nd = &f->nodes[i];
        lo = nd->start < lo ? nd->start : lo;
        int64_t b = nd->end ? nd->end : now_ns;
        hi = b > hi ? b : hi;
    }
    size_t nsteps = step_ns > 0 ? (size_t)((hi - lo) / step_ns) + 1 : 0;
    if (nsteps && !(steps = malloc(nsteps * sizeof *steps))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nsteps; i++)
        steps[i] = lo + (int64_t)i * step_ns;
    for (size_t b = 0; b < f->nn && rc == 0; b += p->o.batch_nodes) {
        size_t e = b + p->o.batch_nodes < f->nn ? b + p->o.batch_nodes : f->nn;
        rc = load_batch(p, f, b, e, now_ns, steps, nsteps, err);
    }
    if (rc)
        goto out;
    /* each node's series together: a node's figures read its own only */
    qsort(f->e.s, f->e.n, sizeof *f->e.s, series_node_cmp);
    free(f->e.index);
    f->e.index = NULL;
    f->e.index_cap = 0;
    for (size_t i = 0; i < f->e.n;) {
        size_t k = i;
        while (k < f->e.n && !strcmp(f->e.s[k].node, f->e.s[i].node))
            k++;
        struct pnode *nd = node_find(&f->pn, f->e.s[i].node);
        if (nd) {
            nd->s0 = i;
            nd->ns = k - i;
        }
        i = k;
    }
out:
    free(steps);
    if (rc)
        fleet_free(f);
    return rc;
}

int wt_promsrc_job(struct wt_promsrc *p, const char *ref, int64_t now_ns, cJSON **out,
                   struct wt_err *err)
{
    struct fleet f;
    cJSON *o = NULL;
    *out = NULL;
    int rc = fleet_load(p, ref, now_ns, 0, &f, err);
    if (rc)
        return rc;
    struct pnode *nodes = f.nodes;
    size_t nn = f.nn;
    o = cJSON_CreateObject();
    if (!o) {
        rc = -ENOMEM;
        goto out;
    }
    bool same_id = true, running = false;
    int64_t start = nodes[0].start, end = 0;
    for (size_t i = 0; i < nn; i++) {
        same_id = same_id && !strcmp(nodes[i].id, nodes[0].id);
        running = running || !nodes[i].end;
        start = nodes[i].start < start ? nodes[i].start : start;
        end = nodes[i].end > end ? nodes[i].end : end;
    }
    if (same_id)
        cJSON_AddNumberToObject(o, "id", strtod(nodes[0].id, NULL));
    else
        cJSON_AddNullToObject(o, "id");
    cJSON_AddStringToObject(o, "name", ref);
    cJSON_AddStringToObject(o, "source", p->name);
    cJSON_AddStringToObject(o, "state", running ? "running" : "ended");
    cJSON_AddItemToObject(o, "tags", cJSON_CreateObject());
    add_time(o, "start", start);
    if (running)
        cJSON_AddNullToObject(o, "end");
    else
        add_time(o, "end", end);
    int64_t last = running ? now_ns : end;
    struct pspan total = {0};
    cJSON *arr = cJSON_AddArrayToObject(o, "nodes");
    for (size_t i = 0; i < nn; i++) {
        struct pnode *nd = &nodes[i];
        struct pspan sp;
        int64_t b = nd->end ? nd->end : now_ns;
        if ((rc = node_span(&f.e, nd, nd->start, b, &sp)) != 0)
            goto out;
        span_add(&total, &sp, i == 0);
        cJSON *x = cJSON_CreateObject();
        if (!x) {
            rc = -ENOMEM;
            goto out;
        }
        cJSON_AddItemToArray(arr, x);
        cJSON_AddStringToObject(x, "node", nd->node);
        cJSON_AddNumberToObject(x, "id", strtod(nd->id, NULL));
        cJSON_AddStringToObject(x, "gpus", nd->gpus);
        add_time(x, "start", nd->start);
        if (nd->end)
            add_time(x, "end", nd->end);
        else
            cJSON_AddNullToObject(x, "end");
        add_kpis(cJSON_AddObjectToObject(x, "kpi"), (double)(b - nd->start) / 1e9, &sp);
    }
    add_kpis(cJSON_AddObjectToObject(o, "kpi"), (double)(last - start) / 1e9, &total);
    cJSON_AddItemToObject(o, "counters", cJSON_CreateObject());
    rc = phases_json(&f.e, nodes, nn, cJSON_AddArrayToObject(o, "phases"));
out:
    if (rc) {
        cJSON_Delete(o);
        o = NULL;
    }
    *out = o;
    fleet_free(&f);
    return rc;
}

int wt_promsrc_profile(struct wt_promsrc *p, const char *ref, int64_t now_ns, int64_t step_ns,
                       double **watts, size_t *n, int64_t *duration_ns, struct wt_err *err)
{
    struct fleet f;
    *watts = NULL;
    *n = 0;
    *duration_ns = 0;
    if (step_ns <= 0)
        return wt_err_set(err, "the profile's step must be > 0");
    int rc = fleet_load(p, ref, now_ns, step_ns, &f, err);
    if (rc)
        return rc;
    int64_t lo = f.nodes[0].start, hi = 0;
    for (size_t i = 0; i < f.nn; i++) {
        int64_t b = f.nodes[i].end ? f.nodes[i].end : now_ns;
        lo = f.nodes[i].start < lo ? f.nodes[i].start : lo;
        hi = b > hi ? b : hi;
    }
    size_t k = hi > lo ? (size_t)((hi - lo + step_ns - 1) / step_ns) : 0;
    double *w = k ? calloc(k, sizeof *w) : NULL;
    if (!k)
        rc = wt_err_set(err, "job %s has no duration", ref);
    else if (!w)
        rc = -ENOMEM;
    /* each slot: the GPU energy of every node within it (its part of the node's window) */
    for (size_t i = 0; i < k && rc == 0; i++) {
        int64_t a = lo + (int64_t)i * step_ns, b = a + step_ns < hi ? a + step_ns : hi;
        for (size_t q = 0; q < f.nn && rc == 0; q++) {
            const struct pnode *nd = &f.nodes[q];
            int64_t na = a > nd->start ? a : nd->start;
            int64_t nb = nd->end ? nd->end : now_ns;
            nb = b < nb ? b : nb;
            struct pspan sp;
            if ((rc = node_span(&f.e, nd, na, nb, &sp)) == 0)
                w[i] += sp.gpu_j / ((double)(b - a) / 1e9);
        }
    }
    fleet_free(&f);
    if (rc) {
        free(w);
        return rc;
    }
    *watts = w;
    *n = k;
    *duration_ns = hi - lo;
    return 0;
}

#define COPY_SEL "{__name__=~\"wattage_(gpu_energy|cpu_energy|facility_).+\"}"

int wt_promsrc_copy(struct wt_promsrc *p, int64_t from, int64_t to, struct wt_store *st,
                    struct wt_err *err)
{
    struct wt_promsrc_set set = {0};
    struct wt_reading *r = NULL;
    size_t cap = 0;
    int64_t pad = p->o.pad_ns;
    char q[160];
    snprintf(q, sizeof q, "%s[%lldms]", COPY_SEL, (long long)((to - from + 2 * pad) / 1000000 + 1));
    int rc = wt_promsrc_query(p, q, to + pad, &set, err);
    for (size_t i = 0; i < set.n && rc == 0; i++) {
        const struct wt_promsrc_series *s = &set.s[i];
        int m = wt_metric_find(s->metric);
        if (m < 0 || !s->node[0])
            continue; /* not a series of ours, or not from a node */
        if (s->n > cap) {
            struct wt_reading *nr = realloc(r, s->n * sizeof *nr);
            if (!nr) {
                rc = -ENOMEM;
                break;
            }
            r = nr;
            cap = s->n;
        }
        for (size_t k = 0; k < s->n; k++) {
            r[k].t_ns = s->pts[k].t_ns;
            r[k].value = s->pts[k].v;
            r[k].metric = (uint16_t)m;
            snprintf(r[k].labels, sizeof r[k].labels, "%s", s->labels);
        }
        if ((rc = wt_store_write(st, s->node, r, s->n)) != 0)
            wt_err_set(err, "cannot copy %s's %s into the working store", s->node, s->metric);
    }
    free(r);
    wt_promsrc_set_free(&set);
    return rc;
}
