/* SPDX-License-Identifier: MIT */
/*
 * The "collectors.snmp.targets" section; see snmp_config.h: its check and its parse into
 * struct wt_snmp_target (the version's keys, secrets never echoed, generic profiles' OIDs,
 * units and points), and the dotted OIDs every part of the SNMP collector reads.
 */
#include "collect/snmp_config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/facility.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/source.h"
#include "core/yget.h"

/* node + rack + zone: with the other labels they fit WT_LABELS_LEN */
#define WT_SNMP_PLACE_MAX 64

const char *const wt_snmp_auth_names[] = {"MD5",     "SHA",     "SHA-224", "SHA-256",
                                          "SHA-384", "SHA-512", NULL};
static const char *const priv_names[] = {"DES", "AES", "AES-192", "AES-256", NULL};
static const char *const version_names[] = {"2c", "3", NULL};
static const char *const metric_names[] = {
    "power", "energy", "current", "voltage", "apparent_power", "power_factor", "temperature", NULL};
static const int metric_ids[] = {WT_M_FAC_POWER_W,   WT_M_FAC_ENERGY_J,    WT_M_FAC_CURRENT_A,
                                 WT_M_FAC_VOLTAGE_V, WT_M_FAC_APPARENT_VA, WT_M_FAC_POWER_FACTOR,
                                 WT_M_FAC_TEMP_C};

/* ---- the config section ---------------------------------------------------------------- */

void wt_snmp_target_aim(struct wt_snmp_target *t)
{
    for (size_t k = 0; k < t->ngeneric; k++) {
        t->generic[k].oid = t->generic_oid[k];
        t->generic[k].kind = t->generic_kind[k];
        t->generic[k].point = t->generic_point[k];
    }
}

int wt_snmp_parse_oid(const char *s, oid *o, size_t max)
{
    size_t n = 0;
    if (*s == '.')
        s++;
    if (!*s)
        return -EINVAL;
    while (*s) {
        if (!isdigit((unsigned char)*s) || n == max)
            return -EINVAL;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || v > 0xffffffffUL)
            return -EINVAL;
        o[n++] = (oid)v;
        s = end;
        if (*s == '.') {
            s++;
            if (!*s)
                return -EINVAL;
        } else if (*s) {
            return -EINVAL;
        }
    }
    return (int)n;
}

/* Splits "host", "host:port", "[v6]:port" or a bare IPv6 address. Returns 0 or -EINVAL. */
static int split_address(const char *a, char *host, size_t hn, int *port)
{
    const char *colon = strrchr(a, ':');
    *port = 161;
    if (a[0] == '[') {
        const char *rb = strchr(a, ']');
        if (!rb || rb == a + 1 || (size_t)(rb - a - 1) >= hn)
            return -EINVAL;
        snprintf(host, hn, "%.*s", (int)(rb - a - 1), a + 1);
        if (rb[1] == '\0')
            return 0;
        if (rb[1] != ':')
            return -EINVAL;
        colon = rb + 1;
    } else if (colon && strchr(a, ':') == colon) {
        if (colon == a || (size_t)(colon - a) >= hn)
            return -EINVAL;
        snprintf(host, hn, "%.*s", (int)(colon - a), a);
    } else {
        /* No port, or an IPv6 address without brackets. */
        if (!*a || strlen(a) >= hn)
            return -EINVAL;
        snprintf(host, hn, "%s", a);
        return 0;
    }
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p < 1 || p > 65535)
        return -EINVAL;
    *port = (int)p;
    for (const char *c = host; *c; c++)
        if (isspace((unsigned char)*c))
            return -EINVAL;
    return 0;
}

/* Checks a point template: literal text and %1..%8. */
static bool valid_template(const char *t)
{
    if (!*t)
        return false;
    for (; *t; t++) {
        if (*t == '%') {
            t++;
            if (*t < '1' || *t > '0' + WT_SNMP_MAX_IDX)
                return false;
        } else if (!isalnum((unsigned char)*t) && !strchr("_.-:/", *t)) {
            return false;
        }
    }
    return true;
}

