#!/usr/bin/env bash
# Remote write whose credentials the receiver refuses, then accepts: the daemon sends with a
# wrong bearer token to an authenticating proxy (tests/peers/rw_peer.py --upstream) in front of
# the real VictoriaMetrics. A 401 is its own outcome: one log line naming the endpoint when it
# begins (not one per retry), wattage_remote_write_auth_failures_total rising, the samples kept
# pending (never dropped) and retried with backoff while the poll loop keeps its time. The
# operator then writes the right token into the token file: without a restart the backlog
# arrives, every stored reading exactly once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
if ! command -v "$VM" >/dev/null; then
    skip "remote write with refused credentials" "victoria-metrics is not installed (scripts/deps.sh --test)"
    finish
fi
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

VPORT=$(free_port)
VM_URL=http://127.0.0.1:$VPORT
bg "$VM" -storageDataPath="$TMP/vm" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=1y \
    -loggerLevel=ERROR 2>>"$TMP/vm.log"
check "VictoriaMetrics starts" wait_for 30 curl -sf "$VM_URL/health" -o /dev/null
RPORT=$(free_port)
R=http://127.0.0.1:$RPORT
bg $PY tests/peers/rw_peer.py --port "$RPORT" --token right-token --upstream "$VM_URL/api/v1/write"
wait_for 10 curl -sf "$R/log" -o /dev/null || { not_ok "the proxy starts"; finish; }

TOKEN=$TMP/rw.token
printf 'wrong-token\n' >"$TOKEN"
chmod 600 "$TOKEN"
rw_config "$TMP/w.yaml" node-a "  - url: $R/ok
    name: guarded
    bearer_token_file: $TOKEN
    deadline: 0.5s
    timeout: 2s
    max_backoff: 1s"
WPORT=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval 0.5 \
    --log-level debug 2>"$TMP/run.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$WPORT/healthz" -o /dev/null || { not_ok "the daemon starts" "$(tail -5 "$TMP/run.log")"; finish; }
m() { rw_metric "$WPORT" "wattage_remote_write_$1" guarded; }

sleep 6
a1=$(m auth_failures_total)
check "a 401 is counted as an auth failure ($a1), not as sent, failed or dropped" \
    bash -c '(( ${1%%.*} >= 3 )) && [[ $2 == 0 && $3 == 0 && $4 == 0 ]]' _ "${a1:-0}" \
    "$(m samples_sent_total)" "$(m samples_failed_total)" "$(m samples_dropped_total)"
check "the samples stay pending ($(m samples_pending))" bash -c '(( ${1%%.*} > 0 ))' _ "$(m samples_pending)"
sleep 3
a2=$(m auth_failures_total)
check "the refused requests are retried with backoff: the counter rises ($a1 -> $a2)" \
    bash -c '(( ${2%%.*} > ${1%%.*} ))' _ "${a1:-0}" "${a2:-0}"
curl -s "$R/log" >"$TMP/peer.json"
check "the proxy saw only refused requests, each with the wrong token" $PY -c '
import json, sys
log = json.load(open(sys.argv[1]))
assert len(log) >= 4 and all(r["status"] == 401 for r in log), [r["status"] for r in log]
assert all(r["headers"]["Authorization"] == "Bearer wrong-token" for r in log)' "$TMP/peer.json"
check "one log line names the endpoint, the status, the reason and the token file (not one per retry)" \
    test "$(grep -c "endpoint guarded: the receiver refuses the credentials with HTTP 401: bad token url=$R/ok (bearer_token_file $TOKEN); .* stay pending, retried with backoff up to 1.0 s" "$TMP/run.log")" = 1
check "no batch was dropped for it" bash -c '! grep -q "dropped (not retried)" "$1"' _ "$TMP/run.log"

# The operator fixes the token (a new file moved into place, as editors and config tools do).
t_fix=$($PY -c 'import time; print(time.time())')
printf 'right-token\n' >"$TOKEN.new"
chmod 600 "$TOKEN.new"
mv "$TOKEN.new" "$TOKEN"
if rw_wait_caught_up "$WPORT" guarded 30; then
    ok "with the right token in the file the backlog is delivered, without a restart"
else
    not_ok "with the right token in the file the backlog is delivered" "$(grep remote_write "$TMP/run.log" | tail -5)"
fi
check "recovery is logged once" \
    test "$(grep -c 'endpoint guarded: the receiver accepts the credentials again after [0-9]* refused attempts; delivering' "$TMP/run.log")" = 1
check "the refusal was logged once in all" \
    test "$(grep -c 'endpoint guarded: the receiver refuses the credentials' "$TMP/run.log")" = 1
check "nothing was dropped ($(m samples_dropped_total))" test "$(m samples_dropped_total)" = 0
sleep 2
check_ticks "the poll loop kept time while the receiver refused" "$TMP/run.log" 20
kill "$wpid"
wait "$wpid"

export_all() {
    vm_export "$VM_URL" '{node="node-a"}' >"$TMP/export.jsonl"
    rw_check_store "$TMP/w.db" node-a guarded vm "$TMP/export.jsonl" 8 --no-duplicates 2>"$TMP/check.txt"
}
if export_all; then
    ok "every stored reading up to the cursor is in VictoriaMetrics exactly once ($(cat "$TMP/check.txt"))"
else
    not_ok "every stored reading up to the cursor is in VictoriaMetrics exactly once" "$(head -5 "$TMP/check.txt")"
fi
check "the readings of the refused time are among them (the oldest is 9 s older than the fix)" $PY -c '
import json, sys
ts = [t for line in open(sys.argv[1]) if line.strip() for t in json.loads(line)["timestamps"]]
assert ts and min(ts) / 1000 < float(sys.argv[2]) - 8, (min(ts) if ts else None, sys.argv[2])' \
    "$TMP/export.jsonl" "$t_fix"
finish
