/* SPDX-License-Identifier: MIT */
/*
 * Modbus collector against a real Modbus TCP server (tests/peers/modbus_meter, libmodbus's own
 * server API): registers of every type and word order, units and scale, counters that wrap and
 * reset, a Modbus exception on one block, a meter that drops the connection or hangs; plus the
 * decoder on its own and the config errors (file:line and path).
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/modbus.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/reading.h"
#include "readings.h"
#include "runner.h"

#define T0 (1764439200LL * WT_NS_PER_S)

static char regs_path[512], mode_path[512], log_path[512];
static pid_t peer;

/* Starts the peer meter; returns its port. */
static int start_peer(const char *regs)
{
    char port_path[512];
    snprintf(regs_path, sizeof regs_path, "%s/regs", wt_test_dir());
    snprintf(mode_path, sizeof mode_path, "%s/mode", wt_test_dir());
    snprintf(port_path, sizeof port_path, "%s/port", wt_test_dir());
    snprintf(log_path, sizeof log_path, "%s/requests", wt_test_dir());
    wt_test_write(regs_path, "%s", regs);
    wt_test_write(mode_path, "ok\n");
    const char *bin = wt_test_build_path("tests/peers/modbus_meter");
    peer = fork();
    if (peer == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execl(bin, bin, port_path, regs_path, mode_path, log_path, (char *)NULL);
        _exit(127);
    }
    WT_ASSERT(peer > 0);
    for (int i = 0; i < 100; i++) {
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
    wt_test_fail(__FILE__, __LINE__, "the peer %s did not start", bin);
}

/* The read requests the peer answered: lines "FUNCTION ADDRESS COUNT". */
static int peer_requests(char *out, size_t n)
{
    FILE *f = fopen(log_path, "r");
    int lines = 0;
    size_t len = 0;
    char line[64];
    out[0] = '\0';
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        if (len + strlen(line) < n) {
            memcpy(out + len, line, strlen(line) + 1);
            len += strlen(line);
        }
    }
    fclose(f);
    return lines;
}

static void stop_peer(void)
{
    if (peer > 0) {
        kill(peer, SIGTERM);
        waitpid(peer, NULL, 0);
        peer = 0;
    }
}

static void load(struct wt_config *c, const char *yaml)
{
    struct wt_err err = {{0}};
    wt_config_defaults(c);
    int rc = wt_config_load_string("m.yaml", yaml, strlen(yaml), c, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "config: %s", err.msg);
}

