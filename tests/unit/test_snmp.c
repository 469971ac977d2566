/* SPDX-License-Identifier: MIT */
/*
 * SNMP collector without a network: profile selection by sysObjectID, unit factors, the config
 * section's errors (file:line and path), energy counters (wrap, reset), and every real recording
 * under ../shared/data/snmp fed varbind by varbind, checked against the values LibreNMS decodes
 * from the same recording (the JSON files of librenms-expected-sensors): each expected sensor's OID
 * alone must give exactly one reading of the right metric and value, and the whole recording must
 * hold that same reading (same point and kind) with that value.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collect/snmp.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/reading.h"
#include "core/source.h"
#include "core/yamltree.h"
#include "readings.h"
#include "runner.h"

#define T0 (1764439200LL * 1000000000LL)
#define DATA "../shared/data/snmp/"

/* ---- recordings ---------------------------------------------------------------------------- */

struct line {
    char *oid;
    int tag;
    char *value;
};

struct rec {
    struct line *l;
    size_t n;
};

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Reads a .snmprec file: OID|TAG|VALUE per line; TAG "4x" is a hex-encoded string. */
static struct rec load_rec(const char *rel)
{
    struct rec r = {0};
    size_t cap = 0;
    FILE *f = fopen(wt_test_src_path(rel), "r");
    if (!f)
        wt_test_fail(__FILE__, __LINE__, "cannot open %s", wt_test_src_path(rel));
    char buf[70000];
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = '\0';
        char *a = strchr(buf, '|');
        char *b = a ? strchr(a + 1, '|') : NULL;
        if (!a || !b)
            continue;
        *a = *b = '\0';
        char *v = b + 1;
        bool hex = strchr(a + 1, 'x') != NULL;
        if (hex) {
            size_t k = 0;
            for (size_t i = 0; v[i] && v[i + 1]; i += 2) {
                int h = hexval(v[i]), l = hexval(v[i + 1]);
                if (h < 0 || l < 0)
                    break;
                v[k++] = (char)(h * 16 + l);
            }
            v[k] = '\0';
        }
        if (r.n == cap) {
            cap = cap ? cap * 2 : 1024;
            r.l = realloc(r.l, cap * sizeof *r.l);
            WT_ASSERT(r.l);
        }
        r.l[r.n].oid = strdup(buf[0] == '.' ? buf + 1 : buf);
        r.l[r.n].tag = atoi(a + 1);
        r.l[r.n].value = strdup(v);
        r.n++;
    }
    fclose(f);
    WT_ASSERT(r.n > 0);
    return r;
}

static const struct line *rec_find(const struct rec *r, const char *oid)
{
    if (oid[0] == '.')
        oid++;
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->l[i].oid, oid) == 0)
            return &r->l[i];
    return NULL;
}

static struct wt_snmp_target target(const char *name)
{
    struct wt_snmp_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    snprintf(t.profile, sizeof t.profile, "auto");
    snprintf(t.host, sizeof t.host, "127.0.0.1");
    t.port = 161;
    return t;
}

/* Feeds a whole recording into a new state (profile from its sysObjectID unless given). */
static struct wt_snmp *feed_all(const struct rec *r, const struct wt_snmp_profile *p)
{
    struct wt_snmp_target t = target("t");
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_snmp_state_new(&t, p, &s, &err), 0);
    for (size_t i = 0; i < r->n; i++)
        WT_EQ_INT(wt_snmp_feed(s, r->l[i].oid, r->l[i].tag, r->l[i].value), 0);
    return s;
}

/* Sensor classes of the oracle that are in the scope, and the metric each becomes. */
static int oracle_metric(const char *cls)
{
    if (strcmp(cls, "power") == 0)
        return WT_M_FAC_POWER_W;
    if (strcmp(cls, "current") == 0)
        return WT_M_FAC_CURRENT_A;
    if (strcmp(cls, "voltage") == 0)
        return WT_M_FAC_VOLTAGE_V;
    if (strcmp(cls, "power_factor") == 0)
        return WT_M_FAC_POWER_FACTOR;
    if (strcmp(cls, "power_consumed") == 0)
        return WT_M_FAC_ENERGY_J;
    return -1; /* state, temperature, frequency, load (%), charge, runtime, fanspeed... */
}

/* The oracle's value in wattage's base unit. */
static double oracle_value(int metric, double v)
{
    if (metric == WT_M_FAC_ENERGY_J)
        return v * 3.6e6; /* LibreNMS power_consumed is kWh */
    if (metric == WT_M_FAC_POWER_FACTOR && v > 1.0)
        return v / 100; /* recorded undivided as a percentage (Sentry3 systemPowerFactor 100) */
    return v;
}

/* The readings of metric other than wattage_facility_up/info. */
static const struct wt_reading *only_reading(const struct wt_batch *b, int metric, size_t *n)
{
    const struct wt_reading *found = NULL;
    *n = 0;
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric == metric) {
            found = &b->r[i];
            (*n)++;
        }
    return found;
}

/*
 * Checks every in-scope sensor of the oracle against the recording. exclude: OID prefixes
 * outside the scope (with the reason in the caller). Returns how many were checked.
 */
