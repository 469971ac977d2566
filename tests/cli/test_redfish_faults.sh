#!/usr/bin/env bash
# The issue's fault cases for Redfish, on the real daemon with 8 fake GPUs: one service answers
# HTTP 500, one garbage instead of JSON, one never answers (a hang, bounded by its timeout),
# next to a healthy one. The daemon keeps running, the healthy service and the GPUs stay on
# time (the gaps between NVML ticks are checked), and a service that heals is read again.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
DATA=../shared/data/redfish
PY=/usr/bin/python3

{
    printf 'collectors:\n  redfish:\n    interval: 300ms\n    targets:\n'
    for t in ok:ok r500:500 garbage:garbage hang:hang; do
        name=${t%%:*}
        echo "${t#*:}" >"$TMP/$name.ctl"
        bg "$PY" tests/peers/redfish_server.py --root "$DATA/public-rackmount1" \
            --port-file "$TMP/$name.port" --control "$TMP/$name.ctl" --log "$TMP/$name.log"
        wait_for 10 test -s "$TMP/$name.port" || { not_ok "server $name started"; finish; }
        printf '      - name: %s\n        url: http://127.0.0.1:%s\n        timeout: 2s\n' \
            "$name" "$(cat "$TMP/$name.port")"
    done
} >"$TMP/f.yaml"

port=$(free_port)
# WATTAGE_TEST_STOP_PAUSE: at the stop, a pause after each close of a hub sink's owner while the
# power-average and ASHRAE threads (the ok service's inlet temperatures) still publish: a sink
# left in the hub is called on freed memory then, every time, not in a rare interleaving.
WATTAGE_TEST_STOP_PAUSE=0.5 WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" run -c "$TMP/f.yaml" \
    --interval 0.2 --log-level debug --db "$TMP/f.db" --listen "127.0.0.1:$port" \
    >"$TMP/run.log" 2>&1 &
pid=$!
T_PIDS="$T_PIDS $pid"
sleep 4
curl -s "127.0.0.1:$port/metrics" >"$TMP/m1"
check "the healthy service is up while the others fail" \
    grep -q '^wattage_facility_up{source="redfish",target="ok"} 1$' "$TMP/m1"
for t in r500 garbage hang; do
    check "redfish:$t is reported down on /metrics" \
        grep -q "^wattage_collector_up{collector=\"redfish:$t\"} 0$" "$TMP/m1"
done
wait_for 15 grep -q 'redfish:hang: poll failed' "$TMP/run.log"
wait_for 15 grep -q 'redfish:r500: backing off' "$TMP/run.log"
check "HTTP 500 is logged" grep -q 'redfish:r500: poll failed: .*HTTP 500' "$TMP/run.log"
check "garbage JSON is logged" grep -q 'redfish:garbage: poll failed: .*not a JSON object' "$TMP/run.log"
check "the hang ends at the timeout and is logged" grep -q 'redfish:hang: poll failed: .*imed out' "$TMP/run.log"
check "the failing services back off" grep -q 'redfish:r500: backing off' "$TMP/run.log"

# The 500 service heals: it is read again (after its backoff), the others go on failing.
echo ok >"$TMP/r500.ctl"
wait_for 20 grep -q 'redfish:r500: recovered after' "$TMP/run.log"
check "a healed service is read again" grep -q 'redfish:r500: recovered after' "$TMP/run.log"
curl -s "127.0.0.1:$port/metrics" >"$TMP/m2"
check "its readings are back" \
    grep -q '^wattage_facility_power_watts{source="redfish",target="r500",point="1U",kind="chassis"' "$TMP/m2"
check "the GPUs are read throughout" grep -q '^wattage_gpu_power_watts{gpu="7"' "$TMP/m2"
check "the daemon is still running" kill -0 $pid
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM stops it cleanly despite a hung service (status $rc)" test $rc -eq 0

# The GPU ticks stayed on time while the faults happened: no gap near a Redfish timeout.
gaps=$(tick_gaps "$TMP/run.log")
echo "# nvml ticks and the largest gap between two: $gaps"
read -r nticks maxgap <<<"$gaps"
check "NVML ticked all along ($nticks ticks)" test "${nticks:-0}" -ge 18
check "no GPU tick came late while Redfish failed (largest gap ${maxgap}s at 0.2s, timeout 2s)" \
    "$PY" -c "import sys; sys.exit(0 if 0 < float(sys.argv[1]) < 1.2 else 1)" "${maxgap:--1}"
finish
