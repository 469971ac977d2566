/* SPDX-License-Identifier: MIT */
/* The kernel's clock discipline and PTP hardware clocks as series; see clocksync.h. */
#include "collect/clocksync.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/collector.h"
#include "core/log.h"
#include "core/reading.h"

#define CS_PATH_LEN 512
/* A dynamic POSIX clock id from a PHC's file descriptor (the kernel's FD_TO_CLOCKID). */
#define PHC_CLOCKID(fd) ((clockid_t)((((unsigned int)~(fd)) << 3) | 3))

struct phc {
    char device[16]; /* "ptp0" */
    char name[64];   /* clock_name */
    int fd;          /* -1 when it could not be opened */
};

struct clocksync {
    char ptp_dir[CS_PATH_LEN]; /* <root>/sys/class/ptp */
    bool real_root;            /* no fake sysfs: /dev/ptpN are this host's */
    struct phc phc[WT_CLOCKSYNC_MAX_PTP];
    size_t nphc;
};

int wt_clocksync_append(const struct wt_clock_sync *cs, int64_t t_ns, struct wt_batch *out)
{
    if (!cs->known)
        return 0;
    const struct {
        int metric;
        double v;
    } v[] = {
        {WT_M_CLOCK_SYNCED, cs->synchronized ? 1 : 0},
        {WT_M_CLOCK_EST_ERROR_S, cs->est_error_s},
        {WT_M_CLOCK_MAX_ERROR_S, cs->max_error_s},
        {WT_M_CLOCK_OFFSET_S, cs->offset_s},
        {WT_M_CLOCK_STATUS, (double)(unsigned int)cs->status},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (wt_batch_add(out, v[i].metric, "", t_ns, v[i].v) < 0)
            return -ENOMEM;
    return 0;
}

/* Reads the first line of a small sysfs file into buf (newline dropped). */
static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    if (!fgets(buf, (int)n, f)) {
        fclose(f);
        return -EIO;
    }
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static int cmp_phc(const void *a, const void *b)
{
    return strcmp(((const struct phc *)a)->device, ((const struct phc *)b)->device);
}

/* Finds the PHCs once, at open: they come with their NICs' drivers, not mid-run. */
static void scan_ptp(struct clocksync *s)
{
    DIR *d = opendir(s->ptp_dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "ptp", 3) != 0 || strlen(e->d_name) >= sizeof s->phc[0].device)
            continue;
        if (s->nphc == WT_CLOCKSYNC_MAX_PTP) {
            wt_warn("clock", "more than %d PTP clocks: the rest are not read",
                    WT_CLOCKSYNC_MAX_PTP);
            break;
        }
        struct phc *p = &s->phc[s->nphc];
        char path[CS_PATH_LEN];
        snprintf(p->device, sizeof p->device, "%s", e->d_name);
        if (snprintf(path, sizeof path, "%s/%s/clock_name", s->ptp_dir, e->d_name) >=
                (int)sizeof path ||
            read_line(path, p->name, sizeof p->name) != 0)
            snprintf(p->name, sizeof p->name, "unknown");
        p->fd = -1;
        s->nphc++;
    }
    closedir(d);
    if (s->nphc)
        qsort(s->phc, s->nphc, sizeof s->phc[0], cmp_phc);
    for (size_t i = 0; i < s->nphc && s->real_root; i++) {
        char dev[32];
        snprintf(dev, sizeof dev, "/dev/%s", s->phc[i].device);
        s->phc[i].fd = open(dev, O_RDONLY | O_CLOEXEC);
        if (s->phc[i].fd < 0)
            wt_info("clock", "cannot open %s (%s): its offset to the system clock is not read", dev,
                    strerror(errno));
    }
}

/* The PHC minus CLOCK_REALTIME, at the midpoint of two system reads around the PHC's. */
static int phc_offset(int fd, double *out_s)
{
    struct timespec a, p, b;
    if (clock_gettime(CLOCK_REALTIME, &a) != 0 || clock_gettime(PHC_CLOCKID(fd), &p) != 0 ||
        clock_gettime(CLOCK_REALTIME, &b) != 0)
        return -errno;
    int64_t ta = (int64_t)a.tv_sec * WT_NS_PER_S + a.tv_nsec;
    int64_t tb = (int64_t)b.tv_sec * WT_NS_PER_S + b.tv_nsec;
    int64_t tp = (int64_t)p.tv_sec * WT_NS_PER_S + p.tv_nsec;
    *out_s = (double)(tp - (ta + (tb - ta) / 2)) / 1e9;
    return 0;
}

