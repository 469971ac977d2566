#!/usr/bin/env bash
# `wattage calibrate` end to end on the fake NVML (limits kept in its driver-state file, shared
# by every process) and a Redfish BMC (tests/peers/redfish_server.py --follow) whose chassis
# power follows the fake GPUs' power with a known offset and slope: the fit recovers both within
# 2 % and the model is stored; the limits are back at the end. A BMC that does not follow is
# "wall does not track chip"; a load that exits early, a SIGINT and a GPU lost mid-step restore
# the limits and store no model. A kill -9 mid-step leaves the caps in the driver and in the
# record; the next daemon start puts the GPUs' own limits back within one tick, with a warning.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=650,0,0
export FAKE_NVML_T0=$(date +%s)
M=$TMP/mock
mkdir -p "$M/Chassis/1/Power"
echo '{"@odata.id": "/redfish/v1", "Chassis": {"@odata.id": "/redfish/v1/Chassis"}}' >"$M/index.json"
echo '{"Members": [{"@odata.id": "/redfish/v1/Chassis/1"}]}' >"$M/Chassis/index.json"
echo '{"@odata.id": "/redfish/v1/Chassis/1", "Id": "1", "ChassisType": "RackMount",
  "Power": {"@odata.id": "/redfish/v1/Chassis/1/Power"}}' >"$M/Chassis/1/index.json"
echo '{"@odata.id": "/redfish/v1/Chassis/1/Power", "PowerControl": [{"MemberId": "0",
  "PowerConsumedWatts": 1000}]}' >"$M/Chassis/1/Power/index.json"

