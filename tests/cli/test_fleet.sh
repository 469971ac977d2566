#!/usr/bin/env bash
# The fleet read path against real engines on loopback: three daemons as three nodes (own node
# names, own fake NVML power, own stores) remote-write into Prometheus 2.42 and VictoriaMetrics;
# one job started with the same name on all three, with two epochs. The job's energy from each
# engine (`wattage job show --source`), and its phases, equal the sum of the three nodes' own
# figures within 0.1 %; so do `wattage energy --source` over a window against the three stores
# and the job's profile that `wattage schedule --like JOB --source` plans with.
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
PORTS=()
powers=(300,120,5 200,60,3 150,40,0)
for i in 1 2 3; do
    rw_config "$TMP/n$i.yaml" "node-$i" "$endpoints"
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
assert len(f["series"]) == 6, f["series"]
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
