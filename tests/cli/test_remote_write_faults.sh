#!/usr/bin/env bash
# Remote write against receivers that fail: one daemon, six endpoints on a test peer
# (tests/peers/rw_peer.py) and a closed port. Each failure shows as a clear log line and a
# counter; the endpoint that works is served all along, and the poll loop keeps its time.
#   good        204 with the right bearer token        sent
#   wrongtoken  401 (another token)                    retried, auth failures, one log line
#   bad         400 "out of order sample"              dropped, one log line with the reason
#   busy        503 three times, then 204              failed, then sent
#   hang        never answers (timeout 1 s)            failed, retried, pending grows
#   down        nothing listens                        failed, "Couldn't connect"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/remote_write_lib.sh"
PY=/usr/bin/python3
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2

RPORT=$(free_port)
bg $PY tests/peers/rw_peer.py --port "$RPORT" --token right-token
wait_for 10 curl -sf "http://127.0.0.1:$RPORT/log" -o /dev/null || { not_ok "the peer starts"; finish; }
printf 'right-token\n' >"$TMP/right.token"
printf 'wrong-token\n' >"$TMP/wrong.token"
chmod 600 "$TMP/right.token" "$TMP/wrong.token"
DOWN=$(free_port)
R=http://127.0.0.1:$RPORT
ep() { # ep NAME URL [TOKEN_FILE]: one endpoint, quick to time out and retry
    printf '  - url: %s\n    name: %s\n    deadline: 0.5s\n    timeout: 1s\n    max_backoff: 1s\n' "$2" "$1"
    [[ -n ${3:-} ]] && printf '    bearer_token_file: %s\n' "$3"
    true
}
rw_config "$TMP/w.yaml" node-f "$(ep good "$R/ok" "$TMP/right.token")" \
    "$(ep wrongtoken "$R/ok" "$TMP/wrong.token")" "$(ep bad "$R/bad")" "$(ep busy "$R/busy/3")" \
    "$(ep hang "$R/hang")" "$(ep down "http://127.0.0.1:$DOWN/api/v1/write")"

WPORT=$(free_port)
bg "$BIN" run -c "$TMP/w.yaml" --listen "127.0.0.1:$WPORT" --db "$TMP/w.db" --interval 0.5 \
    --log-level debug 2>"$TMP/run.log"
wpid=$!
wait_for 20 curl -sf "http://127.0.0.1:$WPORT/healthz" -o /dev/null || { not_ok "the daemon starts" "$(tail -5 "$TMP/run.log")"; finish; }
sleep 8
m() { rw_metric "$WPORT" "wattage_remote_write_samples_$1" "$2"; }
gt0() { $PY -c 'import sys; sys.exit(0 if float(sys.argv[1] or 0) > 0 else 1)' "${1:-0}"; }

check "good: samples sent ($(m sent_total good)), none failed or dropped" \
    bash -c '[[ $1 != 0 && -n $1 && $2 == 0 && $3 == 0 ]]' _ "$(m sent_total good)" "$(m failed_total good)" "$(m dropped_total good)"
curl -s "$R/log" >"$TMP/peer.json"
check "the requests carry the remote write 1.0 headers" $PY -c '
import json, sys
ok = [r for r in json.load(open(sys.argv[1])) if r["path"] == "/ok" and r["status"] == 204]
assert ok, "no accepted request"
for r in ok:
    h = {k.lower(): v for k, v in r["headers"].items()}
    assert h["content-encoding"] == "snappy", h
    assert h["content-type"] == "application/x-protobuf", h
    assert h["x-prometheus-remote-write-version"] == "0.1.0", h
    assert h["user-agent"].startswith("wattage/"), h
    assert h["authorization"] == "Bearer right-token", h
    assert r["length"] > 0, r' "$TMP/peer.json"

wt_auth=$(rw_metric "$WPORT" wattage_remote_write_auth_failures_total wrongtoken)
check "wrongtoken: 401 is retried (auth failures $wt_auth), nothing sent, dropped or failed, samples pending" \
    bash -c '(( ${1%%.*} >= 3 && ${5%%.*} > 0 )) && [[ $2 == 0 && $3 == 0 && $4 == 0 ]]' _ "${wt_auth:-0}" \
    "$(m sent_total wrongtoken)" "$(m dropped_total wrongtoken)" "$(m failed_total wrongtoken)" "$(m pending wrongtoken)"
check "wrongtoken: one log line names the status, the receiver's reason and the token file" \
    test "$(grep -c "endpoint wrongtoken: the receiver refuses the credentials with HTTP 401: bad token url=$R/ok (bearer_token_file $TMP/wrong.token)" "$TMP/run.log")" = 1
