/* SPDX-License-Identifier: MIT */
/*
 * The `alerts` config section: its defaults, and its parser and check (registered in
 * src/cli/sections.c, so `check-config` and a SIGHUP reload report the same file:line errors).
 * Also the summary templates of rules, which the parser checks and the engine renders.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/alert.h"
#include "alert/engine.h"
#include "alert/notify.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/yget.h"

void wt_alerts_config_defaults(struct wt_alerts_config *c)
{
    memset(c, 0, sizeof *c);
    c->enabled = true;
    c->throttle_forecast.enabled = true;
    c->throttle_forecast.nwindows = 3;
    c->throttle_forecast.windows_ns[0] = 10 * WT_NS_PER_S;
    c->throttle_forecast.windows_ns[1] = 30 * WT_NS_PER_S;
    c->throttle_forecast.windows_ns[2] = 120 * WT_NS_PER_S;
    c->throttle_forecast.window_ns = 120 * WT_NS_PER_S;
    c->throttle_forecast.confidence = 0.95;
    c->throttle_forecast.lead_ns = 60 * WT_NS_PER_S;
    c->throttling.enabled = true;
    c->throttling.for_ns = 5 * WT_NS_PER_S;
    c->idle_burn.enabled = true;
    c->idle_burn.util_below = 0.05;
    c->idle_burn.power_share = 0.40;
    c->idle_burn.for_ns = 300 * WT_NS_PER_S;
    c->impossible.enabled = true;
    c->impossible.power_margin = 0.10;
    c->impossible.temp_min_c = -20;
    c->impossible.temp_max_c = 150;
    c->stuck.enabled = true;
    c->stuck.ticks = 30;
    c->sibling.enabled = true;
    c->sibling.delta_c = 10;
    c->sibling.power_band = 0.15;
    c->sibling.for_ns = 60 * WT_NS_PER_S;
    c->data_gap.enabled = true;
    c->data_gap.intervals = 3;
    c->delivery_failing.enabled = true;
    c->delivery_failing.for_ns = 300 * WT_NS_PER_S;
    c->xid.enabled = true;
    c->xid.hold_ns = 600 * WT_NS_PER_S;
    c->ecc_uncorrectable.enabled = true;
    c->row_remap.enabled = true;
    c->pcie_replays.enabled = true;
    c->pcie_replays.threshold = 10;
    c->pcie_replays.window_ns = 300 * WT_NS_PER_S;
    c->inlet_envelope.enabled = true;
    c->inlet_envelope.for_ns = 300 * WT_NS_PER_S;
    c->rack_delta_t.enabled = true;
    c->rack_delta_t.max_k = 20;
    c->rack_delta_t.for_ns = 300 * WT_NS_PER_S;
    c->aisle_imbalance.enabled = true;
    c->aisle_imbalance.delta_k = 3;
    c->aisle_imbalance.for_ns = 300 * WT_NS_PER_S;
    c->delivery.queue_limit = WT_NOTIFY_QUEUE;
    c->alertmanager.resend_ns = 60 * WT_NS_PER_S;
    c->alertmanager.timeout_ns = 5 * WT_NS_PER_S;
    c->webhook.timeout_ns = 5 * WT_NS_PER_S;
    c->exec.timeout_ns = 10 * WT_NS_PER_S;
    c->power_budget_watts = 0;
    c->budget_clear_share = 0.95;
    c->dry_run = false;
    c->cap_floor_watts = 0;
    c->cap_min_interval_ns = 10 * WT_NS_PER_S;
    c->idle_policy.mode = WT_IDLE_OFF;
    c->idle_policy.idle_for_ns = 600 * WT_NS_PER_S;
    c->idle_policy.limit_watts = 0;
}

/* ---- templates ---- */

/* Parses the placeholder body b[0..len) (spaces and a leading '$' allowed). Returns 0 for value,
 * 1 threshold, 2 alertname, 3 a label (name in *label, *label_len), -1 unknown. */
static int placeholder(const char *b, size_t len, const char **label, size_t *label_len)
{
    while (len && isspace((unsigned char)*b))
        b++, len--;
    while (len && isspace((unsigned char)b[len - 1]))
        len--;
    if (len && *b == '$')
        b++, len--;
    if (len == 5 && memcmp(b, "value", 5) == 0)
        return 0;
    if (len == 9 && memcmp(b, "threshold", 9) == 0)
        return 1;
    if (len == 9 && memcmp(b, "alertname", 9) == 0)
        return 2;
    if (len > 7 && memcmp(b, "labels.", 7) == 0) {
        *label = b + 7;
        *label_len = len - 7;
        for (size_t i = 0; i < *label_len; i++)
            if (!isalnum((unsigned char)(*label)[i]) && (*label)[i] != '_')
                return -1;
        return 3;
    }
    return -1;
}