void wt_peer_skew(int64_t stamp_s, int64_t before_ns, int64_t after_ns, double *skew_s,
                  double *uncert_s)
{
    if (after_ns < before_ns) { /* a clock step between the two reads: take the later alone */
        before_ns = after_ns;
    }
    /* In ns until the end, so that unix seconds keep their precision. */
    int64_t peer_mid = stamp_s * WT_NS_PER_S + WT_NS_PER_S / 2;
    int64_t ours_mid = before_ns + (after_ns - before_ns) / 2;
    *skew_s = (double)(peer_mid - ours_mid) / 1e9;
    *uncert_s = 0.5 + (double)(after_ns - before_ns) / 2e9;
}

bool wt_peer_skew_beyond(double skew_s, double uncert_s, double bound_s)
{
    return fabs(skew_s) - uncert_s > bound_s;
}

void wt_peer_skew_note(struct wt_peer_skew_watch *w, const char *module, const char *who,
                       double skew_s, double uncert_s, double bound_s)
{
    bool beyond = wt_peer_skew_beyond(skew_s, uncert_s, bound_s);
    if (beyond && !w->beyond)
        wt_warn(module,
                "%s: its clock is %+.1f s (+/- %.1f s) from this host's, beyond "
                "daemon.clock_max_error (%.3f s): its readings are stamped with this host's "
                "time, but its own logs and counters' times are off by that much",
                who, skew_s, uncert_s, bound_s);
    else if (!beyond && w->beyond)
        wt_info(module, "%s: its clock is within daemon.clock_max_error again (%+.1f s +/- %.1f s)",
                who, skew_s, uncert_s);
    w->beyond = beyond;
}

static int clocksync_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct clocksync *s = state;
    struct wt_clock_sync cs;
    wt_clock_sync_read(&cs);
    if (wt_clocksync_append(&cs, t_ns, out) != 0)
        goto oom;
    for (size_t i = 0; i < s->nphc; i++) {
        char l[WT_LABELS_LEN];
        double off = 0;
        if (wt_labels(l, sizeof l, "device", s->phc[i].device, "clock", s->phc[i].name, NULL) < 0 ||
            wt_batch_add(out, WT_M_CLOCK_PTP_INFO, l, t_ns, 1) < 0)
            goto oom;
        if (s->phc[i].fd < 0 || phc_offset(s->phc[i].fd, &off) != 0)
            continue;
        if (wt_labels(l, sizeof l, "device", s->phc[i].device, NULL) < 0 ||
            wt_batch_add(out, WT_M_CLOCK_PTP_OFFSET_S, l, t_ns, off) < 0)
            goto oom;
    }
    return 0;
oom:
    wt_err_set(err, "out of memory");
    return -ENOMEM;
}

static void clocksync_close(void *state)
{
    struct clocksync *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < s->nphc; i++)
        if (s->phc[i].fd >= 0)
            close(s->phc[i].fd);
    free(s);
}

static int clocksync_open(const struct wt_config *cfg, void **state, struct wt_err *err)
{
    (void)cfg;
    struct clocksync *s = calloc(1, sizeof *s);
    if (!s)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    const char *root = wt_sysfs_root();
    s->real_root = root[0] == '\0';
    if (snprintf(s->ptp_dir, sizeof s->ptp_dir, "%s/sys/class/ptp", root) >=
        (int)sizeof s->ptp_dir) {
        free(s);
        return wt_err_set(err, "sysfs root too long"), -ENAMETOOLONG;
    }
    struct wt_clock_sync cs;
    wt_clock_sync_read(&cs);
    scan_ptp(s);
    if (!cs.known && s->nphc == 0) {
        wt_err_set(err, "the kernel does not answer ntp_adjtime and %s has no PTP clocks",
                   s->ptp_dir);
        clocksync_close(s);
        return -ENOENT;
    }
    *state = s;
    return 0;
}

static const struct wt_collector_config *clocksync_config(const struct wt_config *cfg)
{
    return &cfg->collectors.clock;
}

const struct wt_collector_ops wt_clock_collector = {
    .name = "clock",
    .file_source = true,
    .config = clocksync_config,
    .open = clocksync_open,
    .poll = clocksync_poll,
    .close = clocksync_close,
};
