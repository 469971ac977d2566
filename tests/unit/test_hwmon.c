/* SPDX-License-Identifier: MIT */
/*
 * hwmon collector on sysfs trees written per test under wt_test_dir(), from the kernel's
 * documented ABI (Documentation/hwmon/sysfs-interface: powerN_average/_input µW,
 * powerN_average_interval ms, energyN_input µJ, *_label; acpi_power_meter: attributes and name on
 * the ACPI device, hwmonN/device, with power1_oem_info): an ACPI power meter, a Grace node's four
 * meters on two sockets, two PMBus PSUs, amdgpu and xe; then the faults (a sensor that vanishes,
 * garbage, a value out of range, a counter reset).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/cadence.h"
#include "collect/collector.h"
#include "collect/hwmon.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/hub.h"
#include "core/reading.h"
#include "core/snapshot.h"
#include "fstree.h"
#include "readings.h"
#include "runner.h"

#define S WT_NS_PER_S
#define T0 (1764439200LL * S)

static const char *root(void)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/sysfs", wt_test_dir());
    return buf;
}

static void mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    mkdir(tmp, 0755);
}

/* <root>/sys/class/hwmon/<hw>/<file> (file may have a "device/" prefix). */
static const char *hw_file(const char *hw, const char *file)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/sys/class/hwmon/%s/%s", root(), hw, file);
    return buf;
}

/* Writes one attribute, creating its directory. */
static void put(const char *hw, const char *file, const char *value)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", hw_file(hw, file));
    *strrchr(dir, '/') = '\0';
    mkdirs(dir);
    wt_test_write(hw_file(hw, file), "%s\n", value);
    setenv("WATTAGE_SYSFS_ROOT", root(), 1);
}

static void put_u64(const char *hw, const char *file, unsigned long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", v);
    put(hw, file, buf);
}

/* An ACPI power meter as acpi_power_meter.c makes it: everything on the ACPI device. */
static void acpi_meter(const char *hw, const char *oem, unsigned long long uw, int interval_ms)
{
    mkdirs(hw_file(hw, ""));
    put(hw, "device/name", "power_meter");
    put_u64(hw, "device/power1_average", uw);
    put_u64(hw, "device/power1_average_interval", (unsigned long long)interval_ms);
    put(hw, "device/power1_average_interval_min", "50");
    put(hw, "device/power1_average_interval_max", "1000");
    put(hw, "device/power1_accuracy", "95.0%");
    put(hw, "device/power1_is_battery", "0");
    put(hw, "device/power1_model_number", "");
    put(hw, "device/power1_serial_number", "");
    put(hw, "device/power1_oem_info", oem);
}

static void pmbus_psu(const char *hw, unsigned long long pin_uw, unsigned long long pout_uw)
{
    put(hw, "name", "pmbus");
    put(hw, "power1_label", "pin");
    put_u64(hw, "power1_input", pin_uw);
    put(hw, "power1_alarm", "0");
    put(hw, "power2_label", "pout1");
    put_u64(hw, "power2_input", pout_uw);
    put(hw, "in1_label", "vin");
    put(hw, "in1_input", "230000");
    put(hw, "curr1_label", "iin");
    put(hw, "curr1_input", "2000");
}

