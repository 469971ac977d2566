#!/usr/bin/env bash
# SNMP against real agents: Debian's snmpsim serving the recordings of ../shared/data/snmp
# (v2c, community = file name) and Debian's snmpd with its own config for SNMPv3 authPriv. The
# daemon's /metrics and store are checked against the values LibreNMS decodes from the same
# recordings; then the simulator is killed and the GPU ticks (fake NVML) must keep coming while
# the PDUs are dead, the daemon running and the snmpd target still answering.
source "$(dirname "$0")/lib.sh"

DATA=../shared/data/snmp
PY=/usr/bin/python3
EXPECT=tests/peers/snmp/expect.py
# The recordings that carry LibreNMS's expected values, then others the profiles cover.
ORACLE="apc_ap7900b apc_ap8959eu3 apc_smt750x-nmc2 eatonpdu_2 hpe-mapdu_pdu3 sentry3_3phase
        supermicro-bmc_x11 vertiv-pdu_mn03edr1"
OTHERS="raritan-pdu_px3 sentry4_switched8i"

if ! command -v snmpsimd >/dev/null || [[ ! -x /usr/sbin/snmpd ]]; then
    skip "SNMP peers" "snmpsim or snmpd is not installed (scripts/deps.sh installs them)"
    finish
fi
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
# snmpd keeps its state here, never under /var/lib/snmp.
mkdir -p "$TMP/snmpd-state"

# --- snmpsim on a free loopback port; as root it must drop to an unprivileged user
SIM=$TMP/sim
mkdir -p "$SIM/data" "$SIM/cache"
for n in $ORACLE; do cp "$DATA/librenms-snmprec/$n.snmprec" "$SIM/data/"; done
for n in $OTHERS; do cp "$DATA/librenms-snmprec/$n.snmprec" "$SIM/data/"; done
cp "$DATA/snmpsim-data/eaton-93e-80.snmprec" "$SIM/data/"
# A counter of our own that snmpsim advances with its clock (tests/peers/snmp/variation):
# 858993459.2 uJ/s, wrapping at 2^32 every 5 s; the time and count of each answer go to a log.
mkdir -p "$SIM/variation"
cp tests/peers/snmp/variation/clockcounter.py "$SIM/variation/"
cat >"$SIM/data/counter-wrap.snmprec" <<'EOF'
1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.99999
1.3.6.1.4.1.99999.1.1.0|65:clockcounter|modulus=4294967296,wrap_s=5
EOF
SIMUSER=()
if [[ $(id -u) == 0 ]]; then
    chmod 711 "$TMP"
    chmod -R a+rwX "$SIM"
    SIMUSER=(--process-user=nobody --process-group=nogroup)
fi
SIMPORT=$(free_port)
snmpsimd --data-dir="$SIM/data" --cache-dir="$SIM/cache" \
    --agent-udpv4-endpoint=127.0.0.1:$SIMPORT --logging-method=file:"$SIM/log" "${SIMUSER[@]}" \
    --variation-modules-dir="$SIM/variation" \
    --variation-module-options=clockcounter:"$SIM/answers" \
    >"$SIM/out" 2>&1 &
SIMPID=$!
T_PIDS="$T_PIDS $SIMPID"
if ! wait_for 60 grep -q "Listening at UDP/IPv4 endpoint 127.0.0.1:$SIMPORT" "$SIM/log"; then
    not_ok "snmpsim starts" "$(tail -5 "$SIM/out" "$SIM/log" 2>&1)"
    finish
fi
ok "snmpsim serves the recordings on 127.0.0.1:$SIMPORT"

# --- snmpd for SNMPv3 authPriv, as the current user, with only our config
V3PORT=$(free_port)
cat >"$TMP/snmpd.conf" <<EOF
createUser wattage SHA-256 "auth-pass-1234" AES "priv-pass-5678"
createUser other SHA "other-auth-1234" AES "other-priv-5678"
rouser -s usm wattage priv
rouser -s usm other priv
sysObjectID 1.3.6.1.4.1.534.1
override 1.3.6.1.2.1.33.1.1.2.0 octet_str "Test UPS"
override 1.3.6.1.2.1.33.1.4.4.1.2.1 integer 231
override 1.3.6.1.2.1.33.1.4.4.1.3.1 integer 47
override 1.3.6.1.2.1.33.1.4.4.1.4.1 integer 1012
override 1.3.6.1.4.1.99999.1.1.0 counter 4321
EOF
SNMP_PERSISTENT_DIR=$TMP/snmpd-state /usr/sbin/snmpd -f -C -c "$TMP/snmpd.conf" -M /nonexistent -m "" -Lf "$TMP/snmpd.log" \
    -p "$TMP/snmpd.pid" udp:127.0.0.1:$V3PORT &
