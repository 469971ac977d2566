/* SPDX-License-Identifier: MIT */
/*
 * hwmon collector: walks <sysfs_root>/sys/class/hwmon/hwmon* for power and energy sensors (see
 * hwmon.h for what it publishes). Owns one struct sensor per (hwmonN, power|energy, N), kept for
 * the collector's life: a sensor that vanishes or reads garbage is said once, marked lost and
 * looked for again; the others go on. Energy counters (µJ) are followed with a struct
 * wt_energy_counter in integer µJ; power (µW) is integrated with a struct wt_energy_integral.
 * Both convert to joules and watts once, here, where readings are emitted. Each value file stays
 * open and is read with pread at offset 0 (collect/filesrc.h); a chip removed and back is
 * reopened by its path.
 */
#include "collect/hwmon.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/cadence.h"
#include "collect/collector.h"
#include "collect/filesrc.h"
#include "collect/rapl.h"
#include "core/clock.h"
#include "core/energy.h"
#include "core/log.h"
#include "core/reading.h"

#define MAX_SENSORS 1024
#define RESCAN_POLLS 30
#define HWMON_DIR_LEN 32
#define LABEL_LEN 96
#define MAX_HELD 32 /* sensors named in the status document's slow_fields */

struct sensor {
    char hwmon[HWMON_DIR_LEN]; /* "hwmon3" */
    bool in_device;            /* files live in hwmonN/device (the ACPI power meter) */
    bool energy;               /* energyN_input; else powerN_average or powerN_input */
    enum wt_hwmon_attr attr;
    int index;
    char labels[WT_LABELS_LEN];  /* chip,sensor,label,role[,hwmon] */
    char elabels[WT_LABELS_LEN]; /* labels + method */
    struct wt_filesrc value;     /* the value file, kept open and read with pread at 0 */
    double interval_s;           /* powerN_average_interval; < 0 when none */
    int64_t update_ns;           /* the chip's update_interval; 0 when it has none */
    int64_t hold_ns;             /* read no more often than this (0: every tick) */
    int64_t next_ns;             /* when the next read is due (hold_ns > 0); 0: now */
    int held;                    /* its entry in struct hwmon's held table + 1; 0: none */
    struct wt_energy_integral integral;
    struct wt_energy_counter ctr;
    bool ever_read;
    uint64_t base_uj;
    uint64_t last_energy_uj;
    int64_t last_t_ns;
    bool have_last;
    /* Its latest published power reading (held sensors: kept in the latest readings). */
    double pub_w, pub_j;
    int64_t pub_t_ns;
    bool have_pub;
    bool present;    /* found by the latest scan */
    bool lost;       /* vanished since its last reading */
    bool complained; /* its failure was said; the next good reading says it is back */
};

struct hwmon {
    char *base; /* <sysfs_root>/sys/class/hwmon */
    struct sensor *s;
    size_t n, cap;
    unsigned polls_since_scan;
    unsigned scan_every; /* polls between scans: doubles from 1 while a sensor is missing */
    bool need_scan;
    int64_t max_gap_ns;
    int64_t tick_ns;     /* the collector's interval */
    int64_t max_hold_ns; /* collectors.hwmon.max_hold: 0, every sensor every tick */
    uint64_t reads;      /* value files read (wt_hwmon_value_reads) */
    /* The latest chip whose update_interval this scan read (a chip's attribute, the same for
     * each of its sensors, which a scan lists one chip after the other): read once a chip. */
    char ui_hwmon[HWMON_DIR_LEN];
    int64_t ui_ns;
    /* The sensors read at their own cadence, for status (collect/cadence.h): entries are only
     * appended, so a name handed out stays valid while the collector is open. */
    struct wt_field_cadence held[MAX_HELD];
    char held_name[MAX_HELD][HWMON_DIR_LEN + 24];
    size_t nheld;
    size_t npublished; /* entries published */
    bool published;
};

