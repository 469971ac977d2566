#!/usr/bin/env bash
# Per-process attribution on AMD GPUs (the fake ROCm SMI: two MI250X, four dies in two packages)
# beside NVIDIA's (the fake NVML: 2 GPUs), so both vendors have a GPU 0 and a GPU 1: the AMD
# collector's ledger splits each package's energy over the processes ROCm SMI lists on its dies
# (by their VRAM, scaled by the package's busy ratio), keyed by vendor and index, so that
# wattage_process_gpu_energy_joules_total carries AMD's series on the AMD uuids and NVIDIA's
# stay as they were; GET /api/v1/attribution names each GPU's vendor (no index mixed up),
# conserves every AMD package's energy exactly and agrees with the package's counter over a
# stored window; GET /api/v1/gpus/processes gives AMD's GPUs their "attribution"; a process
# that ends is kept for the grace period, then folded into its owner.
. tests/cli/lib.sh
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
# an empty /proc: the listed pids are nobody's (owner "unknown"), whatever runs on this host
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'collectors:\n  nvml:\n    attribution_grace: 2s\nstore:\n  flush_interval: 200ms\n' \
    >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
PROCS=$TMP/procs
NVPROCS=$TMP/nvprocs
# The fake's busy ratio is (P - (B - A)) / 2A: with a period of years, die i is busy
# (1 + sin(i)) / 2 all along (die 0: 50 %, die 1: 92 %; package 0 at their mean).
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=2 FAKE_NVML_PROCS_FILE=$NVPROCS
export FAKE_RSMI_T0=$t0 FAKE_RSMI_POWER=400,100,1e9 FAKE_RSMI_GPUS=4 FAKE_RSMI_MI250X=1
export FAKE_RSMI_PROCS_FILE=$PROCS
# package 0: 3 GiB on its first die, 1 GiB on its second; package 1: two processes without VRAM
# figures of their own (one runs on both of its dies): an equal split
printf '0 5001 3221225472\n1 5002 1073741824\n2 5003\n2 5004\n3 5004\n' >"$PROCS"
echo "0 6001 sm=60" >"$NVPROCS"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM bg "$BIN" run -c "$TMP/w.yaml" \
    --db "$TMP/w.db" --interval 1 --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 15 curl -sf "$URL/healthz" -o /dev/null
AMD0=$(python3 -c 'print("AMD-%016x" % 0x00c0ffee00000000)')
AMD2=$(python3 -c 'print("AMD-%016x" % 0x00c0ffee00000001)')
scrape() {
    curl -sf "$URL/metrics" -o "$1" &&
        grep -q "^wattage_process_gpu_energy_joules_total{gpu=\"0\",uuid=\"$AMD0\",pid=\"5002\"" "$1" &&
        grep -q '^wattage_process_gpu_energy_joules_total{gpu="0",uuid="GPU-[^"]*",pid="6001"' "$1"
}
check "AMD's per-process series beside NVIDIA's, on the package's first die" \
    wait_for 20 scrape "$TMP/m1"
check "  the method of each AMD package: memory, equal" \
    bash -c "grep -qF 'wattage_gpu_attribution_info{gpu=\"0\",uuid=\"$AMD0\",method=\"memory\"} 1' '$TMP/m1' &&
             grep -qF 'wattage_gpu_attribution_info{gpu=\"2\",uuid=\"$AMD2\",method=\"equal\"} 1' '$TMP/m1'"
check "  no series on the second dies (their energy is the package's)" \
    bash -c "! grep -q '^wattage_process_gpu_energy_joules_total{gpu=\"[13]\",uuid=\"AMD-' '$TMP/m1'"
