/* SPDX-License-Identifier: MIT */
/*
 * The built-in SNMP profiles: which MIB columns hold power, energy, current, voltage, apparent
 * power and power factor on the common rack PDUs and UPSes, with the scale each MIB states (the
 * DESCRIPTION or UNITS clause: APC rPDU2 power in hundredths of kW, Eaton current in mA, Sentry4
 * energy in tenths of kWh...). Columns are walked with GETBULK; scalars are walked from their
 * parent, so "x.0" is just a row with index 0. Negative values mean "not available" on these
 * MIBs unless a column says otherwise.
 */
#include <string.h>

#include "collect/snmp.h"

#define KWH 3.6e6 /* joules */
#define WH 3600.0
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* APC PowerNet-MIB, rack PDUs (rPDU2 tables, with the older rPDU ones as fallbacks). */
#define APC_LOAD_PHASE "1.3.6.1.4.1.318.1.1.12.2.3.1.1.4" /* rPDULoadStatusPhaseNumber */
#define APC_LOAD_BANK "1.3.6.1.4.1.318.1.1.12.2.3.1.1.5"  /* rPDULoadStatusBankNumber */
static const char *const apc_rpdu_match[] = {"1.3.6.1.4.1.318.1.3.4", NULL};
static const struct wt_snmp_column apc_rpdu[] = {
    {"1.3.6.1.4.1.318.1.1.26.4.3.1.5", WT_M_FAC_POWER_W, 10, "pdu", "total",
     "1.3.6.1.4.1.318.1.1.26.4.3.1.3", 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.12.1.16", WT_M_FAC_POWER_W, 1, "pdu", "total", NULL, WT_SNMP_FALLBACK, 0,
     0, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.4.3.1.9", WT_M_FAC_ENERGY_J, 0.1 * KWH, "pdu", "total",
     "1.3.6.1.4.1.318.1.1.26.4.3.1.3", 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.4.3.1.16", WT_M_FAC_APPARENT_VA, 10, "pdu", "total",
     "1.3.6.1.4.1.318.1.1.26.4.3.1.3", 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.4.3.1.17", WT_M_FAC_POWER_FACTOR, 0.01, "pdu", "total",
     "1.3.6.1.4.1.318.1.1.26.4.3.1.3", 0, 1, 1, NULL, NULL},
    /*
     * rPDULoadStatusLoad first (what LibreNMS reads), rPDU2 phase current where it is absent. Its
     * rows are phases or banks: a phase's row has rPDULoadStatusPhaseNumber 1..3 (and bank
     * number 0), a bank's row phase number 0 and rPDULoadStatusBankNumber 1..n. Devices that send
     * neither column have one row per phase.
     */
    {"1.3.6.1.4.1.318.1.1.12.2.3.1.1.2", WT_M_FAC_CURRENT_A, 0.1, "phase", "phase%k", NULL,
     WT_SNMP_KEY_NONZERO, 0, 0, NULL, NULL, APC_LOAD_PHASE},
    {"1.3.6.1.4.1.318.1.1.26.6.3.1.5", WT_M_FAC_CURRENT_A, 0.1, "phase", "phase%1", NULL,
     WT_SNMP_FALLBACK, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.6.3.1.6", WT_M_FAC_VOLTAGE_V, 1, "phase", "phase%1", NULL, 0, 0, 0,
     NULL, NULL},
    /* rPDUIdentDeviceLinetoLineVoltage: the configured line voltage (AP7xxx) when unmetered. */
    {"1.3.6.1.4.1.318.1.1.12.1.15", WT_M_FAC_VOLTAGE_V, 1, "phase", "phase1", NULL,
     WT_SNMP_FALLBACK, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.6.3.1.7", WT_M_FAC_POWER_W, 10, "phase", "phase%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.6.3.1.8", WT_M_FAC_APPARENT_VA, 10, "phase", "phase%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.6.3.1.9", WT_M_FAC_POWER_FACTOR, 0.01, "phase", "phase%1", NULL, 0, 0,
     0, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.8.3.1.5", WT_M_FAC_CURRENT_A, 0.1, "bank", "bank%1", NULL, 0, 0, 0,
     NULL, NULL},
    /* The banks' rows of rPDULoadStatusLoad where the rPDU2 bank table is absent. */
    {"1.3.6.1.4.1.318.1.1.12.2.3.1.1.2", WT_M_FAC_CURRENT_A, 0.1, "bank", "bank%k", NULL,
     WT_SNMP_FALLBACK | WT_SNMP_KEY_NONZERO | WT_SNMP_KEY_REQUIRED, 0, 0, NULL, NULL,
     APC_LOAD_BANK},
    {"1.3.6.1.4.1.318.1.1.26.9.4.3.1.6", WT_M_FAC_CURRENT_A, 0.1, "outlet", "outlet%1",
     "1.3.6.1.4.1.318.1.1.26.9.4.3.1.3", 0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.9.4.3.1.7", WT_M_FAC_POWER_W, 1, "outlet", "outlet%1",
     "1.3.6.1.4.1.318.1.1.26.9.4.3.1.3", 0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.26.9.4.3.1.11", WT_M_FAC_ENERGY_J, 0.1 * KWH, "outlet", "outlet%1",
     "1.3.6.1.4.1.318.1.1.26.9.4.3.1.3", 0, 0, 0, NULL, NULL},
};
static const struct wt_snmp_profile p_apc_rpdu = {
    "apc-rpdu", "APC", apc_rpdu_match, "1.3.6.1.4.1.318.1.1.12.1.5.0", apc_rpdu, N(apc_rpdu)};