check "good: no auth failures" test "$(rw_metric "$WPORT" wattage_remote_write_auth_failures_total good)" = 0
check "bad: 400 drops the batches (dropped $(m dropped_total bad))" gt0 "$(m dropped_total bad)"
check "bad: one log line with the receiver's reason" \
    test "$(grep -c 'endpoint bad: the receiver refused .* with HTTP 400, dropped (not retried): out of order sample' "$TMP/run.log")" = 1
check "busy: 503 is retried (failed $(m failed_total busy)) until it is accepted (sent $(m sent_total busy)), nothing dropped" \
    bash -c '(( ${1%%.*} >= 3 && ${2%%.*} > 0 )) && [[ $3 == 0 ]]' _ "$(m failed_total busy)" "$(m sent_total busy)" "$(m dropped_total busy)"
check "busy: the 503 is logged and recovery is logged" \
    bash -c 'grep -q "endpoint busy: HTTP 503 for .* retrying in .*: busy" "$1" && grep -q "endpoint busy: delivering again after 3 failed attempts" "$1"' _ "$TMP/run.log"
check "hang: timeouts counted as failures (failed $(m failed_total hang)), samples pending ($(m pending hang)), nothing sent" \
    bash -c 'gt0() { (( ${1%%.*} > 0 )); }; gt0 "$1" && gt0 "$2" && [[ $3 == 0 ]]' _ "$(m failed_total hang)" "$(m pending hang)" "$(m sent_total hang)"
check "hang: the timeout is logged" grep -q "endpoint hang: cannot send .* retrying in .*[Tt]imed out" "$TMP/run.log"
check "down: failures counted ($(m failed_total down)), lag grows ($(rw_metric "$WPORT" wattage_remote_write_lag_seconds down) s)" \
    bash -c 'gt0() { (( ${1%%.*} > 0 )); }; gt0 "$1" && gt0 "$2"' _ "$(m failed_total down)" "$(rw_metric "$WPORT" wattage_remote_write_lag_seconds down)"
check "down: the refused connection is logged" grep -q "endpoint down: cannot send .* Couldn't connect" "$TMP/run.log"

check_ticks "the poll loop kept time meanwhile" "$TMP/run.log" 14
t0=$SECONDS
kill "$wpid"
wait "$wpid"
rc=$?
check "SIGTERM stops the daemon at once despite the hanging receiver (exit $rc, $((SECONDS - t0)) s)" \
    bash -c '[[ $1 == 0 && $2 -le 3 ]]' _ "$rc" "$((SECONDS - t0))"
# at the stop each endpoint gets one more attempt, without backoff (daemon.stop_deadline)
check "at stop the endpoint that works sends everything, those that fail keep theirs, on one line" \
    grep -Eq "info  remote_write: at stop: sent [0-9]+ samples in [0-9.]+ s, [1-9][0-9]* left for the next start \(good: sent [0-9]+, left 0; wrongtoken: sent 0, left [1-9][0-9]*; .*down: sent 0, left [1-9][0-9]*\)" "$TMP/run.log"
check "at stop the refused connection is logged once, its samples left for the next start" \
    test "$(grep -c "endpoint down: at stop, cannot send .* Couldn't connect.*; left for the next start" "$TMP/run.log")" = 1

# A secret that cannot be read stops the start with a message naming it.
rw_config "$TMP/missing.yaml" node-f "  - {url: $R/ok, bearer_token_file: $TMP/nope.token}"
out=$("$BIN" run -c "$TMP/missing.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/m.db" --duration 2 2>&1)
check "a missing bearer_token_file fails the start, naming the endpoint and the file" \
    bash -c '[[ $1 == *"remote_write[0] ($2/ok): bearer_token_file $3/nope.token: No such file or directory"* ]]' _ "$out" "$R" "$TMP"
chmod 644 "$TMP/wrong.token"
rw_config "$TMP/open.yaml" node-f "  - {url: $R/ok, bearer_token_file: $TMP/wrong.token}"
out=$("$BIN" run -c "$TMP/open.yaml" --listen "127.0.0.1:$(free_port)" --db "$TMP/o.db" --duration 2 2>&1)
check "a token file others may read is refused" bash -c '[[ $1 == *"accessible by group or others"* ]]' _ "$out"
out=$("$BIN" check-config "$TMP/w.yaml" 2>&1)
check "check-config refuses it as run does" bash -c '[[ $1 == *"remote_write[1] (wrongtoken): bearer_token_file: "*"accessible by group or others"* ]]' _ "$out"
chmod 600 "$TMP/wrong.token"
out=$("$BIN" check-config "$TMP/w.yaml" 2>&1)
check "check-config accepts the six endpoints" test $? -eq 0
printf 'remote_write:\n  - url: http://x/\n    match: ["a{b=c}"]\n' >"$TMP/bad.yaml"
out=$("$BIN" check-config "$TMP/bad.yaml" 2>&1)
check "check-config names file:line of a bad selector" \
    bash -c '[[ $1 == *"bad.yaml:3: remote_write[0].match[0]: label b: expected a value in double quotes"* ]]' _ "$out"
finish
