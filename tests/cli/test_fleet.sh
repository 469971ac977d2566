#!/usr/bin/env bash
# The fleet read path against real engines on loopback: three daemons as three nodes (own node
# names, own fake NVML power, own stores) remote-write into Prometheus 2.42 and VictoriaMetrics;
# one job started with the same name on all three, with two epochs. The job's energy from each
# engine (`wattage job show --source`), and its phases, equal the sum of the three nodes' own
# figures within 0.1 %; so do `wattage energy --source` over a window against the three stores
# and the job's profile that `wattage schedule --like JOB --source` plans with. node-1 also reads
# the site's facility meter (a Modbus energy counter, tests/peers/modbus_meter, at 2 kW): the
# fleet's PUE from the engines (`wattage kpi --source`) is that meter over the three nodes' IT
# energy, and its CUE weighs a carbon intensity stepping in the middle of the window by that IT
# energy (the local store's carbon table, or `--carbon FILE`), both equal to the local figures
# within 0.1 %, with the coverage of every input; a window beginning before the daemons says so
# in its coverage, as locally.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"
source "$(dirname "$0")/prometheus_lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
for tool in "$PROMETHEUS" "$VM"; do
    if ! command -v "$tool" >/dev/null; then
        skip "the fleet read path" "$tool is not installed (scripts/deps.sh --test)"
        finish
    fi
done
PEER=$(dirname "$BIN")/tests/peers/modbus_meter
[[ -x $PEER ]] || { not_ok "the peer $PEER is built"; finish; }
mkdir -p "$TMP/empty" "$TMP/prom"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

PPORT=$(free_port)
VPORT=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' >"$TMP/prom/prometheus.yml"
bg "$PROMETHEUS" --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
    --web.listen-address="127.0.0.1:$PPORT" --web.enable-remote-write-receiver \
    --log.level=warn 2>>"$TMP/prom.log"
# no result cache: the test asks again while samples still arrive
bg "$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
    -search.disableCache -loggerLevel=ERROR 2>>"$TMP/vm.log"
check "Prometheus starts" wait_for 30 curl -sf "http://127.0.0.1:$PPORT/-/ready" -o /dev/null
check "VictoriaMetrics starts" wait_for 30 curl -sf "http://127.0.0.1:$VPORT/health" -o /dev/null

endpoints="  - url: http://127.0.0.1:$PPORT/api/v1/write
    name: prom
    deadline: 0.5s
  - url: http://127.0.0.1:$VPORT/api/v1/write
    name: vm
    deadline: 0.5s"
# The facility meter: an energy counter in joules that a writer advances at FAC_W (a new
# register file moved into place every 0.2 s; the peer reads it again when it changes).
FAC_W=2000
t_early=$($PY -c 'import time; print(f"{time.time() - 20:.3f}")')
$PY - "$TMP/fac.regs" "$FAC_W" <<'PY' &
import os, sys, time
path, watts = sys.argv[1], float(sys.argv[2])
t0 = time.time()
while True:
    e = int(1e9 + watts * (time.time() - t0))
    with open(path + ".new", "w") as f:
        f.write(f"input 0 u64 big {e}\n")
    os.replace(path + ".new", path)
    time.sleep(0.2)
PY
T_PIDS="$T_PIDS $!"
wait_for 5 test -s "$TMP/fac.regs"
bg "$PEER" "$TMP/fac.port" "$TMP/fac.regs"
wait_for 10 test -s "$TMP/fac.port" || { not_ok "the facility meter starts"; finish; }
facility_yaml="collectors:
  modbus:
    interval: 250ms
    targets:
      - name: main
        address: 127.0.0.1:$(cat "$TMP/fac.port")
        registers:
          - {name: total, address: 0, function: input, type: u64, unit: J, metric: energy}"

PORTS=()
powers=(300,120,5 200,60,3 150,40,0)
for i in 1 2 3; do
    rw_config "$TMP/n$i.yaml" "node-$i" "$endpoints"
    [[ $i == 1 ]] && printf '%s\n' "$facility_yaml" >>"$TMP/n$i.yaml"
    port=$(free_port)
    PORTS+=("$port")
    FAKE_NVML_POWER=${powers[$((i - 1))]} bg "$BIN" run -c "$TMP/n$i.yaml" \
        --listen "127.0.0.1:$port" --db "$TMP/n$i.db" --interval 0.25 2>"$TMP/n$i.log"
done
for i in 1 2 3; do
    check "node-$i answers" wait_for 15 curl -sf "http://127.0.0.1:${PORTS[$((i - 1))]}/healthz" -o /dev/null
done

