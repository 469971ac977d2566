/* SPDX-License-Identifier: MIT */
/*
 * The IPMI DCMI collector's pure parts: the decoding of Get Power Reading's answer (values, the
 * state bit, every completion code and malformed answers), the skew of a peer's clock from a
 * whole-second stamp, and the config errors (file:line and path). The collector against a BMC
 * (OpenIPMI's ipmi_sim with tests/peers/ipmi_sim/dcmi_power.so) is tests/cli/test_ipmi.sh.
 */
#include <errno.h>
#include <stdint.h>

#include "collect/clocksync.h"
#include "collect/ipmi.h"
#include "core/clock.h"
#include "core/config.h"
#include "runner.h"

/* An answer as ipmi_cmd_raw returns it: command, completion code, group, then the data. */
static size_t answer(uint8_t *rs, unsigned cur, unsigned mn, unsigned mx, unsigned avg,
                     uint32_t stamp, uint32_t period_ms, uint8_t state)
{
    const unsigned w[] = {cur, mn, mx, avg};
    rs[0] = 0x02;
    rs[1] = 0x00;
    rs[2] = 0xdc;
    for (int i = 0; i < 4; i++) {
        rs[3 + 2 * i] = (uint8_t)(w[i] & 0xff);
        rs[4 + 2 * i] = (uint8_t)(w[i] >> 8);
    }
    for (int i = 0; i < 4; i++) {
        rs[11 + i] = (uint8_t)(stamp >> (8 * i));
        rs[15 + i] = (uint8_t)(period_ms >> (8 * i));
    }
    rs[19] = state;
    return 20;
}

WT_TEST(power_reading_decodes_watts_stamp_period_and_state)
{
    uint8_t rs[32];
    struct wt_dcmi_power p;
    struct wt_err err = {{0}};
    size_t n = answer(rs, 412, 380, 1455, 417, 1764763200u, 60000, 0x40);
    WT_EQ_INT(wt_ipmi_parse_power(rs, n, &p, &err), 0);
    WT_NEAR(p.current_w, 412, 0);
    WT_NEAR(p.minimum_w, 380, 0);
    WT_NEAR(p.maximum_w, 1455, 0); /* the high byte counts */
    WT_NEAR(p.average_w, 417, 0);
    WT_EQ_U64(p.stamp, 1764763200u);
    WT_NEAR(p.period_s, 60, 1e-12);
    WT_ASSERT(p.active);
    /* bit 6 clear: "no power measurement available"; other bits are reserved */
    n = answer(rs, 0, 0, 0, 0, 0, 0, 0xbf);
    WT_EQ_INT(wt_ipmi_parse_power(rs, n, &p, &err), 0);
    WT_ASSERT(!p.active);
    /* longer answers (a BMC padding) are read the same */
    n = answer(rs, 65535, 1, 2, 3, 1, 1, 0x40);
    WT_EQ_INT(wt_ipmi_parse_power(rs, n + 4, &p, &err), 0);
    WT_NEAR(p.current_w, 65535, 0);
    WT_NEAR(p.period_s, 0.001, 1e-12);
}

