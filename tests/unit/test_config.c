/* SPDX-License-Identifier: MIT */
/*
 * Config: defaults, every key read from YAML, and the messages a person gets for each kind of
 * mistake (unknown key, bad value, wrong kind, duplicate, YAML syntax), with file and line.
 */
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "runner.h"

/* Loads yaml (named "t.yaml") over the defaults; returns the result, message in err. */
static int load(const char *yaml, struct wt_config *c, struct wt_err *err)
{
    wt_config_defaults(c);
    err->msg[0] = '\0';
    return wt_config_load_string("t.yaml", yaml, strlen(yaml), c, err);
}

/* Expects yaml to fail with exactly this message. */
#define EXPECT_ERR(yaml, want)                                                                     \
    do {                                                                                           \
        struct wt_config c_;                                                                       \
        struct wt_err e_;                                                                          \
        WT_EQ_INT(load(yaml, &c_, &e_), -EINVAL);                                                  \
        WT_EQ_STR(e_.msg, want);                                                                   \
    } while (0)

/* Expects yaml to fail with a message that contains this. */
#define EXPECT_ERR_HAS(yaml, part)                                                                 \
    do {                                                                                           \
        struct wt_config c_;                                                                       \
        struct wt_err e_;                                                                          \
        WT_EQ_INT(load(yaml, &c_, &e_), -EINVAL);                                                  \
        WT_CONTAINS(e_.msg, part);                                                                 \
    } while (0)

#define EXPECT_OK(yaml, c)                                                                         \
    do {                                                                                           \
        struct wt_err e_;                                                                          \
        int rc_ = load(yaml, c, &e_);                                                              \
        if (rc_ != 0)                                                                              \
            wt_test_fail(__FILE__, __LINE__, "load failed (%d): %s", rc_, e_.msg);                 \
    } while (0)

static bool same_values(const struct wt_config *a, const struct wt_config *b)
{
    struct wt_config x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    memset(x.source, 0, sizeof x.source);
    memset(y.source, 0, sizeof y.source);
    x.doc = y.doc = NULL; /* the trees differ in address, not in the values read from them */
    return memcmp(&x, &y, sizeof x) == 0;
}

WT_TEST(defaults)
{
    struct wt_config c;
    memset(&c, 0xa5, sizeof c);
    wt_config_defaults(&c);
    WT_EQ_STR(c.source, "");
    WT_EQ_INT(c.daemon.interval_ns, WT_NS_PER_S);
    WT_EQ_INT(c.daemon.align_ticks, true);
    WT_EQ_STR(c.daemon.listen, "127.0.0.1:9747");
    WT_EQ_INT(c.daemon.log_level, WT_LOG_INFO);
    WT_EQ_INT(c.daemon.stop_deadline_ns, 5 * WT_NS_PER_S);
    WT_EQ_STR(c.daemon.tls.cert, "");
    WT_EQ_STR(c.daemon.tls.key, "");
    WT_EQ_STR(c.daemon.tls.client_ca, "");
    WT_EQ_STR(c.daemon.auth.token_file, "");
    WT_EQ_INT(c.daemon.auth.protect_reads, false);
    WT_EQ_STR(c.store.path, "/var/lib/wattage/wattage.db");
    WT_EQ_INT(c.store.flush_ns, WT_NS_PER_S);
    WT_EQ_INT(c.store.retention_raw_ns, 7 * 86400 * WT_NS_PER_S);
    WT_EQ_INT(c.store.retention_rollup_ns, 400 * 86400 * WT_NS_PER_S);
    WT_EQ_INT(c.store.buffer_readings, 131072);
    WT_EQ_INT(c.store.ticks, true);
    WT_EQ_INT(c.collectors.nvml.enabled, true);
    WT_EQ_INT(c.collectors.nvml.interval_ns, 0);
    WT_EQ_STR(c.collectors.nvml_library, "libnvidia-ml.so.1");
    WT_EQ_INT(c.collectors.rapl.enabled, true);
    WT_EQ_INT(c.collectors.rapl.interval_ns, 0);
    WT_EQ_INT(c.collectors.procfs.enabled, true);
    WT_EQ_INT(c.collectors.procfs.interval_ns, 0);
    WT_EQ_INT(c.collectors.hwmon.enabled, true);
    WT_EQ_INT(c.collectors.hwmon.interval_ns, 0);
    WT_EQ_INT(c.collectors.amd_slow_interval_ns, 60 * WT_NS_PER_S);
    WT_EQ_INT(c.collectors.hwmon_max_hold_ns, WT_CONFIG_AUTO);
}

WT_TEST(hwmon_max_hold_auto_off_and_range)
{
    struct wt_config c;
    EXPECT_OK("collectors:\n  hwmon:\n    max_hold: 10s\n", &c);
    WT_EQ_INT(c.collectors.hwmon_max_hold_ns, 10 * WT_NS_PER_S);
    EXPECT_OK("collectors:\n  hwmon:\n    max_hold: off\n", &c);
    WT_EQ_INT(c.collectors.hwmon_max_hold_ns, 0);
    EXPECT_OK("collectors:\n  hwmon:\n    max_hold: 0\n", &c);
    WT_EQ_INT(c.collectors.hwmon_max_hold_ns, 0);
    EXPECT_OK("collectors:\n  hwmon:\n    max_hold: auto\n", &c);
    WT_EQ_INT(c.collectors.hwmon_max_hold_ns, WT_CONFIG_AUTO);
    EXPECT_ERR_HAS("collectors:\n  hwmon:\n    max_hold: often\n",
                   "t.yaml:3: collectors.hwmon.max_hold");
    EXPECT_ERR_HAS("collectors:\n  hwmon:\n    max_hold: 500ms\n",
                   "t.yaml:3: collectors.hwmon.max_hold");
    EXPECT_ERR_HAS("collectors:\n  hwmon:\n    max_hold: 2h\n",
                   "t.yaml:3: collectors.hwmon.max_hold");
}

WT_TEST(amd_slow_interval_zero_off_and_range)
{
    struct wt_config c;
    EXPECT_OK("collectors:\n  amd:\n    slow_interval: 0\n", &c);
    WT_EQ_INT(c.collectors.amd_slow_interval_ns, 0);
    /* 0 and off (every tick) pass the range check, NVML's too */
    EXPECT_OK("collectors:\n  nvml:\n    slow_interval: off\n", &c);
    WT_EQ_INT(c.collectors.nvml_slow_interval_ns, 0);
    EXPECT_OK("collectors:\n  amd:\n    slow_interval: 5m\n", &c);
    WT_EQ_INT(c.collectors.amd_slow_interval_ns, 300 * WT_NS_PER_S);
    EXPECT_ERR_HAS("collectors:\n  amd:\n    slow_interval: 10ms\n",
                   "t.yaml:3: collectors.amd.slow_interval");
}

