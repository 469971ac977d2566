/* SPDX-License-Identifier: MIT */
/*
 * The exposition parser (see expo_parse.h): one pass over the body, one line at a time, each
 * line one of four kinds (blank, metadata comment, other comment, sample) read by a small
 * hand-written lexer that never looks past the line's end. Families live in an array with an open
 * addressing index by name, so a sample finds its family (itself, or its name less a suffix the
 * family's type allows) without a scan; the family of the previous line is tried first, since
 * every exporter writes a family's samples together.
 *
 * Strings handed on point into the body when they need no decoding; label values with escapes
 * are decoded into one scratch buffer sized to the longest line, reused for every sample.
 */
#include "collect/expo_parse.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct fam {
    const char *name;
    size_t name_len;
    const char *help, *unit; /* raw, in the body */
    size_t help_len, unit_len;
    uint32_t hash;
    enum wt_expo_parse_type type;
    bool has_type, has_help, has_unit;
    bool announced, wanted, has_samples;
};

struct parser {
    const char *body;
    size_t len;
    enum wt_expo_parse_fmt fmt;
    const struct wt_expo_parse_opts *o;
    size_t max_series, max_labels, max_families;
    struct wt_err *err;
    size_t line;

    struct fam *fams;
    size_t nfam, capfam;
    uint32_t *index; /* family index + 1; 0 is an empty slot */
    size_t index_cap;
    size_t cur; /* family of the latest line + 1; 0: none */

    struct wt_expo_parse_label *labels;
    char *scratch; /* decoded label values of one line */
    size_t scratch_cap, scratch_len;
    char *meta; /* decoded HELP and UNIT of meta_owner */
    size_t meta_cap, meta_owner;
    struct wt_expo_parse_family pub;
    size_t series;
};

static bool is_alpha(unsigned char c)
{
    return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_';
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->err) {
        int n = snprintf(ps->err->msg, sizeof ps->err->msg, "line %zu: ", ps->line);
        if (n < 0 || (size_t)n >= sizeof ps->err->msg)
            return -EINVAL;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err->msg + n, sizeof ps->err->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Skips the separator between tokens: one space in OpenMetrics, spaces and tabs in 0.0.4.
 * Returns false when there is none. */
static bool skip_sep(const struct parser *ps, const char **p, const char *e)
{
    if (*p >= e)
        return false;
    if (ps->fmt == WT_EXPO_PARSE_OPENMETRICS) {
        if (**p != ' ')
            return false;
        (*p)++;
        return true;
    }
    if (!is_blank(**p))
        return false;
    while (*p < e && is_blank(**p))
        (*p)++;
    return true;
}

static size_t scan_name(const char *p, const char *e)
{
    if (p >= e || !(is_alpha((unsigned char)*p) || *p == ':'))
        return 0;
    const char *s = p++;
    while (p < e && (is_alpha((unsigned char)*p) || is_digit((unsigned char)*p) || *p == ':'))
        p++;
    return (size_t)(p - s);
}

static size_t scan_label_name(const char *p, const char *e)
{
    if (p >= e || !is_alpha((unsigned char)*p))
        return 0;
    const char *s = p++;
    while (p < e && (is_alpha((unsigned char)*p) || is_digit((unsigned char)*p)))
        p++;
    return (size_t)(p - s);
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i <= k)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        /* Overlong forms, surrogates and what lies past U+10FFFF. */
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += k + 1;
    }
    return true;
}

/* Code points of a valid UTF-8 string. */
static size_t utf8_len(const char *s, size_t n)
{
    size_t r = 0;
    for (size_t i = 0; i < n; i++)
        r += ((unsigned char)s[i] & 0xC0) != 0x80;
    return r;
}

/*
 * A float as Go's ParseFloat and the OpenMetrics ABNF read it, without hex forms: decimal
 * digits, '.', exponent and sign, or [+-]Inf / [+-]Infinity / NaN in any case. special: whether
 * those three are accepted.
 */
static bool parse_float(const char *p, size_t n, bool special, double *v)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    const char *q = p;
    size_t m = n;
    bool neg = false;
    if (*q == '+' || *q == '-') {
        neg = *q == '-';
        q++;
        m--;
    }
    if (m > 0 && (q[0] == 'i' || q[0] == 'I' || q[0] == 'n' || q[0] == 'N')) {
        if (!special)
            return false;
        if ((m == 3 && strncasecmp(q, "inf", 3) == 0) ||
            (m == 8 && strncasecmp(q, "infinity", 8) == 0)) {
            *v = neg ? -INFINITY : INFINITY;
            return true;
        }
        if (m == 3 && q == p && strncasecmp(q, "nan", 3) == 0) {
            *v = NAN;
            return true;
        }
        return false;
    }
    bool digit = false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9')
            digit = true;
        else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-')
            return false;
    }
    if (!digit)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end;
    /* The daemon never calls setlocale: strtod reads '.' as the C locale does. */
    *v = strtod(buf, &end);
    return end == buf + n;
}

