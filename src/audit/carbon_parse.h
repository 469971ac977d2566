/* SPDX-License-Identifier: MIT */
/*
 * Parsing of carbon series (the formats are listed in carbon.h): a file's or a reply's bytes into
 * a batch of points, with every malformed line reported by number.
 */
#ifndef WT_CARBON_PARSE_H
#define WT_CARBON_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "audit/carbon.h"
#include "core/err.h"

/*
 * Parses buf (a file's or a reply's bytes; name for messages) in format fmt (auto: JSON when
 * it starts with '{', else CSV). zone is the zone of points that do not name one (may be NULL
 * when the data names it). Every malformed line is written to report (may be NULL) as
 * "name:LINE: what"; with any, returns -EINVAL, err saying how many, and out empty. Returns 0
 * with out filled (points sorted by zone, kind, from), -ENOMEM.
 */
int wt_carbon_parse(const char *name, const char *buf, size_t len, enum wt_carbon_format fmt,
                    enum wt_carbon_series series, const char *zone, FILE *report,
                    struct wt_carbon_batch *out, struct wt_err *err) WT_MUST_USE;

/*
 * Appends one point to b (grown as needed). 0, -E2BIG past WT_CARBON_MAX_POINTS, -ENOMEM.
 */
int wt_carbon_batch_add(struct wt_carbon_batch *b, int64_t from, int64_t to, double v,
                        enum wt_carbon_kind kind, const char *zone) WT_MUST_USE;

/*
 * Reads a whole file (at most 64 MiB) into *buf (malloc'd, NUL-terminated; *len bytes).
 * Returns 0, or a negative errno with err "path: why".
 */
int wt_carbon_read_file(const char *path, char **buf, size_t *len, struct wt_err *err) WT_MUST_USE;

#endif
