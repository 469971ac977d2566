/* SPDX-License-Identifier: MIT */
/*
 * Small state files replaced whole so that a crash or a power loss leaves the old one or the new
 * one, never a torn one: written to PATH.tmp, fsync'd, renamed over PATH, and the directory that
 * holds it fsync'd so the rename itself is durable. Used by the calibration models, the
 * assessment record and the cap record.
 */
#ifndef WT_DURABLE_H
#define WT_DURABLE_H

#include <stddef.h>

#include "core/err.h"

/*
 * Replaces path with data[0..len) followed by a newline. Returns 0, or -errno with err
 * "<path>: cannot write <what>: <strerror>" (the temporary file is removed).
 */
int wt_durable_replace(const char *path, const char *data, size_t len, const char *what,
                       struct wt_err *err) WT_MUST_USE;

/* Syncs the directory that holds path, so that a rename or unlink in it survives a power loss. */
void wt_durable_sync_dir(const char *path);

#endif
