#!/usr/bin/env bash
# Inlet air against ASHRAE's envelopes, rack Delta-T and aisle imbalance, on the real binary
# against three Redfish BMCs on loopback (tests/peers/redfish_server.py), one per rack: r1 and
# r2 breathe 24-25 C with a 12 K rise, r3 breathes 34 C (outside class A1's recommended 18-27 C
# and allowable 15-32 C) and exhausts 60 C (26 K). The daemon counts r3's seconds outside both
# envelopes and none for r1 (wattage_inlet_outside_envelope_seconds_total), fires
# InletTemperatureOutsideEnvelope (critical for allowable), RackDeltaTHigh and RackInletImbalance
# for r3 alone; the report's JSON has the seconds per sensor, and under class A3 (allowable
# 5-40 C) r3 is outside the recommended envelope only.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc WATTAGE_NVML_LIBRARY=$FAKE_NVML
export FAKE_NVML_GPUS=1 WATTAGE_CLOCK_STATUS=0

bmc() { # NAME INLET EXHAUST: a Redfish tree with one chassis and its legacy Thermal
    local d=$TMP/$1
    mkdir -p "$d/Chassis/1/Thermal"
    echo '{"Chassis": {"@odata.id": "/redfish/v1/Chassis"}}' >"$d/index.json"
    echo '{"Members": [{"@odata.id": "/redfish/v1/Chassis/1"}]}' >"$d/Chassis/index.json"
    echo '{"Id": "1", "Thermal": {"@odata.id": "/redfish/v1/Chassis/1/Thermal"}}' >"$d/Chassis/1/index.json"
    printf '{"Temperatures": [{"Name": "Inlet Temp", "ReadingCelsius": %s}, {"Name": "Exhaust Temp", "ReadingCelsius": %s}]}\n' \
        "$2" "$3" >"$d/Chassis/1/Thermal/index.json"
    bg /usr/bin/python3 tests/peers/redfish_server.py --root "$d" --port-file "$TMP/$1.port"
    wait_for 10 test -s "$TMP/$1.port" || { not_ok "server $1 started"; finish; }
}
bmc b1 24 36
bmc b2 25 37
bmc b3 34 60
{
    printf 'collectors:\n  redfish:\n    interval: 1s\n    targets:\n'
    for i in 1 2 3; do
        printf '      - {name: bmc%s, url: "http://127.0.0.1:%s", rack: r%s, zone: hall}\n' "$i" "$(cat "$TMP/b$i.port")" "$i"
    done
    printf 'facility:\n  ashrae_class: A1\n'
    printf 'alerts:\n  detectors:\n    inlet_envelope: {for: 1s}\n    rack_delta_t: {max_k: 20, for: 1s}\n    aisle_imbalance: {delta_k: 3, for: 1s}\n'
} >"$TMP/w.yaml"
check "check-config accepts facility.ashrae_class and the new detectors" "$BIN" check-config "$TMP/w.yaml"
sed 's/ashrae_class: A1/ashrae_class: B7/' "$TMP/w.yaml" >"$TMP/bad.yaml"
out=$("$BIN" check-config "$TMP/bad.yaml" 2>&1)
check "a bad class names the file, line and key ($out)" \
    bash -c '[[ $1 == *"bad.yaml:"*"facility.ashrae_class"*"A1"* ]]' _ "$out"

PORT=$(free_port)
t0=$(python3 -c 'import time; print(f"{time.time():.3f}")')
bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 --listen "127.0.0.1:$PORT" \
    2>"$TMP/run.log"
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | grep -F "$1" | grep -F "$2" | awk '{print $NF}' | head -1; }
over() { python3 -c 'import sys; sys.exit(0 if sys.argv[1] and float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$(metric "$1" "$2")" "$3"; }
S=wattage_inlet_outside_envelope_seconds_total
check "r3's inlet: seconds outside the recommended envelope accumulate (> 3 s)" \
    wait_for 30 over "$S{" 'rack="r3",zone="hall",envelope="recommended"' 3
check "  and outside the allowable one" over "$S{" 'rack="r3",zone="hall",envelope="allowable"' 3
check "r1's inlet: none outside (0)" test "$(metric "$S{" 'rack="r1",zone="hall",envelope="recommended"')" = 0
check "wattage_inlet_within_envelope 0 for r3, 1 for r1" bash -c \
    "[[ \$(curl -s http://127.0.0.1:$PORT/metrics | grep '^wattage_inlet_within_envelope{.*rack=\"r3\".*envelope=\"recommended\"' | awk '{print \$NF}') == 0 && \$(curl -s http://127.0.0.1:$PORT/metrics | grep '^wattage_inlet_within_envelope{.*rack=\"r1\".*envelope=\"recommended\"' | awk '{print \$NF}') == 1 ]]"
check "exhaust sensors are not judged" bash -c "! curl -s http://127.0.0.1:$PORT/metrics | grep '^wattage_inlet_within_envelope' | grep -q Exhaust"

cat >"$TMP/q.py" <<'PY'
import json, sys, urllib.request
port, expr = sys.argv[1], sys.argv[2]
A = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=2))["alerts"]
def has(name, state="firing", **labels):
    return [a for a in A if a["alertname"] == name and a["state"] == state
            and all(a["labels"].get(k) == v for k, v in labels.items())]
