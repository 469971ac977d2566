/* SPDX-License-Identifier: MIT */
/*
 * The German EnEfG checks of a statement: the annual PUE against the limit for the site's
 * commissioning date, and the ERF and renewable (REF) floors, from a dated table file
 * (deploy/standards/enefg.v1.json, installed in /usr/share/wattage/standards/) so that an
 * amendment is a new table, not new code. A rule applies when the site's commissioning
 * (statement.commissioned) matches it and it is in force from the period's start; for each KPI
 * the strictest rule that applies is checked; rules not yet in force are listed as upcoming.
 */
#ifndef WT_STATEMENT_ENEFG_H
#define WT_STATEMENT_ENEFG_H

#include <stddef.h>

#include "audit/statement.h"
#include "core/err.h"

/*
 * The checks of s under the table text tab[0..len) (name in messages), as JSON (*json
 * malloc'd): {"table", "table_date", "commissioned", "checks": [{"kpi", "value"|null, "limit",
 * "kind": "max"|"min", "source", "tag", "result": "pass"|"fail"|"not available", "why"}],
 * "upcoming": [...], "tenants": {...} (with statement.tenants: wt_stmt_tenants_json, the
 * customer information of § 15), "inputs_sha256"}. *failed counts failed checks. Returns 0, -EINVAL
 * with err (statement.commissioned not given; a table that is not one), or -ENOMEM.
 */
int wt_stmt_enefg(const struct wt_statement *s, const struct wt_stmt_conf *c, const char *tab,
                  size_t len, const char *name, char **json, int *failed,
                  struct wt_err *err) WT_MUST_USE;

#endif
