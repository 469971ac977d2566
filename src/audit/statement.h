/* SPDX-License-Identifier: MIT */
/*
 * KPI statements of the data-centre standards from the topology's meter roles (`wattage report
 * --standard iso30134`): each KPI with its name, formula, standard and edition, category,
 * boundary, period and label, from annual sums only (never averaged ratios), with each meter's
 * and KPI's coverage of the period's 15-minute intervals, the estimated share of each energy sum,
 * the checks the standards set, and a method block (version, editions, hand inputs, a SHA-256 of
 * the inputs) from which the statement can be reproduced.
 *
 * Boundary (EN 50600-4-2 §5.2 as the notes read it): E_DC = facility_total + onsite_generation
 * + purchased_cooling - exported. E_IT = the sum of the meters with the roles ups_output
 * (category 1), pdu_output (2), it_input (3) and it_total (category not stated): list each IT
 * feed once. The PUE category is the lowest among them. A node's or GPU's own sensors are never
 * E_IT.
 *
 * The hand inputs come from the config section `statement`:
 *   statement:
 *     site: hall-1                 # the data centre's name
 *     installed_it_kw: 800         # P_DIT, nameplate
 *     floor_area_m2: 1200          # S_DC
 *     white_space_m2: 600          # S_WHITE (computer-room floor area)
 *     commissioned: 2021-06        # entry into operation, YYYY-MM
 *     redundancy_electrical: 2N
 *     redundancy_cooling: N+1
 *     min_coverage: 0.95           # a KPI whose inputs cover less is "not reportable"
 *     renewables:                  # contractual instruments retired for this site and period
 *       - {type: goo, kwh: 1200000, ref: "registry id"}
 *       - {type: ppa, kwh: 300000, ref: "PPA 2026"}
 *     residual_mix_g_per_kwh: 420  # market-based CUE: the residual mix's emission factor for the
 *     residual_mix_source: "AIB European Residual Mixes, DE"   # energy no instrument covers,
 *     residual_mix_year: 2025      # with its source and year (both required with the factor)
 *     tenants:                     # colocation: the PDU outlets each customer's IT draws through
 *       - {name: acme, outlets: [pdu-a1/outlet3, pdu-a1/outlet4]}
 *       - {name: globex, outlets: [pdu-b1/outlet1]}
 *
 * A tenant's outlet names a topology meter with role pdu_outlet as the statement names meters
 * (target/point, or target when it has no point). The tenants live here, beside the other
 * customer-facing hand inputs, not as a key on the meters: a meter's keys say what it measures
 * and where (role, node, rack, zone), which holds whoever rents the outlet; the contract does
 * not, and one list per tenant is what the statement prints and what changes when a customer
 * moves. An outlet named twice, or one that is no pdu_outlet meter, is an error at its line.
 */
#ifndef WT_STATEMENT_H
#define WT_STATEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/topology.h"
#include "core/err.h"

struct wt_store;
struct wt_config;
struct wt_ynode;

#define WT_STMT_SLOT_NS (15LL * 60 * 1000000000LL) /* the intervals coverage counts */
#define WT_STMT_MAX_RENEWABLES 32

struct wt_stmt_renewable {
    char type[8]; /* "goo" or "ppa" */
    double kwh;
    double g_per_kwh; /* the instrument's emission rate (market-based CUE), default 0 */
    char ref[128];
    /* the quality criteria it is checked against (statement.c: wt_stmt_instruments); "" or 0:
     * not stated */
    char market[WT_TOPO_NAME];      /* its market boundary (bidding zone, country) */
    char retired_for[WT_TOPO_NAME]; /* the site it was retired for */
    char vintage[8];                /* "YYYY" or "YYYY-MM": when its energy was generated */
    int64_t vintage_from_ns, vintage_to_ns;
    int line;
};

#define WT_STMT_MAX_TENANTS 64

struct wt_stmt_outlet {
    char name[2 * WT_TOPO_NAME + 2]; /* target[/point] of a pdu_outlet meter */
    int tenant;                      /* index into tenants */
    int line;
    size_t index; /* its place in the tenant's outlets (for messages) */
};