/* APC PowerNet-MIB, UPSes (upsHighPrec*, tenths). */
static const char *const apc_ups_match[] = {"1.3.6.1.4.1.318.1.3.2", "1.3.6.1.4.1.318.1.3.5",
                                            "1.3.6.1.4.1.318.1.3.27", NULL};
static const struct wt_snmp_column apc_ups[] = {
    {"1.3.6.1.4.1.318.1.1.1.3.3.1", WT_M_FAC_VOLTAGE_V, 0.1, "ups_input", "input1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.1.4.3.1", WT_M_FAC_VOLTAGE_V, 0.1, "ups_output", "output1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.1.4.3.4", WT_M_FAC_CURRENT_A, 0.1, "ups_output", "output1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.1.2.3.4", WT_M_FAC_VOLTAGE_V, 0.1, "battery", "battery", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.318.1.1.1.2.3.2", WT_M_FAC_TEMP_C, 0.1, "battery", "battery", NULL,
     WT_SNMP_SIGNED, 0, 0, NULL, NULL},
    /* UPS-MIB output power where the card also serves RFC 1628. */
    {"1.3.6.1.2.1.33.1.4.4.1.4", WT_M_FAC_POWER_W, 1, "ups_output", "output%1", NULL, 0, 0, 0, NULL,
     NULL},
};
static const struct wt_snmp_profile p_apc_ups = {
    "apc-ups", "APC", apc_ups_match, "1.3.6.1.4.1.318.1.1.1.1.1.1.0", apc_ups, N(apc_ups)};

/* EATON-EPDU-MIB: index strapping(unit 0..).input(.phase) and strapping.outlet. */
static const char *const eaton_match[] = {"1.3.6.1.4.1.534.6.6.7", NULL};
#define EATON_OUTLET_NAME "1.3.6.1.4.1.534.6.6.7.6.1.1.3"
static const struct wt_snmp_column eaton[] = {
    {"1.3.6.1.4.1.534.6.6.7.3.5.1.4", WT_M_FAC_POWER_W, 1, "inlet", "inlet%2", NULL, 0, 1, 0, NULL,
     NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.5.1.5", WT_M_FAC_ENERGY_J, WH, "inlet", "inlet%2", NULL, 0, 1, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.5.1.3", WT_M_FAC_APPARENT_VA, 1, "inlet", "inlet%2", NULL, 0, 1, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.5.1.7", WT_M_FAC_POWER_FACTOR, 0.001, "inlet", "inlet%2", NULL,
     WT_SNMP_ABS, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.2.1.3", WT_M_FAC_VOLTAGE_V, 0.001, "phase", "inlet%2.phase%3", NULL,
     0, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.3.1.4", WT_M_FAC_CURRENT_A, 0.001, "phase", "inlet%2.phase%3", NULL,
     0, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.4.1.4", WT_M_FAC_POWER_W, 1, "phase", "inlet%2.phase%3", NULL, 0, 1,
     0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.4.1.5", WT_M_FAC_ENERGY_J, WH, "phase", "inlet%2.phase%3", NULL, 0, 1,
     0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.4.1.3", WT_M_FAC_APPARENT_VA, 1, "phase", "inlet%2.phase%3", NULL, 0,
     1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.3.4.1.7", WT_M_FAC_POWER_FACTOR, 0.001, "phase", "inlet%2.phase%3",
     NULL, WT_SNMP_ABS, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.6.4.1.3", WT_M_FAC_CURRENT_A, 0.001, "outlet", "outlet%2",
     EATON_OUTLET_NAME, 0, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.6.5.1.3", WT_M_FAC_POWER_W, 1, "outlet", "outlet%2", EATON_OUTLET_NAME,
     0, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.6.5.1.4", WT_M_FAC_ENERGY_J, WH, "outlet", "outlet%2",
     EATON_OUTLET_NAME, 0, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.6.5.1.2", WT_M_FAC_APPARENT_VA, 1, "outlet", "outlet%2",
     EATON_OUTLET_NAME, 0, 1, 0, NULL, NULL},
    {"1.3.6.1.4.1.534.6.6.7.6.5.1.6", WT_M_FAC_POWER_FACTOR, 0.001, "outlet", "outlet%2",
     EATON_OUTLET_NAME, WT_SNMP_ABS, 1, 0, NULL, NULL},
};
static const struct wt_snmp_profile p_eaton = {
    "eaton-epdu", "Eaton", eaton_match, "1.3.6.1.4.1.534.6.6.7.1.2.1.3.0", eaton, N(eaton)};

