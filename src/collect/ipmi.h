/* SPDX-License-Identifier: MIT */
/*
 * IPMI DCMI collector (FreeIPMI's libfreeipmi): a server's own power as its BMC measures it,
 * for BMCs without Redfish. Each target in `collectors.ipmi.targets` is one BMC, reached
 *   over the LAN: IPMI 2.0 (RMCP+, "lanplus") to host[:port] with a user, a password read from
 *     password_file (never logged), the BMC key K_g from k_g_file when the BMC has one (two-key
 *     logins), a privilege level (user by default: DCMI Get Power Reading
 *     needs no more), a cipher suite (3 by default) and FreeIPMI's workaround flags for BMCs
 *     that bend the protocol (ipmi_sim, some Supermicro, Intel and Sun firmware), or
 *   in band: through the kernel's IPMI driver (/dev/ipmi0, driver openipmi), or the KCS or SSIF
 *     interfaces FreeIPMI drives itself (driver kcs|ssif; root only), or whatever FreeIPMI
 *     finds (driver auto).
 * Each poll sends DCMI Get Power Reading (NetFn 0x2C, group 0xDC, command 0x02, mode 1: system
 * power statistics) and gives
 *   wattage_facility_power_watts{source="ipmi",target,point="dcmi",kind="chassis"[,node,rack,
 *     zone]} the current power, so that a topology meter of role bmc (default match
 *     {kind: chassis}) reads it as it reads a Redfish BMC's chassis power;
 *   wattage_facility_power_statistic_watts{...,statistic="minimum"|"maximum"|"average"} over
 *   wattage_facility_power_statistics_period_seconds, the BMC's statistics reporting period;
 *   wattage_clock_peer_skew_seconds{source="ipmi",target...}: the reading's time stamp (the
 *     BMC's clock, whole seconds) minus this host's clock (collect/clocksync.h), when the
 *     stamp is an absolute time (IPMI stamps up to 0x20000000 count from the BMC's start);
 *   wattage_facility_temperature_celsius{source="ipmi",target,point="inlet",instance[,node,
 *     rack,zone]}: each inlet temperature sensor the BMC has (DCMI Get Temperature Reading,
 *     command 0x10, entity 0x40), in whole degrees, for the ASHRAE envelope and the racks'
 *     Delta-T; a BMC without them is said once and not asked again;
 *   wattage_facility_up 1.
 * A BMC that says "no power measurement available" (state bit clear; many do while the host is
 * off) gives up 1 and no power, said once when it starts and once when it ends.
 *
 * The session is opened at the first poll and kept; a command that fails on a session opened
 * at an earlier poll (the BMC restarted, the session expired) is sent once more on a new one.
 * A BMC that does not answer (the session timeout: `timeout`, 5 s by default), refuses the
 * password or the privilege, or does not support DCMI (completion code 0xC1 or 0xCC) fails that
 * poll with a message that says which; the loop logs it (rate-limited), backs off and polls
 * again: nothing here stops the daemon.
 */
#ifndef WT_IPMI_H
#define WT_IPMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/source.h"
#include "core/yamltree.h"

extern const struct wt_collector_ops wt_ipmi_collector;

/* Checks the section collectors.ipmi.targets (see sections.c). Returns 0 or -EINVAL. */
int wt_ipmi_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

/* DCMI Get Power Reading's answer, in base units. */
struct wt_dcmi_power {
    double current_w, minimum_w, maximum_w, average_w;
    uint32_t stamp;  /* the BMC's IPMI time stamp: unix seconds above 0x20000000 */
    double period_s; /* statistics reporting period (the wire says milliseconds) */
    bool active;     /* power measurement active (state byte bit 6) */
};

/* IPMI time stamps up to this count seconds from the controller's initialisation. */
#define WT_IPMI_STAMP_RELATIVE_MAX 0x20000000u

/*
 * Decodes the response of DCMI Get Power Reading as ipmi_cmd_raw returns it: rs[0] the command
 * (0x02), rs[1] the completion code, rs[2] the group (0xDC), then 16-bit little-endian watts
 * (current, minimum, maximum, average), the 32-bit time stamp and period (ms), and the state
 * byte. Returns 0; -ENOTSUP when the BMC does not support the command (completion code 0xC1
 * invalid command, 0xCC invalid data: no DCMI, or not this mode); -EACCES for 0xD4
 * (insufficient privilege); -EBUSY for 0xC0 (node busy); -EPROTO for another code, another
 * group, or a response shorter than 20 bytes. err says which, with the code.
 */
int wt_ipmi_parse_power(const uint8_t *rs, size_t n, struct wt_dcmi_power *out,
                        struct wt_err *err) WT_MUST_USE;

/*
 * The BMC key (K_g) as k_g_file gives it: "0x" and up to 40 hex digits (20 bytes), or up to 20
 * characters taken as they are. *len gets its length in bytes. Returns 0 or -EINVAL with err.
 */
int wt_ipmi_parse_k_g(const char *text, uint8_t *out, unsigned *len,
                      struct wt_err *err) WT_MUST_USE;

/* DCMI Get Temperature Reading's answer: at most 8 temperatures an answer. */
#define WT_DCMI_TEMPS_MAX 8
struct wt_dcmi_temps {
    unsigned total; /* instances the BMC has of the entity */
    unsigned n;     /* temperatures in this answer */
    double celsius[WT_DCMI_TEMPS_MAX];
    uint8_t instance[WT_DCMI_TEMPS_MAX];
};

/*
 * Decodes the response of DCMI Get Temperature Reading as ipmi_cmd_raw returns it: rs[0] the
 * command (0x10), rs[1] the completion code, rs[2] the group (0xDC), rs[3] the number of
 * instances the BMC has, rs[4] the number of temperatures that follow, then two bytes each: the
 * reading (bits 6:0 whole degrees Celsius, bit 7 set when below zero) and its entity instance.
 * Returns 0; -ENOTSUP for completion codes 0xC1 and 0xCC (no such command or sensor); -EACCES
 * for 0xD4; -EPROTO for another code, another group, more than 8 temperatures or fewer bytes than
 * they need. err says which.
 */
int wt_ipmi_parse_temps(const uint8_t *rs, size_t n, struct wt_dcmi_temps *out,
                        struct wt_err *err) WT_MUST_USE;

#endif
