/* SPDX-License-Identifier: MIT */
/*
 * Redfish collector; see redfish.h. One target is one service on one libcurl handle (kept
 * alive between requests). The walk (first poll, and again after a 404) GETs every resource it
 * keeps, so that the DataSourceUri of each excerpt is known before the Sensors collections are
 * read: a Sensor already quoted by an excerpt is not polled again. A poll GETs the kept
 * resources; a transport failure (timeout, refused, reset) ends the poll at once, while an HTTP
 * error or bad JSON from one resource skips that resource only. A service that answers nothing
 * usable fails the poll, and the loop backs off.
 */
#include "collect/redfish.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/clocksync.h"
#include "collect/facility.h"
#include "collect/redfish_client.h"
#include "core/clock.h"
#include "core/curl_lib.h"
#include "core/energy.h"
#include "core/log.h"
#include "core/reading.h"
#include "core/yget.h"

#define ROOT WT_REDFISH_ROOT
#define POINT_LEN 64
#define NAME_LEN 64
#define LABEL_LEN 32
#define URI_LEN WT_REDFISH_URI_LEN
#define MAX_WALK_GETS 4096

static const char *const auth_names[] = {"basic", "session", NULL};

enum rkind { R_GENERIC, R_SENSOR, R_POWER_LEGACY, R_THERMAL_LEGACY, R_INFO };

struct resource {
    char *uri;
    enum rkind kind;
    char point[POINT_LEN];
    char kindl[LABEL_LEN];
    char name[NAME_LEN];
    bool skip_power_control; /* legacy Power: EnvironmentMetrics already gives chassis power */
    char vendor[NAME_LEN], model[NAME_LEN]; /* R_INFO */
};

struct counter {
    int metric;
    char labels[WT_LABELS_LEN];
    struct wt_energy_counter ctr;
    uint64_t first_raw;
};

struct rf {
    struct wt_fac f; /* first: its up labels, skew and placement (collect/facility.h) */
    struct wt_redfish_target t;
    struct wt_rf_client c; /* the service's HTTP side (redfish_client.h) */
    struct resource *res;
    size_t nres, capres;
    bool walked;
    unsigned walk_gets;
    struct counter *ctrs;
    size_t nctrs, capctrs;
    char **seen; /* DataSourceUris read this poll (or found by the walk) */
    size_t nseen, capseen;
    /* during a poll */
    int64_t t_ns;
    struct wt_batch *out;
    size_t out_start; /* where this poll's readings start in out */
    int add_rc;
};

/* ---- configuration ---- */

/* One target of the section (wt_y_targets_parse), into *tv, a struct wt_redfish_target. */
static int parse_target(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                        void *tv)
{
    struct wt_redfish_target *t = tv;
    static const char *const keys[] = {
        "name",    "url",      "username", "password_file", "auth",
        "ca_file", "insecure", "timeout",  "interval",      "max_response_bytes",
        "sensors", "node",     "rack",     "zone",          NULL};
    int64_t maxr = WT_REDFISH_MAX_RESPONSE;
    int rc = wt_y_keys(g, m, path, keys);
    memset(t, 0, sizeof *t);
    t->timeout_ns = 5 * WT_NS_PER_S;
    t->sensors = true;
    if (!rc)
        rc = wt_fac_parse_name(g, m, path, t->name, sizeof t->name);
    if (!rc)
        rc = wt_y_string(g, m, path, "url", true, t->url, sizeof t->url);
    if (!rc) {
        bool https = strncmp(t->url, "https://", 8) == 0;
        const char *host = t->url + (https ? 8 : 7);
        if ((!https && strncmp(t->url, "http://", 7) != 0) || !*host || *host == '/' ||
            strpbrk(t->url, " ?#@"))
            rc = wt_y_key_fail(g, m, path, "url",
                               "expected http://HOST[:PORT] or https://HOST[:PORT] (got \"%s\")",
                               t->url);
    }
    if (!rc) {
        /* Kept as scheme://host[:port]: the walk starts at /redfish/v1 whatever was written. */
        size_t len = strlen(t->url);
        while (len > 0 && t->url[len - 1] == '/')
            t->url[--len] = '\0';
        if (len >= strlen(ROOT) && strcmp(t->url + len - strlen(ROOT), ROOT) == 0)
            t->url[len - strlen(ROOT)] = '\0';
        len = strlen(t->url);
        while (len > 0 && t->url[len - 1] == '/')
            t->url[--len] = '\0';
    }
    if (!rc)
        rc = wt_y_string(g, m, path, "username", false, t->username, sizeof t->username);
    if (!rc)
        rc = wt_y_string(g, m, path, "password_file", false, t->password_file,
                         sizeof t->password_file);
    if (!rc && !t->username[0] != !t->password_file[0])
        rc = wt_y_key_fail(g, m, path, t->username[0] ? "password_file" : "username",
                           "username and password_file go together");
    if (!rc)
        rc = wt_y_enum(g, m, path, "auth", auth_names, &t->auth);
    if (!rc && wt_y_get(m, "auth") && !t->username[0])
        rc = wt_y_key_fail(g, m, path, "auth", "needs username and password_file");
    if (!rc)
        rc = wt_y_string(g, m, path, "ca_file", false, t->ca_file, sizeof t->ca_file);
    if (!rc)
        rc = wt_y_bool(g, m, path, "insecure", &t->insecure);
    if (!rc)
        rc = wt_fac_parse_timing(g, m, path, &t->timeout_ns, &t->interval_ns);
    if (!rc)
        rc = wt_y_int(g, m, path, "max_response_bytes", 1024, 256 << 20, &maxr);
    if (!rc)
        rc = wt_y_bool(g, m, path, "sensors", &t->sensors);
    if (!rc)
        rc = wt_fac_parse_place(g, m, path, &t->place);
    t->max_response = maxr;
    return rc;
}

