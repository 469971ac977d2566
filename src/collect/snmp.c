/* SPDX-License-Identifier: MIT */
/*
 * SNMP collector; see snmp.h. Owns the "collectors.snmp.targets" section (its check and parse),
 * one net-snmp session per target (snmp_sess_* only: no global session list, so target threads
 * share nothing but the library's one-time init and, for SNMPv3, its USM user list, which only
 * session open and close change, one at a time), the GETBULK walks of a profile's columns, and
 * the conversion of what they return into facility readings.
 *
 * A poll is: (once) sysObjectID and model -> profile; then the columns, up to 16 side by side
 * in each GETBULK. The first request that times out or fails ends the poll with an error, so a
 * dead PDU costs at most its timeout x (retries + 1) per poll, and the loop backs off; nothing
 * stale is published.
 */
#include "collect/snmp.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>

/* after time.h: it uses struct timespec */
#include <linux/errqueue.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "collect/facility.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/log.h"
#include "core/source.h"
#include "core/yget.h"

#define SECTION "collectors.snmp.targets"
#define VB_BUDGET 60 /* varbinds asked per GETBULK (snmpsim answers at most 64) */
#define MAX_PAR 16   /* columns walked side by side in one request */
#define MAX_ROWS_PER_COL 2048
#define MAX_REQ_PER_POLL 1024
#define MAX_PLAUSIBLE_W 1e7 /* a counter step above 10 MW over the interval is a reset */
#define MAX_WALK (2 * WT_SNMP_MAX_GENERIC + 8)
#define SYSOID "1.3.6.1.2.1.1.2.0"
#define UPS_IDENT_MODEL "1.3.6.1.2.1.33.1.1.2.0"
#define WT_SNMP_PLACE_MAX                                                                          \
    64 /* node + rack + zone: with the other labels they fit WT_LABELS_LEN                         \
        */

static const char *const auth_names[] = {"MD5",     "SHA",     "SHA-224", "SHA-256",
                                         "SHA-384", "SHA-512", NULL};
static const char *const priv_names[] = {"DES", "AES", "AES-192", "AES-256", NULL};
static const char *const version_names[] = {"2c", "3", NULL};
static const char *const metric_names[] = {
    "power", "energy", "current", "voltage", "apparent_power", "power_factor", "temperature", NULL};
static const int metric_ids[] = {WT_M_FAC_POWER_W,   WT_M_FAC_ENERGY_J,    WT_M_FAC_CURRENT_A,
                                 WT_M_FAC_VOLTAGE_V, WT_M_FAC_APPARENT_VA, WT_M_FAC_POWER_FACTOR,
                                 WT_M_FAC_TEMP_C};

/* ---- the config section ---------------------------------------------------------------- */

/* Parses dotted numeric OID text (a leading dot allowed) into o. Returns its length or -EINVAL. */
static int parse_oid(const char *s, oid *o, size_t max)
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
    if (!rc && parse_oid(oidtxt, tmp, MAX_OID_LEN) < 2)
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

static int parse_target(const struct wt_yget *g, const struct wt_ynode *item, const char *path,
                        struct wt_snmp_target *t)
{
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
    t->line = item ? item->line : 0;
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
    if (!rc)
        rc = wt_y_string(g, item, path, "community_file", false, t->community_file,
                         sizeof t->community_file);
    if (!rc)
        rc = wt_y_string(g, item, path, "user", false, t->user, sizeof t->user);
    if (!rc)
        rc = wt_y_enum(g, item, path, "auth_protocol", auth_names, &t->auth_proto);
    if (!rc)
        rc = wt_y_string(g, item, path, "auth_password_file", false, t->auth_password_file,
                         sizeof t->auth_password_file);
    if (!rc)
        rc = wt_y_enum(g, item, path, "priv_protocol", priv_names, &t->priv_proto);
    if (!rc)
        rc = wt_y_string(g, item, path, "priv_password_file", false, t->priv_password_file,
                         sizeof t->priv_password_file);
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
    if (!rc)
        rc = wt_y_string(g, item, path, "node", false, t->node, sizeof t->node);
    if (!rc)
        rc = wt_y_string(g, item, path, "rack", false, t->rack, sizeof t->rack);
    if (!rc)
        rc = wt_y_string(g, item, path, "zone", false, t->zone, sizeof t->zone);
    if (!rc && strlen(t->node) + strlen(t->rack) + strlen(t->zone) > WT_SNMP_PLACE_MAX)
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

int wt_snmp_parse_targets(const char *file, const struct wt_ynode *node, struct wt_snmp_target *out,
                          size_t max, struct wt_err *err)
{
    struct wt_yget g = {.file = file, .err = err};
    char p[256];
    int rc = wt_y_seq(&g, node, SECTION);
    if (rc)
        return rc;
    if (!node || node->kind != WT_YNODE_SEQ)
        return 0;
    if (node->n > max)
        return wt_y_fail(&g, node, SECTION, "at most %zu targets (got %zu)", max, node->n);
    for (size_t i = 0; i < node->n; i++) {
        char np[256];
        wt_y_index(p, sizeof p, SECTION, i);
        rc = parse_target(&g, node->child[i], p, &out[i]);
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(out[j].name, out[i].name) == 0)
                return wt_y_fail(
                    &g, wt_y_get(node->child[i], "name"), wt_y_path(np, sizeof np, p, "name"),
                    "duplicate target name \"%s\" (first on line %d)", out[i].name, out[j].line);
    }
    return (int)node->n;
}

int wt_snmp_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_snmp_target *t = calloc(WT_MAX_TARGETS, sizeof *t);
    if (!t)
        return wt_err_set(err, "out of memory checking %s", SECTION);
    int rc = wt_snmp_parse_targets(file, node, t, WT_MAX_TARGETS, err);
    free(t);
    return rc < 0 ? rc : 0;
}

/* ---- values and readings ------------------------------------------------------------------ */

/* One value returned by a walk. */
struct row {
    uint16_t item; /* walk item */
    uint8_t nidx;  /* sub-ids of the index kept */
    bool has_num, has_raw;
    uint32_t idx[WT_SNMP_MAX_IDX];
    double num;       /* the value as a number (strings: their leading number) */
    uint64_t raw;     /* the unsigned integer, for counters */
    uint64_t modulus; /* where the integer type wraps (0: Counter64) */
    char str[WT_SNMP_STR_LEN];
};

/* One energy counter followed across polls. */
struct ectr {
    uint16_t col;
    uint8_t nidx;
    uint32_t idx[WT_SNMP_MAX_IDX];
    uint64_t base;
    struct wt_energy_counter c;
};

/* One OID walked per poll: a metric column, or a name or digits column they refer to. */
struct item {
    char txt[128];
    oid o[MAX_OID_LEN];
    size_t len;
};