RUN_PID=
# start NAME [PEER ARGS...]: a BMC peer and the daemon reading it (limits in $TMP/NAME.limits)
start() {
    local name=$1
    shift
    export FAKE_NVML_LIMITS_FILE=$TMP/$name.limits
    bg /usr/bin/python3 tests/peers/redfish_server.py --root "$M" --port-file "$TMP/$name.port" "$@"
    wait_for 10 test -s "$TMP/$name.port" || { not_ok "peer $name started"; finish; }
    PORT=$(free_port)
    cat >"$TMP/$name.yaml" <<EOT
daemon: {interval: 1s, listen: "127.0.0.1:$PORT"}
store: {path: "$TMP/$name/w.db"}
collectors:
  redfish:
    interval: 1s
    targets: [{name: bmc1, url: "http://127.0.0.1:$(cat "$TMP/$name.port")", node: n1}]
topology:
  node: n1
  meters: [{target: bmc1, role: bmc, node: n1}]
EOT
    mkdir -p "$TMP/$name"
    "$BIN" run -c "$TMP/$name.yaml" >"$TMP/$name.log" 2>&1 &
    RUN_PID=$!
    T_PIDS="$T_PIDS $RUN_PID"
    wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
    has_bmc() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^wattage_facility_power_watts{.*target="bmc1"'; }
    wait_for 20 has_bmc || not_ok "$name: the daemon reads the BMC" "$(tail -5 "$TMP/$name.log")"
}
stop() { kill -TERM "$RUN_PID"; wait "$RUN_PID"; }
# restored NAME: every GPU's last limit in the driver state is its own 700 W, and no record left
restored() {
    awk '{ last[$1] = $2 } END { for (g in last) if (last[g] != 700) exit 1 }' "$TMP/$1.limits" &&
        [[ ! -s $TMP/$1/power-caps ]]
}

# ---- a wall that follows: 412 W + 1.07 x chips ----------------------------------------------
start follow --follow "$TMP/follow.limits:2:650:412:1.07"
# a load of its own (other suites running beside this one start `sleep 600` loads too)
load="sleep 600.$$"
"$BIN" calibrate -c "$TMP/follow.yaml" --load "$load" --steps 100,75,50,30 --hold 4s \
    >"$TMP/follow.out" 2>"$TMP/follow.err"
rc=$?
if [[ $rc == 0 ]] && grep -q '^model of node n1 stored' "$TMP/follow.out"; then ok "calibrate fits and stores the model"
else not_ok "calibrate fits and stores the model" "rc=$rc" "$(cat "$TMP/follow.out" "$TMP/follow.err")"; fi
if python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["models"]
assert len(m) == 1 and m[0]["node"] == "n1" and m[0]["wall"] == "bmc" and m[0]["tracks"], m
assert abs(m[0]["a_watts"] - 412) / 412 < 0.02, m[0]["a_watts"]
assert abs(m[0]["b"] - 1.07) / 1.07 < 0.02, m[0]["b"]
assert m[0]["points"] == 4 and m[0]["date"].startswith("20"), m
' "$TMP/follow/calibration.json" 2>"$TMP/py.err"; then ok "the fit recovers the offset and slope within 2 %"
else not_ok "the fit recovers the offset and slope within 2 %" "$(cat "$TMP/py.err")" "$(cat "$TMP/follow.out")"; fi
if grep -q '^0 525$' "$TMP/follow.limits" && grep -q '^1 210$' "$TMP/follow.limits"; then
    ok "the limits went through the steps (525 W, ..., 210 W)"
else not_ok "the limits went through the steps" "$(cat "$TMP/follow.limits")"; fi
if restored follow; then ok "the limits are back at the end, the record empty"
else not_ok "the limits are back at the end, the record empty" "$(tail -4 "$TMP/follow.limits")"; fi
if ! pgrep -f "^${load//./\\.}\$" >/dev/null; then ok "the load is stopped"
else not_ok "the load is stopped"; fi

# The reconciliation against the model: with every GPU back at 650 W the wall is what the
# model predicts (412 + 1.07 x 1300 W), no drift.
sleep 8 # readings of the restored GPUs only: the window must not straddle a step
kpi_model() { # the store may lag a flush and a loaded machine a poll: asked again until covered
    "$BIN" kpi -c "$TMP/follow.yaml" --from -6s --to -1s --json >"$TMP/kpi.json" 2>"$TMP/kpi.err" &&
        python3 -c '
import json, sys
n = [x for x in json.load(open(sys.argv[1]))["nodes"] if x["node"] == "n1"][0]
m = n["model"]
assert abs(m["predicted_wall_watts"] - (412 + 1.07 * 1300)) < 0.02 * 1803, m
assert abs(m["departure_watts"]) < m["bound_watts"] and not m["drift"], m
' "$TMP/kpi.json" 2>"$TMP/py.err"
}
if wait_for 15 kpi_model; then ok "wattage kpi compares the wall with the model: no drift"
else not_ok "wattage kpi compares the wall with the model: no drift" "$(cat "$TMP/py.err" "$TMP/kpi.err" "$TMP/kpi.json")"; fi

# ---- the load exits early: restored, said, no model ------------------------------------------
rm -f "$TMP/follow/calibration.json"
"$BIN" calibrate -c "$TMP/follow.yaml" --load "sleep 2; exit 3" --hold 4s \
    >"$TMP/early.out" 2>"$TMP/early.err"
rc=$?
if [[ $rc == 1 ]] && grep -q 'the load command exited early (status 3): no model stored' "$TMP/early.err" &&
    [[ ! -e $TMP/follow/calibration.json ]] && restored follow; then
    ok "a load that exits early: limits restored, said, no model"
else not_ok "a load that exits early: limits restored, said, no model" "rc=$rc" "$(cat "$TMP/early.err")"; fi

# ---- SIGINT mid-step -----------------------------------------------------------------------
"$BIN" calibrate -c "$TMP/follow.yaml" --load "sleep 600" --hold 30s \
    >"$TMP/int.out" 2>"$TMP/int.err" &
CPID=$!
step1() { grep -q 'load started' "$TMP/int.err"; }
wait_for 20 step1
sleep 1
kill -INT "$CPID"
wait "$CPID"
rc=$?
if [[ $rc == 1 ]] && grep -q 'interrupted (signal 2): no model stored' "$TMP/int.err" && restored follow &&
    [[ ! -e $TMP/follow/calibration.json ]]; then ok "SIGINT: limits restored, no model"
else not_ok "SIGINT: limits restored, no model" "rc=$rc" "$(cat "$TMP/int.err")"; fi

# ---- SIGKILL mid-step: the caps stay in the driver, recorded; the next daemon start restores --
"$BIN" calibrate -c "$TMP/follow.yaml" --load "echo \$\$ >$TMP/kill.load; exec sleep 600" --steps 75,50 --hold 30s \
    >"$TMP/kill.out" 2>"$TMP/kill.err" &
CPID=$!
recorded() { [[ $(grep -c ' calibrate$' "$TMP/follow/power-caps") == 2 ]]; }
wait_for 20 recorded
sleep 1
kill -KILL "$CPID"
wait "$CPID" 2>/dev/null
[[ -s $TMP/kill.load ]] && kill "$(cat "$TMP/kill.load")"
# limit_is G W: GPU G's last limit in the driver state
limit_is() { [[ $(awk -v g="$1" '$1 == g { w = $2 } END { print w }' "$TMP/follow.limits") == "$2" ]]; }
if limit_is 0 525 && limit_is 1 525 && recorded &&
    grep -Eq '^GPU-fake-0000-0 0 700\.000 525\.000 [0-9]{19} calibrate$' "$TMP/follow/power-caps"; then
    ok "kill -9 mid-step: the driver keeps 525 W, the record has both GPUs (own 700 W, reason calibrate)"
else not_ok "kill -9 mid-step: caps kept and recorded" "$(tail -n 4 "$TMP/follow.limits")" "$(cat "$TMP/follow/power-caps" "$TMP/kill.err")"; fi
stop
check "the daemon's stop leaves calibrate's caps to the record (its own only)" limit_is 0 525
"$BIN" run -c "$TMP/follow.yaml" >"$TMP/follow2.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
if wait_for 1 restored follow; then ok "the next daemon start restores 700 W within one tick, the record empty"
else not_ok "the next daemon start restores 700 W within one tick" "$(tail -n 4 "$TMP/follow.limits")" "$(grep cap: "$TMP/follow2.log")"; fi
if [[ $(grep -c 'warn  cap: gpu=[01] uuid=GPU-fake-0000-[01]: restored its own limit 700.0 W; an earlier run capped it at 525.0 W (reason=calibrate' "$TMP/follow2.log") == 2 ]]; then
    ok "it says so at warning level, once per GPU"
else not_ok "it says so at warning level, once per GPU" "$(grep cap: "$TMP/follow2.log")"; fi
check "no model stored" test ! -e "$TMP/follow/calibration.json"
stop

# ---- a wall that does not follow the load ----------------------------------------------------
start flat
"$BIN" calibrate -c "$TMP/flat.yaml" --load "sleep 600" --steps 100,75,50,30 --hold 4s \
    >"$TMP/flat.out" 2>"$TMP/flat.err"
rc=$?
if [[ $rc == 1 ]] && grep -q 'wall does not track chip' "$TMP/flat.err" &&
    [[ ! -e $TMP/flat/calibration.json ]] && restored flat; then
    ok "a BMC that does not follow: \"wall does not track chip\", no model, limits restored"
else not_ok "a BMC that does not follow: \"wall does not track chip\"" "rc=$rc" "$(cat "$TMP/flat.out" "$TMP/flat.err")"; fi
stop

# ---- a GPU lost mid-step (the daemon's view) --------------------------------------------------
FAKE_NVML_LOST=1:$(($(date +%s) - FAKE_NVML_T0 + 10)):100000 start lost --follow "$TMP/lost.limits:2:650:412:1.07"
"$BIN" calibrate -c "$TMP/lost.yaml" --load "sleep 600" --hold 4s >"$TMP/lost.out" 2>"$TMP/lost.err"
rc=$?
if [[ $rc == 1 ]] && grep -q 'a GPU was lost mid-step (1 of 2 answering; lost: gpu 1 (GPU-[^)]*)): no model stored' "$TMP/lost.err" &&
    restored lost && [[ ! -e $TMP/lost/calibration.json ]]; then ok "a GPU lost mid-step: named, limits restored, no model"
else not_ok "a GPU lost mid-step: named, limits restored, no model" "rc=$rc" "$(cat "$TMP/lost.err")"; fi
stop

# ---- bad usage ---------------------------------------------------------------------------------
"$BIN" calibrate --steps 100,0 --load true 2>"$TMP/bad.err"
rc=$?
if [[ $rc == 2 ]] && grep -q -- '--steps: expected' "$TMP/bad.err"; then ok "bad --steps: exit 2, named"
else not_ok "bad --steps: exit 2, named" "rc=$rc $(cat "$TMP/bad.err")"; fi
"$BIN" calibrate --hold 1s 2>"$TMP/bad.err"
rc=$?
if [[ $rc == 2 ]] && grep -q -- '--load CMD is required' "$TMP/bad.err"; then ok "no --load: exit 2, named"
else not_ok "no --load: exit 2, named" "rc=$rc $(cat "$TMP/bad.err")"; fi
finish
