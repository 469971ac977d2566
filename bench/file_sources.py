#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The file collectors' idle cost, two wattage binaries side by side.

    file_sources.py BUILD BEFORE AFTER [SECONDS] [fake|real]

Starts two daemons of each binary at once (`run --interval 1`, default configuration, 8 GPUs
of BUILD's fake NVML, a store in a temporary directory). With `fake` (the default) the sysfs
root is a tree written here: tests/fixtures/sysfs-2pkg's RAPL zones, a 40-sensor hwmon node
(the layout of bench/hwmon_walk.c), a NIC and an InfiniBand port; /proc is the real one. With
`real` both roots are the host's. After a 5-s warm-up, the CPU time (/proc/PID/task/*/schedstat)
and the context switches (voluntary + involuntary, /proc/PID/task/*/status) of every thread are
read, again SECONDS (default 30) later. Prints, per thread name and binary, CPU ms per second
and wake-ups per second (median of the two daemons), then the whole process.
"""
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def put(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def make_tree(root):
    shutil.copytree(os.path.join(bench.ROOT, "tests/fixtures/sysfs-2pkg/sys"),
                    os.path.join(root, "sys"))
    hw = os.path.join(root, "sys/class/hwmon")
    n = 0
    kinds = ["Module", "Grace", "CPU", "SysIO"]
    for m in range(9):
        d = f"{hw}/hwmon{n}/device"
        n += 1
        put(d, "name", "power_meter")
        put(d, "power1_average", str(300000000 + m * 1000000))
        put(d, "power1_average_interval", "1000" if m == 0 else "50")
        put(d, "power1_oem_info", "system board" if m == 0 else
            f"{kinds[(m - 1) % 4]} Power Socket {(m - 1) // 4}")
    for p in range(8):
        d = f"{hw}/hwmon{n}"
        n += 1
        put(d, "name", "pmbus")
        put(d, "power1_label", "pin")
        put(d, "power1_input", str(1100000000 + p))
        put(d, "power2_label", "pout1")
        put(d, "power2_input", str(1030000000 + p))
    for g in range(8):
        d = f"{hw}/hwmon{n}"
        n += 1
        put(d, "name", "amdgpu")
        put(d, "power1_label", "PPT")
        put(d, "power1_average", str(550000000 + g))
    d = f"{hw}/hwmon{n}"
    n += 1
    put(d, "name", "xe")
    put(d, "energy1_label", "card")
    put(d, "energy1_input", "123456789")
    put(d, "energy2_label", "pkg")
    put(d, "energy2_input", "23456789")
    for o in range(5):
        d = f"{hw}/hwmon{n}"
        n += 1
        put(d, "name", "ina2xx")
        put(d, "power1_input", str(12000000 + o))
    for f in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
        put(root, f"sys/class/net/eth0/statistics/{f}", "1000")
    os.makedirs(os.path.join(root, "sys/class/net/eth0/device"), exist_ok=True)
    for f in ("port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets"):
        put(root, f"sys/class/infiniband/mlx5_0/ports/1/counters/{f}", "250")


def threads(pid):
    """{tid: (name, cpu ns, context switches)}"""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                d = dict(line.split(":", 1) for line in f if ":" in line)
            out[tid] = (d["Name"].strip(), ns, int(d["voluntary_ctxt_switches"]) +
                        int(d["nonvoluntary_ctxt_switches"]))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def main():
    build, before, after = sys.argv[1:4]
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    mode = sys.argv[5] if len(sys.argv) > 5 else "fake"
    with tempfile.TemporaryDirectory(prefix="wt-bench-files-") as tmp:
        env = bench.fake_env(build)
        if mode == "fake":
            make_tree(os.path.join(tmp, "sysfs"))
            env["WATTAGE_SYSFS_ROOT"] = os.path.join(tmp, "sysfs")
        ds = []
        try:
            for b in (before, after, before, after):
                port = bench.free_port()
                args = [b, "run", "--interval", "1", "--listen", f"127.0.0.1:{port}",
                        "--db", tempfile.mktemp(dir=tmp, suffix=".db")]
                ds.append((b, bench.Daemon(args, env=env, log=tempfile.mktemp(dir=tmp),
                                           port=port)))
            time.sleep(5)
            s0 = [threads(d.pid) for _, d in ds]
            t0 = time.monotonic()
            time.sleep(seconds)
            s1 = [threads(d.pid) for _, d in ds]
            dt = time.monotonic() - t0
        finally:
            for _, d in ds:
                d.stop()
    rows = {}  # (binary, thread) -> [(cpu ms/s, wakeups/s)]
    for (b, _), a, z in zip(ds, s0, s1):
        per = {}
        for tid, (name, ns, cs) in z.items():
            if tid in a:
                c, w = per.get(name, (0.0, 0.0))
                per[name] = (c + (ns - a[tid][1]) / 1e6 / dt, w + (cs - a[tid][2]) / dt)
        per["(all threads)"] = (sum(v[0] for v in per.values()), sum(v[1] for v in per.values()))
        for name, v in per.items():
            rows.setdefault((b, name), []).append(v)
    print(f"# {mode} sysfs, 2 daemons of each binary at once, {dt:.1f} s after a 5-s warm-up")
    print(f"{'thread':<16} {'before ms/s':>11} {'after ms/s':>10} {'before wk/s':>11} "
          f"{'after wk/s':>10}")
    names = sorted({n for _, n in rows}, key=lambda n: (n == "(all threads)", n))
    for n in names:
        v = []
        for b in (before, after):
            r = rows.get((b, n), [])
            v.append((statistics.median([x[0] for x in r]) if r else float("nan"),
                      statistics.median([x[1] for x in r]) if r else float("nan")))
        print(f"{n:<16} {v[0][0]:11.3f} {v[1][0]:10.3f} {v[0][1]:11.2f} {v[1][1]:10.2f}")


if __name__ == "__main__":
    main()
