/* SPDX-License-Identifier: MIT */
/*
 * Configuration: YAML (libyaml) read into a tree that keeps file:line, checked against one schema
 * table, written into struct wt_config. Every key has a default, so no file is needed; flags are
 * applied by the caller after loading. Unknown keys and bad values are errors naming file, line
 * and key: "wattage.yaml:12: collectors.nvml.interval: expected a duration > 0 (got \"-1\")".
 */
#ifndef WT_CONFIG_H
#define WT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "core/log.h"

#define WT_DEFAULT_CONFIG "/etc/wattage/wattage.yaml"
#define WT_PATH_LEN 256
/* A duration key's "auto" (collectors.nvml.energy_interval): the module decides. */
#define WT_CONFIG_AUTO (-1)

struct wt_ynode;

struct wt_collector_config {
    bool enabled;
    int64_t interval_ns; /* 0: daemon.interval */
};

struct wt_config {
    char source[WT_PATH_LEN]; /* the file it came from, or "" for the built-in defaults */
    struct {
        int64_t interval_ns;         /* daemon.interval, default 1 s */
        bool align_ticks;            /* daemon.align_ticks: ticks on wall-clock multiples, true */
        char listen[128];            /* daemon.listen, default 127.0.0.1:9747 */
        enum wt_log_level log_level; /* daemon.log_level, default info */
        /* daemon.clock_max_error: a figure over a window where the kernel's maximum clock
         * error exceeded this carries a warning (audit/clockcheck.h); default 100 ms */
        int64_t clock_max_error_ns;
        /* daemon.stop_deadline: at SIGTERM/SIGINT, the longest the streams (remote write, OTLP,
         * Kafka) take to send what is stored and not acknowledged; 0: nothing; default 5 s */
        int64_t stop_deadline_ns;
        struct {
            char cert[WT_PATH_LEN], key[WT_PATH_LEN], client_ca[WT_PATH_LEN];
        } tls;
        struct {
            char token_file[WT_PATH_LEN];
            bool protect_reads; /* daemon.auth.protect_reads: token needed for GET too */
        } auth;
    } daemon;
    struct {
        char path[WT_PATH_LEN];      /* store.path, default wt_config_default_store_path */
        int64_t flush_ns;            /* store.flush_interval, default 1 s */
        int64_t buffer_readings;     /* store.buffer_readings: kept while writes fail; 0: none */
        int64_t retention_raw_ns;    /* store.retention.raw, default 7 d */
        int64_t retention_rollup_ns; /* store.retention.rollup, default 400 d */
        bool ticks; /* store.packed_ticks: a flush is one packed ticks row, default false */
    } store;
    struct {
        struct wt_collector_config nvml;
        char nvml_library[WT_PATH_LEN]; /* collectors.nvml.library, default libnvidia-ml.so.1 */
        int64_t nvml_attrib_grace_ns;   /* collectors.nvml.attribution_grace, default 5m */
        bool nvml_attribution;          /* collectors.nvml.attribution, default true */
        /* collectors.nvml.energy_interval: energy-only sub-polls between ticks (collect/nvml.h);
         * WT_CONFIG_AUTO (the default) lets the collector decide, 0 (0 or off) none */
        int64_t nvml_energy_interval_ns;
        /* collectors.nvml.slow_interval: how often the slow fields are read (collect/cadence.h);
         * 0: every tick; default 60 s */
        int64_t nvml_slow_interval_ns;
        bool rapl_attribution; /* collectors.rapl.attribution, default true */
        struct wt_collector_config rapl;
        struct wt_collector_config procfs;
        struct wt_collector_config netdev;  /* network and InfiniBand traffic (sysfs) */
        struct wt_collector_config snmp;    /* targets: collectors.snmp.targets (a section) */
        struct wt_collector_config redfish; /* targets: collectors.redfish.targets */
        struct wt_collector_config modbus;  /* targets: collectors.modbus.targets */
        struct wt_collector_config clock;   /* the kernel's clock discipline, PTP clocks */
        struct wt_collector_config ipmi;    /* targets: collectors.ipmi.targets (DCMI power) */
        struct wt_collector_config amd;     /* AMD GPUs through ROCm SMI (collect/rocm.h) */
        char amd_library[WT_PATH_LEN];      /* collectors.amd.library; "": the usual names */
        int64_t amd_slow_interval_ns;       /* collectors.amd.slow_interval; 0: every tick */
        struct wt_collector_config hwmon;   /* hwmon power and energy sensors (collect/hwmon.h) */
        /* collectors.hwmon.max_hold; 0: every sensor every tick; WT_CONFIG_AUTO (the default):
         * two of the collector's ticks */
        int64_t hwmon_max_hold_ns;
    } collectors;
    struct wt_collector_config inference; /* targets: inference.targets (collect/inference.h) */
    /*
     * How the CLI's daemon clients (job, jobs, exec) reach the daemon; flags and WATTAGE_URL,
     * WATTAGE_CACERT, WATTAGE_CERT, WATTAGE_KEY override these. All "" by default: the URL then
     * comes from daemon.listen.
     */
    struct {
        char url[300];                /* client.url: http://HOST:PORT or https://HOST:PORT */
        char cacert[WT_PATH_LEN];     /* client.cacert: CA bundle that signs the daemon's cert */
        char cert[WT_PATH_LEN];       /* client.cert: PEM client certificate, for mutual TLS */
        char key[WT_PATH_LEN];        /* client.key: its private key (goes with client.cert) */
        char token_file[WT_PATH_LEN]; /* client.token_file: the bearer token to send */
    } client;
    /* The loaded document, for wt_config_section; owned (wt_config_free). NULL: defaults. */
    struct wt_ynode *doc;
};

