/* SPDX-License-Identifier: MIT */
/*
 * The names of alert.h's value types (states, severities), shared by the engine, the rules'
 * parser and delivery: kept apart from rules.c so delivery (notify.c) does not depend on the
 * parser, which itself uses delivery's command splitter.
 */
#include "alert/alert.h"

const char *wt_alert_state_name(enum wt_alert_state s)
{
    switch (s) {
    case WT_ALERT_PENDING:
        return "pending";
    case WT_ALERT_FIRING:
        return "firing";
    case WT_ALERT_RESOLVED:
        return "resolved";
    default:
        return "inactive";
    }
}

const char *wt_severity_name(enum wt_severity s)
{
    switch (s) {
    case WT_SEV_INFO:
        return "info";
    case WT_SEV_CRITICAL:
        return "critical";
    default:
        return "warning";
    }
}
