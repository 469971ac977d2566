/* SPDX-License-Identifier: MIT */
/*
 * The `alerts` section: defaults, every key read, and the file:line message for each kind of
 * mistake (unknown metric, bad duration, unknown key, hysteresis the wrong way, cap without a
 * target, bad template), also through the config loader as `check-config` and SIGHUP see it.
 */
#include <errno.h>

#include "alert/alert.h"
#include "alert/engine.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "runner.h"

static struct wt_alerts_config cfg;

/* Parses the `alerts` section of yaml (named "a.yaml"); message in err. */
static int parse(const char *yaml, struct wt_err *err)
{
    struct wt_ynode *root = NULL;
    err->msg[0] = '\0';
    int rc = wt_yaml_parse("a.yaml", yaml, strlen(yaml), &root, err);
    if (rc == 0)
        rc = wt_alerts_config_parse("a.yaml", wt_y_get(root, "alerts"), &cfg, err);
    wt_ynode_free(root);
    return rc;
}

#define EXPECT_ERR(yaml, part)                                                                     \
    do {                                                                                           \
        struct wt_err e_;                                                                          \
        WT_EQ_INT(parse(yaml, &e_), -EINVAL);                                                      \
        WT_CONTAINS(e_.msg, part);                                                                 \
    } while (0)

WT_TEST(defaults_without_a_section)
{
    struct wt_err err;
    WT_EQ_INT(parse("daemon: {}\n", &err), 0);
    WT_ASSERT(cfg.enabled);
    WT_EQ_INT(cfg.nrules, 0);
    WT_ASSERT(cfg.throttle_forecast.enabled && cfg.throttling.enabled && cfg.idle_burn.enabled &&
              cfg.impossible.enabled && cfg.stuck.enabled && cfg.sibling.enabled &&
              cfg.data_gap.enabled);
    WT_EQ_INT(cfg.throttle_forecast.window_ns, 120 * WT_NS_PER_S);
    WT_EQ_INT(cfg.throttle_forecast.lead_ns, 60 * WT_NS_PER_S);
    WT_EQ_INT(cfg.throttling.for_ns, 5 * WT_NS_PER_S);
    WT_NEAR(cfg.idle_burn.util_below, 0.05, 1e-12);
    WT_NEAR(cfg.idle_burn.power_share, 0.40, 1e-12);
    WT_EQ_INT(cfg.idle_burn.for_ns, 300 * WT_NS_PER_S);
    WT_NEAR(cfg.impossible.power_margin, 0.10, 1e-12);
    WT_EQ_INT(cfg.stuck.ticks, 30);
    WT_NEAR(cfg.sibling.delta_c, 10, 1e-12);
    WT_EQ_INT(cfg.data_gap.intervals, 3);
    WT_ASSERT(cfg.delivery_failing.enabled);
    WT_EQ_INT(cfg.delivery_failing.for_ns, 300 * WT_NS_PER_S);
    WT_EQ_INT(cfg.delivery.queue_limit, 1024);
    WT_EQ_INT(cfg.alertmanager.resend_ns, 60 * WT_NS_PER_S);
    WT_NEAR(cfg.budget_clear_share, 0.95, 1e-12);
    WT_ASSERT(!cfg.dry_run);
    WT_EQ_STR(cfg.alertmanager.url, "");
}

