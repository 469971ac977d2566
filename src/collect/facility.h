/* SPDX-License-Identifier: MIT */
/*
 * What the facility collectors (Modbus meters, Redfish services, IPMI BMCs, SNMP PDUs) share:
 * one target's life as a collector (core/source.h's open_target, poll, down, close), around a
 * reader per protocol. The poll loop (core/loop.c) gives each target its thread, deadline,
 * backoff and its "poll failed" / "recovered" messages; this module gives every target the
 * rest: its place in the config section, its placement labels, wattage_facility_up (1 after a
 * poll that read, 0 after one that failed), the peer clock's skew, the rate-limited note of a
 * partial read, and conditions said once when they start and once when they end.
 *
 * A protocol's library (net-snmp, libmodbus, FreeIPMI) is a struct wt_fac_lib, loaded with dlopen
 * by its open when a target of its section opens (wt_fac_lib_load), never linked.
 *
 * A protocol is one struct wt_fac_proto: its section (core/yget.h's wt_y_targets), the size of
 * its state, whose first member is a struct wt_fac, and its open, read and close; its collector
 * table is WT_FAC_COLLECTOR's (wt_fac_poll, wt_fac_down, wt_fac_close and the proto handed to
 * wt_fac_targets and wt_fac_open_target). All four (SNMP, Modbus, Redfish, IPMI) run on it; a
 * later protocol (the inference targets) can read through it the same way.
 */
#ifndef WT_FACILITY_H
#define WT_FACILITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/clocksync.h"
#include "core/config.h"
#include "core/err.h"
#include "core/log.h"
#include "core/reading.h"
#include "core/source.h"
#include "core/yget.h"

#define WT_FAC_PLACE_LEN 32 /* what wt_fac_parse_place takes: 31 characters each */
#define WT_FAC_PLACE_CAP 64 /* what a placement holds: SNMP's own parse takes 63 (64 together) */

/* Where a target stands: node, rack and zone labels ("" for none). */
struct wt_fac_place {
    char node[WT_FAC_PLACE_CAP], rack[WT_FAC_PLACE_CAP], zone[WT_FAC_PLACE_CAP];
};

/* True for a target, point or register name: one or more of [A-Za-z0-9_.-]. */
bool wt_fac_name_ok(const char *s);

/* The required key name of target mapping m at path into name (n bytes), a name that
 * wt_fac_name_ok takes. Returns 0 or -EINVAL with g->err. */
int wt_fac_parse_name(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                      char *name, size_t n) __attribute__((warn_unused_result));

/* The optional keys timeout (a network request's, within core/yget.h's bounds for one) and
 * interval (a network poll's) into *timeout_ns and *interval_ns, left as they are when absent.
 * Returns 0 or -EINVAL with g->err. */
int wt_fac_parse_timing(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                        int64_t *timeout_ns, int64_t *interval_ns)
    __attribute__((warn_unused_result));

/* The optional keys node, rack and zone of target mapping m at path into *p, each of at most
 * WT_FAC_PLACE_LEN - 1 characters. Returns 0 or -EINVAL with g->err (a value too long). */
int wt_fac_parse_place(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                       struct wt_fac_place *p) __attribute__((warn_unused_result));

/* Appends node, rack and zone (those set) to the labels in buf. Returns 0 or -E2BIG. */
int wt_fac_place_labels(char *buf, size_t n, const struct wt_fac_place *p)
    __attribute__((warn_unused_result));

/*
 * The first line of a secret file (never logged), the file named by key `what` (a password_file,
 * a k_g_file), into out (n bytes), its line end removed. Returns 0; -errno ("cannot read WHAT
 * PATH: ..."); -EINVAL ("WHAT PATH is empty"); -E2BIG, err untouched, when the line does not fit
 * in out (the caller says the bound).
 */
int wt_fac_read_line(const char *what, const char *path, char *out, size_t n, struct wt_err *err)
    __attribute__((warn_unused_result));
/* wt_fac_read_line of a password_file. */
int wt_fac_read_password(const char *path, char *out, size_t n, struct wt_err *err)
    __attribute__((warn_unused_result));

/* A collector's config check of its targets section d. Returns 0 or -EINVAL with err. */
int wt_fac_config_check(const struct wt_y_targets *d, const char *file, const struct wt_ynode *node,
                        struct wt_err *err);

/*
 * A condition said once: *said is whether it holds now (as last said); now is whether it holds
 * at this poll. Returns true when it changed (the caller says so: it started when *said is now
 * true, it ended when false), false when it is as it was.
 */
bool wt_fac_turn(bool *said, bool now);

struct wt_fac;