WT_TEST(power_reading_completion_codes_each_say_what)
{
    uint8_t rs[32];
    struct wt_dcmi_power p;
    struct {
        uint8_t cc;
        int rc;
        const char *msg;
    } cases[] = {
        {0xc1, -ENOTSUP, "does not support DCMI power readings"},
        {0xcc, -ENOTSUP, "0xCC: invalid data field"},
        {0xd4, -EACCES, "set privilege: operator or admin"},
        {0xc0, -EBUSY, "busy"},
        {0xff, -EPROTO, "completion code 0xFF"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wt_err err = {{0}};
        size_t n = answer(rs, 412, 380, 455, 417, 1764763200u, 60000, 0x40);
        rs[1] = cases[i].cc;
        /* an error answer is usually the command and the code alone */
        WT_EQ_INT(wt_ipmi_parse_power(rs, i % 2 ? 2 : n, &p, &err), cases[i].rc);
        WT_CONTAINS(err.msg, cases[i].msg);
    }
}

WT_TEST(power_reading_malformed_answers_are_refused)
{
    uint8_t rs[32];
    struct wt_dcmi_power p;
    struct wt_err err = {{0}};
    size_t n = answer(rs, 412, 380, 455, 417, 1764763200u, 60000, 0x40);
    WT_EQ_INT(wt_ipmi_parse_power(rs, n - 1, &p, &err), -EPROTO);
    WT_CONTAINS(err.msg, "an answer of 19 bytes, expected 20");
    WT_EQ_INT(wt_ipmi_parse_power(rs, 1, &p, &err), -EPROTO);
    WT_EQ_INT(wt_ipmi_parse_power(rs, 0, &p, &err), -EPROTO);
    rs[2] = 0x00; /* PICMG's group, not DCMI's */
    WT_EQ_INT(wt_ipmi_parse_power(rs, n, &p, &err), -EPROTO);
    WT_CONTAINS(err.msg, "group 0x00");
}

WT_TEST(temperature_reading_decodes_signed_degrees_and_instances)
{
    /* 3 inlet sensors in all, 2 in this answer: 24 degrees (instance 1), -3 (instance 2) */
    const uint8_t rs[] = {0x10, 0x00, 0xdc, 3, 2, 24, 1, 0x83, 2};
    struct wt_dcmi_temps t;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_ipmi_parse_temps(rs, sizeof rs, &t, &err), 0);
    WT_EQ_INT(t.total, 3);
    WT_EQ_INT(t.n, 2);
    WT_NEAR(t.celsius[0], 24, 0);
    WT_EQ_INT(t.instance[0], 1);
    WT_NEAR(t.celsius[1], -3, 0);
    WT_EQ_INT(t.instance[1], 2);
    /* 127 is the largest reading; none at all is an answer too */
    const uint8_t hot[] = {0x10, 0x00, 0xdc, 1, 1, 0x7f, 1};
    WT_EQ_INT(wt_ipmi_parse_temps(hot, sizeof hot, &t, &err), 0);
    WT_NEAR(t.celsius[0], 127, 0);
    const uint8_t none[] = {0x10, 0x00, 0xdc, 0, 0};
    WT_EQ_INT(wt_ipmi_parse_temps(none, sizeof none, &t, &err), 0);
    WT_EQ_INT(t.total, 0);
    WT_EQ_INT(t.n, 0);
}

WT_TEST(temperature_reading_refusals_and_malformed_answers)
{
    struct wt_dcmi_temps t;
    struct wt_err err = {{0}};
    const uint8_t nocmd[] = {0x10, 0xc1};
    WT_EQ_INT(wt_ipmi_parse_temps(nocmd, sizeof nocmd, &t, &err), -ENOTSUP);
    WT_ASSERT(strstr(err.msg, "no DCMI inlet temperature") && strstr(err.msg, "0xC1"));
    const uint8_t nodata[] = {0x10, 0xcc};
    WT_EQ_INT(wt_ipmi_parse_temps(nodata, sizeof nodata, &t, &err), -ENOTSUP);
    const uint8_t priv[] = {0x10, 0xd4};
    WT_EQ_INT(wt_ipmi_parse_temps(priv, sizeof priv, &t, &err), -EACCES);
    const uint8_t other[] = {0x10, 0xc3};
    WT_EQ_INT(wt_ipmi_parse_temps(other, sizeof other, &t, &err), -EPROTO);
    WT_ASSERT(strstr(err.msg, "0xC3") != NULL);
    /* two temperatures promised, one given; nine promised; another group; too short */
    const uint8_t cut[] = {0x10, 0x00, 0xdc, 2, 2, 24, 1};
    WT_EQ_INT(wt_ipmi_parse_temps(cut, sizeof cut, &t, &err), -EPROTO);
    WT_ASSERT(strstr(err.msg, "2 temperatures in an answer of 7 bytes") != NULL);
    uint8_t nine[5 + 18] = {0x10, 0x00, 0xdc, 9, 9};
    WT_EQ_INT(wt_ipmi_parse_temps(nine, sizeof nine, &t, &err), -EPROTO);
    const uint8_t grp[] = {0x10, 0x00, 0xdd, 1, 1, 24, 1};
    WT_EQ_INT(wt_ipmi_parse_temps(grp, sizeof grp, &t, &err), -EPROTO);
    const uint8_t shrt[] = {0x10, 0x00, 0xdc};
    WT_EQ_INT(wt_ipmi_parse_temps(shrt, sizeof shrt, &t, &err), -EPROTO);
    WT_EQ_INT(wt_ipmi_parse_temps(shrt, 1, &t, &err), -EPROTO);
}

