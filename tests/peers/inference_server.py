#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An inference server's /metrics for tests: the exposition of vLLM, SGLang, TGI, Triton or
llama.cpp as the field notes give it (names, types, labels, suffixes, bucket bounds, value
formats), with counters that advance with a simulated request load, exactly, as functions of
time. So any window's truth is known: `--truth FROM TO` prints it.

  inference_server.py --engine ENGINE --port-file F [--model NAME]... [--control F] [--log F]
                      [--t0 UNIX] [--req-rate R] [--seed N] [--prefix-cache]
  inference_server.py --engine ENGINE --truth FROM TO [the same load options]

ENGINE: vllm (V1: model_name and engine labels, _created families), vllm0 (V0 names, no engine
label, no _created), sglang (multiprocess: no _created, _sum first, tokens counted at finish,
realtime_tokens_total per mode), tgi (bare counter names, histograms for tokens, blank lines,
no model label), triton (TensorRT-LLM backend: nv_ counters in microseconds, token histograms,
model and version labels), llamacpp (no labels, six significant digits).

The load: request k of a model arrives at T0 + k / R (R = --req-rate, per model; default 2).
Its prompt (p), cached prompt share, generated tokens (g), time to first token and inter-token
latency are drawn from a fixed sequence (--seed); its first token comes at arrival + ttft, then
one token every itl, and it finishes with its last token. vLLM and llama.cpp count prompt tokens
when the prefill ends (the first token) and generated tokens as they come; SGLang, TGI and
Triton count both when the request finishes, as the servers do. Histograms observe e2e latency
and ttft per request and itl per token after the first.

A request `Accept: application/openmetrics-text` gets OpenMetrics 1.0 (vLLM and SGLang, as
prometheus_client does): counters typed without _total, an exemplar on a bucket, `# EOF`.
`Accept-Encoding: gzip` gets a gzipped body (prometheus_client does that too).

--control names a file read at every request; its first line picks the behaviour:
  ok               serve the exposition (also when the file is absent or empty)
  hang             read the request, never answer
  slow SECONDS     wait that long, then serve
  html             200 with an HTML page instead of metrics
  huge BYTES       200 with that many bytes of valid-looking comment lines first
  malformed        a line in the middle that is not the format
  truncated        the body cut in the middle of a sample line
  500              HTTP 500
  reset UNIX       the server restarted at UNIX: every counter counts from there (and _created
                   says so); the load's clock restarts too
  buckets          the latency histograms use other bucket bounds (an upgrade)
  model2 NAME      a second model NAME is served beside the first (vllm, sglang, triton)
