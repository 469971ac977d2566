#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The extra CPU per tick of the interconnect counters, GPM and units (collect/nvml_fields.c),
all on against all off, in callgrind instructions (machine noise barely moves them).

    bench/counters_cost.py BUILD OUT

"off" is the fake NVML's default: no NVLink or PCIe counters, GPM not supported (a GPU before
Hopper), no power source, no S-class unit: each is asked once and never again. "hopper": what an
HGX H100/H200 node reports (NVLink and PCIe counters, GPM). "on": that, the power source and one
S-class unit too. 8 GPUs each.

  1. the NVML collector alone: BUILD/bench/counters_poll at 20 and 120 polls under callgrind;
     Ir per poll = the difference of total Ir over the difference of polls (start-up cancels);
  2. the whole daemon (`wattage run --interval 1`, collectors, hub, store writer, alerts) under
     callgrind for --duration 10 and 70 s; Ir per tick = the difference of Ir over the
     difference of ticks (the largest count of one series in each store). The two runs differ
     by one minute, so the difference holds one of the store's per-minute rollups of every
     series and six of its 10-s maintenance passes, whatever the start's phase.
Prints a table; details in OUT/counters.txt.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench as B  # noqa: E402

OFF = {}
HOPPER = {"FAKE_NVML_NVLINK": "20000000,10000000", "FAKE_NVML_PCIE": "2e10,1e10",
          "FAKE_NVML_PCIE_64": "1", "FAKE_NVML_GPM": "1"}
ON = dict(HOPPER, FAKE_NVML_POWER_SOURCE="ac", FAKE_NVML_UNITS="1")


def callgrind_ir(args, env, out, name):
    cg = os.path.join(out, f"callgrind.out.counters-{name}")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", *args],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return B.total_ir(cg)


def collector(build, out, mode, extra):
    env = B.fake_env(build, **extra)
    prog = os.path.join(build, "bench", "counters_poll")
    lo, hi = 20, 120
    a = callgrind_ir([prog, str(lo)], env, out, f"poll-{mode}-{lo}")
    b = callgrind_ir([prog, str(hi)], env, out, f"poll-{mode}-{hi}")
    r = subprocess.run([prog, "3"], env=env, capture_output=True, text=True, check=True)
    readings = int(r.stdout.split()[-1])
    return (b - a) / (hi - lo), readings


def daemon(build, out, mode, extra):
    env = B.fake_env(build, **extra)
    runs = []
    with tempfile.TemporaryDirectory(prefix="wt-bench-counters-") as tmp:
        for d in (10, 70):
            db = os.path.join(tmp, f"{mode}{d}.db")
            args = [os.path.join(build, "wattage"), "run", "--interval", "1", "--listen",
                    f"127.0.0.1:{B.free_port()}", "--db", db, "--duration", str(d)]
            runs.append((callgrind_ir(args, env, out, f"daemon-{mode}-{d}s"), B.db_ticks(db)))
    (ir_a, tk_a), (ir_b, tk_b) = runs
    return (ir_b - ir_a) / (tk_b - tk_a), runs


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build, out = argv[1], argv[2]
    os.makedirs(out, exist_ok=True)
    res = {}
    modes = (("off", OFF), ("hopper", HOPPER), ("on", ON))
    for mode, extra in modes:
        res[mode] = collector(build, out, mode, extra) + daemon(build, out, mode, extra)
    c0, r0, d0, _ = res["off"]
    lines = ["what | readings per poll | collector poll (Ir) | whole daemon per tick (Ir)",
             "--- | --- | --- | ---"]
    for mode, _ in modes:
        c, r, d, _ = res[mode]
        extra = "" if mode == "off" else (f" ({(c / c0 - 1) * 100:+.1f} %)", f" ({r - r0:+d})",
                                          f" ({(d / d0 - 1) * 100:+.1f} %)")
        if not extra:
            extra = ("", "", "")
        lines.append(f"{mode} | {r}{extra[1]} | {c:,.0f}{extra[0]} | {d:,.0f}{extra[2]}")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "counters.txt"), "w") as f:
        f.write(text + "\n")
        for mode, _ in modes:
            for ir, tk in res[mode][3]:
                f.write(f"daemon {mode}: {ir} Ir, {tk} ticks\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
