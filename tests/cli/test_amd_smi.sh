#!/usr/bin/env bash
# AMD GPUs through the fake AMD SMI (libamd_smi) where ROCm SMI does not load: two MI250X (four
# dies, two packages) in the wattage_gpu_* families with vendor="amd", the counter energy once
# per package, `wattage energy` over a window equal to the fake's exact energy; both libraries
# present picks ROCm SMI; an AMD SMI without a required call is said once and the daemon runs.
. tests/cli/lib.sh
B=$PWD/${WATTAGE_BUILD:-build}/tests/fakes
EXACT=$B/fake_rocm_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_NVML_LIBRARY=$TMP/no-libnvidia-ml.so.1
export WATTAGE_ROCM_SMI_LIBRARY=$TMP/no-librocm_smi64.so.1 WATTAGE_AMD_SMI_LIBRARY=$B/libamd_smi.so
printf 'store:\n  flush_interval: 500ms\n' >"$TMP/w.yaml"

t0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_RSMI_T0=$t0 FAKE_RSMI_POWER=400,150,5 FAKE_RSMI_GPUS=4 FAKE_RSMI_MI250X=1
port=$(free_port)
"$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 --duration 6 \
    --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
has_energy() { curl -s "127.0.0.1:$port/metrics" >"$TMP/m.txt" && grep -q '^wattage_gpu_energy_joules_total' "$TMP/m.txt"; }
check "the daemon serves the AMD GPUs through AMD SMI" wait_for 15 has_energy
check "it says it loaded AMD SMI ($(grep -o 'amd: .*GPUs.*' "$TMP/run.log"))" \
    grep -q "amd: 4 GPUs in 2 packages library=$B/libamd_smi.so power=none" "$TMP/run.log"
check "wattage_gpu_info carries vendor=\"amd\" and the ROCm SMI uuids for the four dies" \
    test "$(grep -c '^wattage_gpu_info{gpu="[0-3]",uuid="AMD-00c0ffee0000000[01]\(-1\)\?",model="AMD Instinct MI250X",vendor="amd",' "$TMP/m.txt")" -eq 4
check "the second dies name their package" \
    grep -q '^wattage_gpu_info{gpu="3",.*package="2"} 1' "$TMP/m.txt"
check "energy counter once per package (gpu 0 and 2)" \
    test "$(grep -c '^wattage_gpu_energy_joules_total{gpu="[02]"' "$TMP/m.txt")" -eq 2 -a \
    "$(grep -c '^wattage_gpu_energy_joules_total{' "$TMP/m.txt")" -eq 2
check "temperatures of every die in degrees (edge 40+i)" \
    grep -q '^wattage_gpu_temperature_celsius{gpu="3",.*sensor="edge"} 43$' "$TMP/m.txt"
check "caps in watts" grep -q '^wattage_gpu_power_limit_watts{gpu="1",.*} 500$' "$TMP/m.txt"
wait "$pid"
check "the daemon ran and stopped cleanly" test $? -eq 0
check "no AMD warning on a healthy fake" bash -c "! grep -q 'warn  amd' '$TMP/run.log'"

base=$(stored "$TMP/w.db" wattage_gpu_energy_joules_total | sort -t, -k1,1g | head -n 1 | cut -d, -f1)
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
for s in gpus:
    assert s["method"] == "counter", s
    exact = float(subprocess.check_output([exact_tool, s["gpu"], f, t]))
    err = abs(s["energy_joules"] - exact)
    assert err <= s["uncertainty_joules"], f"gpu {s['gpu']}: {s['energy_joules']} vs {exact}, bar {s['uncertainty_joules']}"
    assert err < 0.005 * exact, f"gpu {s['gpu']}: {s['energy_joules']} vs exact {exact}"
print("ok")
PY
)
check "per-package energy equals the fake's exact energy within its error bar ($msg)" test "$msg" = ok

# Both libraries load: ROCm SMI is chosen (its power readings are there).
WATTAGE_ROCM_SMI_LIBRARY=$B/librocm_smi64.so.1 "$BIN" run -c "$TMP/w.yaml" --db "$TMP/b.db" \
    --interval 0.2 --duration 2 --listen "127.0.0.1:$(free_port)" >"$TMP/both.log" 2>&1
check "with both the daemon exits 0" test $? -eq 0
check "and loaded ROCm SMI" grep -q "amd: 4 GPUs in 2 packages library=$B/librocm_smi64.so.1" "$TMP/both.log"
check "not AMD SMI" bash -c "! grep -q 'libamd_smi' '$TMP/both.log'"

# A ROCm SMI named that does not load is said as before, without looking for AMD SMI (here one
# that would load by its usual name, on LD_LIBRARY_PATH).
mkdir -p "$TMP/lib"
cp "$B/libamd_smi.so" "$TMP/lib/"
env -u WATTAGE_AMD_SMI_LIBRARY LD_LIBRARY_PATH="$TMP/lib" "$BIN" run -c "$TMP/w.yaml" \
    --db "$TMP/r.db" --interval 0.2 --duration 2 --listen "127.0.0.1:$(free_port)" >"$TMP/named.log" 2>&1
check "a named ROCm SMI that does not load: the daemon exits 0" test $? -eq 0
check "says so once, naming the overrides" \
    test "$(grep -c 'amd: .*no-librocm_smi64.so.1 not found.*WATTAGE_AMD_SMI_LIBRARY' "$TMP/named.log")" -eq 1
check "and did not load AMD SMI" bash -c "! grep -q 'library=libamd_smi' '$TMP/named.log'"

# An AMD SMI without amdsmi_get_processor_handles: said once, the daemon runs its time.
WATTAGE_AMD_SMI_LIBRARY=$B/nohandles/libamd_smi.so "$BIN" run -c "$TMP/w.yaml" --db "$TMP/n.db" \
    --interval 0.2 --duration 2 --listen "127.0.0.1:$(free_port)" >"$TMP/bad.log" 2>&1
check "with an unusable AMD SMI the daemon runs and exits 0" test $? -eq 0
check "and says so once, naming the call ($(grep -m1 'amd' "$TMP/bad.log"))" \
    test "$(grep -c 'amd: .*does not export amdsmi_get_processor_handles' "$TMP/bad.log")" -eq 1
finish
