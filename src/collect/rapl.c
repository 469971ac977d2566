/* SPDX-License-Identifier: MIT */
/*
 * RAPL collector: walks <sysfs_root>/sys/class/powercap for intel-rapl:N (packages, psys) and
 * intel-rapl:N:M (core, uncore, dram) zones and follows each zone's energy_uj counter (µJ,
 * wrapping at max_energy_range_uj) with a struct wt_energy_counter, so wraps and resets are
 * handled in integer µJ and converted to joules once, here, when readings are emitted.
 *
 * The intel-rapl-mmio zones duplicate the MSR package zones on client parts; they are used only
 * when no MSR zone exists. The zone list is scanned again every WT_RAPL_RESCAN_POLLS polls and
 * after any read failure, so zones that come and go (module reload, hotplug) never crash us.
 * Each zone's energy_uj stays open and is read with pread at offset 0 (collect/filesrc.h): a
 * zone removed and back is reopened by its path.
 */
#include "collect/rapl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/filesrc.h"
#include "core/energy.h"
#include "core/log.h"
#include "core/reading.h"

#define WT_RAPL_MAX_ZONES 256
#define WT_RAPL_RESCAN_POLLS 30
#define ZONE_DIR_LEN 64
#define PREFIX "intel-rapl"
#define PREFIX_MMIO "intel-rapl-mmio"

wt_rapl_read_fn wt_rapl_read_file = wt_rapl_read_file_default;

/* One powercap zone, followed for the collector's life; kept (not present) when it vanishes. */
struct zone {
    char dir[ZONE_DIR_LEN]; /* entry name under the class dir, e.g. "intel-rapl:0:1" */
    char labels[WT_LABELS_LEN];
    struct wt_filesrc energy; /* energy_uj, kept open and read with pread at 0 */
    uint64_t max_range_uj;    /* the wrap modulus; 0 when unknown: any decrease is then a reset */
    struct wt_energy_counter ctr;
    bool ever_read;
    uint64_t base_uj; /* energy (µJ) at the counter's current baseline */
    uint64_t last_energy_uj;
    int64_t last_t_ns;
    bool have_last; /* last_energy_uj is a reading power can be computed from */
    bool present;   /* found by the latest scan */
    bool lost;      /* vanished or unreadable since its last reading */
};

struct rapl {
    char *base; /* <sysfs_root>/sys/class/powercap */
    struct zone *z;
    size_t n, cap;
    unsigned polls_since_scan;
    bool need_scan;
    struct wt_ratelimit rl;
};

/* One directory entry found by a scan. */
struct entry {
    char dir[ZONE_DIR_LEN];
    int zone, sub, mmio;
};

/* Logged once per process: the daemon retries open with backoff, the advice need not repeat. */
static bool permission_logged;

int wt_rapl_read_file_default(const char *path, char *buf, size_t n)
{
    if (n == 0)
        return -E2BIG;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    int rc = 0;
    for (;;) {
        if (len == n - 1) {
            /* Full: one more byte tells whether the file is longer than the buffer. */
            char extra;
            ssize_t k = read(fd, &extra, 1);
            if (k > 0)
                rc = -E2BIG;
            else if (k < 0)
                rc = -errno;
            break;
        }
        ssize_t k = read(fd, buf + len, n - 1 - len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        if (k == 0)
            break;
        len += (size_t)k;
    }
    close(fd);
    if (rc < 0)
        return rc;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        len--;
    buf[len] = '\0';
    return (int)len;
}

static int parse_int(const char *s, const char **end)
{
    if (*s < '0' || *s > '9')
        return -1;
    long v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > 1000000)
            return -1;
        s++;
    }
    *end = s;
    return (int)v;
}