static void load_fails(const char *yaml, const char *want)
{
    struct wt_config c;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    int rc = wt_config_load_string("m.yaml", yaml, strlen(yaml), &c, &err);
    if (rc == 0)
        wt_test_fail(__FILE__, __LINE__, "accepted, expected \"%s\"", want);
    WT_CONTAINS(err.msg, want);
    wt_config_free(&c);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the decoder ---- */

WT_TEST(decode_every_type_and_word_order)
{
    uint64_t raw;
    double v;
    uint16_t a[4] = {0x1234, 0x5678, 0x9abc, 0xdef0};
    wt_modbus_decode(a, WT_MB_U16, false, &raw, &v);
    WT_NEAR(v, 0x1234, 0);
    uint16_t neg[2] = {0xfffe, 0x0000};
    wt_modbus_decode(neg, WT_MB_I16, false, &raw, &v);
    WT_NEAR(v, -2, 0);
    wt_modbus_decode(a, WT_MB_U32, false, &raw, &v);
    WT_NEAR(v, 0x12345678, 0);
    wt_modbus_decode(a, WT_MB_U32, true, &raw, &v);
    WT_NEAR(v, 0x56781234, 0);
    uint16_t n32[2] = {0xffff, 0xff85}; /* -123 big-endian words */
    wt_modbus_decode(n32, WT_MB_I32, false, &raw, &v);
    WT_NEAR(v, -123, 0);
    uint16_t n32l[2] = {0xff85, 0xffff};
    wt_modbus_decode(n32l, WT_MB_I32, true, &raw, &v);
    WT_NEAR(v, -123, 0);
    wt_modbus_decode(a, WT_MB_U64, false, &raw, &v);
    WT_EQ_U64(raw, 0x123456789abcdef0ULL);
    wt_modbus_decode(a, WT_MB_U64, true, &raw, &v);
    WT_EQ_U64(raw, 0xdef09abc56781234ULL);
    uint16_t f[2] = {0x43f7, 0x0000}; /* 494.0f */
    wt_modbus_decode(f, WT_MB_FLOAT32, false, &raw, &v);
    WT_NEAR(v, 494.0, 0);
    uint16_t fl[2] = {0x0000, 0x43f7};
    wt_modbus_decode(fl, WT_MB_FLOAT32, true, &raw, &v);
    WT_NEAR(v, 494.0, 0);
    WT_EQ_INT(wt_modbus_type_words(WT_MB_U64), 4);
    WT_EQ_INT(wt_modbus_type_words(WT_MB_FLOAT32), 2);
}

/* ---- config errors ---- */

#define HEAD "collectors:\n  modbus:\n    targets:\n"

WT_TEST(a_u64_counter_near_2_64_then_reset_never_goes_down)
{
    /* Found by fuzzing: the meter's first reading plus what followed was summed in 64 bits. */
    struct wt_config c;
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    void *st = NULL;
    load(&c, "collectors:\n  modbus:\n    targets:\n      - name: m\n        address: h\n"
             "        registers:\n          - {name: e, address: 0, type: u64, metric: energy}\n");
    WT_EQ_INT(wt_modbus_collector.open_target(&c, 0, &st, &err), 0);
    const uint16_t near[4] = {0xffff, 0xffff, 0xffff, 0xff00}, small[4] = {0, 0, 0, 0x100};
    wt_modbus_feed(st, 0, 0, near, 4);
    WT_EQ_INT(wt_modbus_readings(st, 1000000000LL, &b), 0);
    WT_EQ_INT(b.len, 1);
    double first = b.r[0].value;
    WT_NEAR(first, 18446744073709551360.0, 1e5);
    wt_batch_clear(&b);
    wt_modbus_feed(st, 0, 0, small, 4); /* the meter was cleared */
    WT_EQ_INT(wt_modbus_readings(st, 2000000000LL, &b), 0);
    WT_EQ_INT(b.len, 1);
    WT_ASSERT(b.r[0].value >= first);
    /* A poll that read nothing exports nothing. */
    wt_batch_clear(&b);
    WT_EQ_INT(wt_modbus_readings(st, 3000000000LL, &b), 0);
    WT_EQ_INT(b.len, 0);
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
}

WT_TEST(a_scale_factor_that_changes_keeps_the_total)
{
    /* Found by fuzzing: the whole count was rescaled by the new sunssf (100 J became 10 J). */
    struct wt_config c;
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    void *st = NULL;
    load(&c, "collectors:\n  modbus:\n    targets:\n      - name: m\n        address: h\n"
             "        registers:\n          - {name: e, address: 0, type: u16, metric: energy,\n"
             "             scale_register: 1}\n");
    WT_EQ_INT(wt_modbus_collector.open_target(&c, 0, &st, &err), 0);
    const uint16_t p1[2] = {100, 0}, p2[2] = {100, 0xffff}, p3[2] = {200, 0xffff};
    wt_modbus_feed(st, 0, 0, p1, 2);
    WT_EQ_INT(wt_modbus_readings(st, 1000000000LL, &b), 0);
    WT_EQ_INT(b.len, 1);
    WT_NEAR(b.r[0].value, 100, 1e-9);
    wt_batch_clear(&b);
    wt_modbus_feed(st, 0, 0, p2, 2); /* sunssf 0 -> -1 */
    WT_EQ_INT(wt_modbus_readings(st, 2000000000LL, &b), 0);
    WT_NEAR(b.r[0].value, 100, 1e-9);
    wt_batch_clear(&b);
    wt_modbus_feed(st, 0, 0, p3, 2); /* 100 more raw at 0.1 J */
    WT_EQ_INT(wt_modbus_readings(st, 3000000000LL, &b), 0);
    WT_NEAR(b.r[0].value, 110, 1e-9);
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
}

WT_TEST(config_errors_name_file_line_and_path)
{
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1:1502\n        registers:\n"
                    "          - {name: p, address: 0, type: u24, metric: power}\n",
               "m.yaml:7: collectors.modbus.targets[0].registers[0].type");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n        registres: []\n",
               "m.yaml:6: collectors.modbus.targets[0].registres");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n        registers:\n"
                    "          - {name: p, address: 0, metric: power, unit: kWh}\n",
               "unit: expected one of W, kW, MW for metric power (got \"kWh\")");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n        registers:\n"
                    "          - {name: p, address: 65535, type: u32, metric: power}\n",
               "runs past register 65535");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n        registers:\n"
                    "          - {name: p, address: 0, metric: watts}\n",
               "metric: expected one of power, energy");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n        registers:\n"
                    "          - {name: p, address: 0, metric: power}\n"
                    "      - name: m1\n        address: 127.0.0.2\n        registers:\n"
                    "          - {name: p, address: 0, metric: power}\n",
               "m.yaml:8: collectors.modbus.targets[1].name: \"m1\" is used by another target");
    load_fails(HEAD "      - name: 'bad name'\n        address: 127.0.0.1\n        registers:\n"
                    "          - {name: p, address: 0, metric: power}\n",
               "collectors.modbus.targets[0].name");
    load_fails(HEAD "      - name: m1\n        address: 'host:99999'\n        registers:\n"
                    "          - {name: p, address: 0, metric: power}\n",
               "m.yaml:5: collectors.modbus.targets[0].address");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n        registers:\n"
                    "          - {name: p, address: 0, metric: power}\n"
                    "          - {name: q, address: 1, metric: power, point: p}\n",
               "point: \"p\" already has a power register (p)");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n        unit_id: 300\n"
                    "        registers:\n          - {name: p, address: 0, metric: power}\n",
               "m.yaml:6: collectors.modbus.targets[0].unit_id");
    load_fails(HEAD "      - name: m1\n        address: 127.0.0.1\n",
               "collectors.modbus.targets[0].registers: expected a list of registers");
}

