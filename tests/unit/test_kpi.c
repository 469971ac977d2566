/* SPDX-License-Identifier: MIT */
/*
 * Facility KPIs over a small site written into the real SQLite store with known energies: a
 * facility meter and an IT meter whose load steps at half time (part-load bands), zone
 * sub-meters, a cooling meter with power readings only (the integration fallback), water, heat,
 * GPU and RAPL counters of three nodes, PDU outlets and a BMC. Every KPI is checked exactly,
 * with its measured/assumed flags; then the reconciliation cases and the exported gauges.
 *
 * The site is also written for tests/cli/test_kpi.sh: `test_kpi write_site` with
 * WATTAGE_KPI_SITE_DIR set writes site.db and site.yaml there (WATTAGE_KPI_SITE_T0: the
 * start, unix seconds).
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/carbon.h"
#include "audit/kpi.h"
#include "audit/meters.h"
#include "audit/reconcile.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "runner.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define T0_DEFAULT (1764000000LL * S) /* 2025-11-24T16:00:00Z */
#define HOUR (3600 * S)

static int64_t T0 = T0_DEFAULT;

static const char site_yaml[] =
    "topology:\n"
    "  node: gpu-01\n"
    "  rack: r1\n"
    "  design_it_watts: 100000\n"
    "  racks:\n"
    "    - {name: r1, zone: hall-a}\n"
    "    - {name: r2, zone: hall-b}\n"
    "  nodes:\n"
    "    - {name: gpu-02, rack: r1}\n"
    "    - {name: gpu-03, rack: r2}\n"
    "  meters:\n"
    "    - {target: main, point: total, role: facility_total}\n"
    "    - {target: ups, point: out, role: it_total}\n"
    "    - {target: sub-a, point: total, role: facility_total, zone: hall-a}\n"
    "    - {target: ups-a, point: out, role: it_total, zone: hall-a}\n"
    "    - {target: chiller, point: pump, role: cooling}\n"
    "    - {target: water, role: water_litres}\n"
    "    - {target: heat, role: heat_reused}\n"
    "    - {target: pdu-a, match: {kind: outlet}, role: pdu_outlet, node: gpu-01}\n"
    "    - {target: bmc-02, role: bmc, node: gpu-02}\n"
    "    - {target: pdu-b, point: o1, role: pdu_outlet, node: gpu-03}\n"
    "facility:\n"
    "  part_load_bands: [0, 25, 50, 75, 100]\n"
    "  part_load_interval: 10m\n"
    "  kpi_window: 1h\n"
    "  kpi_interval: 1s\n";

/* A power profile: p1 watts for the first half hour, p2 after. */
struct prof {
    double p1, p2;
};

static double cum(struct prof p, double s)
{
    return p.p1 * (s < 1800 ? s : 1800) + (s > 1800 ? p.p2 * (s - 1800) : 0);
}

/* Readings every 10 s over [T0, T0 + 1 h]: a counter of the profile's energy (x scale). */
static void counter(struct wt_store *st, const char *node, int metric, const char *labels,
                    struct prof p, double scale)
{
    struct wt_reading r[361];
    for (int k = 0; k <= 360; k++) {
        memset(&r[k], 0, sizeof r[k]);
        r[k].t_ns = T0 + k * 10 * S;
        r[k].metric = (uint16_t)metric;
        r[k].value = 1000 + cum(p, k * 10.0) * scale; /* counters rarely start at 0 */
        snprintf(r[k].labels, sizeof r[k].labels, "%s", labels);
    }
    WT_EQ_INT(wt_store_write(st, node, r, 361), 0);
}

static void gauge(struct wt_store *st, const char *node, int metric, const char *labels, double v)
{
    struct wt_reading r[361];
    for (int k = 0; k <= 360; k++) {
        memset(&r[k], 0, sizeof r[k]);
        r[k].t_ns = T0 + k * 10 * S;
        r[k].metric = (uint16_t)metric;
        r[k].value = v;
        snprintf(r[k].labels, sizeof r[k].labels, "%s", labels);
    }
    WT_EQ_INT(wt_store_write(st, node, r, 361), 0);
}

static const char *fac(const char *source, const char *target, const char *point, const char *kind)
{
    static char lb[8][WT_LABELS_LEN];
    static int i;
    char *b = lb[i++ % 8];
    WT_EQ_INT(wt_labels(b, WT_LABELS_LEN, "source", source, "target", target, "point", point,
                        "kind", kind, NULL),
              0);
    return b;
}

static const char *temp(const char *rack, const char *kind, const char *point)
{
    static char lb[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "redfish", "target", "rackmon", "point", point,
                        "kind", kind, "rack", rack, NULL),
              0);
    return lb;
}

static void gpu(struct wt_store *st, const char *node, const char *idx, struct prof p)
{
    char lb[WT_LABELS_LEN], uuid[64];
    snprintf(uuid, sizeof uuid, "GPU-%s-%s", node[0] ? node : "local", idx);
    WT_EQ_INT(wt_labels(lb, sizeof lb, "gpu", idx, "uuid", uuid, "model", "NVIDIA H200", NULL), 0);
    counter(st, node, WT_M_GPU_ENERGY_J, lb, p, 1);
}

static void rapl(struct wt_store *st, const char *domain, double w)
{
    char lb[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(lb, sizeof lb, "package", "0", "domain", domain, NULL), 0);
    counter(st, "", WT_M_CPU_ENERGY_J, lb, (struct prof){w, w}, 1);
}

