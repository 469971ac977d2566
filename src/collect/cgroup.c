/* SPDX-License-Identifier: MIT */
/* A process's owner from its cgroup path; see cgroup.h. */
#include "collect/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/collector.h"

#define CG_FILE_MAX 65536
#define CG_COMPONENTS 64

const char *wt_owner_kind_name(enum wt_owner_kind kind)
{
    switch (kind) {
    case WT_OWNER_SLURM:
        return "slurm";
    case WT_OWNER_K8S:
        return "kubernetes";
    case WT_OWNER_SYSTEMD:
        return "systemd";
    case WT_OWNER_NONE:
        break;
    }
    return "none";
}

/* A path component: start and length within the line. */
struct part {
    const char *s;
    size_t n;
};

static bool has_prefix(struct part p, const char *pre)
{
    size_t k = strlen(pre);
    return p.n >= k && memcmp(p.s, pre, k) == 0;
}

static bool has_suffix(struct part p, const char *suf)
{
    size_t k = strlen(suf);
    return p.n >= k && memcmp(p.s + p.n - k, suf, k) == 0;
}

static bool equals(struct part p, const char *s)
{
    return p.n == strlen(s) && memcmp(p.s, s, p.n) == 0;
}

/* Copies n bytes of s into out (size cap) when they fit and are all in the allowed set. */
static bool take(char *out, size_t cap, const char *s, size_t n, const char *allowed)
{
    if (n == 0 || n >= cap)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr(allowed, s[i]) || s[i] == '\0')
            return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

#define DIGITS "0123456789"
#define WORD "abcdefghijklmnopqrstuvwxyz0123456789_"
#define HEX "0123456789abcdef"
#define UID_CHARS "0123456789abcdef-_"

static size_t split(const char *path, size_t len, struct part *parts, size_t max)
{
    size_t n = 0, i = 0;
    while (i < len && n < max) {
        while (i < len && path[i] == '/')
            i++;
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        if (j > i)
            parts[n++] = (struct part){path + i, j - i};
        i = j;
    }
    return n;
}

static bool slurm_root(struct part p)
{
    return equals(p, "slurm") || has_prefix(p, "slurm_") || has_suffix(p, "slurmstepd.scope");
}

static bool parse_slurm(const struct part *p, size_t n, struct wt_proc_owner *o)
{
    size_t i = 0;
    while (i < n && !slurm_root(p[i]))
        i++;
    for (; i < n; i++) {
        if (!has_prefix(p[i], "job_") ||
            !take(o->slurm_job, sizeof o->slurm_job, p[i].s + 4, p[i].n - 4, DIGITS))
            continue;
        if (i + 1 < n && has_prefix(p[i + 1], "step_"))
            take(o->slurm_step, sizeof o->slurm_step, p[i + 1].s + 5, p[i + 1].n - 5, WORD);
        o->kind = WT_OWNER_SLURM;
        return true;
    }
    return false;
}

/* The container id of a component after the pod's: "<64 hex>" or "<runtime>-<64 hex>.scope". */
static void k8s_container(struct part c, struct wt_proc_owner *o)
{
    if (has_suffix(c, ".scope")) {
        c.n -= strlen(".scope");
        if (has_prefix(c, "crio-conmon-"))
            return; /* CRI-O's monitor, not the container */
        const char *dash = memrchr(c.s, '-', c.n);
        if (!dash)
            return;
        c.n -= (size_t)(dash + 1 - c.s);
        c.s = dash + 1;
    }
    take(o->container, sizeof o->container, c.s, c.n, HEX);
}

/* "pod<uid>" (cgroupfs) or "kubepods[-qos]-pod<uid with _>.slice" (systemd): the uid part. */
static bool k8s_pod(struct part p, struct wt_proc_owner *o)
{
    const char *at = NULL;
    size_t n = 0;
    if (has_prefix(p, "pod")) {
        at = p.s + 3;
        n = p.n - 3;
    } else if (has_prefix(p, "kubepods") && has_suffix(p, ".slice")) {
        const char *pod = NULL;
        for (size_t i = 0; i + 4 <= p.n; i++)
            if (memcmp(p.s + i, "-pod", 4) == 0)
                pod = p.s + i + 4;
        if (!pod)
            return false;
        at = pod;
        n = (size_t)(p.s + p.n - strlen(".slice") - pod);
    } else {
        return false;
    }
    if (!take(o->pod_uid, sizeof o->pod_uid, at, n, UID_CHARS))
        return false;
    for (char *c = o->pod_uid; *c; c++)
        if (*c == '_')
            *c = '-';
    return true;
}

static void k8s_qos(struct part p, struct wt_proc_owner *o)
{
    static const char *const qos[] = {"burstable", "besteffort"};
    for (size_t k = 0; k < 2; k++) {
        char slice[40];
        snprintf(slice, sizeof slice, "kubepods-%s.slice", qos[k]);
        if (equals(p, qos[k]) || equals(p, slice))
            snprintf(o->pod_qos, sizeof o->pod_qos, "%s", qos[k]);
    }
}