T_PIDS="$T_PIDS $!"
printf 'auth-pass-1234\n' >"$TMP/auth"
printf 'priv-pass-5678\n' >"$TMP/priv"
printf 'wrong-pass-0000\n' >"$TMP/badpriv"
printf 'other-auth-1234\n' >"$TMP/oauth"
printf 'eaton-93e-80\n' >"$TMP/community"

# --- the daemon: every recording a target, plus v3, a generic profile and a silent port
{
    printf 'collectors:\n  nvml:\n    interval: 0.25s\n  snmp:\n    interval: 2s\n    targets:\n'
    for n in $ORACLE $OTHERS; do
        printf '      - {name: %s, address: "127.0.0.1:%s", community: %s, timeout: 3s, retries: 1}\n' \
            "$n" "$SIMPORT" "$n"
    done
    cat <<EOF
      - name: eaton-93e-80
        address: 127.0.0.1:$SIMPORT
        community_file: $TMP/community
        timeout: 3s
        retries: 1
        node: gpu-node-1
        rack: r7
        zone: hall-a
      - name: v3ups
        address: 127.0.0.1:$V3PORT
        version: "3"
        user: wattage
        auth_protocol: SHA-256
        auth_password_file: $TMP/auth
        priv_protocol: AES
        priv_password_file: $TMP/priv
        timeout: 1s
      - name: v3generic
        address: 127.0.0.1:$V3PORT
        version: "3"
        user: wattage
        auth_protocol: SHA-256
        auth_password_file: $TMP/auth
        priv_password_file: $TMP/priv
        profile: generic
        generic:
          - {oid: 1.3.6.1.4.1.99999.1.1.0, metric: energy, unit: kWh, scale: 0.1, kind: meter}
      - name: v3wrong
        address: 127.0.0.1:$V3PORT
        version: "3"
        user: other
        auth_password_file: $TMP/oauth
        priv_password_file: $TMP/badpriv
        timeout: 1s
      - name: counter-wrap
        address: 127.0.0.1:$SIMPORT
        community: counter-wrap
        interval: 1s
        profile: generic
        generic:
          - {oid: 1.3.6.1.4.1.99999.1.1.0, metric: energy, unit: J, scale: 0.000001, kind: meter}
      - name: silent
        address: 127.0.0.1:$(free_port)
        community: public
        timeout: 1s
        retries: 1
EOF
} >"$TMP/w.yaml"
check "check-config accepts the SNMP targets" "$BIN" check-config "$TMP/w.yaml"
printf 'collectors:\n  snmp:\n    targets:\n      - name: a\n        address: h:70000\n        community: x\n' \
    >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1); rc=$?
check "a bad SNMP target: exit 2, file:line and path ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"bad.yaml:5: collectors.snmp.targets[0].address"* ]]' "$rc" "$msg"

# --- a daemon without facility targets maps none of the protocols' libraries (each is loaded
# with dlopen when its section has a target)
PORT=$(free_port)
printf '# no facility section\n' >"$TMP/none.yaml"
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/none.yaml" --listen 127.0.0.1:$PORT \
    --db "$TMP/none.db" >"$TMP/none.log" 2>&1 &
NPID=$!
T_PIDS="$T_PIDS $NPID"
if wait_for 30 curl -sf "http://127.0.0.1:$PORT/metrics" -o /dev/null; then
    maps=$(grep -oE 'lib(netsnmp|modbus|freeipmi)[^/]*$' "/proc/$NPID/maps" | sort -u)
    check "a daemon without facility targets maps neither net-snmp, libmodbus nor FreeIPMI ($maps)" \
        test -z "$maps"
else
    not_ok "a daemon without facility targets starts" "$(tail -5 "$TMP/none.log")"
fi
kill -TERM "$NPID"
wait "$NPID" 2>/dev/null

PORT=$(free_port)
# Were net-snmp to save state, the variable would send it here: it must stay absent.
SNMP_PERSISTENT_DIR=$TMP/daemon-snmp-state WATTAGE_NVML_LIBRARY=$FAKE_NVML \
    "$BIN" run -c "$TMP/w.yaml" --listen 127.0.0.1:$PORT \
    --db "$TMP/x.db" >"$TMP/run.log" 2>&1 &
