/* SPDX-License-Identifier: MIT */
/*
 * Parsing of carbon series (see carbon_parse.h): CSV, the UK Carbon Intensity API's JSON and
 * Electricity Maps' JSON into a batch of points, every malformed line named with its number; the
 * periods of points without an end; and reading a series file into memory.
 */
#include "audit/carbon_parse.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/csv.h"

#define HOUR_NS (3600LL * WT_NS_PER_S)
#define MAX_REPORTED 20              /* malformed lines listed; the rest are counted */
#define MAX_FILE (64u * 1024 * 1024) /* a file loaded by hand */

/* ---- parsing ---- */

void wt_carbon_batch_free(struct wt_carbon_batch *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

int wt_carbon_batch_add(struct wt_carbon_batch *b, int64_t from, int64_t to, double v,
                        enum wt_carbon_kind kind, const char *zone)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 64;
        if (nc > WT_CARBON_MAX_POINTS)
            return -E2BIG;
        struct wt_carbon_point *np = realloc(b->p, nc * sizeof *np);
        if (!np)
            return -ENOMEM;
        b->p = np;
        b->cap = nc;
    }
    struct wt_carbon_point *p = &b->p[b->n++];
    p->from_ns = from;
    p->to_ns = to;
    p->value = v;
    p->kind = kind;
    snprintf(p->zone, sizeof p->zone, "%s", zone);
    return 0;
}

/* Collects malformed-line reports; the parse fails when there is any. */
struct bad {
    const char *name;
    FILE *report;
    size_t n;
};

__attribute__((format(printf, 3, 4))) static void bad_line(struct bad *b, size_t line,
                                                           const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->report && b->n < MAX_REPORTED)
        fprintf(b->report, "%s:%zu: %s\n", b->name, line, msg);
    b->n++;
}

static int cmp_point(const void *x, const void *y)
{
    const struct wt_carbon_point *a = x, *b = y;
    int c = strcmp(a->zone, b->zone);
    if (c)
        return c;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return a->from_ns < b->from_ns ? -1 : a->from_ns > b->from_ns;
}

/*
 * Points parsed without an end (to_ns 0) last the period of their zone and kind: the smallest
 * step between consecutive starts, or 1 h for a single point.
 */
static void close_periods(struct wt_carbon_batch *b)
{
    qsort(b->p, b->n, sizeof *b->p, cmp_point);
    for (size_t i = 0; i < b->n;) {
        size_t j = i;
        int64_t period = 0;
        while (j + 1 < b->n && strcmp(b->p[j + 1].zone, b->p[i].zone) == 0 &&
               b->p[j + 1].kind == b->p[i].kind) {
            int64_t d;
            if (__builtin_sub_overflow(b->p[j + 1].from_ns, b->p[j].from_ns, &d))
                d = 0; /* 1700 and 2200: no period to speak of */
            if (d > 0 && (!period || d < period))
                period = d;
            j++;
        }
        if (!period)
            period = HOUR_NS;
        for (size_t k = i; k <= j; k++) {
            /* Two points centuries apart make a period that runs past 2262: it ends there. */
            if (!b->p[k].to_ns && __builtin_add_overflow(b->p[k].from_ns, period, &b->p[k].to_ns))
                b->p[k].to_ns = INT64_MAX;
        }
        i = j + 1;
    }
}