WT_TEST(every_key_from_file)
{
    struct wt_config c;
    struct wt_err err;
    const char *path = wt_test_src_path("tests/fixtures/config/all-keys.yaml");
    wt_config_defaults(&c);
    int rc = wt_config_load(path, &c, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "%s", err.msg);
    WT_EQ_STR(c.source, path);
    WT_EQ_INT(c.daemon.interval_ns, 250 * WT_NS_PER_MS);
    WT_EQ_STR(c.daemon.listen, "[::1]:9800");
    WT_EQ_INT(c.daemon.log_level, WT_LOG_DEBUG);
    WT_EQ_INT(c.daemon.stop_deadline_ns, 0);
    WT_EQ_STR(c.daemon.tls.cert, "/etc/wattage/tls/cert.pem");
    WT_EQ_STR(c.daemon.tls.key, "/etc/wattage/tls/key.pem");
    WT_EQ_STR(c.daemon.tls.client_ca, "/etc/wattage/tls/ca.pem");
    WT_EQ_STR(c.daemon.auth.token_file, "/etc/wattage/token");
    WT_EQ_INT(c.daemon.auth.protect_reads, true);
    WT_EQ_STR(c.store.path, "/srv/wattage/energy.db");
    WT_EQ_INT(c.store.flush_ns, 5 * WT_NS_PER_S);
    WT_EQ_INT(c.store.buffer_readings, 5000);
    WT_EQ_INT(c.store.ticks, false);
    WT_EQ_INT(c.store.retention_raw_ns, 14 * 86400 * WT_NS_PER_S);
    WT_EQ_INT(c.store.retention_rollup_ns, 730 * 86400 * WT_NS_PER_S);
    WT_EQ_INT(c.collectors.nvml.enabled, false);
    WT_EQ_INT(c.collectors.nvml.interval_ns, 2 * WT_NS_PER_S);
    WT_EQ_STR(c.collectors.nvml_library, "/opt/nvidia/lib/libnvidia-ml.so.1");
    WT_EQ_INT(c.collectors.rapl.enabled, false);
    WT_EQ_INT(c.collectors.rapl.interval_ns, 1830 * WT_NS_PER_S);
    WT_EQ_INT(c.collectors.procfs.enabled, false);
    WT_EQ_INT(c.collectors.procfs.interval_ns, 10 * WT_NS_PER_S);
    WT_EQ_INT(c.collectors.hwmon.enabled, false);
    WT_EQ_INT(c.collectors.hwmon.interval_ns, 5 * WT_NS_PER_S);
    WT_EQ_INT(c.collectors.hwmon_max_hold_ns, 20 * WT_NS_PER_S);

    /* Every key differs from its default, so none was silently ignored. */
    struct wt_config d;
    wt_config_defaults(&d);
    WT_ASSERT(!same_values(&c, &d));
}

/* wt_config_write then wt_config_load_string gives back the same values, key for key. */
static void roundtrip(const struct wt_config *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WT_ASSERT(f != NULL);
    WT_EQ_INT(wt_config_write(c, f), 0);
    fclose(f);
    struct wt_config back;
    struct wt_err err;
    wt_config_defaults(&back);
    /* Start from something else so that a key the writer skips would show. */
    back.daemon.interval_ns = 123;
    back.collectors.rapl.enabled = !c->collectors.rapl.enabled;
    int rc = wt_config_load_string("written.yaml", text, len, &back, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "%s\n%s", err.msg, text);
    if (!same_values(c, &back))
        wt_test_fail(__FILE__, __LINE__, "values differ after a round trip through:\n%s", text);
    free(text);
}

WT_TEST(every_key_round_trips)
{
    struct wt_config c;
    struct wt_err err;
    wt_config_defaults(&c);
    roundtrip(&c);
    WT_EQ_INT(wt_config_load(wt_test_src_path("tests/fixtures/config/all-keys.yaml"), &c, &err), 0);
    roundtrip(&c);
    /* Strings that need quoting, and durations that are not whole units. */
    snprintf(c.store.path, sizeof c.store.path, "/tmp/a \"quoted\" #not-a-comment: x.db");
    c.daemon.interval_ns = 1500 * WT_NS_PER_MS;
    c.store.flush_ns = 10 * WT_NS_PER_MS + 7;
    roundtrip(&c);
}

/* Code points YAML does not print raw inside quotes (C1 controls, U+0085 a line break that
 * folds into a space, U+FFFE, U+FFFF) are written escaped, so the text loads back the same. */
WT_TEST(unprintable_code_points_round_trip)
{
    static const char yaml[] =
        "store:\n  path: \"a\\x85b\\u0080c\\u009fd\\uFFFEe\\uFFFF\\u00a0\"\n"
        "alerts:\n  rules:\n    - name: hot\n      metric: wattage_gpu_temperature_celsius\n"
        "      op: \">\"\n      threshold: 80\n      for: 30s\n"
        "      labels:\n        team: \"m\\x85l\"\n";
    struct wt_config c;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    if (wt_config_load_string("t.yaml", yaml, strlen(yaml), &c, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "%s", err.msg);
    WT_EQ_STR(c.store.path, "a\xc2\x85"
                            "b\xc2\x80"
                            "c\xc2\x9f"
                            "d\xef\xbf\xbe"
                            "e\xef\xbf\xbf\xc2\xa0");
    roundtrip(&c);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WT_EQ_INT(wt_config_write(&c, f), 0);
    fclose(f);
    WT_CONTAINS(text, "path: \"a\\x85b\\x80c\\x9fd\\ufffee\\uffff\xc2\xa0\"\n");
    WT_CONTAINS(text, "team: \"m\\x85l\"\n");
    free(text);
    wt_config_free(&c);
}

WT_TEST(written_config_names_every_key)
{
    struct wt_config c;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_write(&c, f), 0);
    fclose(f);
    WT_CONTAINS(text,
                "daemon:\n  interval: 1s\n  align_ticks: true\n  listen: \"127.0.0.1:9747\"\n");
    WT_CONTAINS(text, "  tls:\n    cert: \"\"\n");
    WT_CONTAINS(text, "store:\n  path: \"/var/lib/wattage/wattage.db\"\n");
    WT_CONTAINS(text, "  retention:\n    raw: 7d\n    rollup: 400d\n");
    WT_CONTAINS(text, "collectors:\n  nvml:\n    enabled: true\n    interval: 0\n");
    size_t n = 0, nsec = 0;
    while (wt_config_sections[nsec].path)
        nsec++;
    for (; wt_config_key(n); n++) {
        /* The module sections are written when the file has them (see the round trip below). */
        bool section = false;
        for (size_t k = 0; k < nsec; k++)
            section |= strcmp(wt_config_sections[k].path, wt_config_key(n)) == 0;
        if (section)
            continue;
        const char *dot = strrchr(wt_config_key(n), '.');
        char leaf[64];
        snprintf(leaf, sizeof leaf, " %s: ", dot + 1);
        WT_CONTAINS(text, leaf);
    }
    WT_EQ_INT(n, 55 + nsec); /* 3 of them collectors.{nvml,rapl}.attribution*, 2 collectors.ipmi, 1
                              collectors.nvml.energy_interval, 1 store.packed_ticks, 4
                              collectors.amd, 2 inference, 1 daemon.stop_deadline, 3
                              collectors.hwmon, 1 collectors.nvml.slow_interval */
    WT_EQ_STR(wt_config_key(0), "daemon.interval");
    free(text);
}