/* One facility protocol: its targets and its reader. */
struct wt_fac_proto {
    const char *source; /* "ipmi": the source label, the log module, targets()'s messages */
    const char *title;  /* "IPMI": "no IPMI target 3 in the configuration" */
    const struct wt_y_targets *targets; /* its section; its targets' place is at place_at */
    size_t place_at;                    /* offsetof(target, place): a struct wt_fac_place */
    size_t state_size;                  /* its state: a struct whose first member is a wt_fac */
    size_t target_at;                   /* offsetof(state, target): where target i is parsed */
    /*
     * Prepares the state once its target is parsed and f's labels are made: 0, -ENOENT when the
     * device is not there yet (the loop looks again), or another negative errno with err. NULL:
     * nothing to prepare.
     */
    int (*open)(struct wt_fac *f, const struct wt_config *cfg, struct wt_err *err);
    /*
     * This poll's readings, stamped t_ns, into out (wattage_facility_up is added after them).
     * Returns 0, or a negative errno with err when the target could not be read.
     */
    int (*read)(struct wt_fac *f, int64_t t_ns, struct wt_batch *out, struct wt_err *err);
    /* Releases what open (or a half-done open) made, not the state itself; NULL: nothing. */
    void (*close)(struct wt_fac *f);
};

/* The first member of every facility target's state. */
struct wt_fac {
    const struct wt_fac_proto *proto;
    const char *name;                 /* the target's name (in its parsed target) */
    const struct wt_fac_place *place; /* its placement (in its parsed target) */
    char up_labels[WT_LABELS_LEN];    /* source, target, node, rack, zone */
    double clock_bound_s;             /* daemon.clock_max_error */
    struct wt_peer_skew_watch skew;   /* wt_fac_skew's "beyond the bound" said once */
    struct wt_ratelimit rl;           /* wt_fac_partial: once a minute */
};

/* targets() of core/source.h for protocol p: every target's name and interval. */
size_t wt_fac_targets(const struct wt_fac_proto *p, const struct wt_config *cfg,
                      struct wt_target *out, size_t max);
/*
 * The facility part of state f (allocated, zeroed, whose target is already at p->target_at):
 * its protocol, name, placement, up labels, clock bound (daemon.clock_max_error; cfg NULL:
 * none) and rate limit. Returns 0 or -E2BIG with err (labels too long).
 */
int wt_fac_init(struct wt_fac *f, const struct wt_fac_proto *p, const struct wt_config *cfg,
                struct wt_err *err) __attribute__((warn_unused_result));
/*
 * open_target() of core/source.h for protocol p: the state (p->state_size bytes, zeroed) with
 * target i parsed, wt_fac_init, then p->open. *state is set as soon as it is allocated, so
 * that wt_fac_close frees a half-built one. Returns 0 or what failed (-ENOENT: not there yet).
 */
int wt_fac_open_target(const struct wt_fac_proto *p, const struct wt_config *cfg, size_t i,
                       void **state, struct wt_err *err);
/* poll(): the protocol's read, then wattage_facility_up 1. */
int wt_fac_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err);
/* down(): after a failed poll, wattage_facility_up 0 (the target's last readings go). */
int wt_fac_down(void *state, int64_t t_ns, struct wt_batch *out);
/* close(): the protocol's close, then the state; accepts NULL. */
void wt_fac_close(void *state);

/*
 * The peer's clock: stamp_s (its time, whole seconds) seen between before_ns and after_ns
 * (CLOCK_REALTIME around the request) as wattage_clock_peer_skew_seconds with the target's
 * labels, and said once when it goes beyond daemon.clock_max_error. Returns 0 or -ENOMEM.
 */
int wt_fac_skew(struct wt_fac *f, int64_t stamp_s, int64_t before_ns, int64_t after_ns,
                int64_t t_ns, struct wt_batch *out) __attribute__((warn_unused_result));

/*
 * A protocol's section and collector table, written once here so that no protocol repeats
 * them: the section collectors.NAME.targets (TARGET, its struct type, parsed by PARSE, freed by
 * DROP or NULL) and its config check `check`; a static struct wt_fac_proto NAME_proto (STATE,
 * the state's struct type, whose member t is the target; TARGET's member place its placement;
 * OPEN, READ, CLOSE the reader); and the collector table `ops` (core/source.h) over facility.c,
 * its config block cfg->collectors.NAME.
 */
