#!/usr/bin/env bash
# The Python client (clients/python/wattage_client.py) takes a block's GPUs from the environment
# as `wattage exec` does: CUDA_VISIBLE_DEVICES for NVIDIA's, ROCR_VISIBLE_DEVICES and
# HIP_VISIBLE_DEVICES (indices into what ROCR leaves) for AMD's. Against a daemon with the fake
# NVML and the fake ROCm SMI (2 GPUs each), measure() counts the AMD GPU ROCR names and no other;
# the in-process NVML path says an AMD-only selection is not its to measure.
. tests/cli/lib.sh
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
export PYTHONPATH=$PWD/clients/python
unset CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES

sel() { # ENV...: the GPUs the client selects with that environment, comma-separated
    env "$@" python3 -c 'import wattage_client as wc; print(",".join(wc._selected_gpus(None) or ["all"]))'
}
check "nothing set: every GPU" test "$(sel)" = all
check "CUDA indices are NVIDIA's" test "$(sel CUDA_VISIBLE_DEVICES=0,2)" = nvidia:0,nvidia:2
check "ROCR indices are AMD's" test "$(sel ROCR_VISIBLE_DEVICES=1,3)" = amd:1,amd:3
check "a ROCR UUID is wattage's AMD-<id>" test "$(sel ROCR_VISIBLE_DEVICES=GPU-abc123,0)" = AMD-abc123,amd:0
check "HIP indexes into what ROCR leaves" test "$(sel ROCR_VISIBLE_DEVICES=2,3 HIP_VISIBLE_DEVICES=1)" = amd:3
check "HIP alone indexes every AMD GPU" test "$(sel HIP_VISIBLE_DEVICES=0)" = amd:0
check "HIP past ROCR's list names nothing" test "$(sel ROCR_VISIBLE_DEVICES=2 HIP_VISIBLE_DEVICES=1)" = all
check "both vendors at once" test "$(sel CUDA_VISIBLE_DEVICES=1 ROCR_VISIBLE_DEVICES=0)" = nvidia:1,amd:0
check "an explicit list wins over the environment" test "$(ROCR_VISIBLE_DEVICES=1 python3 -c \
    'import wattage_client as wc; print(",".join(wc._selected_gpus("nvidia:1")))')" = nvidia:1
check "MIG instances are not GPUs" test "$(sel CUDA_VISIBLE_DEVICES=MIG-x ROCR_VISIBLE_DEVICES=1)" = amd:1

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
four() { curl -sf "$WATTAGE_URL/metrics" | grep -c '^wattage_gpu_up{' | grep -qx 4; }
check "the daemon serves both vendors' GPUs" wait_for 15 four
cat >"$TMP/m.py" <<'PY'
import json, sys, time
import wattage_client as wc
with wc.measure(sys.argv[1], mode=sys.argv[2]) as m:
    time.sleep(1.0)
print(json.dumps(m.result.as_dict()))
PY
ROCR_VISIBLE_DEVICES=1 python3 "$TMP/m.py" rocr1 daemon >"$TMP/r.json" 2>"$TMP/r.err"
msg=$(python3 - "$TMP/r.json" "$TMP/w.yaml" "$BIN" <<'PY' 2>&1
import json, subprocess, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r["source"] == "daemon" and not r["error"], r
assert len(r["gpus"]) == 1 and r["gpus"][0]["uuid"].startswith("AMD-"), r["gpus"]
j = json.loads(subprocess.check_output([sys.argv[3], "job", "show", "rocr1", "--json", "-c", sys.argv[2]]))
assert [g["vendor"] + ":" + str(g["gpu"]) for g in j["gpu_energy"]] == ["amd:1"], j["gpu_energy"]
# the fake's AMD GPU 1 draws about 400 W (150 W swing): a second's block is 250..550 J
assert 250 < r["energy_j"] / r["duration_s"] < 550, r
print("ok")
PY
)
check "ROCR_VISIBLE_DEVICES=1: the block counts AMD GPU 1 only ($msg)" test "$msg" = ok
ROCR_VISIBLE_DEVICES=0 WATTAGE_NVML_LIBRARY=$FAKE_NVML python3 "$TMP/m.py" rocr0 nvml >"$TMP/n.json" 2>/dev/null
check "the NVML path does not count an AMD selection as NVIDIA's GPU 0" python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r["energy_j"] is None and "none of the GPUs amd:0" in r["error"], r
' "$TMP/n.json"
finish
