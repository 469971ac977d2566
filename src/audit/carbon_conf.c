/* SPDX-License-Identifier: MIT */
/*
 * The carbon layer's configuration (see carbon.h): the top-level "carbon" section (zone, static
 * intensity, assumed PUE, hole rule, per-node zones, sources) and the names of series and formats.
 */
#include "audit/carbon.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/secret.h"
#include "core/yget.h"

#define HOUR_NS (3600LL * WT_NS_PER_S)

static const char *const series_names[] = {"intensity", "renewable", "price", NULL};
static const char *const format_names[] = {"auto", "csv", "uk_api", "electricitymaps", NULL};

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

/* ---- configuration ---- */

void wt_carbon_conf_defaults(struct wt_carbon_conf *cf)
{
    memset(cf, 0, sizeof *cf);
    cf->pue_assumed = WT_CARBON_PUE_ASSUMED;
    cf->max_hole_ns = 6 * HOUR_NS;
}

bool wt_carbon_zone_ok(const char *z)
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
    if (rc == 0 && out[0] && !wt_carbon_zone_ok(out))
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
            if (e->kind != WT_YNODE_SCALAR || !wt_carbon_zone_ok(e->value))
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

void wt_carbon_token_what(size_t i, char *out, size_t n)
{
    snprintf(out, n, "carbon.sources[%zu].token_file", i);
}

int wt_carbon_check_secrets(const struct wt_carbon_conf *cf, struct wt_err *err)
{
    for (size_t i = 0; i < cf->nsrc; i++) {
        const struct wt_carbon_source *s = &cf->src[i];
        char what[64];
        int rc;
        /* Only a URL source sends its token. */
        if (!s->url[0] || !s->token_file[0])
            continue;
        wt_carbon_token_what(i, what, sizeof what);
        if ((rc = wt_check_secret_file(what, s->token_file, err)) != 0)
            return rc;
    }
    return 0;
}
