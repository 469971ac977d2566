#!/usr/bin/env bash
# The clock of a Redfish service against this host's, from the Date header of its answers, on
# the real daemon: two services of the rackmount mockup (tests/peers/redfish_server.py), one
# whose Date is this host's time and one whose Date the test moves ("clock SECONDS" in its
# control file). /metrics has wattage_clock_peer_skew_seconds per service (whole-second dates:
# within 0.5 s and half the round trip); the log warns once when a service's skew goes beyond
# daemon.clock_max_error (10 s here), says once when it is back within, and warns again at the
# next crossing; a skew the bound allows (5 s) is not warned about.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=1
DATA=../shared/data/redfish
PY=/usr/bin/python3

echo ok >"$TMP/sync.ctl"
echo "clock -30" >"$TMP/late.ctl"
{
    printf 'daemon:\n  clock_max_error: 10s\nstore:\n  flush_interval: 200ms\n'
    printf 'topology:\n  meters:\n    - {target: sync, point: 1U, role: facility_total}\n'
    printf 'collectors:\n  redfish:\n    interval: 300ms\n    targets:\n'
    for name in sync late; do
        bg "$PY" tests/peers/redfish_server.py --root "$DATA/public-rackmount1" \
            --port-file "$TMP/$name.port" --control "$TMP/$name.ctl"
        wait_for 10 test -s "$TMP/$name.port" || { not_ok "server $name started"; finish; }
        printf '      - {name: %s, url: "http://127.0.0.1:%s", timeout: 2s, node: n-%s}\n' \
            "$name" "$(cat "$TMP/$name.port")" "$name"
    done
} >"$TMP/c.yaml"
check "check-config accepts the services" "$BIN" check-config "$TMP/c.yaml"

PORT=$(free_port)
bg "$BIN" run -c "$TMP/c.yaml" --db "$TMP/c.db" --interval 0.5 --listen "127.0.0.1:$PORT" \
    2>"$TMP/run.log"
skew() { # TARGET: its skew on /metrics
    curl -s "127.0.0.1:$PORT/metrics" |
        sed -n "s/^wattage_clock_peer_skew_seconds{source=\"redfish\",target=\"$1\",node=\"n-$1\"} //p"
}
near() { # TARGET WANT TOLERANCE
    $PY -c 'import sys; v = sys.argv[1]; sys.exit(0 if v and abs(float(v) - float(sys.argv[2])) <= float(sys.argv[3]) else 1)' \
        "$(skew "$1")" "$2" "$3"
}
check "a service on time: its skew is about 0" wait_for 20 near sync 0 0.6
check "a service 30 s behind: its skew is about -30 s ($(skew late) s)" wait_for 10 near late -30 0.6
warned() { grep -c "redfish: $1: its clock is .* beyond daemon.clock_max_error" "$TMP/run.log"; }
check "  warned about once, beyond daemon.clock_max_error (10.000 s)" \
    test "$(grep -c 'redfish: late: its clock is -\(29\|30\)\.[0-9] s (+/- 0.5 s) from this host.s, beyond daemon.clock_max_error (10.000 s)' "$TMP/run.log")" -eq 1
check "  and the service on time not at all" test "$(warned sync)" -eq 0

now() { $PY -c 'import time; print(f"{time.time():.3f}")'; }
echo "clock 5" >"$TMP/late.ctl"
check "5 s ahead: the skew follows" wait_for 10 near late 5 0.6
t1=$(now)
check "  within the bound again, said once" wait_for 5 grep -q 'redfish: late: its clock is within daemon.clock_max_error again (+[45]\.[0-9] s' "$TMP/run.log"
sleep 1.5
check "  and not warned about" test "$(warned late)" -eq 1
t2=$(now)
echo "clock 45" >"$TMP/late.ctl"
check "45 s ahead: the skew follows" wait_for 10 near late 45 0.6
sleep 1
check "  a new crossing, a new warning (two in all)" test "$(warned late)" -eq 2
t3=$(now)
sleep 0.5 # the last flush
warnings() { # FROM TO: the peer-clock warnings of `wattage kpi --json` over the window
    "$BIN" kpi -c "$TMP/c.yaml" --db "$TMP/c.db" --from "$1" --to "$2" --json 2>/dev/null |
        $PY -c 'import json, sys; [print(w) for w in json.load(sys.stdin).get("warnings", []) if "clock of" in w]'
}
warnings "$t2" "$t3" >"$TMP/w45"
check "wattage kpi over the 45-s phase warns of the service's clock" \
    grep -q 'the clock of redfish:late (for node n-late) was off from this host.s by up to 4[56]\.[0-9] s in this window (wattage_clock_peer_skew_seconds), beyond daemon.clock_max_error (10.000 s)' "$TMP/w45"
check "  of that one only" test "$(wc -l <"$TMP/w45")" -eq 1
warnings "$t1" "$t2" >"$TMP/w5"
check "  and over the 5-s phase of none ($(cat "$TMP/w5"))" test ! -s "$TMP/w5"
check "  and the service was read all along" \
    bash -c "curl -s 127.0.0.1:$PORT/metrics | grep -q '^wattage_facility_up{source=\"redfish\",target=\"late\",node=\"n-late\"} 1'"
finish