static void *open_ok(void)
{
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = wt_hwmon_collector.open(NULL, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    WT_ASSERT(st != NULL);
    return st;
}

static void poll_ok(void *st, int64_t t_ns, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    wt_batch_clear(b);
    int rc = wt_hwmon_collector.poll(st, t_ns, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %d %s", rc, err.msg);
}

/* How many readings of metric carry role="role". */
static size_t count_role(const struct wt_batch *b, int metric, const char *role)
{
    char want[48];
    snprintf(want, sizeof want, "role=\"%s\"", role);
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->r[i].metric == metric && strstr(b->r[i].labels, want) != NULL;
    return n;
}

WT_TEST(hwmon_parse_attr_names)
{
    enum wt_hwmon_attr a;
    int i;
    WT_EQ_INT(wt_hwmon_parse_attr("power1_average", &a, &i), 0);
    WT_EQ_INT(a, WT_HWMON_POWER_AVERAGE);
    WT_EQ_INT(i, 1);
    WT_EQ_INT(wt_hwmon_parse_attr("power12_input", &a, &i), 0);
    WT_EQ_INT(a, WT_HWMON_POWER_INPUT);
    WT_EQ_INT(i, 12);
    WT_EQ_INT(wt_hwmon_parse_attr("energy2_input", &a, &i), 0);
    WT_EQ_INT(a, WT_HWMON_ENERGY_INPUT);
    WT_EQ_INT(i, 2);
    const char *bad[] = {"power1_average_interval",
                         "power1_label",
                         "power1_cap",
                         "power0_input",
                         "energy1_average",
                         "power_input",
                         "power1_input_highest",
                         "temp1_input",
                         "name",
                         "powerx_input",
                         "power01_input"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        WT_EQ_INT(wt_hwmon_parse_attr(bad[k], &a, &i), -EINVAL);
}

WT_TEST(hwmon_roles_from_chip_and_label)
{
    char r[16];
    struct {
        const char *chip, *label, *role;
    } cases[] = {
        {"power_meter", "", "wall"},
        {"power_meter", "Dell PowerEdge system power", "wall"},
        {"power_meter", "Module Power Socket 0", "module"},
        {"power_meter", "Grace Power Socket 1", "cpu"},
        {"power_meter", "CPU Power Socket 3", "cpu_rail"},
        {"power_meter", "SysIO Power Socket 0", "sysio_rail"},
        {"power_meter", "Grace Power Socketeer", "wall"},
        {"pmbus", "pin", "psu_in"},
        {"crps", "pin2", "psu_in"},
        {"pmbus", "pout1", "psu_out"},
        {"pmbus", "pout", "psu_out"},
        {"pmbus", "pinx", "other"},
        {"amdgpu", "PPT", "gpu"},
        {"xe", "card", "gpu"},
        {"xe", "pkg", "gpu_rail"},
        {"i915", "", "gpu"},
        {"i915_gt0", "", "gpu_rail"},
        {"nvme", "", "other"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        WT_EQ_INT(wt_hwmon_role(cases[k].chip, cases[k].label, r, sizeof r), 0);
        WT_EQ_STR(r, cases[k].role);
    }
    WT_EQ_INT(wt_hwmon_role("power_meter", "", r, 3), -E2BIG);
}

WT_TEST(hwmon_parse_values)
{
    uint64_t v;
    WT_EQ_INT(wt_hwmon_parse_u64("350000000", &v), 0);
    WT_EQ_U64(v, 350000000ULL);
    WT_EQ_INT(wt_hwmon_parse_u64("18446744073709551615", &v), 0);
    WT_EQ_INT(wt_hwmon_parse_u64("18446744073709551616", &v), -EINVAL);
    WT_EQ_INT(wt_hwmon_parse_u64("-5", &v), -EINVAL);
    WT_EQ_INT(wt_hwmon_parse_u64("", &v), -EINVAL);
    WT_EQ_INT(wt_hwmon_parse_u64("12 W", &v), -EINVAL);
    WT_EQ_INT(wt_hwmon_parse_u64("0x10", &v), -EINVAL);
}

#define WALL "chip=\"power_meter\",sensor=\"power1\",label=\"Dell system board\",role=\"wall\""

WT_TEST(hwmon_acpi_power_meter_wall_power_interval_and_energy)
{
    acpi_meter("hwmon0", "Dell system board", 350000000ULL, 1000);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, WALL), 350.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_HWMON_INTERVAL_S, WALL), 1.0, 1e-12);
    double e0 = reading_value(&b, WT_M_HWMON_ENERGY_J, WALL ",method=\"integrated\"");
    /* 1-s averages read every second: each step is the newer reading times the second */
    put_u64("hwmon0", "device/power1_average", 400000000ULL);
    poll_ok(st, T0 + S, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, WALL), 400.0, 1e-9);
    double e1 = reading_value(&b, WT_M_HWMON_ENERGY_J, WALL ",method=\"integrated\"");
    WT_NEAR(e1 - e0, 400.0, 1e-6);
    put_u64("hwmon0", "device/power1_average", 400000000ULL);
    poll_ok(st, T0 + 2 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, WALL ",method=\"integrated\"") - e1, 400.0,
            1e-6);
    WT_EQ_INT(b.len, 3);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(hwmon_interval_change_is_seen_at_the_next_scan)
{
    acpi_meter("hwmon0", "", 300000000ULL, 1000);
    void *st = open_ok();
    struct wt_batch b = {0};
    const char *l = "chip=\"power_meter\",sensor=\"power1\",label=\"\",role=\"wall\"";
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_INTERVAL_S, l), 1.0, 1e-12);
    put("hwmon0", "device/power1_average_interval", "50");
    /* a full rescan comes within 30 polls */
    int polls = 0;
    do {
        poll_ok(st, T0 + (1 + polls) * S, &b);
        polls++;
    } while (reading_value(&b, WT_M_HWMON_INTERVAL_S, l) > 0.5 && polls < 40);
    WT_ASSERT(polls <= 30);
    WT_NEAR(reading_value(&b, WT_M_HWMON_INTERVAL_S, l), 0.05, 1e-12);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(hwmon_grace_four_meters_two_sockets)
{
    const char *kinds[] = {"Module", "Grace", "CPU", "SysIO"};
    int n = 0;
    for (int sock = 0; sock < 2; sock++) {
        for (int k = 0; k < 4; k++) {
            char hw[16], oem[64];
            snprintf(hw, sizeof hw, "hwmon%d", n++);
            snprintf(oem, sizeof oem, "%s Power Socket %d", kinds[k], sock);
            acpi_meter(hw, oem, (unsigned long long)(100 + 10 * k + sock) * 1000000ULL, 50);
        }
    }
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 8);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "module"), 2);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "cpu"), 2);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "cpu_rail"), 2);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "sysio_rail"), 2);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "wall"), 0);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W,
                          "chip=\"power_meter\",sensor=\"power1\",label=\"Grace Power Socket "
                          "1\",role=\"cpu\",socket=\"1\""),
            111.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_HWMON_INTERVAL_S,
                          "chip=\"power_meter\",sensor=\"power1\",label=\"Module Power Socket "
                          "0\",role=\"module\",socket=\"0\""),
            0.05, 1e-12);
    /* the OEM strings tell the meters apart: no hwmon label needed; each names its socket */
    for (size_t i = 0; i < b.len; i++)
        WT_ASSERT(strstr(b.r[i].labels, "hwmon=") == NULL);
    for (int sock = 0; sock < 2; sock++) {
        char want[16];
        snprintf(want, sizeof want, "socket=\"%d\"", sock);
        int k = 0;
        for (size_t i = 0; i < b.len; i++)
            k += b.r[i].metric == WT_M_HWMON_POWER_W && strstr(b.r[i].labels, want) != NULL;
        WT_EQ_INT(k, 4);
    }
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

