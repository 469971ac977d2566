#!/usr/bin/env bash
# Power caps on AMD GPUs, through the fake ROCm SMI behind the real dlopen path (no NVIDIA
# library): the fake keeps each device's cap in FAKE_RSMI_CAP_LOG (one "DEV WATTS" line per set,
# the last one its cap; 500 W by default, range 100..560 W), so a cap outlives the daemon that
# set it, as on a real GPU. A rule with action cap on an AMD GPU's series lowers that GPU's limit
# (and only that one), recorded under its AMD-... uuid; SIGTERM restores it; after a kill -9 a
# start without the rule restores it from the record. With collectors.amd.enabled false the
# capper does not load the library, unless the record holds an AMD cap to restore. The AMD collector reads the caps once an
# hour (collectors.amd.slow_interval 1h) and at once after wattage sets one.
source "$(dirname "$0")/lib.sh"
FAKE_ROCM=${WATTAGE_FAKE_ROCM:-$PWD/${WATTAGE_BUILD:-build}/tests/fakes/librocm_smi64.so.1}
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
export WATTAGE_NVML_LIBRARY=$TMP/no-libnvidia-ml.so.1 WATTAGE_ROCM_SMI_LIBRARY=$FAKE_ROCM
export FAKE_RSMI_GPUS=2 FAKE_RSMI_POWER=400,0,5

DETECTORS_OFF='{throttle_forecast: false, throttling: false, idle_burn: false, impossible: false,
              stuck: false, sibling: false, data_gap: false}'
RUN_PID=
PORT=
# run NAME: the daemon with config $TMP/NAME.yaml, serving on $PORT; the fake's caps in $CAPS
run() {
    PORT=$(free_port)
    FAKE_RSMI_CAP_LOG=$CAPS bg "$BIN" run -c "$TMP/$1.yaml" --db "$TMP/$1.db" --interval 0.2 \
        --listen "127.0.0.1:$PORT" >"$TMP/$1.log" 2>&1
    RUN_PID=$!
    wait_for 20 curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
}
halt() { kill -TERM "$RUN_PID" && wait "$RUN_PID"; }
# sample NAME LABELS: the value of NAME's first sample whose labels begin with LABELS
sample() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -F "$1{$2" | awk '{ print $NF; exit }'; }
# limit_is DEV WATTS: the fake's cap of DEV now (its last line; 500 when never set)
limit_of() { awk -v g="$1" '$1 == g { w = $2 } END { print (w == "" ? 500 : w) }' "$CAPS" 2>/dev/null || echo 500; }
limit_is() { [[ $(limit_of "$1") == "$2" ]]; }
# rule_yaml NAME: a cap rule on AMD GPU 1 (300 W) with the record at $TMP/NAME.caps
rule_yaml() {
    cat >"$TMP/$1.yaml" <<EOF
collectors:
  amd:
    slow_interval: 1h
alerts:
  detectors: $DETECTORS_OFF
  cap_record: $TMP/$2.caps
  rules:
    - name: AmdHotCap
      metric: wattage_gpu_temperature_celsius
      match: {gpu: "1", sensor: "edge"}
      op: ">"
      threshold: 30
      for: 1s
      action: cap
      cap_watts: 300
EOF
}

# capped_then_killed NAME: the rule's daemon caps GPU 1 (fake caps in $TMP/NAME.fake), then kill -9
capped_then_killed() {
    CAPS=$TMP/$1.fake
    rule_yaml "$1" "$1"
    run "$1"
    if wait_for 20 limit_is 1 300; then ok "capped before kill -9 ($1)"
    else not_ok "capped before kill -9 ($1)" "$(tail -5 "$TMP/$1.log")"; fi
    kill -KILL "$RUN_PID"
    wait "$RUN_PID" 2>/dev/null
}

# restores NAME RECORD WHAT [YAML]: a daemon with YAML and no rule, the record RECORD, puts GPU
# 1's own 500 W back
restores() {
    printf '%salerts:\n  detectors: %s\n  cap_record: %s\n' "${4:-}" "$DETECTORS_OFF" "$2" \
        >"$TMP/$1.yaml"
    run "$1"
    if wait_for 5 limit_is 1 500; then ok "$3"
    else not_ok "$3" "$(cat "$CAPS")" "$(grep cap: "$TMP/$1.log")"; fi
}

