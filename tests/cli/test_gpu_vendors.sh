#!/usr/bin/env bash
# A node with both vendors: the fake NVML (2 GPUs) and the fake ROCm SMI (2 GPUs) in one daemon.
# Both number their GPUs from 0: every wattage_gpu_* series stays unique (uuid), the info series
# tell the vendors apart; a job's plain index that both vendors have is refused with the way out
# (nvidia:N, amd:N); `wattage exec` takes NVIDIA GPUs from CUDA_VISIBLE_DEVICES and AMD ones from
# ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, and the job counts those GPUs only.
. tests/cli/lib.sh
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=2
export FAKE_RSMI_T0=$t0 FAKE_RSMI_POWER=400,150,5 FAKE_RSMI_GPUS=2
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM bg "$BIN" run -c "$TMP/w.yaml" \
    --db "$TMP/w.db" --interval 0.2 --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
four() { curl -sf "$WATTAGE_URL/metrics" >"$TMP/m.txt" && test "$(grep -c '^wattage_gpu_up{' "$TMP/m.txt")" -eq 4; }
check "the daemon serves both vendors' GPUs" wait_for 15 four
check "two GPUs say gpu=\"0\", one of each vendor" test \
    "$(grep '^wattage_gpu_info{gpu="0",' "$TMP/m.txt" | grep -c 'vendor="nvidia"')" -eq 1 -a \
    "$(grep '^wattage_gpu_info{gpu="0",' "$TMP/m.txt" | grep -c 'vendor="amd"')" -eq 1
dups=$(grep '^wattage_gpu_' "$TMP/m.txt" | sed 's/ [^ ]*$//' | sort | uniq -d | head -3)
check "every wattage_gpu_* series is unique ($dups)" test -z "$dups"
check "four power series" test "$(grep -c '^wattage_gpu_power_watts{' "$TMP/m.txt")" -eq 4

"$BIN" job start both0 --gpus 0 -c "$TMP/w.yaml" >"$TMP/amb.out" 2>"$TMP/amb.err"
check "a plain index both vendors have is refused" test $? -ne 0
check "  ... saying how to name it" grep -q 'say nvidia:0 or amd:0' "$TMP/amb.err"
"$BIN" job start nope --gpus amd:7 -c "$TMP/w.yaml" >/dev/null 2>"$TMP/nope.err"
check "amd:7 is no GPU of this node" grep -q 'no GPU amd:7 on this node' "$TMP/nope.err"

job() { # NAME ENV...: runs `wattage exec` on a 1.2-s command with the environment given
    local name=$1
    shift
    env "$@" "$BIN" exec -c "$TMP/w.yaml" --job "$name" --quiet -- sleep 1.2 2>"$TMP/$name.err"
    "$BIN" job show "$name" --json -c "$TMP/w.yaml" >"$TMP/$name.json"
}
gpus_of() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join(d['gpus']), '|', ' '.join(sorted(g['vendor']+':'+g['gpu'] for g in d['gpu_energy'])))" "$1"; }
job rocr ROCR_VISIBLE_DEVICES=1
check "ROCR_VISIBLE_DEVICES=1 is AMD GPU 1, and the job counts it alone ($(gpus_of "$TMP/rocr.json"))" \
    test "$(gpus_of "$TMP/rocr.json")" = "amd:1 | amd:1"
job cuda CUDA_VISIBLE_DEVICES=0
check "CUDA_VISIBLE_DEVICES=0 is NVIDIA GPU 0 ($(gpus_of "$TMP/cuda.json"))" \
    test "$(gpus_of "$TMP/cuda.json")" = "nvidia:0 | nvidia:0"
job hip CUDA_VISIBLE_DEVICES=1 ROCR_VISIBLE_DEVICES=1,0 HIP_VISIBLE_DEVICES=1
check "HIP_VISIBLE_DEVICES indexes ROCR's list: NVIDIA 1 and AMD 0 ($(gpus_of "$TMP/hip.json"))" \
    test "$(gpus_of "$TMP/hip.json")" = "nvidia:1 amd:0 | amd:0 nvidia:1"
python3 - "$TMP/hip.json" <<'PY' >"$TMP/hip.chk" 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
g = {x["vendor"]: x for x in d["gpu_energy"]}
assert g["amd"]["uuid"].startswith("AMD-") and g["nvidia"]["uuid"].startswith("GPU-"), g
assert all(x["energy_joules"] > 0 for x in d["gpu_energy"]), d["gpu_energy"]
print("ok")
PY
check "each counted GPU is the vendor's own, with energy ($(cat "$TMP/hip.chk"))" test "$(cat "$TMP/hip.chk")" = ok
finish