static size_t check_oracle(const char *name, const char *const *exclude, size_t *excluded)
{
    char path[256];
    snprintf(path, sizeof path, DATA "librenms-snmprec/%s.snmprec", name);
    struct rec r = load_rec(path);
    struct wt_snmp *all = feed_all(&r, NULL);
    const struct wt_snmp_profile *p = wt_snmp_state_profile(all);
    if (!p)
        wt_test_fail(__FILE__, __LINE__, "%s: no profile chosen", name);
    struct wt_batch full = {0};
    WT_EQ_INT(wt_snmp_readings(all, T0, &full), 0);

    snprintf(path, sizeof path, DATA "librenms-expected-sensors/%s.json", name);
    char *js = wt_test_read(wt_test_src_path(path), NULL);
    cJSON *root = cJSON_Parse(js);
    WT_ASSERT(root);
    cJSON *sensors = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(root, "sensors"), "discovery"), "sensors");
    WT_ASSERT(cJSON_IsArray(sensors));
    size_t checked = 0;
    *excluded = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, sensors)
    {
        const char *cls = cJSON_GetStringValue(cJSON_GetObjectItem(e, "sensor_class"));
        const char *oid = cJSON_GetStringValue(cJSON_GetObjectItem(e, "sensor_oid"));
        cJSON *cur = cJSON_GetObjectItem(e, "sensor_current");
        int metric = cls ? oracle_metric(cls) : -1;
        if (metric < 0 || !oid || !cJSON_IsNumber(cur))
            continue;
        if (oid[0] == '.')
            oid++;
        bool skip = false;
        for (size_t k = 0; exclude && exclude[k]; k++)
            skip |= strncmp(oid, exclude[k], strlen(exclude[k])) == 0;
        if (skip) {
            (*excluded)++;
            continue;
        }
        double want = oracle_value(metric, cur->valuedouble);
        const struct line *l = rec_find(&r, oid);
        if (!l)
            wt_test_fail(__FILE__, __LINE__, "%s: %s not in the recording", name, oid);

        /* The sensor's OID alone: exactly one reading, of that metric, with that value. */
        struct wt_snmp_target t = target("t");
        struct wt_snmp *one = NULL;
        struct wt_err err = {{0}};
        struct wt_batch b = {0};
        WT_EQ_INT(wt_snmp_state_new(&t, p, &one, &err), 0);
        WT_EQ_INT(wt_snmp_feed(one, l->oid, l->tag, l->value), 0);
        WT_EQ_INT(wt_snmp_readings(one, T0, &b), 0);
        size_t n = 0;
        const struct wt_reading *rd = only_reading(&b, metric, &n);
        if (n != 1)
            wt_test_fail(__FILE__, __LINE__, "%s: %s (%s \"%s\") gave %zu readings of %s", name,
                         oid, cls, cJSON_GetStringValue(cJSON_GetObjectItem(e, "sensor_descr")), n,
                         wt_metrics[metric].name);
        if (fabs(rd->value - want) > 1e-9 * fmax(1, fabs(want)))
            wt_test_fail(__FILE__, __LINE__, "%s: %s (%s): %.9g, LibreNMS says %.9g", name, oid,
                         cls, rd->value, want);
        char point[64], kind[32];
        WT_EQ_INT(wt_labels_get(rd->labels, "point", point, sizeof point), 0);
        WT_EQ_INT(wt_labels_get(rd->labels, "kind", kind, sizeof kind), 0);

        /* The whole recording holds the same reading. */
        bool seen = false;
        for (size_t i = 0; i < full.len && !seen; i++) {
            char p2[64], k2[32];
            const struct wt_reading *q = &full.r[i];
            seen = q->metric == metric && wt_labels_get(q->labels, "point", p2, sizeof p2) == 0 &&
                   wt_labels_get(q->labels, "kind", k2, sizeof k2) == 0 && strcmp(p2, point) == 0 &&
                   strcmp(k2, kind) == 0 && fabs(q->value - want) <= 1e-9 * fmax(1, fabs(want));
        }
        if (!seen)
            wt_test_fail(__FILE__, __LINE__,
                         "%s: %s (%s) = %.9g is not in the recording's readings at %s/%s", name,
                         oid, cls, want, kind, point);
        wt_batch_free(&b);
        wt_snmp_state_free(one);
        checked++;
    }
    cJSON_Delete(root);
    free(js);
    wt_batch_free(&full);
    wt_snmp_state_free(all);
    return checked;
}

/* ---- profiles and units -------------------------------------------------------------------- */

WT_TEST(profile_by_sysobjectid)
{
    static const struct {
        const char *oid, *profile;
    } cases[] = {
        {"1.3.6.1.4.1.318.1.3.4.8", "apc-rpdu"},    {"1.3.6.1.4.1.318.1.3.4.6", "apc-rpdu"},
        {"1.3.6.1.4.1.318.1.3.27", "apc-ups"},      {"1.3.6.1.4.1.318.1.3.5.4", "apc-ups"},
        {"1.3.6.1.4.1.534.6.6.7", "eaton-epdu"},    {".1.3.6.1.4.1.232.165.11", "hpe-pdu3"},
        {"1.3.6.1.4.1.1718.3", "sentry3"},          {"1.3.6.1.4.1.1718.4", "sentry4"},
        {"1.3.6.1.4.1.21239.42.1.53", "vertiv-v5"}, {"1.3.6.1.4.1.13742.6", "raritan-pdu2"},
        {"1.3.6.1.4.1.13742.4", "raritan-pdu"},     {"1.3.6.1.4.1.534.1", "ups-mib"},
        {"1.3.6.1.4.1.705.1", "ups-mib"},           {"1.3.6.1.4.1.21317", "supermicro-bmc"},
        {"1.3.6.1.4.1.476.1.42", "liebert-gp-pdu"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct wt_snmp_profile *p = wt_snmp_profile_match(cases[i].oid);
        if (!p)
            wt_test_fail(__FILE__, __LINE__, "%s matches nothing", cases[i].oid);
        WT_EQ_STR(p->name, cases[i].profile);
        WT_ASSERT(wt_snmp_profile_find(cases[i].profile) == p);
    }
    /* Whole sub-identifiers only, and unknown devices match nothing. */
    WT_ASSERT(wt_snmp_profile_match("1.3.6.1.4.1.1718.30") == NULL);
    WT_ASSERT(wt_snmp_profile_match("1.3.6.1.4.1.3181") == NULL);
    WT_ASSERT(wt_snmp_profile_match("1.3.6.1.4.1.674.10892.5") == NULL);
    WT_ASSERT(wt_snmp_profile_match("") == NULL);
    WT_ASSERT(wt_snmp_profile_find("nope") == NULL);
    /* The APC InRow cooling unit is not a rack PDU. */
    WT_ASSERT(wt_snmp_profile_match("1.3.6.1.4.1.318.1.3.14.23") == NULL);
}

WT_TEST(unit_factors)
{
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_ENERGY_J, "kWh"), 3.6e6, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_ENERGY_J, "Wh"), 3600, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_ENERGY_J, ""), 1, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_POWER_W, "kW"), 1000, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_CURRENT_A, "mA"), 0.001, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_VOLTAGE_V, "mV"), 0.001, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_POWER_FACTOR, "%"), 0.01, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_POWER_W, "kWh"), 0, 0);
    WT_NEAR(wt_snmp_unit_factor(WT_M_FAC_CURRENT_A, "V"), 0, 0);
}

/* ---- values -------------------------------------------------------------------------------- */

/* A generic profile of one column, for value tests. */
static struct wt_snmp *generic1(const char *oid, int metric, double scale, unsigned flags)
{
    struct wt_snmp_target t = target("g");
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    snprintf(t.profile, sizeof t.profile, "generic");
    snprintf(t.generic_oid[0], sizeof t.generic_oid[0], "%s", oid);
    snprintf(t.generic_kind[0], sizeof t.generic_kind[0], "outlet");
    snprintf(t.generic_point[0], sizeof t.generic_point[0], "outlet%%1");
    t.generic[0].metric = metric;
    t.generic[0].scale = scale;
    t.generic[0].flags = flags;
    t.ngeneric = 1;
    WT_EQ_INT(wt_snmp_state_new(&t, NULL, &s, &err), 0);
    WT_EQ_STR(wt_snmp_state_profile(s)->name, "generic");
    return s;
}

