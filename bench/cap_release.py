#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time from a job start request (POST /api/v1/jobs) to its GPU's power limit restored, on the
fake NVML. MODE never (the default): one daemon with a site budget that caps all 8 GPUs (8 x
600 W against 4000 W), then one job tagged cap=never per GPU 0..6 in turn. MODE idle: one daemon
with alerts.idle_policy in mode limit (idle for 1 s) over 8 idle GPUs (60 W, utilization 0, no
process), each capped at its 200 W minimum, then one job (untagged) naming GPU 0..6 in turn,
each sent once that GPU is idle-capped. For each, the time from sending the request to the fake
driver's limit of that GPU reading its own 700 W again (the fake's FAKE_NVML_LIMITS_FILE, polled
every millisecond), and whether it already read 700 W when the request was answered. The goal is
at most one tick.
Usage: bench/cap_release.py BUILD [INTERVAL_S] [never|idle]; prints JSON rows (bench/run.sh) and
details."""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

build = sys.argv[1] if len(sys.argv) > 1 else "build"
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
mode = sys.argv[3] if len(sys.argv) > 3 else "never"
if mode not in ("never", "idle"):
    print(f"cap_release: MODE is never or idle, not {mode}", file=sys.stderr)
    sys.exit(2)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def limit_of(path, gpu):
    w = 700.0
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2 and p[0] == str(gpu):
                    w = float(p[1])
    except FileNotFoundError:
        pass
    return w


def wait(cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.001)
    return False


with tempfile.TemporaryDirectory(prefix="wt-cap-bench-") as tmp:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    limits = os.path.join(tmp, "limits")
    cfg = os.path.join(tmp, "w.yaml")
    detectors = ("  detectors: {throttle_forecast: false, throttling: false, idle_burn: false,"
                 " impossible: false, stuck: false, sibling: false, data_gap: false}\n")
    with open(cfg, "w") as f:
        if mode == "never":
            f.write("alerts:\n  power_budget_watts: 4000\n  budget_clear_share: 0.9\n" + detectors)
        else:
            f.write("alerts:\n  cap_min_interval: 1s\n"
                    "  idle_policy: {mode: limit, idle_for: 1s}\n" + detectors)
    procs = os.path.join(tmp, "procs")
    open(procs, "w").close()  # no process on any GPU
    env = dict(os.environ, WATTAGE_NVML_LIBRARY=os.path.join(root, build,
                                                              "tests/fakes/libnvidia-ml.so.1"),
               FAKE_NVML_GPUS="8", FAKE_NVML_POWER="600,0,0" if mode == "never" else "60,0,0",
               FAKE_NVML_LIMITS_FILE=limits, FAKE_NVML_PROCS_FILE=procs)
    env.pop("WATTAGE_SYSFS_ROOT", None)
    env.pop("WATTAGE_PROCFS_ROOT", None)
    log = open(os.path.join(tmp, "wattage.log"), "w")
    d = subprocess.Popen([os.path.join(root, build, "wattage"), "run", "-c", cfg, "--db",
                          os.path.join(tmp, "w.db"), "--listen", f"127.0.0.1:{port}",
                          "--interval", str(interval)], env=env, stderr=log)
    samples = []
    try:
        if not wait(lambda: all(limit_of(limits, g) < 700 for g in range(8)), 30):
            print(f"cap_release: the {'budget' if mode == 'never' else 'idle policy'} did not "
                  "cap the GPUs", file=sys.stderr)
            sys.exit(1)
        at_answer = 0
        for g in range(7):
            if not wait(lambda: limit_of(limits, g) < 700, 30):
                print(f"cap_release: GPU {g} is not capped", file=sys.stderr)
                sys.exit(1)
            job = {"name": f"never{g}", "tags": {"cap": "never"}, "gpus": [g]}
            if mode == "idle":
                job = {"name": f"idle{g}", "gpus": [g]}
            body = json.dumps(job).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/jobs", data=body,
                                         method="POST",
                                         headers={"Content-Type": "application/json"})
            t0 = time.monotonic()
            with urllib.request.urlopen(req, timeout=5) as r:
                if r.status != 201:
                    print(f"cap_release: POST answered {r.status}", file=sys.stderr)
                    sys.exit(1)
            answered = time.monotonic() - t0
            restored_at_answer = limit_of(limits, g) == 700
            at_answer += restored_at_answer
            if not wait(lambda: limit_of(limits, g) == 700, 10 * interval + 5):
                print(f"cap_release: GPU {g} was not restored", file=sys.stderr)
                sys.exit(1)
            took = time.monotonic() - t0
            samples.append(took * 1000)
            print(f"cap_release: gpu {g}: request answered in {answered * 1000:.1f} ms "
                  f"({'restored' if restored_at_answer else 'still capped'} then), "
                  f"limit restored after {took * 1000:.1f} ms")
    finally:
        d.terminate()
        d.wait(10)
    med = statistics.median(samples)
    fig = {"median": med, "min": min(samples), "max": max(samples), "n": len(samples)}
    ticks = med / (interval * 1000)
    print(f"cap_release: mode {mode}: median {med:.1f} ms = {ticks:.3f} ticks of {interval:g} s; "
          f"restored before the answer {at_answer}/{len(samples)}")
    if mode == "never":
        what = "job start request (cap=never) to its GPU's limit restored"
        note = "the capper reads the running cap=never jobs once a tick"
    else:
        what = "job start request to its idle-capped GPU's limit restored (alerts.idle_policy)"
        note = (f"lifted before POST /api/v1/jobs answers: {at_answer}/{len(samples)} restored "
                f"at the answer; median {ticks:.3f} ticks")
    print(json.dumps({"section": "Power capping",
                      "what": f"{what}, interval {interval:g} s (goal: one tick)",
                      "unit": "ms", "wattage": fig, "note": note}))
