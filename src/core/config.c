/* SPDX-License-Identifier: MIT */
/*
 * Configuration: the YAML tree (yamltree.c) walked against one schema table that names, for every
 * key, its dotted path, its type, where it lives in struct wt_config and its default. Sections are
 * implied by the paths, so adding a key is one line in the table. The walk stops at the first
 * problem in document order and says where it is and what was expected:
 *   wattage.yaml:12: collectors.nvml.interval: expected a duration > 0 such as 1s or 500ms (got
 * "-1") Values are parsed into a copy, so a bad file never leaves a config half-applied.
 */
#include "core/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/yamltree.h"
#include "core/yget.h"

enum ftype { T_BOOL, T_STRING, T_PATH, T_DURATION, T_LOG_LEVEL, T_LISTEN, T_INT };

/* Field flags. */
#define F_NONEMPTY 0x1      /* a string that may not be empty */
#define F_ZERO_INHERITS 0x2 /* a duration where 0 means "use daemon.interval" */
#define F_AUTO_OFF 0x4      /* a duration, or auto (WT_CONFIG_AUTO) or 0/off (0) */
#define F_ZERO_OFF 0x8      /* a duration, or 0/off (0): none */

struct field {
    const char *path;
    enum ftype type;
    unsigned flags;
    size_t off, size;
    const char *def; /* the default, written as in a file and parsed like one */
    /* Durations (ns) and integers: the range a value must lie in (0 as "inherit" aside), and
     * why, for messages. */
    int64_t min_ns, max_ns;
    const char *why;
};

#define FIELD(path, type, member, flags, def)                                                      \
    {                                                                                              \
        path, type, flags, offsetof(struct wt_config, member),                                     \
            sizeof(((struct wt_config *)0)->member), def, 0, 0, NULL                               \
    }
#define DURATION(path, member, flags, def, min_ns, max_ns, why)                                    \
    {                                                                                              \
        path, T_DURATION, flags, offsetof(struct wt_config, member),                               \
            sizeof(((struct wt_config *)0)->member), def, min_ns, max_ns, why                      \
    }

#define INTEGER(path, member, def, min, max, why)                                                  \
    {                                                                                              \
        path, T_INT, 0, offsetof(struct wt_config, member),                                        \
            sizeof(((struct wt_config *)0)->member), def, min, max, why                            \
    }

#define MS WT_NS_PER_MS
#define SEC WT_NS_PER_S
#define HOUR (3600 * WT_NS_PER_S)
#define DAY (86400 * WT_NS_PER_S)
/*
 * The reasons behind the bounds. A poll interval of 1ns (a typo for 1s) makes a collector spin:
 * it saturates a core and drops millions of readings a second; an hour-long one leaves nothing
 * to integrate energy from.
 */
#define WHY_POLL                                                                                   \
    "polling more often than every 10ms saturates a core and floods the store; less often than "   \
    "every hour leaves gaps in every energy figure"
#define WHY_NET_POLL                                                                               \
    "a network device polled more often than every 100ms is hammered and answers late; less "      \
    "often than every hour leaves gaps in every energy figure"
#define WHY_FLUSH                                                                                  \
    "flushing more often than every 10ms spins the writer; a kill -9 loses up to one flush "       \
    "interval, so more than 10m is a lot to lose"
#define WHY_RETENTION                                                                              \
    "raw readings kept less than an hour would be pruned before queries and rollups use them; "    \
    "more than 100 years is a typo"

/*
 * The schema. Keep sections together (wt_config_write nests by common prefix) and keep
 * deploy/wattage.yaml in step: a test checks that it names every key here.
 */
