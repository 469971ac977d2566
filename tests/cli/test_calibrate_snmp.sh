#!/usr/bin/env bash
# `wattage calibrate` with the wall a PDU outlet read over SNMP: Debian's snmpd serves an APC
# rack PDU (sysObjectID 1.3.6.1.4.1.318.1.3.4.5, PowerNet-MIB rPDU2OutletMeteredStatus table)
# through a pass_persist script whose outlet 1 (node n1, this node) draws 412 W + 1.07 x the
# fake GPUs' power and outlet 2 (node n2, another node in the topology) 300 W + 0.5 x it. The
# fit recovers n1's offset and slope within 2 %, from outlet 1 alone: were outlet 2 added, the
# fit would read 712 W + 1.57.
source "$(dirname "$0")/lib.sh"

if [[ ! -x /usr/sbin/snmpd ]]; then
    skip "SNMP PDU calibration" "snmpd is not installed (scripts/deps.sh installs it)"
    finish
fi
mkdir -p "$TMP/empty" "$TMP/snmpd-state" "$TMP/w"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=650,0,0
export FAKE_NVML_T0=$(date +%s) FAKE_NVML_LIMITS_FILE=$TMP/limits

# The outlets' table, computed at every request from the fake NVML's driver state (its limits
# file: the last "GPU WATTS" line per GPU; 700 W without one), as a wall follows its chips.
cat >"$TMP/pdu.py" <<'PY'
import sys
LIMITS, GPUS, BASE = sys.argv[1], 2, 650.0
T = (1, 3, 6, 1, 4, 1, 318, 1, 1, 26, 9, 4, 3, 1)  # rPDU2OutletMeteredStatusEntry
OUTLETS = {1: ("gpu-n1", 412.0, 1.07), 2: ("gpu-n2", 300.0, 0.5)}

def chips():
    lim = {}
    try:
        for line in open(LIMITS):
            f = line.split()
            if len(f) == 2:
                lim[int(f[0])] = float(f[1])
    except OSError:
        pass
    return sum(min(BASE, lim.get(i, 700.0)) for i in range(GPUS))

def rows():
    c = chips()
    r = []
    for col in (3, 7):  # rPDU2OutletMeteredStatusName, ...ActivePower (W)
        for i, (name, off, slope) in sorted(OUTLETS.items()):
            if col == 3:
                r.append((T + (col, i), "string", name))
            else:
                r.append((T + (col, i), "integer", str(int(round(off + slope * c)))))
    return r

def oid(s):
    return tuple(int(x) for x in s.strip().strip(".").split(".") if x)

def answer(o):
    print("." + ".".join(map(str, o[0])))
    print(o[1])
    print(o[2])

out = sys.stdout
while True:
    cmd = sys.stdin.readline()
    if not cmd:
        break
    cmd = cmd.strip()
    if cmd == "PING":
        print("PONG")
    elif cmd in ("get", "getnext"):
        want = oid(sys.stdin.readline())
        hit = None
        for r in rows():
            if (cmd == "get" and r[0] == want) or (cmd == "getnext" and r[0] > want):
                hit = r
                break
        answer(hit) if hit else print("NONE")
    elif cmd == "set":
        sys.stdin.readline()
        sys.stdin.readline()
        print("not-writable")
    out.flush()
PY
SNMPPORT=$(free_port)
cat >"$TMP/snmpd.conf" <<EOF
rocommunity public 127.0.0.1
sysObjectID 1.3.6.1.4.1.318.1.3.4.5
pass_persist .1.3.6.1.4.1.318.1.1.26.9.4.3.1 /usr/bin/python3 $TMP/pdu.py $TMP/limits
EOF
SNMP_PERSISTENT_DIR=$TMP/snmpd-state /usr/sbin/snmpd -f -C -c "$TMP/snmpd.conf" -M /nonexistent -m "" \
    -Lf "$TMP/snmpd.log" -p "$TMP/snmpd.pid" udp:127.0.0.1:$SNMPPORT &
T_PIDS="$T_PIDS $!"

