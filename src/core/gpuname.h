/* SPDX-License-Identifier: MIT */
/*
 * How a GPU is named across vendors, in jobs, inference targets and caps: an index ("0": of
 * whichever vendor has it), a vendor's index ("nvidia:0", "amd:0": a node with both vendors
 * numbers each from 0), or a UUID (NVML's "GPU-…", the AMD collector's "AMD-…"); lists of them
 * comma-separated ("0,amd:1").
 */
#ifndef WT_GPUNAME_H
#define WT_GPUNAME_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether s is an index or a vendor's index; *vendor "nvidia", "amd", or "" when the index names
 * none, *idx the index's digits (within s). False for anything else (a UUID), with *vendor "" and
 * *idx s.
 */
bool wt_gpu_vendor_index(const char *s, const char **vendor, const char **idx);
/* The vendor of a GPU from its uuid: "amd" for "AMD-…", else "nvidia". */
const char *wt_gpu_uuid_vendor(const char *uuid);
/*
 * The next item of a comma-separated list at *p into item (cut to n - 1 bytes), *p moved past it
 * and its comma. False at the list's end.
 */
bool wt_list_next(const char **p, char *item, size_t n);
/* Whether the comma-separated list holds item, whole. */
bool wt_list_has(const char *list, const char *item);

#endif
