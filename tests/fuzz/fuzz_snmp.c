/* SPDX-License-Identifier: MIT */
/*
 * SNMP value decoding: varbinds written as snmprec lines (OID|TAG|VALUE, TAG "4x" for a
 * hex-encoded string) fed with wt_snmp_feed into collector states as a poll would, and the
 * readings they become (wt_snmp_readings): with the profile chosen by the recording's
 * sysObjectID, with one built-in profile forced on it, and with a generic profile whose columns
 * take numbers and text values with units ("232.6V", "0.061kW", "2.28kWh"). Three polls of the
 * same state (the first half of the lines, all of them, the second half) must give finite
 * readings and energy totals that never go down. Seeds: the .snmprec recordings under
 * ../shared/data/snmp.
 */
#include "collect/snmp.h"
#include "fuzz.h"

#define T0 (1764439200LL * 1000000000LL)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

struct vb {
    const char *oid, *value;
    int tag;
};

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Splits text (modified in place) into varbinds; returns how many (*out is malloc'd). */
static size_t split(char *text, struct vb **out)
{
    size_t n = 0, cap = 64;
    struct vb *v = malloc(cap * sizeof *v);
    FUZZ_CHECK(v != NULL);
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *a = strchr(line, '|'), *b = a ? strchr(a + 1, '|') : NULL;
        if (!b)
            continue;
        *a = *b = '\0';
        char *val = b + 1;
        if (strchr(a + 1, 'x')) {
            size_t k = 0;
            for (size_t i = 0; val[i] && val[i + 1]; i += 2) {
                int h = hexval(val[i]), l = hexval(val[i + 1]);
                if (h < 0 || l < 0)
                    break;
                val[k++] = (char)(h * 16 + l);
            }
            val[k] = '\0';
        }
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            FUZZ_CHECK(v != NULL);
        }
        v[n++] = (struct vb){line[0] == '.' ? line + 1 : line, val, atoi(a + 1)};
    }
    *out = v;
    return n;
}

/* Three polls of one state over the varbinds. */
static void polls(const struct wt_snmp_target *t, const struct wt_snmp_profile *p,
                  const struct vb *v, size_t n)
{
    struct wt_snmp *s = NULL;
    struct wt_err err = {{0}};
    struct wt_batch prev = {0}, cur = {0};
    const size_t from[3] = {0, 0, n / 2}, to[3] = {n / 2, n, n};
    FUZZ_CHECK(wt_snmp_state_new(t, p, &s, &err) == 0);
    for (int k = 0; k < 3; k++) {
        wt_snmp_reset(s);
        for (size_t i = from[k]; i < to[k]; i++)
            FUZZ_CHECK(wt_snmp_feed(s, v[i].oid, v[i].tag, v[i].value) == 0);
        wt_batch_clear(&cur);
        int rc = wt_snmp_readings(s, T0 + k * 60000000000LL, &cur);
        FUZZ_CHECK(rc == 0 || rc == -E2BIG);
        fuzz_check_batch(&cur);
        fuzz_check_monotone(&prev, &cur, WT_M_FAC_ENERGY_J);
        struct wt_batch t2 = prev;
        prev = cur;
        cur = t2;
    }
    wt_batch_free(&prev);
    wt_batch_free(&cur);
    wt_snmp_state_free(s);
}

static struct wt_snmp_target target(const char *profile)
{
    struct wt_snmp_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "fz");
    snprintf(t.host, sizeof t.host, "127.0.0.1");
    snprintf(t.profile, sizeof t.profile, "%s", profile);
    t.port = 161;
    return t;
}

/* A generic profile like the APC Easy PDU's text tree, and columns with each flag. */
static struct wt_snmp_target generic(void)
{
    /* As the config check wants: one column per metric, kind and point. */
    static const struct {
        const char *oid;
        int metric;
        double scale;
        unsigned flags;
        const char *kind, *point;
    } cols[] = {
        {"1.3.6.1.4.1.1.1.1", WT_M_FAC_VOLTAGE_V, 1, 0, "inlet", "inlet%1"},
        {"1.3.6.1.4.1.1.1.2", WT_M_FAC_CURRENT_A, 1, 0, "inlet", "inlet%1"},
        {"1.3.6.1.4.1.1.1.3", WT_M_FAC_POWER_W, 1e3, 0, "inlet", "inlet%1"},
        {"1.3.6.1.4.1.1.1.6", WT_M_FAC_POWER_FACTOR, 1, WT_SNMP_ABS, "inlet", "inlet%1"},
        {"1.3.6.1.4.1.1.1.7", WT_M_FAC_ENERGY_J, 3.6e6, 0, "inlet", "inlet%1"},
        {"1.3.6.1.4.1.318.1.1.12.3.5.1.1", WT_M_FAC_POWER_W, 1, WT_SNMP_SIGNED, "bank", "b%1.%2"},
        {"1.3.6.1.4.1.318.1.1.26.4.3.1.9", WT_M_FAC_ENERGY_J, 36000, 0, "bank", "b%1.%2"},
        {"1.3.6.1.2.1.33.1.4.4.1.4", WT_M_FAC_POWER_W, 1, WT_SNMP_FALLBACK, "ups", "out%1"},
    };
    struct wt_snmp_target t = target("generic");
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        snprintf(t.generic_oid[i], sizeof t.generic_oid[i], "%s", cols[i].oid);
        snprintf(t.generic_kind[i], sizeof t.generic_kind[i], "%s", cols[i].kind);
        snprintf(t.generic_point[i], sizeof t.generic_point[i], "%s", cols[i].point);
        t.generic[i].metric = cols[i].metric;
        t.generic[i].scale = cols[i].scale;
        t.generic[i].flags = cols[i].flags;
    }
    t.ngeneric = sizeof cols / sizeof cols[0];
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_str(data, size);
    struct vb *v = NULL;
    size_t n = split(text, &v), np = 0;
    while (wt_snmp_profiles[np])
        np++;
    struct wt_snmp_target t = target("auto");
    polls(&t, NULL, v, n);
    polls(&t, wt_snmp_profiles[size % np], v, n);
    t = generic();
    polls(&t, NULL, v, n);
    free(v);
    free(text);
    return 0;
}
