#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time from a job start request (POST /api/v1/jobs, tagged cap=never) to its GPU's power
limit restored, on the fake NVML: one daemon with a site budget that caps all 8 GPUs (8 x 600 W
against 4000 W), then one cap=never job per GPU 0..6 in turn; for each, the time from sending
the request to the fake driver's limit of that GPU reading its own 700 W again (the fake's
FAKE_NVML_LIMITS_FILE, polled every millisecond). The goal is at most one tick.
Usage: bench/cap_release.py BUILD [INTERVAL_S]; prints JSON rows (bench/run.sh) and details."""
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
    with open(cfg, "w") as f:
        f.write("alerts:\n  power_budget_watts: 4000\n  budget_clear_share: 0.9\n"
                "  detectors: {throttle_forecast: false, throttling: false, idle_burn: false,"
                " impossible: false, stuck: false, sibling: false, data_gap: false}\n")
    env = dict(os.environ, WATTAGE_NVML_LIBRARY=os.path.join(root, build,
                                                              "tests/fakes/libnvidia-ml.so.1"),
               FAKE_NVML_GPUS="8", FAKE_NVML_POWER="600,0,0", FAKE_NVML_LIMITS_FILE=limits)
    env.pop("WATTAGE_SYSFS_ROOT", None)
    env.pop("WATTAGE_PROCFS_ROOT", None)
    log = open(os.path.join(tmp, "wattage.log"), "w")
    d = subprocess.Popen([os.path.join(root, build, "wattage"), "run", "-c", cfg, "--db",
                          os.path.join(tmp, "w.db"), "--listen", f"127.0.0.1:{port}",
                          "--interval", str(interval)], env=env, stderr=log)
    samples = []
    try:
        if not wait(lambda: all(limit_of(limits, g) < 700 for g in range(8)), 30):
            print("cap_release: the budget did not cap the GPUs", file=sys.stderr)
            sys.exit(1)
        for g in range(7):
            body = json.dumps({"name": f"never{g}", "tags": {"cap": "never"},
                               "gpus": [g]}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/jobs", data=body,
                                         method="POST",
                                         headers={"Content-Type": "application/json"})
            t0 = time.monotonic()
            with urllib.request.urlopen(req, timeout=5) as r:
                if r.status != 201:
                    print(f"cap_release: POST answered {r.status}", file=sys.stderr)
                    sys.exit(1)
            answered = time.monotonic() - t0
            if not wait(lambda: limit_of(limits, g) == 700, 10 * interval + 5):
                print(f"cap_release: GPU {g} was not restored", file=sys.stderr)
                sys.exit(1)
            took = time.monotonic() - t0
            samples.append(took * 1000)
            print(f"cap_release: gpu {g}: request answered in {answered * 1000:.1f} ms, "
                  f"limit restored after {took * 1000:.1f} ms")
    finally:
        d.terminate()
        d.wait(10)
    fig = {"median": statistics.median(samples), "min": min(samples), "max": max(samples),
           "n": len(samples)}
    print(json.dumps({"section": "Power capping",
                      "what": f"job start request (cap=never) to its GPU's limit restored, "
                              f"interval {interval:g} s (goal: one tick)",
                      "unit": "ms", "wattage": fig,
                      "note": "the capper reads the running cap=never jobs once a tick"}))