/* The site, in a new store at path (raw readings kept for retention_raw_ns; 0: default). */
static struct wt_store *build_site_kept(const char *path, int64_t retention_raw_ns)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true, .retention_raw_ns = retention_raw_ns};
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    /* the local daemon started before the data */
    WT_EQ_INT(wt_store_begin_run(st, "", T0 - 60 * S, S, "test"), 0);

    counter(st, "", WT_M_FAC_ENERGY_J, fac("modbus", "main", "total", "meter"),
            (struct prof){36000, 78000}, 1);
    /* the same point's power: ignored, the counter comes first */
    gauge(st, "", WT_M_FAC_POWER_W, fac("modbus", "main", "total", "meter"), 99999);
    counter(st, "", WT_M_FAC_ENERGY_J, fac("snmp", "ups", "out", "ups_output"),
            (struct prof){20000, 60000}, 1);
    counter(st, "", WT_M_FAC_ENERGY_J, fac("modbus", "sub-a", "total", "meter"),
            (struct prof){30000, 30000}, 1);
    counter(st, "", WT_M_FAC_ENERGY_J, fac("snmp", "ups-a", "out", "ups_output"),
            (struct prof){20000, 20000}, 1);
    /* power readings only: integrated */
    gauge(st, "", WT_M_FAC_POWER_W, fac("modbus", "chiller", "pump", "cooling"), 20000);
    /* 0.5 m3 per hour */
    counter(st, "", WT_M_FAC_WATER_M3, fac("modbus", "water", "m1", "meter"), (struct prof){1, 1},
            0.5 / 3600);
    counter(st, "", WT_M_FAC_HEAT_J, fac("modbus", "heat", "hx", "meter"),
            (struct prof){10000, 10000}, 1);
    /* gpu-01 (this node): two outlets and an inlet that the meter's match leaves out */
    counter(st, "", WT_M_FAC_ENERGY_J, fac("snmp", "pdu-a", "outlet1", "outlet"),
            (struct prof){800, 800}, 1);
    counter(st, "", WT_M_FAC_ENERGY_J, fac("snmp", "pdu-a", "outlet2", "outlet"),
            (struct prof){700, 700}, 1);
    counter(st, "", WT_M_FAC_ENERGY_J, fac("snmp", "pdu-a", "inlet1", "inlet"),
            (struct prof){1500, 1500}, 1);
    gpu(st, "", "0", (struct prof){500, 500});
    gpu(st, "", "1", (struct prof){500, 500});
    rapl(st, "package", 150);
    rapl(st, "dram", 50);
    rapl(st, "core", 80); /* within package: not added */
    /* gpu-02: its BMC reads less than its GPU */
    gauge(st, "", WT_M_FAC_POWER_W, fac("redfish", "bmc-02", "chassis", "chassis"), 600);
    gpu(st, "gpu-02", "0", (struct prof){700, 700});
    /* gpu-03: the GPU halves its power, the wall does not: the share drifts */
    counter(st, "", WT_M_FAC_ENERGY_J, fac("snmp", "pdu-b", "o1", "outlet"),
            (struct prof){1000, 1000}, 1);
    gpu(st, "gpu-03", "0", (struct prof){600, 300});
    /* rack temperatures */
    gauge(st, "", WT_M_FAC_TEMP_C, temp("r1", "inlet", "front-top"), 21);
    gauge(st, "", WT_M_FAC_TEMP_C, temp("r1", "inlet", "front-bottom"), 23);
    gauge(st, "", WT_M_FAC_TEMP_C, temp("r1", "exhaust", "rear"), 35);
    gauge(st, "", WT_M_FAC_TEMP_C, temp("r2", "inlet", "front"), 20);
    /* a BMC's thermal sensors of gpu-03 (rack r2 through the topology): named by their point */
    char lb[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "redfish", "target", "bmc-03", "point", "intake",
                        "kind", "chassis", "node", "gpu-03", NULL),
              0);
    gauge(st, "", WT_M_FAC_TEMP_C, lb, 24);
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "redfish", "target", "bmc-03", "point",
                        "exhaust_1", "kind", "chassis", "node", "gpu-03", NULL),
              0);
    gauge(st, "", WT_M_FAC_TEMP_C, lb, 40);
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "redfish", "target", "bmc-03", "point", "cpu1",
                        "kind", "chassis", "node", "gpu-03", NULL),
              0);
    gauge(st, "", WT_M_FAC_TEMP_C, lb, 70); /* neither side */
    return st;
}

static struct wt_store *build_site(const char *path)
{
    return build_site_kept(path, 0);
}

static struct wt_topology *topo_from(const char *yaml)
{
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    struct wt_config cfg;
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_yaml_parse("site.yaml", yaml, strlen(yaml), &root, &err), 0);
    struct wt_topology *t = malloc(sizeof *t);
    WT_ASSERT(t != NULL);
    int rc = wt_topology_parse("site.yaml", wt_y_get(root, "topology"), wt_y_get(root, "facility"),
                               &cfg, t, &err);
    if (rc)
        wt_test_fail(__FILE__, __LINE__, "topology: %s", err.msg);
    wt_ynode_free(root);
    return t;
}

static const char *db_path(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/site.db", wt_test_dir());
    return p;
}

static const struct wt_kpi_input *input(const struct wt_kpi_row *row, const char *name)
{
    for (size_t i = 0; i < row->nin; i++)
        if (strcmp(row->in[i].name, name) == 0)
            return &row->in[i];
    wt_test_fail(__FILE__, __LINE__, "row %s has no input %s", row->key, name);
}

static const struct wt_recon_node *node(const struct wt_kpi_report *r, const char *name)
{
    for (size_t i = 0; i < r->nnodes; i++)
        if (strcmp(r->nodes[i].node, name) == 0)
            return &r->nodes[i];
    wt_test_fail(__FILE__, __LINE__, "no node %s", name);
}

static const struct wt_kpi_row *row_of(const struct wt_kpi_report *r, const char *key)
{
    const struct wt_kpi_row *row = wt_kpi_row(r, key);
    if (!row)
        wt_test_fail(__FILE__, __LINE__, "no row %s", key);
    return row;
}

#define REL(a, b) WT_NEAR((a), (b), 1e-9 * (fabs((double)(b)) > 1 ? fabs((double)(b)) : 1))