static bool seen(const struct rf *s, const char *uri)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (strcmp(s->seen[i], uri) == 0)
            return true;
    return false;
}

static void mark_seen(struct rf *s, const char *uri)
{
    if (seen(s, uri))
        return;
    if (s->nseen == s->capseen) {
        size_t cap = s->capseen ? 2 * s->capseen : 64;
        char **p = realloc(s->seen, cap * sizeof *p);
        if (!p)
            return;
        s->seen = p;
        s->capseen = cap;
    }
    char *d = strdup(uri);
    if (d)
        s->seen[s->nseen++] = d;
}

static void clear_seen(struct rf *s)
{
    for (size_t i = 0; i < s->nseen; i++)
        free(s->seen[i]);
    s->nseen = 0;
}

/* Every DataSourceUri below j: the Sensors these excerpts were taken from. */
static void mark_sources(struct rf *s, const cJSON *j)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, j)
    {
        if (c->string && strcmp(c->string, "DataSourceUri") == 0 && cJSON_IsString(c))
            mark_seen(s, c->valuestring);
        else if (cJSON_IsObject(c) || cJSON_IsArray(c))
            mark_sources(s, c);
    }
}

/* ---- the walk ---- */

static void free_resources(struct rf *s)
{
    for (size_t i = 0; i < s->nres; i++)
        free(s->res[i].uri);
    s->nres = 0;
}

static struct resource *add_resource(struct rf *s, const char *uri, enum rkind kind,
                                     const char *point, const char *kindl, const char *name)
{
    if (s->nres >= WT_REDFISH_MAX_RESOURCES)
        return NULL;
    if (s->nres == s->capres) {
        size_t cap = s->capres ? 2 * s->capres : 32;
        struct resource *p = realloc(s->res, cap * sizeof *p);
        if (!p)
            return NULL;
        s->res = p;
        s->capres = cap;
    }
    struct resource *r = &s->res[s->nres];
    memset(r, 0, sizeof *r);
    r->uri = strdup(uri ? uri : "");
    if (!r->uri)
        return NULL;
    r->kind = kind;
    snprintf(r->point, sizeof r->point, "%s", point);
    snprintf(r->kindl, sizeof r->kindl, "%s", kindl);
    snprintf(r->name, sizeof r->name, "%s", name ? name : "");
    s->nres++;
    return r;
}

/*
 * GETs during the walk. Transport errors end the walk (-EIO); a resource that cannot be read
 * is left out (logged at debug). Returns 0 with *out, or -ENOENT-like codes for "skip".
 */
static int walk_get(struct rf *s, const char *uri, cJSON **out, struct wt_err *err)
{
    if (++s->walk_gets > MAX_WALK_GETS) {
        wt_err_set(err, "walk stopped after %d requests", MAX_WALK_GETS);
        return -E2BIG;
    }
    int rc = wt_rf_get_json(&s->c, uri, out, err);
    if (rc && rc != -EIO && rc != -EACCES)
        wt_debug("redfish", "%s: left out: %s", s->t.name, err->msg);
    return rc;
}

/* A walk error that ends the walk: the service stopped answering, or refuses us. */
static bool fatal(int rc)
{
    return rc == -EIO || rc == -EACCES || rc == -E2BIG || rc == -ENOMEM;
}

static void add_info(struct rf *s, const cJSON *j, const char *point, const char *kindl)
{
    struct resource *r = add_resource(s, NULL, R_INFO, point, kindl, wt_rf_str(j, "Name"));
    if (r) {
        snprintf(r->vendor, sizeof r->vendor, "%s",
                 wt_rf_str(j, "Manufacturer") ? wt_rf_str(j, "Manufacturer") : "");
        snprintf(r->model, sizeof r->model, "%s",
                 wt_rf_str(j, "Model") ? wt_rf_str(j, "Model") : "");
    }
}

/*
 * Keeps uri as a resource polled as kind, at point (or parent/prefix<Id> when point is NULL),
 * named name (or its own Name). GETs it once to learn its Id and DataSourceUris.
 */