static int parse_generic(const struct wt_yget *g, const struct wt_ynode *item, const char *path,
                         struct wt_snmp_target *t, size_t k)
{
    static const char *const keys[] = {"oid", "metric", "scale", "unit", "point", "kind", NULL};
    char p[256], oidtxt[128] = "", unit[16] = "", kind[24] = "meter", point[32] = "";
    double scale = 1;
    int m = 0;
    oid tmp[MAX_OID_LEN];
    int rc = wt_y_keys(g, item, path, keys);
    if (!rc)
        rc = wt_y_string(g, item, path, "oid", true, oidtxt, sizeof oidtxt);
    if (!rc && wt_snmp_parse_oid(oidtxt, tmp, MAX_OID_LEN) < 2)
        rc = wt_y_fail(g, wt_y_get(item, "oid"), wt_y_path(p, sizeof p, path, "oid"),
                       "expected a numeric OID such as 1.3.6.1.4.1.318.1.1.12.1.16.0 (got \"%s\")",
                       oidtxt);
    if (!rc && !wt_y_get(item, "metric"))
        rc = wt_err_set(g->err,
                        "%s:%d: %s: required (one of power, energy, current, voltage, "
                        "apparent_power, power_factor, temperature)",
                        g->file, item->line, wt_y_path(p, sizeof p, path, "metric"));
    if (!rc)
        rc = wt_y_enum(g, item, path, "metric", metric_names, &m);
    if (!rc)
        rc = wt_y_double(g, item, path, "scale", -1e12, 1e12, &scale);
    if (!rc && scale == 0)
        rc = wt_y_fail(g, wt_y_get(item, "scale"), wt_y_path(p, sizeof p, path, "scale"),
                       "expected a number other than 0 (got 0)");
    if (!rc)
        rc = wt_y_string(g, item, path, "unit", false, unit, sizeof unit);
    if (!rc && wt_snmp_unit_factor(metric_ids[m], unit) == 0)
        rc = wt_y_fail(g, wt_y_get(item, "unit"), wt_y_path(p, sizeof p, path, "unit"),
                       "expected a unit of %s such as %s (got \"%s\")", metric_names[m],
                       metric_ids[m] == WT_M_FAC_ENERGY_J       ? "J, Wh, kWh"
                       : metric_ids[m] == WT_M_FAC_POWER_W      ? "W, kW, mW"
                       : metric_ids[m] == WT_M_FAC_CURRENT_A    ? "A, mA"
                       : metric_ids[m] == WT_M_FAC_VOLTAGE_V    ? "V, mV, kV"
                       : metric_ids[m] == WT_M_FAC_APPARENT_VA  ? "VA, kVA"
                       : metric_ids[m] == WT_M_FAC_POWER_FACTOR ? "ratio, %"
                                                                : "C",
                       unit);
    if (!rc)
        rc = wt_y_string(g, item, path, "kind", false, kind, sizeof kind);
    if (!rc && !wt_fac_name_ok(kind))
        rc = wt_y_fail(g, wt_y_get(item, "kind"), wt_y_path(p, sizeof p, path, "kind"),
                       "expected a word of [A-Za-z0-9_.-] (got \"%s\")", kind);
    if (!rc)
        rc = wt_y_string(g, item, path, "point", false, point, sizeof point);
    if (!rc && point[0] && !valid_template(point))
        rc = wt_y_fail(g, wt_y_get(item, "point"), wt_y_path(p, sizeof p, path, "point"),
                       "expected a name such as outlet%%1 (%%N: the Nth sub-identifier of the "
                       "row's index, 1..%d) (got \"%s\")",
                       WT_SNMP_MAX_IDX, point);
    if (rc)
        return rc;
    /* A scalar instance (x.0) is walked from its parent: its row's index is then "0". */
    size_t ol = strlen(oidtxt);
    bool scalar = ol > 2 && strcmp(oidtxt + ol - 2, ".0") == 0;
    if (scalar)
        oidtxt[ol - 2] = '\0';
    if (!point[0])
        snprintf(point, sizeof point, "%s", scalar ? "total" : "%1");
    snprintf(t->generic_oid[k], sizeof t->generic_oid[k], "%s",
             oidtxt[0] == '.' ? oidtxt + 1 : oidtxt);
    snprintf(t->generic_kind[k], sizeof t->generic_kind[k], "%s", kind);
    if (!scalar && strcmp(point, "%1") == 0)
        snprintf(t->generic_point[k], sizeof t->generic_point[k], "%.20s%%1", kind);
    else
        snprintf(t->generic_point[k], sizeof t->generic_point[k], "%s", point);
    struct wt_snmp_column *c = &t->generic[k];
    memset(c, 0, sizeof *c);
    c->oid = t->generic_oid[k];
    c->metric = metric_ids[m];
    c->scale = scale * wt_snmp_unit_factor(metric_ids[m], unit);
    c->kind = t->generic_kind[k];
    c->point = t->generic_point[k];
    if (c->scale < 0) {
        c->scale = -c->scale;
        c->flags |= WT_SNMP_SIGNED;
    }
    if (c->metric == WT_M_FAC_TEMP_C)
        c->flags |= WT_SNMP_SIGNED;
    return 0;
}