# ---- set, then SIGTERM restores ------------------------------------------------------------
CAPS=$TMP/term.fake
rule_yaml term term
run term
if wait_for 20 limit_is 1 300; then ok "the rule caps AMD GPU 1 at 300 W through rsmi_dev_power_cap_set"
else not_ok "the rule caps AMD GPU 1 at 300 W through rsmi_dev_power_cap_set" "$(cat "$CAPS" 2>&1)" "$(grep -E 'cap|amd' "$TMP/term.log" | tail -5)"; fi
check "GPU 0 is untouched" bash -c "! grep -q '^0 ' '$CAPS'"
check "the record has the AMD uuid, own 500 W, set 300 W" \
    grep -Eq '^AMD-00c0ffee00000001 1 500\.000 300\.000 [0-9]{19} AmdHotCap$' "$TMP/term.caps"
cap1=$(sample wattage_gpu_power_cap_watts 'gpu="1",uuid="AMD-00c0ffee00000001"')
check "wattage_gpu_power_cap_watts{gpu=\"1\",uuid=\"AMD-…\"} is 300 (got '$cap1')" test "$cap1" = 300
lim_300() { [[ $(sample wattage_gpu_power_limit_watts 'gpu="1"') == 300 ]]; }
# the cap is a slow field read once an hour here: seen at once because wattage set it
check "the AMD collector reads the new limit at once (slow_interval 1h)" wait_for 5 lim_300
st=$(curl -sf "http://127.0.0.1:$PORT/api/v1/status")
check "GET /api/v1/status: amd's slow fields and interval" python3 -c '
import json, sys
c = [c for c in json.loads(sys.argv[1])["collectors"] if c["name"] == "amd"][0]
f = c["slow_fields"]
sys.exit(0 if c["slow_interval_seconds"] == 3600 and "power_limit" in f
         and "power_limit_range" in f and "ecc_volatile" in f and "power" not in f else 1)' "$st"
halt
check "the daemon exits 0 on SIGTERM" test $? -eq 0
check "SIGTERM restored GPU 1 to its own 500 W" limit_is 1 500
check "nothing else was set" test "$(wc -l <"$CAPS")" -eq 2
check "and the record is empty" test ! -s "$TMP/term.caps"

# ---- kill -9, then a start without the rule restores it from the record ------------------------
capped_then_killed crash
check "the driver keeps the cap after kill -9" limit_is 1 300
check "the record keeps the line" grep -q '^AMD-00c0ffee00000001 1 500\.000 300\.000 ' "$TMP/crash.caps"
st=$(FAKE_RSMI_CAP_LOG=$CAPS "$BIN" status -c "$TMP/crash.yaml" 2>/dev/null)
check "status says wattage holds amd:1 at 300 W" \
    grep -q 'power cap: gpu amd:1 (AMD-00c0ffee00000001) limit 300.0 W set by wattage (own 500.0 W, reason AmdHotCap' <<<"$st"
restores crash2 "$TMP/crash.caps" "a start without the rule restores 500 W"
check "it says so at warning level" grep -q 'warn  cap: gpu=amd:1 uuid=AMD-00c0ffee00000001: restored its own limit 500.0 W; an earlier run capped it at 300.0 W (reason=AmdHotCap' "$TMP/crash2.log"
check "and the record is empty" test ! -s "$TMP/crash.caps"
halt

# ---- the AMD collector off: the capper does not load ROCm SMI, unless the record needs it -------
CAPS=$TMP/off.fake
rule_yaml off off
sed -i 's/^    slow_interval: 1h$/    enabled: false/' "$TMP/off.yaml"
FAKE_RSMI_CALLS=$TMP/off.calls run off
sleep 1.5
check "collectors.amd.enabled false: the daemon with an AMD cap rule runs" kill -0 "$RUN_PID"
check "  and never loads ROCm SMI (not in its maps)" \
    bash -c "! grep -q librocm_smi64 /proc/$RUN_PID/maps"
check "  nor calls it (no rsmi_init in the fake's call log)" test ! -e "$TMP/off.calls"
halt
capped_then_killed crashoff
restores crashoff2 "$TMP/crashoff.caps" \
    "collectors.amd.enabled false, an AMD cap in the record: loaded to restore 500 W" \
    $'collectors:\n  amd:\n    enabled: false\n'
check "  and says why it loaded it" grep -q 'collectors.amd.enabled is false, but .*crashoff.caps holds an AMD GPU.s cap to restore' "$TMP/crashoff2.log"
check "  and the record is empty" test ! -s "$TMP/crashoff.caps"
halt

# ---- kill -9, then `wattage cap clear --gpu amd:1` puts it back by hand -----------------------
capped_then_killed clear
out=$(FAKE_RSMI_CAP_LOG=$CAPS "$BIN" cap clear -c "$TMP/clear.yaml" --db "$TMP/clear.db" --gpu amd:5 2>&1)
rc=$?
check "cap clear --gpu amd:5 on a 2-GPU node: exit 2 (got $rc) with why" \
    test "$rc" -eq 2 -a -n "$(grep -- '--gpu amd:5: this node has 2 AMD GPUs' <<<"$out")"