struct wt_snmp {
    struct wt_fac f; /* first: its up labels (collect/facility.h) */
    struct wt_snmp_target t;
    const struct wt_snmp_profile *prof;
    struct wt_snmp_profile generic;
    char sysoid[128];
    char model[64];
    bool identified; /* sysObjectID and model read, profile chosen */
    size_t par;      /* columns per request (fewer for agents that answer less) */
    struct item items[MAX_WALK];
    size_t nitems;
    int name_item[MAX_WALK];   /* per column: its name item or -1 */
    int digits_item[MAX_WALK]; /* per column: its digits item or -1 */
    int key_item[MAX_WALK];    /* per column: its key item or -1 */
    int col_item[MAX_WALK];    /* per column: the item holding its rows (the first column with
                                * its OID: a table read twice is walked once) */
    bool model_first;          /* the model came from the profile's first model OID */
    struct row *rows;
    size_t nrows, caprows;
    struct ectr *ec;
    size_t nec, capec;
    bool produced[MAX_WALK];
    char place[WT_LABELS_LEN]; /* node/rack/zone pairs appended to every reading */
    void *sess;                /* net-snmp single session, NULL offline */
    /* The request in flight (see request): its id, and what its callback learned. A callback
     * for an older id (one abandoned on a port unreachable) is ignored. */
    int pending_id;
    int reply_state; /* -1 waiting, else STAT_SUCCESS / STAT_TIMEOUT / STAT_ERROR */
    netsnmp_pdu *reply;
    size_t out_start; /* where this poll's readings start in the batch */
};

/* Adds (or finds) a walk item. Returns its index or -EINVAL / -ENOSPC. */
static int add_item(struct wt_snmp *s, const char *txt)
{
    for (size_t i = 0; i < s->nitems; i++)
        if (strcmp(s->items[i].txt, txt) == 0)
            return (int)i;
    if (s->nitems == MAX_WALK)
        return -ENOSPC;
    struct item *it = &s->items[s->nitems];
    int n = parse_oid(txt, it->o, MAX_OID_LEN);
    if (n < 2)
        return -EINVAL;
    it->len = (size_t)n;
    snprintf(it->txt, sizeof it->txt, "%s", txt);
    return (int)s->nitems++;
}

/* Chooses the profile and lays out the walk: columns first (item i = column i), then the rest. */
static int set_profile(struct wt_snmp *s, const struct wt_snmp_profile *p, struct wt_err *err)
{
    s->prof = p;
    s->nitems = 0;
    if (p->ncols > WT_SNMP_MAX_GENERIC + 8)
        return wt_err_set(err, "profile %s has too many columns", p->name);
    for (size_t c = 0; c < p->ncols; c++) {
        /* Columns may repeat an OID (the same table read twice) but keep their own item. */
        struct item *it = &s->items[s->nitems];
        int n = parse_oid(p->cols[c].oid, it->o, MAX_OID_LEN);
        if (n < 2)
            return wt_err_set(err, "profile %s: bad OID %s", p->name, p->cols[c].oid);
        it->len = (size_t)n;
        snprintf(it->txt, sizeof it->txt, "%s", p->cols[c].oid);
        s->nitems++;
        s->col_item[c] = (int)c;
        for (size_t e = 0; e < c && s->col_item[c] == (int)c; e++)
            if (strcmp(s->items[e].txt, it->txt) == 0)
                s->col_item[c] = (int)e;
    }
    for (size_t c = 0; c < p->ncols; c++) {
        s->name_item[c] = p->cols[c].name_oid ? add_item(s, p->cols[c].name_oid) : -1;
        s->digits_item[c] = p->cols[c].digits_oid ? add_item(s, p->cols[c].digits_oid) : -1;
        s->key_item[c] = p->cols[c].key_oid ? add_item(s, p->cols[c].key_oid) : -1;
        if (s->name_item[c] == -ENOSPC || s->digits_item[c] == -ENOSPC ||
            s->key_item[c] == -ENOSPC || s->name_item[c] == -EINVAL ||
            s->digits_item[c] == -EINVAL || s->key_item[c] == -EINVAL)
            return wt_err_set(err, "profile %s: too many columns", p->name);
    }
    return 0;
}

static void snmp_release(struct wt_fac *f);

/* SNMP on the facility target: its own section (64-character placements, generic profiles) and
 * its own poll (up and info come with the readings: wt_snmp_readings); the rest is shared. */
static const struct wt_fac_proto proto = {
    .source = "snmp",
    .title = "SNMP",
    .state_size = sizeof(struct wt_snmp),
    .close = snmp_release,
};

int wt_snmp_state_new(const struct wt_snmp_target *t, const struct wt_snmp_profile *profile,
                      struct wt_snmp **out, struct wt_err *err)
{
    struct wt_snmp *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->f.proto = &proto;
    s->t = *t;
    s->f.name = s->t.name;
    /* The generic columns point into the target's own storage: re-aim them at our copy. */
    for (size_t k = 0; k < s->t.ngeneric; k++) {
        s->t.generic[k].oid = s->t.generic_oid[k];
        s->t.generic[k].kind = s->t.generic_kind[k];
        s->t.generic[k].point = s->t.generic_point[k];
    }
    s->par = MAX_PAR;
    s->place[0] = '\0';
    int rc = 0;
    if (t->node[0])
        rc = wt_labels_add(s->place, sizeof s->place, "node", t->node);
    if (!rc && t->rack[0])
        rc = wt_labels_add(s->place, sizeof s->place, "rack", t->rack);
    if (!rc && t->zone[0])
        rc = wt_labels_add(s->place, sizeof s->place, "zone", t->zone);
    /* source, target and the target's node/rack/zone: the labels of wattage_facility_up. */
    if (!rc)
        rc = wt_labels(s->f.up_labels, sizeof s->f.up_labels, "source", "snmp", "target", t->name,
                       NULL);
    if (!rc && s->place[0]) {
        size_t l = strlen(s->f.up_labels);
        rc = l + 1 + strlen(s->place) < sizeof s->f.up_labels ? 0 : -E2BIG;
        if (!rc)
            snprintf(s->f.up_labels + l, sizeof s->f.up_labels - l, ",%s", s->place);
    }
    if (rc) {
        free(s);
        return wt_err_set(err, "target %s: node, rack and zone labels are too long", t->name);
    }
    if (strcmp(t->profile, "generic") == 0) {
        s->generic.name = "generic";
        s->generic.vendor = "";
        s->generic.cols = s->t.generic;
        s->generic.ncols = s->t.ngeneric;
        profile = &s->generic;
    } else if (!profile && strcmp(t->profile, "auto") != 0) {
        profile = wt_snmp_profile_find(t->profile);
    }
    if (profile) {
        rc = set_profile(s, profile, err);
        if (rc) {
            free(s);
            return rc;
        }
    }
    *out = s;
    return 0;
}

const struct wt_snmp_profile *wt_snmp_state_profile(const struct wt_snmp *s)
{
    return s->prof;
}