struct wt_stmt_conf {
    char site[WT_TOPO_NAME];
    double installed_it_kw; /* < 0: not given (never 0 for unknown) */
    double floor_area_m2, white_space_m2;
    char commissioned[8]; /* "YYYY-MM", "" not given */
    char redundancy_electrical[16], redundancy_cooling[16];
    double min_coverage;
    struct wt_stmt_renewable ren[WT_STMT_MAX_RENEWABLES];
    size_t nren;
    double residual_g_per_kwh; /* < 0: not given (market-based CUE not available) */
    char residual_source[160];
    char market[WT_TOPO_NAME]; /* statement.market: the site's market boundary, "" not given */
    int residual_year;
    struct {
        char name[WT_TOPO_NAME];
        int line;
    } tenants[WT_STMT_MAX_TENANTS];
    size_t ntenants;
    struct wt_stmt_outlet outlets[WT_TOPO_MAX_METERS]; /* every tenant's, in order */
    size_t noutlets;
    /* statement.fuel_factors: kWh per litre (diesel, bioethanol), per m3 (natural_gas), per kg
     * (hydrogen), indexed by enum wt_fuel; defaults 9.9, 10.5, 38.9, 6 */
    double fuel_kwh[WT_FUEL_COUNT];
};

/* The energy of q stored units (m3; kg for hydrogen) of fuel f at kwh_per[f] kWh per litre, m3
 * or kg (indexed by enum wt_fuel; NULL: statement.fuel_factors' defaults), J. Pure. */
double wt_fuel_energy_j(const double *kwh_per, enum wt_fuel f, double q);
/* The energy of q stored units (m3; kg for hydrogen) of fuel f with c's factors, J. */
double wt_stmt_fuel_j(const struct wt_stmt_conf *c, enum wt_fuel f, double q);
/* The unit a fuel's factor is per: "l", "m3" or "kg". */
const char *wt_stmt_fuel_unit(enum wt_fuel f);

/* The section (NULL: defaults) into *c. Returns 0 or -EINVAL with err "file:LINE: statement.x:
 * ...". */
int wt_stmt_conf_parse(const char *file, const struct wt_ynode *node, struct wt_stmt_conf *c,
                       struct wt_err *err) WT_MUST_USE;
int wt_stmt_conf_from(const struct wt_config *cfg, struct wt_stmt_conf *c,
                      struct wt_err *err) WT_MUST_USE;
/* The check registered in src/cli/sections.c. */
int wt_stmt_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

/* The PUE category from the roles of t's E_IT meters: the lowest of 1 (ups_output), 2
 * (pdu_output), 3 (it_input); 0 when an it_total meter (category not stated) or no IT meter
 * is among them; *roles gets a bit (1 << role) per E_IT role present. */
int wt_stmt_category(const struct wt_topology *t, unsigned *roles);
/* Whether meters of role r make up E_IT: ups_output, pdu_output, it_input, it_total. */
bool wt_stmt_role_is_it(enum wt_role r);

/*
 * Slot coverage of one series' readings p[0..n) (sorted) over [a, b): a 15-minute slot is
 * measured when the spans between readings over it are covered (covered[i] for the span
 * p[i-1]..p[i]) and at most 1.5 slots long. *measured counts the measured slots of the
 * ceil((b-a)/slot) slots; mask (may be NULL, one byte per slot) is and-ed with the result.
 * *long_j gets the increase over covered spans longer than 1.5 slots (a register's difference
 * across a hole: the total is measured, its spread over the hole is interpolated). Pure.
 */
void wt_stmt_slots(const int64_t *t_ns, const double *v, const bool *covered, size_t n, int64_t a,
                   int64_t b, unsigned char *mask, size_t nslots, double *long_j);

enum wt_stmt_std { WT_STD_ISO30134 };

struct wt_stmt_meter {
    char name[2 * WT_TOPO_NAME + 2]; /* target[/point] */
    enum wt_role role;
    double value; /* J (m3 for water; m3 or kg for a fuel: the energy in e_fuel_j) */
    const char *method;
    size_t slots, measured;
    double estimated; /* of value: interpolated across holes */
    int points;
};

/* A zone's partial PUE (ISO/IEC 30134-2 pPUE, labelled partial): the meters with its zone. */
struct wt_stmt_zone {
    char zone[WT_TOPO_NAME];
    double e_total_j; /* its facility_total meters, else E_IT + its cooling meters */
    double e_it_j;    /* its IT meters */
    double e_fac_j;   /* its facility_total meters */
    double e_cool_j;  /* its cooling meters */
    size_t nfac, nit, ncool;
};

struct wt_stmt_kpi {
    const char *name, *symbol, *formula, *standard, *unit;
    bool available; /* value holds a number */
    double value;
    char why[320]; /* when not available, or refused by a check */
    double coverage, estimated_share;
    bool reportable;
};

