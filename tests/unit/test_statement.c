/* SPDX-License-Identifier: MIT */
/* Statements: the PUE category from the IT meters' roles, the 15-minute slot coverage of a
 * series' readings (holes, gaps, the interpolated energy across a register's hole), and the
 * `statement` section's checks, the EU file's copy of a KPI's reason. The whole statement over a
 * store in tests/cli/test_statement.sh. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "audit/statement.h"
#include "audit/statement_eu.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "runner.h"

static void meter(struct wt_topology *t, enum wt_role r)
{
    t->meters[t->nmeters++].role = r;
}

WT_TEST(category_is_the_lowest_of_the_it_meters)
{
    struct wt_topology *t = calloc(1, sizeof *t);
    unsigned roles = 0;
    WT_EQ_INT(wt_stmt_category(t, &roles), 0); /* no IT meter */
    meter(t, WT_ROLE_FACILITY_TOTAL);
    meter(t, WT_ROLE_IT_INPUT);
    WT_EQ_INT(wt_stmt_category(t, &roles), 3);
    meter(t, WT_ROLE_PDU_OUTPUT);
    WT_EQ_INT(wt_stmt_category(t, &roles), 2);
    meter(t, WT_ROLE_UPS_OUTPUT);
    WT_EQ_INT(wt_stmt_category(t, &roles), 1);
    /* chip sensors, walls and BMCs are never E_IT */
    t->nmeters = 0;
    meter(t, WT_ROLE_PDU_OUTLET);
    meter(t, WT_ROLE_BMC);
    WT_EQ_INT(wt_stmt_category(t, &roles), 0);
    WT_EQ_U64(roles, 0);
    /* an it_total meter: not stated */
    meter(t, WT_ROLE_UPS_OUTPUT);
    meter(t, WT_ROLE_IT_TOTAL);
    WT_EQ_INT(wt_stmt_category(t, &roles), 0);
    WT_EQ_U64(roles, (1u << WT_ROLE_UPS_OUTPUT) | (1u << WT_ROLE_IT_TOTAL));
    free(t);
}

#define M (60LL * 1000000000LL)

WT_TEST(slots_measured_holes_and_gaps)
{
    /* readings every 15 min over 2 h, the one at 60 min missing; the span ending at 105 min is
     * a gap (a reset or a run start) */
    int64_t t[] = {0, 15 * M, 30 * M, 45 * M, 75 * M, 90 * M, 105 * M, 120 * M};
    double v[] = {0, 10, 20, 30, 50, 60, 60, 70};
    bool c[] = {false, true, true, true, true, true, false, true};
    unsigned char mask[8];
    memset(mask, 1, sizeof mask);
    double long_j = -1;
    wt_stmt_slots(t, v, c, 8, 0, 120 * M, mask, 8, &long_j);
    unsigned char want[8] = {1, 1, 1, 0, 0, 1, 0, 1};
    for (int i = 0; i < 8; i++)
        WT_EQ_INT(mask[i], want[i]);
    WT_NEAR(long_j, 20, 1e-9); /* the 45..75 span: its increase spread over the hole */
    /* one-minute power readings cover every slot; the first slot before the first reading
     * does not */
    int64_t tp[41];
    double vp[41];
    bool cp[41];
    for (int i = 0; i < 41; i++) {
        tp[i] = (i + 5) * M;
        vp[i] = 100;
        cp[i] = i > 0;
    }
    unsigned char m2[3] = {1, 1, 1};
    wt_stmt_slots(tp, vp, cp, 41, 0, 45 * M, m2, 3, &long_j);
    WT_EQ_INT(m2[0], 0);
    WT_EQ_INT(m2[1], 1);
    WT_EQ_INT(m2[2], 1);
}

static int conf_of(const char *yaml, struct wt_stmt_conf *c, struct wt_err *err)
{
    struct wt_ynode *root = NULL;
    int rc = wt_yaml_parse("s.yaml", yaml, strlen(yaml), &root, err);
    if (rc)
        return rc;
    rc = wt_stmt_conf_parse("s.yaml", wt_y_get(root, "statement"), c, err);
    wt_ynode_free(root);
    return rc;
}

