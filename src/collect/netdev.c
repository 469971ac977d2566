/* SPDX-License-Identifier: MIT */
/* Network and InfiniBand traffic counters from sysfs; see netdev.h. */
#include "collect/netdev.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/collector.h"
#include "core/log.h"
#include "core/reading.h"

#define NETDEV_PATH_LEN 512
#define SAT_KEY_LEN 96
#define IB_SATURATED 4294967295ULL /* a 32-bit PortCounters field at its ceiling */

struct netdev {
    char net[NETDEV_PATH_LEN];            /* <root>/sys/class/net */
    char ib[NETDEV_PATH_LEN];             /* <root>/sys/class/infiniband */
    char sat[WT_NETDEV_MAX][SAT_KEY_LEN]; /* "dev/port/file" of saturated counters */
    size_t nsat;
    size_t seen; /* interfaces and ports read this poll */
    bool said_too_many;
};

/* One counter file and the metric it feeds; scale turns its unit into bytes or packets. */
struct counter {
    const char *file;
    int metric;
    double scale;
};

static const struct counter net_counters[] = {
    {"statistics/rx_bytes", WT_M_NET_RX_BYTES, 1},
    {"statistics/tx_bytes", WT_M_NET_TX_BYTES, 1},
    {"statistics/rx_packets", WT_M_NET_RX_PACKETS, 1},
    {"statistics/tx_packets", WT_M_NET_TX_PACKETS, 1},
};

static const struct counter ib_counters[] = {
    {"counters/port_rcv_data", WT_M_IB_RX_BYTES, 4}, /* 4-octet words */
    {"counters/port_xmit_data", WT_M_IB_TX_BYTES, 4},
    {"counters/port_rcv_packets", WT_M_IB_RX_PACKETS, 1},
    {"counters/port_xmit_packets", WT_M_IB_TX_PACKETS, 1},
};

int wt_netdev_read_u64(const char *path, uint64_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int saved = errno;
    close(fd);
    if (n < 0)
        return -saved;
    buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    if (n == 0 || n == (ssize_t)sizeof buf - 1)
        return -EINVAL;
    uint64_t v = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] < '0' || buf[i] > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(buf[i] - '0'), &v))
            return -EINVAL;
    }
    *out = v;
    return 0;
}

static bool is_dot(const char *name)
{
    return name[0] == '.';
}

static bool exists(const char *dir, const char *name, const char *leaf)
{
    char p[NETDEV_PATH_LEN];
    if (snprintf(p, sizeof p, "%s/%s/%s", dir, name, leaf) >= (int)sizeof p)
        return false;
    return access(p, F_OK) == 0;
}

static ssize_t sat_find(const struct netdev *nd, const char *key)
{
    for (size_t i = 0; i < nd->nsat; i++)
        if (strcmp(nd->sat[i], key) == 0)
            return (ssize_t)i;
    return -1;
}

/*
 * Whether an InfiniBand counter at value may be published: a saturated one is logged once and
 * held back until it reads below its ceiling again (reset by the driver or by perfquery -R).
 */
static bool ib_counter_usable(struct netdev *nd, const char *key, uint64_t value)
{
    ssize_t i = sat_find(nd, key);
    if (value == IB_SATURATED) {
        if (i < 0 && nd->nsat < WT_NETDEV_MAX) {
            snprintf(nd->sat[nd->nsat++], SAT_KEY_LEN, "%s", key);
            wt_warn("netdev",
                    "infiniband %s is saturated at 2^32-1 (32-bit counters do not wrap): no "
                    "longer published until it is reset",
                    key);
        }
        return false;
    }
    if (i >= 0) {
        wt_info("netdev", "infiniband %s counts again", key);
        memmove(nd->sat[i], nd->sat[i + 1], (nd->nsat - (size_t)i - 1) * SAT_KEY_LEN);
        nd->nsat--;
    }
    return true;
}

/* Counts one more interface or port against WT_NETDEV_MAX; false when over it. */
static bool take_slot(struct netdev *nd)
{
    if (nd->seen < WT_NETDEV_MAX) {
        nd->seen++;
        return true;
    }
    if (!nd->said_too_many) {
        wt_warn("netdev", "more than %d interfaces and ports: the rest are not read",
                WT_NETDEV_MAX);
        nd->said_too_many = true;
    }
    return false;
}

/*
 * Reads the counters of one interface or port directory and appends those it could read; ib
 * names the port ("dev/port") for InfiniBand, NULL for a network interface.
 */
