/* SPDX-License-Identifier: MIT */
/*
 * The EU EED / Delegated Regulation (EU) 2024/1364 file of one data centre's year, keyed by the
 * Annex symbols that a dated, versioned schema file lists (deploy/standards/, installed in
 * /usr/share/wattage/standards/): per symbol its x-wattage source (a statement figure, a hand
 * input `hand:KEY`, or `none`), unit and tag (Q: read in a source quoting the Annex; M: from
 * memory, not verified). Every symbol is {"value", "unit", "tag"} or {"not_available": reason,
 * "unit", "tag"}; a KPI refused by a check or below statement.min_coverage is not available,
 * with its reason.
 */
#ifndef WT_STATEMENT_EU_H
#define WT_STATEMENT_EU_H

#include <stddef.h>

#include "audit/statement.h"
#include "core/err.h"

/*
 * Renders s (built over the calendar year `year`) through the schema text schema[0..len)
 * (schema_name in messages): *json malloc'd; with csv non-NULL also *csv (symbol, value, unit,
 * status, reason, tag). Returns 0, -EINVAL with err (not a wattage schema, a symbol without
 * source/unit/tag, an unknown source) or -ENOMEM.
 */
int wt_stmt_eu(const struct wt_statement *s, const struct wt_stmt_conf *c, const char *schema,
               size_t len, const char *schema_name, int year, char **json, char **csv,
               struct wt_err *err) WT_MUST_USE;

#endif