WT_TEST(every_key_is_read)
{
    struct wt_err err;
    const char *y = "alerts:\n"
                    "  enabled: true\n"
                    "  rules:\n"
                    "    - name: GPUNearSlowdown\n"
                    "      metric: wattage_gpu_temperature_celsius\n"
                    "      match: {model: NVIDIA H200}\n"
                    "      op: '>='\n"
                    "      threshold: 0.95\n"
                    "      relative_to: wattage_gpu_slowdown_temperature_celsius\n"
                    "      for: 30s\n"
                    "      clear_below: 0.9\n"
                    "      severity: critical\n"
                    "      summary: 'GPU {{labels.gpu}} at {{value}} C'\n"
                    "      labels: {team: ml, page: 'yes'}\n"
                    "      action: cap\n"
                    "      cap_share: 0.6\n"
                    "    - name: LowPower\n"
                    "      metric: wattage_gpu_power_watts\n"
                    "      op: <\n"
                    "      threshold: 50\n"
                    "      clear_above: 60\n"
                    "  detectors:\n"
                    "    throttle_forecast: {window: 2m30s, lead: 90s}\n"
                    "    throttling: {for: 10s}\n"
                    "    idle_burn: {util_below: 0.1, power_share: 0.5, for: 10m}\n"
                    "    impossible: {power_margin: 0.2, temp_min: -10, temp_max: 120}\n"
                    "    stuck: false\n"
                    "    sibling: {enabled: false, delta: 12, power_band: 0.2, for: 2m}\n"
                    "    data_gap: {intervals: 5}\n"
                    "    delivery_failing: {for: 2m}\n"
                    "  alertmanager: {url: 'http://127.0.0.1:9093', resend_interval: 30s, "
                    "timeout: 2s, generator_url: 'http://node7:9747/api/v1/alerts'}\n"
                    "  webhook: {url: 'https://hooks.example/x', timeout: 3s}\n"
                    "  exec: {command: '/usr/local/bin/page --now', timeout: 20s}\n"
                    "  delivery: {queue_limit: 4096}\n"
                    "  power_budget_watts: 4800\n"
                    "  budget_clear_share: 0.9\n"
                    "  dry_run: true\n";
    WT_EQ_INT(parse(y, &err), 0);
    WT_EQ_INT(cfg.nrules, 2);
    const struct wt_alert_rule *r = &cfg.rules[0];
    WT_EQ_STR(r->name, "GPUNearSlowdown");
    WT_EQ_INT(r->metric, WT_M_GPU_TEMP_C);
    WT_EQ_STR(r->match, "model=\"NVIDIA H200\"");
    WT_EQ_INT(r->cmp, WT_CMP_GE);
    WT_NEAR(r->threshold, 0.95, 1e-12);
    WT_EQ_INT(r->relative_to, WT_M_GPU_SLOWDOWN_TEMP_C);
    WT_EQ_INT(r->for_ns, 30 * WT_NS_PER_S);
    WT_ASSERT(r->has_clear);
    WT_NEAR(r->clear, 0.9, 1e-12);
    WT_EQ_INT(r->severity, WT_SEV_CRITICAL);
    WT_EQ_STR(r->summary, "GPU {{labels.gpu}} at {{value}} C");
    WT_EQ_STR(r->labels, "team=\"ml\",page=\"yes\"");
    WT_EQ_INT(r->action, WT_ACTION_CAP);
    WT_NEAR(r->cap_share, 0.6, 1e-12);
    WT_EQ_INT(r->line, 4);
    r = &cfg.rules[1];
    WT_EQ_INT(r->cmp, WT_CMP_LT);
    WT_EQ_INT(r->relative_to, -1);
    WT_EQ_INT(r->for_ns, 0);
    WT_EQ_INT(r->severity, WT_SEV_WARNING);
    WT_NEAR(r->clear, 60, 1e-12);
    WT_CONTAINS(r->summary, "{{value}}"); /* a default summary */
    WT_EQ_INT(cfg.throttle_forecast.window_ns, 150 * WT_NS_PER_S);
    WT_EQ_INT(cfg.throttle_forecast.lead_ns, 90 * WT_NS_PER_S);
    WT_EQ_INT(cfg.throttling.for_ns, 10 * WT_NS_PER_S);
    WT_NEAR(cfg.idle_burn.util_below, 0.1, 1e-12);
    WT_EQ_INT(cfg.idle_burn.for_ns, 600 * WT_NS_PER_S);
    WT_NEAR(cfg.impossible.temp_max_c, 120, 1e-12);
    WT_ASSERT(!cfg.stuck.enabled);
    WT_ASSERT(!cfg.sibling.enabled);
    WT_NEAR(cfg.sibling.delta_c, 12, 1e-12);
    WT_EQ_INT(cfg.data_gap.intervals, 5);
    WT_EQ_INT(cfg.delivery_failing.for_ns, 120 * WT_NS_PER_S);
    WT_EQ_INT(cfg.delivery.queue_limit, 4096);
    WT_EQ_STR(cfg.alertmanager.url, "http://127.0.0.1:9093");
    WT_EQ_INT(cfg.alertmanager.resend_ns, 30 * WT_NS_PER_S);
    WT_EQ_STR(cfg.alertmanager.generator_url, "http://node7:9747/api/v1/alerts");
    WT_EQ_STR(cfg.webhook.url, "https://hooks.example/x");
    WT_EQ_STR(cfg.exec.command, "/usr/local/bin/page --now");
    WT_EQ_INT(cfg.exec.timeout_ns, 20 * WT_NS_PER_S);
    WT_NEAR(cfg.power_budget_watts, 4800, 1e-9);
    WT_NEAR(cfg.budget_clear_share, 0.9, 1e-12);
    WT_ASSERT(cfg.dry_run);
}

