#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""wattage's benchmarks, one section per command; bench/run.sh calls them in turn.

    bench.py SECTION BUILD OUT

SECTION is agent, idle, callgrind, serve, energy, nvml, external NAME CMD... or table. Every section
writes its rows, one JSON object a line, to OUT/rows-SECTION.jsonl (and its details to
OUT/SECTION.txt); `table` prints every row as one table and writes OUT/results.json. A row is

    {"section": S, "what": W, "unit": U, "peer_name": P,
     "wattage": {"median": m, "min": a, "max": b, "n": k}, "peer": {...} or null,
     "ratio": wattage median / peer median, "note": optional}

No figure is judged: nothing here fails on a number. See bench/README.md for each procedure.
"""
import http.client
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PY = "/usr/bin/python3"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# What Prometheus 2.x sends on a scrape.
PROM_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
              "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
    "User-Agent": "Prometheus/2.42.0",
}
GPUS = 8


# ------------------------------------------------------------------------------------------
# figures and rows

def stats(values):
    v = [float(x) for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def row(section, what, unit, wattage, peer=None, peer_name=None, note=None):
    w = stats(wattage) if isinstance(wattage, list) else wattage
    p = stats(peer) if isinstance(peer, list) else peer
    r = {"section": section, "what": what, "unit": unit, "peer_name": peer_name,
         "wattage": w, "peer": p, "ratio": None}
    if w and p and p["median"]:
        r["ratio"] = w["median"] / p["median"]
    if note:
        r["note"] = note
    return r


class Out:
    def __init__(self, out, section):
        self.rows_path = os.path.join(out, f"rows-{section}.jsonl")
        self.details_path = os.path.join(out, f"{section}.txt")
        open(self.rows_path, "w").close()
        open(self.details_path, "w").close()

    def add(self, r):
        with open(self.rows_path, "a") as f:
            f.write(json.dumps(r) + "\n")

    def detail(self, text):
        with open(self.details_path, "a") as f:
            f.write(text.rstrip("\n") + "\n")


# ------------------------------------------------------------------------------------------
# processes

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_ns(pid):
    """CPU time of every live thread of pid, in ns (schedstat: exact, unlike clock ticks)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            pass
    return total


def thread_cpu_ns(pid):
    """{thread index: (name, ns)}, threads in creation order (for the per-thread split)."""
    out = {}
    try:
        tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
    except FileNotFoundError:
        return out
    for i, tid in enumerate(tids):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[i] = (name, int(f.read().split()[0]))
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            pass
    return out


def status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return None


def fake_env(build, **extra):
    env = dict(os.environ)
    env["WATTAGE_NVML_LIBRARY"] = os.path.join(ROOT, build, "tests/fakes/libnvidia-ml.so.1")
    env["FAKE_NVML_GPUS"] = str(GPUS)
    for k in ("WATTAGE_SYSFS_ROOT", "WATTAGE_PROCFS_ROOT"):
        env.pop(k, None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def http_ok(port, path="/metrics"):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status == 200
    except OSError:
        return False


def wait_http(port, proc, seconds=20, path="/metrics"):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"process {proc.args[0]} exited with {proc.returncode}")
        if http_ok(port, path):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing answered on port {port}")


class Daemon:
    """A process started by the benchmark, stopped with SIGTERM, its stderr in a file."""

    def __init__(self, args, env=None, log=None, path="/metrics", port=None):
        self.log = log or tempfile.mktemp(prefix="wt-bench-", suffix=".log")
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen(args, env=env, stdout=self.logf, stderr=subprocess.STDOUT)
        self.port = port
        if port:
            wait_http(port, self.proc, path=path)

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        with open(self.log) as f:
            return f.read()


def start_wattage(build, tmp, interval, env=None, extra=(), binary=None):
    port = free_port()
    db = tempfile.mktemp(dir=tmp, suffix=".db")
    args = [binary or os.path.join(build, "wattage"), "run", "--interval", str(interval),
            "--listen", f"127.0.0.1:{port}", "--db", db, *extra]
    return Daemon(args, env=env or fake_env(build), log=db + ".log", port=port)


def start_poller(build, tmp, interval, seed=False):
    port = free_port()
    args = [PY, os.path.join(HERE, "baseline_poller.py"), "--library",
            os.path.join(ROOT, build, "tests/fakes/libnvidia-ml.so.1"), "--port", str(port),
            "--interval", str(interval)] + (["--seed"] if seed else [])
    return Daemon(args, env=fake_env(build), log=os.path.join(tmp, f"poller-{port}.log"),
                  port=port)


