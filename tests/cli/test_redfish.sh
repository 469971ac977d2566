#!/usr/bin/env bash
# Redfish collector against DMTF's public mockups served by a real HTTP server
# (tests/peers/redfish_server.py): every measurement the rackmount server, the rack PDU, the
# power shelf, the cooling unit, the liquid-cooled server, the tower server (whose second PSU
# repeats the first one's Id) and the multi-tray chassis of the telemetry mockup (legacy Power
# and Thermal only), and real Dell iDRAC 9 and HPE iLO 5 answers give is on /metrics with the value
# of the mockup JSON, once (tests/peers/redfish_expect.py computes the expectations from the
# JSON alone); config errors name file:line and path; insecure is logged.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$TMP/no-such-lib.so
DATA=../shared/data/redfish
PY=/usr/bin/python3

start_server() { # NAME MOCKUP [ARGS...]
    local name=$1 mock=$2; shift 2
    bg "$PY" tests/peers/redfish_server.py --root "$mock" --port-file "$TMP/$name.port" \
        --log "$TMP/$name.log" "$@"
    wait_for 10 test -s "$TMP/$name.port" || { not_ok "server $name started"; finish; }
}

# Real BMC answers (Telegraf's captures of a Dell iDRAC 9 and an HPE iLO 5) put in the mockup
# layout: Dell and HPE with the legacy Power and Thermal, HPE with PowerSubsystem and
# ThermalSubsystem.
V=$DATA/vendor-responses-telegraf
put() { mkdir -p "$TMP/$1/$(dirname "$2")"; cp "$3" "$TMP/$1/$2"; }
coll() { mkdir -p "$TMP/$1/$2"; printf '{"Members": [{"@odata.id": "/redfish/v1/%s"}]}' "$3" >"$TMP/$1/$2/index.json"; }
put dell index.json "$V/base.json"
coll dell Chassis Chassis/System.Embedded.1
put dell Chassis/System.Embedded.1/index.json "$V/dell/dell_chassis.json"
put dell Chassis/System.Embedded.1/Power/index.json "$V/dell/dell_power.json"
put dell Chassis/System.Embedded.1/Thermal/index.json "$V/dell/dell_thermal.json"
put hpe index.json "$V/base.json"
coll hpe Chassis Chassis/1
put hpe Chassis/1/index.json "$V/hp/hp_chassis.json"
put hpe Chassis/1/Power/index.json "$V/hp/hp_power.json"
put hpe Chassis/1/Thermal/index.json "$V/hp/hp_thermal.json"
H=$V/hp/power_subsys T=$V/hp/thermal_subsys
put hpesub index.json "$V/base.json"
coll hpesub Chassis Chassis/1
put hpesub Chassis/1/index.json "$V/hp/hp_chassis_subsys.json"
put hpesub Chassis/1/PowerSubsystem/index.json "$H/hp_power_subsys.json"
put hpesub Chassis/1/PowerSubsystem/PowerSupplies/index.json "$H/hp_power_subsys_psu.json"
put hpesub Chassis/1/PowerSubsystem/PowerSupplies/PowerSupply1/index.json "$H/hp_power_subsys_psu_1.json"
put hpesub Chassis/1/PowerSubsystem/PowerSupplies/PowerSupply1/Metrics/index.json "$H/hp_power_subsys_metrics.json"
put hpesub Chassis/1/ThermalSubsystem/index.json "$T/hp_thermal_subsys.json"
put hpesub Chassis/1/ThermalSubsystem/ThermalMetrics/index.json "$T/hp_thermal_metrics.json"
put hpesub Chassis/1/ThermalSubsystem/Fans/index.json "$T/hp_thermal_subsys_fans.json"
put hpesub Chassis/1/ThermalSubsystem/Fans/0/index.json "$T/hp_thermal_subsys_fans_0.json"