static int number(const char *s, double *out)
{
    char *end;
    if (!*s)
        return -EINVAL;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

#define MAX_COLS 16

static int parse_csv(struct bad *bd, const char *buf, size_t len, enum wt_carbon_series series,
                     const char *zone, struct wt_carbon_batch *out)
{
    struct wt_csv csv;
    int tcol = -1, tocol = -1, vcol = -1, kcol = -1, fcol = -1, acol = -1;
    size_t ncols = 0;
    bool header = false;
    int rc = 0, r;
    wt_csv_init_mem(&csv, buf, len);
    csv.comment = '#';
    while ((r = wt_csv_next(&csv)) != 0) {
        if (r == -EINVAL) {
            bad_line(bd, csv.line, "%s", csv.why);
            continue;
        }
        if (r < 0) {
            rc = r;
            break;
        }
        char **cols = csv.field;
        size_t n = csv.n, lineno = csv.line;
        if (!header) {
            header = true;
            ncols = n;
            for (size_t i = 0; i < n && i < MAX_COLS; i++) {
                char *c = cols[i];
                for (char *q = c; *q; q++)
                    *q = (char)tolower((unsigned char)*q);
                if (tcol < 0 &&
                    (!strcmp(c, "timestamp") || !strcmp(c, "time") || !strcmp(c, "datetime") ||
                     !strcmp(c, "from") || !strcmp(c, "date") || !strcmp(c, "start")))
                    tcol = (int)i;
                else if (!strcmp(c, "to") || !strcmp(c, "end"))
                    tocol = (int)i;
                else if (!strcmp(c, "kind"))
                    kcol = (int)i;
                else if (!strcmp(c, "intensity.forecast") || !strcmp(c, "forecast"))
                    fcol = (int)i;
                else if (!strcmp(c, "intensity.actual") || !strcmp(c, "actual"))
                    acol = (int)i;
                else if (vcol < 0 && strcmp(c, "intensity.index") && strcmp(c, "index"))
                    vcol = (int)i;
            }
            if (n > MAX_COLS || tcol < 0 || (vcol < 0 && fcol < 0 && acol < 0)) {
                bad_line(bd, lineno,
                         "expected a header: timestamp,gco2_per_kwh[,kind] or "
                         "from,intensity.forecast,intensity.actual");
                goto done;
            }
            if (fcol >= 0 || acol >= 0)
                vcol = kcol = -1; /* the UK layout: a forecast and an actual per row */
            continue;
        }
        if (n != ncols) {
            bad_line(bd, lineno, "expected %zu columns (got %zu)", ncols, n);
            continue;
        }
        int64_t t, to = 0;
        if (wt_time_parse(cols[tcol], 0, &t) != 0 || !isdigit((unsigned char)cols[tcol][0])) {
            bad_line(bd, lineno, "bad timestamp \"%.40s\" (expected RFC 3339 or unix seconds)",
                     cols[tcol]);
            continue;
        }
        if (tocol >= 0 && (wt_time_parse(cols[tocol], 0, &to) != 0 || to <= t)) {
            bad_line(bd, lineno, "bad end \"%.40s\" (expected a time after the start)",
                     cols[tocol]);
            continue;
        }
        struct {
            int col;
            enum wt_carbon_kind kind;
        } vals[2] = {{vcol, WT_CK_ACTUAL}, {-1, WT_CK_ACTUAL}};
        size_t nv = 1;
        if (vcol < 0) {
            vals[0].col = fcol;
            vals[0].kind = WT_CK_FORECAST;
            vals[1].col = acol;
            vals[1].kind = WT_CK_ACTUAL;
            nv = 2;
        } else if (kcol >= 0) {
            if (!strcmp(cols[kcol], "forecast"))
                vals[0].kind = WT_CK_FORECAST;
            else if (strcmp(cols[kcol], "actual") != 0) {
                bad_line(bd, lineno, "column %d: kind: expected actual or forecast (got \"%.20s\")",
                         kcol + 1, cols[kcol]);
                continue;
            }
        }
        bool ok = true, any = false;
        double v[2] = {0, 0};
        for (size_t k = 0; k < nv; k++) {
            if (vals[k].col < 0)
                continue;
            const char *s = cols[vals[k].col];
            if (!*s && nv == 2)
                continue; /* the UK files leave the actual of recent periods empty */
            if (number(s, &v[k]) != 0 || (series != WT_CS_PRICE && v[k] < 0)) {
                bad_line(bd, lineno, "column %d: bad number \"%.20s\" (expected %s)",
                         vals[k].col + 1, s, series == WT_CS_PRICE ? "a number" : "a number >= 0");
                ok = false;
                break;
            }
        }
        for (size_t k = 0; ok && k < nv; k++) {
            if (vals[k].col < 0 || (!*cols[vals[k].col] && nv == 2))
                continue;
            any = true;
            if ((rc = wt_carbon_batch_add(out, t, to, v[k], vals[k].kind, zone)) != 0)
                goto done;
        }
        if (ok && !any)
            bad_line(bd, lineno, "no value");
    }
    if (!header && rc == 0)
        bad_line(bd, csv.lines ? csv.lines : 1, "empty: expected a header and rows");
done:
    wt_csv_free(&csv);
    return rc;
}

/* The line of byte offset off in buf. */
static size_t line_at(const char *buf, size_t len, size_t off)
{
    size_t line = 1;
    for (size_t i = 0; i < off && i < len; i++)
        line += buf[i] == '\n';
    return line;
}

/*
 * Lines where the elements of the array under "key" start, in text order: a small scan that
 * knows strings and nesting (cJSON keeps no positions). Returns how many were found (up to max).
 */
static size_t element_lines(const char *buf, size_t len, const char *key, size_t *lines, size_t max)
{
    char pat[64];
    size_t plen = (size_t)snprintf(pat, sizeof pat, "\"%s\"", key), n = 0;
    const char *p = NULL;
    for (size_t i = 0; i + plen <= len; i++) {
        if (memcmp(buf + i, pat, plen) != 0)
            continue;
        size_t k = i + plen;
        while (k < len && isspace((unsigned char)buf[k]))
            k++;
        if (k < len && buf[k] == ':') {
            k++;
            while (k < len && isspace((unsigned char)buf[k]))
                k++;
            if (k < len && buf[k] == '[') {
                p = buf + k;
                break;
            }
        }
    }
    if (!p)
        return 0;
    size_t i = (size_t)(p - buf) + 1, line = line_at(buf, len, i);
    int depth = 0;
    bool in_str = false, expect = true;
    for (; i < len && n < max; i++) {
        char c = buf[i];
        if (c == '\n')
            line++;
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (isspace((unsigned char)c))
            continue;
        if (depth == 0 && expect && c != ']') {
            lines[n++] = line;
            expect = false;
        }
        if (c == '"')
            in_str = true;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (depth == 0)
                break;
            depth--;
        } else if (c == ',' && depth == 0)
            expect = true;
    }
    return n;
}