# One job on three nodes, by the same name (as a prolog on each would start it); node-3 runs it
# on one GPU of its two.
job() { local i=$1; shift; "$BIN" job "$@" --url "http://127.0.0.1:${PORTS[$((i - 1))]}" >/dev/null; }
sleep 1
w_from=$($PY -c 'import time; print(f"{time.time():.3f}")')
for i in 1 2 3; do
    gpus=0,1
    [[ $i == 3 ]] && gpus=1
    job "$i" start slurm-4242 --gpus "$gpus" || not_ok "the job starts on node-$i"
done
for e in 1 2; do
    sleep 1.5
    for i in 1 2 3; do job "$i" mark slurm-4242 --kind epoch --index "$e" --tokens 1000; done
    [[ $e == 1 ]] && w_mid=$($PY -c 'import time; print(f"{time.time():.3f}")')
done
sleep 1
for i in 1 2 3; do job "$i" end slurm-4242 || not_ok "the job ends on node-$i"; done
w_to=$($PY -c 'import time; print(f"{time.time():.3f}")')
# the ended job's series go on for a while; wait for them and for the senders to catch up
sleep 3
for i in 1 2 3; do
    for ep in prom vm; do
        check "node-$i has sent everything to $ep" rw_wait_caught_up "${PORTS[$((i - 1))]}" "$ep" 30
    done
done

for i in 1 2 3; do
    "$BIN" job show slurm-4242 --json --url "http://127.0.0.1:${PORTS[$((i - 1))]}" >"$TMP/local$i.json"
    "$BIN" energy --from "$w_from" --to "$w_to" --json --db "$TMP/n$i.db" >"$TMP/elocal$i.json"
done

compare_job() { # FILE: the fleet figures against the three local ones
    $PY - "$1" "$TMP"/local{1,2,3}.json <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
loc = [json.load(open(p)) for p in sys.argv[2:]]
def close(a, b, what):
    assert b > 0 and abs(a - b) <= 1e-3 * b, f"{what}: fleet {a} vs sum of nodes {b}"
assert len(f["nodes"]) == 3, f["nodes"]
assert sorted(n["node"] for n in f["nodes"]) == ["node-1", "node-2", "node-3"], f["nodes"]
assert f["state"] == "ended", f["state"]
for l in loc:
    assert l["kpi"]["coverage"] == 1, l["kpi"]
close(f["kpi"]["energy_joules"], sum(l["kpi"]["energy_joules"] for l in loc), "job energy")
assert f["kpi"]["coverage"] > 0.999, f["kpi"]
byname = {n["node"]: n for n in f["nodes"]}
for i, l in enumerate(loc, 1):
    close(byname[f"node-{i}"]["kpi"]["energy_joules"], l["kpi"]["energy_joules"], f"node-{i}")
    assert byname[f"node-{i}"]["gpus"] == ("1" if i == 3 else "0,1"), byname[f"node-{i}"]
for idx in (1, 2):
    fp = [p for p in f["phases"] if p["kind"] == "epoch" and p["index"] == idx]
    assert len(fp) == 1 and fp[0]["nodes"] == 3, f["phases"]
    lp = [p for l in loc for p in l["phases"] if p["kind"] == "epoch" and p["index"] == idx]
    close(fp[0]["kpi"]["energy_joules"], sum(p["kpi"]["energy_joules"] for p in lp), f"epoch {idx}")
want = sum(l["kpi"]["energy_joules"] for l in loc)
print(f"# fleet {f['kpi']['energy_joules']:.3f} J over 3 nodes, the nodes' sum {want:.3f} J",
      file=sys.stderr)
PY
}
compare_energy() {
    $PY - "$1" "$TMP"/elocal{1,2,3}.json <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
loc = [json.load(open(p)) for p in sys.argv[2:]]
want = sum(l["total_joules"] for l in loc)
assert want > 0 and abs(f["total_joules"] - want) <= 1e-3 * want, (f["total_joules"], want)
nodes = sorted({s["node"] for s in f["series"]})
assert nodes == ["node-1", "node-2", "node-3"], nodes
gpus = [s for s in f["series"] if "gpu" in s]
fac = [s for s in f["series"] if s.get("target") == "main"]
assert len(gpus) == 6 and len(fac) == 1 and fac[0]["node"] == "node-1", f["series"]
assert len(f["series"]) == 7, f["series"]
assert all(s["coverage"] > 0.999 for s in f["series"]), f["series"]
PY
}

