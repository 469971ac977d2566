#!/usr/bin/env bash
# Attribution through the real daemon on the fake NVML (8 GPUs), a fake /proc and a fake RAPL
# tree: each GPU's energy split over its processes (GPU 0 by per-process SM utilization, 3:1
# and 20 % idle; GPU 1 lists a process that ran no kernel: all idle), conserved over the window
# between two scrapes to the mJ on every GPU; owners in the labels; no process on a GPU it did
# not use; a finished process folded into its Slurm job after collectors.nvml.attribution_grace;
# GET /api/v1/attribution and the "attribution" member of GET /api/v1/gpus/processes; the CPU
# packages' energy split by CPU time, conserved.
. tests/cli/lib.sh
# The host's files are snapshots swapped in whole (a link renamed over $TMP/cur), so that the
# daemon never reads CPU times of one moment beside RAPL counters or /proc/stat of another.
export WATTAGE_SYSFS_ROOT=$TMP/cur WATTAGE_PROCFS_ROOT=$TMP/cur/proc
printf 'collectors:\n  nvml:\n    attribution_grace: 2s\nstore:\n  flush_interval: 200ms\n' \
    >"$TMP/w.yaml"
PROCS=$TMP/procs
SLURM='0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0'
POD='0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod11112222_3333_4444_5555_666677778888.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope'
fake_proc() { # root pid cgroup ticks: a process with CPU time (utime) and a start time
    mkdir -p "$1/proc/proc/$2"
    echo "$3" >"$1/proc/proc/$2/cgroup"
    echo "$2 (worker) R 1 1 1 0 -1 0 0 0 0 0 $4 0 0 0 20 0 1 0 $((1000 + $2)) 1000 10" \
        >"$1/proc/proc/$2/stat"
}
tick() { # snapshot k: 4001 used 30 of every 100 CPU ticks, 4002 10; RAPL +7 J per package
    local k=$1 d=$TMP/s$1
    mkdir -p "$d/proc/proc"
    cp -r tests/fixtures/sysfs-2pkg/sys "$d/"
    fake_proc "$d" 4001 "$SLURM" $((k * 30))
    fake_proc "$d" 4002 "$POD" $((k * 10))
    printf 'cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 %d 0 0 %d 0 0 0 0 0 0\n' $((k * 50)) $((k * 50)) \
        $((k * 50)) $((k * 50)) >"$d/proc/proc/stat"
    printf 'MemTotal: 1000 kB\nMemAvailable: 500 kB\n' >"$d/proc/proc/meminfo"
    for z in intel-rapl:0 intel-rapl:1; do
        echo $((123456789012 + k * 7000000)) >"$d/sys/class/powercap/$z/energy_uj"
    done
    ln -sfn "$d" "$TMP/cur.new" && mv -T "$TMP/cur.new" "$TMP/cur"
    rm -rf "$TMP/s$((k - 5))"
}
tick 1
( k=2; while :; do sleep 0.2; tick $k; k=$((k + 1)); done ) &
T_PIDS="$T_PIDS $!"
printf '0 4001 sm=60\n0 4002 graphics sm=20\n1 4001 mem=2048\n' >"$PROCS"
export FAKE_NVML_GPUS=8 FAKE_NVML_PROCS_FILE=$PROCS
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 1 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null

