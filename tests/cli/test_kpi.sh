#!/usr/bin/env bash
# `wattage kpi` over a small site written into the real store (tests/unit/test_kpi.c's site:
# facility and IT meters stepping at half time, zone sub-meters, cooling by power readings,
# water, heat, GPU and RAPL counters of three nodes, PDU outlets, a BMC): the text and the JSON
# (it parses; every KPI, band, zone, rack and node as expected), --zone, bad arguments, and
# check-config on the topology; then the KPI gauges on /metrics of a running daemon whose store
# holds the same site over the last hour.
. tests/cli/lib.sh
SITE=${WATTAGE_BUILD:-build}/tests/unit/test_kpi
PY=/usr/bin/python3
mkdir -p "$TMP/fixed" "$TMP/live" "$TMP/sys" "$TMP/proc"

WATTAGE_KPI_SITE_DIR=$TMP/fixed "$SITE" write_site >"$TMP/site.log" 2>&1
check "the site is written into a store" grep -q '^1 passed' "$TMP/site.log"
T0=1764000000
K=("$BIN" kpi --db "$TMP/fixed/site.db" -c "$TMP/fixed/site.yaml")

"${K[@]}" --from $T0 --to $((T0 + 3600)) --json >"$TMP/k.json" 2>"$TMP/k.err"
check "kpi --json exits 0" test $? -eq 0
check "the JSON parses (python3 -m json.tool)" $PY -m json.tool "$TMP/k.json" /dev/null
if command -v jq >/dev/null; then
    jq_ok() { jq -e "$1" "$2" >/dev/null; }
    check "the JSON parses (jq)" jq_ok '.kpis | length >= 5' "$TMP/k.json"
fi
msg=$($PY - "$TMP/k.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
def near(a, b): return abs(a - b) <= 1e-9 * max(1, abs(b))
k = {x["name"]: x for x in d["kpis"]}
assert d["seconds"] == 3600 and d["zone"] is None and d["from"] == "2025-11-24T16:00:00Z", d
assert near(d["energy"]["facility"]["joules"], 205.2e6), d["energy"]
assert near(d["energy"]["it"]["joules"], 144e6)
assert d["energy"]["it"]["role"] == "it_total" and d["energy"]["facility"]["measured"] is True
assert near(d["energy"]["water"]["cubic_meters"], 0.5)
assert near(k["pue"]["value"], 1.425) and k["pue"]["measured"] is True, k["pue"]
assert [i["name"] for i in k["pue"]["inputs"]] == ["facility_energy", "it_energy"]
assert all(i["measured"] for i in k["pue"]["inputs"])
assert near(k["clf"]["value"], 0.5)
assert near(k["wue"]["value"], 12.5) and k["wue"]["unit"] == "L/kWh"
assert near(k["erf"]["value"], 36e6 / 205.2e6)
assert near(k["accelerator_share"]["value"], 2150 * 3600 / 144e6)
pl = d["part_load"]
assert pl["available"] and pl["piece_seconds"] == 600, pl
b = pl["bands"]
assert [x["from_percent"] for x in b] == [0, 25, 50, 75]
assert near(b[0]["pue"], 1.8) and b[0]["pieces"] == 3 and b[1]["pue"] is None, b
assert near(b[2]["pue"], 1.3) and b[2]["pieces"] == 3 and b[3]["pue"] is None, b
z = {x["zone"]: x for x in d["zones"]}
assert near(z["hall-a"]["pue"], 1.5) and z["hall-a"]["measured"] and z["hall-b"]["pue"] is None
r = {x["rack"]: x for x in d["racks"]}
assert near(r["r1"]["delta_t_kelvin"], 13) and near(r["r2"]["delta_t_kelvin"], 18), r
n = {x["node"]: x for x in d["nodes"]}
assert near(n["gpu-01"]["unaccounted_watts"], 300) and near(n["gpu-01"]["unaccounted_ratio"], 0.2)
assert n["gpu-01"]["suspect"] == [] and n["gpu-01"]["wall_from"] == "pdu_outlet"
assert near(n["gpu-01"]["wall_joules"], 1500 * 3600) and near(n["gpu-01"]["dram_joules"], 50 * 3600)
assert n["gpu-02"]["suspect"] == ["chips_exceed_wall"] and n["gpu-02"]["wall_from"] == "bmc"
assert n["gpu-03"]["suspect"] == ["share_drift"], n["gpu-03"]
assert near(n["gpu-03"]["share_min"], 0.4) and near(n["gpu-03"]["share_max"], 0.7)
print("ok")
PY
)
check "every KPI, band, zone, rack and node as built ($msg)" test "$msg" = ok

