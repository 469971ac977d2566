#!/usr/bin/env bash
# The GPUs of `wattage exec` from NVML's process list, against the real daemon on the fake NVML
# (8 GPUs, processes from FAKE_NVML_PROCS_FILE): GET /api/v1/gpus/processes lists them per GPU;
# without --gpus and CUDA_VISIBLE_DEVICES a wrapped command whose grandchild comes up on GPU 3,
# then on GPU 5, gets a job on exactly those once the set is stable (energy within 0.5% of the
# fake's exact energy of GPUs 3+5 over the job's window), a process outside its tree does not
# count; a short command gets the GPUs last seen; a command on no GPU keeps every GPU;
# POST /api/v1/jobs/{id}/gpus only for a running job without GPUs, bad bodies named.
. tests/cli/lib.sh
EXACT=${WATTAGE_BUILD:-build}/tests/fakes/fake_nvml_energy
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
t0=$(python3 -c 'import time; print(round(time.time(), 3))')
PROCS=$TMP/procs
: >"$PROCS"
export FAKE_NVML_T0=$t0 FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=8 FAKE_NVML_PROCS_FILE=$PROCS
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null
unset CUDA_VISIBLE_DEVICES

api() {
    local args=(-s -o "$TMP/body" -w '%{http_code}' -X "$1")
    [[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
    curl "${args[@]}" "$WATTAGE_URL$2"
}
jq_() { python3 -c "import json,sys; d=json.load(open('$TMP/body')); print($1)"; }

# a process of nobody's job on GPU 6: its pid is this shell's, outside any wrapped tree
echo "6 $$" >>"$PROCS"
listed() { api GET /api/v1/gpus/processes >/dev/null && [[ $(jq_ "[g['pids'] for g in d if g['gpu'] == '6'][0]") == "[$$]" ]]; }
check "GET /api/v1/gpus/processes lists the process on GPU 6" wait_for 5 listed
check "one entry per GPU with its UUID" test "$(jq_ "len(d) == 8 and d[3]['uuid'] == 'GPU-fake-0000-3' and d[0]['pids'] == []")" = True
# Who owns it, from its cgroup under the procfs root: a Slurm step's task, then (the file
# rewritten) a Kubernetes pod's container; a pid whose cgroup cannot be read has no owner.
mkdir -p "$TMP/proc/proc/$$"
echo '0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0' >"$TMP/proc/proc/$$/cgroup"
api GET /api/v1/gpus/processes >/dev/null
check "the process is a Slurm job's, with its step" test "$(jq_ "[g['processes'] for g in d if g['gpu'] == '6'][0]")" \
    = "[{'pid': $$, 'owner': 'slurm', 'slurm_job': '4242', 'slurm_step': '0', 'unit': 'slurmstepd.scope'}]"
cid=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
echo "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod11112222_3333_4444_5555_666677778888.slice/cri-containerd-$cid.scope" \
    >"$TMP/proc/proc/$$/cgroup"
api GET /api/v1/gpus/processes >/dev/null
check "  then a Kubernetes pod's container" test "$(jq_ "[(p['owner'], p['pod_uid'], p['pod_qos'], p['container']) for g in d if g['gpu'] == '6' for p in g['processes']]")" \
    = "[('kubernetes', '11112222-3333-4444-5555-666677778888', 'burstable', '$cid')]"
rm "$TMP/proc/proc/$$/cgroup"
api GET /api/v1/gpus/processes >/dev/null
check "  and no owner once its cgroup is gone" test "$(jq_ "[g['processes'] for g in d if g['gpu'] == '6'][0]")" = "[{'pid': $$}]"

# the wrapped command's grandchild registers itself on GPU 3, 1.5 s later on GPU 5 (as a
# launcher's workers come up one after another), then works 5 s more
cat >"$TMP/work.sh" <<SH
#!/bin/sh
echo "3 \$\$" >>"$PROCS"
sleep 1.5
echo "5 \$\$ graphics" >>"$PROCS"
sleep 5
SH
chmod +x "$TMP/work.sh"
"$BIN" exec --job detect -- bash -c "\"$TMP/work.sh\" & wait" >"$TMP/out" 2>"$TMP/err"
check "exec exits 0" test $? -eq 0
check "it says where the command runs" grep -q 'runs on GPUs \["3","5"\]' "$TMP/err"
api GET /api/v1/jobs/detect >/dev/null
cp "$TMP/body" "$TMP/detect.json"
msg=$(python3 - "$TMP/detect.json" "$EXACT" <<'PY' 2>&1
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
ex = lambda g, f, t: float(subprocess.check_output([sys.argv[2], str(g), repr(f), repr(t)]))
assert d["state"] == "ended" and d["gpus"] == ["3", "5"], d
k = d["kpi"]
exact = ex(3, d["start_s"], d["end_s"]) + ex(5, d["start_s"], d["end_s"])
assert abs(k["energy_joules"] - exact) / exact < 0.005, (k, exact)
assert sorted(g["gpu"] for g in d["gpu_energy"]) == ["3", "5"], d["gpu_energy"]
PY
)
check "the job counts GPUs 3 and 5 over its whole window ($msg)" test -z "$msg"

cat >"$TMP/short.sh" <<SH
#!/bin/sh
echo "7 \$\$" >>"$PROCS"
sleep 2.2
SH
chmod +x "$TMP/short.sh"
"$BIN" exec --job short -- "$TMP/short.sh" >"$TMP/out3" 2>"$TMP/err3"
check "a short command runs" test $? -eq 0
api GET /api/v1/jobs/short >/dev/null
check "it ended before its GPUs were stable: the last seen count ($(jq_ "d['gpus']"))" \
    test "$(jq_ "d['gpus']")" = "['7']"

"$BIN" exec --job nowhere -- sleep 2.5 >"$TMP/out2" 2>"$TMP/err2"
check "a command on no GPU runs" test $? -eq 0
api GET /api/v1/jobs/nowhere >/dev/null
check "its job keeps every GPU" test "$(jq_ "d['gpus'] == [] and len(d['gpu_energy']) == 8")" = True
check "and nothing was said about GPUs" test "$(grep -c 'runs on GPUs' "$TMP/err2")" -eq 0

# the API itself
c=$(api POST /api/v1/jobs '{"name": "manual"}')
ID=$(jq_ "d['id']")
c=$(api POST "/api/v1/jobs/$ID/gpus" '{"gpus": []}')
check "an empty list is a 400 naming gpus" test "$c:$(jq_ "d['field']")" = 400:gpus
c=$(api POST "/api/v1/jobs/$ID/gpus" '{"gpus": [99]}')
check "an unknown GPU is a 400 naming it" test "$c:$(jq_ "d['field']")" = "400:gpus[0]"
c=$(api POST "/api/v1/jobs/$ID/gpus" '{"gpus": [1], "x": 1}')
check "an unknown field is a 400 naming it" test "$c:$(jq_ "d['field']")" = 400:x
c=$(api GET "/api/v1/jobs/$ID")
check "nothing changed" test "$(jq_ "d['gpus']")" = "[]"
c=$(api POST "/api/v1/jobs/$ID/gpus" '{"gpus": [1, "GPU-fake-0000-2"]}')
check "a running job without GPUs takes them" test "$c:$(jq_ "d['gpus']")" = "200:['1', 'GPU-fake-0000-2']"
c=$(api POST "/api/v1/jobs/$ID/gpus" '{"gpus": [4]}')
check "a second time is a 409" test "$c" = 409
c=$(api POST "/api/v1/jobs/$ID/end")
c=$(api POST /api/v1/jobs '{"name": "ended"}')
E=$(jq_ "d['id']")
c=$(api POST "/api/v1/jobs/$E/end")
c=$(api POST "/api/v1/jobs/$E/gpus" '{"gpus": [1]}')
check "an ended job is a 409" test "$c" = 409
c=$(api POST "/api/v1/jobs/424242/gpus" '{"gpus": [1]}')
check "an unknown job is a 404" test "$c" = 404
finish
