/* SPDX-License-Identifier: MIT */
/*
 * The processes behind a listening port (collect/listener.h). The LISTEN rows of
 * /proc/PID/net/tcp{,6} (each process sees its own network namespace's table; state 0A is
 * TCP_LISTEN, the port is plain hex after the address), then the processes whose fd links name
 * the row's socket inode ("socket:[N]"; inodes are unique host-wide), then their serving tree.
 */
#include "collect/listener.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/procfs.h"

#define MAX_INODES 16

struct proc {
    int pid, ppid;
    unsigned long netns;
    char comm[32];
};

struct table {
    struct proc *p;
    size_t n, cap;
    int err;
};

static int read_text(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    size_t len = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[len] = '\0';
    return (int)len;
}

/* The namespace inode of a "net:[N]" link, 0 when it cannot be read. */
static unsigned long netns_of(const char *pid)
{
    char path[PATH_MAX], link[64];
    snprintf(path, sizeof path, "%s/proc/%s/ns/net", wt_procfs_root(), pid);
    ssize_t k = readlink(path, link, sizeof link - 1);
    if (k <= 0)
        return 0;
    link[k] = '\0';
    unsigned long v = 0;
    return sscanf(link, "net:[%lu]", &v) == 1 ? v : 0;
}

static void add_proc(void *ctx, int pid)
{
    struct table *t = ctx;
    char path[PATH_MAX], text[512], id[16];
    snprintf(path, sizeof path, "%s/proc/%d/stat", wt_procfs_root(), pid);
    if (read_text(path, text, sizeof text) <= 0)
        return; /* gone, or not ours to read */
    const char *open = strchr(text, '('), *close = strrchr(text, ')');
    int ppid;
    if (!open || !close || close < open || sscanf(close + 1, " %*c %d", &ppid) != 1)
        return;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct proc *p = realloc(t->p, cap * sizeof *p);
        if (!p) {
            t->err = -ENOMEM;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    struct proc *p = &t->p[t->n++];
    p->pid = pid;
    p->ppid = ppid;
    size_t cl = (size_t)(close - open - 1) < sizeof p->comm ? (size_t)(close - open - 1)
                                                            : sizeof p->comm - 1;
    memcpy(p->comm, open + 1, cl);
    p->comm[cl] = '\0';
    snprintf(id, sizeof id, "%d", pid);
    p->netns = netns_of(id);
}

size_t wt_listener_parse_tcp(const char *text, uint16_t port, unsigned long *inodes, size_t max)
{
    size_t n = 0;
    const char *line = strchr(text, '\n'); /* the header */
    while (line && *++line) {
        unsigned lport = 0, st = 0;
        unsigned long inode = 0;
        /* sl: local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*s %*s %*s %*u %*u %lu",
                   &lport, &st, &inode) == 3 &&
            st == 0x0A && lport == port && inode != 0) {
            if (n < max)
                inodes[n] = inode;
            n++;
        }
        line = strchr(line, '\n');
    }
    return n;
}

/* The LISTEN inodes of port in the namespace process `who` (a pid, or "self") sees. */
static size_t listening(const char *who, uint16_t port, unsigned long *inodes, size_t max)
{
    static const char *const tables[] = {"tcp", "tcp6"};
    size_t n = 0;
    for (size_t i = 0; i < 2; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/proc/%s/net/%s", wt_procfs_root(), who, tables[i]);
        char *text = malloc(1 << 20);
        if (!text)
            return n;
        if (read_text(path, text, 1 << 20) > 0)
            n += wt_listener_parse_tcp(text, port, inodes + (n < max ? n : max),
                                       n < max ? max - n : 0);
        free(text);
    }
    return n < max ? n : max;
}

/* True when one of process pid's fd links is "socket:[inode]" for an inode of the list. */
static bool holds(int pid, const unsigned long *inodes, size_t n)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/proc/%d/fd", wt_procfs_root(), pid);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char path[PATH_MAX + 300], link[64];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t k = readlink(path, link, sizeof link - 1);
        unsigned long v;
        if (k <= 0)
            continue;
        link[k] = '\0';
        if (sscanf(link, "socket:[%lu]", &v) == 1)
            for (size_t i = 0; i < n && !found; i++)
                found = inodes[i] == v;
    }
    closedir(d);
    return found;
}

static const struct proc *find(const struct table *t, int pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->p[i].pid == pid)
            return &t->p[i];
    return NULL;
}

/* A process that is not part of what it starts: shells, terminals, logins, init and the session
 * and container managers that start servers. */
