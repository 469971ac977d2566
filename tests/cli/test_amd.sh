#!/usr/bin/env bash
# AMD GPUs through the fake ROCm SMI (two MI250X: four dies, two packages), with no NVIDIA
# library: /metrics shows them in the wattage_gpu_* families with vendor="amd" in
# wattage_gpu_info, power and energy once per package; `wattage energy` over a window equals the
# fake's exact energy within its error bar; without the library the daemon says so once and runs.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_rocm_energy
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_NVML_LIBRARY=$TMP/no-libnvidia-ml.so.1
printf 'store:\n  flush_interval: 500ms\n' >"$TMP/w.yaml"

t0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_RSMI_T0=$t0 FAKE_RSMI_POWER=400,150,5 FAKE_RSMI_GPUS=4 FAKE_RSMI_MI250X=1
port=$(free_port)
WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --duration 6 --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
has_info() { curl -s "127.0.0.1:$port/metrics" >"$TMP/m.txt" && grep -q '^wattage_gpu_energy_joules_total' "$TMP/m.txt"; }
check "the daemon serves the AMD GPUs" wait_for 15 has_info
check "wattage_gpu_info carries vendor=\"amd\" for the four dies" \
    test "$(grep -c '^wattage_gpu_info{gpu="[0-3]",uuid="AMD-[0-9a-f]*\(-1\)\?",model="AMD Instinct MI250X",vendor="amd",' "$TMP/m.txt")" -eq 4
check "the second dies name their package" \
    grep -q '^wattage_gpu_info{gpu="3",.*package="2"} 1' "$TMP/m.txt"
check "power once per package (gpu 0 and 2)" \
    test "$(grep '^wattage_gpu_power_watts{' "$TMP/m.txt" | grep -c 'gpu="[02]"')" -eq 2 -a \
    "$(grep -c '^wattage_gpu_power_watts{' "$TMP/m.txt")" -eq 2
check "energy counter once per package" \
    test "$(grep -c '^wattage_gpu_energy_joules_total{gpu="[02]"' "$TMP/m.txt")" -eq 2 -a \
    "$(grep -c '^wattage_gpu_energy_joules_total{' "$TMP/m.txt")" -eq 2
check "temperatures of every die, by sensor" \
    test "$(grep -c '^wattage_gpu_temperature_celsius{.*sensor="\(edge\|junction\)"}' "$TMP/m.txt")" -eq 8
check "no AMD-only family" bash -c "! grep -q '^wattage_\(amd\|rocm\)' '$TMP/m.txt'"
wait "$pid"
check "the daemon ran and stopped cleanly" test $? -eq 0
check "NVML absent was said once" test "$(grep -c 'nvml: not available' "$TMP/run.log")" -eq 1
check "no AMD warning on a healthy fake" bash -c "! grep -q 'warn  amd' '$TMP/run.log'"

base=$(stored "$TMP/w.db" wattage_gpu_power_watts | sort -t, -k1,1g | head -n 1 | cut -d, -f1)
from=$(python3 -c "print(f'{$base + 0.93:.3f}')")
to=$(python3 -c "print(f'{$base + 3.71:.3f}')")
"$BIN" energy --db "$TMP/w.db" --from "$from" --to "$to" --json >"$TMP/e.json" 2>"$TMP/e.err"
check "energy --json exits 0 ($(cat "$TMP/e.err"))" test $? -eq 0
msg=$(python3 - "$TMP/e.json" "$EXACT" "$from" "$to" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
exact_tool, f, t = sys.argv[2], sys.argv[3], sys.argv[4]
gpus = sorted((s for s in d["series"] if "gpu" in s), key=lambda s: s["gpu"])
assert [s["gpu"] for s in gpus] == ["0", "2"], [s["gpu"] for s in gpus]
total = 0
for s in gpus:
    assert s["method"] == "counter", s
    assert s["model"] == "AMD Instinct MI250X", s
    exact = float(subprocess.check_output([exact_tool, s["gpu"], f, t]))
    err = abs(s["energy_joules"] - exact)
    assert err <= s["uncertainty_joules"], f"gpu {s['gpu']}: {s['energy_joules']} vs {exact}, bar {s['uncertainty_joules']}"
    assert err < 0.005 * exact, f"gpu {s['gpu']}: {s['energy_joules']} vs exact {exact}"
    total += exact
assert abs(d["total_joules"] - total) <= d["uncertainty_joules"] + 1e-9, (d["total_joules"], total)
print("ok")
PY
)
check "per-package energy equals the fake's exact energy within its error bar ($msg)" test "$msg" = ok