void wt_snmp_reset(struct wt_snmp *s)
{
    s->nrows = 0;
}

/* Which walk item covers o, and the index after it. Returns the item or -1. */
static int find_item(const struct wt_snmp *s, const oid *o, size_t len)
{
    int best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < s->nitems; i++) {
        const struct item *it = &s->items[i];
        if (len > it->len && it->len > best_len &&
            netsnmp_oid_equals(o, it->len, it->o, it->len) == 0) {
            best = (int)i;
            best_len = it->len;
        }
    }
    return best;
}

/* Adds an empty row for item with the index o[from..len). Returns it or NULL (-ENOMEM). */
static struct row *new_row(struct wt_snmp *s, int item, const oid *o, size_t from, size_t len)
{
    if (s->nrows == s->caprows) {
        size_t cap = s->caprows ? s->caprows * 2 : 256;
        struct row *r = realloc(s->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        s->rows = r;
        s->caprows = cap;
    }
    struct row *r = &s->rows[s->nrows++];
    memset(r, 0, offsetof(struct row, str) + 1);
    r->item = (uint16_t)item;
    for (size_t i = from; i < len && r->nidx < WT_SNMP_MAX_IDX; i++)
        r->idx[r->nidx++] = (uint32_t)o[i];
    return r;
}

/* The leading number of a string value ("207", "0.375000", " 12.5 V"). */
static bool text_number(const char *v, double *out)
{
    char *end;
    while (isspace((unsigned char)*v))
        v++;
    if (!*v || !(isdigit((unsigned char)*v) || *v == '-' || *v == '+' || *v == '.'))
        return false;
    double d = strtod(v, &end);
    if (end == v || !isfinite(d))
        return false;
    *out = d;
    return true;
}

/*
 * Makes s valid UTF-8 in place (label values must be): a byte that starts no valid sequence
 * becomes '?' (Latin-1 names), and a sequence cut short at the end (by truncation) is dropped.
 */
static void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t len = *p < 0x80             ? 1
                     : (*p & 0xe0) == 0xc0 ? 2
                     : (*p & 0xf0) == 0xe0 ? 3
                     : (*p & 0xf8) == 0xf0 ? 4
                                           : 0;
        size_t k = 1;
        while (len > 1 && k < len && (p[k] & 0xc0) == 0x80)
            k++;
        if (len == 0 || (len > 1 && *p < 0xc2) || k < len) {
            if (len > 1 && k < len && p[k] == '\0') {
                *p = '\0'; /* cut short at the end */
                return;
            }
            *p++ = '?';
            continue;
        }
        p += len;
    }
}

/* Stores a string value (name, or a number sent as text). */
static void row_string(struct row *r, const char *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof r->str; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch == '\0')
            break;
        r->str[k++] = (char)(ch < 0x20 || ch == 0x7f ? ' ' : ch);
    }
    while (k > 0 && r->str[k - 1] == ' ')
        k--;
    r->str[k] = '\0';
    utf8_clean(r->str);
    r->has_num = text_number(r->str, &r->num);
}

int wt_snmp_feed(struct wt_snmp *s, const char *oidtxt, int tag, const char *value)
{
    oid o[MAX_OID_LEN];
    int n = parse_oid(oidtxt, o, MAX_OID_LEN);
    if (n < 0)
        return 0;
    /* sysObjectID; some agents send it as a string (the HPE recording does). */
    if (!s->prof && (tag == 6 || tag == 4) &&
        strcmp(oidtxt[0] == '.' ? oidtxt + 1 : oidtxt, SYSOID) == 0) {
        snprintf(s->sysoid, sizeof s->sysoid, "%s", value[0] == '.' ? value + 1 : value);
        const struct wt_snmp_profile *p = wt_snmp_profile_match(s->sysoid);
        if (p && set_profile(s, p, NULL) != 0)
            return -EINVAL;
        return 0;
    }
    if ((tag == 6 || tag == 4) && strcmp(oidtxt[0] == '.' ? oidtxt + 1 : oidtxt, SYSOID) == 0)
        snprintf(s->sysoid, sizeof s->sysoid, "%s", value[0] == '.' ? value + 1 : value);
    if (s->prof && tag == 4 && value[0]) {
        const char *bare = oidtxt[0] == '.' ? oidtxt + 1 : oidtxt;
        bool first = s->prof->model_oid && strcmp(bare, s->prof->model_oid) == 0;
        bool second = s->prof->model_oid2 && strcmp(bare, s->prof->model_oid2) == 0;
        /* The first model OID wins whichever arrives first. */
        if (first || (second && !s->model_first)) {
            snprintf(s->model, sizeof s->model, "%s", value);
            s->model_first = first;
        }
    }
    int it = find_item(s, o, (size_t)n);
    if (it < 0)
        return 0;
    struct row *r = new_row(s, it, o, s->items[it].len, (size_t)n);
    if (!r)
        return -ENOMEM;
    char *end;
    switch (tag) {
    case 2: { /* Integer32 */
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value)
            break;
        r->num = (double)v;
        r->has_num = true;
        if (v >= 0) {
            r->raw = (uint64_t)v;
            r->has_raw = true;
            r->modulus = 1ULL << 31;
        }
        break;
    }
    case 65:
    case 66:
    case 67:
    case 70: { /* Counter32, Gauge32, TimeTicks, Counter64 */
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value)
            break;
        r->num = (double)v;
        r->raw = v;
        r->has_num = r->has_raw = true;
        r->modulus = tag == 70 ? 0 : 1ULL << 32;
        break;
    }
    case 4:
        row_string(r, value, strlen(value));
        break;
    default:
        break;
    }
    return 0;
}

/* The row of item with the same index as r, or NULL. */
static const struct row *same_index(const struct wt_snmp *s, int item, const struct row *r)
{
    if (item < 0)
        return NULL;
    for (size_t i = 0; i < s->nrows; i++) {
        const struct row *q = &s->rows[i];
        if (q->item == item && q->nidx == r->nidx &&
            memcmp(q->idx, r->idx, r->nidx * sizeof r->idx[0]) == 0)
            return q;
    }
    return NULL;
}

/*
 * The row of a name item for r: the one with r's index, else the one whose index is the longest
 * prefix of r's (a name per outlet for values per outlet and sensor); NULL when none.
 */
static const struct row *name_row(const struct wt_snmp *s, int item, const struct row *r)
{
    const struct row *best = NULL;
    if (item < 0)
        return NULL;
    for (size_t i = 0; i < s->nrows; i++) {
        const struct row *q = &s->rows[i];
        if (q->item != item || q->nidx == 0 || q->nidx > r->nidx ||
            (best && q->nidx <= best->nidx) ||
            memcmp(q->idx, r->idx, q->nidx * sizeof r->idx[0]) != 0)
            continue;
        best = q;
        if (q->nidx == r->nidx)
            break;
    }
    return best;
}

