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
 * published, since a flat counter would read as no traffic. The counter files stay open and are
 * read with pread at offset 0; the device list is scanned again every WT_NETDEV_RESCAN_POLLS
 * polls (a new interface is read within that many ticks) and at the poll after one in which an
 * interface or port could not be read at all (it went away: its files are closed).
 */
#ifndef WT_NETDEV_H
#define WT_NETDEV_H

#include <stdint.h>

#include "core/source.h"

extern const struct wt_collector_ops wt_netdev_collector;

/* Most interfaces plus InfiniBand ports followed per poll; more are logged once and left out. */
#define WT_NETDEV_MAX 256

/* Polls between two scans of the interfaces and ports. */
#define WT_NETDEV_RESCAN_POLLS 10

/* Reads one sysfs counter: a decimal u64 and an optional newline. Returns 0, or -errno. */
int wt_netdev_read_u64(const char *path, uint64_t *out);

/* Parses a counter's text (trailing whitespace removed): a decimal u64. 0 or -EINVAL. */
int wt_netdev_parse_u64(const char *buf, uint64_t *out);

#endif