int wt_rapl_parse_name(const char *name, char *domain, size_t n, int *package, int *die)
{
    *package = -1;
    *die = -1;
    if (!name || !*name)
        return -EINVAL;
    const char *src = name;
    size_t len = strlen(name);
    /* Package zones are named "package-N", on multi-die parts "package-N-die-M". */
    if (strncmp(name, "package-", 8) == 0) {
        const char *p = name + 8, *e;
        int pkg = parse_int(p, &e);
        int d = -1;
        if (pkg >= 0 && strncmp(e, "-die-", 5) == 0)
            d = parse_int(e + 5, &e);
        if (pkg >= 0 && *e == '\0' && (d >= 0 || strstr(name, "-die-") == NULL)) {
            *package = pkg;
            *die = d;
            src = "package";
            len = 7;
        }
    }
    if (len + 1 > n)
        return -EINVAL;
    memcpy(domain, src, len);
    domain[len] = '\0';
    return 0;
}

int wt_rapl_parse_zone_dir(const char *dirname, int *zone, int *sub, int *mmio)
{
    const char *p;
    if (strncmp(dirname, PREFIX_MMIO ":", sizeof PREFIX_MMIO) == 0) {
        *mmio = 1;
        p = dirname + sizeof PREFIX_MMIO;
    } else if (strncmp(dirname, PREFIX ":", sizeof PREFIX) == 0) {
        *mmio = 0;
        p = dirname + sizeof PREFIX;
    } else {
        return -EINVAL;
    }
    const char *e;
    int z = parse_int(p, &e);
    if (z < 0)
        return -EINVAL;
    int s = -1;
    if (*e == ':') {
        s = parse_int(e + 1, &e);
        if (s < 0)
            return -EINVAL;
    }
    if (*e != '\0')
        return -EINVAL;
    *zone = z;
    *sub = s;
    return 0;
}

void wt_rapl_permission_message(const char *path, char *buf, size_t n)
{
    snprintf(
        buf, n,
        "cannot read %.150s: permission denied. Since CVE-2020-8694 (Platypus) the kernel lets "
        "only root read RAPL energy_uj. Run wattage as root, or grant its group read access "
        "with a udev rule or a tmpfiles.d line such as "
        "'z /sys/class/powercap/intel-rapl:*/energy_uj 0440 root wattage'. "
        "CPU energy is skipped; everything else goes on.",
        path);
}

static int zone_path(const struct rapl *r, const char *dir, const char *file, char *buf, size_t n)
{
    int k = snprintf(buf, n, "%s/%s/%s", r->base, dir, file);
    return (k < 0 || (size_t)k >= n) ? -ENAMETOOLONG : 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end != '\0')
        return -EINVAL;
    *out = v;
    return 0;
}

/*
 * Reads one zone's energy_uj, through its kept descriptor (or the test seam when a test set
 * one). Fills err naming the file on any failure.
 */
static int read_energy(struct zone *z, uint64_t *uj, struct wt_err *err)
{
    char buf[32];
    const char *path = z->energy.path;
    int rc = wt_rapl_read_file != wt_rapl_read_file_default
                 ? wt_rapl_read_file(path, buf, sizeof buf)
                 : wt_filesrc_read(&z->energy, buf, sizeof buf);
    if (rc == -EACCES || rc == -EPERM) {
        char msg[WT_ERR_LEN];
        wt_rapl_permission_message(path, msg, sizeof msg);
        wt_err_set(err, "%s", msg);
        if (!permission_logged) {
            permission_logged = true;
            wt_warn("rapl", "%s", msg);
        }
        return -EACCES;
    }
    if (rc < 0) {
        wt_err_set(err, "%s: %s", path, strerror(-rc));
        return rc;
    }
    if (parse_u64(buf, uj) < 0) {
        wt_err_set(err, "%s: expected an unsigned integer (µJ), got \"%s\"", path, buf);
        return -EINVAL;
    }
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->zone != y->zone)
        return x->zone < y->zone ? -1 : 1;
    if (x->sub != y->sub)
        return x->sub < y->sub ? -1 : 1;
    return 0;
}

static struct zone *find_zone(struct rapl *r, const char *dir)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->z[i].dir, dir) == 0)
            return &r->z[i];
    return NULL;
}

/*
 * Builds a new zone's labels from its name file. pkg_of_zone maps a top-level zone index to its
 * package number so sub-domains carry their package's label.
 */