static bool json_time(const cJSON *o, const char *key, int64_t *t)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s && isdigit((unsigned char)s[0]) && wt_time_parse(s, 0, t) == 0;
}

/* A value that may be absent or null (*has false), else a number (>= 0 unless price). */
static int json_value(const cJSON *o, const char *key, enum wt_carbon_series series, double *v,
                      bool *has)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *has = false;
    if (!x || cJSON_IsNull(x))
        return 0;
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) ||
        (series != WT_CS_PRICE && x->valuedouble < 0))
        return -EINVAL;
    *v = x->valuedouble;
    *has = true;
    return 0;
}

static int parse_uk(struct bad *bd, const char *buf, size_t len, const cJSON *root,
                    enum wt_carbon_series series, const char *zone, struct wt_carbon_batch *out)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    size_t nel = (size_t)cJSON_GetArraySize(data), *lines = calloc(nel + 1, sizeof *lines);
    if (!lines)
        return -ENOMEM;
    element_lines(buf, len, "data", lines, nel);
    if (!cJSON_IsArray(data)) {
        bad_line(bd, 1, "expected {\"data\": [...]} (the Carbon Intensity API's reply)");
        free(lines);
        return 0;
    }
    const cJSON *e;
    size_t i = 0;
    int rc = 0;
    cJSON_ArrayForEach(e, data)
    {
        size_t line = lines[i] ? lines[i] : 1;
        int64_t from, to = 0;
        double f = 0, a = 0;
        bool hf, ha;
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(e, "intensity");
        if (!json_time(e, "from", &from))
            bad_line(bd, line, "data[%zu].from: expected an RFC 3339 time", i);
        else if (cJSON_GetObjectItemCaseSensitive(e, "to") &&
                 (!json_time(e, "to", &to) || to <= from))
            bad_line(bd, line, "data[%zu].to: expected an RFC 3339 time after from", i);
        else if (!cJSON_IsObject(in))
            bad_line(bd, line, "data[%zu].intensity: expected an object", i);
        else if (json_value(in, "forecast", series, &f, &hf) != 0)
            bad_line(bd, line, "data[%zu].intensity.forecast: expected a number >= 0 or null", i);
        else if (json_value(in, "actual", series, &a, &ha) != 0)
            bad_line(bd, line, "data[%zu].intensity.actual: expected a number >= 0 or null", i);
        else if ((hf && (rc = wt_carbon_batch_add(out, from, to, f, WT_CK_FORECAST, zone)) != 0) ||
                 (ha && (rc = wt_carbon_batch_add(out, from, to, a, WT_CK_ACTUAL, zone)) != 0))
            break;
        i++;
    }
    free(lines);
    return rc;
}

