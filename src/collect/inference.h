/* SPDX-License-Identifier: MIT */
/*
 * Inference servers read from their own /metrics (inference.targets): vLLM (V1, and the V0 names
 * up to 0.10), SGLang, TGI, Triton (TensorRT-LLM and vLLM backends) and llama.cpp, told apart
 * by their metric names. Each target is scraped on its own thread (the loop's multi-target
 * sources) with a deadline, and only the series the serving KPIs need are kept, summed over the
 * labels that are not the model (engine, finished_reason, pid, ranks):
 *
 *   wattage_inference_up{target}                        0/1: the last scrape parsed
 *   wattage_inference_info{target,engine,model[,gpus][,tags...]}  1
 *   wattage_inference_tokens_total{target,model,kind}   kind: prompt, generated, prompt_cached,
 *                                                       prompt_computed (the server's counters,
 *                                                       as scraped: a restart resets them)
 *   wattage_inference_requests_total{target,model}      finished requests
 *   wattage_inference_latency_seconds_bucket{target,model,kind,le}  kind: e2e, ttft, itl
 *   wattage_inference_latency_seconds_sum / _count{target,model,kind}
 *                                                       (on /metrics one histogram family,
 *                                                       wattage_inference_latency_seconds)
 *   wattage_inference_requests_running / _waiting{target,model}
 *   wattage_inference_process_info{target,pid}          1 per process of the serving tree, for
 *                                                       a target without configured gpus
 *   wattage_inference_energy_joules_total{target,model} the energy of the target's GPUs since
 *                                                       the daemon started (the GPU ledgers'
 *                                                       energy, NVML's and AMD's), a GPU
 *                                                       shared with other targets by their
 *                                                       generated tokens (inference_energy.h),
 *                                                       then between its models the same way
 *
 * A target without configured gpus gets as gpus (on the info series) the GPUs on which NVML or
 * ROCm SMI lists a process of its serving tree ("1", or "amd:1" where NVIDIA has a GPU 1 too),
 * said in the log when they change. A configured gpus entry is an index or a vendor's index.
 *
 * A scrape that does not parse whole publishes nothing of it (the target is down for that tick).
 */
#ifndef WT_INFERENCE_H
#define WT_INFERENCE_H

#include "core/err.h"
#include "core/reading.h"
#include "core/yamltree.h"

/* Checks the inference.targets section (wattage check-config and the daemon's start). */
int wt_inference_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

/*
 * Maps one scraped body (content type ctype, may be NULL) of target `target` to readings stamped
 * t_ns, as a poll does: engine is "auto" or an engine's name, model the model label for servers
 * that give none. Returns 0, or -EINVAL with err naming the line. For tests and fuzzing.
 */
int wt_inference_map(const char *target, const char *engine, const char *model, const char *body,
                     size_t len, const char *ctype, int64_t t_ns, struct wt_batch *out,
                     struct wt_err *err);

#endif
