/* SPDX-License-Identifier: MIT */
/*
 * Import of recorded telemetry into the store as a recorded node, so logs users already have can
 * be audited. nvidia-smi CSV, as written by
 *   nvidia-smi --query-gpu=timestamp,index,uuid,name,power.draw,temperature.gpu,... --format=csv
 * (with or without -l N, ",noheader" is not accepted: the header names the columns). Any subset
 * and order of columns; units as nvidia-smi writes them in the header ("power.draw [W]",
 * "memory.used [MiB]", "utilization.gpu [%]", "clocks.sm [MHz]") and, without nounits, in the
 * cells ("250.31 W"); "[N/A]" and "[Not Supported]" cells are absent values. A timestamp column
 * and an index or uuid column are required. Timestamps ("2024/01/15 10:23:45.123") are local
 * time of the importing process (set TZ=UTC for logs written in UTC); RFC 3339 is accepted too.
 * Malformed lines are reported as FILE:LINE: why, and skipped; a file with no good line is an
 * error. Readings already stored (same series and time) are left as they are. Energy: power.draw
 * is integrated per GPU with the trapezoid rule into wattage_gpu_energy_integrated_joules_total,
 * never across a hole longer than 3 median sampling intervals.
 */
#ifndef WT_STORE_IMPORT_H
#define WT_STORE_IMPORT_H

#include <stddef.h>
#include <stdio.h>

#include "core/err.h"
#include "store/store.h"

struct wt_import_stats {
    size_t rows;     /* data lines stored */
    size_t readings; /* readings written (including integrated energy) */
    size_t gpus;
    size_t skipped; /* malformed lines */
};

/*
 * Reads the CSV from f (name is used in messages) and stores it as node. Each malformed line is
 * reported on report (may be NULL) as "name:LINE: why". Returns 0, -EINVAL with err for a file
 * that cannot be read as nvidia-smi CSV at all (no header, no timestamp or GPU column) or that
 * would store nothing (every data line malformed: err names the first, "name:LINE: why"; no data
 * lines; no line with a value), or -EIO. On -EINVAL nothing has been written to the store.
 */
int wt_import_nvidia_smi(struct wt_store *st, FILE *f, const char *name, const char *node,
                         FILE *report, struct wt_import_stats *stats,
                         struct wt_err *err) WT_MUST_USE;

/* The node name for an import: node when given, else the file's base name without extension. */
void wt_import_node_name(const char *file, const char *node, char *out, size_t n);

#endif
