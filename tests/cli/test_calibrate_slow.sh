#!/usr/bin/env bash
# `wattage calibrate` against wall meters slower than its steps. Two Redfish peers follow the
# fake GPUs' power (412 W + 1.07 x the chips): "slowpdu", polled every 30 s (a PDU outlet of
# node n1), and "bmc1", polled every second (n1's BMC). The status serves slowpdu's one reading
# for every request of a 4-s step: calibrate counts only readings taken inside a step's second
# half, each once, so with slowpdu alone it names the meter, the step, its last reading, its
# interval and the --hold it needs, stores no model and restores the limits; with both, the BMC
# is the wall (said) and the fit is within 2 %. A BMC that answers in 3 s (the peer's
# "slow 3") is named with its answer time; a daemon whose status has no "t" (an older wattage,
# played by a small HTTP peer) is named as the cause.
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
echo ok >"$TMP/bmc.ctl"
for p in pdu bmc; do
    bg /usr/bin/python3 tests/peers/redfish_server.py --root "$M" --port-file "$TMP/$p.port" \
        --control "$TMP/$p.ctl" --follow "$TMP/limits:2:650:412:1.07"
    wait_for 10 test -s "$TMP/$p.port" || { not_ok "the $p peer starts"; finish; }
done
PORT=$(free_port)
# conf NAME METERS...: the daemon's config with a topology of these meters (the daemon reads
# both targets whatever its topology; calibrate takes the wall from the file it is given)
conf() {
    local name=$1
    shift
    {
        cat <<EOT
daemon: {interval: 1s, listen: "127.0.0.1:$PORT"}
store: {path: "$TMP/w/w.db"}
collectors:
  redfish:
    interval: 1s
    targets:
      - {name: slowpdu, url: "http://127.0.0.1:$(cat "$TMP/pdu.port")", node: n1, interval: 30s}
      - {name: bmc1, url: "http://127.0.0.1:$(cat "$TMP/bmc.port")", node: n1}
topology:
  node: n1
  meters:
EOT
        for m in "$@"; do echo "    - $m"; done
    } >"$TMP/$name.yaml"
}
PDU='{target: slowpdu, point: "1", role: pdu_outlet, node: n1}'
BMC='{target: bmc1, role: bmc, node: n1}'
conf pdu "$PDU"
conf both "$PDU" "$BMC"
conf bmc "$BMC"
check "check-config accepts a target polled every 30 s" "$BIN" check-config "$TMP/both.yaml"
"$BIN" run -c "$TMP/both.yaml" >"$TMP/run.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
both() {
    curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/m.txt" &&
        grep -q '^wattage_facility_power_watts{.*target="slowpdu"' "$TMP/m.txt" &&
        grep -q '^wattage_facility_power_watts{.*target="bmc1"' "$TMP/m.txt"
}
wait_for 20 both || { not_ok "the daemon reads both targets" "$(tail -n 5 "$TMP/run.log")"; finish; }
# Each facility entry of the status has its reading's time: slowpdu's stays, bmc1's moves on.
ts() { curl -sf "http://127.0.0.1:$PORT/api/v1/status" | python3 -c '
import json, sys
print(" ".join(f["target"] + "=" + f["t"] for f in json.load(sys.stdin)["facility"]))'; }
t1=$(ts)
sleep 2.5
t2=$(ts)
if python3 -c '
import sys
a = dict(x.split("=") for x in sys.argv[1].split())
b = dict(x.split("=") for x in sys.argv[2].split())
assert a["slowpdu"] == b["slowpdu"] and a["bmc1"] < b["bmc1"], (a, b)
assert all(v.endswith("Z") and len(v) == 24 for v in b.values()), b
' "$t1" "$t2" 2>"$TMP/py.err"; then ok "/api/v1/status: each facility entry has its reading's time \"t\" (the 30-s PDU's stays)"
else not_ok "/api/v1/status: each facility entry has its reading's time" "$t1" "$t2" "$(cat "$TMP/py.err")"; fi

# restored: every GPU's last limit in the driver state is its own 700 W, and no record left
restored() {
    awk '{ last[$1] = $2 } END { for (g in last) if (last[g] != 700) exit 1 }' "$TMP/limits" &&
        [[ ! -s $TMP/w/power-caps ]]
}

# ---- the 30-s PDU outlet alone: named, no model, limits restored ------------------------------
"$BIN" calibrate -c "$TMP/pdu.yaml" --load "sleep 600" --steps 100,50 --hold 4s \
    >"$TMP/pdu.out" 2>"$TMP/pdu.err"
rc=$?
if [[ $rc == 1 ]] && grep -Eq '^wattage calibrate: pdu_outlet slowpdu/1: [01] fresh readings? in step 100 % \(its last at [0-9]{2}:[0-9]{2}:[0-9]{2} UTC, polled every 30 s\): use --hold of at least 120 s' "$TMP/pdu.err"; then
    ok "a PDU outlet polled every 30 s: named with the step, its last reading, its interval and the hold it needs"
else not_ok "a PDU outlet polled every 30 s: named" "rc=$rc" "$(cat "$TMP/pdu.out" "$TMP/pdu.err")"; fi
check "  said before the load starts too, as a warning" grep -q '^wattage calibrate: warning: pdu_outlet slowpdu/1 reads every 30 s at best: a --hold under 120 s gives it fewer than 2 readings per step$' "$TMP/pdu.err"
check "  no wall fresh at every step: no model stored, said" \
    grep -q 'no wall meter of node n1 has fresh readings at every step: no model stored' "$TMP/pdu.err"
check "  no model file" test ! -e "$TMP/w/calibration.json"
if grep -q '^0 350$' "$TMP/limits" && restored; then ok "  the limits went to 350 W and are back at 700 W, the record empty"
else not_ok "  the limits are back" "$(cat "$TMP/limits")"; fi

# ---- the PDU outlet and a fresh BMC: the BMC is the wall, said; the fit within 2 % -----------
: >"$TMP/limits"
"$BIN" calibrate -c "$TMP/both.yaml" --load "sleep 600" --steps 100,75,50,30 --hold 4s \
    >"$TMP/both.out" 2>"$TMP/both.err"
rc=$?
if [[ $rc == 0 ]] && grep -q "the wall is node n1's bmc instead, fresh at every step" "$TMP/both.err" &&
    grep -q '^wattage calibrate: pdu_outlet slowpdu/1: [01] fresh readings\? in step 100 %' "$TMP/both.err"; then
    ok "with a fresh BMC beside it: the stale outlet named, the BMC the wall, said"
else not_ok "with a fresh BMC beside it: the BMC the wall" "rc=$rc" "$(cat "$TMP/both.out" "$TMP/both.err")"; fi
if python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["models"]
assert len(m) == 1 and m[0]["node"] == "n1" and m[0]["wall"] == "bmc" and m[0]["tracks"], m
assert abs(m[0]["a_watts"] - 412) / 412 < 0.02, m[0]["a_watts"]
assert abs(m[0]["b"] - 1.07) / 1.07 < 0.02, m[0]["b"]
assert m[0]["points"] == 4, m
' "$TMP/w/calibration.json" 2>"$TMP/py.err"; then ok "  the fit from the BMC recovers 412 W and 1.07 within 2 %"
else not_ok "  the fit from the BMC within 2 %" "$(cat "$TMP/py.err")" "$(cat "$TMP/both.out")"; fi
# each step counted the BMC's own readings: at least 2, none of the PDU's stale one
if python3 -c '
import re, sys
n = [int(m.group(1)) for m in re.finditer(r"\(\d+ samples, (\d+) fresh wall readings\)", open(sys.argv[1]).read())]
assert len(n) == 4 and all(2 <= k <= 4 for k in n), n
' "$TMP/both.out" 2>"$TMP/py.err"; then ok "  each step counted 2 to 4 fresh wall readings (the BMC's, each once)"
else not_ok "  each step counted 2 to 4 fresh wall readings" "$(cat "$TMP/py.err")" "$(cat "$TMP/both.out")"; fi
check "  the limits are back" restored