static bool parse_k8s(const struct part *p, size_t n, struct wt_proc_owner *o)
{
    size_t i = 0;
    while (i < n && !has_prefix(p[i], "kubepods"))
        i++;
    if (i == n)
        return false;
    for (; i < n; i++) {
        k8s_qos(p[i], o);
        if (!k8s_pod(p[i], o))
            continue;
        if (!o->pod_qos[0])
            snprintf(o->pod_qos, sizeof o->pod_qos, "guaranteed");
        if (i + 1 < n)
            k8s_container(p[i + 1], o);
        o->kind = WT_OWNER_K8S;
        return true;
    }
    o->pod_qos[0] = '\0';
    return false;
}

static void systemd_unit(const struct part *p, size_t n, struct wt_proc_owner *o)
{
    for (size_t i = n; i-- > 0;) {
        if (has_suffix(p[i], ".service") || has_suffix(p[i], ".scope")) {
            take(o->unit, sizeof o->unit, p[i].s, p[i].n,
                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.-@\\");
            return;
        }
    }
}

/* The owner one cgroup path names. */
static void parse_path(const char *path, size_t len, struct wt_proc_owner *o)
{
    struct part p[CG_COMPONENTS];
    size_t n = split(path, len, p, CG_COMPONENTS);
    memset(o, 0, sizeof *o);
    systemd_unit(p, n, o);
    if (parse_slurm(p, n, o) || parse_k8s(p, n, o))
        return;
    if (o->unit[0])
        o->kind = WT_OWNER_SYSTEMD;
}

static int rank(enum wt_owner_kind k)
{
    return k == WT_OWNER_SLURM ? 3 : k == WT_OWNER_K8S ? 2 : k == WT_OWNER_SYSTEMD ? 1 : 0;
}

int wt_cgroup_parse(const char *text, struct wt_proc_owner *out, struct wt_err *err)
{
    memset(out, 0, sizeof *out);
    bool have_v2 = false;
    int lineno = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        lineno++;
        if (len > 0) {
            const char *c1 = memchr(line, ':', len);
            const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
            if (!c1 || !c2 || c1 == line || c2[1] != '/') {
                wt_err_set(err, "cgroup line %d: expected hierarchy:controllers:/path", lineno);
                return -EINVAL;
            }
            bool v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
            struct wt_proc_owner o;
            parse_path(c2 + 1, len - (size_t)(c2 + 1 - line), &o);
            /* The strongest owner wins; between equals the unified (v2) line. */
            if (rank(o.kind) > rank(out->kind) ||
                (rank(o.kind) == rank(out->kind) && v2 && !have_v2 && o.kind != WT_OWNER_NONE))
                *out = o;
            have_v2 |= v2;
        }
        line += len + (end ? 1 : 0);
    }
    return 0;
}

int wt_cgroup_owner(pid_t pid, struct wt_proc_owner *out, struct wt_err *err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/proc/%d/cgroup", wt_procfs_root(), (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int rc = -errno;
        wt_err_set(err, "%s: %s", path, strerror(-rc));
        return rc;
    }
    char *buf = malloc(CG_FILE_MAX);
    if (!buf) {
        close(fd);
        return wt_err_set(err, "out of memory"), -ENOMEM;
    }
    size_t len = 0;
    ssize_t k = 0;
    while (len < CG_FILE_MAX - 1 && (k = read(fd, buf + len, CG_FILE_MAX - 1 - len)) > 0)
        len += (size_t)k;
    int rc = k < 0 ? -errno : 0;
    close(fd);
    buf[len] = '\0';
    if (rc == 0) {
        struct wt_err e = {{0}};
        rc = wt_cgroup_parse(buf, out, &e);
        if (rc < 0)
            wt_err_set(err, "%s: %s", path, e.msg);
    } else {
        wt_err_set(err, "%s: %s", path, strerror(-rc));
    }
    free(buf);
    return rc;
}

static const char *podlog_root(void)
{
    const char *v = getenv("WATTAGE_PODLOG_ROOT");
    return v ? v : "/var/log/pods";
}

/* "<ns>_<name>_<uid>": namespaces and pod names are DNS names (no '_'), the uid comes last. */
static bool pod_dir_matches(const char *d, const char *uid, char *ns, size_t ns_cap, char *name,
                            size_t name_cap)
{
    const char *a = strchr(d, '_');
    const char *b = strrchr(d, '_');
    if (!a || a == b || a == d || b == a + 1 || strcmp(b + 1, uid) != 0)
        return false;
    size_t nl = (size_t)(a - d), ml = (size_t)(b - a - 1);
    if (nl >= ns_cap || ml >= name_cap || memchr(a + 1, '_', ml))
        return false;
    memcpy(ns, d, nl);
    ns[nl] = '\0';
    memcpy(name, a + 1, ml);
    name[ml] = '\0';
    return true;
}

int wt_pod_lookup(const char *pod_uid, char *ns, size_t ns_cap, char *name, size_t name_cap)
{
    if (!pod_uid || !*pod_uid || ns_cap == 0 || name_cap == 0)
        return -ENOENT;
    DIR *dir = opendir(podlog_root());
    if (!dir)
        return -errno;
    int rc = -ENOENT;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (pod_dir_matches(e->d_name, pod_uid, ns, ns_cap, name, name_cap)) {
            rc = 0;
            break;
        }
    closedir(dir);
    if (rc != 0)
        ns[0] = name[0] = '\0';
    return rc;
}