for src in "prometheus://127.0.0.1:$PPORT" "victoriametrics://127.0.0.1:$VPORT"; do
    # an engine makes samples searchable a little after it acknowledged them
    wait_for 20 sh -c "'$BIN' job show slurm-4242 --json --source '$src' >'$TMP/fleet.json' 2>'$TMP/fleet.err' &&
        grep -q '\"state\":\"ended\"' '$TMP/fleet.json'"
    msg=$(compare_job "$TMP/fleet.json" 2>&1) &&
        ok "job show --source $src: the sum of the nodes within 0.1 % ($msg)" ||
        not_ok "job show --source $src: the sum of the nodes within 0.1 %" "$msg $(cat "$TMP/fleet.err")"
    "$BIN" energy --from "$w_from" --to "$w_to" --json --source "$src" >"$TMP/efleet.json" 2>"$TMP/efleet.err"
    msg=$(compare_energy "$TMP/efleet.json" 2>&1) &&
        ok "energy --source $src: the sum of the three stores within 0.1 %" ||
        not_ok "energy --source $src: the sum of the three stores within 0.1 %" "$msg $(cat "$TMP/efleet.err")"
done

src="prometheus://127.0.0.1:$PPORT"
# kpi --source: the fleet's IT energy (no facility meter here: the nodes' sensors)
for i in 1 2 3; do "$BIN" kpi --from "$w_from" --to "$w_to" --json --db "$TMP/n$i.db" >"$TMP/klocal$i.json"; done
for s in "$src" "victoriametrics://127.0.0.1:$VPORT"; do
    "$BIN" kpi --from "$w_from" --to "$w_to" --json --source "$s" >"$TMP/kfleet.json" 2>"$TMP/kfleet.err"
    msg=$($PY - "$TMP/kfleet.json" "$TMP"/klocal{1,2,3}.json 2>&1 <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
loc = [json.load(open(p)) for p in sys.argv[2:]]
for k in ("it", "gpu"):
    want = sum(l["energy"][k]["joules"] for l in loc)
    got = f["energy"][k]["joules"]
    assert want > 0 and abs(got - want) <= 1e-3 * want, (k, got, want)
assert f["energy"]["it"]["from"] == "node_sensors", f["energy"]["it"]
PY
)   && ok "kpi --source $s: the fleet's IT and GPU energy, the nodes' sum within 0.1 %" ||
        not_ok "kpi --source $s: the fleet's IT and GPU energy, the nodes' sum within 0.1 %" "$msg $(cat "$TMP/kfleet.err")"
done
check "kpi --source leaves no working store behind" test -z "$(ls -d /tmp/wattage-kpi-* 2>/dev/null)"
# Fleet PUE and CUE: the facility meter (on node-1) over the IT energy of the three nodes, the
# carbon intensity 100 g/kWh until the middle of the window and 300 g/kWh after it, weighted by
# IT energy. The local figures: the meter from node-1's store, each node's IT energy from its
# own, over the whole window and its two halves.
printf 'topology:\n  meters:\n    - {target: main, point: total, role: facility_total}\ncarbon:\n  zone: FL\n' >"$TMP/site.yaml"
$PY - "$w_from" "$w_mid" "$w_to" >"$TMP/ci.csv" <<'PY'
import sys
a, m, b = (float(x) for x in sys.argv[1:4])
print("timestamp,gco2_per_kwh,kind")
# every point lasts the step between them (30 min): 100 up to the middle, 300 after it
print(f"{m - 1800:.3f},100,actual")
print(f"{m:.3f},300,actual")
print(f"{m + 1800:.3f},300,actual")
PY
"$BIN" import carbon "$TMP/ci.csv" --zone FL --db "$TMP/carbon.db" >/dev/null
check "the intensity series imports into a local store" test $? -eq 0
SITE=("$BIN" kpi -c "$TMP/site.yaml" --json)
"${SITE[@]}" --from "$w_from" --to "$w_to" --db "$TMP/n1.db" >"$TMP/kfac.json" 2>"$TMP/kfac.err"
for i in 1 2 3; do
    "${SITE[@]}" --from "$w_from" --to "$w_mid" --db "$TMP/n$i.db" >"$TMP/kh1_$i.json"
    "${SITE[@]}" --from "$w_mid" --to "$w_to" --db "$TMP/n$i.db" >"$TMP/kh2_$i.json"