/*
 * Renders a point template with the row's index (and key, -1 when none); other daisy-chain units
 * get "unitN.".
 */
static void render_point(const struct wt_snmp_column *c, const struct row *r, int64_t key,
                         char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    if (c->unit_pos && c->unit_pos <= r->nidx && r->idx[c->unit_pos - 1] != c->unit_base)
        k = (size_t)snprintf(out, n, "unit%" PRIu32 ".", r->idx[c->unit_pos - 1]);
    for (const char *t = c->point; *t && k + 1 < n; t++) {
        if (*t == '%' && t[1] >= '1' && t[1] <= '9') {
            unsigned pos = (unsigned)(t[1] - '1');
            t++;
            if (pos < r->nidx)
                k += (size_t)snprintf(out + k, n - k, "%" PRIu32, r->idx[pos]);
            if (k >= n)
                k = n - 1;
        } else if (*t == '%' && t[1] == 'k') {
            t++;
            if (key >= 0)
                k += (size_t)snprintf(out + k, n - k, "%" PRId64, key);
            else if (r->nidx > 0)
                k += (size_t)snprintf(out + k, n - k, "%" PRIu32, r->idx[r->nidx - 1]);
            if (k >= n)
                k = n - 1;
        } else {
            out[k++] = *t;
            out[k] = '\0';
        }
    }
}

/*
 * The sub-identifiers of an index that a column's point names: its highest %N, the daisy-chain
 * unit, the sensor type of a typed column; at least one (a scalar's ".0").
 */
static size_t index_named(const struct wt_snmp_column *c)
{
    size_t n = c->unit_pos;
    for (const char *t = c->point; *t; t++)
        if (*t == '%' && t[1] >= '1' && t[1] <= '9' && (size_t)(t[1] - '0') > n)
            n = (size_t)(t[1] - '0');
    if (c->flags & WT_SNMP_TYPED)
        n++;
    return n ? n : 1;
}

/* The energy counter of (col, index), made on first use. NULL when out of memory. */
static struct ectr *counter(struct wt_snmp *s, size_t col, const struct row *r)
{
    for (size_t i = 0; i < s->nec; i++) {
        struct ectr *e = &s->ec[i];
        if (e->col == col && e->nidx == r->nidx &&
            memcmp(e->idx, r->idx, r->nidx * sizeof r->idx[0]) == 0)
            return e;
    }
    if (s->nec == s->capec) {
        size_t cap = s->capec ? s->capec * 2 : 16;
        struct ectr *e = realloc(s->ec, cap * sizeof *e);
        if (!e)
            return NULL;
        s->ec = e;
        s->capec = cap;
    }
    struct ectr *e = &s->ec[s->nec++];
    memset(e, 0, sizeof *e);
    e->col = (uint16_t)col;
    e->nidx = r->nidx;
    memcpy(e->idx, r->idx, sizeof e->idx);
    return e;
}

static int emit(struct wt_snmp *s, int metric, const char *kind, const char *point,
                const char *name, int64_t t_ns, double v, struct wt_batch *out)
{
    char lb[WT_LABELS_LEN];
    int rc = wt_labels(lb, sizeof lb, "source", "snmp", "target", s->t.name, "point", point, "kind",
                       kind, NULL);
    if (rc)
        return rc;
    /* Room is kept for node/rack/zone (bounded by the config check); a long name is cut. */
    size_t keep = s->place[0] ? strlen(s->place) + 1 : 0;
    if (name && name[0]) {
        char nm[64];
        size_t base = strlen(lb);
        snprintf(nm, sizeof nm, "%s", name);
        for (size_t n = strlen(nm); n > 0; n = n > 8 ? n - 8 : 0) {
            nm[n] = '\0';
            utf8_clean(nm);
            if (wt_labels_add(lb, sizeof lb - keep, "name", nm) == 0)
                break;
            lb[base] = '\0';
        }
    }
    if (s->place[0]) {
        size_t l = strlen(lb);
        if (l + 1 + strlen(s->place) >= sizeof lb)
            return -E2BIG;
        snprintf(lb + l, sizeof lb - l, ",%s", s->place);
    }
    /*
     * Two columns (a generic profile's OIDs with one point) or two rows that render the same
     * point would export a series twice, and Prometheus refuses a scrape with a duplicate: the
     * first one this poll is kept.
     */
    for (size_t i = s->out_start; i < out->len; i++)
        if (out->r[i].metric == metric && strcmp(out->r[i].labels, lb) == 0)
            return 0;
    return wt_batch_add(out, metric, lb, t_ns, v);
}

/* One row of a column as a reading. */
static int row_reading(struct wt_snmp *s, size_t c, const struct row *r, int64_t t_ns,
                       struct wt_batch *out)
{
    const struct wt_snmp_column *col = &s->prof->cols[c];
    int metric = col->metric;
    double scale = col->scale;
    int64_t key = -1;
    if (!r->has_num)
        return 0;
    /*
     * A row whose index goes on past what the point names is not a row of this table: it would
     * render the point of another row, and one series would take turns between two counters.
     */
    if (r->nidx > index_named(col))
        return 0;
    if (col->key_oid) {
        const struct row *kr = same_index(s, s->key_item[c], r);
        if (kr && kr->has_num && kr->num >= 0 && kr->num < 1e9)
            key = (int64_t)kr->num;
        if ((key < 0 && (col->flags & WT_SNMP_KEY_REQUIRED)) ||
            (key == 0 && (col->flags & WT_SNMP_KEY_NONZERO)))
            return 0; /* another column's row */
    }
    if (col->flags & WT_SNMP_TYPED) {
        if (r->nidx == 0)
            return 0;
        const struct wt_snmp_type_map *m = col->types;
        while (m && m->metric >= 0 && m->type != r->idx[r->nidx - 1])
            m++;
        if (!m || m->metric < 0)
            return 0;
        metric = m->metric;
        scale = m->scale;
        const struct row *d = same_index(s, s->digits_item[c], r);
        if (d && d->has_num && d->num > 0 && d->num < 10)
            scale *= pow(10, -d->num);
    }
    double v = r->num;
    if (v < 0) {
        if (col->flags & WT_SNMP_ABS)
            v = -v;
        else if (!(col->flags & WT_SNMP_SIGNED))
            return 0; /* "not available" on these MIBs */
    }
    if (metric == WT_M_FAC_ENERGY_J) {
        uint64_t raw = r->raw, modulus = r->modulus;
        if (!r->has_raw) {
            /* A counter sent as text ("2.28kWh"): followed in millionths of its unit. */
            if (v < 0 || v > 1e12)
                return 0;
            raw = (uint64_t)llround(v * 1e6);
            modulus = 0;
            scale *= 1e-6;
        }
        struct ectr *e = counter(s, c, r);
        if (!e)
            return -ENOMEM;
        if (!e->c.have)
            e->base = raw; /* what the meter counted before us is part of the total */
        uint64_t max_delta = 1;
        if (e->c.have && t_ns > e->c.last_t_ns) {
            double dt = (double)(t_ns - e->c.last_t_ns) / WT_NS_PER_S;
            double md = MAX_PLAUSIBLE_W * dt / scale;
            max_delta = md > 1.8e19 ? 0 : md < 1 ? 1 : (uint64_t)md;
        }
        enum wt_delta_kind k = wt_energy_counter_update(&e->c, t_ns, raw, modulus, max_delta);
        if (k == WT_DELTA_RESET)
            wt_info("snmp", "energy counter reset target=%s column=%s raw=%" PRIu64, s->t.name,
                    col->oid, raw);
        v = (double)e->base + (double)e->c.total_raw; /* a Counter64 near 2^64: no wrap */
    }
    char point[64];
    render_point(col, r, key, point, sizeof point);
    const struct row *nm = name_row(s, s->name_item[c], r);
    int rc = emit(s, metric, col->kind, point, nm ? nm->str : NULL, t_ns, v * scale, out);
    if (rc == 0)
        s->produced[c] = true;
    return rc;
}

