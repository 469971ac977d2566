/* SPDX-License-Identifier: MIT */
/*
 * The fleet's store: a Prometheus-compatible engine (Prometheus, VictoriaMetrics) that receives
 * every node's series by remote write (serve/remote_write.h adds the node label). A client of
 * its HTTP query API (POST /api/v1/query, form-encoded: no query is bounded by a URL's length)
 * that yields the same sample arrays the local queries
 * read, and the figures the CLI prints computed from them with the local exact-window math
 * (wt_window, wt_energy_choose in store/query.h), so a figure over the fleet is the sum of what
 * each node's own store would answer, as far as the engine holds the same samples.
 *
 * Samples are read around each window edge only: the range selector SEL[2P] evaluated at
 * edge + P returns the raw samples within P (the pad, 30 s by default) on each side; one query
 * covers edges closer than 2P, for a batch of nodes at once (a job's nodes, named in the query in
 * batches of batch_nodes; a batch the engine refuses with 422, its limit on series or samples per
 * query, is split in two and asked again, down to one node, whose refusal is the error: never a
 * partial sum). Between the edges a counter's increase is
 * the difference of its readings; a counter reset inside a window is therefore not seen: the
 * window reads as a gap (its coverage says so), never as negative energy. An edge with no sample
 * within the pad is a gap too, as the span before a series' first reading is locally.
 */
#ifndef WT_STORE_PROMSRC_H
#define WT_STORE_PROMSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/reading.h"
#include "store/query.h"

struct wt_promsrc;
typedef struct cJSON cJSON;

struct wt_promsrc_opts {
    const char *ca_file;   /* https: the CA bundle (NULL: the system's) */
    const char *cert_file; /* https: a client certificate and key (NULL: none) */
    const char *key_file;
    const char *token_file; /* a bearer token (NULL: none) */
    int64_t timeout_ns;     /* per request; 0: 30 s */
    int64_t pad_ns;         /* samples read around each edge; 0: 30 s */
    size_t batch_nodes;     /* nodes per query of a job's energy; 0: 256 */
};

/*
 * Opens a client for source: prometheus://HOST:PORT, victoriametrics://HOST:PORT (plain HTTP)
 * or an http:// / https:// base URL (a path prefix is kept, e.g. a VictoriaMetrics cluster's
 * /select/0/prometheus). opts may be NULL. Returns 0, or -EINVAL with err naming the source, or
 * -ENOMEM. Nothing is sent before the first query.
 */
int wt_promsrc_open(const char *source, const struct wt_promsrc_opts *opts, struct wt_promsrc **out,
                    struct wt_err *err) WT_MUST_USE;
void wt_promsrc_close(struct wt_promsrc *p);
/* The source as given, for messages and the JSON's "source". */
const char *wt_promsrc_name(const struct wt_promsrc *p);

/* One series of a query's answer: the node label, the name, the other labels, its samples. */
struct wt_promsrc_series {
    char node[64];
    char metric[96];
    char labels[WT_LABELS_LEN]; /* canonical (core/reading.h), without __name__ and node */
    struct wt_point *pts;       /* time order (ms precision, in ns) */
    size_t n, cap;
};
struct wt_promsrc_set {
    struct wt_promsrc_series *s;
    size_t n, cap;
    size_t *index, index_cap; /* the series by node, name and labels (a hash; internal) */
};
void wt_promsrc_set_free(struct wt_promsrc_set *set);

/*
 * Evaluates promql at t_ns (POST /api/v1/query); a matrix (range selector: raw samples) or a
 * vector (one sample per series) is appended to set, points of a series already there are
 * merged in time order. Returns 0, -EIO (unreachable, not 2xx, the engine's error, an answer
 * the engine marks partial; err says, with the engine's message) or -ENOMEM.
 */
int wt_promsrc_query(struct wt_promsrc *p, const char *promql, int64_t t_ns,
                     struct wt_promsrc_set *set, struct wt_err *err) WT_MUST_USE;

/*
 * Evaluates promql at each step_ns from start_ns to end_ns (POST /api/v1/query_range; step_ns a
 * whole number of ms): a matrix appended to set as wt_promsrc_query does. Returns as it does,
 * or -EINVAL (err) for a step under 1 ms or end before start.
 */
