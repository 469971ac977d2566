#!/usr/bin/env bash
# alerts.idle_policy end to end, on the fake NVML only (never a real GPU): two GPUs at 60 W and
# utilization 0, GPU 1 held by a process (FAKE_NVML_PROCS_FILE), so GPU 0 alone is idle as
# dark.h counts it. The fake keeps every limit set in FAKE_NVML_LIMITS_FILE (the driver's state:
# it outlives the daemon) within its 200..700 W. Mode off changes nothing; dry_run says and
# exports what it would do and sets nothing; limit caps GPU 0 after idle_for (recorded first),
# lifts it within a tick or so of a process appearing on it, and before POST /api/v1/jobs
# answers for a job naming it; a SIGKILL while capped leaves a record the next start (policy
# off) puts right. Bad settings are file:line errors naming the field.
source "$(dirname "$0")/lib.sh"

DETECTORS_OFF='{throttle_forecast: false, throttling: false, idle_burn: false, impossible: false,
              stuck: false, sibling: false, data_gap: false}'
RUN_PID=
PORT=

# policy NAME MODE: config $TMP/NAME.yaml with the policy in MODE (idle for 2 s, the GPU's
# minimum as its limit) and its record at $TMP/NAME.caps
policy() {
    cat >"$TMP/$1.yaml" <<EOF
daemon:
  interval: 1s
alerts:
  detectors: $DETECTORS_OFF
  cap_record: $TMP/$1.caps
  cap_min_interval: 1s
  idle_policy: {mode: $2, idle_for: 2s}
EOF
}
# start NAME: the daemon with $TMP/NAME.yaml; the limits in $LIMITS (default $TMP/NAME.limits)
start() {
    local name=$1
    PORT=$(free_port)
    FAKE_NVML_GPUS=2 FAKE_NVML_POWER=60,0,0 FAKE_NVML_PROCS_FILE="$TMP/procs" \
        FAKE_NVML_LIMITS_FILE="${LIMITS:-$TMP/$name.limits}" WATTAGE_NVML_LIBRARY=$FAKE_NVML \
        "$BIN" run -c "$TMP/$name.yaml" --db "$TMP/$name.db" --listen "127.0.0.1:$PORT" \
        >"$TMP/$name.log" 2>&1 &
    RUN_PID=$!
    T_PIDS="$T_PIDS $RUN_PID"
    wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
}
stop() {
    kill -TERM "$RUN_PID"
    wait "$RUN_PID"
}
metric() {
    curl -sf "http://127.0.0.1:$PORT/metrics" |
        awk -v n="$1" -v l="$2" '$1 ~ "^"n"\\{" && index($1, l) { print $NF; exit }'
}
# limit_of GPU FILE: the GPU's limit in the fake driver (its last line in FILE; 700 when never set)
limit_of() { awk -v g="$1" '$1 == g { w = $2 } END { print (w == "" ? 700 : w) }' "$2" 2>/dev/null || echo 700; }
limit_is() { [[ $(limit_of "$1" "$2") == "$3" ]]; }
# idle_s: how long GPU 0 has been idle as dark.h counts it
idle_at_least() {
    local s
    s=$(metric wattage_gpu_idle_seconds_total 'gpu="0"')
    [[ -n $s ]] && awk -v s="$s" -v m="$1" 'BEGIN { exit !(s >= m) }'
}
echo "1 4242" >"$TMP/procs"

# ---- mode off: nothing changes ---------------------------------------------------------------
policy off off
start off
if wait_for 30 idle_at_least 5; then ok "off: GPU 0 is idle for 5 s and more"
else not_ok "off: GPU 0 is idle for 5 s and more" "$(tail -5 "$TMP/off.log")"; fi
check "off: no limit is set" test ! -s "$TMP/off.limits"
check "off: no idle policy series" bash -c "! curl -sf 'http://127.0.0.1:$PORT/metrics' | grep -q '^wattage_gpu_idle_policy_'"
check "off: nothing logged by the policy" bash -c "! grep -q 'idle policy' '$TMP/off.log'"
stop