static double poll1(struct wt_snmp *s, int64_t t, const char *oid, int tag, const char *v,
                    int metric, const char *labels)
{
    struct wt_batch b = {0};
    wt_snmp_reset(s);
    WT_EQ_INT(wt_snmp_feed(s, oid, tag, v), 0);
    WT_EQ_INT(wt_snmp_readings(s, t, &b), 0);
    double x = reading_value(&b, metric, labels);
    wt_batch_free(&b);
    return x;
}

WT_TEST(scaling_and_not_available)
{
    struct wt_snmp *s = generic1("1.3.6.1.4.1.9.1", WT_M_FAC_CURRENT_A, 0.001, 0);
    struct wt_batch b = {0};
    const char *lb = "source=\"snmp\",target=\"g\",point=\"outlet3\",kind=\"outlet\"";
    WT_NEAR(poll1(s, T0, "1.3.6.1.4.1.9.1.3", 2, "14108", WT_M_FAC_CURRENT_A, lb), 14.108, 1e-12);
    WT_NEAR(poll1(s, T0, ".1.3.6.1.4.1.9.1.3", 66, "790", WT_M_FAC_CURRENT_A, lb), 0.79, 1e-12);
    /* Numbers sent as text (Supermicro "0.375000"). */
    WT_NEAR(poll1(s, T0, "1.3.6.1.4.1.9.1.3", 4, "375.000", WT_M_FAC_CURRENT_A, lb), 0.375, 1e-12);
    /* Negative: "not available", absent rather than zero; text that is no number too. */
    wt_snmp_reset(s);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.9.1.3", 2, "-1"), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.9.1.4", 4, "notsupported"), 0);
    /* An OID no column covers is ignored. */
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.9.2.3", 2, "5"), 0);
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    WT_EQ_INT(count_readings(&b, WT_M_FAC_CURRENT_A), 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_UP, "source=\"snmp\",target=\"g\""), 1, 0);
    WT_EQ_INT(count_readings(&b, WT_M_FAC_INFO), 1);
    wt_batch_free(&b);
    wt_snmp_state_free(s);

    /* Eaton's power factor carries leading/lagging in its sign. */
    const struct wt_snmp_profile *eaton = wt_snmp_profile_find("eaton-epdu");
    struct wt_snmp_target t = target("e");
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_snmp_state_new(&t, eaton, &s, &err), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.5.1.6.0.1", 2, "-842"), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.1.1.3.0.1", 4, "web \"1\""), 0);
    /* A second unit of a daisy chain gets its own points. */
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.5.1.6.1.1", 2, "500"), 0);
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_FACTOR,
                          "source=\"snmp\",target=\"e\",point=\"outlet1\",kind=\"outlet\","
                          "name=\"web \\\"1\\\"\""),
            0.842, 1e-12);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_FACTOR,
                          "source=\"snmp\",target=\"e\",point=\"unit1.outlet1\",kind=\"outlet\""),
            0.5, 1e-12);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

WT_TEST(long_names_are_cut_not_fatal)
{
    /* The longest target name, point and place the config allows, and a 47-byte outlet name. */
    struct wt_snmp_target t = target("abcdefghijklmnopqrstuvw");
    snprintf(t.place.node, sizeof t.place.node, "%s", "n123456789012345678901");
    snprintf(t.place.rack, sizeof t.place.rack, "%s", "r123456789012345678901");
    snprintf(t.place.zone, sizeof t.place.zone, "%s", "z12345678901234567890");
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_state_new(&t, wt_snmp_profile_find("eaton-epdu"), &s, &err), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.5.1.3.0.1", 2, "80"), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.1.1.3.0.1", 4,
                           "\"\"\"\"\"\"\"\"\"\"quoted outlet name that is long, very long"),
              0);
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    WT_EQ_INT(count_readings(&b, WT_M_FAC_POWER_W), 1);
    const struct wt_reading *r = NULL;
    for (size_t i = 0; i < b.len; i++)
        if (b.r[i].metric == WT_M_FAC_POWER_W)
            r = &b.r[i];
    WT_CONTAINS(r->labels, "zone=\"z12345678901234567890\"");
    /* Escaped, the name does not fit whole: it is cut, and the reading is kept. */
    WT_CONTAINS(r->labels, "name=\"\\\"\\\"");
    WT_ASSERT(strstr(r->labels, "very long") == NULL);
    WT_NEAR(r->value, 80, 0);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

WT_TEST(names_are_valid_utf8)
{
    const struct wt_snmp_profile *eaton = wt_snmp_profile_find("eaton-epdu");
    struct wt_snmp_target t = target("e");
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_state_new(&t, eaton, &s, &err), 0);
    /* Latin-1 "Kühlung", and 46 ASCII bytes then a 2-byte UTF-8 letter cut by the 47-byte cap. */
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.5.1.3.0.1", 2, "10"), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.1.1.3.0.1", 4, "K\xfchlung \xe2\x82\xac"),
              0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.5.1.3.0.2", 2, "20"), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.1.1.3.0.2", 4,
                           "0123456789012345678901234567890123456789012345\xc3\xa9"),
              0);
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W,
                          "source=\"snmp\",target=\"e\",point=\"outlet1\",kind=\"outlet\","
                          "name=\"K?hlung \xe2\x82\xac\""),
            10, 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W,
                          "source=\"snmp\",target=\"e\",point=\"outlet2\",kind=\"outlet\","
                          "name=\"0123456789012345678901234567890123456789012345\""),
            20, 0);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

WT_TEST(energy_counter_wrap_and_reset)
{
    /* Eaton outletWh: Unsigned32 watt-hours, wraps at 2^32. */
    struct wt_snmp *s = generic1("1.3.6.1.4.1.9.5", WT_M_FAC_ENERGY_J, 3600, 0);
    const char *lb = "source=\"snmp\",target=\"g\",point=\"outlet1\",kind=\"outlet\"";
    const char *o = "1.3.6.1.4.1.9.5.1";
    int64_t S = 1000000000LL;
    /* The total starts at what the meter had counted. */
    WT_NEAR(poll1(s, T0, o, 66, "4294967000", WT_M_FAC_ENERGY_J, lb), 4294967000.0 * 3600, 1);
    WT_NEAR(poll1(s, T0 + 10 * S, o, 66, "4294967290", WT_M_FAC_ENERGY_J, lb), 4294967290.0 * 3600,
            1);
    /* Wrapped past 2^32: 6 + 10 Wh more, never a drop. */
    WT_NEAR(poll1(s, T0 + 20 * S, o, 66, "10", WT_M_FAC_ENERGY_J, lb), (4294967290.0 + 16) * 3600,
            1);
    wt_snmp_state_free(s);

    /* A Counter64 near 2^64 that wraps: the total is no 64-bit sum (found by fuzzing Modbus). */
    s = generic1("1.3.6.1.4.1.9.5", WT_M_FAC_ENERGY_J, 1, 0);
    double big = poll1(s, T0, o, 70, "18446744073709551000", WT_M_FAC_ENERGY_J, lb);
    WT_NEAR(big, 18446744073709551000.0, 1e5);
    WT_ASSERT(poll1(s, T0 + 10 * S, o, 70, "1000", WT_M_FAC_ENERGY_J, lb) >= big);
    wt_snmp_state_free(s);

    /* APC rPDU2 energy: INTEGER tenths of kWh, user resettable: a reset is no negative step. */
    s = generic1("1.3.6.1.4.1.9.6", WT_M_FAC_ENERGY_J, 0.1 * 3.6e6, 0);
    o = "1.3.6.1.4.1.9.6.1";
    WT_NEAR(poll1(s, T0, o, 2, "19677", WT_M_FAC_ENERGY_J, lb), 19677 * 0.1 * 3.6e6, 1);
    WT_NEAR(poll1(s, T0 + 3600 * S, o, 2, "19680", WT_M_FAC_ENERGY_J, lb), 19680 * 0.1 * 3.6e6, 1);
    /* Reset to 0 by the user, then 0.2 kWh counted since: the total goes on from 1968.0. */
    double v = poll1(s, T0 + 7200 * S, o, 2, "2", WT_M_FAC_ENERGY_J, lb);
    WT_NEAR(v, (19680 + 2) * 0.1 * 3.6e6, 1);
    wt_snmp_state_free(s);
}