WT_TEST(section_checks_name_the_place)
{
    struct wt_stmt_conf c;
    struct wt_err err = {{0}};
    WT_EQ_INT(conf_of("statement:\n  installed_it_kw: 800\n  commissioned: 2021-06\n", &c, &err),
              0);
    WT_NEAR(c.installed_it_kw, 800, 0);
    WT_NEAR(c.floor_area_m2, -1, 0); /* not given, never 0 */
    WT_NEAR(c.min_coverage, 0.95, 0);
    WT_EQ_STR(c.commissioned, "2021-06");
    WT_EQ_INT(conf_of("statement:\n  commissioned: June 2021\n", &c, &err), -EINVAL);
    WT_EQ_STR(err.msg, "s.yaml:2: statement.commissioned: expected YYYY-MM (got \"June 2021\")");
    WT_EQ_INT(conf_of("statement:\n  floor_area_m2: 100\n  white_space_m2: 200\n", &c, &err),
              -EINVAL);
    WT_CONTAINS(err.msg, "s.yaml:3: statement.white_space_m2:");
    WT_EQ_INT(conf_of("statement:\n  renewables:\n    - {type: rec, kwh: 5}\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "statement.renewables[0].type");
    WT_EQ_INT(conf_of("statement:\n  site_name: x\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "s.yaml:2:");
    /* a residual-mix factor goes with its source and year, and they with it */
    WT_EQ_INT(
        conf_of("statement:\n  residual_mix_g_per_kwh: 400\n  residual_mix_year: 2025\n", &c, &err),
        -EINVAL);
    WT_CONTAINS(err.msg, "statement.residual_mix_source: required with residual_mix_g_per_kwh");
    WT_EQ_INT(conf_of("statement:\n  residual_mix_g_per_kwh: 400\n  residual_mix_source: AIB\n", &c,
                      &err),
              -EINVAL);
    WT_CONTAINS(err.msg, "statement.residual_mix_year: required");
    WT_EQ_INT(
        conf_of("statement:\n  residual_mix_source: AIB\n  residual_mix_year: 2025\n", &c, &err),
        -EINVAL);
    WT_CONTAINS(err.msg, "statement.residual_mix_g_per_kwh: required with residual_mix_source");
    WT_EQ_INT(conf_of("statement:\n  residual_mix_g_per_kwh: 400\n  residual_mix_source: AIB\n"
                      "  residual_mix_year: 2025\n  renewables:\n"
                      "    - {type: ppa, kwh: 5, g_per_kwh: 12}\n",
                      &c, &err),
              0);
    WT_NEAR(c.residual_g_per_kwh, 400, 0);
    WT_EQ_INT(c.residual_year, 2025);
    WT_NEAR(c.ren[0].g_per_kwh, 12, 0);
    WT_NEAR(c.ren[0].kwh, 5, 0);
}

WT_TEST(fuel_factors_default_and_configured)
{
    struct wt_stmt_conf c;
    struct wt_err err = {{0}};
    WT_EQ_INT(conf_of("statement: {}\n", &c, &err), 0);
    /* the EN 50600-4 factsheet's factors: kWh per l, m3, kg, l */
    WT_NEAR(c.fuel_kwh[WT_FUEL_DIESEL], 9.9, 0);
    WT_NEAR(c.fuel_kwh[WT_FUEL_NATURAL_GAS], 10.5, 0);
    WT_NEAR(c.fuel_kwh[WT_FUEL_HYDROGEN], 38.9, 0);
    WT_NEAR(c.fuel_kwh[WT_FUEL_BIOETHANOL], 6, 0);
    /* counters hold m3 (kg for hydrogen): 1 m3 of diesel is 1000 l */
    WT_NEAR(wt_stmt_fuel_j(&c, WT_FUEL_DIESEL, 1), 9900 * 3.6e6, 1e-3);
    WT_NEAR(wt_stmt_fuel_j(&c, WT_FUEL_NATURAL_GAS, 2), 21 * 3.6e6, 1e-3);
    WT_NEAR(wt_stmt_fuel_j(&c, WT_FUEL_HYDROGEN, 1), 38.9 * 3.6e6, 1e-3);
    WT_NEAR(wt_stmt_fuel_j(&c, WT_FUEL_BIOETHANOL, 0.001), 6 * 3.6e6, 1e-6);
    WT_EQ_INT(conf_of("statement:\n  fuel_factors: {diesel: 10, hydrogen: 33.3}\n", &c, &err), 0);
    WT_NEAR(c.fuel_kwh[WT_FUEL_DIESEL], 10, 0);
    WT_NEAR(c.fuel_kwh[WT_FUEL_HYDROGEN], 33.3, 0);
    WT_NEAR(c.fuel_kwh[WT_FUEL_NATURAL_GAS], 10.5, 0); /* the others keep their defaults */
    WT_EQ_INT(conf_of("statement:\n  fuel_factors: {petrol: 9}\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "s.yaml:2:");
    WT_CONTAINS(err.msg, "statement.fuel_factors.petrol");
    WT_EQ_INT(conf_of("statement:\n  fuel_factors:\n    diesel: 0\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "s.yaml:3: statement.fuel_factors.diesel");
}

WT_TEST(tenants_each_outlet_once)
{
    struct wt_stmt_conf *c = malloc(sizeof *c);
    struct wt_err err = {{0}};
    WT_ASSERT(c != NULL);
    WT_EQ_INT(conf_of("statement:\n  tenants:\n"
                      "    - {name: acme, outlets: [pdu-a/1, pdu-a/2]}\n"
                      "    - name: globex\n      outlets:\n        - pdu-b/7\n",
                      c, &err),
              0);
    WT_EQ_INT((int)c->ntenants, 2);
    WT_EQ_INT((int)c->noutlets, 3);
    WT_EQ_STR(c->tenants[1].name, "globex");
    WT_EQ_STR(c->outlets[2].name, "pdu-b/7");
    WT_EQ_INT(c->outlets[2].tenant, 1);
    WT_EQ_INT(c->outlets[2].line, 6);
    /* an outlet named twice, across tenants or in one: the second place, and the first */
    WT_EQ_INT(conf_of("statement:\n  tenants:\n"
                      "    - {name: acme, outlets: [pdu-a/1, pdu-a/2]}\n"
                      "    - {name: globex, outlets: [pdu-a/2]}\n",
                      c, &err),
              -EINVAL);
    WT_EQ_STR(err.msg, "s.yaml:4: statement.tenants[1].outlets[0]: pdu-a/2 is named twice "
                       "(tenant acme's, line 3)");
    WT_EQ_INT(conf_of("statement:\n  tenants:\n    - {name: acme, outlets: [x/1, x/1]}\n", c, &err),
              -EINVAL);
    WT_CONTAINS(err.msg, "statement.tenants[0].outlets[1]: x/1 is named twice");
    WT_EQ_INT(conf_of("statement:\n  tenants:\n    - {name: a, outlets: [x/1]}\n"
                      "    - {name: a, outlets: [x/2]}\n",
                      c, &err),
              -EINVAL);
    WT_CONTAINS(err.msg, "s.yaml:4: statement.tenants[1].name: tenant \"a\" is listed twice");
    WT_EQ_INT(conf_of("statement:\n  tenants:\n    - {name: a, outlets: []}\n", c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "s.yaml:3: statement.tenants[0].outlets: expected a list");
    WT_EQ_INT(conf_of("statement:\n  tenants:\n    - {outlets: [x/1]}\n", c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "statement.tenants[0].name");
    free(c);
}

/* A KPI's reason as long as its field (319 characters) reaches the EU file whole: its copy was
 * a 300-byte buffer, cut there (and the sanitizer build stopped on it). */
WT_TEST(eu_file_keeps_a_long_reason_whole)
{
    struct wt_statement *s = calloc(1, sizeof *s);
    struct wt_stmt_conf *c = calloc(1, sizeof *c);
    WT_ASSERT(s != NULL && c != NULL);
    s->kpis[0].symbol = "PUE";
    memset(s->kpis[0].why, 'w', sizeof s->kpis[0].why - 4);
    memcpy(s->kpis[0].why + sizeof s->kpis[0].why - 4, "END", 4);
    s->nkpis = 1;
    const char *schema = "{\"$id\": \"t:1\", \"x-wattage\": {\"date\": \"2026-01-01\"}, "
                         "\"properties\": {\"kpis\": {\"properties\": {\"PUE\": {\"x-wattage\": "
                         "{\"source\": \"pue\", \"unit\": \"1\", \"tag\": \"Q\"}}}}}}";
    char *js = NULL, *csv = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_stmt_eu(s, c, schema, strlen(schema), "t.json", 2026, &js, &csv, &err), 0);
    cJSON *d = cJSON_Parse(js);
    const char *na = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "kpis"), "PUE"),
        "not_available"));
    WT_ASSERT(na != NULL);
    WT_EQ_INT((int)strlen(na), (int)sizeof s->kpis[0].why - 1);
    WT_EQ_STR(na, s->kpis[0].why);
    WT_CONTAINS(csv, "wwwwEND,Q");
    cJSON_Delete(d);
    free(js);
    free(csv);
    free(c);
    free(s);
}

/* The contractual instruments against the quality criteria: each refusal with its named reason,
 * a criterion not stated listed as unchecked, and a bad vintage refused at its file:line. */
WT_TEST(instruments_refused_with_a_named_reason)
{
    struct wt_stmt_conf c;
    struct wt_err err = {{0}};
    struct wt_stmt_instrument in[WT_STMT_MAX_RENEWABLES];
    const int64_t y26 = 1767225600LL * WT_NS_PER_S, y27 = 1798761600LL * WT_NS_PER_S;
    WT_EQ_INT(conf_of("statement:\n  site: hall-1\n  market: DE-LU\n  renewables:\n"
                      "    - {type: goo, kwh: 1, market: DE-LU, retired_for: hall-1, "
                      "vintage: 2026}\n"
                      "    - {type: goo, kwh: 2, market: FR, retired_for: hall-1, vintage: "
                      "2026-03}\n"
                      "    - {type: ppa, kwh: 3, retired_for: hall-2}\n"
                      "    - {type: goo, kwh: 4, vintage: 2025}\n"
                      "    - {type: goo, kwh: 5}\n",
                      &c, &err),
              0);
    WT_EQ_INT((int)c.nren, 5);
    WT_EQ_STR(c.market, "DE-LU");
    WT_EQ_STR(c.ren[1].vintage, "2026-03");
    wt_stmt_instruments(&c, y26, y27, in);
    /* all three criteria met: in both */
    WT_ASSERT(in[0].in_ref && in[0].in_cue);
    WT_EQ_STR(in[0].refused, "");
    WT_EQ_STR(in[0].unchecked, "");
    /* another market: REF counts it (where the source is does not change REF), CUE not */
    WT_ASSERT(in[1].in_ref && !in[1].in_cue);
    WT_CONTAINS(in[1].refused, "outside_market_boundary: market FR, not the site's DE-LU");
    /* retired for another site: in neither */
    WT_ASSERT(!in[2].in_ref && !in[2].in_cue);
    WT_CONTAINS(in[2].refused, "not_retired_for_site: retired for hall-2, not for this site");
    WT_CONTAINS(in[2].unchecked, "vintage");
    /* generated before the period: in neither */
    WT_ASSERT(!in[3].in_ref && !in[3].in_cue);
    WT_CONTAINS(in[3].refused, "vintage_outside_period: generated in 2025");
    /* nothing stated: counted, each criterion unchecked */
    WT_ASSERT(in[4].in_ref && in[4].in_cue);
    WT_EQ_STR(in[4].unchecked, "retired_for; vintage; market");
    /* the same vintage over 2025 is in the period */
    wt_stmt_instruments(&c, y26 - 86400LL * WT_NS_PER_S, y26, in);
    WT_ASSERT(in[3].in_ref);
    WT_ASSERT(!in[0].in_ref); /* and 2026's is not */

    /* without statement.site or statement.market the criteria stated cannot be checked */
    WT_EQ_INT(conf_of("statement:\n  renewables:\n"
                      "    - {type: goo, kwh: 1, market: DE-LU}\n"
                      "    - {type: goo, kwh: 1, retired_for: hall-1}\n",
                      &c, &err),
              0);
    wt_stmt_instruments(&c, y26, y27, in);
    WT_ASSERT(in[0].in_ref && !in[0].in_cue);
    WT_CONTAINS(in[0].refused, "market_not_checked: market DE-LU, and statement.market");
    WT_ASSERT(!in[1].in_ref && !in[1].in_cue);
    WT_CONTAINS(in[1].refused, "statement.site is not given");

    WT_EQ_INT(
        conf_of("statement:\n  renewables:\n    - {type: goo, kwh: 1, vintage: 26}\n", &c, &err),
        -EINVAL);
    WT_CONTAINS(err.msg, "s.yaml:3: statement.renewables[0].vintage: expected YYYY or YYYY-MM");
    WT_EQ_INT(conf_of("statement:\n  renewables:\n    - {type: goo, kwh: 1, vintage: 2026-13}\n",
                      &c, &err),
              -EINVAL);
    WT_CONTAINS(err.msg, "statement.renewables[0].vintage");
}