WT_TEST(targets_listed_with_their_intervals)
{
    struct wt_config c;
    load(&c, HEAD "      - name: a\n        address: 10.0.0.1\n        interval: 30s\n"
                  "        registers: [{name: p, address: 0, metric: power}]\n"
                  "      - name: b.2\n        address: '[::1]:1502'\n"
                  "        registers: [{name: p, address: 0, metric: power}]\n");
    struct wt_target t[WT_MAX_TARGETS];
    WT_EQ_INT(wt_modbus_collector.targets(&c, t, WT_MAX_TARGETS), 2);
    WT_EQ_STR(t[0].name, "a");
    WT_EQ_INT(t[0].interval_ns, 30 * WT_NS_PER_S);
    WT_EQ_STR(t[1].name, "b.2");
    WT_EQ_INT(t[1].interval_ns, 0);
    wt_config_free(&c);
    /* No section: no targets. */
    wt_config_defaults(&c);
    WT_EQ_INT(wt_modbus_collector.targets(&c, t, WT_MAX_TARGETS), 0);
}

/* ---- against the peer ---- */

static const char *meter_regs =
    "holding 0 u16 big 2301\n"               /* voltage, 0.1 V */
    "holding 1 i16 big -125\n"               /* temperature, 0.1 C */
    "holding 2 u32 big 123456\n"             /* power W */
    "holding 4 u32 little 654321\n"          /* power W, CDAB */
    "holding 6 i32 big -40000\n"             /* current mA (export: reverse flow) */
    "holding 8 i32 little -70000\n"          /* i32 CDAB */
    "holding 10 float32 big 494.25\n"        /* kW */
    "holding 12 float32 little 0.97\n"       /* power factor */
    "holding 14 u64 big 81985529216486895\n" /* energy Wh, 0x0123456789abcdef */
    "holding 18 u64 little 1234567890123\n"
    "input 100 u32 big 4294967000\n" /* energy kWh counter near the u32 wrap */
    "input 102 float32 big 1500.5\n" /* water m3 */
    "input 104 u16 big 2500\n"       /* flow L/min */
    "input 105 u32 little 360\n";    /* heat kWh */