# ---- a BMC that answers in 3 s: named with its answer time -----------------------------------
rm -f "$TMP/w/calibration.json"
echo "slow 3" >"$TMP/bmc.ctl"
slow_poll() { curl -sf "http://127.0.0.1:$PORT/api/v1/status" | python3 -c '
import json, sys
c = [c for c in json.load(sys.stdin)["collectors"] if c["name"] == "redfish:bmc1"][0]
sys.exit(c.get("duration_seconds", 0) < 2.5)'; }
wait_for 30 slow_poll || not_ok "the daemon's polls of bmc1 take 3 s"
"$BIN" calibrate -c "$TMP/bmc.yaml" --load "sleep 600" --steps 100,50 --hold 4s \
    >"$TMP/slow.out" 2>"$TMP/slow.err"
rc=$?
if [[ $rc == 1 ]] && grep -Eq '^wattage calibrate: bmc bmc1/1: [01] fresh readings? in step 100 % \(its last at [0-9:]{8} UTC, polled every 1 s, answering in [3-9]\.[0-9] s\): use --hold of at least (1[2-9]|[2-9][0-9]) s' "$TMP/slow.err" &&
    [[ ! -e $TMP/w/calibration.json ]] && restored; then
    ok "a BMC answering in 3 s: named with its answer time and the hold it needs, no model, limits restored"
else not_ok "a BMC answering in 3 s: named" "rc=$rc" "$(cat "$TMP/slow.out" "$TMP/slow.err")"; fi
echo ok >"$TMP/bmc.ctl"
kill -TERM "$RUN_PID"
wait "$RUN_PID"

# ---- a daemon older than "t": its walls cannot be told fresh, and it is named as the cause ---
# (a peer that answers GET /api/v1/status as wattage did before facility entries had "t")
cat >"$TMP/old.py" <<'PY'
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
DOC = json.dumps({"gpus": [{"index": i, "uuid": "GPU-old-%d" % i, "up": True, "power_watts": 650}
                           for i in range(2)], "cpu": [],
                  "facility": [{"source": "redfish", "target": "bmc1", "point": "1",
                                "kind": "chassis", "power_watts": 1803}],
                  "collectors": [{"name": "redfish:bmc1", "present": True, "up": True,
                                  "interval_seconds": 1, "duration_seconds": 0.002}]}).encode()
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/api/v1/status" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(DOC)))
        self.end_headers()
        self.wfile.write(DOC)
    def log_message(self, *a):
        pass
s = HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
bg /usr/bin/python3 "$TMP/old.py" "$TMP/old.port"
wait_for 10 test -s "$TMP/old.port" || not_ok "the old daemon's peer starts"
sed "s/127.0.0.1:$PORT/127.0.0.1:$(cat "$TMP/old.port")/" "$TMP/bmc.yaml" >"$TMP/old.yaml"
: >"$TMP/limits"
"$BIN" calibrate -c "$TMP/old.yaml" --load "sleep 600" --steps 100,50 --hold 2s \
    >"$TMP/old.out" 2>"$TMP/old.err"
rc=$?
if [[ $rc == 1 ]] && grep -q '^wattage calibrate: bmc bmc1/1: 0 fresh readings in step 100 % (no reading, polled every 1 s): the daemon serves it without its time ("t"): run this version.s daemon$' "$TMP/old.err" &&
    [[ ! -e $TMP/w/calibration.json ]] && grep -q '^0 350$' "$TMP/limits" && restored; then
    ok "a daemon without \"t\": named as the cause, no model, limits restored"
else not_ok "a daemon without \"t\": named as the cause" "rc=$rc" "$(cat "$TMP/old.out" "$TMP/old.err")"; fi
finish