# one scrape: per GPU, the counter (J) and the sum of its process series, from the same tick
# (at --interval 1 every tick splits; under a second a page has the last split's figures, and
# conservation is checked over stored windows: test_attrib_interval.sh)
scrape() { # file
    curl -sf "$URL/metrics" -o "$1" && grep -q '^wattage_process_gpu_energy_joules_total{gpu="0",.*pid="4001"' "$1"
}
check "per-process series appear" wait_for 10 scrape "$TMP/m1"
G0='gpu="0",uuid="GPU-fake-0000-0"'
S1='pid="4001",owner="slurm",slurm_job="4242",slurm_step="0"'
S2='pid="4002",owner="kubernetes",pod_uid="11112222-3333-4444-5555-666677778888",container="0123456789ab"'
check "GPU 0: the Slurm step's process, with its labels" grep -qF "{$G0,$S1}" "$TMP/m1"
check "  and the pod's container, 12 characters of its id" grep -qF "{$G0,$S2}" "$TMP/m1"
check "  the method of each GPU" grep -qF "wattage_gpu_attribution_info{$G0,method=\"utilization\"} 1" "$TMP/m1"
sleep 2.2
check "a later scrape" wait_for 5 scrape "$TMP/m2"
msg=$(python3 - "$TMP/m1" "$TMP/m2" <<'PY' 2>&1
import re, sys
def read(f):
    e, p = {}, {}
    for line in open(f):
        m = re.match(r'(wattage_gpu_energy_joules_total|wattage_process_gpu_energy_joules_total)\{gpu="(\d+)"[^}]*\} (\S+)', line)
        if m:
            d = e if m.group(1) == "wattage_gpu_energy_joules_total" else p
            d[m.group(2)] = d.get(m.group(2), 0) + float(m.group(3))
    return e, p
e1, p1 = read(sys.argv[1]); e2, p2 = read(sys.argv[2])
assert len(e1) == 8 and set(p1) == set(e1), (e1, p1)
for g in e1:
    de, dp = e2[g] - e1[g], p2[g] - p1[g]
    assert de > 0 and abs(de - dp) < 0.0015, (g, de, dp)
PY
)
check "every GPU: its parts grew by its energy between the scrapes, to the mJ ($msg)" test -z "$msg"
msg=$(python3 - "$TMP/m2" <<'PY' 2>&1
import re, sys
v = {}
for line in open(sys.argv[1]):
    m = re.match(r'wattage_process_gpu_energy_joules_total\{(gpu="\d")[^}]*?(pid="\d+"|owner="idle")[^}]*\} (\S+)', line)
    if m:
        v[(m.group(1), m.group(2))] = float(m.group(3))
a, b, i = v[('gpu="0"', 'pid="4001"')], v[('gpu="0"', 'pid="4002"')], v[('gpu="0"', 'owner="idle"')]
assert abs(a / b - 3) < 0.02 and abs(i / (a + b + i) - 0.2) < 0.02, (a, b, i)
# GPU 1 lists 4001 without a utilization sample: it ran no kernel, all idle; nobody else on GPU 1
assert v[('gpu="1"', 'pid="4001"')] == 0, v
assert not any(g == 'gpu="1"' and p == 'pid="4002"' for g, p in v), v
assert not any(g not in ('gpu="0"', 'gpu="1"') and p.startswith('pid') for g, p in v), v
PY
)
check "GPU 0 split 3:1 by SM utilization, 20 % idle; no process on a GPU it did not use ($msg)" test -z "$msg"

