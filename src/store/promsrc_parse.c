/* SPDX-License-Identifier: MIT */
/*
 * The query API's answer parsed without a tree (see wt_promsrc_parse in promsrc.h) straight into
 * sample arrays: a set's series found by a hash of node, name and labels, so nothing here grows
 * with the square of the series.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/promsrc.h"
#include "store/promsrc_int.h"

void wt_promsrc_set_free(struct wt_promsrc_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->s[i].pts);
    free(set->s);
    free(set->index);
    memset(set, 0, sizeof *set);
}

/* ---- string hashing (FNV-1a; see promsrc_int.h) ---- */

uint64_t wt_promsrc_hash(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator: ("ab","c") is not ("a","bc") */
}

static uint64_t series_hash(const char *node, const char *metric, const char *labels)
{
    return wt_promsrc_hash(wt_promsrc_hash(wt_promsrc_hash(WT_PROMSRC_HASH_SEED, node), metric),
                           labels);
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
    for (;;) {
        /* a run without escapes (most strings are one) goes over in one copy */
        const char *run = j->p;
        while (j->p < j->end && *j->p != '"' && *j->p != '\\')
            j->p++;
        size_t rl = (size_t)(j->p - run);
        if (out && rl) {
            size_t fit = k + rl < n ? rl : (k + 1 < n ? n - 1 - k : 0);
            memcpy(out + k, run, fit);
            k += fit;
            if (fit < rl)
                *cut = true;
        }
        if (j->p >= j->end)
            return -EINVAL;
        if (*j->p == '"')
            break;
        char tmp[4];
        size_t tl = 1;
        j->p++;
        if (jp_escape(j, tmp, &tl) != 0)
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
    j->p++;
    if (out && n)
        out[k] = '\0';
    return 0;
}

/*
 * The decimal [-]DIGITS[.DIGITS] at p (before end) when it is exact the fast way: its digits as
 * an integer m <= 2^53 (exact in a double) and at most 22 after the point (10^22 is exact), so
 * m / 10^frac is one correctly rounded division: the double strtod gives. *stop: the byte after
 * it. false: anything else (an exponent, hex, NaN, Inf, more digits), for strtod.
 */
static bool fast_num(const char *p, const char *end, double *v, const char **stop)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const uint64_t most = 1ull << 53;
    bool neg = p < end && *p == '-';
    const char *s = p + neg, *d0 = s;
    uint64_t m = 0;
    size_t frac = 0;
    for (; s < end && *s >= '0' && *s <= '9'; s++)
        if ((m = m * 10 + (uint64_t)(*s - '0')) > most)
            return false;
    if (s == d0)
        return false;
    if (s < end && *s == '.') {
        for (s++; s < end && *s >= '0' && *s <= '9'; s++, frac++)
            if (frac == 22 || (m = m * 10 + (uint64_t)(*s - '0')) > most)
                return false;
    }
    if (s < end && (*s == 'e' || *s == 'E' || *s == 'x' || *s == 'X'))
        return false;
    double x = (double)m / p10[frac];
    *v = neg ? -x : x;
    *stop = s;
    return true;
}