"${K[@]}" --from $T0 --to $((T0 + 3600)) >"$TMP/k.txt"
check "text: PUE 1.425 measured" grep -Eq '^  PUE +1\.425 +measured' "$TMP/k.txt"
check "text: energies in kWh" grep -Eq '^  facility +57\.000 kWh' "$TMP/k.txt"
check "text: part-load bands" grep -Eq '^  50-75% +PUE 1\.3 ' "$TMP/k.txt"
check "text: the suspect nodes" grep -q 'gpu-02 .*SUSPECT: chips exceed wall' "$TMP/k.txt"
check "text: the drifting node" grep -q 'gpu-03 .*share 40.0..70.0%  SUSPECT: share drifts' \
    "$TMP/k.txt"

"${K[@]}" --from $T0 --to $((T0 + 3600)) --zone hall-a --json >"$TMP/z.json"
check "--zone hall-a: its own meters" $PY -c "
import json; d = json.load(open('$TMP/z.json'))
k = {x['name']: x for x in d['kpis']}
assert d['zone'] == 'hall-a' and abs(k['pue']['value'] - 1.5) < 1e-9, k['pue']
assert sorted(x['node'] for x in d['nodes']) == ['gpu-01', 'gpu-02'] and d['zones'] == []"

# pue_assumed, flagged, when no facility_total meter
grep -v 'role: facility_total' "$TMP/fixed/site.yaml" | sed 's/^facility:$/facility:\n  pue_assumed: 1.4/' \
    >"$TMP/assumed.yaml"
"$BIN" kpi --db "$TMP/fixed/site.db" -c "$TMP/assumed.yaml" --from $T0 --to $((T0 + 3600)) \
    --json >"$TMP/a.json"
check "pue_assumed is used and flagged as assumed" $PY -c "
import json; d = json.load(open('$TMP/a.json'))
k = {x['name']: x for x in d['kpis']}
p = k['pue']
assert p['value'] == 1.4 and p['measured'] is False, p
assert p['inputs'][0] == {'name': 'facility_energy', 'measured': False,
    'detail': 'facility.pue_assumed = 1.4 (no facility_total meter)'}, p['inputs']
assert d['part_load']['available'] is False and k['erf']['measured'] is False"
"$BIN" kpi --db "$TMP/fixed/site.db" -c "$TMP/assumed.yaml" --from $T0 --to $((T0 + 3600)) \
    >"$TMP/a.txt"
check "text: assumed PUE says so" grep -Eq '^  PUE +1\.4 +ASSUMED' "$TMP/a.txt"

"${K[@]}" --from $T0 --to $((T0 + 3600)) --zone nowhere >/dev/null 2>"$TMP/e1"
check "an unknown zone is a usage error (exit 2)" test $? -eq 2
check "  ... that names it" grep -q 'zone "nowhere"' "$TMP/e1"
"${K[@]}" --from $((T0 + 10)) --to $T0 >/dev/null 2>"$TMP/e2"
check "an empty window is a usage error (exit 2)" test $? -eq 2
printf 'topology:\n  meters:\n    - {target: pdu, role: pdu_outlet}\n' >"$TMP/bad.yaml"
"$BIN" kpi --db "$TMP/fixed/site.db" -c "$TMP/bad.yaml" >/dev/null 2>"$TMP/e3"
check "a bad topology is a usage error (exit 2)" test $? -eq 2
check "  ... naming file:line and path" grep -q "bad.yaml:3: topology.meters\[0\].node: required" \
    "$TMP/e3"
