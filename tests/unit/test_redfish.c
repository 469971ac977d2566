/* SPDX-License-Identifier: MIT */
/*
 * Redfish collector against a real HTTP(S) server (tests/peers/redfish_server.py) serving DMTF
 * mockups and real Dell iDRAC responses: readings against the JSON (computed here with cJSON
 * from the same files), basic auth and sessions, TLS with a CA made by openssl for the test,
 * the faults (500, garbage, a hang, an oversized body), a re-layout answered by a new walk, an
 * energy counter that is reset, and the config errors.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/redfish.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/reading.h"
#include "readings.h"
#include "runner.h"

#define T0 (1764439200LL * WT_NS_PER_S)
#define RACK "../shared/data/redfish/public-rackmount1"
#define DELL "../shared/data/redfish/vendor-responses-telegraf/dell"

static char ctl_path[512], log_path[512];
static pid_t server;

static const char *dir_path(const char *name)
{
    static char buf[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", wt_test_dir(), name);
    return buf[k];
}

/* Starts the server on root with extra arguments (NULL-terminated); returns its port. */
static int start_server(const char *root, ...)
{
    const char *argv[24];
    int n = 0;
    char port_path[512], script[600], rootbuf[600];
    /* wt_test_src_path returns a static buffer: copy each result before the next call. */
    snprintf(script, sizeof script, "%s", wt_test_src_path("tests/peers/redfish_server.py"));
    snprintf(rootbuf, sizeof rootbuf, "%s", root[0] == '/' ? root : wt_test_src_path(root));
    snprintf(port_path, sizeof port_path, "%s", dir_path("port"));
    snprintf(ctl_path, sizeof ctl_path, "%s", dir_path("control"));
    snprintf(log_path, sizeof log_path, "%s", dir_path("requests"));
    wt_test_write(ctl_path, "ok\n");
    argv[n++] = "/usr/bin/python3";
    argv[n++] = script;
    argv[n++] = "--root";
    argv[n++] = rootbuf;
    argv[n++] = "--port-file";
    argv[n++] = port_path;
    argv[n++] = "--control";
    argv[n++] = ctl_path;
    argv[n++] = "--log";
    argv[n++] = log_path;
    va_list ap;
    va_start(ap, root);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 22)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    server = fork();
    if (server == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    WT_ASSERT(server > 0);
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(port_path, "r");
        int port = 0;
        if (f) {
            int k = fscanf(f, "%d", &port);
            fclose(f);
            if (k == 1 && port > 0)
                return port;
        }
        usleep(50000);
    }
    wt_test_fail(__FILE__, __LINE__, "the Redfish server did not start");
}

static void stop_server(void)
{
    if (server > 0) {
        kill(server, SIGTERM);
        waitpid(server, NULL, 0);
        server = 0;
    }
}

/* Lines of the request log starting with prefix. */
static int requests(const char *prefix)
{
    FILE *f = fopen(log_path, "r");
    char line[1024];
    int n = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        n += strncmp(line, prefix, strlen(prefix)) == 0;
    fclose(f);
    return n;
}