/*
 * CPQPOWER-MIB (HPE G2 PDUs): index pdu(.phase|.outlet). pdu3InputPowerWatts says 0.001 W in the
 * MIB, but the devices report watts (it equals the phase sum of pdu3InputPhasePowerWatts).
 */
static const char *const hpe_match[] = {"1.3.6.1.4.1.232.165.11", NULL};
#define HPE_OUTLET_NAME "1.3.6.1.4.1.232.165.11.5.1.1.2"
static const struct wt_snmp_column hpe[] = {
    {"1.3.6.1.4.1.232.165.11.2.1.1.5", WT_M_FAC_POWER_W, 1, "pdu", "total", NULL, 0, 1, 1, NULL,
     NULL},
    {"1.3.6.1.4.1.232.165.11.2.1.1.9", WT_M_FAC_POWER_FACTOR, 0.01, "pdu", "total", NULL, 0, 1, 1,
     NULL, NULL},
    {"1.3.6.1.4.1.232.165.11.2.2.1.3", WT_M_FAC_VOLTAGE_V, 0.1, "phase", "phase%2", NULL, 0, 1, 1,
     NULL, NULL},
    {"1.3.6.1.4.1.232.165.11.2.2.1.11", WT_M_FAC_CURRENT_A, 0.01, "phase", "phase%2", NULL, 0, 1, 1,
     NULL, NULL},
    {"1.3.6.1.4.1.232.165.11.2.2.1.20", WT_M_FAC_POWER_W, 1, "phase", "phase%2", NULL, 0, 1, 1,
     NULL, NULL},
    {"1.3.6.1.4.1.232.165.11.5.1.1.5", WT_M_FAC_CURRENT_A, 0.01, "outlet", "outlet%2",
     HPE_OUTLET_NAME, 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.232.165.11.5.1.1.13", WT_M_FAC_POWER_W, 1, "outlet", "outlet%2", HPE_OUTLET_NAME,
     0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.232.165.11.5.1.1.16", WT_M_FAC_POWER_FACTOR, 0.01, "outlet", "outlet%2",
     HPE_OUTLET_NAME, 0, 1, 1, NULL, NULL},
};
static const struct wt_snmp_profile p_hpe = {"hpe-pdu3", "HPE", hpe_match, NULL, hpe, N(hpe)};

