/* SPDX-License-Identifier: MIT */
/*
 * Network traffic from sysfs, so a job's energy can be read beside what it moved:
 *   <sysfs_root>/sys/class/net/<dev>/statistics/{rx,tx}_{bytes,packets}
 *     -> wattage_network_{receive,transmit}_{bytes,packets}_total{device}
 *   <sysfs_root>/sys/class/infiniband/<dev>/ports/<n>/counters/port_{rcv,xmit}_{data,packets}
 *     -> wattage_infiniband_{receive,transmit}_{bytes,packets}_total{device,port}
 * Only interfaces backed by a device (a "device" link: NICs, IPoIB) are read; lo, bridges, veths
 * and bonds are left out so traffic is not counted twice. port_*_data counts 4-octet words (the
 * InfiniBand PortCounters convention) and is multiplied by 4 here. A 32-bit InfiniBand counter
 * stuck at 2^32-1 has saturated (the IB counters do not wrap): it is logged once and no longer
 * published, since a flat counter would read as no traffic. The device list is scanned on every
 * poll, so interfaces that come and go are followed; one that vanishes mid-read is skipped.
 */
#ifndef WT_NETDEV_H
#define WT_NETDEV_H

#include <stdint.h>

#include "core/source.h"

extern const struct wt_collector_ops wt_netdev_collector;

/* Most interfaces plus InfiniBand ports followed per poll; more are logged once and left out. */
#define WT_NETDEV_MAX 256

/* Reads one sysfs counter: a decimal u64 and an optional newline. Returns 0, or -errno. */
int wt_netdev_read_u64(const char *path, uint64_t *out);

#endif