WT_TEST(raritan_decimal_digits)
{
    /* PDU2-MIB: value / 10^digits, digits read from the recording itself. */
    struct rec r = load_rec(DATA "librenms-snmprec/raritan-pdu_px3.snmprec");
    struct wt_snmp *s = feed_all(&r, NULL);
    WT_EQ_STR(wt_snmp_state_profile(s)->name, "raritan-pdu2");
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    static const struct {
        int type, metric;
        double unit;
    } types[] = {{1, WT_M_FAC_CURRENT_A, 1},
                 {4, WT_M_FAC_VOLTAGE_V, 1},
                 {5, WT_M_FAC_POWER_W, 1},
                 {7, WT_M_FAC_POWER_FACTOR, 1},
                 {8, WT_M_FAC_ENERGY_J, 3600}};
    size_t checked = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char vo[80], dg[80];
        snprintf(vo, sizeof vo, "1.3.6.1.4.1.13742.6.5.2.3.1.4.1.1.%d", types[i].type);
        snprintf(dg, sizeof dg, "1.3.6.1.4.1.13742.6.3.3.4.1.7.1.1.%d", types[i].type);
        const struct line *v = rec_find(&r, vo), *d = rec_find(&r, dg);
        if (!v || !d)
            continue;
        double want = atof(v->value) / pow(10, atoi(d->value)) * types[i].unit;
        WT_NEAR(reading_value(&b, types[i].metric,
                              "source=\"snmp\",target=\"t\",point=\"inlet1\",kind=\"inlet\""),
                want, 1e-9 * fmax(1, want));
        checked++;
    }
    WT_ASSERT(checked >= 4);
    /* 24 metered outlets, each with its power. */
    size_t outlets = 0;
    for (size_t i = 0; i < b.len; i++)
        outlets += b.r[i].metric == WT_M_FAC_POWER_W && strstr(b.r[i].labels, "kind=\"outlet\"");
    WT_EQ_INT(outlets, 24);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

/* The label value of key in r's labels, or "" when absent. */
static const char *label_of(const struct wt_reading *r, const char *key, char *buf, size_t n)
{
    if (wt_labels_get(r->labels, key, buf, n) != 0)
        buf[0] = '\0';
    return buf;
}

WT_TEST(raritan_outlets_carry_their_names)
{
    /* outletName is indexed pdu.outlet, the values pdu.outlet.sensor-type: every reading of an
     * outlet carries the name the recording gives that outlet, and none where it gives "". */
    struct rec r = load_rec(DATA "librenms-snmprec/raritan-pdu_px3.snmprec");
    struct wt_snmp *s = feed_all(&r, NULL);
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    size_t named = 0, outlets = 0;
    for (size_t i = 0; i < b.len; i++) {
        char kind[16], point[32], name[64], oid[80];
        if (strcmp(label_of(&b.r[i], "kind", kind, sizeof kind), "outlet") != 0 &&
            strcmp(kind, "inlet") != 0)
            continue;
        label_of(&b.r[i], "point", point, sizeof point);
        int n = atoi(point + strlen(kind));
        WT_ASSERT(n > 0);
        snprintf(oid, sizeof oid, "1.3.6.1.4.1.13742.6.3.%d.3.1.3.1.%d",
                 strcmp(kind, "outlet") == 0 ? 5 : 3, n);
        const struct line *l = rec_find(&r, oid);
        WT_ASSERT(l);
        if (strcmp(label_of(&b.r[i], "name", name, sizeof name), l->value) != 0)
            wt_test_fail(__FILE__, __LINE__, "%s: name \"%s\", the recording says \"%s\"", point,
                         name, l->value);
        outlets += strcmp(kind, "outlet") == 0 && b.r[i].metric == WT_M_FAC_POWER_W;
        named += l->value[0] != '\0' && b.r[i].metric == WT_M_FAC_POWER_W;
    }
    WT_EQ_INT(outlets, 24);
    WT_EQ_INT(named, 8); /* the recording names 8 of its outlets, the inlet not */
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

/* The recording without the lines whose OID starts with drop (NULL: all of it). */
static struct wt_snmp *feed_without(const struct rec *r, const char *drop)
{
    struct wt_snmp_target t = target("t");
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_snmp_state_new(&t, NULL, &s, &err), 0);
    for (size_t i = 0; i < r->n; i++)
        if (!drop || strncmp(r->l[i].oid, drop, strlen(drop)) != 0)
            WT_EQ_INT(wt_snmp_feed(s, r->l[i].oid, r->l[i].tag, r->l[i].value), 0);
    return s;
}

#define APC_LOAD "1.3.6.1.4.1.318.1.1.12.2.3.1.1."
#define APC_BANK2 "1.3.6.1.4.1.318.1.1.26.8."