static const char head[] = "alerts:\n"
                           "  rules:\n"
                           "    - name: Hot\n";

WT_TEST(unknown_metric_names_file_line_and_nearest)
{
    char y[512];
    snprintf(y, sizeof y,
             "%s      metric: wattage_gpu_temprature_celsius\n      op: '>'\n"
             "      threshold: 80\n",
             head);
    EXPECT_ERR(y, "a.yaml:4: alerts.rules[0].metric: unknown metric "
                  "\"wattage_gpu_temprature_celsius\"; did you mean "
                  "wattage_gpu_temperature_celsius?");
    snprintf(y, sizeof y, "%s      metric: node_load1\n      op: '>'\n      threshold: 80\n", head);
    EXPECT_ERR(y, "a.yaml:4: alerts.rules[0].metric: unknown metric \"node_load1\"");
    snprintf(y, sizeof y,
             "%s      metric: wattage_gpu_power_watts\n      op: '>'\n"
             "      threshold: 0.9\n      relative_to: wattage_gpu_power_limit\n",
             head);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].relative_to: unknown metric");
}

WT_TEST(bad_values_name_file_line)
{
    char y[512];
    const char *m = "      metric: wattage_gpu_temperature_celsius\n";
    snprintf(y, sizeof y, "%s%s      op: '>'\n      threshold: 80\n      for: soon\n", head, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].for: expected a duration");
    snprintf(y, sizeof y, "%s%s      op: '=>'\n      threshold: 80\n", head, m);
    EXPECT_ERR(y, "a.yaml:5: alerts.rules[0].op: expected one of >, >=, <, <=, ==, !=");
    snprintf(y, sizeof y, "%s%s      threshold: 80\n", head, m);
    EXPECT_ERR(y, "a.yaml:3: alerts.rules[0].op: required");
    snprintf(y, sizeof y, "%s%s      op: '>'\n", head, m);
    EXPECT_ERR(y, "a.yaml:3: alerts.rules[0].threshold: required");
    snprintf(y, sizeof y, "%s%s      op: '>'\n      threshold: hot\n", head, m);
    EXPECT_ERR(y, "a.yaml:6: alerts.rules[0].threshold: expected a number");
    snprintf(y, sizeof y, "%s%s      op: '>'\n      threshold: 80\n      severity: page\n", head,
             m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].severity: expected one of info, warning, critical");
    snprintf(y, sizeof y, "%s%s      op: '>'\n      threshold: 80\n      treshold: 81\n", head, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].treshold: unknown key; did you mean 'threshold'?");
    snprintf(y, sizeof y,
             "alerts:\n  rules:\n    - name: A\n%s      op: '>'\n      threshold: 1\n"
             "    - name: B b\n%s      op: '>'\n      threshold: 1\n",
             m, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[1].name: expected letters");
    EXPECT_ERR("alerts:\n  rules: {name: x}\n", "a.yaml:2: alerts.rules: expected a list");
    EXPECT_ERR("alerts:\n  rules:\n    - metric: wattage_gpu_power_watts\n",
               "a.yaml:3: alerts.rules[0].name: required");
}

WT_TEST(exec_command_is_split_at_load)
{
    EXPECT_ERR("alerts:\n  exec:\n    command: \"/bin/page 'on call\"\n",
               "a.yaml:3: alerts.exec.command: expected a command (quotes closed, not empty)");
    struct wt_alerts_config c;
    struct wt_err err = {{0}};
    struct wt_ynode *root = NULL;
    const char *y = "alerts:\n  exec:\n    command: \"/bin/page 'on call' --now\"\n";
    WT_EQ_INT(wt_yaml_parse("a.yaml", y, strlen(y), &root, &err), 0);
    WT_EQ_INT(wt_alerts_config_parse("a.yaml", wt_y_get(root, "alerts"), &c, &err), 0);
    WT_EQ_STR(c.exec.command, "/bin/page 'on call' --now");
    wt_ynode_free(root);
}

WT_TEST(hysteresis_must_point_the_right_way)
{
    char y[512];
    const char *m = "      metric: wattage_gpu_temperature_celsius\n";
    snprintf(y, sizeof y, "%s%s      op: '<'\n      threshold: 80\n      clear_below: 75\n", head,
             m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].clear_below: clear_below goes with op > or >=");
    snprintf(y, sizeof y, "%s%s      op: '>'\n      threshold: 80\n      clear_below: 85\n", head,
             m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].clear_below: expected a value at most the "
                  "threshold 80 (got 85)");
    snprintf(y, sizeof y, "%s%s      op: '<='\n      threshold: 80\n      clear_above: 70\n", head,
             m);
    EXPECT_ERR(y, "alerts.rules[0].clear_above: expected a value at least the threshold 80");
    snprintf(y, sizeof y,
             "%s%s      op: '>'\n      threshold: 80\n      clear_below: 75\n"
             "      clear_above: 90\n",
             head, m);
    EXPECT_ERR(y, "a.yaml:8: alerts.rules[0].clear_above: clear_below and clear_above together");
    snprintf(y, sizeof y, "%s%s      op: '=='\n      threshold: 80\n      clear_above: 90\n", head,
             m);
    EXPECT_ERR(y, "clear_above goes with op < or <=");
}

