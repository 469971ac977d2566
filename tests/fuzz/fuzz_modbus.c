/* SPDX-License-Identifier: MIT */
/*
 * Modbus register decoding: a meter's registers as configured (collectors.modbus.targets,
 * loaded and checked like any config) and the words of up to four polls, decoded as a poll does
 * (wt_modbus_feed, wt_modbus_readings: type, word order, scale, unit, SunSpec scale factor,
 * counters that wrap or reset). The input is binary:
 *   byte 0          number of registers, 1 + b % 8
 *   5 bytes each    b0: type = b0 % 6, little word order (b0 / 6) & 1, input registers
 *                   (b0 / 12) & 1, a scale_register (b0 / 24) & 1; b1: address % 64;
 *                   b2: metric = b2 % 13 and its unit (b2 / 13); b3: scale (b3 % 8);
 *                   b4: the scale register's address % 64
 *   then per poll   68 big-endian words of holding registers 0..67, 68 of input registers
 * Readings must be finite and counters (energy, water, heat) never go down. Seeds:
 * tests/fuzz/seeds.sh makes them from the SunSpec models in ../shared/data/other.
 */
#include "collect/modbus.h"
#include "core/config.h"
#include "fuzz.h"

#define T0 (1764439200LL * 1000000000LL)
#define SPAN 68
#define MAX_POLLS 4

static const struct {
    const char *metric;
    const char *units[8];
} metrics[] = {
    {"power", {"W", "kW", "MW"}},
    {"energy", {"J", "kJ", "MJ", "GJ", "Wh", "kWh", "MWh"}},
    {"current", {"A", "mA", "kA"}},
    {"voltage", {"V", "mV", "kV"}},
    {"apparent_power", {"VA", "kVA", "MVA"}},
    {"power_factor", {"ratio", "%"}},
    {"temperature", {"C", "degC", "K"}},
    {"humidity", {"ratio", "%"}},
    {"flow", {"m3/s", "L/s", "L/min", "m3/h"}},
    {"water", {"m3", "L"}},
    {"heat", {"J", "kJ", "MJ", "GJ", "Wh", "kWh", "MWh"}},
    {"pressure", {"Pa", "kPa", "bar"}},
    {"fan", {"rpm"}},
};
static const char *const types[] = {"u16", "i16", "u32", "i32", "float32", "u64"};
static const char *const scales[] = {"1", "0.1", "0.01", "10", "-1", "0.001", "1000", "0.5"};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

/* The config of one target with the registers the input describes; *used: bytes read. */
static char *config(const uint8_t *d, size_t size, size_t *used)
{
    char *buf = NULL;
    size_t len = 0, nregs = 1 + d[0] % 8, at = 1;
    FILE *f = open_memstream(&buf, &len);
    FUZZ_CHECK(f != NULL);
    fprintf(f, "collectors:\n  modbus:\n    targets:\n      - name: fz\n"
               "        address: 127.0.0.1\n        registers:\n");
    for (size_t i = 0; i < nregs && at + 5 <= size; i++, at += 5) {
        const uint8_t *b = d + at;
        size_t m = b[2] % 13, nu = 0;
        while (nu < 8 && metrics[m].units[nu])
            nu++;
        fprintf(f,
                "          - {name: r%zu, address: %d, type: %s, word_order: %s, function: %s, "
                "metric: %s, unit: \"%s\", scale: %s",
                i, b[1] % 64, types[b[0] % 6], (b[0] / 6) & 1 ? "little" : "big",
                (b[0] / 12) & 1 ? "input" : "holding", metrics[m].metric,
                metrics[m].units[(b[2] / 13) % nu], scales[b[3] % 8]);
        if ((b[0] / 24) & 1)
            fprintf(f, ", scale_register: %d", b[4] % 64);
        fprintf(f, "}\n");
    }
    FUZZ_CHECK(fclose(f) == 0);
    *used = at;
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    size_t at = 0;
    char *yaml = config(data, size, &at);
    struct wt_config cfg;
    struct wt_err err = {{0}};
    void *state = NULL;
    wt_config_defaults(&cfg);
    int rc = wt_config_load_string("fuzz.yaml", yaml, strlen(yaml), &cfg, &err);
    free(yaml);
    if (rc != 0)
        goto out; /* two registers of one metric at one point, a register past 65535... */
    FUZZ_CHECK(wt_modbus_collector.open_target(&cfg, 0, &state, &err) == 0);
    struct wt_batch prev = {0}, cur = {0};
    for (int p = 0; p < MAX_POLLS && (p == 0 || at < size); p++) {
        uint16_t words[2][SPAN] = {{0}};
        for (int fn = 0; fn < 2; fn++)
            for (size_t w = 0; w < SPAN && at + 2 <= size; w++, at += 2)
                words[fn][w] = (uint16_t)(data[at] << 8 | data[at + 1]);
        wt_modbus_feed(state, 0, 0, words[0], SPAN);
        wt_modbus_feed(state, 1, 0, words[1], SPAN);
        wt_batch_clear(&cur);
        FUZZ_CHECK(wt_modbus_readings(state, T0 + p * 10000000000LL, &cur) == 0);
        fuzz_check_batch(&cur);
        fuzz_check_monotone(&prev, &cur, WT_M_FAC_ENERGY_J);
        fuzz_check_monotone(&prev, &cur, WT_M_FAC_WATER_M3);
        fuzz_check_monotone(&prev, &cur, WT_M_FAC_HEAT_J);
        struct wt_batch t = prev;
        prev = cur;
        cur = t;
    }
    wt_batch_free(&prev);
    wt_batch_free(&cur);
out:
    if (state)
        wt_modbus_collector.close(state);
    wt_config_free(&cfg);
    return 0;
}