WPID=$!
T_PIDS="$T_PIDS $WPID"
metrics() { curl -sf "http://127.0.0.1:$PORT/metrics"; }
all_up() {
    local m n
    m=$(metrics) || return 1
    for n in $ORACLE $OTHERS eaton-93e-80 v3ups v3generic counter-wrap; do
        [[ $m == *"wattage_facility_up{source=\"snmp\",target=\"$n\""* ]] || return 1
    done
}
# snmpsim is one Python process serving 11 PDUs: on a loaded machine give it time.
if ! wait_for 90 all_up; then
    not_ok "every reachable target answers" "$(metrics | grep facility_up)" "$(tail -20 "$TMP/run.log")"
    finish
fi
ok "every reachable target answers (wattage_facility_up)"
maps=$(grep -oE 'lib(netsnmp|modbus|freeipmi)[^/]*$' "/proc/$WPID/maps" | sort -u | paste -sd' ')
check "net-snmp is loaded for the SNMP targets, libmodbus and FreeIPMI are not ($maps)" \
    bash -c '[[ $1 == libnetsnmp.so.40* && $1 != *" "* ]]' _ "$maps"
sleep 2.5 # a second poll: energy counters have a previous reading
metrics >"$TMP/metrics.txt"

out=$($PY "$EXPECT" "$TMP/metrics.txt" "$DATA/librenms-expected-sensors" $ORACLE 2>&1); rc=$?
echo "$out"
check "every expected sensor of the 8 recordings is on /metrics with LibreNMS's value" test $rc -eq 0

info() { grep "^wattage_facility_info{source=\"snmp\",target=\"$1\"" "$TMP/metrics.txt"; }
check "the profile is chosen by sysObjectID (Eaton ePDU)" \
    bash -c '[[ $1 == *profile=\"eaton-epdu\"* && $1 == *sys_object_id=\"1.3.6.1.4.1.534.6.6.7\"* && $1 == *model=\"EMA114-10\"* ]]' _ "$(info eatonpdu_2)"
check "Raritan PX3 with the PDU2 profile" bash -c '[[ $1 == *profile=\"raritan-pdu2\"* ]]' _ "$(info raritan-pdu_px3)"
check "Sentry4 with its profile" bash -c '[[ $1 == *profile=\"sentry4\"* ]]' _ "$(info sentry4_switched8i)"
# The recording has no st4UnitModel: the model is its st4SystemProductName (a second GET).
st4prod=$(grep '^1.3.6.1.4.1.1718.4.1.1.1.1.0|' "$DATA/librenms-snmprec/sentry4_switched8i.snmprec" | cut -d'|' -f3)
check "Sentry4's model is the recording's product name ($st4prod)" \
    bash -c '[[ -n $2 && $1 == *model=\"$2\"* ]]' _ "$(info sentry4_switched8i)" "$st4prod"
# Raritan outletName (index pdu.outlet) labels the values (index pdu.outlet.sensor).
rname=$(grep '^1.3.6.1.4.1.13742.6.3.5.3.1.3.1.2|' "$DATA/librenms-snmprec/raritan-pdu_px3.snmprec" | cut -d'|' -f3)
check "Raritan outlet 2 carries the recording's outlet name ($rname)" \
    grep -q "^wattage_facility_power_watts{source=\"snmp\",target=\"raritan-pdu_px3\",point=\"outlet2\",kind=\"outlet\",name=\"$rname\"} " "$TMP/metrics.txt"
check "a UPS through UPS-MIB" bash -c '[[ $1 == *profile=\"ups-mib\"* ]]' _ "$(info eaton-93e-80)"
check "outlet names are the name label" \
    grep -q '^wattage_facility_power_watts{source="snmp",target="eatonpdu_2",point="outlet1",kind="outlet",name="Power strip + s-rw-lab-rack"} 80$' "$TMP/metrics.txt"
check "node, rack and zone label every reading of a target" \
    grep -q '^wattage_facility_voltage_volts{source="snmp",target="eaton-93e-80",point="input1",kind="ups_input",node="gpu-node-1",rack="r7",zone="hall-a"} ' "$TMP/metrics.txt"
