/* SPDX-License-Identifier: MIT */
/*
 * Network and InfiniBand traffic counters from sysfs; see netdev.h. The interfaces and ports
 * found by a scan are kept with their counter files open (collect/filesrc.h: pread at 0); the
 * directories are scanned again every WT_NETDEV_RESCAN_POLLS polls and at the poll after one
 * whose interface or port could not be read at all.
 */
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
#include "collect/filesrc.h"
#include "core/log.h"
#include "core/reading.h"

#define NETDEV_PATH_LEN 512
#define SAT_KEY_LEN 96
#define IB_SATURATED 4294967295ULL /* a 32-bit PortCounters field at its ceiling */

/* One counter file and the metric it feeds; scale turns its unit into bytes or packets. */
struct counter {
    const char *file;
    int metric;
    double scale;
};

#define NCOUNTERS 4

/* An interface or an InfiniBand port found by a scan, its counter files kept open. */
struct port {
    char dir[NETDEV_PATH_LEN]; /* its directory, which identifies it between scans */
    char labels[WT_LABELS_LEN];
    char ib[SAT_KEY_LEN - 24]; /* "dev/port" for InfiniBand, "" for a network interface */
    const struct counter *c;
    struct wt_filesrc f[NCOUNTERS];
    bool found; /* by the scan under way */
};

struct netdev {
    char net[NETDEV_PATH_LEN];            /* <root>/sys/class/net */
    char ib[NETDEV_PATH_LEN];             /* <root>/sys/class/infiniband */
    char sat[WT_NETDEV_MAX][SAT_KEY_LEN]; /* "dev/port/file" of saturated counters */
    size_t nsat;
    size_t seen; /* interfaces and ports found by the scan under way */
    bool said_too_many;
    struct port *p;
    size_t np, cap;
    unsigned polls_since_scan;
    bool need_scan;
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

int wt_netdev_parse_u64(const char *buf, uint64_t *out)
{
    size_t n = strlen(buf);
    if (n == 0)
        return -EINVAL;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] < '0' || buf[i] > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(buf[i] - '0'), &v))
            return -EINVAL;
    }
    *out = v;
    return 0;
}

int wt_netdev_read_u64(const char *path, uint64_t *out)
{
    struct wt_filesrc f = {0};
    char buf[32];
    int rc = wt_filesrc_init(&f, path);
    if (rc == 0)
        rc = wt_filesrc_read(&f, buf, sizeof buf);
    wt_filesrc_close(&f);
    if (rc == -E2BIG)
        return -EINVAL;
    return rc < 0 ? rc : wt_netdev_parse_u64(buf, out);
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

static void port_close(struct port *p)
{
    for (size_t i = 0; i < NCOUNTERS; i++)
        wt_filesrc_close(&p->f[i]);
}

/*
 * Keeps the interface or port in dir (found by the scan under way): the one followed already,
 * or a new one with its counter files. ib names the port ("dev/port"), NULL for an interface.
 * Returns 0 or -ENOMEM.
 */
static int keep_port(struct netdev *nd, const char *dir, const char *labels, const char *ib,
                     const struct counter *c)
{
    for (size_t i = 0; i < nd->np; i++) {
        if (strcmp(nd->p[i].dir, dir) == 0) {
            nd->p[i].found = true;
            return 0;
        }
    }
    if (nd->np == nd->cap) {
        size_t cap = nd->cap ? nd->cap * 2 : 8;
        struct port *np = realloc(nd->p, cap * sizeof *np);
        if (!np)
            return -ENOMEM;
        nd->p = np;
        nd->cap = cap;
    }
    struct port *p = &nd->p[nd->np];
    memset(p, 0, sizeof *p);
    snprintf(p->dir, sizeof p->dir, "%s", dir);
    snprintf(p->labels, sizeof p->labels, "%s", labels);
    snprintf(p->ib, sizeof p->ib, "%s", ib ? ib : "");
    p->c = c;
    p->found = true;
    for (size_t i = 0; i < NCOUNTERS; i++) {
        char path[NETDEV_PATH_LEN];
        if (snprintf(path, sizeof path, "%s/%s", dir, c[i].file) >= (int)sizeof path)
            path[0] = '\0'; /* too long: never read */
        if (wt_filesrc_init(&p->f[i], path) < 0) {
            port_close(p);
            return -ENOMEM;
        }
    }
    nd->np++;
    return 0;
}

static int scan_net(struct netdev *nd)
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
        rc = keep_port(nd, dir, labels, NULL, net_counters);
    }
    closedir(d);
    return rc;
}