WT_TEST(apc_load_status_rows_are_phases_or_banks)
{
    /* Single-phase AP8932/AP7902B with two banks: rPDULoadStatus rows 2 and 3 have phase number
     * 0 and bank numbers 1, 2. They are banks (from the rPDU2 bank table when there is one, else
     * from these rows), never phase2/phase3. */
    static const char *const files[] = {"snmpsim-data/apc-8932", "snmpsim-data/apc-7902b"};
    for (size_t f = 0; f < 2; f++) {
        char path[128];
        snprintf(path, sizeof path, DATA "%s.snmprec", files[f]);
        struct rec r = load_rec(path);
        const struct line *np = rec_find(&r, "1.3.6.1.4.1.318.1.1.12.2.1.2.0");
        WT_ASSERT(np);
        int nphases = atoi(np->value);
        for (int pass = 0; pass < 2; pass++) {
            struct wt_snmp *s = feed_without(&r, pass ? APC_BANK2 : NULL);
            struct wt_batch b = {0};
            WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
            int phases = 0, banks = 0;
            for (int row = 1; row <= 8; row++) {
                char o[80], lb[WT_LABELS_LEN];
                snprintf(o, sizeof o, APC_LOAD "2.%d", row);
                const struct line *load = rec_find(&r, o);
                if (!load)
                    continue;
                snprintf(o, sizeof o, APC_LOAD "4.%d", row);
                const struct line *ph = rec_find(&r, o);
                snprintf(o, sizeof o, APC_LOAD "5.%d", row);
                const struct line *bk = rec_find(&r, o);
                WT_ASSERT(ph && bk);
                bool is_bank = atoi(ph->value) == 0;
                snprintf(o, sizeof o, "%s%s", is_bank ? "bank" : "phase",
                         is_bank ? bk->value : ph->value);
                WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "snmp", "target", "t", "point", o,
                                    "kind", is_bank ? "bank" : "phase", NULL),
                          0);
                double v = reading_value(&b, WT_M_FAC_CURRENT_A, lb);
                if (!is_bank || pass == 1)
                    WT_NEAR(v, atof(load->value) * 0.1, 1e-9);
                phases += !is_bank;
                banks += is_bank;
            }
            WT_EQ_INT(phases, nphases);
            WT_EQ_INT(banks, 2);
            /* no point of kind phase beyond the unit's phases, one bank series each */
            size_t phase_series = 0, bank_series = 0;
            for (size_t i = 0; i < b.len; i++) {
                char kind[16];
                if (b.r[i].metric != WT_M_FAC_CURRENT_A)
                    continue;
                label_of(&b.r[i], "kind", kind, sizeof kind);
                phase_series += strcmp(kind, "phase") == 0;
                bank_series += strcmp(kind, "bank") == 0;
            }
            WT_EQ_INT(phase_series, (size_t)nphases);
            WT_EQ_INT(bank_series, 2);
            wt_batch_free(&b);
            wt_snmp_state_free(s);
        }
    }
}

/* The first value oid-columns-by-file.tsv lists for column of file (a recording's own data). */
static bool tsv_value(const char *file, const char *column, char *oid, size_t on, char *val,
                      size_t vn)
{
    char *txt = wt_test_read(wt_test_src_path(DATA "oid-columns-by-file.tsv"), NULL);
    bool found = false;
    for (char *line = strtok(txt, "\n"); line && !found; line = strtok(NULL, "\n")) {
        char *f[8];
        size_t k = 0;
        for (char *p = line; k < 8; k++) {
            f[k] = p;
            p = strchr(p, '\t');
            if (!p) {
                k++;
                break;
            }
            *p++ = '\0';
        }
        if (k == 8 && strcmp(f[0], file) == 0 && strcmp(f[2], column) == 0) {
            snprintf(val, vn, "%s", f[6]);
            snprintf(oid, on, "%s", f[7]);
            found = true;
        }
    }
    free(txt);
    return found;
}

static void model_of(const struct wt_batch *b, char *out, size_t n)
{
    const struct wt_reading *info = NULL;
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric == WT_M_FAC_INFO)
            info = &b->r[i];
    WT_ASSERT(info);
    label_of(info, "model", out, n);
}

WT_TEST(sentry4_model)
{
    /* st4UnitModel when the unit table answers, else st4SystemProductName, whatever the order. */
    struct rec r = load_rec(DATA "librenms-snmprec/sentry4_switched8i.snmprec");
    const struct line *prod = rec_find(&r, "1.3.6.1.4.1.1718.4.1.1.1.1.0");
    WT_ASSERT(prod && prod->value[0]);
    char moid[128], model[64], got[64];
    WT_ASSERT(tsv_value("librenms-snmprec/sentry4", "st4UnitModel", moid, sizeof moid, model,
                        sizeof model));
    WT_EQ_STR(moid, "1.3.6.1.4.1.1718.4.1.2.2.1.5.1");
    for (int order = 0; order < 3; order++) {
        struct wt_snmp *s = feed_all(&r, NULL);
        WT_EQ_STR(wt_snmp_state_profile(s)->name, "sentry4");
        if (order == 1) {
            WT_EQ_INT(wt_snmp_feed(s, moid, 4, model), 0);
            WT_EQ_INT(wt_snmp_feed(s, prod->oid, 4, prod->value), 0);
        } else if (order == 2) {
            WT_EQ_INT(wt_snmp_feed(s, prod->oid, 4, prod->value), 0);
            WT_EQ_INT(wt_snmp_feed(s, moid, 4, model), 0);
        }
        struct wt_batch b = {0};
        WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
        model_of(&b, got, sizeof got);
        WT_EQ_STR(got, order == 0 ? prod->value : model);
        wt_batch_free(&b);
        wt_snmp_state_free(s);
    }
}

WT_TEST(generic_profile_reads_text_values)
{
    /* The APC Easy PDU's non-standard tree sends "232.6V", "0.061kW", "2.28kWh" as strings. */
    struct rec r = load_rec(DATA "librenms-snmprec/apc-epdu_epdu1132m.snmprec");
    static const struct {
        const char *col;
        int metric;
        double unit;
    } cols[] = {{"1.3.6.1.4.1.1.1.1", WT_M_FAC_VOLTAGE_V, 1},
                {"1.3.6.1.4.1.1.1.2", WT_M_FAC_CURRENT_A, 1},
                {"1.3.6.1.4.1.1.1.3", WT_M_FAC_POWER_W, 1e3},
                {"1.3.6.1.4.1.1.1.6", WT_M_FAC_POWER_FACTOR, 1},
                {"1.3.6.1.4.1.1.1.7", WT_M_FAC_ENERGY_J, 3.6e6}};
    struct wt_snmp_target t = target("g");
    snprintf(t.profile, sizeof t.profile, "generic");
    for (size_t i = 0; i < 5; i++) {
        snprintf(t.generic_oid[i], sizeof t.generic_oid[i], "%s", cols[i].col);
        snprintf(t.generic_kind[i], sizeof t.generic_kind[i], "inlet");
        snprintf(t.generic_point[i], sizeof t.generic_point[i], "inlet%%1");
        t.generic[i].metric = cols[i].metric;
        t.generic[i].scale = cols[i].unit;
    }
    t.ngeneric = 5;
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_state_new(&t, NULL, &s, &err), 0);
    for (size_t i = 0; i < r.n; i++)
        WT_EQ_INT(wt_snmp_feed(s, r.l[i].oid, r.l[i].tag, r.l[i].value), 0);
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    const char *lb = "source=\"snmp\",target=\"g\",point=\"inlet1\",kind=\"inlet\"";
    for (size_t i = 0; i < 5; i++) {
        char o[64];
        snprintf(o, sizeof o, "%s.1", cols[i].col);
        const struct line *l = rec_find(&r, o);
        WT_ASSERT(l);
        double want = strtod(l->value, NULL) * cols[i].unit;
        WT_NEAR(reading_value(&b, cols[i].metric, lb), want, 1e-9 * fmax(1, want));
    }
    /* The text counter goes on as a counter: 2.28 kWh, then 2.30 kWh. */
    wt_snmp_reset(s);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.1.1.7.1", 4, "2.30kWh"), 0);
    wt_batch_clear(&b);
    WT_EQ_INT(wt_snmp_readings(s, T0 + 60000000000LL, &b), 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, lb), 2.30 * 3.6e6, 1e-3);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