static int keep(struct rf *s, const char *uri, enum rkind kind, const char *point,
                const char *parent, const char *prefix, const char *kindl, const char *name,
                struct resource **out, struct wt_err *err)
{
    cJSON *j = NULL;
    char id[48], pt[POINT_LEN];
    int rc = walk_get(s, uri, &j, err);
    if (out)
        *out = NULL;
    if (rc)
        return fatal(rc) ? rc : 0;
    if (!point) {
        wt_rf_id_of(j, uri, id, sizeof id);
        snprintf(pt, sizeof pt, "%s%s%s%s", parent ? parent : "", parent ? "/" : "",
                 prefix ? prefix : "", id);
        point = pt;
    }
    mark_sources(s, j);
    struct resource *r =
        add_resource(s, uri, kind, point, kindl, name ? name : wt_rf_str(j, "Name"));
    if (out)
        *out = r;
    cJSON_Delete(j);
    return 0;
}

/* Calls fn for each member of the collection at uri. Stops on a fatal error. */
typedef int (*member_fn)(struct rf *s, const char *uri, const void *ctx, struct wt_err *err);
static int each_member(struct rf *s, const char *coll, member_fn fn, const void *ctx,
                       struct wt_err *err)
{
    char page[URI_LEN];
    int rc = 0;
    snprintf(page, sizeof page, "%s", coll);
    /* A large collection comes in pages (Members@odata.nextLink); walk_get bounds the count. */
    while (page[0] && rc == 0) {
        cJSON *j = NULL;
        rc = walk_get(s, page, &j, err);
        if (rc)
            return fatal(rc) ? rc : 0;
        const cJSON *m;
        cJSON_ArrayForEach(m, wt_rf_item(j, "Members"))
        {
            const char *u = wt_rf_str(m, "@odata.id");
            if (!u || strncmp(u, ROOT, strlen(ROOT)) != 0 || strlen(u) >= URI_LEN)
                continue;
            rc = fn(s, u, ctx, err);
            if (rc)
                break;
        }
        const char *next = wt_rf_str(j, "Members@odata.nextLink");
        if (next && strncmp(next, ROOT "/", strlen(ROOT) + 1) == 0 && strlen(next) < URI_LEN &&
            strcmp(next, page) != 0)
            snprintf(page, sizeof page, "%s", next);
        else
            page[0] = '\0';
        cJSON_Delete(j);
    }
    return rc;
}

struct sub {
    const char *parent, *prefix, *kindl;
};

static int keep_member(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const struct sub *sb = ctx;
    return keep(s, uri, R_GENERIC, NULL, sb->parent, sb->prefix, sb->kindl, NULL, NULL, err);
}

struct equip {
    const char *coll, *prefix, *kindl;
};

static const struct equip power_equipment[] = {
    {"RackPDUs", "pdu", "pdu"},
    {"FloorPDUs", "floorpdu", "floor_pdu"},
    {"PowerShelves", "shelf", "power_shelf"},
    {"TransferSwitches", "ats", "transfer_switch"},
    {"ElectricalBuses", "bus", "bus"},
    {NULL, NULL, NULL},
};

static const struct equip thermal_equipment[] = {
    {"CDUs", "cdu", "cdu"},
    {"HeatExchangers", "hx", "heat_exchanger"},
    {"ImmersionUnits", "immersion", "immersion_unit"},
    {NULL, NULL, NULL},
};

/* "pdu" + "1" = "pdu1"; "bus" + "Busway" = "bus-Busway". */
static void equip_point(const struct equip *e, const cJSON *j, const char *uri, char *out, size_t n)
{
    char id[48];
    wt_rf_id_of(j, uri, id, sizeof id);
    snprintf(out, n, "%s%s%s", e->prefix, isdigit((unsigned char)id[0]) ? "" : "-", id);
}

/* A unit's parts: the collection under key, each member kept as parent/prefix<Id>, kind kindl. */
struct part {
    const char *key, *prefix, *kindl;
};

static const struct part power_parts[] = {{"Mains", "", "mains"},    {"Branches", "", "branch"},
                                          {"Feeders", "", "feeder"}, {"Subfeeds", "", "subfeed"},
                                          {"Outlets", "", "outlet"}, {NULL, NULL, NULL}};

static const struct part cooling_parts[] = {
    {"PrimaryCoolantConnectors", "primary", "coolant_primary"},
    {"SecondaryCoolantConnectors", "secondary", "coolant_secondary"},
    {"Pumps", "pump", "pump"},
    {NULL, NULL, NULL}};

/* One unit of equipment e at uri: its info, its own readings (link metrics_key) and its parts. */
static int walk_unit(struct rf *s, const char *uri, const struct equip *e, const char *metrics_key,
                     const struct part *parts, struct wt_err *err)
{
    cJSON *j = NULL;
    char point[POINT_LEN];
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    equip_point(e, j, uri, point, sizeof point);
    add_info(s, j, point, e->kindl);
    const char *metrics = wt_rf_link(j, metrics_key);
    if (metrics)
        rc = keep(s, metrics, R_GENERIC, point, NULL, NULL, e->kindl, wt_rf_str(j, "Name"), NULL,
                  err);
    for (int i = 0; parts[i].key && !rc; i++) {
        const char *c = wt_rf_link(j, parts[i].key);
        struct sub sb = {point, parts[i].prefix, parts[i].kindl};
        if (c)
            rc = each_member(s, c, keep_member, &sb, err);
    }
    cJSON_Delete(j);
    return rc;
}