WT_TEST(cap_needs_a_gpu_metric_and_one_target)
{
    char y[512];
    snprintf(y, sizeof y,
             "%s      metric: wattage_gpu_temperature_celsius\n      op: '>'\n"
             "      threshold: 80\n      action: cap\n",
             head);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].action: action cap needs one of cap_watts or "
                  "cap_share");
    snprintf(y, sizeof y,
             "%s      metric: wattage_gpu_temperature_celsius\n      op: '>'\n"
             "      threshold: 80\n      action: cap\n      cap_watts: 400\n"
             "      cap_share: 0.5\n",
             head);
    EXPECT_ERR(y, "action cap needs one of cap_watts or cap_share");
    snprintf(y, sizeof y,
             "%s      metric: wattage_cpu_power_watts\n      op: '>'\n"
             "      threshold: 80\n      action: cap\n      cap_watts: 400\n",
             head);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].action: action cap needs a per-GPU metric");
    snprintf(y, sizeof y,
             "%s      metric: wattage_gpu_temperature_celsius\n      op: '>'\n"
             "      threshold: 80\n      cap_watts: 400\n",
             head);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].cap_watts: cap_watts needs action: cap");
    snprintf(y, sizeof y,
             "%s      metric: wattage_gpu_temperature_celsius\n      op: '>'\n"
             "      threshold: 80\n      action: cap\n      cap_share: 1.5\n",
             head);
    EXPECT_ERR(y, "a.yaml:8: alerts.rules[0].cap_share: expected a number from 0.01 to 1");
}

