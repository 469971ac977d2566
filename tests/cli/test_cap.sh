#!/usr/bin/env bash
# Power capping end to end, on the fake NVML only (never a real GPU): the fake records every
# limit set in FAKE_NVML_LIMITS_FILE, reports it as the enforced limit, clamps its power to it and
# refuses values outside 200..700 W; the file is the driver's state, so a limit outlives the
# daemon that set it, as on a real GPU. A firing alert with action cap lowers its GPU's limit
# (within min/max), the resolution and SIGTERM restore it; the site budget brings the node under;
# --dry-run changes nothing. Then what survives a crash: the record of changes, the restart with
# and without the rule, a kill between the record and the NVML call, `wattage cap clear`, a cap
# someone else set, and a job tagged cap=never.
source "$(dirname "$0")/lib.sh"

DETECTORS_OFF='{throttle_forecast: false, throttling: false, idle_burn: false, impossible: false,
              stuck: false, sibling: false, data_gap: false}'
RUN_PID=
PORT=

# start NAME EXTRA_ARGS... : the daemon with config $TMP/NAME.yaml, limits in $TMP/NAME.limits
# (or in $LIMITS: the same "driver" as an earlier run)
start() {
    local name=$1
    shift
    PORT=$(free_port)
    FAKE_NVML_LIMITS_FILE="${LIMITS:-$TMP/$name.limits}" WATTAGE_NVML_LIBRARY=$FAKE_NVML \
        "$BIN" run -c "$TMP/$name.yaml" --db "$TMP/$name.db" --listen "127.0.0.1:$PORT" "$@" \
        >"$TMP/$name.log" 2>&1 &
    RUN_PID=$!
    T_PIDS="$T_PIDS $RUN_PID"
    wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
}
stop() {
    kill -TERM "$RUN_PID"
    wait "$RUN_PID"
}
# metric NAME LABELS: the value of one sample on /metrics (labels as exposed, e.g. gpu="2")
metric() {
    curl -sf "http://127.0.0.1:$PORT/metrics" |
        awk -v n="$1" -v l="$2" '$1 ~ "^"n"\\{" && index($1, l) { print $NF; exit }'
}
# gpu_power_sum: the node's GPU power on /metrics
gpu_power_sum() {
    curl -sf "http://127.0.0.1:$PORT/metrics" |
        awk '$1 ~ /^wattage_gpu_power_watts\{/ { s += $NF } END { printf "%.1f\n", s }'
}
# all_within FILE: every limit set is within the fake's 200..700 W
all_within() {
    awk '$2 < 200 || $2 > 700 { bad = 1 } END { exit bad }' "$1"
}

# ---- an alert with action cap: set on firing, restored on resolve -----------------------------
# GPU i's temperature is 70 + i - t (t: seconds since the fake's origin): GPU 2 is over 60 C until
# t = 12 s, GPU 3 until 13 s.
cat >"$TMP/rule.yaml" <<EOF
alerts:
  detectors: $DETECTORS_OFF
  rules:
    - name: GPUHotCapHalf
      metric: wattage_gpu_temperature_celsius
      match: {gpu: "2"}
      op: ">"
      threshold: 60
      for: 1s
      action: cap
      cap_share: 0.5
    - name: GPUHotCapLow
      metric: wattage_gpu_temperature_celsius
      match: {gpu: "3"}
      op: ">"
      threshold: 60
      for: 1s
      action: cap
      cap_watts: 100
EOF
FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=70,-1 start rule
if wait_for 20 grep -q '^2 350$' "$TMP/rule.limits"; then ok "firing lowers GPU 2 to half its max (350 W)"
else not_ok "firing lowers GPU 2 to half its max (350 W)" "$(cat "$TMP/rule.limits" 2>&1)" "$(tail -5 "$TMP/rule.log")"; fi
if wait_for 10 grep -q '^3 200$' "$TMP/rule.limits"; then ok "a 100 W cap is held at the GPU's 200 W minimum"
else not_ok "a 100 W cap is held at the GPU's 200 W minimum" "$(cat "$TMP/rule.limits" 2>&1)"; fi
limit2_is_350() { [[ $(metric wattage_gpu_power_limit_watts 'gpu="2"') == 350 ]]; }
if wait_for 5 limit2_is_350; then
    ok "the collector sees the new enforced limit"
