/* SPDX-License-Identifier: MIT */
/*
 * The jobs API over HTTP (all JSON; errors are {"error": "...", "field": "..."}). This file
 * parses the request (method, path, ?limit) and answers; the jobs module (audit/jobs.h) does
 * the work and says what to answer.
 *   POST /api/v1/jobs                {"name", "tags": {k: v}, "gpus": [0, "GPU-…"],
 *                                     "target": {"accuracy": 0.9}}        → 201 {"id", ...}
 *   POST /api/v1/jobs/{ref}/marks    {"kind", "index", "begin", <counter>: number >= 0, ...}
 *                                    tokens, samples, requests: the count of the phase the mark
 *                                    closes (since the previous mark of its kind); tokens_total,
 *                                    samples_total, requests_total: a running total since the
 *                                    job's start, stored with its difference from the kind's
 *                                    earlier counts as the phase's count (one form per counter;
 *                                    a total below the earlier ones is a 400). 201 with
 *                                    "warnings": [...] when a count has risen at every mark of
 *                                    its kind (3 at least) to twice its first: a running total
 *                                    sent as a count
 *   POST /api/v1/jobs/{ref}/end      {} or empty
 *   POST /api/v1/jobs/{ref}/gpus     {"gpus": [0, "GPU-…"]}: sets the GPUs of a running job
 *                                    started without any (409 once it has some); the job's
 *                                    figures then count those GPUs over its whole window
 *   GET  /api/v1/jobs[?limit=N]      the latest jobs with their energy
 *   GET  /api/v1/jobs/{ref}          the job with its phases and KPIs
 *   GET  /api/v1/gpus/processes      [{"gpu": "0", "uuid": "GPU-…", "pids": [1234]}, ...]: the
 *                                    processes NVML lists per GPU at the collector's latest
 *                                    read (wt_nvml_processes); 503 when there is no list
 * {ref} is a job id, or a name (the latest job of that name). Unknown job 404, ended job 409,
 * malformed JSON or bad field 400 (the field named), nothing stored on any error; an unknown
 * path below /api/v1/jobs 404, a method it does not take 405.
 */
#ifndef WT_API_JOBS_H
#define WT_API_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "audit/jobs.h"
#include "serve/http.h"

/*
 * Adds the routes above to h (before wt_http_start) and the jobs' series: through the hub
 * (wt_jobs_export_start) when j has one, else the /metrics family wattage_job_energy_joules_total
 * computed on scrape; with carbon set, also wattage_job_emissions_grams_total (left out with a
 * warning when the server has no room). j outlives h. Returns 0, -ENOSPC or another negative
 * errno.
 */
int wt_api_jobs_add(struct wt_http *h, struct wt_jobs *j) WT_MUST_USE;

/*
 * One request below /api/v1/jobs, without the server: method, path (query string excluded),
 * body (may be NULL), limit for the list (0: default), now_ns the time of the request. Fills
 * *status and *json (malloc'd, the reply body, also for errors). Returns 0 or -ENOMEM / -EIO
 * (a 500).
 */
int wt_api_jobs_handle(struct wt_jobs *j, const char *method, const char *path, const char *body,
                       size_t len, int limit, int64_t now_ns, unsigned *status,
                       char **json) WT_MUST_USE;

/* The reply of GET /api/v1/gpus/processes: *status and *json (malloc'd). 0 or -ENOMEM. */
int wt_api_processes_json(unsigned *status, char **json) WT_MUST_USE;

/*
 * The reply of GET /api/v1/attribution: the energy split over processes since the daemon
 * started, from the published ledgers (collect/attrib.h): {"gpus": [{"gpu", "vendor", "uuid",
 * "method", "energy_joules", "idle_joules", "updated_s", "processes": [...], "owners": [...]}],
 * "cpu": {the same without gpu/uuid} or null}. *status 200. 0 or -ENOMEM.
 */
int wt_api_attribution_json(unsigned *status, char **json) WT_MUST_USE;

/*
 * GET /api/v1/attribution?from=T&to=T (either given; the other defaults to now and to an hour
 * before to): the split over a window, from the stored per-process series of st (read here,
 * not the ledgers). Per device the window is taken between the splits at or before from and
 * to; a process first seen inside it starts from 0, and the energy a fold moves from a
 * finished process to its owner's series is counted once (the process's). Reply {"from", "to",
 * "gpus": [{"gpu", "uuid", "from", "to", "energy_joules" (the GPU's counter over the same
 * splits; null without one), "attributed_joules" (idle + every part), "idle_joules",
 * "processes": [{"pid", "gpu_instance"?, "owner", ids…, "energy_joules"}], "owners": [{"owner",
 * ids…, "energy_joules", "processes": N}]}], "cpu": {the same without gpu, uuid, energy} | null}.
 * from, to: RFC 3339, unix seconds or relative (-1h); a bad one, an empty window or one over
 * 31 days is a 400 naming it. 0 with *status and *json, or -ENOMEM / -EIO.
 */
struct wt_store;
int wt_api_attribution_window(struct wt_store *st, const char *from, const char *to, int64_t now_ns,
                              unsigned *status, char **json) WT_MUST_USE;
/* The store the route reads windows from (the daemon's, opened at the first such request; a
 * connection of its own), and its close (after the server). */
void wt_api_attribution_store(const char *db_path);
void wt_api_attribution_close(void);

#endif