/* Sentry3-MIB: index tower.infeed(.outlet). */
static const char *const sentry3_match[] = {"1.3.6.1.4.1.1718.3", NULL};
#define ST3_INFEED_NAME "1.3.6.1.4.1.1718.3.2.2.1.3"
static const struct wt_snmp_column sentry3[] = {
    {"1.3.6.1.4.1.1718.3.1.6", WT_M_FAC_POWER_W, 1, "pdu", "total", NULL, 0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.1718.3.1.10", WT_M_FAC_POWER_FACTOR, 0.01, "pdu", "total", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.4.1.1718.3.2.2.1.7", WT_M_FAC_CURRENT_A, 0.01, "infeed", "infeed%2", ST3_INFEED_NAME,
     0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.3.2.2.1.11", WT_M_FAC_VOLTAGE_V, 0.1, "infeed", "infeed%2", ST3_INFEED_NAME,
     0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.3.2.2.1.12", WT_M_FAC_POWER_W, 1, "infeed", "infeed%2", ST3_INFEED_NAME, 0,
     1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.3.2.3.1.7", WT_M_FAC_CURRENT_A, 0.01, "outlet", "infeed%2.outlet%3",
     "1.3.6.1.4.1.1718.3.2.3.1.3", 0, 1, 1, NULL, NULL},
};
static const struct wt_snmp_profile p_sentry3 = {
    "sentry3", "ServerTech", sentry3_match, "1.3.6.1.4.1.1718.3.1.1.0", sentry3, N(sentry3)};

/*
 * Sentry4-MIB: index unit.cord(.phase|.line). The model is the first unit's st4UnitModel
 * ("C2S42CE-YCMFAM00"), else the system's st4SystemProductName ("Sentry Switched PDU").
 */
static const char *const sentry4_match[] = {"1.3.6.1.4.1.1718.4", NULL};
#define ST4_CORD_NAME "1.3.6.1.4.1.1718.4.1.3.2.1.3"
#define ST4_PHASE_NAME "1.3.6.1.4.1.1718.4.1.5.2.1.4"
static const struct wt_snmp_column sentry4[] = {
    {"1.3.6.1.4.1.1718.4.1.3.3.1.3", WT_M_FAC_POWER_W, 1, "inlet", "inlet%2", ST4_CORD_NAME, 0, 1,
     1, NULL, NULL},
    {"1.3.6.1.4.1.1718.4.1.3.3.1.5", WT_M_FAC_APPARENT_VA, 1, "inlet", "inlet%2", ST4_CORD_NAME, 0,
     1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.4.1.3.3.1.8", WT_M_FAC_POWER_FACTOR, 0.01, "inlet", "inlet%2", ST4_CORD_NAME,
     0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.4.1.3.3.1.10", WT_M_FAC_ENERGY_J, 0.1 * KWH, "inlet", "inlet%2",
     ST4_CORD_NAME, 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.4.1.5.3.1.3", WT_M_FAC_VOLTAGE_V, 0.1, "phase", "inlet%2.phase%3",
     ST4_PHASE_NAME, 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.4.1.5.3.1.6", WT_M_FAC_CURRENT_A, 0.01, "phase", "inlet%2.phase%3",
     ST4_PHASE_NAME, 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.4.1.5.3.1.8", WT_M_FAC_POWER_W, 1, "phase", "inlet%2.phase%3",
     ST4_PHASE_NAME, 0, 1, 1, NULL, NULL},
    {"1.3.6.1.4.1.1718.4.1.4.3.1.3", WT_M_FAC_CURRENT_A, 0.01, "line", "inlet%2.line%3",
     "1.3.6.1.4.1.1718.4.1.4.2.1.4", 0, 1, 1, NULL, NULL},
};
static const struct wt_snmp_profile p_sentry4 = {"sentry4",
                                                 "ServerTech",
                                                 sentry4_match,
                                                 "1.3.6.1.4.1.1718.4.1.2.2.1.5.1",
                                                 sentry4,
                                                 N(sentry4),
                                                 "1.3.6.1.4.1.1718.4.1.1.1.1.0"};

