/* SPDX-License-Identifier: MIT */
/*
 * Redfish collector (libcurl + cJSON): BMCs, rack PDUs, power shelves and cooling units. Each
 * target in `collectors.redfish.targets` is one Redfish service. The first poll walks from
 * /redfish/v1 to what the service has and remembers the resources that carry readings:
 *   PowerEquipment: RackPDUs, FloorPDUs, PowerShelves, TransferSwitches, ElectricalBuses and
 *     their Metrics, Mains, Branches and Outlets (power, energy, current, voltage, per phase)
 *   ThermalEquipment: CDUs, HeatExchangers, ImmersionUnits, their EnvironmentMetrics, primary and
 *     secondary coolant connectors (supply/return temperature, flow, pressure) and pumps
 *   Chassis: EnvironmentMetrics (PowerWatts, EnergykWh, temperature, fans), PowerSubsystem power
 *     supplies' Metrics, ThermalSubsystem (ThermalMetrics intake/exhaust, Fans); the legacy
 *     Power and Thermal resources when the new ones are absent; and Sensors not already seen
 * Later polls GET only those resources; a 404 (the service was re-laid out, a firmware update)
 * walks again. A value that two resources give (an excerpt and the Sensor it was taken from,
 * same DataSourceUri) is read once, from the first resource, so sums never count it twice.
 *
 * Readings are wattage_facility_* series labelled source="redfish", target, point (a path such
 * as "1U/Bay1/input", "pdu1/A1", "cdu1/primary1/supply"), kind (chassis, psu, fan, sensor, pdu,
 * mains, branch, outlet, cdu, coolant_primary, coolant_secondary, pump...), name (the service's
 * Name for it) and node/rack/zone from the config. Energy in kWh becomes joules, followed as a
 * counter (struct wt_energy_counter) so a reset is a new baseline, never a negative step.
 *
 * Security: TLS peers are verified by default (ca_file to trust a private CA); `insecure: true`
 * must be written and is logged as a warning at every start. Credentials come from a file and
 * are never logged. Basic auth or a Redfish session (X-Auth-Token, deleted at close). Every
 * request has a timeout, a whole poll at most 12 of them, and a response larger than
 * max_response_bytes is refused. Only URIs on the same service (starting with /redfish/v1) are
 * ever followed, and redirects are not.
 *
 * The service's clock: the Date header of the poll's answer with the quickest round trip gives
 * wattage_clock_peer_skew_seconds{source="redfish",target[,node,rack,zone]} (the service minus
 * this host; whole seconds, so +/- 0.5 s and half the round trip), with a warning in the log
 * when it goes beyond daemon.clock_max_error (collect/clocksync.h). The readings themselves
 * are stamped with this host's clock whatever the service's says.
 *
 * Points are built from URI segments (unique in their collections), so a service that repeats an
 * Id still gives one series per measuring point; a series is exported at most once per poll.
 */
#ifndef WT_REDFISH_H
#define WT_REDFISH_H

#include <stddef.h>

#include "core/source.h"
#include "core/yamltree.h"

extern const struct wt_collector_ops wt_redfish_collector;

/* Checks the section collectors.redfish.targets (see sections.c). Returns 0 or -EINVAL. */
int wt_redfish_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

/*
 * A stand-in for the service, for tests and fuzzing: every request of a target's state (made by
 * wt_redfish_collector.open_target) goes to fn instead of the network. fn gets the method and
 * the service path ("/redfish/v1/...") and returns the HTTP status, with *body and *len (kept by
 * fn's owner, copied before the next call; a body over max_response is refused as over HTTP).
 * fn NULL: HTTP again.
 */
typedef long (*wt_redfish_serve_fn)(void *ctx, const char *method, const char *path,
                                    const char **body, size_t *len);
void wt_redfish_serve(void *state, wt_redfish_serve_fn fn, void *ctx);

/* Default bound on one response body, bytes (the largest DMTF mockup resource is ~40 KiB). */
#define WT_REDFISH_MAX_RESPONSE (4 << 20)
/* At most this many resources are polled per target (the walk stops adding beyond). */
#define WT_REDFISH_MAX_RESOURCES 1024

#endif