done
fleet_kpi() { # FILE: the fleet's KPIs against the local figures
    $PY - "$1" "$TMP/kfac.json" "$TMP"/klocal{1,2,3}.json "$TMP"/kh1_{1,2,3}.json \
        "$TMP"/kh2_{1,2,3}.json <<'PY'
import json, sys
f, fac = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
it, h1, h2 = ([json.load(open(p)) for p in sys.argv[k:k + 3]] for k in (3, 6, 9))
def close(a, b, what):
    assert b > 0 and abs(a - b) <= 1e-3 * b, f"{what}: fleet {a} vs local {b}"
k = {x["name"]: x for x in f["kpis"]}
fe, ie = f["energy"]["facility"], f["energy"]["it"]
assert fe["from"] == "meters" and fe["role"] == "facility_total" and fe["count"] == 1, fe
assert fe["measured"] and fe["coverage"] > 0.999 and ie["coverage"] > 0.999, (fe, ie)
assert ie["from"] == "node_sensors", ie
local_fac = fac["energy"]["facility"]["joules"]
assert fac["energy"]["facility"]["coverage"] > 0.999, fac["energy"]["facility"]
close(fe["joules"], local_fac, "facility energy")
local_it = sum(x["energy"]["it"]["joules"] for x in it)
close(ie["joules"], local_it, "IT energy")
pue = local_fac / local_it
assert 1.2 < pue < 2.5, pue
assert k["pue"]["measured"], k["pue"]
close(k["pue"]["value"], pue, "PUE")
e1 = sum(x["energy"]["it"]["joules"] for x in h1)
e2 = sum(x["energy"]["it"]["joules"] for x in h2)
cue = pue * (100 * e1 + 300 * e2) / (e1 + e2) / 1000
cue_timew = pue * 0.2  # both halves last about as long: time-weighted would be this
assert abs(cue - cue_timew) > 2e-3 * cue, (cue, cue_timew)
row = k["cue"]
assert row.get("value") is not None, row
close(row["value"], cue, "CUE")
assert row["measured"], row
ci = [x for x in row["inputs"] if x["name"] == "carbon_intensity"][0]
assert ci["measured"] and "zone FL" in ci["detail"] and "100% actual" in ci["detail"], ci
print(f"PUE {k['pue']['value']:.4f} (local {pue:.4f}), CUE {row['value']:.5f} (local {cue:.5f})")
PY
}
for s in "prometheus://127.0.0.1:$PPORT" "victoriametrics://127.0.0.1:$VPORT"; do
    # the local store's carbon table (--db), then a file (--carbon)
    "${SITE[@]}" --from "$w_from" --to "$w_to" --source "$s" --db "$TMP/carbon.db" \
        >"$TMP/kpue.json" 2>"$TMP/kpue.err"
    msg=$(fleet_kpi "$TMP/kpue.json" 2>&1) &&
        ok "kpi --source $s: fleet PUE and CUE (carbon table of --db) as locally within 0.1 % ($msg)" ||
        not_ok "kpi --source $s: fleet PUE and CUE (carbon table of --db) as locally within 0.1 %" "$msg $(cat "$TMP/kpue.err" "$TMP/kfac.err")"
    "${SITE[@]}" --from "$w_from" --to "$w_to" --source "$s" --carbon "$TMP/ci.csv" \
        >"$TMP/kpue2.json" 2>"$TMP/kpue2.err"
    msg=$(fleet_kpi "$TMP/kpue2.json" 2>&1) &&
        ok "kpi --source $s --carbon FILE: the same PUE and CUE ($msg)" ||
        not_ok "kpi --source $s --carbon FILE: the same PUE and CUE" "$msg $(cat "$TMP/kpue2.err")"
done
# A window that begins 20 s before the daemons: the coverage says how much of it the engine
# holds: the facility meter's from its first reading in node-1's store on.
"${SITE[@]}" --from "$t_early" --to "$w_to" --source "prometheus://127.0.0.1:$PPORT" \
    --db "$TMP/carbon.db" >"$TMP/kearly.json" 2>"$TMP/kearly.err"
stored "$TMP/n1.db" wattage_facility_energy_joules_total >"$TMP/n1_fac.csv"
msg=$($PY - "$TMP/kearly.json" "$TMP/n1_fac.csv" "$t_early" "$w_to" 2>&1 <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
a, b = float(sys.argv[3]), float(sys.argv[4])
first = min(float(l.split(",")[0]) for l in open(sys.argv[2]))
want = (b - first) / (b - a)
fc = f["energy"]["facility"]["coverage"]
assert 0.2 < want < 0.9 and abs(fc - want) < 0.01, (fc, want)
fj = f["energy"]["facility"]["joules"]
assert abs(fj - 2000 * (b - first)) < 0.02 * fj, (fj, b - first)
assert not f["energy"]["facility"]["measured"], f["energy"]["facility"]
assert f["energy"]["it"]["coverage"] < 0.9, f["energy"]["it"]
pue = {x["name"]: x for x in f["kpis"]}["pue"]
assert not pue["measured"], pue
print(f"facility coverage {fc:.3f}, from its first reading {want:.3f}; PUE not measured")
PY
) && ok "a window the engine holds only part of: coverage reported, PUE not measured ($msg)" ||
    not_ok "a window the engine holds only part of: coverage reported, PUE not measured" "$msg $(cat "$TMP/kearly.err")"