#define WT_STMT_MAX_KPIS 8
#define WT_STMT_BINS 4 /* 0-25, 25-50, 50-75, 75-100 % of P_DIT (the last takes what is above) */

struct wt_stmt_bin {
    double from_pct, to_pct;
    size_t slots;
    double e_dc_j, e_it_j;
};

/* The emission factor behind a CUE variant (notes item 17: source, region, granularity). */
struct wt_stmt_factor {
    char zone[64];        /* carbon.zone ("" none) */
    char source[256];     /* the stored series' sources, or carbon.static_gco2_per_kwh */
    char granularity[64]; /* "hourly", "30 min", ... (the series' step), or "static" */
    double actual_share;  /* of E_DC, charged at measured (actual) values */
    char sha256[65];      /* of the series' steps or points used and the factor's settings */
    double g;             /* gCO2e */
    size_t steps;         /* the pieces E_DC was cut into */
};

/* A tenant's outlets over the period (colocation; statement.tenants), or the outlets of no
 * tenant (the last row, name ""). */
struct wt_stmt_tenant {
    char name[WT_TOPO_NAME];
    size_t noutlets;
    double e_j;       /* the outlets' energy, whole joules */
    double estimated; /* of e_j: interpolated across holes */
    size_t measured;  /* 15-minute intervals every one of its outlets measured */
};

/* One instrument of statement.renewables against the quality criteria: whether it counts in REF
 * (retired for this site, vintage in the period) and in market-based CUE (those and within the
 * site's market boundary); refused names each criterion it fails, unchecked those not stated. */
struct wt_stmt_instrument {
    bool in_ref, in_cue;
    char refused[320];
    char unchecked[96];
};

struct wt_statement {
    enum wt_stmt_std std;
    int64_t from_ns, to_ns;
    bool annual; /* the period is one calendar year (UTC) */
    int category;
    char category_text[128];
    char boundary[512];
    double e_dc_j, e_it_j, w_in_m3, w_pot_m3, e_reuse_j, e_ren_j, e_os_used_j;
    double e_cool_j, q_removed_j; /* cooling electricity, heat removed (CER) */
    double e_fuel_j;              /* fuels converted with statement.fuel_factors, in e_dc_j */
    bool fuel_fed;                /* a fuel meter feeds a metered generator: left out of E_DC */
    bool have_dc, have_it;
    struct wt_stmt_meter *meters;
    size_t nmeters;
    unsigned char *matched; /* per 15-minute slot: measured by every E_DC and E_IT meter */
    size_t nslots;
    struct wt_stmt_kpi kpis[WT_STMT_MAX_KPIS];
    size_t nkpis;
    char hash[65]; /* SHA-256 of the inputs, hex */
    bool has_cue;  /* wt_stmt_cue ran: cue_location below holds its factor */
    struct wt_stmt_factor cue_location;
    bool has_cue_market;                         /* CUE_market has a value: the figures below */
    double market_covered_j, market_uncovered_j; /* E_DC the instruments cover, and the rest */
    double market_g;                             /* gCO2e: instruments + residual mix */
    bool has_part_load;                          /* wt_stmt_part_load ran */
    char part_load_why[160];                     /* "" when the bins hold numbers */
    struct wt_stmt_bin bins[WT_STMT_BINS];
    size_t pl_skipped, pl_above;      /* intervals not measured by every meter; above P_DIT */
    bool has_cfe;                     /* wt_stmt_cfe ran: cfe_supply holds its series */
    struct wt_stmt_factor cfe_supply; /* g: the matched energy, J */
    struct wt_stmt_zone *zones;       /* one per zone label of the meters (room for one a meter) */
    size_t nzones;
    /* statement.tenants given: one row per tenant, then the unassigned outlets' (name "");
     * e_outlets_j is their sum (whole joules), so that the rows add up to it exactly */
    struct wt_stmt_tenant *tenants;
    size_t ntenants; /* rows, the unassigned one included; 0 without tenants */
    double e_outlets_j;
    struct wt_stmt_instrument instruments[WT_STMT_MAX_RENEWABLES]; /* one per c->ren */
    double e_ren_refused_j; /* instruments' energy refused for REF (a disclosure, not in e_ren_j) */
};