static const struct field fields[] = {
    DURATION("daemon.interval", daemon.interval_ns, 0, "1s", 10 * MS, HOUR, WHY_POLL),
    FIELD("daemon.align_ticks", T_BOOL, daemon.align_ticks, 0, "true"),
    FIELD("daemon.listen", T_LISTEN, daemon.listen, F_NONEMPTY, "127.0.0.1:9747"),
    FIELD("daemon.log_level", T_LOG_LEVEL, daemon.log_level, 0, "info"),
    DURATION("daemon.clock_max_error", daemon.clock_max_error_ns, 0, "100ms", WT_NS_PER_S / 1000000,
             16 * SEC,
             "the kernel's maximum error starts near 16 s when nothing disciplines the clock and "
             "is microseconds under PTP: a bound outside 1us..16s warns always or never"),
    DURATION("daemon.stop_deadline", daemon.stop_deadline_ns, F_ZERO_OFF, "5s", 0, 60 * SEC,
             "at a stop, remote write, OTLP and Kafka send what is stored for this long at most "
             "(0: not at all, the next start sends it); systemd kills a daemon that takes "
             "longer than TimeoutStopSec (30s in deploy/systemd/wattage.service)"),
    FIELD("daemon.tls.cert", T_PATH, daemon.tls.cert, 0, ""),
    FIELD("daemon.tls.key", T_PATH, daemon.tls.key, 0, ""),
    FIELD("daemon.tls.client_ca", T_PATH, daemon.tls.client_ca, 0, ""),
    FIELD("daemon.auth.token_file", T_PATH, daemon.auth.token_file, 0, ""),
    FIELD("daemon.auth.protect_reads", T_BOOL, daemon.auth.protect_reads, 0, "false"),
    FIELD("store.path", T_PATH, store.path, F_NONEMPTY, "/var/lib/wattage/wattage.db"),
    DURATION("store.flush_interval", store.flush_ns, 0, "1s", 10 * MS, 10 * 60 * SEC, WHY_FLUSH),
    INTEGER("store.buffer_readings", store.buffer_readings, "131072", 0, 16777216,
            "readings kept in memory while writes fail take about 250 bytes each; 16777216 is 4 "
            "GiB"),
    FIELD("store.packed_ticks", T_BOOL, store.ticks, 0, "true"),
    DURATION("store.retention.raw", store.retention_raw_ns, 0, "7d", HOUR, 36500 * DAY,
             WHY_RETENTION),
    DURATION("store.retention.rollup", store.retention_rollup_ns, 0, "400d", HOUR, 36500 * DAY,
             WHY_RETENTION),
    FIELD("collectors.nvml.enabled", T_BOOL, collectors.nvml.enabled, 0, "true"),
    DURATION("collectors.nvml.interval", collectors.nvml.interval_ns, F_ZERO_INHERITS, "0", 10 * MS,
             HOUR, WHY_POLL),
    FIELD("collectors.nvml.library", T_PATH, collectors.nvml_library, F_NONEMPTY,
          "libnvidia-ml.so.1"),
    DURATION("collectors.nvml.energy_interval", collectors.nvml_energy_interval_ns, F_AUTO_OFF,
             "auto", 10 * MS, HOUR, WHY_POLL),
    DURATION("collectors.nvml.slow_interval", collectors.nvml_slow_interval_ns, F_ZERO_OFF, "60s",
             SEC, DAY,
             "the slow fields (power limits, ECC aggregates, remapped rows...) are read every tick "
             "(0) or at least once a second; more than a day leaves a changed limit unseen"),
    FIELD("collectors.nvml.attribution", T_BOOL, collectors.nvml_attribution, 0, "true"),
    DURATION("collectors.nvml.attribution_grace", collectors.nvml_attrib_grace_ns, 0, "5m", 0, DAY,
             "a finished process keeps its own energy series this long, then joins its owner's "
             "(Slurm job, pod, unit); over a day of them is a series per process ever run"),
    FIELD("collectors.rapl.enabled", T_BOOL, collectors.rapl.enabled, 0, "true"),
    FIELD("collectors.rapl.attribution", T_BOOL, collectors.rapl_attribution, 0, "true"),
    DURATION("collectors.rapl.interval", collectors.rapl.interval_ns, F_ZERO_INHERITS, "0", 10 * MS,
             HOUR, WHY_POLL),
    FIELD("collectors.procfs.enabled", T_BOOL, collectors.procfs.enabled, 0, "true"),
    DURATION("collectors.procfs.interval", collectors.procfs.interval_ns, F_ZERO_INHERITS, "0",
             10 * MS, HOUR, WHY_POLL),
    FIELD("collectors.netdev.enabled", T_BOOL, collectors.netdev.enabled, 0, "true"),
    DURATION("collectors.netdev.interval", collectors.netdev.interval_ns, F_ZERO_INHERITS, "0",
             10 * MS, HOUR, WHY_POLL),
    FIELD("collectors.snmp.enabled", T_BOOL, collectors.snmp.enabled, 0, "true"),
    DURATION("collectors.snmp.interval", collectors.snmp.interval_ns, 0, "10s", 100 * MS, HOUR,
             WHY_NET_POLL),
    FIELD("collectors.redfish.enabled", T_BOOL, collectors.redfish.enabled, 0, "true"),
    DURATION("collectors.redfish.interval", collectors.redfish.interval_ns, 0, "10s", 100 * MS,
             HOUR, WHY_NET_POLL),
    FIELD("collectors.modbus.enabled", T_BOOL, collectors.modbus.enabled, 0, "true"),
    DURATION("collectors.modbus.interval", collectors.modbus.interval_ns, 0, "5s", 100 * MS, HOUR,
             WHY_NET_POLL),
    FIELD("collectors.ipmi.enabled", T_BOOL, collectors.ipmi.enabled, 0, "true"),
    DURATION("collectors.ipmi.interval", collectors.ipmi.interval_ns, 0, "10s", 100 * MS, HOUR,
             WHY_NET_POLL),
    FIELD("collectors.clock.enabled", T_BOOL, collectors.clock.enabled, 0, "true"),
    DURATION("collectors.clock.interval", collectors.clock.interval_ns, F_ZERO_INHERITS, "0",
             10 * MS, HOUR, WHY_POLL),
    FIELD("collectors.amd.enabled", T_BOOL, collectors.amd.enabled, 0, "true"),
    DURATION("collectors.amd.interval", collectors.amd.interval_ns, F_ZERO_INHERITS, "0", 10 * MS,
             HOUR, WHY_POLL),
    FIELD("collectors.amd.library", T_PATH, collectors.amd_library, 0, ""),
    DURATION("collectors.amd.slow_interval", collectors.amd_slow_interval_ns, F_ZERO_OFF, "60s",
             SEC, DAY,
             "the slow fields (power cap and its range, ECC counts) are read every tick (0) or "
             "at least once a second; more than a day leaves a changed cap unseen"),
    FIELD("collectors.hwmon.enabled", T_BOOL, collectors.hwmon.enabled, 0, "true"),
    DURATION("collectors.hwmon.interval", collectors.hwmon.interval_ns, F_ZERO_INHERITS, "0",
             10 * MS, HOUR, WHY_POLL),
    DURATION("collectors.hwmon.max_hold", collectors.hwmon_max_hold_ns, F_AUTO_OFF, "auto", SEC,
             HOUR,
             "a power sensor is read every tick (0) or at its chip's own update_interval and "
             "average interval, but at least this often (auto: every other tick): 1s to 1h"),
    FIELD("inference.enabled", T_BOOL, inference.enabled, 0, "true"),
    DURATION("inference.interval", inference.interval_ns, F_ZERO_INHERITS, "0", 100 * MS, HOUR,
             WHY_NET_POLL),
    FIELD("client.url", T_STRING, client.url, 0, ""),
    FIELD("client.cacert", T_PATH, client.cacert, 0, ""),
    FIELD("client.cert", T_PATH, client.cert, 0, ""),
    FIELD("client.key", T_PATH, client.key, 0, ""),
    FIELD("client.token_file", T_PATH, client.token_file, 0, ""),
};
#define NFIELDS (sizeof fields / sizeof fields[0])
#define PATH_MAX_LEN 256

