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

/*
 * Copies the raw samples of every node's GPU and CPU energy and facility series within the pad
 * around [from, to] into st (which should be a new store: node = the node label), so the local
 * computations that read a store (audit/kpi.h) run on the fleet's readings as they are. Series
 * of names this build does not know are skipped. Returns 0, -EIO (err) or -ENOMEM.
 */
struct wt_store;
int wt_promsrc_copy(struct wt_promsrc *p, int64_t from, int64_t to, struct wt_store *st,
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
