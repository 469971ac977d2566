#!/usr/bin/env bash
# Power capping end to end, on the fake NVML only (never a real GPU): the fake records every
# limit set in FAKE_NVML_LIMITS_FILE, reports it as the enforced limit, clamps its power to it and
# refuses values outside 200..700 W. A firing alert with action cap lowers its GPU's limit
# (within min/max), the resolution and SIGTERM restore it; the site budget brings the node under;
# --dry-run changes nothing.
source "$(dirname "$0")/lib.sh"

DETECTORS_OFF='{throttle_forecast: false, throttling: false, idle_burn: false, impossible: false,
              stuck: false, sibling: false, data_gap: false}'
RUN_PID=
PORT=

# start NAME EXTRA_ARGS... : the daemon with config $TMP/NAME.yaml, limits in $TMP/NAME.limits
start() {
    local name=$1
    shift
    PORT=$(free_port)
    FAKE_NVML_LIMITS_FILE="$TMP/$name.limits" WATTAGE_NVML_LIBRARY=$FAKE_NVML \
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
finish