int wt_snmp_readings(struct wt_snmp *s, int64_t t_ns, struct wt_batch *out)
{
    int rc = 0;
    s->out_start = out->len;
    if (s->prof) {
        for (size_t c = 0; c < s->prof->ncols; c++) {
            const struct wt_snmp_column *col = &s->prof->cols[c];
            s->produced[c] = false;
            if (col->flags & WT_SNMP_FALLBACK) {
                bool covered = false;
                for (size_t e = 0; e < c && !covered; e++)
                    covered = s->produced[e] && s->prof->cols[e].metric == col->metric &&
                              strcmp(s->prof->cols[e].kind, col->kind) == 0;
                if (covered)
                    continue;
            }
            for (size_t i = 0; i < s->nrows && rc == 0; i++)
                if (s->rows[i].item == s->col_item[c])
                    rc = row_reading(s, c, &s->rows[i], t_ns, out);
            if (rc)
                return rc;
        }
    }
    char lb[WT_LABELS_LEN];
    snprintf(lb, sizeof lb, "%s", s->f.up_labels);
    rc = wt_batch_add(out, WT_M_FAC_UP, lb, t_ns, 1);
    if (!rc)
        rc = wt_labels_add(lb, sizeof lb, "profile", s->prof ? s->prof->name : "none");
    if (!rc && s->prof && s->prof->vendor[0])
        rc = wt_labels_add(lb, sizeof lb, "vendor", s->prof->vendor);
    if (!rc && s->sysoid[0])
        rc = wt_labels_add(lb, sizeof lb, "sys_object_id", s->sysoid);
    if (!rc && s->model[0])
        rc = wt_labels_add(lb, sizeof lb, "model", s->model);
    if (!rc)
        rc = wt_batch_add(out, WT_M_FAC_INFO, lb, t_ns, 1);
    return rc;
}

/* ---- the network ---------------------------------------------------------------------------- */

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
/* Session open and close touch net-snmp's global USM user list: one at a time. */
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

static void lib_init(void)
{
    /* No snmp.conf, no persistent state under /var/lib/snmp, no MIB files: we use numeric OIDs. */
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_READ_CONFIGS, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    netsnmp_ds_set_int(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_WARNINGS, 0);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIB_ERRORS, 0);
    netsnmp_ds_set_string(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_MIBDIRS, "/nonexistent");
    /*
     * init_snmp creates <persistent dir>/cert_indexes even with persistence off; a directory
     * below /dev/null cannot be made, by root either, so nothing is written (nothing needs it:
     * no TLS transports, no saved state).
     */
    netsnmp_ds_set_string(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_PERSISTENT_DIR,
                          "/dev/null/wattage-no-snmp-state");
    /* The library logs to stderr when no handler is set: give it one that drops everything. */
    snmp_disable_log();
    netsnmp_register_loghandler(NETSNMP_LOGHANDLER_NONE, LOG_EMERG);
    init_snmp("wattage");
}

/* Reads a one-line secret file into out (trailing newline removed). Returns 0 or -errno. */
static int read_secret(const char *path, char *out, size_t n, const char *what,
                       const struct wt_snmp_target *t, struct wt_err *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        wt_err_set(err, "target %s: cannot read %s %s: %s", t->name, what, path, strerror(e));
        return -e;
    }
    size_t len = fread(out, 1, n - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    out[len] = '\0';
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        out[--len] = '\0';
    if (more || len == 0)
        return wt_err_set(err, "target %s: %s %s must hold one line of 1..%zu characters", t->name,
                          what, path, n - 2);
    return 0;
}