WT_TEST(unknown_key_names_file_line_and_suggests)
{
    EXPECT_ERR("daemon:\n  listen: 0.0.0.0:9747\n  intervall: 2s\n",
               "t.yaml:3: daemon.intervall: unknown key; did you mean 'interval'?");
    EXPECT_ERR("daemon:\n  tsl:\n    cert: x\n",
               "t.yaml:2: daemon.tsl: unknown key; did you mean 'tls'?");
    EXPECT_ERR("collectors:\n  nvml:\n    enable: true\n",
               "t.yaml:3: collectors.nvml.enable: unknown key; did you mean 'enabled'?");
    EXPECT_ERR("daemon:\n  log-level: debug\n",
               "t.yaml:2: daemon.log-level: unknown key; did you mean 'log_level'?");
    EXPECT_ERR("Daemon:\n  interval: 2s\n",
               "t.yaml:1: Daemon: unknown key; did you mean 'daemon'?");
    /* The right name in the wrong section. */
    EXPECT_ERR(
        "daemon:\n  flush_interval: 2s\n",
        "t.yaml:2: daemon.flush_interval: unknown key; did you mean 'store.flush_interval'?");
    /* Nothing near: no suggestion. */
    EXPECT_ERR("\n\nfrobnicate: 1\n", "t.yaml:3: frobnicate: unknown key");
    EXPECT_ERR("store:\n  retention:\n    forever: true\n",
               "t.yaml:3: store.retention.forever: unknown key");
    /* Module sections are checked by their module, with the same kind of message. */
    EXPECT_ERR("daemon:\n  interval: 2s\ntopology:\n  nod: n1\n",
               "t.yaml:4: topology.nod: unknown key; did you mean 'node'?");
    EXPECT_ERR_HAS("alerts:\n  rules:\n    - name: x\n      metric: wattage_gpu_tempreature\n",
                   "t.yaml:4: alerts.rules[0].metric: ");
    EXPECT_ERR_HAS("collectors:\n  snmp:\n    targets:\n      - nme: pdu1\n",
                   "t.yaml:4: collectors.snmp.targets[0].nme: unknown key; did you mean 'name'?");
    EXPECT_ERR_HAS("remote_write:\n  - url: http://x\n    batchsize: 5\n",
                   "t.yaml:3: remote_write[0].batchsize: unknown key; did you mean 'batch_size'?");
    /* Keys are shown without control characters, and bounded. */
    EXPECT_ERR("daemon:\n  \"in\\tterval\\e\": 1s\n",
               "t.yaml:2: daemon.in?terval?: unknown key; did you mean 'interval'?");
    char yaml[600] = "daemon:\n  ";
    memset(yaml + strlen(yaml), 'k', 300);
    strcat(yaml, ": 1\n");
    EXPECT_ERR_HAS(yaml, "t.yaml:2: daemon.kkkkk");
    EXPECT_ERR_HAS(yaml, "kkk...: unknown key");
    /* Dotted keys do not nest: say how to write it. */
    EXPECT_ERR_HAS("daemon.interval: 2s\n",
                   "t.yaml:1: daemon.interval: unknown key (keys do not nest");
}

WT_TEST(typo_from_file_names_the_file)
{
    struct wt_config c;
    struct wt_err err;
    const char *path = wt_test_src_path("tests/fixtures/config/typo.yaml");
    char want[PATH_MAX + 512];
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load(path, &c, &err), -EINVAL);
    snprintf(want, sizeof want, "%s:3: daemon.intervall: unknown key; did you mean 'interval'?",
             path);
    WT_EQ_STR(err.msg, want);
}

WT_TEST(bad_duration)
{
    struct wt_config c;
    struct wt_err err;
    const char *path = wt_test_src_path("tests/fixtures/config/bad-interval.yaml");
    char want[PATH_MAX + 512];
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load(path, &c, &err), -EINVAL);
    snprintf(want, sizeof want,
             "%s:6: collectors.nvml.interval: expected a duration > 0 such as 1s or 500ms, or 0 "
             "to use daemon.interval (got \"-1\")",
             path);
    WT_EQ_STR(err.msg, want);

    EXPECT_ERR(
        "daemon:\n  interval: 0\n",
        "t.yaml:2: daemon.interval: expected a duration > 0 such as 1s or 500ms (got \"0\")");
    EXPECT_ERR(
        "daemon:\n  interval:\n",
        "t.yaml:2: daemon.interval: expected a duration > 0 such as 1s or 500ms (got nothing)");
    EXPECT_ERR_HAS("store:\n  flush_interval: fast\n",
                   "t.yaml:2: store.flush_interval: expected a "
                   "duration > 0 such as 1s or 500ms (got \"fast\")");
    EXPECT_ERR_HAS("store:\n  flush_interval: 5 s\n", "(got \"5 s\")");
    EXPECT_ERR_HAS("store:\n  flush_interval: nan\n", "(got \"nan\")");
    EXPECT_ERR_HAS("store:\n  flush_interval: inf\n", "(got \"inf\")");
    EXPECT_ERR_HAS("store:\n  flush_interval: 1e3\n", "(got \"1e3\")");
    EXPECT_ERR_HAS("store:\n  flush_interval: 0x10s\n", "(got \"0x10s\")");
    EXPECT_ERR_HAS("store:\n  flush_interval: 1parsec\n", "(got \"1parsec\")");
    EXPECT_ERR_HAS("store:\n  retention:\n    raw: 99999999999d\n",
                   "t.yaml:3: store.retention.raw:");

    /* Accepted forms, and 0 meaning "daemon.interval" for a collector. */
    EXPECT_OK("daemon:\n  interval: 500ms\ncollectors:\n  rapl:\n    interval: 0\n", &c);
    WT_EQ_INT(c.daemon.interval_ns, 500 * WT_NS_PER_MS);
    WT_EQ_INT(c.collectors.rapl.interval_ns, 0);
    EXPECT_OK("daemon:\n  interval: 2.5\n", &c);
    WT_EQ_INT(c.daemon.interval_ns, 2500 * WT_NS_PER_MS);
    EXPECT_OK("daemon:\n  interval: \"1m\"\n", &c);
    WT_EQ_INT(c.daemon.interval_ns, 60 * WT_NS_PER_S);
}

