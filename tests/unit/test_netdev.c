/* SPDX-License-Identifier: MIT */
/*
 * netdev collector over fake sysfs trees: interfaces a device backs are read and the others
 * (lo, veths) are not; InfiniBand data words become bytes; a saturated 32-bit IB counter is held
 * back until it is reset; interfaces that vanish are skipped; malformed counter files are errors.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/netdev.h"
#include "core/clock.h"
#include "core/reading.h"
#include "readings.h"
#include "runner.h"

#define T0 (1764439200LL * WT_NS_PER_S)

/* mkdir -p of <test dir>/sysfs/<rel>. */
static void mkdirs(const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/sysfs/%s", wt_test_dir(), rel);
    for (char *s = p + strlen(wt_test_dir()) + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    }
    mkdir(p, 0755);
}

static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *rel, const char *fmt, ...)
{
    char p[1024], text[128];
    snprintf(p, sizeof p, "%s/sysfs/%s", wt_test_dir(), rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdirs(p + strlen(wt_test_dir()) + strlen("/sysfs/"));
    *slash = '/';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    wt_test_write(p, "%s", text);
}

static void nic(const char *name, bool device, unsigned long long rx, unsigned long long tx)
{
    char rel[256];
    if (device) {
        snprintf(rel, sizeof rel, "sys/class/net/%s/device", name);
        mkdirs(rel);
    }
    snprintf(rel, sizeof rel, "sys/class/net/%s/statistics/rx_bytes", name);
    put(rel, "%llu\n", rx);
    snprintf(rel, sizeof rel, "sys/class/net/%s/statistics/tx_bytes", name);
    put(rel, "%llu\n", tx);
    snprintf(rel, sizeof rel, "sys/class/net/%s/statistics/rx_packets", name);
    put(rel, "%llu\n", rx / 1000);
    snprintf(rel, sizeof rel, "sys/class/net/%s/statistics/tx_packets", name);
    put(rel, "%llu\n", tx / 1000);
}

static void ib_port(const char *dev, int port, unsigned long long rcv, unsigned long long xmit)
{
    char rel[256];
    snprintf(rel, sizeof rel, "sys/class/infiniband/%s/ports/%d/counters/port_rcv_data", dev, port);
    put(rel, "%llu\n", rcv);
    snprintf(rel, sizeof rel, "sys/class/infiniband/%s/ports/%d/counters/port_xmit_data", dev,
             port);
    put(rel, "%llu\n", xmit);
    snprintf(rel, sizeof rel, "sys/class/infiniband/%s/ports/%d/counters/port_rcv_packets", dev,
             port);
    put(rel, "%llu\n", rcv / 100);
    snprintf(rel, sizeof rel, "sys/class/infiniband/%s/ports/%d/counters/port_xmit_packets", dev,
             port);
    put(rel, "%llu\n", xmit / 100);
}

static void use_root(void)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/sysfs", wt_test_dir());
    mkdir(p, 0755);
    setenv("WATTAGE_SYSFS_ROOT", p, 1);
}

