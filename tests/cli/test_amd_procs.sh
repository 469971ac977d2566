#!/usr/bin/env bash
# AMD processes through ROCm SMI 5.2.3's process calls (rsmi_compute_process_info_get,
# rsmi_compute_process_gpus_get) on the fake ROCm SMI (4 GPUs, processes from
# FAKE_RSMI_PROCS_FILE), in a daemon with a fake NVML (2 GPUs) beside it:
# GET /api/v1/gpus/processes lists AMD's GPUs (vendor "amd", AMD- UUIDs) after NVIDIA's; a
# wrapped command without --gpus or *_VISIBLE_DEVICES whose process comes up on AMD GPU 1 gets a
# job on amd:1 alone (the plain index 1, which NVIDIA has too, would be refused), its energy
# within 0.5 % of the fake's exact energy of GPU 1 over the job's window; a library that answers NOT_SUPPORTED
# leaves the NVIDIA list alone.
. tests/cli/lib.sh
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_rocm_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
PROCS=$TMP/procs
: >"$PROCS"
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=2
export FAKE_RSMI_T0=$t0 FAKE_RSMI_POWER=400,150,5 FAKE_RSMI_GPUS=4 FAKE_RSMI_PROCS_FILE=$PROCS
unset CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM bg "$BIN" run -c "$TMP/w.yaml" \
    --db "$TMP/w.db" --interval 0.2 --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null
jq_() { python3 -c "import json,sys; d=json.load(open('$TMP/body')); print($1)"; }

# a process of nobody's job on AMD GPU 3 (with 1 GiB of VRAM), and on AMD 0 and 1 at once
echo "3 $$ 1073741824" >>"$PROCS"
echo "0 4242" >>"$PROCS"
echo "1 4242" >>"$PROCS"
listed() {
    curl -sf "$WATTAGE_URL/api/v1/gpus/processes" -o "$TMP/body" &&
        [[ $(jq_ "[g['pids'] for g in d if g['vendor'] == 'amd' and g['gpu'] == '3'][0]") == "[$$]" ]]
}
check "GET /api/v1/gpus/processes lists the process on AMD GPU 3" wait_for 10 listed
check "NVIDIA's 2 GPUs, then AMD's 4 with their UUIDs" test "$(jq_ "[g['vendor'] for g in d] == ['nvidia'] * 2 + ['amd'] * 4 and d[2]['uuid'].startswith('AMD-') and d[0]['uuid'].startswith('GPU-')")" = True
check "a process on two AMD GPUs is listed on both" test "$(jq_ "[g['pids'] for g in d if g['vendor'] == 'amd'][:2]")" = "[[4242], [4242]]"

cat >"$TMP/work.sh" <<SH
#!/bin/sh
echo "1 \$\$" >>"$PROCS"
sleep 5
SH
chmod +x "$TMP/work.sh"
"$BIN" exec --job onamd -- bash -c "\"$TMP/work.sh\" & wait" >"$TMP/out" 2>"$TMP/err"
check "exec exits 0" test $? -eq 0
check "it says where the command runs" grep -q 'runs on GPUs \["amd:1"\]' "$TMP/err"
curl -sf "$WATTAGE_URL/api/v1/jobs/onamd" -o "$TMP/job.json"
msg=$(python3 - "$TMP/job.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
assert d["state"] == "ended" and d["gpus"] == ["amd:1"], d["gpus"]
assert [(g["vendor"], g["gpu"]) for g in d["gpu_energy"]] == [("amd", "1")], d["gpu_energy"]
exact = float(subprocess.check_output([sys.argv[2], "1", repr(d["start_s"]), repr(d["end_s"])]))
e = d["kpi"]["energy_joules"]
assert abs(e - exact) / exact < 0.005, (e, exact)
print("%.1f J, exact %.1f J" % (e, exact))
PY
)
check "the job counts AMD GPU 1 alone over its window ($msg)" grep -q 'exact' <<<"$msg"

# a library without the process calls' support: NVIDIA's list alone, said once
PORT2=$(free_port)
FAKE_RSMI_NO_PROCS=1 WATTAGE_NVML_LIBRARY=$FAKE_NVML WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM bg "$BIN" run \
    -c "$TMP/w.yaml" --db "$TMP/w2.db" --interval 0.2 --listen "127.0.0.1:$PORT2" 2>"$TMP/run2.log"
nvonly() {
    curl -sf "http://127.0.0.1:$PORT2/api/v1/gpus/processes" -o "$TMP/body" &&
        [[ $(jq_ "[g['vendor'] for g in d]") == "['nvidia', 'nvidia']" ]] &&
        grep -q 'does not list GPU processes' "$TMP/run2.log"
}
check "NOT_SUPPORTED: NVIDIA's GPUs only, and said" wait_for 10 nvonly
sleep 1.5
check "  ... once" test "$(grep -c 'does not list GPU processes' "$TMP/run2.log")" -eq 1
finish