int wt_promsrc_query_range(struct wt_promsrc *p, const char *promql, int64_t start_ns,
                           int64_t end_ns, int64_t step_ns, struct wt_promsrc_set *set,
                           struct wt_err *err) WT_MUST_USE;

/* What an answer of the query API says besides its series. */
struct wt_promsrc_answer {
    char status[16];        /* "success", "error" */
    char error[WT_ERR_LEN]; /* the engine's message (cut to fit) */
    bool partial;           /* "isPartial": true (a cluster that missed a storage node) */
};

/*
 * The query API's answer in buf (len bytes, NUL-terminated at buf[len]) parsed without a tree:
 * the samples of every series in "data"."result" (a matrix's "values", a vector's "value")
 * appended to set as wt_promsrc_query does, the rest into *a; keys it does not know are skipped
 * whatever they hold, in any order. Returns 0, -EINVAL (not JSON, or cut short: *at is the byte
 * where it went wrong; set may hold part of the answer) or -ENOMEM.
 */
int wt_promsrc_parse(const char *buf, size_t len, struct wt_promsrc_set *set,
                     struct wt_promsrc_answer *a, size_t *at) WT_MUST_USE;

/*
 * wt_store_energy over the fleet: every energy series of every node (the jobs' derived
 * counters excepted) over exactly [from, to], counter first per GPU. Rows carry the node in
 * s.node. *rows is malloc'd. Returns 0, -EINVAL (err) or -EIO / -ENOMEM.
 */
int wt_promsrc_energy(struct wt_promsrc *p, int64_t from, int64_t to, struct wt_energy_row **rows,
                      size_t *n, struct wt_err *err) WT_MUST_USE;

/*
 * The fleet's figures of job ref (the job name, the key across nodes; or a node's numeric job
 * id when no job has that name), from the job series (audit/jobs.h) the engine holds within the
 * last 31 days before now_ns: per node the latest job of that name, its window, its GPUs and its
 * marks; its GPU and CPU energy over that window and each phase, summed over the nodes. *out is
 * the JSON of GET /api/v1/jobs/{ref} with "nodes" (one object per node: node, id, start, end,
 * gpus, kpi) and "source"; counters and tags are those of the local API only (not exported).
 * Returns 0, -ENOENT (err: no such job), -EIO or -ENOMEM.
 */
int wt_promsrc_job(struct wt_promsrc *p, const char *ref, int64_t now_ns, cJSON **out,
                   struct wt_err *err) WT_MUST_USE;

struct wt_store;

/*
 * A window's readings for a working store without every raw sample (promsrc_digest.c says how):
 * each counter (names ending _joules_total) as its raw samples around the window's edges, one
 * reading per step between them (steps of them over the window) and the raw samples of the steps
 * where a reset or a gap lies, so that the store's exact-window energy and coverage over
 * [from, to] (and over the spans between the inner edges) are those of the raw samples; each gauge
 * as one point per chart_step_ns (the mean of the step for _watts, _ratio and _celsius series, else
 * its last reading), for charts; the selector raw (NULL: none) copied sample by sample over the
 * window and the pad. Lists end with NULL. *series and *readings count what went into st. Returns
 * 0, -EINVAL, -EIO (err) or -ENOMEM.
 */
struct wt_promsrc_digest {
    const char *const *counters;
    const char *const *gauges;
    const char *raw;
    const int64_t *edges;  /* inner edges whose sub-windows must be exact too (CUE's carbon */
    size_t nedges;         /* steps): their raw samples within the pad are read as well */
    size_t steps;          /* 0: 16 */
    int64_t chart_step_ns; /* 0: the window over 800 (a report's chart columns) */
};
int wt_promsrc_digest(struct wt_promsrc *p, const struct wt_promsrc_digest *d, int64_t from,
                      int64_t to, struct wt_store *st, size_t *series, size_t *readings,
                      struct wt_err *err) WT_MUST_USE;

/*
 * wt_jobs_profile over the fleet: the mean GPU power of job ref summed over its nodes in each
 * step_ns slot from its earliest start to its latest end (or now_ns), for `wattage schedule
 * --like JOB --source`. *watts is malloc'd. Returns 0, -ENOENT, -EINVAL (err) or -EIO.
 */
int wt_promsrc_profile(struct wt_promsrc *p, const char *ref, int64_t now_ns, int64_t step_ns,
                       double **watts, size_t *n, int64_t *duration_ns,
                       struct wt_err *err) WT_MUST_USE;

#endif
