/* SPDX-License-Identifier: MIT */
/*
 * The `topology` and `facility` config sections (see topology.h): nodes in racks in zones, the
 * facility meters and their roles, and the constants and bounds the KPIs and the reconciliation
 * use. Parsing only; the figures are in kpi.c and reconcile.c.
 */
#include "audit/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/yget.h"

static const char *const role_names[] = {"facility_total",
                                         "it_total",
                                         "cooling",
                                         "water_litres",
                                         "heat_reused",
                                         "pdu_outlet",
                                         "bmc",
                                         "ups_output",
                                         "pdu_output",
                                         "it_input",
                                         "onsite_generation",
                                         "exported",
                                         "water_potable",
                                         "purchased_cooling",
                                         "heat_removed",
                                         "fuel",
                                         NULL};
static const char *const fuel_names[] = {"",         "diesel",     "natural_gas",
                                         "hydrogen", "bioethanol", NULL};

const char *wt_fuel_name(enum wt_fuel f)
{
    return (int)f >= 0 && f < WT_FUEL_COUNT ? fuel_names[f] : "?";
}

bool wt_fuel_by_mass(enum wt_fuel f)
{
    return f == WT_FUEL_HYDROGEN;
}

bool wt_role_is_heat(enum wt_role r)
{
    return r == WT_ROLE_HEAT_REUSED || r == WT_ROLE_PURCHASED_COOLING || r == WT_ROLE_HEAT_REMOVED;
}

const char *wt_role_name(enum wt_role r)
{
    return r < WT_ROLE_COUNT ? role_names[r] : "?";
}

static const char *const topo_keys[] = {"node",  "rack",  "zone",   "design_it_watts",
                                        "racks", "nodes", "meters", NULL};
static const char *const fac_keys[] = {
    "pue_assumed", "wue_assumed",  "part_load_bands", "part_load_interval", "min_coverage",
    "kpi_window",  "kpi_interval", "reconcile",       "ashrae_class",       NULL};
static const char *const rec_keys[] = {"chips_tolerance", "drift_bound", "interval", NULL};
static const char *const meter_keys[] = {"target", "point", "match", "role",  "node",
                                         "rack",   "zone",  "fuel",  "feeds", NULL};
static const char *const rack_keys[] = {"name", "zone", NULL};
static const char *const node_keys[] = {"name", "rack", "zone", NULL};

static void defaults(struct wt_topology *t)
{
    memset(t, 0, sizeof *t);
    if (gethostname(t->node, sizeof t->node - 1) != 0 || !t->node[0])
        snprintf(t->node, sizeof t->node, "localhost");
    t->wue_assumed = -1;
    static const double b[] = {0, 25, 50, 75, 100};
    memcpy(t->bands, b, sizeof b);
    t->nbands = 5;
    t->part_load_interval_ns = 15 * 60 * WT_NS_PER_S;
    t->min_coverage = 0.9;
    t->kpi_window_ns = 15 * 60 * WT_NS_PER_S;
    t->kpi_interval_ns = 30 * WT_NS_PER_S;
    t->chips_tolerance = 0.02;
    t->drift_bound = 0.10;
    t->reconcile_interval_ns = 5 * 60 * WT_NS_PER_S;
    for (int i = 0; i < 4; i++)
        t->power_gap_ns[i] = 30 * WT_NS_PER_S;
    t->export_lag_ns = 11 * WT_NS_PER_S;
}

/* A name: letters, digits and . _ - : / (they become label values and messages). */
static int name_ok(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                   const char *key, const char *v)
{
    char p[256];
    for (const char *c = v; *c; c++) {
        unsigned char ch = (unsigned char)*c;
        if (ch < 0x20 || ch == '"' || ch == '\\' || ch == 0x7f)
            return wt_y_fail(g, wt_y_get(map, key), wt_y_path(p, sizeof p, path, key),
                             "expected a name without quotes, backslashes or control "
                             "characters");
    }
    return 0;
}

static int name_at(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                   const char *key, bool required, char *out, size_t n)
{
    int rc = wt_y_string(g, map, path, key, required, out, n);
    return rc ? rc : name_ok(g, map, path, key, out);
}