else not_ok "the collector sees the new enforced limit" "$(metric wattage_gpu_power_limit_watts 'gpu="2"')"; fi
p2=$(metric wattage_gpu_power_watts 'gpu="2"')
check "GPU 2 draws at most its cap ($p2 W)" awk -v p="$p2" 'BEGIN { exit !(p <= 350 && p > 0) }'
check "GPU 4 is untouched" test "$(metric wattage_gpu_power_limit_watts 'gpu="4"')" = 700
cap2=$(metric wattage_gpu_power_cap_watts 'gpu="2"')
check "wattage_gpu_power_cap_watts{gpu=\"2\"} is 350 (got '$cap2')" test "$cap2" = 350
acts=$(metric wattage_power_cap_actions_total 'action="cap"')
check "wattage_power_cap_actions_total{action=\"cap\"} counts 2 (got '$acts')" test "$acts" = 2
check "the action is logged" grep -q 'cap: set gpu=2 limit_w=350.0 action=cap reason=GPUHotCapHalf' "$TMP/rule.log"
if wait_for 30 grep -q '^2 700$' "$TMP/rule.limits" && wait_for 10 grep -q '^3 700$' "$TMP/rule.limits"; then
    ok "resolving restores 700 W"
else not_ok "resolving restores 700 W" "$(cat "$TMP/rule.limits")"; fi
check "the resolution was logged before the restore" grep -q 'resolved alertname=GPUHotCapHalf' "$TMP/rule.log"
check "no cap metric once restored" test -z "$(metric wattage_gpu_power_cap_watts 'gpu="2"')"
stop
check "every limit set was within 200..700 W" all_within "$TMP/rule.limits"
check "nothing else was set" test "$(wc -l <"$TMP/rule.limits")" -eq 4

# ---- SIGTERM restores -------------------------------------------------------------------------
cp "$TMP/rule.yaml" "$TMP/term.yaml"
FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start term
if wait_for 20 grep -q '^2 350$' "$TMP/term.limits"; then ok "capped before SIGTERM"
else not_ok "capped before SIGTERM" "$(tail -5 "$TMP/term.log")"; fi
wait_for 10 grep -q '^3 200$' "$TMP/term.limits"
stop
check "the daemon exits 0 on SIGTERM" test $? -eq 0
check "SIGTERM restored both GPUs" bash -c "tail -2 '$TMP/term.limits' | sort | tr '\n' ';' | grep -qx '2 700;3 700;'"
check "restoring was logged" grep -q 'restored gpu=2 limit_w=700.0 reason=stopping' "$TMP/term.log"

# ---- the site budget ------------------------------------------------------------------------
cat >"$TMP/budget.yaml" <<EOF
alerts:
  detectors: $DETECTORS_OFF
  power_budget_watts: 4000
  budget_clear_share: 0.9
EOF
FAKE_NVML_GPUS=8 FAKE_NVML_POWER=600,0,0 start budget
under_budget() { awk -v p="$(gpu_power_sum)" 'BEGIN { exit !(p > 0 && p <= 4000) }'; }
if wait_for 20 under_budget; then
    ok "the node is brought under its 4000 W budget ($(gpu_power_sum) W)"