static int new_zone(struct rapl *r, const struct entry *e, const int *pkg_of_zone,
                    struct wt_err *err)
{
    char path[PATH_MAX], name[64], domain[48], num[16], dienum[16];
    if (zone_path(r, e->dir, "name", path, sizeof path) < 0)
        return wt_err_set(err, "%s/%s: path too long", r->base, e->dir), -ENAMETOOLONG;
    int rc = wt_rapl_read_file(path, name, sizeof name);
    if (rc < 0) {
        /* Vanished between readdir and here, or not a zone after all: skip it. */
        wt_debug("rapl", "skipping zone path=%s error=\"%s\"", path, strerror(-rc));
        return 0;
    }
    int pkg, die;
    if (wt_rapl_parse_name(name, domain, sizeof domain, &pkg, &die) < 0) {
        wt_debug("rapl", "skipping zone with unusable name path=%s", path);
        return 0;
    }
    if (e->sub >= 0 || pkg < 0) {
        /* A sub-domain takes its parent's package; psys takes its zone index. */
        pkg = e->zone;
        if (e->sub >= 0 && e->zone < WT_RAPL_MAX_ZONES && pkg_of_zone[e->zone] >= 0)
            pkg = pkg_of_zone[e->zone];
    }

    uint64_t max_range = 0;
    char buf[32];
    if (zone_path(r, e->dir, "max_energy_range_uj", path, sizeof path) == 0 &&
        wt_rapl_read_file(path, buf, sizeof buf) >= 0 && parse_u64(buf, &max_range) < 0) {
        wt_warn("rapl", "ignoring unparsable max_energy_range_uj path=%s value=\"%s\"", path, buf);
        max_range = 0;
    }

    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        struct zone *nz = realloc(r->z, cap * sizeof *nz);
        if (!nz)
            return wt_err_set(err, "out of memory"), -ENOMEM;
        r->z = nz;
        r->cap = cap;
    }
    struct zone *z = &r->z[r->n];
    memset(z, 0, sizeof *z);
    snprintf(z->dir, sizeof z->dir, "%s", e->dir);
    if (zone_path(r, e->dir, "energy_uj", path, sizeof path) < 0)
        return wt_err_set(err, "%s/%s: path too long", r->base, e->dir), -ENAMETOOLONG;
    if (wt_filesrc_init(&z->energy, path) < 0)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    snprintf(num, sizeof num, "%d", pkg);
    rc = wt_labels(z->labels, sizeof z->labels, "package", num, "domain", domain, NULL);
    if (rc == 0 && die >= 0) {
        snprintf(dienum, sizeof dienum, "%d", die);
        rc = wt_labels_add(z->labels, sizeof z->labels, "die", dienum);
    }
    /* Firmware that names two zones alike must not merge two counters into one series. */
    for (size_t i = 0; rc == 0 && i < r->n; i++)
        if (strcmp(r->z[i].labels, z->labels) == 0)
            rc = wt_labels_add(z->labels, sizeof z->labels, "zone", e->dir);
    if (rc < 0) {
        wt_filesrc_close(&z->energy);
        return wt_err_set(err, "%s: labels too long", path), rc;
    }
    z->max_range_uj = max_range;
    z->present = true;
    r->n++;
    wt_debug("rapl", "zone %s package=%d domain=%s max_energy_range_uj=%" PRIu64, e->dir, pkg,
             domain, max_range);
    return 0;
}

/*
 * Lists the zones now present, adds new ones and marks vanished ones absent. Returns the number
 * of zones present, -ENOENT when there is no powercap class or no zone in it, or another errno.
 */
