#!/usr/bin/env bash
# Real-GPU check, under 5 minutes on a machine with an NVIDIA GPU and PyTorch. It reads only:
# no power limit, clock or mode is ever set. It
#   1. runs `wattage status --json` against the real driver;
#   2. runs the daemon for 60 s while a PyTorch bf16 matmul load runs from 15 s to 45 s;
#   3. compares the NVML energy counter with integrated power over the idle and loaded phases;
#   4. times each NVML call wattage makes (median µs) and one whole collector poll;
#   5. prints one short table.
# Usage: scripts/gpu-check.sh [BIN_DIR]   (BIN_DIR holds wattage and nvml_calls, and lib/ with
# the shared libraries when they were packed by scripts/gpu-bundle.sh; default build/gpu, else build)
set -u
dir=${1:-}
if [[ -z $dir ]]; then
    if [[ -x build/gpu/wattage ]]; then dir=build/gpu; else dir=build; fi
fi
[[ -d $dir/lib ]] && export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BIN=$dir/wattage
CALLS=$dir/nvml_calls
[[ -x $CALLS ]] || CALLS=$dir/bench/nvml_calls
work=${OUT:-$(mktemp -d)}
mkdir -p "$work"
py=${PYTHON:-python3}

echo "== driver"
nvidia-smi --query-gpu=index,name,driver_version,persistence_mode,power.draw,power.limit,temperature.gpu,clocks.sm --format=csv 2>&1 | head -5

echo "== wattage status --json"
if ! "$BIN" status --json >"$work/status.json" 2>"$work/status.err"; then
    echo "status failed:"; cat "$work/status.err"; exit 1
fi
"$py" - "$work/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for g in d["gpus"]:
    print("gpu %d %s power %.1f W energy %.1f J temp %s C slowdown %s C util %s limit %s W throttled %s" % (
        g["index"], g["model"], g.get("power_watts", float("nan")), g.get("energy_joules", float("nan")),
        g.get("temperature_celsius"), g.get("slowdown_temperature_celsius"), g.get("utilization_ratio"),
        g.get("power_limit_watts"), g.get("throttled")))
print("fields:", ",".join(sorted(d["gpus"][0].keys())) if d["gpus"] else "no GPUs")
PY

echo "== daemon 60 s, matmul load from 15 s to 45 s"
t0=$("$py" -c 'import time; print(time.time())')
"$BIN" run --interval 1 --duration 60 --summary-interval 5 --db "$work/gpucheck.db" \
    --listen 127.0.0.1:${WATTAGE_CHECK_PORT:-19747} \
    >"$work/run.log" 2>&1 &
dpid=$!
"$py" - "$t0" >"$work/load.json" 2>"$work/load.err" <<'PY' &
import json, sys, time
import torch
t0 = float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
while time.time() < t0 + 15:
    time.sleep(0.01)
start, n = time.time(), 0
while time.time() < t0 + 45:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    n += 20
stop = time.time()
print(json.dumps({"start": start, "stop": stop, "matmuls": n,
                  "tflops": n * 2 * 8192 ** 3 / (stop - start) / 1e12}))
PY
lpid=$!
wait $lpid
wait $dpid
echo "daemon exit: $?"
grep -E 'nvml|warn|error' "$work/run.log" | grep -v 'energy wattage' | head -8

echo "== energy over the exact load window, from the store"
if [[ -s $work/load.json ]]; then
    from=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["start"])' "$work/load.json")
    to=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["stop"])' "$work/load.json")
    "$BIN" energy --from "$from" --to "$to" --db "$work/gpucheck.db" 2>&1
fi
echo "== RAPL on this machine"
ls /sys/class/powercap 2>&1 | head -5

echo "== NVML call timings (GPU 0, 500 calls each)"
"$CALLS" 500 2>&1 | tee "$work/calls.txt"

echo "== summary"
"$py" - "$work/run.log" "$work/load.json" "$work/calls.txt" <<'PY'
import json, re, sys
from datetime import datetime
log, loadf, callsf = sys.argv[1:4]
try:
    load = json.load(open(loadf))
except Exception as e:
    print("load failed:", e); load = None
blocks, prev = [], None
for line in open(log):
    m = re.match(r'(\S+) info  run: summary .*gpu_power_w=([\d.]+) gpu_energy_j=([\d.]+) gpu_energy_integrated_j=([\d.]+)', line)
    if not m:
        continue
    t = datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
    if prev is not None:
        blocks.append((prev, t, float(m.group(3)), float(m.group(4))))
    prev = t
rows = {"idle": [0, 0, 0], "load": [0, 0, 0]}
for a, b, cj, ij in blocks:
    if load and a >= load["start"] and b <= load["stop"]:
        k = "load"
    elif load and (b <= load["start"] or a >= load["stop"]):
        k = "idle"
    else:
        continue
    rows[k][0] += b - a; rows[k][1] += cj; rows[k][2] += ij
print("%-6s %8s %12s %14s %9s %10s" % ("phase", "seconds", "counter_J", "integrated_J", "diff_%", "mean_W"))
for k, (s, cj, ij) in rows.items():
    if s:
        print("%-6s %8.1f %12.1f %14.1f %9.2f %10.1f" % (k, s, cj, ij, 100 * (ij - cj) / cj if cj else float("nan"), cj / s))
if load:
    print("load: %d bf16 8192^3 matmuls, %.0f TFLOP/s" % (load["matmuls"], load["tflops"]))
for line in open(callsf):
    if line.startswith("nvml") or line.startswith("wattage"):
        print(line.rstrip())
PY