WT_TEST(every_kpi_of_the_site_exactly)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);

    /* the inputs */
    REL(r.facility.j, 36000.0 * 1800 + 78000.0 * 1800);
    WT_EQ_STR(r.facility.from, "meters");
    WT_EQ_INT(r.facility.meters, 1); /* site-wide: the unzoned main meter, not sub-a too */
    WT_ASSERT(r.facility.measured);
    REL(r.facility.coverage, 1);
    REL(r.it.j, 20000.0 * 1800 + 60000.0 * 1800);
    WT_EQ_INT(r.it.role, WT_ROLE_IT_TOTAL);
    REL(r.cooling.j, 20000.0 * 3600); /* integrated power */
    REL(r.water.j, 0.5);
    REL(r.heat.j, 10000.0 * 3600);
    REL(r.gpu.j, (1000.0 + 700 + 450) * 3600);

    const struct wt_kpi_row *pue = row_of(&r, "pue");
    WT_ASSERT(pue->available && pue->measured);
    REL(pue->value, (36000.0 + 78000) / (20000.0 + 60000)); /* 1.425, energy-weighted */
    WT_ASSERT(input(pue, "facility_energy")->measured);
    WT_CONTAINS(input(pue, "facility_energy")->detail, "facility_total meters (1)");
    WT_ASSERT(input(pue, "it_energy")->measured);

    const struct wt_kpi_row *clf = row_of(&r, "clf");
    WT_ASSERT(clf->available && clf->measured);
    REL(clf->value, 0.5);
    const struct wt_kpi_row *wue = row_of(&r, "wue");
    WT_ASSERT(wue->available && wue->measured);
    REL(wue->value, 500.0 / 40.0); /* 500 L over 40 IT kWh */
    WT_EQ_STR(wue->unit, "L/kWh");
    const struct wt_kpi_row *erf = row_of(&r, "erf");
    WT_ASSERT(erf->available && erf->measured);
    REL(erf->value, 36e6 / 205.2e6);
    const struct wt_kpi_row *acc = row_of(&r, "accelerator_share");
    WT_ASSERT(acc->available && acc->measured);
    REL(acc->value, 2150.0 * 3600 / 144e6);

    /* part-load: 10-min pieces, 20 % of design for 30 min, then 60 % */
    WT_ASSERT(r.part_load_available);
    WT_EQ_INT(r.piece_ns, 600 * S);
    WT_EQ_INT(r.nbands, 4);
    WT_EQ_INT(r.bands[0].pieces, 3);
    REL(r.bands[0].pue, 1.8);
    REL(r.bands[0].seconds, 1800);
    WT_ASSERT(!r.bands[1].available);
    WT_EQ_INT(r.bands[1].pieces, 0);
    WT_EQ_INT(r.bands[2].pieces, 3);
    REL(r.bands[2].pue, 1.3);
    REL(r.bands[2].it_j, 60000.0 * 1800);
    WT_ASSERT(!r.bands[3].available);

    /* zones */
    WT_EQ_INT(r.nzones, 2);
    WT_EQ_STR(r.zones[0].zone, "hall-a");
    WT_ASSERT(r.zones[0].available && r.zones[0].measured);
    REL(r.zones[0].pue, 1.5);
    WT_EQ_STR(r.zones[1].zone, "hall-b");
    WT_ASSERT(!r.zones[1].available);

    /* racks */
    WT_EQ_INT(r.nracks, 2);
    WT_EQ_STR(r.racks[0].rack, "r1");
    WT_ASSERT(r.racks[0].has_inlet && r.racks[0].has_exhaust);
    REL(r.racks[0].inlet_c, 22);
    REL(r.racks[0].delta_t_k, 13);
    WT_EQ_STR(r.racks[1].rack, "r2");
    WT_ASSERT(r.racks[1].has_inlet && r.racks[1].has_exhaust);
    REL(r.racks[1].inlet_c, 22);   /* the rack's own inlet 20 and the BMC's intake 24 */
    REL(r.racks[1].delta_t_k, 18); /* the BMC's exhaust 40 */

    /* reconciliation */
    WT_EQ_INT(r.nnodes, 3);
    const struct wt_recon_node *n1 = node(&r, "gpu-01");
    WT_EQ_STR(n1->wall_from, "pdu_outlet");
    WT_EQ_INT(n1->wall_meters, 1);
    REL(n1->wall_j, 1500.0 * 3600); /* the outlets, not the inlet */
    REL(n1->gpu_j, 1000.0 * 3600);
    REL(n1->cpu_j, 150.0 * 3600); /* the package, without its core domain */
    REL(n1->dram_j, 50.0 * 3600);
    REL(n1->unaccounted_w, 300);
    REL(n1->share, 0.2);
    WT_ASSERT(!n1->chips_exceed_wall && !n1->share_drift);
    WT_EQ_INT(n1->pieces, 12);
    const struct wt_recon_node *n2 = node(&r, "gpu-02");
    WT_EQ_STR(n2->wall_from, "bmc");
    REL(n2->wall_j, 600.0 * 3600);
    REL(n2->unaccounted_w, -100);
    WT_ASSERT(n2->chips_exceed_wall && !n2->share_drift);
    const struct wt_recon_node *n3 = node(&r, "gpu-03");
    REL(n3->share, 0.55);
    REL(n3->share_min, 0.4);
    REL(n3->share_max, 0.7);
    WT_ASSERT(!n3->chips_exceed_wall && n3->share_drift);

    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

WT_TEST(one_zone)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, "hall-a", &r, &err), 0);
    REL(r.facility.j, 30000.0 * 3600);
    REL(r.it.j, 20000.0 * 3600);
    REL(row_of(&r, "pue")->value, 1.5);
    REL(r.gpu.j, 1700.0 * 3600); /* gpu-01 and gpu-02 are in hall-a, gpu-03 is not */
    REL(row_of(&r, "accelerator_share")->value, 1700.0 / 20000);
    WT_ASSERT(!row_of(&r, "clf")->available); /* the chiller is site-wide */
    WT_EQ_INT(r.nnodes, 2);
    WT_EQ_INT(r.nracks, 1);
    WT_EQ_INT(r.nzones, 0);
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

/* The site's meters without the main facility meter, with other facility settings. */
static char *without_facility(const char *facility_block)
{
    static char y[4096];
    const char *cut = strstr(site_yaml, "    - {target: main");
    const char *next = strchr(cut, '\n') + 1;
    const char *fac_at = strstr(site_yaml, "facility:\n");
    snprintf(y, sizeof y, "%.*s%.*s%s", (int)(cut - site_yaml), site_yaml, (int)(fac_at - next),
             next, facility_block);
    return y;
}