/* VERTIV-V5-MIB (Geist): phases, breakers and lines by their own index. */
static const char *const vertiv_match[] = {"1.3.6.1.4.1.21239", NULL};
#define V5_PHASE_NAME "1.3.6.1.4.1.21239.5.2.3.2.1.3"
static const struct wt_snmp_column vertiv[] = {
    {"1.3.6.1.4.1.21239.5.2.3.2.1.4", WT_M_FAC_VOLTAGE_V, 0.1, "phase", "phase%1", V5_PHASE_NAME, 0,
     0, 0, NULL, NULL},
    {"1.3.6.1.4.1.21239.5.2.3.2.1.8", WT_M_FAC_CURRENT_A, 0.01, "phase", "phase%1", V5_PHASE_NAME,
     0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.21239.5.2.3.2.1.12", WT_M_FAC_POWER_W, 1, "phase", "phase%1", V5_PHASE_NAME, 0, 0,
     0, NULL, NULL},
    {"1.3.6.1.4.1.21239.5.2.3.2.1.13", WT_M_FAC_APPARENT_VA, 1, "phase", "phase%1", V5_PHASE_NAME,
     0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.21239.5.2.3.2.1.14", WT_M_FAC_POWER_FACTOR, 0.01, "phase", "phase%1",
     V5_PHASE_NAME, 0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.21239.5.2.3.2.1.15", WT_M_FAC_ENERGY_J, WH, "phase", "phase%1", V5_PHASE_NAME, 0,
     0, 0, NULL, NULL},
    {"1.3.6.1.4.1.21239.5.2.3.3.1.4", WT_M_FAC_CURRENT_A, 0.01, "breaker", "breaker%1",
     "1.3.6.1.4.1.21239.5.2.3.3.1.3", 0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.21239.5.2.3.4.1.4", WT_M_FAC_CURRENT_A, 0.01, "line", "line%1",
     "1.3.6.1.4.1.21239.5.2.3.4.1.3", 0, 0, 0, NULL, NULL},
};
static const struct wt_snmp_profile p_vertiv = {"vertiv-v5", "Vertiv", vertiv_match,
                                                NULL,        vertiv,   N(vertiv)};

/*
 * Raritan PDU2-MIB: one value column per inlet/outlet whose index ends in the sensor type;
 * every value is an integer to be divided by 10^<sensor>DecimalDigits.
 */
static const struct wt_snmp_type_map raritan_types[] = {
    {1, WT_M_FAC_CURRENT_A, 1},    /* rmsCurrent */
    {4, WT_M_FAC_VOLTAGE_V, 1},    /* rmsVoltage */
    {5, WT_M_FAC_POWER_W, 1},      /* activePower */
    {6, WT_M_FAC_APPARENT_VA, 1},  /* apparentPower */
    {7, WT_M_FAC_POWER_FACTOR, 1}, /* powerFactor */
    {8, WT_M_FAC_ENERGY_J, WH},    /* activeEnergy, Wh */
    {0, -1, 0},
};
static const char *const raritan2_match[] = {"1.3.6.1.4.1.13742.6", NULL};
static const struct wt_snmp_column raritan2[] = {
    {"1.3.6.1.4.1.13742.6.5.2.3.1.4", 0, 1, "inlet", "inlet%2", "1.3.6.1.4.1.13742.6.3.3.3.1.3",
     WT_SNMP_TYPED, 1, 1, "1.3.6.1.4.1.13742.6.3.3.4.1.7", raritan_types},
    {"1.3.6.1.4.1.13742.6.5.4.3.1.4", 0, 1, "outlet", "outlet%2", "1.3.6.1.4.1.13742.6.3.5.3.1.3",
     WT_SNMP_TYPED, 1, 1, "1.3.6.1.4.1.13742.6.3.5.4.1.7", raritan_types},
};
static const struct wt_snmp_profile p_raritan2 = {"raritan-pdu2", "Raritan",
                                                  raritan2_match, "1.3.6.1.4.1.13742.6.3.2.1.1.3.1",
                                                  raritan2,       N(raritan2)};

/* Raritan PDU-MIB (first generation Dominion PX): milliamps, millivolts, watts. */
static const char *const raritan1_match[] = {"1.3.6.1.4.1.13742.4", NULL};
static const struct wt_snmp_column raritan1[] = {
    {"1.3.6.1.4.1.13742.4.1.20.2.1.7", WT_M_FAC_CURRENT_A, 0.001, "inlet", "inlet%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.13742.4.1.20.2.1.8", WT_M_FAC_VOLTAGE_V, 0.001, "inlet", "inlet%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.13742.4.1.20.2.1.9", WT_M_FAC_POWER_W, 1, "inlet", "inlet%1", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.4.1.13742.4.1.20.2.1.10", WT_M_FAC_APPARENT_VA, 1, "inlet", "inlet%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.4.1.13742.4.1.20.2.1.11", WT_M_FAC_POWER_FACTOR, 0.01, "inlet", "inlet%1", NULL, 0, 0,
     0, NULL, NULL},
    {"1.3.6.1.4.1.13742.4.1.2.2.1.4", WT_M_FAC_CURRENT_A, 0.001, "outlet", "outlet%1",
     "1.3.6.1.4.1.13742.4.1.2.2.1.2", 0, 0, 0, NULL, NULL},
    {"1.3.6.1.4.1.13742.4.1.2.2.1.8", WT_M_FAC_APPARENT_VA, 1, "outlet", "outlet%1",
     "1.3.6.1.4.1.13742.4.1.2.2.1.2", 0, 0, 0, NULL, NULL},
};
static const struct wt_snmp_profile p_raritan1 = {"raritan-pdu", "Raritan", raritan1_match,
                                                  NULL,          raritan1,  N(raritan1)};