#define METER_YAML                                                                                 \
    HEAD                                                                                           \
        "      - name: m1\n        address: 127.0.0.1:%d\n        unit_id: 7\n"                    \
        "        timeout: 500ms\n        rack: r12\n        zone: hall-a\n"                        \
        "        registers:\n"                                                                     \
        "          - {name: v, address: 0, type: u16, scale: 0.1, metric: voltage}\n"              \
        "          - {name: t, address: 1, type: i16, scale: 0.1, metric: temperature}\n"          \
        "          - {name: pbig, address: 2, type: u32, metric: power}\n"                         \
        "          - {name: plittle, address: 4, type: u32, word_order: little, metric: power}\n"  \
        "          - {name: i, address: 6, type: i32, unit: mA, metric: current}\n"                \
        "          - {name: il, address: 8, type: i32, word_order: little, metric: current}\n"     \
        "          - {name: pkw, address: 10, type: float32, unit: kW, metric: power}\n"           \
        "          - {name: pf, address: 12, type: float32, word_order: little,"                   \
        " metric: power_factor}\n"                                                                 \
        "          - {name: e64, address: 14, type: u64, unit: Wh, metric: energy}\n"              \
        "          - {name: e64l, address: 18, type: u64, word_order: little, metric: energy}\n"   \
        "          - {name: ekwh, address: 100, function: input, type: u32, unit: kWh,"            \
        " metric: energy, kind: chiller}\n"                                                        \
        "          - {name: water, address: 102, function: input, type: float32, metric: water}\n" \
        "          - {name: flow, address: 104, function: input, unit: L/min, metric: flow}\n"     \
        "          - {name: heat, address: 105, function: input, type: u32,"                       \
        " word_order: little, unit: kWh, metric: heat}\n"

#define LR(point, kind)                                                                            \
    "source=\"modbus\",target=\"m1\",point=\"" point "\",kind=\"" kind "\",name=\"" point          \
    "\",rack=\"r12\",zone=\"hall-a\""

/* up carries the placement of the target too. */
#define UPL "source=\"modbus\",target=\"m1\",rack=\"r12\",zone=\"hall-a\""