WT_TEST(pue_assumed_is_flagged_and_used_for_erf)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(without_facility("facility:\n  pue_assumed: 1.4\n"));
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    /* sub-a is the only facility meter left: site-wide it counts as all of the site's */
    WT_EQ_INT(r.facility.meters, 1);
    wt_kpi_report_free(&r);
    /* without any facility_total meter */
    t->nmeters = 0;
    struct wt_topology *t2 = topo_from(without_facility("facility:\n  pue_assumed: 1.4\n"));
    for (size_t i = 0; i < t2->nmeters; i++)
        if (t2->meters[i].role != WT_ROLE_FACILITY_TOTAL)
            t->meters[t->nmeters++] = t2->meters[i];
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    const struct wt_kpi_row *pue = row_of(&r, "pue");
    WT_ASSERT(pue->available && !pue->measured);
    REL(pue->value, 1.4);
    WT_ASSERT(!input(pue, "facility_energy")->measured);
    WT_CONTAINS(input(pue, "facility_energy")->detail, "facility.pue_assumed = 1.4");
    WT_ASSERT(input(pue, "it_energy")->measured);
    const struct wt_kpi_row *erf = row_of(&r, "erf");
    WT_ASSERT(erf->available && !erf->measured);
    REL(erf->value, 36e6 / (1.4 * 144e6));
    WT_ASSERT(!r.part_load_available);
    WT_CONTAINS(r.part_load_why, "no facility_total meter");
    /* the measured KPIs stay measured */
    WT_ASSERT(row_of(&r, "wue")->measured);
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
    free(t2);
}

WT_TEST(partial_coverage_is_not_measured)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    /* the window starts an hour before the data: the meters cover half of it */
    WT_EQ_INT(wt_kpi_compute(st, t, T0 - HOUR, T0 + HOUR, NULL, &r, &err), 0);
    REL(r.facility.coverage, 0.5);
    WT_ASSERT(!r.facility.measured);
    const struct wt_kpi_row *pue = row_of(&r, "pue");
    WT_ASSERT(pue->available && !pue->measured); /* no pue_assumed: the partial figure */
    REL(pue->value, 1.425);
    /* pieces without data do not count in the bands */
    WT_EQ_INT(r.bands[0].pieces + r.bands[1].pieces + r.bands[2].pieces + r.bands[3].pieces, 6);
    wt_kpi_report_free(&r);

    /* with pue_assumed, the assumed constant stands in for the uncovered meter */
    t->pue_assumed = 1.6;
    WT_EQ_INT(wt_kpi_compute(st, t, T0 - HOUR, T0 + HOUR, NULL, &r, &err), 0);
    pue = row_of(&r, "pue");
    WT_ASSERT(!pue->measured);
    REL(pue->value, 1.6);
    WT_CONTAINS(input(pue, "facility_energy")->detail, "do not cover the window");
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

WT_TEST(it_falls_back_to_outlets_then_node_sensors)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    size_t keep = 0;
    for (size_t i = 0; i < t->nmeters; i++)
        if (t->meters[i].role != WT_ROLE_IT_TOTAL)
            t->meters[keep++] = t->meters[i];
    t->nmeters = keep;
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    /* the nodes' walls: gpu-01's outlets, gpu-02's BMC, gpu-03's outlet */
    REL(r.it.j, (1500.0 + 600 + 1000) * 3600);
    WT_EQ_INT(r.it.meters, 3);
    WT_EQ_STR(r.it.from, "meters");
    wt_kpi_report_free(&r);

    keep = 0;
    for (size_t i = 0; i < t->nmeters; i++)
        if (t->meters[i].role != WT_ROLE_PDU_OUTLET && t->meters[i].role != WT_ROLE_BMC)
            t->meters[keep++] = t->meters[i];
    t->nmeters = keep;
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    WT_EQ_STR(r.it.from, "node_sensors");
    REL(r.it.j, (1000.0 + 150 + 50 + 700 + 450) * 3600);
    REL(row_of(&r, "accelerator_share")->value, 2150.0 / 2350);
    WT_CONTAINS(input(row_of(&r, "pue"), "it_energy")->detail, "nodes' own sensors");
    WT_EQ_INT(r.nnodes, 0);
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

WT_TEST(pue_for_other_modules)
{
    struct wt_store *st = build_site(db_path());
    struct wt_config cfg;
    struct wt_err err = {{0}};
    double pue = 0;
    bool measured = false;
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_config_load_string("site.yaml", site_yaml, strlen(site_yaml), &cfg, &err), 0);
    WT_EQ_INT(wt_kpi_pue(st, &cfg, T0, T0 + HOUR, &pue, &measured, &err), 0);
    REL(pue, 1.425);
    WT_ASSERT(measured);
    /* half an hour of the low load only */
    WT_EQ_INT(wt_kpi_pue(st, &cfg, T0, T0 + HOUR / 2, &pue, &measured, &err), 0);
    REL(pue, 1.8);
    /* a window the meters do not cover and no assumed PUE */
    WT_EQ_INT(wt_kpi_pue(st, &cfg, T0 - 2 * HOUR, T0 - HOUR, &pue, &measured, &err), -ENOENT);
    WT_CONTAINS(err.msg, "no facility.pue_assumed");
    wt_config_free(&cfg);

    const char *assumed = "facility:\n  pue_assumed: 1.3\n";
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_config_load_string("a.yaml", assumed, strlen(assumed), &cfg, &err), 0);
    WT_EQ_INT(wt_kpi_pue(st, &cfg, T0, T0 + HOUR, &pue, &measured, &err), 0);
    REL(pue, 1.3);
    WT_ASSERT(!measured);
    wt_config_free(&cfg);

    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_kpi_pue(st, &cfg, T0, T0 + HOUR, &pue, &measured, &err), -ENOENT);
    wt_store_close(st);
}

