/* SPDX-License-Identifier: MIT */
/*
 * A snapshot rendered for people and programs: the object `wattage status --json` prints and
 * `GET /api/v1/status` serves (one shape for both), and the human table of `wattage status`.
 */
#ifndef WT_SNAPSHOT_H
#define WT_SNAPSHOT_H

#include <stdint.h>
#include <stdio.h>

#include "core/hub.h"
#include "core/reading.h"

/*
 * Renders readings and collector states as the status JSON object (compact when !pretty).
 * Returns a malloc'd string the caller frees, or NULL on allocation failure.
 */
char *wt_snapshot_json(const struct wt_batch *b, const struct wt_hub_collector *cs, size_t ncs,
                       int64_t t_ns, int pretty);
/* Prints the human form of the same snapshot. */
void wt_snapshot_print(FILE *f, const struct wt_batch *b, const struct wt_hub_collector *cs,
                       size_t ncs, int64_t t_ns);

#endif