static int walk_power_unit(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    return walk_unit(s, uri, ctx, "Metrics", power_parts, err);
}

static int walk_cooling_unit(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    return walk_unit(s, uri, ctx, "EnvironmentMetrics", cooling_parts, err);
}

static int walk_equipment(struct rf *s, const char *uri, const struct equip *list, member_fn fn,
                          struct wt_err *err)
{
    cJSON *j = NULL;
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    for (const struct equip *e = list; e->coll && !rc; e++) {
        const char *c = wt_rf_link(j, e->coll);
        if (c)
            rc = each_member(s, c, fn, e, err);
    }
    cJSON_Delete(j);
    return rc;
}

static int keep_sensor(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const char *chassis = ctx;
    if (seen(s, uri))
        return 0; /* an excerpt already gives it */
    cJSON *j = NULL;
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    int metric;
    double factor;
    if (wt_rf_sensor_metric(j, &metric, &factor)) {
        char id[48], point[POINT_LEN];
        wt_rf_id_of(j, uri, id, sizeof id);
        snprintf(point, sizeof point, "%s/%s", chassis, id);
        mark_seen(s, uri);
        add_resource(s, uri, R_SENSOR, point, "sensor", wt_rf_str(j, "Name"));
    }
    cJSON_Delete(j);
    return 0;
}

static int walk_psu(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const char *chassis = ctx;
    cJSON *j = NULL;
    char id[48], point[POINT_LEN];
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    const char *metrics = wt_rf_link(j, "Metrics");
    wt_rf_id_of(j, uri, id, sizeof id);
    snprintf(point, sizeof point, "%s/%s", chassis, id);
    if (metrics)
        rc = keep(s, metrics, R_GENERIC, point, NULL, NULL, "psu", wt_rf_str(j, "Name"), NULL, err);
    cJSON_Delete(j);
    return rc;
}

static int walk_chassis(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    (void)ctx;
    cJSON *j = NULL, *sub = NULL;
    char id[48];
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    wt_rf_id_of(j, uri, id, sizeof id);
    add_info(s, j, id, "chassis");
    const char *env = wt_rf_link(j, "EnvironmentMetrics"), *ps = wt_rf_link(j, "PowerSubsystem");
    const char *ts = wt_rf_link(j, "ThermalSubsystem"), *sensors = wt_rf_link(j, "Sensors");
    const char *power = wt_rf_link(j, "Power"), *thermal = wt_rf_link(j, "Thermal");
    const char *name = wt_rf_str(j, "Name");
    /*
     * ThermalSubsystem first: where it and EnvironmentMetrics quote the same sensor, its point
     * ("1U/internal", a fan's own Id) says more.
     */
    if (ts) {
        rc = walk_get(s, ts, &sub, err);
        if (rc == 0) {
            const char *tm = wt_rf_link(sub, "ThermalMetrics"), *fans = wt_rf_link(sub, "Fans");
            struct sub sb = {id, "", "fan"};
            if (tm)
                rc = keep(s, tm, R_GENERIC, id, NULL, NULL, "chassis", name, NULL, err);
            if (!rc && fans)
                rc = each_member(s, fans, keep_member, &sb, err);
            cJSON_Delete(sub);
        } else if (!fatal(rc)) {
            rc = 0;
            ts = NULL;
        }
    }
    if (!rc && env)
        rc = keep(s, env, R_GENERIC, id, NULL, NULL, "chassis", name, NULL, err);
    if (!rc && ps) {
        rc = walk_get(s, ps, &sub, err);
        if (rc == 0) {
            const char *psus = wt_rf_link(sub, "PowerSupplies");
            if (psus)
                rc = each_member(s, psus, walk_psu, id, err);
            cJSON_Delete(sub);
        } else if (!fatal(rc)) {
            rc = 0;
            ps = NULL;
        }
    }
    /* The deprecated resources, only where the new ones are missing (same values twice). */
    if (!rc && power && !ps) {
        struct resource *r;
        rc = keep(s, power, R_POWER_LEGACY, id, NULL, NULL, "chassis", name, &r, err);
        if (r)
            r->skip_power_control = env != NULL;
    }
    if (!rc && thermal && !ts)
        rc = keep(s, thermal, R_THERMAL_LEGACY, id, NULL, NULL, "chassis", name, NULL, err);
    if (!rc && sensors && s->t.sensors)
        rc = each_member(s, sensors, keep_sensor, id, err);
    cJSON_Delete(j);
    return rc;
}

