/* SPDX-License-Identifier: MIT */
/*
 * Prometheus exposition: text format 0.0.4 and OpenMetrics 1.0.0 written from a snapshot batch,
 * content negotiation from Accept / Accept-Encoding, and gzip through zlib. The snapshot comes
 * ordered by collector, each GPU's metrics together; exposition wants every family's series
 * together, so readings are bucketed by metric id first (a stable counting sort).
 */
#include "serve/expo.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* A growable output buffer; a failed allocation sets oom and later appends do nothing. */
struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
};

static bool sbuf_reserve(struct sbuf *s, size_t more)
{
    if (s->oom)
        return false;
    if (s->len + more + 1 <= s->cap)
        return true;
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + more + 1)
        cap *= 2;
    char *p = realloc(s->p, cap);
    if (!p) {
        s->oom = true;
        return false;
    }
    s->p = p;
    s->cap = cap;
    return true;
}

static void sbuf_put(struct sbuf *s, const char *str, size_t n)
{
    if (!sbuf_reserve(s, n))
        return;
    memcpy(s->p + s->len, str, n);
    s->len += n;
    s->p[s->len] = '\0';
}

static void sbuf_puts(struct sbuf *s, const char *str)
{
    sbuf_put(s, str, strlen(str));
}

/* ---- content negotiation ---- */

/* One media range or coding of an Accept-style header, split at ';'. */
struct accept_item {
    char type[96];
    char version[32];
    double q;
};

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Copies [a, b) trimmed and lower-cased into out. */
static void copy_token(const char *a, const char *b, char *out, size_t n)
{
    while (a < b && (*a == ' ' || *a == '\t'))
        a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
        b--;
    size_t i = 0;
    for (; a < b && i + 1 < n; a++)
        out[i++] = (char)tolower((unsigned char)*a);
    out[i] = '\0';
}

/*
 * Parses the next comma-separated item from *pp. Returns false at the end. Quoted parameter
 * values are taken literally (without the quotes); an unparsable q counts as 0.
 */
static bool next_accept(const char **pp, struct accept_item *it)
{
    const char *p = *pp;
    while (*p == ',' || *p == ' ' || *p == '\t')
        p++;
    if (!*p)
        return false;
    const char *end = p;
    bool quoted = false;
    while (*end && (quoted || *end != ',')) {
        if (*end == '"')
            quoted = !quoted;
        end++;
    }
    *pp = end;
    const char *semi = memchr(p, ';', (size_t)(end - p));
    copy_token(p, semi ? semi : end, it->type, sizeof it->type);
    it->version[0] = '\0';
    it->q = 1.0;
    while (semi) {
        const char *pa = semi + 1;
        const char *pe = memchr(pa, ';', (size_t)(end - pa));
        const char *stop = pe ? pe : end;
        const char *eq = memchr(pa, '=', (size_t)(stop - pa));
        if (eq) {
            char key[16], val[32];
            copy_token(pa, eq, key, sizeof key);
            const char *va = skip_ws(eq + 1);
            const char *vb = stop;
            if (va < vb && *va == '"') {
                va++;
                const char *cq = memchr(va, '"', (size_t)(vb - va));
                if (cq)
                    vb = cq;
            }
            copy_token(va, vb, val, sizeof val);
            if (strcmp(key, "q") == 0) {
                char *e;
                double q = strtod(val, &e);
                it->q = (e != val && *e == '\0' && q >= 0 && q <= 1) ? q : 0;
            } else if (strcmp(key, "version") == 0) {
                snprintf(it->version, sizeof it->version, "%s", val);
            }
        }
        semi = pe;
    }
    return true;
}

enum wt_expo_format wt_expo_negotiate(const char *accept)
{
    double q_text = -1, q_om = -1;
    struct accept_item it;
    if (!accept)
        return WT_EXPO_TEXT;
    while (next_accept(&accept, &it)) {
        if (strcmp(it.type, "application/openmetrics-text") == 0) {
            if ((!it.version[0] || strcmp(it.version, "1.0.0") == 0) && it.q > q_om)
                q_om = it.q;
        } else if (strcmp(it.type, "text/plain") == 0) {
            if ((!it.version[0] || strcmp(it.version, "0.0.4") == 0) && it.q > q_text)
                q_text = it.q;
        } else if (strcmp(it.type, "text/*") == 0 || strcmp(it.type, "*/*") == 0) {
            if (it.q > q_text)
                q_text = it.q;
        }
    }
    return q_om > 0 && q_om >= q_text ? WT_EXPO_OPENMETRICS : WT_EXPO_TEXT;
}