# ---- dry_run: says and exports, sets nothing ---------------------------------------------------
policy dry dry_run
start dry
if wait_for 30 grep -q 'idle policy (dry run): gpu=0 idle for [0-9]* s: would set limit_w=200.0' "$TMP/dry.log"; then
    ok "dry_run: logs the cap it would set on GPU 0 (its 200 W minimum)"
else not_ok "dry_run: logs the cap it would set on GPU 0" "$(grep cap: "$TMP/dry.log" | tail -3)"; fi
w=$(metric wattage_gpu_idle_policy_cap_watts 'gpu="0",dry_run="true"')
check "dry_run: wattage_gpu_idle_policy_cap_watts{gpu=\"0\",dry_run=\"true\"} is 200 (got '$w')" test "$w" = 200
e=$(metric wattage_gpu_idle_policy_saving_estimate_watts 'gpu="0",dry_run="true"')
check "dry_run: the saving estimate is 0 W for a GPU idling at 60 W under a 200 W limit (got '$e')" test "$e" = 0
check "dry_run: GPU 1 (a process on it) is not held" test -z "$(metric wattage_gpu_idle_policy_cap_watts 'gpu="1"')"
sleep 1.5
check "dry_run: no limit is set" test ! -s "$TMP/dry.limits"
check "dry_run: no record is written" test ! -s "$TMP/dry.caps"
check "dry_run: the collector reads GPU 0's limit as 700 W" test "$(metric wattage_gpu_power_limit_watts 'gpu="0"')" = 700
stop

# ---- limit: capped after idle_for, lifted by a process and by a job start ---------------------
policy lim limit
start lim
if wait_for 30 limit_is 0 "$TMP/lim.limits" 200; then ok "limit: GPU 0 idle for 2 s is capped at its 200 W minimum"
else not_ok "limit: GPU 0 idle for 2 s is capped at its 200 W minimum" "$(cat "$TMP/lim.limits" 2>&1)" "$(grep cap: "$TMP/lim.log" | tail -3)"; fi
check "limit: the record has GPU 0's line (own 700 W, set 200 W, reason idle)" \
    grep -q '^GPU-fake-0000-0 0 700.000 200.000 [0-9]* idle$' "$TMP/lim.caps"
check "limit: the change is logged with reason idle" grep -q 'set gpu=0 limit_w=200.0 action=idle_cap reason=idle' "$TMP/lim.log"
check "limit: GPU 1 (a process on it) keeps 700 W" limit_is 1 "$TMP/lim.limits" 700
wait_for 5 bash -c "curl -sf 'http://127.0.0.1:$PORT/metrics' | grep -q '^wattage_gpu_power_cap_watts{gpu=\"0\"} 200$'"
check "limit: wattage_gpu_power_cap_watts{gpu=\"0\"} is 200" test "$(metric wattage_gpu_power_cap_watts 'gpu="0"')" = 200
check "limit: wattage_gpu_idle_policy_cap_watts{gpu=\"0\",dry_run=\"false\"} is 200" \
    test "$(metric wattage_gpu_idle_policy_cap_watts 'gpu="0",dry_run="false"')" = 200
a=$(metric wattage_power_cap_actions_total 'action="idle_cap",dry_run="false"')
check "limit: wattage_power_cap_actions_total{action=\"idle_cap\"} is 1 (got '$a')" test "$a" = 1
# a process appears on GPU 0: lifted within a tick (the list is read once a second; a generous bound)
t0=$(date +%s.%N)
echo "0 5151" >>"$TMP/procs"
if wait_for 10 limit_is 0 "$TMP/lim.limits" 700; then
    ok "limit: a process on GPU 0 lifts its cap ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after it appeared)"
