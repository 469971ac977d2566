/* SPDX-License-Identifier: MIT */
/*
 * The carbon layer (see carbon.h): the "carbon" config section, parsing of intensity, renewable
 * supply and price series (CSV, the UK Carbon Intensity API's JSON, Electricity Maps' JSON),
 * their table in the store, the step function with its hole rule, time-matched emissions and
 * CUE, and the daemon part: a fetch thread with backoff and the grid-intensity /metrics family.
 */
#include "audit/carbon.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "audit/jobs.h"
#include "core/clock.h"
#include "core/hub.h"
#include "core/log.h"
#include "core/yget.h"
#include "serve/http.h"
#include "store/query.h"
#include "store/store.h"

#if defined(__has_include)
#if __has_include("audit/kpi.h")
#include "audit/kpi.h"
#pragma weak wt_kpi_pue
#endif
#endif

#define HOUR_NS (3600LL * WT_NS_PER_S)
#define MAX_REPORTED 20              /* malformed lines listed; the rest are counted */
#define MAX_BODY (16u * 1024 * 1024) /* a fetched reply */
#define MAX_FILE (64u * 1024 * 1024) /* a file loaded by hand */
#define CACHE_REFRESH_NS (30LL * WT_NS_PER_S)

static const char *const series_names[] = {"intensity", "renewable", "price", NULL};
static const char *const format_names[] = {"auto", "csv", "uk_api", "electricitymaps", NULL};
static const char *const src_names[] = {"actual", "forecast", "filled", "static", "none"};

const char *wt_carbon_series_name(enum wt_carbon_series s)
{
    return s <= WT_CS_PRICE ? series_names[s] : "?";
}