static void *open_yaml(struct wt_config *c, const char *yaml)
{
    struct wt_err err = {{0}};
    wt_config_defaults(c);
    if (wt_config_load_string("r.yaml", yaml, strlen(yaml), c, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "config: %s", err.msg);
    void *st = NULL;
    if (wt_redfish_collector.open_target(c, 0, &st, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "open_target: %s", err.msg);
    return st;
}

#define HEAD "collectors:\n  redfish:\n    targets:\n      - name: bmc\n"

static void *open_plain(struct wt_config *c, int port, const char *extra)
{
    char yaml[2048];
    snprintf(yaml, sizeof yaml, HEAD "        url: http://127.0.0.1:%d\n        timeout: 1s\n%s",
             port, extra ? extra : "");
    return open_yaml(c, yaml);
}

static int poll_once(void *st, int64_t t, struct wt_batch *b, struct wt_err *err)
{
    wt_batch_clear(b);
    memset(err, 0, sizeof *err);
    return wt_redfish_collector.poll(st, t, b, err);
}

static void poll_ok(void *st, int64_t t, struct wt_batch *b)
{
    struct wt_err err;
    int rc = poll_once(st, t, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %s", err.msg);
}

/* A number from a mockup file: <tree>/<rel>/index.json (or rel itself when it ends .json). */
static double jnum3(const char *tree, const char *rel, const char *k1, const char *k2,
                    const char *k3)
{
    char path[1024];
    if (strstr(rel, ".json"))
        snprintf(path, sizeof path, "%s/%s", tree, rel);
    else
        snprintf(path, sizeof path, "%s/%s/index.json", tree, rel);
    FILE *f = fopen(path[0] == '/' ? path : wt_test_src_path(path), "r");
    if (!f)
        wt_test_fail(__FILE__, __LINE__, "cannot read %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *j = cJSON_Parse(buf);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k1);
    if (k2)
        v = cJSON_GetObjectItemCaseSensitive(v, k2);
    if (k3)
        v = cJSON_GetObjectItemCaseSensitive(v, k3);
    if (!cJSON_IsNumber(v))
        wt_test_fail(__FILE__, __LINE__, "%s: %s.%s is not a number", path, k1, k2 ? k2 : "");
    double x = v->valuedouble;
    cJSON_Delete(j);
    return x;
}

static double jnum(const char *tree, const char *rel, const char *k1, const char *k2)
{
    return jnum3(tree, rel, k1, k2, NULL);
}

#define UP "source=\"redfish\",target=\"bmc\""
#define LB(point, kind, name)                                                                      \
    "source=\"redfish\",target=\"bmc\",point=\"" point "\",kind=\"" kind "\",name=\"" name "\""

static void check_rackmount(const struct wt_batch *b)
{
    const char *env = "Chassis/1U/EnvironmentMetrics";
    const char *psu = "Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics";
    const char *tm = "Chassis/1U/ThermalSubsystem/ThermalMetrics";
    WT_NEAR(reading_value(b, WT_M_FAC_POWER_W, LB("1U", "chassis", "Computer System Chassis")),
            jnum(RACK, env, "PowerWatts", "Reading"), 0);
    WT_NEAR(reading_value(b, WT_M_FAC_POWER_W, LB("1U/Bay1/input", "psu", "Power Supply Bay 1")),
            jnum(RACK, psu, "InputPowerWatts", "Reading"), 0);
    WT_NEAR(reading_value(b, WT_M_FAC_ENERGY_J, LB("1U/Bay1", "psu", "Power Supply Bay 1")),
            jnum(RACK, psu, "EnergykWh", "Reading") * 3.6e6, 0);
    WT_NEAR(reading_value(b, WT_M_FAC_VOLTAGE_V, LB("1U/Bay1/input", "psu", "Power Supply Bay 1")),
            jnum(RACK, psu, "InputVoltage", "Reading"), 0);
    WT_NEAR(
        reading_value(b, WT_M_FAC_TEMP_C, LB("1U/intake", "chassis", "Computer System Chassis")),
        jnum3(RACK, tm, "TemperatureSummaryCelsius", "Intake", "Reading"), 0);
}

WT_TEST(rackmount_readings_match_the_mockup)
{
    int port = start_server(RACK, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, NULL);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    check_rackmount(&b);
    WT_NEAR(reading_value(&b, WT_M_FAC_UP, UP), 1, 0);
    /* The legacy Power resource is not read: PowerSubsystem gives the same and more. */
    WT_EQ_INT(requests("GET /redfish/v1/Chassis/1U/Power "), 0);
    /* Intake is quoted by ThermalMetrics twice (summary and readings) and by a Sensor: once. */
    size_t intake = 0;
    for (size_t i = 0; i < b.len; i++)
        intake += b.r[i].metric == WT_M_FAC_TEMP_C && b.r[i].value == 24.8;
    WT_EQ_INT(intake, 1);
    wt_batch_free(&b);
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    stop_server();
}

WT_TEST(basic_auth_and_refused_credentials)
{
    int port = start_server(RACK, "--basic", "monitor:s3cret-pw", NULL);
    wt_test_write(dir_path("pw"), "s3cret-pw\n");
    wt_test_write(dir_path("bad"), "wrong-pw\n");
    char extra[1024];
    struct wt_config c;
    snprintf(extra, sizeof extra, "        username: monitor\n        password_file: %s\n",
             dir_path("pw"));
    void *st = open_plain(&c, port, extra);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    check_rackmount(&b);
    wt_redfish_collector.close(st);
    wt_config_free(&c);

    snprintf(extra, sizeof extra, "        username: monitor\n        password_file: %s\n",
             dir_path("bad"));
    st = open_plain(&c, port, extra);
    struct wt_err err;
    WT_ASSERT(poll_once(st, T0, &b, &err) < 0);
    WT_CONTAINS(err.msg, "credentials refused");
    WT_ASSERT(!strstr(err.msg, "wrong-pw"));
    wt_redfish_collector.close(st);
    wt_config_free(&c);

    /* A password file that is not there: open fails and says which file, not a secret. */
    snprintf(extra, sizeof extra, "        username: monitor\n        password_file: %s\n",
             dir_path("missing"));
    char yaml[2048];
    snprintf(yaml, sizeof yaml, HEAD "        url: http://127.0.0.1:%d\n%s", port, extra);
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load_string("r.yaml", yaml, strlen(yaml), &c, &err), 0);
    st = NULL;
    WT_ASSERT(wt_redfish_collector.open_target(&c, 0, &st, &err) < 0);
    WT_CONTAINS(err.msg, "cannot read password_file");
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

WT_TEST(session_login_token_and_logout)
{
    int port = start_server(RACK, "--session", "monitor:s3cret-pw", NULL);
    wt_test_write(dir_path("pw"), "s3cret-pw");
    char extra[1024];
    struct wt_config c;
    snprintf(extra, sizeof extra,
             "        username: monitor\n        password_file: %s\n        auth: session\n",
             dir_path("pw"));
    void *st = open_plain(&c, port, extra);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    poll_ok(st, T0 + WT_NS_PER_S, &b);
    check_rackmount(&b);
    WT_EQ_INT(requests("POST /redfish/v1/SessionService/Sessions 201"), 1);
    WT_EQ_INT(requests("GET /redfish/v1/Chassis/1U/EnvironmentMetrics 200"), 3); /* walk + 2 */
    wt_redfish_collector.close(st);
    WT_EQ_INT(requests("DELETE /redfish/v1/SessionService/Sessions/"), 1);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

static void make_ca(void)
{
    char cmd[4096];
    const char *d = wt_test_dir();
    wt_test_write(dir_path("san.cnf"), "subjectAltName=IP:127.0.0.1\n");
    snprintf(cmd, sizeof cmd,
             "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
             "-nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=wattage-test-ca && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out srv.pem -days 2 -extfile san.cnf",
             d);
    char full[4200];
    snprintf(full, sizeof full, "(%s) >/dev/null 2>&1", cmd);
    WT_EQ_INT(system(full), 0);
}

WT_TEST(tls_verified_with_the_ca_file_and_refused_without)
{
    make_ca();
    char cert[600], key[600], yaml[2048];
    snprintf(cert, sizeof cert, "%s", dir_path("srv.pem"));
    snprintf(key, sizeof key, "%s", dir_path("srv.key"));
    int port = start_server(RACK, "--cert", cert, "--key", key, NULL);
    struct wt_config c;
    struct wt_batch b = {0};
    struct wt_err err;

    snprintf(yaml, sizeof yaml, HEAD "        url: https://127.0.0.1:%d\n        ca_file: %s\n",
             port, dir_path("ca.pem"));
    void *st = open_yaml(&c, yaml);
    poll_ok(st, T0, &b);
    check_rackmount(&b);
    wt_redfish_collector.close(st);
    wt_config_free(&c);

    /* Without the CA: the certificate is not trusted, nothing is read. */
    snprintf(yaml, sizeof yaml, HEAD "        url: https://127.0.0.1:%d\n", port);
    st = open_yaml(&c, yaml);
    WT_ASSERT(poll_once(st, T0, &b, &err) < 0);
    WT_CONTAINS(err.msg, "https://127.0.0.1");
    wt_redfish_collector.close(st);
    wt_config_free(&c);

    /* insecure: true, said explicitly, reads it (and logs a warning at open). */
    snprintf(yaml, sizeof yaml, HEAD "        url: https://127.0.0.1:%d\n        insecure: true\n",
             port);
    st = open_yaml(&c, yaml);
    poll_ok(st, T0, &b);
    check_rackmount(&b);
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

WT_TEST(faults_fail_the_poll_and_it_recovers)
{
    int port = start_server(RACK, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, "        max_response_bytes: 65536\n");
    struct wt_batch b = {0};
    struct wt_err err;
    poll_ok(st, T0, &b);

    wt_test_write(ctl_path, "500\n");
    WT_ASSERT(poll_once(st, T0 + 1, &b, &err) < 0);
    WT_CONTAINS(err.msg, "HTTP 500");
    wt_test_write(ctl_path, "garbage\n");
    WT_ASSERT(poll_once(st, T0 + 2, &b, &err) < 0);
    WT_CONTAINS(err.msg, "not a JSON object");
    wt_test_write(ctl_path, "big 200000\n");
    WT_ASSERT(poll_once(st, T0 + 3, &b, &err) < 0);
    WT_CONTAINS(err.msg, "larger than 65536 bytes");

    struct timespec a, z;
    wt_test_write(ctl_path, "hang\n");
    clock_gettime(CLOCK_MONOTONIC, &a);
    WT_ASSERT(poll_once(st, T0 + 4, &b, &err) < 0);
    clock_gettime(CLOCK_MONOTONIC, &z);
    WT_CONTAINS(err.msg, "imed out");
    /* One request's timeout (1 s) ends the poll: a loose bound, not a benchmark. */
    WT_ASSERT((z.tv_sec - a.tv_sec) < 6);

    wt_test_write(ctl_path, "ok\n");
    poll_ok(st, T0 + 5, &b);
    check_rackmount(&b);
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

WT_TEST(one_failing_resource_leaves_the_others)
{
    int port = start_server(RACK, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, NULL);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_ASSERT(find_reading(&b, WT_M_FAC_FAN_RPM, LB("1U/Bay1", "fan", "Fan Bay 1")));
    /* The fans' resources answer 500, the power supply's garbage: the rest is read. */
    wt_test_write(ctl_path, "500 /redfish/v1/Chassis/1U/ThermalSubsystem/Fans/\n");
    poll_ok(st, T0 + 1, &b);
    check_rackmount(&b);
    WT_ASSERT(!find_reading(&b, WT_M_FAC_FAN_RPM, LB("1U/Bay1", "fan", "Fan Bay 1")));
    WT_NEAR(reading_value(&b, WT_M_FAC_UP, UP), 1, 0);
    wt_test_write(ctl_path, "garbage /redfish/v1/Chassis/1U/PowerSubsystem/\n");
    poll_ok(st, T0 + 2, &b);
    WT_ASSERT(
        !find_reading(&b, WT_M_FAC_POWER_W, LB("1U/Bay1/input", "psu", "Power Supply Bay 1")));
    WT_ASSERT(find_reading(&b, WT_M_FAC_POWER_W, LB("1U", "chassis", "Computer System Chassis")));
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

WT_TEST(sensors_false_reads_no_sensor)
{
    int port = start_server(RACK, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, "        sensors: false\n        node: gpu-node-3\n");
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    for (size_t i = 0; i < b.len; i++)
        WT_ASSERT(!strstr(b.r[i].labels, "kind=\"sensor\""));
    WT_EQ_INT(requests("GET /redfish/v1/Chassis/1U/Sensors "), 0);
    WT_ASSERT(find_reading(&b, WT_M_FAC_POWER_W,
                           LB("1U", "chassis", "Computer System Chassis") ",node=\"gpu-node-3\""));
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

WT_TEST(a_relayout_answers_404_and_is_walked_again)
{
    int port = start_server(RACK, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, NULL);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    poll_ok(st, T0 + 1, &b);
    WT_EQ_INT(requests("GET /redfish/v1/Chassis "), 1); /* the walk is cached */
    wt_test_write(ctl_path, "relayout /redfish/v1/Chassis/1U /redfish/v1/Chassis/1U-B\n");
    poll_ok(st, T0 + 2, &b);
    WT_EQ_INT(requests("GET /redfish/v1/Chassis "), 2);
    WT_ASSERT(requests("GET /redfish/v1/Chassis/1U-B/EnvironmentMetrics 200") >= 2);
    /* Points follow the service's URIs: the chassis is now "1U-B". */
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W, LB("1U-B", "chassis", "Computer System Chassis")),
            jnum(RACK, "Chassis/1U/EnvironmentMetrics", "PowerWatts", "Reading"), 0);
    WT_ASSERT(!find_reading(&b, WT_M_FAC_POWER_W, LB("1U", "chassis", "Computer System Chassis")));
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

/* Copies a mockup into the test directory so that a test can change values between polls. */
static const char *copy_tree(const char *rel)
{
    static char dst[600];
    char cmd[1500];
    snprintf(dst, sizeof dst, "%s/tree", wt_test_dir());
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", wt_test_src_path(rel), dst);
    WT_EQ_INT(system(cmd), 0);
    return dst;
}

static void set_energy(const char *file, double from, double to)
{
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "sed -i 's/\"Reading\": %.0f/\"Reading\": %.0f/' '%s'", from, to,
             file);
    WT_EQ_INT(system(cmd), 0);
}

WT_TEST(an_energy_counter_reset_is_a_new_baseline)
{
    const char *tree = copy_tree(RACK);
    char file[800];
    snprintf(file, sizeof file,
             "%s/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics/index.json", tree);
    double e0 =
        jnum(tree, "Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics", "EnergykWh", "Reading");
    int port = start_server(tree, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, NULL);
    struct wt_batch b = {0};
    const char *lb = LB("1U/Bay1", "psu", "Power Supply Bay 1");
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, lb), e0 * 3.6e6, 0);
    set_energy(file, e0, e0 + 2);
    poll_ok(st, T0 + 10 * WT_NS_PER_S, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, lb), (e0 + 2) * 3.6e6, 0);
    /* The PSU's counter is cleared and has counted 3 kWh since: total grows by 3 kWh. */
    set_energy(file, e0 + 2, 3);
    poll_ok(st, T0 + 20 * WT_NS_PER_S, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, lb), (e0 + 5) * 3.6e6, 0);
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

WT_TEST(dell_idrac_legacy_power_and_thermal)
{
    /* A tree of real iDRAC 9 answers: root, chassis, legacy Power and Thermal. */
    char cmd[8192], root[600];
    snprintf(root, sizeof root, "%s/idrac", wt_test_dir());
    const char *src = wt_test_src_path(DELL);
    char srcbuf[600];
    snprintf(srcbuf, sizeof srcbuf, "%s", src);
    snprintf(cmd, sizeof cmd,
             "set -e; r='%s'; d=\"$r/Chassis/System.Embedded.1\"; mkdir -p \"$d/Power\" "
             "\"$d/Thermal\"; cp '%s/../base.json' \"$r/index.json\"; "
             "cp '%s/dell_chassis.json' \"$d/index.json\"; "
             "cp '%s/dell_power.json' \"$d/Power/index.json\"; "
             "cp '%s/dell_thermal.json' \"$d/Thermal/index.json\"; "
             "printf '{\"Members\": [{\"@odata.id\": \"/redfish/v1/Chassis/System.Embedded.1\"}]}' "
             "> \"$r/Chassis/index.json\"",
             root, srcbuf, srcbuf, srcbuf, srcbuf);
    WT_EQ_INT(system(cmd), 0);
    int port = start_server(root, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, NULL);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    char lb[WT_LABELS_LEN];
    /* The chassis name, as the iDRAC gives it, is on every reading of it. */
    const struct wt_reading *r = NULL;
    for (size_t i = 0; i < b.len && !r; i++)
        if (b.r[i].metric == WT_M_FAC_POWER_W && strstr(b.r[i].labels, "kind=\"chassis\""))
            r = &b.r[i];
    WT_ASSERT(r != NULL);
    WT_CONTAINS(r->labels, "point=\"System.Embedded.1\"");
    /* PowerControl[0].PowerConsumedWatts, PowerSupplies[0], computed from the files. */
    char path[700];
    snprintf(path, sizeof path, "%s/dell_power.json", srcbuf);
    FILE *f = fopen(path, "r");
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *pj = cJSON_Parse(buf);
    const cJSON *pcj = cJSON_GetArrayItem(cJSON_GetObjectItem(pj, "PowerControl"), 0);
    const cJSON *psu = cJSON_GetArrayItem(cJSON_GetObjectItem(pj, "PowerSupplies"), 0);
    WT_NEAR(r->value, cJSON_GetObjectItem(pcj, "PowerConsumedWatts")->valuedouble, 0);
    snprintf(lb, sizeof lb,
             "source=\"redfish\",target=\"bmc\",point=\"System.Embedded.1/%s/input\"",
             cJSON_GetObjectItem(psu, "MemberId")->valuestring);
    const struct wt_reading *pin = NULL, *vin = NULL;
    for (size_t i = 0; i < b.len; i++) {
        if (strncmp(b.r[i].labels, lb, strlen(lb)) != 0)
            continue;
        if (b.r[i].metric == WT_M_FAC_POWER_W)
            pin = &b.r[i];
        if (b.r[i].metric == WT_M_FAC_VOLTAGE_V)
            vin = &b.r[i];
    }
    WT_ASSERT(pin && vin);
    WT_CONTAINS(pin->labels, "kind=\"psu\"");
    WT_NEAR(pin->value, cJSON_GetObjectItem(psu, "PowerInputWatts")->valuedouble, 0);
    WT_NEAR(vin->value, cJSON_GetObjectItem(psu, "LineInputVoltage")->valuedouble, 0);
    cJSON_Delete(pj);
    /* Thermal: every fan in RPM and the CPU temperature. */
    snprintf(path, sizeof path, "%s/dell_thermal.json", srcbuf);
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *tj = cJSON_Parse(buf);
    WT_EQ_INT(count_readings(&b, WT_M_FAC_FAN_RPM),
              cJSON_GetArraySize(cJSON_GetObjectItem(tj, "Fans")));
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tj, "Temperatures"), 0);
    WT_EQ_INT(count_readings(&b, WT_M_FAC_TEMP_C),
              cJSON_GetArraySize(cJSON_GetObjectItem(tj, "Temperatures")));
    WT_NEAR(reading_value(&b, WT_M_FAC_TEMP_C,
                          "source=\"redfish\",target=\"bmc\",point=\"System.Embedded.1/CPU1_Temp\","
                          "kind=\"chassis\",name=\"Computer System Chassis\""),
            cJSON_GetObjectItem(t0, "ReadingCelsius")->valuedouble, 0);
    cJSON_Delete(tj);
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}

WT_TEST(a_service_that_is_not_there_fails_the_poll)
{
    int port = start_server(RACK, NULL);
    stop_server();
    struct wt_config c;
    void *st = open_plain(&c, port, NULL);
    struct wt_batch b = {0};
    struct wt_err err;
    WT_ASSERT(poll_once(st, T0, &b, &err) < 0);
    WT_CONTAINS(err.msg, "http://127.0.0.1");
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
}

static void load_fails(const char *yaml, const char *want)
{
    struct wt_config c;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    if (wt_config_load_string("r.yaml", yaml, strlen(yaml), &c, &err) == 0)
        wt_test_fail(__FILE__, __LINE__, "accepted, expected \"%s\"", want);
    WT_CONTAINS(err.msg, want);
    wt_config_free(&c);
}

WT_TEST(config_errors)
{
    load_fails(HEAD "        url: http://h\n        timeout: soon\n",
               "r.yaml:6: collectors.redfish.targets[0].timeout");
    load_fails(HEAD "        url: http://h\n        auth: digest\n",
               "r.yaml:6: collectors.redfish.targets[0].auth");
    load_fails(HEAD "        url: http://h\n        auth: session\n", "auth: needs username");
    load_fails(HEAD "        url: http://h\n        max_response_bytes: 10\n",
               "collectors.redfish.targets[0].max_response_bytes");
    load_fails("collectors:\n  redfish:\n    targets:\n      - name: this-name-is-far-too-long-x\n"
               "        url: http://h\n",
               "r.yaml:4: collectors.redfish.targets[0].name");
    load_fails("collectors:\n  redfish:\n    targets:\n      - url: http://h\n",
               "collectors.redfish.targets[0].name: required");
    load_fails("collectors:\n  redfish:\n    targets: {name: a}\n", "collectors.redfish.targets");
    struct wt_config c;
    struct wt_err err = {{0}};
    const char *ok = HEAD "        url: https://10.0.0.1/redfish/v1/\n        interval: 30s\n"
                          "      - name: pdu-2.a\n        url: http://[::1]:8000\n";
    wt_config_defaults(&c);
    WT_EQ_INT(wt_config_load_string("r.yaml", ok, strlen(ok), &c, &err), 0);
    struct wt_target t[WT_MAX_TARGETS];
    WT_EQ_INT(wt_redfish_collector.targets(&c, t, WT_MAX_TARGETS), 2);
    WT_EQ_STR(t[0].name, "bmc");
    WT_EQ_INT(t[0].interval_ns, 30 * WT_NS_PER_S);
    WT_EQ_STR(t[1].name, "pdu-2.a");
    wt_config_free(&c);
}

WT_TEST(a_paged_collection_is_walked_to_its_last_page)
{
    /* The PDU's 11 outlets, served as a first page of 4 and a second of 7 (nextLink). */
    const char *tree = copy_tree("../shared/data/redfish/public-pdu");
    char cmd[2048];
    snprintf(
        cmd, sizeof cmd,
        "/usr/bin/python3 -c 'import json,os,sys; d=sys.argv[1]+\"/PowerEquipment/RackPDUs/1/"
        "Outlets\"; c=json.load(open(d+\"/index.json\")); m=c[\"Members\"]; "
        "os.makedirs(d+\"/Page2\"); "
        "json.dump(dict(c, Members=m[4:]), open(d+\"/Page2/index.json\", \"w\")); "
        "c[\"Members\"]=m[:4]; "
        "c[\"Members@odata.nextLink\"]=\"/redfish/v1/PowerEquipment/RackPDUs/1/Outlets/Page2\"; "
        "json.dump(c, open(d+\"/index.json\", \"w\"))' '%s'",
        tree);
    WT_EQ_INT(system(cmd), 0);
    int port = start_server(tree, NULL);
    struct wt_config c;
    void *st = open_plain(&c, port, NULL);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    /* Every outlet with readings, on both pages (A4 and A5 of the mockup give none). */
    size_t outlets = 0;
    const char *ids[] = {"A1", "A2", "A3", "B1", "B2", "B3", "C1", "C2", "C3"};
    for (size_t k = 0; k < 9; k++) {
        char lb[WT_LABELS_LEN];
        snprintf(lb, sizeof lb, "point=\"pdu1/%s\",kind=\"outlet\"", ids[k]);
        bool found = false;
        for (size_t i = 0; i < b.len && !found; i++)
            found = strstr(b.r[i].labels, lb) != NULL;
        outlets += found;
    }
    WT_EQ_INT(outlets, 9);
    WT_EQ_INT(requests("GET /redfish/v1/PowerEquipment/RackPDUs/1/Outlets/Page2 200"), 1);
    /* Both pages' members were visited: C3 is on the second page. */
    WT_ASSERT(requests("GET /redfish/v1/PowerEquipment/RackPDUs/1/Outlets/C3 200") >= 2);
    wt_redfish_collector.close(st);
    wt_config_free(&c);
    wt_batch_free(&b);
    stop_server();
}
