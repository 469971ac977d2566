#!/usr/bin/env bash
# Remote write into the real VictoriaMetrics (Debian victoria-metrics) on loopback, with an outage
# of RW_VM_OUTAGE_S seconds (default 120, the two minutes of the fleet issue) and a restart of the
# daemon in the middle of it: the second daemon finds the cursor in the store and resumes from it
# once the receiver is back. VictoriaMetrics keeps duplicates unless told to deduplicate, so its
# raw export shows a sample sent twice: every stored reading up to the cursor must be there
# exactly once, with its exact time and value, nothing missing, nothing twice. Each daemon stops
# with daemon.stop_deadline's default (5 s): the second sends its last flush at the stop.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
OUTAGE=${RW_VM_OUTAGE_S:-120}

if ! command -v "$VM" >/dev/null; then
    skip "remote write into VictoriaMetrics" "victoria-metrics is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

VPORT=$(free_port)
VM_URL=http://127.0.0.1:$VPORT
vm_pid=
start_vm() {
    "$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
        -loggerLevel=ERROR >>"$TMP/vm.log" 2>&1 &
    vm_pid=$!
    T_PIDS="$T_PIDS $vm_pid"
    wait_for 30 curl -sf "$VM_URL/health" -o /dev/null
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

rw_config "$TMP/w.yaml" node-v "  - url: $VM_URL/api/v1/write
    name: vm
    batch_size: 500
    deadline: 1s
    timeout: 2s
    max_backoff: 2s"
start_vm || { not_ok "VictoriaMetrics starts" "$(tail -5 "$TMP/vm.log")"; finish; }
WPORT=$(free_port)
start_daemon() { # start_daemon LOG
    bg "$BIN" run -c "$TMP/w.yaml" --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval 0.5 \
        --log-level debug 2>"$1"
    wpid=$!
    wait_for 20 curl -sf "http://127.0.0.1:$WPORT/healthz" -o /dev/null
}
start_daemon "$TMP/a.log"
if rw_wait_caught_up "$WPORT" vm 30; then
    ok "the daemon remote-writes into VictoriaMetrics"
else
    not_ok "the daemon remote-writes into VictoriaMetrics" "$(grep remote_write "$TMP/a.log" | tail -5)"
    finish
fi
sleep 2
stop_pid "$vm_pid"
half=$((OUTAGE / 2))
sleep "$half"
check "while VictoriaMetrics is down, failures are counted" \
    bash -c '(( ${1%%.*} > 0 ))' _ "$(rw_metric "$WPORT" wattage_remote_write_samples_failed_total vm)"
# the backoff is capped: after a minute down the sender still tries every max_backoff (2 s)
check "the retries wait at most max_backoff" \
    bash -c 'grep -q "endpoint vm: cannot send .* retrying in 2.0 s" "$1" && ! grep -q "retrying in [3-9]\.\|retrying in [0-9][0-9]" "$1"' _ "$TMP/a.log"
stop_pid "$wpid"
start_daemon "$TMP/b.log"
sleep $((OUTAGE - half))
pending=$(rw_metric "$WPORT" wattage_remote_write_samples_pending vm)
lag=$(rw_metric "$WPORT" wattage_remote_write_lag_seconds vm)
# the lag covers the whole outage, not only the second daemon's half (o / 2): it is the age of
# the oldest reading not sent, as the sender saw it at its last attempt (up to max_backoff and a
# flush late, more on a loaded machine), so 15 s are allowed
check "after $OUTAGE s down, the second daemon counts the whole outage pending ($pending, lag ${lag}s)" \
    $PY -c 'import sys; p, l, o = map(float, sys.argv[1:4]); sys.exit(0 if p > 0 and l >= o - 15 else 1)' \
    "${pending:-0}" "${lag:-0}" "$OUTAGE"
start_vm || { not_ok "VictoriaMetrics restarts" "$(tail -5 "$TMP/vm.log")"; finish; }
if rw_wait_caught_up "$WPORT" vm 60; then
    ok "after the outage and the restart the backlog is delivered"
else
    not_ok "after the outage the backlog is delivered" "$(grep remote_write "$TMP/b.log" | tail -5)"
fi
check "the second daemon logged that delivery resumed" grep -q "endpoint vm: delivering again after" "$TMP/b.log"
stop_pid "$wpid"

# What the daemon sent at its stop is in VictoriaMetrics' export at once (rw_check_vm asks for it
# with an explicit end: vm_export)
if rw_check_vm "$VM_URL" "$TMP/w.db" node-v vm "$TMP/export.jsonl" 8 --no-duplicates 2>"$TMP/check.txt"; then
    ok "every stored reading up to the cursor is in VictoriaMetrics exactly once ($(cat "$TMP/check.txt"))"
else
    not_ok "every stored reading up to the cursor is in VictoriaMetrics exactly once" "$(head -5 "$TMP/check.txt")"
fi
for l in a b; do
    check_ticks "daemon $l: the poll loop kept time during the outage" "$TMP/$l.log" 10
done
finish