WT_TEST(hwmon_pmbus_psus_in_and_out)
{
    pmbus_psu("hwmon3", 1100000000ULL, 1030000000ULL);
    pmbus_psu("hwmon4", 900000000ULL, 850000000ULL);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "psu_in"), 2);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "psu_out"), 2);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 4);
    /* two PSUs of one driver share chip, sensor and label: one of them gets hwmon="…" */
    double in = 0, out = 0;
    size_t tagged = 0;
    for (size_t i = 0; i < b.len; i++) {
        if (b.r[i].metric != WT_M_HWMON_POWER_W)
            continue;
        tagged += strstr(b.r[i].labels, "hwmon=\"hwmon") != NULL;
        if (strstr(b.r[i].labels, "role=\"psu_in\""))
            in += b.r[i].value;
        else
            out += b.r[i].value;
    }
    WT_EQ_INT(tagged, 2);
    WT_NEAR(in, 2000.0, 1e-9);
    WT_NEAR(out, 1880.0, 1e-9);
    /* input power is instantaneous: no interval gauge */
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_INTERVAL_S), 0);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_ENERGY_J), 4);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

#define AMD "chip=\"amdgpu\",sensor=\"power1\",label=\"PPT\",role=\"gpu\""

WT_TEST(hwmon_amdgpu_prefers_average)
{
    put("hwmon5", "name", "amdgpu");
    put("hwmon5", "power1_label", "PPT");
    put("hwmon5", "power1_average", "287000000");
    put("hwmon5", "power1_input", "300000000");
    put("hwmon5", "power1_cap", "500000000");
    put("hwmon5", "temp1_input", "45000");
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, AMD), 287.0, 1e-9);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 1);
    WT_ASSERT(find_reading(&b, WT_M_HWMON_ENERGY_J, AMD ",method=\"integrated\"") != NULL);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