else not_ok "the node is brought under its 4000 W budget" "sum $(gpu_power_sum) W" "$(grep cap: "$TMP/budget.log" | tail -3)"; fi
check "all 8 GPUs were capped" test "$(awk '{print $1}' "$TMP/budget.limits" | sort -u | wc -l)" -eq 8
check "budget caps within 200..700 W" all_within "$TMP/budget.limits"
check "the budget action is logged" grep -q 'over the budget of 4000.0 W: capping 8 GPUs' "$TMP/budget.log"
bacts=$(metric wattage_power_cap_actions_total 'action="budget_cap"')
check "wattage_power_cap_actions_total{action=\"budget_cap\"} is 8 (got '$bacts')" test "$bacts" = 8
stop
check "SIGTERM lifts the budget caps" bash -c "tail -8 '$TMP/budget.limits' | awk '\$2 != 700 { bad = 1 } END { exit bad || NR != 8 }'"

# ---- dry run ----------------------------------------------------------------------------------
cp "$TMP/budget.yaml" "$TMP/dry.yaml"
FAKE_NVML_GPUS=8 FAKE_NVML_POWER=600,0,0 start dry --dry-run
if wait_for 20 grep -q 'dry run: would set gpu=0' "$TMP/dry.log"; then ok "--dry-run logs what it would do"
else not_ok "--dry-run logs what it would do" "$(grep cap: "$TMP/dry.log")"; fi
sleep 2
check "--dry-run sets no limit" test ! -s "$TMP/dry.limits"
sum=$(gpu_power_sum)
check "and the node still draws 4800 W ($sum)" test "$sum" = 4800.0
dacts=$(metric wattage_power_cap_actions_total 'action="budget_cap",dry_run="true"')
check "the would-be actions are exported with dry_run=\"true\" (got '$dacts')" test "$dacts" = 8
stop
check "nothing to restore after a dry run" test ! -s "$TMP/dry.limits"

# alerts.dry_run in the file does the same for a rule's cap
sed 's/^alerts:$/alerts:\n  dry_run: true/' "$TMP/term.yaml" >"$TMP/drycfg.yaml"
FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start drycfg
if wait_for 20 grep -q 'dry run: would set gpu=2 limit_w=350.0 action=cap' "$TMP/drycfg.log"; then
    ok "alerts.dry_run: the rule's cap is only logged"
else not_ok "alerts.dry_run: the rule's cap is only logged" "$(grep -E 'cap:|alert' "$TMP/drycfg.log" | tail -5)"; fi
check "GPU 2 keeps 700 W" test "$(metric wattage_gpu_power_limit_watts 'gpu="2"')" = 700
stop
check "alerts.dry_run sets no limit" test ! -s "$TMP/drycfg.limits"

# ---- what survives a crash --------------------------------------------------------------------
# limit_of GPU FILE: GPU's limit in the fake driver (its last line in FILE; 700 when never set)
limit_of() { awk -v g="$1" '$1 == g { w = $2 } END { print (w == "" ? 700 : w) }' "$2" 2>/dev/null || echo 700; }
limit_is() { [[ $(limit_of "$1" "$2") == "$3" ]]; }
# gone PID: the process has exited
gone() { ! kill -0 "$1" 2>/dev/null; }
# rule_yaml NAME RECORD: one cap rule on GPU 2 (half its max) with the record at RECORD
rule_yaml() {
    cat >"$TMP/$1.yaml" <<EOF
alerts:
  detectors: $DETECTORS_OFF
  cap_record: $2
  rules:
    - name: GPUHotCapHalf
      metric: wattage_gpu_temperature_celsius
      match: {gpu: "2"}
      op: ">"
      threshold: 60
      for: 1s
      action: cap
      cap_share: 0.5
EOF
}
norule_yaml() {
    printf 'alerts:\n  detectors: %s\n  cap_record: %s\n' "$DETECTORS_OFF" "$2" >"$TMP/$1.yaml"
}

# cap, kill -9, start without the rule: the GPU's own limit is back at start (within one tick)
rule_yaml crash "$TMP/crash.caps"
FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start crash
if wait_for 20 grep -q '^2 350$' "$TMP/crash.limits"; then ok "capped before kill -9"
else not_ok "capped before kill -9" "$(tail -5 "$TMP/crash.log")"; fi
check "the change is in the record (UUID, own limit, new limit, time, reason)" \
    grep -Eq '^GPU-fake-0000-2 2 700\.000 350\.000 [0-9]{19} GPUHotCapHalf$' "$TMP/crash.caps"