/*
 * Sections that their own module reads (alert rules, SNMP targets, carbon sources...): lists and
 * shapes a flat schema cannot say. config.c keeps their YAML subtree and runs the module's check
 * at load, so `check-config` and a SIGHUP reload report the same file:line errors as for any other
 * key. The registry lives in src/cli/sections.c, one line per section.
 */
struct wt_config_section {
    const char *path; /* dotted, such as "alerts" or "collectors.snmp.targets" */
    /* Checks the subtree (never NULL); file is for messages. Returns 0 or -EINVAL with err. */
    int (*check)(const char *file, const struct wt_ynode *node, struct wt_err *err);
};
extern const struct wt_config_section wt_config_sections[]; /* ends with {NULL, NULL} */

/* The subtree of a module section as loaded, or NULL when the file does not have it. */
const struct wt_ynode *wt_config_section(const struct wt_config *c, const char *path);
/* The file name messages about sections should name ("(defaults)" when none). */
const char *wt_config_file(const struct wt_config *c);

/* Frees what a load allocated; c keeps its scalar values. Accepts a config never loaded. */
void wt_config_free(struct wt_config *c);
/* Moves src's document into dst (freeing dst's); src is left without one. */
void wt_config_move_doc(struct wt_config *dst, struct wt_config *src);

void wt_config_defaults(struct wt_config *c);
/*
 * store.path when the configuration sets none: /var/lib/wattage/wattage.db for root, else
 * $STATE_DIRECTORY/wattage.db (systemd's StateDirectory=), else $XDG_STATE_HOME/wattage/wattage.db,
 * else ~/.local/state/wattage/wattage.db. why (may be NULL) says which rule chose it.
 */
void wt_config_default_store_path(char *path, size_t n, char *why, size_t whyn);

/*
 * Loads path over the defaults in *c (its document, if any, is replaced). Returns 0; -ENOENT when
 * the file does not exist (err says so); -EINVAL with err naming file:line and key for bad YAML,
 * unknown keys or bad values. On error *c is left with the defaults, never half-applied.
 */
int wt_config_load(const char *path, struct wt_config *c, struct wt_err *err) WT_MUST_USE;
/* The same from memory; name is used in messages. */
int wt_config_load_string(const char *name, const char *yaml, size_t len, struct wt_config *c,
                          struct wt_err *err) WT_MUST_USE;

/* The interval a collector runs at: its own, else daemon.interval. */
int64_t wt_config_interval(const struct wt_config *c, const struct wt_collector_config *cc);

/*
 * Splits a listen address "HOST:PORT" or "[IPv6]:PORT" (port 1..65535) into host (without the
 * brackets; may be NULL) and port (may be NULL). For --listen as much as for daemon.listen.
 * Returns 0 or -EINVAL.
 */
int wt_config_parse_listen(const char *s, char *host, size_t hostlen, int *port) WT_MUST_USE;

/*
 * Checks a duration for the key at path (such as "daemon.interval", for a --interval flag)
 * against the range the schema gives it. Returns 0 when within; -ERANGE with msg filled ("expected
 * a duration from 10ms to 1h (got 1ns, below 10ms): why"; shown is the value as written, or NULL
 * to format ns); -ENOENT when path is not a duration key. A negative ns stands for text that is
 * not a duration: msg then says what is expected, with the range.
 */
int wt_config_check_duration(const char *path, int64_t ns, const char *shown, char *msg,
                             size_t n) WT_MUST_USE;

/* Formats ns in the largest unit that divides it exactly: 7d, 90m, 1500ms; 0 as "0". */
void wt_config_format_duration(int64_t ns, char *buf, size_t n);

/* Parses a YAML-style boolean: true/false, yes/no, on/off (any case). Returns 0 or -EINVAL. */
int wt_config_parse_bool(const char *s, bool *out) WT_MUST_USE;

/* The i-th known key as a dotted path ("daemon.tls.cert"), in schema order; NULL past the end. */
const char *wt_config_key(size_t i);

/*
 * Writes c as a YAML config that wt_config_load reads back to the same values (every key, with
 * durations as "1s", "7d"...). For `wattage check-config` and tests. Returns 0 or -EIO.
 */
int wt_config_write(const struct wt_config *c, FILE *f) WT_MUST_USE;

#endif