WT_TEST(long_past_windows_read_the_rollups_where_raw_readings_were_pruned)
{
    /* raw readings kept 10 minutes: maintenance two hours later rolls up and prunes them */
    struct wt_store *st = build_site_kept(db_path(), 600 * S);
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    bool more = true;
    for (int i = 0; i < 1000 && more; i++)
        WT_EQ_INT(wt_store_maintain(st, T0 + 2 * HOUR, 100000, &more), 0);
    WT_ASSERT(!more);
    sqlite3_stmt *q = NULL;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(st), "SELECT count(*) FROM readings WHERE t < ?", -1,
                                 &q, NULL),
              SQLITE_OK);
    sqlite3_bind_int64(q, 1, T0 + HOUR - 60 * S);
    WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
    int left = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    WT_ASSERT(left < 100); /* of about 9000 before the last minute */

    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    REL(r.facility.j, 205.2e6);                        /* counter: the store's own rollups */
    WT_NEAR(r.cooling.j, 20000.0 * 3600, 1e-6 * 72e6); /* power: rollup means */
    WT_NEAR(r.cooling.coverage, 1, 1e-9);
    WT_NEAR(r.water.j, 0.5, 1e-9); /* water: each minute's last value */
    WT_ASSERT(r.water.measured);
    REL(row_of(&r, "pue")->value, 1.425);
    WT_NEAR(row_of(&r, "wue")->value, 12.5, 1e-6);
    REL(r.bands[0].pue, 1.8);
    const struct wt_recon_node *n2 = node(&r, "gpu-02"); /* its wall is BMC power readings */
    WT_NEAR(n2->wall_j, 600.0 * 3600, 1e-6 * 600 * 3600);
    WT_ASSERT(n2->chips_exceed_wall);
    wt_kpi_report_free(&r);
    /* a window inside one pruned stretch: prorated minutes */
    WT_EQ_INT(wt_kpi_compute(st, t, T0 + 90 * S, T0 + 1830 * S, NULL, &r, &err), 0);
    WT_NEAR(r.cooling.j, 20000.0 * 1740, 1e-6 * 20000 * 1740);
    WT_NEAR(r.water.j, 0.5 / 3600 * 1740, 1e-9);
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

/* ---- reconciliation cases ---- */

WT_TEST(reconciliation_judge)
{
    struct wt_recon_node n = {.wall_j = 1000,
                              .chips_j = 800,
                              .pieces = 4,
                              .share_min = 0.18,
                              .share_max = 0.25,
                              .wall_coverage = 1,
                              .chips_coverage = 0.95};
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(!n.chips_exceed_wall && !n.share_drift); /* wall above chips, steady share */
    n.chips_j = 1019;
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(!n.chips_exceed_wall); /* within the sensors' tolerance */
    n.chips_j = 1021;
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(n.chips_exceed_wall);
    n.wall_coverage = 0.5; /* a wall read over half the window says nothing */
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(!n.chips_exceed_wall);
    n.wall_coverage = 1;
    n.chips_coverage = 0.8;
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(!n.chips_exceed_wall);
    n.chips_coverage = 1;
    n.share_max = 0.29;
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(n.share_drift);
    n.pieces = 1; /* one piece cannot drift */
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(!n.share_drift);
    n.wall_j = 0; /* no wall: nothing to exceed */
    wt_recon_judge(&n, 0.02, 0.10, 0.9);
    WT_ASSERT(!n.chips_exceed_wall);
}

WT_TEST(reconciliation_over_a_drifting_window_only_flags_the_drift_where_it_is)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_meter_set *ms = NULL;
    struct wt_recon_node *n = NULL;
    size_t nn = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_meters_open(st, t, &ms, &err), 0);
    /* the first half hour only: gpu-03's share is steady at 0.4 */
    WT_EQ_INT(wt_recon_compute(ms, t, T0, T0 + HOUR / 2, &n, &nn), 0);
    WT_EQ_INT(nn, 3);
    WT_EQ_STR(n[2].node, "gpu-03");
    REL(n[2].share, 0.4);
    REL(n[2].unaccounted_w, 400);
    WT_ASSERT(!n[2].share_drift);
    WT_EQ_INT(n[2].pieces, 6);
    free(n);
    /* a tighter bound than the spread of a window that crosses the step */
    t->drift_bound = 0.35;
    WT_EQ_INT(wt_recon_compute(ms, t, T0, T0 + HOUR, &n, &nn), 0);
    WT_ASSERT(!n[2].share_drift); /* 0.3 spread within 0.35 */
    free(n);
    wt_meters_close(ms);
    wt_store_close(st);
    free(t);
}

WT_TEST(a_coarse_counter_gives_way_to_power_readings_over_short_windows)
{
    /* an outlet counting in 0.1 kWh (360 kJ) steps at 1 kW, and its power readings */
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true};
    WT_EQ_INT(wt_store_open(db_path(), &o, &st, &err), 0);
    WT_EQ_INT(wt_store_begin_run(st, "", T0 - 60 * S, S, "test"), 0);
    struct wt_reading r[361];
    for (int k = 0; k <= 360; k++) {
        memset(&r[k], 0, sizeof r[k]);
        r[k].t_ns = T0 + k * 10 * S;
        r[k].metric = WT_M_FAC_ENERGY_J;
        r[k].value = floor(1000.0 * k * 10 / 360000) * 360000;
        snprintf(r[k].labels, sizeof r[k].labels, "%s", fac("snmp", "pdu-c", "o1", "outlet"));
    }
    WT_EQ_INT(wt_store_write(st, "", r, 361), 0);
    gauge(st, "", WT_M_FAC_POWER_W, fac("snmp", "pdu-c", "o1", "outlet"), 1000);
    /* and a fine counter beside it: 1 J steps, rising at every poll */
    counter(st, "", WT_M_FAC_ENERGY_J, fac("snmp", "pdu-c", "o2", "outlet"),
            (struct prof){1000, 1000}, 1);
    gauge(st, "", WT_M_FAC_POWER_W, fac("snmp", "pdu-c", "o2", "outlet"), 5000);
    struct wt_topology *t =
        topo_from("topology:\n  meters:\n"
                  "    - {target: pdu-c, point: o1, role: pdu_outlet, node: n4}\n"
                  "    - {target: pdu-c, point: o2, role: pdu_outlet, node: n5}\n");
    struct wt_meter_set *ms = NULL;
    WT_EQ_INT(wt_meters_open(st, t, &ms, &err), 0);
    double j, cov;
    int pts;
    enum wt_meter_method how;
    /* five minutes: the counter says 0 or 360 kJ, the power readings 300 kJ */
    WT_EQ_INT(wt_meters_energy(ms, 0, T0 + 100 * S, T0 + 400 * S, &j, &cov, &pts, &how), 0);
    WT_EQ_INT(how, WT_MM_POWER);
    REL(j, 300e3);
    /* the hour: ten steps are still under 50, so power again */
    WT_EQ_INT(wt_meters_energy(ms, 0, T0, T0 + HOUR, &j, &cov, &pts, &how), 0);
    WT_EQ_INT(how, WT_MM_POWER);
    REL(j, 3.6e6);
    /* the fine counter stays the figure even over a minute (not its 5 kW power readings) */
    WT_EQ_INT(wt_meters_energy(ms, 1, T0 + 100 * S, T0 + 160 * S, &j, &cov, &pts, &how), 0);
    WT_EQ_INT(how, WT_MM_COUNTER);
    REL(j, 60e3);
    wt_meters_close(ms);
    wt_store_close(st);
    free(t);
}