kill -KILL "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
check "the driver keeps the cap after kill -9" limit_is 2 "$TMP/crash.limits" 350
norule_yaml crash2 "$TMP/crash.caps"
LIMITS=$TMP/crash.limits FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start crash2
if wait_for 1 limit_is 2 "$TMP/crash.limits" 700; then ok "a start without the rule restores 700 W within one tick"
else not_ok "a start without the rule restores 700 W within one tick" "$(cat "$TMP/crash.limits")" "$(grep cap: "$TMP/crash2.log")"; fi
check "it says so at warning level" grep -q 'warn  cap: gpu=2 uuid=GPU-fake-0000-2: restored its own limit 700.0 W; an earlier run capped it at 350.0 W (reason=GPUHotCapHalf' "$TMP/crash2.log"
check "and the record is empty" test ! -s "$TMP/crash.caps"
stop

# killed right after the record, before the NVML call: a line without a cap, never a cap without one
rule_yaml hook "$TMP/hook.caps"
WATTAGE_TEST_CAP_EXIT=after_record FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start hook
if wait_for 20 gone "$RUN_PID"; then wait "$RUN_PID"; rc=$?; else rc=running; kill -KILL "$RUN_PID"; fi
check "the hook killed the daemon mid-change (exit $rc)" test "$rc" = 86
check "the record has the line" grep -q '^GPU-fake-0000-2 2 700.000 350.000' "$TMP/hook.caps"
check "no limit was set" test ! -s "$TMP/hook.limits"
rule_yaml hook2 "$TMP/hook2.caps"
WATTAGE_TEST_CAP_EXIT=before_record FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start hook2
if wait_for 20 gone "$RUN_PID"; then wait "$RUN_PID"; rc=$?; else rc=running; kill -KILL "$RUN_PID"; fi
check "killed right before the record (exit $rc): no line" test "$rc" = 86 -a ! -s "$TMP/hook2.caps"
check "and no limit" test ! -s "$TMP/hook2.limits"
norule_yaml hook3 "$TMP/hook.caps"
LIMITS=$TMP/hook.limits start hook3
check "the next start drops the line of a change never made" grep -q 'an earlier run recorded a cap of 350.0 W (reason=GPUHotCapHalf at .*) that the GPU does not have' "$TMP/hook3.log"
check "record empty, still no limit set" test ! -s "$TMP/hook.caps" -a ! -s "$TMP/hook.limits"
stop

# restart with the rule still on: the base is the GPU's own 700 W, not the 350 W it has
T0=$(date +%s.%N) # GPU 2's temperature is 72 - t: over 60 C until t = 12 s in both runs
rule_yaml keep "$TMP/keep.caps"
FAKE_NVML_T0=$T0 FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=70,-1 start keep
if wait_for 10 grep -q '^2 350$' "$TMP/keep.limits"; then ok "capped, then kill -9"
else not_ok "capped, then kill -9" "$(tail -5 "$TMP/keep.log")"; fi
kill -KILL "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
cp "$TMP/keep.yaml" "$TMP/keep2.yaml"
LIMITS=$TMP/keep.limits FAKE_NVML_T0=$T0 FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=70,-1 start keep2
check "the restart keeps the cap the rule holds, and says so" grep -q 'warn  cap: gpu=2 uuid=GPU-fake-0000-2 keeps the cap of 350.0 W an earlier run set (reason=GPUHotCapHalf at .*; own limit 700.0 W)' "$TMP/keep2.log"
if wait_for 30 limit_is 2 "$TMP/keep.limits" 700; then ok "when the rule lets go, 700 W is back (the own limit, not 350 W)"
else not_ok "when the rule lets go, 700 W is back (the own limit, not 350 W)" "$(cat "$TMP/keep.limits")" "$(grep cap: "$TMP/keep2.log")"; fi
check "no other limit was set" test "$(tr '\n' ';' <"$TMP/keep.limits")" = '2 350;2 700;'
check "the record is empty" test ! -s "$TMP/keep.caps"
stop