static int scan(struct rapl *r, struct wt_err *err)
{
    DIR *d = opendir(r->base);
    if (!d) {
        int e = errno;
        wt_err_set(err, "no RAPL zones: cannot open %s (%s)", r->base, strerror(e));
        return (e == ENOENT || e == ENOTDIR) ? -ENOENT : -e;
    }
    struct entry *ents = calloc(WT_RAPL_MAX_ZONES, sizeof *ents);
    if (!ents) {
        closedir(d);
        return wt_err_set(err, "out of memory"), -ENOMEM;
    }
    size_t nent = 0, nmsr = 0;
    struct dirent *de;
    /* Entries in the class dir are symlinks on a real sysfs: d_type cannot filter them. */
    while ((de = readdir(d)) != NULL && nent < WT_RAPL_MAX_ZONES) {
        struct entry *e = &ents[nent];
        if (strlen(de->d_name) >= sizeof e->dir)
            continue;
        if (wt_rapl_parse_zone_dir(de->d_name, &e->zone, &e->sub, &e->mmio) < 0)
            continue;
        snprintf(e->dir, sizeof e->dir, "%s", de->d_name);
        nmsr += !e->mmio;
        nent++;
    }
    closedir(d);

    /* intel-rapl-mmio duplicates the MSR zones: use it only on hosts that have nothing else. */
    size_t keep = 0;
    for (size_t i = 0; i < nent; i++)
        if (ents[i].mmio == (nmsr == 0))
            ents[keep++] = ents[i];
    nent = keep;
    qsort(ents, nent, sizeof *ents, cmp_entry);

    int pkg_of_zone[WT_RAPL_MAX_ZONES];
    for (size_t i = 0; i < WT_RAPL_MAX_ZONES; i++)
        pkg_of_zone[i] = -1;
    for (size_t i = 0; i < r->n; i++)
        r->z[i].present = false;

    int rc = 0;
    for (size_t i = 0; i < nent; i++) {
        struct entry *e = &ents[i];
        struct zone *z = find_zone(r, e->dir);
        if (!z) {
            rc = new_zone(r, e, pkg_of_zone, err);
            if (rc < 0)
                goto out;
            z = find_zone(r, e->dir);
            if (!z)
                continue; /* skipped */
        } else if (z->lost && z->ctr.have) {
            /*
             * Back after vanishing: the counter may have restarted while we could not see it.
             * Keep the energy counted so far and take a new baseline; the gap is not filled.
             */
            z->base_uj += z->ctr.total_raw;
            memset(&z->ctr, 0, sizeof z->ctr);
            z->have_last = false;
            wt_filesrc_drop(&z->energy); /* a zone back is another file: open it again */
            wt_info("rapl", "zone back zone=%s", z->dir);
        }
        z->present = true;
        z->lost = false;
        if (e->sub < 0 && e->zone < WT_RAPL_MAX_ZONES) {
            char pkg[16];
            if (wt_labels_get(z->labels, "package", pkg, sizeof pkg) == 0)
                pkg_of_zone[e->zone] = atoi(pkg);
        }
    }
    int present = 0;
    for (size_t i = 0; i < r->n; i++) {
        present += r->z[i].present;
        r->z[i].lost |= !r->z[i].present;
        if (!r->z[i].present)
            wt_filesrc_drop(&r->z[i].energy); /* no descriptor held for a zone gone */
    }
    if (present == 0) {
        wt_err_set(err, "no RAPL zones (intel-rapl:*) under %s", r->base);
        rc = -ENOENT;
    } else {
        rc = present;
    }
out:
    free(ents);
    r->polls_since_scan = 0;
    r->need_scan = false;
    return rc;
}

static void rapl_close(void *state)
{
    struct rapl *r = state;
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        wt_filesrc_close(&r->z[i].energy);
    free(r->base);
    free(r->z);
    free(r);
}

static int rapl_open(const struct wt_config *cfg, void **state, struct wt_err *err)
{
    (void)cfg;
    *state = NULL;
    struct rapl *r = calloc(1, sizeof *r);
    if (!r)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    r->rl.interval_ns = 600LL * 1000000000LL;
    int rc;
    char base[PATH_MAX];
    int k = snprintf(base, sizeof base, "%s/sys/class/powercap", wt_sysfs_root());
    if (k < 0 || (size_t)k >= sizeof base) {
        rc = -ENAMETOOLONG;
        wt_err_set(err, "sysfs root too long");
        goto fail;
    }
    r->base = strdup(base);
    if (!r->base) {
        rc = -ENOMEM;
        wt_err_set(err, "out of memory");
        goto fail;
    }
    rc = scan(r, err);
    if (rc < 0)
        goto fail;
    /* energy_uj is the one file CVE-2020-8694 closed to non-root: find that out now. */
    for (size_t i = 0; i < r->n; i++) {
        uint64_t uj;
        rc = read_energy(&r->z[i], &uj, err);
        if (rc == -EACCES)
            goto fail;
        if (rc == 0)
            break;
    }
    *state = r;
    return 0;
fail:
    rapl_close(r);
    return rc;
}