static int parse_meter(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                       struct wt_meter *out)
{
    char p[256];
    int role = -1, rc;
    memset(out, 0, sizeof *out);
    out->line = m->line;
    if (m->kind != WT_YNODE_MAP)
        return wt_y_fail(g, m, path,
                         "expected a meter such as {target: pdu-a1, point: outlet3, role: "
                         "pdu_outlet, node: gpu-01}");
    if ((rc = wt_y_keys(g, m, path, meter_keys)) ||
        (rc = name_at(g, m, path, "target", true, out->target, sizeof out->target)) ||
        (rc = name_at(g, m, path, "point", false, out->point, sizeof out->point)) ||
        (rc = name_at(g, m, path, "node", false, out->node, sizeof out->node)) ||
        (rc = name_at(g, m, path, "rack", false, out->rack, sizeof out->rack)) ||
        (rc = name_at(g, m, path, "zone", false, out->zone, sizeof out->zone)))
        return rc;
    if (!wt_y_get(m, "role"))
        return wt_y_fail(g, m, wt_y_path(p, sizeof p, path, "role"), "required (one of %s)",
                         "facility_total, it_total, cooling, water_litres, heat_reused, "
                         "pdu_outlet, bmc, ups_output, pdu_output, it_input, "
                         "onsite_generation, exported, water_potable, purchased_cooling, "
                         "heat_removed, fuel");
    if ((rc = wt_y_enum(g, m, path, "role", role_names, &role)))
        return rc;
    out->role = (enum wt_role)role;
    if ((rc = name_at(g, m, path, "feeds", false, out->feeds, sizeof out->feeds)))
        return rc;
    if (out->role == WT_ROLE_FUEL) {
        int f = 0;
        if (!wt_y_get(m, "fuel"))
            return wt_y_fail(g, wt_y_get(m, "role"), wt_y_path(p, sizeof p, path, "fuel"),
                             "required for role fuel (one of diesel, natural_gas, hydrogen, "
                             "bioethanol)");
        if ((rc = wt_y_enum(g, m, path, "fuel", fuel_names + 1, &f)))
            return rc;
        out->fuel = (enum wt_fuel)(f + 1);
    } else if (wt_y_get(m, "fuel") || out->feeds[0]) {
        const char *k = wt_y_get(m, "fuel") ? "fuel" : "feeds";
        return wt_y_fail(g, wt_y_get(m, k), wt_y_path(p, sizeof p, path, k), "only for role fuel");
    }
    if ((out->role == WT_ROLE_PDU_OUTLET || out->role == WT_ROLE_BMC) && !out->node[0])
        return wt_y_fail(g, wt_y_get(m, "role"), wt_y_path(p, sizeof p, path, "node"),
                         "required for role %s (the node it feeds)", role_names[role]);
    const struct wt_ynode *mt = wt_y_get(m, "match");
    wt_y_path(p, sizeof p, path, "match");
    if (mt && !wt_ynode_is_null(mt)) {
        if (mt->kind != WT_YNODE_MAP)
            return wt_y_fail(g, mt, p, "expected label: value pairs such as {kind: inlet}");
        for (size_t i = 0; i < mt->n; i++) {
            const struct wt_ynode *e = mt->child[i];
            char pk[256];
            wt_y_path(pk, sizeof pk, p, e->key);
            if (e->kind != WT_YNODE_SCALAR)
                return wt_y_fail(g, e, pk, "expected a label value");
            if (strcmp(e->key, "target") == 0 || strcmp(e->key, "point") == 0)
                return wt_y_fail(g, e, pk, "set %s beside match, not in it", e->key);
            for (const char *c = e->key; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
                      (c != e->key && *c >= '0' && *c <= '9')))
                    return wt_y_fail(g, e, pk, "expected a label name [a-zA-Z_][a-zA-Z0-9_]*");
            if (wt_labels_add(out->match, sizeof out->match, e->key, e->value) != 0)
                return wt_y_fail(g, e, pk, "too many labels");
        }
    }
    /* A target has several points (inlets, phases, outlets, PSUs) that would add up: name the
     * one that measures the role. A water or heat meter is one counter; a BMC's own reading of
     * the node is its chassis power. */
    if (!out->point[0] && !out->match[0]) {
        if (out->role == WT_ROLE_BMC)
            (void)wt_labels(out->match, sizeof out->match, "kind", "chassis", NULL);
        else if (out->role != WT_ROLE_WATER && out->role != WT_ROLE_WATER_POTABLE &&
                 out->role != WT_ROLE_FUEL && !wt_role_is_heat(out->role))
            return wt_y_fail(g, m, wt_y_path(p, sizeof p, path, "point"),
                             "required for role %s, or a match such as {kind: outlet} (the "
                             "points of a target would add up)",
                             role_names[role]);
    }
    return 0;
}

