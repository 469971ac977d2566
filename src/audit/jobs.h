/* SPDX-License-Identifier: MIT */
/*
 * Jobs and marks, and their KPIs. A job has an id, a name, tags (free key=value), a node, a set
 * of GPUs (indices or UUIDs; empty: every GPU), an optional accuracy-like target, a start and an
 * end. A mark is a point in a job's time with a kind ("epoch", "step", "eval", any word), an
 * optional index and named counters (tokens, samples, requests, accuracy, latency_p99_s, ...).
 * A mark closes the phase that began at the previous mark of the same kind (or the job's start);
 * a mark with "begin": true only opens the next phase of its kind.
 *
 * Every energy figure of a job or a phase comes from the store's exact-window query
 * (store/query.h) over the job's GPUs, at the time it is asked: nothing is accumulated here.
 * While the store's writer has not flushed the end of a window yet, that window's coverage is
 * below 1 and says so.
 *
 * Jobs live in the same SQLite file as the series (tables jobs and marks, created here on this
 * module's own connection; WAL lets it write beside the store's writer).
 *
 * The jobs API's requests, without HTTP (serve/api_jobs.h has the routes and what each body
 * holds): each function below takes the request's body as it came and fills an HTTP status and
 * a JSON body, for errors too ({"error": "...", "field": "..."}: unknown job 404, ended job
 * 409, malformed JSON or bad field 400 with the field named; nothing stored on any error).
 */
#ifndef WT_JOBS_H
#define WT_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/hub.h"

#define WT_JOBS_NAME_MAX 64
#define WT_JOBS_MAX_TAGS 32
#define WT_JOBS_MAX_GPUS 64
#define WT_JOBS_MAX_COUNTERS 32
#define WT_JOBS_MAX_MARKS 100000 /* per job */
#define WT_JOBS_MAX_RUNNING 256

struct wt_jobs;
struct wt_expo_family;

/*
 * Opens the jobs tables in the store at db_path (which must exist: the daemon creates it first),
 * on a connection of its own. hub (may be NULL) is used to check GPU names against the GPUs the
 * daemon sees. Returns 0 or a negative errno with err filled.
 */
int wt_jobs_open(const char *db_path, struct wt_hub *hub, struct wt_jobs **out,
                 struct wt_err *err) WT_MUST_USE;
void wt_jobs_close(struct wt_jobs *j);

/*
 * With a hub, starts the thread that publishes wt_jobs_export_batch through it (collector
 * "jobs") once a second (or once per ten times what computing it took, when many long jobs
 * run), so the store keeps the jobs as series, /metrics serves them and remote write sends
 * them; returns 0 (also when started already) or a negative errno. Without a hub it returns
 * -ENODEV: the server then computes wattage_job_energy_joules_total{id, job} on scrape
 * (wt_jobs_family).
 */
int wt_jobs_export_start(struct wt_jobs *j) WT_MUST_USE;

/*
 * The requests. Each fills *status and *json (malloc'd, the reply body, also for errors) and
 * returns 0, or -ENOMEM / -EIO (a 500; *json NULL). now_ns is the time of the request.
 *   wt_jobs_list_json: the latest limit jobs (0: 50, at most 1000) with their energy, oldest
 *     first: {"jobs": [...]}
 *   wt_jobs_start_json: starts a job from body (see POST /api/v1/jobs), 201
 *   wt_jobs_act_json: on job ref (an id, or a name: the latest job of that name):
 *     WT_JOBS_SHOW the job with its phases and KPIs (body unused), WT_JOBS_MARK a mark,
 *     WT_JOBS_END its end, WT_JOBS_GPUS its GPUs
 */
enum wt_jobs_verb { WT_JOBS_SHOW, WT_JOBS_MARK, WT_JOBS_END, WT_JOBS_GPUS };
int wt_jobs_list_json(struct wt_jobs *j, int limit, int64_t now_ns, unsigned *status,
                      char **json) WT_MUST_USE;
int wt_jobs_start_json(struct wt_jobs *j, const char *body, size_t len, int64_t now_ns,
                       unsigned *status, char **json) WT_MUST_USE;
int wt_jobs_act_json(struct wt_jobs *j, const char *ref, enum wt_jobs_verb verb, const char *body,
                     size_t len, int64_t now_ns, unsigned *status, char **json) WT_MUST_USE;