/* State of one load: where messages point, and the line each key was set on (0: default). */
struct ctx {
    const char *name;
    struct wt_config *c;
    struct wt_err *err;
    int line[NFIELDS];
};

static size_t nsections(void)
{
    size_t n = 0;
    while (wt_config_sections[n].path)
        n++;
    return n;
}

/* Every key path: the schema's fields, then the module sections. */
static size_t nkeys(void)
{
    return NFIELDS + nsections();
}

static const char *key_path(size_t i)
{
    return i < NFIELDS ? fields[i].path : wt_config_sections[i - NFIELDS].path;
}

const char *wt_config_key(size_t i)
{
    return i < nkeys() ? key_path(i) : NULL;
}

static const struct wt_config_section *find_section(const char *path)
{
    for (size_t i = 0; wt_config_sections[i].path; i++)
        if (strcmp(wt_config_sections[i].path, path) == 0)
            return &wt_config_sections[i];
    return NULL;
}

/* The node at a dotted path below root, or NULL. */
static const struct wt_ynode *node_at(const struct wt_ynode *root, const char *path)
{
    const struct wt_ynode *n = root;
    const char *p = path;
    while (n && *p) {
        size_t len = strcspn(p, ".");
        const struct wt_ynode *next = NULL;
        if (n->kind != WT_YNODE_MAP)
            return NULL;
        for (size_t i = 0; i < n->n && !next; i++)
            if (strlen(n->child[i]->key) == len && strncmp(n->child[i]->key, p, len) == 0)
                next = n->child[i];
        n = next;
        p += len;
        if (*p == '.')
            p++;
    }
    return n;
}

const struct wt_ynode *wt_config_section(const struct wt_config *c, const char *path)
{
    return c && c->doc ? node_at(c->doc, path) : NULL;
}

const char *wt_config_file(const struct wt_config *c)
{
    return c->source[0] ? c->source : "(defaults)";
}

void wt_config_free(struct wt_config *c)
{
    if (!c)
        return;
    wt_ynode_free(c->doc);
    c->doc = NULL;
}

void wt_config_move_doc(struct wt_config *dst, struct wt_config *src)
{
    if (dst == src)
        return;
    wt_ynode_free(dst->doc);
    dst->doc = src->doc;
    src->doc = NULL;
}

int64_t wt_config_interval(const struct wt_config *c, const struct wt_collector_config *cc)
{
    return cc && cc->interval_ns > 0 ? cc->interval_ns : c->daemon.interval_ns;
}

/* ---- values ---------------------------------------------------------------------------------- */

int wt_config_parse_bool(const char *s, bool *out)
{
    return wt_y_parse_bool(s, out);
}

static bool valid_hostname(const char *h)
{
    size_t len = strlen(h);
    if (len == 0 || len > 253)
        return false;
    for (const char *p = h; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
            return false;
    /* Looks like an IPv4 address: then it must be one ("300.1.1.1" is a typo, not a name). */
    if (strspn(h, "0123456789.") == len) {
        struct in_addr a;
        return inet_pton(AF_INET, h, &a) == 1;
    }
    return h[0] != '-' && h[0] != '.';
}

int wt_config_parse_listen(const char *s, char *host, size_t hostlen, int *port)
{
    char h[256];
    const char *colon;

    if (!s || !*s)
        return -EINVAL;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return -EINVAL;
        size_t n = (size_t)(close - s - 1);
        if (n == 0 || n >= sizeof h)
            return -EINVAL;
        memcpy(h, s + 1, n);
        h[n] = '\0';
        struct in6_addr a;
        if (inet_pton(AF_INET6, h, &a) != 1)
            return -EINVAL;
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        /* A second colon means an IPv6 address without brackets: ambiguous, refused. */
        if (!colon || memchr(s, ':', (size_t)(colon - s)))
            return -EINVAL;
        size_t n = (size_t)(colon - s);
        if (n >= sizeof h)
            return -EINVAL;
        memcpy(h, s, n);
        h[n] = '\0';
        if (!valid_hostname(h))
            return -EINVAL;
    }
    const char *p = colon + 1;
    size_t digits = strspn(p, "0123456789");
    if (digits == 0 || digits > 5 || p[digits])
        return -EINVAL;
    long v = strtol(p, NULL, 10);
    if (v < 1 || v > 65535)
        return -EINVAL;
    if (host) {
        if (strlen(h) >= hostlen)
            return -EINVAL;
        snprintf(host, hostlen, "%s", h);
    }
    if (port)
        *port = (int)v;
    return 0;
}

