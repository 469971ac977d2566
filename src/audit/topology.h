/* SPDX-License-Identifier: MIT */
/*
 * Where things are and what the facility meters measure: the config sections `topology` (this
 * node's name, rack and zone; other nodes and racks; the design IT capacity; the meters and their
 * roles) and `facility` (assumed constants, part-load bands, the KPI export window, the
 * reconciliation bounds). Both are module-owned sections (core/config.h), checked at load.
 *
 *   topology:
 *     node: gpu-01              # default: the host name; the store's own series ("") are its
 *     rack: r1
 *     zone: hall-a
 *     design_it_watts: 120000   # design IT capacity: part-load bands are shares of it
 *     racks: [{name: r1, zone: hall-a}]
 *     nodes: [{name: gpu-02, rack: r1}]        # zone from the rack unless given
 *     meters:
 *       - {target: main, point: total, role: facility_total}
 *       - {target: pdu-a1, point: outlet3, role: pdu_outlet, node: gpu-01}
 *       - {target: ups1, match: {kind: ups_output}, role: it_total, zone: hall-a}
 *   facility:
 *     pue_assumed: 1.4          # used (flagged "assumed") when no facility_total meter covers
 *     wue_assumed: 1.8          # L/kWh, used when no water meter exists
 *     part_load_bands: [0, 25, 50, 75, 100]    # % of design_it_watts
 *     part_load_interval: 15m
 *     min_coverage: 0.9         # a meter covering less of a window does not make it "measured"
 *     kpi_window: 15m           # the daemon's exported gauges: over the last kpi_window,
 *     kpi_interval: 30s         # recomputed every kpi_interval
 *     reconcile: {chips_tolerance: 0.02, drift_bound: 0.10, interval: 5m}
 *
 * A meter selects facility series (wattage_facility_*) by their labels: target (required),
 * point and match (any other labels, e.g. source or kind); every point it matches is summed.
 * point or match is required (a target's inlets, phases and outlets would add up), except for
 * water_litres and heat_reused (one counter each) and bmc (default match {kind: chassis}: the
 * BMC's reading of the whole node). Its energy is the device's energy counter when it has one,
 * else its power integrated (see meters.h).
 */
#ifndef WT_TOPOLOGY_H
#define WT_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/ashrae.h"
#include "core/err.h"
#include "core/reading.h"

struct wt_config;
struct wt_ynode;

enum wt_role {
    WT_ROLE_FACILITY_TOTAL, /* everything the facility draws (utility meter, main switchboard) */
    WT_ROLE_IT_TOTAL,       /* everything the IT equipment draws (UPS output, PDU inlets) */
    WT_ROLE_COOLING,        /* chillers, CRAHs, CDU pumps */
    WT_ROLE_WATER,          /* water consumed (cubic metres counter; WUE in litres) */
    WT_ROLE_HEAT_REUSED,    /* heat delivered for reuse (heat meter; ERF) */
    WT_ROLE_PDU_OUTLET,     /* the wall power of one node (its outlets, summed) */
    WT_ROLE_BMC,            /* a node's own power as its BMC reports it */
    /* Where E_IT is metered, for the standards' PUE category (audit/statement.h): */
    WT_ROLE_UPS_OUTPUT, /* UPS output: category 1 */
    WT_ROLE_PDU_OUTPUT, /* PDU output: category 2 */
    WT_ROLE_IT_INPUT,   /* IT equipment input (server PSU inlets): category 3 */
    /* What else crosses the data centre's boundary (E_DC): */
    WT_ROLE_ONSITE_GENERATION, /* on-site generation, metered at its output */
    WT_ROLE_EXPORTED,          /* energy exported from the site (not counted in E_DC) */
    WT_ROLE_WATER_POTABLE,     /* potable water, part of water_litres (m3 counter) */
    WT_ROLE_PURCHASED_COOLING, /* purchased cooling fluid through a heat meter (heat counter) */
    WT_ROLE_HEAT_REMOVED,      /* heat removed by the cooling loops (heat counter; CER) */
    WT_ROLE_FUEL,              /* a fuel burnt on site (litres, m3 or kg counter; E_DC) */
    WT_ROLE_COUNT
};

/* True for the roles read from a heat counter (heat_reused, purchased_cooling, heat_removed). */
bool wt_role_is_heat(enum wt_role r);

/* The fuels of role fuel (meter key `fuel`); statement.fuel_factors converts them to energy. */
enum wt_fuel {
    WT_FUEL_NONE,
    WT_FUEL_DIESEL,
    WT_FUEL_NATURAL_GAS,
    WT_FUEL_HYDROGEN,
    WT_FUEL_BIOETHANOL
};
#define WT_FUEL_COUNT 5
/* "diesel", "natural_gas", ... ("" for none). */
const char *wt_fuel_name(enum wt_fuel f);
/* Whether the fuel is counted by mass (kg: hydrogen) rather than volume (m3). */
bool wt_fuel_by_mass(enum wt_fuel f);