# the API
curl -sf "$URL/api/v1/attribution" -o "$TMP/a.json"
msg=$(python3 - "$TMP/a.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
g = {x["gpu"]: x for x in d["gpus"]}
assert len(g) == 8 and g["0"]["uuid"] == "GPU-fake-0000-0" and g["0"]["method"] == "utilization", g.keys()
for x in g.values():
    s = x["idle_joules"] + sum(p["energy_joules"] for p in x["processes"] + x["owners"])
    assert abs(s - x["energy_joules"]) < 1e-6, x
p = {p["pid"]: p for p in g["0"]["processes"]}
assert p[4001]["owner"] == "slurm" and p[4001]["slurm_job"] == "4242" and p[4001]["running"], p
assert p[4002]["pod_uid"] == "11112222-3333-4444-5555-666677778888" and p[4002]["start_ticks"] == 5002, p
c = d["cpu"]
assert c and c["method"] == "utilization" and c["energy_joules"] > 0, c
s = c["idle_joules"] + sum(p["energy_joules"] for p in c["processes"] + c["owners"])
assert abs(s - c["energy_joules"]) < 1e-6, c
cp = {p["pid"]: p["energy_joules"] for p in c["processes"]}
# per tick 4001 uses 30 of 100 CPU ticks, 4002 10: 3:1 (the ticks race the reads by a tick)
assert cp[4001] > 0 and 2 < cp[4001] / cp[4002] < 4.5, cp
PY
)
check "GET /api/v1/attribution: every GPU and the CPU sum up, with owners ($msg)" test -z "$msg"
curl -sf "$URL/api/v1/gpus/processes" -o "$TMP/p.json"
msg=$(python3 - "$TMP/p.json" <<'PY' 2>&1
import json, sys
d = {g["gpu"]: g for g in json.load(open(sys.argv[1]))}
assert d["0"]["pids"] == [4001, 4002] and d["0"]["processes"][0]["owner"] == "slurm", d["0"]
a = d["0"]["attribution"]
assert a["method"] == "utilization" and {p["pid"] for p in a["processes"]} == {4001, 4002}, a
PY
)
check "GET /api/v1/gpus/processes: each GPU's attribution beside its list ($msg)" test -z "$msg"
grep -q '^wattage_process_cpu_energy_joules_total{pid="4001",owner="slurm"' "$TMP/m2"
check "CPU energy per process on /metrics" test $? -eq 0
# the same over a window from the store: the CPU's parts sum up, 4001 and 4002 about 3:1
curl -sf "$URL/api/v1/attribution?from=-4s" -o "$TMP/w.json"
msg=$(python3 - "$TMP/w.json" <<'PY' 2>&1
import json, sys
c = json.load(open(sys.argv[1]))["cpu"]
# at least one whole 1-s tick: the window runs from the first stored split after -4s to the last
# one stored, so how many ticks it holds depends on how late a loaded machine flushed them (two
# ticks stamped a few ms after their seconds spanned 1.995 s in a clean-clone run)
assert c and c["to"] - c["from"] >= 0.9, c
s = c["idle_joules"] + sum(o["energy_joules"] for o in c["owners"])
assert abs(s - c["attributed_joules"]) < 1e-6 and c["attributed_joules"] > 0, c
p = {x["pid"]: x["energy_joules"] for x in c["processes"]}
assert p[4001] > 0 and 2 < p[4001] / p[4002] < 4.5, p
PY
)
check "GET /api/v1/attribution?from=-4s: the CPU's split over the window ($msg)" test -z "$msg"

# 4001 leaves GPU 0: past the 2 s grace it is folded into its job, nothing lost
printf '0 4002 graphics sm=20\n1 4001 mem=2048\n' >"$PROCS"
folded() {
    curl -sf "$URL/metrics" -o "$TMP/m3" &&
        grep -qF "wattage_process_gpu_energy_joules_total{$G0,owner=\"slurm\",slurm_job=\"4242\"}" "$TMP/m3" &&
        ! grep -qF "{$G0,$S1}" "$TMP/m3"
}
check "a finished process joins its Slurm job's series after the grace period" wait_for 10 folded
msg=$(python3 - "$TMP/m2" "$TMP/m3" <<'PY' 2>&1
import re, sys
def val(f, pat):
    for line in open(f):
        if line.startswith("wattage_process_gpu_energy_joules_total{" + pat + "}"):
            return float(line.rsplit(" ", 1)[1])
before = val(sys.argv[1], 'gpu="0",uuid="GPU-fake-0000-0",pid="4001",owner="slurm",slurm_job="4242",slurm_step="0"')
after = val(sys.argv[2], 'gpu="0",uuid="GPU-fake-0000-0",owner="slurm",slurm_job="4242"')
assert after >= before > 0, (before, after)
PY
)
check "  with at least the energy it had ($msg)" test -z "$msg"
check "no warning or error in the log" test -z "$(grep -E ' (warn|error) ' "$TMP/run.log" | grep -v 'TLS\|token\|persistence' || true)"
finish
