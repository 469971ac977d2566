#!/usr/bin/env bash
# Modbus meters on the real daemon with 8 fake GPUs, each meter a libmodbus server
# (tests/peers/modbus_meter): a healthy facility meter is on /metrics with its register values
# in base units; a meter that drops the connection and one that stops answering each fail
# their own polls only, the GPUs stay on time (gaps between NVML ticks checked), and a meter
# that comes back is read again on a new connection.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
PEER=$(dirname "$BIN")/tests/peers/modbus_meter
PY=/usr/bin/python3
[[ -x $PEER ]] || { not_ok "the peer $PEER is built"; finish; }

cat >"$TMP/regs" <<'R'
input 0 float32 big 412.5
input 2 u32 little 123456
holding 10 i16 big -35
holding 11 u16 big 2305
R
{
    printf 'collectors:\n  modbus:\n    interval: 300ms\n    targets:\n'
    for name in main dropper hanger; do
        echo ok >"$TMP/$name.mode"
        bg "$PEER" "$TMP/$name.port" "$TMP/regs" "$TMP/$name.mode"
        wait_for 10 test -s "$TMP/$name.port" || { not_ok "meter $name started"; finish; }
        cat <<Y
      - name: $name
        address: 127.0.0.1:$(cat "$TMP/$name.port")
        timeout: 2s
        zone: hall-b
        registers:
          - {name: it_power, address: 0, function: input, type: float32, unit: kW, metric: power}
          - {name: it_energy, address: 2, function: input, type: u32, word_order: little,
             unit: kWh, metric: energy}
          - {name: supply, address: 10, type: i16, scale: 0.1, metric: temperature, kind: chiller}
          - {name: mains, address: 11, scale: 0.1, metric: voltage}
Y
    done
} >"$TMP/m.yaml"
check "check-config accepts the Modbus targets" "$BIN" check-config "$TMP/m.yaml"
echo drop >"$TMP/dropper.mode"
echo hang >"$TMP/hanger.mode"

port=$(free_port)
WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/m.yaml" --interval 0.2 --log-level debug \
    --db "$TMP/m.db" --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
up() { curl -s "127.0.0.1:$port/metrics" >"$TMP/m1" && grep -q '^wattage_facility_up{source="modbus",target="main",zone="hall-b"} 1$' "$TMP/m1"; }
wait_for 10 up
maps=$(grep -oE 'lib(netsnmp|modbus|freeipmi)[^/]*$' "/proc/$pid/maps" | sort -u | paste -sd' ')
check "libmodbus is loaded for the Modbus targets, net-snmp and FreeIPMI are not ($maps)" \
    bash -c '[[ $1 == libmodbus.so.5* && $1 != *" "* ]]' _ "$maps"
sleep 3
curl -s "127.0.0.1:$port/metrics" >"$TMP/m1"
L='source="modbus",target="main"'
check "power in watts (412.5 kW float32)" \
    grep -q "^wattage_facility_power_watts{$L,point=\"it_power\",kind=\"meter\",name=\"it_power\",zone=\"hall-b\"} 412500\$" "$TMP/m1"
check "energy in joules (123456 kWh, little word order)" \
    grep -q "^wattage_facility_energy_joules_total{$L,point=\"it_energy\",kind=\"meter\",name=\"it_energy\",zone=\"hall-b\"} 444441600000\$" "$TMP/m1"
check "a negative temperature with its scale and kind" \
    grep -q "^wattage_facility_temperature_celsius{$L,point=\"supply\",kind=\"chiller\",name=\"supply\",zone=\"hall-b\"} -3.5\$" "$TMP/m1"
check "the dropping meter is down" grep -q '^wattage_collector_up{collector="modbus:dropper"} 0$' "$TMP/m1"
check "the hung meter is down" grep -q '^wattage_collector_up{collector="modbus:hanger"} 0$' "$TMP/m1"
check "wattage_facility_up says so for each (0, with the target's labels)" \
    bash -c 'grep -q "^wattage_facility_up{source=\"modbus\",target=\"dropper\",zone=\"hall-b\"} 0$" "$0" &&
             grep -q "^wattage_facility_up{source=\"modbus\",target=\"hanger\",zone=\"hall-b\"} 0$" "$0"' "$TMP/m1"
check "a down meter's last readings are not shown as current" \
    bash -c '! grep -q "^wattage_facility_voltage_volts{source=\"modbus\",target=\"dropper\"" "$0"' "$TMP/m1"
wait_for 15 grep -q 'modbus:hanger: poll failed' "$TMP/run.log"
check "the dropped connection is logged" grep -q 'modbus:dropper: poll failed: 127.0.0.1' "$TMP/run.log"
check "the hang is cut by the timeout and logged" grep -q 'modbus:hanger: poll failed: .*timed out' "$TMP/run.log"

# Both meters come back: each is read again, on a new connection.
echo ok >"$TMP/dropper.mode"
echo ok >"$TMP/hanger.mode"
wait_for 20 grep -q 'modbus:dropper: recovered after' "$TMP/run.log"
wait_for 20 grep -q 'modbus:hanger: recovered after' "$TMP/run.log"
check "the dropping meter is read again" grep -q 'modbus:dropper: recovered after' "$TMP/run.log"
check "the hung meter is read again" grep -q 'modbus:hanger: recovered after' "$TMP/run.log"
curl -s "127.0.0.1:$port/metrics" >"$TMP/m2"
check "its readings are on /metrics" \
    grep -q '^wattage_facility_voltage_volts{source="modbus",target="dropper",point="mains",kind="meter",name="mains",zone="hall-b"} 230.5$' "$TMP/m2"
check "the daemon is still running" kill -0 $pid
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM stops it cleanly (status $rc)" test $rc -eq 0

gaps=$(tick_gaps "$TMP/run.log")
echo "# nvml ticks and the largest gap between two: $gaps"
read -r nticks maxgap <<<"$gaps"
check "NVML ticked all along ($nticks ticks)" test "${nticks:-0}" -ge 18
check "no GPU tick came late while the meters failed (largest gap ${maxgap}s at 0.2s, timeout 2s)" \
    "$PY" -c "import sys; sys.exit(0 if 0 < float(sys.argv[1]) < 1.2 else 1)" "${maxgap:--1}"

# Config errors name file:line and path.
printf 'collectors:\n  modbus:\n    targets:\n      - name: m\n        address: h\n        registers:\n          - {name: p, address: 0, metric: power, word_order: middle}\n' >"$TMP/bad.yaml"
msg=$("$BIN" check-config "$TMP/bad.yaml" 2>&1); rc=$?
check "a bad word order exits 2 with file:line and path ($msg)" \
    bash -c '[[ $0 == 2 && $1 == *"bad.yaml:7: collectors.modbus.targets[0].registers[0].word_order"* ]]' "$rc" "$msg"
finish