int wt_alert_template_check(const char *tmpl, char *why, size_t n)
{
    for (const char *p = tmpl; (p = strstr(p, "{{"));) {
        const char *end = strstr(p + 2, "}}");
        const char *label;
        size_t ll;
        if (!end) {
            snprintf(why, n, "unclosed {{");
            return -EINVAL;
        }
        if (placeholder(p + 2, (size_t)(end - p - 2), &label, &ll) < 0) {
            snprintf(why, n,
                     "unknown placeholder {{%.*s}} (known: {{value}}, {{threshold}}, "
                     "{{alertname}}, {{labels.NAME}})",
                     (int)(end - p - 2 > 40 ? 40 : end - p - 2), p + 2);
            return -EINVAL;
        }
        p = end + 2;
    }
    return 0;
}

void wt_alert_render(const char *tmpl, const char *alertname, const char *labels, double value,
                     double threshold, char *out, size_t n)
{
    size_t o = 0;
    char why[8];
    if (!n)
        return;
    out[0] = '\0';
    if (wt_alert_template_check(tmpl, why, sizeof why) != 0) {
        snprintf(out, n, "%s", tmpl);
        return;
    }
    for (const char *p = tmpl; *p && o + 1 < n;) {
        if (p[0] != '{' || p[1] != '{') {
            out[o++] = *p++;
            continue;
        }
        const char *end = strstr(p + 2, "}}");
        const char *label = NULL;
        size_t ll = 0;
        char buf[160] = "";
        switch (placeholder(p + 2, (size_t)(end - p - 2), &label, &ll)) {
        case 0:
            snprintf(buf, sizeof buf, "%.4g", value);
            break;
        case 1:
            snprintf(buf, sizeof buf, "%.4g", threshold);
            break;
        case 2:
            snprintf(buf, sizeof buf, "%s", alertname);
            break;
        default: {
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)(ll < 63 ? ll : 63), label);
            if (wt_labels_get(labels, key, buf, sizeof buf) != 0)
                buf[0] = '\0';
        }
        }
        for (const char *b = buf; *b && o + 1 < n;)
            out[o++] = *b++;
        p = end + 2;
    }
    out[o] = '\0';
}