WT_TEST(a_series_is_exported_once_per_poll)
{
    /* Found by fuzzing: two generic OIDs with one point gave two samples of one series. */
    static const char *const oids[] = {"1.3.6.1.4.1.1.1.7", "1.3.6.1.4.1.318.1.1.26.4.3.1.9"};
    struct wt_snmp_target t = target("g");
    snprintf(t.profile, sizeof t.profile, "generic");
    for (size_t i = 0; i < 2; i++) {
        snprintf(t.generic_oid[i], sizeof t.generic_oid[i], "%s", oids[i]);
        snprintf(t.generic_kind[i], sizeof t.generic_kind[i], "inlet");
        snprintf(t.generic_point[i], sizeof t.generic_point[i], "inlet%%1");
        t.generic[i].metric = WT_M_FAC_ENERGY_J;
        t.generic[i].scale = 3.6e6;
    }
    t.ngeneric = 2;
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_state_new(&t, NULL, &s, &err), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.1.1.7.1", 4, "2.28kWh"), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.318.1.1.26.4.3.1.9.1", 2, "64"), 0);
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    size_t n = 0;
    for (size_t i = 0; i < b.len; i++)
        n += b.r[i].metric == WT_M_FAC_ENERGY_J;
    WT_EQ_INT(n, 1);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J,
                          "source=\"snmp\",target=\"g\",point=\"inlet1\",kind=\"inlet\""),
            2.28 * 3.6e6, 1e-3);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

WT_TEST(a_row_with_a_longer_index_is_not_the_tables)
{
    /* Found by fuzzing: Eaton outlet energy is indexed unit.outlet; a row 0.17.2.1 rendered as
     * outlet17 too, and the series took turns between the two counters. */
    struct wt_snmp_target t = target("e");
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_state_new(&t, wt_snmp_profile_find("eaton-epdu"), &s, &err), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.5.1.4.0.17.2.1", 66, "2247453"), 0);
    WT_EQ_INT(wt_snmp_feed(s, "1.3.6.1.4.1.534.6.6.7.6.5.1.4.0.17", 66, "538863"), 0);
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    size_t n = 0;
    for (size_t i = 0; i < b.len; i++)
        n += b.r[i].metric == WT_M_FAC_ENERGY_J;
    WT_EQ_INT(n, 1);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J,
                          "source=\"snmp\",target=\"e\",point=\"outlet17\",kind=\"outlet\""),
            538863 * 3600.0, 1e-3);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

WT_TEST(liebert_receptacle_energy)
{
    /* lgpPdu*EnergyAccum: UNITS "0.1 Kilowatt-Hour" (power-energy-oid-units.tsv). */
    struct rec r = load_rec(DATA "librenms-snmprec/liebert_mph2rg.snmprec");
    struct wt_snmp *s = feed_all(&r, NULL);
    struct wt_batch b = {0};
    WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
    const struct line *ps = rec_find(&r, "1.3.6.1.4.1.476.1.42.3.8.30.20.1.50.1.1");
    const struct line *rcp = rec_find(&r, "1.3.6.1.4.1.476.1.42.3.8.50.20.1.85.1.2.1");
    const struct line *lbl = rec_find(&r, "1.3.6.1.4.1.476.1.42.3.8.50.20.1.10.1.2.1");
    WT_ASSERT(ps && rcp && lbl);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J,
                          "source=\"snmp\",target=\"t\",point=\"inlet1\",kind=\"inlet\","
                          "name=\"PEM: 1-1\""),
            atof(ps->value) * 0.1 * 3.6e6, 1e-3);
    char lb[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "snmp", "target", "t", "point", "branch2.outlet1",
                        "kind", "outlet", "name", lbl->value, NULL),
              0);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, lb), atof(rcp->value) * 0.1 * 3.6e6, 1e-3);
    WT_EQ_INT(count_readings(&b, WT_M_FAC_POWER_W), 1 + 1 + 16);
    wt_batch_free(&b);
    wt_snmp_state_free(s);
}

/* ---- the recordings with LibreNMS's expected values ---------------------------------------- */