/* UPS-MIB (RFC 1628): any UPS that serves it; chosen also when no other profile matches. */
static const char *const ups_match[] = {"1.3.6.1.4.1.534.1", "1.3.6.1.4.1.705.1", NULL};
static const struct wt_snmp_column ups[] = {
    {"1.3.6.1.2.1.33.1.3.3.1.3", WT_M_FAC_VOLTAGE_V, 1, "ups_input", "input%1", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.2.1.33.1.3.3.1.4", WT_M_FAC_CURRENT_A, 0.1, "ups_input", "input%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.2.1.33.1.3.3.1.5", WT_M_FAC_POWER_W, 1, "ups_input", "input%1", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.2.1.33.1.4.4.1.2", WT_M_FAC_VOLTAGE_V, 1, "ups_output", "output%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.2.1.33.1.4.4.1.3", WT_M_FAC_CURRENT_A, 0.1, "ups_output", "output%1", NULL, 0, 0, 0,
     NULL, NULL},
    {"1.3.6.1.2.1.33.1.4.4.1.4", WT_M_FAC_POWER_W, 1, "ups_output", "output%1", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.2.1.33.1.2.5", WT_M_FAC_VOLTAGE_V, 0.1, "battery", "battery", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.2.1.33.1.2.6", WT_M_FAC_CURRENT_A, 0.1, "battery", "battery", NULL, WT_SNMP_SIGNED, 0,
     0, NULL, NULL},
    {"1.3.6.1.2.1.33.1.2.7", WT_M_FAC_TEMP_C, 1, "battery", "battery", NULL, WT_SNMP_SIGNED, 0, 0,
     NULL, NULL},
};
static const struct wt_snmp_profile p_ups = {"ups-mib", "",    ups_match, "1.3.6.1.2.1.33.1.1.2.0",
                                             ups,       N(ups)};

/*
 * LIEBERT-GP-PDU-MIB (Vertiv/Liebert MPH2 and other IntelliSlot rack PDUs): index pdu.ps for the
 * power sources, pdu.branch for receptacle branches, pdu.branch.receptacle for receptacles;
 * power in watts, energy in tenths of kWh, receptacle current in hundredths of amps.
 */
static const char *const liebert_match[] = {"1.3.6.1.4.1.476.1.42", NULL};
#define LGP "1.3.6.1.4.1.476.1.42.3.8."
static const struct wt_snmp_column liebert[] = {
    {LGP "30.20.1.65", WT_M_FAC_POWER_W, 1, "inlet", "inlet%2", LGP "30.20.1.15", 0, 1, 1, NULL,
     NULL},
    {LGP "30.20.1.50", WT_M_FAC_ENERGY_J, 0.1 * KWH, "inlet", "inlet%2", LGP "30.20.1.15", 0, 1, 1,
     NULL, NULL},
    {LGP "40.20.1.115", WT_M_FAC_POWER_W, 1, "branch", "branch%2", LGP "40.20.1.8", 0, 1, 1, NULL,
     NULL},
    {LGP "40.20.1.85", WT_M_FAC_ENERGY_J, 0.1 * KWH, "branch", "branch%2", LGP "40.20.1.8", 0, 1, 1,
     NULL, NULL},
    {LGP "50.20.1.65", WT_M_FAC_POWER_W, 1, "outlet", "branch%2.outlet%3", LGP "50.20.1.10", 0, 1,
     1, NULL, NULL},
    {LGP "50.20.1.85", WT_M_FAC_ENERGY_J, 0.1 * KWH, "outlet", "branch%2.outlet%3",
     LGP "50.20.1.10", 0, 1, 1, NULL, NULL},
    {LGP "50.20.1.61", WT_M_FAC_CURRENT_A, 0.01, "outlet", "branch%2.outlet%3", LGP "50.20.1.10", 0,
     1, 1, NULL, NULL},
};
static const struct wt_snmp_profile p_liebert = {"liebert-gp-pdu", "Vertiv",  liebert_match, NULL,
                                                 liebert,          N(liebert)};