static int walk(struct rf *s, struct wt_err *err)
{
    cJSON *root = NULL;
    free_resources(s);
    clear_seen(s);
    s->walk_gets = 0;
    int rc = wt_rf_get_json(&s->c, ROOT, &root, err);
    if (rc)
        return rc;
    const char *pe = wt_rf_link(root, "PowerEquipment"), *te = wt_rf_link(root, "ThermalEquipment");
    const char *ch = wt_rf_link(root, "Chassis");
    /* Equipment first: its excerpts name the Sensors that the Chassis walk then leaves out. */
    if (pe)
        rc = walk_equipment(s, pe, power_equipment, walk_power_unit, err);
    if (!rc && te)
        rc = walk_equipment(s, te, thermal_equipment, walk_cooling_unit, err);
    if (!rc && ch)
        rc = each_member(s, ch, walk_chassis, NULL, err);
    cJSON_Delete(root);
    if (rc)
        return rc == -EIO || rc == -EACCES ? rc : -EIO;
    size_t polled = 0;
    for (size_t i = 0; i < s->nres; i++)
        polled += s->res[i].kind != R_INFO;
    if (polled == 0) {
        wt_err_set(err, "%s: no power, thermal or sensor resources under %s", s->t.url, ROOT);
        return -ENOENT;
    }
    s->walked = true;
    clear_seen(s);
    wt_info("redfish", "%s: found %zu resources to poll (%u requests)", s->t.name, polled,
            s->walk_gets + 1);
    return 0;
}

/* ---- readings ---- */

static int labels_for(const struct rf *s, const char *point, const char *kindl, const char *name,
                      char *buf, size_t n)
{
    int rc = wt_labels(buf, n, "source", "redfish", "target", s->t.name, "point", point, "kind",
                       kindl, NULL);
    if (!rc && name && *name)
        rc = wt_labels_add(buf, n, "name", name);
    if (!rc)
        rc = wt_fac_place_labels(buf, n, &s->t.place);
    return rc;
}

static struct counter *counter_for(struct rf *s, int metric, const char *labels)
{
    for (size_t i = 0; i < s->nctrs; i++)
        if (s->ctrs[i].metric == metric && strcmp(s->ctrs[i].labels, labels) == 0)
            return &s->ctrs[i];
    if (s->nctrs == s->capctrs) {
        size_t cap = s->capctrs ? 2 * s->capctrs : 16;
        struct counter *p = realloc(s->ctrs, cap * sizeof *p);
        if (!p)
            return NULL;
        s->ctrs = p;
        s->capctrs = cap;
    }
    struct counter *c = &s->ctrs[s->nctrs++];
    memset(c, 0, sizeof *c);
    c->metric = metric;
    snprintf(c->labels, sizeof c->labels, "%s", labels);
    return c;
}

/* One reading of resource r: point r->point[/qual], kind (r's unless given), value in base units.
 */
static void emit(struct rf *s, const struct resource *r, const char *kindl, const char *qual,
                 int metric, double value)
{
    char point[POINT_LEN + 48], labels[WT_LABELS_LEN];
    if (s->add_rc || !isfinite(value))
        return;
    if (qual && *qual)
        snprintf(point, sizeof point, "%s/%s", r->point, qual);
    else
        snprintf(point, sizeof point, "%s", r->point);
    const char *k = kindl ? kindl : r->kindl;
    /* A long name is dropped before the reading is. */
    if (labels_for(s, point, k, r->name, labels, sizeof labels) != 0 &&
        labels_for(s, point, k, NULL, labels, sizeof labels) != 0)
        return;
    /* Whatever a service says twice (ids copied by mistake), a series is exported once. */
    for (size_t i = s->out_start; i < s->out->len; i++)
        if (s->out->r[i].metric == metric && strcmp(s->out->r[i].labels, labels) == 0)
            return;
    if (metric == WT_M_FAC_ENERGY_J) {
        /* Counters stay integer, in millijoules, through energy.c (a reset is a new baseline). */
        struct counter *c = counter_for(s, metric, labels);
        if (!c || value < 0)
            return;
        if (value > 1e15)
            return; /* more than 277 GWh: not a reading, and it would not fit in mJ */
        uint64_t raw = (uint64_t)llround(value * 1000.0);
        if (wt_energy_counter_update(&c->ctr, s->t_ns, raw, 0, 0) == WT_DELTA_FIRST)
            c->first_raw = raw;
        value = (double)(c->first_raw + c->ctr.total_raw) / 1000.0;
    }
    s->add_rc = wt_batch_add(s->out, metric, labels, s->t_ns, value);
}

/*
 * An excerpt: a number, or an object with Reading (and DataSourceUri: read once per poll).
 * Power excerpts carry ApparentVA and PowerFactor too.
 */
static void excerpt(struct rf *s, const struct resource *r, const cJSON *v, const char *qual,
                    int metric, double factor)
{
    double x;
    if (cJSON_IsObject(v)) {
        const char *src = wt_rf_str(v, "DataSourceUri");
        if (src) {
            if (seen(s, src))
                return;
            mark_seen(s, src);
        }
        if (wt_rf_number(wt_rf_item(v, "Reading"), &x))
            emit(s, r, NULL, qual, metric, x * factor);
        if (metric == WT_M_FAC_POWER_W) {
            if (wt_rf_number(wt_rf_item(v, "ApparentVA"), &x))
                emit(s, r, NULL, qual, WT_M_FAC_APPARENT_VA, x);
            if (wt_rf_number(wt_rf_item(v, "PowerFactor"), &x))
                emit(s, r, NULL, qual, WT_M_FAC_POWER_FACTOR, x);
        }
    } else if (wt_rf_number(v, &x)) {
        emit(s, r, NULL, qual, metric, x * factor);
    }
}

