/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's running processes (a part of collect/nvml.c): each GPU's process list,
 * the split of its energy over them (collect/attrib.h), and the latest list for
 * wt_nvml_processes.
 */
#ifndef WT_NVML_PROCS_H
#define WT_NVML_PROCS_H

#include "collect/nvml_base.h"
#include "core/reading.h"

/* Reads the process lists (at most every PROCS_EVERY_NS) and splits each GPU's energy since
 * the last split over them; *rc_out gets -ENOMEM when a reading could not be added. */
void wt_nvml_poll_procs(struct nvml_state *s, int64_t t_ns, struct wt_batch *out, int *rc_out);
/* Drops the latest process list when s read it (at close). */
void wt_nvml_procs_forget(const struct nvml_state *s);

#endif