uint64_t wt_alert_fingerprint(const char *name, const char *labels)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ 0) * 1099511628211ULL;
    for (const char *p = labels; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

/* ---- parsing ---- */

static const char *const top_keys[] = {
    "enabled", "rules",           "detectors",          "alertmanager",       "webhook",
    "exec",    "delivery",        "power_budget_watts", "power_budget_meter", "budget_clear_share",
    "dry_run", "cap_floor_watts", "cap_min_interval",   "cap_record",         "idle_policy",
    NULL};
static const char *const rule_keys[] = {"name",        "metric",      "match",     "op",
                                        "threshold",   "relative_to", "for",       "clear_below",
                                        "clear_above", "severity",    "summary",   "labels",
                                        "action",      "cap_watts",   "cap_share", NULL};
static const char *const ops[] = {">", ">=", "<", "<=", "==", "!=", NULL};
static const char *const severities[] = {"info", "warning", "critical", NULL};
static const char *const actions[] = {"none", "cap", NULL};
static const char *const idle_modes[] = {"off", "dry_run", "limit", NULL};
static const char *const detector_keys[] = {"throttle_forecast",
                                            "throttling",
                                            "idle_burn",
                                            "impossible",
                                            "stuck",
                                            "sibling",
                                            "data_gap",
                                            "delivery_failing",
                                            "xid",
                                            "ecc_uncorrectable",
                                            "row_remap",
                                            "pcie_replays",
                                            "inlet_envelope",
                                            "rack_delta_t",
                                            "aisle_imbalance",
                                            NULL};

static bool label_name_ok(const char *s)
{
    if (!*s || (!isalpha((unsigned char)*s) && *s != '_'))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* A metric name from the table; unknown ones fail naming the nearest. */
static int metric(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                  const char *key, bool required, int *out)
{
    char name[96] = "", p[256];
    int rc = wt_y_string(g, map, path, key, required, name, sizeof name);
    if (rc)
        return rc;
    if (!name[0]) {
        *out = -1;
        return 0;
    }
    int id = wt_metric_find(name);
    if (id >= 0) {
        *out = id;
        return 0;
    }
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (int i = 0; i < WT_M_COUNT; i++) {
        size_t d =
            wt_edit_distance(name, strlen(name), wt_metrics[i].name, strlen(wt_metrics[i].name));
        if (d < best_d) {
            best_d = d;
            best = wt_metrics[i].name;
        }
    }
    wt_y_path(p, sizeof p, path, key);
    if (best && best_d <= 4)
        return wt_y_fail(g, wt_y_get(map, key), p, "unknown metric \"%s\"; did you mean %s?", name,
                         best);
    return wt_y_fail(g, wt_y_get(map, key), p,
                     "unknown metric \"%s\" (expected a wattage_* metric that wattage exports, "
                     "such as wattage_gpu_temperature_celsius)",
                     name);
}

/* A mapping of label names to scalar values, into a canonical label string. */
static int label_map(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                     const char *key, char *out, size_t n)
{
    char p[256], q[256];
    const struct wt_ynode *m = wt_y_get(map, key);
    out[0] = '\0';
    wt_y_path(p, sizeof p, path, key);
    if (!m || wt_ynode_is_null(m))
        return 0;
    if (m->kind != WT_YNODE_MAP)
        return wt_y_fail(g, m, p, "expected a mapping of label names to values, not %s",
                         wt_ynode_kind_name(m->kind));
    for (size_t i = 0; i < m->n; i++) {
        const struct wt_ynode *e = m->child[i];
        wt_y_path(q, sizeof q, p, e->key);
        if (!label_name_ok(e->key))
            return wt_y_fail(g, e, q, "expected a label name of letters, digits and _");
        if (strcmp(e->key, "alertname") == 0 || strcmp(e->key, "severity") == 0)
            return wt_y_fail(g, e, q, "alertname and severity are set by the rule itself");
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->child[j]->key, e->key) == 0)
                return wt_y_fail(g, e, q, "duplicate label (first set on line %d)",
                                 m->child[j]->key_line);
        if (e->kind != WT_YNODE_SCALAR)
            return wt_y_fail(g, e, q, "expected a string, not %s", wt_ynode_kind_name(e->kind));
        if (wt_labels_add(out, n, e->key, e->value) != 0)
            return wt_y_fail(g, e, q, "the labels do not fit in %zu bytes", n - 1);
    }
    return 0;
}