WT_TEST(bad_listen)
{
    EXPECT_ERR("daemon:\n  listen: localhost\n",
               "t.yaml:2: daemon.listen: expected HOST:PORT or [IPv6]:PORT with a port from 1 to "
               "65535, such as 127.0.0.1:9747 (got \"localhost\")");
    EXPECT_ERR_HAS("daemon:\n  listen: 127.0.0.1:0\n", "(got \"127.0.0.1:0\")");
    EXPECT_ERR_HAS("daemon:\n  listen: 127.0.0.1:65536\n", "t.yaml:2: daemon.listen: expected");
    EXPECT_ERR_HAS("daemon:\n  listen: 127.0.0.1:http\n", "t.yaml:2: daemon.listen: expected");
    EXPECT_ERR_HAS("daemon:\n  listen: \":9747\"\n", "t.yaml:2: daemon.listen: expected");
    EXPECT_ERR_HAS("daemon:\n  listen: 300.1.1.1:80\n", "t.yaml:2: daemon.listen: expected");
    EXPECT_ERR_HAS("daemon:\n  listen: \"[fe80::zz]:80\"\n", "t.yaml:2: daemon.listen: expected");
    EXPECT_ERR_HAS("daemon:\n  listen: \"\"\n", "t.yaml:2: daemon.listen: expected");
    EXPECT_ERR_HAS("daemon:\n  listen: \"::1:9747\"\n",
                   "write IPv6 addresses in brackets, such as [::1]:9747 (got \"::1:9747\")");

    struct wt_config c;
    EXPECT_OK("daemon:\n  listen: \"[::]:9747\"\n", &c);
    WT_EQ_STR(c.daemon.listen, "[::]:9747");
    EXPECT_OK("daemon:\n  listen: gpu-node-01.example.org:65535\n", &c);
    WT_EQ_STR(c.daemon.listen, "gpu-node-01.example.org:65535");

    char host[64];
    int port = 0;
    WT_EQ_INT(wt_config_parse_listen("[::1]:9800", host, sizeof host, &port), 0);
    WT_EQ_STR(host, "::1");
    WT_EQ_INT(port, 9800);
    WT_EQ_INT(wt_config_parse_listen("0.0.0.0:1", host, sizeof host, &port), 0);
    WT_EQ_STR(host, "0.0.0.0");
    WT_EQ_INT(port, 1);
    WT_EQ_INT(wt_config_parse_listen("0.0.0.0:1", host, 4, &port), -EINVAL);
    WT_EQ_INT(wt_config_parse_listen("[::1]9800", NULL, 0, NULL), -EINVAL);
    WT_EQ_INT(wt_config_parse_listen("[::1]:", NULL, 0, NULL), -EINVAL);
    WT_EQ_INT(wt_config_parse_listen("a:123456", NULL, 0, NULL), -EINVAL);
    WT_EQ_INT(wt_config_parse_listen("a b:80", NULL, 0, NULL), -EINVAL);
}

WT_TEST(bad_bool)
{
    EXPECT_ERR("collectors:\n  rapl:\n    enabled: maybe\n",
               "t.yaml:3: collectors.rapl.enabled: expected true or false (got \"maybe\")");
    EXPECT_ERR_HAS("collectors:\n  rapl:\n    enabled: 1\n", "(got \"1\")");
    EXPECT_ERR_HAS("collectors:\n  rapl:\n    enabled:\n", "expected true or false (got nothing)");
    EXPECT_ERR_HAS("daemon:\n  auth:\n    protect_reads: [true]\n",
                   "t.yaml:3: daemon.auth.protect_reads: expected true or false, not a list");

    static const char *const yes[] = {"true", "True", "yes", "on", "ON"};
    static const char *const no[] = {"false", "FALSE", "no", "off", "Off"};
    char yaml[128];
    struct wt_config c;
    for (size_t i = 0; i < 5; i++) {
        snprintf(yaml, sizeof yaml, "collectors:\n  procfs:\n    enabled: %s\n", no[i]);
        EXPECT_OK(yaml, &c);
        WT_EQ_INT(c.collectors.procfs.enabled, false);
        snprintf(yaml, sizeof yaml, "daemon:\n  auth:\n    token_file: t\n    protect_reads: %s\n",
                 yes[i]);
        EXPECT_OK(yaml, &c);
        WT_EQ_INT(c.daemon.auth.protect_reads, true);
    }
}

WT_TEST(bad_log_level_and_strings)
{
    EXPECT_ERR("daemon:\n  log_level: verbose\n",
               "t.yaml:2: daemon.log_level: expected one of debug, info, warn, error (got "
               "\"verbose\")");
    EXPECT_ERR("store:\n  path: \"\"\n",
               "t.yaml:2: store.path: expected a file path, not an empty value (got nothing)");
    EXPECT_ERR_HAS("store:\n  path: \"a\\nb\"\n",
                   "t.yaml:2: store.path: expected a file path; it contains a control character");
    char yaml[600] = "store:\n  path: /";
    memset(yaml + strlen(yaml), 'x', 300);
    strcat(yaml, "\n");
    EXPECT_ERR_HAS(yaml, "t.yaml:2: store.path: expected a file path of at most 255 characters");

    struct wt_config c;
    EXPECT_OK("daemon:\n  log_level: warn\n  tls:\n    cert: ~\n", &c);
    WT_EQ_INT(c.daemon.log_level, WT_LOG_WARN);
    WT_EQ_STR(c.daemon.tls.cert, "");
    EXPECT_OK("store:\n  path: \"null\"\n", &c);
    WT_EQ_STR(c.store.path, "null");
}

WT_TEST(duplicate_key)
{
    EXPECT_ERR("daemon:\n  interval: 1s\n  listen: 127.0.0.1:1\n  interval: 2s\n",
               "t.yaml:4: daemon.interval: duplicate key (first set on line 2)");
    EXPECT_ERR("daemon:\n  interval: 1s\nstore: {}\ndaemon:\n  listen: 127.0.0.1:1\n",
               "t.yaml:4: daemon: duplicate key (first set on line 1)");
}