static int parse_em_list(struct bad *bd, const char *buf, size_t len, const cJSON *list,
                         const char *key, bool forecast, enum wt_carbon_series series,
                         const char *zone, struct wt_carbon_batch *out)
{
    size_t nel = (size_t)cJSON_GetArraySize(list), *lines = calloc(nel + 1, sizeof *lines);
    const cJSON *e;
    size_t i = 0;
    int rc = 0;
    if (!lines)
        return -ENOMEM;
    element_lines(buf, len, key, lines, nel);
    cJSON_ArrayForEach(e, list)
    {
        size_t line = lines[i] ? lines[i] : 1;
        int64_t t;
        double v = 0;
        bool has;
        const char *z = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "zone"));
        const char *vk = cJSON_GetObjectItemCaseSensitive(e, "carbonIntensity") ? "carbonIntensity"
                         : cJSON_GetObjectItemCaseSensitive(e, "value")         ? "value"
                                                                                : "price";
        if (!cJSON_IsObject(e))
            bad_line(bd, line, "%s[%zu]: expected an object", key, i);
        else if (!json_time(e, "datetime", &t))
            bad_line(bd, line, "%s[%zu].datetime: expected an RFC 3339 time", key, i);
        else if (json_value(e, vk, series, &v, &has) != 0)
            bad_line(bd, line, "%s[%zu].%s: expected a number >= 0 or null", key, i, vk);
        else if (z && !wt_carbon_zone_ok(z))
            bad_line(bd, line, "%s[%zu].zone: expected a zone name", key, i);
        else if (!z && (!zone || !*zone))
            bad_line(bd, line, "%s[%zu]: no zone (give --zone or the reply's \"zone\")", key, i);
        else if (has) {
            bool est = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "isEstimated"));
            rc = wt_carbon_batch_add(out, t, 0, v, forecast || est ? WT_CK_FORECAST : WT_CK_ACTUAL,
                                     z ? z : zone);
            if (rc)
                break;
        }
        i++;
    }
    free(lines);
    return rc;
}

static int parse_em(struct bad *bd, const char *buf, size_t len, cJSON *root,
                    enum wt_carbon_series series, const char *zone, struct wt_carbon_batch *out)
{
    const char *z = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "zone"));
    if (z && !wt_carbon_zone_ok(z)) {
        bad_line(bd, 1, "zone: expected a zone name");
        return 0;
    }
    if (z)
        zone = z;
    cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "history");
    cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "forecast");
    cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "data");
    int rc = 0;
    if (cJSON_IsArray(h))
        rc = parse_em_list(bd, buf, len, h, "history", false, series, zone, out);
    if (!rc && cJSON_IsArray(f))
        rc = parse_em_list(bd, buf, len, f, "forecast", true, series, zone, out);
    if (!rc && cJSON_IsArray(d)) /* the v4 /past-range and /forecast replies */
        rc = parse_em_list(bd, buf, len, d, "data", false, series, zone, out);
    if (rc || cJSON_IsArray(h) || cJSON_IsArray(f) || cJSON_IsArray(d))
        return rc;
    if (cJSON_GetObjectItemCaseSensitive(root, "carbonIntensity")) {
        /* /latest: a single object. */
        cJSON *wrap = cJSON_CreateArray();
        if (!wrap)
            return -ENOMEM;
        cJSON_AddItemReferenceToArray(wrap, root);
        rc = parse_em_list(bd, buf, len, wrap, "latest", false, series, zone, out);
        cJSON_Delete(wrap);
        return rc;
    }
    bad_line(bd, 1,
             "expected Electricity Maps' reply: {\"history\": [...]}, {\"forecast\": "
             "[...]} or a /latest object");
    return 0;
}