#define WT_FAC_COLLECTOR(ops, check, NAME, TITLE, TARGET, PARSE, DROP, STATE, OPEN, READ, CLOSE)   \
    static const struct wt_y_targets NAME##_section = {                                            \
        .section = "collectors." #NAME ".targets",                                                 \
        .size = sizeof(TARGET),                                                                    \
        .name_at = offsetof(TARGET, name),                                                         \
        .interval_at = offsetof(TARGET, interval_ns),                                              \
        .parse = PARSE,                                                                            \
        .drop = DROP,                                                                              \
    };                                                                                             \
    int check(const char *file, const struct wt_ynode *node, struct wt_err *err)                   \
    {                                                                                              \
        return wt_fac_config_check(&NAME##_section, file, node, err);                              \
    }                                                                                              \
    static const struct wt_fac_proto NAME##_proto = {                                              \
        .source = #NAME,                                                                           \
        .title = TITLE,                                                                            \
        .targets = &NAME##_section,                                                                \
        .place_at = offsetof(TARGET, place),                                                       \
        .state_size = sizeof(STATE),                                                               \
        .target_at = offsetof(STATE, t),                                                           \
        .open = OPEN,                                                                              \
        .read = READ,                                                                              \
        .close = CLOSE,                                                                            \
    };                                                                                             \
    static const struct wt_collector_config *NAME##_config(const struct wt_config *cfg)            \
    {                                                                                              \
        return &cfg->collectors.NAME;                                                              \
    }                                                                                              \
    static size_t NAME##_targets(const struct wt_config *cfg, struct wt_target *out, size_t max)   \
    {                                                                                              \
        return wt_fac_targets(&NAME##_proto, cfg, out, max);                                       \
    }                                                                                              \
    static int NAME##_open_target(const struct wt_config *cfg, size_t i, void **state,             \
                                  struct wt_err *err)                                              \
    {                                                                                              \
        return wt_fac_open_target(&NAME##_proto, cfg, i, state, err);                              \
    }                                                                                              \
    const struct wt_collector_ops ops = {                                                          \
        .name = #NAME,                                                                             \
        .config = NAME##_config,                                                                   \
        .poll = wt_fac_poll,                                                                       \
        .close = wt_fac_close,                                                                     \
        .targets = NAME##_targets,                                                                 \
        .open_target = NAME##_open_target,                                                         \
        .down = wt_fac_down,                                                                       \
    }

/* One symbol of a protocol library and where its address goes: slot is the address of a
 * pointer (to a function or to data) of the symbol's type. */
struct wt_fac_sym {
    const char *name;
    void *slot;
};

/*
 * A protocol's library (net-snmp, libmodbus, FreeIPMI): not linked, loaded with dlopen when a
 * target of its section opens, so that a daemon without such targets maps none of it. Loaded
 * once and kept for the life of the process.
 */
struct wt_fac_lib {
    const char *section; /* "collectors.snmp.targets": named in the error */
    const char *soname;  /* "libnetsnmp.so.40" */
    const char *package; /* "libsnmp40": the Debian package that ships it */
    const struct wt_fac_sym *syms;
    size_t nsyms;
    bool loaded; /* under facility.c's lock */
};

/*
 * A protocol library's table, written once here so that no protocol repeats it. LIST(X, tbl)
 * applies X(tbl, NAME) to each symbol NAME the protocol uses (as declared by the library's
 * headers). WT_FAC_LIB_TABLE(tbl, LIST) is the type struct tbl##_table: a member NAME per
 * symbol, a pointer of NAME's type (tbl.NAME(...) for a function, *tbl.NAME for an array).
 * WT_FAC_LIB(storage, tbl, LIST, SECTION, SONAME, PACKAGE) defines the table tbl (storage:
 * static, or nothing for one declared extern), its symbols and the struct wt_fac_lib tbl##_lib.
 */
#define WT_FAC_LIB_MEMBER(tbl, f) __typeof__(f) *f;
#define WT_FAC_LIB_SYM(tbl, f) {#f, &(tbl).f},
#define WT_FAC_LIB_TABLE(tbl, LIST)                                                                \
    struct tbl##_table {                                                                           \
        LIST(WT_FAC_LIB_MEMBER, tbl)                                                               \
    }
#define WT_FAC_LIB(storage, tbl, LIST, SECTION, SONAME, PACKAGE)                                   \
    storage struct tbl##_table tbl;                                                                \
    static const struct wt_fac_sym tbl##_syms[] = {LIST(WT_FAC_LIB_SYM, tbl)};                     \
    static struct wt_fac_lib tbl##_lib = {                                                         \
        .section = SECTION,                                                                        \
        .soname = SONAME,                                                                          \
        .package = PACKAGE,                                                                        \
        .syms = tbl##_syms,                                                                        \
        .nsyms = sizeof tbl##_syms / sizeof tbl##_syms[0],                                         \
    }
/* WT_FAC_LIB_TABLE and WT_FAC_LIB for a table of one file. */
#define WT_FAC_LIB_STATIC(tbl, LIST, SECTION, SONAME, PACKAGE)                                     \
    WT_FAC_LIB_TABLE(tbl, LIST);                                                                   \
    WT_FAC_LIB(static, tbl, LIST, SECTION, SONAME, PACKAGE)

/*
 * Loads library l (once; later calls return at once) and fills every symbol's slot. Returns 0;
 * -ELIBACC with err ("SECTION: cannot load SONAME (Debian package PACKAGE): why") when it is
 * not there; -ELIBBAD with err when it lacks a symbol. A failed load leaves nothing loaded and
 * may be tried again.
 */
int wt_fac_lib_load(struct wt_fac_lib *l, struct wt_err *err) __attribute__((warn_unused_result));

/* A poll that read only part of the target: "<target>: <what> suppressed=N", at most once a
 * minute (f->rl). */
void wt_fac_partial(struct wt_fac *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