# The same window from node-1's own store agrees (its minute rollups once spread the facility
# meter's first minute over the time before its first reading).
"${SITE[@]}" --from "$t_early" --to "$w_to" --db "$TMP/n1.db" >"$TMP/kearlyl.json" 2>&1
msg=$($PY - "$TMP/kearly.json" "$TMP/kearlyl.json" 2>&1 <<'PY'
import json, sys
f, l = (json.load(open(p))["energy"]["facility"] for p in sys.argv[1:3])
assert abs(f["coverage"] - l["coverage"]) < 0.01, (f, l)
assert abs(f["joules"] - l["joules"]) < 0.02 * f["joules"], (f, l)
print(f"facility {l['joules']:.0f} J locally, {f['joules']:.0f} J from the engine")
PY
) && ok "the early window from the local store: the same facility energy and coverage ($msg)" ||
    not_ok "the early window from the local store: the same facility energy and coverage" "$msg"
"$BIN" kpi --carbon "$TMP/ci.csv" --db "$TMP/n1.db" >/dev/null 2>"$TMP/carb.err"
check "--carbon without --source: exit 2 and a message" \
    bash -c '[[ $1 == 2 ]] && grep -q -- "--carbon goes with --source" "$2"' _ $? "$TMP/carb.err"
"${SITE[@]}" --from "$w_from" --to "$w_to" --source "prometheus://127.0.0.1:$PPORT" \
    --carbon "$TMP/nope.csv" >/dev/null 2>"$TMP/carb2.err"
check "an unreadable --carbon file: exit 1, naming it" \
    bash -c '[[ $1 == 1 ]] && grep -q -- "--carbon $2/nope.csv" "$3"' _ $? "$TMP" "$TMP/carb2.err"
check "kpi --source leaves no working store behind, also after a failure" \
    test -z "$(ls -d /tmp/wattage-kpi-* 2>/dev/null)"
# schedule --like: the job's power profile over its three nodes, on a flat forecast
$PY - >"$TMP/flat.csv" <<'PY'
import time
t0 = int(time.time()) // 1800 * 1800
print('timestamp,gco2_per_kwh,kind')
for i in range(96):
    print('%d,200,forecast' % (t0 + 1800 * i))
PY
"$BIN" import carbon "$TMP/flat.csv" --zone GB --db "$TMP/sched.db" >/dev/null
"$BIN" schedule --like slurm-4242 --source "$src" --deadline +24h --zone GB --db "$TMP/sched.db" \
    --json >"$TMP/sched.json" 2>"$TMP/sched.err"
msg=$($PY - "$TMP/sched.json" "$TMP/fleet.json" "$TMP"/local{1,2,3}.json 2>&1 <<'PY'
import json, sys
d, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = sum(json.load(open(p))["kpi"]["energy_kwh"] for p in sys.argv[3:])
assert d["power_from"] == "job", d
assert abs(d["duration_s"] - f["kpi"]["duration_s"]) < 1e-3, (d["duration_s"], f["kpi"])
assert abs(d["it_energy_kwh"] - want) <= 1e-3 * want, (d["it_energy_kwh"], want)
PY
) && ok "schedule --like --source: the job's energy over its nodes within 0.1 %" ||
    not_ok "schedule --like --source: the job's energy over its nodes within 0.1 %" "$msg $(cat "$TMP/sched.err")"
"$BIN" job show slurm-4242 --source "$src" >"$TMP/human.txt" 2>&1
check "the human form names the three nodes" test "$(grep -c '^  node  ' "$TMP/human.txt")" = 3
"$BIN" job show no-such-job --source "$src" 2>"$TMP/nojob.err" >/dev/null
check "an unknown job: exit 2" test $? = 2
check "  and a message naming it" grep -q "no job no-such-job" "$TMP/nojob.err"
"$BIN" energy --source "gopher://x" >/dev/null 2>"$TMP/bad.err"
check "a bad --source: exit 2" test $? = 2
check "  and a message naming the flag" grep -q -- '--source "gopher://x": expected' "$TMP/bad.err"
"$BIN" energy --source "prometheus://127.0.0.1:$(free_port)" >/dev/null 2>"$TMP/down.err"
check "an unreachable engine: exit 1" test $? = 1
check "  and a message naming it" grep -q "prometheus://127.0.0.1:.*: Could" "$TMP/down.err"
finish