int wt_carbon_parse(const char *name, const char *buf, size_t len, enum wt_carbon_format fmt,
                    enum wt_carbon_series series, const char *zone, FILE *report,
                    struct wt_carbon_batch *out, struct wt_err *err)
{
    struct bad bd = {.name = name, .report = report};
    int rc = 0;
    memset(out, 0, sizeof *out);
    size_t sp = 0;
    while (sp < len && isspace((unsigned char)buf[sp]))
        sp++;
    /* A UTF-8 byte order mark (spreadsheet exports) is not part of the header. */
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
        buf += 3;
        len -= 3;
        sp = 0;
        while (sp < len && isspace((unsigned char)buf[sp]))
            sp++;
    }
    if (fmt == WT_CF_AUTO) {
        if (sp < len && buf[sp] == '{')
            fmt = memmem(buf, len, "\"intensity\"", 11) ? WT_CF_UK_API : WT_CF_ELECTRICITYMAPS;
        else
            fmt = WT_CF_CSV;
    }
    if (fmt == WT_CF_CSV) {
        if (!zone || !*zone)
            return wt_err_set(err, "%s: no zone: give --zone or set carbon.zone", name);
        const char *nul = memchr(buf, '\0', len);
        if (nul)
            bad_line(&bd, line_at(buf, len, (size_t)(nul - buf)), "a NUL byte: not a text file");
        else
            rc = parse_csv(&bd, buf, len, series, zone, out);
    } else {
        const char *end = NULL;
        cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
        if (!root) {
            size_t off = end && end >= buf ? (size_t)(end - buf) : 0;
            bad_line(&bd, line_at(buf, len, off), "malformed JSON near byte %zu", off);
        } else if (!cJSON_IsObject(root)) {
            bad_line(&bd, 1, "expected a JSON object");
        } else if (fmt == WT_CF_UK_API) {
            if (!zone || !*zone)
                rc = wt_err_set(err, "%s: no zone: give --zone or set carbon.zone", name);
            else
                rc = parse_uk(&bd, buf, len, root, series, zone, out);
        } else {
            rc = parse_em(&bd, buf, len, root, series, zone, out);
        }
        cJSON_Delete(root);
    }
    if (rc == 0 && bd.n) {
        rc = wt_err_set(err, "%s: %zu malformed line%s%s; nothing stored", name, bd.n,
                        bd.n == 1 ? "" : "s", bd.n > MAX_REPORTED ? " (first 20 listed)" : "");
    } else if (rc == 0 && out->n == 0) {
        rc = wt_err_set(err, "%s: no values", name);
    } else if (rc == -E2BIG) {
        wt_err_set(err, "%s: more than %d values", name, WT_CARBON_MAX_POINTS);
        rc = -EINVAL;
    } else if (rc == -ENOMEM) {
        wt_err_set(err, "%s: out of memory", name);
    }
    if (rc) {
        wt_carbon_batch_free(out);
        return rc;
    }
    close_periods(out);
    return 0;
}

int wt_carbon_read_file(const char *path, char **buf, size_t *len, struct wt_err *err)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    size_t n = 0, cap = 0;
    if (!f)
        return wt_err_set(err, "%s: %s", path, strerror(errno)), -ENOENT;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            size_t nc = cap ? 2 * cap : 131072;
            char *nb = nc > MAX_FILE + 65536 + 1 ? NULL : realloc(b, nc);
            if (!nb) {
                free(b);
                fclose(f);
                return wt_err_set(err, "%s: larger than %u MiB", path, MAX_FILE >> 20);
            }
            b = nb;
            cap = nc;
        }
        size_t r = fread(b + n, 1, 65536, f);
        n += r;
        if (r < 65536)
            break;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(b);
        return wt_err_set(err, "%s: read error", path), -EIO;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}