static uint32_t hash_name(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static size_t find_fam(const struct parser *ps, const char *name, size_t n, uint32_t h)
{
    if (!ps->index_cap)
        return 0;
    size_t mask = ps->index_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t k = ps->index[i];
        if (!k)
            return 0;
        const struct fam *f = &ps->fams[k - 1];
        if (f->hash == h && f->name_len == n && memcmp(f->name, name, n) == 0)
            return k;
    }
}

static int grow_index(struct parser *ps)
{
    size_t cap = ps->index_cap ? ps->index_cap * 2 : 64;
    uint32_t *ix = calloc(cap, sizeof *ix);
    if (!ix)
        return -ENOMEM;
    for (size_t k = 0; k < ps->nfam; k++) {
        size_t i = ps->fams[k].hash & (cap - 1);
        while (ix[i])
            i = (i + 1) & (cap - 1);
        ix[i] = (uint32_t)(k + 1);
    }
    free(ps->index);
    ps->index = ix;
    ps->index_cap = cap;
    return 0;
}

/* Adds a family (the caller looked it up first); returns its index + 1 or a negative errno. */
static long add_fam(struct parser *ps, const char *name, size_t n, uint32_t h)
{
    if (ps->nfam >= ps->max_families)
        return fail(ps, "more than %zu metric families", ps->max_families);
    if (ps->nfam == ps->capfam) {
        size_t cap = ps->capfam ? ps->capfam * 2 : 64;
        struct fam *f = realloc(ps->fams, cap * sizeof *f);
        if (!f)
            return -ENOMEM;
        ps->fams = f;
        ps->capfam = cap;
    }
    if ((ps->nfam + 1) * 2 > ps->index_cap) {
        int rc = grow_index(ps);
        if (rc)
            return rc;
    }
    struct fam *f = &ps->fams[ps->nfam];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->name_len = n;
    f->hash = h;
    ps->nfam++;
    size_t i = h & (ps->index_cap - 1);
    while (ps->index[i])
        i = (i + 1) & (ps->index_cap - 1);
    ps->index[i] = (uint32_t)ps->nfam;
    return (long)ps->nfam;
}

/* Decodes HELP (\\, \n; OpenMetrics also \") and copies UNIT into ps->meta for family k. */
static int load_meta(struct parser *ps, size_t k)
{
    const struct fam *f = &ps->fams[k - 1];
    size_t need = f->help_len + f->unit_len + 2;
    if (need > ps->meta_cap) {
        char *m = realloc(ps->meta, need);
        if (!m)
            return -ENOMEM;
        ps->meta = m;
        ps->meta_cap = need;
    }
    char *o = ps->meta;
    for (size_t i = 0; i < f->help_len; i++) {
        char c = f->help[i];
        if (c == '\\' && i + 1 < f->help_len) {
            char d = f->help[i + 1];
            if (d == '\\' || d == 'n' || (d == '"' && ps->fmt == WT_EXPO_PARSE_OPENMETRICS)) {
                *o++ = d == 'n' ? '\n' : d;
                i++;
                continue;
            }
        }
        *o++ = c;
    }
    *o++ = '\0';
    if (f->unit_len)
        memcpy(o, f->unit, f->unit_len);
    o[f->unit_len] = '\0';
    ps->pub.name = f->name;
    ps->pub.name_len = f->name_len;
    ps->pub.type = f->type;
    ps->pub.help = ps->meta;
    ps->pub.unit = o;
    ps->pub.has_type = f->has_type;
    ps->pub.has_help = f->has_help;
    ps->pub.has_unit = f->has_unit;
    ps->meta_owner = k;
    return 0;
}

/* Hands family k to the caller's filter once, when its metadata is complete. */
static int announce(struct parser *ps, size_t k)
{
    struct fam *f = &ps->fams[k - 1];
    if (f->announced)
        return 0;
    f->announced = true;
    if (!ps->o->family) {
        f->wanted = true;
        return 0;
    }
    int rc = load_meta(ps, k);
    if (rc)
        return rc;
    f->wanted = ps->o->family(ps->o->ctx, &ps->pub);
    return 0;
}

static int set_current(struct parser *ps, size_t k)
{
    if (ps->cur && ps->cur != k) {
        int rc = announce(ps, ps->cur);
        if (rc)
            return rc;
    }
    ps->cur = k;
    return 0;
}