WT_TEST(syntax_error_has_the_line)
{
    EXPECT_ERR_HAS("daemon:\n  interval: 1s\n listen: x\n", "t.yaml:3: YAML syntax error: ");
    EXPECT_ERR_HAS("daemon:\n  interval: 1s\n  listen: \"127.0.0.1:1\n\n",
                   "t.yaml:3: YAML syntax error: ");
    EXPECT_ERR("daemon:\n  interval: 1s\n  listen 127.0.0.1:1\n  log_level: info\n",
               "t.yaml:3: YAML syntax error: could not find expected ':' while scanning a simple "
               "key");
    EXPECT_ERR_HAS("store:\n  path: a: b\n", "t.yaml:2: YAML syntax error: mapping values are not "
                                             "allowed in this context");
    EXPECT_ERR_HAS("daemon:\n\tinterval: 1s\n", "t.yaml:2: YAML syntax error: ");
    EXPECT_ERR_HAS("daemon:\n\tinterval: 1s\n", "(YAML indentation must use spaces, not tabs)");
    EXPECT_ERR_HAS("daemon: [1, 2\n", "YAML syntax error");
    EXPECT_ERR_HAS("a: 1\n\xff\xfe\n", "t.yaml:2: YAML syntax error: ");
    /* YAML that parses but is not a config. */
    EXPECT_ERR("daemon:\n  interval: 1s\n---\nstore: {}\n",
               "t.yaml:3: only one YAML document is allowed (a second starts here)");
    EXPECT_ERR_HAS("daemon: &d\n  interval: 1s\n", "t.yaml:1: YAML anchors (&d) are not supported");
    EXPECT_ERR_HAS("daemon:\n  interval: 1s\nstore: *d\n", "t.yaml:3: ");
    EXPECT_ERR_HAS("? [a, b]\n: 1\n", "t.yaml:1: a mapping key must be a plain name, not a list");
}

WT_TEST(nested_wrong_kind)
{
    EXPECT_ERR("daemon:\n  interval:\n    seconds: 1\n",
               "t.yaml:3: daemon.interval: expected a duration > 0 such as 1s or 500ms, not a "
               "mapping");
    EXPECT_ERR("daemon: 5\n",
               "t.yaml:1: daemon: expected a section with keys interval, "
               "align_ticks, listen, log_level, clock_max_error, stop_deadline, tls, "
               "auth (got "
               "\"5\")");
    EXPECT_ERR(
        "daemon:\n  tls: on\n",
        "t.yaml:2: daemon.tls: expected a section with keys cert, key, client_ca (got \"on\")");
    EXPECT_ERR(
        "collectors:\n  - nvml\n  - rapl\n",
        "t.yaml:2: collectors: expected a section with keys nvml, rapl, procfs, netdev, snmp, "
        "redfish, "
        "modbus, ipmi, clock, amd, hwmon, not a list");
    EXPECT_ERR("- daemon\n",
               "t.yaml:1: expected sections (daemon, store, collectors, inference, client, "
               "topology, carbon, facility, alerts, remote_write, kafka, otlp, statement, review) "
               "at the top of the file (got a list)");
    EXPECT_ERR("hello\n",
               "t.yaml:1: expected sections (daemon, store, collectors, inference, client, "
               "topology, carbon, facility, alerts, remote_write, kafka, otlp, statement, review) "
               "at the top of the file (got "
               "\"hello\")");
    char deep[4 * WT_YAML_MAX_DEPTH + 16] = "";
    for (int i = 0; i < WT_YAML_MAX_DEPTH + 2; i++)
        strcat(deep, "[");
    EXPECT_ERR_HAS(deep, "nested more than 64 levels deep");
}

WT_TEST(cross_checks)
{
    EXPECT_ERR("daemon:\n  tls:\n    cert: /c.pem\n",
               "t.yaml:3: daemon.tls: cert and key go together (cert is set, key is missing)");
    EXPECT_ERR("daemon:\n  tls:\n\n    key: /k.pem\n",
               "t.yaml:4: daemon.tls: cert and key go together (key is set, cert is missing)");
    EXPECT_ERR_HAS("daemon:\n  tls:\n    client_ca: /ca.pem\n",
                   "t.yaml:3: daemon.tls.client_ca: needs daemon.tls.cert and daemon.tls.key");
    EXPECT_ERR_HAS("daemon:\n  auth:\n    protect_reads: true\n",
                   "t.yaml:3: daemon.auth.protect_reads: needs daemon.auth.token_file");
    EXPECT_ERR("store:\n  retention:\n    rollup: 1d\n",
               "t.yaml:3: store.retention.rollup: must be at least store.retention.raw (rollups "
               "are made from raw data; 1d < 7d)");
    EXPECT_ERR_HAS("store:\n  retention:\n    raw: 500d\n", "t.yaml:3: store.retention.rollup:");
    struct wt_config c;
    EXPECT_OK("store:\n  retention:\n    raw: 30d\n    rollup: 30d\n", &c);
    WT_EQ_INT(c.store.retention_rollup_ns, 30 * 86400 * WT_NS_PER_S);
}

WT_TEST(empty_file_is_defaults)
{
    static const char *const empties[] = {
        "",           "\n",  "# nothing here\n", "---\n",
        "---\n...\n", "~\n", "daemon:\n",        "daemon:\nstore:\ncollectors:\n  nvml:\n",
        "{}\n"};
    struct wt_config d;
    wt_config_defaults(&d);
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        struct wt_config c;
        EXPECT_OK(empties[i], &c);
        WT_ASSERT(same_values(&c, &d));
        WT_EQ_STR(c.source, "t.yaml");
    }
}

WT_TEST(load_from_file)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/wattage.yaml", wt_test_dir());
    FILE *f = fopen(path, "w");
    WT_ASSERT(f != NULL);
    fputs("# test config\ndaemon:\n  interval: 2s\n  listen: 0.0.0.0:9000\ncollectors:\n"
          "  nvml:\n    library: ./libnvidia-ml.so.1\n",
          f);
    fclose(f);
    struct wt_config c;
    struct wt_err err;
    wt_config_defaults(&c);
    int rc = wt_config_load(path, &c, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "%s", err.msg);
    WT_EQ_STR(c.source, path);
    WT_EQ_INT(c.daemon.interval_ns, 2 * WT_NS_PER_S);
    WT_EQ_STR(c.daemon.listen, "0.0.0.0:9000");
    WT_EQ_STR(c.collectors.nvml_library, "./libnvidia-ml.so.1");
    WT_EQ_STR(c.store.path, "/var/lib/wattage/wattage.db");

    /* A relative name is used as given in messages (the runner chdir'd into the test dir). */
    f = fopen("bad.yaml", "w");
    fputs("store:\n  path: /x\n  flush: 1s\n", f);
    fclose(f);
    WT_EQ_INT(wt_config_load("bad.yaml", &c, &err), -EINVAL);
    WT_EQ_STR(err.msg, "bad.yaml:3: store.flush: unknown key; did you mean 'flush_interval'?");

    /* A directory is not a config file. */
    WT_EQ_INT(wt_config_load(wt_test_dir(), &c, &err), -EISDIR);
    WT_CONTAINS(err.msg, "is a directory");
}

WT_TEST(missing_file)
{
    struct wt_config c, before;
    struct wt_err err;
    wt_config_defaults(&c);
    memcpy(&before, &c, sizeof c);
    WT_EQ_INT(wt_config_load("no/such/wattage.yaml", &c, &err), -ENOENT);
    WT_EQ_STR(err.msg, "no/such/wattage.yaml: no such file");
    WT_ASSERT(memcmp(&c, &before, sizeof c) == 0);
}