#define XE "chip=\"xe\",sensor=\"energy1\",label=\"card\",role=\"gpu\""
#define XE_E XE ",method=\"counter\""

WT_TEST(hwmon_xe_energy_counter_power_and_reset)
{
    put("hwmon6", "name", "xe");
    put("hwmon6", "energy1_label", "card");
    put("hwmon6", "energy1_input", "1000000");
    put("hwmon6", "energy2_label", "pkg");
    put("hwmon6", "energy2_input", "500000");
    put("hwmon6", "power1_max", "150000000");
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, XE_E), 1.0, 1e-12);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_ENERGY_J, "gpu_rail"), 1);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 0); /* power needs two readings */
    put("hwmon6", "energy1_input", "101000000");
    poll_ok(st, T0 + S, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, XE_E), 101.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, XE), 100.0, 1e-9);
    /* the driver reloaded: the counter starts again; the total never goes back */
    put("hwmon6", "energy1_input", "2000000");
    poll_ok(st, T0 + 2 * S, &b);
    double e = reading_value(&b, WT_M_HWMON_ENERGY_J, XE_E);
    WT_ASSERT(e >= 101.0);
    put("hwmon6", "energy1_input", "52000000");
    poll_ok(st, T0 + 3 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, XE_E) - e, 50.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, XE), 50.0, 1e-9);
    /* a jump of 1 MJ in a second (1 MW, over 100 kW) is refused, and counting goes on from there */
    e = reading_value(&b, WT_M_HWMON_ENERGY_J, XE_E);
    put("hwmon6", "energy1_input", "1000052000000");
    poll_ok(st, T0 + 4 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, XE_E), e, 1e-9);
    WT_ASSERT(find_reading(&b, WT_M_HWMON_POWER_W, XE) == NULL);
    put("hwmon6", "energy1_input", "1000062000000");
    poll_ok(st, T0 + 5 * S, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, XE_E) - e, 10.0, 1e-9);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, XE), 10.0, 1e-9);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

#define PSU_IN "chip=\"pmbus\",sensor=\"power1\",label=\"pin\",role=\"psu_in\""
#define PSU_OUT "chip=\"pmbus\",sensor=\"power2\",label=\"pout1\",role=\"psu_out\""

WT_TEST(hwmon_vanished_garbage_and_out_of_range_sensors)
{
    acpi_meter("hwmon0", "", 500000000ULL, 1000);
    pmbus_psu("hwmon3", 1100000000ULL, 1030000000ULL);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 3);

    /* firmware's 0xFFFFFFFF mW: refused, the others go on */
    put_u64("hwmon0", "device/power1_average", 4294967295000ULL);
    poll_ok(st, T0 + S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 2);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "wall"), 0);
    /* garbage: refused too */
    put("hwmon0", "device/power1_average", "N/A");
    poll_ok(st, T0 + 2 * S, &b);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "wall"), 0);
    /* and back */
    put_u64("hwmon0", "device/power1_average", 510000000ULL);
    poll_ok(st, T0 + 3 * S, &b);
    WT_EQ_INT(count_role(&b, WT_M_HWMON_POWER_W, "wall"), 1);

    /* the PSU's input vanishes: the rest goes on, and it is found again */
    WT_EQ_INT(unlink(hw_file("hwmon3", "power1_input")), 0);
    poll_ok(st, T0 + 4 * S, &b);
    WT_ASSERT(find_reading(&b, WT_M_HWMON_POWER_W, PSU_IN) == NULL);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 2);
    poll_ok(st, T0 + 5 * S, &b);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 2);
    put_u64("hwmon3", "power1_input", 1200000000ULL);
    /* looked for again within a few polls (the rescan backs off from 1 poll) */
    int polls = 0;
    do {
        poll_ok(st, T0 + (6 + polls) * S, &b);
        polls++;
    } while (!find_reading(&b, WT_M_HWMON_POWER_W, PSU_IN) && polls < 8);
    WT_ASSERT(polls <= 3);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, PSU_IN), 1200.0, 1e-9);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