static const struct {
    const char *word;
    enum wt_expo_parse_type type;
    bool om_only, text_only;
} types[] = {
    {"counter", WT_EXPO_PARSE_COUNTER, false, false},
    {"gauge", WT_EXPO_PARSE_GAUGE, false, false},
    {"histogram", WT_EXPO_PARSE_HISTOGRAM, false, false},
    {"summary", WT_EXPO_PARSE_SUMMARY, false, false},
    {"untyped", WT_EXPO_PARSE_UNTYPED, false, true},
    {"unknown", WT_EXPO_PARSE_UNTYPED, true, false},
    {"gaugehistogram", WT_EXPO_PARSE_GAUGEHISTOGRAM, true, false},
    {"info", WT_EXPO_PARSE_INFO, true, false},
    {"stateset", WT_EXPO_PARSE_STATESET, true, false},
};

const char *wt_expo_parse_type_name(enum wt_expo_parse_type t)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (types[i].type == t)
            return types[i].word;
    }
    return "untyped";
}

/* A "# TYPE", "# HELP" or "# UNIT" line; p is at its name, e at the line's end. */
static int meta_line(struct parser *ps, char kind, const char *p, const char *e)
{
    const char *what = kind == 'T' ? "TYPE" : kind == 'H' ? "HELP" : "UNIT";
    size_t n = scan_name(p, e);
    if (!n)
        return fail(ps, "%s: expected a metric name", what);
    const char *name = p;
    p += n;
    const char *text = p;
    if (p < e) {
        if (!skip_sep(ps, &p, e))
            return fail(ps, "%s %.*s: expected a space after the name", what, (int)n, name);
        text = p;
    } else if (kind == 'T' || ps->fmt == WT_EXPO_PARSE_OPENMETRICS) {
        /* OpenMetrics writes "# HELP name " with an empty text; 0.0.4 may leave out the space. */
        return fail(ps, "%s %.*s: expected a space after the name", what, (int)n, name);
    }
    uint32_t h = hash_name(name, n);
    size_t k = find_fam(ps, name, n, h);
    if (k) {
        const struct fam *f = &ps->fams[k - 1];
        if (f->has_samples)
            return fail(ps, "%s %.*s: comes after the family's samples", what, (int)n, name);
        bool dup = kind == 'T' ? f->has_type : kind == 'H' ? f->has_help : f->has_unit;
        if (dup)
            return fail(ps, "%s %.*s: a second %s line", what, (int)n, name, what);
    } else {
        long r = add_fam(ps, name, n, h);
        if (r < 0)
            return (int)r;
        k = (size_t)r;
    }
    int rc = set_current(ps, k);
    if (rc)
        return rc;
    struct fam *f = &ps->fams[k - 1];
    if (kind == 'T') {
        const char *w = text;
        while (e > w && ps->fmt == WT_EXPO_PARSE_TEXT && is_blank(e[-1]))
            e--;
        size_t wl = (size_t)(e - w);
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            bool skip =
                ps->fmt == WT_EXPO_PARSE_OPENMETRICS ? types[i].text_only : types[i].om_only;
            if (!skip && strlen(types[i].word) == wl && memcmp(types[i].word, w, wl) == 0) {
                f->type = types[i].type;
                f->has_type = true;
                return 0;
            }
        }
        return fail(ps, "TYPE %.*s: unknown type \"%.*s\"", (int)n, name, (int)(wl > 32 ? 32 : wl),
                    w);
    }
    if (kind == 'H') {
        f->help = text;
        f->help_len = (size_t)(e - text);
        f->has_help = true;
        return 0;
    }
    /* UNIT (OpenMetrics): the family's name ends in "_<unit>". */
    size_t ul = (size_t)(e - text);
    if (ul && (ul + 1 >= n || name[n - ul - 1] != '_' || memcmp(name + n - ul, text, ul) != 0))
        return fail(ps, "UNIT %.*s: the name does not end in _%.*s", (int)n, name,
                    (int)(ul > 32 ? 32 : ul), text);
    f->unit = text;
    f->unit_len = ul;
    f->has_unit = true;
    return 0;
}