sleep 3
curl -sf "$URL/api/v1/attribution" -o "$TMP/a.json"
msg=$(python3 - "$TMP/a.json" <<'PY' 2>&1
import json, math, sys
d = json.load(open(sys.argv[1]))
g = {(x["vendor"], x["gpu"]): x for x in d["gpus"]}
assert set(g) == {("nvidia", "0"), ("nvidia", "1"), ("amd", "0"), ("amd", "2")}, sorted(g)
for k, x in g.items():
    parts = sum(p["energy_joules"] for p in x["processes"]) + sum(o["energy_joules"] for o in x["owners"])
    assert abs(parts + x["idle_joules"] - x["energy_joules"]) < 1e-5, (k, parts, x["idle_joules"], x["energy_joules"])
a0 = g[("amd", "0")]
assert a0["uuid"].startswith("AMD-") and g[("nvidia", "0")]["uuid"].startswith("GPU-"), g
p = {q["pid"]: q["energy_joules"] for q in a0["processes"]}
assert set(p) == {5001, 5002}, p
# VRAM 3:1 of the busy share; the rest idle
assert abs(p[5001] / p[5002] - 3) < 1e-3, p
busy = (0.5 * (1 + math.sin(0)) + 0.5 * (1 + math.sin(1))) / 2
share = (p[5001] + p[5002]) / a0["energy_joules"]
assert abs(share - busy) < 0.03, (share, busy)
a2 = {q["pid"]: q["energy_joules"] for q in g[("amd", "2")]["processes"]}
# equal parts: each split gives its odd µJ to the first of the two
assert set(a2) == {5003, 5004} and abs(a2[5003] - a2[5004]) <= 1e-6 * a2[5003] + 1e-5, a2
assert set(q["pid"] for q in g[("nvidia", "0")]["processes"]) == {6001}, g[("nvidia", "0")]
print("ok: %.1f J on amd:0, 5001 %.1f J, 5002 %.1f J" % (a0["energy_joules"], p[5001], p[5002]))
PY
)
check "GET /api/v1/attribution: vendors apart, each package conserved, VRAM 3:1, equal ($msg)" \
    grep -q '^ok' <<<"$msg"
curl -sf "$URL/api/v1/gpus/processes" -o "$TMP/p.json"
msg=$(python3 - "$TMP/p.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
amd0 = [g for g in d if g["vendor"] == "amd" and g["gpu"] == "0"][0]
nv0 = [g for g in d if g["vendor"] == "nvidia" and g["gpu"] == "0"][0]
assert amd0["attribution"]["method"] == "memory", amd0
assert [p["pid"] for p in amd0["attribution"]["processes"]] == [5001, 5002], amd0["attribution"]
assert [p["pid"] for p in nv0["attribution"]["processes"]] == [6001], nv0["attribution"]
print("ok")
PY
)
check "GET /api/v1/gpus/processes: AMD GPU 0 has its own attribution, not NVIDIA's ($msg)" \
    test "$msg" = ok

# the window from the store: each AMD package's attributed energy is its counter's
sleep 2
from=$(python3 -c 'import time; print(round(time.time() - 4, 3))')
to=$(python3 -c 'import time; print(round(time.time() - 1, 3))')
sleep 1
curl -sf "$URL/api/v1/attribution?from=$from&to=$to" -o "$TMP/w.json"
msg=$(python3 - "$TMP/w.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
g = {x["uuid"]: x for x in d["gpus"] if x["uuid"].startswith("AMD-")}
assert len(g) == 2, [x["uuid"] for x in d["gpus"]]
for u, x in g.items():
    assert x["energy_joules"] and x["energy_joules"] > 500, x
    assert abs(x["attributed_joules"] - x["energy_joules"]) < 0.01, (u, x["attributed_joules"], x["energy_joules"])
print("ok")
PY
)
check "a stored window: attributed energy equals each AMD package's counter ($msg)" test "$msg" = ok

# 5002 ends: after the grace period (2 s) its energy folds into its owner's series
printf '0 5001 3221225472\n2 5003\n2 5004\n3 5004\n' >"$PROCS"
folded() {
    curl -sf "$URL/metrics" -o "$TMP/m3" &&
        ! grep -q "^wattage_process_gpu_energy_joules_total{gpu=\"0\",uuid=\"$AMD0\",pid=\"5002\"" "$TMP/m3" &&
        grep -q "^wattage_process_gpu_energy_joules_total{gpu=\"0\",uuid=\"$AMD0\",owner=\"unknown\"}" "$TMP/m3"
}
check "a process gone past the grace period folds into its owner" wait_for 15 folded
check "no AMD warning" bash -c "! grep -q 'warn  amd' '$TMP/run.log'"
finish