out=$(FAKE_RSMI_CAP_LOG=$CAPS "$BIN" cap clear -c "$TMP/clear.yaml" --db "$TMP/clear.db" --gpu amd:1 2>&1)
check "cap clear --gpu amd:1 says what it did ($out)" \
    grep -q 'gpu amd:1 (AMD-00c0ffee00000001): limit back to its own 500.0 W (wattage had capped it at 300.0 W: reason AmdHotCap' <<<"$out"
check "and the GPU has its own 500 W again" limit_is 1 500
check "and the record is empty" test ! -s "$TMP/clear.caps"

# ---- a value outside the range: the fake refuses it, the capper floors to the GPU's minimum -------
CAPS=$TMP/floor.fake
rule_yaml floor floor
sed -i 's/cap_watts: 300/cap_watts: 50/' "$TMP/floor.yaml"
run floor
if wait_for 20 limit_is 1 100; then ok "a 50 W cap is held at the GPU's 100 W minimum"
else not_ok "a 50 W cap is held at the GPU's 100 W minimum" "$(cat "$CAPS" 2>&1)" "$(grep cap: "$TMP/floor.log" | tail -3)"; fi
halt
check "every cap set was within 100..560 W" awk '$2 < 100 || $2 > 560 { bad = 1 } END { exit bad }' "$CAPS"

# ---- not root: the library refuses, the daemon says why and runs on, the record keeps nothing ----
CAPS=$TMP/denied.fake
rule_yaml denied denied
FAKE_RSMI_CAP_DENIED=1 run denied
if wait_for 20 grep -q 'rsmi_dev_power_cap_set gpu=amd:1 uuid=AMD-00c0ffee00000001 limit_w=300.0 failed: .*(4) (setting limits needs root)' "$TMP/denied.log"; then
    ok "a refused set is logged with the library's status and why"
else not_ok "a refused set is logged with the library's status and why" "$(grep cap: "$TMP/denied.log" | tail -3)"; fi
errs=$(sample wattage_power_cap_actions_total 'action="error"')
check "and counted as an error action (got '$errs')" test "${errs:-0}" -ge 1
check "nothing was set" test ! -s "$CAPS"
check "the record has no line for a cap the GPU does not have" bash -c "! grep -q '^AMD-' '$TMP/denied.caps' 2>/dev/null"
check "the daemon still serves" curl -sf "http://127.0.0.1:$PORT/healthz" -o /dev/null
halt
check "and stops cleanly" test $? -eq 0

# ---- both vendors in one daemon: each GPU 0 capped by its own rule, no other GPU touched -------
# (the fake NVML: 2 GPUs at 600 W, limits 200..700 W kept in FAKE_NVML_LIMITS_FILE)
CAPS=$TMP/mixed.fake
cat >"$TMP/mixed.yaml" <<EOF
alerts:
  detectors: $DETECTORS_OFF
  cap_record: $TMP/mixed.caps
  rules:
    - name: NvCap
      metric: wattage_gpu_power_watts
      match: {uuid: "GPU-fake-0000-0"}
      op: ">"
      threshold: 100
      for: 1s
      action: cap
      cap_watts: 300
    - name: AmdCap
      metric: wattage_gpu_power_watts
      match: {uuid: "AMD-00c0ffee00000000"}
      op: ">"
      threshold: 100
      for: 1s
      action: cap
      cap_watts: 250
EOF
WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=600,0,0 \
    FAKE_NVML_LIMITS_FILE=$TMP/mixed.limits run mixed
if wait_for 20 limit_is 0 250 && wait_for 10 grep -q '^0 300$' "$TMP/mixed.limits"; then
    ok "NVIDIA's GPU 0 capped at 300 W and AMD's GPU 0 at 250 W, each by its rule"
else not_ok "NVIDIA's GPU 0 capped at 300 W and AMD's GPU 0 at 250 W, each by its rule" \
    "amd: $(cat "$CAPS" 2>&1)" "nvidia: $(cat "$TMP/mixed.limits" 2>&1)" "$(grep cap: "$TMP/mixed.log" | tail -4)"; fi
check "the record has both, by uuid" test "$(grep -Ec '^(GPU-fake-0000-0 0 700\.000 300\.000|AMD-00c0ffee00000000 0 500\.000 250\.000) ' "$TMP/mixed.caps")" -eq 2
check "no other GPU was set" test "$(cat "$CAPS" "$TMP/mixed.limits" | wc -l)" -eq 2
halt
check "SIGTERM restores AMD's GPU 0 to 500 W" limit_is 0 500
check "and NVIDIA's GPU 0 to 700 W" test "$(awk '$1 == 0 { w = $2 } END { print w }' "$TMP/mixed.limits")" = 700

