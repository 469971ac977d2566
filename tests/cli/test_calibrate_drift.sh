#!/usr/bin/env bash
# The daemon and the report against the calibration model: a Redfish BMC (redfish_server.py
# --follow) draws 412 W + 1.07 x the fake GPUs' power; `wattage calibrate` fits it, and the
# running daemon then publishes the wall the model predicts, the departure and the bound
# (wattage_node_model_*). The BMC's offset is moved by +300 W (its --control "offset"): once the
# departure has stayed beyond the bound for a whole KPI window, wattage_node_model_drift is 1,
# logged once, and the report's findings say so; moved back, the drift ends, logged once.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty" "$TMP/w"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=650,0,0
export FAKE_NVML_T0=$(date +%s) FAKE_NVML_LIMITS_FILE=$TMP/limits
M=$TMP/mock
mkdir -p "$M/Chassis/1/Power"
echo '{"@odata.id": "/redfish/v1", "Chassis": {"@odata.id": "/redfish/v1/Chassis"}}' >"$M/index.json"
echo '{"Members": [{"@odata.id": "/redfish/v1/Chassis/1"}]}' >"$M/Chassis/index.json"
echo '{"@odata.id": "/redfish/v1/Chassis/1", "Id": "1", "ChassisType": "RackMount",
  "Power": {"@odata.id": "/redfish/v1/Chassis/1/Power"}}' >"$M/Chassis/1/index.json"
echo '{"@odata.id": "/redfish/v1/Chassis/1/Power", "PowerControl": [{"MemberId": "0",
  "PowerConsumedWatts": 1000}]}' >"$M/Chassis/1/Power/index.json"
echo ok >"$TMP/ctl"
bg /usr/bin/python3 tests/peers/redfish_server.py --root "$M" --port-file "$TMP/bmc.port" \
    --control "$TMP/ctl" --follow "$TMP/limits:2:650:412:1.07"
wait_for 10 test -s "$TMP/bmc.port" || { not_ok "the BMC peer starts"; finish; }
PORT=$(free_port)
cat >"$TMP/w.yaml" <<EOT
daemon: {interval: 1s, listen: "127.0.0.1:$PORT"}
store: {path: "$TMP/w/w.db", flush_interval: 0.5s}
collectors:
  redfish:
    interval: 1s
    targets: [{name: bmc1, url: "http://127.0.0.1:$(cat "$TMP/bmc.port")", node: n1}]
topology:
  node: n1
  meters: [{target: bmc1, role: bmc, node: n1}]
