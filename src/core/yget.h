/* SPDX-License-Identifier: MIT */
/*
 * Reading a module's own config section (alert rules, SNMP targets, Modbus registers, carbon
 * sources...) from the YAML tree, with messages that name the place the way config.c does:
 *   wattage.yaml:31: alerts.rules[2].for: expected a duration such as 30s or 5m (got "soon")
 * A module describes the keys a mapping may hold, then reads each one; absent keys leave the
 * caller's default in place. Every function returns 0 or -EINVAL with err set.
 */
#ifndef WT_YGET_H
#define WT_YGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/yamltree.h"

struct wt_target;

/* Where messages point: the file name and the dotted path of the node being read. */
struct wt_yget {
    const char *file;
    struct wt_err *err;
};

/* Builds "path.key" or "path[i]" into out (bounded). Returns out. */
char *wt_y_path(char *out, size_t n, const char *path, const char *key);
char *wt_y_index(char *out, size_t n, const char *path, size_t i);

/* Fails unless n is a mapping ("expected a mapping with keys a, b, c"). Null counts as empty. */
int wt_y_map(const struct wt_yget *g, const struct wt_ynode *n, const char *path,
             const char *const *keys) WT_MUST_USE;
/* Fails unless n is a list. Null counts as an empty list. */
int wt_y_seq(const struct wt_yget *g, const struct wt_ynode *n, const char *path) WT_MUST_USE;

/*
 * Checks that every key of mapping `map` is one of keys (NULL-terminated), suggesting the nearest
 * for a typo, and that no key repeats. Call first on every mapping.
 */
int wt_y_keys(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
              const char *const *keys) WT_MUST_USE;

/* The child of mapping `map` named key, or NULL (also NULL when map is NULL or not a mapping). */
const struct wt_ynode *wt_y_get(const struct wt_ynode *map, const char *key);

/*
 * The scalar forms every config reader shares (config.c's wt_config_parse_bool and
 * wt_config_format_duration are these): a YAML-style boolean (true/false, yes/no, on/off, any
 * case; returns 0 or -EINVAL), and ns in the largest unit that divides it exactly (7d, 90m,
 * 1500ms; 0 as "0").
 */
int wt_y_parse_bool(const char *s, bool *out) WT_MUST_USE;
void wt_y_format_duration(int64_t ns, char *buf, size_t n);

/* Scalars. `required` makes an absent key an error ("...: required"). */
int wt_y_string(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                const char *key, bool required, char *out, size_t n) WT_MUST_USE;
int wt_y_bool(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
              const char *key, bool *out) WT_MUST_USE;
/* A duration > 0 ("30s", "5m", "1h30m"; a bare number is seconds), or 0 when allow_zero. */
int wt_y_duration(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                  const char *key, bool allow_zero, int64_t *out_ns) WT_MUST_USE;
/*
 * A duration within [min_ns, max_ns] (or 0 when allow_zero), for intervals, timeouts and retry
 * delays, where a typo ("1ns" for "1s") is harmful: a value outside is refused with the bound it
 * broke and why ("expected a duration from 100ms to 5m (got \"1ns\", below 100ms): <why>").
 * Plain wt_y_duration keeps any value from 1ns to WT_Y_DURATION_MAX.
 */
int wt_y_duration_in(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                     const char *key, bool allow_zero, int64_t min_ns, int64_t max_ns,
                     const char *why, int64_t *out_ns) WT_MUST_USE;
#define WT_Y_DURATION_MAX (100LL * 365 * 86400 * 1000000000LL) /* 100 years: past it, a typo */

/* The ranges shared by every section, so that one kind of key has one rule. */
#define WT_Y_MS 1000000LL
#define WT_Y_S 1000000000LL
#define WT_Y_NET_POLL_MIN (100 * WT_Y_MS) /* a network target's poll interval */
#define WT_Y_NET_POLL_MAX (3600 * WT_Y_S)
#define WT_Y_WHY_NET_POLL                                                                          \
    "a device polled more often than every 100ms is hammered and answers late; an hour between "   \
    "polls leaves gaps in every energy figure"
#define WT_Y_NET_TIMEOUT_MIN (10 * WT_Y_MS) /* a request to a device or a receiver */
#define WT_Y_NET_TIMEOUT_MAX (60 * WT_Y_S)
#define WT_Y_WHY_NET_TIMEOUT                                                                       \
    "under 10ms even a local network times out; over 60s one dead peer stalls the others"

/* A finite number within [min, max]. */
int wt_y_double(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
                const char *key, double min, double max, double *out) WT_MUST_USE;
/* An integer within [min, max] (decimal, or 0x hex). */
int wt_y_int(const struct wt_yget *g, const struct wt_ynode *map, const char *path, const char *key,
             int64_t min, int64_t max, int64_t *out) WT_MUST_USE;
/* One of names (NULL-terminated); *out is its index. */
int wt_y_enum(const struct wt_yget *g, const struct wt_ynode *map, const char *path,
              const char *key, const char *const *names, int *out) WT_MUST_USE;

/*
 * Edit distance (optimal string alignment: insertions, deletions, changes, swaps of neighbours),
 * case-insensitive; SIZE_MAX for strings of 40 characters or more. For did-you-mean messages.
 */
size_t wt_edit_distance(const char *a, size_t la, const char *b, size_t lb);

/* A value for a message: quoted, at most 60 characters ("..." after), control characters as
 * '?', "nothing" for an empty one. */
void wt_y_show(const char *v, char *out, size_t n);

/* An error at node n (its line): "file:LINE: path: <message>". Returns -EINVAL. */
int wt_y_fail(const struct wt_yget *g, const struct wt_ynode *n, const char *path, const char *fmt,
              ...) __attribute__((format(printf, 4, 5)));

/* An error about key of mapping m: at the key's line (the mapping's when absent), path.key. */
int wt_y_key_fail(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                  const char *key, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * A collector's list of targets (the SNMP, Redfish, Modbus and IPMI sections): a sequence of at
 * most WT_MAX_TARGETS mappings, each parsed by parse into a target of size bytes, whose name
 * (a string) and interval (int64_t ns) are the members at offsets name_at and interval_at; the
 * names must be unique. With want >= 0 that target is left in *one;
 * every other one, and every one when parsing fails, is given to drop (NULL: nothing to free).
 * names (may be NULL) gets every target's name and interval, up to max. Returns the number of
 * targets, or -EINVAL with err naming file:line and key.
 */
struct wt_y_targets {
    const char *section;
    size_t size;
    size_t name_at, interval_at;
    int (*parse)(const struct wt_yget *g, const struct wt_ynode *m, const char *path, void *t);
    void (*drop)(void *t);
};
int wt_y_targets_parse(const struct wt_y_targets *d, const char *file, const struct wt_ynode *node,
                       long want, void *one, struct wt_target *names, size_t max,
                       struct wt_err *err);
/*
 * A collector's targets() (core/source.h) over its section sec (NULL: none): every target's name
 * and interval, up to max; a section that does not parse is logged under mod and gives none.
 */
size_t wt_y_targets_names(const struct wt_y_targets *d, const char *file,
                          const struct wt_ynode *sec, const char *mod, struct wt_target *out,
                          size_t max);
/*
 * A collector's open_target() start: target i of sec into *one. Returns 0; what
 * wt_y_targets_parse returns; -ENOENT with err ("no WHAT target I in the configuration") when the
 * section has fewer targets.
 */
int wt_y_target_at(const struct wt_y_targets *d, const char *file, const struct wt_ynode *sec,
                   size_t i, void *one, const char *what, struct wt_err *err);

#endif