r = eval(expr)
if not r:
    print(json.dumps(A, indent=1), file=sys.stderr)
sys.exit(0 if r else 1)
PY
q() { python3 "$TMP/q.py" "$PORT" "$@" 2>/dev/null; }
check "InletTemperatureOutsideEnvelope fires for r3: critical for allowable, warning for recommended" \
    wait_for 20 q 'any(a["severity"] == "critical" for a in has("InletTemperatureOutsideEnvelope", rack="r3", envelope="allowable")) and any(a["severity"] == "warning" for a in has("InletTemperatureOutsideEnvelope", rack="r3", envelope="recommended"))'
check "  and not for r1 or r2" q 'not has("InletTemperatureOutsideEnvelope", rack="r1") and not has("InletTemperatureOutsideEnvelope", rack="r2") and not has("InletTemperatureOutsideEnvelope", "pending", rack="r1")'
check "RackDeltaTHigh fires for r3 (26 K over 20 K), value 26" \
    wait_for 20 q 'any(abs(a["value"] - 26) < 1e-6 for a in has("RackDeltaTHigh", rack="r3"))'
check "  not for r1 (12 K)" q 'not has("RackDeltaTHigh", rack="r1") and not has("RackDeltaTHigh", "pending", rack="r1")'
check "RackInletImbalance fires for r3 (9 K over the median rack of hall)" \
    wait_for 20 q 'any(abs(a["value"] - 9) < 1e-6 for a in has("RackInletImbalance", rack="r3"))'
check "  not for r1 or r2" q 'not has("RackInletImbalance", rack="r1") and not has("RackInletImbalance", rack="r2")'
sleep 3
t1=$(python3 -c 'import time; print(f"{time.time():.3f}")')
sleep 1.5 # the last flush

"$BIN" report --db "$TMP/w.db" -c "$TMP/w.yaml" --from "$t0" --to "$t1" --format json -o "$TMP/r.json" 2>/dev/null
check "report --format json: r3's inlet outside both A1 envelopes for most of the run, r1 none" python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); span = float(sys.argv[3]) - float(sys.argv[2])
ins = {i["name"]: i for i in d["inlets"]}
r3 = [i for n, i in ins.items() if "bmc3" in n or "r3" in n]
r1 = [i for n, i in ins.items() if "bmc1" in n or "r1" in n]
assert len(ins) == 3 and r3 and r1, ins
assert r3[0]["ashrae_class"] == "A1", r3
assert r3[0]["outside_recommended_seconds"] > 3 and r3[0]["outside_allowable_seconds"] > 3, r3
assert r3[0]["outside_recommended_seconds"] <= span, (r3, span)
assert r1[0]["outside_recommended_seconds"] == 0 and r1[0]["outside_allowable_seconds"] == 0, r1
' "$TMP/r.json" "$t0" "$t1"
sed 's/ashrae_class: A1/ashrae_class: A3/' "$TMP/w.yaml" >"$TMP/a3.yaml"
"$BIN" report --db "$TMP/w.db" -c "$TMP/a3.yaml" --from "$t0" --to "$t1" --format json -o "$TMP/r3.json" 2>/dev/null
check "under class A3 (allowable 5-40 C) r3 is outside the recommended envelope only" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r3 = [i for i in d["inlets"] if "bmc3" in i["name"] or "r3" in i["name"]][0]
assert r3["ashrae_class"] == "A3" and r3["outside_recommended_seconds"] > 3 and r3["outside_allowable_seconds"] == 0, r3
' "$TMP/r3.json"
finish