static int scan_ib_device(struct netdev *nd, const char *dev)
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
        rc = keep_port(nd, dir, labels, name, ib_counters);
    }
    closedir(d);
    return rc;
}

static int scan_ib(struct netdev *nd)
{
    DIR *d = opendir(nd->ib);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)))
        if (!is_dot(e->d_name))
            rc = scan_ib_device(nd, e->d_name);
    closedir(d);
    return rc;
}

/*
 * Lists the interfaces and ports now present: new ones are added, those gone are closed and
 * dropped. Returns 0 or -ENOMEM.
 */
static int scan(struct netdev *nd)
{
    nd->seen = 0;
    for (size_t i = 0; i < nd->np; i++)
        nd->p[i].found = false;
    int rc = scan_net(nd);
    if (rc == 0)
        rc = scan_ib(nd);
    size_t keep = 0;
    for (size_t i = 0; i < nd->np; i++) {
        if (nd->p[i].found || rc < 0)
            nd->p[keep++] = nd->p[i];
        else
            port_close(&nd->p[i]);
    }
    nd->np = keep;
    nd->polls_since_scan = 0;
    nd->need_scan = false;
    return rc;
}

/*
 * Reads the counters of one interface or port and appends those it could read. Returns how
 * many it read, or -ENOMEM.
 */
static int read_port(struct netdev *nd, struct port *p, int64_t t_ns, struct wt_batch *out)
{
    int ok = 0;
    for (size_t i = 0; i < NCOUNTERS; i++) {
        char buf[32];
        uint64_t v;
        if (wt_filesrc_read(&p->f[i], buf, sizeof buf) < 0 || wt_netdev_parse_u64(buf, &v) != 0)
            continue; /* gone since the scan, or not offered by this driver */
        ok++;
        if (p->ib[0]) {
            char key[SAT_KEY_LEN];
            if (snprintf(key, sizeof key, "%s/%s", p->ib, strrchr(p->c[i].file, '/') + 1) >=
                    (int)sizeof key ||
                !ib_counter_usable(nd, key, v))
                continue;
        }
        if (wt_batch_add(out, p->c[i].metric, p->labels, t_ns, (double)v * p->c[i].scale) < 0)
            return -ENOMEM;
    }
    return ok;
}

static int netdev_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct netdev *nd = state;
    int rc = 0;
    if (nd->need_scan || ++nd->polls_since_scan >= WT_NETDEV_RESCAN_POLLS)
        rc = scan(nd);
    for (size_t i = 0; rc >= 0 && i < nd->np; i++) {
        rc = read_port(nd, &nd->p[i], t_ns, out);
        if (rc == 0)
            nd->need_scan = true; /* nothing of it readable: gone, look again next poll */
    }
    if (rc < 0) {
        wt_err_set(err, "out of memory");
        return rc;
    }
    return 0;
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
    nd->need_scan = true; /* the first poll finds the interfaces */
    *state = nd;
    return 0;
}

static void netdev_close(void *state)
{
    struct netdev *nd = state;
    if (!nd)
        return;
    for (size_t i = 0; i < nd->np; i++)
        port_close(&nd->p[i]);
    free(nd->p);
    free(nd);
}

static const struct wt_collector_config *netdev_config(const struct wt_config *cfg)
{
    return &cfg->collectors.netdev;
}

const struct wt_collector_ops wt_netdev_collector = {
    .name = "netdev",
    .file_source = true,
    .config = netdev_config,
    .open = netdev_open,
    .poll = netdev_poll,
    .close = netdev_close,
};