static bool manager(const char *comm)
{
    static const char *const names[] = {"bash",        "sh",   "dash",   "zsh",         "fish",
                                        "ksh",         "tcsh", "csh",    "tmux",        "screen",
                                        "sshd",        "sudo", "su",     "login",       "init",
                                        "systemd",     "tini", "conmon", "docker-init", "dumb-init",
                                        "supervisord", "runc", "crun",   "s6-svscan",   NULL};
    for (int i = 0; names[i]; i++)
        if (strcmp(comm, names[i]) == 0)
            return true;
    return strncmp(comm, "containerd-shim", 15) == 0 || strncmp(comm, "tmux: ", 6) == 0;
}

static bool same_cgroup(int a, int b)
{
    char pa[PATH_MAX], pb[PATH_MAX], ta[1024], tb[1024];
    snprintf(pa, sizeof pa, "%s/proc/%d/cgroup", wt_procfs_root(), a);
    snprintf(pb, sizeof pb, "%s/proc/%d/cgroup", wt_procfs_root(), b);
    int la = read_text(pa, ta, sizeof ta), lb = read_text(pb, tb, sizeof tb);
    return la >= 0 && lb >= 0 && strcmp(ta, tb) == 0;
}

/* The top of a listener's serving tree: up through parents in its namespace and cgroup that are
 * not a manager, never to init. */
static int top_of(const struct table *t, const struct proc *p)
{
    const struct proc *cur = p;
    for (int depth = 0; depth < 64; depth++) {
        const struct proc *up = find(t, cur->ppid);
        if (!up || up->pid <= 1 || up->netns != p->netns || manager(up->comm) ||
            !same_cgroup(up->pid, p->pid))
            break;
        cur = up;
    }
    return cur->pid;
}

static bool under(const struct table *t, const struct proc *p, const int *tops, size_t ntops)
{
    const struct proc *cur = p;
    for (int depth = 0; cur && depth < 64; depth++) {
        for (size_t i = 0; i < ntops; i++)
            if (cur->pid == tops[i])
                return true;
        cur = find(t, cur->ppid);
    }
    return false;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int wt_listener_find(uint16_t port, bool loopback, int *pids, size_t max, size_t *n,
                     struct wt_err *err)
{
    struct table t = {0};
    unsigned long inodes[MAX_INODES], ns = 0;
    size_t ninodes = 0;
    int rc = wt_procfs_each_pid(add_proc, &t);
    *n = 0;
    if (rc == 0)
        rc = t.err;
    if (rc != 0) {
        wt_err_set(err, "%s/proc: %s", wt_procfs_root(), strerror(-rc));
        goto out;
    }
    if (loopback) {
        ns = netns_of("self");
        ninodes = listening("self", port, inodes, MAX_INODES);
    } else {
        /* one look per namespace, through the first process seen in it */
        for (size_t i = 0; i < t.n; i++) {
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                seen = t.p[k].netns == t.p[i].netns;
            if (seen || t.p[i].netns == 0)
                continue;
            char id[16];
            snprintf(id, sizeof id, "%d", t.p[i].pid);
            unsigned long found[MAX_INODES];
            size_t k = listening(id, port, found, MAX_INODES);
            if (k == 0)
                continue;
            if (ninodes) {
                rc = -EEXIST;
                wt_err_set(err, "port %u listens in more than one network namespace", port);
                goto out;
            }
            memcpy(inodes, found, k * sizeof *found);
            ninodes = k;
            ns = t.p[i].netns;
        }
    }
    if (ninodes == 0) {
        rc = -ENOENT;
        wt_err_set(err, "nothing listens on port %u", port);
        goto out;
    }
    int tops[WT_LISTENER_MAX_PIDS];
    size_t ntops = 0;
    for (size_t i = 0; i < t.n && ntops < WT_LISTENER_MAX_PIDS; i++) {
        if ((ns && t.p[i].netns != ns) || !holds(t.p[i].pid, inodes, ninodes))
            continue;
        int top = top_of(&t, &t.p[i]);
        bool dup = false;
        for (size_t k = 0; k < ntops && !dup; k++)
            dup = tops[k] == top;
        if (!dup)
            tops[ntops++] = top;
    }
    if (ntops == 0) {
        rc = -ENOENT;
        wt_err_set(err, "port %u listens, but no process can be seen holding it", port);
        goto out;
    }
    for (size_t i = 0; i < t.n && *n < max; i++)
        if (under(&t, &t.p[i], tops, ntops))
            pids[(*n)++] = t.p[i].pid;
    qsort(pids, *n, sizeof *pids, cmp_int);
out:
    free(t.p);
    return rc;
}