WT_TEST(templates_and_labels_are_checked)
{
    char y[512];
    const char *m = "      metric: wattage_gpu_temperature_celsius\n      op: '>'\n"
                    "      threshold: 80\n";
    snprintf(y, sizeof y, "%s%s      summary: 'GPU {{labels.gpu}} at {{valu}}'\n", head, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].summary: unknown placeholder {{valu}}");
    snprintf(y, sizeof y, "%s%s      summary: 'GPU {{labels.gpu'\n", head, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].summary: unclosed {{");
    snprintf(y, sizeof y, "%s%s      labels: {alertname: x}\n", head, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].labels.alertname: alertname and severity are set");
    snprintf(y, sizeof y, "%s%s      match: {gpu-id: '1'}\n", head, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].match.gpu-id: expected a label name");
    snprintf(y, sizeof y, "%s%s      match: [gpu]\n", head, m);
    EXPECT_ERR(y, "a.yaml:7: alerts.rules[0].match: expected a mapping of label names");
}

WT_TEST(detector_and_channel_mistakes)
{
    EXPECT_ERR("alerts:\n  delivery: {queue_limit: 4}\n",
               "a.yaml:2: alerts.delivery.queue_limit: expected an integer from 16 to 65536");
    EXPECT_ERR("alerts:\n  delivery: {queue_limit: 10000000}\n",
               "a.yaml:2: alerts.delivery.queue_limit: expected an integer from 16 to 65536");
    EXPECT_ERR("alerts:\n  delivery: {queue: 10}\n",
               "a.yaml:2: alerts.delivery.queue: unknown key");
    EXPECT_ERR("alerts:\n  detectors:\n    delivery_failing: {for: soon}\n",
               "a.yaml:3: alerts.detectors.delivery_failing.for: expected a duration");
    EXPECT_ERR("alerts:\n  detectors:\n    idle_burm: {for: 1m}\n",
               "a.yaml:3: alerts.detectors.idle_burm: unknown key; did you mean 'idle_burn'?");
    EXPECT_ERR("alerts:\n  detectors:\n    stuck: {ticks: 1}\n",
               "a.yaml:3: alerts.detectors.stuck.ticks: expected an integer from 3 to 100000");
    EXPECT_ERR("alerts:\n  detectors:\n    stuck: maybe\n",
               "a.yaml:3: alerts.detectors.stuck: expected true, false or a mapping");
    EXPECT_ERR("alerts:\n  detectors:\n    impossible: {temp_min: 50, temp_max: 40}\n",
               "alerts.detectors.impossible.temp_max: expected more than temp_min (50)");
    EXPECT_ERR("alerts:\n  detectors:\n    throttle_forecast: {lead: 0}\n",
               "a.yaml:3: alerts.detectors.throttle_forecast.lead: expected a duration > 0");
    EXPECT_ERR("alerts:\n  alertmanager: {url: '127.0.0.1:9093'}\n",
               "a.yaml:2: alerts.alertmanager.url: expected an http:// or https:// URL");
    EXPECT_ERR("alerts:\n  webhook:\n    url: http://x\n    timout: 1s\n",
               "a.yaml:4: alerts.webhook.timout: unknown key; did you mean 'timeout'?");
    EXPECT_ERR("alerts:\n  power_budget_watts: -1\n",
               "a.yaml:2: alerts.power_budget_watts: expected a number from 0");
    EXPECT_ERR("alerts:\n  dryrun: true\n", "a.yaml:2: alerts.dryrun: unknown key; did you mean "
                                            "'dry_run'?");
}

WT_TEST(the_config_loader_runs_the_check)
{
    /* As `wattage check-config` and a SIGHUP reload see it: the section's own message. */
    struct wt_config c;
    struct wt_err err = {{0}};
    const char *y = "daemon:\n  interval: 1s\nalerts:\n  rules:\n    - name: Hot\n"
                    "      metric: wattage_gpu_temperature_celsius\n      op: '>'\n"
                    "      threshold: 80\n      for: 5 minutes\n";
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load_string("w.yaml", y, strlen(y), &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "w.yaml:9: alerts.rules[0].for: expected a duration");
    wt_config_free(&c);
    const char *good = "alerts:\n  rules:\n    - name: Hot\n"
                       "      metric: wattage_gpu_temperature_celsius\n      op: '>'\n"
                       "      threshold: 80\n";
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load_string("w.yaml", good, strlen(good), &c, &err), 0);
    WT_ASSERT(wt_config_section(&c, "alerts") != NULL);
    wt_config_free(&c);
}

WT_TEST(state_and_severity_names)
{
    WT_EQ_STR(wt_alert_state_name(WT_ALERT_INACTIVE), "inactive");
    WT_EQ_STR(wt_alert_state_name(WT_ALERT_PENDING), "pending");
    WT_EQ_STR(wt_alert_state_name(WT_ALERT_FIRING), "firing");
    WT_EQ_STR(wt_alert_state_name(WT_ALERT_RESOLVED), "resolved");
    WT_EQ_STR(wt_severity_name(WT_SEV_INFO), "info");
    WT_EQ_STR(wt_severity_name(WT_SEV_WARNING), "warning");
    WT_EQ_STR(wt_severity_name(WT_SEV_CRITICAL), "critical");
}

WT_TEST(the_budget_meter_is_checked_at_load)
{
    struct wt_err err;
    WT_EQ_INT(parse("alerts:\n  power_budget_watts: 5000\n  power_budget_meter: "
                    "'wattage_facility_power_watts{target=\"pdu-r12\",point=\"inlet1\"}'\n",
                    &err),
              0);
    WT_EQ_STR(cfg.power_budget_meter,
              "wattage_facility_power_watts{target=\"pdu-r12\",point=\"inlet1\"}");
    EXPECT_ERR("alerts:\n  power_budget_watts: 5000\n  power_budget_meter: wattage_pdu_watts\n",
               "a.yaml:3: alerts.power_budget_meter: ");
    EXPECT_ERR("alerts:\n  power_budget_meter: 'wattage_facility_power_watts{target=pdu}'\n",
               "a.yaml:2: alerts.power_budget_meter: ");
}