/* ATEN-IPMI-MIB (Supermicro BMCs): PSU input, voltage and current sent as text. */
static const char *const smc_match[] = {"1.3.6.1.4.1.21317", NULL};
static const struct wt_snmp_column smc[] = {
    {"1.3.6.1.4.1.21317.1.14.2.1.5", WT_M_FAC_POWER_W, 1, "psu", "psu%1", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.4.1.21317.1.14.2.1.4", WT_M_FAC_CURRENT_A, 1, "psu", "psu%1", NULL, 0, 0, 0, NULL,
     NULL},
    {"1.3.6.1.4.1.21317.1.14.2.1.3", WT_M_FAC_VOLTAGE_V, 1, "psu", "psu%1", NULL, 0, 0, 0, NULL,
     NULL},
};
static const struct wt_snmp_profile p_smc = {
    "supermicro-bmc", "Supermicro", smc_match, NULL, smc, N(smc)};

const struct wt_snmp_profile *const wt_snmp_profiles[] = {
    &p_apc_rpdu, &p_apc_ups,  &p_eaton,   &p_hpe, &p_sentry3, &p_sentry4, &p_vertiv,
    &p_raritan2, &p_raritan1, &p_liebert, &p_ups, &p_smc,     NULL,
};

const struct wt_snmp_profile *wt_snmp_profile_find(const char *name)
{
    for (size_t i = 0; wt_snmp_profiles[i]; i++)
        if (strcmp(wt_snmp_profiles[i]->name, name) == 0)
            return wt_snmp_profiles[i];
    return NULL;
}

const struct wt_snmp_profile *wt_snmp_profile_match(const char *sysoid)
{
    const struct wt_snmp_profile *best = NULL;
    size_t best_len = 0;
    if (!sysoid)
        return NULL;
    if (sysoid[0] == '.')
        sysoid++;
    for (size_t i = 0; wt_snmp_profiles[i]; i++) {
        const char *const *m = wt_snmp_profiles[i]->match;
        for (size_t k = 0; m && m[k]; k++) {
            size_t n = strlen(m[k]);
            /* Whole sub-identifiers only: 1.3.6.1.4.1.1718.3 is not a prefix of ...1718.30. */
            if (strncmp(sysoid, m[k], n) == 0 && (sysoid[n] == '\0' || sysoid[n] == '.') &&
                n > best_len) {
                best = wt_snmp_profiles[i];
                best_len = n;
            }
        }
    }
    return best;
}

double wt_snmp_unit_factor(int metric, const char *unit)
{
    static const struct {
        int metric;
        const char *unit;
        double f;
    } t[] = {
        {WT_M_FAC_POWER_W, "W", 1},
        {WT_M_FAC_POWER_W, "kW", 1e3},
        {WT_M_FAC_POWER_W, "mW", 1e-3},
        {WT_M_FAC_ENERGY_J, "J", 1},
        {WT_M_FAC_ENERGY_J, "Wh", WH},
        {WT_M_FAC_ENERGY_J, "kWh", KWH},
        {WT_M_FAC_ENERGY_J, "MWh", 1e3 * KWH},
        {WT_M_FAC_CURRENT_A, "A", 1},
        {WT_M_FAC_CURRENT_A, "mA", 1e-3},
        {WT_M_FAC_VOLTAGE_V, "V", 1},
        {WT_M_FAC_VOLTAGE_V, "mV", 1e-3},
        {WT_M_FAC_VOLTAGE_V, "kV", 1e3},
        {WT_M_FAC_APPARENT_VA, "VA", 1},
        {WT_M_FAC_APPARENT_VA, "kVA", 1e3},
        {WT_M_FAC_POWER_FACTOR, "ratio", 1},
        {WT_M_FAC_POWER_FACTOR, "%", 0.01},
        {WT_M_FAC_TEMP_C, "C", 1},
    };
    if (!unit || !unit[0])
        return 1;
    for (size_t i = 0; i < N(t); i++)
        if (t[i].metric == metric && strcmp(t[i].unit, unit) == 0)
            return t[i].f;
    return 0;
}