def start_node_exporter(tmp):
    port = free_port()
    # --web.max-requests=0: its default (40 at once) answers the rest of 64 connections with
    # 503, which would measure shedding rather than serving.
    args = [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--web.max-requests=0"]
    return Daemon(args, log=os.path.join(tmp, "node_exporter.log"), port=port)


# ------------------------------------------------------------------------------------------
# agent cost per tick

def agent(build, out, o):
    """Per-tick CPU and peak RSS of wattage and of the tutorial poller (the fuller one, as
    "peer", and the seed tutorial's name/power/temperature one, as "seed"), side by side."""
    runs = int(os.environ.get("BENCH_AGENT_RUNS", "3"))
    plans = [(1.0, 3.0, 20.0), (0.1, 2.0, 10.0)]  # interval, warm-up, measured seconds
    with tempfile.TemporaryDirectory(prefix="wt-bench-agent-") as tmp:
        for interval, warm, measure in plans:
            procs = {"wattage": [], "peer": [], "seed": []}
            try:
                for _ in range(runs):
                    procs["wattage"].append(start_wattage(build, tmp, interval))
                    procs["peer"].append(start_poller(build, tmp, interval))
                    procs["seed"].append(start_poller(build, tmp, interval, seed=True))
                time.sleep(warm)
                t0 = time.monotonic()
                c0 = {k: [cpu_ns(d.pid) for d in v] for k, v in procs.items()}
                th0 = thread_cpu_ns(procs["wattage"][0].pid)
                time.sleep(measure)
                c1 = {k: [cpu_ns(d.pid) for d in v] for k, v in procs.items()}
                th1 = thread_cpu_ns(procs["wattage"][0].pid)
                elapsed = time.monotonic() - t0
                hwm = {k: [status_kb(d.pid, "VmHWM") for d in v] for k, v in procs.items()}
            finally:
                for v in procs.values():
                    for d in v:
                        d.stop()
            ticks = elapsed / interval
            per_tick = {k: [(b - a) / ticks / 1e3 for a, b in zip(c0[k], c1[k])]
                        for k in procs}
            label = f"{interval:g} s"
            o.add(row("Agent cost per tick", f"CPU per tick, {GPUS} GPUs at {label}", "µs",
                      per_tick["wattage"], per_tick["peer"], "Python poller"))
            o.add(row("Agent cost per tick", f"CPU per tick, {GPUS} GPUs at {label}", "µs",
                      per_tick["wattage"], per_tick["seed"], "seed-style poller"))
            o.add(row("Agent cost per tick", f"peak RSS (VmHWM) at {label}", "MiB",
                      [x / 1024 for x in hwm["wattage"]], [x / 1024 for x in hwm["peer"]],
                      "Python poller"))
            o.add(row("Agent cost per tick", f"peak RSS (VmHWM) at {label}", "MiB",
                      [x / 1024 for x in hwm["wattage"]], [x / 1024 for x in hwm["seed"]],
                      "seed-style poller"))
            o.detail(f"interval {label}: {runs} runs of each side at once, warm-up {warm:g} s, "
                     f"measured {elapsed:.1f} s = {ticks:.0f} ticks")
            split = ", ".join(f"#{i} {th1[i][0]} {(th1[i][1] - th0[i][1]) / ticks / 1e3:.0f}"
                              for i in th1 if i in th0)
            o.detail(f"  wattage run 1, µs per tick by thread (creation order): {split}")
            for k in procs:
                o.detail(f"  {k}: per-tick µs {[round(x, 1) for x in per_tick[k]]} "
                         f"VmHWM kB {hwm[k]}")


# ------------------------------------------------------------------------------------------
# idle wake-ups per thread and where the resident memory goes

def thread_switches(pid):
    """{tid: (name, voluntary + involuntary context switches)} of every live thread of pid."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                d = dict(line.split(":", 1) for line in f if ":" in line)
            out[tid] = (d["Name"].strip(), int(d["voluntary_ctxt_switches"]) +
                        int(d["nonvoluntary_ctxt_switches"]))
        except (FileNotFoundError, ProcessLookupError, KeyError, ValueError):
            pass
    return out


def rss_split(pid):
    """Resident kB of pid by kind, from /proc/PID/smaps: the heap, other anonymous memory
    (thread stacks, malloc arenas, library buffers), each mapped file (libraries: their code
    and relocated data), and the total."""
    parts, cur = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                cur = fields[5] if len(fields) > 5 else "[anon]"
                if cur.startswith("/"):
                    cur = os.path.basename(cur)
            elif fields[0] == "Rss:":
                parts[cur] = parts.get(cur, 0) + int(fields[1])
    parts["total"] = sum(parts.values())
    return parts


def idle(build, out, o):
    """Wake-ups per second of each thread of an idle daemon (no HTTP connection: nobody
    scrapes), 8 GPUs at 1 s, default collectors, alerts and store; its peak RSS and where the
    resident memory goes. Three daemons at once, 20 s each after a 5-s warm-up; medians."""
    runs = int(os.environ.get("BENCH_AGENT_RUNS", "3"))
    warm, measure = 5.0, 20.0
    with tempfile.TemporaryDirectory(prefix="wt-bench-idle-") as tmp:
        ds = []
        try:
            for _ in range(runs):
                ds.append(start_wattage(build, tmp, 1.0))
            time.sleep(warm)
            s0 = [thread_switches(d.pid) for d in ds]
            t0 = time.monotonic()
            time.sleep(measure)
            s1 = [thread_switches(d.pid) for d in ds]
            elapsed = time.monotonic() - t0
            hwm = [status_kb(d.pid, "VmHWM") for d in ds]
            split = [rss_split(d.pid) for d in ds]
        finally:
            for d in ds:
                d.stop()
    rates = {}  # thread name -> [per-second rate of each daemon, summed over same-named threads]
    for a, b in zip(s0, s1):
        per = {}
        for tid, (name, n) in b.items():
            if tid in a:
                per[name] = per.get(name, 0.0) + (n - a[tid][1]) / elapsed
        for name, r in per.items():
            rates.setdefault(name, []).append(r)
    for name in sorted(rates):
        o.add(row("Idle wake-ups", f"thread {name}, 8 GPUs at 1 s, nobody scraping", "/s",
                  rates[name], note="context switches per second, summed over the threads "
                  "of that name"))
    o.add(row("Idle wake-ups", "all threads", "/s",
              [sum(v[i] for v in rates.values() if i < len(v)) for i in range(runs)]))
    o.add(row("Idle wake-ups", "peak RSS (VmHWM), 8 GPUs at 1 s", "MiB",
              [x / 1024 for x in hwm if x]))
    keys = {}
    for sp in split:
        for k, v in sp.items():
            keys.setdefault(k, []).append(v)
    o.detail(f"{runs} daemons at once, warm-up {warm:g} s, measured {elapsed:.1f} s")
    o.detail("resident kB by mapping (median of the daemons), largest first:")
    for k, v in sorted(keys.items(), key=lambda kv: -statistics.median(kv[1])):
        o.detail(f"  {statistics.median(v):8.0f}  {k}")


# ------------------------------------------------------------------------------------------
# instructions per tick (callgrind)

ANNOT_RE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$")


def annotate(path, inclusive):
    r = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no",
                        f"--inclusive={'yes' if inclusive else 'no'}", path],
                       capture_output=True, text=True)
    funcs = {}
    for line in r.stdout.splitlines():
        m = ANNOT_RE.match(line)
        if not m or "PROGRAM TOTALS" in line or not m.group(2).endswith("]"):
            continue
        name = re.sub(r"\s*\[(.*/)?([^/\]]+)\]$", r" [\2]", m.group(2))
        name = re.sub(r"^\S*/([^/:]+:)", r"\1", name)  # one function under two file paths
        funcs[name] = max(funcs.get(name, 0), int(m.group(1).replace(",", "")))
    return funcs


def total_ir(path):
    with open(path) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    return None


def db_ticks(build, db):
    """Ticks a run stored: the most readings of one GPU power series, read through `wattage
    query`, so that it holds whatever the store's layout (rows or packed ticks)."""
    r = subprocess.run([os.path.join(build, "wattage"), "query", "--db", db, "--from", "0",
                        "--to", "now", "--json", "--unix", "wattage_gpu_power_watts"],
                       capture_output=True, text=True, check=True)
    return max(len(s["points"]) for s in json.loads(r.stdout)["series"])


def callgrind(build, out, o):
    """Instructions per tick: whole daemon under callgrind for 3 durations, differenced so
    start-up and exit cancel out; the top functions per tick from the longest minus shortest.
    Two rows: the steady tick, which leaves out the store's maintenance (wt_store_maintain,
    inclusive), and that maintenance amortised per tick. A maintenance pass runs every 10 s, and
    the first after a wall-clock minute closes rolls that minute up (tens of millions of
    instructions): whether a run holds one depends on where the minute falls, so it is kept out
    of the steady row and shown, noisy as it is, in its own."""
    durations = [5, 15, 25]
    interval = 1
    runs = []
    with tempfile.TemporaryDirectory(prefix="wt-bench-cg-") as tmp:
        for d in durations:
            port = free_port()
            db = os.path.join(tmp, f"w{d}.db")
            cg = os.path.join(out, f"callgrind.out.{d}s")
            args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}",
                    os.path.join(build, "wattage"), "run", "--interval", str(interval),
                    "--listen", f"127.0.0.1:{port}", "--db", db, "--duration", str(d)]
            subprocess.run(args, env=fake_env(build), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            maint = sum(v for k, v in annotate(cg, True).items()
                        if k.startswith("store_maint.c:wt_store_maintain "))
            runs.append((d, total_ir(cg), db_ticks(build, db), cg, maint))
        steady, maint = [], []
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                a, b = runs[i], runs[j]
                if b[2] > a[2]:
                    steady.append(((b[1] - b[4]) - (a[1] - a[4])) / (b[2] - a[2]))
                    maint.append((b[4] - a[4]) / (b[2] - a[2]))
        o.add(row("Agent cost per tick", f"instructions per steady tick (callgrind), {GPUS} GPUs",
                  "Ir", steady, note="whole daemon but the store's maintenance: collectors, "
                  "hub, store writer, alerts, HTTP idle"))
        o.add(row("Agent cost per tick", "store maintenance, amortised per tick (callgrind)",
                  "Ir", maint, note="passes every 10 s; a difference that holds a minute's "
                  "rollup is 3-7M, one without it ~0.1M"))
        for d, ir, tk, _, m in runs:
            o.detail(f"--duration {d}: {ir} Ir, {tk} ticks, {m} Ir in wt_store_maintain")
        short, long_ = runs[0], runs[-1]
        dt = long_[2] - short[2]
        for inclusive in (False, True):
            a, b = annotate(short[3], inclusive), annotate(long_[3], inclusive)
            diff = sorted(((b.get(k, 0) - a.get(k, 0)) / dt, k) for k in b)[::-1]
            kind = "inclusive" if inclusive else "self"
            o.detail(f"\ntop functions per tick ({kind} Ir, run of {long_[0]} s minus "
                     f"{short[0]} s, / {dt} ticks):")
            for ir, k in diff[:15]:
                o.detail(f"  {ir:12,.0f}  {k}")


# ------------------------------------------------------------------------------------------
# host metrics cost and exposition throughput

def scraper(port, rate, until, counter, sizes):
    """Scrapes /metrics at `rate` per second over a kept-alive connection, as Prometheus does."""
    conn = None
    period = 1.0 / rate
    nxt = time.monotonic()
    while True:
        now = time.monotonic()
        if now >= until:
            break
        if now < nxt:
            time.sleep(nxt - now)
        nxt += period
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/metrics", headers=PROM_HEADERS)
            r = conn.getresponse()
            body = r.read()
            sizes.append(len(body))
            counter[0] += 1
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            if conn:
                conn.close()
            conn = None
    if conn:
        conn.close()


def series_count(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode(errors="replace")
    c.close()
    lines = [ln for ln in body.splitlines() if ln and not ln.startswith("#")]
    return len(lines), len(body)


def host_cost(targets, o):
    rate, idle_s, windows, win_s = 10, 3.0, 5, 2.0
    # Idle CPU rate of each process (wattage keeps ticking; node_exporter should be ~0).
    t0 = time.monotonic()
    c0 = {k: cpu_ns(d.pid) for k, d in targets.items()}
    time.sleep(idle_s)
    c1 = {k: cpu_ns(d.pid) for k, d in targets.items()}
    idle = {k: (c1[k] - c0[k]) / (time.monotonic() - t0) for k in targets}
    until = time.monotonic() + windows * win_s + 0.5
    counters = {k: [0] for k in targets}
    sizes = {k: [] for k in targets}
    threads = [threading.Thread(target=scraper, args=(d.port, rate, until, counters[k], sizes[k]))
               for k, d in targets.items()]
    for t in threads:
        t.start()
    time.sleep(0.5)  # first scrapes: warm-up
    per = {k: [] for k in targets}
    for _ in range(windows):
        a = {k: (cpu_ns(d.pid), counters[k][0]) for k, d in targets.items()}
        ta = time.monotonic()
        time.sleep(win_s)
        b = {k: (cpu_ns(d.pid), counters[k][0]) for k, d in targets.items()}
        dt = time.monotonic() - ta
        for k in targets:
            n = b[k][1] - a[k][1]
            if n:
                per[k].append((b[k][0] - a[k][0] - idle[k] * dt) / n / 1e3)
    for t in threads:
        t.join()
    o.add(row("Host metrics cost", f"CPU per /metrics scrape at {rate}/s (gzip, keep-alive)",
              "µs", per["wattage"], per["peer"], "node_exporter"))
    for k in targets:
        o.detail(f"{k}: idle {idle[k] / 1e3:.1f} µs/s subtracted; per-scrape µs "
                 f"{[round(x, 1) for x in per[k]]}; {counters[k][0]} scrapes, "
                 f"gzip body {statistics.median(sizes[k]) if sizes[k] else 0:.0f} B")


WRK_N = re.compile(r"(\d+) requests in ([\d.]+)(us|ms|s|m),")
WRK_BAD = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
WRK_P99 = re.compile(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", re.M)


def wrk(port, seconds, conns=64):
    r = subprocess.run(["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--latency",
                        f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True)
    n = WRK_N.search(r.stdout)
    bad = WRK_BAD.search(r.stdout)
    p99 = WRK_P99.search(r.stdout)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}
    # Only answers with a 2xx status count: a server that sheds load with 503s is not serving.
    rps = None
    if n:
        ok = int(n.group(1)) - (int(bad.group(1)) if bad else 0)
        rps = ok / (float(n.group(2)) * scale[n.group(3)] / 1e3)
    return rps, float(p99.group(1)) * scale[p99.group(2)] if p99 else None, r.stdout


def throughput(targets, o):
    runs, seconds = 3, 3
    rps = {k: [] for k in targets}
    p99 = {k: [] for k in targets}
    for k, d in targets.items():
        wrk(d.port, 1)  # warm-up
        for _ in range(runs):
            a, b, text = wrk(d.port, seconds)
            rps[k].append(a)
            p99[k].append(b)
        o.detail(f"wrk, {k}, last run:\n{text}")
    o.add(row("Exposition throughput", "/metrics requests/s, 64 connections (wrk)", "req/s",
              rps["wattage"], rps["peer"], "node_exporter"))
    o.add(row("Exposition throughput", "/metrics p99 latency, 64 connections (wrk)", "ms",
              p99["wattage"], p99["peer"], "node_exporter"))


def serve(build, out, o):
    with tempfile.TemporaryDirectory(prefix="wt-bench-serve-") as tmp:
        targets = {}
        try:
            targets["wattage"] = start_wattage(build, tmp, 1.0)
            targets["peer"] = start_node_exporter(tmp)
            time.sleep(1.5)  # a tick or two, so every series is there
            for k, d in targets.items():
                n, size = series_count(d.port)
                o.detail(f"{k} /metrics: {n} samples, {size} bytes uncompressed")
            host_cost(targets, o)
            throughput(targets, o)
        finally:
            for d in targets.values():
                d.stop()


# ------------------------------------------------------------------------------------------
# energy accuracy

ENERGY_RE = re.compile(r'energy wattage_gpu_energy_(integrated_)?joules_total\{gpu="(\d+)"[^}]*'
                       r'\} joules=([\d.]+) .*from_ns=(\d+) to_ns=(\d+)')


def energy(build, out, o):
    """One daemon run at 1 s with a 13-s power period; each GPU (phase i rad) is a window."""
    base, amp, period = 300.0, 200.0, 13.0
    seconds = float(os.environ.get("BENCH_ENERGY_SECONDS", "61"))
    t0 = time.time()
    env = fake_env(build, FAKE_NVML_T0=f"{t0:.6f}", FAKE_NVML_POWER=f"{base:g},{amp:g},{period:g}")
    with tempfile.TemporaryDirectory(prefix="wt-bench-energy-") as tmp:
        d = start_wattage(build, tmp, 1.0, env=env, extra=["--duration", f"{seconds:g}"])
        d.proc.wait()
        log = d.stop()
    with open(os.path.join(out, "energy-daemon.log"), "w") as f:
        f.write(log)
    tool = os.path.join(build, "tests/fakes/fake_nvml_energy")
    err = {"counter": [], "integrated": [], "tutorial": []}
    window_s = []

    def p(i, t):
        import math
        return base + amp * math.sin(2 * math.pi * (t - t0) / period + i)

    for m in ENERGY_RE.finditer(log):
        integrated, gpu, joules = bool(m.group(1)), int(m.group(2)), float(m.group(3))
        t_from, t_to = int(m.group(4)) / 1e9, int(m.group(5)) / 1e9
        exact = float(subprocess.run([tool, str(gpu), f"{t_from:.9f}", f"{t_to:.9f}"], env=env,
                                     capture_output=True, text=True, check=True).stdout)
        err["integrated" if integrated else "counter"].append(abs(joules - exact) / exact * 100)
        if not integrated:
            w = t_to - t_from
            window_s.append(w)
            n = max(1, round(w / 5))
            tut = sum(p(gpu, t_from + 5 * k) * 5 for k in range(n))
            err["tutorial"].append(abs(tut - exact) / exact * 100)
            o.detail(f"gpu {gpu}: window {w:.3f} s exact {exact:.3f} J counter {joules:.3f} J "
                     f"tutorial {tut:.3f} J ({n} samples x 5 s)")
        else:
            o.detail(f"gpu {gpu}: integrated {joules:.3f} J exact {exact:.3f} J")
    note = (f"{len(window_s)} windows (one per GPU) of {statistics.median(window_s):.0f} s, "
            f"P(t)={base:g}+{amp:g}sin(2πt/{period:g}+i) W" if window_s else "no energy lines")
    o.add(row("Energy accuracy", "|error| vs exact integral, counter mode", "%",
              err["counter"], err["tutorial"], "5-s power samples", note))
    o.add(row("Energy accuracy", "|error| vs exact integral, power integration at 1 s", "%",
              err["integrated"], err["tutorial"], "5-s power samples", note))


# ------------------------------------------------------------------------------------------
# NVML call cost and external benchmarks

def nvml(build, out, o):
    tool = os.path.join(build, "bench/nvml_calls")
    if not os.access(tool, os.X_OK):
        o.add(row("NVML calls", "nvml_calls: not built", "", None))
        return
    r = subprocess.run([tool, "300"], env=fake_env(build), capture_output=True, text=True)
    o.detail(r.stdout + r.stderr)
    for line in r.stdout.splitlines():
        if line.startswith("wattage nvml poll"):
            nums = line.split()[-3:]
            o.add(row("Agent cost per tick", "NVML collector poll, fake library (nvml_calls)",
                      "µs", {"median": float(nums[0]), "min": float(nums[1]),
                             "max": float(nums[2]), "n": 300}))


HTTP_LOAD_RE = re.compile(r"^http_load: (\S+): ([\d.]+) req/s, p50 ([\d.]+) ms, p99 ([\d.]+) ms",
                          re.M)


def external(build, out, o, name, cmd):
    """Runs another engineer's benchmark; its JSON lines are rows, the rest details."""
    exe = cmd[0]
    if not (os.path.exists(exe) and os.access(exe, os.X_OK)):
        o.add(row("Store" if "store" in name else "Exposition throughput",
                  f"{name}: not built", "", None))
        return
    r = subprocess.run(cmd, capture_output=True, text=True, env=fake_env(build))
    o.detail(f"$ {' '.join(cmd)}  (exit {r.returncode})\n{r.stdout}{r.stderr}")
    n = 0
    for line in r.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if "what" not in j:
            continue
        fig = j.get("wattage")
        if isinstance(fig, (int, float)):
            fig = {"median": fig, "min": fig, "max": fig, "n": 1}
        peer = j.get("peer")
        if isinstance(peer, (int, float)):
            peer = {"median": peer, "min": peer, "max": peer, "n": 1}
        o.add(row(j.get("section", name), j["what"], j.get("unit", ""), fig, peer,
                  j.get("peer_name"), j.get("note")))
        n += 1
    # http_load.sh's own summary lines: "http_load: MODE: R req/s, p50 A ms, p99 B ms, ..."
    for m in HTTP_LOAD_RE.finditer(r.stdout):
        mode, rps, p99 = m.group(1), float(m.group(2)), float(m.group(4))
        one = {"median": rps, "min": rps, "max": rps, "n": 1}
        o.add(row("Exposition throughput", f"/metrics requests/s, {mode} (http_load.sh, 10 s)",
                  "req/s", one))
        one = {"median": p99, "min": p99, "max": p99, "n": 1}
        o.add(row("Exposition throughput", f"/metrics p99 latency, {mode} (http_load.sh, 10 s)",
                  "ms", one))
        n += 1
    if r.returncode != 0 or n == 0:
        o.add(row("Store" if "store" in name else "Exposition throughput",
                  f"{name}: exit {r.returncode}, {n} rows (see {name}.txt)", "", None))


# ------------------------------------------------------------------------------------------
# the table

ORDER = ["Agent cost per tick", "Idle wake-ups", "Host metrics cost", "Exposition throughput", "Store",
         "Energy accuracy", "NVML calls"]


def fmt(x):
    if x is None:
        return "-"
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 1e6:
        return f"{x / 1e6:.3g}M"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 0.01:
        return f"{x:.3g}"
    return f"{x:.2e}"


def fig(f):
    if not f:
        return "-"
    # an external bench may give a median over n samples without their range
    if f.get("n", 1) > 1 and "min" in f and "max" in f and f["min"] != f["max"]:
        return f"{fmt(f['median'])} [{fmt(f['min'])}–{fmt(f['max'])}]"
    return fmt(f["median"])


def machine():
    model = ""
    try:
        r = subprocess.run(["lscpu"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem = status = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024
    except OSError:
        pass
    del status
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "cpu": model, "mem_mib": mem,
            "kernel": platform.release(), "commit": commit,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def table(build, out, o=None):
    rows = []
    for name in sorted(os.listdir(out)):
        if name.startswith("rows-") and name.endswith(".jsonl"):
            with open(os.path.join(out, name)) as f:
                rows += [json.loads(line) for line in f if line.strip()]
    rows.sort(key=lambda r: ORDER.index(r["section"]) if r["section"] in ORDER else len(ORDER))
    m = machine()
    result = {"machine": m, "ratio": "wattage median / peer median", "rows": rows}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(result, f, indent=1, ensure_ascii=False)
    head = ["what", "wattage median [min–max]", "peer median [min–max]", "ratio", "unit"]
    lines = []
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            lines.append((f"## {section}", "", "", "", ""))
        what = r["what"] + (f" (vs {r['peer_name']})" if r.get("peer_name") else "")
        lines.append((what, fig(r["wattage"]), fig(r["peer"]),
                      fmt(r["ratio"]) if r["ratio"] is not None else "-", r["unit"]))
    w = [max(len(x[i]) for x in lines + [tuple(head)]) for i in range(5)]
    print(f"machine: {m['nproc']} CPUs, {m['cpu']}, {m['mem_mib']} MiB, Linux {m['kernel']}, "
          f"commit {m['commit']}, {m['date']}")
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(head)))
    for x in lines:
        if x[0].startswith("## "):
            print(x[0])
        else:
            print("  ".join([x[0].ljust(w[0])] + [c.rjust(w[i + 1]) for i, c in
                                                  enumerate(x[1:4])] + [x[4]]))
    print("ratio = wattage ÷ peer (lower is better for costs, higher for requests/s); "
          f"JSON: {os.path.join(out, 'results.json')}")


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    section, build, out = argv[1], argv[2], argv[3]
    os.makedirs(out, exist_ok=True)
    if section == "table":
        table(build, out)
        return 0
    funcs = {"agent": agent, "callgrind": callgrind, "serve": serve, "energy": energy,
             "nvml": nvml, "idle": idle}
    if section == "external":
        name = argv[4]
        external(build, out, Out(out, name), name, argv[5:])
        return 0
    if section not in funcs:
        print(f"bench.py: unknown section {section}", file=sys.stderr)
        return 2
    o = Out(out, section)
    started = time.monotonic()
    funcs[section](build, out, o)
    print(f"bench: {section} done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