/* A comment line (p after '#'). Returns 1 for "# EOF". */
static int comment_line(struct parser *ps, const char *p, const char *e)
{
    if (ps->fmt == WT_EXPO_PARSE_OPENMETRICS) {
        size_t n = (size_t)(e - p);
        if (n == 4 && memcmp(p, " EOF", 4) == 0)
            return 1;
        if (n > 6 && p[0] == ' ' && p[5] == ' ') {
            if (memcmp(p + 1, "TYPE", 4) == 0)
                return meta_line(ps, 'T', p + 6, e);
            if (memcmp(p + 1, "HELP", 4) == 0)
                return meta_line(ps, 'H', p + 6, e);
            if (memcmp(p + 1, "UNIT", 4) == 0)
                return meta_line(ps, 'U', p + 6, e);
        }
        return fail(ps, "comment: OpenMetrics allows only # TYPE, # HELP, # UNIT and # EOF");
    }
    while (p < e && is_blank(*p))
        p++;
    if (e - p < 4 || (e - p > 4 && !is_blank(p[4])))
        return 0;
    char kind = 0;
    if (memcmp(p, "TYPE", 4) == 0)
        kind = 'T';
    else if (memcmp(p, "HELP", 4) == 0)
        kind = 'H';
    else
        return 0; /* any other comment */
    p += 4;
    while (p < e && is_blank(*p))
        p++;
    return meta_line(ps, kind, p, e);
}

static bool suffix_allowed(enum wt_expo_parse_type t, enum wt_expo_parse_suffix s,
                           enum wt_expo_parse_fmt fmt)
{
    switch (t) {
    case WT_EXPO_PARSE_COUNTER:
        return s == WT_EXPO_PARSE_SFX_TOTAL || s == WT_EXPO_PARSE_SFX_CREATED ||
               (s == WT_EXPO_PARSE_SFX_NONE && fmt == WT_EXPO_PARSE_TEXT);
    case WT_EXPO_PARSE_HISTOGRAM:
        return s == WT_EXPO_PARSE_SFX_BUCKET || s == WT_EXPO_PARSE_SFX_COUNT ||
               s == WT_EXPO_PARSE_SFX_SUM || s == WT_EXPO_PARSE_SFX_CREATED;
    case WT_EXPO_PARSE_GAUGEHISTOGRAM:
        return s == WT_EXPO_PARSE_SFX_BUCKET || s == WT_EXPO_PARSE_SFX_GCOUNT ||
               s == WT_EXPO_PARSE_SFX_GSUM;
    case WT_EXPO_PARSE_SUMMARY:
        return s == WT_EXPO_PARSE_SFX_NONE || s == WT_EXPO_PARSE_SFX_COUNT ||
               s == WT_EXPO_PARSE_SFX_SUM || s == WT_EXPO_PARSE_SFX_CREATED;
    case WT_EXPO_PARSE_INFO:
        return s == WT_EXPO_PARSE_SFX_INFO;
    default:
        return s == WT_EXPO_PARSE_SFX_NONE;
    }
}

static const struct {
    const char *s;
    size_t n;
    enum wt_expo_parse_suffix sfx;
} suffixes[] = {
    {"_total", 6, WT_EXPO_PARSE_SFX_TOTAL},   {"_created", 8, WT_EXPO_PARSE_SFX_CREATED},
    {"_bucket", 7, WT_EXPO_PARSE_SFX_BUCKET}, {"_count", 6, WT_EXPO_PARSE_SFX_COUNT},
    {"_sum", 4, WT_EXPO_PARSE_SFX_SUM},       {"_gcount", 7, WT_EXPO_PARSE_SFX_GCOUNT},
    {"_gsum", 5, WT_EXPO_PARSE_SFX_GSUM},     {"_info", 5, WT_EXPO_PARSE_SFX_INFO},
};

/* Whether sample name (n bytes) belongs to family k, and with which suffix. */
static bool belongs(const struct parser *ps, size_t k, const char *name, size_t n,
                    enum wt_expo_parse_suffix *sfx)
{
    const struct fam *f = &ps->fams[k - 1];
    if (n < f->name_len || memcmp(name, f->name, f->name_len) != 0)
        return false;
    enum wt_expo_parse_suffix s = WT_EXPO_PARSE_SFX_NONE;
    if (n == f->name_len) {
        /* prometheus_client's 0.0.4 counters: "# TYPE x_total counter", then x_total. */
        if (f->type == WT_EXPO_PARSE_COUNTER && n > 6 && memcmp(name + n - 6, "_total", 6) == 0)
            s = WT_EXPO_PARSE_SFX_TOTAL;
    } else {
        size_t r = n - f->name_len;
        size_t i = 0;
        for (; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            if (suffixes[i].n == r && memcmp(name + f->name_len, suffixes[i].s, r) == 0)
                break;
        }
        if (i == sizeof suffixes / sizeof suffixes[0])
            return false;
        s = suffixes[i].sfx;
    }
    if (!suffix_allowed(f->type, s, WT_EXPO_PARSE_TEXT))
        return false;
    *sfx = s;
    return true;
}