static int parse_topology(const struct wt_yget *g, const struct wt_ynode *n, struct wt_topology *t)
{
    char p[256];
    int rc;
    if ((rc = wt_y_keys(g, n, "topology", topo_keys)) ||
        (rc = name_at(g, n, "topology", "node", false, t->node, sizeof t->node)) ||
        (rc = name_at(g, n, "topology", "rack", false, t->rack, sizeof t->rack)) ||
        (rc = name_at(g, n, "topology", "zone", false, t->zone, sizeof t->zone)) ||
        (rc = wt_y_double(g, n, "topology", "design_it_watts", 0, 1e12, &t->design_it_w)))
        return rc;
    if (!t->node[0])
        return wt_y_fail(g, wt_y_get(n, "node"), "topology.node", "expected a node name");

    const struct wt_ynode *racks = wt_y_get(n, "racks");
    if ((rc = wt_y_seq(g, racks, "topology.racks")))
        return rc;
    for (size_t i = 0; racks && racks->kind == WT_YNODE_SEQ && i < racks->n; i++) {
        const struct wt_ynode *r = racks->child[i];
        wt_y_index(p, sizeof p, "topology.racks", i);
        if (t->nracks == WT_TOPO_MAX_RACKS)
            return wt_y_fail(g, r, p, "at most %d racks", WT_TOPO_MAX_RACKS);
        if (r->kind != WT_YNODE_MAP)
            return wt_y_fail(g, r, p, "expected {name: RACK, zone: ZONE}");
        struct wt_topo_rack *k = &t->racks[t->nracks];
        if ((rc = wt_y_keys(g, r, p, rack_keys)) ||
            (rc = name_at(g, r, p, "name", true, k->name, sizeof k->name)) ||
            (rc = name_at(g, r, p, "zone", false, k->zone, sizeof k->zone)))
            return rc;
        for (size_t j = 0; j < t->nracks; j++)
            if (strcmp(t->racks[j].name, k->name) == 0)
                return wt_y_fail(g, r, p, "rack \"%s\" is listed twice", k->name);
        t->nracks++;
    }

    /* nodes[0] is this node */
    struct wt_topo_node *self = &t->nodes[0];
    snprintf(self->name, sizeof self->name, "%s", t->node);
    snprintf(self->rack, sizeof self->rack, "%s", t->rack);
    snprintf(self->zone, sizeof self->zone, "%s", t->zone);
    t->nnodes = 1;
    const struct wt_ynode *nodes = wt_y_get(n, "nodes");
    if ((rc = wt_y_seq(g, nodes, "topology.nodes")))
        return rc;
    for (size_t i = 0; nodes && nodes->kind == WT_YNODE_SEQ && i < nodes->n; i++) {
        const struct wt_ynode *r = nodes->child[i];
        wt_y_index(p, sizeof p, "topology.nodes", i);
        if (t->nnodes == WT_TOPO_MAX_NODES)
            return wt_y_fail(g, r, p, "at most %d nodes", WT_TOPO_MAX_NODES - 1);
        if (r->kind != WT_YNODE_MAP)
            return wt_y_fail(g, r, p, "expected {name: NODE, rack: RACK}");
        struct wt_topo_node k = {{0}};
        if ((rc = wt_y_keys(g, r, p, node_keys)) ||
            (rc = name_at(g, r, p, "name", true, k.name, sizeof k.name)) ||
            (rc = name_at(g, r, p, "rack", false, k.rack, sizeof k.rack)) ||
            (rc = name_at(g, r, p, "zone", false, k.zone, sizeof k.zone)))
            return rc;
        size_t j = 0;
        while (j < t->nnodes && strcmp(t->nodes[j].name, k.name) != 0)
            j++;
        if (j == 0) {
            /* this node listed again: it may give its rack or zone there */
            if (k.rack[0])
                snprintf(self->rack, sizeof self->rack, "%s", k.rack);
            if (k.zone[0])
                snprintf(self->zone, sizeof self->zone, "%s", k.zone);
            continue;
        }
        if (j < t->nnodes)
            return wt_y_fail(g, r, p, "node \"%s\" is listed twice", k.name);
        t->nodes[t->nnodes++] = k;
    }

    const struct wt_ynode *meters = wt_y_get(n, "meters");
    if ((rc = wt_y_seq(g, meters, "topology.meters")))
        return rc;
    for (size_t i = 0; meters && meters->kind == WT_YNODE_SEQ && i < meters->n; i++) {
        const struct wt_ynode *m = meters->child[i];
        wt_y_index(p, sizeof p, "topology.meters", i);
        if (t->nmeters == WT_TOPO_MAX_METERS)
            return wt_y_fail(g, m, p, "at most %d meters", WT_TOPO_MAX_METERS);
        if ((rc = parse_meter(g, m, p, &t->meters[t->nmeters])))
            return rc;
        const struct wt_meter *a = &t->meters[t->nmeters];
        for (size_t j = 0; j < t->nmeters; j++) {
            const struct wt_meter *b = &t->meters[j];
            if (strcmp(a->target, b->target) == 0 && strcmp(a->point, b->point) == 0 &&
                strcmp(a->match, b->match) == 0 && a->role == b->role &&
                strcmp(a->node, b->node) == 0 && strcmp(a->zone, b->zone) == 0)
                return wt_y_fail(g, m, p, "the same meter as on line %d", b->line);
        }
        t->nmeters++;
    }
    /* a fuel meter's feeds: an onsite_generation meter's target */
    for (size_t i = 0; i < t->nmeters; i++) {
        const struct wt_meter *a = &t->meters[i];
        size_t j = 0;
        if (!a->feeds[0])
            continue;
        while (j < t->nmeters && !(t->meters[j].role == WT_ROLE_ONSITE_GENERATION &&
                                   strcmp(t->meters[j].target, a->feeds) == 0))
            j++;
        if (j == t->nmeters) {
            char pf[256];
            wt_y_index(p, sizeof p, "topology.meters", i);
            return wt_y_fail(
                g, wt_y_get(meters->child[i], "feeds"), wt_y_path(pf, sizeof pf, p, "feeds"),
                "\"%s\" is no meter with role onsite_generation (its target)", a->feeds);
        }
    }
    return 0;
}