# A counter frozen 2 s in (FAKE_RSMI_FROZEN) while the power goes on: the collector drops the
# counter and integrates power; over a window past the freeze `wattage energy` (auto) gives the
# integrated figure, which equals the fake's exact energy within its bar, and says how much of
# the window the counter covers; --method counter still gives the counter's part alone. (At
# 0.5 s a tick may come 1.5 s late before the integral calls it a gap: at 0.2 s a loaded machine
# left 14 % of the window uncovered.)
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
port=$(free_port)
FAKE_RSMI_T0=$t0 FAKE_RSMI_GPUS=1 FAKE_RSMI_MI250X= FAKE_RSMI_FROZEN=0:2 \
    WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM "$BIN" run -c "$TMP/w.yaml" --db "$TMP/f.db" \
    --interval 0.5 --duration 7 --listen "127.0.0.1:$port" >"$TMP/frozen.log" 2>&1
check "the daemon with a frozen counter exits 0" test $? -eq 0
check "and says the counter stopped" grep -q 'energy counter stopped while the package draws power gpu=0' "$TMP/frozen.log"
# the window from the daemon's first reading (a loaded machine may start it a second late; the
# energy of the time before is not stored), the freeze inside it
first=$(stored "$TMP/f.db" wattage_gpu_power_watts | sort -t, -k1,1g | head -n 1 | cut -d, -f1)
from=$(python3 -c "print(f'{max($t0 + 0.5, ${first:-0} + 0.05):.3f}')")
to=$(python3 -c "print(f'{$t0 + 5.2:.3f}')")
export FAKE_RSMI_T0=$t0 FAKE_RSMI_GPUS=1 FAKE_RSMI_MI250X=
"$BIN" energy --db "$TMP/f.db" --from "$from" --to "$to" --json >"$TMP/f.json" 2>"$TMP/f.err"
check "energy --json over the frozen counter exits 0 ($(cat "$TMP/f.err"))" test $? -eq 0
"$BIN" energy --db "$TMP/f.db" --from "$from" --to "$to" --method counter --json >"$TMP/fc.json" 2>/dev/null
msg=$(python3 - "$TMP/f.json" "$TMP/fc.json" "$EXACT" "$from" "$to" <<'PY' 2>&1
import json, subprocess, sys
d, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
exact = float(subprocess.check_output([sys.argv[3], "0", sys.argv[4], sys.argv[5]]))
(s,) = [s for s in d["series"] if s.get("gpu") == "0"]
assert s["method"] == "integrated", s
assert 0 < s["counter_coverage"] < s["coverage"], s
err = abs(s["energy_joules"] - exact)
assert err <= s["uncertainty_joules"], (s, exact)
assert abs(d["total_joules"] - exact) <= d["uncertainty_joules"], (d["total_joules"], exact)
(k,) = [k for k in c["series"] if k.get("gpu") == "0"]
assert k["method"] == "counter" and "counter_coverage" not in k, k
assert abs(k["coverage"] - s["counter_coverage"]) < 1e-9, (k, s)
assert k["energy_joules"] < 0.7 * exact, (k, exact)
print(f"auto {s['energy_joules']:.1f} J +- {s['uncertainty_joules']:.3g} (integrated, counter covers "
      f"{100 * s['counter_coverage']:.0f}%), exact {exact:.1f} J, counter alone {k['energy_joules']:.1f} J")
PY
)
check "auto over a frozen counter equals the exact energy within its bar ($msg)" test "${msg#auto }" != "$msg"
"$BIN" energy --db "$TMP/f.db" --from "$from" --to "$to" >"$TMP/f.txt" 2>/dev/null
check "the table says integrated and how much the counter covers ($(grep 'gpu 0' "$TMP/f.txt"))" \
    grep -q 'gpu 0 .* integrated .*(counter covers [0-9.]*%)' "$TMP/f.txt"

# No library at all: said once, the daemon runs its time and exits 0.
WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1 "$BIN" run -c "$TMP/w.yaml" --db "$TMP/n.db" \
    --interval 0.2 --duration 2 --listen "127.0.0.1:$(free_port)" >"$TMP/none.log" 2>&1
check "without ROCm SMI the daemon runs and exits 0" test $? -eq 0
check "and says so once, naming the override" \
    test "$(grep -c 'amd: not available: .*WATTAGE_ROCM_SMI_LIBRARY' "$TMP/none.log")" -eq 1
finish