static int parse_rule(const struct wt_yget *g, const struct wt_ynode *n, const char *path,
                      struct wt_alert_rule *r)
{
    int rc, v;
    char p[256], why[160];
    const struct wt_ynode *x;
    memset(r, 0, sizeof *r);
    r->line = n->line;
    r->relative_to = -1;
    r->severity = WT_SEV_WARNING;
    if (n->kind != WT_YNODE_MAP)
        return wt_y_fail(g, n, path,
                         "expected a rule (a mapping with name, metric, op, "
                         "threshold...), not %s",
                         wt_ynode_kind_name(n->kind));
    if ((rc = wt_y_keys(g, n, path, rule_keys)) ||
        (rc = wt_y_string(g, n, path, "name", true, r->name, sizeof r->name)) ||
        (rc = metric(g, n, path, "metric", true, &r->metric)) ||
        (rc = label_map(g, n, path, "match", r->match, sizeof r->match)))
        return rc;
    for (const char *s = r->name; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_-.:", *s))
            return wt_y_fail(g, wt_y_get(n, "name"), wt_y_path(p, sizeof p, path, "name"),
                             "expected letters, digits, _ - . : (got \"%s\")", r->name);
    v = WT_CMP_GT;
    if (!wt_y_get(n, "op"))
        return wt_err_set(g->err, "%s:%d: %s: required (one of > >= < <= == !=)", g->file, n->line,
                          wt_y_path(p, sizeof p, path, "op"));
    if ((rc = wt_y_enum(g, n, path, "op", ops, &v)))
        return rc;
    r->cmp = (enum wt_cmp)v;
    if (!wt_y_get(n, "threshold"))
        return wt_err_set(g->err, "%s:%d: %s: required (a number)", g->file, n->line,
                          wt_y_path(p, sizeof p, path, "threshold"));
    if ((rc = wt_y_double(g, n, path, "threshold", -1e15, 1e15, &r->threshold)) ||
        (rc = metric(g, n, path, "relative_to", false, &r->relative_to)) ||
        (rc = wt_y_duration(g, n, path, "for", true, &r->for_ns)))
        return rc;
    const struct wt_ynode *below = wt_y_get(n, "clear_below"), *above = wt_y_get(n, "clear_above");
    if (below && above)
        return wt_y_fail(g, above, wt_y_path(p, sizeof p, path, "clear_above"),
                         "clear_below and clear_above together: a rule clears one way");
    if (below || above) {
        const char *k = below ? "clear_below" : "clear_above";
        wt_y_path(p, sizeof p, path, k);
        if ((rc = wt_y_double(g, n, path, k, -1e15, 1e15, &r->clear)))
            return rc;
        r->has_clear = true;
        bool up = r->cmp == WT_CMP_GT || r->cmp == WT_CMP_GE;
        bool down = r->cmp == WT_CMP_LT || r->cmp == WT_CMP_LE;
        if (below && !up)
            return wt_y_fail(g, below, p, "clear_below goes with op > or >=");
        if (above && !down)
            return wt_y_fail(g, above, p, "clear_above goes with op < or <=");
        if (below && r->clear > r->threshold)
            return wt_y_fail(g, below, p, "expected a value at most the threshold %g (got %g)",
                             r->threshold, r->clear);
        if (above && r->clear < r->threshold)
            return wt_y_fail(g, above, p, "expected a value at least the threshold %g (got %g)",
                             r->threshold, r->clear);
    }
    v = WT_SEV_WARNING;
    if ((rc = wt_y_enum(g, n, path, "severity", severities, &v)))
        return rc;
    r->severity = (enum wt_severity)v;
    if ((rc = wt_y_string(g, n, path, "summary", false, r->summary, sizeof r->summary)))
        return rc;
    if ((x = wt_y_get(n, "summary")) && wt_alert_template_check(r->summary, why, sizeof why))
        return wt_y_fail(g, x, wt_y_path(p, sizeof p, path, "summary"), "%s", why);
    if (!r->summary[0])
        snprintf(r->summary, sizeof r->summary, "%s is {{value}} (%s {{threshold}})",
                 wt_metrics[r->metric].name, ops[r->cmp]);
    if ((rc = label_map(g, n, path, "labels", r->labels, sizeof r->labels)))
        return rc;
    v = WT_ACTION_NONE;
    if ((rc = wt_y_enum(g, n, path, "action", actions, &v)))
        return rc;
    r->action = (enum wt_action)v;
    if ((rc = wt_y_double(g, n, path, "cap_watts", 1, 100000, &r->cap_watts)) ||
        (rc = wt_y_double(g, n, path, "cap_share", 0.01, 1, &r->cap_share)))
        return rc;
    if (r->action == WT_ACTION_CAP) {
        x = wt_y_get(n, "action");
        wt_y_path(p, sizeof p, path, "action");
        if (strncmp(wt_metrics[r->metric].name, "wattage_gpu_", 12) != 0)
            return wt_y_fail(g, x, p, "action cap needs a per-GPU metric (wattage_gpu_*), not %s",
                             wt_metrics[r->metric].name);
        if ((r->cap_watts > 0) == (r->cap_share > 0))
            return wt_y_fail(g, x, p, "action cap needs one of cap_watts or cap_share");
    } else if (r->cap_watts > 0 || r->cap_share > 0) {
        const char *k = r->cap_watts > 0 ? "cap_watts" : "cap_share";
        return wt_y_fail(g, wt_y_get(n, k), wt_y_path(p, sizeof p, path, k), "%s needs action: cap",
                         k);
    }
    return 0;
}

/* detectors.NAME: a mapping of its knobs, or just true/false. */
static int detector(const struct wt_yget *g, const struct wt_ynode *dets, const char *name,
                    const char *const *keys, bool *enabled, const struct wt_ynode **out, char *path,
                    size_t pn)
{
    const struct wt_ynode *d = wt_y_get(dets, name);
    int rc;
    *out = NULL;
    wt_y_path(path, pn, "alerts.detectors", name);
    if (!d || wt_ynode_is_null(d))
        return 0;
    if (d->kind == WT_YNODE_SCALAR) {
        if (wt_config_parse_bool(d->value, enabled) != 0)
            return wt_y_fail(g, d, path, "expected true, false or a mapping of %s's settings",
                             name);
        return 0;
    }
    if ((rc = wt_y_keys(g, d, path, keys)) || (rc = wt_y_bool(g, d, path, "enabled", enabled)))
        return rc;
    *out = d;
    return 0;
}

/*
 * throttle_forecast.windows: a list of 1..WT_FORECAST_MAX_WINDOWS durations, strictly increasing,
 * each 1 s..1 h; or the older throttle_forecast.window: one window (not both).
 */
static int forecast_windows(const struct wt_yget *g, const struct wt_ynode *d, const char *path,
                            struct wt_alerts_config *c)
{
    const struct wt_ynode *list = wt_y_get(d, "windows"), *one = wt_y_get(d, "window");
    char p[160], q[176];
    int64_t ns;
    int rc;
    wt_y_path(p, sizeof p, path, "windows");
    if (list && one)
        return wt_y_fail(g, one, p, "windows and window together: window is one of the windows");
    if (one) {
        if ((rc = wt_y_duration(g, d, path, "window", false, &ns)))
            return rc;
        c->throttle_forecast.nwindows = 1;
        c->throttle_forecast.windows_ns[0] = c->throttle_forecast.window_ns = ns;
        return 0;
    }
    if (!list)
        return 0;
    if ((rc = wt_y_seq(g, list, p)))
        return rc;
    if (list->kind != WT_YNODE_SEQ || list->n == 0 || list->n > WT_FORECAST_MAX_WINDOWS)
        return wt_y_fail(g, list, p, "expected a list of 1 to %d durations such as [10s, 30s, 2m]",
                         WT_FORECAST_MAX_WINDOWS);
    for (size_t i = 0; i < list->n; i++) {
        const struct wt_ynode *e = list->child[i];
        wt_y_index(q, sizeof q, p, i);
        if (e->kind != WT_YNODE_SCALAR || wt_duration_parse(e->value, &ns) != 0 ||
            ns < WT_NS_PER_S || ns > 3600 * WT_NS_PER_S)
            return wt_y_fail(g, e, q, "expected a duration from 1s to 1h such as 30s");
        if (i && ns <= c->throttle_forecast.windows_ns[i - 1])
            return wt_y_fail(g, e, q, "expected windows from the shortest to the longest");
        c->throttle_forecast.windows_ns[i] = ns;
    }
    c->throttle_forecast.nwindows = (int)list->n;
    c->throttle_forecast.window_ns = c->throttle_forecast.windows_ns[list->n - 1];
    return 0;
}

static int parse_detectors(const struct wt_yget *g, const struct wt_ynode *dets,
                           struct wt_alerts_config *c)
{
    static const char *const k_tf[] = {"enabled", "window", "windows", "confidence", "lead", NULL};
    static const char *const k_th[] = {"enabled", "for", NULL};
    static const char *const k_ib[] = {"enabled", "util_below", "power_share", "for", NULL};
    static const char *const k_im[] = {"enabled", "power_margin", "temp_min", "temp_max", NULL};
    static const char *const k_st[] = {"enabled", "ticks", NULL};
    static const char *const k_sb[] = {"enabled", "delta", "power_band", "for", NULL};
    static const char *const k_dg[] = {"enabled", "intervals", NULL};
    static const char *const k_df[] = {"enabled", "for", NULL};
    const struct wt_ynode *d;
    char p[128];
    int rc;
    int64_t i64;
    if ((rc = wt_y_keys(g, dets, "alerts.detectors", detector_keys)))
        return rc;
    if ((rc = detector(g, dets, "throttle_forecast", k_tf, &c->throttle_forecast.enabled, &d, p,
                       sizeof p)) ||
        (rc = forecast_windows(g, d, p, c)) ||
        (rc = wt_y_double(g, d, p, "confidence", 0.5, 0.9999, &c->throttle_forecast.confidence)) ||
        (rc = wt_y_duration(g, d, p, "lead", false, &c->throttle_forecast.lead_ns)))
        return rc;
    if ((rc = detector(g, dets, "throttling", k_th, &c->throttling.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_duration(g, d, p, "for", true, &c->throttling.for_ns)))
        return rc;
    if ((rc = detector(g, dets, "idle_burn", k_ib, &c->idle_burn.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_double(g, d, p, "util_below", 0.001, 1, &c->idle_burn.util_below)) ||
        (rc = wt_y_double(g, d, p, "power_share", 0.01, 1, &c->idle_burn.power_share)) ||
        (rc = wt_y_duration(g, d, p, "for", true, &c->idle_burn.for_ns)))
        return rc;
    if ((rc = detector(g, dets, "impossible", k_im, &c->impossible.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_double(g, d, p, "power_margin", 0, 10, &c->impossible.power_margin)) ||
        (rc = wt_y_double(g, d, p, "temp_min", -273, 1000, &c->impossible.temp_min_c)) ||
        (rc = wt_y_double(g, d, p, "temp_max", -273, 1000, &c->impossible.temp_max_c)))
        return rc;
    if (c->impossible.temp_min_c >= c->impossible.temp_max_c)
        return wt_y_fail(g, wt_y_get(d, "temp_max"), "alerts.detectors.impossible.temp_max",
                         "expected more than temp_min (%g)", c->impossible.temp_min_c);
    i64 = c->stuck.ticks;
    if ((rc = detector(g, dets, "stuck", k_st, &c->stuck.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_int(g, d, p, "ticks", 3, 100000, &i64)))
        return rc;
    c->stuck.ticks = (int)i64;
    if ((rc = detector(g, dets, "sibling", k_sb, &c->sibling.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_double(g, d, p, "delta", 0.5, 200, &c->sibling.delta_c)) ||
        (rc = wt_y_double(g, d, p, "power_band", 0.001, 10, &c->sibling.power_band)) ||
        (rc = wt_y_duration(g, d, p, "for", true, &c->sibling.for_ns)))
        return rc;
    i64 = c->data_gap.intervals;
    if ((rc = detector(g, dets, "data_gap", k_dg, &c->data_gap.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_int(g, d, p, "intervals", 1, 100000, &i64)))
        return rc;
    c->data_gap.intervals = (int)i64;
    if ((rc = detector(g, dets, "delivery_failing", k_df, &c->delivery_failing.enabled, &d, p,
                       sizeof p)) ||
        (rc = wt_y_duration(g, d, p, "for", true, &c->delivery_failing.for_ns)))
        return rc;
    static const char *const k_xid[] = {"enabled", "hold", NULL};
    static const char *const k_on[] = {"enabled", NULL};
    static const char *const k_pr[] = {"enabled", "threshold", "window", NULL};
    if ((rc = detector(g, dets, "xid", k_xid, &c->xid.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_duration(g, d, p, "hold", true, &c->xid.hold_ns)) ||
        (rc = detector(g, dets, "ecc_uncorrectable", k_on, &c->ecc_uncorrectable.enabled, &d, p,
                       sizeof p)) ||
        (rc = detector(g, dets, "row_remap", k_on, &c->row_remap.enabled, &d, p, sizeof p)) ||
        (rc = detector(g, dets, "pcie_replays", k_pr, &c->pcie_replays.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_double(g, d, p, "threshold", 1, 1e12, &c->pcie_replays.threshold)) ||
        (rc = wt_y_duration_in(g, d, p, "window", false, WT_Y_S, 86400 * WT_Y_S,
                               "the span over which replays are counted",
                               &c->pcie_replays.window_ns)))
        return rc;
    static const char *const k_ie[] = {"enabled", "for", NULL};
    static const char *const k_dt[] = {"enabled", "max_k", "for", NULL};
    static const char *const k_ai[] = {"enabled", "delta_k", "for", NULL};
    if ((rc = detector(g, dets, "inlet_envelope", k_ie, &c->inlet_envelope.enabled, &d, p,
                       sizeof p)) ||
        (rc = wt_y_duration(g, d, p, "for", true, &c->inlet_envelope.for_ns)) ||
        (rc = detector(g, dets, "rack_delta_t", k_dt, &c->rack_delta_t.enabled, &d, p, sizeof p)) ||
        (rc = wt_y_double(g, d, p, "max_k", 2.5, 100, &c->rack_delta_t.max_k)) ||
        (rc = wt_y_duration(g, d, p, "for", true, &c->rack_delta_t.for_ns)) ||
        (rc = detector(g, dets, "aisle_imbalance", k_ai, &c->aisle_imbalance.enabled, &d, p,
                       sizeof p)) ||
        (rc = wt_y_double(g, d, p, "delta_k", 0.5, 50, &c->aisle_imbalance.delta_k)) ||
        (rc = wt_y_duration(g, d, p, "for", true, &c->aisle_imbalance.for_ns)))
        return rc;
    return 0;
}

static int url(const struct wt_yget *g, const struct wt_ynode *map, const char *path, char *out,
               size_t n)
{
    char p[128];
    int rc = wt_y_string(g, map, path, "url", false, out, n);
    if (rc || !out[0])
        return rc;
    if (strncmp(out, "http://", 7) != 0 && strncmp(out, "https://", 8) != 0)
        return wt_y_fail(g, wt_y_get(map, "url"), wt_y_path(p, sizeof p, path, "url"),
                         "expected an http:// or https:// URL (got \"%s\")", out);
    return 0;
}

int wt_alerts_config_parse(const char *file, const struct wt_ynode *node,
                           struct wt_alerts_config *out, struct wt_err *err)
{
    static const char *const k_am[] = {"url", "resend_interval", "timeout", "generator_url", NULL};
    static const char *const k_wh[] = {"url", "timeout", NULL};
    static const char *const k_ex[] = {"command", "timeout", NULL};
    static const char *const k_dl[] = {"queue_limit", NULL};
    static const char *const k_idle[] = {"mode", "idle_for", "limit_watts", NULL};
    struct wt_yget g = {.file = file ? file : "(config)", .err = err};
    const struct wt_ynode *x;
    char p[64];
    int rc;
    wt_alerts_config_defaults(out);
    if (!node || wt_ynode_is_null(node))
        return 0;
    if ((rc = wt_y_keys(&g, node, "alerts", top_keys)) ||
        (rc = wt_y_bool(&g, node, "alerts", "enabled", &out->enabled)))
        goto fail;
    x = wt_y_get(node, "rules");
    if ((rc = wt_y_seq(&g, x, "alerts.rules")))
        goto fail;
    if (x && x->kind == WT_YNODE_SEQ) {
        if (x->n > WT_ALERT_MAX_RULES) {
            rc = wt_y_fail(&g, x->child[WT_ALERT_MAX_RULES], "alerts.rules", "at most %d rules",
                           WT_ALERT_MAX_RULES);
            goto fail;
        }
        for (size_t i = 0; i < x->n; i++) {
            wt_y_index(p, sizeof p, "alerts.rules", i);
            if ((rc = parse_rule(&g, x->child[i], p, &out->rules[i])))
                goto fail;
            out->nrules = i + 1;
        }
    }
    x = wt_y_get(node, "detectors");
    if ((rc = wt_y_map(&g, x, "alerts.detectors", detector_keys)) ||
        (x && x->kind == WT_YNODE_MAP && (rc = parse_detectors(&g, x, out))))
        goto fail;
    x = wt_y_get(node, "alertmanager");
    if ((rc = wt_y_keys(&g, x, "alerts.alertmanager", k_am)) ||
        (rc = url(&g, x, "alerts.alertmanager", out->alertmanager.url,
                  sizeof out->alertmanager.url)) ||
        (rc = wt_y_duration_in(&g, x, "alerts.alertmanager", "resend_interval", false, WT_Y_S,
                               86400 * WT_Y_S,
                               "resending more often than every second floods Alertmanager; "
                               "it resolves an alert not resent within its resolve_timeout",
                               &out->alertmanager.resend_ns)) ||
        (rc = wt_y_duration_in(&g, x, "alerts.alertmanager", "timeout", false, WT_Y_NET_TIMEOUT_MIN,
                               WT_Y_NET_TIMEOUT_MAX, WT_Y_WHY_NET_TIMEOUT,
                               &out->alertmanager.timeout_ns)) ||
        (rc = wt_y_string(&g, x, "alerts.alertmanager", "generator_url", false,
                          out->alertmanager.generator_url, sizeof out->alertmanager.generator_url)))
        goto fail;
    x = wt_y_get(node, "webhook");
    if ((rc = wt_y_keys(&g, x, "alerts.webhook", k_wh)) ||
        (rc = url(&g, x, "alerts.webhook", out->webhook.url, sizeof out->webhook.url)) ||
        (rc = wt_y_duration_in(&g, x, "alerts.webhook", "timeout", false, WT_Y_NET_TIMEOUT_MIN,
                               WT_Y_NET_TIMEOUT_MAX, WT_Y_WHY_NET_TIMEOUT,
                               &out->webhook.timeout_ns)))
        goto fail;
    x = wt_y_get(node, "exec");
    if ((rc = wt_y_keys(&g, x, "alerts.exec", k_ex)) ||
        (rc = wt_y_string(&g, x, "alerts.exec", "command", false, out->exec.command,
                          sizeof out->exec.command)) ||
        (rc = wt_y_duration_in(&g, x, "alerts.exec", "timeout", false, 100 * WT_Y_MS, 3600 * WT_Y_S,
                               "a command needs more than 100ms to start; one that runs an "
                               "hour holds every delivery after it",
                               &out->exec.timeout_ns)))
        goto fail;
    if (out->exec.command[0]) {
        /* Split now as delivery will, so an unterminated quote is a file:line error at load. */
        char words[sizeof out->exec.command + 1], *argv[33];
        int argc = 0;
        rc = wt_notify_split(out->exec.command, words, sizeof words, argv, 32, &argc);
        if (rc != 0) {
            rc = wt_y_fail(&g, wt_y_get(x, "command"), "alerts.exec.command", "%s",
                           rc == -E2BIG ? "expected at most 32 words"
                                        : "expected a command (quotes closed, not empty)");
            goto fail;
        }
    }
    /* A queue holds every transition an outage piles up; each waiting one is ~600 bytes. */
    x = wt_y_get(node, "delivery");
    int64_t ql = out->delivery.queue_limit;
    if ((rc = wt_y_keys(&g, x, "alerts.delivery", k_dl)) ||
        (rc = wt_y_int(&g, x, "alerts.delivery", "queue_limit", WT_NOTIFY_QUEUE_MIN,
                       WT_NOTIFY_QUEUE_MAX, &ql)))
        goto fail;
    out->delivery.queue_limit = (int)ql;
    if ((rc = wt_y_double(&g, node, "alerts", "power_budget_watts", 0, 1e9,
                          &out->power_budget_watts)) ||
        (rc = wt_y_string(&g, node, "alerts", "power_budget_meter", false, out->power_budget_meter,
                          sizeof out->power_budget_meter)) ||
        (rc = wt_y_double(&g, node, "alerts", "budget_clear_share", 0.5, 1,
                          &out->budget_clear_share)) ||
        (rc = wt_y_bool(&g, node, "alerts", "dry_run", &out->dry_run)) ||
        (rc = wt_y_double(&g, node, "alerts", "cap_floor_watts", 0, 1e6, &out->cap_floor_watts)) ||
        (rc = wt_y_duration_in(&g, node, "alerts", "cap_min_interval", true, WT_Y_S, 3600 * WT_Y_S,
                               "a power limit held for less than a second is noise",
                               &out->cap_min_interval_ns)) ||
        (rc = wt_y_string(&g, node, "alerts", "cap_record", false, out->cap_record,
                          sizeof out->cap_record)))
        goto fail;
    x = wt_y_get(node, "idle_policy");
    int mode = (int)out->idle_policy.mode;
    if ((rc = wt_y_map(&g, x, "alerts.idle_policy", k_idle)) ||
        (rc = wt_y_keys(&g, x, "alerts.idle_policy", k_idle)) ||
        (rc = wt_y_enum(&g, x, "alerts.idle_policy", "mode", idle_modes, &mode)) ||
        (rc = wt_y_duration_in(&g, x, "alerts.idle_policy", "idle_for", false, WT_Y_S,
                               7 * 86400 * WT_Y_S,
                               "a GPU idle for less than a second is between two kernels",
                               &out->idle_policy.idle_for_ns)) ||
        (rc = wt_y_double(&g, x, "alerts.idle_policy", "limit_watts", 0, 1e6,
                          &out->idle_policy.limit_watts)))
        goto fail;
    out->idle_policy.mode = (enum wt_idle_mode)mode;
    if (out->power_budget_meter[0]) {
        int m;
        char match[WT_LABELS_LEN], why[160];
        if (wt_cap_meter_parse(out->power_budget_meter, &m, match, sizeof match, why, sizeof why) !=
            0) {
            rc = wt_y_fail(&g, wt_y_get(node, "power_budget_meter"), "alerts.power_budget_meter",
                           "%s", why);
            goto fail;
        }
    }
    return 0;
fail:
    wt_alerts_config_defaults(out);
    return rc ? rc : -EINVAL;
}

int wt_alerts_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_alerts_config *c = malloc(sizeof *c);
    if (!c)
        return wt_err_set(err, "%s: alerts: out of memory", file);
    int rc = wt_alerts_config_parse(file, node, c, err);
    free(c);
    return rc;
}