# ---- the site budget over both vendors: 2 x 600 W NVIDIA + 2 x 400 W AMD over a 1500 W budget ----
CAPS=$TMP/budget.fake
printf 'alerts:\n  detectors: %s\n  cap_record: %s\n  power_budget_watts: 1500\n  budget_clear_share: 0.9\n' \
    "$DETECTORS_OFF" "$TMP/budget.caps" >"$TMP/budget.yaml"
WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=2 FAKE_NVML_POWER=600,0,0 \
    FAKE_NVML_LIMITS_FILE=$TMP/budget.limits run budget
# capped DEV FILE OWN: DEV's last limit in FILE is under its own
capped() { awk -v g="$1" -v own="$3" '$1 == g { w = $2 } END { exit !(w != "" && w < own) }' "$2"; }
all_four() { capped 0 "$CAPS" 500 && capped 1 "$CAPS" 500 && capped 0 "$TMP/budget.limits" 700 && capped 1 "$TMP/budget.limits" 700; }
if wait_for 20 all_four; then ok "the budget caps both vendors' GPUs"
else not_ok "the budget caps both vendors' GPUs" "amd: $(cat "$CAPS" 2>&1)" "nvidia: $(cat "$TMP/budget.limits" 2>&1)" "$(grep cap: "$TMP/budget.log" | tail -4)"; fi
check "in proportion to their draw: AMD's GPU 0 at 285 W, logged as amd:0" \
    grep -q 'cap: set gpu=amd:0 limit_w=285.0 action=budget_cap reason=power_budget' "$TMP/budget.log"
check "NVIDIA's GPU 0 at 427.5 W, logged as 0" \
    grep -q 'cap: set gpu=0 limit_w=427.5 action=budget_cap reason=power_budget' "$TMP/budget.log"
check "the record has four lines, two AMD" test "$(grep -c '^AMD-' "$TMP/budget.caps")" -eq 2 -a "$(grep -vc '^#' "$TMP/budget.caps")" -eq 4
# a job tagged cap=never on amd:1 lifts that GPU's cap, and only that one
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/api/v1/jobs" \
    -d '{"name": "train", "tags": {"cap": "never"}, "gpus": ["amd:1"]}')
check "the cap=never job on amd:1 starts ($code)" test "$code" = 201
if wait_for 3 limit_is 1 500; then ok "AMD's GPU 1's cap is lifted"
else not_ok "AMD's GPU 1's cap is lifted" "$(cat "$CAPS")" "$(grep cap: "$TMP/budget.log" | tail -3)"; fi
check "the log says why" grep -q 'gpu=amd:1 is held by a running job tagged cap=never: lifting its cap' "$TMP/budget.log"
check "NVIDIA's GPU 1 keeps its budget cap" capped 1 "$TMP/budget.limits" 700
halt
check "SIGTERM lifts the AMD caps" bash -c "[[ \$(awk '\$1 == 0 { a = \$2 } \$1 == 1 { b = \$2 } END { print a, b }' '$CAPS') == '500 500' ]]"
check "and the NVIDIA caps" bash -c "[[ \$(awk '\$1 == 0 { a = \$2 } \$1 == 1 { b = \$2 } END { print a, b }' '$TMP/budget.limits') == '700 700' ]]"

# ---- the idle policy on AMD GPUs: 60 W, busy 0; GPU 1 runs a process (the library's list) ------
# GPU 0 is held at its minimum after idle_for; a job naming amd:0 lifts it before it is answered
CAPS=$TMP/idle.fake
echo "1 4242" >"$TMP/idle.procs"
printf 'alerts:\n  detectors: %s\n  cap_record: %s\n  idle_policy: {mode: limit, idle_for: 2s}\n' \
    "$DETECTORS_OFF" "$TMP/idle.caps" >"$TMP/idle.yaml"
FAKE_RSMI_POWER=60,0,1e9 FAKE_RSMI_PROCS_FILE=$TMP/idle.procs run idle
if wait_for 30 limit_is 0 100; then ok "idle AMD GPU 0 is held at its 100 W minimum"
else not_ok "idle AMD GPU 0 is held at its 100 W minimum" "$(cat "$CAPS" 2>&1)" "$(grep -E 'cap:|idle' "$TMP/idle.log" | tail -3)"; fi
check "GPU 1, with its process, is not" bash -c "! grep -q '^1 ' '$CAPS'"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/api/v1/jobs" \
    -d '{"name": "train", "gpus": ["amd:0"]}')
check "a job naming amd:0 starts ($code)" test "$code" = 201
check "and its idle cap was lifted before the answer" limit_is 0 500
check "the log says why" grep -q 'gpu=amd:0.*job_start' "$TMP/idle.log"
halt

finish
