#!/usr/bin/env bash
# Remote write at a stop (daemon.stop_deadline, issue 48): SIGTERM flushes the store for the last
# time and the sender sends what it holds before the daemon exits.
#   1. A real VictoriaMetrics, 2 GPUs, a 5-s store flush (so the last seconds are only in memory
#      at SIGTERM): after the stop the engine holds every reading the store holds, exactly once.
#   2. A receiver that never answers (tests/peers/rw_peer.py /hang, a 30-s timeout): the daemon
#      still stops within daemon.stop_deadline (2 s) and a margin, read from its own log; the next
#      start, the same endpoint now pointing at VictoriaMetrics, sends what was left.
#   3. daemon.stop_deadline 0: nothing is sent at stop, the line says what is left.
#   4. An engine that is down (connection refused), a 20-s deadline: one attempt, the stop ends
#      well before the deadline, the line says what is left.
#   5. No stream configured, a 1-min deadline: the stop does not wait for it, no line at stop.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}

if ! command -v "$VM" >/dev/null; then
    skip "remote write at stop into VictoriaMetrics" "victoria-metrics is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

VPORT=$(free_port)
VM_URL=http://127.0.0.1:$VPORT
bg "$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
    -loggerLevel=ERROR >>"$TMP/vm.log" 2>&1
wait_for 30 curl -sf "$VM_URL/health" -o /dev/null || { not_ok "VictoriaMetrics starts" "$(tail -5 "$TMP/vm.log")"; finish; }
RPORT=$(free_port)
bg $PY tests/peers/rw_peer.py --port "$RPORT"
wait_for 10 curl -sf "http://127.0.0.1:$RPORT/log" -o /dev/null || { not_ok "the peer starts"; finish; }

# conf FILE NODE URL [DEADLINE]: one endpoint "ep", a 5-s store flush
conf() {
    {
        printf 'daemon:\n  stop_deadline: %s\n' "${4:-5s}"
        printf 'topology:\n  node: %s\nstore:\n  flush_interval: 5s\n' "$2"
        printf 'remote_write:\n  - url: %s\n    name: ep\n    deadline: 1s\n    timeout: 30s\n    max_backoff: 1s\n' "$3"
    } >"$1"
}
# run_for CONF DB LOG SECONDS: a daemon for SECONDS, then SIGTERM; its exit status
run_for() {
    local port pid rc
    port=$(free_port)
    "$BIN" run -c "$1" --listen "127.0.0.1:$port" --db "$2" --interval 0.5 --log-level debug 2>"$3" &
    pid=$!
    wait_for 20 curl -sf "http://127.0.0.1:$port/healthz" -o /dev/null
    sleep "$4"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    return $rc
}
# stop_took LOG: seconds from "stopping on SIGTERM" to "stopped", by the daemon's own clock
stop_took() {
    $PY - "$1" <<'PY'
import datetime, re, sys
t = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)Z info  run: (stopping on SIGTERM|stopped)$', line.rstrip())
    if m:
        t[m.group(2)] = datetime.datetime.fromisoformat(m.group(1)).timestamp()
print(round(t["stopped"] - t["stopping on SIGTERM"], 3))
PY
}
# check_stop WHAT LOG MAX: the stop took MAX seconds at most, by the daemon's log
check_stop() {
    local took
    took=$(stop_took "$2")
    check "$1 (${took} s by its log)" \
        $PY -c 'import sys; sys.exit(0 if 0 <= float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "${took:--1}" "$3"
}
# export_check DB NODE MAX_UNSENT: VictoriaMetrics holds every stored reading up to the cursor
export_check() {
    rw_check_vm "$VM_URL" "$1" "$2" ep "$TMP/export-$2.jsonl" "$3" --no-duplicates 2>"$TMP/check-$2.txt"
}
# counts DB NODE: "STORED ENGINE" readings of wattage_gpu_power_watts
counts() {
    local st vm
    st=$(stored "$1" wattage_gpu_power_watts | wc -l)
    vm=$(vm_export "$VM_URL" "wattage_gpu_power_watts{node=\"$2\"}" |
        $PY -c 'import json, sys; print(sum(len(json.loads(l)["values"]) for l in sys.stdin if l.strip()))')
    echo "$st $vm"
}