static int jp_num(struct jp *j, double *v)
{
    jp_ws(j);
    const char *stop;
    /* most stamps are plain decimals: strtod's general path is the parser's largest cost */
    if (fast_num(j->p, j->end, v, &stop) && (stop == j->end || strchr(",]} \n\r\t", *stop))) {
        j->p = stop;
        return 0;
    }
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
    bool cut = false, number;
    const char *stop;
    if (!jp_eat(j, '[') || jp_num(j, &ts) || !jp_eat(j, ','))
        return -EINVAL;
    jp_ws(j);
    if (j->end - j->p > 1 && *j->p == '"' && fast_num(j->p + 1, j->end, &v, &stop) &&
        stop < j->end && *stop == '"') {
        /* a plain decimal in its quotes (most values): read where it lies, not copied first */
        j->p = stop + 1;
        number = true;
    } else {
        if (jp_str(j, vs, sizeof vs, &cut))
            return -EINVAL;
        const char *vend = vs + strlen(vs);
        number = fast_num(vs, vend, &v, &stop) && stop == vend;
        if (!number) {
            v = strtod(vs, &e);
            number = e != vs;
        }
    }
    if (!jp_eat(j, ']'))
        return -EINVAL;
    /* a stamp beyond what ns in 64 bits hold (year 2262) is no sample of ours */
    if (!s || cut || !number || !(ts > -9e9 && ts < 9e9))
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

void wt_promsrc_copy_cut(char *dst, size_t n, const char *src)
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
            wt_promsrc_copy_cut(metric, mn, val);
        else if (!strcmp(key, "node"))
            wt_promsrc_copy_cut(node, nn, val);
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

/* One label set of /api/v1/series' "data": its series found or added, without points. */
static int jp_series(struct jp *j, struct wt_promsrc_set *set)
{
    char node[64] = "", metric[96] = "", labels[WT_LABELS_LEN] = "";
    bool ours = true;
    int rc = jp_metric(j, node, sizeof node, metric, sizeof metric, labels, sizeof labels, &ours);
    if (rc == 0 && ours && !find_or_add(set, node, metric, labels))
        return -ENOMEM;
    return rc;
}

/* One label value of /api/v1/label/NAME/values' "data": a series of that node, without name,
 * labels or points. */
static int jp_value(struct jp *j, struct wt_promsrc_set *set)
{
    char v[64];
    bool cut = false;
    int rc = jp_str(j, v, sizeof v, &cut);
    if (rc == 0 && !find_or_add(set, v, "", ""))
        return -ENOMEM;
    return rc;
}

/* "data": every series of "result" into set; or, an array, every label set (/api/v1/series) or
 * label value (/api/v1/label/NAME/values). */
static int jp_data(struct jp *j, struct wt_promsrc_set *set)
{
    char key[64];
    int rc = 0;
    if (jp_eat(j, '[')) {
        if (jp_eat(j, ']'))
            return 0;
        do {
            jp_ws(j);
            rc = j->p < j->end && *j->p == '"' ? jp_value(j, set) : jp_series(j, set);
        } while (rc == 0 && jp_eat(j, ','));
        return rc == 0 && !jp_eat(j, ']') ? -EINVAL : rc;
    }
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

/* "warnings": an array of strings; the first (cut to fit) into w. */
static int jp_warnings(struct jp *j, char *w, size_t wn)
{
    int rc = 0;
    jp_ws(j);
    if (!jp_eat(j, '['))
        return jp_skip(j);
    if (jp_eat(j, ']'))
        return 0;
    do {
        bool cut = false;
        jp_ws(j);
        bool str = j->p < j->end && *j->p == '"';
        rc = str ? jp_str(j, w && !w[0] ? w : NULL, wn, &cut) : jp_skip(j);
        if (rc == 0 && w && !w[0] && wn > 1)
            snprintf(w, wn, "%s", str ? "(an empty warning)" : "(a warning that is not a string)");
    } while (rc == 0 && jp_eat(j, ','));
    return rc == 0 && !jp_eat(j, ']') ? -EINVAL : rc;
}

int wt_promsrc_parse(const char *buf, size_t len, struct wt_promsrc_set *set,
                     struct wt_promsrc_answer *a, size_t *at)
{
    return wt_promsrc_parse_warned(buf, len, set, a, at, NULL, 0);
}

int wt_promsrc_parse_warned(const char *buf, size_t len, struct wt_promsrc_set *set,
                            struct wt_promsrc_answer *a, size_t *at, char *warning, size_t wn)
{
    struct jp j = {.p = buf, .end = buf + len};
    char key[64];
    int rc = 0;
    memset(a, 0, sizeof *a);
    if (warning && wn)
        warning[0] = '\0';
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
            } else if (!strcmp(key, "warnings")) {
                rc = jp_warnings(&j, warning, wn);
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