/* What a field takes, for messages: "expected <this>". */
static const char *expectation(const struct field *f)
{
    switch (f->type) {
    case T_BOOL:
        return "true or false";
    case T_STRING:
        return "a string";
    case T_PATH:
        return "a file path";
    case T_DURATION:
        if (f->flags & F_AUTO_OFF)
            return "a duration > 0 such as 200ms, auto, or 0 or off for none";
        if (f->flags & F_ZERO_OFF)
            return "a duration such as 5s or 500ms, or 0 or off for none";
        return f->flags & F_ZERO_INHERITS
                   ? "a duration > 0 such as 1s or 500ms, or 0 to use daemon.interval"
                   : "a duration > 0 such as 1s or 500ms";
    case T_LOG_LEVEL:
        return "one of debug, info, warn, error";
    case T_LISTEN:
        return "HOST:PORT or [IPv6]:PORT with a port from 1 to 65535, such as 127.0.0.1:9747";
    case T_INT:
        return "a whole number";
    }
    return "a value";
}

/*
 * Stores text v into the field. Returns 0, or -EINVAL with why set when there is more to say
 * than the field's expectation (why stays "" otherwise).
 */
static int set_value(const struct field *f, const char *v, struct wt_config *c, char *why,
                     size_t whylen)
{
    void *dst = (char *)c + f->off;
    why[0] = '\0';
    switch (f->type) {
    case T_BOOL:
        return wt_config_parse_bool(v, dst);
    case T_LOG_LEVEL: {
        enum wt_log_level lv;
        if (wt_log_parse_level(v, &lv) != 0)
            return -EINVAL;
        *(enum wt_log_level *)dst = lv;
        return 0;
    }
    case T_DURATION: {
        int64_t ns;
        if ((f->flags & F_ZERO_INHERITS) && (strcmp(v, "0") == 0 || strcmp(v, "0s") == 0)) {
            *(int64_t *)dst = 0;
            return 0;
        }
        if ((f->flags & F_ZERO_OFF) &&
            (strcmp(v, "0") == 0 || strcmp(v, "0s") == 0 || strcmp(v, "off") == 0)) {
            *(int64_t *)dst = 0;
            return 0;
        }
        if (f->flags & F_AUTO_OFF) {
            if (strcmp(v, "auto") == 0 || strcmp(v, "0") == 0 || strcmp(v, "0s") == 0 ||
                strcmp(v, "off") == 0) {
                *(int64_t *)dst = strcmp(v, "auto") == 0 ? WT_CONFIG_AUTO : 0;
                return 0;
            }
        }
        /* strtod underneath would take "nan", "inf", " 1s" or "0x10s"; a person means digits. */
        if (!isdigit((unsigned char)v[0]) && v[0] != '.')
            return -EINVAL;
        for (const char *p = v; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '.')
                return -EINVAL;
        if (strchr(v, 'x') || strchr(v, 'X') || strchr(v, 'e') || strchr(v, 'E'))
            return -EINVAL;
        if (wt_duration_parse(v, &ns) != 0)
            return -EINVAL;
        *(int64_t *)dst = ns;
        return 0;
    }
    case T_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (!isdigit((unsigned char)v[0]) || *end || errno)
            return -EINVAL;
        if (x < f->min_ns || x > f->max_ns) {
            snprintf(why, whylen, " from %" PRId64 " to %" PRId64 ": %s", f->min_ns, f->max_ns,
                     f->why);
            return -EINVAL;
        }
        *(int64_t *)dst = x;
        return 0;
    }
    case T_LISTEN:
        if (*v && wt_config_parse_listen(v, NULL, 0, NULL) != 0) {
            if (v[0] != '[' && strchr(v, ':') != strrchr(v, ':'))
                snprintf(why, whylen, "; write IPv6 addresses in brackets, such as [::1]:9747");
            return -EINVAL;
        }
        /* stored as a string */
        __attribute__((fallthrough));
    case T_STRING:
    case T_PATH:
        for (const char *p = v; *p; p++) {
            if (iscntrl((unsigned char)*p)) {
                snprintf(why, whylen, "; it contains a control character");
                return -EINVAL;
            }
        }
        if (strlen(v) >= f->size) {
            snprintf(why, whylen, " of at most %zu characters", f->size - 1);
            return -EINVAL;
        }
        if (!*v && (f->flags & F_NONEMPTY)) {
            snprintf(why, whylen, ", not an empty value");
            return -EINVAL;
        }
        memset(dst, 0, f->size);
        memcpy(dst, v, strlen(v));
        return 0;
    }
    return -EINVAL;
}

void wt_config_defaults(struct wt_config *c)
{
    char why[128];
    memset(c, 0, sizeof *c);
    /* The defaults are written as a person would write them; a unit test checks each parses. */
    for (size_t i = 0; i < NFIELDS; i++)
        (void)set_value(&fields[i], fields[i].def, c, why, sizeof why);
    wt_config_default_store_path(c->store.path, sizeof c->store.path, NULL, 0);
}

void wt_config_default_store_path(char *path, size_t n, char *why, size_t whyn)
{
    const char *sd = getenv("STATE_DIRECTORY"), *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    const char *w = "the default for root";
    if (geteuid() == 0) {
        snprintf(path, n, "/var/lib/wattage/wattage.db");
    } else if (sd && sd[0] == '/') { /* systemd's StateDirectory= (the first, when several) */
        snprintf(path, n, "%.*s/wattage.db", (int)strcspn(sd, ":"), sd);
        w = "the default under systemd: $STATE_DIRECTORY";
    } else if (xdg && xdg[0] == '/') {
        snprintf(path, n, "%s/wattage/wattage.db", xdg);
        w = "the default for a user who is not root: $XDG_STATE_HOME/wattage";
    } else if (home && home[0] == '/') {
        snprintf(path, n, "%s/.local/state/wattage/wattage.db", home);
        w = "the default for a user who is not root: ~/.local/state/wattage (XDG_STATE_HOME is "
            "not set)";
    } else {
        snprintf(path, n, "/var/lib/wattage/wattage.db");
        w = "the default: neither XDG_STATE_HOME nor HOME is set";
    }
    if (why)
        snprintf(why, whyn, "%s", w);
}