static void *open_meter(struct wt_config *c, int port)
{
    char yaml[4096];
    snprintf(yaml, sizeof yaml, METER_YAML, port);
    load(c, yaml);
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = wt_modbus_collector.open_target(c, 0, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open_target: %s", err.msg);
    return st;
}

static void poll_ok(void *st, int64_t t, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    wt_batch_clear(b);
    int rc = wt_modbus_collector.poll(st, t, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %s", err.msg);
}

WT_TEST(registers_of_every_type_and_word_order)
{
    int port = start_peer(meter_regs);
    struct wt_config c;
    void *st = open_meter(&c, port);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_VOLTAGE_V, LR("v", "meter")), 230.1, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_FAC_TEMP_C, LR("t", "meter")), -12.5, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W, LR("pbig", "meter")), 123456, 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W, LR("plittle", "meter")), 654321, 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_CURRENT_A, LR("i", "meter")), -40.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_FAC_CURRENT_A, LR("il", "meter")), -70000, 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W, LR("pkw", "meter")), 494250, 1e-6);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_FACTOR, LR("pf", "meter")), 0.97, 1e-6);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, LR("e64", "meter")), 81985529216486895.0 * 3600,
            1e6);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, LR("e64l", "meter")), 1234567890123.0, 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, LR("ekwh", "chiller")), 4294967000.0 * 3.6e6, 1);
    WT_NEAR(reading_value(&b, WT_M_FAC_WATER_M3, LR("water", "meter")), 1500.5, 1e-3);
    WT_NEAR(reading_value(&b, WT_M_FAC_FLOW_M3S, LR("flow", "meter")), 2500.0 / 60000, 1e-12);
    WT_NEAR(reading_value(&b, WT_M_FAC_HEAT_J, LR("heat", "meter")), 360 * 3.6e6, 0);
    WT_NEAR(reading_value(&b, WT_M_FAC_UP, UPL), 1, 0);
    WT_EQ_INT(b.len, 15);
    /* Fourteen registers, two requests: holding 0..21 and input 100..106 (3 = holding). */
    char reqs[512];
    WT_EQ_INT(peer_requests(reqs, sizeof reqs), 2);
    WT_EQ_STR(reqs, "3 0 22\n4 100 7\n");

    /* The kWh counter wraps past 2^32: the total keeps growing by the 500 kWh it counted. */
    wt_test_write(regs_path, "%s", meter_regs);
    FILE *f = fopen(regs_path, "a");
    fprintf(f, "input 100 u32 big 204\ninput 102 float32 big 1501.25\n");
    fclose(f);
    poll_ok(st, T0 + 5 * WT_NS_PER_S, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, LR("ekwh", "chiller")),
            (4294967000.0 + 500) * 3.6e6, 1);
    WT_NEAR(reading_value(&b, WT_M_FAC_WATER_M3, LR("water", "meter")), 1501.25, 1e-3);

    /* The water meter is reset to 2 m3: a new baseline, never a negative step. */
    f = fopen(regs_path, "a");
    fprintf(f, "input 102 float32 big 2\n");
    fclose(f);
    poll_ok(st, T0 + 10 * WT_NS_PER_S, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_WATER_M3, LR("water", "meter")), 1503.25, 1e-3);

    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
    stop_peer();
}

WT_TEST(an_exception_skips_only_its_block)
{
    int port = start_peer("holding 0 u16 big 2301\ninput 104 u16 big 600\nexception 104\n");
    struct wt_config c;
    void *st = open_meter(&c, port);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_VOLTAGE_V, LR("v", "meter")), 230.1, 1e-9);
    /* The input block 100..106 answered "illegal data address": its registers are absent. */
    WT_ASSERT(!find_reading(&b, WT_M_FAC_FLOW_M3S, LR("flow", "meter")));
    WT_ASSERT(!find_reading(&b, WT_M_FAC_HEAT_J, LR("heat", "meter")));
    WT_NEAR(reading_value(&b, WT_M_FAC_UP, UPL), 1, 0);
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
    stop_peer();
}

WT_TEST(a_dropped_connection_fails_one_poll_then_reconnects)
{
    int port = start_peer(meter_regs);
    struct wt_config c;
    void *st = open_meter(&c, port);
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    poll_ok(st, T0, &b);
    wt_test_write(mode_path, "drop\n");
    wt_batch_clear(&b);
    int rc = wt_modbus_collector.poll(st, T0 + WT_NS_PER_S, &b, &err);
    WT_ASSERT(rc < 0);
    WT_CONTAINS(err.msg, "127.0.0.1");
    wt_test_write(mode_path, "ok\n");
    poll_ok(st, T0 + 2 * WT_NS_PER_S, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W, LR("pbig", "meter")), 123456, 0);
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
    stop_peer();
}