/* A sensor found by a scan. */
struct found {
    char hwmon[HWMON_DIR_LEN];
    bool in_device, energy;
    enum wt_hwmon_attr attr;
    int index;
};

static const char *attr_suffix(enum wt_hwmon_attr a)
{
    return a == WT_HWMON_POWER_AVERAGE ? "average" : "input";
}

int wt_hwmon_parse_attr(const char *fname, enum wt_hwmon_attr *attr, int *index)
{
    const char *p;
    bool energy;
    if (strncmp(fname, "power", 5) == 0) {
        p = fname + 5;
        energy = false;
    } else if (strncmp(fname, "energy", 6) == 0) {
        p = fname + 6;
        energy = true;
    } else {
        return -EINVAL;
    }
    if (*p < '1' || *p > '9')
        return -EINVAL;
    int v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (v > 9999)
            return -EINVAL;
        p++;
    }
    if (energy && strcmp(p, "_input") == 0)
        *attr = WT_HWMON_ENERGY_INPUT;
    else if (!energy && strcmp(p, "_average") == 0)
        *attr = WT_HWMON_POWER_AVERAGE;
    else if (!energy && strcmp(p, "_input") == 0)
        *attr = WT_HWMON_POWER_INPUT;
    else
        return -EINVAL;
    *index = v;
    return 0;
}

/* label starts with prefix and, after it, only " N" or nothing follows. */
static bool grace_label(const char *label, const char *prefix)
{
    size_t k = strlen(prefix);
    return strncmp(label, prefix, k) == 0 && (label[k] == '\0' || label[k] == ' ');
}