# wattage cap clear while the daemon runs: the GPU is put back and stays back
cat >"$TMP/clear.yaml" <<EOF
alerts:
  detectors: $DETECTORS_OFF
  cap_record: $TMP/clear.caps
  rules:
    - {name: HotTwo, metric: wattage_gpu_temperature_celsius, match: {gpu: "2"}, op: ">", threshold: 60, for: 1s, action: cap, cap_watts: 350}
    - {name: HotThree, metric: wattage_gpu_temperature_celsius, match: {gpu: "3"}, op: ">", threshold: 60, for: 1s, action: cap, cap_watts: 300}
EOF
FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start clear
if wait_for 20 grep -q '^2 350$' "$TMP/clear.limits" && wait_for 10 grep -q '^3 300$' "$TMP/clear.limits"; then
    ok "GPUs 2 and 3 capped"
else not_ok "GPUs 2 and 3 capped" "$(tail -5 "$TMP/clear.log")"; fi
cap_clear() {
    FAKE_NVML_LIMITS_FILE="$TMP/clear.limits" WATTAGE_NVML_LIBRARY=$FAKE_NVML \
        "$BIN" cap clear -c "$TMP/clear.yaml" --db "$TMP/clear.db" "$@"
}
out=$(cap_clear --gpu 2 2>&1)
check "cap clear --gpu 2 says what it did" grep -q 'gpu 2 (GPU-fake-0000-2): limit back to its own 700.0 W (wattage had capped it at 350.0 W: reason HotTwo' <<<"$out"
check "GPU 2 is at 700 W" limit_is 2 "$TMP/clear.limits" 700
check "its line is gone, GPU 3's stays" bash -c "! grep -q GPU-fake-0000-2 '$TMP/clear.caps' && grep -q GPU-fake-0000-3 '$TMP/clear.caps'"
if wait_for 10 grep -q 'gpu=2 uuid=GPU-fake-0000-2: its cap of 350.0 W was cleared by hand' "$TMP/clear.log"; then
    ok "the daemon sees it was cleared by hand"
else not_ok "the daemon sees it was cleared by hand" "$(grep cap: "$TMP/clear.log")"; fi
sleep 1.5 # a tick more: a stale cap would be applied again here
check "the daemon does not cap GPU 2 again while its alert still fires" limit_is 2 "$TMP/clear.limits" 700
check "nor puts its line back" bash -c "! grep -q GPU-fake-0000-2 '$TMP/clear.caps'"
check "no cap metric for GPU 2" test -z "$(metric wattage_gpu_power_cap_watts 'gpu="2"')"
hand=$(metric wattage_power_cap_reasons_total 'reason="cleared_by_hand"')
check "wattage_power_cap_reasons_total{reason=\"cleared_by_hand\"} is 1 (got '$hand')" test "$hand" = 1
out=$(cap_clear 2>&1)
check "cap clear puts back the rest" limit_is 3 "$TMP/clear.limits" 700
check "and the record is empty" test ! -s "$TMP/clear.caps"
out=$(cap_clear --gpu 9 2>&1)
rc=$?
check "cap clear --gpu 9 on an 8-GPU node: exit 2 (got $rc) with why" test "$rc" -eq 2 -a -n "$(grep -- '--gpu 9: this node has 8 GPUs' <<<"$out")"
n=$(wc -l <"$TMP/clear.limits")
stop
check "SIGTERM has nothing left to restore" test "$(wc -l <"$TMP/clear.limits")" -eq "$n"

# a cap someone else set: reported by status, never taken as the GPU's own
echo "1 450" >"$TMP/foreign.limits" # nvidia-smi -pl 450 by another tool
cat >"$TMP/foreign.yaml" <<EOF
alerts:
  detectors: $DETECTORS_OFF
  cap_record: $TMP/foreign.caps
  rules:
    - {name: HotOne, metric: wattage_gpu_temperature_celsius, match: {gpu: "1"}, op: ">", threshold: 60, for: 1s, action: cap, cap_watts: 400}