WT_TEST(bmc_key_is_hex_or_text_of_at_most_20_bytes)
{
    uint8_t k[20];
    unsigned n;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_ipmi_parse_k_g("0x00ff10Ab", k, &n, &err), 0);
    WT_EQ_INT(n, 4);
    WT_ASSERT(k[0] == 0x00 && k[1] == 0xff && k[2] == 0x10 && k[3] == 0xab);
    WT_EQ_INT(wt_ipmi_parse_k_g("0x0123456789abcdef0123456789abcdef01234567", k, &n, &err), 0);
    WT_EQ_INT(n, 20);
    WT_EQ_INT(wt_ipmi_parse_k_g("keyed-bmc", k, &n, &err), 0);
    WT_EQ_INT(n, 9);
    WT_ASSERT(memcmp(k, "keyed-bmc", 9) == 0);
    WT_EQ_INT(wt_ipmi_parse_k_g("", k, &n, &err), -EINVAL);
    WT_EQ_INT(wt_ipmi_parse_k_g("0x123", k, &n, &err), -EINVAL); /* odd */
    WT_ASSERT(strstr(err.msg, "even number of digits") != NULL);
    WT_EQ_INT(wt_ipmi_parse_k_g("0x0123456789abcdef0123456789abcdef0123456789", k, &n, &err),
              -EINVAL); /* 21 bytes */
    WT_EQ_INT(wt_ipmi_parse_k_g("0xzz", k, &n, &err), -EINVAL);
    WT_ASSERT(strstr(err.msg, "\"zz\"") != NULL);
    WT_EQ_INT(wt_ipmi_parse_k_g("twenty-one characters", k, &n, &err), -EINVAL);
    WT_ASSERT(strstr(err.msg, "at most 20 characters") != NULL);
}

WT_TEST(peer_skew_is_the_middle_of_what_the_stamps_allow)
{
    double skew, unc;
    const int64_t S = WT_NS_PER_S;
    /* asked at 100.2 s, answered at 100.4 s, stamped 100: the peer's time was in [100, 101) */
    wt_peer_skew(100, 100 * S + S / 5, 100 * S + 2 * S / 5, &skew, &unc);
    WT_NEAR(skew, 0.5 - 0.3, 1e-9);
    WT_NEAR(unc, 0.5 + 0.1, 1e-9);
    /* a peer 30 s behind, a quick round trip */
    wt_peer_skew(1764763170, 1764763200 * S, 1764763200 * S + 2 * WT_NS_PER_MS, &skew, &unc);
    WT_NEAR(skew, -29.501, 1e-6);
    WT_NEAR(unc, 0.501, 1e-9);
    WT_ASSERT(wt_peer_skew_beyond(skew, unc, 0.1));
    WT_ASSERT(!wt_peer_skew_beyond(skew, unc, 30));
    /* a skew the stamps' resolution explains is never beyond the bound */
    wt_peer_skew(1764763200, 1764763200 * S + 999 * WT_NS_PER_MS,
                 1764763200 * S + 999 * WT_NS_PER_MS, &skew, &unc);
    WT_NEAR(skew, -0.499, 1e-6);
    WT_ASSERT(!wt_peer_skew_beyond(skew, unc, 0.1));
    /* the clock stepped back between the reads: the later read alone */
    wt_peer_skew(100, 101 * S, 100 * S, &skew, &unc);
    WT_NEAR(skew, 0.5, 1e-9);
    WT_NEAR(unc, 0.5, 1e-9);
}