/* ---- power integration ---- */

WT_TEST(power_integration_edges_and_gaps)
{
    int64_t t[] = {0, 10 * S, 20 * S, 80 * S, 90 * S};
    double w[] = {100, 200, 200, 400, 400};
    double j, cov;
    /* [5, 15]: 150..200 then 200..200: 5 s x 175 + 5 s x 200 */
    wt_power_integrate(t, w, 5, 5 * S, 15 * S, 30 * S, &j, &cov);
    REL(j, 5 * 175.0 + 5 * 200);
    REL(cov, 10);
    /* the 60-s span is a gap with a 30-s bound */
    wt_power_integrate(t, w, 5, 0, 90 * S, 30 * S, &j, &cov);
    REL(j, 10 * 150.0 + 10 * 200 + 10 * 400);
    REL(cov, 30);
    /* and counted with a larger bound */
    wt_power_integrate(t, w, 5, 0, 90 * S, 100 * S, &j, &cov);
    REL(j, 10 * 150.0 + 10 * 200 + 60 * 300 + 10 * 400);
    REL(cov, 90);
}

/* ---- the exported gauges ---- */

static bool has(const struct wt_batch *b, int metric, const char *labels, double v)
{
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric == metric && strcmp(b->r[i].labels, labels) == 0)
            return fabs(b->r[i].value - v) <= 1e-9 * (fabs(v) > 1 ? fabs(v) : 1);
    return false;
}

static size_t count(const struct wt_batch *b, int metric)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->r[i].metric == metric;
    return n;
}

WT_TEST(exported_gauges_over_the_window)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_batch b = {0};
    WT_EQ_INT(wt_kpi_export_batch(st, t, T0 + HOUR + t->export_lag_ns, &b), 0);
    WT_ASSERT(has(&b, WT_M_KPI_PUE, "", 1.425));
    WT_ASSERT(has(&b, WT_M_KPI_PUE, "zone=\"hall-a\"", 1.5));
    WT_EQ_INT(count(&b, WT_M_KPI_PUE), 2); /* hall-b has no facility meter: absent */
    WT_ASSERT(has(&b, WT_M_KPI_WUE, "", 12.5));
    WT_ASSERT(has(&b, WT_M_KPI_ERF, "", 36e6 / 205.2e6));
    WT_ASSERT(has(&b, WT_M_KPI_ACCEL_SHARE, "", 2150.0 * 3600 / 144e6));
    WT_ASSERT(has(&b, WT_M_RACK_DELTA_T, "rack=\"r1\"", 13));
    WT_ASSERT(has(&b, WT_M_RACK_DELTA_T, "rack=\"r2\"", 18));
    WT_EQ_INT(count(&b, WT_M_RACK_DELTA_T), 2);
    WT_ASSERT(has(&b, WT_M_NODE_UNACCOUNTED_W, "node=\"gpu-01\"", 300));
    WT_ASSERT(has(&b, WT_M_NODE_UNACCOUNTED_RATIO, "node=\"gpu-01\"", 0.2));
    WT_ASSERT(has(&b, WT_M_NODE_UNACCOUNTED_W, "node=\"gpu-02\"", -100));
    WT_ASSERT(has(&b, WT_M_NODE_RECON_SUSPECT, "node=\"gpu-01\",reason=\"chips_exceed_wall\"", 0));
    WT_ASSERT(has(&b, WT_M_NODE_RECON_SUSPECT, "node=\"gpu-01\",reason=\"share_drift\"", 0));
    WT_ASSERT(has(&b, WT_M_NODE_RECON_SUSPECT, "node=\"gpu-02\",reason=\"chips_exceed_wall\"", 1));
    WT_ASSERT(has(&b, WT_M_NODE_RECON_SUSPECT, "node=\"gpu-03\",reason=\"share_drift\"", 1));
    WT_EQ_INT(count(&b, WT_M_NODE_RECON_SUSPECT), 6);
    wt_batch_clear(&b);

    /* an assumed PUE is not exported as a measurement */
    t->meters[0].role = WT_ROLE_COOLING; /* main is no longer the facility meter */
    t->meters[2].role = WT_ROLE_COOLING; /* nor sub-a */
    t->pue_assumed = 1.4;
    WT_EQ_INT(wt_kpi_export_batch(st, t, T0 + HOUR + t->export_lag_ns, &b), 0);
    WT_EQ_INT(count(&b, WT_M_KPI_PUE), 0);
    WT_ASSERT(has(&b, WT_M_KPI_WUE, "", 12.5));
    WT_EQ_INT(count(&b, WT_M_KPI_ERF), 0);
    wt_batch_free(&b);
    wt_store_close(st);
    free(t);
}

WT_TEST(reconciliation_gauges_wait_for_a_fully_covered_window)
{
    struct wt_store *st = build_site(db_path());
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_batch b = {0};
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    t->kpi_window_ns = HOUR;
    /* the window begins half an hour before the first readings: wall and chips cover half */
    int64_t now = T0 + HOUR / 2 + t->export_lag_ns;
    WT_EQ_INT(wt_kpi_compute(st, t, T0 - HOUR / 2, T0 + HOUR / 2, NULL, &r, &err), 0);
    WT_ASSERT(r.nnodes == 3);
    for (size_t i = 0; i < r.nnodes; i++) {
        WT_ASSERT(r.nodes[i].wall_j > 0);
        WT_ASSERT(r.nodes[i].wall_coverage < 0.6 && r.nodes[i].chips_coverage < 0.6);
        WT_ASSERT(!wt_recon_complete(&r.nodes[i]));
    }
    wt_kpi_report_free(&r);
    WT_EQ_INT(wt_kpi_export_batch(st, t, now, &b), 0);
    WT_EQ_INT(count(&b, WT_M_NODE_UNACCOUNTED_W), 0);
    WT_EQ_INT(count(&b, WT_M_NODE_UNACCOUNTED_RATIO), 0);
    /* the suspect flags have their own coverage rule: published, and not raised on half data */
    WT_ASSERT(has(&b, WT_M_NODE_RECON_SUSPECT, "node=\"gpu-02\",reason=\"chips_exceed_wall\"", 0));
    wt_batch_clear(&b);

    /* 89 % covered (above facility.min_coverage, short of full): still none */
    now = T0 + HOUR - HOUR / 9 + t->export_lag_ns;
    WT_EQ_INT(wt_kpi_export_batch(st, t, now, &b), 0);
    WT_EQ_INT(count(&b, WT_M_NODE_UNACCOUNTED_W), 0);
    wt_batch_clear(&b);

    /* the whole window covered: the figures of the site */
    WT_EQ_INT(wt_kpi_export_batch(st, t, T0 + HOUR + t->export_lag_ns, &b), 0);
    WT_EQ_INT(count(&b, WT_M_NODE_UNACCOUNTED_W), 3);
    WT_EQ_INT(count(&b, WT_M_NODE_UNACCOUNTED_RATIO), 3);
    WT_ASSERT(has(&b, WT_M_NODE_UNACCOUNTED_W, "node=\"gpu-01\"", 300));
    wt_batch_free(&b);
    wt_store_close(st);
    free(t);
}