MOCKS="bmc:public-rackmount1 pdu:public-pdu shelf:public-power-shelf cdu:public-cooling-unit lc:public-liquid-cooled-server tower:public-tower tray:public-telemetry dell:$TMP/dell hpe:$TMP/hpe hpesub:$TMP/hpesub"
{
    printf 'collectors:\n  redfish:\n    interval: 1s\n    targets:\n'
    for m in $MOCKS; do
        name=${m%%:*}
        mock=${m#*:}
        [[ $mock == /* ]] || mock=$DATA/$mock
        start_server "$name" "$mock"
        printf '      - name: %s\n        url: http://127.0.0.1:%s/redfish/v1/\n        rack: r7\n' \
            "$name" "$(cat "$TMP/$name.port")"
    done
} >"$TMP/rf.yaml"
check "check-config accepts the Redfish targets" "$BIN" check-config "$TMP/rf.yaml"

port=$(free_port)
bg "$BIN" run -c "$TMP/rf.yaml" --db "$TMP/rf.db" --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1
pid=$!
all_up() {
    curl -s "127.0.0.1:$port/metrics" >"$TMP/metrics" &&
        [[ $(grep -c '^wattage_facility_up{source="redfish",target="[a-z]*",rack="r7"} 1' "$TMP/metrics") == 10 ]]
}
wait_for 20 all_up
check "all ten Redfish targets are up" all_up
args=()
for m in $MOCKS; do
    mock=${m#*:}
    [[ $mock == /* ]] || mock=$DATA/$mock
    args+=("${m%%:*}=$mock")
done
out=$("$PY" tests/peers/redfish_expect.py "$TMP/metrics" "${args[@]}" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
check "every mockup measurement is exported once with the mockup's value" test $rc -eq 0
check "rack label from the config is on the readings" \
    grep -q 'wattage_facility_power_watts{source="redfish",target="pdu",point="pdu1/A1",kind="outlet",name="Outlet A1, Branch Circuit A",rack="r7"}' "$TMP/metrics"
check "energy in joules (outlet A1: 36166 kWh)" \
    grep -q 'wattage_facility_energy_joules_total{source="redfish",target="pdu",point="pdu1/A1",.*} 130197600000$' "$TMP/metrics"
check "the PDU's identity is on wattage_facility_info" \
    grep -q 'wattage_facility_info{source="redfish",target="pdu",point="pdu1",kind="pdu",vendor="Contoso",model="ZAP4000",rack="r7"} 1' "$TMP/metrics"
check "CDU coolant flow in cubic metres per second (42 L/min)" \
    grep -q 'wattage_facility_liquid_flow_cubic_meters_per_second{source="redfish",target="cdu",point="cdu1/primary1",kind="coolant_primary".*} 0.0007$' "$TMP/metrics"

# Discovery is cached: later polls GET only the kept resources, never the collections again.
n1=$(grep -c '^GET /redfish/v1/Chassis ' "$TMP/bmc.log")
sleep 2.5
n2=$(grep -c '^GET /redfish/v1/Chassis ' "$TMP/bmc.log")
polls=$(grep -c '^GET /redfish/v1/Chassis/1U/EnvironmentMetrics ' "$TMP/bmc.log")
check "the walk ran once ($n1 then $n2 GETs of the Chassis collection; $polls polls)" \
    test "$n1" = 1 -a "$n2" = 1 -a "$polls" -ge 3
check "the daemon is still running" kill -0 $pid
kill -TERM $pid; wait $pid 2>/dev/null

# --- SIGHUP: a target added to the file is read
printf 'collectors:\n  redfish:\n    interval: 500ms\n    targets:\n      - {name: bmc, url: "http://127.0.0.1:%s"}\n' \
    "$(cat "$TMP/bmc.port")" >"$TMP/hup.yaml"
port=$(free_port)
bg "$BIN" run -c "$TMP/hup.yaml" --db "$TMP/hup.db" --listen "127.0.0.1:$port" >"$TMP/hup.log" 2>&1
pid=$!
up_is() { curl -s "127.0.0.1:$port/metrics" | grep -q "^wattage_facility_up{source=\"redfish\",target=\"$1\"} 1$"; }
wait_for 15 up_is bmc
printf 'collectors:\n  redfish:\n    interval: 500ms\n    targets:\n      - {name: pdu, url: "http://127.0.0.1:%s"}\n' \
    "$(cat "$TMP/pdu.port")" >"$TMP/hup.yaml"
kill -HUP $pid
wait_for 15 up_is pdu
check "after SIGHUP the new target is read" up_is pdu
curl -s "127.0.0.1:$port/metrics" >"$TMP/hup.prom"
check "the target removed by the reload left /metrics (readings and self-metrics)" \
    bash -c '! grep -q "target=\"bmc\"\|collector=\"redfish:bmc\"" "$0"' "$TMP/hup.prom"
check "and the status API" bash -c '! curl -s "127.0.0.1:$0/api/v1/status" | grep -q "redfish:bmc"' "$port"
kill -TERM $pid; wait $pid; rc=$?
check "the daemon stops cleanly after the reload (status $rc)" test $rc -eq 0

# --- TLS with a test CA: verified with ca_file; insecure: true works and is logged as a warning;
# the password (basic auth, from its file) never appears in the log.
(cd "$TMP" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout ca.key -out ca.pem -days 2 -subj /CN=wattage-test-ca &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key \
        -out srv.csr -subj /CN=127.0.0.1 &&
    printf 'subjectAltName=IP:127.0.0.1\n' >san.cnf &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem \
        -days 2 -extfile san.cnf) >/dev/null 2>&1
check "a test CA and server certificate are made" test -s "$TMP/srv.pem"
start_server tls "$DATA/public-pdu" --cert "$TMP/srv.pem" --key "$TMP/srv.key" \
    --basic "monitor:Pa55-w0rd-never-logged"
printf 'Pa55-w0rd-never-logged\n' >"$TMP/pw"
tport=$(cat "$TMP/tls.port")
cat >"$TMP/tls.yaml" <<Y
collectors:
  redfish:
    interval: 1s
    targets:
      - {name: verified, url: "https://127.0.0.1:$tport", ca_file: "$TMP/ca.pem",
         username: monitor, password_file: "$TMP/pw"}
      - {name: insecure, url: "https://127.0.0.1:$tport", insecure: true,
         username: monitor, password_file: "$TMP/pw"}
      - {name: untrusted, url: "https://127.0.0.1:$tport", username: monitor,
         password_file: "$TMP/pw"}
Y
port=$(free_port)
bg "$BIN" run -c "$TMP/tls.yaml" --db "$TMP/tls.db" --listen "127.0.0.1:$port" --log-level debug \
    >"$TMP/tls.log" 2>&1
pid=$!
two_up() {
    curl -s "127.0.0.1:$port/metrics" >"$TMP/tm" &&
        grep -q '^wattage_facility_up{source="redfish",target="verified"} 1$' "$TMP/tm" &&
        grep -q '^wattage_facility_up{source="redfish",target="insecure"} 1$' "$TMP/tm"
}
wait_for 20 two_up
check "https with the CA file and with insecure: true are read" two_up
wait_for 20 grep -q 'redfish:untrusted: poll failed' "$TMP/tls.log"
check "an untrusted certificate is refused" \
    grep -q '^wattage_collector_up{collector="redfish:untrusted"} 0$' "$TMP/tm"
check "insecure: true is logged as a warning" \
    grep -q 'warn  redfish: insecure: insecure: true: the TLS certificate of https://127.0.0.1:[0-9]* is NOT verified' "$TMP/tls.log"
why=$(grep -m1 'redfish:untrusted: poll failed' "$TMP/tls.log")
check "the refusal says why ($why)" grep -q 'redfish:untrusted: poll failed: .*certificate' "$TMP/tls.log"
kill -TERM $pid; wait $pid 2>/dev/null
check "the password is in no log line" bash -c '! grep -q "Pa55-w0rd" "$1"' _ "$TMP/tls.log"

# --- config errors: file:line and the dotted path
printf 'collectors:\n  redfish:\n    targets:\n      - name: a\n        url: ftp://x\n' >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1); rc=$?
check "a bad url exits 2 naming file:line and path ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"bad.yaml:5: collectors.redfish.targets[0].url"* ]]' "$rc" "$msg"
printf 'collectors:\n  redfish:\n    targets:\n      - name: a\n        url: http://x\n        insecur: true\n' >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1); rc=$?
check "a misspelt key is named with a suggestion ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"bad.yaml:6: collectors.redfish.targets[0].insecur"* && $1 == *insecure* ]]' "$rc" "$msg"
printf 'collectors:\n  redfish:\n    targets:\n      - name: a\n        url: http://x\n        username: u\n' >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1); rc=$?
check "username without password_file is refused ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"password_file"* ]]' "$rc" "$msg"
printf 'collectors:\n  redfish:\n    targets:\n      - name: a\n        url: http://x\n      - name: a\n        url: http://y\n' >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1); rc=$?
check "duplicate target names are refused ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"bad.yaml:6: collectors.redfish.targets[1].name"* ]]' "$rc" "$msg"
finish