void wt_config_format_duration(int64_t ns, char *buf, size_t n)
{
    wt_y_format_duration(ns, buf, n);
}

/*
 * A duration outside the field's range: fills msg with what was expected, the bound broken and
 * why ("a duration from 10ms to 1h (got \"1ns\", below 10ms): polling ...") and returns -ERANGE.
 * 0 (inherit, or off) and fields without a range pass.
 */
static int check_range(const struct field *f, int64_t ns, const char *shown, char *msg, size_t n)
{
    char lo[32], hi[32], v[32];
    if (f->type != T_DURATION || !f->max_ns ||
        (ns == 0 && (f->flags & (F_ZERO_INHERITS | F_ZERO_OFF))))
        return 0;
    if ((f->flags & F_AUTO_OFF) && (ns == 0 || ns == WT_CONFIG_AUTO))
        return 0;
    if (ns >= f->min_ns && ns <= f->max_ns)
        return 0;
    wt_config_format_duration(f->min_ns, lo, sizeof lo);
    wt_config_format_duration(f->max_ns, hi, sizeof hi);
    if (ns < 0) { /* not a duration at all */
        snprintf(msg, n, "expected a duration from %s to %s such as 1s or 500ms%s (got %s)", lo, hi,
                 f->flags & F_ZERO_INHERITS ? ", or 0 to use daemon.interval" : "",
                 shown ? shown : "nothing");
        return -ERANGE;
    }
    if (!shown) {
        wt_config_format_duration(ns, v, sizeof v);
        shown = v;
    }
    snprintf(msg, n, "expected a duration from %s to %s%s (got %s, %s %s): %s", lo, hi,
             f->flags & F_ZERO_INHERITS ? ", or 0 to use daemon.interval" : "", shown,
             ns < f->min_ns ? "below" : "above", ns < f->min_ns ? lo : hi, f->why);
    return -ERANGE;
}

int wt_config_check_duration(const char *path, int64_t ns, const char *shown, char *msg, size_t n)
{
    const struct field *f = NULL;
    for (size_t i = 0; i < NFIELDS && !f; i++)
        if (strcmp(fields[i].path, path) == 0)
            f = &fields[i];
    if (!f || f->type != T_DURATION)
        return -ENOENT;
    msg[0] = '\0';
    return check_range(f, ns, shown, msg, n);
}

/* ---- walking the tree ------------------------------------------------------------------------ */

static const struct field *find_field(const char *path)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(fields[i].path, path) == 0)
            return &fields[i];
    return NULL;
}

/* True when path names a section: some key lies below it. */
static bool is_section(const char *path)
{
    size_t len = strlen(path);
    for (size_t i = 0; i < nkeys(); i++)
        if (strncmp(key_path(i), path, len) == 0 && key_path(i)[len] == '.')
            return true;
    return false;
}

/*
 * Calls fn for each distinct name directly below prefix ("" for the top), in schema order.
 * Returns the number of names.
 */
static size_t each_child(const char *prefix, void (*fn)(const char *name, size_t len, void *arg),
                         void *arg)
{
    size_t plen = strlen(prefix), count = 0;
    for (size_t i = 0; i < nkeys(); i++) {
        const char *p = key_path(i);
        if (plen && (strncmp(p, prefix, plen) != 0 || p[plen] != '.'))
            continue;
        const char *name = plen ? p + plen + 1 : p;
        size_t len = strcspn(name, ".");
        /* Seen before under this prefix? */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *q = key_path(j);
            if (plen && (strncmp(q, prefix, plen) != 0 || q[plen] != '.'))
                continue;
            const char *qn = plen ? q + plen + 1 : q;
            seen = strcspn(qn, ".") == len && strncmp(qn, name, len) == 0;
        }
        if (!seen) {
            fn(name, len, arg);
            count++;
        }
    }
    return count;
}

struct near {
    const char *key;
    char best[64];
    size_t best_d;
};

static void consider(const char *name, size_t len, void *arg)
{
    struct near *n = arg;
    size_t d = wt_edit_distance(n->key, strlen(n->key), name, len);
    /* Close enough to be a typo: one edit in a short name, two in a longer one. */
    size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3, klen = strlen(n->key);
    /* Or a shortened or lengthened name ("flush" for flush_interval), if nothing nearer. */
    size_t common = klen < len ? klen : len;
    if (d > limit && common >= 3 && strncasecmp(n->key, name, common) == 0)
        d = 100;
    else if (d > limit)
        return;
    if (d < n->best_d && len < sizeof n->best) {
        n->best_d = d;
        memcpy(n->best, name, len);
        n->best[len] = '\0';
    }
}

struct names {
    char *buf;
    size_t n;
    size_t count;
};

static void list_name(const char *name, size_t len, void *arg)
{
    struct names *l = arg;
    size_t used = strlen(l->buf);
    snprintf(l->buf + used, l->n - used, "%s%.*s", l->count++ ? ", " : "", (int)len, name);
}