/* A node whose wall meter came later than its chips: the pure rule. */
WT_TEST(reconciliation_complete_needs_both_spans)
{
    struct wt_recon_node n = {.wall_j = 1e6, .wall_coverage = 1, .chips_coverage = 1};
    WT_ASSERT(wt_recon_complete(&n));
    n.wall_coverage = 0.95; /* measured by min_coverage, not full */
    WT_ASSERT(!wt_recon_complete(&n));
    n.wall_coverage = 0.995; /* the edge of a rolling window a few seconds short */
    WT_ASSERT(wt_recon_complete(&n));
    n.wall_coverage = 1;
    n.chips_coverage = 0.5;
    WT_ASSERT(!wt_recon_complete(&n));
    n.chips_coverage = 1;
    n.wall_j = 0;
    WT_ASSERT(!wt_recon_complete(&n));
}

/* ---- the fleet's working store ---- */

static int64_t carbon_rows(struct wt_store *st)
{
    sqlite3_stmt *q = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(wt_store_db(st), "SELECT count(*) FROM carbon_points", -1, &q, NULL) ==
            SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

WT_TEST(the_local_carbon_series_go_into_the_working_store)
{
    char src[600], work[600], junk[600];
    struct wt_store *s = NULL, *w = NULL;
    struct wt_store_opts o = {.create = true};
    struct wt_err err = {{0}};
    struct wt_carbon_point pts[2] = {
        {.from_ns = T0, .to_ns = T0 + 1800 * S, .value = 100, .kind = WT_CK_ACTUAL, .zone = "FL"},
        {.from_ns = T0 + 1800 * S,
         .to_ns = T0 + HOUR,
         .value = 300,
         .kind = WT_CK_ACTUAL,
         .zone = "FL"}};
    struct wt_carbon_batch b = {.p = pts, .n = 2, .cap = 2};
    size_t n = 99;
    snprintf(src, sizeof src, "%s/local.db", wt_test_dir());
    snprintf(work, sizeof work, "%s/work.db", wt_test_dir());
    snprintf(junk, sizeof junk, "%s/junk.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(src, &o, &s, &err), 0);
    WT_EQ_INT(wt_carbon_tables(wt_store_db(s)), 0);
    WT_EQ_INT(wt_carbon_store(wt_store_db(s), WT_CS_INTENSITY, &b, "test", T0, &err), 0);
    wt_store_close(s);
    WT_EQ_INT(wt_store_open(work, &o, &w, &err), 0);
    WT_EQ_INT(wt_carbon_tables(wt_store_db(w)), 0);
    WT_EQ_INT(wt_kpi_carbon_copy(w, src, &n, &err), 0);
    WT_EQ_INT((int)n, 2);
    WT_EQ_INT((int)carbon_rows(w), 2);
    /* again: the same points replace themselves */
    WT_EQ_INT(wt_kpi_carbon_copy(w, src, &n, &err), 0);
    WT_EQ_INT((int)carbon_rows(w), 2);
    /* a store without carbon series: nothing copied, no error */
    struct wt_store *site = build_site(db_path());
    wt_store_close(site);
    WT_EQ_INT(wt_kpi_carbon_copy(w, db_path(), &n, &err), 0);
    WT_EQ_INT((int)n, 0);
    /* a missing file is said, and not created */
    snprintf(junk, sizeof junk, "%s/none.db", wt_test_dir());
    WT_EQ_INT(wt_kpi_carbon_copy(w, junk, &n, &err), -ENOENT);
    WT_CONTAINS(err.msg, "none.db: No such file");
    WT_ASSERT(access(junk, F_OK) != 0);
    snprintf(junk, sizeof junk, "%s/junk.db", wt_test_dir());
    /* not a database: an error naming the file */
    FILE *f = fopen(junk, "w");
    WT_ASSERT(f != NULL);
    fputs("this is not SQLite, not at all, not even a little bit of a header\n", f);
    fclose(f);
    WT_EQ_INT(wt_kpi_carbon_copy(w, junk, &n, &err), -EIO);
    WT_CONTAINS(err.msg, junk);
    WT_EQ_INT((int)carbon_rows(w), 2); /* and the working store keeps what it had */
    wt_store_close(w);
}

/* ---- a node's own hwmon meters (collect/hwmon.h) ---- */

/* An hwmon energy series of a sensor: chip, label, role, counted or integrated. */
static void hwmon(struct wt_store *st, const char *node, const char *chip, const char *sensor,
                  const char *label, const char *role, const char *method, double w)
{
    char lb[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(lb, sizeof lb, "chip", chip, "sensor", sensor, "label", label, "role", role,
                        "method", method, NULL),
              0);
    counter(st, node, WT_M_HWMON_ENERGY_J, lb, (struct prof){w, w}, 1);
}

/* A Grace Hopper node with its ACPI power meter and PMBus supplies, and no PDU, BMC or RAPL. */
static const char grace_yaml[] = "topology:\n"
                                 "  node: gh-01\n"
                                 "facility:\n"
                                 "  kpi_window: 1h\n";

static struct wt_store *build_grace(const char *path)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true};
    WT_EQ_INT(wt_store_open(path, &o, &st, &err), 0);
    /* polled every 10 s: an integrated series is not a gap between two polls */
    WT_EQ_INT(wt_store_begin_run(st, "", T0 - 60 * S, 10 * S, "test"), 0);
    gpu(st, "", "0", (struct prof){400, 400});
    hwmon(st, "", "power_meter", "power1", "Node Power", "wall", "integrated", 900);
    /* Module holds the GPU and Grace; the CPU and SysIO rails are parts of Grace */
    hwmon(st, "", "grace", "power1", "Module Power Socket 0", "module", "counter", 620);
    hwmon(st, "", "grace", "power2", "Grace Power Socket 0", "cpu", "counter", 200);
    hwmon(st, "", "grace", "power3", "CPU Power Socket 0", "cpu_rail", "counter", 150);
    hwmon(st, "", "grace", "power4", "SysIO Power Socket 0", "sysio_rail", "counter", 40);
    hwmon(st, "", "pmbus", "power1", "pin", "psu_in", "integrated", 950);
    hwmon(st, "", "pmbus", "power2", "pout", "psu_out", "integrated", 900);
    /* amdgpu's own hwmon sensor: the GPU collectors' business, never the chips' twice */
    hwmon(st, "", "amdgpu", "power1", "PPT", "gpu", "integrated", 300);
    return st;
}

