/* SPDX-License-Identifier: MIT */
/*
 * The processes behind a listening TCP port, read from procfs (through wt_procfs_root(), as the
 * other procfs readers): the port's LISTEN socket in the network namespace it belongs to, the
 * processes holding that socket, and the serving tree around them. The listener is rarely the
 * process on the GPU (vLLM's API server and its EngineCore, TGI's router and its shards, SGLang's
 * tokenizer and its schedulers), so the tree is taken: from the listener up through parents in
 * the same cgroup that are not a shell, a session or container manager or init, and everything
 * below that top.
 */
#ifndef WT_LISTENER_H
#define WT_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define WT_LISTENER_MAX_PIDS 64

/*
 * Finds the serving processes of port. loopback: the URL names this host's loopback (127.0.0.0/8,
 * ::1, localhost), so the listener is in wattage's own network namespace; else every namespace
 * is searched and exactly one must listen on the port. Writes up to max pids, sorted, to pids and
 * their count to *n. Returns 0; -ENOENT with err when nothing listens on the port (or no process
 * can be seen holding its socket: another user's, without CAP_SYS_PTRACE); -EEXIST when several
 * namespaces listen on it; -errno when procfs cannot be read.
 */
int wt_listener_find(uint16_t port, bool loopback, int *pids, size_t max, size_t *n,
                     struct wt_err *err);

/* Parses a /proc/net/tcp or tcp6 text: the socket inodes of the LISTEN rows on port, up to max.
 * Returns how many (more than max when cut). */
size_t wt_listener_parse_tcp(const char *text, uint16_t port, unsigned long *inodes, size_t max);

#endif