static int unknown_key(struct ctx *x, const struct wt_ynode *e, const char *prefix,
                       const char *path)
{
    const char *key = e->key;
    struct near n = {.key = key, .best_d = SIZE_MAX};
    char full[PATH_MAX_LEN];

    /* "daemon.interval: 1s" written flat: say how YAML nests instead. */
    if (strchr(key, '.') && (find_field(path) || is_section(path)))
        return wt_err_set(x->err,
                          "%s:%d: %s: unknown key (keys do not nest with dots; write each part "
                          "on its own line, indented below the one before)",
                          x->name, e->key_line, path);
    each_child(prefix, consider, &n);
    if (n.best_d != SIZE_MAX)
        return wt_err_set(x->err, "%s:%d: %s: unknown key; did you mean '%s'?", x->name,
                          e->key_line, path, n.best);
    /* The right name in the wrong section: "daemon.flush_interval" for store.flush_interval. */
    for (size_t i = 0; i < nkeys(); i++) {
        const char *dot = strrchr(key_path(i), '.');
        const char *leaf = dot ? dot + 1 : key_path(i);
        if (strcmp(leaf, key) == 0) {
            snprintf(full, sizeof full, "%s", key_path(i));
            return wt_err_set(x->err, "%s:%d: %s: unknown key; did you mean '%s'?", x->name,
                              e->key_line, path, full);
        }
    }
    return wt_err_set(x->err, "%s:%d: %s: unknown key", x->name, e->key_line, path);
}

static int walk(struct ctx *x, const struct wt_ynode *map, const char *prefix);

static int apply(struct ctx *x, const struct field *f, const struct wt_ynode *e)
{
    char why[128], got[80];
    if (e->kind != WT_YNODE_SCALAR)
        return wt_err_set(x->err, "%s:%d: %s: expected %s, not %s", x->name, e->line, f->path,
                          expectation(f), wt_ynode_kind_name(e->kind));
    /* A bare "key:" is null: an empty string for paths, nothing at all for the rest. */
    const char *v = wt_ynode_is_null(e) ? "" : e->value;
    if (set_value(f, v, x->c, why, sizeof why) != 0) {
        wt_y_show(v, got, sizeof got);
        return wt_err_set(x->err, "%s:%d: %s: expected %s%s (got %s)", x->name, e->line, f->path,
                          expectation(f), why, got);
    }
    if (f->type == T_DURATION) {
        char msg[400];
        wt_y_show(v, got, sizeof got);
        if (check_range(f, *(const int64_t *)((const char *)x->c + f->off), got, msg, sizeof msg))
            return wt_err_set(x->err, "%s:%d: %s: %s", x->name, e->line, f->path, msg);
    }
    x->line[f - fields] = e->line;
    return 0;
}

static int section(struct ctx *x, const struct wt_ynode *e, const char *path)
{
    char keys[200] = "", got[80];
    struct names l = {.buf = keys, .n = sizeof keys};

    if (e->kind == WT_YNODE_MAP)
        return walk(x, e, path);
    /* "daemon:" with nothing below: an empty section, all defaults. */
    if (wt_ynode_is_null(e))
        return 0;
    each_child(path, list_name, &l);
    if (e->kind == WT_YNODE_SCALAR) {
        wt_y_show(e->value, got, sizeof got);
        return wt_err_set(x->err, "%s:%d: %s: expected a section with keys %s (got %s)", x->name,
                          e->line, path, keys, got);
    }
    return wt_err_set(x->err, "%s:%d: %s: expected a section with keys %s, not %s", x->name,
                      e->line, path, keys, wt_ynode_kind_name(e->kind));
}