bool wt_expo_accepts_gzip(const char *accept_encoding)
{
    struct accept_item it;
    double q_gzip = -1, q_star = -1;
    if (!accept_encoding)
        return false;
    while (next_accept(&accept_encoding, &it)) {
        if (strcmp(it.type, "gzip") == 0 || strcmp(it.type, "x-gzip") == 0)
            q_gzip = it.q > q_gzip ? it.q : q_gzip;
        else if (strcmp(it.type, "*") == 0)
            q_star = it.q;
    }
    /* An explicit gzip entry wins over the wildcard, even gzip;q=0. */
    return q_gzip >= 0 ? q_gzip > 0 : q_star > 0;
}

const char *wt_expo_content_type(enum wt_expo_format f)
{
    return f == WT_EXPO_OPENMETRICS ? WT_EXPO_OPENMETRICS_TYPE : WT_EXPO_TEXT_TYPE;
}

/* ---- rendering ---- */

void wt_expo_value(double v, char *buf, size_t n)
{
    if (isnan(v)) {
        snprintf(buf, n, "NaN");
    } else if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
    } else if (v == 0) {
        snprintf(buf, n, "0"); /* also -0: Prometheus has no use for the sign */
    } else if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
        snprintf(buf, n, "%" PRId64, (int64_t)v);
    } else {
        /* The shortest of %.15g..%.17g that reads back to the same double. */
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, n, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
    }
}