static int read_counters(struct netdev *nd, const char *dir, const struct counter *c, size_t n,
                         const char *labels, const char *ib, int64_t t_ns, struct wt_batch *out)
{
    for (size_t i = 0; i < n; i++) {
        char path[NETDEV_PATH_LEN];
        uint64_t v;
        if (snprintf(path, sizeof path, "%s/%s", dir, c[i].file) >= (int)sizeof path ||
            wt_netdev_read_u64(path, &v) != 0)
            continue; /* gone between the scan and the read, or not offered by this driver */
        if (ib) {
            char key[SAT_KEY_LEN];
            snprintf(key, sizeof key, "%s/%s", ib, strrchr(c[i].file, '/') + 1);
            if (!ib_counter_usable(nd, key, v))
                continue;
        }
        if (wt_batch_add(out, c[i].metric, labels, t_ns, (double)v * c[i].scale) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int poll_net(struct netdev *nd, int64_t t_ns, struct wt_batch *out)
{
    DIR *d = opendir(nd->net);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        /* Only interfaces a device backs: lo, bridges, veths and bonds would count twice. */
        if (is_dot(e->d_name) || !exists(nd->net, e->d_name, "device") || !take_slot(nd))
            continue;
        char dir[NETDEV_PATH_LEN], labels[WT_LABELS_LEN];
        if (snprintf(dir, sizeof dir, "%s/%s", nd->net, e->d_name) >= (int)sizeof dir ||
            wt_labels(labels, sizeof labels, "device", e->d_name, NULL) < 0)
            continue;
        rc = read_counters(nd, dir, net_counters, sizeof net_counters / sizeof net_counters[0],
                           labels, NULL, t_ns, out);
    }
    closedir(d);
    return rc;
}

static int poll_ib_device(struct netdev *nd, const char *dev, int64_t t_ns, struct wt_batch *out)
{
    char ports[NETDEV_PATH_LEN];
    if (snprintf(ports, sizeof ports, "%s/%s/ports", nd->ib, dev) >= (int)sizeof ports)
        return 0;
    DIR *d = opendir(ports);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (is_dot(e->d_name) || !take_slot(nd))
            continue;
        char dir[NETDEV_PATH_LEN], labels[WT_LABELS_LEN], name[SAT_KEY_LEN];
        if (snprintf(dir, sizeof dir, "%s/%s", ports, e->d_name) >= (int)sizeof dir ||
            snprintf(name, sizeof name, "%s/%s", dev, e->d_name) >= SAT_KEY_LEN - 24 ||
            wt_labels(labels, sizeof labels, "device", dev, "port", e->d_name, NULL) < 0)
            continue;
        rc = read_counters(nd, dir, ib_counters, sizeof ib_counters / sizeof ib_counters[0], labels,
                           name, t_ns, out);
    }
    closedir(d);
    return rc;
}

static int poll_ib(struct netdev *nd, int64_t t_ns, struct wt_batch *out)
{
    DIR *d = opendir(nd->ib);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)))
        if (!is_dot(e->d_name))
            rc = poll_ib_device(nd, e->d_name, t_ns, out);
    closedir(d);
    return rc;
}

static int netdev_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct netdev *nd = state;
    nd->seen = 0;
    int rc = poll_net(nd, t_ns, out);
    if (rc == 0)
        rc = poll_ib(nd, t_ns, out);
    if (rc < 0)
        wt_err_set(err, "out of memory");
    return rc;
}

static int netdev_open(const struct wt_config *cfg, void **state, struct wt_err *err)
{
    (void)cfg;
    struct netdev *nd = calloc(1, sizeof *nd);
    if (!nd)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    const char *root = wt_sysfs_root();
    if (snprintf(nd->net, sizeof nd->net, "%s/sys/class/net", root) >= (int)sizeof nd->net ||
        snprintf(nd->ib, sizeof nd->ib, "%s/sys/class/infiniband", root) >= (int)sizeof nd->ib) {
        free(nd);
        return wt_err_set(err, "sysfs root too long"), -ENAMETOOLONG;
    }
    if (access(nd->net, F_OK) != 0 && access(nd->ib, F_OK) != 0) {
        wt_err_set(err, "neither %s nor %s exists", nd->net, nd->ib);
        free(nd);
        return -ENOENT;
    }
    *state = nd;
    return 0;
}

static void netdev_close(void *state)
{
    free(state);
}

static const struct wt_collector_config *netdev_config(const struct wt_config *cfg)
{
    return &cfg->collectors.netdev;
}

const struct wt_collector_ops wt_netdev_collector = {
    .name = "netdev",
    .config = netdev_config,
    .open = netdev_open,
    .poll = netdev_poll,
    .close = netdev_close,
};