/* "facility_total", "it_total", ... as written in the config. */
const char *wt_role_name(enum wt_role r);

#define WT_TOPO_NAME 64
#define WT_TOPO_MAX_METERS 256
#define WT_TOPO_MAX_NODES 512
#define WT_TOPO_MAX_RACKS 256
#define WT_TOPO_MAX_BANDS 12

struct wt_meter {
    char target[WT_TOPO_NAME];
    char point[WT_TOPO_NAME];  /* "" = every point of the target */
    char match[WT_LABELS_LEN]; /* further labels that must equal, canonical ("" none) */
    enum wt_role role;
    char node[WT_TOPO_NAME]; /* pdu_outlet, bmc: the node it feeds */
    char rack[WT_TOPO_NAME];
    char zone[WT_TOPO_NAME];  /* "" = site-wide (or the zone of its rack or node) */
    enum wt_fuel fuel;        /* role fuel: what it counts (required there) */
    char feeds[WT_TOPO_NAME]; /* role fuel: the onsite_generation meter (its target) it feeds */
    int line;                 /* where it is written */
};

struct wt_topo_rack {
    char name[WT_TOPO_NAME];
    char zone[WT_TOPO_NAME];
};

struct wt_topo_node {
    char name[WT_TOPO_NAME];
    char rack[WT_TOPO_NAME];
    char zone[WT_TOPO_NAME];
};

struct wt_topology {
    char file[256]; /* for messages */
    /* topology */
    char node[WT_TOPO_NAME]; /* this node: the name of the store's own series (node "") */
    char rack[WT_TOPO_NAME];
    char zone[WT_TOPO_NAME];
    double design_it_w; /* 0: unknown (no part-load bands) */
    struct wt_topo_rack racks[WT_TOPO_MAX_RACKS];
    size_t nracks;
    struct wt_topo_node nodes[WT_TOPO_MAX_NODES]; /* this node is always nodes[0] */
    size_t nnodes;
    struct wt_meter meters[WT_TOPO_MAX_METERS];
    size_t nmeters;
    /* facility */
    double pue_assumed;              /* 0: none */
    double wue_assumed;              /* L/kWh; < 0: none */
    double bands[WT_TOPO_MAX_BANDS]; /* band edges, % of design_it_w, increasing */
    size_t nbands;                   /* edges (bands = nbands - 1) */
    int64_t part_load_interval_ns;
    double min_coverage;
    int64_t kpi_window_ns, kpi_interval_ns;
    double chips_tolerance; /* chips above wall by more than this share: suspect */
    double drift_bound;     /* unaccounted share spread over the window above this: suspect */
    int64_t reconcile_interval_ns;
    enum wt_ashrae_class ashrae_class; /* facility.ashrae_class, default A1 */
    /* power integration: a span between power readings longer than this is a gap, per source
     * (3 intervals of collectors.<source>.interval); index 0 snmp, 1 redfish, 2 modbus, 3 ipmi */
    int64_t power_gap_ns[4];
    /* the exported gauges' window ends this long before now, so that the slowest facility
     * collector's latest reading and the store's latest flush are in it: the longest of
     * collectors.{snmp,redfish,modbus,ipmi}.interval plus store.flush_interval */
    int64_t export_lag_ns;
};

/*
 * Parses the two sections (either may be NULL: defaults) into *t. cfg (may be NULL) gives the
 * collectors' intervals for the power gaps. file names the config in messages. Returns 0 or
 * -EINVAL with err "file:LINE: topology.meters[2].role: expected one of ... (got ...)".
 */
int wt_topology_parse(const char *file, const struct wt_ynode *topology,
                      const struct wt_ynode *facility, const struct wt_config *cfg,
                      struct wt_topology *t, struct wt_err *err) WT_MUST_USE;

/* Parses cfg's sections. *out is malloc'd (free()). Returns 0, -EINVAL (err) or -ENOMEM. */
int wt_topology_load(const struct wt_config *cfg, struct wt_topology **out,
                     struct wt_err *err) WT_MUST_USE;

/* The checks registered in src/cli/sections.c. */
int wt_topology_check(const char *file, const struct wt_ynode *node, struct wt_err *err);
int wt_facility_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

/* The zone of a meter: its own, else its rack's, else its node's; "" when none. */
const char *wt_topology_meter_zone(const struct wt_topology *t, const struct wt_meter *m);
/* The zone and rack of a node ("" when unknown). The store's node "" is t->node. */
const char *wt_topology_node_zone(const struct wt_topology *t, const char *node);
const char *wt_topology_node_rack(const struct wt_topology *t, const char *node);
/* The zone of a rack ("" when unknown). */
const char *wt_topology_rack_zone(const struct wt_topology *t, const char *rack);

/* True when a series' labels are those of meter m (target, point, match). */
bool wt_meter_matches(const struct wt_meter *m, const char *labels);

#endif
