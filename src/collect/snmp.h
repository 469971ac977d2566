/* SPDX-License-Identifier: MIT */
/*
 * SNMP collector for PDUs and UPSes (net-snmp). Each target of "collectors.snmp.targets" is its
 * own session (net-snmp's single-session API, so targets on different threads share nothing)
 * on its own schedule. A profile says which MIB columns to walk (GETBULK) and how each becomes
 * a facility reading: metric, scale to the base unit, kind and point ("outlet3"), and where the
 * outlet's name is. Built-in profiles are chosen by sysObjectID; a generic profile comes from
 * the config. Energy counters are followed with core/energy.h (wrap and reset) and exported in
 * joules as a monotone total that starts at the device's own reading.
 */
#ifndef WT_SNMP_H
#define WT_SNMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/facility.h"
#include "core/err.h"
#include "core/reading.h"
#include "core/yamltree.h"

#define WT_SNMP_MAX_IDX 8      /* sub-identifiers kept of a row's index */
#define WT_SNMP_MAX_GENERIC 64 /* entries of a generic profile */
#define WT_SNMP_STR_LEN 48     /* strings kept of a row (names, numbers sent as text) */

/* Column flags. */
#define WT_SNMP_FALLBACK                                                                           \
    0x1                    /* skipped when an earlier column of the same metric and kind had       \
                            * a value this poll (an older MIB table of the same quantity) */
#define WT_SNMP_ABS 0x2    /* the sign carries something else (Eaton's leading/lagging PF) */
#define WT_SNMP_TYPED 0x4  /* Raritan: the index's last sub-id is a sensor type; see types */
#define WT_SNMP_SIGNED 0x8 /* negative values are values (else: "not available") */
#define WT_SNMP_KEY_NONZERO                                                                        \
    0x10 /* a row whose key column reads 0 is not this column's (APC's load status table: a        \
          * bank's row has phase number 0) */
#define WT_SNMP_KEY_REQUIRED 0x20 /* a row without a key value is not this column's */

/* Raritan PDU2 sensor types mapped to metrics (index's last sub-id). */
struct wt_snmp_type_map {
    uint32_t type;
    int metric;
    double scale; /* on top of 10^-digits: Wh -> J */
};

/* One MIB column (or scalar, walked from its parent) of a profile. */
struct wt_snmp_column {
    const char *oid;      /* the column, dotted, without the leading dot */
    int metric;           /* WT_M_FAC_*; for WT_SNMP_TYPED: unused */
    double scale;         /* raw x scale = base unit (W, J, A, V, VA, ratio, Celsius) */
    const char *kind;     /* inlet, outlet, phase, pdu, ups_output... */
    const char *point;    /* template: "outlet%2" = "outlet" + the 2nd index sub-id; "%k" the key
                           * column's value (the index's last sub-id when the device sends none) */
    const char *name_oid; /* optional column holding the name label, indexed like this column
                           * or by a prefix of its index (Raritan: outletName is pdu.outlet, the
                           * values pdu.outlet.sensor) */
    unsigned flags;
    uint8_t unit_pos;       /* index position (1-based) of a daisy-chain unit, 0 none */
    uint8_t unit_base;      /* the first unit's number: other units prefix "unitN." */
    const char *digits_oid; /* WT_SNMP_TYPED: decimal digits column */
    const struct wt_snmp_type_map *types; /* WT_SNMP_TYPED: ends with metric -1 */
    const char *key_oid; /* optional column with the same index numbering the point ("%k") */
};

struct wt_snmp_profile {
    const char *name;
    const char *vendor;
    const char *const *match; /* sysObjectID prefixes (dotted), NULL-terminated; may be NULL */
    const char *model_oid;    /* a scalar instance with the model string, or NULL */
    const struct wt_snmp_column *cols;
    size_t ncols;
    const char *model_oid2; /* read when model_oid says nothing, or NULL */
};

/* The built-in profiles, NULL-terminated. */
extern const struct wt_snmp_profile *const wt_snmp_profiles[];