/* The target's optional strings, in the order they are read (each bounded by its array). */
#define AT(key) offsetof(struct wt_snmp_target, key), sizeof(((struct wt_snmp_target *)0)->key)
static const struct {
    const char *key;
    size_t at, n;
} strings[] = {{"community_file", AT(community_file)},
               {"user", AT(user)},
               {"auth_password_file", AT(auth_password_file)},
               {"priv_password_file", AT(priv_password_file)}};
#undef AT

int wt_snmp_parse_target(const struct wt_yget *g, const struct wt_ynode *item, const char *path,
                         void *target)
{
    struct wt_snmp_target *t = target;
    static const char *const keys[] = {"name",
                                       "address",
                                       "version",
                                       "community",
                                       "community_file",
                                       "user",
                                       "auth_protocol",
                                       "auth_password_file",
                                       "priv_protocol",
                                       "priv_password_file",
                                       "timeout",
                                       "retries",
                                       "interval",
                                       "profile",
                                       "generic",
                                       "node",
                                       "rack",
                                       "zone",
                                       NULL};
    char p[256], addr[160] = "";
    int64_t retries = 1;
    int v = 0;
    memset(t, 0, sizeof *t);
    t->timeout_ns = 2 * WT_NS_PER_S;
    t->auth_proto = 1; /* SHA */
    t->priv_proto = 1; /* AES */
    snprintf(t->profile, sizeof t->profile, "auto");
    if (!item || item->kind != WT_YNODE_MAP)
        return wt_y_fail(g, item, path,
                         "expected a target with keys name, address, version, "
                         "community or user... (got %s)",
                         item ? wt_ynode_kind_name(item->kind) : "nothing");
    int rc = wt_y_keys(g, item, path, keys);
    if (!rc)
        rc = wt_y_string(g, item, path, "name", true, t->name, sizeof t->name);
    if (!rc && !wt_fac_name_ok(t->name))
        rc = wt_y_fail(g, wt_y_get(item, "name"), wt_y_path(p, sizeof p, path, "name"),
                       "expected a name of letters, digits and _ . - (got \"%s\")", t->name);
    if (!rc)
        rc = wt_y_string(g, item, path, "address", true, addr, sizeof addr);
    if (!rc && split_address(addr, t->host, sizeof t->host, &t->port) != 0)
        rc = wt_y_fail(g, wt_y_get(item, "address"), wt_y_path(p, sizeof p, path, "address"),
                       "expected host, host:port or [IPv6]:port with port 1..65535 (got \"%s\")",
                       addr);
    if (!rc)
        rc = wt_y_enum(g, item, path, "version", version_names, &v);
    t->version = v == 1 ? WT_SNMP_V3 : WT_SNMP_V2C;
    if (!rc) {
        /* The community is a secret: never echoed in a message. */
        const struct wt_ynode *c = wt_y_get(item, "community");
        if (c &&
            (c->kind != WT_YNODE_SCALAR || strlen(c->value) >= sizeof t->community || !c->value[0]))
            rc = wt_y_fail(g, c, wt_y_path(p, sizeof p, path, "community"),
                           "expected a community string of 1..%zu characters",
                           sizeof t->community - 1);
        else if (c)
            snprintf(t->community, sizeof t->community, "%s", c->value);
    }
    for (size_t i = 0; !rc && i < sizeof strings / sizeof strings[0]; i++)
        rc = wt_y_string(g, item, path, strings[i].key, false, (char *)t + strings[i].at,
                         strings[i].n);
    if (!rc)
        rc = wt_y_enum(g, item, path, "auth_protocol", wt_snmp_auth_names, &t->auth_proto);
    if (!rc)
        rc = wt_y_enum(g, item, path, "priv_protocol", priv_names, &t->priv_proto);
    if (!rc)
        rc = wt_y_duration_in(g, item, path, "timeout", false, WT_Y_NET_TIMEOUT_MIN,
                              WT_Y_NET_TIMEOUT_MAX, WT_Y_WHY_NET_TIMEOUT, &t->timeout_ns);
    if (!rc)
        rc = wt_y_int(g, item, path, "retries", 0, 10, &retries);
    t->retries = (int)retries;
    if (!rc)
        rc = wt_y_duration_in(g, item, path, "interval", false, WT_Y_NET_POLL_MIN,
                              WT_Y_NET_POLL_MAX, WT_Y_WHY_NET_POLL, &t->interval_ns);
    if (!rc)
        rc = wt_y_string(g, item, path, "profile", false, t->profile, sizeof t->profile);
    if (!rc && strcmp(t->profile, "auto") != 0 && strcmp(t->profile, "generic") != 0 &&
        !wt_snmp_profile_find(t->profile)) {
        char names[400] = "auto, generic";
        for (size_t i = 0; wt_snmp_profiles[i]; i++) {
            size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, ", %s", wt_snmp_profiles[i]->name);
        }
        rc = wt_y_fail(g, wt_y_get(item, "profile"), wt_y_path(p, sizeof p, path, "profile"),
                       "expected one of %s (got \"%s\")", names, t->profile);
    }
    /* Longer than the other protocols' (facility.h): 63 each, 64 together. */
    const struct wt_fac_place *pl = &t->place;
    static const char *const place_keys[] = {"node", "rack", "zone"};
    char *place_at[] = {t->place.node, t->place.rack, t->place.zone};
    for (size_t i = 0; !rc && i < 3; i++)
        rc = wt_y_string(g, item, path, place_keys[i], false, place_at[i], WT_FAC_PLACE_CAP);
    if (!rc && strlen(pl->node) + strlen(pl->rack) + strlen(pl->zone) > WT_SNMP_PLACE_MAX)
        rc = wt_err_set(g->err,
                        "%s:%d: %s: node, rack and zone together have at most %d characters "
                        "(they label every reading)",
                        g->file, item->line, path, WT_SNMP_PLACE_MAX);
    if (rc)
        return rc;

    /* What the version needs, and nothing of the other one. */
    if (t->version == WT_SNMP_V2C) {
        static const char *const v3keys[] = {
            "user",          "auth_protocol",      "auth_password_file",
            "priv_protocol", "priv_password_file", NULL};
        for (size_t i = 0; v3keys[i]; i++) {
            const struct wt_ynode *n = wt_y_get(item, v3keys[i]);
            if (n)
                return wt_y_fail(g, n, wt_y_path(p, sizeof p, path, v3keys[i]),
                                 "only for version 3 (this target is version 2c)");
        }
        if (t->community[0] && t->community_file[0])
            return wt_y_fail(g, wt_y_get(item, "community_file"),
                             wt_y_path(p, sizeof p, path, "community_file"),
                             "give community or community_file, not both");
        if (!t->community[0] && !t->community_file[0])
            return wt_err_set(g->err, "%s:%d: %s: version 2c needs community or community_file",
                              g->file, item->line, path);
    } else {
        static const char *const v2keys[] = {"community", "community_file", NULL};
        for (size_t i = 0; v2keys[i]; i++) {
            const struct wt_ynode *n = wt_y_get(item, v2keys[i]);
            if (n)
                return wt_y_fail(g, n, wt_y_path(p, sizeof p, path, v2keys[i]),
                                 "only for version 2c (this target is version 3; use user and "
                                 "the password files)");
        }
        static const char *const need[] = {"user", "auth_password_file", "priv_password_file",
                                           NULL};
        for (size_t i = 0; need[i]; i++)
            if (!wt_y_get(item, need[i]))
                return wt_err_set(g->err,
                                  "%s:%d: %s: required for version 3 (authPriv: user, "
                                  "auth_protocol, auth_password_file, priv_protocol, "
                                  "priv_password_file)",
                                  g->file, item->line, wt_y_path(p, sizeof p, path, need[i]));
    }

    const struct wt_ynode *gen = wt_y_get(item, "generic");
    char gp[256];
    wt_y_path(gp, sizeof gp, path, "generic");
    if (strcmp(t->profile, "generic") == 0) {
        if (!gen || gen->kind != WT_YNODE_SEQ || gen->n == 0)
            return wt_y_fail(g, gen ? gen : item, gp,
                             "profile generic needs a list of {oid, metric, scale, unit, point, "
                             "kind}");
    } else if (gen) {
        return wt_y_fail(g, gen, gp, "only with profile: generic (this target's profile is %s)",
                         t->profile);
    }
    if (gen) {
        if (gen->n > WT_SNMP_MAX_GENERIC)
            return wt_y_fail(g, gen, gp, "at most %d entries (got %zu)", WT_SNMP_MAX_GENERIC,
                             gen->n);
        for (size_t k = 0; k < gen->n; k++) {
            wt_y_index(p, sizeof p, gp, k);
            rc = parse_generic(g, gen->child[k], p, t, k);
            if (rc)
                return rc;
            /* Two OIDs at one point would be one series taking turns between two counters. */
            for (size_t j = 0; j < k; j++)
                if (t->generic[j].metric == t->generic[k].metric &&
                    strcmp(t->generic_kind[j], t->generic_kind[k]) == 0 &&
                    strcmp(t->generic_point[j], t->generic_point[k]) == 0)
                    return wt_y_fail(g, gen->child[k], p,
                                     "point %s (kind %s) has this metric from generic[%zu] "
                                     "already (%s)",
                                     t->generic_point[k], t->generic_kind[k], j, t->generic_oid[j]);
        }
        t->ngeneric = gen->n;
    }
    return 0;
}
