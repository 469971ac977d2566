#!/usr/bin/env bash
# Folding keeps a pod's labels and its energy, through the real daemon on the fake NVML with a
# fake /proc, cgroup files and kubelet pod directories (WATTAGE_PODLOG_ROOT): two containers of
# the pod ml/train-0 (5001, 5002) and a Slurm step (5003) on GPU 0. When the pod's processes
# end, past the 2 s grace they fold into one series per pod that keeps pod_namespace and pod
# (no container, no pid); across the fold the GPU's series grow by its energy to the mJ, the
# pod's series has what its processes had, and over a stored window across the fold the pod
# has its processes' energy once.
. tests/cli/lib.sh
UID_=11112222-3333-4444-5555-666677778888
mkdir -p "$TMP/sys" "$TMP/proc/proc" "$TMP/pods/ml_train-0_$UID_" "$TMP/pods/other_x-1_0000"
fake_proc() { # pid cgroup
    mkdir -p "$TMP/proc/proc/$1"
    echo "$2" >"$TMP/proc/proc/$1/cgroup"
    echo "$1 (worker) R 1 1 1 0 -1 0 0 0 0 0 10 0 0 0 20 0 1 0 $((1000 + $1)) 1000 10" \
        >"$TMP/proc/proc/$1/stat"
}
POD="0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_//-/_}.slice"
fake_proc 5001 "$POD/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope"
fake_proc 5002 "$POD/cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope"
fake_proc 5003 '0::/system.slice/slurmstepd.scope/job_99/step_0/user/task_0'
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc WATTAGE_PODLOG_ROOT=$TMP/pods
printf 'collectors:\n  nvml:\n    attribution_grace: 2s\nstore:\n  flush_interval: 200ms\n' \
    >"$TMP/w.yaml"
printf '0 5001 sm=30\n0 5002 sm=10\n0 5003 sm=40\n' >"$TMP/procs"
export FAKE_NVML_GPUS=1 FAKE_NVML_PROCS_FILE=$TMP/procs
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
# at 1 s every tick splits: each page has the counter and the parts of the same tick
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 1 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null
G0='gpu="0",uuid="GPU-fake-0000-0"'
PODL="owner=\"kubernetes\",pod_uid=\"$UID_\",pod_namespace=\"ml\",pod=\"train-0\""
page() { # file: a page where 5001 has energy
    curl -sf "$URL/metrics" -o "$1" &&
        grep -qE "^wattage_process_gpu_energy_joules_total\{$G0,pid=\"5001\",[^}]*\} [0-9.e+-]*[1-9]" "$1"
}
check "the processes have energy" wait_for 15 page "$TMP/m1"
check "a pod's process carries pod_namespace and pod" \
    grep -qF "{$G0,pid=\"5001\",$PODL,container=\"0123456789ab\"}" "$TMP/m1"
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
T1=$(now)
sleep 2
printf '0 5003 sm=40\n' >"$TMP/procs" # the pod's two containers end
curl -sf "$URL/metrics" -o "$TMP/m_end"
folded() {
    curl -sf "$URL/metrics" -o "$TMP/m2" &&
        grep -qF "wattage_process_gpu_energy_joules_total{$G0,$PODL}" "$TMP/m2" &&
        ! grep -qE 'pid="500[12]"' "$TMP/m2"
}
check "past the grace both fold into one series of the pod, with its namespace and name" \
    wait_for 15 folded
sleep 1.5
T2=$(now)
sleep 1.5 # the store's flush
msg=$(python3 - "$TMP/m1" "$TMP/m2" <<'PY' 2>&1
import re, sys
def read(f):
    e, p = 0, {}
    for line in open(f):
        m = re.match(r'(wattage_gpu_energy_joules_total|wattage_process_gpu_energy_joules_total)\{([^}]*)\} (\S+)', line)
        if not m:
            continue
        if m.group(1) == "wattage_gpu_energy_joules_total":
            e = float(m.group(3))
        else:
            p[m.group(2)] = float(m.group(3))
    return e, p
e1, p1 = read(sys.argv[1]); e2, p2 = read(sys.argv[2])
de, dp = e2 - e1, sum(p2.values()) - sum(p1.values())
assert de > 0 and abs(de - dp) < 0.0015, ("conservation", de, dp)
pod = [v for k, v in p2.items() if 'pod="train-0"' in k]
assert len(pod) == 1, p2
before = sum(v for k, v in p1.items() if 'pod="train-0"' in k)
assert pod[0] >= before - 5e-4 and before > 0, (before, pod)
assert not [k for k in p2 if "container=" in k], p2
print("across the fold: GPU +%.3f J, series +%.3f J; the pod %.3f J" % (de, dp, pod[0]), file=sys.stderr)
PY
)
check "the GPU's series grew by its energy across the fold; the pod has its processes' ($msg)" \
    grep -q '^across the fold' <<<"$msg"
# the pod's folded series holds exactly what its processes had at the end
msg=$(python3 - "$TMP/m_end" "$TMP/m2" <<'PY' 2>&1
import re, sys
def pod(f, procs):
    s = 0
    for line in open(f):
        m = re.match(r'wattage_process_gpu_energy_joules_total\{([^}]*)\} (\S+)', line)
        if m and 'pod="train-0"' in m.group(1) and (("pid=" in m.group(1)) == procs):
            s += float(m.group(2))
    return s
a, b = pod(sys.argv[1], True), pod(sys.argv[2], False)
# the page read as they ended may miss their last split (at most a second of ~40 % of the GPU);
# the page prints mJ, and the processes' sum carries the float's rounding (461.65900000000005)
assert a > 0 and b >= a - 5e-4 and b - a < 0.5 * 700, (a, b)
PY
)
check "the folded value is at least what they had when they ended ($msg)" test -z "$msg"
curl -sf "$URL/api/v1/attribution?from=$T1&to=$T2" -o "$TMP/w.json"
msg=$(python3 - "$TMP/w.json" <<'PY' 2>&1
import json, sys
g = json.load(open(sys.argv[1]))["gpus"][0]
parts = g["idle_joules"] + sum(o["energy_joules"] for o in g["owners"])
assert abs(parts - g["attributed_joules"]) < 1e-6 and abs(parts - g["energy_joules"]) < 0.002, g
pod = [o for o in g["owners"] if o.get("pod") == "train-0"]
assert len(pod) == 1 and pod[0]["pod_namespace"] == "ml" and pod[0]["processes"] == 2, g["owners"]
procs = sum(p["energy_joules"] for p in g["processes"] if p.get("pod") == "train-0")
assert procs > 0 and abs(pod[0]["energy_joules"] - procs) < 1e-6, (pod, procs)
PY
)
check "over a window across the fold the pod has its processes' energy once ($msg)" test -z "$msg"
curl -sf "$URL/api/v1/attribution" -o "$TMP/a.json"
msg=$(python3 - "$TMP/a.json" <<'PY' 2>&1
import json, sys
g = json.load(open(sys.argv[1]))["gpus"][0]
o = [o for o in g["owners"] if o.get("pod_uid") == "11112222-3333-4444-5555-666677778888"]
assert len(o) == 1 and o[0]["pod_namespace"] == "ml" and o[0]["pod"] == "train-0" and "container" not in o[0], g
PY
)
check "GET /api/v1/attribution: the folded owner with namespace and name ($msg)" test -z "$msg"
check "no warning or error in the log" test -z "$(grep -E ' (warn|error) ' "$TMP/run.log" || true)"
finish