static int open_session(struct wt_snmp *s, struct wt_err *err)
{
    const struct wt_snmp_target *t = &s->t;
    netsnmp_session sess;
    char peer[200], community[256] = "", authpass[256] = "", privpass[256] = "";
    int rc = 0;
    pthread_once(&lib_once, lib_init);
    snmp_sess_init(&sess);
    bool v6 = strchr(t->host, ':') != NULL;
    snprintf(peer, sizeof peer, v6 ? "udp6:[%s]:%d" : "udp:%s:%d", t->host, t->port);
    sess.peername = peer;
    sess.timeout = (long)(t->timeout_ns / 1000);
    sess.retries = t->retries;
    if (t->version == WT_SNMP_V2C) {
        sess.version = SNMP_VERSION_2c;
        if (t->community_file[0])
            rc = read_secret(t->community_file, community, sizeof community, "community_file", t,
                             err);
        else
            snprintf(community, sizeof community, "%s", t->community);
        if (rc)
            return rc;
        sess.community = (u_char *)community;
        sess.community_len = strlen(community);
    } else {
        static const oid *const auth_oids[] = {
            usmHMACMD5AuthProtocol,       usmHMACSHA1AuthProtocol,
            usmHMAC128SHA224AuthProtocol, usmHMAC192SHA256AuthProtocol,
            usmHMAC256SHA384AuthProtocol, usmHMAC384SHA512AuthProtocol};
        static const size_t auth_lens[] = {
            OID_LENGTH(usmHMACMD5AuthProtocol),       OID_LENGTH(usmHMACSHA1AuthProtocol),
            OID_LENGTH(usmHMAC128SHA224AuthProtocol), OID_LENGTH(usmHMAC192SHA256AuthProtocol),
            OID_LENGTH(usmHMAC256SHA384AuthProtocol), OID_LENGTH(usmHMAC384SHA512AuthProtocol)};
        static const oid *const priv_oids[] = {usmDESPrivProtocol, usmAESPrivProtocol,
                                               usmAES192PrivProtocol, usmAES256PrivProtocol};
        static const size_t priv_lens[] = {
            OID_LENGTH(usmDESPrivProtocol), OID_LENGTH(usmAESPrivProtocol),
            OID_LENGTH(usmAES192PrivProtocol), OID_LENGTH(usmAES256PrivProtocol)};
        rc = read_secret(t->auth_password_file, authpass, sizeof authpass, "auth_password_file", t,
                         err);
        if (!rc)
            rc = read_secret(t->priv_password_file, privpass, sizeof privpass, "priv_password_file",
                             t, err);
        if (!rc && (strlen(authpass) < 8 || strlen(privpass) < 8))
            rc = wt_err_set(err, "target %s: SNMPv3 passwords must have at least 8 characters",
                            t->name);
        if (rc)
            goto out;
        sess.version = SNMP_VERSION_3;
        sess.securityName = (char *)t->user;
        sess.securityNameLen = strlen(t->user);
        sess.securityLevel = SNMP_SEC_LEVEL_AUTHPRIV;
        sess.securityAuthProto = (oid *)auth_oids[t->auth_proto];
        sess.securityAuthProtoLen = auth_lens[t->auth_proto];
        sess.securityAuthKeyLen = USM_AUTH_KU_LEN;
        sess.securityPrivProto = (oid *)priv_oids[t->priv_proto];
        sess.securityPrivProtoLen = priv_lens[t->priv_proto];
        sess.securityPrivKeyLen = USM_PRIV_KU_LEN;
        if (generate_Ku(sess.securityAuthProto, (u_int)sess.securityAuthProtoLen,
                        (u_char *)authpass, strlen(authpass), sess.securityAuthKey,
                        &sess.securityAuthKeyLen) != SNMPERR_SUCCESS ||
            generate_Ku(sess.securityAuthProto, (u_int)sess.securityAuthProtoLen,
                        (u_char *)privpass, strlen(privpass), sess.securityPrivKey,
                        &sess.securityPrivKeyLen) != SNMPERR_SUCCESS) {
            rc = wt_err_set(err, "target %s: cannot derive the SNMPv3 keys (%s)", t->name,
                            auth_names[t->auth_proto]);
            goto out;
        }
    }
    pthread_mutex_lock(&lib_mu);
    s->sess = snmp_sess_open(&sess);
    int e = sess.s_snmp_errno;
    pthread_mutex_unlock(&lib_mu);
    if (!s->sess) {
        rc = wt_err_set(err, "target %s: cannot open a session to %s: %s", t->name, peer,
                        snmp_api_errstring(e));
    } else {
        /*
         * net-snmp sends from an unconnected UDP socket, where Linux drops the ICMP "port
         * unreachable" a closed port answers with; with IP_RECVERR the kernel queues it on the
         * socket, and request() sees it at once instead of waiting out every retry.
         */
        netsnmp_transport *tr = snmp_sess_transport(s->sess);
        int one = 1;
        if (tr && tr->sock >= 0)
            (void)(v6 ? setsockopt(tr->sock, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof one)
                      : setsockopt(tr->sock, IPPROTO_IP, IP_RECVERR, &one, sizeof one));
    }
out:
    /* The secrets leave no copy behind in our memory. */
    explicit_bzero(community, sizeof community);
    explicit_bzero(authpass, sizeof authpass);
    explicit_bzero(privpass, sizeof privpass);
    explicit_bzero(sess.securityAuthKey, sizeof sess.securityAuthKey);
    explicit_bzero(sess.securityPrivKey, sizeof sess.securityPrivKey);
    return rc;
}

/* What the state holds (collect/facility.h's close): the session, rows, counters. */
static void snmp_release(struct wt_fac *f)
{
    struct wt_snmp *s = (struct wt_snmp *)f;
    if (s->sess) {
        pthread_mutex_lock(&lib_mu);
        snmp_sess_close(s->sess);
        pthread_mutex_unlock(&lib_mu);
    }
    free(s->rows);
    free(s->ec);
    explicit_bzero(s->t.community, sizeof s->t.community);
}

void wt_snmp_state_free(struct wt_snmp *s)
{
    wt_fac_close(s);
}

/*
 * Reads the socket's error queue (IP_RECVERR): true when it holds an ICMP port unreachable
 * (ECONNREFUSED) from the target. Drains what it reads.
 */
static bool port_unreachable(int fd)
{
    bool refused = false;
    for (int i = 0; i < 16; i++) {
        char cbuf[512], data[64];
        struct iovec iov = {data, sizeof data};
        struct msghdr m = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
        if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            break;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
                (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                const struct sock_extended_err *ee = (const void *)CMSG_DATA(c);
                refused |= ee->ee_errno == ECONNREFUSED;
            }
        }
    }
    return refused;
}

static int on_reply(int op, netsnmp_session *ss, int reqid, netsnmp_pdu *pdu, void *magic)
{
    struct wt_snmp *s = magic;
    (void)ss;
    if (reqid != s->pending_id || s->reply_state != -1)
        return 1; /* an abandoned request */
    if (op == NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE) {
        s->reply = snmp_clone_pdu(pdu);
        s->reply_state = s->reply ? STAT_SUCCESS : STAT_ERROR;
    } else if (op == NETSNMP_CALLBACK_OP_TIMED_OUT) {
        s->reply_state = STAT_TIMEOUT;
    } else if (op == NETSNMP_CALLBACK_OP_SEND_FAILED || op == NETSNMP_CALLBACK_OP_DISCONNECT) {
        s->reply_state = STAT_ERROR;
    }
    return 1;
}

/*
 * snmp_sess_synch_response, with one difference: between packets it looks at the socket's
 * error queue, so a closed port (ICMP port unreachable) ends the wait at once. Returns a STAT_
 * value, or 1 for port unreachable; *resp is the answer on STAT_SUCCESS.
 */
static int exchange(struct wt_snmp *s, netsnmp_pdu *pdu, netsnmp_pdu **resp)
{
    netsnmp_transport *tr = snmp_sess_transport(s->sess);
    int fd = tr ? tr->sock : -1;
    if (fd >= 0)
        (void)port_unreachable(fd); /* what an earlier poll left */
    s->reply_state = -1;
    s->reply = NULL;
    s->pending_id = snmp_sess_async_send(s->sess, pdu, on_reply, s);
    if (!s->pending_id) {
        snmp_free_pdu(pdu);
        return STAT_ERROR;
    }
    while (s->reply_state == -1) {
        int nfds = 0, block = 1;
        fd_set fds;
        struct timeval tv = {0};
        FD_ZERO(&fds);
        snmp_sess_select_info(s->sess, &nfds, &fds, &tv, &block);
        int n = select(nfds, &fds, NULL, NULL, block ? NULL : &tv);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s->reply_state = STAT_ERROR;
            break;
        }
        if (n > 0 && fd >= 0 && port_unreachable(fd)) {
            s->pending_id = 0; /* its callback, when the library times it out, is ignored */
            return 1;
        }
        if (n > 0)
            snmp_sess_read(s->sess, &fds);
        else
            snmp_sess_timeout(s->sess);
    }
    *resp = s->reply;
    s->reply = NULL;
    return s->reply_state;
}

