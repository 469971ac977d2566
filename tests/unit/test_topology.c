/* SPDX-License-Identifier: MIT */
/* The topology and facility sections: values, defaults, zones of meters, and file:line errors. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/topology.h"
#include "core/config.h"
#include "runner.h"

/* Loads yaml as a whole config file (so the registered section checks run). */
static int load(const char *yaml, struct wt_config *cfg, struct wt_err *err)
{
    wt_config_defaults(cfg);
    return wt_config_load_string("w.yaml", yaml, strlen(yaml), cfg, err);
}

static struct wt_topology *topo(const char *yaml)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_topology *t = NULL;
    if (load(yaml, &cfg, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "load: %s", err.msg);
    if (wt_topology_load(&cfg, &t, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "topology: %s", err.msg);
    wt_config_free(&cfg);
    return t;
}

WT_TEST(defaults_without_sections)
{
    struct wt_topology *t = topo("daemon:\n  interval: 2s\n");
    char host[64] = "";
    WT_EQ_INT(gethostname(host, sizeof host - 1), 0);
    WT_EQ_STR(t->node, host);
    WT_EQ_INT(t->nmeters, 0);
    WT_EQ_INT(t->nnodes, 1);
    WT_EQ_INT(t->nbands, 5);
    WT_NEAR(t->bands[1], 25, 0);
    WT_NEAR(t->bands[4], 100, 0);
    WT_NEAR(t->pue_assumed, 0, 0);
    WT_ASSERT(t->wue_assumed < 0);
    WT_EQ_INT(t->kpi_window_ns, 900LL * 1000000000);
    WT_NEAR(t->min_coverage, 0.9, 1e-12);
    /* power gaps: 3 collector intervals (snmp 10 s, redfish 10 s, modbus 5 s) */
    WT_EQ_INT(t->power_gap_ns[0], 30LL * 1000000000);
    WT_EQ_INT(t->power_gap_ns[2], 15LL * 1000000000);
    /* the export window ends the slowest facility interval plus a flush before now */
    WT_EQ_INT(t->export_lag_ns, 11LL * 1000000000);
    free(t);
}

WT_TEST(values_and_zones)
{
    struct wt_topology *t = topo("topology:\n"
                                 "  node: n1\n"
                                 "  rack: r1\n"
                                 "  design_it_watts: 250000\n"
                                 "  racks: [{name: r1, zone: z1}, {name: r2, zone: z2}]\n"
                                 "  nodes:\n"
                                 "    - {name: n2, rack: r2}\n"
                                 "    - {name: n3, zone: z3}\n"
                                 "  meters:\n"
                                 "    - {target: pdu, point: o1, role: pdu_outlet, node: n2}\n"
                                 "    - target: ups\n"
                                 "      match: {kind: ups_output, source: snmp}\n"
                                 "      role: it_total\n"
                                 "      zone: z9\n"
                                 "    - {target: main, point: total, role: facility_total}\n"
                                 "    - {target: bmc1, role: bmc, node: n1}\n"
                                 "facility:\n"
                                 "  pue_assumed: 1.35\n"
                                 "  wue_assumed: 0\n"
                                 "  part_load_bands: [10, 30, 60, 100, 120]\n"
                                 "  kpi_window: 5m\n"
                                 "  reconcile: {chips_tolerance: 0.05, drift_bound: 0.2, "
                                 "interval: 1m}\n");
    WT_EQ_STR(t->node, "n1");
    WT_NEAR(t->design_it_w, 250000, 0);
    WT_EQ_INT(t->nnodes, 3);
    WT_EQ_INT(t->nmeters, 4);
    WT_EQ_STR(wt_topology_meter_zone(t, &t->meters[0]), "z2"); /* node n2 → rack r2 → z2 */
    WT_EQ_STR(wt_topology_meter_zone(t, &t->meters[1]), "z9");
    WT_EQ_STR(wt_topology_meter_zone(t, &t->meters[2]), "");
    WT_EQ_STR(wt_topology_meter_zone(t, &t->meters[3]), "z1"); /* this node's rack */
    WT_EQ_STR(wt_topology_node_zone(t, ""), "z1");             /* the store's own node */
    WT_EQ_STR(wt_topology_node_zone(t, "n3"), "z3");
    WT_EQ_STR(wt_topology_node_zone(t, "unknown"), "");
    WT_EQ_STR(t->meters[1].match, "kind=\"ups_output\",source=\"snmp\"");
    WT_EQ_STR(t->meters[3].match, "kind=\"chassis\""); /* a BMC's default */
    WT_ASSERT(wt_meter_matches(&t->meters[1],
                               "source=\"snmp\",target=\"ups\",point=\"out\",kind=\"ups_output\""));
    WT_ASSERT(!wt_meter_matches(&t->meters[1],
                                "source=\"snmp\",target=\"ups\",point=\"in\",kind=\"ups_input\""));
    WT_ASSERT(wt_meter_matches(&t->meters[0], "target=\"pdu\",point=\"o1\""));
    WT_ASSERT(!wt_meter_matches(&t->meters[0], "target=\"pdu\",point=\"o10\""));
    WT_ASSERT(!wt_meter_matches(&t->meters[0], "target=\"pdu2\",point=\"o1\""));
    WT_NEAR(t->pue_assumed, 1.35, 1e-12);
    WT_NEAR(t->wue_assumed, 0, 0);
    WT_EQ_INT(t->nbands, 5);
    WT_NEAR(t->bands[4], 120, 0);
    WT_EQ_INT(t->kpi_window_ns, 300LL * 1000000000);
    WT_NEAR(t->chips_tolerance, 0.05, 1e-12);
    WT_EQ_INT(t->reconcile_interval_ns, 60LL * 1000000000);
    WT_EQ_STR(wt_role_name(WT_ROLE_WATER), "water_litres");
    free(t);
}

#define BAD(yaml, message)                                                                         \
    do {                                                                                           \
        struct wt_config c_;                                                                       \
        struct wt_err e_ = {{0}};                                                                  \
        WT_EQ_INT(load(yaml, &c_, &e_), -EINVAL);                                                  \
        WT_EQ_STR(e_.msg, message);                                                                \
        wt_config_free(&c_);                                                                       \
    } while (0)

WT_TEST(errors_name_file_line_and_path)
{
    BAD("topology:\n  nodes: []\n  meter: []\n",
        "w.yaml:3: topology.meter: unknown key; did you mean 'meters'?");
    BAD("topology:\n  meters:\n    - {target: pdu, role: pdu_outlet}\n",
        "w.yaml:3: topology.meters[0].node: required for role pdu_outlet (the node it feeds)");
    BAD("topology:\n  meters:\n    - {target: pdu, node: n1}\n",
        "w.yaml:3: topology.meters[0].role: required (one of facility_total, it_total, cooling, "
        "water_litres, heat_reused, pdu_outlet, bmc, ups_output, pdu_output, it_input, "
        "onsite_generation, exported, water_potable, purchased_cooling, heat_removed, fuel)");
    BAD("topology:\n  meters:\n    - {target: tank, role: fuel}\n",
        "w.yaml:3: topology.meters[0].fuel: required for role fuel (one of diesel, natural_gas, "
        "hydrogen, bioethanol)");
    BAD("topology:\n  meters:\n    - {target: tank, role: water_litres, fuel: diesel}\n",
        "w.yaml:3: topology.meters[0].fuel: only for role fuel");
    BAD("topology:\n  meters:\n    - {target: a, point: p, role: onsite_generation}\n"
        "    - {target: tank, role: fuel, fuel: diesel, feeds: b}\n",
        "w.yaml:4: topology.meters[1].feeds: \"b\" is no meter with role onsite_generation (its "
        "target)");
    BAD("topology:\n  meters:\n    - {target: a, point: p, role: it_total}\n"
        "    - {target: b, role: chiller}\n",
        "w.yaml:4: topology.meters[1].role: expected one of facility_total, it_total, cooling, "
        "water_litres, heat_reused, pdu_outlet, bmc, ups_output, pdu_output, it_input, "
        "onsite_generation, exported, water_potable, purchased_cooling, heat_removed, fuel (got "
        "\"chiller\")");
    BAD("topology:\n  meters:\n    - {target: pdu, role: pdu_outlet, node: n1}\n",
        "w.yaml:3: topology.meters[0].point: required for role pdu_outlet, or a match such as "
        "{kind: outlet} (the points of a target would add up)");
    BAD("topology:\n  meters:\n    - {role: it_total}\n",
        "w.yaml:3: topology.meters[0].target: required");
    BAD("topology:\n  meters:\n    - {target: a, point: p, role: it_total}\n"
        "    - {target: a, point: p, role: it_total}\n",
        "w.yaml:4: topology.meters[1]: the same meter as on line 3");
    BAD("topology:\n  meters:\n    - {target: a, role: it_total, match: {point: x}}\n",
        "w.yaml:3: topology.meters[0].match.point: set point beside match, not in it");
    BAD("topology:\n  meters: {target: a}\n",
        "w.yaml:2: topology.meters: expected a list, not a mapping");
    BAD("topology:\n  design_it_watts: lots\n",
        "w.yaml:2: topology.design_it_watts: expected a number from 0 to 1e+12 (got \"lots\")");
    BAD("topology:\n  racks:\n    - {name: r1}\n    - {name: r1}\n",
        "w.yaml:4: topology.racks[1]: rack \"r1\" is listed twice");
    BAD("facility:\n  pue_assumed: 0.8\n",
        "w.yaml:2: facility.pue_assumed: expected a number from 1 to 10 (got \"0.8\")");
    BAD("facility:\n  part_load_bands: [0, 50, 25]\n",
        "w.yaml:2: facility.part_load_bands[2]: expected edges in increasing order (25 after 50)");
    BAD("facility:\n  part_load_bands: [0]\n",
        "w.yaml:2: facility.part_load_bands: expected a list of 2 to 12 increasing percentages "
        "such as [0, 25, 50, 75, 100]");
    BAD("facility:\n  reconcile:\n    drift_bund: 0.1\n",
        "w.yaml:3: facility.reconcile.drift_bund: unknown key; did you mean 'drift_bound'?");
    BAD("facility:\n  reconcile:\n    drift: 0.1\n",
        "w.yaml:3: facility.reconcile.drift: unknown key (known: chips_tolerance, drift_bound, "
        "interval)");
    BAD("facility:\n  kpi_window: soon\n",
        "w.yaml:2: facility.kpi_window: expected a duration > 0 such as 30s or 5m (got \"soon\")");
}