/*
 * The value files stay open between polls (collect/filesrc.h): a chip removed and made again
 * under the same hwmonN (a driver reloaded) is read with its new values, and over many polls
 * with every value replaced the process holds as many descriptors as at the first.
 */
WT_TEST(hwmon_chip_removed_and_back_is_read_anew_with_bounded_descriptors)
{
    acpi_meter("hwmon0", "", 500000000ULL, 1000);
    pmbus_psu("hwmon3", 1100000000ULL, 1030000000ULL);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, PSU_IN), 1100.0, 1e-9);
    int fds = wt_fstree_open_fds();

    /* the PSU's driver unloaded and loaded again between two ticks: the whole directory anew */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", hw_file("hwmon3", ""));
    WT_EQ_INT(wt_fstree_remove(dir), 0);
    pmbus_psu("hwmon3", 1250000000ULL, 1150000000ULL);
    poll_ok(st, T0 + S, &b);
    WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, PSU_IN), 1250.0, 1e-9);
    WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 3);
    WT_EQ_INT(wt_fstree_open_fds(), fds);

    /* 60 polls, every value replaced before each: readings follow, descriptors stay put */
    for (int i = 0; i < 60; i++) {
        put_u64("hwmon3", "power1_input", 1000000000ULL + (unsigned long long)i * 1000000ULL);
        put_u64("hwmon0", "device/power1_average", 400000000ULL + (unsigned long long)i);
        poll_ok(st, T0 + (2 + i) * S, &b);
        WT_NEAR(reading_value(&b, WT_M_HWMON_POWER_W, PSU_IN), 1000.0 + i, 1e-9);
        WT_EQ_INT(count_readings(&b, WT_M_HWMON_POWER_W), 3);
        WT_EQ_INT(wt_fstree_open_fds(), fds);
    }
    wt_hwmon_collector.close(st);
    WT_EQ_INT(wt_fstree_open_fds(), fds - 3); /* one kept per sensor, all given back */
    wt_batch_free(&b);
}

WT_TEST(hwmon_integration_does_not_span_a_gap)
{
    pmbus_psu("hwmon3", 1000000000ULL, 900000000ULL);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, T0, &b);
    double e0 = reading_value(&b, WT_M_HWMON_ENERGY_J, PSU_IN ",method=\"integrated\"");
    poll_ok(st, T0 + S, &b);
    double e1 = reading_value(&b, WT_M_HWMON_ENERGY_J, PSU_IN ",method=\"integrated\"");
    WT_NEAR(e1 - e0, 1000.0, 1e-6);
    /* 10 s without a reading (over 3 intervals): a gap, not 10 kJ */
    poll_ok(st, T0 + 11 * S, &b);
    double e2 = reading_value(&b, WT_M_HWMON_ENERGY_J, PSU_IN ",method=\"integrated\"");
    WT_NEAR(e2 - e1, 0.0, 1e-6);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

