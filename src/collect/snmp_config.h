/* SPDX-License-Identifier: MIT */
/*
 * The SNMP collector's section, "collectors.snmp.targets" (collect/snmp_config.c): the parse of
 * one target (the section, its check and its list are facility.c's, over snmp.c's
 * WT_FAC_COLLECTOR), and what the other parts of the collector share with it: dotted OIDs into
 * net-snmp's form, and the names of the SNMPv3 authentication protocols.
 */
#ifndef WT_SNMP_CONFIG_H
#define WT_SNMP_CONFIG_H

#include <stddef.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "collect/snmp.h"
#include "core/yget.h"

/* The auth_protocol names, in struct wt_snmp_target.auth_proto's order; NULL-terminated. */
extern const char *const wt_snmp_auth_names[];

/* Parses dotted numeric OID text (a leading dot allowed) into o (at most max sub-identifiers).
 * Returns its length or -EINVAL. */
int wt_snmp_parse_oid(const char *s, oid *o, size_t max);

/*
 * Target mapping item at path into *target (a struct wt_snmp_target; core/yget.h's
 * wt_y_targets parse). Returns 0 or -EINVAL with g->err naming file:line and key; a community
 * is never echoed.
 */
int wt_snmp_parse_target(const struct wt_yget *g, const struct wt_ynode *item, const char *path,
                         void *target) WT_MUST_USE;
/* Aims a target's generic columns at its own storage (after it was copied). */
void wt_snmp_target_aim(struct wt_snmp_target *t);

#endif