/* The family of a sample name: the current one, the name itself, or the name less a suffix;
 * else a new untyped family of that name. Returns its index + 1 or a negative errno. */
static long resolve(struct parser *ps, const char *name, size_t n, enum wt_expo_parse_suffix *sfx)
{
    if (ps->cur && belongs(ps, ps->cur, name, n, sfx))
        return (long)ps->cur;
    uint32_t h = hash_name(name, n);
    size_t k = find_fam(ps, name, n, h);
    if (k && belongs(ps, k, name, n, sfx))
        return (long)k;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t sn = suffixes[i].n;
        if (n > sn && memcmp(name + n - sn, suffixes[i].s, sn) == 0) {
            size_t j = find_fam(ps, name, n - sn, hash_name(name, n - sn));
            if (j && belongs(ps, j, name, n, sfx))
                return (long)j;
        }
    }
    if (k) {
        /* The name is a family whose type wants a suffix (a histogram's bare name...). */
        return fail(ps, "%.*s: a %s needs a suffix on its samples", (int)(n > 64 ? 64 : n), name,
                    wt_expo_parse_type_name(ps->fams[k - 1].type));
    }
    *sfx = WT_EXPO_PARSE_SFX_NONE;
    return add_fam(ps, name, n, h);
}

/*
 * A label set from '{' (p points just after it) to '}'. With store, labels go to ps->labels and
 * decoded values to ps->scratch; without (an exemplar), they are checked and their length in
 * code points added to *runes. Returns 0 with *pp after '}', or an error.
 */
static int label_set(struct parser *ps, const char **pp, const char *e, bool store, size_t *count,
                     size_t *runes)
{
    const char *p = *pp;
    bool om = ps->fmt == WT_EXPO_PARSE_OPENMETRICS;
    size_t nl = 0;
    for (;;) {
        if (!om) {
            while (p < e && is_blank(*p))
                p++;
        }
        if (p >= e)
            return fail(ps, "labels: expected '}' before the end of the line");
        if (*p == '}') {
            if (om && nl > 0)
                return fail(ps, "labels: a ',' before '}'");
            p++;
            break;
        }
        size_t ln = scan_label_name(p, e);
        if (!ln)
            return fail(ps, "labels: expected a label name");
        const char *lname = p;
        p += ln;
        if (!om) {
            while (p < e && is_blank(*p))
                p++;
        }
        if (p >= e || *p != '=')
            return fail(ps, "label %.*s: expected '='", (int)(ln > 64 ? 64 : ln), lname);
        p++;
        if (!om) {
            while (p < e && is_blank(*p))
                p++;
        }
        if (p >= e || *p != '"')
            return fail(ps, "label %.*s: expected '\"'", (int)(ln > 64 ? 64 : ln), lname);
        p++;
        const char *v = p;
        bool esc = false, high = false;
        while (p < e && *p != '"') {
            if (*p == '\\') {
                esc = true;
                p++;
                if (p >= e)
                    break;
            }
            /* An escaped byte is checked as well: a backslash before 0xA5 is no UTF-8 either. */
            if ((unsigned char)*p >= 0x80)
                high = true;
            p++;
        }
        if (p >= e)
            return fail(ps, "label value: unterminated string");
        size_t vn = (size_t)(p - v);
        p++; /* the closing quote */
        if (high && !utf8_valid((const unsigned char *)v, vn))
            return fail(ps, "label %.*s: value is not valid UTF-8", (int)(ln > 64 ? 64 : ln),
                        lname);
        if (store) {
            if (nl >= ps->max_labels)
                return fail(ps, "more than %zu labels", ps->max_labels);
            for (size_t i = 0; i < nl; i++) {
                if (ps->labels[i].name_len == ln && memcmp(ps->labels[i].name, lname, ln) == 0)
                    return fail(ps, "label %.*s: given twice", (int)(ln > 64 ? 64 : ln), lname);
            }
            struct wt_expo_parse_label *l = &ps->labels[nl];
            l->name = lname;
            l->name_len = ln;
            if (esc) {
                /* Decoded is never longer: the line fits the scratch buffer. */
                char *o = ps->scratch + ps->scratch_len;
                l->value = o;
                for (size_t i = 0; i < vn; i++) {
                    if (v[i] == '\\' && i + 1 < vn) {
                        char d = v[++i];
                        if (d == 'n')
                            *o++ = '\n';
                        else if (d == '\\' || d == '"')
                            *o++ = d;
                        else {
                            /* Undefined escapes stay as written, as Prometheus keeps them. */
                            *o++ = '\\';
                            *o++ = d;
                        }
                    } else {
                        *o++ = v[i];
                    }
                }
                l->value_len = (size_t)(o - l->value);
                ps->scratch_len += l->value_len;
            } else {
                l->value = v;
                l->value_len = vn;
            }
        } else {
            *runes += utf8_len(lname, ln) + utf8_len(v, vn);
        }
        nl++;
        if (!om) {
            while (p < e && is_blank(*p))
                p++;
        }
        if (p < e && *p == ',') {
            p++;
            continue;
        }
        if (p < e && *p == '}') {
            p++;
            break;
        }
        return fail(ps, "labels: expected ',' or '}'");
    }
    *count = nl;
    *pp = p;
    return 0;
}