PORT=$(free_port)
cat >"$TMP/w.yaml" <<EOT
daemon: {interval: 1s, listen: "127.0.0.1:$PORT"}
store: {path: "$TMP/w/w.db"}
collectors:
  snmp:
    interval: 1s
    targets: [{name: pdu1, address: "127.0.0.1:$SNMPPORT", community: public, timeout: 1s, retries: 1}]
topology:
  node: n1
  meters:
    - {target: pdu1, point: outlet1, role: pdu_outlet, node: n1}
    - {target: pdu1, point: outlet2, role: pdu_outlet, node: n2}
EOT
check "check-config accepts the PDU and its two nodes' outlets" "$BIN" check-config "$TMP/w.yaml"
"$BIN" run -c "$TMP/w.yaml" >"$TMP/run.log" 2>&1 &
RUN_PID=$!
T_PIDS="$T_PIDS $RUN_PID"
wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
# both outlets on /metrics with the values the PDU serves at 1300 W of chips
outlets() {
    curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/m.txt" &&
        grep -Eq '^wattage_facility_power_watts\{.*target="pdu1",point="outlet1"[,}].* 1803(\.0+)?$' "$TMP/m.txt" &&
        grep -Eq '^wattage_facility_power_watts\{.*target="pdu1",point="outlet2"[,}].* 950(\.0+)?$' "$TMP/m.txt"
}
if wait_for 30 outlets; then ok "the daemon reads both outlets over SNMP (1803 W and 950 W)"
else
    not_ok "the daemon reads both outlets over SNMP" "$(grep '^wattage_facility_power' "$TMP/m.txt")" \
        "$(tail -n 5 "$TMP/run.log" "$TMP/snmpd.log")"
    finish
fi

"$BIN" calibrate -c "$TMP/w.yaml" --load "sleep 600" --steps 100,75,50,30 --hold 4s \
    >"$TMP/cal.out" 2>"$TMP/cal.err"
rc=$?
if [[ $rc == 0 ]] && grep -q '^model of node n1 stored' "$TMP/cal.out"; then ok "calibrate fits and stores n1's model"
else not_ok "calibrate fits and stores n1's model" "rc=$rc" "$(cat "$TMP/cal.out" "$TMP/cal.err")"; fi
if python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["models"]
assert len(m) == 1 and m[0]["node"] == "n1" and m[0]["wall"] == "pdu_outlet" and m[0]["tracks"], m
assert abs(m[0]["a_watts"] - 412) / 412 < 0.02, m[0]["a_watts"]
assert abs(m[0]["b"] - 1.07) / 1.07 < 0.02, m[0]["b"]
assert m[0]["points"] == 4, m
' "$TMP/w/calibration.json" 2>"$TMP/py.err"; then ok "the fit recovers 412 W and 1.07 within 2 %, from the PDU outlet"
else not_ok "the fit recovers 412 W and 1.07 within 2 %" "$(cat "$TMP/py.err")" "$(cat "$TMP/cal.out")"; fi
# the steps' wall column is outlet 1 alone: 412 + 1.07 x (1300, 1050, 700, 420) W
if python3 -c '
import re, sys
want = [412 + 1.07 * c for c in (1300, 1050, 700, 420)]
got = [float(m.group(1)) for m in re.finditer(r"pdu_outlet +([0-9.]+) W", open(sys.argv[1]).read())]
assert len(got) == 4 and all(abs(g - w) < 0.01 * w for g, w in zip(got, want)), (got, want)
' "$TMP/cal.out" 2>"$TMP/py.err"; then ok "each step reads n1's outlet only, not n2's"
else not_ok "each step reads n1's outlet only, not n2's" "$(cat "$TMP/py.err")" "$(cat "$TMP/cal.out")"; fi
if awk '{ last[$1] = $2 } END { for (g in last) if (last[g] != 700) exit 1 }' "$TMP/limits" &&
    [[ ! -s $TMP/w/power-caps ]] && grep -q '^0 210$' "$TMP/limits"; then
    ok "the limits went down to 210 W and are back at 700 W, the record empty"
else not_ok "the limits went down to 210 W and are back" "$(cat "$TMP/limits")"; fi
kill -TERM "$RUN_PID"
wait "$RUN_PID"
finish
