#!/usr/bin/env bash
# Liveness and readiness on the real binary: /healthz stays 200 while the daemon serves;
# /readyz and /api/v1/health say degraded, with reasons, while a GPU is lost, a facility target
# is down, alert delivery fails or the clock is unsynchronised (WATTAGE_CLOCK_STATUS stands in for the kernel's status
# word), and ready again when the GPU is back. `wattage status` has the same health section.
source "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty WATTAGE_NVML_LIBRARY=$FAKE_NVML
export FAKE_NVML_GPUS=2
get() { curl -s -w '\n%{http_code}' "http://127.0.0.1:$1$2"; }
code_is() { [[ $(get "$1" "$2" | tail -n1) == "$3" ]]; }

# --- status
out=$(WATTAGE_CLOCK_STATUS=0 "$BIN" status 2>&1)
check "status says health: ok with a synchronised clock" bash -c '[[ $1 == *"health: ok"* ]]' _ "$out"
out=$(WATTAGE_CLOCK_STATUS=0x40 "$BIN" status 2>&1)
check "status says degraded with the clock's reason when unsynchronised" \
    bash -c '[[ $1 == *"health: degraded"* && $1 == *"clock: the kernel clock is not synchronised"* ]]' _ "$out"
out=$(WATTAGE_CLOCK_STATUS=0x40 "$BIN" status --json 2>/dev/null)
check "status --json has health.status degraded and a clock reason" python3 -c '
import json, sys
h = json.loads(sys.argv[1])["health"]
assert h["status"] == "degraded" and h["reasons"][0]["component"] == "clock", h' "$out"

# --- the daemon: a GPU lost from 1.5 s to 5 s after start, and an SNMP target that never answers
snmp_port=$(free_port)
printf 'collectors:\n  snmp:\n    interval: 1s\n    targets:\n      - {name: pdu-x, address: "127.0.0.1:%s", community: public, timeout: 200ms, retries: 0}\n' \
    "$snmp_port" >"$TMP/w.yaml"
port=$(free_port)
FAKE_NVML_LOST=1:1.5:5 FAKE_NVML_T0=$(python3 -c 'import time; print(time.time())') \
    WATTAGE_CLOCK_STATUS=0 bg "$BIN" run -c "$TMP/w.yaml" --interval 0.2 --db "$TMP/w.db" \
    --listen "127.0.0.1:$port" >"$TMP/run.log" 2>&1
pid=$!
check "/readyz answers 503 while GPU 1 is lost" wait_for 15 bash -c "curl -s http://127.0.0.1:$port/readyz | grep -q '\"component\":\"gpu\",\"key\":\"1\"'"
check "/healthz stays 200 meanwhile (liveness)" code_is "$port" /healthz 200
body=$(get "$port" /api/v1/health)
check "/api/v1/health: 200, degraded, the lost GPU and the target down" python3 -c '
import json, sys
text, code = sys.argv[1].rsplit("\n", 1)
d = json.loads(text)
assert code == "200" and d["status"] == "degraded", (code, d)
comps = {(r["component"], r.get("key")) for r in d["reasons"]}
assert ("gpu", "1") in comps and ("facility", "pdu-x") in comps, comps' "$body"
check "the GPU's reason leaves once it answers again" \
    wait_for 15 bash -c "! curl -s http://127.0.0.1:$port/readyz | grep -q '\"component\":\"gpu\"'"
check "/readyz stays 503 with the SNMP target down" code_is "$port" /readyz 503
kill -TERM "$pid"; wait "$pid"

# --- alert delivery failing: a webhook on a closed port, a rule that fires at once
hook_port=$(free_port)
printf 'alerts:\n  rules:\n    - {name: PowerSeen, metric: wattage_gpu_power_watts, op: ">", threshold: 1}\n  webhook: {url: "http://127.0.0.1:%s/hook", timeout: 1s}\n' \
    "$hook_port" >"$TMP/hook.yaml"
port=$(free_port)
WATTAGE_CLOCK_STATUS=0 bg "$BIN" run -c "$TMP/hook.yaml" --interval 0.2 --db "$TMP/hook.db" \
    --listen "127.0.0.1:$port" >"$TMP/hook.log" 2>&1
pid=$!
check "/readyz says alert delivery is failing (component alerts, the webhook's error)" \
    wait_for 20 bash -c "curl -s http://127.0.0.1:$port/readyz | grep -q '\"component\":\"alerts\",\"message\":\"alert delivery failing: webhook: '"
check "  and answers 503" code_is "$port" /readyz 503
kill -TERM "$pid"; wait "$pid"

# --- all well: ready
port=$(free_port)
WATTAGE_CLOCK_STATUS=0 bg "$BIN" run --interval 0.2 --db "$TMP/ok.db" --listen "127.0.0.1:$port" >"$TMP/ok.log" 2>&1
pid=$!
check "/readyz is 200 when nothing is wrong" wait_for 10 code_is "$port" /readyz 200
check "/readyz says status ok" bash -c "curl -s http://127.0.0.1:$port/readyz | grep -q '\"status\":\"ok\"'"
kill -TERM "$pid"; wait "$pid"
port=$(free_port)
WATTAGE_CLOCK_STATUS=0x40 bg "$BIN" run --interval 0.2 --db "$TMP/ok2.db" --listen "127.0.0.1:$port" >"$TMP/ok2.log" 2>&1
pid=$!
check "an unsynchronised clock makes /readyz 503" wait_for 10 bash -c "curl -s http://127.0.0.1:$port/readyz | grep -q '\"component\":\"clock\"'"
kill -TERM "$pid"; wait "$pid"
finish