# Raritan: value / 10^digits from the recording itself (inlet 1 active power, sensor type 5).
rawp=$(grep '^1.3.6.1.4.1.13742.6.5.2.3.1.4.1.1.5|' "$DATA/librenms-snmprec/raritan-pdu_px3.snmprec" | cut -d'|' -f3)
digp=$(grep '^1.3.6.1.4.1.13742.6.3.3.4.1.7.1.1.5|' "$DATA/librenms-snmprec/raritan-pdu_px3.snmprec" | cut -d'|' -f3)
gotp=$(sed -n 's/^wattage_facility_power_watts{source="snmp",target="raritan-pdu_px3",point="inlet1",kind="inlet"} //p' "$TMP/metrics.txt")
check "Raritan inlet power is the recording's value / 10^digits ($rawp/10^$digp = $gotp)" \
    $PY -c 'import sys; r,d,g=sys.argv[1:]; assert abs(float(r)/10**int(d)-float(g))<1e-9' "$rawp" "$digp" "$gotp"

# --- SNMPv3 authPriv against snmpd
check "SNMPv3 authPriv: the UPS-MIB output power from snmpd" \
    grep -q '^wattage_facility_power_watts{source="snmp",target="v3ups",point="output1",kind="ups_output"} 1012$' "$TMP/metrics.txt"
check "SNMPv3: output current in 0.1 A" \
    grep -q '^wattage_facility_current_amperes{source="snmp",target="v3ups",point="output1",kind="ups_output"} 4.7$' "$TMP/metrics.txt"
check "SNMPv3 with a generic profile: 4321 x 0.1 kWh in joules" \
    grep -q '^wattage_facility_energy_joules_total{source="snmp",target="v3generic",point="total",kind="meter"} 1555560000$' "$TMP/metrics.txt"
check "a wrong v3 password: only wattage_facility_up 0, the collector is down" \
    bash -c '[[ $(grep -c "target=\"v3wrong\"" "$1") == 1 ]] && grep -q "^wattage_facility_up{source=\"snmp\",target=\"v3wrong\"} 0$" "$1" && grep -q "^wattage_collector_up{collector=\"snmp:v3wrong\"} 0" "$1"' _ "$TMP/metrics.txt"
check "a silent port: only wattage_facility_up 0, the collector is down" \
    bash -c '[[ $(grep -c "target=\"silent\"" "$1") == 1 ]] && grep -q "^wattage_facility_up{source=\"snmp\",target=\"silent\"} 0$" "$1" && grep -q "^wattage_collector_up{collector=\"snmp:silent\"} 0" "$1"' _ "$TMP/metrics.txt"
# Nothing listens on that port: the kernel answers ICMP port unreachable, which is what the log
# says (at once, not after the timeout and retry).
check "the silent target's failure is logged as port unreachable" grep -q 'snmp:silent: poll failed: target silent: 127.0.0.1:[0-9]*: port unreachable' "$TMP/run.log"
check "no secret in the log" bash -c '! grep -qE "auth-pass-1234|priv-pass-5678|wrong-pass|other-auth" "$1"' _ "$TMP/run.log"

# --- the store has the facility series
sleep 1.2 # one flush
e=$(stored "$TMP/x.db" 'wattage_facility_energy_joules_total{target="apc_ap8959eu3"}' |
    sort -t, -k1,1g | tail -n 1 | awk -F, '{print $NF}')
check "the store holds the APC energy counter in joules (1967.7 kWh: $e)" \
    $PY -c 'import sys; assert abs(float(sys.argv[1]) - 1967.7*3.6e6) < 1' "$e"
n=$(stored "$TMP/x.db" 'wattage_facility_power_watts{target="hpe-mapdu_pdu3"}' |
    $PY -c 'import csv, sys; print(len({r[1] for r in csv.reader(sys.stdin)}))')
check "the store holds every HPE power series ($n)" test "${n:-0}" -ge 28