WT_TEST(a_hung_meter_fails_within_its_timeout)
{
    int port = start_peer(meter_regs);
    struct wt_config c;
    void *st = open_meter(&c, port); /* timeout: 500ms */
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    wt_test_write(mode_path, "hang\n");
    double t0 = now_s();
    int rc = wt_modbus_collector.poll(st, T0, &b, &err);
    double took = now_s() - t0;
    WT_ASSERT(rc < 0);
    WT_CONTAINS(err.msg, "timed out");
    /* Bounded by the timeout (one request), never a hang: a loose upper bound, not a benchmark. */
    WT_ASSERT(took < 5.0);
    wt_test_write(mode_path, "ok\n");
    poll_ok(st, T0 + WT_NS_PER_S, &b);
    WT_NEAR(reading_value(&b, WT_M_FAC_UP, UPL), 1, 0);
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
    stop_peer();
}

WT_TEST(a_meter_that_is_not_there_fails_the_poll)
{
    /* A port that nobody listens on: the peer is started and stopped to find one. */
    int port = start_peer("");
    stop_peer();
    struct wt_config c;
    void *st = open_meter(&c, port);
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    int rc = wt_modbus_collector.poll(st, T0, &b, &err);
    WT_ASSERT(rc < 0);
    WT_CONTAINS(err.msg, "cannot connect to 127.0.0.1");
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
}

/*
 * A listener that never accepts, with its accept queue full: the kernel drops further SYNs, so a
 * connect neither completes nor is refused (a black-holed address). Returns its port; the
 * sockets stay open until the test's process ends.
 */
static int black_hole_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    WT_ASSERT(l >= 0);
    WT_EQ_INT(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    WT_EQ_INT(listen(l, 0), 0);
    WT_EQ_INT(getsockname(l, (struct sockaddr *)&a, &len), 0);
    /* Fill the queue: connects complete until it is full; the first one left pending shows it. */
    for (int i = 0; i < 16; i++) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        WT_ASSERT(c >= 0);
        if (connect(c, (struct sockaddr *)&a, sizeof a) != 0 && errno == EINPROGRESS) {
            struct timespec ts = {0, 200 * 1000000};
            nanosleep(&ts, NULL);
            int e = 0;
            socklen_t el = sizeof e;
            char probe;
            /* still not connected after 200 ms: SYNs are being dropped */
            if (getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0 &&
                send(c, &probe, 0, MSG_NOSIGNAL) < 0 && errno == EAGAIN)
                break;
        }
    }
    return ntohs(a.sin_port);
}

/* A connect that times out says so, with the timeout, not "Operation now in progress". */
WT_TEST(a_connect_timeout_says_timed_out)
{
    int port = black_hole_port();
    struct wt_config c;
    void *st = open_meter(&c, port); /* timeout: 500ms */
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    int rc = wt_modbus_collector.poll(st, T0, &b, &err);
    WT_ASSERT(rc < 0);
    char want[96];
    snprintf(want, sizeof want, "cannot connect to 127.0.0.1:%d: connect timed out after 0.5 s",
             port);
    WT_CONTAINS(err.msg, want);
    WT_ASSERT(!strstr(err.msg, "in progress"));
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
}

/*
 * A SunSpec model 203 meter (wye three-phase, integer values with scale-factor registers):
 * register offsets come from SunSpec's own model file, so the config is written as a site would
 * write it from the meter's map.
 */
static int sunspec_offset(const cJSON *points, const char *name)
{
    int off = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, points)
    {
        if (strcmp(cJSON_GetObjectItem(p, "name")->valuestring, name) == 0)
            return off;
        off += cJSON_GetObjectItem(p, "size")->valueint;
    }
    wt_test_fail(__FILE__, __LINE__, "no point %s in model 203", name);
}