facility: {kpi_window: 6s, kpi_interval: 1s}
EOT
"$BIN" run -c "$TMP/w.yaml" >"$TMP/run.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
has_bmc() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^wattage_facility_power_watts{.*target="bmc1"'; }
wait_for 20 has_bmc || not_ok "the daemon reads the BMC" "$(tail -n 5 "$TMP/run.log")"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/m0.txt"
check "without a model, no model gauges" bash -c '! grep -q "^wattage_node_model_" "$0"' "$TMP/m0.txt"

"$BIN" calibrate -c "$TMP/w.yaml" --load "sleep 600" --steps 100,75,50,30 --hold 4s \
    >"$TMP/cal.out" 2>"$TMP/cal.err"
rc=$?
if [[ $rc == 0 ]] && grep -q '^model of node n1 stored' "$TMP/cal.out"; then ok "calibrate stores n1's model"
else not_ok "calibrate stores n1's model" "rc=$rc" "$(cat "$TMP/cal.out" "$TMP/cal.err")"; finish; fi

# gauge NAME: its value for node n1 on /metrics (empty when absent)
gauge() { curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v n="$1{node=\"n1\"}" '$1 == n { print $2 }'; }
# near NAME WANT TOL: the gauge within TOL of WANT
near() { local v; v=$(gauge "$1"); [[ -n $v ]] && python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > float(sys.argv[3]))' "$v" "$2" "$3"; }
settled() { near wattage_node_model_predicted_wall_watts 1803.0 36 && near wattage_node_model_departure_watts 0 20 && [[ $(gauge wattage_node_model_drift) == 0 ]]; }
if wait_for 30 settled; then ok "the daemon compares the wall with the model: predicted 1803 W, departure ~0, no drift"
else not_ok "the daemon compares the wall with the model" "$(curl -sf "http://127.0.0.1:$PORT/metrics" | grep '^wattage_node_model_')" "$(grep kpi: "$TMP/run.log")"; fi
check "the bound is 2 % of the prediction (a fit through exact points)" near wattage_node_model_bound_watts 36.06 1.5
check "the daemon read the new model file" grep -q 'info  kpi: calibration models: 1 from ' "$TMP/run.log"
base=$(wc -l <"$TMP/run.log")
since() { tail -n +$((base + 1)) "$TMP/run.log" | grep -c "$1"; }

# ---- the wall moves 300 W off the model ----------------------------------------------------------
echo "offset 712" >"$TMP/ctl"
moved=$SECONDS
# watched every 0.3 s: the departure beyond the bound with no drift yet, then the drift
early=0
while ((SECONDS - moved < 40)); do
    curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/m.txt"
    dep=$(awk '$1 == "wattage_node_model_departure_watts{node=\"n1\"}" { print $2 }' "$TMP/m.txt")
    dr=$(awk '$1 == "wattage_node_model_drift{node=\"n1\"}" { print $2 }' "$TMP/m.txt")
    [[ $dr == 1 ]] && break
    [[ $dr == 0 ]] && python3 -c 'import sys; sys.exit(float(sys.argv[1]) <= 60)' "${dep:-0}" && early=$((early + 1))
    sleep 0.3
done
drifting() { [[ $(gauge wattage_node_model_drift) == 1 ]]; }
if drifting && near wattage_node_model_departure_watts 300 15; then
    ok "a wall 300 W off: wattage_node_model_drift 1, departure +300 W ($((SECONDS - moved)) s after the move)"
else not_ok "a wall 300 W off: wattage_node_model_drift 1" "$(grep '^wattage_node_model_' "$TMP/m.txt")"; fi
check "not at once: $early scrapes saw the departure beyond the bound and no drift yet (sustain: one KPI window)" \
    test "$early" -ge 3
sleep 4 # it stays: still one warning
if [[ $(since 'warn  kpi: node n1: the wall departs from its calibration model') == 1 ]] && drifting &&
    tail -n +$((base + 1)) "$TMP/run.log" | grep -Eq 'drift\): wall 21[0-9.]+ W, model 180[0-9.]+ W, departure \+(29[0-9]|30[0-9])\.[0-9] W, bound 36\.[0-9] W'; then
    ok "logged once at warning level, with the wall, the model, the departure and the bound"
else not_ok "logged once at warning level" "$(tail -n +$((base + 1)) "$TMP/run.log" | grep kpi:)"; fi

# the report over the moved window: a model_drift finding
report_drift() {
    "$BIN" report -c "$TMP/w.yaml" --from -7s --to -2s --format json -o "$TMP/r1.json" 2>"$TMP/r1.err" &&
        python3 -c '
import json, sys
f = [x for x in json.load(open(sys.argv[1]))["findings"] if x["kind"] == "model_drift"]
assert len(f) == 1 and f[0]["title"].startswith("node n1: the wall departs from its calibration model by +"), f
assert "bound 36." in f[0]["evidence"], f
' "$TMP/r1.json" 2>"$TMP/py.err"
}
if wait_for 15 report_drift; then ok "the report's findings have the drift of n1"
else not_ok "the report's findings have the drift of n1" "$(cat "$TMP/py.err" "$TMP/r1.err")"; fi

# ---- moved back ------------------------------------------------------------------------------
echo "offset 412" >"$TMP/ctl"
cleared() { [[ $(gauge wattage_node_model_drift) == 0 ]] && near wattage_node_model_departure_watts 0 20; }
if wait_for 30 cleared; then ok "moved back: the drift ends (departure ~0)"
else not_ok "moved back: the drift ends" "$(curl -sf "http://127.0.0.1:$PORT/metrics" | grep '^wattage_node_model_')"; fi
sleep 3
if [[ $(since 'info  kpi: node n1: the wall is back within its calibration model') == 1 ]] &&
    [[ $(since 'warn  kpi: node n1: the wall departs') == 1 ]]; then ok "the end is logged once, and no second warning"
else not_ok "the end is logged once, and no second warning" "$(tail -n +$((base + 1)) "$TMP/run.log" | grep kpi:)"; fi
report_clear() {
    "$BIN" report -c "$TMP/w.yaml" --from -6s --to -1s --format json -o "$TMP/r2.json" 2>"$TMP/r2.err" &&
        python3 -c '
import json, sys
fs = json.load(open(sys.argv[1]))["findings"]
assert not [x for x in fs if x["kind"] == "model_drift"], fs
u = [x for x in fs if x["kind"] == "unaccounted"]
assert len(u) == 1 and "within its bound of 36 W" in u[0]["evidence"], u
' "$TMP/r2.json" 2>"$TMP/py.err"
}
if wait_for 15 report_clear; then ok "the report over the window after: no drift, the unaccounted watts set against the model"
else not_ok "the report over the window after: no drift" "$(cat "$TMP/py.err" "$TMP/r2.err")"; fi
kill -TERM "$RUN_PID"
wait "$RUN_PID"
finish
