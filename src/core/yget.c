/* SPDX-License-Identifier: MIT */
/*
 * Reading module-owned config sections; see yget.h. Every message has the shape config.c uses:
 * "FILE:LINE: PATH: what was expected (got VALUE)".
 */
#include "core/yget.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/source.h"

/* Optimal string alignment distance (edits, with swaps of neighbours), case-insensitive. */
size_t wt_edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t d[40][40];
    if (la >= 40 || lb >= 40)
        return SIZE_MAX;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 &&
                tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

char *wt_y_path(char *out, size_t n, const char *path, const char *key)
{
    snprintf(out, n, "%s%s%s", path, *path ? "." : "", key);
    return out;
}

char *wt_y_index(char *out, size_t n, const char *path, size_t i)
{
    snprintf(out, n, "%s[%zu]", path, i);
    return out;
}

int wt_y_fail(const struct wt_yget *g, const struct wt_ynode *n, const char *path, const char *fmt,
              ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wt_err_set(g->err, "%s:%d: %s: %s", g->file, n ? n->line : 0, path, msg);
}

int wt_y_key_fail(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                  const char *key, const char *fmt, ...)
{
    char p[192], msg[WT_ERR_LEN];
    const struct wt_ynode *n = wt_y_get(m, key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wt_y_fail(g, n ? n : m, wt_y_path(p, sizeof p, path, key), "%s", msg);
}

int wt_y_targets_parse(const struct wt_y_targets *d, const char *file, const struct wt_ynode *node,
                       long want, void *one, struct wt_target *names, size_t max,
                       struct wt_err *err)
{
    struct wt_yget g = {.file = file, .err = err};
    char path[64];
    int rc = wt_y_seq(&g, node, d->section);
    if (rc)
        return rc;
    size_t n = node && node->kind == WT_YNODE_SEQ ? node->n : 0;
    if (n > WT_MAX_TARGETS)
        return wt_y_fail(&g, node, d->section, "at most %d targets (got %zu)", WT_MAX_TARGETS, n);
    char seen[WT_MAX_TARGETS][WT_TARGET_NAME_LEN + 1];
    void *t = malloc(d->size);
    if (!t)
        return wt_err_set(err, "%s: out of memory", d->section);
    for (size_t i = 0; i < n; i++) {
        struct wt_target id = {{0}};
        memset(t, 0, d->size);
        wt_y_index(path, sizeof path, d->section, i);
        rc = d->parse(&g, node->child[i], path, t);
        snprintf(id.name, sizeof id.name, "%s", (const char *)t + d->name_at);
        memcpy(&id.interval_ns, (const char *)t + d->interval_at, sizeof id.interval_ns);
        for (size_t j = 0; j < i && rc == 0; j++)
            if (strcmp(seen[j], id.name) == 0)
                rc = wt_y_key_fail(&g, node->child[i], path, "name",
                                   "\"%s\" is used by another target", id.name);
        if (rc) {
            if (d->drop)
                d->drop(t);
            free(t);
            return rc;
        }
        snprintf(seen[i], sizeof seen[i], "%s", id.name);
        if (names && i < max)
            names[i] = id;
        if ((long)i == want && one)
            memcpy(one, t, d->size);
        else if (d->drop)
            d->drop(t);
    }
    free(t);
    return (int)n;
}

void wt_y_show(const char *v, char *out, size_t n)
{
    size_t o = 0, len = strlen(v);
    if (!*v) {
        snprintf(out, n, "nothing");
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < len && i < 60 && o + 6 < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        out[o++] = ch == '"' ? '\'' : iscntrl(ch) ? '?' : (char)ch;
    }
    if (len > 60 && o + 5 < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
}

static void list_keys(const char *const *keys, char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; keys[i] && o < n; i++) {
        int w = snprintf(out + o, n - o, "%s%s", i ? ", " : "", keys[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

int wt_y_map(const struct wt_yget *g, const struct wt_ynode *n, const char *path,
             const char *const *keys)
{
    char k[200], got[80];
    if (!n || n->kind == WT_YNODE_MAP || wt_ynode_is_null(n))
        return 0;
    list_keys(keys, k, sizeof k);
    if (n->kind == WT_YNODE_SCALAR) {
        wt_y_show(n->value, got, sizeof got);
        return wt_y_fail(g, n, path, "expected a section with keys %s (got %s)", k, got);
    }
    return wt_y_fail(g, n, path, "expected a section with keys %s, not a list", k);
}

int wt_y_seq(const struct wt_yget *g, const struct wt_ynode *n, const char *path)
{
    char got[80];
    if (!n || n->kind == WT_YNODE_SEQ || wt_ynode_is_null(n))
        return 0;
    if (n->kind == WT_YNODE_SCALAR) {
        wt_y_show(n->value, got, sizeof got);
        return wt_y_fail(g, n, path, "expected a list (got %s)", got);
    }
    return wt_y_fail(g, n, path, "expected a list, not a mapping");
}

int wt_y_keys(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
              const char *const *keys)
{
    char p[256];
    int rc = wt_y_map(g, map, path, keys);
    if (rc || !map || map->kind != WT_YNODE_MAP)
        return rc;
    for (size_t i = 0; i < map->n; i++) {
        const struct wt_ynode *e = map->child[i];
        char key[64];
        wt_y_show(e->key, key, sizeof key);
        /* the key as written, made safe for a terminal, without the quotes */
        size_t kl = strlen(key);
        if (kl >= 2 && key[0] == '"') {
            memmove(key, key + 1, kl - 2);
            key[kl - 2] = '\0';
        }
        wt_y_path(p, sizeof p, path, key);
        for (size_t j = 0; j < i; j++)
            if (strcmp(map->child[j]->key, e->key) == 0)
                return wt_err_set(g->err, "%s:%d: %s: duplicate key (first set on line %d)",
                                  g->file, e->key_line, p, map->child[j]->key_line);
        bool known = false;
        const char *best = NULL;
        size_t best_d = SIZE_MAX;
        for (size_t k = 0; keys[k] && !known; k++) {
            if (strcmp(keys[k], e->key) == 0) {
                known = true;
                break;
            }
            size_t len = strlen(keys[k]);
            size_t d = wt_edit_distance(e->key, strlen(e->key), keys[k], len);
            size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
            if (d <= limit && d < best_d) {
                best_d = d;
                best = keys[k];
            }
        }
        if (known)
            continue;
        if (best)
            return wt_err_set(g->err, "%s:%d: %s: unknown key; did you mean '%s'?", g->file,
                              e->key_line, p, best);
        char k[200];
        list_keys(keys, k, sizeof k);
        return wt_err_set(g->err, "%s:%d: %s: unknown key (known: %s)", g->file, e->key_line, p, k);
    }
    return 0;
}

const struct wt_ynode *wt_y_get(const struct wt_ynode *map, const char *key)
{
    if (!map || map->kind != WT_YNODE_MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->child[i]->key, key) == 0)
            return map->child[i];
    return NULL;
}

/*
 * The scalar at map.key: NULL with 0 when absent (or null), else its text; a non-scalar is an
 * error saying what was expected.
 */
static int scalar(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                  const char *key, const char *expected, const char **out)
{
    char p[256];
    const struct wt_ynode *n = wt_y_get(map, key);
    *out = NULL;
    if (!n || wt_ynode_is_null(n))
        return 0;
    if (n->kind != WT_YNODE_SCALAR)
        return wt_y_fail(g, n, wt_y_path(p, sizeof p, path, key), "expected %s, not %s", expected,
                         wt_ynode_kind_name(n->kind));
    *out = n->value;
    return 0;
}

static int bad(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
               const char *key, const char *expected, const char *v)
{
    char p[256], got[80];
    wt_y_show(v, got, sizeof got);
    return wt_y_fail(g, wt_y_get(map, key), wt_y_path(p, sizeof p, path, key),
                     "expected %s (got %s)", expected, got);
}

static int absent(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                  const char *key, bool required)
{
    char p[256];
    if (!required)
        return 0;
    return wt_err_set(g->err, "%s:%d: %s: required", g->file, map ? map->line : 0,
                      wt_y_path(p, sizeof p, path, key));
}

int wt_y_string(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                const char *key, bool required, char *out, size_t n)
{
    const char *v;
    char what[64];
    int rc = scalar(g, map, path, key, "a string", &v);
    if (rc)
        return rc;
    if (!v || (!*v && required))
        return absent(g, map, path, key, required);
    for (const char *p = v; *p; p++)
        if (iscntrl((unsigned char)*p))
            return bad(g, map, path, key, "a string without control characters", v);
    if (strlen(v) >= n) {
        snprintf(what, sizeof what, "a string of at most %zu characters", n - 1);
        return bad(g, map, path, key, what, v);
    }
    snprintf(out, n, "%s", v);
    return 0;
}

/* The scalars config.c shares (wt_config_parse_bool and wt_config_format_duration wrap these). */
int wt_y_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (size_t i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

void wt_y_format_duration(int64_t ns, char *buf, size_t n)
{
    static const struct {
        const char *u;
        int64_t ns;
    } units[] = {{"d", 86400 * WT_NS_PER_S},
                 {"h", 3600 * WT_NS_PER_S},
                 {"m", 60 * WT_NS_PER_S},
                 {"s", WT_NS_PER_S},
                 {"ms", WT_NS_PER_MS},
                 {"us", 1000},
                 {"ns", 1}};
    if (ns == 0) {
        snprintf(buf, n, "0");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (ns % units[i].ns == 0) {
            snprintf(buf, n, "%" PRId64 "%s", ns / units[i].ns, units[i].u);
            return;
        }
    }
}

int wt_y_bool(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
              const char *key, bool *out)
{
    const char *v;
    int rc = scalar(g, map, path, key, "true or false", &v);
    if (rc || !v)
        return rc;
    if (wt_y_parse_bool(v, out) != 0)
        return bad(g, map, path, key, "true or false", v);
    return 0;
}

int wt_y_duration(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                  const char *key, bool allow_zero, int64_t *out_ns)
{
    const char *v;
    const char *what =
        allow_zero ? "a duration such as 30s or 5m, or 0" : "a duration > 0 such as 30s or 5m";
    int rc = scalar(g, map, path, key, what, &v);
    int64_t ns;
    if (rc || !v)
        return rc;
    if (allow_zero && (strcmp(v, "0") == 0 || strcmp(v, "0s") == 0)) {
        *out_ns = 0;
        return 0;
    }
    /* Digits and units only: no "nan", "inf", signs, hex or exponents. */
    if (!isdigit((unsigned char)v[0]) && v[0] != '.')
        return bad(g, map, path, key, what, v);
    for (const char *p = v; *p; p++)
        if ((!isalnum((unsigned char)*p) && *p != '.') || *p == 'x' || *p == 'X' || *p == 'e' ||
            *p == 'E')
            return bad(g, map, path, key, what, v);
    if (wt_duration_parse(v, &ns) != 0 || ns <= 0)
        return bad(g, map, path, key, what, v);
    if (ns > WT_Y_DURATION_MAX)
        return bad(g, map, path, key, "a duration of at most 100 years", v);
    *out_ns = ns;
    return 0;
}

int wt_y_duration_in(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                     const char *key, bool allow_zero, int64_t min_ns, int64_t max_ns,
                     const char *why, int64_t *out_ns)
{
    char lo[32], hi[32], what[160], p[256], got[80];
    int64_t ns = 0;
    wt_y_format_duration(min_ns, lo, sizeof lo);
    wt_y_format_duration(max_ns, hi, sizeof hi);
    snprintf(what, sizeof what, "a duration from %s to %s such as %s%s", lo, hi,
             min_ns <= WT_NS_PER_S && max_ns >= WT_NS_PER_S ? "1s" : lo,
             allow_zero ? ", or 0" : "");
    const char *v;
    int rc = scalar(g, map, path, key, what, &v);
    if (rc || !v)
        return rc;
    /* Parse failures keep wt_y_duration's checks, with this range in the message. */
    struct wt_err inner = {{0}};
    struct wt_yget quiet = {g->file, &inner};
    if (wt_y_duration(&quiet, map, path, key, allow_zero, &ns) != 0)
        return bad(g, map, path, key, what, v);
    if (ns == 0 && allow_zero) {
        *out_ns = 0;
        return 0;
    }
    if (ns < min_ns || ns > max_ns) {
        wt_y_show(v, got, sizeof got);
        return wt_y_fail(g, wt_y_get(map, key), wt_y_path(p, sizeof p, path, key),
                         "expected a duration from %s to %s%s (got %s, %s %s)%s%s", lo, hi,
                         allow_zero ? ", or 0" : "", got, ns < min_ns ? "below" : "above",
                         ns < min_ns ? lo : hi, why ? ": " : "", why ? why : "");
    }
    *out_ns = ns;
    return 0;
}

int wt_y_double(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                const char *key, double min, double max, double *out)
{
    const char *v;
    char what[96];
    char *end;
    snprintf(what, sizeof what, "a number from %g to %g", min, max);
    int rc = scalar(g, map, path, key, what, &v);
    if (rc || !v)
        return rc;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(d) || d < min || d > max ||
        isspace((unsigned char)v[0]))
        return bad(g, map, path, key, what, v);
    *out = d;
    return 0;
}

int wt_y_int(const struct wt_yget *g, const struct wt_ynode *map, const char *path, const char *key,
             int64_t min, int64_t max, int64_t *out)
{
    const char *v;
    char what[96];
    char *end;
    snprintf(what, sizeof what, "an integer from %" PRId64 " to %" PRId64, min, max);
    int rc = scalar(g, map, path, key, what, &v);
    if (rc || !v)
        return rc;
    errno = 0;
    bool hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
    long long x = strtoll(hex ? v + 2 : v, &end, hex ? 16 : 10);
    if (end == v || *end || errno || x < min || x > max || isspace((unsigned char)v[0]) ||
        (hex && !isxdigit((unsigned char)v[2])))
        return bad(g, map, path, key, what, v);
    *out = x;
    return 0;
}

int wt_y_enum(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
              const char *key, const char *const *names, int *out)
{
    const char *v;
    char k[200], what[220];
    list_keys(names, k, sizeof k);
    snprintf(what, sizeof what, "one of %s", k);
    int rc = scalar(g, map, path, key, what, &v);
    if (rc || !v)
        return rc;
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], v) == 0) {
            *out = i;
            return 0;
        }
    }
    return bad(g, map, path, key, what, v);
}

size_t wt_y_targets_names(const struct wt_y_targets *d, const char *file,
                          const struct wt_ynode *sec, const char *mod, struct wt_target *out,
                          size_t max)
{
    struct wt_err err = {{0}};
    if (!sec)
        return 0;
    int n = wt_y_targets_parse(d, file, sec, -1, NULL, out, max, &err);
    if (n < 0) {
        wt_error(mod, "%s", err.msg);
        return 0;
    }
    return (size_t)n < max ? (size_t)n : max;
}

int wt_y_target_at(const struct wt_y_targets *d, const char *file, const struct wt_ynode *sec,
                   size_t i, void *one, const char *what, struct wt_err *err)
{
    int n = wt_y_targets_parse(d, file, sec, (long)i, one, NULL, 0, err);
    if (n < 0)
        return n;
    if ((size_t)n <= i) {
        wt_err_set(err, "no %s target %zu in the configuration", what, i);
        return -ENOENT;
    }
    return 0;
}