/* Feeds one reading into a zone and appends its energy (and power, from the second on). */
static int zone_update(struct zone *z, int64_t t_ns, uint64_t raw, struct wt_batch *out)
{
    if (!z->ever_read) {
        z->base_uj = raw; /* energy counted before we started is part of the monotone total */
        z->ever_read = true;
    }
    /*
     * A wrap is only plausible if the energy it implies fits WT_RAPL_MAX_PLAUSIBLE_W over the
     * time since the last reading; otherwise the counter was reset. W × ns = nJ, / 1000 = µJ.
     */
    uint64_t max_delta = 1; /* no time passed: no decrease is plausible as a wrap */
    if (z->ctr.have && t_ns > z->last_t_ns) {
        uint64_t dt = (uint64_t)(t_ns - z->last_t_ns);
        if (dt > UINT64_MAX / WT_RAPL_MAX_PLAUSIBLE_W)
            max_delta = 0; /* centuries: no limit */
        else
            max_delta = dt * WT_RAPL_MAX_PLAUSIBLE_W / 1000;
    }
    enum wt_delta_kind kind =
        wt_energy_counter_update(&z->ctr, t_ns, raw, z->max_range_uj, max_delta);
    if (kind == WT_DELTA_RESET)
        wt_info("rapl", "energy counter reset zone=%s raw_uj=%" PRIu64, z->dir, raw);
    uint64_t e_uj = z->base_uj + z->ctr.total_raw;
    int rc = wt_batch_add(out, WT_M_CPU_ENERGY_J, z->labels, t_ns, (double)e_uj / 1e6);
    if (rc < 0)
        return rc;
    if (z->have_last && t_ns > z->last_t_ns && e_uj >= z->last_energy_uj) {
        double dj = (double)(e_uj - z->last_energy_uj) / 1e6;
        double ds = (double)(t_ns - z->last_t_ns) / 1e9;
        rc = wt_batch_add(out, WT_M_CPU_POWER_W, z->labels, t_ns, dj / ds);
        if (rc < 0)
            return rc;
    }
    z->last_energy_uj = e_uj;
    z->last_t_ns = t_ns;
    z->have_last = true;
    return 0;
}

static int rapl_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct rapl *r = state;
    int rc;
    if (r->need_scan || ++r->polls_since_scan >= WT_RAPL_RESCAN_POLLS) {
        rc = scan(r, err);
        if (rc < 0)
            return rc;
    }
    int ok = 0;
    for (size_t i = 0; i < r->n; i++) {
        struct zone *z = &r->z[i];
        if (!z->present)
            continue;
        uint64_t uj;
        struct wt_err zerr;
        rc = read_energy(z, &uj, &zerr);
        if (rc == -EACCES) {
            wt_err_set(err, "%s", zerr.msg);
            return rc;
        }
        if (rc < 0) {
            /* One zone failing (vanished, garbage) is not the source failing: look again. */
            uint64_t suppressed;
            if (wt_ratelimit_ok(&r->rl, t_ns, &suppressed))
                wt_warn("rapl", "%s", zerr.msg);
            z->present = false;
            z->lost = true;
            wt_filesrc_drop(&z->energy);
            r->need_scan = true;
            continue;
        }
        rc = zone_update(z, t_ns, uj, out);
        if (rc < 0)
            return wt_err_set(err, "%s", strerror(-rc)), rc;
        ok++;
    }
    if (ok == 0) {
        r->need_scan = true;
        wt_err_set(err, "no readable RAPL zone under %s", r->base);
        return -ENOENT;
    }
    return 0;
}

static const struct wt_collector_config *rapl_config(const struct wt_config *cfg)
{
    return &cfg->collectors.rapl;
}

const struct wt_collector_ops wt_rapl_collector = {
    .name = "rapl",
    .file_source = true,
    .edge_samples = true,
    .config = rapl_config,
    .open = rapl_open,
    .poll = rapl_poll,
    .close = rapl_close,
};