/* "pin", "pin2", "pout1": PMBus READ_PIN / READ_POUT (Documentation/hwmon/pmbus.rst). */
static bool pmbus_label(const char *label, const char *prefix)
{
    size_t k = strlen(prefix);
    if (strncmp(label, prefix, k) != 0)
        return false;
    for (const char *p = label + k; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

int wt_hwmon_role(const char *chip, const char *label, char *out, size_t n)
{
    const char *role = "other";
    if (!label)
        label = "";
    if (strcmp(chip, "power_meter") == 0) {
        /* NVIDIA Grace's meters, by their OEM strings (edk2-nvidia BpmpSsdtSocket*.asl). */
        if (grace_label(label, "Module Power Socket"))
            role = "module";
        else if (grace_label(label, "Grace Power Socket"))
            role = "cpu";
        else if (grace_label(label, "CPU Power Socket"))
            role = "cpu_rail";
        else if (grace_label(label, "SysIO Power Socket"))
            role = "sysio_rail";
        else
            role = "wall";
    } else if (pmbus_label(label, "pin")) {
        role = "psu_in";
    } else if (pmbus_label(label, "pout")) {
        role = "psu_out";
    } else if (strcmp(chip, "amdgpu") == 0 || strcmp(chip, "xe") == 0 ||
               strncmp(chip, "i915", 4) == 0) {
        /*
         * xe: energy1 "card", energy2 "pkg" (sysfs-driver-intel-xe-hwmon): pkg is part of card.
         * i915 names its device-level chip "i915" and each GT's "i915_gtN": parts of the device.
         */
        bool part = strcmp(label, "pkg") == 0 || strncmp(chip, "i915_gt", 7) == 0;
        role = part ? "gpu_rail" : "gpu";
    }
    int k = snprintf(out, n, "%s", role);
    return (k < 0 || (size_t)k >= n) ? -E2BIG : 0;
}

int wt_hwmon_parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -EINVAL;
    while (*end == ' ' || *end == '\n' || *end == '\t')
        end++;
    if (*end != '\0')
        return -EINVAL;
    *out = v;
    return 0;
}

/* <base>/<hwmon>[/device]/<file> into buf. */
static int file_path(const struct hwmon *h, const char *hw, bool in_device, const char *file,
                     char *buf, size_t n)
{
    int k = snprintf(buf, n, "%s/%s%s/%s", h->base, hw, in_device ? "/device" : "", file);
    return (k < 0 || (size_t)k >= n) ? -ENAMETOOLONG : 0;
}

/* Reads a small text file of a chip; "" when absent. */
static void read_text(const struct hwmon *h, const char *hw, bool in_device, const char *file,
                      char *buf, size_t n)
{
    char path[PATH_MAX];
    buf[0] = '\0';
    if (file_path(h, hw, in_device, file, path, sizeof path) < 0 ||
        wt_rapl_read_file_default(path, buf, n) < 0)
        buf[0] = '\0';
}

/*
 * Reads an averaging sensor's powerN_average_interval (ms, sysfs-interface): the window its
 * readings are the mean of, which the integration needs. Read at every scan, since firmware or
 * a person may change it (an ACPI meter sends a poll notification when it does).
 */
static void read_interval(struct hwmon *h, struct sensor *s)
{
    char file[48], buf[32];
    uint64_t ms;
    if (s->energy)
        return;
    /* update_interval (ms, sysfs-interface): "the interval at which the chip will update
     * readings", a chip attribute; the ACPI meter keeps its attributes on the device. */
    s->update_ns = 0;
    buf[0] = '\0';
    if (h->max_hold_ns > 0 && strcmp(h->ui_hwmon, s->hwmon) == 0) {
        s->update_ns = h->ui_ns;     /* read for this chip's previous sensor in this scan */
    } else if (h->max_hold_ns > 0) { /* else not needed: spare the scan two opens a chip */
        read_text(h, s->hwmon, false, "update_interval", buf, sizeof buf);
        if (!buf[0])
            read_text(h, s->hwmon, true, "update_interval", buf, sizeof buf);
        if (buf[0] && wt_hwmon_parse_u64(buf, &ms) == 0 && ms <= 3600000)
            s->update_ns = (int64_t)ms * 1000000;
        snprintf(h->ui_hwmon, sizeof h->ui_hwmon, "%s", s->hwmon);
        h->ui_ns = s->update_ns;
    }
    int64_t hold = s->update_ns;
    if (s->attr == WT_HWMON_POWER_AVERAGE) {
        snprintf(file, sizeof file, "power%d_average_interval", s->index);
        read_text(h, s->hwmon, s->in_device, file, buf, sizeof buf);
        if (buf[0] && wt_hwmon_parse_u64(buf, &ms) == 0 && ms <= 3600000) {
            s->interval_s = (double)ms / 1e3;
            s->integral.window_ns = (int64_t)ms * 1000000;
            if (s->integral.window_ns > hold)
                hold = s->integral.window_ns;
        }
    }
    if (h->max_hold_ns <= 0)
        hold = 0;
    else if (hold > h->max_hold_ns)
        hold = h->max_hold_ns;
    /* Held no longer than a tick: read every tick, as before. */
    if (hold <= h->tick_ns)
        hold = 0;
    s->hold_ns = hold;
    if (hold > 0 && !s->held && h->nheld < MAX_HELD) {
        size_t k = h->nheld;
        snprintf(h->held_name[k], sizeof h->held_name[k], "%s/%spower%d_%s", s->hwmon,
                 s->in_device ? "device/" : "", s->index, attr_suffix(s->attr));
        h->held[k].field = h->held_name[k];
        h->held[k].cadence = WT_CADENCE_SLOW;
        s->held = (int)k + 1;
        h->nheld++;
    }
    if (s->held)
        h->held[s->held - 1].cadence = hold > 0 ? WT_CADENCE_SLOW : WT_CADENCE_TICK;
}

static struct sensor *find_sensor(struct hwmon *h, const struct found *f)
{
    for (size_t i = 0; i < h->n; i++) {
        struct sensor *s = &h->s[i];
        if (s->energy == f->energy && s->index == f->index && strcmp(s->hwmon, f->hwmon) == 0)
            return s;
    }
    return NULL;
}

/* Builds a new sensor's labels from its chip's files. */
static int new_sensor(struct hwmon *h, const struct found *f, struct wt_err *err)
{
    char chip[64] = "", label[LABEL_LEN] = "", role[16], file[64], sensor[32];
    read_text(h, f->hwmon, false, "name", chip, sizeof chip);
    if (!chip[0])
        read_text(h, f->hwmon, true, "name", chip, sizeof chip);
    if (!chip[0])
        snprintf(chip, sizeof chip, "unknown");
    const char *kind = f->energy ? "energy" : "power";
    snprintf(sensor, sizeof sensor, "%s%d", kind, f->index);
    label[0] = '\0';
    if (!f->energy) {
        /* An ACPI meter names itself in power1_oem_info (Grace: "Grace Power Socket 0"). */
        snprintf(file, sizeof file, "%s_oem_info", sensor);
        read_text(h, f->hwmon, f->in_device, file, label, sizeof label);
    }
    if (!label[0]) {
        snprintf(file, sizeof file, "%s_label", sensor);
        read_text(h, f->hwmon, f->in_device, file, label, sizeof label);
    }
    if (wt_hwmon_role(chip, label, role, sizeof role) < 0)
        return wt_err_set(err, "hwmon: role too long"), -E2BIG;

    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        struct sensor *ns = realloc(h->s, cap * sizeof *ns);
        if (!ns)
            return wt_err_set(err, "out of memory"), -ENOMEM;
        h->s = ns;
        h->cap = cap;
    }
    struct sensor *s = &h->s[h->n];
    memset(s, 0, sizeof *s);
    snprintf(s->hwmon, sizeof s->hwmon, "%s", f->hwmon);
    s->in_device = f->in_device;
    s->energy = f->energy;
    s->attr = f->attr;
    s->index = f->index;
    s->interval_s = -1;
    int rc = wt_labels(s->labels, sizeof s->labels, "chip", chip, "sensor", sensor, "label", label,
                       "role", role, NULL);
    /* Grace's meters name their socket ("... Power Socket N"): socket="N", to sum one role per
     * socket or over sockets without parsing labels */
    const char *sock = strstr(label, " Power Socket ");
    if (rc == 0 && sock &&
        (strcmp(role, "module") == 0 || strcmp(role, "cpu") == 0 || strcmp(role, "cpu_rail") == 0 ||
         strcmp(role, "sysio_rail") == 0))
        rc = wt_labels_add(s->labels, sizeof s->labels, "socket", sock + strlen(" Power Socket "));
    /* Two PSUs of one driver, two unlabelled meters: the hwmon directory tells them apart. */
    for (size_t i = 0; rc == 0 && i < h->n; i++)
        if (strcmp(h->s[i].labels, s->labels) == 0)
            rc = wt_labels_add(s->labels, sizeof s->labels, "hwmon", f->hwmon);
    if (rc == 0)
        snprintf(s->elabels, sizeof s->elabels, "%s", s->labels);
    if (rc == 0)
        rc = wt_labels_add(s->elabels, sizeof s->elabels, "method",
                           f->energy ? "counter" : "integrated");
    if (rc < 0)
        return wt_err_set(err, "%s/%s: labels too long", h->base, f->hwmon), rc;
    char path[PATH_MAX];
    snprintf(file, sizeof file, "%s%d_%s", kind, f->index, attr_suffix(f->attr));
    if (file_path(h, f->hwmon, f->in_device, file, path, sizeof path) < 0)
        return wt_err_set(err, "%s/%s: path too long", h->base, f->hwmon), -ENAMETOOLONG;
    if (wt_filesrc_init(&s->value, path) < 0)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    read_interval(h, s);
    s->present = true;
    h->n++;
    wt_debug("hwmon", "sensor %s %s", f->hwmon, s->labels);
    return 0;
}