"$BIN" check-config "$TMP/bad.yaml" >/dev/null 2>"$TMP/e4"
check "check-config refuses it too (exit 2)" test $? -eq 2
check "  ... with the same message" grep -q "bad.yaml:3: topology.meters\[0\].node" "$TMP/e4"
"$BIN" check-config "$TMP/fixed/site.yaml" >/dev/null 2>&1
check "check-config accepts the site" test $? -eq 0

# The daemon exports the gauges over its rolling window (the last hour, every second).
NOW=$(date +%s)
WATTAGE_KPI_SITE_DIR=$TMP/live WATTAGE_KPI_SITE_T0=$((NOW - 3600)) "$SITE" write_site \
    >"$TMP/live.log" 2>&1
check "a live site (the last hour) is written" grep -q '^1 passed' "$TMP/live.log"
PORT=$(free_port)
WATTAGE_NVML_LIBRARY=$TMP/none.so WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc \
    bg "$BIN" run -c "$TMP/live/site.yaml" --db "$TMP/live/site.db" \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
DAEMON=$!
has_pue() { curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m.txt" && grep -q '^wattage_pue_ratio ' "$TMP/m.txt"; }
check "wattage_pue_ratio appears on /metrics" wait_for 15 has_pue
msg=$($PY - "$TMP/m.txt" <<'PY' 2>&1
import re, sys
m = {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    k, v = line.rsplit(" ", 1)
    m[k] = float(v)
def get(k):
    assert k in m, f"{k} missing"
    return m[k]
assert 1.40 < get("wattage_pue_ratio") < 1.45, m["wattage_pue_ratio"]
assert abs(get('wattage_pue_ratio{zone="hall-a"}') - 1.5) < 1e-6
assert 12 < get("wattage_wue_litres_per_kwh") < 13
assert 0.17 < get("wattage_erf_ratio") < 0.18
assert 0.05 < get("wattage_accelerator_energy_share_ratio") < 0.06
assert abs(get('wattage_rack_delta_t_kelvin{rack="r1"}') - 13) < 1e-6
assert 290 < get('wattage_node_unaccounted_power_watts{node="gpu-01"}') <= 300
assert 0.19 < get('wattage_node_unaccounted_ratio{node="gpu-01"}') < 0.21
assert get('wattage_node_reconciliation_suspect{node="gpu-02",reason="chips_exceed_wall"}') == 1
assert get('wattage_node_reconciliation_suspect{node="gpu-01",reason="chips_exceed_wall"}') == 0
assert get('wattage_node_reconciliation_suspect{node="gpu-03",reason="share_drift"}') == 1
assert get('wattage_collector_up{collector="kpi"}') == 1
print("ok")
PY
)
check "the KPI and reconciliation gauges over the last hour ($msg)" test "$msg" = ok
check "one HELP line for the PUE family" test "$(grep -c '^# HELP wattage_pue_ratio ' "$TMP/m.txt")" -eq 1
if command -v promtool >/dev/null; then
    lint=$(promtool check metrics <"$TMP/m.txt" 2>&1)
    check "promtool check metrics is content with the KPI families ($lint)" test -z "$lint"
else
    skip "promtool check metrics" "promtool is not installed (scripts/deps.sh --test)"
fi
check "the daemon logged the export" grep -q 'kpi: exporting KPI gauges meters=10' "$TMP/run.log"

# A reload reads the topology again: without meters the gauges leave, with them they come back.
cp "$TMP/live/site.yaml" "$TMP/live/site.orig"
sed -i '/^  meters:/,/^facility:/{/^facility:/!d}' "$TMP/live/site.yaml"
"$BIN" check-config "$TMP/live/site.yaml" >/dev/null 2>&1
check "the config without meters is valid" test $? -eq 0
kill -HUP "$DAEMON"
no_pue() { curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/m2.txt" && ! grep -q '^wattage_pue_ratio' "$TMP/m2.txt"; }
check "after a reload without meters the KPI gauges leave /metrics" wait_for 10 no_pue
check "  ... and the unaccounted power too" test "$(grep -c '^wattage_node_' "$TMP/m2.txt")" -eq 0
cp "$TMP/live/site.orig" "$TMP/live/site.yaml"
kill -HUP "$DAEMON"
check "after a reload with them they come back" wait_for 15 has_pue
finish
