/* SPDX-License-Identifier: MIT */
/*
 * The engine client's insides, shared by its parts: promsrc.c (the client: HTTP, queries, the
 * samples around window edges, the fleet's energy rows and the copy into a store),
 * promsrc_parse.c (the query API's answer parsed without a tree into sample sets) and
 * promsrc_job.c (one job over the fleet: its nodes, batches, phases and profile). Not for use
 * outside src/store/.
 */
#ifndef WT_STORE_PROMSRC_INT_H
#define WT_STORE_PROMSRC_INT_H

#include <stdint.h>

#include "core/curl_lib.h"
#include "store/promsrc.h"

#define LOOKBACK "31d" /* how far back the job series are looked for */

struct wt_promsrc {
    char name[512];
    char base[512];
    char auth[600]; /* "Authorization: Bearer …" or "" */
    struct wt_promsrc_opts o;
    CURL *curl;
};

/* FNV-1a of s chained onto h (start with WT_PROMSRC_HASH_SEED); a separator ends each string,
 * so ("ab","c") is not ("a","bc"). Open-addressing slots hold an index + 1, 0 is empty. */
#define WT_PROMSRC_HASH_SEED 0xcbf29ce484222325ull
uint64_t wt_promsrc_hash(uint64_t h, const char *s);

/* wt_promsrc_query, with the HTTP status of the answer (0: none) for the caller to judge. */
int wt_promsrc_query_status(struct wt_promsrc *p, const char *promql, int64_t t_ns,
                            struct wt_promsrc_set *set, long *status, struct wt_err *err);

/*
 * Reads sel's raw samples within the pad of every edge into set: edges closer than twice the
 * pad share one query. edges is sorted here. Returns as wt_promsrc_query_status.
 */
int wt_promsrc_around(struct wt_promsrc *p, const char *sel, int64_t *edges, size_t ne,
                      struct wt_promsrc_set *set, long *status, struct wt_err *err);

/*
 * wt_promsrc_around with the pad given, and edges no more than join apart sharing one query
 * (wt_promsrc_around: the source's pad, join twice that).
 */
int wt_promsrc_around_pad(struct wt_promsrc *p, const char *sel, int64_t *edges, size_t ne,
                          int64_t pad, int64_t join, struct wt_promsrc_set *set, long *status,
                          struct wt_err *err);

/*
 * The series matching the selector match with samples within [start_ns, end_ns] (POST
 * /api/v1/series): each added to set without points (one already there is left as it is).
 * Returns as wt_promsrc_query_status.
 */
int wt_promsrc_series_status(struct wt_promsrc *p, const char *match, int64_t start_ns,
                             int64_t end_ns, struct wt_promsrc_set *set, long *status,
                             struct wt_err *err);

/* wt_promsrc_query_range, with the HTTP status of the answer (0: none). */
int wt_promsrc_query_range_status(struct wt_promsrc *p, const char *promql, int64_t start_ns,
                                  int64_t end_ns, int64_t step_ns, struct wt_promsrc_set *set,
                                  long *status, struct wt_err *err);

/*
 * The values of label (a label name, as it stands in the URL) on the series matching the
 * selector match within [start_ns, end_ns] (GET /api/v1/label/NAME/values: the engine's index,
 * no sample read; an engine's index may name a value whose series has no sample in the range
 * but one near it): each added to set as a series whose node is the value, without name, labels
 * or points. Returns as wt_promsrc_query_status.
 */
int wt_promsrc_label_values_status(struct wt_promsrc *p, const char *label, const char *match,
                                   int64_t start_ns, int64_t end_ns, struct wt_promsrc_set *set,
                                   long *status, struct wt_err *err);

/*
 * wt_promsrc_parse, and the first of the answer's "warnings" (an engine's word that it cut or
 * missed part of the answer) into warning (wn bytes, cut to fit; "" when none).
 */
int wt_promsrc_parse_warned(const char *buf, size_t len, struct wt_promsrc_set *set,
                            struct wt_promsrc_answer *a, size_t *at, char *warning, size_t wn);

/* err, the engine's refusal (422) of a batch's query down to the one node, given that node and
 * what split its batches (a job, the digest) in front. */
void wt_promsrc_alone(struct wt_err *err, const char *node, const char *what);

/* src into dst (n bytes), cut to fit. */
void wt_promsrc_copy_cut(char *dst, size_t n, const char *src);

/* The exact-window energy of series s (of that kind) over [a, b], as the local store computes
 * it, and the time it covers. */
void wt_promsrc_window(const struct wt_promsrc_series *s, enum wt_series_kind kind, int64_t a,
                       int64_t b, double *energy_j, double *covered_s);

/* r: the exact-window energy of series s over [a, b], as the local store computes it, with its
 * coverage; chosen (wt_energy_choose decides among a GPU's rows). */
void wt_promsrc_fill_row(struct wt_energy_row *r, const struct wt_promsrc_series *s, int64_t a,
                         int64_t b);

/* Writes the points of one series into st as readings of metric (one the build knows; else, or
 * without a node, nothing). Returns 0, -ENOMEM or the store's error (err names the series). */
struct wt_store;
int wt_promsrc_store_series(struct wt_store *st, const char *node, const char *metric,
                            const char *labels, const struct wt_point *p, size_t n,
                            struct wt_err *err);

#endif