static int walk(struct ctx *x, const struct wt_ynode *map, const char *prefix)
{
    char path[PATH_MAX_LEN];
    for (size_t i = 0; i < map->n; i++) {
        const struct wt_ynode *e = map->child[i];
        int rc;
        int w = snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", e->key);
        /* Keys go into messages for a terminal: no control characters. */
        for (char *p = path; *p; p++)
            if (iscntrl((unsigned char)*p))
                *p = '?';
        if (w < 0 || (size_t)w >= sizeof path)
            return wt_err_set(x->err, "%s:%d: %.60s...: unknown key", x->name, e->key_line, path);
        for (size_t j = 0; j < i; j++)
            if (strcmp(map->child[j]->key, e->key) == 0)
                return wt_err_set(x->err, "%s:%d: %s: duplicate key (first set on line %d)",
                                  x->name, e->key_line, path, map->child[j]->key_line);
        const struct field *f = strchr(e->key, '.') ? NULL : find_field(path);
        const struct wt_config_section *sec = strchr(e->key, '.') ? NULL : find_section(path);
        if (f)
            rc = apply(x, f, e);
        else if (sec)
            rc = sec->check(x->name, e, x->err);
        else if (!strchr(e->key, '.') && is_section(path))
            rc = section(x, e, path);
        else
            rc = unknown_key(x, e, prefix, path);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int line_of(const struct ctx *x, const char *path)
{
    const struct field *f = find_field(path);
    return f ? x->line[f - fields] : 0;
}

/* Checks that span keys; each message points at a line where one of the keys was set. */
static int cross_checks(struct ctx *x)
{
    const struct wt_config *c = x->c;
    char a[32], b[32];
    int l;

    if (!c->daemon.tls.cert[0] != !c->daemon.tls.key[0]) {
        const char *set = c->daemon.tls.cert[0] ? "cert" : "key";
        const char *missing = c->daemon.tls.cert[0] ? "key" : "cert";
        char p[64];
        snprintf(p, sizeof p, "daemon.tls.%s", set);
        return wt_err_set(x->err,
                          "%s:%d: daemon.tls: cert and key go together (%s is set, %s is missing)",
                          x->name, line_of(x, p), set, missing);
    }
    if (c->daemon.tls.client_ca[0] && !c->daemon.tls.cert[0])
        return wt_err_set(x->err,
                          "%s:%d: daemon.tls.client_ca: needs daemon.tls.cert and daemon.tls.key "
                          "(client certificates are checked only over TLS)",
                          x->name, line_of(x, "daemon.tls.client_ca"));
    if (!c->client.cert[0] != !c->client.key[0]) {
        const char *set = c->client.cert[0] ? "cert" : "key";
        const char *missing = c->client.cert[0] ? "key" : "cert";
        char p[64];
        snprintf(p, sizeof p, "client.%s", set);
        return wt_err_set(x->err,
                          "%s:%d: client: cert and key go together (%s is set, %s is missing)",
                          x->name, line_of(x, p), set, missing);
    }
    if (c->client.url[0] && strncmp(c->client.url, "http://", 7) != 0 &&
        strncmp(c->client.url, "https://", 8) != 0) {
        char got[80];
        wt_y_show(c->client.url, got, sizeof got);
        return wt_err_set(x->err,
                          "%s:%d: client.url: expected http://HOST:PORT or https://HOST:PORT "
                          "(got %s)",
                          x->name, line_of(x, "client.url"), got);
    }
    if (c->daemon.auth.protect_reads && !c->daemon.auth.token_file[0])
        return wt_err_set(x->err,
                          "%s:%d: daemon.auth.protect_reads: needs daemon.auth.token_file (the "
                          "token that readers must present)",
                          x->name, line_of(x, "daemon.auth.protect_reads"));
    if (c->store.retention_rollup_ns < c->store.retention_raw_ns) {
        wt_config_format_duration(c->store.retention_rollup_ns, a, sizeof a);
        wt_config_format_duration(c->store.retention_raw_ns, b, sizeof b);
        l = line_of(x, "store.retention.rollup");
        if (!l)
            l = line_of(x, "store.retention.raw");
        return wt_err_set(x->err,
                          "%s:%d: store.retention.rollup: must be at least store.retention.raw "
                          "(rollups are made from raw data; %s < %s)",
                          x->name, l, a, b);
    }
    return 0;
}

int wt_config_load_string(const char *name, const char *yaml, size_t len, struct wt_config *c,
                          struct wt_err *err)
{
    struct wt_config copy;
    struct wt_ynode *root = NULL;
    struct ctx x = {.name = name, .c = &copy, .err = err};
    char keys[200] = "", got[80];
    struct names l = {.buf = keys, .n = sizeof keys};
    int rc;

    memcpy(&copy, c, sizeof copy);
    copy.doc = NULL;
    if ((rc = wt_yaml_parse(name, yaml, len, &root, err)) != 0)
        return rc;
    if (root && root->kind == WT_YNODE_MAP) {
        rc = walk(&x, root, "");
    } else if (root && !wt_ynode_is_null(root)) {
        each_child("", list_name, &l);
        if (root->kind == WT_YNODE_SCALAR)
            wt_y_show(root->value, got, sizeof got);
        else
            snprintf(got, sizeof got, "%s", wt_ynode_kind_name(root->kind));
        rc = wt_err_set(err, "%s:%d: expected sections (%s) at the top of the file (got %s)", name,
                        root->line, keys, got);
    }
    if (rc == 0)
        rc = cross_checks(&x);
    if (rc != 0) {
        wt_ynode_free(root);
        return rc;
    }
    snprintf(copy.source, sizeof copy.source, "%s", name);
    copy.doc = root; /* the module sections read their subtrees from it */
    wt_ynode_free(c->doc);
    memcpy(c, &copy, sizeof *c);
    return 0;
}

int wt_config_load(const char *path, struct wt_config *c, struct wt_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    struct stat st;
    int rc, fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        rc = -errno;
        if (rc == -ENOENT)
            wt_err_set(err, "%s: no such file", path);
        else
            wt_err_set(err, "%s: cannot open: %s", path, strerror(-rc));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        wt_err_set(err, "%s: cannot read: %s", path, strerror(-rc));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = -EISDIR;
        wt_err_set(err, "%s: is a directory, not a config file", path);
        goto out;
    }
    /* Read to the end rather than trusting st_size: a pipe or /proc file reports 0. */
    size_t cap = 4096;
    if (!(buf = malloc(cap))) {
        rc = -ENOMEM;
        wt_err_set(err, "%s: out of memory", path);
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap > WT_YAML_MAX_BYTES) {
                rc = wt_err_set(err, "%s: larger than %d bytes; is this really a config file?",
                                path, WT_YAML_MAX_BYTES);
                goto out;
            }
            char *p = realloc(buf, cap * 2);
            if (!p) {
                rc = -ENOMEM;
                wt_err_set(err, "%s: out of memory", path);
                goto out;
            }
            buf = p;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            wt_err_set(err, "%s: cannot read: %s", path, strerror(-rc));
            goto out;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    rc = wt_config_load_string(path, buf, len, c, err);
out:
    free(buf);
    close(fd);
    return rc;
}

/* ---- writing --------------------------------------------------------------------------------- */

/*
 * A double-quoted YAML scalar. What YAML does not take as printable inside one is escaped: the
 * ASCII controls, the C1 controls U+0080..U+009F (libyaml refuses them, and folds U+0085, a line
 * break, into a space) and U+FFFE, U+FFFF; \xNN and \uNNNN name code points there.
 */
static void write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s, c1 = (unsigned char)s[1];
        if (ch == '"' || ch == '\\') {
            fprintf(f, "\\%c", ch);
        } else if (iscntrl(ch)) {
            fprintf(f, "\\x%02x", ch);
        } else if (ch == 0xc2 && c1 >= 0x80 && c1 <= 0x9f) {
            fprintf(f, "\\x%02x", c1);
            s++;
        } else if (ch == 0xef && c1 == 0xbf && ((unsigned char)s[2] & 0xfe) == 0xbe) {
            fprintf(f, "\\u%04x", 0xffc0u | ((unsigned char)s[2] & 0x3fu));
            s += 2;
        } else {
            fputc(ch, f);
        }
    }
    fputc('"', f);
}