/* A built-in profile by name, or NULL. */
const struct wt_snmp_profile *wt_snmp_profile_find(const char *name);
/*
 * The built-in profile whose sysObjectID prefix matches sysobjectid (dotted, a leading dot is
 * ignored; a prefix matches whole sub-identifiers only), the longest prefix winning; NULL when
 * none does.
 */
const struct wt_snmp_profile *wt_snmp_profile_match(const char *sysobjectid);

/*
 * The factor from a configured raw unit to the metric's base unit: power W/kW/mW, energy
 * J/Wh/kWh/MWh, current A/mA, voltage V/mV/kV, apparent power VA/kVA, power factor ratio/%,
 * temperature C. "" means the base unit. Returns the factor, or 0 for a unit the metric does not
 * take.
 */
double wt_snmp_unit_factor(int metric, const char *unit);

enum wt_snmp_version { WT_SNMP_V2C, WT_SNMP_V3 };

/* One target as configured. */
struct wt_snmp_target {
    char name[24];
    char host[128];
    int port;
    enum wt_snmp_version version;
    char community[64];
    char community_file[256];
    char user[64];
    int auth_proto; /* index into the auth protocol names */
    char auth_password_file[256];
    int priv_proto; /* index into the priv protocol names */
    char priv_password_file[256];
    int64_t timeout_ns;
    int retries;
    int64_t interval_ns;       /* 0: the collector's */
    char profile[32];          /* "auto", "generic" or a built-in name */
    struct wt_fac_place place; /* 63 characters each, 64 together */
    struct wt_snmp_column generic[WT_SNMP_MAX_GENERIC];
    size_t ngeneric;
    /* Storage the generic columns point into. */
    char generic_oid[WT_SNMP_MAX_GENERIC][128];
    char generic_kind[WT_SNMP_MAX_GENERIC][24];
    char generic_point[WT_SNMP_MAX_GENERIC][32];
};

/* Checks the "collectors.snmp.targets" section (registered in cli/sections.c). */
int wt_snmp_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);
/*
 * Parses the section into out (its first max targets). Returns the number of targets, or
 * -EINVAL with err naming file:line and the dotted path.
 */
int wt_snmp_parse_targets(const char *file, const struct wt_ynode *node, struct wt_snmp_target *out,
                          size_t max, struct wt_err *err);

/* A target's collector state: the session, the profile and the last poll's values. */
struct wt_snmp;

/*
 * Makes the state of one target, without a network session (for tests: values are then fed
 * with wt_snmp_feed). profile NULL: chosen from the sysObjectID fed (1.3.6.1.2.1.1.2.0).
 * Returns 0 or -ENOMEM / -EINVAL with err.
 */
int wt_snmp_state_new(const struct wt_snmp_target *t, const struct wt_snmp_profile *profile,
                      struct wt_snmp **out, struct wt_err *err) WT_MUST_USE;
void wt_snmp_state_free(struct wt_snmp *s);
/* Starts a new set of values (a poll). */
void wt_snmp_reset(struct wt_snmp *s);
/*
 * Feeds one varbind as snmprec writes it: dotted OID, BER tag number (2 Integer32, 4 string,
 * 6 OID, 65 Counter32, 66 Gauge32, 67 TimeTicks, 70 Counter64) and the value as text. Values of
 * OIDs that no column of the profile covers are ignored. Returns 0 or -ENOMEM.
 */
int wt_snmp_feed(struct wt_snmp *s, const char *oid, int tag, const char *value) WT_MUST_USE;
/*
 * Appends the readings of the values fed since the last reset, stamped t_ns: every metric, then
 * wattage_facility_up 1 and wattage_facility_info. Energy counters advance. Returns 0 or
 * -ENOMEM / -E2BIG.
 */
int wt_snmp_readings(struct wt_snmp *s, int64_t t_ns, struct wt_batch *out) WT_MUST_USE;
/* The profile in use (NULL until chosen). */
const struct wt_snmp_profile *wt_snmp_state_profile(const struct wt_snmp *s);

#endif