/* A token up to the next separator or the line's end. */
static size_t token(const struct parser *ps, const char *p, const char *e)
{
    const char *s = p;
    if (ps->fmt == WT_EXPO_PARSE_OPENMETRICS) {
        while (p < e && *p != ' ')
            p++;
    } else {
        while (p < e && !is_blank(*p))
            p++;
    }
    return (size_t)(p - s);
}

/*
 * Seconds (OpenMetrics, a float) to nanoseconds: exact for the plain decimal form every client
 * writes ("1700000000.25"), through a double for an exponent.
 */
static bool seconds_ns(const char *p, size_t n, int64_t *t_ns)
{
    double s;
    if (!parse_float(p, n, false, &s) || !(fabs(s) < 9.2e9))
        return false;
    const char *q = p, *e = p + n;
    bool neg = false;
    if (q < e && (*q == '+' || *q == '-'))
        neg = *q++ == '-';
    int64_t sec = 0, frac = 0, scale = 1000000000;
    for (; q < e && *q >= '0' && *q <= '9'; q++)
        sec = sec * 10 + (*q - '0'); /* < 9.2e9: checked above */
    if (q < e && *q == '.') {
        for (q++; q < e && *q >= '0' && *q <= '9'; q++) {
            if (scale > 1) {
                scale /= 10;
                frac += (*q - '0') * scale;
            }
        }
    }
    if (q < e) {
        *t_ns = (int64_t)llround(s * 1e9);
        return true;
    }
    *t_ns = (sec * 1000000000 + frac) * (neg ? -1 : 1);
    return true;
}

/* " # {labels} value [timestamp]" after a sample (p at '#'). */
static int exemplar(struct parser *ps, const char *p, const char *e)
{
    p++;
    if (!skip_sep(ps, &p, e) || p >= e || *p != '{')
        return fail(ps, "exemplar: expected '{' after '#'");
    p++;
    size_t n = 0, runes = 0;
    int rc = label_set(ps, &p, e, false, &n, &runes);
    if (rc)
        return rc;
    if (runes > 128)
        return fail(ps, "exemplar: labels of %zu characters, more than 128", runes);
    if (!skip_sep(ps, &p, e))
        return fail(ps, "exemplar: expected a value after the labels");
    size_t tn = token(ps, p, e);
    double v;
    if (!parse_float(p, tn, true, &v))
        return fail(ps, "exemplar: value is not a number");
    p += tn;
    if (p < e) {
        if (!skip_sep(ps, &p, e))
            return fail(ps, "exemplar: unexpected text after the value");
        tn = token(ps, p, e);
        int64_t t;
        if (tn && !seconds_ns(p, tn, &t))
            return fail(ps, "exemplar: timestamp is not a number of seconds");
        p += tn;
        if (ps->fmt == WT_EXPO_PARSE_TEXT) {
            while (p < e && is_blank(*p))
                p++;
        }
        if (p < e || tn == 0)
            return fail(ps, "exemplar: unexpected text after the timestamp");
    }
    return 0;
}

static double label_float(const struct parser *ps, size_t nl, const char *name, size_t n,
                          bool *present)
{
    for (size_t i = 0; i < nl; i++) {
        const struct wt_expo_parse_label *l = &ps->labels[i];
        if (l->name_len == n && memcmp(l->name, name, n) == 0) {
            double v;
            *present = true;
            return parse_float(l->value, l->value_len, true, &v) ? v : NAN;
        }
    }
    *present = false;
    return NAN;
}