WT_TEST(error_leaves_config_unchanged)
{
    struct wt_config c, before;
    struct wt_err err;
    const char *good = "daemon:\n  interval: 5s\n";
    const char *bad = "daemon:\n  interval: 3s\n  listen: 10.0.0.1:80\nstore:\n  path: /x\n"
                      "  flush_interval: never\n";
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load_string("good.yaml", good, strlen(good), &c, &err), 0);
    memcpy(&before, &c, sizeof c);
    WT_EQ_INT(wt_config_load_string("bad.yaml", bad, strlen(bad), &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "bad.yaml:6: store.flush_interval:");
    WT_ASSERT(memcmp(&c, &before, sizeof c) == 0);
    WT_EQ_INT(c.daemon.interval_ns, 5 * WT_NS_PER_S);
    WT_EQ_STR(c.source, "good.yaml");
}

WT_TEST(collector_interval_falls_back_to_daemon)
{
    struct wt_config c;
    EXPECT_OK("daemon:\n  interval: 3s\ncollectors:\n  rapl:\n    interval: 250ms\n", &c);
    WT_EQ_INT(wt_config_interval(&c, &c.collectors.nvml), 3 * WT_NS_PER_S);
    WT_EQ_INT(wt_config_interval(&c, &c.collectors.procfs), 3 * WT_NS_PER_S);
    WT_EQ_INT(wt_config_interval(&c, &c.collectors.rapl), 250 * WT_NS_PER_MS);
    WT_EQ_INT(wt_config_interval(&c, NULL), 3 * WT_NS_PER_S);
}

/* Finds a dotted path in a YAML tree. */
static const struct wt_ynode *lookup(const struct wt_ynode *n, const char *path)
{
    char part[64];
    while (*path) {
        size_t len = strcspn(path, ".");
        snprintf(part, sizeof part, "%.*s", (int)len, path);
        path += len + (path[len] == '.');
        if (!n || n->kind != WT_YNODE_MAP)
            return NULL;
        const struct wt_ynode *found = NULL;
        for (size_t i = 0; i < n->n && !found; i++)
            if (strcmp(n->child[i]->key, part) == 0)
                found = n->child[i];
        n = found;
    }
    return n;
}

WT_TEST(example_config_documents_every_key_with_its_default)
{
    const char *path = wt_test_src_path("deploy/wattage.yaml");
    struct wt_config c, d;
    struct wt_err err;
    wt_config_defaults(&d);
    wt_config_defaults(&c);
    int rc = wt_config_load(path, &c, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "%s", err.msg);
    WT_ASSERT(same_values(&c, &d));

    /* Every key in the schema is written out (not only commented). */
    FILE *f = fopen(path, "r");
    WT_ASSERT(f != NULL);
    static char buf[64 * 1024];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    struct wt_ynode *root;
    WT_EQ_INT(wt_yaml_parse(path, buf, len, &root, &err), 0);
    for (size_t i = 0; wt_config_key(i); i++)
        if (!lookup(root, wt_config_key(i)))
            wt_test_fail(__FILE__, __LINE__, "deploy/wattage.yaml lacks %s", wt_config_key(i));
    wt_ynode_free(root);
}

WT_TEST(yaml_tree_keeps_lines_and_columns)
{
    const char *y = "# c\na:\n  b: 1\n  c:\n    - x\n    - 'y'\nd: \"\"\n";
    struct wt_ynode *root;
    struct wt_err err;
    WT_EQ_INT(wt_yaml_parse("t.yaml", y, strlen(y), &root, &err), 0);
    WT_ASSERT(root && root->kind == WT_YNODE_MAP);
    WT_EQ_INT(root->n, 2);
    const struct wt_ynode *b = lookup(root, "a.b"), *c = lookup(root, "a.c");
    WT_ASSERT(b && c);
    WT_EQ_STR(b->value, "1");
    WT_EQ_INT(b->key_line, 3);
    WT_EQ_INT(b->key_col, 3);
    WT_EQ_INT(b->line, 3);
    WT_EQ_INT(b->col, 6);
    WT_EQ_INT(c->kind, WT_YNODE_SEQ);
    WT_EQ_INT(c->n, 2);
    WT_EQ_INT(c->child[1]->line, 6);
    WT_EQ_INT(c->child[1]->col, 7);
    WT_EQ_INT(c->child[1]->quoted, true);
    WT_EQ_INT(c->child[0]->quoted, false);
    const struct wt_ynode *d = lookup(root, "d");
    WT_ASSERT(d && !wt_ynode_is_null(d));
    wt_ynode_free(root);

    WT_EQ_INT(wt_yaml_parse("t.yaml", "", 0, &root, &err), 0);
    WT_ASSERT(root == NULL);
    char big[16];
    WT_EQ_INT(wt_yaml_parse("t.yaml", big, (size_t)WT_YAML_MAX_BYTES + 1, &root, &err), -EINVAL);
    WT_CONTAINS(err.msg, "t.yaml: larger than");
}

/* The module sections are kept as written and survive wt_config_write and a reload. */
WT_TEST(sections_round_trip)
{
    static const char yaml[] =
        "daemon:\n  interval: 2s\n"
        "collectors:\n  snmp:\n    interval: 30s\n    targets:\n"
        "      - name: pdu1\n        address: \"127.0.0.1:1161\"\n        community: public\n"
        "alerts:\n  rules:\n    - name: hot\n      metric: wattage_gpu_temperature_celsius\n"
        "      op: \">\"\n      threshold: 80\n      for: 30s\n      labels:\n        team: ml\n";
    struct wt_config c, back;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load_string("t.yaml", yaml, strlen(yaml), &c, &err), 0);
    const struct wt_ynode *t = wt_config_section(&c, "collectors.snmp.targets");
    WT_ASSERT(t && t->kind == WT_YNODE_SEQ && t->n == 1);
    WT_EQ_INT(t->line, 7);
    WT_ASSERT(wt_config_section(&c, "carbon") == NULL);
    WT_EQ_STR(wt_config_file(&c), "t.yaml");

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WT_EQ_INT(wt_config_write(&c, f), 0);
    fclose(f);
    WT_CONTAINS(text, "  snmp:\n    enabled: true\n    interval: 30s\n    targets:\n      -\n"
                      "        name: \"pdu1\"\n");
    WT_CONTAINS(text, "alerts:\n  rules:\n    -\n      name: \"hot\"\n");
    wt_config_defaults(&back);
    if (wt_config_load_string("back.yaml", text, len, &back, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "%s in:\n%s", err.msg, text);
    WT_ASSERT(same_values(&c, &back));
    const struct wt_ynode *r = wt_config_section(&back, "alerts.rules");
    WT_ASSERT(r && r->n == 1 && r->child[0]->kind == WT_YNODE_MAP);
    WT_EQ_STR(wt_y_get(r->child[0], "op")->value, ">");
    WT_EQ_STR(wt_y_get(wt_y_get(r->child[0], "labels"), "team")->value, "ml");

    /* A failed reload keeps the sections that were loaded. */
    WT_EQ_INT(wt_config_load_string("bad.yaml", "alerts: 5\n", 10, &back, &err), -EINVAL);
    WT_ASSERT(wt_config_section(&back, "alerts.rules") == r);
    wt_config_free(&c);
    wt_config_free(&back);
    WT_ASSERT(back.doc == NULL);
    free(text);
}