# 1. everything stored reaches the engine at the stop
conf "$TMP/a.yaml" node-a "$VM_URL/api/v1/write"
run_for "$TMP/a.yaml" "$TMP/a.db" "$TMP/a.log" 8
check "the daemon stops cleanly (exit $?)" test $? -eq 0
check "the stop logs what it sent and that nothing is left" \
    grep -Eq "info  remote_write: at stop: sent [1-9][0-9]* samples in [0-9.]+ s, 0 left for the next start \(daemon.stop_deadline 5 s\)" "$TMP/a.log"
if export_check "$TMP/a.db" node-a 0; then
    ok "after SIGTERM VictoriaMetrics holds every stored reading, exactly once ($(cat "$TMP/check-node-a.txt"))"
else
    not_ok "after SIGTERM VictoriaMetrics holds every stored reading, exactly once" "$(head -5 "$TMP/check-node-a.txt")"
fi
read -r st vm <<<"$(counts "$TMP/a.db" node-a)"
check "power samples: the store holds $st, the engine $vm" bash -c '(( $1 > 0 && $1 == $2 ))' _ "$st" "$vm"

# 2. a receiver that hangs does not hold the stop; the next start sends what was left
conf "$TMP/h.yaml" node-h "http://127.0.0.1:$RPORT/hang" 2s
run_for "$TMP/h.yaml" "$TMP/h.db" "$TMP/h1.log" 4
check "with a hanging receiver the daemon stops cleanly (exit $?)" test $? -eq 0
check_stop "with a hanging receiver the stop takes the 2-s deadline and a 3-s margin at most" "$TMP/h1.log" 5
check "the stop logs nothing sent and what is left" \
    grep -Eq "info  remote_write: at stop: sent 0 samples in [0-9.]+ s, [1-9][0-9]* left for the next start \(daemon.stop_deadline 2 s\)" "$TMP/h1.log"
conf "$TMP/h2.yaml" node-h "$VM_URL/api/v1/write" 5s
run_for "$TMP/h2.yaml" "$TMP/h.db" "$TMP/h2.log" 3
check "the next start stops cleanly (exit $?)" test $? -eq 0
if export_check "$TMP/h.db" node-h 0; then
    ok "the next start sent what the hanging receiver left, and its own, exactly once ($(cat "$TMP/check-node-h.txt"))"
else
    not_ok "the next start sent what the hanging receiver left" "$(head -5 "$TMP/check-node-h.txt")"
fi

# 3. daemon.stop_deadline 0: nothing at stop
conf "$TMP/z.yaml" node-z "http://127.0.0.1:$RPORT/hang" 0
run_for "$TMP/z.yaml" "$TMP/z.db" "$TMP/z.log" 2
check "stop_deadline 0: the daemon stops cleanly (exit $?)" test $? -eq 0
check "stop_deadline 0: nothing is sent at stop, the line says what is left" \
    grep -Eq "info  remote_write: at stop: nothing sent \(daemon.stop_deadline 0\), [1-9][0-9]* samples left for the next start" "$TMP/z.log"

# 4. an engine that is down (nothing listens): one refused attempt, not the deadline's wait
conf "$TMP/d.yaml" node-d "http://127.0.0.1:$(free_port)/api/v1/write" 20s
run_for "$TMP/d.yaml" "$TMP/d.db" "$TMP/d.log" 2
check "engine down: the daemon stops cleanly (exit $?)" test $? -eq 0
check_stop "engine down: the stop takes half the 20-s deadline at most" "$TMP/d.log" 10
check "engine down: the refused attempt at stop is logged once" \
    test "$(grep -c "endpoint ep: at stop, cannot send .* Couldn.t connect.*; left for the next start" "$TMP/d.log")" = 1
check "engine down: the line at stop says nothing was sent and what is left" \
    grep -Eq "info  remote_write: at stop: sent 0 samples in [0-9.]+ s, [1-9][0-9]* left for the next start \(daemon.stop_deadline 20 s\)" "$TMP/d.log"

# 5. no stream configured: the deadline (a minute) is not waited for, no line at stop
printf 'daemon:\n  stop_deadline: 1m\ntopology:\n  node: node-n\n' >"$TMP/n.yaml"
run_for "$TMP/n.yaml" "$TMP/n.db" "$TMP/n.log" 2
check "no stream: the daemon stops cleanly (exit $?)" test $? -eq 0
check_stop "no stream: the stop takes half the 1-min deadline at most" "$TMP/n.log" 30
check "no stream: no line at stop" bash -c '! grep -q "at stop:" "$1"' _ "$TMP/n.log"
finish