static void *open_ok(void)
{
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = wt_netdev_collector.open(NULL, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

static void poll_ok(void *st, struct wt_batch *b)
{
    struct wt_err err = {{0}};
    wt_batch_clear(b);
    int rc = wt_netdev_collector.poll(st, T0, b, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "poll: %d %s", rc, err.msg);
}

WT_TEST(netdev_reads_device_backed_interfaces_only)
{
    use_root();
    nic("eth0", true, 123456789012ULL, 987654321ULL);
    nic("ib0", true, 5000, 7000);
    nic("lo", false, 1, 2);
    nic("veth1a2b", false, 3, 4);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_NEAR(reading_value(&b, WT_M_NET_RX_BYTES, "device=\"eth0\""), 123456789012.0, 0);
    WT_NEAR(reading_value(&b, WT_M_NET_TX_BYTES, "device=\"eth0\""), 987654321.0, 0);
    WT_NEAR(reading_value(&b, WT_M_NET_RX_PACKETS, "device=\"eth0\""), 123456789.0, 0);
    WT_NEAR(reading_value(&b, WT_M_NET_TX_PACKETS, "device=\"ib0\""), 7.0, 0);
    WT_EQ_INT(count_readings(&b, WT_M_NET_RX_BYTES), 2);
    WT_ASSERT(find_reading(&b, WT_M_NET_RX_BYTES, "device=\"lo\"") == NULL);
    WT_ASSERT(find_reading(&b, WT_M_NET_RX_BYTES, "device=\"veth1a2b\"") == NULL);
    WT_EQ_STR(wt_metrics[WT_M_NET_RX_BYTES].name, "wattage_network_receive_bytes_total");
    wt_batch_free(&b);
    wt_netdev_collector.close(st);
}

WT_TEST(netdev_infiniband_words_become_bytes_per_port)
{
    use_root();
    ib_port("mlx5_0", 1, 1000, 2500);
    ib_port("mlx5_1", 1, 40, 80);
    ib_port("mlx5_1", 2, 0, 0);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_NEAR(reading_value(&b, WT_M_IB_RX_BYTES, "device=\"mlx5_0\",port=\"1\""), 4000.0, 0);
    WT_NEAR(reading_value(&b, WT_M_IB_TX_BYTES, "device=\"mlx5_0\",port=\"1\""), 10000.0, 0);
    WT_NEAR(reading_value(&b, WT_M_IB_RX_PACKETS, "device=\"mlx5_0\",port=\"1\""), 10.0, 0);
    WT_NEAR(reading_value(&b, WT_M_IB_TX_BYTES, "device=\"mlx5_1\",port=\"1\""), 320.0, 0);
    WT_NEAR(reading_value(&b, WT_M_IB_RX_BYTES, "device=\"mlx5_1\",port=\"2\""), 0.0, 0);
    WT_EQ_INT(count_readings(&b, WT_M_IB_RX_BYTES), 3);
    WT_EQ_INT(count_readings(&b, WT_M_NET_RX_BYTES), 0);
    wt_batch_free(&b);
    wt_netdev_collector.close(st);
}

WT_TEST(netdev_saturated_ib_counter_is_held_back_until_reset)
{
    use_root();
    ib_port("mlx4_0", 1, 4294967295ULL, 12);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, &b);
    const char *port = "device=\"mlx4_0\",port=\"1\"";
    WT_ASSERT(find_reading(&b, WT_M_IB_RX_BYTES, port) == NULL);
    WT_NEAR(reading_value(&b, WT_M_IB_TX_BYTES, port), 48.0, 0); /* the other one still counts */
    poll_ok(st, &b);
    WT_ASSERT(find_reading(&b, WT_M_IB_RX_BYTES, port) == NULL);
    ib_port("mlx4_0", 1, 25, 12); /* reset (perfquery -R) */
    poll_ok(st, &b);
    WT_NEAR(reading_value(&b, WT_M_IB_RX_BYTES, port), 100.0, 0);
    /* a 64-bit counter above 2^32 is not mistaken for a saturated one */
    ib_port("mlx4_0", 1, 4294967296ULL, 12);
    poll_ok(st, &b);
    WT_NEAR(reading_value(&b, WT_M_IB_RX_BYTES, port), 4294967296.0 * 4, 0);
    wt_batch_free(&b);
    wt_netdev_collector.close(st);
}

WT_TEST(netdev_vanished_interface_and_bad_file_are_skipped)
{
    use_root();
    nic("eth0", true, 10, 20);
    nic("eth1", true, 30, 40);
    void *st = open_ok();
    struct wt_batch b = {0};
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_NET_RX_BYTES), 2);
    char p[1024];
    snprintf(p, sizeof p, "%s/sysfs/sys/class/net/eth1/statistics/rx_bytes", wt_test_dir());
    WT_EQ_INT(unlink(p), 0);
    put("sys/class/net/eth0/statistics/tx_bytes", "garbage\n");
    poll_ok(st, &b);
    WT_EQ_INT(count_readings(&b, WT_M_NET_RX_BYTES), 1); /* eth1's is gone */
    WT_EQ_INT(count_readings(&b, WT_M_NET_TX_BYTES), 1); /* eth0's is garbage */
    WT_NEAR(reading_value(&b, WT_M_NET_TX_BYTES, "device=\"eth1\""), 40.0, 0);
    wt_batch_free(&b);
    wt_netdev_collector.close(st);
}

WT_TEST(netdev_absent_without_either_class_directory)
{
    use_root();
    void *st = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_netdev_collector.open(NULL, &st, &err), -ENOENT);
    WT_CONTAINS(err.msg, "sys/class/infiniband");
}

WT_TEST(netdev_read_u64_rejects_malformed_values)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/v", wt_test_dir());
    uint64_t v = 7;
    wt_test_write(p, "18446744073709551615\n");
    WT_EQ_INT(wt_netdev_read_u64(p, &v), 0);
    WT_EQ_U64(v, UINT64_MAX);
    wt_test_write(p, "18446744073709551616\n");
    WT_EQ_INT(wt_netdev_read_u64(p, &v), -EINVAL);
    wt_test_write(p, "12x\n");
    WT_EQ_INT(wt_netdev_read_u64(p, &v), -EINVAL);
    wt_test_write(p, "-1\n");
    WT_EQ_INT(wt_netdev_read_u64(p, &v), -EINVAL);
    wt_test_write(p, "\n");
    WT_EQ_INT(wt_netdev_read_u64(p, &v), -EINVAL);
    wt_test_write(p, "42");
    WT_EQ_INT(wt_netdev_read_u64(p, &v), 0);
    WT_EQ_U64(v, 42);
    WT_EQ_INT(wt_netdev_read_u64("/nonexistent/x", &v), -ENOENT);
}