void wt_expo_escape_help(const char *in, enum wt_expo_format f, char *out, size_t n)
{
    size_t o = 0;
    if (n == 0)
        return;
    for (; *in; in++) {
        const char *esc = NULL;
        if (*in == '\\')
            esc = "\\\\";
        else if (*in == '\n')
            esc = "\\n";
        else if (*in == '"' && f == WT_EXPO_OPENMETRICS)
            esc = "\\\"";
        size_t l = esc ? 2 : 1;
        if (o + l + 1 > n)
            break;
        if (esc) {
            memcpy(out + o, esc, 2);
        } else {
            out[o] = *in;
        }
        o += l;
    }
    out[o] = '\0';
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/*
 * The descriptor lines of a family. In OpenMetrics a counter's family name drops "_total" and a
 * gauge named "*_info" holding 1 is an info family named without "_info"; the samples keep the
 * full names. Writes the sample name into sample (n bytes).
 */
static void write_family(struct sbuf *s, const char *name, const char *help,
                         enum wt_metric_type type, bool info, enum wt_expo_format f, char *sample,
                         size_t n)
{
    char fam[128], esc[1024];
    const char *ty = type == WT_COUNTER ? "counter" : "gauge";
    snprintf(fam, sizeof fam, "%s", name);
    snprintf(sample, n, "%s", name);
    if (f == WT_EXPO_OPENMETRICS) {
        if (type == WT_COUNTER) {
            if (ends_with(fam, "_total"))
                fam[strlen(fam) - 6] = '\0';
            snprintf(sample, n, "%s_total", fam);
        } else if (info && ends_with(fam, "_info")) {
            fam[strlen(fam) - 5] = '\0';
            ty = "info";
        }
    }
    wt_expo_escape_help(help, f, esc, sizeof esc);
    sbuf_puts(s, "# HELP ");
    sbuf_puts(s, fam);
    sbuf_puts(s, " ");
    sbuf_puts(s, esc);
    sbuf_puts(s, "\n# TYPE ");
    sbuf_puts(s, fam);
    sbuf_puts(s, " ");
    sbuf_puts(s, ty);
    sbuf_puts(s, "\n");
}

/* The descriptor lines of a histogram family (the same in both formats). */
static void write_histogram_family(struct sbuf *s, const char *fam, const char *help,
                                   enum wt_expo_format f)
{
    char esc[1024];
    wt_expo_escape_help(help, f, esc, sizeof esc);
    sbuf_puts(s, "# HELP ");
    sbuf_puts(s, fam);
    sbuf_puts(s, " ");
    sbuf_puts(s, esc);
    sbuf_puts(s, "\n# TYPE ");
    sbuf_puts(s, fam);
    sbuf_puts(s, " histogram\n");
}

static void write_sample(struct sbuf *s, const char *name, const char *labels, double v)
{
    char val[40];
    wt_expo_value(v, val, sizeof val);
    sbuf_puts(s, name);
    if (labels && *labels) {
        sbuf_puts(s, "{");
        sbuf_puts(s, labels);
        sbuf_puts(s, "}");
    }
    sbuf_puts(s, " ");
    sbuf_puts(s, val);
    sbuf_puts(s, "\n");
}

/* FNV-1a of a label string, to find repeated series cheaply. */
static uint32_t label_hash(const char *l)
{
    uint32_t h = 2166136261u;
    for (; *l; l++)
        h = (h ^ (uint8_t)*l) * 16777619u;
    return h;
}

char *wt_expo_render(const struct wt_batch *b, enum wt_expo_format f, const char *version,
                     size_t *len)
{
    return wt_expo_render_with(b, NULL, 0, f, version, len);
}

char *wt_expo_render_with(const struct wt_batch *b, const struct wt_expo_family *extra,
                          size_t nextra, enum wt_expo_format f, const char *version, size_t *len)
{
    struct sbuf s = {0};
    size_t start[WT_M_COUNT + 1] = {0};
    size_t *order = NULL;
    uint32_t *hash = NULL;
    char lb[WT_LABELS_LEN], sample[160];

    if (b->len) {
        order = malloc(b->len * sizeof *order);
        hash = malloc(b->len * sizeof *hash);
        if (!order || !hash)
            goto fail;
    }
    /* Stable counting sort of the readings by metric id; unknown ids are dropped. */
    for (size_t i = 0; i < b->len; i++) {
        if (b->r[i].metric < WT_M_COUNT)
            start[b->r[i].metric + 1]++;
    }
    for (int m = 0; m < WT_M_COUNT; m++)
        start[m + 1] += start[m];
    size_t fill[WT_M_COUNT];
    memcpy(fill, start, sizeof fill);
    for (size_t i = 0; i < b->len; i++) {
        if (b->r[i].metric < WT_M_COUNT)
            order[fill[b->r[i].metric]++] = i;
    }

    sbuf_reserve(&s, 64 + b->len * 96);
    if (wt_labels(lb, sizeof lb, "version", version ? version : "unknown", NULL) != 0)
        lb[0] = '\0';
    write_family(&s, "wattage_build_info", "Build information: the version of wattage.", WT_GAUGE,
                 true, f, sample, sizeof sample);
    write_sample(&s, sample, lb, 1);

    const char *hist_open = NULL; /* the histogram family whose descriptor was written last */
    for (int m = 0; m < WT_M_COUNT; m++) {
        if (start[m] == start[m + 1] || !wt_metrics[m].name)
            continue;
        const char *hist = wt_metrics[m].histogram;
        if (hist) {
            /* a histogram's _bucket, _sum and _count under one family, each sample under its own
             * name: as counters, OpenMetrics would rename them ..._bucket_total, and
             * histogram_quantile would find no bucket */
            if (!hist_open || strcmp(hist_open, hist) != 0) {
                int first = m; /* the family's help is its first part's (the _bucket's) */
                while (first > 0 && wt_metrics[first - 1].histogram &&
                       strcmp(wt_metrics[first - 1].histogram, hist) == 0)
                    first--;
                write_histogram_family(&s, hist, wt_metrics[first].help, f);
            }
            hist_open = hist;
            snprintf(sample, sizeof sample, "%s", wt_metrics[m].name);
        } else {
            write_family(&s, wt_metrics[m].name, wt_metrics[m].help, wt_metrics[m].type,
                         m == WT_M_GPU_INFO, f, sample, sizeof sample);
        }
        for (size_t k = start[m]; k < start[m + 1]; k++) {
            const struct wt_reading *r = &b->r[order[k]];
            bool dup = false;
            hash[k] = label_hash(r->labels);
            for (size_t j = start[m]; j < k && !dup; j++) {
                dup = hash[j] == hash[k] && strcmp(b->r[order[j]].labels, r->labels) == 0;
            }
            if (!dup)
                write_sample(&s, sample, r->labels, r->value);
        }
    }
    for (size_t e = 0; e < nextra; e++) {
        if (!extra[e].n)
            continue;
        write_family(&s, extra[e].name, extra[e].help, extra[e].type, false, f, sample,
                     sizeof sample);
        for (size_t k = 0; k < extra[e].n; k++)
            write_sample(&s, sample, extra[e].s[k].labels, extra[e].s[k].value);
    }
    if (f == WT_EXPO_OPENMETRICS)
        sbuf_puts(&s, "# EOF\n");
    if (s.oom)
        goto fail;
    free(order);
    free(hash);
    *len = s.len;
    return s.p;
fail:
    free(order);
    free(hash);
    free(s.p);
    return NULL;
}

/* ---- gzip ---- */

int wt_expo_gzip(const char *in, size_t len, char **out, size_t *outlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* windowBits 15 + 16: a gzip header and trailer rather than zlib's. Level 1: scrapes are
     * frequent and the text compresses well even so. */
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    uLong bound = deflateBound(&z, (uLong)len);
    char *buf = malloc(bound);
    if (!buf) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)buf;
    z.avail_out = (uInt)bound;
    int rc = deflate(&z, Z_FINISH);
    size_t n = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return -EIO;
    }
    *out = buf;
    *outlen = n;
    return 0;
}
