#!/usr/bin/env bash
# MIG instances through the real daemon on the fake NVML: GPU 1 in MIG mode with three
# instances (gi 1 one process of 3000 MiB, gi 2 one of 1000 MiB, gi 3 none), GPU 0 not in MIG
# mode. The instances' energy series and idle grow by the parent's energy between two scrapes
# (to the mJ: the board's energy is counted once), split 3:1 by their processes' memory; GPU 0
# has no MIG series; instance 2 destroyed mid-run is said once, keeps its (frozen) counter, and
# the daemon keeps polling; the same conservation over the stored run (`wattage query`).
. tests/cli/lib.sh
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
PROCS=$TMP/procs LAYOUT=$TMP/mig
printf '1 4101 mem=3000 gi=1 sm=45\n1 4102 mem=1000 gi=2 sm=20\n0 4200 mem=2048\n' >"$PROCS"
export FAKE_NVML_GPUS=2 FAKE_NVML_MIG=1:3 FAKE_NVML_MIG_FILE=$LAYOUT FAKE_NVML_PROCS_FILE=$PROCS
# Neither GPU says per-process utilization, and GPU 1's own is not supported under MIG: the
# per-process split is by memory, as the instances' one, so the two views agree.
export FAKE_NVML_NOT_SUPPORTED=process_utilization
# GPM (as on Hopper): each GPU instance's SM activity is the sum of its processes' sm=.
export FAKE_NVML_GPM=1
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 1 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
DPID=${T_PIDS##* }
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null

scrape() { # file: a page with the split of at least one interval
    curl -sf "$URL/metrics" -o "$1" &&
        grep -q '^wattage_mig_attribution_info{gpu="1",.*method="memory"} 1' "$1"
}
check "MIG series appear" wait_for 15 scrape "$TMP/m1"
G1='gpu="1",uuid="GPU-fake-0000-1",model="NVIDIA H200"'
I1='gpu_instance="1",compute_instance="0",mig_uuid="MIG-fake-1-1"'
check "each instance's energy, with its ids and MIG UUID" \
    grep -qF "wattage_mig_energy_joules_total{$G1,$I1}" "$TMP/m1"
check "  the parent's idle part" grep -qF "wattage_mig_energy_joules_total{$G1,gpu_instance=\"idle\"}" "$TMP/m1"
check "  memory used: 64 MiB + its process's 3000 MiB" \
    grep -qF "wattage_mig_memory_used_bytes{$G1,$I1} $(((3000 + 64) << 20))" "$TMP/m1"
check "  memory total and processes" bash -c "grep -qF 'wattage_mig_memory_total_bytes{$G1,$I1} $(((143771 / 7) << 20))' '$TMP/m1' &&
    grep -qF 'wattage_mig_processes{$G1,gpu_instance=\"3\",compute_instance=\"0\",mig_uuid=\"MIG-fake-1-3\"} 0' '$TMP/m1'"
check "SM activity per GPU instance, from GPM" bash -c "grep -qF 'wattage_mig_sm_active_ratio{$G1,$I1} 0.45' '$TMP/m1' &&
    grep -qF 'wattage_mig_sm_active_ratio{$G1,gpu_instance=\"3\",compute_instance=\"0\",mig_uuid=\"MIG-fake-1-3\"} 0' '$TMP/m1'"
check "  and no other utilization is made up" bash -c "! grep -q '^wattage_mig_[a-z_]*utilization' '$TMP/m1'"
check "GPU 0, not in MIG mode, has no MIG series" bash -c "! grep -q '^wattage_mig_[a-z_]*{gpu=\"0\"' '$TMP/m1'"

curl -sf "$URL/api/v1/status" -o "$TMP/s1.json"
msg=$(python3 - "$TMP/s1.json" <<'PY' 2>&1
import json, sys
g = {x["index"]: x for x in json.load(open(sys.argv[1]))["gpus"]}
assert "mig" not in g[0], g[0]
m = g[1]["mig"]
assert m["method"] == "memory" and m["idle_energy_joules"] >= 0, m
i = {x["gpu_instance"]: x for x in m["instances"]}
assert sorted(i) == [1, 2, 3], i
assert i[1]["mig_uuid"] == "MIG-fake-1-1" and i[1]["compute_instance"] == 0, i[1]
assert i[1]["processes"] == 1 and i[3]["processes"] == 0 and i[1]["energy_joules"] > 0, i
assert abs(i[2]["sm_active_ratio"] - 0.2) < 1e-9, i[2]
assert i[1]["memory_used_bytes"] == (3000 + 64) << 20 and i[1]["memory_total_bytes"] == (143771 // 7) << 20, i[1]
PY
)
check "GET /api/v1/status: GPU 1's instances, GPU 0 without ($msg)" test -z "$msg"

# conservation between two pages, per GPU 1: instances + idle grew by the parent's energy
conserved() { # page1 page2 -> prints nothing when conserved
    python3 - "$1" "$2" <<'PY' 2>&1
import re, sys
def read(f):
    e = p = None
    m_ = {}
    for line in open(f):
        m = re.match(r'wattage_gpu_energy_joules_total\{gpu="1",[^}]*\} (\S+)', line)
        if m:
            e = float(m.group(1))
        m = re.match(r'wattage_mig_energy_joules_total\{gpu="1",[^}]*gpu_instance="(\w+)"[^}]*\} (\S+)', line)
        if m:
            m_[m.group(1)] = float(m.group(2))
    return e, m_
e1, m1 = read(sys.argv[1]); e2, m2 = read(sys.argv[2])
de, dm = e2 - e1, sum(m2.values()) - sum(m1.values())
assert de > 0 and abs(de - dm) < 0.0015, (de, dm, m1, m2)
d = {k: m2[k] - m1.get(k, 0) for k in m2}
print(repr(d), file=open(sys.argv[2] + ".d", "w"))
PY
}
sleep 3
check "a later page" wait_for 5 scrape "$TMP/m2"
check "  while its process is attributed as ever" \
    grep -q '^wattage_process_gpu_energy_joules_total{gpu="0",.*pid="4200"' "$TMP/m2"
check "the per-process series of GPU 1 say the GPU instance" \
    grep -q '^wattage_process_gpu_energy_joules_total{gpu="1",.*pid="4101",gpu_instance="1"' "$TMP/m2"
msg=$(conserved "$TMP/m1" "$TMP/m2")
check "GPU 1: instances and idle grew by the parent's energy, to the mJ ($msg)" test -z "$msg"
msg=$(python3 -c '
import sys
d = eval(open(sys.argv[1]).read())
assert d["1"] > 0 and abs(d["1"] / d["2"] - 3) < 0.01 and d["3"] == 0, d' "$TMP/m2.d" 2>&1)
check "  split 3:1 by the processes' memory, nothing to the instance without one ($msg)" test -z "$msg"

# instance 2 destroyed (and its process with it) while the daemon polls
# (each file replaced whole: the fake reads them at every call)
printf '1 1\n1 3\n' >"$LAYOUT.new" && mv "$LAYOUT.new" "$LAYOUT"
printf '1 4101 mem=3000 gi=1 sm=45\n0 4200 mem=2048\n' >"$PROCS.new" && mv "$PROCS.new" "$PROCS"
check "the destroyed instance is said" wait_for 10 grep -q 'MIG instance gone gpu=1 .*gpu_instance=2 ' "$TMP/run.log"
sleep 1.5
check "a page after" wait_for 5 scrape "$TMP/m3"
sleep 3
check "and a later one" wait_for 5 scrape "$TMP/m4"
msg=$(conserved "$TMP/m3" "$TMP/m4")
check "still conserved after it went ($msg)" test -z "$msg"
msg=$(python3 -c '
import sys
d = eval(open(sys.argv[1]).read())
assert d["2"] == 0 and d["1"] > 0, d' "$TMP/m4.d" 2>&1)
check "  its counter stays, frozen; the others go on ($msg)" test -z "$msg"
check "  its gauges are gone" bash -c "! grep -q 'wattage_mig_processes{.*gpu_instance=\"2\"' '$TMP/m4'"
curl -sf "$URL/api/v1/status" -o "$TMP/s2.json"
msg=$(python3 - "$TMP/s2.json" <<'PY' 2>&1
import json, sys
g = {x["index"]: x for x in json.load(open(sys.argv[1]))["gpus"]}
i = {x["gpu_instance"]: x for x in g[1]["mig"]["instances"]}
assert sorted(i) == [1, 2, 3] and "processes" not in i[2] and i[2]["energy_joules"] > 0, i
PY
)
check "  the status keeps its energy, without gauges ($msg)" test -z "$msg"
check "said once" test "$(grep -c 'MIG instance gone' "$TMP/run.log")" -eq 1
check "and nothing above info about MIG" bash -c "! grep -E ' (warn|error) ' '$TMP/run.log' | grep -qi 'MIG'"
check "the daemon keeps polling" kill -0 "$DPID"

sleep 1.5 # a store flush
kill -TERM "$DPID"
wait "$DPID"
check "the daemon stopped cleanly" test $? -eq 0
"$BIN" query --db "$TMP/w.db" --from -5m --csv 'wattage_gpu_energy_joules_total{gpu="1"}' \
    >"$TMP/e.csv" 2>&1
"$BIN" query --db "$TMP/w.db" --from -5m --csv 'wattage_mig_energy_joules_total{gpu="1"}' \
    >"$TMP/m.csv" 2>&1
"$BIN" query --db "$TMP/w.db" --from -5m --csv \
    'wattage_process_gpu_energy_joules_total{gpu="1",pid="4101"}' >"$TMP/p.csv" 2>&1
msg=$(python3 - "$TMP/e.csv" "$TMP/m.csv" "$TMP/p.csv" <<'PY' 2>&1
import csv, re, sys
def rows(f):
    r = list(csv.reader(open(f)))
    h = r[0]
    return [dict(zip(h, x)) for x in r[1:] if x]
e, m = rows(sys.argv[1]), rows(sys.argv[2])
tk = [k for k in e[0] if k in ("time", "t", "timestamp", "t_ns", "ts")][0]
vk = [k for k in e[0] if k == "value"][0]
sk = [k for k in m[0] if k not in (tk, vk)][0]
parent = {x[tk]: float(x[vk]) for x in e}
inst = {}
for x in m:
    inst.setdefault(x[tk], {})[re.search(r'gpu_instance="(\w+)"', x[sk]).group(1)] = float(x[vk])
# the stamps with every series present (the destroyed instance's counter keeps being written)
ts = sorted(t for t in parent if t in inst and len(inst[t]) == 4)
assert len(ts) >= 8, (len(ts), len(parent), len(inst))
a, b = ts[0], ts[-1]
de = parent[b] - parent[a]
dm = sum(inst[b].values()) - sum(inst[a].values())
assert de > 0 and abs(de - dm) < 0.0015, (a, b, de, dm)
# the process of instance 1 (its only one) got what the instance got, at every split
p = {x[tk]: float(x[vk]) for x in rows(sys.argv[3])}
pt = sorted(t for t in p if t in inst and "1" in inst[t])
assert len(pt) >= 8, (len(pt), len(p))
a, b = pt[0], pt[-1]
di, dp = inst[b]["1"] - inst[a]["1"], p[b] - p[a]
assert di > 0 and abs(di - dp) < 0.0015, (a, b, di, dp)
PY
)
check "the store: over the run, instances and idle sum to the parent's energy; the instance's process got what the instance got ($msg)" test -z "$msg"
finish