WT_TEST(yaml_trees_compare_by_content)
{
    struct wt_ynode *a = NULL, *b = NULL, *c = NULL;
    struct wt_err err = {{0}};
    const char *ya = "carbon:\n  zone: GB\n  sources:\n    - {kind: csv, file: x}\n";
    const char *yb = "\n\ncarbon:\n    zone: GB\n    sources: [{kind: csv, file: x}]\n";
    const char *yc = "carbon:\n  zone: GB\n  sources:\n    - {kind: csv, file: y}\n";
    WT_EQ_INT(wt_yaml_parse("a", ya, strlen(ya), &a, &err), 0);
    WT_EQ_INT(wt_yaml_parse("b", yb, strlen(yb), &b, &err), 0);
    WT_EQ_INT(wt_yaml_parse("c", yc, strlen(yc), &c, &err), 0);
    WT_ASSERT(wt_ynode_equal(a, b)); /* lines and layout aside */
    WT_ASSERT(!wt_ynode_equal(a, c));
    WT_ASSERT(!wt_ynode_equal(a, NULL));
    WT_ASSERT(wt_ynode_equal(NULL, NULL));
    wt_ynode_free(a);
    wt_ynode_free(b);
    wt_ynode_free(c);
}

/*
 * Every interval and timeout has a range: a typo such as "1ns" for "1s" (a collector that spins
 * on a core) or "1000d" is refused with the bound it broke and why, naming file:line and key.
 * The module sections (targets, alerts, carbon, facility) go through the same load.
 */