/* An open collector with collectors.hwmon.max_hold at max_hold_ns (1-s ticks, the default). */
static void *open_held(int64_t max_hold_ns)
{
    struct wt_config c;
    wt_config_defaults(&c);
    c.collectors.hwmon_max_hold_ns = max_hold_ns;
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = wt_hwmon_collector.open(&c, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

#define INA "chip=\"ina226\",sensor=\"power1\",label=\"\",role=\"other\""
#define XE_CARD "chip=\"xe\",sensor=\"energy1\",label=\"card\",role=\"gpu\""

/*
 * A PMBus chip that updates every 2 s (update_interval 2000), a wall meter averaging over 2 s,
 * a chip without update_interval and an energy counter, at 1-s ticks: the first two are read
 * every other tick, the others every tick; nothing is published for a sensor between its reads,
 * and the integration over the held readings is the trapezoid of what the hardware read.
 */
WT_TEST(hwmon_each_sensor_at_its_chips_update_interval)
{
    acpi_meter("hwmon0", "Dell system board", 450000000ULL, 2000);
    pmbus_psu("hwmon3", 1000000000ULL, 900000000ULL);
    put("hwmon3", "update_interval", "2000");
    put("hwmon4", "name", "ina226");
    put_u64("hwmon4", "power1_input", 12000000ULL);
    put("hwmon5", "name", "xe");
    put("hwmon5", "energy1_label", "card");
    put_u64("hwmon5", "energy1_input", 1000000ULL);
    void *st = open_held(10 * S);
    struct wt_batch b = {0};
    /* the PSU's pin as the chip updates it at 0, 2, 4, 6 s */
    const unsigned long long pin[] = {1000000000ULL, 1200000000ULL, 800000000ULL, 1000000000ULL};
    double e0 = 0, ewall0 = 0;
    for (int k = 0; k <= 6; k++) {
        if (k % 2 == 0)
            put_u64("hwmon3", "power1_input", pin[k / 2]);
        put_u64("hwmon5", "energy1_input", 1000000ULL + (unsigned long long)k * 300000000ULL);
        uint64_t r0 = wt_hwmon_value_reads(st);
        poll_ok(st, T0 + k * S, &b);
        uint64_t reads = wt_hwmon_value_reads(st) - r0;
        /* the counter and the chip without update_interval: every tick */
        WT_ASSERT(find_reading(&b, WT_M_HWMON_POWER_W, INA) != NULL);
        WT_ASSERT(find_reading(&b, WT_M_HWMON_ENERGY_J, XE_CARD ",method=\"counter\"") != NULL);
        const struct wt_reading *p = find_reading(&b, WT_M_HWMON_POWER_W, PSU_IN);
        const struct wt_reading *w = find_reading(&b, WT_M_HWMON_POWER_W, WALL);
        if (k % 2 == 0) {
            WT_EQ_INT(reads, 5); /* wall, pin, pout, ina, counter */
            WT_ASSERT(p != NULL && w != NULL);
            WT_NEAR(p->value, (double)pin[k / 2] / 1e6, 1e-9);
            WT_EQ_INT(p->t_ns, T0 + k * S);
        } else {
            WT_EQ_INT(reads, 2); /* ina, counter */
            WT_ASSERT(p == NULL && w == NULL);
            WT_ASSERT(find_reading(&b, WT_M_HWMON_ENERGY_J, PSU_IN ",method=\"integrated\"") ==
                      NULL);
        }
        if (k == 0) {
            e0 = reading_value(&b, WT_M_HWMON_ENERGY_J, PSU_IN ",method=\"integrated\"");
            ewall0 = reading_value(&b, WT_M_HWMON_ENERGY_J, WALL ",method=\"integrated\"");
        }
    }
    /* trapezoids between the chip's readings, 2 s apart: (1000+1200) + (1200+800) + (800+1000) */
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, PSU_IN ",method=\"integrated\"") - e0, 6000.0,
            1e-6);
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, WALL ",method=\"integrated\"") - ewall0,
            450.0 * 6, 1e-6);
    /* the counter: 6 x 300 J, read every tick */
    WT_NEAR(reading_value(&b, WT_M_HWMON_ENERGY_J, XE_CARD ",method=\"counter\""), 1801.0, 1e-9);

    /* status: the held sensors are the slow fields, max_hold the slow interval */
    const char *f[8];
    size_t n = 0;
    int64_t slow_ns = 0;
    WT_ASSERT(wt_cadence_slow_fields("hwmon", f, 8, &n, &slow_ns));
    WT_EQ_INT(n, 3);
    WT_EQ_INT(slow_ns, 10 * S);
    char all[256] = "";
    for (size_t i = 0; i < n && i < 8; i++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s;", f[i]);
    WT_CONTAINS(all, "hwmon0/device/power1_average;");
    WT_CONTAINS(all, "hwmon3/power1_input;");
    WT_CONTAINS(all, "hwmon3/power2_input;");
    wt_hwmon_collector.close(st);
    WT_ASSERT(!wt_cadence_slow_fields("hwmon", f, 8, &n, &slow_ns));

    /* max_hold 0 (the default): every sensor every tick */
    st = open_held(0);
    for (int k = 0; k < 3; k++) {
        uint64_t r0 = wt_hwmon_value_reads(st);
        poll_ok(st, T0 + k * S, &b);
        WT_EQ_INT(wt_hwmon_value_reads(st) - r0, 5);
        WT_ASSERT(find_reading(&b, WT_M_HWMON_POWER_W, PSU_IN) != NULL);
    }
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

/* The ceiling: a chip updating every 5 s with max_hold 3 s is read every third tick. */
WT_TEST(hwmon_max_hold_is_the_ceiling)
{
    pmbus_psu("hwmon3", 1000000000ULL, 900000000ULL);
    put("hwmon3", "update_interval", "5000");
    void *st = open_held(3 * S);
    struct wt_batch b = {0};
    int read_at = 0;
    for (int k = 0; k < 10; k++) {
        poll_ok(st, T0 + k * S, &b);
        if (find_reading(&b, WT_M_HWMON_POWER_W, PSU_IN)) {
            WT_EQ_INT(k % 3, 0);
            read_at++;
        }
    }
    WT_EQ_INT(read_at, 4); /* 0, 3, 6, 9 */
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

/*
 * auto (the default): at least every other tick, so two readings are never more than 3 ticks
 * apart (the store's segment rule): a chip updating every 5 s is read every other 1-s tick.
 */
WT_TEST(hwmon_max_hold_auto_is_two_ticks)
{
    pmbus_psu("hwmon3", 1000000000ULL, 900000000ULL);
    put("hwmon3", "update_interval", "5000");
    struct wt_config c;
    wt_config_defaults(&c);
    WT_EQ_INT(c.collectors.hwmon_max_hold_ns, WT_CONFIG_AUTO);
    void *st = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_hwmon_collector.open(&c, &st, &err), 0);
    struct wt_batch b = {0};
    int read_at = 0;
    for (int k = 0; k < 10; k++) {
        poll_ok(st, T0 + k * S, &b);
        if (find_reading(&b, WT_M_HWMON_POWER_W, PSU_IN)) {
            WT_EQ_INT(k % 2, 0);
            read_at++;
        }
    }
    WT_EQ_INT(read_at, 5); /* 0, 2, 4, 6, 8 */
    const char *f[8];
    size_t n = 0;
    int64_t slow_ns = 0;
    WT_ASSERT(wt_cadence_slow_fields("hwmon", f, 8, &n, &slow_ns));
    WT_EQ_INT(slow_ns, 2 * S);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
}

/* What a store-like sink saw of the PSU's pin: every reading, in order. */
struct seen {
    struct wt_batch power, energy;
};

static void seen_sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct seen *sn = ctx;
    (void)collector;
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        int rc = 0;
        if (r->metric == WT_M_HWMON_POWER_W && strcmp(r->labels, PSU_IN) == 0)
            rc = wt_batch_add(&sn->power, r->metric, r->labels, r->t_ns, r->value);
        else if (r->metric == WT_M_HWMON_ENERGY_J &&
                 strcmp(r->labels, PSU_IN ",method=\"integrated\"") == 0)
            rc = wt_batch_add(&sn->energy, r->metric, r->labels, r->t_ns, r->value);
        WT_EQ_INT(rc, 0);
    }
}

