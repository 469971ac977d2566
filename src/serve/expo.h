/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus exposition of a snapshot: text format 0.0.4 and OpenMetrics 1.0.0, chosen from
 * the scraper's Accept header, gzip-compressed when Accept-Encoding allows. Pure functions over a
 * struct wt_batch, so the HTTP server and the tests render exactly the same bytes.
 */
#ifndef WT_EXPO_H
#define WT_EXPO_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "core/family.h"
#include "core/reading.h"

enum wt_expo_format { WT_EXPO_TEXT, WT_EXPO_OPENMETRICS };

#define WT_EXPO_TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define WT_EXPO_OPENMETRICS_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

/*
 * Picks the format from an Accept header (NULL or "" means text): OpenMetrics when the client
 * lists application/openmetrics-text (version 1.0.0 or none) with a q at least that of text/plain
 * (or of a wildcard matching it), text otherwise.
 */
enum wt_expo_format wt_expo_negotiate(const char *accept);

/* True when an Accept-Encoding header admits gzip (a "gzip" or "*" coding with q > 0). */
bool wt_expo_accepts_gzip(const char *accept_encoding);

/* The Content-Type of a format. */
const char *wt_expo_content_type(enum wt_expo_format f);

/*
 * Renders b in format f. Families come in the order of wt_metrics[], each with one HELP and one
 * TYPE line and all its series together (a series repeated in b is written once, the first
 * time); metrics without readings are absent. wattage_build_info{version="<version>"} 1 comes
 * first; OpenMetrics ends with "# EOF". Label strings are written as they are (already escaped,
 * canonical). Returns a malloc'd string the caller frees and its length in *len, or NULL when
 * out of memory.
 */
char *wt_expo_render(const struct wt_batch *b, enum wt_expo_format f, const char *version,
                     size_t *len);

/* struct wt_expo_family and wt_expo_sample: core/family.h. */

/*
 * wt_expo_render plus the families extra[0..nextra) after the hub's (before "# EOF"); a family
 * without samples is left out.
 */
char *wt_expo_render_with(const struct wt_batch *b, const struct wt_expo_family *extra,
                          size_t nextra, enum wt_expo_format f, const char *version, size_t *len);

/* Formats a sample value the way Prometheus parses it back exactly: "NaN", "+Inf", "-Inf", or
 * the shortest decimal that round-trips. */
void wt_expo_value(double v, char *buf, size_t n);

/* Escapes HELP text: backslash and newline always, the double quote in OpenMetrics too. */
void wt_expo_escape_help(const char *in, enum wt_expo_format f, char *out, size_t n);

/*
 * gzip (RFC 1952) of in[0..len). Returns 0 with *out malloc'd (caller frees) and *outlen set,
 * -ENOMEM, or -EIO when zlib fails.
 */
int wt_expo_gzip(const char *in, size_t len, char **out, size_t *outlen) WT_MUST_USE;

#endif