WT_TEST(a_node_without_wall_meters_reconciles_against_its_hwmon_wall_and_counts_grace_once)
{
    struct wt_store *st = build_grace(db_path());
    struct wt_topology *t = topo_from(grace_yaml);
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    bool yes = false;
    WT_EQ_INT(wt_meters_has_hwmon_wall(st, &yes), 0);
    WT_ASSERT(yes);
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    WT_EQ_INT(r.nnodes, 1);
    const struct wt_recon_node *n = node(&r, "gh-01");
    WT_EQ_STR(n->wall_from, "hwmon");
    REL(n->wall_j, 900.0 * 3600);
    WT_NEAR(n->wall_coverage, 1, 1e-9);
    /* the CPU is Grace's socket total alone: not + module, not + its rails */
    REL(n->cpu_j, 200.0 * 3600);
    REL(n->gpu_j, 400.0 * 3600);
    REL(n->chips_j, 600.0 * 3600);
    REL(n->unaccounted_w, 300);
    WT_ASSERT(wt_recon_complete(n));
    /* the supplies' conversion loss */
    WT_EQ_INT(n->psu_series, 2);
    REL(n->psu_loss_j, 50.0 * 3600);
    REL(n->psu_loss_share, 50.0 / 950);
    /* IT energy (PUE's and the accelerator share's denominator) from the hwmon wall */
    WT_EQ_STR(r.it.from, "hwmon");
    REL(r.it.j, 900.0 * 3600);
    WT_ASSERT(r.it.measured);
    REL(row_of(&r, "accelerator_share")->value, 400.0 / 900);
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

WT_TEST(a_wall_meter_of_the_topology_comes_before_the_hwmon_wall_and_rapl_before_grace)
{
    struct wt_store *st = build_site(db_path());
    /* gpu-01 (this node) also has an ACPI meter and a Grace-like cpu sensor: its PDU outlets and
     * RAPL packages stay its wall and CPU */
    hwmon(st, "", "power_meter", "power1", "", "wall", "integrated", 5000);
    hwmon(st, "", "grace", "power2", "Grace Power Socket 0", "cpu", "counter", 999);
    struct wt_topology *t = topo_from(site_yaml);
    struct wt_kpi_report r;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    const struct wt_recon_node *n = node(&r, "gpu-01");
    WT_EQ_STR(n->wall_from, "pdu_outlet");
    REL(n->wall_j, 1500.0 * 3600);
    REL(n->cpu_j, 150.0 * 3600);
    WT_EQ_INT(n->psu_series, 0);
    WT_EQ_STR(r.it.from, "meters");
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

WT_TEST(a_node_with_hwmon_supplies_only_leaves_the_chips_coverage_alone)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true};
    WT_EQ_INT(wt_store_open(db_path(), &o, &st, &err), 0);
    WT_EQ_INT(wt_store_begin_run(st, "", T0 - 60 * S, 10 * S, "test"), 0);
    gpu(st, "", "0", (struct prof){400, 400});
    /* another node of the store: its supplies only, no chip and no wall */
    hwmon(st, "gh-09", "pmbus", "power1", "pin", "psu_in", "counter", 500);
    struct wt_topology *t = topo_from(grace_yaml);
    struct wt_kpi_report r;
    WT_EQ_INT(wt_kpi_compute(st, t, T0, T0 + HOUR, NULL, &r, &err), 0);
    /* IT energy from the nodes' own sensors: the GPU, fully covered */
    WT_EQ_STR(r.it.from, "node_sensors");
    REL(r.it.j, 400.0 * 3600);
    WT_NEAR(r.it.coverage, 1, 1e-9);
    WT_ASSERT(r.it.measured);
    WT_EQ_INT(r.nnodes, 0); /* no wall anywhere: nothing to reconcile */
    wt_kpi_report_free(&r);
    wt_store_close(st);
    free(t);
}

/* For tests/cli/test_kpi.sh: writes the site where WATTAGE_KPI_SITE_DIR says. */
WT_TEST(write_site)
{
    const char *dir = getenv("WATTAGE_KPI_SITE_DIR");
    const char *t0 = getenv("WATTAGE_KPI_SITE_T0");
    char db[512], yml[512];
    if (t0)
        T0 = strtoll(t0, NULL, 10) * S;
    snprintf(db, sizeof db, "%s/site.db", dir ? dir : wt_test_dir());
    snprintf(yml, sizeof yml, "%s/site.yaml", dir ? dir : wt_test_dir());
    wt_store_close(build_site(db));
    FILE *f = fopen(yml, "w");
    WT_ASSERT(f != NULL);
    WT_ASSERT(fputs(site_yaml, f) >= 0);
    WT_EQ_INT(fclose(f), 0);
    struct wt_config cfg;
    struct wt_err err = {{0}};
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_config_load(yml, &cfg, &err), 0);
    WT_ASSERT(wt_config_section(&cfg, "topology") != NULL);
    wt_config_free(&cfg);
}