/* Adds the power/energy files of one directory to the found list. */
static void scan_dir(const struct hwmon *h, const char *hw, bool in_device, struct found *fl,
                     size_t *nf)
{
    char path[PATH_MAX];
    if (file_path(h, hw, in_device, "", path, sizeof path) < 0)
        return;
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        enum wt_hwmon_attr a;
        int idx;
        if (wt_hwmon_parse_attr(de->d_name, &a, &idx) < 0)
            continue;
        bool energy = a == WT_HWMON_ENERGY_INPUT;
        struct found *f = NULL;
        for (size_t i = 0; i < *nf; i++)
            if (fl[i].energy == energy && fl[i].index == idx && strcmp(fl[i].hwmon, hw) == 0)
                f = &fl[i];
        if (f) {
            /* Both powerN_average and powerN_input: the average, whose window is known. */
            if (a == WT_HWMON_POWER_AVERAGE && f->in_device == in_device)
                f->attr = a;
            continue;
        }
        if (*nf >= MAX_SENSORS)
            break;
        f = &fl[(*nf)++];
        snprintf(f->hwmon, sizeof f->hwmon, "%s", hw);
        f->in_device = in_device;
        f->energy = energy;
        f->attr = a;
        f->index = idx;
    }
    closedir(d);
}

/*
 * Lists the sensors now present, adds new ones, marks vanished ones. Returns how many are
 * present, -ENOENT when none, or another negative errno.
 */