/* KPIs are computed from the store over windows of minutes: a tick under a second only spins. */
#define WHY_KPI_TICK                                                                               \
    "each tick queries the store over a window of minutes; more often than every second only "     \
    "spins, less often than daily is no longer a gauge"

static int parse_facility(const struct wt_yget *g, const struct wt_ynode *n, struct wt_topology *t)
{
    char p[256];
    int rc;
    if ((rc = wt_y_keys(g, n, "facility", fac_keys)) ||
        (rc = wt_y_double(g, n, "facility", "pue_assumed", 1, 10, &t->pue_assumed)) ||
        (rc = wt_y_double(g, n, "facility", "wue_assumed", 0, 1000, &t->wue_assumed)) ||
        (rc = wt_y_duration_in(g, n, "facility", "part_load_interval", false, WT_Y_S,
                               86400 * WT_Y_S, WHY_KPI_TICK, &t->part_load_interval_ns)) ||
        (rc = wt_y_double(g, n, "facility", "min_coverage", 0, 1, &t->min_coverage)) ||
        (rc = wt_y_duration(g, n, "facility", "kpi_window", false, &t->kpi_window_ns)) ||
        (rc = wt_y_duration_in(g, n, "facility", "kpi_interval", false, WT_Y_S, 86400 * WT_Y_S,
                               WHY_KPI_TICK, &t->kpi_interval_ns)))
        return rc;
    /* the ASHRAE class whose envelopes inlet air is judged against (audit/ashrae.h) */
    static const char *const classes[] = {"A1", "A2", "A3", "A4", NULL};
    int cls = (int)t->ashrae_class;
    if ((rc = wt_y_enum(g, n, "facility", "ashrae_class", classes, &cls)))
        return rc;
    t->ashrae_class = (enum wt_ashrae_class)cls;
    const struct wt_ynode *b = wt_y_get(n, "part_load_bands");
    if (b && !wt_ynode_is_null(b)) {
        if (b->kind != WT_YNODE_SEQ || b->n < 2 || b->n > WT_TOPO_MAX_BANDS)
            return wt_y_fail(g, b, "facility.part_load_bands",
                             "expected a list of 2 to %d increasing percentages such as "
                             "[0, 25, 50, 75, 100]",
                             WT_TOPO_MAX_BANDS);
        for (size_t i = 0; i < b->n; i++) {
            const struct wt_ynode *e = b->child[i];
            char *end = NULL;
            wt_y_index(p, sizeof p, "facility.part_load_bands", i);
            double v = e->kind == WT_YNODE_SCALAR ? strtod(e->value, &end) : -1;
            if (e->kind != WT_YNODE_SCALAR || end == e->value || *end || v < 0 || v > 1000)
                return wt_y_fail(g, e, p, "expected a percentage 0..1000 (got %s)",
                                 e->kind == WT_YNODE_SCALAR ? e->value : "a collection");
            if (i && v <= t->bands[i - 1])
                return wt_y_fail(g, e, p, "expected edges in increasing order (%g after %g)", v,
                                 t->bands[i - 1]);
            t->bands[i] = v;
        }
        t->nbands = b->n;
    }
    const struct wt_ynode *r = wt_y_get(n, "reconcile");
    if ((rc = wt_y_keys(g, r, "facility.reconcile", rec_keys)) ||
        (rc = wt_y_double(g, r, "facility.reconcile", "chips_tolerance", 0, 1,
                          &t->chips_tolerance)) ||
        (rc = wt_y_double(g, r, "facility.reconcile", "drift_bound", 0, 1, &t->drift_bound)) ||
        (rc = wt_y_duration_in(g, r, "facility.reconcile", "interval", false, WT_Y_S,
                               86400 * WT_Y_S, WHY_KPI_TICK, &t->reconcile_interval_ns)))
        return rc;
    return 0;
}