/*
 * The series of the running jobs and of those ended in the last minute, at now (ns), appended
 * to b: wattage_job_info{id, job, gpus} 1, wattage_job_start_time_seconds{id, job},
 * wattage_job_end_time_seconds{id, job} once ended, wattage_job_energy_joules_total{id, job}
 * (GPU energy from the exact-window query), and wattage_job_mark_time_seconds{id, job, kind,
 * index} of the latest 64 marks that close a phase. job (the name) is what joins one job over
 * nodes: start it with the same name on each (e.g. the Slurm job id); remote write adds the
 * node. Returns 0, -ENOMEM or -EIO.
 */
struct wt_batch;
int wt_jobs_export_batch(struct wt_jobs *j, int64_t now, struct wt_batch *b) WT_MUST_USE;

/* The energy family of the running jobs as the server asks for it (serve/http.h's
 * wt_http_family_fn). */
int wt_jobs_family(struct wt_jobs *j, struct wt_expo_family *fam) WT_MUST_USE;

/*
 * Carbon: with a configuration set (copied; NULL removes it), every job and phase gets its
 * time-matched emissions (audit/carbon.h) beside its energy: "carbon" in the job's JSON (zone,
 * gco2e, kgco2e, gco2e_market when renewable supply is loaded, PUE and pue_source
 * measured|assumed, intensity_source measured|forecast|mixed|filled|assumed, energy by kind of
 * intensity) and kpi.gco2e of the job and its phases; and the family
 * wattage_job_emissions_grams_total{id, job} of the running jobs (wt_jobs_family_co2, computed
 * with the energy family). Call before the API layer registers the routes (serve/api_jobs.h).
 * Returns 0 or -ENOMEM.
 */
/*
 * The bound on the kernel's maximum clock error (daemon.clock_max_error, in seconds; default
 * 0.1) over which a job's window carries a warning; an unsynchronised clock always does
 * (audit/clockcheck.h). The job's JSON then has "warnings": [...].
 */
void wt_jobs_set_clock_bound(struct wt_jobs *j, double bound_s);
struct wt_carbon_conf;
int wt_jobs_set_carbon(struct wt_jobs *j, const struct wt_carbon_conf *cf) WT_MUST_USE;
/* True when a carbon configuration is set. */
bool wt_jobs_carbon_on(struct wt_jobs *j);
/* The emissions family as the server asks for it (n 0 without carbon). */
int wt_jobs_family_co2(struct wt_jobs *j, struct wt_expo_family *fam) WT_MUST_USE;

/*
 * The power profile of job ref (id or name): the mean power of its GPUs in each step_ns slot of
 * its window (until now_ns while it runs), from the store's exact-window energy; for
 * `wattage schedule --like JOB`. *watts is malloc'd. Returns 0, -ENOENT or -EIO (err says).
 */
int wt_jobs_profile(struct wt_jobs *j, const char *ref, int64_t now_ns, int64_t step_ns,
                    double **watts, size_t *n, int64_t *duration_ns,
                    struct wt_err *err) WT_MUST_USE;

/*
 * The GPUs held by the running jobs (no end) tagged key=value, e.g. cap=never for power capping:
 * each as the job names it (an index "3" or a UUID or UUID prefix "GPU-…"), at most cap of
 * them; *all is set when such a job names no GPU (it holds every GPU). Reads db_path on a
 * read-only connection of its own, opened and closed here, so it needs no wt_jobs. Returns 0
 * (no such job, no jobs table, or no store file yet: *n = 0), or -EIO.
 */
#define WT_JOBS_GPU_LEN 96
int wt_jobs_tagged_gpus(const char *db_path, const char *key, const char *value,
                        char (*gpus)[WT_JOBS_GPU_LEN], size_t cap, size_t *n,
                        bool *all) WT_MUST_USE;

/*
 * A job start, for whoever must act before it is answered (power capping lifts the idle caps
 * of its GPUs): called by POST /api/v1/jobs once the job is stored and before the reply, on the
 * request's thread with no lock of this module held, with the GPUs the job names (as it names
 * them: "3" or a UUID or prefix "GPU-…"; n 0 when it names none, so it may use any); and by
 * POST /api/v1/jobs/{ref}/gpus with the GPUs it gives a running job (n > 0). fn NULL: none.
 * Set it before the server starts.
 */
typedef void (*wt_jobs_start_fn)(void *ctx, const char (*gpus)[WT_JOBS_GPU_LEN], size_t n);
void wt_jobs_set_start_hook(struct wt_jobs *j, wt_jobs_start_fn fn, void *ctx);

/* True when a counter or tag key is a lower-snake-case word of 1..63 characters. */
bool wt_jobs_key_ok(const char *s);

#endif