static int scan(struct hwmon *h, struct wt_err *err)
{
    DIR *d = opendir(h->base);
    if (!d) {
        int e = errno;
        wt_err_set(err, "no hwmon sensors: cannot open %s (%s)", h->base, strerror(e));
        return (e == ENOENT || e == ENOTDIR) ? -ENOENT : -e;
    }
    struct found *fl = calloc(MAX_SENSORS, sizeof *fl);
    if (!fl) {
        closedir(d);
        return wt_err_set(err, "out of memory"), -ENOMEM;
    }
    size_t nf = 0;
    struct dirent *de;
    /* Class entries are symlinks on a real sysfs: d_type cannot filter them. */
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "hwmon", 5) != 0 || strlen(de->d_name) >= HWMON_DIR_LEN)
            continue;
        scan_dir(h, de->d_name, false, fl, &nf);
        scan_dir(h, de->d_name, true, fl, &nf);
    }
    closedir(d);

    for (size_t i = 0; i < h->n; i++)
        h->s[i].present = false;
    h->ui_hwmon[0] = '\0'; /* each scan reads the chips' update_interval again */
    int rc = 0;
    for (size_t i = 0; i < nf; i++) {
        struct sensor *s = find_sensor(h, &fl[i]);
        if (!s) {
            rc = new_sensor(h, &fl[i], err);
            if (rc < 0)
                goto out;
            continue;
        }
        if (s->lost) {
            /* Back after vanishing: keep what was counted, take a new baseline, leave a gap. */
            if (s->ctr.have)
                s->base_uj += s->ctr.total_raw;
            memset(&s->ctr, 0, sizeof s->ctr);
            s->have_last = false;
            wt_energy_integral_break(&s->integral);
            wt_filesrc_drop(&s->value); /* a chip back is another file: open it again */
        }
        s->present = true;
        s->lost = false;
        read_interval(h, s);
    }
    int present = 0;
    bool missing = false;
    for (size_t i = 0; i < h->n; i++) {
        present += h->s[i].present;
        missing |= !h->s[i].present;
        if (!h->s[i].present && !h->s[i].lost) {
            h->s[i].lost = true;
            h->s[i].have_pub = false;
            wt_energy_integral_break(&h->s[i].integral);
        }
        if (!h->s[i].present)
            wt_filesrc_drop(&h->s[i].value); /* no descriptor held for a sensor gone */
    }
    /* A sensor gone: look again soon, then less often (a PSU pulled for good costs little). */
    if (!missing)
        h->scan_every = RESCAN_POLLS;
    else if (h->scan_every < RESCAN_POLLS)
        h->scan_every = h->scan_every ? h->scan_every * 2 : 1;
    if (present == 0) {
        wt_err_set(err, "no hwmon power or energy sensor under %s", h->base);
        rc = -ENOENT;
    } else {
        rc = present;
    }