/*
 * Sends pdu, waits for the answer. Returns 0 with *resp, or -ETIMEDOUT, -ECONNREFUSED (port
 * unreachable) or -EIO with err.
 */
static int request(struct wt_snmp *s, netsnmp_pdu *pdu, netsnmp_pdu **resp, struct wt_err *err)
{
    *resp = NULL;
    int st = exchange(s, pdu, resp);
    int liberr = 0, syserr = 0;
    char *msg = NULL;
    if (st == 1) {
        wt_err_set(err,
                   "target %s: %s:%d: port unreachable (nothing listens there; is the agent "
                   "running, and on this port?)",
                   s->t.name, s->t.host, s->t.port);
        return -ECONNREFUSED;
    }
    if (st == STAT_ERROR) {
        snmp_sess_error(s->sess, &liberr, &syserr, &msg);
        /*
         * SNMPv3's engine ID discovery runs inside: its timeout is a timeout too, though it
         * comes back as an error whose number is lost (only the text says so).
         */
        if (liberr == SNMPERR_TIMEOUT ||
            (msg && strcmp(msg, snmp_api_errstring(SNMPERR_TIMEOUT)) == 0))
            st = STAT_TIMEOUT;
    }
    if (st == STAT_TIMEOUT) {
        free(msg);
        wt_err_set(err, "target %s: no answer from %s:%d (timeout %.3g s, %d tries)", s->t.name,
                   s->t.host, s->t.port, (double)s->t.timeout_ns / WT_NS_PER_S, s->t.retries + 1);
        return -ETIMEDOUT;
    }
    if (st != STAT_SUCCESS || !*resp) {
        wt_err_set(err, "target %s: request failed: %s", s->t.name, msg ? msg : "unknown");
        free(msg);
        if (*resp)
            snmp_free_pdu(*resp);
        *resp = NULL;
        return -EIO;
    }
    if ((*resp)->errstat != SNMP_ERR_NOERROR) {
        long st2 = (*resp)->errstat;
        wt_err_set(err, "target %s: the agent answered %s", s->t.name, snmp_errstring((int)st2));
        snmp_free_pdu(*resp);
        *resp = NULL;
        return st2 == SNMP_ERR_TOOBIG ? -EMSGSIZE : -EIO;
    }
    return 0;
}

/* Stores a varbind of item into a row. Returns 0 or -ENOMEM. */
static int store_var(struct wt_snmp *s, int item, const netsnmp_variable_list *v)
{
    struct row *r = new_row(s, item, v->name, s->items[item].len, v->name_length);
    if (!r)
        return -ENOMEM;
    switch (v->type) {
    case ASN_INTEGER:
        r->num = (double)*v->val.integer;
        r->has_num = true;
        if (*v->val.integer >= 0) {
            r->raw = (uint64_t)*v->val.integer;
            r->has_raw = true;
            r->modulus = 1ULL << 31;
        }
        break;
    case ASN_COUNTER:
    case ASN_GAUGE:
    case ASN_TIMETICKS:
        r->raw = (uint64_t)(*v->val.integer & 0xffffffffUL);
        r->num = (double)r->raw;
        r->has_num = r->has_raw = true;
        r->modulus = 1ULL << 32;
        break;
    case ASN_COUNTER64:
        r->raw = ((uint64_t)v->val.counter64->high << 32) | v->val.counter64->low;
        r->num = (double)r->raw;
        r->has_num = r->has_raw = true;
        r->modulus = 0;
        break;
    case ASN_OCTET_STR:
        row_string(r, (const char *)v->val.string, v->val_len);
        break;
    default:
        break;
    }
    return 0;
}

/* GET of one scalar into out as text. Returns 0 (out "" when absent) or a request error. */
static int get_text(struct wt_snmp *s, const char *txt, char *out, size_t n, struct wt_err *err)
{
    oid o[MAX_OID_LEN];
    int len = parse_oid(txt, o, MAX_OID_LEN);
    netsnmp_pdu *pdu = snmp_pdu_create(SNMP_MSG_GET), *resp;
    out[0] = '\0';
    if (!pdu || len < 0)
        return -ENOMEM;
    snmp_add_null_var(pdu, o, (size_t)len);
    int rc = request(s, pdu, &resp, err);
    if (rc)
        return rc;
    const netsnmp_variable_list *v = resp->variables;
    if (v && v->type == ASN_OBJECT_ID) {
        size_t k = 0;
        for (size_t i = 0; i < v->val_len / sizeof(oid) && k + 12 < n; i++)
            k += (size_t)snprintf(out + k, n - k, i ? ".%lu" : "%lu",
                                  (unsigned long)v->val.objid[i]);
    } else if (v && v->type == ASN_OCTET_STR) {
        size_t k = 0;
        for (size_t i = 0; i < v->val_len && k + 1 < n; i++) {
            unsigned char ch = v->val.string[i];
            out[k++] = (char)(ch < 0x20 || ch >= 0x7f ? '?' : ch);
        }
        out[k] = '\0';
    }
    snmp_free_pdu(resp);
    return 0;
}

/* A column being walked: where it stands. */
struct cursor {
    oid o[MAX_OID_LEN];
    size_t len;
    size_t rows;
    int item;
    bool done;
};

/*
 * Walks every item into rows, several columns per GETBULK (one varbind each, the repetitions
 * sharing a budget of VB_BUDGET varbinds per answer), each column dropping out when it ends. An
 * agent that answers "tooBig" gets smaller requests; one that answers fewer varbinds than asked
 * gets fewer columns at a time. Returns 0 or the first request error.
 */