EOF
st=$(FAKE_NVML_LIMITS_FILE="$TMP/foreign.limits" WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" status -c "$TMP/foreign.yaml" 2>/dev/null)
check "status reports GPU 1 capped by someone else" grep -q 'power cap: gpu 1 (GPU-fake-0000-1) limit 450.0 W is not its default 700.0 W and wattage has no record of it: capped by someone else' <<<"$st"
check "and no other GPU" test "$(grep -c 'power cap:' <<<"$st")" -eq 1
dr=$(FAKE_NVML_LIMITS_FILE="$TMP/foreign.limits" WATTAGE_NVML_LIBRARY=$FAKE_NVML "$BIN" doctor -c "$TMP/foreign.yaml" --db "$TMP/doctor.db" --json 2>/dev/null)
check "doctor warns of GPU 1's foreign cap, with a fix, and of no other GPU" python3 -c '
import json, sys
c = [x for x in json.loads(sys.argv[1])["checks"] if x["check"] == "power_cap"]
assert len(c) == 1 and c[0]["key"] == "1" and c[0]["status"] == "warn", c
assert "capped by someone else" in c[0]["message"] and "nvidia-smi -pl" in c[0]["fix"], c' "$dr"
FAKE_NVML_POWER=600,0,0 FAKE_NVML_TEMP=75,0 start foreign
if wait_for 20 grep -q '^1 400$' "$TMP/foreign.limits"; then ok "a rule caps GPU 1 under the foreign cap"
else not_ok "a rule caps GPU 1 under the foreign cap" "$(tail -5 "$TMP/foreign.log")"; fi
check "its own limit is recorded as its default 700 W, not 450 W" grep -q '^GPU-fake-0000-1 1 700.000 400.000' "$TMP/foreign.caps"
check "the foreign cap is logged" grep -q 'gpu=1 uuid=GPU-fake-0000-1: limit 450.0 W is not its default 700.0 W and no record explains it' "$TMP/foreign.log"
stop

# a job tagged cap=never: its GPUs' caps are lifted within a tick, the budget left to the others
cat >"$TMP/never.yaml" <<EOF
alerts:
  detectors: $DETECTORS_OFF
  cap_record: $TMP/never.caps
  power_budget_watts: 4000
  budget_clear_share: 0.9
EOF
FAKE_NVML_GPUS=8 FAKE_NVML_POWER=600,0,0 start never
if wait_for 20 bash -c "awk '{print \$1}' '$TMP/never.limits' | sort -u | wc -l | grep -qx 8"; then ok "the budget caps all 8 GPUs"
else not_ok "the budget caps all 8 GPUs" "$(cat "$TMP/never.limits" 2>&1)"; fi
code=$(curl -s -o "$TMP/never.job" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/api/v1/jobs" \
    -d '{"name": "train", "tags": {"cap": "never"}, "gpus": [1]}')
check "the cap=never job starts ($code)" test "$code" = 201
if wait_for 3 limit_is 1 "$TMP/never.limits" 700; then ok "GPU 1's cap is lifted within a tick or two"
else not_ok "GPU 1's cap is lifted within a tick or two" "$(tail -3 "$TMP/never.limits")" "$(grep cap: "$TMP/never.log" | tail -3)"; fi
check "the log says why" grep -q 'gpu=1 is held by a running job tagged cap=never: lifting its cap' "$TMP/never.log"
sleep 1.5 # a tick more: the budget must not cap it again
check "GPU 1 stays at 700 W" limit_is 1 "$TMP/never.limits" 700
cn=$(metric wattage_power_cap_reasons_total 'reason="cap_never"')
check "wattage_power_cap_reasons_total{reason=\"cap_never\"} counts it (got '$cn')" test "${cn:-0}" -ge 1
stop
finish