out:
    free(fl);
    h->polls_since_scan = 0;
    h->need_scan = false;
    return rc;
}

/*
 * The held sensors and the ceiling, as the other collectors' slow fields (status): published
 * again when a scan added one, so that a reader never sees a name being written (only an entry's
 * cadence changes in place, when a chip's interval drops to a tick or back: one enum store).
 */
static void publish_held(struct hwmon *h)
{
    if (h->max_hold_ns <= 0 || (h->published && h->npublished == h->nheld))
        return;
    if (wt_cadence_publish("hwmon", h->max_hold_ns, h->held, h->nheld) == 0) {
        h->published = true;
        h->npublished = h->nheld;
    }
}

static void hwmon_close(void *state)
{
    struct hwmon *h = state;
    if (!h)
        return;
    if (h->published)
        wt_cadence_withdraw("hwmon", h->held);
    for (size_t i = 0; i < h->n; i++)
        wt_filesrc_close(&h->s[i].value);
    free(h->base);
    free(h->s);
    free(h);
}

static int hwmon_open(const struct wt_config *cfg, void **state, struct wt_err *err)
{
    *state = NULL;
    struct hwmon *h = calloc(1, sizeof *h);
    if (!h)
        return wt_err_set(err, "out of memory"), -ENOMEM;
    int64_t iv = cfg ? wt_config_interval(cfg, &cfg->collectors.hwmon) : 0;
    /* Integration does not span more than three missed ticks, as the store's segment rule. */
    h->max_gap_ns = 3 * (iv > 0 ? iv : WT_NS_PER_S);
    h->tick_ns = iv > 0 ? iv : WT_NS_PER_S;
    h->max_hold_ns = cfg ? cfg->collectors.hwmon_max_hold_ns : 0;
    /* auto: held two ticks at most, so that two readings of a sensor are never more than 3
     * intervals apart, which the store's segment rule would count as a gap in coverage */
    if (h->max_hold_ns == WT_CONFIG_AUTO)
        h->max_hold_ns = 2 * h->tick_ns;
    int rc;
    char base[PATH_MAX];
    int k = snprintf(base, sizeof base, "%s/sys/class/hwmon", wt_sysfs_root());
    if (k < 0 || (size_t)k >= sizeof base) {
        rc = -ENAMETOOLONG;
        wt_err_set(err, "sysfs root too long");
        goto fail;
    }
    h->base = strdup(base);
    if (!h->base) {
        rc = -ENOMEM;
        wt_err_set(err, "out of memory");
        goto fail;
    }
    rc = scan(h, err);
    if (rc < 0)
        goto fail;
    publish_held(h);
    *state = h;
    return 0;
fail:
    hwmon_close(h);
    return rc;
}

/* Reads a sensor's value file: µW or µJ. Fills err naming the file on any failure. */
static int read_value(struct hwmon *h, struct sensor *s, uint64_t *v, struct wt_err *err)
{
    char buf[48];
    const char *path = s->value.path;
    int rc = wt_filesrc_read(&s->value, buf, sizeof buf);
    h->reads++;
    if (rc < 0)
        return wt_err_set(err, "%s: %s", path, strerror(-rc)), rc;
    if (wt_hwmon_parse_u64(buf, v) < 0) {
        wt_err_set(err, "%s: expected an unsigned integer (%s), got \"%.24s\"", path,
                   s->energy ? "µJ" : "µW", buf);
        return -EINVAL;
    }
    if (!s->energy && *v > WT_HWMON_MAX_POWER_UW) {
        wt_err_set(err, "%s: %" PRIu64 " µW is out of range (over %llu W): refused", path, *v,
                   WT_HWMON_MAX_POWER_UW / 1000000ULL);
        return -ERANGE;
    }
    return 0;
}