/* "Line1ToNeutral" -> "L1N", "Line1ToLine2" -> "L1L2", "Line1" -> "L1", "Neutral" -> "N". */
static void line_name(const char *key, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = key; *p && o + 1 < n;) {
        if (strncmp(p, "Line", 4) == 0) {
            out[o++] = 'L';
            p += 4;
        } else if (strncmp(p, "Neutral", 7) == 0) {
            out[o++] = 'N';
            p += 7;
        } else if (strncmp(p, "To", 2) == 0) {
            p += 2;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

struct prop {
    const char *key;
    int metric;
    double factor;
    const char *qual;
};

static const struct prop props[] = {
    {"PowerWatts", WT_M_FAC_POWER_W, 1, NULL},
    {"InputPowerWatts", WT_M_FAC_POWER_W, 1, "input"},
    {"OutputPowerWatts", WT_M_FAC_POWER_W, 1, "output"},
    {"EnergykWh", WT_M_FAC_ENERGY_J, 3.6e6, NULL},
    {"Voltage", WT_M_FAC_VOLTAGE_V, 1, NULL},
    {"InputVoltage", WT_M_FAC_VOLTAGE_V, 1, "input"},
    {"CurrentAmps", WT_M_FAC_CURRENT_A, 1, NULL},
    {"InputCurrentAmps", WT_M_FAC_CURRENT_A, 1, "input"},
    {"TemperatureCelsius", WT_M_FAC_TEMP_C, 1, NULL},
    {"HumidityPercent", WT_M_FAC_HUMIDITY_RATIO, 0.01, NULL},
    {"SupplyTemperatureCelsius", WT_M_FAC_TEMP_C, 1, "supply"},
    {"ReturnTemperatureCelsius", WT_M_FAC_TEMP_C, 1, "return"},
    {"FlowLitersPerMinute", WT_M_FAC_FLOW_M3S, 1.0 / 60000, NULL},
    {"SupplyPressurekPa", WT_M_FAC_PRESSURE_PA, 1e3, "supply"},
    {"ReturnPressurekPa", WT_M_FAC_PRESSURE_PA, 1e3, "return"},
    {NULL, 0, 0, NULL},
};

static const struct prop polyphase[] = {
    {"PolyPhasePowerWatts", WT_M_FAC_POWER_W, 1, "PowerWatts"},
    {"PolyPhaseCurrentAmps", WT_M_FAC_CURRENT_A, 1, "CurrentAmps"},
    {"PolyPhaseVoltage", WT_M_FAC_VOLTAGE_V, 1, "Voltage"},
    {NULL, 0, 0, NULL},
};

static void fan_rpm(struct rf *s, const struct resource *r, const cJSON *v, const char *qual)
{
    double x;
    const char *src = wt_rf_str(v, "DataSourceUri");
    if (!wt_rf_number(wt_rf_item(v, "SpeedRPM"), &x))
        return;
    /*
     * The Sensor behind a fan excerpt is in percent, so the RPM is keyed apart from it; the same
     * fan quoted by ThermalSubsystem and EnvironmentMetrics is still read once.
     */
    if (src) {
        char key[URI_LEN + 8];
        snprintf(key, sizeof key, "rpm:%s", src);
        if (seen(s, key))
            return;
        mark_seen(s, key);
    }
    emit(s, r, "fan", qual, WT_M_FAC_FAN_RPM, x);
}

static void parse_generic(struct rf *s, const struct resource *r, const cJSON *j)
{
    char q[48];
    const cJSON *v;
    for (const struct prop *p = props; p->key; p++)
        if ((v = wt_rf_item(j, p->key)))
            excerpt(s, r, v, p->qual, p->metric, p->factor);
    for (const struct prop *p = polyphase; p->key; p++) {
        const cJSON *pp = wt_rf_item(j, p->key), *line;
        /* One line that repeats the single-phase value (outlets) is not read twice. */
        if (!cJSON_IsObject(pp) || (cJSON_GetArraySize(pp) == 1 && wt_rf_item(j, p->qual)))
            continue;
        cJSON_ArrayForEach(line, pp)
        {
            line_name(line->string ? line->string : "", q, sizeof q);
            excerpt(s, r, line, q, p->metric, p->factor);
        }
    }
    /* Fans: Fan.SpeedPercent, PowerSupplyMetrics.FanSpeedPercent, EnvironmentMetrics array. */
    if ((v = wt_rf_item(j, "SpeedPercent")))
        fan_rpm(s, r, v, NULL);
    if ((v = wt_rf_item(j, "FanSpeedPercent")))
        fan_rpm(s, r, v, "fan");
    size_t i = 0;
    cJSON_ArrayForEach(v, wt_rf_item(j, "FanSpeedsPercent"))
    {
        const char *dn = wt_rf_str(v, "DeviceName");
        char dq[48];
        if (dn)
            wt_rf_sanitize(dn, dq, sizeof dq);
        else
            snprintf(dq, sizeof dq, "fan%zu", i);
        fan_rpm(s, r, v, dq);
        i++;
    }
    /* ThermalMetrics. */
    const cJSON *sum = wt_rf_item(j, "TemperatureSummaryCelsius");
    cJSON_ArrayForEach(v, sum)
    {
        size_t k = 0;
        for (; v->string && v->string[k] && k + 1 < sizeof q; k++)
            q[k] = (char)tolower((unsigned char)v->string[k]);
        q[k] = '\0';
        excerpt(s, r, v, q, WT_M_FAC_TEMP_C, 1);
    }
    i = 0;
    cJSON_ArrayForEach(v, wt_rf_item(j, "TemperatureReadingsCelsius"))
    {
        const char *dn = wt_rf_str(v, "DeviceName");
        if (dn)
            wt_rf_sanitize(dn, q, sizeof q);
        else
            snprintf(q, sizeof q, "temp%zu", i);
        excerpt(s, r, v, q, WT_M_FAC_TEMP_C, 1);
        i++;
    }
}

static void parse_sensor(struct rf *s, const struct resource *r, const cJSON *j)
{
    int metric;
    double factor, x;
    if (seen(s, r->uri))
        return;
    mark_seen(s, r->uri);
    if (wt_rf_sensor_metric(j, &metric, &factor) && wt_rf_number(wt_rf_item(j, "Reading"), &x))
        emit(s, r, NULL, NULL, metric, x * factor);
}

/* Chassis Power (deprecated schema): PowerControl and PowerSupplies arrays. */
static void parse_power_legacy(struct rf *s, const struct resource *r, const cJSON *j)
{
    const cJSON *v;
    double x;
    char q[64], id[32];
    int n = cJSON_GetArraySize(wt_rf_item(j, "PowerControl")), i = 0;
    cJSON_ArrayForEach(v, wt_rf_item(j, "PowerControl"))
    {
        const char *mid = wt_rf_str(v, "MemberId");
        snprintf(id, sizeof id, "%s", mid ? mid : "");
        if (!mid)
            snprintf(id, sizeof id, "%d", i);
        wt_rf_sanitize(id, q, sizeof q);
        if (!r->skip_power_control && wt_rf_number(wt_rf_item(v, "PowerConsumedWatts"), &x))
            emit(s, r, NULL, n > 1 ? q : NULL, WT_M_FAC_POWER_W, x);
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(v, wt_rf_item(j, "PowerSupplies"))
    {
        const char *mid = wt_rf_str(v, "MemberId");
        char sid[32], qi[64];
        if (mid)
            wt_rf_sanitize(mid, sid, sizeof sid);
        else
            snprintf(sid, sizeof sid, "%d", i);
        /* Dell's MemberIds ("PSU.Slot.1") say what they are; plain numbers get "psu". */
        const char *pre = isdigit((unsigned char)sid[0]) ? "psu" : "";
        snprintf(q, sizeof q, "%s%s/input", pre, sid);
        if (wt_rf_number(wt_rf_item(v, "PowerInputWatts"), &x))
            emit(s, r, "psu", q, WT_M_FAC_POWER_W, x);
        if (wt_rf_number(wt_rf_item(v, "LineInputVoltage"), &x))
            emit(s, r, "psu", q, WT_M_FAC_VOLTAGE_V, x);
        snprintf(qi, sizeof qi, "%s%s/output", pre, sid);
        if (wt_rf_number(wt_rf_item(v, "LastPowerOutputWatts"), &x))
            emit(s, r, "psu", qi, WT_M_FAC_POWER_W, x);
        i++;
    }
}

/* Chassis Thermal (deprecated schema): Temperatures and Fans arrays. */
static void parse_thermal_legacy(struct rf *s, const struct resource *r, const cJSON *j)
{
    const cJSON *v;
    double x;
    char q[48];
    int i = 0;
    cJSON_ArrayForEach(v, wt_rf_item(j, "Temperatures"))
    {
        const char *nm = wt_rf_str(v, "Name");
        if (nm)
            wt_rf_sanitize(nm, q, sizeof q);
        else
            snprintf(q, sizeof q, "temp%d", i);
        if (wt_rf_number(wt_rf_item(v, "ReadingCelsius"), &x))
            emit(s, r, NULL, q, WT_M_FAC_TEMP_C, x);
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(v, wt_rf_item(j, "Fans"))
    {
        const char *nm = wt_rf_str(v, "Name") ? wt_rf_str(v, "Name") : wt_rf_str(v, "FanName");
        const char *units = wt_rf_str(v, "ReadingUnits");
        if (nm)
            wt_rf_sanitize(nm, q, sizeof q);
        else
            snprintf(q, sizeof q, "fan%d", i);
        /* Older services give percent here; only RPM is a fan speed we export. */
        if ((!units || strcmp(units, "RPM") == 0) && wt_rf_number(wt_rf_item(v, "Reading"), &x))
            emit(s, r, "fan", q, WT_M_FAC_FAN_RPM, x);
        i++;
    }
}

static void emit_info(struct rf *s, const struct resource *r)
{
    char labels[WT_LABELS_LEN];
    if (s->add_rc)
        return;
    int rc = wt_labels(labels, sizeof labels, "source", "redfish", "target", s->t.name, "point",
                       r->point, "kind", r->kindl, "vendor", r->vendor, "model", r->model, NULL);
    if (!rc)
        rc = wt_fac_place_labels(labels, sizeof labels, &s->t.place);
    if (rc)
        return;
    s->add_rc = wt_batch_add(s->out, WT_M_FAC_INFO, labels, s->t_ns, 1);
}

/*
 * GETs every kept resource. Returns 0, or -EIO when the service stopped answering; sets
 * *relayout on a 404. ok/failed count the resources read and not.
 */
static int poll_resources(struct rf *s, bool *relayout, size_t *ok, size_t *failed,
                          struct wt_err *first, struct wt_err *err)
{
    clear_seen(s);
    for (size_t i = 0; i < s->nres && !s->add_rc; i++) {
        struct resource *r = &s->res[i];
        cJSON *j = NULL;
        struct wt_err e = {{0}};
        if (r->kind == R_INFO) {
            emit_info(s, r);
            continue;
        }
        int rc = wt_rf_get_json(&s->c, r->uri, &j, &e);
        if (rc == -EIO || rc == -EACCES) {
            *err = e;
            return rc;
        }
        if (rc == -ENOENT) {
            *relayout = true;
            *first = e;
            return 0;
        }
        if (rc) {
            if (!*failed)
                *first = e;
            (*failed)++;
            continue;
        }
        switch (r->kind) {
        case R_GENERIC:
            parse_generic(s, r, j);
            break;
        case R_SENSOR:
            parse_sensor(s, r, j);
            break;
        case R_POWER_LEGACY:
            parse_power_legacy(s, r, j);
            break;
        case R_THERMAL_LEGACY:
            parse_thermal_legacy(s, r, j);
            break;
        case R_INFO:
            break;
        }
        cJSON_Delete(j);
        (*ok)++;
    }
    return 0;
}

static int poll_walked(struct rf *s, struct wt_err *err);

/* A poll (collect/facility.h's read): the walk when due, then every kept resource. */
static int rf_read(struct wt_fac *f, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct rf *s = (struct rf *)f;
    s->t_ns = t_ns;
    s->out = out;
    s->out_start = out->len;
    s->add_rc = 0;
    s->c.have_date = false;
    s->c.deadline_mono = wt_now_mono_ns() + WT_REDFISH_POLL_TIMEOUTS * s->t.timeout_ns;
    int rc = poll_walked(s, err);
    s->c.deadline_mono = 0;
    return rc;
}

static int poll_walked(struct rf *s, struct wt_err *err)
{
    struct wt_batch *out = s->out;
    int64_t t_ns = s->t_ns;
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t ok = 0, failed = 0;
        bool relayout = false;
        struct wt_err first = {{0}};
        if (!s->walked) {
            int rc = walk(s, err);
            if (rc)
                return rc;
        }
        int rc = poll_resources(s, &relayout, &ok, &failed, &first, err);
        if (rc)
            return rc;
        if (relayout) {
            /* The service moved things (firmware update, new chassis): walk again, once. */
            wt_info("redfish", "%s: %s; walking the service again", s->t.name, first.msg);
            s->walked = false;
            wt_batch_clear(out);
            s->out_start = 0;
            s->add_rc = 0;
            continue;
        }
        if (s->add_rc) {
            wt_err_set(err, "out of memory");
            return s->add_rc;
        }
        if (failed) {
            if (ok == 0) {
                *err = first;
                return -EPROTO;
            }
            wt_fac_partial(&s->f, "%zu of %zu resources not read: %s", failed, ok + failed,
                           first.msg);
        }
        if (s->c.have_date && wt_fac_skew(&s->f, s->c.date_s, s->c.date_before_ns,
                                          s->c.date_after_ns, t_ns, out) != 0)
            return wt_err_set(err, "out of memory"), -ENOMEM;
        return 0;
    }
    wt_err_set(err, "%s: resources keep moving (404 after a fresh walk)", s->t.name);
    return -EIO;
}

/* ---- open / close ---- */

/* What rf_open and the polls made (collect/facility.h's close): the session, the handle. */
static void rf_release(struct wt_fac *f)
{
    struct rf *s = (struct rf *)f;
    wt_rf_client_close(&s->c);
    free_resources(s);
    free(s->res);
    clear_seen(s);
    free(s->seen);
    free(s->ctrs);
}

/* Target i's state once parsed (collect/facility.h's open): its HTTP client. */
static int rf_open(struct wt_fac *f, const struct wt_config *cfg, struct wt_err *err)
{
    struct rf *s = (struct rf *)f;
    (void)cfg;
    return wt_rf_client_open(&s->c, &s->t, err);
}

void wt_redfish_serve(void *state, wt_redfish_serve_fn fn, void *ctx)
{
    struct rf *s = state;
    s->c.serve = fn;
    s->c.serve_ctx = ctx;
}

/* The loop (core/loop.c) and facility.c run each service; rf_read reads it. */
WT_FAC_COLLECTOR(wt_redfish_collector, wt_redfish_config_check, redfish, "Redfish",
                 struct wt_redfish_target, parse_target, NULL, struct rf, rf_open, rf_read,
                 rf_release);
