#!/usr/bin/env bash
# GET /api/v1/attribution?from=&to=: the split over a window, from the store, through the real
# daemon on the fake NVML (2 GPUs). GPU 0 runs 4001 (Slurm job 4242) at 60 % SM and 4002 (a
# pod) at 20 %, GPU 1 runs 4002 at 50 %. Over a window before any process ends: 60/20/20 and
# 50/50 of each GPU's energy, the parts summing to the GPU's counter over the same splits (to
# the mJ), and that counter equal to the fake's exact energy. Then 4001 leaves GPU 0 and is
# folded into its job after the 2 s grace: over a window that spans the fold the job has its
# process's energy once (not again in the folded series), the parts still sum to the GPU's
# energy, and two adjoining windows add up to the one that covers both. Bad from/to: 400s
# naming the parameter.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
fake_proc() { # pid cgroup
    mkdir -p "$TMP/proc/proc/$1"
    echo "$2" >"$TMP/proc/proc/$1/cgroup"
    echo "$1 (worker) R 1 1 1 0 -1 0 0 0 0 0 10 0 0 0 20 0 1 0 $((1000 + $1)) 1000 10" \
        >"$TMP/proc/proc/$1/stat"
}
fake_proc 4001 '0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0'
fake_proc 4002 '0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod11112222_3333_4444_5555_666677778888.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope'
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'collectors:\n  nvml:\n    attribution_grace: 2s\nstore:\n  flush_interval: 200ms\n' \
    >"$TMP/w.yaml"
printf '0 4001 sm=60\n0 4002 sm=20\n1 4002 sm=50\n' >"$TMP/procs"
FAKE_NVML_T0=$(python3 -c 'import time; print(time.time())')
export FAKE_NVML_T0 FAKE_NVML_GPUS=2 FAKE_NVML_PROCS_FILE=$TMP/procs
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.5 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null
has_energy() {
    curl -sf "$URL/metrics" |
        grep -qE '^wattage_process_gpu_energy_joules_total\{gpu="0",[^}]*pid="4001"[^}]*\} [0-9.e+-]*[1-9]'
}
check "per-process series with energy" wait_for 15 has_energy
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
T1=$(now)
sleep 3
T2=$(now)
printf '0 4002 sm=20\n1 4002 sm=50\n' >"$TMP/procs" # 4001 ends
folded() {
    curl -sf "$URL/metrics" -o "$TMP/m" &&
        grep -qF 'wattage_process_gpu_energy_joules_total{gpu="0",uuid="GPU-fake-0000-0",owner="slurm",slurm_job="4242"}' "$TMP/m" &&
        ! grep -q '^wattage_process_gpu_energy_joules_total{gpu="0",[^}]*pid="4001"' "$TMP/m"
}
check "4001 is folded into its job after the grace" wait_for 15 folded
sleep 2
T3=$(now)
sleep 1.5 # the store's flush
win() { curl -s "$URL/api/v1/attribution?from=$1&to=$2" -o "$TMP/$3.json" -w '%{http_code}'; }
check "a window before the fold answers 200" test "$(win "$T1" "$T2" a)" = 200
check "one across the fold" test "$(win "$T1" "$T3" b)" = 200
check "and the one after the first" test "$(win "$T2" "$T3" c)" = 200
msg=$(python3 - "$TMP" "$(dirname "$FAKE_NVML")/fake_nvml_energy" <<'PY' 2>&1
import json, subprocess, sys
d, tool = sys.argv[1], sys.argv[2]
def load(k):
    return {g["gpu"]: g for g in json.load(open("%s/%s.json" % (d, k)))["gpus"]}
def sums(g):
    p = sum(x["energy_joules"] for x in g["processes"])
    o = sum(x["energy_joules"] for x in g["owners"])
    assert abs(g["idle_joules"] + o - g["attributed_joules"]) < 1e-6, ("owners", g)
    assert abs(g["attributed_joules"] - g["energy_joules"]) < 0.002, ("conservation", g)
    return p, o
out = []
a, b, c = load("a"), load("b"), load("c")
assert set(a) == {"0", "1"}, a.keys()
for g in a.values():
    sums(g)
    exact = float(subprocess.check_output([tool, g["gpu"], str(g["from"]), str(g["to"])]))
    assert g["to"] - g["from"] > 2 and abs(g["energy_joules"] - exact) < 0.005 * exact, (g, exact)
p = {x["pid"]: x for x in a["0"]["processes"]}
e = a["0"]["energy_joules"]
sh = (p[4001]["energy_joules"] / e, p[4002]["energy_joules"] / e, a["0"]["idle_joules"] / e)
assert abs(sh[0] - 0.6) < 0.02 and abs(sh[1] - 0.2) < 0.02 and abs(sh[2] - 0.2) < 0.02, sh
assert p[4001]["owner"] == "slurm" and p[4001]["slurm_job"] == "4242" and p[4001]["slurm_step"] == "0", p
assert p[4002]["pod_uid"] == "11112222-3333-4444-5555-666677778888", p
g1 = {x["pid"]: x["energy_joules"] for x in a["1"]["processes"]}
assert set(g1) == {4002} and abs(g1[4002] / a["1"]["energy_joules"] - 0.5) < 0.02, a["1"]
out.append("before the fold: 4001 %.3f 4002 %.3f idle %.3f of %.1f J" % (sh + (e,)))
# across the fold: the job has what its process had, once
g = b["0"]
sums(g)
job = [o for o in g["owners"] if o.get("slurm_job") == "4242"]
proc = [x for x in g["processes"] if x["pid"] == 4001]
assert len(job) == 1 and len(proc) == 1 and job[0]["processes"] == 1, g
assert abs(job[0]["energy_joules"] - proc[0]["energy_joules"]) < 1e-6, (job, proc)
assert job[0]["energy_joules"] < 0.62 * g["energy_joules"], (job, g["energy_joules"])
out.append("across it: job 4242 %.1f J = its process's, GPU %.1f J" % (job[0]["energy_joules"], g["energy_joules"]))
# two windows that meet add up to the one over both
for k in ("0", "1"):
    assert abs(a[k]["to"] - c[k]["from"]) < 1e-6 and abs(a[k]["from"] - b[k]["from"]) < 1e-6, (a[k], c[k])
    for f in ("attributed_joules", "idle_joules", "energy_joules"):
        assert abs(a[k][f] + c[k][f] - b[k][f]) < 1e-6, (k, f, a[k][f], c[k][f], b[k][f])
print("; ".join(out))
PY
)
check "windows: shares, conservation, the fold counted once, additivity ($msg)" \
    grep -q '^before the fold' <<<"$msg"
bad() { # query field: a 400 whose body names the field
    local code
    code=$(curl -s "$URL/api/v1/attribution?$1" -o "$TMP/bad.json" -w '%{http_code}')
    [[ $code == 400 ]] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["field"] == sys.argv[2] and d["error"].startswith(sys.argv[2] + ":") else 1)' "$TMP/bad.json" "$2"
}
check "from=yesterday is a 400 naming from" bad "from=yesterday" from
check "to=12:00 is a 400 naming to" bad "to=12:00" to
check "to before from is a 400 naming to" bad "from=$T3&to=$T1" to
check "a window over 31 days is a 400 naming from" bad "from=-40d" from
check "no warning or error in the log" test -z "$(grep -E ' (warn|error) ' "$TMP/run.log" || true)"
finish