static int emit_power(struct hwmon *h, struct sensor *s, int64_t t_ns, uint64_t uw,
                      struct wt_batch *out)
{
    double w = (double)uw / 1e6;
    /* A held sensor's readings are hold_ns apart: that span is no gap. */
    wt_energy_integral_update(&s->integral, t_ns, w, h->max_gap_ns + s->hold_ns);
    int rc = wt_batch_add(out, WT_M_HWMON_POWER_W, s->labels, t_ns, w);
    if (rc == 0)
        rc = wt_batch_add(out, WT_M_HWMON_ENERGY_J, s->elabels, t_ns, s->integral.total_j);
    if (rc == 0 && s->interval_s >= 0)
        rc = wt_batch_add(out, WT_M_HWMON_INTERVAL_S, s->labels, t_ns, s->interval_s);
    s->pub_w = w;
    s->pub_j = s->integral.total_j;
    s->pub_t_ns = t_ns;
    s->have_pub = rc == 0;
    return rc;
}

static int emit_energy(struct sensor *s, int64_t t_ns, uint64_t raw, struct wt_batch *out)
{
    if (!s->ever_read) {
        s->base_uj = raw; /* energy counted before we started is part of the monotone total */
        s->ever_read = true;
    }
    /*
     * A decrease is a reset (the ABI's counter is cumulative and 64-bit: no modulus), and so is
     * a jump beyond WT_HWMON_MAX_POWER_UW over the span. W × ns = nJ, / 1000 = µJ.
     */
    uint64_t max_delta = 1;
    if (s->ctr.have && t_ns > s->last_t_ns) {
        uint64_t dt = (uint64_t)(t_ns - s->last_t_ns);
        uint64_t max_w = WT_HWMON_MAX_POWER_UW / 1000000ULL;
        max_delta = dt > UINT64_MAX / max_w ? 0 : dt * max_w / 1000;
    }
    if (s->ctr.have && max_delta && raw > s->ctr.last_raw && raw - s->ctr.last_raw > max_delta) {
        /* More than WT_HWMON_MAX_POWER_UW since the last reading: firmware garbage or a new
         * counter. The jump is refused (not counted) and the counter followed from here. */
        wt_warn("hwmon",
                "energy counter jumped hwmon=%s sensor=energy%d by %" PRIu64
                " uJ in %.3f s (over %llu W): not counted, new baseline",
                s->hwmon, s->index, raw - s->ctr.last_raw, (double)(t_ns - s->ctr.last_t_ns) / 1e9,
                WT_HWMON_MAX_POWER_UW / 1000000ULL);
        s->base_uj += s->ctr.total_raw;
        memset(&s->ctr, 0, sizeof s->ctr);
        s->have_last = false;
    }
    enum wt_delta_kind kind = wt_energy_counter_update(&s->ctr, t_ns, raw, 0, max_delta);
    if (kind == WT_DELTA_RESET)
        wt_info("hwmon", "energy counter reset hwmon=%s sensor=energy%d raw_uj=%" PRIu64, s->hwmon,
                s->index, raw);
    uint64_t e_uj = s->base_uj + s->ctr.total_raw;
    int rc = wt_batch_add(out, WT_M_HWMON_ENERGY_J, s->elabels, t_ns, (double)e_uj / 1e6);
    if (rc < 0)
        return rc;
    if (s->have_last && t_ns > s->last_t_ns && e_uj >= s->last_energy_uj) {
        double dj = (double)(e_uj - s->last_energy_uj) / 1e6;
        double ds = (double)(t_ns - s->last_t_ns) / 1e9;
        rc = wt_batch_add(out, WT_M_HWMON_POWER_W, s->labels, t_ns, dj / ds);
        if (rc < 0)
            return rc;
    }
    s->last_energy_uj = e_uj;
    s->last_t_ns = t_ns;
    s->have_last = true;
    return 0;
}