else not_ok "limit: a process on GPU 0 lifts its cap" "$(tail -3 "$TMP/lim.limits")" "$(grep cap: "$TMP/lim.log" | tail -3)"; fi
check "limit: the lift is logged" grep -q 'restored gpu=0 limit_w=700.0 reason=idle_ended why=idle_ended' "$TMP/lim.log"
check "limit: the record is empty again" bash -c "! grep -q '^GPU-' '$TMP/lim.caps' 2>/dev/null"
# the process ends: idle again, capped again after idle_for
echo "1 4242" >"$TMP/procs"
if wait_for 30 limit_is 0 "$TMP/lim.limits" 200; then ok "limit: idle again, GPU 0 is capped again"
else not_ok "limit: idle again, GPU 0 is capped again" "$(tail -3 "$TMP/lim.limits")"; fi
# a job naming GPU 0 starts: its limit is back before the request is answered
code=$(curl -s -o "$TMP/job.json" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/api/v1/jobs" \
    -d '{"name": "train", "gpus": [0]}')
after=$(limit_of 0 "$TMP/lim.limits")
check "limit: the job starts ($code)" test "$code" = 201
check "limit: GPU 0's limit was 700 W when the job start was answered (got $after W)" test "$after" = 700
check "limit: the job start's lift is logged" grep -q 'restored gpu=0 limit_w=700.0 reason=job_start why=job_start' "$TMP/lim.log"
sleep 1.5 # a tick more: its idle time counts from the start, so it is not capped again yet
check "limit: GPU 0 stays at 700 W a tick after the job start" limit_is 0 "$TMP/lim.limits" 700
check "limit: every limit set was within 200..700 W" awk '$2 < 200 || $2 > 700 { bad = 1 } END { exit bad }' "$TMP/lim.limits"
stop
check "limit: SIGTERM leaves GPU 0 at 700 W" limit_is 0 "$TMP/lim.limits" 700

# ---- SIGKILL while idle-capped; the next start (policy off) puts the own limit back ---------------
policy kill limit
start kill
if wait_for 30 limit_is 0 "$TMP/kill.limits" 200; then ok "kill: GPU 0 is idle-capped"
else not_ok "kill: GPU 0 is idle-capped" "$(grep cap: "$TMP/kill.log" | tail -3)"; fi
kill -KILL "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
check "kill: after SIGKILL GPU 0 keeps 200 W" limit_is 0 "$TMP/kill.limits" 200
check "kill: and the record says so" grep -q '^GPU-fake-0000-0 0 700.000 200.000 [0-9]* idle$' "$TMP/kill.caps"
policy kill off
LIMITS=$TMP/kill.limits start kill
if wait_for 10 limit_is 0 "$TMP/kill.limits" 700; then ok "kill: the restart with the policy off puts back GPU 0's own 700 W"
else not_ok "kill: the restart with the policy off puts back GPU 0's own 700 W" "$(tail -3 "$TMP/kill.limits")" "$(grep cap: "$TMP/kill.log")"; fi
check "kill: the restart says what it put right" grep -q 'gpu=0 uuid=GPU-fake-0000-0: restored its own limit 700.0 W; an earlier run capped it at 200.0 W (reason=idle' "$TMP/kill.log"
check "kill: the record is empty" bash -c "! grep -q '^GPU-' '$TMP/kill.caps' 2>/dev/null"
sleep 3
check "kill: the policy off caps nothing" limit_is 0 "$TMP/kill.limits" 700
stop

# ---- bad settings -------------------------------------------------------------------------------
printf 'alerts:\n  idle_policy:\n    mode: limit\n    idle_for: -5m\n' >"$TMP/neg.yaml"
msg=$("$BIN" check-config "$TMP/neg.yaml" 2>&1)
rc=$?
check "a negative idle_for: exit 2 and file:line with the field ($msg)" \
    bash -c "[[ $rc -eq 2 ]] && grep -q 'neg.yaml:4: alerts.idle_policy.idle_for' <<<'$msg'"
printf 'alerts:\n  idle_policy:\n    mode: sleep\n' >"$TMP/mode.yaml"
msg=$("$BIN" check-config "$TMP/mode.yaml" 2>&1)
rc=$?
check "an unknown mode: exit 2 and file:line with the field and the modes ($msg)" \
    bash -c "[[ $rc -eq 2 ]] && grep -q 'mode.yaml:3: alerts.idle_policy.mode' <<<'$msg' && grep -q 'off, dry_run, limit' <<<'$msg'"
finish