#define ORACLE(name, min, ...)                                                                     \
    WT_TEST(oracle_##name)                                                                         \
    {                                                                                              \
        static const char *const excl[] = {__VA_ARGS__};                                           \
        size_t excluded = 0;                                                                       \
        size_t n = check_oracle(#name, excl, &excluded);                                           \
        printf("# %s: %zu sensors checked, %zu out of scope\n", #name, n, excluded);               \
        WT_ASSERT(n >= (min));                                                                     \
    }

/* The recordings' file names have dashes: test names use these wrappers. */
static size_t check_named(const char *file, const char *const *excl, size_t *excluded)
{
    return check_oracle(file, excl, excluded);
}
#define ORACLE_FILE(tname, file, min, ...)                                                         \
    WT_TEST(oracle_##tname)                                                                        \
    {                                                                                              \
        static const char *const excl[] = {__VA_ARGS__};                                           \
        size_t excluded = 0;                                                                       \
        size_t n = check_named(file, excl, &excluded);                                             \
        printf("# %s: %zu sensors checked, %zu out of scope\n", file, n, excluded);                \
        WT_ASSERT(n >= (min));                                                                     \
    }

ORACLE(apc_ap7900b, 3, NULL)
ORACLE(apc_ap8959eu3, 3, NULL)
ORACLE_FILE(apc_smt750x, "apc_smt750x-nmc2", 4, NULL)
ORACLE(eatonpdu_2, 51, NULL)
ORACLE_FILE(hpe_pdu3, "hpe-mapdu_pdu3", 79, NULL)
ORACLE(sentry3_3phase, 12, NULL)
ORACLE_FILE(vertiv_mn03edr1, "vertiv-pdu_mn03edr1", 15, NULL)
/* The BMC's board voltage rails (sensorReading: 12V, 5VCC, Vcpu...) are no facility point. */
ORACLE_FILE(supermicro_x11, "supermicro-bmc_x11", 6, "1.3.6.1.4.1.21317.1.3.1.2", NULL)

/* ---- recordings without expected values: each gives readings from its profile -------------- */

WT_TEST(other_recordings_have_readings)
{
    static const struct {
        const char *file, *profile;
        int metric;
    } cases[] = {
        {"librenms-snmprec/apc_apdu9959eu3", "apc-rpdu", WT_M_FAC_ENERGY_J},
        {"librenms-snmprec/raritan-pdu", "raritan-pdu", WT_M_FAC_POWER_W},
        {"librenms-snmprec/sentry3", "sentry3", WT_M_FAC_CURRENT_A},
        {"librenms-snmprec/sentry4_switched8i", "sentry4", WT_M_FAC_ENERGY_J},
        {"librenms-snmprec/eatonupsm2_9px", "ups-mib", WT_M_FAC_POWER_W},
        {"snmpsim-data/apc-8932", "apc-rpdu", WT_M_FAC_POWER_W},
        {"snmpsim-data/apc-7902b", "apc-rpdu", WT_M_FAC_CURRENT_A},
        {"snmpsim-data/eaton-93e-80", "ups-mib", WT_M_FAC_VOLTAGE_V},
        {"librenms-snmprec/liebert_mph2rg", "liebert-gp-pdu", WT_M_FAC_ENERGY_J},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[200];
        snprintf(path, sizeof path, DATA "%s.snmprec", cases[i].file);
        struct rec r = load_rec(path);
        struct wt_snmp *s = feed_all(&r, NULL);
        const struct wt_snmp_profile *p = wt_snmp_state_profile(s);
        if (!p || strcmp(p->name, cases[i].profile) != 0)
            wt_test_fail(__FILE__, __LINE__, "%s: profile %s, expected %s", cases[i].file,
                         p ? p->name : "(none)", cases[i].profile);
        struct wt_batch b = {0};
        WT_EQ_INT(wt_snmp_readings(s, T0, &b), 0);
        if (count_readings(&b, cases[i].metric) == 0)
            wt_test_fail(__FILE__, __LINE__, "%s: no %s", cases[i].file,
                         wt_metrics[cases[i].metric].name);
        wt_batch_free(&b);
        wt_snmp_state_free(s);
    }
}

/* ---- the config section -------------------------------------------------------------------- */

static int check_yaml(const char *yaml, struct wt_err *err)
{
    struct wt_ynode *root = NULL;
    WT_EQ_INT(wt_yaml_parse("w.yaml", yaml, strlen(yaml), &root, err), 0);
    int rc = wt_snmp_config_check("w.yaml", root, err);
    wt_ynode_free(root);
    return rc;
}

#define BAD(yaml, ...)                                                                             \
    do {                                                                                           \
        struct wt_err e_ = {{0}};                                                                  \
        WT_EQ_INT(check_yaml(yaml, &e_), -EINVAL);                                                 \
        static const char *const want_[] = {__VA_ARGS__};                                          \
        for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++)                             \
            WT_CONTAINS(e_.msg, want_[i_]);                                                        \
    } while (0)

WT_TEST(config_good)
{
    struct wt_err err = {{0}};
    const char *y = "- name: pdu-a1\n"
                    "  address: 10.0.0.5\n"
                    "  community: public\n"
                    "  rack: r12\n"
                    "- name: ups.1\n"
                    "  address: \"[fd00::5]:1161\"\n"
                    "  version: 3\n"
                    "  user: wattage\n"
                    "  auth_protocol: SHA-256\n"
                    "  auth_password_file: /etc/wattage/snmp-auth\n"
                    "  priv_protocol: AES\n"
                    "  priv_password_file: /etc/wattage/snmp-priv\n"
                    "  timeout: 500ms\n"
                    "  retries: 2\n"
                    "  interval: 30s\n"
                    "- name: meter_3\n"
                    "  address: meter3:16100\n"
                    "  community_file: /etc/wattage/community\n"
                    "  profile: generic\n"
                    "  generic:\n"
                    "    - {oid: .1.3.6.1.4.1.99.1.2.0, metric: power, unit: kW, scale: 0.01}\n"
                    "    - {oid: 1.3.6.1.4.1.99.1.3, metric: energy, unit: Wh, kind: outlet,\n"
                    "       point: 'outlet%2'}\n";
    WT_EQ_INT(check_yaml(y, &err), 0);
    struct wt_ynode *root = NULL;
    WT_EQ_INT(wt_yaml_parse("w.yaml", y, strlen(y), &root, &err), 0);
    struct wt_snmp_target t[4];
    WT_EQ_INT(wt_snmp_parse_targets("w.yaml", root, t, 4, &err), 3);
    WT_EQ_STR(t[0].host, "10.0.0.5");
    WT_EQ_INT(t[0].port, 161);
    WT_EQ_STR(t[0].profile, "auto");
    WT_EQ_STR(t[1].host, "fd00::5");
    WT_EQ_INT(t[1].port, 1161);
    WT_EQ_INT(t[1].version, WT_SNMP_V3);
    WT_EQ_INT(t[1].timeout_ns, 500000000LL);
    WT_EQ_INT(t[1].retries, 2);
    WT_EQ_INT(t[1].interval_ns, 30000000000LL);
    WT_EQ_INT(t[2].port, 16100);
    WT_EQ_INT(t[2].ngeneric, 2);
    WT_EQ_STR(t[2].generic[0].oid, "1.3.6.1.4.1.99.1.2"); /* a scalar: walked from its parent */
    WT_EQ_STR(t[2].generic[0].point, "total");
    WT_NEAR(t[2].generic[0].scale, 10, 1e-12); /* 0.01 kW */
    WT_EQ_STR(t[2].generic[1].point, "outlet%2");
    WT_NEAR(t[2].generic[1].scale, 3600, 0);
    wt_ynode_free(root);
}

WT_TEST(config_errors)
{
    BAD("- address: 10.0.0.1\n  community: x\n", "w.yaml:1:", "collectors.snmp.targets[0].name",
        "required");
    BAD("- name: a b\n  address: h\n  community: x\n",
        "w.yaml:1:", "collectors.snmp.targets[0].name", "letters, digits");
    BAD("- name: abcdefghijklmnopqrstuvwxyz\n  address: h\n  community: x\n",
        "w.yaml:1:", "targets[0].name", "at most 23");
    BAD("- {name: a, address: h, community: x}\n- {name: a, address: h2, community: x}\n",
        "w.yaml:2:", "targets[1].name", "\"a\" is used by another target");
    BAD("- name: a\n  address: h:99999\n  community: x\n", "w.yaml:2:", "targets[0].address",
        "port 1..65535");
    BAD("- name: a\n  address: h\n  comunity: x\n", "w.yaml:3:", "targets[0].comunity",
        "did you mean 'community'");
    BAD("- name: a\n  address: h\n", "w.yaml:1:", "targets[0]", "community or community_file");
    BAD("- name: a\n  address: h\n  community: secret123\n  community_file: /f\n",
        "w.yaml:4:", "not both");
    BAD("- name: a\n  address: h\n  version: 1\n  community: x\n",
        "w.yaml:3:", "targets[0].version");
    BAD("- name: a\n  address: h\n  community: x\n  user: u\n", "w.yaml:4:", "targets[0].user",
        "only for version 3");
    BAD("- name: a\n  address: h\n  version: \"3\"\n  user: u\n  auth_password_file: /a\n",
        "w.yaml:1:", "targets[0].priv_password_file", "required for version 3");
    BAD("- name: a\n  address: h\n  version: \"3\"\n  user: u\n  auth_protocol: SHA1\n"
        "  auth_password_file: /a\n  priv_password_file: /p\n",
        "w.yaml:5:", "targets[0].auth_protocol", "SHA-256");
    BAD("- name: a\n  address: h\n  community: x\n  timeout: 2m\n",
        "w.yaml:4:", "targets[0].timeout", "(got \"2m\", above 1m)");
    BAD("- name: a\n  address: h\n  community: x\n  retries: 11\n",
        "w.yaml:4:", "targets[0].retries");
    BAD("- name: a\n  address: h\n  community: x\n  profile: apc\n",
        "w.yaml:4:", "targets[0].profile", "apc-rpdu");
    BAD("- name: a\n  address: h\n  community: x\n  profile: generic\n",
        "w.yaml:", "targets[0].generic", "needs a list");
    BAD("- name: a\n  address: h\n  community: x\n  generic: [{oid: 1.3.6, metric: power}]\n",
        "w.yaml:4:", "targets[0].generic", "only with profile: generic");
    BAD("- name: a\n  address: h\n  community: x\n  profile: generic\n  generic:\n"
        "    - {oid: 1.3.6.1.4.1.1.1.7, metric: energy, kind: inlet}\n"
        "    - {oid: 1.3.6.1.4.1.1.1.8, metric: energy, kind: inlet}\n",
        "w.yaml:7:", "targets[0].generic[1]", "point inlet%1", "generic[0]");
    BAD("- name: a\n  address: h\n  community: x\n  profile: generic\n  generic:\n"
        "    - {oid: 1.3.6.1.x, metric: power}\n",
        "w.yaml:6:", "targets[0].generic[0].oid", "numeric OID");
    BAD("- name: a\n  address: h\n  community: x\n  profile: generic\n  generic:\n"
        "    - {oid: 1.3.6.1.4, metric: energy, unit: W}\n",
        "w.yaml:6:", "targets[0].generic[0].unit", "kWh");
    BAD("- name: a\n  address: h\n  community: x\n  profile: generic\n  generic:\n"
        "    - {oid: 1.3.6.1.4, metric: watts}\n",
        "w.yaml:6:", "targets[0].generic[0].metric", "power");
    BAD("- name: a\n  address: h\n  community: x\n  profile: generic\n  generic:\n"
        "    - {oid: 1.3.6.1.4, metric: power, point: 'o%9'}\n",
        "w.yaml:6:", "targets[0].generic[0].point");
    BAD("name: a\n", "w.yaml:1:", "collectors.snmp.targets", "list");
    BAD("- name: a\n  address: h\n  community: x\n  node: node-0123456789012345678901234567\n"
        "  rack: rack-0123456789012345678901234567\n",
        "w.yaml:1:", "targets[0]", "at most 64 characters");
    /* A community never appears in a message. */
    struct wt_err e = {{0}};
    char y[400];
    snprintf(y, sizeof y, "- name: a\n  address: h\n  community: %s\n",
             "s3cr3t-0123456789012345678901234567890123456789012345678901234567890123");
    WT_EQ_INT(check_yaml(y, &e), -EINVAL);
    WT_CONTAINS(e.msg, "targets[0].community");
    WT_ASSERT(strstr(e.msg, "s3cr3t") == NULL);
}

/* The collector's table, declared where it is used, as src/collect/registry.c does. */
extern const struct wt_collector_ops wt_snmp_collector;

/* A UDP port on loopback: bound and kept (silent: never answers), or bound and closed. */
static int udp_port(bool keep, int *fd)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    WT_ASSERT(s >= 0);
    WT_EQ_INT(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    WT_EQ_INT(getsockname(s, (struct sockaddr *)&a, &len), 0);
    if (keep)
        *fd = s;
    else
        close(s);
    return ntohs(a.sin_port);
}

/* Polls one v2c target on 127.0.0.1:port once; the message, and the seconds it took. */
static int poll_once(const char *name, int port, const char *timeout, int retries,
                     struct wt_err *err, double *took_s)
{
    char yaml[512];
    struct wt_config c;
    struct wt_err e = {{0}};
    struct wt_batch b = {0};
    void *st = NULL;
    snprintf(yaml, sizeof yaml,
             "collectors:\n  snmp:\n    targets:\n      - {name: %s, address: '127.0.0.1:%d', "
             "community: public, timeout: %s, retries: %d}\n",
             name, port, timeout, retries);
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load_string("s.yaml", yaml, strlen(yaml), &c, &e), 0);
    WT_EQ_INT(wt_snmp_collector.open_target(&c, 0, &st, &e), 0);
    int64_t t0 = wt_now_mono_ns();
    int rc = wt_snmp_collector.poll(st, wt_now_real_ns(), &b, err);
    *took_s = (double)(wt_now_mono_ns() - t0) / 1e9;
    wt_batch_free(&b);
    wt_snmp_collector.close(st);
    wt_config_free(&c);
    return rc;
}

/*
 * A closed port answers with ICMP port unreachable: reported as that, at once, not as a
 * timeout after every retry (2 s x 4 here). A port that stays silent is still a timeout.
 */
WT_TEST(a_closed_port_is_port_unreachable_not_a_timeout)
{
    struct wt_err err = {{0}};
    double took;
    int port = udp_port(false, NULL);
    int rc = poll_once("pdu", port, "2s", 3, &err, &took);
    WT_ASSERT(rc < 0);
    char want[128];
    snprintf(want, sizeof want, "target pdu: 127.0.0.1:%d: port unreachable", port);
    WT_CONTAINS(err.msg, want);
    /* Not one 2 s timeout went by (the four would take 8 s). */
    if (took >= 2.0)
        wt_test_fail(__FILE__, __LINE__, "took %.2f s: waited for a timeout", took);

    int fd = -1;
    port = udp_port(true, &fd);
    rc = poll_once("mute", port, "200ms", 0, &err, &took);
    WT_ASSERT(rc < 0);
    WT_CONTAINS(err.msg, "no answer from 127.0.0.1");
    close(fd);
}
