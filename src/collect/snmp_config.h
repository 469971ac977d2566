/* SPDX-License-Identifier: MIT */
/*
 * The SNMP collector's section, "collectors.snmp.targets" (collect/snmp_config.c): its check
 * and parse (wt_snmp_config_check, wt_snmp_parse_targets, declared with struct wt_snmp_target in
 * snmp.h), and what the other parts of the collector share with it: dotted OIDs into net-snmp's
 * form, and the names of the SNMPv3 authentication protocols.
 */
#ifndef WT_SNMP_CONFIG_H
#define WT_SNMP_CONFIG_H

#include <stddef.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "collect/snmp.h"

#define WT_SNMP_SECTION "collectors.snmp.targets"

/* The auth_protocol names, in struct wt_snmp_target.auth_proto's order; NULL-terminated. */
extern const char *const wt_snmp_auth_names[];

/* Parses dotted numeric OID text (a leading dot allowed) into o (at most max sub-identifiers).
 * Returns its length or -EINVAL. */
int wt_snmp_parse_oid(const char *s, oid *o, size_t max);

#endif