--log gets one line per request: "PATH STATUS".
--pid-file gets this process's pid (to put it in the fake NVML's process list).
--child-pid-file gets the pid of a child started before the port is opened (it holds no socket,
as vLLM's EngineCore does not): the process a fake NVML lists on a GPU. It exits with its parent.
"""
import argparse
import gzip
import json
import math
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None

# bucket bounds from the field notes (vLLM loggers.py, SGLang collector.py, TGI server.rs)
VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
             7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
VLLM_ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
            10.0, 20.0, 40.0, 80.0]
VLLM_E2E = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
            120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
SGL_TTFT = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
SGL_E2E = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600,
           1200, 1800, 2400]
SGL_ITL = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
           0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000]
TGI_DURATION = [0.0001 * 1.5 ** k for k in range(1, 36)]
TRT_TOKENS = [10, 50, 100, 500, 1000]
OTHER_BUCKETS = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 120.0]


def draw(seed, k, i):
    """A number in [0, 1) from a fixed sequence: request k's i-th draw."""
    x = (seed * 0x9E3779B97F4A7C15 + k * 0xBF58476D1CE4E5B9 + i * 0x94D049BB133111EB) & (2**64 - 1)
    x ^= x >> 31
    x = (x * 0xD6E8FEB86659FD93) & (2**64 - 1)
    x ^= x >> 32
    return (x & (2**53 - 1)) / 2**53


class Request:
    __slots__ = ("arrive", "p", "cached", "g", "ttft", "itl", "first", "finish", "reason")

    def __init__(self, seed, k, t0, rate):
        self.arrive = t0 + k / rate
        self.p = 50 + int(draw(seed, k, 0) * 1950)
        self.cached = int(self.p * 0.5 * draw(seed, k, 1))
        self.g = 20 + int(draw(seed, k, 2) * 380)
        self.ttft = 0.05 + 0.6 * draw(seed, k, 3) ** 2
        self.itl = 0.012 + 0.03 * draw(seed, k, 4)
        self.first = self.arrive + self.ttft
        self.finish = self.first + (self.g - 1) * self.itl
        self.reason = "length" if k % 7 == 3 else "stop"

    def generated(self, t):
        """Tokens generated by time t (the first at `first`, then one every itl)."""
        if t < self.first:
            return 0
        return min(self.g, 1 + int((t - self.first) / self.itl + 1e-9))


class Hist:
    def __init__(self, bounds):
        self.bounds = list(bounds)
        self.counts = [0] * len(bounds)
        self.n = 0
        self.sum = 0.0

    def observe(self, v, times=1):
        for i, b in enumerate(self.bounds):
            if v <= b:
                self.counts[i] += times
                break
        self.n += times
        self.sum += v * times

    def cumulative(self):
        c, out = 0, []
        for n in self.counts:
            c += n
            out.append(c)
        return out


def state(model, t, origin, rate, seed, at_finish, buckets):
    """Every counter and histogram of one model at time t, the server started at origin."""
    s = {"prompt": 0, "cached": 0, "gen": 0, "requests": 0, "reasons": {"stop": 0, "length": 0},
         "running": 0, "waiting": 0}
    alt = buckets == "other"
    s["e2e"] = Hist(OTHER_BUCKETS if alt else ENGINE["e2e"])
    s["ttft"] = Hist(OTHER_BUCKETS if alt else ENGINE["ttft"])
    s["itl"] = Hist(ENGINE["itl"])
    s["ptok"] = Hist(ENGINE["tokens"])
    s["gtok"] = Hist(ENGINE["tokens"])
    k = 0
    mseed = seed + sum(map(ord, model))
    while True:
        r = Request(mseed, k, origin, rate)
        if r.arrive > t:
            break
        k += 1
        done = r.finish <= t
        gen = r.generated(t)
        if t < r.first:
            s["waiting"] += 1
        elif not done:
            s["running"] += 1
        if at_finish:
            if done:
                s["prompt"] += r.p
                s["cached"] += r.cached
                s["gen"] += r.g
        else:
            if gen > 0:
                s["prompt"] += r.p
                s["cached"] += r.cached
            s["gen"] += gen
        if gen > 0:
            s["ttft"].observe(r.ttft)
            if gen > 1:
                s["itl"].observe(r.itl, gen - 1)
        if done:
            s["requests"] += 1
            s["reasons"][r.reason] += 1
            s["e2e"].observe(r.finish - r.arrive)
            s["ptok"].observe(r.p)
            s["gtok"].observe(r.g)
    return s


def fmt_py(v):
    """prometheus_client's float text: repr of a float, +Inf, NaN."""
    v = float(v)
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    return repr(v)


def fmt_le(b):
    return fmt_py(b)


def lbl(d):
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in sorted(d.items())) + "}" if d else ""


def esc(v):
    return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Out:
    def __init__(self, om):
        self.lines = []
        self.om = om

    def family(self, name, typ, helptext, samples, created=None):
        """samples: [(suffix, labels, value)]; name is the family name as 0.0.4 types it."""
        fam = name
        if self.om and typ == "counter" and name.endswith("_total"):
            fam = name[: -len("_total")]
        self.lines.append(f"# HELP {fam} {helptext}")
        self.lines.append(f"# TYPE {fam} {typ}")
        for suffix, labels, value in samples:
            line = f"{name if typ != 'counter' or not self.om else fam + '_total'}{suffix}{lbl(labels)} {value}"
            if self.om and suffix == "_bucket" and labels.get("le") == "+Inf":
                line += ' # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 1.0'
            self.lines.append(line)
        if created is not None and self.om:
            for labels in created:
                self.lines.append(f"{fam}_created{lbl(labels)} {fmt_py(ORIGIN[0])}")

    def created_gauge(self, name, helptext, label_sets):
        """prometheus_client's 0.0.4 output: a _created gauge family after each counter."""
        if self.om:
            return
        base = name[: -len("_total")] if name.endswith("_total") else name
        self.lines.append(f"# HELP {base}_created {helptext}")
        self.lines.append(f"# TYPE {base}_created gauge")
        for labels in label_sets:
            self.lines.append(f"{base}_created{lbl(labels)} {fmt_py(ORIGIN[0])}")