static int sample_line(struct parser *ps, const char *p, const char *e)
{
    bool om = ps->fmt == WT_EXPO_PARSE_OPENMETRICS;
    size_t n = scan_name(p, e);
    if (!n)
        return fail(ps, "expected a metric name, # or an empty line");
    const char *name = p;
    p += n;
    int nn = (int)(n > 64 ? 64 : n);
    if (++ps->series > ps->max_series)
        return fail(ps, "more than %zu series", ps->max_series);
    enum wt_expo_parse_suffix sfx;
    long r = resolve(ps, name, n, &sfx);
    if (r < 0)
        return (int)r;
    size_t k = (size_t)r;
    struct fam *f = &ps->fams[k - 1];
    if (k != ps->cur && f->has_samples && om)
        return fail(ps, "%.*s: the family's samples are not together", nn, name);
    int rc = set_current(ps, k);
    if (rc)
        return rc;
    f = &ps->fams[k - 1];
    if (om && !suffix_allowed(f->type, sfx, WT_EXPO_PARSE_OPENMETRICS))
        return fail(ps, "%.*s: a counter's samples end in _total in OpenMetrics", nn, name);
    f->has_samples = true;
    rc = announce(ps, k);
    if (rc)
        return rc;

    ps->scratch_len = 0;
    size_t nl = 0;
    if (!om) {
        /* 0.0.4 lets blanks stand between the name and its labels. */
        const char *q = p;
        while (q < e && is_blank(*q))
            q++;
        if (q < e && *q == '{')
            p = q;
    }
    if (p < e && *p == '{') {
        p++;
        size_t runes = 0;
        rc = label_set(ps, &p, e, true, &nl, &runes);
        if (rc)
            return rc;
    }
    if (!skip_sep(ps, &p, e))
        return fail(ps, "%.*s: expected a space and a value", nn, name);
    size_t tn = token(ps, p, e);
    struct wt_expo_parse_sample s = {.name = name,
                                     .name_len = n,
                                     .suffix = sfx,
                                     .labels = ps->labels,
                                     .n_labels = nl,
                                     .line = ps->line};
    if (!parse_float(p, tn, true, &s.value))
        return fail(ps, "%.*s: value is not a number", nn, name);
    p += tn;
    if (p < e && skip_sep(ps, &p, e) && p < e && *p != '#') {
        tn = token(ps, p, e);
        if (om) {
            if (!seconds_ns(p, tn, &s.t_ns))
                return fail(ps, "%.*s: timestamp is not a number of seconds", nn, name);
        } else {
            /* Integer milliseconds, as Go's ParseInt reads them. */
            const char *q = p;
            bool neg = *q == '-';
            if (*q == '-' || *q == '+')
                q++;
            if (q == p + tn)
                return fail(ps, "%.*s: timestamp is not an integer of milliseconds", nn, name);
            int64_t ms = 0;
            for (; q < p + tn; q++) {
                if (*q < '0' || *q > '9')
                    return fail(ps, "%.*s: timestamp is not an integer of milliseconds", nn, name);
                if (ms > (INT64_MAX / 1000000 - 9) / 10)
                    return fail(ps, "%.*s: timestamp out of range", nn, name);
                ms = ms * 10 + (*q - '0');
            }
            s.t_ns = (neg ? -ms : ms) * 1000000;
        }
        s.has_t = true;
        p += tn;
        skip_sep(ps, &p, e);
    }
    if (p < e) {
        if (*p != '#' || p[-1] != ' ')
            return fail(ps, "%.*s: unexpected text after the value", nn, name);
        rc = exemplar(ps, p, e);
        if (rc)
            return rc;
    } else if (p[-1] == ' ' && om) {
        return fail(ps, "%.*s: a space at the end of the line", nn, name);
    }

    bool present;
    s.le = NAN;
    s.quantile = NAN;
    if (sfx == WT_EXPO_PARSE_SFX_BUCKET) {
        s.le = label_float(ps, nl, "le", 2, &present);
        if (om && (!present || isnan(s.le)))
            return fail(ps, "%.*s: a bucket needs an le label with a number", nn, name);
    } else if (f->type == WT_EXPO_PARSE_SUMMARY && sfx == WT_EXPO_PARSE_SFX_NONE) {
        s.quantile = label_float(ps, nl, "quantile", 8, &present);
        if (om && (!present || isnan(s.quantile)))
            return fail(ps, "%.*s: a summary needs a quantile label with a number", nn, name);
    }
    if (!f->wanted || !ps->o->sample)
        return 0;
    if (ps->meta_owner != k) {
        rc = load_meta(ps, k);
        if (rc)
            return rc;
    }
    rc = ps->o->sample(ps->o->ctx, &ps->pub, &s);
    if (rc) {
        fail(ps, "stopped by the caller");
        return rc < 0 ? rc : -ECANCELED;
    }
    return 0;
}