WT_TEST(sunspec_model_203_with_scale_factors)
{
    const char *path =
        wt_test_src_path("../shared/data/other/modbus-sunspec-models/model_203.json");
    FILE *f = fopen(path, "r");
    WT_ASSERT(f != NULL);
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *model = cJSON_Parse(buf);
    const cJSON *points = cJSON_GetObjectItem(cJSON_GetObjectItem(model, "group"), "points");
    WT_ASSERT(cJSON_IsArray(points));
    /* Model 203 after "SunS" (2 registers) and the common model 1 (2 + 66) at 40000. */
    int base = 40000 + 2 + 68;
    int w = base + sunspec_offset(points, "W"), wsf = base + sunspec_offset(points, "W_SF");
    int a = base + sunspec_offset(points, "A"), asf = base + sunspec_offset(points, "A_SF");
    int v = base + sunspec_offset(points, "PhVphA"), vsf = base + sunspec_offset(points, "V_SF");
    int pf = base + sunspec_offset(points, "PF"), pfsf = base + sunspec_offset(points, "PF_SF");
    int e = base + sunspec_offset(points, "TotWhImp");
    int esf = base + sunspec_offset(points, "TotWh_SF");
    cJSON_Delete(model);
    char regs[1024], yaml[4096];
    snprintf(regs, sizeof regs,
             "holding %d i16 big -4523\nholding %d i16 big -1\n"  /* W: -452.3 W (export) */
             "holding %d i16 big 1234\nholding %d i16 big -2\n"   /* A: 12.34 A */
             "holding %d i16 big 2301\nholding %d i16 big -1\n"   /* PhVphA: 230.1 V */
             "holding %d i16 big 95\nholding %d i16 big 0\n"      /* PF: 95 % */
             "holding %d u32 big 123456\nholding %d i16 big 1\n", /* TotWhImp: 1234560 Wh */
             w, wsf, a, asf, v, vsf, pf, pfsf, e, esf);
    int port = start_peer(regs);
    snprintf(yaml, sizeof yaml,
             HEAD
             "      - name: m1\n        address: 127.0.0.1:%d\n        registers:\n"
             "          - {name: W, address: %d, type: i16, scale_register: %d, metric: power}\n"
             "          - {name: A, address: %d, type: i16, scale_register: %d,"
             " metric: current}\n"
             "          - {name: PhVphA, address: %d, type: i16, scale_register: %d,"
             " metric: voltage}\n"
             "          - {name: PF, address: %d, type: i16, scale_register: %d, unit: '%%',"
             " metric: power_factor}\n"
             "          - {name: TotWhImp, address: %d, type: u32, scale_register: %d,"
             " unit: Wh, metric: energy}\n",
             port, w, wsf, a, asf, v, vsf, pf, pfsf, e, esf);
    struct wt_config c;
    load(&c, yaml);
    void *st = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_modbus_collector.open_target(&c, 0, &st, &err), 0);
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
#define LS(point)                                                                                  \
    "source=\"modbus\",target=\"m1\",point=\"" point "\",kind=\"meter\",name=\"" point "\""
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_W, LS("W")), -452.3, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_FAC_CURRENT_A, LS("A")), 12.34, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_FAC_VOLTAGE_V, LS("PhVphA")), 230.1, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_FAC_POWER_FACTOR, LS("PF")), 0.95, 1e-12);
    WT_NEAR(reading_value(&b, WT_M_FAC_ENERGY_J, LS("TotWhImp")), 1234560.0 * 3600, 1e-3);
    WT_EQ_INT(b.len, 6); /* five readings and up: the scale-factor registers are not exported */
    /* A scale factor of 0x8000 means "not implemented": that reading is absent. */
    FILE *rf = fopen(regs_path, "a");
    fprintf(rf, "holding %d raw 0x8000\n", wsf);
    fclose(rf);
    poll_ok(st, T0 + WT_NS_PER_S, &b);
    WT_ASSERT(!find_reading(&b, WT_M_FAC_POWER_W, LS("W")));
    WT_NEAR(reading_value(&b, WT_M_FAC_CURRENT_A, LS("A")), 12.34, 1e-9);
    wt_batch_free(&b);
    wt_modbus_collector.close(st);
    wt_config_free(&c);
    stop_peer();
}