/* A mapping key: plain when it is a simple name, else quoted. */
static void write_key(FILE *f, const char *k)
{
    bool plain = *k && (isalpha((unsigned char)*k) || *k == '_');
    for (const char *p = k; *p && plain; p++)
        plain = isalnum((unsigned char)*p) || *p == '_' || *p == '-';
    if (plain)
        fputs(k, f);
    else
        write_string(f, k);
}

/* Writes a subtree kept from the loaded file; scalars are quoted, nulls written as ~. */
static void write_node(FILE *f, const struct wt_ynode *n, int depth)
{
    for (size_t i = 0; i < n->n; i++) {
        const struct wt_ynode *e = n->child[i];
        fprintf(f, "%*s", depth * 2, "");
        if (n->kind == WT_YNODE_MAP) {
            write_key(f, e->key);
            fputc(':', f);
        } else {
            fputc('-', f);
        }
        if (e->kind == WT_YNODE_SCALAR) {
            fputc(' ', f);
            if (wt_ynode_is_null(e))
                fputc('~', f);
            else
                write_string(f, e->value);
            fputc('\n', f);
        } else if (e->n == 0) {
            fputs(e->kind == WT_YNODE_MAP ? " {}\n" : " []\n", f);
        } else {
            fputc('\n', f);
            write_node(f, e, depth + 1);
        }
    }
}

/* Writes the module sections directly below parent that the loaded file has. */
static void write_sections(const struct wt_config *c, FILE *f, const char *parent, size_t plen,
                           int depth)
{
    for (size_t i = 0; wt_config_sections[i].path; i++) {
        const char *p = wt_config_sections[i].path, *dot = strrchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : 0;
        if (len != plen || strncmp(p, parent, plen) != 0)
            continue;
        const struct wt_ynode *n = wt_config_section(c, p);
        if (!n)
            continue;
        fprintf(f, "%*s", depth * 2, "");
        write_key(f, dot ? dot + 1 : p);
        fputc(':', f);
        if (n->kind == WT_YNODE_SCALAR) {
            fputc(' ', f);
            if (wt_ynode_is_null(n))
                fputc('~', f);
            else
                write_string(f, n->value);
            fputc('\n', f);
        } else if (n->n == 0) {
            fputs(n->kind == WT_YNODE_MAP ? " {}\n" : " []\n", f);
        } else {
            fputc('\n', f);
            write_node(f, n, depth + 1);
        }
    }
}

int wt_config_write(const struct wt_config *c, FILE *f)
{
    static const char *const levels[] = {"debug", "info", "warn", "error"};
    const char *prev = "";

    for (size_t i = 0; i < NFIELDS; i++) {
        const struct field *fd = &fields[i];
        const char *p = fd->path;
        const void *src = (const char *)c + fd->off;
        /* Open the sections this key is in that the previous key was not in. */
        size_t common = 0, depth = 0;
        for (size_t k = 0; p[k] && p[k] == prev[k]; k++)
            if (p[k] == '.')
                common = k + 1;
        for (size_t k = 0; k < common; k++)
            depth += p[k] == '.';
        for (const char *s = p + common, *dot; (dot = strchr(s, '.')); s = dot + 1, depth++)
            fprintf(f, "%*s%.*s:\n", (int)depth * 2, "", (int)(dot - s), s);
        fprintf(f, "%*s%s: ", (int)depth * 2, "", strrchr(p, '.') ? strrchr(p, '.') + 1 : p);
        switch (fd->type) {
        case T_BOOL:
            fputs(*(const bool *)src ? "true" : "false", f);
            break;
        case T_LOG_LEVEL: {
            enum wt_log_level lv = *(const enum wt_log_level *)src;
            fputs(lv <= WT_LOG_ERROR ? levels[lv] : "info", f);
            break;
        }
        case T_DURATION: {
            char d[32];
            int64_t ns = *(const int64_t *)src;
            if ((fd->flags & F_AUTO_OFF) && ns <= 0)
                snprintf(d, sizeof d, "%s", ns == WT_CONFIG_AUTO ? "auto" : "off");
            else if ((fd->flags & F_ZERO_OFF) && ns == 0)
                snprintf(d, sizeof d, "0");
            else
                wt_config_format_duration(ns, d, sizeof d);
            fputs(d, f);
            break;
        }
        case T_STRING:
        case T_PATH:
        case T_LISTEN:
            write_string(f, src);
            break;
        case T_INT:
            fprintf(f, "%" PRId64, *(const int64_t *)src);
            break;
        }
        fputc('\n', f);
        prev = p;
        /* The last key of its section: the module sections that live beside it follow. */
        const char *dot = strrchr(p, '.');
        size_t plen = dot ? (size_t)(dot - p) : 0;
        const char *np = i + 1 < NFIELDS ? fields[i + 1].path : "";
        const char *ndot = strrchr(np, '.');
        if (plen && (!ndot || (size_t)(ndot - np) != plen || strncmp(np, p, plen) != 0))
            write_sections(c, f, p, plen, (int)depth);
    }
    write_sections(c, f, "", 0, 0);
    return ferror(f) ? -EIO : 0;
}