static int run(struct parser *ps)
{
    const char *p = ps->body, *end = ps->body + ps->len;
    bool om = ps->fmt == WT_EXPO_PARSE_OPENMETRICS;
    size_t longest = 0;
    for (;;) {
        if (p >= end) {
            if (om) {
                ps->line++;
                return fail(ps, "no # EOF at the end: the OpenMetrics body is cut short");
            }
            break;
        }
        ps->line++;
        const char *e = memchr(p, '\n', (size_t)(end - p));
        const char *next;
        if (e) {
            next = e + 1;
        } else {
            /* 0.0.4 ends every line with a newline: without it the last value may be cut
             * ("12" read as "1"). OpenMetrics' "# EOF" may stand last without one. */
            if (!om)
                return fail(ps, "no newline at the end: the body is cut short");
            e = end;
            next = end;
        }
        size_t ll = (size_t)(e - p);
        if (ll > longest) {
            /* Room for the decoded label values of this line, and the le/quantile copy. */
            char *s = realloc(ps->scratch, ll + 1);
            if (!s)
                return -ENOMEM;
            ps->scratch = s;
            ps->scratch_cap = ll + 1;
            longest = ll;
        }
        int rc = 0;
        if (p == e) {
            if (om)
                return fail(ps, "an empty line (OpenMetrics has none)");
        } else if (*p == '#') {
            rc = comment_line(ps, p + 1, e);
            if (rc == 1) {
                if (next < end) {
                    ps->line++;
                    return fail(ps, "text after # EOF");
                }
                break;
            }
        } else if (!om && is_blank(*p)) {
            const char *q = p;
            while (q < e && is_blank(*q))
                q++;
            if (q < e)
                rc = *q == '#' ? comment_line(ps, q + 1, e) : sample_line(ps, q, e);
        } else {
            rc = sample_line(ps, p, e);
        }
        if (rc)
            return rc;
        p = next;
    }
    if (ps->cur)
        return announce(ps, ps->cur);
    return 0;
}

int wt_expo_parse(const char *body, size_t len, const struct wt_expo_parse_opts *o,
                  struct wt_err *err)
{
    struct parser ps = {.body = body, .len = len, .fmt = o->fmt, .o = o, .err = err};
    size_t max_body = o->max_body ? o->max_body : WT_EXPO_PARSE_MAX_BODY;
    ps.max_series = o->max_series ? o->max_series : WT_EXPO_PARSE_MAX_SERIES;
    ps.max_labels = o->max_labels ? o->max_labels : WT_EXPO_PARSE_MAX_LABELS;
    ps.max_families = o->max_families ? o->max_families : WT_EXPO_PARSE_MAX_FAMILIES;
    if (ps.max_labels > WT_EXPO_PARSE_LABELS_CAP)
        ps.max_labels = WT_EXPO_PARSE_LABELS_CAP;
    if (ps.max_families > UINT32_MAX / 4)
        ps.max_families = UINT32_MAX / 4;
    if (len > max_body)
        return wt_err_set(err, "body: %zu bytes, more than the limit of %zu", len, max_body);
    if (len && !body)
        return wt_err_set(err, "body: NULL");
    if (!body)
        ps.body = ""; /* no pointer arithmetic on NULL */
    int rc;
    ps.labels = malloc(ps.max_labels * sizeof *ps.labels);
    if (!ps.labels) {
        rc = -ENOMEM;
        goto out;
    }
    rc = run(&ps);
out:
    if (rc == -ENOMEM)
        wt_err_set(err, "out of memory");
    free(ps.labels);
    free(ps.scratch);
    free(ps.meta);
    free(ps.fams);
    free(ps.index);
    return rc;
}

enum wt_expo_parse_fmt wt_expo_parse_fmt_of(const char *content_type)
{
    if (!content_type)
        return WT_EXPO_PARSE_TEXT;
    while (*content_type == ' ' || *content_type == '\t')
        content_type++;
    static const char om[] = "application/openmetrics-text";
    if (strncasecmp(content_type, om, sizeof om - 1) == 0) {
        char c = content_type[sizeof om - 1];
        if (c == '\0' || c == ';' || c == ' ' || c == '\t')
            return WT_EXPO_PARSE_OPENMETRICS;
    }
    return WT_EXPO_PARSE_TEXT;
}

bool wt_expo_parse_family_is(const struct wt_expo_parse_family *f, const char *s, size_t n)
{
    return f->name_len == n && memcmp(f->name, s, n) == 0;
}

const char *wt_expo_parse_label(const struct wt_expo_parse_sample *s, const char *name, size_t *len)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < s->n_labels; i++) {
        if (s->labels[i].name_len == n && memcmp(s->labels[i].name, name, n) == 0) {
            if (len)
                *len = s->labels[i].value_len;
            return s->labels[i].value;
        }
    }
    return NULL;
}