/*
 * A held sensor stays in the latest readings (the snapshot /metrics and status render) on every
 * tick, with the stamp of the read that made it and its age, while the sinks (the store, the
 * per-tick sinks) get each reading once: the PSU's pin, held to its chip's 2-s update_interval
 * at 1-s ticks through the hub as the poll loop publishes it.
 */
WT_TEST(hwmon_held_sensor_stays_in_the_latest_readings)
{
    pmbus_psu("hwmon3", 1000000000ULL, 900000000ULL);
    put("hwmon3", "update_interval", "2000");
    void *st = open_held(10 * S);
    struct wt_hub *hub = NULL;
    WT_EQ_INT(wt_hub_open(&hub), 0);
    struct seen sn = {{0}};
    WT_EQ_INT(wt_hub_add_sink(hub, seen_sink, &sn), 0);
    int slot = wt_hub_add_collector(hub, "hwmon", S);
    WT_ASSERT(slot >= 0);
    wt_hub_set_state(hub, slot, true, S);
    struct wt_batch b = {0}, held = {0}, snap = {0};
    const unsigned long long pin[] = {1000000000ULL, 1200000000ULL, 800000000ULL, 1000000000ULL};
    for (int k = 0; k <= 6; k++) {
        if (k % 2 == 0)
            put_u64("hwmon3", "power1_input", pin[k / 2]);
        int64_t t = T0 + k * S;
        poll_ok(st, t, &b);
        wt_batch_clear(&held);
        WT_EQ_INT(wt_hwmon_collector.held(st, t, &held), 0);
        wt_hub_publish_held(hub, slot, &b, &held, true, 0.001, k + 1);
        WT_EQ_INT(wt_hub_snapshot(hub, &snap), 0);
        /* in the latest readings on every tick, as read: the value and stamp of the last read */
        int64_t read_t = T0 + (k - k % 2) * S;
        const struct wt_reading *p = find_reading(&snap, WT_M_HWMON_POWER_W, PSU_IN);
        WT_ASSERT(p != NULL);
        WT_NEAR(p->value, (double)pin[k / 2] / 1e6, 1e-9);
        WT_EQ_INT(p->t_ns, read_t);
        const struct wt_reading *e =
            find_reading(&snap, WT_M_HWMON_ENERGY_J, PSU_IN ",method=\"integrated\"");
        WT_ASSERT(e != NULL);
        WT_EQ_INT(e->t_ns, read_t);
        WT_ASSERT(find_reading(&snap, WT_M_HWMON_POWER_W, PSU_OUT) != NULL);
        /* its age: 0 on the ticks that read it, 1 s on the others, stamped now */
        const struct wt_reading *a = find_reading(&snap, WT_M_HWMON_AGE_S, PSU_IN);
        WT_ASSERT(a != NULL);
        WT_NEAR(a->value, (double)(k % 2), 1e-9);
        WT_EQ_INT(a->t_ns, t);
        /* one of each series in the latest readings: held values are not appended twice */
        WT_EQ_INT(count_readings(&snap, WT_M_HWMON_POWER_W), 2);
        WT_EQ_INT(count_readings(&snap, WT_M_HWMON_AGE_S), 2);
        /* the status document says how old it is */
        struct wt_hub_collector cs[4];
        size_t ncs = wt_hub_collectors(hub, cs, 4);
        char *doc = wt_snapshot_json(&snap, cs, ncs, t, 0);
        WT_ASSERT(doc != NULL);
        WT_CONTAINS(doc, k % 2 ? "\"age_seconds\":1" : "\"age_seconds\":0");
        free(doc);
    }
    /* the sink saw each read once (0, 2, 4, 6 s) and never a republished one */
    WT_EQ_INT(sn.power.len, 4);
    WT_EQ_INT(sn.energy.len, 4);
    for (size_t i = 0; i < sn.power.len; i++) {
        WT_EQ_INT(sn.power.r[i].t_ns, T0 + (int64_t)i * 2 * S);
        WT_EQ_INT(sn.energy.r[i].t_ns, T0 + (int64_t)i * 2 * S);
    }
    /* integrated once: the trapezoids of 1000, 1200, 800, 1000 W 2 s apart, exact */
    WT_NEAR(sn.energy.r[3].value - sn.energy.r[0].value, 6000.0, 1e-6);
    /* the sensor fails: nothing of it is held (a failed read is not published) */
    put("hwmon3", "power1_input", "garbage");
    poll_ok(st, T0 + 8 * S, &b);
    wt_batch_clear(&held);
    WT_EQ_INT(wt_hwmon_collector.held(st, T0 + 9 * S, &held), 0);
    WT_ASSERT(find_reading(&held, WT_M_HWMON_POWER_W, PSU_IN) == NULL);
    WT_ASSERT(find_reading(&held, WT_M_HWMON_AGE_S, PSU_IN) == NULL);
    wt_hub_remove_sink(hub, seen_sink, &sn);
    wt_hub_close(hub);
    wt_hwmon_collector.close(st);
    wt_batch_free(&b);
    wt_batch_free(&held);
    wt_batch_free(&snap);
    wt_batch_free(&sn.power);
    wt_batch_free(&sn.energy);
}

WT_TEST(hwmon_absent_is_enoent)
{
    void *st = NULL;
    struct wt_err err = {{0}};
    setenv("WATTAGE_SYSFS_ROOT", root(), 1);
    WT_EQ_INT(wt_hwmon_collector.open(NULL, &st, &err), -ENOENT);
    WT_ASSERT(st == NULL);
    /* chips without power or energy sensors (coretemp, nvme) are not a source */
    put("hwmon1", "name", "coretemp");
    put("hwmon1", "temp1_input", "45000");
    WT_EQ_INT(wt_hwmon_collector.open(NULL, &st, &err), -ENOENT);
    WT_CONTAINS(err.msg, "no hwmon power or energy sensor");
}