WT_TEST(every_interval_and_timeout_is_bounded)
{
    static const struct {
        const char *yaml, *want;
    } bad[] = {
        {"daemon:\n  interval: 1ns\n", "t.yaml:2: daemon.interval: expected a duration from 10ms "
                                       "to 1h (got \"1ns\", below 10ms): "
                                       "polling more often than every 10ms saturates a core"},
        {"daemon:\n  interval: 9ms\n", "t.yaml:2: daemon.interval: expected a duration from 10ms"},
        {"daemon:\n  interval: 2h\n", "(got \"2h\", above 1h)"},
        {"collectors:\n  nvml:\n    interval: 1us\n",
         "t.yaml:3: collectors.nvml.interval: expected a duration from 10ms to 1h, or 0 to use "
         "daemon.interval (got \"1us\", below 10ms)"},
        {"collectors:\n  rapl:\n    interval: 5ms\n", "t.yaml:3: collectors.rapl.interval:"},
        {"collectors:\n  procfs:\n    interval: 1ns\n", "t.yaml:3: collectors.procfs.interval:"},
        {"collectors:\n  snmp:\n    interval: 10ms\n",
         "t.yaml:3: collectors.snmp.interval: expected a duration from 100ms to 1h (got \"10ms\", "
         "below 100ms): a network device"},
        {"collectors:\n  redfish:\n    interval: 1ns\n", "t.yaml:3: collectors.redfish.interval:"},
        {"collectors:\n  modbus:\n    interval: 30d\n", "(got \"30d\", above 1h)"},
        {"store:\n  flush_interval: 1ns\n",
         "t.yaml:2: store.flush_interval: expected a duration from 10ms to 10m (got \"1ns\", "
         "below 10ms): flushing more often"},
        {"store:\n  flush_interval: 1h\n", "(got \"1h\", above 10m)"},
        {"store:\n  retention:\n    raw: 1m\n",
         "t.yaml:3: store.retention.raw: expected a duration from 1h to 36500d (got \"1m\", below "
         "1h)"},
        {"store:\n  retention:\n    rollup: 1ns\n", "t.yaml:3: store.retention.rollup:"},
        {"store:\n  buffer_readings: 99999999\n",
         "t.yaml:2: store.buffer_readings: expected a whole number from 0 to 16777216: readings "
         "kept in memory"},
        {"store:\n  buffer_readings: -1\n", "t.yaml:2: store.buffer_readings: expected a whole"},
        {"collectors:\n  snmp:\n    targets:\n      - {name: p, address: h, community: c, "
         "interval: 1ns}\n",
         "t.yaml:4: collectors.snmp.targets[0].interval: expected a duration from 100ms to 1h "
         "(got \"1ns\", below 100ms)"},
        {"collectors:\n  snmp:\n    targets:\n      - {name: p, address: h, community: c, "
         "timeout: 1ns}\n",
         "t.yaml:4: collectors.snmp.targets[0].timeout: expected a duration from 10ms to 1m (got "
         "\"1ns\", below 10ms): under 10ms even a local network times out"},
        {"collectors:\n  snmp:\n    targets:\n      - {name: p, address: h, community: c, "
         "retries: 1000}\n",
         "t.yaml:4: collectors.snmp.targets[0].retries: expected an integer from 0 to 10"},
        {"collectors:\n  modbus:\n    targets:\n      - {name: m, address: h, timeout: 1ns}\n",
         "t.yaml:4: collectors.modbus.targets[0].timeout: expected a duration from 10ms to 1m"},
        {"collectors:\n  modbus:\n    targets:\n      - {name: m, address: h, interval: 1ns}\n",
         "t.yaml:4: collectors.modbus.targets[0].interval: expected a duration from 100ms"},
        {"collectors:\n  redfish:\n    targets:\n      - {name: b, url: 'http://h', timeout: "
         "1ns}\n",
         "t.yaml:4: collectors.redfish.targets[0].timeout: expected a duration from 10ms to 1m"},
        {"collectors:\n  redfish:\n    targets:\n      - {name: b, url: 'http://h', interval: "
         "1ns}\n",
         "t.yaml:4: collectors.redfish.targets[0].interval: expected a duration from 100ms"},
        {"alerts:\n  webhook: {url: 'http://h/x', timeout: 1ns}\n",
         "t.yaml:2: alerts.webhook.timeout: expected a duration from 10ms to 1m (got \"1ns\""},
        {"alerts:\n  alertmanager: {url: 'http://h:9093', timeout: 10m}\n",
         "t.yaml:2: alerts.alertmanager.timeout: expected a duration from 10ms to 1m (got "
         "\"10m\", above 1m)"},
        {"alerts:\n  alertmanager: {url: 'http://h:9093', resend_interval: 1ns}\n",
         "t.yaml:2: alerts.alertmanager.resend_interval: expected a duration from 1s to 1d (got "
         "\"1ns\", below 1s): resending more often"},
        {"alerts:\n  exec: {command: /bin/true, timeout: 1ns}\n",
         "t.yaml:2: alerts.exec.timeout: expected a duration from 100ms to 1h"},
        {"carbon:\n  sources:\n    - {kind: csv, file: /x.csv, interval: 1ns}\n",
         "carbon.sources[0].interval: expected a duration from 1m to 1d (got \"1ns\", below 1m)"},
        {"carbon:\n  sources:\n    - {kind: csv, file: /x.csv, timeout: 1ns}\n",
         "carbon.sources[0].timeout: expected a duration from 100ms to 1m"},
        {"carbon:\n  sources:\n    - {kind: csv, file: /x.csv, retry: 1ns}\n",
         "carbon.sources[0].retry: expected a duration from 1s to 1d"},
        {"facility:\n  kpi_interval: 1ns\n",
         "t.yaml:2: facility.kpi_interval: expected a duration from 1s to 1d (got \"1ns\", below "
         "1s): each tick queries the store"},
        {"facility:\n  part_load_interval: 1ns\n", "t.yaml:2: facility.part_load_interval:"},
        {"facility:\n  reconcile:\n    interval: 1ns\n", "t.yaml:3: facility.reconcile.interval:"},
        {"remote_write:\n  - {url: 'http://h/api/v1/write', timeout: 1ns}\n",
         "t.yaml:2: remote_write[0].timeout: expected a duration from 10ms to 1m"},
        {"remote_write:\n  - {url: 'http://h/api/v1/write', deadline: 1ns}\n",
         "t.yaml:2: remote_write[0].deadline: expected a duration from 100ms to 1h (got \"1ns\", "
         "below 100ms): the sender reads the store"},
        {"remote_write:\n  - {url: 'http://h/api/v1/write', max_backoff: 2h}\n",
         "t.yaml:2: remote_write[0].max_backoff: expected a duration from 100ms to 1h (got \"2h\", "
         "above 1h)"},
        {"alerts:\n  rules:\n    - {name: r, metric: wattage_gpu_power_watts, op: '>', "
         "threshold: 1, for: 40000d}\n",
         "alerts.rules[0].for: expected a duration of at most 100 years"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct wt_config c;
        struct wt_err e;
        if (load(bad[i].yaml, &c, &e) != -EINVAL)
            wt_test_fail(__FILE__, __LINE__, "case %zu accepted: %s", i, bad[i].yaml);
        else if (!strstr(e.msg, bad[i].want))
            wt_test_fail(__FILE__, __LINE__, "case %zu: \"%s\" does not contain \"%s\"", i, e.msg,
                         bad[i].want);
        wt_config_free(&c);
    }
    /* The edges themselves are accepted. */
    struct wt_config c;
    EXPECT_OK("daemon:\n  interval: 10ms\nstore:\n  flush_interval: 10m\n", &c);
    WT_EQ_INT(c.daemon.interval_ns, 10 * WT_NS_PER_MS);
    EXPECT_OK("daemon:\n  interval: 1h\ncollectors:\n  snmp:\n    interval: 100ms\n", &c);
    WT_EQ_INT(c.collectors.snmp.interval_ns, 100 * WT_NS_PER_MS);
}

/* The check --interval shares with daemon.interval: the bound it broke, or what is expected. */
WT_TEST(flag_durations_use_the_key_ranges)
{
    char msg[400];
    WT_EQ_INT(wt_config_check_duration("daemon.interval", WT_NS_PER_S, NULL, msg, sizeof msg), 0);
    WT_EQ_INT(wt_config_check_duration("daemon.interval", 1, "\"1ns\"", msg, sizeof msg), -ERANGE);
    WT_CONTAINS(msg, "expected a duration from 10ms to 1h (got \"1ns\", below 10ms): polling");
    WT_EQ_INT(wt_config_check_duration("daemon.interval", -1, "\"1e9\"", msg, sizeof msg), -ERANGE);
    WT_EQ_STR(msg, "expected a duration from 10ms to 1h such as 1s or 500ms (got \"1e9\")");
    WT_EQ_INT(
        wt_config_check_duration("daemon.interval", 7200 * WT_NS_PER_S, NULL, msg, sizeof msg),
        -ERANGE);
    WT_CONTAINS(msg, "(got 2h, above 1h)");
    WT_EQ_INT(wt_config_check_duration("daemon.listen", 1, NULL, msg, sizeof msg), -ENOENT);
}

/* daemon.align_ticks: on by default, off when asked, and a bad value names the place. */
WT_TEST(align_ticks_reads_and_refuses)
{
    struct wt_config c;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    const char *off = "daemon:\n  interval: 250ms\n  align_ticks: false\n";
    WT_EQ_INT(wt_config_load_string("t.yaml", off, strlen(off), &c, &err), 0);
    WT_EQ_INT(c.daemon.align_ticks, false);
    WT_EQ_INT(c.daemon.interval_ns, 250 * WT_NS_PER_MS);
    wt_config_free(&c);
    wt_config_defaults(&c);
    const char *bad = "daemon:\n  align_ticks: sometimes\n";
    WT_EQ_INT(wt_config_load_string("t.yaml", bad, strlen(bad), &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "t.yaml:2: daemon.align_ticks:");
    WT_EQ_INT(c.daemon.align_ticks, true); /* the defaults, never half-applied */
    wt_config_free(&c);
}

/* daemon.stop_deadline: 5 s by default, 0 (nothing sent at stop) allowed, a minute at most. */
WT_TEST(stop_deadline_reads_and_refuses)
{
    struct wt_config c;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    const char *zero = "daemon:\n  stop_deadline: off\n";
    WT_EQ_INT(wt_config_load_string("t.yaml", zero, strlen(zero), &c, &err), 0);
    WT_EQ_INT(c.daemon.stop_deadline_ns, 0);
    wt_config_free(&c);
    wt_config_defaults(&c);
    const char *ms = "daemon:\n  stop_deadline: 2500ms\n";
    WT_EQ_INT(wt_config_load_string("t.yaml", ms, strlen(ms), &c, &err), 0);
    WT_EQ_INT(c.daemon.stop_deadline_ns, 2500 * WT_NS_PER_MS);
    wt_config_free(&c);
    wt_config_defaults(&c);
    const char *big = "daemon:\n  stop_deadline: 2m\n";
    WT_EQ_INT(wt_config_load_string("t.yaml", big, strlen(big), &c, &err), -EINVAL);
    WT_CONTAINS(
        err.msg,
        "t.yaml:2: daemon.stop_deadline: expected a duration from 0 to 1m (got \"2m\", above 1m)");
    WT_CONTAINS(err.msg, "TimeoutStopSec");
    WT_EQ_INT(c.daemon.stop_deadline_ns, 5 * WT_NS_PER_S);
    wt_config_free(&c);
}
