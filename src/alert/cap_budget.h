/* SPDX-License-Identifier: MIT */
/*
 * The power capper's site budget and idle policy (alert/cap_budget.c), a part of alert/cap.c.
 * Its entry points are public (wt_cap_budget, wt_cap_jobs_started, wt_cap_meter_parse in
 * alert/alert.h); this header adds what the rest of the capper asks of it.
 */
#ifndef WT_CAP_BUDGET_H
#define WT_CAP_BUDGET_H

#include "alert/cap_act.h"

/* Whether the policy only says what it would do: mode dry_run, or the capper's dry run. */
bool wt_cap_idle_dry(const struct wt_cap *c);

#endif