#define HEAD "collectors:\n  ipmi:\n    targets:\n"

static void load_fails(const char *yaml, const char *want)
{
    struct wt_config c;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    int rc = wt_config_load_string("i.yaml", yaml, strlen(yaml), &c, &err);
    if (rc == 0)
        wt_test_fail(__FILE__, __LINE__, "accepted, expected \"%s\"", want);
    WT_CONTAINS(err.msg, want);
    wt_config_free(&c);
}

WT_TEST(config_accepts_lan_and_inband_targets)
{
    const char *yaml = HEAD "      - {name: n1, host: 10.0.0.1, password_file: /p}\n"
                            "      - name: n2\n        host: bmc2.example:6230\n"
                            "        username: wattage\n        password_file: /p\n"
                            "        privilege: admin\n        cipher_suite: 17\n"
                            "        workarounds: [opensesspriv, supermicro20]\n"
                            "        timeout: 2s\n        interval: 30s\n        node: n2\n"
                            "      - {name: self, inband: true, driver: openipmi, "
                            "device: /dev/ipmi1}\n"
                            "      - {name: self2, inband: true, driver: auto}\n";
    struct wt_config c;
    struct wt_err err = {{0}};
    wt_config_defaults(&c);
    if (wt_config_load_string("i.yaml", yaml, strlen(yaml), &c, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "config: %s", err.msg);
    struct wt_target t[8];
    WT_EQ_INT(wt_ipmi_collector.targets(&c, t, 8), 4);
    WT_EQ_STR(t[1].name, "n2");
    WT_EQ_INT(t[1].interval_ns, 30 * WT_NS_PER_S);
    WT_EQ_INT(t[0].interval_ns, 0);
    WT_EQ_INT(c.collectors.ipmi.interval_ns, 10 * WT_NS_PER_S);
    wt_config_free(&c);
}

WT_TEST(config_errors_name_file_line_and_path)
{
    load_fails(HEAD "      - {name: n1}\n",
               "i.yaml:4: collectors.ipmi.targets[0].host: expected host (a BMC over the LAN) "
               "or inband: true");
    load_fails(HEAD "      - {name: n1, host: 10.0.0.1, inband: true}\n",
               "collectors.ipmi.targets[0].inband: host (over the LAN) and inband: true exclude");
    load_fails(HEAD "      - {name: n1, host: 10.0.0.1}\n",
               "collectors.ipmi.targets[0].password_file: required");
    load_fails(HEAD "      - {name: n1, host: \"10.0.0.1:99999\", password_file: /p}\n",
               "host: expected HOST or HOST:PORT (got \"10.0.0.1:99999\")");
    load_fails(HEAD "      - {name: n1, host: 10.0.0.1, password_file: /p, cipher_suite: 5}\n",
               "cipher_suite: expected a cipher suite of IPMI 2.0 that FreeIPMI speaks");
    load_fails(HEAD "      - {name: n1, host: 10.0.0.1, password_file: /p, privilege: root}\n",
               "privilege");
    load_fails(HEAD "      - name: n1\n        host: 10.0.0.1\n        password_file: /p\n"
                    "        workarounds: [opensesspriv, sloppy]\n",
               "i.yaml:7: collectors.ipmi.targets[0].workarounds[1]: expected one of authcap");
    load_fails(HEAD "      - {name: n1, inband: true, password_file: /p}\n",
               "password_file: only for LAN (host:) targets");
    load_fails(HEAD "      - {name: n1, host: 10.0.0.1, password_file: /p, device: /dev/ipmi0}\n",
               "device: only for in-band (inband: true) targets");
    load_fails(HEAD "      - {name: n1, host: 10.0.0.1, password_file: /p,"
                    " username: a-very-long-user-name}\n",
               "collectors.ipmi.targets[0].username");
    load_fails(HEAD "      - {name: n1, host: 10.0.0.1, password_file: /p, timeout: 10ms}\n",
               "timeout: expected a duration from 100ms to 1m");
    load_fails(HEAD "      - {name: n1, inband: true}\n      - {name: n1, inband: true}\n",
               "\"n1\" is used by another target");
}