def hist_samples(h, labels, order="buckets_count_sum", fmt=fmt_py):
    out = []
    cum = h.cumulative()
    bucket_lines = [("_bucket", {**labels, "le": fmt_le(b)}, fmt(c)) for b, c in zip(h.bounds, cum)]
    bucket_lines.append(("_bucket", {**labels, "le": "+Inf"}, fmt(h.n)))
    if order == "sum_buckets_count":
        out.append(("_sum", labels, fmt(h.sum)))
        out += bucket_lines
        out.append(("_count", labels, fmt(h.n)))
    else:
        out += bucket_lines
        out.append(("_count", labels, fmt(h.n)))
        out.append(("_sum", labels, fmt(h.sum)))
    return out


def body_vllm(states, om, v0=False):
    o = Out(om)
    L = lambda m: {"model_name": m} if v0 else {"engine": "0", "model_name": m}  # noqa: E731
    models = list(states)
    gauges = [("vllm:num_requests_running", "Number of requests in model execution batches.", "running"),
              ("vllm:num_requests_waiting", "Number of requests waiting to be processed.", "waiting")]
    for name, h, key in gauges:
        o.family(name, "gauge", h, [("", L(m), fmt_py(states[m][key])) for m in models])
    if v0:
        o.family("vllm:num_requests_swapped", "gauge", "Number of requests swapped to CPU.",
                 [("", L(m), "0.0") for m in models])
        o.family("vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.",
                 [("", L(m), "0.05") for m in models])
    else:
        o.family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
                 [("", L(m), "0.0712") for m in models])
    for name, h, key in [("vllm:prompt_tokens_total", "Number of prefill tokens processed.", "prompt"),
                         ("vllm:generation_tokens_total", "Number of generation tokens processed.", "gen")]:
        o.family(name, "counter", h, [("", L(m), fmt_py(states[m][key])) for m in models],
                 created=None if v0 else [L(m) for m in models])
        if not v0:
            o.created_gauge(name, h, [L(m) for m in models])
    if ARGS.prefix_cache and not v0:
        # newer vLLM (PR #33290): the cached part, and the prompt tokens by where they came from
        o.family("vllm:prompt_tokens_cached_total", "counter", "Number of cached prompt tokens.",
                 [("", L(m), fmt_py(states[m]["cached"])) for m in models])
        src = [(m, "local_compute", states[m]["prompt"] - states[m]["cached"]) for m in models]
        src += [(m, "local_cache_hit", states[m]["cached"]) for m in models]
        src += [(m, "external_kv_transfer", 0) for m in models]
        o.family("vllm:prompt_tokens_by_source_total", "counter",
                 "Number of prompt tokens by source.",
                 [("", {**L(m), "source": k}, fmt_py(v)) for m, k, v in src])
    reasons = [{**L(m), "finished_reason": r} for m in models for r in ("stop", "length", "abort")]
    o.family("vllm:request_success_total", "counter", "Count of successfully processed requests.",
             [("", r, fmt_py(states[r["model_name"]]["reasons"].get(r["finished_reason"], 0)))
              for r in reasons], created=None if v0 else reasons)
    hists = [("vllm:request_prompt_tokens", "Number of prefill tokens processed.", "ptok"),
             ("vllm:request_generation_tokens", "Number of generation tokens processed.", "gtok"),
             ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", "ttft"),
             ("vllm:inter_token_latency_seconds" if not v0 else "vllm:time_per_output_token_seconds",
              "Histogram of inter-token latency in seconds.", "itl"),
             ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", "e2e")]
    for name, h, key in hists:
        samples = []
        for m in models:
            samples += hist_samples(states[m][key], L(m))
        o.family(name, "histogram", h, samples, created=None if v0 else [L(m) for m in models])
        if not v0:
            o.created_gauge(name, h, [L(m) for m in models])
    return o


def body_sglang(states, om):
    o = Out(om)
    L = lambda m: {"engine_type": "unified", "model_name": m}  # noqa: E731
    S = lambda m: {**L(m), "moe_ep_rank": "0", "pp_rank": "0", "tp_rank": "0"}  # noqa: E731
    models = list(states)
    for name, h, key in [("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "prompt"),
                         ("sglang:generation_tokens_total", "Number of generation tokens processed.", "gen"),
                         ("sglang:cached_tokens_total", "Number of cached prompt tokens.", "cached"),
                         ("sglang:num_requests_total", "Number of requests processed.", "requests")]:
        o.family(name, "counter", h, [("", L(m), fmt_py(states[m][key])) for m in models])
    o.family("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.",
             [("", L(m), "0.0") for m in models])
    for name, h, key in [("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", "ttft"),
                         ("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", "itl"),
                         ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", "e2e")]:
        samples = []
        for m in models:
            samples += hist_samples(states[m][key], L(m), order="sum_buckets_count")
        o.family(name, "histogram", h, samples)
    o.family("sglang:num_running_reqs", "gauge", "The number of running requests.",
             [("", S(m), fmt_py(states[m]["running"])) for m in models])
    o.family("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.",
             [("", S(m), fmt_py(states[m]["waiting"])) for m in models])
    return o


def body_tgi(states, om):
    o = Out(False)
    st = next(iter(states.values()))
    fam = []
    fam.append(("tgi_request_count", "counter", [("", {}, str(st["requests"] + st["running"] + st["waiting"]))]))
    fam.append(("tgi_request_success", "counter", [("", {}, str(st["requests"]))]))
    fam.append(("tgi_request_input_length", "histogram", hist_samples(st["ptok"], {}, fmt=lambda v: repr(float(v)) if isinstance(v, float) else str(v))))
    fam.append(("tgi_request_generated_tokens", "histogram", hist_samples(st["gtok"], {}, fmt=lambda v: repr(float(v)) if isinstance(v, float) else str(v))))
    fam.append(("tgi_request_duration", "histogram", hist_samples(st["e2e"], {}, fmt=lambda v: repr(float(v)) if isinstance(v, float) else str(v))))
    fam.append(("tgi_queue_size", "gauge", [("", {}, str(st["waiting"]))]))
    fam.append(("tgi_batch_current_size", "gauge", [("", {}, str(st["running"]))]))
    fam.append(("tgi_request_skipped_tokens", "summary",
                [("", {"quantile": "0"}, "0"), ("", {"quantile": "0.5"}, "0"), ("", {"quantile": "1"}, "0"),
                 ("_sum", {}, "0"), ("_count", {}, str(st["requests"]))]))
    # metrics-exporter-prometheus: families in hash order, a blank line after each
    fam.sort(key=lambda f: hash(f[0]) % 97)
    for name, typ, samples in fam:
        o.lines.append(f"# TYPE {name} {typ}")
        for suffix, labels, value in samples:
            o.lines.append(f"{name}{suffix}{lbl(labels)} {value}")
        o.lines.append("")
    return o


def body_triton(states, om):
    o = Out(False)
    L = lambda m: {"model": m, "version": "1"}  # noqa: E731
    models = list(states)
    fixed = lambda v: f"{float(v):.6f}"  # noqa: E731
    o.family("nv_inference_request_success", "counter", "Number of successful inference requests, all batch sizes",
             [("", L(m), str(states[m]["requests"])) for m in models])
    o.family("nv_inference_request_failure", "counter", "Number of failed inference requests, all batch sizes",
             [("", {**L(m), "reason": "OTHER"}, "0") for m in models])
    o.family("nv_inference_count", "counter", "Number of inferences performed (does not include cached requests)",
             [("", L(m), str(states[m]["requests"])) for m in models])
    o.family("nv_inference_request_duration_us", "counter", "Cumulative inference request duration in microseconds (includes cached requests)",
             [("", L(m), str(int(states[m]["e2e"].sum * 1e6))) for m in models])
    o.family("nv_inference_pending_request_count", "gauge", "Instantaneous number of pending requests awaiting execution per-model.",
             [("", L(m), str(states[m]["waiting"])) for m in models])
    for name, key, kind in [("nv_llm_input_token_len", "ptok", "total_input_tokens"),
                            ("nv_llm_output_token_len", "gtok", "total_output_tokens")]:
        samples = []
        for m in models:
            samples += hist_samples(states[m][key], {**L(m), "response_metric_type": kind},
                                    fmt=lambda v: str(int(v)) if float(v).is_integer() else fixed(v))
        o.family(name, "histogram", "TRT LLM response metrics", samples)
    o.family("nv_gpu_power_usage", "gauge", "GPU power usage in watts",
             [("", {"gpu_uuid": "GPU-fake-0000-0"}, fixed(300))])
    return o


def body_llamacpp(states, om):
    o = Out(False)
    st = next(iter(states.values()))
    g6 = lambda v: f"{float(v):g}"  # noqa: E731  (C++ stringstream, precision 6)
    for name, typ, h, v in [("llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.", st["prompt"]),
                            ("llamacpp:prompt_seconds_total", "counter", "Prompt process time", st["ttft"].sum),
                            ("llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.", st["gen"]),
                            ("llamacpp:tokens_predicted_seconds_total", "counter", "Predict process time", st["itl"].sum),
                            ("llamacpp:n_decode_total", "counter", "Total number of llama_decode() calls", st["gen"]),
                            ("llamacpp:requests_processing", "gauge", "Number of requests processing.", st["running"]),
                            ("llamacpp:requests_deferred", "gauge", "Number of requests deferred.", st["waiting"])]:
        o.lines.append(f"# HELP {name} {h}")
        o.lines.append(f"# TYPE {name} {typ}")
        o.lines.append(f"{name} {g6(v)}")
    return o


ENGINES = {
    "vllm": dict(body=body_vllm, at_finish=False, ttft=VLLM_TTFT, itl=VLLM_ITL, e2e=VLLM_E2E,
                 tokens=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]),
    "vllm0": dict(body=lambda s, om: body_vllm(s, False, v0=True), at_finish=False, ttft=VLLM_TTFT,
                  itl=VLLM_ITL, e2e=VLLM_E2E, tokens=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]),
    "sglang": dict(body=body_sglang, at_finish=True, ttft=SGL_TTFT, itl=SGL_ITL, e2e=SGL_E2E,
                   tokens=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]),
    "tgi": dict(body=body_tgi, at_finish=True, ttft=TGI_DURATION, itl=TGI_DURATION, e2e=TGI_DURATION,
                tokens=[20.0 * k for k in range(1, 101)]),
    "triton": dict(body=body_triton, at_finish=True, ttft=VLLM_TTFT, itl=VLLM_ITL, e2e=VLLM_E2E,
                   tokens=TRT_TOKENS),
    "llamacpp": dict(body=body_llamacpp, at_finish=False, ttft=VLLM_TTFT, itl=VLLM_ITL, e2e=VLLM_E2E,
                     tokens=[1, 10, 100, 1000]),
}
ENGINE = None
ORIGIN = [0.0]  # the server's start (a reset moves it)