/*
 * The quality criteria of the contractual instruments (GHG Protocol Scope 2 market-based method;
 * EN 50600-4-3 for REF) over [from, to) into out[0..c->nren): `retired_for` other than
 * statement.site (or no statement.site to compare with), or a `vintage` that does not overlap the
 * period, refuse it for REF and CUE; a `market` other than statement.market (or no
 * statement.market) refuses it for market-based CUE only (where the source is does not change
 * REF). A criterion not stated is listed in unchecked, not refused. Pure.
 */
void wt_stmt_instruments(const struct wt_stmt_conf *c, int64_t from, int64_t to,
                         struct wt_stmt_instrument *out);

/*
 * Builds the statement over [from, to) from the store's series of t's meters and the hand
 * inputs c. Returns 0, -EINVAL with err (no meter of the roles the standard needs: "topology:
 * no facility_total meter ..."; a period without data; a tenant's outlet that is no pdu_outlet
 * meter of t: "FILE:LINE: statement.tenants[0].outlets[1]: ..."), -EIO or -ENOMEM. Free with
 * wt_statement_free.
 */
int wt_statement_build(struct wt_store *st, const struct wt_topology *t,
                       const struct wt_stmt_conf *c, int64_t from, int64_t to,
                       struct wt_statement *s, struct wt_err *err) WT_MUST_USE;
void wt_statement_free(struct wt_statement *s);

struct cJSON;
/*
 * The tenants' table of s (with statement.tenants: s->ntenants > 0) as a JSON object: {"label":
 * "annual"|"interim", "e_outlets_joules", "rows": [{"tenant": NAME|null (the outlets of no
 * tenant, always the last row), "outlets", "e_it_joules", "estimated", "measured_intervals",
 * "coverage", "share_of_e_it": X|null}]}. Used by the iso30134 statement and the EnEfG checks
 * (§ 15, customer information). NULL when out of memory.
 */
struct cJSON *wt_stmt_tenants_json(const struct wt_statement *s);

struct wt_carbon_conf;
/*
 * Appends CUE (ISO/IEC 30134-8 / EN 50600-4-8) to a built statement, in two labelled variants
 * (notes item 17, the Scope 2 dual-reporting rule), kgCO2e/kWh:
 *   location-based: sum_h(E_DC,h x EF_grid,h) / E_IT, E_DC (the boundary's meters, exported
 *     negative) cut at the steps of the stored grid-intensity series of carbon.zone
 *     (audit/carbon.h: its holes filled as there, or carbon.static_gco2_per_kwh); the factor's
 *     zone, sources and granularity in s->cue_location;
 *   market-based: (sum_i(kWh_i x rate_i) x covered / sum_i kWh_i + (E_DC - covered) x
 *     statement.residual_mix_g_per_kwh) / E_IT, covered = min(sum_i kWh_i, E_DC) over the
 *     instruments of statement.renewables (rate g_per_kwh, default 0); "not available" with the
 *     reason when no residual-mix factor is configured.
 * Returns 0, -EIO or -ENOMEM (err says which store read failed).
 */
/*
 * Appends the hourly CFE share beside REF (notes item 19; not an ISO/IEC 30134 KPI): sum over
 * the supply points of min(E_DC over the point, the point's carbon-free supply) / E_DC, from the
 * renewable supply series stored for carbon.zone (`wattage import carbon FILE --series
 * renewable`, kWh per point, actual values only; a point across the period's edge prorated).
 * Not available without a zone or a series, or when a point is longer than an hour.
 * Returns 0, -EIO or -ENOMEM.
 */
int wt_stmt_cfe(struct wt_store *st, const struct wt_topology *t, const struct wt_carbon_conf *cf,
                const struct wt_stmt_conf *c, struct wt_statement *s,
                struct wt_err *err) WT_MUST_USE;
/*
 * The part-load bins (notes item 24: an extra output, not a standard KPI): each 15-minute
 * interval measured by every E_DC and E_IT meter (s->matched) goes into the bin of its
 * IT load, E_IT / (interval x statement.installed_it_kw); per bin the intervals, E_DC, E_IT and
 * PUE = their ratio. Without installed_it_kw s->part_load_why says so. Returns 0 or the store's
 * error.
 */
int wt_stmt_part_load(struct wt_store *st, const struct wt_topology *t,
                      const struct wt_stmt_conf *c, struct wt_statement *s,
                      struct wt_err *err) WT_MUST_USE;
int wt_stmt_cue(struct wt_store *st, const struct wt_topology *t, const struct wt_carbon_conf *cf,
                const struct wt_stmt_conf *c, struct wt_statement *s,
                struct wt_err *err) WT_MUST_USE;

#endif