# --- a Counter32 that wraps every 5 s: each stored step is what the agent counted between the
# two answers behind it (a wrap taken for a reset would lose the part of the step before the
# wrap). The agent answers some time after the poll's stamp (late under load), so the check holds
# the store to the agent's log of its answers (time, count before the modulo), not to a rate
# times the stamps: a stored reading is matched to the one answer between its stamp and the next.
span() {
    local v
    v=$(stored "$TMP/x.db" 'wattage_facility_energy_joules_total{target="counter-wrap"}' |
        $PY -c 'import sys; t = [float(l.split(",")[0]) for l in sys.stdin]
print(int(max(t) - min(t)) if t else 0)')
    [[ ${v:-0} -ge 16 ]]
}
wait_for 40 span
out=$(stored "$TMP/x.db" 'wattage_facility_energy_joules_total{target="counter-wrap"}' |
    $PY -c '
import bisect, sys
from decimal import Decimal
p = sorted((int(Decimal(l.split(",")[0]) * 10**9), float(l.split(",")[-1])) for l in sys.stdin if l.strip())
ans = sorted(tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip())
at = [t for t, _ in ans]
# the answer behind each stored reading but the last: the only one in [its stamp, the next stamp)
match = []
for (s, e), (s2, _) in zip(p, p[1:]):
    i, j = bisect.bisect_left(at, s), bisect.bisect_left(at, s2)
    if j - i == 1:
        match.append((s, e, *ans[i]))
steps = [b[1] - a[1] for a, b in zip(p, p[1:])] or [0]
bad = [(round(b[1] - a[1], 3), (b[3] - a[3]) / 1e6) for a, b in zip(match, match[1:])
       if abs((b[1] - a[1]) - (b[3] - a[3]) / 1e6) > 1e-3]
ok = len(p) >= 8 and min(steps) > 0 and len(match) >= 8 and not bad
if len(match) >= 2:
    a, b = match[0], match[-1]
    wraps = b[3] // 2**32 - a[3] // 2**32
    de = b[1] - a[1]
    print(f"samples={len(p)} matched={len(match)} wraps={wraps} stored_j={de:.3f}",
          f"agent_j={(b[3] - a[3]) / 1e6:.3f} rate_by_stamps_w={de / ((b[0] - a[0]) / 1e9):.1f}",
          f"rate_by_answers_w={de / ((b[2] - a[2]) / 1e9):.1f} min_step_j={min(steps):.1f}",
          f"steps_off={bad[:3]}")
    ok = ok and wraps >= 2 and (b[2] - a[2]) / 1e9 >= 10
else:
    print(f"samples={len(p)} answers={len(ans)} matched={len(match)}")
sys.exit(0 if ok else 1)
' "$SIM/answers"); rc=$?
check "a Counter32 wrapping every 5 s (generic profile, uJ): each stored step is the agent's count between its answers ($out)" test $rc -eq 0

# --- the PDUs stop answering: the daemon and the GPU ticks go on
tk=$($PY -c 'import time; print(time.time_ns())')
kill "$SIMPID"
wait "$SIMPID" 2>/dev/null
gone() {
    metrics >"$TMP/dead.txt"
    [[ $(grep -c 'target="eatonpdu_2"' "$TMP/dead.txt") == 1 ]] &&
        grep -q '^wattage_facility_up{source="snmp",target="eatonpdu_2"} 0$' "$TMP/dead.txt"
}
check "a dead PDU's readings leave /metrics (nothing stale), its wattage_facility_up is 0" wait_for 30 gone
check "its collector is down" bash -c 'curl -sf "$1" | grep -q "^wattage_collector_up{collector=\"snmp:eatonpdu_2\"} 0"' _ "http://127.0.0.1:$PORT/metrics"
sleep 4
check "the daemon is still running" kill -0 "$WPID"
check "snmpd's target still answers" bash -c 'curl -sf "$1" | grep -q "^wattage_facility_up{source=\"snmp\",target=\"v3ups\"} 1"' _ "http://127.0.0.1:$PORT/metrics"
kill -TERM "$WPID"
wait "$WPID"
rc=$?
check "the daemon stops cleanly (exit $rc)" test $rc -eq 0
# GPU 0's power samples from the kill on: they keep coming at about their 0.25 s interval.
stored "$TMP/x.db" 'wattage_gpu_power_watts{gpu="0"}' "$($PY -c "print($tk / 1e9)")" |
    $PY -c 'import sys; [print(round(float(l.split(",")[0]) * 1e9)) for l in sys.stdin]' |
    sort -n >"$TMP/ticks.txt"
out=$($PY - "$TMP/ticks.txt" "$tk" <<'PY'
import sys
t = [int(x) / 1e9 for x in open(sys.argv[1]) if x.strip()]
t0 = int(sys.argv[2]) / 1e9
span = t[-1] - t0 if t else 0
gaps = [b - a for a, b in zip(t, t[1:])]
print(f"samples={len(t)} span_s={span:.2f} max_gap_s={max(gaps) if gaps else -1:.3f}")
ok = span > 4 and len(t) >= span / 0.25 * 0.5 and gaps and max(gaps) < 1.0
sys.exit(0 if ok else 1)
PY
); rc=$?
check "GPU ticks keep coming at ~their interval while the PDUs are dead ($out)" test $rc -eq 0
check "the daemon writes no net-snmp state (no persistent dir made)" test ! -e "$TMP/daemon-snmp-state"

finish