int wt_carbon_series_parse(const char *s, enum wt_carbon_series *out)
{
    for (int i = 0; series_names[i]; i++) {
        if (strcmp(s, series_names[i]) == 0) {
            *out = (enum wt_carbon_series)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *wt_carbon_format_name(enum wt_carbon_format f)
{
    return f <= WT_CF_ELECTRICITYMAPS ? format_names[f] : "?";
}

int wt_carbon_format_parse(const char *s, enum wt_carbon_format *out)
{
    for (int i = 0; format_names[i]; i++) {
        if (strcmp(s, format_names[i]) == 0) {
            *out = (enum wt_carbon_format)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *wt_carbon_src_name(enum wt_carbon_src s)
{
    return s < WT_CSRC_COUNT ? src_names[s] : "?";
}

/* ---- configuration ---- */

void wt_carbon_conf_defaults(struct wt_carbon_conf *cf)
{
    memset(cf, 0, sizeof *cf);
    cf->pue_assumed = WT_CARBON_PUE_ASSUMED;
    cf->max_hole_ns = 6 * HOUR_NS;
}

static bool zone_ok(const char *z)
{
    size_t n = strlen(z);
    if (n == 0 || n >= WT_CARBON_ZONE_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)z[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

static int parse_zone(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                      const char *key, char *out)
{
    char p[256];
    int rc = wt_y_string(g, map, path, key, false, out, WT_CARBON_ZONE_LEN);
    if (rc == 0 && out[0] && !zone_ok(out))
        rc =
            wt_y_fail(g, wt_y_get(map, key), wt_y_path(p, sizeof p, path, key),
                      "expected a zone name of letters, digits, '-', '_' or '.' (got \"%s\")", out);
    return rc;
}

static int parse_source(const struct wt_yget *g, const struct wt_ynode *n, const char *path,
                        const struct wt_carbon_conf *cf, struct wt_carbon_source *s)
{
    static const char *const keys[] = {"kind",       "series",       "file",     "url",
                                       "token_file", "token_header", "interval", "timeout",
                                       "retry",      "zone",         NULL};
    static const char *const kinds[] = {"csv", "uk_api", "electricitymaps", NULL};
    char p[256];
    int kind = 0, series = 0, rc;
    memset(s, 0, sizeof *s);
    s->interval_ns = 30 * 60 * WT_NS_PER_S;
    s->timeout_ns = 20 * WT_NS_PER_S;
    s->retry_ns = 30 * WT_NS_PER_S;
    snprintf(s->token_header, sizeof s->token_header, "auth-token");
    if ((rc = wt_y_keys(g, n, path, keys)) != 0)
        return rc;
    if (!n || n->kind != WT_YNODE_MAP)
        return wt_y_fail(g, n, path, "expected a mapping with kind and file or url");
    if ((rc = wt_y_enum(g, n, path, "kind", kinds, &kind)) != 0)
        return rc;
    if (!wt_y_get(n, "kind"))
        return wt_y_fail(g, n, wt_y_path(p, sizeof p, path, "kind"),
                         "required (csv, uk_api or electricitymaps)");
    s->format = (enum wt_carbon_format)(kind + 1);
    if ((rc = wt_y_enum(g, n, path, "series", series_names, &series)) != 0)
        return rc;
    s->series = (enum wt_carbon_series)series;
    if ((rc = wt_y_string(g, n, path, "file", false, s->file, sizeof s->file)) ||
        (rc = wt_y_string(g, n, path, "url", false, s->url, sizeof s->url)) ||
        (rc = wt_y_string(g, n, path, "token_file", false, s->token_file, sizeof s->token_file)) ||
        (rc = wt_y_string(g, n, path, "token_header", false, s->token_header,
                          sizeof s->token_header)) ||
        (rc = wt_y_duration_in(g, n, path, "interval", false, 60 * WT_Y_S, 86400 * WT_Y_S,
                               "carbon intensity changes every 5 to 60 minutes; fetching it more "
                               "often than every minute only gets a source to rate-limit you",
                               &s->interval_ns)) ||
        (rc = wt_y_duration_in(g, n, path, "timeout", false, 100 * WT_Y_MS,
                               WT_CARBON_MAX_TIMEOUT_NS, WT_Y_WHY_NET_TIMEOUT, &s->timeout_ns)) ||
        (rc = wt_y_duration_in(g, n, path, "retry", false, WT_Y_S, 86400 * WT_Y_S,
                               "retrying a failed source more often than every second hammers it",
                               &s->retry_ns)) ||
        (rc = parse_zone(g, n, path, "zone", s->zone)))
        return rc;
    for (const char *h = s->token_header; *h; h++) {
        if (!isalnum((unsigned char)*h) && *h != '-' && *h != '_')
            return wt_y_fail(g, wt_y_get(n, "token_header"),
                             wt_y_path(p, sizeof p, path, "token_header"),
                             "expected a header name of letters, digits, '-' or '_'");
    }
    if (!s->token_header[0])
        return wt_y_fail(g, wt_y_get(n, "token_header"),
                         wt_y_path(p, sizeof p, path, "token_header"), "expected a header name");
    if (!s->file[0] == !s->url[0])
        return wt_y_fail(g, n, path, "expected exactly one of file or url");
    if (s->url[0] && strncmp(s->url, "http://", 7) != 0 && strncmp(s->url, "https://", 8) != 0)
        return wt_y_fail(g, wt_y_get(n, "url"), wt_y_path(p, sizeof p, path, "url"),
                         "expected an http:// or https:// URL (got \"%s\")", s->url);
    /* Electricity Maps' replies name their zone; the others take carbon.zone. */
    if (!s->zone[0] && s->format != WT_CF_ELECTRICITYMAPS)
        memcpy(s->zone, cf->zone, sizeof s->zone); /* both WT_CARBON_ZONE_LEN */
    if (!s->zone[0] && s->format != WT_CF_ELECTRICITYMAPS)
        return wt_y_fail(g, n, path, "no zone: set zone here or carbon.zone");
    if (s->retry_ns > s->interval_ns)
        s->retry_ns = s->interval_ns;
    return 0;
}

int wt_carbon_conf_parse(const char *file, const struct wt_ynode *node, struct wt_carbon_conf *cf,
                         struct wt_err *err)
{
    static const char *const keys[] = {
        "zone", "static_gco2_per_kwh", "pue_assumed", "max_hole", "nodes", "sources", NULL};
    struct wt_yget g = {.file = file, .err = err};
    const char *path = "carbon";
    char p[256];
    int rc;
    wt_carbon_conf_defaults(cf);
    if (!node || wt_ynode_is_null(node))
        return 0;
    if ((rc = wt_y_keys(&g, node, path, keys)) != 0)
        return rc;
    if ((rc = parse_zone(&g, node, path, "zone", cf->zone)) != 0)
        return rc;
    if (wt_y_get(node, "static_gco2_per_kwh")) {
        if ((rc = wt_y_double(&g, node, path, "static_gco2_per_kwh", 0, 5000, &cf->static_g)))
            return rc;
        cf->has_static = true;
    }
    if ((rc = wt_y_double(&g, node, path, "pue_assumed", 1.0, 5.0, &cf->pue_assumed)) ||
        (rc = wt_y_duration(&g, node, path, "max_hole", true, &cf->max_hole_ns)))
        return rc;
    const struct wt_ynode *nodes = wt_y_get(node, "nodes");
    if (nodes && !wt_ynode_is_null(nodes)) {
        wt_y_path(p, sizeof p, path, "nodes");
        if (nodes->kind != WT_YNODE_MAP)
            return wt_y_fail(&g, nodes, p, "expected a mapping of node name to zone");
        for (size_t i = 0; i < nodes->n; i++) {
            const struct wt_ynode *e = nodes->child[i];
            char q[256];
            wt_y_path(q, sizeof q, p, e->key);
            if (cf->nnodes == WT_CARBON_MAX_NODES)
                return wt_y_fail(&g, e, q, "at most %d nodes", WT_CARBON_MAX_NODES);
            if (e->kind != WT_YNODE_SCALAR || !zone_ok(e->value))
                return wt_y_fail(&g, e, q, "expected a zone name");
            if (!e->key[0] || strlen(e->key) >= sizeof cf->nodes[0].node)
                return wt_y_fail(&g, e, q, "expected a node name of 1..63 characters");
            snprintf(cf->nodes[cf->nnodes].node, sizeof cf->nodes[0].node, "%s", e->key);
            snprintf(cf->nodes[cf->nnodes].zone, sizeof cf->nodes[0].zone, "%s", e->value);
            cf->nnodes++;
        }
    }
    const struct wt_ynode *src = wt_y_get(node, "sources");
    wt_y_path(p, sizeof p, path, "sources");
    if ((rc = wt_y_seq(&g, src, p)) != 0)
        return rc;
    for (size_t i = 0; src && src->kind == WT_YNODE_SEQ && i < src->n; i++) {
        char q[256];
        wt_y_index(q, sizeof q, p, i);
        if (cf->nsrc == WT_CARBON_MAX_SOURCES)
            return wt_y_fail(&g, src->child[i], q, "at most %d sources", WT_CARBON_MAX_SOURCES);
        if ((rc = parse_source(&g, src->child[i], q, cf, &cf->src[cf->nsrc])) != 0)
            return rc;
        cf->nsrc++;
    }
    return 0;
}

int wt_carbon_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_carbon_conf *cf = malloc(sizeof *cf);
    if (!cf)
        return -ENOMEM;
    int rc = wt_carbon_conf_parse(file, node, cf, err);
    free(cf);
    return rc;
}

int wt_carbon_conf_from(const struct wt_config *cfg, struct wt_carbon_conf *cf, struct wt_err *err)
{
    int rc = wt_carbon_conf_parse(wt_config_file(cfg), wt_config_section(cfg, "carbon"), cf, err);
    cf->cfg = cfg;
    return rc;
}

const char *wt_carbon_zone_of(const struct wt_carbon_conf *cf, const char *node)
{
    for (size_t i = 0; node && *node && i < cf->nnodes; i++) {
        if (strcmp(cf->nodes[i].node, node) == 0)
            return cf->nodes[i].zone;
    }
    return cf->zone;
}

/* ---- parsing ---- */

void wt_carbon_batch_free(struct wt_carbon_batch *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int batch_add(struct wt_carbon_batch *b, int64_t from, int64_t to, double v,
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

/* Trims spaces (and one pair of double quotes) in place. */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s[n - 1] = '\0';
        s++;
    }
    return s;
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

static size_t split_csv(char *line, char **cols)
{
    size_t n = 0;
    char *s = line;
    for (;;) {
        char *c = strchr(s, ',');
        if (n == MAX_COLS)
            return MAX_COLS + 1;
        if (c)
            *c = '\0';
        cols[n++] = trim(s);
        if (!c)
            break;
        s = c + 1;
    }
    return n;
}

static int parse_csv(struct bad *bd, char *buf, enum wt_carbon_series series, const char *zone,
                     struct wt_carbon_batch *out)
{
    char *save = NULL, *cols[MAX_COLS + 1];
    int tcol = -1, tocol = -1, vcol = -1, kcol = -1, fcol = -1, acol = -1;
    size_t ncols = 0, lineno = 0;
    bool header = false;
    int rc;
    /* strtok_r would merge empty lines and lose their numbers: walk line by line. */
    for (char *line = buf; line; line = save) {
        char *nl = strchr(line, '\n');
        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        lineno++;
        char *l = trim(line);
        if (!*l || *l == '#')
            continue;
        size_t n = split_csv(l, cols);
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
                return 0;
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
            if ((rc = batch_add(out, t, to, v[k], vals[k].kind, zone)) != 0)
                return rc;
        }
        if (ok && !any)
            bad_line(bd, lineno, "no value");
    }
    if (!header)
        bad_line(bd, lineno ? lineno : 1, "empty: expected a header and rows");
    return 0;
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
        else if ((hf && (rc = batch_add(out, from, to, f, WT_CK_FORECAST, zone)) != 0) ||
                 (ha && (rc = batch_add(out, from, to, a, WT_CK_ACTUAL, zone)) != 0))
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
        else if (z && !zone_ok(z))
            bad_line(bd, line, "%s[%zu].zone: expected a zone name", key, i);
        else if (!z && (!zone || !*zone))
            bad_line(bd, line, "%s[%zu]: no zone (give --zone or the reply's \"zone\")", key, i);
        else if (has) {
            bool est = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "isEstimated"));
            rc = batch_add(out, t, 0, v, forecast || est ? WT_CK_FORECAST : WT_CK_ACTUAL,
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
    if (z && !zone_ok(z)) {
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
        char *copy = malloc(len + 1);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, buf, len);
        copy[len] = '\0';
        if (strlen(copy) != len)
            bad_line(&bd, line_at(buf, len, strlen(copy)), "a NUL byte: not a text file");
        else
            rc = parse_csv(&bd, copy, series, zone, out);
        free(copy);
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

/* ---- the table ---- */

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS carbon_points(series TEXT NOT NULL, zone TEXT NOT NULL,"
    " kind INTEGER NOT NULL, from_ns INTEGER NOT NULL, to_ns INTEGER NOT NULL,"
    " value REAL NOT NULL, source TEXT NOT NULL, stored_ns INTEGER NOT NULL,"
    " PRIMARY KEY(series, zone, kind, from_ns)) WITHOUT ROWID;";

int wt_carbon_tables(sqlite3 *db)
{
    char *msg = NULL;
    if (sqlite3_exec(db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        wt_warn("carbon", "cannot create the carbon table: %s", msg ? msg : "?");
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

int wt_carbon_store(sqlite3 *db, enum wt_carbon_series series, const struct wt_carbon_batch *b,
                    const char *source, int64_t now_ns, struct wt_err *err)
{
    sqlite3_stmt *s = NULL;
    int rc = 0;
    if (wt_carbon_tables(db) != 0)
        return wt_err_set(err, "cannot create the carbon table: %s", sqlite3_errmsg(db)), -EIO;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        wt_err_set(err, "cannot begin a transaction: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO carbon_points(series, zone, kind, from_ns, "
                           "to_ns, value, source, stored_ns) VALUES(?,?,?,?,?,?,?,?)",
                           -1, &s, NULL) != SQLITE_OK) {
        rc = -EIO;
        goto done;
    }
    for (size_t i = 0; i < b->n && !rc; i++) {
        const struct wt_carbon_point *p = &b->p[i];
        sqlite3_bind_text(s, 1, wt_carbon_series_name(series), -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, p->zone, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 3, p->kind);
        sqlite3_bind_int64(s, 4, p->from_ns);
        sqlite3_bind_int64(s, 5, p->to_ns);
        sqlite3_bind_double(s, 6, p->value);
        sqlite3_bind_text(s, 7, source, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 8, now_ns);
        if (sqlite3_step(s) != SQLITE_DONE)
            rc = -EIO;
        sqlite3_reset(s);
    }
done:
    if (rc)
        wt_err_set(err, "cannot store the carbon series: %s; nothing stored", sqlite3_errmsg(db));
    sqlite3_finalize(s);
    if (sqlite3_exec(db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK && !rc) {
        wt_err_set(err, "cannot commit: %s", sqlite3_errmsg(db));
        (void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        rc = -EIO;
    }
    return rc;
}

static int read_file(const char *path, char **buf, size_t *len, struct wt_err *err)
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

int wt_carbon_load_file(sqlite3 *db, const char *path, enum wt_carbon_format fmt,
                        enum wt_carbon_series series, const char *zone, FILE *report,
                        size_t *stored, struct wt_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    struct wt_carbon_batch b = {0};
    int rc = read_file(path, &buf, &len, err);
    *stored = 0;
    if (rc)
        return rc;
    rc = wt_carbon_parse(path, buf, len, fmt, series, zone, report, &b, err);
    free(buf);
    if (rc)
        return rc;
    rc = wt_carbon_store(db, series, &b, path, wt_now_real_ns(), err);
    if (rc == 0)
        *stored = b.n;
    wt_carbon_batch_free(&b);
    return rc;
}

/* ---- the step function ---- */

struct steps {
    struct wt_carbon_step *s;
    size_t n, cap;
};

static int push(struct steps *st, int64_t a, int64_t b, double v, enum wt_carbon_src src)
{
    if (b <= a)
        return 0;
    if (st->n && st->s[st->n - 1].to_ns == a && st->s[st->n - 1].value == v &&
        st->s[st->n - 1].src == src) {
        st->s[st->n - 1].to_ns = b;
        return 0;
    }
    if (st->n == st->cap) {
        size_t nc = st->cap ? 2 * st->cap : 32;
        struct wt_carbon_step *ns = realloc(st->s, nc * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        st->s = ns;
        st->cap = nc;
    }
    st->s[st->n++] = (struct wt_carbon_step){a, b, v, src};
    return 0;
}

static int steps_of(const struct wt_carbon_point *p, size_t n, const struct wt_carbon_conf *cf,
                    bool forecast_first, int64_t a, int64_t b, struct wt_carbon_step **out,
                    size_t *nout);

/* Index of the last point of p[0..n) (sorted by from) starting at or before t, or -1. */
static ptrdiff_t last_at(const struct wt_carbon_point *p, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].from_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static int fill_hole(struct steps *st, const struct wt_carbon_point *all, size_t n,
                     const struct wt_carbon_conf *cf, int64_t h0, int64_t h1)
{
    const struct wt_carbon_point *prev = NULL, *next = NULL;
    int64_t max_hole = cf ? cf->max_hole_ns : 6 * HOUR_NS;
    int rc;
    for (size_t i = 0; i < n; i++) {
        const struct wt_carbon_point *p = &all[i];
        if (p->to_ns <= h0 &&
            (!prev || p->to_ns > prev->to_ns || (p->to_ns == prev->to_ns && p->kind < prev->kind)))
            prev = p;
        if (p->from_ns >= h1 && (!next || p->from_ns < next->from_ns ||
                                 (p->from_ns == next->from_ns && p->kind < next->kind)))
            next = p;
    }
    if (prev) {
        int64_t e = prev->to_ns + max_hole < h1 ? prev->to_ns + max_hole : h1;
        if (e > h0) {
            if ((rc = push(st, h0, e, prev->value, WT_CSRC_FILLED)) != 0)
                return rc;
            h0 = e;
        }
    }
    int64_t ns = h1;
    if (next && next->from_ns - max_hole < h1)
        ns = next->from_ns - max_hole > h0 ? next->from_ns - max_hole : h0;
    if (ns > h0) {
        if (cf && cf->has_static)
            rc = push(st, h0, ns, cf->static_g, WT_CSRC_STATIC);
        else if (prev || next)
            rc = push(st, h0, ns, prev ? prev->value : next->value, WT_CSRC_FILLED);
        else
            rc = push(st, h0, ns, 0, WT_CSRC_NONE);
        if (rc)
            return rc;
    }
    if (next && ns < h1)
        return push(st, ns, h1, next->value, WT_CSRC_FILLED);
    return 0;
}

int wt_carbon_steps_of(const struct wt_carbon_point *p, size_t n, const struct wt_carbon_conf *cf,
                       int64_t a, int64_t b, struct wt_carbon_step **out, size_t *nout)
{
    return steps_of(p, n, cf, false, a, b, out, nout);
}

static int steps_of(const struct wt_carbon_point *p, size_t n, const struct wt_carbon_conf *cf,
                    bool forecast_first, int64_t a, int64_t b, struct wt_carbon_step **out,
                    size_t *nout)
{
    struct steps st = {0};
    struct wt_carbon_point *A = NULL, *F = NULL;
    size_t na = 0, nf = 0;
    int rc = 0;
    *out = NULL;
    *nout = 0;
    if (a >= b)
        return 0;
    A = malloc((n + 1) * sizeof *A);
    F = malloc((n + 1) * sizeof *F);
    if (!A || !F) {
        rc = -ENOMEM;
        goto done;
    }
    /* A: the kind that wins (actuals), F: the other; swapped for a forecast-first view. */
    enum wt_carbon_src sa = WT_CSRC_ACTUAL, sf = WT_CSRC_FORECAST;
    if (forecast_first) {
        sa = WT_CSRC_FORECAST;
        sf = WT_CSRC_ACTUAL;
    }
    for (size_t i = 0; i < n; i++) {
        if ((p[i].kind == WT_CK_ACTUAL) != forecast_first)
            A[na++] = p[i];
        else
            F[nf++] = p[i];
    }
    for (int64_t t = a; t < b && !rc;) {
        ptrdiff_t ia = last_at(A, na, t), jf = last_at(F, nf, t);
        int64_t next_a = (size_t)(ia + 1) < na ? A[ia + 1].from_ns : INT64_MAX;
        int64_t next_f = (size_t)(jf + 1) < nf ? F[jf + 1].from_ns : INT64_MAX;
        int64_t e = b;
        if (ia >= 0 && A[ia].to_ns > t) {
            e = A[ia].to_ns < e ? A[ia].to_ns : e;
            e = next_a < e ? next_a : e;
            rc = push(&st, t, e, A[ia].value, sa);
        } else if (jf >= 0 && F[jf].to_ns > t) {
            e = F[jf].to_ns < e ? F[jf].to_ns : e;
            e = next_a < e ? next_a : e;
            e = next_f < e ? next_f : e;
            rc = push(&st, t, e, F[jf].value, sf);
        } else {
            e = next_a < e ? next_a : e;
            e = next_f < e ? next_f : e;
            rc = fill_hole(&st, p, n, cf, t, e);
        }
        t = e;
    }
done:
    free(A);
    free(F);
    if (rc) {
        free(st.s);
        return rc;
    }
    *out = st.s;
    *nout = st.n;
    return 0;
}

/* Points of a zone's series overlapping [a, b], plus the nearest one on each side. */
static int load_points(sqlite3 *db, enum wt_carbon_series series, const char *zone, int64_t a,
                       int64_t b, struct wt_carbon_batch *out)
{
    static const char *const sql[] = {
        "SELECT from_ns, to_ns, value, kind FROM carbon_points WHERE series=?1 AND zone=?2 AND "
        "to_ns > ?3 AND from_ns < ?4 ORDER BY from_ns, kind",
        "SELECT from_ns, to_ns, value, kind FROM carbon_points WHERE series=?1 AND zone=?2 AND "
        "to_ns <= ?3 ORDER BY to_ns DESC, kind LIMIT 1",
        "SELECT from_ns, to_ns, value, kind FROM carbon_points WHERE series=?1 AND zone=?2 AND "
        "from_ns >= ?4 ORDER BY from_ns, kind LIMIT 1",
    };
    memset(out, 0, sizeof *out);
    for (size_t q = 0; q < 3; q++) {
        sqlite3_stmt *s = NULL;
        int step, rc = 0;
        int prep = sqlite3_prepare_v2(db, sql[q], -1, &s, NULL);
        if (prep != SQLITE_OK) {
            /* No table yet: nothing was ever loaded. */
            if (strstr(sqlite3_errmsg(db), "no such table"))
                return 0;
            wt_carbon_batch_free(out);
            return -EIO;
        }
        sqlite3_bind_text(s, 1, wt_carbon_series_name(series), -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, zone, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, a);
        sqlite3_bind_int64(s, 4, b);
        while ((step = sqlite3_step(s)) == SQLITE_ROW && !rc) {
            rc = batch_add(out, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                           sqlite3_column_double(s, 2),
                           (enum wt_carbon_kind)sqlite3_column_int(s, 3), zone);
        }
        if (!rc && step != SQLITE_DONE && step != SQLITE_ROW)
            rc = -EIO;
        sqlite3_finalize(s);
        if (rc) {
            wt_carbon_batch_free(out);
            return rc == -E2BIG ? -ENOMEM : rc;
        }
    }
    /* Sorted by from (the side points are outside the window). */
    for (size_t i = 1; i < out->n; i++) {
        struct wt_carbon_point x = out->p[i];
        size_t k = i;
        while (k > 0 && out->p[k - 1].from_ns > x.from_ns) {
            out->p[k] = out->p[k - 1];
            k--;
        }
        out->p[k] = x;
    }
    return 0;
}

int wt_carbon_steps(sqlite3 *db, const struct wt_carbon_conf *cf, enum wt_carbon_series series,
                    const char *zone, int64_t a, int64_t b, struct wt_carbon_step **steps,
                    size_t *n)
{
    return wt_carbon_steps_ex(db, cf, series, zone, false, a, b, steps, n);
}

int wt_carbon_steps_ex(sqlite3 *db, const struct wt_carbon_conf *cf, enum wt_carbon_series series,
                       const char *zone, bool forecast_first, int64_t a, int64_t b,
                       struct wt_carbon_step **steps, size_t *n)
{
    struct wt_carbon_batch pts;
    *steps = NULL;
    *n = 0;
    if (a >= b)
        return 0;
    int rc = load_points(db, series, zone ? zone : "", a, b, &pts);
    if (rc)
        return rc;
    rc = steps_of(pts.p, pts.n, series == WT_CS_INTENSITY ? cf : NULL, forecast_first, a, b, steps,
                  n);
    wt_carbon_batch_free(&pts);
    return rc;
}

/* ---- emissions ---- */

static bool cpu_in_total(const char *labels)
{
    char d[32];
    if (wt_labels_get(labels, "domain", d, sizeof d) != 0)
        return true;
    return strcmp(d, "core") != 0 && strcmp(d, "uncore") != 0 && strcmp(d, "psys") != 0;
}

/* The IT energy (GPUs + CPU packages/DRAM) of [a, b]: this node's, or every node's in st. */
static int it_energy(struct wt_store *st, int64_t a, int64_t b, bool every_node, double *joules)
{
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    *joules = 0;
    if (b <= a)
        return 0;
    if (wt_store_energy(st, a, b, 0, &rows, &n, &err) != 0)
        return -EIO;
    for (size_t i = 0; i < n; i++) {
        const struct wt_energy_row *r = &rows[i];
        if (!r->chosen || (r->s.node[0] && !every_node))
            continue;
        if (wt_metric_is_gpu_energy(r->s.metric) ||
            (strcmp(r->s.metric, "wattage_cpu_energy_joules_total") == 0 &&
             cpu_in_total(r->s.labels)))
            *joules += r->energy_j;
    }
    free(rows);
    return 0;
}

int wt_carbon_site_energy(struct wt_store *st, int64_t a, int64_t b, double *joules)
{
    return it_energy(st, a, b, false, joules);
}

void wt_carbon_pue(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t a, int64_t b,
                   double *pue, bool *measured)
{
    *pue = cf->pue_assumed;
    *measured = false;
#ifdef WT_KPI_H
    /* Weak: the facility layer may not be linked into every program that links this one. */
    double m = 0;
    bool meas = false;
    struct wt_err err = {{0}};
    /* The facility layer's answer: measured, or facility.pue_assumed when that is set, so one
     * assumed PUE serves every figure; carbon.pue_assumed only when it has neither. */
    if (wt_kpi_pue && st && cf->cfg && b > a &&
        wt_kpi_pue(st, cf->cfg, a, b, &m, &meas, &err) == 0 && isfinite(m) && m >= 1.0) {
        *pue = m;
        *measured = meas;
    }
#else
    (void)st;
    (void)a;
    (void)b;
#endif
}

/* kWh of renewable supply over [a, b]: each point's value spread evenly over its period. */
static double supply_kwh(const struct wt_carbon_batch *r, int64_t a, int64_t b)
{
    double s = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct wt_carbon_point *p = &r->p[i];
        int64_t lo = p->from_ns > a ? p->from_ns : a, hi = p->to_ns < b ? p->to_ns : b;
        if (hi > lo && p->kind == WT_CK_ACTUAL)
            s += p->value * (double)(hi - lo) / (double)(p->to_ns - p->from_ns);
    }
    return s;
}

int wt_carbon_emissions(sqlite3 *db, struct wt_store *st, const struct wt_carbon_conf *cf,
                        const char *zone, int64_t a, int64_t b, wt_carbon_energy_fn energy,
                        void *ctx, double pue, bool pue_measured, struct wt_carbon_result *out)
{
    struct wt_carbon_step *s = NULL;
    struct wt_carbon_batch ren = {0};
    size_t n = 0;
    int rc;
    memset(out, 0, sizeof *out);
    snprintf(out->zone, sizeof out->zone, "%s", zone ? zone : "");
    out->pue = pue > 0 ? pue : cf->pue_assumed;
    out->pue_measured = pue > 0 && pue_measured;
    if (b <= a)
        return 0;
    if (zone && *zone)
        rc = wt_carbon_steps(db, cf, WT_CS_INTENSITY, zone, a, b, &s, &n);
    else
        rc = wt_carbon_steps_of(NULL, 0, cf, a, b, &s, &n);
    if (rc)
        return rc;
    if (st && zone && *zone) {
        if ((rc = load_points(db, WT_CS_RENEWABLE, zone, a, b, &ren)) != 0)
            goto done;
        /* Only the points inside the window count; the side ones say a series exists. */
        out->has_market = ren.n > 0;
    }
    out->known = true;
    for (size_t i = 0; i < n; i++) {
        double j = 0;
        if ((rc = energy(ctx, s[i].from_ns, s[i].to_ns, &j)) != 0)
            goto done;
        out->pieces++;
        out->it_j += j;
        out->by_src_j[s[i].src] += j;
        if (s[i].src == WT_CSRC_NONE) {
            out->known = false; /* no series and no static value */
            continue;
        }
        double g = j / 3.6e6 * out->pue * s[i].value;
        out->g += g;
        if (out->has_market) {
            double site = 0, cover = 0;
            if ((rc = wt_carbon_site_energy(st, s[i].from_ns, s[i].to_ns, &site)) != 0)
                goto done;
            double site_kwh = site / 3.6e6 * out->pue;
            double sup = supply_kwh(&ren, s[i].from_ns, s[i].to_ns);
            if (site_kwh > 0)
                cover = sup >= site_kwh ? 1.0 : sup / site_kwh;
            out->g_market += g * (1.0 - cover);
        }
    }
    out->facility_j = out->it_j * out->pue;
done:
    free(s);
    wt_carbon_batch_free(&ren);
    return rc;
}

static int site_energy_fn(void *ctx, int64_t a, int64_t b, double *joules)
{
    return wt_carbon_site_energy(ctx, a, b, joules);
}

int wt_carbon_cue(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t a, int64_t b,
                  struct wt_carbon_cue *out)
{
    double pue;
    bool measured;
    memset(out, 0, sizeof *out);
    out->cue = NAN;
    wt_carbon_pue(st, cf, a, b, &pue, &measured);
    if (wt_carbon_tables(wt_store_db(st)) != 0)
        return -EIO;
    int rc = wt_carbon_emissions(wt_store_db(st), st, cf, cf->zone, a, b, site_energy_fn, st, pue,
                                 measured, &out->r);
    if (rc)
        return rc;
    if (out->r.known && out->r.it_j > 0)
        out->cue = (out->r.g / 1000.0) / (out->r.it_j / 3.6e6);
    return 0;
}

/* The CUE's weights: the IT energy of every node the store holds, imported and remote ones too. */
static int all_nodes_energy_fn(void *ctx, int64_t a, int64_t b, double *joules)
{
    return it_energy(ctx, a, b, true, joules);
}

static int time_energy_fn(void *ctx, int64_t a, int64_t b, double *joules)
{
    (void)ctx;
    *joules = (double)(b - a) / 1e9; /* 1 W: weights by time */
    return 0;
}

int wt_carbon_kpi_row(struct wt_store *st, const struct wt_config *cfg, struct wt_kpi_report *r)
{
#ifdef WT_KPI_H
    struct wt_carbon_conf *cf = malloc(sizeof *cf);
    struct wt_carbon_result res;
    struct wt_err err = {{0}};
    int rc;
    struct wt_kpi_row *row = wt_kpi_add_row(r, "cue", "CUE (kgCO2e/kWh)", "kgCO2e/kWh");
    if (!row) {
        free(cf);
        return -ENOSPC;
    }
    if (!cf) {
        snprintf(row->why, sizeof row->why, "out of memory");
        return -ENOMEM;
    }
    if ((rc = wt_carbon_conf_from(cfg, cf, &err)) != 0) {
        snprintf(row->why, sizeof row->why, "%.120s", err.msg);
        free(cf);
        return rc;
    }
    const struct wt_kpi_row *pr = wt_kpi_row(r, "pue");
    double pue = cf->pue_assumed;
    bool pue_measured = false;
    if (pr && pr->available) {
        pue = pr->value;
        pue_measured = pr->measured;
    }
    rc = wt_carbon_tables(wt_store_db(st));
    if (rc == 0)
        rc = wt_carbon_emissions(wt_store_db(st), NULL, cf, cf->zone, r->from_ns, r->to_ns,
                                 all_nodes_energy_fn, st, 1.0, false, &res);
    const char *weights = "IT energy (GPU and CPU sensors of every node)";
    if (rc == 0 && res.known && res.it_j <= 0) {
        weights = "time (no IT energy in the window)";
        rc = wt_carbon_emissions(wt_store_db(st), NULL, cf, cf->zone, r->from_ns, r->to_ns,
                                 time_energy_fn, NULL, 1.0, false, &res);
    }
    if (rc) {
        snprintf(row->why, sizeof row->why, "cannot read the carbon series or energy");
    } else if (!res.known || res.it_j <= 0) {
        snprintf(row->why, sizeof row->why,
                 "no carbon-intensity series for zone \"%.24s\" and no "
                 "carbon.static_gco2_per_kwh",
                 cf->zone);
    } else {
        double mean = res.g / (res.it_j / 3.6e6), act = res.by_src_j[WT_CSRC_ACTUAL] / res.it_j;
        bool all_actual = act >= 1 - 1e-9;
        row->available = true;
        row->value = pue * mean / 1000.0;
        row->measured = pue_measured && all_actual;
        if (pr && pr->available)
            wt_kpi_row_input(row, "pue", pue_measured, "the PUE row: %.4g", pue);
        else
            wt_kpi_row_input(row, "pue", false, "carbon.pue_assumed = %g", pue);
        if (res.by_src_j[WT_CSRC_STATIC] >= res.it_j * (1 - 1e-9))
            wt_kpi_row_input(row, "carbon_intensity", false,
                             "carbon.static_gco2_per_kwh = %g g/kWh", cf->static_g);
        else
            wt_kpi_row_input(row, "carbon_intensity", all_actual,
                             "zone %s: mean %.1f g/kWh; %.0f%% actual, %.0f%% forecast, %.0f%% "
                             "filled/static",
                             cf->zone, mean, 100 * act,
                             100 * res.by_src_j[WT_CSRC_FORECAST] / res.it_j,
                             100 * (1 - act - res.by_src_j[WT_CSRC_FORECAST] / res.it_j));
        wt_kpi_row_input(row, "weights", true, "%s", weights);
    }
    free(cf);
    return rc;
#else
    (void)st;
    (void)cfg;
    (void)r;
    return -ENOSYS;
#endif
}

cJSON *wt_carbon_result_json(const struct wt_carbon_result *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "zone", r->zone);
    cJSON_AddBoolToObject(o, "known", r->known);
    if (r->known) {
        cJSON_AddNumberToObject(o, "gco2e", r->g);
        cJSON_AddNumberToObject(o, "kgco2e", r->g / 1000.0);
        cJSON_AddNumberToObject(o, "intensity_mean_g_per_kwh",
                                r->facility_j > 0 ? r->g / (r->facility_j / 3.6e6) : 0);
    } else {
        cJSON_AddNullToObject(o, "gco2e");
    }
    if (r->has_market)
        cJSON_AddNumberToObject(o, "gco2e_market", r->g_market);
    cJSON_AddNumberToObject(o, "it_energy_kwh", r->it_j / 3.6e6);
    cJSON_AddNumberToObject(o, "facility_energy_kwh", r->facility_j / 3.6e6);
    cJSON_AddNumberToObject(o, "pue", r->pue);
    cJSON_AddStringToObject(o, "pue_source", r->pue_measured ? "measured" : "assumed");
    /* What the intensity was: measured when all the energy met actual values. */
    const char *isrc = "none";
    double tot = r->it_j, act = r->by_src_j[WT_CSRC_ACTUAL];
    if (tot > 0 && act >= tot * (1 - 1e-9))
        isrc = "measured";
    else if (tot > 0 && r->by_src_j[WT_CSRC_STATIC] >= tot * (1 - 1e-9))
        isrc = "assumed";
    else if (tot > 0)
        isrc = act > 0 ? "mixed" : r->by_src_j[WT_CSRC_FORECAST] > 0 ? "forecast" : "filled";
    cJSON_AddStringToObject(o, "intensity_source", isrc);
    cJSON *by = cJSON_AddObjectToObject(o, "energy_kwh_by_source");
    for (int i = 0; by && i < WT_CSRC_COUNT; i++) {
        if (r->by_src_j[i] != 0)
            cJSON_AddNumberToObject(by, wt_carbon_src_name((enum wt_carbon_src)i),
                                    r->by_src_j[i] / 3.6e6);
    }
    return o;
}

/* ---- fetching ---- */

struct body {
    char *p;
    size_t n;
    bool too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct body *b = ud;
    size_t len = size * nmemb;
    if (b->n + len > MAX_BODY) {
        b->too_big = true;
        return 0;
    }
    char *np = realloc(b->p, b->n + len + 1);
    if (!np)
        return 0;
    memcpy(np + b->n, ptr, len);
    b->p = np;
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    const volatile int *abort = ud;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return abort && *abort ? 1 : 0;
}

int wt_carbon_fetch(const char *url, const char *token_header, const char *token,
                    int64_t timeout_ns, const volatile int *abort, char **body, size_t *len,
                    char *why, size_t whyn)
{
    struct body b = {0};
    struct curl_slist *hdr = NULL;
    char line[700];
    long status = 0;
    int rc = 0;
    *body = NULL;
    *len = 0;
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, whyn, "curl_easy_init failed");
        return -ENOMEM;
    }
    long ms = (long)(timeout_ns / WT_NS_PER_MS);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 1L);
    /* A token is never sent on to wherever a redirect points (curl would pass a custom header
     * to another host): with a token, a redirect is an error that says where to point the url. */
    bool with_token = token && *token;
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, with_token ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)abort);
    hdr = curl_slist_append(hdr, "Accept: application/json, text/csv");
    if (token && *token) {
        snprintf(line, sizeof line, "%s: %s",
                 token_header && *token_header ? token_header : "auth-token", token);
        hdr = curl_slist_append(hdr, line);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    CURLcode cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(why, whyn, "timed out after %ld ms", ms);
        rc = -ETIMEDOUT;
    } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(why, whyn, "stopped");
        rc = -ECANCELED;
    } else if (cc != CURLE_OK) {
        snprintf(why, whyn, "%s", b.too_big ? "reply larger than 16 MiB" : curl_easy_strerror(cc));
        rc = -EIO;
    } else if (with_token && status >= 300 && status < 400) {
        char *to = NULL;
        curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &to);
        snprintf(why, whyn,
                 "HTTP status %ld: redirected to %.200s; the token is not sent there, set the url "
                 "to it if it is right",
                 status, to ? to : "(no location)");
        rc = -EIO;
    } else if (status >= 400 || status < 200) {
        snprintf(why, whyn, "HTTP status %ld", status);
        rc = -EIO;
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    if (rc) {
        free(b.p);
        return rc;
    }
    if (!b.p && !(b.p = calloc(1, 1)))
        return -ENOMEM;
    *body = b.p;
    *len = b.n;
    return 0;
}

void wt_carbon_url_expand(const char *url, int64_t now_ns, char *out, size_t n)
{
    char now[24];
    time_t t = (time_t)(now_ns / WT_NS_PER_S);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%MZ", &tm);
    size_t o = 0;
    for (const char *p = url; *p && o + 1 < n;) {
        if (strncmp(p, "{now}", 5) == 0) {
            size_t l = strlen(now);
            if (o + l + 1 > n)
                break;
            memcpy(out + o, now, l);
            o += l;
            p += 5;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

/* ---- the daemon part ---- */

struct src_state {
    int64_t due;     /* CLOCK_MONOTONIC */
    int64_t backoff; /* current retry wait; 0 after a success */
    int64_t mtime_ns;
    struct wt_carbon_fetch_stats stats;
    uint64_t fails_logged;
};

struct zone_now {
    char zone[WT_CARBON_ZONE_LEN];
    double value;
    bool known;
};

struct wt_carbon {
    struct wt_carbon_conf cf;
    struct wt_store *st;
    sqlite3 *db;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    volatile int stop;
    struct src_state ss[WT_CARBON_MAX_SOURCES];
    struct zone_now zones[WT_CARBON_MAX_SOURCES + WT_CARBON_MAX_NODES + 1];
    size_t nzones;
    struct wt_hub *hub;
    int slot; /* the hub slot "carbon" (-1: none) */
    struct wt_batch batch;
    struct wt_config *own_cfg; /* wt_carbon_attach's copy, freed at close */
};

const struct wt_carbon_conf *wt_carbon_config(const struct wt_carbon *c)
{
    return &c->cf;
}

static void add_zone(struct wt_carbon *c, const char *z)
{
    if (!z || !*z)
        return;
    for (size_t i = 0; i < c->nzones; i++) {
        if (strcmp(c->zones[i].zone, z) == 0)
            return;
    }
    if (c->nzones == sizeof c->zones / sizeof c->zones[0])
        return;
    snprintf(c->zones[c->nzones].zone, sizeof c->zones[0].zone, "%s", z);
    c->nzones++;
}

static void read_token(const char *path, char *out, size_t n)
{
    struct stat sb;
    struct wt_err err = {{0}};
    out[0] = '\0';
    if (!path || !*path)
        return;
    /* A secret: refused when group or others may read it, as the daemon's own token file. */
    if (stat(path, &sb) == 0 &&
        wt_http_check_secret_mode("carbon token_file", path, sb.st_mode, &err) != 0) {
        wt_warn("carbon", "%s", err.msg);
        return;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        wt_warn("carbon", "token_file %s: %s", path, strerror(errno));
        return;
    }
    if (fgets(out, (int)n, f)) {
        size_t l = strlen(out);
        while (l && isspace((unsigned char)out[l - 1]))
            out[--l] = '\0';
    }
    fclose(f);
}

/* One attempt at source i: 0 success (or nothing new), else a negative errno. */
static int run_source(struct wt_carbon *c, size_t i, char *why, size_t whyn)
{
    const struct wt_carbon_source *s = &c->cf.src[i];
    struct src_state *ss = &c->ss[i];
    struct wt_err err = {{0}};
    struct wt_carbon_batch b = {0};
    char *buf = NULL;
    size_t len = 0;
    int rc;
    const char *name = s->url[0] ? s->url : s->file;
    if (s->file[0]) {
        struct stat sb;
        if (stat(s->file, &sb) != 0) {
            snprintf(why, whyn, "%s: %s", s->file, strerror(errno));
            return -ENOENT;
        }
        int64_t m = (int64_t)sb.st_mtim.tv_sec * WT_NS_PER_S + sb.st_mtim.tv_nsec;
        if (m == ss->mtime_ns)
            return 0;
        if ((rc = read_file(s->file, &buf, &len, &err)) != 0) {
            snprintf(why, whyn, "%s", err.msg);
            return rc;
        }
        ss->mtime_ns = m;
    } else {
        char token[512], url[sizeof s->url + 64];
        read_token(s->token_file, token, sizeof token);
        wt_carbon_url_expand(s->url, wt_now_real_ns(), url, sizeof url);
        rc = wt_carbon_fetch(url, s->token_header, token, s->timeout_ns, &c->stop, &buf, &len, why,
                             whyn);
        if (rc)
            return rc;
    }
    rc = wt_carbon_parse(name, buf, len, s->format, s->series, s->zone, NULL, &b, &err);
    free(buf);
    if (rc == 0)
        rc = wt_carbon_store(c->db, s->series, &b, name, wt_now_real_ns(), &err);
    if (rc) {
        snprintf(why, whyn, "%s", err.msg);
        if (s->file[0])
            ss->mtime_ns = 0; /* try again */
    } else {
        wt_info("carbon", "loaded %zu %s values from %s", b.n, wt_carbon_series_name(s->series),
                name);
        /* A reply may name its zone (Electricity Maps): the gauge shows it too. */
        pthread_mutex_lock(&c->mu);
        for (size_t k = 0; s->series == WT_CS_INTENSITY && k < b.n; k++)
            add_zone(c, b.p[k].zone);
        pthread_mutex_unlock(&c->mu);
    }
    wt_carbon_batch_free(&b);
    return rc;
}

/* The current value of every zone, for /metrics (c->mu not held: the thread's connection). */
static void refresh_zones(struct wt_carbon *c)
{
    int64_t now = wt_now_real_ns();
    for (size_t i = 0; i < c->nzones; i++) {
        struct wt_carbon_step *s = NULL;
        size_t n = 0;
        bool known = false;
        double v = 0;
        if (wt_carbon_steps(c->db, &c->cf, WT_CS_INTENSITY, c->zones[i].zone, now, now + 1, &s,
                            &n) == 0 &&
            n && s[0].src != WT_CSRC_NONE) {
            known = true;
            v = s[0].value;
        }
        free(s);
        pthread_mutex_lock(&c->mu);
        c->zones[i].known = known;
        c->zones[i].value = v;
        pthread_mutex_unlock(&c->mu);
    }
    if (!c->hub || c->slot < 0)
        return;
    wt_batch_clear(&c->batch);
    for (size_t i = 0; i < c->nzones; i++) {
        char lab[WT_LABELS_LEN];
        if (c->zones[i].known && wt_labels(lab, sizeof lab, "zone", c->zones[i].zone, NULL) == 0 &&
            wt_batch_add(&c->batch, WT_M_GRID_CARBON_INTENSITY, lab, now, c->zones[i].value) != 0)
            break;
    }
    wt_hub_publish(c->hub, c->slot, &c->batch, true, 0, wt_now_mono_ns());
}

static void *fetch_thread(void *arg)
{
    struct wt_carbon *c = arg;
    int64_t next_refresh = 0;
    for (;;) {
        int64_t now = wt_now_mono_ns(), wake = now + CACHE_REFRESH_NS;
        for (size_t i = 0; i < c->cf.nsrc && !c->stop; i++) {
            struct src_state *ss = &c->ss[i];
            const struct wt_carbon_source *s = &c->cf.src[i];
            if (ss->due > now)
                continue;
            char why[WT_ERR_LEN];
            pthread_mutex_lock(&c->mu);
            ss->stats.attempts++;
            pthread_mutex_unlock(&c->mu);
            int rc = run_source(c, i, why, sizeof why);
            if (c->stop)
                break;
            now = wt_now_mono_ns();
            pthread_mutex_lock(&c->mu);
            if (rc == 0) {
                if (ss->stats.failures > ss->fails_logged)
                    wt_info("carbon", "%s: recovered after %llu failed attempts",
                            s->url[0] ? s->url : s->file,
                            (unsigned long long)(ss->stats.failures - ss->fails_logged));
                ss->fails_logged = ss->stats.failures;
                ss->stats.successes++;
                ss->backoff = 0;
                /* A file is watched more often than a URL is fetched. */
                ss->due = now + (s->file[0] && s->interval_ns > CACHE_REFRESH_NS ? CACHE_REFRESH_NS
                                                                                 : s->interval_ns);
            } else {
                ss->stats.failures++;
                ss->backoff = ss->backoff ? 2 * ss->backoff : s->retry_ns;
                if (ss->backoff > s->interval_ns)
                    ss->backoff = s->interval_ns;
                ss->due = now + ss->backoff;
                /* Rate-limited: the first failure, then every 10th. */
                if ((ss->stats.failures - ss->fails_logged) % 10 == 1)
                    wt_warn("carbon", "%s: %s; retry in %.3g s (failures=%llu)",
                            s->url[0] ? s->url : s->file, why, (double)ss->backoff / WT_NS_PER_S,
                            (unsigned long long)(ss->stats.failures - ss->fails_logged));
            }
            ss->stats.next_retry_ns = ss->backoff;
            pthread_mutex_unlock(&c->mu);
            next_refresh = 0;
        }
        if (c->stop)
            break;
        now = wt_now_mono_ns();
        if (now >= next_refresh) {
            refresh_zones(c);
            next_refresh = now + CACHE_REFRESH_NS;
        }
        for (size_t i = 0; i < c->cf.nsrc; i++)
            wake = c->ss[i].due < wake ? c->ss[i].due : wake;
        wake = next_refresh < wake ? next_refresh : wake;
        pthread_mutex_lock(&c->mu);
        /* The condition variable runs on CLOCK_MONOTONIC (set at open). */
        struct timespec ts = {.tv_sec = wake / WT_NS_PER_S, .tv_nsec = wake % WT_NS_PER_S};
        while (!c->stop && wt_now_mono_ns() < wake)
            if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
                break;
        pthread_mutex_unlock(&c->mu);
        if (c->stop)
            break;
    }
    return NULL;
}

int wt_carbon_open(const struct wt_carbon_conf *cf, const char *db_path, struct wt_hub *hub,
                   struct wt_carbon **out, struct wt_err *err)
{
    struct wt_store_opts o = {.create = false};
    struct wt_carbon *c = calloc(1, sizeof *c);
    pthread_condattr_t ca;
    int rc;
    *out = NULL;
    if (!c)
        return -ENOMEM;
    c->cf = *cf;
    c->slot = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if ((rc = wt_store_open(db_path, &o, &c->st, err)) != 0)
        goto fail;
    c->db = wt_store_db(c->st);
    sqlite3_busy_timeout(c->db, 5000);
    if (wt_carbon_tables(c->db) != 0) {
        rc = -EIO;
        wt_err_set(err, "%s: cannot create the carbon table: %s", db_path, sqlite3_errmsg(c->db));
        goto fail;
    }
    add_zone(c, c->cf.zone);
    for (size_t i = 0; i < c->cf.nnodes; i++)
        add_zone(c, c->cf.nodes[i].zone);
    for (size_t i = 0; i < c->cf.nsrc; i++) {
        if (c->cf.src[i].series == WT_CS_INTENSITY)
            add_zone(c, c->cf.src[i].zone);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (hub && c->nzones) {
        /* Published every CACHE_REFRESH_NS; the slot's interval allows for a slow fetch
         * (timeouts are at most 60 s) before /healthz calls it late. */
        c->hub = hub;
        c->slot = wt_hub_add_collector(hub, "carbon", 2 * WT_CARBON_MAX_TIMEOUT_NS);
        if (c->slot >= 0)
            wt_hub_set_state(hub, c->slot, true, 2 * WT_CARBON_MAX_TIMEOUT_NS);
    }
    refresh_zones(c);
    if (c->cf.nsrc || c->nzones) {
        if ((rc = -pthread_create(&c->thread, NULL, fetch_thread, c)) != 0) {
            wt_err_set(err, "carbon: cannot start the fetch thread");
            goto fail;
        }
        c->started = true;
    }
    *out = c;
    return 0;
fail:
    wt_carbon_close(c);
    return rc;
}

void wt_carbon_close(struct wt_carbon *c)
{
    if (!c)
        return;
    if (c->started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    wt_store_close(c->st);
    wt_batch_free(&c->batch);
    if (c->own_cfg) {
        wt_config_free(c->own_cfg);
        free(c->own_cfg);
    }
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int wt_carbon_fetch_stats(struct wt_carbon *c, size_t i, struct wt_carbon_fetch_stats *out)
{
    if (i >= c->cf.nsrc)
        return -ENOENT;
    pthread_mutex_lock(&c->mu);
    *out = c->ss[i].stats;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int wt_carbon_attach(const struct wt_config *cfg, struct wt_hub *hub, struct wt_jobs *jobs,
                     struct wt_carbon **out, struct wt_err *err)
{
    struct wt_carbon_conf *cf = malloc(sizeof *cf);
    struct wt_config *own = calloc(1, sizeof *own);
    int rc;
    *out = NULL;
    if (!cf || !own) {
        free(cf);
        free(own);
        return -ENOMEM;
    }
    /* A private copy of the configuration for the measured PUE: a SIGHUP reload replaces the
     * daemon's document while the jobs API may be reading this one. */
    wt_config_defaults(own);
    if (cfg->source[0] && wt_config_load(cfg->source, own, err) != 0) {
        wt_config_free(own);
        free(own);
        own = NULL;
        wt_warn("carbon", "%s; the PUE of carbon figures is the assumed one", err->msg);
    }
    if ((rc = wt_carbon_conf_from(cfg, cf, err)) == 0) {
        cf->cfg = own;
        rc = wt_carbon_open(cf, cfg->store.path, hub, out, err);
    }
    if (rc == 0) {
        (*out)->own_cfg = own;
        own = NULL;
        rc = wt_jobs_set_carbon(jobs, cf);
        if (rc) {
            wt_carbon_close(*out);
            *out = NULL;
            wt_err_set(err, "carbon: out of memory");
        }
    }
    if (own) {
        wt_config_free(own);
        free(own);
    }
    free(cf);
    return rc;
}
