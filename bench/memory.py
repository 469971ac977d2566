#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Memory of an idle daemon, two binaries side by side (issue 49).

    python3 bench/memory.py BUILD BEFORE AFTER [SECONDS [CONFIG [EVERY]]]

Starts BEFORE, AFTER, BEFORE, AFTER at once (`run --interval 1`, the fake NVML with 8 GPUs,
the host's /sys and /proc; CONFIG a wattage.yaml, default deploy/wattage.yaml: the one shipped),
waits SECONDS (default 60) and reads each one's /proc/PID/status (VmHWM, VmRSS), /proc/PID/smaps_rollup (anonymous
and file-backed resident memory) and /proc/PID/maps (shared libraries mapped). Prints the
median of the two daemons of each binary, in KiB. With EVERY (seconds), also VmRSS and VmHWM
along the run, every EVERY seconds, with the UTC time of day: a store compacts the readings of a
span (15 minutes on the wall clock, :00 :15 :30 :45) 5 minutes after it closes, so where the
first full compaction falls depends on the time the run starts.
"""
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0])
    libs = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            p = line.split()
            if len(p) >= 6 and ".so" in p[5]:
                libs.add(p[5])
    out["libraries"] = len(libs)
    return out


def main():
    build, before, after = sys.argv[1:4]
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
    config = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else os.path.join(
        bench.ROOT, "deploy/wattage.yaml")
    every = float(sys.argv[6]) if len(sys.argv) > 6 else 0
    with tempfile.TemporaryDirectory(prefix="wt-bench-mem-") as tmp:
        env = bench.fake_env(build)
        ds = []
        try:
            for b in (before, after, before, after):
                ds.append((b, bench.start_wattage(build, tmp, 1, env, ("--config", config), b)))
            t0 = time.monotonic()
            while every and time.monotonic() - t0 + every < seconds:
                time.sleep(every)
                now = [(b, status(d.pid)) for b, d in ds]
                line = []
                for name, b in (("before", before), ("after", after)):
                    vals = [s for bb, s in now if bb == b]
                    line.append(f"{name} VmRSS {statistics.median(v['VmRSS'] for v in vals):.0f} "
                                f"VmHWM {statistics.median(v['VmHWM'] for v in vals):.0f}")
                clock = time.strftime("%H:%M:%S", time.gmtime())
                print(f"t={time.monotonic() - t0:6.0f}s {clock}  " + "  ".join(line), flush=True)
            time.sleep(max(0.0, seconds - (time.monotonic() - t0)))
            got = [(b, status(d.pid)) for b, d in ds]
            split = [(b, bench.rss_split(d.pid)) for b, d in ds]
        finally:
            for _, d in ds:
                d.stop()
    keys = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "libraries")
    print(f"# 2 idle daemons of each binary at once, read after {seconds:.0f} s; KiB, medians")
    print(f"{'':<10}" + "".join(f"{k:>10}" for k in keys))
    for name, b in (("before", before), ("after", after)):
        vals = [s for bb, s in got if bb == b]
        print(f"{name:<10}" + "".join(f"{statistics.median(v[k] for v in vals):>10.0f}"
                                       for k in keys))
    print("# resident KiB by mapping, the first daemon of each binary, largest first")
    for name, b in (("before", before), ("after", after)):
        parts = next(p for bb, p in split if bb == b)
        top = sorted(parts.items(), key=lambda kv: -kv[1])[:12]
        print(f"{name:<10}" + ", ".join(f"{k} {v}" for k, v in top))


if __name__ == "__main__":
    main()
