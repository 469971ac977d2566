/* SPDX-License-Identifier: MIT */
/*
 * The engine client's insides, shared by its parts: promsrc.c (the client: HTTP, queries, the
 * samples around window edges, the fleet's energy rows and the copy into a store),
 * promsrc_parse.c (the query API's answer parsed without a tree into sample sets) and
 * promsrc_job.c (one job over the fleet: its nodes, batches, phases and profile) and
 * promsrc_edge.c (the readings around a job's edges from the engine's rollups). Not for use
 * outside src/store/.
 */
#ifndef WT_STORE_PROMSRC_INT_H
#define WT_STORE_PROMSRC_INT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/promsrc.h"

#define LOOKBACK "31d" /* how far back the job series are looked for */

struct wt_promsrc {
    char name[512];
    char base[512];
    char auth[600]; /* "Authorization: Bearer …" or "" */
    struct wt_promsrc_opts o;
    CURL *curl;
    bool raw_edges; /* the engine has no MetricsQL rollups: a job's edges read as raw samples */
};

/* FNV-1a of s chained onto h (start with WT_PROMSRC_HASH_SEED); a separator ends each string,
 * so ("ab","c") is not ("a","bc"). Open-addressing slots hold an index + 1, 0 is empty. */
#define WT_PROMSRC_HASH_SEED 0xcbf29ce484222325ull
uint64_t wt_promsrc_hash(uint64_t h, const char *s);

/* The series of set with that node, name and labels, added (empty) when new; NULL: out of
 * memory. A pointer into set->s: good until the next series is added. */
struct wt_promsrc_series *wt_promsrc_series_of(struct wt_promsrc_set *set, const char *node,
                                               const char *metric, const char *labels);
/* Puts the sample (t, v) into s in time order (a sample at a time already there is dropped).
 * Returns 0 or -ENOMEM. */
int wt_promsrc_push(struct wt_promsrc_series *s, int64_t t, double v);

/* wt_promsrc_query, with the HTTP status of the answer (0: none) for the caller to judge. */
int wt_promsrc_query_status(struct wt_promsrc *p, const char *promql, int64_t t_ns,
                            struct wt_promsrc_set *set, long *status, struct wt_err *err);

/*
 * Reads sel's raw samples within the pad of every edge into set: edges closer than twice the
 * pad share one query. edges is sorted here. Returns as wt_promsrc_query_status.
 */
int wt_promsrc_around(struct wt_promsrc *p, const char *sel, int64_t *edges, size_t ne,
                      struct wt_promsrc_set *set, long *status, struct wt_err *err);

/* r: the exact-window energy of series s over [a, b], as the local store computes it, with its
 * coverage; chosen (wt_energy_choose decides among a GPU's rows). */
void wt_promsrc_fill_row(struct wt_energy_row *r, const struct wt_promsrc_series *s, int64_t a,
                         int64_t b);

/* A node's name as a PromQL regex inside a string literal: both layers escaped. */
void wt_promsrc_regex_quote(const char *s, char *out, size_t n);

/*
 * The readings of a job's energy series around one edge of each of n nodes (node[i] at t[i]),
 * through the engine's rollups (MetricsQL: last_over_time, tlast_over_time at the edge,
 * first_over_time, tfirst_over_time at the edge + the pad, each over the pad, nodes sharing an
 * edge time in one selector): for every series the last reading at or before its node's edge
 * and the first one after it, each within the pad, pushed into set. What wt_window needs of the
 * samples around an edge, four small answers instead of every sample within the pad. sel_head
 * is the selector up to the node regex ("{__name__=~\"...\",node=~\""). Returns 0; -EIO (err;
 * *status: the answer's HTTP status, 400 where the engine does not know these functions, 422
 * where the query is over its limits) or -ENOMEM.
 */
int wt_promsrc_edges(struct wt_promsrc *p, const char *sel_head, const char *const *node,
                     const int64_t *t, size_t n, struct wt_promsrc_set *set, long *status,
                     struct wt_err *err);

#endif