static int walk_all(struct wt_snmp *s, int *nreq, struct wt_err *err)
{
    struct cursor c[MAX_PAR];
    size_t nact = 0, next = 0;
    int budget = VB_BUDGET;
    for (int req = 0;; req++) {
        size_t k = 0;
        for (size_t i = 0; i < nact; i++)
            if (!c[i].done)
                c[k++] = c[i];
        nact = k;
        while (nact < s->par && next < s->nitems) {
            if (next < s->prof->ncols && s->col_item[next] != (int)next) {
                next++; /* the same column as an earlier one: its rows are that one's */
                continue;
            }
            struct cursor *n = &c[nact++];
            n->item = (int)next;
            n->len = s->items[next].len;
            memcpy(n->o, s->items[next].o, n->len * sizeof(oid));
            n->rows = 0;
            n->done = false;
            next++;
        }
        *nreq = req;
        if (nact == 0)
            return 0;
        if (req >= MAX_REQ_PER_POLL)
            return wt_err_set(err, "target %s: more than %d requests in one poll", s->t.name,
                              MAX_REQ_PER_POLL);
        netsnmp_pdu *pdu = snmp_pdu_create(SNMP_MSG_GETBULK), *resp;
        if (!pdu)
            return -ENOMEM;
        int reps = budget / (int)nact;
        pdu->non_repeaters = 0;
        pdu->max_repetitions = reps < 1 ? 1 : reps;
        for (size_t i = 0; i < nact; i++)
            snmp_add_null_var(pdu, c[i].o, c[i].len);
        int rc = request(s, pdu, &resp, err);
        if (rc == -EMSGSIZE && (budget > 1 || s->par > 1)) {
            /* Ask for less: fewer repetitions first, then fewer columns at a time. */
            if (budget > (int)nact)
                budget /= 2;
            else if (s->par > 1)
                s->par = s->par / 2;
            else
                budget = 1;
            continue;
        }
        if (rc)
            return rc;
        size_t got = 0;
        for (netsnmp_variable_list *v = resp->variables; v; v = v->next_variable, got++) {
            struct cursor *q = &c[got % nact];
            const struct item *it = &s->items[q->item];
            if (q->done)
                continue;
            if (v->type == SNMP_ENDOFMIBVIEW || v->type == SNMP_NOSUCHOBJECT ||
                v->type == SNMP_NOSUCHINSTANCE || v->name_length <= it->len ||
                netsnmp_oid_equals(v->name, it->len, it->o, it->len) != 0 ||
                snmp_oid_compare(v->name, v->name_length, q->o, q->len) <= 0 ||
                q->rows >= MAX_ROWS_PER_COL) {
                q->done = true; /* left the column, or an agent that does not go forward */
                continue;
            }
            rc = store_var(s, q->item, v);
            if (rc) {
                snmp_free_pdu(resp);
                return rc;
            }
            q->rows++;
            q->len = v->name_length < MAX_OID_LEN ? v->name_length : MAX_OID_LEN;
            memcpy(q->o, v->name, q->len * sizeof(oid));
        }
        snmp_free_pdu(resp);
        if (got == 0) {
            for (size_t i = 0; i < nact; i++)
                c[i].done = true;
        } else if (got < nact) {
            /* The columns past what it answered saw nothing: ask for fewer at a time. */
            s->par = got;
        }
    }
}

/* First contact: the sysObjectID, the profile when auto, the model. */
static int identify(struct wt_snmp *s, struct wt_err *err)
{
    int rc = get_text(s, SYSOID, s->sysoid, sizeof s->sysoid, err);
    if (rc)
        return rc;
    if (s->sysoid[0] == '.') /* sent as a string with its leading dot (HPE) */
        memmove(s->sysoid, s->sysoid + 1, strlen(s->sysoid));
    if (!s->prof) {
        const struct wt_snmp_profile *p = wt_snmp_profile_match(s->sysoid);
        if (!p) {
            /* Any UPS may serve RFC 1628 whatever its vendor's sysObjectID. */
            char m[64];
            rc = get_text(s, UPS_IDENT_MODEL, m, sizeof m, err);
            if (rc)
                return rc;
            if (m[0])
                p = wt_snmp_profile_find("ups-mib");
        }
        if (!p)
            return wt_err_set(err,
                              "target %s: sysObjectID %s matches no built-in profile; set "
                              "profile: generic with the OIDs to read",
                              s->t.name, s->sysoid[0] ? s->sysoid : "(none)");
        rc = set_profile(s, p, err);
        if (rc)
            return rc;
        wt_info("snmp", "target %s: sysObjectID %s, profile %s", s->t.name, s->sysoid, p->name);
    }
    if (s->prof->model_oid) {
        rc = get_text(s, s->prof->model_oid, s->model, sizeof s->model, err);
        if (rc)
            return rc;
    }
    if (!s->model[0] && s->prof->model_oid2) {
        rc = get_text(s, s->prof->model_oid2, s->model, sizeof s->model, err);
        if (rc)
            return rc;
    }
    return 0;
}

static int snmp_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct wt_snmp *s = state;
    int rc = 0;
    if (!s->identified) {
        rc = identify(s, err);
        if (rc) {
            s->sysoid[0] = '\0';
            return rc;
        }
        s->identified = true;
    }
    wt_snmp_reset(s);
    int nreq = 0;
    rc = walk_all(s, &nreq, err);
    if (rc)
        return rc;
    wt_debug("snmp", "target %s: requests=%d values=%zu", s->t.name, nreq, s->nrows);
    rc = wt_snmp_readings(s, t_ns, out);
    if (rc)
        wt_err_set(err, "target %s: cannot build readings: %s", s->t.name, strerror(-rc));
    return rc;
}

/* ---- the collector -------------------------------------------------------------------------- */

static const struct wt_collector_config *snmp_config(const struct wt_config *cfg)
{
    return &cfg->collectors.snmp;
}

static size_t snmp_targets(const struct wt_config *cfg, struct wt_target *out, size_t max)
{
    struct wt_snmp_target *t = calloc(WT_MAX_TARGETS, sizeof *t);
    struct wt_err err = {{0}};
    size_t n = 0;
    if (!t)
        return 0;
    int rc = wt_snmp_parse_targets(wt_config_file(cfg), wt_config_section(cfg, SECTION), t,
                                   WT_MAX_TARGETS, &err);
    if (rc < 0)
        wt_error("snmp", "%s", err.msg);
    for (int i = 0; i < rc && n < max; i++, n++) {
        snprintf(out[n].name, sizeof out[n].name, "%s", t[i].name);
        out[n].interval_ns = t[i].interval_ns;
    }
    free(t);
    return n;
}

static int snmp_open_target(const struct wt_config *cfg, size_t i, void **state, struct wt_err *err)
{
    struct wt_snmp_target *t = calloc(WT_MAX_TARGETS, sizeof *t);
    struct wt_snmp *s = NULL;
    *state = NULL;
    if (!t)
        return -ENOMEM;
    int rc = wt_snmp_parse_targets(wt_config_file(cfg), wt_config_section(cfg, SECTION), t,
                                   WT_MAX_TARGETS, err);
    if (rc >= 0 && i >= (size_t)rc)
        rc = wt_err_set(err, "no SNMP target %zu", i);
    if (rc >= 0)
        rc = wt_snmp_state_new(&t[i], NULL, &s, err);
    if (rc >= 0 && s)
        rc = open_session(s, err);
    free(t);
    if (rc < 0 || !s) {
        wt_snmp_state_free(s);
        return rc < 0 ? rc : -EINVAL;
    }
    *state = s;
    return 0;
}

/* The loop (core/loop.c) runs each PDU; facility.c says when it is down and closes it. */
const struct wt_collector_ops wt_snmp_collector = {
    .name = "snmp",
    .config = snmp_config,
    .poll = snmp_poll,
    .close = wt_fac_close,
    .targets = snmp_targets,
    .open_target = snmp_open_target,
    .down = wt_fac_down,
};