int wt_topology_parse(const char *file, const struct wt_ynode *topology,
                      const struct wt_ynode *facility, const struct wt_config *cfg,
                      struct wt_topology *t, struct wt_err *err)
{
    struct wt_yget g = {file, err};
    int rc;
    defaults(t);
    snprintf(t->file, sizeof t->file, "%s", file);
    if (cfg) {
        const struct wt_collector_config *cc[4] = {&cfg->collectors.snmp, &cfg->collectors.redfish,
                                                   &cfg->collectors.modbus, &cfg->collectors.ipmi};
        int64_t longest = 0;
        for (int i = 0; i < 4; i++) {
            int64_t iv = wt_config_interval(cfg, cc[i]);
            t->power_gap_ns[i] = 3 * iv;
            if (iv > longest)
                longest = iv;
        }
        t->export_lag_ns = longest + cfg->store.flush_ns;
    }
    if ((rc = parse_topology(&g, topology, t)) || (rc = parse_facility(&g, facility, t)))
        return rc;
    return 0;
}

int wt_topology_load(const struct wt_config *cfg, struct wt_topology **out, struct wt_err *err)
{
    struct wt_topology *t = malloc(sizeof *t);
    *out = NULL;
    if (!t)
        return -ENOMEM;
    int rc = wt_topology_parse(wt_config_file(cfg), wt_config_section(cfg, "topology"),
                               wt_config_section(cfg, "facility"), cfg, t, err);
    if (rc) {
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int wt_topology_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_topology *t = malloc(sizeof *t);
    if (!t)
        return -ENOMEM;
    int rc = wt_topology_parse(file, node, NULL, NULL, t, err);
    free(t);
    return rc;
}

int wt_facility_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_topology *t = malloc(sizeof *t);
    if (!t)
        return -ENOMEM;
    int rc = wt_topology_parse(file, NULL, node, NULL, t, err);
    free(t);
    return rc;
}

const char *wt_topology_rack_zone(const struct wt_topology *t, const char *rack)
{
    for (size_t i = 0; rack[0] && i < t->nracks; i++)
        if (strcmp(t->racks[i].name, rack) == 0)
            return t->racks[i].zone;
    return "";
}

static const struct wt_topo_node *find_node(const struct wt_topology *t, const char *node)
{
    if (!node[0])
        return &t->nodes[0];
    for (size_t i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].name, node) == 0)
            return &t->nodes[i];
    return NULL;
}

const char *wt_topology_node_rack(const struct wt_topology *t, const char *node)
{
    const struct wt_topo_node *n = find_node(t, node);
    return n ? n->rack : "";
}

const char *wt_topology_node_zone(const struct wt_topology *t, const char *node)
{
    const struct wt_topo_node *n = find_node(t, node);
    if (!n)
        return "";
    return n->zone[0] ? n->zone : wt_topology_rack_zone(t, n->rack);
}

const char *wt_topology_meter_zone(const struct wt_topology *t, const struct wt_meter *m)
{
    if (m->zone[0])
        return m->zone;
    if (m->rack[0])
        return wt_topology_rack_zone(t, m->rack);
    if (m->node[0])
        return wt_topology_node_zone(t, m->node);
    return "";
}

bool wt_meter_matches(const struct wt_meter *m, const char *labels)
{
    char v[WT_LABELS_LEN], k[64], want[WT_LABELS_LEN];
    size_t pos = 0;
    int rc;
    if (wt_labels_get(labels, "target", v, sizeof v) != 0 || strcmp(v, m->target) != 0)
        return false;
    if (m->point[0] &&
        (wt_labels_get(labels, "point", v, sizeof v) != 0 || strcmp(v, m->point) != 0))
        return false;
    while ((rc = wt_labels_next(m->match, &pos, k, sizeof k, want, sizeof want)) == 1) {
        if (wt_labels_get(labels, k, v, sizeof v) != 0 || strcmp(v, want) != 0)
            return false;
    }
    return rc == 0;
}