def control():
    try:
        with open(ARGS.control) as f:
            return f.readline().split()
    except (OSError, TypeError):
        return []


def models_now(ctl):
    m = list(ARGS.model)
    if ctl[:1] == ["model2"] and len(ctl) > 1:
        m.append(ctl[1])
    return m


def render(t, ctl, om):
    origin = ARGS.t0
    if ctl[:1] == ["reset"] and len(ctl) > 1:
        origin = float(ctl[1])
    ORIGIN[0] = origin
    buckets = "other" if ctl[:1] == ["buckets"] else "default"
    states = {m: state(m, t, origin, ARGS.req_rate, ARGS.seed, ENGINE["at_finish"], buckets)
              for m in models_now(ctl)}
    o = ENGINE["body"](states, om and ARGS.engine in ("vllm", "sglang"))
    lines = o.lines
    if om and ARGS.engine in ("vllm", "sglang"):
        lines.append("# EOF")
    return "\n".join(lines) + "\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def log(self, status):
        if ARGS.log:
            with open(ARGS.log, "a") as f:
                f.write(f"{self.path} {status}\n")

    def send(self, status, body, ctype):
        data = body.encode()
        gz = "gzip" in self.headers.get("Accept-Encoding", "")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if gz:
            data = gzip.compress(data)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.log(status)

    def do_GET(self):
        ctl = control()
        if ctl[:1] == ["hang"]:
            self.log("hang")
            time.sleep(3600)
            return
        if ctl[:1] == ["slow"] and len(ctl) > 1:
            time.sleep(float(ctl[1]))
        if ctl[:1] == ["500"]:
            return self.send(500, "internal error\n", "text/plain")
        if ctl[:1] == ["html"]:
            return self.send(200, "<!DOCTYPE html><html><body><h1>Welcome</h1></body></html>\n", "text/html")
        if self.path.split("?")[0] != "/metrics":
            return self.send(404, "not found\n", "text/plain")
        om = "application/openmetrics-text" in self.headers.get("Accept", "")
        body = render(time.time(), ctl, om)
        if ctl[:1] == ["huge"]:
            n = int(ctl[1]) if len(ctl) > 1 else 10 << 20
            pad = "# HELP padding " + "x" * 100 + "\n"
            body = pad * (n // len(pad) + 1) + body
        if ctl[:1] == ["malformed"]:
            lines = body.split("\n")
            lines.insert(len(lines) // 2, 'vllm:broken{model_name="x" 12 13 14')
            body = "\n".join(lines)
        if ctl[:1] == ["truncated"]:
            body = body[: len(body) // 2 + 7]
        ctype = ("application/openmetrics-text; version=1.0.0; charset=utf-8" if om and ARGS.engine in ("vllm", "sglang")
                 else "text/plain; version=0.0.4; charset=utf-8")
        self.send(200, body, ctype)


def truth(a, b):
    """The counters' increase over [a, b] per model, and each of the histograms' increase."""
    out = {}
    for m in ARGS.model:
        s0 = state(m, a, ARGS.t0, ARGS.req_rate, ARGS.seed, ENGINE["at_finish"], "default")
        s1 = state(m, b, ARGS.t0, ARGS.req_rate, ARGS.seed, ENGINE["at_finish"], "default")
        d = {k: s1[k] - s0[k] for k in ("prompt", "cached", "gen", "requests")}
        for h in ("e2e", "ttft", "itl"):
            d[h] = {"le": [fmt_le(x) for x in s1[h].bounds] + ["+Inf"],
                    "cumulative": [x - y for x, y in zip(s1[h].cumulative() + [s1[h].n], s0[h].cumulative() + [s0[h].n])],
                    "sum": s1[h].sum - s0[h].sum}
        out[m] = d
    json.dump(out, sys.stdout)
    print()


def main():
    global ARGS, ENGINE
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True, choices=sorted(ENGINES))
    ap.add_argument("--port-file")
    ap.add_argument("--pid-file")
    ap.add_argument("--child-pid-file")
    ap.add_argument("--model", action="append")
    ap.add_argument("--control")
    ap.add_argument("--log")
    ap.add_argument("--t0", type=float)
    ap.add_argument("--req-rate", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth", nargs=2, type=float)
    ap.add_argument("--prefix-cache", action="store_true",
                    help="vllm: also vllm:prompt_tokens_cached and prompt_tokens_by_source")
    ARGS = ap.parse_args()
    ENGINE = ENGINES[ARGS.engine]
    if not ARGS.model:
        ARGS.model = ["meta-llama/Llama-3.1-8B-Instruct"]
    if ARGS.t0 is None:
        ARGS.t0 = time.time()
    ORIGIN[0] = ARGS.t0
    if ARGS.truth:
        return truth(*ARGS.truth)
    if ARGS.child_pid_file:
        parent = os.getpid()
        child = os.fork()
        if child == 0:
            while os.getppid() == parent:
                time.sleep(0.2)
            os._exit(0)
        with open(ARGS.child_pid_file + ".tmp", "w") as f:
            f.write(f"{child}\n")
        os.rename(ARGS.child_pid_file + ".tmp", ARGS.child_pid_file)
    class Server(ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # a client that gave up (a timeout, a refused 10 MB body) is no error here

    srv = Server(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    if ARGS.pid_file:
        with open(ARGS.pid_file + ".tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.rename(ARGS.pid_file + ".tmp", ARGS.pid_file)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(f"{srv.server_address[1]}\n")
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