static int hwmon_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct hwmon *h = state;
    int rc;
    if (h->need_scan || ++h->polls_since_scan >= h->scan_every) {
        rc = scan(h, err);
        if (rc < 0)
            return rc;
        publish_held(h);
    }
    int ok = 0;
    for (size_t i = 0; i < h->n; i++) {
        struct sensor *s = &h->s[i];
        if (!s->present)
            continue;
        if (s->hold_ns > 0 && s->next_ns && t_ns < s->next_ns - h->tick_ns / 4) {
            /* Not updated by the chip since the last read: nothing new to publish. */
            ok++;
            continue;
        }
        uint64_t v;
        struct wt_err serr;
        rc = read_value(h, s, &v, &serr);
        if (rc < 0) {
            /* Said once per sensor until it reads well again; the other sensors go on. */
            if (!s->complained)
                wt_warn("hwmon", "%s; the other sensors go on", serr.msg);
            s->complained = true;
            s->have_pub = false; /* a failed read is not published, nor held */
            wt_energy_integral_break(&s->integral);
            if (rc != -EINVAL && rc != -ERANGE) {
                s->present = false;
                s->lost = true;
                wt_filesrc_drop(&s->value);
                h->need_scan = true;
                h->scan_every = 1;
            }
            continue;
        }
        /* From this read, not from when it was due: never two reads closer than the hold
         * (a quarter tick of jitter aside). */
        s->next_ns = s->hold_ns > 0 ? t_ns + s->hold_ns : 0;
        if (s->complained) {
            wt_info("hwmon", "sensor back hwmon=%s %s", s->hwmon, s->labels);
            s->complained = false;
        }
        rc = s->energy ? emit_energy(s, t_ns, v, out) : emit_power(h, s, t_ns, v, out);
        if (rc < 0)
            return wt_err_set(err, "%s", strerror(-rc)), rc;
        ok++;
    }
    if (ok == 0) {
        h->need_scan = true;
        wt_err_set(err, "no readable hwmon power or energy sensor under %s", h->base);
        return -ENOENT;
    }
    return 0;
}

/*
 * The held sensors' latest readings (wt_collector_ops.held): a power sensor not read by the poll
 * stamped t_ns gives its power, integrated energy and window again with the stamp of the read
 * that made them (the sinks saw them then: nothing is integrated or stored twice), and every
 * held sensor its age, 0 on the ticks that read it.
 */
static int hwmon_held(void *state, int64_t t_ns, struct wt_batch *out)
{
    struct hwmon *h = state;
    int rc = 0;
    for (size_t i = 0; i < h->n && rc == 0; i++) {
        const struct sensor *s = &h->s[i];
        if (s->energy || !s->present || s->hold_ns <= 0 || !s->have_pub)
            continue;
        if (s->pub_t_ns != t_ns) {
            rc = wt_batch_add(out, WT_M_HWMON_POWER_W, s->labels, s->pub_t_ns, s->pub_w);
            if (rc == 0)
                rc = wt_batch_add(out, WT_M_HWMON_ENERGY_J, s->elabels, s->pub_t_ns, s->pub_j);
            if (rc == 0 && s->interval_s >= 0)
                rc =
                    wt_batch_add(out, WT_M_HWMON_INTERVAL_S, s->labels, s->pub_t_ns, s->interval_s);
        }
        if (rc == 0)
            rc = wt_batch_add(out, WT_M_HWMON_AGE_S, s->labels, t_ns,
                              (double)(t_ns - s->pub_t_ns) / 1e9);
    }
    return rc;
}

static const struct wt_collector_config *hwmon_config(const struct wt_config *cfg)
{
    return &cfg->collectors.hwmon;
}

const struct wt_collector_ops wt_hwmon_collector = {
    .name = "hwmon",
    .file_source = true,
    .config = hwmon_config,
    .open = hwmon_open,
    .poll = hwmon_poll,
    .close = hwmon_close,
    .held = hwmon_held,
};

uint64_t wt_hwmon_value_reads(const void *state)
{
    const struct hwmon *h = state;
    return h ? h->reads : 0;
}
