/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's XID events (a part of collect/nvml.c): one event set for every GPU,
 * waited on by its own thread, which counts each GPU's XIDs under xid_ctx.mu.
 */
#ifndef WT_NVML_XID_H
#define WT_NVML_XID_H

#include "collect/nvml_base.h"

/* Registers every GPU's XID events and starts the event thread; without them, says why. */
void wt_nvml_xid_start(struct nvml_state *s);
/* Stops the event thread (waits XID_JOIN_NS at most) and lets go of s->xid. */
void wt_nvml_xid_stop(struct nvml_state *s);
/* Drops one reference to x; the last one frees the set and ends the session. */
void wt_nvml_xid_ctx_unref(struct xid_ctx *x);

#endif
